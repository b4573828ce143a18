"""The package's layout holds: imports only go down, nothing imports in a circle, and
looking up an experiment imports no widget, plot library or authoring tool.

The rule is stated in ``companion/__init__.py``: a top-level module is shared by many
notebooks, a folder is one chapter, and ``learning/``, ``widgets/``, ``cheatsheet/`` and
``tools/`` are the course around the chapters. The graph below is read from the source, every
import included, also those deferred into functions, since a deferred import is still a
dependency, only a hidden one.
"""
from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "companion"

# Tiers from the bottom: 0 the shared foundation, 1 the chapters, 2 the course, 3 the tools.
FOUNDATION = {"launcher", "supervisor", "runtime", "backends", "experiments", "basics", "models",
              "data", "units", "validation", "hardware", "plotting", "i18n", "network",
              "fonts", "why_distribute"}
# A chapter may import chapters of earlier (or the same) notebooks, never of later ones.
CHAPTERS = {"collectives": 1, "data_parallel": 3, "pipeline": 4, "tensor_parallel": 5,
            "sequence_parallel": 6, "compression": 7, "dga": 8, "planner": 9, "hybrid": 9,
            "roofline": 10, "overlap": 10, "batch_size": 10, "resilience": 10,
            "topology": 11, "autoparallel": 12}
COURSE = {"learning", "widgets", "cheatsheet", "__main__"}
TOOLS = {"tools"}


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _resolve(module: str, is_package: bool, level: int, target: str | None) -> str:
    base = module.split(".") if is_package else module.split(".")[:-1]
    if level > 1:
        base = base[: len(base) - (level - 1)]
    return ".".join(base + ([target] if target else []))


def import_edges() -> list[tuple[str, str, int]]:
    """(importer, imported, line) for every import of a companion module, deferred ones too."""
    modules = {module_name(p): p for p in PACKAGE.rglob("*.py")}
    edges = []
    for name, path in modules.items():
        is_package = path.name == "__init__.py"
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            targets = []
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = (_resolve(name, is_package, node.level, node.module) if node.level
                        else node.module or "")
                # `from pkg import sub` imports the submodule when there is one
                targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base
                           for a in node.names]
            for target in targets:
                while target and target not in modules:
                    target = target.rpartition(".")[0]
                if target.startswith("companion") and target != name:
                    edges.append((name, target, node.lineno))
    return edges


def place(module: str) -> tuple[int, int, str]:
    """(tier, notebook order within the tier, top-level name) of a companion module."""
    parts = module.split(".")
    top = parts[1] if len(parts) > 1 else ""
    if module == "companion" or top in FOUNDATION:
        return 0, 0, top
    if top in CHAPTERS:
        return 1, CHAPTERS[top], top
    if top in COURSE:
        return 2, 0, top
    if top in TOOLS:
        return 3, 0, top
    raise AssertionError(f"{module}: a new top-level name; add it to one tier in {__file__}")


def test_every_module_has_a_place():
    for path in PACKAGE.rglob("*.py"):
        place(module_name(path))


def test_no_upward_import():
    upward = []
    for a, b, line in import_edges():
        (ta, oa, top_a), (tb, ob, top_b) = place(a), place(b)
        if b == "companion":
            continue  # the package's face (launch, rank, ...) is the foundation itself
        if tb > ta or (ta == tb == 1 and top_a != top_b and ob > oa):
            upward.append(f"{a} (line {line}) imports {b}")
    assert not upward, "imports that run up:\n" + "\n".join(upward)


def test_no_circle():
    graph: dict[str, set[str]] = {}
    for a, b, _ in import_edges():
        if b != "companion" and not a.startswith(b + "."):  # a package's own __init__ is its face
            graph.setdefault(a, set()).add(b)
    # Tarjan's strongly connected components; any component larger than one is a circle.
    index, low, stack, on, circles, counter = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                circles.append(sorted(component))

    sys.setrecursionlimit(10_000)
    for v in list(graph):
        if v not in index:
            visit(v)
    assert not circles, "import circles:\n" + "\n".join(" <-> ".join(c) for c in circles)


def test_tools_are_imported_by_nothing_else():
    offenders = [f"{a} imports {b}" for a, b, _ in import_edges()
                 if place(b)[0] == 3 and place(a)[0] != 3]
    assert not offenders, offenders


def test_at_most_15_loose_top_level_modules():
    loose = sorted(p.name for p in PACKAGE.glob("*.py"))
    assert len(loose) <= 15, loose


DATA_DECLARATION = re.compile(r"\bthis (module|file) is (a )?(table of )?data\b", re.I)


def test_module_and_function_sizes():
    long_modules, long_functions = [], []
    for path in sorted(PACKAGE.rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        tree = ast.parse(text)
        lines = len(text.splitlines())
        if lines > 300 and not DATA_DECLARATION.search(ast.get_docstring(tree) or ""):
            long_modules.append(f"{path.relative_to(PACKAGE)} ({lines})")
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                length = node.end_lineno - node.lineno + 1
                if length > 80:
                    long_functions.append(f"{path.relative_to(PACKAGE)}:{node.lineno} "
                                          f"{node.name} ({length})")
    assert not long_modules, "modules over 300 lines: " + ", ".join(long_modules)
    assert not long_functions, "functions over 80 lines: " + ", ".join(long_functions)


def test_experiment_table_matches_the_decorators():
    from companion import experiments

    # Every call of experiment("name", ...): as a decorator, or applied to a function.
    found = {}
    for path in PACKAGE.rglob("*.py"):
        if path.name == "experiments.py":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (isinstance(node, ast.Call) and getattr(node.func, "id", "") == "experiment"
                    and node.args and isinstance(node.args[0], ast.Constant)):
                found[node.args[0].value] = module_name(path)
    assert found == experiments.MODULES
    assert set(experiments.names()) == set(experiments.MODULES) and not experiments.load_errors


FORBIDDEN_IN_RANKS = ("matplotlib", "ipywidgets", "companion.widgets", "companion.tools",
                      "companion.learning", "IPython")


# One of each kind of chapter: the foundation, a folder with its own runs module, a
# pipeline, a 3D hybrid, an overlap run on the emulated link, the topology and compression.
LOOKED_UP = ["whoami", "dga_train", "pipeline_run", "hybrid_dp_tp_pp", "overlap_steps",
             "topology_timing", "compression_train"]


def test_looking_up_an_experiment_imports_no_course_code():
    # One fresh process looks them all up: what it imported is a superset of what each
    # lookup imports alone, so a clean result holds for every one of them.
    code = ("import sys\nfrom companion import experiments\n"
            f"for name in {LOOKED_UP!r}:\n    experiments.get(name)\n"
            "print('\\n'.join(sys.modules))")
    loaded = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True,
                            text=True).stdout.split()
    bad = sorted(m for m in loaded if m.startswith(FORBIDDEN_IN_RANKS))
    assert not bad, f"looking up {LOOKED_UP} imported {bad[:8]}"
