"""The package's layers depend downward only, and the pure layers never import Spark.

Layers (docs/design.md's map): vocabulary (with errors and lazy) → semiring, store → graph → query → viz, export;
capture (Spark) and workflow sit beside them, and engines (the Spark query engine) beside query;
cli, shell, demo and bench use everything. Every
import in a module counts, including those inside functions.
"""
from __future__ import annotations

import ast
import pkgutil
import subprocess
import sys
from pathlib import Path

import lipspark

ROOT = Path(lipspark.__file__).parent

#: layer → the module prefixes it holds
LAYERS: dict[str, tuple[str, ...]] = {
    "vocabulary": ("lipspark.errors", "lipspark.lazy", "lipspark.cache", "lipspark.vocabulary"),
    "semiring": ("lipspark.semiring",),
    "store": ("lipspark.store",),
    "graph": ("lipspark.graph",),
    "query": ("lipspark.query",),
    "viz": ("lipspark.viz", "lipspark.export"),
    "capture": ("lipspark.capture", "lipspark.frame", "lipspark.tracker", "lipspark.functions", "lipspark.blackbox",
                "lipspark.columns", "lipspark.plan", "lipspark.session", "lipspark.class_archive"),
    "workflow": ("lipspark.workflow", "lipspark.examples"),
    "engines": ("lipspark.engines",),
    "application": ("lipspark.cli", "lipspark.shell", "lipspark.demo", "lipspark.bench", "lipspark"),
}
#: layer → the layers it may import (besides itself)
ALLOWED: dict[str, set[str]] = {
    "vocabulary": set(),
    "semiring": {"vocabulary"},
    "store": {"vocabulary"},
    "graph": {"vocabulary", "semiring", "store"},
    "query": {"vocabulary", "semiring", "store", "graph"},
    "viz": {"vocabulary", "semiring", "store", "graph", "query"},
    "capture": {"vocabulary", "semiring", "store", "graph"},
    "workflow": {"vocabulary", "semiring", "store", "graph", "capture"},
    "engines": {"vocabulary", "semiring", "store", "graph", "query", "capture"},  # the Spark query engine
    "application": set(LAYERS),
}
PURE = ("vocabulary", "semiring", "store", "graph", "query", "viz")
#: the Spark forms of the id layout sit beside its numpy forms and import pyspark when called
SPARK_FORMS = {"lipspark.vocabulary.ids"}


def _layer(module: str) -> str:
    best = max((p for prefixes in LAYERS.values() for p in prefixes if module == p or module.startswith(p + ".")), key=len)
    return next(layer for layer, prefixes in LAYERS.items() if best in prefixes)


def _modules() -> dict[str, Path]:
    out = {"lipspark": ROOT / "__init__.py"}
    for info in pkgutil.walk_packages([str(ROOT)], prefix="lipspark."):
        spec = info.module_finder.find_spec(info.name, None)  # type: ignore[call-arg]
        if spec is not None and spec.origin and spec.origin.endswith(".py"):
            out[info.name] = Path(spec.origin)
    return out


def _statements(tree: ast.AST, runtime_only: bool) -> list[ast.AST]:
    """Every node of ``tree``; with ``runtime_only``, none under ``if TYPE_CHECKING:``."""
    out: list[ast.AST] = []
    stack = [tree]
    while stack:
        node = stack.pop()
        out.append(node)
        if runtime_only and isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING":
            stack.extend(node.orelse)
            continue
        stack.extend(ast.iter_child_nodes(node))
    return out


def _imports(module: str, path: Path, known: set[str], *, runtime_only: bool = False) -> set[str]:
    """Every module ``module`` imports (absolute names), wherever the import statement is
    (with ``runtime_only``, leaving out imports for type checking alone)."""
    tree = ast.parse(path.read_text(), str(path))
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found: set[str] = set()
    for node in _statements(tree, runtime_only):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                base = ".".join(parts[: len(parts) - node.level + 1] + ([base] if base else []))
            for a in node.names:  # `from lipspark import functions` imports a module
                found.add(f"{base}.{a.name}" if f"{base}.{a.name}" in known else base)
    return found


def test_every_module_has_a_layer() -> None:
    for module in _modules():
        assert _layer(module) in ALLOWED


def test_layers_depend_downward_only() -> None:
    modules = _modules()
    known = set(modules)
    wrong = []
    for module, path in sorted(modules.items()):
        mine = _layer(module)
        for imported in _imports(module, path, known):
            if imported.split(".")[0] == "lipspark":
                theirs = _layer(imported)
                if theirs != mine and theirs not in ALLOWED[mine]:
                    wrong.append(f"{module} ({mine}) imports {imported} ({theirs})")
            elif imported.split(".")[0] == "pyspark" and mine in PURE and module not in SPARK_FORMS:
                wrong.append(f"{module} ({mine}) imports {imported}: the {mine} layer must work without Spark")
    assert not wrong, "upward or Spark imports:\n" + "\n".join(wrong)


def test_no_import_cycles() -> None:
    """Modules import each other without cycles when they run (an import inside a function
    counts; imports for type checking alone do not)."""
    import networkx as nx

    modules = _modules()
    known = set(modules)
    g = nx.DiGraph()
    for module, path in modules.items():
        g.add_edges_from((module, i) for i in _imports(module, path, known, runtime_only=True)
                         if i in known and i not in (module, "lipspark"))
    cycles = [sorted(c) for c in nx.strongly_connected_components(g) if len(c) > 1]
    assert not cycles, f"import cycles: {cycles}"


def test_spark_forms_import_pyspark_only_when_called() -> None:
    for module in SPARK_FORMS:
        tree = ast.parse(_modules()[module].read_text())
        top = [n for n in tree.body if isinstance(n, (ast.Import, ast.ImportFrom))]
        assert not [n for n in top if "pyspark" in ast.dump(n)], f"{module} imports pyspark at module level"


def test_pure_layers_import_without_pyspark() -> None:
    code = ("import sys, lipspark.vocabulary, lipspark.semiring, lipspark.store, lipspark.graph.index, "
            "lipspark.query, lipspark.viz, lipspark.export; "
            "print(sorted(m for m in sys.modules if m.split('.')[0] == 'pyspark'))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]", out.stdout + out.stderr


def test_a_packages_export_stays_itself_whatever_was_imported_first() -> None:
    # lipspark.workflow exports the functions run and materialize from its submodules of the same
    # names; importing a submodule first must not make the package's name the module
    code = ("import importlib\n"
            "from lipspark.workflow.materialize import graph_store\n"
            "from lipspark.workflow.run import RunSummary\n"
            "from lipspark.workflow import materialize, run\n"
            "import lipspark.workflow as w\n"
            "print(callable(materialize), callable(run), w.run is run, type(importlib.import_module('lipspark.workflow.run')).__name__)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["True", "True", "True", "module"], out.stdout + out.stderr
