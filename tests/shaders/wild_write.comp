#version 450
// A valid shader that writes through a pointer the application made up:
// address 0x1000, in a page no driver maps.  A GPU faults (the device is
// lost); lavapipe, whose device addresses are its process's own, crashes.
#extension GL_EXT_buffer_reference : require
#extension GL_EXT_shader_explicit_arithmetic_types_int64 : require
layout(local_size_x = 64) in;
layout(buffer_reference, std430, buffer_reference_align = 4) buffer Target { uint v[]; };
layout(push_constant) uniform Push { uint64_t address; } push;
void main()
{
   Target(push.address).v[gl_GlobalInvocationID.x] = 0xdeadbeefu;
}
