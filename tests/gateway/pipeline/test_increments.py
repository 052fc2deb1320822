"""Which log partitions an incremental report reads: pure, no Spark."""

from __future__ import annotations

from gateway.pipeline.increments import (
    Settings,
    State,
    homes_to_recompute,
    plan_run,
    total_inputs,
)

SETTINGS = Settings("file:/logs", None, None, "UTC")
HOUR_0 = {"a.jsonl": (100, 1_000), "b.jsonl": (50, 1_001)}
HOUR_1 = {"a.jsonl": (70, 2_000)}


def test_the_first_run_reads_everything() -> None:
    plan = plan_run({"h0": HOUR_0, "h1": HOUR_1}, None, SETTINGS)
    assert (plan.full, plan.read, plan.removed) == (True, ("h0", "h1"), ())


def test_only_new_and_changed_partitions_are_read() -> None:
    previous = State(SETTINGS, {"h0": HOUR_0, "h1": HOUR_1, "gone": HOUR_1})
    grown = {"a.jsonl": (90, 2_500)}
    late = {**HOUR_0, "c.jsonl": (10, 9_000)}  # a late file in an old hour
    plan = plan_run({"h0": late, "h1": grown, "h2": HOUR_1}, previous, SETTINGS)
    assert plan.full is False
    assert plan.read == ("h0", "h1", "h2")
    assert plan.removed == ("gone",)
    assert plan.touched == ("gone", "h0", "h1", "h2")


def test_a_rewritten_file_of_the_same_size_counts_as_changed() -> None:
    previous = State(SETTINGS, {"h0": HOUR_0})
    touched = {**HOUR_0, "a.jsonl": (100, 1_500)}
    assert plan_run({"h0": touched}, previous, SETTINGS).read == ("h0",)
    assert plan_run({"h0": dict(HOUR_0)}, previous, SETTINGS).is_noop


def test_other_settings_start_over() -> None:
    previous = State(SETTINGS, {"h0": HOUR_0})
    for changed in (
        Settings("file:/other", None, None, "UTC"),
        Settings("file:/logs", 5, None, "UTC"),
        Settings("file:/logs", None, None, "Asia/Shanghai"),
        Settings("file:/logs", None, None, "UTC", traces=True),
    ):
        assert plan_run({"h0": HOUR_0}, previous, changed).full


def test_receipt_handles_once_needed_stay_on() -> None:
    needed = Settings("file:/logs", None, None, "UTC", with_handles=True)
    switched_on = plan_run({"h0": HOUR_0}, State(SETTINGS, {"h0": HOUR_0}), needed)
    assert switched_on.full and switched_on.settings.with_handles
    kept = plan_run({"h0": HOUR_0}, State(needed, {"h0": HOUR_0}), SETTINGS)
    assert kept.is_noop and kept.settings.with_handles


def test_state_round_trips_and_rejects_what_it_cannot_read() -> None:
    inputs = {"dt=2024-06-01/hour=03": {"lines": 3, "first_time_ms": 5, "last_time_ms": None}}
    state = State(SETTINGS, {"dt=2024-06-01/hour=03": HOUR_0}, inputs, (60_000,))
    assert State.from_json(state.to_json()) == state
    assert State.from_json("") is None
    assert State.from_json('{"version": 99}') is None
    assert State.from_json('{"version": 1, "logs": "x"}') is None


def test_input_figures_add_up_over_partitions() -> None:
    inputs = {
        "h0": {"lines": 3, "first_time_ms": 20, "last_time_ms": 30},
        "h1": {"lines": 4, "first_time_ms": 10, "last_time_ms": 15},
        "h2": {"lines": 0, "first_time_ms": None, "last_time_ms": None},
    }
    assert total_inputs(inputs) == {"lines": 7, "first_time_ms": 10, "last_time_ms": 30}
    assert total_inputs({}) == {}


def test_homes_recomputed_are_the_partitions_read_and_those_sharing_a_message() -> None:
    previous = State(SETTINGS, {"h0": HOUR_0, "h1": HOUR_1})
    plan = plan_run({"h0": HOUR_0, "h1": HOUR_1, "h2": HOUR_1}, previous, SETTINGS)
    labels = ("h0", "h1", "h2")
    assert homes_to_recompute(plan, labels, (), (60_000,), 60_000) == ("h2",)
    assert homes_to_recompute(plan, labels, ("h1", "h2"), (60_000,), 60_000) == ("h1", "h2")
    # Kept timeline buckets of 1 minute sum up into 5-minute ones, not into 90-second ones.
    assert homes_to_recompute(plan, labels, (), (60_000,), 300_000) == ("h2",)
    assert homes_to_recompute(plan, labels, (), (60_000,), 90_000) is None
    assert homes_to_recompute(plan, labels, (), (), 60_000) is None


def test_removed_partitions_are_only_dropped_and_full_runs_recompute_everything() -> None:
    previous = State(SETTINGS, {"h0": HOUR_0, "h1": HOUR_1})
    removed = plan_run({"h1": HOUR_1}, previous, SETTINGS)
    assert homes_to_recompute(removed, ("h1",), ("h1",), (60_000,), 60_000) == ("h1",)
    assert homes_to_recompute(removed, ("h1",), (), (60_000,), 60_000) == ()
    full = plan_run({"h1": HOUR_1}, None, SETTINGS)
    assert homes_to_recompute(full, ("h1",), (), (60_000,), 60_000) is None
