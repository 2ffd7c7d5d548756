#!/bin/sh
# SPDX-License-Identifier: MIT
#
# Copies a build's daemon, ICD, host-call recorder, benchmarks and test
# programs into DIR with the libraries they load (but the C library's own),
# for a machine that has a Vulkan driver and no packages: the GPU machine.
#
#   scripts/bundle.sh [BUILD_DIR] DIR
#   GPUD_BUNDLE=DIR; . DIR/env.sh
#                     there: PATH and LD_LIBRARY_PATH; the manifests
#                     DIR/gpud_icd.json and DIR/gpud_hostrec.json name
#                     their libraries relative to themselves
#
# DIR/env.sh takes the Vulkan loader from the system.
set -eu
build=build
if [ $# -eq 2 ]; then
   build=$1
   shift
fi
[ $# -eq 1 ] || { echo "usage: scripts/bundle.sh [BUILD_DIR] DIR" >&2; exit 2; }
[ -x "$build/daemon/gpud" ] || { echo "bundle.sh: $build has no daemon/gpud" >&2; exit 1; }
out=$1
rm -rf "$out"
mkdir -p "$out/bin" "$out/lib"

programs="daemon/gpud daemon/gpudctl bench/gpud_bench bench/gpu_bench"
for p in vk_compute vk_render vk_sync vk_pipelines vk_props vk_enum vk_transfer; do
   [ -x "$build/tests/integration/$p" ] && programs="$programs tests/integration/$p"
done
# without their debugging sections (the bundle travels)
for p in $programs; do
   strip --strip-debug -o "$out/bin/$(basename "$p")" "$build/$p"
done
strip --strip-debug -o "$out/libvulkan_gpud.so" "$build/icd/libvulkan_gpud.so"
if [ -f "$build/tests/hostrec/libgpud_hostrec.so" ]; then
   strip --strip-debug -o "$out/libgpud_hostrec.so" "$build/tests/hostrec/libgpud_hostrec.so"
fi

# the libraries they need, but the C library's and the Vulkan loader
for f in "$out"/bin/* "$out"/*.so; do
   ldd "$f" 2>/dev/null | awk '$3 ~ /^\// { print $3 }'
done | sort -u | while read -r lib; do
   case $(basename "$lib") in
      libc.so.*|libm.so.*|libpthread.so.*|libdl.so.*|librt.so.*|ld-linux*|libgcc_s.so.*|\
      libstdc++.so.*|libvulkan.so.*) ;;
      *) cp -L "$lib" "$out/lib/" ;;
   esac
done

api=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["ICD"]["api_version"])' \
   "$build/icd/gpud_icd.build.json" 2>/dev/null || echo 1.4.0)
for m in gpud_icd:libvulkan_gpud.so gpud_hostrec:libgpud_hostrec.so; do
   printf '{\n    "file_format_version": "1.0.1",\n    "ICD": {\n        "library_path": "./%s",\n        "api_version": "%s"\n    }\n}\n' \
      "${m#*:}" "$api" >"$out/${m%%:*}.json"
done
cat >"$out/env.sh" <<'EOF'
# sourced, with GPUD_BUNDLE set to this folder: its programs and libraries
export PATH="$GPUD_BUNDLE/bin:$PATH"
export LD_LIBRARY_PATH="$GPUD_BUNDLE/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
EOF
du -sh "$out"
