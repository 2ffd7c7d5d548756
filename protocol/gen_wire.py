#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Generates gpud's Vulkan command stream from vk.xml.

Outputs (all into the build directory):
  wire_gen.h        op numbers, argument structs, prototypes, table hash
  wire_gen.c        struct and command encoders/decoders for both sides
  icd_gen.c         the ICD's default entrypoints and its name lookup table
  gpud_gen.c        the daemon's host dispatch table, default executors,
                    the op dispatcher and per-type destroy functions

Special cases are all listed in the tables below, each with its reason."""

import argparse
import hashlib
import json
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import vkxml  # noqa: E402
import xml.etree.ElementTree as ET  # noqa: E402

# --------------------------------------------------------------------------
# The tables: everything hand-decided lives here.

# Core versions carried on the wire: every Vulkan feature level of the
# registry (Gen fills it from vk.xml: VK_VERSION_1_0 to the newest).
CORE_VERSIONS = []

# Extensions are carried by default: every extension in vk.xml that is not
# for another platform nor provisional, whose commands and structures can
# all be put on the wire, and whose required extensions are carried.  Device
# extensions are advertised to applications where the host driver has them.
# These are not carried, each for its reason:
DISPLAY = 'the display hardware is the display server\'s: no direct display access'
WSI_NOT_YET = 'a window-system extension wsi/ does not implement'
DENIED_EXTENSIONS = {
    **{e: DISPLAY for e in (
        'VK_KHR_display', 'VK_KHR_display_swapchain', 'VK_KHR_get_display_properties2',
        'VK_EXT_display_surface_counter', 'VK_EXT_display_control',
        'VK_EXT_direct_mode_display', 'VK_EXT_acquire_drm_display', 'VK_NV_present_barrier')},
    **{e: WSI_NOT_YET for e in (
        'VK_KHR_shared_presentable_image', 'VK_EXT_swapchain_colorspace', 'VK_EXT_hdr_metadata',
        'VK_EXT_full_screen_exclusive', 'VK_GOOGLE_display_timing', 'VK_GOOGLE_surfaceless_query',
        'VK_AMD_display_native_hdr', 'VK_EXT_image_compression_control_swapchain',
        'VK_NV_present_metering')},
    # its commands name a swapchain, which is the ICD's own (wsi/): the
    # daemon has no such object (the 1.4.363 registry makes it depend on
    # VK_KHR_present_id, which denies it too)
    'VK_NV_low_latency2': WSI_NOT_YET,
    'VK_EXT_external_memory_host':
        'its host pointers are addresses in the application\'s process',
    'VK_EXT_validation_flags': 'a layer\'s',
    'VK_EXT_validation_features': 'a layer\'s',
    'VK_EXT_layer_settings': 'a layer\'s',
    'VK_KHR_portability_enumeration': 'the loader\'s',
    'VK_LUNARG_direct_driver_loading': 'the loader\'s',
    'VK_NV_glsl_shader': 'its modules are GLSL: only validated SPIR-V reaches the host',
    'VK_NV_external_memory_capabilities':
        'an instance extension the host may lack: the ICD\'s instance extensions are those it '
        'serves on every host',
}

# gpud's own commands, between the ICD and the daemon only: declared in
# gpud_commands.xml beside this script as vk.xml declares commands (the file
# says what they are).
PRIVATE_COMMANDS_XML = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                    'gpud_commands.xml')

# Window-system extensions: implemented in the application's process by
# wsi/ (linked into the ICD); none of their commands goes on the wire, none
# of their structures either.  Value: the VK_USE_PLATFORM_* define the ICD
# is built with for it, or None.
WSI_EXTENSIONS = {
    'VK_KHR_surface': None,
    'VK_KHR_xcb_surface': 'VK_USE_PLATFORM_XCB_KHR',
    'VK_KHR_xlib_surface': 'VK_USE_PLATFORM_XLIB_KHR',
    'VK_KHR_wayland_surface': 'VK_USE_PLATFORM_WAYLAND_KHR',
    'VK_EXT_headless_surface': None,
    'VK_KHR_get_surface_capabilities2': None,
    'VK_EXT_surface_maintenance1': None,
    'VK_KHR_surface_protected_capabilities': None,
    # (color spaces only; the surfaces offer sRGB's)
    'VK_EXT_swapchain_colorspace': None,
    'VK_KHR_swapchain': None,
    'VK_KHR_incremental_present': None,
    'VK_EXT_swapchain_maintenance1': None,
    'VK_KHR_swapchain_mutable_format': None,
    'VK_KHR_present_id': None,
    'VK_KHR_present_wait': None,
}

# Device extensions gpud implements itself: advertised whether the host has
# them or not (and enabled on the host only where it has them).
OWN_EXTENSIONS = {
    'VK_EXT_memory_budget': 'the budget is what gpud\'s limits leave the client',
    'VK_EXT_debug_marker': 'the ICD turns it into VK_EXT_debug_utils names and labels',
    'VK_KHR_deferred_host_operations':
        'the ICD runs each operation at once (VK_OPERATION_NOT_DEFERRED_KHR): icd/icd_deferred.c',
    'VK_EXT_map_memory_placed':
        'the ICD maps the memfd again at the application\'s address (icd/icd_memory.c)',
    # (which VK_EXT_map_memory_placed needs, where the host lacks it)
    'VK_KHR_map_memory2': 'the ICD maps the memfd itself (icd/icd_memory.c)',
}

# Commands the ICD answers alone: nothing goes on the wire.
CLIENT_ONLY = {
    'vkGetInstanceProcAddr': 'loader interface',
    'vkGetDeviceProcAddr': 'loader interface',
    'vkEnumerateInstanceExtensionProperties': 'the ICD decides its instance extensions',
    'vkEnumerateInstanceLayerProperties': 'ICDs expose no layers',
    'vkEnumerateInstanceVersion': 'the ICD decides its instance version',
    'vkEnumerateDeviceLayerProperties': 'ICDs expose no layers',
    'vkEnumeratePhysicalDeviceGroups': 'each daemon is one physical device in a group of its own',
    'vkMapMemory': 'host-visible memory is a memfd the client maps itself',
    'vkUnmapMemory': 'host-visible memory is a memfd the client maps itself',
    'vkCreateDescriptorUpdateTemplate': 'templates are applied in the ICD',
    'vkDestroyDescriptorUpdateTemplate': 'templates are applied in the ICD',
    'vkUpdateDescriptorSetWithTemplate':
        'the ICD turns template updates into vkUpdateDescriptorSets',
    'vkCmdPushDescriptorSetWithTemplateKHR':
        'the ICD turns template pushes into vkCmdPushDescriptorSetKHR',
    'vkCmdPushDescriptorSetWithTemplate2KHR':
        'the ICD turns template pushes into vkCmdPushDescriptorSet2KHR',
    'vkMapMemory2KHR': 'host-visible memory is a memfd the client maps itself',
    # host image copies: the pixels go through memory the ICD shares with
    # the worker (icd/icd_hostcopy.c), by vkCopy*GPUD
    'vkCopyMemoryToImageEXT': 'the ICD stages the pixels in memory it shares with the worker',
    'vkCopyImageToMemoryEXT': 'the ICD stages the pixels in memory it shares with the worker',
    'vkUnmapMemory2KHR': 'host-visible memory is a memfd the client maps itself',
    # VK_EXT_debug_utils and VK_EXT_debug_report: messengers and callbacks
    # live in the ICD, and the daemon sends the messages it has for a client
    # (validation, faults) to them.  Object names, tags and labels go to the
    # daemon (DEBUG_NAMES).
    'vkCreateDebugUtilsMessengerEXT': 'messengers call back into the application',
    'vkDestroyDebugUtilsMessengerEXT': 'messengers call back into the application',
    'vkSubmitDebugUtilsMessageEXT': 'messengers call back into the application',
    'vkCreateDebugReportCallbackEXT': 'callbacks call back into the application',
    'vkDestroyDebugReportCallbackEXT': 'callbacks call back into the application',
    'vkDebugReportMessageEXT': 'callbacks call back into the application',
    # VK_KHR_deferred_host_operations: no operation is ever deferred
    # (icd/icd_deferred.c); the commands that take one get VK_NULL_HANDLE
    **{c: 'deferred operations are the ICD\'s, and none is ever deferred' for c in (
        'vkCreateDeferredOperationKHR', 'vkDestroyDeferredOperationKHR',
        'vkGetDeferredOperationMaxConcurrencyKHR', 'vkGetDeferredOperationResultKHR',
        'vkDeferredOperationJoinKHR')},
    # VK_KHR_acceleration_structure's host commands read and write the
    # application's memory by host address: accelerationStructureHostCommands
    # is reported off (no host gpud serves has it), and they fail in the ICD
    **{c: 'accelerationStructureHostCommands is reported off' for c in (
        'vkBuildAccelerationStructuresKHR', 'vkCopyAccelerationStructureKHR',
        'vkCopyAccelerationStructureToMemoryKHR', 'vkCopyMemoryToAccelerationStructureKHR',
        'vkWriteAccelerationStructuresPropertiesKHR')},
    # VK_EXT_device_fault: the fault's arrays are sized by another
    # structure (pFaultCounts); the ICD asks with vkGetDeviceFaultInfoGPUD,
    # each array as bytes of its capacity (the structures hold no pointers)
    'vkGetDeviceFaultInfoEXT': 'the ICD asks with vkGetDeviceFaultInfoGPUD',
    # VK_KHR_pipeline_binary: a pipeline's create info travels in the pNext
    # of a VkPipelineCreateInfoKHR (no structure extends it) and the new
    # binaries come back inside an output structure; the ICD sends the
    # create info as what it is, and the binaries as an array of new
    # handles (icd/icd_objects.c)
    'vkCreatePipelineBinariesKHR':
        'the ICD asks with vkGetPipelineBinaryCountGPUD and vkCreatePipelineBinariesGPUD',
    'vkGetPipelineKeyKHR': 'the ICD asks with vkGetPipelineKeyGPUD',
    # VK_NV_device_diagnostic_checkpoints: a marker is the application's
    # pointer, which the driver only hands back: it travels as 64 bits
    'vkCmdSetCheckpointNV': 'the ICD records the marker as a value (vkCmdSetCheckpointGPUD)',
    'vkGetQueueCheckpointDataNV': 'the ICD asks with vkGetQueueCheckpointDataGPUD',
    'vkGetQueueCheckpointData2NV': 'the ICD asks with vkGetQueueCheckpointDataGPUD',
    # VK_NV_cooperative_vector's host conversion reads and writes the
    # application's memory: the matrices cross in the staging memory of
    # host image copies (icd/icd_hostcopy.c)
    'vkConvertCooperativeVectorMatrixNV':
        'the ICD converts through staging memory (vkConvertCooperativeVectorMatrixGPUD)',
    # VK_EXT_debug_marker is VK_EXT_debug_utils by other names
    'vkDebugMarkerSetObjectNameEXT': 'the ICD sends it as vkSetDebugUtilsObjectNameEXT',
    'vkDebugMarkerSetObjectTagEXT': 'the ICD sends it as vkSetDebugUtilsObjectTagEXT',
    'vkCmdDebugMarkerBeginEXT': 'the ICD records it as vkCmdBeginDebugUtilsLabelEXT',
    'vkCmdDebugMarkerEndEXT': 'the ICD records it as vkCmdEndDebugUtilsLabelEXT',
    'vkCmdDebugMarkerInsertEXT': 'the ICD records it as vkCmdInsertDebugUtilsLabelEXT',
}

# Commands the daemon runs where the host has them and skips where it has
# not: what they do is for tools, and changes nothing the device does.
HOST_OPTIONAL = {
    'vkSetDebugUtilsObjectNameEXT', 'vkSetDebugUtilsObjectTagEXT',
    'vkQueueBeginDebugUtilsLabelEXT', 'vkQueueEndDebugUtilsLabelEXT',
    'vkQueueInsertDebugUtilsLabelEXT', 'vkCmdBeginDebugUtilsLabelEXT',
    'vkCmdEndDebugUtilsLabelEXT', 'vkCmdInsertDebugUtilsLabelEXT',
}

# Handle types the ICD represents as pointers to its own objects (they hold
# client-side state).  Every other non-dispatchable handle's value is its id.
ICD_POINTER_HANDLES = {
    'VkInstance', 'VkPhysicalDevice', 'VkDevice', 'VkQueue', 'VkCommandBuffer',
    'VkDeviceMemory', 'VkCommandPool', 'VkDescriptorUpdateTemplate', 'VkFence', 'VkSemaphore',
    'VkEvent', 'VkQueryPool', 'VkDescriptorPool',
}

# Synchronous queries whose answer depends only on their arguments and the
# physical device (or the device they name): the ICD keeps each answer and
# asks once.  Every query of
# a physical device must be listed here or in UNCACHED.
CACHED = {
    'vkGetPhysicalDeviceProperties', 'vkGetPhysicalDeviceProperties2',
    'vkGetPhysicalDeviceFeatures', 'vkGetPhysicalDeviceFeatures2',
    'vkGetPhysicalDeviceQueueFamilyProperties', 'vkGetPhysicalDeviceQueueFamilyProperties2',
    'vkGetPhysicalDeviceMemoryProperties',
    'vkGetPhysicalDeviceFormatProperties', 'vkGetPhysicalDeviceFormatProperties2',
    'vkGetPhysicalDeviceImageFormatProperties', 'vkGetPhysicalDeviceImageFormatProperties2',
    'vkGetPhysicalDeviceSparseImageFormatProperties',
    'vkGetPhysicalDeviceSparseImageFormatProperties2',
    'vkGetPhysicalDeviceExternalBufferProperties', 'vkGetPhysicalDeviceExternalSemaphoreProperties',
    'vkGetPhysicalDeviceExternalFenceProperties', 'vkEnumerateDeviceExtensionProperties',
    'vkGetPhysicalDeviceMultisamplePropertiesEXT', 'vkGetPhysicalDeviceCalibrateableTimeDomainsEXT',
    'vkGetPhysicalDeviceCooperativeMatrixPropertiesNV',
    'vkEnumeratePhysicalDeviceQueueFamilyPerformanceQueryCountersKHR',
    'vkGetPhysicalDeviceQueueFamilyPerformanceQueryPassesKHR',
    'vkGetPhysicalDeviceSupportedFramebufferMixedSamplesCombinationsNV',
    'vkGetPhysicalDeviceFragmentShadingRatesKHR', 'vkGetPhysicalDeviceVideoCapabilitiesKHR',
    'vkGetPhysicalDeviceVideoFormatPropertiesKHR', 'vkGetPhysicalDeviceOpticalFlowImageFormatsNV',
    # (later registries)
    'vkGetPhysicalDeviceCalibrateableTimeDomainsKHR',
    'vkGetPhysicalDeviceVideoEncodeQualityLevelPropertiesKHR',
    'vkGetPhysicalDeviceCooperativeMatrixPropertiesKHR',
    'vkGetPhysicalDeviceCooperativeMatrixFlexibleDimensionsPropertiesNV',
    'vkGetPhysicalDeviceCooperativeMatrixProperties2EXT',
    'vkGetPhysicalDeviceCooperativeVectorPropertiesNV',
    # a device's memory requirements for a create info: the same whenever it
    # is asked (the spec says a resource created with it gets these)
    'vkGetDeviceBufferMemoryRequirements', 'vkGetDeviceImageMemoryRequirements',
    'vkGetDeviceImageSparseMemoryRequirements',
}
UNCACHED = {
    'vkCreateDevice': 'creates an object',
    'vkSetMessageFilterGPUD': 'sets what the daemon sends',
    'vkGetPhysicalDeviceMemoryProperties2': 'VkPhysicalDeviceMemoryBudgetPropertiesEXT changes',
    'vkGetPhysicalDeviceToolProperties': 'tools come and go with layers',
}

# The only commands that may hand shader code to the host: the daemon
# validates it first (daemon/worker/gpud_spirv.c).  Another carried command taking
# one of SHADER_CODE_STRUCTS stops the generator.
SPIRV_COMMANDS = {'vkCreateShaderModule', 'vkGetShaderModuleCreateInfoIdentifierEXT',
                  'vkCreateShadersEXT'}
# The structures that hold shader code.
SHADER_CODE_STRUCTS = ('VkShaderModuleCreateInfo', 'VkShaderCreateInfoEXT')
# Commands whose inputs may chain a VkShaderModuleCreateInfo (a pipeline
# stage's code in place of a module: VK_EXT_graphics_pipeline_library,
# VK_KHR_maintenance5): their executors check it as vkCreateShaderModule's
# does (daemon/worker/gpud_spirv.c).  Another command that can reach one
# stops the generator.
SPIRV_CHAIN_COMMANDS = {'vkCreateGraphicsPipelines', 'vkCreateComputePipelines',
                        'vkCreateRayTracingPipelinesNV', 'vkCreateRayTracingPipelinesKHR',
                        'vkGetPipelineIndirectMemoryRequirementsNV',
                        'vkGetPipelineBinaryCountGPUD', 'vkCreatePipelineBinariesGPUD',
                        'vkGetPipelineKeyGPUD'}

# Commands that still run on a device an asynchronous failure lost (every
# other one that can fail answers at once): what tells why it was lost.
RUN_ON_LOST_DEVICE = {'vkGetDeviceFaultInfoGPUD'}

# Calls that must reach the daemon before returning even though they return
# nothing the application reads.
FORCE_SYNC = set()

# Calls on a command buffer that end its recording: the ICD sends the last
# chunk of the recording, marked as the end (WIRE_CHUNK_END), instead of a
# command of their own.
SHIPS_RECORDING = {'vkEndCommandBuffer'}

# Calls on a command buffer that are not recorded into it (every other one
# is, and travels only in the recording's chunks: docs/protocol.md).
NOT_RECORDED = {
    'vkResetCommandBuffer':
        'a reset discards the recording: it goes on the connection, in order with the pool\'s',
    **{c: 'the last chunk says the recording ends' for c in SHIPS_RECORDING},
}

# Calls that return a VkResult but need not wait for it: the work is
# queued in order and a failure loses the device (every later call on it
# returns VK_ERROR_DEVICE_LOST), as a GPU fault would.
FORCE_ASYNC = {
    'vkQueueSubmit', 'vkQueueSubmit2', 'vkQueueBindSparse',
    # names and tags only fail for want of memory
    'vkSetDebugUtilsObjectNameEXT', 'vkSetDebugUtilsObjectTagEXT',
    # resets fail for want of memory only; a frame of Zink or of the WSI's
    # present thread makes several
    'vkResetFences', 'vkResetCommandPool',
    # the end of a recording fails for want of memory only (the ICD reports
    # its own running out at once); the application goes on recording the
    # next frame while the daemon replays this one
    'vkEndCommandBuffer',
    # host-side signals fail for want of memory only; the ICD sends them at
    # once (icd_fence.c) and a timeline value shows on the completion page
    # before the daemon has it
    'vkSetEvent', 'vkResetEvent', 'vkSignalSemaphore',
}

# Creates whose result the application cannot see before it uses the
# object: while the client is well inside its object limit (the ICD counts
# the objects it has: icd_connection_room) they are queued like asynchronous
# calls with the handle the ICD chose, and a host failure loses the device,
# as a failed submit does; near the limit they wait for their result, so
# the application sees the limit's VK_ERROR_OUT_OF_HOST_MEMORY as before.
# Value: the C condition (over the parameters) under which one may go
# without waiting (capture-replay creates can fail for reasons of their
# own).
ASYNC_CREATES = {
    'vkCreateBuffer': '!(pCreateInfo->flags & VK_BUFFER_CREATE_DEVICE_ADDRESS_CAPTURE_REPLAY_BIT)',
    'vkCreateBufferView': 'true',
    'vkCreateImageView': 'true',
    'vkCreateSampler': 'true',
    'vkCreateFramebuffer': 'true',
    'vkCreateDescriptorSetLayout': 'true',
    'vkCreatePipelineLayout': 'true',
    'vkCreateRenderPass': 'true',
    'vkCreateRenderPass2': 'true',
    'vkCreateSemaphore': 'true',
    'vkCreateFence': 'true',
    'vkCreateEvent': 'true',
    'vkCreateQueryPool': 'true',
    'vkCreateCommandPool': 'true',
    'vkCreateDescriptorPool': 'true',
}

# Commands the worker's decoding thread runs while replay lanes replay
# earlier chunks and earlier submissions wait for them (daemon/worker/gpud_replay.c):
# they make objects or read what no lane or waiting submission writes, and
# write only what none reads (a lane records into its pool's command
# buffers, reading the objects their commands name; a submission uses its
# queue, fences, semaphores and command buffers).  Every other command waits
# for the lanes and the submissions before it.  By prefix, then by name, then
# the exceptions with their reasons.
REPLAY_CONCURRENT_PREFIXES = ('vkCreate', 'vkGetPhysicalDevice', 'vkEnumerate',
                              'vkGetDevice', 'vkGetBuffer', 'vkGetImage', 'vkBind')
REPLAY_CONCURRENT = {
    'vkAllocateMemory': 'memory is no lane\'s until a buffer or image is bound to it',
    'vkAllocateDescriptorSets': 'lanes bind sets, never their pool',
    'vkUpdateDescriptorSets': 'a lane binding a set reads no descriptor (update-after-bind is the API\'s)',
    'vkResetFences': 'a fence a submission waits to use may not be reset (the API\'s rule)',
    'vkFlushMappedMemoryRanges': 'memory, not objects a lane reads',
    'vkInvalidateMappedMemoryRanges': 'memory, not objects a lane reads',
    'vkGetMemoryFdKHR': 'memory, not objects a lane reads',
    'vkGetMemoryFdPropertiesKHR': 'a query of the device',
    'vkGetPipelineCacheData': 'no lane uses a pipeline cache',
    'vkMergePipelineCaches': 'no lane uses a pipeline cache',
    'vkGetQueryPoolResults': 'recording a query command changes no result',
    'vkGetRenderAreaGranularity': 'a query of a render pass',
    'vkGetDescriptorSetLayoutSupport': 'a query of the device',
    'vkGetShaderModuleIdentifierEXT': 'a query of a module',
    'vkGetShaderModuleCreateInfoIdentifierEXT': 'a query of the device',
    'vkSetMessageFilterGPUD': 'the messengers\' filter',
    'vkGetCompletionPageGPUD': 'the page of a new device',
    'vkSetFenceSlotGPUD': 'the slot of a new fence',
    'vkSetSemaphoreSlotGPUD': 'the slot of a new semaphore',
    'vkSetEventSlotGPUD': 'the slot of a new event',
    'vkSetQueryPoolPageGPUD': 'the page of a new query pool',
}
REPLAY_NOT_CONCURRENT = {
    'vkGetDeviceMemoryCommitment': 'reads nothing a lane writes, but rarely matters: in order',
    'vkGetCalibratedTimestampsEXT': 'a time the application compares with its submissions\'',
}


def replay_concurrent(name):
    if name in REPLAY_NOT_CONCURRENT:
        return False
    return name in REPLAY_CONCURRENT or name.startswith(REPLAY_CONCURRENT_PREFIXES)


# Asynchronous calls after which the ICD sends what it has queued at once:
# the work they queue starts now, not at the application's next synchronous
# call (which may be a frame of CPU work away).
FLUSH_AFTER = {'vkQueueSubmit', 'vkQueueSubmit2', 'vkQueueBindSparse'}

# Struct members the API says are ignored under a condition; the ICD sends
# them as absent then (an application may leave them uninitialised), and the
# daemon accepts them absent.  Value: C condition over `s` for sending them.
CONDITIONAL_MEMBERS = {
    ('VkWriteDescriptorSet', 'pImageInfo'):
        'wire_enc_set_descriptor_type(e, s->descriptorType) && '
        'wire_descriptor_type_uses_image(s->descriptorType)',
    ('VkWriteDescriptorSet', 'pBufferInfo'): 'wire_descriptor_type_uses_buffer(s->descriptorType)',
    ('VkWriteDescriptorSet', 'pTexelBufferView'):
        'wire_descriptor_type_uses_texel_buffer(s->descriptorType)',
    ('VkDescriptorSetLayoutBinding', 'pImmutableSamplers'):
        'wire_descriptor_type_uses_sampler(s->descriptorType)',
    ('VkBufferCreateInfo', 'pQueueFamilyIndices'): 's->sharingMode == VK_SHARING_MODE_CONCURRENT',
    ('VkImageCreateInfo', 'pQueueFamilyIndices'): 's->sharingMode == VK_SHARING_MODE_CONCURRENT',
    ('VkGraphicsPipelineCreateInfo', 'pTessellationState'): 'wire_pipeline_has_tessellation(s)',
    ('VkGraphicsPipelineCreateInfo', 'basePipelineHandle'):
        '(s->flags & VK_PIPELINE_CREATE_DERIVATIVE_BIT)',
    ('VkComputePipelineCreateInfo', 'basePipelineHandle'):
        '(s->flags & VK_PIPELINE_CREATE_DERIVATIVE_BIT)',
    ('VkFramebufferCreateInfo', 'pAttachments'):
        '!(s->flags & VK_FRAMEBUFFER_CREATE_IMAGELESS_BIT)',
    ('VkRenderingAttachmentInfo', 'resolveImageView'): 's->resolveMode != VK_RESOLVE_MODE_NONE',
    ('VkRayTracingPipelineCreateInfoKHR', 'basePipelineHandle'):
        '(s->flags & VK_PIPELINE_CREATE_DERIVATIVE_BIT)',
    ('VkRayTracingPipelineCreateInfoNV', 'basePipelineHandle'):
        '(s->flags & VK_PIPELINE_CREATE_DERIVATIVE_BIT)',
    # the structure updated, in an update only
    ('VkAccelerationStructureBuildGeometryInfoKHR', 'srcAccelerationStructure'):
        's->mode == VK_BUILD_ACCELERATION_STRUCTURE_MODE_UPDATE_KHR',
    # An image info's sampler and view are used or not by the descriptor
    # type of the write being encoded (remembered in the encoder).
    ('VkDescriptorImageInfo', 'sampler'): 'wire_descriptor_type_uses_sampler(e->descriptor_type)',
    ('VkDescriptorImageInfo', 'imageView'):
        'e->descriptor_type != VK_DESCRIPTOR_TYPE_SAMPLER',
}

# Unions of a device address and a host address: only commands that run on
# the device are carried (the host ones are CLIENT_ONLY), and in them the
# union holds a device address, which travels as a number.  Value: the
# member carried.
ADDRESS_UNIONS = {
    'VkDeviceOrHostAddressKHR': 'deviceAddress',
    'VkDeviceOrHostAddressConstKHR': 'deviceAddress',
}

# Commands outside a command buffer that may take ADDRESS_UNIONS: the
# addresses are ignored.  Any other such command runs on the host, and is
# not carried.
ADDRESS_UNION_QUERIES = {
    'vkGetAccelerationStructureBuildSizesKHR': 'the spec says the addresses are ignored',
    'vkConvertCooperativeVectorMatrixGPUD':
        'the matrices are in the staging memory, at offsets of their own',
}

# Members that never travel: the daemon's host gets NULL.  Value: why.
DROPPED_MEMBERS = {
    # the pixels of a host image copy go through the staging memory the ICD
    # shares with the worker; the region's offset in it travels instead
    # (vkCopy*GPUD)
    ('VkMemoryToImageCopyEXT', 'pHostPointer'): 'the pixels go through the staging memory',
    ('VkImageToMemoryCopyEXT', 'pHostPointer'): 'the pixels go through the staging memory',
    ('VkRayTracingShaderGroupCreateInfoKHR', 'pShaderGroupCaptureReplayHandle'):
        'rayTracingPipelineShaderGroupHandleCaptureReplay is reported off, and vk.xml '
        'gives the handle no size',
}

# The codecs' own structures (video.xml) point at arrays whose lengths only
# their comments give (later registries give them as len= too).  Value: the
# C expression over the struct's members.
# A pointer of theirs at values (not a structure) that is not listed here has
# no length the ICD can know: the structure, and its extension, are not
# carried.
VIDEO_LENS = {
    ('StdVideoH264SequenceParameterSet', 'pOffsetForRefFrame'):
        'num_ref_frames_in_pic_order_cnt_cycle',
    ('StdVideoH265SequenceParameterSet', 'pShortTermRefPicSet'): 'num_short_term_ref_pic_sets',
    ('StdVideoAV1TileInfo', 'pMiColStarts'): 'TileCols',
    ('StdVideoAV1TileInfo', 'pMiRowStarts'): 'TileRows',
    ('StdVideoAV1TileInfo', 'pWidthInSbsMinus1'): 'TileCols',
    ('StdVideoAV1TileInfo', 'pHeightInSbsMinus1'): 'TileRows',
    ('StdVideoEncodeH264ReferenceListsInfo', 'pRefList0ModOperations'): 'refList0ModOpCount',
    ('StdVideoEncodeH264ReferenceListsInfo', 'pRefList1ModOperations'): 'refList1ModOpCount',
    ('StdVideoEncodeH264ReferenceListsInfo', 'pRefPicMarkingOperations'): 'refPicMarkingOpCount',
}

# The same outside video.xml: pointers at bytes whose length only the spec's
# text gives.
TEXT_LENS = {
    # (NVIDIA's own data for its optical flow sessions: size bytes)
    ('VkOpticalFlowSessionCreatePrivateDataInfoNV', 'pPrivateData'): 'size',
}

# An H.265 HRD's sub-layer arrays are as long as the parameter set that
# holds it has sub-layers (sps_ or vps_max_sub_layers_minus1 + 1): the
# encoder remembers that number while it encodes a parameter set
# (VIDEO_SUBLAYER_SETS), and the daemon gives the host arrays of the
# largest size, zeroes after those that came.  Value: that size.
VIDEO_SUBLAYER_ARRAYS = {
    ('StdVideoH265HrdParameters', 'pSubLayerHrdParametersNal'): 'STD_VIDEO_H265_SUBLAYERS_LIST_SIZE',
    ('StdVideoH265HrdParameters', 'pSubLayerHrdParametersVcl'): 'STD_VIDEO_H265_SUBLAYERS_LIST_SIZE',
}
VIDEO_SUBLAYER_SETS = {
    'StdVideoH265VideoParameterSet': 'vps_max_sub_layers_minus1',
    'StdVideoH265SequenceParameterSet': 'sps_max_sub_layers_minus1',
}

# Parameters that are arrays of pointers to arrays, whose inner lengths
# vk.xml does not give (the spec's text does).  Value: (the array parameter
# whose element i gives element i's length, its member that does); that
# array is decoded first, and must be as long.
NESTED_LENS = {
    ('vkCmdBuildAccelerationStructuresKHR', 'ppBuildRangeInfos'): ('pInfos', 'geometryCount'),
    ('vkCmdBuildAccelerationStructuresIndirectKHR', 'ppMaxPrimitiveCounts'):
        ('pInfos', 'geometryCount'),
}


def nested_len(key, prefix):
    """The C expression of element i's inner length (NESTED_LENS)."""
    array, member = NESTED_LENS[key]
    return f'{prefix}{array}[i].{member}'

# Conditions a decoded structure must meet beyond its members' own, over
# `s`: what a host driver would otherwise dereference blindly.
STRUCT_CHECKS = {
    'VkAccelerationStructureBuildGeometryInfoKHR': [
        ('s->geometryCount == 0 || (s->pGeometries == NULL) != (s->ppGeometries == NULL)',
         'exactly one of pGeometries and ppGeometries'),
    ],
    # (its key is an array of that size, and the host reads keySize bytes)
    'VkPipelineBinaryKeyKHR': [
        ('s->keySize <= VK_MAX_PIPELINE_BINARY_KEY_SIZE_KHR', 'keySize past the key'),
    ],
}

# File descriptors (vk.xml says only `int`): they travel beside the bytes
# with SCM_RIGHTS, named by index.  An fd the daemon receives is its own; it
# checks each before the host driver sees it (daemon/worker/gpud_external.c).
# Value: the C condition (over `s`) under which an input fd means something
# (else -1 is sent), or None.
FD_MEMBERS = {
    # a memory import of no handle type is no import
    ('VkImportMemoryFdInfoKHR', 'fd'): 's->handleType != 0',
    ('VkImportSemaphoreFdInfoKHR', 'fd'): None,
    ('VkImportFenceFdInfoKHR', 'fd'): None,
    ('vkGetMemoryFdPropertiesKHR', 'fd'): None,
    ('vkGetMemoryFdKHR', 'pFd'): None,
    ('vkGetSemaphoreFdKHR', 'pFd'): None,
    ('vkGetFenceFdKHR', 'pFd'): None,
    ('vkGetCompletionPageGPUD', 'pFd'): None,
    ('vkSetQueryPoolPageGPUD', 'fd'): None,
    ('vkGetHostCopyStagingGPUD', 'pFd'): None,
}

# Output pointers inside input structures: the host writes through them, the
# reply carries what it wrote back into the application's storage.
WRITEBACK_MEMBERS = {
    ('VkPipelineCreationFeedbackCreateInfo', 'pPipelineCreationFeedback'),
    ('VkPipelineCreationFeedbackCreateInfo', 'pPipelineStageCreationFeedbacks'),
}

# Structs the daemon never accepts in a client's pNext chain: they would
# make the host driver touch memory or fds the client chose, or bypass a
# check.
DENIED_STRUCTS = {
    'VkImportMemoryHostPointerInfoEXT',
    # Meaningful in the application's process only (a callback; a handle
    # value as the application sees it).
    'VkDebugUtilsMessengerCreateInfoEXT', 'VkDebugUtilsObjectNameInfoEXT',
    'VkDebugReportCallbackCreateInfoEXT',
    # A layered driver's underlying Vulkan properties (VK_KHR_maintenance7),
    # with a chain of their own, inside an output array: a driver that is
    # not layered (every host gpud runs on) reports no layers.
    'VkPhysicalDeviceLayeredApiVulkanPropertiesKHR',
    # Capture-replay data handed back at creation: memory whose size only
    # a device property tells (descriptorBufferCaptureReplay is reported
    # off: daemon/worker/gpud_descriptor.c).
    'VkOpaqueCaptureDescriptorDataCreateInfoEXT',
}

# Daemon executors written by hand (daemon/); the generated default is weak.
# Listed here only for documentation: any gpud_exec_* may be overridden.

# What a command returns once its daemon is gone, in order of preference:
# the first of these that vk.xml lists among the command's error codes.  A
# command that lists none of them gets its first listed error, and one that
# lists no error at all VK_SUCCESS (with its outputs emptied).
LOST_RESULTS = [
    'VK_ERROR_DEVICE_LOST', 'VK_ERROR_OUT_OF_HOST_MEMORY', 'VK_ERROR_INITIALIZATION_FAILED',
    'VK_ERROR_OUT_OF_DEVICE_MEMORY',
]

# Queries answered with an empty list, not an error, once the daemon is gone.
LOST_SUCCEEDS = {
    'vkEnumerateDeviceExtensionProperties':
        'the loader enumerates every driver\'s devices with it: an error would '
        'fail vkEnumeratePhysicalDevices for applications that want another GPU',
    'vkGetPhysicalDeviceToolProperties': 'no tools is a true answer',
}

# Limits the daemon applies to output storage a client asks for.
MAX_OUTPUT_ELEMENTS = 1 << 20

# Outputs vk.xml gives no size (void *pData) whose size a device property
# tells: the wire carries WIRE_MAX_OPAQUE_DATA bytes, and the ICD's own
# function (icd/icd_descriptor.c) hands the application the property's
# count of them.
MAX_OPAQUE_DATA = 256
OPAQUE_OUTPUTS = {
    (c, 'pData'): 'the size is VkPhysicalDeviceDescriptorBufferPropertiesEXT\'s'
    for c in ('vkGetBufferOpaqueCaptureDescriptorDataEXT',
              'vkGetImageOpaqueCaptureDescriptorDataEXT',
              'vkGetImageViewOpaqueCaptureDescriptorDataEXT',
              'vkGetSamplerOpaqueCaptureDescriptorDataEXT',
              'vkGetAccelerationStructureOpaqueCaptureDescriptorDataEXT')
}

# --------------------------------------------------------------------------


def resolve_command(reg, name):
    """The command an alias names (itself when it is none)."""
    while name not in reg.commands and name in reg.command_alias:
        name = reg.command_alias[name]
    return name


def canonical_tables(reg):
    """The tables name commands and structures as the registry that
    introduced them did; a later one may have promoted them
    (vkCmdPushDescriptorSetKHR is vkCmdPushDescriptorSet in 1.4): each
    table is rewritten to the names this registry gives."""
    def canon(name):
        if isinstance(name, tuple):
            return (canon(name[0]),) + name[1:]
        if name.startswith('vk'):
            return resolve_command(reg, name)
        return reg.resolve_type(name) if name.startswith('Vk') else name
    g = globals()
    for table in ('OPAQUE_OUTPUTS', 'CLIENT_ONLY', 'HOST_OPTIONAL', 'CACHED', 'UNCACHED', 'SPIRV_COMMANDS',
                  'SPIRV_CHAIN_COMMANDS', 'FORCE_SYNC', 'SHIPS_RECORDING', 'NOT_RECORDED',
                  'FORCE_ASYNC', 'ASYNC_CREATES', 'REPLAY_CONCURRENT', 'REPLAY_NOT_CONCURRENT',
                  'FLUSH_AFTER', 'CONDITIONAL_MEMBERS', 'FD_MEMBERS', 'WRITEBACK_MEMBERS',
                  'DENIED_STRUCTS', 'LOST_SUCCEEDS', 'ICD_POINTER_HANDLES', 'ADDRESS_UNIONS',
                  'DROPPED_MEMBERS', 'NESTED_LENS', 'STRUCT_CHECKS', 'ADDRESS_UNION_QUERIES'):
        t = g[table]
        if isinstance(t, dict):
            canonical = {}
            for k, v in t.items():
                canonical.setdefault(canon(k), v)
        else:
            canonical = {canon(k) for k in t}
        t.clear()
        t.update(canonical)


class Gen:
    def __init__(self, reg):
        self.reg = reg
        if not CORE_VERSIONS:
            CORE_VERSIONS.extend(name for name, number, cmds, types in reg.features)
        canonical_tables(reg)
        for (c, param) in OPAQUE_OUTPUTS:
            for p in reg.commands[c].params if c in reg.commands else ():
                if p.name == param and not p.len:
                    p.len = ['WIRE_MAX_OPAQUE_DATA']
        for (sname, mname), length in (VIDEO_LENS | TEXT_LENS).items():
            for m in reg.structs[sname].members if sname in reg.structs else ():
                if m.name == mname and not m.len:
                    m.len = [length]
        # (later registries name them "*_max_sub_layers_minus1 + 1")
        for sname, mname in VIDEO_SUBLAYER_ARRAYS:
            for m in reg.structs[sname].members if sname in reg.structs else ():
                if m.name == mname:
                    m.len = []
        self.walked = False
        self.types = set()
        self.commands = []
        for name, number, cmds, types in reg.features:
            if name in CORE_VERSIONS:
                self.types.update(types)
                self.commands += [c for c in cmds if c not in self.commands]
        core_cmds = set(self.commands)
        core_types = {reg.resolve_type(t) for t in self.types}
        self.denied = {}
        candidates = []
        for name, (e, cmds, types) in sorted(reg.extensions.items()):
            if name in WSI_EXTENSIONS:
                continue  # the ICD's (below)
            if e.get('platform'):
                self.denied[name] = 'for the ' + e.get('platform') + ' platform'
            elif e.get('provisional') == 'true':
                self.denied[name] = 'provisional'
            elif name in DENIED_EXTENSIONS:
                self.denied[name] = DENIED_EXTENSIONS[name]
            else:
                candidates.append(name)
        # What cannot go on the wire takes its extension out, and with it the
        # extensions that require it: repeat until nothing changes.
        while True:
            self.analyze(core_cmds, core_types, candidates)
            dropped = False
            for name in list(candidates):
                e = reg.extensions[name][0]
                why = None
                for c in map(self.resolve_command, self.own_commands(e)):
                    if c in self.bad_commands:
                        why = f'{c}: {self.bad_commands[c]}'
                        break
                for t in self.own_items(e, 'type'):
                    if reg.resolve_type(t) in self.unsupported and not why:
                        why = f'{t}: {self.unsupported[reg.resolve_type(t)]}'
                # what it needs (`depends=`, or `requires=` before 1.3.241)
                dep = vkxml.extension_depends(e)
                if not why and not vkxml.depends_holds(dep, lambda n: self.present(n, candidates)):
                    # (an expression that fails names something missing)
                    why = 'requires ' + next(n for n in vkxml.depends_order(dep)
                                             if not self.present(n, candidates))
                if why:
                    self.denied[name] = why
                    candidates.remove(name)
                    dropped = True
            if not dropped:
                break
        self.extensions = [(n, reg.extensions[n][0].get('type')) for n in candidates]
        # Window-system extensions are the ICD's: their commands (and those
        # of their interplay with what is carried) are answered there.
        self.wsi_commands = []
        with_wsi = set(candidates) | set(WSI_EXTENSIONS)
        for n in sorted(WSI_EXTENSIONS):
            e = reg.extensions[n][0]
            self.extensions.append((n, e.get('type')))
            cmds = self.own_commands(e)
            for req in e.findall('require'):
                if self.interplay(req, with_wsi):
                    cmds += [c.get('name') for c in req.findall('command')]
            for c in map(self.resolve_command, cmds):
                if c not in self.commands and c not in self.wsi_commands:
                    self.wsi_commands.append(c)
        # ... and the interplay of carried extensions with them
        for n in candidates:
            for req in reg.extensions[n][0].findall('require'):
                if self.interplay(req, with_wsi) and \
                        vkxml.depends_names(vkxml.require_depends(req)) & set(WSI_EXTENSIONS):
                    for c in map(self.resolve_command, (c.get('name') for c in req.findall('command'))):
                        if c not in self.commands and c not in self.wsi_commands:
                            self.wsi_commands.append(c)
        self.commands += self.wsi_commands
        self.client_only = set(CLIENT_ONLY) | set(self.wsi_commands)
        # the device extensions that bring each command that is not core: a
        # device must have one of them enabled for the daemon to run it
        self.command_extensions = {}
        for index, (n, typ) in enumerate(self.extensions):
            if typ != 'device':
                continue
            e = reg.extensions[n][0]
            cmds = self.own_commands(e)
            for req in e.findall('require'):
                if self.interplay(req, candidates):
                    cmds += [c.get('name') for c in req.findall('command')]
            for c in map(self.resolve_command, cmds):
                if c not in core_cmds and c in self.wire_commands:
                    self.command_extensions.setdefault(c, []).append(index)
        # gpud's own commands
        self.private = []
        for elem in ET.parse(PRIVATE_COMMANDS_XML).getroot().findall('command'):
            cmd = vkxml.Command(elem)
            if any(p.type.startswith('Vk') and reg.kind(p.type) == 'other' for p in cmd.params):
                continue
            reg.commands[cmd.name] = cmd
            why = self.walk_command(cmd)
            if why:
                raise SystemExit(f'gen_wire: {cmd.name}: {why}')
            self.private.append(cmd.name)
            self.commands.append(cmd.name)
            self.wire_commands.append(cmd.name)
        # a query of a later registry than this generator knows is asked
        # each time (right, if slower): listing it in CACHED makes it once
        for c in self.wire_commands:
            if reg.resolve_type(reg.commands[c].params[0].type) == 'VkPhysicalDevice' and \
                    c not in CACHED and c not in UNCACHED:
                UNCACHED[c] = 'not known to the generator: asked each time'
                print(f'gen_wire: note: {c} is asked of the daemon each time (not in CACHED)',
                      file=sys.stderr)
            # shader code a command takes, or may find chained in its inputs
            if c not in SPIRV_COMMANDS | SPIRV_CHAIN_COMMANDS and any(
                    self.reaches(p.type, code, set())
                    for p in reg.commands[c].params for code in SHADER_CODE_STRUCTS
                    if self.param_role(reg.commands[c], p) == 'input'):
                raise SystemExit(f'gen_wire: {c} hands shader code to the host: validate it in '
                                 'its executor and list it in SPIRV_COMMANDS or '
                                 'SPIRV_CHAIN_COMMANDS')
        # stable order
        self.structs_all = sorted(self.structs_in | self.structs_out)
        self.walked = True

    def resolve_command(self, name):
        """The command an alias names (itself when it is none)."""
        return resolve_command(self.reg, name)

    def command_aliases(self, name):
        """The names earlier registries gave command name, sorted."""
        if not hasattr(self, '_command_aliases'):
            self._command_aliases = {}
            for alias in sorted(self.reg.command_alias):
                target = self.resolve_command(alias)
                if target != alias:
                    self._command_aliases.setdefault(target, []).append(alias)
        return self._command_aliases.get(name, [])

    @staticmethod
    def present(name, extensions):
        """Whether a dependency is met: a core version generated, or one of
        the extensions."""
        return name in CORE_VERSIONS or name in extensions

    @staticmethod
    def interplay(req, extensions):
        """Whether a <require> block is an extension's interplay with another
        extension (it names one) that applies with these extensions."""
        dep = vkxml.require_depends(req)
        return any(not n.startswith('VK_VERSION_') for n in vkxml.depends_names(dep)) and \
            vkxml.depends_holds(dep, lambda n: Gen.present(n, extensions))

    @staticmethod
    def own_items(e, tag):
        """An extension's commands or types, without those of its interplay
        with another extension (blocks that name core versions only are its
        own, where those versions are generated)."""
        items = []
        for req in e.findall('require'):
            if 'vulkan' not in (req.get('api') or 'vulkan').split(','):
                continue
            dep = vkxml.require_depends(req)
            if all(n.startswith('VK_VERSION_') for n in vkxml.depends_names(dep)) and \
                    vkxml.depends_holds(dep, lambda n: n in CORE_VERSIONS):
                items += [c.get('name') for c in req.findall(tag)]
        return items

    @staticmethod
    def own_commands(e):
        return Gen.own_items(e, 'command')

    def analyze(self, core_cmds, core_types, carried):
        """Commands, types and structs of core plus the carried extensions;
        bad_commands: the commands that cannot go on the wire, and why."""
        reg = self.reg
        commands = list(core_cmds)
        types = set(core_types)
        for name in carried:
            e, cmds, ts = reg.extensions[name]
            types.update(reg.resolve_type(t) for t in ts)
            cmds = self.own_commands(e)
            # commands of its interplay with another extension, where that one
            # is carried too
            for req in e.findall('require'):
                if self.interplay(req, carried):
                    cmds += [c.get('name') for c in req.findall('command')]
            # an alias is carried as the command it names
            cmds = [self.resolve_command(c) for c in cmds]
            commands += [c for c in cmds if c in reg.commands and c not in commands]
        # vk.xml's order: core first, then extensions in name order
        order = {c: i for i, c in enumerate(reg.commands)}
        self.commands = sorted(set(commands), key=lambda c: order[c])
        self.types = types
        self.wire_commands = [c for c in self.commands if c not in CLIENT_ONLY]
        self.unsupported = {}
        self.structs_in = set()
        self.structs_out = set()
        self.bad_commands = {}
        for name in self.wire_commands:
            why = self.walk_command(reg.commands[name])
            if why:
                self.bad_commands[name] = why
        self.wire_commands = [c for c in self.wire_commands if c not in self.bad_commands]
        self.commands = [c for c in self.commands if c not in self.bad_commands]

    # ---- classification -------------------------------------------------

    def is_pointer_handle(self, t):
        return self.reg.resolve_type(t) in ICD_POINTER_HANDLES

    def chain_members(self, sname, output):
        """Structs allowed in the pNext chain of sname (those that cannot go
        on the wire are skipped by the encoder, refused by the decoder);
        kept once the walk is done, when they no longer change."""
        if self.walked:
            cache = self.__dict__.setdefault('_chain_cache', {})
            if (sname, output) not in cache:
                cache[(sname, output)] = self._chain_members(sname, output)
            return list(cache[(sname, output)])
        return self._chain_members(sname, output)

    def extenders(self, name):
        """The structs with an sType that name structextends."""
        index = self.__dict__.get('_extenders')
        if index is None:
            index = self._extenders = {}
            for x, xs in self.reg.structs.items():
                if xs.stype:
                    for e in xs.structextends:
                        index.setdefault(e, set()).add(x)
        return index.get(name, set())

    def _chain_members(self, sname, output):
        s = self.reg.structs[sname]
        found = set()
        for n in [sname] + list(s.aliases):
            found |= self.extenders(n)
        out = []
        for x in sorted(found & self.types):
            xs = self.reg.structs[x]
            if x in DENIED_STRUCTS or x in self.unsupported:
                continue
            if self.walked and x not in (self.structs_out if output else self.structs_in):
                continue
            if output and not self.output_ok(x):
                # its extension is not carried half done (own-types rule)
                self.unsupported.setdefault(x, 'an output holding pointers')
                continue
            if not output and xs.returnedonly:
                continue
            out.append(x)
        return out

    def sized_outputs(self, sname):
        """The arrays an output struct points at that the application sizes
        (VkPhysicalDeviceVulkan14Properties.pCopySrcLayouts): {array member:
        count member}, the count a member of the same struct, the elements
        values (scalars, enums, flat structs without sType).  The request
        carries each array's capacity (encshape), the daemon gives the host
        that much, the reply the count and the elements."""
        s = self.reg.structs[self.reg.resolve_type(sname)]
        counts = {m.name: m for m in s.members if m.ptr == 0 and self.reg.kind(m.type) == 'scalar'}
        found = {}
        for m in s.members:
            if m.ptr != 1 or m.const or len(m.len) != 1 or m.len[0] not in counts or m.dims:
                continue
            k = self.reg.kind(m.type)
            es = self.reg.structs.get(self.reg.resolve_type(m.type))
            if k in ('scalar', 'enum', 'bitmask', 'void') or (
                    k == 'struct' and not es.stype and self.flat(m.type)) or (
                    # elements with a chain of their own: their bodies
                    # (the chains stay as the application made them)
                    k == 'struct' and es.stype and es.name != s.name and
                    self.output_ok(es.name)):
                found[m.name] = m.len[0]
        return found

    def output_ok(self, sname, seen=None):
        s = self.reg.structs[sname]
        sized = self.sized_outputs(sname) if s.stype else {}
        for m in s.members:
            if m.name in ('sType', 'pNext') or m.name in sized:
                continue
            k = self.reg.kind(m.type)
            if m.ptr or k in ('handle', 'funcpointer', 'other', 'void'):
                return False
            if k == 'union' and not self.flat(m.type):
                return False
            if k == 'struct':
                ms = self.reg.structs[self.reg.resolve_type(m.type)]
                if ms.stype or not self.output_ok(ms.name):
                    return False
        return True

    def flat(self, tname):
        """A struct or union of scalars only (no pointers or handles)."""
        s = self.reg.structs[self.reg.resolve_type(tname)]
        for m in s.members:
            k = self.reg.kind(m.type)
            if m.ptr or m.name == 'pNext':
                return False
            if k in ('struct', 'union'):
                if not self.flat(m.type):
                    return False
            elif self.reg.scalar_info(m.type) is None:
                return False
        return True

    def reaches(self, tname, target, seen):
        """Whether an input of type tname can hold a target (as a member or
        in a pNext chain, at any depth)."""
        tname = self.reg.resolve_type(tname)
        if tname == target:
            return True
        if tname in seen or tname not in self.reg.structs:
            return False
        seen.add(tname)
        s = self.reg.structs[tname]
        for m in s.members:
            if m.name == 'pNext':
                if any(self.reaches(x, target, seen) for x in self.chain_members(tname, False)):
                    return True
            elif self.reg.kind(m.type) in ('struct', 'union') and \
                    self.reaches(m.type, target, seen):
                return True
        return False

    def walk_struct(self, sname, output, stack=()):
        sname = self.reg.resolve_type(sname)
        target = self.structs_out if output else self.structs_in
        if sname in target:
            return True
        if sname in ADDRESS_UNIONS:
            return not output  # a number, as an input
        s = self.reg.structs[sname]
        if s.union and not self.flat(sname):
            self.unsupported[sname] = 'union with pointers'
            return False
        target.add(sname)
        sized = self.sized_outputs(sname) if output and s.stype else {}
        for m in s.members:
            if m.name in ('sType',) or (sname, m.name) in DROPPED_MEMBERS:
                continue
            if not output and pointer_array(self.reg, m):
                if not self.walk_struct(m.type, output):
                    target.discard(sname)
                    self.unsupported[sname] = f'member {m.name}'
                    return False
                continue
            if m.name in sized:
                if self.reg.kind(m.type) == 'struct':
                    self.walk_struct(m.type, output)
                continue
            if m.name == 'pNext':
                for x in self.chain_members(sname, output):
                    self.walk_struct(x, output)
                continue
            k = self.reg.kind(m.type)
            if sname in self.reg.video_types and m.ptr and not m.len and k != 'struct':
                target.discard(sname)
                self.unsupported[sname] = f'member {m.name}: a pointer whose length video.xml ' \
                    'does not give'
                return False
            if k == 'union' and m.selector and not m.ptr and not self.flat(m.type):
                why = None if not output else 'an output union of pointers'
                for um in self.reg.structs[self.reg.resolve_type(m.type)].members:
                    uk = self.reg.kind(um.type)
                    if why or not um.selection:
                        why = why or f'union member {um.name} has no selection'
                    elif uk in ('struct', 'union') and um.ptr <= 1 and not um.len:
                        if not self.walk_struct(um.type, output):
                            why = f'union member {um.name}'
                    elif not ((uk == 'handle' or self.reg.scalar_info(um.type) is not None) and
                              um.ptr <= 1 and not um.len):
                        why = f'union member {um.name} ({um.text})'
                if why:
                    target.discard(sname)
                    self.unsupported[sname] = f'member {m.name}: {why}'
                    return False
                continue
            if k in ('struct', 'union') and not (output and m.ptr):
                if not self.walk_struct(m.type, output):
                    target.discard(sname)
                    self.unsupported[sname] = f'member {m.name}'
                    return False
            elif (k in ('funcpointer', 'other') or (k == 'void' and not m.len) or
                  (m.ptr > 1 and m.type != 'char') or
                  (output and (m.ptr or k == 'handle'))):
                target.discard(sname)
                self.unsupported[sname] = f'member {m.name} ({m.text})'
                return False
        return True

    def param_role(self, cmd, p):
        """input, out_count, out_array, out_struct, out_scalar, out_handle."""
        if p.ptr == 0 or p.const:
            return 'input'
        k = self.reg.kind(p.type)
        lens = {q.len[0] for q in cmd.params if q.len}
        if p.name in lens and k == 'scalar':
            return 'out_count'
        if k == 'handle':
            return 'out_handle'
        if p.len or k == 'void':
            return 'out_array'
        if k == 'struct':
            return 'out_struct'
        return 'out_scalar'

    def walk_command(self, cmd):
        """Walks what the command puts on the wire; returns why it cannot be
        carried, or None."""
        for p in cmd.params:
            k = self.reg.kind(p.type)
            if p.type == 'VkAllocationCallbacks':
                continue
            role = self.param_role(cmd, p)
            if not cmd.name.startswith('vkCmd') and cmd.name not in ADDRESS_UNION_QUERIES and \
                    k in ('struct', 'union') and \
                    any(self.reaches(p.type, u, set()) for u in ADDRESS_UNIONS):
                return f'{p.name}: may hold host addresses (a host command)'
            if p.type in ('VkBaseOutStructure', 'VkBaseInStructure'):
                return f'{p.name}: a struct of a type the application chooses'
            if (cmd.name, p.name) in NESTED_LENS and role == 'input' and p.ptr == 2 and \
                    (k == 'struct' or self.reg.scalar_info(p.type) is not None):
                if k == 'struct' and not self.walk_struct(p.type, False):
                    return f'{p.name}: {self.unsupported.get(self.reg.resolve_type(p.type), "?")}'
                continue
            if k in ('struct', 'union'):
                if not self.walk_struct(p.type, role != 'input'):
                    return f'{p.name}: {self.unsupported.get(self.reg.resolve_type(p.type), "?")}'
            elif k in ('funcpointer', 'other'):
                return f'{p.name} ({p.text})'
            elif k == 'void' and not p.len:
                return f'{p.name} is memory without a size'
            elif p.ptr > 1 and not (k == 'scalar' and p.type == 'char'):
                return f'{p.name} ({p.text})'
            elif k not in ('handle', 'void') and p.type != 'char' and \
                    self.reg.scalar_info(p.type) is None:
                return f'{p.name} ({p.text}) is no value the wire knows'
        return None

    # ---- naming ---------------------------------------------------------

    def wire_scalar(self, tname):
        info = self.reg.scalar_info(tname)
        if info is None:
            raise Exception(f'not a scalar: {tname}')
        return info[0]

    def min_wire_size(self, m):
        """Smallest encoding of one element of member m's array."""
        k = self.reg.kind(m.type)
        if k == 'void' or m.type in ('char', 'uint8_t', 'int8_t') and m.ptr == 1 and not m.dims:
            return 1
        if k == 'handle':
            return 8
        if k in ('struct', 'union'):
            return 4  # every member, and every union, takes 4 bytes or more
        if m.ptr == 2:
            return 4
        info = self.reg.scalar_info(m.type)
        return 4 if info[1] <= 4 else 8


# The wire.h primitive for each wire scalar type.
WIRE_FN = {'uint32_t': 'u32', 'int32_t': 'i32', 'uint64_t': 'u64', 'int64_t': 'i64',
           'float': 'float', 'double': 'double'}


def c_len_expr(expr, names, prefix):
    """Turns a vk.xml len/altlen expression into C over prefix+member."""
    def repl(mo):
        w = mo.group(0)
        return prefix + w if w in names else w
    return re.sub(r'[A-Za-z_][A-Za-z0-9_]*', repl, expr)


def function_side(fname):
    """Which side calls a generated wire function: 'icd', 'gpud' or both."""
    if fname.startswith(('wire_decargs_', 'wire_encreply_', 'wire_encback_', 'wire_decshape_')):
        return {'gpud'}
    if fname.startswith(('wire_decreply_', 'wire_decout_', 'wire_encshape_', 'wire_decback_')):
        return {'icd'}
    if fname.startswith('wire_enc_vk'):
        return {'icd'}
    if fname.startswith('wire_key_'):
        return {'gpud'}
    # struct encoders and decoders: requests, replies' outputs and write-backs
    # (the compiler drops a side's unused ones)
    return {'icd', 'gpud'}


def split_sides(lines):
    """Splits emitted C into the ICD's and the daemon's functions.  A
    function starts at its return type's line, followed by its name's; a
    prototype (one line) goes where its function goes."""
    sides = {'icd': [], 'gpud': []}
    current = {'icd', 'gpud'}
    types = ('void', 'static void', 'bool', 'static bool')
    for i, line in enumerate(lines):
        head = line.split('\n')
        target = current
        m = re.match(r'(?:static )?(?:void|bool) (wire_\w+)\(.*;$', head[0])
        if m:
            target = function_side(m.group(1))
        elif head[0] in types and len(head) > 1 and head[1].startswith('wire_'):
            current = target = function_side(head[1].split('(')[0])
        elif head[0] in types and i + 1 < len(lines) and lines[i + 1].startswith('wire_'):
            current = target = function_side(lines[i + 1].split('(')[0])
        for side in target:
            sides[side].append(line)
    return sides['icd'], sides['gpud']


class Writer:
    def __init__(self):
        self.lines = []

    def __call__(self, s=''):
        self.lines.append(s)

    def text(self):
        return '\n'.join(self.lines) + '\n'


# ==========================================================================
# Struct code


def pointer_array(reg, m):
    """An array of pointers to single structures (ppGeometries: len
    "geometryCount,1"): it travels as the array of the structures."""
    return m.ptr == 2 and len(m.len) == 2 and m.len[1] == '1' and reg.kind(m.type) == 'struct'


def member_len(gen, owner_members, m, prefix):
    """C expression for the element count of array member m, or None."""
    if not m.len:
        return None
    first = m.len[0]
    names = {x.name for x in owner_members}
    if first == 'null-terminated':
        return None
    if first.startswith('latexmath'):
        return '(' + c_len_expr(m.altlen, names, prefix) + ')'
    if '->' in first:
        base, field = first.split('->')
        return f'{prefix}{base}->{field}' if base in names else first
    if first in names:
        return prefix + first
    return first


def emit_enc_value(gen, w, ind, tname, expr, dims=()):
    """Encodes a non-pointer value (scalar, handle, struct, union)."""
    reg = gen.reg
    k = reg.kind(tname)
    if dims:
        if k in ('struct',) or k == 'handle':
            n = ' * '.join(f'({d})' for d in dims)
            w(f'{ind}for (uint32_t i{len(dims)} = 0; i{len(dims)} < {n}; i{len(dims)}++)')
            flat_expr = f'(&({expr})[0])[i{len(dims)}]' if len(dims) == 1 else None
            assert flat_expr
            emit_enc_value(gen, w, ind + '   ', tname, flat_expr)
        else:
            # ([0] of a two-dimensional array is a row)
            w(f'{ind}wire_enc_bytes(e, {expr}, sizeof(({expr})[0]) * ({dims[0]}));')
        return
    if k == 'handle':
        if gen.is_pointer_handle(tname):
            w(f'{ind}wire_enc_u64(e, wire_object_id({expr}));')
        else:
            w(f'{ind}wire_enc_u64(e, (uint64_t)(uintptr_t)({expr}));')
    elif k == 'union' and reg.resolve_type(tname) in ADDRESS_UNIONS:
        w(f'{ind}wire_enc_u64(e, ({expr}).{ADDRESS_UNIONS[reg.resolve_type(tname)]});')
    elif k == 'union':
        w(f'{ind}wire_enc_bytes(e, &({expr}), sizeof({expr}));')
    elif k == 'struct':
        w(f'{ind}wire_enc_{reg.resolve_type(tname)}(e, &({expr}));')
    else:
        wt = gen.wire_scalar(tname)
        w(f'{ind}wire_enc_{WIRE_FN[wt]}(e, ({wt})({expr}));')


def emit_dec_value(gen, w, ind, tname, lvalue, dims=(), nullable=False):
    reg = gen.reg
    k = reg.kind(tname)
    rt = reg.resolve_type(tname)
    if dims:
        if k in ('struct', 'handle'):
            n = ' * '.join(f'({d})' for d in dims)
            assert len(dims) == 1
            w(f'{ind}for (uint32_t i1 = 0; i1 < {n}; i1++)')
            emit_dec_value(gen, w, ind + '   ', tname, f'({lvalue})[i1]', nullable=nullable)
        else:
            w(f'{ind}wire_dec_bytes(d, {lvalue}, sizeof({lvalue}));')
        return
    if k == 'handle':
        objtype = reg.handles[rt][1]
        w(f'{ind}{lvalue} = ({rt})(uintptr_t)wire_dec_handle(d, {objtype}, {"true" if nullable else "false"});')
    elif k == 'union' and rt in ADDRESS_UNIONS:
        w(f'{ind}({lvalue}).{ADDRESS_UNIONS[rt]} = wire_dec_u64(d);')
    elif k == 'union':
        w(f'{ind}wire_dec_bytes(d, &({lvalue}), sizeof({lvalue}));')
    elif k == 'struct':
        w(f'{ind}wire_dec_{rt}(d, &({lvalue}));')
    elif checked_enum(gen, tname):
        w(f'{ind}{lvalue} = ({tname})wire_dec_enum(d, wire_enum_ok_{rt}(wire_peek_i32(d)), '
          f'"{rt} value out of range");')
    else:
        wt = gen.wire_scalar(tname)
        w(f'{ind}{lvalue} = ({tname})wire_dec_{WIRE_FN[wt]}(d);')


def checked_enum(gen, tname):
    """Whether values of tname are checked against the registry when the
    daemon decodes them: 32-bit enums that are not flag bits (a host driver
    indexes tables with them; an unknown value is out of bounds)."""
    reg = gen.reg
    if reg.kind(tname) != 'enum':
        return False
    rt = reg.resolve_type(tname)
    if 'FlagBits' in rt or gen.wire_scalar(tname) != 'int32_t' or rt == 'VkStructureType':
        return False
    return bool(reg.enum_members(rt))


def emit_enum_checks(gen, w, only=None):
    """wire_enum_ok_<Enum>(): whether a value is one the registry defines
    (for every checked enum, or those in only)."""
    reg = gen.reg
    for name in sorted(reg.enums):
        if reg.resolve_type(name) != name or not checked_enum(gen, name):
            continue
        if only is not None and name not in only:
            continue
        vals = sorted(reg.enum_members(name))
        w(f'static bool wire_enum_ok_{name}(int32_t v) __attribute__((unused));')
        w(f'static bool\nwire_enum_ok_{name}(int32_t v)\n{{')
        w('   switch (v) {')
        for v in vals:
            w(f'   case {v}:')
        w('      return true;')
        w('   default:')
        w('      return false;')
        w('   }')
        w('}')
        w('')


def emit_member_enc(gen, w, sname, members, m, prefix, ind='   ', cond=None):
    """Encodes member or parameter m (an input)."""
    reg = gen.reg
    v = prefix + m.name
    k = reg.kind(m.type)
    if cond:
        w(f'{ind}if ({cond}) {{')
        emit_member_enc(gen, w, sname, members, m, prefix, ind + '   ')
        w(f'{ind}}} else {{')
        if m.ptr:
            w(f'{ind}   wire_enc_u32(e, 0);')
        else:
            w(f'{ind}   wire_enc_u64(e, 0);')
        w(f'{ind}}}')
        return
    if (sname, m.name) in DROPPED_MEMBERS:
        return
    if m.ptr == 0 and k == 'union' and m.selector and not gen.flat(m.type):
        emit_selected_union(gen, w, sname, m, prefix, ind, None)
        return
    if m.ptr == 0 and m.objecttype:
        w(f'{ind}wire_enc_u64(e, wire_typed_handle_id((VkObjectType){prefix}{m.objecttype}, {v}));')
        return
    if pointer_array(reg, m):
        n = member_len(gen, members, m, prefix)
        w(f'{ind}wire_enc_u32(e, {v} != NULL);')
        w(f'{ind}if ({v}) {{')
        w(f'{ind}   const uint32_t n = (uint32_t)({n});')
        w(f'{ind}   wire_enc_u32(e, n);')
        w(f'{ind}   for (uint32_t i = 0; i < n; i++)')
        emit_enc_value(gen, w, ind + '      ', m.type, f'*{v}[i]')
        w(f'{ind}}}')
        return
    if (sname, m.name) in NESTED_LENS:
        n = member_len(gen, members, m, prefix)
        inner = nested_len((sname, m.name), prefix)
        w(f'{ind}wire_enc_u32(e, {v} != NULL);')
        w(f'{ind}if ({v}) {{')
        w(f'{ind}   const uint32_t n = (uint32_t)({n});')
        w(f'{ind}   wire_enc_u32(e, n);')
        w(f'{ind}   for (uint32_t i = 0; i < n; i++) {{')
        w(f'{ind}      const uint32_t inner = (uint32_t)({inner});')
        w(f'{ind}      wire_enc_u32(e, inner);')
        if k == 'struct':
            w(f'{ind}      for (uint32_t j = 0; j < inner; j++)')
            emit_enc_value(gen, w, ind + '         ', m.type, f'{v}[i][j]')
        else:
            w(f'{ind}      wire_enc_bytes(e, {v}[i], (size_t)inner * sizeof({v}[i][0]));')
        w(f'{ind}   }}')
        w(f'{ind}}}')
        return
    if m.ptr == 0 and (sname, m.name) in FD_MEMBERS:
        cond = FD_MEMBERS[(sname, m.name)]
        w(f'{ind}wire_enc_fd(e, {f"({cond}) ? {v} : -1" if cond else v});')
        return
    if m.ptr == 0:
        emit_enc_value(gen, w, ind, m.type, v, m.dims)
        return
    if m.ptr == 2:
        # array of strings
        n = member_len(gen, members, m, prefix)
        w(f'{ind}wire_enc_u32(e, {v} != NULL);')
        w(f'{ind}if ({v}) {{')
        w(f'{ind}   wire_enc_u32(e, (uint32_t)({n}));')
        w(f'{ind}   for (uint32_t i = 0; i < (uint32_t)({n}); i++)')
        w(f'{ind}      wire_enc_string(e, {v}[i]);')
        w(f'{ind}}}')
        return
    if m.type == 'char' and m.len and m.len[0] == 'null-terminated':
        w(f'{ind}wire_enc_string(e, {v});')
        return
    n = member_len(gen, members, m, prefix)
    if (sname, m.name) in VIDEO_SUBLAYER_ARRAYS:
        # an array as any other, as long as the parameter set being encoded
        # has sub-layers (the decoder's side is its own)
        cap = VIDEO_SUBLAYER_ARRAYS[(sname, m.name)]
        n = f'e->video_sublayers < {cap} ? e->video_sublayers : {cap}'
    w(f'{ind}wire_enc_u32(e, {v} != NULL);')
    if n is None:
        w(f'{ind}if ({v})')
        emit_enc_value(gen, w, ind + '   ', m.type, f'*{v}')
        return
    w(f'{ind}if ({v}) {{')
    w(f'{ind}   const uint32_t n = (uint32_t)({n});')
    w(f'{ind}   wire_enc_u32(e, n);')
    if k == 'void':
        w(f'{ind}   wire_enc_bytes(e, {v}, n);')
    elif m.stride:
        # packed on the wire; the daemon passes its own stride
        w(f'{ind}   for (uint32_t i = 0; i < n; i++)')
        emit_enc_value(gen, w, ind + '      ', m.type,
                       f'*(const {m.type} *)((const char *){v} + (size_t)i * {prefix}{m.stride})')
    elif k in ('struct', 'handle', 'union'):
        w(f'{ind}   for (uint32_t i = 0; i < n; i++)')
        emit_enc_value(gen, w, ind + '      ', m.type, f'{v}[i]')
    else:
        w(f'{ind}   wire_enc_bytes(e, {v}, (size_t)n * sizeof(*{v}));')
    w(f'{ind}}}')


def emit_selected_union(gen, w, sname, m, prefix, ind, checks):
    """A union whose member another member selects (vk.xml's selector and
    selection: VkDescriptorGetInfoEXT.data by its type): only the selected
    member travels, encoded (checks None) or decoded as a member of its
    own; for a selector that chooses none (a token without data) nothing
    does, and the host gets zeroes."""
    reg = gen.reg
    u = reg.structs[reg.resolve_type(m.type)]
    v = prefix + m.name
    sel = prefix + m.selector
    owner = reg.structs[sname]
    selector_type = next(x.type for x in owner.members if x.name == m.selector)
    if checks is None and reg.resolve_type(selector_type) == 'VkDescriptorType':
        # VkDescriptorImageInfo's handles travel by the descriptor type
        w(f'{ind}(void)wire_enc_set_descriptor_type(e, {sel});')
    w(f'{ind}switch ((int){sel}) {{')
    for um in u.members:
        for value in um.selection:
            w(f'{ind}case {value}:')
        w(f'{ind}   {{')
        if checks is None:
            emit_member_enc(gen, w, u.name, u.members, um, v + '.', ind + '      ')
        else:
            mine = []
            emit_member_dec(gen, w, u.name, u.members, um, v + '.', mine, ind + '      ')
            for cond, why in mine:
                w(f'{ind}      if (!d->fatal && !({cond}))')
                w(f'{ind}         wire_dec_fail(d, "{sname}.{m.name}: {why}");')
        w(f'{ind}   }}')
        w(f'{ind}   break;')
    w(f'{ind}default:')
    w(f'{ind}   break; /* a token with no data, or a value the host will refuse */')
    w(f'{ind}}}')


def member_nullable(gen, sname, m):
    return (m.is_optional or m.noautovalidity or (sname, m.name) in CONDITIONAL_MEMBERS)


def emit_member_dec(gen, w, sname, members, m, prefix, checks, ind='   '):
    """Decodes input member/parameter m into prefix+name.  Appends to checks
    the C conditions that must hold once everything is decoded."""
    reg = gen.reg
    v = prefix + m.name
    k = reg.kind(m.type)
    nullable = member_nullable(gen, sname, m)
    ctype = reg.resolve_type(m.type) if k not in ('void',) else 'uint8_t'
    if k == 'scalar':
        ctype = m.type
    if (sname, m.name) in DROPPED_MEMBERS:
        w(f'{ind}{v} = NULL;')
        return
    if m.ptr == 0 and k == 'union' and m.selector and not gen.flat(m.type):
        emit_selected_union(gen, w, sname, m, prefix, ind, checks)
        return
    if m.ptr == 0 and m.objecttype:
        w(f'{ind}{v} = wire_dec_handle(d, (VkObjectType){prefix}{m.objecttype}, false);')
        return
    if pointer_array(reg, m):
        # the structures, and the pointers at them the host reads
        n = member_len(gen, members, m, prefix)
        n_name = 'n_' + m.name
        w(f'{ind}uint32_t {n_name} = 0;')
        w(f'{ind}if (wire_dec_u32(d)) {{')
        w(f'{ind}   {n_name} = wire_dec_count(d, 4);')
        w(f'{ind}   {ctype} *arr = wire_dec_alloc(d, sizeof(*arr) * ({n_name} ? {n_name} : 1));')
        w(f'{ind}   const {ctype} **ptrs = wire_dec_alloc(d, sizeof(*ptrs) * ({n_name} ? {n_name} : 1));')
        w(f'{ind}   for (uint32_t i = 0; arr && ptrs && i < {n_name}; i++) {{')
        emit_dec_value(gen, w, ind + '      ', m.type, 'arr[i]')
        w(f'{ind}      ptrs[i] = &arr[i];')
        w(f'{ind}   }}')
        w(f'{ind}   {v} = ptrs;')
        w(f'{ind}}}')
        checks.append((f'(!{v} || (uint64_t){n_name} == (uint64_t)({n}))', f'{m.name} length mismatch'))
        if not nullable:
            checks.append((f'({v} || ({n}) == 0)', f'missing {m.name}'))
        return
    if (sname, m.name) in VIDEO_SUBLAYER_ARRAYS:
        cap = VIDEO_SUBLAYER_ARRAYS[(sname, m.name)]
        w(f'{ind}if (wire_dec_u32(d)) {{')
        w(f'{ind}   const uint32_t n = wire_dec_count(d, 4);')
        w(f'{ind}   if (!d->fatal && n > {cap})')
        w(f'{ind}      wire_dec_fail(d, "{sname}.{m.name}: more sub-layers than there may be");')
        w(f'{ind}   {ctype} *arr = wire_dec_alloc(d, sizeof(*arr) * {cap});')
        w(f'{ind}   for (uint32_t i = 0; arr && !d->fatal && i < n; i++) {{')
        emit_dec_value(gen, w, ind + '      ', m.type, 'arr[i]')
        w(f'{ind}   }}')
        w(f'{ind}   {v} = arr;')
        w(f'{ind}}}')
        return
    if (sname, m.name) in NESTED_LENS:
        # decoded after what gives the inner lengths (the parameters before
        # it), and checked against them at once
        n = member_len(gen, members, m, prefix)
        inner = nested_len((sname, m.name), prefix)
        array = NESTED_LENS[(sname, m.name)][0]
        et = reg.resolve_type(m.type) if k == 'struct' else m.type
        n_name = 'n_' + m.name
        w(f'{ind}uint32_t {n_name} = 0;')
        w(f'{ind}if (wire_dec_u32(d)) {{')
        w(f'{ind}   {n_name} = wire_dec_count(d, 4);')
        w(f'{ind}   const {et} **arr = wire_dec_alloc(d, sizeof(*arr) * ({n_name} ? {n_name} : 1));')
        # the array the inner lengths come from, decoded before: there, and
        # as long (its own length check runs only at the end)
        w(f'{ind}   if (!d->fatal && ((uint64_t){n_name} != (uint64_t)({n}) ||')
        w(f'{ind}                     ({n_name} && (!{prefix}{array} || n_{array} != {n_name}))))')
        w(f'{ind}      wire_dec_fail(d, "{sname}: {m.name} length mismatch");')
        w(f'{ind}   for (uint32_t i = 0; arr && !d->fatal && i < {n_name}; i++) {{')
        w(f'{ind}      const uint32_t inner = wire_dec_count(d, {4 if k == "struct" else "sizeof(arr[0][0])"});')
        w(f'{ind}      if (!d->fatal && inner != (uint32_t)({inner})) {{')
        w(f'{ind}         wire_dec_fail(d, "{sname}: {m.name}[i] length mismatch");')
        w(f'{ind}         break;')
        w(f'{ind}      }}')
        w(f'{ind}      {et} *elems = wire_dec_alloc(d, sizeof(*elems) * (inner ? inner : 1));')
        w(f'{ind}      if (!elems)')
        w(f'{ind}         break;')
        if k == 'struct':
            w(f'{ind}      for (uint32_t j = 0; j < inner; j++)')
            emit_dec_value(gen, w, ind + '         ', m.type, 'elems[j]')
        else:
            w(f'{ind}      wire_dec_bytes(d, elems, (size_t)inner * sizeof(*elems));')
        w(f'{ind}      arr[i] = elems;')
        w(f'{ind}   }}')
        w(f'{ind}   {v} = arr;')
        w(f'{ind}}}')
        checks.append((f'({v} || ({n}) == 0)', f'missing {m.name}'))
        return
    if m.ptr == 0 and (sname, m.name) in FD_MEMBERS:
        w(f'{ind}{v} = wire_dec_fd(d);')
        return
    if m.ptr == 0:
        emit_dec_value(gen, w, ind, m.type, v, m.dims, nullable)
        return
    if m.ptr == 2:
        n_name = 'n_' + m.name
        w(f'{ind}uint32_t {n_name} = 0;')
        w(f'{ind}if (wire_dec_u32(d)) {{')
        w(f'{ind}   {n_name} = wire_dec_count(d, 4);')
        w(f'{ind}   const char **arr = wire_dec_alloc(d, sizeof(*arr) * ({n_name} ? {n_name} : 1));')
        w(f'{ind}   for (uint32_t i = 0; arr && i < {n_name}; i++) {{')
        w(f'{ind}      arr[i] = wire_dec_string(d);')
        w(f'{ind}      if (!arr[i]) wire_dec_fail(d, "null string in array");')
        w(f'{ind}   }}')
        w(f'{ind}   {v} = arr;')
        w(f'{ind}}}')
        n = member_len(gen, members, m, prefix)
        checks.append((f'({v} || ({n}) == 0)', 'missing string array'))
        checks.append((f'(!{v} || {n_name} == ({n}))', 'string array length mismatch'))
        return
    if m.type == 'char' and m.len and m.len[0] == 'null-terminated':
        w(f'{ind}{v} = wire_dec_string(d);')
        if not nullable:
            checks.append((f'{v} != NULL', f'missing {m.name}'))
        return
    n = member_len(gen, members, m, prefix)
    if n is None:
        # single element
        w(f'{ind}if (wire_dec_u32(d)) {{')
        w(f'{ind}   {ctype} *p = wire_dec_alloc(d, sizeof(*p));')
        w(f'{ind}   if (p) {{')
        emit_dec_value(gen, w, ind + '      ', m.type, '*p', nullable=False)
        w(f'{ind}   }}')
        w(f'{ind}   {v} = p;')
        w(f'{ind}}}')
        if not nullable:
            checks.append((f'{v} != NULL', f'missing {m.name}'))
        return
    n_name = 'n_' + m.name
    minsz = gen.min_wire_size(m)
    w(f'{ind}uint32_t {n_name} = 0;')
    w(f'{ind}if (wire_dec_u32(d)) {{')
    w(f'{ind}   {n_name} = wire_dec_count(d, {minsz});')
    w(f'{ind}   {ctype} *arr = wire_dec_alloc(d, sizeof(*arr) * ({n_name} ? {n_name} : 1));')
    if k == 'void':
        w(f'{ind}   if (arr) wire_dec_bytes(d, arr, {n_name});')
    elif k in ('struct', 'handle', 'union'):
        w(f'{ind}   for (uint32_t i = 0; arr && i < {n_name}; i++) {{')
        emit_dec_value(gen, w, ind + '      ', m.type, 'arr[i]', nullable=nullable)
        w(f'{ind}   }}')
    elif checked_enum(gen, m.type):
        rt = reg.resolve_type(m.type)
        w(f'{ind}   for (uint32_t i = 0; arr && i < {n_name}; i++)')
        w(f'{ind}      arr[i] = ({rt})wire_dec_enum(d, wire_enum_ok_{rt}(wire_peek_i32(d)), '
          f'"{rt} value out of range");')
    else:
        w(f'{ind}   if (arr) wire_dec_bytes(d, arr, (size_t){n_name} * sizeof(*arr));')
    w(f'{ind}   {v} = arr;')
    w(f'{ind}}}')
    if m.stride:
        # a statement, not a check: the array is packed now
        checks.append((f'{prefix}{m.stride} = sizeof({ctype})', None))
    if m.len[0].startswith('latexmath'):
        checks.append((f'(!{v} || (uint64_t){n_name} >= (uint64_t)({n}))', f'{m.name} too short'))
    else:
        checks.append((f'(!{v} || (uint64_t){n_name} == (uint64_t)({n}))', f'{m.name} length mismatch'))
    if not nullable:
        checks.append((f'({v} || ({n}) == 0)', f'missing {m.name}'))


def emit_checks(w, owner, checks):
    """The conditions emit_member_dec collected, once everything of the
    owner is decoded (a None reason: a statement to run)."""
    for cond, why in checks:
        if why is None:
            w(f'   if (!d->fatal)')
            w(f'      {cond};')
        else:
            w(f'   if (!d->fatal && !({cond}))')
            w(f'      wire_dec_fail(d, "{owner}: {why}");')


def emit_structs(gen, w):
    reg = gen.reg
    structs = gen.structs_all
    emit_enum_checks(gen, w)
    # prototypes
    for sname in structs:
        s = reg.structs[sname]
        w(f'static void wire_enc_{sname}(struct wire_enc *e, const {sname} *s) __attribute__((unused));')
        w(f'static void wire_dec_{sname}(struct wire_dec *d, {sname} *s) __attribute__((unused));')
        if s.stype:
            w(f'static void wire_enc_body_{sname}(struct wire_enc *e, const {sname} *s) __attribute__((unused));')
            w(f'static void wire_dec_body_{sname}(struct wire_dec *d, {sname} *s) __attribute__((unused));')
        if sname in gen.structs_out:
            w(f'static void wire_decout_{sname}(struct wire_dec *d, {sname} *s) __attribute__((unused));')
            if s.stype:
                w(f'static void wire_decout_body_{sname}(struct wire_dec *d, {sname} *s) __attribute__((unused));')
            if s.stype:
                w(f'static void wire_encshape_{sname}(struct wire_enc *e, const {sname} *s) __attribute__((unused));')
                w(f'static void wire_decshape_{sname}(struct wire_dec *d, {sname} *s) __attribute__((unused));')
    w()
    # body encode/decode, chain encode/decode
    for sname in structs:
        s = reg.structs[sname]
        if s.union:
            w(f'static void\nwire_enc_{sname}(struct wire_enc *e, const {sname} *s)\n{{')
            w('   wire_enc_bytes(e, s, sizeof(*s));\n}\n')
            w(f'static void\nwire_dec_{sname}(struct wire_dec *d, {sname} *s)\n{{')
            w('   wire_dec_bytes(d, s, sizeof(*s));\n}\n')
            if sname in gen.structs_out:
                w(f'static void\nwire_decout_{sname}(struct wire_dec *d, {sname} *s)\n{{')
                w('   wire_dec_bytes(d, s, sizeof(*s));\n}\n')
            continue
        output = sname in gen.structs_out and sname not in gen.structs_in
        chain = gen.chain_members(sname, output) if s.stype else []
        # encode
        body = 'body_' if s.stype else ''
        w(f'static void\nwire_enc_{body}{sname}(struct wire_enc *e, const {sname} *s)\n{{')
        if sname in VIDEO_SUBLAYER_SETS:
            w(f'   e->video_sublayers = (uint32_t)s->{VIDEO_SUBLAYER_SETS[sname]} + 1;')
        for m in s.members:
            if m.name == 'sType':
                continue
            if m.name == 'pNext':
                continue
            cond = CONDITIONAL_MEMBERS.get((sname, m.name))
            emit_member_enc(gen, w, sname, s.members, m, 's->', cond=cond)
        if s.stype:
            w('}\n')
            w(f'static void\nwire_enc_{sname}(struct wire_enc *e, const {sname} *s)\n{{')
            w(f'   wire_enc_body_{sname}(e, s);')
            w('   for (const VkBaseInStructure *c = s->pNext; c; c = c->pNext) {')
            w('      switch ((int)c->sType) {')
            for x in chain:
                xs = reg.structs[x]
                w(f'      case {xs.stype}:')
                w(f'         wire_enc_u32(e, (uint32_t)c->sType);')
                w(f'         wire_enc_body_{x}(e, (const {x} *)c);')
                w('         break;')
            w('      default:')
            w('         break; /* unknown or unsupported: skipped, as the spec allows */')
            w('      }')
            w('   }')
            w('   wire_enc_u32(e, 0);')
        w('}\n')
        # decode
        w(f'static void\nwire_dec_{body}{sname}(struct wire_dec *d, {sname} *s)\n{{')
        checks = []
        if s.stype:
            w(f'   s->sType = {s.stype};')
        for m in s.members:
            if m.name in ('sType', 'pNext'):
                continue
            emit_member_dec(gen, w, sname, s.members, m, 's->', checks)
        checks += STRUCT_CHECKS.get(sname, [])
        emit_checks(w, sname, checks)
        checks = []
        if s.stype:
            w('}\n')
            w(f'static void\nwire_dec_{sname}(struct wire_dec *d, {sname} *s)\n{{')
            w(f'   wire_dec_body_{sname}(d, s);')
            w('   VkBaseOutStructure **tail = (VkBaseOutStructure **)&s->pNext;')
            # a structure twice, where vk.xml does not allow it, could show
            # the host one the daemon never checked
            w(f'   uint8_t seen[{max(1, len(chain))}] = {{0}};')
            w('   (void)seen;')
            w('   for (unsigned depth = 0;; depth++) {')
            w('      uint32_t stype = wire_dec_u32(d);')
            w('      if (!stype || d->fatal)')
            w('         break;')
            w('      if (depth >= WIRE_MAX_CHAIN_LENGTH) {')
            w('         wire_dec_fail(d, "pNext chain too long");')
            w('         break;')
            w('      }')
            w('      VkBaseOutStructure *c = NULL;')
            w('      switch (stype) {')
            for k, x in enumerate(chain):
                xs = reg.structs[x]
                w(f'      case {xs.stype}: {{')
                if not xs.allowduplicate:
                    w(f'         if (seen[{k}]++) {{')
                    w(f'            wire_dec_fail(d, "a structure twice in the pNext chain of {sname}");')
                    w('            break;')
                    w('         }')
                w(f'         {x} *x = wire_dec_alloc(d, sizeof(*x));')
                w(f'         if (x) wire_dec_body_{x}(d, x);')
                w('         c = (VkBaseOutStructure *)x;')
                w('         break;')
                w('      }')
            w('      default:')
            w(f'         wire_dec_fail(d, "sType not allowed in the pNext chain of {sname}");')
            w('         break;')
            w('      }')
            w('      if (!c)')
            w('         break;')
            w('      c->pNext = NULL;')
            w('      *tail = c;')
            w('      tail = &c->pNext;')
            w('   }')
        emit_checks(w, sname, checks)
        w('}\n')
        if sname not in gen.structs_out:
            continue
        # output decode into application memory (ICD side)
        ochain = gen.chain_members(sname, True) if s.stype else []
        w(f'static void\nwire_decout_{body}{sname}(struct wire_dec *d, {sname} *s)\n{{')
        sized = gen.sized_outputs(sname) if s.stype else {}
        for a, n in sized.items():
            w(f'   const uint32_t capacity_{a} = s->{a} ? s->{n} : 0;')
        for m in s.members:
            if m.name in ('sType', 'pNext'):
                continue
            k = reg.kind(m.type)
            if m.name in sized:
                n = sized[m.name]
                w('   if (wire_dec_u32(d)) {')
                w(f'      const uint32_t n = wire_dec_count(d, {gen.min_wire_size(m)});')
                w(f'      if (!s->{m.name} || n != s->{n} || n > capacity_{m.name}) {{')
                w(f'         wire_dec_fail(d, "{sname}.{m.name}: more than the application has room for");')
                w('         return;')
                w('      }')
                if k == 'void':
                    w(f'      wire_dec_bytes(d, s->{m.name}, n);')
                else:
                    w('      for (uint32_t i = 0; i < n; i++) {')
                    if k == 'struct':
                        w(f'         wire_decout_{reg.resolve_type(m.type)}(d, &s->{m.name}[i]);')
                    else:
                        emit_dec_value(gen, w, '         ', m.type, f's->{m.name}[i]')
                    w('      }')
                w('   }')
                continue
            if k == 'struct':
                if m.dims:
                    w(f'   for (uint32_t i = 0; i < {m.dims[0]}; i++)')
                    w(f'      wire_decout_{reg.resolve_type(m.type)}(d, &s->{m.name}[i]);')
                else:
                    w(f'   wire_decout_{reg.resolve_type(m.type)}(d, &s->{m.name});')
            else:
                emit_dec_value(gen, w, '   ', m.type, f's->{m.name}', m.dims)
        if s.stype:
            w('}\n')
            w(f'static void\nwire_decout_{sname}(struct wire_dec *d, {sname} *s)\n{{')
            w(f'   wire_decout_body_{sname}(d, s);')
            w('   VkBaseOutStructure *app = (VkBaseOutStructure *)s->pNext;')
            w('   for (;;) {')
            w('      uint32_t stype = wire_dec_u32(d);')
            w('      if (!stype || d->fatal)')
            w('         break;')
            w('      while (app && (uint32_t)app->sType != stype)')
            w('         app = app->pNext;')
            w('      if (!app) {')
            w('         wire_dec_fail(d, "reply chain does not match the request");')
            w('         break;')
            w('      }')
            w('      switch (stype) {')
            for x in ochain:
                w(f'      case {reg.structs[x].stype}:')
                w(f'         wire_decout_body_{x}(d, ({x} *)app);')
                w('         break;')
            w('      default:')
            w('         wire_dec_fail(d, "unexpected sType in reply");')
            w('         break;')
            w('      }')
            w('      app = app->pNext;')
            w('   }')
        w('}\n')
        if not s.stype:
            continue
        # shapes
        w(f'static void\nwire_encshape_{sname}(struct wire_enc *e, const {sname} *s)\n{{')
        emit_sized_room(gen, w, '   ', sname, 's')
        w('   for (const VkBaseInStructure *c = s->pNext; c; c = c->pNext) {')
        w('      switch ((int)c->sType) {')
        plain = [x for x in ochain if not gen.sized_outputs(x)]
        for x in ochain:
            if x in plain:
                continue
            w(f'      case {reg.structs[x].stype}: {{')
            w(f'         const {x} *x = (const {x} *)c;')
            w('         wire_enc_u32(e, (uint32_t)c->sType);')
            emit_sized_room(gen, w, '         ', x, 'x')
            w('         break;')
            w('      }')
        for x in plain:
            w(f'      case {reg.structs[x].stype}:')
        if plain:
            w('         wire_enc_u32(e, (uint32_t)c->sType);')
            w('         break;')
        w('      default:')
        w('         break;')
        w('      }')
        w('   }')
        w('   wire_enc_u32(e, 0);')
        w('}\n')
        w(f'static void\nwire_decshape_{sname}(struct wire_dec *d, {sname} *s)\n{{')
        w(f'   s->sType = {s.stype};')
        emit_sized_shape(gen, w, '   ', sname, 's', 'return')
        w('   VkBaseOutStructure **tail = (VkBaseOutStructure **)&s->pNext;')
        w('   for (unsigned depth = 0;; depth++) {')
        w('      uint32_t stype = wire_dec_u32(d);')
        w('      if (!stype || d->fatal)')
        w('         break;')
        w('      size_t size = 0;')
        w('      switch (stype) {')
        for x in ochain:
            w(f'      case {reg.structs[x].stype}: size = sizeof({x}); break;')
        w('      default: break;')
        w('      }')
        w('      if (!size || depth >= WIRE_MAX_CHAIN_LENGTH) {')
        w(f'         wire_dec_fail(d, "bad output chain for {sname}");')
        w('         break;')
        w('      }')
        w('      VkBaseOutStructure *c = wire_dec_alloc(d, size);')
        w('      if (!c)')
        w('         break;')
        w('      c->sType = (VkStructureType)stype;')
        sized_chain = [x for x in ochain if gen.sized_outputs(x)]
        if sized_chain:
            # the host gets the room the application has, never more than
            # the daemon's limit, and never a null array it did not ask for
            w('      switch (stype) {')
            for x in sized_chain:
                w(f'      case {reg.structs[x].stype}: {{')
                w(f'         {x} *x = ({x} *)c;')
                emit_sized_shape(gen, w, '         ', x, 'x', 'break')
                w('         break;')
                w('      }')
            w('      default:')
            w('         break;')
            w('      }')
        w('      *tail = c;')
        w('      tail = &c->pNext;')
        w('   }')
        w('}\n')


# ==========================================================================
# Commands


class P:
    """A command parameter with its role."""

    def __init__(self, gen, cmd, m):
        self.m = m
        self.name = m.name
        self.role = gen.param_role(cmd, m)
        self.kind = gen.reg.kind(m.type)
        self.type = gen.reg.resolve_type(m.type) if self.kind != 'scalar' else m.type
        self.skip = m.type == 'VkAllocationCallbacks'


def cmd_params(gen, cmd):
    return [P(gen, cmd, m) for m in cmd.params]


def decl_type(m):
    """The C declaration of a parameter, from vk.xml's text."""
    t = m.text
    t = re.sub(r'\s+', ' ', t)
    return t


def cmd_signature(cmd):
    return ', '.join(decl_type(p) for p in cmd.params)


def is_sync(gen, cmd):
    if cmd.name in FORCE_SYNC:
        return True
    if cmd.name in FORCE_ASYNC:
        return False
    if cmd.ret != 'void':
        return True
    return any(P(gen, cmd, p).role != 'input' for p in cmd.params)


def lost_result(cmd):
    """The VkResult the command returns once its daemon is gone."""
    if cmd.name in LOST_SUCCEEDS:
        return 'VK_SUCCESS'
    for code in LOST_RESULTS:
        if code in cmd.errorcodes:
            return code
    return cmd.errorcodes[0] if cmd.errorcodes else 'VK_SUCCESS'


def emit_lost_outputs(gen, w, cmd, params, ind):
    """Empties what the command outputs when there is no reply: counts are
    0, output structs are zeroed (their sType and pNext kept)."""
    reg = gen.reg
    for p in params:
        if p.role == 'out_count':
            w(f'{ind}if ({p.name}) *{p.name} = 0;')
        elif p.role == 'out_struct' and not p.m.len:
            s = reg.structs[p.type]
            if s.stype:
                w(f'{ind}if ({p.name}) {{')
                w(f'{ind}   __typeof__({p.name}->pNext) next = {p.name}->pNext;')
                w(f'{ind}   memset({p.name}, 0, sizeof(*{p.name}));')
                w(f'{ind}   {p.name}->sType = {s.stype};')
                w(f'{ind}   {p.name}->pNext = next;')
                w(f'{ind}}}')
            else:
                w(f'{ind}if ({p.name}) memset({p.name}, 0, sizeof(*{p.name}));')


def records_in_cmdbuf(cmd):
    return cmd.params[0].type == 'VkCommandBuffer' and cmd.name not in NOT_RECORDED


def out_len_expr(gen, cmd, p, prefix):
    """Element count of output parameter p."""
    m = p.m
    if not m.len:
        return None
    first = m.len[0]
    names = {x.name for x in cmd.params}
    if first in names:
        q = next(x for x in cmd.params if x.name == first)
        if q.ptr and not q.const:
            return None  # in/out count: handled by role out_count
        return prefix + first
    if '->' in first:
        base, field = first.split('->')
        return f'{prefix}{base}->{field}'
    if first.isdigit() or first == 'WIRE_MAX_OPAQUE_DATA':
        return first  # a fixed count (later registries write len="1"; OPAQUE_OUTPUTS)
    raise Exception(f'{cmd.name}: len {first}')


def count_param_of(cmd, p):
    """The in/out count parameter named by p's len, or None."""
    if not p.m.len:
        return None
    for q in cmd.params:
        if q.name == p.m.len[0] and q.ptr and not q.const:
            return q
    return None


def emit_cmd_encoders(gen, w, hw):
    """ICD side: request encoders and reply decoders."""
    reg = gen.reg
    for name in gen.wire_commands:
        cmd = reg.commands[name]
        params = cmd_params(gen, cmd)
        sig = cmd_signature(cmd)
        hw(f'void wire_enc_{name}(struct wire_enc *e, {sig});')
        w(f'void\nwire_enc_{name}(struct wire_enc *e, {sig})\n{{')
        for p in params:
            if p.skip:
                continue
            m = p.m
            if p.role == 'input':
                cond = None
                emit_member_enc(gen, w, name, cmd.params, m, '', cond=cond)
            elif p.role == 'out_count':
                w(f'   wire_enc_u32(e, {p.name} != NULL);')
                wt = gen.wire_scalar(m.type)
                w(f'   if ({p.name}) wire_enc_{WIRE_FN[wt]}(e, ({wt})*{p.name});')
            elif p.role == 'out_handle':
                n = out_len_expr(gen, cmd, p, '') or '1'
                w(f'   for (uint32_t i = 0; i < (uint32_t)({n}); i++)')
                emit_enc_value(gen, w, '      ', m.type, f'{p.name}[i]')
            elif p.role == 'out_array':
                w(f'   wire_enc_u32(e, {p.name} != NULL);')
                if p.kind == 'struct' and reg.structs[p.type].stype:
                    cp = count_param_of(cmd, p)
                    n = f'*{cp.name}' if cp else out_len_expr(gen, cmd, p, '')
                    w(f'   if ({p.name})')
                    w(f'      for (uint32_t i = 0; i < (uint32_t)({n}); i++)')
                    w(f'         wire_encshape_{p.type}(e, &{p.name}[i]);')
            elif p.role == 'out_struct':
                w(f'   wire_enc_u32(e, {p.name} != NULL);')
                if reg.structs[p.type].stype:
                    w(f'   if ({p.name}) wire_encshape_{p.type}(e, {p.name});')
            elif p.role == 'out_scalar':
                w(f'   wire_enc_u32(e, {p.name} != NULL);')
        w('}\n')

        # reply decoder (ICD)
        if not is_sync(gen, cmd):
            continue
        rt = 'VkResult' if cmd.ret == 'VkResult' else cmd.ret
        ret_param = f'{rt} *ret, ' if cmd.ret != 'void' else ''
        hw(f'void wire_decreply_{name}(struct wire_dec *d, {ret_param}{sig});')
        w(f'void\nwire_decreply_{name}(struct wire_dec *d, {ret_param}{sig})\n{{')
        for p in params:
            if p.role == 'out_count':
                w(f'   const uint64_t cap_{p.name} = {p.name} ? *{p.name} : 0;')
                w(f'   (void)cap_{p.name};')
        if cmd.ret != 'void':
            emit_dec_value(gen, w, '   ', cmd.ret, '*ret')
        for p in params:
            m = p.m
            if p.role == 'out_count':
                wt = gen.wire_scalar(m.type)
                w(f'   if ({p.name}) {{')
                w(f'      uint64_t v = wire_dec_{WIRE_FN[wt]}(d);')
                arrays = ' || '.join(q.name for q in params if count_param_of(cmd, q) is m) or 'false'
                # too small a buffer: the size needed comes back, no data
                if 'VK_ERROR_NOT_ENOUGH_SPACE_KHR' in cmd.errorcodes:
                    arrays = f'({arrays}) && *ret != VK_ERROR_NOT_ENOUGH_SPACE_KHR'
                w(f'      if (v > cap_{p.name} && ({arrays}))')
                w('         wire_dec_fail(d, "reply count exceeds capacity");')
                w(f'      else *{p.name} = ({m.type})v;')
                w('   }')
            elif p.role == 'out_handle':
                n = out_len_expr(gen, cmd, p, '') or '1'
                w(f'   for (uint32_t i = 0; i < (uint32_t)({n}); i++)')
                w(f'      if (!wire_dec_u32(d)) {p.name}[i] = VK_NULL_HANDLE;')
            elif p.role in ('out_array', 'out_struct', 'out_scalar'):
                w(f'   if (wire_dec_u32(d)) {{')
                w(f'      if (!{p.name}) {{')
                w('         wire_dec_fail(d, "unexpected output");')
                w('         return;')
                w('      }')
                if p.role == 'out_scalar' and (name, p.name) in FD_MEMBERS:
                    w(f'      *{p.name} = wire_dec_fd(d);')
                elif p.role == 'out_scalar':
                    emit_dec_value(gen, w, '      ', m.type, f'*{p.name}')
                elif p.role == 'out_struct':
                    w(f'      wire_decout_{p.type}(d, {p.name});')
                else:
                    cp = count_param_of(cmd, p)
                    cap = f'cap_{cp.name}' if cp else out_len_expr(gen, cmd, p, '')
                    w('      uint32_t n = wire_dec_u32(d);')
                    w(f'      if ((uint64_t)n > (uint64_t)({cap})) {{')
                    w('         wire_dec_fail(d, "reply array exceeds capacity");')
                    w('         return;')
                    w('      }')
                    if p.kind == 'void':
                        w(f'      wire_dec_bytes(d, {p.name}, n);')
                    elif p.kind == 'struct':
                        w('      for (uint32_t i = 0; i < n; i++)')
                        w(f'         wire_decout_{p.type}(d, &{p.name}[i]);')
                    else:
                        w(f'      wire_dec_bytes(d, {p.name}, (size_t)n * sizeof(*{p.name}));')
                w('   }')
        for p, n in writeback_params(gen, cmd):
            w(f'   for (uint32_t i = 0; {p.name} && i < (uint32_t)({n}) && !d->fatal; i++)')
            w(f'      wire_decback_{gen.reg.resolve_type(p.type)}(d, &{p.name}[i]);')
        w('}\n')


def writeback_structs(gen):
    """Input structs through which a WRITEBACK_MEMBERS member is reached:
    the struct itself, by a member, or by its pNext chain (found once)."""
    if not hasattr(gen, '_writeback_structs'):
        gen._writeback_structs = find_writeback_structs(gen)
    return set(gen._writeback_structs)


def find_writeback_structs(gen):
    reg = gen.reg
    found = {x for x, _ in WRITEBACK_MEMBERS if x in gen.structs_in}
    while True:
        more = set()
        for x in gen.structs_in - found:
            st = reg.structs[x]
            if any(reg.resolve_type(m.type) in found for m in st.members if m.name != 'pNext') or \
               any(y in found for y in gen.chain_members(x, False)):
                more.add(x)
        if not more:
            return found
        found |= more


# Create infos whose encoding names what the worker keeps in its pipeline
# cache (daemon/worker/gpud_pipecache.c hashes it, handles cleared).
KEYED_STRUCTS = ('VkComputePipelineCreateInfo', 'VkGraphicsPipelineCreateInfo')


def emit_struct_keys(gen, w, hw):
    for sname in KEYED_STRUCTS:
        if sname not in gen.structs_in:
            continue
        hw(f'void wire_key_{sname}(struct wire_enc *e, const {sname} *s);')
        w(f'void\nwire_key_{sname}(struct wire_enc *e, const {sname} *s)\n{{')
        w(f'   wire_enc_{sname}(e, s);')
        w('}\n')


def emit_writeback(gen, w):
    """wire_encback_X (daemon, after the call: what the host wrote) and
    wire_decback_X (ICD: into the application's storage), for each struct
    leading to a write-back member.  The _body variants leave out the pNext
    chain, which the struct heading it walks."""
    reg = gen.reg
    found = sorted(writeback_structs(gen))
    for x in found:
        for kind in ('enc', 'dec'):
            arg = 'struct wire_enc *e' if kind == 'enc' else 'struct wire_dec *d'
            w(f'static void wire_{kind}back_{x}({arg}, const {x} *s) __attribute__((unused));')
            w(f'static void wire_{kind}back_body_{x}({arg}, const {x} *s) __attribute__((unused));')
    w()
    for x in found:
        st = reg.structs[x]
        members = [m for m in st.members if m.name not in ('sType', 'pNext')]
        chain = [y for y in gen.chain_members(x, False) if y in found]
        # body
        for kind in ('enc', 'dec'):
            arg = 'struct wire_enc *e' if kind == 'enc' else 'struct wire_dec *d'
            w(f'static void\nwire_{kind}back_body_{x}({arg}, const {x} *s)\n{{')
            w(f'   (void){"e" if kind == "enc" else "d"};')
            w('   (void)s;')
            for m in members:
                t = reg.resolve_type(m.type)
                v = 's->' + m.name
                n = member_len(gen, st.members, m, 's->') if m.len else None
                if (x, m.name) in WRITEBACK_MEMBERS:
                    n = n or '1'
                    if kind == 'enc':
                        w(f'   wire_enc_u32(e, {v} != NULL);')
                        w(f'   if ({v}) {{')
                        w(f'      wire_enc_u32(e, (uint32_t)({n}));')
                        w(f'      for (uint32_t i = 0; i < (uint32_t)({n}); i++)')
                        emit_enc_value(gen, w, '         ', m.type, f'{v}[i]')
                        w('   }')
                    else:
                        w('   if (wire_dec_u32(d)) {')
                        w('      uint32_t n = wire_dec_u32(d);')
                        w(f'      if (!{v} || n != (uint32_t)({n})) {{')
                        w(f'         wire_dec_fail(d, "{x}.{m.name}: write-back does not fit");')
                        w('         return;')
                        w('      }')
                        w('      for (uint32_t i = 0; i < n && !d->fatal; i++)')
                        emit_dec_value(gen, w, '         ', m.type, f'{v}[i]')
                        w('   }')
                elif t in found:
                    idx = '' if not m.ptr else '[i]'
                    ref = f'&{v}{idx}' if m.ptr else f'&{v}'
                    cnt = n or '1'
                    w(f'   if ({"true" if not m.ptr else v})')
                    w(f'      for (uint32_t i = 0; i < (uint32_t)({cnt if m.ptr else "1"}); i++)')
                    w(f'         wire_{kind}back_{t}({"e" if kind == "enc" else "d"}, {ref});')
            w('}\n')
        # with the chain
        w(f'static void\nwire_encback_{x}(struct wire_enc *e, const {x} *s)\n{{')
        w(f'   wire_encback_body_{x}(e, s);')
        if st.stype:
            w('   for (const VkBaseInStructure *c = s->pNext; c; c = c->pNext) {')
            w('      switch ((int)c->sType) {')
            for y in chain:
                w(f'      case {reg.structs[y].stype}:')
                w('         wire_enc_u32(e, (uint32_t)c->sType);')
                w(f'         wire_encback_body_{y}(e, (const {y} *)c);')
                w('         break;')
            w('      default:')
            w('         break;')
            w('      }')
            w('   }')
            w('   wire_enc_u32(e, 0);')
        w('}\n')
        w(f'static void\nwire_decback_{x}(struct wire_dec *d, const {x} *s)\n{{')
        w(f'   wire_decback_body_{x}(d, s);')
        if st.stype:
            w('   const VkBaseInStructure *c = s->pNext;')
            w('   for (;;) {')
            w('      uint32_t stype = wire_dec_u32(d);')
            w('      if (!stype || d->fatal)')
            w('         break;')
            w('      while (c && (uint32_t)c->sType != stype)')
            w('         c = c->pNext;')
            w('      switch (c ? (int)stype : 0) {')
            for y in chain:
                w(f'      case {reg.structs[y].stype}:')
                w(f'         wire_decback_body_{y}(d, (const {y} *)c);')
                w('         break;')
            w('      default:')
            w(f'         wire_dec_fail(d, "{x}: write-back for a struct not in the chain");')
            w('         return;')
            w('      }')
            w('      c = c->pNext;')
            w('   }')
        w('}\n')


def writeback_params(gen, cmd):
    """(param, element count) of the command's inputs that lead to write-backs."""
    found = writeback_structs(gen)
    out = []
    for p in cmd_params(gen, cmd):
        if p.role == 'input' and p.m.ptr == 1 and gen.reg.resolve_type(p.type) in found:
            n = member_len(gen, cmd.params, p.m, '') if p.m.len else '1'
            out.append((p, n))
    return out


def args_struct_name(name):
    return f'wire_args_{name}'


def emit_cmd_decoders(gen, w, hw):
    """Daemon side: request decoders into argument structs and reply encoders."""
    reg = gen.reg
    for name in gen.wire_commands:
        cmd = reg.commands[name]
        params = cmd_params(gen, cmd)
        hw(f'struct {args_struct_name(name)} {{')
        for p in params:
            if p.skip:
                continue
            m = p.m
            if p.role == 'input':
                t = decl_type(m)
                if m.dims:
                    t = t.replace('const ', '')
                hw(f'   {t};')
            elif p.role == 'out_handle':
                hw(f'   {p.type} *{p.name};')
                hw(f'   uint64_t *{p.name}_ids;')
                hw(f'   uint32_t {p.name}_count;')
            elif p.role == 'out_count':
                hw(f'   {m.type} *{p.name};')
            elif p.role == 'out_array':
                t = 'uint8_t' if p.kind == 'void' else p.type
                hw(f'   {t} *{p.name};')
                hw(f'   uint32_t {p.name}_cap;')
            elif p.role in ('out_struct', 'out_scalar'):
                hw(f'   {p.type} *{p.name};')
        if cmd.ret != 'void':
            hw(f'   {cmd.ret} ret;')
        hw('};')
        hw(f'bool wire_decargs_{name}(struct wire_dec *d, struct {args_struct_name(name)} *a);')
        w(f'bool\nwire_decargs_{name}(struct wire_dec *d, struct {args_struct_name(name)} *a)\n{{')
        checks = []
        for p in params:
            if p.skip:
                continue
            m = p.m
            if p.role == 'input':
                emit_member_dec(gen, w, name, cmd.params, m, 'a->', checks)
            elif p.role == 'out_count':
                wt = gen.wire_scalar(m.type)
                w('   if (wire_dec_u32(d)) {')
                w(f'      a->{p.name} = wire_dec_alloc(d, sizeof(*a->{p.name}));')
                w(f'      uint64_t v = wire_dec_{WIRE_FN[wt]}(d);')
                w(f'      if (a->{p.name}) *a->{p.name} = ({m.type})v;')
                w('   }')
                w(f'   if (!a->{p.name}) wire_dec_fail(d, "{name}: missing {p.name}");')
            elif p.role == 'out_handle':
                n = out_len_expr(gen, cmd, p, 'a->') or '1'
                w('   {')
                if '->' in n:
                    base = n.rsplit('->', 1)[0]
                    w(f'      if (!{base}) {{')
                    w(f'         wire_dec_fail(d, "{name}: missing {base[3:]}");')
                    w('         return false;')
                    w('      }')
                w(f'      uint64_t n = (uint64_t)({n});')
                w(f'      if (n > wire_dec_remaining(d) / 8) {{')
                w(f'         wire_dec_fail(d, "{name}: bad handle count");')
                w('         return false;')
                w('      }')
                w(f'      a->{p.name}_count = (uint32_t)n;')
                w(f'      a->{p.name}_ids = wire_dec_alloc(d, sizeof(uint64_t) * (n ? n : 1));')
                w(f'      a->{p.name} = wire_dec_alloc(d, sizeof(*a->{p.name}) * (n ? n : 1));')
                w(f'      for (uint32_t i = 0; a->{p.name}_ids && i < n; i++)')
                w(f'         a->{p.name}_ids[i] = wire_dec_new_id(d, wire_dec_u64(d));')
                w('   }')
            elif p.role == 'out_array':
                cp = count_param_of(cmd, p)
                n = f'*a->{cp.name}' if cp else out_len_expr(gen, cmd, p, 'a->')
                w('   if (wire_dec_u32(d)) {')
                w(f'      uint64_t n = (uint64_t)({n});')
                limit = 'WIRE_MAX_OUTPUT_BYTES' if p.kind == 'void' else 'WIRE_MAX_OUTPUT_ELEMENTS'
                w(f'      if (n > {limit}) {{')
                w(f'         wire_dec_fail(d, "{name}: output too large");')
                w('         return false;')
                w('      }')
                w(f'      a->{p.name}_cap = (uint32_t)n;')
                w(f'      a->{p.name} = wire_dec_alloc(d, sizeof(*a->{p.name}) * (n ? n : 1));')
                if p.kind == 'struct' and reg.structs[p.type].stype:
                    w(f'      for (uint32_t i = 0; a->{p.name} && i < n; i++)')
                    w(f'         wire_decshape_{p.type}(d, &a->{p.name}[i]);')
                w('   }')
            elif p.role in ('out_struct', 'out_scalar'):
                w('   if (wire_dec_u32(d)) {')
                w(f'      a->{p.name} = wire_dec_alloc(d, sizeof(*a->{p.name}));')
                if p.role == 'out_struct' and reg.structs[p.type].stype:
                    w(f'      if (a->{p.name}) wire_decshape_{p.type}(d, a->{p.name});')
                w('   }')
                w(f'   if (!a->{p.name}) wire_dec_fail(d, "{name}: missing {p.name}");')
        emit_checks(w, name, checks)
        w('   return !d->fatal;')
        w('}\n')

        if not is_sync(gen, cmd):
            continue
        hw(f'void wire_encreply_{name}(struct wire_enc *e, const struct {args_struct_name(name)} *a);')
        w(f'void\nwire_encreply_{name}(struct wire_enc *e, const struct {args_struct_name(name)} *a)\n{{')
        if cmd.ret != 'void':
            emit_enc_value(gen, w, '   ', cmd.ret, 'a->ret')
        for p in params:
            m = p.m
            if p.role == 'out_count':
                wt = gen.wire_scalar(m.type)
                w(f'   wire_enc_{WIRE_FN[wt]}(e, ({wt})*a->{p.name});')
            elif p.role == 'out_handle':
                w(f'   for (uint32_t i = 0; i < a->{p.name}_count; i++)')
                w(f'      wire_enc_u32(e, a->{p.name}[i] != VK_NULL_HANDLE);')
            elif p.role in ('out_scalar', 'out_struct'):
                w(f'   wire_enc_u32(e, a->{p.name} != NULL);')
                w(f'   if (a->{p.name}) {{')
                if p.role == 'out_scalar' and (name, p.name) in FD_MEMBERS:
                    w(f'      wire_enc_fd(e, a->ret == VK_SUCCESS ? *a->{p.name} : -1);')
                elif p.role == 'out_scalar':
                    emit_enc_value(gen, w, '      ', m.type, f'*a->{p.name}')
                else:
                    w(f'      wire_enc_{p.type}(e, a->{p.name});')
                w('   }')
            elif p.role == 'out_array':
                cp = count_param_of(cmd, p)
                w(f'   wire_enc_u32(e, a->{p.name} != NULL);')
                w(f'   if (a->{p.name}) {{')
                if cp:
                    w(f'      uint32_t n = (uint64_t)*a->{cp.name} < a->{p.name}_cap ? (uint32_t)*a->{cp.name} : a->{p.name}_cap;')
                    if 'VK_ERROR_NOT_ENOUGH_SPACE_KHR' in cmd.errorcodes:
                        w('      if (a->ret == VK_ERROR_NOT_ENOUGH_SPACE_KHR)')
                        w('         n = 0; /* nothing written, the size needed */')
                else:
                    w(f'      uint32_t n = a->{p.name}_cap;')
                w('      wire_enc_u32(e, n);')
                if p.kind == 'void':
                    w(f'      wire_enc_bytes(e, a->{p.name}, n);')
                elif p.kind == 'struct':
                    w('      for (uint32_t i = 0; i < n; i++)')
                    w(f'         wire_enc_{p.type}(e, &a->{p.name}[i]);')
                else:
                    w(f'      wire_enc_bytes(e, a->{p.name}, (size_t)n * sizeof(*a->{p.name}));')
                w('   }')
        for p, n in writeback_params(gen, cmd):
            w(f'   for (uint32_t i = 0; a->{p.name} && i < (uint32_t)({member_len(gen, cmd.params, p.m, "a->") if p.m.len else "1"}); i++)')
            w(f'      wire_encback_{gen.reg.resolve_type(p.type)}(e, &a->{p.name}[i]);')
        w('}\n')


# ==========================================================================
# Replay: the fast path for recorded commands


def fast_shape(gen, cmd):
    """How a recorded command decodes on the fast path: a list of
    (param, offset, wire size) for its fixed part, and the trailing byte
    array param (or None); None when the command has no fast path (a
    pointer other than one trailing byte array, a struct, an fd...)."""
    reg = gen.reg
    if not records_in_cmdbuf(cmd) or cmd.ret != 'void':
        return None
    fixed, off, tail = [], 0, None
    params = cmd.params
    for i, m in enumerate(params):
        k = reg.kind(m.type)
        if tail is not None:
            return None
        if m.ptr == 1 and k == 'void' and m.len and i == len(params) - 1 and \
                member_len(gen, params, m, 'a->'):
            tail = m
            continue
        if m.ptr or m.objecttype or (cmd.name, m.name) in FD_MEMBERS:
            return None
        if k == 'handle':
            if i and reg.handles[reg.resolve_type(m.type)][0]:
                return None  # a dispatchable handle after the first
            size = 8
        elif k in ('scalar', 'enum', 'bitmask', 'basetype') and reg.scalar_info(m.type):
            wt, native = reg.scalar_info(m.type)
            if m.dims:
                n = 1
                for d in m.dims:
                    if not str(d).isdigit():
                        return None
                    n *= int(d)
                size = (native * n + 3) & ~3
            else:
                size = 8 if wt in ('uint64_t', 'int64_t', 'double') else 4
        else:
            return None
        fixed.append((m, off, size))
        off += size
    return fixed, off, tail


def emit_fast_decoders(gen, w):
    """Daemon side (gpud_gen.c, beside the replay that calls them):
    fastargs_vkCmdFoo(), the decoder of a recorded command on the replay's
    fast path.  The command's size is checked once, its values are loaded
    from their offsets, handles translated, enums checked, a trailing byte
    array points into the message (a private copy); the command buffer is the
    chunk's, which the caller checked."""
    reg = gen.reg
    enums = set()
    for name in gen.wire_commands:
        shape = fast_shape(gen, reg.commands[name])
        for m, _, _ in (shape[0] if shape else []):
            if not m.dims and checked_enum(gen, m.type):
                enums.add(reg.resolve_type(m.type))
    emit_enum_checks(gen, w, enums)
    for name in gen.wire_commands:
        cmd = reg.commands[name]
        shape = fast_shape(gen, cmd)
        if shape is None:
            continue
        fixed, size, tail = shape
        w(f'static inline bool\nfastargs_{name}(struct wire_dec *d, struct {args_struct_name(name)} *a, '
          'VkCommandBuffer cb)\n{')
        w('   const uint8_t *p = d->p;')
        w('   const size_t left = wire_dec_remaining(d);')
        if len(fixed) == 1 and tail is None:
            w('   (void)p;')
        if tail is None:
            w(f'   if (left != {size})')
        else:
            w(f'   if (left < {size + 4})')
        w(f'      return wire_dec_fail(d, "{name}: wrong size");')
        for m, off, sz in fixed:
            k = reg.kind(m.type)
            rt = reg.resolve_type(m.type)
            v = f'a->{m.name}'
            if off == 0:
                w(f'   {v} = cb;')
                continue
            if k == 'handle':
                objtype = reg.handles[rt][1]
                nullable = 'true' if member_nullable(gen, name, m) else 'false'
                w('   {')
                w('      uint64_t v;')
                w(f'      memcpy(&v, p + {off}, 8);')
                w(f'      {v} = ({rt})(uintptr_t)wire_dec_handle_id(d, v, {objtype}, {nullable});')
                w('      if (d->fatal)')
                w('         return false;')
                w('   }')
            elif m.dims:
                w(f'   memcpy({v}, p + {off}, sizeof({v}));')
            else:
                wt = gen.wire_scalar(m.type)
                w('   {')
                w(f'      {wt} v;')
                w(f'      memcpy(&v, p + {off}, sizeof(v));')
                if checked_enum(gen, m.type):
                    w(f'      if (!wire_enum_ok_{rt}((int32_t)v))')
                    w(f'         return wire_dec_fail(d, "{rt} value out of range");')
                w(f'      {v} = ({m.type})v;')
                w('   }')
        if tail is not None:
            n = member_len(gen, cmd.params, tail, 'a->')
            v = f'a->{tail.name}'
            w('   {')
            w(f'      const uint8_t *q = p + {size};')
            w('      uint32_t present, n = 0;')
            w('      memcpy(&present, q, 4);')
            w('      if (!present) {')
            w(f'         if (left != {size + 4})')
            w(f'            return wire_dec_fail(d, "{name}: wrong size");')
            w(f'         {v} = NULL;')
            w('      } else {')
            w(f'         if (left < {size + 8})')
            w(f'            return wire_dec_fail(d, "{name}: wrong size");')
            w('         memcpy(&n, q + 4, 4);')
            w(f'         if ((uint64_t)left != {size + 8}u + (((uint64_t)n + 3) & ~3ull))')
            w(f'            return wire_dec_fail(d, "{name}: wrong size");')
            w(f'         {v} = q + 8;')
            w('      }')
            w(f'      if ({v} && (uint64_t)n != (uint64_t)({n}))')
            w(f'         return wire_dec_fail(d, "{name}: {tail.name} length mismatch");')
            if not member_nullable(gen, name, tail):
                w(f'      if (!{v} && ({n}) != 0)')
                w(f'         return wire_dec_fail(d, "{name}: missing {tail.name}");')
            w('   }')
        w('   d->p = d->end;')
        w('   return true;')
        w('}\n')

# ==========================================================================
# ICD entrypoints


def dispatchable_first(gen, cmd):
    p = cmd.params[0]
    t = gen.reg.resolve_type(p.type)
    if t in gen.reg.handles and gen.reg.handles[t][0]:
        return p
    return None


def destroyed_param(gen, cmd):
    if not (cmd.name.startswith('vkDestroy') or cmd.name.startswith('vkFree')):
        return None
    handles = [p for p in cmd.params[1:] if gen.reg.kind(p.type) == 'handle']
    return handles[-1] if handles else None


def emit_icd_fast_record(gen, w, cmd, shape):
    """The body of the ICD's entrypoint of a recorded command with a fast
    shape: the whole command reserved at once and its values stored at their
    offsets, the same bytes wire_enc_vkFoo() writes."""
    reg = gen.reg
    fixed, size, tail = shape
    first = cmd.params[0].name
    if tail is None:
        w(f'   uint8_t *p = icd_cmd_reserve({first}, WIRE_OP_{cmd.name}, {size});')
    else:
        n = member_len(gen, cmd.params, tail, '')
        w(f'   const uint32_t n = {tail.name} ? (uint32_t)({n}) : 0;')
        w(f'   uint8_t *p = icd_cmd_reserve({first}, WIRE_OP_{cmd.name}, '
          f'{size + 4} + ({tail.name} ? 4 + ((n + 3) & ~3u) : 0));')
    w('   if (!p)')
    w('      return;')
    for m, off, sz in fixed:
        k = reg.kind(m.type)
        rt = reg.resolve_type(m.type)
        if k == 'handle':
            expr = (f'wire_object_id({m.name})' if gen.is_pointer_handle(rt)
                    else f'(uint64_t)(uintptr_t)({m.name})')
            w(f'   {{ const uint64_t v = {expr}; memcpy(p + {off}, &v, 8); }}')
        elif m.dims:
            w(f'   memcpy(p + {off}, {m.name}, sizeof({m.name}[0]) * {" * ".join(str(d) for d in m.dims)});')
        else:
            wt = gen.wire_scalar(m.type)
            w(f'   {{ const {wt} v = ({wt})({m.name}); memcpy(p + {off}, &v, sizeof(v)); }}')
    if tail is not None:
        w(f'   {{ const uint32_t present = {tail.name} != NULL; memcpy(p + {size}, &present, 4); }}')
        w(f'   if ({tail.name}) {{')
        w(f'      memcpy(p + {size + 4}, &n, 4);')
        w(f'      memcpy(p + {size + 8}, {tail.name}, n);')
        w(f'      memset(p + {size + 8} + n, 0, ((n + 3) & ~3u) - n);')
        w('   }')
    w('}\n')


def emit_icd(gen, w):
    reg = gen.reg
    w('#include "icd_gen.h"')
    w()
    for name in gen.commands:
        if name in gen.client_only:
            cmd = reg.commands[name]
            w(f'VKAPI_ATTR {cmd.ret} VKAPI_CALL icd_{name}({cmd_signature(cmd)}) __attribute__((weak));')
    w()
    for name in gen.wire_commands:
        cmd = reg.commands[name]
        params = cmd_params(gen, cmd)
        sig = cmd_signature(cmd)
        ret = cmd.ret
        first = dispatchable_first(gen, cmd)
        args = ', '.join(p.name for p in cmd.params)
        sync = is_sync(gen, cmd)
        lost = {'VkResult': lost_result(cmd), 'void': ''}.get(ret, '0')
        w(f'extern __typeof__(icd_gen_{name}) icd_{name} __attribute__((weak, alias("icd_gen_{name}")));')
        w(f'VKAPI_ATTR {ret} VKAPI_CALL\nicd_gen_{name}({sig})\n{{')
        if first is None:
            w(f'   return{" " + lost if lost else ""};')
            w('}\n')
            continue
        outs = [p for p in params if p.role == 'out_handle']
        oom = 'VK_ERROR_OUT_OF_HOST_MEMORY' if ret == 'VkResult' else ''
        if name in SHIPS_RECORDING:
            w(f'   return icd_cmd_buffer_end({first.name});')
            w('}\n')
            continue
        shape = fast_shape(gen, cmd)
        if shape is not None:
            emit_icd_fast_record(gen, w, cmd, shape)
            continue
        if records_in_cmdbuf(cmd):
            w(f'   struct wire_enc *e = icd_cmd_stream({first.name}, WIRE_OP_{name});')
            w('   if (!e)')
            w(f'      return{" VK_SUCCESS" if ret == "VkResult" else (" " + lost if lost else "")};')
            w(f'   wire_enc_{name}(e, {args});')
            w(f'   icd_cmd_stream_end({first.name});')
            if ret == 'VkResult':
                w('   return VK_SUCCESS;')
            w('}\n')
            continue
        w(f'   struct icd_connection *conn = icd_connection_of({first.name});')
        # output handles: create the client objects first
        for p in outs:
            n = out_len_expr(gen, cmd, p, '') or '1'
            w(f'   const uint32_t n_{p.name} = (uint32_t)({n});')
            w(f'   {p.type} *tmp_{p.name} = icd_tmp_handles(2 * (size_t)n_{p.name}, sizeof({p.type}));')
            w(f'   if (!tmp_{p.name}) {{')
            w(f'      {p.name}[0] = VK_NULL_HANDLE;')
            w(f'      return {oom};')
            w('   }')
            w(f'   for (uint32_t i = 0; i < n_{p.name}; i++) {{')
            w(f'      tmp_{p.name}[i] = ({p.type})icd_handle_create(conn, {reg.handles[p.type][1]}, {first.name});')
            w(f'      tmp_{p.name}[n_{p.name} + i] = tmp_{p.name}[i];')
            w(f'      if (!tmp_{p.name}[i]) {{')
            w(f'         for (uint32_t j = 0; j < i; j++)')
            w(f'            icd_handle_destroy({reg.handles[p.type][1]}, (uint64_t)(uintptr_t)tmp_{p.name}[j]);')
            w(f'         icd_tmp_handles_free(tmp_{p.name});')
            w(f'         {p.name}[0] = VK_NULL_HANDLE;')
            w(f'         return {oom};')
            w('      }')
            w('   }')
            w(f'   icd_connection_count_objects(conn, (int64_t)n_{p.name});')
        call_args = ', '.join((f'tmp_{p.name}' if p.role == 'out_handle' else p.name) for p in params)
        if name in ASYNC_CREATES:
            # inside the object limit: queued, the handles the ICD chose
            # are the application's at once
            (p,) = outs
            w(f'   if (({ASYNC_CREATES[name]}) && icd_connection_room(conn) && !icd_connection_lost(conn)) {{')
            w('      struct icd_call call;')
            w(f'      struct wire_enc *e = icd_call_begin(&call, conn, WIRE_OP_{name}, false, false);')
            w(f'      wire_enc_{name}(e, {call_args});')
            w('      icd_call_end(&call);')
            w(f'      for (uint32_t i = 0; i < n_{p.name}; i++)')
            w(f'         {p.name}[i] = tmp_{p.name}[i];')
            w(f'      icd_tmp_handles_free(tmp_{p.name});')
            w('      return VK_SUCCESS; /* a loss from here on: the next call says so */')
            w('   }')
        if not sync:
            w('   struct icd_call call;')
            w(f'   struct wire_enc *e = icd_call_begin(&call, conn, WIRE_OP_{name}, false, false);')
            w(f'   wire_enc_{name}(e, {call_args});')
            w('   icd_call_end(&call);')
            if cmd.name in FLUSH_AFTER:
                w('   icd_connection_flush(conn);')
            d = destroyed_param(gen, cmd)
            if d is not None:
                dp = P(gen, cmd, d)
                objtype = reg.handles[dp.type][1]
                n = member_len(gen, cmd.params, d, '') if d.len else None
                if n:
                    w(f'   if ({d.name})')
                    w(f'      for (uint32_t i = 0; i < (uint32_t)({n}); i++)')
                    w(f'         icd_handle_destroy({objtype}, (uint64_t)(uintptr_t){d.name}[i]);')
                    w(f'   if ({d.name})')
                    w(f'      for (uint32_t i = 0; i < (uint32_t)({n}); i++)')
                    w(f'         icd_connection_count_objects(conn, {d.name}[i] ? -1 : 0);')
                else:
                    w(f'   icd_handle_destroy({objtype}, (uint64_t)(uintptr_t){d.name});')
                    w(f'   icd_connection_count_objects(conn, {d.name} ? -1 : 0);')
            if ret == 'VkResult':
                w(f'   return icd_connection_lost(conn) ? {lost} : VK_SUCCESS;')
            w('}\n')
            continue
        cacheable = name in CACHED
        w('   struct icd_call call;')
        w(f'   struct wire_enc *e = icd_call_begin(&call, conn, WIRE_OP_{name}, true, {"true" if cacheable else "false"});')
        w(f'   wire_enc_{name}(e, {call_args});')
        w('   VkResult transport = icd_call_end(&call);')
        if ret != 'void':
            w(f'   {ret} ret = {lost if ret == "VkResult" else "0"};')
        w('   if (transport == VK_SUCCESS) {')
        rarg = '&ret, ' if ret != 'void' else ''
        w(f'      wire_decreply_{name}(&call.reply, {rarg}{call_args});')
        w('      transport = icd_call_reply_done(&call);')
        w('   }')
        w('   if (transport != VK_SUCCESS) {')
        if ret == 'VkResult':
            w(f'      ret = {lost};')
        emit_lost_outputs(gen, w, cmd, params, '      ')
        w('   }')
        for p in outs:
            objtype = reg.handles[p.type][1]
            w(f'   for (uint32_t i = 0; i < n_{p.name}; i++) {{')
            if ret == 'VkResult':
                w(f'      if (ret < 0 || !tmp_{p.name}[i]) {{')
            else:
                w(f'      if (transport != VK_SUCCESS || !tmp_{p.name}[i]) {{')
            w(f'         icd_handle_destroy({objtype}, (uint64_t)(uintptr_t)tmp_{p.name}[n_{p.name} + i]);')
            w('         icd_connection_count_objects(conn, -1);')
            w(f'         {p.name}[i] = VK_NULL_HANDLE;')
            w('      } else {')
            w(f'         {p.name}[i] = tmp_{p.name}[i];')
            w('      }')
            w('   }')
            w(f'   icd_tmp_handles_free(tmp_{p.name});')
        if ret != 'void':
            w('   return ret;')
        w('}\n')

    # lookup table
    w('static const struct icd_entrypoint icd_entrypoints[] = {')
    names = {n: n for n in gen.commands if n not in gen.private}
    for alias, target in reg.command_alias.items():
        if target in gen.commands:
            names[alias] = target
    for entry in sorted(names):
        name = names[entry]
        cmd = reg.commands[name]
        first = cmd.params[0].type
        level = 'ICD_LEVEL_GLOBAL'
        t = reg.resolve_type(first)
        if t in ('VkInstance', 'VkPhysicalDevice'):
            level = 'ICD_LEVEL_INSTANCE' if t == 'VkInstance' else 'ICD_LEVEL_PHYSICAL_DEVICE'
        elif t in ('VkDevice', 'VkQueue', 'VkCommandBuffer'):
            level = 'ICD_LEVEL_DEVICE'
        w(f'   {{"{entry}", (PFN_vkVoidFunction)icd_{name}, {level}}},')
    w('};')
    w()
    w('const struct icd_entrypoint *\nicd_entrypoint_lookup(const char *name)\n{')
    w('   size_t lo = 0, hi = sizeof(icd_entrypoints) / sizeof(icd_entrypoints[0]);')
    w('   while (lo < hi) {')
    w('      size_t mid = (lo + hi) / 2;')
    w('      int c = strcmp(name, icd_entrypoints[mid].name);')
    w('      if (c == 0)')
    w('         return &icd_entrypoints[mid];')
    w('      if (c < 0)')
    w('         hi = mid;')
    w('      else')
    w('         lo = mid + 1;')
    w('   }')
    w('   return NULL;')
    w('}')


def emit_format_blocks(gen, w):
    """wire_format_block(): the bytes and extent of a texel block of a
    format's aspect in host memory (vk.xml's <formats>), for host image
    copies, whose sizes both sides compute: a depth aspect takes 2 bytes (16
    bits) or 4 (24 or 32), a stencil aspect 1, a plane its compatible
    format's block."""
    root = gen.reg.root
    formats = root.find('formats')
    # the formats this registry's VkFormat has (for the Vulkan API)
    known = set()
    for parent in [root.find("enums[@name='VkFormat']")] + root.findall('feature') + \
            root.findall('extensions/extension'):
        if parent is None or 'vulkan' not in (parent.get('api') or 'vulkan').split(',') or \
                parent.get('supported') == 'disabled':
            continue
        for e in parent.iter('enum'):
            if (parent.get('name') == 'VkFormat' or e.get('extends') == 'VkFormat') and \
                    e.get('alias') is None and \
                    'vulkan' in (e.get('api') or 'vulkan').split(','):
                known.add(e.get('name'))
    w('bool\nwire_format_block(VkFormat format, VkImageAspectFlags aspect, uint32_t *bytes,')
    w('                  uint32_t extent[3])\n{')
    w('   switch ((int)format) {')
    blocks = {}
    if formats is not None:
        for f in formats.findall('format'):
            name = f.get('name')
            if name not in known:
                continue
            ext = [int(x) for x in (f.get('blockExtent') or '1,1,1').split(',')]
            blocks[name] = (int(f.get('blockSize')), ext)
        for f in formats.findall('format'):
            name = f.get('name')
            if name not in known:
                continue
            comps = {c.get('name'): c.get('bits') for c in f.findall('component')}
            planes = f.findall('plane')
            cases = []
            if planes:
                for pl in planes:
                    b = blocks.get(pl.get('compatible'))
                    if b:
                        cases.append((f'VK_IMAGE_ASPECT_PLANE_{pl.get("index")}_BIT', b))
            elif 'D' in comps or 'S' in comps:
                if 'D' in comps:
                    cases.append(('VK_IMAGE_ASPECT_DEPTH_BIT',
                                  (2 if comps['D'] == '16' else 4, [1, 1, 1])))
                if 'S' in comps:
                    cases.append(('VK_IMAGE_ASPECT_STENCIL_BIT', (1, [1, 1, 1])))
            else:
                cases.append(('VK_IMAGE_ASPECT_COLOR_BIT', blocks[name]))
            w(f'   case {name}:')
            for aspect, (size, ext) in cases:
                w(f'      if (aspect == {aspect}) {{')
                w(f'         *bytes = {size};')
                w(f'         extent[0] = {ext[0]}, extent[1] = {ext[1]}, extent[2] = {ext[2]};')
                w('         return true;')
                w('      }')
            w('      return false;')
    w('   default:')
    w('      return false;')
    w('   }')
    w('}')
    w()
    # the planes' subsampling
    w('void\nwire_format_plane_divisor(VkFormat format, VkImageAspectFlags aspect, uint32_t div[2])\n{')
    w('   div[0] = div[1] = 1;')
    w('   switch ((int)format) {')
    if formats is not None:
        for f in formats.findall('format'):
            name = f.get('name')
            planes = [pl for pl in f.findall('plane')
                      if pl.get('widthDivisor') != '1' or pl.get('heightDivisor') != '1']
            if name not in known or not planes:
                continue
            w(f'   case {name}:')
            for pl in planes:
                w(f'      if (aspect == VK_IMAGE_ASPECT_PLANE_{pl.get("index")}_BIT)')
                w(f'         div[0] = {pl.get("widthDivisor")}, div[1] = {pl.get("heightDivisor")};')
            w('      break;')
    w('   default:')
    w('      break;')
    w('   }')
    w('}')
    w()


def emit_sized_room(gen, w, ind, sname, var):
    """The ICD's side of emit_sized_shape: the room the application gives
    each array it sizes (none for a null array)."""
    for a, n in gen.sized_outputs(sname).items():
        w(f'{ind}wire_enc_u32(e, {var}->{a} != NULL);')
        w(f'{ind}wire_enc_u32(e, {var}->{a} ? '
          f'(uint32_t)({var}->{n} < UINT32_MAX ? {var}->{n} : UINT32_MAX) : 0);')


def emit_sized_shape(gen, w, ind, sname, var, leave):
    """The daemon's side of an output struct's arrays the application
    sizes (Gen.sized_outputs): the room it has, never more than the
    daemon's limit, and never a null array it did not ask for."""
    reg = gen.reg
    for a, n in gen.sized_outputs(sname).items():
        m = next(x for x in reg.structs[sname].members if x.name == a)
        k = reg.kind(m.type)
        es = reg.structs.get(reg.resolve_type(m.type))
        limit = 'WIRE_MAX_OUTPUT_BYTES' if k == 'void' else 'WIRE_MAX_OUTPUT_ELEMENTS'
        size = '1' if k == 'void' else f'sizeof(*{var}->{a})'
        w(f'{ind}if (wire_dec_u32(d)) {{')
        w(f'{ind}   uint32_t n = wire_dec_u32(d);')
        w(f'{ind}   if (n > {limit}) {{')
        w(f'{ind}      wire_dec_fail(d, "{sname}.{a}: too many elements");')
        w(f'{ind}      {leave};')
        w(f'{ind}   }}')
        w(f'{ind}   {var}->{a} = wire_dec_alloc(d, (n ? n : 1) * {size});')
        if k == 'struct' and es.stype:
            w(f'{ind}   for (uint32_t i = 0; {var}->{a} && i < n; i++)')
            w(f'{ind}      {var}->{a}[i].sType = {es.stype};')
        w(f'{ind}   {var}->{n} = n;')
        w(f'{ind}}} else {{')
        w(f'{ind}   (void)wire_dec_u32(d);')
        w(f'{ind}}}')


def emit_alias_names(gen, w, commands, prefixes, more_prefixes):
    """Hand-written code names a command as the registry that introduced it
    did (icd_vkCmdPushDescriptorSetKHR); where this registry has promoted it
    (vkCmdPushDescriptorSet), the old name is a macro for the new."""
    w()
    w('/* Commands by the names of the registries before their promotion. */')
    for name in commands:
        for alias in gen.command_aliases(name):
            for prefix in prefixes + more_prefixes(name):
                w(f'#define {prefix}{alias} {prefix}{name}')


def emit_alias_loads(gen, w, name, gpa, handle):
    """A host driver answers a command promoted to a core version later than
    the host instance's by the name its extension gave it (the host instance
    has the application's API version): where the core name finds nothing,
    the earlier names."""
    for alias in gen.command_aliases(name):
        w(f'   if (!d->{name[2:]})')
        w(f'      d->{name[2:]} = (PFN_{name})d->{gpa}({handle}, "{alias}");')


def emit_icd_header(gen, w):
    reg = gen.reg
    w('#pragma once')
    w('/* the ICD is built with the window systems\' VK_USE_PLATFORM_* (WSI_EXTENSIONS) */')
    w('#include <vulkan/vulkan.h>')
    w('#include "wire_gen.h"')
    w('#include "wire_icd.h"')
    w()
    w('enum icd_level { ICD_LEVEL_GLOBAL, ICD_LEVEL_INSTANCE, ICD_LEVEL_PHYSICAL_DEVICE, ICD_LEVEL_DEVICE };')
    w('struct icd_entrypoint { const char *name; PFN_vkVoidFunction func; enum icd_level level; };')
    w('const struct icd_entrypoint *icd_entrypoint_lookup(const char *name);')
    w()
    w('/* What each command returns once its daemon is gone (legal for it). */')
    for name in gen.commands:
        cmd = reg.commands[name]
        if cmd.ret == 'VkResult':
            w(f'#define ICD_LOST_{name} {lost_result(cmd)}')
    w()
    for name in gen.commands:
        cmd = reg.commands[name]
        w(f'VKAPI_ATTR {cmd.ret} VKAPI_CALL icd_{name}({cmd_signature(cmd)});')
        if name not in gen.client_only:
            w(f'VKAPI_ATTR {cmd.ret} VKAPI_CALL icd_gen_{name}({cmd_signature(cmd)});')
    emit_alias_names(gen, w, gen.commands, ['icd_'],
                     lambda name: ['icd_gen_'] if name not in gen.client_only else [])


# ==========================================================================
# Daemon


def emit_gpud(gen, w, hw):
    reg = gen.reg
    hw('#pragma once')
    hw('#include "wire_gen.h"')
    hw()
    hw('struct gpud_call;')
    hw()
    hw('/* Host driver entrypoints, loaded per host instance or device. */')
    hw('struct gpud_host_dispatch {')
    hw('   PFN_vkGetInstanceProcAddr GetInstanceProcAddr;')
    hw('   PFN_vkGetDeviceProcAddr GetDeviceProcAddr;')
    for name in gen.commands:
        if name in ('vkGetInstanceProcAddr', 'vkGetDeviceProcAddr') or name in gen.private or name in gen.wsi_commands:
            continue
        hw(f'   PFN_{name} {name[2:]};')
    hw('};')
    hw()
    hw('void gpud_host_dispatch_load_instance(struct gpud_host_dispatch *d, VkInstance instance);')
    hw('void gpud_host_dispatch_load_device(struct gpud_host_dispatch *d, VkDevice device);')
    hw('/* Runs one decoded command; returns false when the stream is malformed. */')
    hw('bool gpud_gen_dispatch(struct gpud_call *call, struct wire_dec *d, struct wire_enc *reply,')
    hw('                       uint32_t op);')
    hw('/* Per op: 1 for the commands the decoding thread runs while replay lanes')
    hw(' * and waiting submissions are busy (REPLAY_CONCURRENT in the generator). */')
    hw('extern const uint8_t gpud_gen_replay_concurrent[WIRE_OP_COUNT];')
    hw('/* Runs one recorded command of a chunk on the chunk\'s command buffer cb:')
    hw(' * decoded on the fast path where the command has one (fastargs_*),')
    hw(' * else as any command; returns false when the command is malformed. */')
    hw('bool gpud_gen_replay(struct gpud_call *call, struct wire_dec *d, uint32_t op,')
    hw('                     VkCommandBuffer cb);')
    hw('/* Destroys a host object of the given type with the right vkDestroy/vkFree. */')
    hw('void gpud_gen_destroy_object(const struct gpud_host_dispatch *d, uint64_t parent,')
    hw('                             VkObjectType type, uint64_t handle);')
    hw()
    for name in gen.wire_commands:
        hw(f'void gpud_exec_{name}(struct gpud_call *call, struct {args_struct_name(name)} *a);')
        if name not in gen.private:
            hw(f'void gpud_gen_exec_{name}(struct gpud_call *call, struct {args_struct_name(name)} *a);')
    emit_alias_names(gen, hw, gen.wire_commands, ['gpud_exec_', 'wire_args_'],
                     lambda name: ['gpud_gen_exec_'] if name not in gen.private else [])

    w('#include "gpud_gen.h"')
    w('#include "wire_gpud.h"')
    w()
    # dispatch loading
    w('void\ngpud_host_dispatch_load_instance(struct gpud_host_dispatch *d, VkInstance instance)\n{')
    for name in gen.commands:
        if name in ('vkGetInstanceProcAddr', 'vkGetDeviceProcAddr') or name in gen.private or name in gen.wsi_commands:
            continue
        w(f'   d->{name[2:]} = (PFN_{name})d->GetInstanceProcAddr(instance, "{name}");')
        emit_alias_loads(gen, w, name, 'GetInstanceProcAddr', 'instance')
    w('   d->GetDeviceProcAddr = (PFN_vkGetDeviceProcAddr)d->GetInstanceProcAddr(instance, "vkGetDeviceProcAddr");')
    w('}\n')
    w('void\ngpud_host_dispatch_load_device(struct gpud_host_dispatch *d, VkDevice device)\n{')
    for name in gen.commands:
        cmd = reg.commands[name]
        t = reg.resolve_type(cmd.params[0].type)
        if t in ('VkDevice', 'VkQueue', 'VkCommandBuffer') and name != 'vkGetDeviceProcAddr' and \
                name not in gen.private and name not in gen.wsi_commands:
            w(f'   d->{name[2:]} = (PFN_{name})d->GetDeviceProcAddr(device, "{name}");')
            emit_alias_loads(gen, w, name, 'GetDeviceProcAddr', 'device')
    w('}\n')
    # default executors (none for gpud's own commands: the daemon has them)
    for name in gen.wire_commands:
        if name in gen.private:
            continue
        cmd = reg.commands[name]
        params = cmd_params(gen, cmd)
        # shader code reaches the host only through the daemon's own
        # executors: without one the link fails, no check goes missing
        if name not in SPIRV_COMMANDS | SPIRV_CHAIN_COMMANDS:
            w(f'extern __typeof__(gpud_gen_exec_{name}) gpud_exec_{name} __attribute__((weak, alias("gpud_gen_exec_{name}")));')
        w(f'void\ngpud_gen_exec_{name}(struct gpud_call *call, struct {args_struct_name(name)} *a)\n{{')
        args = ', '.join('NULL' if p.skip else f'a->{p.name}' for p in params)
        fn = f'gpud_call_dispatch(call)->{name[2:]}'
        w(f'   if (!{fn}) {{')
        if name in HOST_OPTIONAL:
            if cmd.ret == 'VkResult':
                w('      a->ret = VK_SUCCESS;')
        else:
            w(f'      gpud_call_fail(call, "host driver lacks {name}");')
        w('      return;')
        w('   }')
        if cmd.ret != 'void':
            w(f'   a->ret = {fn}({args});')
        else:
            w(f'   {fn}({args});')
        w('}\n')
    # handlers
    for name in gen.wire_commands:
        cmd = reg.commands[name]
        params = cmd_params(gen, cmd)
        w(f'static void\nhandle_{name}(struct gpud_call *call, struct wire_dec *d, struct wire_enc *reply)\n{{')
        w(f'   struct {args_struct_name(name)} a;')
        w('   memset(&a, 0, sizeof(a));')
        # the fds a command took are its executor's; one that does not run
        # (malformed, lost, refused) has them closed here
        w(f'   if (!wire_decargs_{name}(d, &a)) {{')
        w('      wire_dec_close_taken(d);')
        w('      return;')
        w('   }')
        w('   if (wire_dec_remaining(d)) {')
        w('      wire_dec_fail(d, "trailing bytes after the command");')
        w('      wire_dec_close_taken(d);')
        w('      return;')
        w('   }')
        if cmd.ret == 'VkResult':
            # on a device an asynchronous failure lost, what may be
            # answered is (commands that cannot fail still run)
            if lost_result(cmd) != 'VK_SUCCESS' and name not in RUN_ON_LOST_DEVICE:
                w('   if (gpud_call_device_lost(call)) {')
                w(f'      a.ret = {lost_result(cmd)};')
                w('      wire_dec_close_taken(d);')
                w('   } else if (gpud_call_refused(call) != VK_SUCCESS) {')
            else:
                w('   if (gpud_call_refused(call) != VK_SUCCESS) {')
            w('      a.ret = gpud_call_refused(call);')
            w('      wire_dec_close_taken(d);')
            w('   } else {')
            w(f'      gpud_exec_{name}(call, &a);')
            if 'VK_ERROR_DEVICE_LOST' in cmd.errorcodes:
                # the host lost the device (a GPU fault): a fault to list
                w('      if (a.ret == VK_ERROR_DEVICE_LOST && !gpud_call_deferred(call))')
                w('         gpud_call_host_lost(call);')
            w('   }')
        else:
            w(f'   gpud_exec_{name}(call, &a);')
        w('   if (gpud_call_deferred(call) || d->fatal)')
        w('      return;')
        for p in params:
            if p.role != 'out_handle':
                continue
            objtype = reg.handles[p.type][1]
            ok = 'a.ret >= 0' if cmd.ret == 'VkResult' else 'true'
            w(f'   for (uint32_t i = 0; i < a.{p.name}_count; i++) {{')
            w(f'      if (!({ok}))')
            w(f'         a.{p.name}[i] = VK_NULL_HANDLE;')
            w(f'      else if (a.{p.name}[i] != VK_NULL_HANDLE)')
            w(f'         gpud_call_add_object(call, {objtype}, a.{p.name}_ids[i], (uint64_t)(uintptr_t)a.{p.name}[i]);')
            w('   }')
        d = destroyed_param(gen, cmd)
        if d is not None and name not in ('vkDestroyInstance', 'vkDestroyDevice'):
            dp = P(gen, cmd, d)
            objtype = reg.handles[dp.type][1]
            w(f'   gpud_call_forget_objects(call, {objtype});')
        if is_sync(gen, cmd):
            w('   if (reply)')
            w(f'      wire_encreply_{name}(reply, &a);')
            if name in ASYNC_CREATES:
                # queued by the ICD: nobody waits for the result
                w('   else if (a.ret < 0)')
                w('      gpud_call_async_error(call, a.ret);')
            # an fd made for a reply nobody asked for is closed here
            for p in params:
                if (name, p.name) in FD_MEMBERS and p.role == 'out_scalar':
                    w(f'   else if (a.ret == VK_SUCCESS && a.{p.name} && *a.{p.name} >= 0)')
                    w(f'      close(*a.{p.name});')
        elif cmd.ret == 'VkResult':
            w('   if (a.ret < 0)')
            if name in HOST_OPTIONAL:
                # for tools only: a host that fails it loses nothing
                w(f'      gpud_call_host_failed(call, "{name}", a.ret);')
            else:
                w('      gpud_call_async_error(call, a.ret);')
        w('}\n')
    w('bool\ngpud_gen_dispatch(struct gpud_call *call, struct wire_dec *d, struct wire_enc *reply, uint32_t op)\n{')
    w('   switch (op) {')
    for name in gen.wire_commands:
        w(f'   case WIRE_OP_{name}:')
        w(f'      handle_{name}(call, d, reply);')
        w('      break;')
    w('   default:')
    w('      wire_dec_fail(d, "unknown op");')
    w('      break;')
    w('   }')
    w('   return !d->fatal;')
    w('}\n')
    w('const uint8_t gpud_gen_replay_concurrent[WIRE_OP_COUNT] = {')
    for name in gen.wire_commands:
        if replay_concurrent(name) and not records_in_cmdbuf(reg.commands[name]):
            w(f'   [WIRE_OP_{name}] = 1,')
    w('};\n')
    emit_fast_decoders(gen, w)
    w('bool\ngpud_gen_replay(struct gpud_call *call, struct wire_dec *d, uint32_t op, VkCommandBuffer cb)\n{')
    w('   switch (op) {')
    for name in gen.wire_commands:
        if fast_shape(gen, reg.commands[name]) is None:
            continue
        w(f'   case WIRE_OP_{name}: {{')
        w(f'      struct {args_struct_name(name)} a;')
        w(f'      if (fastargs_{name}(d, &a, cb))')
        w(f'         gpud_exec_{name}(call, &a);')
        w('      break;')
        w('   }')
    w('   default:')
    w('      return gpud_gen_dispatch(call, d, NULL, op);')
    w('   }')
    w('   return !d->fatal;')
    w('}\n')
    # destroy table
    w('void\ngpud_gen_destroy_object(const struct gpud_host_dispatch *d, uint64_t parent,')
    w('                        VkObjectType type, uint64_t handle)\n{')
    w('   switch (type) {')
    for name in gen.commands:
        cmd = reg.commands[name]
        dp = destroyed_param(gen, cmd)
        if dp is None or name in ('vkDestroyInstance', 'vkDestroyDevice') or dp.len or \
                name in gen.wsi_commands:
            continue
        t = reg.resolve_type(dp.type)
        objtype = reg.handles[t][1]
        ptype = reg.resolve_type(cmd.params[0].type)
        args = []
        for p in cmd.params:
            if p is dp:
                args.append(f'({t})(uintptr_t)handle')
            elif p.type == 'VkAllocationCallbacks':
                args.append('NULL')
            elif p is cmd.params[0]:
                args.append(f'({ptype})(uintptr_t)parent')
            else:
                raise Exception(f'{name}: unexpected parameter {p.name}')
        w(f'   case {objtype}:')
        w(f'      if (d->{name[2:]}) d->{name[2:]}({", ".join(args)});')
        w('      break;')
    w('   default:')
    w('      break;')
    w('   }')
    w('}')


# ==========================================================================


def extension_report(gen):
    """carried: extension -> type; own: gpud's own; denied: extension ->
    reason; structs: struct -> the extension that brings it (for the
    structures an uncarried extension adds to vulkaninfo's output)."""
    reg = gen.reg
    structs = {}
    for name, (e, cmds, types) in reg.extensions.items():
        for t in Gen.own_items(e, 'type'):
            # an extension promoted later names its structures by aliases
            # (VkPhysicalDeviceSwapchainMaintenance1FeaturesEXT), which is
            # what vulkaninfo prints for it
            target = t
            while target in reg.type_alias:
                target = reg.type_alias[target]
            if target in reg.structs:
                structs.setdefault(t, name)
    return {
        'vk_xml': reg.header_version,
        'carried': dict(gen.extensions),
        'own': sorted(set(OWN_EXTENSIONS) | set(WSI_EXTENSIONS)),
        'denied': gen.denied,
        'structs': structs,
    }


def table_hash(gen):
    h = hashlib.sha256()
    for name in gen.wire_commands:
        h.update(name.encode() + b'(' + cmd_signature(gen.reg.commands[name]).encode() + b')')
    for s in gen.structs_all:
        h.update(s.encode() + b'{' + ';'.join(m.text for m in gen.reg.structs[s].members).encode())
    h.update(repr(sorted(CONDITIONAL_MEMBERS.items())).encode())
    return h.hexdigest()[:16]


def write_if_changed(path, text):
    """Writes text to path unless it holds it already (ninja then leaves
    what depends on it alone)."""
    try:
        with open(path) as f:
            if f.read() == text:
                return
    except OSError:
        pass
    with open(path, 'w') as f:
        f.write(text)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--xml', required=True)
    ap.add_argument('--out-dir', required=True)
    args = ap.parse_args()
    reg = vkxml.Registry(args.xml)
    gen = Gen(reg)
    stamp = f'/* Generated by gen_wire.py from vk.xml {reg.header_version}; do not edit. */'

    hw = Writer()
    hw(stamp)
    hw('#pragma once')
    hw('#include "wire.h"')
    hw('#include "wire_special.h"')
    hw()
    hw(f'#define WIRE_VK_HEADER_VERSION {reg.header_version}')
    # the newest core version carried (the registry's)
    newest = max((tuple(int(x) for x in number.split('.')) for name, number, c, t in reg.features
                  if name in CORE_VERSIONS))
    hw(f'#define WIRE_API_VERSION VK_MAKE_API_VERSION(0, {newest[0]}, {newest[1]}, 0)')
    hw(f'#define WIRE_COMMAND_TABLE_HASH 0x{table_hash(gen)}ull')
    hw('/* The commands generated from this registry: hand-written code for a')
    hw(' * command some registries lack (or do not let gpud carry) is kept in')
    hw(' * #ifdef WIRE_HAS_<command>. */')
    for name in gen.commands:
        for n in [name] + gen.command_aliases(name):
            hw(f'#define WIRE_HAS_{n} 1')
    # A chain holds each of its parent's extending structs once at most
    # (vulkaninfo chains every feature struct the device has).
    longest = max(len(gen.chain_members(x, x in gen.structs_out)) for x in gen.structs_all)
    hw(f'#define WIRE_MAX_CHAIN_LENGTH {max(64, longest)}')
    hw(f'#define WIRE_MAX_OUTPUT_ELEMENTS {MAX_OUTPUT_ELEMENTS}u')
    hw(f'#define WIRE_MAX_OPAQUE_DATA {MAX_OPAQUE_DATA}u')
    hw('#define WIRE_MAX_OUTPUT_BYTES (256ull << 20)')
    hw()
    hw('enum wire_op {')
    for i, name in enumerate(gen.wire_commands):
        hw(f'   WIRE_OP_{name} = {i + 1},')
    hw(f'   WIRE_OP_COUNT = {len(gen.wire_commands) + 1},')
    hw('};')
    hw()
    hw('/* The wire id of a handle given with its object type (a uint64_t that')
    hw(' * vk.xml marks objecttype): its header\'s id for the types the ICD hands')
    hw(' * out as pointers, the value itself for the others. */')
    hw('static inline uint64_t\nwire_typed_handle_id(VkObjectType type, uint64_t handle)\n{')
    hw('   switch (type) {')
    for t in sorted(ICD_POINTER_HANDLES):
        hw(f'   case {reg.handles[t][1]}:')
    hw('      return wire_object_id((const void *)(uintptr_t)handle);')
    hw('   default:')
    hw('      return handle;')
    hw('   }')
    hw('}')
    hw()
    hw('/* The device extensions (indexes into wire_extensions, UINT16_MAX after the')
    hw(' * last) one of which a device must have enabled to run the op; NULL for')
    hw(' * core ops and those of instance extensions. */')
    hw('const uint16_t *wire_op_device_extensions(uint32_t op);')
    hw('/* "buffer", "device memory", ... (NULL for an unknown type). */')
    hw('const char *wire_object_type_name(VkObjectType type);')
    hw('/* Every object type gpud knows, numbered from 0 in a compact index (-1:')
    hw(' * not one of them), and back. */')
    hw('int wire_object_type_index(VkObjectType type);')
    hw('VkObjectType wire_object_type_at(unsigned index);')
    hw('const char *wire_op_name(uint32_t op);')
    hw('/* Whether the op expects a reply (a synchronous call). */')
    hw('bool wire_op_is_sync(uint32_t op);')
    hw('/* Per op: the commands recorded into a command buffer, which travel')
    hw(' * only in its chunks (WIRE_OP_CHUNK): 1 for core commands, 2 for those a')
    hw(' * device extension brings (wire_op_device_extensions); else 0. */')
    hw('extern const uint8_t wire_op_recorded[WIRE_OP_COUNT];')
    hw('/* The bytes of a texel block of format\'s aspect (one aspect bit) in host')
    hw(' * memory, and the block\'s extent in texels: what a host image copy of')
    hw(' * it takes (vk.xml\'s formats); false for a format or aspect it has not. */')
    hw('bool wire_format_block(VkFormat format, VkImageAspectFlags aspect, uint32_t *bytes,')
    hw('                       uint32_t extent[3]);')
    hw('/* How much smaller than the image a plane of a multi-planar format is, in')
    hw(' * width and height (1 for any other aspect). */')
    hw('void wire_format_plane_divisor(VkFormat format, VkImageAspectFlags aspect, uint32_t div[2]);')
    hw()
    hw('/* Extensions gpud carries, beyond core: name, is-device-extension, the')
    hw(' * revision vk.xml describes, whether gpud implements it itself (own: the')
    hw(' * daemon, or the ICD for window systems) and whether the host device gets')
    hw(' * it enabled where it has it. */')
    hw('struct wire_extension {')
    hw('   const char *name;')
    hw('   bool device;')
    hw('   uint32_t spec_version;')
    hw('   bool own;')
    hw('   bool host;')
    hw('};')
    hw(f'extern const struct wire_extension wire_extensions[{max(1, len(gen.extensions))}];')
    hw('extern const unsigned wire_extension_count;')
    hw()

    cw = Writer()
    cw(stamp)
    cw('#include "wire_gen.h"')
    cw()
    cw('const struct wire_extension wire_extensions[] = {')
    for ext, typ in gen.extensions:
        e = reg.extensions[ext][0]
        spec = next((x.get('value') for x in e.iter('enum')
                     if (x.get('name') or '').endswith('_SPEC_VERSION')), '1')
        own = ext in OWN_EXTENSIONS or ext in WSI_EXTENSIONS
        host = ext not in WSI_EXTENSIONS and ext != 'VK_EXT_debug_marker'
        b = {True: 'true', False: 'false'}
        cw(f'   {{"{ext}", {b[typ == "device"]}, {spec}, {b[own]}, {b[host]}}},')
    if not gen.extensions:
        cw('   {NULL, false, 0, false, false},')
    cw('};\n')
    cw(f'const unsigned wire_extension_count = {len(gen.extensions)};\n')
    emit_format_blocks(gen, cw)
    cw('const uint16_t *\nwire_op_device_extensions(uint32_t op)\n{\n   switch (op) {')
    for name in gen.wire_commands:
        exts = gen.command_extensions.get(name)
        if exts:
            lst = ', '.join(str(i) for i in exts)
            cw(f'   case WIRE_OP_{name}: {{')
            cw(f'      static const uint16_t exts[] = {{{lst}, UINT16_MAX}};')
            cw('      return exts;')
            cw('   }')
    cw('   default: return NULL;\n   }\n}\n')
    cw('const char *\nwire_object_type_name(VkObjectType type)\n{\n   switch ((int)type) {')
    seen = set()
    for h, v in sorted(reg.handles.items()):
        objtype = v[1]
        if h not in gen.types or not objtype or objtype in seen:
            continue
        seen.add(objtype)
        words = objtype[len('VK_OBJECT_TYPE_'):].lower().replace('_', ' ')
        cw(f'   case {objtype}: return "{words}";')
    cw('   default: return NULL;\n   }\n}\n')
    objtypes = []
    for h, v in sorted(reg.handles.items()):
        if h in gen.types and v[1] and v[1] not in objtypes:
            objtypes.append(v[1])
    hw(f'#define WIRE_OBJECT_TYPE_COUNT {len(objtypes)}')
    cw('int\nwire_object_type_index(VkObjectType type)\n{\n   switch ((int)type) {')
    for i, t in enumerate(objtypes):
        cw(f'   case {t}: return {i};')
    cw('   default: return -1;\n   }\n}\n')
    cw('VkObjectType\nwire_object_type_at(unsigned index)\n{\n   static const VkObjectType types[] = {')
    for t in objtypes:
        cw(f'      {t},')
    cw('   };')
    cw('   return index < sizeof(types) / sizeof(types[0]) ? types[index] : VK_OBJECT_TYPE_UNKNOWN;\n}\n')
    cw('const char *\nwire_op_name(uint32_t op)\n{\n   switch (op) {')
    for name in gen.wire_commands:
        cw(f'   case WIRE_OP_{name}: return "{name}";')
    cw('   case WIRE_OP_REPLY: return "reply";')
    cw('   case WIRE_OP_CHUNK: return "a chunk of a recording";')
    cw('   default: return "unknown";\n   }\n}\n')
    cw('const uint8_t wire_op_recorded[WIRE_OP_COUNT] = {')
    for name in gen.wire_commands:
        if records_in_cmdbuf(reg.commands[name]):
            cw(f'   [WIRE_OP_{name}] = {2 if gen.command_extensions.get(name) else 1},')
    cw('};\n')
    cw('bool\nwire_op_is_sync(uint32_t op)\n{\n   switch (op) {')
    for name in gen.wire_commands:
        if is_sync(gen, reg.commands[name]):
            cw(f'   case WIRE_OP_{name}:')
    cw('      return true;\n   default:\n      return false;\n   }\n}\n')
    # The struct and command code, split by who calls it: the ICD encodes
    # requests and decodes replies, the daemon the other way round.
    sw = Writer()
    emit_structs(gen, sw)
    emit_struct_keys(gen, sw, hw)
    emit_writeback(gen, sw)
    emit_cmd_encoders(gen, sw, hw)
    emit_cmd_decoders(gen, sw, hw)
    sides = []
    for lines, what in zip(split_sides(sw.lines),
                           ('ICD\'s side of the wire: request encoders, reply decoders',
                            'daemon\'s side of the wire: request decoders, reply encoders')):
        side = Writer()
        side(stamp)
        side(f'/* The {what}. */')
        side('#include "wire_gen.h"')
        side()
        side.lines += lines
        sides.append(side)
    ew, dw = sides

    iw = Writer()
    iw(stamp)
    emit_icd(gen, iw)
    ihw = Writer()
    ihw(stamp)
    emit_icd_header(gen, ihw)

    gw = Writer()
    gw(stamp)
    ghw = Writer()
    ghw(stamp)
    emit_gpud(gen, gw, ghw)

    outputs = {
        'wire_gen.h': hw, 'wire_gen.c': cw, 'wire_icd_gen.c': ew, 'wire_gpud_gen.c': dw,
        'icd_gen.c': iw, 'icd_gen.h': ihw, 'gpud_gen.c': gw, 'gpud_gen.h': ghw,
    }
    # What is carried and what is not, with reasons: for the tests (which
    # compare vulkaninfo with the host's) and the documentation.
    jw = Writer()
    jw(json.dumps(extension_report(gen), indent=1, sort_keys=True))
    outputs['wire_extensions.json'] = jw
    for fname, writer in outputs.items():
        write_if_changed(os.path.join(args.out_dir, fname), writer.text())
    if gen.unsupported:
        needed = [s for s in gen.unsupported if s in gen.structs_all]
        if needed:
            print('unsupported structs reached:', needed, file=sys.stderr)
            return 1
    return 0


if __name__ == '__main__':
    sys.exit(main())
