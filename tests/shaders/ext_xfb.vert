/* SPDX-License-Identifier: MIT */
// vk_extensions xfb: one captured vec4 per vertex (VK_EXT_transform_feedback)
// made of gl_VertexIndex and gl_InstanceIndex; nothing is rasterized.
#version 450

layout(location = 0, xfb_buffer = 0, xfb_offset = 0, xfb_stride = 16)
   out vec4 captured;

void main()
{
   // Small integers: exact in float (see xfb_expected() in vk_extensions.c).
   captured = vec4(float(gl_VertexIndex), float(gl_InstanceIndex),
                   float(gl_VertexIndex * 7 + gl_InstanceIndex * 1000), 42.0);
   gl_Position = vec4(0.0, 0.0, 0.0, 1.0);
   gl_PointSize = 1.0;
}
