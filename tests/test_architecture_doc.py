"""docs/architecture.md's module list and the tree agree, both ways (issue 33): every package
and module of ``gateway/`` and ``receiver/`` is listed, and nothing listed is missing.

The list is the first code block of the page. A line that starts, after its indentation, with
``name/`` lists a package (two more spaces of indentation: a package inside the one above);
every other line is part of the description of the package listed last. A module is listed by
its file name, ``name.py``, in the description of its package (not after a ``/``: a path such as
``store/opening.py`` refers to another package's module and lists nothing).
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).parents[1]
DOC = ROOT / "docs" / "architecture.md"
PACKAGE_LINE = re.compile(r"^( *)([a-z_][a-z0-9_]*)/(?:\s|$)")
MODULE = re.compile(r"(?<![\w/.-])([a-z_][a-z0-9_]*)\.py\b")


def module_list(text: str) -> dict[str, set[str]]:
    """Package path -> the module names its description lists."""
    block = text.split("```\n", 2)[1]
    listed: dict[str, set[str]] = {}
    stack: list[tuple[int, str]] = []
    current = ""
    for line in block.splitlines():
        package = PACKAGE_LINE.match(line)
        if package:
            indent = len(package.group(1))
            while stack and stack[-1][0] >= indent:
                stack.pop()
            parent = stack[-1][1] + "/" if stack else ""
            current = parent + package.group(2)
            stack.append((indent, current))
            assert current not in listed, f"{current}/ is listed twice"
            listed[current] = set()
            line = line[package.end() :]
        assert current, f"a line before the first package: {line!r}"
        listed[current] |= set(MODULE.findall(line))
    return listed


#: Folders a build writes beside the sources.
BUILT = frozenset({"build", "dist"})


def tree() -> dict[str, set[str]]:
    """Package path -> its modules, for every directory of gateway/ and receiver/ with Python."""
    found: dict[str, set[str]] = {}
    for top in ("gateway", "receiver"):
        for source in (ROOT / top).rglob("*.py"):
            if BUILT & set(source.relative_to(ROOT).parts):
                continue  # a build's copy (`pip install ./receiver` leaves receiver/build/)
            package = source.parent.relative_to(ROOT).as_posix()
            modules = found.setdefault(package, set())
            if source.name != "__init__.py":
                modules.add(source.stem)
    return found


def test_every_package_in_the_tree_is_listed_and_every_listed_one_exists() -> None:
    assert sorted(module_list(DOC.read_text())) == sorted(tree())


def test_every_module_in_the_tree_is_listed_and_every_listed_one_exists() -> None:
    listed, actual = module_list(DOC.read_text()), tree()
    for package in sorted(set(listed) & set(actual)):
        missing = sorted(actual[package] - listed[package])
        unknown = sorted(listed[package] - actual[package])
        assert (package, missing, unknown) == (package, [], [])


def test_the_parser_reads_nesting_and_ignores_paths_to_other_packages() -> None:
    text = (
        "```\ngateway/\n  cli.py     the command line (store/opening.py), main.py\n"
        "  store/     base.py\n    sql/     connection.py,\n             migrations.py\n"
        "  queues/    records.py\nreceiver/  verify.py\n```\n"
    )
    assert module_list(text) == {
        "gateway": {"cli", "main"},
        "gateway/store": {"base"},
        "gateway/store/sql": {"connection", "migrations"},
        "gateway/queues": {"records"},
        "receiver": {"verify"},
    }
