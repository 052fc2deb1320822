"""gevent's patching with the entry points read once: the same answers, and the function given
back however the block ends."""

from __future__ import annotations

from importlib import metadata

import pytest

from gateway.serving.patching import entry_points_read_once

GROUPS = ("console_scripts", "pytest11", "gevent.plugins.monkey.will_patch_all", "none.such")


def test_each_group_gets_the_entry_points_it_got_before() -> None:
    expected = {group: sorted(metadata.entry_points(group=group)) for group in GROUPS}
    with entry_points_read_once():
        found = {group: sorted(metadata.entry_points(group=group)) for group in GROUPS}
        by_name = metadata.entry_points(group="pytest11", name="mns_gateway")
    assert found == expected
    assert expected["pytest11"]  # this checkout's own plugin: the comparison compared something
    assert [entry.value for entry in by_name] == ["gateway.testing.plugin"]


def test_the_function_is_given_back_after_an_error() -> None:
    read = metadata.entry_points
    with pytest.raises(RuntimeError), entry_points_read_once():
        assert metadata.entry_points is not read
        raise RuntimeError("patching failed")
    assert metadata.entry_points is read


def test_entry_points_are_read_once_inside_the_block(monkeypatch: pytest.MonkeyPatch) -> None:
    """What makes it cheaper: the distributions' metadata is not read again for each look."""
    looked: list[str] = []
    read = metadata.distributions

    def counted(**params: object) -> object:
        looked.append("read")
        return read(**params)

    monkeypatch.setattr(metadata, "distributions", counted)
    with entry_points_read_once():
        for group in GROUPS * 5:
            list(metadata.entry_points(group=group))
    assert looked == ["read"]
    list(metadata.entry_points(group="pytest11"))
    assert looked == ["read", "read"]  # outside the block, every look reads again
