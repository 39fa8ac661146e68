"""The ``tile`` dialect: kernels as loop nests over tiles whose bodies are tensorized primitives.

Level 2 of taihu (design.md "Levels"): buffer semantics and the *tensorized programming model*
of 004 §3.3 (L632-651) / Ch.6 DSL (L1395-1489), algorithms.md §A0. Main-memory data are builtin
``memref``s (static shape, identity row-major layout); LDM-resident data distributed over the 8x8
CPE mesh are ``!tile.buf`` buffers. One ``tile.kernel`` is one launch from the MPE (athread
spawn/join); its body is a nest of ``tile.for`` loops over tiles whose bodies are primitives::

    func.func @mm(%A: memref<1024x1024xf64>, %B: memref<1024x1024xf64>, %C: memref<1024x1024xf64>) {
      tile.kernel "mm" (%a = %A : memref<1024x1024xf64>, %b = %B : memref<1024x1024xf64>, %c = %C : memref<1024x1024xf64>) {
        %ta = tile.alloc double : !tile.buf<256x64xf64, cr, col>   // A block (B_M x B_K), 2 LDM copies
        %tb = tile.alloc double : !tile.buf<64x256xf64, cr>        // B block (B_K x B_N)
        %tc = tile.alloc : !tile.buf<256x256xf64, cr, col>         // C block (B_M x B_N)
        tile.for %i = 0 to 1024 step 256 name "cM" {
          tile.for %j = 0 to 1024 step 256 name "cN" {
            tile.map fill out(%tc : !tile.buf<256x256xf64, cr, col>) {value = 0.0 : f64}
            tile.for %k = 0 to 1024 step 64 name "cK" {            // K innermost (004 L863)
              tile.move %a[%i, %k] sizes [256, 64] -> %ta : memref<1024x1024xf64> -> !tile.buf<256x64xf64, cr, col>
              tile.move %b[%k, %j] sizes [64, 256] -> %tb : memref<1024x1024xf64> -> !tile.buf<64x256xf64, cr>
              tile.gemm %ta, %tb -> %tc m 256 n 256 k 64 scheme 1 vec m : !tile.buf<256x64xf64, cr, col>, !tile.buf<64x256xf64, cr>, !tile.buf<256x256xf64, cr, col>
            }
            tile.move %tc -> %c[%i, %j] sizes [256, 256] : !tile.buf<256x256xf64, cr, col> -> memref<1024x1024xf64>
          }
        }
      }
      func.return
    }

Primitives (each one "instruction" of the tensorized model, 004 L632-651):

* ``tile.move``: a rectangular (optionally strided, optionally padded/clipped) window of a memref
  <-> a ``!tile.buf``; every CPE moves its own piece (R0: all 64 CPEs DMA at once, 004 L655).
* ``tile.gemm``: the mesh GEMM primitive ``C += A x B`` on LDM-resident tiles (algorithms.md §A,
  004 §4.1); its verifier enforces §A5 (shape multiples, LDM footprint) and the data distribution
  implied by the vector scheme (Table 4.1, L769-775).
* ``tile.map``: data-parallel element-wise / window / reduction maps for memory-bound operators
  (no RLC, 004 L1227; kinds in :mod:`taihu.dialects.mapkind`).
* ``tile.im2col`` (004 §5.1.1, L1045-1049) and ``tile.winograd_filter/input/output``
  (Algorithm 5, L1130-1196): self-scheduled memory-to-memory primitives (see "Design" below).

Distribution of a ``!tile.buf<d0 x d1 x ... x T, dist[, layout]>`` over the mesh (per-CPE
"local" block, :meth:`TileBufType.local_shape`):

* ``rc``: rank 2, dim 0 split 8-way over mesh rows, dim 1 8-way over mesh columns; CPE (r, c)
  holds block (r, c) of size (d0/8, d1/8) -- the non-overlapping distribution of 004 L713.
  Rank > 2 (e.g. the input-row tiles of ``tile.unfold``): the dims after dim 1 are whole in
  every CPE, local block (d0/8, d1/8, d2, ...).
* ``cr``: rank >= 2, dim 0 over mesh *columns*, dim 1 over mesh rows; CPE (r, c) holds block
  (c, r).
* ``cpe``: dim 0 split 64-way by CPE id (id = 8*row + col, 004 L734): CPE p holds rows
  [p*q, min((p+1)*q, d0)) with q = ceil(d0/64), the rest of the dims whole (data-parallel ops).
* ``cpe<d>`` (``cpe1``, ``cpe2`` ...): the same split along dim ``d`` instead of dim 0 (CPE p
  holds indices [p*q, min((p+1)*q, d_d)) of dim d, q = ceil(d_d/64), every other dim whole), for
  data-parallel ops whose leading dims are too small or must stay whole in a CPE (LRN across
  channels at batch 1, the channel dim of an NCHW -> NHWC transpose). ``cpe`` = ``cpe0``.
* ``cpe<d>+<h>`` (``cpe+4``, ``cpe1+4``): the split with a halo, an *overlapping* distribution
  (004 L708) for the inputs of window maps along the split dim: q = ceil((d_d - h)/64) and CPE p
  holds indices [p*q, p*q + q + h) (clipped to d_d), i.e. its block of the ``d_d - h`` outputs
  plus the ``h`` neighbours the window needs. Loads only (a store would write the overlaps twice).
* ``rep``: every CPE holds the whole tile (overlapping distribution, 004 L708; small operands).

``layout`` (``row`` default | ``col``, rank 2 only) is the storage order of the local block in
LDM: ``row`` = last dim contiguous, ``col`` = first dim contiguous.

Design choices (for the conversion passes)
------------------------------------------
* **Loops are ``tile.for`` with static bounds**, not ``scf.for``: DMA inference (004 Alg 7,
  L1514-1534) and latency hiding (Alg 8, L1544-1562) need every loop's (min, stride, max) and the
  "next iteration" of an address, which are plain properties here instead of a constant-folding
  problem; the verifier can bound tile offsets statically (:func:`index_range`) and reject
  out-of-bounds windows; and tile-level loops (executed by all 64 CPEs in lockstep) are kept
  apart from the per-CPE ``scf.for`` loops of the ``loop`` level. Lowering ``tile.for`` to
  ``scf.for`` is a 1:1 rewrite. No iter_args: buffer semantics need none. The optional ``name``
  is the DSL iterator name (``cK`` ...) used in diagnostics and schedules.
* **LDM buffers are explicit allocations** (``tile.alloc``, directly in the kernel body) and
  primitives have no results: double buffering (``double`` flag, decided by graph-to-tile from
  the blocking model, implemented by tile-to-loop) and the LDM footprint are static and visible.
* **fp32 data go through explicit conversion**: ``tile.gemm`` is fp64 only (the fused
  load-and-broadcast instructions exist only for fp64, 004 L823, strategy 2 = algorithms.md
  §A7); fp32 tiles are converted with ``tile.map convert`` into fp64 tiles, whose LDM cost is
  then visible to the footprint check.
* **im2col and Winograd transforms are memory-to-memory primitives** with memref operands: their
  access patterns (a scatter of each input row to K_r*K_c col rows, 4x4 windows overlapping by 2)
  are not rectangular distributed tiles, and their seed algorithms fix the per-CPE task
  decomposition (one input row of one channel per task, L1045; m' consecutive 4x4 tiles per CPE,
  L1138-1175), so tile-to-loop expands them into those per-CPE loops. Tuning knobs are
  attributes (``rows_per_task``, ``tiles_per_cpe``).
* Index arithmetic for tile offsets uses ``arith`` on ``index`` values inside the kernel.

Errors: every verifier raises ``VerifyException`` with the op name and the violated rule.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import cast

from xdsl.dialects import arith
from xdsl.dialects.builtin import (
    I64,
    ArrayAttr,
    DenseArrayBase,
    DictionaryAttr,
    Float32Type,
    Float64Type,
    FloatAttr,
    IndexType,
    IntAttr,
    IntegerAttr,
    IntegerType,
    MemRefType,
    NoneAttr,
    StringAttr,
    UnitAttr,
    f64,
    i64,
)
from xdsl.dialects.utils import EnumAttribute
from xdsl.ir import (
    Attribute,
    Block,
    BlockArgument,
    Dialect,
    Operation,
    ParametrizedAttribute,
    Region,
    SpacedOpaqueSyntaxAttribute,
    SSAValue,
    TypeAttribute,
)
from xdsl.irdl import (
    AttrSizedOperandSegments,
    IRDLOperation,
    IRDLOption,
    ParsePropInAttrDict,
    irdl_attr_definition,
    irdl_op_definition,
    operand_def,
    opt_operand_def,
    opt_prop_def,
    prop_def,
    region_def,
    result_def,
    traits_def,
    var_operand_def,
)
from xdsl.parser import AttrParser, Parser
from xdsl.printer import Printer
from xdsl.traits import IsolatedFromAbove, NoTerminator
from xdsl.utils.exceptions import VerifyException
from xdsl.utils.str_enum import StrEnum

from taihu.dialects.target import machine_of
from taihu.dialects.common import (
    GEMM_K_MULTIPLE,
    GEMM_OTHER_MULTIPLE,
    GEMM_VEC_MULTIPLE,
    MapParamsOp,
    VecDim,
    make_params,
    parse_bound_args,
    print_bound_args,
    scheme_info,
)
from taihu.dialects.mapkind import KIND_INFO, MapKind, check_map

__all__ = [
    "AllocOp",
    "Dist",
    "ForOp",
    "GemmOp",
    "Im2colOp",
    "KernelOp",
    "Layout",
    "MapKindAttr",
    "MapOp",
    "MoveOp",
    "Tile",
    "TileBufType",
    "UnfoldOp",
    "cpe_dist",
    "dist_halo",
    "VecDim",
    "VecDimAttr",
    "WinogradFilterOp",
    "WinogradInputOp",
    "WinogradOutputOp",
    "index_range",
    "parse_dist",
    "scheme_info",
]

MESH = 8  # mesh rows = mesh columns (004 L460); checked against the machine in the verifiers
N_CPE = MESH * MESH

# --------------------------------------------------------------------------------------------
# Types and attributes
# --------------------------------------------------------------------------------------------


class Dist(StrEnum):
    """Distribution of a tile over the 8x8 mesh (module docstring)."""

    RC = "rc"
    CR = "cr"
    CPE = "cpe"
    REP = "rep"


def cpe_dist(dim: int) -> str:
    """Distribution name of the ``cpe`` split along tile dim ``dim`` (``cpe``, ``cpe1``, ...)."""
    if dim < 0:
        raise ValueError(f"cpe_dist: negative dim {dim}")
    return "cpe" if dim == 0 else f"cpe{dim}"


def dist_halo(name: str) -> int:
    """The halo of a ``cpe<d>+<h>`` distribution name (0 without one)."""
    base, plus, h = name.partition("+")
    return int(h) if plus and h.isdigit() else 0


def parse_dist(name: str) -> tuple[Dist, int | None] | None:
    """``(Dist, split dim)`` of a distribution name (split dim None for rc/cr/rep), or None when
    the name is not a distribution. ``cpe<d>`` -> ``(Dist.CPE, d)``; a halo suffix ``+<h>``
    (:func:`dist_halo`) is allowed on ``cpe`` / ``cpe<d>`` only."""
    base, plus, h = name.partition("+")
    if plus:
        if not h.isdigit() or (len(h) > 1 and h.startswith("0")):
            return None
        parsed = parse_dist(base)
        return parsed if parsed is not None and parsed[0] == Dist.CPE else None
    if name in (Dist.RC, Dist.CR, Dist.REP):
        return Dist(name), None
    if name == Dist.CPE:
        return Dist.CPE, 0
    if name.startswith("cpe") and name[3:].isdigit() and not name[3:].startswith("0"):
        return Dist.CPE, int(name[3:])
    return None


class Layout(StrEnum):
    """Storage order of a CPE's local block in LDM."""

    ROW = "row"
    COL = "col"


def _elem_name(t: Attribute) -> str:
    if isinstance(t, Float64Type):
        return "f64"
    if isinstance(t, Float32Type):
        return "f32"
    return str(t)


def _elem_bytes(t: Attribute) -> int:
    if isinstance(t, (Float32Type, Float64Type)):
        return t.bitwidth // 8
    raise VerifyException(f"element type must be f32 or f64, got {t}")


@irdl_attr_definition
class TileBufType(ParametrizedAttribute, TypeAttribute):
    """``!tile.buf<256x64xf64, rc[, col]>``: an LDM buffer distributed over the 8x8 mesh.

    Parameters: ``shape`` (logical, elements), ``element_type`` (f32 | f64), ``dist``
    (rc | cr | cpe | cpe<d> | rep) and ``layout`` (row | col) of each CPE's local block.
    """

    name = "tile.buf"

    shape: ArrayAttr[IntAttr]
    element_type: Attribute
    dist: StringAttr
    layout: StringAttr

    def __init__(
        self,
        shape: Sequence[int],
        element_type: Attribute,
        dist: Dist | str = Dist.RC,
        layout: Layout | str = Layout.ROW,
    ):
        super().__init__(
            ArrayAttr([IntAttr(d) for d in shape]),
            element_type,
            StringAttr(str(dist)),
            StringAttr(str(layout)),
        )

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> list[Attribute]:
        with parser.in_angle_brackets():
            dims, elem = parser.parse_ranked_shape()
            parser.parse_punctuation(",")
            dist = parser.parse_identifier(" (tile distribution: rc, cr, cpe, cpe<d> or rep)")
            if parser.parse_optional_punctuation("+") is not None:
                dist += f"+{parser.parse_integer(allow_negative=False, context_msg=' (halo of a cpe distribution)')}"
            layout = "row"
            if parser.parse_optional_punctuation(",") is not None:
                layout = parser.parse_identifier(" (layout: row or col)")
        return [ArrayAttr([IntAttr(d) for d in dims]), elem, StringAttr(dist), StringAttr(layout)]

    def print_parameters(self, printer: Printer) -> None:
        with printer.in_angle_brackets():
            printer.print_string("x".join(str(d) for d in self.get_shape()) + "x")
            printer.print_attribute(self.element_type)
            printer.print_string(f", {self.dist.data}")
            if self.layout.data != Layout.ROW:
                printer.print_string(f", {self.layout.data}")

    def verify(self) -> None:
        shape = self.get_shape()
        parsed = parse_dist(self.dist.data)
        if parsed is None:
            raise VerifyException(f"!tile.buf: unknown distribution '{self.dist.data}' (rc, cr, cpe, cpe<d> or rep)")
        if self.layout.data not in {x.value for x in Layout}:
            raise VerifyException(f"!tile.buf: unknown layout '{self.layout.data}' (row or col)")
        if not shape or any(d <= 0 for d in shape):
            raise VerifyException(f"!tile.buf: shape must be non-empty with positive dims, got {list(shape)}")
        if not isinstance(self.element_type, (Float32Type, Float64Type)):
            raise VerifyException(f"!tile.buf: element type must be f32 or f64, got {self.element_type}")
        if self.dist.data in (Dist.RC, Dist.CR):
            if len(shape) < 2 or shape[0] % MESH or shape[1] % MESH:
                raise VerifyException(
                    f"!tile.buf: distribution {self.dist.data} needs a rank >= 2 shape with dims 0 and 1 "
                    f"multiples of {MESH}, got {list(shape)}"
                )
        if self.layout.data == Layout.COL and len(shape) != 2:
            raise VerifyException("!tile.buf: layout col is only defined for rank-2 tiles")
        sd = parsed[1]
        if sd is not None and sd >= len(shape):
            raise VerifyException(
                f"!tile.buf: distribution {self.dist.data} splits dim {sd} but the tile has rank {len(shape)}"
            )
        if sd and self.layout.data == Layout.COL:
            raise VerifyException(f"!tile.buf: distribution {self.dist.data} needs layout row")
        h = dist_halo(self.dist.data)
        if sd is not None and h and h >= shape[sd]:
            raise VerifyException(
                f"!tile.buf: distribution {self.dist.data}: the halo {h} must be smaller than dim {sd} ({shape[sd]})"
            )

    # -- helpers -----------------------------------------------------------------------------

    def get_shape(self) -> tuple[int, ...]:
        return tuple(d.data for d in self.shape.data)

    @property
    def dist_kind(self) -> Dist:
        """rc | cr | cpe (also for ``cpe<d>``: see :attr:`split_dim`) | rep."""
        parsed = parse_dist(self.dist.data)
        assert parsed is not None, self.dist.data
        return parsed[0]

    @property
    def halo(self) -> int:
        """The halo of an overlapping ``cpe<d>+<h>`` distribution (0 otherwise)."""
        return dist_halo(self.dist.data)

    @property
    def split_dim(self) -> int | None:
        """The tile dim split 64-way over the CPEs (``cpe``: 0, ``cpe<d>``: d), None otherwise."""
        parsed = parse_dist(self.dist.data)
        return parsed[1] if parsed is not None else None

    @property
    def layout_kind(self) -> Layout:
        return Layout(self.layout.data)

    @property
    def elem_bytes(self) -> int:
        return _elem_bytes(self.element_type)

    def local_shape(self) -> tuple[int, ...]:
        """Shape of the largest per-CPE local block (elements)."""
        s = self.get_shape()
        d = self.dist_kind
        if d in (Dist.RC, Dist.CR):
            return (s[0] // MESH, s[1] // MESH) + s[2:]
        if d == Dist.CPE:
            sd, h = self.split_dim or 0, self.halo
            return s[:sd] + (math.ceil((s[sd] - h) / N_CPE) + h,) + s[sd + 1 :]
        return s

    def per_cpe_bytes(self) -> int:
        """LDM bytes of one CPE's local block (one buffer; double buffering doubles it)."""
        return math.prod(self.local_shape()) * self.elem_bytes

    def contiguous_dim(self) -> int:
        """Tile dimension that is contiguous in each CPE's local LDM block."""
        return 0 if self.layout_kind == Layout.COL else len(self.shape.data) - 1

    def mesh_row_dim(self) -> int | None:
        """Tile dimension split over mesh rows (rc: 0, cr: 1), None for cpe/rep."""
        return {Dist.RC: 0, Dist.CR: 1}.get(self.dist_kind)


@irdl_attr_definition
class VecDimAttr(EnumAttribute[VecDim], SpacedOpaqueSyntaxAttribute):
    name = "tile.vec"


@irdl_attr_definition
class MapKindAttr(EnumAttribute[MapKind], SpacedOpaqueSyntaxAttribute):
    name = "tile.map_kind"


class DataLayout(StrEnum):
    """Main-memory layout of a 4-D activation tensor for im2col/Winograd primitives."""

    NCHW = "nchw"
    NHWC = "nhwc"


@irdl_attr_definition
class DataLayoutAttr(EnumAttribute[DataLayout], SpacedOpaqueSyntaxAttribute):
    name = "tile.data_layout"


# --------------------------------------------------------------------------------------------
# Helpers
# --------------------------------------------------------------------------------------------


def _int(a: IntegerAttr | None, default: int | None = None) -> int | None:
    return default if a is None else a.value.data


def _arr(a: DenseArrayBase[IntegerType] | None) -> tuple[int, ...] | None:
    return None if a is None else tuple(int(x) for x in a.get_values())


def _i64_array(values: Sequence[int]) -> DenseArrayBase:
    return DenseArrayBase.from_list(i64, list(values))


def _where(op: Operation) -> str:
    return f"'{op.name}'"


def enclosing_kernel(op: Operation) -> KernelOp | None:
    """The ``tile.kernel`` containing ``op``, or None."""
    p = op.parent_op()
    while p is not None:
        if isinstance(p, KernelOp):
            return p
        p = p.parent_op()
    return None


def _require_kernel(op: Operation) -> KernelOp:
    k = enclosing_kernel(op)
    if k is None:
        raise VerifyException(f"{_where(op)} must be inside a tile.kernel")
    return k


def _main_memref(op: Operation, what: str, t: Attribute) -> MemRefType:
    if not isinstance(t, MemRefType):
        raise VerifyException(f"{_where(op)}: {what} must be a memref, got {t}")
    if any(d < 0 for d in t.get_shape()):
        raise VerifyException(f"{_where(op)}: {what} must have a static shape, got {t}")
    if not isinstance(t.layout, NoneAttr) or not isinstance(t.memory_space, NoneAttr):
        raise VerifyException(f"{_where(op)}: {what} must use the identity (row-major) layout in main memory, got {t}")
    _elem_bytes_or_fail(op, what, t.get_element_type())
    return t


def _elem_bytes_or_fail(op: Operation, what: str, t: Attribute) -> int:
    if not isinstance(t, (Float32Type, Float64Type)):
        raise VerifyException(f"{_where(op)}: {what} element type must be f32 or f64, got {t}")
    return t.bitwidth // 8


def index_range(v: SSAValue) -> tuple[int, int] | None:
    """Static bounds [lo, hi] of an ``index`` value built from ``tile.for`` induction variables,
    ``arith.constant``, ``arith.addi/subi/muli`` and ``arith.divui/remui`` by a positive
    constant (a flattened loop over blocks: ``i = b / n``, ``j = b % n``); None when unknown."""
    owner = v.owner
    if isinstance(v, BlockArgument):
        op = owner.parent_op() if isinstance(owner, Block) else None
        if isinstance(op, ForOp):
            return (op.lb_value, op.last_value)
        return None
    if isinstance(owner, arith.ConstantOp) and isinstance(owner.value, IntegerAttr):
        c = owner.value.value.data
        return (c, c)
    if isinstance(owner, (arith.AddiOp, arith.SubiOp, arith.MuliOp)):
        a, b = index_range(owner.lhs), index_range(owner.rhs)
        if a is None or b is None:
            return None
        if isinstance(owner, arith.AddiOp):
            return (a[0] + b[0], a[1] + b[1])
        if isinstance(owner, arith.SubiOp):
            return (a[0] - b[1], a[1] - b[0])
        corners = [x * y for x in a for y in b]
        return (min(corners), max(corners))
    if isinstance(owner, (arith.DivUIOp, arith.RemUIOp)):
        a, b = index_range(owner.lhs), index_range(owner.rhs)
        if a is None or b is None or b[0] != b[1] or b[0] <= 0 or a[0] < 0:
            return None
        d = b[0]
        if isinstance(owner, arith.DivUIOp):
            return (a[0] // d, a[1] // d)
        if a[0] // d == a[1] // d:  # within one period
            return (a[0] % d, a[1] % d)
        return (0, min(d - 1, a[1]))
    return None


# --------------------------------------------------------------------------------------------
# Kernel and loops
# --------------------------------------------------------------------------------------------


@irdl_op_definition
class KernelOp(IRDLOperation):
    """``tile.kernel "name" (%a = %A : memref<...>, ...) { body }``: one MPE launch.

    The operands are main-memory memrefs, bound to the body's block arguments (the body is
    isolated from above, so outlining it into a CPE kernel needs no capture analysis). The body
    holds ``tile.alloc`` (directly), ``tile.for``, the primitives and ``arith`` index math.

    Verified: operand/argument types agree and are static identity-layout f32/f64 memrefs; the
    per-CPE LDM footprint of all ``tile.alloc`` (double buffers counted twice) is
    <= ``ldm_user_bytes`` of the default machine (57 344 B [param]; 64 KB LDM, 004 L460); the
    message lists every buffer.
    """

    name = "tile.kernel"
    kernel_name = prop_def(StringAttr)
    args = var_operand_def(MemRefType)
    body = region_def("single_block")
    traits = traits_def(IsolatedFromAbove(), NoTerminator())

    def __init__(self, name: str, args: Sequence[SSAValue], body: Region | None = None):
        if body is None:
            body = Region(Block(arg_types=[a.type for a in args]))
        super().__init__(operands=[args], properties={"kernel_name": StringAttr(name)}, regions=[body])

    @classmethod
    def parse(cls, parser: Parser) -> KernelOp:
        name = parser.parse_str_literal()
        operands, args = parse_bound_args(parser)
        attrs = parser.parse_optional_attr_dict_with_keyword()
        body = parser.parse_region(args)
        op = cls(name, operands, body)
        if attrs is not None:
            op.attributes |= attrs.data
        return op

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_attribute(self.kernel_name)
        printer.print_string(" ")
        print_bound_args(printer, self.body.block.args, self.args)
        printer.print_op_attributes(self.attributes, print_keyword=True)
        printer.print_string(" ")
        printer.print_region(self.body, print_entry_block_args=False, print_empty_block=True)

    def allocs(self) -> list[AllocOp]:
        return [op for op in self.body.block.ops if isinstance(op, AllocOp)]

    def ldm_footprint(self) -> list[tuple[str, int]]:
        """(name, per-CPE bytes incl. the second buffer of double-buffered tiles) per alloc."""
        return [(a.buffer_name(i), a.footprint_bytes()) for i, a in enumerate(self.allocs())]

    def verify_(self) -> None:
        where = f'tile.kernel "{self.kernel_name.data}"'
        block = self.body.block
        if len(block.args) != len(self.args):
            raise VerifyException(f"{where}: {len(self.args)} operand(s) but {len(block.args)} block argument(s)")
        for i, (a, v) in enumerate(zip(block.args, self.args)):
            if a.type != v.type:
                raise VerifyException(f"{where}: block argument #{i} has type {a.type}, operand has {v.type}")
            _main_memref(self, f"argument #{i}", v.type)
        limit = machine_of(self).ldm_user_bytes
        fp = self.ldm_footprint()
        total = sum(b for _, b in fp)
        if total > limit:
            listing = ", ".join(f"%{n} {b} B" for n, b in fp)
            raise VerifyException(
                f"{where}: LDM footprint {total} bytes per CPE > ldm_user_bytes = {limit}: {listing}"
            )


#: most iterations of one ``tile.for``: convert-tile-to-loop enumerates a loop's iterations
#: (its segments, the DMAs it unrolls), and the loops of lowered networks have at most a few
#: thousand (VGG-19: 195); 2^31 iterations exhausted the memory (issue 15)
MAX_TILE_FOR_TRIPS = 1 << 20


@irdl_op_definition
class ForOp(IRDLOperation):
    """``tile.for %i = LB to UB step S [name "cK"] { body }``: a loop over tiles.

    Static integer bounds (properties ``lb``, ``ub``, ``step``; the iterator is an ``index``
    block argument taking lb, lb+step, ... < ub). Every CPE runs every iteration (tile-level
    loops are executed in lockstep by the mesh). No results, no terminator.
    """

    name = "tile.for"
    lb = prop_def(IntegerAttr[I64])
    ub = prop_def(IntegerAttr[I64])
    step = prop_def(IntegerAttr[I64])
    iter_name = opt_prop_def(StringAttr, prop_name="name")
    body = region_def("single_block")
    traits = traits_def(NoTerminator())

    def __init__(self, lb: int, ub: int, step: int, body: Region | None = None, name: str | None = None):
        if body is None:
            body = Region(Block(arg_types=[IndexType()]))
        props: dict[str, Attribute] = {
            "lb": IntegerAttr(lb, i64),
            "ub": IntegerAttr(ub, i64),
            "step": IntegerAttr(step, i64),
        }
        if name is not None:
            props["name"] = StringAttr(name)
        super().__init__(properties=props, regions=[body])

    @property
    def lb_value(self) -> int:
        return self.lb.value.data

    @property
    def ub_value(self) -> int:
        return self.ub.value.data

    @property
    def step_value(self) -> int:
        return self.step.value.data

    @property
    def trip_count(self) -> int:
        """Iterations (0 for a step <= 0, which the verifier rejects: verifiers of ops in the
        body may ask before the loop's own verifier ran)."""
        if self.step_value <= 0:
            return 0
        return max(0, -(-(self.ub_value - self.lb_value) // self.step_value))

    @property
    def last_value(self) -> int:
        """Value of the iterator in the last iteration."""
        return self.lb_value + (self.trip_count - 1) * self.step_value

    @property
    def iv(self) -> BlockArgument:
        return self.body.block.args[0]

    @classmethod
    def parse(cls, parser: Parser) -> ForOp:
        arg = parser.parse_argument(expect_type=False)
        parser.parse_punctuation("=")
        lb = parser.parse_integer()
        parser.parse_keyword("to")
        ub = parser.parse_integer()
        parser.parse_keyword("step")
        step = parser.parse_integer()
        name = None
        if parser.parse_optional_keyword("name") is not None:
            name = parser.parse_str_literal()
        attrs = parser.parse_optional_attr_dict_with_keyword()
        body = parser.parse_region([arg.resolve(IndexType())])
        op = cls(lb, ub, step, body, name)
        if attrs is not None:
            op.attributes |= attrs.data
        return op

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_block_argument(self.iv, print_type=False)
        printer.print_string(f" = {self.lb_value} to {self.ub_value} step {self.step_value}")
        if self.iter_name is not None:
            printer.print_string(" name ")
            printer.print_attribute(self.iter_name)
        printer.print_op_attributes(self.attributes, print_keyword=True)
        printer.print_string(" ")
        printer.print_region(self.body, print_entry_block_args=False, print_empty_block=True)

    def verify_(self) -> None:
        _require_kernel(self)
        if self.step_value <= 0:
            raise VerifyException(f"tile.for: step must be > 0, got {self.step_value}")
        if self.ub_value <= self.lb_value:
            raise VerifyException(f"tile.for: empty loop ({self.lb_value} to {self.ub_value})")
        if self.trip_count > MAX_TILE_FOR_TRIPS:
            raise VerifyException(f"tile.for: {self.trip_count} iterations ({self.lb_value} to {self.ub_value} step "
                                  f"{self.step_value}), more than {MAX_TILE_FOR_TRIPS}: the lowering enumerates "
                                  "the iterations (use larger tiles)")
        args = self.body.block.args
        if len(args) != 1 or not isinstance(args[0].type, IndexType):
            raise VerifyException("tile.for: the body takes exactly one index block argument")


@irdl_op_definition
class AllocOp(IRDLOperation):
    """``%t = tile.alloc [double] : !tile.buf<...>``: an LDM buffer on every CPE (each CPE gets
    its local block, :meth:`TileBufType.local_shape`). ``double``: tile-to-loop double-buffers it
    (two LDM copies, prefetch of the next tile while computing on the current one: 004 L674,
    Alg 8 L1544-1562). Must be directly in the ``tile.kernel`` body, so the footprint is static."""

    name = "tile.alloc"
    double = opt_prop_def(UnitAttr)
    result = result_def(TileBufType)

    assembly_format = "(`double` $double^)? attr-dict `:` type($result)"

    def __init__(self, t: TileBufType, double: bool = False):
        super().__init__(result_types=[t], properties={"double": UnitAttr()} if double else {})

    def buffer_name(self, index: int = 0) -> str:
        return self.result.name_hint or f"alloc{index}"

    @property
    def is_double(self) -> bool:
        return self.double is not None

    @property
    def tile_type(self) -> TileBufType:
        assert isinstance(self.result.type, TileBufType)
        return self.result.type

    def footprint_bytes(self) -> int:
        """Per-CPE LDM bytes (x2 when double-buffered)."""
        return self.tile_type.per_cpe_bytes() * (2 if self.is_double else 1)

    def verify_(self) -> None:
        if not isinstance(self.parent_op(), KernelOp):
            raise VerifyException("tile.alloc must be directly in a tile.kernel body (not in a loop)")


# --------------------------------------------------------------------------------------------
# tile.move
# --------------------------------------------------------------------------------------------


def _squeeze(shape: Sequence[int]) -> tuple[int, ...]:
    return tuple(d for d in shape if d != 1)


def _parse_int_list(parser: Parser) -> list[int]:
    return parser.parse_comma_separated_list(Parser.Delimiter.SQUARE, parser.parse_integer)


def _parse_pad_value(parser: Parser) -> float:
    """A float literal, or ``inf`` / ``-inf`` (max-pool padding)."""
    neg = parser.parse_optional_punctuation("-") is not None
    if parser.parse_optional_keyword("inf") is not None:
        return -math.inf if neg else math.inf
    v = parser.parse_number()
    return -float(v) if neg else float(v)


def _print_pad_value(printer: Printer, v: float) -> None:
    if math.isinf(v):
        printer.print_string("-inf" if v < 0 else "inf")
    else:
        printer.print_string(repr(float(v)))


@irdl_op_definition
class MoveOp(IRDLOperation):
    """Move a tile between main memory and LDM, every CPE moving its local block.

    Load  ``tile.move %A[%i, %k] sizes [256, 64] [strides [1, 2]] [pad 0.0] -> %t : memref<..> -> !tile.buf<..>``
    Store ``tile.move %t -> %C[%i, %j] sizes [256, 256] [strides ..] [clip] : !tile.buf<..> -> memref<..>``

    The window of the memref is ``{offset_d + i*stride_d : 0 <= i < size_d}`` per dim (offsets
    are ``index`` values, sizes/strides static, strides default 1); the tile is that window in
    row-major order with unit dims dropped (like a rank-reducing ``memref.subview``). ``pad v``
    (loads): elements outside the memref read as ``v`` (zero-padding of conv inputs, ``-inf``
    for max pooling; lightweight boundary padding, 004 §4.2.4 L883-889); ``clip`` (stores):
    elements outside the memref are dropped (boundary C tiles). The distribution of the tile type
    says which CPE moves which piece; tile-to-loop turns it into per-CPE strided DMAs
    (``size``/``bsize``/``stride`` of algorithms.md §B item 6).

    Verified: one side memref, the other ``!tile.buf``, same element type; offsets/sizes/strides
    match the memref rank; the squeezed window shape equals the squeezed tile shape; pad only on
    loads, clip only on stores; when the offset ranges are statically known
    (:func:`index_range`), windows without pad/clip stay inside the memref.
    """

    name = "tile.move"
    src = operand_def(TileBufType | MemRefType)
    dst = operand_def(TileBufType | MemRefType)
    offsets = var_operand_def(IndexType())
    sizes = prop_def(DenseArrayBase)
    strides = opt_prop_def(DenseArrayBase)
    pad = opt_prop_def(FloatAttr)
    clip = opt_prop_def(UnitAttr)

    def __init__(
        self,
        src: SSAValue | Operation,
        dst: SSAValue | Operation,
        offsets: Sequence[SSAValue | Operation],
        sizes: Sequence[int],
        strides: Sequence[int] | None = None,
        pad: float | None = None,
        clip: bool = False,
    ):
        props: dict[str, Attribute] = {"sizes": _i64_array(sizes)}
        if strides is not None:
            props["strides"] = _i64_array(strides)
        if pad is not None:
            props["pad"] = FloatAttr(pad, f64)
        if clip:
            props["clip"] = UnitAttr()
        super().__init__(operands=[src, dst, offsets], properties=props)

    # -- accessors ---------------------------------------------------------------------------

    @property
    def is_load(self) -> bool:
        """True for main memory -> LDM."""
        return isinstance(self.src.type, MemRefType)

    @property
    def memref(self) -> SSAValue:
        return self.src if self.is_load else self.dst

    @property
    def tile(self) -> SSAValue:
        return self.dst if self.is_load else self.src

    @property
    def size_values(self) -> tuple[int, ...]:
        return _arr(self.sizes) or ()

    @property
    def stride_values(self) -> tuple[int, ...]:
        s = _arr(self.strides)
        return s if s is not None else (1,) * len(self.size_values)

    @property
    def pad_value(self) -> float | None:
        return None if self.pad is None else self.pad.value.data

    # -- syntax ------------------------------------------------------------------------------

    @classmethod
    def parse(cls, parser: Parser) -> MoveOp:
        def window_opts() -> dict[str, Attribute]:
            props: dict[str, Attribute] = {}
            parser.parse_keyword("sizes")
            props["sizes"] = _i64_array(_parse_int_list(parser))
            if parser.parse_optional_keyword("strides") is not None:
                props["strides"] = _i64_array(_parse_int_list(parser))
            if parser.parse_optional_keyword("pad") is not None:
                props["pad"] = FloatAttr(_parse_pad_value(parser), f64)
            if parser.parse_optional_keyword("clip") is not None:
                props["clip"] = UnitAttr()
            return props

        def offsets() -> list:
            return parser.parse_comma_separated_list(Parser.Delimiter.SQUARE, parser.parse_unresolved_operand)

        u_src = parser.parse_unresolved_operand()
        offs = None
        props: dict[str, Attribute] = {}
        if parser._current_token.text == "[":  # load: window on the source
            offs = offsets()
            props = window_opts()
        parser.parse_punctuation("->")
        u_dst = parser.parse_unresolved_operand()
        if offs is None:
            offs = offsets()
            props = window_opts()
        attrs = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        t_src = parser.parse_type()
        parser.parse_punctuation("->")
        t_dst = parser.parse_type()
        src = parser.resolve_operand(u_src, t_src)
        dst = parser.resolve_operand(u_dst, t_dst)
        idx = [parser.resolve_operand(o, IndexType()) for o in offs]
        op = cls.build(operands=[src, dst, idx], properties=props, attributes=attrs)
        return op

    def print(self, printer: Printer) -> None:
        def window(v: SSAValue) -> None:
            printer.print_ssa_value(v)
            printer.print_string("[")
            printer.print_list(self.offsets, printer.print_ssa_value)
            printer.print_string("] sizes [" + ", ".join(map(str, self.size_values)) + "]")
            if self.strides is not None:
                printer.print_string(" strides [" + ", ".join(map(str, self.stride_values)) + "]")
            if self.pad is not None:
                printer.print_string(" pad ")
                _print_pad_value(printer, self.pad.value.data)
            if self.clip is not None:
                printer.print_string(" clip")

        printer.print_string(" ")
        if self.is_load:
            window(self.src)
            printer.print_string(" -> ")
            printer.print_ssa_value(self.dst)
        else:
            printer.print_ssa_value(self.src)
            printer.print_string(" -> ")
            window(self.dst)
        printer.print_op_attributes(self.attributes)
        printer.print_string(" : ")
        printer.print_attribute(self.src.type)
        printer.print_string(" -> ")
        printer.print_attribute(self.dst.type)

    # -- verification ------------------------------------------------------------------------

    def verify_(self) -> None:
        _require_kernel(self)
        ts, td = self.src.type, self.dst.type
        if isinstance(ts, MemRefType) == isinstance(td, MemRefType):
            raise VerifyException(
                "tile.move: exactly one side must be a memref (main memory) and the other a !tile.buf (LDM)"
            )
        mt = _main_memref(self, "memref operand", self.memref.type)
        tt = self.tile.type
        assert isinstance(tt, TileBufType)
        if mt.get_element_type() != tt.element_type:
            raise VerifyException(
                f"tile.move: element types differ (memref {mt.get_element_type()}, tile {tt.element_type}); "
                "convert in LDM with tile.map convert"
            )
        shape = mt.get_shape()
        rank = len(shape)
        sizes, strides = self.size_values, self.stride_values
        if len(self.offsets) != rank or len(sizes) != rank or len(strides) != rank:
            raise VerifyException(
                f"tile.move: memref rank {rank} needs {rank} offsets, sizes and strides "
                f"(got {len(self.offsets)}, {len(sizes)}, {len(strides)})"
            )
        if any(s < 1 for s in sizes) or any(s < 1 for s in strides):
            raise VerifyException("tile.move: sizes and strides must be >= 1")
        tshape = tt.get_shape()
        if _squeeze(sizes) != _squeeze(tshape) or math.prod(sizes) != math.prod(tshape):
            raise VerifyException(
                f"tile.move: window sizes {list(sizes)} do not match the tile shape {list(tshape)} "
                "(unit dims aside)"
            )
        if self.pad is not None and not self.is_load:
            raise VerifyException("tile.move: pad is only valid for loads (memref -> tile); use clip for stores")
        if tt.halo and not self.is_load:
            raise VerifyException(
                f"tile.move: a {tt.dist.data} tile overlaps between CPEs (halo); it can only be loaded"
            )
        if self.clip is not None and self.is_load:
            raise VerifyException("tile.move: clip is only valid for stores (tile -> memref); use pad for loads")
        boundary_ok = self.pad is not None or self.clip is not None
        if not boundary_ok:
            for d, (off, size, stride, dim) in enumerate(zip(self.offsets, sizes, strides, shape)):
                r = index_range(off)
                if r is None:
                    continue
                lo, hi = r[0], r[1] + (size - 1) * stride
                if lo < 0 or hi >= dim:
                    fix = "pad" if self.is_load else "clip"
                    raise VerifyException(
                        f"tile.move: window of dim {d} spans [{lo}, {hi}] outside [0, {dim}) of {mt}; "
                        f"use '{fix}' for boundary tiles"
                    )


# --------------------------------------------------------------------------------------------
# tile.gemm
# --------------------------------------------------------------------------------------------


def _alloc_of(v: SSAValue) -> AllocOp | None:
    return v.owner if isinstance(v.owner, AllocOp) else None


def _buf_name(v: SSAValue) -> str:
    return v.name_hint or "tile"


def footprint_of(values: Sequence[SSAValue]) -> list[tuple[str, int]]:
    """(name, per-CPE bytes) of distinct tile buffers; a buffer allocated ``double`` counts
    twice (the second buffer of double buffering, algorithms.md §A5)."""
    out: list[tuple[str, int]] = []
    seen: set[int] = set()
    for v in values:
        if id(v) in seen:
            continue
        seen.add(id(v))
        t = v.type
        assert isinstance(t, TileBufType)
        a = _alloc_of(v)
        mult = 2 if a is not None and a.is_double else 1
        out.append((_buf_name(v), t.per_cpe_bytes() * mult))
    return out


@irdl_op_definition
class GemmOp(IRDLOperation):
    """``tile.gemm %a, %b -> %c m M n N k K scheme S vec m|n [trans_a] [trans_b]``: the mesh
    GEMM primitive ``C += op(A) x op(B)`` on LDM-resident fp64 tiles (algorithms.md §A, 004 §4.1).

    Logical operand shapes: A = (M, K) or (K, M) with ``trans_a``; B = (K, N) or (N, K) with
    ``trans_b``; C = (M, N). ``scheme`` (1-4, Table 4.1, :func:`scheme_info`) fixes the
    vector-loaded operand (``vec``: m = A vector-loaded along M, n = B along N) and the mesh axis
    along which A and B travel in the SUMMA steps (§A2, 004 L715-717).

    Verified (each rule has a lit test):

    * A, B, C are f64 (fused load-and-broadcast exists only for fp64, 004 L823; convert fp32
      tiles with ``tile.map convert``);
    * shapes agree with m, n, k and the transpose flags;
    * ``vec`` agrees with ``scheme``;
    * §A5 multiples: vectorised dim % 128, other dim % 32, K % 8 (004 L784, L885, L1466);
    * distribution (A1/A2): the operand travelling along mesh rows has its K dim split over mesh
      columns (and the other index over rows), the one travelling along columns has K over mesh
      rows; C's rows/columns follow A's / B's non-K index;
    * layout: the vectorised dim is contiguous in LDM in the vector-loaded operand and in C
      (vector loads/stores read 4 consecutive elements; register tile of §A3);
    * LDM footprint of A, B, C per CPE (double-buffered operands twice) <= ldm_user_bytes (§A5);
    * C is a different buffer from A and B.

    **Overlapping distribution** (004 L708, §A1; :attr:`is_overlapping`): B ``rep`` and A, C
    ``cpe`` (split 64-way along M) -- every CPE multiplies its own rows with its private copy of B,
    no RLC; checked by :meth:`_verify_overlapping` instead of the SUMMA rules above (f32 allowed).
    """

    name = "tile.gemm"
    a = operand_def(TileBufType)
    b = operand_def(TileBufType)
    c = operand_def(TileBufType)
    m = prop_def(IntegerAttr[I64])
    n = prop_def(IntegerAttr[I64])
    k = prop_def(IntegerAttr[I64])
    scheme = prop_def(IntegerAttr[I64])
    vec = prop_def(VecDimAttr)
    trans_a = opt_prop_def(UnitAttr)
    trans_b = opt_prop_def(UnitAttr)

    assembly_format = (
        "$a `,` $b `->` $c `m` $m `n` $n `k` $k `scheme` $scheme `vec` $vec "
        "(`trans_a` $trans_a^)? (`trans_b` $trans_b^)? attr-dict `:` type($a) `,` type($b) `,` type($c)"
    )

    def __init__(
        self,
        a: SSAValue | Operation,
        b: SSAValue | Operation,
        c: SSAValue | Operation,
        m: int,
        n: int,
        k: int,
        scheme: int = 1,
        trans_a: bool = False,
        trans_b: bool = False,
    ):
        vec = scheme_info(scheme)[0] if scheme in (1, 2, 3, 4) else VecDim.M
        props: dict[str, Attribute] = {
            "m": IntegerAttr(m, i64),
            "n": IntegerAttr(n, i64),
            "k": IntegerAttr(k, i64),
            "scheme": IntegerAttr(scheme, i64),
            "vec": VecDimAttr(vec),
        }
        if trans_a:
            props["trans_a"] = UnitAttr()
        if trans_b:
            props["trans_b"] = UnitAttr()
        super().__init__(operands=[a, b, c], properties=props)

    @property
    def mnk(self) -> tuple[int, int, int]:
        return (self.m.value.data, self.n.value.data, self.k.value.data)

    @property
    def scheme_value(self) -> int:
        return self.scheme.value.data

    @property
    def vec_dim(self) -> VecDim:
        return self.vec.data

    def operand_dims(self) -> dict[str, tuple[str, str]]:
        """Logical index names of each operand's two tile dims."""
        return {
            "A": ("k", "m") if self.trans_a is not None else ("m", "k"),
            "B": ("n", "k") if self.trans_b is not None else ("k", "n"),
            "C": ("m", "n"),
        }

    @property
    def flops(self) -> int:
        m, n, k = self.mnk
        return 2 * m * n * k

    @property
    def is_overlapping(self) -> bool:
        """True for the overlapping distribution (004 L708, algorithms.md §A1): B ``rep`` on every
        CPE, A and C ``cpe``-distributed along M; lowered to one CPE-local ``loop.gemm_block``."""
        ta, tb, tc = (v.type for v in (self.a, self.b, self.c))
        assert isinstance(ta, TileBufType) and isinstance(tb, TileBufType) and isinstance(tc, TileBufType)
        return tb.dist_kind == Dist.REP and ta.dist_kind == Dist.CPE and tc.dist_kind == Dist.CPE

    def verify_(self) -> None:
        _require_kernel(self)
        if self.is_overlapping:
            self._verify_overlapping()
            return
        w = f"tile.gemm scheme {self.scheme_value}"
        ops = {"A": self.a, "B": self.b, "C": self.c}
        types: dict[str, TileBufType] = {}
        for name, v in ops.items():
            t = v.type
            assert isinstance(t, TileBufType)
            if not isinstance(t.element_type, Float64Type):
                raise VerifyException(
                    f"tile.gemm: operand {name} (%{_buf_name(v)}) must be f64, got {t.element_type}: the fused "
                    "load-and-broadcast instructions are fp64 only (004 L823); convert with tile.map convert"
                )
            if len(t.get_shape()) != 2:
                raise VerifyException(f"tile.gemm: operand {name} must be rank 2, got {t}")
            types[name] = t
        m, n, k = self.mnk
        size = {"m": m, "n": n, "k": k}
        dims = self.operand_dims()
        for name, t in types.items():
            want = tuple(size[d] for d in dims[name])
            if t.get_shape() != want:
                raise VerifyException(
                    f"tile.gemm: operand {name} has shape {list(t.get_shape())}, expected "
                    f"{list(want)} = ({', '.join(d.upper() for d in dims[name])})"
                )
        if self.scheme_value not in (1, 2, 3, 4):
            raise VerifyException(f"tile.gemm: scheme must be 1, 2, 3 or 4 (Table 4.1), got {self.scheme_value}")
        vec, a_axis, b_axis = scheme_info(self.scheme_value)
        if self.vec_dim != vec:
            raise VerifyException(
                f"{w}: vectorises {vec.value.upper()} (Table 4.1), but vec = {self.vec_dim.value}"
            )
        vname, oname = ("m", "n") if vec == VecDim.M else ("n", "m")
        if size[vname] % GEMM_VEC_MULTIPLE:
            raise VerifyException(
                f"{w}: vectorised dim {vname.upper()} = {size[vname]} must be a multiple of "
                f"{GEMM_VEC_MULTIPLE} (16 per CPE x 8, 004 L885)"
            )
        if size[oname] % GEMM_OTHER_MULTIPLE:
            raise VerifyException(
                f"{w}: dim {oname.upper()} = {size[oname]} must be a multiple of {GEMM_OTHER_MULTIPLE} (4 per CPE x 8, 004 L885)"
            )
        if k % GEMM_K_MULTIPLE:
            raise VerifyException(f"{w}: K = {k} must be a multiple of {GEMM_K_MULTIPLE} (004 L885)")
        # Distribution implied by the travel directions (A1/A2).
        if a_axis == "row":  # A(i, T) broadcast along row i: rows carry M, columns carry K
            on_rows = {"A": "m", "B": "k", "C": "m"}
        else:  # A travels along columns: rows carry K of A, N of B/C
            on_rows = {"A": "k", "B": "n", "C": "n"}
        for name, t in types.items():
            rd = t.mesh_row_dim()
            v = ops[name]
            if rd is None:
                raise VerifyException(
                    f"{w}: operand {name} (%{_buf_name(v)}) must be distributed rc or cr over the mesh, got {t.dist.data} "
                    "(or use the overlapping distribution: A and C cpe, B rep)"
                )
            got = dims[name][rd]
            if got != on_rows[name]:
                word = {"row": "rows", "col": "columns"}
                travel = {"A": a_axis, "B": b_axis, "C": None}[name]
                why = f"{name} travels along mesh {word[travel]}" if travel else f"A travels along mesh {word[a_axis]}"
                raise VerifyException(
                    f"{w}: {why} (Table 4.1), so %{_buf_name(v)} needs {on_rows[name].upper()} on mesh rows, "
                    f"but its dims ({', '.join(d.upper() for d in dims[name])}) with dist {t.dist.data} "
                    f"put {got.upper()} on mesh rows"
                )
        vec_operand = "A" if vec == VecDim.M else "B"
        for name in (vec_operand, "C"):
            t = types[name]
            cd = dims[name][t.contiguous_dim()]
            if cd != vname:
                raise VerifyException(
                    f"{w}: %{_buf_name(ops[name])} must store the vectorised dim {vname.upper()} contiguously in LDM "
                    f"(vector loads of 4 consecutive elements), but layout {t.layout.data} makes {cd.upper()} contiguous"
                )
        if self.c is self.a or self.c is self.b:
            raise VerifyException("tile.gemm: C must be a different buffer from A and B")
        limit = machine_of(self).ldm_user_bytes
        fp = footprint_of([self.a, self.b, self.c])
        total = sum(b for _, b in fp)
        if total > limit:
            listing = ", ".join(f"%{nm} {b} B" for nm, b in fp)
            raise VerifyException(
                f"{w}: LDM footprint of A, B, C is {total} bytes per CPE > ldm_user_bytes = {limit} "
                f"(double buffers counted twice): {listing}"
            )

    def _verify_overlapping(self) -> None:
        """Rules of the overlapping distribution (004 L708): every CPE holds all of B (``rep``)
        and its ``ceil(M/64)`` rows of A and C, both split 64-way along M (``cpe`` on C's dim 0;
        on A's dim 0, or with ``trans_a`` -- A stored (K, M) -- ``cpe1`` on its dim 1); no RLC, so
        f32 (vmas) and f64 (vmad) are both legal, all three the same, or mixed: an f64 C with f32
        A and/or B (widened by their loads, fp64 FMA; see ``loop.gemm_block``); shapes agree;
        ``vec`` agrees with ``scheme``; the vectorised dim is contiguous in the vector-loaded operand
        and C and its per-CPE extent is a multiple of 4 lanes; LDM footprint <= ldm_user_bytes."""
        w = f"tile.gemm scheme {self.scheme_value} (overlapping distribution)"
        ops = {"A": self.a, "B": self.b, "C": self.c}
        # operand_def(TileBufType): IRDL verified the operand types before verify_
        types = {n: cast(TileBufType, v.type) for n, v in ops.items()}
        elems = {_elem_name(t.element_type) for t in types.values()}
        if len(elems) != 1 and _elem_name(types["C"].element_type) != "f64":
            raise VerifyException(
                f"{w}: A, B and C must share the element type (f32 or f64), or C be f64 with f32 operands "
                f"(mixed), got {sorted(elems)}")
        m, n, k = self.mnk
        size = {"m": m, "n": n, "k": k}
        dims = self.operand_dims()
        for name, t in types.items():
            assert isinstance(t, TileBufType)
            if len(t.get_shape()) != 2:
                raise VerifyException(f"tile.gemm: operand {name} must be rank 2, got {t}")
            want = tuple(size[d] for d in dims[name])
            if t.get_shape() != want:
                raise VerifyException(
                    f"tile.gemm: operand {name} has shape {list(t.get_shape())}, expected "
                    f"{list(want)} = ({', '.join(d.upper() for d in dims[name])})"
                )
        if self.scheme_value not in (1, 2, 3, 4):
            raise VerifyException(f"tile.gemm: scheme must be 1, 2, 3 or 4 (Table 4.1), got {self.scheme_value}")
        vec = scheme_info(self.scheme_value)[0]
        if self.vec_dim != vec:
            raise VerifyException(f"{w}: vectorises {vec.value.upper()} (Table 4.1), but vec = {self.vec_dim.value}")
        ta, tc = types["A"], types["C"]
        assert isinstance(ta, TileBufType) and isinstance(tc, TileBufType)
        a_md = 1 if self.trans_a is not None else 0
        for name, t, md in (("A", ta, a_md), ("C", tc, 0)):
            if t.split_dim != md or t.halo:
                raise VerifyException(
                    f"{w}: %{_buf_name(ops[name])} must be split over the CPEs along its M dim (dim {md}: "
                    f"dist {cpe_dist(md)}), got {t.dist.data}"
                )
        vname = vec.value
        local = {"m": ta.local_shape()[a_md], "n": n}
        if local[vname] % 4:
            raise VerifyException(
                f"{w}: the per-CPE extent of the vectorised dim {vname.upper()} is {local[vname]}, "
                "not a multiple of 4 (vector lanes)"
            )
        vec_operand = "A" if vec == VecDim.M else "B"
        for name in (vec_operand, "C"):
            t = types[name]
            assert isinstance(t, TileBufType)
            cd = dims[name][t.contiguous_dim()]
            if cd != vname:
                raise VerifyException(
                    f"{w}: %{_buf_name(ops[name])} must store the vectorised dim {vname.upper()} contiguously in LDM "
                    f"(vector loads of 4 consecutive elements), but layout {t.layout.data} makes {cd.upper()} contiguous"
                )
        if self.c is self.a or self.c is self.b:
            raise VerifyException("tile.gemm: C must be a different buffer from A and B")
        limit = machine_of(self).ldm_user_bytes
        fp = footprint_of([self.a, self.b, self.c])
        total = sum(b for _, b in fp)
        if total > limit:
            listing = ", ".join(f"%{nm} {b} B" for nm, b in fp)
            raise VerifyException(
                f"{w}: LDM footprint of A, B, C is {total} bytes per CPE > ldm_user_bytes = {limit} "
                f"(double buffers counted twice): {listing}"
            )


# --------------------------------------------------------------------------------------------
# tile.map
# --------------------------------------------------------------------------------------------


@irdl_op_definition
class MapOp(MapParamsOp):
    """``tile.map KIND [ins(%x, ... : types)] out(%y : type) {params}``: a data-parallel map on
    LDM tiles, every CPE on its local blocks (memory-bound operators, 004 L1225-1246, L983;
    no RLC, R6). Kinds and shape rules: :mod:`taihu.dialects.mapkind`.

    Verified: arity, parameters, element types and logical shapes (:func:`check_map`); and that
    the map is CPE-local: inputs with the output's shape share its distribution (and layout,
    except ``copy``/``convert`` which may re-layout); smaller (broadcast) inputs are ``rep``, or
    ``cpe``-distributed with the output's dim 0; windows, reduction/softmax/LRN axes and
    transposes never cross the split dim (rc/cr tiles only take element-wise kinds).
    """

    name = "tile.map"
    kind = prop_def(MapKindAttr)
    inputs = var_operand_def(TileBufType)
    out = operand_def(TileBufType)

    assembly_format = (
        "$kind (`ins` `(` $inputs^ `:` type($inputs) `)`)? `out` `(` $out `:` type($out) `)` attr-dict"
    )

    def __init__(
        self,
        kind: MapKind,
        inputs: Sequence[SSAValue | Operation],
        out: SSAValue | Operation,
        **params: object,
    ):
        props = make_params(**params)
        props["kind"] = MapKindAttr(kind)
        super().__init__(operands=[inputs, out], properties=props)

    @property
    def map_kind(self) -> MapKind:
        return self.kind.data

    def verify_(self) -> None:
        _require_kernel(self)
        kind = self.map_kind
        if KIND_INFO[kind].loop_only:
            raise VerifyException(
                f"tile.map {kind.value}: kind {kind.value} is loop-level only (use tile.im2col / tile.winograd_*)"
            )
        ins = [v.type for v in self.inputs]
        out = self.out.type
        assert isinstance(out, TileBufType) and all(isinstance(t, TileBufType) for t in ins)
        tins = cast("list[TileBufType]", ins)  # asserted just above
        err = check_map(
            kind,
            [t.get_shape() for t in tins],
            [_elem_name(t.element_type) for t in tins],
            out.get_shape(),
            _elem_name(out.element_type),
            self.params(),
        )
        if err:
            raise VerifyException(f"tile.map {kind.value}: {err}")
        for v in self.inputs:
            if v is self.out and kind in (MapKind.TRANSPOSE,) + tuple(
                k for k, i in KIND_INFO.items() if i.shape_rule in ("window", "depthwise", "grouped", "grouped_direct", "reduce", "axis")
            ):
                raise VerifyException(f"tile.map {kind.value}: output must not alias an input")
        _check_map_distribution(self, kind, list(self.inputs), self.out)


def _check_map_distribution(op: MapOp, kind: MapKind, inputs: list[SSAValue], out_v: SSAValue) -> None:
    """The CPE-locality rules of :class:`MapOp` (``sd``: the output's split dim for cpe/cpe<d>)."""
    out = out_v.type
    assert isinstance(out, TileBufType)
    w = f"tile.map {kind.value}"
    od = out.dist_kind
    rule = KIND_INFO[kind].shape_rule
    oshape = out.get_shape()
    rank = len(oshape)
    sd = out.split_dim if od == Dist.CPE else None
    if od in (Dist.RC, Dist.CR) and rule != "elementwise" and rule != "fill":
        raise VerifyException(
            f"{w}: {rule} maps must be CPE-local; %{_buf_name(out_v)} is distributed {od.value} "
            "(use cpe or rep tiles)"
        )
    perm: tuple[int, ...] = tuple(op.params()["perm"]) if rule == "transpose" else ()  # type: ignore[arg-type]
    if out.halo:
        raise VerifyException(f"{w}: the output %{_buf_name(out_v)} must not have a halo ({out.dist.data})")
    # LRN along the split dim: the input carries the window's neighbours as a halo (cpe<d>+<h>,
    # h = size - 1, the halo form of the map), so each CPE's block is complete
    halo_lrn = (
        kind == MapKind.LRN and sd is not None and op.params()["axis"] == sd and len(inputs) == 1
        and cast(TileBufType, inputs[0].type).halo == int(cast(int, op.params()["size"])) - 1  # map operands are tile bufs
    )
    if sd is not None:
        if rule in ("window", "depthwise", "grouped", "grouped_direct") and sd >= rank - len(op.params()["kernel"]):  # type: ignore[arg-type]
            raise VerifyException(f"{w}: the window must not cover dim {sd}, which is split over the CPEs ({out.dist.data})")
        if rule in ("reduce", "axis") and op.params()["axis"] == sd and not halo_lrn:
            raise VerifyException(
                f"{w}: axis {sd} is split over the CPEs (dist {out.dist.data}); the map must be CPE-local"
            )
    for i, v in enumerate(inputs):
        t = v.type
        assert isinstance(t, TileBufType)
        tshape = t.get_shape()
        same_shape = tshape == oshape
        if t.halo:
            base = t.dist.data.partition("+")[0]
            if not halo_lrn or base != out.dist.data or tshape[sd] != oshape[sd] + t.halo:  # type: ignore[index]
                raise VerifyException(
                    f"{w}: input %{_buf_name(v)} has a halo ({t.dist.data}): only lrn along the split dim takes "
                    f"one (halo = size - 1, dim {sd} = the output's + halo, output {base})"
                )
            continue
        if rule in ("window", "depthwise", "grouped", "grouped_direct") and i == 0:
            if t.dist.data != out.dist.data or (sd is not None and tshape[sd] != oshape[sd]):
                raise VerifyException(
                    f"{w}: input %{_buf_name(v)} must have the output's distribution {out.dist.data} and dim {sd or 0}"
                )
            continue
        if rule == "transpose" and sd is not None:
            # the input dim that becomes the output's split dim must be the input's split dim
            if t.dist_kind != Dist.CPE or t.split_dim != perm[sd] or tshape[perm[sd]] != oshape[sd]:
                raise VerifyException(
                    f"{w}: input %{_buf_name(v)} ({t.dist.data}) must be split along dim {perm[sd]} "
                    f"(perm[{sd}]) with {oshape[sd]} elements: the output is {out.dist.data}"
                )
            continue
        if rule == "transpose" or (same_shape and rule not in ("window", "depthwise", "grouped", "grouped_direct")) or (rule in ("reduce", "axis")):
            if t.dist.data != out.dist.data:
                raise VerifyException(
                    f"{w}: input %{_buf_name(v)} is distributed {t.dist.data}, the output {out.dist.data}: maps are CPE-local"
                )
            if (
                same_shape
                and kind not in (MapKind.COPY, MapKind.CONVERT)
                and t.layout_kind != out.layout_kind
            ):
                raise VerifyException(
                    f"{w}: input %{_buf_name(v)} has layout {t.layout.data}, the output {out.layout.data} "
                    "(only copy/convert re-layout)"
                )
            if rule in ("reduce", "axis") and sd is not None and tshape[sd] != oshape[sd]:
                raise VerifyException(f"{w}: input %{_buf_name(v)} must keep the output's dim {sd}")
            continue
        # a broadcast (smaller) input
        if t.dist_kind == Dist.REP:
            continue
        if sd is not None and t.dist.data == out.dist.data and len(tshape) == rank and tshape[sd] == oshape[sd]:
            continue
        raise VerifyException(
            f"{w}: broadcast input %{_buf_name(v)} ({list(tshape)}, dist {t.dist.data}) must be rep, "
            f"or {out.dist.data} with the output's rank and dim {sd or 0}"
        )


# --------------------------------------------------------------------------------------------
# tile.unfold: the B operand of the implicit convolution built in LDM
# --------------------------------------------------------------------------------------------


@irdl_op_definition
class UnfoldOp(MapParamsOp):
    """``tile.unfold ins(%p0, ..., %p{kh-1} : types) out(%b : type) {kernel = [kw], strides = [s],
    pads = [pl, pr], dilations = [d]}``: the B operand (K x N) of an implicit-GEMM convolution
    built in LDM from input rows (algorithms.md §C3 with the taps of §C2's im2col concatenated
    along K, so that one mesh GEMM reduces over channels x kernel taps; 004 L1045-1047 unfold
    one input row into the kw col rows it feeds, here per CPE on LDM-resident rows).

    Operands: ``p_kr`` (kr = 0..kh-1): !tile.buf<G x 8 x W, rc> -- input row ``kr`` of the
    window of each of the 8 output rows (dim 1, one per mesh column) for G channels (dim 0, G/8
    per mesh row), f32 or f64; ``b``: !tile.buf<(kh*G*kw) x (8*Wo) x T, rc> (row layout), with
    ``Wo = (W + pl + pr - d*(kw-1) - 1) // s + 1`` (``pr`` may exceed the convolution's own
    padding to round Wo up to the register tile: the extra columns follow the same formula and
    the consumer drops them). With ``g = G/8``::

        b[((ci_hi*kh + kr)*g + ci_lo)*kw + kc, q*Wo + co] = xp_kr[ci_hi*g + ci_lo, q, co*s + kc*d]

    where ``xp_kr`` is ``p_kr`` zero-padded by pl/pr along its last dim. The K order is blocked
    by the mesh rows (``ci_hi`` = mesh row), so every CPE's local block is its own channels'
    rows unfolded: (kh, g, kw) x Wo, built with kh ``loop.map im2col`` (004 L1045) and no
    communication. The weights must use the same K order (re-laid at compile time).

    Verified: kh >= 1 inputs of one type, rank 3, ``rc``, (G, 8, W) with G % 8 == 0; output
    rank 2, ``rc``, layout row, f32 or f64, shape (kh*G*kw, 8*Wo); the parameters as for the
    loop-level ``im2col`` map kind (:mod:`taihu.dialects.mapkind`).
    """

    name = "tile.unfold"
    inputs = var_operand_def(TileBufType)
    out = operand_def(TileBufType)

    assembly_format = "`ins` `(` $inputs `:` type($inputs) `)` `out` `(` $out `:` type($out) `)` attr-dict"

    def __init__(
        self,
        inputs: Sequence[SSAValue | Operation],
        out: SSAValue | Operation,
        kw: int,
        stride: int = 1,
        pads: tuple[int, int] = (0, 0),
        dilation: int = 1,
    ):
        props = make_params(kernel=(kw,), strides=(stride,), pads=pads, dilations=(dilation,))
        super().__init__(operands=[inputs, out], properties=props)

    def geometry(self) -> dict[str, int]:
        """kh, kw, stride, pl, pr, dilation, G (channels), W (row length), Wo (output columns)."""
        p = self.params()
        # array parameters are int tuples (make_params / MapParamsOp.params)
        kw = tuple(cast("Sequence[int]", p.get("kernel", (1,))))[0]
        s = tuple(cast("Sequence[int]", p.get("strides", (1,))))[0]
        pl, pr = tuple(cast("Sequence[int]", p.get("pads", (0, 0))))
        d = tuple(cast("Sequence[int]", p.get("dilations", (1,))))[0]
        t = self.inputs[0].type if self.inputs else None
        g_ch, w = (t.get_shape()[0], t.get_shape()[-1]) if isinstance(t, TileBufType) else (0, 0)
        return {"kh": len(self.inputs), "kw": kw, "stride": s, "pl": pl, "pr": pr, "dilation": d,
                "G": g_ch, "W": w, "Wo": _conv_out(w, kw, s, pl, pr, d)}

    def verify_(self) -> None:
        _require_kernel(self)
        w = "tile.unfold"
        if not self.inputs:
            raise VerifyException(f"{w}: needs at least one input row tile (one per kernel row)")
        p = self.params()
        for key, n, lo in (("kernel", 1, 1), ("strides", 1, 1), ("pads", 2, 0), ("dilations", 1, 1)):
            vals = cast("Sequence[int] | None", p.get(key))  # array parameters are int tuples
            if vals is None and key in ("kernel", "strides"):
                raise VerifyException(f"{w}: missing parameter '{key}'")
            if vals is not None and (len(vals) != n or min(vals) < lo):
                raise VerifyException(f"{w}: {key} must have {n} value(s) >= {lo}, got {list(vals)}")
        t0 = self.inputs[0].type
        assert isinstance(t0, TileBufType)
        for v in self.inputs:
            t = v.type
            assert isinstance(t, TileBufType)
            if t != t0:
                raise VerifyException(f"{w}: all input row tiles must have one type, got {t0} and {t}")
        s0 = t0.get_shape()
        if len(s0) != 3 or t0.dist_kind != Dist.RC or s0[1] != MESH:
            raise VerifyException(
                f"{w}: input row tiles must be rank-3 rc (G, {MESH}, W) (G channels, one output row per mesh "
                f"column), got {t0}"
            )
        out = self.out.type
        assert isinstance(out, TileBufType)
        if len(out.get_shape()) != 2 or out.dist_kind != Dist.RC or out.layout_kind != Layout.ROW:
            raise VerifyException(f"{w}: the output must be a rank-2 rc tile with layout row, got {out}")
        geo = self.geometry()
        if geo["Wo"] < 1:
            raise VerifyException(f"{w}: the window does not fit the padded row of {geo['W']} elements")
        want = (geo["kh"] * s0[0] * geo["kw"], MESH * geo["Wo"])
        if out.get_shape() != want:
            raise VerifyException(
                f"{w}: output shape {list(out.get_shape())} != (kh*G*kw, 8*Wo) = {list(want)} for kh = {geo['kh']}, "
                f"G = {s0[0]}, kw = {geo['kw']}, Wo = {geo['Wo']}"
            )


# --------------------------------------------------------------------------------------------
# Memory-to-memory primitives: im2col and Winograd F(2x2, 3x3)
# --------------------------------------------------------------------------------------------


def _conv_out(size: int, k: int, stride: int, pad_lo: int, pad_hi: int, dil: int) -> int:
    return (size + pad_lo + pad_hi - dil * (k - 1) - 1) // stride + 1


def _nchw(t: MemRefType, layout: DataLayout) -> tuple[int, int, int, int]:
    s = t.get_shape()
    if layout == DataLayout.NCHW:
        return s[0], s[1], s[2], s[3]
    return s[0], s[3], s[1], s[2]


class _MemPrimitive(IRDLOperation):
    """Base: two memref operands, ``input -> output``, properties in the attribute dict."""

    input = operand_def(MemRefType)
    output = operand_def(MemRefType)
    layout = opt_prop_def(DataLayoutAttr)

    irdl_options: tuple[IRDLOption, ...] = (ParsePropInAttrDict(),)
    assembly_format = "$input `->` $output attr-dict `:` type($input) `->` type($output)"

    @property
    def data_layout(self) -> DataLayout:
        return DataLayout.NCHW if self.layout is None else self.layout.data

    def _common(self, in_rank: int, out_rank: int) -> tuple[MemRefType, MemRefType]:
        _require_kernel(self)
        ti = _main_memref(self, "input", self.input.type)
        to = _main_memref(self, "output", self.output.type)
        if ti.get_element_type() != to.get_element_type():
            raise VerifyException(
                f"{_where(self)}: input and output element types differ ({ti.get_element_type()} vs {to.get_element_type()})"
            )
        if len(ti.get_shape()) != in_rank or len(to.get_shape()) != out_rank:
            raise VerifyException(
                f"{_where(self)}: expects a rank-{in_rank} input and a rank-{out_rank} output, got {ti} -> {to}"
            )
        return ti, to


def _pairs(op: Operation, name: str, v: tuple[int, ...] | None, n: int, default: int, minimum: int) -> tuple[int, ...]:
    if v is None:
        return (default,) * n
    if len(v) != n or any(x < minimum for x in v):
        raise VerifyException(f"{_where(op)}: {name} must have {n} values >= {minimum}, got {list(v)}")
    return v


@irdl_op_definition
class Im2colOp(_MemPrimitive):
    """``tile.im2col %x -> %col {kernel, strides, pads, dilations, layout, rows_per_task}``:
    the tensorised im2col of 004 §5.1.1 (L1045-1049, algorithms.md §C2) on the CPEs.

    ``x``: (N, C, H, W) (``layout nchw``, default) or (N, H, W, C) (``nhwc``); ``col``:
    (C*kh*kw, N*Ho*Wo) with row (c, i, j) -> c*kh*kw + i*kw + j (the ONNX weight flattening, so
    conv = W.reshape(M, -1) x col) and column (n, ho, wo) -> (n*Ho + ho)*Wo + wo;
    ``col[(c,i,j), (n,ho,wo)] = x[n, c, ho*sh + i*dh - pt, wo*sw + j*dw - pl]`` (0 outside).
    ``pads`` = (pt, pl, pb, pr) in ONNX order. Tasks = input rows of one channel, distributed
    over the 64 CPEs; ``rows_per_task`` batches rows per task (L1049, small C_i; when absent,
    tile-to-loop picks the largest count that fits LDM and still gives every CPE a task).
    ``image_columns`` P (default Ho*Wo): col is (C*kh*kw, N*P) and column (n, ho, wo) ->
    n*P + ho*Wo + wo, i.e. each image's Ho*Wo columns padded to P (the padded graph-level
    allocation of 004 L865 / algorithms.md §F2: a GEMM block of P columns never crosses the
    border); the P - Ho*Wo padding columns of each image are not written.
    """

    name = "tile.im2col"
    kernel = prop_def(DenseArrayBase)
    strides = opt_prop_def(DenseArrayBase)
    pads = opt_prop_def(DenseArrayBase)
    dilations = opt_prop_def(DenseArrayBase)
    rows_per_task = opt_prop_def(IntegerAttr[I64])
    image_columns = opt_prop_def(IntegerAttr[I64])

    def geometry(self) -> dict[str, tuple[int, ...]]:
        return {
            "kernel": _arr(self.kernel) or (),
            "strides": _arr(self.strides) or (1, 1),
            "pads": _arr(self.pads) or (0, 0, 0, 0),
            "dilations": _arr(self.dilations) or (1, 1),
        }

    def columns_per_image(self) -> int | None:
        """P of ``image_columns`` (None: Ho*Wo, unpadded)."""
        return _int(self.image_columns)

    def verify_(self) -> None:
        ti, to = self._common(4, 2)
        kh_kw = _pairs(self, "kernel", _arr(self.kernel), 2, 1, 1)
        st = _pairs(self, "strides", _arr(self.strides), 2, 1, 1)
        pads = _pairs(self, "pads", _arr(self.pads), 4, 0, 0)
        dil = _pairs(self, "dilations", _arr(self.dilations), 2, 1, 1)
        if _int(self.rows_per_task, 1) < 1:  # type: ignore[operator]
            raise VerifyException("tile.im2col: rows_per_task must be >= 1")
        n, c, h, w = _nchw(ti, self.data_layout)
        ho = _conv_out(h, kh_kw[0], st[0], pads[0], pads[2], dil[0])
        wo = _conv_out(w, kh_kw[1], st[1], pads[1], pads[3], dil[1])
        if ho < 1 or wo < 1:
            raise VerifyException(f"tile.im2col: empty output ({ho}x{wo}) for input {ti}")
        p = self.columns_per_image()
        if p is not None and p < ho * wo:
            raise VerifyException(f"tile.im2col: image_columns = {p} < Ho*Wo = {ho * wo}")
        want = (c * kh_kw[0] * kh_kw[1], n * (ho * wo if p is None else p))
        if to.get_shape() != want:
            what = "N*Ho*Wo" if p is None else "N*image_columns"
            raise VerifyException(f"tile.im2col: col must be (C*kh*kw, {what}) = {list(want)}, got {list(to.get_shape())}")


WINOGRAD_M = 2  # F(2x2, 3x3): output tile m = 2, filter r = 3, alpha = m + r - 1 = 4 (L1130)
WINOGRAD_R = 3
WINOGRAD_ALPHA = WINOGRAD_M + WINOGRAD_R - 1


@irdl_op_definition
class WinogradFilterOp(_MemPrimitive):
    """``tile.winograd_filter %w -> %u``: ``u = G w G^T`` for every 3x3 filter (Algorithm 5
    step 1, L1130-1196, algorithms.md §C4; G from Lavin & Gray 2016); w: (N_o, N_i, 3, 3)
    (ONNX), u: (16, N_o, N_i) with u[xi*4 + nu, k, c] (layout of L1187). Data-parallel over the
    N_o*N_i filters."""

    name = "tile.winograd_filter"

    def verify_(self) -> None:
        ti, to = self._common(4, 3)
        no, ni, kh, kw = ti.get_shape()
        if (kh, kw) != (WINOGRAD_R, WINOGRAD_R):
            raise VerifyException(f"tile.winograd_filter: F(2x2,3x3) needs 3x3 filters, got {kh}x{kw}")
        want = (WINOGRAD_ALPHA**2, no, ni)
        if to.get_shape() != want:
            raise VerifyException(f"tile.winograd_filter: u must be (16, N_o, N_i) = {list(want)}, got {list(to.get_shape())}")


def winograd_tiles(ro: int, co: int) -> int:
    """Tiles per image T = ceil(R_o/2) * ceil(C_o/2) (L1144 [corrected], model §12 #12)."""
    return -(-ro // WINOGRAD_M) * -(-co // WINOGRAD_M)


@irdl_op_definition
class WinogradInputOp(_MemPrimitive):
    """``tile.winograd_input %x -> %v {pads, layout, tiles_per_cpe}``: ``v = B^T d B`` for every
    4x4 input tile (stride 2, overlapping by 2) of every image and channel (Algorithm 5 step 2,
    L1138-1175). x: (B, N_i, H, W) (nchw) or (B, H, W, N_i) (nhwc); v: (16, P, N_i) with
    P >= B*T (T = :func:`winograd_tiles` of the 3x3 stride-1 output R_o = H + pt + pb - 2,
    C_o = W + pl + pr - 2; rows past B*T pad P to the GEMM's block, L1194-1196, and are not
    written: every GEMM row is independent and ``tile.winograd_output`` reads rows < B*T);
    row p = b*T + tr*ceil(C_o/2) + tc. ``tiles_per_cpe`` = m' of L1138 (default 1)."""

    name = "tile.winograd_input"
    pads = opt_prop_def(DenseArrayBase)
    tiles_per_cpe = opt_prop_def(IntegerAttr[I64])

    def verify_(self) -> None:
        ti, to = self._common(4, 3)
        pads = _pairs(self, "pads", _arr(self.pads), 4, 0, 0)
        if _int(self.tiles_per_cpe, 1) < 1:  # type: ignore[operator]
            raise VerifyException("tile.winograd_input: tiles_per_cpe must be >= 1")
        b, ni, h, w = _nchw(ti, self.data_layout)
        ro, co = h + pads[0] + pads[2] - 2, w + pads[1] + pads[3] - 2
        if ro < 1 or co < 1:
            raise VerifyException(f"tile.winograd_input: empty output ({ro}x{co})")
        p_min = b * winograd_tiles(ro, co)
        a2, p, c = to.get_shape()
        if a2 != WINOGRAD_ALPHA**2 or c != ni or p < p_min:
            raise VerifyException(
                f"tile.winograd_input: v must be (16, P >= B*T = {p_min}, N_i = {ni}), got {list(to.get_shape())}"
            )


#: activations ``tile.winograd_output`` may apply in LDM before the store (no parameters)
WINOGRAD_OUTPUT_ACTIVATIONS = (MapKind.RELU, MapKind.SIGMOID, MapKind.TANH)


@irdl_op_definition
class WinogradOutputOp(_MemPrimitive):
    """``tile.winograd_output %m [bias %b : memref<N_o x T>] -> %y {layout, activation}``:
    ``y = A^T m A`` per 2x2 output tile (Algorithm 5 step 4, L1164-1168, L1183); m: (16, P, N_o)
    (the 16 batched GEMM results, rows as in ``tile.winograd_input``, P >= B*T), y: (B, N_o,
    R_o, C_o) (nchw) or (B, R_o, C_o, N_o) (nhwc); partial tiles at odd R_o/C_o are clipped.
    Optional epilogue while the outputs are in LDM (instead of another pass over y): ``bias``
    (N_o,) added per output channel, then ``activation`` (relu | sigmoid | tanh)."""

    name = "tile.winograd_output"
    bias = opt_operand_def(MemRefType)
    activation = opt_prop_def(MapKindAttr)

    irdl_options = (AttrSizedOperandSegments(as_property=True), ParsePropInAttrDict())
    assembly_format = (
        "$input (`bias` $bias^ `:` type($bias))? `->` $output attr-dict `:` type($input) `->` type($output)"
    )

    def __init__(self, m: SSAValue | Operation, y: SSAValue | Operation, bias: SSAValue | Operation | None = None,
                 activation: MapKind | None = None, layout: DataLayout | None = None):
        props: dict[str, Attribute] = {}
        if activation is not None:
            props["activation"] = MapKindAttr(activation)
        if layout is not None:
            props["layout"] = DataLayoutAttr(layout)
        by_name = {"input": [m], "output": [y], "bias": [bias] if bias is not None else []}
        order = [n for n, _ in type(self).get_irdl_definition().operands]
        super().__init__(operands=[by_name[n] for n in order], properties=props)

    def verify_(self) -> None:
        ti, to = self._common(3, 4)
        b, no, ro, co = _nchw(to, self.data_layout)
        a2, p, c = ti.get_shape()
        p_min = b * winograd_tiles(ro, co)
        if a2 != WINOGRAD_ALPHA**2 or c != no or p < p_min:
            raise VerifyException(
                f"tile.winograd_output: m must be (16, P >= B*T = {p_min}, N_o = {no}), got {list(ti.get_shape())}"
            )
        if self.bias is not None:
            tb = _main_memref(self, "bias", self.bias.type)
            if tb.get_shape() != (no,) or tb.get_element_type() != to.get_element_type():
                raise VerifyException(
                    f"tile.winograd_output: bias must be memref<{no}x{to.get_element_type()}>, got {tb}"
                )
        if self.activation is not None and self.activation.data not in WINOGRAD_OUTPUT_ACTIVATIONS:
            raise VerifyException(
                f"tile.winograd_output: activation must be one of "
                f"{', '.join(k.value for k in WINOGRAD_OUTPUT_ACTIVATIONS)}, got {self.activation.data.value}"
            )



# --------------------------------------------------------------------------------------------
# Schedules
# --------------------------------------------------------------------------------------------


@irdl_attr_definition
class ScheduleAttr(ParametrizedAttribute):
    """``#tile.schedule<"ALGORITHM" {name = value, ...}>``: every decision of one op's plan.

    The schedule of a compute op that ``convert-graph-to-tile`` plans, as data a user can read,
    edit and search (issue "schedules as data"; swAutoDNN's explicit schedule, 004 Ch.6 L1395-1489;
    FlexTensor's schedule space, 001 Ch.4): ``graph-schedule`` puts it on ``graph.conv2d``,
    ``graph.matmul`` and ``graph.gemm`` as the discardable attribute ``tile.schedule``, and
    ``convert-graph-to-tile`` follows it exactly (an illegal one is a diagnostic at the op)::

        %y = graph.conv2d %x, %w {pads = array<i64: 1, 1, 1, 1>,
               tile.schedule = #tile.schedule<"implicit" {b_b = 1 : i64, b_ro = 2 : i64, bk = 32 : i64,
                                                          bm = 64 : i64, bn = 56 : i64, vec = "n"}>} : ...

    ``ALGORITHM``: ``im2col`` (explicit im2col + GEMM, 004 §5.1.1), ``implicit`` (004 Alg 3/4),
    ``unfold`` (the implicit convolution with ``tile.unfold`` K blocks), ``winograd`` (F(2x2,3x3),
    004 Alg 5) for convolutions; ``gemm`` (the SUMMA mesh GEMM, 004 §4.2) and ``overlap`` (the
    overlapping distribution, 004 L708) for GEMMs. Parameters (integers, strings, booleans) are the
    plan's free decisions, e.g. ``vec`` (the vector dimension, "m" or "n", 004 Table 4.1), ``bm``/
    ``bn``/``bk`` (memory-level blocks, elements, 004 §4.2), ``double_c`` (the stored C tile
    double-buffered), ``b_b``/``b_ro`` (images / output rows sharing a weight tile, 004 Alg 3/4),
    ``tiles_per_cpe`` (Winograd input tiles per CPE); the model's documentation
    (:mod:`taihu.backends.model.schedule`) lists each algorithm's parameters and their legality
    (units, LDM footprint against the target's ``ldm_user_bytes``).

    The memory-bound ops carry their tile (:mod:`taihu.backends.model.map_plans`): ``map``
    (element-wise ops, batch_norm, pad: ``split`` = the dim split over the 64 CPEs, ``rows`` its
    extent, ``chunk`` the next dim's), ``transpose`` (``window`` = the input dims in the tile,
    ``split``, ``rows``), ``window`` (pools: ``planes``, output ``rows``), ``reduce``
    (global_avg_pool: ``planes``, ``chunk``), ``axis`` (softmax / lrn: ``split``, ``rows``,
    ``channels``, ``cols``), e.g. ``#tile.schedule<"window" {planes = 64 : i64, rows = 14 : i64}>``.
    """

    name = "tile.schedule"

    algorithm: StringAttr
    params: DictionaryAttr

    def __init__(self, algorithm: str | StringAttr, params: Mapping[str, int | str | bool] | DictionaryAttr) -> None:
        alg = StringAttr(algorithm) if isinstance(algorithm, str) else algorithm
        if not isinstance(params, DictionaryAttr):
            params = DictionaryAttr({k: _schedule_value(v) for k, v in sorted(params.items())})
        super().__init__(alg, params)

    def values(self) -> dict[str, int | str | bool]:
        """The parameters as Python values (booleans from ``i1`` integers)."""
        out: dict[str, int | str | bool] = {}
        for k, v in self.params.data.items():
            if isinstance(v, IntegerAttr):
                width = v.type.width.data if isinstance(v.type, IntegerType) else 64
                out[k] = bool(v.value.data) if width == 1 else v.value.data
            else:
                assert isinstance(v, StringAttr)
                out[k] = v.data
        return out

    def verify(self) -> None:
        for k, v in self.params.data.items():
            if not isinstance(v, (IntegerAttr, StringAttr)):
                raise VerifyException(f"#tile.schedule: parameter '{k}' must be an integer, a string or a boolean, got {v}")

    def print_parameters(self, printer: Printer) -> None:
        with printer.in_angle_brackets():
            printer.print_string_literal(self.algorithm.data)
            printer.print_string(" ")
            printer.print_attribute(self.params)

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> list[Attribute]:
        with parser.in_angle_brackets():
            alg = StringAttr(parser.parse_str_literal("schedule algorithm"))
            params = parser.parse_attribute()
            if not isinstance(params, DictionaryAttr):
                parser.raise_error("#tile.schedule: expected a dictionary of parameters")
        return [alg, params]


def _schedule_value(v: int | str | bool) -> Attribute:
    if isinstance(v, bool):
        return IntegerAttr(int(v), IntegerType(1))
    if isinstance(v, int):
        return IntegerAttr(v, i64)
    return StringAttr(v)


Tile = Dialect(
    "tile",
    [
        KernelOp,
        ForOp,
        AllocOp,
        MoveOp,
        GemmOp,
        MapOp,
        UnfoldOp,
        Im2colOp,
        WinogradFilterOp,
        WinogradInputOp,
        WinogradOutputOp,
    ],
    [TileBufType, VecDimAttr, MapKindAttr, DataLayoutAttr, ScheduleAttr],
)
