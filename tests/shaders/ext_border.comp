/* SPDX-License-Identifier: MIT */
// vk_extensions border: one sample per invocation at the coordinates the
// buffer holds, through a sampler with a custom border colour
// (VK_EXT_custom_border_color).
#version 450

layout(local_size_x = 1) in;

layout(set = 0, binding = 0) uniform sampler2D tex;

struct Sample {
   vec4 uv;      // xy used
   vec4 color;   // written
};

layout(std430, set = 0, binding = 1) buffer Samples {
   Sample samples[];
};

void main()
{
   uint i = gl_GlobalInvocationID.x;

   samples[i].color = textureLod(tex, samples[i].uv.xy, 0.0);
}
