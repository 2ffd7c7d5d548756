/* SPDX-License-Identifier: MIT */
/*
 * Semaphores.  A timeline semaphore owns a slot in its device's completion
 * page (icd_completion.c), where the worker keeps its value: its value and
 * waits for it are read there, and vkSignalSemaphore does not wait.  One
 * exported, or whose payload was, is asked about.
 */
#include "icd.h"

#include "util_fd.h"

static struct gpud_semaphore_slot *
sem_slot(const struct icd_semaphore *s)
{
   return &gpud_completion_semaphores(s->device->completion)[s->slot];
}

VKAPI_ATTR VkResult VKAPI_CALL
icd_vkCreateSemaphore(VkDevice device, const VkSemaphoreCreateInfo *pCreateInfo,
                      const VkAllocationCallbacks *pAllocator, VkSemaphore *pSemaphore)
{
   VkResult r = icd_gen_vkCreateSemaphore(device, pCreateInfo, pAllocator, pSemaphore);
   struct icd_device *dev = icd_completion_device(device, r);
   if (!dev)
      return r;
   uint64_t initial = 0;
   bool timeline = false;
   for (const VkBaseInStructure *s = pCreateInfo->pNext; s; s = s->pNext) {
      if (s->sType == VK_STRUCTURE_TYPE_EXPORT_SEMAPHORE_CREATE_INFO)
         return r; /* others may signal it: the host driver keeps its value */
      if (s->sType == VK_STRUCTURE_TYPE_SEMAPHORE_TYPE_CREATE_INFO) {
         const VkSemaphoreTypeCreateInfo *t = (const VkSemaphoreTypeCreateInfo *)s;
         timeline = t->semaphoreType == VK_SEMAPHORE_TYPE_TIMELINE;
         initial = t->initialValue;
      }
   }
   if (!timeline || initial == GPUD_SEMAPHORE_ASK)
      return r;
   struct icd_semaphore *sem = icd_semaphore_from_handle(*pSemaphore);
   uint32_t tag;
   int slot = icd_completion_slot_take(dev, dev->semaphore_used, &dev->semaphore_hint,
                                       GPUD_COMPLETION_SEMAPHORE_SLOTS, &tag);
   if (slot < 0)
      return r;
   sem->device = dev;
   sem->slot = slot;
   sem->tag = tag;
   /* the worker stores the tag and the initial value when it takes the
    * slot; until then this semaphore is asked about */
   icd_gen_vkSetSemaphoreSlotGPUD(device, *pSemaphore, (uint32_t)slot, tag, initial);
   return r;
}

static void
semaphore_give(struct icd_semaphore *s)
{
   struct icd_device *dev = s->device;
   icd_completion_slot_give(dev, dev->semaphore_used, &dev->semaphore_hint, s->slot);
   s->device = NULL;
}

VKAPI_ATTR void VKAPI_CALL
icd_vkDestroySemaphore(VkDevice device, VkSemaphore semaphore,
                       const VkAllocationCallbacks *pAllocator)
{
   struct icd_semaphore *s = icd_semaphore_from_handle(semaphore);
   if (s && s->device)
      semaphore_give(s);
   icd_gen_vkDestroySemaphore(device, semaphore, pAllocator);
}

void
icd_semaphore_untrack(VkSemaphore semaphore)
{
   struct icd_semaphore *s = icd_semaphore_from_handle(semaphore);
   if (s && s->device)
      semaphore_give(s);
}

VKAPI_ATTR VkResult VKAPI_CALL
icd_vkGetSemaphoreFdKHR(VkDevice device, const VkSemaphoreGetFdInfoKHR *pGetFdInfo, int *pFd)
{
   VkResult r = icd_gen_vkGetSemaphoreFdKHR(device, pGetFdInfo, pFd);
   if (r == VK_SUCCESS)
      icd_semaphore_untrack(pGetFdInfo->semaphore);
   return r;
}

/* Its value on the page, or false when it must be asked about. */
static bool
semaphore_value(const struct icd_semaphore *s, uint64_t *value)
{
   if (!s || !s->device)
      return false;
   const struct gpud_semaphore_slot *slot = sem_slot(s);
   if (atomic_load(&slot->tag) != s->tag)
      return false; /* the worker has not taken the slot for it yet */
   uint64_t v = atomic_load(&slot->value);
   if (v == GPUD_SEMAPHORE_ASK || atomic_load(&slot->tag) != s->tag)
      return false;
   *value = v;
   return true;
}

/* Host-side signals are asynchronous and go out at once (a queue may wait
 * for them); a timeline value the page shows is raised here first, so this
 * thread and every other reading the page sees it before the daemon has run
 * the signal, and their waits wake. */
VKAPI_ATTR VkResult VKAPI_CALL
icd_vkSignalSemaphore(VkDevice device, const VkSemaphoreSignalInfo *pSignalInfo)
{
   struct icd_device *dev = icd_device_from_handle(device);
   struct icd_semaphore *s = icd_semaphore_from_handle(pSignalInfo->semaphore);
   VkResult r = icd_gen_vkSignalSemaphore(device, pSignalInfo);
   uint64_t v;
   struct gpud_completion_header *h = dev->completion;
   if (r == VK_SUCCESS && h && semaphore_value(s, &v) && v < pSignalInfo->value) {
      gpud_semaphore_raise(&sem_slot(s)->value, pSignalInfo->value);
      gpud_completion_wake(h);
   }
   if (r == VK_SUCCESS)
      r = icd_connection_flush(dev->base.conn);
   return r;
}

VKAPI_ATTR VkResult VKAPI_CALL
icd_vkGetSemaphoreCounterValue(VkDevice device, VkSemaphore semaphore, uint64_t *pValue)
{
   struct icd_device *dev = icd_device_from_handle(device);
   struct gpud_completion_header *h = dev->completion;
   uint64_t v;
   if (!h || !semaphore_value(icd_semaphore_from_handle(semaphore), &v))
      return icd_gen_vkGetSemaphoreCounterValue(device, semaphore, pValue);
   if (atomic_load(&h->lost) || icd_connection_is_lost(dev->base.conn))
      return VK_ERROR_DEVICE_LOST;
   *pValue = v;
   return VK_SUCCESS;
}

/* VK_SUCCESS, VK_TIMEOUT, VK_NOT_READY (one must be asked about) */
static VkResult
semaphores_reached(const void *data)
{
   const VkSemaphoreWaitInfo *info = data;
   bool any_flag = info->flags & VK_SEMAPHORE_WAIT_ANY_BIT;
   bool any = false, every = true;
   for (uint32_t i = 0; i < info->semaphoreCount; i++) {
      uint64_t v;
      if (!semaphore_value(icd_semaphore_from_handle(info->pSemaphores[i]), &v))
         return VK_NOT_READY;
      if (v >= info->pValues[i])
         any = true;
      else
         every = false;
   }
   return (any_flag ? any : every) ? VK_SUCCESS : VK_TIMEOUT;
}

VKAPI_ATTR VkResult VKAPI_CALL
icd_vkWaitSemaphores(VkDevice device, const VkSemaphoreWaitInfo *pWaitInfo, uint64_t timeout)
{
   struct icd_device *dev = icd_device_from_handle(device);
   uint64_t left = timeout;
   VkResult r = dev->completion ? icd_completion_wait(dev, semaphores_reached, pWaitInfo,
                                                      timeout, &left, 0, NULL)
                                : VK_NOT_READY;
   return r == VK_NOT_READY ? icd_gen_vkWaitSemaphores(device, pWaitInfo, left) : r;
}

/* An fd the application gives must be open: sending a closed one would
 * fail the whole message and lose the connection. */
VKAPI_ATTR VkResult VKAPI_CALL
icd_vkImportSemaphoreFdKHR(VkDevice device,
                           const VkImportSemaphoreFdInfoKHR *pImportSemaphoreFdInfo)
{
   /* (-1 is a signalled sync fd) */
   if (pImportSemaphoreFdInfo->fd != -1 && !util_fd_open(pImportSemaphoreFdInfo->fd))
      return VK_ERROR_INVALID_EXTERNAL_HANDLE;
   VkResult r = icd_gen_vkImportSemaphoreFdKHR(device, pImportSemaphoreFdInfo);
   if (r == VK_SUCCESS) {
      int fd = pImportSemaphoreFdInfo->fd;
      util_fd_close(&fd);
      icd_semaphore_untrack(pImportSemaphoreFdInfo->semaphore);
   }
   return r;
}
