/* SPDX-License-Identifier: MIT */
/*
 * vk_extensions: device extensions at work, each sub-test on a device of its
 * own with only the extensions and features it needs, each checking the
 * numbers or pixels the GPU produced.
 *
 *   push         VK_KHR_push_descriptor: a uniform buffer (a, b) and an
 *                array of two storage buffers pushed with
 *                vkCmdPushDescriptorSetKHR (dstSet garbage: it is ignored),
 *                then, in the same command buffer, other a, b and buffers
 *                pushed with vkCmdPushDescriptorSetWithTemplateKHR from a
 *                struct with padding, offsets and a stride; both dispatches
 *                are checked (out[i] = a * i + b and its complement).
 *   conditional  VK_EXT_conditional_rendering: dispatches that write 1s under
 *                conditions 0 and non-zero, plain and inverted, and one with
 *                no condition; only those whose condition holds may write.
 *   border       VK_EXT_custom_border_color: a 4x4 RGBA8 image sampled
 *                (nearest, CLAMP_TO_BORDER, custom border colour) inside and
 *                outside [0,1] by a compute shader.
 *   xfb          VK_EXT_transform_feedback + VK_EXT_multi_draw: points
 *                captured from three draws of one vkCmdDrawMultiEXT whose
 *                draw array has a stride larger than VkMultiDrawInfoEXT,
 *                then from one instanced multi-draw, with rasterizer discard
 *                in dynamic rendering without attachments; the captured
 *                vertices and the counter buffer are checked.
 *   dynamic      VK_EXT_extended_dynamic_state3 colour write mask with the
 *                core dynamic cull mode and primitive topology: three draws
 *                into a 32x32 RGBA8 image, every pixel checked.
 *   address      buffer device addresses (core 1.2): a shader reads a table
 *                of addresses through the address in a push constant, then
 *                reads and writes through those; the host's addresses pass
 *                through gpud unchanged.
 *   descriptor-buffer, dgc  VK_EXT_descriptor_buffer and
 *                VK_EXT_device_generated_commands (see their sections).
 *   descriptor-buffer-graphics  VK_EXT_descriptor_buffer in a graphics
 *                pipeline: vertex positions from a storage descriptor and
 *                a colour from a uniform descriptor, two rectangles drawn
 *                with the set at two offsets of the descriptor buffer
 *                (other descriptors in each); every pixel of a 32x32 RGBA8
 *                image checked.
 *   host-image-copy  VK_EXT_host_image_copy: a two-layer image written on
 *                the host from padded rows and a rectangle, read back on the
 *                host and by the device, copied to another image on the
 *                host, and out and in as the host lays it out (MEMCPY).
 *   mesh         VK_EXT_mesh_shader: a task workgroup hands two rectangles
 *                to the two mesh workgroups it launches in its payload (on a
 *                device without task shaders the draw launches them); each
 *                draws its rectangle as two triangles with per-primitive
 *                colours. Drawn directly and indirectly, every pixel of a
 *                32x32 RGBA8 image checked each time.
 *   pipeline-binary  VK_KHR_pipeline_binary: a compute pipeline made to
 *                capture its data gives binaries (counted first), their
 *                keys and data are read back, the pipeline and binaries
 *                are destroyed, binaries are made again from the keys and
 *                data alone and a pipeline from them, whose dispatch's
 *                every element is checked; the pipeline's and the global
 *                key are asked too. Skipped (a SKIP line) where the device
 *                lacks the extension (lavapipe).
 *   optical-flow VK_NV_optical_flow: a 256x256 image of blocky noise and
 *                the same moved by (4, 2) pixels, uploaded on the
 *                graphics queue, an optical flow session on the optical
 *                flow engine's queue between them; the median flow vector
 *                of the inner part must be that movement. Skipped (a SKIP
 *                line) where the device lacks the extension or its queue.
 *   cooperative-vector  VK_NV_cooperative_vector's matrix conversions: an
 *                8x16 matrix of 32-bit floats converted on the host to
 *                16-bit floats (row-major, padded rows), checked against
 *                the CPU's; those to the inferencing-optimal layout and
 *                back, which must give them again; and the first
 *                conversion by the device (vkCmdConvertCooperativeVector-
 *                MatrixNV, buffers by address), checked the same. Skipped
 *                (a SKIP line) where the device lacks the extension.
 *
 *   vk_extensions [--device NAME] [--test NAME]...
 *
 * Without --test every sub-test runs, in the order above. Each prints one
 * line "vk_extensions: NAME: OK: what was checked"; any mismatch exits with
 * 1 and says what differed.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vkt_common.h"
#include "ext_push_comp_spv.h"
#include "ext_cond_comp_spv.h"
#include "ext_border_comp_spv.h"
#include "ext_xfb_vert_spv.h"
#include "ext_dyn_vert_spv.h"
#include "ext_white_frag_spv.h"
#include "ext_address_comp_spv.h"
#include "ext_dgc_comp_spv.h"
#include "ext_dbuf_vert_spv.h"
#include "ext_dbuf_frag_spv.h"
#include "ext_mesh_task_spv.h"
#include "ext_mesh_mesh_spv.h"
#include "ext_mesh_alone_mesh_spv.h"
#include "ext_mesh_frag_spv.h"
#include "compute_comp_spv.h"

#define PROG "vk_extensions"

/* Loads a device command or fails. */
#define LOAD(ctx, fn) ((PFN_##fn)vkt_device_proc((ctx), #fn))

/* The device the last sub-test ran on, for the summary; and how many
 * sub-tests found what they test missing. */
static char device_used[VK_MAX_PHYSICAL_DEVICE_NAME_SIZE];
static unsigned skipped;

/* vkt_context_init_ext; prog is "vk_extensions: SUBTEST", so that failures
 * say which sub-test failed. */
static void
context_init(struct vkt_context *ctx, const char *prog,
             const char *device_name, uint32_t features,
             const char *const *exts, uint32_t n_exts, void *pnext)
{
   vkt_context_init_ext(ctx, prog, device_name, features, exts, n_exts,
                        pnext);
   snprintf(device_used, sizeof(device_used), "%s", ctx->props.deviceName);
}

/* For a sub-test that asks what the device supports before it chooses what
 * to enable: the instance (in ctx) and the physical device context_init
 * would use. context_init_picked then makes the device on them. */
static VkPhysicalDevice
context_pick(struct vkt_context *ctx, const char *prog, const char *device_name)
{
   memset(ctx, 0, sizeof(*ctx));
   ctx->prog = prog;
   vkt_set_prog(prog);
   ctx->instance = vkt_instance_create(prog);
   return vkt_physical_device_pick(ctx->instance, device_name);
}

static void
context_init_picked(struct vkt_context *ctx, VkPhysicalDevice pdev, uint32_t features,
                    const char *const *exts, uint32_t n_exts, void *pnext)
{
   vkt_context_init_physical_ext(ctx, ctx->instance, pdev, features, exts, n_exts, pnext);
   snprintf(device_used, sizeof(device_used), "%s", ctx->props.deviceName);
}

/* ---- shared helpers ----------------------------------------------------- */

static VkPipeline
compute_pipeline_flags(const struct vkt_context *ctx, const uint32_t *code, size_t size,
                       VkPipelineLayout layout, VkPipelineCreateFlags flags)
{
   return vkt_compute_pipeline(ctx, code, size, layout, flags);
}

static VkPipeline
compute_pipeline(const struct vkt_context *ctx, const uint32_t *code,
                 size_t size, VkPipelineLayout layout)
{
   return compute_pipeline_flags(ctx, code, size, layout, 0);
}

static VkPipelineLayout
pipeline_layout(const struct vkt_context *ctx, const VkDescriptorSetLayout *set,
                const VkPushConstantRange *push)
{
   const VkPipelineLayoutCreateInfo info = {
      .sType = VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO,
      .setLayoutCount = set ? 1 : 0,
      .pSetLayouts = set,
      .pushConstantRangeCount = push ? 1 : 0,
      .pPushConstantRanges = push,
   };
   VkPipelineLayout layout;

   VKT_CHECK(vkCreatePipelineLayout(ctx->device, &info, NULL, &layout));
   return layout;
}

/* Makes writes of the stages in src_stage visible to the host. */
static void
barrier_to_host(VkCommandBuffer cmd, VkPipelineStageFlags src_stage,
                VkAccessFlags src_access)
{
   const VkMemoryBarrier barrier = {
      .sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER,
      .srcAccessMask = src_access,
      .dstAccessMask = VK_ACCESS_HOST_READ_BIT,
   };

   vkCmdPipelineBarrier(cmd, src_stage, VK_PIPELINE_STAGE_HOST_BIT, 0, 1,
                        &barrier, 0, NULL, 0, NULL);
}

static void
image_barrier(VkCommandBuffer cmd, VkImage image, VkImageLayout old_layout,
              VkImageLayout new_layout, VkPipelineStageFlags src_stage,
              VkAccessFlags src_access, VkPipelineStageFlags dst_stage,
              VkAccessFlags dst_access)
{
   const VkImageMemoryBarrier barrier = {
      .sType = VK_STRUCTURE_TYPE_IMAGE_MEMORY_BARRIER,
      .srcAccessMask = src_access,
      .dstAccessMask = dst_access,
      .oldLayout = old_layout,
      .newLayout = new_layout,
      .srcQueueFamilyIndex = VK_QUEUE_FAMILY_IGNORED,
      .dstQueueFamilyIndex = VK_QUEUE_FAMILY_IGNORED,
      .image = image,
      .subresourceRange = { VK_IMAGE_ASPECT_COLOR_BIT, 0, 1, 0, 1 },
   };

   vkCmdPipelineBarrier(cmd, src_stage, dst_stage, 0, 0, NULL, 0, NULL, 1,
                        &barrier);
}

struct image {
   VkImage image;
   VkDeviceMemory memory;
   VkImageView view;
};

static void
image_create(const struct vkt_context *ctx, uint32_t width, uint32_t height,
             VkImageUsageFlags usage, struct image *img)
{
   const VkImageCreateInfo info = {
      .sType = VK_STRUCTURE_TYPE_IMAGE_CREATE_INFO,
      .imageType = VK_IMAGE_TYPE_2D,
      .format = VK_FORMAT_R8G8B8A8_UNORM,
      .extent = { width, height, 1 },
      .mipLevels = 1,
      .arrayLayers = 1,
      .samples = VK_SAMPLE_COUNT_1_BIT,
      .tiling = VK_IMAGE_TILING_OPTIMAL,
      .usage = usage,
      .sharingMode = VK_SHARING_MODE_EXCLUSIVE,
      .initialLayout = VK_IMAGE_LAYOUT_UNDEFINED,
   };
   VKT_CHECK(vkCreateImage(ctx->device, &info, NULL, &img->image));
   img->memory = vkt_image_bind_memory(ctx, img->image);

   const VkImageViewCreateInfo view_info = {
      .sType = VK_STRUCTURE_TYPE_IMAGE_VIEW_CREATE_INFO,
      .image = img->image,
      .viewType = VK_IMAGE_VIEW_TYPE_2D,
      .format = info.format,
      .subresourceRange = { VK_IMAGE_ASPECT_COLOR_BIT, 0, 1, 0, 1 },
   };
   VKT_CHECK(vkCreateImageView(ctx->device, &view_info, NULL, &img->view));
}

static void
image_destroy(const struct vkt_context *ctx, struct image *img)
{
   vkDestroyImageView(ctx->device, img->view, NULL);
   vkDestroyImage(ctx->device, img->image, NULL);
   vkFreeMemory(ctx->device, img->memory, NULL);
}

#if defined(VK_EXT_descriptor_buffer) || defined(VK_EXT_mesh_shader)
/* The graphics sub-tests (descriptor-buffer-graphics, mesh) draw
 * rectangles into a GFX_SIZE x GFX_SIZE RGBA8 image cleared to gfx_clear,
 * read it back and check every pixel. The rectangles' edges lie on pixel
 * boundaries, so that no pixel centre is on one of them. */
#define GFX_SIZE 32
#define GFX_BYTES (GFX_SIZE * GFX_SIZE * 4)

static const uint8_t gfx_clear[4] = { 16, 32, 48, 255 };

/* Pixels x0 <= x < x1, y0 <= y < y1. */
struct rect {
   uint32_t x0, y0, x1, y1;
};

static bool
rect_contains(const struct rect *r, uint32_t x, uint32_t y)
{
   return x >= r->x0 && x < r->x1 && y >= r->y0 && y < r->y1;
}

/* A pipeline drawing into one RGBA8 attachment of GFX_SIZE x GFX_SIZE in
 * dynamic rendering: the whole image as viewport, no culling, no blending;
 * with a vertex shader, triangle lists without vertex buffers (a mesh
 * pipeline has neither vertex input nor input assembly state). */
static VkPipeline
gfx_pipeline(const struct vkt_context *ctx, const VkPipelineShaderStageCreateInfo *stages,
             uint32_t n_stages, VkPipelineLayout layout, VkPipelineCreateFlags flags)
{
   const struct vkt_graphics g = {
      .stages = stages,
      .n_stages = n_stages,
      .layout = layout,
      .flags = flags,
      .size = GFX_SIZE,
   };
   return vkt_graphics_pipeline(ctx, &g);
}

/* Begins dynamic rendering into target, cleared to gfx_clear; again: after
 * gfx_end_readback (else the image is new). */
static void
gfx_begin(VkCommandBuffer cmd, const struct image *target, bool again)
{
   image_barrier(cmd, target->image,
                 again ? VK_IMAGE_LAYOUT_TRANSFER_SRC_OPTIMAL : VK_IMAGE_LAYOUT_UNDEFINED,
                 VK_IMAGE_LAYOUT_COLOR_ATTACHMENT_OPTIMAL,
                 again ? VK_PIPELINE_STAGE_TRANSFER_BIT : VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT, 0,
                 VK_PIPELINE_STAGE_COLOR_ATTACHMENT_OUTPUT_BIT,
                 VK_ACCESS_COLOR_ATTACHMENT_WRITE_BIT);
   VkRenderingAttachmentInfo color_attachment = {
      .sType = VK_STRUCTURE_TYPE_RENDERING_ATTACHMENT_INFO,
      .imageView = target->view,
      .imageLayout = VK_IMAGE_LAYOUT_COLOR_ATTACHMENT_OPTIMAL,
      .loadOp = VK_ATTACHMENT_LOAD_OP_CLEAR,
      .storeOp = VK_ATTACHMENT_STORE_OP_STORE,
   };
   for (int c = 0; c < 4; c++)
      color_attachment.clearValue.color.float32[c] = gfx_clear[c] / 255.0f;
   const VkRenderingInfo rendering = {
      .sType = VK_STRUCTURE_TYPE_RENDERING_INFO,
      .renderArea = { { 0, 0 }, { GFX_SIZE, GFX_SIZE } },
      .layerCount = 1,
      .colorAttachmentCount = 1,
      .pColorAttachments = &color_attachment,
   };
   vkCmdBeginRendering(cmd, &rendering);
}

/* Ends the rendering and copies the image to buf at offset (the image is
 * left TRANSFER_SRC_OPTIMAL). */
static void
gfx_end_readback(VkCommandBuffer cmd, const struct image *target, const struct vkt_buffer *buf,
                 VkDeviceSize offset)
{
   vkCmdEndRendering(cmd);
   image_barrier(cmd, target->image, VK_IMAGE_LAYOUT_COLOR_ATTACHMENT_OPTIMAL,
                 VK_IMAGE_LAYOUT_TRANSFER_SRC_OPTIMAL,
                 VK_PIPELINE_STAGE_COLOR_ATTACHMENT_OUTPUT_BIT,
                 VK_ACCESS_COLOR_ATTACHMENT_WRITE_BIT, VK_PIPELINE_STAGE_TRANSFER_BIT,
                 VK_ACCESS_TRANSFER_READ_BIT);
   const VkBufferImageCopy region = {
      .bufferOffset = offset,
      .imageSubresource = { VK_IMAGE_ASPECT_COLOR_BIT, 0, 0, 1 },
      .imageExtent = { GFX_SIZE, GFX_SIZE, 1 },
   };
   vkCmdCopyImageToBuffer(cmd, target->image, VK_IMAGE_LAYOUT_TRANSFER_SRC_OPTIMAL, buf->buffer,
                          1, &region);
}

/* Every pixel of got as in want, or fails saying where; what: what was
 * drawn. */
static void
gfx_check(const uint8_t *got, const uint8_t *want, const char *what)
{
   for (uint32_t y = 0; y < GFX_SIZE; y++)
      for (uint32_t x = 0; x < GFX_SIZE; x++) {
         const uint8_t *g = got + (y * GFX_SIZE + x) * 4;
         const uint8_t *w = want + (y * GFX_SIZE + x) * 4;
         if (memcmp(g, w, 4))
            vkt_fail("%s: pixel (%u,%u) is (%u, %u, %u, %u), expected (%u, %u, %u, %u)%s",
                     what, x, y, g[0], g[1], g[2], g[3], w[0], w[1], w[2], w[3],
                     memcmp(w, gfx_clear, 4) ? "" : " (the clear colour)");
      }
}
#endif

/* ---- push: VK_KHR_push_descriptor --------------------------------------- */

#define PUSH_COUNT 256                /* uints per output range */
#define PUSH_REGION 2048              /* bytes between output ranges */
#define PUSH_PARAMS_2 256             /* offset of the second a, b */
#define PUSH_SENTINEL 0xa5a5a5a5u

struct push_params {
   uint32_t a, b;
};

/* The template's data: binding 1's two buffers are elements of an array
 * with a cookie before each (stride 32, first one at offset 16), binding 0's
 * buffer comes after them. */
struct push_out_elem {
   uint64_t cookie;
   VkDescriptorBufferInfo info;
};

struct push_template_data {
   uint32_t magic;
   struct push_out_elem outs[2];
   VkDescriptorBufferInfo params;
};

/* Checks output range `region` against a * i + b (complemented when
 * `invert`) and that the rest of the region was not written. */
static void
push_check(const uint32_t *out, unsigned region, const struct push_params *p,
           bool invert, const char *what)
{
   const uint32_t *data = out + region * (PUSH_REGION / 4);

   for (uint32_t i = 0; i < PUSH_REGION / 4; i++) {
      uint32_t want = i < PUSH_COUNT ? p->a * i + p->b : PUSH_SENTINEL;

      if (i < PUSH_COUNT && invert)
         want = ~want;
      if (data[i] != want)
         vkt_fail("%s: output %u element %u is 0x%08x, expected 0x%08x%s",
                  what, region, i, data[i], want,
                  i < PUSH_COUNT ? "" : " (beyond the bound range)");
   }
}

static void
test_push(const char *device_name)
{
   static const char *const exts[] = { VK_KHR_PUSH_DESCRIPTOR_EXTENSION_NAME };
   struct vkt_context ctx;

   context_init(&ctx, PROG ": push", device_name, 0, exts,
                VKT_ARRAY_SIZE(exts), NULL);
   PFN_vkCmdPushDescriptorSetKHR push_set =
      LOAD(&ctx, vkCmdPushDescriptorSetKHR);
   PFN_vkCmdPushDescriptorSetWithTemplateKHR push_template =
      LOAD(&ctx, vkCmdPushDescriptorSetWithTemplateKHR);

   const VkDescriptorSetLayoutBinding bindings[] = {
      { 0, VK_DESCRIPTOR_TYPE_UNIFORM_BUFFER, 1, VK_SHADER_STAGE_COMPUTE_BIT,
        NULL },
      { 1, VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, 2, VK_SHADER_STAGE_COMPUTE_BIT,
        NULL },
   };
   const VkDescriptorSetLayoutCreateInfo set_layout_info = {
      .sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO,
      .flags = VK_DESCRIPTOR_SET_LAYOUT_CREATE_PUSH_DESCRIPTOR_BIT_KHR,
      .bindingCount = VKT_ARRAY_SIZE(bindings),
      .pBindings = bindings,
   };
   VkDescriptorSetLayout set_layout;
   VKT_CHECK(vkCreateDescriptorSetLayout(ctx.device, &set_layout_info, NULL,
                                         &set_layout));
   VkPipelineLayout layout = pipeline_layout(&ctx, &set_layout, NULL);
   VkPipeline pipeline = compute_pipeline(&ctx, ext_push_comp_spv,
                                          sizeof(ext_push_comp_spv), layout);

   /* Both a, b pairs in one uniform buffer; the second at offset 256, which
    * every minUniformBufferOffsetAlignment (at most 256) divides. */
   const struct push_params p1 = { 3, 1000 }, p2 = { 0x10001u, 0xdead0000u };
   struct vkt_buffer ubo, out;
   vkt_buffer_create(&ctx, 512, VK_BUFFER_USAGE_UNIFORM_BUFFER_BIT, true,
                     &ubo);
   memset(ubo.map, 0xee, ubo.size);
   memcpy(ubo.map, &p1, sizeof(p1));
   memcpy((uint8_t *)ubo.map + PUSH_PARAMS_2, &p2, sizeof(p2));
   vkt_buffer_flush(&ctx, &ubo);
   vkt_buffer_create(&ctx, 4 * PUSH_REGION, VK_BUFFER_USAGE_STORAGE_BUFFER_BIT,
                     true, &out);
   memset(out.map, 0xa5, out.size);
   vkt_buffer_flush(&ctx, &out);

   /* The push template: binding 1 first in the data's order, binding 0
    * last. */
   const VkDescriptorUpdateTemplateEntry entries[] = {
      {
         .dstBinding = 1,
         .dstArrayElement = 0,
         .descriptorCount = 2,
         .descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
         .offset = offsetof(struct push_template_data, outs[0].info),
         .stride = sizeof(struct push_out_elem),
      },
      {
         .dstBinding = 0,
         .dstArrayElement = 0,
         .descriptorCount = 1,
         .descriptorType = VK_DESCRIPTOR_TYPE_UNIFORM_BUFFER,
         .offset = offsetof(struct push_template_data, params),
         .stride = sizeof(struct push_template_data),
      },
   };
   const VkDescriptorUpdateTemplateCreateInfo template_info = {
      .sType = VK_STRUCTURE_TYPE_DESCRIPTOR_UPDATE_TEMPLATE_CREATE_INFO,
      .descriptorUpdateEntryCount = VKT_ARRAY_SIZE(entries),
      .pDescriptorUpdateEntries = entries,
      .templateType = VK_DESCRIPTOR_UPDATE_TEMPLATE_TYPE_PUSH_DESCRIPTORS_KHR,
      .pipelineBindPoint = VK_PIPELINE_BIND_POINT_COMPUTE,
      .pipelineLayout = layout,
      .set = 0,
   };
   VkDescriptorUpdateTemplate update_template;
   VKT_CHECK(vkCreateDescriptorUpdateTemplate(ctx.device, &template_info,
                                              NULL, &update_template));

   VkCommandBuffer cmd = vkt_cmd_begin(&ctx);
   vkCmdBindPipeline(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, pipeline);

   /* First dispatch: a plain push into output ranges 0 and 1. dstSet is
    * ignored for pushes: a garbage value must not matter. The structs are
    * consumed when recorded, so they are scribbled over right after. */
   VkDescriptorBufferInfo params_info = { ubo.buffer, 0, sizeof(p1) };
   VkDescriptorBufferInfo out_infos[2] = {
      { out.buffer, 0 * PUSH_REGION, PUSH_COUNT * 4 },
      { out.buffer, 1 * PUSH_REGION, PUSH_COUNT * 4 },
   };
   const VkDescriptorSet garbage_set =
      (VkDescriptorSet)(uintptr_t)0x5eadbeef0000f00dull;
   VkWriteDescriptorSet writes[2] = {
      {
         .sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET,
         .dstSet = garbage_set,
         .dstBinding = 0,
         .descriptorCount = 1,
         .descriptorType = VK_DESCRIPTOR_TYPE_UNIFORM_BUFFER,
         .pBufferInfo = &params_info,
      },
      {
         .sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET,
         .dstSet = garbage_set,
         .dstBinding = 1,
         .dstArrayElement = 0,
         .descriptorCount = 2,
         .descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
         .pBufferInfo = out_infos,
      },
   };
   push_set(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, layout, 0,
            VKT_ARRAY_SIZE(writes), writes);
   memset(&params_info, 0xcc, sizeof(params_info));
   memset(out_infos, 0xcc, sizeof(out_infos));
   vkCmdDispatch(cmd, PUSH_COUNT / 64, 1, 1);

   /* Second dispatch: the template push into output ranges 2 and 3. */
   struct push_template_data data;
   memset(&data, 0x77, sizeof(data));   /* padding, too */
   data.magic = 0xfeedfaceu;
   data.outs[0].cookie = 0x1111111111111111ull;
   data.outs[0].info = (VkDescriptorBufferInfo){ out.buffer, 2 * PUSH_REGION,
                                                 PUSH_COUNT * 4 };
   data.outs[1].cookie = 0x2222222222222222ull;
   data.outs[1].info = (VkDescriptorBufferInfo){ out.buffer, 3 * PUSH_REGION,
                                                 PUSH_COUNT * 4 };
   data.params = (VkDescriptorBufferInfo){ ubo.buffer, PUSH_PARAMS_2,
                                           sizeof(p2) };
   push_template(cmd, update_template, layout, 0, &data);
   memset(&data, 0xcc, sizeof(data));
   vkCmdDispatch(cmd, PUSH_COUNT / 64, 1, 1);

   barrier_to_host(cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
                   VK_ACCESS_SHADER_WRITE_BIT);
   vkt_cmd_submit_wait(&ctx, cmd);
   vkt_buffer_invalidate(&ctx, &out);

   push_check(out.map, 0, &p1, false, "vkCmdPushDescriptorSetKHR");
   push_check(out.map, 1, &p1, true, "vkCmdPushDescriptorSetKHR");
   push_check(out.map, 2, &p2, false,
              "vkCmdPushDescriptorSetWithTemplateKHR");
   push_check(out.map, 3, &p2, true, "vkCmdPushDescriptorSetWithTemplateKHR");

   printf(PROG ": push: OK: vkCmdPushDescriptorSetKHR (garbage dstSet) "
          "a=%u b=%u and vkCmdPushDescriptorSetWithTemplateKHR (stride %zu, "
          "offsets %zu and %zu) a=0x%x b=0x%x: 4 x %u uints, and the rest "
          "of each range untouched\n",
          p1.a, p1.b, sizeof(struct push_out_elem),
          offsetof(struct push_template_data, outs[0].info),
          offsetof(struct push_template_data, params), p2.a, p2.b,
          PUSH_COUNT);

   vkDestroyDescriptorUpdateTemplate(ctx.device, update_template, NULL);
   vkDestroyPipeline(ctx.device, pipeline, NULL);
   vkDestroyPipelineLayout(ctx.device, layout, NULL);
   vkDestroyDescriptorSetLayout(ctx.device, set_layout, NULL);
   vkt_buffer_destroy(&ctx, &out);
   vkt_buffer_destroy(&ctx, &ubo);
   vkt_context_finish(&ctx);
}

/* ---- conditional: VK_EXT_conditional_rendering -------------------------- */

#define COND_GROUP 64                 /* uints each case's dispatch writes */
#define COND_NONZERO_OFFSET 16
#define COND_NONZERO 0x00010000u      /* only bit 16: not a low byte */

static const struct cond_case {
   const char *what;
   bool conditional;
   VkDeviceSize offset;               /* of the condition */
   VkConditionalRenderingFlagsEXT flags;
   uint32_t expect;
} cond_cases[] = {
   { "condition 0", true, 0, 0, 0 },
   { "condition 0x10000", true, COND_NONZERO_OFFSET, 0, 1 },
   { "inverted, condition 0", true, 0,
     VK_CONDITIONAL_RENDERING_INVERTED_BIT_EXT, 1 },
   { "inverted, condition 0x10000", true, COND_NONZERO_OFFSET,
     VK_CONDITIONAL_RENDERING_INVERTED_BIT_EXT, 0 },
   { "no condition", false, 0, 0, 1 },
};

static void
test_conditional(const char *device_name)
{
   static const char *const exts[] = {
      VK_EXT_CONDITIONAL_RENDERING_EXTENSION_NAME,
   };
   VkPhysicalDeviceConditionalRenderingFeaturesEXT cond_features = {
      .sType =
         VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_CONDITIONAL_RENDERING_FEATURES_EXT,
      .conditionalRendering = VK_TRUE,
   };
   struct vkt_context ctx;

   context_init(&ctx, PROG ": conditional", device_name, 0, exts,
                VKT_ARRAY_SIZE(exts), &cond_features);
   PFN_vkCmdBeginConditionalRenderingEXT begin_cond =
      LOAD(&ctx, vkCmdBeginConditionalRenderingEXT);
   PFN_vkCmdEndConditionalRenderingEXT end_cond =
      LOAD(&ctx, vkCmdEndConditionalRenderingEXT);

   const unsigned n_cases = VKT_ARRAY_SIZE(cond_cases);
   struct vkt_buffer cond, out;
   vkt_buffer_create(&ctx, 64, VK_BUFFER_USAGE_CONDITIONAL_RENDERING_BIT_EXT,
                     true, &cond);
   memset(cond.map, 0, cond.size);
   ((uint32_t *)cond.map)[COND_NONZERO_OFFSET / 4] = COND_NONZERO;
   vkt_buffer_flush(&ctx, &cond);
   vkt_buffer_create(&ctx, n_cases * COND_GROUP * 4,
                     VK_BUFFER_USAGE_STORAGE_BUFFER_BIT, true, &out);
   memset(out.map, 0, out.size);
   vkt_buffer_flush(&ctx, &out);

   const VkDescriptorSetLayoutBinding binding = {
      0, VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, 1, VK_SHADER_STAGE_COMPUTE_BIT,
      NULL
   };
   const VkDescriptorSetLayoutCreateInfo set_layout_info = {
      .sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO,
      .bindingCount = 1,
      .pBindings = &binding,
   };
   VkDescriptorSetLayout set_layout;
   VKT_CHECK(vkCreateDescriptorSetLayout(ctx.device, &set_layout_info, NULL,
                                         &set_layout));
   const VkPushConstantRange push_range = {
      VK_SHADER_STAGE_COMPUTE_BIT, 0, sizeof(uint32_t)
   };
   VkPipelineLayout layout = pipeline_layout(&ctx, &set_layout, &push_range);
   VkPipeline pipeline = compute_pipeline(&ctx, ext_cond_comp_spv,
                                          sizeof(ext_cond_comp_spv), layout);

   VkDescriptorPool pool;
   const VkDescriptorSet set =
      vkt_descriptor_set(&ctx, set_layout, VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, 1, &pool);
   vkt_write_buffers(&ctx, set, VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, &out.buffer, 1);

   VkCommandBuffer cmd = vkt_cmd_begin(&ctx);
   vkCmdBindPipeline(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, pipeline);
   vkCmdBindDescriptorSets(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, layout, 0, 1,
                           &set, 0, NULL);
   for (unsigned c = 0; c < n_cases; c++) {
      const struct cond_case *cc = &cond_cases[c];
      const uint32_t base = c * COND_GROUP;
      const VkConditionalRenderingBeginInfoEXT begin = {
         .sType = VK_STRUCTURE_TYPE_CONDITIONAL_RENDERING_BEGIN_INFO_EXT,
         .buffer = cond.buffer,
         .offset = cc->offset,
         .flags = cc->flags,
      };

      vkCmdPushConstants(cmd, layout, VK_SHADER_STAGE_COMPUTE_BIT, 0,
                         sizeof(base), &base);
      if (cc->conditional)
         begin_cond(cmd, &begin);
      vkCmdDispatch(cmd, 1, 1, 1);
      if (cc->conditional)
         end_cond(cmd);
   }
   barrier_to_host(cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
                   VK_ACCESS_SHADER_WRITE_BIT);
   vkt_cmd_submit_wait(&ctx, cmd);
   vkt_buffer_invalidate(&ctx, &out);

   const uint32_t *data = out.map;
   for (unsigned c = 0; c < n_cases; c++) {
      for (uint32_t i = 0; i < COND_GROUP; i++) {
         uint32_t got = data[c * COND_GROUP + i];

         if (got != cond_cases[c].expect)
            vkt_fail("dispatch with %s: element %u is %u, expected %u (the "
                     "dispatch should %s)", cond_cases[c].what, i, got,
                     cond_cases[c].expect,
                     cond_cases[c].expect ? "have run" : "have been skipped");
      }
   }

   printf(PROG ": conditional: OK: dispatches with condition 0 (skipped), "
          "0x%x (ran), inverted 0 (ran), inverted 0x%x (skipped), no "
          "condition (ran): %u x %u uints\n", COND_NONZERO, COND_NONZERO,
          n_cases, COND_GROUP);

   vkDestroyPipeline(ctx.device, pipeline, NULL);
   vkDestroyPipelineLayout(ctx.device, layout, NULL);
   vkDestroyDescriptorPool(ctx.device, pool, NULL);
   vkDestroyDescriptorSetLayout(ctx.device, set_layout, NULL);
   vkt_buffer_destroy(&ctx, &out);
   vkt_buffer_destroy(&ctx, &cond);
   vkt_context_finish(&ctx);
}

/* ---- border: VK_EXT_custom_border_color --------------------------------- */

#define BORDER_SIZE 4

static const float border_color[4] = { 0.25f, 0.5f, 0.75f, 1.0f };

/* Coordinates outside [0,1] (nearest: a texel index outside 0..3). */
static const float border_outside[][2] = {
   { -0.5f, 0.5f }, { 1.5f, 0.5f }, { 0.5f, -0.5f }, { 0.5f, 1.25f },
   { -1.0f, -1.0f }, { 2.0f, 2.0f }, { -0.1f, 0.375f }, { 1.05f, 0.625f },
};

struct border_sample {
   float uv[4];
   float color[4];
};

static void
border_texel(uint32_t x, uint32_t y, uint8_t rgba[4])
{
   rgba[0] = (uint8_t)(20 + 60 * x);
   rgba[1] = (uint8_t)(30 + 50 * y);
   rgba[2] = (uint8_t)(255 - 17 * (x + BORDER_SIZE * y));
   rgba[3] = (uint8_t)(100 + 10 * (x + y));
}

static void
test_border(const char *device_name)
{
   static const char *const exts[] = {
      VK_EXT_CUSTOM_BORDER_COLOR_EXTENSION_NAME,
   };
   VkPhysicalDeviceCustomBorderColorFeaturesEXT border_features = {
      .sType =
         VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_CUSTOM_BORDER_COLOR_FEATURES_EXT,
      .customBorderColors = VK_TRUE,
   };
   struct vkt_context ctx;

   context_init(&ctx, PROG ": border", device_name, 0, exts,
                VKT_ARRAY_SIZE(exts), &border_features);

   /* The image, uploaded from a staging buffer. */
   struct vkt_buffer staging;
   vkt_buffer_create(&ctx, BORDER_SIZE * BORDER_SIZE * 4,
                     VK_BUFFER_USAGE_TRANSFER_SRC_BIT, true, &staging);
   for (uint32_t y = 0; y < BORDER_SIZE; y++)
      for (uint32_t x = 0; x < BORDER_SIZE; x++)
         border_texel(x, y,
                      (uint8_t *)staging.map + (y * BORDER_SIZE + x) * 4);
   vkt_buffer_flush(&ctx, &staging);
   struct image tex;
   image_create(&ctx, BORDER_SIZE, BORDER_SIZE,
                VK_IMAGE_USAGE_SAMPLED_BIT | VK_IMAGE_USAGE_TRANSFER_DST_BIT,
                &tex);

   /* Samples: every texel's centre, then the coordinates outside. */
   const uint32_t n_inside = BORDER_SIZE * BORDER_SIZE;
   const uint32_t n_samples = n_inside + VKT_ARRAY_SIZE(border_outside);
   struct vkt_buffer samples;
   vkt_buffer_create(&ctx, n_samples * sizeof(struct border_sample),
                     VK_BUFFER_USAGE_STORAGE_BUFFER_BIT, true, &samples);
   struct border_sample *s = samples.map;
   for (uint32_t i = 0; i < n_samples; i++) {
      if (i < n_inside) {
         s[i].uv[0] = ((i % BORDER_SIZE) + 0.5f) / BORDER_SIZE;
         s[i].uv[1] = ((i / BORDER_SIZE) + 0.5f) / BORDER_SIZE;
      } else {
         s[i].uv[0] = border_outside[i - n_inside][0];
         s[i].uv[1] = border_outside[i - n_inside][1];
      }
      s[i].uv[2] = s[i].uv[3] = 0.0f;
      for (int c = 0; c < 4; c++)
         s[i].color[c] = -1.0f;
   }
   vkt_buffer_flush(&ctx, &samples);

   VkCommandBuffer cmd = vkt_cmd_begin(&ctx);
   image_barrier(cmd, tex.image, VK_IMAGE_LAYOUT_UNDEFINED,
                 VK_IMAGE_LAYOUT_TRANSFER_DST_OPTIMAL,
                 VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT, 0,
                 VK_PIPELINE_STAGE_TRANSFER_BIT, VK_ACCESS_TRANSFER_WRITE_BIT);
   const VkBufferImageCopy upload = {
      .imageSubresource = { VK_IMAGE_ASPECT_COLOR_BIT, 0, 0, 1 },
      .imageExtent = { BORDER_SIZE, BORDER_SIZE, 1 },
   };
   vkCmdCopyBufferToImage(cmd, staging.buffer, tex.image,
                          VK_IMAGE_LAYOUT_TRANSFER_DST_OPTIMAL, 1, &upload);
   image_barrier(cmd, tex.image, VK_IMAGE_LAYOUT_TRANSFER_DST_OPTIMAL,
                 VK_IMAGE_LAYOUT_SHADER_READ_ONLY_OPTIMAL,
                 VK_PIPELINE_STAGE_TRANSFER_BIT, VK_ACCESS_TRANSFER_WRITE_BIT,
                 VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
                 VK_ACCESS_SHADER_READ_BIT);
   vkt_cmd_submit_wait(&ctx, cmd);

   const VkSamplerCustomBorderColorCreateInfoEXT custom = {
      .sType = VK_STRUCTURE_TYPE_SAMPLER_CUSTOM_BORDER_COLOR_CREATE_INFO_EXT,
      .customBorderColor = { .float32 = { border_color[0], border_color[1],
                                          border_color[2],
                                          border_color[3] } },
      .format = VK_FORMAT_R8G8B8A8_UNORM,
   };
   const VkSamplerCreateInfo sampler_info = {
      .sType = VK_STRUCTURE_TYPE_SAMPLER_CREATE_INFO,
      .pNext = &custom,
      .magFilter = VK_FILTER_NEAREST,
      .minFilter = VK_FILTER_NEAREST,
      .mipmapMode = VK_SAMPLER_MIPMAP_MODE_NEAREST,
      .addressModeU = VK_SAMPLER_ADDRESS_MODE_CLAMP_TO_BORDER,
      .addressModeV = VK_SAMPLER_ADDRESS_MODE_CLAMP_TO_BORDER,
      .addressModeW = VK_SAMPLER_ADDRESS_MODE_CLAMP_TO_BORDER,
      .maxLod = 0.0f,
      .borderColor = VK_BORDER_COLOR_FLOAT_CUSTOM_EXT,
   };
   VkSampler sampler;
   VKT_CHECK(vkCreateSampler(ctx.device, &sampler_info, NULL, &sampler));

   const VkDescriptorSetLayoutBinding bindings[] = {
      { 0, VK_DESCRIPTOR_TYPE_COMBINED_IMAGE_SAMPLER, 1,
        VK_SHADER_STAGE_COMPUTE_BIT, NULL },
      { 1, VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, 1, VK_SHADER_STAGE_COMPUTE_BIT,
        NULL },
   };
   const VkDescriptorSetLayoutCreateInfo set_layout_info = {
      .sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO,
      .bindingCount = VKT_ARRAY_SIZE(bindings),
      .pBindings = bindings,
   };
   VkDescriptorSetLayout set_layout;
   VKT_CHECK(vkCreateDescriptorSetLayout(ctx.device, &set_layout_info, NULL,
                                         &set_layout));
   VkPipelineLayout layout = pipeline_layout(&ctx, &set_layout, NULL);
   VkPipeline pipeline = compute_pipeline(&ctx, ext_border_comp_spv,
                                          sizeof(ext_border_comp_spv), layout);

   const VkDescriptorPoolSize pool_sizes[] = {
      { VK_DESCRIPTOR_TYPE_COMBINED_IMAGE_SAMPLER, 1 },
      { VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, 1 },
   };
   const VkDescriptorPoolCreateInfo pool_info = {
      .sType = VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO,
      .maxSets = 1,
      .poolSizeCount = VKT_ARRAY_SIZE(pool_sizes),
      .pPoolSizes = pool_sizes,
   };
   VkDescriptorPool pool;
   VKT_CHECK(vkCreateDescriptorPool(ctx.device, &pool_info, NULL, &pool));
   const VkDescriptorSetAllocateInfo set_alloc = {
      .sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO,
      .descriptorPool = pool,
      .descriptorSetCount = 1,
      .pSetLayouts = &set_layout,
   };
   VkDescriptorSet set;
   VKT_CHECK(vkAllocateDescriptorSets(ctx.device, &set_alloc, &set));
   const VkDescriptorImageInfo image_info = {
      sampler, tex.view, VK_IMAGE_LAYOUT_SHADER_READ_ONLY_OPTIMAL
   };
   const VkDescriptorBufferInfo samples_info = {
      samples.buffer, 0, VK_WHOLE_SIZE
   };
   const VkWriteDescriptorSet writes[] = {
      {
         .sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET,
         .dstSet = set,
         .dstBinding = 0,
         .descriptorCount = 1,
         .descriptorType = VK_DESCRIPTOR_TYPE_COMBINED_IMAGE_SAMPLER,
         .pImageInfo = &image_info,
      },
      {
         .sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET,
         .dstSet = set,
         .dstBinding = 1,
         .descriptorCount = 1,
         .descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
         .pBufferInfo = &samples_info,
      },
   };
   vkUpdateDescriptorSets(ctx.device, VKT_ARRAY_SIZE(writes), writes, 0,
                          NULL);

   cmd = vkt_cmd_begin(&ctx);
   vkCmdBindPipeline(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, pipeline);
   vkCmdBindDescriptorSets(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, layout, 0, 1,
                           &set, 0, NULL);
   vkCmdDispatch(cmd, n_samples, 1, 1);
   barrier_to_host(cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
                   VK_ACCESS_SHADER_WRITE_BIT);
   vkt_cmd_submit_wait(&ctx, cmd);
   vkt_buffer_invalidate(&ctx, &samples);

   for (uint32_t i = 0; i < n_samples; i++) {
      float want[4];
      double tolerance;

      if (i < n_inside) {
         uint8_t rgba[4];

         border_texel(i % BORDER_SIZE, i / BORDER_SIZE, rgba);
         for (int c = 0; c < 4; c++)
            want[c] = rgba[c] / 255.0f;
         tolerance = 0.5 / 255.0;   /* the texel's own value */
      } else {
         memcpy(want, border_color, sizeof(want));
         tolerance = 1.0 / 255.0;   /* may be rounded to the format */
      }
      for (int c = 0; c < 4; c++) {
         if (fabs(s[i].color[c] - want[c]) <= tolerance)
            continue;
         vkt_fail("sample at (%g, %g) %s: got (%.4f, %.4f, %.4f, %.4f), "
                  "expected (%.4f, %.4f, %.4f, %.4f)", s[i].uv[0], s[i].uv[1],
                  i < n_inside ? "(a texel's centre)"
                               : "(outside: the custom border colour)",
                  s[i].color[0], s[i].color[1], s[i].color[2], s[i].color[3],
                  want[0], want[1], want[2], want[3]);
      }
   }

   printf(PROG ": border: OK: %u samples outside [0,1] gave the custom "
          "border colour (%.2f, %.2f, %.2f, %.2f) within 1/255, %u texel "
          "centres gave the image's texels\n",
          (unsigned)VKT_ARRAY_SIZE(border_outside), border_color[0],
          border_color[1], border_color[2], border_color[3], n_inside);

   vkDestroyPipeline(ctx.device, pipeline, NULL);
   vkDestroyPipelineLayout(ctx.device, layout, NULL);
   vkDestroyDescriptorPool(ctx.device, pool, NULL);
   vkDestroyDescriptorSetLayout(ctx.device, set_layout, NULL);
   vkDestroySampler(ctx.device, sampler, NULL);
   image_destroy(&ctx, &tex);
   vkt_buffer_destroy(&ctx, &samples);
   vkt_buffer_destroy(&ctx, &staging);
   vkt_context_finish(&ctx);
}

/* ---- xfb: VK_EXT_transform_feedback + VK_EXT_multi_draw ------------------ */

#define XFB_BYTES 512
#define XFB_STRIDE 16
#define XFB_COUNTER_OFFSET 12

/* vkCmdDrawMultiEXT's array, with a stride of 20 bytes: the padding holds
 * draws that must not be made. */
struct padded_draw {
   VkMultiDrawInfoEXT info;
   uint32_t poison[3];
};

static const struct padded_draw xfb_draws[] = {
   { { 0, 3 }, { 1000, 1, 2000 } },
   { { 10, 2 }, { 3000, 1, 4000 } },
   { { 100, 4 }, { 5000, 1, 6000 } },
   /* the second call's */
   { { 200, 3 }, { 7000, 1, 8000 } },
};

/*
 * The vkCmdDrawMultiEXT calls, captured one after the other. Several draws
 * go with one instance only: lavapipe (Mesa 22.3) runs a multi-draw
 * instance by instance, each instance through every draw, so with more the
 * capture order would depend on the driver. Instances get a call of one
 * draw.
 */
static const struct xfb_call {
   uint32_t first_draw, n_draws;
   uint32_t instances, first_instance;
} xfb_calls[] = {
   { 0, 3, 1, 5 },
   { 3, 1, 2, 7 },
};

/* Must match ext_xfb.vert. */
static void
xfb_expected(uint32_t vertex, uint32_t instance, float v[4])
{
   v[0] = (float)vertex;
   v[1] = (float)instance;
   v[2] = (float)(vertex * 7 + instance * 1000);
   v[3] = 42.0f;
}

static void
test_xfb(const char *device_name)
{
   static const char *const exts[] = {
      VK_EXT_TRANSFORM_FEEDBACK_EXTENSION_NAME,
      VK_EXT_MULTI_DRAW_EXTENSION_NAME,
   };
   VkPhysicalDeviceMultiDrawFeaturesEXT multi_draw_features = {
      .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MULTI_DRAW_FEATURES_EXT,
      .multiDraw = VK_TRUE,
   };
   VkPhysicalDeviceTransformFeedbackFeaturesEXT xfb_features = {
      .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_TRANSFORM_FEEDBACK_FEATURES_EXT,
      .pNext = &multi_draw_features,
      .transformFeedback = VK_TRUE,
   };
   struct vkt_context ctx;

   context_init(&ctx, PROG ": xfb", device_name,
                VKT_FEATURE_DYNAMIC_RENDERING, exts,
                VKT_ARRAY_SIZE(exts), &xfb_features);
   PFN_vkCmdBindTransformFeedbackBuffersEXT bind_xfb =
      LOAD(&ctx, vkCmdBindTransformFeedbackBuffersEXT);
   PFN_vkCmdBeginTransformFeedbackEXT begin_xfb =
      LOAD(&ctx, vkCmdBeginTransformFeedbackEXT);
   PFN_vkCmdEndTransformFeedbackEXT end_xfb =
      LOAD(&ctx, vkCmdEndTransformFeedbackEXT);
   PFN_vkCmdDrawMultiEXT draw_multi = LOAD(&ctx, vkCmdDrawMultiEXT);

   uint32_t n_vertices = 0;
   for (unsigned c = 0; c < VKT_ARRAY_SIZE(xfb_calls); c++)
      for (unsigned d = 0; d < xfb_calls[c].n_draws; d++)
         n_vertices +=
            xfb_draws[xfb_calls[c].first_draw + d].info.vertexCount *
            xfb_calls[c].instances;
   const uint32_t captured_bytes = n_vertices * XFB_STRIDE;
   if (captured_bytes > XFB_BYTES)
      vkt_fail("xfb: %u bytes to capture do not fit %u", captured_bytes,
               XFB_BYTES);

   struct vkt_buffer xfb, counter;
   vkt_buffer_create(&ctx, XFB_BYTES,
                     VK_BUFFER_USAGE_TRANSFORM_FEEDBACK_BUFFER_BIT_EXT, true,
                     &xfb);
   memset(xfb.map, 0xa5, xfb.size);
   vkt_buffer_flush(&ctx, &xfb);
   vkt_buffer_create(&ctx, 64,
                     VK_BUFFER_USAGE_TRANSFORM_FEEDBACK_COUNTER_BUFFER_BIT_EXT,
                     true, &counter);
   memset(counter.map, 0xa5, counter.size);
   vkt_buffer_flush(&ctx, &counter);

   /* A vertex shader only: rasterizer discard, no attachments. The
    * viewport, multisample and blend states are ignored and left out. */
   VkPipelineLayout layout = pipeline_layout(&ctx, NULL, NULL);
   VkShaderModule vs =
      vkt_shader_module(&ctx, ext_xfb_vert_spv, sizeof(ext_xfb_vert_spv));
   const VkPipelineShaderStageCreateInfo stage = {
      .sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO,
      .stage = VK_SHADER_STAGE_VERTEX_BIT,
      .module = vs,
      .pName = "main",
   };
   const VkPipelineVertexInputStateCreateInfo vertex_input = {
      .sType = VK_STRUCTURE_TYPE_PIPELINE_VERTEX_INPUT_STATE_CREATE_INFO,
   };
   const VkPipelineInputAssemblyStateCreateInfo input_assembly = {
      .sType = VK_STRUCTURE_TYPE_PIPELINE_INPUT_ASSEMBLY_STATE_CREATE_INFO,
      .topology = VK_PRIMITIVE_TOPOLOGY_POINT_LIST,
   };
   const VkPipelineRasterizationStateCreateInfo raster = {
      .sType = VK_STRUCTURE_TYPE_PIPELINE_RASTERIZATION_STATE_CREATE_INFO,
      .rasterizerDiscardEnable = VK_TRUE,
      .polygonMode = VK_POLYGON_MODE_FILL,
      .cullMode = VK_CULL_MODE_NONE,
      .frontFace = VK_FRONT_FACE_COUNTER_CLOCKWISE,
      .lineWidth = 1.0f,
   };
   const VkPipelineRenderingCreateInfo rendering_info = {
      .sType = VK_STRUCTURE_TYPE_PIPELINE_RENDERING_CREATE_INFO,
   };
   const VkGraphicsPipelineCreateInfo pipeline_info = {
      .sType = VK_STRUCTURE_TYPE_GRAPHICS_PIPELINE_CREATE_INFO,
      .pNext = &rendering_info,
      .stageCount = 1,
      .pStages = &stage,
      .pVertexInputState = &vertex_input,
      .pInputAssemblyState = &input_assembly,
      .pRasterizationState = &raster,
      .layout = layout,
   };
   VkPipeline pipeline;
   VKT_CHECK(vkCreateGraphicsPipelines(ctx.device, VK_NULL_HANDLE, 1,
                                       &pipeline_info, NULL, &pipeline));
   vkDestroyShaderModule(ctx.device, vs, NULL);

   VkCommandBuffer cmd = vkt_cmd_begin(&ctx);
   const VkRenderingInfo rendering = {
      .sType = VK_STRUCTURE_TYPE_RENDERING_INFO,
      .renderArea = { { 0, 0 }, { 16, 16 } },
      .layerCount = 1,
   };
   const VkDeviceSize xfb_offset = 0, xfb_size = XFB_BYTES;
   const VkDeviceSize counter_offset = XFB_COUNTER_OFFSET;
   vkCmdBeginRendering(cmd, &rendering);
   vkCmdBindPipeline(cmd, VK_PIPELINE_BIND_POINT_GRAPHICS, pipeline);
   bind_xfb(cmd, 0, 1, &xfb.buffer, &xfb_offset, &xfb_size);
   begin_xfb(cmd, 0, 0, NULL, NULL);
   for (unsigned c = 0; c < VKT_ARRAY_SIZE(xfb_calls); c++)
      draw_multi(cmd, xfb_calls[c].n_draws,
                 &xfb_draws[xfb_calls[c].first_draw].info,
                 xfb_calls[c].instances, xfb_calls[c].first_instance,
                 sizeof(struct padded_draw));
   end_xfb(cmd, 0, 1, &counter.buffer, &counter_offset);
   vkCmdEndRendering(cmd);
   barrier_to_host(cmd, VK_PIPELINE_STAGE_TRANSFORM_FEEDBACK_BIT_EXT,
                   VK_ACCESS_TRANSFORM_FEEDBACK_WRITE_BIT_EXT |
                      VK_ACCESS_TRANSFORM_FEEDBACK_COUNTER_WRITE_BIT_EXT);
   vkt_cmd_submit_wait(&ctx, cmd);
   vkt_buffer_invalidate(&ctx, &xfb);
   vkt_buffer_invalidate(&ctx, &counter);

   /* Call by call, draw by draw, instance by instance, vertex by vertex. */
   const float *got = xfb.map;
   uint32_t n = 0;
   for (unsigned c = 0; c < VKT_ARRAY_SIZE(xfb_calls); c++) {
      const struct xfb_call *call = &xfb_calls[c];

      for (unsigned d = call->first_draw;
           d < call->first_draw + call->n_draws; d++) {
         const VkMultiDrawInfoEXT *info = &xfb_draws[d].info;

         for (uint32_t inst = call->first_instance;
              inst < call->first_instance + call->instances; inst++) {
            for (uint32_t v = info->firstVertex;
                 v < info->firstVertex + info->vertexCount; v++, n++) {
               const float *g = got + n * (XFB_STRIDE / sizeof(float));
               float want[4];

               xfb_expected(v, inst, want);
               if (memcmp(g, want, sizeof(want)))
                  vkt_fail("captured vertex %u (call %u, draw %u, instance "
                           "%u, vertex %u): got (%g, %g, %g, %g), expected "
                           "(%g, %g, %g, %g)", n, c, d, inst, v, g[0], g[1],
                           g[2], g[3], want[0], want[1], want[2], want[3]);
            }
         }
      }
   }
   const uint8_t *rest = (const uint8_t *)xfb.map + captured_bytes;
   for (uint32_t i = 0; i < XFB_BYTES - captured_bytes; i++)
      if (rest[i] != 0xa5)
         vkt_fail("byte %u of the transform feedback buffer, after the %u "
                  "captured bytes, was written (0x%02x)",
                  captured_bytes + i, captured_bytes, rest[i]);
   uint32_t count;
   memcpy(&count, (const uint8_t *)counter.map + XFB_COUNTER_OFFSET,
          sizeof(count));
   if (count != captured_bytes)
      vkt_fail("counter buffer holds %u (0x%08x) bytes, expected %u", count,
               count, captured_bytes);

   printf(PROG ": xfb: OK: vkCmdDrawMultiEXT of %u draws (stride %zu, "
          "first instance %u), then of %u draw x %u instances, captured the "
          "%u expected vertices (%u bytes) and nothing more; counter buffer "
          "says %u bytes\n",
          xfb_calls[0].n_draws, sizeof(struct padded_draw),
          xfb_calls[0].first_instance, xfb_calls[1].n_draws,
          xfb_calls[1].instances, n_vertices, captured_bytes, count);

   vkDestroyPipeline(ctx.device, pipeline, NULL);
   vkDestroyPipelineLayout(ctx.device, layout, NULL);
   vkt_buffer_destroy(&ctx, &counter);
   vkt_buffer_destroy(&ctx, &xfb);
   vkt_context_finish(&ctx);
}

/* ---- dynamic: VK_EXT_extended_dynamic_state3 colour write mask ---------- */

#define DYN_SIZE 32

struct dyn_vertices {
   float pos[6][4];
};

static void
dyn_draw(VkCommandBuffer cmd, VkPipelineLayout layout,
         const float (*verts)[2], uint32_t count)
{
   struct dyn_vertices v;

   memset(&v, 0, sizeof(v));
   for (uint32_t i = 0; i < count; i++) {
      v.pos[i][0] = verts[i][0];
      v.pos[i][1] = verts[i][1];
   }
   vkCmdPushConstants(cmd, layout, VK_SHADER_STAGE_VERTEX_BIT, 0, sizeof(v),
                      &v);
   vkCmdDraw(cmd, count, 1, 0, 0);
}

static void
test_dynamic(const char *device_name)
{
   static const char *const exts[] = {
      VK_EXT_EXTENDED_DYNAMIC_STATE_3_EXTENSION_NAME,
   };
   VkPhysicalDeviceExtendedDynamicState3FeaturesEXT eds3_features = {
      .sType =
         VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_EXTENDED_DYNAMIC_STATE_3_FEATURES_EXT,
      .extendedDynamicState3ColorWriteMask = VK_TRUE,
   };
   struct vkt_context ctx;

   context_init(&ctx, PROG ": dynamic", device_name,
                VKT_FEATURE_DYNAMIC_RENDERING, exts,
                VKT_ARRAY_SIZE(exts), &eds3_features);
   PFN_vkCmdSetColorWriteMaskEXT set_write_mask =
      LOAD(&ctx, vkCmdSetColorWriteMaskEXT);

   struct image target;
   image_create(&ctx, DYN_SIZE, DYN_SIZE,
                VK_IMAGE_USAGE_COLOR_ATTACHMENT_BIT |
                   VK_IMAGE_USAGE_TRANSFER_SRC_BIT,
                &target);
   struct vkt_buffer readback;
   vkt_buffer_create(&ctx, DYN_SIZE * DYN_SIZE * 4,
                     VK_BUFFER_USAGE_TRANSFER_DST_BIT, true, &readback);
   memset(readback.map, 0xa5, readback.size);
   vkt_buffer_flush(&ctx, &readback);

   const VkPushConstantRange push_range = {
      VK_SHADER_STAGE_VERTEX_BIT, 0, sizeof(struct dyn_vertices)
   };
   VkPipelineLayout layout = pipeline_layout(&ctx, NULL, &push_range);
   VkShaderModule vs =
      vkt_shader_module(&ctx, ext_dyn_vert_spv, sizeof(ext_dyn_vert_spv));
   VkShaderModule fs =
      vkt_shader_module(&ctx, ext_white_frag_spv, sizeof(ext_white_frag_spv));
   const VkPipelineShaderStageCreateInfo stages[] = {
      vkt_shader_stage(VK_SHADER_STAGE_VERTEX_BIT, vs),
      vkt_shader_stage(VK_SHADER_STAGE_FRAGMENT_BIT, fs),
   };
   /* Topology, cull mode and write mask are dynamic: what the pipeline
    * says of them (a list, no culling, all channels) must not count. */
   const VkDynamicState dynamic_states[] = {
      VK_DYNAMIC_STATE_COLOR_WRITE_MASK_EXT,
      VK_DYNAMIC_STATE_CULL_MODE,
      VK_DYNAMIC_STATE_PRIMITIVE_TOPOLOGY,
   };
   const struct vkt_graphics g = {
      .stages = stages,
      .n_stages = VKT_ARRAY_SIZE(stages),
      .layout = layout,
      .size = DYN_SIZE,
      .dynamic_states = dynamic_states,
      .n_dynamic_states = VKT_ARRAY_SIZE(dynamic_states),
   };
   VkPipeline pipeline = vkt_graphics_pipeline(&ctx, &g);
   vkDestroyShaderModule(ctx.device, vs, NULL);
   vkDestroyShaderModule(ctx.device, fs, NULL);

   /* Clip space, y down. */
   static const float full_screen[3][2] = {
      { -1.0f, -1.0f }, { 3.0f, -1.0f }, { -1.0f, 3.0f },
   };
   static const float left_half_list[6][2] = {
      { -1.0f, -1.0f }, { 0.0f, -1.0f }, { -1.0f, 1.0f },
      { -1.0f, 1.0f }, { 0.0f, -1.0f }, { 0.0f, 1.0f },
   };
   /* As a list, only its first triangle would be drawn: half of it. */
   static const float right_half_strip[4][2] = {
      { 0.0f, -1.0f }, { 1.0f, -1.0f }, { 0.0f, 1.0f }, { 1.0f, 1.0f },
   };
   const VkColorComponentFlags mask_ra =
      VK_COLOR_COMPONENT_R_BIT | VK_COLOR_COMPONENT_A_BIT;
   const VkColorComponentFlags mask_all =
      VK_COLOR_COMPONENT_R_BIT | VK_COLOR_COMPONENT_G_BIT |
      VK_COLOR_COMPONENT_B_BIT | VK_COLOR_COMPONENT_A_BIT;
   const VkColorComponentFlags mask_g = VK_COLOR_COMPONENT_G_BIT;

   VkCommandBuffer cmd = vkt_cmd_begin(&ctx);
   image_barrier(cmd, target.image, VK_IMAGE_LAYOUT_UNDEFINED,
                 VK_IMAGE_LAYOUT_COLOR_ATTACHMENT_OPTIMAL,
                 VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT, 0,
                 VK_PIPELINE_STAGE_COLOR_ATTACHMENT_OUTPUT_BIT,
                 VK_ACCESS_COLOR_ATTACHMENT_WRITE_BIT);
   const VkRenderingAttachmentInfo color_attachment = {
      .sType = VK_STRUCTURE_TYPE_RENDERING_ATTACHMENT_INFO,
      .imageView = target.view,
      .imageLayout = VK_IMAGE_LAYOUT_COLOR_ATTACHMENT_OPTIMAL,
      .loadOp = VK_ATTACHMENT_LOAD_OP_CLEAR,
      .storeOp = VK_ATTACHMENT_STORE_OP_STORE,
      .clearValue = { .color = { .float32 = { 0.0f, 0.0f, 0.0f, 1.0f } } },
   };
   const VkRenderingInfo rendering = {
      .sType = VK_STRUCTURE_TYPE_RENDERING_INFO,
      .renderArea = { { 0, 0 }, { DYN_SIZE, DYN_SIZE } },
      .layerCount = 1,
      .colorAttachmentCount = 1,
      .pColorAttachments = &color_attachment,
   };
   vkCmdBeginRendering(cmd, &rendering);
   vkCmdBindPipeline(cmd, VK_PIPELINE_BIND_POINT_GRAPHICS, pipeline);

   /* 1: everything, red and alpha only -> (255, 0, 0, 255). */
   vkCmdSetPrimitiveTopology(cmd, VK_PRIMITIVE_TOPOLOGY_TRIANGLE_LIST);
   vkCmdSetCullMode(cmd, VK_CULL_MODE_NONE);
   set_write_mask(cmd, 0, 1, &mask_ra);
   dyn_draw(cmd, layout, full_screen, 3);

   /* 2: the left half, all channels, but culled: nothing changes (were it
    * drawn, the left half would turn white). */
   vkCmdSetCullMode(cmd, VK_CULL_MODE_FRONT_AND_BACK);
   set_write_mask(cmd, 0, 1, &mask_all);
   dyn_draw(cmd, layout, left_half_list, 6);

   /* 3: the right half as a strip, green only -> (255, 255, 0, 255). */
   vkCmdSetPrimitiveTopology(cmd, VK_PRIMITIVE_TOPOLOGY_TRIANGLE_STRIP);
   vkCmdSetCullMode(cmd, VK_CULL_MODE_NONE);
   set_write_mask(cmd, 0, 1, &mask_g);
   dyn_draw(cmd, layout, right_half_strip, 4);

   vkCmdEndRendering(cmd);
   image_barrier(cmd, target.image, VK_IMAGE_LAYOUT_COLOR_ATTACHMENT_OPTIMAL,
                 VK_IMAGE_LAYOUT_TRANSFER_SRC_OPTIMAL,
                 VK_PIPELINE_STAGE_COLOR_ATTACHMENT_OUTPUT_BIT,
                 VK_ACCESS_COLOR_ATTACHMENT_WRITE_BIT,
                 VK_PIPELINE_STAGE_TRANSFER_BIT, VK_ACCESS_TRANSFER_READ_BIT);
   const VkBufferImageCopy region = {
      .imageSubresource = { VK_IMAGE_ASPECT_COLOR_BIT, 0, 0, 1 },
      .imageExtent = { DYN_SIZE, DYN_SIZE, 1 },
   };
   vkCmdCopyImageToBuffer(cmd, target.image,
                          VK_IMAGE_LAYOUT_TRANSFER_SRC_OPTIMAL,
                          readback.buffer, 1, &region);
   barrier_to_host(cmd, VK_PIPELINE_STAGE_TRANSFER_BIT,
                   VK_ACCESS_TRANSFER_WRITE_BIT);
   vkt_cmd_submit_wait(&ctx, cmd);
   vkt_buffer_invalidate(&ctx, &readback);

   static const uint8_t want_left[4] = { 255, 0, 0, 255 };
   static const uint8_t want_right[4] = { 255, 255, 0, 255 };
   const uint8_t *px = readback.map;
   for (uint32_t y = 0; y < DYN_SIZE; y++) {
      for (uint32_t x = 0; x < DYN_SIZE; x++) {
         const uint8_t *got = px + (y * DYN_SIZE + x) * 4;
         const uint8_t *want = x < DYN_SIZE / 2 ? want_left : want_right;

         if (memcmp(got, want, 4))
            vkt_fail("pixel (%u,%u) in the %s half is (%u, %u, %u, %u), "
                     "expected (%u, %u, %u, %u)", x, y,
                     x < DYN_SIZE / 2 ? "left" : "right", got[0], got[1],
                     got[2], got[3], want[0], want[1], want[2], want[3]);
      }
   }

   printf(PROG ": dynamic: OK: write mask R|A, culled left half "
          "(FRONT_AND_BACK), then write mask G on a right-half strip: "
          "%u left pixels (255, 0, 0, 255), %u right pixels "
          "(255, 255, 0, 255)\n",
          DYN_SIZE * DYN_SIZE / 2, DYN_SIZE * DYN_SIZE / 2);

   vkDestroyPipeline(ctx.device, pipeline, NULL);
   vkDestroyPipelineLayout(ctx.device, layout, NULL);
   vkt_buffer_destroy(&ctx, &readback);
   image_destroy(&ctx, &target);
   vkt_context_finish(&ctx);
}

/* ---- address: buffer device addresses ----------------------------------- */

#define ADDRESS_COUNT 1000

/* The table the shader reads first: where to read and write. */
struct address_table {
   VkDeviceAddress src, dst;
   uint32_t n;
   uint32_t pad;
};

/* Memory for a buffer whose address a shader may use, of a type type_bits
 * allows with the required properties (preferred ones if it can), bound
 * to it; `what` names the buffer when there is none. */
static void
bind_address_memory(const struct vkt_context *ctx, struct vkt_buffer *buf, uint32_t type_bits,
                    VkMemoryPropertyFlags required, VkMemoryPropertyFlags preferred,
                    const char *what)
{
   VkMemoryRequirements req;
   vkGetBufferMemoryRequirements(ctx->device, buf->buffer, &req);
   const VkMemoryAllocateFlagsInfo flags = {
      .sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_FLAGS_INFO,
      .flags = VK_MEMORY_ALLOCATE_DEVICE_ADDRESS_BIT,
   };
   const VkMemoryAllocateInfo alloc = {
      .sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO,
      .pNext = &flags,
      .allocationSize = req.size,
      .memoryTypeIndex = vkt_memory_type(ctx, req.memoryTypeBits & type_bits, required,
                                         preferred),
   };
   if (alloc.memoryTypeIndex == UINT32_MAX)
      vkt_fail("no memory type for %s", what);
   VKT_CHECK(vkAllocateMemory(ctx->device, &alloc, NULL, &buf->memory));
   VKT_CHECK(vkBindBufferMemory(ctx->device, buf->buffer, buf->memory, 0));
}

/* A host-visible buffer whose address a shader may use. */
static void
address_buffer_usage(const struct vkt_context *ctx, VkDeviceSize size, VkBufferUsageFlags usage,
                     struct vkt_buffer *buf)
{
   const VkBufferCreateInfo info = {
      .sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO,
      .size = size,
      .usage = VK_BUFFER_USAGE_SHADER_DEVICE_ADDRESS_BIT | usage,
   };
   memset(buf, 0, sizeof(*buf));
   buf->size = size;
   VKT_CHECK(vkCreateBuffer(ctx->device, &info, NULL, &buf->buffer));
   bind_address_memory(ctx, buf, ~0u,
                       VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT,
                       0, "a host-visible coherent buffer with an address");
   VKT_CHECK(vkMapMemory(ctx->device, buf->memory, 0, VK_WHOLE_SIZE, 0, &buf->map));
   buf->coherent = true;
}

static void
address_buffer(const struct vkt_context *ctx, VkDeviceSize size, struct vkt_buffer *buf)
{
   address_buffer_usage(ctx, size, VK_BUFFER_USAGE_STORAGE_BUFFER_BIT, buf);
}

static VkDeviceAddress
address_of(const struct vkt_context *ctx, const struct vkt_buffer *buf)
{
   const VkBufferDeviceAddressInfo info = {
      .sType = VK_STRUCTURE_TYPE_BUFFER_DEVICE_ADDRESS_INFO,
      .buffer = buf->buffer,
   };
   VkDeviceAddress address = vkGetBufferDeviceAddress(ctx->device, &info);
   if (!address)
      vkt_fail("vkGetBufferDeviceAddress returned 0");
   return address;
}

static void
test_address(const char *device_name)
{
   struct vkt_context ctx;

   context_init(&ctx, PROG ": address", device_name, VKT_FEATURE_BUFFER_DEVICE_ADDRESS, NULL,
                0, NULL);
   struct vkt_buffer src, dst, table;
   address_buffer(&ctx, ADDRESS_COUNT * 4, &src);
   address_buffer(&ctx, ADDRESS_COUNT * 4, &dst);
   address_buffer(&ctx, sizeof(struct address_table), &table);
   for (uint32_t i = 0; i < ADDRESS_COUNT; i++) {
      ((uint32_t *)src.map)[i] = i * 11u + 5u;
      ((uint32_t *)dst.map)[i] = 0xdeadbeefu;
   }
   /* the addresses the host gave, passed through unchanged */
   const struct address_table t = {
      .src = address_of(&ctx, &src),
      .dst = address_of(&ctx, &dst),
      .n = ADDRESS_COUNT,
   };
   memcpy(table.map, &t, sizeof(t));
   const VkDeviceAddress table_address = address_of(&ctx, &table);

   const VkPushConstantRange push_range = {
      VK_SHADER_STAGE_COMPUTE_BIT, 0, sizeof(VkDeviceAddress)
   };
   VkPipelineLayout layout = pipeline_layout(&ctx, NULL, &push_range);
   VkPipeline pipeline = compute_pipeline(&ctx, ext_address_comp_spv,
                                          sizeof(ext_address_comp_spv), layout);
   VkCommandBuffer cmd = vkt_cmd_begin(&ctx);
   vkCmdBindPipeline(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, pipeline);
   vkCmdPushConstants(cmd, layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, sizeof(table_address),
                      &table_address);
   vkCmdDispatch(cmd, (ADDRESS_COUNT + 63) / 64, 1, 1);
   barrier_to_host(cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_ACCESS_SHADER_WRITE_BIT);
   vkt_cmd_submit_wait(&ctx, cmd);

   for (uint32_t i = 0; i < ADDRESS_COUNT; i++) {
      uint32_t want = (i * 11u + 5u) * 3u + 7u;
      uint32_t got = ((const uint32_t *)dst.map)[i];
      if (got != want)
         vkt_fail("element %u read and written through device addresses is 0x%08x, "
                  "expected 0x%08x", i, got, want);
   }
   printf(PROG ": address: OK: %u uints read and written by a shader through the device "
          "addresses of three buffers (a table of addresses in one of them)\n", ADDRESS_COUNT);

   vkDestroyPipeline(ctx.device, pipeline, NULL);
   vkDestroyPipelineLayout(ctx.device, layout, NULL);
   vkt_buffer_destroy(&ctx, &table);
   vkt_buffer_destroy(&ctx, &dst);
   vkt_buffer_destroy(&ctx, &src);
   vkt_context_finish(&ctx);
}

/* ---- VK_EXT_descriptor_buffer -------------------------------------------- */

#ifdef VK_EXT_descriptor_buffer
/* What the descriptor buffer sub-tests share: the extension's commands and
 * the device's descriptor sizes and alignments. */
struct db {
   PFN_vkGetDescriptorSetLayoutSizeEXT layout_size;
   PFN_vkGetDescriptorSetLayoutBindingOffsetEXT binding_offset;
   PFN_vkGetDescriptorEXT get_descriptor;
   PFN_vkCmdBindDescriptorBuffersEXT bind_buffers;
   PFN_vkCmdSetDescriptorBufferOffsetsEXT set_offsets;
   VkPhysicalDeviceDescriptorBufferPropertiesEXT props;
};

/* A device with descriptorBuffer and buffer device addresses (and the
 * features asked for), its commands and properties in db. */
static void
db_context_init(struct vkt_context *ctx, const char *prog, const char *device_name,
                uint32_t features, struct db *db)
{
   static const char *const exts[] = { VK_EXT_DESCRIPTOR_BUFFER_EXTENSION_NAME };
   VkPhysicalDeviceDescriptorBufferFeaturesEXT want = {
      .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_DESCRIPTOR_BUFFER_FEATURES_EXT,
      .descriptorBuffer = VK_TRUE,
   };
   context_init(ctx, prog, device_name, VKT_FEATURE_BUFFER_DEVICE_ADDRESS | features, exts,
                VKT_ARRAY_SIZE(exts), &want);
   db->layout_size = LOAD(ctx, vkGetDescriptorSetLayoutSizeEXT);
   db->binding_offset = LOAD(ctx, vkGetDescriptorSetLayoutBindingOffsetEXT);
   db->get_descriptor = LOAD(ctx, vkGetDescriptorEXT);
   db->bind_buffers = LOAD(ctx, vkCmdBindDescriptorBuffersEXT);
   db->set_offsets = LOAD(ctx, vkCmdSetDescriptorBufferOffsetsEXT);

   db->props = (VkPhysicalDeviceDescriptorBufferPropertiesEXT){
      .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_DESCRIPTOR_BUFFER_PROPERTIES_EXT,
   };
   VkPhysicalDeviceProperties2 props = {
      .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2,
      .pNext = &db->props,
   };
   vkGetPhysicalDeviceProperties2(ctx->physical_device, &props);
   if (!db->props.uniformBufferDescriptorSize || !db->props.storageBufferDescriptorSize)
      vkt_fail("descriptor sizes %zu (uniform) and %zu (storage)",
               db->props.uniformBufferDescriptorSize, db->props.storageBufferDescriptorSize);
}

/* A set layout for descriptor buffers of n bindings numbered 0 to n - 1:
 * its size in *size, binding b's offset in offsets[b]. */
static VkDescriptorSetLayout
db_set_layout(const struct vkt_context *ctx, const struct db *db,
              const VkDescriptorSetLayoutBinding *bindings, uint32_t n, VkDeviceSize *size,
              VkDeviceSize *offsets)
{
   const VkDescriptorSetLayoutCreateInfo info = {
      .sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO,
      .flags = VK_DESCRIPTOR_SET_LAYOUT_CREATE_DESCRIPTOR_BUFFER_BIT_EXT,
      .bindingCount = n,
      .pBindings = bindings,
   };
   VkDescriptorSetLayout set_layout;
   VKT_CHECK(vkCreateDescriptorSetLayout(ctx->device, &info, NULL, &set_layout));
   *size = 0;
   db->layout_size(ctx->device, set_layout, size);
   for (uint32_t b = 0; b < n; b++) {
      offsets[b] = 0;
      db->binding_offset(ctx->device, set_layout, b, &offsets[b]);
   }
   return set_layout;
}

/* Writes to dst, with vkGetDescriptorEXT, the descriptor of a uniform or
 * storage buffer: range bytes at address. */
static void
db_buffer_descriptor(const struct vkt_context *ctx, const struct db *db, VkDescriptorType type,
                     VkDeviceAddress address, VkDeviceSize range, void *dst)
{
   const VkDescriptorAddressInfoEXT address_info = {
      .sType = VK_STRUCTURE_TYPE_DESCRIPTOR_ADDRESS_INFO_EXT,
      .address = address,
      .range = range,
   };
   VkDescriptorGetInfoEXT info = {
      .sType = VK_STRUCTURE_TYPE_DESCRIPTOR_GET_INFO_EXT,
      .type = type,
   };
   size_t size;
   if (type == VK_DESCRIPTOR_TYPE_UNIFORM_BUFFER) {
      info.data.pUniformBuffer = &address_info;
      size = db->props.uniformBufferDescriptorSize;
   } else {
      info.data.pStorageBuffer = &address_info;
      size = db->props.storageBufferDescriptorSize;
   }
   db->get_descriptor(ctx->device, &info, size, dst);
}

/* Binds descriptors as the one resource descriptor buffer. */
static void
db_bind_buffer(const struct vkt_context *ctx, const struct db *db, VkCommandBuffer cmd,
               const struct vkt_buffer *descriptors)
{
   const VkDescriptorBufferBindingInfoEXT binding = {
      .sType = VK_STRUCTURE_TYPE_DESCRIPTOR_BUFFER_BINDING_INFO_EXT,
      .address = address_of(ctx, descriptors),
      .usage = VK_BUFFER_USAGE_RESOURCE_DESCRIPTOR_BUFFER_BIT_EXT,
   };
   db->bind_buffers(cmd, 1, &binding);
}

/* Set 0 of layout: at offset in the bound descriptor buffer. */
static void
db_set_offset(const struct db *db, VkCommandBuffer cmd, VkPipelineBindPoint bind_point,
              VkPipelineLayout layout, VkDeviceSize offset)
{
   const uint32_t index = 0;
   db->set_offsets(cmd, bind_point, layout, 0, 1, &index, &offset);
}

/* ext_push.comp again, its descriptors written by vkGetDescriptorEXT into
 * a buffer of the application's (memory the daemon's host driver reads
 * too) at the offsets the layout says, and bound by address. */
static void
test_descriptor_buffer(const char *device_name)
{
   struct vkt_context ctx;
   struct db db;
   db_context_init(&ctx, PROG ": descriptor-buffer", device_name, 0, &db);

   const VkDescriptorSetLayoutBinding bindings[] = {
      { 0, VK_DESCRIPTOR_TYPE_UNIFORM_BUFFER, 1, VK_SHADER_STAGE_COMPUTE_BIT, NULL },
      { 1, VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, 2, VK_SHADER_STAGE_COMPUTE_BIT, NULL },
   };
   VkDeviceSize size, offsets[2];
   VkDescriptorSetLayout set_layout = db_set_layout(&ctx, &db, bindings,
                                                    VKT_ARRAY_SIZE(bindings), &size, offsets);
   if (size < offsets[1] + 2 * db.props.storageBufferDescriptorSize)
      vkt_fail("layout size %llu, binding 1 at %llu, storage descriptors of %zu bytes",
               (unsigned long long)size, (unsigned long long)offsets[1],
               db.props.storageBufferDescriptorSize);

   VkPipelineLayout layout = pipeline_layout(&ctx, &set_layout, NULL);
   VkPipeline pipeline = compute_pipeline_flags(&ctx, ext_push_comp_spv,
                                                sizeof(ext_push_comp_spv), layout,
                                                VK_PIPELINE_CREATE_DESCRIPTOR_BUFFER_BIT_EXT);

   const uint32_t n = 256;
   const struct push_params params = { 7, 100 };
   struct vkt_buffer ubo, outs[2], descriptors;
   address_buffer_usage(&ctx, 256, VK_BUFFER_USAGE_UNIFORM_BUFFER_BIT, &ubo);
   memcpy(ubo.map, &params, sizeof(params));
   for (unsigned i = 0; i < 2; i++) {
      address_buffer(&ctx, n * 4, &outs[i]);
      memset(outs[i].map, 0xa5, n * 4);
   }
   address_buffer_usage(&ctx, size + db.props.descriptorBufferOffsetAlignment,
                        VK_BUFFER_USAGE_RESOURCE_DESCRIPTOR_BUFFER_BIT_EXT, &descriptors);
   memset(descriptors.map, 0, descriptors.size);

   /* the descriptors, written where the layout puts them */
   db_buffer_descriptor(&ctx, &db, VK_DESCRIPTOR_TYPE_UNIFORM_BUFFER, address_of(&ctx, &ubo),
                        sizeof(params), (uint8_t *)descriptors.map + offsets[0]);
   for (unsigned i = 0; i < 2; i++)
      db_buffer_descriptor(&ctx, &db, VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
                           address_of(&ctx, &outs[i]), n * 4,
                           (uint8_t *)descriptors.map + offsets[1] +
                              i * db.props.storageBufferDescriptorSize);

   VkCommandBuffer cmd = vkt_cmd_begin(&ctx);
   db_bind_buffer(&ctx, &db, cmd, &descriptors);
   db_set_offset(&db, cmd, VK_PIPELINE_BIND_POINT_COMPUTE, layout, 0);
   vkCmdBindPipeline(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, pipeline);
   vkCmdDispatch(cmd, n / 64, 1, 1);
   barrier_to_host(cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_ACCESS_SHADER_WRITE_BIT);
   vkt_cmd_submit_wait(&ctx, cmd);

   for (uint32_t i = 0; i < n; i++) {
      const uint32_t v = params.a * i + params.b;
      const uint32_t got0 = ((const uint32_t *)outs[0].map)[i];
      const uint32_t got1 = ((const uint32_t *)outs[1].map)[i];
      if (got0 != v || got1 != ~v)
         vkt_fail("element %u: 0x%08x and 0x%08x, expected 0x%08x and 0x%08x", i, got0, got1,
                  v, ~v);
   }
   printf(PROG ": descriptor-buffer: OK: %u uints and their complements written through "
          "a uniform and two storage descriptors of %zu and %zu bytes in a descriptor "
          "buffer (layout %llu bytes)\n",
          n, db.props.uniformBufferDescriptorSize, db.props.storageBufferDescriptorSize,
          (unsigned long long)size);

   vkDestroyPipeline(ctx.device, pipeline, NULL);
   vkDestroyPipelineLayout(ctx.device, layout, NULL);
   vkDestroyDescriptorSetLayout(ctx.device, set_layout, NULL);
   vkt_buffer_destroy(&ctx, &descriptors);
   vkt_buffer_destroy(&ctx, &outs[1]);
   vkt_buffer_destroy(&ctx, &outs[0]);
   vkt_buffer_destroy(&ctx, &ubo);
   vkt_context_finish(&ctx);
}

/* ---- descriptor-buffer-graphics ------------------------------------------ */

/* The two rectangles (pixels), their colours and where each one's six
 * vertices lie in the positions buffer (a storage buffer offset every
 * minStorageBufferOffsetAlignment divides). */
static const struct rect dbg_rects[2] = { { 2, 3, 18, 13 }, { 10, 17, 29, 30 } };
static const uint8_t dbg_colors[2][4] = { { 200, 40, 90, 255 }, { 30, 170, 220, 128 } };
#define DBG_POSITIONS_STRIDE 256

/* The rectangle as a triangle list in clip space: (x0,y0) (x1,y0) (x0,y1),
 * then (x1,y0) (x1,y1) (x0,y1). */
static void
rect_triangles(const struct rect *r, float (*v)[4])
{
   const uint32_t corners[6][2] = {
      { r->x0, r->y0 }, { r->x1, r->y0 }, { r->x0, r->y1 },
      { r->x1, r->y0 }, { r->x1, r->y1 }, { r->x0, r->y1 },
   };
   for (unsigned i = 0; i < 6; i++) {
      v[i][0] = corners[i][0] * (2.0f / GFX_SIZE) - 1.0f;
      v[i][1] = corners[i][1] * (2.0f / GFX_SIZE) - 1.0f;
      v[i][2] = 0.5f;
      v[i][3] = 1.0f;
   }
}

/*
 * A vertex shader reading its positions (gl_VertexIndex) from a storage
 * buffer and a fragment shader reading its colour from a uniform buffer,
 * both descriptors in a descriptor buffer: one rectangle with the set at
 * offset 0 of it, then another with the set at a second offset, whose
 * descriptors name another uniform buffer and another range of positions.
 */
static void
test_descriptor_buffer_graphics(const char *device_name)
{
   struct vkt_context ctx;
   struct db db;
   db_context_init(&ctx, PROG ": descriptor-buffer-graphics", device_name,
                   VKT_FEATURE_DYNAMIC_RENDERING, &db);

   const VkDescriptorSetLayoutBinding bindings[] = {
      { 0, VK_DESCRIPTOR_TYPE_UNIFORM_BUFFER, 1, VK_SHADER_STAGE_FRAGMENT_BIT, NULL },
      { 1, VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, 1, VK_SHADER_STAGE_VERTEX_BIT, NULL },
   };
   VkDeviceSize size, offsets[2];
   VkDescriptorSetLayout set_layout = db_set_layout(&ctx, &db, bindings,
                                                    VKT_ARRAY_SIZE(bindings), &size, offsets);
   VkPipelineLayout layout = pipeline_layout(&ctx, &set_layout, NULL);
   VkShaderModule vs = vkt_shader_module(&ctx, ext_dbuf_vert_spv, sizeof(ext_dbuf_vert_spv));
   VkShaderModule fs = vkt_shader_module(&ctx, ext_dbuf_frag_spv, sizeof(ext_dbuf_frag_spv));
   const VkPipelineShaderStageCreateInfo stages[] = {
      vkt_shader_stage(VK_SHADER_STAGE_VERTEX_BIT, vs),
      vkt_shader_stage(VK_SHADER_STAGE_FRAGMENT_BIT, fs),
   };
   VkPipeline pipeline = gfx_pipeline(&ctx, stages, VKT_ARRAY_SIZE(stages), layout,
                                      VK_PIPELINE_CREATE_DESCRIPTOR_BUFFER_BIT_EXT);
   vkDestroyShaderModule(ctx.device, vs, NULL);
   vkDestroyShaderModule(ctx.device, fs, NULL);

   /* the set twice, set_stride apart: set offsets must be aligned */
   const VkDeviceSize align = db.props.descriptorBufferOffsetAlignment
                                 ? db.props.descriptorBufferOffsetAlignment : 1;
   const VkDeviceSize set_stride = (size + align - 1) / align * align;
   struct vkt_buffer positions, ubos[2], descriptors;
   address_buffer(&ctx, 2 * DBG_POSITIONS_STRIDE, &positions);
   memset(positions.map, 0, positions.size);
   address_buffer_usage(&ctx, 2 * set_stride, VK_BUFFER_USAGE_RESOURCE_DESCRIPTOR_BUFFER_BIT_EXT,
                        &descriptors);
   memset(descriptors.map, 0, descriptors.size);
   for (unsigned i = 0; i < 2; i++) {
      float color[4];
      for (int c = 0; c < 4; c++)
         color[c] = dbg_colors[i][c] / 255.0f;
      address_buffer_usage(&ctx, 256, VK_BUFFER_USAGE_UNIFORM_BUFFER_BIT, &ubos[i]);
      memset(ubos[i].map, 0, ubos[i].size);
      memcpy(ubos[i].map, color, sizeof(color));
      rect_triangles(&dbg_rects[i],
                     (float (*)[4])((uint8_t *)positions.map + i * DBG_POSITIONS_STRIDE));

      uint8_t *set = (uint8_t *)descriptors.map + i * set_stride;
      db_buffer_descriptor(&ctx, &db, VK_DESCRIPTOR_TYPE_UNIFORM_BUFFER,
                           address_of(&ctx, &ubos[i]), sizeof(color), set + offsets[0]);
      db_buffer_descriptor(&ctx, &db, VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
                           address_of(&ctx, &positions) + i * DBG_POSITIONS_STRIDE,
                           6 * 4 * sizeof(float), set + offsets[1]);
   }

   struct image target;
   image_create(&ctx, GFX_SIZE, GFX_SIZE,
                VK_IMAGE_USAGE_COLOR_ATTACHMENT_BIT | VK_IMAGE_USAGE_TRANSFER_SRC_BIT, &target);
   struct vkt_buffer readback;
   vkt_buffer_create(&ctx, GFX_BYTES, VK_BUFFER_USAGE_TRANSFER_DST_BIT, true, &readback);

   VkCommandBuffer cmd = vkt_cmd_begin(&ctx);
   gfx_begin(cmd, &target, false);
   db_bind_buffer(&ctx, &db, cmd, &descriptors);
   vkCmdBindPipeline(cmd, VK_PIPELINE_BIND_POINT_GRAPHICS, pipeline);
   db_set_offset(&db, cmd, VK_PIPELINE_BIND_POINT_GRAPHICS, layout, 0);
   vkCmdDraw(cmd, 6, 1, 0, 0);
   db_set_offset(&db, cmd, VK_PIPELINE_BIND_POINT_GRAPHICS, layout, set_stride);
   vkCmdDraw(cmd, 6, 1, 0, 0);
   gfx_end_readback(cmd, &target, &readback, 0);
   barrier_to_host(cmd, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_ACCESS_TRANSFER_WRITE_BIT);
   vkt_cmd_submit_wait(&ctx, cmd);
   vkt_buffer_invalidate(&ctx, &readback);

   uint8_t want[GFX_BYTES];
   unsigned counts[3] = { 0 };
   for (uint32_t y = 0; y < GFX_SIZE; y++)
      for (uint32_t x = 0; x < GFX_SIZE; x++) {
         unsigned which = 2;
         for (unsigned i = 0; i < 2; i++)
            if (rect_contains(&dbg_rects[i], x, y))
               which = i;
         memcpy(want + (y * GFX_SIZE + x) * 4, which < 2 ? dbg_colors[which] : gfx_clear, 4);
         counts[which]++;
      }
   gfx_check(readback.map, want, "the two rectangles");

   printf(PROG ": descriptor-buffer-graphics: OK: a vertex shader's positions (storage "
          "descriptor) and a fragment shader's colour (uniform descriptor) from a descriptor "
          "buffer, the set at offset 0 then %llu (layout %llu bytes): %u pixels "
          "(%u, %u, %u, %u), %u pixels (%u, %u, %u, %u), %u pixels the clear colour\n",
          (unsigned long long)set_stride, (unsigned long long)size, counts[0],
          dbg_colors[0][0], dbg_colors[0][1], dbg_colors[0][2], dbg_colors[0][3], counts[1],
          dbg_colors[1][0], dbg_colors[1][1], dbg_colors[1][2], dbg_colors[1][3], counts[2]);

   vkDestroyPipeline(ctx.device, pipeline, NULL);
   vkDestroyPipelineLayout(ctx.device, layout, NULL);
   vkDestroyDescriptorSetLayout(ctx.device, set_layout, NULL);
   vkt_buffer_destroy(&ctx, &readback);
   image_destroy(&ctx, &target);
   vkt_buffer_destroy(&ctx, &descriptors);
   vkt_buffer_destroy(&ctx, &ubos[1]);
   vkt_buffer_destroy(&ctx, &ubos[0]);
   vkt_buffer_destroy(&ctx, &positions);
   vkt_context_finish(&ctx);
}
#endif

/* ---- VK_EXT_device_generated_commands ----------------------------------- */

#ifdef VK_EXT_device_generated_commands
/* One sequence in the application's indirect buffer: a push constant
 * token (where to write, what) and a dispatch token. */
struct dgc_sequence {
   uint32_t base, value;
   VkDispatchIndirectCommand dispatch;
};

/* Three sequences of push constants and dispatches that the device
 * generates from a buffer, executed with vkCmdExecuteGeneratedCommandsEXT;
 * each writes its own range, and what lies between stays untouched. */
static void
test_dgc(const char *device_name)
{
   static const char *const exts[] = { VK_EXT_DEVICE_GENERATED_COMMANDS_EXTENSION_NAME,
                                       VK_KHR_MAINTENANCE_5_EXTENSION_NAME,
                                       VK_KHR_PUSH_DESCRIPTOR_EXTENSION_NAME };
   VkPhysicalDeviceMaintenance5FeaturesKHR m5 = {
      .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MAINTENANCE_5_FEATURES_KHR,
      .maintenance5 = VK_TRUE,
   };
   VkPhysicalDeviceDeviceGeneratedCommandsFeaturesEXT want = {
      .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_DEVICE_GENERATED_COMMANDS_FEATURES_EXT,
      .pNext = &m5,
      .deviceGeneratedCommands = VK_TRUE,
   };
   struct vkt_context ctx;
   context_init(&ctx, PROG ": dgc", device_name, VKT_FEATURE_BUFFER_DEVICE_ADDRESS, exts,
                VKT_ARRAY_SIZE(exts), &want);
   PFN_vkCreateIndirectCommandsLayoutEXT create_layout =
      LOAD(&ctx, vkCreateIndirectCommandsLayoutEXT);
   PFN_vkDestroyIndirectCommandsLayoutEXT destroy_layout =
      LOAD(&ctx, vkDestroyIndirectCommandsLayoutEXT);
   PFN_vkGetGeneratedCommandsMemoryRequirementsEXT requirements =
      LOAD(&ctx, vkGetGeneratedCommandsMemoryRequirementsEXT);
   PFN_vkCmdExecuteGeneratedCommandsEXT execute = LOAD(&ctx, vkCmdExecuteGeneratedCommandsEXT);

   const VkDescriptorSetLayoutBinding binding = {
      0, VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, 1, VK_SHADER_STAGE_COMPUTE_BIT, NULL,
   };
   const VkDescriptorSetLayoutCreateInfo set_layout_info = {
      .sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO,
      .flags = VK_DESCRIPTOR_SET_LAYOUT_CREATE_PUSH_DESCRIPTOR_BIT_KHR,
      .bindingCount = 1,
      .pBindings = &binding,
   };
   VkDescriptorSetLayout set_layout;
   VKT_CHECK(vkCreateDescriptorSetLayout(ctx.device, &set_layout_info, NULL, &set_layout));
   const VkPushConstantRange range = { VK_SHADER_STAGE_COMPUTE_BIT, 0, 8 };
   VkPipelineLayout layout = pipeline_layout(&ctx, &set_layout, &range);
   VkPipeline pipeline = compute_pipeline(&ctx, ext_dgc_comp_spv, sizeof(ext_dgc_comp_spv),
                                          layout);

   /* the layout of a sequence: the push constants, then the dispatch */
   const VkIndirectCommandsPushConstantTokenEXT push_token = { range };
   const VkIndirectCommandsLayoutTokenEXT tokens[] = {
      {
         .sType = VK_STRUCTURE_TYPE_INDIRECT_COMMANDS_LAYOUT_TOKEN_EXT,
         .type = VK_INDIRECT_COMMANDS_TOKEN_TYPE_PUSH_CONSTANT_EXT,
         .data.pPushConstant = &push_token,
         .offset = offsetof(struct dgc_sequence, base),
      },
      {
         .sType = VK_STRUCTURE_TYPE_INDIRECT_COMMANDS_LAYOUT_TOKEN_EXT,
         .type = VK_INDIRECT_COMMANDS_TOKEN_TYPE_DISPATCH_EXT,
         .offset = offsetof(struct dgc_sequence, dispatch),
      },
   };
   const VkIndirectCommandsLayoutCreateInfoEXT layout_info = {
      .sType = VK_STRUCTURE_TYPE_INDIRECT_COMMANDS_LAYOUT_CREATE_INFO_EXT,
      .shaderStages = VK_SHADER_STAGE_COMPUTE_BIT,
      .indirectStride = sizeof(struct dgc_sequence),
      .pipelineLayout = layout,
      .tokenCount = VKT_ARRAY_SIZE(tokens),
      .pTokens = tokens,
   };
   VkIndirectCommandsLayoutEXT commands_layout;
   VKT_CHECK(create_layout(ctx.device, &layout_info, NULL, &commands_layout));

   enum { SEQUENCES = 3, SLOTS = 1024 };
   const struct dgc_sequence sequences[SEQUENCES] = {
      { 0, 1000, { 1, 1, 1 } },
      { 128, 5000, { 2, 1, 1 } },
      { 512, 90000, { 4, 1, 1 } },
   };
   struct vkt_buffer out, indirect, preprocess;
   address_buffer(&ctx, SLOTS * 4, &out);
   memset(out.map, 0xa5, SLOTS * 4);
   address_buffer_usage(&ctx, sizeof(sequences), VK_BUFFER_USAGE_INDIRECT_BUFFER_BIT, &indirect);
   memcpy(indirect.map, sequences, sizeof(sequences));

   VkGeneratedCommandsPipelineInfoEXT pipeline_info = {
      .sType = VK_STRUCTURE_TYPE_GENERATED_COMMANDS_PIPELINE_INFO_EXT,
      .pipeline = pipeline,
   };
   const VkGeneratedCommandsMemoryRequirementsInfoEXT req_info = {
      .sType = VK_STRUCTURE_TYPE_GENERATED_COMMANDS_MEMORY_REQUIREMENTS_INFO_EXT,
      .pNext = &pipeline_info,
      .indirectCommandsLayout = commands_layout,
      .maxSequenceCount = SEQUENCES,
   };
   VkMemoryRequirements2 req = { .sType = VK_STRUCTURE_TYPE_MEMORY_REQUIREMENTS_2 };
   requirements(ctx.device, &req_info, &req);
   /* (a preprocess buffer's usage is a VkBufferUsageFlags2 bit) */
   const VkBufferUsageFlags2CreateInfoKHR usage2 = {
      .sType = VK_STRUCTURE_TYPE_BUFFER_USAGE_FLAGS_2_CREATE_INFO_KHR,
      .usage = VK_BUFFER_USAGE_2_PREPROCESS_BUFFER_BIT_EXT |
               VK_BUFFER_USAGE_2_SHADER_DEVICE_ADDRESS_BIT_KHR,
   };
   const VkDeviceSize preprocess_size = req.memoryRequirements.size ? req.memoryRequirements.size
                                                                    : 4;
   const VkBufferCreateInfo pre_info = {
      .sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO,
      .pNext = &usage2,
      .size = preprocess_size,
   };
   memset(&preprocess, 0, sizeof(preprocess));
   preprocess.size = preprocess_size;
   VKT_CHECK(vkCreateBuffer(ctx.device, &pre_info, NULL, &preprocess.buffer));
   bind_address_memory(&ctx, &preprocess, req.memoryRequirements.memoryTypeBits, 0,
                       VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT, "the preprocess buffer");

   VkCommandBuffer cmd = vkt_cmd_begin(&ctx);
   PFN_vkCmdPushDescriptorSetKHR push_set = LOAD(&ctx, vkCmdPushDescriptorSetKHR);
   const VkDescriptorBufferInfo out_info = { out.buffer, 0, VK_WHOLE_SIZE };
   const VkWriteDescriptorSet write = {
      .sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET,
      .dstBinding = 0,
      .descriptorCount = 1,
      .descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
      .pBufferInfo = &out_info,
   };
   vkCmdBindPipeline(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, pipeline);
   push_set(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, layout, 0, 1, &write);
   const VkGeneratedCommandsInfoEXT info = {
      .sType = VK_STRUCTURE_TYPE_GENERATED_COMMANDS_INFO_EXT,
      .pNext = &pipeline_info,
      .shaderStages = VK_SHADER_STAGE_COMPUTE_BIT,
      .indirectCommandsLayout = commands_layout,
      .indirectAddress = address_of(&ctx, &indirect),
      .indirectAddressSize = sizeof(sequences),
      .preprocessAddress = address_of(&ctx, &preprocess),
      .preprocessSize = preprocess_size,
      .maxSequenceCount = SEQUENCES,
   };
   execute(cmd, VK_FALSE, &info);
   barrier_to_host(cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_ACCESS_SHADER_WRITE_BIT);
   vkt_cmd_submit_wait(&ctx, cmd);

   uint32_t written = 0;
   for (uint32_t slot = 0; slot < SLOTS; slot++) {
      uint32_t expect = 0xa5a5a5a5u;
      for (unsigned q = 0; q < SEQUENCES; q++) {
         const uint32_t n = sequences[q].dispatch.x * 64;
         if (slot >= sequences[q].base && slot < sequences[q].base + n)
            expect = sequences[q].value + (slot - sequences[q].base);
      }
      const uint32_t got = ((const uint32_t *)out.map)[slot];
      if (got != expect)
         vkt_fail("slot %u: 0x%08x, expected 0x%08x", slot, got, expect);
      written += expect != 0xa5a5a5a5u;
   }
   printf(PROG ": dgc: OK: %u sequences of push constants and a dispatch generated from a "
          "buffer wrote %u uints, and the %u between them stayed untouched (preprocess "
          "buffer %llu bytes)\n",
          SEQUENCES, written, SLOTS - written, (unsigned long long)preprocess_size);

   destroy_layout(ctx.device, commands_layout, NULL);
   vkDestroyPipeline(ctx.device, pipeline, NULL);
   vkDestroyPipelineLayout(ctx.device, layout, NULL);
   vkDestroyDescriptorSetLayout(ctx.device, set_layout, NULL);
   vkt_buffer_destroy(&ctx, &preprocess);
   vkt_buffer_destroy(&ctx, &indirect);
   vkt_buffer_destroy(&ctx, &out);
   vkt_context_finish(&ctx);
}
#endif

/* ---- host-image-copy: VK_EXT_host_image_copy ------------------------------ */

#ifdef VK_EXT_host_image_copy
#define HC_W 40u      /* the image: 40x24 RGBA8, two layers */
#define HC_H 24u
#define HC_LAYERS 2u
#define HC_ROW 48u    /* texels per row in the application's memory */

/* The value the first copy gives texel (x, y) of layer l. */
static uint32_t
hc_texel(uint32_t l, uint32_t x, uint32_t y)
{
   return 0x01000000u * (l + 1) + 0x10000u * y + 0x100u * x + 0x5a;
}

/* ... and the second, over a 16x8 rectangle at (8, 4) of layer 1. */
#define HC_RECT_X 8u
#define HC_RECT_Y 4u
#define HC_RECT_W 16u
#define HC_RECT_H 8u
static uint32_t
hc_rect_texel(uint32_t x, uint32_t y)
{
   return 0xc0000000u + 0x100u * y + x;
}

static uint32_t
hc_expected(uint32_t l, uint32_t x, uint32_t y)
{
   if (l == 1 && x >= HC_RECT_X && x < HC_RECT_X + HC_RECT_W && y >= HC_RECT_Y &&
       y < HC_RECT_Y + HC_RECT_H)
      return hc_rect_texel(x - HC_RECT_X, y - HC_RECT_Y);
   return hc_texel(l, x, y);
}

static VkImage
hc_image(const struct vkt_context *ctx, VkDeviceMemory *memory,
         PFN_vkTransitionImageLayoutEXT transition)
{
   const VkImageCreateInfo info = {
      .sType = VK_STRUCTURE_TYPE_IMAGE_CREATE_INFO,
      .imageType = VK_IMAGE_TYPE_2D,
      .format = VK_FORMAT_R8G8B8A8_UNORM,
      .extent = { HC_W, HC_H, 1 },
      .mipLevels = 1,
      .arrayLayers = HC_LAYERS,
      .samples = VK_SAMPLE_COUNT_1_BIT,
      .tiling = VK_IMAGE_TILING_OPTIMAL,
      .usage = VK_IMAGE_USAGE_HOST_TRANSFER_BIT_EXT | VK_IMAGE_USAGE_TRANSFER_SRC_BIT,
      .sharingMode = VK_SHARING_MODE_EXCLUSIVE,
      .initialLayout = VK_IMAGE_LAYOUT_UNDEFINED,
   };
   VkImage image;
   VKT_CHECK(vkCreateImage(ctx->device, &info, NULL, &image));
   *memory = vkt_image_bind_memory(ctx, image);
   /* on the host, no command buffer */
   const VkHostImageLayoutTransitionInfoEXT to_general = {
      .sType = VK_STRUCTURE_TYPE_HOST_IMAGE_LAYOUT_TRANSITION_INFO_EXT,
      .image = image,
      .oldLayout = VK_IMAGE_LAYOUT_UNDEFINED,
      .newLayout = VK_IMAGE_LAYOUT_GENERAL,
      .subresourceRange = { VK_IMAGE_ASPECT_COLOR_BIT, 0, 1, 0, HC_LAYERS },
   };
   VKT_CHECK(transition(ctx->device, 1, &to_general));
   return image;
}

/* Reads every texel of image (both layers, packed) through a host copy and
 * checks it; what says which image. */
static void
hc_check(const struct vkt_context *ctx, PFN_vkCopyImageToMemoryEXT to_memory, VkImage image,
         const char *what)
{
   uint32_t *out = calloc(HC_W * HC_H * HC_LAYERS, sizeof(*out));
   if (!out)
      vkt_fail("out of memory");
   const VkImageToMemoryCopyEXT region = {
      .sType = VK_STRUCTURE_TYPE_IMAGE_TO_MEMORY_COPY_EXT,
      .pHostPointer = out,
      .imageSubresource = { VK_IMAGE_ASPECT_COLOR_BIT, 0, 0, VK_REMAINING_ARRAY_LAYERS },
      .imageExtent = { HC_W, HC_H, 1 },
   };
   const VkCopyImageToMemoryInfoEXT info = {
      .sType = VK_STRUCTURE_TYPE_COPY_IMAGE_TO_MEMORY_INFO_EXT,
      .srcImage = image,
      .srcImageLayout = VK_IMAGE_LAYOUT_GENERAL,
      .regionCount = 1,
      .pRegions = &region,
   };
   VKT_CHECK(to_memory(ctx->device, &info));
   for (uint32_t l = 0; l < HC_LAYERS; l++)
      for (uint32_t y = 0; y < HC_H; y++)
         for (uint32_t x = 0; x < HC_W; x++) {
            uint32_t got = out[(l * HC_H + y) * HC_W + x];
            if (got != hc_expected(l, x, y))
               vkt_fail("host-image-copy: %s: layer %u texel (%u, %u) is 0x%08x, expected "
                        "0x%08x", what, l, x, y, got, hc_expected(l, x, y));
         }
   free(out);
}

static void
test_host_copy(const char *device_name)
{
   static const char *const exts[] = { VK_EXT_HOST_IMAGE_COPY_EXTENSION_NAME };
   VkPhysicalDeviceHostImageCopyFeaturesEXT want = {
      .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_HOST_IMAGE_COPY_FEATURES_EXT,
      .hostImageCopy = VK_TRUE,
   };
   struct vkt_context ctx;
   context_init(&ctx, PROG ": host-image-copy", device_name, 0, exts, VKT_ARRAY_SIZE(exts),
                &want);
   PFN_vkCopyMemoryToImageEXT to_image = LOAD(&ctx, vkCopyMemoryToImageEXT);
   PFN_vkCopyImageToMemoryEXT to_memory = LOAD(&ctx, vkCopyImageToMemoryEXT);
   PFN_vkCopyImageToImageEXT image_to_image = LOAD(&ctx, vkCopyImageToImageEXT);
   PFN_vkTransitionImageLayoutEXT transition = LOAD(&ctx, vkTransitionImageLayoutEXT);

   VkDeviceMemory memory[3];
   VkImage a = hc_image(&ctx, &memory[0], transition);

   /* both layers from memory whose rows are longer than the image's, then
    * a rectangle of layer 1 from packed memory */
   uint32_t *src = calloc(HC_ROW * HC_H * HC_LAYERS, sizeof(*src));
   uint32_t rect[HC_RECT_W * HC_RECT_H];
   if (!src)
      vkt_fail("out of memory");
   for (uint32_t l = 0; l < HC_LAYERS; l++)
      for (uint32_t y = 0; y < HC_H; y++)
         for (uint32_t x = 0; x < HC_ROW; x++)
            src[(l * HC_H + y) * HC_ROW + x] = x < HC_W ? hc_texel(l, x, y) : 0xdeadbeef;
   for (uint32_t y = 0; y < HC_RECT_H; y++)
      for (uint32_t x = 0; x < HC_RECT_W; x++)
         rect[y * HC_RECT_W + x] = hc_rect_texel(x, y);
   const VkMemoryToImageCopyEXT regions[] = {
      {
         .sType = VK_STRUCTURE_TYPE_MEMORY_TO_IMAGE_COPY_EXT,
         .pHostPointer = src,
         .memoryRowLength = HC_ROW,
         .imageSubresource = { VK_IMAGE_ASPECT_COLOR_BIT, 0, 0, HC_LAYERS },
         .imageExtent = { HC_W, HC_H, 1 },
      },
      {
         .sType = VK_STRUCTURE_TYPE_MEMORY_TO_IMAGE_COPY_EXT,
         .pHostPointer = rect,
         .imageSubresource = { VK_IMAGE_ASPECT_COLOR_BIT, 0, 1, 1 },
         .imageOffset = { HC_RECT_X, HC_RECT_Y, 0 },
         .imageExtent = { HC_RECT_W, HC_RECT_H, 1 },
      },
   };
   const VkCopyMemoryToImageInfoEXT to_image_info = {
      .sType = VK_STRUCTURE_TYPE_COPY_MEMORY_TO_IMAGE_INFO_EXT,
      .dstImage = a,
      .dstImageLayout = VK_IMAGE_LAYOUT_GENERAL,
      .regionCount = VKT_ARRAY_SIZE(regions),
      .pRegions = regions,
   };
   VKT_CHECK(to_image(ctx.device, &to_image_info));
   free(src);
   hc_check(&ctx, to_memory, a, "copied from memory");

   /* the device sees what the host wrote: layer 1 by vkCmdCopyImageToBuffer */
   struct vkt_buffer buf;
   vkt_buffer_create(&ctx, HC_W * HC_H * 4, VK_BUFFER_USAGE_TRANSFER_DST_BIT, true, &buf);
   VkCommandBuffer cmd = vkt_cmd_begin(&ctx);
   const VkBufferImageCopy to_buffer = {
      .imageSubresource = { VK_IMAGE_ASPECT_COLOR_BIT, 0, 1, 1 },
      .imageExtent = { HC_W, HC_H, 1 },
   };
   vkCmdCopyImageToBuffer(cmd, a, VK_IMAGE_LAYOUT_GENERAL, buf.buffer, 1, &to_buffer);
   barrier_to_host(cmd, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_ACCESS_TRANSFER_WRITE_BIT);
   vkt_cmd_submit_wait(&ctx, cmd);
   vkt_buffer_invalidate(&ctx, &buf);
   for (uint32_t y = 0; y < HC_H; y++)
      for (uint32_t x = 0; x < HC_W; x++) {
         uint32_t got = ((const uint32_t *)buf.map)[y * HC_W + x];
         if (got != hc_expected(1, x, y))
            vkt_fail("host-image-copy: the device reads 0x%08x at (%u, %u) of layer 1, the "
                     "host wrote 0x%08x", got, x, y, hc_expected(1, x, y));
      }
   vkt_buffer_destroy(&ctx, &buf);

   /* image to image on the host; then out and back in as the host lays the
    * image out (VK_HOST_IMAGE_COPY_MEMCPY), layer by layer */
   VkImage b = hc_image(&ctx, &memory[1], transition);
   VkImage c = hc_image(&ctx, &memory[2], transition);
   const VkImageCopy2 whole = {
      .sType = VK_STRUCTURE_TYPE_IMAGE_COPY_2,
      .srcSubresource = { VK_IMAGE_ASPECT_COLOR_BIT, 0, 0, HC_LAYERS },
      .dstSubresource = { VK_IMAGE_ASPECT_COLOR_BIT, 0, 0, HC_LAYERS },
      .extent = { HC_W, HC_H, 1 },
   };
   const VkCopyImageToImageInfoEXT image_info = {
      .sType = VK_STRUCTURE_TYPE_COPY_IMAGE_TO_IMAGE_INFO_EXT,
      .srcImage = a,
      .srcImageLayout = VK_IMAGE_LAYOUT_GENERAL,
      .dstImage = b,
      .dstImageLayout = VK_IMAGE_LAYOUT_GENERAL,
      .regionCount = 1,
      .pRegions = &whole,
   };
   VKT_CHECK(image_to_image(ctx.device, &image_info));
   hc_check(&ctx, to_memory, b, "copied from another image");

   VkSubresourceHostMemcpySizeEXT memcpy_size = {
      .sType = VK_STRUCTURE_TYPE_SUBRESOURCE_HOST_MEMCPY_SIZE_EXT,
   };
   VkSubresourceLayout2EXT layout = {
      .sType = VK_STRUCTURE_TYPE_SUBRESOURCE_LAYOUT_2_EXT,
      .pNext = &memcpy_size,
   };
   const VkImageSubresource2EXT layer0 = {
      .sType = VK_STRUCTURE_TYPE_IMAGE_SUBRESOURCE_2_EXT,
      .imageSubresource = { VK_IMAGE_ASPECT_COLOR_BIT, 0, 0 },
   };
   PFN_vkGetImageSubresourceLayout2EXT subresource_layout =
      LOAD(&ctx, vkGetImageSubresourceLayout2EXT);
   subresource_layout(ctx.device, b, &layer0, &layout);
   if (memcpy_size.size < HC_W * HC_H * 4)
      vkt_fail("host-image-copy: a layer takes %llu bytes as the host lays it out, fewer "
               "than its texels", (unsigned long long)memcpy_size.size);
   uint8_t *raw = calloc(HC_LAYERS, memcpy_size.size);
   if (!raw)
      vkt_fail("out of memory");
   /* a region a layer: each the size the host gives a subresource */
   VkImageToMemoryCopyEXT raw_out[HC_LAYERS];
   VkMemoryToImageCopyEXT raw_in[HC_LAYERS];
   for (uint32_t l = 0; l < HC_LAYERS; l++) {
      raw_out[l] = (VkImageToMemoryCopyEXT){
         .sType = VK_STRUCTURE_TYPE_IMAGE_TO_MEMORY_COPY_EXT,
         .pHostPointer = raw + l * memcpy_size.size,
         .imageSubresource = { VK_IMAGE_ASPECT_COLOR_BIT, 0, l, 1 },
         .imageExtent = { HC_W, HC_H, 1 },
      };
      raw_in[l] = (VkMemoryToImageCopyEXT){
         .sType = VK_STRUCTURE_TYPE_MEMORY_TO_IMAGE_COPY_EXT,
         .pHostPointer = raw + l * memcpy_size.size,
         .imageSubresource = { VK_IMAGE_ASPECT_COLOR_BIT, 0, l, 1 },
         .imageExtent = { HC_W, HC_H, 1 },
      };
   }
   const VkCopyImageToMemoryInfoEXT raw_out_info = {
      .sType = VK_STRUCTURE_TYPE_COPY_IMAGE_TO_MEMORY_INFO_EXT,
      .flags = VK_HOST_IMAGE_COPY_MEMCPY_EXT,
      .srcImage = b,
      .srcImageLayout = VK_IMAGE_LAYOUT_GENERAL,
      .regionCount = HC_LAYERS,
      .pRegions = raw_out,
   };
   VKT_CHECK(to_memory(ctx.device, &raw_out_info));
   const VkCopyMemoryToImageInfoEXT raw_in_info = {
      .sType = VK_STRUCTURE_TYPE_COPY_MEMORY_TO_IMAGE_INFO_EXT,
      .flags = VK_HOST_IMAGE_COPY_MEMCPY_EXT,
      .dstImage = c,
      .dstImageLayout = VK_IMAGE_LAYOUT_GENERAL,
      .regionCount = HC_LAYERS,
      .pRegions = raw_in,
   };
   VKT_CHECK(to_image(ctx.device, &raw_in_info));
   free(raw);
   hc_check(&ctx, to_memory, c, "copied as the host lays it out");

   VkImage images[] = { a, b, c };
   for (unsigned i = 0; i < VKT_ARRAY_SIZE(images); i++) {
      vkDestroyImage(ctx.device, images[i], NULL);
      vkFreeMemory(ctx.device, memory[i], NULL);
   }
   printf(PROG ": host-image-copy: OK: two layers of a %ux%u RGBA8 image from rows of %u "
          "texels and a %ux%u rectangle, read back on the host and by the device; copied to "
          "another image on the host, and out and in again as the host lays it out (%llu "
          "bytes a layer)\n", HC_W, HC_H, HC_ROW, HC_RECT_W, HC_RECT_H,
          (unsigned long long)memcpy_size.size);
   vkt_context_finish(&ctx);
}
#endif

/* ---- mesh: VK_EXT_mesh_shader -------------------------------------------- */

#ifdef VK_EXT_mesh_shader
/* The push constants of ext_mesh.task (which hands them on in its payload)
 * or, without task shaders, of ext_mesh_alone.mesh: a rectangle for each
 * of two mesh workgroups, and a tint in their colours. */
struct mesh_params {
   struct rect rects[2];
   uint32_t tint;
};

/* In each rectangle the width and the height hold different powers of two
 * (12 x 8, 12 x 14), so that no pixel centre lies on its diagonal
 * (mesh_expected makes sure). */
static const struct mesh_params mesh_params = {
   .rects = { { 2, 3, 14, 11 }, { 17, 16, 29, 30 } },
   .tint = 0x5a,
};

#define MESH_INDIRECT_OFFSET 16

/* Must match color() in ext_mesh.mesh: mesh workgroup g, its primitive p. */
static void
mesh_color(uint32_t g, uint32_t p, uint32_t tint, uint8_t rgba[4])
{
   rgba[0] = (uint8_t)(32 + 128 * g + 64 * p);
   rgba[1] = (uint8_t)(240 - 96 * g - 48 * p);
   rgba[2] = (uint8_t)(tint + 8 * g + 4 * p);
   rgba[3] = 255;
}

/* What the two workgroups draw: rectangle g split by the diagonal from
 * (x1,y0) to (x0,y1), primitive 0 above it, 1 below. */
static void
mesh_expected(uint8_t *want, unsigned counts[5])
{
   for (uint32_t y = 0; y < GFX_SIZE; y++)
      for (uint32_t x = 0; x < GFX_SIZE; x++) {
         uint8_t *w = want + (y * GFX_SIZE + x) * 4;
         unsigned which = 4;
         memcpy(w, gfx_clear, 4);
         for (uint32_t g = 0; g < 2; g++) {
            const struct rect *r = &mesh_params.rects[g];
            if (!rect_contains(r, x, y))
               continue;
            /* (cx - x0) / w + (cy - y0) / h against 1, for the pixel
             * centre (cx, cy), times 2 w h */
            const uint32_t rw = r->x1 - r->x0, rh = r->y1 - r->y0;
            const uint32_t side = (2 * (x - r->x0) + 1) * rh + (2 * (y - r->y0) + 1) * rw;
            if (side == 2 * rw * rh)
               vkt_fail("pixel (%u,%u) lies on rectangle %u's diagonal: choose others", x, y,
                        g);
            const uint32_t p = side > 2 * rw * rh;
            mesh_color(g, p, mesh_params.tint, w);
            which = 2 * g + p;
         }
         counts[which]++;
      }
}

/*
 * Two rectangles drawn by two mesh workgroups, two triangles each with a
 * colour per primitive. With task shaders one task workgroup launches the
 * two mesh workgroups and hands them the rectangles in its payload; without,
 * the draw launches them itself. Drawn by vkCmdDrawMeshTasksEXT, then again
 * by vkCmdDrawMeshTasksIndirectEXT; both images are checked.
 */
static void
test_mesh(const char *device_name)
{
   static const char *const exts[] = { VK_EXT_MESH_SHADER_EXTENSION_NAME };
   struct vkt_context ctx;

   /* whether there are task shaders decides what to enable: ask first */
   VkPhysicalDevice pdev = context_pick(&ctx, PROG ": mesh", device_name);
   VkPhysicalDeviceMeshShaderFeaturesEXT have = {
      .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MESH_SHADER_FEATURES_EXT,
   };
   VkPhysicalDeviceFeatures2 features = {
      .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2,
      .pNext = &have,
   };
   vkGetPhysicalDeviceFeatures2(pdev, &features);
   const bool task = have.taskShader;
   VkPhysicalDeviceMeshShaderFeaturesEXT enable = {
      .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MESH_SHADER_FEATURES_EXT,
      .taskShader = task,
      .meshShader = VK_TRUE,
   };
   context_init_picked(&ctx, pdev, VKT_FEATURE_DYNAMIC_RENDERING, exts, VKT_ARRAY_SIZE(exts),
                       &enable);
   PFN_vkCmdDrawMeshTasksEXT draw = LOAD(&ctx, vkCmdDrawMeshTasksEXT);
   PFN_vkCmdDrawMeshTasksIndirectEXT draw_indirect = LOAD(&ctx, vkCmdDrawMeshTasksIndirectEXT);

   /* the push constants go to the first stage: task or mesh */
   const VkShaderStageFlags pc_stage = task ? VK_SHADER_STAGE_TASK_BIT_EXT
                                            : VK_SHADER_STAGE_MESH_BIT_EXT;
   const VkPushConstantRange push_range = { pc_stage, 0, sizeof(struct mesh_params) };
   VkPipelineLayout layout = pipeline_layout(&ctx, NULL, &push_range);
   VkShaderModule ts = VK_NULL_HANDLE, ms, fs;
   VkPipelineShaderStageCreateInfo stages[3];
   uint32_t n_stages = 0;
   if (task) {
      ts = vkt_shader_module(&ctx, ext_mesh_task_spv, sizeof(ext_mesh_task_spv));
      ms = vkt_shader_module(&ctx, ext_mesh_mesh_spv, sizeof(ext_mesh_mesh_spv));
      stages[n_stages++] = vkt_shader_stage(VK_SHADER_STAGE_TASK_BIT_EXT, ts);
   } else {
      ms = vkt_shader_module(&ctx, ext_mesh_alone_mesh_spv, sizeof(ext_mesh_alone_mesh_spv));
   }
   fs = vkt_shader_module(&ctx, ext_mesh_frag_spv, sizeof(ext_mesh_frag_spv));
   stages[n_stages++] = vkt_shader_stage(VK_SHADER_STAGE_MESH_BIT_EXT, ms);
   stages[n_stages++] = vkt_shader_stage(VK_SHADER_STAGE_FRAGMENT_BIT, fs);
   VkPipeline pipeline = gfx_pipeline(&ctx, stages, n_stages, layout, 0);
   if (ts)
      vkDestroyShaderModule(ctx.device, ts, NULL);
   vkDestroyShaderModule(ctx.device, ms, NULL);
   vkDestroyShaderModule(ctx.device, fs, NULL);

   /* one task workgroup, or the two mesh workgroups */
   const VkDrawMeshTasksIndirectCommandEXT groups = { task ? 1 : 2, 1, 1 };
   struct vkt_buffer indirect;
   vkt_buffer_create(&ctx, 64, VK_BUFFER_USAGE_INDIRECT_BUFFER_BIT, true, &indirect);
   memset(indirect.map, 0, indirect.size);
   memcpy((uint8_t *)indirect.map + MESH_INDIRECT_OFFSET, &groups, sizeof(groups));
   vkt_buffer_flush(&ctx, &indirect);

   struct image target;
   image_create(&ctx, GFX_SIZE, GFX_SIZE,
                VK_IMAGE_USAGE_COLOR_ATTACHMENT_BIT | VK_IMAGE_USAGE_TRANSFER_SRC_BIT, &target);
   struct vkt_buffer readback;
   vkt_buffer_create(&ctx, 2 * GFX_BYTES, VK_BUFFER_USAGE_TRANSFER_DST_BIT, true, &readback);
   memset(readback.map, 0xa5, readback.size);
   vkt_buffer_flush(&ctx, &readback);

   VkCommandBuffer cmd = vkt_cmd_begin(&ctx);
   gfx_begin(cmd, &target, false);
   vkCmdBindPipeline(cmd, VK_PIPELINE_BIND_POINT_GRAPHICS, pipeline);
   vkCmdPushConstants(cmd, layout, pc_stage, 0, sizeof(mesh_params), &mesh_params);
   draw(cmd, groups.groupCountX, groups.groupCountY, groups.groupCountZ);
   gfx_end_readback(cmd, &target, &readback, 0);
   /* the same, cleared again, drawn from the buffer (pipeline and push
    * constants stay bound) */
   gfx_begin(cmd, &target, true);
   draw_indirect(cmd, indirect.buffer, MESH_INDIRECT_OFFSET, 1,
                 sizeof(VkDrawMeshTasksIndirectCommandEXT));
   gfx_end_readback(cmd, &target, &readback, GFX_BYTES);
   barrier_to_host(cmd, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_ACCESS_TRANSFER_WRITE_BIT);
   vkt_cmd_submit_wait(&ctx, cmd);
   vkt_buffer_invalidate(&ctx, &readback);

   uint8_t want[GFX_BYTES];
   unsigned counts[5] = { 0 };
   mesh_expected(want, counts);
   gfx_check(readback.map, want, "vkCmdDrawMeshTasksEXT");
   gfx_check((const uint8_t *)readback.map + GFX_BYTES, want, "vkCmdDrawMeshTasksIndirectEXT");

   if (task)
      printf(PROG ": mesh: OK: a task workgroup launched 2 mesh workgroups "
             "(EmitMeshTasksEXT) with 2 rectangles in its payload");
   else
      printf(PROG ": mesh: OK: no task shaders on this device, mesh shader only: "
             "vkCmdDrawMeshTasksEXT(2, 1, 1) with 2 rectangles in push constants");
   printf("; 2 triangles each, one colour per primitive (perprimitiveEXT): %u, %u, %u and "
          "%u pixels, %u the clear colour; the same from vkCmdDrawMeshTasksIndirectEXT "
          "(offset %u)\n", counts[0], counts[1], counts[2], counts[3], counts[4],
          MESH_INDIRECT_OFFSET);

   vkDestroyPipeline(ctx.device, pipeline, NULL);
   vkDestroyPipelineLayout(ctx.device, layout, NULL);
   vkt_buffer_destroy(&ctx, &readback);
   image_destroy(&ctx, &target);
   vkt_buffer_destroy(&ctx, &indirect);
   vkt_context_finish(&ctx);
}
#endif

/* ---- VK_KHR_pipeline_binary --------------------------------------------- */

#ifdef VK_KHR_pipeline_binary
#define BIN_COUNT 4096u
#define BIN_ROUNDS 5u
#define BIN_SEED 0x5eedu
#define BIN_MAX 8u

struct bin_params {
   uint32_t count, rounds, seed;
};

/* Binaries as vkCreatePipelineBinariesKHR makes them from info: counted
 * first, then made; their number. */
static uint32_t
bin_create(const struct vkt_context *ctx, const VkPipelineBinaryCreateInfoKHR *info,
           VkPipelineBinaryKHR *out)
{
   PFN_vkCreatePipelineBinariesKHR create = LOAD(ctx, vkCreatePipelineBinariesKHR);
   VkPipelineBinaryHandlesInfoKHR handles = {
      .sType = VK_STRUCTURE_TYPE_PIPELINE_BINARY_HANDLES_INFO_KHR,
   };
   VKT_CHECK(create(ctx->device, info, NULL, &handles));
   if (handles.pipelineBinaryCount == 0 || handles.pipelineBinaryCount > BIN_MAX)
      vkt_fail("vkCreatePipelineBinariesKHR counts %u binaries", handles.pipelineBinaryCount);
   const uint32_t n = handles.pipelineBinaryCount;
   handles.pPipelineBinaries = out;
   VKT_CHECK(create(ctx->device, info, NULL, &handles));
   if (handles.pipelineBinaryCount != n)
      vkt_fail("vkCreatePipelineBinariesKHR counted %u binaries and made %u", n,
               handles.pipelineBinaryCount);
   for (uint32_t i = 0; i < n; i++) {
      if (out[i] == VK_NULL_HANDLE)
         vkt_fail("binary %u of %u is VK_NULL_HANDLE", i, n);
   }
   return n;
}

static VkPipeline
bin_pipeline(const struct vkt_context *ctx, VkShaderModule module, VkPipelineLayout layout,
             const void *pnext)
{
   const VkComputePipelineCreateInfo info = {
      .sType = VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO,
      .pNext = pnext,
      .stage = {
         .sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO,
         .stage = VK_SHADER_STAGE_COMPUTE_BIT,
         .module = module,
         .pName = "main",
      },
      .layout = layout,
   };
   VkPipeline pipeline;
   VKT_CHECK(vkCreateComputePipelines(ctx->device, VK_NULL_HANDLE, 1, &info, NULL, &pipeline));
   return pipeline;
}

static void
test_pipeline_binary(const char *device_name)
{
   struct vkt_context ctx;
   VkPhysicalDevice pdev = context_pick(&ctx, PROG ": pipeline-binary", device_name);
   if (!vkt_device_has_extension(pdev, VK_KHR_PIPELINE_BINARY_EXTENSION_NAME)) {
      printf(PROG ": pipeline-binary: SKIP: the device has no %s\n",
             VK_KHR_PIPELINE_BINARY_EXTENSION_NAME);
      vkDestroyInstance(ctx.instance, NULL);
      skipped++;
      return;
   }
   static const char *const exts[] = { VK_KHR_PIPELINE_BINARY_EXTENSION_NAME,
                                        VK_KHR_MAINTENANCE_5_EXTENSION_NAME };
   VkPhysicalDeviceMaintenance5FeaturesKHR m5 = {
      .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MAINTENANCE_5_FEATURES_KHR,
      .maintenance5 = VK_TRUE,
   };
   VkPhysicalDevicePipelineBinaryFeaturesKHR want = {
      .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PIPELINE_BINARY_FEATURES_KHR,
      .pNext = &m5,
      .pipelineBinaries = VK_TRUE,
   };
   context_init_picked(&ctx, pdev, 0, exts, 2, &want);
   PFN_vkGetPipelineKeyKHR get_key = LOAD(&ctx, vkGetPipelineKeyKHR);
   PFN_vkGetPipelineBinaryDataKHR get_data = LOAD(&ctx, vkGetPipelineBinaryDataKHR);
   PFN_vkReleaseCapturedPipelineDataKHR release = LOAD(&ctx, vkReleaseCapturedPipelineDataKHR);
   PFN_vkDestroyPipelineBinaryKHR destroy = LOAD(&ctx, vkDestroyPipelineBinaryKHR);

   const VkDescriptorSetLayoutBinding bindings[] = {
      { 0, VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, 1, VK_SHADER_STAGE_COMPUTE_BIT, NULL },
      { 1, VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, 1, VK_SHADER_STAGE_COMPUTE_BIT, NULL },
   };
   const VkDescriptorSetLayoutCreateInfo sli = {
      .sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO,
      .bindingCount = 2,
      .pBindings = bindings,
   };
   VkDescriptorSetLayout set_layout;
   VKT_CHECK(vkCreateDescriptorSetLayout(ctx.device, &sli, NULL, &set_layout));
   const VkPushConstantRange range = { VK_SHADER_STAGE_COMPUTE_BIT, 0,
                                       sizeof(struct bin_params) };
   VkPipelineLayout layout = pipeline_layout(&ctx, &set_layout, &range);
   VkShaderModule module = vkt_shader_module(&ctx, compute_comp_spv, sizeof(compute_comp_spv));

   /* the key of the pipeline's create info, and the global key */
   const VkComputePipelineCreateInfo key_info = {
      .sType = VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO,
      .stage = {
         .sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO,
         .stage = VK_SHADER_STAGE_COMPUTE_BIT,
         .module = module,
         .pName = "main",
      },
      .layout = layout,
   };
   const VkPipelineCreateInfoKHR pipeline_info = {
      .sType = VK_STRUCTURE_TYPE_PIPELINE_CREATE_INFO_KHR,
      .pNext = (void *)&key_info,
   };
   VkPipelineBinaryKeyKHR pipeline_key = { .sType = VK_STRUCTURE_TYPE_PIPELINE_BINARY_KEY_KHR };
   VkPipelineBinaryKeyKHR global_key = { .sType = VK_STRUCTURE_TYPE_PIPELINE_BINARY_KEY_KHR };
   VKT_CHECK(get_key(ctx.device, &pipeline_info, &pipeline_key));
   VKT_CHECK(get_key(ctx.device, NULL, &global_key));
   if (!pipeline_key.keySize || pipeline_key.keySize > VK_MAX_PIPELINE_BINARY_KEY_SIZE_KHR ||
       !global_key.keySize || global_key.keySize > VK_MAX_PIPELINE_BINARY_KEY_SIZE_KHR)
      vkt_fail("key sizes %u (the pipeline's) and %u (global)", pipeline_key.keySize,
               global_key.keySize);
   VkPipelineBinaryKeyKHR again = { .sType = VK_STRUCTURE_TYPE_PIPELINE_BINARY_KEY_KHR };
   VKT_CHECK(get_key(ctx.device, &pipeline_info, &again));
   if (again.keySize != pipeline_key.keySize ||
       memcmp(again.key, pipeline_key.key, pipeline_key.keySize))
      vkt_fail("the same create info gave two different keys");

   /* a pipeline that keeps its data, its binaries, their keys and data */
   const VkPipelineCreateFlags2CreateInfoKHR capture = {
      .sType = VK_STRUCTURE_TYPE_PIPELINE_CREATE_FLAGS_2_CREATE_INFO_KHR,
      .flags = VK_PIPELINE_CREATE_2_CAPTURE_DATA_BIT_KHR,
   };
   VkPipeline captured = bin_pipeline(&ctx, module, layout, &capture);
   const VkPipelineBinaryCreateInfoKHR from_pipeline = {
      .sType = VK_STRUCTURE_TYPE_PIPELINE_BINARY_CREATE_INFO_KHR,
      .pipeline = captured,
   };
   VkPipelineBinaryKHR binaries[BIN_MAX];
   const uint32_t n = bin_create(&ctx, &from_pipeline, binaries);
   VkPipelineBinaryKeyKHR keys[BIN_MAX];
   VkPipelineBinaryDataKHR data[BIN_MAX];
   size_t total = 0;
   for (uint32_t i = 0; i < n; i++) {
      const VkPipelineBinaryDataInfoKHR di = {
         .sType = VK_STRUCTURE_TYPE_PIPELINE_BINARY_DATA_INFO_KHR,
         .pipelineBinary = binaries[i],
      };
      keys[i] = (VkPipelineBinaryKeyKHR){ .sType = VK_STRUCTURE_TYPE_PIPELINE_BINARY_KEY_KHR };
      size_t size = 0;
      VKT_CHECK(get_data(ctx.device, &di, &keys[i], &size, NULL));
      if (!size)
         vkt_fail("binary %u has no data", i);
      /* too small a buffer: nothing written, the size needed said */
      unsigned char one = 0x5a;
      size_t small = 1;
      VkResult sr = get_data(ctx.device, &di, &keys[i], &small, &one);
      if (size > 1 && (sr != VK_ERROR_NOT_ENOUGH_SPACE_KHR || small != size || one != 0x5a))
         vkt_fail("binary %u: a 1-byte buffer gave %d, size %zu (of %zu), byte 0x%x", i, sr,
                  small, size, one);
      data[i].dataSize = size;
      data[i].pData = malloc(size);
      if (!data[i].pData)
         vkt_fail("out of memory");
      VKT_CHECK(get_data(ctx.device, &di, &keys[i], &data[i].dataSize, data[i].pData));
      if (data[i].dataSize != size || !keys[i].keySize)
         vkt_fail("binary %u: %zu bytes of data after %zu, key of %u bytes", i,
                  data[i].dataSize, size, keys[i].keySize);
      total += size;
   }
   const VkReleaseCapturedPipelineDataInfoKHR ri = {
      .sType = VK_STRUCTURE_TYPE_RELEASE_CAPTURED_PIPELINE_DATA_INFO_KHR,
      .pipeline = captured,
   };
   VKT_CHECK(release(ctx.device, &ri, NULL));
   vkDestroyPipeline(ctx.device, captured, NULL);
   for (uint32_t i = 0; i < n; i++)
      destroy(ctx.device, binaries[i], NULL);

   /* binaries again from the keys and data alone, and a pipeline of them */
   const VkPipelineBinaryKeysAndDataKHR kd = {
      .binaryCount = n,
      .pPipelineBinaryKeys = keys,
      .pPipelineBinaryData = data,
   };
   const VkPipelineBinaryCreateInfoKHR from_data = {
      .sType = VK_STRUCTURE_TYPE_PIPELINE_BINARY_CREATE_INFO_KHR,
      .pKeysAndDataInfo = &kd,
   };
   const uint32_t made = bin_create(&ctx, &from_data, binaries);
   if (made != n)
      vkt_fail("%u binaries from %u keys and data", made, n);
   const VkPipelineBinaryInfoKHR use = {
      .sType = VK_STRUCTURE_TYPE_PIPELINE_BINARY_INFO_KHR,
      .binaryCount = made,
      .pPipelineBinaries = binaries,
   };
   VkPipeline pipeline = bin_pipeline(&ctx, module, layout, &use);
   for (uint32_t i = 0; i < made; i++)
      destroy(ctx.device, binaries[i], NULL);
   for (uint32_t i = 0; i < n; i++)
      free(data[i].pData);

   struct vkt_buffer in, out;
   vkt_buffer_create(&ctx, BIN_COUNT * 4, VK_BUFFER_USAGE_STORAGE_BUFFER_BIT, true, &in);
   vkt_buffer_create(&ctx, BIN_COUNT * 4, VK_BUFFER_USAGE_STORAGE_BUFFER_BIT, true, &out);
   for (uint32_t i = 0; i < BIN_COUNT; i++) {
      ((uint32_t *)in.map)[i] = i * 7u + 3u;
      ((uint32_t *)out.map)[i] = 0xdeadbeefu;
   }
   vkt_buffer_flush(&ctx, &in);
   vkt_buffer_flush(&ctx, &out);
   VkDescriptorPool pool;
   const VkDescriptorSet set =
      vkt_descriptor_set(&ctx, set_layout, VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, 2, &pool);
   const VkBuffer set_buffers[] = {in.buffer, out.buffer};
   vkt_write_buffers(&ctx, set, VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, set_buffers,
                     VKT_ARRAY_SIZE(set_buffers));
   const struct bin_params params = { BIN_COUNT, BIN_ROUNDS, BIN_SEED };
   VkCommandBuffer cmd = vkt_cmd_begin(&ctx);
   vkCmdBindPipeline(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, pipeline);
   vkCmdBindDescriptorSets(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, layout, 0, 1, &set, 0, NULL);
   vkCmdPushConstants(cmd, layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, sizeof(params), &params);
   vkCmdDispatch(cmd, BIN_COUNT / 64, 1, 1);
   barrier_to_host(cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_ACCESS_SHADER_WRITE_BIT);
   vkt_cmd_submit_wait(&ctx, cmd);
   vkt_buffer_invalidate(&ctx, &out);
   for (uint32_t i = 0; i < BIN_COUNT; i++) {
      uint32_t expect = vkt_compute_expected(i, i * 7u + 3u, BIN_ROUNDS, BIN_SEED);
      uint32_t got = ((const uint32_t *)out.map)[i];
      if (got != expect)
         vkt_fail("element %u of the pipeline made from binaries is 0x%08x, expected 0x%08x",
                  i, got, expect);
   }
   printf(PROG ": pipeline-binary: OK: %u binar%s (%zu bytes) from a captured pipeline, made "
          "again from keys and data, their pipeline's %u elements right; keys of %u and %u "
          "bytes\n", n, n == 1 ? "y" : "ies", total, BIN_COUNT, pipeline_key.keySize,
          global_key.keySize);

   vkDestroyDescriptorPool(ctx.device, pool, NULL);
   vkt_buffer_destroy(&ctx, &out);
   vkt_buffer_destroy(&ctx, &in);
   vkDestroyPipeline(ctx.device, pipeline, NULL);
   vkDestroyShaderModule(ctx.device, module, NULL);
   vkDestroyPipelineLayout(ctx.device, layout, NULL);
   vkDestroyDescriptorSetLayout(ctx.device, set_layout, NULL);
   vkt_context_finish(&ctx);
}
#endif

/* ---- VK_NV_optical_flow ------------------------------------------------- */

#ifdef VK_NV_optical_flow
#define OF_SIZE 256u
#define OF_DX 4
#define OF_DY 2
#define OF_MAX_FORMATS 16u

/* Blocks of 4x4 texels of noise, repeating every OF_SIZE. */
static uint8_t
of_texel(int x, int y)
{
   uint32_t bx = ((uint32_t)x & (OF_SIZE - 1)) / 4, by = ((uint32_t)y & (OF_SIZE - 1)) / 4;
   uint32_t h = bx * 73856093u ^ by * 19349663u;
   h ^= h >> 13;
   h *= 0x5bd1e995u;
   h ^= h >> 15;
   return (uint8_t)h;
}

/* The first format the engine takes for usage, or VK_FORMAT_UNDEFINED. */
static VkFormat
of_format(VkPhysicalDevice pdev, PFN_vkGetPhysicalDeviceOpticalFlowImageFormatsNV formats,
          VkOpticalFlowUsageFlagsNV usage, VkFormat prefer)
{
   const VkOpticalFlowImageFormatInfoNV info = {
      .sType = VK_STRUCTURE_TYPE_OPTICAL_FLOW_IMAGE_FORMAT_INFO_NV,
      .usage = usage,
   };
   VkOpticalFlowImageFormatPropertiesNV props[OF_MAX_FORMATS];
   uint32_t n = OF_MAX_FORMATS;
   for (uint32_t i = 0; i < n; i++)
      props[i] = (VkOpticalFlowImageFormatPropertiesNV){
         .sType = VK_STRUCTURE_TYPE_OPTICAL_FLOW_IMAGE_FORMAT_PROPERTIES_NV,
      };
   VkResult r = formats(pdev, &info, &n, props);
   if (r != VK_SUCCESS && r != VK_INCOMPLETE)
      vkt_fail_result("vkGetPhysicalDeviceOpticalFlowImageFormatsNV", r, __FILE__, __LINE__);
   for (uint32_t i = 0; i < n; i++) {
      if (props[i].format == prefer)
         return prefer;
   }
   return n ? props[0].format : VK_FORMAT_UNDEFINED;
}

static void
of_image(const struct vkt_context *ctx, VkFormat format, uint32_t width, uint32_t height,
         VkImageUsageFlags usage, VkOpticalFlowUsageFlagsNV of_usage, struct image *img)
{
   const uint32_t families[2] = { ctx->queue_family, ctx->other_family };
   const VkOpticalFlowImageFormatInfoNV of_info = {
      .sType = VK_STRUCTURE_TYPE_OPTICAL_FLOW_IMAGE_FORMAT_INFO_NV,
      .usage = of_usage,
   };
   const VkImageCreateInfo info = {
      .sType = VK_STRUCTURE_TYPE_IMAGE_CREATE_INFO,
      .pNext = &of_info,
      .imageType = VK_IMAGE_TYPE_2D,
      .format = format,
      .extent = { width, height, 1 },
      .mipLevels = 1,
      .arrayLayers = 1,
      .samples = VK_SAMPLE_COUNT_1_BIT,
      .tiling = VK_IMAGE_TILING_OPTIMAL,
      .usage = usage,
      .sharingMode = VK_SHARING_MODE_CONCURRENT,
      .queueFamilyIndexCount = 2,
      .pQueueFamilyIndices = families,
      .initialLayout = VK_IMAGE_LAYOUT_UNDEFINED,
   };
   VKT_CHECK(vkCreateImage(ctx->device, &info, NULL, &img->image));
   img->memory = vkt_image_bind_memory(ctx, img->image);
   const VkImageViewCreateInfo view_info = {
      .sType = VK_STRUCTURE_TYPE_IMAGE_VIEW_CREATE_INFO,
      .image = img->image,
      .viewType = VK_IMAGE_VIEW_TYPE_2D,
      .format = format,
      .subresourceRange = { VK_IMAGE_ASPECT_COLOR_BIT, 0, 1, 0, 1 },
   };
   VKT_CHECK(vkCreateImageView(ctx->device, &view_info, NULL, &img->view));
}

static int
of_cmp_i16(const void *a, const void *b)
{
   return *(const int16_t *)a - *(const int16_t *)b;
}

static void
test_optical_flow(const char *device_name)
{
   struct vkt_context ctx;
   VkPhysicalDevice pdev = context_pick(&ctx, PROG ": optical-flow", device_name);
   VkQueueFamilyProperties families[16];
   uint32_t n_families = VKT_ARRAY_SIZE(families);
   vkGetPhysicalDeviceQueueFamilyProperties(pdev, &n_families, families);
   uint32_t of_family = UINT32_MAX;
   for (uint32_t i = 0; i < n_families && of_family == UINT32_MAX; i++) {
      if ((families[i].queueFlags & VK_QUEUE_OPTICAL_FLOW_BIT_NV) && families[i].queueCount)
         of_family = i;
   }
   if (!vkt_device_has_extension(pdev, VK_NV_OPTICAL_FLOW_EXTENSION_NAME) ||
       of_family == UINT32_MAX) {
      printf(PROG ": optical-flow: SKIP: the device has no %s or no queue for it\n",
             VK_NV_OPTICAL_FLOW_EXTENSION_NAME);
      vkDestroyInstance(ctx.instance, NULL);
      skipped++;
      return;
   }
   PFN_vkGetPhysicalDeviceOpticalFlowImageFormatsNV formats =
      (PFN_vkGetPhysicalDeviceOpticalFlowImageFormatsNV)vkGetInstanceProcAddr(
         ctx.instance, "vkGetPhysicalDeviceOpticalFlowImageFormatsNV");
   if (!formats)
      vkt_fail("no vkGetPhysicalDeviceOpticalFlowImageFormatsNV");
   VkPhysicalDeviceOpticalFlowPropertiesNV of_props = {
      .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_OPTICAL_FLOW_PROPERTIES_NV,
   };
   VkPhysicalDeviceProperties2 props2 = {
      .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2,
      .pNext = &of_props,
   };
   vkGetPhysicalDeviceProperties2(pdev, &props2);
   VkOpticalFlowGridSizeFlagsNV grid_flag = 0;
   uint32_t grid = 0;
   for (uint32_t g = 0; g < 4 && !grid_flag; g++) {
      if (of_props.supportedOutputGridSizes & (1u << g)) {
         grid_flag = 1u << g;
         grid = 1u << g;
      }
   }
   const VkFormat in_format = of_format(pdev, formats, VK_OPTICAL_FLOW_USAGE_INPUT_BIT_NV,
                                        VK_FORMAT_R8_UNORM);
   /* (R16G16_SFIXED5 in later headers) */
   const VkFormat flow_format = of_format(pdev, formats, VK_OPTICAL_FLOW_USAGE_OUTPUT_BIT_NV,
                                          VK_FORMAT_R16G16_S10_5_NV);
   if (!grid || in_format != VK_FORMAT_R8_UNORM || flow_format != VK_FORMAT_R16G16_S10_5_NV)
      vkt_fail("the engine offers output grids 0x%x, input format %d, flow format %d",
               of_props.supportedOutputGridSizes, (int)in_format, (int)flow_format);

   static const char *const exts[] = { VK_NV_OPTICAL_FLOW_EXTENSION_NAME };
   VkPhysicalDeviceOpticalFlowFeaturesNV want = {
      .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_OPTICAL_FLOW_FEATURES_NV,
      .opticalFlow = VK_TRUE,
   };
   vkt_context_init_physical_family(&ctx, ctx.instance, pdev, VKT_FEATURE_SYNCHRONIZATION2, exts,
                                    1, &want, of_family);
   snprintf(device_used, sizeof(device_used), "%s", ctx.props.deviceName);
   if (ctx.other_family == UINT32_MAX)
      vkt_fail("the optical flow queue is the graphics queue's family: not tested");
   PFN_vkCreateOpticalFlowSessionNV create = LOAD(&ctx, vkCreateOpticalFlowSessionNV);
   PFN_vkDestroyOpticalFlowSessionNV destroy = LOAD(&ctx, vkDestroyOpticalFlowSessionNV);
   PFN_vkBindOpticalFlowSessionImageNV bind = LOAD(&ctx, vkBindOpticalFlowSessionImageNV);
   PFN_vkCmdOpticalFlowExecuteNV execute = LOAD(&ctx, vkCmdOpticalFlowExecuteNV);

   const uint32_t fw = OF_SIZE / grid, fh = OF_SIZE / grid;
   struct image input, reference, flow;
   of_image(&ctx, in_format, OF_SIZE, OF_SIZE,
            VK_IMAGE_USAGE_SAMPLED_BIT | VK_IMAGE_USAGE_TRANSFER_DST_BIT,
            VK_OPTICAL_FLOW_USAGE_INPUT_BIT_NV, &input);
   of_image(&ctx, in_format, OF_SIZE, OF_SIZE,
            VK_IMAGE_USAGE_SAMPLED_BIT | VK_IMAGE_USAGE_TRANSFER_DST_BIT,
            VK_OPTICAL_FLOW_USAGE_INPUT_BIT_NV, &reference);
   of_image(&ctx, flow_format, fw, fh,
            VK_IMAGE_USAGE_STORAGE_BIT | VK_IMAGE_USAGE_TRANSFER_SRC_BIT,
            VK_OPTICAL_FLOW_USAGE_OUTPUT_BIT_NV, &flow);

   /* the pictures, moved by (OF_DX, OF_DY) from input to reference */
   struct vkt_buffer pixels, readback;
   vkt_buffer_create(&ctx, 2 * OF_SIZE * OF_SIZE, VK_BUFFER_USAGE_TRANSFER_SRC_BIT, true,
                     &pixels);
   vkt_buffer_create(&ctx, (VkDeviceSize)fw * fh * 4, VK_BUFFER_USAGE_TRANSFER_DST_BIT, true,
                     &readback);
   uint8_t *px = pixels.map;
   for (int y = 0; y < (int)OF_SIZE; y++) {
      for (int x = 0; x < (int)OF_SIZE; x++) {
         px[y * OF_SIZE + x] = of_texel(x, y);
         px[OF_SIZE * OF_SIZE + y * OF_SIZE + x] = of_texel(x - OF_DX, y - OF_DY);
      }
   }
   vkt_buffer_flush(&ctx, &pixels);
   VkCommandBuffer cmd = vkt_cmd_begin(&ctx);
   const VkImage images[3] = { input.image, reference.image, flow.image };
   for (unsigned i = 0; i < 3; i++)
      image_barrier(cmd, images[i], VK_IMAGE_LAYOUT_UNDEFINED, VK_IMAGE_LAYOUT_GENERAL,
                    VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT, 0, VK_PIPELINE_STAGE_TRANSFER_BIT,
                    VK_ACCESS_TRANSFER_WRITE_BIT);
   for (unsigned i = 0; i < 2; i++) {
      const VkBufferImageCopy region = {
         .bufferOffset = (VkDeviceSize)i * OF_SIZE * OF_SIZE,
         .imageSubresource = { VK_IMAGE_ASPECT_COLOR_BIT, 0, 0, 1 },
         .imageExtent = { OF_SIZE, OF_SIZE, 1 },
      };
      vkCmdCopyBufferToImage(cmd, pixels.buffer, images[i], VK_IMAGE_LAYOUT_GENERAL, 1, &region);
   }
   vkt_cmd_submit_wait(&ctx, cmd);

   /* the engine, on its own queue */
   const VkOpticalFlowSessionCreateInfoNV session_info = {
      .sType = VK_STRUCTURE_TYPE_OPTICAL_FLOW_SESSION_CREATE_INFO_NV,
      .width = OF_SIZE,
      .height = OF_SIZE,
      .imageFormat = in_format,
      .flowVectorFormat = flow_format,
      .outputGridSize = grid_flag,
      .performanceLevel = VK_OPTICAL_FLOW_PERFORMANCE_LEVEL_SLOW_NV,
   };
   VkOpticalFlowSessionNV session;
   VKT_CHECK(create(ctx.device, &session_info, NULL, &session));
   VKT_CHECK(bind(ctx.device, session, VK_OPTICAL_FLOW_SESSION_BINDING_POINT_INPUT_NV,
                  input.view, VK_IMAGE_LAYOUT_GENERAL));
   VKT_CHECK(bind(ctx.device, session, VK_OPTICAL_FLOW_SESSION_BINDING_POINT_REFERENCE_NV,
                  reference.view, VK_IMAGE_LAYOUT_GENERAL));
   VKT_CHECK(bind(ctx.device, session, VK_OPTICAL_FLOW_SESSION_BINDING_POINT_FLOW_VECTOR_NV,
                  flow.view, VK_IMAGE_LAYOUT_GENERAL));
   const VkCommandPoolCreateInfo pool_info = {
      .sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO,
      .queueFamilyIndex = ctx.other_family,
   };
   VkCommandPool of_pool;
   VKT_CHECK(vkCreateCommandPool(ctx.device, &pool_info, NULL, &of_pool));
   VkCommandBuffer of_cmd = vkt_cmd_begin_pool(&ctx, of_pool);
   const VkOpticalFlowExecuteInfoNV exec_info = {
      .sType = VK_STRUCTURE_TYPE_OPTICAL_FLOW_EXECUTE_INFO_NV,
   };
   execute(of_cmd, session, &exec_info);
   VKT_CHECK(vkEndCommandBuffer(of_cmd));
   const VkFenceCreateInfo fence_info = { .sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO };
   VkFence fence;
   VKT_CHECK(vkCreateFence(ctx.device, &fence_info, NULL, &fence));
   const VkSubmitInfo submit = {
      .sType = VK_STRUCTURE_TYPE_SUBMIT_INFO,
      .commandBufferCount = 1,
      .pCommandBuffers = &of_cmd,
   };
   VKT_CHECK(vkQueueSubmit(ctx.other_queue, 1, &submit, fence));
   VKT_CHECK(vkWaitForFences(ctx.device, 1, &fence, VK_TRUE, 60ull * 1000000000ull));
   vkDestroyFence(ctx.device, fence, NULL);

   /* the flow vectors back */
   cmd = vkt_cmd_begin(&ctx);
   const VkMemoryBarrier after = {
      .sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER,
      .srcAccessMask = VK_ACCESS_MEMORY_WRITE_BIT,
      .dstAccessMask = VK_ACCESS_TRANSFER_READ_BIT,
   };
   vkCmdPipelineBarrier(cmd, VK_PIPELINE_STAGE_ALL_COMMANDS_BIT, VK_PIPELINE_STAGE_TRANSFER_BIT,
                        0, 1, &after, 0, NULL, 0, NULL);
   const VkBufferImageCopy out_region = {
      .imageSubresource = { VK_IMAGE_ASPECT_COLOR_BIT, 0, 0, 1 },
      .imageExtent = { fw, fh, 1 },
   };
   vkCmdCopyImageToBuffer(cmd, flow.image, VK_IMAGE_LAYOUT_GENERAL, readback.buffer, 1,
                          &out_region);
   barrier_to_host(cmd, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_ACCESS_TRANSFER_WRITE_BIT);
   vkt_cmd_submit_wait(&ctx, cmd);
   vkt_buffer_invalidate(&ctx, &readback);

   /* the median vector of the inner part (S10.5: 1/32 pixel) */
   const int16_t *v = readback.map;
   const uint32_t margin = 32 / grid;
   uint32_t n = 0;
   int16_t *xs = malloc(sizeof(int16_t) * fw * fh), *ys = malloc(sizeof(int16_t) * fw * fh);
   if (!xs || !ys)
      vkt_fail("out of memory");
   for (uint32_t y = margin; y + margin < fh; y++) {
      for (uint32_t x = margin; x + margin < fw; x++) {
         xs[n] = v[2 * (y * fw + x)];
         ys[n] = v[2 * (y * fw + x) + 1];
         n++;
      }
   }
   qsort(xs, n, sizeof(*xs), of_cmp_i16);
   qsort(ys, n, sizeof(*ys), of_cmp_i16);
   const double mx = xs[n / 2] / 32.0, my = ys[n / 2] / 32.0;
   free(xs);
   free(ys);
   /* (the engine's vectors point from the input to the reference, or
    * back: either sign, the same for both) */
   const double sign = mx < 0 ? -1.0 : 1.0;
   if (fabs(sign * mx - OF_DX) > 0.5 || fabs(sign * my - OF_DY) > 0.5)
      vkt_fail("median flow vector (%.2f, %.2f), expected (%d, %d) or its opposite", mx, my,
               OF_DX, OF_DY);
   printf(PROG ": optical-flow: OK: a %ux%u picture moved by (%d, %d): median flow vector "
          "(%.2f, %.2f) over %u vectors of a %ux%u grid\n", OF_SIZE, OF_SIZE, OF_DX, OF_DY, mx,
          my, n, grid, grid);

   destroy(ctx.device, session, NULL);
   vkDestroyCommandPool(ctx.device, of_pool, NULL);
   vkt_buffer_destroy(&ctx, &readback);
   vkt_buffer_destroy(&ctx, &pixels);
   image_destroy(&ctx, &flow);
   image_destroy(&ctx, &reference);
   image_destroy(&ctx, &input);
   vkt_context_finish(&ctx);
}
#endif

/* ---- VK_NV_cooperative_vector ------------------------------------------- */

#ifdef VK_NV_cooperative_vector
#define CV_ROWS 8u
#define CV_COLS 16u
#define CV_STRIDE16 (CV_COLS * 2u + 32u) /* padded rows */

/* The half-precision bits of x, which is a multiple of 1/4 below 512. */
static uint16_t
cv_half(float x)
{
   if (x == 0.0f)
      return 0;
   uint16_t sign = x < 0 ? 0x8000 : 0;
   float a = fabsf(x);
   int e = 0;
   while (a >= 2.0f) {
      a /= 2.0f;
      e++;
   }
   while (a < 1.0f) {
      a *= 2.0f;
      e--;
   }
   return (uint16_t)(sign | (uint16_t)((e + 15) << 10) | (uint16_t)((a - 1.0f) * 1024.0f));
}

static float
cv_value(uint32_t r, uint32_t c)
{
   return (float)((int)(r * CV_COLS + c) - 60) * 0.25f;
}

/* A host conversion of src into dst (size asked first, then converted);
 * the size. */
static size_t
cv_convert(PFN_vkConvertCooperativeVectorMatrixNV convert, VkDevice device,
           VkConvertCooperativeVectorMatrixInfoNV *info, void *dst, size_t room)
{
   size_t size = 0;
   info->pDstSize = &size;
   info->dstData.hostAddress = NULL;
   VKT_CHECK(convert(device, info));
   if (!size || size > room)
      vkt_fail("a conversion wants %zu bytes (room %zu)", size, room);
   info->dstData.hostAddress = dst;
   VKT_CHECK(convert(device, info));
   return size;
}

static void
test_cooperative_vector(const char *device_name)
{
   struct vkt_context ctx;
   VkPhysicalDevice pdev = context_pick(&ctx, PROG ": cooperative-vector", device_name);
   if (!vkt_device_has_extension(pdev, VK_NV_COOPERATIVE_VECTOR_EXTENSION_NAME)) {
      printf(PROG ": cooperative-vector: SKIP: the device has no %s\n",
             VK_NV_COOPERATIVE_VECTOR_EXTENSION_NAME);
      vkDestroyInstance(ctx.instance, NULL);
      skipped++;
      return;
   }
   static const char *const exts[] = { VK_NV_COOPERATIVE_VECTOR_EXTENSION_NAME };
   VkPhysicalDeviceCooperativeVectorFeaturesNV want = {
      .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_VECTOR_FEATURES_NV,
      .cooperativeVector = VK_TRUE,
   };
   context_init_picked(&ctx, pdev, VKT_FEATURE_BUFFER_DEVICE_ADDRESS, exts, 1, &want);
   PFN_vkConvertCooperativeVectorMatrixNV convert = LOAD(&ctx, vkConvertCooperativeVectorMatrixNV);
   PFN_vkCmdConvertCooperativeVectorMatrixNV cmd_convert =
      LOAD(&ctx, vkCmdConvertCooperativeVectorMatrixNV);

   float src[CV_ROWS * CV_COLS];
   uint8_t want16[CV_ROWS * CV_STRIDE16];
   memset(want16, 0, sizeof(want16));
   for (uint32_t r = 0; r < CV_ROWS; r++) {
      for (uint32_t c = 0; c < CV_COLS; c++) {
         src[r * CV_COLS + c] = cv_value(r, c);
         uint16_t h = cv_half(cv_value(r, c));
         memcpy(&want16[r * CV_STRIDE16 + c * 2], &h, 2);
      }
   }
   /* 32-bit to 16-bit floats, row-major, on the host */
   VkConvertCooperativeVectorMatrixInfoNV info = {
      .sType = VK_STRUCTURE_TYPE_CONVERT_COOPERATIVE_VECTOR_MATRIX_INFO_NV,
      .srcSize = sizeof(src),
      .srcData.hostAddress = src,
      .srcComponentType = VK_COMPONENT_TYPE_FLOAT32_KHR,
      .dstComponentType = VK_COMPONENT_TYPE_FLOAT16_KHR,
      .numRows = CV_ROWS,
      .numColumns = CV_COLS,
      .srcLayout = VK_COOPERATIVE_VECTOR_MATRIX_LAYOUT_ROW_MAJOR_NV,
      .srcStride = CV_COLS * 4,
      .dstLayout = VK_COOPERATIVE_VECTOR_MATRIX_LAYOUT_ROW_MAJOR_NV,
      .dstStride = CV_STRIDE16,
   };
   uint8_t half[CV_ROWS * CV_STRIDE16 + 64];
   memset(half, 0, sizeof(half));
   const size_t half_size = cv_convert(convert, ctx.device, &info, half, sizeof(half));
   for (uint32_t r = 0; r < CV_ROWS; r++) {
      if (memcmp(&half[r * CV_STRIDE16], &want16[r * CV_STRIDE16], CV_COLS * 2))
         vkt_fail("row %u converted on the host differs from the CPU's half floats", r);
   }
   /* to the inferencing-optimal layout and back */
   uint8_t optimal[64 * 1024];
   VkConvertCooperativeVectorMatrixInfoNV to_opt = info;
   to_opt.srcSize = half_size;
   to_opt.srcData.hostAddress = half;
   to_opt.srcComponentType = VK_COMPONENT_TYPE_FLOAT16_KHR;
   to_opt.srcStride = CV_STRIDE16;
   to_opt.dstLayout = VK_COOPERATIVE_VECTOR_MATRIX_LAYOUT_INFERENCING_OPTIMAL_NV;
   to_opt.dstStride = 0;
   const size_t opt_size = cv_convert(convert, ctx.device, &to_opt, optimal, sizeof(optimal));
   uint8_t back[CV_ROWS * CV_STRIDE16 + 64];
   memset(back, 0, sizeof(back));
   VkConvertCooperativeVectorMatrixInfoNV from_opt = to_opt;
   from_opt.srcSize = opt_size;
   from_opt.srcData.hostAddress = optimal;
   from_opt.srcLayout = VK_COOPERATIVE_VECTOR_MATRIX_LAYOUT_INFERENCING_OPTIMAL_NV;
   from_opt.srcStride = 0;
   from_opt.dstLayout = VK_COOPERATIVE_VECTOR_MATRIX_LAYOUT_ROW_MAJOR_NV;
   from_opt.dstStride = CV_STRIDE16;
   cv_convert(convert, ctx.device, &from_opt, back, sizeof(back));
   for (uint32_t r = 0; r < CV_ROWS; r++) {
      if (memcmp(&back[r * CV_STRIDE16], &want16[r * CV_STRIDE16], CV_COLS * 2))
         vkt_fail("row %u after the optimal layout and back differs", r);
   }

   /* the first conversion again, by the device, between buffers */
   struct vkt_buffer sbuf, dbuf;
   address_buffer_usage(&ctx, sizeof(src), 0, &sbuf);
   address_buffer_usage(&ctx, half_size, 0, &dbuf);
   memcpy(sbuf.map, src, sizeof(src));
   memset(dbuf.map, 0, half_size);
   size_t dev_size = half_size;
   VkConvertCooperativeVectorMatrixInfoNV on_device = info;
   on_device.srcData.deviceAddress = address_of(&ctx, &sbuf);
   on_device.dstData.deviceAddress = address_of(&ctx, &dbuf);
   on_device.pDstSize = &dev_size;
   VkCommandBuffer cmd = vkt_cmd_begin(&ctx);
   cmd_convert(cmd, 1, &on_device);
   barrier_to_host(cmd, VK_PIPELINE_STAGE_ALL_COMMANDS_BIT, VK_ACCESS_MEMORY_WRITE_BIT);
   vkt_cmd_submit_wait(&ctx, cmd);
   for (uint32_t r = 0; r < CV_ROWS; r++) {
      if (memcmp((const uint8_t *)dbuf.map + r * CV_STRIDE16, &want16[r * CV_STRIDE16],
                 CV_COLS * 2))
         vkt_fail("row %u converted by the device differs from the CPU's half floats", r);
   }
   printf(PROG ": cooperative-vector: OK: an %ux%u matrix to half floats on the host (%zu "
          "bytes) and by the device, and to the inferencing-optimal layout (%zu bytes) and "
          "back\n", CV_ROWS, CV_COLS, half_size, opt_size);

   vkt_buffer_destroy(&ctx, &dbuf);
   vkt_buffer_destroy(&ctx, &sbuf);
   vkt_context_finish(&ctx);
}
#endif

/* ---- main --------------------------------------------------------------- */

static const struct {
   const char *name;
   void (*run)(const char *device_name);
} tests[] = {
   { "push", test_push },
   { "conditional", test_conditional },
   { "border", test_border },
   { "xfb", test_xfb },
   { "dynamic", test_dynamic },
   { "address", test_address },
#ifdef VK_EXT_descriptor_buffer
   { "descriptor-buffer", test_descriptor_buffer },
   { "descriptor-buffer-graphics", test_descriptor_buffer_graphics },
#endif
#ifdef VK_EXT_device_generated_commands
   { "dgc", test_dgc },
#endif
#ifdef VK_EXT_host_image_copy
   { "host-image-copy", test_host_copy },
#endif
#ifdef VK_EXT_mesh_shader
   { "mesh", test_mesh },
#endif
#ifdef VK_KHR_pipeline_binary
   { "pipeline-binary", test_pipeline_binary },
#endif
#ifdef VK_NV_optical_flow
   { "optical-flow", test_optical_flow },
#endif
#ifdef VK_NV_cooperative_vector
   { "cooperative-vector", test_cooperative_vector },
#endif
};

static void
usage(void)
{
   fprintf(stderr, "usage: vk_extensions [--device NAME] [--test NAME]...\n"
                   "tests:");
   for (unsigned i = 0; i < VKT_ARRAY_SIZE(tests); i++)
      fprintf(stderr, " %s", tests[i].name);
   fprintf(stderr, "\n");
   exit(1);
}

int
main(int argc, char **argv)
{
   const char *device_name = NULL;
   bool selected[VKT_ARRAY_SIZE(tests)] = { false };
   bool any_selected = false;

   vkt_set_prog(PROG);
   for (int i = 1; i < argc; i++) {
      if (!strcmp(argv[i], "--device") && i + 1 < argc) {
         device_name = argv[++i];
      } else if (!strcmp(argv[i], "--test") && i + 1 < argc) {
         const char *name = argv[++i];
         unsigned t;

         for (t = 0; t < VKT_ARRAY_SIZE(tests); t++)
            if (!strcmp(tests[t].name, name))
               break;
         if (t == VKT_ARRAY_SIZE(tests)) {
            fprintf(stderr, PROG ": no sub-test named '%s'\n", name);
            usage();
         }
         selected[t] = any_selected = true;
      } else {
         usage();
      }
   }

   unsigned run = 0;
   for (unsigned t = 0; t < VKT_ARRAY_SIZE(tests); t++) {
      if (any_selected && !selected[t])
         continue;
      tests[t].run(device_name);
      fflush(stdout);
      run++;
   }
   vkt_set_prog(PROG);
   printf(PROG ": OK: %u sub-test%s passed on '%s'", run - skipped,
          run - skipped == 1 ? "" : "s", device_used);
   if (skipped)
      printf(", %u skipped", skipped);
   printf("\n");
   return 0;
}
