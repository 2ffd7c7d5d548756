#!/bin/sh
# SPDX-License-Identifier: MIT
#
# FFmpeg's Vulkan video decoding for bench/video_decode.py, built small:
# Debian 13's FFmpeg 7.1 source (7.1.5 when written; Debian 12's 5.1 has no Vulkan
# decoding) with scripts/ffmpeg-vulkan-*.patch, configured with the
# H.264, H.265 and AV1 decoders, their Vulkan hardware acceleration and
# little else, into DIR/ffmpeg (it needs only the C library; it opens
# libvulkan.so.1 itself). And three short streams, made with Debian 12's
# FFmpeg (libx264, libx265, libaom), with the software decoder's MD5 of
# each frame:
#
#   DIR/streams/h264.h264, h265.hevc, av1.ivf   352x288, 60, 60 and 30 frames
#   DIR/streams/NAME.md5                        one line a frame (yuv420p)
#
#   scripts/ffmpeg-video.sh DIR
#
# Idempotent: what DIR already has is kept (FFmpeg is built again when the
# patches change). On another machine (the GPU machine) copy DIR anywhere.
set -eu
[ $# -eq 1 ] || { echo "usage: scripts/ffmpeg-video.sh DIR" >&2; exit 2; }
here=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$1"
D=$(cd "$1" && pwd)

# the build is kept while the patches it was made with are the same
patches=$(cat "$here"/scripts/ffmpeg-vulkan-*.patch | sha256sum | cut -d' ' -f1)
if [ ! -x "$D/ffmpeg" ] || [ "$(cat "$D/ffmpeg.patches" 2>/dev/null)" != "$patches" ]; then
   DEBIAN_FRONTEND=noninteractive apt-get install -y -q build-essential pkg-config patch xz-utils \
      >/dev/null
   headers=$("$here/scripts/vulkan-headers.sh")
   T=$(mktemp -d)
   trap 'rm -rf "$T"' EXIT
   mkdir -p "$T/lists/partial"
   echo "deb-src http://deb.debian.org/debian trixie main" > "$T/sources.list"
   # a private package list: the system's sources and lists stay as they are
   set -- -o Dir::Etc::SourceList="$T/sources.list" -o Dir::Etc::SourceParts=/dev/null \
      -o Dir::State::Lists="$T/lists" -o APT::Sandbox::User=root
   apt-get "$@" update >/dev/null
   (cd "$T" && apt-get "$@" source --download-only ffmpeg >/dev/null)
   tar -xJf "$T"/ffmpeg_*.orig.tar.xz -C "$T"
   src=$(find "$T" -maxdepth 1 -type d -name 'ffmpeg-*' | head -1)
   for p in "$here"/scripts/ffmpeg-vulkan-*.patch; do
      patch -d "$src" -p1 -s < "$p"
   done
   (cd "$src" && ./configure --disable-everything --disable-doc --disable-autodetect \
      --disable-x86asm --disable-debug --enable-vulkan \
      --enable-hwaccel=h264_vulkan,hevc_vulkan,av1_vulkan \
      --enable-decoder=h264,hevc,av1,rawvideo --enable-parser=h264,hevc,av1 \
      --enable-demuxer=h264,hevc,obu,ivf --enable-protocol=file,pipe \
      --enable-muxer=framemd5,null,rawvideo --enable-encoder=rawvideo \
      --enable-filter=hwdownload,hwupload,format,null,scale --enable-swscale \
      --extra-cflags="-I$headers/include" >"$T/configure.log" 2>&1 ||
      { tail -20 "$T/configure.log" >&2; exit 1; })
   make -C "$src" -j"$(nproc)" ffmpeg >"$T/make.log" 2>&1 || { tail -20 "$T/make.log" >&2; exit 1; }
   cp "$src/ffmpeg" "$D/ffmpeg.tmp"
   mv "$D/ffmpeg.tmp" "$D/ffmpeg"
   echo "$patches" > "$D/ffmpeg.patches"
fi

if [ ! -f "$D/streams/av1.ivf.md5" ]; then
   DEBIAN_FRONTEND=noninteractive apt-get install -y -q ffmpeg >/dev/null
   mkdir -p "$D/streams"
   src="-v error -y -f lavfi -i testsrc2=size=352x288:rate=30 -pix_fmt yuv420p"
   (cd "$D/streams" &&
      /usr/bin/ffmpeg $src -frames:v 60 -c:v libx264 -profile:v high -bf 2 -g 30 h264.h264 &&
      /usr/bin/ffmpeg $src -frames:v 60 -c:v libx265 -x265-params log-level=error:bframes=2 \
         h265.hevc &&
      /usr/bin/ffmpeg $src -frames:v 30 -c:v libaom-av1 -cpu-used 8 av1.ivf &&
      for s in h264.h264 h265.hevc av1.ivf; do
         /usr/bin/ffmpeg -v error -i "$s" -pix_fmt yuv420p -f framemd5 - |
            awk -F', *' '!/^#/ {print $6}' > "$s.md5"
      done)
fi
echo "FFmpeg with Vulkan video decoding ready in $D"
