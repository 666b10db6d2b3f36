"""simsql's own Alembic environment (shipped in the wheel as ``simsql.migrations``)."""
