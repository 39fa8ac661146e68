"""``graph-group``: GraphTurbo's sub-graph grouping as an analysis that annotates the graph.

``taihu-opt net.mlir -p 'set-target,graph-group' --print-between-passes`` runs, on every
``func.func`` of a ``graph`` module, the model of :mod:`taihu.backends.model.graphturbo` (seed
002, spec ``algorithms.md`` §L and its SW26010 instance §N):

* SplitInfo / BestSplit (Algorithm 1, eq. 1; 002 L80-90) of every op, then grouping by straight,
  diamond and branch merges under rules (i)/(ii) (Algorithm 2, 002 L94-123);
* the layers of 002 L39 (straight chains with at most one conv/gemm) and their anchors (the conv /
  matmul, else the last op; 002 L184);
* the instances of each group (its BestSplit factor along its split dim, 002 L133), the kept
  instance edges, and the DFS (Algorithm 3, LIFO) or BFS order with the lower peak of live
  instance outputs (002 L138-144).

It annotates (discardable attributes; the IR is otherwise unchanged, nothing consumes them yet):

* every op of group ``N``: ``taihu.group = N : i64`` (groups numbered in topological order) and,
  when a split fits LB, ``taihu.split = array<i64: DIM, FACTOR>`` (the group's BestSplit: output
  dim and number of instances); ``taihu.group_layer = L : i64`` (not ``taihu.layer``, where
  convert-graph-to-tile caches kernel names); the anchor op of each layer ``taihu.anchor``;
* the function: ``taihu.order = "dfs"|"bfs"`` and ``taihu.instances = ["g0.0", ...]`` (group
  ``N``'s instance ``i`` is ``gN.i``, in execution order).

What a node is (the model's :class:`~taihu.backends.model.graphturbo.Node`): every op except
``graph.constant``; operands defined by ``graph.constant`` are weights and not part of ``peak``
(002 L72); a function argument is an external input. Output dims that read an input one-to-one
(the dim maps of Algorithm 1 line 10): all dims of element-wise ops and batch_norm (numpy
broadcasting right-aligned); all but the axis of softmax / concat and all but C of lrn; N of a
conv (C is reduced, H and W would need halos: recomputation the seed's cost hook stops, 002 L84);
N and C of pools; N of the gemm / matmul left operand (unless transposed); the permutation of a
transpose; N of other ops when it is unchanged. Multi-result ops (lstm, gru) count their first
result.

Options:

* ``ldm-budget`` (bytes per CPE, default 0 = the machine's ``ldm_user_bytes``): LB of one CPE;
  an instance uses all CPEs, so the aggregate LB of Algorithm 1 is ``n_cpes x ldm-budget``
  (spec §L1, §N). The machine is the module's ``#target.machine`` (run ``set-target`` first,
  else the default ``sw26010``).
* ``order`` (``auto`` | ``dfs`` | ``bfs``, default ``auto``): ``auto`` keeps the order with the
  lower peak (DFS on a tie); ``dfs`` / ``bfs`` force one.

``taihu-lower`` runs it after ``graph-schedule``: nothing consumes the annotations yet (the
lowered ``swsim`` text of ResNet-50, Inception v1, SqueezeNet and AlexNet is byte-identical with
and without it), and it costs under 1.5 % of their lowering time.

The candidate factors ``V(d)`` use ``c`` = the mesh side (``mesh_rows``; binding factors per mesh
axis are 8, 4, 2, 1, spec §N) [param]. Errors (``DiagnosticException``, one line): an unknown
``order``, a negative ``ldm-budget``, an invalid machine. (A budget above the LDM is accepted, as by
``convert-graph-to-tile``: ``taihu-lower`` hands both the same ``ldm-budget``.)
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import (
    ArrayAttr,
    DenseArrayBase,
    IntegerAttr,
    ModuleOp,
    StringAttr,
    TensorType,
    UnitAttr,
    i64,
)
from xdsl.ir import Attribute, BlockArgument, Operation, OpResult, SSAValue
from xdsl.passes import ModulePass
from xdsl.utils.exceptions import DiagnosticException

from taihu.backends.model import graphturbo as gt
from taihu.dialects import graph
from taihu.dialects.target import machine_of
from taihu.target.machine import MachineConfigError

__all__ = ["GROUP_ATTR", "GraphGroupPass", "graph_nodes"]

GROUP_ATTR = "taihu.group"
SPLIT_ATTR = "taihu.split"
LAYER_ATTR = "taihu.group_layer"
ANCHOR_ATTR = "taihu.anchor"
ORDER_ATTR = "taihu.order"
INSTANCES_ATTR = "taihu.instances"

_ELEMENTWISE = (graph.AddOp, graph.SubOp, graph.MulOp, graph.DivOp, graph.SumOp, graph.ReluOp,
                graph.SigmoidOp, graph.TanhOp, graph.SqrtOp, graph.ErfOp, graph.ClipOp,
                graph.LeakyReluOp, graph.DropoutOp, graph.CastOp, graph.BatchNormOp)
_PARAM_OPS = (graph.Conv2dOp, graph.GemmOp, graph.MatMulOp, graph.LSTMOp, graph.GRUOp)
_ANCHOR_KINDS = ("conv2d", "gemm", "matmul")


def _elem_bytes(t: Attribute) -> int:
    """Bytes of one element of a tensor type (a non-tensor counts 0)."""
    if not isinstance(t, TensorType):
        return 0
    bits = getattr(t.element_type, "bitwidth", 32)
    return max(1, int(bits) // 8)


def _shape(v: SSAValue) -> tuple[int, ...]:
    t = v.type
    return tuple(t.get_shape()) if isinstance(t, TensorType) else ()


def _bytes(v: SSAValue) -> int:
    n = _elem_bytes(v.type)
    for s in _shape(v):
        n *= s
    return n


def _broadcast_map(out: tuple[int, ...], inp: tuple[int, ...], skip: set[int]) -> tuple[int | None, ...]:
    """Out dim -> the input dim it reads one-to-one under right-aligned broadcasting."""
    off = len(out) - len(inp)
    return tuple(d - off if d not in skip and 0 <= d - off < len(inp) and inp[d - off] == s else None
                 for d, s in enumerate(out))


def _dim_map(op: Operation, k: int, out: tuple[int, ...], inp: tuple[int, ...]) -> tuple[int | None, ...]:
    """The dim map of operand ``k`` of ``op`` (module docstring)."""
    none: list[int | None] = [None] * len(out)
    if isinstance(op, graph.TransposeOp):
        return tuple(op.perm)
    if isinstance(op, graph.SoftmaxOp):
        return _broadcast_map(out, inp, {op.axis})
    if isinstance(op, graph.LRNOp):
        return _broadcast_map(out, inp, {1})
    if isinstance(op, graph.ConcatOp):
        return _broadcast_map(out, inp, {op.axis})
    if isinstance(op, _ELEMENTWISE):
        return _broadcast_map(out, inp, set())
    if isinstance(op, (graph.MaxPoolOp, graph.AvgPoolOp, graph.GlobalAvgPoolOp)):
        return _broadcast_map(out, inp, set(range(2, len(out))))
    if isinstance(op, graph.GemmOp) and (k != 0 or op.trans_a):
        return tuple(none)
    if isinstance(op, graph.MatMulOp) and k != 0:
        return tuple(none)
    if out and inp and out[0] == inp[0]:
        none[0] = 0
    return tuple(none)


def _is_weight(v: SSAValue) -> bool:
    return isinstance(v, OpResult) and isinstance(v.op, graph.ConstantOp)


def graph_nodes(body: list[Operation]) -> tuple[list[gt.Node], dict[str, Operation], set[str]]:
    """The model's nodes of a function body (module docstring), the op of each node name and
    the names whose results the function returns."""
    names: dict[Operation, str] = {}
    ops: dict[str, Operation] = {}
    nodes: list[gt.Node] = []
    returned: set[str] = set()

    def value_name(v: SSAValue) -> str:
        if isinstance(v, BlockArgument):
            return f"%arg{v.index}"
        assert isinstance(v, OpResult)
        return names.get(v.op, f"%ext{id(v.op)}")

    for op in body:
        if isinstance(op, func.ReturnOp):
            returned |= {value_name(v) for v in op.operands if isinstance(v, OpResult) and v.op in names}
            continue
        if isinstance(op, graph.ConstantOp) or not op.results:
            continue
        name = f"n{len(nodes)}"
        names[op] = name
        ops[name] = op
        res = op.results[0]
        out = _shape(res)
        inputs, in_bytes, maps = [], [], []
        operands = op.operands[:1] if isinstance(op, graph.BatchNormOp) else op.operands
        for k, v in enumerate(operands):
            if _is_weight(v) or not isinstance(v.type, TensorType):
                continue
            inputs.append(value_name(v))
            in_bytes.append(_bytes(v))
            maps.append(_dim_map(op, k, out, _shape(v)))
        kind = op.name.removeprefix("graph.")
        nodes.append(gt.Node(name, kind, tuple(inputs), tuple(in_bytes), out, _elem_bytes(res.type),
                             tuple(maps), isinstance(op, _PARAM_OPS)))
    return nodes, ops, returned


@dataclass(frozen=True)
class _Plan:
    """What the pass annotates for one function."""

    grouping: gt.Grouping
    layers: tuple[tuple[str, ...], ...]
    order_kind: str
    instances: list[str]


def _instance_order(nodes: list[gt.Node], grouping: gt.Grouping, order: str) -> tuple[str, list[str]]:
    """Instances of the groups, their kept edges and the chosen order (module docstring)."""
    by = {n.name: n for n in nodes}
    gid = {m: k for k, g in enumerate(grouping.groups) for m in g}
    sgs = []
    for k, (g, e) in enumerate(zip(grouping.groups, grouping.splits)):
        last = by[g[-1]]
        f, d = (e.f, e.d) if e is not None and last.out_shape and last.out_shape[e.d] % e.f == 0 else (1, 0)
        sgs.append((f"g{k}.", last.out_shape or (1,), f, d))
    inst = gt.build_instances(sgs)
    edges: list[gt.Edge] = []
    for k, g in enumerate(grouping.groups):
        cname, _, _, cdim = sgs[k]
        members = [by[m] for m in g]
        labels = gt.split_labels(members, by[g[-1]], cdim) if by[g[-1]].out_shape else {}
        seen: set[int] = set()
        for n in members:
            for j, i in enumerate(n.inputs):
                p = gid.get(i)
                if p is None or p == k or p in seen:
                    continue
                seen.add(p)
                m = None
                if n.name in labels and i == grouping.groups[p][-1]:
                    dm = n.dim_maps[j]
                    m = dm[labels[n.name]] if labels[n.name] < len(dm) else None
                dim_map = tuple(m if d == cdim else None for d in range(len(sgs[k][1])))
                edges.append(gt.Edge(sgs[p][0], cname, dim_map))
    pairs = gt.instance_edges(inst, edges)
    names = [i.name for v in inst.values() for i in v]
    size = {i.name: by[grouping.groups[k][-1]].out_bytes // i.f
            for k, (sg, _, _, _) in enumerate(sgs) for i in inst[sg]}
    if order == "dfs":
        return "dfs", gt.lifo_order(names, pairs)
    if order == "bfs":
        return "bfs", gt.bfs_order(names, pairs)
    kind, chosen, _, _ = gt.choose_order(names, pairs, size)
    return kind, chosen


@dataclass(frozen=True)
class GraphGroupPass(ModulePass):
    """Annotate GraphTurbo groups, layers, anchors and instance order (module docstring)."""

    name = "graph-group"

    ldm_budget: int = 0
    order: str = "auto"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        if self.order not in ("auto", "dfs", "bfs"):
            raise DiagnosticException(
                f"graph-group: option order must be auto, dfs or bfs, got {self.order!r}")
        try:
            m = machine_of(op)
        except MachineConfigError as e:
            raise DiagnosticException(f"graph-group: {e}") from None
        if self.ldm_budget < 0:
            raise DiagnosticException(
                f"graph-group: option ldm-budget must be >= 0 bytes (0 = the machine's "
                f"ldm_user_bytes = {m.ldm_user_bytes}), got {self.ldm_budget}")
        lb = (self.ldm_budget or m.ldm_user_bytes) * m.n_cpes
        for f in op.walk():
            if isinstance(f, func.FuncOp) and f.body.blocks:
                self._annotate(f, lb, m.mesh_rows)

    def _annotate(self, f: func.FuncOp, lb: int, cores: int) -> None:
        nodes, ops, returned = graph_nodes(list(f.body.block.ops))
        if not nodes:
            return
        grouping = gt.group_graph(nodes, lb, cores, returned)
        layers = gt.graph_layers(nodes)
        by = {n.name: n for n in nodes}
        for k, (g, e) in enumerate(zip(grouping.groups, grouping.splits)):
            for name in g:
                o = ops[name]
                o.attributes[GROUP_ATTR] = IntegerAttr(k, i64)
                if e is not None:
                    o.attributes[SPLIT_ATTR] = DenseArrayBase.from_list(i64, [e.d, e.f])
        for k, layer in enumerate(layers):
            for name in layer:
                ops[name].attributes[LAYER_ATTR] = IntegerAttr(k, i64)
            anchor = layer[gt.anchor_of([by[n].kind for n in layer], _ANCHOR_KINDS)]
            ops[anchor].attributes[ANCHOR_ATTR] = UnitAttr()
        kind, order = _instance_order(nodes, grouping, self.order)
        f.attributes[ORDER_ATTR] = StringAttr(kind)
        f.attributes[INSTANCES_ATTR] = ArrayAttr([StringAttr(s) for s in order])
