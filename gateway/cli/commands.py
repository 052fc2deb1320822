"""``mns-gateway``: serve the API with delivery workers, run workers alone, operate on the store.

Every command fails the way a tool should: one line on stderr naming what is wrong, and a
non-zero exit code; tracebacks are for bugs. A wrong option is reported with the usage of the
command it was given to. Commands that print data print it for people (times in ISO-8601 UTC)
and, with ``--json``, as JSON for scripts. Each command group is its own module here.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from collections.abc import Callable, Sequence
from typing import Any

from gateway.cli import (
    admin,
    credentials,
    dead_letters,
    deliveries,
    inbox,
    keys,
    migrate,
    queues,
    report,
    serve,
    subscriptions,
    topics,
    worker,
)
from gateway.errors import ExitCode, answer_for

#: In the order ``mns-gateway --help`` lists them.
GROUPS = (
    serve,
    worker,
    migrate,
    dead_letters,
    deliveries,
    admin,
    keys,
    credentials,
    inbox,
    queues,
    topics,
    subscriptions,
    report,
)


def parser() -> argparse.ArgumentParser:
    description = __doc__.split("\n")[0].replace("``", "")
    top = argparse.ArgumentParser(prog="mns-gateway", description=description)
    top.add_argument("--version", action=_Version, nargs=0, help="show the version and exit")
    commands = top.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for group in GROUPS:
        group.add_command(commands)
    return top


class _Version(argparse.Action):
    """argparse's ``version`` action, the installed version looked up only when asked for:
    ``importlib.metadata`` costs every other command about 60 ms of its start."""

    def __call__(self, parser: argparse.ArgumentParser, *_: Any) -> None:
        from importlib import metadata

        try:
            version = metadata.version("mns-push")
        except metadata.PackageNotFoundError:  # run from a checkout without installing it
            version = "(not installed)"
        print(f"{parser.prog} {version}")  # on stdout, as argparse's own version action
        parser.exit()


def chosen_parser(
    top: argparse.ArgumentParser, args: argparse.Namespace
) -> argparse.ArgumentParser:
    """The (sub-)command parser ``args`` went through last: its usage is the one to show."""
    current = top
    while True:
        choices = [
            action for action in current._actions if isinstance(action, argparse._SubParsersAction)
        ]
        if not choices or getattr(args, choices[0].dest, None) is None:
            return current
        current = choices[0].choices[getattr(args, choices[0].dest)]


def parse(top: argparse.ArgumentParser, argv: Sequence[str] | None) -> argparse.Namespace:
    """Arguments parsed; an unknown one is an error of the command it followed (its usage, not
    the top level's)."""
    args, unknown = top.parse_known_args(argv)
    command = chosen_parser(top, args)
    if unknown:
        command.error(f"unrecognized arguments: {' '.join(unknown)}")
    action = getattr(args, "action", None)
    needed = getattr(args, "needs", {}).get(action)
    if needed is not None:
        # Optional positionals (or options) that this action requires: a usage error like any
        # other missing argument (status 2 with the command's usage), not the command's own
        # failure. ``needed`` is (dest or dests, what to say).
        dests = (needed[0],) if isinstance(needed[0], str) else needed[0]
        if not all(getattr(args, dest, None) for dest in dests):
            command.error(f"{action} needs {needed[1]}")
    # Optional positionals this action does not take: extra arguments, a usage error as
    # argparse makes any other (status 2), not the command's own failure (status 1).
    extra = [
        str(getattr(args, dest))
        for dest in getattr(args, "unused", {}).get(action, ())
        if getattr(args, dest, None) is not None
    ]
    if extra:
        command.error(f"unrecognized arguments: {' '.join(extra)}")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s %(message)s")
    args = parse(parser(), argv)
    return run_command(args.command, lambda: _until_the_reader_leaves(args))


def _until_the_reader_leaves(args: argparse.Namespace) -> int:
    """The command's exit status; a reader that went away (``| head -1``) is not an error."""
    try:
        return int(args.handler(args))
    except BrokenPipeError:
        # Python would complain again when it flushes stdout at exit: point it at /dev/null.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return ExitCode.OK


def run_command(command: str, run: Callable[[], int]) -> int:
    """``run()``'s exit status; any failure is one line on stderr and the exit status
    :func:`gateway.errors.answer_for` gives it (1, or 2 for a usage error), never a traceback."""
    try:
        return run()
    except KeyboardInterrupt:
        # Ctrl-C before ``serve`` handed its signals to gunicorn, or in another command: the
        # shell's convention (128 + SIGINT), without a traceback. A running ``serve`` stops
        # with 0 (gunicorn's arbiter handles its SIGINT: a quick shutdown).
        return 130
    except Exception as error:  # a bug too: the user still gets one line, not a traceback
        answer = answer_for(error)
    print(f"mns-gateway {command}: {answer.line}", file=sys.stderr)
    return answer.exit_code


if __name__ == "__main__":
    raise SystemExit(main())
