"""The SQL text of a wide block, derived from the signature's four word columns.

Apart from :mod:`.wide` (the SQLAlchemy constructs, registered per dialect) so that the DDL
describers (:mod:`.postgresql_ddl`, :mod:`.mysql_ddl`) can write attach-time columns and
triggers from the same rule without importing a backend.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..text.signature import BlockLayout


def wide_block_sql(words: Sequence[str], index: int, *, cast: bool, layout: BlockLayout) -> str:
    """SQL deriving block ``index`` of ``layout`` (the attachment's, :attr:`simsql.schema.names.Names.layout`)
    from the four quoted word columns (``words[0]`` the fingerprint); ``cast``: as ``INTEGER``
    (PostgreSQL's signed words)."""
    bits = layout.bits_of(index)
    parts, taken = [], 0
    while taken < len(bits):
        bit = bits.start + taken
        word, low = divmod(bit, 64)
        width = min(len(bits) - taken, 64 - low)
        part = f"(({words[word]} >> {low}) & {(1 << width) - 1})" if low else f"({words[word]} & {(1 << width) - 1})"
        parts.append(f"({part} << {taken})" if taken else part)
        taken += width
    expression = " | ".join(parts)
    return f"CAST({expression} AS INTEGER)" if cast else f"({expression})"


__all__ = ["wide_block_sql"]
