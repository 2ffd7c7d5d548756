/* SPDX-License-Identifier: MIT */
// Axis-aligned rectangle without a vertex buffer: six vertices (two
// triangles) covering the clip-space rectangle in the push constants.
#version 450

layout(push_constant) uniform Rect {
   vec4 rect;   // x0, y0, x1, y1 in clip space
   vec4 color;  // used by solid.frag
} pc;

void main()
{
   // Triangles (0,1,2) and (2,1,3) of the corners 0=(x0,y0) 1=(x1,y0)
   // 2=(x0,y1) 3=(x1,y1).
   const int corner[6] = int[6](0, 1, 2, 2, 1, 3);
   int c = corner[gl_VertexIndex % 6];
   float x = (c & 1) != 0 ? pc.rect.z : pc.rect.x;
   float y = (c & 2) != 0 ? pc.rect.w : pc.rect.y;
   gl_Position = vec4(x, y, 0.5, 1.0);
}
