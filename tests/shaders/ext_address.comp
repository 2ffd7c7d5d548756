#version 450
// vk_extensions address: values read and written through buffer device
// addresses (a pointer chain: the push constant holds the address of a
// table whose entries are the source and destination addresses).
#extension GL_EXT_buffer_reference : require
#extension GL_EXT_buffer_reference_uvec2 : require

layout(local_size_x = 64) in;

layout(buffer_reference, std430, buffer_reference_align = 4) buffer Values {
   uint v[];
};
layout(buffer_reference, std430, buffer_reference_align = 8) buffer Table {
   Values src;
   Values dst;
   uint n;
};

layout(push_constant) uniform Push {
   Table table;
} pc;

void
main()
{
   uint i = gl_GlobalInvocationID.x;
   if (i < pc.table.n)
      pc.table.dst.v[i] = pc.table.src.v[i] * 3u + 7u;
}
