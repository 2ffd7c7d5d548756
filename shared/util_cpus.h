/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * CPU sets from the kernel's lists ("0-3,8,10-11"), and the CPUs that take
 * a PCI device's interrupts.
 */

#include <sched.h>
#include <stdbool.h>
#include <stdint.h>

/* Parses a CPU list into cpus (cleared first); false on malformed text or
 * a CPU beyond CPU_SETSIZE. */
bool util_cpus_parse(const char *list, cpu_set_t *cpus);

/* Writes cpus as a list ("0-3,8") into buf; returns buf. */
char *util_cpus_format(const cpu_set_t *cpus, char *buf, size_t size);

/* The CPUs that have taken interrupts of the PCI device at address
 * ("0000:65:00.0", as sysfs names it) and take them now: the effective
 * affinity (/proc/irq/N/effective_affinity_list, else smp_affinity_list)
 * of each of its interrupts (/sys/bus/pci/devices/ADDR/msi_irqs, else its
 * legacy irq) that has fired (/sys/kernel/irq/N/per_cpu_count).  root
 * prefixes the paths ("" on a real system).  The number of such
 * interrupts, or -1 when the kernel tells nothing (no such device, no
 * sysfs). */
int util_pci_irq_cpus(const char *root, const char *address, cpu_set_t *cpus);
