#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The Debian package, as a packager and a new user meet it.

Builds the binary package from this source tree with dpkg-buildpackage -b,
runs lintian (no errors), checks that its files are where Debian wants them,
then installs it with apt-get, starts the installed daemon as gpud.socket
would (systemd-socket-activate on /run/gpud/gpud.sock), and checks that
vulkaninfo through the installed ICD lists gpud's device and that gpudctl
sees the daemon; finally purges the package again.

It installs a package system-wide, so it runs only with GPUD_TEST_PACKAGE=1
(scripts/test.sh sets it), as root, where gpud is not installed already;
otherwise it is skipped (exit 77).
"""
import glob
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

SKIP = 77


def log(text):
    print(text, flush=True)


def fail(text):
    log('FAIL: ' + text)
    sys.exit(1)


def run(cmd, cwd=None, env=None, timeout=900, check=True):
    log('$ ' + ' '.join(cmd))
    p = subprocess.run(cmd, cwd=cwd, env=env, stdin=subprocess.DEVNULL,
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=timeout)
    out = p.stdout.decode(errors='replace')
    if check and p.returncode != 0:
        log(out[-6000:])
        fail('%s: exit %d' % (cmd[0], p.returncode))
    return p.returncode, out


def copy_tree(source, dest):
    """The source as a fresh clone has it: git's files, without build
    folders (or everything but build folders where there is no git)."""
    if os.path.isdir(os.path.join(source, '.git')) and shutil.which('git'):
        p = subprocess.run(['git', '-C', source, 'ls-files', '-co', '--exclude-standard', '-z'],
                           stdout=subprocess.PIPE, check=True)
        names = [n for n in p.stdout.decode().split('\0') if n]
    else:
        names = []
        for root, dirs, files in os.walk(source):
            dirs[:] = [d for d in dirs if not d.startswith(('build', '.'))]
            names += [os.path.relpath(os.path.join(root, f), source) for f in files]
    for name in names:
        src = os.path.join(source, name)
        if not os.path.isfile(src):
            continue  # deleted but not yet committed
        os.makedirs(os.path.dirname(os.path.join(dest, name)), exist_ok=True)
        shutil.copy2(src, os.path.join(dest, name))


EXPECTED = [
    './usr/bin/gpud',
    './usr/bin/gpudctl',
    './usr/share/vulkan/icd.d/gpud_icd.json',
    './lib/systemd/system/gpud.socket',
    './lib/systemd/system/gpud.service',
    './lib/systemd/system/gpud@.socket',
    './lib/systemd/system/gpud@.service',
    './lib/udev/rules.d/70-gpud.rules',
    './usr/lib/sysusers.d/gpud.conf',
    './usr/share/dbus-1/system.d/org.gpud.Daemon1.conf',
    './etc/gpud/gpud.conf',
    './usr/share/man/man8/gpud.8.gz',
    './usr/share/man/man1/gpudctl.1.gz',
    './usr/share/man/man5/gpud.conf.5.gz',
    './usr/share/doc/gpud/copyright',
]


def build(source, work):
    src = os.path.join(work, 'gpud')
    copy_tree(source, src)
    t = time.monotonic()
    run(['dpkg-buildpackage', '-b', '-uc', '-us'], cwd=src, timeout=1800)
    log('dpkg-buildpackage -b: %.0f s' % (time.monotonic() - t))
    debs = sorted(glob.glob(os.path.join(work, 'gpud_*.deb')))
    changes = glob.glob(os.path.join(work, 'gpud_*.changes'))
    if len(debs) != 1 or len(changes) != 1:
        fail('expected one gpud_*.deb and one .changes, found %r %r' % (debs, changes))
    rc, out = run(['lintian', '--fail-on', 'error', changes[0]], check=False)
    log(out.strip() or '(lintian has nothing to say)')
    if rc != 0 or any(line.startswith('E: ') for line in out.splitlines()):
        fail('lintian finds errors')
    _, out = run(['dpkg-deb', '-c', debs[0]])
    files = {line.split()[-1] for line in out.splitlines() if line.strip()}
    missing = [f for f in EXPECTED if f not in files]
    if missing:
        fail('the package lacks %s' % ', '.join(missing))
    _, out = run(['dpkg-deb', '-f', debs[0], 'Depends'])
    log('Depends: ' + out.strip())
    for dep in ('libvulkan1', 'mesa-vulkan-drivers', 'libprotobuf-c1', 'libsystemd0'):
        if dep not in out:
            fail('the package does not depend on %s' % dep)
    return debs[0]


def installed():
    p = subprocess.run(['dpkg-query', '-W', '-f=${Status}', 'gpud'], stdout=subprocess.PIPE,
                       stderr=subprocess.DEVNULL)
    return b'install ok installed' in p.stdout


def wait_path(path, proc, seconds=10):
    deadline = time.monotonic() + seconds
    while not os.path.exists(path):
        if proc.poll() is not None or time.monotonic() > deadline:
            fail('%s did not appear' % path)
        time.sleep(0.05)


def serve_installed(work):
    """The installed daemon, started on its socket's first client."""
    rc, out = run(['getent', 'passwd', 'gpud'], check=False)
    if rc != 0:
        fail('installing did not make the gpud user (sysusers)')
    log(out.strip())
    analyze = shutil.which('systemd-analyze')
    if analyze:
        _, out = run([analyze, 'verify', '--man=no', '/lib/systemd/system/gpud.socket',
                      '/lib/systemd/system/gpud.service'])
        if out.strip():
            fail('systemd-analyze verify complains about the installed units:\n' + out)
    sock = '/run/gpud/gpud.sock'
    if os.path.exists(sock):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        try:
            s.connect(sock)
            fail('%s: another gpud serves here' % sock)
        except OSError:
            log('%s: nobody listens (left by an earlier run): removed' % sock)
            os.unlink(sock)
        finally:
            s.close()
    os.makedirs('/run/gpud', exist_ok=True)
    env = dict(os.environ)
    for name in ('VK_ICD_FILENAMES', 'VK_DRIVER_FILES', 'GPUD_SOCKET', 'XDG_RUNTIME_DIR',
                 'LD_PRELOAD', 'LD_LIBRARY_PATH'):
        env.pop(name, None)
    logf = open(os.path.join(work, 'gpud.log'), 'wb')
    cmd = ['systemd-socket-activate', '--seqpacket', '-l', sock, '/usr/bin/gpud', '--bus=none']
    log('$ ' + ' '.join(cmd))
    proc = subprocess.Popen(cmd, env=env, stdin=subprocess.DEVNULL, stdout=logf, stderr=logf)
    try:
        wait_path(sock, proc)
        # the ICD finds the socket in /run/gpud by itself
        icd_env = dict(env, VK_ICD_FILENAMES='/usr/share/vulkan/icd.d/gpud_icd.json')
        _, out = run(['vulkaninfo', '--summary'], env=icd_env, timeout=120)
        log(out[-3000:])
        if 'deviceName         = gpud: llvmpipe' not in out:
            fail('vulkaninfo through the installed ICD does not list gpud\'s device')
        # and beside every other driver the loader finds
        _, out = run(['vulkaninfo', '--summary'], env=env, timeout=120)
        if 'gpud: llvmpipe' not in out:
            fail('vulkaninfo with every installed driver does not list gpud\'s device')
        _, out = run(['/usr/bin/gpudctl', 'status'], env=env, timeout=30)
        log(out)
        if 'device:       llvmpipe' not in out:
            fail('the installed gpudctl does not see the daemon')
        # root's workers ran as a uid of their own, which the daemon keeps
        if 'each client user\'s run as a uid of their own' not in out:
            fail('the installed daemon does not give workers uids of their own')
        with open('/var/lib/gpud/worker-uids') as f:
            table = f.read()
        log('/var/lib/gpud/worker-uids:\n' + table)
        if not any(line.split()[:1] == ['0'] for line in table.splitlines()):
            fail('/var/lib/gpud/worker-uids does not keep root\'s workers\' uid')
        if not os.path.isdir('/var/cache/gpud/users/0'):
            fail('the installed daemon made no cache for root\'s workers')
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        logf.close()
        # systemd-socket-activate leaves its socket behind, as systemd would
        # not: this one is the test's
        if os.path.exists(sock):
            os.unlink(sock)
        with open(os.path.join(work, 'gpud.log'), errors='replace') as f:
            log('---- the installed gpud\'s log ----\n' + f.read() + '---- end ----')
    if proc.returncode != 0:
        fail('the installed gpud exited with status %d on SIGTERM' % proc.returncode)


def main():
    source = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(
        os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    if os.environ.get('GPUD_TEST_PACKAGE') != '1':
        log('skipped: set GPUD_TEST_PACKAGE=1 to build, install and remove the package')
        return SKIP
    for tool in ('dpkg-buildpackage', 'lintian', 'apt-get', 'systemd-socket-activate',
                 'vulkaninfo'):
        if not shutil.which(tool):
            log('skipped: %s is not installed' % tool)
            return SKIP
    work = tempfile.mkdtemp(prefix='gpud-package-')
    try:
        deb = build(source, work)
        if os.geteuid() != 0:
            log('not root: the package is built and checked, not installed')
            return 0
        if installed():
            log('gpud is installed on this machine already: not installing the new one')
            return 0
        env = dict(os.environ, DEBIAN_FRONTEND='noninteractive')
        try:
            run(['apt-get', 'install', '-y', '-q', '--no-install-recommends', deb], env=env)
            serve_installed(work)
        finally:
            if installed():
                run(['apt-get', 'purge', '-y', '-q', 'gpud'], env=env, check=False)
        if installed():
            fail('apt-get purge left gpud installed')
        for left in ('/var/cache/gpud', '/var/lib/gpud'):
            if os.path.exists(left):
                fail('apt-get purge left %s' % left)
        log('the package built, passed lintian, installed, served vulkaninfo and went again')
        return 0
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == '__main__':
    sys.exit(main())
