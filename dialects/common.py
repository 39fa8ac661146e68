"""Definitions shared by the ``tile`` and ``loop`` dialects (no IR types of their own).

* :class:`VecDim`, :func:`scheme_info` and the §A5 multiples of the mesh GEMM primitive
  (algorithms.md §A4/A5, 004 Table 4.1 L769-775, L784, L885);
* the ``(%arg = %operand : type, ...)`` binding syntax of ``tile.kernel`` / ``loop.spmd``;
* :class:`MapParamsOp`, the parameter properties of ``tile.map`` / ``loop.map`` (kinds in
  :mod:`taihu.dialects.mapkind`), and :func:`make_params`.
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects.builtin import I64, DenseArrayBase, FloatAttr, IntegerAttr, f64, i64
from xdsl.ir import Attribute, BlockArgument, SSAValue
from xdsl.irdl import IRDLOperation, ParsePropInAttrDict, opt_prop_def
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.utils.str_enum import StrEnum

from taihu.dialects.mapkind import ALL_PARAMS


class VecDim(StrEnum):
    """Vectorised GEMM dimension (DSL ``vectorization(op, VecM|VecN)``, 004 L1443, L767)."""

    M = "m"
    N = "n"


def scheme_info(scheme: int) -> tuple[VecDim, str, str]:
    """Table 4.1 (004 L769-775; model §12 #6: the mnemonic suffix gives the direction):
    (vectorised dim, axis along which A travels, axis along which B travels).

    ====== ====== ====== ====== ====== =============
    scheme A load B load vec    A axis B axis
    ====== ====== ====== ====== ====== =============
    1      VLDC   LDDER  M (A)  col    row
    2      VLDR   LDDEC  M (A)  row    col
    3      LDDEC  VLDR   N (B)  col    row
    4      LDDER  VLDC   N (B)  row    col
    ====== ====== ====== ====== ====== =============
    """
    return {
        1: (VecDim.M, "col", "row"),
        2: (VecDim.M, "row", "col"),
        3: (VecDim.N, "col", "row"),
        4: (VecDim.N, "row", "col"),
    }[scheme]


#: A5 multiples (004 L784, L885, L1466; model §12 #5): vectorised global dim = 16 elements per
#: CPE (4 vector registers x 4 lanes) x 8 CPEs, other dim = 4 per CPE x 8, K = 1 per CPE x 8.
GEMM_VEC_MULTIPLE = 128
GEMM_OTHER_MULTIPLE = 32
GEMM_K_MULTIPLE = 8



def parse_bound_args(parser: Parser) -> tuple[list[SSAValue], list[Parser.Argument]]:
    """``(%a = %A : memref<..>, ...)`` -> operands and block arguments."""
    operands: list[SSAValue] = []
    args: list[Parser.Argument] = []

    def one() -> None:
        arg = parser.parse_argument(expect_type=False)
        parser.parse_punctuation("=")
        uop = parser.parse_unresolved_operand()
        parser.parse_punctuation(":")
        typ = parser.parse_type()
        operands.append(parser.resolve_operand(uop, typ))
        args.append(arg.resolve(typ))

    parser.parse_comma_separated_list(Parser.Delimiter.PAREN, one)
    return operands, args


def print_bound_args(printer: Printer, args: Sequence[BlockArgument], operands: Sequence[SSAValue]) -> None:
    printer.print_string("(")
    for i, (a, v) in enumerate(zip(args, operands)):
        if i:
            printer.print_string(", ")
        printer.print_block_argument(a, print_type=False)
        printer.print_string(" = ")
        printer.print_ssa_value(v)
        printer.print_string(" : ")
        printer.print_attribute(v.type)
    printer.print_string(")")


_FLOAT_PARAMS = ("value", "alpha", "beta", "bias", "lo", "hi")
_INT_PARAMS = ("size", "axis")
_ARRAY_PARAMS = ("kernel", "strides", "perm", "pads", "dilations")


class MapParamsOp(IRDLOperation):
    """Shared properties and parameter access of ``tile.map`` / ``loop.map``."""

    value = opt_prop_def(FloatAttr)
    alpha = opt_prop_def(FloatAttr)
    beta = opt_prop_def(FloatAttr)
    bias = opt_prop_def(FloatAttr)
    lo = opt_prop_def(FloatAttr)
    hi = opt_prop_def(FloatAttr)
    size = opt_prop_def(IntegerAttr[I64])
    axis = opt_prop_def(IntegerAttr[I64])
    kernel = opt_prop_def(DenseArrayBase)
    strides = opt_prop_def(DenseArrayBase)
    perm = opt_prop_def(DenseArrayBase)
    pads = opt_prop_def(DenseArrayBase)
    dilations = opt_prop_def(DenseArrayBase)

    irdl_options = (ParsePropInAttrDict(),)

    def params(self) -> dict[str, object]:
        """Parameters present, as Python values."""
        out: dict[str, object] = {}
        for p in ALL_PARAMS:
            a = self.properties.get(p)
            if a is None:
                continue
            if isinstance(a, FloatAttr):
                out[p] = a.value.data
            elif isinstance(a, IntegerAttr):
                out[p] = a.value.data
            elif isinstance(a, DenseArrayBase):
                out[p] = tuple(int(x) for x in a.get_values())
        return out


def make_params(**params: object) -> dict[str, Attribute]:
    """Python values -> map properties (floats, ints, int tuples)."""
    props: dict[str, Attribute] = {}
    for k, v in params.items():
        if k in _FLOAT_PARAMS:
            props[k] = FloatAttr(float(v), f64)  # type: ignore[arg-type]  # the key fixes the value's kind
        elif k in _INT_PARAMS:
            props[k] = IntegerAttr(int(v), i64)  # type: ignore[call-overload]  # the key fixes the value's kind
        elif k in _ARRAY_PARAMS:
            props[k] = DenseArrayBase.from_list(i64, list(v))  # type: ignore[call-overload]  # the key fixes the value's kind
        else:
            raise ValueError(f"unknown map parameter {k}")
    return props
