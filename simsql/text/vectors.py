"""Random-hyperplane signatures of embedding vectors (Charikar 2002), in simsql's 64-bit columns.

``f`` Gaussian hyperplanes through the origin, one sign bit each: two vectors at angle ``theta``
differ in each bit with probability ``theta / pi``, so the Hamming distance of their signatures
estimates the angle and :func:`cosine_estimate` the cosine. The signature is packed exactly like a
text fingerprint (bit ``j``, of value ``2**j``, from hyperplane ``j``; an unsigned int in
``[0, 2**64)``, stored signed by :class:`simsql.SimHash`), so the same block columns, indexes and
queries serve both.

Stability is a compatibility promise, as for text: the hyperplanes are derived from the seed by
XXH3-64 counters and a Box-Muller transform written here (not numpy's generator, whose stream
may change between numpy versions), and each coordinate is rounded to a multiple of ``2**-24``
so a last-bit difference in a platform's ``log``/``cos`` cannot change it (except on a rounding
boundary, about one chance in 10**9 per coordinate). A bit can still differ across machines when
a vector's projection on a hyperplane is within float rounding of zero (BLAS summation order);
golden vectors in the tests guard everything else.

A *centre* (``center=``, or :meth:`VectorFingerprinter.fit` on a sample) makes the bits balanced
on embeddings that share a common direction (most do: TF-IDF + SVD, sentence models): each vector
is scaled to unit length and the centre, the mean of the sample's unit vectors, is subtracted
before the projections. Without it, a corpus whose vectors all lean one way sets some bits on
nearly every row, and those bits say little (BENCHMARKS.md measures the balance and the recall).
The centre is part of the configuration (its numbers are in :attr:`VectorFingerprinter.settings`
and :attr:`~VectorFingerprinter.config_id`), rounded to multiples of ``2**-24`` so the same
centre computed on another machine names the same configuration.
"""

from __future__ import annotations

import json
import math
import struct
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property, lru_cache
from typing import Any, Union

import numpy as np
import xxhash

from .bits import FINGERPRINT_BITS
from .fingerprint import Fingerprinter
from .lists import unit_rows
from .signature import WIDE_BITS, Signature

VECTOR_ALGORITHM = 1
"""Version of the hyperplane rule; part of :attr:`VectorFingerprinter.config_id`."""

MAX_DIMENSIONS = 65536
_QUANTUM = float(1 << 24)
_DOMAIN = b"simsql-vector-hyperplane\x00"
_UNIT = 1.0 / float(1 << 32)



def _normal(seed: int, plane: int, coordinate: int) -> float:
    """One standard normal from the counter ``(plane, coordinate)`` under ``seed``: the two
    32-bit halves of one XXH3-64 hash are two uniforms in (0, 1), turned into a normal by
    Box-Muller, then rounded to a multiple of 2**-24."""
    digest = xxhash.xxh3_64_intdigest(_DOMAIN + struct.pack("<II", plane, coordinate), seed=seed)
    u1 = ((digest >> 32) + 0.5) * _UNIT
    u2 = ((digest & 0xFFFFFFFF) + 0.5) * _UNIT
    z = math.sqrt(-2.0 * math.log(u1)) * math.cos(2.0 * math.pi * u2)
    return round(z * _QUANTUM) / _QUANTUM


@lru_cache(maxsize=16)
def hyperplanes(dimensions: int, seed: int, bits: int = FINGERPRINT_BITS) -> np.ndarray:
    """The ``[dimensions, bits]`` matrix of hyperplane normals (read-only): column ``j`` is the
    normal of bit ``j``. Coordinate ``(j, i)`` depends only on ``seed``, ``j`` and ``i``, so the
    first coordinates of a longer configuration are those of a shorter one."""
    matrix = np.array(
        [[_normal(seed, plane, coordinate) for plane in range(bits)] for coordinate in range(dimensions)],
        dtype=np.float64,
    )
    matrix.setflags(write=False)
    return matrix


def cosine_estimate(distance: int, bits: int = FINGERPRINT_BITS) -> float:
    """The cosine of two vectors estimated from the Hamming ``distance`` of their signatures:
    ``cos(pi * distance / bits)`` (each bit differs with probability ``angle / pi``)."""
    if isinstance(distance, bool) or not isinstance(distance, (int, np.integer)):
        raise TypeError(f"distance must be an int, got {type(distance).__name__}")
    if isinstance(bits, bool) or not isinstance(bits, int) or bits <= 0:
        raise ValueError(f"bits must be a positive int, got {bits!r}")
    if not 0 <= distance <= bits:
        raise ValueError(f"distance must be in 0..{bits}, got {distance}")
    return math.cos(math.pi * int(distance) / bits)


def _as_matrix(vectors: object, dimensions: int, what: str) -> np.ndarray:
    """``vectors`` as a float64 array, checked: numbers only (no str, bool, complex or object)."""
    if isinstance(vectors, (str, bytes, bytearray)):
        raise TypeError(f"{what} must be a sequence of numbers or a numpy array, got {type(vectors).__name__}")
    if isinstance(vectors, np.ndarray):
        array = vectors
    else:
        try:
            array = np.asarray(vectors)
        except ValueError as error:  # ragged nesting
            raise ValueError(f"{what} must be rectangular (every vector {dimensions} numbers): {error}") from None
    if array.dtype.kind not in "iuf":
        raise TypeError(
            f"{what} must hold real numbers (int or float), got dtype {array.dtype}"
            + (" (strings or mixed values)" if array.dtype.kind in "OUS" else "")
        )
    return array.astype(np.float64, copy=False)


def vector_of(value: object, what: str = "vector") -> object:
    """A stored vector column's value as something :meth:`VectorFingerprinter.fingerprint` reads:
    a list or array as it is; ``bytes`` as little-endian float32 (a BLOB column); ``str`` as JSON
    text (a MariaDB JSON column read as text). Anything else is left for the fingerprinter to
    refuse. ``what`` names the column in errors."""
    if isinstance(value, (bytes, bytearray, memoryview)):
        raw = bytes(value)
        if len(raw) % 4:
            raise ValueError(f"{what} holds {len(raw)} bytes, not a whole number of float32 values")
        return np.frombuffer(raw, dtype="<f4")
    if isinstance(value, str):
        try:
            return json.loads(value)
        except json.JSONDecodeError:
            raise TypeError(f"{what} holds text that is not a JSON array of numbers: {value[:40]!r}") from None
    return value


def vectors_of(values: Sequence[object], what: str = "vector") -> np.ndarray:
    """Many stored values as one float64 matrix, a row each, as :func:`vector_of` reads each:
    BLOBs of one length joined and read by one ``frombuffer`` (no call a row), JSON texts parsed
    by one ``json.loads``. Values of mixed kinds or lengths are read one by one, so a bad one
    gets :func:`vector_of`'s error, or the fingerprinter's check names it."""
    if values and all(isinstance(value, (bytes, bytearray)) for value in values):
        sizes = {len(value) for value in values}  # type: ignore[arg-type]
        if len(sizes) == 1 and not next(iter(sizes)) % 4:
            joined = b"".join(values)  # type: ignore[arg-type]
            return np.frombuffer(joined, dtype="<f4").reshape(len(values), -1).astype(np.float64)
    elif values and all(isinstance(value, str) for value in values):
        try:
            parsed = json.loads("[" + ",".join(values) + "]")  # type: ignore[arg-type]
        except json.JSONDecodeError:
            parsed = None  # one of them is not JSON: vector_of names it below
        if parsed is not None:
            return np.stack([np.asarray(value, dtype=np.float64) for value in parsed])
    return np.stack([np.asarray(vector_of(value, what), dtype=np.float64) for value in values])


def _quantized_center(center: object, dimensions: int) -> tuple[float, ...] | None:
    """``center`` checked and rounded to multiples of ``2**-24`` (exact in float32 and in JSON);
    None for no centre or a centre of zeros (the same configuration as none)."""
    if center is None:
        return None
    array = _as_matrix(center, dimensions, "center")
    if array.ndim != 1 or array.shape[0] != dimensions:
        raise ValueError(f"center must be one vector of {dimensions} numbers, got shape {array.shape}")
    if not np.isfinite(array).all():
        raise ValueError("center holds NaN or infinity")
    rounded = np.round(array * _QUANTUM) / _QUANTUM
    norm = float(np.linalg.norm(rounded))
    if norm >= 1.0:
        raise ValueError(
            f"center must be the mean of unit vectors (its length below 1), got length {norm:.4g}; "
            "VectorFingerprinter.fit(sample) computes it"
        )
    if not rounded.any():
        return None
    return tuple(float(x) for x in rounded)


@dataclass(frozen=True)
class VectorFingerprinter:
    """A signature configuration for float vectors of ``dimensions`` numbers: immutable,
    hashable, identified by :attr:`config_id` (recorded by the database, which refuses
    signatures of another configuration, like a text :class:`~simsql.Fingerprinter`'s).

    Parameters:
        dimensions: the length of every vector (1..65536).
        seed: picks the hyperplanes; different seeds give unrelated signatures.
        bits: signature width; only 64 is supported (a ``bigint``).
        center: the mean of a sample's unit vectors (:meth:`fit` computes it), subtracted from
            each vector scaled to unit length; None (the default) for none. Stored rounded to
            multiples of ``2**-24``; its length must be below 1.

    Bit ``j`` is set when the vector's dot product with hyperplane ``j`` is > 0 (a tie gives 0);
    with a centre, the dot product of ``v / |v| - center``. Scaling a vector by a positive number
    does not change its signature; only its direction counts. float32 input is widened to
    float64 first, so it gives the signature of the same values in float64.
    """

    dimensions: int
    seed: int = 0
    bits: int = FINGERPRINT_BITS
    center: tuple[float, ...] | None = None

    def __post_init__(self) -> None:
        for name in ("dimensions", "seed", "bits"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int):
                raise TypeError(f"{name} must be an int, got {type(value).__name__}")
        if not 1 <= self.dimensions <= MAX_DIMENSIONS:
            raise ValueError(f"dimensions must be in 1..{MAX_DIMENSIONS}, got {self.dimensions}")
        if not 0 <= self.seed < 2**64:
            raise ValueError(f"seed must be in [0, 2**64), got {self.seed}")
        if self.bits != FINGERPRINT_BITS:
            raise ValueError(f"only 64-bit signatures are supported (a bigint), got bits={self.bits}")
        object.__setattr__(self, "center", _quantized_center(self.center, self.dimensions))

    @classmethod
    def fit(cls, sample: object, seed: int = 0, bits: int = FINGERPRINT_BITS) -> VectorFingerprinter:
        """A configuration centred on ``sample`` (a 2-D batch of the vectors to be stored, a few
        thousand are plenty): the mean of its vectors scaled to unit length. Fit once and keep
        the configuration (its :attr:`settings` rebuild it through :meth:`from_settings`): a
        sample's mean differs from another's, and so would the configuration."""
        array = _as_matrix(sample, 0, "sample")
        if array.ndim != 2 or array.shape[0] == 0:
            raise ValueError(f"fit() takes a non-empty 2-D batch of vectors, got shape {array.shape}")
        unit = cls(array.shape[1], seed=seed, bits=bits).check(array)
        unit = unit / np.linalg.norm(unit, axis=1, keepdims=True)
        return cls(array.shape[1], seed=seed, bits=bits, center=unit.mean(axis=0))

    # -- identity ---------------------------------------------------------------------------

    @cached_property
    def settings(self) -> dict[str, object]:
        """Everything that determines the output, as plain JSON values (recorded in the database)."""
        return {
            "kind": "vector",
            "algorithm": VECTOR_ALGORITHM,
            "hyperplanes": "xxh3_64-box-muller-q24",
            "dimensions": self.dimensions,
            "seed": self.seed,
            "bits": self.bits,
            **({} if self.center is None else {"center": list(self.center)}),
        }

    @cached_property
    def config_id(self) -> str:
        """Short stable name of this configuration, e.g. ``'vh1-3b8f0c2a9d41'``; never equal to
        a text configuration's (those start with ``sh``)."""
        canonical = json.dumps(self.settings, sort_keys=True, separators=(",", ":"))
        return f"vh{VECTOR_ALGORITHM}-{xxhash.xxh3_64_hexdigest(canonical.encode())[:12]}"

    @classmethod
    def from_settings(cls, settings: dict[str, Any]) -> VectorFingerprinter:
        """The configuration recorded as ``settings`` (see :attr:`settings`)."""
        if settings.get("kind") != "vector" or settings.get("algorithm") != VECTOR_ALGORITHM:
            raise ValueError(f"not the settings of a version {VECTOR_ALGORITHM} vector configuration: {settings!r}")
        center = settings.get("center")
        return cls(int(settings["dimensions"]), seed=int(settings["seed"]), bits=int(settings["bits"]), center=center)

    # -- signatures -------------------------------------------------------------------------

    @property
    def planes(self) -> np.ndarray:
        """The ``[dimensions, bits]`` hyperplane normals (see :func:`hyperplanes`)."""
        return hyperplanes(self.dimensions, self.seed, self.bits)

    def check(self, vectors: object) -> np.ndarray:
        """``vectors`` (one vector or a batch) as a checked float64 ``[n, dimensions]`` array.

        ``TypeError``: not numbers (str, bool, complex, object, None inside). ``ValueError``:
        not 1-D or 2-D, a length other than :attr:`dimensions`, NaN or infinity, or a vector of
        zeros (it has no direction: every hyperplane would tie)."""
        array = _as_matrix(vectors, self.dimensions, "vector")
        if array.ndim == 1:
            array = array[None, :]
        if array.ndim != 2:
            raise ValueError(f"expected one vector or a 2-D batch of vectors, got an array of {array.ndim} dimensions")
        if array.shape[1] != self.dimensions:
            raise ValueError(f"expected vectors of {self.dimensions} numbers, got {array.shape[1]}")
        finite = np.isfinite(array).all(axis=1)
        if not finite.all():
            raise ValueError(f"vector {int(np.flatnonzero(~finite)[0])} holds NaN or infinity")
        zero = ~array.any(axis=1)
        if zero.any():
            raise ValueError(
                f"vector {int(np.flatnonzero(zero)[0])} is all zeros: it has no direction, so no signature; "
                "store NULL or reject it"
            )
        return array

    def check_one(self, vector: object, caller: str = "a row") -> np.ndarray:
        """One vector (a list of numbers or a 1-D array) as a checked ``[1, dimensions]`` array:
        :meth:`check`'s errors, and ``ValueError`` for anything but one vector (``caller`` names
        what takes one in it)."""
        array = _as_matrix(vector, self.dimensions, "vector")
        if array.ndim != 1:
            raise ValueError(f"{caller} takes one vector (1-D); use fingerprint_many() for a batch, got {array.ndim}-D")
        return self.check(array[None, :])

    def fingerprint(self, vector: object) -> int:
        """The unsigned 64-bit signature of one vector (a list of numbers or a 1-D array)."""
        return int(self.fingerprint_array(self.check_one(vector, "fingerprint()"))[0])

    def fingerprint_many(self, vectors: object) -> list[int]:
        """Signatures of a batch (a 2-D array or a sequence of vectors): one matrix product.
        An empty batch gives ``[]``; any bad vector refuses the whole batch."""
        if isinstance(vectors, (list, tuple)) and not vectors:
            return []
        if isinstance(vectors, np.ndarray) and vectors.ndim == 2 and vectors.shape[0] == 0:
            return []
        return self.fingerprint_array(self.check(vectors)).tolist()

    @cached_property
    def _center(self) -> np.ndarray | None:
        return None if self.center is None else np.asarray(self.center, dtype=np.float64)

    @staticmethod
    def unit(checked: np.ndarray) -> np.ndarray:
        """A checked batch with each vector scaled to unit length (none is zero: :meth:`check`
        refuses them) by partition lists' own rule (:func:`simsql.text.lists.unit_rows`): what the
        centre is subtracted from, and what the lists compare (an ORM write computes it once for both)."""
        return unit_rows(checked)

    def centred(self, checked: np.ndarray, unit: np.ndarray | None = None) -> np.ndarray:
        """A checked batch as the hyperplanes see it: itself without a centre; else each vector
        at unit length (``unit``: :meth:`unit` of it, when the caller has it) minus the centre
        (never zero: the centre is shorter than 1)."""
        if self._center is None:
            return checked
        return (self.unit(checked) if unit is None else unit) - self._center

    def fingerprint_array(self, checked: np.ndarray, unit: np.ndarray | None = None) -> np.ndarray:
        """Unsigned signatures (``uint64``) of a batch already passed through :meth:`check`
        (``unit``: see :meth:`centred`)."""
        bits = (self.centred(checked, unit) @ self.planes) > 0.0
        return np.packbits(bits, axis=1, bitorder="little").view("<u8").ravel().astype(np.uint64)

    def signatures_many(self, vectors: object) -> list[Signature]:
        """Wide 256-bit signatures of a batch (:class:`simsql.text.signature.Signature`), from 256
        hyperplanes of the same seed: word 0 is the 64-bit signature bit for bit (hyperplanes
        0-63 are this configuration's), so a wide table's ``simhash`` column serves both.
        Margins are the cosines of each (centred) vector with each hyperplane's normal, in
        absolute value: a small margin is a bit a small turn of the vector flips."""
        return self.signatures_of(self.check(vectors))

    def signatures_of(self, checked: np.ndarray, unit: np.ndarray | None = None) -> list[Signature]:
        """:meth:`signatures_many` of a batch already passed through :meth:`check` (``unit``:
        see :meth:`centred`)."""
        moved = self.centred(checked, unit)
        planes = hyperplanes(self.dimensions, self.seed, WIDE_BITS)
        projections = moved @ planes
        packed = np.packbits(projections > 0.0, axis=1, bitorder="little").view("<u8")
        margins = np.abs(projections) / (np.linalg.norm(moved, axis=1, keepdims=True) * np.linalg.norm(planes, axis=0))
        return [
            Signature(tuple(int(w) for w in words), tuple(float(m) for m in row))
            for words, row in zip(packed, margins)
        ]

    def cosine_estimate(self, distance: int) -> float:
        """:func:`cosine_estimate` at this configuration's width."""
        return cosine_estimate(distance, self.bits)


AnyFingerprinter = Union[Fingerprinter, VectorFingerprinter]
"""Either kind of configuration a table can be fingerprinted with (for type annotations)."""
