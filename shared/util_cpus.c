/* SPDX-License-Identifier: MIT */
/* CPU lists (sysfs and cgroup syntax) parsed, and the CPUs a process may
 * use (util_cpus.h). */
#include "util_cpus.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

bool
util_cpus_parse(const char *list, cpu_set_t *cpus)
{
   CPU_ZERO(cpus);
   const char *p = list;
   while (*p == ' ' || *p == '\t')
      p++;
   if (*p == '\n' || !*p)
      return true; /* an empty list */
   for (;;) {
      char *end;
      errno = 0;
      unsigned long first = strtoul(p, &end, 10);
      if (end == p || errno || first >= CPU_SETSIZE)
         return false;
      unsigned long last = first;
      p = end;
      if (*p == '-') {
         p++;
         last = strtoul(p, &end, 10);
         if (end == p || errno || last >= CPU_SETSIZE || last < first)
            return false;
         p = end;
      }
      for (unsigned long c = first; c <= last; c++)
         CPU_SET(c, cpus);
      if (*p == ',') {
         p++;
         continue;
      }
      while (*p == ' ' || *p == '\t' || *p == '\n')
         p++;
      return *p == '\0';
   }
}

char *
util_cpus_format(const cpu_set_t *cpus, char *buf, size_t size)
{
   size_t n = 0;
   if (!size)
      return buf;
   buf[0] = '\0';
   for (int c = 0; c < CPU_SETSIZE; c++) {
      if (!CPU_ISSET(c, cpus))
         continue;
      int last = c;
      while (last + 1 < CPU_SETSIZE && CPU_ISSET(last + 1, cpus))
         last++;
      char piece[32];
      int w = last > c ? snprintf(piece, sizeof(piece), "%s%d-%d", n ? "," : "", c, last)
                       : snprintf(piece, sizeof(piece), "%s%d", n ? "," : "", c);
      if (w < 0 || (size_t)w >= size - n)
         break; /* what fits */
      memcpy(buf + n, piece, (size_t)w + 1);
      n += (size_t)w;
      c = last;
   }
   return buf;
}

/* The first line of a small file, without its newline; false if unreadable. */
static bool
read_line(const char *path, char *buf, size_t size)
{
   FILE *f = fopen(path, "re");
   if (!f)
      return false;
   bool ok = fgets(buf, (int)size, f) != NULL;
   fclose(f);
   if (ok)
      buf[strcspn(buf, "\n")] = '\0';
   return ok;
}

/* Whether irq has fired on any CPU (per_cpu_count: "0,0,837120,0", as
 * long as the machine has CPUs). */
static bool
irq_fired(const char *root, unsigned irq)
{
   char path[512];
   snprintf(path, sizeof(path), "%s/sys/kernel/irq/%u/per_cpu_count", root, irq);
   FILE *f = fopen(path, "re");
   if (!f)
      return true; /* no counts to tell: count it */
   bool fired = false;
   for (int c; !fired && (c = getc(f)) != EOF && c != '\n';)
      fired = c >= '1' && c <= '9';
   fclose(f);
   return fired;
}

/* Adds the CPUs that take irq now to cpus; whether it could tell. */
static bool
irq_cpus(const char *root, unsigned irq, cpu_set_t *cpus)
{
   static const char *const names[] = {"effective_affinity_list", "smp_affinity_list"};
   for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
      char path[512], list[4096];
      cpu_set_t set;
      snprintf(path, sizeof(path), "%s/proc/irq/%u/%s", root, irq, names[i]);
      if (!read_line(path, list, sizeof(list)) || !util_cpus_parse(list, &set) || !CPU_COUNT(&set))
         continue;
      CPU_OR(cpus, cpus, &set);
      return true;
   }
   return false;
}

int
util_pci_irq_cpus(const char *root, const char *address, cpu_set_t *cpus)
{
   CPU_ZERO(cpus);
   char dir[512];
   snprintf(dir, sizeof(dir), "%s/sys/bus/pci/devices/%s", root, address);
   char path[600];
   snprintf(path, sizeof(path), "%s/msi_irqs", dir);
   int n = 0;
   DIR *d = opendir(path);
   if (d) {
      struct dirent *e;
      while ((e = readdir(d))) {
         char *end;
         unsigned long irq = strtoul(e->d_name, &end, 10);
         if (end == e->d_name || *end || irq > UINT32_MAX)
            continue;
         if (irq_fired(root, (unsigned)irq) && irq_cpus(root, (unsigned)irq, cpus))
            n++;
      }
      closedir(d);
      return n;
   }
   /* no MSI: the legacy interrupt line, where it has one */
   char text[32];
   snprintf(path, sizeof(path), "%s/irq", dir);
   if (!read_line(path, text, sizeof(text)))
      return -1;
   char *end;
   unsigned long irq = strtoul(text, &end, 10);
   if (end == text || irq == 0 || irq > UINT32_MAX)
      return 0;
   return irq_fired(root, (unsigned)irq) && irq_cpus(root, (unsigned)irq, cpus) ? 1 : 0;
}
