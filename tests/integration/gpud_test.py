#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Integration tests: Vulkan programs through a private gpud.

Usage (as meson runs it):

  gpud_test.py --gpud PATH --gpudctl PATH --icd-manifest PATH \\
               --lavapipe-manifest PATH --bindir PATH SUBCOMMAND

  gpud_test.py --direct --lavapipe-manifest PATH --bindir PATH SUBCOMMAND

SUBCOMMAND is one of: enum, compute, render, sync, extensions, external, lost,
multiclient, vulkaninfo, hostile. --bindir holds the test programs (vk_enum,
vk_compute, hostile_client, ...).

The fixture makes a temporary directory, sets XDG_RUNTIME_DIR to it, starts
`gpud --socket TMP/gpud.sock --host-driver LAVAPIPE_MANIFEST` (output to
TMP/gpud.log), waits until the socket accepts connections, and runs clients
with VK_ICD_FILENAMES=ICD_MANIFEST and GPUD_SOCKET=TMP/gpud.sock. On exit it
stops the daemon (SIGTERM, SIGKILL after 5 s) and prints the daemon's log if
the test failed. Programs run both with Mesa's device-select layer active and
with NODEVICE_SELECT=1.

--direct runs the same subcommands with no daemon, every client on lavapipe
directly: it checks the test programs and this script themselves (lost runs
vk_lost's self-test mode, multiclient skips the gpudctl checks, external
skips its forged fds, hostile is skipped).

Exit status: 0 pass, 1 fail, 77 skip (meson's convention).
Set GPUD_TEST_KEEP=1 to keep the temporary directory.
"""

import argparse
import contextlib
import difflib
import errno
import json
import os
import pwd
import re
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time

# Differences between `vulkaninfo --json` on lavapipe directly and through
# gpud that are intended. Key: the field's path as printed in the diff; value:
# (reason, check(direct_value, gpud_value) -> bool). Any other difference in
# the compared sections fails the vulkaninfo test.
def capped_api_version(direct, gpud):
    """gpud carries Vulkan 1.3: a later host version is 1.3 through gpud."""
    return isinstance(direct, int) and isinstance(gpud, int) and direct > gpud and \
        (gpud >> 22, (gpud >> 12) & 0x3ff) == (1, 3)


INTENDED_DIFFERENCES = {
    'properties.VkPhysicalDeviceProperties.apiVersion': (
        'capped at 1.3, which gpud carries', capped_api_version),
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
    # the recording cases also meet the replay threads (CI's two CPUs have
    # none by default)
    'hostile': ['--replay-threads', '2'],
    # every case crashes a worker: none may be refused for crashing before
    'abuse': ['--crash-limit', '0', '--isolation=process'],
    'validate': ['--validate'],
    # what gpud passes on (names, tags, labels) must not upset the layer
    'debugnames': ['--validate'],
    # a program whose workers crashed twice is refused for a minute
    # back-off from 100 ms up to 400 ms: 30 crashes in a row stay quick
    'crash': ['--crash-backoff', '100', '--crash-backoff-max', '400', '--isolation=process'],
    # the drain of a daemon whose workers end with it
    'teardown': ['--drain-timeout', '2s', '--restart-grace', '0', '--isolation=process'],
    # a worker whose server does not come back within 300 ms ends
    'lost': ['--restart-grace', '300'],
    'limits': ['--client-memory', '256M', '--uid-memory', '384M',
               '--client-objects', '20000', '--send-timeout', '1s'],
    'connections': ['--handshake-timeout', '2s', '--uid-connections', '64',
                    '--group', '4242'],
    'access': ['--group', '4242', '--isolation=process'],
    'races': ['--isolation=process'],
    # pipelines not made must leave the table: more answers than objects
    'pipelines': ['--client-objects', '20000'],
    'killstorm': ['--crash-limit', '0', '--isolation=process'],
}

SOURCE_DIR = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# A group and users that need not exist, for the access tests (root only).
TEST_GID = 4242
TEST_UID = 4243

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
        self.extra_args = []   # more daemon options (a test's own)
        self.daemon_env = {}   # more of the daemon's environment (a test's own)
        self.daemon_prefix = []  # what runs the daemon (setpriv ...; a test's own)
        self.host_driver = args.lavapipe_manifest  # the daemon's --host-driver
        # the daemon's caches and state (--cache-dir, --state-dir), kept
        # across its restarts: directories of their own, which workers of
        # other uids can reach (the cache) as under /var/cache
        self.cache_dir = tempfile.mkdtemp(prefix='gpud-test-cache-')
        os.chmod(self.cache_dir, 0o755)
        self.state_dir = tempfile.mkdtemp(prefix='gpud-test-state-')
        os.chmod(self.state_dir, 0o755)   # (as /var/lib/gpud)

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
        # Sanitizer runs: the host driver's own WSI leaks an xcb reply when
        # a window goes away (Mesa 25), and its stack ends in libxcb, which
        # the fast unwinder cannot leave: a direct client, which never
        # loads gpud's code, has libxcb's leaks suppressed as well
        m = re.search(r'suppressions=([^:]+)', env.get('LSAN_OPTIONS', ''))
        if m:
            direct = os.path.join(self.tmp, 'lsan-direct.supp')
            if not os.path.exists(direct):
                with open(m.group(1)) as f, open(direct, 'w') as out:
                    out.write(f.read() + '\nleak:libxcb.so\n')
            env['LSAN_OPTIONS'] = env['LSAN_OPTIONS'].replace(m.group(0),
                                                              'suppressions=' + direct)
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
        env = dict(self.base_env(), **self.daemon_env)
        served = self.log_count('serving ')
        cmd = self.daemon_prefix + [self.args.gpud, '--socket', self.socket,
                                    '--host-driver', self.host_driver] + self.daemon_args()
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
            # serving: its first worker has loaded the host driver
            if self.socket_accepts() and self.log_count('serving ') > served:
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
        args = ['--user', self.worker_user()] if self.worker_user() else []
        args += ['--cache-dir', self.cache_dir, '--state-dir', self.state_dir]
        args += os.environ.get('GPUD_TEST_DAEMON_ARGS', '').split()
        return (args + DAEMON_ARGS.get(self.args.subcommand, []) + self.extra_args +
                list(extra))

    def worker_user(self):
        """The user a root daemon runs its workers as: gpud where it
        exists, else nobody; None when not root."""
        if os.geteuid() != 0:
            return None
        try:
            pwd.getpwnam('gpud')
            return 'gpud'
        except KeyError:
            return 'nobody'

    def log_count(self, text):
        """Lines of the daemon's log (of every start) that say text."""
        if not os.path.exists(self.log_path):
            return 0
        with open(self.log_path, errors='replace') as f:
            return sum(text in line for line in f)

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
                for d in (self.tmp, self.cache_dir, self.state_dir):
                    shutil.rmtree(d, ignore_errors=True)

    # -- programs --

    def prog(self, name):
        path = os.path.join(self.args.bindir, name)
        if not os.access(path, os.X_OK):
            fail('test program %s not found' % path)
        return path

    def run(self, argv, env, timeout=180, expect_rc=0, label='',
            show_output=True, input=None):
        """Runs a program to completion (input, bytes, on its stdin);
        checks its exit status."""
        shown = ' '.join(argv)
        log('$ %s%s' % ('[%s] ' % label if label else '', shown))
        t0 = time.monotonic()
        try:
            p = subprocess.run(argv, env=env, cwd=self.tmp,
                               stdin=subprocess.DEVNULL if input is None else None,
                               input=input,
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


def proc_status(pid):
    """(rss kB, threads, fds, cpu seconds) of a live process."""
    rss = threads = 0
    with open('/proc/%d/status' % pid) as f:
        for line in f:
            if line.startswith('VmRSS:'):
                rss = int(line.split()[1])
            elif line.startswith('Threads:'):
                threads = int(line.split()[1])
    fds = len(os.listdir('/proc/%d/fd' % pid))
    with open('/proc/%d/stat' % pid) as f:
        fields = f.read().rsplit(')', 1)[1].split()
    cpu = (int(fields[11]) + int(fields[12])) / os.sysconf('SC_CLK_TCK')
    return rss, threads, fds, cpu


def children(pid):
    """Pids of pid's child processes (a daemon's workers)."""
    found = []
    for entry in os.listdir('/proc'):
        if not entry.isdigit():
            continue
        try:
            with open('/proc/%s/stat' % entry) as f:
                fields = f.read().rsplit(')', 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            found.append(int(entry))
    return found


def system_python():
    """A Python every user may run (sys.executable may be in root's home)."""
    return '/usr/bin/python3' if os.access('/usr/bin/python3', os.X_OK) else sys.executable


def as_user(uid, gid, groups):
    """preexec_fn that makes a child process run as another user."""
    def switch():
        os.setgroups(groups)
        os.setgid(gid)
        os.setuid(uid)
    return switch


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

    def wait_for_prefix(self, prefix, timeout, start=0):
        """The first line (from line start on) that starts with prefix, once
        read; None when the stream ended or timeout seconds passed first."""
        deadline = time.monotonic() + timeout
        with self.cond:
            while True:
                for line in self.lines[start:]:
                    if line.startswith(prefix):
                        return line
                left = deadline - time.monotonic()
                if self.closed or left <= 0:
                    return None
                self.cond.wait(left)

    def text(self):
        self.thread.join(timeout=5)
        with self.cond:
            return '\n'.join(self.lines)


def start_client(fx, argv, env, label='', stdin=subprocess.DEVNULL):
    log('$ %s%s &' % ('[%s] ' % label if label else '', ' '.join(argv)))
    p = subprocess.Popen(argv, env=env, cwd=fx.tmp, stdin=stdin,
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

    # A device made and destroyed again and again leaves nothing mapped
    # behind (the completion page of each, say).
    _, out, _ = fx.run([vk_enum, '--devices', '30'], fx.gpud_env(VARIANTS[1]),
                       label='30 devices', show_output=False)
    m = re.search(r'^mappings: (\d+) (\d+)$', out, re.M)
    if not m:
        fail('vk_enum --devices printed no mappings')
    first, last = int(m.group(1)), int(m.group(2))
    log('30 devices made and destroyed: %d mappings after the first, %d after the last'
        % (first, last))
    # (the allocator maps and unmaps memory of its own: AddressSanitizer's,
    # with a small quarantine, a few mappings more or less from run to run;
    # one left behind by each device would be 29 more)
    if last > first + 10:
        fail('each device destroyed leaves mappings behind: %d after the first, %d after 30'
             % (first, last))

    if fx.direct:
        return
    # Instances one after another reuse the first one's connection (and
    # worker); the connection left waits 2 s, and meanwhile nothing of the
    # ICD's runs in the process.
    env = fx.gpud_env(VARIANTS[1])
    env['GPUD_DEBUG'] = 'init'
    _, out, err = fx.run([vk_enum, '--instances', '3', '--linger', '2500'], env,
                         label='3 instances', show_output=False)
    listed = re.findall(r'^devices: (\d+)$', out, re.M)
    reused = err.count('reusing the connection')
    closed = err.count('closing the idle connection')
    m = re.search(r'^linger cpu: (\d+) ms$', out, re.M)
    log('3 instances: devices %s, %d reused, %d closed, %s' %
        (listed, reused, closed, m.group(0) if m else 'no linger line'))
    if listed != ['1', '1', '1'] or reused != 2 or closed != 1:
        fail('3 instances one after another: devices %s, the connection reused %d times '
             'and closed %d times (expected 1 device each, 2 and 1)' % (listed, reused, closed))
    if not m or int(m.group(1)) > 500:
        fail('a process whose instances are gone spent %s of CPU in 2.5 s (at most 500 ms)' %
             (m.group(1) + ' ms' if m else '?'))
    fx.check_daemon()

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


@contextlib.contextmanager
def strict_daemon(fx, options):
    """A second daemon beside the test's, on lavapipe with these options:
    yields its socket and its log's path once it listens; SIGTERM after."""
    sock = os.path.join(fx.tmp, 'strict.sock')
    logp = os.path.join(fx.tmp, 'strict.log')
    cmd = [fx.args.gpud, '--socket', sock, '--host-driver', fx.args.lavapipe_manifest] + options
    log('$ ' + ' '.join(cmd) + ' &')
    with open(logp, 'wb') as logf:
        d = subprocess.Popen(cmd, env=fx.base_env(), stdout=logf, stderr=logf,
                             stdin=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 10
        while not os.path.exists(sock):
            if time.monotonic() > deadline or d.poll() is not None:
                fail('the strict daemon did not start')
            time.sleep(0.05)
        yield sock, logp
    finally:
        d.send_signal(signal.SIGTERM)
        d.wait(timeout=10)


def test_badshader(fx):
    """Invalid SPIR-V: by default gpud reports it (log, the application's
    messenger) and the host driver decides, as it would directly; the
    SPIR-V Zink writes (SampleId without SampleRateShading, a demote without
    its capability) renders the pixels the host driver renders.  With
    --spirv=strict the module is refused with VK_ERROR_INVALID_SHADER_NV."""
    if fx.direct:
        fx.run([fx.prog('vk_badshader'), '--expect', 'direct'], fx.gpud_env())
        fx.run([fx.prog('vk_zinkspirv'), '--reports', '0'], fx.gpud_env())
        return
    expected = 0
    for variant in VARIANTS:
        fx.run([fx.prog('vk_badshader')], fx.gpud_env(variant), label=variant[0])
        _, out, _ = fx.run([fx.prog('vk_zinkspirv')], fx.gpud_env(variant), label=variant[0])
        # 3 from vk_badshader, one a shader from vk_zinkspirv (a third
        # where code chained to a stage is carried)
        expected += 3 + int(re.search(r'(\d+) reports of invalid SPIR-V', out).group(1))
        fx.check_daemon()
    with open(fx.log_path, errors='replace') as f:
        reports = [l for l in f if 'invalid SPIR-V (passed to the host driver)' in l]
    if len(reports) != expected:
        fail('expected %d "invalid SPIR-V (passed to the host driver)" log lines, got %d' %
             (expected, len(reports)))

    # --spirv=strict: refused, reported as an error, the client carries on
    with strict_daemon(fx, ['--spirv=strict'] + fx.daemon_args()) as (sock, logp):
        _, out, _ = fx.run([fx.prog('vk_badshader'), '--expect', 'strict'],
                           fx.gpud_env(VARIANTS[1], sock), label='--spirv=strict')
        # three modules, and a shader object where the device has them
        expected = 3 + ('noise as a shader object: VK_ERROR_INVALID_SHADER_NV' in out)
        with open(logp, errors='replace') as f:
            refused = [l for l in f if 'invalid SPIR-V (refused: --spirv=strict)' in l]
        if len(refused) != expected:
            fail('expected %d "refused: --spirv=strict" log lines, got %d' %
                 (expected, len(refused)))


def test_abuse(fx):
    """Command buffers that break rules the host driver trusts (each crashes
    lavapipe used directly).  With validation off, the default, the daemon's
    own checks refuse some and the rest crash the abusing client's worker (or,
    on a GPU, fault on the GPU and lose the device there): either way that
    client, and only it, gets VK_ERROR_DEVICE_LOST; the
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
    until = os.path.join(fx.tmp, 'abuse-done')
    bystander = start_client(fx, [fx.prog('vk_compute'), '--iterations', '2', '--elements',
                                  '65536', '--until', until],
                             fx.gpud_env(VARIANTS[1]), label='bystander')
    pids = {}
    for case in cases:
        p = start_client(fx, [vk_abuse, case], fx.gpud_env(VARIANTS[1]), label=case)
        finish_client(p, 120, 'vk_abuse ' + case)
        pids[case] = p.pid
        fx.check_daemon()
    if bystander.poll() is not None:
        fail('the bystander stopped before the abuse ended')
    open(until, 'w').close()
    finish_client(bystander, 300, 'vk_compute beside the abuse')
    if fx.daemon.pid != server_pid:
        fail('the server changed pid')

    # Each abusing client ended with a reason gpudctl lists: its worker
    # crashed, or the daemon's own checks refused the command buffer.  (The
    # worker drops the client first and tells the server after: the last
    # one's fault may reach the list a moment after the client saw its
    # device lost.)
    deadline = time.monotonic() + 10
    while True:
        faults = {f['pid']: f for f in fx.gpudctl_status()['faults']}
        if all(pid in faults for pid in pids.values()) or time.monotonic() > deadline:
            break
        time.sleep(0.1)
    crashed = 0
    for case, pid in pids.items():
        reason = faults.get(pid, {}).get('reason', '')
        log('%s: %s' % (case, reason or 'no fault listed'))
        if 'killed by SIG' in reason:
            crashed += 1
        elif not (reason.startswith('protocol error') or
                  reason.startswith('the host driver lost its device')):
            fail('%s (pid %d): gpudctl lists no fault for it' % (case, pid))
    if not crashed and 'llvmpipe' in fx.gpudctl_status()['device']:
        fail('no case crashed its worker: the test no longer tests isolation')
    fx.run([fx.prog('vk_compute')], fx.gpud_env(), label='after the abuse')


def test_validate(fx):
    """With --validate, a call that breaks a rule reaches the application's
    own debug messenger with its VUID and its debug report callback as an
    error, each naming the device as the application named it, and the
    application carries on (on lavapipe directly: the layer itself, loaded
    by the loader)."""
    env = fx.gpud_env(VARIANTS[1])
    if fx.direct:
        env['VK_INSTANCE_LAYERS'] = 'VK_LAYER_KHRONOS_validation'
    _, out, _ = fx.run([fx.prog('vk_validate')], env)
    if 'VUID-VkBufferCreateInfo-usage-requiredbitmask' not in out:
        fail('the messenger did not print the VUID')
    if not re.search(r'^report: .*VUID-VkBufferCreateInfo-usage-requiredbitmask', out, re.M):
        fail('the debug report callback did not print the VUID')
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

    # --validate=strict: the call is not passed on and the client goes.
    with strict_daemon(fx, ['--validate=strict'] + fx.daemon_args()[:2]) as (sock, logp):
        fx.run([fx.prog('vk_validate')], fx.gpud_env(VARIANTS[1], sock), expect_rc=1,
               label='--validate=strict')
        with open(logp, errors='replace') as f:
            if not any('protocol error' in l and
                       'breaks VUID-VkBufferCreateInfo-usage-requiredbitmask' in l for l in f):
                fail('--validate=strict did not disconnect the client for the rule it broke')



# What vk_debugnames names (see its comment): shown by gpudctl while it
# holds them, as (type, name) ...
DEBUGNAMES_SHOWN = [('device', 'dbgnames-device'), ('queue', 'dbgnames-queue'),
                    ('buffer', 'dbgnames-buffer-renamed'),
                    ('device memory', 'dbgnames-memory')]
# ... and not: renamed, destroyed (the pool, and its command buffer with
# it), unnamed, or objects the daemon never sees.
DEBUGNAMES_HIDDEN = ['dbgnames-buffer-first', 'dbgnames-pool', 'dbgnames-cmd',
                     'dbgnames-fence', 'dbgnames-template', 'dbgnames-messenger',
                     'dbgnames-report']
# A name with a control character and more bytes than gpudctl shows: shown
# (in part: whole characters only) with the control character replaced.
DEBUGNAMES_LONG = ('descriptor set layout', 'dbgnames-layout?' + '\u00e9' * 20)
# After "many": the 24 most recently named live objects, newest last.
DEBUGNAMES_MANY = (['dbgnames-event-%02d' % i for i in range(18, 31)] +
                   ['dbgnames-event-late'] +
                   ['dbgnames-event-%02d' % i for i in range(31, 41)])


def status_until(fx, settled, timeout=3.0):
    """`gpudctl status --json` asked again every 0.2 s until settled(status)
    holds or timeout seconds have passed; the last status."""
    deadline = time.monotonic() + timeout
    while True:
        status = fx.gpudctl_status()
        if settled(status) or time.monotonic() > deadline:
            return status
        time.sleep(0.2)


def debugnames_check(status, pid):
    """None when the client pid's names in status are what vk_debugnames
    leaves before READY; else what is wrong."""
    mine = [c for c in status['clients'] if c['pid'] == pid]
    if len(mine) != 1:
        return 'gpudctl lists %d clients with pid %d' % (len(mine), pid)
    names = mine[0].get('names')
    if not isinstance(names, list):
        return 'the client has no "names" list'
    for n in names:
        if (not isinstance(n, dict) or not isinstance(n.get('id'), int) or
                n['id'] <= 0 or not isinstance(n.get('type'), str) or
                not isinstance(n.get('name'), str)):
            return 'a name is not {"id": N, "type": S, "name": S}: %r' % (n,)
    ids = [n['id'] for n in names]
    if len(set(ids)) != len(ids):
        return 'an object is listed twice'
    shown = [(n['type'], n['name']) for n in names]
    missing = [want for want in DEBUGNAMES_SHOWN if want not in shown]
    if missing:
        return 'missing %s' % ', '.join('%s "%s"' % m for m in missing)
    hidden = [n for n in names if n['name'] in DEBUGNAMES_HIDDEN]
    if hidden:
        return 'listed though renamed, destroyed, unnamed or the ICD\'s own: %r' % hidden
    kind, full = DEBUGNAMES_LONG
    long = [n for n in shown if n[0] == kind and n[1].startswith(full[:16])]
    if len(long) != 1 or not full.startswith(long[0][1]):
        return ('the %s "dbgnames-layout<TAB>éé..." is not shown as a part of %r: %r' %
                (kind, full, long))
    return None


def test_debugnames(fx):
    """Object names, tags and labels (VK_EXT_debug_utils, and
    VK_EXT_debug_marker turned into them), with messengers and debug report
    callbacks listening: the device keeps working, and `gpudctl status`
    (text and --json) shows the objects a client named while they live, by
    their latest name, the 24 most recently named at most, newest last; not
    those destroyed or unnamed, nor the ICD's own.  The daemon validates: what
    gpud passes on must break no rule the layer checks (vk_debugnames fails
    on an error message).  On lavapipe directly: the program alone, also
    under the validation layer."""
    prog = fx.prog('vk_debugnames')
    if fx.direct:
        # see vk_debugnames' comment: what Mesa and the loader get wrong
        argv = [prog, '--no-loader-handles', '--no-null-names']
        for variant in VARIANTS:
            fx.run(argv, fx.direct_env(variant), label=variant[0])
        env = fx.direct_env(VARIANTS[1])
        env['VK_INSTANCE_LAYERS'] = 'VK_LAYER_KHRONOS_validation'
        _, out, _ = fx.run(argv, env, label='validation layer, "many"', input=b'many\n')
        if 'MANY' not in out.splitlines():
            fail('vk_debugnames did not print MANY')
        return

    argv = [prog, '--require-marker']
    fx.run(argv, fx.gpud_env(VARIANTS[1]), label=VARIANTS[1][0])
    fx.check_daemon()

    # Held at READY (stdin open) while gpudctl looks.
    p = start_client(fx, argv, fx.gpud_env(VARIANTS[0]), label=VARIANTS[0][0],
                     stdin=subprocess.PIPE)
    try:
        if not p.out.wait_for('READY', 60):
            p.kill()
            finish_client(p, 10, 'vk_debugnames', expect_rc=None)
            fail('vk_debugnames never printed READY')
        # Names travel asynchronously, but the program's last call before
        # READY (vkDeviceWaitIdle) answered after them: no waiting needed.
        # A few tries all the same, so a failure says what it saw.
        status = status_until(fx, lambda st: not debugnames_check(st, p.pid))
        wrong = debugnames_check(status, p.pid)
        mine = [c for c in status['clients'] if c['pid'] == p.pid]
        log('names in gpudctl status: %s' %
            json.dumps(mine[0].get('names') if mine else None))
        if wrong:
            fail('gpudctl status --json, client pid %d: %s\nstatus: %s' %
                 (p.pid, wrong, json.dumps(status)))

        cmd = [fx.args.gpudctl, '--socket', fx.socket, 'status']
        _, text, _ = fx.run(cmd, fx.base_env(), timeout=10)
        lines = [l.strip() for l in text.splitlines()]
        for kind, name in DEBUGNAMES_SHOWN:
            if "named %s '%s'" % (kind, name) not in lines:
                fail("gpudctl status does not show \"named %s '%s'\"" % (kind, name))
        if "named %s '%s" % (DEBUGNAMES_LONG[0], DEBUGNAMES_LONG[1][:16]) not in text:
            fail('gpudctl status does not show the %s' % DEBUGNAMES_LONG[0])
        for name in DEBUGNAMES_HIDDEN:
            if "'%s'" % name in text:
                fail('gpudctl status shows %s' % name)
        if p.poll() is not None:
            fail('vk_debugnames exited while held (%s)' % describe_rc(p.returncode))

        # More names than gpudctl lists: the newest live ones, newest last.
        p.stdin.write(b'many\n')
        p.stdin.flush()
        if not p.out.wait_for('MANY', 60):
            fail('vk_debugnames never printed MANY')
        # (the names reach the server's status asynchronously: a few tries,
        # as above, where tests beside this one keep the CPUs busy)
        want = [('event', name) for name in DEBUGNAMES_MANY]

        def names(status):
            mine = [c for c in status['clients'] if c['pid'] == p.pid]
            return [(n['type'], n['name']) for n in (mine[0]['names'] if mine else [])]
        got = names(status_until(fx, lambda st: names(st) == want))
        if got != want:
            fail('after naming 41 events and destroying one, gpudctl status '
                 'lists (type, name):\n  %r\nnot the 24 newest live, newest '
                 'last:\n  %r' % (got, want))
        log('names after "many": the 24 newest, in order')
    finally:
        p.stdin.close()
    out, _ = finish_client(p, 60, 'vk_debugnames')
    if 'vk_debugnames: OK' not in out:
        fail('vk_debugnames exited 0 without its OK line')
    fx.check_daemon()

    # Its names go with it.
    deadline = time.monotonic() + 5
    while any(c['pid'] == p.pid for c in fx.gpudctl_status()['clients']):
        if time.monotonic() > deadline:
            fail('gpudctl still lists vk_debugnames (pid %d) 5 s after it exited' % p.pid)
        time.sleep(0.2)
    with open(fx.log_path, errors='replace') as f:
        bad = [l for l in f if 'protocol error' in l or 'device lost' in l]
    if bad:
        fail('the daemon logged:\n%s' % ''.join(bad))


def crash_backoff(fx, crashes):
    """vk_crashshader's back-off in ms once gpudctl counts that many of its
    crashes (the server learns of a crash when it reaps the worker, which
    may be after the client has seen its device lost)."""
    deadline = time.monotonic() + 10
    while True:
        found = [c for c in fx.gpudctl_status()['crashes'] if c['name'] == 'vk_crashshader']
        if len(found) == 1 and found[0]['crashes'] == crashes:
            return found[0]['backoff_ms']
        if time.monotonic() > deadline:
            fail('gpudctl does not count %d crashes of vk_crashshader: %r' % (crashes, found))
        time.sleep(0.05)


def crash_waits(fx):
    """(wait, back-off) in ms of each vk_crashshader run that the daemon's
    log says connected during its back-off."""
    with open(fx.log_path, errors='replace') as f:
        return [(int(m.group(1)), int(m.group(2))) for m in
                (re.search(r'vk_crashshader.*starts in (\d+) ms \(back-off (\d+) ms\)', l)
                 for l in f) if m]


def test_crash(fx):
    """A client whose valid shader crashes the host driver (lavapipe's LLVM)
    gets VK_ERROR_DEVICE_LOST; a client computing beside it gets every
    result right; the server keeps its pid; the next client works; gpudctl
    lists the fault.  The program run 30 times in a row gets a device every
    time, its workers starting after a back-off that doubles up to its
    maximum, while a client beside it computes on; gpudctl faults shows the
    back-off.  Only with --crash-limit is a program refused, and then only
    it."""
    if fx.direct:
        raise TestSkip('the shader crashes lavapipe used directly')
    if 'llvmpipe' not in fx.gpudctl_status()['device']:
        raise TestSkip('the crashing shader is lavapipe\'s')
    crasher = fx.prog('vk_crashshader')
    server_pid = fx.daemon.pid
    until = os.path.join(fx.tmp, 'crash-done')
    bystander = start_client(fx, [fx.prog('vk_compute'), '--iterations', '2', '--elements',
                                  '65536', '--until', until],
                             fx.gpud_env(VARIANTS[1]), label='bystander')
    rc, out, _ = fx.run([crasher], fx.gpud_env(VARIANTS[1]), expect_rc=None, timeout=60)
    if rc == 77:
        bystander.kill()
        raise TestSkip('the device lacks 16-bit shader support')
    if rc != 0 or 'VK_ERROR_DEVICE_LOST' not in out:
        fail('vk_crashshader: %s, expected its device lost' % describe_rc(rc))
    # the application's messenger hears why
    if not re.search(r'message gpud-disconnected: gpud disconnected this client: .*killed by SIG', out):
        fail('vk_crashshader\'s debug messenger did not get the reason for the loss')
    faults = [f for f in fx.gpudctl_status()['faults'] if f['name'] == 'vk_crashshader']
    if len(faults) != 1 or 'killed by SIG' not in faults[0]['reason']:
        fail('gpudctl lists no crash of vk_crashshader: %r' % faults)
    log('fault: %s' % faults[0]['reason'])
    backoffs = [crash_backoff(fx, 1)]
    if faults[0]['worker_pid'] == server_pid or os.path.exists('/proc/%d' % faults[0]['worker_pid']):
        fail('the crashed worker %d is still there' % faults[0]['worker_pid'])
    if bystander.poll() is not None:
        fail('the bystander stopped before the crash was dealt with')
    open(until, 'w').close()
    finish_client(bystander, 300, 'vk_compute beside the crash')
    if fx.daemon.pid != server_pid:
        fail('the server changed pid')
    fx.check_daemon()
    fx.run([fx.prog('vk_compute')], fx.gpud_env(), label='after the crash')

    # A test runner's crashes in a row: each run gets a device (and
    # crashes), its worker a little later each time; a client beside them
    # is unaffected.
    runs = 30
    until = os.path.join(fx.tmp, 'crashes-done')
    bystander = start_client(fx, [fx.prog('vk_compute'), '--iterations', '2', '--elements',
                                  '65536', '--until', until],
                             fx.gpud_env(VARIANTS[1]), label='bystander of the runs')
    started = time.monotonic()
    for i in range(runs):
        rc, out, err = fx.run([crasher], fx.gpud_env(VARIANTS[1]), expect_rc=None, timeout=60,
                              label='run %d' % (i + 2), show_output=False)
        if rc != 0 or 'VK_ERROR_DEVICE_LOST' not in out:
            fail('run %d of vk_crashshader: %s, expected a device that is then lost:\n%s%s' %
                 (i + 2, describe_rc(rc), out, err))
        backoffs.append(crash_backoff(fx, min(i + 2, 8)))
    log('%d crashing runs in %.1f s' % (runs, time.monotonic() - started))
    if bystander.poll() is not None:
        fail('the bystander stopped during the crashing runs')
    open(until, 'w').close()
    finish_client(bystander, 300, 'vk_compute beside the crashing runs')
    # The back-off after each crash, as gpudctl shows it, doubles from 100
    # ms to 400 ms and stays there.
    log('back-offs: %s' % backoffs)
    if backoffs != [100, 200] + [400] * (runs - 1):
        fail('the back-offs do not double from 100 ms to 400 ms: %s' % backoffs)
    # A run waits only for what is left of the back-off when it connects (a
    # slow machine, a sanitizer build, may start after it is over), and the
    # waits it logs are those back-offs.
    waits = [backoff for _, backoff in crash_waits(fx)]
    log('waits logged: %s' % waits)
    if waits != sorted(waits) or not set(waits) <= {100, 200, 400}:
        fail('the logged back-offs do not double from 100 ms to 400 ms: %s' % waits)
    crashes = [c for c in fx.gpudctl_status()['crashes'] if c['name'] == 'vk_crashshader']
    if len(crashes) != 1 or crashes[0]['backoff_ms'] != 400 or crashes[0]['refused']:
        fail('gpudctl does not show vk_crashshader backing off by 400 ms: %r' % crashes)
    _, text, _ = fx.run([fx.args.gpudctl, '--socket', fx.socket, 'faults'], fx.base_env(),
                        label='gpudctl faults')
    if not re.search(r'vk_crashshader \(uid \d+\): \d+ crashes, the last', text):
        fail('gpudctl faults does not list vk_crashshader\'s crashes')
    if fx.daemon.pid != server_pid:
        fail('the server changed pid')
    fx.check_daemon()

    # A run that connects during its program's back-off gets its worker when
    # the back-off is over, not before (a back-off long enough for any
    # machine's start of the next run).
    fx.stop_daemon()
    fx.extra_args = ['--crash-backoff', '6s', '--crash-backoff-max', '6s']
    fx.start_daemon()
    fx.run([crasher], fx.gpud_env(VARIANTS[1]), label='a crash, back-off 6 s', timeout=60)
    crash_backoff(fx, 1)
    started = time.monotonic()
    rc, out, _ = fx.run([crasher], fx.gpud_env(VARIANTS[1]), expect_rc=None, timeout=60,
                        label='the next run, during the back-off')
    took = time.monotonic() - started
    if rc != 0 or 'VK_ERROR_DEVICE_LOST' not in out:
        fail('the run during the back-off: %s, expected a device that is then lost' %
             describe_rc(rc))
    waits = [wait for wait, backoff in crash_waits(fx) if backoff == 6000]
    if len(waits) != 1 or not 0 < waits[0] <= 6000:
        fail('the run during the back-off logged no wait for it: %r' % waits)
    if took * 1000 < waits[0]:
        fail('the run told to wait %d ms for its worker ended after %.0f ms' %
             (waits[0], took * 1000))

    # With a crash limit the program is refused, others are not.
    fx.stop_daemon()
    fx.extra_args = ['--crash-limit', '2']
    fx.start_daemon()
    fx.run([crasher], fx.gpud_env(VARIANTS[1]), label='first crash, limit 2', timeout=60)
    fx.run([crasher], fx.gpud_env(VARIANTS[1]), label='second crash', timeout=60)
    _, _, err = fx.run([crasher], fx.gpud_env(VARIANTS[1]), expect_rc=1,
                       label='third try, refused')
    if 'refused the connection: its workers crashed 2 times' not in err:
        fail('the third try was not refused for its crashes')
    fx.run([fx.prog('vk_compute')], fx.gpud_env(), label='another program')
    fx.check_daemon()


def gst_pipeline(convert, fmt='RGBA', out='BGRA', size=(96, 64), buffers=8):
    return ['gst-launch-1.0', '-q', 'videotestsrc', 'num-buffers=%d' % buffers,
            'pattern=smpte', '!',
            'video/x-raw,format=%s,width=%d,height=%d' % (fmt, size[0], size[1]),
            '!'] + convert + ['!', 'video/x-raw,format=' + out, '!', 'filesink']


def gst_vulkan(*elements):
    """elements between vulkanupload and vulkandownload."""
    return ['vulkanupload', '!'] + list(elements) + ['!', 'vulkandownload']


def gst_vk_caps(fmt):
    return 'video/x-raw(memory:VulkanImage),format=' + fmt


def gst_frame_bytes(fmt, size):
    w, h = size
    return {'RGBA': w * h * 4, 'BGRA': w * h * 4, 'YUY2': w * h * 2,
            'NV12': w * h * 3 // 2}[fmt]


# More of GStreamer 1.22's Vulkan elements, on few small frames: (name,
# input format, pipeline, output format, how the output follows from the
# input frames (None: only lavapipe directly says what it is)).  A mono
# frame viewed side by side is each row twice, top-bottom the frame twice.
GST_SIZE = (64, 48)
GST_BUFFERS = 3
GST_CHAINS = [
    ('identity-bgra', 'BGRA', gst_vulkan('vulkanimageidentity'), 'BGRA', 'same'),
    ('viewconvert-side-by-side', 'RGBA',
     gst_vulkan('vulkanviewconvert', 'output-mode-override=side-by-side'), 'RGBA',
     'side-by-side'),
    ('viewconvert-top-bottom', 'RGBA',
     gst_vulkan('vulkanviewconvert', 'output-mode-override=top-bottom'), 'RGBA',
     'top-bottom'),
    ('nv12-to-rgba', 'NV12',
     gst_vulkan('vulkancolorconvert', '!', gst_vk_caps('RGBA')), 'RGBA', None),
    ('rgba-to-nv12', 'RGBA',
     gst_vulkan('vulkancolorconvert', '!', gst_vk_caps('NV12')), 'NV12', None),
    ('yuy2-to-rgba', 'YUY2',
     gst_vulkan('vulkancolorconvert', '!', gst_vk_caps('RGBA')), 'RGBA', None),
]


def gst_expected(how, src, fmt):
    """What a chain makes of the frames src (of format fmt, GST_SIZE)."""
    if how == 'same':
        return src
    frame = gst_frame_bytes(fmt, GST_SIZE)
    row = frame // GST_SIZE[1]
    out = []
    for f in range(0, len(src), frame):
        frame_data = src[f:f + frame]
        if how == 'top-bottom':
            out.append(frame_data + frame_data)
        else:
            out.extend(frame_data[r:r + row] * 2 for r in range(0, frame, row))
    return b''.join(out)


def test_gstreamer(fx):
    """GStreamer's Vulkan elements (vulkanupload ! vulkancolorconvert !
    vulkandownload) give through gpud the bytes they give on lavapipe
    directly, and those of GStreamer's CPU converter; so do
    vulkanimageidentity, vulkanviewconvert (side by side, top-bottom: what
    the frames say they must give) and conversions from and to NV12 and
    YUY2."""
    if not shutil.which('gst-launch-1.0'):
        raise TestSkip('gst-launch-1.0 is not installed')
    env = fx.base_env()
    env['XDG_CACHE_HOME'] = fx.tmp
    p = subprocess.run(['gst-inspect-1.0', 'vulkan'], env=env,
                       stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    have = {l.split(':')[0].strip()
            for l in p.stdout.decode(errors='replace').splitlines() if ':' in l}
    need = {'vulkanupload', 'vulkandownload', 'vulkancolorconvert'} | {
        w for _, _, pipeline, _, _ in GST_CHAINS for w in pipeline
        if w.startswith('vulkan')}
    if p.returncode != 0 or 'vulkancolorconvert' not in have:
        raise TestSkip('no GStreamer Vulkan elements (gstreamer1.0-plugins-bad)')
    if not need <= have:
        raise TestSkip('GStreamer lacks %s' % ', '.join(sorted(need - have)))
    connected = 'gst-launch-1.0): connected'

    def run(name, label, argv, cenv):
        cenv = dict(cenv, XDG_CACHE_HOME=fx.tmp)
        path = os.path.join(fx.tmp, '%s-%s.raw' % (name, label))
        before = fx.log_count(connected)
        fx.run(argv + ['location=' + path], cenv, label='%s %s' % (name, label))
        if label == 'gpud' and fx.log_count(connected) == before:
            fail('%s: the gpud run never connected to the daemon' % name)
        with open(path, 'rb') as f:
            data = f.read()
        log('%s %s: %d bytes' % (name, label, len(data)))
        return data

    vulkan = gst_vulkan('vulkancolorconvert', '!', gst_vk_caps('BGRA'))
    outputs = {}
    runs = [('cpu', ['videoconvert'], fx.direct_env()),
            ('lavapipe', vulkan, fx.direct_env())]
    if not fx.direct:
        runs.append(('gpud', vulkan, fx.gpud_env()))
    for name, convert, cenv in runs:
        outputs[name] = run('colorconvert-rgba-bgra', name, gst_pipeline(convert), cenv)
    size = 96 * 64 * 4 * 8
    for name, data in outputs.items():
        if len(data) != size:
            fail('%s wrote %d bytes, expected %d' % (name, len(data), size))
        if data != outputs['cpu']:
            fail('%s differs from the CPU converter' % name)
    fx.check_daemon()

    sources = {}
    for name, fmt, pipeline, out, how in GST_CHAINS:
        got = {}
        argv = gst_pipeline(pipeline, fmt, out, GST_SIZE, GST_BUFFERS)
        for label, cenv in [('lavapipe', fx.direct_env())] + (
                [] if fx.direct else [('gpud', fx.gpud_env())]):
            got[label] = run(name, label, argv, cenv)
        size = gst_frame_bytes(out, GST_SIZE) * GST_BUFFERS
        if how in ('side-by-side', 'top-bottom'):
            size *= 2
        if how is not None:
            if fmt not in sources:
                sources[fmt] = run('source-' + fmt.lower(), 'cpu', gst_pipeline(
                    ['identity'], fmt, fmt, GST_SIZE, GST_BUFFERS), fx.direct_env())
            got['expected'] = gst_expected(how, sources[fmt], fmt)
        for label, data in got.items():
            if len(data) != size:
                fail('%s: %s: %d bytes, expected %d' % (name, label, len(data), size))
            if data != got['lavapipe']:
                fail('%s: %s differs from lavapipe directly' % (name, label))
        fx.check_daemon()
    log('%d GStreamer Vulkan pipelines give the same bytes%s' % (
        1 + len(GST_CHAINS), '' if fx.direct else ' through gpud as on lavapipe'))


# FFmpeg (5.1) filter chains on Vulkan frames: (name, filter options, CPU
# filter that gives the same frames or None). testsrc's 320x240 frames are
# uploaded (hwupload), filtered by ffmpeg's compute shaders and downloaded.
# Left out: scale_vulkan's RGB-to-YUV conversion (format=nv12 and the like),
# whose dispatches in ffmpeg 5.1 read descriptors it never wrote (the
# validation layer reports VUID-vkCmdDispatch-None-02699 on lavapipe
# directly), so its output is undefined; and avgblur_vulkan, which on Mesa
# 25's lavapipe corrupts ffmpeg's heap (glibc aborts with "double free or
# corruption" as a thread ends) when run on lavapipe directly.
FFMPEG_SIZE = (320, 240)
FFMPEG_FRAMES = 5
FFMPEG_CHAINS = [
    ('roundtrip-nv12',
     ['-vf', 'format=nv12,hwupload,hwdownload,format=nv12'], 'format=nv12'),
    ('gblur-flip-yuv420p',
     ['-vf', 'format=yuv420p,hwupload,gblur_vulkan,flip_vulkan,hwdownload,format=yuv420p'],
     None),
    ('chromaber-yuv444p',
     ['-vf', 'format=yuv444p,hwupload,chromaber_vulkan=dist_x=3:dist_y=2,'
             'hwdownload,format=yuv444p'], None),
    ('transpose-hflip-vflip-bgra',
     ['-vf', 'format=bgra,hwupload,transpose_vulkan,hflip_vulkan,vflip_vulkan,'
             'hwdownload,format=bgra'], None),
    ('scale-nearest-yuv420p',
     ['-vf', 'format=yuv420p,hwupload,scale_vulkan=w=640:h=480:scaler=nearest,'
             'hwdownload,format=yuv420p'],
     'format=yuv420p,scale=640:480:flags=neighbor'),
    ('scale-bilinear-rgba',
     ['-vf', 'format=rgba,hwupload,scale_vulkan=w=160:h=120,hwdownload,format=rgba'],
     None),
    ('overlay-yuv420p',
     ['-filter_complex', '[0:v]format=yuv420p,hwupload[a];'
      '[0:v]scale=100:80,format=yuv420p,hwupload[b];'
      '[a][b]overlay_vulkan=x=20:y=30,hwdownload,format=yuv420p'], None),
    ('blend-rgba',
     ['-filter_complex', '[0:v]format=rgba,hwupload[a];[0:v]hflip,format=rgba,hwupload[b];'
      '[a][b]blend_vulkan=all_mode=multiply,hwdownload,format=rgba'], None),
]


def ffmpeg_argv(filters, vulkan=True):
    argv = ['ffmpeg', '-nostdin', '-hide_banner', '-v', 'error']
    if vulkan:
        argv += ['-init_hw_device', 'vulkan=vk:0', '-filter_hw_device', 'vk']
    return argv + ['-f', 'lavfi', '-i', 'testsrc=size=%dx%d:rate=5' % FFMPEG_SIZE,
                   '-frames:v', str(FFMPEG_FRAMES)] + filters + ['-f', 'framemd5', '-']


def framemd5_lines(out, what):
    """The frame lines of framemd5 output (stream, dts, pts, duration, size,
    hash), checked to be FFMPEG_FRAMES frames with a size."""
    frames = [l.split() for l in out.splitlines() if l and not l.startswith('#')]
    if len(frames) != FFMPEG_FRAMES or any(len(f) != 6 or f[4] in ('0,', '0') for f in frames):
        fail('%s: expected %d frames in framemd5 output, got:\n%s' %
             (what, FFMPEG_FRAMES, indent(out)))
    return [' '.join(f) for f in frames]


def test_ffmpeg(fx):
    """FFmpeg's Vulkan filters (gblur, chromaber, flip, transpose,
    scale, overlay, blend) give through gpud the frames, by framemd5, they
    give on lavapipe directly; an upload-download round trip and nearest
    scaling give those of ffmpeg's CPU filters."""
    if not shutil.which('ffmpeg'):
        raise TestSkip('ffmpeg is not installed')
    p = subprocess.run(['ffmpeg', '-hide_banner', '-filters'], env=fx.base_env(),
                       stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                       stderr=subprocess.DEVNULL)
    have = {f.split()[1] for f in p.stdout.decode(errors='replace').splitlines()
            if len(f.split()) > 2}
    need = {w.split('=')[0] for _, filters, _ in FFMPEG_CHAINS
            for w in re.split(r'[,;\]]', filters[1]) if '_vulkan' in w}
    if not need <= have:
        raise TestSkip('ffmpeg lacks %s (built without Vulkan?)' %
                       ', '.join(sorted(need - have)))
    for name, filters, cpu in FFMPEG_CHAINS:
        runs = [('lavapipe', fx.direct_env())]
        if not fx.direct:
            runs.append(('gpud', fx.gpud_env()))
        got = {}
        for label, env in runs:
            _, out, _ = fx.run(ffmpeg_argv(filters), env, label='%s %s' % (name, label),
                               show_output=False)
            got[label] = framemd5_lines(out, '%s %s' % (name, label))
        if cpu:
            _, out, _ = fx.run(ffmpeg_argv(['-vf', cpu], vulkan=False), fx.direct_env(),
                               label='%s cpu' % name, show_output=False)
            got['cpu'] = framemd5_lines(out, '%s cpu' % name)
        log(indent('\n'.join(got['lavapipe'])))
        for label, frames in got.items():
            if frames != got['lavapipe']:
                fail('%s: %s gives other frames than lavapipe directly:\n%s' %
                     (name, label, indent('\n'.join(frames))))
        fx.check_daemon()
    if not fx.direct:
        with open(fx.log_path, errors='replace') as f:
            connected = sum('(pid' in l and 'ffmpeg): connected' in l for l in f)
        if connected != len(FFMPEG_CHAINS):
            fail('%d ffmpeg clients connected to the daemon, expected %d' %
                 (connected, len(FFMPEG_CHAINS)))


def test_teardown(fx):
    """A client killed while its queue waits on a timeline value nobody will
    signal is fully released within 5 s (its worker gone, its 1 GiB back);
    SIGTERM with such a client connected ends the daemon within the drain
    period (2 s here)."""
    if fx.direct:
        raise TestSkip('teardown is gpud\'s')
    vk_lost = fx.prog('vk_lost')
    p = start_client(fx, [vk_lost, '--hold-mb', '1024'], fx.gpud_env(VARIANTS[1]),
                     label='stuck client')
    if not p.out.wait_for('WAITING', 60):
        p.kill()
        fail('vk_lost never printed WAITING')
    time.sleep(0.3)
    mine = [c for c in fx.gpudctl_status()['clients'] if c['pid'] == p.pid]
    if len(mine) != 1 or mine[0]['memory_bytes'] < (1 << 30):
        fail('gpudctl does not show the client holding 1 GiB: %r' % mine)
    worker = mine[0]['worker_pid']
    log('client %d holds %d bytes in worker %d' % (p.pid, mine[0]['memory_bytes'], worker))
    os.kill(p.pid, signal.SIGKILL)
    t0 = time.monotonic()
    finish_client(p, 10, 'stuck client', expect_rc=-signal.SIGKILL)
    while True:
        status = fx.gpudctl_status()
        left = [c for c in status['clients'] if c['pid'] == p.pid]
        if not left and status['memory_bytes'] == 0 and not os.path.exists('/proc/%d' % worker):
            break
        if time.monotonic() - t0 > 5:
            fail('5 s after the kill the client is not released: %s' % json.dumps(status))
        time.sleep(0.05)
    log('released %.2f s after the kill' % (time.monotonic() - t0))

    p = start_client(fx, [vk_lost, '--hold-mb', '64'], fx.gpud_env(VARIANTS[1]),
                     label='stuck client at shutdown')
    if not p.out.wait_for('WAITING', 60):
        p.kill()
        fail('vk_lost never printed WAITING')
    time.sleep(0.3)
    d, fx.daemon = fx.daemon, None
    d.send_signal(signal.SIGTERM)
    t0 = time.monotonic()
    try:
        d.wait(timeout=10)
    except subprocess.TimeoutExpired:
        d.kill()
        fail('gpud did not exit within 10 s of SIGTERM')
    took = time.monotonic() - t0
    log('gpud exited %.2f s after SIGTERM (%s)' % (took, describe_rc(d.returncode)))
    if d.returncode != 0:
        fail('gpud exited with %s after SIGTERM' % describe_rc(d.returncode))
    if took > 2.0 + 2.5:
        fail('gpud took %.2f s to stop, the drain period is 2 s' % took)
    out, _ = finish_client(p, 10, 'stuck client at shutdown')
    if 'vkWaitForFences: VK_ERROR_DEVICE_LOST' not in out:
        fail('the client did not see its device lost')
    if os.path.exists(fx.socket):
        fail('gpud left its socket behind')
    fx.start_daemon()


def test_limits(fx):
    """Limits answer as a driver would and the client carries on: memory
    past the client's limit (256 MiB) and past its user's (384 MiB) fails
    with VK_ERROR_OUT_OF_DEVICE_MEMORY and the client frees and allocates
    again; objects past the limit (20000) fail with VK_ERROR_OUT_OF_HOST_MEMORY
    (the first thousands created without waiting, the last ones waited for,
    so the limit's answer is exact);
    a client that stops reading its replies is dropped after the send
    deadline (1 s), and gpudctl shows it waiting before that."""
    if fx.direct:
        raise TestSkip('limits are gpud\'s')
    vk_limits = fx.prog('vk_limits')
    _, out, _ = fx.run([vk_limits, 'memory', '--chunk-mb', '32'], fx.gpud_env(VARIANTS[1]))
    # the heap's kind says which out-of-memory error a full one gives
    full = ('VK_ERROR_OUT_OF_DEVICE_MEMORY' if re.search(r'^heap: \d+, device-local$', out, re.M)
            else 'VK_ERROR_OUT_OF_HOST_MEMORY')
    if 'allocated: 8 chunks of 32 MiB, then %s' % full not in out:
        fail('the client limit did not stop allocations at 256 MiB with %s' % full)
    # VK_EXT_memory_budget (gpud's own) says what the limit leaves
    if not re.search(r'^budget: heap \d+ usage %d budget %d$' % (256 << 20, 256 << 20), out, re.M):
        fail('VK_EXT_memory_budget did not report 256 MiB used of a 256 MiB budget')
    if 'reallocated: VK_SUCCESS' not in out:
        fail('the client could not allocate again after freeing')

    holder = start_client(fx, [vk_limits, 'memory', '--chunk-mb', '32', '--hold'],
                          fx.gpud_env(VARIANTS[1]), label='holds 256 MiB')
    try:
        if not holder.out.wait_for('READY', 60):
            fail('the holding client never got ready')
        _, out, _ = fx.run([vk_limits, 'memory', '--chunk-mb', '32'], fx.gpud_env(VARIANTS[1]),
                           label='same user')
        if 'allocated: 4 chunks of 32 MiB, then %s' % full not in out:
            fail('the user limit did not stop the second client at 128 MiB')
        if not re.search(r'^budget: heap \d+ usage %d budget %d$' % (128 << 20, 128 << 20),
                         out, re.M):
            fail('VK_EXT_memory_budget did not report the user limit\'s 128 MiB')
    finally:
        holder.kill()
        finish_client(holder, 10, 'holder', expect_rc=None)

    _, out, _ = fx.run([vk_limits, 'objects'], fx.gpud_env(VARIANTS[1]))
    m = re.search(r'^objects: (\d+), then (\S+)$', out, re.M)
    if not m or m.group(2) != 'VK_ERROR_OUT_OF_HOST_MEMORY' or \
            not 19980 <= int(m.group(1)) < 20000:
        fail('the object limit (20000 in all) did not answer VK_ERROR_OUT_OF_HOST_MEMORY '
             'at its count')
    if 'recreated: 10' not in out:
        fail('the client could not create objects again after destroying some')

    # A client that stops reading.
    p = start_client(fx, [fx.prog('hostile_client'), fx.socket, 'no-read'], fx.base_env(),
                     label='no-read')
    seen_blocked = False
    t0 = time.monotonic()
    while p.poll() is None and time.monotonic() - t0 < 10:
        for c in fx.gpudctl_status()['clients']:
            if c['name'] == 'hostile-no-read' and c['send_blocked_ms'] > 0:
                seen_blocked = True
        time.sleep(0.1)
    finish_client(p, 60, 'hostile_client no-read')
    if not seen_blocked:
        fail('gpudctl never showed the client that stopped reading')
    with open(fx.log_path, errors='replace') as f:
        if not any('hostile-no-read' in l and 'dropped: stopped reading its replies' in l
                   for l in f):
            fail('the daemon did not log dropping the client')
    fx.run([fx.prog('vk_compute')], fx.gpud_env(), label='after the limits')


IDLE_SCRIPT = r"""
import socket, sys, time
path, n, wait = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
conns = []
refused = 0
for i in range(n):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    s.connect(path)
    conns.append(s)
time.sleep(0.5)
held = []
for s in conns:
    s.setblocking(False)
    try:
        data = s.recv(65536)
        refused += 1       # a Disconnect, or the close after it
        s.close()
    except BlockingIOError:
        held.append(s)
print('refused %d held %d' % (refused, len(held)), flush=True)
t0 = time.monotonic()
closed_at = []
while held and time.monotonic() - t0 < wait:
    for s in list(held):
        try:
            s.recv(65536)
            closed_at.append(time.monotonic() - t0 + 0.5)
            held.remove(s)
            s.close()
        except BlockingIOError:
            pass
    time.sleep(0.02)
print('closed %d first %.2f last %.2f still %d' % (
    len(closed_at), min(closed_at or [0]), max(closed_at or [0]), len(held)), flush=True)
"""


def test_connections(fx):
    """600 idle connections from one user: all but the per-user limit (64)
    are refused at once, the rest are closed at the handshake deadline
    (2 s), and another user's client is unaffected throughout.  At
    RLIMIT_NOFILE the server's CPU time stays small, and it serves again once
    fds are free."""
    if fx.direct:
        raise TestSkip('connection limits are gpud\'s')
    if os.geteuid() != 0:
        raise TestSkip('needs root to connect as another user')
    os.chmod(fx.tmp, 0o755)
    idle = subprocess.Popen(
        [system_python(), '-c', IDLE_SCRIPT, fx.socket, '600', '5'], cwd='/',
        stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        preexec_fn=as_user(TEST_UID, TEST_GID, [TEST_GID]))
    time.sleep(0.3)
    t0 = time.monotonic()
    fx.run([fx.prog('vk_compute')], fx.gpud_env(), label='root, beside the idle connections')
    log('root\'s client took %.2f s' % (time.monotonic() - t0))
    out, err = idle.communicate(timeout=60)
    out = out.decode()
    log(indent(out) + indent(err.decode(), '  ! '))
    m = re.search(r'refused (\d+) held (\d+)', out)
    c = re.search(r'closed (\d+) first ([\d.]+) last ([\d.]+) still (\d+)', out)
    if not m or not c:
        fail('the idle-connection script failed')
    refused, held = int(m.group(1)), int(m.group(2))
    if refused < 600 - 64 or held > 64:
        fail('%d of 600 connections refused, %d held: the per-user limit is 64' % (refused, held))
    if int(c.group(4)) or int(c.group(1)) != held:
        fail('%s of the silent connections were never closed' % c.group(4))
    if not 1.5 <= float(c.group(2)) and float(c.group(3)) <= 4.0:
        fail('silent connections closed between %s and %s s, the deadline is 2 s' %
             (c.group(2), c.group(3)))
    with open(fx.log_path, errors='replace') as f:
        text = f.read()
    if 'lines about its connections suppressed' not in text:
        fail('the refusals of one user were not rate limited in the log')

    # A daemon with few fds: it must not spin when accept() runs out.
    sock = os.path.join(fx.tmp, 'fdlimit.sock')
    logp = os.path.join(fx.tmp, 'fdlimit.log')
    cmd = [fx.args.gpud, '--socket', sock, '--host-driver', fx.args.lavapipe_manifest,
           '--uid-connections', '1000', '--handshake-timeout', '30s'] + fx.daemon_args()[:2]
    def low_fds():
        import resource
        resource.setrlimit(resource.RLIMIT_NOFILE, (40, 40))
    with open(logp, 'wb') as logf:
        d = subprocess.Popen(cmd, env=fx.base_env(), stdout=logf, stderr=logf,
                             stdin=subprocess.DEVNULL, preexec_fn=low_fds)
    conns = []
    try:
        deadline = time.monotonic() + 10
        while not os.path.exists(sock):
            if time.monotonic() > deadline or d.poll() is not None:
                fail('the fd-limited daemon did not start')
            time.sleep(0.05)
        time.sleep(0.3)
        for _ in range(80):
            s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
            s.connect(sock)
            conns.append(s)
        time.sleep(0.5)
        cpu0 = proc_status(d.pid)[3]
        time.sleep(2.0)
        cpu = proc_status(d.pid)[3] - cpu0
        log('out of fds with %d connections: %.3f s of CPU in 2 s' % (len(conns), cpu))
        if cpu > 0.2:
            fail('the server spins at its fd limit (%.2f s of CPU in 2 s)' % cpu)
        for s in conns:
            s.close()
        conns = []
        time.sleep(0.5)
        fx.run([fx.prog('vk_compute')], fx.gpud_env(VARIANTS[1], sock),
               label='after the fds came back')
        if d.poll() is not None:
            fail('the fd-limited daemon died (%s)' % describe_rc(d.returncode))
    finally:
        for s in conns:
            s.close()
        d.send_signal(signal.SIGTERM)
        d.wait(timeout=10)


def public_copy(fx):
    """The ICD, its manifest and the programs another user runs, in a
    folder that user can read (the build tree may be root's alone)."""
    pub = os.path.join(fx.tmp, 'pub')
    if os.path.isdir(pub):
        return pub
    os.makedirs(pub)
    with open(fx.args.icd_manifest) as f:
        manifest = json.load(f)
    lib = os.path.join(os.path.dirname(fx.args.icd_manifest), manifest['ICD']['library_path'])
    shutil.copy(lib, os.path.join(pub, os.path.basename(lib)))
    manifest['ICD']['library_path'] = os.path.join(pub, os.path.basename(lib))
    with open(os.path.join(pub, 'gpud_icd.json'), 'w') as f:
        json.dump(manifest, f)
    for prog in ('vk_compute', 'vk_enum', 'vk_lost'):
        shutil.copy(fx.prog(prog), pub)
    shutil.copy(fx.args.gpudctl, pub)
    shutil.copy(fx.args.gpud, pub)
    for path in (fx.tmp, pub):
        os.chmod(path, 0o755)
    for name in os.listdir(pub):
        os.chmod(os.path.join(pub, name), 0o755)
    home = os.path.join(fx.tmp, 'home')
    os.makedirs(home)
    os.chown(home, TEST_UID, TEST_GID)
    return pub


def user_env(fx, pub):
    env = fx.gpud_env(VARIANTS[1])
    env['VK_ICD_FILENAMES'] = os.path.join(pub, 'gpud_icd.json')
    env['HOME'] = env['XDG_RUNTIME_DIR'] = os.path.join(fx.tmp, 'home')
    return env


def user_gpudctl(fx, pub, args, groups):
    cmd = [os.path.join(pub, 'gpudctl'), '--socket', fx.socket] + args
    log('$ [uid %d] %s' % (TEST_UID, ' '.join(cmd)))
    p = subprocess.run(cmd, env=user_env(fx, pub), cwd='/', stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, timeout=10,
                       preexec_fn=as_user(TEST_UID, TEST_GID, groups))
    log(indent(p.stdout.decode()) + indent(p.stderr.decode(), '  ! '))
    return p.returncode, p.stdout.decode(), p.stderr.decode()


def test_access(fx):
    """A root daemon serves root and its group (gid 4242 here): a user
    outside the group cannot use it, one inside can; that user's gpudctl
    sees and disconnects only that user's clients; root's sees and
    disconnects all.  A user's own daemon serves that user alone."""
    if fx.direct:
        raise TestSkip('access control is gpud\'s')
    if os.geteuid() != 0:
        raise TestSkip('needs root to run clients as other users')
    pub = public_copy(fx)
    env = user_env(fx, pub)
    outsider = as_user(TEST_UID, TEST_GID + 1, [TEST_GID + 1])
    member = as_user(TEST_UID, TEST_GID + 1, [TEST_GID])

    # The socket's mode keeps an outsider out; should the mode let one in (a
    # socket made by hand, or passed in with the wrong mode), the server
    # refuses it itself and says why.
    debug_env = dict(env, GPUD_DEBUG='init')
    for mode, expect in ((None, 'Permission denied'),
                         (0o666, 'refused the connection: uid %d is not in group %d' %
                          (TEST_UID, TEST_GID))):
        if mode:
            os.chmod(fx.socket, mode)
        log('$ [uid %d, not in %d, socket %s] GPUD_DEBUG=init vk_enum' %
            (TEST_UID, TEST_GID, oct(os.stat(fx.socket).st_mode & 0o777)))
        p = subprocess.run([os.path.join(pub, 'vk_enum')], env=debug_env, cwd='/',
                           timeout=60, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           preexec_fn=outsider)
        out, err = p.stdout.decode(), p.stderr.decode()
        log(indent(out) + indent(err, '  ! '))
        if parse_enum(out):
            fail('a user outside the group got a device')
        if expect not in err:
            fail('the ICD did not say "%s"' % expect)
    os.chmod(fx.socket, 0o660)
    with open(fx.log_path, errors='replace') as f:
        if not any('refused: uid %d is not in group' % TEST_UID in l for l in f):
            fail('the daemon did not log why it refused the outsider')

    log('$ [uid %d, in %d] vk_compute' % (TEST_UID, TEST_GID))
    p = subprocess.run([os.path.join(pub, 'vk_compute')], env=env, cwd='/', timeout=120,
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, preexec_fn=member)
    log(indent(p.stdout.decode()) + indent(p.stderr.decode(), '  ! '))
    if p.returncode != 0:
        fail('a user in the group could not compute: %s' % describe_rc(p.returncode))

    root_client = start_client(fx, [fx.prog('vk_lost')], fx.gpud_env(VARIANTS[1]),
                               label='root\'s client')
    log('$ [uid %d, in %d] vk_lost &' % (TEST_UID, TEST_GID))
    user_client = subprocess.Popen([os.path.join(pub, 'vk_lost')], env=env, cwd='/',
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                   preexec_fn=member)
    user_client.out = LineReader(user_client.stdout)
    user_client.err = LineReader(user_client.stderr)
    try:
        for c in (root_client, user_client):
            if not c.out.wait_for('WAITING', 60):
                fail('a client never got going')
        status = fx.gpudctl_status()
        ids = {c['pid']: c['id'] for c in status['clients']}
        if root_client.pid not in ids or user_client.pid not in ids:
            fail('root\'s gpudctl does not see both clients: %s' % json.dumps(status))

        rc, out, _ = user_gpudctl(fx, pub, ['status', '--json'], [TEST_GID])
        seen = json.loads(out) if rc == 0 else {}
        pids = [c['pid'] for c in seen.get('clients', [])]
        if rc != 0 or root_client.pid in pids or user_client.pid not in pids or \
           seen.get('hidden_clients', 0) < 1:
            fail('the user\'s gpudctl should list its own client and hide root\'s: %r' % seen)
        rc, _, err = user_gpudctl(fx, pub, ['disconnect', str(ids[root_client.pid])], [TEST_GID])
        if rc == 0 or 'permission denied' not in err:
            fail('the user could disconnect root\'s client')
        if root_client.poll() is not None:
            fail('root\'s client ended')

        fx.run([fx.args.gpudctl, '--socket', fx.socket, 'disconnect',
                str(ids[user_client.pid])], fx.base_env(), label='root disconnects')
        user_client.wait(timeout=10)
        out = user_client.out.text()
        log(indent(out))
        if 'vkWaitForFences: VK_ERROR_DEVICE_LOST' not in out:
            fail('the disconnected client did not see its device lost')
    finally:
        for c in (root_client, user_client):
            if c.poll() is None:
                c.kill()
                c.wait()

    # A user's own daemon serves that user alone.
    home = os.path.join(fx.tmp, 'home')
    user_sock = os.path.join(home, 'gpud.sock')
    cmd = [os.path.join(pub, 'gpud'), '--socket', user_sock, '--host-driver',
           fx.args.lavapipe_manifest]
    log('$ [uid %d] %s &' % (TEST_UID, ' '.join(cmd)))
    with open(os.path.join(fx.tmp, 'user-daemon.log'), 'wb') as logf:
        d = subprocess.Popen(cmd, env=env, cwd='/', stdout=logf, stderr=logf,
                             stdin=subprocess.DEVNULL, preexec_fn=member)
    try:
        deadline = time.monotonic() + 10
        while not os.path.exists(user_sock):
            if time.monotonic() > deadline or d.poll() is not None:
                fail('the user\'s daemon did not start')
            time.sleep(0.05)
        os.chmod(home, 0o755)
        log('$ [uid %d] vk_compute (its own daemon)' % TEST_UID)
        p = subprocess.run([os.path.join(pub, 'vk_compute')],
                           env=dict(env, GPUD_SOCKET=user_sock), cwd='/', timeout=120,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, preexec_fn=member)
        log(indent(p.stdout.decode()) + indent(p.stderr.decode(), '  ! '))
        if p.returncode != 0:
            fail('the user could not use its own daemon')
        os.chmod(user_sock, 0o666)   # the daemon checks even so
        _, _, err = fx.run([fx.prog('vk_enum')], fx.gpud_env(VARIANTS[1], user_sock),
                           label='root, on the user\'s daemon')
        if 'refused the connection: uid 0 may not use the daemon of uid %d' % TEST_UID not in err:
            fail('root was not refused by the user\'s daemon')
    finally:
        d.send_signal(signal.SIGTERM)
        d.wait(timeout=10)


STUCK_LISTENER = r"""
import socket, sys, time
a = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
a.bind(sys.argv[1]); a.listen(16)            # never accepts
b = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
b.bind(sys.argv[2]); b.listen(16)            # accepts, never answers
print('READY', flush=True)
held = []
while True:
    c, _ = b.accept()
    held.append(c)
"""


def time_enum(fx, env, label):
    t0 = time.monotonic()
    _, out, _ = fx.run([fx.prog('vk_enum')], env, label=label)
    return time.monotonic() - t0, parse_enum(out)


def test_connect(fx):
    """Listeners in the socket folder that never answer cost an application
    at most the connect deadline (1 s, GPUD_CONNECT_TIMEOUT_MS) in all, and
    the daemon listed beside them is still found."""
    if fx.direct:
        raise TestSkip('the ICD\'s deadline is gpud\'s')
    mute = os.path.join(fx.tmp, 'mute.sock')
    deaf = os.path.join(fx.tmp, 'deaf.sock')
    listener = subprocess.Popen([sys.executable, '-c', STUCK_LISTENER, mute, deaf],
                                stdout=subprocess.PIPE)
    try:
        if listener.stdout.readline().strip() != b'READY':
            fail('the stuck listener did not start')
        base, names = time_enum(fx, fx.gpud_env(VARIANTS[1]), 'the daemon alone')
        if len(names) != 1:
            fail('no device from the daemon alone')
        for timeout_ms, env_extra in ((1000, {}), (300, {'GPUD_CONNECT_TIMEOUT_MS': '300'})):
            env = fx.gpud_env(VARIANTS[1], ':'.join([mute, deaf, fx.socket]))
            env.update(env_extra)
            took, names = time_enum(fx, env, 'two stuck listeners, deadline %d ms' % timeout_ms)
            log('%.2f s with the stuck listeners, %.2f s without' % (took, base))
            if len(names) != 1:
                fail('the daemon beside the stuck listeners was not found: %r' % names)
            if took - base > timeout_ms / 1000 + 0.5:
                fail('the stuck listeners cost %.2f s, the deadline is %d ms' %
                     (took - base, timeout_ms))
    finally:
        listener.kill()
        listener.wait()


def test_races(fx):
    """Killing the daemon (SIGKILL: server and workers) at random points of
    200 clients' instance creation, enumeration and first calls never
    crashes or hangs the application."""
    if fx.direct:
        raise TestSkip('the races are gpud\'s')
    import random
    rng = random.Random(4242)
    n = int(os.environ.get('GPUD_TEST_RACES', '200'))
    outcomes = {}
    env = fx.gpud_env(VARIANTS[1])
    # kill times spread over the client's whole life
    t0 = time.monotonic()
    fx.run([fx.prog('vk_enum')], env, label='one undisturbed run', show_output=False)
    life = time.monotonic() - t0
    for i in range(n):
        if fx.daemon is None:
            fx.start_daemon()
        p = subprocess.Popen([fx.prog('vk_enum')], env=env, cwd=fx.tmp,
                             stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE)
        time.sleep(rng.uniform(0, life))
        fx.kill_daemon()
        try:
            out, err = p.communicate(timeout=20)
        except subprocess.TimeoutExpired:
            p.kill()
            p.communicate()
            fail('race %d: the application hung after the daemon died' % i)
        if p.returncode < 0 or p.returncode not in (0, 1):
            log(indent(out.decode()) + indent(err.decode(), '  ! '))
            fail('race %d: the application ended with %s' % (i, describe_rc(p.returncode)))
        m = re.search(r'^devices: (\d+)$', out.decode(), re.M)
        key = 'devices %s' % m.group(1) if m else 'exit %d' % p.returncode
        outcomes[key] = outcomes.get(key, 0) + 1
    log('outcomes of %d races: %s' % (n, outcomes))
    fx.start_daemon()


def test_killstorm(fx):
    """50 clients killed at random points beside 2 clients computing
    throughout: the two get every result right, everything returns to zero,
    and the server's memory, fds and threads do not grow."""
    if fx.direct:
        raise TestSkip('the kill storm is gpud\'s')
    import random
    rng = random.Random(7)
    programs = [[fx.prog('vk_compute'), '--elements', '65536', '--iterations', '20'],
                [fx.prog('vk_render')], [fx.prog('vk_sync'), '--only', 'fences'],
                [fx.prog('vk_lost')]]
    env = fx.gpud_env(VARIANTS[1])
    if 'ASAN_OPTIONS' in os.environ:
        # AddressSanitizer keeps freed memory back (256 MB of it) to catch
        # its use: bounded here, so that the server's size means something
        fx.stop_daemon()
        fx.daemon_env = {'ASAN_OPTIONS': os.environ['ASAN_OPTIONS'] + ':quarantine_size_mb=1'}
        fx.start_daemon()
        fx.daemon_env = {}
    for prog in programs[:3]:   # warm up: what the server allocates once
        fx.run(prog, env, show_output=False)
    wait_for_cleanup(fx, set(), {'objects': 0, 'memory_bytes': 0})
    base = proc_status(fx.daemon.pid)
    log('server before: rss %d kB, %d threads, %d fds' % base[:3])
    until = os.path.join(fx.tmp, 'storm-over')
    good = [start_client(fx, [fx.prog('vk_compute'), '--iterations', '2', '--elements',
                              '65536', '--until', until], env, label='good %d' % i)
            for i in range(2)]
    victims = []
    for i in range(50):
        p = subprocess.Popen(rng.choice(programs), env=env, cwd=fx.tmp,
                             stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL)
        time.sleep(rng.uniform(0.0, 0.25))
        p.kill()
        p.wait()
        victims.append(p.pid)
    if any(g.poll() is not None for g in good):
        fail('a good client stopped during the storm')
    open(until, 'w').close()
    for i, g in enumerate(good):
        finish_client(g, 600, 'good client %d' % i)
    status = wait_for_cleanup(fx, set(victims) | {g.pid for g in good},
                              {'objects': 0, 'memory_bytes': 0})
    if status['clients']:
        fail('clients left after the storm: %s' % json.dumps(status))
    time.sleep(0.5)
    after = proc_status(fx.daemon.pid)
    log('server after:  rss %d kB, %d threads, %d fds' % after[:3])
    workers = children(fx.daemon.pid)
    if len(workers) > 2:
        fail('%d workers left (a spare is expected): %r' % (len(workers), workers))
    if after[1] > base[1] or after[2] > base[2] or after[0] > base[0] + 4096:
        fail('the server grew: rss %d -> %d kB, threads %d -> %d, fds %d -> %d' %
             (base[0], after[0], base[1], after[1], base[2], after[2]))


def write_file(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, 'w') as f:
        f.write(text)


def status_limits(fx):
    limits = fx.gpudctl_status().get('limits')
    if not isinstance(limits, dict):
        fail('gpudctl status --json has no "limits" object')
    return limits


def test_config(fx):
    """Configuration files: drop-ins in name order over the main file, the
    command line over both, a bad file refused with its file:line (exit 78
    at start, the old configuration kept on SIGHUP), a reload applied
    without dropping a working client."""
    conf = os.path.join(fx.tmp, 'etc', 'gpud.conf')
    write_file(conf, '# gpud test configuration\n[gpud]\nclient-objects = 100\n'
               'spare-workers = 1\nlog-level = info\n')
    write_file(conf + '.d/20-b.conf', '[gpud]\nclient-objects = 250\n')
    write_file(conf + '.d/10-a.conf', '[gpud]\nclient-objects = 150\nspare-workers = 2\n'
               'replay-threads = 3\n')
    write_file(conf + '.d/README', 'not a .conf file: not read\n')

    # a bad file at start: exit 78 (EX_CONFIG) and where
    bad = os.path.join(fx.tmp, 'bad.conf')
    write_file(bad, '[gpud]\nisolation = process\nclient-memory = plenty\n')
    p = subprocess.run([fx.args.gpud, '--config', bad, '--socket',
                        os.path.join(fx.tmp, 'never.sock')], env=fx.base_env(),
                       stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, timeout=30)
    err = p.stderr.decode(errors='replace').strip()
    log('gpud --config bad.conf: exit %d: %s' % (p.returncode, err))
    if p.returncode != 78 or '%s:3:' % bad not in err or 'client-memory' not in err:
        fail('a bad configuration file: exit %d, "%s"; expected 78 and %s:3' %
             (p.returncode, err, bad))
    write_file(bad, '[gpud]\nno-such-setting = 1\n')
    p = subprocess.run([fx.args.gpud, '--config', bad], env=fx.base_env(),
                       stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, timeout=30)
    err = p.stderr.decode(errors='replace').strip()
    if p.returncode != 78 or 'unknown setting' not in err:
        fail('an unknown setting: exit %d, "%s"' % (p.returncode, err))
    log('gpud --config with an unknown setting: exit 78: %s' % err)
    for text, reason in (('[user 99999999999]\nnice = 1\n', 'a user number'),
                         ('[user no-such-user-here]\nnice = 1\n', 'no such user'),
                         ('[user 0]\nnice = -21\n', 'a nice level'),
                         ('[program x]\ngpu-quota = 120%\n', 'a share of the GPU')):
        write_file(bad, text)
        p = subprocess.run([fx.args.gpud, '--config', bad], env=fx.base_env(),
                           stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, timeout=30)
        err = p.stderr.decode(errors='replace').strip()
        if p.returncode != 78 or reason not in err or '%s:' % bad not in err:
            fail('%r: exit %d, "%s"; expected 78 and "%s"' % (text, p.returncode, err, reason))
        log('gpud --config with %r: exit 78: %s' % (text.split('\n')[:2], err))
    p = subprocess.run([fx.args.gpud, '--replay-threads', '9'], env=fx.base_env(),
                       stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, timeout=30)
    err = p.stderr.decode(errors='replace').strip()
    if p.returncode != 2 or 'auto or a number from 0 to 8' not in err:
        fail('--replay-threads 9: exit %d, "%s"; expected 2 and the values allowed' %
             (p.returncode, err))
    log('gpud --replay-threads 9: exit 2: %s' % err)

    fx.stop_daemon()
    fx.extra_args = ['--config', conf, '--uid-connections', '9']
    fx.start_daemon()
    limits = status_limits(fx)
    log('limits in force: %s' % limits)
    want = {'client_objects': 250, 'spare_workers': 2, 'uid_connections': 9,
            'validate': 'off', 'replay_threads': '3'}
    got = {k: limits.get(k) for k in want}
    if got != want:
        fail('configuration applied as %r, expected %r (20-b.conf after 10-a.conf after '
             'gpud.conf; the command line over all)' % (got, want))

    # a working client through a reload
    stop = os.path.join(fx.tmp, 'stop')
    p = start_client(fx, [fx.prog('vk_compute'), '--iterations', '3', '--until', stop],
                     fx.gpud_env(VARIANTS[0]), label='working client')
    time.sleep(1.0)
    write_file(conf + '.d/30-c.conf', '[gpud]\nclient-objects = 400\nvalidate = report\n'
               'uid-connections = 3\nreplay-threads = auto\n')
    os.kill(fx.daemon.pid, signal.SIGHUP)
    deadline = time.monotonic() + 5
    while status_limits(fx).get('client_objects') != 400:
        if time.monotonic() > deadline:
            fail('SIGHUP: client_objects still %r' % status_limits(fx).get('client_objects'))
        time.sleep(0.1)
    limits = status_limits(fx)
    if (limits.get('validate') != 'report' or limits.get('uid_connections') != 9 or
            limits.get('replay_threads') != 'auto'):
        fail('after the reload: %r (validate from the file, uid_connections still from '
             'the command line)' % limits)
    log('reloaded: %s' % limits)

    # a bad file on reload: the old configuration stays, the log says where
    write_file(conf + '.d/40-d.conf', '[gpud]\nspare-workers = many\n')
    os.kill(fx.daemon.pid, signal.SIGHUP)
    deadline = time.monotonic() + 5
    while fx.log_count('40-d.conf:2:') == 0:
        if time.monotonic() > deadline:
            fail('a bad file on reload: no "40-d.conf:2:" in the log')
        time.sleep(0.1)
    if status_limits(fx) != limits:
        fail('a bad file on reload changed the configuration: %r' % status_limits(fx))
    log('a bad file on reload: logged with its line, configuration unchanged')

    open(stop, 'w').close()
    finish_client(p, 60, 'the working client')
    log('the client working through both reloads finished')


def check_units(fx):
    """The units as built: systemd-analyze verify finds nothing (the
    ExecStart pointed at the built gpud), and their exposure in
    systemd-analyze security is at most 2.0."""
    analyze = shutil.which('systemd-analyze')
    built = os.path.join(os.path.dirname(os.path.dirname(fx.args.gpud)), 'systemd')
    source = os.path.join(SOURCE_DIR, 'systemd')
    if not analyze or not os.path.isdir(built):
        log('no systemd-analyze or no built units: units not checked')
        return
    units = os.path.join(fx.tmp, 'units')
    os.makedirs(units)
    for name, folder in (('gpud.service', built), ('gpud@.service', built),
                         ('gpud.socket', source), ('gpud@.socket', source)):
        with open(os.path.join(folder, name)) as f:
            text = f.read()
        text = re.sub(r'^ExecStart=\S+', 'ExecStart=' + fx.args.gpud, text, flags=re.M)
        with open(os.path.join(units, name), 'w') as f:
            f.write(text)
    # the templates as an instance, as systemd loads them
    for template in ('gpud@.service', 'gpud@.socket'):
        shutil.copy(os.path.join(units, template),
                    os.path.join(units, template.replace('@', '@renderD128')))
    for names in (['gpud.service', 'gpud.socket'],
                  ['gpud@renderD128.service', 'gpud@renderD128.socket']):
        cmd = [analyze, 'verify', '--man=no'] + [os.path.join(units, n) for n in names]
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=60,
                           cwd=units)
        out = p.stdout.decode(errors='replace').strip()
        log('$ %s\n%s' % (' '.join(cmd), indent(out) if out else '    (nothing to say)'))
        if p.returncode != 0 or out:
            fail('systemd-analyze verify complains about %s' % ', '.join(names))
    for name in ('gpud.service', 'gpud@renderD128.service'):
        cmd = [analyze, 'security', '--offline=yes', os.path.join(units, name)]
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=60,
                           cwd=units)
        out = p.stdout.decode(errors='replace')
        m = re.search(r'Overall exposure level for \S+: ([\d.]+)', out)
        if not m:
            fail('systemd-analyze security printed no exposure level:\n%s' % out)
        log('%s: exposure %s' % (name, m.group(1)))
        if float(m.group(1)) > 2.0:
            fail('%s: exposure %s, more than 2.0:\n%s' % (name, m.group(1), out))


def unit_allowed_syscalls(analyze, unit_text):
    """The system calls a unit's SystemCallFilter= lines allow: the first
    (an allow list) with its groups expanded, less those of each ~ line."""
    groups = {}

    def expand(name, out):
        if not name.startswith('@'):
            out.add(name)
            return
        if name not in groups:
            p = subprocess.run([analyze, 'syscall-filter', name], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, timeout=30)
            if p.returncode != 0:
                fail('systemd-analyze syscall-filter %s: %s' % (name, p.stderr.decode()))
            groups[name] = [w for w in (line.strip() for line in
                                        p.stdout.decode().splitlines()[1:])
                            if w and not w.startswith('#')]
        for member in groups[name]:
            expand(member, out)

    allowed, denied = set(), set()
    lines = re.findall(r'^SystemCallFilter=(.*)$', unit_text, re.M)
    if not lines or lines[0].startswith('~'):
        fail('the unit has no allow-list SystemCallFilter=')
    for line in lines:
        deny = line.startswith('~')
        for word in line.lstrip('~').split():
            expand(word, denied if deny else allowed)
    return sorted(allowed - denied)


def check_unit_filter(fx):
    """gpud.service's system-call filter, as systemd would apply it (allow
    list, EPERM for the rest, no_new_privs), around a daemon whose clients
    compute and render: the unit lets the host driver and the workers run."""
    analyze = shutil.which('systemd-analyze')
    unit = os.path.join(os.path.dirname(os.path.dirname(fx.args.gpud)), 'systemd',
                        'gpud.service')
    if not analyze or not os.path.exists(unit):
        log('no systemd-analyze or no built unit: its filter is not checked')
        return
    with open(unit) as f:
        text = f.read()
    allowed = unit_allowed_syscalls(analyze, text)
    for needed in ('read', 'execve', 'setresuid', 'ioctl', 'mmap'):
        if needed not in allowed:
            fail('the unit\'s filter expands without %s: %d calls' % (needed, len(allowed)))
    for refused in ('mount', 'ptrace', 'init_module', 'reboot', 'settimeofday'):
        if refused in allowed:
            fail('the unit\'s filter allows %s' % refused)
    path = os.path.join(fx.tmp, 'unit-syscalls')
    write_file(path, '\n'.join(allowed) + '\n')
    log('gpud.service allows %d system calls' % len(allowed))
    fx.stop_daemon()
    real_gpud = fx.args.gpud
    wrapper = os.path.join(fx.tmp, 'gpud-filtered')
    # LeakSanitizer needs ptrace, which the unit refuses (@debug): a
    # sanitizer build checks everything else under the filter
    write_file(wrapper, '#!/bin/sh\nASAN_OPTIONS="${ASAN_OPTIONS:-}:detect_leaks=0" '
               'exec %s %s %s "$@"\n' % (fx.prog('seccomp_run'), path, real_gpud))
    os.chmod(wrapper, 0o755)
    fx.args.gpud = wrapper
    try:
        fx.start_daemon()
        for prog, args in (('vk_compute', ['--iterations', '2']), ('vk_render', [])):
            fx.run([fx.prog(prog)] + args, fx.gpud_env(VARIANTS[0]),
                   label=prog + ' under the unit\'s filter')
        fx.check_daemon()
        fx.stop_daemon()
    finally:
        fx.args.gpud = real_gpud
    fx.start_daemon()
    log('a daemon under gpud.service\'s system-call filter served vk_compute and vk_render')


def check_journal(fx):
    """Under systemd (stderr the journal stream JOURNAL_STREAM names) lines
    go to the journal as entries, a client's with its id, pid, uid and name
    as fields.  Checked with a stand-in for journald's socket where no
    journald runs."""
    path = '/run/systemd/journal/socket'
    if os.geteuid() != 0 or os.path.exists(path):
        log('journald runs here (or not root): the journal fields are not checked')
        return
    os.makedirs(os.path.dirname(path), exist_ok=True)
    journal = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    journal.bind(path)
    journal.settimeout(0.5)
    sock = os.path.join(fx.tmp, 'journal.sock')
    try:
        with open(os.path.join(fx.tmp, 'journal-stderr.log'), 'wb') as err:
            st = os.fstat(err.fileno())
            env = dict(fx.base_env(), JOURNAL_STREAM='%d:%d' % (st.st_dev, st.st_ino))
            cmd = [fx.args.gpud, '--socket', sock, '--host-driver',
                   fx.args.lavapipe_manifest, '--bus', 'none'] + fx.daemon_args()
            log('$ JOURNAL_STREAM=(its stderr) ' + ' '.join(cmd))
            d = subprocess.Popen(cmd, env=env, stdin=subprocess.DEVNULL, stdout=err, stderr=err)
            try:
                deadline = time.monotonic() + 10
                while not os.path.exists(sock):
                    if time.monotonic() > deadline or d.poll() is not None:
                        fail('gpud on the journal did not start')
                    time.sleep(0.05)
                fx.run([fx.prog('vk_compute'), '--iterations', '2'],
                       fx.gpud_env(None, sock), label='journal')
            finally:
                d.terminate()
                d.wait(timeout=10)
        entries = []
        while True:
            try:
                data = journal.recv(65536).decode(errors='replace')
            except socket.timeout:
                break
            entries.append(dict(line.split('=', 1) for line in data.split('\n') if '=' in line))
    finally:
        journal.close()
        os.unlink(path)
    log('journal entries: %d' % len(entries))
    if not any(e.get('MESSAGE', '').startswith('serving ') and e.get('PRIORITY') == '5' and
               e.get('SYSLOG_IDENTIFIER') == 'gpud' for e in entries):
        fail('no "serving" entry with PRIORITY=5: %r' % entries[:3])
    mine = [e for e in entries if e.get('GPUD_CLIENT_NAME') == 'vk_compute' and
            e.get('MESSAGE', '').endswith('connected')]
    if not mine or not all(e.get('GPUD_CLIENT_ID', '').isdigit() and
                           e.get('GPUD_CLIENT_PID', '').isdigit() and
                           e.get('GPUD_CLIENT_UID') == '0' for e in mine):
        fail('the client lines lack their fields: %r' % entries)
    log('journal: %s' % mine[0])


def fake_sysfs(root):
    """A sysfs tree with two GPUs' render nodes, as gpud --sysfs reads it."""
    for name, dev, uevent in [
            ('renderD128', '226:128', 'DRIVER=nvidia\nPCI_ID=10DE:2330\n'
                                      'PCI_SLOT_NAME=0000:65:00.0\n'),
            ('renderD129', '226:129', 'DRIVER=nvidia\nPCI_ID=10DE:2330\n'
                                      'PCI_SLOT_NAME=0000:b3:00.0\n')]:
        write_file(os.path.join(root, 'class', 'drm', name, 'dev'), dev + '\n')
        write_file(os.path.join(root, 'class', 'drm', name, 'device', 'uevent'), uevent)
    return root


def gpud_once(fx, args, timeout=30):
    """gpud run to its end: (exit status, stdout, stderr)."""
    p = subprocess.run([fx.args.gpud] + args, env=fx.base_env(), stdin=subprocess.DEVNULL,
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=timeout)
    return (p.returncode, p.stdout.decode(errors='replace'),
            p.stderr.decode(errors='replace'))


def worker_cmdlines(pid):
    """The command lines of a process's children."""
    out = []
    for entry in os.listdir('/proc'):
        if not entry.isdigit():
            continue
        try:
            with open('/proc/%s/stat' % entry) as f:
                ppid = int(f.read().rsplit(')', 1)[1].split()[1])
            if ppid != pid:
                continue
            with open('/proc/%s/cmdline' % entry, 'rb') as f:
                out.append(f.read().decode(errors='replace').split('\0'))
        except (OSError, ValueError, IndexError):
            continue
    return out


def test_devices(fx):
    """Which device a daemon serves: gpud --list-devices names each with its
    selectors; a daemon started with any of them serves it and says which
    (UUID, PCI address, render node) in gpudctl; later workers serve the
    first one's device by UUID; a selector that names no device is exit 69
    with the reason (a render node from a sysfs tree whose PCI address the
    host driver does not have, an index past the end), a malformed one
    exit 2 on the command line and 78 in a file."""
    # the workers (another user, as root) read it as they would read /sys
    tree = tempfile.mkdtemp(prefix='gpud-sysfs-')
    os.chmod(tree, 0o755)
    try:
        devices_with_tree(fx, fake_sysfs(tree))
    finally:
        shutil.rmtree(tree, ignore_errors=True)


def devices_with_tree(fx, tree):
    lvp = fx.args.lavapipe_manifest
    rc, out, err = gpud_once(fx, ['--list-devices', '--host-driver', lvp, '--sysfs', tree])
    log('gpud --list-devices:\n' + out + err)
    m = re.search(r'^  index:0  (.*) \(CPU, .*\)\n\s+uuid:([0-9a-f-]{36})  pci:-  render:-$',
                  out, re.M)
    if rc != 0 or not m:
        fail('gpud --list-devices: exit %d, no index:0 line with its uuid' % rc)
    name, uuid = m.group(1), m.group(2)
    for node, pci in [('renderD128', '0000:65:00.0'), ('renderD129', '0000:b3:00.0')]:
        if not re.search(r'^  %s  226:%s  pci:%s  10de:2330  nvidia  \(no listed driver' %
                         (node, node[7:], pci), out, re.M):
            fail('gpud --list-devices does not list %s at %s from the sysfs tree' % (node, pci))

    fx.stop_daemon()
    for selector in ['uuid:' + uuid, uuid.replace('-', '').upper(), 'index:0',
                     name.split(' ')[0]]:
        fx.extra_args = ['--device', selector]
        fx.start_daemon()
        st = fx.gpudctl_status()
        got = (st.get('device'), st.get('device_uuid'), st.get('device_pci'),
               st.get('render_node'))
        if got != (name, uuid, None, None):
            fail('--device %s: gpudctl status says %r, expected %r' %
                 (selector, got, (name, uuid, None, None)))
        _, out, _ = fx.run([fx.prog('vk_enum')], fx.gpud_env(VARIANTS[0]),
                           label='--device ' + selector)
        if parse_enum(out) != ['gpud: ' + name]:
            fail('--device %s: vk_enum sees %r' % (selector, parse_enum(out)))
        # the spare workers serve the first one's device by its UUID
        deadline = time.monotonic() + 10
        workers = []
        while '--isolation=thread' not in fx.daemon_args():
            workers = [c for c in worker_cmdlines(fx.daemon.pid)
                       if c and c[0] == 'gpud-worker']
            if workers and all('uuid:' + uuid in c for c in workers):
                break
            if time.monotonic() > deadline:
                fail('--device %s: workers %r do not all serve uuid:%s' %
                     (selector, workers, uuid))
            time.sleep(0.1)
        log('--device %s: serves %s, uuid %s; workers %s' %
            (selector, name, uuid, [c[c.index('--device') + 1] for c in workers
                                     if '--device' in c]))
        fx.stop_daemon()
    fx.extra_args = []
    fx.start_daemon()

    never = os.path.join(fx.tmp, 'never.sock')
    base = ['--socket', never, '--host-driver', lvp] + fx.daemon_args()
    for args, want_rc, want in [
            (['--device', 'renderD128', '--sysfs', tree], 69,
             ['no device is render node renderD128 (PCI 0000:65:00.0, 10de:2330, driver '
              'nvidia)', 'tells no device\'s PCI address']),
            (['--device', 'renderD130', '--sysfs', tree], 69,
             ['no render node renderD130 (2 found)']),
            (['--device', 'index:1'], 69, ['no device index:1: the host driver has 1']),
            (['--device', 'pci:0000:65:00.0'], 69, ['no device at PCI address 0000:65:00.0']),
            (['--device', 'uuid:' + '0' * 32], 69,
             ['no device has UUID 00000000-0000-0000-0000-000000000000']),
            (['--device', 'gpu:0'], 2, ["--device: 'gpu:0' is not a device selector"]),
            (['--device', 'pci:65:00'], 2, ["'pci:65:00' is not a device selector"])]:
        rc, out, err = gpud_once(fx, base + args)
        log('gpud %s: exit %d: %s' % (' '.join(args), rc, err.strip().splitlines()[-1:]))
        if rc != want_rc or not all(w in err for w in want):
            fail('gpud %s: exit %d, "%s"; expected %d and %r' %
                 (' '.join(args), rc, err.strip(), want_rc, want))
        if os.path.exists(never):
            fail('gpud %s left its socket behind' % ' '.join(args))
    # no host driver named: every one the loader would find is asked
    rc, out, err = gpud_once(fx, ['--socket', never, '--device', 'pci:0000:ff:1f.7'] +
                             fx.daemon_args())
    if rc != 69 or 'no host driver has the device pci:0000:ff:1f.7' not in err:
        fail('--device pci:0000:ff:1f.7 with no --host-driver: exit %d, "%s"' %
             (rc, err.strip()))
    conf = os.path.join(fx.tmp, 'device.conf')
    write_file(conf, '[gpud]\ndevice = uuid:123\n')
    rc, out, err = gpud_once(fx, base + ['--config', conf])
    if rc != 78 or '%s:2:' % conf not in err or 'device selector' not in err:
        fail('device = uuid:123 in a file: exit %d, "%s"; expected 78 and %s:2' %
             (rc, err.strip(), conf))
    log('device = uuid:123 in a file: exit 78: %s' % err.strip())


def test_systemd(fx):
    """Socket activation and sd_notify, as systemd would drive them:
    systemd-socket-activate holds the listening socket and starts gpud on the
    first connection; gpud must serve that socket and report READY=1, keep
    petting the watchdog, and say STOPPING=1 on SIGTERM."""
    if fx.direct:
        raise TestSkip('socket activation is gpud\'s')
    check_units(fx)
    check_unit_filter(fx)
    check_journal(fx)
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


def test_pipelines(fx):
    """Compute pipelines made on eight threads at once (the worker makes
    them on threads of its own, beside the client's other commands), each
    computing with its own specialization constants, three of them at times
    from one call; the shader module destroyed at once.  Then 3000 creations
    a thread that may not compile (FAIL_ON_PIPELINE_COMPILE_REQUIRED):
    24000 answers, more than the client's 20000 objects, so the ids of
    pipelines not made must leave the table."""
    vk_pipelines = fx.prog('vk_pipelines')
    _, out, _ = fx.run([vk_pipelines, '--threads', '8', '--rounds', '6',
                        '--compile-required', '3000'], fx.gpud_env(VARIANTS[0]))
    if not re.search(r'^pipelines: 8 threads x 6 rounds computed right', out, re.M):
        fail('vk_pipelines did not report its pipelines right:\n' + out)
    m = re.search(r'^compile required: (\d+) answered VK_PIPELINE_COMPILE_REQUIRED, '
                  r'(\d+) made$', out, re.M)
    if not m or int(m.group(1)) + int(m.group(2)) != 24000:
        fail('vk_pipelines did not get 24000 answers to creations that may fail:\n' + out)
    # lavapipe keeps no pipelines: every one of them must be refused, so
    # that the ids of pipelines not made are what is counted
    if int(m.group(1)) != 24000:
        fail('lavapipe made pipelines it should have refused to compile:\n' + out)
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
    if not fx.direct:
        render_pipeline_cache(fx, vk_render, outputs[0])


def pipeline_cache_file(path):
    """A pipeline cache file of gpud's (daemon/worker/gpud_pipecache.c):
    the keys of its pipelines and the host driver's data, or None."""
    with open(path, 'rb') as f:
        data = f.read()
    if len(data) < 16 or data[:6] != b'GPUDPC':
        return None
    version, n_keys = struct.unpack_from('<HI', data, 6)
    if version != 1 or len(data) < 16 + 8 * n_keys:
        return None
    keys = struct.unpack_from('<%dQ' % n_keys, data, 16)
    return keys, data[16 + 8 * n_keys:]


def user_cache(fx, uid=None):
    """A client user's cache directory, as the daemon keeps it."""
    return os.path.join(fx.cache_dir, 'users', str(os.getuid() if uid is None else uid))


def render_pipeline_cache(fx, vk_render, reference):
    """The pipelines a program's device compiled are kept for its next run
    (daemon/worker/gpud_pipecache.c): a file in its user's cache
    directory, a valid host pipeline cache, read by the next run, which
    renders the same pixels; GPUD_PIPELINE_CACHE=off keeps none."""
    d = os.path.join(user_cache(fx), 'gpud', 'pipelines')
    try:
        for setting in ('off', ''):
            # the last run's worker writes its cache as the device goes,
            # which may be after the program ended: gone from the daemon's
            # clients, it has written it
            t0 = time.monotonic()
            while fx.gpudctl_status()['clients'] and time.monotonic() - t0 < 10:
                time.sleep(0.05)
            fx.stop_daemon()
            shutil.rmtree(d, ignore_errors=True)
            fx.daemon_env = {'GPUD_PIPELINE_CACHE': setting}
            fx.extra_args = ['--log-level', 'debug']
            fx.start_daemon()
            for run in (1, 2):
                out = os.path.join(fx.tmp, 'render-cache-%s%d.pam' % (setting, run))
                fx.run([vk_render, '--output', out], fx.gpud_env(),
                       label='gpud, pipeline cache %s, run %d' % (setting or 'on', run))
                compare_images(reference[0], reference[1], out,
                               'gpud output with the pipeline cache %s, run %d' %
                               (setting or 'on', run))
            files = [f for f in (os.listdir(d) if os.path.isdir(d) else [])
                     if '-vk_render-' in f and f.endswith('.bin')]
            if setting == 'off':
                if files:
                    fail('GPUD_PIPELINE_CACHE=off, yet the workers wrote %s' % files)
                continue
            if len(files) != 1:
                fail('one pipeline cache of vk_render expected in %s, found %s' %
                     (d, os.listdir(d) if os.path.isdir(d) else 'no such directory'))
            path = os.path.join(d, files[0])
            parsed = pipeline_cache_file(path)
            if not parsed:
                fail('%s is no pipeline cache of gpud\'s' % files[0])
            keys, data = parsed
            # VkPipelineCacheHeaderVersionOne: its size, version 1, vendor,
            # device, the pipelineCacheUUID that names the file
            size, version = struct.unpack_from('<II', data) if len(data) >= 8 else (0, 0)
            if len(data) < 32 or size < 32 or version != 1 or \
                    data[16:32].hex() not in files[0]:
                fail('%s holds no pipeline cache of the host device (%d bytes)' %
                     (files[0], len(data)))
            if not keys:
                fail('%s names none of the pipelines vk_render made' % files[0])
            read = fx.log_count('pipeline cache %s: %d bytes, %d pipelines read' %
                                (path, len(data), len(keys)))
            if read < 1:
                fail('the second run did not read the pipeline cache the first wrote')
            log('pipeline cache kept: %s, %d bytes, read by the next run' %
                (files[0], len(data)))
    finally:
        fx.stop_daemon()
        fx.daemon_env = {}
        fx.extra_args = []
        fx.start_daemon()


def test_sync(fx):
    vk_sync = fx.prog('vk_sync')
    for variant in VARIANTS:
        fx.run([vk_sync], fx.gpud_env(variant), label=variant[0])
        fx.check_daemon()


# vk_extensions' sub-tests; each prints "vk_extensions: NAME: OK: ..." when
# it passed.
EXTENSION_SUBTESTS = ['push', 'conditional', 'border', 'xfb', 'dynamic', 'address',
                      'descriptor-buffer', 'descriptor-buffer-graphics', 'dgc',
                      'host-image-copy', 'mesh']


def test_extensions(fx):
    vk_extensions = fx.prog('vk_extensions')
    for variant in VARIANTS:
        _, out, _ = fx.run([vk_extensions], fx.gpud_env(variant),
                           label=variant[0])
        fx.check_daemon()
        missing = [name for name in EXTENSION_SUBTESTS
                   if not re.search(r'^vk_extensions: %s: OK: ' % name, out,
                                    re.M)]
        if missing:
            fail('vk_extensions exited 0 without an OK line for: %s' %
                 ', '.join(missing))
    # One sub-test alone, on the device picked by name; and a sub-test name
    # that is none.
    name = 'llvmpipe' if fx.direct else 'gpud'
    fx.run([vk_extensions, '--device', name, '--test', 'push'],
           fx.gpud_env(VARIANTS[0]), label=VARIANTS[0][0])
    fx.run([vk_extensions, '--test', 'no-such-test'], fx.gpud_env(VARIANTS[0]),
           expect_rc=1, label='wrong name')
    fx.check_daemon()


RAYTRACE_SUBTESTS = ['pipeline', 'query', 'compact']


def test_raytrace(fx):
    """Ray tracing (vk_raytrace): a ray-traced image from bottom- and
    top-level structures and a shader binding table, ray queries from a
    compute shader, and structures compacted, serialised and deserialised;
    each sub-test checks its pixels itself, and through gpud its image
    must equal the host driver's own, bit for bit (the digests).  A device
    without ray tracing skips, but only where the host driver itself does."""
    vk_raytrace = fx.prog('vk_raytrace')
    digests = {}
    runs = [('direct', fx.direct_env())]
    if not fx.direct:
        runs += [(variant[0], fx.gpud_env(variant)) for variant in VARIANTS]
    for label, env in runs:
        _, out, _ = fx.run([vk_raytrace], env, label=label)
        fx.check_daemon()
        for name in RAYTRACE_SUBTESTS:
            if re.search(r'^vk_raytrace: %s: not supported by this device, skipped$' % name,
                         out, re.M):
                digests.setdefault(name, {})[label] = 'skipped'
                continue
            m = re.search(r'^vk_raytrace: %s: OK: .*digest (0x[0-9a-f]+)' % name, out, re.M)
            if not m:
                fail('%s: vk_raytrace exited 0 without an OK or skip line for %s' % (label, name))
            digests.setdefault(name, {})[label] = m.group(1)
    for name, by_run in sorted(digests.items()):
        if len(set(by_run.values())) != 1:
            fail('vk_raytrace %s: the runs differ: %s' % (
                name, ', '.join('%s %s' % kv for kv in sorted(by_run.items()))))
        log('vk_raytrace %s: %s in every run (%s)' % (
            name, next(iter(by_run.values())), ', '.join(sorted(by_run))))
    fx.run([vk_raytrace, '--test', 'no-such-test'], fx.gpud_env(VARIANTS[0]),
           expect_rc=1, label='wrong name')
    fx.check_daemon()


def external_sync_lines(out, label, gpud):
    """{'semaphore': KIND, 'fence': KIND}: how vk_external semaphore passed
    each ('sync fd' or 'opaque fd', having said OK for it), or None where
    it skipped it."""
    tested = {}
    for kind in ('semaphore', 'fence'):
        skipped = '%s: not supported by this device, skipped' % kind
        if re.search(r'^vk_external: %s$' % skipped, out, re.M):
            log('%s: %s' % (label, skipped))
            tested[kind] = None
            continue
        m = re.search(r'^vk_external: %s: OK: as an? (sync fd|opaque fd): ' %
                      kind, out, re.M)
        b = m and re.search(r'^vk_external: sync-import: %s: OK: %s -?\d+ '
                            r'imported \(\w+; ([^)]*)\)' %
                            (kind, m.group(1)), out, re.M)
        if not b:
            fail('%s: vk_external semaphore neither skipped %s nor said OK '
                 'for it in both processes' % (label, kind))
        # gpud's ICD closes an imported fd (a driver itself may keep it)
        if (gpud and b.group(1) != 'the fd closed by the import' and
                not b.group(1).startswith('no fd')):
            fail('%s: after a successful import of a %s\'s %s: %s' %
                 (label, kind, m.group(1), b.group(1)))
        log('%s: %s passed as %s' % (label, kind, m.group(1)))
        tested[kind] = m.group(1)
    return tested


def test_external(fx):
    """External memory, semaphores and fences by fd, between two clients
    (two workers).  share: opaque-fd memory exported by one process and
    imported by another (a plain and a dedicated allocation), each side
    checking the other's fill through its mapping and on its GPU, the
    import taking the importer's fd; handle types of extensions the device
    does not list (gpud's: host allocations) have no features.  semaphore:
    a semaphore and a fence passed the same way, as sync fds or else opaque
    fds (the NVIDIA driver without DRM), where the device has them (on lavapipe 22.3 it has
    neither: skipped, but only where the host driver itself lacks them).
    forged (gpud only): fds that are no exported memory are refused with
    VK_ERROR_INVALID_EXTERNAL_HANDLE, each with a log line, the fd left to
    the application, the client carrying on.  Afterwards the daemon holds
    nothing of the clients and no more fds than after the first."""
    vk_external = fx.prog('vk_external')
    refused = "refused the client's fd"
    refused_before = fx.log_count(refused)
    name = 'llvmpipe' if fx.direct else 'gpud'
    daemon_fds = None
    for variant in VARIANTS:
        _, out, _ = fx.run([vk_external, 'share'], fx.gpud_env(variant),
                           label=variant[0])
        fx.check_daemon()
        expected = [r'share: dedicated: OK: ', r'import: dedicated: OK: ',
                    r"share: OK: on '[^']*%s" % name]
        # gpud lists no VK_EXT_external_memory_host: its handle types have
        # no features through it (libplacebo would import a host pointer)
        expected.append(r'share: handle types: OK: %s' % (r'\d+' if fx.direct else '[1-9]'))
        if not re.search(r'^vk_external: share: plain: skipped', out, re.M):
            expected += [r'share: plain: OK: ', r'import: plain: OK: ']
        missing = [e for e in expected
                   if not re.search(r'^vk_external: ' + e, out, re.M)]
        if missing:
            fail('vk_external share exited 0 without lines like: %s' %
                 ', '.join(missing))
        if daemon_fds is None and not fx.direct:
            # the host driver's own fds (thread isolation) are open by now
            daemon_fds = proc_status(fx.daemon.pid)[2]

    for variant in VARIANTS:
        _, out, _ = fx.run([vk_external, 'semaphore'], fx.gpud_env(variant),
                           label=variant[0])
        fx.check_daemon()
        found = external_sync_lines(out, variant[0], not fx.direct)
        if variant is not VARIANTS[0] and found != tested:
            fail('vk_external semaphore tested %r with %s, %r with %s' %
                 (tested, VARIANTS[0][0], found, variant[0]))
        tested = found
    if not fx.direct:
        # gpud may skip only what the host driver itself lacks
        _, out, _ = fx.run([vk_external, 'semaphore'],
                           fx.direct_env(VARIANTS[1]),
                           label='the host driver directly')
        host = external_sync_lines(out, 'the host driver directly', False)
        lost = ['%s as %s' % (k, host[k]) for k in host
                if host[k] and host[k] != tested[k]]
        if lost:
            fail('the host driver passes %s, gpud does not' %
                 ' and '.join(lost))
        if fx.log_count(refused) != refused_before:
            fail('the daemon refused fds of share or semaphore')

    if fx.direct:
        log('forged: skipped on lavapipe directly (a driver may take or '
            'crash on such fds; the checks are gpud\'s)')
    else:
        _, out, _ = fx.run([vk_external, 'forged'], fx.gpud_env(VARIANTS[1]),
                           label=VARIANTS[1][0])
        fx.check_daemon()
        cases = re.findall(r'^vk_external: forged: (.+): '
                           r'VK_ERROR_INVALID_EXTERNAL_HANDLE, the fd still '
                           r'the application\'s$', out, re.M)
        if len(cases) < 8 or not re.search(r'^vk_external: forged: OK: ',
                                           out, re.M):
            fail('vk_external forged refused %d cases (%s), expected at '
                 'least 8 and an OK line' % (len(cases), ', '.join(cases)))
        with open(fx.log_path, errors='replace') as f:
            lines = [l.rstrip('\n') for l in f if refused in l]
        new = lines[refused_before:]
        if len(new) != len(cases) or not all('vk_external' in l
                                             for l in new):
            fail('%d forged fds refused, but the daemon logged %d "%s" '
                 'lines of vk_external:\n%s' %
                 (len(cases), len(new), refused, indent('\n'.join(new))))
        log('the daemon logged each refusal:\n' + indent('\n'.join(new)))

    if fx.direct:
        return
    with open(fx.log_path, errors='replace') as f:
        errors = [l for l in f if 'protocol error' in l or
                  'unexpected file descriptors' in l]
    if errors:
        fail('the daemon disconnected a client:\n' + indent(''.join(errors)))
    # Every client ended: none remains, with no objects or memory, and the
    # daemon holds no fd of theirs.
    deadline = time.monotonic() + 5
    while True:
        status = fx.gpudctl_status()
        fds = proc_status(fx.daemon.pid)[2]
        if (not status['clients'] and status['objects'] == 0 and
                status['memory_bytes'] == 0 and fds <= daemon_fds):
            break
        if time.monotonic() > deadline:
            fail('5 s after the last client the daemon holds %d objects, '
                 '%d bytes, %d fds (%d after the first client)\nstatus: %s' %
                 (status['objects'], status['memory_bytes'], fds,
                  daemon_fds, json.dumps(status)))
        time.sleep(0.2)
    log('after the clients: no clients, objects or memory left; the daemon '
        'has %d fds (%d after the first client)' % (fds, daemon_fds))
    fx.check_daemon()


def test_lost(fx):
    """A client blocked in vkWaitForFences when its daemon is SIGKILLed and
    does not come back within --restart-grace (300 ms here) gets
    VK_ERROR_DEVICE_LOST (in thread isolation at once); a restarted daemon
    serves new clients."""
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
            p.wait(timeout=2.3)
        except subprocess.TimeoutExpired:
            p.kill()
            finish_client(p, 10, 'vk_lost', expect_rc=None)
            fail('vk_lost did not exit within 2 s of the restart grace\'s end')
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


def gpudctl_json(fx, args, expect_rc=0):
    cmd = [fx.args.gpudctl, '--socket', fx.socket] + args
    p = subprocess.run(cmd, env=fx.base_env(), stdin=subprocess.DEVNULL,
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=10)
    if p.returncode != expect_rc:
        fail('%s: exit %d, expected %d: %s' % (' '.join(cmd), p.returncode, expect_rc,
                                              p.stderr.decode(errors='replace')))
    if expect_rc:
        return None
    try:
        doc = json.loads(p.stdout)
    except ValueError as e:
        fail('%s printed invalid JSON (%s)' % (' '.join(cmd), e))
    if doc.get('version') != 1:
        fail('%s: "version" is %r, expected 1' % (' '.join(cmd), doc.get('version')))
    return doc


def check_gpudctl_parts(fx, status, client):
    """gpudctl clients, client ID and faults tell what status tells."""
    if status.get('version') != 1:
        fail('gpudctl status --json: "version" %r, expected 1' % status.get('version'))
    clients = gpudctl_json(fx, ['clients', '--json'])['clients']
    if sorted(c['id'] for c in clients) != sorted(c['id'] for c in status['clients']):
        fail('gpudctl clients lists %r, status %r' %
             ([c['id'] for c in clients], [c['id'] for c in status['clients']]))
    one = gpudctl_json(fx, ['client', str(client['id']), '--json'])
    same = ('id', 'pid', 'uid', 'name', 'worker_pid')
    if {k: one['client'][k] for k in same} != {k: client[k] for k in same} or \
            not isinstance(one.get('faults'), list):
        fail('gpudctl client %d: %r, status says %r' % (client['id'], one, client))
    faults = gpudctl_json(fx, ['faults', '--json'])['faults']
    if len(faults) != len(status['faults']):
        fail('gpudctl faults: %d, status: %d' % (len(faults), len(status['faults'])))
    gpudctl_json(fx, ['client', str(max(c['id'] for c in clients) + 1000), '--json'],
                 expect_rc=1)
    log('gpudctl clients, client %d and faults agree with status' % client['id'])


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
        check_gpudctl_parts(fx, status, mine[0])
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
        two_daemons(fx)


def two_daemons(fx):
    """A second daemon: two devices for applications, two entries in
    gpudctl (which finds every daemon an application would), -d picks."""
    second = os.path.join(fx.tmp, 'second.sock')
    cmd = [fx.args.gpud, '--socket', second, '--host-driver',
           fx.args.lavapipe_manifest] + fx.daemon_args()
    log('$ ' + ' '.join(cmd))
    with open(os.path.join(fx.tmp, 'second.log'), 'wb') as logf:
        d = subprocess.Popen(cmd, env=fx.base_env(), stdin=subprocess.DEVNULL, stdout=logf,
                             stderr=logf, cwd=fx.tmp)
    try:
        deadline = time.monotonic() + 10
        while not os.path.exists(second):
            if d.poll() is not None or time.monotonic() > deadline:
                fail('the second gpud did not start')
            time.sleep(0.05)
        both = fx.socket + ':' + second
        _, out, _ = fx.run([fx.prog('vk_enum')], fx.gpud_env(VARIANTS[0], socket_path=both),
                           label='two daemons')
        if len(parse_enum(out)) != 2:
            fail('two daemons: %d devices, expected 2' % len(parse_enum(out)))
        env = fx.base_env()
        env['GPUD_SOCKET'] = both
        p = subprocess.run([fx.args.gpudctl, 'status', '--json'], env=env,
                           stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, timeout=10)
        docs = [json.loads(line) for line in p.stdout.decode().splitlines() if line.strip()]
        if p.returncode != 0 or [doc.get('socket') for doc in docs] != [fx.socket, second]:
            fail('gpudctl status --json with two daemons: exit %d, sockets %r' %
                 (p.returncode, [doc.get('socket') for doc in docs]))
        p = subprocess.run([fx.args.gpudctl, '-d', 'second', 'status', '--json'], env=env,
                           stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, timeout=10)
        docs = [json.loads(line) for line in p.stdout.decode().splitlines() if line.strip()]
        if p.returncode != 0 or [doc.get('socket') for doc in docs] != [second]:
            fail('gpudctl -d second: exit %d, %r' % (p.returncode, docs))
        p = subprocess.run([fx.args.gpudctl, 'disconnect', '1'], env=env,
                           stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, timeout=10)
        if p.returncode != 2 or b'-d NAME' not in p.stderr:
            fail('disconnect with two daemons and no -d: exit %d' % p.returncode)
        log('two daemons: two devices, two gpudctl entries, -d picks one')
    finally:
        d.terminate()
        d.wait(timeout=10)


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


# vulkaninfo's lines that may differ, as (regex, side, why): the side is
# '-' (only on the host driver directly) or '+' (only through gpud).
VULKANINFO_TEXT_DIFFERENCES = [
    (r'^\s*Instance Extensions: count = \d+$', '-+', 'follows from the lists'),
    (r'^\s*Device Extensions: count = \d+$', '-+', 'follows from the lists'),
    (r'^=+$', '-+', 'underlines a count line'),
    (r'^\s*$', '-+', 'a blank line between sections'),
    # VK_KHR_device_group's present capabilities need a surface (WSI issue)
    (r'^\s*Present Capabilities:$', '-', 'WSI: not carried yet'),
    (r'^\s*Can present images from the following devices: count = \d+$', '-',
     'WSI: not carried yet'),
    (r'^\s*Present modes: count = \d+$', '-', 'WSI: not carried yet'),
    (r'^\s*DEVICE_GROUP_PRESENT_MODE_\w+$', '-', 'WSI: not carried yet'),
    (r'^\s*.* \(ID: \d+\):?$', '-', 'WSI: a device listed in the present capabilities'),
    (r'^\s*Present Capabilities = Group does not support VK_KHR_device_group, skipping',
     '+', 'WSI: not carried yet'),
    # VK_EXT_memory_budget is gpud's own: the client's usage and budget
    (r'^\s*(budget|usage)\s+= \d+ ', '-+', 'VK_EXT_memory_budget is gpud\'s own'),
    (r'^\s*apiVersion = 1\.([4-9]|\d\d)\.', '-', 'gpud carries Vulkan 1.3'),
    (r'^\s*apiVersion = 1\.3\.', '+', 'gpud carries Vulkan 1.3'),
    # the worker runs without the privileges a higher queue priority needs
    (r'^\s*(priorityCount = \d+|priorities: count = \d+|QUEUE_GLOBAL_PRIORITY_\w+)$', '-+',
     'global queue priorities: the worker is unprivileged'),
]

# In VkPhysicalDeviceMemoryProperties: a memory type a memfd cannot be
# imported into is device memory only through gpud, and images that could
# live in imported memory are made importable, so such a type holds none.
VULKANINFO_MEMORY_TYPE_LINES = (
    r'^\s*(propertyFlags = 0x[0-9a-f]+(: count = \d+)?|MEMORY_PROPERTY_HOST_\w+_BIT|'
    r'None|color images|FORMAT_\w+|\(non-sparse(, non-transient)?\))$')


def vulkaninfo_sections(lines):
    """The section each line of vulkaninfo's text is in: the last header
    (a line followed by a line of dashes)."""
    section, out = None, []
    for i, line in enumerate(lines):
        if i + 1 < len(lines) and re.match(r'^\s*(-{3,}|={3,})$', lines[i + 1]):
            section = line.strip().rstrip(':')
        out.append(section)
    return out


def compare_vulkaninfo_text(fx, vulkaninfo, other):
    """vulkaninfo's whole text output through gpud equals the host driver's,
    but for what the generator says gpud does not carry (and why), gpud's
    own extensions, the device name's prefix and the lines listed in
    VULKANINFO_TEXT_DIFFERENCES."""
    if not fx.args.extensions_json:
        raise TestSkip('no --extensions-json')
    with open(fx.args.extensions_json) as f:
        report = json.load(f)
    texts = {}
    for tag, env in (('direct', fx.direct_env()), (other, fx.gpud_env())):
        _, out, _ = fx.run([vulkaninfo], env, label='%s (text)' % tag, show_output=False)
        texts[tag] = out.splitlines()
    a, b = texts['direct'], texts[other]
    intended, unexpected = vulkaninfo_text_differences(a, b, report)
    for why, n in sorted(intended.items()):
        log('intended (%d lines): %s' % (n, why))
    for line in unexpected:
        log('DIFF: %s' % line)
    log('vulkaninfo text: %d lines directly, %d through %s; %d lines differ as intended, '
        '%d unexpectedly' % (len(a), len(b), other, sum(intended.values()), len(unexpected)))
    if unexpected:
        fail('vulkaninfo\'s text through %s differs from the host driver\'s in %d lines '
             '(listed above as DIFF)' % (other, len(unexpected)))


# vk_props lines through gpud that differ from the host's on purpose.
PROPS_DIFFERENCES = {}


def compare_props(fx, other):
    """The core feature and property structures (Vulkan 1.1 to the newest
    the build knows, which Debian 12's vulkaninfo does not all print) through
    gpud equal the host driver's, but for PROPS_DIFFERENCES; on a 1.4 device
    vkMapMemory2 maps as vkMapMemory does."""
    outs = {}
    for tag, env in (('direct', fx.direct_env()), (other, fx.gpud_env())):
        _, out, _ = fx.run([fx.prog('vk_props')], env, label='vk_props %s' % tag,
                           show_output=False)
        outs[tag] = out.splitlines()
    a, b = outs['direct'], outs[other]
    if len(a) != len(b):
        fail('vk_props prints %d lines directly, %d through %s' % (len(a), len(b), other))
    unexpected = 0
    for x, y in zip(a, b):
        if x == y:
            continue
        key = x.split(':')[0]
        if key in PROPS_DIFFERENCES and y.split(':')[0] == key:
            log('intended: %s -> %s (%s)' % (x, y.split(': ', 1)[1], PROPS_DIFFERENCES[key]))
        else:
            log('DIFF: %s\n   vs %s' % (x, y))
            unexpected += 1
    log('vk_props: %d lines, %s' % (len(a), a[0] if a else 'nothing'))
    if unexpected:
        fail('%d lines of vk_props differ between the host driver and %s' % (unexpected, other))


def vulkaninfo_text_differences(a, b, report):
    """The lines of vulkaninfo's text output b (through gpud) that differ from
    a (the host directly): ({reason: lines} intended, [lines] unexpected)."""
    # gpud's device name is the host's with a prefix; columns are as wide
    # as the longest name in them
    a = [re.sub(r'(?<=\S)\s+', ' ', l.replace('gpud: ', '')) for l in a]
    b = [re.sub(r'(?<=\S)\s+', ' ', l.replace('gpud: ', '')) for l in b]
    sections = {'-': vulkaninfo_sections(a), '+': vulkaninfo_sections(b)}
    ext_line = r'^\s+(VK_\w+)\s+: extension revision (\d+)$'
    revisions = {side: {m.group(1): int(m.group(2)) for m in
                        (re.match(ext_line, l) for l in lines) if m}
                 for side, lines in (('-', a), ('+', b))}
    uncarried = set(report['denied'])
    unexpected, intended = [], {}
    matcher = difflib.SequenceMatcher(None, a, b, autojunk=False)
    for op, i1, i2, j1, j2 in matcher.get_opcodes():
        if op == 'equal':
            continue
        changed = [('-', i, a[i]) for i in range(i1, i2)] + [('+', j, b[j]) for j in range(j1, j2)]
        for side, index, line in changed:
            why = None
            m = re.match(ext_line, line)
            if m:
                ext = m.group(1)
                if side == '-' and ext in report['denied']:
                    why = 'not carried: ' + report['denied'][ext]
                elif side == '-' and ext not in report['carried']:
                    why = 'not in vk.xml %s' % report['vk_xml']
                elif side == '+' and ext in report['own']:
                    why = 'gpud\'s own'
                elif int(m.group(2)) != revisions['+' if side == '-' else '-'].get(ext, -1) and \
                        revisions['+'].get(ext, 0) < revisions['-'].get(ext, 0):
                    why = 'a later revision than vk.xml %s describes' % report['vk_xml']
            section = sections[side][index]
            if not why and section in report['structs'] and \
                    report['structs'][section] not in report['carried']:
                why = '%s is %s\'s' % (section, report['structs'][section])
            if not why and side == '+' and section in report['structs'] and \
                    report['structs'][section] in report['own']:
                why = '%s is %s\'s (gpud\'s own)' % (section, report['structs'][section])
            if not why and section == 'VkPhysicalDeviceMemoryProperties' and \
                    re.match(VULKANINFO_MEMORY_TYPE_LINES, line):
                why = 'a memory type a memfd cannot be imported into is device memory only'
            if not why:
                for pattern, sides, reason in VULKANINFO_TEXT_DIFFERENCES:
                    if side in sides and re.search(pattern, line):
                        why = reason
                        break
            if why:
                intended[why] = intended.get(why, 0) + 1
            else:
                unexpected.append('%s %s' % (side, line))
    return intended, unexpected


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

    compare_vulkaninfo_text(fx, vulkaninfo, other)
    compare_props(fx, other)

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
    # recordings in chunks (daemon/worker/gpud_replay.c)
    'chunk-not-recording': ('hostile-chunk-not-recording',
                            r'chunk of a command buffer that is not recording'),
    'chunk-after-end': ('hostile-chunk-after-end',
                        r'chunk of a command buffer that is not recording'),
    'chunk-freed-pool': ('hostile-chunk-freed-pool', r'chunk of an unknown command buffer'),
    'chunk-order': ('hostile-chunk-order', r'chunk 2 of a recording where 1 was next'),
    'chunk-no-begin': ('hostile-chunk-no-begin',
                       r'a recording that does not begin with vkBeginCommandBuffer'),
    'chunk-other-cb': ('hostile-chunk-other-cb',
                       r'vkCmdSetLineWidth in a chunk: on another command buffer'),
    'recorded-outside': ('hostile-recorded-outside',
                         r'vkCmdSetLineWidth outside a chunk of a recording'),
    'chunk-foreign-op': ('hostile-chunk-foreign-op',
                         r'vkDeviceWaitIdle in a chunk: not a recorded command'),
    'fd-index': ('hostile-fd-index',
                 r'in vkAllocateMemory: bad file descriptor index'),
    'host-copy-staging': ('hostile-host-copy-staging',
                          r'vkGetHostCopyStagingGPUD: a staging size the ICD never asks'),
    'host-copy-image': ('hostile-host-copy-image',
                        r'vkCopyMemoryToImage: regions and offsets differ, hostImageCopy not '
                        r'enabled, no staging memory, or an image not made for host copies'),
    # the second command: the first took the fd
    'fd-twice': ('hostile-fd-twice',
                 r'in vkGetMemoryFdPropertiesKHR: bad file descriptor index'),
    # more fds than a message may carry: refused by the ring
    'fd-many': ('hostile-fd-many', r'protocol error: malformed entry in the command ring'),
    'fd-reply-op': ('hostile-fd-reply-op',
                    r'unexpected file descriptors: no command names them'),
    'disabled-extension': ('hostile-disabled-extension',
                           r'in vkGetMemoryFdPropertiesKHR: the device did not enable the '
                           r'extension of this command'),
    'enum': ('hostile-enum', r'in vkCreateSampler: VkFilter value out of range'),
    # the rings (shared/util_ring.h): refused before they are mapped
    'ring-sizes': ('hostile-ring-sizes', r'rings of \d+ and \d+ bytes: sizes out of range'),
    'ring-small-memfd': ('hostile-ring-small-memfd', r'memfd smaller than the rings'),
    'ring-unsealed': ('hostile-ring-unsealed', r'memfd not sealed against shrinking'),
    'ring-not-memfd': ('hostile-ring-not-memfd', r'rings of \d+ and \d+ bytes: not a memfd'),
    # and what a client writes into them, checked before it is read
    'ring-entry-size': ('hostile-ring-entry-size', r'malformed entry in the command ring'),
    'ring-entry-type': ('hostile-ring-entry-type', r'malformed entry in the command ring'),
    'ring-fds-missing': ('hostile-ring-fds-missing', r'malformed entry in the command ring'),
    'ring-fragment-type': ('hostile-ring-fragment-type',
                           r'malformed entry in the command ring'),
}

# "<N>", the time (when not on the journal), then the client
LOG_CLIENT_LINE = re.compile(
    r'^(?:<\d>)?(?:\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3} )?'
    r'client (\d+) \(pid (\d+), (.*?)\): (.*)$')


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


# vk_record's tests; each prints "vk_record: NAME: OK: ..." when it passed.
RECORD_SUBTESTS = ['long', 'rerecord', 'reset', 'pool-reset', 'free', 'one-time',
                   'simultaneous', 'secondary', 'threads', 'mid-create']


def record_kill_mid_recording(fx, label):
    """A client killed while it records (chunks on their way, a recording
    never ended) leaves nothing behind."""
    baseline = wait_for_cleanup(fx, set(), {'objects': 1 << 62,
                                            'memory_bytes': 1 << 62})
    victim = start_client(fx, [fx.prog('vk_record'), '--hold'],
                          fx.gpud_env(VARIANTS[1], None) | {'GPUD_CHUNK_BYTES': '1024'},
                          label=label)
    if not victim.out.wait_for('READY', 60):
        victim.kill()
        finish_client(victim, 10, 'recording client', expect_rc=None)
        fail('the recording client never printed READY')
    time.sleep(0.5)
    mine = [c for c in fx.gpudctl_status()['clients'] if c['pid'] == victim.pid]
    if len(mine) != 1:
        fail('gpudctl status does not list the recording client (pid %d)' % victim.pid)
    log('killing the recording client pid %d with SIGKILL' % victim.pid)
    os.kill(victim.pid, signal.SIGKILL)
    finish_client(victim, 10, 'recording client', expect_rc=-signal.SIGKILL)
    status = wait_for_cleanup(fx, {victim.pid}, baseline)
    log('status after the kill: %s' % json.dumps(status))
    fx.check_daemon()


def test_record(fx):
    """Command buffers recorded, reset, freed, re-begun, submitted twice and
    recorded on threads compute what they should: with the ICD's usual
    chunks and with 1 KiB ones (a chunk every few commands), with and without
    replay threads (and with them under strict validation, which finds a host
    pool behind the application's left out of a reset); and a client killed
    while recording leaves nothing."""
    vk_record = fx.prog('vk_record')

    def run_all(env, label):
        _, out, _ = fx.run([vk_record], env, label=label)
        fx.check_daemon()
        missing = [name for name in RECORD_SUBTESTS
                   if not re.search(r'^vk_record: %s: OK: ' % re.escape(name), out, re.M)]
        if missing:
            fail('vk_record exited 0 without an OK line for: %s' % ', '.join(missing))

    small = {'GPUD_CHUNK_BYTES': '1024'}
    run_all(fx.gpud_env(VARIANTS[0]), VARIANTS[0][0])
    run_all(fx.gpud_env(VARIANTS[1]) | small, VARIANTS[1][0] + ', 1 KiB chunks')
    fx.run([vk_record, '--test', 'no-such-test'], fx.gpud_env(VARIANTS[0]),
           expect_rc=1, label='wrong name')
    if fx.direct:
        return
    record_kill_mid_recording(fx, 'no replay threads')

    # The same with two replay threads beside each worker's decoding thread
    # (the default on machines of four CPUs or more).
    fx.stop_daemon()
    fx.extra_args = ['--replay-threads', '2']
    fx.start_daemon()
    run_all(fx.gpud_env(VARIANTS[0]), 'replay threads')
    run_all(fx.gpud_env(VARIANTS[1]) | small, 'replay threads, 1 KiB chunks')
    record_kill_mid_recording(fx, 'replay threads')

    # With replay threads a pool is a few host pools, and a reset resets
    # those with a recording since their last: the validation layer under
    # the worker (strict: the client goes) finds a host pool left out by
    # its command buffer begun again while still executable.
    tests = ['--test', 'batches', '--test', 'pool-reset', '--test', 'free']
    with strict_daemon(fx, ['--validate=strict', '--replay-threads', '2'] +
                       fx.daemon_args()[:2]) as (sock, logp):
        fx.run([vk_record] + tests, fx.gpud_env(VARIANTS[0], sock),
               label='replay threads, strict validation')
        with open(logp, errors='replace') as f:
            if any('protocol error' in l or 'validation:' in l for l in f):
                fail('vk_record broke a rule under strict validation (%s)' % logp)


TRANSFER_SUBTESTS = ['upload', 'racing', 'again', 'semaphore', 'fences', 'empty', 'queues', 'burst']


def test_transfer(fx):
    """Buffer copies staged through host-visible memory, each submitted
    alone and waited for, give the host driver's bytes: beside a compute job
    on the same memory, behind binary and timeline semaphores, with fences
    polled, reset and signalled again by the GPU.  Through gpud the ICD
    makes those it can itself when nothing is in flight (into the memory it
    maps, or sending the bytes for the worker to write into its own mapping
    or on the GPU), and the worker the others it can (each counted in the
    worker's profile), with and without replay threads; with memory the
    program never maps taken for device memory, the worker's writes on the
    GPU, not waited for, come before whatever reads them."""
    vk_transfer = fx.prog('vk_transfer')

    def run_all(env, label, rounds='6'):
        _, out, _ = fx.run([vk_transfer, '--rounds', rounds], env, label=label)
        missing = [name for name in TRANSFER_SUBTESTS
                   if not re.search(r'^vk_transfer: %s: OK: ' % re.escape(name), out, re.M)]
        if missing:
            fail('vk_transfer exited 0 without an OK line for: %s' % ', '.join(missing))

    if fx.direct:
        run_all(fx.direct_env(VARIANTS[1]), 'lavapipe directly')
        return

    def profile(pattern, before):
        """The numbers of the last profile line of the pattern (the worker
        logs its profile as its client leaves)."""
        deadline = time.monotonic() + 10
        while fx.log_count('profile: ') <= before and time.monotonic() < deadline:
            time.sleep(0.05)
        with open(fx.log_path, errors='replace') as f:
            found = re.findall(pattern, f.read())
        if not found:
            return []
        last = found[-1]
        return [int(x) for x in (last if isinstance(last, tuple) else (last,))]

    icd = r'profile: (\d+) submissions of copies made by the ICD, (\d+) with bytes for ' \
          r'the worker to write, (\d+) of them on the GPU, (\d+) from upload memory'
    worker = r'profile: (\d+) submissions of copies made by the worker'
    # (ICD uploads, the daemon's environment, the profile line, its minimum
    # counts, rounds)
    modes = [
        ({}, {}, icd, [8, 0, 0, 0], '6'),
        ({'GPUD_ICD_UPLOADS': 'worker'}, {}, icd, [6, 6, 0, 0], '2'),
        ({'GPUD_ICD_UPLOADS': 'worker'}, {'GPUD_TEST_UPLOAD': 'gpu'}, icd, [6, 6, 6, 0], '2'),
        # as on a GPU: memory the program never maps is device memory, the
        # bytes written behind fences the ICD signalled at once, the larger
        # ones from its upload memory: on the GPU, not waited for; by the
        # worker's CPU where nothing is in flight
        ({'GPUD_ICD_UPLOADS': 'device'}, {'GPUD_TEST_UPLOAD': 'gpu'}, icd, [4, 4, 4, 8], '2'),
        ({'GPUD_ICD_UPLOADS': 'device'}, {}, icd, [4, 4, 0, 8], '2'),
        ({'GPUD_ICD_UPLOADS': 'off'}, {}, worker, [2], '2'),
    ]
    for threads in ([], ['--replay-threads', '2']):
        for client_env, daemon_env, pattern, least, rounds in modes:
            if threads and client_env:
                continue  # (the default alone with replay threads)
            fx.stop_daemon()
            fx.extra_args = threads
            fx.daemon_env = dict(daemon_env, GPUD_PROFILE='1')
            fx.start_daemon()
            before = fx.log_count('profile: ')
            label = '%s, %s%s' % ('replay threads' if threads else 'no replay threads',
                                  ' '.join('%s=%s' % kv for kv in client_env.items()) or
                                  'ICD uploads', ' ' + ' '.join(
                                      '%s=%s' % kv for kv in daemon_env.items()))
            run_all(dict(fx.gpud_env(VARIANTS[1]), **client_env), label,
                    '2' if threads else rounds)
            fx.stop_daemon()
            made = profile(pattern, before)
            if len(made) != len(least) or any(m < n for m, n in zip(made, least)):
                fail('%s: the copies made were %r, not at least %r' % (label, made, least))
            log('%s: copies made %r' % (label, made))
    fx.extra_args = []
    transfer_trace(fx, run_all)
    fx.daemon_env = {}
    fx.start_daemon()


def transfer_trace(fx, run_all):
    """GPUD_TRACE (a measuring aid): the ICD and the worker each write what
    happened when, and bench/trace_timeline.py lines the two up."""
    trace_dir = tempfile.mkdtemp(prefix='gpud-test-trace-')
    try:
        os.chmod(trace_dir, 0o777)  # (the workers' user writes there too)
        fx.daemon_env = {'GPUD_TRACE': trace_dir}
        fx.start_daemon()
        run_all(dict(fx.gpud_env(VARIANTS[1]), GPUD_TRACE=trace_dir), 'GPUD_TRACE', '1')
        fx.stop_daemon()
        kinds = sorted(re.sub(r'^trace-\d+-', '', n) for n in os.listdir(trace_dir))
        if 'icd' not in kinds or 'worker' not in kinds:
            fail('GPUD_TRACE: the files written were %r, not an ICD\'s and a worker\'s' % kinds)
        tool = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', 'bench',
                            'trace_timeline.py')
        p = subprocess.run([sys.executable, tool, trace_dir], capture_output=True, text=True,
                           timeout=120)
        for want in (r'^icd \d+: ', r'^  replay a command, decoding thread +\d+ ',
                     r'^  host submitted to the tracker finding it done +\d+ '):
            if p.returncode != 0 or not re.search(want, p.stdout, re.M):
                fail('GPUD_TRACE: trace_timeline.py (exit %d) printed no line like %r:\n%s%s'
                     % (p.returncode, want, p.stdout, p.stderr))
        log('GPUD_TRACE: %s lined up' % ', '.join(kinds))
    finally:
        shutil.rmtree(trace_dir, ignore_errors=True)


SUBCOMMANDS = {
    'enum': test_enum,
    'transfer': test_transfer,
    'compute': test_compute,
    'pipelines': test_pipelines,
    'systemd': test_systemd,
    'abuse': test_abuse,
    'badshader': test_badshader,
    'render': test_render,
    'sync': test_sync,
    'extensions': test_extensions,
    'raytrace': test_raytrace,
    'external': test_external,
    'record': test_record,
    'lost': test_lost,
    'multiclient': test_multiclient,
    'vulkaninfo': test_vulkaninfo,
    'hostile': test_hostile,
    'validate': test_validate,
    'debugnames': test_debugnames,
    'crash': test_crash,
    'gstreamer': test_gstreamer,
    'ffmpeg': test_ffmpeg,
    'teardown': test_teardown,
    'limits': test_limits,
    'connections': test_connections,
    'access': test_access,
    'connect': test_connect,
    'races': test_races,
    'killstorm': test_killstorm,
    'config': test_config,
    'devices': test_devices,
}


def main(subcommands=None):
    """Runs one of subcommands (name -> function(fixture); this script's
    SUBCOMMANDS by default: the WSI tests pass their own)."""
    subcommands = subcommands or SUBCOMMANDS
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--gpud', help='the daemon executable')
    ap.add_argument('--gpudctl', help='the gpudctl executable')
    ap.add_argument('--icd-manifest', help="gpud's ICD manifest (build dir)")
    ap.add_argument('--lavapipe-manifest', required=True,
                    help="lavapipe's ICD manifest")
    ap.add_argument('--bindir', required=True,
                    help='directory of the test programs')
    ap.add_argument('--extensions-json',
                    help="the generator's report of what gpud carries (wire_extensions.json)")
    ap.add_argument('--direct', action='store_true',
                    help='no daemon: run everything on lavapipe directly')
    ap.add_argument('--gpud-next',
                    help='a gpud of another version, for the upgrade test (restart_test.py)')
    ap.add_argument('subcommand', choices=sorted(subcommands))
    args = ap.parse_args()
    # Clients run in the temporary directory: make every path absolute.
    for opt in ('gpud', 'gpudctl', 'icd_manifest', 'lavapipe_manifest',
                'bindir', 'gpud_next'):
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
        subcommands[args.subcommand](fx)
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
