"""A command's failure is one line and an exit status decided in one place: the one answer
mapping (:func:`gateway.errors.answer_for`), which the command line renders (issue 48). In
process: what the mapping decides, and that extra arguments are a usage error (2) as missing
ones are."""

from __future__ import annotations

import errno
from pathlib import Path

import pytest

from gateway.cli.commands import main, parse, parser, run_command
from gateway.errors import ExitCode, answer_for
from gateway.errors.commands import CommandError, UsageError
from gateway.errors.mns import MNSError


def fails_with(error: BaseException) -> int:
    def run() -> int:
        raise error

    return run_command("queues", run)


@pytest.mark.parametrize(
    ("error", "status", "line"),
    [
        (CommandError("queue jobs does not exist"), ExitCode.FAILED, "queue jobs does not exist"),
        (UsageError("--until must be after --since"), ExitCode.USAGE, "--until must be after"),
        (MNSError("QueueNotExist"), ExitCode.FAILED, "QueueNotExist: The queue name"),
        (
            FileNotFoundError(errno.ENOENT, "No such file or directory", "/x/key.pem"),
            ExitCode.FAILED,
            "No such file or directory /x/key.pem",
        ),
        (KeyError("x"), ExitCode.FAILED, "unexpected KeyError: 'x'"),
        (CommandError("first line\nsecond line"), ExitCode.FAILED, "first line"),
    ],
)
def test_one_line_and_the_status_of_the_answer(
    capsys: pytest.CaptureFixture[str], error: BaseException, status: ExitCode, line: str
) -> None:
    assert fails_with(error) == status
    err = capsys.readouterr().err
    assert err.startswith(f"mns-gateway queues: {line}") and err.count("\n") == 1, err
    answer = answer_for(error)
    assert (answer.exit_code, f"mns-gateway queues: {answer.line}\n") == (status, err)


@pytest.mark.parametrize("action", ["show", "set", "list", "health"])
def test_an_argument_an_action_does_not_take_is_a_usage_error(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, action: str
) -> None:
    """Failed before: ``subscriptions show T S on`` exited 1 (the command's own failure) while
    a missing argument exits 2 with the usage."""
    with pytest.raises(SystemExit) as ended:
        main(["subscriptions", action, "orders", "web", "on", "--data-dir", str(tmp_path)])
    assert ended.value.code == ExitCode.USAGE
    err = capsys.readouterr().err
    assert err.startswith("usage: mns-gateway subscriptions ")
    assert err.splitlines()[-1] == "mns-gateway subscriptions: error: unrecognized arguments: on"


def test_the_switch_is_still_taken_where_it_belongs() -> None:
    args = parse(parser(), ["subscriptions", "standard-webhooks", "orders", "web", "on"])
    assert (args.topic, args.name, args.switch) == ("orders", "web", "on")
