"""The originality check end to end, on every server (``tables``: tests/conftest.py): disguised
copies are caught at the default threshold, and the second stage (shared word 5-shingles) keeps
coincidental fingerprints out."""

from __future__ import annotations

import ast
import inspect
import json

import pytest
from sqlalchemy import Engine, update
from sqlalchemy.orm import Session

import simsql
import simsql.bits
import simsql.store
import simsql.text.fingerprint
from simsql.text.containment import containment, shingles

from .models import MODELS

MODES = ["columns", "side_table"]


def _article() -> str:
    """About 1,500 words of real prose: the docstrings of the json package, read with ast."""
    parts = [ast.get_docstring(node) for node in ast.walk(ast.parse(inspect.getsource(json.decoder)))
             if isinstance(node, (ast.Module, ast.FunctionDef, ast.ClassDef))]
    parts += [ast.get_docstring(node) for node in ast.walk(ast.parse(inspect.getsource(json.encoder)))
              if isinstance(node, (ast.Module, ast.FunctionDef, ast.ClassDef))]
    return "\n\n".join(p for p in parts if p)


HEADER = (
    "Reposted from our partner blog. All rights reserved by the original authors; this copy is "
    "shared for educational purposes and may be removed on request. Follow us for daily tips."
)
FOOTER = (
    "If you liked this article, subscribe to the newsletter, share it with your colleagues and "
    "leave a comment below: we read every one of them and answer within a day or two."
)


def test_containment_tells_copies_from_strangers() -> None:
    article = _article()
    assert containment(article, f"{HEADER}\n\n{article}\n\n{FOOTER}") == 1.0
    assert containment(article, "Parliament debated the new tax law for small businesses until late") == 0.0
    assert containment("美国51区的秘密基地在沙漠里面", "转载：美国51区的秘密基地在沙漠里面。") == 1.0
    assert shingles("") == frozenset() and containment("", article) == 0.0
    with pytest.raises(TypeError):
        shingles(None)  # type: ignore[arg-type]


@pytest.mark.parametrize("mode", MODES)
def test_a_copy_with_header_and_footer_is_caught_by_default(tables: Engine, mode: str) -> None:
    model = MODELS[mode]
    article = _article()
    copy = f"{HEADER}\n\n{article}\n\n{FOOTER}"
    distance = simsql.bits.hamming(simsql.text.fingerprint.simhash(f"Original\n{article}"), simsql.text.fingerprint.simhash(copy))
    assert distance > 3, "the copy must be beyond the one-probe radius for this test to mean anything"
    with Session(tables) as session:
        original = model(title="Original", body=article)
        session.add_all([original, model(title="Other", body="Parliament debated the new tax law until late")])
        session.commit()
        match = simsql.find_original(session, model, copy)
        assert match is not None and match.row.id == original.id and match.distance == distance


@pytest.mark.parametrize("mode", MODES)
def test_a_coincidental_fingerprint_is_not_reported_as_a_copy(tables: Engine, mode: str) -> None:
    model = MODELS[mode]
    binding = simsql.store.binding_for(model)
    submitted = _article()
    with Session(tables) as session:
        stranger = model(title="Tax", body="Parliament debated the new tax law for small businesses until late")
        session.add(stranger)
        session.commit()
        # A stranger whose fingerprint happens to sit 2 bits from the submission's.
        near = simsql.text.fingerprint.simhash(submitted) ^ 0b101
        key = binding.table_keys[0]
        session.execute(update(binding.table).where(key == stranger.id).values({binding.fingerprint.name: near}))
        session.commit()
        assert simsql.find_original(session, model, submitted) is None
        unverified = simsql.find_original(session, model, submitted, min_containment=None)
        assert unverified is not None and unverified.row.id == stranger.id and unverified.distance == 2


def test_find_original_refuses_bad_arguments(tables: Engine) -> None:
    model = MODELS["columns"]
    with Session(tables) as session:
        with pytest.raises(ValueError):
            simsql.find_original(session, model, "some text", min_containment=1.5)
        with pytest.raises(ValueError):
            simsql.find_original(session, model, "some text", candidates=0)
        with pytest.raises(TypeError):
            simsql.find_original(session, model, None)  # type: ignore[arg-type]


@pytest.mark.parametrize("max_distance", [11, 13, 15])
def test_a_wider_check_probes_to_its_bound_instead_of_scanning(tables: Engine, max_distance: int) -> None:
    """``find_original(max_distance=13)`` (advised with a background) must reach its bound with
    radius-3 probes, one index branch, not run radius-2 bands and then a scan of the table for
    every original submission. The guarded plan names its band checks ``simsql_band_<r>``."""
    from sqlalchemy import event

    model = MODELS["columns"]
    article = _article()
    statements: list[str] = []

    def capture(conn: object, cursor: object, statement: str, *args: object) -> None:
        statements.append(statement)

    with Session(tables) as session:
        session.add(model(title="Original", body=article))
        session.commit()
        event.listen(tables, "before_cursor_execute", capture)
        try:
            match = simsql.find_original(session, model, f"{HEADER}\n\n{article}\n\n{FOOTER}", max_distance=max_distance)
        finally:
            event.remove(tables, "before_cursor_execute", capture)
    assert match is not None
    ranking = [s for s in statements if "bit_count" in s or "BIT_COUNT" in s]
    assert ranking and not any("simsql_band_" in s for s in ranking)


def _mask(bits_per_block: tuple[int, int, int, int]) -> int:
    """A 64-bit mask with the given number of bits set in each 16-bit block (block 0 highest)."""
    mask = 0
    for block, count in enumerate(bits_per_block):
        high = 16 * (3 - block)
        mask |= sum(1 << (high + bit) for bit in range(count))
    return mask


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(
    ("bits_per_block", "found_by_default"),
    [((2, 4, 4, 4), True), ((1, 4, 4, 4), True), ((3, 3, 3, 2), True), ((4, 3, 3, 3), False), ((2, 4, 4, 5), False)],
)
def test_the_default_check_reaches_past_its_probes_where_a_block_is_close(
    tables: Engine, mode: str, bits_per_block: tuple[int, int, int, int], found_by_default: bool
) -> None:
    """The default check probes each block within 2 bits (every row within 11 bits) and accepts
    rows up to 14 bits, so a copy 12-14 bits away is found when one of its blocks is within 2
    bits, as most disguised copies are (BENCHMARKS.md); a row whose every block is 3 bits off, or
    one past 14 bits, is not, and ``probe_radius=3`` probes exactly to 15 bits."""
    model = MODELS[mode]
    binding = simsql.store.binding_for(model)
    submitted = _article()
    mask = _mask(bits_per_block)
    with Session(tables) as session:
        stranger = model(title="Tax", body="Parliament debated the new tax law for small businesses until late")
        session.add(stranger)
        session.commit()
        key = binding.table_keys[0]
        near = simsql.text.fingerprint.simhash(submitted) ^ mask
        session.execute(update(binding.table).where(key == stranger.id).values({binding.fingerprint.name: near}))
        session.commit()
        found = simsql.find_original(session, model, submitted, min_containment=None)
        assert (found is not None) is found_by_default
        if found is not None:
            assert found.row.id == stranger.id and found.distance == sum(bits_per_block)
        exact = simsql.find_original(session, model, submitted, max_distance=15, probe_radius=3, min_containment=None)
        assert exact is not None and exact.distance == sum(bits_per_block)


def test_the_default_check_answers_from_its_probes_without_scanning(tables: Engine) -> None:
    """Reaching past the probes must not bring back radius bands and a scan of the table."""
    from sqlalchemy import event

    model = MODELS["columns"]
    statements: list[str] = []

    def capture(conn: object, cursor: object, statement: str, *args: object) -> None:
        statements.append(statement)

    with Session(tables) as session:
        session.add(model(title="Original", body=_article()))
        session.commit()
        event.listen(tables, "before_cursor_execute", capture)
        try:
            assert simsql.find_original(session, model, "Parliament debated the new tax law until late") is None
        finally:
            event.remove(tables, "before_cursor_execute", capture)
    ranking = [s for s in statements if "bit_count" in s or "BIT_COUNT" in s]
    assert len(ranking) == 1 and "simsql_band_" not in ranking[0]


def _word_grams(text: str) -> set[tuple[str, ...]]:
    """The word 5-grams themselves (no hashing); a text shorter than 5 words is one gram."""
    from simsql.text.containment import _TOKEN
    from simsql.text.tokenize import normalize

    tokens = _TOKEN.findall(normalize(text))
    return {tuple(tokens[i : i + 5]) for i in range(max(len(tokens) - 4, 1))} if tokens else set()


def _exact_containment(a: str, b: str) -> float:
    """The definition, on the word 5-grams themselves."""
    ga, gb = _word_grams(a), _word_grams(b)
    return len(ga & gb) / min(len(ga), len(gb)) if ga and gb else 0.0


@pytest.mark.parametrize(
    "pair",
    [
        ("json", "json-edited"), ("json", "short"), ("short", "short-copy"), ("zh", "zh-edited"), ("json", "zh"),
    ],
)  # fmt: skip
def test_shingle_hashes_give_the_containment_of_the_word_grams_themselves(pair: tuple[str, str]) -> None:
    """Shingles are hashed, so two texts compare in time linear in their length; on real text
    the hashed sets must have exactly the grams' sizes and overlap (no collision)."""
    article = _article()
    words = article.split()
    texts = {
        "json": article,
        "json-edited": " ".join(w if i % 37 else "swapped" for i, w in enumerate(words)),
        "short": "Parliament debated the tax law",
        "short-copy": "Parliament debated the tax",
        "zh": "美国51区的秘密基地在沙漠里面，" * 3 + "这是一段用来测试的中文文字，包含许多不同的汉字和标点。",
        "zh-edited": "转载：美国51区的秘密基地在沙漠里面，" * 3 + "这是一段用来测试的中文文本，包含许多不同的汉字。",
    }
    a, b = texts[pair[0]], texts[pair[1]]
    assert containment(a, b) == _exact_containment(a, b)
    assert len(shingles(a)) == len(_word_grams(a))

