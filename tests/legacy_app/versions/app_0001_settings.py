"""the application's first revision: a table of its own

Revision ID: app_0001
"""

import sqlalchemy as sa
from alembic import op

revision = "app_0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table("app_settings", sa.Column("key", sa.Text(), primary_key=True), sa.Column("value", sa.Text()))


def downgrade() -> None:
    op.drop_table("app_settings")
