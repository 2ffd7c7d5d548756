#!/bin/sh
# SPDX-License-Identifier: MIT
#
# Unpacks Debian 12's own lavapipe (Mesa 22.3, Vulkan 1.3) into .deps/,
# beside the sources, so that the tests can check gpud's basics on it too
# while Mesa 25's is the system's; prints its ICD manifest's path.
# Idempotent: a tree already there is kept.
set -eu
cd "$(dirname "$0")/.."

dir="$PWD/.deps/mesa-bookworm"
manifest="$dir/lvp_icd.json"
if [ ! -f "$manifest" ]; then
   rm -rf "$dir.tmp"
   mkdir -p "$dir.tmp"
   # (bookworm's own suite, whatever backports pin the system to)
   (cd "$dir.tmp" && apt-get download -q mesa-vulkan-drivers/bookworm >&2)
   dpkg-deb -x "$dir.tmp"/mesa-vulkan-drivers_*.deb "$dir.tmp/root"
   lib=$(find "$dir.tmp/root" -name libvulkan_lvp.so | head -1)
   [ -n "$lib" ] || { echo "no libvulkan_lvp.so in bookworm's mesa-vulkan-drivers" >&2; exit 1; }
   rm -rf "$dir"
   mv "$dir.tmp" "$dir"
   lib=$(find "$dir/root" -name libvulkan_lvp.so | head -1)
   printf '{"file_format_version": "1.0.0", "ICD": {"api_version": "1.3.230", "library_path": "%s"}}\n' \
      "$lib" >"$manifest"
fi
echo "$manifest"
