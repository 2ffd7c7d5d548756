/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * Query pools (icd_query.c).
 */

#include "icd_object.h"

/* A query pool whose results the worker copies into a page (icd_query.c);
 * page NULL: asked about.  host_resets: the application's vkResetQueryPool
 * so far. */
struct icd_query_pool {
   struct icd_object base;
   struct gpud_query_page_header *page;
   size_t page_size;
   uint32_t n_queries, n_values;
   _Atomic uint32_t host_resets;
};
