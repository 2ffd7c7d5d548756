#!/bin/sh
# SPDX-License-Identifier: MIT
#
# llama.cpp's Vulkan backend for bench/llama_bench.py, without building it
# or installing it: Debian unstable's llama.cpp and ggml packages, unpacked
# into DIR with unstable's own C library and C++ runtime (the programs'
# interpreter is set to DIR's), and three models with random weights:
#
#   DIR/models/tiny.gguf   test-llama-archs' llama (1.2 M parameters): a
#                          token is a few small graphs, each submitted and
#                          waited for
#   DIR/models/moe.gguf    its mixture of experts
#   DIR/models/1b.gguf     Llama 3.2 1B's shape in Q4_0 (bench/llama_model.py)
#
#   scripts/llama.sh DIR       (an absolute path, or one made absolute)
#   scripts/llama.sh --programs DIR    the programs only, no models (what
#                          the integration test gpud-llama needs)
#   DIR/run.sh DIR/PROGRAM ARGS...
#
# Idempotent: what DIR already has is kept.  On another machine (the GPU
# machine) unpack DIR at the same path.  ggml leaves CPU devices (lavapipe)
# alone unless GGML_VK_VISIBLE_DEVICES=0.
set -eu
models=yes
if [ "${1:-}" = --programs ]; then
   models=
   shift
fi
[ $# -eq 1 ] || { echo "usage: scripts/llama.sh [--programs] DIR" >&2; exit 2; }
here=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$1"
D=$(cd "$1" && pwd)
L=$D/root/usr/lib/x86_64-linux-gnu

if [ ! -x "$D/run.sh" ]; then
   DEBIAN_FRONTEND=noninteractive apt-get install -y -q patchelf python3-numpy >/dev/null
   T=$(mktemp -d)
   trap 'rm -rf "$T"' EXIT
   mkdir -p "$T/lists/partial"
   echo "deb http://deb.debian.org/debian sid main" > "$T/sources.list"
   # a private package list: the system's sources and lists stay as they are
   set -- -o Dir::Etc::SourceList="$T/sources.list" -o Dir::Etc::SourceParts=/dev/null \
      -o Dir::State::Lists="$T/lists" -o Dir::Etc::Preferences=/dev/null \
      -o Dir::Etc::PreferencesParts=/dev/null -o APT::Sandbox::User=root
   apt-get "$@" update >/dev/null
   (cd "$T" && apt-get "$@" download libc6 libstdc++6 libgcc-s1 libgomp1 libssl3t64 \
      libggml0 libggml0-backend-vulkan libllama0 llama.cpp-tools llama.cpp-tests \
      python3-gguf >/dev/null)
   rm -rf "$D/root"
   for deb in "$T"/*.deb; do dpkg-deb -x "$deb" "$D/root"; done
   # ggml finds its backends beside the program, llama's libraries on the path
   cp "$L"/llama/*.so "$L/"
   cp "$L"/ggml/backends0/*.so "$D/"
   cp "$D/root/usr/libexec/x86_64-linux-gnu/ggml/test-backend-ops" \
      "$D/root/usr/libexec/x86_64-linux-gnu/llama.cpp-tests/test-llama-archs" \
      "$D/root/usr/bin/llama-bench" "$D/root/usr/bin/llama-quantize" "$D/"
   for p in test-backend-ops test-llama-archs llama-bench llama-quantize; do
      patchelf --set-interpreter "$L/ld-linux-x86-64.so.2" "$D/$p"
   done
   printf '#!/bin/sh\nexec env LD_LIBRARY_PATH=%s${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} "$@"\n' \
      "$L" > "$D/run.sh.tmp"
   chmod +x "$D/run.sh.tmp"
   mv "$D/run.sh.tmp" "$D/run.sh"
fi

if [ -z "$models" ]; then
   echo "$D"
   exit 0
fi
mkdir -p "$D/models"
if [ ! -f "$D/models/tiny.gguf" ] || [ ! -f "$D/models/moe.gguf" ]; then
   "$D/run.sh" "$D/test-llama-archs" -a llama -o "$D/models" >/dev/null 2>&1
   mv "$D/models/llama-dense.gguf" "$D/models/tiny.gguf"
   mv "$D/models/llama-moe.gguf" "$D/models/moe.gguf"
fi
if [ ! -f "$D/models/1b.gguf" ]; then
   PYTHONPATH=$D/root/usr/lib/python3/dist-packages /usr/bin/python3 \
      "$here/bench/llama_model.py" "$D/models/1b-f16.gguf"
   "$D/run.sh" "$D/llama-quantize" "$D/models/1b-f16.gguf" "$D/models/1b.gguf" Q4_0 >/dev/null 2>&1
   rm -f "$D/models/1b-f16.gguf"
fi
echo "$D"
