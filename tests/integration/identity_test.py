#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Who workers run as, and the caches the server keeps for each user.

Usage: as gpud_test.py (same options, and --gpud-next), with one of these
subcommands (each needs root, so that real uids are used):

  identity  clients of three users (root, uid 4243, nobody) get workers of
            three uids of their own: from gpud's range, none of them gpud's
            nor a client's, in the groups of the GPU's device nodes with no
            capability; the same user's next client gets the same uid, also
            after a restart of the server and an upgrade (gpud-next)
  cache     a program's second run finds its pipelines in its user's cache
            (hits in `gpudctl cache`, socket and D-Bus alike, documents of
            the schema), another user's run of it does not; a user's cache
            over its bound is trimmed to it, least recently used files
            first, and all users' to theirs; `gpudctl cache clear` removes
            what it names and nothing else (a user their own only); a cache
            directory that cannot be written is reported at start and in
            `gpudctl status`, and clients are served without
  takeover  a worker taken over (vkTestSyscallGPUD, in builds with
            -Dtest_hooks=true) tries to open, write, list and unlink
            another user's cache files and gpud's state, and to signal,
            trace, renice and move that user's worker: every attempt fails,
            with the system-call filter on and off (--no-sandbox), while
            the same calls on its own files and itself succeed
"""

import errno
import json
import os
import pwd
import shutil
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gpud_test  # noqa: E402
from gpud_test import (TEST_GID, TEST_UID, TestSkip, as_user, fail, indent,  # noqa: E402
                       log)
import service_test  # noqa: E402

# gpud's range of workers' uids by default (daemon/server/srv_config.h)
UID_FIRST, UID_LAST = 2113929216, 2113994751
NOBODY = 65534


def need_root(fx):
    if fx.direct:
        raise TestSkip('workers and their identities are gpud\'s')
    if os.geteuid() != 0:
        raise TestSkip('needs root: clients of other users, workers of uids of their own')


def users(fx):
    """Three client users: root, TEST_UID and nobody, the last two in the
    daemon's group; (label, uid, preexec_fn or None)."""
    out = [('root', 0, None),
           ('uid %d' % TEST_UID, TEST_UID, as_user(TEST_UID, TEST_GID, [TEST_GID]))]
    try:
        pw = pwd.getpwuid(NOBODY)
        out.append(('nobody', NOBODY, as_user(NOBODY, pw.pw_gid, [TEST_GID])))
    except KeyError:
        log('no user nobody: two users only')
    return out


def public(fx):
    """The programs other users run, where they can read them."""
    pub = gpud_test.public_copy(fx)
    for prog in ('vk_render', 'vk_takeover', 'vk_pipelines'):
        dst = os.path.join(pub, prog)
        if not os.path.exists(dst):
            shutil.copy(fx.prog(prog), dst)
            os.chmod(dst, 0o755)
    os.chmod(os.path.join(fx.tmp, 'home'), 0o777)
    return pub


def client_env(fx, pub, uid):
    if uid == 0:
        return fx.gpud_env(gpud_test.VARIANTS[1])
    return gpud_test.user_env(fx, pub)


def prog_path(fx, pub, uid, name):
    return fx.prog(name) if uid == 0 else os.path.join(pub, name)


def run_as(fx, pub, user, argv, label, timeout=120):
    """Runs a program (argv[0] a name) as user to its end; its stdout."""
    name, uid, pre = user
    cmd = [prog_path(fx, pub, uid, argv[0])] + argv[1:]
    log('$ [%s] %s' % (name, ' '.join(cmd)))
    p = subprocess.run(cmd, env=client_env(fx, pub, uid), cwd='/', timeout=timeout,
                       stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, preexec_fn=pre)
    out, err = p.stdout.decode(errors='replace'), p.stderr.decode(errors='replace')
    log(indent(out) + indent(err, '  ! '))
    if p.returncode != 0:
        fail('%s (%s): %s' % (label, name, gpud_test.describe_rc(p.returncode)))
    return out


def start_as(fx, pub, user, argv, stdin=subprocess.DEVNULL):
    name, uid, pre = user
    cmd = [prog_path(fx, pub, uid, argv[0])] + argv[1:]
    log('$ [%s] %s &' % (name, ' '.join(cmd)))
    p = subprocess.Popen(cmd, env=client_env(fx, pub, uid), cwd='/', stdin=stdin,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, preexec_fn=pre)
    p.out = gpud_test.LineReader(p.stdout)
    p.err = gpud_test.LineReader(p.stderr)
    p.label = name
    return p


def proc_status(pid):
    fields = {}
    with open('/proc/%d/status' % pid) as f:
        for line in f:
            key, _, value = line.partition(':')
            fields[key] = value.split()
    return fields


def holding_clients(fx, pub, people):
    """One vk_lost per user, waiting; their status entries by user."""
    procs = [start_as(fx, pub, u, ['vk_lost']) for u in people]
    for p in procs:
        if not p.out.wait_for('WAITING', 60):
            fail('%s\'s client never got going: %s' % (p.label, p.err.text()))
    status = fx.gpudctl_status()
    mine = {}
    for u, p in zip(people, procs):
        entry = [c for c in status['clients'] if c['pid'] == p.pid]
        if len(entry) != 1:
            fail('gpudctl lists %d clients of pid %d' % (len(entry), p.pid))
        mine[u[0]] = entry[0]
    return procs, mine


def end_clients(procs):
    for p in procs:
        p.kill()
        p.wait()


def worker_uids(fx, pub, people):
    """The uid each user's worker runs as, checked against what the kernel
    says of the worker."""
    gpud_uid = pwd.getpwnam(fx.worker_user()).pw_uid
    base_groups = set(os.getgrouplist(fx.worker_user(), pwd.getpwnam(fx.worker_user()).pw_gid))
    base_groups.discard(pwd.getpwnam(fx.worker_user()).pw_gid)
    procs, mine = holding_clients(fx, pub, people)
    try:
        uids = {}
        for (name, uid, _), c in ((u, mine[u[0]]) for u in people):
            w = c['worker_uid']
            st = proc_status(c['worker_pid'])
            if st['Uid'] != [str(w)] * 4 or st['Gid'] != [str(w)] * 4:
                fail('%s\'s worker %d: uids %s, gids %s; gpudctl says %d' %
                     (name, c['worker_pid'], st['Uid'], st['Gid'], w))
            if set(int(g) for g in st['Groups']) != base_groups:
                fail('%s\'s worker is in groups %s, not those of %s\'s device nodes (%s)' %
                     (name, st['Groups'], fx.worker_user(), sorted(base_groups)))
            if int(st['CapEff'][0], 16) or int(st['CapPrm'][0], 16):
                fail('%s\'s worker keeps capabilities: %s %s' % (name, st['CapEff'], st['CapPrm']))
            if not UID_FIRST <= w <= UID_LAST or w in (0, gpud_uid, uid):
                fail('%s\'s worker runs as uid %d (gpud: %d, the client: %d, range %d-%d)' %
                     (name, w, gpud_uid, uid, UID_FIRST, UID_LAST))
            uids[name] = w
        if len(set(uids.values())) != len(uids):
            fail('two users\' workers share a uid: %r' % uids)
        log('workers: %s' % ', '.join('%s as uid %d' % kv for kv in uids.items()))
        return uids
    finally:
        end_clients(procs)


# ---- identity ----------------------------------------------------------------

def test_identity(fx):
    need_root(fx)
    pub = public(fx)
    people = users(fx)
    first = worker_uids(fx, pub, people)
    # the same users again, with their clients in another order
    again = worker_uids(fx, pub, list(reversed(people)))
    if again != first:
        fail('the next clients\' workers got other uids: %r, before %r' % (again, first))
    table = os.path.join(fx.state_dir, 'worker-uids')
    with open(table) as f:
        kept = f.read()
    log('%s:\n%s' % (table, indent(kept)))
    for name, uid, _ in people:
        if '%d %d\n' % (uid, first[name]) not in kept:
            fail('%s does not keep %s\'s uid %d' % (table, name, first[name]))
    if os.stat(table).st_mode & 0o077:
        fail('%s may be read by others: %o' % (table, os.stat(table).st_mode))

    # a restart, and an upgrade to another build, keep them
    for how in ('restart', 'upgrade'):
        fx.stop_daemon()
        if how == 'upgrade':
            if not fx.args.gpud_next:
                fail('--gpud-next is required')
            fx.args.gpud = fx.args.gpud_next
        fx.start_daemon()
        after = worker_uids(fx, pub, people)
        if after != first:
            fail('after a %s the workers got other uids: %r, before %r' % (how, after, first))
        log('after a %s: the same uids' % how)

    # each user's cache directory is their workers' own, out of the others'
    # reach
    for name, uid, _ in people:
        d = os.path.join(fx.cache_dir, 'users', str(uid))
        st = os.stat(d)
        if st.st_uid != first[name] or st.st_gid != first[name] or st.st_mode & 0o7777 != 0o700:
            fail('%s: owner %d:%d mode %o, expected %d:%d 700' %
                 (d, st.st_uid, st.st_gid, st.st_mode & 0o7777, first[name], first[name]))


# ---- caches --------------------------------------------------------------------

def cache_doc(fx, args=(), bus=None, schema=None, user=None, expect_rc=0):
    argv0 = os.path.join(gpud_test.public_copy(fx), 'gpudctl') if user else None
    out, err = service_test.gpudctl(fx, ['cache'] + list(args) + ['--json'], bus,
                                    expect_rc=expect_rc, user=user, argv0=argv0)
    if expect_rc:
        return err
    doc = json.loads(out)
    if schema:
        service_test.validate(doc, schema['$defs']['cache'], schema)
    return doc


def entry(doc, uid, program):
    found = [e for e in doc['entries'] if e['uid'] == uid and e['program'] == program]
    return found[0] if found else None


def cache_until(fx, uid, program, check, what, schema=None):
    """A user's program's entry of `gpudctl cache` once check(entry) holds
    (its worker may still be writing as the program exits)."""
    deadline = time.monotonic() + 10
    while True:
        e = entry(cache_doc(fx, schema=schema), uid, program)
        if e and check(e):
            return e
        if time.monotonic() > deadline:
            fail('%s: %r' % (what, e))
        time.sleep(0.1)


def pipelines_of(fx, uid, program):
    """The pipeline cache files of a user's program."""
    d = os.path.join(fx.cache_dir, 'users', str(uid), 'gpud', 'pipelines')
    return sorted(f for f in (os.listdir(d) if os.path.isdir(d) else [])
                  if f.split('-')[1:2] == [program])


def user_bytes(fx, uid):
    """The blocks a user's cache takes (a worker may be renaming a file
    into place or trimming one away as it is counted)."""
    total = 0
    for root, _, files in os.walk(os.path.join(fx.cache_dir, 'users', str(uid))):
        for f in files:
            try:
                total += os.lstat(os.path.join(root, f)).st_blocks * 512
            except FileNotFoundError:
                pass
    return total


def wait_for(what, check, seconds=20):
    deadline = time.monotonic() + seconds
    while not check():
        if time.monotonic() > deadline:
            fail('%s within %d s' % (what, seconds))
        time.sleep(0.1)


def unit_capabilities():
    """The capabilities gpud.service leaves the server, lower case without
    cap_ (setpriv's names)."""
    path = os.path.join(gpud_test.SOURCE_DIR, 'systemd', 'gpud.service.in')
    with open(path) as f:
        for line in f:
            if line.startswith('CapabilityBoundingSet='):
                return [c.lower()[4:] for c in line.split('=', 1)[1].split()]
    return []


def test_cache(fx):
    need_root(fx)
    pub = public(fx)
    people = users(fx)
    root, user_a = people[0], people[1]
    other = people[2] if len(people) > 2 else people[0]
    schema = service_test.load_schema()
    bus = service_test.Bus(fx)
    try:
        service_test.restart_on_bus(fx, bus, ['--group', str(TEST_GID)])
        # a program's second run finds its pipelines; another user's run
        # of it does not
        run_as(fx, pub, user_a, ['vk_render', '--output', '/dev/null'], 'first run')
        one = cache_until(fx, TEST_UID, 'vk_render', lambda e: e['misses'] and e['files'],
                          'no pipelines compiled and kept by a first run', schema)
        if one['hits'] != 0 or one['files'] != 1:
            fail('after a first run: %r' % one)
        run_as(fx, pub, user_a, ['vk_render', '--output', '/dev/null'], 'second run')
        two = cache_until(fx, TEST_UID, 'vk_render', lambda e: e['hits'],
                          'the second run found none of its pipelines', schema)
        if two['hits'] != one['misses'] or two['misses'] != one['misses']:
            fail('the second run did not find its %d pipelines: %r' % (one['misses'], two))
        run_as(fx, pub, other, ['vk_render', '--output', '/dev/null'], 'another user\'s run')
        theirs = cache_until(fx, other[1], 'vk_render', lambda e: e['misses'] and e['files'],
                             '%s\'s run compiled nothing' % other[0], schema)
        if theirs['hits'] != 0 or theirs['misses'] != one['misses']:
            fail('%s\'s run of vk_render found another user\'s pipelines: %r' % (other[0], theirs))
        doc = cache_doc(fx, schema=schema)
        drivers = entry(doc, TEST_UID, None)
        if not drivers or drivers['files'] < 1:
            fail('no host driver\'s cache of uid %d: %r' % (TEST_UID, doc['entries']))
        if service_test.without_live(doc) != service_test.without_live(
                cache_doc(fx, bus=bus, schema=schema)):
            fail('gpudctl cache differs between the socket and D-Bus')
        log('pipelines: found by the second run (%d hits), not by %s\'s' %
            (two['hits'], other[0]))

        # clear removes what it names and nothing else
        run_as(fx, pub, user_a, ['vk_compute'], 'compute')
        run_as(fx, pub, root, ['vk_render', '--output', '/dev/null'], 'root\'s run')
        cache_until(fx, 0, 'vk_render', lambda e: e['misses'] and e['files'],
                    'no pipelines kept by root\'s run')
        before = cache_doc(fx)
        cleared = cache_doc(fx, ['clear', '--user', str(TEST_UID), '--program', 'vk_render'],
                            bus=bus, schema=schema)
        if cleared['removed_files'] != 1 or pipelines_of(fx, TEST_UID, 'vk_render'):
            fail('clear of uid %d\'s vk_render: %r, left %r' %
                 (TEST_UID, cleared, pipelines_of(fx, TEST_UID, 'vk_render')))
        after = cache_doc(fx)
        for e in before['entries']:
            if (e['uid'], e['program']) == (TEST_UID, 'vk_render'):
                continue
            kept = entry(after, e['uid'], e['program'])
            if not kept or kept['files'] < e['files']:
                fail('clearing uid %d\'s vk_render took %r with it (now %r)' %
                     (TEST_UID, e, kept))
        # a user sees and clears their own, and no one else's
        mine = cache_doc(fx, user=user_a[2])
        if {e['uid'] for e in mine['entries']} != {TEST_UID}:
            fail('uid %d sees others\' caches: %r' % (TEST_UID, mine['entries']))
        err = cache_doc(fx, ['clear', '--user', '0'], user=user_a[2], expect_rc=1)
        if 'permission denied' not in err:
            fail('uid %d clearing root\'s cache: %r' % (TEST_UID, err))
        cache_doc(fx, ['clear'], user=user_a[2])
        if user_bytes(fx, TEST_UID) or not entry(cache_doc(fx), 0, 'vk_render'):
            fail('uid %d\'s clear of their own cache: %d bytes left, root\'s: %r' %
                 (TEST_UID, user_bytes(fx, TEST_UID), cache_doc(fx)['entries']))
        log('clear: what it names, nothing else; a user their own only')

        # the same, with only the capabilities the unit leaves the server
        # (no file permissions overridden: it handles a user's cache as
        # that user's workers' uid)
        caps = unit_capabilities()
        if caps and shutil.which('setpriv'):
            fx.stop_daemon()
            fx.daemon_prefix = ['setpriv', '--bounding-set=-all,' +
                                ','.join('+' + c for c in caps), '--']
            try:
                fx.start_daemon()
                run_as(fx, pub, user_a, ['vk_render', '--output', '/dev/null'], 'unit\'s caps')
                cache_until(fx, TEST_UID, 'vk_render', lambda e: e['files'] == 1,
                            'no pipeline cache kept with the unit\'s capabilities')
                cache_doc(fx, ['clear', '--user', str(TEST_UID)])
                if user_bytes(fx, TEST_UID):
                    fail('with the unit\'s capabilities (%s) the server could not clear a '
                         'cache' % ', '.join(caps))
                log('with the unit\'s capabilities only (%s): kept and cleared' % ', '.join(caps))
            finally:
                fx.stop_daemon()
                fx.daemon_prefix = []
                fx.start_daemon()

        # bounds: a user's cache over its bound is trimmed to it, least
        # recently used first, when their client ends
        fx.stop_daemon()
        fx.extra_args = ['--bus', bus.address, '--group', str(TEST_GID),
                         '--cache-size-user', '1M', '--cache-size-total', '3M']
        fx.start_daemon()
        d = os.path.join(fx.cache_dir, 'users', str(TEST_UID))
        owner = os.stat(d).st_uid
        old = os.path.join(d, 'stale-%d')
        for i in range(3):
            with open(old % i, 'wb') as f:
                f.write(b'x' * (400 << 10))
            os.chown(old % i, owner, owner)
            os.utime(old % i, (1000000000 + i, 1000000000 + i))
        run_as(fx, pub, user_a, ['vk_render', '--output', '/dev/null'], 'a run over the bound')
        wait_for('uid %d\'s cache trimmed to 1 MiB (%d bytes)' % (TEST_UID, user_bytes(fx, TEST_UID)),
                 lambda: user_bytes(fx, TEST_UID) <= 1 << 20)
        left = [f for f in os.listdir(d) if f.startswith('stale-')]
        if left or not user_bytes(fx, TEST_UID):
            fail('the trim kept the least recently used files (%r) or took all' % left)
        log('uid %d: trimmed to %d bytes, the oldest first' % (TEST_UID, user_bytes(fx, TEST_UID)))
        # ... and all users' together to theirs, the least recently used
        # of any user first
        fx.stop_daemon()
        fx.extra_args = ['--bus', bus.address, '--group', str(TEST_GID),
                         '--cache-size-user', '64M', '--cache-size-total', '3M']
        fx.start_daemon()
        du = os.path.join(fx.cache_dir, 'users', '0')
        o = os.stat(du).st_uid
        big = os.path.join(du, 'stale-big')
        with open(big, 'wb') as f:
            f.write(b'x' * (1536 << 10))
        os.chown(big, o, o)
        os.utime(big, (1000000000, 1000000000))
        everyone = sorted({0, TEST_UID, other[1]})
        total = lambda: sum(user_bytes(fx, u) for u in everyone)  # noqa: E731
        log('all users: %d bytes before a run' % total())
        run_as(fx, pub, user_a, ['vk_render', '--output', '/dev/null'], 'a run over the bound of all')
        wait_for('every cache trimmed to 3 MiB together (%d bytes)' % total(),
                 lambda: total() <= 3 << 20)
        if os.path.exists(big) or not user_bytes(fx, TEST_UID):
            fail('the trim of all kept root\'s least recently used file, or took uid %d\'s '
                 'whole cache' % TEST_UID)
        log('all users: trimmed to %d bytes, root\'s oldest file first' % total())

        # a cache directory that cannot be written: said at start and in
        # gpudctl status, and clients are served without
        fx.stop_daemon()
        blocker = os.path.join(fx.tmp, 'not-a-directory')
        with open(blocker, 'w') as f:
            f.write('')
        fx.extra_args = ['--bus', bus.address, '--group', str(TEST_GID)]
        saved = fx.cache_dir
        fx.cache_dir = os.path.join(blocker, 'cache')
        try:
            fx.start_daemon()
            status = fx.gpudctl_status()
            if not status.get('cache_state') or 'not-a-directory' not in status['cache_state']:
                fail('gpudctl status does not say why no cache is kept: %r' %
                     status.get('cache_state'))
            if fx.log_count('not cached across runs') < 1:
                fail('the daemon did not say at start that it keeps no cache')
            run_as(fx, pub, user_a, ['vk_render', '--output', '/dev/null'], 'without a cache')
            run_as(fx, pub, root, ['vk_compute'], 'without a cache')
            doc = cache_doc(fx, schema=schema)
            if doc['entries'] or not doc['cache_state']:
                fail('gpudctl cache without a cache: %r' % doc)
            log('no cache: "%s"; clients served' % status['cache_state'])

            # one in a directory the workers cannot search (a home of mode
            # 0700): the server could write it, the workers could not
            fx.stop_daemon()
            private = os.path.join(fx.tmp, 'private-home')
            os.makedirs(private, mode=0o700, exist_ok=True)
            os.chmod(private, 0o700)
            fx.cache_dir = os.path.join(private, 'cache')
            fx.start_daemon()
            state = fx.gpudctl_status().get('cache_state') or ''
            if 'cannot reach' not in state or 'private-home' not in state:
                fail('a cache the workers cannot reach is not reported: %r' % state)
            run_as(fx, pub, user_a, ['vk_render', '--output', '/dev/null'], 'cache unreachable')
            log('unreachable cache: "%s"; clients served' % state)
        finally:
            fx.stop_daemon()
            fx.cache_dir = saved
            fx.extra_args = []
            fx.start_daemon()
    finally:
        bus.close()


# ---- takeover -----------------------------------------------------------------

class Takeover:
    """vk_takeover: system calls in its worker, one per line."""

    def __init__(self, fx, pub, user):
        self.p = start_as(fx, pub, user, ['vk_takeover'], stdin=subprocess.PIPE)
        line = self.p.out.wait_for_prefix('', 60)
        if line == 'none':
            raise TestSkip('this build has no test hooks (-Dtest_hooks=true)')
        if line != 'ready':
            fail('vk_takeover did not get ready: %r %s' % (line, self.p.err.text()))
        self.seen = len(self.p.out.lines)
        self.label = user[0]

    def call(self, text):
        self.p.stdin.write((text + '\n').encode())
        self.p.stdin.flush()
        line = self.p.out.wait_for_prefix('= ', 20, self.seen)
        if not line:
            fail('%s: no answer to "%s": %s' % (self.label, text, self.p.err.text()))
        self.seen = self.p.out.lines.index(line, self.seen) + 1
        r = int(line.split()[1])
        log('  [%s\'s worker] %s = %s' % (self.label, text,
                                          r if r >= 0 else '-%s' % errno.errorcode.get(-r, -r)))
        return r

    def quit(self):
        try:
            self.p.stdin.write(b'quit\n')
            self.p.stdin.flush()
        except BrokenPipeError:
            pass
        gpud_test.finish_client(self.p, 60, 'vk_takeover')


O_RDONLY, O_WRONLY, O_DIRECTORY = os.O_RDONLY, os.O_WRONLY, os.O_DIRECTORY
AT_FDCWD = -100
SIGKILL, PTRACE_ATTACH, PRIO_PROCESS = 9, 16, 0


def attempts(fx, victim_pid, victim_cache, victim_file):
    """What a worker taken over tries on another user's things: (what,
    calls), each call a line for vk_takeover; '{fd}' takes the last fd
    opened."""
    state = os.path.join(fx.state_dir, 'worker-uids')
    return [
        ('read its cache file', ['openat %d s:%s %d' % (AT_FDCWD, victim_file, O_RDONLY)]),
        ('write its cache file', ['openat %d s:%s %d' % (AT_FDCWD, victim_file, O_WRONLY)]),
        ('list its cache', ['openat %d s:%s %d' % (AT_FDCWD, victim_cache, O_RDONLY | O_DIRECTORY),
                            'getdents64 {fd} b:1024 1024']),
        ('unlink its cache file', ['unlinkat %d s:%s 0' % (AT_FDCWD, victim_file)]),
        ('make a file in its cache', ['openat %d s:%s/planted %d 384' %
                                      (AT_FDCWD, victim_cache, O_WRONLY | os.O_CREAT)]),
        ('read gpud\'s state', ['openat %d s:%s %d' % (AT_FDCWD, state, O_RDONLY)]),
        ('write gpud\'s state', ['openat %d s:%s %d' % (AT_FDCWD, state, O_WRONLY)]),
        ('list gpud\'s state', ['openat %d s:%s %d' % (AT_FDCWD, fx.state_dir,
                                                        O_RDONLY | O_DIRECTORY),
                                'getdents64 {fd} b:1024 1024']),
        ('unlink gpud\'s state', ['unlinkat %d s:%s 0' % (AT_FDCWD, state)]),
        ('signal its worker', ['kill %d %d' % (victim_pid, SIGKILL)]),
        ('signal its worker by pidfd', ['pidfd_open %d 0' % victim_pid,
                                        'pidfd_send_signal {fd} %d 0 0' % SIGKILL]),
        ('trace its worker', ['ptrace %d %d 0 0' % (PTRACE_ATTACH, victim_pid)]),
        ('read its worker\'s memory', ['openat %d s:/proc/%d/mem %d' %
                                       (AT_FDCWD, victim_pid, O_RDONLY)]),
        ('renice its worker', ['setpriority %d %d 19' % (PRIO_PROCESS, victim_pid)]),
        ('move its worker', ['sched_setaffinity %d 8 s:\x01' % victim_pid]),
        ('become root again', ['setresuid 0 0 0']),
    ]


def try_all(t, plan, must_fail):
    """Runs each attempt (its calls in order, up to the first that fails;
    {fd} in a call: what the call before it returned); the attempts that
    succeeded where they must fail, or failed where they must not."""
    wrong = []
    for what, calls in plan:
        results = []
        for c in calls:
            results.append(t.call(c.replace('{fd}', str(results[-1])) if results else c))
            if results[-1] < 0:
                break
        ok = results[-1] >= 0 and len(results) == len(calls)
        if results[0] >= 0 and calls[0].startswith(('openat', 'pidfd_open')):
            t.call('close %d' % results[0])
        if ok == must_fail:
            wrong.append(what)
    return wrong


def test_takeover(fx):
    need_root(fx)
    pub = public(fx)
    people = users(fx)
    attacker, victim = people[1], people[0]
    try:
        for sandbox in ([], ['--no-sandbox']):
            how = 'filter off' if sandbox else 'filter on'
            fx.stop_daemon()
            fx.extra_args = ['--group', str(TEST_GID), '--isolation=process'] + sandbox
            fx.start_daemon()
            # the victim's cache holds something; its worker serves on
            run_as(fx, pub, victim, ['vk_render', '--output', '/dev/null'], 'victim\'s run')
            run_as(fx, pub, attacker, ['vk_render', '--output', '/dev/null'], 'attacker\'s run')
            # (a worker keeps its client's pipelines as the client ends,
            # after the program's exit)
            for who in (victim, attacker):
                wait_for('uid %d\'s pipeline cache' % who[1],
                         lambda: pipelines_of(fx, who[1], 'vk_render'))
            victim_cache = os.path.join(fx.cache_dir, 'users', str(victim[1]))
            own_cache = os.path.join(fx.cache_dir, 'users', str(attacker[1]))
            victim_file = os.path.join(victim_cache, 'gpud', 'pipelines',
                                       pipelines_of(fx, victim[1], 'vk_render')[0])
            own_file = os.path.join(own_cache, 'gpud', 'pipelines',
                                    pipelines_of(fx, attacker[1], 'vk_render')[0])
            with open(victim_file, 'rb') as f:
                victim_bytes = f.read()
            procs, mine = holding_clients(fx, pub, [victim])
            t = None
            try:
                victim_worker = mine[victim[0]]['worker_pid']
                t = Takeover(fx, pub, attacker)
                log('-- %s: uid %d\'s worker against root\'s (worker %d)' %
                    (how, attacker[1], victim_worker))
                wrong = try_all(t, attempts(fx, victim_worker, victim_cache, victim_file), True)
                if wrong:
                    fail('%s: a worker taken over could %s' % (how, ', '.join(wrong)))
                # the same calls on its own things work: the hook is no
                # wall of its own
                own_pid = t.call('getpid')
                controls = [
                    ('read its own cache file', ['openat %d s:%s %d' %
                                                 (AT_FDCWD, own_file, O_RDONLY)]),
                    ('list its own cache', ['openat %d s:%s %d' %
                                            (AT_FDCWD, own_cache, O_RDONLY | O_DIRECTORY),
                                            'getdents64 {fd} b:1024 1024']),
                    ('signal itself (0)', ['kill %d 0' % own_pid]),
                    ('renice itself', ['setpriority %d 0 1' % PRIO_PROCESS]),
                    ('move itself', ['sched_setaffinity 0 8 s:\x01']),
                ]
                wrong = try_all(t, controls, False)
                if wrong:
                    fail('%s: a worker could not %s: the hook proves nothing' %
                         (how, ', '.join(wrong)))
                t.quit()
                t = None
                with open(victim_file, 'rb') as f:
                    if f.read() != victim_bytes:
                        fail('%s: the victim\'s cache file changed' % how)
                if os.path.exists(os.path.join(victim_cache, 'planted')):
                    fail('%s: a file was planted in the victim\'s cache' % how)
                if procs[0].poll() is not None or not os.path.exists('/proc/%d' % victim_worker):
                    fail('%s: the victim\'s client or worker is gone' % how)
                if proc_status(victim_worker)['State'][0] == 't':
                    fail('%s: the victim\'s worker is stopped (traced)' % how)
                log('%s: every attempt failed, its own calls worked' % how)
            finally:
                if t:
                    t.p.kill()
                end_clients(procs)
    finally:
        fx.stop_daemon()
        fx.extra_args = []
        fx.start_daemon()


# workers of their own: processes, whatever the sanitizer run asks
for name in ('identity', 'cache', 'takeover'):
    gpud_test.DAEMON_ARGS[name] = ['--isolation=process', '--group', str(TEST_GID)]

SUBCOMMANDS = {
    'identity': test_identity,
    'cache': test_cache,
    'takeover': test_takeover,
}

if __name__ == '__main__':
    sys.exit(gpud_test.main(SUBCOMMANDS))
