/* SPDX-License-Identifier: MIT */
/*
 * vk_render: an offscreen scene drawn twice, once through a classic
 * VkRenderPass with a resolve attachment and once with dynamic rendering
 * (vkCmdBeginRendering + resolveImageView), each into a 4x MSAA colour
 * attachment with a 4x depth attachment, resolved to a single-sample image.
 *
 * The scene (clip space, y down), drawn with vertex + index buffers:
 *   B  near (z 0.25), solid green, drawn first
 *   A  middle (z 0.5), textured with a procedural 32x32 texture uploaded
 *      through a staging buffer (vkCmdCopyBufferToImage, padded rows),
 *      nearest sampling through a combined image sampler
 *   C  far (z 0.75), solid magenta, drawn last
 * so the depth test, not the draw order, decides where they overlap.
 *
 * Every pixel whose value is unambiguous (all sample positions covered by the
 * same triangle and, for A, the same texel) is checked against a CPU
 * reference; the two passes must also be identical. With --output FILE both
 * resolved images are written as one PAM file (RGBA, the render-pass image on
 * top, the dynamic-rendering image below), for comparing drivers byte for
 * byte.
 *
 *   vk_render [--device NAME] [--output FILE]
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vkt_common.h"
#include "render_vert_spv.h"
#include "render_frag_spv.h"

#define WIDTH 128
#define HEIGHT 96
#define SAMPLES VK_SAMPLE_COUNT_4_BIT
#define COLOR_FORMAT VK_FORMAT_R8G8B8A8_UNORM
#define TEX_SIZE 32
#define TEX_ROW_LENGTH 40          /* staging rows are padded to 40 texels */
#define TEX_STAGING_OFFSET 256
#define INDEX_OFFSET 512           /* indices live after the vertices */

static const float clear_color[4] = { 0.0f, 0.2f, 0.4f, 1.0f };
static const uint8_t clear_rgba[4] = { 0, 51, 102, 255 };

struct vertex {
   float pos[3];
   float color[3];
   float uv[2];
   float tex_weight;
};

enum { TRI_A, TRI_B, TRI_C, TRI_COUNT };

static const struct vertex vertices[TRI_COUNT * 3] = {
   /* A: textured, middle depth */
   { { -0.9f, -0.9f, 0.5f }, { 1, 1, 1 }, { 0, 0 }, 1 },
   { { 0.9f, -0.9f, 0.5f }, { 1, 1, 1 }, { 1, 0 }, 1 },
   { { -0.9f, 0.9f, 0.5f }, { 1, 1, 1 }, { 0, 1 }, 1 },
   /* B: green, near */
   { { -0.2f, -0.6f, 0.25f }, { 0, 1, 0 }, { 0, 0 }, 0 },
   { { 0.8f, 0.5f, 0.25f }, { 0, 1, 0 }, { 0, 0 }, 0 },
   { { -0.6f, 0.7f, 0.25f }, { 0, 1, 0 }, { 0, 0 }, 0 },
   /* C: magenta, far */
   { { 0.0f, -0.95f, 0.75f }, { 1, 0, 1 }, { 0, 0 }, 0 },
   { { 0.95f, -0.95f, 0.75f }, { 1, 0, 1 }, { 0, 0 }, 0 },
   { { 0.95f, 0.3f, 0.75f }, { 1, 0, 1 }, { 0, 0 }, 0 },
};

/* Draw order: B (first draw), then A and C (second draw). */
static const uint16_t indices[] = { 3, 4, 5, 0, 1, 2, 6, 7, 8 };

static void
texel(uint32_t x, uint32_t y, uint8_t rgba[4])
{
   rgba[0] = (uint8_t)(x * 8);
   rgba[1] = (uint8_t)(y * 8);
   rgba[2] = ((x / 4 + y / 4) & 1) ? 255 : 0;
   rgba[3] = 255;
}

/* ---- CPU reference ---------------------------------------------------- */

struct point {
   double x, y;
};

static struct point
to_pixels(const struct vertex *v)
{
   return (struct point){ (v->pos[0] + 1.0) * WIDTH / 2.0,
                          (v->pos[1] + 1.0) * HEIGHT / 2.0 };
}

static double
edge(struct point a, struct point b, struct point p)
{
   return (b.x - a.x) * (p.y - a.y) - (b.y - a.y) * (p.x - a.x);
}

/*
 * Coverage of triangle `tri` at p: 1 inside, 0 outside, -1 too close to an
 * edge to tell. Barycentric weights of the vertices go to w.
 */
static int
covers(int tri, struct point p, double w[3])
{
   const struct vertex *v = &vertices[tri * 3];
   struct point a = to_pixels(&v[0]), b = to_pixels(&v[1]),
                c = to_pixels(&v[2]);
   double area = edge(a, b, c);
   double e[3] = { edge(b, c, p), edge(c, a, p), edge(a, b, p) };
   double len[3] = { hypot(c.x - b.x, c.y - b.y), hypot(a.x - c.x, a.y - c.y),
                     hypot(b.x - a.x, b.y - a.y) };
   int inside = 1;

   for (int i = 0; i < 3; i++) {
      double dist = e[i] / len[i] * (area > 0 ? 1 : -1);

      if (fabs(dist) < 0.05)
         return -1;
      if (dist < 0)
         inside = 0;
      w[i] = e[i] / area;
   }
   return inside;
}

enum pixel_kind {
   KIND_AMBIGUOUS = -1,
   KIND_BACKGROUND = TRI_COUNT,
};

/*
 * Expected colour of pixel (x, y) when every sample position and the centre
 * agree on it; the winning triangle (or KIND_BACKGROUND) is returned, and a
 * bitmask of the triangles covering the pixel goes to *covered.
 */
static int
reference_pixel(int x, int y, uint8_t rgba[4], unsigned *covered)
{
   /* Pixel centre and the standard 4x sample locations. */
   static const double pos[5][2] = {
      { 0.5, 0.5 }, { 0.375, 0.125 }, { 0.875, 0.375 }, { 0.125, 0.625 },
      { 0.625, 0.875 },
   };
   int result = KIND_AMBIGUOUS;
   int tx = -1, ty = -1;

   *covered = 0;
   for (int s = 0; s < 5; s++) {
      struct point p = { x + pos[s][0], y + pos[s][1] };
      int winner = KIND_BACKGROUND;
      double best_z = 1.0, w[3], winner_w[3] = { 0, 0, 0 };

      for (int tri = 0; tri < TRI_COUNT; tri++) {
         int c = covers(tri, p, w);

         if (c < 0)
            return KIND_AMBIGUOUS;
         if (!c)
            continue;
         *covered |= 1u << tri;
         if (vertices[tri * 3].pos[2] < best_z) {
            best_z = vertices[tri * 3].pos[2];
            winner = tri;
            memcpy(winner_w, w, sizeof(w));
         }
      }
      if (s > 0 && winner != result)
         return KIND_AMBIGUOUS;
      result = winner;

      if (winner == TRI_A) {
         const struct vertex *v = &vertices[TRI_A * 3];
         double u = 0, t = 0;

         for (int i = 0; i < 3; i++) {
            u += winner_w[i] * v[i].uv[0];
            t += winner_w[i] * v[i].uv[1];
         }
         u *= TEX_SIZE;
         t *= TEX_SIZE;
         if (fabs(u - round(u)) < 0.05 || fabs(t - round(t)) < 0.05)
            return KIND_AMBIGUOUS;
         if (s > 0 && ((int)floor(u) != tx || (int)floor(t) != ty))
            return KIND_AMBIGUOUS;
         tx = (int)floor(u);
         ty = (int)floor(t);
      }
   }

   if (result == KIND_BACKGROUND) {
      memcpy(rgba, clear_rgba, 4);
   } else if (result == TRI_A) {
      texel((uint32_t)tx, (uint32_t)ty, rgba);
   } else {
      const float *c = vertices[result * 3].color;
      for (int i = 0; i < 3; i++)
         rgba[i] = (uint8_t)lrintf(c[i] * 255.0f);
      rgba[3] = 255;
   }
   return result;
}

/* Checks one resolved image against the reference; returns the bad count. */
static unsigned
check_image(const char *what, const uint8_t *img)
{
   static const char *const kind_names[] = { "A (textured)", "B (green)",
                                             "C (magenta)", "background" };
   unsigned checked[TRI_COUNT + 1] = { 0 };
   unsigned b_over_a = 0, a_over_c = 0, bad = 0;

   for (int y = 0; y < HEIGHT; y++) {
      for (int x = 0; x < WIDTH; x++) {
         const uint8_t *got = &img[(y * WIDTH + x) * 4];
         uint8_t want[4];
         unsigned covered;
         int kind = reference_pixel(x, y, want, &covered);

         if (kind == KIND_AMBIGUOUS)
            continue;
         checked[kind]++;
         if (kind == TRI_B && (covered & (1u << TRI_A)))
            b_over_a++;
         if (kind == TRI_A && (covered & (1u << TRI_C)))
            a_over_c++;

         for (int i = 0; i < 4; i++) {
            if (abs((int)got[i] - (int)want[i]) <= 1)
               continue;
            if (bad < 10)
               fprintf(stderr,
                       "vk_render: %s: pixel (%d,%d) [%s]: got "
                       "%u,%u,%u,%u expected %u,%u,%u,%u\n",
                       what, x, y, kind_names[kind], got[0], got[1], got[2],
                       got[3], want[0], want[1], want[2], want[3]);
            bad++;
            break;
         }
      }
   }

   printf("vk_render: %s: checked background %u, A %u, B %u, C %u, "
          "B over A %u, A over C %u pixels; %u wrong\n",
          what, checked[KIND_BACKGROUND], checked[TRI_A], checked[TRI_B],
          checked[TRI_C], b_over_a, a_over_c, bad);

   /* The scene is built so that each case covers many pixels. */
   for (int k = 0; k <= TRI_COUNT; k++)
      if (checked[k] < 100)
         vkt_fail("%s: only %u checkable pixels of %s (reference broken?)",
                  what, checked[k], kind_names[k]);
   if (b_over_a < 100 || a_over_c < 100)
      vkt_fail("%s: too few overlap pixels (reference broken?)", what);
   return bad;
}

/* ---- Vulkan objects ----------------------------------------------------- */

struct image {
   VkImage image;
   VkDeviceMemory memory;
   VkImageView view;
};

static void
image_create(const struct vkt_context *ctx, VkFormat format,
             VkSampleCountFlagBits samples, VkImageUsageFlags usage,
             VkImageAspectFlags aspect, uint32_t width, uint32_t height,
             struct image *img)
{
   const VkImageCreateInfo info = {
      .sType = VK_STRUCTURE_TYPE_IMAGE_CREATE_INFO,
      .imageType = VK_IMAGE_TYPE_2D,
      .format = format,
      .extent = { width, height, 1 },
      .mipLevels = 1,
      .arrayLayers = 1,
      .samples = samples,
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
      .format = format,
      .subresourceRange = { aspect, 0, 1, 0, 1 },
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

static void
image_barrier(VkCommandBuffer cmd, VkImage image, VkImageAspectFlags aspect,
              VkImageLayout old_layout, VkImageLayout new_layout,
              VkPipelineStageFlags src_stage, VkAccessFlags src_access,
              VkPipelineStageFlags dst_stage, VkAccessFlags dst_access)
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
      .subresourceRange = { aspect, 0, 1, 0, 1 },
   };
   vkCmdPipelineBarrier(cmd, src_stage, dst_stage, 0, 0, NULL, 0, NULL, 1,
                        &barrier);
}

/* One MSAA colour + depth target and its resolve image. */
struct target {
   struct image color, depth, resolve;
};

static VkImageAspectFlags
depth_aspect(VkFormat format)
{
   switch (format) {
   case VK_FORMAT_D16_UNORM_S8_UINT:
   case VK_FORMAT_D24_UNORM_S8_UINT:
   case VK_FORMAT_D32_SFLOAT_S8_UINT:
      return VK_IMAGE_ASPECT_DEPTH_BIT | VK_IMAGE_ASPECT_STENCIL_BIT;
   default:
      return VK_IMAGE_ASPECT_DEPTH_BIT;
   }
}

static void
target_create(const struct vkt_context *ctx, VkFormat depth_format,
              struct target *t)
{
   image_create(ctx, COLOR_FORMAT, SAMPLES,
                VK_IMAGE_USAGE_COLOR_ATTACHMENT_BIT,
                VK_IMAGE_ASPECT_COLOR_BIT, WIDTH, HEIGHT, &t->color);
   image_create(ctx, depth_format, SAMPLES,
                VK_IMAGE_USAGE_DEPTH_STENCIL_ATTACHMENT_BIT,
                depth_aspect(depth_format), WIDTH, HEIGHT, &t->depth);
   image_create(ctx, COLOR_FORMAT, VK_SAMPLE_COUNT_1_BIT,
                VK_IMAGE_USAGE_COLOR_ATTACHMENT_BIT |
                   VK_IMAGE_USAGE_TRANSFER_SRC_BIT,
                VK_IMAGE_ASPECT_COLOR_BIT, WIDTH, HEIGHT, &t->resolve);
}

static void
target_destroy(const struct vkt_context *ctx, struct target *t)
{
   image_destroy(ctx, &t->resolve);
   image_destroy(ctx, &t->depth);
   image_destroy(ctx, &t->color);
}

static VkFormat
pick_depth_format(const struct vkt_context *ctx)
{
   static const VkFormat candidates[] = {
      VK_FORMAT_D32_SFLOAT, VK_FORMAT_X8_D24_UNORM_PACK32,
      VK_FORMAT_D24_UNORM_S8_UINT, VK_FORMAT_D16_UNORM,
   };

   for (unsigned i = 0; i < VKT_ARRAY_SIZE(candidates); i++) {
      VkFormatProperties props;

      vkGetPhysicalDeviceFormatProperties(ctx->physical_device, candidates[i],
                                          &props);
      if (props.optimalTilingFeatures &
          VK_FORMAT_FEATURE_DEPTH_STENCIL_ATTACHMENT_BIT)
         return candidates[i];
   }
   vkt_fail("no depth attachment format");
}

static VkPipeline
pipeline_create(const struct vkt_context *ctx, VkPipelineLayout layout,
                VkShaderModule vs, VkShaderModule fs, VkRenderPass render_pass,
                VkFormat depth_format)
{
   const VkPipelineShaderStageCreateInfo stages[] = {
      vkt_shader_stage(VK_SHADER_STAGE_VERTEX_BIT, vs),
      vkt_shader_stage(VK_SHADER_STAGE_FRAGMENT_BIT, fs),
   };
   const VkVertexInputBindingDescription binding = {
      0, sizeof(struct vertex), VK_VERTEX_INPUT_RATE_VERTEX
   };
   const VkVertexInputAttributeDescription attributes[] = {
      { 0, 0, VK_FORMAT_R32G32B32_SFLOAT, offsetof(struct vertex, pos) },
      { 1, 0, VK_FORMAT_R32G32B32_SFLOAT, offsetof(struct vertex, color) },
      { 2, 0, VK_FORMAT_R32G32_SFLOAT, offsetof(struct vertex, uv) },
      { 3, 0, VK_FORMAT_R32_SFLOAT, offsetof(struct vertex, tex_weight) },
   };
   const VkPipelineVertexInputStateCreateInfo vertex_input = {
      .sType = VK_STRUCTURE_TYPE_PIPELINE_VERTEX_INPUT_STATE_CREATE_INFO,
      .vertexBindingDescriptionCount = 1,
      .pVertexBindingDescriptions = &binding,
      .vertexAttributeDescriptionCount = VKT_ARRAY_SIZE(attributes),
      .pVertexAttributeDescriptions = attributes,
   };
   const VkPipelineDepthStencilStateCreateInfo depth = {
      .sType = VK_STRUCTURE_TYPE_PIPELINE_DEPTH_STENCIL_STATE_CREATE_INFO,
      .depthTestEnable = VK_TRUE,
      .depthWriteEnable = VK_TRUE,
      .depthCompareOp = VK_COMPARE_OP_LESS,
   };
   /* the viewport and scissor dynamic */
   const struct vkt_graphics g = {
      .stages = stages,
      .n_stages = VKT_ARRAY_SIZE(stages),
      .layout = layout,
      .render_pass = render_pass,
      .color_format = COLOR_FORMAT,
      .depth_format = depth_format,
      .vertex_input = &vertex_input,
      .samples = SAMPLES,
      .depth = &depth,
   };
   return vkt_graphics_pipeline(ctx, &g);
}

/* The classic pass uses the *2 entry points (vk_sync covers the others). */
static VkRenderPass
render_pass_create(const struct vkt_context *ctx, VkFormat depth_format)
{
   const VkAttachmentDescription2 attachments[] = {
      {
         .sType = VK_STRUCTURE_TYPE_ATTACHMENT_DESCRIPTION_2,
         /* 0: MSAA colour */
         .format = COLOR_FORMAT,
         .samples = SAMPLES,
         .loadOp = VK_ATTACHMENT_LOAD_OP_CLEAR,
         .storeOp = VK_ATTACHMENT_STORE_OP_DONT_CARE,
         .stencilLoadOp = VK_ATTACHMENT_LOAD_OP_DONT_CARE,
         .stencilStoreOp = VK_ATTACHMENT_STORE_OP_DONT_CARE,
         .initialLayout = VK_IMAGE_LAYOUT_UNDEFINED,
         .finalLayout = VK_IMAGE_LAYOUT_COLOR_ATTACHMENT_OPTIMAL,
      },
      {
         .sType = VK_STRUCTURE_TYPE_ATTACHMENT_DESCRIPTION_2,
         /* 1: MSAA depth */
         .format = depth_format,
         .samples = SAMPLES,
         .loadOp = VK_ATTACHMENT_LOAD_OP_CLEAR,
         .storeOp = VK_ATTACHMENT_STORE_OP_DONT_CARE,
         .stencilLoadOp = VK_ATTACHMENT_LOAD_OP_DONT_CARE,
         .stencilStoreOp = VK_ATTACHMENT_STORE_OP_DONT_CARE,
         .initialLayout = VK_IMAGE_LAYOUT_UNDEFINED,
         .finalLayout = VK_IMAGE_LAYOUT_DEPTH_STENCIL_ATTACHMENT_OPTIMAL,
      },
      {
         .sType = VK_STRUCTURE_TYPE_ATTACHMENT_DESCRIPTION_2,
         /* 2: single-sample resolve target */
         .format = COLOR_FORMAT,
         .samples = VK_SAMPLE_COUNT_1_BIT,
         .loadOp = VK_ATTACHMENT_LOAD_OP_DONT_CARE,
         .storeOp = VK_ATTACHMENT_STORE_OP_STORE,
         .stencilLoadOp = VK_ATTACHMENT_LOAD_OP_DONT_CARE,
         .stencilStoreOp = VK_ATTACHMENT_STORE_OP_DONT_CARE,
         .initialLayout = VK_IMAGE_LAYOUT_UNDEFINED,
         .finalLayout = VK_IMAGE_LAYOUT_TRANSFER_SRC_OPTIMAL,
      },
   };
   const VkAttachmentReference2 color_ref = {
      VK_STRUCTURE_TYPE_ATTACHMENT_REFERENCE_2, NULL, 0,
      VK_IMAGE_LAYOUT_COLOR_ATTACHMENT_OPTIMAL, VK_IMAGE_ASPECT_COLOR_BIT
   };
   const VkAttachmentReference2 depth_ref = {
      VK_STRUCTURE_TYPE_ATTACHMENT_REFERENCE_2, NULL, 1,
      VK_IMAGE_LAYOUT_DEPTH_STENCIL_ATTACHMENT_OPTIMAL, depth_aspect(depth_format)
   };
   const VkAttachmentReference2 resolve_ref = {
      VK_STRUCTURE_TYPE_ATTACHMENT_REFERENCE_2, NULL, 2,
      VK_IMAGE_LAYOUT_COLOR_ATTACHMENT_OPTIMAL, VK_IMAGE_ASPECT_COLOR_BIT
   };
   const VkSubpassDescription2 subpass = {
      .sType = VK_STRUCTURE_TYPE_SUBPASS_DESCRIPTION_2,
      .pipelineBindPoint = VK_PIPELINE_BIND_POINT_GRAPHICS,
      .colorAttachmentCount = 1,
      .pColorAttachments = &color_ref,
      .pResolveAttachments = &resolve_ref,
      .pDepthStencilAttachment = &depth_ref,
   };
   const VkSubpassDependency2 dependencies[] = {
      {
         .sType = VK_STRUCTURE_TYPE_SUBPASS_DEPENDENCY_2,
         .srcSubpass = VK_SUBPASS_EXTERNAL,
         .dstSubpass = 0,
         .srcStageMask = VK_PIPELINE_STAGE_COLOR_ATTACHMENT_OUTPUT_BIT |
                         VK_PIPELINE_STAGE_EARLY_FRAGMENT_TESTS_BIT |
                         VK_PIPELINE_STAGE_LATE_FRAGMENT_TESTS_BIT,
         .dstStageMask = VK_PIPELINE_STAGE_COLOR_ATTACHMENT_OUTPUT_BIT |
                         VK_PIPELINE_STAGE_EARLY_FRAGMENT_TESTS_BIT |
                         VK_PIPELINE_STAGE_LATE_FRAGMENT_TESTS_BIT,
         .srcAccessMask = 0,
         .dstAccessMask = VK_ACCESS_COLOR_ATTACHMENT_WRITE_BIT |
                          VK_ACCESS_DEPTH_STENCIL_ATTACHMENT_WRITE_BIT,
      },
      {
         .sType = VK_STRUCTURE_TYPE_SUBPASS_DEPENDENCY_2,
         .srcSubpass = 0,
         .dstSubpass = VK_SUBPASS_EXTERNAL,
         .srcStageMask = VK_PIPELINE_STAGE_COLOR_ATTACHMENT_OUTPUT_BIT,
         .dstStageMask = VK_PIPELINE_STAGE_TRANSFER_BIT,
         .srcAccessMask = VK_ACCESS_COLOR_ATTACHMENT_WRITE_BIT,
         .dstAccessMask = VK_ACCESS_TRANSFER_READ_BIT,
      },
   };
   const VkRenderPassCreateInfo2 info = {
      .sType = VK_STRUCTURE_TYPE_RENDER_PASS_CREATE_INFO_2,
      .attachmentCount = VKT_ARRAY_SIZE(attachments),
      .pAttachments = attachments,
      .subpassCount = 1,
      .pSubpasses = &subpass,
      .dependencyCount = VKT_ARRAY_SIZE(dependencies),
      .pDependencies = dependencies,
   };
   VkRenderPass render_pass;

   VKT_CHECK(vkCreateRenderPass2(ctx->device, &info, NULL, &render_pass));
   return render_pass;
}

/* Everything the scene's draws need, shared by both passes. */
struct scene {
   VkBuffer geometry;          /* vertices at 0, indices at INDEX_OFFSET */
   VkPipelineLayout layout;
   VkDescriptorSet set;
};

static void
draw_scene(VkCommandBuffer cmd, const struct scene *s, VkPipeline pipeline)
{
   const VkViewport viewport = { 0, 0, WIDTH, HEIGHT, 0.0f, 1.0f };
   const VkRect2D scissor = { { 0, 0 }, { WIDTH, HEIGHT } };
   const VkDeviceSize vb_offset = 0;

   vkCmdBindPipeline(cmd, VK_PIPELINE_BIND_POINT_GRAPHICS, pipeline);
   vkCmdSetViewport(cmd, 0, 1, &viewport);
   vkCmdSetScissor(cmd, 0, 1, &scissor);
   vkCmdBindDescriptorSets(cmd, VK_PIPELINE_BIND_POINT_GRAPHICS, s->layout, 0,
                           1, &s->set, 0, NULL);
   vkCmdBindVertexBuffers(cmd, 0, 1, &s->geometry, &vb_offset);
   vkCmdBindIndexBuffer(cmd, s->geometry, INDEX_OFFSET, VK_INDEX_TYPE_UINT16);
   vkCmdDrawIndexed(cmd, 3, 1, 0, 0, 0);   /* B */
   vkCmdDrawIndexed(cmd, 6, 1, 3, 0, 0);   /* A, then C */
}

static void
copy_to_buffer(VkCommandBuffer cmd, VkImage image, VkBuffer buffer,
               VkDeviceSize offset)
{
   const VkBufferImageCopy region = {
      .bufferOffset = offset,
      .imageSubresource = { VK_IMAGE_ASPECT_COLOR_BIT, 0, 0, 1 },
      .imageExtent = { WIDTH, HEIGHT, 1 },
   };
   const VkMemoryBarrier to_host = {
      .sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER,
      .srcAccessMask = VK_ACCESS_TRANSFER_WRITE_BIT,
      .dstAccessMask = VK_ACCESS_HOST_READ_BIT,
   };

   vkCmdCopyImageToBuffer(cmd, image, VK_IMAGE_LAYOUT_TRANSFER_SRC_OPTIMAL,
                          buffer, 1, &region);
   vkCmdPipelineBarrier(cmd, VK_PIPELINE_STAGE_TRANSFER_BIT,
                        VK_PIPELINE_STAGE_HOST_BIT, 0, 1, &to_host, 0, NULL, 0,
                        NULL);
}

static void
write_pam(const char *path, const uint8_t *rgba, int width, int height)
{
   FILE *f = fopen(path, "wb");

   if (!f)
      vkt_fail("cannot open %s for writing", path);
   fprintf(f, "P7\nWIDTH %d\nHEIGHT %d\nDEPTH 4\nMAXVAL 255\n"
              "TUPLTYPE RGB_ALPHA\nENDHDR\n", width, height);
   if (fwrite(rgba, 4, (size_t)width * height, f) != (size_t)width * height ||
       fclose(f) != 0)
      vkt_fail("cannot write %s", path);
}

int
main(int argc, char **argv)
{
   const char *device_name = NULL, *output = NULL;
   struct vkt_context ctx;

   vkt_set_prog("vk_render");
   for (int i = 1; i < argc; i++) {
      if (!strcmp(argv[i], "--device") && i + 1 < argc) {
         device_name = argv[++i];
      } else if (!strcmp(argv[i], "--output") && i + 1 < argc) {
         output = argv[++i];
      } else {
         fprintf(stderr, "usage: vk_render [--device NAME] [--output FILE]\n");
         return 1;
      }
   }

   vkt_context_init(&ctx, "vk_render", device_name,
                    VKT_FEATURE_DYNAMIC_RENDERING);

   const VkPhysicalDeviceLimits *limits = &ctx.props.limits;
   if (!(limits->framebufferColorSampleCounts & SAMPLES) ||
       !(limits->framebufferDepthSampleCounts & SAMPLES))
      vkt_fail("4x MSAA colour+depth attachments not supported");
   const VkFormat depth_format = pick_depth_format(&ctx);

   /* Geometry: vertices and indices in one host-visible buffer. */
   struct vkt_buffer geometry;
   vkt_buffer_create(&ctx, INDEX_OFFSET + sizeof(indices),
                     VK_BUFFER_USAGE_VERTEX_BUFFER_BIT |
                        VK_BUFFER_USAGE_INDEX_BUFFER_BIT,
                     true, &geometry);
   _Static_assert(sizeof(vertices) <= INDEX_OFFSET, "vertices overlap");
   memcpy(geometry.map, vertices, sizeof(vertices));
   memcpy((uint8_t *)geometry.map + INDEX_OFFSET, indices, sizeof(indices));
   vkt_buffer_flush(&ctx, &geometry);

   /* Texture: staging buffer with padded rows -> optimal image. */
   struct vkt_buffer staging;
   vkt_buffer_create(&ctx, TEX_STAGING_OFFSET + TEX_ROW_LENGTH * TEX_SIZE * 4,
                     VK_BUFFER_USAGE_TRANSFER_SRC_BIT, true, &staging);
   memset(staging.map, 0xcd, staging.size);   /* padding must not show */
   for (uint32_t y = 0; y < TEX_SIZE; y++)
      for (uint32_t x = 0; x < TEX_SIZE; x++)
         texel(x, y, (uint8_t *)staging.map + TEX_STAGING_OFFSET +
                        (y * TEX_ROW_LENGTH + x) * 4);
   vkt_buffer_flush(&ctx, &staging);

   struct image tex;
   image_create(&ctx, COLOR_FORMAT, VK_SAMPLE_COUNT_1_BIT,
                VK_IMAGE_USAGE_SAMPLED_BIT | VK_IMAGE_USAGE_TRANSFER_DST_BIT,
                VK_IMAGE_ASPECT_COLOR_BIT, TEX_SIZE, TEX_SIZE, &tex);

   VkCommandBuffer cmd = vkt_cmd_begin(&ctx);
   image_barrier(cmd, tex.image, VK_IMAGE_ASPECT_COLOR_BIT,
                 VK_IMAGE_LAYOUT_UNDEFINED,
                 VK_IMAGE_LAYOUT_TRANSFER_DST_OPTIMAL,
                 VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT, 0,
                 VK_PIPELINE_STAGE_TRANSFER_BIT,
                 VK_ACCESS_TRANSFER_WRITE_BIT);
   const VkBufferImageCopy upload = {
      .bufferOffset = TEX_STAGING_OFFSET,
      .bufferRowLength = TEX_ROW_LENGTH,
      .bufferImageHeight = TEX_SIZE,
      .imageSubresource = { VK_IMAGE_ASPECT_COLOR_BIT, 0, 0, 1 },
      .imageExtent = { TEX_SIZE, TEX_SIZE, 1 },
   };
   vkCmdCopyBufferToImage(cmd, staging.buffer, tex.image,
                          VK_IMAGE_LAYOUT_TRANSFER_DST_OPTIMAL, 1, &upload);
   image_barrier(cmd, tex.image, VK_IMAGE_ASPECT_COLOR_BIT,
                 VK_IMAGE_LAYOUT_TRANSFER_DST_OPTIMAL,
                 VK_IMAGE_LAYOUT_SHADER_READ_ONLY_OPTIMAL,
                 VK_PIPELINE_STAGE_TRANSFER_BIT, VK_ACCESS_TRANSFER_WRITE_BIT,
                 VK_PIPELINE_STAGE_FRAGMENT_SHADER_BIT,
                 VK_ACCESS_SHADER_READ_BIT);
   vkt_cmd_submit_wait(&ctx, cmd);

   const VkSamplerCreateInfo sampler_info = {
      .sType = VK_STRUCTURE_TYPE_SAMPLER_CREATE_INFO,
      .magFilter = VK_FILTER_NEAREST,
      .minFilter = VK_FILTER_NEAREST,
      .mipmapMode = VK_SAMPLER_MIPMAP_MODE_NEAREST,
      .addressModeU = VK_SAMPLER_ADDRESS_MODE_CLAMP_TO_EDGE,
      .addressModeV = VK_SAMPLER_ADDRESS_MODE_CLAMP_TO_EDGE,
      .addressModeW = VK_SAMPLER_ADDRESS_MODE_CLAMP_TO_EDGE,
      .maxLod = 0.0f,
      .borderColor = VK_BORDER_COLOR_FLOAT_TRANSPARENT_BLACK,
   };
   VkSampler sampler;
   VKT_CHECK(vkCreateSampler(ctx.device, &sampler_info, NULL, &sampler));

   /* Descriptor set with the combined image sampler. */
   const VkDescriptorSetLayoutBinding binding = {
      0, VK_DESCRIPTOR_TYPE_COMBINED_IMAGE_SAMPLER, 1,
      VK_SHADER_STAGE_FRAGMENT_BIT, NULL
   };
   const VkDescriptorSetLayoutCreateInfo set_layout_info = {
      .sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO,
      .bindingCount = 1,
      .pBindings = &binding,
   };
   VkDescriptorSetLayout set_layout;
   VKT_CHECK(vkCreateDescriptorSetLayout(ctx.device, &set_layout_info, NULL,
                                         &set_layout));
   VkDescriptorPool pool;
   struct scene scene = { .geometry = geometry.buffer };
   scene.set = vkt_descriptor_set(&ctx, set_layout, VK_DESCRIPTOR_TYPE_COMBINED_IMAGE_SAMPLER, 1,
                                  &pool);
   const VkDescriptorImageInfo image_info = {
      sampler, tex.view, VK_IMAGE_LAYOUT_SHADER_READ_ONLY_OPTIMAL
   };
   const VkWriteDescriptorSet write = {
      .sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET,
      .dstSet = scene.set,
      .dstBinding = 0,
      .descriptorCount = 1,
      .descriptorType = VK_DESCRIPTOR_TYPE_COMBINED_IMAGE_SAMPLER,
      .pImageInfo = &image_info,
   };
   vkUpdateDescriptorSets(ctx.device, 1, &write, 0, NULL);

   const VkPipelineLayoutCreateInfo layout_info = {
      .sType = VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO,
      .setLayoutCount = 1,
      .pSetLayouts = &set_layout,
   };
   VKT_CHECK(vkCreatePipelineLayout(ctx.device, &layout_info, NULL,
                                    &scene.layout));

   VkShaderModule vs =
      vkt_shader_module(&ctx, render_vert_spv, sizeof(render_vert_spv));
   VkShaderModule fs =
      vkt_shader_module(&ctx, render_frag_spv, sizeof(render_frag_spv));
   VkRenderPass render_pass = render_pass_create(&ctx, depth_format);
   VkPipeline pipeline_rp =
      pipeline_create(&ctx, scene.layout, vs, fs, render_pass, depth_format);
   VkPipeline pipeline_dyn = pipeline_create(&ctx, scene.layout, vs, fs,
                                             VK_NULL_HANDLE, depth_format);
   vkDestroyShaderModule(ctx.device, vs, NULL);
   vkDestroyShaderModule(ctx.device, fs, NULL);

   /* Both resolved images land in one readback buffer, one after the
    * other. */
   const VkDeviceSize image_bytes = WIDTH * HEIGHT * 4;
   struct vkt_buffer readback;
   vkt_buffer_create(&ctx, 2 * image_bytes, VK_BUFFER_USAGE_TRANSFER_DST_BIT,
                     true, &readback);
   memset(readback.map, 0, readback.size);
   vkt_buffer_flush(&ctx, &readback);

   const VkClearValue clears[] = {
      { .color = { .float32 = { clear_color[0], clear_color[1],
                                clear_color[2], clear_color[3] } } },
      { .depthStencil = { 1.0f, 0 } },
   };

   /* Pass 1: VkRenderPass with a resolve attachment. */
   struct target t1;
   target_create(&ctx, depth_format, &t1);
   const VkImageView fb_views[] = { t1.color.view, t1.depth.view,
                                    t1.resolve.view };
   const VkFramebufferCreateInfo fb_info = {
      .sType = VK_STRUCTURE_TYPE_FRAMEBUFFER_CREATE_INFO,
      .renderPass = render_pass,
      .attachmentCount = VKT_ARRAY_SIZE(fb_views),
      .pAttachments = fb_views,
      .width = WIDTH,
      .height = HEIGHT,
      .layers = 1,
   };
   VkFramebuffer framebuffer;
   VKT_CHECK(vkCreateFramebuffer(ctx.device, &fb_info, NULL, &framebuffer));

   cmd = vkt_cmd_begin(&ctx);
   const VkRenderPassBeginInfo rp_begin = {
      .sType = VK_STRUCTURE_TYPE_RENDER_PASS_BEGIN_INFO,
      .renderPass = render_pass,
      .framebuffer = framebuffer,
      .renderArea = { { 0, 0 }, { WIDTH, HEIGHT } },
      .clearValueCount = VKT_ARRAY_SIZE(clears),
      .pClearValues = clears,
   };
   const VkSubpassBeginInfo subpass_begin = {
      .sType = VK_STRUCTURE_TYPE_SUBPASS_BEGIN_INFO,
      .contents = VK_SUBPASS_CONTENTS_INLINE,
   };
   const VkSubpassEndInfo subpass_end = {.sType = VK_STRUCTURE_TYPE_SUBPASS_END_INFO};
   vkCmdBeginRenderPass2(cmd, &rp_begin, &subpass_begin);
   draw_scene(cmd, &scene, pipeline_rp);
   vkCmdEndRenderPass2(cmd, &subpass_end);
   copy_to_buffer(cmd, t1.resolve.image, readback.buffer, 0);
   vkt_cmd_submit_wait(&ctx, cmd);

   /* Pass 2: dynamic rendering with a resolve image. */
   struct target t2;
   target_create(&ctx, depth_format, &t2);
   cmd = vkt_cmd_begin(&ctx);
   image_barrier(cmd, t2.color.image, VK_IMAGE_ASPECT_COLOR_BIT,
                 VK_IMAGE_LAYOUT_UNDEFINED,
                 VK_IMAGE_LAYOUT_COLOR_ATTACHMENT_OPTIMAL,
                 VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT, 0,
                 VK_PIPELINE_STAGE_COLOR_ATTACHMENT_OUTPUT_BIT,
                 VK_ACCESS_COLOR_ATTACHMENT_WRITE_BIT);
   image_barrier(cmd, t2.resolve.image, VK_IMAGE_ASPECT_COLOR_BIT,
                 VK_IMAGE_LAYOUT_UNDEFINED,
                 VK_IMAGE_LAYOUT_COLOR_ATTACHMENT_OPTIMAL,
                 VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT, 0,
                 VK_PIPELINE_STAGE_COLOR_ATTACHMENT_OUTPUT_BIT,
                 VK_ACCESS_COLOR_ATTACHMENT_WRITE_BIT);
   image_barrier(cmd, t2.depth.image, depth_aspect(depth_format),
                 VK_IMAGE_LAYOUT_UNDEFINED,
                 VK_IMAGE_LAYOUT_DEPTH_STENCIL_ATTACHMENT_OPTIMAL,
                 VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT, 0,
                 VK_PIPELINE_STAGE_EARLY_FRAGMENT_TESTS_BIT |
                    VK_PIPELINE_STAGE_LATE_FRAGMENT_TESTS_BIT,
                 VK_ACCESS_DEPTH_STENCIL_ATTACHMENT_READ_BIT |
                    VK_ACCESS_DEPTH_STENCIL_ATTACHMENT_WRITE_BIT);
   const VkRenderingAttachmentInfo color_attachment = {
      .sType = VK_STRUCTURE_TYPE_RENDERING_ATTACHMENT_INFO,
      .imageView = t2.color.view,
      .imageLayout = VK_IMAGE_LAYOUT_COLOR_ATTACHMENT_OPTIMAL,
      .resolveMode = VK_RESOLVE_MODE_AVERAGE_BIT,
      .resolveImageView = t2.resolve.view,
      .resolveImageLayout = VK_IMAGE_LAYOUT_COLOR_ATTACHMENT_OPTIMAL,
      .loadOp = VK_ATTACHMENT_LOAD_OP_CLEAR,
      .storeOp = VK_ATTACHMENT_STORE_OP_DONT_CARE,
      .clearValue = clears[0],
   };
   const VkRenderingAttachmentInfo depth_attachment = {
      .sType = VK_STRUCTURE_TYPE_RENDERING_ATTACHMENT_INFO,
      .imageView = t2.depth.view,
      .imageLayout = VK_IMAGE_LAYOUT_DEPTH_STENCIL_ATTACHMENT_OPTIMAL,
      .resolveMode = VK_RESOLVE_MODE_NONE,
      .loadOp = VK_ATTACHMENT_LOAD_OP_CLEAR,
      .storeOp = VK_ATTACHMENT_STORE_OP_DONT_CARE,
      .clearValue = clears[1],
   };
   const VkRenderingInfo rendering = {
      .sType = VK_STRUCTURE_TYPE_RENDERING_INFO,
      .renderArea = { { 0, 0 }, { WIDTH, HEIGHT } },
      .layerCount = 1,
      .colorAttachmentCount = 1,
      .pColorAttachments = &color_attachment,
      .pDepthAttachment = &depth_attachment,
   };
   vkCmdBeginRendering(cmd, &rendering);
   draw_scene(cmd, &scene, pipeline_dyn);
   vkCmdEndRendering(cmd);
   image_barrier(cmd, t2.resolve.image, VK_IMAGE_ASPECT_COLOR_BIT,
                 VK_IMAGE_LAYOUT_COLOR_ATTACHMENT_OPTIMAL,
                 VK_IMAGE_LAYOUT_TRANSFER_SRC_OPTIMAL,
                 VK_PIPELINE_STAGE_COLOR_ATTACHMENT_OUTPUT_BIT,
                 VK_ACCESS_COLOR_ATTACHMENT_WRITE_BIT,
                 VK_PIPELINE_STAGE_TRANSFER_BIT, VK_ACCESS_TRANSFER_READ_BIT);
   copy_to_buffer(cmd, t2.resolve.image, readback.buffer, image_bytes);
   vkt_cmd_submit_wait(&ctx, cmd);

   vkt_buffer_invalidate(&ctx, &readback);
   const uint8_t *img_rp = readback.map;
   const uint8_t *img_dyn = img_rp + image_bytes;

   if (output)
      write_pam(output, img_rp, WIDTH, 2 * HEIGHT);

   unsigned bad = check_image("render pass", img_rp);
   bad += check_image("dynamic rendering", img_dyn);

   /* Same scene, same driver: the two paths must agree exactly. */
   for (unsigned i = 0; i < image_bytes; i++) {
      if (img_rp[i] != img_dyn[i]) {
         unsigned px = i / 4;
         fprintf(stderr, "vk_render: render pass and dynamic rendering "
                         "differ first at pixel (%u,%u)\n",
                 px % WIDTH, px / WIDTH);
         bad++;
         break;
      }
   }

   vkDestroyFramebuffer(ctx.device, framebuffer, NULL);
   target_destroy(&ctx, &t2);
   target_destroy(&ctx, &t1);
   vkt_buffer_destroy(&ctx, &readback);
   vkDestroyPipeline(ctx.device, pipeline_dyn, NULL);
   vkDestroyPipeline(ctx.device, pipeline_rp, NULL);
   vkDestroyRenderPass(ctx.device, render_pass, NULL);
   vkDestroyPipelineLayout(ctx.device, scene.layout, NULL);
   vkDestroyDescriptorPool(ctx.device, pool, NULL);
   vkDestroyDescriptorSetLayout(ctx.device, set_layout, NULL);
   vkDestroySampler(ctx.device, sampler, NULL);
   image_destroy(&ctx, &tex);
   vkt_buffer_destroy(&ctx, &staging);
   vkt_buffer_destroy(&ctx, &geometry);
   vkt_context_finish(&ctx);

   if (bad)
      vkt_fail("%u wrong pixels or differences (see above)", bad);
   printf("vk_render: OK on '%s'%s%s\n", ctx.props.deviceName,
          output ? ", wrote " : "", output ? output : "");
   return 0;
}
