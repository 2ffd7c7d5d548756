# SPDX-License-Identifier: MIT
"""The ICD's entrypoints and name lookup (icd_gen.c, icd_gen.h)."""

from gen_tables import ASYNC_CREATES, CACHED, FLUSH_AFTER, SHIPS_RECORDING
from gen_emit_structs import member_len
from gen_emit_commands import (
    P, cmd_params, cmd_signature, emit_lost_outputs, is_sync, lost_result, out_len_expr,
    records_in_cmdbuf)
from gen_emit_replay import fast_shape


def dispatchable_first(gen, cmd):
    p = cmd.params[0]
    t = gen.reg.resolve_type(p.type)
    if t in gen.reg.handles and gen.reg.handles[t][0]:
        return p
    return None


def destroyed_param(gen, cmd):
    if not (cmd.name.startswith('vkDestroy') or cmd.name.startswith('vkFree')):
        return None
    handles = [p for p in cmd.params[1:] if gen.reg.kind(p.type) == 'handle']
    return handles[-1] if handles else None


def emit_icd_fast_record(gen, w, cmd, shape):
    """The body of the ICD's entrypoint of a recorded command with a fast
    shape: the whole command reserved at once and its values stored at their
    offsets, the same bytes wire_enc_vkFoo() writes."""
    reg = gen.reg
    fixed, size, tail = shape
    first = cmd.params[0].name
    if tail is None:
        w(f'   uint8_t *p = icd_cmd_reserve({first}, WIRE_OP_{cmd.name}, {size});')
    else:
        n = member_len(gen, cmd.params, tail, '')
        w(f'   const uint32_t n = {tail.name} ? (uint32_t)({n}) : 0;')
        w(f'   uint8_t *p = icd_cmd_reserve({first}, WIRE_OP_{cmd.name}, '
          f'{size + 4} + ({tail.name} ? 4 + ((n + 3) & ~3u) : 0));')
    w('   if (!p)')
    w('      return;')
    for m, off, sz in fixed:
        k = reg.kind(m.type)
        rt = reg.resolve_type(m.type)
        if k == 'handle':
            expr = (f'wire_object_id({m.name})' if gen.is_pointer_handle(rt)
                    else f'(uint64_t)(uintptr_t)({m.name})')
            w(f'   {{ const uint64_t v = {expr}; memcpy(p + {off}, &v, 8); }}')
        elif m.dims:
            w(f'   memcpy(p + {off}, {m.name}, sizeof({m.name}[0]) * {" * ".join(str(d) for d in m.dims)});')
        else:
            wt = gen.wire_scalar(m.type)
            w(f'   {{ const {wt} v = ({wt})({m.name}); memcpy(p + {off}, &v, sizeof(v)); }}')
    if tail is not None:
        w(f'   {{ const uint32_t present = {tail.name} != NULL; memcpy(p + {size}, &present, 4); }}')
        w(f'   if ({tail.name}) {{')
        w(f'      memcpy(p + {size + 4}, &n, 4);')
        w(f'      memcpy(p + {size + 8}, {tail.name}, n);')
        w(f'      memset(p + {size + 8} + n, 0, ((n + 3) & ~3u) - n);')
        w('   }')
    w('}\n')


def emit_icd(gen, w):
    reg = gen.reg
    w('#include "icd_gen.h"')
    w()
    for name in gen.commands:
        if name in gen.client_only:
            cmd = reg.commands[name]
            w(f'VKAPI_ATTR {cmd.ret} VKAPI_CALL icd_{name}({cmd_signature(cmd)}) __attribute__((weak));')
    w()
    for name in gen.wire_commands:
        cmd = reg.commands[name]
        params = cmd_params(gen, cmd)
        sig = cmd_signature(cmd)
        ret = cmd.ret
        first = dispatchable_first(gen, cmd)
        args = ', '.join(p.name for p in cmd.params)
        sync = is_sync(gen, cmd)
        lost = {'VkResult': lost_result(cmd), 'void': ''}.get(ret, '0')
        w(f'extern __typeof__(icd_gen_{name}) icd_{name} __attribute__((weak, alias("icd_gen_{name}")));')
        w(f'VKAPI_ATTR {ret} VKAPI_CALL\nicd_gen_{name}({sig})\n{{')
        if first is None:
            w(f'   return{" " + lost if lost else ""};')
            w('}\n')
            continue
        outs = [p for p in params if p.role == 'out_handle']
        oom = 'VK_ERROR_OUT_OF_HOST_MEMORY' if ret == 'VkResult' else ''
        if name in SHIPS_RECORDING:
            w(f'   return icd_cmd_buffer_end({first.name});')
            w('}\n')
            continue
        shape = fast_shape(gen, cmd)
        if shape is not None:
            emit_icd_fast_record(gen, w, cmd, shape)
            continue
        if records_in_cmdbuf(cmd):
            w(f'   struct wire_enc *e = icd_cmd_stream({first.name}, WIRE_OP_{name});')
            w('   if (!e)')
            w(f'      return{" VK_SUCCESS" if ret == "VkResult" else (" " + lost if lost else "")};')
            w(f'   wire_enc_{name}(e, {args});')
            w(f'   icd_cmd_stream_end({first.name});')
            if ret == 'VkResult':
                w('   return VK_SUCCESS;')
            w('}\n')
            continue
        w(f'   struct icd_connection *conn = icd_connection_of({first.name});')
        # output handles: create the client objects first
        for p in outs:
            n = out_len_expr(gen, cmd, p, '') or '1'
            w(f'   const uint32_t n_{p.name} = (uint32_t)({n});')
            w(f'   {p.type} *tmp_{p.name} = icd_tmp_handles(2 * (size_t)n_{p.name}, sizeof({p.type}));')
            w(f'   if (!tmp_{p.name}) {{')
            w(f'      {p.name}[0] = VK_NULL_HANDLE;')
            w(f'      return {oom};')
            w('   }')
            w(f'   for (uint32_t i = 0; i < n_{p.name}; i++) {{')
            w(f'      tmp_{p.name}[i] = ({p.type})icd_handle_create(conn, {reg.handles[p.type][1]}, {first.name});')
            w(f'      tmp_{p.name}[n_{p.name} + i] = tmp_{p.name}[i];')
            w(f'      if (!tmp_{p.name}[i]) {{')
            w(f'         for (uint32_t j = 0; j < i; j++)')
            w(f'            icd_handle_destroy({reg.handles[p.type][1]}, (uint64_t)(uintptr_t)tmp_{p.name}[j]);')
            w(f'         icd_tmp_handles_free(tmp_{p.name});')
            w(f'         {p.name}[0] = VK_NULL_HANDLE;')
            w(f'         return {oom};')
            w('      }')
            w('   }')
            w(f'   icd_connection_count_objects(conn, (int64_t)n_{p.name});')
        call_args = ', '.join((f'tmp_{p.name}' if p.role == 'out_handle' else p.name) for p in params)
        if name in ASYNC_CREATES:
            # inside the object limit: queued, the handles the ICD chose
            # are the application's at once
            (p,) = outs
            w(f'   if (({ASYNC_CREATES[name]}) && icd_connection_room(conn) && !icd_connection_lost(conn)) {{')
            w('      struct icd_call call;')
            w(f'      struct wire_enc *e = icd_call_begin(&call, conn, WIRE_OP_{name}, false, false);')
            w(f'      wire_enc_{name}(e, {call_args});')
            w('      icd_call_end(&call);')
            w(f'      for (uint32_t i = 0; i < n_{p.name}; i++)')
            w(f'         {p.name}[i] = tmp_{p.name}[i];')
            w(f'      icd_tmp_handles_free(tmp_{p.name});')
            w('      return VK_SUCCESS; /* a loss from here on: the next call says so */')
            w('   }')
        if not sync:
            w('   struct icd_call call;')
            w(f'   struct wire_enc *e = icd_call_begin(&call, conn, WIRE_OP_{name}, false, false);')
            w(f'   wire_enc_{name}(e, {call_args});')
            w('   icd_call_end(&call);')
            if cmd.name in FLUSH_AFTER:
                w('   icd_connection_flush(conn);')
            d = destroyed_param(gen, cmd)
            if d is not None:
                dp = P(gen, cmd, d)
                objtype = reg.handles[dp.type][1]
                n = member_len(gen, cmd.params, d, '') if d.len else None
                if n:
                    w(f'   if ({d.name})')
                    w(f'      for (uint32_t i = 0; i < (uint32_t)({n}); i++)')
                    w(f'         icd_handle_destroy({objtype}, (uint64_t)(uintptr_t){d.name}[i]);')
                    w(f'   if ({d.name})')
                    w(f'      for (uint32_t i = 0; i < (uint32_t)({n}); i++)')
                    w(f'         icd_connection_count_objects(conn, {d.name}[i] ? -1 : 0);')
                else:
                    w(f'   icd_handle_destroy({objtype}, (uint64_t)(uintptr_t){d.name});')
                    w(f'   icd_connection_count_objects(conn, {d.name} ? -1 : 0);')
            if ret == 'VkResult':
                w(f'   return icd_connection_lost(conn) ? {lost} : VK_SUCCESS;')
            w('}\n')
            continue
        cacheable = name in CACHED
        w('   struct icd_call call;')
        w(f'   struct wire_enc *e = icd_call_begin(&call, conn, WIRE_OP_{name}, true, {"true" if cacheable else "false"});')
        w(f'   wire_enc_{name}(e, {call_args});')
        w('   VkResult transport = icd_call_end(&call);')
        if ret != 'void':
            w(f'   {ret} ret = {lost if ret == "VkResult" else "0"};')
        w('   if (transport == VK_SUCCESS) {')
        rarg = '&ret, ' if ret != 'void' else ''
        w(f'      wire_decreply_{name}(&call.reply, {rarg}{call_args});')
        w('      transport = icd_call_reply_done(&call);')
        w('   }')
        w('   if (transport != VK_SUCCESS) {')
        if ret == 'VkResult':
            w(f'      ret = {lost};')
        emit_lost_outputs(gen, w, cmd, params, '      ')
        w('   }')
        for p in outs:
            objtype = reg.handles[p.type][1]
            w(f'   for (uint32_t i = 0; i < n_{p.name}; i++) {{')
            if ret == 'VkResult':
                w(f'      if (ret < 0 || !tmp_{p.name}[i]) {{')
            else:
                w(f'      if (transport != VK_SUCCESS || !tmp_{p.name}[i]) {{')
            w(f'         icd_handle_destroy({objtype}, (uint64_t)(uintptr_t)tmp_{p.name}[n_{p.name} + i]);')
            w('         icd_connection_count_objects(conn, -1);')
            w(f'         {p.name}[i] = VK_NULL_HANDLE;')
            w('      } else {')
            w(f'         {p.name}[i] = tmp_{p.name}[i];')
            w('      }')
            w('   }')
            w(f'   icd_tmp_handles_free(tmp_{p.name});')
        if ret != 'void':
            w('   return ret;')
        w('}\n')

    # lookup table
    w('static const struct icd_entrypoint icd_entrypoints[] = {')
    names = {n: n for n in gen.commands if n not in gen.private}
    for alias, target in reg.command_alias.items():
        if target in gen.commands:
            names[alias] = target
    for entry in sorted(names):
        name = names[entry]
        cmd = reg.commands[name]
        first = cmd.params[0].type
        level = 'ICD_LEVEL_GLOBAL'
        t = reg.resolve_type(first)
        if t in ('VkInstance', 'VkPhysicalDevice'):
            level = 'ICD_LEVEL_INSTANCE' if t == 'VkInstance' else 'ICD_LEVEL_PHYSICAL_DEVICE'
        elif t in ('VkDevice', 'VkQueue', 'VkCommandBuffer'):
            level = 'ICD_LEVEL_DEVICE'
        w(f'   {{"{entry}", (PFN_vkVoidFunction)icd_{name}, {level}}},')
    w('};')
    w()
    w('const struct icd_entrypoint *\nicd_entrypoint_lookup(const char *name)\n{')
    w('   size_t lo = 0, hi = sizeof(icd_entrypoints) / sizeof(icd_entrypoints[0]);')
    w('   while (lo < hi) {')
    w('      size_t mid = (lo + hi) / 2;')
    w('      int c = strcmp(name, icd_entrypoints[mid].name);')
    w('      if (c == 0)')
    w('         return &icd_entrypoints[mid];')
    w('      if (c < 0)')
    w('         hi = mid;')
    w('      else')
    w('         lo = mid + 1;')
    w('   }')
    w('   return NULL;')
    w('}')


def emit_format_blocks(gen, w):
    """wire_format_block(): the bytes and extent of a texel block of a
    format's aspect in host memory (vk.xml's <formats>), for host image
    copies, whose sizes both sides compute: a depth aspect takes 2 bytes (16
    bits) or 4 (24 or 32), a stencil aspect 1, a plane its compatible
    format's block."""
    root = gen.reg.root
    formats = root.find('formats')
    # the formats this registry's VkFormat has (for the Vulkan API)
    known = set()
    for parent in [root.find("enums[@name='VkFormat']")] + root.findall('feature') + \
            root.findall('extensions/extension'):
        if parent is None or 'vulkan' not in (parent.get('api') or 'vulkan').split(',') or \
                parent.get('supported') == 'disabled':
            continue
        for e in parent.iter('enum'):
            if (parent.get('name') == 'VkFormat' or e.get('extends') == 'VkFormat') and \
                    e.get('alias') is None and \
                    'vulkan' in (e.get('api') or 'vulkan').split(','):
                known.add(e.get('name'))
    w('bool\nwire_format_block(VkFormat format, VkImageAspectFlags aspect, uint32_t *bytes,')
    w('                  uint32_t extent[3])\n{')
    w('   switch ((int)format) {')
    blocks = {}
    if formats is not None:
        for f in formats.findall('format'):
            name = f.get('name')
            if name not in known:
                continue
            ext = [int(x) for x in (f.get('blockExtent') or '1,1,1').split(',')]
            blocks[name] = (int(f.get('blockSize')), ext)
        for f in formats.findall('format'):
            name = f.get('name')
            if name not in known:
                continue
            comps = {c.get('name'): c.get('bits') for c in f.findall('component')}
            planes = f.findall('plane')
            cases = []
            if planes:
                for pl in planes:
                    b = blocks.get(pl.get('compatible'))
                    if b:
                        cases.append((f'VK_IMAGE_ASPECT_PLANE_{pl.get("index")}_BIT', b))
            elif 'D' in comps or 'S' in comps:
                if 'D' in comps:
                    cases.append(('VK_IMAGE_ASPECT_DEPTH_BIT',
                                  (2 if comps['D'] == '16' else 4, [1, 1, 1])))
                if 'S' in comps:
                    cases.append(('VK_IMAGE_ASPECT_STENCIL_BIT', (1, [1, 1, 1])))
            else:
                cases.append(('VK_IMAGE_ASPECT_COLOR_BIT', blocks[name]))
            w(f'   case {name}:')
            for aspect, (size, ext) in cases:
                w(f'      if (aspect == {aspect}) {{')
                w(f'         *bytes = {size};')
                w(f'         extent[0] = {ext[0]}, extent[1] = {ext[1]}, extent[2] = {ext[2]};')
                w('         return true;')
                w('      }')
            w('      return false;')
    w('   default:')
    w('      return false;')
    w('   }')
    w('}')
    w()
    # the planes' subsampling
    w('void\nwire_format_plane_divisor(VkFormat format, VkImageAspectFlags aspect, uint32_t div[2])\n{')
    w('   div[0] = div[1] = 1;')
    w('   switch ((int)format) {')
    if formats is not None:
        for f in formats.findall('format'):
            name = f.get('name')
            planes = [pl for pl in f.findall('plane')
                      if pl.get('widthDivisor') != '1' or pl.get('heightDivisor') != '1']
            if name not in known or not planes:
                continue
            w(f'   case {name}:')
            for pl in planes:
                w(f'      if (aspect == VK_IMAGE_ASPECT_PLANE_{pl.get("index")}_BIT)')
                w(f'         div[0] = {pl.get("widthDivisor")}, div[1] = {pl.get("heightDivisor")};')
            w('      break;')
    w('   default:')
    w('      break;')
    w('   }')
    w('}')
    w()


def emit_alias_names(gen, w, commands, prefixes, more_prefixes):
    """Hand-written code names a command as the registry that introduced it
    did (icd_vkCmdPushDescriptorSetKHR); where this registry has promoted it
    (vkCmdPushDescriptorSet), the old name is a macro for the new."""
    w()
    w('/* Commands by the names of the registries before their promotion. */')
    for name in commands:
        for alias in gen.command_aliases(name):
            for prefix in prefixes + more_prefixes(name):
                w(f'#define {prefix}{alias} {prefix}{name}')


def emit_alias_loads(gen, w, name, gpa, handle):
    """A host driver answers a command promoted to a core version later than
    the host instance's by the name its extension gave it (the host instance
    has the application's API version): where the core name finds nothing,
    the earlier names."""
    for alias in gen.command_aliases(name):
        w(f'   if (!d->{name[2:]})')
        w(f'      d->{name[2:]} = (PFN_{name})d->{gpa}({handle}, "{alias}");')


def emit_icd_header(gen, w):
    reg = gen.reg
    w('#pragma once')
    w('/* the ICD is built with the window systems\' VK_USE_PLATFORM_* (WSI_EXTENSIONS) */')
    w('#include <vulkan/vulkan.h>')
    w('#include "wire_gen.h"')
    w('#include "wire_icd.h"')
    w()
    w('enum icd_level { ICD_LEVEL_GLOBAL, ICD_LEVEL_INSTANCE, ICD_LEVEL_PHYSICAL_DEVICE, ICD_LEVEL_DEVICE };')
    w('struct icd_entrypoint { const char *name; PFN_vkVoidFunction func; enum icd_level level; };')
    w('const struct icd_entrypoint *icd_entrypoint_lookup(const char *name);')
    w()
    w('/* What each command returns once its daemon is gone (legal for it). */')
    for name in gen.commands:
        cmd = reg.commands[name]
        if cmd.ret == 'VkResult':
            w(f'#define ICD_LOST_{name} {lost_result(cmd)}')
    w()
    for name in gen.commands:
        cmd = reg.commands[name]
        w(f'VKAPI_ATTR {cmd.ret} VKAPI_CALL icd_{name}({cmd_signature(cmd)});')
        if name not in gen.client_only:
            w(f'VKAPI_ATTR {cmd.ret} VKAPI_CALL icd_gen_{name}({cmd_signature(cmd)});')
    emit_alias_names(gen, w, gen.commands, ['icd_'],
                     lambda name: ['icd_gen_'] if name not in gen.client_only else [])


