#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Service tests: gpudctl over the control socket and over D-Bus, live
figures, `gpudctl top` and fault injection, with a private gpud and a
private dbus-daemon.

Usage: as gpud_test.py (same options), with one of these subcommands:

  dbus     a private bus (deny by default, plus gpud's own policy file):
           gpudctl over D-Bus and over the socket print the same JSON,
           which validates against docs/gpudctl-json.schema.json; per-queue
           submissions and busy time and per-heap memory change as a client
           works and allocates; another user sees only their own client and
           may not disconnect root's, on either path; the signals for a
           client that connects, faults and leaves.
  inject   each fault gpudctl injects has its documented effect on a real
           client (vk_inject), and a second client notices nothing:
           fail-alloc N, delay-completions MS, lose-device, crash-worker.
  top      gpudctl top in tmux shows two working clients, figures changing.
"""

import json
import os
import pwd
import re
import shutil
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gpud_test  # noqa: E402
from gpud_test import (TestSkip, as_user, fail, indent,  # noqa: E402
                       log, start_client)

SOURCE_DIR = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCHEMA = os.path.join(SOURCE_DIR, 'docs', 'gpudctl-json.schema.json')
POLICY = os.path.join(SOURCE_DIR, 'dbus', 'org.gpud.Daemon1.conf')


# ---- a JSON Schema subset (what docs/gpudctl-json.schema.json uses) ----------

def validate(doc, schema, root, path='$'):
    """Raises TestFailure at the first place doc breaks schema."""
    if '$ref' in schema:
        name = schema['$ref'].split('/')[-1]
        validate(doc, root['$defs'][name], root, path)
    for sub in schema.get('allOf', []):
        validate(doc, sub, root, path)
    if 'anyOf' in schema:
        errors = []
        for sub in schema['anyOf']:
            try:
                validate(doc, sub, root, path)
                break
            except gpud_test.TestFailure as e:
                errors.append(str(e))
        else:
            fail('%s matches none of anyOf: %s' % (path, '; '.join(errors)))
    def of_type(t):
        if t == 'integer':
            return isinstance(doc, int) and not isinstance(doc, bool)
        if t == 'null':
            return doc is None
        return isinstance(doc, {'object': dict, 'array': list, 'string': str,
                                'boolean': bool}[t])
    t = schema.get('type')
    if t and not any(of_type(one) for one in (t if isinstance(t, list) else [t])):
        fail('%s: %r is not of type %s' % (path, doc, t))
    if 'pattern' in schema and isinstance(doc, str) and not re.search(schema['pattern'], doc):
        fail('%s: %r does not match %s' % (path, doc, schema['pattern']))
    if 'minimum' in schema and doc < schema['minimum']:
        fail('%s: %r < %r' % (path, doc, schema['minimum']))
    if 'const' in schema and doc != schema['const']:
        fail('%s: %r, expected %r' % (path, doc, schema['const']))
    if 'enum' in schema and doc not in schema['enum']:
        fail('%s: %r is not one of %r' % (path, doc, schema['enum']))
    if isinstance(doc, dict):
        for key in schema.get('required', []):
            if key not in doc:
                fail('%s: "%s" missing' % (path, key))
        props = schema.get('properties', {})
        for key, value in doc.items():
            if key in props:
                validate(value, props[key], root, '%s.%s' % (path, key))
            elif isinstance(schema.get('additionalProperties'), dict):
                validate(value, schema['additionalProperties'], root, '%s.%s' % (path, key))
    if isinstance(doc, list) and 'items' in schema:
        for i, item in enumerate(doc):
            validate(item, schema['items'], root, '%s[%d]' % (path, i))


def load_schema():
    with open(SCHEMA) as f:
        return json.load(f)


# ---- a private bus -----------------------------------------------------------

BUS_CONFIG = """<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>gpud-test</type>
  <listen>unix:path=%(path)s</listen>
  <auth>EXTERNAL</auth>
  <!-- as the system bus: nothing but the bus itself, replies and signals
       unless a policy says so -->
  <policy context="default">
    <allow user="*"/>
    <deny own="*"/>
    <deny send_type="method_call"/>
    <allow send_type="signal"/>
    <allow send_requested_reply="true" send_type="method_return"/>
    <allow send_requested_reply="true" send_type="error"/>
    <allow receive_type="method_call"/>
    <allow receive_type="method_return"/>
    <allow receive_type="error"/>
    <allow receive_type="signal"/>
    <allow send_destination="org.freedesktop.DBus" send_interface="org.freedesktop.DBus"/>
    <allow send_destination="org.freedesktop.DBus"
           send_interface="org.freedesktop.DBus.Introspectable"/>
    <allow send_destination="org.freedesktop.DBus"
           send_interface="org.freedesktop.DBus.Monitoring"/>
  </policy>
  <include>%(policy)s</include>
</busconfig>
"""


class Bus:
    def __init__(self, fx):
        if not shutil.which('dbus-daemon'):
            raise TestSkip('no dbus-daemon (Debian: dbus-daemon)')
        self.dir = os.path.join(fx.tmp, 'bus')
        os.makedirs(self.dir)
        os.chmod(self.dir, 0o755)
        path = os.path.join(self.dir, 'socket')
        self.address = 'unix:path=' + path
        conf = os.path.join(self.dir, 'bus.conf')
        with open(conf, 'w') as f:
            f.write(BUS_CONFIG % {'path': path, 'policy': POLICY})
        self.conf, self.path = conf, path
        self.monitor = None
        self.start()

    def start(self):
        log('$ dbus-daemon --config-file=%s' % self.conf)
        self.proc = subprocess.Popen(['dbus-daemon', '--config-file=' + self.conf, '--nofork',
                                      '--print-address'], stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL)
        line = self.proc.stdout.readline().decode().strip()
        if not line:
            fail('dbus-daemon did not start')
        os.chmod(self.path, 0o777)

    def restart(self):
        """The bus goes away and comes back at the same address."""
        self.proc.terminate()
        self.proc.wait(timeout=10)
        if os.path.exists(self.path):
            os.unlink(self.path)
        self.start()

    def start_monitor(self):
        self.monitor = subprocess.Popen(
            ['dbus-monitor', '--address', self.address,
             "type='signal',interface='org.gpud.Daemon1'"],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        time.sleep(0.5)

    def monitored(self):
        self.monitor.terminate()
        out = self.monitor.communicate(timeout=10)[0].decode(errors='replace')
        self.monitor = None
        return out

    def close(self):
        if self.monitor:
            self.monitor.kill()
            self.monitor.wait()
        self.proc.terminate()
        self.proc.wait(timeout=10)


def wait_on_bus(fx, times, seconds):
    """Until gpud's log says `times` times that it is on the bus (it asks
    for its name without waiting, and asks again after a bus goes away)."""
    deadline = time.monotonic() + seconds
    while True:
        with open(fx.log_path, errors='replace') as f:
            n = sum('D-Bus: org.gpud.Daemon1.gpud on the' in line for line in f)
        if n >= times:
            return
        if time.monotonic() > deadline:
            fail('gpud did not say it is on the bus (%d of %d times)' % (n, times))
        time.sleep(0.1)


def restart_on_bus(fx, bus, extra=()):
    fx.stop_daemon()
    fx.extra_args = ['--bus', bus.address] + list(extra)
    fx.start_daemon()
    wait_on_bus(fx, 1, 5)


def other_user():
    """A user other than root that exists, and its primary group: nobody.
    (dbus-daemon refuses a uid without a passwd entry, and reports the
    groups the group database gives a user, not those of the process.)"""
    try:
        pw = pwd.getpwnam('nobody')
    except KeyError:
        raise TestSkip('no user nobody')
    return pw.pw_uid, pw.pw_gid


# ---- gpudctl both ways -------------------------------------------------------

def gpudctl(fx, args, bus=None, expect_rc=0, user=None, argv0=None, uid=None):
    where = ['--bus', bus.address] if bus else ['--socket', fx.socket]
    cmd = [argv0 or fx.args.gpudctl] + where + args
    env = fx.base_env()
    kw = {}
    if user:
        env['HOME'] = '/'
        kw['preexec_fn'] = user
    p = subprocess.run(cmd, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, timeout=20, cwd='/', **kw)
    out, err = p.stdout.decode(errors='replace'), p.stderr.decode(errors='replace')
    if p.returncode != expect_rc:
        fail('%s%s: exit %d, expected %d\n%s%s' % ('[uid %s] ' % uid if user else '',
                                                 ' '.join(cmd), p.returncode, expect_rc,
                                                 indent(out), indent(err, '  ! ')))
    return out, err


def gpudctl_doc(fx, args, bus=None, kind=None, schema=None, user=None, argv0=None):
    out, _ = gpudctl(fx, args + ['--json'], bus, user=user, argv0=argv0)  # noqa
    try:
        doc = json.loads(out)
    except ValueError as e:
        fail('gpudctl %s --json (%s) printed invalid JSON (%s): %s' %
             (' '.join(args), 'D-Bus' if bus else 'socket', e, out))
    if schema:
        validate(doc, schema['$defs'][kind], schema)
    return doc


LIVE = ('uptime_ms', 'connected_ms', 'age_ms', 'send_blocked_ms')


def without_live(doc):
    """doc without what changes by itself from one moment to the next."""
    if isinstance(doc, dict):
        return {k: without_live(v) for k, v in doc.items() if k not in LIVE}
    if isinstance(doc, list):
        return [without_live(v) for v in doc]
    return doc


def client_of(doc, pid):
    mine = [c for c in doc['clients'] if c['pid'] == pid]
    if len(mine) != 1:
        fail('gpudctl lists %d clients with pid %d: %r' % (len(mine), pid, doc['clients']))
    return mine[0]


def renice_tree(pids, nice):
    """Set the nice value of the processes PIDS and of all their descendants."""
    children = {}
    for entry in os.listdir('/proc'):
        if not entry.isdigit():
            continue
        try:
            with open('/proc/%s/stat' % entry) as f:
                stat = f.read()
        except OSError:
            continue
        ppid = int(stat[stat.rindex(')') + 2:].split()[1])
        children.setdefault(ppid, []).append(int(entry))
    todo = list(pids)
    while todo:
        pid = todo.pop()
        try:
            os.setpriority(os.PRIO_PROCESS, pid, nice)
            for task in os.listdir('/proc/%d/task' % pid):
                os.setpriority(os.PRIO_PROCESS, int(task), nice)
        except OSError:
            pass   # gone meanwhile
        todo.extend(children.get(pid, []))


class App:
    """vk_inject: commands on stdin, results on stdout."""

    def __init__(self, fx, label='', user=None, env=None, argv0=None):
        if user:
            log('$ [%s] vk_inject &' % label)
            self.p = subprocess.Popen([argv0], env=env, cwd='/', stdin=subprocess.PIPE,
                                      stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                      preexec_fn=user)
            self.p.out = gpud_test.LineReader(self.p.stdout)
            self.p.err = gpud_test.LineReader(self.p.stderr)
        else:
            self.p = start_client(fx, [fx.prog('vk_inject')], fx.gpud_env(), label=label,
                                  stdin=subprocess.PIPE)
        self.label = label
        self.seen = 0
        if not self.p.out.wait_for('READY', 60):
            fail('%s did not get ready: %s' % (label, self.p.err.text()))
        self.seen = len(self.p.out.lines)
        self.pid = self.p.pid

    def do(self, command, timeout=60):
        self.p.stdin.write((command + '\n').encode())
        self.p.stdin.flush()
        word = command.split()[0]
        deadline = time.monotonic() + timeout
        with self.p.out.cond:
            while True:
                for i in range(self.seen, len(self.p.out.lines)):
                    if self.p.out.lines[i].split()[:1] == [word]:
                        self.seen = i + 1
                        line = self.p.out.lines[i]
                        log('  %s: %s -> %s' % (self.label, command, line))
                        return line.split()[1:]
                left = deadline - time.monotonic()
                if self.p.out.closed or left <= 0:
                    fail('%s: no answer to "%s": %s' % (self.label, command,
                                                        self.p.err.text()))
                self.p.out.cond.wait(left)

    def quit(self):
        try:
            self.p.stdin.write(b'quit\n')
            self.p.stdin.flush()
        except BrokenPipeError:
            pass
        gpud_test.finish_client(self.p, 60, self.label)


def queue_totals(client):
    return (sum(q['submissions'] for q in client['queues']),
            sum(q['busy_ns'] for q in client['queues']))


def heap_bytes(client):
    return sum(h['memory_bytes'] for h in client['heaps'])


# ---- the tests ---------------------------------------------------------------

def test_dbus(fx):
    if fx.direct:
        raise TestSkip("gpudctl and D-Bus are gpud's")
    schema = load_schema()
    bus = Bus(fx)
    try:
        uid, gid = other_user()
        restart_on_bus(fx, bus, ['--group', str(gid)])
        bus.start_monitor()
        app = App(fx, 'root client')

        # The same view both ways, and each document of its documented shape.
        # (The client's last creations may still be on their way to its
        # worker, which takes them without a wake-up of its own on two
        # CPUs: a view that changed between the two questions is asked
        # again.)
        for kind, args in (('status', ['status']), ('clients', ['clients']),
                           ('faults', ['faults']), ('queues', ['queues']),
                           ('memory', ['memory'])):
            deadline = time.monotonic() + 10
            while True:
                a = gpudctl_doc(fx, args, None, kind, schema)
                b = gpudctl_doc(fx, args, bus, kind, schema)
                if without_live(a) == without_live(b):
                    break
                if time.monotonic() > deadline:
                    fail('gpudctl %s --json differs:\n  socket: %s\n  D-Bus:  %s' %
                         (' '.join(args), json.dumps(a), json.dumps(b)))
                time.sleep(0.2)
        status = gpudctl_doc(fx, ['status'], bus, 'status', schema)
        me = client_of(status, app.pid)
        one = gpudctl_doc(fx, ['client', str(me['id'])], bus, 'client_document', schema)
        if without_live(one) != without_live(gpudctl_doc(fx, ['client', str(me['id'])])):
            fail('gpudctl client %d --json differs between D-Bus and the socket' % me['id'])
        for want in ('device', 'queue', 'fence', 'device memory', 'buffer'):
            if not me['object_types'].get(want):
                fail('object_types has no %s: %r' % (want, me['object_types']))
        log('gpudctl over D-Bus and over the socket agree; every document validates')

        # Figures that change as the client works.
        before = client_of(gpudctl_doc(fx, ['status'], bus), app.pid)
        if app.do('work 500')[0] != 'VK_SUCCESS':
            fail('the client could not work')
        if app.do('hold 64')[0] != 'VK_SUCCESS':
            fail('the client could not allocate 64 MiB')
        for path in (None, bus):
            after = client_of(gpudctl_doc(fx, ['status'], path), app.pid)
            (s0, b0), (s1, b1) = queue_totals(before), queue_totals(after)
            if s1 <= s0 or b1 <= b0:
                fail('queue figures did not grow with work (%s): submissions %d -> %d, '
                     'busy %d -> %d ns' % ('D-Bus' if path else 'socket', s0, s1, b0, b1))
            if after['gpu_ns'] <= before['gpu_ns'] or \
                    after['gpu_ns'] != sum(q['gpu_ns'] for q in after['queues']):
                fail('GPU time did not grow with work (%s): %d -> %d ns (queues %r)' %
                     ('D-Bus' if path else 'socket', before['gpu_ns'], after['gpu_ns'],
                      [q['gpu_ns'] for q in after['queues']]))
            if heap_bytes(after) < heap_bytes(before) + (64 << 20):
                fail('heap memory did not grow by 64 MiB (%s): %d -> %d' %
                     ('D-Bus' if path else 'socket', heap_bytes(before), heap_bytes(after)))
            if any(q['in_flight'] for q in after['queues']):
                fail('work in flight after the client waited for it: %r' % after['queues'])
        log('submissions %d -> %d, busy %.3f -> %.3f s, GPU time %.3f -> %.3f s, heap memory '
            '%d -> %d bytes' % (s0, s1, b0 / 1e9, b1 / 1e9, before['gpu_ns'] / 1e9,
                                after['gpu_ns'] / 1e9, heap_bytes(before), heap_bytes(after)))
        app.do('release')

        # Another user: their own client only, and root's is not theirs to
        # disconnect, on either path.
        pub = gpud_test.public_copy(fx)
        shutil.copy(fx.prog('vk_inject'), pub)
        os.chmod(os.path.join(pub, 'vk_inject'), 0o755)
        os.chown(os.path.join(fx.tmp, 'home'), uid, gid)
        user = as_user(uid, gid, [gid])
        env = gpud_test.user_env(fx, pub)
        other = App(fx, 'uid %d client' % uid, user=user, env=env,
                    argv0=os.path.join(pub, 'vk_inject'))
        user_ctl = os.path.join(pub, 'gpudctl')
        for path in (None, bus):
            doc = gpudctl_doc(fx, ['status'], path, 'status', schema, user=user, argv0=user_ctl)
            if [c['pid'] for c in doc['clients']] != [other.pid] or doc['hidden_clients'] != 1:
                fail('uid %d sees %r (hidden %d), expected its own client only' %
                     (uid, [c['pid'] for c in doc['clients']], doc['hidden_clients']))
            _, err = gpudctl(fx, ['disconnect', str(me['id'])], path, expect_rc=1, user=user,
                             argv0=user_ctl, uid=uid)
            if 'permission denied' not in err and 'another user' not in err:
                fail('the refusal does not say why: %s' % err)
            _, err = gpudctl(fx, ['inject', str(me['id']), 'lose-device'], path, expect_rc=1,
                             user=user, argv0=user_ctl, uid=uid)
        if app.do('fence')[0] != 'VK_SUCCESS':
            fail("root's client was hurt by another user's refused calls")
        log('uid %d sees only its own client and may not disconnect or inject into '
            "root's, over the socket and over D-Bus" % uid)

        # Signals: root disconnects the other user's client over D-Bus.
        gpudctl(fx, ['disconnect', str(client_of(gpudctl_doc(fx, ['status']),
                                                 other.pid)['id'])], bus)
        other.p.stdin.close()
        other.p.wait(timeout=30)
        gpudctl(fx, ['inject', str(me['id']), 'lose-device'], bus)
        if app.do('fence')[0] != 'VK_ERROR_DEVICE_LOST':
            fail('lose-device over D-Bus did not lose the device')
        app.quit()
        time.sleep(0.5)
        signals = bus.monitored()
        for name, pid in (('ClientConnected', app.pid), ('ClientConnected', other.pid),
                          ('ClientDisconnected', other.pid), ('ClientDisconnected', app.pid)):
            pattern = r'member=%s\s*\n\s*uint64 \d+\s*\n\s*uint32 %d\b' % (name, pid)
            if not re.search(pattern, signals):
                fail('no %s signal for pid %d:\n%s' % (name, pid, indent(signals)))
        if not re.search(r'member=ClientFaulted\s*\n\s*uint64 %d\s*\n\s*string "device lost by '
                         r'fault injection' % me['id'], signals):
            fail('no ClientFaulted signal:\n%s' % indent(signals))
        log('signals: ClientConnected, ClientFaulted, ClientDisconnected')

        # The bus restarts: gpud is on it again, and answers there.
        bus.restart()
        wait_on_bus(fx, 2, 10)
        gpudctl(fx, ['status', '--json'], bus)
        log('bus restarted: gpud is on it again')
    finally:
        bus.close()


def test_inject(fx):
    if fx.direct:
        raise TestSkip("fault injection is gpud's")
    bus = Bus(fx)
    try:
        restart_on_bus(fx, bus)
        bystander = App(fx, 'bystander')
        base = float(bystander.do('fence')[1])

        def bystander_fine():
            res = bystander.do('alloc 2')
            if res != ['VK_SUCCESS', 'VK_SUCCESS']:
                fail('the bystander noticed: alloc %r' % res)
            res = bystander.do('fence')
            if res[0] != 'VK_SUCCESS' or float(res[1]) > base + 150:
                fail('the bystander noticed: fence %r' % res)

        def client_id(app):
            return client_of(gpudctl_doc(fx, ['status']), app.pid)['id']

        # fail-alloc N: the next N allocations fail, later ones succeed.
        app = App(fx, 'victim')
        cid = client_id(app)
        gpudctl(fx, ['inject', str(cid), 'fail-alloc', '3'])
        pending = client_of(gpudctl_doc(fx, ['status']), app.pid)['injected']
        if pending != ['fail-alloc 3']:
            fail('gpudctl does not show the pending injection: %r' % pending)
        res = app.do('alloc 5')
        if res != ['VK_ERROR_OUT_OF_DEVICE_MEMORY'] * 3 + ['VK_SUCCESS'] * 2:
            fail('fail-alloc 3: the allocations gave %r' % res)
        bystander_fine()

        # delay-completions MS: fence waits and fence polls end MS later,
        # a submission the ICD answers itself (vk_inject's is a copy)
        # too: gpudctl returns once the worker has told the ICD's pages.
        gpudctl(fx, ['inject', str(cid), 'delay-completions', '300'], bus)
        for how in ('fence', 'poll'):
            res = app.do(how)
            if res[0] != 'VK_SUCCESS' or float(res[1]) < 300:
                fail('delay-completions 300: %s %r' % (how, res))
        bystander_fine()
        gpudctl(fx, ['inject', str(cid), 'delay-completions', '0'])
        res = app.do('fence')
        if res[0] != 'VK_SUCCESS' or float(res[1]) >= 300:
            fail('delay-completions 0 did not end the delay: %r' % res)

        # lose-device: the next call says VK_ERROR_DEVICE_LOST.
        gpudctl(fx, ['inject', str(cid), 'lose-device'])
        for how in ('fence', 'idle'):
            res = app.do(how)
            if res[0] != 'VK_ERROR_DEVICE_LOST':
                fail('lose-device: %s %r' % (how, res))
        faults = gpudctl_doc(fx, ['faults'])['faults']
        if not any(f['client_id'] == cid and 'fault injection' in f['reason'] for f in faults):
            fail('gpudctl faults does not list the lost device: %r' % faults)
        app.quit()
        bystander_fine()

        # crash-worker: as if the host driver crashed in the worker.
        app = App(fx, 'crash victim')
        cid = client_id(app)
        gpudctl(fx, ['inject', str(cid), 'crash-worker'], bus)
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline:
            faults = gpudctl_doc(fx, ['faults'])['faults']
            if any(f['client_id'] == cid for f in faults):
                break
            time.sleep(0.1)
        # (SIGSEGV; a sanitizer's handler turns it into SIGABRT)
        if not any(f['client_id'] == cid and re.search(r'killed by SIG(SEGV|ABRT)', f['reason'])
                   for f in faults):
            fail('gpudctl faults does not list the crashed worker: %r' % faults)
        res = app.do('fence')
        if res[0] != 'VK_ERROR_DEVICE_LOST':
            fail('crash-worker: fence %r' % res)
        app.quit()
        bystander_fine()
        # the program's crash and back-off, the same on the socket and D-Bus
        crashes = [gpudctl_doc(fx, ['faults'], where)['crashes'] for where in (None, bus)]
        for c in crashes:
            if not any(x['crashes'] >= 1 and x['backoff_ms'] > 0 for x in c):
                fail('gpudctl faults shows no crashed program backing off: %r' % c)
        if [(x['name'], x['crashes'], x['backoff_ms']) for x in crashes[0]] != \
                [(x['name'], x['crashes'], x['backoff_ms']) for x in crashes[1]]:
            fail('the crashed programs differ between the socket and D-Bus: %r' % crashes)

        # Bad requests are refused with a reason.
        _, err = gpudctl(fx, ['inject', str(client_id(bystander)), 'fail-alloc', '0'],
                         expect_rc=1)
        if 'count' not in err:
            fail('fail-alloc 0 refused without a reason: %s' % err)
        gpudctl(fx, ['inject', '999999', 'lose-device'], expect_rc=1)
        gpudctl(fx, ['inject', str(client_id(bystander)), 'melt'], expect_rc=2)
        bystander.quit()
        log('fail-alloc, delay-completions, lose-device and crash-worker did what they '
            'say, to their client alone')
    finally:
        bus.close()


def test_top(fx):
    if fx.direct:
        raise TestSkip("gpudctl is gpud's")
    if not shutil.which('tmux'):
        raise TestSkip('no tmux')
    # lavapipe 25 runs each client's dispatches on a thread per CPU: with
    # two clients working, tmux and top get too little of a 2-core machine
    # to refresh for seconds; one thread each leaves them room
    os.environ['LP_NUM_THREADS'] = '1'
    fx.stop_daemon()
    fx.start_daemon()
    apps = [App(fx, 'worker %d' % i) for i in range(2)]
    # and the load runs at nice 10, so that top and tmux, which need little,
    # get it when they ask: what is checked is what top shows, not the scheduler
    renice_tree([fx.daemon.pid] + [a.pid for a in apps], 10)
    # the clients keep both cores busy: on a 2-core machine the scheduler
    # may leave top waiting seconds past its interval, so the screen is
    # read until two different frames have shown both clients working
    work_ms = 20000
    for a in apps:
        a.p.stdin.write(b'work %d\n' % work_ms)
        a.p.stdin.flush()
    started = time.monotonic()
    session = 'gpudtop%d' % os.getpid()
    env = fx.base_env()
    env.pop('TMUX', None)
    cmd = '%s --socket %s top -i 0.5' % (fx.args.gpudctl, fx.socket)
    subprocess.run(['tmux', 'new-session', '-d', '-s', session, '-x', '160', '-y', '40', cmd],
                   env=env, check=True, timeout=10)

    def working(screen):
        """The rows of both clients with submissions per second, or None."""
        rows = {}
        for line in screen.splitlines():
            fields = line.split()
            if len(fields) > 5 and fields[1].isdigit() and int(fields[1]) in \
                    [a.pid for a in apps]:
                m = re.search(r'(\d+)%\s+([\d.]+)', line)
                if m and float(m.group(2)) > 0:
                    rows[int(fields[1])] = line
        return rows if len(rows) == 2 else None

    try:
        screens = []
        screen = ''
        while len(screens) < 2:
            if time.monotonic() - started > work_ms / 1000 - 1:
                log('last screen:\n%s' % indent(screen.rstrip()))
                if screens:
                    fail('top did not refresh')
                fail('top never showed both clients with submissions per second')
            time.sleep(0.25)
            try:
                screen = subprocess.run(['tmux', 'capture-pane', '-p', '-t', session],
                                        env=env, stdout=subprocess.PIPE, timeout=5,
                                        check=True).stdout.decode(errors='replace')
            except subprocess.TimeoutExpired:
                continue  # tmux itself starved of CPU (both cores busy): look again
            if working(screen) and (not screens or screen != screens[-1]):
                screens.append(screen)
        for i, screen in enumerate(screens):
            log('screen %d:\n%s' % (i + 1, indent(screen.rstrip())))
        subprocess.run(['tmux', 'send-keys', '-t', session, 'q'], env=env, timeout=10)
        deadline = time.monotonic() + 15
        while subprocess.run(['tmux', 'has-session', '-t', session], env=env,
                             stderr=subprocess.DEVNULL).returncode == 0:
            if time.monotonic() > deadline:
                fail('top did not quit on q')
            time.sleep(0.1)
    finally:
        subprocess.run(['tmux', 'kill-session', '-t', session], env=env,
                       stderr=subprocess.DEVNULL)
    for a in apps:
        a.quit()
    log('gpudctl top showed both clients working, refreshed and quit on q')


def test_completion(fx):
    """Fences answered in the application: vkGetFenceStatus and
    vkWaitForFences on a signalled fence send nothing to the daemon (its
    count of the client's commands stays put), nor do timeline semaphore
    reads and waits, event reads or query results from several threads; threads that each
    submit and wait cost the submits and resets only; threads waiting for fences nothing
    signals all get VK_ERROR_DEVICE_LOST, promptly, when the daemon is
    killed and does not come back within its restart grace (300 ms)."""
    if fx.direct:
        raise TestSkip("the completion page is gpud's")

    def commands(app):
        """The client's commands the worker has decoded, once the count stays
        put for 0.1 s: the asynchronous ones it sent last may still be on
        their way (a loaded machine read 0 for 8 threads' 16, and counted
        one of them in the next step)."""
        last = None
        deadline = time.monotonic() + 10
        while True:
            n = client_of(gpudctl_doc(fx, ['status']), app.pid)['commands']
            if n == last or time.monotonic() > deadline:
                return n
            last = n
            time.sleep(0.1)

    app = App(fx, 'fences')
    if app.do('fence')[0] != 'VK_SUCCESS':
        fail('the first fence wait failed')
    before = commands(app)
    if app.do('status 20000') != ['VK_SUCCESS']:
        fail('vkGetFenceStatus/vkWaitForFences on a signalled fence failed')
    after = commands(app)
    log('20000 vkGetFenceStatus and 2000 vkWaitForFences: %d commands reached the daemon'
        % (after - before))
    if after - before > 1:
        fail('status checks of a signalled fence sent %d commands' % (after - before))

    before = after
    res = app.do('threads 8')
    if res != ['VK_SUCCESS'] * 8:
        fail('8 threads waiting on their fences: %r' % res)
    after = commands(app)
    log('8 threads, each a reset, a submit and a wait: %d commands' % (after - before))
    if after - before > 16:
        fail('8 threads cost %d commands: their waits went to the daemon' % (after - before))

    def counted(word, n, first):
        """The command once (with `first`: the worker takes the objects'
        slots), then with n: its result and the commands that reached the
        daemon."""
        app.do('%s %d' % (word, first))
        before = commands(app)
        res = app.do('%s %d' % (word, n))
        return res, commands(app) - before

    # a timeline semaphore: the wait and the reads in the application; the
    # submit and the host signal are the only commands
    res, n = counted('timeline', 10000, 10)
    log('a timeline signal waited for, a host signal and 20000 counter reads: %d commands' % n)
    if res[0] != 'VK_SUCCESS':
        fail('timeline semaphore: %r' % res)
    if n > 2:
        fail('a timeline wait and 20000 reads cost %d commands (2 expected: the submit '
             'and the host signal)' % n)

    # an event: set and reset by submissions and by the host, read by 4
    # threads after their fence waits, all in the application
    res, n = counted('events', 5000, 1)
    log('events: 2 submissions, a host reset and a host set, 4 threads reading 20000 times '
        'after each: %d commands' % n)
    if res != ['VK_SUCCESS']:
        fail('events read from 4 threads: %r' % res)
    if n > 6:
        fail('80000 event reads cost %d commands (6 expected: 2 fence resets, 2 submits, '
             'the host reset and set)' % n)

    # timestamp queries: written and reset by submissions, read with their
    # availability by 4 threads after their fence waits, in the application
    res, n = counted('queries', 5000, 1)
    log('queries: 2 submissions, 4 threads reading 4 results 20000 times after each: '
        '%d commands' % n)
    if res != ['VK_SUCCESS']:
        fail('query results read from 4 threads: %r' % res)
    if n > 4:
        fail('40000 vkGetQueryPoolResults cost %d commands (4 expected: 2 fence resets and '
             '2 submits)' % n)

    # a device's memory requirements for a create info: asked once
    res, n = counted('requirements', 5000, 1)
    log('5000 vkGetDeviceBufferMemoryRequirements of one create info (and two buffers made '
        'to compare): %d commands' % n)
    if res != ['VK_SUCCESS']:
        fail('memory requirements: %r' % res)
    if n > 12:
        fail('5000 identical requirement queries cost %d commands' % n)

    # once the host says the queue or the device is idle, the page says so too
    res = app.do('settled 200')
    if res != ['VK_SUCCESS', '0']:
        fail('after vkQueueWaitIdle/vkDeviceWaitIdle the fence was unsignalled: %r' % res)
    # and what completes after such a wait still reaches the page
    for _ in range(20):
        res = app.do('fence', timeout=20)
        if res[0] != 'VK_SUCCESS' or float(res[1]) > 5000:
            fail('a fence wait after idle waits: %r' % res)
        if app.do('settled 1') != ['VK_SUCCESS', '0']:
            fail('settled after a fence wait')

    # a daemon that dies (and does not come back within its restart grace)
    # wakes every waiter with VK_ERROR_DEVICE_LOST
    app.p.stdin.write(b'block 4\n')
    app.p.stdin.flush()
    if not app.p.out.wait_for('blocked', 30):
        fail('the blocked waiters did not start: %s' % app.p.err.text())
    killed = fx.kill_daemon()
    line = app.p.out.wait_for_prefix('block ', 10)
    if not line:
        fail('4 threads waiting on fences did not return within 10 s of the daemon\'s death')
    took = time.monotonic() - killed
    log('daemon killed: "%s" after %.2f s' % (line, took))
    if line.split()[1:] != ['VK_ERROR_DEVICE_LOST'] * 4:
        fail('waiters after the daemon died: %s' % line)
    app.quit()
    fx.start_daemon()


# crash-worker needs a worker process (the sanitizer run uses threads)
gpud_test.DAEMON_ARGS['inject'] = ['--isolation=process']
# a daemon killed and not back within 300 ms loses its clients' devices
gpud_test.DAEMON_ARGS['completion'] = ['--restart-grace', '300']

SUBCOMMANDS = {
    'dbus': test_dbus,
    'inject': test_inject,
    'top': test_top,
    'completion': test_completion,
}

if __name__ == '__main__':
    sys.exit(gpud_test.main(SUBCOMMANDS))
