"""The test tree mirrors the code: the tests of ``gateway/X/Y.py`` are found under
``tests/gateway/X/``. Suites that cut across packages are named for what they test and live
outside ``tests/gateway/`` (``tests/e2e``, ``tests/faults``...), or in one of the folders below."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path, PurePosixPath

ROOT = Path(__file__).resolve().parent.parent

#: Folders under tests/gateway/ that hold suites cutting across packages (none today).
CROSS_CUTTING: frozenset[str] = frozenset()


def misplaced(
    test_files: Iterable[PurePosixPath], code_dirs: set[PurePosixPath]
) -> list[PurePosixPath]:
    """The test modules (paths relative to tests/) whose folder has no twin in the code."""
    found = []
    for test_file in test_files:
        folder = test_file.parent
        if folder.parts[1:2] and folder.parts[1] in CROSS_CUTTING:
            continue
        if folder not in code_dirs:
            found.append(test_file)
    return sorted(found)


def _code_dirs() -> set[PurePosixPath]:
    gateway = ROOT / "gateway"
    dirs = {gateway, *(path for path in gateway.rglob("*") if path.is_dir())}
    return {PurePosixPath(path.relative_to(ROOT).as_posix()) for path in dirs}


def _test_files() -> list[PurePosixPath]:
    tests = ROOT / "tests"
    return [
        PurePosixPath(path.relative_to(tests).as_posix())
        for path in (tests / "gateway").rglob("test_*.py")
    ]


def test_every_gateway_test_module_sits_in_a_folder_of_the_code() -> None:
    files = _test_files()
    assert len(files) > 100  # the walk found the tree
    assert misplaced(files, _code_dirs()) == []


def test_a_module_in_a_folder_the_code_lacks_is_reported() -> None:
    code = {PurePosixPath("gateway"), PurePosixPath("gateway/pushing")}
    files = [
        PurePosixPath("gateway/pushing/test_worker.py"),
        PurePosixPath("gateway/test_errors.py"),
        PurePosixPath("gateway/control/test_tags.py"),
    ]
    assert misplaced(files, code) == [PurePosixPath("gateway/control/test_tags.py")]
