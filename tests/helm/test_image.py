"""The container image starts as the chart expects: command, user, port, paths, install.

No Docker engine runs here, so the Dockerfile is read with BuildKit's own parser (the
``dockerfile`` package binds it) and compared with the chart's rendered pods.
"""

from __future__ import annotations

import re
import shlex
import tomllib
from typing import Any

import dockerfile
import pytest

from tests.helm.chart import MATRIX, REPOSITORY, env_of, render_case

COMMANDS = dockerfile.parse_file(str(REPOSITORY / "Dockerfile"))


def final_stage() -> list[dockerfile.Command]:
    starts = [i for i, command in enumerate(COMMANDS) if command.cmd == "FROM"]
    return list(COMMANDS[starts[-1] :])


def instruction(name: str) -> tuple[str, ...]:
    """The value of the last ``name`` instruction of the final stage (the one in force)."""
    (*_, last) = [command for command in final_stage() if command.cmd == name]
    return last.value


def image_env() -> dict[str, str]:
    env: dict[str, str] = {}
    for command in final_stage():
        if command.cmd == "ENV":
            env.update(zip(command.value[::2], command.value[1::2], strict=True))
    return env


def api_container() -> dict[str, Any]:
    deployment = render_case("sqlite").get("Deployment")
    (gateway, *_) = deployment["spec"]["template"]["spec"]["containers"]
    return gateway


def test_the_entrypoint_is_the_gateway_command_the_package_installs() -> None:
    scripts = tomllib.loads((REPOSITORY / "pyproject.toml").read_text())["project"]["scripts"]
    assert instruction("ENTRYPOINT") == ("mns-gateway",)
    assert "mns-gateway" in scripts
    assert image_env()["PATH"].startswith("/opt/mns-gateway/bin:")  # the venv it is installed in


@pytest.mark.parametrize("case", MATRIX)
def test_the_chart_keeps_the_entrypoint_and_passes_a_subcommand(case: str) -> None:
    for _, container in render_case(case).gateway_containers():
        assert "command" not in container  # ENTRYPOINT ["mns-gateway"] runs
        assert container["args"][0] in {"serve", "worker", "migrate"}


def test_the_api_runs_the_images_default_command() -> None:
    assert tuple(api_container()["args"]) == instruction("CMD")


@pytest.mark.parametrize("case", MATRIX)
def test_the_image_user_is_the_pods_user(case: str) -> None:
    user, group = (int(part) for part in instruction("USER")[0].split(":"))
    for workload, spec in render_case(case).pod_specs():
        if any("mns-gateway" in container["image"] for container in spec["containers"]):
            context = spec["securityContext"]
            assert (context["runAsUser"], context["runAsGroup"], context["fsGroup"]) == (
                user,
                group,
                group,
            ), workload["kind"]


def test_the_image_listens_where_the_chart_looks() -> None:
    (port,) = instruction("EXPOSE")
    container = api_container()
    assert container["ports"][0]["containerPort"] == int(port)
    assert env_of(container)["MNS_GATEWAY_PORT"] == port
    healthcheck = " ".join(instruction("HEALTHCHECK"))
    probe = container["livenessProbe"]["httpGet"]
    assert f"http://127.0.0.1:{port}{probe['path']}" in healthcheck


def test_the_data_dir_is_the_same_path_in_the_image_and_the_chart() -> None:
    data_dir = image_env()["MNS_GATEWAY_DATA_DIR"]
    assert instruction("VOLUME") == (data_dir,)
    assert instruction("WORKDIR") == (data_dir,)
    container = api_container()
    assert env_of(container)["MNS_GATEWAY_DATA_DIR"] == data_dir
    mounts = {m["name"]: m["mountPath"] for m in container["volumeMounts"]}
    assert mounts["data"] == data_dir and mounts["tmp"] == "/tmp"


def test_the_image_writes_nothing_outside_data_and_tmp() -> None:
    """The chart's root file system is read-only: no bytecode caches next to the code."""
    assert image_env()["PYTHONDONTWRITEBYTECODE"] == "1"


def readme_install_target() -> str:
    """What the README's start command installs (``.``, or ``.[extras]``)."""
    readme = (REPOSITORY / "README.md").read_text(encoding="utf-8")
    start = next(line for line in readme.splitlines() if "mns-gateway serve" in line)
    words = shlex.split(start)
    install = words.index("install")
    return next(w for w in words[install + 1 :] if not w.startswith("-"))


def test_the_image_installs_the_package_as_the_readme_does() -> None:
    installs = [
        shlex.split(command.value[0])
        for command in COMMANDS
        if command.cmd == "RUN" and re.search(r"\bpip install\b", command.value[0])
    ]
    (words,) = installs
    target = next(w for w in words[words.index("install") + 1 :] if not w.startswith("-"))
    assert target == readme_install_target() == "."  # the base install, no extras
