"""No import cycles between the modules of gateway/ and receiver/ (issue 24).

Every import counts: at the top of a module, inside functions, and under ``TYPE_CHECKING``
(an import that is only deferred still ties the two modules together, and is where cycles hide).
The graph is read from the source with :mod:`ast`, so nothing is imported to build it.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("gateway", "receiver")


def module_files() -> dict[str, Path]:
    """Every module of the packages by dotted name (a package by its ``__init__``)."""
    found: dict[str, Path] = {}
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            parts = list(path.relative_to(ROOT).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            found[".".join(parts)] = path
    return found


def _imported(node: ast.AST, module: str, is_package: bool) -> Iterator[tuple[str, list[str]]]:
    """(module, names) for each import statement anywhere in the tree, relative ones resolved."""
    for child in ast.walk(node):
        if isinstance(child, ast.Import):
            for alias in child.names:
                yield alias.name, []
        elif isinstance(child, ast.ImportFrom):
            base = child.module or ""
            if child.level:
                anchor = module.split(".")
                drop = child.level - 1 if is_package else child.level
                anchor = anchor[: len(anchor) - drop]
                base = ".".join([*anchor, base] if base else anchor)
            yield base, [alias.name for alias in child.names]


def import_graph() -> dict[str, set[str]]:
    """Module -> the modules of these packages it imports (``from a import b`` with ``a.b`` a
    module is an edge to ``a.b``; otherwise to ``a``)."""
    files = module_files()
    graph: dict[str, set[str]] = {name: set() for name in files}
    for name, path in files.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        for target, names in _imported(tree, name, path.name == "__init__.py"):
            if not target.startswith(PACKAGES):
                continue
            submodules = [f"{target}.{n}" for n in names if f"{target}.{n}" in files]
            edges = submodules or ([target] if target in files else [])
            if names and len(submodules) < len(names) and target in files:
                edges.append(target)  # names that are not modules come from the package
            graph[name].update(e for e in edges if e != name)
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = 0
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            for child in children:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        found.append(sorted(component))
    return found


def test_the_graph_sees_every_kind_of_import() -> None:
    graph = import_graph()
    # a top-level import, one inside a function, one under TYPE_CHECKING (examples that exist)
    assert "gateway.composition" in graph["gateway.serving.wsgi"]
    assert "gateway.composition" in graph["gateway.serving.gunicorn_app"]  # inside load()
    assert "gateway.observability.metrics" in graph["gateway.api.context"]  # under TYPE_CHECKING


def test_cycles_are_found() -> None:
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_no_import_cycles() -> None:
    assert cycles(import_graph()) == []


def test_the_environment_is_read_in_one_module() -> None:
    """``MNS_GATEWAY_*`` is read by gateway/config/settings.py only (issue 24): no other module
    of the gateway touches ``os.environ`` or ``os.getenv``, but the two that hand an environment
    to a child process or check for Java, which read no setting."""
    allowed = {
        "gateway.config.settings",
        "gateway.testing.embedded",  # the gateway it starts gets none of the caller's settings
        "gateway.testing.process",  # PYTEST_XDIST_WORKER: each test worker's block of ports
        "gateway.pipeline.report",  # JAVA_HOME and PATH, for the report's Spark
    }
    readers = set()
    for name, path in module_files().items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (
                isinstance(node, ast.Attribute)
                and node.attr in ("environ", "getenv")
                and isinstance(node.value, ast.Name)
                and node.value.id == "os"
            ):
                readers.add(name)
    assert readers <= allowed, sorted(readers - allowed)
    assert "gateway.config.settings" in readers
