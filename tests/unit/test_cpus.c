/* SPDX-License-Identifier: MIT */
/* util_cpus: CPU lists parsed, and the CPUs a process may use from a
 * cgroup tree made for the test. */
#include <ftw.h>
#include <sys/stat.h>

#include "unit_test.h"
#include "util_cpus.h"

static void
test_parse(void)
{
   cpu_set_t s;
   char buf[64];
   CHECK(util_cpus_parse("0-3,8,10-11\n", &s));
   CHECK_EQ(CPU_COUNT(&s), 7);
   CHECK(CPU_ISSET(0, &s) && CPU_ISSET(3, &s) && CPU_ISSET(8, &s) && CPU_ISSET(11, &s));
   CHECK(!CPU_ISSET(4, &s) && !CPU_ISSET(9, &s));
   CHECK(!strcmp(util_cpus_format(&s, buf, sizeof(buf)), "0-3,8,10-11"));
   CHECK(util_cpus_parse("14", &s));
   CHECK(!strcmp(util_cpus_format(&s, buf, sizeof(buf)), "14"));
   CHECK(util_cpus_parse("\n", &s));
   CHECK_EQ(CPU_COUNT(&s), 0);
   CHECK(!strcmp(util_cpus_format(&s, buf, sizeof(buf)), ""));
   /* malformed, or beyond what a set holds */
   CHECK(!util_cpus_parse("3-1", &s));
   CHECK(!util_cpus_parse("1,", &s));
   CHECK(!util_cpus_parse("a", &s));
   CHECK(!util_cpus_parse("1-", &s));
   CHECK(!util_cpus_parse("0-99999", &s));
   CHECK(!util_cpus_parse("2 3", &s));
   /* a list longer than the buffer: what fits, still a list */
   CHECK(util_cpus_parse("0,2,4,6,8,10,12,14,16,18,20,22", &s));
   char small[12];
   CHECK(!strcmp(util_cpus_format(&s, small, sizeof(small)), "0,2,4,6,8"));
}

static void
write_file(const char *root, const char *path, const char *text)
{
   char full[512];
   snprintf(full, sizeof(full), "%s/%s", root, path);
   /* its folders */
   for (char *p = full + strlen(root) + 1; (p = strchr(p, '/')); p++) {
      *p = '\0';
      mkdir(full, 0755);
      *p = '/';
   }
   if (!text) {
      CHECK_SYS(mkdir(full, 0755));
      return;
   }
   FILE *f = fopen(full, "w");
   CHECK(f != NULL);
   fputs(text, f);
   fclose(f);
}

static int
remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
   return remove(path);
}

/* A GPU with four MSI-X vectors: two fired (on CPU 14, then moved to 3),
 * one never did, one with no counts to tell. */
static void
test_pci_irqs(void)
{
   char root[] = "/tmp/gpud-irq-XXXXXX";
   CHECK(mkdtemp(root));
   const char *dev = "sys/bus/pci/devices/0000:00:06.0";
   char path[256];
   static const struct {
      unsigned irq;
      const char *counts, *effective, *affinity;
   } irqs[] = {
      {42, "0,0,0,0,0,0,0,0,0,0,0,0,0,0,837120,0\n", "14\n", "0-15\n"},
      {43, "0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0\n", "0\n", "0-15\n"},
      {44, "14,0,0,0\n", NULL, "3\n"},
      {45, NULL, "7\n", "0-15\n"},
   };
   for (size_t i = 0; i < UTIL_ARRAY_SIZE(irqs); i++) {
      snprintf(path, sizeof(path), "%s/msi_irqs/%u", dev, irqs[i].irq);
      write_file(root, path, "msix\n");
      if (irqs[i].counts) {
         snprintf(path, sizeof(path), "sys/kernel/irq/%u/per_cpu_count", irqs[i].irq);
         write_file(root, path, irqs[i].counts);
      }
      if (irqs[i].effective) {
         snprintf(path, sizeof(path), "proc/irq/%u/effective_affinity_list", irqs[i].irq);
         write_file(root, path, irqs[i].effective);
      }
      snprintf(path, sizeof(path), "proc/irq/%u/smp_affinity_list", irqs[i].irq);
      write_file(root, path, irqs[i].affinity);
   }
   cpu_set_t cpus;
   char buf[64];
   CHECK_EQ(util_pci_irq_cpus(root, "0000:00:06.0", &cpus), 3);
   CHECK(!strcmp(util_cpus_format(&cpus, buf, sizeof(buf)), "3,7,14"));

   /* a device without MSI: its legacy line */
   write_file(root, "sys/bus/pci/devices/0000:65:00.1/irq", "42\n");
   CHECK_EQ(util_pci_irq_cpus(root, "0000:65:00.1", &cpus), 1);
   CHECK(!strcmp(util_cpus_format(&cpus, buf, sizeof(buf)), "14"));
   /* one without an interrupt, and no such device */
   write_file(root, "sys/bus/pci/devices/0000:65:00.2/irq", "0\n");
   CHECK_EQ(util_pci_irq_cpus(root, "0000:65:00.2", &cpus), 0);
   CHECK_EQ(util_pci_irq_cpus(root, "0000:66:00.0", &cpus), -1);
   CHECK_EQ(CPU_COUNT(&cpus), 0);
   CHECK_INT(nftw(root, remove_entry, 16, FTW_DEPTH | FTW_PHYS), ==, 0);
}

UNIT_MAIN(UNIT_TEST(test_parse), UNIT_TEST(test_pci_irqs))
