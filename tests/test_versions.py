"""Stored data across the algorithm-version bump: version 1 keeps working when named, and the
registry refuses to mix it with the new default (issue 8, deliverable 5)."""

from __future__ import annotations

import pytest
from sqlalchemy import Engine, text

import simsql
import simsql.alembic
import simsql.bits
from simsql import Fingerprinter
from simsql.errors import ConfigMismatch
from simsql.lifecycle import attach as operations

from .test_migrations import build_legacy


def _stored(engine: Engine) -> dict[int, tuple[str | None, str | None, int | None]]:
    with engine.connect() as connection:
        rows = connection.execute(text("SELECT id, title, body, simhash FROM articles ORDER BY id")).all()
    return {r.id: (r.title, r.body, None if r.simhash is None else simsql.bits.to_unsigned(r.simhash)) for r in rows}


def test_a_version_1_table_keeps_its_fingerprints_and_refuses_the_new_default(engine: Engine) -> None:
    build_legacy(engine, rows=40)
    simsql.alembic.upgrade(engine)
    old = Fingerprinter(version=1)
    with engine.begin() as connection:
        operations.add_simhash(connection, "articles", ["title", "body"], fingerprinter=old)
    simsql.backfill(engine, "articles", fingerprinter=old, workers=0)
    stored = _stored(engine)
    for title, body, value in stored.values():
        if body is not None:
            assert value == old.fingerprint(f"{title}\n{body}")
    with pytest.raises(ConfigMismatch, match="sh1-.*sh2-|sh2-.*sh1-"):
        simsql.backfill(engine, "articles", fingerprinter=Fingerprinter(), workers=0)
    # Without a fingerprinter, backfill rebuilds the recorded version 1 configuration.
    with engine.begin() as connection:
        connection.execute(text("UPDATE articles SET simhash = NULL WHERE id <= 5"))
    simsql.backfill(engine, "articles", workers=0)
    assert _stored(engine) == stored
