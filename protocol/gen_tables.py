# SPDX-License-Identifier: MIT
"""The hand-decided tables of gpud's command stream generator: every special
case of a command, a structure or an extension, each with its reason."""

import os


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


# Commands that need not wait for the worker's own copies on the GPU (the
# ICD's uploads the worker writes with submissions of its own,
# daemon/worker/gpud_queue.c): beside those that run concurrently with
# replay, they are these.  Every other command could see device memory
# those copies write, and waits for them first.
OWN_COPIES_UNAFFECTED = {
    'vkQueueSubmit': 'waits for what it must itself',
    'vkQueueSubmit2': 'waits for what it must itself',
    'vkQueueUploadGPUD': 'waits for what it must itself',
    'vkResetCommandPool': 'the application\'s command buffers',
    'vkResetCommandBuffer': 'the application\'s command buffers',
    'vkAllocateCommandBuffers': 'the application\'s command buffers',
    'vkFreeCommandBuffers': 'the application\'s command buffers',
    'vkResetDescriptorPool': 'the application\'s descriptor sets',
    'vkFreeDescriptorSets': 'the application\'s descriptor sets',
    'vkWaitForFences': 'the application\'s fences',
    'vkGetFenceStatus': 'the application\'s fences',
}


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

