# SPDX-License-Identifier: MIT
"""The daemon's host dispatch, default executors, op dispatcher and
destroy functions (gpud_gen.c, gpud_gen.h)."""

from gen_tables import (
    ASYNC_CREATES, FD_MEMBERS, HOST_OPTIONAL, RUN_ON_LOST_DEVICE, SPIRV_CHAIN_COMMANDS,
    OWN_COPIES_UNAFFECTED, SPIRV_COMMANDS, replay_concurrent)
from gen_emit_commands import (
    P, args_struct_name, cmd_params, is_sync, lost_result, records_in_cmdbuf)
from gen_emit_replay import emit_fast_decoders, fast_shape
from gen_emit_icd import destroyed_param, emit_alias_loads, emit_alias_names


def emit_gpud(gen, w, hw):
    reg = gen.reg
    hw('#pragma once')
    hw('#include "wire_gen.h"')
    hw()
    hw('struct gpud_call;')
    hw()
    hw('/* Host driver entrypoints, loaded per host instance or device. */')
    hw('struct gpud_host_dispatch {')
    hw('   PFN_vkGetInstanceProcAddr GetInstanceProcAddr;')
    hw('   PFN_vkGetDeviceProcAddr GetDeviceProcAddr;')
    for name in gen.commands:
        if name in ('vkGetInstanceProcAddr', 'vkGetDeviceProcAddr') or name in gen.private or name in gen.wsi_commands:
            continue
        hw(f'   PFN_{name} {name[2:]};')
    hw('};')
    hw()
    hw('void gpud_host_dispatch_load_instance(struct gpud_host_dispatch *d, VkInstance instance);')
    hw('void gpud_host_dispatch_load_device(struct gpud_host_dispatch *d, VkDevice device);')
    hw('/* Runs one decoded command; returns false when the stream is malformed. */')
    hw('bool gpud_gen_dispatch(struct gpud_call *call, struct wire_dec *d, struct wire_enc *reply,')
    hw('                       uint32_t op);')
    hw('/* Per op: 1 for the commands the decoding thread runs while replay lanes')
    hw(' * and waiting submissions are busy (REPLAY_CONCURRENT in the generator). */')
    hw('extern const uint8_t gpud_gen_replay_concurrent[WIRE_OP_COUNT];')
    hw('/* Per op: 1 for the commands that need not wait for the worker\'s own')
    hw(' * copies on the GPU (those above and OWN_COPIES_UNAFFECTED). */')
    hw('extern const uint8_t gpud_gen_own_unaffected[WIRE_OP_COUNT];')
    hw('/* Runs one recorded command of a chunk on the chunk\'s command buffer cb:')
    hw(' * decoded on the fast path where the command has one (fastargs_*),')
    hw(' * else as any command; returns false when the command is malformed. */')
    hw('bool gpud_gen_replay(struct gpud_call *call, struct wire_dec *d, uint32_t op,')
    hw('                     VkCommandBuffer cb);')
    hw('/* Destroys a host object of the given type with the right vkDestroy/vkFree. */')
    hw('void gpud_gen_destroy_object(const struct gpud_host_dispatch *d, uint64_t parent,')
    hw('                             VkObjectType type, uint64_t handle);')
    hw()
    for name in gen.wire_commands:
        hw(f'void gpud_exec_{name}(struct gpud_call *call, struct {args_struct_name(name)} *a);')
        if name not in gen.private:
            hw(f'void gpud_gen_exec_{name}(struct gpud_call *call, struct {args_struct_name(name)} *a);')
    emit_alias_names(gen, hw, gen.wire_commands, ['gpud_exec_', 'wire_args_'],
                     lambda name: ['gpud_gen_exec_'] if name not in gen.private else [])

    w('#include "gpud_gen.h"')
    w('#include "wire_gpud.h"')
    w()
    # dispatch loading
    w('void\ngpud_host_dispatch_load_instance(struct gpud_host_dispatch *d, VkInstance instance)\n{')
    for name in gen.commands:
        if name in ('vkGetInstanceProcAddr', 'vkGetDeviceProcAddr') or name in gen.private or name in gen.wsi_commands:
            continue
        w(f'   d->{name[2:]} = (PFN_{name})d->GetInstanceProcAddr(instance, "{name}");')
        emit_alias_loads(gen, w, name, 'GetInstanceProcAddr', 'instance')
    w('   d->GetDeviceProcAddr = (PFN_vkGetDeviceProcAddr)d->GetInstanceProcAddr(instance, "vkGetDeviceProcAddr");')
    w('}\n')
    w('void\ngpud_host_dispatch_load_device(struct gpud_host_dispatch *d, VkDevice device)\n{')
    for name in gen.commands:
        cmd = reg.commands[name]
        t = reg.resolve_type(cmd.params[0].type)
        if t in ('VkDevice', 'VkQueue', 'VkCommandBuffer') and name != 'vkGetDeviceProcAddr' and \
                name not in gen.private and name not in gen.wsi_commands:
            w(f'   d->{name[2:]} = (PFN_{name})d->GetDeviceProcAddr(device, "{name}");')
            emit_alias_loads(gen, w, name, 'GetDeviceProcAddr', 'device')
    w('}\n')
    # default executors (none for gpud's own commands: the daemon has them)
    for name in gen.wire_commands:
        if name in gen.private:
            continue
        cmd = reg.commands[name]
        params = cmd_params(gen, cmd)
        # shader code reaches the host only through the daemon's own
        # executors: without one the link fails, no check goes missing
        if name not in SPIRV_COMMANDS | SPIRV_CHAIN_COMMANDS:
            w(f'extern __typeof__(gpud_gen_exec_{name}) gpud_exec_{name} __attribute__((weak, alias("gpud_gen_exec_{name}")));')
        w(f'void\ngpud_gen_exec_{name}(struct gpud_call *call, struct {args_struct_name(name)} *a)\n{{')
        args = ', '.join('NULL' if p.skip else f'a->{p.name}' for p in params)
        fn = f'gpud_call_dispatch(call)->{name[2:]}'
        w(f'   if (!{fn}) {{')
        if name in HOST_OPTIONAL:
            if cmd.ret == 'VkResult':
                w('      a->ret = VK_SUCCESS;')
        else:
            w(f'      gpud_call_fail(call, "host driver lacks {name}");')
        w('      return;')
        w('   }')
        if cmd.ret != 'void':
            w(f'   a->ret = {fn}({args});')
        else:
            w(f'   {fn}({args});')
        w('}\n')
    # handlers
    for name in gen.wire_commands:
        cmd = reg.commands[name]
        params = cmd_params(gen, cmd)
        w(f'static void\nhandle_{name}(struct gpud_call *call, struct wire_dec *d, struct wire_enc *reply)\n{{')
        w(f'   struct {args_struct_name(name)} a;')
        w('   memset(&a, 0, sizeof(a));')
        # the fds a command took are its executor's; one that does not run
        # (malformed, lost, refused) has them closed here
        w(f'   if (!wire_decargs_{name}(d, &a)) {{')
        w('      wire_dec_close_taken(d);')
        w('      return;')
        w('   }')
        w('   if (wire_dec_remaining(d)) {')
        w('      wire_dec_fail(d, "trailing bytes after the command");')
        w('      wire_dec_close_taken(d);')
        w('      return;')
        w('   }')
        if cmd.ret == 'VkResult':
            # on a device an asynchronous failure lost, what may be
            # answered is (commands that cannot fail still run)
            if lost_result(cmd) != 'VK_SUCCESS' and name not in RUN_ON_LOST_DEVICE:
                w('   if (gpud_call_device_lost(call)) {')
                w(f'      a.ret = {lost_result(cmd)};')
                w('      wire_dec_close_taken(d);')
                w('   } else if (gpud_call_refused(call) != VK_SUCCESS) {')
            else:
                w('   if (gpud_call_refused(call) != VK_SUCCESS) {')
            w('      a.ret = gpud_call_refused(call);')
            w('      wire_dec_close_taken(d);')
            w('   } else {')
            w(f'      gpud_exec_{name}(call, &a);')
            if 'VK_ERROR_DEVICE_LOST' in cmd.errorcodes:
                # the host lost the device (a GPU fault): a fault to list
                w('      if (a.ret == VK_ERROR_DEVICE_LOST && !gpud_call_deferred(call))')
                w('         gpud_call_host_lost(call);')
            w('   }')
        else:
            w(f'   gpud_exec_{name}(call, &a);')
        w('   if (gpud_call_deferred(call) || d->fatal)')
        w('      return;')
        for p in params:
            if p.role != 'out_handle':
                continue
            objtype = reg.handles[p.type][1]
            ok = 'a.ret >= 0' if cmd.ret == 'VkResult' else 'true'
            w(f'   for (uint32_t i = 0; i < a.{p.name}_count; i++) {{')
            w(f'      if (!({ok}))')
            w(f'         a.{p.name}[i] = VK_NULL_HANDLE;')
            w(f'      else if (a.{p.name}[i] != VK_NULL_HANDLE)')
            w(f'         gpud_call_add_object(call, {objtype}, a.{p.name}_ids[i], (uint64_t)(uintptr_t)a.{p.name}[i]);')
            w('   }')
        d = destroyed_param(gen, cmd)
        if d is not None and name not in ('vkDestroyInstance', 'vkDestroyDevice'):
            dp = P(gen, cmd, d)
            objtype = reg.handles[dp.type][1]
            w(f'   gpud_call_forget_objects(call, {objtype});')
        if is_sync(gen, cmd):
            w('   if (reply)')
            w(f'      wire_encreply_{name}(reply, &a);')
            if name in ASYNC_CREATES:
                # queued by the ICD: nobody waits for the result
                w('   else if (a.ret < 0)')
                w('      gpud_call_async_error(call, a.ret);')
            # an fd made for a reply nobody asked for is closed here
            for p in params:
                if (name, p.name) in FD_MEMBERS and p.role == 'out_scalar':
                    w(f'   else if (a.ret == VK_SUCCESS && a.{p.name} && *a.{p.name} >= 0)')
                    w(f'      close(*a.{p.name});')
        elif cmd.ret == 'VkResult':
            w('   if (a.ret < 0)')
            if name in HOST_OPTIONAL:
                # for tools only: a host that fails it loses nothing
                w(f'      gpud_call_host_failed(call, "{name}", a.ret);')
            else:
                w('      gpud_call_async_error(call, a.ret);')
        w('}\n')
    w('bool\ngpud_gen_dispatch(struct gpud_call *call, struct wire_dec *d, struct wire_enc *reply, uint32_t op)\n{')
    w('   switch (op) {')
    for name in gen.wire_commands:
        w(f'   case WIRE_OP_{name}:')
        w(f'      handle_{name}(call, d, reply);')
        w('      break;')
    w('   default:')
    w('      wire_dec_fail(d, "unknown op");')
    w('      break;')
    w('   }')
    w('   return !d->fatal;')
    w('}\n')
    concurrent = [name for name in gen.wire_commands
                  if replay_concurrent(name) and not records_in_cmdbuf(reg.commands[name])]
    w('const uint8_t gpud_gen_replay_concurrent[WIRE_OP_COUNT] = {')
    for name in concurrent:
        w(f'   [WIRE_OP_{name}] = 1,')
    w('};\n')
    w('const uint8_t gpud_gen_own_unaffected[WIRE_OP_COUNT] = {')
    for name in gen.wire_commands:
        if name in concurrent or name in OWN_COPIES_UNAFFECTED:
            w(f'   [WIRE_OP_{name}] = 1,')
    w('};\n')
    emit_fast_decoders(gen, w)
    w('bool\ngpud_gen_replay(struct gpud_call *call, struct wire_dec *d, uint32_t op, VkCommandBuffer cb)\n{')
    w('   switch (op) {')
    for name in gen.wire_commands:
        if fast_shape(gen, reg.commands[name]) is None:
            continue
        w(f'   case WIRE_OP_{name}: {{')
        w(f'      struct {args_struct_name(name)} a;')
        w(f'      if (fastargs_{name}(d, &a, cb))')
        w(f'         gpud_exec_{name}(call, &a);')
        w('      break;')
        w('   }')
    w('   default:')
    w('      return gpud_gen_dispatch(call, d, NULL, op);')
    w('   }')
    w('   return !d->fatal;')
    w('}\n')
    # destroy table
    w('void\ngpud_gen_destroy_object(const struct gpud_host_dispatch *d, uint64_t parent,')
    w('                        VkObjectType type, uint64_t handle)\n{')
    w('   switch (type) {')
    for name in gen.commands:
        cmd = reg.commands[name]
        dp = destroyed_param(gen, cmd)
        if dp is None or name in ('vkDestroyInstance', 'vkDestroyDevice') or dp.len or \
                name in gen.wsi_commands:
            continue
        t = reg.resolve_type(dp.type)
        objtype = reg.handles[t][1]
        ptype = reg.resolve_type(cmd.params[0].type)
        args = []
        for p in cmd.params:
            if p is dp:
                args.append(f'({t})(uintptr_t)handle')
            elif p.type == 'VkAllocationCallbacks':
                args.append('NULL')
            elif p is cmd.params[0]:
                args.append(f'({ptype})(uintptr_t)parent')
            else:
                raise Exception(f'{name}: unexpected parameter {p.name}')
        w(f'   case {objtype}:')
        w(f'      if (d->{name[2:]}) d->{name[2:]}({", ".join(args)});')
        w('      break;')
    w('   default:')
    w('      break;')
    w('   }')
    w('}')


