#!/bin/sh
# SPDX-License-Identifier: MIT
#
# Installs what gpud needs to build, test and run on Debian 12 (idempotent).
# Run as root.
set -eu

packages="
   meson ninja-build pkg-config gcc python3
   libvulkan-dev vulkan-tools mesa-vulkan-drivers vulkan-validationlayers
   glslang-tools spirv-tools
   libprotobuf-c-dev protobuf-c-compiler libevent-dev libsystemd-dev
   libdrm-dev libxcb1-dev libwayland-dev libseccomp-dev libinih-dev systemd
   libxcb-shm0-dev libxcb-present-dev libx11-dev libx11-xcb-dev
   libwayland-bin wayland-protocols
   gstreamer1.0-tools gstreamer1.0-plugins-base gstreamer1.0-plugins-bad ffmpeg
   xvfb x11-apps weston mesa-utils glmark2-x11 vkd3d-demos
   dbus-daemon dbus-bin tmux
   debhelper dpkg-dev lintian
   clang
"

missing=
for p in $packages; do
   dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" ||
      missing="$missing $p"
done
if [ -n "$missing" ]; then
   export DEBIAN_FRONTEND=noninteractive
   apt-get update -q
   # shellcheck disable=SC2086
   apt-get install -y -q --no-install-recommends $missing
fi
