/* SPDX-License-Identifier: MIT */
// gpu_bench: memory-bound. The invocations stride over `count` elements
// `passes` times, reading one buffer and writing the other.
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
      for (uint k = gl_GlobalInvocationID.x; k < pc.count; k += stride)
         data_out[k] = data_in[k] * 3u + pc.seed + p;
   }
}
