"""The taihu xDSL universe: every taihu dialect, pass and target, for ``xdsl-opt`` and
``taihu-opt``.

Registered as the ``taihu`` entry point of the ``xdsl.universe`` group in ``pyproject.toml``,
so stock ``xdsl-opt`` discovers taihu's dialects and passes once taihu is installed. The
registries live with what they register (:mod:`taihu.dialects.registry`,
:mod:`taihu.passes.registry`); their factories import lazily, so loading the universe costs
nothing until a dialect or pass is used.
"""

from __future__ import annotations

from collections.abc import Callable

from xdsl.universe import Universe
from xdsl.utils.target import Target

from taihu.dialects.registry import get_all_dialects
from taihu.passes.registry import get_all_passes

__all__ = ["TAIHU_UNIVERSE", "get_all_dialects", "get_all_passes", "get_all_targets"]


def get_all_targets() -> dict[str, Callable[[], type[Target]]]:
    """Name -> factory of every taihu xDSL target (``xdsl-opt -t NAME``): ``swsim-run`` runs the
    module on the core-group simulator and prints the per-layer report
    (:mod:`taihu.tools.sim_target`)."""

    def swsim_run() -> type[Target]:
        from taihu.tools.sim_target import SwsimRunTarget

        return SwsimRunTarget

    return {"swsim-run": swsim_run}


TAIHU_UNIVERSE = Universe(
    all_dialects=get_all_dialects(),
    all_passes=get_all_passes(),
    all_targets=get_all_targets(),
)
