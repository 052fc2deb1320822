"""Rendering helm/mns-gateway with Helm's own engine, and the matrix of values the tests cover.

``helm_python`` binds libhelm (Helm v4's Go library): rendering, schema validation and linting
run exactly as ``helm install`` and ``helm lint`` would, offline, with no helm binary and no
cluster (``lookup`` finds nothing, as on a first install).
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import helm_python
import yaml
from jsonschema import Draft202012Validator
from kubernetes_validate.utils import SchemaNotFoundError, all_versions, schema_contents
from referencing import Registry, Resource

REPOSITORY = Path(__file__).resolve().parents[2]
CHART = REPOSITORY / "helm" / "mns-gateway"
PRODUCTION_VALUES = CHART / "values-production.yaml"
RELEASE = "mns"
NAMESPACE = "messaging"
FULLNAME = f"{RELEASE}-mns-gateway"

#: Prometheus Operator resources kubernetes-validate has no schema for; test_hygiene checks
#: their shape.
CUSTOM_KINDS = frozenset({"ServiceMonitor", "PodMonitor"})

#: The oldest Kubernetes release the chart supports (Chart.yaml's kubeVersion says the same).
OLDEST_KUBERNETES = (1, 29)


def _minor(version: str) -> tuple[int, int]:
    major, minor = version.split(".")[:2]
    return int(major), int(minor)


#: Every Kubernetes minor release from the oldest supported to the newest that
#: kubernetes-validate has schemas for (its schemas ship inside the package; it lists each
#: version twice, for its strict and its lax schemas).
KUBERNETES_VERSIONS = tuple(
    sorted(
        {version for version in all_versions() if _minor(version) >= OLDEST_KUBERNETES},
        key=_minor,
    )
)


def validate(manifest: dict[str, Any], version: str) -> None:
    """``kubernetes_validate.validate(manifest, version, strict=True)``, with each schema read
    and compiled once per process: the library parses its schema files again on every call,
    the shared definitions (megabytes of JSON) among them, which was most of the chart tests'
    CPU. Raises ``jsonschema.ValidationError`` (which the library's own error subclasses), or
    ``SchemaNotFoundError`` for a kind the version has no schema for."""
    _validator(version, manifest["kind"], manifest["apiVersion"]).validate(manifest)


@functools.cache
def _validator(version: str, kind: str, api_version: str) -> Draft202012Validator:
    # Where kubernetes_validate.validate looks: the newest schemas not newer than the version,
    # the strict ones; rbac.authorization.k8s.io/v1 is the file suffix rbac-v1.
    schemas = _schema_directory(version)
    group = re.sub(r"^([^./]*)(?:\.[^/]*)?/", r"\1-", api_version)
    try:
        schema = schema_contents(f"{schemas}/{kind.lower()}-{group}.json", version)
    except FileNotFoundError:
        raise SchemaNotFoundError(kind, version, api_version) from None
    registry = Resource.from_contents(schema) @ _definitions(version)
    return Draft202012Validator(schema, registry=registry)


def _schema_directory(version: str) -> str:
    newest = [known for known in all_versions() if _minor(known) <= _minor(version)][-1]
    return f"kubernetes-json-schema/v{newest}-local-strict"


@functools.cache
def _definitions(version: str) -> Registry[Any]:
    definitions = schema_contents(f"{_schema_directory(version)}/_definitions.json", version)
    return Resource.from_contents(definitions) @ Registry()


EXTERNAL_DATABASE_URL = "postgresql://mns:s3cret@db.example.internal:5432/mns?sslmode=require"

#: The values each deployment shape is rendered with; names say what each one covers.
MATRIX: dict[str, dict[str, Any]] = {
    # The defaults: one SQLite pod on a PersistentVolumeClaim, chart-made access key and
    # signing key, no ingress.
    "sqlite": {},
    # SQLite with the delivery worker as a second container, the ingress, and credentials
    # given as values.
    "sqlite-worker-ingress": {
        "worker": {"enabled": True},
        "gateway": {"publicUrl": "https://mns.example.com", "logDir": "/data/oplog"},
        "ingress": {
            "enabled": True,
            "className": "nginx",
            "tls": [{"secretName": "mns-tls", "hosts": ["mns.example.com"]}],
        },
        "credentials": {
            "accessKeyId": "app",
            "accessKeySecret": "app-secret",
            "extraAccessKeys": ["ci:ci-secret"],
            "smtpUrl": "smtp://relay.example.com:25",
        },
        "delivery": {
            "queueBridges": {
                "cn-hangzhou:1234567890": {
                    "url": "https://1234567890.mns.cn-hangzhou.aliyuncs.com",
                    "access_key_id": "LTAIexample",
                    "access_key_secret": "bridge-secret",
                }
            }
        },
    },
    # SQLite with every Secret and the claim made by the operator, and nothing generated; pushes
    # trust the company's CA and present a client certificate, both from Secrets too.
    "sqlite-existing-secrets": {
        "credentials": {"existingSecret": "mns-credentials"},
        "signingKey": {"existingSecret": "mns-signing-key"},
        "persistence": {"existingClaim": "mns-data"},
        "delivery": {"tls": {"caSecret": "corp-ca", "clientCertSecret": "mns-client-cert"}},
    },
    # SQLite without a volume and with the gateway generating its own keys (a throwaway trial).
    "sqlite-ephemeral": {
        "persistence": {"enabled": False},
        "credentials": {"generate": False},
        "signingKey": {"generate": False},
    },
    # PostgreSQL at a URL given as a value, several API replicas, the ingress, a region of its
    # own (the other cases leave it unset: any region in V4 scopes).
    "postgresql-external": {
        "gateway": {"region": "cn-shanghai"},
        "store": {"type": "postgresql", "postgresql": {"url": EXTERNAL_DATABASE_URL}},
        "replicaCount": 3,
        "ingress": {"enabled": True},
    },
    # PostgreSQL from an existing Secret, a worker Deployment, both autoscaled, the network
    # policy and the ServiceMonitor.
    "postgresql-existing-secrets-workers": {
        "store": {
            "type": "postgresql",
            "postgresql": {"existingSecret": "mns-database", "existingSecretKey": "url"},
        },
        "replicaCount": 2,
        "autoscaling": {"enabled": True, "targetMemoryUtilizationPercentage": 80},
        "worker": {"enabled": True, "replicaCount": 3, "autoscaling": {"enabled": True}},
        "credentials": {"existingSecret": "mns-credentials"},
        "signingKey": {"existingSecret": "mns-signing-key"},
        "networkPolicy": {"enabled": True, "pushes": {"ports": [80, 443]}},
        "metrics": {"serviceMonitor": {"enabled": True}},
    },
    # The bundled trial PostgreSQL, two API replicas and a worker Deployment behind the network
    # policy, with migrations left to start-up.
    "postgresql-bundled": {
        "store": {"type": "postgresql"},
        "postgresql": {"enabled": True},
        "replicaCount": 2,
        "worker": {"enabled": True},
        "networkPolicy": {"enabled": True},
        "migrations": {"job": {"enabled": False}},
    },
    # docs/deploy.md's production values file, as shipped.
    "production": {},  # filled from PRODUCTION_VALUES by values_of()
}


def values_of(case: str) -> dict[str, Any]:
    if case == "production":
        return helm_python.values_from_yaml(PRODUCTION_VALUES.read_text(encoding="utf-8"))
    return MATRIX[case]


@dataclass(frozen=True)
class Rendered:
    """One render of the chart: the manifests Kubernetes would receive, and the notes."""

    manifests: tuple[dict[str, Any], ...]
    notes: str

    def of_kind(self, kind: str) -> list[dict[str, Any]]:
        return [m for m in self.manifests if m["kind"] == kind]

    def get(self, kind: str, name: str = FULLNAME) -> dict[str, Any]:
        (found,) = [m for m in self.of_kind(kind) if m["metadata"]["name"] == name]
        return found

    def names(self, kind: str) -> set[str]:
        return {m["metadata"]["name"] for m in self.of_kind(kind)}

    def pod_specs(self) -> Iterator[tuple[dict[str, Any], dict[str, Any]]]:
        """(workload, pod spec) of every Deployment, StatefulSet, Job and Pod."""
        for manifest in self.manifests:
            spec = manifest.get("spec", {})
            if manifest["kind"] == "Pod":
                yield manifest, spec
            elif "template" in spec:
                yield manifest, spec["template"]["spec"]

    def gateway_containers(self) -> Iterator[tuple[dict[str, Any], dict[str, Any]]]:
        """(workload, container) of every container running the gateway image's entrypoint."""
        for workload, spec in self.pod_specs():
            for container in spec["containers"]:
                if "command" not in container and "mns-gateway" in container["image"]:
                    yield workload, container


#: libyaml's safe loader where PyYAML was built with it (its wheels are): the same documents as
#: ``yaml.safe_load_all`` in a tenth of the time (3 ms against 38 ms for the defaults' render).
_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def render(values: dict[str, Any] | None = None, **options: Any) -> Rendered:
    """Render as ``helm install`` (or, with ``is_upgrade=True``, ``helm upgrade``) would."""
    with helm_python.Chart.load(CHART) as chart:
        files = chart.render(values=values or {}, name=RELEASE, namespace=NAMESPACE, **options)
    manifests = tuple(
        document
        for path, text in sorted(files.items())
        if path.endswith(".yaml")
        for document in yaml.load_all(text, Loader=_LOADER)
        if document
    )
    notes = next((text for path, text in files.items() if path.endswith("NOTES.txt")), "")
    return Rendered(manifests, notes)


def render_strictly(values: dict[str, Any]) -> None:
    """Render with Go templates' ``missingkey=error``: reading a value that does not exist fails.

    ``Chart.render`` does not expose libhelm's ``strict`` render option (helm-python-sdk 0.2.2),
    so this calls the same C function with it set.
    """
    from helm_python import _native

    with helm_python.Chart.load(CHART) as chart:
        options = {"name": RELEASE, "namespace": NAMESPACE, "strict": True}
        _native.call_string("helm_render", chart._raw(), json.dumps(values), json.dumps(options))


@functools.cache
def render_case(case: str) -> Rendered:
    return render(values_of(case))


def env_of(container: dict[str, Any]) -> dict[str, Any]:
    """A container's environment: plain values as strings, references as their source."""
    return {
        variable["name"]: variable.get("value", variable.get("valueFrom"))
        for variable in container.get("env", [])
    }
