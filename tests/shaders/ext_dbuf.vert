/* SPDX-License-Identifier: MIT */
// vk_extensions descriptor-buffer-graphics: vertex i at positions[i] (clip
// space), read from a storage buffer whose descriptor lies in a descriptor
// buffer (VK_EXT_descriptor_buffer); no vertex buffer.
#version 450

layout(std430, set = 0, binding = 1) readonly buffer Positions {
   vec4 pos[];
} positions;

void main()
{
   gl_Position = positions.pos[gl_VertexIndex];
}
