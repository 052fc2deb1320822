"""The one error package and its one mapping from an error to its answer (gateway/errors/,
issue 33)."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

from gateway.errors import (
    Answer,
    DeliveryError,
    ExitCode,
    GatewayError,
    RefusedError,
    StopsCommandError,
    StoreUnavailableError,
    TryAgainError,
    answer_for,
)
from gateway.errors.control import ControlError, TagLimitError
from gateway.errors.mns import MNSError


def test_a_refused_request_keeps_its_status_code_and_message() -> None:
    assert answer_for(MNSError("QueueNotExist")) == Answer(
        404, "QueueNotExist", "The queue name you provided is not exist."
    )
    assert answer_for(ControlError("Forbidden.RAM", "no")) == Answer(403, "Forbidden.RAM", "no")


def test_an_outage_is_503_with_retry_after_and_no_traceback() -> None:
    down = answer_for(StoreUnavailableError("connection refused to db.internal:5432"))
    assert (down.status, down.code, down.retry_after, down.log_traceback) == (
        503,
        "ServiceUnavailable",
        1,
        False,
    )
    assert "db.internal" not in down.message  # the reason is for the log, not for clients
    assert "full" in answer_for(StoreUnavailableError("disk", full=True)).message


def test_anything_else_is_a_bug() -> None:
    bug = answer_for(KeyError("x"))
    assert (bug.status, bug.code, bug.log_traceback, bug.exit_code) == (
        500,
        "InternalError",
        True,
        ExitCode.FAILED,
    )


ERRORS = Path(__file__).parents[2] / "gateway" / "errors"

#: Exceptions that stay where they are: private control flow that never leaves its module, and
#: the test helper's own (raised to a pytest user, never answered by a front end).
KEPT_ELSEWHERE = {
    "gateway/store/queues.py": {"_NeedsTransaction"},
    "gateway/serving/http1/framing.py": {"_Refused"},
    "gateway/pushing/mail.py": {"_RelayUnavailableError"},
    "gateway/testing/process.py": {"GatewayStartError"},
}


def _imports(tree: ast.AST) -> list[str]:
    imported = [node.module or "" for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            imported += [alias.name for alias in node.names]
    return imported


def test_the_error_package_imports_nothing_else_from_the_gateway() -> None:
    for source in sorted(ERRORS.glob("*.py")):
        imported = _imports(ast.parse(source.read_text()))
        outside = [name for name in imported if name.split(".")[0] == "gateway"]
        assert [name for name in outside if not name.startswith("gateway.errors")] == [], source


def _exception_classes(tree: ast.Module) -> set[str]:
    """Classes named like errors, or deriving from a class so named."""
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef):
            bases = [ast.unparse(base) for base in node.bases]
            if node.name.endswith(("Error", "Exception")) or any(
                base.endswith(("Error", "Exception")) for base in bases
            ):
                found.add(node.name)
    return found


def test_every_error_the_gateway_raises_on_purpose_is_in_the_error_package() -> None:
    root = Path(__file__).parents[2]
    elsewhere = {}
    for source in sorted((root / "gateway").rglob("*.py")):
        if ERRORS in source.parents:
            continue
        classes = _exception_classes(ast.parse(source.read_text()))
        if classes:
            elsewhere[str(source.relative_to(root))] = classes
    assert elsewhere == KEPT_ELSEWHERE


def test_no_module_re_exports_an_error() -> None:
    """``from gateway.errors... import X as X`` is how a module used to keep an old import path."""
    root = Path(__file__).parents[2]
    for source in sorted((root / "gateway").rglob("*.py")):
        for node in ast.walk(ast.parse(source.read_text())):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith(
                "gateway.errors"
            ):
                assert all(alias.asname is None for alias in node.names), source


def _subclasses(root: type) -> set[type]:
    found = set()
    for sub in root.__subclasses__():
        found |= {sub} | _subclasses(sub)
    return found


def test_every_error_belongs_to_one_group() -> None:
    """Grouped by the answer it gets: refused, try again, delivery failure, stops a command."""
    for module in ("commands", "control", "delivery", "mns"):
        importlib.import_module(f"gateway.errors.{module}")
    groups = (RefusedError, TryAgainError, DeliveryError, StopsCommandError)
    for error in _subclasses(GatewayError) - set(groups):
        if error.__module__.startswith("gateway.errors"):
            assert sum(issubclass(error, group) for group in groups) == 1, error


def test_too_many_tags_is_the_control_planes_invalid_parameter() -> None:
    answer = answer_for(TagLimitError("queue", 20))
    assert answer == Answer(
        400,
        "InvalidParameter",
        'The specified parameter "Tag" is not valid: a queue has at most 20 tags.',
    )


def test_a_command_ends_with_the_answers_line_and_exit_status() -> None:
    """The command line renders the one mapping too (issue 48): a usage error exits 2, every
    other failure 1, with the error's own words on one line."""
    from gateway.errors.commands import CommandError, UsageError

    usage = answer_for(UsageError("--until must be after --since"))
    assert (usage.exit_code, usage.line) == (ExitCode.USAGE, "--until must be after --since")
    assert answer_for(CommandError("no\nmore")).line == "no"
    down = answer_for(StoreUnavailableError("connection refused to db.internal:5432"))
    assert down.exit_code == ExitCode.FAILED and "db.internal" in down.line
    assert answer_for(ValueError("bad")).line == "unexpected ValueError: bad"
