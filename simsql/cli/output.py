"""How results reach the terminal: JSON for programs, CSV for spreadsheets, aligned columns for
people; and ``--file`` texts read in (``-`` is stdin).

Every command writes through these, so one value prints the same way everywhere: composite keys
as ``a,b``, NULL as empty, floats to four places in tables and at full precision in CSV.
"""

from __future__ import annotations

import csv
import json
import sys
from collections.abc import Sequence
from typing import Any, TextIO

from .common import CommandError

PREVIEW_CHARS = 60


def _json_default(value: object) -> str:
    return str(value)  # column values JSON lacks (dates, decimals, UUIDs): their canonical text


def flat(value: object) -> str:
    """One cell of table or CSV output: composite keys as ``a,b``, NULL as empty."""
    if value is None:
        return ""
    if isinstance(value, (tuple, list)):
        return ",".join(flat(v) for v in value)
    if isinstance(value, float):
        return f"{value:.4f}"
    return str(value)


def preview(value: object, width: int = PREVIEW_CHARS) -> str:
    text = " ".join(str(value).split()) if value is not None else ""
    return text if len(text) <= width else text[: width - 1] + "…"


def write_json(document: object, out: TextIO) -> None:
    json.dump(document, out, indent=2, ensure_ascii=False, default=_json_default)
    out.write("\n")


def write_csv(headers: Sequence[str], records: Sequence[dict[str, Any]], out: TextIO) -> None:
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(headers)
    for record in records:
        # Full precision in CSV: it is read by programs, not people.
        writer.writerow([repr(v) if isinstance(v := record.get(h), float) else flat(v) for h in headers])


def write_table(headers: Sequence[str], records: Sequence[dict[str, Any]], out: TextIO) -> None:
    """Aligned columns for people; numbers right-aligned, long text previewed. No rows print
    nothing (a header alone reads like a result); JSON and CSV keep their empty forms."""
    if not records:
        return
    cells = [[preview(v) if isinstance(v := r.get(h), str) else flat(v) for h in headers] for r in records]
    widths = [max([len(h), *(len(row[i]) for row in cells)]) for i, h in enumerate(headers)]
    numeric = [bool(records) and all(isinstance(r.get(h), (int, float)) for r in records) for h in headers]

    def line(values: Sequence[str]) -> str:
        parts = [v.rjust(w) if num else v.ljust(w) for v, w, num in zip(values, widths, numeric)]
        return "  ".join(parts).rstrip()

    out.write(line(headers) + "\n")
    for row in cells:
        out.write(line(row) + "\n")


def write_records(fmt: str, headers: Sequence[str], records: Sequence[dict[str, Any]], out: TextIO) -> None:
    if fmt == "json":
        write_json([{h: r.get(h) for h in headers} for r in records], out)
    elif fmt == "csv":
        write_csv(headers, records, out)
    else:
        write_table(headers, records, out)


def read_text(path: str) -> str:
    """``--file`` contents; ``-`` is stdin, so texts can be piped in."""
    if path == "-":
        return sys.stdin.read()
    try:
        with open(path, encoding="utf-8") as handle:
            return handle.read()
    except OSError as error:
        raise CommandError(f"cannot read {path}: {error.strerror or error}") from None
    except UnicodeDecodeError as error:
        raise CommandError(f"cannot read {path}: not UTF-8 text ({error.reason} at byte {error.start})") from None
