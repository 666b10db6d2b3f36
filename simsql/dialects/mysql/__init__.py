"""MySQL >= 8.0 and MariaDB >= 10.6, one family: its :class:`~.backend.MySQLBackend`, DDL
describer (:mod:`.ddl`), catalog reads (:mod:`.catalog`), backfill statements (:mod:`.backfill`),
session time bounds and named locks (:mod:`.session`), server checks (:mod:`.server`) and the
compile rules of simsql's SQL constructs (:mod:`.compile`, registered on import)."""

from __future__ import annotations

from .backend import MySQLBackend
from .compile import MYSQL_DIALECTS
from .server import MIN_MARIADB, MIN_MYSQL

__all__ = ["MIN_MARIADB", "MIN_MYSQL", "MySQLBackend", "MYSQL_DIALECTS"]
