#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Reads the files GPUD_TRACE=DIR leaves (shared/util_trace.h): an
application's side (the ICD's trace-PID-icd, or the host-call recorder's
trace-PID-hostrec over a host driver) and, for the ICD, its worker's
(trace-PID-worker, the one whose time overlaps it).

    bench/trace_timeline.py DIR            every application trace in DIR
    bench/trace_timeline.py DIR --window PID:AT_US:SPAN_US
                                           the merged events of PID's run
                                           from AT_US (from its first event)

For each run: its submissions and waits, and through gpud where a
submission's time goes: the recording's way to the worker and its replay
(ns a command, on the decoding thread and on lanes), the submission's way to
the host driver, the host's submission to the tracker finding it done, and
that to the application seeing it."""
import argparse
import os
import re
import statistics
import sys


def load(path):
    out = []
    with open(path) as f:
        for line in f:
            p = line.split()
            if len(p) == 4:
                out.append((int(p[0]), p[1], int(p[2]), int(p[3])))
    return out


def runs(d):
    files = {}
    for name in os.listdir(d):
        m = re.match(r'trace-(\d+)-(\w+)$', name)
        if m:
            files[(int(m.group(1)), m.group(2))] = os.path.join(d, name)
    workers = [(pid, load(path)) for (pid, kind), path in files.items() if kind == 'worker']
    for (pid, kind), path in sorted(files.items()):
        if kind == 'worker':
            continue
        app = load(path)
        if not app:
            continue
        lo, hi = app[0][0], app[-1][0]
        worker = None
        for wpid, ev in workers:
            if ev and ev[0][0] <= hi and ev[-1][0] >= lo and \
               sum(1 for e in ev if lo <= e[0] <= hi) > len(ev) // 2:
                worker = (wpid, ev)
        yield pid, kind, app, worker


def stat(name, xs, unit='us', scale=1e-3):
    if not xs:
        return
    xs = sorted(xs)
    print('  %-44s %6d  median %8.1f  mean %8.1f  p90 %8.1f %s' % (
        name, len(xs), statistics.median(xs) * scale, statistics.mean(xs) * scale,
        xs[int(len(xs) * 0.9)] * scale, unit))


def summary(pid, kind, app, worker):
    span = (app[-1][0] - app[0][0]) / 1e9
    n = {}
    for e in app:
        n[e[1]] = n.get(e[1], 0) + 1
    print('%s %d: %.3f s; %s' % (kind, pid, span,
                                 ', '.join('%s %d' % kv for kv in sorted(n.items()))))
    # the application's own intervals
    stat('submit call', pair(app, 'submit', 'submitted'))
    stat('wait call (vkWaitForFences)', pair(app, 'wait', 'waited'))
    stat('poll to signalled (vkGetFenceStatus)', pair(app, 'poll', 'polled'))
    if not worker:
        return
    wpid, wev = worker
    decoding = max(set(e[3] for e in wev if e[1] == 'msg'),
                   key=lambda t: sum(1 for e in wev if e[3] == t and e[1] == 'msg'))
    ev = sorted(app + wev)
    # a recording's way: the ICD's end to the worker's chunk of that size
    ends, way = [], []
    for e in ev:
        if e[1] == 'end':
            ends.append(e)
        elif e[1] == 'chunk':
            for i, x in enumerate(ends):
                if x[2] == e[2]:
                    way.append(e[0] - x[0])
                    del ends[:i + 1]
                    break
    stat('recording ended to its replay begun', way)
    open_chunk = {}
    per_cmd = {'decoding thread': [], 'lanes': []}
    for e in wev:
        if e[1] == 'chunk':
            open_chunk[e[3]] = e
        elif e[1] == 'chunk_done' and e[3] in open_chunk and e[2] > 0:
            s = open_chunk.pop(e[3])
            who = 'decoding thread' if e[3] == decoding else 'lanes'
            per_cmd[who].append((e[0] - s[0]) / e[2])
    for who, xs in per_cmd.items():
        stat('replay a command, ' + who, xs, 'ns', 1)
    # submissions the worker made: the ICD's call to the host's
    sent = [e[0] for i, e in enumerate(app) if e[1] == 'submit' and
            next((x for x in app[i + 1:] if x[1] == 'submitted'), (0, '', 1))[2] == 0]
    host = [e[0] for e in wev if e[1] == 'host_submit']
    if len(sent) == len(host):
        stat('submit call to the host\'s submit', [h - s for s, h in zip(sent, host)])
    else:
        print('  (%d submissions sent, %d host submits: not paired)' % (len(sent), len(host)))
    hosted = [e[0] for e in wev if e[1] == 'host_submitted']
    done = [e[0] for e in wev if e[1] == 'done']
    if len(hosted) == len(done):
        stat('host submitted to the tracker finding it done', [d - h for h, d in zip(hosted, done)])
        # the GPU's busy stretches as the tracker saw them
    seen = []
    last_done = None
    for e in ev:
        if e[1] == 'done':
            last_done = e[0]
        elif e[1] in ('polled', 'waited') and last_done is not None:
            seen.append(e[0] - last_done)
            last_done = None
    stat('done to the application seeing it', seen)


def pair(ev, a, b):
    out, at = [], None
    for e in ev:
        if e[1] == a:
            at = e[0]
        elif e[1] == b and at is not None:
            out.append(e[0] - at)
            at = None
    return out


def window(d, spec):
    pid, at, span = (float(x) for x in spec.split(':'))
    for p, kind, app, worker in runs(d):
        if p != int(pid):
            continue
        ev = sorted(app + (worker[1] if worker else []))
        t0 = ev[0][0] + at * 1000
        prev = None
        for e in ev:
            if t0 <= e[0] <= t0 + span * 1000:
                print('%10.1f %+8.1f %-16s %8d %d' % ((e[0] - ev[0][0]) / 1e3,
                                                    (e[0] - prev) / 1e3 if prev else 0,
                                                    e[1], e[2], e[3]))
                prev = e[0]


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('dir')
    ap.add_argument('--window', metavar='PID:AT_US:SPAN_US')
    args = ap.parse_args()
    if args.window:
        window(args.dir, args.window)
        return 0
    for r in runs(args.dir):
        summary(*r)
    return 0


if __name__ == '__main__':
    sys.exit(main())
