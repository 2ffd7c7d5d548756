/* SPDX-License-Identifier: MIT */
// vk_extensions push: out[0][i] = a * i + b and out[1][i] = ~(a * i + b),
// with a and b from a uniform buffer; every descriptor is pushed
// (VK_KHR_push_descriptor).
#version 450

layout(local_size_x = 64) in;

layout(std140, set = 0, binding = 0) uniform Params {
   uint a;
   uint b;
} p;

layout(std430, set = 0, binding = 1) writeonly buffer Output {
   uint data[];
} outs[2];

void main()
{
   uint i = gl_GlobalInvocationID.x;
   uint v = p.a * i + p.b;

   outs[0].data[i] = v;
   outs[1].data[i] = ~v;
}
