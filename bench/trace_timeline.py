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
                                           (--ops WIRE_GEN_H names the
                                           worker's commands: a build's
                                           protocol/wire_gen.h, found in
                                           the checkout's build folders
                                           when not given)
    bench/trace_timeline.py DIR --graphs   each run's graphs (what lies
                                           between two of the application's
                                           ends of a fence poll: a token of
                                           llama.cpp's), phase by phase

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
        # its worker: the one whose time overlaps the application's most
        # (a short program's trace starts at its first submission, its
        # worker's with its instance)
        worker, best = None, 0
        for wpid, ev in workers:
            overlap = min(hi, ev[-1][0]) - max(lo, ev[0][0]) if ev else -1
            if overlap >= 0 and (worker is None or overlap > best):
                worker, best = (wpid, ev), overlap
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


def graphs(pid, kind, app, worker):
    """The medians over a run's graphs (its first quarter left out: warm-up),
    in us from the graph's start (the previous poll's end)."""
    bounds = [e[0] for e in app if e[1] == 'polled']
    wev = worker[1] if worker else []
    rows = []
    for a, b in zip(bounds, bounds[1:]):
        ev = [e for e in app if a < e[0] <= b]
        wv = [e for e in wev if a < e[0] <= b]

        def at(events, name, last=False):
            xs = [e[0] - a for e in events if e[1] == name]
            return (xs[-1] if last else xs[0]) if xs else None

        row = {
            'the graph': b - a,
            'first recording ended': at(ev, 'end'),
            'last recording ended': at(ev, 'end', True),
            'last submission returned': at(ev, 'submitted', True),
            'last wait returned': at(ev, 'waited', True),
            'last poll began': at(ev, 'poll', True),
        }
        if wv:
            chunks = [e for e in wv if e[1] in ('chunk', 'chunk_done')]
            replay = sum(y[0] - x[0] for x, y in zip(chunks, chunks[1:])
                         if x[1] == 'chunk' and y[1] == 'chunk_done' and x[3] == y[3])
            row.update({
                'worker: first chunk begun': at(wv, 'chunk'),
                'worker: last chunk replayed': at(wv, 'chunk_done', True),
                'worker: replaying, in all': replay,
                'worker: first host submission': at(wv, 'host_submit'),
                'worker: last host submission': at(wv, 'host_submit', True),
                'worker: host submissions, in all': sum(
                    y[0] - x[0] for x, y in zip(wv, wv[1:])
                    if x[1] == 'host_submit' and y[1] == 'host_submitted'),
                'tracker: last done': at(wv, 'done', True),
            })
        row['(recordings ended)'] = sum(1 for e in ev if e[1] == 'end') * 1000
        row['(submissions)'] = sum(1 for e in ev if e[1] == 'submitted') * 1000
        row['(host submissions)'] = sum(1 for e in wv if e[1] == 'host_submit') * 1000
        rows.append(row)
    rows = rows[len(rows) // 4:]
    if not rows:
        return
    print('%s %d: %d graphs, medians in us from the end of the poll before' %
          (kind, pid, len(rows)))
    for k in rows[0]:
        xs = [r[k] for r in rows if r.get(k) is not None]
        if xs:
            print('  %-36s %10.1f' % (k, statistics.median(xs) / 1e3))


def pair(ev, a, b):
    out, at = [], None
    for e in ev:
        if e[1] == a:
            at = e[0]
        elif e[1] == b and at is not None:
            out.append(e[0] - at)
            at = None
    return out


def load_ops(path):
    """{op number: name} from a build's protocol/wire_gen.h."""
    if not path:
        import glob
        here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        found = sorted(glob.glob(os.path.join(here, 'build*', 'protocol', 'wire_gen.h')))
        path = found[0] if found else None
    ops = {}
    if path:
        with open(path) as f:
            for m in re.finditer(r'WIRE_OP_(\w+) = (\d+),', f.read()):
                ops[int(m.group(2))] = m.group(1)
    return ops


def window(d, spec, ops):
    pid, at, span = (float(x) for x in spec.split(':'))
    for p, kind, app, worker in runs(d):
        if p != int(pid):
            continue
        ev = sorted(app + (worker[1] if worker else []))
        t0 = ev[0][0] + at * 1000
        prev = None
        for e in ev:
            if t0 <= e[0] <= t0 + span * 1000:
                arg = ops.get(e[2], e[2]) if e[1] == 'cmd' else e[2]
                print('%10.1f %+8.1f %-16s %8s %d' % ((e[0] - ev[0][0]) / 1e3,
                                                    (e[0] - prev) / 1e3 if prev else 0,
                                                    e[1], arg, e[3]))
                prev = e[0]


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('dir')
    ap.add_argument('--window', metavar='PID:AT_US:SPAN_US')
    ap.add_argument('--graphs', action='store_true')
    ap.add_argument('--ops', metavar='WIRE_GEN_H')
    args = ap.parse_args()
    if args.window:
        window(args.dir, args.window, load_ops(args.ops))
        return 0
    for r in runs(args.dir):
        (graphs if args.graphs else summary)(*r)
    return 0


if __name__ == '__main__':
    sys.exit(main())
