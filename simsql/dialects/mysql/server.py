"""Which MySQL or MariaDB simsql runs on: the versions it needs, and the digest function its
triggers compute (MySQL 9.6 moved ``MD5()`` into a component)."""

from __future__ import annotations

from sqlalchemy.engine import Connection, Dialect

from ...errors import UnsupportedDatabase
from ..base import describe_server
from .catalog import is_mariadb

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


_HAS_MD5 = "simsql_has_md5"
CLASSIC_HASHING = "file://component_classic_hashing"


def check_digest(connection: Connection) -> None:
    """Refuse a MySQL without ``MD5()``, which simsql's triggers, backfill and status compute.

    MySQL 9.6 moved ``MD5()`` out of the server into a component an administrator installs;
    without it a trigger simsql created would fail every INSERT into the user's table ("FUNCTION
    db.MD5 does not exist"), so nothing is created and nothing is fingerprinted; detach still
    runs, to take such triggers away. Asked once per session (MariaDB has it built in)."""
    if is_mariadb(connection.dialect):
        return
    info = connection.connection.info
    if info.get(_HAS_MD5):
        return
    try:
        connection.exec_driver_sql("SELECT MD5('')")  # a failed statement leaves MySQL's transaction alone
    except Exception as error:  # noqa: BLE001 - only the missing function is ours to explain
        if getattr(getattr(error, "orig", None), "args", (None,))[0] != 1305:  # ER_SP_DOES_NOT_EXIST
            raise
        raise UnsupportedDatabase(
            f"simsql's triggers compare MD5() digests, and {describe_server(connection.dialect)} has no MD5() "
            f"(MySQL 9.6 moved it into a component): an administrator can add it with "
            f"INSTALL COMPONENT '{CLASSIC_HASHING}'"
        ) from None
    info[_HAS_MD5] = True
