"""An application's own Alembic environment, as a user would have it (used by the tests)."""

from alembic import context
from sqlalchemy import create_engine, pool

import simsql.alembic  # noqa: F401  registers op.add_simhash and friends

config = context.config
connection = config.attributes.get("connection")


def run(connection):  # type: ignore[no-untyped-def]
    context.configure(connection=connection, transaction_per_migration=True)
    with context.begin_transaction():
        context.run_migrations()


if connection is not None:
    run(connection)
else:
    engine = create_engine(config.get_main_option("sqlalchemy.url"), poolclass=pool.NullPool)
    with engine.connect() as conn:
        run(conn)
        conn.commit()
