#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""llama.cpp's Vulkan backend (ggml) through a private gpud on lavapipe.

Usage: as gpud_test.py (same options), subcommand `llama`, with
GPUD_TEST_LLAMA naming a directory that `scripts/llama.sh --programs DIR`
set up (Debian unstable's llama.cpp, unpacked with its own C library);
skipped without it.

  - test-llama-archs -a llama: whole models of llama's architecture, dense
    and mixture of experts, built with random weights, compute through gpud
    the logits the CPU computes (its own comparison: the normalised mean
    squared error, a save and load of the state, and a mixed batch);
  - test-backend-ops on a subset of operators (matrix products of several
    weight types as matrix-vector and matrix-matrix products, with experts,
    attention, normalisation, rope, copies between types): the
    result of every case through gpud is the one lavapipe gives directly.

ggml compiles a pipeline for each kernel it needs, and lavapipe's compiling
is nearly all of this test's time: what the direct runs compiled goes into
the cache the daemon keeps for the workers of this user, and lavapipe skips
LLVM's optimisation passes (GALLIVM_PERF=nopt) on both sides.
"""

import os
import re
import shutil
import sys
import tempfile

import gpud_test as gt
from gpud_test import TestSkip, fail, log

# (operator, test-backend-ops' regular expression for the cases' parameters)
BACKEND_OPS = [
    ('MUL_MAT', r'type_a=(f32|f16|q4_0|q8_0|q4_K),type_b=f32,m=16,n=1,k=256,bs=\[1,1\],'
                r'nr=\[1,1\],per=\[0,1,2,3\],k_v=0,o=1,'),
    ('MUL_MAT', r'type_a=(f32|q4_0),type_b=f32,m=16,n=16,k=256,bs=\[1,1\],nr=\[1,1\],'
                r'per=\[0,1,2,3\],k_v=0,o=1,'),
    ('MUL_MAT_ID', r'type_a=q4_0,type_b=f32,n_mats=4,n_used=2,b=0,m=512,n=1,k=256,'),
    ('FLASH_ATTN_EXT', r'hsk=64,hsv=64,nh=4,nr23=\[1,1\],kv=512,nb=1,mask=1,sinks=0,'
                       r'max_bias=0.000000,logit_softcap=0.000000,prec=f32,type_K=f16,'
                       r'type_V=f16,permute=\[0,1,2,3\]'),
    ('RMS_NORM', r'type=f32,ne=\[64,5,4,3\]'),
    ('NORM', r'type=f32,'),
    ('ROPE', r'type=f32,ne_a=\[128,32,2,1\],n_dims=128,mode=(0|2),'),
    ('CPY', r'type_src=(f32|f16),type_dst=(f32|f16|q8_0),ne_src=\[256,2,3,4\]'),
]

ANSI = re.compile(r'\x1b\[[0-9;]*m')


def backend_ops(fx, llama, env, label):
    """{case: result} of the subset on ggml's first Vulkan device."""
    results = {}
    for op, params in BACKEND_OPS:
        rc, out, err = fx.run([os.path.join(llama, 'run.sh'),
                               os.path.join(llama, 'test-backend-ops'),
                               '-b', 'Vulkan0', '-o', op, '-p', params],
                              env, timeout=300, expect_rc=None,
                              label='%s %s' % (op, label), show_output=False)
        text = ANSI.sub('', out)
        cases = dict(re.findall(r'^\s+(%s\(.*\)): (.*)$' % re.escape(op), text, re.M))
        m = re.search(r'^\s+(\d+)/(\d+) tests passed$', text, re.M)
        if not cases or not m:
            fail('test-backend-ops -o %s (%s) ran no case: exit %d\n%s%s' %
                 (op, label, rc, gt.indent(text[-3000:]), gt.indent(err[-3000:], '  ! ')))
        log('    %s: %s of %s cases passed, exit %d' % (op, m.group(1), m.group(2), rc))
        results.update(cases)
    return results


def test_llama(fx):
    llama = os.environ.get('GPUD_TEST_LLAMA')
    if not llama or not os.path.exists(os.path.join(llama, 'run.sh')):
        raise TestSkip('GPUD_TEST_LLAMA names no llama.cpp set up by scripts/llama.sh '
                       '(scripts/test.sh sets one up for its release build)')
    if fx.direct:
        raise TestSkip('compares gpud with lavapipe directly')
    # the cache outside the test's directory, which the workers' user cannot
    # enter
    cache = tempfile.mkdtemp(prefix='gpud-llama-cache-')
    try:
        llama_models_and_ops(fx, llama, cache)
    finally:
        shutil.rmtree(cache, ignore_errors=True)


def give_to_workers(fx, cache, env):
    """What the direct runs compiled into Mesa's shader cache, in the cache
    the daemon keeps for this user's workers (made by a first client), owned
    by the uid they run as: they find it there as they would have had they
    compiled it."""
    fx.run([fx.prog('vk_enum')], env, show_output=False)
    mine = os.path.join(fx.cache_dir, 'users', str(os.getuid()))
    if not os.path.isdir(mine):
        fail('the daemon made no cache directory for user %d (%s)' % (os.getuid(), mine))
    st = os.stat(mine)
    shutil.copytree(cache, mine, dirs_exist_ok=True)
    for root, dirs, files in os.walk(mine):
        for name in [os.path.join(root, n) for n in dirs + files]:
            os.chown(name, st.st_uid, st.st_gid)


def llama_models_and_ops(fx, llama, cache):
    host = {'GALLIVM_PERF': 'nopt', 'MESA_SHADER_CACHE_DIR': cache}
    fx.stop_daemon()
    fx.daemon_env = host
    fx.start_daemon()
    # ggml leaves devices of the CPU type (lavapipe) alone unless named
    ggml = dict(host, GGML_VK_VISIBLE_DEVICES='0')
    direct_env = fx.direct_env() | ggml
    gpud_env = fx.gpud_env() | ggml

    direct = backend_ops(fx, llama, direct_env, 'lavapipe directly')
    # the workers take over what the direct runs compiled
    give_to_workers(fx, cache, gpud_env)

    # whole models, through gpud only (they compare with the CPU)
    rc, out, err = fx.run([os.path.join(llama, 'run.sh'), os.path.join(llama, 'test-llama-archs'),
                           '-a', 'llama', '-b', 'Vulkan0'], gpud_env, timeout=480,
                          expect_rc=None, label='test-llama-archs', show_output=False)
    text = ANSI.sub('', out + err)
    rows = [r for r in text.splitlines() if re.match(r'^\|\s+llama\|', r)]
    log(gt.indent('\n'.join(rows)))
    configs = set()
    for row in rows:
        cells = [c.strip() for c in row.strip('|').split('|')]
        if len(cells) < 6 or not cells[1].startswith('gpud: '):
            fail('test-llama-archs ran on another device than gpud\'s: %s' % row)
        if not all(c.startswith('OK') for c in cells[3:6]):
            fail('test-llama-archs: the %s model does not compute through gpud what it '
                 'computes on the CPU: %s' % (cells[2], row))
        configs.add(cells[2])
    # (its exit status says whether all passed; its summary line, which
    # llama.cpp's log thread writes, was once missing from a run on a
    # loaded machine that exited 0 with every row OK)
    if rc != 0 or configs != {'Dense', 'MoE'} or re.search(
            r'^Summary: (no tests|\d+ test\(s\) executed, \d+ failed)', text, re.M):
        fail('test-llama-archs: exit %d, models %s\n%s' %
             (rc, sorted(configs), gt.indent(text[-4000:])))
    fx.check_daemon()

    through = backend_ops(fx, llama, gpud_env, 'through gpud')
    differ = ['%s: %s directly, %s through gpud' % (c, direct.get(c), through.get(c))
              for c in sorted(set(direct) | set(through)) if direct.get(c) != through.get(c)]
    if differ:
        fail('test-backend-ops gives other results through gpud:\n%s' %
             gt.indent('\n'.join(differ)))
    log('test-backend-ops: the same result for all %d cases (%d passed)' %
        (len(direct), sum(r == 'OK' for r in direct.values())))
    fx.check_daemon()
    with open(fx.log_path, errors='replace') as f:
        connected = sum(bool(re.search(r'\(pid \d+, test-[a-z-]+\): connected', l)) for l in f)
    if connected != len(BACKEND_OPS) + 1:
        fail('%d llama.cpp clients connected to the daemon, expected %d' %
             (connected, len(BACKEND_OPS) + 1))


if __name__ == '__main__':
    sys.exit(gt.main({'llama': test_llama}))
