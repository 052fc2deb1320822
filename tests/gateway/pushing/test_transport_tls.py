"""https pushes with a private CA and a client certificate, against real TLS endpoints on
127.0.0.1 made with a CA the test makes; the files rotated on change and on reload (SIGHUP)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from gateway.config.settings import Settings
from gateway.errors.commands import SettingsError
from gateway.pushing.push_network import push_network
from gateway.pushing.tls import PushTls, TlsFiles
from gateway.pushing.transport import PushOutcome, PushTransport
from gateway.testing import PushRecorder
from tests.support.egress import CertificateAuthority, Issued

from .conftest import WAIT_SECONDS

HEADERS = [("Content-Type", "text/plain;charset=utf-8")]


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture()
def ca(tmp_path: Path) -> CertificateAuthority:
    return CertificateAuthority(tmp_path / "private", "Private CA")


@pytest.fixture()
def clients_ca(tmp_path: Path) -> CertificateAuthority:
    return CertificateAuthority(tmp_path / "clients", "Clients CA")


def _serve(context: object) -> Iterator[PushRecorder]:
    recorder = PushRecorder.raw(max_hold=WAIT_SECONDS).start(tls=context)  # type: ignore[arg-type]
    try:
        yield recorder
    finally:
        recorder.stop()


@pytest.fixture()
def private_endpoint(ca: CertificateAuthority) -> Iterator[PushRecorder]:
    yield from _serve(ca.server_context())


@pytest.fixture()
def mtls_endpoint(
    ca: CertificateAuthority, clients_ca: CertificateAuthority
) -> Iterator[PushRecorder]:
    yield from _serve(ca.server_context(require_client_from=clients_ca))


def _transport(tls: PushTls) -> PushTransport:
    return PushTransport(tls=tls, default_timeout=WAIT_SECONDS)


def test_an_endpoint_of_the_private_ca_fails_without_it_as_today(
    private_endpoint: PushRecorder,
) -> None:
    with _transport(PushTls()) as transport:
        result = transport.send(private_endpoint.url, HEADERS, b"x")

    assert result.outcome is PushOutcome.CONNECTION_ERROR
    assert result.error is not None and "CERTIFICATE_VERIFY_FAILED" in result.error


def test_the_private_ca_is_trusted_beside_the_system_cas(
    ca: CertificateAuthority, private_endpoint: PushRecorder
) -> None:
    tls = PushTls(TlsFiles(ca_file=ca.cert_file))
    with _transport(tls) as transport:
        result = transport.send(private_endpoint.url + "/hook", HEADERS, b"x")

    assert result.ok, result.error
    assert [push.path for push in private_endpoint.received] == ["/hook"]
    assert tls.current()[1].cert_store_stats()["x509_ca"] > 1  # the system's are there too


def test_a_certificate_of_any_other_ca_still_fails(
    tmp_path: Path, ca: CertificateAuthority
) -> None:
    other = CertificateAuthority(tmp_path / "other", "Other CA")
    for recorder in _serve(other.server_context()):
        with _transport(PushTls(TlsFiles(ca_file=ca.cert_file))) as transport:
            result = transport.send(recorder.url, HEADERS, b"x")

    assert result.outcome is PushOutcome.CONNECTION_ERROR
    assert result.error is not None and "CERTIFICATE_VERIFY_FAILED" in result.error


def test_an_endpoint_asking_for_a_client_certificate_refuses_a_push_without_one(
    ca: CertificateAuthority, mtls_endpoint: PushRecorder
) -> None:
    with _transport(PushTls(TlsFiles(ca_file=ca.cert_file))) as transport:
        result = transport.send(mtls_endpoint.url, HEADERS, b"x")

    assert not result.ok
    assert mtls_endpoint.received == []


def test_the_client_certificate_is_presented_to_an_endpoint_asking_for_one(
    ca: CertificateAuthority, clients_ca: CertificateAuthority, mtls_endpoint: PushRecorder
) -> None:
    client = clients_ca.issue("client", client=True)
    tls = PushTls(TlsFiles(ca.cert_file, client.cert, client.key))
    with _transport(tls) as transport:
        result = transport.send(mtls_endpoint.url, HEADERS, b"x")

    assert result.ok, result.error
    assert len(mtls_endpoint.received) == 1


def _rotate(target: Issued, new: Issued, *, keep_mtime: bool = False) -> None:
    """Write ``new``'s files over ``target``'s in place (same inodes); with ``keep_mtime`` the
    files look unchanged to a stat, so only a reload reads them."""
    for destination, source in ((target.cert, new.cert), (target.key, new.key)):
        before = destination.stat()
        destination.write_bytes(source.read_bytes())
        if keep_mtime:
            os.utime(destination, ns=(before.st_atime_ns, before.st_mtime_ns))
        else:
            os.utime(destination, ns=(before.st_atime_ns, before.st_mtime_ns + 1_000_000_000))


def test_a_rotated_client_certificate_is_used_once_its_files_change(
    ca: CertificateAuthority,
    clients_ca: CertificateAuthority,
    tmp_path: Path,
    mtls_endpoint: PushRecorder,
) -> None:
    stranger = CertificateAuthority(tmp_path / "stranger", "Stranger CA")
    configured = stranger.issue("configured", client=True)  # not what the endpoint trusts
    clock = Clock()
    tls = PushTls(TlsFiles(ca.cert_file, configured.cert, configured.key), clock=clock)
    with _transport(tls) as transport:
        assert not transport.send(mtls_endpoint.url, HEADERS, b"x").ok

        _rotate(configured, clients_ca.issue("rotated", client=True))
        assert not transport.send(mtls_endpoint.url, HEADERS, b"x").ok  # not looked at yet
        clock.now += 1.0
        result = transport.send(mtls_endpoint.url, HEADERS, b"x")

    assert result.ok, result.error
    assert len(mtls_endpoint.received) == 1


def test_reload_reads_the_files_even_when_they_look_unchanged(
    ca: CertificateAuthority,
    clients_ca: CertificateAuthority,
    tmp_path: Path,
    mtls_endpoint: PushRecorder,
) -> None:
    stranger = CertificateAuthority(tmp_path / "stranger", "Stranger CA")
    configured = stranger.issue("configured", client=True)
    clock = Clock()
    tls = PushTls(TlsFiles(ca.cert_file, configured.cert, configured.key), clock=clock)
    with _transport(tls) as transport:
        _rotate(configured, clients_ca.issue("rotated", client=True), keep_mtime=True)
        clock.now += 60.0
        assert not transport.send(mtls_endpoint.url, HEADERS, b"x").ok  # the stat saw nothing

        tls.reload()  # what SIGHUP does
        result = transport.send(mtls_endpoint.url, HEADERS, b"x")

    assert result.ok, result.error


def test_connections_opened_with_the_old_certificate_are_not_reused_after_a_reload(
    ca: CertificateAuthority, clients_ca: CertificateAuthority, mtls_endpoint: PushRecorder
) -> None:
    configured = clients_ca.issue("configured", client=True)
    tls = PushTls(TlsFiles(ca.cert_file, configured.cert, configured.key), clock=Clock())
    with _transport(tls) as transport:
        assert transport.send(mtls_endpoint.url, HEADERS, b"x").ok
        assert transport.send(mtls_endpoint.url, HEADERS, b"x").ok
        assert mtls_endpoint.connections == 1  # kept alive

        tls.reload()
        assert transport.send(mtls_endpoint.url, HEADERS, b"x").ok

    assert mtls_endpoint.connections == 2
    mtls_endpoint.wait_closed(1)  # the old one was closed, not left idle


def test_files_that_cannot_be_loaded_at_a_rotation_leave_the_old_ones_in_use(
    ca: CertificateAuthority,
    clients_ca: CertificateAuthority,
    mtls_endpoint: PushRecorder,
    caplog: pytest.LogCaptureFixture,
) -> None:
    configured = clients_ca.issue("configured", client=True)
    clock = Clock()
    tls = PushTls(TlsFiles(ca.cert_file, configured.cert, configured.key), clock=clock)
    with _transport(tls) as transport:
        configured.key.write_text("half written")
        clock.now += 1.0
        result = transport.send(mtls_endpoint.url, HEADERS, b"x")

    assert result.ok, result.error
    assert tls.current()[0] == 0
    assert "MNS_GATEWAY_PUSH_CLIENT_KEY" in caplog.text and "previous ones stay" in caplog.text


# the settings, checked at start -------------------------------------------------------------
def _settings(**changes: object) -> Settings:
    return Settings().with_overrides(**changes)


def test_nothing_set_is_the_system_cas_and_no_proxy() -> None:
    network = push_network(Settings())

    assert network.proxy is None
    assert network.tls.current()[0] == 0


@pytest.mark.parametrize(
    ("changes", "says"),
    [
        ({"push_proxy": "https://user:pw@proxy:3128"}, "MNS_GATEWAY_PUSH_PROXY is not valid: "),
        ({"push_proxy": "http://proxy:99999"}, "MNS_GATEWAY_PUSH_PROXY is not valid: "),
        ({"push_no_proxy": ("ok.example", "10.0.0.0/33")}, "MNS_GATEWAY_PUSH_NO_PROXY is not"),
        ({"push_ca_file": Path("/nonexistent/ca.pem")}, "MNS_GATEWAY_PUSH_CA_FILE="),
        ({"push_client_cert": Path("/x.pem")}, "MNS_GATEWAY_PUSH_CLIENT_CERT is set but"),
        ({"push_client_key": Path("/x.key")}, "MNS_GATEWAY_PUSH_CLIENT_KEY is set but"),
    ],
)
def test_an_unusable_setting_is_named(changes: dict[str, object], says: str) -> None:
    with pytest.raises(SettingsError) as raised:
        push_network(_settings(**changes))

    assert str(raised.value).startswith(says)
    assert "\n" not in str(raised.value)
    assert "pw" not in str(raised.value)


def test_unreadable_or_unparsable_files_name_their_setting(
    tmp_path: Path, clients_ca: CertificateAuthority
) -> None:
    client = clients_ca.issue("client", client=True)
    other = clients_ca.issue("other", client=True)
    garbage = tmp_path / "garbage.pem"
    garbage.write_text("not PEM at all")
    cases = [
        ({"push_ca_file": garbage}, "MNS_GATEWAY_PUSH_CA_FILE="),
        (
            {"push_client_cert": garbage, "push_client_key": client.key},
            "MNS_GATEWAY_PUSH_CLIENT_CERT=",
        ),
        (
            {"push_client_cert": client.cert, "push_client_key": garbage},
            "MNS_GATEWAY_PUSH_CLIENT_KEY=",
        ),
        (
            {"push_client_cert": client.cert, "push_client_key": tmp_path / "missing.key"},
            "MNS_GATEWAY_PUSH_CLIENT_KEY=",
        ),
        (
            {"push_client_cert": client.cert, "push_client_key": other.key},
            "MNS_GATEWAY_PUSH_CLIENT_KEY=",
        ),
    ]
    for changes, says in cases:
        with pytest.raises(SettingsError) as raised:
            push_network(_settings(**changes))
        assert str(raised.value).startswith(says), (changes, str(raised.value))
        assert "\n" not in str(raised.value)
