"""The describe step of the lifecycle: DDL as text, a :class:`Plan` that nothing here runs.

Each backend owns its describer (:attr:`simsql.dialects.Backend.ddl`: PostgreSQL's in
:mod:`simsql.dialects.postgresql_ddl`, MySQL's in :mod:`simsql.dialects.mysql_ddl`); the
lifecycle and Alembic's offline ``--sql`` scripts ask ``backend(...).ddl``, and
:mod:`simsql.lifecycle.apply` runs what it returns. This module keeps the plan vocabulary
importable where the lifecycle has always had it.
"""

from __future__ import annotations

from ..dialects.plan import REGISTRY_INSERT, Plan, Step, Target, registry_values

__all__ = ["Plan", "REGISTRY_INSERT", "Step", "Target", "registry_values"]
