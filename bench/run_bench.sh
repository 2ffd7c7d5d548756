#!/bin/sh
# SPDX-License-Identifier: MIT
#
# Builds the project and runs gpud_bench against lavapipe directly and
# through a private gpud started for the run.
#
#   bench/run_bench.sh [BUILD_DIR] [--gpu] [gpud_bench options...]
#
# --gpu runs gpu_bench (the GPU's own work) instead of gpud_bench.
# BUILD_DIR defaults to ./build (an already configured Meson build dir).
# Overrides: GPUD (daemon), GPUD_ARGS (more daemon options, for example
# --isolation=thread or --validate), ICD_MANIFEST (gpud's build-dir manifest),
# LAVAPIPE_MANIFEST. With --direct-only no daemon is started.
set -eu

build=build
if [ $# -gt 0 ] && [ "${1#-}" = "$1" ]; then
   build=$1
   shift
fi
[ -d "$build" ] || { echo "run_bench.sh: no build directory $build" >&2; exit 1; }
program=gpud_bench
if [ "${1:-}" = "--gpu" ]; then
   program=gpu_bench
   shift
fi

# (a build carried to a machine without meson has no build.ninja)
if [ -f "$build/build.ninja" ]; then
   meson compile -C "$build" >&2
fi

# lavapipe's manifest: Mesa 25 names it lvp_icd.json, Mesa 22 lvp_icd.ARCH.json
if [ -z "${LAVAPIPE_MANIFEST:-}" ]; then
   for m in /usr/share/vulkan/icd.d/lvp_icd.json "/usr/share/vulkan/icd.d/lvp_icd.$(uname -m).json"; do
      if [ -f "$m" ]; then LAVAPIPE_MANIFEST=$m; break; fi
   done
fi
LAVAPIPE_MANIFEST=${LAVAPIPE_MANIFEST:-/usr/share/vulkan/icd.d/lvp_icd.json}
GPUD=${GPUD:-$build/daemon/gpud}
if [ -z "${ICD_MANIFEST:-}" ]; then
   # The build-directory manifest: an ICD manifest whose library_path
   # points into this build directory (not the one for installing).
   abs_build=$(cd "$build" && pwd)
   ICD_MANIFEST=
   for f in $(find "$build" -name '*.json' -not -path '*/meson-*' 2>/dev/null); do
      if grep -q '"ICD"' "$f" && grep -q "\"library_path\": *\"$abs_build/" "$f"; then
         ICD_MANIFEST=$f
         break
      fi
   done
fi

tmp=$(mktemp -d "${TMPDIR:-/tmp}/gpud-bench.XXXXXX")
daemon_pid=
cleanup() {
   if [ -n "$daemon_pid" ]; then
      kill -TERM "$daemon_pid" 2>/dev/null || true
      i=0
      while kill -0 "$daemon_pid" 2>/dev/null && [ $i -lt 50 ]; do
         sleep 0.1
         i=$((i + 1))
      done
      kill -KILL "$daemon_pid" 2>/dev/null || true
      wait "$daemon_pid" 2>/dev/null || true
   fi
   rm -rf "$tmp"
}
trap cleanup EXIT INT TERM

export XDG_RUNTIME_DIR="$tmp"
unset VK_DRIVER_FILES VK_ADD_DRIVER_FILES || true

direct_only=false
for arg in "$@"; do
   [ "$arg" = "--direct-only" ] && direct_only=true
done

if $direct_only; then
   export VK_ICD_FILENAMES="$LAVAPIPE_MANIFEST"
else
   [ -x "$GPUD" ] || { echo "run_bench.sh: no daemon at $GPUD (set GPUD=)" >&2; exit 1; }
   [ -n "$ICD_MANIFEST" ] && [ -f "$ICD_MANIFEST" ] ||
      { echo "run_bench.sh: gpud's ICD manifest not found in $build (set ICD_MANIFEST=)" >&2; exit 1; }
   sock="$tmp/gpud.sock"
   # as root, workers need an unprivileged user: gpud's own, else nobody
   user_arg=
   if [ "$(id -u)" = 0 ] && ! getent passwd gpud >/dev/null; then
      user_arg="--user nobody"
   fi
   # shellcheck disable=SC2086
   env -u VK_ICD_FILENAMES "$GPUD" --socket "$sock" --host-driver "$LAVAPIPE_MANIFEST" $user_arg ${GPUD_ARGS:-} \
      2>"$tmp/gpud.log" &
   daemon_pid=$!
   i=0
   until [ -S "$sock" ]; do
      if ! kill -0 "$daemon_pid" 2>/dev/null || [ $i -ge 100 ]; then
         echo "run_bench.sh: gpud did not come up; its log:" >&2
         cat "$tmp/gpud.log" >&2
         exit 1
      fi
      sleep 0.1
      i=$((i + 1))
   done
   export GPUD_SOCKET="$sock"
   export VK_ICD_FILENAMES="$LAVAPIPE_MANIFEST:$ICD_MANIFEST"
fi

"$build/bench/$program" "$@"
