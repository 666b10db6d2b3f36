"""PostgreSQL >= 14: its :class:`~.backend.PostgresBackend` (with the compile rules of simsql's
SQL constructs), DDL describer (:mod:`.ddl`) and backfill statements (:mod:`.backfill`)."""

from __future__ import annotations

from .backend import MIN_POSTGRES, PostgresBackend

__all__ = ["MIN_POSTGRES", "PostgresBackend"]
