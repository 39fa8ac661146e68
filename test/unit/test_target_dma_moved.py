"""``taihu.target.dma.moved_strided`` (closed form over one period of block offsets) equals the
block-by-block sum of eq 3-2 (spec §4.4): every block's whole 128-B transactions."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from taihu.target.dma import block_starts, moved, moved_strided


def _blockwise(addr: int, size: int, bsize: int, stride: int, txn_bytes: int) -> int:
    if bsize == 0:
        return moved(addr, size, txn_bytes)
    a = block_starts(addr, size, bsize, stride)
    return int((-(-(a + bsize) // txn_bytes) - a // txn_bytes).sum()) * txn_bytes


@pytest.mark.parametrize("txn_bytes", [32, 128, 256])
def test_moved_strided_equals_blockwise_sum(txn_bytes: int) -> None:
    cases = itertools.product(
        [0, 4, 100, 128, 1_000_003],            # start address
        [0, 4, 12, 36, 128, 132, 1000],          # block size
        [1, 2, 3, 31, 33, 257],                  # blocks
        [0, 4, 28, 124, 128, 300, 4096],         # gap between blocks
    )
    for addr, bsize, nblk, stride in cases:
        size = bsize * nblk if bsize else 37 * nblk
        assert moved_strided(addr, size, bsize, stride, txn_bytes) == \
            _blockwise(addr, size, bsize, stride, txn_bytes), (addr, size, bsize, stride)


def test_moved_strided_edge_cases() -> None:
    assert moved_strided(0, 10, 64, 0) == 0          # size < block: no whole block
    assert moved_strided(64, 64, 64, 0) == 128       # one block, contiguous
    assert moved_strided(0, 256, 64, 64) == 4 * 128  # 4 blocks, pitch 128: one transaction each
    rng = np.random.default_rng(0)
    for _ in range(200):
        addr, bsize, nblk, stride = (int(x) for x in rng.integers([0, 4, 1, 0], [10**6, 600, 400, 700]))
        size = bsize * nblk + int(rng.integers(0, bsize))  # a partial last block is not moved
        assert moved_strided(addr, size, bsize, stride) == _blockwise(addr, size, bsize, stride, 128)
