/* SPDX-License-Identifier: MIT */
// vk_render: vertex colour blended with a texel (nearest sampling).
#version 450

layout(set = 0, binding = 0) uniform sampler2D tex;

layout(location = 0) in vec3 in_color;
layout(location = 1) in vec2 in_uv;
layout(location = 2) in float in_tex_weight;

layout(location = 0) out vec4 out_color;

void main()
{
   vec4 texel = texture(tex, in_uv);
   out_color = mix(vec4(in_color, 1.0), texel, in_tex_weight);
}
