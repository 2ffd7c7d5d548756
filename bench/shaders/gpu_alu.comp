/* SPDX-License-Identifier: MIT */
// gpu_bench: ALU-bound. Each invocation runs `rounds` rounds of an integer
// hash and writes its result once at the end.
#version 450

layout(local_size_x = 64) in;

layout(push_constant) uniform Params {
   uint rounds;
   uint passes;
   uint count;
   uint seed;
} pc;

layout(std430, set = 0, binding = 1) writeonly buffer Output {
   uint data_out[];
};

void main()
{
   uint i = gl_GlobalInvocationID.x;
   uint v = i * 2654435761u + pc.seed;
   for (uint r = 0u; r < pc.rounds; r++) {
      v = v * 1664525u + 1013904223u;
      v ^= v >> 13;
   }
   data_out[i % pc.count] = v;
}
