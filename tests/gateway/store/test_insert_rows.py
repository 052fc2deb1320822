"""``insert_rows`` (gateway/store/sql/connection.py), on each backend: a batch of rows of any
size in one multi-row INSERT (a few past its chunk size), NULLs, every kind of text, and a
conflict clause applied row by row."""

from __future__ import annotations

from gateway.store.sql.connection import Connection, insert_rows
from tests.conftest import OpenDatabase

INTO = "batch (name, at, code, latency, note)"


def make_table(conn: Connection) -> None:
    conn.execute(
        "CREATE TABLE batch (name TEXT PRIMARY KEY, at BIGINT NOT NULL, code INTEGER,"
        " latency DOUBLE PRECISION, note TEXT)"
    )


def rows_of(conn: Connection) -> list[tuple[object, ...]]:
    found = conn.execute("SELECT name, at, code, latency, note FROM batch ORDER BY name")
    return [(r["name"], r["at"], r["code"], r["latency"], r["note"]) for r in found]


def test_rows_of_every_size_with_nulls_large_numbers_and_any_text_arrive_as_given(
    open_database: OpenDatabase,
) -> None:
    database = open_database()
    database.write(make_table)
    one = [("a", 2**40, None, None, None)]
    # Placeholders' look-alikes in the values are values: "?", "$1", "%s", "%%".
    three = [
        ("b", 1, 200, 1.5, "é ☃ 'quoted' \\ %s %% ? $1"),
        ("c", 2, None, 0.25, None),
        ("d", 3, 503, None, ""),
    ]
    many = [(f"m{i:04d}", i, i % 7 or None, i / 8, f"row {i}") for i in range(1_100)]
    database.write(lambda c: insert_rows(c, INTO, one))
    database.write(lambda c: insert_rows(c, INTO, three))
    database.write(lambda c: insert_rows(c, INTO, many))  # three statements of at most 500
    assert database.read(rows_of) == one + three + many


def test_a_conflict_clause_applies_to_each_row(open_database: OpenDatabase) -> None:
    database = open_database()
    database.write(make_table)
    database.write(lambda c: insert_rows(c, INTO, [("a", 1, None, None, "first")]))
    again = [("a", 2, None, None, "second"), ("b", 3, None, None, "new")]
    database.write(lambda c: insert_rows(c, INTO, again, on_conflict="ON CONFLICT DO NOTHING"))
    assert [(r[0], r[4]) for r in database.read(rows_of)] == [("a", "first"), ("b", "new")]
