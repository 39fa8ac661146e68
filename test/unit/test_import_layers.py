"""The house's one-way imports: ``taihu.target`` < dialects < analytic model, numpy reference <
passes < simulator < tools, and no import cycle between packages (module-level and
function-local imports alike; a package's ``__init__`` re-exporting its modules is the package).

Read from the sources with ``ast`` (nothing is imported), so a lazy import inside a function counts
as much as one at the top of a file.
"""

from __future__ import annotations

import ast
import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]

#: repository folder -> package name (pyproject.toml's package-dir)
FOLDERS = {"target": "taihu.target", "dialects": "taihu.dialects", "passes": "taihu.passes",
           "frontends": "taihu.frontends", "backends": "taihu.backends", "tools": "taihu.tools"}

#: a package may import only from these layers (prefixes); tools, benchmarks and tests may import anything
ALLOWED: dict[str, tuple[str, ...]] = {
    "taihu.target": ("taihu.target",),
    "taihu.dialects": ("taihu.target", "taihu.dialects"),
    "taihu.frontends": ("taihu.target", "taihu.dialects", "taihu.frontends"),
    "taihu.backends.model": ("taihu.target", "taihu.backends.model"),
    # graph-fold-constants evaluates constant sub-graphs with the numpy reference interpreter
    "taihu.passes": ("taihu.target", "taihu.dialects", "taihu.backends.model", "taihu.backends.reference",
                     "taihu.passes"),
    "taihu.backends.reference": ("taihu.target", "taihu.dialects", "taihu.backends.reference"),
    "taihu.backends.sim": ("taihu.target", "taihu.dialects", "taihu.passes", "taihu.backends.model",
                           "taihu.backends.reference", "taihu.backends.sim"),
}


def _modules() -> dict[str, pathlib.Path]:
    """Dotted module name -> file, for every Python file of the library folders."""
    out: dict[str, pathlib.Path] = {}
    for folder, pkg in FOLDERS.items():
        for path in sorted((ROOT / folder).rglob("*.py")):
            rel = path.relative_to(ROOT / folder).with_suffix("")
            parts = [p for p in rel.parts if p != "__init__"]
            out[".".join([pkg, *parts])] = path
    return out


def _package(module: str, modules: dict[str, pathlib.Path]) -> str:
    """The package a module belongs to (a package's ``__init__`` belongs to the package itself)."""
    path = modules[module]
    return module if path.name == "__init__.py" else module.rpartition(".")[0]


def _imports(module: str, path: pathlib.Path, modules: dict[str, pathlib.Path]) -> set[str]:
    """taihu modules imported anywhere in ``path`` (resolved to known modules)."""
    is_pkg = path.name == "__init__.py"
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = module.split(".")
                anchor = anchor if is_pkg else anchor[:-1]
                anchor = anchor[: len(anchor) - (node.level - 1)]
                base = ".".join([*anchor, *([base] if base else [])])
            names = [base] + [f"{base}.{a.name}" for a in node.names]
        for name in names:
            while name and name not in modules:
                name = name.rpartition(".")[0]
            if name.startswith("taihu.") and name in modules:
                found.add(name)
    return found


def _layer(pkg: str) -> str | None:
    return max((k for k in ALLOWED if pkg == k or pkg.startswith(k + ".")), key=len, default=None)


def _graph() -> tuple[dict[str, pathlib.Path], dict[str, set[str]]]:
    modules = _modules()
    return modules, {m: _imports(m, p, modules) for m, p in modules.items()}


def test_imports_flow_one_way() -> None:
    modules, graph = _graph()
    upward = []
    for mod, deps in graph.items():
        layer = _layer(mod)
        if layer is None:
            continue
        for dep in deps:
            if not dep.startswith(ALLOWED[layer]):
                upward.append(f"{modules[mod].relative_to(ROOT)} imports {dep}")
    assert not upward, "imports against the layering:\n" + "\n".join(sorted(upward))


def test_no_import_cycle_between_packages() -> None:
    modules, graph = _graph()
    pkg_graph: dict[str, set[str]] = {}
    for mod, deps in graph.items():
        src = _package(mod, modules)
        for dep in deps:
            dst = _package(dep, modules)
            if src != dst:
                pkg_graph.setdefault(src, set()).add(dst)
    # Tarjan's strongly connected components
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    cycles: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(pkg_graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                cycles.append(sorted(comp))

    for v in sorted(pkg_graph):
        if v not in index:
            visit(v)
    assert not cycles, "import cycles between packages: " + "; ".join(" <-> ".join(c) for c in cycles)


@pytest.mark.parametrize("pkg", ["taihu.dialects", "taihu.passes", "taihu.backends.model"])
def test_nothing_below_the_simulator_imports_it(pkg: str) -> None:
    modules, graph = _graph()
    bad = sorted(f"{modules[m].relative_to(ROOT)} imports {d}" for m, deps in graph.items()
                 if m.startswith(pkg) for d in deps if d.startswith("taihu.backends.sim"))
    assert not bad, "\n".join(bad)
