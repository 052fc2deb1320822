"""Credentials, the signing key and the database URL: from Secrets every replica mounts, made
by the chart when not given, never in a pod spec, and stable across upgrades."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from gateway.config.settings import parse_queue_bridges
from tests.helm.chart import (
    EXTERNAL_DATABASE_URL,
    FULLNAME,
    MATRIX,
    Rendered,
    env_of,
    render,
    render_case,
)

CREDENTIAL_VARIABLES = {
    "MNS_GATEWAY_ACCESS_KEY_ID": "access-key-id",
    "MNS_GATEWAY_ACCESS_KEY_SECRET": "access-key-secret",
    "MNS_GATEWAY_ACCESS_KEYS": "access-keys",
    "MNS_GATEWAY_SMTP_URL": "smtp-url",
    "MNS_GATEWAY_QUEUE_BRIDGES": "queue-bridges",
}


def secret_data(rendered: Rendered, name: str) -> dict[str, str]:
    data = rendered.get("Secret", name)["data"]
    return {key: base64.b64decode(value).decode() for key, value in data.items()}


def signing_mounts(rendered: Rendered) -> list[tuple[str, dict[str, Any] | None]]:
    """(workload name, signing-key volume) of every gateway pod."""
    found = []
    for workload, spec in rendered.pod_specs():
        if any("mns-gateway" in c["image"] for c in spec["containers"] if "command" not in c):
            volumes = {v["name"]: v for v in spec["volumes"]}
            found.append((workload["metadata"]["name"], volumes.get("signing-key")))
    return found


@pytest.mark.parametrize("case", MATRIX)
def test_every_gateway_container_reads_the_credentials_from_one_secret(case: str) -> None:
    rendered = render_case(case)
    secret = MATRIX[case].get("credentials", {}).get("existingSecret") or FULLNAME
    if case == "production":
        secret = "mns-credentials"
    for _, container in rendered.gateway_containers():
        env = env_of(container)
        for variable, key in CREDENTIAL_VARIABLES.items():
            assert env[variable] == {"secretKeyRef": {"name": secret, "key": key, "optional": True}}


@pytest.mark.parametrize("case", MATRIX)
def test_every_replica_mounts_the_same_signing_key(case: str) -> None:
    rendered = render_case(case)
    mounts = signing_mounts(rendered)
    assert mounts
    if case == "sqlite-ephemeral":  # signingKey.generate=false: the gateway keeps its own
        assert all(volume is None for _, volume in mounts)
        return
    names = {volume["secret"]["secretName"] for _, volume in mounts if volume}
    assert len(names) == 1 and all(volume for _, volume in mounts), mounts
    for _, container in rendered.gateway_containers():
        env = env_of(container)
        assert env["MNS_GATEWAY_SIGNING_KEY_FILE"] == "/etc/mns-gateway/signing/tls.key"
        assert env["MNS_GATEWAY_SIGNING_CERT_FILE"] == "/etc/mns-gateway/signing/tls.crt"
        mount = {m["name"]: m for m in container["volumeMounts"]}["signing-key"]
        assert mount == {
            "name": "signing-key",
            "mountPath": "/etc/mns-gateway/signing",
            "readOnly": True,
        }


def test_the_chart_makes_a_signing_key_the_gateway_can_use() -> None:
    secret = render_case("postgresql-external").get("Secret", f"{FULLNAME}-signing-key")
    assert secret["type"] == "kubernetes.io/tls"
    assert secret["metadata"]["annotations"]["helm.sh/resource-policy"] == "keep"
    key = serialization.load_pem_private_key(base64.b64decode(secret["data"]["tls.key"]), None)
    certificate = x509.load_pem_x509_certificate(base64.b64decode(secret["data"]["tls.crt"]))
    assert isinstance(key, rsa.RSAPrivateKey) and key.key_size == 2048
    assert certificate.public_key() == key.public_key()


def test_the_chart_generates_an_access_key_once_and_keeps_it() -> None:
    rendered = render_case("sqlite")
    secret = rendered.get("Secret")
    assert secret["metadata"]["annotations"]["helm.sh/resource-policy"] == "keep"
    data = secret_data(rendered, FULLNAME)
    assert data["access-key-id"].startswith("mns") and len(data["access-key-secret"]) == 30
    assert f"get secret {FULLNAME}" in rendered.notes


def test_credentials_given_as_values_land_in_the_secret_only() -> None:
    rendered = render_case("sqlite-worker-ingress")
    data = secret_data(rendered, FULLNAME)
    assert (data["access-key-id"], data["access-key-secret"]) == ("app", "app-secret")
    assert data["access-keys"] == "ci:ci-secret"
    assert data["smtp-url"] == "smtp://relay.example.com:25"
    assert parse_queue_bridges(data["queue-bridges"])["cn-hangzhou:1234567890"]["url"]
    assert "annotations" not in rendered.get("Secret")["metadata"]  # nothing generated to keep
    pods = json.dumps([m for m in rendered.manifests if m["kind"] != "Secret"])
    assert "app-secret" not in pods and "bridge-secret" not in pods


def test_existing_secrets_mean_the_chart_makes_none() -> None:
    for case in ("sqlite-existing-secrets", "postgresql-existing-secrets-workers", "production"):
        assert render_case(case).of_kind("Secret") == [], case


def test_nothing_generated_when_the_gateway_keeps_its_own_keys() -> None:
    rendered = render_case("sqlite-ephemeral")
    assert rendered.get("Secret")["data"] is None  # no values: an empty Secret, keys optional
    assert f"{FULLNAME}-signing-key" not in rendered.names("Secret")
    assert "-- mns-gateway credentials show" in rendered.notes


def test_an_external_database_url_is_kept_in_a_secret_not_the_pod_spec() -> None:
    rendered = render_case("postgresql-external")
    assert secret_data(rendered, f"{FULLNAME}-database") == {"database-url": EXTERNAL_DATABASE_URL}
    for _, container in rendered.gateway_containers():
        assert env_of(container)["MNS_GATEWAY_DATABASE_URL"] == {
            "secretKeyRef": {"name": f"{FULLNAME}-database", "key": "database-url"}
        }
    pods = json.dumps([m for m in rendered.manifests if m["kind"] != "Secret"])
    assert "s3cret" not in pods


def test_an_existing_database_secret_is_read_under_its_key() -> None:
    rendered = render_case("postgresql-existing-secrets-workers")
    for _, container in rendered.gateway_containers():
        assert env_of(container)["MNS_GATEWAY_DATABASE_URL"] == {
            "secretKeyRef": {"name": "mns-database", "key": "url"}
        }


def test_the_bundled_database_url_carries_its_generated_password() -> None:
    rendered = render_case("postgresql-bundled")
    name = f"{FULLNAME}-postgresql"
    data = secret_data(rendered, name)
    assert len(data["password"]) == 32
    assert data["database-url"] == f"postgresql://mns:{data['password']}@{name}:5432/mns"
    assert rendered.get("Secret", name)["metadata"]["annotations"]["helm.sh/resource-policy"]
    database = rendered.get("StatefulSet", name)["spec"]["template"]["spec"]["containers"][0]
    assert env_of(database)["POSTGRES_PASSWORD"] == {
        "secretKeyRef": {"name": name, "key": "password"}
    }
    for _, container in rendered.gateway_containers():
        assert env_of(container)["MNS_GATEWAY_DATABASE_URL"] == {
            "secretKeyRef": {"name": name, "key": "database-url"}
        }


@pytest.mark.parametrize("case", ["sqlite", "postgresql-bundled"])
def test_pods_do_not_change_on_every_render(case: str) -> None:
    """Offline, lookup finds nothing and the generated secrets differ on each render; the pods
    must not, or every `helm upgrade` would restart them. (On a real upgrade lookup keeps the
    generated values, so the Secrets stay the same too.)"""
    first, second = render(MATRIX[case], is_upgrade=True), render(MATRIX[case], is_upgrade=True)
    workloads = ("Deployment", "StatefulSet")
    assert [m for m in first.manifests if m["kind"] in workloads] == [
        m for m in second.manifests if m["kind"] in workloads
    ]
    assert first.of_kind("Secret") != second.of_kind("Secret")


def test_changing_a_credential_restarts_the_pods() -> None:
    before = render_case("sqlite-worker-ingress").get("Deployment")
    rotated = {**MATRIX["sqlite-worker-ingress"]}
    rotated["credentials"] = {**rotated["credentials"], "accessKeySecret": "rotated"}
    after = render(rotated).get("Deployment")
    annotation = "checksum/secrets"
    assert (
        before["spec"]["template"]["metadata"]["annotations"][annotation]
        != after["spec"]["template"]["metadata"]["annotations"][annotation]
    )
