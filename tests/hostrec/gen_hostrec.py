#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Generates the host-call recorder's dumpers and wrappers from vk.xml.

Output (into the build directory): hostrec_gen.c, for tests/hostrec/hostrec.c:

  - hr_dump_<Struct>(h, s): every member of an input structure as a line
    `PATH = VALUE`, through pointers, arrays and pNext chains (each chained
    structure named by its type, so that two chains in another order read
    alike), for every structure a recorded command can take;
  - rec_<command>: a wrapper per recorded command that writes its inputs,
    calls the driver below and writes its result, and hostrec_lookup(name),
    which the recorder's vkGet*ProcAddr use.

Values that differ from run to run whatever the driver is asked (handles,
device addresses, host pointers, fds) are written as what they are, not as
numbers; bytes (SPIR-V, specialization data, initial cache data) as their
length and a hash.  Members the API ignores under a condition follow the
wire's CONDITIONAL_MEMBERS (protocol/gen_tables.py): an application may leave
them uninitialised.

Python standard library only; it reads the registry through
protocol/vkxml.py and the wire's tables."""

import argparse
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..',
                                'protocol'))
import vkxml  # noqa: E402
from gen_tables import ADDRESS_UNIONS, CONDITIONAL_MEMBERS, FD_MEMBERS  # noqa: E402
from gen_model import apply_member_lens, pointer_array, resolve_command  # noqa: E402
from gen_writer import Writer, write_if_changed  # noqa: E402
from gen_emit_structs import member_len  # noqa: E402

# --------------------------------------------------------------------------
# The tables: everything hand-decided lives here.

# The commands recorded: those that hand the driver what the application
# asked for (objects made, memory, recordings, submissions).  Queries of
# the device and the driver's own answers are not: the daemon asks its own.
RECORDED_PREFIXES = ('vkCreate', 'vkAllocate', 'vkCmd', 'vkQueue', 'vkBind', 'vkBegin', 'vkEnd',
                     'vkReset', 'vkUpdateDescriptorSet', 'vkMapMemory', 'vkSetDebugUtils')
NOT_RECORDED = {
    # the window system's: the ICD's own (wsi/), never a host call of gpud's
    'vkCreateSwapchainKHR': 'WSI', 'vkCreateSharedSwapchainsKHR': 'WSI',
    'vkQueuePresentKHR': 'WSI',
    # its callback is the application's; the recorder does not follow it
    'vkCreateDebugReportCallbackEXT': 'a callback',
}

# Members written as what they are rather than their value: they differ
# between two runs of one program on one driver.  Key: a type name.
OPAQUE_TYPES = {
    'VkDeviceAddress': 'address',
    'VkRemoteAddressNV': 'address',
}

# Chained structures that are not the application's.
SKIPPED_STYPES = {
    'VK_STRUCTURE_TYPE_LOADER_INSTANCE_CREATE_INFO': 'the loader\'s own, to its drivers',
    'VK_STRUCTURE_TYPE_LOADER_DEVICE_CREATE_INFO': 'the loader\'s own, to its drivers',
}

# --------------------------------------------------------------------------


def excluded_types(reg):
    """Types of extensions whose headers a plain build lacks (platforms,
    provisional), which the recorder cannot name."""
    out = set()
    for name, (e, cmds, types) in reg.extensions.items():
        if e.get('platform') or e.get('provisional') == 'true':
            out.update(reg.resolve_type(t) for t in types)
    return out


def excluded_commands(reg):
    out = set()
    for name, (e, cmds, types) in reg.extensions.items():
        if e.get('platform') or e.get('provisional') == 'true':
            out.update(cmds)
    return out


def in_headers(reg):
    """Commands and types some core version or (non-platform, non-provisional)
    extension of this registry requires."""
    cmds, types = set(), set()
    for name, number, c, t in reg.features:
        cmds.update(c)
        types.update(reg.resolve_type(x) for x in t)
    for name, (e, c, t) in reg.extensions.items():
        if e.get('platform') or e.get('provisional') == 'true':
            continue
        cmds.update(c)
        types.update(reg.resolve_type(x) for x in t)
    return cmds, types


class Model:
    def __init__(self, reg):
        self.reg = reg
        apply_member_lens(reg)
        self.bad_types = excluded_types(reg)
        cmds, self.header_types = in_headers(reg)
        bad_cmds = excluded_commands(reg)
        self.extenders = {}
        for sname, s in reg.structs.items():
            for parent in s.structextends:
                self.extenders.setdefault(reg.resolve_type(parent), []).append(sname)
        self.commands = []
        for name in reg.commands:
            if name not in cmds or name in bad_cmds or name in NOT_RECORDED:
                continue
            if not name.startswith(RECORDED_PREFIXES):
                continue
            cmd = reg.commands[name]
            if all(self.usable(p.type) for p in cmd.params):
                self.commands.append(name)
        self.structs = []
        seen = set()
        for name in self.commands:
            for p in reg.commands[name].params:
                if self.is_input(p):
                    self.add_struct(p.type, seen)
        self.struct_set = set(self.structs)

    def holds_addresses(self, tname, seen=None):
        """Whether a structure or union holds a pointer, a handle or a device
        address, at any depth."""
        reg = self.reg
        t = reg.resolve_type(tname)
        seen = seen if seen is not None else set()
        if t in seen or t not in reg.structs:
            return False
        seen.add(t)
        for m in reg.structs[t].members:
            mt = reg.resolve_type(m.type)
            if m.ptr or mt in OPAQUE_TYPES or reg.kind(mt) == 'handle':
                return True
            if reg.kind(mt) in ('struct', 'union') and self.holds_addresses(mt, seen):
                return True
        return False

    def usable(self, tname):
        t = self.reg.resolve_type(tname)
        k = self.reg.kind(t)
        if t in self.bad_types:
            return False
        if k in ('struct', 'union'):
            return t in self.header_types or t in self.reg.video_types or \
                any(a in self.header_types for a in self.reg.structs[t].aliases)
        return k != 'other'

    @staticmethod
    def is_input(p):
        return p.ptr == 0 or p.const

    def add_struct(self, tname, seen):
        reg = self.reg
        t = reg.resolve_type(tname)
        if t in seen or reg.kind(t) not in ('struct', 'union') or not self.usable(t):
            return
        s = reg.structs[t]
        if s.returnedonly:
            return
        seen.add(t)
        for m in s.members:
            if m.name != 'pNext' and self.usable(m.type):
                self.add_struct(m.type, seen)
        for x in self.extenders.get(t, []):
            self.add_struct(x, seen)
        self.structs.append(t)


def value_line(model, ind, tname, expr, bitfield=False):
    """The C statement that writes one non-pointer value."""
    reg = model.reg
    t = reg.resolve_type(tname)
    k = reg.kind(t)
    if t in OPAQUE_TYPES:
        return f'{ind}hr_opaque(h, {expr} != 0, "{OPAQUE_TYPES[t]}");'
    if t in ADDRESS_UNIONS:
        return f'{ind}hr_opaque(h, true, "address");'
    if k == 'handle':
        return f'{ind}hr_opaque(h, {expr} != VK_NULL_HANDLE, "handle");'
    if k == 'bitmask':
        return f'{ind}hr_hex(h, (uint64_t)({expr}));'
    if k == 'enum':
        return f'{ind}hr_int(h, (int64_t)({expr}));'
    if k == 'funcpointer':
        return f'{ind}hr_opaque(h, {expr} != NULL, "function");'
    if t in ('float', 'double'):
        return f'{ind}hr_float(h, (double)({expr}));'
    if k in ('scalar', 'basetype'):
        info = reg.scalar_info(t)
        if info is None:
            return f'{ind}hr_opaque(h, true, "{t}");'
        if info[0].startswith('int') and not bitfield:
            return f'{ind}hr_int(h, (int64_t)({expr}));'
        return f'{ind}hr_uint(h, (uint64_t)({expr}));'
    if k == 'struct':
        if t not in model.struct_set:
            return f'{ind}hr_opaque(h, true, "{t}");'
        return f'{ind}hr_dump_{t}(h, &({expr}));'
    if k == 'union':
        if t in model.struct_set:
            return f'{ind}hr_dump_{t}(h, &({expr}));'
        return f'{ind}hr_bytes_value(h, &({expr}), sizeof({expr}));'
    return f'{ind}hr_opaque(h, true, "{t}");'


def emit_member(model, w, owner, members, m, prefix, ind):
    """Writes member (or parameter) m of the structure at prefix."""
    reg = model.reg
    t = reg.resolve_type(m.type)
    k = reg.kind(t)
    v = prefix + m.name
    label = m.name if not prefix else '.' + m.name
    if m.name == 'pNext':
        w(f'{ind}hr_chain(h, at, {v});')
        return
    if not model.usable(t):
        return
    w(f'{ind}hr_at(h, at, "{label}");')
    fd = (owner, m.name) in FD_MEMBERS
    if m.ptr == 0 and not m.dims:
        if fd:
            w(f'{ind}hr_opaque(h, {v} >= 0, "fd");')
        else:
            w(value_line(model, ind, t, v, m.bitfield))
        return
    if m.ptr == 0:
        # fixed-size arrays
        if t == 'char':
            w(f'{ind}hr_string(h, {v});')
        elif t in ('uint8_t', 'int8_t') and k != 'struct':
            w(f'{ind}hr_bytes_value(h, {v}, sizeof({v}));')
        else:
            n = ' * '.join(f'({d})' for d in m.dims)
            w(f'{ind}for (size_t i = 0; i < {n}; i++) {{')
            w(f'{ind}   hr_index(h, i);')
            flat = f'((const {t} *)&{v})[i]' if len(m.dims) > 1 else f'{v}[i]'
            w(value_line(model, ind + '   ', t, flat))
            w(f'{ind}   hr_at(h, at, "{label}");')
            w(f'{ind}}}')
        return
    # pointers
    cond = CONDITIONAL_MEMBERS.get((owner, m.name))
    if cond:
        w(f'{ind}if (!({cond})) {{')
        w(f'{ind}   hr_opaque(h, false, "ignored");')
        w(f'{ind}}} else {{')
        ind2 = ind + '   '
    else:
        ind2 = ind
    n = member_len(None, members, m, prefix)
    if n is not None and not (m.len and m.len[0] == 'null-terminated'):
        # (an empty array is empty, whatever its pointer)
        w(f'{ind2}if (!({n})) {{')
        w(f'{ind2}   hr_uint(h, 0);')
        w(f'{ind2}}} else if (!{v}) {{')
    else:
        w(f'{ind2}if (!{v}) {{')
    w(f'{ind2}   hr_null(h);')
    w(f'{ind2}}} else {{')
    i3 = ind2 + '   '
    if m.len and m.len[0] == 'null-terminated' and t == 'char' and m.ptr == 1:
        w(f'{i3}hr_string(h, {v});')
    elif m.ptr == 2 and t == 'char':
        w(f'{i3}for (uint32_t i = 0; i < (uint32_t)({n}); i++) {{')
        w(f'{i3}   hr_at(h, at, "{label}");')
        w(f'{i3}   hr_index(h, i);')
        w(f'{i3}   hr_string(h, {v}[i]);')
        w(f'{i3}}}')
    elif pointer_array(reg, m) and t in model.struct_set:
        w(f'{i3}for (uint32_t i = 0; i < (uint32_t)({n}); i++) {{')
        w(f'{i3}   hr_at(h, at, "{label}");')
        w(f'{i3}   hr_index(h, i);')
        w(f'{i3}   if ({v}[i])')
        w(f'{i3}      hr_dump_{t}(h, {v}[i]);')
        w(f'{i3}   else')
        w(f'{i3}      hr_null(h);')
        w(f'{i3}}}')
    elif m.ptr == 2:
        # arrays of arrays (NESTED_LENS): their lengths, not their values
        w(f'{i3}hr_opaque(h, true, "arrays");')
    elif k == 'void' or (n is not None and t in ('uint8_t', 'char') and k != 'struct'):
        if n is None:
            w(f'{i3}hr_opaque(h, true, "pointer");')
        else:
            w(f'{i3}hr_bytes(h, {v}, (size_t)({n}));')
    elif n is None:
        if (owner, m.name) in FD_MEMBERS:
            w(f'{i3}hr_opaque(h, true, "fd");')
        elif k == 'struct' and t in model.struct_set:
            w(f'{i3}hr_dump_{t}(h, {v});')
        elif m.const and k != 'struct':
            w(value_line(model, i3, t, '*' + v))
        else:
            w(f'{i3}hr_opaque(h, true, "output");')
    else:
        w(f'{i3}for (uint32_t i = 0; i < (uint32_t)({n}); i++) {{')
        w(f'{i3}   hr_at(h, at, "{label}");')
        w(f'{i3}   hr_index(h, i);')
        if m.stride and k == 'struct' and t in model.struct_set:
            # elements `stride` bytes apart
            w(f'{i3}   hr_dump_{t}(h, (const {t} *)((const char *){v} + '
              f'(size_t)i * {prefix}{m.stride}));')
        elif k == 'struct' and t in model.struct_set:
            w(f'{i3}   hr_dump_{t}(h, &{v}[i]);')
        elif k == 'struct' or not m.const:
            w(f'{i3}   hr_opaque(h, true, "output");')
        else:
            w(value_line(model, i3 + '   ', t, f'{v}[i]'))
        w(f'{i3}}}')
    w(f'{ind2}}}')
    if cond:
        w(f'{ind}}}')


def emit_structs(model, w):
    reg = model.reg
    for t in model.structs:
        w(f'static void hr_dump_{t}(struct hr *h, const {t} *s);')
        if reg.structs[t].stype:
            w(f'static void hr_dump_body_{t}(struct hr *h, const {t} *s);')
    w()
    w('/* A chain: each structure under its type\'s name. */')
    w('static void\nhr_chain(struct hr *h, size_t at, const void *next)\n{')
    w('   for (const VkBaseInStructure *c = next; c; c = c->pNext) {')
    w('      switch ((int)c->sType) {')
    seen = set()
    for t in model.structs:
        stype = reg.structs[t].stype
        if not stype or stype in seen:
            continue
        seen.add(stype)
        w(f'      case {stype}:')
        w(f'         hr_at(h, at, ".pNext<{t}>");')
        w(f'         hr_dump_body_{t}(h, (const {t} *)c);')
        w('         break;')
    for stype, why in sorted(SKIPPED_STYPES.items()):
        w(f'      case {stype}: /* {why} */')
        w('         break;')
    w('      default:')
    w('         hr_at(h, at, ".pNext<?>");')
    w('         hr_int(h, (int64_t)c->sType);')
    w('         break;')
    w('      }')
    w('   }')
    w('}\n')
    for t in model.structs:
        s = reg.structs[t]
        body = 'body_' if s.stype else ''
        w(f'static void\nhr_dump_{body}{t}(struct hr *h, const {t} *s)\n{{')
        if s.union:
            if model.holds_addresses(t):
                # (addresses differ from run to run: only that it is one)
                w('   (void)s;')
                w('   hr_opaque(h, true, "union");')
            else:
                w('   hr_bytes_value(h, s, sizeof(*s));')
            w('}\n')
            continue
        w('   const size_t at = h->len;')
        w('   (void)at;')
        if any((t, m.name) in CONDITIONAL_MEMBERS for m in s.members):
            w('   struct wire_enc *e = &hr_cond_enc;')
            w('   (void)e;')
        for m in s.members:
            if m.name in ('sType', 'pNext'):
                continue
            emit_member(model, w, t, s.members, m, 's->', '   ')
        w('}\n')
        if s.stype:
            w(f'static void\nhr_dump_{t}(struct hr *h, const {t} *s)\n{{')
            w('   const size_t at = h->len;')
            w(f'   hr_dump_body_{t}(h, s);')
            w('   hr_chain(h, at, s->pNext);')
            w('}\n')


def device_level(reg, cmd):
    first = reg.resolve_type(cmd.params[0].type)
    return first in ('VkDevice', 'VkQueue', 'VkCommandBuffer')


def emit_commands(model, w):
    reg = model.reg
    for name in model.commands:
        cmd = reg.commands[name]
        params = ', '.join(m.text for m in cmd.params)
        args = ', '.join(m.name for m in cmd.params)
        w(f'static PFN_{name} next_{name};')
        w(f'static VKAPI_ATTR {cmd.ret} VKAPI_CALL\nrec_{name}({params})\n{{')
        w(f'   struct hr *h = hr_begin("{name}");')
        w('   if (h) {')
        w('      const size_t at = 0;')
        w('      (void)at;')
        w('      struct wire_enc *e = &hr_cond_enc;')
        w('      (void)e;')
        for i, p in enumerate(cmd.params):
            if i == 0 and reg.kind(p.type) == 'handle':
                continue  # the dispatchable handle
            if p.name == 'pAllocator' or not Model.is_input(p):
                continue
            emit_member(model, w, name, cmd.params, p, '', '      ')
        w('   }')
        if cmd.ret == 'void':
            w(f'   next_{name}({args});')
            w('   hr_end(h, VK_SUCCESS, false);')
            w('}\n')
        else:
            w(f'   {cmd.ret} r = next_{name}({args});')
            w('   hr_end(h, (int64_t)r, true);')
            w('   return r;')
            w('}\n')
    w('const struct hostrec_command hostrec_commands[] = {')
    for name in model.commands:
        cmd = reg.commands[name]
        w(f'   {{"{name}", (PFN_vkVoidFunction)rec_{name}, (PFN_vkVoidFunction *)&next_{name}, '
          f'{"true" if device_level(reg, cmd) else "false"}}},')
        for alias, target in sorted(reg.command_alias.items()):
            if resolve_command(reg, alias) == name:
                w(f'   {{"{alias}", (PFN_vkVoidFunction)rec_{name}, '
                  f'(PFN_vkVoidFunction *)&next_{name}, '
                  f'{"true" if device_level(reg, cmd) else "false"}}},')
    w('};')
    w('const size_t hostrec_command_count = UTIL_ARRAY_SIZE(hostrec_commands);')


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--xml', required=True)
    ap.add_argument('--out', required=True)
    args = ap.parse_args()
    reg = vkxml.Registry(args.xml)
    model = Model(reg)
    w = Writer()
    w(f'/* Generated by gen_hostrec.py from vk.xml {reg.header_version}; do not edit. */')
    w('#include "hostrec.h"')
    w()
    w('#include "wire_special.h"')
    w()
    w('/* The encoder state the CONDITIONAL_MEMBERS conditions read and set. */')
    w('static _Thread_local struct wire_enc hr_cond_enc;')
    w()
    emit_structs(model, w)
    emit_commands(model, w)
    write_if_changed(args.out, w.text())
    return 0


if __name__ == '__main__':
    sys.exit(main())
