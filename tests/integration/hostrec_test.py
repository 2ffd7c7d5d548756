#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""What the host driver receives through gpud: what the program asked.

Usage: as gpud_test.py (same options), with the subcommand:

  hostrec   programs (compute, graphics, synchronisation, pipelines made on
            several threads, ray tracing, the extension sub-tests, the GPU
            benchmark's shaders) run on lavapipe under the host-call
            recorder (tests/hostrec/: a driver that wraps lavapipe and writes
            down every create info, allocation, recorded command and
            submission it is given), once directly and once through a gpud
            whose host driver is the recorder; the two records must differ
            only as docs/architecture.md's table "What the host driver
            receives" says (tests/hostrec/hostrec_compare.py).  Without one
            of the table's rules the comparison must fail: the test sees
            what it compares.
"""

import glob
import os
import shutil
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gpud_test as gt  # noqa: E402
from gpud_test import fail, log  # noqa: E402

sys.path.insert(0, os.path.join(gt.SOURCE_DIR, 'tests', 'hostrec'))
import hostrec_compare as hc  # noqa: E402

# one worker process per client: each has a record of its own
gt.DAEMON_ARGS['hostrec'] = ['--isolation=process']

RULES = os.path.join(gt.SOURCE_DIR, 'docs', 'architecture.md')

# (name in its instance, argv after the program, made on several threads)
EXTENSION_TESTS = ['push', 'conditional', 'border', 'xfb', 'dynamic', 'descriptor-buffer',
                   'descriptor-buffer-graphics', 'dgc', 'host-image-copy', 'mesh',
                   'pipeline-binary']


def programs(fx):
    bench = os.path.join(os.path.dirname(os.path.dirname(fx.args.bindir)), 'bench', 'gpu_bench')
    out = [
        ('vk_compute', [fx.prog('vk_compute')], False),
        # (a required subgroup size, full subgroups, a specialization and
        # pipeline robustness, as ggml makes its pipelines)
        ('vk_chains', [fx.prog('vk_compute'), '--stage-chains'], False),
        ('vk_render', [fx.prog('vk_render')], False),
        ('vk_sync', [fx.prog('vk_sync')], False),
        ('vk_raytrace', [fx.prog('vk_raytrace')], False),
        ('vk_pipelines', [fx.prog('vk_pipelines')], True),
        ('vk_transfer', [fx.prog('vk_transfer'), '--rounds', '2'], False),
        # (not `address`: its push constants are device addresses, which
        # differ from run to run)
        ('vk_extensions', [fx.prog('vk_extensions')] +
         [a for t in EXTENSION_TESTS for a in ('--test', t)], False),
    ]
    if os.path.exists(bench):
        out.append(('gpu_bench', [bench, '--direct-only', '--fixed', '4', '--reps', '1'], False))
    return out


def test_hostrec(fx):
    if fx.direct:
        raise gt.TestSkip('compares lavapipe directly with gpud')
    recorder = os.path.join(os.path.dirname(fx.args.bindir), 'hostrec', 'gpud_hostrec.json')
    if not os.path.exists(recorder):
        fail('no recorder at %s' % recorder)
    rules = hc.read_rules(RULES)
    log('%d rules in %s' % (len(rules), RULES))
    direct_dir = os.path.join(fx.tmp, 'direct')
    os.mkdir(direct_dir)
    # where the workers' user can write (the test's own folder is root's)
    gpud_dir = tempfile.mkdtemp(prefix='gpud-hostrec-')
    os.chmod(gpud_dir, 0o1777)
    try:
        compare_programs(fx, recorder, rules, direct_dir, gpud_dir)
    finally:
        shutil.rmtree(gpud_dir, ignore_errors=True)


def compare_programs(fx, recorder, rules, direct_dir, gpud_dir):
    fx.stop_daemon()
    fx.host_driver = recorder
    fx.daemon_env = {'GPUD_HOSTREC_DRIVER': fx.args.lavapipe_manifest,
                     'GPUD_HOSTREC_DIR': gpud_dir,
                     # (submissions of copies alone go to the host: the table)
                     'GPUD_WORKER_COPIES': 'off'}
    fx.start_daemon()

    compared = 0
    for name, argv, threads in programs(fx):
        mine = os.path.join(direct_dir, name)
        os.mkdir(mine)
        env = fx.direct_env(gt.VARIANTS[1])
        env.update(VK_ICD_FILENAMES=recorder, GPUD_HOSTREC_DRIVER=fx.args.lavapipe_manifest,
                   GPUD_HOSTREC_DIR=mine)
        fx.run(argv, env, timeout=300, label='directly, recorded', show_output=False)
        # (and the ICD makes none itself: the table)
        fx.run(argv, dict(fx.gpud_env(gt.VARIANTS[1]), GPUD_ICD_UPLOADS='off'), timeout=300,
               label='through gpud', show_output=False)
        direct = hc.program_records(glob.glob(os.path.join(mine, '*.rec')), name)
        through = hc.program_records(glob.glob(os.path.join(gpud_dir, '*.rec')), name)
        if not direct or not through:
            fail('%s: no record of its instance %s' %
                 (name, 'directly' if not direct else 'through gpud'))
        calls = {b.call for b in direct}
        for want in ('vkCreateInstance', 'vkCreateDevice', 'vkAllocateMemory'):
            if want not in calls:
                fail('%s: the record has no %s' % (name, want))
        if name == 'vk_chains':
            # the comparison sees the chains it is to compare
            lines = [x for b in direct if b.call == 'vkCreateComputePipelines' for x in b.lines]
            for want in ('.stage.flags = 0x2', '.stage.pSpecializationInfo.pMapEntries[0]',
                         '<VkPipelineShaderStageRequiredSubgroupSizeCreateInfo>'
                         '.requiredSubgroupSize', '<VkPipelineRobustnessCreateInfo>.storageBuffers'):
                if not any(want in x for x in lines):
                    fail('vk_chains: no %s in the pipeline the recorder saw' % want)
        problems = hc.compare(direct, through, rules, ordered=not threads)
        if problems:
            fail('%s: the host driver received what the program did not ask:\n%s' %
                 (name, gt.indent('\n'.join(problems))))
        log('%s: %d calls directly, %d through gpud: the same but for the rules' %
            (name, len(direct), len(through)))
        compared += len(direct)
        if name == 'vk_compute':
            # without the rule for gpud's device extension, a difference
            left = [r for r in rules if r.text != 'vkCreateDevice +extension '
                    'VK_EXT_external_memory_host']
            if len(left) == len(rules) or not hc.compare(direct, through, left):
                fail('the comparison without the external-memory rule found nothing')
            log('without the rule for VK_EXT_external_memory_host it differs, as it must')
    log('%d calls compared' % compared)


if __name__ == '__main__':
    sys.exit(gt.main({'hostrec': test_hostrec}))
