"""Settings that cannot work are refused at start, one line naming the variable (issue 47):
every number within bounds the store's integers hold after scaling, every name by its rule,
and no ``MNS_GATEWAY_*`` variable that is not a setting (a misspelled one was ignored).

``MNS_GATEWAY_LEASE_SECONDS=1e300`` made every claim fail with ``OverflowError``, huge breaker
cool-downs rolled back the settle that opened a breaker, ``bad/name`` as the events topic sent
events nowhere, ``MNS_GATEWAY_PROT=8090`` served on 8080 without a word.
"""

from __future__ import annotations

import dataclasses
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from gateway.config.checks import LARGEST_SCALE
from gateway.config.settings import (
    READERS,
    Settings,
    env_name,
    known_names,
    settings_from_env,
)
from gateway.errors.commands import SettingsError
from gateway.testing.process import free_port
from tests.support.in_one_process import Done, run_each

ROOT = Path(__file__).resolve().parents[3]
ENTRY_POINT = Path(sys.executable).parent / "mns-gateway"
#: A signed 64-bit integer, the store's times (milliseconds since the epoch) and durations.
BIGINT = 2**63 - 1
NOW_MS = 10**13  # the year 2286: "now" with room to spare


def numeric_settings() -> list[str]:
    """Every setting whose value is a number, from the settings' own fields: one added later
    is checked here too."""
    return [
        field.name
        for field in dataclasses.fields(Settings)
        if field.name in READERS
        and str(field.type) in {"int", "float", "int | None", "float | None"}
        and field.type != "bool"
    ]


def test_the_numeric_settings_are_found() -> None:
    found = set(numeric_settings())
    assert {"lease_seconds", "breaker_cool_down", "port", "max_waiters", "retry_scale"} <= found
    assert len(found) >= 20


@pytest.mark.parametrize("name", numeric_settings())
@pytest.mark.parametrize("value", ["1e300", "9" * 30, "inf", "nan", "-1", "1e-300", "0"])
def test_every_number_has_bounds(name: str, value: str) -> None:
    try:
        chosen = settings_from_env({env_name(name): value})
    except SettingsError as error:
        assert str(error).startswith(f"{env_name(name)}={value!r} is not valid: "), error
        assert "\n" not in str(error)
        return
    accepted = getattr(chosen, name)
    assert accepted is not None and 0 <= accepted < 2**31, (name, value, accepted)


@pytest.mark.parametrize("name", numeric_settings())
def test_the_largest_accepted_number_fits_the_store_after_scaling(name: str) -> None:
    """The bound itself, in milliseconds, times the largest retry scale, after now: inside a
    BIGINT (the breaker's times and the leases are stored so)."""
    largest = None
    for exponent in range(1, 40):  # the first power of ten refused, then the value below it
        try:
            settings_from_env({env_name(name): str(10**exponent)})
        except SettingsError:
            largest = 10**exponent
            break
    assert largest is not None, f"{env_name(name)} has no upper bound"
    assert NOW_MS + largest * 1000 * LARGEST_SCALE < BIGINT


@pytest.mark.parametrize(
    ("variable", "value", "says"),
    [
        ("MNS_GATEWAY_LEASE_SECONDS", "1e300", "at most 86400"),
        ("MNS_GATEWAY_BREAKER_COOL_DOWN", "1e300", "at most 604800"),
        ("MNS_GATEWAY_BREAKER_MAX_COOL_DOWN", "1e15", "at most 604800"),
        ("MNS_GATEWAY_BREAKER_WINDOW", "1e15", "at most 604800"),
        ("MNS_GATEWAY_RETRY_SCALE", "1e300", "at most 100"),
        ("MNS_GATEWAY_GRACEFUL_TIMEOUT", "100000000000000000000", "from 0 to 86400"),
        ("MNS_GATEWAY_DELIVERY_THREADS", "100000000000", "from 0 to 100000"),
        ("MNS_GATEWAY_BREAKER_EVENTS_TOPIC", "bad/name", "must be a topic name"),
        ("MNS_GATEWAY_BREAKER_EVENTS_TOPIC", "-leading", "must be a topic name"),
        ("MNS_GATEWAY_BREAKER_EVENTS_TOPIC", "x" * 257, "must be a topic name"),
        ("MNS_GATEWAY_ACCOUNT_ID", "12:34", "letters, digits and hyphens"),
        ("MNS_GATEWAY_REGION", "cn/hangzhou", "letters, digits and hyphens"),
    ],
)
def test_a_value_that_cannot_work_is_one_line_naming_its_variable(
    variable: str, value: str, says: str
) -> None:
    with pytest.raises(SettingsError) as refused:
        settings_from_env({variable: value})
    assert str(refused.value).startswith(f"{variable}={value!r} is not valid: ")
    assert says in str(refused.value)


def test_names_by_their_rule_are_taken() -> None:
    chosen = settings_from_env(
        {
            "MNS_GATEWAY_BREAKER_EVENTS_TOPIC": "endpoint-events",
            "MNS_GATEWAY_ACCOUNT_ID": "1470000000000000",
            "MNS_GATEWAY_REGION": "cn-hangzhou",
        }
    )
    assert (chosen.breaker_events_topic, chosen.region) == ("endpoint-events", "cn-hangzhou")
    assert settings_from_env({"MNS_GATEWAY_BREAKER_EVENTS_TOPIC": ""}).breaker_events_topic == ""
    assert settings_from_env({"MNS_GATEWAY_REGION": ""}).region_set is False


# Unknown names ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("variable", "closest"),
    [
        ("MNS_GATEWAY_PROT", "MNS_GATEWAY_PORT"),
        ("MNS_GATEWAY_LEASE_SECOND", "MNS_GATEWAY_LEASE_SECONDS"),
        ("MNS_GATEWAY_BREAKER_COOLDOWN", "MNS_GATEWAY_BREAKER_COOL_DOWN"),
        ("MNS_GATEWAY_ACCESS_KEY", "MNS_GATEWAY_ACCESS_KEYS"),
    ],
)
def test_a_misspelled_name_is_refused_with_the_closest_known_one(
    variable: str, closest: str
) -> None:
    with pytest.raises(SettingsError) as refused:
        settings_from_env({variable: "8090"})
    assert str(refused.value) == (
        f"{variable} is not a setting of mns-gateway: did you mean {closest}?"
    )


def test_a_name_like_none_is_refused_all_the_same() -> None:
    with pytest.raises(SettingsError, match=r"^MNS_GATEWAY_XYZZY is not a setting of mns-gateway"):
        settings_from_env({"MNS_GATEWAY_XYZZY": "1"})


def test_kubernetes_service_links_are_not_misspellings() -> None:
    """A Service named mns-gateway (or mns-gateway-postgresql) gives every pod of its namespace
    these; the chart's own MNS_GATEWAY_PORT wins over the link of that name."""
    links = {
        "MNS_GATEWAY_SERVICE_HOST": "10.0.0.7",
        "MNS_GATEWAY_SERVICE_PORT": "8080",
        "MNS_GATEWAY_SERVICE_PORT_HTTP": "8080",
        "MNS_GATEWAY_PORT_8080_TCP": "tcp://10.0.0.7:8080",
        "MNS_GATEWAY_PORT_8080_TCP_PROTO": "tcp",
        "MNS_GATEWAY_PORT_8080_TCP_PORT": "8080",
        "MNS_GATEWAY_PORT_8080_TCP_ADDR": "10.0.0.7",
        "MNS_GATEWAY_POSTGRESQL_PORT": "tcp://10.0.0.8:5432",
        "MNS_GATEWAY_POSTGRESQL_SERVICE_HOST": "10.0.0.8",
    }
    assert settings_from_env(links).port == 8080


def test_every_variable_read_is_known_and_nothing_else() -> None:
    """Known names come from one table, READERS: a setting added there is known, with
    nothing else to keep up to date (the access keys' three variables apart)."""
    assert known_names() == {env_name(name) for name in READERS} | {
        "MNS_GATEWAY_ACCESS_KEY_ID",
        "MNS_GATEWAY_ACCESS_KEY_SECRET",
        "MNS_GATEWAY_ACCESS_KEYS",
    }


def test_the_docs_the_chart_and_the_tests_set_no_unknown_name() -> None:
    """Whatever sets a variable of the prefix must set a setting, or a gateway refuses to start."""
    found: dict[str, set[str]] = {}
    files = [ROOT / "README.md", ROOT / "Dockerfile"]
    for folder, pattern in (("docs", "*.md"), ("helm", "*.*"), ("tests", "*.py"), ("bench", "*.*")):
        files += [path for path in (ROOT / folder).rglob(pattern) if path.is_file()]
    for path in files:
        try:
            text = path.read_text()
        except UnicodeDecodeError:
            continue
        for name in re.findall(r"MNS_GATEWAY_[A-Z0-9_]*[A-Z0-9]\b(?![_*])", text):
            found.setdefault(name, set()).add(str(path.relative_to(ROOT)))
    unknown = {name: paths for name, paths in found.items() if name not in known_names()}
    # This module's own examples, and the test suite's old backends variable, still read.
    unknown.pop("MNS_GATEWAY_TEST_BACKENDS", None)
    here = str(Path(__file__).relative_to(ROOT))
    unknown = {name: paths - {here} for name, paths in unknown.items() if paths - {here}}
    assert not unknown


# Through the commands, as a user meets it --------------------------------------------------


def clean() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith(("MNS_GATEWAY_", "OTEL_"))}


def argv(command: str, data_dir: Path) -> list[str]:
    args = [command, "--data-dir", str(data_dir)]
    if command == "serve":
        args += ["--port", str(free_port())]
    return args


COMMANDS = ["serve", "worker"]
REFUSED = [
    ("MNS_GATEWAY_LEASE_SECONDS", "1e300", "MNS_GATEWAY_LEASE_SECONDS='1e300' is not valid"),
    ("MNS_GATEWAY_BREAKER_COOL_DOWN", "1e300", "MNS_GATEWAY_BREAKER_COOL_DOWN='1e300'"),
    ("MNS_GATEWAY_BREAKER_EVENTS_TOPIC", "bad/name", "must be a topic name"),
    ("MNS_GATEWAY_PROT", "8090", "did you mean MNS_GATEWAY_PORT?"),
    ("OTEL_TRACES_EXPORTER", "zipkin", "use otlp, console or none"),
    ("OTEL_EXPORTER_OTLP_ENDPOINT", "collector:4318", "OTEL_EXPORTER_OTLP_ENDPOINT="),
]


@pytest.fixture(scope="module")
def refusals(tmp_path_factory: pytest.TempPathFactory) -> dict[tuple[str, str], tuple[Done, Path]]:
    """Each command given each of :data:`REFUSED`, with a data dir of its own that must not come
    to exist, all in one child process (tests/support/in_one_process.py)."""
    root = tmp_path_factory.mktemp("refused")
    given = [(command, variable, value) for command in COMMANDS for variable, value, _ in REFUSED]
    data = [root / str(n) / "data" for n in range(len(given))]
    cases = [
        (argv(command, dir_), {variable: value})
        for (command, variable, value), dir_ in zip(given, data, strict=True)
    ]
    done = zip(run_each(cases, clean()), data, strict=True)
    return {(command, variable): d for (command, variable, _), d in zip(given, done, strict=True)}


@pytest.mark.parametrize("command", COMMANDS)
@pytest.mark.parametrize(("variable", "value", "says"), REFUSED)
def test_serve_and_worker_refuse_it_in_one_line(
    refusals: dict[tuple[str, str], tuple[Done, Path]],
    command: str,
    variable: str,
    value: str,
    says: str,
) -> None:
    done, data = refusals[command, variable]
    assert_refused_in_one_line(done, data, command, says)


@pytest.mark.parametrize("command", COMMANDS)
def test_the_script_refuses_it_in_one_line(tmp_path: Path, command: str) -> None:
    """One of the table above through the ``mns-gateway`` script itself."""
    done = subprocess.run(
        [str(ENTRY_POINT), *argv(command, tmp_path / "data")],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env={**clean(), "MNS_GATEWAY_PROT": "8090"},
    )
    assert_refused_in_one_line(done, tmp_path / "data", command, "did you mean MNS_GATEWAY_PORT?")


def assert_refused_in_one_line(
    done: Done | subprocess.CompletedProcess[str], data: Path, command: str, says: str
) -> None:
    assert done.returncode == 1, (done.returncode, done.stdout, done.stderr)
    assert done.stderr.startswith(f"mns-gateway {command}: ")
    assert len(done.stderr.splitlines()) == 1, done.stderr
    assert says in done.stderr
    assert done.stdout == ""
    assert not data.exists()  # nothing written
