# SPDX-License-Identifier: MIT
"""The replay's fast path for recorded commands (gpud_gen.c)."""

from gen_tables import FD_MEMBERS
from gen_emit_structs import checked_enum, emit_enum_checks, member_len, member_nullable
from gen_emit_commands import args_struct_name, records_in_cmdbuf


def fast_shape(gen, cmd):
    """How a recorded command decodes on the fast path: a list of
    (param, offset, wire size) for its fixed part, and the trailing byte
    array param (or None); None when the command has no fast path (a
    pointer other than one trailing byte array, a struct, an fd...)."""
    reg = gen.reg
    if not records_in_cmdbuf(cmd) or cmd.ret != 'void':
        return None
    fixed, off, tail = [], 0, None
    params = cmd.params
    for i, m in enumerate(params):
        k = reg.kind(m.type)
        if tail is not None:
            return None
        if m.ptr == 1 and k == 'void' and m.len and i == len(params) - 1 and \
                member_len(gen, params, m, 'a->'):
            tail = m
            continue
        if m.ptr or m.objecttype or (cmd.name, m.name) in FD_MEMBERS:
            return None
        if k == 'handle':
            if i and reg.handles[reg.resolve_type(m.type)][0]:
                return None  # a dispatchable handle after the first
            size = 8
        elif k in ('scalar', 'enum', 'bitmask', 'basetype') and reg.scalar_info(m.type):
            wt, native = reg.scalar_info(m.type)
            if m.dims:
                n = 1
                for d in m.dims:
                    if not str(d).isdigit():
                        return None
                    n *= int(d)
                size = (native * n + 3) & ~3
            else:
                size = 8 if wt in ('uint64_t', 'int64_t', 'double') else 4
        else:
            return None
        fixed.append((m, off, size))
        off += size
    return fixed, off, tail


def emit_fast_decoders(gen, w):
    """Daemon side (gpud_gen.c, beside the replay that calls them):
    fastargs_vkCmdFoo(), the decoder of a recorded command on the replay's
    fast path.  The command's size is checked once, its values are loaded
    from their offsets, handles translated, enums checked, a trailing byte
    array points into the message (a private copy); the command buffer is the
    chunk's, which the caller checked."""
    reg = gen.reg
    enums = set()
    for name in gen.wire_commands:
        shape = fast_shape(gen, reg.commands[name])
        for m, _, _ in (shape[0] if shape else []):
            if not m.dims and checked_enum(gen, m.type):
                enums.add(reg.resolve_type(m.type))
    emit_enum_checks(gen, w, enums)
    for name in gen.wire_commands:
        cmd = reg.commands[name]
        shape = fast_shape(gen, cmd)
        if shape is None:
            continue
        fixed, size, tail = shape
        w(f'static inline bool\nfastargs_{name}(struct wire_dec *d, struct {args_struct_name(name)} *a, '
          'VkCommandBuffer cb)\n{')
        w('   const uint8_t *p = d->p;')
        w('   const size_t left = wire_dec_remaining(d);')
        if len(fixed) == 1 and tail is None:
            w('   (void)p;')
        if tail is None:
            w(f'   if (left != {size})')
        else:
            w(f'   if (left < {size + 4})')
        w(f'      return wire_dec_fail(d, "{name}: wrong size");')
        for m, off, sz in fixed:
            k = reg.kind(m.type)
            rt = reg.resolve_type(m.type)
            v = f'a->{m.name}'
            if off == 0:
                w(f'   {v} = cb;')
                continue
            if k == 'handle':
                objtype = reg.handles[rt][1]
                nullable = 'true' if member_nullable(gen, name, m) else 'false'
                w('   {')
                w('      uint64_t v;')
                w(f'      memcpy(&v, p + {off}, 8);')
                w(f'      {v} = ({rt})(uintptr_t)wire_dec_handle_id(d, v, {objtype}, {nullable});')
                w('      if (d->fatal)')
                w('         return false;')
                w('   }')
            elif m.dims:
                w(f'   memcpy({v}, p + {off}, sizeof({v}));')
            else:
                wt = gen.wire_scalar(m.type)
                w('   {')
                w(f'      {wt} v;')
                w(f'      memcpy(&v, p + {off}, sizeof(v));')
                if checked_enum(gen, m.type):
                    w(f'      if (!wire_enum_ok_{rt}((int32_t)v))')
                    w(f'         return wire_dec_fail(d, "{rt} value out of range");')
                w(f'      {v} = ({m.type})v;')
                w('   }')
        if tail is not None:
            n = member_len(gen, cmd.params, tail, 'a->')
            v = f'a->{tail.name}'
            w('   {')
            w(f'      const uint8_t *q = p + {size};')
            w('      uint32_t present, n = 0;')
            w('      memcpy(&present, q, 4);')
            w('      if (!present) {')
            w(f'         if (left != {size + 4})')
            w(f'            return wire_dec_fail(d, "{name}: wrong size");')
            w(f'         {v} = NULL;')
            w('      } else {')
            w(f'         if (left < {size + 8})')
            w(f'            return wire_dec_fail(d, "{name}: wrong size");')
            w('         memcpy(&n, q + 4, 4);')
            w(f'         if ((uint64_t)left != {size + 8}u + (((uint64_t)n + 3) & ~3ull))')
            w(f'            return wire_dec_fail(d, "{name}: wrong size");')
            w(f'         {v} = q + 8;')
            w('      }')
            w(f'      if ({v} && (uint64_t)n != (uint64_t)({n}))')
            w(f'         return wire_dec_fail(d, "{name}: {tail.name} length mismatch");')
            if not member_nullable(gen, name, tail):
                w(f'      if (!{v} && ({n}) != 0)')
                w(f'         return wire_dec_fail(d, "{name}: missing {tail.name}");')
            w('   }')
        w('   d->p = d->end;')
        w('   return true;')
        w('}\n')

