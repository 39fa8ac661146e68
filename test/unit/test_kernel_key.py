"""passes/conversion/kernel_key.py: structural keys of kernel bodies (kernel deduplication)."""

import pytest
from xdsl.parser import Parser

from taihu.dialects import loop
from taihu.passes.conversion.kernel_key import structural_key
from taihu.passes.pipelines import default_context

_IGNORE = {"loop.ldm_buffer": frozenset({"name"})}


def _spmd(body: str, arg: str = "memref<64xf32>", name: str = "k", attrs: str = "") -> loop.SpmdOp:
    text = f"""
    func.func @main(%x: {arg}) {{
      loop.spmd "{name}" ids(%r, %c) (%p = %x : {arg}) {attrs} {{
{body}
      }}
      func.return
    }}"""
    module = Parser(default_context(), text).parse_module()
    return next(o for o in module.walk() if isinstance(o, loop.SpmdOp))


BODY = """
        %buf = loop.ldm_buffer "{buf}" : !loop.ldm<8xf32>
        %{c} = arith.constant {v} : index
        %tk = loop.dma_start %p[%{c}] sizes [8] -> %buf : memref<64xf32> -> !loop.ldm<8xf32>
        loop.dma_wait %tk
        scf.for %i = %{c} to %{c} step %{c} {{
          %j = arith.addi %i, %{c} : index
          loop.barrier {scope}
        }}
"""


def body(buf="a", c="c0", v=0, scope="array"):
    return BODY.format(buf=buf, c=c, v=v, scope=scope)


def test_equal_up_to_names_and_kernel_attributes():
    a = _spmd(body(), name="k1", attrs='attributes {taihu.layer = "l1"}')
    b = _spmd(body(buf="other", c="zero"), name="k2", attrs='attributes {taihu.layer = "l2"}')
    assert structural_key(a, _IGNORE) == structural_key(b, _IGNORE)
    assert hash(structural_key(a, _IGNORE)) == hash(structural_key(b, _IGNORE))
    # the buffer name counts unless ignored
    assert structural_key(a) != structural_key(b)


@pytest.mark.parametrize("change", [dict(v=1), dict(scope="row")])
def test_properties_distinguish(change):
    assert structural_key(_spmd(body()), _IGNORE) != structural_key(_spmd(body(**change)), _IGNORE)


def test_argument_types_distinguish():
    a = _spmd(body())
    b = _spmd(body().replace("memref<64xf32>", "memref<128xf32>"), arg="memref<128xf32>")
    assert structural_key(a, _IGNORE) != structural_key(b, _IGNORE)


def test_nesting_distinguishes():
    inside = """
        %c0 = arith.constant 0 : index
        scf.for %i = %c0 to %c0 step %c0 {
          loop.barrier array
        }
        loop.barrier row
"""
    outside = """
        %c0 = arith.constant 0 : index
        scf.for %i = %c0 to %c0 step %c0 {
          loop.barrier array
          loop.barrier row
        }
"""
    assert structural_key(_spmd(inside)) != structural_key(_spmd(outside))


def test_operand_wiring_distinguishes():
    a = """
        %c0 = arith.constant 0 : index
        %c1 = arith.constant 1 : index
        %s = arith.subi %c0, %c1 : index
"""
    assert structural_key(_spmd(a)) != structural_key(_spmd(a.replace("%c0, %c1", "%c1, %c0")))


def test_value_from_outside_is_an_error():
    spmd = _spmd(body())
    inner = next(o for o in spmd.walk() if isinstance(o, loop.BarrierOp))
    with pytest.raises(ValueError, match="defined outside"):
        structural_key(inner.parent_op())  # the scf.for body uses %c0 of the spmd body
