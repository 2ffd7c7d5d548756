#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The ICD exports the loader interface and nothing else."""
import subprocess
import sys

EXPECTED = {
    'vk_icdNegotiateLoaderICDInterfaceVersion',
    'vk_icdGetInstanceProcAddr',
    'vk_icdGetPhysicalDeviceProcAddr',
}

out = subprocess.run(['nm', '-D', '--defined-only', sys.argv[1]], check=True,
                     capture_output=True, text=True).stdout
exported = {line.split()[-1] for line in out.splitlines()
            if len(line.split()) == 3 and line.split()[1] in 'TDBRVWi'}
extra, missing = exported - EXPECTED, EXPECTED - exported
for name in sorted(extra):
    print('exported but should not be: %s' % name)
for name in sorted(missing):
    print('missing export: %s' % name)
print('%d passed, %d failed' % (len(EXPECTED - missing), len(extra) + len(missing)))
sys.exit(1 if extra or missing else 0)
