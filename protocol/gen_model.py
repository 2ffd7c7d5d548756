# SPDX-License-Identifier: MIT
"""The generator's model of the registry: the commands, structures and
extensions gpud carries (vk.xml as vkxml.py reads it, the tables of
gen_tables.py applied)."""

import sys
import vkxml
import xml.etree.ElementTree as ET

import gen_tables
from gen_tables import (
    ADDRESS_UNIONS, ADDRESS_UNION_QUERIES, CACHED, CLIENT_ONLY, CORE_VERSIONS, DENIED_EXTENSIONS,
    DENIED_STRUCTS, DROPPED_MEMBERS, ICD_POINTER_HANDLES, NESTED_LENS, OPAQUE_OUTPUTS,
    PRIVATE_COMMANDS_XML, SHADER_CODE_STRUCTS, SPIRV_CHAIN_COMMANDS, SPIRV_COMMANDS, TEXT_LENS,
    UNCACHED, VIDEO_LENS, VIDEO_SUBLAYER_ARRAYS, WSI_EXTENSIONS)


def resolve_command(reg, name):
    """The command an alias names (itself when it is none)."""
    while name not in reg.commands and name in reg.command_alias:
        name = reg.command_alias[name]
    return name


def canonical_tables(reg):
    """The tables name commands and structures as the registry that
    introduced them did; a later one may have promoted them
    (vkCmdPushDescriptorSetKHR is vkCmdPushDescriptorSet in 1.4): each
    table is rewritten to the names this registry gives."""
    def canon(name):
        if isinstance(name, tuple):
            return (canon(name[0]),) + name[1:]
        if name.startswith('vk'):
            return resolve_command(reg, name)
        return reg.resolve_type(name) if name.startswith('Vk') else name
    for table in ('OPAQUE_OUTPUTS', 'CLIENT_ONLY', 'HOST_OPTIONAL', 'CACHED', 'UNCACHED', 'SPIRV_COMMANDS',
                  'SPIRV_CHAIN_COMMANDS', 'FORCE_SYNC', 'SHIPS_RECORDING', 'NOT_RECORDED',
                  'FORCE_ASYNC', 'ASYNC_CREATES', 'REPLAY_CONCURRENT', 'REPLAY_NOT_CONCURRENT',
                  'OWN_COPIES_UNAFFECTED',
                  'FLUSH_AFTER', 'CONDITIONAL_MEMBERS', 'FD_MEMBERS', 'WRITEBACK_MEMBERS',
                  'DENIED_STRUCTS', 'LOST_SUCCEEDS', 'ICD_POINTER_HANDLES', 'ADDRESS_UNIONS',
                  'DROPPED_MEMBERS', 'NESTED_LENS', 'STRUCT_CHECKS', 'ADDRESS_UNION_QUERIES'):
        t = getattr(gen_tables, table)  # rewritten in place: every importer sees it
        if isinstance(t, dict):
            canonical = {}
            for k, v in t.items():
                canonical.setdefault(canon(k), v)
        else:
            canonical = {canon(k) for k in t}
        t.clear()
        t.update(canonical)


def apply_member_lens(reg):
    """The lengths the registry leaves out given to the members that need
    them (VIDEO_LENS, TEXT_LENS), and the video sub-layer arrays' taken
    away (later registries name them "*_max_sub_layers_minus1 + 1"; their
    length is the parameter set's count of sub-layers)."""
    for (sname, mname), length in (VIDEO_LENS | TEXT_LENS).items():
        for m in reg.structs[sname].members if sname in reg.structs else ():
            if m.name == mname and not m.len:
                m.len = [length]
    for sname, mname in VIDEO_SUBLAYER_ARRAYS:
        for m in reg.structs[sname].members if sname in reg.structs else ():
            if m.name == mname:
                m.len = []


class Gen:
    def __init__(self, reg):
        self.reg = reg
        if not CORE_VERSIONS:
            CORE_VERSIONS.extend(name for name, number, cmds, types in reg.features)
        canonical_tables(reg)
        for (c, param) in OPAQUE_OUTPUTS:
            for p in reg.commands[c].params if c in reg.commands else ():
                if p.name == param and not p.len:
                    p.len = ['WIRE_MAX_OPAQUE_DATA']
        apply_member_lens(reg)
        self.walked = False
        self.types = set()
        self.commands = []
        for name, number, cmds, types in reg.features:
            if name in CORE_VERSIONS:
                self.types.update(types)
                self.commands += [c for c in cmds if c not in self.commands]
        core_cmds = set(self.commands)
        core_types = {reg.resolve_type(t) for t in self.types}
        self.denied = {}
        candidates = []
        for name, (e, cmds, types) in sorted(reg.extensions.items()):
            if name in WSI_EXTENSIONS:
                continue  # the ICD's (below)
            if e.get('platform'):
                self.denied[name] = 'for the ' + e.get('platform') + ' platform'
            elif e.get('provisional') == 'true':
                self.denied[name] = 'provisional'
            elif name in DENIED_EXTENSIONS:
                self.denied[name] = DENIED_EXTENSIONS[name]
            else:
                candidates.append(name)
        # What cannot go on the wire takes its extension out, and with it the
        # extensions that require it: repeat until nothing changes.
        while True:
            self.analyze(core_cmds, core_types, candidates)
            dropped = False
            for name in list(candidates):
                e = reg.extensions[name][0]
                why = None
                for c in map(self.resolve_command, self.own_commands(e)):
                    if c in self.bad_commands:
                        why = f'{c}: {self.bad_commands[c]}'
                        break
                for t in self.own_items(e, 'type'):
                    if reg.resolve_type(t) in self.unsupported and not why:
                        why = f'{t}: {self.unsupported[reg.resolve_type(t)]}'
                # what it needs (`depends=`, or `requires=` before 1.3.241)
                dep = vkxml.extension_depends(e)
                if not why and not vkxml.depends_holds(dep, lambda n: self.present(n, candidates)):
                    # (an expression that fails names something missing)
                    why = 'requires ' + next(n for n in vkxml.depends_order(dep)
                                             if not self.present(n, candidates))
                if why:
                    self.denied[name] = why
                    candidates.remove(name)
                    dropped = True
            if not dropped:
                break
        self.extensions = [(n, reg.extensions[n][0].get('type')) for n in candidates]
        # Window-system extensions are the ICD's: their commands (and those
        # of their interplay with what is carried) are answered there.
        self.wsi_commands = []
        with_wsi = set(candidates) | set(WSI_EXTENSIONS)
        for n in sorted(WSI_EXTENSIONS):
            e = reg.extensions[n][0]
            self.extensions.append((n, e.get('type')))
            cmds = self.own_commands(e)
            for req in e.findall('require'):
                if self.interplay(req, with_wsi):
                    cmds += [c.get('name') for c in req.findall('command')]
            for c in map(self.resolve_command, cmds):
                if c not in self.commands and c not in self.wsi_commands:
                    self.wsi_commands.append(c)
        # ... and the interplay of carried extensions with them
        for n in candidates:
            for req in reg.extensions[n][0].findall('require'):
                if self.interplay(req, with_wsi) and \
                        vkxml.depends_names(vkxml.require_depends(req)) & set(WSI_EXTENSIONS):
                    for c in map(self.resolve_command, (c.get('name') for c in req.findall('command'))):
                        if c not in self.commands and c not in self.wsi_commands:
                            self.wsi_commands.append(c)
        self.commands += self.wsi_commands
        self.client_only = set(CLIENT_ONLY) | set(self.wsi_commands)
        # the device extensions that bring each command that is not core: a
        # device must have one of them enabled for the daemon to run it
        self.command_extensions = {}
        for index, (n, typ) in enumerate(self.extensions):
            if typ != 'device':
                continue
            e = reg.extensions[n][0]
            cmds = self.own_commands(e)
            for req in e.findall('require'):
                if self.interplay(req, candidates):
                    cmds += [c.get('name') for c in req.findall('command')]
            for c in map(self.resolve_command, cmds):
                if c not in core_cmds and c in self.wire_commands:
                    self.command_extensions.setdefault(c, []).append(index)
        # gpud's own commands
        self.private = []
        for elem in ET.parse(PRIVATE_COMMANDS_XML).getroot().findall('command'):
            cmd = vkxml.Command(elem)
            if any(p.type.startswith('Vk') and reg.kind(p.type) == 'other' for p in cmd.params):
                continue
            reg.commands[cmd.name] = cmd
            why = self.walk_command(cmd)
            if why:
                raise SystemExit(f'gen_wire: {cmd.name}: {why}')
            self.private.append(cmd.name)
            self.commands.append(cmd.name)
            self.wire_commands.append(cmd.name)
        # a query of a later registry than this generator knows is asked
        # each time (right, if slower): listing it in CACHED makes it once
        for c in self.wire_commands:
            if reg.resolve_type(reg.commands[c].params[0].type) == 'VkPhysicalDevice' and \
                    c not in CACHED and c not in UNCACHED:
                UNCACHED[c] = 'not known to the generator: asked each time'
                print(f'gen_wire: note: {c} is asked of the daemon each time (not in CACHED)',
                      file=sys.stderr)
            # shader code a command takes, or may find chained in its inputs
            if c not in SPIRV_COMMANDS | SPIRV_CHAIN_COMMANDS and any(
                    self.reaches(p.type, code, set())
                    for p in reg.commands[c].params for code in SHADER_CODE_STRUCTS
                    if self.param_role(reg.commands[c], p) == 'input'):
                raise SystemExit(f'gen_wire: {c} hands shader code to the host: validate it in '
                                 'its executor and list it in SPIRV_COMMANDS or '
                                 'SPIRV_CHAIN_COMMANDS')
        # stable order
        self.structs_all = sorted(self.structs_in | self.structs_out)
        self.walked = True

    def resolve_command(self, name):
        """The command an alias names (itself when it is none)."""
        return resolve_command(self.reg, name)

    def command_aliases(self, name):
        """The names earlier registries gave command name, sorted."""
        if not hasattr(self, '_command_aliases'):
            self._command_aliases = {}
            for alias in sorted(self.reg.command_alias):
                target = self.resolve_command(alias)
                if target != alias:
                    self._command_aliases.setdefault(target, []).append(alias)
        return self._command_aliases.get(name, [])

    @staticmethod
    def present(name, extensions):
        """Whether a dependency is met: a core version generated, or one of
        the extensions."""
        return name in CORE_VERSIONS or name in extensions

    @staticmethod
    def interplay(req, extensions):
        """Whether a <require> block is an extension's interplay with another
        extension (it names one) that applies with these extensions."""
        dep = vkxml.require_depends(req)
        return any(not n.startswith('VK_VERSION_') for n in vkxml.depends_names(dep)) and \
            vkxml.depends_holds(dep, lambda n: Gen.present(n, extensions))

    @staticmethod
    def own_items(e, tag):
        """An extension's commands or types, without those of its interplay
        with another extension (blocks that name core versions only are its
        own, where those versions are generated)."""
        items = []
        for req in e.findall('require'):
            if 'vulkan' not in (req.get('api') or 'vulkan').split(','):
                continue
            dep = vkxml.require_depends(req)
            if all(n.startswith('VK_VERSION_') for n in vkxml.depends_names(dep)) and \
                    vkxml.depends_holds(dep, lambda n: n in CORE_VERSIONS):
                items += [c.get('name') for c in req.findall(tag)]
        return items

    @staticmethod
    def own_commands(e):
        return Gen.own_items(e, 'command')

    def analyze(self, core_cmds, core_types, carried):
        """Commands, types and structs of core plus the carried extensions;
        bad_commands: the commands that cannot go on the wire, and why."""
        reg = self.reg
        commands = list(core_cmds)
        types = set(core_types)
        for name in carried:
            e, cmds, ts = reg.extensions[name]
            types.update(reg.resolve_type(t) for t in ts)
            cmds = self.own_commands(e)
            # commands of its interplay with another extension, where that one
            # is carried too
            for req in e.findall('require'):
                if self.interplay(req, carried):
                    cmds += [c.get('name') for c in req.findall('command')]
            # an alias is carried as the command it names
            cmds = [self.resolve_command(c) for c in cmds]
            commands += [c for c in cmds if c in reg.commands and c not in commands]
        # vk.xml's order: core first, then extensions in name order
        order = {c: i for i, c in enumerate(reg.commands)}
        self.commands = sorted(set(commands), key=lambda c: order[c])
        self.types = types
        self.wire_commands = [c for c in self.commands if c not in CLIENT_ONLY]
        self.unsupported = {}
        self.structs_in = set()
        self.structs_out = set()
        self.bad_commands = {}
        for name in self.wire_commands:
            why = self.walk_command(reg.commands[name])
            if why:
                self.bad_commands[name] = why
        self.wire_commands = [c for c in self.wire_commands if c not in self.bad_commands]
        self.commands = [c for c in self.commands if c not in self.bad_commands]

    # ---- classification -------------------------------------------------

    def is_pointer_handle(self, t):
        return self.reg.resolve_type(t) in ICD_POINTER_HANDLES

    def chain_members(self, sname, output):
        """Structs allowed in the pNext chain of sname (those that cannot go
        on the wire are skipped by the encoder, refused by the decoder);
        kept once the walk is done, when they no longer change."""
        if self.walked:
            cache = self.__dict__.setdefault('_chain_cache', {})
            if (sname, output) not in cache:
                cache[(sname, output)] = self._chain_members(sname, output)
            return list(cache[(sname, output)])
        return self._chain_members(sname, output)

    def extenders(self, name):
        """The structs with an sType that name structextends."""
        index = self.__dict__.get('_extenders')
        if index is None:
            index = self._extenders = {}
            for x, xs in self.reg.structs.items():
                if xs.stype:
                    for e in xs.structextends:
                        index.setdefault(e, set()).add(x)
        return index.get(name, set())

    def _chain_members(self, sname, output):
        s = self.reg.structs[sname]
        found = set()
        for n in [sname] + list(s.aliases):
            found |= self.extenders(n)
        out = []
        for x in sorted(found & self.types):
            xs = self.reg.structs[x]
            if x in DENIED_STRUCTS or x in self.unsupported:
                continue
            if self.walked and x not in (self.structs_out if output else self.structs_in):
                continue
            if output and not self.output_ok(x):
                # its extension is not carried half done (own-types rule)
                self.unsupported.setdefault(x, 'an output holding pointers')
                continue
            if not output and xs.returnedonly:
                continue
            out.append(x)
        return out

    def sized_outputs(self, sname):
        """The arrays an output struct points at that the application sizes
        (VkPhysicalDeviceVulkan14Properties.pCopySrcLayouts): {array member:
        count member}, the count a member of the same struct, the elements
        values (scalars, enums, flat structs without sType).  The request
        carries each array's capacity (encshape), the daemon gives the host
        that much, the reply the count and the elements."""
        s = self.reg.structs[self.reg.resolve_type(sname)]
        counts = {m.name: m for m in s.members if m.ptr == 0 and self.reg.kind(m.type) == 'scalar'}
        found = {}
        for m in s.members:
            if m.ptr != 1 or m.const or len(m.len) != 1 or m.len[0] not in counts or m.dims:
                continue
            k = self.reg.kind(m.type)
            es = self.reg.structs.get(self.reg.resolve_type(m.type))
            if k in ('scalar', 'enum', 'bitmask', 'void') or (
                    k == 'struct' and not es.stype and self.flat(m.type)) or (
                    # elements with a chain of their own: their bodies
                    # (the chains stay as the application made them)
                    k == 'struct' and es.stype and es.name != s.name and
                    self.output_ok(es.name)):
                found[m.name] = m.len[0]
        return found

    def output_ok(self, sname, seen=None):
        s = self.reg.structs[sname]
        sized = self.sized_outputs(sname) if s.stype else {}
        for m in s.members:
            if m.name in ('sType', 'pNext') or m.name in sized:
                continue
            k = self.reg.kind(m.type)
            if m.ptr or k in ('handle', 'funcpointer', 'other', 'void'):
                return False
            if k == 'union' and not self.flat(m.type):
                return False
            if k == 'struct':
                ms = self.reg.structs[self.reg.resolve_type(m.type)]
                if ms.stype or not self.output_ok(ms.name):
                    return False
        return True

    def flat(self, tname):
        """A struct or union of scalars only (no pointers or handles)."""
        s = self.reg.structs[self.reg.resolve_type(tname)]
        for m in s.members:
            k = self.reg.kind(m.type)
            if m.ptr or m.name == 'pNext':
                return False
            if k in ('struct', 'union'):
                if not self.flat(m.type):
                    return False
            elif self.reg.scalar_info(m.type) is None:
                return False
        return True

    def reaches(self, tname, target, seen):
        """Whether an input of type tname can hold a target (as a member or
        in a pNext chain, at any depth)."""
        tname = self.reg.resolve_type(tname)
        if tname == target:
            return True
        if tname in seen or tname not in self.reg.structs:
            return False
        seen.add(tname)
        s = self.reg.structs[tname]
        for m in s.members:
            if m.name == 'pNext':
                if any(self.reaches(x, target, seen) for x in self.chain_members(tname, False)):
                    return True
            elif self.reg.kind(m.type) in ('struct', 'union') and \
                    self.reaches(m.type, target, seen):
                return True
        return False

    def walk_struct(self, sname, output, stack=()):
        sname = self.reg.resolve_type(sname)
        target = self.structs_out if output else self.structs_in
        if sname in target:
            return True
        if sname in ADDRESS_UNIONS:
            return not output  # a number, as an input
        s = self.reg.structs[sname]
        if s.union and not self.flat(sname):
            self.unsupported[sname] = 'union with pointers'
            return False
        target.add(sname)
        sized = self.sized_outputs(sname) if output and s.stype else {}
        for m in s.members:
            if m.name in ('sType',) or (sname, m.name) in DROPPED_MEMBERS:
                continue
            if not output and pointer_array(self.reg, m):
                if not self.walk_struct(m.type, output):
                    target.discard(sname)
                    self.unsupported[sname] = f'member {m.name}'
                    return False
                continue
            if m.name in sized:
                if self.reg.kind(m.type) == 'struct':
                    self.walk_struct(m.type, output)
                continue
            if m.name == 'pNext':
                for x in self.chain_members(sname, output):
                    self.walk_struct(x, output)
                continue
            k = self.reg.kind(m.type)
            if sname in self.reg.video_types and m.ptr and not m.len and k != 'struct':
                target.discard(sname)
                self.unsupported[sname] = f'member {m.name}: a pointer whose length video.xml ' \
                    'does not give'
                return False
            if k == 'union' and m.selector and not m.ptr and not self.flat(m.type):
                why = None if not output else 'an output union of pointers'
                for um in self.reg.structs[self.reg.resolve_type(m.type)].members:
                    uk = self.reg.kind(um.type)
                    if why or not um.selection:
                        why = why or f'union member {um.name} has no selection'
                    elif uk in ('struct', 'union') and um.ptr <= 1 and not um.len:
                        if not self.walk_struct(um.type, output):
                            why = f'union member {um.name}'
                    elif not ((uk == 'handle' or self.reg.scalar_info(um.type) is not None) and
                              um.ptr <= 1 and not um.len):
                        why = f'union member {um.name} ({um.text})'
                if why:
                    target.discard(sname)
                    self.unsupported[sname] = f'member {m.name}: {why}'
                    return False
                continue
            if k in ('struct', 'union') and not (output and m.ptr):
                if not self.walk_struct(m.type, output):
                    target.discard(sname)
                    self.unsupported[sname] = f'member {m.name}'
                    return False
            elif (k in ('funcpointer', 'other') or (k == 'void' and not m.len) or
                  (m.ptr > 1 and m.type != 'char') or
                  (output and (m.ptr or k == 'handle'))):
                target.discard(sname)
                self.unsupported[sname] = f'member {m.name} ({m.text})'
                return False
        return True

    def param_role(self, cmd, p):
        """input, out_count, out_array, out_struct, out_scalar, out_handle."""
        if p.ptr == 0 or p.const:
            return 'input'
        k = self.reg.kind(p.type)
        lens = {q.len[0] for q in cmd.params if q.len}
        if p.name in lens and k == 'scalar':
            return 'out_count'
        if k == 'handle':
            return 'out_handle'
        if p.len or k == 'void':
            return 'out_array'
        if k == 'struct':
            return 'out_struct'
        return 'out_scalar'

    def walk_command(self, cmd):
        """Walks what the command puts on the wire; returns why it cannot be
        carried, or None."""
        for p in cmd.params:
            k = self.reg.kind(p.type)
            if p.type == 'VkAllocationCallbacks':
                continue
            role = self.param_role(cmd, p)
            if not cmd.name.startswith('vkCmd') and cmd.name not in ADDRESS_UNION_QUERIES and \
                    k in ('struct', 'union') and \
                    any(self.reaches(p.type, u, set()) for u in ADDRESS_UNIONS):
                return f'{p.name}: may hold host addresses (a host command)'
            if p.type in ('VkBaseOutStructure', 'VkBaseInStructure'):
                return f'{p.name}: a struct of a type the application chooses'
            if (cmd.name, p.name) in NESTED_LENS and role == 'input' and p.ptr == 2 and \
                    (k == 'struct' or self.reg.scalar_info(p.type) is not None):
                if k == 'struct' and not self.walk_struct(p.type, False):
                    return f'{p.name}: {self.unsupported.get(self.reg.resolve_type(p.type), "?")}'
                continue
            if k in ('struct', 'union'):
                if not self.walk_struct(p.type, role != 'input'):
                    return f'{p.name}: {self.unsupported.get(self.reg.resolve_type(p.type), "?")}'
            elif k in ('funcpointer', 'other'):
                return f'{p.name} ({p.text})'
            elif k == 'void' and not p.len:
                return f'{p.name} is memory without a size'
            elif p.ptr > 1 and not (k == 'scalar' and p.type == 'char'):
                return f'{p.name} ({p.text})'
            elif k not in ('handle', 'void') and p.type != 'char' and \
                    self.reg.scalar_info(p.type) is None:
                return f'{p.name} ({p.text}) is no value the wire knows'
        return None

    # ---- naming ---------------------------------------------------------

    def wire_scalar(self, tname):
        info = self.reg.scalar_info(tname)
        if info is None:
            raise Exception(f'not a scalar: {tname}')
        return info[0]

    def min_wire_size(self, m):
        """Smallest encoding of one element of member m's array."""
        k = self.reg.kind(m.type)
        if k == 'void' or m.type in ('char', 'uint8_t', 'int8_t') and m.ptr == 1 and not m.dims:
            return 1
        if k == 'handle':
            return 8
        if k in ('struct', 'union'):
            return 4  # every member, and every union, takes 4 bytes or more
        if m.ptr == 2:
            return 4
        info = self.reg.scalar_info(m.type)
        return 4 if info[1] <= 4 else 8


def pointer_array(reg, m):
    """An array of pointers to single structures (ppGeometries: len
    "geometryCount,1"): it travels as the array of the structures."""
    return m.ptr == 2 and len(m.len) == 2 and m.len[1] == '1' and reg.kind(m.type) == 'struct'
