"""simsql on Citus (distributed PostgreSQL), issue 24: every feature on distributed tables,
exact, with no setting the user has to know.

The cluster comes from ``SIMSQL_TEST_CITUS_URL`` (``.ci/citus-cluster`` starts a coordinator and
two workers and prints it); without it the Citus tests skip with one line. Each test gets its
own schema on the cluster. Answers are compared with plain PostgreSQL's on the same rows (the
``engine`` fixture's server), so "exact" means "what one PostgreSQL answers".

The last test here is plain PostgreSQL's, found on the way: detaching a side-table attachment
whose schema is not on ``search_path``.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest
from sqlalchemy import Engine, text

import simsql
import simsql.alembic

from .tables import build_live_docs, run


@pytest.fixture
def other_schema(engine: Engine) -> Iterator[str]:
    """A second schema, not on the test engine's ``search_path``."""
    name = f"o_{uuid.uuid4().hex[:12]}"
    run(engine, f'CREATE SCHEMA "{name}"')
    yield name
    run(engine, f'DROP SCHEMA "{name}" CASCADE')


def test_detach_of_a_side_table_in_a_schema_off_the_search_path(engine: Engine, other_schema: str) -> None:
    simsql.alembic.upgrade(engine)
    run(engine, f'CREATE TABLE "{other_schema}".docs (id INT PRIMARY KEY, title TEXT, body TEXT)',
        f"INSERT INTO \"{other_schema}\".docs VALUES (1, 'a', 'the quick brown fox jumps over the lazy dog')")  # fmt: skip
    simsql.attach_table(engine, "docs", ["title", "body"], schema=other_schema, side_table=True)
    removed = simsql.detach_table(engine, "docs", schema=other_schema)
    assert (removed.table_schema, removed.table_name) == (other_schema, "docs")
    with engine.connect() as connection:
        left = connection.execute(
            text("SELECT relname FROM pg_class WHERE relnamespace = CAST(:s AS regnamespace) ORDER BY 1"), {"s": other_schema}
        ).scalars().all()
    assert left == ["docs", "docs_pkey"]
