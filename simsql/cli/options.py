"""Arguments several commands share, and the types that check them, so a rule such as "a batch
size is a positive integer" or the wording of ``--lock-timeout`` is written once.

A bad value is an argparse error (exit 2) naming what was expected and what was given.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Sequence
from typing import Any

from .common import URL_VARIABLES


def positive_int(raw: str) -> int:
    try:
        value = int(raw)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {raw!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {raw!r}")
    return value


def non_negative_int(raw: str) -> int:
    try:
        value = int(raw)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer >= 0, got {raw!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected an integer >= 0, got {raw!r}")
    return value


def distance_up_to(limit: int) -> Callable[[str], int]:
    def parse(raw: str) -> int:
        value = non_negative_int(raw)
        if value > limit:
            raise argparse.ArgumentTypeError(f"expected at most {limit}, got {value}")
        return value

    return parse


def common_options(suppress: bool, url: bool = True) -> argparse.ArgumentParser:
    """``--url`` and ``-v`` work before or after the subcommand. Subparsers leave them unset
    when not given (SUPPRESS), so they don't overwrite a value given before the subcommand.
    Commands that need no database (or, like the demo, read no environment) get no shared
    ``--url``, so their help never offers one."""
    default: Any = argparse.SUPPRESS if suppress else None
    common = argparse.ArgumentParser(add_help=False)
    if url:
        common.add_argument(
            "--url",
            default=default,
            help=f"database URL, or 'embedded' (default: ${URL_VARIABLES[0]}, then ${URL_VARIABLES[1]})",
        )
    common.add_argument(
        "-v", "--verbose", action="count", default=argparse.SUPPRESS if suppress else 0,
        help="log what is done (-vv: debug)",
    )
    return common


def table_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--table", required=True, help="table name (never interpreted as SQL)")
    parser.add_argument("--schema", help="schema of the table (default: the connection's current schema)")


def format_option(parser: argparse.ArgumentParser, choices: Sequence[str]) -> None:
    parser.add_argument("--format", choices=choices, default=choices[0], help=f"output format (default: {choices[0]})")


def backfill_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--batch-size", type=positive_int, default=2000, help="rows per transaction (default: 2000)")
    parser.add_argument(
        "--workers", type=non_negative_int, default=None,
        help="fingerprinting processes (default: CPU count, at most 4; 0: in this process)",
    )


def lock_timeout_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--lock-timeout", default="5s",
        help="longest wait for a lock on the table before giving up, as PostgreSQL reads it (default: 5s; "
        "MySQL/MariaDB round it up to whole seconds)",
    )
