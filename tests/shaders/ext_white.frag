/* SPDX-License-Identifier: MIT */
// vk_extensions dynamic: white; the colour write mask decides what lands.
#version 450

layout(location = 0) out vec4 out_color;

void main()
{
   out_color = vec4(1.0);
}
