"""Search algorithms of ``taihu-tune``, as pure functions over points and cost callbacks.

* FlexTensor's split neighbourhood (001 Ch.4 L1444; spec algorithms.md J, target FT-2): a split of
  a loop of length ``L`` into ``N`` factors ``[f_1, ..., f_N]`` (product ``L``) is a point of an
  ``N (N - 1) / 2``-direction space; its neighbour in direction ``(i, j)`` has ``g_i > f_i``,
  ``g_j < f_j`` and every other factor equal, so the product is kept and every factor stays a
  divisor of ``L`` (:func:`split_directions`, :func:`split_neighbours`).
* FlexTensor's heuristic search (001 L1446-1468): simulated annealing over a set ``H`` of
  evaluated points -- a start point ``p`` is drawn with probability
  ``exp(-gamma (E* - E_p) / E*)`` (``E`` = performance = 1 / cost, ``E*`` the best so far) and
  moved one step to an unvisited neighbour; visited points are recorded, no backtracking
  (:func:`anneal`). FlexTensor picks the direction with a Q-learning network; here it is drawn
  uniformly with the seeded generator, so a search is reproducible.
* DLIR's greedy segmentation search (000 Ch.5 L1615-1676; spec algorithms.md G5, targets
  DL-1..DL-3): start every segment size at its minimum; repeatedly evaluate, for each dimension,
  the access cost ``M(i)`` after increasing it (doubling, capped at the extent) while the
  memory constraint holds, and grow the dimension of smallest ``M(i)``; stop when no dimension
  can grow (:func:`greedy_segments`). :func:`fc_segments` is the seed's worked example (a fully
  connected layer on Cambricon, 000 L1628-1668) exactly: DL-2 / DL-3.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Hashable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Generic, TypeVar

__all__ = [
    "AnnealResult",
    "FcSegmentProblem",
    "GreedyResult",
    "anneal",
    "fc_segment_cost",
    "fc_segment_fits",
    "fc_segments",
    "greedy_segments",
    "smallest_prime_factor",
    "split_directions",
    "split_neighbours",
]

P = TypeVar("P", bound=Hashable)


# --------------------------------------------------------------------------------------------
# FlexTensor: split neighbourhood (FT-2)


def smallest_prime_factor(n: int) -> int:
    """The smallest prime dividing ``n`` (``n >= 2``); ``ValueError`` otherwise."""
    if n < 2:
        raise ValueError(f"smallest_prime_factor: {n} has no prime factor")
    for p in range(2, math.isqrt(n) + 1):
        if n % p == 0:
            return p
    return n


def split_directions(n: int) -> list[tuple[int, int]]:
    """The ``n (n - 1) / 2`` directions ``(i, j)``, ``i < j``, of a split into ``n`` factors
    (001 L1444): along ``(i, j)`` factor ``i`` grows and factor ``j`` shrinks (forward) or the
    reverse (backward)."""
    return [(i, j) for i in range(n) for j in range(i + 1, n)]


def _move(factors: tuple[int, ...], grow: int, shrink: int) -> tuple[int, ...] | None:
    """``factors`` with the smallest prime factor of ``factors[shrink]`` moved to ``factors[grow]``
    (the nearest point of the direction), None when ``factors[shrink]`` is 1."""
    if factors[shrink] < 2:
        return None
    q = smallest_prime_factor(factors[shrink])
    g = list(factors)
    g[grow] *= q
    g[shrink] //= q
    return tuple(g)


def split_neighbours(factors: Sequence[int]) -> dict[tuple[int, int], list[tuple[int, ...]]]:
    """Direction ``(i, j)`` -> the neighbours of the split ``factors`` along it (001 L1444).

    Forward, ``g_i > f_i`` and ``g_j < f_j``; backward, ``g_i < f_i`` and ``g_j > f_j``; every
    other factor is equal. The step moves the smallest prime factor of the shrinking factor to
    the growing one, so the product is kept and, with integer factors, each one stays a divisor
    of the product (FlexTensor's divisor-only pruning). A direction whose shrinking factor is 1
    has no neighbour that way. Every direction is a key (possibly with an empty list).
    ``ValueError`` for a factor < 1."""
    f = tuple(int(x) for x in factors)
    if any(x < 1 for x in f):
        raise ValueError(f"split_neighbours: factors must be >= 1, got {list(f)}")
    out: dict[tuple[int, int], list[tuple[int, ...]]] = {}
    for i, j in split_directions(len(f)):
        out[(i, j)] = [g for g in (_move(f, i, j), _move(f, j, i)) if g is not None]
    return out


# --------------------------------------------------------------------------------------------
# FlexTensor: simulated annealing over a neighbourhood


@dataclass
class AnnealResult(Generic[P]):
    """The points an annealing search evaluated (``costs``, in evaluation order) and the best."""

    best: P
    costs: dict[P, float] = field(default_factory=dict)

    @property
    def steps(self) -> int:
        """Cost evaluations (the search's steps)."""
        return len(self.costs)


def anneal(starts: Sequence[P], neighbours: Callable[[P], Iterable[P]], cost: Callable[[P], float], *,
           steps: int, seed: int, gamma: float = 2.0, order: Callable[[P], str] = str) -> AnnealResult[P]:
    """FlexTensor's search (module docstring) from the points ``starts``: at most ``steps`` cost
    evaluations (the starts included); ``cost`` > 0, smaller is better. Deterministic for a
    given ``seed`` (``order`` gives the points a canonical order: ties in cost are broken by it,
    neighbours are drawn from the sorted list). Stops early when no evaluated point has an
    unvisited neighbour. ``ValueError`` without a start point."""
    if not starts:
        raise ValueError("anneal: no start point")
    rng = random.Random(seed)
    costs: dict[P, float] = {}

    def key(p: P) -> tuple[float, str]:
        return (costs[p], order(p))

    for p in sorted(set(starts), key=order):
        if len(costs) >= steps:
            break
        costs[p] = cost(p)
    exhausted: set[P] = set()
    while len(costs) < steps:
        live = sorted((p for p in costs if p not in exhausted), key=key)
        if not live:
            break
        e_best = 1.0 / costs[min(costs, key=key)]
        weights = [math.exp(-gamma * (e_best - 1.0 / costs[p]) / e_best) for p in live]
        p = rng.choices(live, weights)[0]
        fresh = sorted({q for q in neighbours(p) if q not in costs}, key=order)
        if not fresh:
            exhausted.add(p)
            continue
        q = rng.choice(fresh)
        costs[q] = cost(q)
    best = min(costs, key=key)
    return AnnealResult(best, costs)


# --------------------------------------------------------------------------------------------
# DLIR: greedy segmentation search (DL-1..DL-3)


@dataclass(frozen=True)
class GreedyResult:
    """The segment sizes the greedy search ends with, their cost and the number of cost
    evaluations (steps, DL-1)."""

    point: tuple[int, ...]
    cost: float
    steps: int


def greedy_segments(extents: Sequence[int], cost: Callable[[tuple[int, ...]], float],
                    fits: Callable[[tuple[int, ...]], bool], start: Sequence[int] | None = None,
                    grow: Callable[[int, int, int], int | None] | None = None,
                    improve_only: bool = False) -> GreedyResult:
    """DLIR's greedy search (module docstring; 000 L1670-1676).

    ``extents``: the size of each dimension; ``start``: the minimum segment sizes (default all
    1); ``grow(dim, value, extent)``: the next size of a dimension or None when it cannot grow
    (default: doubling, capped at the extent); ``fits(point)``: the memory constraint;
    ``cost(point)``: the access cost ``M``. Each step evaluates every dimension that can grow to
    a fitting point, and grows the one of smallest cost (ties: the lower dimension); with
    ``improve_only`` it stops instead when that cost is not below the current one (the seed's
    rule grows while anything can: for its access-cost objective the two agree). Every cost
    evaluation, the start point's included, counts as one step."""
    n = len(extents)
    x = tuple(int(v) for v in (start if start is not None else (1,) * n))
    step = grow or (lambda _dim, value, extent: min(2 * value, extent) if value < extent else None)
    current = cost(x)
    steps = 1
    while True:
        best: tuple[float, int, tuple[int, ...]] | None = None
        for i in range(n):
            nxt = step(i, x[i], extents[i])
            if nxt is None or nxt == x[i]:
                continue
            y = x[:i] + (nxt,) + x[i + 1:]
            if not fits(y):
                continue
            c = cost(y)
            steps += 1
            if best is None or (c, i) < best[:2]:
                best = (c, i, y)
        if best is None or (improve_only and best[0] >= current):
            return GreedyResult(x, current, steps)
        current, _, x = best


@dataclass(frozen=True)
class FcSegmentProblem:
    """DLIR's worked example (000 L1628-1668): a fully connected layer ``inputs -> outputs`` on
    Cambricon, segment sizes ``x1`` (input) and ``x2`` (output), fix16 elements (2 bytes).

    Buffers (the ALLOC statements of the seed's listing): vector memory holds the input segment,
    the output segment and a temporary (``x1 + 2 x2`` elements, 64 KB = 32K elements), matrix
    memory the weight block (``x1 x2`` elements, 768 KB = 384K elements; the text's "732KB" is
    corrected in spec algorithms.md G5). ``half``: double buffering searches with half of each
    memory (L1670). Bandwidth ``B`` 128 GB/s (bytes per ns) and latency ``L`` 100 ns per access
    (DL-2's setting)."""

    inputs: int
    outputs: int
    vmem_elems: int = 32 * 1024
    mmem_elems: int = 384 * 1024
    half: bool = False
    elem_bytes: int = 2
    bandwidth: float = 128.0  # bytes per ns (128 GB/s)
    latency: float = 100.0  # ns


def fc_segment_fits(p: FcSegmentProblem, x: tuple[int, ...]) -> bool:
    """The seed's constraint ``x1 + 2 x2 < vmem`` and ``x1 x2 < mmem`` (strict, as printed), with
    half of each memory when ``p.half``."""
    x1, x2 = x
    div = 2 if p.half else 1
    return x1 + 2 * x2 < p.vmem_elems // div and x1 * x2 < p.mmem_elems // div


def fc_segment_cost(p: FcSegmentProblem, x: tuple[int, ...]) -> float:
    """Total access time (ns) of the seed's loop nest: for each of ``ceil(outputs / x2)`` output
    segments, for each of ``ceil(inputs / x1)`` input segments, load the input segment (``x1``
    elements) and the weight block (``x1 x2``); store each output segment (``x2``); one access
    costs ``bytes / B + L``."""
    x1, x2 = x
    out_parts = math.ceil(p.outputs / x2)
    in_parts = math.ceil(p.inputs / x1)

    def access(elems: int) -> float:
        return elems * p.elem_bytes / p.bandwidth + p.latency

    return out_parts * in_parts * (access(x1) + access(x1 * x2)) + out_parts * access(x2)


def fc_segments(p: FcSegmentProblem) -> GreedyResult:
    """The greedy segment sizes ``(x1, x2)`` of the FC layer ``p`` (DL-2: 1024 -> 256 gives
    (1024, 256), half memory (512, 256); DL-3: 9216 -> 4096 and 4096 -> 4096 give (64, 4096) /
    (32, 4096), 4096 -> 1000 gives (256, 1000) / (128, 1000))."""
    return greedy_segments((p.inputs, p.outputs), lambda x: fc_segment_cost(p, x),
                           lambda x: fc_segment_fits(p, x))
