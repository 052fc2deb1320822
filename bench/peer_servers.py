"""The systems bench/peers.py runs side by side, and the endpoint they push to.

- :func:`endpoint`: one local push endpoint, an asyncio process (``peer_servers.py --endpoint
  PORT``) that answers 204 at once, counts pushes, times their arrival against the publisher's
  clock carried in the body (MNS's XML push and SNS's JSON notification alike) and keeps the
  tokens of LocalStack's SubscriptionConfirmations; ``GET /count``, ``/stats``, ``/reset``.
- :func:`mns_push`, :func:`moto`, :func:`localstack`: each system started on 127.0.0.1 and
  stopped by its pid, behind one :class:`Target` (the MNS API, or SNS's Query API with a dummy
  SigV4 header, which the emulators do not check).
- :func:`install`: the peers' own virtualenvs, one each (LocalStack brings moto-ext, which
  installs as ``moto`` too), never the project's.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import http.client
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.parse
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from harness import ROOT, free_port, running_gateway

from tests.mns_http import RawClient

VENV = Path("/tmp/mns-peers-venv")
#: localstack-core 2026.3 breaks with cbor2 6 and pyOpenSSL 26, and needs twisted's TLS extra.
PACKAGES = {
    "moto": "moto[server]",
    "localstack": "localstack-core[runtime] cbor2<6 pyopenssl<26 cryptography<47 service_identity",
}
#: A dummy SigV4 header: moto and LocalStack read the service and region from it, check nothing.
AWS_AUTH = (
    "AWS4-HMAC-SHA256 Credential=test/20250101/us-east-1/sns/aws4_request, "
    "SignedHeaders=host, Signature=" + "0" * 64
)
MNS_MESSAGE = (
    '<?xml version="1.0" encoding="UTF-8"?><Message xmlns="http://mns.aliyuncs.com/doc/v1/">'
    "<MessageBody>{}</MessageBody></Message>"
)


# --- the push endpoint -----------------------------------------------------------------------

LENGTH = re.compile(rb"\r\ncontent-length:[ \t]*(\d+)", re.IGNORECASE)
CONFIRMATION = re.compile(rb"x-amz-sns-message-type:[ \t]*SubscriptionConfirmation", re.I)
PUBLISHED = re.compile(rb"pt=(\d+);")


class Tally:
    """What the endpoint saw since its last ``GET /reset``."""

    def __init__(self) -> None:
        self.count, self.untimed = 0, 0
        self.first: float | None = None
        self.last: float | None = None
        self.latencies_ms: list[float] = []
        self.confirmations: list[str] = []

    def record(self, head: bytes, body: bytes) -> None:
        if CONFIRMATION.search(head):
            self.confirmations.append(json.loads(body)["SubscribeURL"])
            return
        now = time.time()
        self.count += 1
        self.first, self.last = self.first or now, now
        if published := PUBLISHED.search(body):
            self.latencies_ms.append(now * 1000 - int(published.group(1)) / 1000)
        else:
            self.untimed += 1


class EndpointProtocol(asyncio.Protocol):
    tally = Tally()

    def __init__(self) -> None:
        self.buffer = b""

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport: asyncio.Transport = transport  # type: ignore[assignment]

    def data_received(self, data: bytes) -> None:
        self.buffer += data
        while (end := self.buffer.find(b"\r\n\r\n")) >= 0:
            length_header = LENGTH.search(self.buffer, 0, end + 2)
            stop = end + 4 + (int(length_header.group(1)) if length_header else 0)
            if len(self.buffer) < stop:
                return
            head, body = self.buffer[:end], self.buffer[end + 4 : stop]
            self.buffer = self.buffer[stop:]
            self.transport.write(self.answer(head, body))

    def answer(self, head: bytes, body: bytes) -> bytes:
        method, target, _ = head.split(b" ", 2)
        if method != b"GET":
            self.tally.record(head, body)
            return b"HTTP/1.1 204 No Content\r\nContent-Length: 0\r\n\r\n"
        if target == b"/reset":
            EndpointProtocol.tally = Tally()
        shown = vars(self.tally)
        if target == b"/count":
            shown = {key: shown[key] for key in ("count", "first", "last")}
        data = json.dumps(shown).encode()
        return b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s" % (len(data), data)


async def serve_endpoint(port: int) -> None:
    loop = asyncio.get_running_loop()
    server = await loop.create_server(EndpointProtocol, "127.0.0.1", port, backlog=1024)
    async with server:
        await server.serve_forever()


def get(port: int, path: str) -> dict:  # type: ignore[type-arg]
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    connection.request("GET", path)
    return json.loads(connection.getresponse().read())  # type: ignore[no-any-return]


@contextlib.contextmanager
def started(command: list[str], env: dict[str, str] | None = None) -> Iterator[int]:
    """A process in its own session, stopped by its pid: terminate, then kill after 20 s."""
    with tempfile.TemporaryFile() as log:
        process = subprocess.Popen(
            command, env=env, cwd=ROOT, start_new_session=True, stdout=log, stderr=log
        )
        try:
            yield process.pid
        except BaseException:
            log.seek(0)
            sys.stderr.write(log.read()[-3000:].decode(errors="replace"))
            raise
        finally:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, 15)
            try:
                process.wait(20)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, 9)
                process.wait(10)


@contextlib.contextmanager
def endpoint() -> Iterator[int]:
    port = free_port()
    with started([sys.executable, __file__, "--endpoint", str(port)]):
        ready_within(10, lambda: get(port, "/count") is not None, "the endpoint")
        yield port


def ready_within(timeout: float, probe: object, name: str) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with contextlib.suppress(OSError, SystemExit, http.client.HTTPException):
            if probe():  # type: ignore[operator]
                return
        time.sleep(0.2)
    raise SystemExit(f"{name} was not ready on 127.0.0.1 within {timeout:.0f} s")


# --- the systems --------------------------------------------------------------------------


@dataclass
class Target:
    """One system under test: an MNS client (mns-push) or the SNS Query API (the peers)."""

    name: str
    port: int
    pid: int
    mns: RawClient | None = None
    #: Whether an HTTP subscription must be confirmed before it is pushed to.
    confirms: bool = False

    def sns(self, params: dict[str, str]) -> str:
        body = urllib.parse.urlencode({**params, "Version": "2010-03-31"}).encode()
        connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
        connection.request("POST", "/", body, SNS_HEADERS)
        response = connection.getresponse()
        text = response.read().decode()
        if response.status != 200:
            raise SystemExit(f"{self.name}: {params['Action']} answered {response.status}: {text}")
        return text

    def create_topic(self, name: str) -> str:
        if self.mns is not None:
            assert self.mns.send("PUT", f"/topics/{name}", b"<Topic/>").status == 201
            return name
        text = self.sns({"Action": "CreateTopic", "Name": name})
        return re.search(r"<TopicArn>(.*?)</TopicArn>", text).group(1)  # type: ignore[union-attr]

    def subscribe(self, topic: str, index: int, url: str) -> None:
        if self.mns is not None:
            body = f"<Subscription><Endpoint>{url}</Endpoint></Subscription>".encode()
            uri = f"/topics/{topic}/subscriptions/s{index}"
            assert self.mns.send("PUT", uri, body).status == 201
        else:
            self.sns(
                {"Action": "Subscribe", "TopicArn": topic, "Protocol": "http", "Endpoint": url}
            )

    def publish_request(self, topic: str, text: str) -> tuple[str, bytes, dict[str, str]]:
        if self.mns is None:
            params = {"Action": "Publish", "TopicArn": topic, "Message": text}
            return "/", urllib.parse.urlencode(params).encode(), SNS_HEADERS
        uri, body = f"/topics/{topic}/messages", MNS_MESSAGE.format(text).encode()
        return uri, body, self.mns.headers_for("POST", uri, body)


SNS_HEADERS = {
    "Content-Type": "application/x-www-form-urlencoded; charset=utf-8",
    "Authorization": AWS_AUTH,
}


@contextlib.contextmanager
def mns_push(workers: int = 1) -> Iterator[Target]:
    """``mns-gateway serve`` with ``workers`` processes (``--workers``; 1 is its default and
    the one the comparison is made with): named ``mns-push`` at 1, else ``mns-push xN``."""
    name = "mns-push" if workers == 1 else f"mns-push x{workers}"
    with running_gateway("serve", workers) as server:
        yield Target(name, server.client.port, server.pid, server.client)


@contextlib.contextmanager
def moto(venv: Path, _server: str = "") -> Iterator[Target]:
    port = free_port()
    with started([str(venv / "bin" / "moto_server"), "-H", "127.0.0.1", "-p", str(port)]) as pid:
        target = Target("moto", port, pid)
        ready_within(60, lambda: target.sns({"Action": "ListTopics"}), "moto")
        yield target


#: LocalStack's twisted server (its default) listens on every interface whatever GATEWAY_LISTEN
#: says; this makes its TCP listeners default to 127.0.0.1 (a ``sitecustomize`` of its Python).
LOOPBACK_TWISTED = """
from twisted.internet import endpoints
_endpoint = endpoints.TCP4ServerEndpoint
endpoints.TCP4ServerEndpoint = lambda reactor, port, backlog=50, interface="": _endpoint(
    reactor, port, backlog, interface or "127.0.0.1")
"""


LOCALSTACK_ENV = (
    "SERVICES=sns EAGER_SERVICE_LOADING=1 DNS_ADDRESS=0 SKIP_SSL_CERT_DOWNLOAD=1 DISABLE_EVENTS=1"
)


@contextlib.contextmanager
def localstack(venv: Path, server: str) -> Iterator[Target]:
    port = free_port()
    with tempfile.TemporaryDirectory(prefix="mns-peers-localstack-") as tmp:
        env = dict(pair.split("=") for pair in LOCALSTACK_ENV.split())
        env.update(GATEWAY_LISTEN=f"127.0.0.1:{port}", GATEWAY_SERVER=server, PYTHONPATH=tmp)
        env["LOCALSTACK_VOLUME_DIR"] = tmp
        (Path(tmp) / "sitecustomize.py").write_text(LOOPBACK_TWISTED)
        command = [str(venv / "bin" / "python"), "-m", "localstack.runtime.main"]
        with started(command, {**os.environ, **env}) as pid:
            target = Target("LocalStack", port, pid, confirms=True)
            ready_within(120, lambda: target.sns({"Action": "ListTopics"}), "LocalStack")
            yield target


# --- the peers' virtualenvs -----------------------------------------------------------------


def newer_python() -> str:
    """LocalStack's code needs Python 3.12 or later (its metadata says 3.10)."""
    pyenv = sorted(Path.home().glob(".pyenv/versions/3.1[23].*/bin/python3"), reverse=True)
    found = [str(p) for p in pyenv] + [shutil.which(name) for name in ("python3.13", "python3.12")]
    if not any(found):
        raise SystemExit("LocalStack needs Python 3.12 or later: no python3.13/3.12 found")
    return next(path for path in found if path)


def install(venv: Path, peers: list[str]) -> None:
    """One venv per peer: LocalStack brings moto-ext, which installs as ``moto`` too."""
    for name in peers:
        python = newer_python() if name == "localstack" else sys.executable
        subprocess.run([python, "-m", "venv", str(venv / name)], check=True, timeout=300)
        pip = [str(venv / name / "bin" / "pip"), "install", "--disable-pip-version-check"]
        subprocess.run([*pip, *PACKAGES[name].split()], check=True, timeout=1800)


def systems(args: argparse.Namespace, stack: contextlib.ExitStack) -> list[Target]:
    peers = [name for name in args.peers.split(",") if name]
    if missing := [name for name in peers if not (args.peers_venv / name / "bin").exists()]:
        raise SystemExit(
            f"{' and '.join(missing)} not installed in {args.peers_venv}: install with"
            f" `.venv/bin/python bench/peers.py --install --peers-venv {args.peers_venv}`"
        )
    venvs = {name: args.peers_venv / name for name in peers}
    for name, package in (("moto", "moto"), ("localstack", "localstack-core")):
        if name in peers:
            script = f"from importlib.metadata import version; print(version('{package}'))"
            command = [str(venvs[name] / "bin" / "python"), "-c", script]
            print(package, subprocess.run(command, capture_output=True, text=True).stdout, end="")
    factories = {"moto": moto, "localstack": localstack}
    targets = [stack.enter_context(mns_push(workers)) for workers in args.mns_workers]
    for name in peers:
        targets.append(stack.enter_context(factories[name](venvs[name], args.localstack_server)))
    return targets


if __name__ == "__main__" and sys.argv[1:2] == ["--endpoint"]:
    asyncio.run(serve_endpoint(int(sys.argv[2])))
