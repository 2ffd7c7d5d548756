#!/bin/sh
# SPDX-License-Identifier: MIT
#
# The main job: install, build, start a gpud on the embedded default host
# driver (lavapipe), and run real Vulkan programs through the gpud ICD while
# gpudctl shows the daemon's view of them, windowed ones too (vkcube and
# OpenGL through Zink on a private Xvfb), and one through a restart of gpud.
set -eu
cd "$(dirname "$0")/.."

./scripts/install-deps.sh
# the unprivileged user gpud's workers start as, before each takes its
# client user's own uid (and the render group that may use a system daemon)
systemd-sysusers "$PWD/systemd/gpud.sysusers"
# the Vulkan 1.4 headers and registry, beside the sources
vulkan_headers=$(./scripts/vulkan-headers.sh)
if [ -d build ]; then
   meson setup --reconfigure build -Dvulkan_headers="$vulkan_headers"
else
   meson setup build -Dvulkan_headers="$vulkan_headers"
fi
meson compile -C build

run=$(mktemp -d "${TMPDIR:-/tmp}/gpud-demo.XXXXXX")
chmod 700 "$run"
export XDG_RUNTIME_DIR="$run"
sock="$run/gpud.sock"
daemon=
cleanup() {
   [ -n "$daemon" ] && kill "$daemon" 2>/dev/null && wait "$daemon" 2>/dev/null
   rm -rf "$run"
}
trap cleanup EXIT INT TERM

echo "== starting gpud on lavapipe (socket $sock)"
build/daemon/gpud --socket "$sock" 2>"$run/gpud.log" &
daemon=$!
i=0
while [ ! -S "$sock" ]; do
   i=$((i + 1))
   [ $i -lt 100 ] || { cat "$run/gpud.log"; echo "gpud did not start" >&2; exit 1; }
   sleep 0.1
done

# Applications see gpud through the standard loader, with nothing but the
# ICD manifest and the socket pointed out to them.
export VK_ICD_FILENAMES="$PWD/build/icd/gpud_icd.build.json"
export GPUD_SOCKET="$sock"

echo
echo "== vulkaninfo --summary through the gpud ICD"
vulkaninfo --summary 2>/dev/null | sed -n '/^Devices:/,$p'

echo
echo "== a compute shader over 1M elements, checked against the CPU, 50 times"
build/tests/integration/vk_compute --iterations 50 --print-ready >"$run/compute.out" 2>&1 &
compute=$!
i=0
until grep -q READY "$run/compute.out" 2>/dev/null; do
   i=$((i + 1))
   [ $i -lt 100 ] || break
   sleep 0.1
done
sleep 0.3
echo
echo "== gpudctl status while it runs"
build/daemon/gpudctl --socket "$sock" status
echo
echo "== gpudctl queues and memory: its submissions, busy time and memory per heap"
build/daemon/gpudctl --socket "$sock" queues
build/daemon/gpudctl --socket "$sock" memory
wait "$compute"
grep -v READY "$run/compute.out"

echo
echo "== an offscreen render (textured triangles, depth test, 4x MSAA resolve), twice"
# (a worker writes its pipelines as its client ends: each run's are
# waited for, up to 5 s, before the next look)
cache_has() {
   i=0
   until build/daemon/gpudctl --socket "$sock" cache | awk -v want="$1" \
      '$2 == "vk_render" && (want == "file" || $(NF-1) > 0) { found = 1 } END { exit !found }'; do
      [ $i -ge 50 ] && return 0
      sleep 0.1
      i=$((i + 1))
   done
}
build/tests/integration/vk_render --output "$run/render.pam"
cache_has file
build/tests/integration/vk_render --output "$run/render.pam" >/dev/null
cache_has hits
echo
echo "== gpudctl cache: root's cache, kept for root's workers (a uid of their own);"
echo "   the second render found its pipelines there (hits)"
build/daemon/gpudctl --socket "$sock" cache

echo
echo "== device extensions at work (push descriptors, conditional rendering, custom border"
echo "   colours, transform feedback of multi-draws, extended dynamic state 3, device addresses)"
build/tests/integration/vk_extensions

echo
echo "== a valid shader that crashes lavapipe, beside a client computing: only its own device is lost"
build/tests/integration/vk_compute --iterations 2 --elements 65536 --until "$run/stop" \
   >"$run/bystander.out" 2>&1 &
bystander=$!
sleep 0.3
build/tests/integration/vk_crashshader 2>&1 || true
touch "$run/stop"
wait "$bystander" && cat "$run/bystander.out"

echo
echo "== gpud restarted under a running client: its worker serves on, and the new gpud adopts it"
rm -f "$run/stop"
build/tests/integration/vk_compute --iterations 2 --elements 65536 --until "$run/stop" \
   --print-ready >"$run/survivor.out" 2>&1 &
survivor=$!
i=0
until grep -q READY "$run/survivor.out" 2>/dev/null; do
   i=$((i + 1))
   [ $i -lt 100 ] || break
   sleep 0.1
done
kill "$daemon" && wait "$daemon" 2>/dev/null || true
echo "(gpud stopped; the client computes on)"
sleep 0.5
build/daemon/gpud --socket "$sock" 2>>"$run/gpud.log" &
daemon=$!
i=0
until build/daemon/gpudctl --socket "$sock" status --json 2>/dev/null | grep -q '"adopted": true'; do
   i=$((i + 1))
   [ $i -lt 100 ] || break
   sleep 0.1
done
build/daemon/gpudctl --socket "$sock" status | grep -E "^(daemon|restarts):|^ +(ID|[0-9]+ )" || true
touch "$run/stop"
wait "$survivor" && grep -v READY "$run/survivor.out"

echo
echo "== windowed programs under a private X server (Xvfb): vkcube, and OpenGL through Zink"
n=90
while [ -e "/tmp/.X11-unix/X$n" ] || [ -e "/tmp/.X$n-lock" ]; do n=$((n + 1)); done
Xvfb ":$n" -screen 0 1024x768x24 -nolisten tcp >"$run/xvfb.log" 2>&1 &
xvfb=$!
i=0
while [ ! -S "/tmp/.X11-unix/X$n" ]; do
   i=$((i + 1))
   [ $i -lt 100 ] || break
   sleep 0.1
done
DISPLAY=":$n" vkcube --c 600 >"$run/vkcube.out" 2>&1 &
cube=$!
sleep 1
build/daemon/gpudctl --socket "$sock" status | grep -E "^ +(ID|[0-9]+ )" || true
wait "$cube" && echo "vkcube: 600 frames presented, exit 0 ($(grep -m1 'Selected GPU' "$run/vkcube.out"))"
DISPLAY=":$n" MESA_LOADER_DRIVER_OVERRIDE=zink LIBGL_ALWAYS_SOFTWARE=1 glxinfo -B 2>/dev/null |
   grep "OpenGL renderer" || true
DISPLAY=":$n" MESA_LOADER_DRIVER_OVERRIDE=zink LIBGL_ALWAYS_SOFTWARE=1 \
   glmark2 -s 400x300 -b build:duration=2 -b texture:duration=2 2>/dev/null |
   grep -E "GL_RENDERER|\[|Score" || true
kill "$xvfb" 2>/dev/null; wait "$xvfb" 2>/dev/null || true

# The daemon notices a client's exit a moment after the process is gone.
i=0
while build/daemon/gpudctl --socket "$sock" status --json | grep -q '"pid"'; do
   i=$((i + 1))
   [ $i -lt 50 ] || break
   sleep 0.1
done
echo
echo "== gpudctl status afterwards: every client's objects and memory returned"
build/daemon/gpudctl --socket "$sock" status

echo
echo "== gpud's log"
cat "$run/gpud.log"
