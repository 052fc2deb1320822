"""The PostgreSQL connection's placeholders (gateway/store/backends/postgres.py): a store
statement's ``?``s become ``$1``, ``$2``, … and nothing else in it changes."""

from __future__ import annotations

from gateway.store.backends.postgres import translate


def test_each_question_mark_becomes_the_next_numbered_placeholder() -> None:
    assert translate("SELECT 1") == "SELECT 1"
    assert translate("SELECT ?") == "SELECT $1"
    assert (
        translate("UPDATE t SET a = ?, b = ? WHERE c IN (?, ?) AND d LIKE 'x%'")
        == "UPDATE t SET a = $1, b = $2 WHERE c IN ($3, $4) AND d LIKE 'x%'"
    )
    assert translate("SELECT * FROM unnest(?::text[])") == "SELECT * FROM unnest($1::text[])"


def test_a_statement_of_many_parameters_is_numbered_through() -> None:
    statement = "INSERT INTO t (a, b) VALUES " + ", ".join(["(?, ?)"] * 40)
    expected = "INSERT INTO t (a, b) VALUES " + ", ".join(
        f"(${2 * i + 1}, ${2 * i + 2})" for i in range(40)
    )
    assert translate(statement) == expected
