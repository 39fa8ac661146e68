"""Fold arithmetic of graph-fold-batchnorm (no IR): spec reproduction-targets §T10 DO-1..DO-4,
DO-7 and the per-channel formulas of algorithms.md §M3, checked against the numpy reference."""

from __future__ import annotations

import numpy as np
import pytest

from taihu.backends.reference import kernels as K
from taihu.passes.graph.fold_batchnorm import (
    batchnorm_affine,
    channel_vector,
    fold_affine_after_conv,
    fold_affine_after_gemm,
    fold_affine_before_conv,
    fold_gemm_chain,
    gemm_chain_profitable,
)


def test_do1_linear_chain_exact() -> None:
    # DO-1: X = [1,1]; W1 = [[1,2],[3,4]], B1 = [1,1]; W2 = [[1,0],[0,2]], B2 = [0,1].
    w1, b1 = np.array([[1.0, 2], [3, 4]]), np.array([1.0, 1])
    w2, b2 = np.array([[1.0, 0], [0, 2]]), np.array([0.0, 1])
    w, b = fold_gemm_chain(w1, b1, 1, 1, False, w2, b2, 1, 1, False, m=1)
    assert w.tolist() == [[1, 4], [3, 8]]
    assert b.tolist() == [1, 3]
    x = np.array([[1.0, 1]])
    before = K.gemm(K.gemm(x, w1, b1), w2, b2)
    assert before.tolist() == [[5, 15]]
    assert K.gemm(x, w, b).tolist() == [[5, 15]]


def test_do2_conv_bn_scale_exact() -> None:
    # DO-2: 1x1 conv W = 2, b = 1; BN mu = 3, var = 4, eps = 0, gamma = 2, beta = 1; s = 3, t = -1.
    k, t = batchnorm_affine(np.array([2.0]), np.array([1.0]), np.array([3.0]), np.array([4.0]), 0.0)
    w, b = fold_affine_after_conv(np.full((1, 1, 1, 1), 2.0), np.array([1.0]), k, t)
    w, b = fold_affine_after_conv(w, b, np.array([3.0]), np.array([0.0]))  # scale s = 3
    w, b = fold_affine_after_conv(w, b, np.array([1.0]), np.array([-1.0]))  # bias t = -1
    assert w.reshape(-1).tolist() == [6.0] and b.tolist() == [-4.0]
    # 003's closed form: k = s*gamma/sqrt(var+eps) = 3, b' = k*(b - mu) + s*beta + t = -4.
    assert 3 * 2 / np.sqrt(4) * (1 - 3) + 3 * 1 - 1 == -4


def test_do2_random_padded_conv_equivalence() -> None:
    rng = np.random.default_rng(2)
    x = rng.standard_normal((2, 3, 7, 7))
    w, b = rng.standard_normal((4, 3, 3, 3)), rng.standard_normal(4)
    gamma, beta, mu = rng.standard_normal(4), rng.standard_normal(4), rng.standard_normal(4)
    var = rng.uniform(0.5, 2.0, 4)
    s, t = rng.standard_normal((1, 4, 1, 1)), rng.standard_normal((1, 4, 1, 1))
    ref = K.conv2d(x, w, b, pads=(1, 1, 1, 1))
    ref = K.batch_norm(ref, gamma, beta, mu, var, epsilon=1e-5) * s + t
    k, tt = batchnorm_affine(gamma, beta, mu, var, 1e-5)
    w2, b2 = fold_affine_after_conv(w, b, k, tt)
    w2, b2 = fold_affine_after_conv(w2, b2, s.reshape(-1), np.zeros(4))
    w2, b2 = fold_affine_after_conv(w2, b2, np.ones(4), t.reshape(-1))
    np.testing.assert_allclose(K.conv2d(x, w2, b2, pads=(1, 1, 1, 1)), ref, atol=1e-5, rtol=0)
    # 003's closed form k_c = s_c*gamma_c/sqrt(var_c+eps), b'_c = k_c(b_c - mu_c) + s_c beta_c + t_c.
    kc = s.reshape(-1) * gamma / np.sqrt(var + 1e-5)
    np.testing.assert_allclose(w2, w * kc[:, None, None, None], rtol=1e-12)
    np.testing.assert_allclose(b2, kc * (b - mu) + s.reshape(-1) * beta + t.reshape(-1), rtol=1e-12)


def test_do3_do4_profitability() -> None:
    # DO-3: X[1,8], W1[8,16], W2[16,4]: MACs 192 -> 32, constants incl. biases 212 -> 36.
    assert 8 * 16 + 16 * 4 == 192 and 8 * 4 == 32
    assert gemm_chain_profitable(8, 16, 4, 8 * 16 + 16 + 16 * 4 + 4, 8 * 4 + 4)
    # DO-4: W1[512,16], W2[16,512]: 16 384 -> 262 144 weights: refused.
    assert not gemm_chain_profitable(512, 16, 512, 512 * 16 + 16 * 512, 512 * 512)


def test_do7_backward_fold_into_padded_conv_is_wrong() -> None:
    # DO-7: y = x + 1 then a 3x3 all-ones conv, pad 1, on a 3x3 all-ones input.
    x = np.ones((1, 1, 3, 3))
    w = np.ones((1, 1, 3, 3))
    exact = K.conv2d(x + 1, w, pads=(1, 1, 1, 1))
    assert exact[0, 0, 0, 0] == 8 and exact[0, 0, 1, 1] == 18
    w2, b2 = fold_affine_before_conv(w, None, np.ones(1), np.ones(1), group=1)
    naive = K.conv2d(x, w2, b2, pads=(1, 1, 1, 1))
    assert naive[0, 0, 0, 0] == 13 and naive[0, 0, 1, 1] == 18
    # Without padding the same backward fold is exact.
    np.testing.assert_array_equal(K.conv2d(x, w2, b2), K.conv2d(x + 1, w))


@pytest.mark.parametrize("group", [1, 2, 4])
def test_backward_fold_grouped_conv(group: int) -> None:
    rng = np.random.default_rng(group)
    c, m = 4, 8
    x = rng.standard_normal((2, c, 6, 5))
    w, b = rng.standard_normal((m, c // group, 3, 2)), rng.standard_normal(m)
    k, t = rng.standard_normal(c), rng.standard_normal(c)
    ref = K.conv2d(x * k[None, :, None, None] + t[None, :, None, None], w, b, strides=(2, 1), group=group)
    w2, b2 = fold_affine_before_conv(w, b, k, t, group)
    np.testing.assert_allclose(K.conv2d(x, w2, b2, strides=(2, 1), group=group), ref, atol=1e-10)


@pytest.mark.parametrize("trans_b", [False, True])
@pytest.mark.parametrize("c_shape", [None, (), (5,), (1, 5), (3, 5), (3, 1)])
def test_affine_after_gemm(trans_b: bool, c_shape: tuple[int, ...] | None) -> None:
    rng = np.random.default_rng(7)
    a = rng.standard_normal((3, 4))
    bm = rng.standard_normal((5, 4) if trans_b else (4, 5))
    cm = None if c_shape is None else rng.standard_normal(c_shape)
    k, t = rng.standard_normal(5), rng.standard_normal(5)
    ref = K.gemm(a, bm, cm, alpha=0.5, beta=1.5, trans_b=trans_b) * k + t
    b2, c2 = fold_affine_after_gemm(bm, cm, 1.5, trans_b, k, t)
    np.testing.assert_allclose(K.gemm(a, b2, c2, alpha=0.5, beta=1.0, trans_b=trans_b), ref, atol=1e-10)


@pytest.mark.parametrize("c1_shape", [None, (), (6,), (1, 6), (3, 6), (3, 1)])
@pytest.mark.parametrize("c2_shape", [None, (2,), (3, 2)])
def test_gemm_chain_general(c1_shape, c2_shape) -> None:
    rng = np.random.default_rng(11)
    a = rng.standard_normal((4, 3))  # trans_a: A' is (3, 4)
    b1 = rng.standard_normal((6, 4))  # trans_b: B1' (4, 6)
    b2 = rng.standard_normal((6, 2))
    c1 = None if c1_shape is None else rng.standard_normal(c1_shape)
    c2 = None if c2_shape is None else rng.standard_normal(c2_shape)
    y1 = K.gemm(a, b1, c1, alpha=0.7, beta=1.3, trans_a=True, trans_b=True)
    ref = K.gemm(y1, b2, c2, alpha=-0.5, beta=2.0)
    w, bias = fold_gemm_chain(b1, c1, 0.7, 1.3, True, b2, c2, -0.5, 2.0, False, m=3)
    np.testing.assert_allclose(K.gemm(a, w, bias, trans_a=True), ref, atol=1e-10)


def test_channel_vector_shapes() -> None:
    shape = (2, 3, 4, 5)
    np.testing.assert_array_equal(channel_vector(np.arange(3.0).reshape(1, 3, 1, 1), shape), [0, 1, 2])
    np.testing.assert_array_equal(channel_vector(np.arange(3.0).reshape(3, 1, 1), shape), [0, 1, 2])
    np.testing.assert_array_equal(channel_vector(np.array(2.0), shape), [2, 2, 2])
    assert channel_vector(np.arange(5.0), shape) is None  # (5,) broadcasts over W, not C
    assert channel_vector(np.ones((1, 3, 4, 1)), shape) is None  # varies along H
    assert channel_vector(np.ones((2, 1, 1, 1)), shape) is None  # varies along N
    np.testing.assert_array_equal(channel_vector(np.arange(3.0), (4, 3)), [0, 1, 2])  # gemm
    assert batchnorm_affine(np.ones(1), np.ones(1), np.ones(1), np.array([-1.0]), 0.5) is None
