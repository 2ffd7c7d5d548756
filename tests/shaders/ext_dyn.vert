/* SPDX-License-Identifier: MIT */
// vk_extensions dynamic: vertex i at pc.pos[i].xy (clip space), no vertex
// buffer.
#version 450

layout(push_constant) uniform Vertices {
   vec4 pos[6];
} pc;

void main()
{
   gl_Position = vec4(pc.pos[gl_VertexIndex].xy, 0.5, 1.0);
}
