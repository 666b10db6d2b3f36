"""Whole-table deduplication on tables with the wide signature (issue 42): candidates from the
block self-joins, confirmed by text, checked against brute force on every server and both
storage modes; the 64-bit rule unchanged where it answers; refusals; progress."""

from __future__ import annotations

import ast
import importlib
import inspect
import json
import pickle
import random
from itertools import combinations
from typing import Any

import pytest
from sqlalchemy import Engine
from sqlalchemy.orm import Session

import simsql
import simsql.store
from simsql.errors import NotAttached
from simsql.queries import ConfirmedPair, DuplicatePair
from simsql.queries.wide_duplicates import DEDUPE_REACH, DedupeReach, flip_masks, guaranteed_distance, pair_containment, reach_for, side_radii, split_flips
from simsql.schema.names import WIDE_LAYOUT
from simsql.text.containment import shingled

from .models import Article, Base
from .wide_models import WIDE_MODELS, WideBase

MODES = ["columns", "side_table"]
MODULES = ["json.decoder", "json.encoder", "textwrap", "argparse", "difflib", "heapq", "shlex", "csv", "fractions", "string"]
HAN = "的一是在不了有和人这中大为上个国我以要他时来用们生到作地于出就分对成会可也你说年能而子那得下自后多行家方"


def _documents() -> list[str]:
    """Real prose of different origins: the docstrings of ten standard-library modules."""
    texts = []
    for name in MODULES:
        tree = ast.parse(inspect.getsource(importlib.import_module(name)))
        parts = [ast.get_docstring(n) for n in ast.walk(tree) if isinstance(n, (ast.Module, ast.FunctionDef, ast.ClassDef))]
        texts.append("\n\n".join(p for p in parts if p)[:3000])
    return texts


def _replaced_words(text: str, share: float, rng: random.Random) -> str:
    words = text.split(" ")
    for i in rng.sample(range(len(words)), int(len(words) * share)):
        words[i] = rng.choice(["lorem", "ipsum", "dolor", "amet", "sit"])
    return " ".join(words)


def _chinese(rng: random.Random, length: int = 1500) -> str:
    return "".join(rng.choice(HAN) for _ in range(length))


def _replaced_han(text: str, share: float, rng: random.Random) -> str:
    chars = list(text)
    for i in rng.sample(range(len(chars)), int(len(chars) * share)):
        chars[i] = rng.choice([c for c in HAN if c != chars[i]])
    return "".join(chars)


def _rows() -> list[tuple[int, str]]:
    """Originals, copies at 1-10% edits (words; Chinese: characters), and unrelated texts."""
    rng = random.Random(42)
    docs = _documents()
    bodies = list(docs)
    for share in (0.01, 0.02, 0.05, 0.10):
        bodies += [_replaced_words(doc, share, rng) for doc in docs[:4]]
    chinese = [_chinese(rng) for _ in range(3)]
    bodies += chinese + [_replaced_han(text, share, rng) for text in chinese for share in (0.01, 0.05)]
    return list(enumerate(bodies, 1))


def _brute_force(binding: Any, texts: dict[int, str], radius: int, bound: int, threshold: float) -> list[tuple[int, int, int, float]]:
    """The rule stated by near_duplicates on a wide table, pair by pair in Python."""
    signatures = {key: binding.fingerprinter.signature(text) for key, text in texts.items()}
    shingles = {key: shingled(text) for key, text in texts.items()}
    found = []
    for a, b in combinations(sorted(texts), 2):
        sa, sb = signatures[a], signatures[b]
        near = any(bin(x ^ y).count("1") <= radius for x, y in zip(sa.blocks(WIDE_LAYOUT), sb.blocks(WIDE_LAYOUT)))
        distance = sa.distance(sb)
        if near and distance <= bound:
            share = pair_containment(shingles[a], shingles[b])
            if share >= threshold:
                found.append((a, b, distance, share))
    return found


@pytest.fixture
def wide_tables(any_engine: Engine) -> Engine:
    WideBase.metadata.create_all(any_engine)
    return any_engine


def _load(engine: Engine, model: type) -> dict[int, str]:
    binding = simsql.store.binding_for(model)
    with Session(engine) as session:
        rows = [model(id=key, title=None, body=body) for key, body in _rows()]
        session.add_all(rows)
        session.commit()
        return {row.id: binding.text_of(row) for row in rows}


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("radius,bound", [(0, 64), (1, 64), (2, 64), (3, 80), (3, 96)])
def test_pairs_are_exactly_the_stated_rule(wide_tables: Engine, mode: str, radius: int, bound: int) -> None:
    model = WIDE_MODELS[mode]
    texts = _load(wide_tables, model)
    binding = simsql.store.binding_for(model)
    expected = _brute_force(binding, texts, radius, bound, 0.5)
    with Session(wide_tables) as session:
        pairs = simsql.near_duplicates(session, model, probe_radius=radius, wide_distance=bound)
    assert all(isinstance(pair, ConfirmedPair) and isinstance(pair, DuplicatePair) for pair in pairs)
    a, b, distance = pairs[0]  # read as the 64-bit rule's pairs are
    assert (a, b, distance) == pairs[0] and pickle.loads(pickle.dumps(pairs[0])).containment == pairs[0].containment
    assert [(p.a, p.b, p.distance) for p in pairs] == [(a, b, d) for a, b, d, _ in expected]
    assert [p.containment for p in pairs] == pytest.approx([share for *_, share in expected])
    planted = {(k, 10 + 4 * s + k) for k in range(1, 5) for s in range(4)}  # each copy with its original
    if radius >= 1:
        assert planted <= {(p.a, p.b) for p in pairs}
    assert {(27, 30), (27, 31)} <= {(p.a, p.b) for p in pairs}  # 1% and 5% of Chinese characters replaced


def test_every_pair_within_the_guaranteed_distance_is_a_candidate() -> None:
    """Pigeonhole: 8 blocks within ``radius`` bits each cover ``8 * (radius + 1) - 1`` differing bits."""
    rng = random.Random(3)
    for radius in (0, 1, 2, 3):
        masks = set(flip_masks(radius))
        assert len(masks) == sum(len(list(combinations(range(WIDE_LAYOUT.width), r))) for r in range(radius + 1))
        for _ in range(200):
            bits = rng.sample(range(WIDE_LAYOUT.count * WIDE_LAYOUT.width), guaranteed_distance(radius))
            a = rng.getrandbits(256)
            b = a ^ sum(1 << bit for bit in bits)
            blocks = [((a >> (20 * k)) ^ (b >> (20 * k))) & 0xFFFFF for k in range(WIDE_LAYOUT.count)]
            assert any(block in masks for block in blocks)


@pytest.mark.parametrize("radius", [2, 3])
def test_a_split_radius_matches_each_pair_once(any_engine: Engine, radius: int) -> None:
    """Radius 2 as one bit flipped on each side, radius 3 as one on ``a``'s side and two on
    ``b``'s (where the server hash-joins on expressions): every block difference of at most
    ``radius`` bits is matched by exactly one pair of flips passing the join's condition (the
    statement's own flips and condition, run by the server), and no wider difference by any (so
    the pairs are the radius's, once)."""
    from sqlalchemy import select

    assert side_radii(2, True) == (1, 1) and side_radii(2, False) == (0, 2) and side_radii(1, True) == (0, 1)
    assert side_radii(3, True) == (1, 2) and side_radii(3, False) == (0, 3)
    a_flips, b_flips, once = split_flips(*side_radii(radius, True))
    with any_engine.connect() as connection:
        matched = connection.execute(select(a_flips.c.m, b_flips.c.m).select_from(a_flips.join(b_flips, once))).all()
    for bits in range(radius + 2):
        for chosen in combinations(range(WIDE_LAYOUT.width), bits):
            difference = sum(1 << bit for bit in chosen)
            matches = sum(1 for ma, mb in matched if ma ^ mb == difference)
            assert matches == (1 if bits <= radius else 0), (chosen, matches)


def test_every_block_within_the_radius_has_a_half_within_one_bit() -> None:
    """The halves form's pigeonhole, exhaustively: each block difference of at most 3 bits leaves
    one of the block's two halves within half_radius bits, and the join's own filter (the whole
    block within the radius) keeps exactly the radius's pairs."""
    from simsql.queries.wide_duplicates import HALF_BITS, half_radius

    assert HALF_BITS * 2 == WIDE_LAYOUT.width and half_radius(2) == half_radius(3) == 1
    with pytest.raises(ValueError):
        half_radius(1)
    low = (1 << HALF_BITS) - 1
    for bits in range(4):
        for chosen in combinations(range(WIDE_LAYOUT.width), bits):
            difference = sum(1 << bit for bit in chosen)
            halves = [(difference & low).bit_count(), (difference >> HALF_BITS).bit_count()]
            assert min(halves) <= 1, chosen


@pytest.mark.parametrize("radius", [2, 3])
def test_the_halves_form_finds_the_split_forms_candidates(wide_tables: Engine, radius: int) -> None:
    """Block halves within one bit, then the whole block within the radius: the same candidate
    pairs and distances as the split join, on every server."""
    from simsql.queries.wide_duplicates import candidate_pairs

    model = WIDE_MODELS["columns"]
    _load(wide_tables, model)
    with Session(wide_tables) as session:
        split = candidate_pairs(session, model, 96, radius, None, halves=False)
        halves = candidate_pairs(session, model, 96, radius, None, halves=True)
    assert split and halves == split


@pytest.mark.parametrize("mode", MODES)
def test_groups_are_connected_components_of_the_pairs(wide_tables: Engine, mode: str) -> None:
    model = WIDE_MODELS[mode]
    _load(wide_tables, model)
    with Session(wide_tables) as session:
        pairs = simsql.near_duplicates(session, model)
        groups = simsql.duplicate_groups(session, model)
    assert groups == simsql.queries.duplicates.groups_of(pairs)
    assert [1, 11, 15, 19, 23] in groups and [27, 30, 31] in groups
    assert all(len(g) >= 2 for g in groups) and not {5, 6, 7, 8, 9, 10} & {k for g in groups for k in g}


def test_the_64_bit_rule_is_kept_where_it_answers(wide_tables: Engine) -> None:
    """``by_text=False`` on a wide table, and every call on a table without the wide signature:
    pairs within 3 bits of the 64-bit fingerprint, as before."""
    model = WIDE_MODELS["columns"]
    _load(wide_tables, model)
    Base.metadata.create_all(wide_tables)
    with Session(wide_tables) as session:
        session.add_all([Article(id=key, title=None, body=body) for key, body in _rows()])
        session.commit()
        wide = simsql.near_duplicates(session, model, 3, by_text=False)
        plain = simsql.near_duplicates(session, Article)
        assert all(type(pair) is DuplicatePair for pair in wide + plain)
        assert [tuple(p) for p in wide] == [tuple(p) for p in plain]
        assert all(p.distance <= 3 for p in plain)
        by_text = {(p.a, p.b) for p in simsql.near_duplicates(session, model)}
    assert {(p.a, p.b) for p in plain} < by_text  # the wide table finds more, and all of those


def test_bad_arguments_are_refused_by_name(wide_tables: Engine) -> None:
    model = WIDE_MODELS["columns"]
    Base.metadata.create_all(wide_tables)
    with Session(wide_tables) as session:
        for kwargs, word in (
            ({"min_containment": 0}, "min_containment"), ({"min_containment": 1.5}, "min_containment"),
            ({"probe_radius": 4}, "probe_radius"), ({"wide_distance": 257}, "wide_distance"),
            ({"max_distance": 2}, "max_distance"),
        ):  # fmt: skip
            with pytest.raises(ValueError, match=word):
                simsql.near_duplicates(session, model, **kwargs)
        with pytest.raises(TypeError, match="by_text"):
            simsql.near_duplicates(session, model, by_text="yes")  # type: ignore[arg-type]
        with pytest.raises(NotAttached, match="wide"):
            simsql.near_duplicates(session, Article, by_text=True)
        with pytest.raises(ValueError, match="min_containment"):
            simsql.duplicate_groups(session, Article, min_containment=0.8)


def test_progress_reports_each_block_and_each_batch(wide_tables: Engine) -> None:
    model = WIDE_MODELS["side_table"]
    _load(wide_tables, model)
    calls: list[tuple[str, int, int]] = []
    with Session(wide_tables) as session:
        pairs = simsql.near_duplicates(session, model, progress=lambda *args: calls.append(args))
    candidates = [c for c in calls if c[0] == "candidates"]
    texts = [c for c in calls if c[0] == "texts"]
    assert candidates == [("candidates", k, WIDE_LAYOUT.count) for k in range(1, WIDE_LAYOUT.count + 1)]
    assert texts and texts[-1][1] == texts[-1][2] >= len(pairs)
    assert [done for _, done, _ in texts] == sorted(done for _, done, _ in texts)


def test_dupes_command_deduplicates_a_wide_table_by_text(wide_tables: Engine, any_url: str) -> None:
    from .command_line import cli, failed, ok

    model = WIDE_MODELS["columns"]
    _load(wide_tables, model)
    Base.metadata.create_all(wide_tables)
    with Session(wide_tables) as session:
        expected = simsql.duplicate_groups(session, model)
        by_fingerprint = simsql.duplicate_groups(session, model, by_text=False)
    assert expected != by_fingerprint
    found = json.loads(ok(cli("dupes", "--table", "wide_articles", "--format", "json", url=any_url)).stdout)
    assert [group["keys"] for group in found] == expected
    listed = ok(cli("dupes", "--table", "wide_articles", "--by", "fingerprint", "--format", "json", url=any_url))
    assert [group["keys"] for group in json.loads(listed.stdout)] == by_fingerprint
    table = ok(cli("dupes", "--table", "wide_articles", "--probe-radius", "0", "--min-containment", "0.9", url=any_url))
    assert "confirmed by text" in table.stderr
    assert cli("dupes", "--table", "wide_articles", "--min-containment", "0", url=any_url).returncode == 2
    assert cli("dupes", "--table", "wide_articles", "--probe-radius", "4", url=any_url).returncode == 2
    failed(cli("dupes", "--table", "articles", "--min-containment", "0.9", url=any_url), 2, "min_containment")


def test_the_default_reach_follows_the_size_of_the_table(wide_tables: Engine, monkeypatch: pytest.MonkeyPatch) -> None:
    """None: the radius and the 256-bit bound of the first tier of DEDUPE_REACH holding the
    table's rows with a signature (counted, so reproducible): on a small table radius 3 within
    80 bits; each argument given overrides its own half only."""
    import simsql.queries.wide_duplicates as wide_duplicates

    assert [(t.probe_radius, t.wide_distance) for t in DEDUPE_REACH] == [(3, 80), (2, 64), (1, 64)]
    assert reach_for(0) == reach_for(DEDUPE_REACH[0].max_rows) == DEDUPE_REACH[0]
    assert reach_for(DEDUPE_REACH[0].max_rows + 1) == DEDUPE_REACH[1] and reach_for(10**9) == DEDUPE_REACH[-1]
    model = WIDE_MODELS["columns"]
    _load(wide_tables, model)
    rows = len(_rows())
    with Session(wide_tables) as session:
        answers = {
            (radius, bound): simsql.near_duplicates(session, model, probe_radius=radius, wide_distance=bound)
            for radius, bound in ((1, 64), (3, 80), (3, 64), (1, 96))
        }
        assert answers[(1, 64)] != answers[(3, 80)]
        assert simsql.near_duplicates(session, model) == answers[(3, 80)]
        assert simsql.near_duplicates(session, model, wide_distance=64) == answers[(3, 64)]
        tiers = (DedupeReach(rows - 1, 3, 96), DedupeReach(None, 1, 64))
        monkeypatch.setattr(wide_duplicates, "DEDUPE_REACH", tiers)
        assert simsql.near_duplicates(session, model) == answers[(1, 64)]
        assert simsql.near_duplicates(session, model, wide_distance=96) == answers[(1, 96)]
        assert simsql.near_duplicates(session, model, probe_radius=3) == answers[(3, 64)]


@pytest.mark.harness
def test_the_benchmark_scores_what_it_says(any_engine: Engine) -> None:
    """benchmarks.dedupe: planted pairs per rate, false pairs between documents, on real prose;
    simsql's answer and MinHash LSH's scored alike (no corpus needed: stdlib docstrings)."""
    from benchmarks.corpus import Document
    from benchmarks.dedupe import Base as BenchBase
    from benchmarks.dedupe import DedupeDoc, minhash_pairs, planted, score, timed_pairs

    docs = [Document(f"en/man1/{name}", name, text) for name, text in zip(MODULES, _documents())]
    rows, family = planted(docs, "en", 1)
    assert len(rows) == 4 * len(docs) and {kind for _, kind, _ in rows} == {"original", "edit1", "edit2", "edit5"}
    perfect = {(4 * n + 1, 4 * n + k) for n in range(len(docs)) for k in (2, 3, 4)}
    assert score(perfect, rows, family)["edit5"] == 1.0 and score(perfect, rows, family)["false_pairs"] == 0
    wrong = score({(1, 5), (1, 2)}, rows, family)
    assert (wrong["edit1"], wrong["edit2"], wrong["false_pairs"]) == (0.1, 0.0, 1)
    BenchBase.metadata.create_all(any_engine)
    with Session(any_engine) as session:
        session.add_all([DedupeDoc(id=key, kind=kind, body=body) for key, kind, body in rows])
        session.commit()
    _, found = timed_pairs(any_engine)
    assert score(found, rows, family)["edit5"] == 1.0 and score(found, rows, family)["false_pairs"] == 0
    _, candidates = minhash_pairs(rows, "en")
    assert score(candidates, rows, family)["edit1"] == 1.0
