"""simsql registry, backfill progress and SQL helper functions

Revision ID: simsql_0001
Revises:
Create Date: 2026-11-21

Written as frozen DDL (no imports from simsql) so that later versions of the library cannot
change what this revision did.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision = "simsql_0001"
down_revision = None
branch_labels = ("simsql",)
depends_on = None


def upgrade() -> None:
    if not op.get_context().as_sql:  # offline (--sql) there is no server to ask
        version = op.get_bind().execute(sa.text("SHOW server_version_num")).scalar_one()
        if int(version) < 140000:
            raise RuntimeError(f"simsql needs PostgreSQL >= 14 (bit_count); server_version_num is {version}")
    op.create_table(
        "simsql_registry",
        sa.Column("table_schema", sa.Text(), primary_key=True),
        sa.Column("table_name", sa.Text(), primary_key=True),
        sa.Column("column_name", sa.Text(), primary_key=True),
        sa.Column("config_id", sa.Text(), nullable=False),
        sa.Column("settings", postgresql.JSONB(), nullable=False),
        sa.Column("source", postgresql.ARRAY(sa.Text()), nullable=False),
        sa.Column("mode", sa.Text(), nullable=False),
        sa.Column("side_table", sa.Text(), nullable=True),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False, server_default=sa.func.now()),
    )
    op.create_table(
        "simsql_backfill",
        sa.Column("table_schema", sa.Text(), primary_key=True),
        sa.Column("table_name", sa.Text(), primary_key=True),
        sa.Column("config_id", sa.Text(), nullable=False),
        sa.Column("phase", sa.Text(), nullable=False),
        sa.Column("last_key", postgresql.JSONB(), nullable=True),
        sa.Column("rows_done", sa.BigInteger(), nullable=False, server_default="0"),
        sa.Column("started_at", sa.DateTime(timezone=True), nullable=False, server_default=sa.func.now()),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False, server_default=sa.func.now()),
    )
    op.execute(
        "CREATE FUNCTION simsql_hamming(a bigint, b bigint) RETURNS integer "
        "LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE "
        "RETURN bit_count(CAST((a # b) AS bit(64)))"
    )


def downgrade() -> None:
    op.execute("DROP FUNCTION IF EXISTS simsql_hamming(bigint, bigint)")
    # IF EXISTS: a table dropped by hand must not make the downgrade impossible.
    op.execute("DROP TABLE IF EXISTS simsql_backfill")
    op.execute("DROP TABLE IF EXISTS simsql_registry")
