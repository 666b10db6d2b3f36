"""The describe step of the lifecycle: DDL as text, a :class:`Plan` that nothing here runs.

Each backend owns its describer (:attr:`simsql.dialects.Backend.ddl`: PostgreSQL's in
:mod:`simsql.dialects.postgresql_ddl`, MySQL's in :mod:`simsql.dialects.mysql_ddl`); the
lifecycle asks ``backend(connection).ddl`` and :mod:`simsql.lifecycle.apply` runs what it
returns. This module keeps the plan vocabulary, and PostgreSQL's describer under the names its
functions have always had here (Alembic's offline ``--sql`` scripts are written with them).
"""

from __future__ import annotations

from ..dialects.plan import REGISTRY_INSERT, Plan, Step, Target, registry_values
from ..dialects.postgresql_ddl import POSTGRES_DDL, qualified

# PostgreSQL's describer, as functions (see :class:`simsql.dialects.postgresql_ddl.PostgresDDL`).
add_columns = POSTGRES_DDL.add_columns
create_side_table = POSTGRES_DDL.create_side_table
record = POSTGRES_DDL.record
attach = POSTGRES_DDL.attach
create_indexes = POSTGRES_DDL.build_indexes
create_partitioned_indexes = POSTGRES_DDL.create_partitioned_indexes
drop_indexes = POSTGRES_DDL.drop_indexes
detach = POSTGRES_DDL.drop_attachment
forget = POSTGRES_DDL.forget
upgrade = POSTGRES_DDL.upgrade
stage = POSTGRES_DDL.stage
unstage = POSTGRES_DDL.unstage
switch = POSTGRES_DDL.switch

__all__ = [
    "Plan",
    "REGISTRY_INSERT",
    "Step",
    "Target",
    "add_columns",
    "attach",
    "create_indexes",
    "create_partitioned_indexes",
    "create_side_table",
    "detach",
    "drop_indexes",
    "forget",
    "qualified",
    "record",
    "registry_values",
    "stage",
    "switch",
    "unstage",
    "upgrade",
]
