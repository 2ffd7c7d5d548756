#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Frames per second of windowed programs through gpud against the host driver.

In one run, under a private Xvfb and with a private gpud (host driver:
lavapipe), this measures the same programs on lavapipe used directly and
through gpud, and prints a markdown table with the ratio gpud / direct:

- vkcube (vulkan-tools) at its default size with the IMMEDIATE and the
  MAILBOX present mode.  Start-up and tear-down are left out: each
  repetition runs `vkcube --c N1` and `vkcube --c N2` (N2 much larger) and
  the rate is (N2 - N1) / (median t2 - median t1).  The same difference of
  CPU time gives the CPU spent per frame by the application and gpud (its
  daemon and workers) together, and by the X server;
- glmark2 (glmark2-x11) through Zink (OpenGL on Vulkan) at 400x300: a few
  scenes of fixed duration, each scene's FPS and the glmark2 Score (medians
  over the repetitions), and the GL_RENDERER line, which through gpud must
  name the gpud device.

Direct and gpud runs alternate (A B A B ...) so that drift hits both.

    bench/wsi_bench.py [--build DIR] [--reps N] [--glmark2-reps N] [--quick]

Overrides as bench/run_bench.sh: GPUD (daemon), GPUD_ARGS (more daemon
options), ICD_MANIFEST (gpud's build-dir manifest), LAVAPIPE_MANIFEST.
Needs Xvfb, vkcube and glmark2 (packages xvfb, vulkan-tools, glmark2-x11).
"""

import argparse
import datetime
import json
import os
import pwd
import re
import resource
import shlex
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time

DRIVER_ENV = ['VK_ICD_FILENAMES', 'VK_DRIVER_FILES', 'VK_ADD_DRIVER_FILES',
              'GPUD_SOCKET', 'NODEVICE_SELECT', 'WAYLAND_DISPLAY']
CLK_TCK = os.sysconf('SC_CLK_TCK')
MODES = [(0, 'IMMEDIATE'), (1, 'MAILBOX')]
GLMARK2_SCENES = ['build', 'texture', 'shading']


def log(msg):
    print(msg, file=sys.stderr, flush=True)


def die(msg):
    log('wsi_bench: ' + msg)
    sys.exit(1)


# ---- processes' CPU time ------------------------------------------------------

def proc_stat(pid):
    """(ppid, own CPU seconds, waited-for children's CPU seconds) or None."""
    try:
        with open('/proc/%d/stat' % pid) as f:
            data = f.read()
    except OSError:
        return None
    fields = data[data.rindex(')') + 2:].split()
    # fields[0] is the state (field 3); utime is field 14
    return (int(fields[1]),
            (int(fields[11]) + int(fields[12])) / CLK_TCK,
            (int(fields[13]) + int(fields[14])) / CLK_TCK)


def tree_cpu(root):
    """CPU seconds of root, its reaped children and its live descendants."""
    stats = {}
    for d in os.listdir('/proc'):
        if d.isdigit():
            s = proc_stat(int(d))
            if s:
                stats[int(d)] = s
    if root not in stats:
        return 0.0
    total = stats[root][1] + stats[root][2]
    children = {}
    for pid, (ppid, _, _) in stats.items():
        children.setdefault(ppid, []).append(pid)
    todo = list(children.get(root, []))
    while todo:
        pid = todo.pop()
        total += stats[pid][1]
        todo += children.get(pid, [])
    return total


def children_cpu():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


# ---- the X server and the daemon ----------------------------------------------

class Xvfb:
    def __init__(self, tmp):
        rfd, wfd = os.pipe()
        # -displayfd: the server takes a free display and writes its number
        # once it accepts connections
        self.proc = subprocess.Popen(
            ['Xvfb', '-displayfd', str(wfd), '-screen', '0', '1024x768x24',
             '-nolisten', 'tcp', '-noreset'],
            pass_fds=[wfd], stdin=subprocess.DEVNULL,
            stdout=open(os.path.join(tmp, 'xvfb.log'), 'wb'),
            stderr=subprocess.STDOUT)
        os.close(wfd)
        text = b''
        deadline = time.monotonic() + 20
        while not text.endswith(b'\n'):
            if time.monotonic() > deadline or self.proc.poll() is not None:
                die('Xvfb did not start; see %s/xvfb.log' % tmp)
            chunk = os.read(rfd, 64)
            if not chunk:
                die('Xvfb did not say its display; see %s/xvfb.log' % tmp)
            text += chunk
        os.close(rfd)
        self.display = ':' + text.decode().strip()
        sock = '/tmp/.X11-unix/X' + text.decode().strip()
        while not os.path.exists(sock):
            if time.monotonic() > deadline:
                die('no %s' % sock)
            time.sleep(0.05)

    def cpu(self):
        s = proc_stat(self.proc.pid)
        return s[1] if s else 0.0

    def stop(self):
        stop_process(self.proc)


def stop_process(proc):
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def socket_accepts(path):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET | socket.SOCK_CLOEXEC)
    try:
        s.connect(path)
        return True
    except OSError:
        return False
    finally:
        s.close()


def daemon_user_args():
    """As root, the workers' user: gpud's own where it exists, else nobody
    (as tests/integration/gpud_test.py)."""
    if os.geteuid() != 0:
        return []
    try:
        pwd.getpwnam('gpud')
        return ['--user', 'gpud']
    except KeyError:
        return ['--user', 'nobody']


class Daemon:
    def __init__(self, gpud, lavapipe, tmp, env):
        self.socket = os.path.join(tmp, 'gpud.sock')
        self.log_path = os.path.join(tmp, 'gpud.log')
        cmd = ([gpud, '--socket', self.socket, '--host-driver', lavapipe] +
               daemon_user_args() + shlex.split(os.environ.get('GPUD_ARGS', '')))
        log('$ ' + ' '.join(cmd))
        self.proc = subprocess.Popen(cmd, env=env, stdin=subprocess.DEVNULL,
                                     stdout=open(self.log_path, 'wb'),
                                     stderr=subprocess.STDOUT, cwd=tmp)
        deadline = time.monotonic() + 15
        while not (os.path.exists(self.socket) and socket_accepts(self.socket)
                   and 'serving ' in self.log()):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                die('gpud did not come up; its log:\n' + self.log())
            time.sleep(0.05)
        for line in self.log().splitlines():
            if 'serving ' in line:
                log(line)

    def log(self):
        try:
            with open(self.log_path, errors='replace') as f:
                return f.read()
        except OSError:
            return ''

    def cpu(self):
        return tree_cpu(self.proc.pid)

    def check(self):
        if self.proc.poll() is not None:
            die('gpud exited (status %d); its log:\n%s' %
                (self.proc.returncode, self.log()))

    def stop(self):
        stop_process(self.proc)


# ---- runs -----------------------------------------------------------------------

class Run:
    def __init__(self, rc, wall, cpu, xcpu, out, timed_out):
        self.rc, self.wall, self.cpu, self.xcpu = rc, wall, cpu, xcpu
        self.out, self.timed_out = out, timed_out


def run(cmd, env, timeout, xvfb, daemon):
    """Runs cmd to its end: wall time, CPU time of it and of the daemon, and
    of the X server."""
    time.sleep(0.3)  # let the previous program's worker end and be replaced
    cpu0 = children_cpu() + (daemon.cpu() if daemon else 0.0)
    x0 = xvfb.cpu()
    t0 = time.monotonic()
    proc = subprocess.Popen(cmd, env=env, stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    timed_out = False
    try:
        out, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        timed_out = True
        proc.kill()
        out, _ = proc.communicate()
    wall = time.monotonic() - t0
    x1 = xvfb.cpu()
    if daemon:
        time.sleep(0.2)  # the worker's last work; its exit is not ours
    cpu1 = children_cpu() + (daemon.cpu() if daemon else 0.0)
    return Run(proc.returncode, wall, cpu1 - cpu0, x1 - x0,
               out.decode(errors='replace'), timed_out)


def median(xs):
    return statistics.median(xs) if xs else float('nan')


def fmt(v):
    if v != v:  # nan
        return 'n/a'
    if abs(v) >= 100:
        return '%.0f' % v
    if abs(v) >= 10:
        return '%.1f' % v
    if abs(v) >= 1:
        return '%.2f' % v
    return '%.3f' % v


def find_icd_manifest(build):
    abs_build = os.path.realpath(build)
    for root, dirs, files in os.walk(build):
        dirs[:] = [d for d in dirs if not d.startswith('meson-')]
        for name in sorted(files):
            if not name.endswith('.json'):
                continue
            path = os.path.join(root, name)
            try:
                with open(path) as f:
                    data = json.load(f)
            except (OSError, ValueError):
                continue
            lib = data.get('ICD', {}).get('library_path', '') if isinstance(data, dict) else ''
            if isinstance(lib, str) and lib.startswith(abs_build + '/'):
                return os.path.abspath(path)
    return None


def machine():
    model = '?'
    try:
        with open('/proc/cpuinfo') as f:
            for line in f:
                if line.startswith('model name'):
                    model = line.split(':', 1)[1].strip()
                    break
    except OSError:
        pass
    return model, len(os.sched_getaffinity(0))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--build', default='build', help='Meson build directory (default: build)')
    ap.add_argument('--reps', type=int, default=None,
                    help='repetitions of each vkcube measurement (default 5, --quick 3)')
    ap.add_argument('--glmark2-reps', type=int, default=None,
                    help='glmark2 runs on each driver (default 2, --quick 1)')
    ap.add_argument('--quick', action='store_true',
                    help='fewer frames, shorter scenes, fewer repetitions')
    args = ap.parse_args()

    reps = args.reps or (3 if args.quick else 5)
    greps = args.glmark2_reps or (1 if args.quick else 2)
    n1, n2 = (50, 1000) if args.quick else (100, 3000)
    duration = 2 if args.quick else 5

    build = args.build
    if not os.path.isdir(build):
        die('no build directory %s' % build)
    # lavapipe's manifest: Mesa 25 names it lvp_icd.json, Mesa 22 lvp_icd.ARCH.json
    candidates = ['/usr/share/vulkan/icd.d/lvp_icd.json',
                  '/usr/share/vulkan/icd.d/lvp_icd.%s.json' % os.uname().machine]
    lavapipe = os.environ.get('LAVAPIPE_MANIFEST') or next(
        (m for m in candidates if os.path.exists(m)), candidates[0])
    gpud = os.path.abspath(os.environ.get('GPUD', os.path.join(build, 'daemon', 'gpud')))
    icd = os.environ.get('ICD_MANIFEST') or find_icd_manifest(build)
    icd = icd and os.path.abspath(icd)
    if not os.access(gpud, os.X_OK):
        die('no daemon at %s (set GPUD=)' % gpud)
    if not icd or not os.path.isfile(icd):
        die("gpud's ICD manifest not found in %s (set ICD_MANIFEST=)" % build)
    for prog in ('Xvfb', 'vkcube', 'glmark2'):
        if not any(os.access(os.path.join(d, prog), os.X_OK)
                   for d in os.environ.get('PATH', '').split(':') if d):
            die('%s not found' % prog)

    started = time.monotonic()
    tmp = tempfile.mkdtemp(prefix='gpud-wsi-bench.')
    base = {k: v for k, v in os.environ.items() if k not in DRIVER_ENV}
    base['XDG_RUNTIME_DIR'] = tmp

    xvfb = daemon = None
    problems = []
    try:
        xvfb = Xvfb(tmp)
        log('Xvfb on %s' % xvfb.display)
        daemon = Daemon(gpud, lavapipe, tmp, dict(base))
        base['DISPLAY'] = xvfb.display
        envs = {
            'direct': dict(base, VK_ICD_FILENAMES=lavapipe),
            'gpud': dict(base, VK_ICD_FILENAMES=icd, GPUD_SOCKET=daemon.socket),
        }
        drivers = ['direct', 'gpud']

        def go(name, cmd, timeout):
            d = daemon if name == 'gpud' else None
            r = run(cmd, envs[name], timeout, xvfb, d)
            daemon.check()
            return r

        # the device each program sees
        for name in drivers:
            r = go(name, ['vkcube', '--c', '10'], 60)
            sel = [l for l in r.out.splitlines() if l.startswith('Selected GPU')]
            log('%s: %s' % (name, sel[0] if sel else r.out.strip()))
            if r.rc != 0 or not sel or (('gpud' in sel[0]) != (name == 'gpud')):
                die('vkcube (%s) did not run on the expected device:\n%s' % (name, r.out))

        # ---- vkcube ----
        vk = {}  # (mode, name) -> {'t1': [], 't2': [], 'c1':..., ...}
        for mode, _ in MODES:
            for name in drivers:
                vk[(mode, name)] = {k: [] for k in ('t1', 't2', 'c1', 'c2', 'x1', 'x2', 'fps')}
        for rep in range(reps):
            for mode, mname in MODES:
                for name in drivers:
                    s = vk[(mode, name)]
                    ok = True
                    res = {}
                    for key, n in (('1', n1), ('2', n2)):
                        cmd = ['vkcube', '--c', str(n), '--present_mode', str(mode)]
                        r = go(name, cmd, 60 + n / 20)
                        if r.rc != 0 or r.timed_out:
                            ok = False
                            problems.append('vkcube %s --c %d (%s): %s; output: %s' % (
                                mname, n, name,
                                'timed out after %.0f s' % r.wall if r.timed_out
                                else 'exit status %d' % r.rc, r.out.strip()[-300:]))
                            break
                        res[key] = r
                    if not ok:
                        continue
                    for key in ('1', '2'):
                        s['t' + key].append(res[key].wall)
                        s['c' + key].append(res[key].cpu)
                        s['x' + key].append(res[key].xcpu)
                    fps = (n2 - n1) / (res['2'].wall - res['1'].wall)
                    s['fps'].append(fps)
                    log('rep %d vkcube %-9s %-6s t(%d)=%.3f s t(%d)=%.3f s -> %.0f fps' %
                        (rep + 1, mname, name, n1, res['1'].wall, n2, res['2'].wall, fps))

        # ---- glmark2 through Zink ----
        gl = {name: {'scenes': {}, 'score': [], 'renderer': None} for name in drivers}
        bench_args = []
        for scene in GLMARK2_SCENES:
            bench_args += ['-b', '%s:duration=%d' % (scene, duration)]
        gl_env_extra = {'MESA_LOADER_DRIVER_OVERRIDE': 'zink', 'LIBGL_ALWAYS_SOFTWARE': '1'}
        for name in drivers:
            envs[name].update(gl_env_extra)
        for rep in range(greps):
            for name in drivers:
                cmd = ['glmark2', '-s', '400x300'] + bench_args
                r = go(name, cmd, 120 + 3 * duration * len(GLMARK2_SCENES))
                g = gl[name]
                m = re.search(r'GL_RENDERER:\s*(.*)', r.out)
                if m:
                    g['renderer'] = m.group(1).strip()
                scenes = re.findall(r'^\[(\w+)\][^\n]*FPS:\s*(\d+)', r.out, re.M)
                score = re.search(r'glmark2 Score:\s*(\d+)', r.out)
                for scene, fps in scenes:
                    g['scenes'].setdefault(scene, []).append(float(fps))
                if score:
                    g['score'].append(float(score.group(1)))
                log('rep %d glmark2 %-6s %s score %s%s' % (
                    rep + 1, name, ' '.join('%s=%s' % s for s in scenes),
                    score.group(1) if score else '?',
                    '' if r.rc == 0 else ' (exit status %d)' % r.rc))
                if r.timed_out or not score or len(scenes) != len(GLMARK2_SCENES):
                    problems.append('glmark2 (%s) %s; output: %s' % (
                        name, 'timed out' if r.timed_out else 'gave no complete result',
                        r.out.strip()[-600:]))
                elif r.rc != 0:
                    lines = r.out.splitlines()
                    at = [i for i, l in enumerate(lines) if 'X Error' in l]
                    err = lines[at[0]:at[0] + 3] if at else lines[-4:]
                    problems.append('glmark2 (%s) exited with status %d after its '
                                    'results: %s' % (name, r.rc,
                                                     ' | '.join(l.strip() for l in err)))
        for name in drivers:
            rend = gl[name]['renderer']
            if not rend or (('gpud' in rend) != (name == 'gpud')):
                problems.append('glmark2 (%s): GL_RENDERER %r does not name the %s device'
                                % (name, rend, name))
    finally:
        if daemon:
            daemon.stop()
        if xvfb:
            xvfb.stop()
        shutil.rmtree(tmp, ignore_errors=True)

    # ---- the table ----
    rows = []
    for mode, mname in MODES:
        st = {name: vk[(mode, name)] for name in drivers}

        def rate(s):
            dt = median(s['t2']) - median(s['t1'])
            return (n2 - n1) / dt if s['t2'] else float('nan')

        def per_frame(s, a, b):
            return 1000 * (median(s[b]) - median(s[a])) / (n2 - n1) if s[b] else float('nan')

        label = 'vkcube %s (%d-%d frames, %d reps)' % (mname, n1, n2, len(st['gpud']['fps']))
        rows.append((label + ', rate', 'frames/s', rate(st['direct']), rate(st['gpud'])))
        rows.append(('vkcube %s, CPU per frame: program + gpud' % mname, 'ms',
                     per_frame(st['direct'], 'c1', 'c2'), per_frame(st['gpud'], 'c1', 'c2')))
        rows.append(('vkcube %s, CPU per frame: X server' % mname, 'ms',
                     per_frame(st['direct'], 'x1', 'x2'), per_frame(st['gpud'], 'x1', 'x2')))
    for scene in GLMARK2_SCENES:
        rows.append(('glmark2 (Zink) [%s], %d s, median' % (scene, duration), 'frames/s',
                     median(gl['direct']['scenes'].get(scene, [])),
                     median(gl['gpud']['scenes'].get(scene, []))))
    rows.append(('glmark2 (Zink) Score, median of %d' % greps, '',
                 median(gl['direct']['score']), median(gl['gpud']['score'])))

    model, ncpu = machine()
    print('## wsi_bench: %s, %d CPUs, %s' % (model, ncpu,
                                            datetime.datetime.now().strftime('%Y-%m-%d %H:%M')))
    print()
    print('vkcube at its default size (500x500), glmark2 -s 400x300; Xvfb 1024x768x24.')
    print('GL_RENDERER direct: %s' % gl['direct']['renderer'])
    print('GL_RENDERER gpud:   %s' % gl['gpud']['renderer'])
    if os.environ.get('GPUD_ARGS'):
        print('GPUD_ARGS: %s' % os.environ['GPUD_ARGS'])
    print()
    print('| metric | unit | direct | gpud | gpud/direct |')
    print('| --- | --- | ---: | ---: | ---: |')
    for label, unit, d, g in rows:
        ratio = g / d if d and d == d and g == g else float('nan')
        print('| %s | %s | %s | %s | %s |' % (label, unit, fmt(d), fmt(g),
                                             'n/a' if ratio != ratio else '%.2f×' % ratio))
    print()
    for mode, mname in MODES:
        for name in drivers:
            f = vk[(mode, name)]['fps']
            if f:
                print('vkcube %s %s: per-rep fps %s' % (
                    mname, name, ' '.join('%.0f' % x for x in f)))
    print('Run time: %.0f s' % (time.monotonic() - started))
    if problems:
        print()
        print('Problems:')
        seen = {}
        for p in problems:
            seen[p] = seen.get(p, 0) + 1
        for p, n in seen.items():
            print('- ' + p + (' (%d times)' % n if n > 1 else ''))
    return 1 if any('does not name' in p or 'timed out' in p or 'no complete' in p
                    for p in problems) else 0


if __name__ == '__main__':
    sys.exit(main())
