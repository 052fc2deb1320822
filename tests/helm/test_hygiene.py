"""Production hygiene of every pod the chart makes, and the network and monitoring options."""

from __future__ import annotations

import ipaddress
from typing import Any

import pytest

from tests.helm.chart import FULLNAME, MATRIX, NAMESPACE, Rendered, render, render_case


def all_containers(spec: dict[str, Any]) -> list[dict[str, Any]]:
    return [*spec.get("initContainers", []), *spec["containers"]]


@pytest.mark.parametrize("case", MATRIX)
def test_every_container_runs_unprivileged_on_a_read_only_root(case: str) -> None:
    for workload, spec in render_case(case).pod_specs():
        pod = spec["securityContext"]
        assert pod["runAsNonRoot"] is True and pod["runAsUser"] > 0, workload["kind"]
        assert pod["seccompProfile"] == {"type": "RuntimeDefault"}
        assert spec["automountServiceAccountToken"] is False
        for container in all_containers(spec):
            security = container["securityContext"]
            assert security["readOnlyRootFilesystem"] is True, container["name"]
            assert security["allowPrivilegeEscalation"] is False
            assert security["capabilities"] == {"drop": ["ALL"]}


@pytest.mark.parametrize("case", MATRIX)
def test_every_container_has_requests_and_a_memory_limit(case: str) -> None:
    for _, spec in render_case(case).pod_specs():
        for container in all_containers(spec):
            resources = container["resources"]
            assert {"cpu", "memory"} <= resources["requests"].keys(), container["name"]
            assert "memory" in resources["limits"]


@pytest.mark.parametrize("case", MATRIX)
def test_gateway_containers_write_only_to_data_and_tmp(case: str) -> None:
    for workload, container in render_case(case).gateway_containers():
        writable = {m["mountPath"] for m in container["volumeMounts"] if not m.get("readOnly")}
        assert writable == {"/data", "/tmp"}, workload["kind"]


def test_the_network_policy_restricts_the_gateway_pods() -> None:
    rendered = render_case("postgresql-bundled")
    policy = rendered.get("NetworkPolicy")
    selector = policy["spec"]["podSelector"]
    assert selector["matchExpressions"] == [
        {
            "key": "app.kubernetes.io/component",
            "operator": "In",
            "values": ["api", "worker", "migrate"],
        }
    ]
    assert policy["spec"]["policyTypes"] == ["Ingress", "Egress"]
    (ingress,) = policy["spec"]["ingress"]
    # The API, and the workers' probes and metrics.
    assert ingress == {
        "ports": [{"port": 8080, "protocol": "TCP"}, {"port": 8081, "protocol": "TCP"}]
    }
    dns, pushes, database = policy["spec"]["egress"]
    assert {p["port"] for p in dns["ports"]} == {53}
    assert database["ports"] == [{"port": 5432, "protocol": "TCP"}]
    assert database["to"][0]["podSelector"]["matchLabels"]["app.kubernetes.io/component"] == (
        "postgresql"
    )
    (block,) = pushes["to"]
    excluded = [ipaddress.ip_network(cidr) for cidr in block["ipBlock"]["except"]]
    for internal in ("10.96.0.1", "172.20.0.5", "192.168.1.1", "169.254.169.254", "100.64.0.1"):
        assert any(ipaddress.ip_address(internal) in network for network in excluded), internal


def test_the_bundled_database_is_reachable_from_the_gateway_only() -> None:
    policy = render_case("postgresql-bundled").get("NetworkPolicy", f"{FULLNAME}-postgresql")
    assert policy["spec"]["egress"] == []
    (rule,) = policy["spec"]["ingress"]
    (peer,) = rule["from"]
    assert peer["podSelector"]["matchExpressions"][0]["values"] == ["api", "worker", "migrate"]


def test_production_admits_only_the_ingress_controller_prometheus_and_helm_test() -> None:
    rendered = render_case("production")
    (ingress,) = rendered.get("NetworkPolicy")["spec"]["ingress"]
    namespaces = [
        peer["namespaceSelector"]["matchLabels"]["kubernetes.io/metadata.name"]
        for peer in ingress["from"]
        if "namespaceSelector" in peer
    ]
    assert namespaces == ["ingress-nginx", "monitoring"]
    test_pod = rendered.get("Pod", f"{FULLNAME}-test-connection")["metadata"]["labels"]
    (helm_test,) = [peer for peer in ingress["from"] if "podSelector" in peer]
    assert helm_test["podSelector"]["matchLabels"].items() <= test_pod.items()
    egress = rendered.get("NetworkPolicy")["spec"]["egress"]
    assert egress[-1]["ports"] == [{"port": 5432, "protocol": "TCP"}]  # the database


def service_monitor_targets(rendered: Rendered) -> tuple[dict[str, Any], dict[str, Any]]:
    monitor = rendered.get("ServiceMonitor")
    (service,) = [
        s
        for s in rendered.of_kind("Service")
        if monitor["spec"]["selector"]["matchLabels"].items() <= s["metadata"]["labels"].items()
    ]
    return monitor, service


@pytest.mark.parametrize("case", ["postgresql-existing-secrets-workers", "production"])
def test_the_service_monitor_scrapes_the_api_service(case: str) -> None:
    """kubernetes-validate has no schema for this custom resource: its shape is checked here."""
    rendered = render_case(case)
    monitor, service = service_monitor_targets(rendered)
    assert monitor["apiVersion"] == "monitoring.coreos.com/v1"
    assert service["metadata"]["name"] == FULLNAME
    assert monitor["spec"]["namespaceSelector"] == {"matchNames": [NAMESPACE]}
    (endpoint,) = monitor["spec"]["endpoints"]
    assert endpoint["path"] == "/metrics"
    assert endpoint["port"] in {port["name"] for port in service["spec"]["ports"]}
    assert set(endpoint) == {"port", "path", "interval", "scrapeTimeout"}


def test_the_production_service_monitor_carries_prometheus_selection_labels() -> None:
    monitor = render_case("production").get("ServiceMonitor")
    assert monitor["metadata"]["labels"]["release"] == "kube-prometheus-stack"


def test_ingress_is_off_by_default_and_routes_to_the_service_when_on() -> None:
    assert render_case("sqlite").of_kind("Ingress") == []
    rendered = render_case("sqlite-worker-ingress")
    ingress = rendered.get("Ingress")
    service = rendered.get("Service")
    (rule,) = ingress["spec"]["rules"]
    backend = rule["http"]["paths"][0]["backend"]["service"]
    assert backend == {"name": service["metadata"]["name"], "port": {"number": 80}}
    assert ingress["spec"]["ingressClassName"] == "nginx"
    assert ingress["spec"]["tls"] == [{"secretName": "mns-tls", "hosts": ["mns.example.com"]}]


WORKER_CASES = ["sqlite-worker-ingress", "postgresql-existing-secrets-workers", "production"]


def worker_containers(rendered: Rendered) -> list[dict[str, Any]]:
    return [c for _, c in rendered.gateway_containers() if c["args"][0] == "worker"]


@pytest.mark.parametrize("case", [c for c in WORKER_CASES if c != "production"])
def test_workers_are_probed_on_their_own_port_as_the_api_is(case: str) -> None:
    rendered = render_case(case)
    (api,) = [c for _, c in rendered.gateway_containers() if c["args"][0] == "serve"]
    (worker, *more) = worker_containers(rendered)
    for container in (worker, *more):
        assert container["args"] == ["worker", "--probes", "0.0.0.0:8081"]
        assert container["ports"] == [{"name": "probes", "containerPort": 8081, "protocol": "TCP"}]
        for kind in ("startupProbe", "livenessProbe", "readinessProbe"):
            expected = {**api[kind], "httpGet": {**api[kind]["httpGet"], "port": "probes"}}
            assert container[kind] == expected, kind


def test_the_pod_monitor_scrapes_the_workers_where_they_count_pushes() -> None:
    rendered = render_case("postgresql-existing-secrets-workers")
    monitor = rendered.get("PodMonitor", f"{FULLNAME}-worker")
    (endpoint,) = monitor["spec"]["podMetricsEndpoints"]
    assert (endpoint["port"], endpoint["path"]) == ("probes", "/metrics")
    selector = monitor["spec"]["selector"]
    pods = [
        workload["spec"]["template"]["metadata"]["labels"]
        for workload, container in rendered.gateway_containers()
        if container["args"][0] == "worker"
    ]
    assert pods and all(selector["matchLabels"].items() <= labels.items() for labels in pods)
    (components,) = selector["matchExpressions"]
    assert all(labels["app.kubernetes.io/component"] in components["values"] for labels in pods)
    ingress = rendered.get("NetworkPolicy")["spec"]["ingress"]
    assert {"port": 8081, "protocol": "TCP"} in ingress[0]["ports"]


def test_no_pod_monitor_without_workers_or_without_monitoring() -> None:
    assert render_case("sqlite-worker-ingress").of_kind("PodMonitor") == []
    assert render({"metrics": {"serviceMonitor": {"enabled": True}}}).of_kind("PodMonitor") == []
