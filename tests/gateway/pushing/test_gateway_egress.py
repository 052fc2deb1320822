"""A real ``mns-gateway serve`` (the embedded gateway) pushing through tinyproxy to https
endpoints of a private CA that ask for a client certificate; the proxy's refusal in the
operation log; the client certificate rotated by SIGHUP; a bad setting refused at start."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from mns.mns_exception import MNSClientNetworkException
from mns.subscription import SubscriptionMeta
from mns.topic import TopicMessage, TopicMeta

from gateway.testing import EmbeddedGateway, PushRecorder
from gateway.testing.process import free_port
from tests.conftest import start_gateway
from tests.support.egress import CertificateAuthority, Issued, TinyProxy, tinyproxy
from tests.support.oplog import wait_for_records

from .conftest import WAIT_SECONDS

PUSH_WAIT = 20.0


@pytest.fixture(scope="module")
def authorities(tmp_path_factory: pytest.TempPathFactory) -> tuple[CertificateAuthority, ...]:
    root = tmp_path_factory.mktemp("authorities")
    return (
        CertificateAuthority(root / "private", "Private CA"),
        CertificateAuthority(root / "clients", "Clients CA"),
        CertificateAuthority(root / "stranger", "Stranger CA"),
    )


@pytest.fixture(scope="module")
def mtls_endpoint(authorities: tuple[CertificateAuthority, ...]) -> Iterator[PushRecorder]:
    private, clients, _ = authorities
    context = private.server_context(require_client_from=clients)
    recorder = PushRecorder.raw(max_hold=WAIT_SECONDS).start(tls=context)
    yield recorder
    recorder.stop()


@pytest.fixture(scope="module")
def refused_endpoint(authorities: tuple[CertificateAuthority, ...]) -> Iterator[PushRecorder]:
    """An https endpoint on a port the proxy does not CONNECT to."""
    recorder = PushRecorder.raw(max_hold=WAIT_SECONDS).start(tls=authorities[0].server_context())
    yield recorder
    recorder.stop()


@pytest.fixture(scope="module")
def proxy(
    tmp_path_factory: pytest.TempPathFactory, mtls_endpoint: PushRecorder
) -> Iterator[TinyProxy]:
    port = int(mtls_endpoint.url.rsplit(":", 1)[1])
    directory = tmp_path_factory.mktemp("proxy")
    with tinyproxy(directory, connect_ports=[port], basic_auth=("gateway", "pa55")) as running:
        yield running


@pytest.fixture(scope="module")
def client_files(
    tmp_path_factory: pytest.TempPathFactory, authorities: tuple[CertificateAuthority, ...]
) -> Issued:
    """The gateway's client certificate files, issued by the CA the endpoint trusts."""
    issued = authorities[1].issue("gateway-client", client=True)
    directory = tmp_path_factory.mktemp("client")
    files = Issued(directory / "client.pem", directory / "client.key")
    files.cert.write_bytes(issued.cert.read_bytes())
    files.key.write_bytes(issued.key.read_bytes())
    return files


@pytest.fixture(scope="module")
def gateway(
    tmp_path_factory: pytest.TempPathFactory,
    authorities: tuple[CertificateAuthority, ...],
    proxy: TinyProxy,
    client_files: Issued,
) -> Iterator[EmbeddedGateway]:
    settings = {
        "MNS_GATEWAY_PUSH_PROXY": proxy.url_with("gateway", "pa55"),
        "MNS_GATEWAY_PUSH_CA_FILE": str(authorities[0].cert_file),
        "MNS_GATEWAY_PUSH_CLIENT_CERT": str(client_files.cert),
        "MNS_GATEWAY_PUSH_CLIENT_KEY": str(client_files.key),
        "MNS_GATEWAY_LOG_DIR": str(tmp_path_factory.mktemp("oplogs")),
    }
    with EmbeddedGateway(settings=settings) as running:
        yield running


def _subscribe(gateway: EmbeddedGateway, topic: str, endpoint: str) -> Any:
    account = gateway.account()
    account.get_topic(topic).create(TopicMeta(logging_enabled=True))
    account.get_topic(topic).get_subscription("s").subscribe(SubscriptionMeta(endpoint))
    return account.get_topic(topic)


def _reload(gateway: EmbeddedGateway) -> None:
    """SIGHUP to serve, and wait until gunicorn's old worker is gone (the new one reads the
    files; a message the old one claimed on its way out would wait for its lease)."""
    exited = gateway.log_file.read_text().count("Worker exiting")
    gateway.process.process.send_signal(signal.SIGHUP)
    deadline = time.monotonic() + PUSH_WAIT
    while gateway.log_file.read_text().count("Worker exiting") <= exited:
        assert time.monotonic() < deadline, gateway.log_tail()
        time.sleep(0.05)


def _publish_after_reload(gateway: EmbeddedGateway, topic: str, message: str) -> None:
    """Publish once the reloaded gateway answers: SIGHUP made gunicorn replace its workers, and
    the connections of the old ones close."""
    deadline = time.monotonic() + PUSH_WAIT
    while True:
        try:
            gateway.account().get_topic(topic).publish_message(TopicMessage(message))
            return
        except MNSClientNetworkException:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)


def _wait_for(recorder: PushRecorder, body: str) -> None:
    deadline = time.monotonic() + PUSH_WAIT
    while time.monotonic() < deadline:
        if any(body.encode() in push.body for push in recorder.received):
            return
        time.sleep(0.05)
    raise AssertionError(f"no push of {body!r} within {PUSH_WAIT:g} s")


def _push_errors(gateway: EmbeddedGateway, topic: str) -> list[str]:
    """The operation log's push errors for ``topic``, once there is one (bounded)."""
    logs = Path(gateway.settings["MNS_GATEWAY_LOG_DIR"])
    found = wait_for_records(
        logs, lambda r: r.get("TopicName") == topic and bool(r.get("Error")), 1, PUSH_WAIT
    )
    return [str(r["Error"]) for r in found]


def test_a_push_goes_through_the_proxy_to_an_endpoint_asking_for_a_client_certificate(
    gateway: EmbeddedGateway, mtls_endpoint: PushRecorder, proxy: TinyProxy
) -> None:
    topic = _subscribe(gateway, "egress-mtls", mtls_endpoint.url + "/hook")

    topic.publish_message(TopicMessage("through the proxy"))

    _wait_for(mtls_endpoint, "through the proxy")
    port = mtls_endpoint.url.rsplit(":", 1)[1]
    assert f"CONNECT 127.0.0.1:{port} HTTP/1.1" in proxy.requests()


def test_the_proxy_refusing_a_push_is_in_the_operation_log_with_its_answer(
    gateway: EmbeddedGateway, refused_endpoint: PushRecorder, proxy: TinyProxy
) -> None:
    topic = _subscribe(gateway, "egress-refused", refused_endpoint.url + "/hook")

    topic.publish_message(TopicMessage("refused"))

    errors = _push_errors(gateway, "egress-refused")
    port = refused_endpoint.url.rsplit(":", 1)[1]
    assert errors, "no push error in the operation log"
    assert errors[0] == (
        f"ProxyError: the proxy {proxy.url} answered CONNECT 127.0.0.1:{port} "
        "with 403 Access violation"
    )
    assert refused_endpoint.received == []


def test_sighup_reads_a_rotated_client_certificate_without_a_restart(
    gateway: EmbeddedGateway,
    authorities: tuple[CertificateAuthority, ...],
    mtls_endpoint: PushRecorder,
    client_files: Issued,
) -> None:
    """The files are rewritten in place with their mtime kept, so only SIGHUP can make the
    gateway read them: serve's gunicorn starts new workers, which load them."""
    stranger = authorities[2].issue("stranger-client", client=True)
    clients = authorities[1].issue("rotated-client", client=True)
    _subscribe(gateway, "egress-rotation", mtls_endpoint.url + "/hook")
    _rewrite_keeping_mtime(client_files, stranger)
    _reload(gateway)
    _publish_after_reload(gateway, "egress-rotation", "with the stranger's certificate")
    assert _push_errors(gateway, "egress-rotation"), gateway.log_tail()

    _rewrite_keeping_mtime(client_files, clients)
    _reload(gateway)
    _publish_after_reload(gateway, "egress-rotation", "with the rotated certificate")

    _wait_for(mtls_endpoint, "with the rotated certificate")
    assert gateway.process.process.poll() is None  # not restarted: the same arbiter


def _rewrite_keeping_mtime(target: Issued, source: Issued) -> None:
    for destination, origin in ((target.cert, source.cert), (target.key, source.key)):
        before = destination.stat()
        destination.write_bytes(origin.read_bytes())
        os.utime(destination, ns=(before.st_atime_ns, before.st_mtime_ns))


@pytest.mark.parametrize(
    ("variable", "value", "says"),
    [
        ("MNS_GATEWAY_PUSH_PROXY", "socks5://proxy:1080", "MNS_GATEWAY_PUSH_PROXY is not valid"),
        ("MNS_GATEWAY_PUSH_CA_FILE", "/nonexistent/ca.pem", "MNS_GATEWAY_PUSH_CA_FILE="),
        ("MNS_GATEWAY_PUSH_CLIENT_CERT", "/etc/hostname", "MNS_GATEWAY_PUSH_CLIENT_CERT is set"),
    ],
)
@pytest.mark.parametrize("command", ["serve", "worker"])
def test_a_bad_setting_stops_serve_and_worker_at_start_in_one_line(
    tmp_path: Path, command: str, variable: str, value: str, says: str
) -> None:
    env = {
        "PATH": "/usr/bin:/bin",
        "MNS_GATEWAY_DATA_DIR": str(tmp_path / "data"),
        "MNS_GATEWAY_WORKER_CLASS": "gthread",
        variable: value,
    }
    port = ["--port", str(free_port())] if command == "serve" else []
    done = subprocess.run(
        [sys.executable, "-m", "gateway.cli", command, *port],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )

    assert done.returncode == 1, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and says in lines[0], done.stderr


@pytest.mark.parametrize("worker_class", ["gevent", "gthread"])
def test_sighup_to_a_worker_process_reads_the_rotated_client_certificate(
    tmp_path: Path,
    authorities: tuple[CertificateAuthority, ...],
    mtls_endpoint: PushRecorder,
    worker_class: str,
) -> None:
    """``mns-gateway worker`` started with a certificate the endpoint refuses; the files are
    rewritten in place with their mtime kept, and only SIGHUP makes the worker read them."""
    private, clients, stranger = authorities
    configured = stranger.issue(f"worker-{worker_class}", client=True)
    api = start_gateway(tmp_path / "data", {"MNS_GATEWAY_DELIVERY_THREADS": "0"})
    worker = None
    try:
        account = api.account()
        account.get_topic("worker-rotation").create(TopicMeta())
        subscription = account.get_topic("worker-rotation").get_subscription("s")
        subscription.subscribe(SubscriptionMeta(mtls_endpoint.url + "/worker"))
        env = {
            **api.env,
            "MNS_GATEWAY_DATA_DIR": str(api.data_dir),
            "MNS_GATEWAY_DELIVERY_THREADS": "2",
            "MNS_GATEWAY_WORKER_CLASS": worker_class,
            "MNS_GATEWAY_PUSH_CA_FILE": str(private.cert_file),
            "MNS_GATEWAY_PUSH_CLIENT_CERT": str(configured.cert),
            "MNS_GATEWAY_PUSH_CLIENT_KEY": str(configured.key),
        }
        worker = subprocess.Popen(
            [sys.executable, "-m", "gateway.cli", "worker"],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        assert worker.stdout is not None
        assert worker.stdout.readline().startswith("mns-gateway worker: pushing")

        _rewrite_keeping_mtime(configured, clients.issue(f"good-{worker_class}", client=True))
        worker.send_signal(signal.SIGHUP)
        account.get_topic("worker-rotation").publish_message(TopicMessage(f"hup {worker_class}"))

        _wait_for(mtls_endpoint, f"hup {worker_class}")
        assert worker.poll() is None
    finally:
        if worker is not None:
            worker.terminate()
            worker.wait(30)
        api.stop()
