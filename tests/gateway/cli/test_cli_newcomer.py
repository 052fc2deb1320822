"""``mns-gateway`` as a newcomer meets it on a fresh machine (issue 36 items 4-8 and 11, and
issue 34's store-only commands), through the real ``mns-gateway`` script of this virtualenv in a
subprocess (or ``main()`` where the process is not the point: the tables of refusals run
``main()`` for each case in one child process, tests/support/in_one_process.py, and a few of
their cases through the script).

Every test here failed on 8db9520, as its docstring says.
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
from pathlib import Path
from subprocess import CompletedProcess

import pytest

from tests.gateway.cli.test_cli_first_day import MNS_GATEWAY, run, shell
from tests.support.in_one_process import Done, run_each

# -- issue 34: store-only commands do not import the web app ----------------------------------

#: A command run in-process, then what it imported that a command on the store alone must not:
#: the web app (Flask), the API with the console and control plane, gunicorn, gevent, and the
#: composition root that builds them.
PROBE = """
import sys
from gateway.cli.commands import main
try:
    status = main(sys.argv[1:])
except SystemExit as exit:
    status = exit.code
heavy = sorted(name for name in sys.modules if name.split(".")[0] in {"flask", "werkzeug",
    "jinja2", "gevent", "gunicorn"} or name.startswith(("gateway.api", "gateway.composition")))
print("IMPORTED " + " ".join(heavy), file=sys.stderr)
"""


@pytest.fixture(scope="module")
def migrated(tmp_path_factory: pytest.TempPathFactory) -> Path:
    data = tmp_path_factory.mktemp("store-only") / "data"
    done = run("migrate", "--data-dir", str(data))
    assert done.returncode == 0, done.stderr
    return data


@pytest.mark.parametrize(
    "command",
    [
        ("queues", "list"),
        ("queues", "show", "nothing"),
        ("subscriptions", "show", "t", "s"),
        ("dead-letters", "list"),
        ("keys", "show"),
        ("credentials", "show"),
        ("credentials", "issue", "--ttl", "60"),
        ("inbox", "mail"),
        ("migrate",),
    ],
)
def test_a_store_only_command_does_not_import_the_web_app(
    migrated: Path, command: tuple[str, ...]
) -> None:
    """Failed before: every one of them imported gateway.composition, hence Flask, the API, the
    console and the control plane (0.3 s of a 0.5 s start)."""
    done = subprocess.run(
        [sys.executable, "-c", PROBE, *command, "--data-dir", str(migrated)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env=shell(),
    )
    (line,) = [line for line in done.stderr.splitlines() if line.startswith("IMPORTED")]
    assert line.split()[1:] == [], f"{' '.join(command)} imported {line}"


# -- items 4, 5 and 11: what serve prints, and Ctrl-C --------------------------------------------


def test_serve_prints_where_it_listens_and_ctrl_c_stops_it_cleanly(tmp_path: Path) -> None:
    """Failed before: "listening on" the public URL, not the bound address; no console URL; and
    Ctrl-C (SIGINT to the process group, as a terminal sends it) printed a greenlet traceback
    ending in ``SystemExit: 0``. Ctrl-C stops it (gunicorn's quick shutdown): status 0, no
    traceback."""
    from tests.conftest import start_gateway

    public = "https://mns.example.test"
    gateway = start_gateway(tmp_path / "data", {"MNS_GATEWAY_PUBLIC_URL": public})
    try:
        os.killpg(gateway.process.pid, signal.SIGINT)
        status = gateway.process.wait(timeout=60)
    finally:
        gateway.stop()
    log = gateway.log_file.read_text()  # type: ignore[union-attr]
    assert status == 0
    assert "Traceback" not in log and "SystemExit" not in log, log
    bound = f"http://127.0.0.1:{gateway.port}"
    lines = log.splitlines()
    at = lines.index(f"mns-gateway serve: listening on {bound} (data dir {tmp_path / 'data'})")
    assert lines[at + 1 : at + 3] == [
        f"  public URL: {public} (MNS_GATEWAY_PUBLIC_URL)",
        f"  console:    {public}/console/",
    ]


def test_without_a_public_url_serve_prints_no_second_url() -> None:
    from gateway.cli.serve import addresses
    from gateway.config.settings import Settings

    assert addresses(Settings(host="::1", port=9000, data_dir=Path("d"), console=False)) == [
        "mns-gateway serve: listening on http://[::1]:9000 (data dir d)"
    ]
    assert addresses(Settings(port=9000, data_dir=Path("d")))[1:] == [
        "  console:    http://127.0.0.1:9000/console/"
    ]


# -- item 6: a serve that cannot start changes nothing ------------------------------------------


#: Options ``serve`` must refuse, each with what a user meets it as.
BAD_OPTIONS = [
    ("--port", "99999"),
    ("--port", "0"),
    ("--workers", "0"),
    ("--workers", "-3"),
    ("--threads", "0"),
    ("--port", "http"),
]


def earlier_served_keys(data: Path) -> Path:
    """A data dir served before, as ``credentials show`` would read it."""
    data.mkdir(parents=True)
    served = data / "served-keys.json"
    served.write_text('{"Url": "http://127.0.0.1:8080", "AccessKeyIds": ["earlier"]}')
    return data


@pytest.fixture(scope="module")
def refused_options(
    tmp_path_factory: pytest.TempPathFactory,
) -> dict[tuple[str, str], tuple[Done, Path]]:
    """Each of :data:`BAD_OPTIONS` given to ``serve`` on a data dir of its own, all in one
    child process (tests/support/in_one_process.py)."""
    root = tmp_path_factory.mktemp("bad-options")
    data = [earlier_served_keys(root / str(n)) for n in range(len(BAD_OPTIONS))]
    cases = [
        (["serve", option, value, "--data-dir", str(dir_)], {})
        for dir_, (option, value) in zip(data, BAD_OPTIONS, strict=True)
    ]
    return dict(zip(BAD_OPTIONS, zip(run_each(cases, shell()), data, strict=True), strict=True))


@pytest.mark.parametrize(("option", "value"), BAD_OPTIONS)
def test_serve_refuses_a_bad_option_before_writing_anything(
    refused_options: dict[tuple[str, str], tuple[Done, Path]], option: str, value: str
) -> None:
    """Failed before: ``--port 99999`` was "unexpected OverflowError", ``--workers -3`` gunicorn's
    own error, ``--workers 0`` started with no worker; each after "listening" was printed and
    served-keys.json rewritten (``credentials show`` then checked a gateway not there)."""
    done, data = refused_options[option, value]
    assert_refused_before_writing(done, data, option, value)


def test_the_script_refuses_a_bad_option_before_writing_anything(tmp_path: Path) -> None:
    """One of the table above through the ``mns-gateway`` script itself."""
    data = earlier_served_keys(tmp_path / "data")
    assert_refused_before_writing(
        run("serve", "--workers", "0", "--data-dir", str(data)), data, "--workers", "0"
    )


def assert_refused_before_writing(
    done: Done | CompletedProcess[str], data: Path, option: str, value: str
) -> None:
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.startswith("usage: mns-gateway serve ")
    assert done.stderr.splitlines()[-1].startswith(
        f"mns-gateway serve: error: argument {option}: {value!r} is not valid: "
    )
    assert sorted(path.name for path in data.iterdir()) == ["served-keys.json"]
    assert "earlier" in (data / "served-keys.json").read_text()


# -- item 7: every setting checked before anything starts -----------------------------------------

#: Bad values of every setting ``serve`` reads, each with the variable its one line must name.
BAD_SETTINGS: list[tuple[dict[str, str], str]] = [
    ({"DATABASE_URL": "mysql://db/mns"}, "MNS_GATEWAY_DATABASE_URL"),
    ({"DATABASE_POOL_SIZE": "0"}, "MNS_GATEWAY_DATABASE_POOL_SIZE"),
    ({"DATABASE_POOL_SIZE": "ten"}, "MNS_GATEWAY_DATABASE_POOL_SIZE"),
    ({"DATABASE_TIMEOUT": "0"}, "MNS_GATEWAY_DATABASE_TIMEOUT"),
    ({"DATABASE_TIMEOUT": "inf"}, "MNS_GATEWAY_DATABASE_TIMEOUT"),
    ({"HOST": " "}, "MNS_GATEWAY_HOST"),
    ({"PORT": "99999"}, "MNS_GATEWAY_PORT"),
    ({"PORT": "0"}, "MNS_GATEWAY_PORT"),
    ({"ACCOUNT_ID": ""}, "MNS_GATEWAY_ACCOUNT_ID"),
    ({"PUBLIC_URL": "localhost:8080"}, "MNS_GATEWAY_PUBLIC_URL"),
    ({"PUBLIC_URL": "ftp://mns.example.test"}, "MNS_GATEWAY_PUBLIC_URL"),
    ({"RETRY_SCALE": "-1"}, "MNS_GATEWAY_RETRY_SCALE"),
    ({"RETRY_SCALE": "nan"}, "MNS_GATEWAY_RETRY_SCALE"),
    ({"MAX_BODY_BYTES": "0"}, "MNS_GATEWAY_MAX_BODY_BYTES"),
    ({"SQLITE_SYNCHRONOUS": "SOMETIMES"}, "MNS_GATEWAY_SQLITE_SYNCHRONOUS"),
    ({"WORKERS": "0"}, "MNS_GATEWAY_WORKERS"),
    ({"BREAKER": "maybe"}, "MNS_GATEWAY_BREAKER"),
    ({"BREAKER_FAILURE_RATE": "1.5"}, "MNS_GATEWAY_BREAKER_FAILURE_RATE"),
    ({"BREAKER_MIN_ATTEMPTS": "0"}, "MNS_GATEWAY_BREAKER_MIN_ATTEMPTS"),
    ({"BREAKER_WINDOW": "0"}, "MNS_GATEWAY_BREAKER_WINDOW"),
    ({"BREAKER_COOL_DOWN": "-1"}, "MNS_GATEWAY_BREAKER_COOL_DOWN"),
    ({"BREAKER_MAX_COOL_DOWN": "inf"}, "MNS_GATEWAY_BREAKER_MAX_COOL_DOWN"),
    ({"WORKERS": "-3"}, "MNS_GATEWAY_WORKERS"),
    ({"THREADS": "0"}, "MNS_GATEWAY_THREADS"),
    ({"WORKER_CLASS": "eventlet"}, "MNS_GATEWAY_WORKER_CLASS"),
    ({"WORKER_CLASS": ""}, "MNS_GATEWAY_WORKER_CLASS"),
    ({"DELIVERY_THREADS": "-5"}, "MNS_GATEWAY_DELIVERY_THREADS"),
    ({"MAX_PUSHES_PER_ROUTE": "0"}, "MNS_GATEWAY_MAX_PUSHES_PER_ROUTE"),
    ({"LEASE_SECONDS": "0"}, "MNS_GATEWAY_LEASE_SECONDS"),
    ({"EGRESS_ALLOW": "notacidr"}, "MNS_GATEWAY_EGRESS_ALLOW"),
    ({"EGRESS_DENY": "10.0.0.0/33"}, "MNS_GATEWAY_EGRESS_DENY"),
    ({"PUSH_TIMEOUT": "0"}, "MNS_GATEWAY_PUSH_TIMEOUT"),
    ({"LOG_DIR": "/dev/null"}, "MNS_GATEWAY_LOG_DIR"),
    ({"LOG_DIR": "/dev/null/mns-logs"}, "MNS_GATEWAY_LOG_DIR"),
    ({"SIGNING_KEY_FILE": "/nonexistent/key.pem"}, "MNS_GATEWAY_SIGNING_KEY_FILE"),
    ({"SIGNING_CERT_FILE": "/nonexistent/cert.pem"}, "MNS_GATEWAY_SIGNING_CERT_FILE"),
    ({"PUSH_PROXY": "socks5://proxy:1080"}, "MNS_GATEWAY_PUSH_PROXY"),
    ({"PUSH_NO_PROXY": "10.0.0.0/33"}, "MNS_GATEWAY_PUSH_NO_PROXY"),
    ({"PUSH_CA_FILE": "/nonexistent/ca.pem"}, "MNS_GATEWAY_PUSH_CA_FILE"),
    ({"PUSH_CLIENT_CERT": "/nonexistent/client.pem"}, "MNS_GATEWAY_PUSH_CLIENT_CERT"),
    ({"PUSH_CLIENT_KEY": "/nonexistent/client.key"}, "MNS_GATEWAY_PUSH_CLIENT_KEY"),
    ({"HISTORY_RETENTION": "59"}, "MNS_GATEWAY_HISTORY_RETENTION"),
    ({"LOG_RETENTION": "60"}, "MNS_GATEWAY_LOG_RETENTION"),
    ({"MAX_WAITERS": "-1"}, "MNS_GATEWAY_MAX_WAITERS"),
    ({"LONG_POLL_RECHECK": "31"}, "MNS_GATEWAY_LONG_POLL_RECHECK"),
    ({"MAX_QUEUES": "0"}, "MNS_GATEWAY_MAX_QUEUES"),
    ({"HEADER_TIMEOUT": "0"}, "MNS_GATEWAY_HEADER_TIMEOUT"),
    ({"MAX_CONNECTIONS": "0"}, "MNS_GATEWAY_MAX_CONNECTIONS"),
    ({"SMTP_URL": "http://mail.example.test"}, "MNS_GATEWAY_SMTP_URL"),
    ({"INBOX": "maybe"}, "MNS_GATEWAY_INBOX"),
    ({"SMS_PROVIDER": "carrier-pigeon"}, "MNS_GATEWAY_SMS_PROVIDER"),
    ({"SMS_ENDPOINT": "dysmsapi"}, "MNS_GATEWAY_SMS_ENDPOINT"),
    ({"SMS_PROVIDER": "aliyun"}, "MNS_GATEWAY_SMS_ACCESS_KEY_ID"),
    ({"SMS_PROVIDER": "aliyun", "SMS_ACCESS_KEY_ID": "k"}, "MNS_GATEWAY_SMS_ACCESS_KEY_SECRET"),
    ({"SMS_PROVIDER": "webhook"}, "MNS_GATEWAY_SMS_WEBHOOK_URL"),
    ({"SMS_WEBHOOK_URL": "sms.example.test/send"}, "MNS_GATEWAY_SMS_WEBHOOK_URL"),
    ({"QUEUE_BRIDGES": "{not json"}, "MNS_GATEWAY_QUEUE_BRIDGES"),
    ({"QUEUE_BRIDGES": '{"cn-hangzhou:1": {}}'}, "MNS_GATEWAY_QUEUE_BRIDGES"),
    ({"GRACEFUL_TIMEOUT": "-1"}, "MNS_GATEWAY_GRACEFUL_TIMEOUT"),
    ({"CONSOLE": "maybe"}, "MNS_GATEWAY_CONSOLE"),
    ({"ACCESS_KEY_ID": "my-key"}, "MNS_GATEWAY_ACCESS_KEY_SECRET"),
    ({"ACCESS_KEY_SECRET": "my-secret"}, "MNS_GATEWAY_ACCESS_KEY_ID"),
    ({"ACCESS_KEYS": "no-colon"}, "MNS_GATEWAY_ACCESS_KEYS"),
]

#: Settings any value of is usable (a name, a list of ids; the data dir's own checks are
#: tests/gateway/test_cli_errors.py's), or which
#: ``serve`` does not read (the worker's probe address: ``mns-gateway worker`` checks it).
ANY_VALUE = {
    "data_dir",
    "admin_access_keys",
    "mail_from",
    "sms_access_key_secret",
    "sms_webhook_secret",
    "worker_probes",
    # Blank is unset: any region in a V4 scope (docs/protocol.md#signature-v4).
    "region",
    # A topic of the gateway's own; one that does not exist publishes nothing (docs/delivery.md).
    "breaker_events_topic",
}


def test_the_table_covers_every_setting() -> None:
    from gateway.config.settings import READERS, env_name

    named = {variable for env, variable in BAD_SETTINGS} | {
        f"MNS_GATEWAY_{name}" for env, _ in BAD_SETTINGS for name in env
    }
    missing = [name for name in READERS if name not in ANY_VALUE and env_name(name) not in named]
    assert missing == []


def as_variables(env: dict[str, str]) -> dict[str, str]:
    return {f"MNS_GATEWAY_{name}": value for name, value in env.items()}


@pytest.fixture(scope="module")
def refused_settings(tmp_path_factory: pytest.TempPathFactory) -> list[tuple[Done, Path]]:
    """``serve`` given each of :data:`BAD_SETTINGS`, with a data dir of its own that must not
    come to exist, all in one child process (tests/support/in_one_process.py)."""
    from gateway.testing.process import free_port

    root = tmp_path_factory.mktemp("bad-settings")
    data = [root / str(n) / "data" for n in range(len(BAD_SETTINGS))]
    cases = [
        (["serve", "--port", str(free_port()), "--data-dir", str(dir_)], as_variables(env))
        for dir_, (env, _) in zip(data, BAD_SETTINGS, strict=True)
    ]
    return list(zip(run_each(cases, shell()), data, strict=True))


@pytest.mark.parametrize(
    ("case", "variable"),
    list(enumerate(variable for _, variable in BAD_SETTINGS)),
    ids=[str(env) for env, _ in BAD_SETTINGS],
)
def test_serve_refuses_a_bad_setting_in_one_line_before_anything_starts(
    refused_settings: list[tuple[Done, Path]], case: int, variable: str
) -> None:
    """Failed before: ``EGRESS_ALLOW=notacidr`` printed "listening", a 35-line traceback and
    "Worker failed to boot"; ``WORKER_CLASS=eventlet`` a gunicorn traceback; ``RETRY_SCALE=-1``,
    ``DELIVERY_THREADS=-5``, ``PUSH_TIMEOUT=0`` and others were accepted silently (the gateway
    started: stopped here after 20 s); ``ACCESS_KEY_ID`` without ``_SECRET`` was ignored and a
    random pair generated."""
    done, data = refused_settings[case]
    assert_refused_in_one_line(done, data, variable)


#: Through the script itself: a value read as a setting, one only the checks before forking
#: find (a CIDR for the egress rules, a gunicorn worker class, a file), and a pair half given.
THROUGH_THE_SCRIPT = [
    ({"RETRY_SCALE": "-1"}, "MNS_GATEWAY_RETRY_SCALE"),
    ({"EGRESS_ALLOW": "notacidr"}, "MNS_GATEWAY_EGRESS_ALLOW"),
    ({"WORKER_CLASS": "eventlet"}, "MNS_GATEWAY_WORKER_CLASS"),
    ({"SIGNING_KEY_FILE": "/nonexistent/key.pem"}, "MNS_GATEWAY_SIGNING_KEY_FILE"),
    ({"ACCESS_KEY_ID": "my-key"}, "MNS_GATEWAY_ACCESS_KEY_SECRET"),
]


@pytest.mark.parametrize(("env", "variable"), THROUGH_THE_SCRIPT, ids=lambda v: str(v))
def test_the_script_refuses_a_bad_setting_in_one_line_before_anything_starts(
    tmp_path: Path, env: dict[str, str], variable: str
) -> None:
    from gateway.testing.process import free_port

    assert (env, variable) in BAD_SETTINGS
    data = tmp_path / "data"
    command = [str(MNS_GATEWAY), "serve", "--port", str(free_port()), "--data-dir", str(data)]
    with subprocess.Popen(
        command,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**shell(), **as_variables(env)},
        start_new_session=True,  # its own process group: a gateway that started is stopped whole
    ) as process:
        try:
            out, err = process.communicate(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            out, err = process.communicate()
    assert_refused_in_one_line(Done(process.returncode, out, err), data, variable)


def assert_refused_in_one_line(done: Done, data: Path, variable: str) -> None:
    assert done.returncode == 1 and done.stdout == "", done.stderr
    (line,) = done.stderr.splitlines()
    assert line.startswith("mns-gateway serve: ") and variable in line, line
    assert not data.exists()


# -- item 11: the CLI's rough edges -------------------------------------------------------------


LIMITS = ["0", "1001", "-1", "ten"]
LISTINGS = [("dead-letters",), ("admin", "dead-letters")]


@pytest.fixture(scope="module")
def limits_refused() -> dict[tuple[tuple[str, ...], str], Done]:
    """Each listing given each limit out of range, all in one child process."""
    cases = [(command, limit) for command in LISTINGS for limit in LIMITS]
    done = run_each(
        [([*command, "list", "--limit", limit], {}) for command, limit in cases], shell()
    )
    return dict(zip(cases, done, strict=True))


@pytest.mark.parametrize("limit", LIMITS)
@pytest.mark.parametrize("command", LISTINGS)
def test_a_dead_letter_limit_out_of_range_is_a_usage_error(
    limits_refused: dict[tuple[tuple[str, ...], str], Done], command: tuple[str, ...], limit: str
) -> None:
    """Failed before: ``--limit 0`` said "no dead letters" and offered a marker while one
    existed (the help says 1 to 1000)."""
    done = limits_refused[command, limit]
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.startswith(f"usage: mns-gateway {' '.join(command)} ")
    assert done.stderr.splitlines()[-1] == (
        f"mns-gateway {' '.join(command)}: error: argument --limit: {limit!r} is not a number "
        "from 1 to 1000"
    )


@pytest.mark.parametrize("action", ["create", "set", "show", "delete"])
def test_a_queue_action_without_a_name_is_a_usage_error(migrated: Path, action: str) -> None:
    """Failed before: ``queues create`` without a name exited 1 with no usage line, where other
    missing arguments exit 2 with one."""
    done = run("queues", action, "--data-dir", str(migrated))
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.startswith("usage: mns-gateway queues ")
    assert done.stderr.splitlines()[-1] == f"mns-gateway queues: error: {action} needs a queue name"


def test_the_readme_lists_every_command_and_action() -> None:
    """Failed before: the README listed neither ``queues show``, ``keys show`` nor
    ``subscriptions show``."""
    import re

    from gateway.cli.commands import parser as cli_parser
    from tests.readme import README

    text = README.read_text(encoding="utf-8")
    missing = []
    for name, command in _choices(cli_parser()).items():
        actions = _choices(command) or {
            choice: command
            for action in command._actions
            if action.dest == "action" and action.choices
            for choice in action.choices
        }
        for action in actions or [""]:
            said = rf"mns-gateway {name} (\S+\|)?{action}\b" if action else rf"mns-gateway {name}\b"
            if name != "admin" and not re.search(said, text):
                missing.append(f"{name} {action}".strip())
    assert missing == []


def _choices(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def test_ctrl_c_in_a_command_is_its_exit_status_without_a_traceback(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Failed before: a KeyboardInterrupt went through ``run_command`` as a traceback."""
    from gateway.cli.commands import run_command

    def interrupted() -> int:
        raise KeyboardInterrupt

    try:
        status = run_command("queues", interrupted)
    except KeyboardInterrupt:  # raised on, it would stop the whole test session
        pytest.fail("Ctrl-C went through run_command")
    assert status == 130
    assert capsys.readouterr() == ("", "")


# -- item 8: the key warning does not blame the README's own path ------------------------------


def test_a_change_from_keys_someone_set_still_says_to_set_them_as_before() -> None:
    """The contrast to test_cli_first_day's note: keys that were configured, not generated."""
    from gateway.auth.served_keys import ServedKeys, changed_keys_warning

    previous = ServedKeys("http://127.0.0.1:8080", ("team-key",))
    line = changed_keys_warning(previous, ["LTAI0123"], {"LTAI0123": "secret"})
    assert line.startswith("warning: this data dir was last served with access key team-key,")
    assert line.endswith("set MNS_GATEWAY_ACCESS_KEY_ID and _SECRET as before to keep them")
    generated = changed_keys_warning(
        ServedKeys("http://127.0.0.1:8080", ("LTAI0123",)), ["my-key"], {"LTAI0123": "secret"}
    )
    assert generated.startswith("note: this data dir was last served with its generated access")
    assert "as before" not in generated
