"""A hook that keeps the calls it saw, for the operation tests that check what hooks are told."""

from __future__ import annotations

from gateway.operations import Call, Hook


class Calls(Hook):
    def __init__(self) -> None:
        self.calls: list[Call] = []

    def before(self, call: Call) -> None:
        self.calls.append(call)
