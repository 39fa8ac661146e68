"""Hypothesis strategies for the fuzz harness: mutated ``.mlir`` programs at every level, malformed
ONNX models, malformed machine files and abused command-line options.

Seeds are real inputs of the test suite: every ``.mlir`` under ``test/filecheck`` and
``examples`` (split at ``// -----``, comment lines dropped), the shipped machine files
(``target/configs``) and small ONNX graphs built with ``onnx.helper``. A mutant applies one to
three textual mutations to a seed:

- integers replaced by a nearby value (n +- 1, 2n, n / 2, -n, n^2) or a boundary value (0, -1, 1, 3, 7, 4096, 65536, 2^31, 2^63 - 1, 2^63,
  2^64, 10^9, 10^12, 10^30);
- floats replaced by inf / nan / -0.0 / 1e308;
- element types swapped (i64 -> i8, f32 -> f64, index -> i1, ...);
- an op (line) dropped, duplicated or swapped with its neighbour;
- an operand or an attribute entry dropped or duplicated.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from hypothesis import strategies as st

ROOT = Path(__file__).resolve().parents[2]

BOUNDARY_INTS = ("0", "-1", "1", "3", "7", "4096", "65536", "2147483648", "9223372036854775807",
                 "9223372036854775808", "18446744073709551616", "1000000000", "1000000000000",
                 "1000000000000000000000000000000")
BOUNDARY_FLOATS = ("0x7FF0000000000000", "0x7FF8000000000000", "-0.0", "1.0e+308", "1.0e-45")
TYPES = ("i1", "i8", "i16", "i32", "i64", "f16", "f32", "f64", "index")

_INT = re.compile(r"(?<![\w.#%@^\"])-?\d+(?![\w.\"])")
_FLOAT = re.compile(r"(?<![\w.\"])-?\d+\.\d+(?:e[+-]?\d+)?(?![\w\"])")
_TYPE = re.compile(r"\b(?:i1|i8|i16|i32|i64|f16|f32|f64|index)\b")
_OPERAND = re.compile(r"%[\w.$#-]+(?:, )?")
_ATTR_ENTRY = re.compile(r"(?<=[{,] )?[a-z_][\w.]* = [^,{}]+(?:, )?")

#: dialect prefixes of each level, most lowered first (a module's level is its most lowered op)
LEVELS = (("swsim", ("swsim.",)), ("sw", ("sw.",)), ("loop", ("loop.",)), ("tile", ("tile.",)),
          ("graph", ("graph.",)))


@dataclass(frozen=True)
class Seed:
    """One seed program: where it came from, its level and text, the pass of its RUN line."""

    name: str
    level: str
    text: str
    passes: str | None = None


def _level(text: str) -> str:
    for level, prefixes in LEVELS:
        if any(re.search(r"(?<![\w.])" + re.escape(p), text) for p in prefixes):
            return level
    return "builtin"


_RUN_PASS = re.compile(r"RUN:.*?-p\s+('([^']+)'|(\S+))")


@cache
def mlir_seeds() -> tuple[Seed, ...]:
    """Every lit input and example program, split at ``// -----``, comment lines dropped."""
    files = sorted(p for p in (ROOT / "test" / "filecheck").rglob("*.mlir") if "Output" not in p.parts)
    files += sorted((ROOT / "examples").rglob("*.mlir"))
    seeds = []
    for path in files:
        raw = path.read_text()
        m = _RUN_PASS.search(raw)
        passes = (m.group(2) or m.group(3)) if m else None
        if passes is not None and ("%" in passes or "$" in passes):
            passes = None  # (a lit substitution)
        for i, chunk in enumerate(raw.split("// -----")):
            lines = [line for line in chunk.splitlines() if not line.lstrip().startswith("//")]
            text = "\n".join(lines).strip() + "\n"
            if len(text) < 10 or len(text) > 40_000:
                continue
            seeds.append(Seed(f"{path.relative_to(ROOT)}#{i}", _level(text), text, passes))
    return tuple(seeds)


def _replace_match(draw, text: str, pattern: re.Pattern[str], values: tuple[str, ...] | None) -> str:
    matches = list(pattern.finditer(text))
    if not matches:
        return text
    m = matches[draw(st.integers(0, len(matches) - 1))]
    new = "" if values is None else draw(st.sampled_from(values))
    return text[:m.start()] + new + text[m.end():]


def _line_op(draw, text: str, kind: str) -> str:
    lines = text.splitlines()
    ops = [i for i, line in enumerate(lines) if line.strip() and not line.strip().startswith(("}", "^"))]
    if not ops:
        return text
    i = ops[draw(st.integers(0, len(ops) - 1))]
    if kind == "drop":
        del lines[i]
    elif kind == "duplicate":
        lines.insert(i, lines[i])
    else:  # swap with the next line
        j = min(i + 1, len(lines) - 1)
        lines[i], lines[j] = lines[j], lines[i]
    return "\n".join(lines) + "\n"


MUTATIONS = ("int", "int", "int", "int_near", "int_near", "float", "type", "type", "drop_line", "duplicate_line", "swap_lines",
             "drop_operand", "drop_attribute", "duplicate_attribute")


@st.composite
def mutated_text(draw, text: str, max_mutations: int = 3) -> tuple[str, list[str]]:
    """``text`` with 1..``max_mutations`` mutations; returns (mutant, the mutations applied)."""
    applied = []
    for _ in range(draw(st.sampled_from((1, 1, 1, 2, max_mutations)))):
        kind = draw(st.sampled_from(MUTATIONS))
        if kind == "int":
            text = _replace_match(draw, text, _INT, BOUNDARY_INTS)
        elif kind == "int_near":  # a nearby value: more mutants stay well-formed
            matches = list(_INT.finditer(text))
            if matches:
                m = matches[draw(st.integers(0, len(matches) - 1))]
                v = int(m[0])
                new = draw(st.sampled_from((v + 1, v - 1, 2 * v, v // 2, -v, v * v)))
                text = text[:m.start()] + str(new) + text[m.end():]
        elif kind == "float":
            text = _replace_match(draw, text, _FLOAT, BOUNDARY_FLOATS)
        elif kind == "type":
            text = _replace_match(draw, text, _TYPE, TYPES)
        elif kind in ("drop_line", "duplicate_line", "swap_lines"):
            text = _line_op(draw, text, kind.split("_")[0])
        elif kind == "drop_operand":
            text = _replace_match(draw, text, _OPERAND, None)
        elif kind == "drop_attribute":
            text = _replace_match(draw, text, _ATTR_ENTRY, None)
        else:
            matches = list(_ATTR_ENTRY.finditer(text))
            if matches:
                m = matches[draw(st.integers(0, len(matches) - 1))]
                entry = m[0] if m[0].endswith(", ") else m[0] + ", "
                text = text[:m.start()] + entry + text[m.start():]
        applied.append(kind)
    return text, applied


@st.composite
def mlir_mutants(draw, levels: tuple[str, ...] | None = None) -> tuple[Seed, str, list[str]]:
    """(seed, mutant text, mutations) for a seed of one of ``levels`` (default: any)."""
    seeds = [s for s in mlir_seeds() if levels is None or s.level in levels]
    seed = draw(st.sampled_from(seeds))
    text, applied = draw(mutated_text(seed.text))
    return seed, text, applied


# --------------------------------------------------------------------------------------------
# machine files

MACHINE_VALUES = ("0", "-1", "1", "9223372036854775808", "1e12", "inf", "nan", "-inf", "true", '"banana"',
                  "[1, 2]", "{ a = 1 }", "0.5", "1000000000000")


@cache
def machine_seeds() -> tuple[tuple[str, str], ...]:
    return tuple((p.name, p.read_text()) for p in sorted((ROOT / "target" / "configs").glob("*.toml")))


_TOML_KEY = re.compile(r"^([a-z_0-9]+) = ([^#\n]*?)(\s*#.*)?$", re.MULTILINE)
_TOML_ROW = re.compile(r"^([a-z0-9_]+) = \{ pipes = (\"[^\"]*\"), latency = ([^}]*?) \}.*$", re.MULTILINE)


@cache
def _ranges() -> dict[str, tuple[str, float, float]]:
    """Scalar machine key -> (kind, lo, hi) of its documented range (target/machine.py)."""
    from taihu.target.machine import _SCALAR_KEYS

    return {k: (r.kind, r.lo, r.hi) for k, r in _SCALAR_KEYS.items()}


@st.composite
def machine_mutants(draw) -> tuple[str, bytes, list[str]]:
    """(seed name, the mutated file's bytes, mutations) of a shipped machine file: keys removed,
    values replaced by binary / inf / nan / 2^63 / -1 / strings or by the bounds of their valid
    range, ``n_regs = 1``, instruction rows removed or given a huge latency, the file truncated
    or made binary."""
    name, text = draw(st.sampled_from(machine_seeds()))
    applied = []
    data: bytes | None = None
    for _ in range(draw(st.integers(1, 3))):
        kind = draw(st.sampled_from(("drop_key", "value", "value", "value", "n_regs", "drop_row", "latency",
                                     "pipes", "binary", "truncate", "extreme", "extreme", "extreme")))
        keys = list(_TOML_KEY.finditer(text))
        rows = list(_TOML_ROW.finditer(text))
        if kind == "drop_key" and keys:
            m = keys[draw(st.integers(0, len(keys) - 1))]
            text = text[:m.start()] + text[m.end():]
        elif kind == "value" and keys:
            m = keys[draw(st.integers(0, len(keys) - 1))]
            text = text[:m.start(2)] + draw(st.sampled_from(MACHINE_VALUES)) + text[m.end(2):]
        elif kind == "extreme" and keys:  # a valid but extreme value: the bound of the key's range
            ranged = [m for m in keys if m[1] in _ranges() and _ranges()[m[1]][0] in ("int", "float")]
            if ranged:
                m = ranged[draw(st.integers(0, len(ranged) - 1))]
                rkind, lo, hi = _ranges()[m[1]]
                value = draw(st.sampled_from((lo, hi)))
                shown = str(int(value)) if rkind == "int" else repr(float(value))
                text = text[:m.start(2)] + shown + text[m.end(2):]
        elif kind == "n_regs":
            text = re.sub(r"^n_regs = \d+", f"n_regs = {draw(st.sampled_from(('1', '2', '0', '31')))}",
                          text, flags=re.MULTILINE)
        elif kind == "drop_row" and rows:
            m = rows[draw(st.integers(0, len(rows) - 1))]
            text = text[:m.start()] + text[m.end():]
        elif kind == "latency" and rows:
            m = rows[draw(st.integers(0, len(rows) - 1))]
            text = text[:m.start(3)] + draw(st.sampled_from(("1000000000000", "0", "-1", "1e12", '"lat_nope"',
                                                                "10000"))) + text[m.end(3):]
        elif kind == "pipes" and rows:
            m = rows[draw(st.integers(0, len(rows) - 1))]
            text = text[:m.start(2)] + draw(st.sampled_from(('"P2"', '""', "1", '"P0/P0"'))) + text[m.end(2):]
        elif kind == "binary":
            data = draw(st.binary(min_size=1, max_size=64)) + text.encode()[: draw(st.integers(0, 200))]
        elif kind == "truncate":
            text = text[: draw(st.integers(0, len(text)))]
        applied.append(kind)
    return name, data if data is not None else text.encode(), applied


# --------------------------------------------------------------------------------------------
# ONNX models


def base_model(batch: int = 1):
    """A small CNN (Conv+bias, Relu, MaxPool, Flatten, Gemm, Softmax; 3x8x8 -> 10) as an
    ``onnx.ModelProto`` (opset 13) with seeded weights."""
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(0)
    inits = [numpy_helper.from_array(rng.standard_normal(s).astype(np.float32), n)
             for n, s in (("w", (4, 3, 3, 3)), ("b", (4,)), ("fc", (10, 64)), ("fb", (10,)))]
    nodes = [
        helper.make_node("Conv", ["x", "w", "b"], ["c"], kernel_shape=[3, 3], pads=[1, 1, 1, 1], strides=[1, 1]),
        helper.make_node("Relu", ["c"], ["r"]),
        helper.make_node("MaxPool", ["r"], ["p"], kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("Flatten", ["p"], ["f"], axis=1),
        helper.make_node("Gemm", ["f", "fc", "fb"], ["g"], transB=1),
        helper.make_node("Softmax", ["g"], ["y"], axis=1),
    ]
    graph = helper.make_graph(
        nodes, "fuzz", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [batch, 3, 8, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [batch, 10])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model


ONNX_DIMS = (0, -1, 1, 2, 7, 2**31, 2**40)
ONNX_ATTR_VALUES = (0, -1, 1, 2, 5, 2**31, 2**63 - 1)
ONNX_DTYPES = (0, 2, 3, 6, 7, 9, 10, 11, 8)  # UNDEFINED, UINT8, INT8, INT32, INT64, BOOL, FLOAT16, DOUBLE, STRING


@st.composite
def onnx_mutants(draw) -> tuple[bytes, list[str]]:
    """(serialized model, mutations): :func:`base_model` with bad shapes (zero, negative, huge or
    symbolic dims, a zero batch), bad attributes, other element types, missing inputs,
    initializers or nodes, an unknown op, a truncated file."""
    from onnx import helper

    batch = draw(st.sampled_from((1, 1, 2, 0)))
    model = base_model(batch)
    g = model.graph
    applied = [f"batch {batch}"]
    for _ in range(draw(st.sampled_from((0, 1, 1, 1, 2, 3)))):
        kind = draw(st.sampled_from(("input_dim", "init_dims", "attr", "attr", "dtype", "drop_input",
                                     "rename_input", "drop_init", "drop_node", "op_type", "output_dim",
                                     "symbolic")))
        if kind == "input_dim":
            dim = g.input[0].type.tensor_type.shape.dim[draw(st.integers(0, 3))]
            dim.dim_value = draw(st.sampled_from(ONNX_DIMS))
        elif kind == "output_dim":
            dim = g.output[0].type.tensor_type.shape.dim[draw(st.integers(0, 1))]
            dim.dim_value = draw(st.sampled_from(ONNX_DIMS))
        elif kind == "symbolic":
            g.input[0].type.tensor_type.shape.dim[draw(st.integers(0, 3))].dim_param = "N"
        elif kind == "init_dims":
            init = g.initializer[draw(st.integers(0, len(g.initializer) - 1))]
            if init.dims:
                init.dims[draw(st.integers(0, len(init.dims) - 1))] = draw(st.sampled_from(ONNX_DIMS))
        elif kind == "attr":
            nodes = [n for n in g.node if n.attribute]
            if nodes:
                node = nodes[draw(st.integers(0, len(nodes) - 1))]
                attr = node.attribute[draw(st.integers(0, len(node.attribute) - 1))]
                value = draw(st.sampled_from(ONNX_ATTR_VALUES))
                if attr.ints:
                    attr.ints[draw(st.integers(0, len(attr.ints) - 1))] = value
                elif draw(st.booleans()):
                    del attr.ints[:]
                    attr.ints.extend([value] * draw(st.integers(0, 5)))
                else:
                    attr.i = value
            else:
                g.node[0].attribute.append(helper.make_attribute("group", draw(st.sampled_from(ONNX_ATTR_VALUES))))
        elif kind == "dtype":
            target = draw(st.sampled_from(("input", "output", "init")))
            dtype = draw(st.sampled_from(ONNX_DTYPES))
            if target == "input":
                g.input[0].type.tensor_type.elem_type = dtype
            elif target == "output":
                g.output[0].type.tensor_type.elem_type = dtype
            else:
                g.initializer[draw(st.integers(0, len(g.initializer) - 1))].data_type = dtype
        elif kind in ("drop_input", "rename_input"):
            if len(g.node):
                node = g.node[draw(st.integers(0, len(g.node) - 1))]
                if node.input:
                    i = draw(st.integers(0, len(node.input) - 1))
                    if kind == "drop_input":
                        del node.input[i]
                    else:
                        node.input[i] = draw(st.sampled_from(("missing", "", "y", "x")))
        elif kind == "drop_init":
            if len(g.initializer):
                del g.initializer[draw(st.integers(0, len(g.initializer) - 1))]
        elif kind == "drop_node":
            if len(g.node):
                del g.node[draw(st.integers(0, len(g.node) - 1))]
        else:
            if len(g.node):
                g.node[draw(st.integers(0, len(g.node) - 1))].op_type = draw(
                    st.sampled_from(("Add", "Relu", "Conv", "Gemm", "NoSuchOp", "Reshape", "Concat")))
        applied.append(kind)
    data = model.SerializeToString()
    if draw(st.integers(0, 15)) == 0:
        data = data[: draw(st.integers(0, len(data)))]
        applied.append("truncate")
    return data, applied
