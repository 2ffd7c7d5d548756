#!/bin/sh
# SPDX-License-Identifier: MIT
#
# Installs, builds with warnings as errors and runs the whole test suite
# (llama.cpp's programs fetched for it), runs the fuzzers for a bounded
# time, then runs the suite again under AddressSanitizer and
# UndefinedBehaviorSanitizer (but for the tests of the test programs on
# lavapipe directly, and llama.cpp's, whose programs bring their own C
# library).
set -eu
cd "$(dirname "$0")/.."

# how long each part took (the suite is to stay well under 30 minutes)
began=$(date +%s)
last=$began
took() {
   now=$(date +%s)
   echo "test.sh: $1: $((now - last)) s ($((now - began)) s so far)"
   last=$now
}

./scripts/install-deps.sh
# workers of a root daemon run as gpud (the tests fall back to nobody)
systemd-sysusers "$PWD/systemd/gpud.sysusers"
# the Vulkan 1.4 headers and registry, beside the sources; and Debian 12's
# own lavapipe (Mesa 22.3), for the basics on an older host
vulkan_headers=$(./scripts/vulkan-headers.sh)
old_lavapipe=$(./scripts/lavapipe-22.sh)

# llama.cpp's Vulkan backend for the test gpud-llama (release build only:
# its programs carry their own C library, into which the sanitizer run's
# runtimes cannot be preloaded)
llama=$(./scripts/llama.sh --programs build-llama)
took "packages, headers, llama.cpp"

jobs=$(nproc)
run() {
   dir=$1
   shift
   if [ -d "$dir" ]; then
      meson setup --reconfigure "$dir" -Dvulkan_headers="$vulkan_headers" \
         -Dold_lavapipe_manifest="$old_lavapipe" "$@"
   else
      meson setup "$dir" -Dvulkan_headers="$vulkan_headers" \
         -Dold_lavapipe_manifest="$old_lavapipe" "$@"
   fi
   meson compile -C "$dir"
   took "$dir: set up and built"
   # shellcheck disable=SC2086
   meson test -C "$dir" --num-processes "$jobs" --print-errorlogs $test_args
}

# the release build also builds, installs and purges the Debian package
# (built without test hooks, as any build for use); the suite's own builds
# have them, for the tests of what a worker taken over can reach
test_args=
export GPUD_TEST_PACKAGE=1 GPUD_TEST_LLAMA="$llama"
run build-ci -Dwerror=true -Dtest_hooks=true
took "build-ci: the tests"
unset GPUD_TEST_PACKAGE GPUD_TEST_LLAMA

# The fuzzers (clang, libFuzzer) for a bounded time, seeded from build-ci.
GPUD_FUZZ_SEED_BUILD=build-ci ./scripts/fuzz.sh 60
took "the fuzzers"

# Leaks inside the host driver (lavapipe, LLVM) are not ours to fix.
export LSAN_OPTIONS="suppressions=$PWD/tests/lsan.supp:print_suppressions=0"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
# A quarantine of 16 MB, not 256: lavapipe allocates and frees a little for
# every workgroup it runs, and with the default the sanitizer's allocator
# maps new memory for each (a dispatch-heavy program ran 4 times longer,
# most of it in the kernel); a use after free is still caught while the
# next 16 MB of frees have not come.
export ASAN_OPTIONS="detect_leaks=1:abort_on_error=1:verify_asan_link_order=0:quarantine_size_mb=16"
# vulkaninfo is not instrumented but loads the instrumented ICD: the
# sanitizer runtimes go first; nodlclose keeps unloaded drivers nameable.
export GPUD_TEST_PRELOAD="$(gcc -print-file-name=libasan.so):$(gcc -print-file-name=libubsan.so):$PWD/build-asan/tests/integration/libgpud_test_nodlclose.so"
# Contexts on threads of the daemon, so LeakSanitizer sees the teardown of
# every client; tests that need worker processes ask for them.
export GPUD_TEST_DAEMON_ARGS="--isolation=thread"
# a quarter of the release run's 200 daemon kills at random points of a start;
# and not the tests of the test programs on lavapipe directly, which run
# none of gpud's code (the release run has them)
export GPUD_TEST_RACES=50
test_args="--no-suite direct"
run build-asan -Dwerror=true -Dtest_hooks=true -Db_sanitize=address,undefined -Db_lundef=false -Dbuildtype=debug
