#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""FFmpeg's Vulkan video decoding on the host driver directly and through a
private gpud, in one run: for each stream, how many frames each side gave
and how many equal the software decoder's (MD5 of each frame, as yuv420p),
and the time each side took (a whole ffmpeg run: device creation, session,
decoding, downloading every frame).

  scripts/ffmpeg-video.sh DIR     (once: FFmpeg and the streams)
  bench/video_decode.py --video DIR [--build DIR] [--host-driver MANIFEST]
                        [--streams h264.h264,h265.hevc,av1.ivf] [--rounds N]
                        [--timeout S] [--threads N]

A stream the device cannot decode (no such video profile) is reported and
skipped. Each side's worst round is shown, and in how many rounds its frames
were not all right. FFmpeg decodes with its own choice of threads (frame
threads) unless --threads says otherwise; scripts/ffmpeg-video.sh's FFmpeg
keeps the pictures in decoding order (scripts/ffmpeg-vulkan-frame-threads.patch).
The exit status is 1 where gpud gave a stream's frames other than the
software decoder's, or none where the driver directly decoded it.
"""

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

from bench_daemon import Daemon, add_daemon_args, env_for, resolve_daemon_args

STREAMS = ('h264.h264', 'h265.hevc', 'av1.ivf')


def fail(msg):
    sys.exit('video_decode: ' + msg)


def decode(args, env, stream):
    """(MD5s of the frames, seconds, the end of ffmpeg's messages, whether
    it said the device cannot decode the stream)."""
    cmd = [args.ffmpeg, '-v', 'error'] + (['-threads', str(args.threads)] if args.threads else []) + [
           '-init_hw_device', 'vulkan=vk:0',
           '-hwaccel', 'vulkan', '-hwaccel_device', 'vk', '-hwaccel_output_format', 'vulkan',
           '-i', os.path.join(args.video, 'streams', stream),
           '-vf', 'hwdownload,format=nv12', '-pix_fmt', 'yuv420p', '-f', 'framemd5', '-']
    t0 = time.monotonic()
    p = subprocess.Popen(cmd, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    try:
        out, err = p.communicate(timeout=args.timeout)
        why = err.strip().splitlines()[-1] if err.strip() else ''
    except subprocess.TimeoutExpired:
        p.kill()
        out, err = p.communicate()
        why = 'did not finish in %d s (killed)' % args.timeout
    seconds = time.monotonic() - t0
    md5s = [line.split(',')[-1].strip() for line in out.splitlines()
            if line and not line.startswith('#')]
    unsupported = 'not support' in err or "doesn't support" in err
    return md5s, seconds, why, unsupported


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    ap.add_argument('--video', required=True, help='what scripts/ffmpeg-video.sh set up')
    add_daemon_args(ap)
    ap.add_argument('--streams', default=','.join(STREAMS))
    ap.add_argument('--rounds', type=int, default=3)
    ap.add_argument('--timeout', type=int, default=60, help='seconds for one decoding')
    ap.add_argument('--threads', type=int, default=0,
                    help="ffmpeg's decoding threads (0, the default: its own choice, frame "
                         "threads)")
    args = ap.parse_args()
    resolve_daemon_args(args)
    args.video = os.path.abspath(args.video)
    args.ffmpeg = os.path.join(args.video, 'ffmpeg')
    streams = [s for s in args.streams.split(',') if s]
    for path in [args.gpud, args.icd, args.ffmpeg] + [
            os.path.join(args.video, 'streams', s + '.md5') for s in streams]:
        if not os.path.exists(path):
            fail('no %s (build the project; run scripts/ffmpeg-video.sh %s)' % (path, args.video))
    if args.rounds < 1 or args.timeout < 1:
        fail('--rounds and --timeout take a positive number')
    tmp = tempfile.mkdtemp(prefix='video-decode-')
    daemon = Daemon(args, tmp)
    sides = (('direct', env_for(args, None)), ('gpud', env_for(args, daemon)))
    bad = False
    try:
        print('host driver: %s' % args.host_driver)
        print('\n| stream | direct: frames equal to software | gpud: frames equal to software '
              '| direct (s) | gpud (s) | gpud/direct time |')
        print('| --- | --- | --- | ---: | ---: | ---: |')
        for s in streams:
            with open(os.path.join(args.video, 'streams', s + '.md5')) as f:
                ref = [line.strip() for line in f if line.strip()]
            seen = {}
            skipped = {}
            wrong = {'direct': 0, 'gpud': 0}
            times = {'direct': [], 'gpud': []}
            for r in range(args.rounds):
                for name, env in sides:
                    md5s, seconds, why, unsupported = decode(args, env, s)
                    if unsupported and not md5s:
                        why = 'the device cannot decode it'
                    skipped[name] = unsupported and not md5s
                    same = sum(1 for a, b in zip(md5s, ref) if a == b)
                    if md5s and not (same == len(md5s) == len(ref)):
                        wrong[name] += 1
                    if len(md5s) == len(ref):
                        times[name].append(seconds)
                    # the worst round is the one reported
                    if name not in seen or (same, len(md5s)) < seen[name][:2]:
                        seen[name] = (same, len(md5s), why)
            cells = []
            for name in ('direct', 'gpud'):
                same, n, why = seen[name]
                cell = '%d/%d (of %d)' % (same, n, len(ref))
                if n != len(ref) and why:
                    cell += ': ' + why.replace('|', '/')[:120]
                if args.rounds > 1 and not skipped[name]:
                    cell += ', wrong in %d of %d rounds' % (wrong[name], args.rounds)
                cells.append(cell)
            unsupported = all(skipped.values())
            ok = seen['gpud'][0] == len(ref) == seen['gpud'][1]
            if not ok and not unsupported and (seen['gpud'][1] or seen['direct'][1]):
                bad = True
            td = statistics.median(times['direct']) if times['direct'] else None
            tg = statistics.median(times['gpud']) if times['gpud'] else None
            print('| %s | %s | %s | %s | %s | %s |' % (
                s, cells[0], cells[1],
                '%.2f' % td if td else '-', '%.2f' % tg if tg else '-',
                '%.2fx' % (tg / td) if td and tg else '-'), flush=True)
    finally:
        daemon.stop(timeout=30)
    print('gpud log: %s/gpud.log' % tmp)
    sys.exit(1 if bad else 0)


if __name__ == '__main__':
    main()
