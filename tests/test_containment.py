"""The originality confirmation measured over the submission: quotes are not copies, shuffled
lines still are, and the shingle hashes stand for the word grams themselves."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from simsql.text.containment import MIN_CONTAINMENT, containment, share_of_submission, shingled, shingles
from simsql.text.tokenize import normalize

SENTENCES = [
    "The storage engine writes every page twice so that a torn write can be repaired at startup.",
    "Replication slots keep the write-ahead log until each subscriber has confirmed what it received.",
    "A partial index covers only the rows its predicate admits, which keeps it small and cheap to update.",
    "Autovacuum wakes up once a minute and visits tables whose dead tuples passed the configured share.",
    "Logical decoding turns the binary log into a stream of row changes that other systems can apply.",
    "Checkpoints flush dirty buffers to disk, bounding how much log must be replayed after a crash.",
    "The planner estimates selectivity from histograms and most-common-value lists gathered by analyze.",
    "Table inheritance lets a child table share its parent's columns while adding columns of its own.",
    "Advisory locks are application-defined locks that the database tracks but never takes by itself.",
    "A covering index returns every column the query needs, so the heap is never visited at all.",
]
QUOTED = "Advisory locks are application-defined locks that the database tracks but never takes by itself."


def _word_grams(text: str, size: int = 5, *, by_line: bool = False) -> set[tuple[str, ...]]:
    """The slow reference: word tuples, per line or across the whole text."""
    from simsql.text.containment import _TOKEN  # the tokeniser itself; the grams are rebuilt here

    parts = normalize(text).split("\n") if by_line else [normalize(text)]
    found: set[tuple[str, ...]] = set()
    for part in parts:
        tokens = _TOKEN.findall(part)
        span = min(size, len(tokens))
        if by_line and 0 < len(tokens) < size:
            found.add(tuple(tokens))
            continue
        found |= {tuple(tokens[i : i + span]) for i in range(len(tokens) - span + 1)} if tokens else set()
    return found


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from(["alpha", "beta", "gamma", "delta", "的", "文", "x1", "\n", "\n\n", " "]), max_size=60))
def test_shingled_counts_the_word_grams_themselves(pieces: list[str]) -> None:
    text = " ".join(pieces)
    result = shingled(text)
    assert result.plain == shingles(text)
    assert len(result.plain) == len(_word_grams(text))
    assert len(result.by_line) == len(_word_grams(text, by_line=True))


def test_a_long_article_quoting_one_sentence_is_not_a_copy() -> None:
    """Issue 22: the old measure divided by the smaller set, so a new article quoting one
    sentence of a short stored text was reported as its copy."""
    stored = QUOTED + " It was short."
    submission = " ".join(SENTENCES)
    assert containment(submission, stored) >= MIN_CONTAINMENT  # the old measure: a false alarm
    assert share_of_submission(submission, stored) < 0.2


def test_copies_padded_excerpted_or_with_shuffled_lines_still_score_high() -> None:
    stored = "\n".join(SENTENCES)
    padded = "Reposted from our partner site.\n" + stored + "\nShare this article with your friends!"
    excerpt = "\n".join(SENTENCES[2:8])
    shuffled = "\n".join(SENTENCES[::-1])
    assert share_of_submission(padded, stored) >= 0.8
    assert share_of_submission(excerpt, stored) == 1.0
    assert share_of_submission(shuffled, stored) == 1.0


def test_shuffled_short_lines_match_only_by_line() -> None:
    lines = [
        "pip install simsql",
        "simsql db upgrade",
        "simsql attach --table docs",
        "simsql backfill --table docs",
        "simsql status",
        "simsql similar --table docs --id 1",
        "simsql detach --table docs",
        "echo done",
    ]
    stored, shuffled = "\n".join(lines), "\n".join(lines[1::2] + lines[::2])
    plain = len(shingles(shuffled) & shingles(stored)) / len(shingles(shuffled))
    assert plain < MIN_CONTAINMENT
    assert share_of_submission(shuffled, stored) == 1.0


def test_unrelated_and_empty_texts() -> None:
    assert share_of_submission("Parliament debated the new tax law for small businesses", SENTENCES[0]) == 0.0
    assert share_of_submission("", SENTENCES[0]) == 0.0
    assert share_of_submission(SENTENCES[0], "") == 0.0
    assert shingled("  \n\n ...").words == 0 and not shingled("  \n\n ...").plain | shingled("  \n\n ...").by_line
    assert share_of_submission("美国51区的秘密基地在沙漠里面", "转载：美国51区的秘密基地在沙漠里面。") == 1.0
    with pytest.raises(TypeError, match="needs str"):
        shingled(None)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="positive"):
        shingled("text", 0)


def _line(seed: int, words: int) -> str:
    import random

    rng = random.Random(seed)
    return " ".join(f"{rng.choice(['tab', 'row', 'key', 'page', 'log'])}{rng.randrange(10**6)}" for _ in range(words))


def test_one_stored_paragraph_under_half_of_the_submission_is_not_most_of_it() -> None:
    """Issue 22, the false alarms on articles assembled from shared paragraphs: a submission of
    five one-line paragraphs, one of them (100 of 204 words, 49%) stored in a row. Shingles
    within lines left the four line-crossing shingles of each break out of the denominator, so
    the row scored 96 / 184 = 0.52 and was reported; measured over the submission's words it
    holds 100 / 204."""
    stored_paragraph = _line(0, 100)
    stored = "\n".join([_line(1, 60), stored_paragraph, _line(2, 80)])
    submission = "\n".join([_line(3, 26), stored_paragraph, *(_line(seed, 26) for seed in (4, 5, 6))])
    assert share_of_submission(submission, stored) == pytest.approx(100 / 204)
    assert share_of_submission(submission, stored) < MIN_CONTAINMENT
    assert share_of_submission("\n".join([stored_paragraph, _line(3, 90)]), stored) == pytest.approx(100 / 190)


def _reference_share(submission: str, stored: str, size: int = 5) -> float:
    """The definition on word tuples: the share of the submission's words inside a shingle the
    stored text has, plain or within lines, whichever covers more."""
    from simsql.text.containment import _TOKEN

    lines = [_TOKEN.findall(line) for line in normalize(submission).split("\n")]
    tokens = [token for line in lines for token in line]
    if not tokens:
        return 0.0
    span = min(size, len(tokens))
    plain = {i: tuple(tokens[i : i + span]) for i in range(len(tokens) - span + 1)}
    theirs_plain, theirs_lines = _word_grams(stored, size), _word_grams(stored, size, by_line=True)
    covered_plain = {w for i, gram in plain.items() if gram in theirs_plain for w in range(i, i + span)}
    covered_lines: set[int] = set()
    start = 0
    for line in lines:
        width = span if len(line) >= span else len(line)
        for i in range(len(line) - width + 1 if line else 0):
            if tuple(line[i : i + width]) in theirs_lines:
                covered_lines |= set(range(start + i, start + i + width))
        start += len(line)
    return max(len(covered_plain), len(covered_lines)) / len(tokens)


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.sampled_from(["alpha", "beta", "gamma", "delta", "的", "文", "\n", " "]), max_size=40),
    st.lists(st.sampled_from(["alpha", "beta", "gamma", "delta", "的", "文", "\n", " "]), max_size=40),
)
def test_share_of_submission_counts_the_words_the_stored_grams_cover(a: list[str], b: list[str]) -> None:
    submission, stored = " ".join(a), " ".join(b)
    assert share_of_submission(submission, stored) == pytest.approx(_reference_share(submission, stored))
