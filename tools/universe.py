"""The taihu xDSL universe: every taihu dialect, pass and target, for ``xdsl-opt`` and
``taihu-opt``.

Registered as the ``taihu`` entry point of the ``xdsl.universe`` group in ``pyproject.toml``,
so stock ``xdsl-opt`` discovers taihu's dialects and passes once taihu is installed.
Factories import lazily: loading the universe costs nothing until a dialect or pass is used.
"""

from __future__ import annotations

from collections.abc import Callable

from xdsl.ir import Dialect
from xdsl.passes import ModulePass
from xdsl.universe import Universe
from xdsl.utils.target import Target


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


def get_all_dialects() -> dict[str, Callable[[], Dialect]]:
    """Name -> factory of every taihu dialect."""
    return {
        "graph": _graph,
        "tile": _tile,
        "loop": _loop,
        "sw": _sw,
        "swsim": _swsim,
    }


def get_all_passes() -> dict[str, Callable[[], type[ModulePass]]]:
    """Name -> factory of every taihu pass (and named pipeline)."""

    def fold_constants() -> type[ModulePass]:
        from taihu.passes.graph.fold_constants import GraphFoldConstantsPass

        return GraphFoldConstantsPass

    def fold_batchnorm() -> type[ModulePass]:
        from taihu.passes.graph.fold_batchnorm import GraphFoldBatchNormPass

        return GraphFoldBatchNormPass

    def simplify() -> type[ModulePass]:
        from taihu.passes.graph.simplify import GraphSimplifyPass

        return GraphSimplifyPass

    def convert_graph_to_tile() -> type[ModulePass]:
        from taihu.passes.conversion.graph_to_tile import ConvertGraphToTilePass

        return ConvertGraphToTilePass

    def convert_tile_to_loop() -> type[ModulePass]:
        from taihu.passes.conversion.tile_to_loop import ConvertTileToLoopPass

        return ConvertTileToLoopPass

    def sw_to_swsim() -> type[ModulePass]:
        from taihu.passes.conversion.sw_to_swsim import SwToSwsimPass

        return SwToSwsimPass

    def taihu_lower() -> type[ModulePass]:
        from taihu.passes.pipelines import TaihuLowerPass

        return TaihuLowerPass

    def convert_sw_to_swsim() -> type[ModulePass]:
        from dataclasses import dataclass

        from taihu.passes.conversion.sw_to_swsim import SwToSwsimPass

        @dataclass(frozen=True)
        class ConvertSwToSwsimPass(SwToSwsimPass):
            """Alias of ``sw-to-swsim`` named like the other conversions (contract)."""

            name = "convert-sw-to-swsim"

        return ConvertSwToSwsimPass

    def convert_loop_to_sw() -> type[ModulePass]:
        from taihu.passes.conversion.loop_to_sw import ConvertLoopToSwPass

        return ConvertLoopToSwPass

    return {
        "taihu-lower": taihu_lower,
        "convert-graph-to-tile": convert_graph_to_tile,
        "convert-tile-to-loop": convert_tile_to_loop,
        "sw-to-swsim": sw_to_swsim,
        "convert-sw-to-swsim": convert_sw_to_swsim,
        "convert-loop-to-sw": convert_loop_to_sw,
        "graph-fold-constants": fold_constants,
        "graph-fold-batchnorm": fold_batchnorm,
        "graph-simplify": simplify,
    }


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
