#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""A fair share of the GPU: clients' GPU time, weights and quotas.

Usage: as gpud_test.py (same options), with the subcommand:

  share   two greedy clients (vk_share: back-to-back compute jobs of about 20
          ms, two in flight) take about half the GPU time each
          (gpudctl's gpu_ns, growing with their work); reniced to 5,
          one takes at most 42 % (its weight is about a third of the
          other's); a client cannot raise its own priority (GPUD_NICE=-5
          is not taken; its user's gpudctl may lower its priority but not
          raise it back); a program held to a quota of 25 % takes 25 %
          (+/- 8) of the GPU's time alone.

The daemon serves from worker processes.  Shares are measured over
windows of a few seconds from gpudctl's gpu_ns (GPU timestamps around each
submission on lavapipe).
"""

import json
import os
import re
import shutil
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gpud_test as gt  # noqa: E402
from gpud_test import fail, log, TestSkip  # noqa: E402

# a group and user for the access part (as gpud_test's access test)
gt.DAEMON_ARGS['share'] = ['--isolation=process', '--group', str(gt.TEST_GID)]

WINDOW_S = 3.0


def by_pid(status):
    return {c['pid']: c for c in status['clients']}


def shares(fx, pids, seconds=WINDOW_S):
    """Each client's share of the GPU time its clients took over the window
    (and the GPU time per second of wall time, all together)."""
    deadline = time.monotonic() + 30
    while True:
        first = by_pid(fx.gpudctl_status())
        if all(p in first and first[p]['gpu_ns'] for p in pids):
            break
        if time.monotonic() > deadline:
            fail('the clients took no GPU time: %r' % first)
        time.sleep(0.1)
    t0 = time.monotonic()
    time.sleep(seconds)
    last = by_pid(fx.gpudctl_status())
    wall = time.monotonic() - t0
    took = {p: last[p]['gpu_ns'] - first[p]['gpu_ns'] for p in pids}
    total = sum(took.values())
    if total <= 0:
        fail('no GPU time over %.1f s: %r' % (wall, took))
    return {p: took[p] / total for p in pids}, {p: took[p] / 1e9 / wall for p in pids}


def greedy(fx, env, rounds, until, label, preexec=None, prog=None):
    argv = [prog or fx.prog('vk_share'), 'greedy', '--rounds', str(rounds), '--until', until]
    log('$ [%s] %s &' % (label, ' '.join(argv)))
    p = subprocess.Popen(argv, env=env, cwd=fx.tmp if not preexec else '/',
                         stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, preexec_fn=preexec)
    p.out = gt.LineReader(p.stdout)
    p.err = gt.LineReader(p.stderr)
    if not p.out.wait_for('READY', 60):
        gt.finish_client(p, 5, label, expect_rc=None)
        fail('%s did not start' % label)
    return p


def finish(procs, until):
    open(until, 'w').close()
    for label, p in procs:
        out, _ = gt.finish_client(p, 120, label)
        if not re.search(r'^greedy jobs \d+', out, re.M):
            fail('%s did not report its jobs' % label)
    os.unlink(until)


def gpudctl(fx, args, expect_rc=0):
    cmd = [fx.args.gpudctl, '--socket', fx.socket] + args
    log('$ ' + ' '.join(cmd))
    p = subprocess.run(cmd, env=fx.base_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       timeout=20)
    out = p.stdout.decode() + p.stderr.decode()
    log(gt.indent(out))
    if p.returncode != expect_rc:
        fail('%s: exit %d, expected %d' % (' '.join(cmd), p.returncode, expect_rc))
    return out


def test_share(fx):
    if fx.direct:
        raise TestSkip('the fair share is gpud\'s')
    env = fx.gpud_env(gt.VARIANTS[0])
    _, out, _ = fx.run([fx.prog('vk_share'), 'calibrate', '--job-ms', '20'], env,
                       label='a 20 ms job')
    rounds = int(re.search(r'^rounds (\d+)$', out, re.M).group(1))
    until = os.path.join(fx.tmp, 'stop')

    # two of a kind: half each
    a = greedy(fx, env, rounds, until, 'greedy A')
    b = greedy(fx, env, rounds, until, 'greedy B')
    try:
        share, rate = shares(fx, [a.pid, b.pid])
        log('equal weights: A %.2f, B %.2f of the GPU time (%.2f and %.2f s a second)' %
            (share[a.pid], share[b.pid], rate[a.pid], rate[b.pid]))
        if not 0.35 <= share[a.pid] <= 0.65:
            fail('two clients of equal weight took %.2f and %.2f' % (share[a.pid], share[b.pid]))
        status = fx.gpudctl_status()
        ids = {c['pid']: c['id'] for c in status['clients']}
        for c in status['clients']:
            if c['nice'] != 0 or c['weight'] != 1024:
                fail('client %d: nice %r weight %r, expected 0 and 1024' %
                     (c['id'], c['nice'], c['weight']))

        # B reniced to 5: a weight of 335 against 1024, about a quarter
        gpudctl(fx, ['renice', str(ids[b.pid]), '5'])
        time.sleep(0.5)
        share, _ = shares(fx, [a.pid, b.pid])
        log('B reniced to 5: A %.2f, B %.2f of the GPU time' % (share[a.pid], share[b.pid]))
        if share[b.pid] > 0.42:
            fail('a client reniced to 5 took %.2f of the GPU beside one at 0' % share[b.pid])
        me = by_pid(fx.gpudctl_status())[b.pid]
        if me['nice'] != 5 or me['weight'] != 335 or not me['waited_ns']:
            fail('gpudctl shows the reniced client as %r' % me)
        gpudctl(fx, ['renice', str(ids[b.pid]), '30'], expect_rc=2)
    finally:
        finish([('greedy A', a), ('greedy B', b)], until)

    # an application may lower its own priority, never raise it
    for ask, want in (('-5', 0), ('7', 7)):
        p = greedy(fx, dict(env, GPUD_NICE=ask), rounds, until, 'GPUD_NICE=' + ask)
        try:
            nice = by_pid(fx.gpudctl_status())[p.pid]['nice']
        finally:
            finish([('GPUD_NICE=' + ask, p)], until)
        if nice != want:
            fail('GPUD_NICE=%s gave nice %d, expected %d' % (ask, nice, want))
        log('GPUD_NICE=%s: nice %d' % (ask, nice))
    # a client at nice 7 has its queues at the host's low global priority
    # (lavapipe has VK_KHR_global_priority), one at 0 keeps the default
    if fx.log_count('low global priority (nice 7)') != 1 or fx.log_count('global priority') != 1:
        fail('the client at nice 7 did not get the host\'s low global priority alone')
    log('the client at nice 7: its queues at the host\'s low global priority')

    # another user's gpudctl: lower its own client's priority, not raise it
    if os.geteuid() == 0:
        pub = gt.public_copy(fx)
        shutil.copy(fx.prog('vk_share'), pub)
        os.chmod(os.path.join(pub, 'vk_share'), 0o755)
        uenv = gt.user_env(fx, pub)
        member = gt.as_user(gt.TEST_UID, gt.TEST_GID + 1, [gt.TEST_GID])
        uuntil = os.path.join(fx.tmp, 'home', 'stop')
        p = greedy(fx, uenv, rounds, uuntil, 'uid %d' % gt.TEST_UID, preexec=member,
                   prog=os.path.join(pub, 'vk_share'))
        try:
            cid = str(by_pid(fx.gpudctl_status())[p.pid]['id'])
            rc, _, err = gt.user_gpudctl(fx, pub, ['renice', cid, '-3'], [gt.TEST_GID])
            if rc == 0 or 'only root and the admin group' not in err:
                fail('a user raised its own client\'s priority')
            rc, _, _ = gt.user_gpudctl(fx, pub, ['renice', cid, '4'], [gt.TEST_GID])
            if rc != 0:
                fail('a user could not lower its own client\'s priority')
            rc, _, err = gt.user_gpudctl(fx, pub, ['renice', cid, '0'], [gt.TEST_GID])
            if rc == 0:
                fail('a user raised its own client\'s priority back')
            if by_pid(fx.gpudctl_status())[p.pid]['nice'] != 4:
                fail('the user\'s client is not at nice 4')
        finally:
            open(uuntil, 'w').close()
            gt.finish_client(p, 120, 'uid %d' % gt.TEST_UID)
            os.unlink(uuntil)
        log('its user lowered its client\'s priority, and could not raise it')

    # a quota: 25 % of the GPU's time for the program, alone or not; a
    # program (any client may give that name) cannot raise the priority
    # its user's section gives
    conf = os.path.join(fx.tmp, 'share.conf')
    with open(conf, 'w') as f:
        f.write('[user %d]\nnice = 2\n[program vk_share]\nnice = -5\ngpu-quota = 25%%\n'
                % os.geteuid())
    fx.stop_daemon()
    fx.extra_args = ['--config', conf]
    fx.start_daemon()
    p = greedy(fx, env, rounds, until, 'held to 25 %')
    try:
        _, rate = shares(fx, [p.pid], seconds=4.0)
        me = by_pid(fx.gpudctl_status())[p.pid]
    finally:
        finish([('held to 25 %', p)], until)
    log('a program held to 25 %%: %.2f of the GPU\'s time' % rate[p.pid])
    if me['quota_ppm'] != 250000:
        fail('gpudctl shows a quota of %r ppm' % me['quota_ppm'])
    if me['nice'] != 2:
        fail('a program\'s nice -5 under its user\'s 2 gave nice %r' % me['nice'])
    if not 0.17 <= rate[p.pid] <= 0.33:
        fail('a program held to 25 %% took %.2f of the GPU\'s time' % rate[p.pid])


if __name__ == '__main__':
    sys.exit(gt.main({'share': test_share}))
