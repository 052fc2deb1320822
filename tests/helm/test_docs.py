"""docs/deploy.md's Helm commands install what they say: each ``helm install`` and ``helm
upgrade`` in its code blocks, with its ``--set`` and ``-f`` arguments, renders and validates."""

from __future__ import annotations

import itertools
import re
import shlex
from typing import Any

import helm_python
import pytest

from tests.helm.chart import CUSTOM_KINDS, KUBERNETES_VERSIONS, REPOSITORY, render, validate

GUIDE = REPOSITORY / "docs" / "deploy.md"


def helm_commands() -> list[list[str]]:
    text = GUIDE.read_text(encoding="utf-8")
    blocks = re.findall(r"```sh\n(.*?)```", text, re.DOTALL)
    lines = "\n".join(blocks).replace("\\\n", " ").splitlines()
    return [shlex.split(line) for line in lines if re.match(r"\s*helm (install|upgrade) ", line)]


def deep_merge(base: dict[str, Any], override: dict[str, Any]) -> dict[str, Any]:
    merged = dict(base)
    for key, value in override.items():
        if isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = deep_merge(merged[key], value)
        else:
            merged[key] = value
    return merged


def values_of(command: list[str]) -> dict[str, Any]:
    """The values ``helm`` would take from the command's ``-f`` files and ``--set`` flags."""
    values: dict[str, Any] = {}
    for flag, argument in itertools.pairwise(command):
        if flag in ("-f", "--values"):
            text = (REPOSITORY / argument).read_text(encoding="utf-8")
            values = deep_merge(values, helm_python.values_from_yaml(text))
        elif flag == "--set":
            values = deep_merge(values, helm_python.parse_set_string(argument))
    return values


def test_the_guide_has_the_trial_the_bundled_trial_production_and_an_upgrade() -> None:
    commands = helm_commands()
    assert [c[1] for c in commands] == ["install", "install", "install", "upgrade"]
    trial = commands[0]
    assert values_of(trial) == {"image": {"repository": "registry.example.com/mns-gateway"}}


@pytest.mark.parametrize("command", helm_commands(), ids=lambda c: " ".join(c[1:3]))
def test_each_helm_command_in_the_guide_deploys_valid_objects(command: list[str]) -> None:
    assert command[2:4] == ["mns", "helm/mns-gateway"]
    rendered = render(values_of(command))
    for manifest in rendered.manifests:
        if manifest["kind"] not in CUSTOM_KINDS:
            validate(manifest, KUBERNETES_VERSIONS[-1])
