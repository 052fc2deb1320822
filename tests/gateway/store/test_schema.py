"""Opening a data dir brings its schema up to date without touching its data."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from gateway.store.sqlite import SQLiteDatabase


def indexes(path: Path) -> set[str]:
    with sqlite3.connect(path) as connection:
        rows = connection.execute("SELECT name FROM sqlite_master WHERE type = 'index'")
        return {row[0] for row in rows}


def test_an_older_data_dir_loses_the_message_id_index_and_keeps_its_deliveries(
    tmp_path: Path,
) -> None:
    path = tmp_path / "db.sqlite3"
    SQLiteDatabase(path).close()
    with sqlite3.connect(path) as connection:  # as the previous version left it
        connection.execute("CREATE INDEX deliveries_message ON deliveries (message_id)")
        connection.execute(
            "INSERT INTO deliveries (id, message_id, topic_name, subscription_name,"
            " next_attempt_at, created_at) VALUES ('d', 'm', 't', 's', 1, 1)"
        )
    assert "deliveries_message" in indexes(path)
    database = SQLiteDatabase(path)
    assert database.read(lambda c: c.execute("SELECT id FROM deliveries").fetchall())[0][0] == "d"
    database.close()
    assert "deliveries_message" not in indexes(path)
    assert "deliveries_due" in indexes(path)
