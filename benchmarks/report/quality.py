"""The duplicate-detection quality section of BENCHMARKS.md (``python -m benchmarks --sections
quality``): recall per planted edit, recall by edit rate, false positives and bit balance."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from .markdown import NOT_MEASURED, get, num, pct, rate, ratio, table

CONFIG_ORDER: tuple[str, ...] = (
    "default", "count", "shingle3", "chars", "idf", "jieba_idf", "bigrams", "simhash package",
)  # fmt: skip


QUALITY_THRESHOLDS: tuple[int, ...] = (3, 7)


def _kind_order(keys: Iterable[str]) -> list[str]:
    def key(k: str) -> tuple[int, str, float]:
        kind, _, r = k.partition("@")
        order = ["insert", "delete", "substitute", "edit", "reorder", "boilerplate"]
        return (order.index(kind) if kind in order else len(order), kind, float(r) if r else 0.0)

    return sorted(keys, key=key)


def configs(lang_entry: dict[str, Any]) -> list[str]:
    """The configurations of one language's entry, in :data:`CONFIG_ORDER` first."""
    cfgs = list((lang_entry.get("configs") or {}).keys())
    known = [c for c in CONFIG_ORDER if c in cfgs]
    return known + [c for c in cfgs if c not in known]


def _at(curve: Any, t: int) -> Any:
    return curve[t] if isinstance(curve, list) and len(curve) > t else None


QUALITY_NOTE = (
    "Planted pairs on real man pages (`benchmarks/edits.py`): each document of a random half of the corpus "
    "against an edited copy (word insertions, deletions, substitutions, mixed edits at 1-20% of its words; "
    "two paragraphs swapped; wrapped in site boilerplate), and negatives: same-family pages (`hard`: "
    "`pthread_*`, `git-*`...) and unrelated pages, plus random pairs of distinct documents. "
    "A pair is called a duplicate when its Hamming distance is at most the threshold. "
    "The `idf` table is fitted on the other half of the corpus. Configurations:"
)
FALSE_POSITIVE_NOTE = (
    "**False positives and bit balance.** FP rate = share of negative pairs within the threshold "
    "(`random` counts in parentheses). Bit entropy is summed over the 64 bits across the documents "
    "(64 is ideal; low values mean near-constant bits); block collisions is how often two random "
    "documents share a 16-bit block, over the uniform 2^-16 (the block index's bucket skew)."
)
NAMES = {"en": "English", "zh": "Chinese"}


def _described(q: dict[str, Any]) -> list[str]:
    """One bullet per configuration measured, in :data:`CONFIG_ORDER` first."""
    described: dict[str, str] = {}
    for lang_entry in q["languages"].values():
        for name, c in (lang_entry.get("configs") or {}).items():
            described.setdefault(name, c.get("config", ""))
    ordered = [c for c in CONFIG_ORDER if c in described] + [c for c in described if c not in CONFIG_ORDER]
    return [f"- `{name}`: {described[name]}" for name in ordered]


def _recall_tables(q: dict[str, Any], entry: dict[str, Any], cfgs: list[str]) -> list[str]:
    """Recall within 3 bits per planted edit, then by edit rate within 3 and 7 bits."""
    groups = _kind_order({g for c in cfgs for g in (entry["configs"][c].get("recall") or {})})
    rows = []
    for g in groups:
        counts = (entry.get("positives") or {}).get(g)
        rows.append([g.replace("@", " @ "), str(counts) if counts is not None else "–",
                     *(pct(_at(get(entry, "configs", c, "recall", g), 3)) for c in cfgs)])  # fmt: skip
    rows.append(["**all positives**", str(sum((entry.get("positives") or {}).values()) or "–"),
                 *(pct(_at(get(entry, "configs", c, "recall_all"), 3)) for c in cfgs)])  # fmt: skip
    lines = [table(["edit", "pairs", *(f"`{c}`" for c in cfgs)], rows)]
    lines += ["", "**Recall by edit rate** (insert, delete, substitute and mixed edits pooled), within 3 and within 7 bits:", ""]
    rows = []
    for r in q.get("rates") or []:
        key = f"{r:g}"
        rows.append([pct(r), *(f"{pct(_at(get(entry, 'configs', c, 'recall_by_rate', key), 3))} / "
                                f"{pct(_at(get(entry, 'configs', c, 'recall_by_rate', key), 7))}" for c in cfgs)])  # fmt: skip
    if rows:
        lines.append(table(["edit rate", *(f"`{c}` ≤3 / ≤7" for c in cfgs)], rows))
    return lines


def _false_positive_table(entry: dict[str, Any], cfgs: list[str]) -> str:
    rows = []
    for c in cfgs:
        ce = entry["configs"][c]
        fp = ce.get("fp_rate") or {}
        counts = ce.get("fp_count_random_pairs") or []
        cells = [f"`{c}`"]
        for t in QUALITY_THRESHOLDS:
            cells += [rate(_at(fp.get("hard_negative"), t)), rate(_at(fp.get("unrelated"), t)),
                      f"{rate(_at(fp.get('random_pairs'), t))} ({_at(counts, t) if _at(counts, t) is not None else '–'})"]  # fmt: skip
        cells += [
            num(get(ce, "random_distance", "mean")),
            num(get(ce, "random_distance", "min")),
            num(ce.get("bit_entropy")),
            ratio(ce.get("block_collision_vs_uniform")),
        ]
        rows.append(cells)
    header = ["config", "hard ≤3", "unrelated ≤3", "random ≤3", "hard ≤7", "unrelated ≤7", "random ≤7",
              "random mean dist.", "random min", "bit entropy", "block collisions"]  # fmt: skip
    return table(header, rows)


def _language_block(q: dict[str, Any], lang: str, entry: dict[str, Any], plots: dict[str, str]) -> list[str]:
    cfgs = configs(entry)
    if not cfgs:
        return []
    title = NAMES.get(lang, lang)
    lines = [
        f"### {title}",
        "",
        f"{entry.get('documents', '–')} documents; {entry.get('pair_documents', '–')} give the pairs "
        f"({entry.get('per_kind', '–')} positives per kind and rate), {entry.get('idf_documents', '–')} fit the IDF table; "
        f"{num(entry.get('random_pairs'))} random pairs.",
        "",
        "**Recall within 3 bits** (share of planted near-duplicates found at `max_distance=3`):",
        "",
        *_recall_tables(q, entry, cfgs),
        "",
        FALSE_POSITIVE_NOTE,
        "",
        _false_positive_table(entry, cfgs),
    ]
    skipped = [f"`{c}`: {entry['configs'][c]['note']}" for c in cfgs if entry["configs"][c].get("note")]
    if skipped:
        lines += ["", *skipped]
    if lang in plots:
        lines += ["", f"![{title}: recall, false positives and precision vs threshold]({plots[lang]})"]
    return [*lines, ""]


def quality_section(results: dict[str, Any], plots: dict[str, str]) -> str:
    """Recall and false positives per configuration and language (and their plots)."""
    lines = ["## Duplicate-detection quality", ""]
    q = results.get("quality")
    if not q or not q.get("languages"):
        return "\n".join([*lines, NOT_MEASURED])
    lines += [QUALITY_NOTE, "", *_described(q), ""]
    for lang, entry in q["languages"].items():
        lines += _language_block(q, lang, entry, plots)
    if q.get("note"):
        lines += [f"Note: {q['note']}"]
    return "\n".join(lines).rstrip()
