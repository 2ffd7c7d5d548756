/* SPDX-License-Identifier: MIT */
// vk_render: passes position, colour, texture coordinates and the texture
// weight through; the scene is given directly in clip space.
#version 450

layout(location = 0) in vec3 in_pos;
layout(location = 1) in vec3 in_color;
layout(location = 2) in vec2 in_uv;
layout(location = 3) in float in_tex_weight;

layout(location = 0) out vec3 out_color;
layout(location = 1) out vec2 out_uv;
layout(location = 2) out float out_tex_weight;

void main()
{
   gl_Position = vec4(in_pos, 1.0);
   out_color = in_color;
   out_uv = in_uv;
   out_tex_weight = in_tex_weight;
}
