/* SPDX-License-Identifier: MIT */
/*
 * Device selection (daemon/common/daemon_select.c): what users write, render nodes
 * from a sysfs tree laid out like /sys, and which host device each
 * selector picks among devices like those of a two-GPU machine.
 */
#include <ftw.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include "unit_test.h"
#include "daemon_select.h"

static void
parse_ok(const char *text, enum daemon_select_by by, const char *canonical)
{
   struct daemon_selector sel;
   char err[256] = "", buf[128];
   if (daemon_selector_parse(text, &sel, err, sizeof(err)) < 0)
      unit_fail(__FILE__, __LINE__, "'%s' refused: %s", text, err);
   CHECK_INT(sel.by, ==, by);
   daemon_selector_format(&sel, buf, sizeof(buf));
   if (strcmp(buf, canonical))
      unit_fail(__FILE__, __LINE__, "'%s' reads as '%s', expected '%s'", text, buf, canonical);
   /* the canonical text is what the server hands its workers: it must
    * read back as the same selector */
   struct daemon_selector again;
   CHECK_INT(daemon_selector_parse(buf[0] ? buf : NULL, &again, NULL, 0), ==, 0);
   CHECK(!memcmp(&sel, &again, sizeof(sel)));
}

static void
parse_bad(const char *text, const char *why_contains)
{
   struct daemon_selector sel;
   char err[256] = "";
   if (daemon_selector_parse(text, &sel, err, sizeof(err)) == 0)
      unit_fail(__FILE__, __LINE__, "'%s' accepted", text);
   if (!strstr(err, why_contains))
      unit_fail(__FILE__, __LINE__, "'%s': \"%s\" does not say \"%s\"", text, err,
                why_contains);
}

static void
test_parse(void)
{
   parse_ok(NULL, DAEMON_SELECT_FIRST, "");
   parse_ok("", DAEMON_SELECT_FIRST, "");
   parse_ok("index:0", DAEMON_SELECT_INDEX, "index:0");
   parse_ok("index:12", DAEMON_SELECT_INDEX, "index:12");
   parse_ok("uuid:0123456789abcdef0123456789ABCDEF", DAEMON_SELECT_UUID,
            "uuid:01234567-89ab-cdef-0123-456789abcdef");
   parse_ok("01234567-89ab-cdef-0123-456789abcdef", DAEMON_SELECT_UUID,
            "uuid:01234567-89ab-cdef-0123-456789abcdef");
   parse_ok("pci:0000:65:00.0", DAEMON_SELECT_PCI, "pci:0000:65:00.0");
   parse_ok("0000:b3:00.1", DAEMON_SELECT_PCI, "pci:0000:b3:00.1");
   parse_ok("65:00.0", DAEMON_SELECT_PCI, "pci:0000:65:00.0");
   parse_ok("pci:10000:01:1f.7", DAEMON_SELECT_PCI, "pci:10000:01:1f.7");
   parse_ok("render:renderD128", DAEMON_SELECT_RENDER, "render:renderD128");
   parse_ok("renderD129", DAEMON_SELECT_RENDER, "render:renderD129");
   parse_ok("/dev/dri/renderD130", DAEMON_SELECT_RENDER, "render:renderD130");
   parse_ok("H100", DAEMON_SELECT_NAME, "name:H100");
   parse_ok("NVIDIA H100 80GB HBM3", DAEMON_SELECT_NAME, "name:NVIDIA H100 80GB HBM3");
   /* a name that looks like something else, said to be a name */
   parse_ok("name:renderD128", DAEMON_SELECT_NAME, "name:renderD128");
   parse_ok("name:3090", DAEMON_SELECT_NAME, "name:3090");
   parse_ok("3090", DAEMON_SELECT_NAME, "name:3090");
   parse_ok("llvmpipe (LLVM 15.0.6, 256 bits)", DAEMON_SELECT_NAME,
            "name:llvmpipe (LLVM 15.0.6, 256 bits)");

   parse_bad("index:", "an index is a number");
   parse_bad("index:-1", "an index is a number");
   parse_bad("index:1x", "an index is a number");
   parse_bad("uuid:0123", "32 hex digits");
   parse_bad("uuid:0123456789abcdef0123456789abcdeg", "32 hex digits");
   parse_bad("uuid:01234567-89ab-cdef-0123-456789abcde-", "32 hex digits");
   parse_bad("pci:65:00", "PCI address");
   parse_bad("pci:0000:65:20.0", "PCI address"); /* device numbers stop at 1f */
   parse_bad("pci:0000:65:00.8", "PCI address");
   parse_bad("pci:0000:165:00.0", "PCI address");
   parse_bad("pci:0000:65:00.0 ", "PCI address");
   parse_bad("render:card0", "render node");
   parse_bad("render:renderD", "render node");
   parse_bad("render:/dev/dri/renderD12a", "render node");
   parse_bad("name:", "a name is 1 to");
   parse_bad("name:a\tb", "control characters");
   parse_bad("gpu:0", "unknown selector 'gpu:'");
}

/* ---- a sysfs tree ---------------------------------------------------------- */

static void
write_text(const char *dir, const char *name, const char *text)
{
   char path[512];
   CHECK(snprintf(path, sizeof(path), "%s/%s", dir, name) < (int)sizeof(path));
   FILE *f = fopen(path, "w");
   CHECK(f);
   fputs(text, f);
   CHECK_INT(fclose(f), ==, 0);
}

/* root/a[/b] */
static void
make_dir(const char *root, const char *a, const char *b)
{
   char path[512];
   CHECK(snprintf(path, sizeof(path), "%s/%s%s%s", root, a, b ? "/" : "", b ? b : "") <
         (int)sizeof(path));
   CHECK(mkdir(path, 0755) == 0 || errno == EEXIST);
}

/* class/drm/NAME/dev and class/drm/NAME/device/uevent */
static void
fake_node(const char *root, const char *name, const char *dev, const char *uevent)
{
   char path[512];
   make_dir(root, "class/drm", name);
   CHECK(snprintf(path, sizeof(path), "%s/class/drm/%s", root, name) < (int)sizeof(path));
   if (dev)
      write_text(path, "dev", dev);
   CHECK(snprintf(path, sizeof(path), "%s/device", name) < (int)sizeof(path));
   make_dir(root, "class/drm", path);
   CHECK(snprintf(path, sizeof(path), "%s/class/drm/%s/device", root, name) < (int)sizeof(path));
   if (uevent)
      write_text(path, "uevent", uevent);
}

static int
remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
   return remove(path);
}

static void
remove_tree(const char *root)
{
   CHECK_INT(nftw(root, remove_entry, 16, FTW_DEPTH | FTW_PHYS), ==, 0);
}

static char *
fake_sysfs(void)
{
   static char root[] = "/tmp/gpud-sysfs-XXXXXX";
   CHECK(mkdtemp(root));
   make_dir(root, "class", NULL);
   make_dir(root, "class/drm", NULL);
   /* listed out of order: the nodes come back by minor number */
   fake_node(root, "renderD129", "226:129\n",
             "DRIVER=nvidia\nPCI_CLASS=30200\nPCI_ID=10DE:2330\nPCI_SUBSYS_ID=10DE:16C1\n"
             "PCI_SLOT_NAME=0000:b3:00.0\nMODALIAS=pci:v000010DEd00002330\n");
   fake_node(root, "renderD128", "226:128\n",
             "DRIVER=nvidia\nPCI_CLASS=30200\nPCI_ID=10DE:2330\n"
             "PCI_SLOT_NAME=0000:65:00.0\n");
   /* an SoC GPU: no PCI address */
   fake_node(root, "renderD130", "226:130\n", "DRIVER=v3d\nOF_NAME=v3d\n");
   /* not render nodes, or not readable as one */
   fake_node(root, "card0", "226:0\n", "DRIVER=nvidia\nPCI_SLOT_NAME=0000:65:00.0\n");
   fake_node(root, "card0-DP-1", NULL, NULL);
   fake_node(root, "renderD131", "garbage\n", "PCI_SLOT_NAME=0000:01:00.0\n");
   fake_node(root, "renderD132", NULL, "PCI_SLOT_NAME=0000:02:00.0\n");
   /* a uevent that lies: a PCI address that is not one */
   fake_node(root, "renderD133", "226:133\n", "PCI_SLOT_NAME=zz:zz\nPCI_ID=123456:1\n");
   return root;
}

static void
test_sysfs_nodes(void)
{
   const char *root = fake_sysfs();
   struct daemon_render_node *nodes;
   size_t n;
   CHECK_INT(daemon_render_nodes(root, &nodes, &n), ==, 0);
   CHECK_INT(n, ==, 4);
   CHECK(!strcmp(nodes[0].name, "renderD128"));
   CHECK_INT(nodes[0].major, ==, 226);
   CHECK_INT(nodes[0].minor, ==, 128);
   CHECK(nodes[0].has_pci);
   CHECK_INT(nodes[0].pci.domain, ==, 0);
   CHECK_INT(nodes[0].pci.bus, ==, 0x65);
   CHECK_INT(nodes[0].vendor_id, ==, 0x10de);
   CHECK_INT(nodes[0].device_id, ==, 0x2330);
   CHECK(!strcmp(nodes[0].driver, "nvidia"));
   CHECK(!strcmp(nodes[1].name, "renderD129"));
   CHECK_INT(nodes[1].pci.bus, ==, 0xb3);
   CHECK(!strcmp(nodes[2].name, "renderD130"));
   CHECK(!nodes[2].has_pci);
   CHECK(!strcmp(nodes[2].driver, "v3d"));
   CHECK(!strcmp(nodes[3].name, "renderD133"));
   CHECK(!nodes[3].has_pci);
   CHECK_INT(nodes[3].vendor_id, ==, 0);
   free(nodes);
   remove_tree(root);

   /* a tree without class/drm: no render nodes, not an error */
   char empty[] = "/tmp/gpud-sysfs-empty-XXXXXX";
   CHECK(mkdtemp(empty));
   CHECK_INT(daemon_render_nodes(empty, &nodes, &n), ==, 0);
   CHECK_INT(n, ==, 0);
   CHECK(!nodes);
   rmdir(empty);
}

/* ---- matching ------------------------------------------------------------- */

static struct daemon_device_info devs[4];

static void
fake_devices(void)
{
   memset(devs, 0, sizeof(devs));
   /* two identical GPUs: only their UUIDs and PCI addresses differ */
   for (int i = 0; i < 2; i++) {
      snprintf(devs[i].name, sizeof(devs[i].name), "NVIDIA H100 80GB HBM3");
      devs[i].type = VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU;
      devs[i].vendor_id = 0x10de;
      devs[i].device_id = 0x2330;
      memset(devs[i].uuid, 0x10 + i, VK_UUID_SIZE);
      devs[i].has_pci = true;
   }
   /* the driver lists the one at b3 first */
   devs[0].pci = (struct daemon_pci_address){.bus = 0xb3};
   devs[1].pci = (struct daemon_pci_address){.bus = 0x65};
   /* an SoC GPU whose driver tells its DRM node */
   snprintf(devs[2].name, sizeof(devs[2].name), "V3D 7.1");
   devs[2].type = VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU;
   memset(devs[2].uuid, 0x30, VK_UUID_SIZE);
   devs[2].has_render = true;
   devs[2].render_major = 226;
   devs[2].render_minor = 130;
   /* a software device */
   snprintf(devs[3].name, sizeof(devs[3].name), "llvmpipe (LLVM 15.0.6, 256 bits)");
   devs[3].type = VK_PHYSICAL_DEVICE_TYPE_CPU;
   memset(devs[3].uuid, 0x40, VK_UUID_SIZE);
}

static int
pick(const char *text, const struct daemon_render_node *nodes, size_t n_nodes, unsigned *matches,
     char *why, size_t why_size)
{
   struct daemon_selector sel;
   CHECK_INT(daemon_selector_parse(text, &sel, NULL, 0), ==, 0);
   return daemon_select_device(&sel, devs, UTIL_ARRAY_SIZE(devs), nodes, n_nodes, matches, why,
                             why_size);
}

static void
expect_pick(const char *text, const struct daemon_render_node *nodes, size_t n_nodes, int want)
{
   char why[512] = "";
   int got = pick(text, nodes, n_nodes, NULL, why, sizeof(why));
   if (got != want)
      unit_fail(__FILE__, __LINE__, "'%s' picks %d, expected %d (%s)", text, got, want, why);
}

static void
expect_none(const char *text, const struct daemon_render_node *nodes, size_t n_nodes,
            const char *why_contains)
{
   char why[512] = "";
   int got = pick(text, nodes, n_nodes, NULL, why, sizeof(why));
   if (got != -1 || !strstr(why, why_contains))
      unit_fail(__FILE__, __LINE__, "'%s' picks %d (\"%s\"), expected none saying \"%s\"",
                text, got, why, why_contains);
}

static void
test_select(void)
{
   fake_devices();
   const char *root = fake_sysfs();
   struct daemon_render_node *nodes;
   size_t n;
   CHECK_INT(daemon_render_nodes(root, &nodes, &n), ==, 0);
   CHECK_INT(n, ==, 4);

   expect_pick("", nodes, n, 0);
   expect_pick("index:2", nodes, n, 2);
   expect_none("index:4", nodes, n, "has 4 (index:0 to index:3)");
   expect_pick("uuid:11111111-1111-1111-1111-111111111111", nodes, n, 1);
   expect_pick("40404040404040404040404040404040", nodes, n, 3);
   expect_none("uuid:99999999-9999-9999-9999-999999999999", nodes, n,
               "no device has UUID 99999999-9999-9999-9999-999999999999");
   /* identical GPUs apart by PCI address and render node, whatever the
    * driver's order */
   expect_pick("pci:0000:65:00.0", nodes, n, 1);
   expect_pick("b3:00.0", nodes, n, 0);
   expect_pick("renderD128", nodes, n, 1);
   expect_pick("/dev/dri/renderD129", nodes, n, 0);
   /* a node without a PCI address, by the DRM numbers the driver tells */
   expect_pick("render:renderD130", nodes, n, 2);
   expect_none("pci:0000:01:00.0", nodes, n, "no device at PCI address 0000:01:00.0");
   expect_none("renderD131", nodes, n, "no render node renderD131 (4 found)");
   expect_none("renderD133", nodes, n, "no device is render node renderD133 (226:133; not a "
               "PCI device");
   expect_pick("llvmpipe", nodes, n, 3);
   expect_none("name:Radeon", nodes, n, "no device's name contains 'Radeon'");

   /* a name two devices share: the first, and the caller is told */
   unsigned matches = 0;
   CHECK_INT(pick("H100", nodes, n, &matches, NULL, 0), ==, 0);
   CHECK_INT(matches, ==, 2);

   /* which device is which node */
   CHECK(daemon_device_render_node(&devs[0], nodes, n) == &nodes[1]);
   CHECK(daemon_device_render_node(&devs[1], nodes, n) == &nodes[0]);
   CHECK(daemon_device_render_node(&devs[2], nodes, n) == &nodes[2]);
   CHECK(daemon_device_render_node(&devs[3], nodes, n) == NULL);

   /* a host driver that tells no PCI addresses (lavapipe's case) */
   for (int i = 0; i < 2; i++)
      devs[i].has_pci = false;
   expect_none("pci:0000:65:00.0", nodes, n, "tells no device's PCI address");
   expect_none("renderD128", nodes, n, "no device is render node renderD128 (PCI 0000:65:00.0, "
               "10de:2330, driver nvidia)");
   /* no render nodes at all (no /dev/dri) */
   expect_none("renderD128", NULL, 0, "no render node renderD128 (0 found)");
   /* no devices */
   struct daemon_selector first = {.by = DAEMON_SELECT_FIRST};
   char why[128];
   CHECK_INT(daemon_select_device(&first, devs, 0, nodes, n, NULL, why, sizeof(why)), ==, -1);
   CHECK(strstr(why, "no device"));
   free(nodes);
   remove_tree(root);
}

/* The machine's own render nodes through libdrm: none here, or real ones
 * with the names and numbers of /dev/dri. */
static void
test_libdrm_nodes(void)
{
   struct daemon_render_node *nodes;
   size_t n;
   CHECK_INT(daemon_render_nodes(NULL, &nodes, &n), ==, 0);
   for (size_t i = 0; i < n; i++) {
      char path[64];
      struct stat st;
      CHECK(snprintf(path, sizeof(path), "/dev/dri/%s", nodes[i].name) < (int)sizeof(path));
      CHECK_SYS(stat(path, &st));
      CHECK_INT(minor(st.st_rdev), ==, nodes[i].minor);
   }
   struct stat st;
   if (stat("/dev/dri", &st) < 0)
      CHECK_INT(n, ==, 0);
   free(nodes);
}

int
main(int argc, char **argv)
{
   static const struct unit_test tests[] = {
      UNIT_TEST(test_parse),
      UNIT_TEST(test_sysfs_nodes),
      UNIT_TEST(test_select),
      UNIT_TEST(test_libdrm_nodes),
   };
   return unit_main(argc, argv, tests, UTIL_ARRAY_SIZE(tests));
}
