"""sw.new_instr / loop_to_sw.reg_instr (fast construction of register instructions; also what
RegInstr.parse builds) make the same ops as
``Operation.create``: same printing (custom and generic), verification inside a micro-kernel,
structural equality, and the IRDL property defaults filled in."""

from pathlib import Path

from xdsl.ir import Operation
from xdsl.parser import Parser
from xdsl.printer import Printer

from taihu.dialects import sw
from taihu.dialects.sw import _irdl_defaults as _default_props
from taihu.passes.conversion.loop_to_sw import reg_instr
from taihu.passes.pipelines import default_context

OPS = Path(__file__).resolve().parents[1] / "filecheck" / "dialects" / "sw" / "ops.mlir"


def _generic(op: Operation) -> str:
    import io

    out = io.StringIO()
    Printer(stream=out, print_generic_format=True).print_op(op)
    return out.getvalue()


def test_every_instruction_of_the_sw_round_trip_test():
    module = Parser(default_context(), OPS.read_text()).parse_module()
    mks = [o for o in module.walk() if isinstance(o, sw.MicrokernelOp)]
    assert mks
    n = 0
    for mk in mks:
        for op in list(mk.body.block.ops):
            if op.operands or op.results or op.regions:
                continue
            new = reg_instr(type(op), dict(op.properties))
            ref = type(op).create(properties=dict(op.properties))
            assert str(new) == str(ref) == str(op)
            assert _generic(new) == _generic(ref)
            assert new.is_structurally_equivalent(ref)
            assert new.attributes == ref.attributes and new.location == ref.location
            mk.body.block.insert_op_before(new, op)
            op.detach()
            op.erase()
            n += 1
    assert n > 20
    module.verify()  # the register instructions verify inside their micro-kernels
    assert str(module) == str(Parser(default_context(), OPS.read_text()).parse_module())


def test_defaults_are_filled_like_irdl():
    from xdsl.dialects import arith

    assert _default_props(arith.AddiOp)[0]  # overflowFlags has a default: the check below bites
    for cls in (sw.VlddOp, sw.VmadOp, sw.GetrOp, sw.LdfiOp, arith.AddiOp):
        dp, da = _default_props(cls)
        ref = cls.__new__(cls)
        Operation.__init__(ref, properties={})
        ref.__post_init__()  # IRDL fills default properties/attributes here
        assert ref.properties == dp and ref.attributes == da
