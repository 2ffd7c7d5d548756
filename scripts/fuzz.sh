#!/bin/sh
# SPDX-License-Identifier: MIT
#
# Builds the libFuzzer harnesses (clang, AddressSanitizer and
# UndefinedBehaviorSanitizer) in build-fuzz, records seeds for the command
# decoder from real programs run through a private daemon, and runs each
# harness for a bounded time.
#
#   scripts/fuzz.sh [SECONDS]          (default 60 per harness)
#
# A long run by hand: build-fuzz/tests/fuzz/fuzz_decode -runs=100000000
# build-fuzz/corpus/decode build-fuzz/seeds/stream build-fuzz/seeds/ops
# (docs/security.md); fuzz_stream the same way, a thousand times slower.
set -eu
cd "$(dirname "$0")/.."
seconds=${1:-60}
build=build-fuzz
vulkan_headers=$(./scripts/vulkan-headers.sh)
if [ ! -d "$build" ]; then
   CC=clang CXX=clang++ meson setup "$build" -Dvulkan_headers="$vulkan_headers" -Dfuzz=true -Dtests=false -Dwerror=true -Dbuildtype=debug \
      -Db_sanitize=address,undefined -Db_lundef=false >/dev/null
fi
meson compile -C "$build" fuzz_ring fuzz_decode fuzz_stream >/dev/null

# Seeds for the decoder: what real programs send, recorded by a daemon
# (contexts on threads, so the daemon itself writes the files).
seeds=$build/seeds/stream
if [ ! -d "$seeds" ]; then
   mkdir -p "$seeds"
   tmp=$(mktemp -d)
   b=${GPUD_FUZZ_SEED_BUILD:-build}
   [ -d "$b" ] || meson setup "$b" -Dvulkan_headers="$vulkan_headers" >/dev/null
   meson compile -C "$b" >/dev/null
   GPUD_RECORD_STREAMS=$PWD/$seeds "$b/daemon/gpud" --socket "$tmp/gpud.sock" \
      --isolation=thread --cache-dir "$tmp/cache" --state-dir "$tmp/state" \
      --bus=none >"$tmp/log" 2>&1 &
   pid=$!
   for _ in $(seq 50); do [ -S "$tmp/gpud.sock" ] && break; sleep 0.1; done
   # small chunks: recordings streamed in many pieces, interleaved
   for prog in "vk_compute --iterations 1" vk_render vk_sync vk_enum vk_debugnames \
         "vk_record --test one-time --test simultaneous"; do
      # shellcheck disable=SC2086
      XDG_RUNTIME_DIR=$tmp VK_ICD_FILENAMES=$PWD/$b/icd/gpud_icd.build.json GPUD_CHUNK_BYTES=4096 \
         GPUD_SOCKET=$tmp/gpud.sock "$b"/tests/integration/$prog >/dev/null 2>&1 || true
   done
   kill $pid
   wait $pid || true
   rm -rf "$tmp"
fi
# and one empty command of each op, a way into every decoder
ops=$build/seeds/ops
if [ ! -d "$ops" ]; then
   mkdir -p "$ops"
   n=$(sed -n 's/.*WIRE_OP_COUNT = \([0-9]*\),.*/\1/p' "$build/protocol/wire_gen.h")
   python3 -c 'import struct, sys
for op in range(1, int(sys.argv[2])):
    open("%s/op%d" % (sys.argv[1], op), "wb").write(struct.pack("<4I", op, 16, 0, 0))' "$ops" "$n"
fi
mkdir -p "$build/corpus/ring" "$build/corpus/decode" "$build/corpus/stream"

export ASAN_OPTIONS="detect_leaks=1:abort_on_error=1"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
export LSAN_OPTIONS="suppressions=$PWD/tests/lsan.supp:print_suppressions=0"
status=0
# The ring consumer and the decoder alone are gpud's code: fuzzed for the
# time given.  The decoder's harness with its executors runs the host
# driver too, which mutated input that gpud lets through can crash (invalid
# usage a driver takes on trust, a draw past its buffers say; in a daemon
# it costs only that client's worker), and a fixed mutation sequence is
# fixed only until the code's coverage changes: here it replays the
# recorded streams as they are (every command of real programs through the
# decoder and the executors, under the sanitizers), and exploring runs are
# made by hand (docs/security.md).
# The two that fuzz for the time given run side by side (each takes one CPU).
fuzz() {
   h=$1
   dirs="$build/corpus/$h"
   max_len=65548 # a ring's bytes and where its tail and head are
   limit="-max_total_time=$seconds"
   if [ "$h" = decode ]; then
      dirs="$dirs $seeds $ops"
      max_len=1048576
   elif [ "$h" = stream ]; then
      dirs=$seeds
      max_len=1048576
      limit="-runs=0"
   fi
   # shellcheck disable=SC2086
   "$build/tests/fuzz/fuzz_$h" $limit -print_final_stats=1 \
      -max_len=$max_len -timeout=30 -rss_limit_mb=4096 $dirs 2>"$build/fuzz_$h.log"
}
report() {
   h=$1
   rc=$2
   echo "fuzz_$h:"
   if [ "$rc" != 0 ]; then
      status=1
      tail -60 "$build/fuzz_$h.log"
   fi
   grep -E "stat::number_of_executed_units|stat::peak_rss_mb" "$build/fuzz_$h.log" || true
}
fuzz ring & ring=$!
fuzz decode & decode=$!
rc=0; wait $ring || rc=$?; report ring $rc
rc=0; wait $decode || rc=$?; report decode $rc
rc=0; fuzz stream || rc=$?; report stream $rc
[ $status = 0 ] && echo "fuzzers: no crash, leak or sanitizer report" || echo "fuzzers: FAILED"
exit $status
