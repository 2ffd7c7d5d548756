/* SPDX-License-Identifier: MIT */
// vk_compute: integer hash over a storage buffer; the CPU recomputes every
// element exactly (see expected() in vk_compute.c).
#version 450

layout(local_size_x = 64) in;

layout(push_constant) uniform Params {
   uint count;
   uint rounds;
   uint seed;
} pc;

layout(std430, set = 0, binding = 0) readonly buffer Input {
   uint data_in[];
};

layout(std430, set = 0, binding = 1) writeonly buffer Output {
   uint data_out[];
};

void main()
{
   uint i = gl_GlobalInvocationID.x;
   if (i >= pc.count)
      return;

   uint x = data_in[i];
   uint v = (x * x) ^ (i * 2654435761u);
   for (uint r = 0u; r < pc.rounds; r++) {
      v = v * 1664525u + 1013904223u + r;
      v ^= v >> 13;
      v += pc.seed;
   }
   data_out[i] = v;
}
