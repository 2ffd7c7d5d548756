#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Restarts: the server goes and comes back while its workers serve on.

Usage: as gpud_test.py (same options, and --gpud-next), with one of these
subcommands:

  restart       a computing client (vk_compute, every result checked), a
                windowed one (vk_wsi on a private Xvfb, its last frame
                checked pixel by pixel) and vkcube run through a restart of
                the server by SIGTERM, a crash of the server (SIGKILL) and
                an upgrade to another build (gpud-next: another version,
                the same code); after each, gpudctl lists them with the same
                ids, workers, memory and limits, adopted, their work goes
                on, and a new client is served; vkcube's adopted worker
                crashed at the end is reported with its signal.  Then, on
                a socket held
                across restarts as systemd's socket unit holds it, a client
                started while no server runs is served by the next one.
  restart-auth  who may adopt a worker: nobody but the daemon's user can
                enter the private directory; a connection with a wrong
                token is refused (the worker serves on and the next server
                adopts it); a forged record whose socket is answered by a
                process that is not the recorded worker is not adopted.
                And what an adopted client may hold: a client adopted by a
                server whose --uid-memory it is over holds what it held,
                and its user's next allocation is refused until it is under
                the limit again.

Each test runs its daemon with worker processes (restarts are theirs).
"""

import os
import pwd
import re
import shutil
import signal
import socket
import struct
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gpud_test as gt  # noqa: E402
import wsi_test as wt  # noqa: E402
from gpud_test import fail, log, TestSkip  # noqa: E402

UTIL_MSG_CONTROL = 1

# every daemon here serves clients from worker processes
gt.DAEMON_ARGS['restart'] = ['--isolation=process']
gt.DAEMON_ARGS['restart-auth'] = ['--isolation=process']


def clients_by_pid(status):
    return {c['pid']: c for c in status['clients']}


def wait_adopted(fx, pids, timeout=10):
    """The status once every client of pids is listed, its worker adopted."""
    deadline = time.monotonic() + timeout
    while True:
        status = fx.gpudctl_status()
        mine = clients_by_pid(status)
        if all(p in mine and mine[p]['adopted'] for p in pids):
            return status
        if time.monotonic() > deadline:
            fail('%d s after the restart gpudctl does not list every client adopted: %r' %
                 (timeout, [(c['pid'], c['id'], c['adopted']) for c in status['clients']]))
        time.sleep(0.1)


def check_progress(fx, pids, what):
    """Every client's worker runs commands after the restart."""
    first = clients_by_pid(fx.gpudctl_status())
    deadline = time.monotonic() + 10
    while True:
        time.sleep(0.3)
        now = clients_by_pid(fx.gpudctl_status())
        stuck = [p for p in pids if now[p]['commands'] <= first[p]['commands']]
        if not stuck:
            break
        if time.monotonic() > deadline:
            fail('%s: clients %r ran no commands in 10 s' % (what, stuck))
    log('%s: every client runs on (%s)' % (
        what, ', '.join('%d: %d commands' % (now[p]['id'], now[p]['commands']) for p in pids)))


def steady(fx, pids):
    """The clients once each is served, holds memory (every one of them
    allocates some before its first frame) and holds what it held 0.3 and
    0.6 s before (its allocations made: a client slowed by a busy machine
    may be served a while before it allocates)."""
    deadline = time.monotonic() + 30
    seen = []
    while True:
        now = clients_by_pid(fx.gpudctl_status())
        served = all(p in now and now[p]['commands'] and now[p]['memory_bytes'] for p in pids)
        seen = (seen + [now])[-3:] if served else []
        if len(seen) == 3 and all(s[p]['memory_bytes'] == now[p]['memory_bytes']
                                  for s in seen for p in pids):
            return now
        if time.monotonic() > deadline:
            fail('the clients are not served, hold no memory, or their memory keeps '
                 'changing: %r' % now)
        time.sleep(0.3)


def check_alive(procs):
    for label, p in procs:
        if p.poll() is not None:
            gt.finish_client(p, 1, label, expect_rc=None)
            fail('%s ended during the restarts (%s)' % (label, gt.describe_rc(p.returncode)))


def stop_daemon_now(fx):
    """SIGTERM: the server goes at once, leaving its busy workers."""
    d, fx.daemon = fx.daemon, None
    d.send_signal(signal.SIGTERM)
    try:
        d.wait(timeout=5)
    except subprocess.TimeoutExpired:
        d.kill()
        fail('gpud did not stop within 5 s of SIGTERM')
    if d.returncode != 0:
        fail('gpud exited with %s after SIGTERM' % gt.describe_rc(d.returncode))


def version_of(path):
    out = subprocess.run([path, '--version'], stdout=subprocess.PIPE, check=True).stdout
    return out.decode().split()[-1]


def test_restart(fx, xvfb):
    if fx.direct:
        raise TestSkip('restarts are gpud\'s')
    next_gpud = fx.args.gpud_next
    if not next_gpud:
        fail('--gpud-next is required')
    tested = fx.args.gpud
    version, next_version = version_of(fx.args.gpud), version_of(next_gpud)
    if version == next_version:
        fail('gpud-next has the version under test (%s)' % version)

    until = os.path.join(fx.tmp, 'stop')
    env = fx.gpud_env(gt.VARIANTS[0])
    wenv = xvfb.env(env)
    compute = gt.start_client(fx, [fx.prog('vk_compute'), '--iterations', '2', '--elements',
                                   '65536', '--until', until, '--print-ready'], env,
                              label='compute')
    window = gt.start_client(fx, [fx.prog('vk_wsi'), '--hold', '--platform', 'xcb', '--mode',
                                  'fifo', '--frames', '1000000000', '--seed', '7', '--pos', '600,10', '--until',
                                  until, 'frames'], wenv, label='window')
    procs = [('compute', compute), ('window', window)]
    vkcube = shutil.which('vkcube')
    cube = None
    if vkcube:
        cube = gt.start_client(fx, [vkcube, '--c', '1000000000'], wenv, label='vkcube')
        procs.append(('vkcube', cube))
    else:
        log('vkcube is not installed: vk_wsi is the only windowed client')
    try:
        if not compute.out.wait_for('READY', 60) or not window.out.wait_for('RUNNING', 60):
            check_alive(procs)
            fail('the clients did not start')
        pids = [p.pid for _, p in procs]
        limits = fx.gpudctl_status()['limits']

        for how in ('SIGTERM', 'SIGKILL', 'upgrade'):
            before = steady(fx, pids)
            log('before: %s' % ', '.join('%s id %d worker %d memory %d' % (
                label, before[p.pid]['id'], before[p.pid]['worker_pid'],
                before[p.pid]['memory_bytes']) for label, p in procs))
            log('-- a restart by %s' % how)
            if how == 'SIGKILL':
                fx.kill_daemon()
            else:
                stop_daemon_now(fx)
            time.sleep(0.3)   # the clients work on without a server
            check_alive(procs)
            if how == 'upgrade':
                fx.args.gpud, tested = next_gpud, fx.args.gpud
            fx.start_daemon()
            status = wait_adopted(fx, pids)
            after = clients_by_pid(status)
            for label, p in procs:
                b, a = before[p.pid], after[p.pid]
                for key in ('id', 'worker_pid', 'worker_uid', 'uid', 'name', 'memory_bytes',
                            'heaps'):
                    if a[key] != b[key]:
                        fail('%s after %s: %s %r, before %r' % (label, how, key, a[key], b[key]))
                if a['worker_version'] != version:
                    fail('%s after %s: its worker says version %r, expected %r' %
                         (label, how, a['worker_version'], version))
            if status['limits'] != limits:
                fail('limits after %s: %r, before %r' % (how, status['limits'], limits))
            if how == 'upgrade' and status['daemon_version'] != next_version:
                fail('after the upgrade the daemon says version %s' % status['daemon_version'])
            log('after %s: the same %d clients, ids, workers and memory, adopted by gpud %s' %
                (how, len(pids), status['daemon_version']))
            check_progress(fx, pids, 'after ' + how)
            # new clients are served, by workers of the new server's own
            fresh = gt.start_client(fx, [fx.prog('vk_compute'), '--iterations', '2', '--until',
                                         until + '-fresh', '--print-ready'], env,
                                    label='new client after ' + how)
            if not fresh.out.wait_for('READY', 60):
                gt.finish_client(fresh, 10, 'new client', expect_rc=None)
                fail('a new client after %s got no device' % how)
            mine = clients_by_pid(fx.gpudctl_status()).get(fresh.pid)
            want = next_version if how == 'upgrade' else version
            if not mine or mine['adopted'] or mine['worker_version'] != want:
                fail('the new client after %s: %r (its worker should be gpud %s)' %
                     (how, mine, want))
            open(until + '-fresh', 'w').close()
            gt.finish_client(fresh, 60, 'new client after ' + how)
            os.unlink(until + '-fresh')
            check_alive(procs)

        # an adopted worker that crashes is reported as any: its signal, from
        # its status page (it is no child of this server), and its client's
        # device lost; the others carry on
        if cube:
            cid = clients_by_pid(fx.gpudctl_status())[cube.pid]['id']
            cmd = [fx.args.gpudctl, '--socket', fx.socket, 'inject', str(cid), 'crash-worker']
            log('$ ' + ' '.join(cmd))
            subprocess.run(cmd, env=fx.base_env(), check=True, timeout=20,
                           stdout=subprocess.DEVNULL)
            deadline = time.monotonic() + 20
            while True:
                faults = [f for f in fx.gpudctl_status()['faults'] if f['client_id'] == cid]
                if faults:
                    break
                if time.monotonic() > deadline:
                    fail('no fault listed for the crashed adopted worker of client %d' % cid)
                time.sleep(0.1)
            if 'killed by SIGSEGV' not in faults[-1]['reason']:
                fail('the adopted worker\'s crash: %r' % faults[-1]['reason'])
            log('the adopted worker of vkcube crashed: "%s"' % faults[-1]['reason'])
            try:
                cube.wait(timeout=20)
            except subprocess.TimeoutExpired:
                fail('vkcube still runs 20 s after its worker crashed')
            procs = [(label, p) for label, p in procs if p is not cube]
            cube = None
            check_alive(procs)

        # the end: every result right, the last frame on the screen exactly
        open(until, 'w').close()
        out, _ = gt.finish_client(compute, 120, 'compute')
        if not re.search(r'^vk_compute: OK', out, re.M):
            fail('vk_compute did not report its results right')
        line = window.out.wait_for_prefix('frames ', 60)
        if not line or not window.out.wait_for('HOLDING', 10):
            fail('vk_wsi did not finish its frames: %r' % window.out.text())
        frames = int(line.split()[1])
        wline = window.out.wait_for_prefix('window ', 1)
        wid = wline.split()[1] if wline and wline.split()[1].startswith('0x') else None
        wt.check_window(fx, xvfb, wid, (160, 120), frames - 1, 7,
                        'vk_wsi after the restarts')
    finally:
        open(until, 'w').close()
        for _, p in procs:
            if p.poll() is None:
                p.kill()
            p.wait()

    fx.args.gpud = tested
    held_socket(fx)


def start_on_held(fx, held, label):
    """gpud on the listening socket held (as systemd's socket unit hands
    it over: fd 3, LISTEN_FDS, LISTEN_PID)."""
    cmd = ['sh', '-c', 'LISTEN_FDS=1 LISTEN_PID=$$ exec "$@"', 'sh', fx.args.gpud,
           '--host-driver', fx.args.lavapipe_manifest] + fx.daemon_args()
    fd = held.fileno()

    def as_fd3():
        os.dup2(fd, 3)
        os.set_inheritable(3, True)

    log('$ [%s] %s' % (label, ' '.join(cmd)))
    served = fx.log_count('serving ')
    with open(fx.log_path, 'ab') as logf:
        logf.write(('--- %s (held socket)\n' % ' '.join(cmd)).encode())
        logf.flush()
        fx.daemon = subprocess.Popen(cmd, env=fx.base_env(), stdin=subprocess.DEVNULL,
                                     stdout=logf, stderr=logf, cwd=fx.tmp, pass_fds=(3,),
                                     preexec_fn=as_fd3)
    deadline = time.monotonic() + 20
    while fx.log_count('serving ') <= served:
        if fx.daemon.poll() is not None or time.monotonic() > deadline:
            fail('gpud on the held socket did not start')
        time.sleep(0.05)


def held_socket(fx):
    """The listening socket outlives each server, as systemd's socket unit
    keeps it: a client that connects while no server runs waits in its
    backlog and is served by the next."""
    log('-- restarts on a socket held across them (as systemd holds it)')
    fx.stop_daemon()
    if os.path.exists(fx.socket):
        os.unlink(fx.socket)
    held = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    held.bind(fx.socket)
    held.listen(64)
    until = os.path.join(fx.tmp, 'stop-held')
    env = fx.gpud_env(gt.VARIANTS[0])
    try:
        start_on_held(fx, held, 'first')
        old = gt.start_client(fx, [fx.prog('vk_compute'), '--iterations', '2', '--until',
                                   until, '--print-ready'], env, label='served before')
        if not old.out.wait_for('READY', 60):
            fail('the client of the held socket got no device')
        stop_daemon_now(fx)
        # no server now: this client's handshake waits in the socket
        waiting = gt.start_client(fx, [fx.prog('vk_compute'), '--iterations', '2'],
                                  dict(env, GPUD_CONNECT_TIMEOUT_MS='20000'),
                                  label='started while no server runs')
        time.sleep(0.5)
        if waiting.poll() is not None:
            gt.finish_client(waiting, 1, 'started while no server runs', expect_rc=None)
            fail('a client started while no server ran did not wait for the next')
        start_on_held(fx, held, 'second')
        out, _ = gt.finish_client(waiting, 120, 'started while no server runs')
        if 'gpud' not in out:
            fail('the client that waited was not served through gpud')
        wait_adopted(fx, [old.pid])
        open(until, 'w').close()
        gt.finish_client(old, 60, 'served before')
        log('held socket: a client that connected while no server ran was served by the '
            'next; the earlier one was adopted')
    finally:
        open(until, 'w').close()
        fx.stop_daemon()
        held.close()
        os.unlink(fx.socket)
    fx.start_daemon()


# ---- who may adopt --------------------------------------------------------------

def packet(payload):
    return struct.pack('<II', UTIL_MSG_CONTROL, 0) + payload


def pb_bytes(field, data):
    """A protobuf length-delimited field (lengths below 128)."""
    assert len(data) < 128
    return bytes([(field << 3) | 2, len(data)]) + data


def pb_varint(field, value):
    out = bytes([field << 3])
    while True:
        b = value & 0x7f
        value >>= 7
        out += bytes([b | (0x80 if value else 0)])
        if not value:
            return out


def as_user(uid, gid):
    def become():
        os.setgroups([])
        os.setgid(gid)
        os.setuid(uid)
    return become


def test_restart_auth(fx):
    if fx.direct:
        raise TestSkip('restarts are gpud\'s')
    if os.geteuid() != 0:
        raise TestSkip('needs root (another user to try the private directory)')
    until = os.path.join(fx.tmp, 'stop')
    env = fx.gpud_env(gt.VARIANTS[0])
    client = gt.start_client(fx, [fx.prog('vk_compute'), '--iterations', '2', '--until', until,
                                  '--print-ready'], env, label='client')
    try:
        if not client.out.wait_for('READY', 60):
            fail('the client got no device')
        me = clients_by_pid(fx.gpudctl_status())[client.pid]
        private = fx.socket + '.d'
        record = os.path.join(private, 'client-%d.state' % me['id'])
        adopt = os.path.join(private, 'client-%d.sock' % me['id'])
        for path in (record, adopt):
            if not os.path.exists(path):
                fail('no %s for client %d' % (path, me['id']))
        st = os.stat(private)
        if st.st_mode & 0o077 or st.st_uid != 0:
            fail('%s is mode %o, owner %d' % (private, st.st_mode & 0o777, st.st_uid))

        # another user (the workers' own) can neither read a record nor reach
        # a worker's socket, nor leave a record of its own
        pw = pwd.getpwnam(fx.worker_user())
        probe = ('import socket, sys\n'
                 'for what, act in (("read", lambda: open(sys.argv[1]).read()),\n'
                 '                  ("connect", lambda: socket.socket(socket.AF_UNIX,\n'
                 '                       socket.SOCK_SEQPACKET).connect(sys.argv[2])),\n'
                 '                  ("write", lambda: open(sys.argv[3], "w"))):\n'
                 '    try:\n'
                 '        act(); print(what, "allowed")\n'
                 '    except PermissionError:\n'
                 '        print(what, "refused")\n')
        python = shutil.which('python3', path='/usr/bin:/bin') or sys.executable
        p = subprocess.run([python, '-c', probe, record, adopt,
                            os.path.join(private, 'client-999.state')],
                           preexec_fn=as_user(pw.pw_uid, pw.pw_gid), stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, timeout=30)
        out = p.stdout.decode(errors='replace')
        log('as %s:\n%s' % (pw.pw_name, gt.indent(out)))
        if out.split('\n')[:3] != ['read refused', 'connect refused', 'write refused']:
            fail('user %s reached the private directory:\n%s' % (pw.pw_name, out))

        # the daemon's user, with a wrong token: the worker refuses
        stop_daemon_now(fx)
        s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        s.settimeout(5)
        s.connect(adopt)
        s.send(packet(pb_bytes(8, pb_bytes(1, b'\0' * 32) + pb_bytes(2, b'impostor'))))
        answer = s.recv(4096)
        s.close()
        if answer:
            fail('a worker answered an adopter with a wrong token: %r' % answer)
        deadline = time.monotonic() + 5
        while fx.log_count('refused an adopter: a wrong token') == 0:
            if time.monotonic() > deadline:
                fail('the worker did not say why it refused')
            time.sleep(0.05)
        log('a wrong token: the worker closed the connection without a word')

        # a forged record (as the daemon's user could write one) naming the
        # real worker's pid, its socket answered by this process instead
        forged_id = me['id'] + 1000
        forged_sock = os.path.join(private, 'client-%d.sock' % forged_id)
        with open(record) as f:
            text = f.read()
        text = re.sub(r'^id=\d+$', 'id=%d' % forged_id, text, flags=re.M)
        with open(os.path.join(private, 'client-%d.state' % forged_id), 'w') as f:
            f.write(text)
        os.chmod(os.path.join(private, 'client-%d.state' % forged_id), 0o600)
        impostor = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        impostor.bind(forged_sock)
        impostor.listen(4)
        fx.start_daemon()
        impostor.settimeout(10)
        conn, _ = impostor.accept()
        conn.settimeout(5)
        conn.recv(4096)   # the AdoptRequest, with the token of the record
        page = os.memfd_create('page')
        os.ftruncate(page, 4096)
        adopted = pb_varint(1, forged_id) + pb_bytes(2, b'0.0.0')
        socket.send_fds(conn, [packet(pb_bytes(9, adopted))], [page, page])
        os.close(page)
        deadline = time.monotonic() + 10
        while fx.log_count('the process answering is not its worker') == 0:
            if time.monotonic() > deadline:
                fail('the daemon did not refuse the impostor')
            time.sleep(0.1)
        conn.close()
        impostor.close()

        # the real worker, after all that, is adopted by this server
        status = wait_adopted(fx, [client.pid])
        ids = [c['id'] for c in status['clients']]
        if forged_id in ids:
            fail('the forged record was adopted: %r' % ids)
        if os.path.exists(os.path.join(private, 'client-%d.state' % forged_id)):
            fail('the forged record was not removed')
        log('the impostor was refused; the worker was adopted (client %d)' % me['id'])
        open(until, 'w').close()
        out, _ = gt.finish_client(client, 60, 'client')
        if not re.search(r'^vk_compute: OK', out, re.M):
            fail('vk_compute did not report its results right')
    finally:
        open(until, 'w').close()
        if client.poll() is None:
            client.kill()
        client.wait()
    over_limit(fx)


def over_limit(fx):
    """A client adopted over its user's limit (the new server's is lower)
    keeps what it holds; the user allocates nothing more until under it."""
    log('-- a client adopted over its user\'s memory limit')
    holder = gt.start_client(fx, [fx.prog('vk_lost'), '--hold-mb', '192'],
                             fx.gpud_env(gt.VARIANTS[0]), label='holds 192 MiB')
    try:
        if not holder.out.wait_for('WAITING', 60):
            fail('vk_lost never printed WAITING')
        before = clients_by_pid(fx.gpudctl_status())[holder.pid]
        stop_daemon_now(fx)
        fx.extra_args = ['--uid-memory', '128M']
        fx.start_daemon()
        after = clients_by_pid(wait_adopted(fx, [holder.pid]))[holder.pid]
        if after['memory_bytes'] != before['memory_bytes']:
            fail('the adopted client holds %d bytes, %d before' % (after['memory_bytes'],
                                                                  before['memory_bytes']))
        rc, out, err = fx.run([fx.prog('vk_compute'), '--iterations', '1'],
                              fx.gpud_env(gt.VARIANTS[0]), expect_rc=None,
                              label='the same user, over its limit')
        if rc == 0 or 'VK_ERROR_OUT_OF_DEVICE_MEMORY' not in out + err:
            fail('the user over its limit after the restart allocated again (%s)' %
                 gt.describe_rc(rc))
        log('a new allocation of the user over its limit: VK_ERROR_OUT_OF_DEVICE_MEMORY')
    finally:
        holder.kill()
        holder.wait()
    deadline = time.monotonic() + 10
    while fx.gpudctl_status()['memory_bytes']:
        if time.monotonic() > deadline:
            fail('the killed holder\'s memory did not come back')
        time.sleep(0.1)
    fx.run([fx.prog('vk_compute'), '--iterations', '1'], fx.gpud_env(gt.VARIANTS[0]),
           label='the same user, under its limit again')
    fx.extra_args = []


RESTART_SUBCOMMANDS = {
    'restart': lambda fx: wt.with_server(fx, wt.Xvfb, test_restart),
    'restart-auth': test_restart_auth,
}

if __name__ == '__main__':
    sys.exit(gt.main(RESTART_SUBCOMMANDS))
