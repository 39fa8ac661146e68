"""ONNX's own node test cases, imported by taihu's frontend and run on the reference interpreter.

Every case of ``onnx.backend.test.case.node.collect_testcases()`` whose graph uses only ops the
frontend supports is a test: import the case's model, run it with
``taihu.backends.reference.run_module`` and compare every output with the case's expected
outputs within the case's tolerances (``rtol``/``atol``; ONNX's defaults are 1e-3 / 1e-7).
Cases we do not support are listed in ``SKIPPED`` with the reason, and for each of them the
importer must refuse the model with an ``OnnxImportError`` (never a wrong answer or a crash).

ONNX's cases feed shape-like operands (Reshape ``shape``, Unsqueeze ``axes``, Pad ``pads``, Clip
``min``/``max``, ConstantOfShape ``shape``) as graph inputs. taihu compiles static shapes, so
those inputs are bound at import time to the case's values (``import_model(...,
constant_inputs=...)``, i.e. specialized like initializers); every other input stays a runtime
function argument.
"""

from __future__ import annotations

import warnings

import numpy as np
import onnx
import pytest
from onnx import numpy_helper

from taihu.frontends.onnx import (
    SUPPORTED_OPS,
    OnnxImportError,
    constant_slot_inputs,
    import_model,
)

_INT = "integer element type: the graph dialect holds f16/f32/f64 tensors only"
_ND = "{}-D input: graph convolution/pooling ops are 2-D (NCHW) only"
_BOOL_MASK = "Dropout mask output is a bool tensor; the graph dialect has no bool tensors"
_TRAINING = "training_mode=1 Dropout is random (inference-only dialect)"
_TRAINING_MASK = (
    "training_mode=1 Dropout with its bool mask output: random dropout and bool tensors are"
    " both unsupported (refused at the mask output)"
)
_INT_EMPTY = "int32 zero-size result: integer and empty tensors are not supported"
_BN_TRAINING = "BatchNormalization training_mode=1 (batch statistics) is inference-only here"
_BOOL_IN = "bool input: the graph dialect holds f16/f32/f64 tensors only"
_EMPTY_IN = "zero-size input: empty tensors are not supported"
_EMPTY_OUT = "an empty slice / split part: empty tensors are not supported"
_STEP = "Slice with step -1: only positive steps (a window, strided) are supported"
_POW = "Pow with a per-element exponent: only a constant scalar exponent (1, 2, 3, 0.5, -0.5, -1, -2)"
_CT_RANK = "1-D / 3-D ConvTranspose: transposed convolution is 2-D (NCHW) only"
_RESIZE_MODE = "Resize cubic: nearest and linear only"
_CAST_TO = "Cast of a computed tensor to a non-float type (int, bfloat16, float8, float4): to f16/f32/f64 only"
_CAST_FROM = "Cast from a non-float graph input (int2/4, bfloat16, float8, float4): f16/f32/f64 tensors only"
_EINSUM_DIAG = "Einsum with a label repeated in one term (a diagonal): contractions, sums and transposes only"
_BF16_IN = "bfloat16 input: the graph dialect holds f16/f32/f64 tensors only"
_RESIZE_COORD = "Resize tf_crop_and_resize (a region of interest and an extrapolation value): not supported"

# case name -> why the frontend refuses it (each refusal is checked below).
SKIPPED: dict[str, str] = {
    # --- integer / non-float element types ---
    "test_add_int8": _INT,
    "test_add_int16": _INT,
    "test_add_uint8": _INT,
    "test_add_uint16": _INT,
    "test_add_uint32": _INT,
    "test_add_uint64": _INT,
    "test_sub_int8": _INT,
    "test_sub_int16": _INT,
    "test_sub_uint8": _INT,
    "test_sub_uint16": _INT,
    "test_sub_uint32": _INT,
    "test_sub_uint64": _INT,
    "test_mul_int8": _INT,
    "test_mul_int16": _INT,
    "test_mul_uint8": _INT,
    "test_mul_uint16": _INT,
    "test_mul_uint32": _INT,
    "test_mul_uint64": _INT,
    "test_div_int8": _INT,
    "test_div_int16": _INT,
    "test_div_int32_trunc": _INT,
    "test_div_uint8": _INT,
    "test_div_uint16": _INT,
    "test_div_uint32": _INT,
    "test_div_uint64": _INT,
    "test_clip_default_int8_min": _INT,
    "test_clip_default_int8_max": _INT,
    "test_clip_default_int8_inbounds": _INT,
    "test_clip_default_int8_inbounds_expanded": _INT,
    "test_maxpool_2d_uint8": _INT,
    "test_constantofshape_int_zeros": _INT,
    "test_constantofshape_int_shape_zero": _INT_EMPTY,
    # --- reductions, slices and splits of bool or empty tensors, strided slices ---
    "test_reduce_max_bool_inputs": _BOOL_IN,
    "test_reduce_max_empty_set_bool": _BOOL_IN,
    "test_reduce_min_bool_inputs": _BOOL_IN,
    "test_reduce_max_empty_set": _EMPTY_IN,
    "test_reduce_min_empty_set": _EMPTY_IN,
    "test_reduce_sum_empty_set": _EMPTY_IN,
    "test_reduce_sum_empty_set_non_reduced_axis_zero": _EMPTY_IN,
    "test_reduce_sum_square_empty_set_expanded": _EMPTY_IN,
    "test_reduce_l2_empty_set": _EMPTY_IN,
    "test_slice_start_out_of_bounds": _EMPTY_OUT,
    "test_split_zero_size_splits_opset13": _EMPTY_OUT,
    "test_split_zero_size_splits_opset18": _EMPTY_OUT,
    "test_slice_neg_steps": _STEP,
    "test_einsum_batch_diagonal": _EINSUM_DIAG,
    "test_einsum_batch_matmul_bfloat16": _BF16_IN,
    "test_einsum_sum_bfloat16": _BF16_IN,
    "test_einsum_transpose_bfloat16": _BF16_IN,
    "test_convtranspose_1d": _CT_RANK,
    "test_convtranspose_3d": _CT_RANK,
    "test_resize_downsample_scales_cubic": _RESIZE_MODE,
    "test_resize_downsample_scales_cubic_A_n0p5_exclude_outside": _RESIZE_MODE,
    "test_resize_downsample_scales_cubic_align_corners": _RESIZE_MODE,
    "test_resize_downsample_scales_cubic_antialias": _RESIZE_MODE,
    "test_resize_downsample_sizes_cubic": _RESIZE_MODE,
    "test_resize_downsample_sizes_cubic_antialias": _RESIZE_MODE,
    "test_resize_tf_crop_and_resize": _RESIZE_COORD,
    "test_resize_tf_crop_and_resize_axes_2_3": _RESIZE_COORD,
    "test_resize_tf_crop_and_resize_axes_3_2": _RESIZE_COORD,
    "test_resize_tf_crop_and_resize_extrapolation_value": _RESIZE_COORD,
    "test_resize_upsample_scales_cubic": _RESIZE_MODE,
    "test_resize_upsample_scales_cubic_A_n0p5_exclude_outside": _RESIZE_MODE,
    "test_resize_upsample_scales_cubic_align_corners": _RESIZE_MODE,
    "test_resize_upsample_scales_cubic_asymmetric": _RESIZE_MODE,
    "test_resize_upsample_sizes_cubic": _RESIZE_MODE,
    "test_pow": _POW,
    "test_pow_bcast_array": _POW,
    "test_pow_example": _POW,
    "test_pow_types_float32_int32": _POW,
    "test_pow_types_float32_int64": _POW,
    "test_pow_types_float32_uint32": _POW,
    "test_pow_types_float32_uint64": _POW,
    "test_pow_types_int32_float32": _INT,
    "test_pow_types_int32_int32": _INT,
    "test_pow_types_int64_float32": _INT,
    "test_pow_types_int64_int64": _INT,
    # --- Cast to / from non-float types ---
    "test_cast_BFLOAT16_to_FLOAT": _CAST_FROM,
    "test_cast_FLOAT16_to_FLOAT4E2M1": _CAST_TO,
    "test_cast_FLOAT16_to_FLOAT8E4M3FN": _CAST_TO,
    "test_cast_FLOAT16_to_FLOAT8E4M3FNUZ": _CAST_TO,
    "test_cast_FLOAT16_to_FLOAT8E5M2": _CAST_TO,
    "test_cast_FLOAT16_to_FLOAT8E5M2FNUZ": _CAST_TO,
    "test_cast_FLOAT16_to_INT2": _CAST_TO,
    "test_cast_FLOAT16_to_INT4": _CAST_TO,
    "test_cast_FLOAT16_to_UINT2": _CAST_TO,
    "test_cast_FLOAT16_to_UINT4": _CAST_TO,
    "test_cast_FLOAT4E2M1_to_FLOAT": _CAST_FROM,
    "test_cast_FLOAT4E2M1_to_FLOAT16": _CAST_FROM,
    "test_cast_FLOAT8E4M3FNUZ_to_FLOAT": _CAST_FROM,
    "test_cast_FLOAT8E4M3FNUZ_to_FLOAT16": _CAST_FROM,
    "test_cast_FLOAT8E4M3FN_to_FLOAT": _CAST_FROM,
    "test_cast_FLOAT8E4M3FN_to_FLOAT16": _CAST_FROM,
    "test_cast_FLOAT8E5M2FNUZ_to_FLOAT": _CAST_FROM,
    "test_cast_FLOAT8E5M2FNUZ_to_FLOAT16": _CAST_FROM,
    "test_cast_FLOAT8E5M2_to_FLOAT": _CAST_FROM,
    "test_cast_FLOAT8E5M2_to_FLOAT16": _CAST_FROM,
    "test_cast_FLOAT_to_BFLOAT16": _CAST_TO,
    "test_cast_FLOAT_to_FLOAT4E2M1": _CAST_TO,
    "test_cast_FLOAT_to_FLOAT8E4M3FN": _CAST_TO,
    "test_cast_FLOAT_to_FLOAT8E4M3FNUZ": _CAST_TO,
    "test_cast_FLOAT_to_FLOAT8E5M2": _CAST_TO,
    "test_cast_FLOAT_to_FLOAT8E5M2FNUZ": _CAST_TO,
    "test_cast_FLOAT_to_INT2": _CAST_TO,
    "test_cast_FLOAT_to_INT4": _CAST_TO,
    "test_cast_FLOAT_to_UINT2": _CAST_TO,
    "test_cast_FLOAT_to_UINT4": _CAST_TO,
    "test_cast_INT2_to_FLOAT": _CAST_FROM,
    "test_cast_INT2_to_FLOAT16": _CAST_FROM,
    "test_cast_INT2_to_INT8": _CAST_TO,
    "test_cast_INT4_to_FLOAT": _CAST_FROM,
    "test_cast_INT4_to_FLOAT16": _CAST_FROM,
    "test_cast_INT4_to_INT8": _CAST_TO,
    "test_cast_UINT2_to_FLOAT": _CAST_FROM,
    "test_cast_UINT2_to_FLOAT16": _CAST_FROM,
    "test_cast_UINT2_to_UINT8": _CAST_TO,
    "test_cast_UINT4_to_FLOAT": _CAST_FROM,
    "test_cast_UINT4_to_FLOAT16": _CAST_FROM,
    "test_cast_UINT4_to_UINT8": _CAST_TO,
    "test_cast_e8m0_FLOAT16_to_FLOAT8E8M0": _CAST_TO,
    "test_cast_e8m0_FLOAT8E8M0_to_FLOAT": _CAST_FROM,
    "test_cast_e8m0_FLOAT8E8M0_to_FLOAT16": _CAST_FROM,
    "test_cast_e8m0_FLOAT_to_FLOAT8E8M0": _CAST_TO,
    "test_cast_no_saturate_FLOAT16_to_FLOAT8E4M3FN": _CAST_TO,
    "test_cast_no_saturate_FLOAT16_to_FLOAT8E4M3FNUZ": _CAST_TO,
    "test_cast_no_saturate_FLOAT16_to_FLOAT8E5M2": _CAST_TO,
    "test_cast_no_saturate_FLOAT16_to_FLOAT8E5M2FNUZ": _CAST_TO,
    "test_cast_no_saturate_FLOAT_to_FLOAT8E4M3FN": _CAST_TO,
    "test_cast_no_saturate_FLOAT_to_FLOAT8E4M3FNUZ": _CAST_TO,
    "test_cast_no_saturate_FLOAT_to_FLOAT8E5M2": _CAST_TO,
    "test_cast_no_saturate_FLOAT_to_FLOAT8E5M2FNUZ": _CAST_TO,
    "test_castlike_BFLOAT16_to_FLOAT_expanded": _CAST_FROM,
    "test_castlike_FLOAT16_to_FLOAT4E2M1_expanded": _CAST_TO,
    "test_castlike_FLOAT16_to_FLOAT8E4M3FNUZ_expanded": _CAST_TO,
    "test_castlike_FLOAT16_to_FLOAT8E4M3FN_expanded": _CAST_TO,
    "test_castlike_FLOAT16_to_FLOAT8E5M2FNUZ_expanded": _CAST_TO,
    "test_castlike_FLOAT16_to_FLOAT8E5M2_expanded": _CAST_TO,
    "test_castlike_FLOAT16_to_INT2_expanded": _CAST_TO,
    "test_castlike_FLOAT16_to_INT4_expanded": _CAST_TO,
    "test_castlike_FLOAT16_to_UINT2_expanded": _CAST_TO,
    "test_castlike_FLOAT16_to_UINT4_expanded": _CAST_TO,
    "test_castlike_FLOAT4E2M1_to_FLOAT16_expanded": _CAST_FROM,
    "test_castlike_FLOAT4E2M1_to_FLOAT_expanded": _CAST_FROM,
    "test_castlike_FLOAT8E4M3FNUZ_to_FLOAT16_expanded": _CAST_FROM,
    "test_castlike_FLOAT8E4M3FNUZ_to_FLOAT_expanded": _CAST_FROM,
    "test_castlike_FLOAT8E4M3FN_to_FLOAT16_expanded": _CAST_FROM,
    "test_castlike_FLOAT8E4M3FN_to_FLOAT_expanded": _CAST_FROM,
    "test_castlike_FLOAT8E5M2FNUZ_to_FLOAT16_expanded": _CAST_FROM,
    "test_castlike_FLOAT8E5M2FNUZ_to_FLOAT_expanded": _CAST_FROM,
    "test_castlike_FLOAT8E5M2_to_FLOAT16_expanded": _CAST_FROM,
    "test_castlike_FLOAT8E5M2_to_FLOAT_expanded": _CAST_FROM,
    "test_castlike_FLOAT_to_BFLOAT16_expanded": _CAST_TO,
    "test_castlike_FLOAT_to_FLOAT4E2M1_expanded": _CAST_TO,
    "test_castlike_FLOAT_to_FLOAT8E4M3FNUZ_expanded": _CAST_TO,
    "test_castlike_FLOAT_to_FLOAT8E4M3FN_expanded": _CAST_TO,
    "test_castlike_FLOAT_to_FLOAT8E5M2FNUZ_expanded": _CAST_TO,
    "test_castlike_FLOAT_to_FLOAT8E5M2_expanded": _CAST_TO,
    "test_castlike_FLOAT_to_INT2_expanded": _CAST_TO,
    "test_castlike_FLOAT_to_INT4_expanded": _CAST_TO,
    "test_castlike_FLOAT_to_UINT2_expanded": _CAST_TO,
    "test_castlike_FLOAT_to_UINT4_expanded": _CAST_TO,
    "test_castlike_INT2_to_FLOAT16_expanded": _CAST_FROM,
    "test_castlike_INT2_to_FLOAT_expanded": _CAST_FROM,
    "test_castlike_INT2_to_INT8_expanded": _CAST_TO,
    "test_castlike_INT4_to_FLOAT16_expanded": _CAST_FROM,
    "test_castlike_INT4_to_FLOAT_expanded": _CAST_FROM,
    "test_castlike_INT4_to_INT8_expanded": _CAST_TO,
    "test_castlike_UINT2_to_FLOAT16_expanded": _CAST_FROM,
    "test_castlike_UINT2_to_FLOAT_expanded": _CAST_FROM,
    "test_castlike_UINT2_to_UINT8_expanded": _CAST_TO,
    "test_castlike_UINT4_to_FLOAT16_expanded": _CAST_FROM,
    "test_castlike_UINT4_to_FLOAT_expanded": _CAST_FROM,
    "test_castlike_UINT4_to_UINT8_expanded": _CAST_TO,
    "test_castlike_no_saturate_FLOAT16_to_FLOAT8E4M3FNUZ_expanded": _CAST_TO,
    "test_castlike_no_saturate_FLOAT16_to_FLOAT8E4M3FN_expanded": _CAST_TO,
    "test_castlike_no_saturate_FLOAT16_to_FLOAT8E5M2FNUZ_expanded": _CAST_TO,
    "test_castlike_no_saturate_FLOAT16_to_FLOAT8E5M2_expanded": _CAST_TO,
    "test_castlike_no_saturate_FLOAT_to_FLOAT8E4M3FNUZ_expanded": _CAST_TO,
    "test_castlike_no_saturate_FLOAT_to_FLOAT8E4M3FN_expanded": _CAST_TO,
    "test_castlike_no_saturate_FLOAT_to_FLOAT8E5M2FNUZ_expanded": _CAST_TO,
    "test_castlike_no_saturate_FLOAT_to_FLOAT8E5M2_expanded": _CAST_TO,
    # --- non-tensor values ---
    "test_identity_sequence": "non-tensor (sequence-typed) input: only tensors are supported",
    "test_identity_opt": "non-tensor (optional-typed) input: only tensors are supported",
    # --- 1-D / 3-D convolution and pooling ---
    "test_averagepool_1d_default": _ND.format(1),
    "test_averagepool_3d_default": _ND.format(3),
    "test_averagepool_3d_dilations_small": _ND.format(3),
    "test_averagepool_3d_dilations_large_count_include_pad_is_0_ceil_mode_is_True": _ND.format(3),
    "test_averagepool_3d_dilations_large_count_include_pad_is_0_ceil_mode_is_False": _ND.format(3),
    "test_averagepool_3d_dilations_large_count_include_pad_is_1_ceil_mode_is_True": _ND.format(3),
    "test_averagepool_3d_dilations_large_count_include_pad_is_1_ceil_mode_is_False": _ND.format(3),
    "test_maxpool_1d_default": _ND.format(1),
    "test_maxpool_3d_default": _ND.format(3),
    "test_maxpool_3d_dilations": _ND.format(3),
    "test_maxpool_3d_dilations_use_ref_impl": _ND.format(3),
    "test_maxpool_3d_dilations_use_ref_impl_large": _ND.format(3),
    # --- unsupported attributes / outputs ---
    "test_maxpool_with_argmax_2d_precomputed_pads": "MaxPool Indices output (argmax) is not"
    " supported",
    "test_maxpool_with_argmax_2d_precomputed_strides": "MaxPool Indices output (argmax) is not"
    " supported",
    "test_batchnorm_example_training_mode": _BN_TRAINING,
    "test_batchnorm_epsilon_training_mode": _BN_TRAINING,
    "test_dropout_default_mask": _BOOL_MASK,
    "test_dropout_default_mask_ratio": _BOOL_MASK,
    "test_training_dropout_default": _TRAINING,
    "test_training_dropout_default_mask": _TRAINING_MASK,
    "test_training_dropout": _TRAINING,
    "test_training_dropout_mask": _TRAINING_MASK,
    "test_training_dropout_zero_ratio": _TRAINING,
    "test_training_dropout_zero_ratio_mask": _TRAINING_MASK,
    "test_edge_pad": "Pad mode 'edge': only mode 'constant' is supported",
    "test_reflect_pad": "Pad mode 'reflect': only mode 'constant' is supported",
    "test_wrap_pad": "Pad mode 'wrap': only mode 'constant' is supported",
    "test_reshape_allowzero_reordered": "Reshape allowzero=1 with a 0 in the shape makes a"
    " zero-size tensor: empty tensors are not supported",
    "test_lstm_with_peepholes": "LSTM peephole input P: graph.lstm has no peepholes",
    "test_lstm_batchwise": "LSTM layout=1 (batch-major): graph.lstm is sequence-major",
    "test_gru_batchwise": "GRU layout=1 (batch-major): graph.gru is sequence-major",
}


# case name -> why taihu follows onnxruntime (and the operator spec's text) where the case's stored
# outputs (made by onnx's reference implementation) say otherwise: the case is imported and run, and
# its outputs must match onnxruntime's on the case's inputs and differ from the stored ones.
ORT_SEMANTICS: dict[str, str] = {
    "test_resize_downsample_scales_linear_align_corners": "align_corners with a fractional in*scale (4 x 0.6 ="
    " 2.4): the spec's x_resized (in - 1) / (length_resized - 1) with the integer output length 2, as"
    " onnxruntime; onnx's reference divides by 2.4 - 1",
}

# A fragment of the OnnxImportError each skip reason must produce (the refusal is for that reason).
_ERROR_FRAGMENT = {
    _INT: "element type",
    _BOOL_MASK: "mask output",
    _TRAINING: "training_mode",
    _TRAINING_MASK: "mask output",
    _INT_EMPTY: "element type",
    _BN_TRAINING: "training_mode",
    _BOOL_IN: "element type bool",
    _EMPTY_IN: "zero-size",
    _EMPTY_OUT: "empty",
    _STEP: "only positive steps",
    _POW: "exponent must be a scalar",
    _CT_RANK: "only rank 4",
    _RESIZE_MODE: "mode='cubic' is not supported",
    _CAST_TO: "a computed tensor is cast only to float16, float or double",
    _CAST_FROM: "only float16/float/double are supported",
    _EINSUM_DIAG: "diagonals and traces are not supported",
    _BF16_IN: "element type bfloat16",
    _RESIZE_COORD: "coordinate_transformation_mode='tf_crop_and_resize' is not supported",
}


def _expected_error(name: str) -> str:
    reason = SKIPPED[name]
    if reason in _ERROR_FRAGMENT:
        return _ERROR_FRAGMENT[reason]
    for key, fragment in (
        ("-D input", "only rank 4"),
        ("non-tensor", "is not a tensor"),
        ("-typed input", "is not a tensor"),
        ("Indices", "Indices output"),
        ("Pad mode", "is not supported (only 'constant')"),
        ("allowzero", "zero-size"),
        ("peephole", "peephole"),
        ("layout=1", "layout=1"),
    ):
        if key in reason:
            return fragment
    raise AssertionError(f"no expected error fragment for skip reason {reason!r}")


def _collect():
    from onnx.backend.test.case.node import collect_testcases

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cases = collect_testcases()
    return [
        c
        for c in cases
        if c.kind == "node" and {n.op_type for n in c.model.graph.node} <= SUPPORTED_OPS
    ]


CASES = _collect()
CASES_BY_NAME = {c.name: c for c in CASES}


def test_skip_list_names_existing_cases():
    unknown = sorted((set(SKIPPED) | set(ORT_SEMANTICS)) - set(CASES_BY_NAME))
    assert not unknown, f"SKIPPED names cases that do not exist (or use unsupported ops): {unknown}"


def test_every_supported_op_has_cases():
    covered = {n.op_type for c in CASES for n in c.model.graph.node if c.name not in SKIPPED}
    assert covered == SUPPORTED_OPS, f"ops without a passing conformance case: {SUPPORTED_OPS - covered}"


def _array(v) -> np.ndarray:
    """A case's input or output as numpy (the Cast cases store TensorProtos)."""
    return numpy_helper.to_array(v) if isinstance(v, onnx.TensorProto) else np.asarray(v)


def _run_case(case) -> None:
    from taihu.backends.reference import run_module

    if case.name in ORT_SEMANTICS:
        from taihu.tools.ort import onnxruntime_outputs

        _run_case_against(case, lambda feeds: list(onnxruntime_outputs(case.model, feeds).values()))
        return
    graph = case.model.graph
    init = {i.name for i in graph.initializer}
    in_names = [i.name for i in graph.input if i.name not in init]
    bound = constant_slot_inputs(case.model)
    rtol = case.rtol if case.rtol is not None else 1e-3
    atol = case.atol if case.atol is not None else 1e-7
    for inputs, expected in case.data_sets:
        values = {n: _array(v) for n, v in zip(in_names, inputs)}
        module = import_model(case.model, constant_inputs={n: values[n] for n in bound})
        feeds = {n: v for n, v in values.items() if n not in bound}
        got = run_module(module, feeds)
        names = [o.name for o in graph.output]
        assert list(got) == names
        for name, want in zip(names, expected):
            want = _array(want)
            have = np.asarray(got[name])
            assert have.shape == want.shape, f"{name}: shape {have.shape} != {want.shape}"
            assert have.dtype == want.dtype, f"{name}: dtype {have.dtype} != {want.dtype}"
            np.testing.assert_allclose(have, want, rtol=rtol, atol=atol, err_msg=f"output {name}")


def _run_case_against(case, expected_for) -> None:
    """Run ``case`` on the reference and compare with ``expected_for(all inputs)``; the stored
    outputs must differ (else the ``ORT_SEMANTICS`` entry is stale)."""
    from taihu.backends.reference import run_module

    graph = case.model.graph
    init = {i.name for i in graph.initializer}
    in_names = [i.name for i in graph.input if i.name not in init]
    bound = constant_slot_inputs(case.model)
    for inputs, stored in case.data_sets:
        values = {n: np.asarray(v) for n, v in zip(in_names, inputs)}
        module = import_model(case.model, constant_inputs={n: values[n] for n in bound})
        got = run_module(module, {n: v for n, v in values.items() if n not in bound})
        for have, want, old in zip(got.values(), expected_for(values), stored, strict=True):
            np.testing.assert_allclose(have, want, rtol=1e-5, atol=1e-6)
            assert not np.allclose(have, old, rtol=1e-3, atol=1e-7), "the stored outputs agree now"


@pytest.mark.parametrize("name", sorted(CASES_BY_NAME))
def test_node_case(name: str) -> None:
    case = CASES_BY_NAME[name]
    if name in SKIPPED:
        # Unsupported cases must be refused by the importer with a clear error, not mis-run.
        bound = constant_slot_inputs(case.model)
        graph = case.model.graph
        init = {i.name for i in graph.initializer}
        in_names = [i.name for i in graph.input if i.name not in init]
        values = dict(zip(in_names, case.data_sets[0][0]))
        with pytest.raises(OnnxImportError) as err:
            import_model(case.model, constant_inputs={n: values[n] for n in bound})
        fragment = _expected_error(name)
        assert fragment in str(err.value), f"{name}: refused for another reason: {err.value}"
        pytest.skip(SKIPPED[name])
    _run_case(case)
