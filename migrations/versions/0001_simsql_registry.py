"""simsql registry, backfill progress and SQL helper functions (PostgreSQL, MySQL, MariaDB)

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


# MySQL/MariaDB have neither jsonb, arrays nor unbounded text keys: JSON, and VARCHAR(64) (their
# longest identifier) for the names that form a key. The same tables as simsql.schema.names declares.
_MYSQL = ("mysql", "mariadb")


def _mysql() -> bool:
    return op.get_context().dialect.name in _MYSQL


def _check_server() -> None:
    if op.get_context().as_sql:  # offline (--sql) there is no server to ask
        return
    bind = op.get_bind()
    if _mysql():
        found = tuple(bind.dialect.server_version_info or ())
        mariadb = bool(getattr(bind.dialect, "is_mariadb", False))
        minimum = (10, 6) if mariadb else (8, 0)
        if found[:2] < minimum:
            server = "MariaDB" if mariadb else "MySQL"
            raise RuntimeError(
                f"simsql needs {server} >= {'.'.join(map(str, minimum))}, but the server is {server} {'.'.join(map(str, found))}"
            )
        return
    version = bind.execute(sa.text("SHOW server_version_num")).scalar_one()
    if int(version) < 140000:
        raise RuntimeError(f"simsql needs PostgreSQL >= 14 (bit_count); server_version_num is {version}")


def upgrade() -> None:
    _check_server()
    mysql = _mysql()
    name = sa.String(64) if mysql else sa.Text()
    json_type = sa.JSON() if mysql else postgresql.JSONB()
    op.create_table(
        "simsql_registry",
        sa.Column("table_schema", name, primary_key=True),
        sa.Column("table_name", name, primary_key=True),
        sa.Column("column_name", name, primary_key=True),
        sa.Column("config_id", sa.Text(), nullable=False),
        sa.Column("settings", json_type, nullable=False),
        sa.Column("source", sa.JSON() if mysql else postgresql.ARRAY(sa.Text()), nullable=False),
        sa.Column("mode", sa.Text(), nullable=False),
        sa.Column("side_table", sa.Text(), nullable=True),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False, server_default=sa.func.now()),
    )
    op.create_table(
        "simsql_backfill",
        sa.Column("table_schema", name, primary_key=True),
        sa.Column("table_name", name, primary_key=True),
        sa.Column("config_id", sa.Text(), nullable=False),
        sa.Column("phase", sa.Text(), nullable=False),
        sa.Column("last_key", json_type, nullable=True),
        sa.Column("rows_done", sa.BigInteger(), nullable=False, server_default="0"),
        sa.Column("started_at", sa.DateTime(timezone=True), nullable=False, server_default=sa.func.now()),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False, server_default=sa.func.now()),
    )
    if mysql:  # queries there use BIT_COUNT(a ^ b) directly; no helper function
        return
    op.execute(
        "CREATE FUNCTION simsql_hamming(a bigint, b bigint) RETURNS integer "
        "LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE "
        "RETURN bit_count(CAST((a # b) AS bit(64)))"
    )


def downgrade() -> None:
    if not _mysql():
        op.execute("DROP FUNCTION IF EXISTS simsql_hamming(bigint, bigint)")
    # IF EXISTS: a table dropped by hand must not make the downgrade impossible.
    op.execute("DROP TABLE IF EXISTS simsql_backfill")
    op.execute("DROP TABLE IF EXISTS simsql_registry")
