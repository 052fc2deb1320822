"""A newcomer's path on a fresh clone, as CI runs it before the test suite.

1. The README's run command, as written: a new virtualenv with the base install only (no extras,
   no dev tools) and ``mns-gateway serve``. Installing a dev tool can no longer hide a missing
   dependency, as pytest once hid ``packaging``.
2. Through that gateway, with the key it generated (``mns-gateway credentials show``): a
   publish and its signed push to a local endpoint, a queue send, receive and delete. The
   driver is this (dev) interpreter with a raw client; the base virtualenv stays base.
3. The README's quickstart, as written, installs included: it ends with the README's receiving
   app printing a verified push.
4. docs/testing.md's promise, in the same virtualenv: the quickstart has installed mns-push with
   the SDK (the ``client`` extra), pytest is the one more package a user's suite needs, and the
   page's example test passes in a project of its own, with no checkout on its path.
5. The oldest versions ``pyproject.toml`` allows of every base dependency, in that virtualenv:
   ``mns-gateway serve`` and step 2 again. A fresh install gets the newest of each, which hid
   for a while that ``serve`` did not start on gunicorn before 26, and that malformed XML was a
   500 on defusedxml 0.7.0 (docs/deploy.md#dependency-versions).

Prints each step's wall time. Run from the checkout: ``.venv/bin/python .ci/newcomer.py``.
"""

from __future__ import annotations

import http.server
import json
import re
import subprocess
import sys
import tempfile
import threading
import time
import tomllib
from collections.abc import Callable
from pathlib import Path
from typing import ClassVar

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from defusedxml.ElementTree import fromstring

from gateway.protocol.xml import child_text
from tests.gateway.testing.test_plugin import examples
from tests.mns_http import RawClient
from tests.readme import ROOT, Block, Session, blocks, section

BASE_ONLY_ABSENT = ("mns", "pytest", "pyspark", "aiosmtpd")


def step(name: str, action: Callable[[], object]) -> None:
    started = time.monotonic()
    action()
    print(f"newcomer: {time.monotonic() - started:6.1f} s  {name}", flush=True)


def expect(condition: bool, what: str) -> None:
    if not condition:
        raise SystemExit(f"newcomer: FAILED: {what}")


class Recorder(http.server.BaseHTTPRequestHandler):
    """A push endpoint: answers 204 and keeps what arrived."""

    received: ClassVar[list[dict[str, str]]] = []

    def do_POST(self) -> None:  # http.server's naming
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        self.received.append(
            {**{k.lower(): v for k, v in self.headers.items()}, "body": body.decode()}
        )
        self.send_response(204)
        self.end_headers()

    def log_message(self, *args: object) -> None:
        return None


def check_base_install(session: Session) -> None:
    venv_python = session.workdir / ".venv" / "bin" / "python"
    probe = (
        f"import importlib.util as u; print([m for m in {BASE_ONLY_ABSENT!r} if u.find_spec(m)])"
    )
    extra = subprocess.run([venv_python, "-c", probe], capture_output=True, text=True, check=True)
    expect(
        extra.stdout.strip() == "[]",
        f"the base venv has more than the base install: {extra.stdout}",
    )
    report = subprocess.run(
        [session.workdir / ".venv/bin/mns-gateway", "report", "--logs", ".", "--out", "out"],
        capture_output=True,
        text=True,
        cwd=session.workdir,
        check=False,
    )
    expect(
        report.returncode == 2 and len(report.stderr.splitlines()) == 1, f"report: {report.stderr}"
    )


def drive(session: Session, name: str = "newcomer") -> None:
    shown = subprocess.run(
        [session.workdir / ".venv/bin/mns-gateway", "credentials", "show", "--json"],
        capture_output=True,
        text=True,
        cwd=session.workdir,
        env=session.env(),
        check=True,
    )
    (key,) = json.loads(shown.stdout)["AccessKeys"]
    client = RawClient(
        "127.0.0.1", session.ports["8080"], key["AccessKeyId"], key["AccessKeySecret"]
    )

    def call(method: str, uri: str, body: str = "", status: int = 0) -> bytes:
        response = client.send(method, uri, body.encode())
        expect(
            status in (0, response.status) and response.status < 300,
            f"{method} {uri}: {response.status} {response.body!r}",
        )
        return response.body

    Recorder.received.clear()
    endpoint = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Recorder)
    threading.Thread(target=endpoint.serve_forever, daemon=True).start()
    try:
        ns = 'xmlns="http://mns.aliyuncs.com/doc/v1/"'
        call("PUT", f"/topics/{name}", f"<Topic {ns}/>", 201)
        url = f"http://127.0.0.1:{endpoint.server_address[1]}/push"
        call(
            "PUT",
            f"/topics/{name}/subscriptions/s",
            f"<Subscription {ns}><Endpoint>{url}</Endpoint></Subscription>",
            201,
        )
        published = call(
            "POST",
            f"/topics/{name}/messages",
            f"<Message {ns}><MessageBody>hello</MessageBody></Message>",
            201,
        )
        message_id = child_text(fromstring(published), "MessageId")
        deadline = time.monotonic() + 30
        while not Recorder.received and time.monotonic() < deadline:
            time.sleep(0.1)
        expect(bool(Recorder.received), "no push arrived at the local endpoint")
        push = Recorder.received[0]
        expect(
            push["x-mns-message-id"] == message_id and push["authorization"] != "", f"push: {push}"
        )
        call("PUT", f"/queues/{name}", f"<Queue {ns}/>", 201)
        call(
            "POST",
            f"/queues/{name}/messages",
            f"<Message {ns}><MessageBody>job</MessageBody></Message>",
            201,
        )
        received = fromstring(call("GET", f"/queues/{name}/messages?waitseconds=3", status=200))
        expect(child_text(received, "MessageBody") == "job", "the queue message did not come back")
        call(
            "DELETE",
            f"/queues/{name}/messages?ReceiptHandle={child_text(received, 'ReceiptHandle')}",
            status=204,
        )
        malformed = client.send("POST", f"/queues/{name}/messages", b"<Message><MessageBody>x")
        expect(
            (malformed.status, malformed.error_code()) == (400, "MalformedXML"),
            f"malformed XML: {malformed.status} {malformed.body!r}",
        )
    finally:
        endpoint.shutdown()


def run_users_suite(session: Session) -> None:
    bin_dir = session.workdir / ".venv" / "bin"
    installed = subprocess.run(
        [bin_dir / "pip", "install", "-q", "pytest"], capture_output=True, text=True, timeout=300
    )
    expect(installed.returncode == 0, f"pip install pytest: {installed.stderr}")
    project = session.workdir.parent / "users-project"
    project.mkdir()
    (project / "test_orders.py").write_text(examples()["test_orders.py"])
    env = {k: v for k, v in session.env().items() if k != "PYTHONPATH"}
    done = subprocess.run(
        [bin_dir / "pytest", "-q", "-p", "no:cacheprovider"],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    expect(
        done.returncode == 0 and "3 passed" in done.stdout,
        f"docs/testing.md's example with mns-push, the SDK and pytest only:\n{done.stdout}"
        f"{done.stderr}",
    )


def oldest_allowed() -> list[str]:
    """Every base dependency of pyproject.toml pinned to its floor: ``name>=V`` as ``name==V``."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    pins = []
    for requirement in project["dependencies"]:
        found = re.fullmatch(r"([A-Za-z0-9_.-]+(?:\[[a-z,]+\])?)>=([\d.]+)", requirement)
        if found is None:
            raise SystemExit(f"newcomer: FAILED: {requirement!r} is not NAME>=VERSION")
        pins.append(f"{found.group(1)}=={found.group(2)}")
    return pins


def serve_on_oldest_allowed(session: Session, pins: list[str]) -> None:
    pip = session.workdir / ".venv" / "bin" / "pip"
    installed = subprocess.run(
        [pip, "install", "-q", *pins], capture_output=True, text=True, timeout=300
    )
    expect(installed.returncode == 0, f"pip install {' '.join(pins)}: {installed.stderr}")
    serve = Block("sh", ".venv/bin/mns-gateway serve", "background http://127.0.0.1:8080/healthz")
    session.play(serve)
    drive(session, name="oldest-allowed")
    session.close()


def main() -> int:
    with tempfile.TemporaryDirectory(prefix="newcomer-") as temp:
        workdir, home = Path(temp) / "mns-push", Path(temp) / "home"
        home.mkdir()
        subprocess.run(["git", "clone", "-q", str(ROOT), str(workdir)], check=True, timeout=120)
        session = Session(workdir, home)
        try:
            (run,) = blocks(section("Run the gateway", (workdir / "README.md").read_text()))
            run_command = Block(run.lang, run.code, "background http://127.0.0.1:8080/healthz")
            step("README run command: venv, base install, serve", lambda: session.play(run_command))
            step(
                "base venv has only the base install; report says what it needs",
                lambda: check_base_install(session),
            )
            step("publish, signed push, queue send/receive/delete", lambda: drive(session))
            session.close()
            quickstart = blocks(
                section(
                    "Quickstart: from nothing to a verified push",
                    (workdir / "README.md").read_text(),
                )
            )
            for block in quickstart:
                step(
                    f"quickstart: {block.kind} {block.code.splitlines()[0][:60]}",
                    lambda b=block: session.play(b),
                )
            step(
                "the receiving app prints the verified push",
                lambda: session.wait_for_output(1, "from orders/billing: order 42 paid"),
            )
            step(
                "a user's suite: docs/testing.md's example, with mns-push, the SDK and pytest",
                lambda: run_users_suite(session),
            )
            session.close()
            pins = oldest_allowed()
            step(
                "the oldest dependencies allowed: serve, publish, push, queue, malformed XML",
                lambda: serve_on_oldest_allowed(session, pins),
            )
        finally:
            session.close()
    print("newcomer: passed", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
