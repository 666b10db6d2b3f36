"""Citus (distributed PostgreSQL): :class:`~.backend.CitusBackend`, a variant of the PostgreSQL
family chosen from the server itself, overriding the plans Citus cannot push down."""

from __future__ import annotations

from .backend import CitusBackend

__all__ = ["CitusBackend"]
