"""The imports go one way, in the library and in the benchmarks: no module imports one that
imports it back, directly or through others — counting imports inside functions (the usual way
to hide a cycle), but not ``if TYPE_CHECKING:`` blocks, which never run."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent / "compaction"
BENCHMARKS = ROOT.parent / "benchmarks"


def _module_name(path: Path, root: Path = ROOT) -> str:
    parts = path.relative_to(root.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _imports(tree: ast.AST) -> list[ast.Import | ast.ImportFrom]:
    found: list[ast.Import | ast.ImportFrom] = []

    def walk(node: ast.AST) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and _is_type_checking(child):
                for other in child.orelse:
                    walk(other)
                continue
            if isinstance(child, (ast.Import, ast.ImportFrom)):
                found.append(child)
            walk(child)

    walk(tree)
    return found


def import_graph(root: Path = ROOT) -> dict[str, set[str]]:
    """Module -> the modules of ours (under ``root``) it imports (anywhere in it)."""
    paths = {_module_name(p, root): p for p in root.rglob("*.py")}
    graph: dict[str, set[str]] = {}
    for name, path in paths.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        deps: set[str] = set()
        for node in _imports(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                deps.update(a.name for a in node.names if a.name in paths)
                continue
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                source = ".".join([*base, *([node.module] if node.module else [])])
            else:
                source = node.module or ""
            for alias in node.names:
                if f"{source}.{alias.name}" in paths:
                    deps.add(f"{source}.{alias.name}")
                elif source in paths:
                    deps.add(source)
        graph[name] = deps - {name}
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph.get(v, ()):
            if w not in graph:
                continue
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def _subgraph(keep) -> dict[str, set[str]]:
    graph = import_graph()
    return {m: {d for d in deps if keep(d)} for m, deps in graph.items() if keep(m)}


def _in_sessions(module: str) -> bool:
    return module == "compaction.sessions" or module.startswith("compaction.sessions.")


def test_the_graph_sees_imports_inside_functions() -> None:
    """The check can fail: a cycle held together by a function-level import is found."""
    graph = {"a": {"b"}, "b": {"a"}, "c": {"a"}}
    assert cycles(graph) == [["a", "b"]]
    tree = ast.parse("def f():\n    from .pipeline import X\nif TYPE_CHECKING:\n    import y\n")
    assert [type(n).__name__ for n in _imports(tree)] == ["ImportFrom"]


def test_the_core_import_graph_is_acyclic() -> None:
    core = _subgraph(lambda m: not _in_sessions(m))
    assert "compaction.strategy" in core and "compaction.loop.turn" in core
    assert cycles(core) == []


def test_the_ladder_core_goes_one_way() -> None:
    graph = import_graph()
    assert "compaction.pipeline" not in graph["compaction.strategy"]
    assert "compaction.registry" not in graph["compaction.pipeline"]
    assert "compaction.pipeline" in graph["compaction.registry"]
    assert "compaction.strategy" in graph["compaction.pipeline"]


def test_the_sessions_import_graph_is_acyclic() -> None:
    assert cycles(_subgraph(_in_sessions)) == []


def test_the_whole_package_import_graph_is_acyclic() -> None:
    assert cycles(_subgraph(lambda module: True)) == []


def test_the_benchmarks_import_graph_is_acyclic() -> None:
    graph = import_graph(BENCHMARKS)
    assert "benchmarks.probe.suite" in graph and "benchmarks.common.data" in graph
    assert "benchmarks.probe.report" in graph["benchmarks.probe.suite"]
    assert cycles(graph) == []


def test_the_benchmarks_common_part_imports_no_suite() -> None:
    """What every suite shares depends on none of them, so a suite can be removed alone."""
    graph = import_graph(BENCHMARKS)
    common = {m: deps for m, deps in graph.items() if m.startswith("benchmarks.common")}
    assert common
    assert {
        d for deps in common.values() for d in deps if not d.startswith("benchmarks.common")
    } == set()


def test_check_reads_results_and_nothing_in_the_library_reads_check() -> None:
    graph = import_graph()
    inside = {m for m in graph if m == "compaction.check" or m.startswith("compaction.check.")}
    assert "compaction.check.requests" in inside
    users = {m for m, deps in graph.items() if m not in inside and deps & inside}
    assert {m for m in users if not m.startswith(("compaction.cli", "compaction._cli"))} == set()
    upward = (
        "compaction.strategies",
        "compaction.integrations",
        "compaction.sessions",
        "compaction.cli",
        "compaction._cli",
    )
    assert {d for m in inside for d in graph[m] if d.startswith(upward)} == set()
