# SPDX-License-Identifier: MIT
"""Reads vk.xml into the small model the wire generator needs.

Only what the protocol needs is modelled: handles, scalar types, structs and
unions with their members, commands with their parameters, and which
commands and types each core version and extension requires."""

import os
import re
import xml.etree.ElementTree as ET

# Wire sizes of the C scalar types vk.xml uses.  Everything travels in
# 4-byte units; 64-bit values take 8 bytes.  size_t travels as 64 bits.
C_SCALARS = {
    'uint8_t': ('uint32_t', 1), 'int8_t': ('int32_t', 1),
    'uint16_t': ('uint32_t', 2), 'int16_t': ('int32_t', 2),
    'uint32_t': ('uint32_t', 4), 'int32_t': ('int32_t', 4), 'int': ('int32_t', 4),
    'float': ('float', 4),
    'uint64_t': ('uint64_t', 8), 'int64_t': ('int64_t', 8), 'double': ('double', 8),
    'size_t': ('uint64_t', 8),
    'char': ('uint32_t', 1),
}


def parse_depends(text):
    """A dependency expression of vk.xml (`depends=`): names of extensions
    and core versions joined by `+` (all of) and `,` (any of), `+` binding
    tighter, with parentheses.  Returns a tree: ('name', n), ('all', [...])
    or ('any', [...])."""
    tokens = re.findall(r'[A-Za-z0-9_:]+|[+,()]', text)
    pos = 0

    def peek():
        return tokens[pos] if pos < len(tokens) else None

    def take():
        nonlocal pos
        pos += 1
        return tokens[pos - 1]

    def primary():
        t = take() if peek() is not None else None
        if t == '(':
            node = any_of()
            if take() != ')':
                raise ValueError(f'unbalanced parentheses in {text!r}')
            return node
        if t is None or t in '+,)':
            raise ValueError(f'a name expected in {text!r}')
        return ('name', t)

    def all_of():
        items = [primary()]
        while peek() == '+':
            take()
            items.append(primary())
        return items[0] if len(items) == 1 else ('all', items)

    def any_of():
        items = [all_of()]
        while peek() == ',':
            take()
            items.append(all_of())
        return items[0] if len(items) == 1 else ('any', items)

    node = any_of()
    if pos != len(tokens):
        raise ValueError(f'trailing {tokens[pos]!r} in {text!r}')
    return node


def depends_holds(node, have):
    """Whether a dependency tree holds where have(name) says what is there."""
    if node is None:
        return True
    kind, value = node
    if kind == 'name':
        return have(value)
    if kind == 'all':
        return all(depends_holds(x, have) for x in value)
    return any(depends_holds(x, have) for x in value)


def depends_order(node):
    """The names a dependency tree mentions, in the expression's order."""
    if node is None:
        return []
    kind, value = node
    if kind == 'name':
        return [value]
    return [n for x in value for n in depends_order(x)]


def depends_names(node):
    """Every name a dependency tree mentions."""
    return set(depends_order(node))


def extension_depends(e):
    """What an extension needs: its `depends=` expression, or (registries
    before 1.3.241) all of its comma-separated `requires=`; None: nothing."""
    if e.get('depends'):
        return parse_depends(e.get('depends'))
    names = [r for r in (e.get('requires') or '').split(',') if r]
    if not names:
        return None
    return ('all', [('name', r) for r in names]) if len(names) > 1 else ('name', names[0])


def require_depends(req):
    """When a <require> block applies: its `depends=` expression, or
    (older registries) its `extension=` or `feature=`; None: always."""
    if req.get('depends'):
        return parse_depends(req.get('depends'))
    if req.get('extension'):
        return ('name', req.get('extension'))
    if req.get('feature'):
        return ('name', req.get('feature'))
    return None


class Member:
    """A struct member or a command parameter."""

    def __init__(self, elem):
        self.name = elem.findtext('name')
        self.type = elem.findtext('type')
        text = elem.text or ''
        for child in elem:
            if child.tag == 'comment':
                text += child.tail or ''
                continue
            text += (child.text or '') + (child.tail or '')
        self.text = text.strip()
        # (the name as a word: VkMicromapCreateInfoEXT holds "pCreateInfo")
        before_name, after_name = re.split(r'\b' + re.escape(self.name) + r'\b', text, 1)
        self.const = 'const' in before_name.split(self.type)[0] if self.type in before_name else False
        self.ptr = before_name.count('*')
        # For "const char* const*", the outer pointer is const too.
        self.const_ptr = self.ptr == 2 and before_name.count('const') >= 2
        self.dims = re.findall(r'\[([^\]]+)\]', after_name)
        self.bitfield = ':' in after_name
        # a bitfield's width in bits
        self.bits = int(after_name.split(':', 1)[1].strip()) if self.bitfield else None
        length = elem.get('len')
        self.len = length.split(',') if length else []
        self.altlen = elem.get('altlen')
        opt = elem.get('optional')
        self.optional = [o == 'true' for o in opt.split(',')] if opt else []
        self.noautovalidity = elem.get('noautovalidity') == 'true'
        self.values = elem.get('values')
        self.selector = elem.get('selector')
        # a union member: the selector values that choose it
        self.selection = elem.get('selection').split(',') if elem.get('selection') else []
        # a uint64_t holding a handle of the type another member names
        self.objecttype = elem.get('objecttype')
        # an array whose elements lie this parameter's bytes apart
        self.stride = elem.get('stride')

    @property
    def is_optional(self):
        return bool(self.optional) and self.optional[0]

    def __repr__(self):
        return f'<{self.text}>'


class Struct:
    def __init__(self, elem):
        self.name = elem.get('name')
        self.union = elem.get('category') == 'union'
        self.returnedonly = elem.get('returnedonly') == 'true'
        self.allowduplicate = elem.get('allowduplicate') == 'true'
        ext = elem.get('structextends')
        self.structextends = ext.split(',') if ext else []
        self.members = [Member(m) for m in elem.findall('member')
                        if 'vulkan' in (m.get('api') or 'vulkan').split(',')]
        self.stype = None
        if self.members and self.members[0].name == 'sType':
            self.stype = self.members[0].values
        self.aliases = []


class Command:
    def __init__(self, elem):
        proto = elem.find('proto')
        self.name = proto.findtext('name')
        self.ret = proto.findtext('type')
        self.params = [Member(p) for p in elem.findall('param')
                       if 'vulkan' in (p.get('api') or 'vulkan').split(',')]
        self.successcodes = [c for c in (elem.get('successcodes') or '').split(',') if c]
        self.errorcodes = [c for c in (elem.get('errorcodes') or '').split(',') if c]


class Registry:
    def __init__(self, path):
        root = ET.parse(path).getroot()
        self.root = root
        # video.xml, beside vk.xml since 1.3.238: the codec standards' own
        # structures and enums (StdVideo*), which vk.xml's video structures
        # point at.  Without it they stay unknown, and the codec extensions
        # are not carried.
        video = os.path.join(os.path.dirname(os.path.abspath(path)), 'video.xml')
        self.video_root = ET.parse(video).getroot() if os.path.exists(video) else None
        self.video_types = set()
        self.header_version = None
        self.handles = {}        # name -> (dispatchable, objtypeenum, parent)
        self.handle_alias = {}
        self.enums = set()
        self.bitmasks = {}       # name -> underlying (VkFlags or VkFlags64)
        self.basetypes = {}      # name -> underlying C type
        self.structs = {}
        self.type_alias = {}
        self.funcpointers = set()
        self.enum_values = {}    # constant name -> value string
        self.commands = {}
        self.command_alias = {}

        for t in root.findall('types/type'):
            if 'vulkan' not in (t.get('api') or 'vulkan').split(','):
                continue
            cat = t.get('category')
            name = t.get('name') or t.findtext('name')
            if t.get('alias'):
                self.type_alias[name] = t.get('alias')
                continue
            if cat == 'handle':
                disp = t.findtext('type') == 'VK_DEFINE_HANDLE'
                self.handles[name] = (disp, t.get('objtypeenum'), t.get('parent'))
            elif cat == 'enum':
                self.enums.add(name)
            elif cat == 'bitmask':
                self.bitmasks[name] = t.findtext('type')
            elif cat == 'basetype':
                self.basetypes[name] = t.findtext('type')
            elif cat in ('struct', 'union'):
                self.structs[name] = Struct(t)
            elif cat == 'funcpointer':
                self.funcpointers.add(name)
            elif cat == 'define' and name == 'VK_HEADER_VERSION':
                self.header_version = re.search(
                    r'VK_HEADER_VERSION\s+(\d+)', ''.join(t.itertext())).group(1)

        for t in self.video_root.findall('types/type') if self.video_root is not None else ():
            cat = t.get('category')
            name = t.get('name') or t.findtext('name')
            if cat == 'enum':
                self.enums.add(name)
            elif cat in ('struct', 'union'):
                self.structs[name] = Struct(t)
            else:
                continue
            self.video_types.add(name)

        for alias, target in self.type_alias.items():
            if target in self.structs:
                self.structs[target].aliases.append(alias)

        for e in root.findall('enums/enum'):
            if e.get('value'):
                self.enum_values[e.get('name')] = e.get('value')

        for c in root.findall('commands/command'):
            if 'vulkan' not in (c.get('api') or 'vulkan').split(','):
                continue
            if c.get('alias'):
                self.command_alias[c.get('name')] = c.get('alias')
                continue
            cmd = Command(c)
            self.commands[cmd.name] = cmd

        # What each feature level and extension requires.
        self.features = []   # (name, number, [commands], [types])
        for f in root.findall('feature'):
            if 'vulkan' not in f.get('api').split(','):
                continue
            cmds, types = self._requires(f)
            self.features.append((f.get('name'), f.get('number'), cmds, types))
        self.extensions = {}
        for e in root.findall('extensions/extension'):
            if 'vulkan' not in (e.get('supported') or '').split(','):
                continue
            cmds, types = self._requires(e)
            self.extensions[e.get('name')] = (e, cmds, types)

    @staticmethod
    def _requires(elem):
        cmds, types = [], []
        for req in elem.findall('require'):
            if 'vulkan' not in (req.get('api') or 'vulkan').split(','):
                continue
            cmds += [c.get('name') for c in req.findall('command')]
            types += [t.get('name') for t in req.findall('type')]
        return cmds, types

    def resolve_type(self, name):
        while name in self.type_alias:
            name = self.type_alias[name]
        return name

    def kind(self, name):
        """Classifies a type name: handle, enum, bitmask, basetype, struct,
        union, scalar, funcpointer, void, or other."""
        name = self.resolve_type(name)
        if name in self.handles:
            return 'handle'
        if name in self.enums:
            return 'enum'
        if name in self.bitmasks:
            return 'bitmask'
        if name in self.structs:
            return 'union' if self.structs[name].union else 'struct'
        if name in self.funcpointers:
            return 'funcpointer'
        if name == 'void':
            return 'void'
        if name in C_SCALARS:
            return 'scalar'
        if name in self.basetypes:
            return 'basetype'
        return 'other'

    def scalar_info(self, name):
        """(wire C type, native size) of a scalar-like type, or None."""
        name = self.resolve_type(name)
        k = self.kind(name)
        if k == 'scalar':
            return C_SCALARS[name]
        if k == 'enum':
            if name == 'VkFlagBits64' or name.endswith('FlagBits2') or \
               name.endswith('FlagBits2KHR'):
                return ('uint64_t', 8)
            # 64-bit flag bit enums are marked bitwidth="64"
            return ('uint64_t', 8) if name in self.enum64 else ('int32_t', 4)
        if k == 'bitmask':
            under = self.bitmasks[name]
            return ('uint64_t', 8) if under == 'VkFlags64' else ('uint32_t', 4)
        if k == 'basetype':
            under = self.basetypes[name]
            if under in C_SCALARS:
                return C_SCALARS[under]
            return None
        return None

    def enum_members(self, name):
        """The values an enum (not a FlagBits) may take: its own, and those
        every feature level and extension adds (aliases are not values)."""
        if not hasattr(self, '_enum_members'):
            members = {}
            roots = [self.root] + ([self.video_root] if self.video_root is not None else [])
            for es in [es for r in roots for es in r.findall('enums')]:
                if es.get('type') != 'enum':
                    continue
                vals = members.setdefault(es.get('name'), set())
                for e in es.findall('enum'):
                    if e.get('value') is not None and e.get('alias') is None:
                        vals.add(int(e.get('value'), 0))
            for parent in self.root.findall('feature') + self.root.findall('extensions/extension'):
                if 'vulkan' not in (parent.get('api') or parent.get('supported') or 'vulkan') \
                        .replace('vulkansc', '').split(',') and parent.tag == 'feature':
                    continue
                number = parent.get('number')
                for e in parent.iter('enum'):
                    ext = e.get('extends')
                    if not ext or e.get('alias') is not None or e.get('bitpos') is not None:
                        continue
                    if e.get('value') is not None:
                        v = int(e.get('value'), 0)
                    elif e.get('offset') is not None:
                        extnum = int(e.get('extnumber') or number)
                        v = 1000000000 + (extnum - 1) * 1000 + int(e.get('offset'))
                        if e.get('dir') == '-':
                            v = -v
                    else:
                        continue
                    members.setdefault(ext, set()).add(v)
            self._enum_members = members
        return self._enum_members.get(self.resolve_type(name))

    @property
    def enum64(self):
        if not hasattr(self, '_enum64'):
            self._enum64 = {e.get('name') for e in self.root.findall('enums')
                            if e.get('bitwidth') == '64'}
        return self._enum64


def api_version(reg):
    """The newest core version the registry describes, with its header
    version: "1.4.309"."""
    newest = max(tuple(int(x) for x in number.split('.')) for name, number, c, t in reg.features)
    return f'{newest[0]}.{newest[1]}.{reg.header_version}'


if __name__ == '__main__':
    import argparse
    ap = argparse.ArgumentParser(description='Facts about a Vulkan registry.')
    ap.add_argument('--api-version', metavar='VK_XML', required=True,
                    help='print the API version the registry describes')
    print(api_version(Registry(ap.parse_args().api_version)))
