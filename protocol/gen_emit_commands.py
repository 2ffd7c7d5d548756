# SPDX-License-Identifier: MIT
"""The commands' encoders and decoders and the write-back of what a command
returns (wire_gen.c, wire_gen.h)."""

import re

from gen_tables import (
    FD_MEMBERS, FORCE_ASYNC, FORCE_SYNC, LOST_RESULTS, LOST_SUCCEEDS, NOT_RECORDED,
    WRITEBACK_MEMBERS)
from gen_writer import WIRE_FN, chain_body_cases, emit_chain_enc
from gen_emit_structs import (
    emit_checks, emit_dec_value, emit_enc_value, emit_member_dec, emit_member_enc, member_len)


class P:
    """A command parameter with its role."""

    def __init__(self, gen, cmd, m):
        self.m = m
        self.name = m.name
        self.role = gen.param_role(cmd, m)
        self.kind = gen.reg.kind(m.type)
        self.type = gen.reg.resolve_type(m.type) if self.kind != 'scalar' else m.type
        self.skip = m.type == 'VkAllocationCallbacks'


def emit_out_elements(w, side, p, arr):
    """Encodes (side 'enc', the worker's reply) or decodes ('dec', the
    ICD's) the n elements of output array arr, parameter p."""
    x = 'e' if side == 'enc' else 'd'
    if p.kind == 'void':
        w(f'      wire_{side}_bytes({x}, {arr}, n);')
    elif p.kind == 'struct':
        w('      for (uint32_t i = 0; i < n; i++)')
        w(f'         wire_{side}{"" if side == "enc" else "out"}_{p.type}({x}, &{arr}[i]);')
    else:
        w(f'      wire_{side}_bytes({x}, {arr}, (size_t)n * sizeof(*{arr}));')


def cmd_params(gen, cmd):
    return [P(gen, cmd, m) for m in cmd.params]


def decl_type(m):
    """The C declaration of a parameter, from vk.xml's text."""
    t = m.text
    t = re.sub(r'\s+', ' ', t)
    return t


def cmd_signature(cmd):
    return ', '.join(decl_type(p) for p in cmd.params)


def is_sync(gen, cmd):
    if cmd.name in FORCE_SYNC:
        return True
    if cmd.name in FORCE_ASYNC:
        return False
    if cmd.ret != 'void':
        return True
    return any(P(gen, cmd, p).role != 'input' for p in cmd.params)


def lost_result(cmd):
    """The VkResult the command returns once its daemon is gone."""
    if cmd.name in LOST_SUCCEEDS:
        return 'VK_SUCCESS'
    for code in LOST_RESULTS:
        if code in cmd.errorcodes:
            return code
    return cmd.errorcodes[0] if cmd.errorcodes else 'VK_SUCCESS'


def emit_lost_outputs(gen, w, cmd, params, ind):
    """Empties what the command outputs when there is no reply: counts are
    0, output structs are zeroed (their sType and pNext kept)."""
    reg = gen.reg
    for p in params:
        if p.role == 'out_count':
            w(f'{ind}if ({p.name}) *{p.name} = 0;')
        elif p.role == 'out_struct' and not p.m.len:
            s = reg.structs[p.type]
            if s.stype:
                w(f'{ind}if ({p.name}) {{')
                w(f'{ind}   __typeof__({p.name}->pNext) next = {p.name}->pNext;')
                w(f'{ind}   memset({p.name}, 0, sizeof(*{p.name}));')
                w(f'{ind}   {p.name}->sType = {s.stype};')
                w(f'{ind}   {p.name}->pNext = next;')
                w(f'{ind}}}')
            else:
                w(f'{ind}if ({p.name}) memset({p.name}, 0, sizeof(*{p.name}));')


def records_in_cmdbuf(cmd):
    return cmd.params[0].type == 'VkCommandBuffer' and cmd.name not in NOT_RECORDED


def out_len_expr(gen, cmd, p, prefix):
    """Element count of output parameter p."""
    m = p.m
    if not m.len:
        return None
    first = m.len[0]
    names = {x.name for x in cmd.params}
    if first in names:
        q = next(x for x in cmd.params if x.name == first)
        if q.ptr and not q.const:
            return None  # in/out count: handled by role out_count
        return prefix + first
    if '->' in first:
        base, field = first.split('->')
        return f'{prefix}{base}->{field}'
    if first.isdigit() or first == 'WIRE_MAX_OPAQUE_DATA':
        return first  # a fixed count (later registries write len="1"; OPAQUE_OUTPUTS)
    raise Exception(f'{cmd.name}: len {first}')


def count_param_of(cmd, p):
    """The in/out count parameter named by p's len, or None."""
    if not p.m.len:
        return None
    for q in cmd.params:
        if q.name == p.m.len[0] and q.ptr and not q.const:
            return q
    return None


def emit_cmd_encoders(gen, w, hw):
    """ICD side: request encoders and reply decoders."""
    reg = gen.reg
    for name in gen.wire_commands:
        cmd = reg.commands[name]
        params = cmd_params(gen, cmd)
        sig = cmd_signature(cmd)
        hw(f'void wire_enc_{name}(struct wire_enc *e, {sig});')
        w(f'void\nwire_enc_{name}(struct wire_enc *e, {sig})\n{{')
        for p in params:
            if p.skip:
                continue
            m = p.m
            if p.role == 'input':
                cond = None
                emit_member_enc(gen, w, name, cmd.params, m, '', cond=cond)
            elif p.role == 'out_count':
                w(f'   wire_enc_u32(e, {p.name} != NULL);')
                wt = gen.wire_scalar(m.type)
                w(f'   if ({p.name}) wire_enc_{WIRE_FN[wt]}(e, ({wt})*{p.name});')
            elif p.role == 'out_handle':
                n = out_len_expr(gen, cmd, p, '') or '1'
                w(f'   for (uint32_t i = 0; i < (uint32_t)({n}); i++)')
                emit_enc_value(gen, w, '      ', m.type, f'{p.name}[i]')
            elif p.role == 'out_array':
                w(f'   wire_enc_u32(e, {p.name} != NULL);')
                if p.kind == 'struct' and reg.structs[p.type].stype:
                    cp = count_param_of(cmd, p)
                    n = f'*{cp.name}' if cp else out_len_expr(gen, cmd, p, '')
                    w(f'   if ({p.name})')
                    w(f'      for (uint32_t i = 0; i < (uint32_t)({n}); i++)')
                    w(f'         wire_encshape_{p.type}(e, &{p.name}[i]);')
            elif p.role == 'out_struct':
                w(f'   wire_enc_u32(e, {p.name} != NULL);')
                if reg.structs[p.type].stype:
                    w(f'   if ({p.name}) wire_encshape_{p.type}(e, {p.name});')
            elif p.role == 'out_scalar':
                w(f'   wire_enc_u32(e, {p.name} != NULL);')
        w('}\n')

        # reply decoder (ICD)
        if not is_sync(gen, cmd):
            continue
        rt = 'VkResult' if cmd.ret == 'VkResult' else cmd.ret
        ret_param = f'{rt} *ret, ' if cmd.ret != 'void' else ''
        hw(f'void wire_decreply_{name}(struct wire_dec *d, {ret_param}{sig});')
        w(f'void\nwire_decreply_{name}(struct wire_dec *d, {ret_param}{sig})\n{{')
        for p in params:
            if p.role == 'out_count':
                w(f'   const uint64_t cap_{p.name} = {p.name} ? *{p.name} : 0;')
                w(f'   (void)cap_{p.name};')
        if cmd.ret != 'void':
            emit_dec_value(gen, w, '   ', cmd.ret, '*ret')
        for p in params:
            m = p.m
            if p.role == 'out_count':
                wt = gen.wire_scalar(m.type)
                w(f'   if ({p.name}) {{')
                w(f'      uint64_t v = wire_dec_{WIRE_FN[wt]}(d);')
                arrays = ' || '.join(q.name for q in params if count_param_of(cmd, q) is m) or 'false'
                # too small a buffer: the size needed comes back, no data
                if 'VK_ERROR_NOT_ENOUGH_SPACE_KHR' in cmd.errorcodes:
                    arrays = f'({arrays}) && *ret != VK_ERROR_NOT_ENOUGH_SPACE_KHR'
                w(f'      if (v > cap_{p.name} && ({arrays}))')
                w('         wire_dec_fail(d, "reply count exceeds capacity");')
                w(f'      else *{p.name} = ({m.type})v;')
                w('   }')
            elif p.role == 'out_handle':
                n = out_len_expr(gen, cmd, p, '') or '1'
                w(f'   for (uint32_t i = 0; i < (uint32_t)({n}); i++)')
                w(f'      if (!wire_dec_u32(d)) {p.name}[i] = VK_NULL_HANDLE;')
            elif p.role in ('out_array', 'out_struct', 'out_scalar'):
                w(f'   if (wire_dec_u32(d)) {{')
                w(f'      if (!{p.name}) {{')
                w('         wire_dec_fail(d, "unexpected output");')
                w('         return;')
                w('      }')
                if p.role == 'out_scalar' and (name, p.name) in FD_MEMBERS:
                    w(f'      *{p.name} = wire_dec_fd(d);')
                elif p.role == 'out_scalar':
                    emit_dec_value(gen, w, '      ', m.type, f'*{p.name}')
                elif p.role == 'out_struct':
                    w(f'      wire_decout_{p.type}(d, {p.name});')
                else:
                    cp = count_param_of(cmd, p)
                    cap = f'cap_{cp.name}' if cp else out_len_expr(gen, cmd, p, '')
                    w('      uint32_t n = wire_dec_u32(d);')
                    w(f'      if ((uint64_t)n > (uint64_t)({cap})) {{')
                    w('         wire_dec_fail(d, "reply array exceeds capacity");')
                    w('         return;')
                    w('      }')
                    emit_out_elements(w, 'dec', p, p.name)
                w('   }')
        for p, n in writeback_params(gen, cmd):
            w(f'   for (uint32_t i = 0; {p.name} && i < (uint32_t)({n}) && !d->fatal; i++)')
            w(f'      wire_decback_{gen.reg.resolve_type(p.type)}(d, &{p.name}[i]);')
        w('}\n')


def writeback_structs(gen):
    """Input structs through which a WRITEBACK_MEMBERS member is reached:
    the struct itself, by a member, or by its pNext chain (found once)."""
    if not hasattr(gen, '_writeback_structs'):
        gen._writeback_structs = find_writeback_structs(gen)
    return set(gen._writeback_structs)


def find_writeback_structs(gen):
    reg = gen.reg
    found = {x for x, _ in WRITEBACK_MEMBERS if x in gen.structs_in}
    while True:
        more = set()
        for x in gen.structs_in - found:
            st = reg.structs[x]
            if any(reg.resolve_type(m.type) in found for m in st.members if m.name != 'pNext') or \
               any(y in found for y in gen.chain_members(x, False)):
                more.add(x)
        if not more:
            return found
        found |= more


# Create infos whose encoding names what the worker keeps in its pipeline
# cache (daemon/worker/gpud_pipecache.c hashes it, handles cleared).
KEYED_STRUCTS = ('VkComputePipelineCreateInfo', 'VkGraphicsPipelineCreateInfo')


def emit_struct_keys(gen, w, hw):
    for sname in KEYED_STRUCTS:
        if sname not in gen.structs_in:
            continue
        hw(f'void wire_key_{sname}(struct wire_enc *e, const {sname} *s);')
        w(f'void\nwire_key_{sname}(struct wire_enc *e, const {sname} *s)\n{{')
        w(f'   wire_enc_{sname}(e, s);')
        w('}\n')


def emit_writeback(gen, w):
    """wire_encback_X (daemon, after the call: what the host wrote) and
    wire_decback_X (ICD: into the application's storage), for each struct
    leading to a write-back member.  The _body variants leave out the pNext
    chain, which the struct heading it walks."""
    reg = gen.reg
    found = sorted(writeback_structs(gen))
    for x in found:
        for kind in ('enc', 'dec'):
            arg = 'struct wire_enc *e' if kind == 'enc' else 'struct wire_dec *d'
            w(f'static void wire_{kind}back_{x}({arg}, const {x} *s) __attribute__((unused));')
            w(f'static void wire_{kind}back_body_{x}({arg}, const {x} *s) __attribute__((unused));')
    w()
    for x in found:
        st = reg.structs[x]
        members = [m for m in st.members if m.name not in ('sType', 'pNext')]
        chain = [y for y in gen.chain_members(x, False) if y in found]
        # body
        for kind in ('enc', 'dec'):
            arg = 'struct wire_enc *e' if kind == 'enc' else 'struct wire_dec *d'
            w(f'static void\nwire_{kind}back_body_{x}({arg}, const {x} *s)\n{{')
            w(f'   (void){"e" if kind == "enc" else "d"};')
            w('   (void)s;')
            for m in members:
                t = reg.resolve_type(m.type)
                v = 's->' + m.name
                n = member_len(gen, st.members, m, 's->') if m.len else None
                if (x, m.name) in WRITEBACK_MEMBERS:
                    n = n or '1'
                    if kind == 'enc':
                        w(f'   wire_enc_u32(e, {v} != NULL);')
                        w(f'   if ({v}) {{')
                        w(f'      wire_enc_u32(e, (uint32_t)({n}));')
                        w(f'      for (uint32_t i = 0; i < (uint32_t)({n}); i++)')
                        emit_enc_value(gen, w, '         ', m.type, f'{v}[i]')
                        w('   }')
                    else:
                        w('   if (wire_dec_u32(d)) {')
                        w('      uint32_t n = wire_dec_u32(d);')
                        w(f'      if (!{v} || n != (uint32_t)({n})) {{')
                        w(f'         wire_dec_fail(d, "{x}.{m.name}: write-back does not fit");')
                        w('         return;')
                        w('      }')
                        w('      for (uint32_t i = 0; i < n && !d->fatal; i++)')
                        emit_dec_value(gen, w, '         ', m.type, f'{v}[i]')
                        w('   }')
                elif t in found:
                    idx = '' if not m.ptr else '[i]'
                    ref = f'&{v}{idx}' if m.ptr else f'&{v}'
                    cnt = n or '1'
                    w(f'   if ({"true" if not m.ptr else v})')
                    w(f'      for (uint32_t i = 0; i < (uint32_t)({cnt if m.ptr else "1"}); i++)')
                    w(f'         wire_{kind}back_{t}({"e" if kind == "enc" else "d"}, {ref});')
            w('}\n')
        # with the chain
        w(f'static void\nwire_encback_{x}(struct wire_enc *e, const {x} *s)\n{{')
        w(f'   wire_encback_body_{x}(e, s);')
        if st.stype:
            emit_chain_enc(w, chain_body_cases(reg, chain, 'wire_encback_body_'))
        w('}\n')
        w(f'static void\nwire_decback_{x}(struct wire_dec *d, const {x} *s)\n{{')
        w(f'   wire_decback_body_{x}(d, s);')
        if st.stype:
            w('   const VkBaseInStructure *c = s->pNext;')
            w('   for (;;) {')
            w('      uint32_t stype = wire_dec_u32(d);')
            w('      if (!stype || d->fatal)')
            w('         break;')
            w('      while (c && (uint32_t)c->sType != stype)')
            w('         c = c->pNext;')
            w('      switch (c ? (int)stype : 0) {')
            for y in chain:
                w(f'      case {reg.structs[y].stype}:')
                w(f'         wire_decback_body_{y}(d, (const {y} *)c);')
                w('         break;')
            w('      default:')
            w(f'         wire_dec_fail(d, "{x}: write-back for a struct not in the chain");')
            w('         return;')
            w('      }')
            w('      c = c->pNext;')
            w('   }')
        w('}\n')


def writeback_params(gen, cmd):
    """(param, element count) of the command's inputs that lead to write-backs."""
    found = writeback_structs(gen)
    out = []
    for p in cmd_params(gen, cmd):
        if p.role == 'input' and p.m.ptr == 1 and gen.reg.resolve_type(p.type) in found:
            n = member_len(gen, cmd.params, p.m, '') if p.m.len else '1'
            out.append((p, n))
    return out


def args_struct_name(name):
    return f'wire_args_{name}'


def emit_cmd_decoders(gen, w, hw):
    """Daemon side: request decoders into argument structs and reply encoders."""
    reg = gen.reg
    for name in gen.wire_commands:
        cmd = reg.commands[name]
        params = cmd_params(gen, cmd)
        hw(f'struct {args_struct_name(name)} {{')
        for p in params:
            if p.skip:
                continue
            m = p.m
            if p.role == 'input':
                t = decl_type(m)
                if m.dims:
                    t = t.replace('const ', '')
                hw(f'   {t};')
            elif p.role == 'out_handle':
                hw(f'   {p.type} *{p.name};')
                hw(f'   uint64_t *{p.name}_ids;')
                hw(f'   uint32_t {p.name}_count;')
            elif p.role == 'out_count':
                hw(f'   {m.type} *{p.name};')
            elif p.role == 'out_array':
                t = 'uint8_t' if p.kind == 'void' else p.type
                hw(f'   {t} *{p.name};')
                hw(f'   uint32_t {p.name}_cap;')
            elif p.role in ('out_struct', 'out_scalar'):
                hw(f'   {p.type} *{p.name};')
        if cmd.ret != 'void':
            hw(f'   {cmd.ret} ret;')
        hw('};')
        hw(f'bool wire_decargs_{name}(struct wire_dec *d, struct {args_struct_name(name)} *a);')
        w(f'bool\nwire_decargs_{name}(struct wire_dec *d, struct {args_struct_name(name)} *a)\n{{')
        checks = []
        for p in params:
            if p.skip:
                continue
            m = p.m
            if p.role == 'input':
                emit_member_dec(gen, w, name, cmd.params, m, 'a->', checks)
            elif p.role == 'out_count':
                wt = gen.wire_scalar(m.type)
                w('   if (wire_dec_u32(d)) {')
                w(f'      a->{p.name} = wire_dec_alloc(d, sizeof(*a->{p.name}));')
                w(f'      uint64_t v = wire_dec_{WIRE_FN[wt]}(d);')
                w(f'      if (a->{p.name}) *a->{p.name} = ({m.type})v;')
                w('   }')
                w(f'   if (!a->{p.name}) wire_dec_fail(d, "{name}: missing {p.name}");')
            elif p.role == 'out_handle':
                n = out_len_expr(gen, cmd, p, 'a->') or '1'
                w('   {')
                if '->' in n:
                    base = n.rsplit('->', 1)[0]
                    w(f'      if (!{base}) {{')
                    w(f'         wire_dec_fail(d, "{name}: missing {base[3:]}");')
                    w('         return false;')
                    w('      }')
                w(f'      uint64_t n = (uint64_t)({n});')
                w(f'      if (n > wire_dec_remaining(d) / 8) {{')
                w(f'         wire_dec_fail(d, "{name}: bad handle count");')
                w('         return false;')
                w('      }')
                w(f'      a->{p.name}_count = (uint32_t)n;')
                w(f'      a->{p.name}_ids = wire_dec_alloc(d, sizeof(uint64_t) * (n ? n : 1));')
                w(f'      a->{p.name} = wire_dec_alloc(d, sizeof(*a->{p.name}) * (n ? n : 1));')
                w(f'      for (uint32_t i = 0; a->{p.name}_ids && i < n; i++)')
                w(f'         a->{p.name}_ids[i] = wire_dec_new_id(d, wire_dec_u64(d));')
                w('   }')
            elif p.role == 'out_array':
                cp = count_param_of(cmd, p)
                n = f'*a->{cp.name}' if cp else out_len_expr(gen, cmd, p, 'a->')
                w('   if (wire_dec_u32(d)) {')
                w(f'      uint64_t n = (uint64_t)({n});')
                limit = 'WIRE_MAX_OUTPUT_BYTES' if p.kind == 'void' else 'WIRE_MAX_OUTPUT_ELEMENTS'
                w(f'      if (n > {limit}) {{')
                w(f'         wire_dec_fail(d, "{name}: output too large");')
                w('         return false;')
                w('      }')
                w(f'      a->{p.name}_cap = (uint32_t)n;')
                w(f'      a->{p.name} = wire_dec_alloc(d, sizeof(*a->{p.name}) * (n ? n : 1));')
                if p.kind == 'struct' and reg.structs[p.type].stype:
                    w(f'      for (uint32_t i = 0; a->{p.name} && i < n; i++)')
                    w(f'         wire_decshape_{p.type}(d, &a->{p.name}[i]);')
                w('   }')
            elif p.role in ('out_struct', 'out_scalar'):
                w('   if (wire_dec_u32(d)) {')
                w(f'      a->{p.name} = wire_dec_alloc(d, sizeof(*a->{p.name}));')
                if p.role == 'out_struct' and reg.structs[p.type].stype:
                    w(f'      if (a->{p.name}) wire_decshape_{p.type}(d, a->{p.name});')
                w('   }')
                w(f'   if (!a->{p.name}) wire_dec_fail(d, "{name}: missing {p.name}");')
        emit_checks(w, name, checks)
        w('   return !d->fatal;')
        w('}\n')

        if not is_sync(gen, cmd):
            continue
        hw(f'void wire_encreply_{name}(struct wire_enc *e, const struct {args_struct_name(name)} *a);')
        w(f'void\nwire_encreply_{name}(struct wire_enc *e, const struct {args_struct_name(name)} *a)\n{{')
        if cmd.ret != 'void':
            emit_enc_value(gen, w, '   ', cmd.ret, 'a->ret')
        for p in params:
            m = p.m
            if p.role == 'out_count':
                wt = gen.wire_scalar(m.type)
                w(f'   wire_enc_{WIRE_FN[wt]}(e, ({wt})*a->{p.name});')
            elif p.role == 'out_handle':
                w(f'   for (uint32_t i = 0; i < a->{p.name}_count; i++)')
                w(f'      wire_enc_u32(e, a->{p.name}[i] != VK_NULL_HANDLE);')
            elif p.role in ('out_scalar', 'out_struct'):
                w(f'   wire_enc_u32(e, a->{p.name} != NULL);')
                w(f'   if (a->{p.name}) {{')
                if p.role == 'out_scalar' and (name, p.name) in FD_MEMBERS:
                    w(f'      wire_enc_fd(e, a->ret == VK_SUCCESS ? *a->{p.name} : -1);')
                elif p.role == 'out_scalar':
                    emit_enc_value(gen, w, '      ', m.type, f'*a->{p.name}')
                else:
                    w(f'      wire_enc_{p.type}(e, a->{p.name});')
                w('   }')
            elif p.role == 'out_array':
                cp = count_param_of(cmd, p)
                w(f'   wire_enc_u32(e, a->{p.name} != NULL);')
                w(f'   if (a->{p.name}) {{')
                if cp:
                    w(f'      uint32_t n = (uint64_t)*a->{cp.name} < a->{p.name}_cap ? (uint32_t)*a->{cp.name} : a->{p.name}_cap;')
                    if 'VK_ERROR_NOT_ENOUGH_SPACE_KHR' in cmd.errorcodes:
                        w('      if (a->ret == VK_ERROR_NOT_ENOUGH_SPACE_KHR)')
                        w('         n = 0; /* nothing written, the size needed */')
                else:
                    w(f'      uint32_t n = a->{p.name}_cap;')
                w('      wire_enc_u32(e, n);')
                emit_out_elements(w, 'enc', p, f'a->{p.name}')
                w('   }')
        for p, n in writeback_params(gen, cmd):
            w(f'   for (uint32_t i = 0; a->{p.name} && i < (uint32_t)({member_len(gen, cmd.params, p.m, "a->") if p.m.len else "1"}); i++)')
            w(f'      wire_encback_{gen.reg.resolve_type(p.type)}(e, &a->{p.name}[i]);')
        w('}\n')


