"""simsql partition lists: their generations and centres (issue 34)

Revision ID: simsql_0002
Revises: simsql_0001
Create Date: 2026-11-28

Frozen DDL, like simsql_0001: the same tables as simsql.schema.names declares today.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import mysql as mysql_types
from sqlalchemy.dialects import postgresql

revision = "simsql_0002"
down_revision = "simsql_0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    mysql = op.get_context().dialect.name in ("mysql", "mariadb")
    name = sa.String(64) if mysql else sa.Text()
    op.create_table(
        "simsql_partitions",
        sa.Column("table_schema", name, primary_key=True),
        sa.Column("table_name", name, primary_key=True),
        sa.Column("generation", sa.Integer(), primary_key=True, autoincrement=False),
        sa.Column("state", sa.String(16), nullable=False),
        sa.Column("kind", sa.String(16), nullable=False),
        sa.Column("lists", sa.Integer(), nullable=False),
        sa.Column("settings", sa.JSON() if mysql else postgresql.JSONB(), nullable=False),
        sa.Column("added_objects", sa.Boolean(), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False, server_default=sa.func.now()),
    )
    op.create_table(
        "simsql_partition_centres",
        sa.Column("table_schema", name, primary_key=True),
        sa.Column("table_name", name, primary_key=True),
        sa.Column("generation", sa.Integer(), primary_key=True, autoincrement=False),
        sa.Column("list_value", sa.Integer(), primary_key=True, autoincrement=False),
        sa.Column("centre", sa.BigInteger(), nullable=True),
        sa.Column("vector", mysql_types.LONGTEXT() if mysql else sa.Text(), nullable=True),
    )


def downgrade() -> None:
    op.execute("DROP TABLE IF EXISTS simsql_partition_centres")
    op.execute("DROP TABLE IF EXISTS simsql_partitions")
