"""Host side of ``convert-loop-to-sw`` (package docstring "Host mapping"): the host function's
memrefs -> ``sw.global`` / ``sw.mem_alloc`` addresses, its ``loop.spmd`` kernels ->
``sw.kernel`` + ``sw.spawn``/``sw.join`` (:func:`lower_module`; structurally identical kernels
lowered once, "Kernel deduplication")."""

from __future__ import annotations

import math
from typing import cast

from xdsl.dialects import arith, func, memref
from xdsl.dialects.builtin import (
    ArrayAttr,
    AnyDenseElement,
    DenseIntOrFPElementsAttr,
    DenseResourceAttr,
    DictionaryAttr,
    IntegerAttr,
    MemRefType,
    ModuleOp,
    NoneAttr,
    StringAttr,
    SymbolRefAttr,
    TensorType,
    i64,
)
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.rewriter import Rewriter

from taihu.dialects import loop, sw
from taihu.dialects.target import machine_of
from taihu.passes.conversion.kernel_key import structural_key
from taihu.target.machine import MachineConfigError

from .common import elem_bytes, fail, sanitize
from .kernel import KernelLowering


class _Names:
    """Module-wide unique symbol names (globals, kernels and @main share the symbol table)."""

    def __init__(self) -> None:
        self.used: set[str] = {"main"}

    def reserve(self, name: str) -> bool:
        if name in self.used:
            return False
        self.used.add(name)
        return True

    def unique(self, base: str) -> str:
        base = sanitize(base)
        if self.reserve(base):
            return base
        i = 1
        while not self.reserve(f"{base}_{i}"):
            i += 1
        return f"{base}_{i}"


def _memref_bytes(t: MemRefType) -> int:
    return math.prod(t.get_shape()) * elem_bytes(t)


def _tensor_type(t: MemRefType) -> TensorType:
    return TensorType(t.get_element_type(), t.get_shape())


def _graph_name(attrs: ArrayAttr | None, i: int) -> str | None:
    """The ``graph.name`` of argument/result ``i`` (unsanitised), or None."""
    if attrs is not None and i < len(attrs.data):
        d = attrs.data[i]
        if isinstance(d, DictionaryAttr):
            n = d.data.get("graph.name")
            if isinstance(n, StringAttr):
                return n.data
    return None


def _io_name(attrs: ArrayAttr | None, i: int, default: str) -> str:
    n = _graph_name(attrs, i)
    return sanitize(n) if n is not None else f"{default}{i}"


def _io_global(name: str, t: TensorType, kind: sw.IoKind, graph_name: str | None) -> Operation:
    """``sw.global @name : t io kind``, with ``{graph.name = "..."}`` when the graph name had to
    be sanitised (ONNX names such as ``gpu_0/data_0``: the runner accepts and returns both)."""
    attrs = {"graph.name": StringAttr(graph_name)} if graph_name is not None and graph_name != name else {}
    return sw.GlobalOp.build(properties={"sym_name": StringAttr(name), "type": t, "io": sw.IoKindAttr(kind)},
                             attributes=attrs)


_VIEW_OPS = (memref.CollapseShapeOp, memref.ExpandShapeOp, memref.CastOp, memref.ReinterpretCastOp,
             memref.SubviewOp)


def _view_offset_bytes(op: Operation) -> int:
    """Static byte offset of a view from its source (0 for reshapes and casts)."""
    if isinstance(op, memref.ReinterpretCastOp):
        offs = [int(x) for x in op.static_offsets.get_values()]
        if op.offsets or any(o < 0 for o in offs):
            raise fail(op, "dynamic offsets are not supported")
        src = op.source.type
        assert isinstance(src, MemRefType)
        return (offs[0] if offs else 0) * elem_bytes(src)
    if isinstance(op, memref.SubviewOp):
        src = op.source.type
        assert isinstance(src, MemRefType)
        offs = [int(x) for x in op.static_offsets.get_values()]
        if op.offsets or any(o < 0 for o in offs):
            raise fail(op, "dynamic offsets are not supported")
        strides = src.get_strides() if not isinstance(src.layout, NoneAttr) else None
        shape = src.get_shape()
        if strides is None:
            strides = [math.prod(shape[i + 1:]) for i in range(len(shape))]
        if any(s is None for s in strides):
            raise fail(op, "dynamic strides are not supported")
        # no None among the strides: rejected above
        return sum(o * s for o, s in zip(offs, cast(list[int], strides))) * elem_bytes(src)
    return 0


def _root(v: SSAValue) -> tuple[SSAValue, int]:
    """The non-view value a memref is a view of, and the byte offset."""
    off = 0
    while isinstance(v.owner, _VIEW_OPS):
        off += _view_offset_bytes(v.owner)
        v = v.owner.operands[0]
    return v, off


def _host_func(module: ModuleOp) -> func.FuncOp:
    funcs = [o for o in module.body.block.ops if isinstance(o, func.FuncOp)]
    mains = [f for f in funcs if f.sym_name.data == "main"]
    if mains:
        return mains[0]
    if len(funcs) == 1:
        return funcs[0]
    raise fail(None, f"expected one host function (func.func @main), found {len(funcs)} functions")


#: Discardable attribute of an ``sw.spawn`` of a shared kernel: the name of this launch (the
#: symbol the kernel would have had without deduplication; reports name launches by it).
LAUNCH_NAME = "taihu.name"

# loop.ldm_buffer names only become value names in sw: not part of a body's identity
_KEY_IGNORE = {"loop.ldm_buffer": frozenset({"name"})}


def lower_module(module: ModuleOp, dedup: bool = True) -> None:
    """Rewrite ``module`` (loop level, see package docstring) in place into an ``sw`` module.

    ``dedup``: lower structurally identical ``loop.spmd`` bodies once (package docstring,
    "Kernel deduplication"). The kernels are lowered for the module's machine
    (:func:`~taihu.dialects.target.machine_of`: its ``target.machine``, else ``sw26010``); an
    invalid description is a ``DiagnosticException`` naming the key."""
    try:
        machine = machine_of(module)
    except MachineConfigError as e:
        raise fail(module, str(e)) from None
    fn = _host_func(module)
    if fn.body.blocks and len(fn.body.blocks) != 1:
        raise fail(fn, "the host function must have a single block")
    others = [o for o in module.body.block.ops if isinstance(o, func.FuncOp) and o is not fn and
              any(isinstance(x, loop.SpmdOp) for x in o.walk())]
    if others:
        raise fail(others[0], f"loop.spmd outside the host function @{fn.sym_name.data}")
    names = _Names()
    block = fn.body.block
    ret = block.last_op
    if not isinstance(ret, func.ReturnOp):
        raise fail(fn, "the host function must end with func.return")

    globals_out: list[Operation] = []
    # io names first (they are the runner's keys)
    in_names = []
    for i, a in enumerate(block.args):
        if not isinstance(a.type, MemRefType):
            raise fail(fn, f"argument #{i} is {a.type}, expected a memref")
        n = _io_name(fn.arg_attrs, i, "arg")
        if not names.reserve(n):
            raise fail(fn, f"two inputs/outputs are named '{n}'")
        in_names.append(n)
    out_names = []
    out_root: dict[SSAValue, tuple[int, str, MemRefType]] = {}
    for i, v in enumerate(ret.arguments):
        if not isinstance(v.type, MemRefType):
            raise fail(ret, f"result #{i} is {v.type}, expected a memref")
        n = _io_name(fn.res_attrs, i, "out")
        if not names.reserve(n):
            raise fail(fn, f"two inputs/outputs are named '{n}'")
        out_names.append(n)
        r, off = _root(v)
        if not isinstance(r.owner, memref.AllocOp):
            raise fail(ret, f"result #{i} ('{n}') must be a buffer allocated by the host function "
                            "(returning an argument or a global needs a copy kernel)")
        assert isinstance(r.type, MemRefType)  # a memref.alloc result
        if off != 0 or _memref_bytes(v.type) != _memref_bytes(r.type):
            raise fail(ret, f"result #{i} ('{n}') is a partial view of its allocation")
        if r in out_root:
            raise fail(ret, f"result #{i} ('{n}') returns the same buffer as result '{out_root[r][1]}'")
        out_root[r] = (i, n, v.type)

    # memref.global -> sw.global
    gname: dict[str, str] = {}
    for op in list(module.body.block.ops):
        if not isinstance(op, memref.GlobalOp):
            continue
        t = op.type
        assert isinstance(t, MemRefType)
        if any(d < 0 for d in t.get_shape()):
            raise fail(op, "dynamic shape")
        tt = _tensor_type(t)
        props: dict[str, Attribute] = {"sym_name": StringAttr(""), "type": tt}
        init: Attribute = op.initial_value
        if not isinstance(init, DenseIntOrFPElementsAttr):
            # xDSL 0.74's memref.global rejects dense_resource: graph-to-tile keeps it here
            init = op.attributes.get("taihu.initial_value", init)
        if isinstance(init, DenseIntOrFPElementsAttr):
            # the global held dense data: its element type is a dense element type
            dense_tt = cast(TensorType[AnyDenseElement], tt)
            props["initial_value"] = DenseIntOrFPElementsAttr(dense_tt, init.data) if init.type != tt else init
        elif isinstance(init, DenseResourceAttr):
            props["initial_value"] = DenseResourceAttr.from_params(init.resource_handle, tt) \
                if init.type != tt else init
        new_name = names.unique(op.sym_name.data)
        gname[op.sym_name.data] = new_name
        props["sym_name"] = StringAttr(new_name)
        g = sw.GlobalOp.build(properties=props)
        Rewriter.replace_op(op, g, new_results=[])
        globals_out.append(g)

    mod_block = module.body.block
    anchor = fn
    io_globals: list[Operation] = []
    for i, (n, a) in enumerate(zip(in_names, block.args)):
        assert isinstance(a.type, MemRefType)  # checked with the io names
        io_globals.append(_io_global(n, _tensor_type(a.type), sw.IoKind.INPUT, _graph_name(fn.arg_attrs, i)))
    for i, n in enumerate(out_names):
        rt = ret.arguments[i].type
        assert isinstance(rt, MemRefType)  # checked with the io names
        io_globals.append(_io_global(n, _tensor_type(rt), sw.IoKind.OUTPUT, _graph_name(fn.res_attrs, i)))
    for io in io_globals:
        mod_block.insert_op_before(io, anchor)

    # the new host program
    main = func.FuncOp("main", ((), ()))
    mb = main.body.block
    vmap: dict[SSAValue, SSAValue] = {}
    for n, a in zip(in_names, block.args):
        op = sw.GlobalAddrOp.build(properties={"global_name": _symref(n)}, result_types=[i64])
        op.results[0].name_hint = a.name_hint or sanitize(n)
        mb.add_op(op)
        vmap[a] = op.results[0]
    kernels: list[sw.KernelOp] = []
    lowered: dict[tuple, str] = {}  # structural key -> sw.kernel symbol
    for op in list(block.ops):
        if isinstance(op, memref.GetGlobalOp):
            gn = gname.get(op.name_.root_reference.data)
            if gn is None:
                raise fail(op, f"no memref.global named {op.name_}")
            new = sw.GlobalAddrOp.build(properties={"global_name": _symref(gn)}, result_types=[i64])
            new.results[0].name_hint = op.memref.name_hint
            mb.add_op(new)
            vmap[op.memref] = new.results[0]
        elif isinstance(op, memref.AllocOp):
            t = op.memref.type
            if op.dynamic_sizes or any(d < 0 for d in t.get_shape()):
                raise fail(op, "dynamic allocation sizes are not supported")
            buf: Operation
            if op.memref in out_root:
                _, n, _ = out_root[op.memref]
                buf = sw.GlobalAddrOp.build(properties={"global_name": _symref(n)}, result_types=[i64])
            else:
                buf = sw.MemAllocOp.build(properties={"bytes": IntegerAttr(max(_memref_bytes(t), 1), i64)},
                                          result_types=[i64])
            buf.results[0].name_hint = op.memref.name_hint
            mb.add_op(buf)
            vmap[op.memref] = buf.results[0]
        elif isinstance(op, _VIEW_OPS):
            off = _view_offset_bytes(op)
            src = vmap.get(op.operands[0])
            if src is None:
                raise fail(op, "view of a value that is not a host buffer")
            if off:
                c = arith.ConstantOp(IntegerAttr(off, i64))
                add = arith.AddiOp(src, c)
                mb.add_ops([c, add])
                add.result.name_hint = op.results[0].name_hint
                vmap[op.results[0]] = add.result
            else:
                vmap[op.results[0]] = src
        elif isinstance(op, memref.DeallocOp):
            continue
        elif isinstance(op, loop.SpmdOp):
            kname = names.unique(op.kernel_name.data)
            args = []
            for arg in op.args:
                if arg not in vmap:
                    raise fail(op, f"operand %{arg.name_hint or '?'} is not a host buffer")
                args.append(vmap[arg])
            key = structural_key(op, _KEY_IGNORE) if dedup else None
            shared = lowered.get(key) if key is not None else None
            if shared is None:
                kern = sw.KernelOp(kname, len(op.args))
                for k, attr in op.attributes.items():
                    if k.startswith("taihu."):
                        kern.attributes[k] = attr
                KernelLowering(op, kern, machine).run()
                kernels.append(kern)
                if key is not None:
                    lowered[key] = kname
                mb.add_op(sw.SpawnOp(kname, args))
            else:  # an identical body was lowered already: spawn it under this launch's name
                spawn = sw.SpawnOp(shared, args)
                spawn.attributes[LAUNCH_NAME] = StringAttr(kname)
                for k, attr in op.attributes.items():
                    if k.startswith("taihu."):
                        spawn.attributes[k] = attr
                mb.add_op(spawn)
            mb.add_op(sw.JoinOp.build())
        elif isinstance(op, func.ReturnOp):
            mb.add_op(func.ReturnOp())
        elif isinstance(op, arith.ConstantOp):
            continue  # index constants of views are folded into static offsets
        else:
            raise fail(op, "cannot lower this op in the host function")
    for kern in kernels:
        mod_block.insert_op_before(kern, anchor)
    Rewriter.replace_op(fn, main, new_results=[])


def _symref(n: str) -> SymbolRefAttr:
    return SymbolRefAttr(n)
