"""Helpers shared by the tile-level schedule primitives (``tile-split``, ``tile-reorder``,
``tile-fuse``, ``tile-vectorize``, ``tile-layout``; package docstring of :mod:`taihu.passes.tile`).

* selection by name: kernels (``tile.kernel "NAME"``), loops (the ``name`` of a ``tile.for``, else
  its iterator's SSA name), buffers (the SSA name of a ``tile.alloc``, as printed);
* diagnostics: :func:`fail` gives a ``PassFailedException`` whose one-line message names the pass,
  the op (loop / buffer / kernel) and the reason;
* perfect nests: the pure ``index`` arithmetic between two loops (:func:`is_index_op`) does not
  break perfect nesting; the primitives sink it into the innermost body;
* ``index`` arithmetic builders and an evaluator of ``index`` values for given iterator values;
* :func:`replace_buffer_type`: a ``tile.alloc`` re-typed (layout, shape) for every op using it.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Mapping, Sequence

from xdsl.dialects import arith
from xdsl.dialects.builtin import IndexType, IntegerAttr, ModuleOp
from xdsl.ir import Block, BlockArgument, Operation, SSAValue
from xdsl.utils.exceptions import PassFailedException, VerifyException

from taihu.dialects import tile

__all__ = [
    "INDEX_OPS",
    "buffer_label",
    "const_index",
    "eval_index",
    "fail",
    "find_buffers",
    "find_loops",
    "index_const",
    "is_index_op",
    "kernel_label",
    "loop_label",
    "loop_name",
    "new_type",
    "only_inner_loop",
    "replace_buffer_type",
    "select_kernels",
    "verify_kernel",
    "walk_ops",
]

#: pure ``index`` arithmetic (no effect; may be moved between loop bodies of a perfect nest)
INDEX_OPS = (arith.ConstantOp, arith.AddiOp, arith.SubiOp, arith.MuliOp, arith.DivUIOp, arith.RemUIOp)

_SUFFIX = re.compile(r"^(.*)_[0-9]+$")


def fail(pass_name: str, where: str, msg: str) -> PassFailedException:
    """``<pass>: <where>: <msg>`` (one line, no traceback in ``taihu-opt``)."""
    return PassFailedException(f"{pass_name}: {where}: {msg}")


def is_index_op(op: Operation) -> bool:
    """A pure ``arith`` op on ``index`` values (constant, addi, subi, muli, divui, remui)."""
    return isinstance(op, INDEX_OPS) and all(isinstance(r.type, IndexType) for r in op.results)


def kernel_label(k: tile.KernelOp) -> str:
    return f'tile.kernel "{k.kernel_name.data}"'


def loop_name(loop: tile.ForOp) -> str:
    """The loop's ``name`` (the DSL iterator name), else its iterator's SSA name, else ''."""
    if loop.iter_name is not None:
        return loop.iter_name.data
    return loop.iv.name_hint or ""


def _kernel_of(op: Operation) -> tile.KernelOp | None:
    return tile.enclosing_kernel(op)


def loop_label(loop: tile.ForOp) -> str:
    """``tile.for "cK" in tile.kernel "y"``."""
    k = _kernel_of(loop)
    return f'tile.for "{loop_name(loop)}"' + (f" in {kernel_label(k)}" if k is not None else "")


def buffer_label(alloc: tile.AllocOp) -> str:
    """``buffer %c in tile.kernel "y"``."""
    k = _kernel_of(alloc)
    return f"buffer %{alloc.result.name_hint or '?'}" + (f" in {kernel_label(k)}" if k is not None else "")


def walk_ops(block: Block) -> Iterator[Operation]:
    """Every op of ``block`` and of the regions nested in it, in program order (pre-order)."""
    for op in block.ops:
        yield op
        for r in op.regions:
            for b in r.blocks:
                yield from walk_ops(b)


def select_kernels(pass_name: str, module: ModuleOp, kernel: str) -> list[tile.KernelOp]:
    """The ``tile.kernel`` ops of ``module`` (all of them, or those named ``kernel``)."""
    ks = [op for op in module.walk() if isinstance(op, tile.KernelOp)]
    if not ks:
        raise fail(pass_name, "module", "no tile.kernel to schedule (run convert-graph-to-tile first)")
    if kernel:
        sel = [k for k in ks if k.kernel_name.data == kernel]
        if not sel:
            names = ", ".join(sorted({k.kernel_name.data for k in ks}))
            raise fail(pass_name, "module", f"no tile.kernel named '{kernel}' (kernels: {names})")
        return sel
    return ks


def _loops(k: tile.KernelOp) -> list[tile.ForOp]:
    return [op for op in walk_ops(k.body.block) if isinstance(op, tile.ForOp)]


def find_loops(pass_name: str, module: ModuleOp, kernel: str, name: str, option: str = "loop") -> list[tile.ForOp]:
    """The loop named ``name`` in every selected kernel that has one (:func:`loop_name`); a
    diagnostic when no kernel has it or when a kernel has several."""
    if not name:
        raise fail(pass_name, "options", f"option '{option}' (a tile.for name) is required")
    ks = select_kernels(pass_name, module, kernel)
    found: list[tile.ForOp] = []
    for k in ks:
        ms = [lp for lp in _loops(k) if loop_name(lp) == name]
        if len(ms) > 1:
            raise fail(pass_name, kernel_label(k), f"{len(ms)} tile.for loops are named '{name}'; name them apart")
        found.extend(ms)
    if not found:
        names = sorted({loop_name(lp) for k in ks for lp in _loops(k)})
        scope = kernel_label(ks[0]) if kernel else "module"
        raise fail(pass_name, scope, f"no tile.for named '{name}' (loops: {', '.join(names) or 'none'})")
    return found


def find_buffers(pass_name: str, module: ModuleOp, kernel: str, name: str, option: str = "buffer") -> list[tile.AllocOp]:
    """The ``tile.alloc`` named ``name`` in every selected kernel that has one.

    ``name`` is the SSA name as written in the input (``%c`` -> ``c``); the printer's
    disambiguating suffix is accepted too (``a_2`` finds the one alloc whose name is ``a`` when
    no alloc is named ``a_2``). A diagnostic when no kernel has it or a kernel has several."""
    if not name:
        raise fail(pass_name, "options", f"option '{option}' (a tile.alloc SSA name) is required")
    name = name.removeprefix("%")
    ks = select_kernels(pass_name, module, kernel)
    found: list[tile.AllocOp] = []
    for k in ks:
        allocs = k.allocs()
        ms = [a for a in allocs if a.result.name_hint == name]
        m = _SUFFIX.match(name)
        if not ms and m is not None:
            ms = [a for a in allocs if a.result.name_hint == m.group(1)]
        if len(ms) > 1:
            raise fail(pass_name, kernel_label(k), f"{len(ms)} tile.alloc buffers are named %{name}")
        found.extend(ms)
    if not found:
        names = sorted({f"%{a.result.name_hint or '?'}" for k in ks for a in k.allocs()})
        scope = kernel_label(ks[0]) if kernel else "module"
        raise fail(pass_name, scope, f"no tile.alloc named %{name} (buffers: {', '.join(names) or 'none'})")
    return found


def only_inner_loop(loop: tile.ForOp) -> tuple[tile.ForOp | None, Operation | None]:
    """``(inner, None)`` when the body of ``loop`` is one ``tile.for`` and pure index ops only
    (a perfect nest); ``(None, op)`` naming the first op that breaks it (``(None, None)``: the
    body has no loop)."""
    inner: tile.ForOp | None = None
    for op in loop.body.block.ops:
        if isinstance(op, tile.ForOp):
            if inner is not None:
                return None, op
            inner = op
        elif not is_index_op(op):
            return None, op
    return inner, None


def const_index(v: SSAValue) -> int | None:
    """The value of an ``arith.constant`` of type index, else None."""
    o = v.owner
    if isinstance(o, arith.ConstantOp) and isinstance(o.value, IntegerAttr):
        return o.value.value.data
    return None


def index_const(value: int, name: str | None = None) -> arith.ConstantOp:
    """``arith.constant <value> : index`` (SSA name ``c<value>`` unless given)."""
    op = arith.ConstantOp(IntegerAttr(value, IndexType()))
    op.result.name_hint = name or (f"c{value}" if value >= 0 else f"cm{-value}")
    return op


_EVAL: dict[type, Callable[[int, int], int]] = {
    arith.AddiOp: lambda x, y: x + y,
    arith.SubiOp: lambda x, y: x - y,
    arith.MuliOp: lambda x, y: x * y,
    arith.DivUIOp: lambda x, y: x // y,
    arith.RemUIOp: lambda x, y: x % y,
}


def eval_index(v: SSAValue, ivs: Mapping[SSAValue, int]) -> int | None:
    """The value of an ``index`` value for the iterator values ``ivs`` (constants and the pure
    arithmetic of :data:`INDEX_OPS`); None when it depends on anything else."""
    if v in ivs:
        return ivs[v]
    if isinstance(v, BlockArgument):
        return None
    o = v.owner
    c = const_index(v)
    if c is not None:
        return c
    f = _EVAL.get(type(o))
    if f is None or not isinstance(o, Operation):
        return None
    a, b = eval_index(o.operands[0], ivs), eval_index(o.operands[1], ivs)
    if a is None or b is None:
        return None
    if isinstance(o, (arith.DivUIOp, arith.RemUIOp)) and (b <= 0 or a < 0):
        return None
    return f(a, b)


def verify_kernel(pass_name: str, k: tile.KernelOp, where: str) -> None:
    """Run the tile verifiers on the rewritten kernel; their rule is the diagnostic."""
    try:
        k.verify()
    except VerifyException as e:
        raise fail(pass_name, where, f"the result is not a legal tile program: {e}") from None


def replace_buffer_type(alloc: tile.AllocOp, t: tile.TileBufType) -> tile.AllocOp:
    """Re-type the buffer of ``alloc`` as ``t`` for every op using it (a new ``tile.alloc``
    with the same SSA name, ``double`` flag and attributes replaces it). Returns the new alloc."""
    new = tile.AllocOp(t, double=alloc.is_double)
    new.attributes |= alloc.attributes
    new.result.name_hint = alloc.result.name_hint
    block = alloc.parent_block()
    assert block is not None
    block.insert_op_before(new, alloc)
    alloc.result.replace_all_uses_with(new.result)
    block.erase_op(alloc)
    return new


def new_type(t: tile.TileBufType, *, shape: Sequence[int] | None = None, dist: str | None = None,
             layout: str | None = None) -> tile.TileBufType:
    """``t`` with some parameters replaced."""
    return tile.TileBufType(
        tuple(shape) if shape is not None else t.get_shape(),
        t.element_type,
        dist if dist is not None else t.dist.data,
        layout if layout is not None else t.layout.data,
    )
