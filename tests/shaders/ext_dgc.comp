/* SPDX-License-Identifier: MIT */
// vk_extensions dgc: out[base + i] = value + i, base and value pushed by
// each generated sequence (VK_EXT_device_generated_commands).
#version 450

layout(local_size_x = 64) in;

layout(push_constant) uniform Push {
   uint base;
   uint value;
} pc;

layout(std430, set = 0, binding = 0) writeonly buffer Output {
   uint data[];
} outs;

void main()
{
   uint i = gl_GlobalInvocationID.x;
   outs.data[pc.base + i] = pc.value + i;
}
