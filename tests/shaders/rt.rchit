/* SPDX-License-Identifier: MIT */
// vk_raytrace pipeline: the closest hit names the instance (by its custom
// index) and the triangle; + 1 so that no hit value is a miss's 0.
#version 460
#extension GL_EXT_ray_tracing : require

layout(location = 0) rayPayloadInEXT uint payload;

void
main()
{
   payload = 0x100u * uint(gl_InstanceCustomIndexEXT) + uint(gl_PrimitiveID) + 1u;
}
