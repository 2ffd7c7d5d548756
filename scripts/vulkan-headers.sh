#!/bin/sh
# SPDX-License-Identifier: MIT
#
# Unpacks the Vulkan 1.4 headers and registry gpud builds against (Debian's
# libvulkan-dev) into .deps/, beside the sources, without installing
# anything over the system's; prints the tree's path for -Dvulkan_headers.
# Idempotent: a tree already there is kept.
#
#   scripts/vulkan-headers.sh [1.4.363.0-1 | 1.4.309.0-1]
#
# Without a version: 1.4.363.0-1, Debian testing's and unstable's (November
# 2026), with the extensions of later registries (VK_KHR_shader_bfloat16
# among them); the archive keeps it only while one of those suites has it,
# so where it cannot be had, 1.4.309.0-1, Debian 13's.  Both are tested.
set -eu
cd "$(dirname "$0")/.."

if [ $# -eq 0 ]; then
   for version in 1.4.363.0-1 1.4.309.0-1; do
      if tree=$("$PWD/scripts/vulkan-headers.sh" "$version"); then
         echo "$tree"
         exit 0
      fi
      echo "vulkan-headers.sh: libvulkan-dev $version could not be had; trying the next" >&2
   done
   exit 1
fi
version=$1
case $version in
1.4.309.0-1) sha256=8d329d465e16168afff58b1bd0dd6db46aac2cc3f56054a481b25a04e90b345a ;;
1.4.363.0-1) sha256=518e000aa44620ed45e3c842b81488e019b9794e234746366ece31f01221702c ;;
*) echo "vulkan-headers.sh: no checksum for libvulkan-dev $version (1.4.363.0-1 or 1.4.309.0-1)" >&2
   exit 2 ;;
esac
url=http://deb.debian.org/debian/pool/main/v/vulkan-loader/libvulkan-dev_${version}_amd64.deb
tree="$PWD/.deps/vulkan-headers-$version"

if [ ! -f "$tree/include/vulkan/vulkan_core.h" ]; then
   mkdir -p .deps
   deb=$(mktemp "$PWD/.deps/libvulkan-dev.XXXXXX")
   trap 'rm -f "$deb"' EXIT
   # python3, not curl or wget: the base image has neither
   python3 - "$url" "$deb" "$sha256" <<'PY' >&2
import hashlib, sys, urllib.request
url, path, want = sys.argv[1:]
data = urllib.request.urlopen(url, timeout=120).read()
got = hashlib.sha256(data).hexdigest()
if got != want:
    sys.exit(f'{url}: sha256 {got}, expected {want}')
open(path, 'wb').write(data)
PY
   rm -rf "$tree.tmp"
   dpkg-deb -x "$deb" "$tree.tmp"
   rm -rf "$tree"
   mkdir -p "$tree"
   mv "$tree.tmp/usr/include" "$tree.tmp/usr/share" "$tree"
   rm -rf "$tree.tmp"
fi
echo "$tree"
