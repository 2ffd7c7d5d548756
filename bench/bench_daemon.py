# SPDX-License-Identifier: MIT
"""What the Python benchmarks share: the host driver to compare with, a
private gpud on it, and the environments of a client on either side."""

import os
import pwd
import signal
import socket
import subprocess
import sys
import time


def prog():
    return os.path.splitext(os.path.basename(sys.argv[0]))[0]


def default_host():
    """lavapipe's manifest, where the loader looks."""
    for m in ('/usr/share/vulkan/icd.d/lvp_icd.json',
              '/usr/share/vulkan/icd.d/lvp_icd.%s.json' % os.uname().machine):
        if os.path.exists(m):
            return m
    sys.exit('%s: name the host driver with --host-driver' % prog())


def add_daemon_args(ap):
    """--build, --host-driver and --user: what Daemon and env_for take
    (resolve_daemon_args makes them definite)."""
    ap.add_argument('--build', default=os.path.join(os.path.dirname(__file__), '..', 'build'),
                    help='a build directory, or what scripts/bundle.sh made of one (its env.sh '
                         'sourced, for the libraries)')
    ap.add_argument('--host-driver', help='the host ICD manifest (default: lavapipe)')
    ap.add_argument('--user', default=None,
                    help="the workers' user, run as root (default: gpud where it exists, else nobody)")


def resolve_daemon_args(args):
    """args.user and args.host_driver given their defaults, args.gpud and
    args.icd found in args.build (a build directory or a bundle)."""
    if args.user is None:
        try:
            pwd.getpwnam('gpud')
            args.user = 'gpud'
        except KeyError:
            args.user = 'nobody'
    args.host_driver = os.path.abspath(args.host_driver or default_host())
    build = os.path.abspath(args.build)
    if os.path.exists(os.path.join(build, 'bin', 'gpud')):
        # a bundle (scripts/bundle.sh): its manifest names the ICD beside it
        args.gpud = os.path.join(build, 'bin', 'gpud')
        args.icd = os.path.join(build, 'gpud_icd.json')
    else:
        args.gpud = os.path.join(build, 'daemon', 'gpud')
        args.icd = os.path.join(build, 'icd', 'gpud_icd.build.json')


class Daemon:
    """A private gpud on args.host_driver (args.gpud; its workers as
    args.user when run as root), its socket and log in tmp; env: more of
    its environment."""

    def __init__(self, args, tmp, extra=(), env=None):
        self.sock = os.path.join(tmp, 'gpud.sock')
        self.tmp = tmp
        self.log = open(os.path.join(tmp, 'gpud.log'), 'ab')
        cmd = [args.gpud, '--socket', self.sock, '--host-driver', args.host_driver,
               '--bus', 'none'] + list(extra)
        if os.geteuid() == 0:
            cmd += ['--user', args.user]
        self.proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=self.log,
                                     stderr=self.log,
                                     env=dict(os.environ, XDG_RUNTIME_DIR=tmp, **(env or {})))
        deadline = time.monotonic() + 30
        while True:
            s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
            try:
                s.connect(self.sock)
                break
            except OSError:
                if self.proc.poll() is not None or time.monotonic() > deadline:
                    sys.exit('%s: gpud did not start (see %s/gpud.log)' % (prog(), tmp))
                time.sleep(0.1)
            finally:
                s.close()

    def stop(self, timeout=20):
        self.proc.send_signal(signal.SIGTERM)
        self.proc.wait(timeout=timeout)
        self.log.close()


def env_for(args, daemon):
    """A client's environment: through daemon (args.icd), or on the host
    driver directly where daemon is None."""
    env = dict(os.environ)
    for k in ('VK_ICD_FILENAMES', 'VK_DRIVER_FILES', 'GPUD_SOCKET'):
        env.pop(k, None)
    if daemon:
        env['VK_ICD_FILENAMES'] = args.icd
        env['GPUD_SOCKET'] = daemon.sock
        env['XDG_RUNTIME_DIR'] = daemon.tmp
    else:
        env['VK_ICD_FILENAMES'] = args.host_driver
    return env
