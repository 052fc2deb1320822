"""Every deployment shape renders with Helm's engine, lints clean, and each manifest is valid
against the OpenAPI schemas of every Kubernetes version the chart claims to support."""

from __future__ import annotations

import copy
import functools
import re
from collections.abc import Callable
from typing import Any

import helm_python
import jsonschema
import kubernetes_validate
import pytest
from kubernetes_validate.utils import SchemaNotFoundError

from tests.helm.chart import (
    CHART,
    CUSTOM_KINDS,
    KUBERNETES_VERSIONS,
    MATRIX,
    OLDEST_KUBERNETES,
    render_case,
    validate,
    values_of,
)

#: What each shape must contain: proof the matrix covers what its names claim.
EXPECTED_KINDS = {
    "sqlite": {"Deployment", "Service", "PersistentVolumeClaim", "Secret", "ServiceAccount"},
    "sqlite-worker-ingress": {"Deployment", "Ingress"},
    "sqlite-existing-secrets": {"Deployment"},
    "sqlite-ephemeral": {"Deployment"},
    "postgresql-external": {"Deployment", "Ingress", "PodDisruptionBudget", "Job", "Secret"},
    "postgresql-existing-secrets-workers": {
        "HorizontalPodAutoscaler",
        "NetworkPolicy",
        "ServiceMonitor",
        "PodMonitor",
        "PodDisruptionBudget",
        "Job",
    },
    "postgresql-bundled": {"StatefulSet", "NetworkPolicy", "PodDisruptionBudget"},
    "production": {
        "HorizontalPodAutoscaler",
        "NetworkPolicy",
        "ServiceMonitor",
        "PodMonitor",
        "Ingress",
    },
}


def test_the_supported_versions_run_from_the_oldest_to_the_newest_known() -> None:
    major, minor = OLDEST_KUBERNETES
    assert KUBERNETES_VERSIONS[0].startswith(f"{major}.{minor}.")
    minors = [int(version.split(".")[1]) for version in KUBERNETES_VERSIONS]
    assert minors == list(range(minor, minors[-1] + 1)) and minors[-1] >= 37  # none skipped
    kube_version = helm_python.Chart.load(CHART).metadata["kubeVersion"]
    assert kube_version == f">={major}.{minor}.0-0"


def test_every_case_is_checked() -> None:
    assert set(EXPECTED_KINDS) == set(MATRIX)


@pytest.mark.parametrize("case", MATRIX)
def test_each_case_renders_what_it_names(case: str) -> None:
    kinds = {manifest["kind"] for manifest in render_case(case).manifests}
    assert EXPECTED_KINDS[case] <= kinds


def _validate(manifest: dict[str, Any], version: str) -> str | None:
    try:
        validate(manifest, version)
    except jsonschema.ValidationError as error:
        where = ".".join(str(part) for part in error.path)
        return f"{manifest['kind']}/{manifest['metadata']['name']} {where}: {error.message}"
    except SchemaNotFoundError:
        if manifest["kind"] not in CUSTOM_KINDS:
            return f"{manifest['kind']} {manifest['apiVersion']}: no such API in {version}"
    return None


@pytest.mark.parametrize("version", KUBERNETES_VERSIONS)
@pytest.mark.parametrize("case", MATRIX)
def test_manifests_are_valid_kubernetes_objects(case: str, version: str) -> None:
    """Strict: an unknown or misspelled field fails as surely as a wrong type."""
    errors = [_validate(manifest, version) for manifest in render_case(case).manifests]
    assert [error for error in errors if error] == []


def _verdict(
    check: Callable[[dict[str, Any], str], object], manifest: dict[str, Any], version: str
) -> str:
    try:
        check(manifest, version)
    except jsonschema.ValidationError as error:
        return f"{list(error.path)} {error.message}"
    return "valid"


@pytest.mark.parametrize("version", [KUBERNETES_VERSIONS[0], KUBERNETES_VERSIONS[-1]])
def test_the_validation_judges_as_kubernetes_validate_does(version: str) -> None:
    """The tests validate through ``chart.validate``, which reads each schema once; on the
    chart's own manifests and on broken ones it must say what the library says."""
    deployment = render_case("sqlite").get("Deployment")
    misspelled, wrong_type = copy.deepcopy(deployment), copy.deepcopy(deployment)
    misspelled["spec"]["template"]["spec"]["containers"][0]["imagePullPolcy"] = "Always"
    wrong_type["spec"]["replicas"] = "two"
    manifests = [m for m in render_case("production").manifests if m["kind"] not in CUSTOM_KINDS]
    library = functools.partial(kubernetes_validate.validate, strict=True)
    for manifest in (*manifests, misspelled, wrong_type):
        assert _verdict(validate, manifest, version) == _verdict(library, manifest, version)
    assert _verdict(validate, misspelled, version) != "valid"
    assert _verdict(validate, wrong_type, version) != "valid"


@pytest.mark.parametrize("case", MATRIX)
def test_lint_is_clean(case: str) -> None:
    """Helm's linter, deprecation checks included, for the oldest and newest versions."""
    for version in (KUBERNETES_VERSIONS[0], KUBERNETES_VERSIONS[-1]):
        report = helm_python.lint(
            CHART, values_of(case), strict=True, namespace="messaging", kube_version=f"v{version}"
        )
        findings = [m for m in report["messages"] if m["severity"] >= 2]  # warnings, errors
        assert (report["errors"], findings) == ([], []), version


def test_the_only_lint_remark_is_the_missing_icon() -> None:
    messages = helm_python.lint(CHART, strict=True)["messages"]
    assert [(m["severity"], m["error"]) for m in messages] == [(1, "icon is recommended")]


def test_templates_keep_to_one_name_per_object() -> None:
    for case in MATRIX:
        seen = [(m["kind"], m["metadata"]["name"]) for m in render_case(case).manifests]
        assert len(seen) == len(set(seen)), case
        for _, name in seen:
            assert re.fullmatch(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?", name) and len(name) <= 63
