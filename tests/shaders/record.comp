/* SPDX-License-Identifier: MIT */
// vk_record: each dispatch adds pc.add to one slot; the CPU sums what every
// recorded dispatch should have added (see vk_record.c).
#version 450

layout(local_size_x = 1) in;

layout(push_constant) uniform Params {
   uint slot;
   uint add;
} pc;

layout(std430, set = 0, binding = 0) buffer Slots {
   uint slots[];
};

void main()
{
   atomicAdd(slots[pc.slot], pc.add);
}
