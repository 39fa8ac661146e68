"""Build small ``graph`` modules in Python for lowering tests: :class:`G` is
:class:`taihu.tools.layers.GraphBuilder` (``@main`` with named arguments ``x0, x1, ...`` and
results ``y0, ...``, the convention of the reference runner and the simulator's runner)."""

from __future__ import annotations

from taihu.tools.layers import GraphBuilder as G

__all__ = ["G"]
