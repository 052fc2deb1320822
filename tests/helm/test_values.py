"""Bad values fail before anything is applied, with a message that names the value and the fix.

values.schema.json checks each value on its own (Helm validates it on install, upgrade,
template and lint); the chart's ``fail`` rules check the combinations.
"""

from __future__ import annotations

from typing import Any

import helm_python
import pytest

from tests.helm.chart import CHART, render

POSTGRES = {"type": "postgresql", "postgresql": {"url": "postgresql://mns:pw@db:5432/mns"}}

#: (values, what the message must say), checked by values.schema.json.
REFUSED_BY_THE_SCHEMA: dict[str, tuple[dict[str, Any], list[str]]] = {
    "no replicas": ({"replicaCount": 0}, ["/replicaCount", "minimum: got 0, want 1"]),
    "replicas as text": ({"replicaCount": "3"}, ["/replicaCount", "got string, want integer"]),
    "unknown store": (
        {"store": {"type": "mysql"}},
        ["/store/type", "value must be one of 'sqlite', 'postgresql'"],
    ),
    "a database URL that is not PostgreSQL's": (
        {"store": {"type": "postgresql", "postgresql": {"url": "mysql://db/mns"}}},
        ["/store/postgresql/url", "does not match pattern"],
    ),
    "a misspelt top-level key": ({"replicas": 2}, ["additional properties 'replicas'"]),
    "an OTLP protocol the exporters do not speak": (
        {"tracing": {"protocol": "http/json"}},
        ["/tracing/protocol", "value must be one of 'http/protobuf', 'grpc'"],
    ),
    "a collector endpoint that is no URL": (
        {"tracing": {"endpoint": "collector:4318"}},
        ["/tracing/endpoint", "does not match pattern"],
    ),
    "a misspelt nested key": (
        {"worker": {"replicas": 2}},
        ["/worker", "additional properties 'replicas'"],
    ),
    "worker replicas as text": (
        {"worker": {"replicaCount": "two"}},
        ["/worker/replicaCount", "got string, want integer"],
    ),
    "an unknown worker class": (
        {"gateway": {"workerClass": "sync"}},
        ["/gateway/workerClass", "'gevent', 'gthread'"],
    ),
    "no graceful timeout": ({"gateway": {"gracefulTimeout": 0}}, ["/gateway/gracefulTimeout"]),
    "a long poll's re-check longer than any long poll": (
        {"gateway": {"longPollRecheck": 31}},
        ["/gateway/longPollRecheck", "maximum: got 31, want 30"],
    ),
    "a relative log dir": ({"gateway": {"logDir": "oplog"}}, ["/gateway/logDir"]),
    "an egress range that is not a CIDR": (
        {"delivery": {"egress": {"deny": ["10.0.0.0"]}}},
        ["/delivery/egress/deny/0", "does not match pattern"],
    ),
    "a bridge without its secret": (
        {
            "delivery": {
                "queueBridges": {"cn-hangzhou:123": {"url": "https://x", "access_key_id": "k"}}
            }
        },
        ["/delivery/queueBridges/cn-hangzhou:123", "missing property 'access_key_secret'"],
    ),
    "an extra access key without its secret": (
        {"credentials": {"extraAccessKeys": ["only-an-id"]}},
        ["/credentials/extraAccessKeys/0"],
    ),
    "an unknown pull policy": (
        {"image": {"pullPolicy": "Sometimes"}},
        ["/image/pullPolicy", "'Always', 'IfNotPresent', 'Never'"],
    ),
    "a scrape interval without a unit": (
        {"metrics": {"serviceMonitor": {"interval": "30"}}},
        ["/metrics/serviceMonitor/interval"],
    ),
    "an autoscaler target over 100%": (
        {"autoscaling": {"targetCPUUtilizationPercentage": 150}},
        ["/autoscaling/targetCPUUtilizationPercentage", "maximum: got 150, want 100"],
    ),
    "a spread rule Kubernetes does not know": (
        {
            "topologySpreadConstraints": [
                {"topologyKey": "zone", "maxSkew": 1, "whenUnsatisfiable": "Maybe"}
            ]
        },
        ["/topologySpreadConstraints/0/whenUnsatisfiable"],
    ),
}

#: (values, what the message must say), checked by the chart's rules between values.
REFUSED_BY_THE_CHART: dict[str, tuple[dict[str, Any], list[str]]] = {
    "replicas on SQLite": (
        {"replicaCount": 2},
        ["replicaCount must be 1 with store.type=sqlite", "set store.type=postgresql"],
    ),
    "autoscaling on SQLite": (
        {"autoscaling": {"enabled": True}},
        ["autoscaling needs store.type=postgresql"],
    ),
    "worker replicas on SQLite": (
        {"worker": {"enabled": True, "replicaCount": 2}},
        ["worker.replicaCount above 1 needs store.type=postgresql"],
    ),
    "PostgreSQL without a database": (
        {"store": {"type": "postgresql"}},
        ["store.type=postgresql needs exactly one database", "postgresql.enabled=true"],
    ),
    "PostgreSQL with two databases": (
        {"store": POSTGRES, "postgresql": {"enabled": True}},
        ["store.type=postgresql needs exactly one database"],
    ),
    "the bundled database beside SQLite": (
        {"postgresql": {"enabled": True}},
        ["postgresql.enabled=true deploys a database", "only uses with store.type=postgresql"],
    ),
    "half an access key": (
        {"credentials": {"accessKeyId": "app"}},
        ["credentials.accessKeyId and credentials.accessKeySecret go together"],
    ),
    "a worker with nothing to do": (
        {"worker": {"enabled": True}, "delivery": {"threads": 0}},
        ["delivery.threads must be at least 1 when worker.enabled"],
    ),
    "tracing with no collector": (
        {"tracing": {"enabled": True}},
        ["tracing.enabled needs tracing.endpoint"],
    ),
    "a grace period shorter than draining": (
        {"terminationGracePeriodSeconds": 30},
        ["terminationGracePeriodSeconds (30) must be at least", "= 50"],
    ),
}


def refusal(values: dict[str, Any]) -> str:
    with pytest.raises(helm_python.HelmError) as refused:
        render(values)
    return str(refused.value)


@pytest.mark.parametrize("case", REFUSED_BY_THE_SCHEMA)
def test_the_schema_refuses_a_bad_value_by_name(case: str) -> None:
    values, phrases = REFUSED_BY_THE_SCHEMA[case]
    message = refusal(values)
    assert "values don't meet the specifications of the schema" in message
    assert all(phrase in message for phrase in phrases), message


@pytest.mark.parametrize("case", REFUSED_BY_THE_CHART)
def test_the_chart_refuses_a_bad_combination_and_says_why(case: str) -> None:
    values, phrases = REFUSED_BY_THE_CHART[case]
    message = refusal(values)
    assert all(phrase in message for phrase in phrases), message


def test_each_refused_value_is_otherwise_fine() -> None:
    """The refusals above come from the one bad value: the defaults render."""
    render({})
    render({"store": POSTGRES, "replicaCount": 2, "autoscaling": {"enabled": True}})


def test_the_names_the_issue_promised_are_in_the_values() -> None:
    with helm_python.Chart.load(CHART) as chart:
        values = chart.values
    assert values["replicaCount"] == 1
    assert values["store"]["type"] == "sqlite"
    assert {"url", "existingSecret", "existingSecretKey"} <= values["store"]["postgresql"].keys()
    assert {"enabled", "replicaCount"} <= values["worker"].keys()
    assert values["postgresql"]["enabled"] is False
