"""GraphTurbo's graph-level scheduling as a pure model (no IR): SplitInfo / BestSplit, grouping by
straight / diamond / branch merges, sub-graph instances, DFS/BFS ordering, core binding and buffer
scope, longest-lifetime spill, layer anchors and tiles, buffer-stitching traffic and the
cross-layer weight-prefetch timing rule.

Source: seed 002 (GraphTurbo, OSDI'23), spec ``algorithms.md`` §L (the algorithms in English) and
§N (the SW26010 instance: c = 64 CPEs as an 8x8 mesh, LB = LDM, GB absent so GB = DDR); the
regression values GT-1..GT-15 of ``reproduction-targets.md`` T9 are the unit tests
(``test/unit/test_graphturbo.py``). Seed facts are cited as ``002 L84`` (line 84 of the seed
text); ``[reconstructed]`` marks a rule the seed only describes in prose (its listings for
Algorithms 1, 3 and 4 are figures the text does not reproduce).

Conventions: a tensor is described by its shape (dims ``d0`` outermost) and element size in
bytes; every size is in bytes; weights are never part of a ``peak`` (002 L72: weights are
promoted per layer into small fixed LB buffers). The graph pass ``graph-group``
(:mod:`taihu.passes.graph.group`) builds :class:`Node` lists from a ``graph`` module and calls
:func:`group_graph`; nothing here reads IR or process-global state.
"""

from __future__ import annotations

import heapq
import math
from collections import deque
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

__all__ = [
    "Edge",
    "Grouping",
    "Instance",
    "Move",
    "Node",
    "PrefetchLayer",
    "ScopeDecision",
    "SplitEntry",
    "StitchTraffic",
    "anchor_of",
    "anchor_tile",
    "best_split",
    "bfs_order",
    "branch_ok",
    "build_instances",
    "candidate_factors",
    "choose_order",
    "concat_count",
    "diamond_ok",
    "find_branch",
    "find_diamond",
    "find_straight",
    "graph_layers",
    "group_graph",
    "infer_scope",
    "instance_edges",
    "lifo_order",
    "mesh_binding",
    "peak_live_bytes",
    "peak_live_outputs",
    "plain_binding",
    "prefetch_time",
    "prune_edges",
    "redistribute_route",
    "spill",
    "split_info",
    "split_labels",
    "stitch_traffic",
    "straight_ok",
]


# --------------------------------------------------------------------------------------------
# Graph model
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Node:
    """One graph op (a sub-graph of one node before grouping, 002 L84).

    ``inputs``: names of the producing nodes or of external values (function arguments; weights
    are *not* listed). ``out_shape`` / ``elem_bytes``: the op's (single) result.
    ``in_bytes``: bytes of each input, in ``inputs`` order. ``dim_maps[k][d]``: the dim of input
    ``k`` that output dim ``d`` reads one-to-one (same slice), ``None`` when the op reads the
    whole input along it (a reduction, a conv's output channel, a halo'd spatial dim).
    ``param``: the op has learned parameters (conv, gemm; 002 L39's layer definition).
    ``kind``: the op's name (``conv2d``, ``relu``, ...), for anchors and layers only.
    """

    name: str
    kind: str
    inputs: tuple[str, ...]
    in_bytes: tuple[int, ...]
    out_shape: tuple[int, ...]
    elem_bytes: int
    dim_maps: tuple[tuple[int | None, ...], ...]
    param: bool = False

    @property
    def out_bytes(self) -> int:
        """Bytes of the result."""
        return math.prod(self.out_shape) * self.elem_bytes


@dataclass(frozen=True)
class SplitEntry:
    """One SplitInfo tuple ``(split_d, n_d, f_d, d)`` (Algorithm 1, 002 L80-86): whether output
    dim ``d`` splits the sub-graph, how many ops it splits, and its split factor (number of
    instances)."""

    split: bool
    n: int
    f: int
    d: int


def candidate_factors(size: int, cores: int = 8) -> list[int]:
    """``V(d)`` of Algorithm 1 line 4 (002 L84; spec §L1 [reconstructed]):
    ``[size/c, size/(c/2), size/(c/4)] ++ [c, c+1, ..., size]``, divisors of ``size`` only, in
    that order, duplicates dropped (c = 8, size 8 -> [1, 2, 4, 8]). The first three decompose
    ``d`` over c, c/2 and c/4 cores with balanced load (002 L84)."""
    out: list[int] = []
    for k in (cores, cores // 2, cores // 4):
        if k > 0 and size % k == 0 and size // k >= 1:
            out.append(size // k)
    out.extend(v for v in range(cores, size + 1) if size % v == 0)
    seen: set[int] = set()
    return [v for v in out if not (v in seen or seen.add(v))]  # type: ignore[func-returns-value]


def _topo(nodes: Sequence[Node]) -> list[Node]:
    """``nodes`` in a topological order of their in-set edges: among ready nodes the earliest in
    ``nodes`` first (a list already in program order is kept). ``ValueError`` on a cycle."""
    index = {n.name: k for k, n in enumerate(nodes)}
    users: dict[str, list[int]] = {n.name: [] for n in nodes}
    indeg = {}
    for k, n in enumerate(nodes):
        prods = {i for i in n.inputs if i in index}
        indeg[n.name] = len(prods)
        for i in prods:
            users[i].append(k)
    ready = [k for k, n in enumerate(nodes) if indeg[n.name] == 0]
    heapq.heapify(ready)
    out: list[Node] = []
    while ready:
        n = nodes[heapq.heappop(ready)]
        out.append(n)
        for u in users[n.name]:
            indeg[nodes[u].name] -= 1
            if indeg[nodes[u].name] == 0:
                heapq.heappush(ready, u)
    if len(out) != len(nodes):
        raise ValueError("graphturbo: the sub-graph has a cycle")
    return out


def _live_steps(order: Sequence[Node], outputs: Iterable[str]) -> tuple[list[list[str]], dict[str, int]]:
    """The tensors live while each op of ``order`` runs (:func:`peak_live_bytes`) and the bytes of
    every tensor."""
    pos = {n.name: k for k, n in enumerate(order)}
    keep = set(outputs)
    last: dict[str, int] = {}
    size: dict[str, int] = {}
    born: dict[str, int] = {}
    for k, n in enumerate(order):
        born[n.name] = k
        size[n.name] = n.out_bytes
        for i, b in zip(n.inputs, n.in_bytes):
            last[i] = k
            if i not in pos:
                born.setdefault(i, -1)
                size[i] = b
    end = {t: len(order) if t in keep else max(last.get(t, -1), born[t]) for t in size}
    steps: list[list[str]] = [[] for _ in order]
    for t in size:
        for k in range(max(born[t], 0), min(end[t], len(order) - 1) + 1):
            steps[k].append(t)
    return steps, size


def peak_live_bytes(nodes: Sequence[Node], outputs: Iterable[str] = ()) -> int:
    """``peak`` of a sub-graph (spec §L1, T9 conventions): the largest sum of live activation
    bytes while one of its ops runs, in topological order. Live while op ``i`` runs: its result,
    every external input and earlier result used by op ``i`` or a later op, and every earlier
    result named in ``outputs`` (it leaves the sub-graph). Weights excluded. One element-wise op:
    input + output bytes (GT-2: relu [8,16,32,32] fp16 -> 512 KiB)."""
    steps, size = _live_steps(_topo(nodes), outputs)
    return max((sum(size[t] for t in live) for live in steps), default=0)


def _match(nodes: Sequence[Node], out: Node, d: int) -> tuple[dict[str, int], dict[str, int]]:
    """Tensor -> the dim of it that output dim ``d`` of ``out`` matches, and that dim's extent
    (nodes' results and external inputs; Algorithm 1 line 10: propagate backwards through the
    one-to-one dim maps, which join dims of equal extent)."""
    by_name = {n.name: n for n in nodes}
    dims = {out.name: d}
    extent = {out.name: out.out_shape[d]}
    stack = [out]
    while stack:
        n = stack.pop()
        e = dims[n.name]
        for k, i in enumerate(n.inputs):
            if i in dims:
                continue
            m = n.dim_maps[k][e] if k < len(n.dim_maps) and e < len(n.dim_maps[k]) else None
            if m is None:
                continue
            p = by_name.get(i)
            if p is None:
                dims[i], extent[i] = m, n.out_shape[e]
            elif m < len(p.out_shape):
                dims[i], extent[i] = m, p.out_shape[m]
                stack.append(p)
    return dims, extent


def split_labels(nodes: Sequence[Node], out: Node, d: int) -> dict[str, int]:
    """Node -> the dim of its result that output dim ``d`` of ``out`` matches (Algorithm 1 line
    10: propagate backwards through the one-to-one dim maps); external inputs included."""
    return _match(nodes, out, d)[0]


def _fits(prof: Sequence[Sequence[tuple[int, int]]], v: int, lb_bytes: int) -> bool:
    """Every step's live bytes within ``lb_bytes`` when tensors whose matched extent divides by
    ``v`` hold ``ceil(bytes / v)`` (``prof``: per step, ``(bytes, matched extent or 0)``)."""
    return all(sum(-(-b // v) if x and x % v == 0 else b for b, x in live) <= lb_bytes for live in prof)


def split_info(nodes: Sequence[Node], lb_bytes: int, cores: int = 8,
               outputs: Iterable[str] = ()) -> list[SplitEntry]:
    """SplitInfo of a sub-graph (Algorithm 1, 002 L80-86; spec §L1 [reconstructed listing]).

    For each output dim ``d`` of the sub-graph's last op (outermost first): ``f_d`` = the first
    ``v`` of :func:`candidate_factors` for which the sub-graph's live bytes fit ``lb_bytes`` at
    every step, a tensor whose dim matched by ``d`` has an extent divisible by ``v`` counting
    ``ceil(bytes / v)`` and any other tensor in full ([reconstructed]: where ``d`` splits every
    tensor this is the spec's ``ceil(peak / v) <= LB``; a tensor ``d`` does not split is what
    every instance would hold or recompute whole, the "excessive recomputation" of 002 L84);
    then ``n_d`` = the ops whose result dim matched by ``d`` has an extent divisible by
    ``f_d``. Dims with no fitting ``v`` give no entry. ``lb_bytes``: the aggregate LB of the
    cores one instance uses (SW26010: n_cpes x the per-CPE LDM budget, spec §N)."""
    order = _topo(nodes)
    out = order[-1]
    steps, size = _live_steps(order, outputs)
    names = {n.name for n in order}
    entries: list[SplitEntry] = []
    for d in range(len(out.out_shape)):
        _, extent = _match(order, out, d)
        prof = [[(size[t], extent.get(t, 0)) for t in live] for live in steps]

        f = next((v for v in candidate_factors(out.out_shape[d], cores) if _fits(prof, v, lb_bytes)), None)
        if f is None:
            continue
        n_d = sum(1 for t, x in extent.items() if t in names and x % f == 0)
        entries.append(SplitEntry(n_d > 0, n_d, f, d))
    return entries


def best_split(entries: Iterable[SplitEntry]) -> SplitEntry | None:
    """BestSplit, eq. (1) (002 L88-90): ``lexmax (n_d, -f_d, -d)`` over the splitting entries:
    more ops split, then the smaller factor (saturates LB better), then the outer dim; ``None``
    when no entry splits (GT-1: {(T,3,8,d0), (T,5,16,d1), (T,5,8,d2), (T,5,8,d3)} -> d2, f = 8)."""
    cands = [e for e in entries if e.split]
    return max(cands, key=lambda e: (e.n, -e.f, -e.d)) if cands else None


# --------------------------------------------------------------------------------------------
# Grouping (Algorithm 2)
# --------------------------------------------------------------------------------------------


def straight_ok(f1: int, f2: int, f_merged: int) -> bool:
    """Merge rule (i) (002 L122) for straight SG1 -> SG2 (and branch SG2 -> SG3): (a)
    ``f(SG2) >= f(SG1)`` (a large factor must not propagate past a down-sampling) and (b)
    ``f(merged) <= f(SG2)`` (the merge must not worsen SG2's LB use)."""
    return f2 >= f1 and f_merged <= f2


branch_ok = straight_ok


def diamond_ok(f2: int, f3: int, f4: int, f_merged: int) -> bool:
    """Merge rule (ii) (002 L122): diamond SG2 + SG3 + SG4 merge when
    ``f(merged) <= max(f(SG2), f(SG3), f(SG4))``."""
    return f_merged <= max(f2, f3, f4)


@dataclass
class _Groups:
    """Mutable group state of :func:`group_graph`: node -> group id, group -> members."""

    nodes: dict[str, Node]
    of: dict[str, int]
    members: dict[int, list[str]]

    def producers(self, g: int) -> set[int]:
        return {self.of[i] for m in self.members[g] for i in self.nodes[m].inputs
                if i in self.of and self.of[i] != g}

    def merge(self, gs: Iterable[int]) -> int:
        gs = sorted(set(gs))
        keep = gs[0]
        for g in gs[1:]:
            for m in self.members.pop(g):
                self.of[m] = keep
                self.members[keep].append(m)
        return keep


def find_straight(producers: Mapping[int, set[int]], consumers: Mapping[int, set[int]]
                  ) -> list[tuple[int, int]]:
    """Straight patterns (002 L117): pairs ``(SG1, SG2)`` where SG1 is SG2's sole producer and
    SG2 is SG1's sole consumer (GT-4)."""
    return [(a, next(iter(cs))) for a, cs in consumers.items()
            if len(cs) == 1 and producers[next(iter(cs))] == {a}]


def find_diamond(producers: Mapping[int, set[int]], consumers: Mapping[int, set[int]]
                 ) -> list[tuple[int, tuple[int, ...], int]]:
    """Diamond patterns (002 L117): ``(entry, middles, exit)`` with >= 2 middles, each middle's
    producers = {entry} and consumers = {exit}, and the exit's producers = the middles (the entry
    and exit may connect to other sub-graphs). GT-4: A->B, A->C, B->D, C->D merges {B, C, D}."""
    out = []
    for x, ps in producers.items():
        mids = tuple(sorted(ps))
        if len(mids) < 2 or any(consumers[m] != {x} for m in mids):
            continue
        entries = {frozenset(producers[m]) for m in mids}
        if len(entries) == 1 and len(next(iter(entries))) == 1:
            out.append((next(iter(next(iter(entries)))), mids, x))
    return out


def find_branch(producers: Mapping[int, set[int]], consumers: Mapping[int, set[int]],
                external_inputs: Mapping[int, int] | None = None) -> list[tuple[int, int]]:
    """Branch patterns (002 L117): ``(SG2, SG3)`` where the exit SG3 has several paths into it
    (>= 2 producers, counting external inputs) and SG2 is one producer whose sole consumer is
    SG3 (SG1, a producer of SG2, may or may not also feed SG3). GT-4: X->conv->add, X->add merges
    {conv, add}. ``external_inputs[g]``: the number of external values ``g`` reads."""
    ext = external_inputs or {}
    out = []
    for x, ps in producers.items():
        if len(ps) + (1 if ext.get(x, 0) else 0) < 2:
            continue
        for p in sorted(ps):
            if consumers[p] == {x} and producers[x] != {p}:
                out.append((p, x))
                break
    return out


@dataclass(frozen=True)
class Grouping:
    """The result of :func:`group_graph`: ``groups`` in topological order (each a tuple of node
    names in topological order), each group's BestSplit (``None``: no factor fits LB) and the
    sub-graph counts after the first straight merge (for inspection, 002 L125)."""

    groups: tuple[tuple[str, ...], ...]
    splits: tuple[SplitEntry | None, ...]
    after_straight: tuple[tuple[str, ...], ...]


def group_graph(nodes: Sequence[Node], lb_bytes: int, cores: int = 8,
                outputs: Iterable[str] = ()) -> Grouping:
    """Algorithm 2 (002 L94-123): every node starts as its own sub-graph; repeat straight,
    diamond and branch merges (each accepted only under rules (i)/(ii), with factors from
    :func:`split_info` / :func:`best_split` recomputed on the merged sub-graph) until no pass
    lowers the count. A sub-graph with no fitting split (``None``) never merges. ``outputs``: node
    names whose results leave the graph (kept live in ``peak``)."""
    order = _topo(nodes)
    st = _Groups({n.name: n for n in order}, {n.name: k for k, n in enumerate(order)},
                 {k: [n.name] for k, n in enumerate(order)})
    outs = set(outputs)
    cache: dict[frozenset[str], SplitEntry | None] = {}

    def members_out(mem: Iterable[str]) -> set[str]:
        mem = set(mem)
        used_outside = {i for n in order if n.name not in mem for i in n.inputs}
        return {m for m in mem if m in outs or m in used_outside}

    def f_of(mem: Iterable[str]) -> int | None:
        key = frozenset(mem)
        if key not in cache:
            sub = [st.nodes[m] for m in key]
            cache[key] = best_split(split_info(sub, lb_bytes, cores, members_out(key)))
        e = cache[key]
        return None if e is None else e.f

    def graph_maps() -> tuple[dict[int, set[int]], dict[int, set[int]], dict[int, int]]:
        prod = {g: st.producers(g) for g in st.members}
        cons: dict[int, set[int]] = {g: set() for g in st.members}
        for g, ps in prod.items():
            for p in ps:
                cons[p].add(g)
        ext = {g: sum(1 for m in mem for i in st.nodes[m].inputs if i not in st.of)
               for g, mem in st.members.items()}
        return prod, cons, ext

    def run(kind: str) -> None:
        changed = True
        while changed:
            changed = False
            prod, cons, ext = graph_maps()
            cands: list[tuple[int, ...]]
            if kind == "straight":
                cands = [(a, b) for a, b in find_straight(prod, cons)]
            elif kind == "diamond":
                cands = [(*mids, x) for _, mids, x in find_diamond(prod, cons)]
            else:
                cands = [(a, b) for a, b in find_branch(prod, cons, ext)]
            for gs in cands:
                if any(g not in st.members for g in gs):
                    continue
                fo = [f_of(st.members[g]) for g in gs]
                fm = f_of([m for g in gs for m in st.members[g]])
                fs = [f for f in fo if f is not None]
                if len(fs) != len(fo) or fm is None:
                    continue
                ok = (diamond_ok(fs[0], max(fs[1:-1]), fs[-1], fm) if kind == "diamond"
                      else straight_ok(fs[0], fs[1], fm))
                if ok:
                    st.merge(gs)
                    changed = True
                    break

    def snapshot() -> tuple[tuple[str, ...], ...]:
        pos = {n.name: k for k, n in enumerate(order)}
        groups = [tuple(sorted(mem, key=pos.__getitem__)) for mem in st.members.values()]
        return tuple(sorted(groups, key=lambda g: pos[g[0]]))

    run("straight")
    after_straight = snapshot()
    while True:
        before = len(st.members)
        run("diamond")
        run("branch")
        run("straight")
        if len(st.members) >= before:
            break
    groups = snapshot()
    splits = []
    for g in groups:
        f_of(g)
        splits.append(cache[frozenset(g)])
    return Grouping(groups, tuple(splits), after_straight)


def graph_layers(nodes: Sequence[Node]) -> tuple[tuple[str, ...], ...]:
    """Layers (002 L39): maximal straight chains of nodes (each link: sole producer / sole
    consumer) holding at most one node with learned parameters; topological order. ResNet's conv
    block has 5 layers, an identity block 4 (002 L42, L175: GT-15's b3 = 17 layers)."""
    order = _topo(nodes)
    names = {n.name for n in order}
    cons: dict[str, set[str]] = {n.name: set() for n in order}
    for n in order:
        for i in n.inputs:
            if i in names:
                cons[i].add(n.name)
    layers: list[list[str]] = []
    layer_of: dict[str, int] = {}
    by = {n.name: n for n in order}
    for n in order:
        prods = {i for i in n.inputs if i in names}
        if len(prods) == 1:
            p = next(iter(prods))
            lay = layers[layer_of[p]]
            if cons[p] == {n.name} and lay[-1] == p and not (n.param and any(by[m].param for m in lay)):
                lay.append(n.name)
                layer_of[n.name] = layer_of[p]
                continue
        layer_of[n.name] = len(layers)
        layers.append([n.name])
    return tuple(tuple(x) for x in layers)


def anchor_of(kinds: Sequence[str], anchors: Iterable[str] = ("conv2d", "matmul", "gemm")) -> int:
    """Index of a layer's anchor op (002 L184; spec §L8): its conv / matmul if any, else its last
    op (GT-12: {conv, bn, relu} -> conv; {add, relu} -> relu)."""
    a = set(anchors)
    return next((k for k, kind in enumerate(kinds) if kind in a), len(kinds) - 1)


def anchor_tile(shape: Sequence[int], elem_bytes: int, n_tensors: int, lb_bytes: int
                ) -> tuple[tuple[int, int], int]:
    """Tile of the two outermost (parallel) loops of an anchor (002 L184-189; spec §L8
    [reconstructed]): greedily, outer first, the largest divisor that keeps ``n_tensors`` tiles
    of ``t0 x t1 x prod(shape[2:])`` elements in ``lb_bytes``. Returns ``((t0, t1), bytes)``;
    ``ValueError`` when even (1, 1) does not fit. GT-12: relu [4,64,56,56] fp16, in + out,
    64 KiB -> (4, 1), 50 176 B."""
    inner = math.prod(shape[2:]) * elem_bytes * n_tensors

    def fits(t0: int, t1: int) -> bool:
        return t0 * t1 * inner <= lb_bytes

    if not fits(1, 1):
        raise ValueError(f"graphturbo: a (1, 1) tile of {list(shape)} needs {inner} B > LB {lb_bytes} B")
    t0 = max(v for v in range(1, shape[0] + 1) if shape[0] % v == 0 and fits(v, 1))
    t1 = max(v for v in range(1, shape[1] + 1) if shape[1] % v == 0 and fits(t0, v))
    return (t0, t1), t0 * t1 * inner


# --------------------------------------------------------------------------------------------
# Instances and ordering (002 §3.3, Algorithm 3)
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Instance:
    """Instance ``index`` of ``f`` of sub-graph ``sg`` split along output dim ``dim`` (002 L133):
    its output box is ``shape`` with dim ``dim`` restricted to ``[index*size/f, (index+1)*size/f)``."""

    sg: str
    index: int
    f: int
    dim: int
    shape: tuple[int, ...]

    @property
    def name(self) -> str:
        return f"{self.sg}{self.index}"

    def box(self) -> tuple[tuple[int, int], ...]:
        """Output box: one half-open range per dim."""
        step = self.shape[self.dim] // self.f
        return tuple((self.index * step, (self.index + 1) * step) if k == self.dim else (0, s)
                     for k, s in enumerate(self.shape))


@dataclass(frozen=True)
class Edge:
    """A sub-graph edge ``producer -> consumer``; ``dim_map[d]``: the producer's output dim that
    the consumer's output dim ``d`` reads one-to-one (``None``: the whole extent)."""

    producer: str
    consumer: str
    dim_map: tuple[int | None, ...]


def build_instances(sgs: Sequence[tuple[str, tuple[int, ...], int, int]]) -> dict[str, list[Instance]]:
    """Split every sub-graph ``(name, out_shape, f, dim)`` into its ``f`` instances (002 L133)."""
    return {name: [Instance(name, i, f, d, tuple(shape)) for i in range(f)] for name, shape, f, d in sgs}


def _footprint(c: Instance, e: Edge, p_shape: tuple[int, ...]) -> tuple[tuple[int, int], ...]:
    """The box of the producer's tensor that consumer instance ``c`` reads."""
    box = [(0, s) for s in p_shape]
    for d, (lo, hi) in enumerate(c.box()):
        m = e.dim_map[d] if d < len(e.dim_map) else None
        if m is not None:
            box[m] = (lo, hi)
    return tuple(box)


def prune_edges(inst: Mapping[str, Sequence[Instance]], edges: Iterable[Edge]
                ) -> tuple[int, list[tuple[Instance, Instance]]]:
    """Inherited and kept instance edges (002 L133; spec §L4): every sub-graph edge gives an
    edge between each producer and each consumer instance (inherited; returned as a count); one
    is kept only when the producer instance's output box intersects the consumer instance's
    input footprint (returned in consumer order). GT-7: stages split 8, 4, 2, 1 along N -> 42
    inherited, 14 kept."""
    inherited = 0
    kept: list[tuple[Instance, Instance]] = []
    for e in edges:
        prods = inst[e.producer]
        inherited += len(prods) * len(inst[e.consumer])
        if not prods:
            continue
        p0 = prods[0]
        step = p0.shape[p0.dim] // p0.f
        for c in inst[e.consumer]:
            lo, hi = _footprint(c, e, p0.shape)[p0.dim]
            if hi <= lo:
                continue
            kept.extend((prods[i], c) for i in range(lo // step, min((hi - 1) // step + 1, len(prods))))
    return inherited, kept


def instance_edges(inst: Mapping[str, Sequence[Instance]], edges: Iterable[Edge]) -> list[tuple[str, str]]:
    """The kept instance edges of :func:`prune_edges` as name pairs for the orderings, compact:
    where a consumer reads every producer instance (its footprint does not restrict the
    producer's split dim) the complete edge set becomes ``p_i -> J -> c_j`` through a join
    ``J = "PRODUCER->CONSUMER"`` (:func:`lifo_order`, :func:`bfs_order` and
    :func:`peak_live_outputs` give the same results as with the direct edges)."""
    out: list[tuple[str, str]] = []
    for e in edges:
        prods, cons = inst[e.producer], inst[e.consumer]
        if not prods or not cons:
            continue
        full = prods[0].dim not in e.dim_map
        if full and len(prods) > 1 and len(cons) > 1:
            j = f"{e.producer}->{e.consumer}"
            out.extend((p.name, j) for p in prods)
            out.extend((j, c.name) for c in cons)
        else:
            out.extend((p.name, c.name) for p, c in prune_edges(inst, [e])[1])
    return out


def concat_count(kept: Iterable[tuple[Instance, Instance]]) -> int:
    """Concats inserted (002 L159): one before each consumer instance with several producer
    instances (GT-7: 7)."""
    prods: dict[str, set[str]] = {}
    for p, c in kept:
        prods.setdefault(c.name, set()).add(p.name)
    return sum(1 for s in prods.values() if len(s) > 1)


def _kahn(names: Sequence[str], edges: Iterable[tuple[str, str]], lifo: bool) -> list[str]:
    """Kahn's algorithm over ``names``; ``lifo`` pops the last ready node, else the first. An
    edge endpoint not in ``names`` is a *join*: never emitted, it releases its successors the
    moment its last producer is emitted (a complete producer x consumer edge set in
    ``p + c`` edges; the order equals that of the direct edges)."""
    known = set(names)
    indeg: dict[str, int] = dict.fromkeys(names, 0)
    succ: dict[str, list[str]] = {n: [] for n in names}
    for a, b in dict.fromkeys(edges):
        indeg[b] = indeg.get(b, 0) + 1
        succ.setdefault(a, []).append(b)
        indeg.setdefault(a, 0)
    ready = deque(n for n in names if indeg[n] == 0)
    out: list[str] = []

    def release(n: str) -> None:
        for t in succ.get(n, ()):
            indeg[t] -= 1
            if indeg[t] == 0:
                if t in known:
                    ready.append(t)
                else:
                    release(t)

    while ready:
        n = ready.pop() if lifo else ready.popleft()
        out.append(n)
        release(n)
    return out


def bfs_order(names: Sequence[str], edges: Iterable[tuple[str, str]]) -> list[str]:
    """Breadth-first (FIFO Kahn) order of the instance graph (002 L138): zero in-degree instances
    in ``names`` order, each newly ready one appended at the end. Edge endpoints not in
    ``names`` are joins (:func:`_kahn`)."""
    return _kahn(names, edges, lifo=False)


def lifo_order(names: Sequence[str], edges: Iterable[tuple[str, str]]) -> list[str]:
    """Algorithm 3 (002 L140; spec §L5 [reconstructed as LIFO]): ``ready`` = zero in-degree
    instances in ``names`` (visit) order; repeatedly pop the **last** ready instance, append it
    to the order, decrement its consumers and append the newly ready ones to ``ready``. GT-8:
    A7 A6 B3 A5 A4 B2 C1 A3 A2 B1 A1 A0 B0 C0 D0. Edge endpoints not in ``names`` are joins
    (:func:`_kahn`)."""
    return _kahn(names, edges, lifo=True)


def peak_live_outputs(order: Sequence[str], edges: Iterable[tuple[str, str]],
                      size: Mapping[str, int]) -> int:
    """Peak live instance-output bytes of an order (spec §L5 [param]: the seed does not define
    the metric): while instance ``k`` runs, its output and every earlier output with a consumer
    at step >= ``k`` are live. GT-8 (each ``s`` bytes): BFS 9s, DFS 5s. A join (an endpoint
    not in ``order``, :func:`_kahn`) passes on the last position of its consumers, which must be
    instances."""
    pos = {n: k for k, n in enumerate(order)}
    last = {n: pos[n] for n in order}
    edges = list(edges)
    join_last: dict[str, int] = {}
    for a, b in edges:
        if a not in pos:
            join_last[a] = max(join_last.get(a, -1), pos[b])
    for a, b in edges:
        if a in pos:
            last[a] = max(last[a], pos[b] if b in pos else join_last.get(b, -1))
    delta = [0] * (len(order) + 1)
    for n in order:
        delta[pos[n]] += size[n]
        delta[last[n] + 1] -= size[n]
    peak = live = 0
    for k in range(len(order)):
        live += delta[k]
        peak = max(peak, live)
    return peak


def choose_order(names: Sequence[str], edges: Sequence[tuple[str, str]], size: Mapping[str, int]
                 ) -> tuple[str, list[str], int, int]:
    """Both orders of 002 L138 and the one with the lower peak (DFS on a tie, the seed's
    Algorithm 3): ``(kind, order, peak_dfs, peak_bfs)``."""
    dfs, bfs = lifo_order(names, edges), bfs_order(names, edges)
    pd, pb = peak_live_outputs(dfs, edges, size), peak_live_outputs(bfs, edges, size)
    return ("dfs", dfs, pd, pb) if pd <= pb else ("bfs", bfs, pd, pb)


# --------------------------------------------------------------------------------------------
# Binding and scope (002 §3.4-3.5, Algorithm 4)
# --------------------------------------------------------------------------------------------


def plain_binding(shape: Sequence[int], cores: int = 8, skip: Iterable[int] = ()) -> tuple[int, ...]:
    """The plain binding strategy (002 L151; spec §L6 [reconstructed]): outer to inner dims,
    each gets the first of 8, 4, 2, 1 that divides its extent and the still unassigned cores
    (``cores`` a power of two); dims in ``skip`` must not be bound (factor 1). GT-9 (8 cores):
    [1,64,56,56] -> (1,8,1,1); [2,3,56,56] -> (2,1,4,1); skipping C -> (1,1,8,1)."""
    left = cores
    out = []
    no = set(skip)
    for d, size in enumerate(shape):
        f = 1
        if d not in no:
            f = next(v for v in (8, 4, 2, 1) if v <= left and left % v == 0 and size % v == 0)
        out.append(f)
        left //= f
    return tuple(out)


def mesh_binding(shape: Sequence[int], rows: int = 8, cols: int = 8, skip: Iterable[int] = ()
                 ) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """Binding on the 8x8 mesh (002 L319, spec §N: factors per mesh axis in {8, 4, 2, 1}
    [reconstructed]): a plain binding over the ``rows`` mesh rows, then one of the remaining
    extents over the ``cols`` columns. Returns ``(row_factors, col_factors)``."""
    r = plain_binding(shape, rows, skip)
    c = plain_binding([s // f for s, f in zip(shape, r)], cols, skip)
    return r, c


@dataclass(frozen=True)
class Move:
    """A data-movement op inserted before a consumer (002 L159-164): ``copy`` (scope GB -> LB)
    or ``redistribute`` to ``binding`` (the per-dim minimum of both factors)."""

    kind: str
    consumer: int
    binding: tuple[int, ...] = ()


@dataclass(frozen=True)
class ScopeDecision:
    """Algorithm 4's result for one producer: its binding, its output's scope (``LB`` or ``GB``;
    GB is DDR on SW26010, spec §N) and the moves before its consumers."""

    binding: tuple[int, ...]
    scope: str
    moves: tuple[Move, ...]


def _compatible(a: Sequence[int], b: Sequence[int]) -> bool:
    return all((x > 1) == (y > 1) for x, y in zip(a, b))


def infer_scope(consumer_bindings: Sequence[tuple[int, ...]]) -> ScopeDecision:
    """Binding and scope of a producer from its consumers' inferred bindings, visited in reverse
    schedule order (Algorithm 4 lines 8-16, 002 L153-155; spec §L6-7 [reconstructed]): the first
    is taken; a later one binding the same dims keeps the binding using more cores; one binding
    other dims is a conflict: the producer's output goes to GB, every consumer gets a ``copy``
    (GB -> LB) and those whose binding differs a ``redistribute`` to the per-dim minimum. GT-10:
    consumers (1,1,8,1) and (1,8,1,1) -> GB plus moves; one consumer -> LB, no moves."""
    if not consumer_bindings:
        raise ValueError("graphturbo: infer_scope needs at least one consumer binding")
    bind = consumer_bindings[0]
    conflict = False
    for b in consumer_bindings[1:]:
        if _compatible(bind, b):
            bind = max(bind, b, key=math.prod)
        else:
            conflict = True
    if not conflict:
        return ScopeDecision(bind, "LB", ())
    moves: list[Move] = []
    for k, b in enumerate(consumer_bindings):
        moves.append(Move("copy", k))
        if b != bind:
            moves.append(Move("redistribute", k, tuple(min(x, y) for x, y in zip(bind, b))))
    return ScopeDecision(bind, "GB", tuple(moves))


def redistribute_route(src: int, dst: int, cols: int = 8) -> str:
    """How a ``redistribute`` between two CPEs lowers on SW26010 (spec §L7, §N): ``row-rlc`` when
    both are in one mesh row, ``col-rlc`` in one column (register communication, 004 L460),
    ``memory`` otherwise (CPE ids row-major, ``cols`` per row)."""
    if src // cols == dst // cols:
        return "row-rlc"
    if src % cols == dst % cols:
        return "col-rlc"
    return "memory"


# --------------------------------------------------------------------------------------------
# Memory reuse, stitching, prefetch (002 §4.2-4.4)
# --------------------------------------------------------------------------------------------


def spill(lifetimes: Mapping[str, tuple[int, int]], sizes: Mapping[str, int], t: int, lb_bytes: int,
          policy: str = "longest") -> list[str]:
    """Tensors spilled at step ``t`` (002 L197-202; spec §L10): while the tensors live at ``t``
    (``lo <= t <= hi``) exceed ``lb_bytes``, spill the one with the longest lifetime
    (``policy="longest"``, the seed's rule) or the largest (``"largest"``, kept for ablation);
    ties by name. GT-11: T1 [0,10] 16 KiB, T2 [1,6] 24 KiB, T3 [3,4] 40 KiB, t = 3, 64 KiB ->
    longest spills [T1], largest spills [T3]. ``ValueError`` for an unknown policy."""
    if policy not in ("longest", "largest"):
        raise ValueError(f"graphturbo: spill policy must be 'longest' or 'largest', got {policy!r}")
    live = sorted(n for n, (lo, hi) in lifetimes.items() if lo <= t <= hi)
    out: list[str] = []
    while sum(sizes[n] for n in live) > lb_bytes and live:
        if policy == "longest":
            v = max(live, key=lambda n: (lifetimes[n][1] - lifetimes[n][0], n))
        else:
            v = max(live, key=lambda n: (sizes[n], n))
        live.remove(v)
        out.append(v)
    return out


@dataclass(frozen=True)
class StitchTraffic:
    """DDR traffic of a group (bytes) run as per-layer kernels vs one stitched kernel."""

    per_layer_bytes: int
    stitched_bytes: int
    kernels_per_layer: int
    kernels_stitched: int


def stitch_traffic(nodes: Sequence[Node], outputs: Iterable[str] = ()) -> StitchTraffic:
    """Buffer stitching as a traffic model (002 L193; spec §L9): per-layer, every op is a kernel
    that reads its inputs from and writes its result to DDR; stitched, intermediates stay in LB,
    so DDR sees each external input once and each result that leaves the group (used outside or
    named in ``outputs``; the last op's result always leaves). Weights excluded. GT-13:
    relu -> relu on [1,64,32,32] fp16 (128 KiB) -> 512 KiB vs 256 KiB, kernels 2 -> 1."""
    order = _topo(nodes)
    names = {n.name for n in order}
    per_layer = sum(sum(n.in_bytes) + n.out_bytes for n in order)
    ext: dict[str, int] = {}
    for n in order:
        for i, b in zip(n.inputs, n.in_bytes):
            if i not in names:
                ext[i] = b
    leaving = set(outputs) | {order[-1].name}
    stitched = sum(ext.values()) + sum(n.out_bytes for n in order if n.name in leaving)
    return StitchTraffic(per_layer, stitched, len(order), 1)


@dataclass(frozen=True)
class PrefetchLayer:
    """One layer for :func:`prefetch_time`: its compute time, its weight DMA time (any unit,
    the same for all layers) and whether LB holds its weights together with the previous
    layer's (the double-buffered weight buffer of 002 L206)."""

    compute: float
    weight_dma: float = 0.0
    fits_with_previous: bool = True


def prefetch_time(layers: Sequence[PrefetchLayer]) -> tuple[float, float]:
    """Cross-layer weight prefetch (002 L204-209; spec §L11): ``(serial, overlapped)``. Serial:
    every layer loads its weights, then computes. Overlapped: layer ``i+1``'s weight DMA runs
    during layer ``i``'s compute when LB holds both (``max(compute_i, dma_{i+1})``), else after it.
    GT-14: L1 100, L2 DMA 80 + 100 -> 280 vs 200; DMA 150 -> 350 vs 250; not fitting -> serial."""
    serial = sum(l.weight_dma + l.compute for l in layers)
    if not layers:
        return 0.0, 0.0
    t = layers[0].weight_dma
    for cur, nxt in zip(layers, list(layers[1:]) + [None]):
        if nxt is None:
            t += cur.compute
        elif nxt.fits_with_previous:
            t += max(cur.compute, nxt.weight_dma)
        else:
            t += cur.compute + nxt.weight_dma
    return serial, t

