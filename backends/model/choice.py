"""Candidate spaces: every plan a planner considers, enumerated lazily, and the planner's pick.

A planner of :mod:`taihu.backends.model` (``plan_gemm``, ``plan_explicit``, ``plan_unfold``, ...)
is a :class:`Space`: iterating it yields every legal candidate plan (each with its modelled cost,
``plan.cost``), lazily; :meth:`Space.best` is the plan the planner returns. Most planners are not
one flat arg-min over their candidates: e.g. ``plan_explicit`` picks each GEMM form's blocking by
the GEMM's own cost, then the cheapest form by the whole plan's cost; ``plan_winograd`` picks the
P padding with the GEMM's M block. A space is therefore a small tree of these nodes:

* :class:`Enumerated` -- a leaf: candidates with a key, the pick is the first minimum by key
  (a candidate may be built from a cheaper item only when needed);
* :class:`Cheapest` -- the children's picks compete by ``by(plan)`` (default the plan's modelled
  time), the first child wins ties;
* :class:`Preferred` -- the first child with a candidate wins (a default with alternatives);
* :class:`Conditional` -- the second child competes only when the first child's pick satisfies a
  predicate (e.g. a residual sum fused in the store: is a separate add kernel cheaper?);
* :class:`Mapped` -- a child's plans transformed (the child picks on the untransformed plans).

:meth:`Space.ranked` yields every candidate with its *planner key*: a tuple such that the minimum
over the space is exactly :meth:`Space.best` (the path of the pick's cost and child index at every
node, then the leaf's key). Ranking evaluates every candidate; iteration does not build the picks.

Invariant of every node: ``best()`` is None exactly when the space is empty.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any, Generic, TypeVar

__all__ = ["Cheapest", "Conditional", "Enumerated", "Mapped", "Preferred", "Space", "total_time"]

P = TypeVar("P")
Q = TypeVar("Q")
Key = tuple[Any, ...]


def total_time(plan: Any) -> float:
    """The plan's modelled time (``plan.cost.t_total``, seconds)."""
    return plan.cost.t_total


class Space(Generic[P]):
    """A lazily enumerated set of candidate plans and the planner's pick among them."""

    _best: P | None
    _done: bool = False

    def __iter__(self) -> Iterator[P]:
        """Every candidate, lazily, in the planner's order."""
        raise NotImplementedError

    def ranked(self) -> Iterator[tuple[Key, P]]:
        """Every candidate with its planner key (``min`` by key = :meth:`best`)."""
        raise NotImplementedError

    def _pick(self) -> P | None:
        raise NotImplementedError

    def best(self) -> P | None:
        """The planner's pick (computed once), None when the space is empty."""
        if not self._done:
            self._best, self._done = self._pick(), True
        return self._best


class Enumerated(Space[P]):
    """Leaf: ``make()`` yields (key, item) pairs, the candidates are ``build(item)`` (default: the
    items themselves); the pick is the candidate of the first item of minimum key (only it is
    built)."""

    def __init__(self, make: Callable[[], Iterable[tuple[Key, Any]]], build: Callable[[Any], P] | None = None) -> None:
        self.make = make
        self.build: Callable[[Any], P] = build or (lambda item: item)

    def __iter__(self) -> Iterator[P]:
        for _, item in self.make():
            yield self.build(item)

    def ranked(self) -> Iterator[tuple[Key, P]]:
        for key, item in self.make():
            yield key, self.build(item)

    def _pick(self) -> P | None:
        best: tuple[Key, Any] | None = None
        for kp in self.make():
            if best is None or kp[0] < best[0]:
                best = kp
        return None if best is None else self.build(best[1])


class Cheapest(Space[P]):
    """The children's picks compete by ``by`` (strictly smaller wins: the first child on ties)."""

    def __init__(self, children: Sequence[Space[P]], by: Callable[[P], float] = total_time) -> None:
        self.children = list(children)
        self.by = by

    def __iter__(self) -> Iterator[P]:
        for c in self.children:
            yield from c

    def ranked(self) -> Iterator[tuple[Key, P]]:
        for i, c in enumerate(self.children):
            b = c.best()
            head = (math.inf if b is None else self.by(b), i)
            for k, plan in c.ranked():
                yield head + k, plan

    def _pick(self) -> P | None:
        best: P | None = None
        for c in self.children:
            b = c.best()
            if b is not None and (best is None or self.by(b) < self.by(best)):
                best = b
        return best


class Preferred(Space[P]):
    """The first child that has a candidate wins (its pick); the others rank after it."""

    def __init__(self, children: Sequence[Space[P]]) -> None:
        self.children = list(children)

    def __iter__(self) -> Iterator[P]:
        for c in self.children:
            yield from c

    def ranked(self) -> Iterator[tuple[Key, P]]:
        for i, c in enumerate(self.children):
            for k, plan in c.ranked():
                yield (i,) + k, plan

    def _pick(self) -> P | None:
        for c in self.children:
            b = c.best()
            if b is not None:
                return b
        return None


class Conditional(Space[P]):
    """``first``'s pick, unless it satisfies ``when`` and ``second``'s pick is strictly cheaper
    by ``by``; ``second`` alone when ``first`` is empty."""

    def __init__(self, first: Space[P], second: Space[P], when: Callable[[P], bool],
                 by: Callable[[P], float] = total_time) -> None:
        self.first, self.second, self.when, self.by = first, second, when, by

    def __iter__(self) -> Iterator[P]:
        yield from self.first
        yield from self.second

    def ranked(self) -> Iterator[tuple[Key, P]]:
        b1 = self.first.best()
        b2 = self.second.best() if b1 is None or self.when(b1) else None
        head1 = (math.inf if b1 is None else self.by(b1), 0)
        head2 = (math.inf if b2 is None else self.by(b2), 1)
        for k, plan in self.first.ranked():
            yield head1 + k, plan
        for k, plan in self.second.ranked():
            yield head2 + k, plan

    def _pick(self) -> P | None:
        b1 = self.first.best()
        if b1 is None:
            return self.second.best()
        if not self.when(b1):
            return b1
        b2 = self.second.best()
        return b2 if b2 is not None and self.by(b2) < self.by(b1) else b1


class Mapped(Space[Q], Generic[P, Q]):
    """``child``'s candidates transformed by ``f`` (the child picks among the untransformed ones)."""

    def __init__(self, child: Space[P], f: Callable[[P], Q]) -> None:
        self.child, self.f = child, f

    def __iter__(self) -> Iterator[Q]:
        for plan in self.child:
            yield self.f(plan)

    def ranked(self) -> Iterator[tuple[Key, Q]]:
        for k, plan in self.child.ranked():
            yield k, self.f(plan)

    def _pick(self) -> Q | None:
        b = self.child.best()
        return None if b is None else self.f(b)
