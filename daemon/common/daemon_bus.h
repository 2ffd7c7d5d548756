/* SPDX-License-Identifier: MIT */
#pragma once

/* Opening a D-Bus connection by the name gpud and gpudctl take for it. */

#include <string.h>

#include <systemd/sd-bus.h>

/* which: "system", "session" or a bus address. */
static inline int
daemon_bus_open(const char *which, sd_bus **ret)
{
   if (!strcmp(which, "system"))
      return sd_bus_open_system(ret);
   if (!strcmp(which, "session"))
      return sd_bus_open_user(ret);
   int r = sd_bus_new(ret);
   if (r >= 0)
      r = sd_bus_set_address(*ret, which);
   if (r >= 0)
      r = sd_bus_set_bus_client(*ret, 1);
   if (r >= 0)
      r = sd_bus_start(*ret);
   return r;
}
