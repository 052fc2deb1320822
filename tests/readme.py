"""The README's commands, read from README.md and run as written.

Code blocks of the quickstart carry an invisible marker (an HTML comment on the line before the
fence) that says how a person uses them:

- ``<!-- quickstart: file NAME -->``: save the block as ``NAME``;
- ``<!-- quickstart: background URL -->``: a terminal of its own that keeps running (a server);
  the next block waits until ``URL`` answers, as a person waits for the server to say so;
- ``<!-- quickstart: run -->``: type it into a terminal; it must succeed.

Only two things differ from a person's terminal, so that runs never collide with each other or
with anything else on the machine: ports 8080 and 5000 become free ones (also through
``MNS_GATEWAY_PORT``), and ``HOME`` is a temporary directory (``mnscmd config`` writes
``~/.mnscredentials``). Used by ``tests/test_readme.py`` and by ``.ci/newcomer.py``.
"""

from __future__ import annotations

import http.client
import os
import re
import signal
import subprocess
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

from tests.conftest import free_port

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"

_BLOCK = re.compile(
    r"(?:<!-- quickstart: (?P<marker>[^>]*?) -->\n)?```(?P<lang>\w*)\n(?P<code>.*?)```", re.DOTALL
)
#: Lines that create or install into the virtualenv; tests with a ready venv leave them out.
INSTALL_LINE = re.compile(r"^(python3 -m venv |\.venv/bin/pip install )")


@dataclass(frozen=True)
class Block:
    lang: str
    code: str
    marker: str | None

    @property
    def kind(self) -> str:
        return (self.marker or "").split(" ", 1)[0]

    @property
    def argument(self) -> str:
        return (self.marker or "").partition(" ")[2]


def section(heading: str, text: str | None = None) -> str:
    """The text of the ``## heading`` section (up to the next ``## ``)."""
    text = README.read_text(encoding="utf-8") if text is None else text
    start = text.index(f"\n## {heading}\n")
    end = text.find("\n## ", start + 1)
    return text[start : end if end != -1 else len(text)]


def blocks(text: str) -> list[Block]:
    return [Block(m["lang"], m["code"], m["marker"]) for m in _BLOCK.finditer(text)]


def answers(url: str) -> bool:
    """Whether an HTTP server answers at ``url`` (any status)."""
    parts = urlsplit(url)
    connection = http.client.HTTPConnection(parts.hostname, parts.port, timeout=2)
    try:
        connection.request("GET", parts.path or "/")
        connection.getresponse().read()
        return True
    except OSError:
        return False
    finally:
        connection.close()


@dataclass
class Terminal:
    """One background block: its process group and everything it printed."""

    process: subprocess.Popen[bytes]
    output: Path

    def text(self) -> str:
        return self.output.read_text(errors="replace")

    def stop(self) -> None:
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait(timeout=10)


@dataclass
class Session:
    """A newcomer's shell: a working directory, ports, a HOME, and the terminals left open."""

    workdir: Path
    home: Path
    install: bool = True
    ports: Mapping[str, int] = field(
        default_factory=lambda: {"8080": free_port(), "5000": free_port()}
    )
    terminals: list[Terminal] = field(default_factory=list)
    transcript: list[tuple[str, float]] = field(default_factory=list)

    def env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("MNS_GATEWAY_")}
        env.pop("VIRTUAL_ENV", None)
        return {**env, "HOME": str(self.home), "MNS_GATEWAY_PORT": str(self.ports["8080"])}

    def localise(self, code: str) -> str:
        for written, port in self.ports.items():
            code = code.replace(written, str(port))
        if not self.install:
            code = "\n".join(line for line in code.splitlines() if not INSTALL_LINE.match(line))
        return code

    def play(self, block: Block, *, timeout: float = 300) -> None:
        """Do what a person does with ``block``; raise if it does not work."""
        code = self.localise(block.code)
        started = time.monotonic()
        if block.kind == "file":
            (self.workdir / block.argument).write_text(code)
        elif block.kind == "background":
            self._background(code, self.localise(block.argument), timeout)
        elif block.kind == "run":
            done = subprocess.run(
                ["bash", "-e", "-c", code],
                cwd=self.workdir,
                env=self.env(),
                capture_output=True,
                text=True,
                timeout=timeout,
                check=False,
            )
            if done.returncode != 0:
                raise AssertionError(f"{code!r} failed:\n{done.stdout}{done.stderr}")
        else:
            raise AssertionError(f"no quickstart marker on block {block.code[:60]!r}")
        self.transcript.append((code, time.monotonic() - started))

    def _background(self, code: str, ready_url: str, timeout: float) -> None:
        output = self.workdir.parent / f"terminal-{len(self.terminals) + 1}.log"
        with output.open("wb") as sink:
            process = subprocess.Popen(
                ["bash", "-e", "-c", code],
                cwd=self.workdir,
                env=self.env(),
                stdout=sink,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        terminal = Terminal(process, output)
        self.terminals.append(terminal)
        deadline = time.monotonic() + timeout
        while not answers(ready_url):
            if process.poll() is not None or time.monotonic() > deadline:
                raise AssertionError(f"{code!r} did not serve {ready_url}:\n{terminal.text()}")
            time.sleep(0.2)

    def wait_for_output(self, terminal: int, expected: str, timeout: float = 60) -> str:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            text = self.terminals[terminal].text()
            if expected in text:
                return text
            time.sleep(0.2)
        raise AssertionError(f"terminal {terminal + 1} never printed {expected!r}:\n{text}")

    def close(self) -> None:
        for terminal in reversed(self.terminals):
            terminal.stop()
        self.terminals.clear()
