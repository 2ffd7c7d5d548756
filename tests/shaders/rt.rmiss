/* SPDX-License-Identifier: MIT */
// vk_raytrace pipeline: a ray that hits nothing leaves 0.
#version 460
#extension GL_EXT_ray_tracing : require

layout(location = 0) rayPayloadInEXT uint payload;

void
main()
{
   payload = 0u;
}
