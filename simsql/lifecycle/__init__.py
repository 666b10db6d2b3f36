"""Attach, index, backfill and detach: the lifecycle of simsql on a user's table.

Three steps for every change (Alembic's split between describing and running operations):
:mod:`.catalog` reads what is there, :mod:`.ddl` describes the statements as text,
:mod:`.apply` runs them bounded in time. :mod:`.attach` and :mod:`.backfill` combine them.
"""
