#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Integration tests: Vulkan programs through a private gpud.

Usage (as meson runs it):

  gpud_test.py --gpud PATH --gpudctl PATH --icd-manifest PATH \\
               --lavapipe-manifest PATH --bindir PATH SUBCOMMAND

  gpud_test.py --direct --lavapipe-manifest PATH --bindir PATH SUBCOMMAND

SUBCOMMAND is one of: enum, compute, render, sync, lost, multiclient,
vulkaninfo, hostile. --bindir holds the test programs (vk_enum, vk_compute,
hostile_client, ...).

The fixture makes a temporary directory, sets XDG_RUNTIME_DIR to it, starts
`gpud --socket TMP/gpud.sock --host-driver LAVAPIPE_MANIFEST` (output to
TMP/gpud.log), waits until the socket accepts connections, and runs clients
with VK_ICD_FILENAMES=ICD_MANIFEST and GPUD_SOCKET=TMP/gpud.sock. On exit it
stops the daemon (SIGTERM, SIGKILL after 5 s) and prints the daemon's log if
the test failed. Programs run both with Mesa's device-select layer active and
with NODEVICE_SELECT=1.

--direct runs the same subcommands with no daemon, every client on lavapipe
directly: it checks the test programs and this script themselves (lost runs
vk_lost's self-test mode, multiclient skips the gpudctl checks, hostile is
skipped).

Exit status: 0 pass, 1 fail, 77 skip (meson's convention).
Set GPUD_TEST_KEEP=1 to keep the temporary directory.
"""

import argparse
import errno
import json
import os
import pwd
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

# Differences between `vulkaninfo --json` on lavapipe directly and through
# gpud that are intended. Key: the field's path as printed in the diff; value:
# (reason, check(direct_value, gpud_value) -> bool). Any other difference in
# the compared sections fails the vulkaninfo test.
INTENDED_DIFFERENCES = {
    'properties.VkPhysicalDeviceProperties.deviceName': (
        'prefixed with "gpud" so users can see the device is served by gpud',
        lambda direct, gpud: (isinstance(gpud, str) and 'gpud' in gpud
                              and direct in gpud)),
}

# Sections of vulkaninfo's profile JSON (capabilities.device.*) that must
# match, except for INTENDED_DIFFERENCES.
COMPARED_FEATURES = [
    'VkPhysicalDeviceFeatures',
    'VkPhysicalDeviceVulkan11Features',
    'VkPhysicalDeviceVulkan12Features',
    'VkPhysicalDeviceVulkan13Features',
]
COMPARED_PROPERTIES = [
    'VkPhysicalDeviceProperties',   # includes limits and sparseProperties
    'VkPhysicalDeviceVulkan11Properties',
    'VkPhysicalDeviceVulkan12Properties',
    'VkPhysicalDeviceVulkan13Properties',
]

COMPARED_FORMAT_STRUCTS = ['VkFormatProperties', 'VkFormatProperties3']

# (label, extra environment) for each way a program is run.
VARIANTS = [
    ('device-select', {}),
    ('NODEVICE_SELECT=1', {'NODEVICE_SELECT': '1'}),
]

# Options of each test's private daemon, besides Fixture.daemon_args().
DAEMON_ARGS = {
    # every case crashes a worker: none may be refused for crashing before
    'abuse': ['--crash-limit', '0', '--isolation=process'],
    'validate': ['--validate'],
}

# Environment variables that choose drivers; cleared for every process.
DRIVER_ENV = ['VK_ICD_FILENAMES', 'VK_DRIVER_FILES', 'VK_ADD_DRIVER_FILES',
              'GPUD_SOCKET', 'NODEVICE_SELECT']

CRASH_SIGNALS = {signal.SIGSEGV, signal.SIGABRT, signal.SIGBUS,
                 signal.SIGFPE, signal.SIGILL, signal.SIGSYS}


class TestFailure(Exception):
    pass


class TestSkip(Exception):
    pass


def fail(msg):
    raise TestFailure(msg)


def log(msg=''):
    print(msg, flush=True)


def describe_rc(rc):
    if rc is None:
        return 'still running'
    if rc < 0:
        try:
            return 'killed by %s' % signal.Signals(-rc).name
        except ValueError:
            return 'killed by signal %d' % -rc
    return 'exit status %d' % rc


def indent(text, prefix='    '):
    return ''.join(prefix + line + '\n' for line in text.splitlines())


class Fixture:
    """A private daemon and the environments for its clients."""

    def __init__(self, args):
        self.args = args
        self.direct = args.direct
        self.tmp = tempfile.mkdtemp(prefix='gpud-test-')
        self.socket = os.path.join(self.tmp, 'gpud.sock')
        self.log_path = os.path.join(self.tmp, 'gpud.log')
        self.daemon = None
        self.daemon_ok = True

    # -- environments --

    def base_env(self):
        env = dict(os.environ)
        for name in DRIVER_ENV:
            env.pop(name, None)
        env['XDG_RUNTIME_DIR'] = self.tmp
        # Sanitizer runs: programs that are not instrumented (vulkaninfo)
        # load the instrumented ICD, and the loader unloads drivers before
        # LeakSanitizer can name them; scripts/test.sh preloads what fixes
        # both.
        preload = os.environ.get('GPUD_TEST_PRELOAD')
        if preload:
            env['LD_PRELOAD'] = preload
        return env

    def direct_env(self, variant=None):
        """A client on lavapipe directly."""
        env = self.base_env()
        env['VK_ICD_FILENAMES'] = self.args.lavapipe_manifest
        env.update(variant[1] if variant else {})
        return env

    def gpud_env(self, variant=None, socket_path=None):
        """A client through gpud (lavapipe directly in --direct mode)."""
        if self.direct:
            return self.direct_env(variant)
        env = self.base_env()
        env['VK_ICD_FILENAMES'] = self.args.icd_manifest
        env['GPUD_SOCKET'] = socket_path or self.socket
        env.update(variant[1] if variant else {})
        return env

    # -- the daemon --

    def start_daemon(self):
        if self.direct:
            return
        if os.path.exists(self.socket):
            os.unlink(self.socket)   # left by a daemon we killed
        env = self.base_env()
        cmd = [self.args.gpud, '--socket', self.socket,
               '--host-driver', self.args.lavapipe_manifest] + self.daemon_args()
        log('$ ' + ' '.join(cmd))
        with open(self.log_path, 'ab') as logf:
            logf.write(('--- %s\n' % ' '.join(cmd)).encode())
            logf.flush()
            self.daemon = subprocess.Popen(
                cmd, env=env, stdin=subprocess.DEVNULL, stdout=logf,
                stderr=logf, cwd=self.tmp)
        deadline = time.monotonic() + 10
        while True:
            if self.daemon.poll() is not None:
                fail('gpud exited during start-up (%s)' %
                     describe_rc(self.daemon.returncode))
            if self.socket_accepts():
                break
            if time.monotonic() > deadline:
                fail('gpud did not accept connections on %s within 10 s' %
                     self.socket)
            time.sleep(0.05)
        log('gpud running, pid %d' % self.daemon.pid)

    def daemon_args(self, extra=()):
        """Options every test daemon gets: as root, the workers' user (the
        gpud user where it exists, else nobody); GPUD_TEST_DAEMON_ARGS
        (the sanitizer run's isolation, say); then the test's own."""
        args = []
        if os.geteuid() == 0:
            try:
                pwd.getpwnam('gpud')
                args += ['--user', 'gpud']
            except KeyError:
                args += ['--user', 'nobody']
        args += os.environ.get('GPUD_TEST_DAEMON_ARGS', '').split()
        return args + DAEMON_ARGS.get(self.args.subcommand, []) + list(extra)

    def socket_accepts(self):
        # gpud speaks SOCK_SEQPACKET; a stream socket is tried too so that a
        # wrong socket type is reported by the client, not as a time-out.
        for kind in (socket.SOCK_SEQPACKET, socket.SOCK_STREAM):
            s = socket.socket(socket.AF_UNIX, kind | socket.SOCK_CLOEXEC)
            try:
                s.connect(self.socket)
                return True
            except OSError as e:
                if e.errno != errno.EPROTOTYPE:
                    return False
            finally:
                s.close()
        return False

    def check_daemon(self):
        """Fails unless the daemon is still running."""
        if self.direct:
            return
        if self.daemon is None or self.daemon.poll() is not None:
            rc = self.daemon.returncode if self.daemon else None
            fail('gpud is not running any more (%s)' % describe_rc(rc))

    def kill_daemon(self):
        """SIGKILL, as a crash would; returns the time of the kill."""
        os.kill(self.daemon.pid, signal.SIGKILL)
        t = time.monotonic()
        self.daemon.wait()
        self.daemon = None
        return t

    def stop_daemon(self):
        if self.daemon is None:
            return
        d, self.daemon = self.daemon, None
        if d.poll() is None:
            d.send_signal(signal.SIGTERM)
            try:
                d.wait(timeout=5)
            except subprocess.TimeoutExpired:
                log('gpud ignored SIGTERM for 5 s, sending SIGKILL')
                d.kill()
                d.wait()
                self.daemon_ok = False
        rc = d.returncode
        if rc < 0 and -rc in CRASH_SIGNALS:
            log('gpud %s' % describe_rc(rc))
            self.daemon_ok = False
        elif rc not in (0, -signal.SIGTERM, -signal.SIGKILL):
            log('gpud exited with %s' % describe_rc(rc))

    def print_log(self):
        if self.direct or not os.path.exists(self.log_path):
            return
        with open(self.log_path, 'rb') as f:
            text = f.read().decode(errors='replace')
        log('---- gpud log (%s) ----' % self.log_path)
        sys.stdout.write(text)
        log('---- end of gpud log ----')

    def close(self, failed):
        try:
            self.stop_daemon()
        finally:
            if failed or not self.daemon_ok:
                self.print_log()
            if os.environ.get('GPUD_TEST_KEEP'):
                log('keeping %s' % self.tmp)
            else:
                shutil.rmtree(self.tmp, ignore_errors=True)

    # -- programs --

    def prog(self, name):
        path = os.path.join(self.args.bindir, name)
        if not os.access(path, os.X_OK):
            fail('test program %s not found' % path)
        return path

    def run(self, argv, env, timeout=180, expect_rc=0, label='',
            show_output=True):
        """Runs a program to completion; checks its exit status."""
        shown = ' '.join(argv)
        log('$ %s%s' % ('[%s] ' % label if label else '', shown))
        t0 = time.monotonic()
        try:
            p = subprocess.run(argv, env=env, cwd=self.tmp,
                               stdin=subprocess.DEVNULL,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               timeout=timeout)
        except subprocess.TimeoutExpired as e:
            out = (e.stdout or b'').decode(errors='replace')
            err = (e.stderr or b'').decode(errors='replace')
            log(indent(out) + indent(err))
            fail('%s did not finish within %d s' % (shown, timeout))
        out = p.stdout.decode(errors='replace')
        err = p.stderr.decode(errors='replace')
        if show_output or p.returncode != expect_rc:
            sys.stdout.write(indent(out))
        else:
            log('    (%d lines of output)' % len(out.splitlines()))
        if err:
            sys.stdout.write(indent(err, '  ! '))
        log('  -> %s in %.2f s' % (describe_rc(p.returncode),
                                   time.monotonic() - t0))
        if expect_rc is not None and p.returncode != expect_rc:
            fail('%s: %s, expected exit status %d' %
                 (shown, describe_rc(p.returncode), expect_rc))
        return p.returncode, out, err

    def gpudctl_status(self):
        """`gpudctl status --json`, checked against the contract."""
        cmd = [self.args.gpudctl, '--socket', self.socket, 'status', '--json']
        try:
            p = subprocess.run(cmd, env=self.base_env(), cwd=self.tmp,
                               stdin=subprocess.DEVNULL,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               timeout=10)
        except subprocess.TimeoutExpired:
            fail('%s did not answer within 10 s' % ' '.join(cmd))
        if p.returncode != 0:
            fail('%s: %s\n%s' % (' '.join(cmd), describe_rc(p.returncode),
                                 p.stderr.decode(errors='replace')))
        try:
            status = json.loads(p.stdout)
        except ValueError as e:
            fail('gpudctl status --json printed invalid JSON (%s):\n%s' %
                 (e, p.stdout.decode(errors='replace')))
        check_status_shape(status)
        return status


def check_status_shape(status):
    def is_int(v):
        return isinstance(v, int) and not isinstance(v, bool)

    if not isinstance(status, dict):
        fail('gpudctl status: not a JSON object: %r' % (status,))
    for key in ('objects', 'memory_bytes'):
        if not is_int(status.get(key)):
            fail('gpudctl status: "%s" missing or not an integer: %r' %
                 (key, status))
    if not isinstance(status.get('clients'), list):
        fail('gpudctl status: "clients" missing or not a list: %r' % status)
    for c in status['clients']:
        if not isinstance(c, dict):
            fail('gpudctl status: client is not an object: %r' % (c,))
        for key in ('id', 'pid', 'objects', 'memory_bytes'):
            if not is_int(c.get(key)):
                fail('gpudctl status: client "%s" missing or not an '
                     'integer: %r' % (key, c))
        if not isinstance(c.get('name'), str):
            fail('gpudctl status: client "name" missing or not a string: '
                 '%r' % (c,))


class LineReader:
    """Collects a process's stdout lines on a thread."""

    def __init__(self, stream):
        self.lines = []
        self.cond = threading.Condition()
        self.closed = False
        self.thread = threading.Thread(target=self._run, args=(stream,),
                                       daemon=True)
        self.thread.start()

    def _run(self, stream):
        for raw in iter(stream.readline, b''):
            with self.cond:
                self.lines.append(raw.decode(errors='replace').rstrip('\n'))
                self.cond.notify_all()
        with self.cond:
            self.closed = True
            self.cond.notify_all()

    def wait_for(self, text, timeout):
        """True once a line equal to text was read."""
        deadline = time.monotonic() + timeout
        with self.cond:
            while text not in self.lines:
                left = deadline - time.monotonic()
                if self.closed or left <= 0:
                    return False
                self.cond.wait(left)
            return True

    def text(self):
        self.thread.join(timeout=5)
        with self.cond:
            return '\n'.join(self.lines)


def start_client(fx, argv, env, label=''):
    log('$ %s%s &' % ('[%s] ' % label if label else '', ' '.join(argv)))
    p = subprocess.Popen(argv, env=env, cwd=fx.tmp, stdin=subprocess.DEVNULL,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    p.out = LineReader(p.stdout)
    p.err = LineReader(p.stderr)
    return p


def finish_client(p, timeout, what, expect_rc=0):
    try:
        p.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        p.kill()
        p.wait()
        log(indent(p.out.text()) + indent(p.err.text(), '  ! '))
        fail('%s did not finish within %d s' % (what, timeout))
    out, err = p.out.text(), p.err.text()
    sys.stdout.write(indent(out))
    if err:
        sys.stdout.write(indent(err, '  ! '))
    log('  -> %s: %s' % (what, describe_rc(p.returncode)))
    if expect_rc is not None and p.returncode != expect_rc:
        fail('%s: %s, expected exit status %d' %
             (what, describe_rc(p.returncode), expect_rc))
    return out, err


def parse_enum(out):
    m = re.search(r'^devices: (\d+)$', out, re.M)
    if not m:
        fail('vk_enum printed no "devices: N" line')
    names = re.findall(r'^device: (.*)$', out, re.M)
    if len(names) != int(m.group(1)):
        fail('vk_enum: "devices: %s" but %d "device:" lines' %
             (m.group(1), len(names)))
    return names


# ---- subcommands -----------------------------------------------------------

def test_enum(fx):
    vk_enum = fx.prog('vk_enum')
    for variant in VARIANTS:
        _, out, _ = fx.run([vk_enum], fx.gpud_env(variant), label=variant[0])
        names = parse_enum(out)
        if fx.direct:
            if not names or 'llvmpipe' not in names[0]:
                fail('expected an llvmpipe device, got %r' % names)
            continue
        if len(names) != 1:
            fail('expected exactly 1 device through gpud, got %d: %r' %
                 (len(names), names))
        if 'gpud' not in names[0] or 'llvmpipe' not in names[0]:
            fail('device name %r should contain "gpud" and "llvmpipe"' %
                 names[0])
        fx.check_daemon()

    if fx.direct:
        return
    # No daemon behind the socket: zero devices, no error.
    missing = os.path.join(fx.tmp, 'no-such-dir', 'gpud.sock')
    for variant in VARIANTS:
        t0 = time.monotonic()
        _, out, _ = fx.run([vk_enum], fx.gpud_env(variant, missing),
                           timeout=60, label=variant[0] + ', no daemon')
        names = parse_enum(out)
        if names:
            fail('expected 0 devices with GPUD_SOCKET=%s, got %r' %
                 (missing, names))
        log('zero devices reported in %.2f s' % (time.monotonic() - t0))

    # Two daemons: two physical devices, each working; one of the listed
    # sockets missing changes nothing.
    second = os.path.join(fx.tmp, 'second.sock')
    cmd = [fx.args.gpud, '--socket', second, '--host-driver',
           fx.args.lavapipe_manifest] + fx.daemon_args()
    log('$ ' + ' '.join(cmd))
    with open(os.path.join(fx.tmp, 'second.log'), 'wb') as logf:
        proc = subprocess.Popen(cmd, env=fx.base_env(), stdin=subprocess.DEVNULL,
                                stdout=logf, stderr=logf)
    try:
        deadline = time.monotonic() + 10
        while not os.path.exists(second):
            if time.monotonic() > deadline or proc.poll() is not None:
                fail('the second daemon did not start')
            time.sleep(0.05)
        both = ':'.join([fx.socket, missing, second])
        _, out, _ = fx.run([vk_enum], fx.gpud_env(VARIANTS[1], both),
                           label='two daemons')
        names = parse_enum(out)
        if len(names) != 2 or not all('gpud' in n for n in names):
            fail('expected 2 gpud devices with GPUD_SOCKET=%s, got %r' % (both, names))
        # vk_compute takes the first device: list the second daemon first.
        fx.run([fx.prog('vk_compute'), '--elements', '4096'],
               fx.gpud_env(VARIANTS[1], ':'.join([second, fx.socket])),
               label='second daemon first')
        with open(os.path.join(fx.tmp, 'second.log'), errors='replace') as f:
            if not any('vk_compute' in line and 'connected' in line for line in f):
                fail('the second daemon never served vk_compute')
    finally:
        proc.send_signal(signal.SIGTERM)
        if proc.wait(timeout=10) != 0:
            fail('the second daemon did not stop cleanly')


def test_badshader(fx):
    if fx.direct:
        raise TestSkip('SPIR-V validation is gpud\'s')
    for variant in VARIANTS:
        fx.run([fx.prog('vk_badshader')], fx.gpud_env(variant), label=variant[0])
        fx.check_daemon()
    with open(fx.log_path, errors='replace') as f:
        refusals = [l for l in f if 'invalid SPIR-V' in l]
    if len(refusals) != 3 * len(VARIANTS):
        fail('expected %d "invalid SPIR-V" log lines, got %d' %
             (3 * len(VARIANTS), len(refusals)))


def test_abuse(fx):
    """Command buffers that break rules the host driver trusts (each crashes
    lavapipe used directly).  With validation off, the default, the daemon's
    own checks refuse some and the rest crash the abusing client's worker:
    either way that client, and only it, gets VK_ERROR_DEVICE_LOST; the
    server keeps its pid, a client computing beside it gets every result
    right, the next client works, and gpudctl lists each crash."""
    if fx.direct:
        raise TestSkip('these crash lavapipe used directly')
    vk_abuse = fx.prog('vk_abuse')
    _, out, _ = fx.run([vk_abuse, '--list'], fx.gpud_env(), show_output=False)
    cases = out.split()
    if not cases:
        fail('vk_abuse lists no cases')
    server_pid = fx.daemon.pid
    bystander = start_client(fx, [fx.prog('vk_compute'), '--iterations', '40'],
                             fx.gpud_env(VARIANTS[1]), label='bystander')
    pids = {}
    for case in cases:
        p = start_client(fx, [vk_abuse, case], fx.gpud_env(VARIANTS[1]), label=case)
        finish_client(p, 120, 'vk_abuse ' + case)
        pids[case] = p.pid
        fx.check_daemon()
    finish_client(bystander, 300, 'vk_compute beside the abuse')
    if fx.daemon.pid != server_pid:
        fail('the server changed pid')

    # Each abusing client ended with a reason gpudctl lists: its worker
    # crashed, or the daemon's own checks refused the command buffer.
    faults = {f['pid']: f for f in fx.gpudctl_status()['faults']}
    crashed = 0
    for case, pid in pids.items():
        reason = faults.get(pid, {}).get('reason', '')
        log('%s: %s' % (case, reason or 'no fault listed'))
        if 'killed by SIG' in reason:
            crashed += 1
        elif not reason.startswith('protocol error'):
            fail('%s (pid %d): gpudctl lists no fault for it' % (case, pid))
    if not crashed:
        fail('no case crashed its worker: the test no longer tests isolation')
    fx.run([fx.prog('vk_compute')], fx.gpud_env(), label='after the abuse')


def test_validate(fx):
    """With --validate, a call that breaks a rule reaches the application's
    own debug messenger with its VUID, and the application carries on (on
    lavapipe directly: the layer itself, loaded by the loader)."""
    env = fx.gpud_env(VARIANTS[1])
    if fx.direct:
        env['VK_INSTANCE_LAYERS'] = 'VK_LAYER_KHRONOS_validation'
    _, out, _ = fx.run([fx.prog('vk_validate')], env)
    if 'VUID-VkBufferCreateInfo-usage-requiredbitmask' not in out:
        fail('the messenger did not print the VUID')
    if fx.direct:
        return
    fx.check_daemon()
    with open(fx.log_path, errors='replace') as f:
        logged = [l for l in f if 'vk_validate' in l and 'validation:' in l]
    if not any('VUID-VkBufferCreateInfo-usage-requiredbitmask' in l for l in logged):
        fail('the daemon did not log the validation message')
    with open(fx.log_path, errors='replace') as f:
        if any('protocol error' in l for l in f):
            fail('--validate (report) disconnected a client')


def test_systemd(fx):
    """Socket activation and sd_notify, as systemd would drive them:
    systemd-socket-activate holds the listening socket and starts gpud on the
    first connection; gpud must serve that socket and report READY=1, keep
    petting the watchdog, and say STOPPING=1 on SIGTERM."""
    if fx.direct:
        raise TestSkip('socket activation is gpud\'s')
    activate = shutil.which('systemd-socket-activate')
    if not activate:
        raise TestSkip('systemd-socket-activate is not installed')
    sock = os.path.join(fx.tmp, 'activated.sock')
    notify_path = os.path.join(fx.tmp, 'notify')
    notify = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    notify.bind(notify_path)
    notify.settimeout(5)
    cmd = [activate, '--seqpacket', '-l', sock,
           '-E', 'NOTIFY_SOCKET=' + notify_path, '-E', 'WATCHDOG_USEC=200000',
           fx.args.gpud, '--host-driver', fx.args.lavapipe_manifest] + fx.daemon_args()
    log('$ ' + ' '.join(cmd))
    logf = open(os.path.join(fx.tmp, 'activated.log'), 'wb')
    proc = subprocess.Popen(cmd, env=fx.base_env(), stdin=subprocess.DEVNULL,
                            stdout=logf, stderr=logf)
    try:
        deadline = time.monotonic() + 10
        while not os.path.exists(sock):
            if time.monotonic() > deadline or proc.poll() is not None:
                fail('systemd-socket-activate did not listen on %s' % sock)
            time.sleep(0.05)
        # The first client starts the daemon on the socket systemd holds.
        _, out, _ = fx.run([fx.prog('vk_enum')], fx.gpud_env(None, sock),
                           label='socket-activated')
        names = parse_enum(out)
        if len(names) != 1 or 'gpud' not in names[0]:
            fail('expected one gpud device through the activated socket, got %r'
                 % names)
        seen = set()
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline and not {'READY=1', 'WATCHDOG=1'} <= seen:
            try:
                seen.update(notify.recv(4096).decode().split('\n'))
            except socket.timeout:
                break
        log('notifications: %s' % sorted(seen))
        for want in ('READY=1', 'WATCHDOG=1'):
            if want not in seen:
                fail('gpud did not send %s' % want)
        proc.send_signal(signal.SIGTERM)
        rc = proc.wait(timeout=10)
        while 'STOPPING=1' not in seen:
            try:
                seen.update(notify.recv(4096).decode().split('\n'))
            except socket.timeout:
                fail('gpud did not send STOPPING=1')
        if rc != 0:
            fail('socket-activated gpud exited with %s' % describe_rc(rc))
        log('socket-activated gpud: served, READY=1, WATCHDOG=1, STOPPING=1')
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        logf.close()
        notify.close()


def test_compute(fx):
    vk_compute = fx.prog('vk_compute')
    name = 'llvmpipe' if fx.direct else 'gpud'
    for variant in VARIANTS:
        fx.run([vk_compute, '--iterations', '2'], fx.gpud_env(variant),
               label=variant[0])
        fx.check_daemon()
    # --device picks by name.
    fx.run([vk_compute, '--device', name], fx.gpud_env(VARIANTS[0]),
           label=VARIANTS[0][0])
    fx.run([vk_compute, '--device', 'no-such-device'],
           fx.gpud_env(VARIANTS[0]), expect_rc=1, label='wrong name')
    fx.check_daemon()


def read_pam(path):
    with open(path, 'rb') as f:
        data = f.read()
    end = data.find(b'ENDHDR\n')
    if not data.startswith(b'P7\n') or end < 0:
        fail('%s is not a PAM file' % path)
    header = dict(line.split(' ', 1) for line in
                  data[3:end].decode().splitlines() if ' ' in line)
    return (int(header['WIDTH']), int(header['HEIGHT']),
            int(header['DEPTH']), data[end + 7:])


def compare_images(path_a, label_a, path_b, label_b):
    with open(path_a, 'rb') as fa, open(path_b, 'rb') as fb:
        a, b = fa.read(), fb.read()
    if a == b:
        log('%s and %s are identical (%d bytes)' % (label_a, label_b, len(a)))
        return
    wa, ha, da, pa = read_pam(path_a)
    wb, hb, db, pb = read_pam(path_b)
    if (wa, ha, da) != (wb, hb, db) or len(pa) != len(pb):
        fail('%s is %dx%dx%d, %s is %dx%dx%d' %
             (label_a, wa, ha, da, label_b, wb, hb, db))
    first, count = None, 0
    for i in range(0, len(pa), da):
        if pa[i:i + da] != pb[i:i + da]:
            count += 1
            if first is None:
                first = i // da
    x, y = first % wa, first // wa
    half = 'render-pass image' if y < ha // 2 else 'dynamic-rendering image'
    fail('%s and %s differ in %d pixels; first at (%d,%d) of the %s '
         '(row %d): %s %s, %s %s' %
         (label_a, label_b, count, x, y, half, y % (ha // 2), label_a,
          tuple(pa[first * da:(first + 1) * da]), label_b,
          tuple(pb[first * da:(first + 1) * da])))


def test_render(fx):
    vk_render = fx.prog('vk_render')
    outputs = []
    for variant in VARIANTS:
        tag = variant[0].replace('=', '-')
        direct = os.path.join(fx.tmp, 'render-lavapipe-%s.pam' % tag)
        gpud = os.path.join(fx.tmp, 'render-gpud-%s.pam' % tag)
        fx.run([vk_render, '--output', direct], fx.direct_env(variant),
               label='lavapipe, ' + variant[0])
        fx.run([vk_render, '--output', gpud], fx.gpud_env(variant),
               label=('lavapipe' if fx.direct else 'gpud') + ', ' +
               variant[0])
        fx.check_daemon()
        compare_images(direct, 'lavapipe output',
                       gpud, ('lavapipe' if fx.direct else 'gpud') +
                       ' output')
        outputs.append((direct, 'lavapipe output (%s)' % variant[0]))
    compare_images(outputs[0][0], outputs[0][1], outputs[1][0], outputs[1][1])


def test_sync(fx):
    vk_sync = fx.prog('vk_sync')
    for variant in VARIANTS:
        fx.run([vk_sync], fx.gpud_env(variant), label=variant[0])
        fx.check_daemon()


def test_lost(fx):
    vk_lost = fx.prog('vk_lost')
    if fx.direct:
        for variant in VARIANTS:
            _, out, _ = fx.run([vk_lost, '--selftest-timeout-ms', '300'],
                               fx.direct_env(variant), label=variant[0])
            if 'vkWaitForFences: VK_TIMEOUT' not in out:
                fail('vk_lost self-test did not time out')
        return

    for variant in VARIANTS:
        p = start_client(fx, [vk_lost], fx.gpud_env(variant),
                         label=variant[0])
        if not p.out.wait_for('WAITING', 60):
            p.kill()
            finish_client(p, 10, 'vk_lost', expect_rc=None)
            fail('vk_lost never printed WAITING')
        time.sleep(0.2)   # let it block in vkWaitForFences
        if p.poll() is not None:
            finish_client(p, 1, 'vk_lost', expect_rc=None)
            fail('vk_lost exited before the daemon was killed')
        log('killing gpud (pid %d) with SIGKILL' % fx.daemon.pid)
        t_kill = fx.kill_daemon()
        try:
            p.wait(timeout=2.0)
        except subprocess.TimeoutExpired:
            p.kill()
            finish_client(p, 10, 'vk_lost', expect_rc=None)
            fail('vk_lost did not exit within 2 s of the daemon\'s death')
        exit_s = time.monotonic() - t_kill
        out, _ = finish_client(p, 1, 'vk_lost')
        m = re.search(r'^vkWaitForFences: (\S+) elapsed_ms=([\d.]+)$', out,
                      re.M)
        if not m:
            fail('vk_lost printed no vkWaitForFences line')
        log('vk_lost: vkWaitForFences gave %s after %s ms in the call; the '
            'program exited %.0f ms after the kill' %
            (m.group(1), m.group(2), exit_s * 1000))

        # A restarted daemon serves new clients.
        fx.start_daemon()
        _, out, _ = fx.run([fx.prog('vk_enum')], fx.gpud_env(variant),
                           label=variant[0] + ', restarted daemon')
        if len(parse_enum(out)) != 1:
            fail('the restarted daemon serves no device')


def wait_for_cleanup(fx, gone_pids, baseline, timeout=5.0):
    """Polls gpudctl until no client of gone_pids remains and the daemon
    holds no more objects and memory than at baseline."""
    deadline = time.monotonic() + timeout
    while True:
        status = fx.gpudctl_status()
        left = [c for c in status['clients'] if c['pid'] in gone_pids]
        extra = (status['objects'] - baseline['objects'],
                 status['memory_bytes'] - baseline['memory_bytes'])
        sums = (sum(c['objects'] for c in status['clients']),
                sum(c['memory_bytes'] for c in status['clients']))
        clean = (not left and extra[0] <= 0 and extra[1] <= 0 and
                 sums == (status['objects'], status['memory_bytes']))
        if clean:
            return status
        if time.monotonic() > deadline:
            fail('after %.0f s the daemon still holds dead clients\' state: '
                 'clients %r remain, %d objects and %d bytes more than '
                 'before, per-client sums %r vs totals %r\nstatus: %s' %
                 (timeout, left, extra[0], extra[1], sums,
                  (status['objects'], status['memory_bytes']),
                  json.dumps(status)))
        time.sleep(0.2)


def test_multiclient(fx):
    vk_compute = fx.prog('vk_compute')
    pids = []

    # Two clients at once, one per variant.
    clients = [start_client(fx, [vk_compute, '--iterations', '3'],
                            fx.gpud_env(v), label=v[0]) for v in VARIANTS]
    for i, p in enumerate(clients):
        finish_client(p, 300, 'concurrent client %d' % i)
        pids.append(p.pid)
    fx.check_daemon()

    baseline = None
    if not fx.direct:
        baseline = wait_for_cleanup(fx, set(pids),
                                    {'objects': 1 << 62,
                                     'memory_bytes': 1 << 62})
        log('baseline status: %s' % json.dumps(baseline))

    # A client killed in the middle of its work.
    victim = start_client(fx, [vk_compute, '--iterations', '1000',
                               '--print-ready'],
                          fx.gpud_env(VARIANTS[0]), label=VARIANTS[0][0])
    if not victim.out.wait_for('READY', 60):
        victim.kill()
        finish_client(victim, 10, 'victim', expect_rc=None)
        fail('victim client never printed READY')
    time.sleep(0.5)
    if victim.poll() is not None:
        finish_client(victim, 1, 'victim', expect_rc=None)
        fail('victim client finished before it could be killed')
    if not fx.direct:
        status = fx.gpudctl_status()
        mine = [c for c in status['clients'] if c['pid'] == victim.pid]
        if len(mine) != 1 or mine[0]['objects'] <= 0:
            fail('gpudctl status does not list the running client (pid %d) '
                 'with objects: %s' % (victim.pid, json.dumps(status)))
        log('victim in gpudctl status: %s' % json.dumps(mine[0]))
    log('killing victim client pid %d with SIGKILL' % victim.pid)
    os.kill(victim.pid, signal.SIGKILL)
    finish_client(victim, 10, 'victim', expect_rc=-signal.SIGKILL)
    pids.append(victim.pid)
    fx.check_daemon()

    # The next client is not disturbed.
    after = start_client(fx, [vk_compute], fx.gpud_env(VARIANTS[1]),
                         label=VARIANTS[1][0])
    finish_client(after, 300, 'client after the kill')
    pids.append(after.pid)
    fx.check_daemon()

    if not fx.direct:
        status = wait_for_cleanup(fx, set(pids), baseline)
        log('final status: %s' % json.dumps(status))
        fx.check_daemon()
        _, out, _ = fx.run([fx.prog('vk_enum')], fx.gpud_env(VARIANTS[0]))
        if len(parse_enum(out)) != 1:
            fail('the daemon no longer serves its device')


def find_vulkaninfo():
    path = shutil.which('vulkaninfo')
    if not path:
        raise TestSkip('vulkaninfo not installed')
    return path


def vulkaninfo_json(fx, vulkaninfo, env, tag):
    """`vulkaninfo --json` writes VP_VULKANINFO_<name>_<version>.json into
    its working directory (vulkaninfo 1.3.239); returns the loaded file."""
    workdir = os.path.join(fx.tmp, 'vulkaninfo-' + tag)
    os.mkdir(workdir)
    log('$ [%s] (cd %s && vulkaninfo --json)' % (tag, workdir))
    p = subprocess.run([vulkaninfo, '--json'], env=env, cwd=workdir,
                       stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, timeout=180)
    if p.returncode != 0:
        fail('vulkaninfo --json (%s): %s\n%s' %
             (tag, describe_rc(p.returncode),
              p.stderr.decode(errors='replace')))
    files = [f for f in os.listdir(workdir) if f.endswith('.json')]
    if len(files) != 1:
        # Older/newer vulkaninfo versions print to stdout instead.
        try:
            return json.loads(p.stdout)
        except ValueError:
            fail('vulkaninfo --json (%s) wrote %r and no JSON on stdout' %
                 (tag, files))
    log('  -> %s' % files[0])
    with open(os.path.join(workdir, files[0])) as f:
        return json.load(f)


def device_caps(profile, tag):
    try:
        return profile['capabilities']['device']
    except (KeyError, TypeError):
        fail('vulkaninfo JSON (%s) has no capabilities.device' % tag)


def diff_values(path, a, b, out):
    """Appends (path, a, b) for every leaf where a and b differ."""
    if isinstance(a, dict) and isinstance(b, dict):
        for key in list(a) + [k for k in b if k not in a]:
            diff_values('%s.%s' % (path, key), a.get(key, '<missing>'),
                        b.get(key, '<missing>'), out)
    elif a != b:
        out.append((path, a, b))


def show_value(v, limit=300):
    text = json.dumps(v) if not isinstance(v, str) else v
    return text if len(text) <= limit else text[:limit] + '...'


def show_diff(a, b):
    if isinstance(a, list) and isinstance(b, list):
        only_a = [x for x in a if x not in b]
        only_b = [x for x in b if x not in a]
        if only_a or only_b:
            return 'only lavapipe: %s; only gpud: %s' % (
                show_value(only_a), show_value(only_b))
    return 'lavapipe: %s; gpud: %s' % (show_value(a), show_value(b))


def test_vulkaninfo(fx):
    vulkaninfo = find_vulkaninfo()
    other = 'lavapipe-again' if fx.direct else 'gpud'

    direct = device_caps(vulkaninfo_json(fx, vulkaninfo, fx.direct_env(),
                                         'lavapipe'), 'lavapipe')
    served = device_caps(vulkaninfo_json(fx, vulkaninfo, fx.gpud_env(),
                                         other), other)
    fx.check_daemon()

    diffs = []
    for group, names in (('features', COMPARED_FEATURES),
                         ('properties', COMPARED_PROPERTIES)):
        for name in names:
            diff_values('%s.%s' % (group, name),
                        direct.get(group, {}).get(name, '<missing>'),
                        served.get(group, {}).get(name, '<missing>'), diffs)
    # Per format, the core structures; an extension's structure (such as
    # VkSubpassResolvePerformanceQueryEXT) is printed only where the
    # extension is exposed.
    def core_formats(caps):
        return {fmt: {k: v for k, v in props.items() if k in COMPARED_FORMAT_STRUCTS}
                for fmt, props in caps.get('formats', {}).items()}
    diff_values('formats', core_formats(direct), core_formats(served), diffs)

    unexpected = []
    for path, a, b in diffs:
        rule = INTENDED_DIFFERENCES.get(path)
        if rule and rule[1](a, b):
            log('intended: %s: %s (%s)' % (path, show_diff(a, b), rule[0]))
        elif rule:
            log('DIFF: %s: %s (allowed only as: %s)' %
                (path, show_diff(a, b), rule[0]))
            unexpected.append(path)
        else:
            log('DIFF: %s: %s' % (path, show_diff(a, b)))
            unexpected.append(path)

    # Shown, not checked: extension lists and queue families may
    # legitimately differ while gpud grows.
    notes = []
    for section in ('extensions', 'queueFamiliesProperties'):
        diff_values(section, direct.get(section), served.get(section), notes)
    for path, a, b in notes:
        log('note: %s: %s' % (path, show_diff(a, b)))

    nformats = len(direct.get('formats', {}))
    log('compared %d feature/property structures and %d formats: '
        '%d differences, %d unexpected' %
        (len(COMPARED_FEATURES) + len(COMPARED_PROPERTIES), nformats,
         len(diffs), len(unexpected)))
    if nformats == 0:
        fail('vulkaninfo JSON for lavapipe lists no formats')
    if unexpected:
        fail('%d unexpected differences between lavapipe and %s (listed '
             'above as DIFF)' % (len(unexpected), other))

    # Plain text output and the summary run cleanly.
    for variant in VARIANTS:
        for extra in ([], ['--summary']):
            _, out, _ = fx.run([vulkaninfo] + extra, fx.gpud_env(variant),
                               label=variant[0], show_output=False)
            if not fx.direct and 'gpud' not in out:
                fail('`%s` output does not mention gpud' %
                     ' '.join(['vulkaninfo'] + extra))
        fx.check_daemon()


# hostile_client's cases: name -> (client name in the daemon's log, None
# where no Hello got through; what the one "protocol error" or "refused" line
# the daemon logs for the client must say).
HOSTILE_CASES = {
    'garbage': (None, r'protocol error|refused'),
    'garbage-after-hello': ('hostile-garbage-after-hello',
                            r'protocol error'),
    'garbage-control': (None, r'first message is not a Hello'),
    'not-hello': (None, r'first message is not a Hello'),
    'version': ('hostile-version', r'protocol version mismatch'),
    'hash': ('hostile-hash', r'command table mismatch'),
    'role': ('hostile-role', r'unknown role'),
    'handshake-fds': (None, r'file descriptors in the handshake'),
    'unknown-id': ('hostile-unknown-id',
                   r'vkEnumeratePhysicalDevices: unknown object id'),
    'unregistered-pdev': ('hostile-unregistered-pdev',
                          r'vkCreateDevice: unknown object id'),
    'foreign': ('hostile-foreign-B',
                r'vkGetPhysicalDeviceProperties: unknown object id'),
    'count': ('hostile-count', r'element count exceeds the command'),
    'size': ('hostile-size', r'command size \d+ with \d+ bytes left'),
    'size-small': ('hostile-size-small', r'command size 4 with'),
    'trailing': ('hostile-trailing', r'trailing bytes after the command'),
    'wrong-type': ('hostile-wrong-type', r'object of the wrong type'),
    'null-handle': ('hostile-null-handle', r'null handle'),
    'reused-id': ('hostile-reused-id', r'bad id for a new object'),
    'stype': ('hostile-stype', r'sType not allowed in the pNext chain'),
    'fds': ('hostile-fds', r'unexpected file descriptors'),
    'unknown-op': ('hostile-unknown-op', r'protocol error: unknown op \d+'),
    'op-zero': ('hostile-op-zero', r'protocol error: unknown op 0\b'),
    'op-reply': ('hostile-op-reply', r'protocol error: unknown op 4294967295\b'),
    'control-request': ('hostile-control-request', r'bad control message'),
    'control-stream': ('hostile-control-stream',
                       r'commands on a control connection'),
    'queue-index': ('hostile-queue-index', r'no such queue'),
    'bind-overflow': ('hostile-bind-overflow', r'does not fit in its memory'),
}

LOG_CLIENT_LINE = re.compile(
    r'^(?:<\d>)?client (\d+) \(pid (\d+), (.*?)\): (.*)$')


def hostile_log_lines(fx):
    """(pid, client name, message) of every "protocol error" or "refused"
    line in the daemon's log."""
    with open(fx.log_path, 'rb') as f:
        text = f.read().decode(errors='replace')
    found = []
    for line in text.splitlines():
        m = LOG_CLIENT_LINE.match(line)
        if m and (m.group(4).startswith('protocol error') or
                  m.group(4).startswith('refused')):
            found.append((int(m.group(2)), m.group(3), m.group(4)))
    return found


def test_hostile(fx):
    if fx.direct:
        raise TestSkip('hostile needs a daemon')
    hostile = fx.prog('hostile_client')
    _, out, _ = fx.run([hostile, '--list'], fx.base_env(), timeout=10,
                       show_output=False)
    listed = out.split()
    if sorted(listed) != sorted(HOSTILE_CASES):
        fail('hostile_client --list %r does not match HOSTILE_CASES %r' %
             (listed, sorted(HOSTILE_CASES)))

    failures = []
    pids = {}
    for case in listed:
        p = start_client(fx, [hostile, fx.socket, case], fx.base_env(),
                         label=case)
        try:
            finish_client(p, 60, 'hostile_client ' + case)
        except TestFailure as e:
            failures.append('%s: %s' % (case, e))
        pids[case] = p.pid
        fx.check_daemon()

    # Each bad client got exactly one line saying why.
    lines = hostile_log_lines(fx)
    for case in listed:
        name, reason = HOSTILE_CASES[case]
        mine = [l for l in lines if l[0] == pids[case]]
        if len(mine) != 1:
            failures.append('%s (pid %d): %d "protocol error"/"refused" log '
                            'lines, expected 1: %r' %
                            (case, pids[case], len(mine), mine))
            continue
        _, logged_name, msg = mine[0]
        if name is not None and logged_name != name:
            failures.append('%s: the log line names client "%s", expected '
                            '"%s": %s' % (case, logged_name, name, msg))
        if not re.search(reason, msg):
            failures.append('%s: the log line does not match /%s/: %s' %
                            (case, reason, msg))
        log('log: %s: %s' % (case, msg))

    # Their objects are gone, and the daemon still serves a real client.
    status = wait_for_cleanup(fx, set(pids.values()),
                              {'objects': 0, 'memory_bytes': 0})
    log('status after the hostile clients: %s' % json.dumps(status))
    fx.run([fx.prog('vk_compute')], fx.gpud_env(VARIANTS[0]),
           label=VARIANTS[0][0])
    fx.check_daemon()

    if failures:
        fail('%d of %d hostile cases failed:\n%s' %
             (len(failures), len(listed), indent('\n'.join(failures))))
    log('all %d hostile cases disconnected and logged' % len(listed))


SUBCOMMANDS = {
    'enum': test_enum,
    'compute': test_compute,
    'systemd': test_systemd,
    'abuse': test_abuse,
    'badshader': test_badshader,
    'render': test_render,
    'sync': test_sync,
    'lost': test_lost,
    'multiclient': test_multiclient,
    'vulkaninfo': test_vulkaninfo,
    'hostile': test_hostile,
    'validate': test_validate,
}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--gpud', help='the daemon executable')
    ap.add_argument('--gpudctl', help='the gpudctl executable')
    ap.add_argument('--icd-manifest', help="gpud's ICD manifest (build dir)")
    ap.add_argument('--lavapipe-manifest', required=True,
                    help="lavapipe's ICD manifest")
    ap.add_argument('--bindir', required=True,
                    help='directory of the test programs')
    ap.add_argument('--direct', action='store_true',
                    help='no daemon: run everything on lavapipe directly')
    ap.add_argument('subcommand', choices=sorted(SUBCOMMANDS))
    args = ap.parse_args()
    # Clients run in the temporary directory: make every path absolute.
    for opt in ('gpud', 'gpudctl', 'icd_manifest', 'lavapipe_manifest',
                'bindir'):
        if getattr(args, opt):
            setattr(args, opt, os.path.abspath(getattr(args, opt)))
    if not args.direct:
        for opt in ('gpud', 'gpudctl', 'icd_manifest'):
            if not getattr(args, opt):
                ap.error('--%s is required without --direct' %
                         opt.replace('_', '-'))
    for path in filter(None, (args.lavapipe_manifest, args.icd_manifest)):
        if not os.path.exists(path):
            log('FAIL: manifest %s does not exist' % path)
            return 1

    fx = Fixture(args)
    failed = True
    try:
        log('temporary directory: %s' % fx.tmp)
        fx.start_daemon()
        SUBCOMMANDS[args.subcommand](fx)
        fx.check_daemon()
        failed = False
    except TestSkip as e:
        failed = False
        log('SKIP: %s' % e)
        fx.close(failed)
        return 77
    except TestFailure as e:
        log('FAIL: %s: %s' % (args.subcommand, e))
    except Exception:
        import traceback
        traceback.print_exc()
        log('FAIL: %s: internal error in the test script' % args.subcommand)
    try:
        fx.close(failed)
    except TestFailure as e:
        log('FAIL: %s' % e)
        failed = True
    if not failed and not fx.daemon_ok:
        log('FAIL: %s: gpud did not stop cleanly' % args.subcommand)
        failed = True
    if not failed:
        log('PASS: %s%s' % (args.subcommand,
                            ' (lavapipe directly)' if args.direct else ''))
    return 1 if failed else 0


if __name__ == '__main__':
    sys.exit(main())
