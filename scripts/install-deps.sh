#!/bin/sh
# SPDX-License-Identifier: MIT
#
# Installs what gpud needs to build, test and run on Debian 12 (idempotent).
# Run as root.
set -eu

# Mesa 25's lavapipe (Vulkan 1.4, ray tracing, descriptor buffers, mesh
# shaders) is the embedded default: it and the libdrm it needs come from
# bookworm-backports, pinned, so nothing else of the system moves there.
backports_changed=
if [ ! -f /etc/apt/sources.list.d/gpud-backports.sources ]; then
   cat >/etc/apt/sources.list.d/gpud-backports.sources <<'EOT'
Types: deb
URIs: http://deb.debian.org/debian
Suites: bookworm-backports
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
EOT
   backports_changed=1
fi
if [ ! -f /etc/apt/preferences.d/gpud-backports ]; then
   cat >/etc/apt/preferences.d/gpud-backports <<'EOT'
Package: mesa-vulkan-drivers libdrm-dev libdrm2 libdrm-common libdrm-amdgpu1 libdrm-intel1 libdrm-radeon1 libdrm-nouveau2
Pin: release n=bookworm-backports
Pin-Priority: 990
EOT
   backports_changed=1
fi

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
# Debian 12's own lavapipe (22.3) installed before: move it to Mesa 25
case $(dpkg-query -W -f='${Version}' mesa-vulkan-drivers 2>/dev/null) in
   ''|25.*|2[6-9].*) ;;
   *) missing="$missing mesa-vulkan-drivers libdrm-dev" ;;
esac
if [ -n "$missing" ] || [ -n "$backports_changed" ]; then
   export DEBIAN_FRONTEND=noninteractive
   apt-get update -q
   # shellcheck disable=SC2086
   apt-get install -y -q --no-install-recommends $missing
fi
