/* SPDX-License-Identifier: MIT */
// Solid colour from the push constants shared with quad.vert.
#version 450

layout(push_constant) uniform Rect {
   vec4 rect;
   vec4 color;
} pc;

layout(location = 0) out vec4 out_color;

void main()
{
   out_color = pc.color;
}
