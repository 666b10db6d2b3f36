"""What every query is asked about: a target resolved to its fingerprint, the rows to leave out,
and the checks on the arguments the public functions share.

A caller's mistake (a limit of 0, a distance of 65, a lone string where a list of targets was
meant) is refused here with a ``TypeError`` or ``ValueError`` naming the value found, before any
statement is built, rather than surfacing later as a database error.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import date, time, timedelta
from decimal import Decimal
from typing import Any
from uuid import UUID

import numpy as np
from sqlalchemy import Select, and_, literal, not_, select, tuple_
from sqlalchemy.sql import ColumnElement

from ..dialects import BLOCK_COUNT
from ..store.storage import Binding
from ..store.types import SimHash
from ..text.bits import check_fingerprint
from ..text.errors import EmptyDocument
from ..text.vectors import VectorFingerprinter

MAX_EXACT_BLOCK_DISTANCE = BLOCK_COUNT - 1
"""The widest bound answered by rows sharing a whole block (pigeonhole over the four blocks):
near-duplicate joins and batch lookups are exact up to it and refuse more."""


def resolve_target(binding: Binding, target: object) -> tuple[int, tuple[Any, ...] | None]:
    """A target's fingerprint, and the key to exclude when the target is a row itself.

    Text is fingerprinted with the model's own fingerprinter; an int is taken as a fingerprint
    (checked to fit 64 bits); a model instance gives its stored fingerprint and its key. Raises
    :class:`EmptyDocument` for a row without text, ``TypeError`` for anything else.
    """
    if isinstance(binding.fingerprinter, VectorFingerprinter):
        if isinstance(target, (list, tuple, np.ndarray)):  # a vector: signed with the model's configuration
            return binding.fingerprinter.fingerprint(target), None
        if isinstance(target, str):
            raise TypeError(
                f"{binding.model.__name__} is fingerprinted from vectors: the target must be a vector (list or "
                "numpy array), a fingerprint (int) or a row, not text"
            )
    elif isinstance(target, str):
        return binding.fingerprinter.fingerprint(target), None
    if isinstance(target, int) and not isinstance(target, bool):
        return check_fingerprint(target, "target"), None
    if isinstance(target, binding.model):
        fingerprint = binding.fingerprint_of(target)
        if fingerprint is None:
            raise EmptyDocument(f"row {binding.key_of(target)!r} of {binding.table.name} has no text to compare")
        return fingerprint, binding.key_of(target)
    raise TypeError(
        f"target must be text (str) or a vector, a fingerprint (int) or an instance of {binding.model.__name__}, "
        f"got {type(target).__name__}"
    )


def check_distance(max_distance: int | None) -> None:
    """Refuse a bound that is not None or an int in 0..64."""
    if max_distance is None:
        return
    if isinstance(max_distance, bool) or not isinstance(max_distance, int):
        raise TypeError(f"max_distance must be an int, got {type(max_distance).__name__}")
    if not 0 <= max_distance <= 64:
        raise ValueError(f"max_distance must be in 0..64, got {max_distance}")


MAX_LIMIT = 2**63 - 1
"""The largest ``LIMIT`` every server reads (a signed 64-bit integer); more is refused here
rather than by the driver."""


def check_limit(limit: object) -> int:
    """``limit`` itself when it is an int in 1..:data:`MAX_LIMIT` (a bool is refused, not read
    as 0 or 1)."""
    if isinstance(limit, bool) or not isinstance(limit, int):
        raise TypeError(f"limit must be a positive int, got {type(limit).__name__} {limit!r}")
    if limit < 1:
        raise ValueError(f"limit must be a positive int, got {limit}")
    if limit > MAX_LIMIT:
        raise ValueError(f"limit must be at most {MAX_LIMIT} (2**63 - 1, the largest LIMIT a server reads), got {limit}")
    return limit


def check_targets(targets: object) -> list[object]:
    """The targets of a batch as a list; a lone str or bytes is refused, not split into characters."""
    if isinstance(targets, (str, bytes, bytearray)):
        raise TypeError(
            f"targets must be a sequence of targets (texts, fingerprints or rows), got a single "
            f"{type(targets).__name__}; wrap it in a list: [text]"
        )
    if not isinstance(targets, Iterable):
        raise TypeError(f"targets must be a sequence of targets, got {type(targets).__name__}")
    return list(targets)


def fingerprint_literal(fingerprint: int) -> ColumnElement[Any]:
    """A fingerprint as a bound value of the column's own type (signed in the database)."""
    return literal(fingerprint, SimHash())


def keys_equal(left: Sequence[Any], right: Sequence[Any]) -> ColumnElement[bool]:
    """The join condition of two primary keys given column by column."""
    return and_(*(a == b for a, b in zip(left, right)))


def rows_of_keys(binding: Binding, keys: Sequence[tuple[Any, ...]]) -> Select[Any]:
    """The rows of ``binding``'s model whose primary keys are ``keys`` (``key IN (...)``, in no
    order): a statement Citus routes to the shards holding them."""
    if len(binding.keys) == 1:
        return select(binding.model).where(binding.keys[0].in_([key[0] for key in keys]))
    return select(binding.model).where(tuple_(*binding.keys).in_(keys))


def in_ranked_order(binding: Binding, ranked: Sequence[Any], rows: Iterable[Any]) -> list[tuple[Any, int]]:
    """``(row, distance)`` for each ``(key..., distance)`` of ``ranked`` (in its order) whose
    row is among ``rows`` (ORM rows of ``binding``'s model; a key without one is left out)."""
    width = len(binding.keys)
    found = {binding.key_of(row[0]): row[0] for row in rows}
    keyed = ((tuple(rank[:width]), int(rank[width])) for rank in ranked)
    return [(found[key], distance) for key, distance in keyed if key in found]


def key_value(values: Sequence[Any]) -> Any:
    """A primary key as callers see it: the value itself, or a tuple for a composite key."""
    return values[0] if len(values) == 1 else tuple(values)


KEY_VALUES = (int, str, bytes, float, Decimal, UUID, date, time, timedelta)
"""Values a primary key column holds (a ``datetime`` is a ``date``); a value of the key column's
own Python type is taken too."""


def exclude_keys(binding: Binding, exclude: object) -> list[tuple[Any, ...]]:
    """The keys of ``exclude`` (None, a row, a key, or a collection of either) as tuples.
    Anything else (a row of another model, an object no key column holds, a key of the wrong
    number of columns) is refused with TypeError/ValueError before a statement is built."""
    if exclude is None:
        return []
    items = exclude if isinstance(exclude, (list, tuple, set, frozenset)) else [exclude]
    return [_key(binding, item) for item in items]


def _key(binding: Binding, item: object) -> tuple[Any, ...]:
    if isinstance(item, binding.model):
        return binding.key_of(item)
    values = item if isinstance(item, tuple) else (item,)
    model, columns = binding.model.__name__, [key.name for key in binding.keys]
    if len(values) != len(columns):
        raise ValueError(f"exclude: a key of {model} has {len(columns)} column(s) ({', '.join(columns)}), got {item!r}")
    for value, key in zip(values, binding.keys):
        if not _holds(key, value):
            raise TypeError(
                f"exclude takes rows of {model}, their keys ({', '.join(columns)}) or a collection of either; "
                f"got {type(value).__name__} {value!r}"
            )
    return values


def _holds(key: Any, value: object) -> bool:
    """Whether the key column ``key`` can hold ``value``."""
    if isinstance(value, KEY_VALUES):
        return True
    try:
        return isinstance(value, key.type.python_type)
    except NotImplementedError:  # a type that does not say: refuse only what is surely no key
        return not isinstance(value, (dict, type(None))) and type(value) is not object


def exclusion(binding: Binding, exclude: Iterable[tuple[Any, ...]]) -> ColumnElement[bool] | None:
    """The filter leaving out rows with the given keys, or None when there are none."""
    keys = list(exclude)
    if not keys:
        return None
    if len(binding.keys) == 1:
        return binding.keys[0].not_in([k[0] for k in keys])
    return not_(tuple_(*binding.keys).in_([tuple(k) for k in keys]))
