# SPDX-License-Identifier: MIT
"""The structures' encoders and decoders with their checks (wire_gen.c,
wire_icd_gen.c, wire_gpud_gen.c)."""

from gen_tables import (
    ADDRESS_UNIONS, CONDITIONAL_MEMBERS, DROPPED_MEMBERS, FD_MEMBERS, NESTED_LENS, STRUCT_CHECKS,
    VIDEO_SUBLAYER_ARRAYS, VIDEO_SUBLAYER_SETS, nested_len)
from gen_model import pointer_array
from gen_writer import WIRE_FN, c_len_expr, chain_body_cases, emit_chain_enc


def member_len(gen, owner_members, m, prefix):
    """C expression for the element count of array member m, or None."""
    if not m.len:
        return None
    first = m.len[0]
    names = {x.name for x in owner_members}
    if first == 'null-terminated':
        return None
    if first.startswith('latexmath'):
        return '(' + c_len_expr(m.altlen, names, prefix) + ')'
    if '->' in first:
        base, field = first.split('->')
        return f'{prefix}{base}->{field}' if base in names else first
    if first in names:
        return prefix + first
    return first


def emit_enc_value(gen, w, ind, tname, expr, dims=()):
    """Encodes a non-pointer value (scalar, handle, struct, union)."""
    reg = gen.reg
    k = reg.kind(tname)
    if dims:
        if k in ('struct',) or k == 'handle':
            n = ' * '.join(f'({d})' for d in dims)
            w(f'{ind}for (uint32_t i{len(dims)} = 0; i{len(dims)} < {n}; i{len(dims)}++)')
            flat_expr = f'(&({expr})[0])[i{len(dims)}]' if len(dims) == 1 else None
            assert flat_expr
            emit_enc_value(gen, w, ind + '   ', tname, flat_expr)
        else:
            # ([0] of a two-dimensional array is a row)
            w(f'{ind}wire_enc_bytes(e, {expr}, sizeof(({expr})[0]) * ({dims[0]}));')
        return
    if k == 'handle':
        if gen.is_pointer_handle(tname):
            w(f'{ind}wire_enc_u64(e, wire_object_id({expr}));')
        else:
            w(f'{ind}wire_enc_u64(e, (uint64_t)(uintptr_t)({expr}));')
    elif k == 'union' and reg.resolve_type(tname) in ADDRESS_UNIONS:
        w(f'{ind}wire_enc_u64(e, ({expr}).{ADDRESS_UNIONS[reg.resolve_type(tname)]});')
    elif k == 'union':
        w(f'{ind}wire_enc_bytes(e, &({expr}), sizeof({expr}));')
    elif k == 'struct':
        w(f'{ind}wire_enc_{reg.resolve_type(tname)}(e, &({expr}));')
    else:
        wt = gen.wire_scalar(tname)
        w(f'{ind}wire_enc_{WIRE_FN[wt]}(e, ({wt})({expr}));')


def emit_dec_value(gen, w, ind, tname, lvalue, dims=(), nullable=False):
    reg = gen.reg
    k = reg.kind(tname)
    rt = reg.resolve_type(tname)
    if dims:
        if k in ('struct', 'handle'):
            n = ' * '.join(f'({d})' for d in dims)
            assert len(dims) == 1
            w(f'{ind}for (uint32_t i1 = 0; i1 < {n}; i1++)')
            emit_dec_value(gen, w, ind + '   ', tname, f'({lvalue})[i1]', nullable=nullable)
        else:
            w(f'{ind}wire_dec_bytes(d, {lvalue}, sizeof({lvalue}));')
        return
    if k == 'handle':
        objtype = reg.handles[rt][1]
        w(f'{ind}{lvalue} = ({rt})(uintptr_t)wire_dec_handle(d, {objtype}, {"true" if nullable else "false"});')
    elif k == 'union' and rt in ADDRESS_UNIONS:
        w(f'{ind}({lvalue}).{ADDRESS_UNIONS[rt]} = wire_dec_u64(d);')
    elif k == 'union':
        w(f'{ind}wire_dec_bytes(d, &({lvalue}), sizeof({lvalue}));')
    elif k == 'struct':
        w(f'{ind}wire_dec_{rt}(d, &({lvalue}));')
    elif checked_enum(gen, tname):
        w(f'{ind}{lvalue} = ({tname})wire_dec_enum(d, wire_enum_ok_{rt}(wire_peek_i32(d)), '
          f'"{rt} value out of range");')
    else:
        wt = gen.wire_scalar(tname)
        w(f'{ind}{lvalue} = ({tname})wire_dec_{WIRE_FN[wt]}(d);')


def checked_enum(gen, tname):
    """Whether values of tname are checked against the registry when the
    daemon decodes them: 32-bit enums that are not flag bits (a host driver
    indexes tables with them; an unknown value is out of bounds)."""
    reg = gen.reg
    if reg.kind(tname) != 'enum':
        return False
    rt = reg.resolve_type(tname)
    if 'FlagBits' in rt or gen.wire_scalar(tname) != 'int32_t' or rt == 'VkStructureType':
        return False
    return bool(reg.enum_members(rt))


def emit_enum_checks(gen, w, only=None):
    """wire_enum_ok_<Enum>(): whether a value is one the registry defines
    (for every checked enum, or those in only)."""
    reg = gen.reg
    for name in sorted(reg.enums):
        if reg.resolve_type(name) != name or not checked_enum(gen, name):
            continue
        if only is not None and name not in only:
            continue
        vals = sorted(reg.enum_members(name))
        w(f'static bool wire_enum_ok_{name}(int32_t v) __attribute__((unused));')
        w(f'static bool\nwire_enum_ok_{name}(int32_t v)\n{{')
        w('   switch (v) {')
        for v in vals:
            w(f'   case {v}:')
        w('      return true;')
        w('   default:')
        w('      return false;')
        w('   }')
        w('}')
        w('')


def emit_member_enc(gen, w, sname, members, m, prefix, ind='   ', cond=None):
    """Encodes member or parameter m (an input)."""
    reg = gen.reg
    v = prefix + m.name
    k = reg.kind(m.type)
    if cond:
        w(f'{ind}if ({cond}) {{')
        emit_member_enc(gen, w, sname, members, m, prefix, ind + '   ')
        w(f'{ind}}} else {{')
        if m.ptr:
            w(f'{ind}   wire_enc_u32(e, 0);')
        else:
            w(f'{ind}   wire_enc_u64(e, 0);')
        w(f'{ind}}}')
        return
    if (sname, m.name) in DROPPED_MEMBERS:
        return
    if m.ptr == 0 and k == 'union' and m.selector and not gen.flat(m.type):
        emit_selected_union(gen, w, sname, m, prefix, ind, None)
        return
    if m.ptr == 0 and m.objecttype:
        w(f'{ind}wire_enc_u64(e, wire_typed_handle_id((VkObjectType){prefix}{m.objecttype}, {v}));')
        return
    if pointer_array(reg, m):
        n = member_len(gen, members, m, prefix)
        w(f'{ind}wire_enc_u32(e, {v} != NULL);')
        w(f'{ind}if ({v}) {{')
        w(f'{ind}   const uint32_t n = (uint32_t)({n});')
        w(f'{ind}   wire_enc_u32(e, n);')
        w(f'{ind}   for (uint32_t i = 0; i < n; i++)')
        emit_enc_value(gen, w, ind + '      ', m.type, f'*{v}[i]')
        w(f'{ind}}}')
        return
    if (sname, m.name) in NESTED_LENS:
        n = member_len(gen, members, m, prefix)
        inner = nested_len((sname, m.name), prefix)
        w(f'{ind}wire_enc_u32(e, {v} != NULL);')
        w(f'{ind}if ({v}) {{')
        w(f'{ind}   const uint32_t n = (uint32_t)({n});')
        w(f'{ind}   wire_enc_u32(e, n);')
        w(f'{ind}   for (uint32_t i = 0; i < n; i++) {{')
        w(f'{ind}      const uint32_t inner = (uint32_t)({inner});')
        w(f'{ind}      wire_enc_u32(e, inner);')
        if k == 'struct':
            w(f'{ind}      for (uint32_t j = 0; j < inner; j++)')
            emit_enc_value(gen, w, ind + '         ', m.type, f'{v}[i][j]')
        else:
            w(f'{ind}      wire_enc_bytes(e, {v}[i], (size_t)inner * sizeof({v}[i][0]));')
        w(f'{ind}   }}')
        w(f'{ind}}}')
        return
    if m.ptr == 0 and (sname, m.name) in FD_MEMBERS:
        cond = FD_MEMBERS[(sname, m.name)]
        w(f'{ind}wire_enc_fd(e, {f"({cond}) ? {v} : -1" if cond else v});')
        return
    if m.ptr == 0:
        emit_enc_value(gen, w, ind, m.type, v, m.dims)
        return
    if m.ptr == 2:
        # array of strings
        n = member_len(gen, members, m, prefix)
        w(f'{ind}wire_enc_u32(e, {v} != NULL);')
        w(f'{ind}if ({v}) {{')
        w(f'{ind}   wire_enc_u32(e, (uint32_t)({n}));')
        w(f'{ind}   for (uint32_t i = 0; i < (uint32_t)({n}); i++)')
        w(f'{ind}      wire_enc_string(e, {v}[i]);')
        w(f'{ind}}}')
        return
    if m.type == 'char' and m.len and m.len[0] == 'null-terminated':
        w(f'{ind}wire_enc_string(e, {v});')
        return
    n = member_len(gen, members, m, prefix)
    if (sname, m.name) in VIDEO_SUBLAYER_ARRAYS:
        # an array as any other, as long as the parameter set being encoded
        # has sub-layers (the decoder's side is its own)
        cap = VIDEO_SUBLAYER_ARRAYS[(sname, m.name)]
        n = f'e->video_sublayers < {cap} ? e->video_sublayers : {cap}'
    w(f'{ind}wire_enc_u32(e, {v} != NULL);')
    if n is None:
        w(f'{ind}if ({v})')
        emit_enc_value(gen, w, ind + '   ', m.type, f'*{v}')
        return
    w(f'{ind}if ({v}) {{')
    w(f'{ind}   const uint32_t n = (uint32_t)({n});')
    w(f'{ind}   wire_enc_u32(e, n);')
    if k == 'void':
        w(f'{ind}   wire_enc_bytes(e, {v}, n);')
    elif m.stride:
        # packed on the wire; the daemon passes its own stride
        w(f'{ind}   for (uint32_t i = 0; i < n; i++)')
        emit_enc_value(gen, w, ind + '      ', m.type,
                       f'*(const {m.type} *)((const char *){v} + (size_t)i * {prefix}{m.stride})')
    elif k in ('struct', 'handle', 'union'):
        w(f'{ind}   for (uint32_t i = 0; i < n; i++)')
        emit_enc_value(gen, w, ind + '      ', m.type, f'{v}[i]')
    else:
        w(f'{ind}   wire_enc_bytes(e, {v}, (size_t)n * sizeof(*{v}));')
    w(f'{ind}}}')


def emit_selected_union(gen, w, sname, m, prefix, ind, checks):
    """A union whose member another member selects (vk.xml's selector and
    selection: VkDescriptorGetInfoEXT.data by its type): only the selected
    member travels, encoded (checks None) or decoded as a member of its
    own; for a selector that chooses none (a token without data) nothing
    does, and the host gets zeroes."""
    reg = gen.reg
    u = reg.structs[reg.resolve_type(m.type)]
    v = prefix + m.name
    sel = prefix + m.selector
    owner = reg.structs[sname]
    selector_type = next(x.type for x in owner.members if x.name == m.selector)
    if checks is None and reg.resolve_type(selector_type) == 'VkDescriptorType':
        # VkDescriptorImageInfo's handles travel by the descriptor type
        w(f'{ind}(void)wire_enc_set_descriptor_type(e, {sel});')
    w(f'{ind}switch ((int){sel}) {{')
    for um in u.members:
        for value in um.selection:
            w(f'{ind}case {value}:')
        w(f'{ind}   {{')
        if checks is None:
            emit_member_enc(gen, w, u.name, u.members, um, v + '.', ind + '      ')
        else:
            mine = []
            emit_member_dec(gen, w, u.name, u.members, um, v + '.', mine, ind + '      ')
            for cond, why in mine:
                w(f'{ind}      if (!d->fatal && !({cond}))')
                w(f'{ind}         wire_dec_fail(d, "{sname}.{m.name}: {why}");')
        w(f'{ind}   }}')
        w(f'{ind}   break;')
    w(f'{ind}default:')
    w(f'{ind}   break; /* a token with no data, or a value the host will refuse */')
    w(f'{ind}}}')


def member_nullable(gen, sname, m):
    return (m.is_optional or m.noautovalidity or (sname, m.name) in CONDITIONAL_MEMBERS)


def emit_member_dec(gen, w, sname, members, m, prefix, checks, ind='   '):
    """Decodes input member/parameter m into prefix+name.  Appends to checks
    the C conditions that must hold once everything is decoded."""
    reg = gen.reg
    v = prefix + m.name
    k = reg.kind(m.type)
    nullable = member_nullable(gen, sname, m)
    ctype = reg.resolve_type(m.type) if k not in ('void',) else 'uint8_t'
    if k == 'scalar':
        ctype = m.type
    if (sname, m.name) in DROPPED_MEMBERS:
        w(f'{ind}{v} = NULL;')
        return
    if m.ptr == 0 and k == 'union' and m.selector and not gen.flat(m.type):
        emit_selected_union(gen, w, sname, m, prefix, ind, checks)
        return
    if m.ptr == 0 and m.objecttype:
        w(f'{ind}{v} = wire_dec_handle(d, (VkObjectType){prefix}{m.objecttype}, false);')
        return
    if pointer_array(reg, m):
        # the structures, and the pointers at them the host reads
        n = member_len(gen, members, m, prefix)
        n_name = 'n_' + m.name
        w(f'{ind}uint32_t {n_name} = 0;')
        w(f'{ind}if (wire_dec_u32(d)) {{')
        w(f'{ind}   {n_name} = wire_dec_count(d, 4);')
        w(f'{ind}   {ctype} *arr = wire_dec_alloc(d, sizeof(*arr) * ({n_name} ? {n_name} : 1));')
        w(f'{ind}   const {ctype} **ptrs = wire_dec_alloc(d, sizeof(*ptrs) * ({n_name} ? {n_name} : 1));')
        w(f'{ind}   for (uint32_t i = 0; arr && ptrs && i < {n_name}; i++) {{')
        emit_dec_value(gen, w, ind + '      ', m.type, 'arr[i]')
        w(f'{ind}      ptrs[i] = &arr[i];')
        w(f'{ind}   }}')
        w(f'{ind}   {v} = ptrs;')
        w(f'{ind}}}')
        checks.append((f'(!{v} || (uint64_t){n_name} == (uint64_t)({n}))', f'{m.name} length mismatch'))
        if not nullable:
            checks.append((f'({v} || ({n}) == 0)', f'missing {m.name}'))
        return
    if (sname, m.name) in VIDEO_SUBLAYER_ARRAYS:
        cap = VIDEO_SUBLAYER_ARRAYS[(sname, m.name)]
        w(f'{ind}if (wire_dec_u32(d)) {{')
        w(f'{ind}   const uint32_t n = wire_dec_count(d, 4);')
        w(f'{ind}   if (!d->fatal && n > {cap})')
        w(f'{ind}      wire_dec_fail(d, "{sname}.{m.name}: more sub-layers than there may be");')
        w(f'{ind}   {ctype} *arr = wire_dec_alloc(d, sizeof(*arr) * {cap});')
        w(f'{ind}   for (uint32_t i = 0; arr && !d->fatal && i < n; i++) {{')
        emit_dec_value(gen, w, ind + '      ', m.type, 'arr[i]')
        w(f'{ind}   }}')
        w(f'{ind}   {v} = arr;')
        w(f'{ind}}}')
        return
    if (sname, m.name) in NESTED_LENS:
        # decoded after what gives the inner lengths (the parameters before
        # it), and checked against them at once
        n = member_len(gen, members, m, prefix)
        inner = nested_len((sname, m.name), prefix)
        array = NESTED_LENS[(sname, m.name)][0]
        et = reg.resolve_type(m.type) if k == 'struct' else m.type
        n_name = 'n_' + m.name
        w(f'{ind}uint32_t {n_name} = 0;')
        w(f'{ind}if (wire_dec_u32(d)) {{')
        w(f'{ind}   {n_name} = wire_dec_count(d, 4);')
        w(f'{ind}   const {et} **arr = wire_dec_alloc(d, sizeof(*arr) * ({n_name} ? {n_name} : 1));')
        # the array the inner lengths come from, decoded before: there, and
        # as long (its own length check runs only at the end)
        w(f'{ind}   if (!d->fatal && ((uint64_t){n_name} != (uint64_t)({n}) ||')
        w(f'{ind}                     ({n_name} && (!{prefix}{array} || n_{array} != {n_name}))))')
        w(f'{ind}      wire_dec_fail(d, "{sname}: {m.name} length mismatch");')
        w(f'{ind}   for (uint32_t i = 0; arr && !d->fatal && i < {n_name}; i++) {{')
        w(f'{ind}      const uint32_t inner = wire_dec_count(d, {4 if k == "struct" else "sizeof(arr[0][0])"});')
        w(f'{ind}      if (!d->fatal && inner != (uint32_t)({inner})) {{')
        w(f'{ind}         wire_dec_fail(d, "{sname}: {m.name}[i] length mismatch");')
        w(f'{ind}         break;')
        w(f'{ind}      }}')
        w(f'{ind}      {et} *elems = wire_dec_alloc(d, sizeof(*elems) * (inner ? inner : 1));')
        w(f'{ind}      if (!elems)')
        w(f'{ind}         break;')
        if k == 'struct':
            w(f'{ind}      for (uint32_t j = 0; j < inner; j++)')
            emit_dec_value(gen, w, ind + '         ', m.type, 'elems[j]')
        else:
            w(f'{ind}      wire_dec_bytes(d, elems, (size_t)inner * sizeof(*elems));')
        w(f'{ind}      arr[i] = elems;')
        w(f'{ind}   }}')
        w(f'{ind}   {v} = arr;')
        w(f'{ind}}}')
        checks.append((f'({v} || ({n}) == 0)', f'missing {m.name}'))
        return
    if m.ptr == 0 and (sname, m.name) in FD_MEMBERS:
        w(f'{ind}{v} = wire_dec_fd(d);')
        return
    if m.ptr == 0:
        emit_dec_value(gen, w, ind, m.type, v, m.dims, nullable)
        return
    if m.ptr == 2:
        n_name = 'n_' + m.name
        w(f'{ind}uint32_t {n_name} = 0;')
        w(f'{ind}if (wire_dec_u32(d)) {{')
        w(f'{ind}   {n_name} = wire_dec_count(d, 4);')
        w(f'{ind}   const char **arr = wire_dec_alloc(d, sizeof(*arr) * ({n_name} ? {n_name} : 1));')
        w(f'{ind}   for (uint32_t i = 0; arr && i < {n_name}; i++) {{')
        w(f'{ind}      arr[i] = wire_dec_string(d);')
        w(f'{ind}      if (!arr[i]) wire_dec_fail(d, "null string in array");')
        w(f'{ind}   }}')
        w(f'{ind}   {v} = arr;')
        w(f'{ind}}}')
        n = member_len(gen, members, m, prefix)
        checks.append((f'({v} || ({n}) == 0)', 'missing string array'))
        checks.append((f'(!{v} || {n_name} == ({n}))', 'string array length mismatch'))
        return
    if m.type == 'char' and m.len and m.len[0] == 'null-terminated':
        w(f'{ind}{v} = wire_dec_string(d);')
        if not nullable:
            checks.append((f'{v} != NULL', f'missing {m.name}'))
        return
    n = member_len(gen, members, m, prefix)
    if n is None:
        # single element
        w(f'{ind}if (wire_dec_u32(d)) {{')
        w(f'{ind}   {ctype} *p = wire_dec_alloc(d, sizeof(*p));')
        w(f'{ind}   if (p) {{')
        emit_dec_value(gen, w, ind + '      ', m.type, '*p', nullable=False)
        w(f'{ind}   }}')
        w(f'{ind}   {v} = p;')
        w(f'{ind}}}')
        if not nullable:
            checks.append((f'{v} != NULL', f'missing {m.name}'))
        return
    n_name = 'n_' + m.name
    minsz = gen.min_wire_size(m)
    w(f'{ind}uint32_t {n_name} = 0;')
    w(f'{ind}if (wire_dec_u32(d)) {{')
    w(f'{ind}   {n_name} = wire_dec_count(d, {minsz});')
    w(f'{ind}   {ctype} *arr = wire_dec_alloc(d, sizeof(*arr) * ({n_name} ? {n_name} : 1));')
    if k == 'void':
        w(f'{ind}   if (arr) wire_dec_bytes(d, arr, {n_name});')
    elif k in ('struct', 'handle', 'union'):
        w(f'{ind}   for (uint32_t i = 0; arr && i < {n_name}; i++) {{')
        emit_dec_value(gen, w, ind + '      ', m.type, 'arr[i]', nullable=nullable)
        w(f'{ind}   }}')
    elif checked_enum(gen, m.type):
        rt = reg.resolve_type(m.type)
        w(f'{ind}   for (uint32_t i = 0; arr && i < {n_name}; i++)')
        w(f'{ind}      arr[i] = ({rt})wire_dec_enum(d, wire_enum_ok_{rt}(wire_peek_i32(d)), '
          f'"{rt} value out of range");')
    else:
        w(f'{ind}   if (arr) wire_dec_bytes(d, arr, (size_t){n_name} * sizeof(*arr));')
    w(f'{ind}   {v} = arr;')
    w(f'{ind}}}')
    if m.stride:
        # a statement, not a check: the array is packed now
        checks.append((f'{prefix}{m.stride} = sizeof({ctype})', None))
    if m.len[0].startswith('latexmath'):
        checks.append((f'(!{v} || (uint64_t){n_name} >= (uint64_t)({n}))', f'{m.name} too short'))
    else:
        checks.append((f'(!{v} || (uint64_t){n_name} == (uint64_t)({n}))', f'{m.name} length mismatch'))
    if not nullable:
        checks.append((f'({v} || ({n}) == 0)', f'missing {m.name}'))


def emit_checks(w, owner, checks):
    """The conditions emit_member_dec collected, once everything of the
    owner is decoded (a None reason: a statement to run)."""
    for cond, why in checks:
        if why is None:
            w(f'   if (!d->fatal)')
            w(f'      {cond};')
        else:
            w(f'   if (!d->fatal && !({cond}))')
            w(f'      wire_dec_fail(d, "{owner}: {why}");')


def emit_structs(gen, w):
    reg = gen.reg
    structs = gen.structs_all
    emit_enum_checks(gen, w)
    # prototypes
    for sname in structs:
        s = reg.structs[sname]
        w(f'static void wire_enc_{sname}(struct wire_enc *e, const {sname} *s) __attribute__((unused));')
        w(f'static void wire_dec_{sname}(struct wire_dec *d, {sname} *s) __attribute__((unused));')
        if s.stype:
            w(f'static void wire_enc_body_{sname}(struct wire_enc *e, const {sname} *s) __attribute__((unused));')
            w(f'static void wire_dec_body_{sname}(struct wire_dec *d, {sname} *s) __attribute__((unused));')
        if sname in gen.structs_out:
            w(f'static void wire_decout_{sname}(struct wire_dec *d, {sname} *s) __attribute__((unused));')
            if s.stype:
                w(f'static void wire_decout_body_{sname}(struct wire_dec *d, {sname} *s) __attribute__((unused));')
            if s.stype:
                w(f'static void wire_encshape_{sname}(struct wire_enc *e, const {sname} *s) __attribute__((unused));')
                w(f'static void wire_decshape_{sname}(struct wire_dec *d, {sname} *s) __attribute__((unused));')
    w()
    # body encode/decode, chain encode/decode
    for sname in structs:
        s = reg.structs[sname]
        if s.union:
            w(f'static void\nwire_enc_{sname}(struct wire_enc *e, const {sname} *s)\n{{')
            w('   wire_enc_bytes(e, s, sizeof(*s));\n}\n')
            w(f'static void\nwire_dec_{sname}(struct wire_dec *d, {sname} *s)\n{{')
            w('   wire_dec_bytes(d, s, sizeof(*s));\n}\n')
            if sname in gen.structs_out:
                w(f'static void\nwire_decout_{sname}(struct wire_dec *d, {sname} *s)\n{{')
                w('   wire_dec_bytes(d, s, sizeof(*s));\n}\n')
            continue
        output = sname in gen.structs_out and sname not in gen.structs_in
        chain = gen.chain_members(sname, output) if s.stype else []
        # encode
        body = 'body_' if s.stype else ''
        w(f'static void\nwire_enc_{body}{sname}(struct wire_enc *e, const {sname} *s)\n{{')
        if sname in VIDEO_SUBLAYER_SETS:
            w(f'   e->video_sublayers = (uint32_t)s->{VIDEO_SUBLAYER_SETS[sname]} + 1;')
        for m in s.members:
            if m.name == 'sType':
                continue
            if m.name == 'pNext':
                continue
            cond = CONDITIONAL_MEMBERS.get((sname, m.name))
            emit_member_enc(gen, w, sname, s.members, m, 's->', cond=cond)
        if s.stype:
            w('}\n')
            w(f'static void\nwire_enc_{sname}(struct wire_enc *e, const {sname} *s)\n{{')
            w(f'   wire_enc_body_{sname}(e, s);')
            emit_chain_enc(w, chain_body_cases(reg, chain, 'wire_enc_body_'),
                           'break; /* unknown or unsupported: skipped, as the spec allows */')
        w('}\n')
        # decode
        w(f'static void\nwire_dec_{body}{sname}(struct wire_dec *d, {sname} *s)\n{{')
        checks = []
        if s.stype:
            w(f'   s->sType = {s.stype};')
        for m in s.members:
            if m.name in ('sType', 'pNext'):
                continue
            emit_member_dec(gen, w, sname, s.members, m, 's->', checks)
        checks += STRUCT_CHECKS.get(sname, [])
        emit_checks(w, sname, checks)
        checks = []
        if s.stype:
            w('}\n')
            w(f'static void\nwire_dec_{sname}(struct wire_dec *d, {sname} *s)\n{{')
            w(f'   wire_dec_body_{sname}(d, s);')
            w('   VkBaseOutStructure **tail = (VkBaseOutStructure **)&s->pNext;')
            # a structure twice, where vk.xml does not allow it, could show
            # the host one the daemon never checked
            w(f'   uint8_t seen[{max(1, len(chain))}] = {{0}};')
            w('   (void)seen;')
            w('   for (unsigned depth = 0;; depth++) {')
            w('      uint32_t stype = wire_dec_u32(d);')
            w('      if (!stype || d->fatal)')
            w('         break;')
            w('      if (depth >= WIRE_MAX_CHAIN_LENGTH) {')
            w('         wire_dec_fail(d, "pNext chain too long");')
            w('         break;')
            w('      }')
            w('      VkBaseOutStructure *c = NULL;')
            w('      switch (stype) {')
            for k, x in enumerate(chain):
                xs = reg.structs[x]
                w(f'      case {xs.stype}: {{')
                if not xs.allowduplicate:
                    w(f'         if (seen[{k}]++) {{')
                    w(f'            wire_dec_fail(d, "a structure twice in the pNext chain of {sname}");')
                    w('            break;')
                    w('         }')
                w(f'         {x} *x = wire_dec_alloc(d, sizeof(*x));')
                w(f'         if (x) wire_dec_body_{x}(d, x);')
                w('         c = (VkBaseOutStructure *)x;')
                w('         break;')
                w('      }')
            w('      default:')
            w(f'         wire_dec_fail(d, "sType not allowed in the pNext chain of {sname}");')
            w('         break;')
            w('      }')
            w('      if (!c)')
            w('         break;')
            w('      c->pNext = NULL;')
            w('      *tail = c;')
            w('      tail = &c->pNext;')
            w('   }')
        emit_checks(w, sname, checks)
        w('}\n')
        if sname not in gen.structs_out:
            continue
        # output decode into application memory (ICD side)
        ochain = gen.chain_members(sname, True) if s.stype else []
        w(f'static void\nwire_decout_{body}{sname}(struct wire_dec *d, {sname} *s)\n{{')
        sized = gen.sized_outputs(sname) if s.stype else {}
        for a, n in sized.items():
            w(f'   const uint32_t capacity_{a} = s->{a} ? s->{n} : 0;')
        for m in s.members:
            if m.name in ('sType', 'pNext'):
                continue
            k = reg.kind(m.type)
            if m.name in sized:
                n = sized[m.name]
                w('   if (wire_dec_u32(d)) {')
                w(f'      const uint32_t n = wire_dec_count(d, {gen.min_wire_size(m)});')
                w(f'      if (!s->{m.name} || n != s->{n} || n > capacity_{m.name}) {{')
                w(f'         wire_dec_fail(d, "{sname}.{m.name}: more than the application has room for");')
                w('         return;')
                w('      }')
                if k == 'void':
                    w(f'      wire_dec_bytes(d, s->{m.name}, n);')
                else:
                    w('      for (uint32_t i = 0; i < n; i++) {')
                    if k == 'struct':
                        w(f'         wire_decout_{reg.resolve_type(m.type)}(d, &s->{m.name}[i]);')
                    else:
                        emit_dec_value(gen, w, '         ', m.type, f's->{m.name}[i]')
                    w('      }')
                w('   }')
                continue
            if k == 'struct':
                if m.dims:
                    w(f'   for (uint32_t i = 0; i < {m.dims[0]}; i++)')
                    w(f'      wire_decout_{reg.resolve_type(m.type)}(d, &s->{m.name}[i]);')
                else:
                    w(f'   wire_decout_{reg.resolve_type(m.type)}(d, &s->{m.name});')
            else:
                emit_dec_value(gen, w, '   ', m.type, f's->{m.name}', m.dims)
        if s.stype:
            w('}\n')
            w(f'static void\nwire_decout_{sname}(struct wire_dec *d, {sname} *s)\n{{')
            w(f'   wire_decout_body_{sname}(d, s);')
            w('   VkBaseOutStructure *app = (VkBaseOutStructure *)s->pNext;')
            w('   for (;;) {')
            w('      uint32_t stype = wire_dec_u32(d);')
            w('      if (!stype || d->fatal)')
            w('         break;')
            w('      while (app && (uint32_t)app->sType != stype)')
            w('         app = app->pNext;')
            w('      if (!app) {')
            w('         wire_dec_fail(d, "reply chain does not match the request");')
            w('         break;')
            w('      }')
            w('      switch (stype) {')
            for x in ochain:
                w(f'      case {reg.structs[x].stype}:')
                w(f'         wire_decout_body_{x}(d, ({x} *)app);')
                w('         break;')
            w('      default:')
            w('         wire_dec_fail(d, "unexpected sType in reply");')
            w('         break;')
            w('      }')
            w('      app = app->pNext;')
            w('   }')
        w('}\n')
        if not s.stype:
            continue
        # shapes
        w(f'static void\nwire_encshape_{sname}(struct wire_enc *e, const {sname} *s)\n{{')
        emit_sized_room(gen, w, '   ', sname, 's')
        plain = [x for x in ochain if not gen.sized_outputs(x)]

        def shape_cases(w):
            for x in ochain:
                if x in plain:
                    continue
                w(f'      case {reg.structs[x].stype}: {{')
                w(f'         const {x} *x = (const {x} *)c;')
                w('         wire_enc_u32(e, (uint32_t)c->sType);')
                emit_sized_room(gen, w, '         ', x, 'x')
                w('         break;')
                w('      }')
            for x in plain:
                w(f'      case {reg.structs[x].stype}:')
            if plain:
                w('         wire_enc_u32(e, (uint32_t)c->sType);')
                w('         break;')
        emit_chain_enc(w, shape_cases)
        w('}\n')
        w(f'static void\nwire_decshape_{sname}(struct wire_dec *d, {sname} *s)\n{{')
        w(f'   s->sType = {s.stype};')
        emit_sized_shape(gen, w, '   ', sname, 's', 'return')
        w('   VkBaseOutStructure **tail = (VkBaseOutStructure **)&s->pNext;')
        w('   for (unsigned depth = 0;; depth++) {')
        w('      uint32_t stype = wire_dec_u32(d);')
        w('      if (!stype || d->fatal)')
        w('         break;')
        w('      size_t size = 0;')
        w('      switch (stype) {')
        for x in ochain:
            w(f'      case {reg.structs[x].stype}: size = sizeof({x}); break;')
        w('      default: break;')
        w('      }')
        w('      if (!size || depth >= WIRE_MAX_CHAIN_LENGTH) {')
        w(f'         wire_dec_fail(d, "bad output chain for {sname}");')
        w('         break;')
        w('      }')
        w('      VkBaseOutStructure *c = wire_dec_alloc(d, size);')
        w('      if (!c)')
        w('         break;')
        w('      c->sType = (VkStructureType)stype;')
        sized_chain = [x for x in ochain if gen.sized_outputs(x)]
        if sized_chain:
            # the host gets the room the application has, never more than
            # the daemon's limit, and never a null array it did not ask for
            w('      switch (stype) {')
            for x in sized_chain:
                w(f'      case {reg.structs[x].stype}: {{')
                w(f'         {x} *x = ({x} *)c;')
                emit_sized_shape(gen, w, '         ', x, 'x', 'break')
                w('         break;')
                w('      }')
            w('      default:')
            w('         break;')
            w('      }')
        w('      *tail = c;')
        w('      tail = &c->pNext;')
        w('   }')
        w('}\n')


def emit_sized_room(gen, w, ind, sname, var):
    """The ICD's side of emit_sized_shape: the room the application gives
    each array it sizes (none for a null array)."""
    for a, n in gen.sized_outputs(sname).items():
        w(f'{ind}wire_enc_u32(e, {var}->{a} != NULL);')
        w(f'{ind}wire_enc_u32(e, {var}->{a} ? '
          f'(uint32_t)({var}->{n} < UINT32_MAX ? {var}->{n} : UINT32_MAX) : 0);')


def emit_sized_shape(gen, w, ind, sname, var, leave):
    """The daemon's side of an output struct's arrays the application
    sizes (Gen.sized_outputs): the room it has, never more than the
    daemon's limit, and never a null array it did not ask for."""
    reg = gen.reg
    for a, n in gen.sized_outputs(sname).items():
        m = next(x for x in reg.structs[sname].members if x.name == a)
        k = reg.kind(m.type)
        es = reg.structs.get(reg.resolve_type(m.type))
        limit = 'WIRE_MAX_OUTPUT_BYTES' if k == 'void' else 'WIRE_MAX_OUTPUT_ELEMENTS'
        size = '1' if k == 'void' else f'sizeof(*{var}->{a})'
        w(f'{ind}if (wire_dec_u32(d)) {{')
        w(f'{ind}   uint32_t n = wire_dec_u32(d);')
        w(f'{ind}   if (n > {limit}) {{')
        w(f'{ind}      wire_dec_fail(d, "{sname}.{a}: too many elements");')
        w(f'{ind}      {leave};')
        w(f'{ind}   }}')
        w(f'{ind}   {var}->{a} = wire_dec_alloc(d, (n ? n : 1) * {size});')
        if k == 'struct' and es.stype:
            w(f'{ind}   for (uint32_t i = 0; {var}->{a} && i < n; i++)')
            w(f'{ind}      {var}->{a}[i].sType = {es.stype};')
        w(f'{ind}   {var}->{n} = n;')
        w(f'{ind}}} else {{')
        w(f'{ind}   (void)wire_dec_u32(d);')
        w(f'{ind}}}')
