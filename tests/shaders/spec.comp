/* SPDX-License-Identifier: MIT */
// vk_pipelines: each pipeline multiplies and adds its own specialization
// constants, so a result names the pipeline that computed it.
#version 450

layout(local_size_x = 64) in;

layout(constant_id = 0) const uint MUL = 1u;
layout(constant_id = 1) const uint ADD = 0u;

layout(push_constant) uniform Params {
   uint count;
} pc;

layout(std430, set = 0, binding = 0) buffer Data {
   uint data[];
};

void main()
{
   uint i = gl_GlobalInvocationID.x;
   if (i < pc.count)
      data[i] = data[i] * MUL + ADD;
}
