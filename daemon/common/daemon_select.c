/* SPDX-License-Identifier: MIT */
/*
 * Device selection: parsing what the user wrote (--device, device =), the
 * render nodes libdrm finds, and matching both against the host driver's
 * devices.  Nothing here calls Vulkan: daemon_host.c describes the host's
 * devices and asks.
 */
#include "daemon_select.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <xf86drm.h>

#include "util_macros.h"

static void UTIL_PRINTF(3, 4)
say(char *buf, size_t size, const char *fmt, ...)
{
   if (!buf || !size)
      return;
   va_list ap;
   va_start(ap, fmt);
   vsnprintf(buf, size, fmt, ap);
   va_end(ap);
}

/* ---- parsing --------------------------------------------------------------- */

static int
hex_digit(char c)
{
   if (c >= '0' && c <= '9')
      return c - '0';
   c = (char)tolower((unsigned char)c);
   return c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/* 32 hex digits, bare or as 8-4-4-4-12. */
static bool
parse_uuid(const char *s, uint8_t uuid[VK_UUID_SIZE])
{
   size_t len = strlen(s);
   bool dashed = len == 36;
   if (len != 32 && !dashed)
      return false;
   unsigned n = 0;
   for (size_t i = 0; i < len; i++) {
      if (dashed && (i == 8 || i == 13 || i == 18 || i == 23)) {
         if (s[i] != '-')
            return false;
         continue;
      }
      int v = hex_digit(s[i]);
      if (v < 0)
         return false;
      if (n % 2 == 0)
         uuid[n / 2] = (uint8_t)(v << 4);
      else
         uuid[n / 2] |= (uint8_t)v;
      n++;
   }
   return n == 2 * VK_UUID_SIZE;
}

/* Hex digits up to max, at least one; advances *s. */
static bool
parse_hex(const char **s, unsigned max_digits, uint32_t max, uint32_t *out)
{
   uint32_t v = 0;
   unsigned n = 0;
   int d;
   while (n < max_digits && (d = hex_digit(**s)) >= 0) {
      v = v * 16 + (uint32_t)d;
      (*s)++;
      n++;
   }
   if (!n || hex_digit(**s) >= 0 || v > max)
      return false;
   *out = v;
   return true;
}

/* [DOMAIN:]BUS:DEV.FN, as lspci writes it. */
static bool
parse_pci(const char *s, struct daemon_pci_address *pci)
{
   uint32_t a, b, c, d;
   const char *p = s;
   if (!parse_hex(&p, 8, UINT32_MAX, &a) || *p++ != ':' || !parse_hex(&p, 2, 0xff, &b))
      return false;
   if (*p == '.') {
      /* BUS:DEV.FN */
      p++;
      if (a > 0xff || b > 0x1f || !parse_hex(&p, 1, 7, &c) || *p)
         return false;
      *pci = (struct daemon_pci_address){.bus = (uint8_t)a, .device = (uint8_t)b,
                                       .function = (uint8_t)c};
      return true;
   }
   if (*p++ != ':' || !parse_hex(&p, 2, 0x1f, &c) || *p++ != '.' || !parse_hex(&p, 1, 7, &d) ||
       *p)
      return false;
   *pci = (struct daemon_pci_address){.domain = a, .bus = (uint8_t)b, .device = (uint8_t)c,
                                    .function = (uint8_t)d};
   return true;
}

/* renderDN, or /dev/dri/renderDN. */
static bool
parse_render(const char *s, char out[32])
{
   if (!strncmp(s, "/dev/dri/", 9))
      s += 9;
   if (strncmp(s, "renderD", 7))
      return false;
   const char *digits = s + 7;
   size_t n = strspn(digits, "0123456789");
   if (!n || n > 6 || digits[n])
      return false;
   memcpy(out, s, 7 + n); /* renderD and at most 6 digits */
   out[7 + n] = '\0';
   return true;
}

int
daemon_selector_parse(const char *text, struct daemon_selector *sel, char *err, size_t err_size)
{
   memset(sel, 0, sizeof(*sel));
   if (!text || !*text) {
      sel->by = DAEMON_SELECT_FIRST;
      return 0;
   }
   static const struct {
      const char *prefix;
      enum daemon_select_by by;
   } kinds[] = {
      {"index:", DAEMON_SELECT_INDEX}, {"uuid:", DAEMON_SELECT_UUID},
      {"pci:", DAEMON_SELECT_PCI},     {"render:", DAEMON_SELECT_RENDER},
      {"name:", DAEMON_SELECT_NAME},
   };
   const char *value = NULL;
   for (size_t i = 0; i < UTIL_ARRAY_SIZE(kinds); i++) {
      size_t len = strlen(kinds[i].prefix);
      if (!strncmp(text, kinds[i].prefix, len)) {
         sel->by = kinds[i].by;
         value = text + len;
         break;
      }
   }
   if (!value) {
      /* no prefix: by its shape */
      value = text;
      if (parse_uuid(text, sel->uuid))
         sel->by = DAEMON_SELECT_UUID;
      else if (parse_pci(text, &sel->pci))
         sel->by = DAEMON_SELECT_PCI;
      else if (parse_render(text, sel->render))
         sel->by = DAEMON_SELECT_RENDER;
      else
         sel->by = DAEMON_SELECT_NAME;
   }
   switch (sel->by) {
   case DAEMON_SELECT_INDEX: {
      size_t n = strspn(value, "0123456789");
      if (!n || n > 5 || value[n]) {
         say(err, err_size, "'%s': an index is a number (index:0 is the first device)", text);
         return -1;
      }
      sel->index = (uint32_t)strtoul(value, NULL, 10);
      return 0;
   }
   case DAEMON_SELECT_UUID:
      if (!parse_uuid(value, sel->uuid)) {
         say(err, err_size, "'%s': a UUID is 32 hex digits, bare or 8-4-4-4-12", text);
         return -1;
      }
      return 0;
   case DAEMON_SELECT_PCI:
      if (!parse_pci(value, &sel->pci)) {
         say(err, err_size, "'%s': a PCI address is [DOMAIN:]BUS:DEVICE.FUNCTION "
             "(hex, as lspci writes it: 0000:65:00.0)", text);
         return -1;
      }
      return 0;
   case DAEMON_SELECT_RENDER:
      if (!parse_render(value, sel->render)) {
         say(err, err_size, "'%s': a render node is renderDN or /dev/dri/renderDN", text);
         return -1;
      }
      return 0;
   case DAEMON_SELECT_NAME:
      if (!*value || strlen(value) >= sizeof(sel->name)) {
         say(err, err_size, "'%s': a name is 1 to %zu characters", text,
             sizeof(sel->name) - 1);
         return -1;
      }
      for (const char *c = value; *c; c++) {
         if ((unsigned char)*c < 0x20 || *c == 0x7f) {
            say(err, err_size, "a device name has no control characters");
            return -1;
         }
      }
      /* an unknown "kind:" is a mistake more often than a name */
      size_t word = strspn(value, "abcdefghijklmnopqrstuvwxyz");
      if (value == text && word && value[word] == ':') {
         say(err, err_size, "'%s': unknown selector '%.*s:' (index:, uuid:, pci:, render: "
             "or name:)", text, (int)word, value);
         return -1;
      }
      snprintf(sel->name, sizeof(sel->name), "%s", value);
      return 0;
   case DAEMON_SELECT_FIRST:
      break;
   }
   return 0;
}

void
daemon_uuid_format(const uint8_t uuid[VK_UUID_SIZE], char buf[DAEMON_UUID_TEXT])
{
   char *p = buf;
   for (unsigned i = 0; i < VK_UUID_SIZE; i++) {
      if (i == 4 || i == 6 || i == 8 || i == 10)
         *p++ = '-';
      p += sprintf(p, "%02x", uuid[i]);
   }
   *p = '\0';
}

void
daemon_pci_format(const struct daemon_pci_address *pci, char buf[DAEMON_PCI_TEXT])
{
   /* lspci's form; a domain past 16 bits (VMD) takes the digits it needs */
   snprintf(buf, DAEMON_PCI_TEXT, "%0*x:%02x:%02x.%x", pci->domain > 0xffff ? 1 : 4,
            pci->domain, pci->bus, pci->device, pci->function);
}

void
daemon_selector_format(const struct daemon_selector *sel, char *buf, size_t size)
{
   char text[DAEMON_UUID_TEXT];
   switch (sel->by) {
   case DAEMON_SELECT_FIRST:
      say(buf, size, "%s", "");
      break;
   case DAEMON_SELECT_INDEX:
      say(buf, size, "index:%u", sel->index);
      break;
   case DAEMON_SELECT_UUID:
      daemon_uuid_format(sel->uuid, text);
      say(buf, size, "uuid:%s", text);
      break;
   case DAEMON_SELECT_PCI:
      daemon_pci_format(&sel->pci, text);
      say(buf, size, "pci:%s", text);
      break;
   case DAEMON_SELECT_RENDER:
      say(buf, size, "render:%s", sel->render);
      break;
   case DAEMON_SELECT_NAME:
      say(buf, size, "name:%s", sel->name);
      break;
   }
}

/* ---- render nodes ------------------------------------------------------------ */

static int
add_node(struct daemon_render_node **nodes, size_t *n, const struct daemon_render_node *node)
{
   struct daemon_render_node *grown = realloc(*nodes, (*n + 1) * sizeof(**nodes));
   if (!grown)
      return -ENOMEM;
   *nodes = grown;
   grown[(*n)++] = *node;
   return 0;
}

static int
compare_nodes(const void *a, const void *b)
{
   const struct daemon_render_node *x = a, *y = b;
   return x->minor < y->minor ? -1 : x->minor > y->minor;
}

/* Reads a small sysfs file into buf; false when it cannot. */
static bool
read_small(const char *path, char *buf, size_t size)
{
   FILE *f = fopen(path, "re");
   if (!f)
      return false;
   size_t r = fread(buf, 1, size - 1, f);
   fclose(f);
   buf[r] = '\0';
   return r > 0;
}

/* The PCI address, ids and driver a device's uevent names. */
static void
read_uevent(const char *path, struct daemon_render_node *node)
{
   char text[4096];
   if (!read_small(path, text, sizeof(text)))
      return;
   char *save = NULL;
   for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
      unsigned vendor, device;
      int end = 0;
      if (!strncmp(line, "PCI_SLOT_NAME=", 14)) {
         node->has_pci = parse_pci(line + 14, &node->pci);
      } else if (sscanf(line, "PCI_ID=%x:%x%n", &vendor, &device, &end) == 2 && !line[end] &&
                 vendor <= 0xffff && device <= 0xffff) {
         node->vendor_id = vendor;
         node->device_id = device;
      } else if (!strncmp(line, "DRIVER=", 7)) {
         snprintf(node->driver, sizeof(node->driver), "%.31s", line + 7);
      }
   }
}

/* A tree laid out like /sys: class/drm/renderD* with dev and device/uevent. */
static int
nodes_from_sysfs(const char *root, struct daemon_render_node **nodes, size_t *n)
{
   char dir[4096];
   if (snprintf(dir, sizeof(dir), "%s/class/drm", root) >= (int)sizeof(dir))
      return -ENAMETOOLONG;
   DIR *d = opendir(dir);
   if (!d)
      return errno == ENOENT ? 0 : -errno;
   struct dirent *de;
   int r = 0;
   while (r == 0 && (de = readdir(d))) {
      struct daemon_render_node node = {0};
      if (!parse_render(de->d_name, node.name))
         continue;
      char path[4096 + 300], text[64];
      unsigned major, minor;
      int end = 0;
      snprintf(path, sizeof(path), "%s/%s/dev", dir, de->d_name);
      if (!read_small(path, text, sizeof(text)) ||
          sscanf(text, "%u:%u%n", &major, &minor, &end) != 2 ||
          (text[end] && text[end] != '\n'))
         continue; /* not a device node's directory */
      node.major = major;
      node.minor = minor;
      snprintf(path, sizeof(path), "%s/%s/device/uevent", dir, de->d_name);
      read_uevent(path, &node);
      r = add_node(nodes, n, &node);
   }
   closedir(d);
   return r;
}

static int
nodes_from_libdrm(struct daemon_render_node **nodes, size_t *n)
{
   int count = drmGetDevices2(0, NULL, 0);
   if (count <= 0)
      return 0; /* no DRM devices (or no /dev/dri at all) */
   drmDevicePtr *devs = calloc((size_t)count, sizeof(*devs));
   if (!devs)
      return -ENOMEM;
   count = drmGetDevices2(0, devs, count);
   int r = 0;
   for (int i = 0; r == 0 && i < count; i++) {
      const drmDevicePtr dev = devs[i];
      if (!(dev->available_nodes & (1 << DRM_NODE_RENDER)))
         continue;
      const char *path = dev->nodes[DRM_NODE_RENDER];
      const char *base = strrchr(path, '/');
      struct daemon_render_node node = {0};
      struct stat st;
      if (!parse_render(base ? base + 1 : path, node.name) || stat(path, &st) < 0 ||
          !S_ISCHR(st.st_mode))
         continue;
      node.major = major(st.st_rdev);
      node.minor = minor(st.st_rdev);
      if (dev->bustype == DRM_BUS_PCI && dev->businfo.pci) {
         node.has_pci = true;
         node.pci = (struct daemon_pci_address){
            .domain = dev->businfo.pci->domain,
            .bus = dev->businfo.pci->bus,
            .device = dev->businfo.pci->dev,
            .function = dev->businfo.pci->func,
         };
         if (dev->deviceinfo.pci) {
            node.vendor_id = dev->deviceinfo.pci->vendor_id;
            node.device_id = dev->deviceinfo.pci->device_id;
         }
      }
      /* the kernel driver's name is sysfs's alone (libdrm would open the node) */
      char uevent[128];
      snprintf(uevent, sizeof(uevent), "/sys/dev/char/%u:%u/device/uevent", node.major,
               node.minor);
      struct daemon_render_node named = {0};
      read_uevent(uevent, &named);
      memcpy(node.driver, named.driver, sizeof(node.driver));
      r = add_node(nodes, n, &node);
   }
   drmFreeDevices(devs, count);
   free(devs);
   return r;
}

int
daemon_render_nodes(const char *sysfs_root, struct daemon_render_node **nodes, size_t *n)
{
   *nodes = NULL;
   *n = 0;
   int r = sysfs_root ? nodes_from_sysfs(sysfs_root, nodes, n) : nodes_from_libdrm(nodes, n);
   if (r < 0) {
      free(*nodes);
      *nodes = NULL;
      *n = 0;
      return r;
   }
   if (*n > 1)
      qsort(*nodes, *n, sizeof(**nodes), compare_nodes);
   return 0;
}

/* ---- matching ------------------------------------------------------------- */

static bool
same_pci(const struct daemon_pci_address *a, const struct daemon_pci_address *b)
{
   return a->domain == b->domain && a->bus == b->bus && a->device == b->device &&
          a->function == b->function;
}

const struct daemon_render_node *
daemon_device_render_node(const struct daemon_device_info *dev, const struct daemon_render_node *nodes,
                        size_t n_nodes)
{
   for (size_t i = 0; i < n_nodes; i++) {
      if (dev->has_render) {
         if (dev->render_major == nodes[i].major && dev->render_minor == nodes[i].minor)
            return &nodes[i];
      } else if (dev->has_pci && nodes[i].has_pci && same_pci(&dev->pci, &nodes[i].pci)) {
         return &nodes[i];
      }
   }
   return NULL;
}

static int
find_pci(const struct daemon_pci_address *pci, const struct daemon_device_info *devs, size_t n_devs,
         char *why, size_t why_size)
{
   bool any_pci = false;
   for (size_t i = 0; i < n_devs; i++) {
      any_pci |= devs[i].has_pci;
      if (devs[i].has_pci && same_pci(&devs[i].pci, pci))
         return (int)i;
   }
   char text[DAEMON_PCI_TEXT];
   daemon_pci_format(pci, text);
   if (!any_pci)
      say(why, why_size, "no device at PCI address %s: the host driver tells no device's "
          "PCI address (VK_EXT_pci_bus_info)", text);
   else
      say(why, why_size, "no device at PCI address %s", text);
   return -1;
}

int
daemon_select_device(const struct daemon_selector *sel, const struct daemon_device_info *devs,
                   size_t n_devs, const struct daemon_render_node *nodes, size_t n_nodes,
                   unsigned *matches, char *why, size_t why_size)
{
   if (matches)
      *matches = 0;
   if (!n_devs) {
      say(why, why_size, "the host driver has no device");
      return -1;
   }
   switch (sel->by) {
   case DAEMON_SELECT_FIRST:
      if (matches)
         *matches = 1;
      return 0;
   case DAEMON_SELECT_INDEX:
      if (sel->index < n_devs) {
         if (matches)
            *matches = 1;
         return (int)sel->index;
      }
      say(why, why_size, "no device index:%u: the host driver has %zu (index:0 to index:%zu)",
          sel->index, n_devs, n_devs - 1);
      return -1;
   case DAEMON_SELECT_UUID:
      for (size_t i = 0; i < n_devs; i++) {
         if (!memcmp(devs[i].uuid, sel->uuid, VK_UUID_SIZE)) {
            if (matches)
               *matches = 1;
            return (int)i;
         }
      }
      char text[DAEMON_UUID_TEXT];
      daemon_uuid_format(sel->uuid, text);
      say(why, why_size, "no device has UUID %s", text);
      return -1;
   case DAEMON_SELECT_PCI: {
      int i = find_pci(&sel->pci, devs, n_devs, why, why_size);
      if (i >= 0 && matches)
         *matches = 1;
      return i;
   }
   case DAEMON_SELECT_RENDER: {
      const struct daemon_render_node *node = NULL;
      for (size_t i = 0; i < n_nodes && !node; i++) {
         if (!strcmp(nodes[i].name, sel->render))
            node = &nodes[i];
      }
      if (!node) {
         say(why, why_size, "no render node %s (%zu found)", sel->render, n_nodes);
         return -1;
      }
      for (size_t i = 0; i < n_devs; i++) {
         if (daemon_device_render_node(&devs[i], node, 1)) {
            if (matches)
               *matches = 1;
            return (int)i;
         }
      }
      if (!node->has_pci) {
         say(why, why_size, "no device is render node %s (%u:%u; not a PCI device, and the "
             "host driver tells no device's node)", node->name, node->major, node->minor);
         return -1;
      }
      char pci[DAEMON_PCI_TEXT];
      daemon_pci_format(&node->pci, pci);
      char inner[200];
      find_pci(&node->pci, devs, n_devs, inner, sizeof(inner));
      say(why, why_size, "no device is render node %s (PCI %s, %04x:%04x%s%s): %s", node->name,
          pci, node->vendor_id, node->device_id, node->driver[0] ? ", driver " : "",
          node->driver, inner);
      return -1;
   }
   case DAEMON_SELECT_NAME: {
      int first = -1;
      unsigned count = 0;
      for (size_t i = 0; i < n_devs; i++) {
         if (strstr(devs[i].name, sel->name)) {
            if (first < 0)
               first = (int)i;
            count++;
         }
      }
      if (matches)
         *matches = count;
      if (first < 0)
         say(why, why_size, "no device's name contains '%s'", sel->name);
      return first;
   }
   }
   say(why, why_size, "no such selector");
   return -1;
}
