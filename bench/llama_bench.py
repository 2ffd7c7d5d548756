#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""llama.cpp's Vulkan backend on the host driver directly and through a
private gpud, alternated in one run: llama-bench's tokens a second for each
model, and (--ops) test-backend-ops' time and results for some operators;
prints each figure and gpud/direct.

  scripts/llama.sh DIR            (once: llama.cpp and the models)
  bench/llama_bench.py --llama DIR [--build DIR] [--host-driver MANIFEST]
                       [--models tiny,moe,1b] [--rounds N] [--repetitions N] [--threads N]
                       [--ops OP,OP,...] [--ops-timeout S]
                       [--also NAME:VAR=VALUE[,VAR=VALUE...]]...

Models: tiny and moe generate tokens (tg128), 1b processes a prompt and
generates (pp512, tg128).  Each side first runs each model once unmeasured,
so that both have their pipelines compiled: the driver's disk cache
directly, gpud's pipeline cache (in DIR/gpud-cache/users/UID) through gpud; a
run that compiles runs at whatever clock the GPU has dropped to by then
(docs/performance.md, "llama.cpp").

--threads sets llama-bench's CPU threads (its -t; by default one a core):
ggml's CPU backend runs some operators of each graph on them, beside the
worker's threads through gpud.

--also adds a side: gpud again, with more variables in the application's
environment (GPUD_ICD_UPLOADS=off, say), alternated with the others and
compared with the direct side too.
"""

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

from bench_daemon import Daemon, add_daemon_args, env_for, resolve_daemon_args

TESTS = {
    'tiny': ['-p', '0', '-n', '128'],
    'moe': ['-p', '0', '-n', '128'],
    '1b': ['-p', '512', '-n', '128'],
}


def fail(msg):
    sys.exit('llama_bench: ' + msg)


def client_env(args, daemon):
    env = env_for(args, daemon)
    # ggml leaves CPU devices (lavapipe) alone unless told
    env.setdefault('GGML_VK_VISIBLE_DEVICES', '0')
    return env


def llama_bench(args, env, model, extra):
    """{test name: tokens a second} of one llama-bench run."""
    argv = [os.path.join(args.llama, 'run.sh'), os.path.join(args.llama, 'llama-bench'),
            '-m', os.path.join(args.llama, 'models', model + '.gguf'), '-ngl', '99',
            '-o', 'json'] + extra
    if args.threads:
        argv += ['-t', str(args.threads)]
    p = subprocess.run(argv, env=env, stdin=subprocess.DEVNULL, capture_output=True,
                       timeout=1800)
    if p.returncode != 0:
        fail('llama-bench on %s failed (%d): %s' % (model, p.returncode,
                                                    p.stderr.decode()[-2000:]))
    out = {}
    for r in json.loads(p.stdout.decode()):
        name = ('pp%d' % r['n_prompt']) if r['n_prompt'] else ('tg%d' % r['n_gen'])
        out[name] = r['avg_ts']
    return out


def backend_ops(args, env, op):
    """(seconds, the line of each case, the summary) of test-backend-ops -o op."""
    argv = [os.path.join(args.llama, 'run.sh'), os.path.join(args.llama, 'test-backend-ops'),
            '-b', 'Vulkan0', '-o', op]
    t = time.monotonic()
    try:
        p = subprocess.run(argv, env=env, stdin=subprocess.DEVNULL, capture_output=True,
                           timeout=args.ops_timeout)
        out = p.stdout.decode(errors='replace')
    except subprocess.TimeoutExpired as e:
        out = (e.stdout or b'').decode(errors='replace')
        out += '\n(stopped after %d s)' % args.ops_timeout
    seconds = time.monotonic() - t
    cases = sorted(l.strip() for l in out.splitlines()
                   if re.search(r'\b(OK|FAIL)\b', l) and '(' in l)
    summary = next((l.strip() for l in out.splitlines() if 'tests passed' in l),
                   out.strip().splitlines()[-1] if out.strip() else '(nothing)')
    return seconds, cases, summary


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--llama', required=True, help='what scripts/llama.sh set up')
    add_daemon_args(ap)
    ap.add_argument('--models', default='tiny,1b')
    ap.add_argument('--rounds', type=int, default=2)
    ap.add_argument('--repetitions', type=int, default=3, help="llama-bench's -r")
    ap.add_argument('--threads', type=int, default=0, help="llama-bench's -t (0: its default)")
    ap.add_argument('--ops', default='', help='test-backend-ops operators, comma-separated')
    ap.add_argument('--ops-timeout', type=int, default=600)
    ap.add_argument('--also', action='append', default=[], metavar='NAME:VAR=VALUE,...',
                    help='another gpud side, with these in the application environment')
    args = ap.parse_args()
    also = []
    for a in args.also:
        name, _, assigns = a.partition(':')
        pairs = [kv.partition('=') for kv in assigns.split(',') if kv]
        if not name or name in ('direct', 'gpud') or not pairs or any(not k or not e for k, e, _ in pairs):
            fail('--also %r: NAME:VAR=VALUE[,VAR=VALUE...] (NAME neither direct nor gpud)' % a)
        also.append((name, {k: v for k, _, v in pairs}))
    resolve_daemon_args(args)
    args.llama = os.path.abspath(args.llama)
    for path in (args.gpud, args.icd, os.path.join(args.llama, 'run.sh')):
        if not os.path.exists(path):
            fail('no %s (build the project; run scripts/llama.sh %s)' % (path, args.llama))
    models = [m for m in args.models.split(',') if m]
    for m in models:
        if m not in TESTS:
            fail('no model %r (%s)' % (m, ', '.join(TESTS)))
    # the daemon's caches (each user's, owned by their workers' uid) and the
    # uids it gave, kept from one run of the benchmark to the next
    cache = os.path.join(args.llama, 'gpud-cache')
    state = os.path.join(args.llama, 'gpud-state')
    for d in (cache, state):
        os.makedirs(d, exist_ok=True)
    os.chmod(cache, 0o755)   # (workers of other uids find their own below)
    tmp = tempfile.mkdtemp(prefix='llama-bench-')
    daemon = Daemon(args, tmp, extra=['--cache-dir', cache, '--state-dir', state])
    sides = [('direct', client_env(args, None)), ('gpud', client_env(args, daemon))]
    sides += [(name, dict(client_env(args, daemon), **extra)) for name, extra in also]
    try:
        print('host driver: %s' % args.host_driver)
        for m in models:
            for name, env in sides:
                llama_bench(args, env, m, TESTS[m] + ['-r', '1'])
        figures = {}   # (model, test, side) -> [tokens a second]
        for r in range(args.rounds):
            for m in models:
                for name, env in sides:
                    got = llama_bench(args, env, m, TESTS[m] + ['-r', str(args.repetitions)])
                    for test, ts in got.items():
                        figures.setdefault((m, test, name), []).append(ts)
                        print('round %d: %-4s %-6s %-6s %10.1f tokens/s' %
                              (r + 1, m, test, name, ts), flush=True)
        for side in ['gpud'] + [name for name, _ in also]:
            print('\n| model | test | direct (tokens/s) | %s (tokens/s) | %s/direct |' % (side, side))
            print('| --- | --- | ---: | ---: | ---: |')
            for (m, test, s) in sorted(figures):
                if s != 'direct' or (m, test, side) not in figures:
                    continue
                d, g = figures[(m, test, 'direct')], figures[(m, test, side)]
                print('| %s | %s | %s | %s | %.2fx |' % (
                    m, test, ' '.join('%.0f' % x for x in d), ' '.join('%.0f' % x for x in g),
                    statistics.median(g) / statistics.median(d)))
        ops = [o for o in args.ops.split(',') if o]
        if ops:
            print('\n| test-backend-ops -o | direct (s) | gpud (s) | gpud/direct | results |')
            print('| --- | ---: | ---: | ---: | --- |')
        for op in ops:
            (td, cd, sd), (tg, cg, sg) = (backend_ops(args, env, op) for _, env in sides[:2])
            same = 'the same' if cd == cg else 'DIFFER (direct: %s; gpud: %s)' % (sd, sg)
            print('| %s | %.1f | %.1f | %.2fx | %s, %s |' % (op, td, tg, tg / td, sd, same),
                  flush=True)
    finally:
        daemon.stop(timeout=30)
    print('gpud log: %s/gpud.log' % tmp)


if __name__ == '__main__':
    main()
