"""What runs where: the API, the workers, migrations and the bundled database in each shape, and
how pods are replaced, scaled, spread and stopped."""

from __future__ import annotations

import pytest

from gateway.queues.records import WAIT_SECONDS
from tests.helm.chart import FULLNAME, MATRIX, Rendered, env_of, render, render_case

POSTGRES = {"type": "postgresql", "postgresql": {"url": "postgresql://mns:pw@db:5432/mns"}}


def api(rendered: Rendered) -> dict:  # type: ignore[type-arg]
    return rendered.get("Deployment")


def containers(workload: dict) -> dict[str, dict]:  # type: ignore[type-arg]
    return {c["name"]: c for c in workload["spec"]["template"]["spec"]["containers"]}


def test_sqlite_is_one_pod_on_its_volume_replaced_by_recreate() -> None:
    rendered = render_case("sqlite")
    deployment = api(rendered)
    assert deployment["spec"]["replicas"] == 1
    assert deployment["spec"]["strategy"] == {"type": "Recreate"}
    volumes = {v["name"]: v for v in deployment["spec"]["template"]["spec"]["volumes"]}
    claim = rendered.get("PersistentVolumeClaim", f"{FULLNAME}-data")
    assert volumes["data"]["persistentVolumeClaim"]["claimName"] == claim["metadata"]["name"]
    assert claim["metadata"]["annotations"]["helm.sh/resource-policy"] == "keep"
    kinds = {m["kind"] for m in rendered.manifests}
    assert not kinds & {"PodDisruptionBudget", "HorizontalPodAutoscaler", "Job", "StatefulSet"}
    assert "MNS_GATEWAY_DATABASE_URL" not in env_of(containers(deployment)["gateway"])


def test_postgresql_runs_several_api_replicas_rolling_and_budgeted() -> None:
    rendered = render_case("postgresql-external")
    deployment = api(rendered)
    assert deployment["spec"]["replicas"] == 3
    assert deployment["spec"]["strategy"] == {
        "type": "RollingUpdate",
        "rollingUpdate": {"maxSurge": "25%", "maxUnavailable": 0},
    }
    budget = rendered.get("PodDisruptionBudget")
    assert budget["spec"]["maxUnavailable"] == 1
    pod_labels = deployment["spec"]["template"]["metadata"]["labels"]
    assert budget["spec"]["selector"]["matchLabels"].items() <= pod_labels.items()
    assert rendered.of_kind("PersistentVolumeClaim") == []  # nothing lasting in /data
    volumes = {v["name"]: v for v in deployment["spec"]["template"]["spec"]["volumes"]}
    assert volumes["data"] == {"name": "data", "emptyDir": {}}


def test_autoscalers_own_the_replica_counts_of_api_and_workers() -> None:
    rendered = render_case("postgresql-existing-secrets-workers")
    for name in (FULLNAME, f"{FULLNAME}-worker"):
        deployment = rendered.get("Deployment", name)
        assert "replicas" not in deployment["spec"]  # an upgrade must not reset the HPA's count
        scaler = rendered.get("HorizontalPodAutoscaler", name)
        assert scaler["spec"]["scaleTargetRef"] == {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "name": name,
        }
        assert scaler["spec"]["minReplicas"] >= 1
    metrics = rendered.get("HorizontalPodAutoscaler")["spec"]["metrics"]
    assert [m["resource"]["name"] for m in metrics] == ["cpu", "memory"]
    assert rendered.names("PodDisruptionBudget") == {FULLNAME, f"{FULLNAME}-worker"}


@pytest.mark.parametrize("case", ["postgresql-existing-secrets-workers", "postgresql-bundled"])
def test_postgresql_workers_are_a_deployment_and_the_api_pushes_nothing(case: str) -> None:
    rendered = render_case(case)
    gateway = containers(api(rendered))
    assert list(gateway) == ["gateway"]
    assert env_of(gateway["gateway"])["MNS_GATEWAY_DELIVERY_THREADS"] == "0"
    worker = rendered.get("Deployment", f"{FULLNAME}-worker")
    (container,) = containers(worker).values()
    assert container["args"][0] == "worker"
    assert env_of(container)["MNS_GATEWAY_DELIVERY_THREADS"] == "32"
    # Its port is for probes and scraping only: no Service routes API traffic to a worker.
    assert [port["name"] for port in container["ports"]] == ["probes"]
    assert FULLNAME in rendered.names("Service") and f"{FULLNAME}-worker" not in rendered.names(
        "Service"
    )
    assert worker["spec"]["selector"] != api(rendered)["spec"]["selector"]


def test_sqlite_runs_the_worker_beside_the_api_in_its_pod() -> None:
    rendered = render_case("sqlite-worker-ingress")
    pod = containers(api(rendered))
    assert list(pod) == ["gateway", "worker"]
    assert pod["worker"]["args"][0] == "worker"
    assert env_of(pod["gateway"])["MNS_GATEWAY_DELIVERY_THREADS"] == "0"
    assert f"{FULLNAME}-worker" not in rendered.names("Deployment")


def test_migrations_run_once_per_upgrade_before_pods_are_replaced() -> None:
    job = render_case("postgresql-external").get("Job", f"{FULLNAME}-migrate")
    annotations = job["metadata"]["annotations"]
    assert annotations["helm.sh/hook"] == "pre-upgrade"  # install: pods migrate as they start
    assert "before-hook-creation" in annotations["helm.sh/hook-delete-policy"]
    (container,) = job["spec"]["template"]["spec"]["containers"]
    assert container["args"] == ["migrate"]
    assert job["spec"]["template"]["spec"]["restartPolicy"] == "Never"
    assert env_of(container)["MNS_GATEWAY_DATABASE_URL"] == {
        "secretKeyRef": {"name": f"{FULLNAME}-database", "key": "database-url"}
    }
    assert job["spec"]["activeDeadlineSeconds"] > 0


def test_migrations_can_be_left_to_start_up() -> None:
    assert render_case("postgresql-bundled").of_kind("Job") == []
    assert render_case("sqlite").of_kind("Job") == []


def test_the_bundled_database_is_a_trial_statefulset_with_a_claim() -> None:
    rendered = render_case("postgresql-bundled")
    database = rendered.get("StatefulSet", f"{FULLNAME}-postgresql")
    assert "not-for-production" in " ".join(database["metadata"]["annotations"])
    assert database["spec"]["replicas"] == 1
    (claim,) = database["spec"]["volumeClaimTemplates"]
    assert claim["spec"]["resources"]["requests"]["storage"] == "8Gi"
    service = rendered.get("Service", f"{FULLNAME}-postgresql")
    assert database["spec"]["serviceName"] == service["metadata"]["name"]
    assert service["spec"]["clusterIP"] == "None"
    assert "NOT FOR PRODUCTION" in rendered.notes
    init = api(rendered)["spec"]["template"]["spec"]["initContainers"]
    assert [c["name"] for c in init] == ["wait-for-database"]
    assert f"--host={FULLNAME}-postgresql" in init[0]["command"][-1]


def test_production_uses_no_bundled_database_and_no_chart_made_secret() -> None:
    rendered = render_case("production")
    assert rendered.of_kind("StatefulSet") == [] and rendered.of_kind("Secret") == []
    assert api(rendered)["spec"]["template"]["spec"].get("initContainers") is None


def test_every_gateway_container_re_checks_long_polls_as_the_values_say() -> None:
    for values, expected in (({}, "1"), ({"gateway": {"longPollRecheck": 2.5}}, "2.5")):
        rendered = render({"store": {"type": "sqlite"}, **values})
        for _, container in rendered.gateway_containers():
            assert env_of(container)["MNS_GATEWAY_LONG_POLL_RECHECK"] == expected


@pytest.mark.parametrize("case", MATRIX)
def test_pods_drain_for_longer_than_the_longest_long_poll(case: str) -> None:
    """SIGTERM: requests (a long poll up to 30 s) and pushes get the graceful timeout; the
    grace period covers the preStop pause and the draining before Kubernetes kills."""
    rendered = render_case(case)
    for workload, container in rendered.gateway_containers():
        spec = workload["spec"]["template"]["spec"]
        graceful = int(env_of(container)["MNS_GATEWAY_GRACEFUL_TIMEOUT"])
        assert graceful > WAIT_SECONDS.high
        pause = 0
        if (pre_stop := container.get("lifecycle", {}).get("preStop")) is not None:
            pause = int(pre_stop["exec"]["command"][1])
        assert spec["terminationGracePeriodSeconds"] > pause + graceful, workload["kind"]
    gateway = containers(api(rendered))["gateway"]
    assert gateway["lifecycle"]["preStop"]["exec"]["command"] == ["sleep", "5"]


@pytest.mark.parametrize("case", MATRIX)
def test_api_and_worker_pods_spread_over_zones_and_nodes(case: str) -> None:
    rendered = render_case(case)
    for deployment in rendered.of_kind("Deployment"):
        template = deployment["spec"]["template"]
        constraints = template["spec"]["topologySpreadConstraints"]
        assert {c["topologyKey"] for c in constraints} == {
            "topology.kubernetes.io/zone",
            "kubernetes.io/hostname",
        }
        for constraint in constraints:
            selector = constraint["labelSelector"]["matchLabels"]
            assert selector == deployment["spec"]["selector"]["matchLabels"]


def test_the_api_probes_liveness_startup_and_readiness() -> None:
    gateway = containers(api(render({"store": POSTGRES})))["gateway"]
    assert gateway["startupProbe"]["httpGet"] == {"path": "/healthz", "port": "http"}
    assert gateway["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": "http"}
    assert gateway["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": "http"}
    assert gateway["ports"] == [{"name": "http", "containerPort": 8080, "protocol": "TCP"}]


def test_tracing_points_every_gateway_container_at_the_collector() -> None:
    """OTEL_* in the API and the worker containers alike, and nothing of it when off."""
    values = {
        "store": {"type": "postgresql", "postgresql": {"url": "postgresql://mns:pw@db/mns"}},
        "worker": {"enabled": True},
        "tracing": {
            "enabled": True,
            "endpoint": "http://otel-collector.observability:4318",
            "sampler": "parentbased_traceidratio",
            "samplerArg": "0.25",
        },
    }
    containers = list(render(values).gateway_containers())
    assert {FULLNAME, f"{FULLNAME}-worker"} <= {w["metadata"]["name"] for w, _ in containers}
    for _, container in containers:
        env = env_of(container)
        assert env["OTEL_TRACES_EXPORTER"] == "otlp"
        assert env["OTEL_EXPORTER_OTLP_ENDPOINT"] == "http://otel-collector.observability:4318"
        assert env["OTEL_EXPORTER_OTLP_PROTOCOL"] == "http/protobuf"
        assert env["OTEL_SERVICE_NAME"] == "mns-gateway"
        assert (env["OTEL_TRACES_SAMPLER"], env["OTEL_TRACES_SAMPLER_ARG"]) == (
            "parentbased_traceidratio",
            "0.25",
        )
        assert "OTEL_RESOURCE_ATTRIBUTES" not in env
    for _, container in render_case("sqlite").gateway_containers():
        assert not any(name.startswith("OTEL_") for name in env_of(container))
