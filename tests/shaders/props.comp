#version 450
// vk_props: a pipeline whose executables, statistics and internal
// representations are compared (VK_KHR_pipeline_executable_properties).
layout(local_size_x = 64) in;
layout(std430, set = 0, binding = 0) buffer Values { uint v[]; } values;
void main()
{
   uint i = gl_GlobalInvocationID.x;
   values.v[i] = values.v[i] * 3u + i;
}
