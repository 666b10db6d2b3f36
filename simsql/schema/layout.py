"""The wide block layout of an attachment: how it is written (``"10x24"``), checked, and recorded
in the registry's ``mode`` (``columns+wide10x24``): the one module that reads and writes it.

A wide table cuts its 256-bit signature into indexed blocks (:class:`~simsql.text.signature.BlockLayout`);
8 x 20 (:data:`WIDE_LAYOUT`) unless its attachment chose another (``wide_blocks=``). The registry
has no column for it: ``mode`` carries it, ``+wide`` alone meaning 8 x 20 as every earlier simsql
wrote it, so their databases read back unchanged.
"""

from __future__ import annotations

import re
from typing import Literal

from ..text.errors import SchemaError
from ..text.signature import WIDE_BITS, BlockLayout

WIDE_LAYOUT = BlockLayout(count=8, width=20)
"""How a wide table's signature is cut into indexed blocks: 8 x 20 bits (bits 0-159). Chosen by
``python -m benchmarks.wide_layout``: with the default 512 probes, 8 blocks reach as many
disguised copies as 12 (20-bit blocks keep random rows per probe few), with two thirds of the
index bytes and 9 index writes per insert instead of 13; 16 x 16 reaches a little further at
the cost of 16-bit buckets sixteen times fuller."""

Mode = Literal["columns", "side_table"]

WIDE_MODE = "+wide"
"""Appended to the registry's ``mode`` (``columns+wide``, ``side_table+wide``) of a table that
also stores the wide signature: how an attachment records it without another registry column,
so databases installed by an earlier simsql need no new revision. A layout other than
:data:`WIDE_LAYOUT` follows it as ``<count>x<width>`` (``columns+wide10x24``):
:func:`wide_mode` writes it, :func:`parse_mode` reads it; a bare ``+wide`` is 8 x 20, as every
earlier simsql wrote it."""

MIN_BLOCK_WIDTH = 16
"""The narrowest wide block :func:`block_layout` accepts: a value of a narrower block is shared
by a 65,536th of the table or more, which the 64-bit fingerprint's 16-bit blocks already index."""

MAX_BLOCK_WIDTH = 31
"""The widest: a block is stored in a signed 32-bit ``integer`` column."""


ALL_BLOCKS = BlockLayout(count=WIDE_BITS // MIN_BLOCK_WIDTH, width=MIN_BLOCK_WIDTH)
"""A layout naming every wide block column any layout may have (``<prefix>_v0..v15``): what
removes, or claims as simsql's, a refingerprint's shadow set, whose layout is not recorded."""


def layout_text(layout: BlockLayout) -> str:
    """``"<count>x<width>"``: how a layout is written (``wide_blocks="10x24"``, ``--wide-blocks``)."""
    return f"{layout.count}x{layout.width}"


def block_layout(value: str | BlockLayout | None) -> BlockLayout:
    """The wide block layout ``value`` names: a :class:`~simsql.text.signature.BlockLayout`, or
    its text ``"<count>x<width>"`` (``"10x24"``: ten indexed blocks of 24 bits); None is
    :data:`WIDE_LAYOUT`. Refused (:class:`SchemaError`, naming the rule) unless the blocks fit
    the 256-bit signature (``count * width <= 256``), each is :data:`MIN_BLOCK_WIDTH` to
    :data:`MAX_BLOCK_WIDTH` bits wide, and there are at least two (the pigeonhole guarantee: two
    signatures within ``count - 1`` bits share a block)."""
    if value is None:
        return WIDE_LAYOUT
    if isinstance(value, str):
        match = re.fullmatch(r"\s*(\d{1,3})\s*[xX]\s*(\d{1,3})\s*", value)
        if match is None:
            raise SchemaError(f"a wide block layout is written <count>x<width>, e.g. '10x24', got {value!r}")
        count, width = int(match[1]), int(match[2])
    elif isinstance(value, BlockLayout):
        count, width = value.count, value.width
    else:
        raise SchemaError(f"wide_blocks must be a '<count>x<width>' string or a BlockLayout, got {type(value).__name__} {value!r}")
    if not MIN_BLOCK_WIDTH <= width <= MAX_BLOCK_WIDTH:
        raise SchemaError(
            f"wide blocks must be {MIN_BLOCK_WIDTH} to {MAX_BLOCK_WIDTH} bits wide (an integer column; narrower ones "
            f"index what the 64-bit fingerprint's blocks do), got {width}"
        )
    if count < 2:
        raise SchemaError(f"a wide layout needs at least 2 blocks (two signatures within count - 1 bits share one), got {count}")
    if count * width > WIDE_BITS:
        raise SchemaError(f"{count} blocks of {width} bits are {count * width} bits; the signature has {WIDE_BITS}")
    return BlockLayout(count=count, width=width)


def wide_mode(layout: BlockLayout) -> str:
    """What the registry's ``mode`` carries after ``columns`` / ``side_table`` for a wide table
    of ``layout``: :data:`WIDE_MODE` for :data:`WIDE_LAYOUT` (what earlier versions wrote), else
    ``+wide<count>x<width>``."""
    return WIDE_MODE if layout == WIDE_LAYOUT else WIDE_MODE + layout_text(layout)


def parse_mode(mode: str) -> tuple[Mode, BlockLayout | None]:
    """A registry ``mode`` read back: the storage mode, and the wide layout (None: not wide).
    :class:`SchemaError` for a mode no simsql writes."""
    base, sep, rest = mode.partition(WIDE_MODE)
    layout = (block_layout(rest) if rest else WIDE_LAYOUT) if sep and re.fullmatch(r"(\d+x\d+)?", rest) else None
    if base not in ("columns", "side_table") or (sep and (layout is None or wide_mode(layout) != sep + rest)):
        raise SchemaError(f"simsql's registry holds a mode this simsql does not know: {mode!r}")
    return ("side_table" if base == "side_table" else "columns"), layout


__all__ = [
    "ALL_BLOCKS",
    "MAX_BLOCK_WIDTH",
    "MIN_BLOCK_WIDTH",
    "Mode",
    "WIDE_LAYOUT",
    "WIDE_MODE",
    "block_layout",
    "layout_text",
    "parse_mode",
    "wide_mode",
]
