"""attach simsql to the legacy articles table

Revision ID: app_0002
"""

from alembic import op

import simsql.alembic  # noqa: F401

revision = "app_0002"
down_revision = "app_0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.upgrade_simsql()
    # the application's models are version 2 (SimHashMixin): add_simhash's default is version 3
    op.add_simhash("articles", source=["title", "body"], wide=False)
    op.create_simhash_indexes("articles", concurrently=True)


def downgrade() -> None:
    op.drop_simhash_indexes("articles", concurrently=True)
    op.drop_simhash("articles")
    op.downgrade_simsql()
