"""GraphTurbo's graph-level model (:mod:`taihu.backends.model.graphturbo`): the regression values
GT-1..GT-15 of reproduction-targets.md T9 (seed 002), each an exact assertion. GT-6 and GT-15
run the ``graph-group`` pass on ``graph`` modules."""

from __future__ import annotations

import pytest
from xdsl.dialects import func
from xdsl.dialects.builtin import IntegerAttr, ModuleOp
from xdsl.parser import Parser

from taihu.backends.model import graphturbo as gt
from taihu.passes.graph.group import GraphGroupPass, graph_nodes
from taihu.passes.pipelines import default_context

KIB = 1024


def ew(name: str, inputs: tuple[str, ...], shape: tuple[int, ...], eb: int = 2,
       in_bytes: tuple[int, ...] | None = None, kind: str = "relu", param: bool = False) -> gt.Node:
    """An element-wise node: every output dim reads the same dim of every input."""
    size = eb
    for s in shape:
        size *= s
    ident = tuple(range(len(shape)))
    return gt.Node(name, kind, inputs, in_bytes or tuple(size for _ in inputs), shape, eb,
                   tuple(ident for _ in inputs), param)


# GT-1 ----------------------------------------------------------------------------------------

def test_gt1_best_split() -> None:
    info = [gt.SplitEntry(True, 3, 8, 0), gt.SplitEntry(True, 5, 16, 1),
            gt.SplitEntry(True, 5, 8, 2), gt.SplitEntry(True, 5, 8, 3)]
    assert gt.best_split(info) == gt.SplitEntry(True, 5, 8, 2)
    assert gt.best_split([gt.SplitEntry(False, 0, 1, 0)]) is None


# GT-2 ----------------------------------------------------------------------------------------

def test_gt2_split_info_relu() -> None:
    relu = [ew("r", ("x",), (8, 16, 32, 32))]
    assert gt.peak_live_bytes(relu) == 512 * KIB
    assert gt.candidate_factors(8) == [1, 2, 4, 8]
    # d0: v = 1, 2, 4 need 512, 256, 128 KiB > 64 KiB; v = 8 needs exactly 64 KiB
    info = gt.split_info(relu, 64 * KIB)
    assert info[0] == gt.SplitEntry(True, 1, 8, 0)
    assert gt.best_split(info) == gt.SplitEntry(True, 1, 8, 0)
    # one byte less: d0 has no valid v
    assert all(e.d != 0 for e in gt.split_info(relu, 64 * KIB - 1))


# GT-3 ----------------------------------------------------------------------------------------

STAGES = [(8, 32, 64, 64), (8, 64, 32, 32), (8, 128, 16, 16), (8, 256, 8, 8)]


def _stage_chain() -> list[gt.Node]:
    """Four stages as sub-graphs whose tensors all have the stage's shape (the stage's peak is
    in + out of its shape, fp16); stage k reads stage k-1."""
    nodes = []
    prev = "x"
    for k, s in enumerate(STAGES):
        nodes.append(ew("ABCD"[k], (prev,), s))
        prev = "ABCD"[k]
    return nodes


def test_gt3_stages() -> None:
    lb = 8 * 64 * KIB
    bests = [gt.best_split(gt.split_info([ew("s", ("x",), s)], lb)) for s in STAGES]
    assert [(e.d, e.f) for e in bests if e] == [(0, 8), (0, 4), (0, 2), (0, 1)]
    # rule (i)(a) refuses every stage boundary: the factor decreases
    assert not any(gt.straight_ok(a.f, b.f, b.f) for a, b in zip(bests, bests[1:]) if a and b)
    grouping = gt.group_graph(_stage_chain(), lb)
    assert grouping.groups == (("A",), ("B",), ("C",), ("D",))
    assert [(e.d, e.f) for e in grouping.splits if e] == [(0, 8), (0, 4), (0, 2), (0, 1)]


# GT-4 ----------------------------------------------------------------------------------------

def test_gt4_patterns() -> None:
    # A -> B alone: straight
    assert gt.find_straight({0: set(), 1: {0}}, {0: {1}, 1: set()}) == [(0, 1)]
    # A -> B plus A -> C: no straight(A, B)
    prod = {0: set(), 1: {0}, 2: {0}}
    cons = {0: {1, 2}, 1: set(), 2: set()}
    assert gt.find_straight(prod, cons) == []
    # A -> B, A -> C, B -> D, C -> D: diamond, merge {B, C, D}
    prod = {0: set(), 1: {0}, 2: {0}, 3: {1, 2}}
    cons = {0: {1, 2}, 1: {3}, 2: {3}, 3: set()}
    assert gt.find_diamond(prod, cons) == [(0, (1, 2), 3)]
    nodes = [ew("A", ("x",), (1, 8)), ew("B", ("A",), (1, 8)), ew("C", ("A",), (1, 8)),
             ew("D", ("B", "C"), (1, 8), kind="add")]
    # f = 1 everywhere (LB large), merges allowed: the diamond joins B, C, D; A is then straight
    g = gt.group_graph(nodes, 1 << 20)
    assert g.groups == (("A", "B", "C", "D"),)
    # X -> conv -> add, X -> add: branch, merge {conv, add}
    prod = {0: set(), 1: {0}, 2: {0, 1}}
    cons = {0: {1, 2}, 1: {2}, 2: set()}
    assert gt.find_branch(prod, cons) == [(1, 2)]
    assert gt.find_straight(prod, cons) == []


# GT-5 ----------------------------------------------------------------------------------------

def test_gt5_merge_rules() -> None:
    assert not gt.straight_ok(8, 4, 4)  # (i)(a)
    assert gt.straight_ok(4, 8, 8)
    assert not gt.straight_ok(4, 8, 16)  # (i)(b)
    assert gt.diamond_ok(4, 4, 8, 8)
    assert not gt.diamond_ok(4, 4, 8, 16)


# GT-7 ----------------------------------------------------------------------------------------

def _gt7() -> tuple[dict[str, list[gt.Instance]], int,
                    list[tuple[gt.Instance, gt.Instance]]]:
    inst = gt.build_instances([(n, s, f, 0) for n, s, f in zip("ABCD", STAGES, (8, 4, 2, 1))])
    ident = (0, None, None, None)  # N one-to-one; a stage reads whole C, H, W of its input
    edges = [gt.Edge(a, b, ident) for a, b in ("AB", "BC", "CD")]
    inherited, kept = gt.prune_edges(inst, edges)
    return inst, inherited, kept


def test_gt7_instances() -> None:
    inst, inherited, kept = _gt7()
    assert sum(len(v) for v in inst.values()) == 15
    assert inherited == 42
    assert len(kept) == 14
    assert sorted((p.name, c.name) for p, c in kept if c.sg == "B") == [
        ("A0", "B0"), ("A1", "B0"), ("A2", "B1"), ("A3", "B1"),
        ("A4", "B2"), ("A5", "B2"), ("A6", "B3"), ("A7", "B3")]
    assert gt.concat_count(kept) == 7
    # scope and binding agree (one consumer per producer instance): no copies, no redistributes
    cons: dict[str, int] = {}
    for p, _ in kept:
        cons[p.name] = cons.get(p.name, 0) + 1
    assert all(gt.infer_scope([(1, 8, 1, 1)] * n).moves == () for n in cons.values())


# GT-8 ----------------------------------------------------------------------------------------

def test_gt8_ordering() -> None:
    inst, _, kept = _gt7()
    names = gt.bfs_order([i.name for v in inst.values() for i in v],
                         [(p.name, c.name) for p, c in kept])
    edges = [(p.name, c.name) for p, c in kept]
    assert names == [f"A{i}" for i in range(8)] + [f"B{i}" for i in range(4)] + ["C0", "C1", "D0"]
    lifo = gt.lifo_order(names, edges)
    assert lifo == "A7 A6 B3 A5 A4 B2 C1 A3 A2 B1 A1 A0 B0 C0 D0".split()
    assert [k + 1 for k, n in enumerate(lifo) if n[0] == "B"] == [3, 6, 10, 13]
    assert [k + 1 for k, n in enumerate(lifo) if n[0] == "C"] == [7, 14]
    assert [k + 1 for k, n in enumerate(lifo) if n[0] == "D"] == [15]
    s = 1000
    size = dict.fromkeys(names, s)
    assert gt.peak_live_outputs(names, edges, size) == 9 * s
    assert gt.peak_live_outputs(lifo, edges, size) == 5 * s
    kind, order, pd, pb = gt.choose_order(names, edges, size)
    assert (kind, order, pd, pb) == ("dfs", lifo, 5 * s, 9 * s)


def test_joins_give_the_same_orders() -> None:
    """A consumer reading every producer instance: the join form of instance_edges orders and
    measures exactly like the complete direct edge set."""
    inst = gt.build_instances([("A", (8, 4), 4, 0), ("B", (8, 4), 2, 1), ("C", (8, 4), 2, 0)])
    edges = [gt.Edge("A", "B", (None, 1)), gt.Edge("B", "C", (0, None)), gt.Edge("A", "C", (0, None))]
    direct = [(p.name, c.name) for p, c in gt.prune_edges(inst, edges)[1]]
    joined = gt.instance_edges(inst, edges)
    assert ("A->B" in {b for _, b in joined}) and len(joined) < len(direct)
    names = [i.name for v in inst.values() for i in v]
    size = {n: 10 + k for k, n in enumerate(names)}
    for order in (gt.lifo_order, gt.bfs_order):
        o = order(names, direct)
        assert order(names, joined) == o
        assert gt.peak_live_outputs(o, joined, size) == gt.peak_live_outputs(o, direct, size)
    assert gt.choose_order(names, joined, size) == gt.choose_order(names, direct, size)


# GT-9, GT-10 ---------------------------------------------------------------------------------

def test_gt9_plain_binding() -> None:
    assert gt.plain_binding((1, 64, 56, 56), 8) == (1, 8, 1, 1)
    assert gt.plain_binding((2, 3, 56, 56), 8) == (2, 1, 4, 1)
    assert gt.plain_binding((1, 64, 56, 56), 8, skip=(1,)) == (1, 1, 8, 1)
    # the 8x8 mesh: rows then columns
    assert gt.mesh_binding((1, 64, 56, 56)) == ((1, 8, 1, 1), (1, 8, 1, 1))


def test_gt10_scope() -> None:
    d = gt.infer_scope([(1, 1, 8, 1), (1, 8, 1, 1)])
    assert d.scope == "GB"
    assert d.binding == (1, 1, 8, 1)
    assert d.moves == (gt.Move("copy", 0), gt.Move("copy", 1),
                       gt.Move("redistribute", 1, (1, 1, 1, 1)))
    assert gt.infer_scope([(1, 8, 1, 1)]) == gt.ScopeDecision((1, 8, 1, 1), "LB", ())
    # same dims bound: keep the binding using more cores, no moves
    assert gt.infer_scope([(1, 4, 1, 1), (1, 8, 1, 1)]) == gt.ScopeDecision((1, 8, 1, 1), "LB", ())
    assert [gt.redistribute_route(0, b) for b in (7, 56, 9)] == ["row-rlc", "col-rlc", "memory"]


# GT-11 ---------------------------------------------------------------------------------------

def test_gt11_spill() -> None:
    life = {"T1": (0, 10), "T2": (1, 6), "T3": (3, 4)}
    size = {"T1": 16 * KIB, "T2": 24 * KIB, "T3": 40 * KIB}
    assert sum(size.values()) == 80 * KIB
    assert gt.spill(life, size, 3, 64 * KIB) == ["T1"]
    assert gt.spill(life, size, 3, 64 * KIB, policy="largest") == ["T3"]
    assert gt.spill(life, size, 8, 64 * KIB) == []
    with pytest.raises(ValueError, match="spill policy"):
        gt.spill(life, size, 3, 64 * KIB, policy="lru")


# GT-12 ---------------------------------------------------------------------------------------

def test_gt12_anchor_and_tile() -> None:
    assert gt.anchor_of(["conv2d", "batch_norm", "relu"]) == 0
    assert gt.anchor_of(["add", "relu"]) == 1
    assert 56 * 56 * 2 * 2 == 12544
    assert gt.anchor_tile((4, 64, 56, 56), 2, 2, 64 * KIB) == ((4, 1), 50176)
    with pytest.raises(ValueError, match="tile"):
        gt.anchor_tile((4, 64, 560, 560), 2, 2, 64 * KIB)


# GT-13 ---------------------------------------------------------------------------------------

def test_gt13_stitching_traffic() -> None:
    shape = (1, 64, 32, 32)
    nodes = [ew("r1", ("x",), shape), ew("r2", ("r1",), shape)]
    assert nodes[0].out_bytes == 128 * KIB
    assert gt.stitch_traffic(nodes) == gt.StitchTraffic(512 * KIB, 256 * KIB, 2, 1)


# GT-14 ---------------------------------------------------------------------------------------

def test_gt14_prefetch() -> None:
    L = gt.PrefetchLayer
    assert gt.prefetch_time([L(100), L(100, 80)]) == (280, 200)
    assert gt.prefetch_time([L(100), L(100, 150)]) == (350, 250)
    assert gt.prefetch_time([L(100), L(100, 80, fits_with_previous=False)]) == (280, 280)


# GT-6, GT-15: ResNet blocks as graph modules ---------------------------------------------------

def resnet_blocks(n_identity: int, c_in: int = 8, c_mid: int = 4, c_out: int = 8, hw: int = 8) -> str:
    """MLIR text of a ResNet conv block (+ ``n_identity`` identity blocks): conv -> batch_norm ->
    relu layers, the shortcut conv -> batch_norm, add -> relu; batch 1, f32, stride 1."""
    lines: list[str] = []
    k = [0]

    def t(c: int) -> str:
        return f"tensor<1x{c}x{hw}x{hw}xf32>"

    def fresh(p: str) -> str:
        k[0] += 1
        return f"%{p}{k[0]}"

    def conv_bn(x: str, ci: int, co: int, ks: int, relu: bool) -> str:
        w, s, c, b = fresh("w"), fresh("s"), fresh("c"), fresh("b")
        pad = ks // 2
        lines.append(f"  {w} = graph.constant dense<0.5> : tensor<{co}x{ci}x{ks}x{ks}xf32>")
        lines.append(f"  {s} = graph.constant dense<1.0> : tensor<{co}xf32>")
        lines.append(f"  {c} = graph.conv2d {x}, {w} {{pads = array<i64: {pad}, {pad}, {pad}, {pad}>}} "
                     f": ({t(ci)}, tensor<{co}x{ci}x{ks}x{ks}xf32>) -> {t(co)}")
        lines.append(f"  {b} = graph.batch_norm {c}, {s}, {s}, {s}, {s} : ({t(co)}, tensor<{co}xf32>, "
                     f"tensor<{co}xf32>, tensor<{co}xf32>, tensor<{co}xf32>) -> {t(co)}")
        if not relu:
            return b
        r = fresh("r")
        lines.append(f"  {r} = graph.relu {b} : {t(co)} -> {t(co)}")
        return r

    def block(x: str, ci: int, shortcut: bool) -> str:
        m = conv_bn(x, ci, c_mid, 1, True)
        m = conv_bn(m, c_mid, c_mid, 3, True)
        m = conv_bn(m, c_mid, c_out, 1, False)
        sc = conv_bn(x, ci, c_out, 1, False) if shortcut else x
        a, r = fresh("a"), fresh("r")
        lines.append(f"  {a} = graph.add {m}, {sc} : ({t(c_out)}, {t(c_out)}) -> {t(c_out)}")
        lines.append(f"  {r} = graph.relu {a} : {t(c_out)} -> {t(c_out)}")
        return r

    y = block("%x", c_in, True)
    for _ in range(n_identity):
        y = block(y, c_out, False)
    head = f"func.func @main(%x: {t(c_in)}) -> {t(c_out)} {{"
    return "\n".join([head, *lines, f"  func.return {y} : {t(c_out)}", "}"]) + "\n"


def _module(text: str) -> ModuleOp:
    return Parser(default_context(), text).parse_module()


def _func(m: ModuleOp) -> func.FuncOp:
    return next(o for o in m.walk() if isinstance(o, func.FuncOp))


def test_gt6_resnet_conv_and_identity_block() -> None:
    m = _module(resnet_blocks(1))
    nodes, ops, returned = graph_nodes(list(_func(m).body.block.ops))
    g = gt.group_graph(nodes, 64 * 57344, 8, returned)
    kinds = [[ops[n].name.removeprefix("graph.") for n in grp] for grp in g.after_straight]
    main = ["conv2d", "batch_norm", "relu"] * 2 + ["conv2d", "batch_norm"]
    # intermediate: {3-layer main path}, {shortcut}, {ReLU}, {3 convs}, {ReLU}
    assert kinds == [main, ["conv2d", "batch_norm"], ["add", "relu"], main, ["add", "relu"]]
    assert len({e.f for e in g.splits if e}) == 1  # equal f
    assert len(g.groups) == 1 and len(g.groups[0]) == len(nodes) == 22
    # the pass annotates the same: one group, 9 layers
    GraphGroupPass().apply(default_context(), m)
    annotated = [o for o in _func(m).body.block.ops if "taihu.group" in o.attributes]
    assert {o.attributes["taihu.group"] for o in annotated} == {IntegerAttr(0, 64)}
    assert len({o.attributes["taihu.group_layer"] for o in annotated}) == 9


def test_gt15_b3_instance() -> None:
    m = _module(resnet_blocks(3))
    nodes, ops, returned = graph_nodes(list(_func(m).body.block.ops))
    layers = gt.graph_layers(nodes)
    assert len(layers) == 5 + 3 * 4 == 17
    assert sum(1 for n in nodes if n.kind == "conv2d") == 13
    # per-layer: one kernel per layer; grouped: one sub-graph for the whole b3 instance
    assert len(gt.group_graph(nodes, 64 * 57344, 8, returned).groups) == 1
    GraphGroupPass().apply(default_context(), m)
    fn = _func(m)
    assert {o.attributes["taihu.group"] for o in fn.body.block.ops if "taihu.group" in o.attributes} \
        == {IntegerAttr(0, 64)}
    assert sum(1 for o in fn.body.block.ops if "taihu.anchor" in o.attributes) == 17
