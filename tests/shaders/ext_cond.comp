/* SPDX-License-Identifier: MIT */
// vk_extensions conditional: writes 1 to 64 uints from pc.base on; run under
// VK_EXT_conditional_rendering, so whether it wrote shows whether it ran.
#version 450

layout(local_size_x = 64) in;

layout(push_constant) uniform Params {
   uint base;
} pc;

layout(std430, set = 0, binding = 0) writeonly buffer Output {
   uint data[];
};

void main()
{
   data[pc.base + gl_GlobalInvocationID.x] = 1u;
}
