/* SPDX-License-Identifier: MIT */
// vk_raytrace query (and compact): the rays of rt.rgen, one per invocation
// of a compute shader, traced with a ray query; the committed hit is
// written as rt.rchit writes it, 0 for none.
#version 460
#extension GL_EXT_ray_query : require

layout(local_size_x = 8, local_size_y = 8) in;

layout(set = 0, binding = 0) uniform accelerationStructureEXT tlas;
layout(std430, set = 0, binding = 1) writeonly buffer Image {
   uint pixels[];
};

void
main()
{
   const uvec2 p = gl_GlobalInvocationID.xy;
   const uint width = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
   const vec3 origin = vec3(vec2(p) + 0.5, -1.0);
   rayQueryEXT rq;

   rayQueryInitializeEXT(rq, tlas, gl_RayFlagsOpaqueEXT, 0xff, origin, 0.0,
                         vec3(0.0, 0.0, 1.0), 100.0);
   // Every geometry is opaque: the implementation commits the closest
   // triangle by itself, and there is no candidate to confirm.
   while (rayQueryProceedEXT(rq)) {
   }
   uint value = 0u;
   if (rayQueryGetIntersectionTypeEXT(rq, true) ==
       gl_RayQueryCommittedIntersectionTriangleEXT)
      value = 0x100u * uint(rayQueryGetIntersectionInstanceCustomIndexEXT(rq, true)) +
              uint(rayQueryGetIntersectionPrimitiveIndexEXT(rq, true)) + 1u;
   pixels[p.y * width + p.x] = value;
}
