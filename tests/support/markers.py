"""Markers for what a test needs, applied at collection from what the test uses.

A test needs a ``process`` when it, a helper it calls, or a fixture it uses (directly or through
other fixtures) starts one: ``subprocess``, a gateway (``start_gateway``, ``GatewayProcess``,
``EmbeddedGateway``), a private network. It needs ``postgresql`` when it runs on that backend (a
``postgresql`` parameter) or starts a server; ``spark`` when it uses the ``spark`` fixture;
``browser`` when it drives Chromium; ``node`` when it uses the ``node_packages`` fixture (the
Node.js SDKs); ``helm`` when it is one of tests/helm (the chart, rendered by libhelm).
Reading the code once, at collection, keeps the markers true as tests change, where
hand-written marks on hundreds of tests would drift. ``php`` and ``fuzz`` are written on
their modules by hand.

The inner loop (docs/testing.md) is everything that needs none of these.
"""

from __future__ import annotations

import inspect
import subprocess
import types
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

import pytest

from gateway.testing.embedded import EmbeddedGateway
from gateway.testing.process import GatewayProcess

HELM_TESTS = Path(__file__).resolve().parents[1] / "helm"
#: Where the code worth reading lives: the suite itself and the shipped pytest plugin.
_OURS = ("tests", "gateway.testing")


def _sentinel_needs(value: Any) -> set[str]:
    """What using this object (a global name a function refers to) needs, by itself."""
    if value is subprocess or value is EmbeddedGateway:
        return {"process"}
    if isinstance(value, type) and issubclass(value, GatewayProcess):
        return {"process"}
    if isinstance(value, types.ModuleType) and value.__name__.startswith("selenium"):
        return {"browser"}
    name = getattr(value, "__qualname__", "")
    module = getattr(value, "__module__", "") or ""
    if module == "tests.postgres" and name in {"postgres_server", "PostgresServer"}:
        return {"postgresql", "process"}
    if module.startswith("tests.netns") or (module == "tests.chromium" and name == "chromium"):
        return {"process", "browser"} if name == "chromium" else {"process"}
    return set()


def _codes(code: types.CodeType) -> Iterator[types.CodeType]:
    """A code object and those nested in it (closures, comprehensions, inner functions)."""
    yield code
    for constant in code.co_consts:
        if isinstance(constant, types.CodeType):
            yield from _codes(constant)


class _Reader:
    """What functions need, following the names they use into the suite's own code."""

    def __init__(self) -> None:
        self._cache: dict[int, set[str]] = {}

    def needs(self, function: Callable[..., Any]) -> set[str]:
        function = inspect.unwrap(function)
        code = getattr(function, "__code__", None)
        if code is None or not (getattr(function, "__module__", "") or "").startswith(_OURS):
            return set()
        if id(code) in self._cache:
            return self._cache[id(code)]
        found: set[str] = set()
        self._cache[id(code)] = found  # recursion guard: a cycle adds nothing new
        namespace = getattr(function, "__globals__", {})
        for nested in _codes(code):
            for name in nested.co_names:
                if name in namespace:
                    found |= self._value_needs(namespace[name])
        return found

    def _value_needs(self, value: Any) -> set[str]:
        needs = _sentinel_needs(value)
        if isinstance(value, types.FunctionType):
            needs |= self.needs(value)
        elif isinstance(value, type) and value.__module__.startswith(_OURS):
            for member in vars(value).values():
                if isinstance(member, (staticmethod, classmethod)):
                    member = member.__func__
                if isinstance(member, types.FunctionType):
                    needs |= self.needs(member)
        return needs


def _item_needs(item: pytest.Item, reader: _Reader) -> set[str]:
    needs: set[str] = set()
    if isinstance(item, pytest.Function):
        needs |= reader.needs(item.obj)
        # pytest has no public reader of a test's fixture definitions.
        info = item._fixtureinfo
        for definitions in info.name2fixturedefs.values():
            for definition in definitions:
                needs |= reader.needs(definition.func)
        callspec = getattr(item, "callspec", None)
        if callspec is not None and "postgresql" in _strings(callspec.params.values()):
            needs |= {"postgresql", "process"}
    fixtures = set(getattr(item, "fixturenames", ()))
    if "postgres" in fixtures:
        needs |= {"postgresql", "process"}
    if "spark" in fixtures:
        needs.add("spark")
    if "node_packages" in fixtures:
        needs |= {"node", "process"}
    if item.path.is_relative_to(HELM_TESTS):
        needs.add("helm")
    return needs


def _strings(values: Iterable[object]) -> set[str]:
    return {value for value in values if isinstance(value, str)}


_reader = _Reader()


def mark(item: pytest.Item) -> None:
    for need in sorted(_item_needs(item, _reader)):
        item.add_marker(need)
