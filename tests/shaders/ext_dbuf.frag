/* SPDX-License-Identifier: MIT */
// vk_extensions descriptor-buffer-graphics: the colour in a uniform buffer
// whose descriptor lies in a descriptor buffer (VK_EXT_descriptor_buffer).
#version 450

layout(std140, set = 0, binding = 0) uniform Colour {
   vec4 color;
} u;

layout(location = 0) out vec4 out_color;

void main()
{
   out_color = u.color;
}
