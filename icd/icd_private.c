/* SPDX-License-Identifier: MIT */
/*
 * VK_EXT_private_data (core 1.3) for objects only the ICD has: the daemon
 * keeps private data for its objects; for a descriptor update template or
 * a messenger it would not know the handle, so the value is kept here.
 */
#include "icd.h"

#include <stdlib.h>

struct private_value {
   uint64_t slot;
   uint64_t handle;
   uint64_t data;
};

static pthread_mutex_t mutex = PTHREAD_MUTEX_INITIALIZER;
static struct private_value *values;
static size_t n_values, cap_values;

static struct private_value *
find(uint64_t slot, uint64_t handle)
{
   for (size_t i = 0; i < n_values; i++) {
      if (values[i].slot == slot && values[i].handle == handle)
         return &values[i];
   }
   return NULL;
}

VKAPI_ATTR VkResult VKAPI_CALL
icd_vkSetPrivateData(VkDevice device, VkObjectType objectType, uint64_t objectHandle,
                     VkPrivateDataSlot privateDataSlot, uint64_t data)
{
   if (icd_daemon_knows(objectType, objectHandle))
      return icd_gen_vkSetPrivateData(device, objectType, objectHandle, privateDataSlot, data);
   uint64_t slot = (uint64_t)(uintptr_t)privateDataSlot;
   VkResult r = VK_SUCCESS;
   pthread_mutex_lock(&mutex);
   struct private_value *v = find(slot, objectHandle);
   if (!v && n_values == cap_values) {
      size_t cap = cap_values ? cap_values * 2 : 16;
      struct private_value *grown = realloc(values, cap * sizeof(*grown));
      if (grown) {
         values = grown;
         cap_values = cap;
      }
   }
   if (!v && n_values < cap_values) {
      v = &values[n_values++];
      v->slot = slot;
      v->handle = objectHandle;
   }
   if (v)
      v->data = data;
   else
      r = VK_ERROR_OUT_OF_HOST_MEMORY;
   pthread_mutex_unlock(&mutex);
   return r;
}

VKAPI_ATTR void VKAPI_CALL
icd_vkGetPrivateData(VkDevice device, VkObjectType objectType, uint64_t objectHandle,
                     VkPrivateDataSlot privateDataSlot, uint64_t *pData)
{
   if (icd_daemon_knows(objectType, objectHandle)) {
      icd_gen_vkGetPrivateData(device, objectType, objectHandle, privateDataSlot, pData);
      return;
   }
   pthread_mutex_lock(&mutex);
   const struct private_value *v = find((uint64_t)(uintptr_t)privateDataSlot, objectHandle);
   *pData = v ? v->data : 0;
   pthread_mutex_unlock(&mutex);
}

void
icd_private_data_forget(uint64_t handle)
{
   pthread_mutex_lock(&mutex);
   for (size_t i = 0; i < n_values;) {
      if (values[i].handle == handle)
         values[i] = values[--n_values];
      else
         i++;
   }
   pthread_mutex_unlock(&mutex);
}
