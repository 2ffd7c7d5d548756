#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Generates the cases of the wire round-trip unit test from vk.xml.

Output (into the build directory): test_wire_roundtrip_gen.c, one case per
command gen_wire.py carries on the wire, run by the harness in
tests/unit/test_wire_roundtrip.c.  Each case has two variants, each of which

  - builds a sample call with deterministic values: scalars distinct per
    field, handles as distinct non-zero ids (pointer handles point at
    object headers holding them), arrays of a few elements with their
    length members set to match, strings, a pNext chain with the first
    struct each input struct allows, nested structs filled in turn, and
    output storage as the ICD passes it (capacities, sTypes, a chained
    output struct, fresh ids for new objects).  The "full" variant fills
    everything; the "sparse" one leaves out whatever the decoder accepts
    absent (optional pointers and handles, pNext chains, optional output
    arrays) and gives optional counts 0;
  - encodes it (A), decodes A as the daemon does, wants the decoded
    arguments to hold the sample's values (compared member by member,
    through pointers and chains), re-encodes them (B) and wants A == B
    byte for byte;
  - wants every proper prefix of A, and A with an array count changed, to
    decode as fatal;
  - for synchronous commands, fills the daemon side's outputs and return
    value, encodes the reply, decodes it into the sample's output storage
    as the ICD does, checks the return value, counts, handles and output
    values, and re-encodes what the ICD received to compare it with the
    reply.

Like gen_wire.py, this uses only the Python standard library; it uses the
generator's own parts: its tables (gen_tables.py), its model of the
registry (gen_model.py) and its encoding rules (gen_emit_*.py)."""

import argparse
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gen_tables import (  # noqa: E402
    CONDITIONAL_MEMBERS,
    DROPPED_MEMBERS,
    FD_MEMBERS,
    ICD_POINTER_HANDLES,
    MAX_OPAQUE_DATA,
    NESTED_LENS,
    VIDEO_SUBLAYER_ARRAYS,
    nested_len)
from gen_model import Gen, pointer_array  # noqa: E402
from gen_writer import Writer, write_if_changed  # noqa: E402
from gen_emit_structs import member_len, member_nullable  # noqa: E402
from gen_emit_commands import cmd_params, count_param_of, decl_type, is_sync  # noqa: E402
import vkxml  # noqa: E402


# --------------------------------------------------------------------------
# The tables: everything hand-decided lives here.

# Elements in an input array, unless ARRAY_LENGTHS says otherwise.
ARRAY_LEN = 2

# Bytes in a void array (an odd count exercises the padding).
VOID_ARRAY_BYTES = 6

# Capacity of output arrays and of in/out counts.
OUTPUT_CAP = 2

# Element types whose arrays get more elements, to cover every branch of a
# condition that differs per element (CHOSEN_VALUES gives the values).
ARRAY_LENGTHS = {
    # one write per kind of descriptor info: image+sampler, buffer, texel
    # buffer, sampler only, image only
    'VkWriteDescriptorSet': 5,
}

# Members a CONDITIONAL_MEMBERS condition reads: successive occurrences in
# one case take successive values, so that each condition is met and not
# met.  Other scalars get counter values.
CHOSEN_VALUES = {
    ('VkWriteDescriptorSet', 'descriptorType'): [
        'VK_DESCRIPTOR_TYPE_COMBINED_IMAGE_SAMPLER', 'VK_DESCRIPTOR_TYPE_UNIFORM_BUFFER',
        'VK_DESCRIPTOR_TYPE_STORAGE_TEXEL_BUFFER', 'VK_DESCRIPTOR_TYPE_SAMPLER',
        'VK_DESCRIPTOR_TYPE_SAMPLED_IMAGE'],
    ('VkDescriptorSetLayoutBinding', 'descriptorType'): [
        'VK_DESCRIPTOR_TYPE_SAMPLER', 'VK_DESCRIPTOR_TYPE_UNIFORM_BUFFER'],
    ('VkBufferCreateInfo', 'sharingMode'): [
        'VK_SHARING_MODE_CONCURRENT', 'VK_SHARING_MODE_EXCLUSIVE'],
    ('VkImageCreateInfo', 'sharingMode'): [
        'VK_SHARING_MODE_CONCURRENT', 'VK_SHARING_MODE_EXCLUSIVE'],
    ('VkGraphicsPipelineCreateInfo', 'flags'): [
        'VK_PIPELINE_CREATE_DERIVATIVE_BIT', 'VK_PIPELINE_CREATE_ALLOW_DERIVATIVES_BIT'],
    ('VkComputePipelineCreateInfo', 'flags'): [
        'VK_PIPELINE_CREATE_DERIVATIVE_BIT', 'VK_PIPELINE_CREATE_ALLOW_DERIVATIVES_BIT'],
    # The first graphics pipeline gets a tessellation stage, the second not.
    ('VkPipelineShaderStageCreateInfo', 'stage'): [
        'VK_SHADER_STAGE_VERTEX_BIT', 'VK_SHADER_STAGE_TESSELLATION_CONTROL_BIT',
        'VK_SHADER_STAGE_VERTEX_BIT', 'VK_SHADER_STAGE_FRAGMENT_BIT'],
    ('VkFramebufferCreateInfo', 'flags'): ['0', 'VK_FRAMEBUFFER_CREATE_IMAGELESS_BIT'],
    ('VkRenderingAttachmentInfo', 'resolveMode'): [
        'VK_RESOLVE_MODE_AVERAGE_BIT', 'VK_RESOLVE_MODE_NONE'],
    # (STRUCT_CHECKS: no larger than the key)
    ('VkPipelineBinaryKeyKHR', 'keySize'): ['20', 'VK_MAX_PIPELINE_BINARY_KEY_SIZE_KHR'],
    ('VkAccelerationStructureBuildGeometryInfoKHR', 'mode'): [
        'VK_BUILD_ACCELERATION_STRUCTURE_MODE_UPDATE_KHR',
        'VK_BUILD_ACCELERATION_STRUCTURE_MODE_BUILD_KHR'],
}

# Members of which a structure holds one only (gen_tables.py's STRUCT_CHECKS
# refuse both): successive occurrences fill each in turn.
ONE_OF = {
    'VkAccelerationStructureBuildGeometryInfoKHR': ('pGeometries', 'ppGeometries'),
}

# Arrays whose length vk.xml gives as a latexmath formula: the member the
# formula reads and the value that makes it ARRAY_LEN.  A formula not
# listed here stops the generator.
LATEX_LENS = {
    ('VkShaderModuleCreateInfo', 'pCode'): ('codeSize', str(4 * ARRAY_LEN)),
    ('VkPipelineMultisampleStateCreateInfo', 'pSampleMask'):
        ('rasterizationSamples', 'VK_SAMPLE_COUNT_64_BIT'),
    ('vkCmdSetSampleMaskEXT', 'pSampleMask'): ('samples', 'VK_SAMPLE_COUNT_64_BIT'),
}

# Arrays whose latexmath length is a constant: their element count.
LATEX_CONSTANT_LENS = {
    ('VkAccelerationStructureVersionInfoKHR', 'pVersionData'): 32,  # 2*VK_UUID_SIZE
}

# Nesting depth of input structs (pointers and pNext) before giving up.
MAX_DEPTH = 8

# --------------------------------------------------------------------------


class Values:
    """Counters shared by every case, so that values are distinct."""

    def __init__(self):
        self.value = 0x100
        self.id = 0

    def next_value(self):
        self.value += 1
        return self.value

    def next_id(self):
        self.id += 1
        # above 32 bits, to catch truncation
        return (self.id << 32) | (0x1000 + self.id)


class Case:
    """Writes one command's case."""

    def __init__(self, gen, values, index, name, sparse):
        self.gen = gen
        self.sparse = sparse
        self.variant = 'sparse' if sparse else 'full'
        self.reg = gen.reg
        self.values = values
        self.index = index
        self.name = name
        self.cmd = self.reg.commands[name]
        self.lines = []
        self.nlocal = 0
        self.rotation = {}
        self.null_outs = set()  # output arrays the sample call leaves NULL

    def w(self, s=''):
        self.lines.append('   ' + s if s else '')

    def absent(self, owner, m):
        """Whether the sparse variant leaves member or parameter m out."""
        return self.sparse and member_nullable(self.gen, owner, m)

    def local(self, prefix):
        self.nlocal += 1
        return f'{prefix}{self.nlocal}'

    # ---- values ---------------------------------------------------------

    def ctype(self, tname):
        """The C type of an element of type tname."""
        k = self.reg.kind(tname)
        if k == 'void':
            return 'uint8_t'
        if k == 'scalar':
            return tname
        return self.reg.resolve_type(tname)

    def scalar_value(self, tname):
        info = self.reg.scalar_info(tname)
        if info is None:
            raise SystemExit(f'gen_roundtrip: {self.name}: no value for type {tname}')
        wt, size = info
        v = self.values.next_value()
        if wt == 'float':
            return f'{v}.5f'
        if wt == 'double':
            return f'{v}.25'
        if size == 1:
            return f'({tname}){16 + v % 200}'
        if size == 2:
            return f'({tname}){16 + v % 60000}'
        if size == 4:
            return f'({tname}){v}'
        return f'({tname})0x{(v << 32) | (v * 7 + 3):x}ull'

    def handle_value(self, tname):
        t = self.reg.resolve_type(tname)
        oid = self.values.next_id()
        if t in ICD_POINTER_HANDLES:
            return f'({t})rt_obj(0x{oid:x}ull)'
        return f'({t})(uintptr_t)0x{oid:x}ull'

    def string_value(self):
        return f'"str{self.values.next_value()}"'

    def array_len(self, m):
        """Elements in a sample input array for member or parameter m."""
        if self.reg.kind(m.type) == 'void':
            return VOID_ARRAY_BYTES
        return ARRAY_LENGTHS.get(self.reg.resolve_type(m.type), ARRAY_LEN)

    def len_values(self, owner, members):
        """Values of the members that give other members' lengths."""
        names = {m.name for m in members}
        optional = {m.name for m in members if m.is_optional}
        lens = {}
        for m in members:
            if not m.len or m.len[0] == 'null-terminated':
                continue
            first = m.len[0]
            if first.startswith('latexmath'):
                if (owner, m.name) in LATEX_CONSTANT_LENS:
                    continue
                if (owner, m.name) not in LATEX_LENS:
                    raise SystemExit(f'gen_roundtrip: {owner}.{m.name}: add its length '
                                     f'formula {m.altlen!r} to LATEX_LENS')
                field, value = LATEX_LENS[(owner, m.name)]
            elif first in names:
                field = first
                value = '0' if self.sparse and first in optional else str(self.array_len(m))
            else:
                continue
            if lens.get(field, value) != value:
                raise SystemExit(f'gen_roundtrip: {owner}.{field}: arrays of different lengths')
            lens[field] = value
        return lens

    # ---- input values -----------------------------------------------------

    def fill_value(self, lv, tname, dims, depth, overrides=None):
        """Fills the non-pointer value lv of type tname."""
        k = self.reg.kind(tname)
        if dims:
            if len(dims) != 1 and k in ('struct', 'handle', 'union'):
                raise SystemExit(f'gen_roundtrip: {self.name}: {lv}: multi-dimensional array')
            if len(dims) != 1:
                self.w(f'rt_fill_bytes({lv}, sizeof({lv}), &seed);')
                return
            if k in ('struct', 'handle', 'union'):
                if not dims[0].isdigit():
                    raise SystemExit(f'gen_roundtrip: {self.name}: {lv}: array of {dims[0]}')
                for i in range(int(dims[0])):
                    self.fill_value(f'{lv}[{i}]', tname, (), depth)
                return
            wt = self.reg.scalar_info(tname)[0]
            fn = {'float': 'rt_float', 'double': 'rt_double', 'uint64_t': 'rt_u64',
                  'int64_t': 'rt_u64'}.get(wt, 'rt_u32')
            self.w(f'for (size_t i = 0; i < UTIL_ARRAY_SIZE({lv}); i++)')
            self.w(f'   {lv}[i] = ({tname}){fn}(&seed);')
            return
        if k == 'handle':
            self.w(f'{lv} = {self.handle_value(tname)};')
        elif k == 'union':
            self.w(f'rt_fill_bytes(&{lv}, sizeof({lv}), &seed);')
        elif k == 'struct':
            self.fill_struct(lv, tname, depth, overrides)
        else:
            self.w(f'{lv} = {self.scalar_value(tname)};')

    def fill_struct(self, lv, sname, depth, overrides=None, chain=True):
        """Fills the input struct lv (zeroed)."""
        reg = self.reg
        sname = reg.resolve_type(sname)
        s = reg.structs[sname]
        if depth > MAX_DEPTH:
            raise SystemExit(f'gen_roundtrip: {self.name}: {lv}: structs nest too deep')
        if s.union:
            self.w(f'rt_fill_bytes(&{lv}, sizeof({lv}), &seed);')
            return
        lens = self.len_values(sname, s.members)
        # a length the command sets (pBuildInfo->geometryCount) sizes the
        # struct's own arrays too
        lens.update({f: v for f, v in (overrides or {}).items() if f in lens})
        # a selected union: one of its members in turn, its selector set
        # to match
        chosen = {}
        for m in s.members:
            if m.selector and reg.kind(m.type) == 'union' and not self.gen.flat(m.type):
                members = [um for um in reg.structs[reg.resolve_type(m.type)].members
                           if um.selection]
                i = self.rotation.get((sname, m.name), 0)
                self.rotation[(sname, m.name)] = i + 1
                um = members[i % len(members)]
                chosen[m.name] = um
                overrides = dict(overrides or {})
                overrides[m.selector] = um.selection[0]
        skipped = set()
        forced = None  # the one of ONE_OF, filled even in the sparse variant
        if sname in ONE_OF:
            i = self.rotation.get((sname, 'ONE_OF'), 0)
            self.rotation[(sname, 'ONE_OF')] = i + 1
            forced = ONE_OF[sname][i % len(ONE_OF[sname])]
            skipped = set(ONE_OF[sname]) - {forced}
        for m in s.members:
            mlv = f'{lv}.{m.name}'
            key = (sname, m.name)
            if m.name in skipped or key in DROPPED_MEMBERS:
                continue  # NULL: zeroed
            if m.name in chosen:
                um = chosen[m.name]
                ulv = f'{mlv}.{um.name}'
                if um.ptr:
                    self.fill_pointer(ulv, um, reg.resolve_type(m.type), depth + 1)
                else:
                    self.fill_value(ulv, um.type, (), depth + 1)
                continue
            if m.name == 'sType':
                self.w(f'{mlv} = {s.stype};')
            elif m.name == 'pNext':
                allowed = self.gen.chain_members(sname, False) \
                    if chain and not self.sparse else []
                if allowed:
                    x = allowed[0]
                    loc = self.local('c')
                    self.w(f'{x} {loc};')
                    self.w(f'memset(&{loc}, 0, sizeof({loc}));')
                    self.fill_struct(loc, x, depth + 1, chain=False)
                    self.w(f'{mlv} = &{loc};')
            elif overrides and m.name in overrides:
                self.w(f'{mlv} = ({m.type})({overrides[m.name]});')
            elif m.name in lens:
                self.w(f'{mlv} = ({m.type})({lens[m.name]});')
            elif key in CHOSEN_VALUES:
                choices = CHOSEN_VALUES[key]
                i = self.rotation.get(key, 0)
                self.rotation[key] = i + 1
                self.w(f'{mlv} = ({m.type})({choices[i % len(choices)]});')
            elif self.absent(sname, m) and (m.ptr or reg.kind(m.type) == 'handle') and \
                    m.name != forced:
                pass  # NULL or VK_NULL_HANDLE: zeroed
            elif m.bitfield:
                mask = (1 << m.bits) - 1
                self.w(f'{mlv} = ({m.type})(({self.scalar_value(m.type)}) & 0x{mask:x}u);')
            elif m.ptr == 0:
                self.fill_value(mlv, m.type, m.dims, depth + 1)
            elif key in VIDEO_SUBLAYER_ARRAYS:
                # as many as the parameter set may have sub-layers
                self.fill_pointer(mlv, m, sname, depth + 1, count=7)
            else:
                self.fill_pointer(mlv, m, sname, depth + 1, count=self.count_of(m, lens))

    def count_of(self, m, lens):
        """Elements in array m, given the length values of its owner."""
        if not m.len or m.len[0] == 'null-terminated' or m.len[0].startswith('latexmath'):
            return None
        value = lens.get(m.len[0])
        return int(value) if value is not None and value.isdigit() else None

    def fill_pointer(self, lv, m, owner, depth, overrides=None, count=None):
        """Points lv at sample storage for pointer member or parameter m
        (count elements when it is an array, array_len(m) if None)."""
        reg = self.reg
        k = reg.kind(m.type)
        n = self.array_len(m) if count is None else count
        if m.len and m.len[0].startswith('latexmath'):
            n = LATEX_CONSTANT_LENS.get((owner, m.name), ARRAY_LEN)
        if m.len and m.len[0] != 'null-terminated' and n == 0:
            # an empty array: present, but no element is read
            loc = self.local('a')
            if m.ptr == 2:
                t = 'const char *' if m.type == 'char' else f'const {self.ctype(m.type)} *'
            else:
                t = self.ctype(m.type)
            self.w(f'{t} {loc}[1];')
            self.w(f'memset({loc}, 0, sizeof({loc}));')
            self.w(f'{lv} = {loc};')
            return
        if pointer_array(reg, m):
            t = self.ctype(m.type)
            loc = self.filled_array(m.type, n, depth)
            ptrs = self.local('p')
            self.w(f'const {t} *{ptrs}[{n}] = {{{", ".join(f"&{loc}[{i}]" for i in range(n))}}};')
            self.w(f'{lv} = {ptrs};')
            return
        if (owner, m.name) in NESTED_LENS:
            # each inner array as long as any inner length the sample sets
            t = self.ctype(m.type)
            ptrs = self.local('p')
            inner = [self.filled_array(m.type, ARRAY_LEN, depth) for _ in range(n)]
            self.w(f'const {t} *{ptrs}[{n}] = {{{", ".join(inner)}}};')
            self.w(f'{lv} = {ptrs};')
            return
        if m.ptr == 2:
            if m.type != 'char':
                raise SystemExit(f'gen_roundtrip: {owner}.{m.name}: pointer to pointer')
            loc = self.local('a')
            strings = ', '.join(self.string_value() for _ in range(n))
            self.w(f'static const char *const {loc}[{n}] = {{{strings}}};')
            self.w(f'{lv} = {loc};')
            return
        if m.type == 'char' and m.len and m.len[0] == 'null-terminated':
            self.w(f'{lv} = {self.string_value()};')
            return
        t = self.ctype(m.type)
        if not m.len and count is None:
            loc = self.local('s')
            self.w(f'{t} {loc};')
            self.w(f'memset(&{loc}, 0, sizeof({loc}));')
            self.fill_value(loc, m.type, (), depth, overrides)
            self.w(f'{lv} = &{loc};')
            return
        if k in ('struct', 'union'):
            self.w(f'{lv} = {self.filled_array(m.type, n, depth)};')
            return
        loc = self.local('a')
        if k == 'void':
            vals = ', '.join(f'0x{self.values.next_value() & 0xff:02x}' for _ in range(n))
            self.w(f'uint8_t {loc}[{n}] = {{{vals}}};')
        elif k == 'handle':
            vals = ', '.join(self.handle_value(m.type) for _ in range(n))
            self.w(f'{t} {loc}[{n}] = {{{vals}}};')
        else:
            vals = ', '.join(self.scalar_value(m.type) for _ in range(n))
            self.w(f'{t} {loc}[{n}] = {{{vals}}};')
        self.w(f'{lv} = {loc};')

    def filled_array(self, tname, n, depth):
        """A local array of n elements of type tname, each given sample
        values; its name."""
        loc = self.local('a')
        self.w(f'{self.ctype(tname)} {loc}[{n}];')
        self.w(f'memset({loc}, 0, sizeof({loc}));')
        for i in range(n):
            self.fill_value(f'{loc}[{i}]', tname, (), depth)
        return loc

    # ---- output storage ----------------------------------------------------

    def out_struct_shape(self, lv, sname):
        """sType and one chained output struct, as an application sets them."""
        s = self.reg.structs[sname]
        if not s.stype:
            return
        self.w(f'{lv}.sType = {s.stype};')
        allowed = self.gen.chain_members(sname, True)
        if allowed:
            x = allowed[0]
            loc = self.local('c')
            self.w(f'{x} {loc};')
            self.w(f'memset(&{loc}, 0, sizeof({loc}));')
            self.w(f'{loc}.sType = {self.reg.structs[x].stype};')
            self.w(f'{lv}.pNext = &{loc};')

    # ---- the case ----------------------------------------------------------

    def emit(self):
        gen = self.gen
        reg = self.reg
        cmd = self.cmd
        name = self.name
        params = cmd_params(gen, cmd)
        byname = {p.name: p for p in params}
        sync = is_sync(gen, cmd)

        # lengths given by scalar parameters or by members of input structs
        scalar_lens = {}
        overrides = {}
        for p in params:
            m = p.m
            if not m.len or m.len[0] == 'null-terminated':
                continue
            first = m.len[0]
            n = OUTPUT_CAP if p.role != 'input' else self.array_len(m)
            if first.startswith('latexmath'):
                if (name, m.name) not in LATEX_LENS:
                    raise SystemExit(f'gen_roundtrip: {name}.{m.name}: add its length '
                                     f'formula {m.altlen!r} to LATEX_LENS')
                field, value = LATEX_LENS[(name, m.name)]
                scalar_lens[field] = value
                continue
            if '->' in first:
                base, field = first.split('->')
                overrides.setdefault(base, {})[field] = str(n)
            elif first in byname:
                q = byname[first]
                key = first if q.m.ptr == 0 else None
                if q.role == 'out_count':
                    key = first
                elif self.sparse and q.m.is_optional:
                    n = 0
                if key:
                    if scalar_lens.get(key, n) != n:
                        raise SystemExit(f'gen_roundtrip: {name}.{first}: arrays of different lengths')
                    scalar_lens[key] = n

        # a strided array's elements lie their size apart in the sample
        strides = {p.m.stride: f'sizeof({p.m.type})' for p in params if p.m.stride}
        self.w(f'rt_begin(t, "{name}", "{self.variant}");')
        self.w(f'uint32_t seed = {self.index * 1000 + (501 if self.sparse else 1)}u;')
        self.w('(void)seed;')
        self.w()
        self.w('/* the sample call */')
        args = []
        outs = []
        for p in params:
            m = p.m
            x = f'x_{p.name}'
            if p.skip:
                args.append('NULL')
                continue
            by_address = p.role in ('out_count', 'out_struct', 'out_scalar')
            args.append(f'&{x}' if by_address else x)
            if p.role == 'input':
                decl = re.sub(r'\b' + re.escape(p.name) + r'\b', x, decl_type(m))
                if m.ptr == 0 and m.dims:
                    self.w(decl.replace('const ', '') + ';')
                    self.fill_value(x, m.type, m.dims, 0)
                elif m.ptr == 0 and p.name in scalar_lens:
                    self.w(f'const {decl} = ({m.type}){scalar_lens[p.name]};')
                elif m.ptr == 0 and p.name in strides:
                    self.w(f'const {decl} = ({m.type}){strides[p.name]};')
                elif m.ptr == 0 and p.kind == 'handle' and self.absent(name, m):
                    self.w(f'const {decl} = VK_NULL_HANDLE;')
                elif m.ptr == 0 and p.kind == 'handle':
                    self.w(f'const {decl} = {self.handle_value(m.type)};')
                elif m.ptr == 0 and p.kind in ('struct', 'union'):
                    self.w(f'{decl};')
                    self.w(f'memset(&{x}, 0, sizeof({x}));')
                    self.fill_value(x, m.type, (), 0)
                elif m.ptr == 0:
                    self.w(f'const {decl} = {self.scalar_value(m.type)};')
                elif self.absent(name, m):
                    self.w(f'{decl} = NULL;')
                else:
                    self.w(f'{decl};')
                    count = scalar_lens.get(m.len[0]) if m.len else None
                    self.fill_pointer(x, m, name, 0, overrides.get(p.name), count)
                continue
            outs.append(p)
            if p.role == 'out_count':
                self.w(f'{m.type} {x} = {scalar_lens.get(p.name, OUTPUT_CAP)};')
            elif p.role == 'out_array':
                cp = count_param_of(cmd, p)
                cap = scalar_lens.get(cp.name if cp else m.len[0], OUTPUT_CAP) \
                    if m.len else OUTPUT_CAP
                if m.len and m.len[0] == 'WIRE_MAX_OPAQUE_DATA':
                    cap = MAX_OPAQUE_DATA
                t = self.ctype(m.type)
                if self.sparse and m.is_optional:
                    self.w(f'{t} *{x} = NULL; /* asks for the count only */')
                    self.null_outs.add(p.name)
                    continue
                self.w(f'{t} {x}[{cap}];')
                self.w(f'memset({x}, 0, sizeof({x}));')
                if p.kind == 'struct':
                    for i in range(cap):
                        self.out_struct_shape(f'{x}[{i}]', p.type)
            elif p.role == 'out_struct':
                self.w(f'{p.type} {x};')
                self.w(f'memset(&{x}, 0, sizeof({x}));')
                self.out_struct_shape(x, p.type)
            elif p.role == 'out_scalar':
                self.w(f'{p.type} {x} = 0;')
            elif p.role == 'out_handle':
                vals = ', '.join(self.handle_value(p.type) for _ in range(OUTPUT_CAP))
                self.w(f'{p.type} {x}[{OUTPUT_CAP}] = {{{vals}}};')
        call_args = ', '.join(args)

        self.w()
        self.w('/* request: encode, decode as the daemon, re-encode */')
        self.w(f'wire_enc_{name}(&t->a, {call_args});')
        self.w(f'struct wire_args_{name} a;')
        self.w('memset(&a, 0, sizeof(a));')
        self.w('struct wire_dec d;')
        self.w('rt_dec_init(t, &d, &t->a);')
        self.w(f'if (!rt_dec_done(t, &d, wire_decargs_{name}(&d, &a), "request"))')
        self.w('   return;')
        self.w('bool same = true;')
        for p in params:
            if p.role == 'input' and not p.skip:
                emit_eq_member(gen, self.w, '', name, cmd.params, p.m, 'x_', 'a.')
        self.w('if (!same)')
        self.w('   return;')
        for p in outs:
            if p.role == 'out_handle':
                objtype = reg.handles[p.type][1]
                self.w(f'for (uint32_t i = 0; i < a.{p.name}_count; i++)')
                self.w(f'   a.{p.name}[i] = ({p.type})(uintptr_t)rt_host(a.{p.name}_ids[i], {objtype});')
        dec_args = ', '.join('NULL' if p.skip else f'a.{p.name}' for p in params)
        self.w(f'wire_enc_{name}(&t->b, {dec_args});')
        self.w('if (!rt_same(t, &t->a, &t->b, "re-encoded request"))')
        self.w('   return;')

        self.w()
        self.w('/* malformed requests */')
        self.w(f'rt_truncations(t, decode_{name});')
        self.w(f'rt_mutations(t, decode_{name});')
        if not self.sparse:
            for offset, expect, what in self.count_offsets(params, scalar_lens):
                self.w(f'rt_corrupt_count(t, decode_{name}, {offset}, {expect}, "{what}");')

        if sync:
            self.emit_reply(params, outs, args)

    def count_offsets(self, params, scalar_lens):
        """Where the request holds the count of its first input array, and
        the scalar parameter giving it, when only fixed-size parameters
        come before: (offset, value, what)."""
        reg = self.reg
        offset = 0
        scalars = {}
        for p in params:
            m = p.m
            if p.skip:
                continue
            if p.role == 'input' and m.ptr and m.len and m.len[0] in scalars:
                first = m.len[0]
                n = scalar_lens[first]
                return [(offset + 4, n, f'{p.name} element count'),
                        (scalars[first], n, first)]
            if p.role != 'input' or m.ptr or m.dims:
                return []
            if p.kind == 'handle':
                offset += 8
                continue
            info = reg.scalar_info(m.type)
            if info is None:
                return []
            if p.name in scalar_lens:
                scalars[p.name] = offset
            offset += 8 if info[0] in ('uint64_t', 'int64_t', 'double') else 4
        return []

    def emit_reply(self, params, outs, args):
        reg = self.reg
        cmd = self.cmd
        name = self.name
        ret = cmd.ret
        self.w()
        self.w('/* reply: the daemon fills the outputs, the ICD decodes them */')
        if ret != 'void':
            if ret == 'VkResult':
                # an fd comes back with VK_SUCCESS only
                fd_out = any((name, p.name) in FD_MEMBERS for p in outs)
                ret_value = 'VK_SUCCESS' if fd_out else 'VK_INCOMPLETE'
            else:
                info = reg.scalar_info(ret)
                ret_value = f'({ret})0x123456789abcull' if info and info[1] == 8 \
                    else f'({ret})0x1234567'
            self.w(f'a.ret = {ret_value};')
        for p in outs:
            x = f'x_{p.name}'
            if p.role == 'out_count':
                self.w(f'*a.{p.name} = 1;')
            elif p.role == 'out_array':
                if p.kind == 'struct':
                    self.w(f'for (uint32_t i = 0; a.{p.name} && i < a.{p.name}_cap; i++)')
                    self.w(f'   rt_fillout_{p.type}(&a.{p.name}[i], &seed);')
                else:
                    self.w(f'if (a.{p.name})')
                    self.w(f'   rt_fill_bytes(a.{p.name}, a.{p.name}_cap * sizeof(*a.{p.name}), &seed);')
            elif p.role == 'out_struct':
                self.w(f'rt_fillout_{p.type}(a.{p.name}, &seed);')
            elif p.role == 'out_scalar':
                self.w(f'const {p.type} expect_{p.name} = {self.scalar_value(p.type)};')
                self.w(f'*a.{p.name} = expect_{p.name};')
            elif p.role == 'out_handle':
                self.w(f'if (a.{p.name}_count > 1)')
                self.w(f'   a.{p.name}[a.{p.name}_count - 1] = VK_NULL_HANDLE;')
        self.w(f'wire_encreply_{name}(&t->r, &a);')
        ret_arg = ''
        if ret != 'void':
            self.w(f'{ret} ret = ({ret})0;')
            ret_arg = '&ret, '
        self.w('rt_dec_init(t, &d, &t->r);')
        self.w(f'wire_decreply_{name}(&d, {ret_arg}{", ".join(args)});')
        self.w('if (!rt_dec_done(t, &d, true, "reply"))')
        self.w('   return;')
        if ret != 'void':
            self.w('if (ret != a.ret)')
            self.w('   rt_fail(t, "reply: wrong return value");')
        for p in outs:
            x = f'x_{p.name}'
            if p.role == 'out_count':
                self.w(f'if ({x} != 1)')
                self.w(f'   rt_fail(t, "reply: {p.name} is %llu, expected 1", (unsigned long long){x});')
            elif p.role == 'out_scalar':
                self.w(f'if ({x} != expect_{p.name})')
                self.w(f'   rt_fail(t, "reply: wrong {p.name}");')
            elif p.role == 'out_handle':
                self.w(f'for (uint32_t i = 0; i < a.{p.name}_count; i++) {{')
                self.w(f'   if (({x}[i] == VK_NULL_HANDLE) != (a.{p.name}[i] == VK_NULL_HANDLE))')
                self.w(f'      rt_fail(t, "reply: {p.name}[%u] is wrong", i);')
                self.w('}')
        for p in outs:
            x = f'x_{p.name}'
            if p.role == 'out_struct':
                self.w('if (same)')
                self.w(f'   same = rt_eq_{p.type}(t, a.{p.name}, &{x});')
            elif p.role == 'out_array' and p.name not in self.null_outs:
                cp = count_param_of(cmd, p)
                n = f'*a.{cp.name}' if cp else f'a.{p.name}_cap'
                self.w(f'if (a.{p.name}) {{')
                if p.kind == 'struct':
                    self.w(f'   for (uint32_t i = 0; same && i < (uint32_t)({n}); i++)')
                    self.w(f'      same = rt_eq_{p.type}(t, &a.{p.name}[i], &{x}[i]);')
                else:
                    self.w(f'   if (memcmp(a.{p.name}, {x}, (size_t)({n}) * sizeof(*a.{p.name})))')
                    self.w(f'      same = rt_differs(t, "{name}.{p.name}");')
                self.w('}')
        self.w(f'struct wire_args_{name} b = a;')
        for p in outs:
            x = f'x_{p.name}'
            if p.role in ('out_count', 'out_struct', 'out_scalar'):
                self.w(f'b.{p.name} = &{x};')
            else:
                self.w(f'b.{p.name} = {x};')
        if ret != 'void':
            self.w('b.ret = ret;')
        self.w(f'wire_encreply_{name}(&t->r2, &b);')
        self.w('rt_same(t, &t->r, &t->r2, "reply re-encoded from what the ICD decoded");')

    def text(self):
        out = [f'static void\n{self.variant}_{self.name}(struct rt *t)\n{{']
        out += self.lines
        out.append('}\n')
        return '\n'.join(out)


def emit_case(gen, values, index, name, w):
    """The case of one command: its full and sparse variants."""
    w(f'static bool\ndecode_{name}(struct wire_dec *d)\n{{')
    w(f'   struct wire_args_{name} a;')
    w('   memset(&a, 0, sizeof(a));')
    w(f'   return wire_decargs_{name}(d, &a);')
    w('}\n')
    variants = []
    for sparse in (False, True):
        case = Case(gen, values, index, name, sparse)
        case.emit()
        w(case.text())
        variants.append(case.variant)
    w(f'static void\ncase_{name}(struct rt *t)\n{{')
    for v in variants:
        w(f'   {v}_{name}(t);')
    w('}\n')


def handle_id(gen, tname, expr):
    """The id a handle value stands for (sample or host side alike)."""
    if gen.is_pointer_handle(tname):
        return f'wire_object_id({expr})'
    return f'(uint64_t)(uintptr_t)({expr})'


def emit_eq_member(gen, w, ind, owner, members, m, xp, yp):
    """Compares member or parameter m of x (the sample, or the daemon's
    output) and y (what the other side decoded); clears `same` and fails
    the case when they differ.  A conditional member (CONDITIONAL_MEMBERS,
    evaluated over `s`, the sample, and `e`) must be there exactly when
    its condition holds."""
    reg = gen.reg
    k = reg.kind(m.type)
    t = reg.resolve_type(m.type)
    xv, yv = xp + m.name, yp + m.name
    if (owner, m.name) in DROPPED_MEMBERS:
        w(f'{ind}if (same && {yp}{m.name} != NULL)')
        w(f'{ind}   same = rt_differs(t, "{owner}.{m.name} (travelled though dropped)");')
        return
    cond = CONDITIONAL_MEMBERS.get((owner, m.name))
    differs = f'same = rt_differs(t, "{owner}.{m.name}");'
    if cond:
        absent = f'{yv} != VK_NULL_HANDLE' if m.ptr == 0 else f'{yv} != NULL'
        w(f'{ind}if (same && !({cond})) {{')
        w(f'{ind}   if ({absent})')
        w(f'{ind}      same = rt_differs(t, "{owner}.{m.name} (sent though its condition is false)");')
        w(f'{ind}}} else {{')
        emit_eq_member_value(gen, w, ind + '   ', members, m, xp, yp, differs)
        w(f'{ind}}}')
        return
    if m.ptr == 0 and k == 'union' and m.selector and not gen.flat(m.type):
        # only the member the selector chooses travels
        u = reg.structs[t]
        w(f'{ind}switch ((int){xp}{m.selector}) {{')
        for um in u.members:
            for value in um.selection:
                w(f'{ind}case {value}:')
            w(f'{ind}   {{')
            emit_eq_member_value(gen, w, ind + '      ', u.members, um, xv + '.', yv + '.',
                                 f'same = rt_differs(t, "{owner}.{m.name}.{um.name}");')
            w(f'{ind}   }}')
            w(f'{ind}   break;')
        w(f'{ind}default:')
        w(f'{ind}   break;')
        w(f'{ind}}}')
        return
    emit_eq_member_value(gen, w, ind, members, m, xp, yp, differs)


def emit_eq_member_value(gen, w, ind, members, m, xp, yp, differs):
    reg = gen.reg
    k = reg.kind(m.type)
    t = reg.resolve_type(m.type)
    xv, yv = xp + m.name, yp + m.name
    if m.ptr == 0:
        if m.dims:
            emit_eq_elements(gen, w, ind, k, t, xv, yv, f'UTIL_ARRAY_SIZE({xv})', differs)
        elif k == 'handle':
            w(f'{ind}if (same && {handle_id(gen, t, xv)} != {handle_id(gen, t, yv)})')
            w(f'{ind}   {differs}')
        elif k == 'struct':
            w(f'{ind}if (same)')
            w(f'{ind}   same = rt_eq_{t}(t, &{xv}, &{yv});')
        elif m.bitfield:
            w(f'{ind}if (same && {xv} != {yv})')
            w(f'{ind}   {differs}')
        else:
            w(f'{ind}if (same && memcmp(&{xv}, &{yv}, sizeof({xv})))')
            w(f'{ind}   {differs}')
        return
    w(f'{ind}if (same && !{xv} != !{yv})')
    w(f'{ind}   {differs}')
    w(f'{ind}if (same && {xv}) {{')
    i2 = ind + '   '
    n = member_len(gen, members, m, xp)
    if pointer_array(reg, m):
        w(f'{i2}for (uint32_t i = 0; same && i < (uint32_t)({n}); i++)')
        w(f'{i2}   same = rt_eq_{t}(t, {xv}[i], {yv}[i]);')
    elif m.ptr == 2 and m.type != 'char':
        inner = owner_nested_len(gen, members, m, xp)
        w(f'{i2}for (uint32_t i = 0; same && i < (uint32_t)({n}); i++) {{')
        w(f'{i2}   const uint32_t inner = (uint32_t)({inner});')
        if k == 'struct':
            w(f'{i2}   for (uint32_t j = 0; same && j < inner; j++)')
            w(f'{i2}      same = rt_eq_{t}(t, &{xv}[i][j], &{yv}[i][j]);')
        else:
            w(f'{i2}   if (memcmp({xv}[i], {yv}[i], (size_t)inner * sizeof({xv}[i][0])))')
            w(f'{i2}      {differs}')
        w(f'{i2}}}')
    elif m.ptr == 2:
        w(f'{i2}for (uint32_t i = 0; same && i < (uint32_t)({n}); i++)')
        w(f'{i2}   if (strcmp({xv}[i], {yv}[i]))')
        w(f'{i2}      {differs}')
    elif m.type == 'char' and m.len and m.len[0] == 'null-terminated':
        w(f'{i2}if (strcmp({xv}, {yv}))')
        w(f'{i2}   {differs}')
    elif n is None:
        if k == 'struct':
            w(f'{i2}same = rt_eq_{t}(t, {xv}, {yv});')
        elif k == 'handle':
            w(f'{i2}if ({handle_id(gen, t, "*" + xv)} != {handle_id(gen, t, "*" + yv)})')
            w(f'{i2}   {differs}')
        else:
            w(f'{i2}if (memcmp({xv}, {yv}, sizeof(*{xv})))')
            w(f'{i2}   {differs}')
    else:
        emit_eq_elements(gen, w, i2, k, t, xv, yv, n, differs)
    w(f'{ind}}}')


def emit_eq_elements(gen, w, ind, k, t, xv, yv, n, differs):
    """Compares the first n elements (a C expression) of arrays xv and yv
    of type t (of kind k)."""
    if k == 'struct':
        w(f'{ind}for (uint32_t i = 0; same && i < (uint32_t)({n}); i++)')
        w(f'{ind}   same = rt_eq_{t}(t, &{xv}[i], &{yv}[i]);')
    elif k == 'handle':
        w(f'{ind}for (uint32_t i = 0; same && i < (uint32_t)({n}); i++)')
        w(f'{ind}   if ({handle_id(gen, t, xv + "[i]")} != {handle_id(gen, t, yv + "[i]")})')
        w(f'{ind}      {differs}')
    else:
        size = f'(size_t)({n})' if k == 'void' else f'(size_t)({n}) * sizeof(*{xv})'
        w(f'{ind}if (same && memcmp({xv}, {yv}, {size}))')
        w(f'{ind}   {differs}')


def owner_nested_len(gen, members, m, prefix):
    """NESTED_LENS' inner length of parameter m (members: its command's
    parameters)."""
    for (cmd, name) in NESTED_LENS:
        if name == m.name and cmd in gen.reg.commands and gen.reg.commands[cmd].params is members:
            return nested_len((cmd, name), prefix)
    raise SystemExit(f'gen_roundtrip: {m.name}: a pointer to pointers NESTED_LENS does not list')


def emit_eq(gen, w):
    """rt_eq_<struct>(t, x, y): whether y holds what x does, member by
    member and through pointers and pNext chains (ids for handles)."""
    reg = gen.reg
    structs = gen.structs_all
    for sname in structs:
        w(f'static bool rt_eq_{sname}(struct rt *t, const {sname} *x, const {sname} *y) '
          '__attribute__((unused));')
        if reg.structs[sname].stype:
            w(f'static bool rt_eq_body_{sname}(struct rt *t, const {sname} *x, const {sname} *y);')
    w()
    w('/* The encoder state the CONDITIONAL_MEMBERS conditions read and set. */')
    w('static struct wire_enc cond_enc;')
    w()
    w('static bool\nrt_eq_chain(struct rt *t, const void *xn, const void *yn)\n{')
    w('   const VkBaseInStructure *x = xn, *y = yn;')
    w('   for (; x && y; x = x->pNext, y = y->pNext) {')
    w('      if (x->sType != y->sType)')
    w('         return rt_differs(t, "pNext chain");')
    w('      switch ((int)x->sType) {')
    seen = set()
    for sname in structs:
        stype = reg.structs[sname].stype
        if not stype or stype in seen:
            continue
        seen.add(stype)
        w(f'      case {stype}:')
        w(f'         if (!rt_eq_body_{sname}(t, (const {sname} *)x, (const {sname} *)y))')
        w('            return false;')
        w('         break;')
    w('      default:')
    w('         return rt_differs(t, "pNext chain (unexpected sType)");')
    w('      }')
    w('   }')
    w('   if (x || y)')
    w('      return rt_differs(t, "pNext chain length");')
    w('   return true;')
    w('}\n')
    for sname in structs:
        s = reg.structs[sname]
        body = 'body_' if s.stype else ''
        w(f'static bool\nrt_eq_{body}{sname}(struct rt *t, const {sname} *x, const {sname} *y)\n{{')
        if s.union:
            w(f'   return !memcmp(x, y, sizeof(*x)) || rt_differs(t, "{sname}");')
            w('}\n')
            continue
        w('   bool same = true;')
        w('   (void)t;')
        w('   (void)x;')
        w('   (void)y;')
        if any((sname, m.name) in CONDITIONAL_MEMBERS for m in s.members):
            w(f'   const {sname} *s = x; /* what the conditions read */')
            w('   struct wire_enc *e = &cond_enc;')
            w('   (void)s;')
            w('   (void)e;')
        for m in s.members:
            if m.name in ('sType', 'pNext'):
                continue
            emit_eq_member(gen, w, '   ', sname, s.members, m, 'x->', 'y->')
        w('   return same;')
        w('}\n')
        if s.stype:
            w(f'static bool\nrt_eq_{sname}(struct rt *t, const {sname} *x, const {sname} *y)\n{{')
            w(f'   if (x->sType != y->sType)')
            w(f'      return rt_differs(t, "{sname}.sType");')
            w(f'   return rt_eq_body_{sname}(t, x, y) && rt_eq_chain(t, x->pNext, y->pNext);')
            w('}\n')


def emit_fillout(gen, w):
    """Daemon-side output fillers: rt_fillout_<struct>(s, seed) gives every
    member of an output struct and of its chain a distinct value."""
    reg = gen.reg
    structs = sorted(gen.structs_out)
    chained = [s for s in structs if reg.structs[s].stype]
    for sname in structs:
        w(f'static void rt_fillout_{sname}({sname} *s, uint32_t *seed) __attribute__((unused));')
        if reg.structs[sname].stype:
            w(f'static void rt_fillout_body_{sname}({sname} *s, uint32_t *seed);')
    w()
    w('static void\nrt_fillout_chain(void *next, uint32_t *seed)\n{')
    w('   for (VkBaseOutStructure *c = next; c; c = c->pNext) {')
    w('      switch ((int)c->sType) {')
    seen = set()
    for sname in chained:
        stype = reg.structs[sname].stype
        if stype in seen:
            continue
        seen.add(stype)
        w(f'      case {stype}:')
        w(f'         rt_fillout_body_{sname}(({sname} *)c, seed);')
        w('         break;')
    w('      default:')
    w('         break;')
    w('      }')
    w('   }')
    w('}\n')
    for sname in structs:
        s = reg.structs[sname]
        if s.union:
            w(f'static void\nrt_fillout_{sname}({sname} *s, uint32_t *seed)\n{{')
            w('   rt_fill_bytes(s, sizeof(*s), seed);')
            w('}\n')
            continue
        body = 'body_' if s.stype else ''
        w(f'static void\nrt_fillout_{body}{sname}({sname} *s, uint32_t *seed)\n{{')
        w('   (void)s;')
        w('   (void)seed;')
        for m in s.members:
            if m.name in ('sType', 'pNext'):
                continue
            k = reg.kind(m.type)
            lv = f's->{m.name}'
            if m.ptr or k == 'handle' or m.bitfield:
                w(f'   /* {m.name}: not an output value */')
                continue
            if k in ('struct', 'union'):
                t = reg.resolve_type(m.type)
                if m.dims:
                    w(f'   for (size_t i = 0; i < UTIL_ARRAY_SIZE({lv}); i++)')
                    w(f'      rt_fillout_{t}(&{lv}[i], seed);')
                else:
                    w(f'   rt_fillout_{t}(&{lv}, seed);')
                continue
            wt = reg.scalar_info(m.type)[0]
            fn = {'float': 'rt_float', 'double': 'rt_double', 'uint64_t': 'rt_u64',
                  'int64_t': 'rt_u64'}.get(wt, 'rt_u32')
            if len(m.dims) > 1:
                w(f'   rt_fill_bytes({lv}, sizeof({lv}), seed);')
            elif m.dims:
                w(f'   for (size_t i = 0; i < UTIL_ARRAY_SIZE({lv}); i++)')
                w(f'      {lv}[i] = ({m.type}){fn}(seed);')
            else:
                w(f'   {lv} = ({m.type}){fn}(seed);')
        w('}\n')
        if s.stype:
            w(f'static void\nrt_fillout_{sname}({sname} *s, uint32_t *seed)\n{{')
            w(f'   rt_fillout_body_{sname}(s, seed);')
            w('   rt_fillout_chain((void *)s->pNext, seed);')
            w('}\n')


def emit_decoders(gen, w):
    """The daemon's decoder of each command's arguments, by op, alone (the
    decoder fuzzer, tests/fuzz/fuzz_decode.c)."""
    w('#include "fuzz_decode.h"')
    w()
    w('#include <string.h>')
    w()
    for name in gen.wire_commands:
        w(f'static bool\ndecode_{name}(struct wire_dec *d)\n{{')
        w(f'   struct wire_args_{name} a;')
        w('   memset(&a, 0, sizeof(a));')
        w(f'   return wire_decargs_{name}(d, &a);')
        w('}\n')
    w('const fuzz_decoder_fn fuzz_decoders[WIRE_OP_COUNT] = {')
    for name in gen.wire_commands:
        w(f'   [WIRE_OP_{name}] = decode_{name},')
    w('};')


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--xml', required=True)
    ap.add_argument('--out', required=True)
    ap.add_argument('--decoders', action='store_true',
                    help="only the daemon's decoders by op, for the fuzzer")
    args = ap.parse_args()
    reg = vkxml.Registry(args.xml)
    gen = Gen(reg)

    w = Writer()
    if args.decoders:
        w(f'/* Generated by gen_roundtrip.py from vk.xml {reg.header_version}; do not edit. */')
        emit_decoders(gen, w)
        write_if_changed(args.out, w.text())
        return 0
    w(f'/* Generated by gen_roundtrip.py from vk.xml {reg.header_version}; do not edit. */')
    w('#include "test_wire_roundtrip.h"')
    w()
    w('#include <string.h>')
    w()
    w('bool\nrt_is_pointer_type(VkObjectType type)\n{')
    w('   switch (type) {')
    for t in sorted(ICD_POINTER_HANDLES):
        w(f'   case {reg.handles[t][1]}:')
    w('      return true;')
    w('   default:')
    w('      return false;')
    w('   }')
    w('}\n')
    emit_fillout(gen, w)
    emit_eq(gen, w)
    values = Values()
    for i, name in enumerate(gen.wire_commands):
        emit_case(gen, values, i, name, w)
    w('const struct rt_case rt_cases[] = {')
    for name in gen.wire_commands:
        w(f'   {{"{name}", case_{name}}},')
    w('};\n')
    w(f'const unsigned rt_case_count = {len(gen.wire_commands)};')

    write_if_changed(args.out, w.text())
    return 0


if __name__ == '__main__':
    sys.exit(main())
