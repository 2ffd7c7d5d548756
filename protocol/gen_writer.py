# SPDX-License-Identifier: MIT
"""What the emitters write with: the wire's scalar primitives, length
expressions, and the writer that splits the code of the two sides."""

import re


# The wire.h primitive for each wire scalar type.
WIRE_FN = {'uint32_t': 'u32', 'int32_t': 'i32', 'uint64_t': 'u64', 'int64_t': 'i64',
           'float': 'float', 'double': 'double'}


def c_len_expr(expr, names, prefix):
    """Turns a vk.xml len/altlen expression into C over prefix+member."""
    def repl(mo):
        w = mo.group(0)
        return prefix + w if w in names else w
    return re.sub(r'[A-Za-z_][A-Za-z0-9_]*', repl, expr)


def function_side(fname):
    """Which side calls a generated wire function: 'icd', 'gpud' or both."""
    if fname.startswith(('wire_decargs_', 'wire_encreply_', 'wire_encback_', 'wire_decshape_')):
        return {'gpud'}
    if fname.startswith(('wire_decreply_', 'wire_decout_', 'wire_encshape_', 'wire_decback_')):
        return {'icd'}
    if fname.startswith('wire_enc_vk'):
        return {'icd'}
    if fname.startswith('wire_key_'):
        return {'gpud'}
    # struct encoders and decoders: requests, replies' outputs and write-backs
    # (the compiler drops a side's unused ones)
    return {'icd', 'gpud'}


def split_sides(lines):
    """Splits emitted C into the ICD's and the daemon's functions.  A
    function starts at its return type's line, followed by its name's; a
    prototype (one line) goes where its function goes."""
    sides = {'icd': [], 'gpud': []}
    current = {'icd', 'gpud'}
    types = ('void', 'static void', 'bool', 'static bool')
    for i, line in enumerate(lines):
        head = line.split('\n')
        target = current
        m = re.match(r'(?:static )?(?:void|bool) (wire_\w+)\(.*;$', head[0])
        if m:
            target = function_side(m.group(1))
        elif head[0] in types and len(head) > 1 and head[1].startswith('wire_'):
            current = target = function_side(head[1].split('(')[0])
        elif head[0] in types and i + 1 < len(lines) and lines[i + 1].startswith('wire_'):
            current = target = function_side(lines[i + 1].split('(')[0])
        for side in target:
            sides[side].append(line)
    return sides['icd'], sides['gpud']


class Writer:
    def __init__(self):
        self.lines = []

    def __call__(self, s=''):
        self.lines.append(s)

    def text(self):
        return '\n'.join(self.lines) + '\n'


def emit_chain_enc(w, cases, skipped='break;'):
    """The loop that encodes what a structure s chains: each structure
    cases(w) writes a case for, its sType first; a 0 ends the chain."""
    w('   for (const VkBaseInStructure *c = s->pNext; c; c = c->pNext) {')
    w('      switch ((int)c->sType) {')
    cases(w)
    w('      default:')
    w(f'         {skipped}')
    w('      }')
    w('   }')
    w('   wire_enc_u32(e, 0);')


def chain_body_cases(reg, chain, body):
    """The cases of emit_chain_enc that encode a chained structure y with
    body_y(e, y)."""
    def cases(w):
        for y in chain:
            w(f'      case {reg.structs[y].stype}:')
            w('         wire_enc_u32(e, (uint32_t)c->sType);')
            w(f'         {body}{y}(e, (const {y} *)c);')
            w('         break;')
    return cases


def write_if_changed(path, text):
    """Writes text to path unless it holds it already (ninja then leaves
    what depends on it alone)."""
    try:
        with open(path) as f:
            if f.read() == text:
                return
    except OSError:
        pass
    with open(path, 'w') as f:
        f.write(text)
