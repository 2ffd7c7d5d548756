/* SPDX-License-Identifier: MIT */
// gpu_bench: mixed. Like gpu_mem, with `rounds` rounds of a hash on each
// element between its load and its store.
#version 450

layout(local_size_x = 64) in;

layout(push_constant) uniform Params {
   uint rounds;
   uint passes;
   uint count;
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
   uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
   for (uint p = 0u; p < pc.passes; p++) {
      for (uint k = gl_GlobalInvocationID.x; k < pc.count; k += stride) {
         uint v = data_in[k] + p;
         for (uint r = 0u; r < pc.rounds; r++) {
            v = v * 1664525u + 1013904223u;
            v ^= v >> 13;
         }
         data_out[k] = v + pc.seed;
      }
   }
}
