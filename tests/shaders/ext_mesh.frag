/* SPDX-License-Identifier: MIT */
// vk_extensions mesh: the primitive's colour, written per primitive by
// ext_mesh.mesh.
#version 460
#extension GL_EXT_mesh_shader : require

layout(location = 0) perprimitiveEXT in vec4 prim_color;
layout(location = 0) out vec4 out_color;

void main()
{
   out_color = prim_color;
}
