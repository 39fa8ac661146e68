"""Register micro-kernels of the mesh GEMM: ``loop.summa_step``, ``loop.gemm_block``,
``loop.rlc_bcast`` -> ``sw.microkernel`` runs (004 §4.1, Algorithm 2, Listing 4.1;
algorithms.md §A2-§A6).

Register tile (§A3, 004 L777): 4 vector registers V0..V3 (r16..r19) of the vector-loaded
operand (16 elements along the vectorised dim) x 4 replicated scalars S0..S3 (r20..r23) of the
other operand (4 elements along the other dim) -> 16 accumulators C(4b + a) = r(4b + a) (row b
of the other dim, lanes 4a..4a+3 of the vectorised dim). r24..r29 are the address/counter
registers of Listing 4.1 (timed, no numeric effect), r31 reads 0.

Operand geometry (:class:`Geometry`, bytes): the vector operand V (A when vectorising M, stored
(k, m) = ``trans_a``; B when vectorising N, stored (k, n)) advances ``v_k`` per k; the scalar
operand S (the other one, either storage) advances ``s_k`` per k and ``s_o`` per element of the
other dim; C is stored with the vectorised dim contiguous (``trans_c`` for M), rows ``c_row``
apart. Pointers of every run: p0 = V tile, p1 = S tile, p2 = C tile.

k-loop body (:func:`listing41`): 004 Listing 4.1 with corrected lines 11-12 (algorithms.md §A6):
16 VMAD on P0, 8 FETCH + 5 ADD + SUBW + NOP + BGT on P1 = 16 cycles per k-step, EE = 100 %.
FETCH expands per role (004 L792): the CPE that broadcasts V at this step uses the fused
load-and-send of the scheme (VLDC/VLDR, Table 4.1), the CPE that broadcasts S uses LDDEC/LDDER,
the receivers GETC/GETR; ``loop.gemm_block`` uses plain VLDD/LDDE (f64, VMAD) or VLDS/LDSE (f32,
VMAS). The body is software-pipelined: each iteration fetches V3/S3 of its own k and V0-2/S0-2 of
the next one.

Runs (each ``sw.microkernel`` run costs simulator Python time, so runs are few and long):

* ``loop.summa_step`` inside ``scf.for %T`` whose body is only that op (the usual form, and
  ``examples/sw/mesh_gemm.py``): the 8 steps are fused per register tile with C kept in
  registers: P (load C + first FETCHes of the first step), then per step a k-loop run of k
  iterations with the role of that step (its last iteration fetches one k past the block: the
  senders send it and the receivers receive it, so the message counts match; the values are
  overwritten) and, between steps, a run with the first FETCHes of the next step; after the
  last step one run stores C and loads the next tile's C with its first FETCHes (the last tile
  only stores). 2 x steps runs per tile. The over-read stays inside the 64 KB LDM (checked: the
  kernel's LDM footprint + one k-row <= ldm_bytes, else a diagnostic).
* a single ``loop.summa_step``: the same with one step (2 runs per tile).
* ``loop.gemm_block``: per strip of tiles, P (C + first k of the first tile), then per tile k - 1
  iterations and one run with the last k (without next-k fetches) + store C + the next tile's C
  and first fetches (the strip's last tile: last k + store C): 2 runs per tile, no over-read.
  Partial register tiles (vectorised dim % 16 != 0, other dim % 4 != 0) use a generic body
  (:func:`generic_body`).
* ``loop.rlc_bcast``: one run per role: the root streams the source with VLDR/VLDC (fused load
  and broadcast, 32 B per message, 004 L763-765) and stores its own copy; the others GETR/GETC +
  VSTD. Up to 4 messages per iteration.

Step boundaries cost ~28 cycles per tile: a run starts when every GET of it finds its message
(RLC latency 11 cycles, 004 L496), and the CPEs that broadcast A at step T receive B in the same
run, so the last receivers start two hops after the CPE (T, T). Merging the last k-step of step
t with the first FETCHes of step t + 1 into one run would make the runs of consecutive senders
wait for each other's messages (a deadlock of the run-level model), so the first FETCHes stay a
run of their own.

Roles: the CPE in mesh row T (column axis) / column T (row axis) sends at step T (algorithms.md
§A2, :func:`taihu.dialects.common.scheme_info`); ``scf.if`` on ``sw.row_id``/``sw.col_id``
selects one of the 4 role variants (004 L792).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from xdsl.dialects import arith, scf
from xdsl.dialects.builtin import DenseArrayBase, StringAttr, i64
from xdsl.ir import Block, Operation, Region, SSAValue
from xdsl.utils.exceptions import DiagnosticException

from taihu.dialects import loop, sw
from taihu.dialects.common import VecDim, scheme_info

from .builder import SwKernelBuilder
from .common import cmpi, int_attr, int_binop

__all__ = ["Geometry", "TileRegs", "big_tile_body", "geometry", "gemm_block_strips", "generic_body", "listing41", "lower", "tile_regs",
           "try_fuse_summa_loop"]

REG_C = tuple(range(16))
REG_V = (16, 17, 18, 19)
REG_S = (20, 21, 22, 23)
LDM_V, LDM_V_P, LDM_S, RK, RM, CK = 24, 25, 26, 27, 28, 29
#: registers a ``generic_body`` tile may use for its accumulators and operands: every register but
#: the address/counter registers of the generic body (LDM_V, LDM_S, RK, RM, CK; LDM_V_P only serves
#: Listing 4.1) and r31 (zero)
TILE_POOL = (*range(24), LDM_V_P, 30)


@dataclass(frozen=True)
class TileRegs:
    """Registers of an ``nv`` x ``ns`` register tile: accumulator of (row b, vector a) =
    ``c[b * nv + a]``, vector registers ``v[a]``, scalars ``s[b]``. Tiles of at most 4 x 4 use
    Listing 4.1's registers (C(4b + a), V0..V3, S0..S3); the wide (nv > 4) and tall (ns > 4)
    tiles of the remainder strips (:func:`gemm_block_strips`) take them from :data:`TILE_POOL`."""

    nv: int
    ns: int
    c: tuple[int, ...]
    v: tuple[int, ...]
    s: tuple[int, ...]

    def acc(self, b: int, a: int) -> int:
        return self.c[b * self.nv + a]


def tile_regs(nv: int, ns: int) -> TileRegs:
    """The :class:`TileRegs` of an ``nv`` x ``ns`` tile; ValueError when it needs more than the
    :data:`TILE_POOL` (nv * ns + nv + ns registers)."""
    if nv <= 4 and ns <= 4:
        return TileRegs(nv, ns, tuple(REG_C[4 * b + a] for b in range(ns) for a in range(nv)), REG_V[:nv], REG_S[:ns])
    n_acc = nv * ns
    if n_acc > 16 or n_acc + nv + ns > len(TILE_POOL):
        raise ValueError(f"a {nv} x {ns} register tile needs {n_acc + nv + ns} registers (at most {len(TILE_POOL)}, "
                         f"16 accumulators)")
    return TileRegs(nv, ns, TILE_POOL[:n_acc], TILE_POOL[n_acc:n_acc + nv], TILE_POOL[n_acc + nv:n_acc + nv + ns])

Fetch = Callable[[int, int, "int | None"], Operation]


@functools.cache
def _strides_attr(strides: tuple[int, ...]) -> DenseArrayBase:
    return DenseArrayBase.from_list(i64, list(strides))


@functools.cache
def _name_attr(name: str) -> StringAttr:
    return StringAttr(name)


def _ins(cls: type[sw.RegInstr], **fields: int | None) -> Operation:
    """A register instruction. :func:`taihu.dialects.sw.new_instr` skips IRDL's constructor
    checks and ``Operation.__init__``'s empty bookkeeping (the fields are plain integers set by
    this module; the module is verified after the pass)."""
    return sw.new_instr(cls, {k: int_attr(v) for k, v in fields.items() if v is not None})


def _err(op: Operation, msg: str) -> DiagnosticException:
    return DiagnosticException(f"convert-loop-to-sw: '{op.name}': {msg}")


# --------------------------------------------------------------------------------------------
# Geometry
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Geometry:
    """Byte geometry of a local GEMM ``C += A x B`` with one dim vectorised (module docstring)."""

    eb: int  # element bytes of C (and of the FMA): 8 (f64, vmad) or 4 (f32, vmas)
    vlen: int  # local vectorised dim
    olen: int  # local other dim
    k: int
    v_k: int  # bytes between consecutive k of V
    s_k: int  # bytes between consecutive k of S
    s_o: int  # bytes between consecutive other-dim elements of S
    c_row: int  # bytes between rows (other dim) of C
    v_eb: int = 0  # element bytes of V / S when they differ from C's (mixed: f32 operands of an
    s_eb: int = 0  # fp64 C, widened by the VLDS / LDSE loads); 0 = eb

    @property
    def g(self) -> int:
        """Bytes of one vector register's elements of C (4 lanes)."""
        return 4 * self.eb

    @property
    def gv(self) -> int:
        """Bytes of one vector register's elements of V (4 lanes)."""
        return 4 * (self.v_eb or self.eb)

    @property
    def f64(self) -> bool:
        return self.eb == 8

    @property
    def v_f64(self) -> bool:
        return (self.v_eb or self.eb) == 8

    @property
    def s_f64(self) -> bool:
        return (self.s_eb or self.eb) == 8


def geometry(vec: VecDim, flags: tuple[bool, bool, bool], a: loop.LdmBufType, b: loop.LdmBufType,
             c: loop.LdmBufType, op: Operation) -> Geometry:
    """Geometry of ``op`` (a summa_step / gemm_block) from its buffer types and trans flags."""
    ta, tb, tc = flags
    m, n, k = loop._gemm_dims(op, ta, tb, tc, a, b, c)  # noqa: SLF001 - the dialect's shape rule
    eb, ea, ebb = c.elem_bytes, a.elem_bytes, b.elem_bytes
    if vec == VecDim.M:
        if not ta or not tc:
            raise _err(op, "vectorising M needs A stored (k, m) and C stored (n, m) (trans_a, trans_c)")
        s_k, s_o = (ebb, k * ebb) if tb else (n * ebb, ebb)
        return Geometry(eb, m, n, k, m * ea, s_k, s_o, m * eb, ea, ebb)
    if tb or tc:
        raise _err(op, "vectorising N needs B stored (k, n) and C stored (m, n) (no trans_b, no trans_c)")
    s_k, s_o = (m * ea, ea) if ta else (ea, k * ea)
    return Geometry(eb, n, m, k, n * ebb, s_k, s_o, n * eb, ebb, ea)


# --------------------------------------------------------------------------------------------
# Instruction selection
# --------------------------------------------------------------------------------------------


def _load_cls(vector: bool, f64: bool) -> type[sw.RegInstr]:
    if vector:
        return sw.VlddOp if f64 else sw.VldsOp
    return sw.LddeOp if f64 else sw.LdseOp


def fetcher(kind: str, vector: bool, axis: str | None, f64: bool, ptr: int) -> Fetch:
    """FETCH expansion (004 L792): ``kind`` "load" (plain LDM load), "send" (fused
    load-and-broadcast along ``axis``) or "recv" (GETR/GETC, the address is ignored)."""
    cls: type[sw.RegInstr]
    if kind == "recv":
        cls = sw.GetcOp if axis == "col" else sw.GetrOp
        return lambda reg, off, areg: _ins(cls, rd=reg)
    if kind == "send":
        if vector:
            cls = sw.VldcOp if axis == "col" else sw.VldrOp
        else:
            cls = sw.LddecOp if axis == "col" else sw.LdderOp
    else:
        cls = _load_cls(vector, f64)
    return lambda reg, off, areg: _ins(cls, rd=reg, ptr=ptr, offset=off, areg=areg)


def _fma(f64: bool) -> Callable[[int, int, int], Operation]:
    cls = sw.VmadOp if f64 else sw.VmasOp
    return lambda b, a, c: _ins(cls, ra=REG_S[b], rb=REG_V[a], rc=REG_C[c])


def listing41(geo: Geometry, fv: Fetch, fs: Fetch, next_k: bool = True) -> list[Operation]:
    """One k-step of 004 Listing 4.1 (corrected lines 11-12, algorithms.md §A6) on a full 4x4
    tile: VMAD (S_b, V_a, C_4b+a); FETCH V3/S3 of this k and (``next_k``) V0-2/S0-2 of the next
    k. Without ``next_k`` (the last k-step): no next-k FETCHes and no loop-closing BGT."""
    g, fma = geo.gv, _fma(geo.f64)
    nk: Callable[[Operation], list[Operation]] = (lambda o: [o]) if next_k else (lambda o: [])
    body: list[Operation] = [
        fma(0, 0, 0), _ins(sw.AddlOp, ra=LDM_V_P, rb=RK, rc=LDM_V_P),
        fma(0, 1, 1), fv(REG_V[3], 3 * g, LDM_V_P),
        fma(0, 2, 2), fs(REG_S[3], 3 * geo.s_o, LDM_S),
        fma(1, 0, 4), _ins(sw.AddlOp, ra=LDM_V, imm=8, rc=LDM_V),
        fma(1, 1, 5), _ins(sw.AddlOp, ra=LDM_V, rb=RK, rc=LDM_V_P),
        fma(2, 1, 9), _ins(sw.SubwOp, ra=CK, imm=1, rc=CK),
        fma(0, 3, 3), _ins(sw.NopOp),
        fma(1, 2, 6), _ins(sw.AddlOp, ra=LDM_S, rb=RM, rc=LDM_S),
        fma(2, 0, 8), *nk(fs(REG_S[0], geo.s_k, LDM_S)),
        fma(1, 3, 7), *nk(fs(REG_S[1], geo.s_k + geo.s_o, LDM_S)),
        fma(3, 0, 12), *nk(fv(REG_V[0], geo.v_k, LDM_V)),
        fma(3, 1, 13), *nk(fv(REG_V[1], geo.v_k + g, LDM_V_P)),
        fma(2, 2, 10), _ins(sw.AddlOp, ra=LDM_V_P, rb=RK, rc=LDM_V_P),
        fma(3, 2, 14), *nk(fv(REG_V[2], geo.v_k + 2 * g, LDM_V_P)),
        fma(2, 3, 11), *nk(fs(REG_S[2], geo.s_k + 2 * geo.s_o, LDM_S)),
        fma(3, 3, 15),
    ]
    if next_k:
        body.append(_ins(sw.BgtOp, ra=CK))
    return body


def first_fetches(geo: Geometry, fv: Fetch, fs: Fetch, nv: int = 3, ns: int = 3,
                  regs: TileRegs | None = None) -> list[Operation]:
    """FETCHes of k = 0: V0..V(nv-1), S0..S(ns-1) (Listing 4.1 fetches V3/S3 in the body);
    ``regs``: the tile's registers (default Listing 4.1's)."""
    rv, rs = (regs.v, regs.s) if regs is not None else (REG_V, REG_S)
    out: list[Operation] = []
    for j in range(max(nv, ns)):
        if j < nv:
            out.append(fv(rv[j], j * geo.gv, None))
        if j < ns:
            out.append(fs(rs[j], j * geo.s_o, None))
    return out


def c_tile(geo: Geometry, store: bool, nv: int = 4, ns: int = 4, ptr: int = 2,
           regs: TileRegs | None = None) -> list[Operation]:
    """Load/store of the C register tile: C(4b + a) (``regs.acc(b, a)``) <-> row b, lanes 4a..
    at pointer ``ptr``."""
    acc = regs.acc if regs is not None else (lambda b, a: REG_C[4 * b + a])
    cls: type[sw.RegInstr]
    if store:
        cls = sw.VstdOp if geo.f64 else sw.VstsOp
        return [_ins(cls, rs=acc(b, a), ptr=ptr, offset=b * geo.c_row + a * geo.g)
                for b in range(ns) for a in range(nv)]
    cls = _load_cls(True, geo.f64)
    return [_ins(cls, rd=acc(b, a), ptr=ptr, offset=b * geo.c_row + a * geo.g)
            for b in range(ns) for a in range(nv)]


def generic_body(geo: Geometry, nv: int, ns: int, fv: Fetch, fs: Fetch, next_k: bool = True,
                 regs: TileRegs | None = None) -> list[Operation]:
    """One k-step of an ``nv`` x ``ns`` register tile (partial tiles of ``loop.gemm_block``):
    FMAs row by row; each register is refetched for the next k right after its last use; the
    address/counter updates and BGT of a real loop are included (timing). ``regs``: the tile's
    registers (default :func:`tile_regs`)."""
    r = regs or tile_regs(nv, ns)
    cls = sw.VmadOp if geo.f64 else sw.VmasOp
    last_s = {b: (b, nv - 1) for b in range(ns)}
    last_v = {a: (ns - 1, a) for a in range(nv)}
    body: list[Operation] = []
    for b in range(ns):
        for a in range(nv):
            body.append(_ins(cls, ra=r.s[b], rb=r.v[a], rc=r.acc(b, a)))
            if not next_k:
                continue
            if last_s[b] == (b, a):
                body.append(fs(r.s[b], geo.s_k + b * geo.s_o, LDM_S))
            if last_v[a] == (b, a):
                body.append(fv(r.v[a], geo.v_k + a * geo.gv, LDM_V))
    if next_k:
        body += [_ins(sw.AddlOp, ra=LDM_V, rb=RK, rc=LDM_V), _ins(sw.AddlOp, ra=LDM_S, rb=RM, rc=LDM_S),
                 _ins(sw.SubwOp, ra=CK, imm=1, rc=CK), _ins(sw.BgtOp, ra=CK)]
    return body


#: FMAs between a register's fetch and its first use that hide the LDM load latency
#: (lat_ldm_load = 4 cycles, 004 L534, at one FMA per cycle, + 1 for the pairing)
OWN_FETCH_DISTANCE = 5


def own_fetch(regs: TileRegs) -> str:
    """The operand whose last register a big tile (:func:`big_tile_body`) fetches for its own
    k-step at the top of the body: "v" for wide tiles (V(nv-1), first used at FMA nv - 1), "s"
    for tall ones (S(ns-1), first used at FMA (ns - 1) * nv)."""
    return "v" if regs.nv > 4 else "s"


def big_tile_body(geo: Geometry, regs: TileRegs, fv: Fetch, fs: Fetch, next_k: bool = True) -> list[Operation]:
    """One k-step of a wide (nv > 4) or tall (ns > 4) register tile of the remainder strips
    (:func:`gemm_block_strips`), scheduled for the dual-issue pipes (Listing 4.1's scheme): the
    last V (wide) or S (tall) register is fetched for this k-step at the top (the prologue and
    the next tile's first fetches leave it out), every other register is refetched for the next
    k right after its last FMA, and the loop's address/counter updates fill the P1 slots of the
    FMAs that free no register, so every FMA pairs with one P1 instruction; BGT closes the body
    (pairing with the next iteration's first FMA)."""
    cls = sw.VmadOp if geo.f64 else sw.VmasOp
    nv, ns = regs.nv, regs.ns
    own = own_fetch(regs)
    top = (fv(regs.v[nv - 1], (nv - 1) * geo.gv, LDM_V) if own == "v"
           else fs(regs.s[ns - 1], (ns - 1) * geo.s_o, LDM_S))
    queue: list[Operation] = []
    fill: list[Operation] = []
    if next_k:
        fill = [_ins(sw.AddlOp, ra=LDM_V, rb=RK, rc=LDM_V), _ins(sw.AddlOp, ra=LDM_S, rb=RM, rc=LDM_S),
                _ins(sw.SubwOp, ra=CK, imm=1, rc=CK)]
    # the own-k fetch goes after the first FMA (pairing with it instead of queueing behind the
    # previous iteration's BGT) when its register's first use is still lat_ldm_load FMAs later
    first_use = nv - 1 if own == "v" else (ns - 1) * nv
    late = own == "v" and ns > 1 and first_use >= OWN_FETCH_DISTANCE  # (measured: best there only)
    body: list[Operation] = [] if late else [top]
    if late:
        queue.append(top)
    for b in range(ns):
        for a in range(nv):
            body.append(_ins(cls, ra=regs.s[b], rb=regs.v[a], rc=regs.acc(b, a)))
            if next_k:
                if a == nv - 1 and not (own == "s" and b == ns - 1):
                    queue.append(fs(regs.s[b], geo.s_k + b * geo.s_o, LDM_S))
                if b == ns - 1 and not (own == "v" and a == nv - 1):
                    queue.append(fv(regs.v[a], geo.v_k + a * geo.gv, LDM_V))
            if queue:
                body.append(queue.pop(0))
            elif fill:
                body.append(fill.pop(0))
    body += queue + fill
    if next_k:
        body.append(_ins(sw.BgtOp, ra=CK))
    return body


# --------------------------------------------------------------------------------------------
# IR building helpers
# --------------------------------------------------------------------------------------------


def _mk(k: SwKernelBuilder, trip: int, ptrs: Sequence[tuple[SSAValue, int]], name: str,
        body: list[Operation]) -> None:
    op = sw.MicrokernelOp.create(
        operands=[p for p, _ in ptrs],
        properties={"trip_count": int_attr(trip), "strides": _strides_attr(tuple(s for _, s in ptrs))},
        attributes={"name": _name_attr(name)},
        regions=[Region(Block(body))],
    )
    k.emit(op)
    k.n_microkernels += 1


def _dispatch(k: SwKernelBuilder, conds: Sequence[SSAValue], leaf: Callable[..., None],
              flags: tuple[bool, ...] = ()) -> None:
    """Nested ``scf.if`` on the i1 values ``conds``; ``leaf(*flags)`` emits each variant."""
    if not conds:
        leaf(*flags)
        return
    blocks = []
    for v in (True, False):
        blk = Block()
        saved, k.block = k.block, blk
        _dispatch(k, conds[1:], leaf, flags + (v,))
        k.block = saved
        blk.add_op(scf.YieldOp())
        blocks.append(blk)
    k.emit(scf.IfOp(conds[0], [], Region(blocks[0]), Region(blocks[1])))


def _for(k: SwKernelBuilder, lb: SSAValue, ub: SSAValue, step: SSAValue, body: Callable[[SSAValue], None],
         name: str = "i") -> None:
    blk = Block(arg_types=[i64])
    blk.args[0].name_hint = name
    k.emit(scf.ForOp(lb, ub, step, [], blk))
    saved, k.block = k.block, blk
    body(blk.args[0])
    k.block = saved
    blk.add_op(scf.YieldOp())


def _range(k: SwKernelBuilder, n: int, body: Callable[[SSAValue], None], name: str) -> None:
    """``for i in range(n)`` as scf.for on i64 (inlined when n == 1)."""
    if n == 1:
        body(k.const(0))
    elif n > 1:
        _for(k, k.const(0), k.const(n), k.const(1), body, name)


def _eq(k: SwKernelBuilder, a: SSAValue, b: SSAValue) -> SSAValue:
    return k.emit(cmpi(a, b, "eq")).results[0]


def _tile_ptrs(k: SwKernelBuilder, geo: Geometry, V: SSAValue, S: SSAValue, C: SSAValue,
               io: SSAValue, iv: SSAValue, nvt: int = 4, nst: int = 4) -> tuple[SSAValue, SSAValue, SSAValue]:
    """p0 = V + iv*nvt*gv, p1 = S + io*nst*s_o, p2 = C + io*nst*c_row + iv*nvt*g."""
    vo = k.mul(iv, nvt * geo.g)
    pv = k.add(V, vo if geo.gv == geo.g else k.mul(iv, nvt * geo.gv))
    ps = k.add(S, k.mul(io, nst * geo.s_o))
    pc = k.add(k.add(C, k.mul(io, nst * geo.c_row)), vo)
    return pv, ps, pc


# --------------------------------------------------------------------------------------------
# loop.summa_step
# --------------------------------------------------------------------------------------------


@dataclass
class _Summa:
    geo: Geometry
    axis_v: str  # axis V travels along
    axis_s: str
    V: SSAValue
    S: SSAValue
    C: SSAValue


def _summa(k: SwKernelBuilder, op: loop.SummaStepOp) -> _Summa:
    s = op.scheme.value.data
    vec, ax_a, ax_b = scheme_info(s)
    geo = geometry(vec, op.flags(), op.a.type, op.b.type, op.c.type, op)  # type: ignore[arg-type]
    if not (geo.f64 and geo.v_f64 and geo.s_f64):
        raise _err(op, "the mesh GEMM is fp64 only (004 L823)")
    if geo.vlen % 16 or geo.olen % 4:
        raise _err(op, f"local dims ({geo.vlen}, {geo.olen}) are not multiples of the 16 x 4 register tile")
    a, b, c = k.addr(op.a), k.addr(op.b), k.addr(op.c)
    if vec == VecDim.M:
        return _Summa(geo, ax_a, ax_b, a, b, c)
    return _Summa(geo, ax_b, ax_a, b, a, c)


def _check_overread(k: SwKernelBuilder, op: Operation, geo: Geometry) -> None:
    """The k-loop's last iteration reads one k-row past the V and S blocks (see module
    docstring); make sure that stays inside the LDM whatever the buffer placement."""
    m = k.machine
    worst = k.spmd.ldm_bytes() + max(geo.v_k, geo.s_k) + 4 * geo.g
    if worst > m.ldm_bytes:
        raise _err(op, f"the software-pipelined k-loop over-reads one k-row ({max(geo.v_k, geo.s_k)} B) "
                       f"past its blocks and the kernel's LDM footprint ({k.spmd.ldm_bytes()} B) leaves no "
                       f"room for it in the {m.ldm_bytes}-B LDM: use a smaller vectorised block")


def _coord(k: SwKernelBuilder, axis: str) -> SSAValue:
    """The mesh coordinate that selects the sender along ``axis``: a column broadcast is sent by
    the CPE of mesh row T, a row broadcast by the CPE of mesh column T (§A2)."""
    return k.row if axis == "col" else k.col


def _summa_steps(k: SwKernelBuilder, op: loop.SummaStepOp, lb: SSAValue, ub: SSAValue | None,
                 step: SSAValue | None) -> None:
    """Lower SUMMA steps T = lb, lb+step, ... < ub (or only T = lb when ``ub`` is None) with C
    in registers across the steps of each register tile."""
    sm = _summa(k, op)
    geo = sm.geo
    _check_overread(k, op, geo)
    cv, cs = _coord(k, sm.axis_v), _coord(k, sm.axis_s)
    nvt, not_ = geo.vlen // 16, geo.olen // 4

    def fetchers(send_v: bool, send_s: bool) -> tuple[Fetch, Fetch]:
        return (fetcher("send" if send_v else "recv", True, sm.axis_v, True, 0),
                fetcher("send" if send_s else "recv", False, sm.axis_s, True, 1))

    n_tiles = nvt * not_

    def tile_ptrs(q: SSAValue) -> tuple[SSAValue, SSAValue, SSAValue]:
        """Pointers of register tile q (vectorised tiles innermost)."""
        if nvt == 1:
            return _tile_ptrs(k, geo, sm.V, sm.S, sm.C, q, k.const(0))
        c = k.const(nvt)
        io = k.emit(int_binop(arith.DivUIOp, q, c)).results[0]
        iv = k.emit(int_binop(arith.RemUIOp, q, c)).results[0]
        return _tile_ptrs(k, geo, sm.V, sm.S, sm.C, io, iv)

    def roles(t: SSAValue) -> list[SSAValue]:
        return [_eq(k, cv, t), _eq(k, cs, t)]

    def steps(pv: SSAValue, ps: SSAValue) -> None:
        """The k-loops of every step of one tile and the first FETCHes between steps."""
        kl = [(pv, geo.v_k), (ps, geo.s_k)]

        def kloop(sv: bool, ss: bool) -> None:
            fv, fs = fetchers(sv, ss)
            _mk(k, geo.k, kl, "summa_kloop", listing41(geo, fv, fs))

        def next_step(sv: bool, ss: bool) -> None:
            fv, fs = fetchers(sv, ss)
            _mk(k, 1, kl, "summa_next_step", first_fetches(geo, fv, fs))

        if ub is None:
            _dispatch(k, roles(lb), kloop)
            return
        assert step is not None

        def one_step(t: SSAValue) -> None:
            _dispatch(k, roles(t), kloop)
            t1 = k.emit(int_binop(arith.AddiOp, t, step)).results[0]
            more = k.emit(cmpi(t1, ub, "slt")).results[0]
            blk = Block()
            saved, k.block = k.block, blk
            _dispatch(k, roles(t1), next_step)
            k.block = saved
            blk.add_op(scf.YieldOp())
            k.emit(scf.IfOp(more, [], Region(blk), Region(Block([scf.YieldOp()]))))

        _for(k, lb, ub, step, one_step, "t")

    # P: C of tile 0 + first FETCHes of step lb
    pv0, ps0, pc0 = tile_ptrs(k.const(0))

    def prologue(sv: bool, ss: bool) -> None:
        fv, fs = fetchers(sv, ss)
        _mk(k, 1, [(pv0, 0), (ps0, 0), (pc0, 0)], "summa_prologue", c_tile(geo, False) + first_fetches(geo, fv, fs))

    _dispatch(k, roles(lb), prologue)

    def tile(q: SSAValue) -> None:
        pv, ps, pc = tile_ptrs(q)
        steps(pv, ps)
        if n_tiles == 1:
            _mk(k, 1, [(pc, 0)], "summa_store_c", c_tile(geo, True, ptr=0))
            return
        # store C of tile q and, in the same run, load C + first FETCHes of tile q + 1
        def next_tile(q1: SSAValue) -> None:
            pv1, ps1, pc1 = tile_ptrs(q1)

            def transition(sv: bool, ss: bool) -> None:
                fv, fs = fetchers(sv, ss)
                _mk(k, 1, [(pv1, 0), (ps1, 0), (pc1, 0), (pc, 0)], "summa_next_tile",
                    c_tile(geo, True, ptr=3) + c_tile(geo, False) + first_fetches(geo, fv, fs))

            _dispatch(k, roles(lb), transition)

        _if_next_tile(k, q, n_tiles, next_tile,
                      lambda: _mk(k, 1, [(pc, 0)], "summa_store_c", c_tile(geo, True, ptr=0)))

    _range(k, n_tiles, tile, "q")


def _if_next_tile(k: SwKernelBuilder, q: SSAValue, n_tiles: int, then: Callable[[SSAValue], None],
                  last: Callable[[], None]) -> None:
    """Emit ``scf.if q + 1 < n_tiles { then(q + 1) } else { last() }``: a register tile's closing
    run either also opens tile ``q + 1`` (its C load and first fetches) or only stores C."""
    q1 = k.add(q, 1)
    more = k.emit(cmpi(q1, k.const(n_tiles), "slt")).results[0]
    blk_t, blk_e = Block(), Block()
    saved = k.block
    k.block = blk_t
    then(q1)
    k.block = blk_e
    last()
    k.block = saved
    blk_t.add_op(scf.YieldOp())
    blk_e.add_op(scf.YieldOp())
    k.emit(scf.IfOp(more, [], Region(blk_t), Region(blk_e)))


def try_fuse_summa_loop(k: SwKernelBuilder, op: scf.ForOp) -> bool:
    """Lower ``scf.for %T = lb to ub step s { loop.summa_step %T, ... }`` (nothing else in the
    body, no iter_args, buffers defined outside) as one fused nest; False if not that form."""
    if op.iter_args:
        return False
    body = [o for o in op.body.block.ops if not isinstance(o, scf.YieldOp)]
    if len(body) != 1 or not isinstance(body[0], loop.SummaStepOp):
        return False
    st = body[0]
    if st.step is not op.body.block.args[0]:
        return False
    for v in (st.a, st.b, st.c):
        if v.owner is not None and isinstance(v.owner, Operation) and op.is_ancestor(v.owner):
            return False
    _summa_steps(k, st, k.value(op.lb), k.value(op.ub), k.value(op.step))
    return True


# --------------------------------------------------------------------------------------------
# loop.gemm_block
# --------------------------------------------------------------------------------------------


#: remainder strips of ``loop.gemm_block`` (:func:`gemm_block_strips`): with 1 or 2 rows of the
#: other dim left, tiles this many vector registers wide; with 1 or 2 vector registers left,
#: tiles this many rows tall (16 accumulators at most, :func:`tile_regs`): each accumulator is
#: then updated once per FMA-latency window and the operand loads of a k-step fit the P1 slots
#: of its FMAs, instead of 4 x 1 / 4 x 2 tiles bound by the FMA latency and the loop overhead.
#: ``backends/model/overlap_gemm.py`` (``STRIP_WIDE`` / ``STRIP_TALL``) mirrors them.
STRIP_WIDE = {1: 12, 2: 8}
STRIP_TALL = {1: 12, 2: 8}


def gemm_block_strips(nvec: int, olen: int) -> list[tuple[int, int, int, int, int, int]]:
    """The register-tile strips of a ``loop.gemm_block`` with ``nvec`` vector registers along
    the vectorised dim and ``olen`` elements of the other: ``(n_vt, nv, vbase, n_st, ns,
    sbase)`` = n_vt x n_st tiles of nv vectors x ns rows starting at vector ``vbase``, row
    ``sbase``. Full 4 x 4 tiles (Listing 4.1), then the remainder strips: a column strip of the
    vec % 4 vectors left (tiles :data:`STRIP_TALL` rows tall when 1 or 2 are left and there are
    >= 8 rows, else 4), a row strip of the olen % 4 rows left (tiles :data:`STRIP_WIDE` vectors
    wide when 1 or 2 are left and there are >= 8 vectors, else 4), each with one tile for the
    rest, and the corner."""
    nv_full, v_rem = divmod(nvec, 4)
    ns_full, s_rem = divmod(olen, 4)
    parts = [(nv_full, 4, 0, ns_full, 4, 0)]
    if v_rem:
        tall, rows = STRIP_TALL.get(v_rem), ns_full * 4
        if tall and ns_full >= 2:
            t = min(tall, rows)
            parts.append((1, v_rem, nv_full * 4, rows // t, t, 0))
            if rows % t:
                parts.append((1, v_rem, nv_full * 4, 1, rows % t, rows // t * t))
        else:
            parts.append((1, v_rem, nv_full * 4, ns_full, 4, 0))
    if s_rem:
        wide, vecs = STRIP_WIDE.get(s_rem), nv_full * 4
        if wide and nv_full >= 2:
            w = min(wide, vecs)
            parts.append((vecs // w, w, 0, 1, s_rem, ns_full * 4))
            if vecs % w:
                parts.append((1, vecs % w, vecs // w * w, 1, s_rem, ns_full * 4))
        else:
            parts.append((nv_full, 4, 0, 1, s_rem, ns_full * 4))
    if v_rem and s_rem:
        parts.append((1, v_rem, nv_full * 4, 1, s_rem, ns_full * 4))
    return parts


def _gemm_block(k: SwKernelBuilder, op: loop.GemmBlockOp) -> None:
    """Register tiles of one strip (full tiles, then the partial strips) in one loop over the
    tiles: P (C of the first tile + its first FETCHes), then per tile its k-loop run and one run
    with its last k-step + the store of its C + the load of the next tile's C and that tile's
    first FETCHes (the strip's last tile: last k-step + store only) -- 2 runs per tile."""
    vec = op.vec.data
    geo = geometry(vec, op.flags(), op.a.type, op.b.type, op.c.type, op)  # type: ignore[arg-type]
    a, b, c = k.addr(op.a), k.addr(op.b), k.addr(op.c)
    V, S = (a, b) if vec == VecDim.M else (b, a)
    fv = fetcher("load", True, None, geo.v_f64, 0)
    fs = fetcher("load", False, None, geo.s_f64, 1)
    fv_next = fetcher("load", True, None, geo.v_f64, 4)  # the next tile's first FETCHes
    fs_next = fetcher("load", False, None, geo.s_f64, 5)
    lk = geo.k - 1

    def strip(n_vt: int, nv: int, vbase: int, n_st: int, ns: int, sbase: int) -> None:
        full = nv == 4 and ns == 4
        regs = tile_regs(nv, ns)
        big = nv > 4 or ns > 4
        n_tiles = n_vt * n_st

        def ptrs(q: SSAValue) -> tuple[SSAValue, SSAValue, SSAValue]:
            """Pointers of tile q of the strip (vectorised tiles innermost)."""
            if n_vt == 1:
                io, iv = q, k.const(0)
            else:
                cv = k.const(n_vt)
                io = k.emit(int_binop(arith.DivUIOp, q, cv)).results[0]
                iv = k.emit(int_binop(arith.RemUIOp, q, cv)).results[0]
            pv, ps, pc = _tile_ptrs(k, geo, V, S, C, io, iv, nv, ns)
            return (k.add(pv, vbase * geo.gv), k.add(ps, sbase * geo.s_o),
                    k.add(pc, sbase * geo.c_row + vbase * geo.g))

        def firsts(v: Fetch, s_: Fetch) -> list[Operation]:
            if full:
                return first_fetches(geo, v, s_, 3, 3)
            if big:  # (the own-k register is fetched by the body)
                own = own_fetch(regs)
                return first_fetches(geo, v, s_, nv - (own == "v"), ns - (own == "s"), regs)
            return first_fetches(geo, v, s_, nv, ns, regs)

        def kstep(next_k: bool) -> list[Operation]:
            if full:
                return listing41(geo, fv, fs, next_k=next_k)
            if big:
                return big_tile_body(geo, regs, fv, fs, next_k)
            return generic_body(geo, nv, ns, fv, fs, next_k, regs)

        def last_k() -> list[Operation]:
            return kstep(False)

        def c_io(store: bool, ptr: int = 2) -> list[Operation]:
            return c_tile(geo, store, nv, ns, ptr, regs)

        pv0, ps0, pc0 = ptrs(k.const(0))
        _mk(k, 1, [(pv0, 0), (ps0, 0), (pc0, 0)], "gemm_prologue", c_io(False) + firsts(fv, fs))

        def tile(q: SSAValue) -> None:
            pv, ps, pc = ptrs(q)
            if geo.k > 1:
                body = kstep(True)
                _mk(k, lk, [(pv, geo.v_k), (ps, geo.s_k)], "gemm_kloop", body)
            last = [(k.add(pv, lk * geo.v_k), 0), (k.add(ps, lk * geo.s_k), 0), (pc, 0)]
            if n_tiles == 1:
                _mk(k, 1, last, "gemm_epilogue", last_k() + c_io(True))
                return
            def next_tile(q1: SSAValue) -> None:
                pv1, ps1, pc1 = ptrs(q1)
                _mk(k, 1, last + [(pc1, 0), (pv1, 0), (ps1, 0)], "gemm_next_tile",
                    last_k() + c_io(True) + c_io(False, ptr=3) + firsts(fv_next, fs_next))

            _if_next_tile(k, q, n_tiles, next_tile, lambda: _mk(k, 1, last, "gemm_epilogue", last_k() + c_io(True)))

        _range(k, n_tiles, tile, "q")

    C = c
    for n_vt, nv, vbase, n_st, ns, sbase in gemm_block_strips(geo.vlen // 4, geo.olen):
        if n_vt and n_st:
            strip(n_vt, nv, vbase, n_st, ns, sbase)


# --------------------------------------------------------------------------------------------
# loop.rlc_bcast
# --------------------------------------------------------------------------------------------


def _rlc_bcast(k: SwKernelBuilder, op: loop.RlcBcastOp) -> None:
    t = op.src.type
    assert isinstance(t, loop.LdmBufType)
    n = t.slot_bytes // 32
    axis = op.axis.data.value
    src, dst = k.addr(op.src), k.addr(op.dst)
    root = _eq(k, _coord(k, axis), k.value(op.root))
    send_cls = sw.VldrOp if axis == "row" else sw.VldcOp
    get_cls = sw.GetrOp if axis == "row" else sw.GetcOp
    u = 4 if n % 4 == 0 else 2 if n % 2 == 0 else 1

    def leaf(is_root: bool) -> None:
        if is_root:
            body = [_ins(send_cls, rd=i, ptr=0, offset=32 * i) for i in range(u)]
        else:
            body = [_ins(get_cls, rd=i) for i in range(u)]
        body += [_ins(sw.VstdOp, rs=i, ptr=1, offset=32 * i) for i in range(u)]
        _mk(k, n // u, [(src, 32 * u), (dst, 32 * u)], f"rlc_bcast_{axis}", body)

    _dispatch(k, [root], leaf)


def lower(k: SwKernelBuilder, op: Operation) -> None:
    """Lower one ``loop.summa_step`` / ``loop.gemm_block`` / ``loop.rlc_bcast`` into ``k``."""
    if isinstance(op, loop.SummaStepOp):
        _summa_steps(k, op, k.value(op.step), None, None)
    elif isinstance(op, loop.GemmBlockOp):
        _gemm_block(k, op)
    elif isinstance(op, loop.RlcBcastOp):
        _rlc_bcast(k, op)
    else:  # pragma: no cover - dispatch table in kernel.py
        raise _err(op, "not a GEMM op")



