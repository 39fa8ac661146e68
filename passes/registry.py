"""Name -> factory of every taihu pass and named pipeline (for ``taihu-opt``, ``taihu-lower`` and
the xDSL universe). Factories import lazily: a pass's module loads when the pass is first used."""

from __future__ import annotations

from collections.abc import Callable

from xdsl.passes import ModulePass

__all__ = ["get_all_passes"]


def _set_target() -> type[ModulePass]:
    from taihu.passes.set_target import SetTargetPass

    return SetTargetPass


def _graph_schedule() -> type[ModulePass]:
    from taihu.passes.graph_schedule import GraphSchedulePass

    return GraphSchedulePass


def _fold_constants() -> type[ModulePass]:
    from taihu.passes.graph.fold_constants import GraphFoldConstantsPass

    return GraphFoldConstantsPass


def _fold_batchnorm() -> type[ModulePass]:
    from taihu.passes.graph.fold_batchnorm import GraphFoldBatchNormPass

    return GraphFoldBatchNormPass


def _simplify() -> type[ModulePass]:
    from taihu.passes.graph.simplify import GraphSimplifyPass

    return GraphSimplifyPass


def _graph_group() -> type[ModulePass]:
    from taihu.passes.graph.group import GraphGroupPass

    return GraphGroupPass


def _tile_split() -> type[ModulePass]:
    from taihu.passes.tile.split import TileSplitPass

    return TileSplitPass


def _tile_reorder() -> type[ModulePass]:
    from taihu.passes.tile.reorder import TileReorderPass

    return TileReorderPass


def _tile_fuse() -> type[ModulePass]:
    from taihu.passes.tile.fuse import TileFusePass

    return TileFusePass


def _tile_vectorize() -> type[ModulePass]:
    from taihu.passes.tile.vectorize import TileVectorizePass

    return TileVectorizePass


def _tile_layout() -> type[ModulePass]:
    from taihu.passes.tile.layout import TileLayoutPass

    return TileLayoutPass


def _graph_to_tile() -> type[ModulePass]:
    from taihu.passes.conversion.graph_to_tile import ConvertGraphToTilePass

    return ConvertGraphToTilePass


def _tile_to_loop() -> type[ModulePass]:
    from taihu.passes.conversion.tile_to_loop import ConvertTileToLoopPass

    return ConvertTileToLoopPass


def _loop_to_sw() -> type[ModulePass]:
    from taihu.passes.conversion.loop_to_sw import ConvertLoopToSwPass

    return ConvertLoopToSwPass


def _sw_to_swsim() -> type[ModulePass]:
    from taihu.passes.conversion.sw_to_swsim import SwToSwsimPass

    return SwToSwsimPass


def _convert_sw_to_swsim() -> type[ModulePass]:
    from taihu.passes.conversion.sw_to_swsim import ConvertSwToSwsimPass

    return ConvertSwToSwsimPass


def _sw_check_deadlock() -> type[ModulePass]:
    from taihu.passes.sw.check_deadlock import SwCheckDeadlockPass

    return SwCheckDeadlockPass


def _sw_check_dma() -> type[ModulePass]:
    from taihu.passes.sw.check_dma import SwCheckDmaPass

    return SwCheckDmaPass


def _taihu_lower() -> type[ModulePass]:
    from taihu.passes.pipelines import TaihuLowerPass

    return TaihuLowerPass


def get_all_passes() -> dict[str, Callable[[], type[ModulePass]]]:
    """Name -> factory of every taihu pass (and named pipeline)."""
    return {
        "taihu-lower": _taihu_lower,
        "set-target": _set_target,
        "convert-graph-to-tile": _graph_to_tile,
        "convert-tile-to-loop": _tile_to_loop,
        "sw-to-swsim": _sw_to_swsim,
        "convert-sw-to-swsim": _convert_sw_to_swsim,
        "convert-loop-to-sw": _loop_to_sw,
        "sw-check-deadlock": _sw_check_deadlock,
        "sw-check-dma": _sw_check_dma,
        "graph-fold-constants": _fold_constants,
        "graph-fold-batchnorm": _fold_batchnorm,
        "graph-simplify": _simplify,
        "graph-schedule": _graph_schedule,
        "graph-group": _graph_group,
        "tile-split": _tile_split,
        "tile-reorder": _tile_reorder,
        "tile-fuse": _tile_fuse,
        "tile-vectorize": _tile_vectorize,
        "tile-layout": _tile_layout,
    }
