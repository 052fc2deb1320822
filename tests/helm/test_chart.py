"""Static checks of helm/mns-gateway, so the chart cannot drift from the code it deploys.

There is no helm binary (nor PyYAML) in the test environment, so nothing is rendered: the checks
read the files. Every MNS_GATEWAY_* name the chart, the Dockerfile or the deploy guide uses must
be one that ``settings_from_env`` reads, and every setting it reads must be either passed by the
chart or listed below as deliberately left to ``extraEnv``. Template actions must be balanced,
every ``.Values`` path a template reads must exist in values.yaml, and every included template
must be defined.
"""

from __future__ import annotations

import re
import tomllib
from collections import Counter
from collections.abc import Iterator, Mapping
from pathlib import Path

import pytest

from gateway.config import settings_from_env

REPOSITORY = Path(__file__).resolve().parents[2]
CHART = REPOSITORY / "helm" / "mns-gateway"
TEMPLATES = sorted(path for path in (CHART / "templates").rglob("*") if path.is_file())

#: Settings the chart leaves to ``extraEnv`` on purpose, and why.
NOT_IN_CHART = {
    "MNS_GATEWAY_RETRY_SCALE": "shortens retry schedules for tests; never wanted in production",
    # The chart runs SQLite only until it learns store.type=postgresql (issue 14), which passes
    # these two from store.postgresql.url / existingSecret and its pool settings.
    "MNS_GATEWAY_DATABASE_URL": "the PostgreSQL store; set by the chart's store.postgresql",
    "MNS_GATEWAY_DATABASE_POOL_SIZE": "the PostgreSQL store's connections per process",
}

_ENV_NAME = re.compile(r"\bMNS_GATEWAY_[A-Z0-9_]*[A-Z0-9]")
_ACTION = re.compile(r"\{\{(.*?)\}\}", re.DOTALL)
_BLOCK_OPENERS = frozenset({"if", "range", "with", "define", "block"})
_VALUES_PATH = re.compile(r"(?<![\w$])\$?\.Values((?:\.[A-Za-z_]\w*)+)")
_ALIAS = re.compile(r"\$(\w+)\s*:=\s*(?:\$\w*)?\.Values((?:\.[A-Za-z_]\w*)*)\s*-?\}\}")
_VALUES_KEY = re.compile(r"([A-Za-z_][\w-]*):(?:\s|$)")


class _RecordingEnv(Mapping[str, str]):
    """An empty environment that remembers every variable looked up in it."""

    def __init__(self) -> None:
        self.read: set[str] = set()

    def __getitem__(self, key: str) -> str:
        self.read.add(key)
        raise KeyError(key)

    def __iter__(self) -> Iterator[str]:
        return iter(())

    def __len__(self) -> int:
        return 0


def settings_read_by_the_gateway() -> set[str]:
    env = _RecordingEnv()
    settings_from_env(env)
    return env.read


def chart_text(*extra: Path) -> dict[Path, str]:
    paths = [*TEMPLATES, CHART / "values.yaml", *extra]
    return {path: path.read_text(encoding="utf-8") for path in paths}


def test_every_variable_the_chart_sets_is_read_by_the_gateway() -> None:
    known = settings_read_by_the_gateway()
    assert "MNS_GATEWAY_SMTP_URL" in known  # the recording environment works
    deploy_files = (REPOSITORY / "Dockerfile", REPOSITORY / "docs" / "deploy.md")
    unknown = {
        f"{path.relative_to(REPOSITORY)}: {name}"
        for path, text in chart_text(*deploy_files).items()
        for name in _ENV_NAME.findall(text)
        if name not in known
    }
    assert not unknown, "not read by gateway.config.settings_from_env"


def test_every_setting_the_gateway_reads_is_passed_by_the_chart() -> None:
    helpers = (CHART / "templates" / "_helpers.tpl").read_text(encoding="utf-8")
    passed = set(_ENV_NAME.findall(helpers))
    missing = settings_read_by_the_gateway() - passed - NOT_IN_CHART.keys()
    assert not missing, "pass these in mns-gateway.env, or list them in NOT_IN_CHART with why"


def test_each_variable_is_set_once_per_container() -> None:
    helpers = (CHART / "templates" / "_helpers.tpl").read_text(encoding="utf-8")
    repeated = [name for name, n in Counter(_ENV_NAME.findall(helpers)).items() if n > 1]
    assert not repeated


def _block_errors(text: str) -> Iterator[str]:
    open_blocks: list[str] = []
    for match in _ACTION.finditer(text):
        action = match.group(1).strip("-").strip()
        if action.startswith("/*"):
            if not action.endswith("*/"):
                yield f"unterminated comment at {match.start()}"
            continue
        word = action.split(maxsplit=1)[0] if action else ""
        if word in _BLOCK_OPENERS:
            open_blocks.append(word)
        elif word == "else" and (not open_blocks or open_blocks[-1] == "define"):
            yield f"else outside if/range/with at {match.start()}"
        elif word == "end" and not open_blocks:
            yield f"end without a block at {match.start()}"
        elif word == "end":
            open_blocks.pop()
        if action.count("(") != action.count(")") or action.count('"') % 2:
            yield f"unbalanced parentheses or quotes in {{{{{action}}}}}"
    yield from (f"unclosed {word}" for word in open_blocks)


@pytest.mark.parametrize("template", TEMPLATES, ids=lambda path: path.name)
def test_template_actions_are_balanced(template: Path) -> None:
    text = template.read_text(encoding="utf-8")
    outside = _ACTION.sub("", text)
    assert "{{" not in outside and "}}" not in outside, "a stray action delimiter"
    assert list(_block_errors(text)) == []


def values_paths(text: str) -> set[str]:
    """Key paths of values.yaml's block mappings, e.g. ``.persistence.size``.

    Enough YAML for this file: nested mappings, comments, scalars and lists, whose items'
    keys are not paths.
    """
    paths: set[str] = set()
    stack: list[tuple[int, str]] = []
    list_item_indent: int | None = None
    for line in text.splitlines():
        content = line.strip()
        if not content or content.startswith("#"):
            continue
        indent = len(line) - len(line.lstrip(" "))
        if content.startswith("- "):
            list_item_indent = indent
            continue
        if list_item_indent is not None and indent > list_item_indent:
            continue
        list_item_indent = None
        if key := _VALUES_KEY.match(content):
            stack = [(i, k) for i, k in stack if i < indent] + [(indent, key.group(1))]
            paths.add("." + ".".join(k for _, k in stack))
    return paths


def test_values_the_templates_read_exist() -> None:
    defined = values_paths((CHART / "values.yaml").read_text(encoding="utf-8"))
    assert ".persistence.size" in defined and ".ingress.hosts" in defined
    missing = set()
    for template in TEMPLATES:
        text = template.read_text(encoding="utf-8")
        used = {path for path in _VALUES_PATH.findall(text)}
        for alias, prefix in _ALIAS.findall(text):
            used |= {prefix + path for path in re.findall(rf"\${alias}((?:\.\w+)+)", text)}
        missing |= {f"{template.name}: {path}" for path in used if path not in defined}
    assert not missing


def test_every_included_template_is_defined() -> None:
    text = "\n".join(chart_text().values())
    defined = set(re.findall(r'define\s+"([^"]+)"', text))
    included = set(re.findall(r'(?:include|template)\s+"([^"]+)"', text))
    assert included - defined == set()


def _top_level_scalars(path: Path) -> dict[str, str]:
    pairs = re.findall(r'^([A-Za-z]\w*):[ \t]*"?([^"\n]*)"?$', path.read_text(), re.MULTILINE)
    return dict(pairs)


def test_chart_metadata_follows_the_package_version() -> None:
    chart = _top_level_scalars(CHART / "Chart.yaml")
    project = tomllib.loads((REPOSITORY / "pyproject.toml").read_text())["project"]
    assert (chart["apiVersion"], chart["name"]) == ("v2", "mns-gateway")
    assert chart["appVersion"] == project["version"]
    assert re.fullmatch(r"\d+\.\d+\.\d+", chart["version"])


def test_sqlite_keeps_one_pod_replaced_by_recreate() -> None:
    helpers = (CHART / "templates" / "_helpers.tpl").read_text(encoding="utf-8")
    deployment = (CHART / "templates" / "deployment.yaml").read_text(encoding="utf-8")
    guard = re.search(r"if gt \(int \.Values\.replicaCount\) 1 \}\}\s*\{\{- fail ", helpers)
    assert guard is not None
    assert deployment.startswith('{{- include "mns-gateway.validate" . }}')
    assert re.search(r"strategy:\n\s+type: Recreate\n", deployment)
