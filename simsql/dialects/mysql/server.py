"""Which MySQL or MariaDB versions simsql runs on (checked when a statement is compiled and when
a lifecycle operation starts)."""

from __future__ import annotations

from sqlalchemy.engine import Dialect

from ...text.errors import UnsupportedDatabase
from ..base import describe_server

MIN_MYSQL = (8, 0)
"""Window functions, CTEs and ``ALGORITHM=INSTANT`` arrived in MySQL 8.0."""

MIN_MARIADB = (10, 6)
"""The oldest MariaDB still maintained when simsql added it; instant ADD COLUMN since 10.3."""


def check_version(dialect: Dialect) -> None:
    """Refuse MySQL < 8.0 and MariaDB < 10.6 (None: not connected yet, checked again at run time)."""
    version = getattr(dialect, "server_version_info", None)
    if version is None:
        return
    mariadb = bool(getattr(dialect, "is_mariadb", False))
    minimum = MIN_MARIADB if mariadb else MIN_MYSQL
    if tuple(version[:2]) < minimum:
        wanted = f"{'MariaDB' if mariadb else 'MySQL'} >= {'.'.join(map(str, minimum))}"
        raise UnsupportedDatabase(f"simsql needs {wanted}, but the server is {describe_server(dialect)}")
