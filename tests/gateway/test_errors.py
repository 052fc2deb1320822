"""The one mapping from an error to its answer (gateway/errors.py, issue 33 finding 13)."""

from __future__ import annotations

import ast
from pathlib import Path

from gateway.api.control.errors import ControlError
from gateway.errors import Answer, ExitCode, StoreUnavailableError, answer_for
from gateway.protocol.errors import MNSError


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


def test_the_error_module_imports_nothing_from_the_gateway() -> None:
    source = Path(__file__).parents[2] / "gateway" / "errors.py"
    tree = ast.parse(source.read_text())
    imported = [node.module or "" for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            imported += [alias.name for alias in node.names]
    assert not [name for name in imported if name.split(".")[0] == "gateway"]
