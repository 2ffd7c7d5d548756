#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""A fair share of the GPU, measured: an interactive client (a small frame
60 times a second, submitted and waited for) alone and beside a greedy one
(back-to-back jobs of --job-ms each), on the host driver directly and
through a private gpud (equal weights; the greedy one at nice 10); a
greedy client held to a quota of 25 %; and N greedy clients together with
the fair share on and off.  One run, the same host driver for all; prints
each figure and the ratios.

  bench/share_bench.py [--build DIR] [--host-driver MANIFEST] [--job-ms MS]
                       [--seconds S] [--groups G] [--clients N] [--dispatches D]

--dispatches: the greedy job's work spread over D dispatches in its command
buffer, one after the other (a compute framework's job), instead of one
long dispatch that nothing can interrupt.

Run it on an idle machine: the figures are latencies and shares of a
shared device.
"""

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

from bench_daemon import Daemon, default_host, env_for


def find_manifest(build):
    path = os.path.join(build, 'icd', 'gpud_icd.build.json')
    if not os.path.exists(path):
        sys.exit('share_bench: no %s (build the project first)' % path)
    return path


def start(args, env, mode, extra=()):
    argv = [args.vk_share, mode, '--groups', str(args.groups)] + list(extra)
    p = subprocess.Popen(argv, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE)
    line = p.stdout.readline().decode()
    if line.strip() != 'READY':
        out, err = p.communicate()
        sys.exit('share_bench: %s did not start: %s%s%s' % (mode, line, out.decode(),
                                                             err.decode()))
    return p


def finish(p):
    out, err = p.communicate(timeout=600)
    if p.returncode != 0:
        sys.exit('share_bench: vk_share failed (%d): %s' % (p.returncode, err.decode()))
    return out.decode()


def interactive(args, env):
    p = start(args, env, 'interactive', ['--seconds', str(args.seconds)])
    m = re.search(r'p50_ms ([\d.]+) p99_ms ([\d.]+)', finish(p))
    return float(m.group(1)), float(m.group(2))


def greedy_args(args, until):
    return ['--rounds', str(args.rounds), '--until', until, '--dispatches', str(args.dispatches)]


def greedy_rate(out):
    m = re.search(r'greedy jobs (\d+) seconds ([\d.]+)', out)
    return int(m.group(1)) / float(m.group(2))


def pair(args, env_g, env_i, until):
    """The interactive client beside a greedy one: its p50, p99 and the
    greedy one's jobs a second."""
    g = start(args, env_g, 'greedy', greedy_args(args, until))
    time.sleep(1.0)
    p50, p99 = interactive(args, env_i)
    open(until, 'w').close()
    rate = greedy_rate(finish(g))
    os.unlink(until)
    return p50, p99, rate


def alone_rate(args, env, until, seconds=None):
    g = start(args, env, 'greedy', greedy_args(args, until))
    time.sleep(seconds or args.seconds)
    open(until, 'w').close()
    rate = greedy_rate(finish(g))
    os.unlink(until)
    return rate


def gpu_share(args, daemon, env, until):
    """A greedy client's GPU time per second of wall time, from gpudctl."""
    g = start(args, env, 'greedy', greedy_args(args, until))

    def gpu():
        out = subprocess.run([args.gpudctl, '--socket', daemon.sock, 'status', '--json'],
                             stdout=subprocess.PIPE, check=True).stdout
        c = [c for c in json.loads(out)['clients'] if c['pid'] == g.pid][0]
        return c['gpu_ns'], time.monotonic()

    time.sleep(1.0)
    a = gpu()
    time.sleep(args.seconds)
    b = gpu()
    open(until, 'w').close()
    finish(g)
    os.unlink(until)
    return (b[0] - a[0]) / 1e9 / (b[1] - a[1])


def many(args, env, until):
    gs = [start(args, env, 'greedy', greedy_args(args, until))
          for _ in range(args.clients)]
    time.sleep(args.seconds)
    open(until, 'w').close()
    total = sum(greedy_rate(finish(g)) for g in gs)
    os.unlink(until)
    return total


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--build', default='build')
    ap.add_argument('--host-driver', default=None)
    ap.add_argument('--job-ms', type=int, default=50)
    ap.add_argument('--seconds', type=float, default=10)
    ap.add_argument('--groups', type=int, default=64)
    ap.add_argument('--clients', type=int, default=4)
    ap.add_argument('--dispatches', type=int, default=1)
    ap.add_argument('--user', default='gpud')
    args = ap.parse_args()
    args.host_driver = args.host_driver or default_host()
    args.icd = os.path.abspath(find_manifest(args.build))
    args.gpud = os.path.join(args.build, 'daemon', 'gpud')
    args.gpudctl = os.path.join(args.build, 'daemon', 'gpudctl')
    args.vk_share = os.path.join(args.build, 'tests', 'integration', 'vk_share')
    if not os.access(args.vk_share, os.X_OK):
        args.vk_share = os.path.join(args.build, 'bench', 'share_bench_client')
    tmp = tempfile.mkdtemp(prefix='gpud-share-bench.')
    until = os.path.join(tmp, 'stop')
    direct = env_for(args, None)
    out = subprocess.run([args.vk_share, 'calibrate', '--job-ms', str(args.job_ms), '--groups',
                          str(args.groups)], env=direct, stdout=subprocess.PIPE,
                         check=True).stdout.decode()
    args.rounds = int(re.search(r'rounds (\d+)', out).group(1))
    print('host driver %s; greedy jobs of about %d ms (%d rounds, %d workgroups, %d '
          'dispatch(es)); %.0f s a measurement' % (args.host_driver, args.job_ms, args.rounds,
                                                  args.groups, args.dispatches, args.seconds))
    def note(what, value):
        print('  (%s: %s)' % (what, value), file=sys.stderr, flush=True)
        return value

    try:
        d_alone = note('interactive alone, direct', interactive(args, direct))
        d_pair = note('beside greedy, direct', pair(args, direct, direct, until))
        d_greedy = note('greedy alone, direct', alone_rate(args, direct, until))
        daemon = Daemon(args, tmp)
        genv = env_for(args, daemon)
        g_alone = note('interactive alone, gpud', interactive(args, genv))
        g_pair = note('beside greedy, gpud', pair(args, genv, genv, until))
        g_nice = note('beside niced greedy, gpud', pair(args, dict(genv, GPUD_NICE='10'), genv,
                                                       until))
        g_greedy = note('greedy alone, gpud', alone_rate(args, genv, until))
        g_many_on = note('many, fair share', many(args, genv, until))
        daemon.stop()
        conf = os.path.join(tmp, 'quota.conf')
        with open(conf, 'w') as f:
            f.write('[program %s]\ngpu-quota = 25%%\n' % os.path.basename(args.vk_share))
        daemon = Daemon(args, tmp, ['--config', conf])
        q_share = note('quota 25 %', gpu_share(args, daemon, env_for(args, daemon), until))
        daemon.stop()
        daemon = Daemon(args, tmp, ['--fair-share=no'])
        g_many_off = note('many, no fair share', many(args, env_for(args, daemon), until))
        q_free = note('no quota', gpu_share(args, daemon, env_for(args, daemon), until))
        daemon.stop()
        with open(os.path.join(tmp, 'gpud.log'), errors='replace') as f:
            prio = sorted(set(re.sub(r'^.*?(client \d+)', r'\1', l.strip())
                              for l in f if 'global priority' in l))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)

    rows = [
        ('interactive alone, direct: p50 / p99 (ms)', '%.3f / %.3f' % d_alone),
        ('interactive alone, gpud: p50 / p99 (ms)', '%.3f / %.3f' % g_alone),
        ('beside greedy, direct: p50 / p99 (ms)', '%.3f / %.3f' % d_pair[:2]),
        ('beside greedy, gpud, equal weights: p50 / p99 (ms)', '%.3f / %.3f' % g_pair[:2]),
        ('beside greedy, gpud, greedy at nice 10: p50 / p99 (ms)', '%.3f / %.3f' % g_nice[:2]),
        ('greedy alone, direct / gpud (jobs/s)', '%.1f / %.1f' % (d_greedy, g_greedy)),
        ('greedy beside interactive, direct / gpud / gpud nice 10 (jobs/s)',
         '%.1f / %.1f / %.1f' % (d_pair[2], g_pair[2], g_nice[2])),
        ('greedy, GPU time a second: quota 25 % / no quota', '%.3f / %.3f' % (q_share, q_free)),
        ('%d greedy clients, fair share on / off (jobs/s)' % args.clients,
         '%.1f / %.1f' % (g_many_on, g_many_off)),
    ]
    w = max(len(r[0]) for r in rows)
    for name, value in rows:
        print('%-*s  %s' % (w, name, value))
    for line in prio:
        print('gpud: %s' % line)
    print()
    checks = [
        ('interactive p99 beside greedy (gpud) / alone (gpud)', g_pair[1] / g_alone[1], '<= 1.5'),
        ('interactive p99 beside greedy: gpud / direct pair', g_pair[1] / d_pair[1], '< 1'),
        ('interactive p99 beside a niced greedy (gpud) / alone (gpud)', g_nice[1] / g_alone[1],
         '<= 1.5'),
        ('greedy beside interactive / greedy alone (gpud)', g_pair[2] / g_greedy, '>= 0.9'),
        ('quota 25 %: GPU share / no quota', q_share / q_free if q_free else 0, '0.25 +/- 0.05'),
        ('%d clients, fair share on / off' % args.clients, g_many_on / g_many_off, '>= 0.98'),
    ]
    w = max(len(c[0]) for c in checks)
    for name, ratio, aim in checks:
        print('%-*s  %.2f  (aim %s)' % (w, name, ratio, aim))


if __name__ == '__main__':
    main()
