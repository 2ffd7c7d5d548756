/* SPDX-License-Identifier: MIT */
/*
 * The version, in a file of its own: the build links it into gpud, and a
 * second copy with another version into the executable the upgrade test
 * adopts workers with (tests/integration/meson.build).
 */
#include "daemon_version.h"

/* the project's version (meson.build), unless the build names another */
#ifndef GPUD_VERSION_TEXT
#define GPUD_VERSION_TEXT GPUD_PROJECT_VERSION
#endif

const char daemon_version[] = GPUD_VERSION_TEXT;
