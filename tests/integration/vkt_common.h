/* SPDX-License-Identifier: MIT */
/*
 * Small helpers shared by the integration test programs (and the benchmark):
 * instance/device creation with --device selection, VkResult names, buffers
 * in host-visible memory, one-shot command buffers, shader modules.
 *
 * Test programs treat any unexpected failure as fatal: VKT_CHECK() prints the
 * call, the VkResult name and the source line on stderr and exits with 1.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <vulkan/vulkan.h>

/* Optional device features a program asks for (all core in Vulkan 1.3). */
enum vkt_feature {
   VKT_FEATURE_TIMELINE_SEMAPHORE = 1u << 0,
   VKT_FEATURE_DYNAMIC_RENDERING = 1u << 1,
   VKT_FEATURE_SYNCHRONIZATION2 = 1u << 2,
   VKT_FEATURE_OCCLUSION_PRECISE = 1u << 3,
   VKT_FEATURE_BUFFER_DEVICE_ADDRESS = 1u << 4,
   VKT_FEATURE_HOST_QUERY_RESET = 1u << 5,
   VKT_FEATURE_PIPELINE_CACHE_CONTROL = 1u << 6,
   /* subgroupSizeControl and computeFullSubgroups */
   VKT_FEATURE_SUBGROUP_SIZE_CONTROL = 1u << 7,
};

struct vkt_context {
   const char *prog;
   VkInstance instance;
   VkPhysicalDevice physical_device;
   VkPhysicalDeviceProperties props;
   VkPhysicalDeviceMemoryProperties mem_props;
   uint32_t queue_family;
   uint32_t timestamp_valid_bits;
   VkDevice device;
   VkQueue queue;
   VkCommandPool cmd_pool;
   /* a queue of another family, where asked for (else UINT32_MAX) */
   uint32_t other_family;
   VkQueue other_queue;
};

struct vkt_buffer {
   VkBuffer buffer;
   VkDeviceMemory memory;
   VkDeviceSize size;
   void *map;          /* NULL unless host visible */
   bool coherent;
};

const char *vkt_result_name(VkResult result);

/* Prints "PROG: FAIL: message" on stderr and exits with 1. */
void vkt_fail(const char *fmt, ...)
   __attribute__((format(printf, 1, 2), noreturn));
void vkt_fail_result(const char *call, VkResult result, const char *file,
                     int line) __attribute__((noreturn));

#define VKT_CHECK(call)                                                     \
   do {                                                                     \
      VkResult vkt_r_ = (call);                                             \
      if (vkt_r_ != VK_SUCCESS)                                             \
         vkt_fail_result(#call, vkt_r_, __FILE__, __LINE__);                \
   } while (0)

/* Checks that a call returned exactly `expected`. */
#define VKT_EXPECT(call, expected)                                          \
   do {                                                                     \
      VkResult vkt_r_ = (call);                                             \
      if (vkt_r_ != (expected))                                             \
         vkt_fail("%s:%d: %s returned %s, expected %s", __FILE__, __LINE__, \
                  #call, vkt_result_name(vkt_r_),                           \
                  vkt_result_name(expected));                               \
   } while (0)

#define VKT_ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

/* Program name used in messages; set by vkt_context_init or by hand. */
void vkt_set_prog(const char *prog);

/* Monotonic clock in nanoseconds. */
uint64_t vkt_now_ns(void);

/* Parses an unsigned decimal option value or fails. */
uint64_t vkt_parse_u64(const char *opt, const char *value);

/* Instance with apiVersion 1.3 and no layers or extensions. */
VkInstance vkt_instance_create(const char *app_name);

/* Messages of one name that an application's messenger saw. */
struct vkt_message_count {
   const char *id_name; /* pMessageIdName counted */
   unsigned count;
   VkDebugUtilsMessengerEXT messenger;
   VkInstance instance;
};

/* An instance with VK_EXT_debug_utils and a messenger that prints every
 * warning and error and counts those named c->id_name. */
VkInstance vkt_instance_counting(const char *app_name, struct vkt_message_count *c);
/* Destroys the messenger (before the instance goes). */
void vkt_message_count_finish(struct vkt_message_count *c);

/*
 * Picks the first physical device whose deviceName contains `name` (any
 * device when name is NULL); fails when there is none or it is not Vulkan 1.3.
 */
VkPhysicalDevice vkt_physical_device_pick(VkInstance instance,
                                          const char *name);

/* Instance + device with one graphics/compute queue and a command pool. */
void vkt_context_init(struct vkt_context *ctx, const char *prog,
                      const char *device_name, uint32_t features);
void vkt_context_finish(struct vkt_context *ctx);

/* Same, on a physical device the caller picked (the benchmark has two). */
void vkt_context_init_physical(struct vkt_context *ctx, VkInstance instance,
                               VkPhysicalDevice pdev, uint32_t features);
void vkt_context_finish_device(struct vkt_context *ctx);

/*
 * vkt_context_init that also enables device extensions and extension
 * features. Each of the n_exts names in exts must be advertised by
 * vkEnumerateDeviceExtensionProperties. pnext, when not NULL, is a chain of
 * extension feature structs (VkPhysicalDevice*Features*, not the Vulkan
 * 1.1-1.3 ones) with the wanted members set to VK_TRUE: every such member
 * must be true in what vkGetPhysicalDeviceFeatures2 reports, and the chain
 * goes to vkCreateDevice. Anything missing fails with its name. The structs
 * vkt_common.c knows are listed in its feature_structs table.
 */
void vkt_context_init_ext(struct vkt_context *ctx, const char *prog,
                          const char *device_name, uint32_t features,
                          const char *const *exts, uint32_t n_exts,
                          void *pnext);

/* The same on an instance and physical device the caller made (the WSI
 * test's instance has surface extensions). */
void vkt_context_init_physical_ext(struct vkt_context *ctx, VkInstance instance,
                                   VkPhysicalDevice pdev, uint32_t features,
                                   const char *const *exts, uint32_t n_exts,
                                   void *pnext);

/* vkt_context_init_physical_ext with a queue of other_family too
 * (ctx->other_queue), where it is not the context's own family. */
void vkt_context_init_physical_family(struct vkt_context *ctx, VkInstance instance,
                                      VkPhysicalDevice pdev, uint32_t features,
                                      const char *const *exts, uint32_t n_exts,
                                      void *pnext, uint32_t other_family);

/* Whether the device advertises the extension. */
bool vkt_device_has_extension(VkPhysicalDevice pdev, const char *name);

/* vkGetDeviceProcAddr(ctx->device, name); fails when it answers NULL. */
PFN_vkVoidFunction vkt_device_proc(const struct vkt_context *ctx,
                                   const char *name);

/*
 * Memory type index allowed by `type_bits` that has all of `required`,
 * preferring one that also has `preferred`; UINT32_MAX when none.
 */
uint32_t vkt_memory_type(const struct vkt_context *ctx, uint32_t type_bits,
                         VkMemoryPropertyFlags required,
                         VkMemoryPropertyFlags preferred);

/*
 * Buffer with its own allocation. With host_visible it lives in
 * HOST_VISIBLE memory (coherent preferred) and stays mapped.
 */
void vkt_buffer_create(const struct vkt_context *ctx, VkDeviceSize size,
                       VkBufferUsageFlags usage, bool host_visible,
                       struct vkt_buffer *buf);
void vkt_buffer_destroy(const struct vkt_context *ctx, struct vkt_buffer *buf);
/* Make host writes visible to the device / device writes to the host. */
void vkt_buffer_flush(const struct vkt_context *ctx,
                      const struct vkt_buffer *buf);
void vkt_buffer_invalidate(const struct vkt_context *ctx,
                           const struct vkt_buffer *buf);

/* A descriptor pool of count descriptors of type for one set, and a set of
 * layout allocated from it; the pool, in *pool, is the caller's to destroy. */
VkDescriptorSet vkt_descriptor_set(const struct vkt_context *ctx, VkDescriptorSetLayout layout,
                                   VkDescriptorType type, uint32_t count, VkDescriptorPool *pool);

/* Writes buffers[i], whole, as the one descriptor of binding i of set (n of
 * them, 8 at most, in one vkUpdateDescriptorSets). */
void vkt_write_buffers(const struct vkt_context *ctx, VkDescriptorSet set, VkDescriptorType type,
                       const VkBuffer *buffers, uint32_t n);

/* Device-local memory bound to an image. */
VkDeviceMemory vkt_image_bind_memory(const struct vkt_context *ctx,
                                     VkImage image);

/* A single-sample RGBA8 colour image of size x size, its view, a render
 * pass that clears and stores it (leaving it COLOR_ATTACHMENT_OPTIMAL) and
 * a framebuffer. */
struct vkt_color_target {
   VkImage image;
   VkDeviceMemory memory;
   VkImageView view;
   VkRenderPass render_pass;
   VkFramebuffer framebuffer;
};

void vkt_color_target_init(const struct vkt_context *ctx, uint32_t size,
                           struct vkt_color_target *t);
void vkt_color_target_finish(const struct vkt_context *ctx,
                             struct vkt_color_target *t);

VkShaderModule vkt_shader_module(const struct vkt_context *ctx,
                                 const uint32_t *code, size_t size);

/* A compute pipeline of the SPIR-V code (size bytes) in layout. */
VkPipeline vkt_compute_pipeline(const struct vkt_context *ctx, const uint32_t *code, size_t size,
                                VkPipelineLayout layout, VkPipelineCreateFlags flags);

/* A shader stage running module's "main". */
VkPipelineShaderStageCreateInfo vkt_shader_stage(VkShaderStageFlagBits stage,
                                                 VkShaderModule module);

/*
 * A graphics pipeline as the tests draw: filled triangle lists, no culling,
 * no blending, one colour attachment, in render_pass or else in dynamic
 * rendering of color_format (RGBA8 where left 0) and depth_format.  Fields
 * left zero take those defaults: no vertex buffers, one sample, no depth
 * test, the viewport and scissor dynamic (size x size where size is set).
 * A pipeline without a vertex stage (mesh shading) has no vertex input or
 * input assembly state.
 */
struct vkt_graphics {
   const VkPipelineShaderStageCreateInfo *stages;
   uint32_t n_stages;
   VkPipelineLayout layout;
   VkPipelineCreateFlags flags;
   VkRenderPass render_pass;
   VkFormat color_format, depth_format;
   uint32_t size;
   const VkPipelineVertexInputStateCreateInfo *vertex_input;
   VkSampleCountFlagBits samples;
   const VkPipelineDepthStencilStateCreateInfo *depth;
   /* dynamic beside the viewport and scissor where size is 0 */
   const VkDynamicState *dynamic_states;
   uint32_t n_dynamic_states;
};

/* vkCreateGraphicsPipelines' result; the pipeline in *pipeline. */
VkResult vkt_graphics_pipeline_try(const struct vkt_context *ctx, const struct vkt_graphics *g,
                                   VkPipeline *pipeline);
/* The same, failing the test on an error. */
VkPipeline vkt_graphics_pipeline(const struct vkt_context *ctx, const struct vkt_graphics *g);

/* Primary command buffer from the context's pool, begun for one submit. */
VkCommandBuffer vkt_cmd_begin(const struct vkt_context *ctx);
/* The same from another pool (a thread's own). */
VkCommandBuffer vkt_cmd_begin_pool(const struct vkt_context *ctx, VkCommandPool pool);
/* Ends, submits with a fence, waits (60 s at most) and frees it. */
void vkt_cmd_submit_wait(const struct vkt_context *ctx, VkCommandBuffer cmd);
/* Submits one command buffer alone to the context's queue, with fence (or
 * VK_NULL_HANDLE). */
void vkt_submit(const struct vkt_context *ctx, VkCommandBuffer cmd, VkFence fence);

/* What shaders/compute.comp writes for element i whose input is x, after
 * rounds of its hash with seed: the CPU's answer, to check the GPU's. */
static inline uint32_t
vkt_compute_expected(uint32_t i, uint32_t x, uint32_t rounds, uint32_t seed)
{
   uint32_t v = (x * x) ^ (i * 2654435761u);
   for (uint32_t r = 0; r < rounds; r++) {
      v = v * 1664525u + 1013904223u + r;
      v ^= v >> 13;
      v += seed;
   }
   return v;
}
