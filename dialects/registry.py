"""Name -> factory of every taihu dialect (for contexts, ``taihu-opt`` and the xDSL universe).

Factories import lazily: asking for the registry costs nothing until a dialect is loaded.
"""

from __future__ import annotations

from collections.abc import Callable

from xdsl.ir import Dialect

__all__ = ["get_all_dialects"]


def _graph() -> Dialect:
    from taihu.dialects.graph import Graph

    return Graph


def _tile() -> Dialect:
    from taihu.dialects.tile import Tile

    return Tile


def _loop() -> Dialect:
    from taihu.dialects.loop import Loop

    return Loop


def _sw() -> Dialect:
    from taihu.dialects.sw import Sw

    return Sw


def _swsim() -> Dialect:
    from taihu.dialects.swsim import Swsim

    return Swsim


def _target() -> Dialect:
    from taihu.dialects.target import Target

    return Target


def get_all_dialects() -> dict[str, Callable[[], Dialect]]:
    """Name -> factory of every taihu dialect."""
    return {
        "graph": _graph,
        "tile": _tile,
        "loop": _loop,
        "sw": _sw,
        "swsim": _swsim,
        "target": _target,
    }
