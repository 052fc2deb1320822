"""The egress proxy, the private CA and the client certificate in the chart: values become the
MNS_GATEWAY_PUSH_* variables of every gateway container (API and worker), the CA bundle and
the client certificate are Secrets mounted as files, a proxy URL with credentials comes from the
credentials Secret; rendered by Helm's own engine."""

from __future__ import annotations

from typing import Any

import helm_python
import pytest

from tests.helm.chart import FULLNAME, Rendered, env_of, render

EGRESS = {
    "delivery": {
        "proxy": {
            "url": "http://proxy.corp.example:3128",
            "noProxy": [".corp.example", "10.0.0.0/8"],
        },
        "tls": {"caSecret": "corp-ca", "clientCertSecret": "gateway-client-cert"},
    }
}
#: With the worker in Deployments of its own, so both kinds of gateway container are seen.
WITH_WORKER = {
    "store": {"type": "postgresql", "postgresql": {"url": "postgresql://mns@db.example:5432/mns"}},
    "worker": {"enabled": True},
}


def _merged(*values: dict[str, Any]) -> dict[str, Any]:
    merged: dict[str, Any] = {}
    for value in values:
        for key, part in value.items():
            merged[key] = {**merged.get(key, {}), **part} if isinstance(part, dict) else part
    return merged


def _volumes(rendered: Rendered) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    found = []
    for _, spec in rendered.pod_specs():
        volumes = {volume["name"]: volume for volume in spec.get("volumes", [])}
        for container in spec["containers"]:
            if "command" not in container and "mns-gateway" in container["image"]:
                found.append((volumes, {m["name"]: m for m in container["volumeMounts"]}))
    return found


def test_the_settings_reach_every_gateway_container() -> None:
    rendered = render(_merged(WITH_WORKER, EGRESS))
    containers = list(rendered.gateway_containers())
    names = {workload["metadata"]["name"] for workload, _ in containers}
    assert {FULLNAME, f"{FULLNAME}-worker"} <= names

    for _, container in containers:
        env = env_of(container)
        assert env["MNS_GATEWAY_PUSH_PROXY"] == "http://proxy.corp.example:3128"
        assert env["MNS_GATEWAY_PUSH_NO_PROXY"] == ".corp.example,10.0.0.0/8"
        assert env["MNS_GATEWAY_PUSH_CA_FILE"] == "/etc/mns-gateway/push-ca/ca.crt"
        assert env["MNS_GATEWAY_PUSH_CLIENT_CERT"] == "/etc/mns-gateway/push-client/tls.crt"
        assert env["MNS_GATEWAY_PUSH_CLIENT_KEY"] == "/etc/mns-gateway/push-client/tls.key"


def test_the_ca_bundle_and_the_client_certificate_are_secrets_mounted_as_files() -> None:
    rendered = render(_merged(WITH_WORKER, EGRESS))

    for volumes, mounts in _volumes(rendered):
        assert volumes["push-ca"]["secret"]["secretName"] == "corp-ca"
        assert volumes["push-client"]["secret"]["secretName"] == "gateway-client-cert"
        assert mounts["push-ca"] == {
            "name": "push-ca",
            "mountPath": "/etc/mns-gateway/push-ca",
            "readOnly": True,
        }
        assert mounts["push-client"]["mountPath"] == "/etc/mns-gateway/push-client"
        assert mounts["push-client"]["readOnly"] is True


def test_a_ca_bundle_under_another_key() -> None:
    values = {"delivery": {"tls": {"caSecret": "corp-ca", "caKey": "bundle.pem"}}}
    for _, container in render(values).gateway_containers():
        env = env_of(container)
        assert env["MNS_GATEWAY_PUSH_CA_FILE"] == "/etc/mns-gateway/push-ca/bundle.pem"
        assert "MNS_GATEWAY_PUSH_CLIENT_CERT" not in env


def test_by_default_nothing_is_mounted_and_a_proxy_url_may_come_from_the_secret() -> None:
    rendered = render()

    for _, container in rendered.gateway_containers():
        env = env_of(container)
        assert env["MNS_GATEWAY_PUSH_PROXY"] == {
            "secretKeyRef": {"name": FULLNAME, "key": "push-proxy", "optional": True}
        }
        assert env["MNS_GATEWAY_PUSH_NO_PROXY"] == ""
        assert not {"MNS_GATEWAY_PUSH_CA_FILE", "MNS_GATEWAY_PUSH_CLIENT_KEY"} & env.keys()
    for volumes, mounts in _volumes(rendered):
        assert not {"push-ca", "push-client"} & (volumes.keys() | mounts.keys())


@pytest.mark.parametrize(
    "url", ["https://proxy:3128", "socks5://proxy:1080", "http://proxy:3128/path", "proxy:3128"]
)
def test_a_proxy_url_that_is_not_http_host_port_is_refused(url: str) -> None:
    with pytest.raises(helm_python.HelmError) as refused:
        render({"delivery": {"proxy": {"url": url}}})

    assert "delivery.proxy.url" in str(refused.value) or "url" in str(refused.value)
