"""``simsql.backfill`` of vector models (issue 25): rows written without the ORM (raw SQL, a bulk
load) get their signatures, in batches signed by one matrix product, checked against the
fingerprinter's own; NULL vectors are left unsigned; a bad vector stops the run naming its key,
with every earlier batch kept and nothing of its own batch written."""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pytest
from sqlalchemy import JSON, REAL, Double, Engine, Integer, LargeBinary, insert, select, text, update
from sqlalchemy.dialects.postgresql import ARRAY
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

import simsql
import simsql.errors
import simsql.store
from simsql import VectorFingerprinter
from simsql.schema.names import metadata as simsql_metadata

DIMENSIONS = 16
SIGNER = VectorFingerprinter(DIMENSIONS, seed=5)
FLOAT64_VECTOR = ARRAY(Double()).with_variant(JSON(none_as_null=True), "mysql", "mariadb")
FLOAT32_VECTOR = ARRAY(REAL()).with_variant(LargeBinary(), "mysql", "mariadb")


class Base(DeclarativeBase):
    pass


class Doc(simsql.SimHashMixin, Base):
    """double precision[] on PostgreSQL, JSON on MySQL/MariaDB."""

    __tablename__ = "vbf_docs"
    __simhash_source__ = "embedding"
    __simhash_fingerprinter__ = SIGNER

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=False)
    embedding: Mapped[Any] = mapped_column(FLOAT64_VECTOR, nullable=True)


class Doc32(simsql.SimHashMixin, Base):
    """real[] on PostgreSQL, a float32 BLOB on MySQL/MariaDB."""

    __tablename__ = "vbf_docs32"
    __simhash_source__ = "embedding"
    __simhash_fingerprinter__ = SIGNER

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=False)
    embedding: Mapped[Any] = mapped_column(FLOAT32_VECTOR, nullable=True)


class WideBlob(simsql.WideSimHashMixin, Base):
    """The wide signature, float32 bytes (``bytea`` / BLOB)."""

    __tablename__ = "vbf_wide_blobs"
    __simhash_source__ = "embedding"
    __simhash_fingerprinter__ = SIGNER

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=False)
    embedding: Mapped[Any] = mapped_column(LargeBinary, nullable=True)


class JsonDoc(simsql.SimHashMixin, Base):
    """JSON on every server, written by SQLAlchemy's JSON type (which stores None as JSON null)."""

    __tablename__ = "vbf_json_docs"
    __simhash_source__ = "embedding"
    __simhash_fingerprinter__ = SIGNER

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=False)
    embedding: Mapped[Any] = mapped_column(JSON, nullable=True)


def _is_mysql(engine: Engine) -> bool:
    return engine.dialect.name in ("mysql", "mariadb")


def _vectors(n: int, seed: int = 4) -> np.ndarray:
    """float32 values, so every column type holds them exactly."""
    return np.random.default_rng(seed).normal(size=(n, DIMENSIONS)).astype(np.float32).astype(np.float64)


def _as_stored(engine: Engine, model: type, vector: Any) -> Any:
    if vector is None:
        return None
    if model is WideBlob or (model is Doc32 and _is_mysql(engine)):
        return np.asarray(vector, dtype="<f4").tobytes()
    return [float(x) for x in vector]


def _raw_load(engine: Engine, model: type, vectors: list[Any]) -> None:
    """Rows written as a bulk loader writes them: no signature."""
    simsql_metadata.create_all(engine)  # the registry, so that status lists the table
    Base.metadata.create_all(engine)
    rows = [{"id": i + 1, "embedding": _as_stored(engine, model, v)} for i, v in enumerate(vectors)]
    with engine.begin() as connection:
        connection.execute(insert(model.__table__), rows)  # type: ignore[attr-defined]


def _column(engine: Engine, model: type, name: str) -> dict[int, Any]:
    table = model.__table__  # type: ignore[attr-defined]
    with engine.connect() as connection:
        return dict(connection.execute(select(table.c.id, table.c[name]).order_by(table.c.id)).all())


def _status(engine: Engine, model: type | str) -> simsql.TableStatus:
    name = model if isinstance(model, str) else model.__tablename__  # type: ignore[attr-defined]
    return next(s for s in simsql.status(engine) if s.table == name)


@pytest.mark.parametrize("model", [Doc, Doc32], ids=["float64", "float32"])
def test_backfill_signs_a_vector_column_in_batches(any_engine: Engine, model: type) -> None:
    vectors = _vectors(23)
    loaded: list[Any] = list(vectors)
    loaded[6] = None  # a NULL vector: no signature, not counted missing
    _raw_load(any_engine, model, loaded)
    assert set(_column(any_engine, model, "simhash").values()) == {None}

    result = simsql.backfill(any_engine, model, batch_size=5, workers=0)

    expected = SIGNER.fingerprint_many(np.delete(vectors, 6, axis=0))
    signed = _column(any_engine, model, "simhash")
    assert signed.pop(7) is None
    assert [s if s is None else s % 2**64 for s in signed.values()] == expected
    assert (result.rows_read, result.rows_fingerprinted, result.rows_skipped_changed) == (22, 22, 0)
    status = _status(any_engine, model)
    assert (status.rows_missing, status.rows_stale, status.rows_fingerprinted) == (0, 0, 22)
    again = simsql.backfill(any_engine, model, batch_size=5, workers=0)
    assert again.rows_read == 0
    with any_engine.begin() as connection:  # the vector changes behind simsql: the signature goes...
        connection.execute(update(model.__table__).where(model.__table__.c.id == 3).values(  # type: ignore[attr-defined]
            embedding=_as_stored(any_engine, model, -vectors[2])
        ))
    assert _column(any_engine, model, "simhash")[3] is None
    simsql.backfill(any_engine, model, batch_size=5, workers=0)  # ...and the backfill brings the new one
    assert _column(any_engine, model, "simhash")[3] % 2**64 == SIGNER.fingerprint(-vectors[2])


def test_backfill_writes_the_wide_words_of_a_vector(any_engine: Engine) -> None:
    vectors = _vectors(12, seed=8)
    _raw_load(any_engine, WideBlob, list(vectors))
    simsql.backfill(any_engine, WideBlob, batch_size=4, workers=0)
    names = simsql.store.binding_for(WideBlob).names
    stored = [_column(any_engine, WideBlob, name) for name in names.signature_words]
    expected = SIGNER.signatures_many(vectors)
    for key in range(1, 13):
        assert tuple(words[key] % 2**64 for words in stored) == expected[key - 1].words
    assert _status(any_engine, WideBlob).rows_missing_wide == 0


@pytest.mark.parametrize(
    ("bad", "message"),
    [
        ([0.0] * DIMENSIONS, "all zeros"),
        ([1.0] * (DIMENSIONS + 1), f"expected vectors of {DIMENSIONS} numbers"),
        ([float("nan")] + [1.0] * (DIMENSIONS - 1), "NaN or infinity"),
    ],
    ids=["zeros", "length", "nan"],
)
def test_a_bad_vector_stops_the_backfill_naming_its_key(any_engine: Engine, bad: list[float], message: str) -> None:
    vectors: list[Any] = list(_vectors(10, seed=9))
    vectors[6] = bad  # id 7, in the second batch of 4
    _raw_load(any_engine, Doc32, vectors)  # real[] / float32 BLOB: NaN storable on both
    with pytest.raises(ValueError, match=rf"vbf_docs32.*\[7\].*{message}"):
        simsql.backfill(any_engine, Doc32, batch_size=4, workers=0)
    signed = _column(any_engine, Doc32, "simhash")
    assert [key for key, s in signed.items() if s is not None] == [1, 2, 3, 4]  # the batch before it is kept

    with any_engine.begin() as connection:  # the user fixes the row; the rerun resumes
        connection.execute(update(Doc32.__table__).where(Doc32.__table__.c.id == 7).values(  # type: ignore[attr-defined]
            embedding=_as_stored(any_engine, Doc32, [1.0] * DIMENSIONS)
        ))
    simsql.backfill(any_engine, Doc32, batch_size=4, workers=0)
    assert None not in _column(any_engine, Doc32, "simhash").values()
    assert _status(any_engine, Doc32).rows_missing == 0


def test_the_stored_digest_is_the_servers(any_engine: Engine) -> None:
    """The signature is kept by the table's trigger only with the digest of the vector the
    server holds: the backfill stores the server's own digest of the value it read."""
    _raw_load(any_engine, Doc, list(_vectors(3, seed=2)))
    simsql.backfill(any_engine, Doc, batch_size=2, workers=0)
    status = _status(any_engine, Doc)
    assert (status.rows_fingerprinted, status.rows_stale) == (3, 0)
    with any_engine.connect() as connection:
        unverified = connection.execute(text("SELECT count(*) FROM vbf_docs WHERE simhash_src IS NULL")).scalar_one()
    assert unverified == 0


def test_a_json_null_is_no_vector_and_is_not_missing(any_engine: Engine) -> None:
    vectors: list[Any] = list(_vectors(5, seed=3))
    vectors[1] = None  # JSON null, not SQL NULL
    _raw_load(any_engine, JsonDoc, vectors)
    result = simsql.backfill(any_engine, JsonDoc, batch_size=2, workers=0)
    assert (result.rows_fingerprinted, result.rows_empty) == (4, 1)
    signed = _column(any_engine, JsonDoc, "simhash")
    assert signed[2] is None
    assert [signed[k] % 2**64 for k in (1, 3, 4, 5)] == SIGNER.fingerprint_many(np.delete(np.array(_vectors(5, seed=3)), 1, axis=0))
    status = _status(any_engine, JsonDoc)
    assert (status.rows_missing, status.rows_no_text, status.rows_fingerprinted) == (0, 1, 4)


@pytest.mark.parametrize("side_table", [False, True], ids=["columns", "side_table"])
def test_attach_table_with_a_vector_fingerprinter_then_backfill(any_engine: Engine, side_table: bool) -> None:
    """A plain table (no model) with a vector column: attached with a VectorFingerprinter,
    backfilled by name, kept by its triggers."""
    vectors = _vectors(11, seed=12)
    # float32 bytes in columns mode, JSON / double precision[] beside a side table (a BLOB
    # beside a side table: test_a_blob_beside_a_side_table_is_signed_on_mysql)
    mysql = _is_mysql(any_engine)
    column = {(False, False): "bytea", (True, False): "BLOB", (False, True): "double precision[]", (True, True): "JSON"}[
        (mysql, side_table)
    ]

    def stored(vector: np.ndarray) -> Any:
        if not side_table:
            return vector.astype("<f4").tobytes()
        return json.dumps([float(x) for x in vector]) if mysql else [float(x) for x in vector]

    with any_engine.begin() as connection:
        connection.execute(text(f"CREATE TABLE vbf_plain (id INTEGER PRIMARY KEY, embedding {column})"))
        connection.execute(
            text("INSERT INTO vbf_plain (id, embedding) VALUES (:id, :v)"),
            [{"id": i + 1, "v": None if i == 3 else stored(v)} for i, v in enumerate(vectors)],
        )
    entry = simsql.attach_table(any_engine, "vbf_plain", ["embedding"], fingerprinter=SIGNER, side_table=side_table)
    assert entry.config_id == SIGNER.config_id
    again = simsql.attach_table(any_engine, "vbf_plain", ["embedding"], side_table=side_table)  # the recorded one kept
    assert again.config_id == SIGNER.config_id
    result = simsql.backfill(any_engine, "vbf_plain", batch_size=4, workers=0)
    assert result.rows_fingerprinted == 10
    holder = entry.side_table if side_table else "vbf_plain"
    with any_engine.connect() as connection:
        signed = dict(connection.execute(text(f"SELECT id, simhash FROM {holder} WHERE simhash IS NOT NULL")).all())
    assert {k: s % 2**64 for k, s in signed.items()} == {
        i + 1: fp for i, fp in zip([i for i in range(11) if i != 3], SIGNER.fingerprint_many(np.delete(vectors, 3, axis=0)))
    }
    status = _status(any_engine, "vbf_plain")
    assert (status.rows_missing, status.rows_stale, status.rows_fingerprinted) == (0, 0, 10)
    with any_engine.begin() as connection:  # a writer changes a vector: its signature goes, the backfill brings the new one
        connection.execute(text("UPDATE vbf_plain SET embedding = :v WHERE id = 2"), {"v": stored(-vectors[1])})
    assert _status(any_engine, "vbf_plain").rows_missing == 1
    simsql.backfill(any_engine, "vbf_plain", batch_size=4, workers=0)
    with any_engine.connect() as connection:
        assert connection.execute(text(f"SELECT simhash FROM {holder} WHERE id = 2")).scalar_one() % 2**64 == SIGNER.fingerprint(-vectors[1])
    with pytest.raises(simsql.text.errors.SchemaError, match="vector"):  # a column that cannot hold a vector
        simsql.attach_table(any_engine, "vbf_plain", ["id"], fingerprinter=SIGNER, prefix="other")


def test_attach_table_wide_with_a_vector_fingerprinter(any_engine: Engine) -> None:
    """``wide=True``: the backfill writes the 256-bit words and builds the wide indexes."""
    vectors = _vectors(6, seed=13)
    column = "JSON" if _is_mysql(any_engine) else "double precision[]"
    with any_engine.begin() as connection:
        connection.execute(text(f"CREATE TABLE vbf_plain_wide (id INTEGER PRIMARY KEY, embedding {column})"))
        connection.execute(
            text("INSERT INTO vbf_plain_wide (id, embedding) VALUES (:id, :v)"),
            [{"id": i + 1, "v": json.dumps([float(x) for x in v]) if _is_mysql(any_engine) else [float(x) for x in v]}
             for i, v in enumerate(vectors)],
        )
    entry = simsql.attach_table(any_engine, "vbf_plain_wide", ["embedding"], fingerprinter=SIGNER, wide=True)
    assert entry.names.wide
    simsql.backfill(any_engine, "vbf_plain_wide", batch_size=4, workers=0)
    words = ", ".join(entry.names.signature_words)
    with any_engine.connect() as connection:
        rows = connection.execute(text(f"SELECT {words} FROM vbf_plain_wide ORDER BY id")).all()
    assert [tuple(w % 2**64 for w in row) for row in rows] == [s.words for s in SIGNER.signatures_many(vectors)]
    assert _status(any_engine, "vbf_plain_wide").rows_missing_wide == 0


def test_a_vector_changed_while_its_batch_is_signed_gets_the_new_signature(any_engine: Engine) -> None:
    """A writer changes a vector after its batch was read and before it is written: the stale
    signature is not kept (the trigger compares the digest), and the catch-up pass signs the new
    vector. Batches are read two ahead of the write, so the change made when the first batch is
    written lands in the third, already signed."""
    vectors = _vectors(6, seed=14)
    _raw_load(any_engine, Doc, list(vectors))
    changed: list[int] = []

    def progress(done: int, total: int) -> None:
        if not changed:
            changed.append(done)
            with any_engine.begin() as connection:
                connection.execute(update(Doc.__table__).where(Doc.__table__.c.id == 5).values(  # type: ignore[attr-defined]
                    embedding=_as_stored(any_engine, Doc, -vectors[4])
                ))

    result = simsql.backfill(any_engine, Doc, batch_size=2, workers=0, progress=progress)
    assert result.rows_skipped_changed == 1
    signed = _column(any_engine, Doc, "simhash")
    assert signed[5] % 2**64 == SIGNER.fingerprint(-vectors[4])
    assert _status(any_engine, Doc).rows_missing == 0


def test_a_blob_beside_a_side_table_is_signed_on_mysql(mysql_engine: Engine) -> None:
    """MySQL/MariaDB: a float32 BLOB beside a side table. The digest read the BLOB as UTF-8
    text, which the server refused when the backfill wrote the side table; it is now of the
    bytes themselves, so the rows are signed."""
    vectors = _vectors(3, seed=15)
    with mysql_engine.begin() as connection:
        connection.execute(text("CREATE TABLE vbf_blob_side (id INTEGER PRIMARY KEY, embedding BLOB)"))
        connection.execute(
            text("INSERT INTO vbf_blob_side (id, embedding) VALUES (:id, :v)"),
            [{"id": i + 1, "v": v.astype("<f4").tobytes()} for i, v in enumerate(vectors)],
        )
    entry = simsql.attach_table(mysql_engine, "vbf_blob_side", ["embedding"], fingerprinter=SIGNER, side_table=True)
    simsql.backfill(mysql_engine, "vbf_blob_side", workers=0)
    with mysql_engine.connect() as connection:
        stored = connection.execute(text(f"SELECT simhash FROM {entry.side_table} ORDER BY id")).scalars().all()
    assert [s % 2**64 for s in stored] == SIGNER.fingerprint_many(vectors)


def test_a_blob_edit_of_bytes_that_are_not_utf8_drops_the_signature_on_mysql(mysql_engine: Engine) -> None:
    """MySQL/MariaDB, float32 BLOB, columns mode: the digest the trigger compares must be of the
    bytes themselves. Read as UTF-8 text, 0xFF and 0xFE both became ``?``, so a raw write that
    changed only such bytes kept the signature of the old vector."""
    vector = _vectors(1, seed=21)[0]
    _raw_load(mysql_engine, Doc32, [vector])
    stored = bytearray(np.asarray(vector, dtype="<f4").tobytes())
    stored[0] = 0xFF  # the lowest mantissa byte of the first number: never valid UTF-8
    with mysql_engine.begin() as connection:
        connection.execute(update(Doc32.__table__).where(Doc32.__table__.c.id == 1).values(embedding=bytes(stored)))  # type: ignore[attr-defined]
    simsql.backfill(mysql_engine, Doc32, batch_size=5, workers=0)
    assert _column(mysql_engine, Doc32, "simhash")[1] is not None
    stored[0] = 0xFE  # another vector (its first number moves in its last bits), also never UTF-8
    with mysql_engine.begin() as connection:
        connection.execute(update(Doc32.__table__).where(Doc32.__table__.c.id == 1).values(embedding=bytes(stored)))  # type: ignore[attr-defined]
    assert _column(mysql_engine, Doc32, "simhash")[1] is None
