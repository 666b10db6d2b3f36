"""A wide background (issue 43): the whole 256-bit signature centred on the table's own text.

A wide table's block indexes are cut mostly from words 1-3 of the signature, which plain signs
leave leaning on real text: blocks crowd, so a fresh text's probes read many rows, and unrelated
rows come nearer than chance. These tests pin the rule (an independent Python-integer
implementation), the compatibility promise (a background without wide centres keeps every stored
signature), the fit (it balances the bits of words 1-3) and the table path (fit_background on a
wide table, then refingerprint, then the check).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pytest
import xxhash
from sqlalchemy import Integer, String
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

from simsql import Fingerprinter
from simsql.text.background import CENTRE_SCALE, WIDE_CENTRES, Background
from simsql.text.signature import wide_seeds
from simsql.text.tokenize import is_han_feature

from .test_background import MIXED, synthetic

if TYPE_CHECKING:
    from sqlalchemy import Engine

WIDE = Fingerprinter(version=3)
LATIN = tuple((37 * i) % 601 - 300 for i in range(64))
HAN = tuple(250 - (53 * i) % 503 for i in range(64))
WIDE_LATIN = tuple((29 * i) % 401 - 200 for i in range(WIDE_CENTRES))
WIDE_HAN = tuple(180 - (31 * i) % 367 for i in range(WIDE_CENTRES))
NARROW_BG = Background(LATIN, HAN, WIDE.config_id)
WIDE_BG = Background(LATIN, HAN, WIDE.config_id, wide_latin=WIDE_LATIN, wide_han=WIDE_HAN)
TEXTS = [MIXED, "plain english words only, nothing else at all", "只有中文的句子，没有别的文字。", "x"]


def reference_word(text: str, word: int) -> int:
    """Word ``word`` of the signature under WIDE_BG, bit by bit in Python integers."""
    counts = WIDE.feature_counts(text)
    weights = [int(w) for w in WIDE._weights(counts)]
    seed = wide_seeds(WIDE.seed)[word]
    latin = LATIN if word == 0 else WIDE_LATIN[64 * (word - 1) : 64 * word]
    han = HAN if word == 0 else WIDE_HAN[64 * (word - 1) : 64 * word]
    out = 0
    for bit in range(64):
        score = 0
        for feature, weight in zip(counts, weights):
            sign = 1 if (xxhash.xxh3_64_intdigest(feature, seed) >> bit) & 1 else -1
            score += CENTRE_SCALE * sign * weight - weight * (han[bit] if is_han_feature(feature) else latin[bit])
        out |= (score > 0) << bit
    return out


@pytest.mark.parametrize("text", TEXTS, ids=["mixed", "latin", "han", "one-word"])
def test_every_word_is_centred_as_an_independent_integer_implementation_says(text: str) -> None:
    signature = Fingerprinter(version=3, background=WIDE_BG).signature(text)
    assert [w & (2**64 - 1) for w in signature.words] == [reference_word(text, k) for k in range(4)]


def test_without_wide_centres_words_one_to_three_keep_their_plain_signs() -> None:
    """The compatibility promise: a background stored before wide centres existed (or fitted
    without them) gives every table the signatures it already holds."""
    plain = WIDE.signatures_many(TEXTS)
    narrow = Fingerprinter(version=3, background=NARROW_BG).signatures_many(TEXTS)
    wide = Fingerprinter(version=3, background=WIDE_BG).signatures_many(TEXTS)
    assert [s.words[1:] for s in narrow] == [s.words[1:] for s in plain]
    assert [s.words[0] for s in wide] == [s.words[0] for s in narrow], "word 0 is the fingerprint: wide centres never touch it"
    assert [s.words[1:] for s in wide] != [s.words[1:] for s in narrow]
    assert "wide_latin" not in NARROW_BG.settings and Background.from_settings(NARROW_BG.settings) == NARROW_BG


def test_one_text_and_a_batch_agree() -> None:
    fingerprinter = Fingerprinter(version=3, background=WIDE_BG)
    assert [fingerprinter.signature(t) for t in TEXTS] == fingerprinter.signatures_many(TEXTS)


def test_fitting_wide_balances_words_one_to_three() -> None:
    sample, later = synthetic(400, seed=1), synthetic(600, seed=2)
    narrow = Background.fit(sample, WIDE)
    wide = Background.fit(sample, WIDE, wide=True)
    assert not narrow.wide and wide.wide
    assert (wide.latin, wide.han) == (narrow.latin, narrow.han), "word 0's centres do not depend on the others"

    def lean(fingerprinter: Fingerprinter) -> np.ndarray:
        words = np.array([[w & (2**64 - 1) for w in s.words[1:]] for s in fingerprinter.signatures_many(later)], dtype="<u8")
        bits = np.unpackbits(words.view(np.uint8), axis=1, bitorder="little")
        return np.abs(bits.mean(axis=0) - 0.5)

    plain, centred = lean(Fingerprinter(version=3, background=narrow)), lean(Fingerprinter(version=3, background=wide))
    assert plain.mean() > 0.15, "the synthetic corpus should lean (else this test proves nothing)"
    assert centred.mean() < 0.06 and centred.max() < 0.15


def test_save_load_and_identity(tmp_path: Path) -> None:
    path = tmp_path / "wide.json"
    WIDE_BG.save(path)
    loaded = Background.load(path)
    assert loaded == WIDE_BG and loaded.wide
    assert Fingerprinter(version=3, background=loaded).config_id == Fingerprinter(version=3, background=WIDE_BG).config_id
    assert Fingerprinter(version=3, background=WIDE_BG).config_id != Fingerprinter(version=3, background=NARROW_BG).config_id
    assert "wide=True" in repr(WIDE_BG)


@pytest.mark.parametrize(
    ("wide_latin", "wide_han", "error"),
    [
        (WIDE_LATIN[:64], WIDE_HAN, ValueError),
        (WIDE_LATIN, (), ValueError),
        ((), WIDE_HAN, ValueError),
        ((1.5,) * WIDE_CENTRES, WIDE_HAN, TypeError),
        ((CENTRE_SCALE + 1,) * WIDE_CENTRES, WIDE_HAN, ValueError),
        ("0" * WIDE_CENTRES, WIDE_HAN, TypeError),
    ],
    ids=["short", "han-missing", "latin-missing", "float", "out-of-range", "string"],
)
def test_bad_wide_centres_are_refused(wide_latin: object, wide_han: object, error: type[Exception]) -> None:
    with pytest.raises(error):
        Background(LATIN, HAN, WIDE.config_id, wide_latin=wide_latin, wide_han=wide_han)  # type: ignore[arg-type]


def test_script_sums_refuse_a_bad_word_count() -> None:
    for words in (0, 5, True, 1.0):
        with pytest.raises(ValueError, match="words must be an int"):
            WIDE.script_sums(["some text"], words)  # type: ignore[arg-type]


# -- on a table ---------------------------------------------------------------------------


def _stored_words(engine: Engine) -> dict[int, tuple[int, ...]]:
    from sqlalchemy import text

    from simsql.bits import to_unsigned

    with engine.connect() as connection:
        rows = connection.execute(text("SELECT id, simhash, simhash_w1, simhash_w2, simhash_w3 FROM docs WHERE simhash IS NOT NULL")).all()
    return {row[0]: tuple(to_unsigned(int(w)) for w in row[1:]) for row in rows}


def test_a_wide_table_fits_a_wide_background_moves_over_and_checks(engine: Engine) -> None:
    """fit_background(wide=True) centres the whole signature (word 0 alone by default);
    refingerprint moves the table; every stored word is the fingerprinter's; the check finds a
    stored text."""
    from sqlalchemy import text

    import simsql
    import simsql.alembic
    from simsql.lifecycle.refingerprinting import refingerprint
    from simsql.lifecycle.sampling import fit_background
    from simsql.store.storage import join_text

    from .tables import build_docs

    build_docs(engine)
    simsql.alembic.upgrade(engine)
    simsql.attach_table(engine, "docs", ["title", "body"], wide=True)
    simsql.backfill(engine, "docs", workers=0)
    background = fit_background(engine, "docs", fingerprinter=WIDE, sample=1000, wide=True)
    assert background.wide and background.fitted_for == WIDE.config_id
    assert not fit_background(engine, "docs", fingerprinter=WIDE, sample=1000).wide
    centred = Fingerprinter(version=3, background=background)
    assert refingerprint(engine, "docs", to=centred, workers=0).switched
    with engine.connect() as connection:
        rows = connection.execute(text("SELECT id, title, body FROM docs")).all()
    texts = {row[0]: joined for row in rows if (joined := join_text([row[1], row[2]])) is not None}
    stored = _stored_words(engine)
    assert set(stored) == {key for key, body in texts.items() if centred.feature_counts(body)} and len(stored) > 1000
    expected = {key: tuple(w & (2**64 - 1) for w in centred.signature(body).words) for key, body in list(texts.items())[:200]}
    assert {key: stored[key] for key in expected} == expected
    with engine.connect() as connection:
        Docs = simsql.reflect(connection, "docs")
    from sqlalchemy.orm import Session

    with Session(engine) as session:
        match = simsql.find_original(session, Docs, texts[11])
    assert match is not None and match.row.id == 11


def test_a_centred_table_gets_twice_the_probes() -> None:
    """Balanced buckets hold about a tenth of the rows leaning ones do, so a table centred on a
    wide background probes twice as deep (CENTRED_BUDGET_SCALE); a background of word 0 alone
    leaves the budget as it was. wide_search and find_original take it from the model."""
    from sqlalchemy.dialects import postgresql

    import simsql
    from simsql.queries.wide import (
        CENTRED_BUDGET_SCALE,
        is_centred,
        probe_budget,
        wide_search,
    )
    from simsql.schema.names import WIDE_LAYOUT
    from simsql.store import binding_for
    from simsql.text.signature import probe_values

    class Base(DeclarativeBase):
        pass

    class Centred(simsql.WideSimHashMixin, Base):
        __tablename__ = "centred_docs"
        __simhash_source__ = ("body",)
        __simhash_fingerprinter__ = Fingerprinter(version=3, background=WIDE_BG)
        id: Mapped[int] = mapped_column(Integer, primary_key=True)
        body: Mapped[str] = mapped_column(String)

    class Narrow(simsql.WideSimHashMixin, Base):
        __tablename__ = "narrow_docs"
        __simhash_source__ = ("body",)
        __simhash_fingerprinter__ = Fingerprinter(version=3, background=NARROW_BG)
        id: Mapped[int] = mapped_column(Integer, primary_key=True)
        body: Mapped[str] = mapped_column(String)

    assert CENTRED_BUDGET_SCALE == 2
    assert is_centred(binding_for(Centred)) and not is_centred(binding_for(Narrow))
    signature = Fingerprinter(version=3, background=WIDE_BG).signature(MIXED)
    assert probe_budget(signature, True) == 2 * probe_budget(signature) == 2 * probe_budget(signature, False)
    bound = wide_search(Centred, signature).compile(dialect=postgresql.dialect()).params
    probed = sum(len(bound[f"simsql_v{block}"]) for block in range(WIDE_LAYOUT.count))
    assert probed == len(probe_values(signature, WIDE_LAYOUT, budget=2 * probe_budget(signature)))
    narrow = wide_search(Narrow, signature).compile(dialect=postgresql.dialect()).params
    assert sum(len(narrow[f"simsql_v{block}"]) for block in range(WIDE_LAYOUT.count)) == len(
        probe_values(signature, WIDE_LAYOUT, budget=probe_budget(signature))
    )


def test_mysql_a_wide_table_fits_a_wide_background_and_is_attached_centred(mysql_engine: Engine) -> None:
    """MySQL/MariaDB move offline (no online refingerprint): fit on the wide table (wide=True),
    detach, attach wide with the background, backfill; every stored word is the
    fingerprinter's (BIGINT UNSIGNED), and the check finds a stored text."""
    from sqlalchemy import text
    from sqlalchemy.orm import Session

    import simsql
    import simsql.alembic
    from simsql.lifecycle.sampling import fit_background
    from simsql.store.storage import join_text

    from .tables import build_docs

    build_docs(mysql_engine, rows=600)
    simsql.alembic.upgrade(mysql_engine)
    simsql.attach_table(mysql_engine, "docs", ["title", "body"], wide=True)
    background = fit_background(mysql_engine, "docs", fingerprinter=WIDE, sample=500, wide=True)
    assert background.wide
    centred = Fingerprinter(version=3, background=background)
    simsql.detach_table(mysql_engine, "docs")
    simsql.attach_table(mysql_engine, "docs", ["title", "body"], fingerprinter=centred, wide=True)
    simsql.backfill(mysql_engine, "docs", workers=0)
    with mysql_engine.connect() as connection:
        rows = connection.execute(text("SELECT id, title, body, simhash, simhash_w1, simhash_w2, simhash_w3 FROM docs")).all()
        Docs = simsql.reflect(connection, "docs")
    checked = 0
    for row in rows:
        body = join_text([row[1], row[2]])
        if body is None or not centred.feature_counts(body):
            continue
        assert tuple(int(w) for w in row[3:]) == tuple(w & (2**64 - 1) for w in centred.signature(body).words)
        checked += 1
    assert checked > 500
    with Session(mysql_engine) as session:
        body = join_text([rows[10][1], rows[10][2]])
        assert body is not None
        match = simsql.find_original(session, Docs, body)
    assert match is not None and match.row.id == rows[10][0]


def test_cli_wide_background_is_asked_for(engine: Engine, url: str, tmp_path: Path) -> None:
    """`simsql refingerprint --fit-background F` centres word 0 alone (as before);
    `--wide-background` centres the whole signature, and the table moves to that configuration."""
    import simsql
    import simsql.alembic

    from .command_line import cli, ok
    from .tables import build_docs, config_id

    build_docs(engine)
    simsql.alembic.upgrade(engine)
    simsql.attach_table(engine, "docs", ["title", "body"], wide=True)
    simsql.backfill(engine, "docs", workers=0)
    narrow, wide = tmp_path / "narrow.json", tmp_path / "wide.json"
    ok(cli("refingerprint", "--table", "docs", "--fit-background", str(narrow), "--sample", "800", "--workers", "0", "--no-progress", url=url))
    assert not Background.load(narrow).wide
    moved = ok(cli("refingerprint", "--table", "docs", "--fit-background", str(wide), "--wide-background", "--sample", "800",
                   "--workers", "0", "--no-progress", url=url))  # fmt: skip
    assert f"saved to {wide}" in moved.stdout
    background = Background.load(wide)
    assert background.wide
    assert config_id(engine, "docs") == Fingerprinter(version=3, background=background).config_id
