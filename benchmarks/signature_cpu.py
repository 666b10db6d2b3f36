"""Signatures per core (issue 43): the CPU cost of ``signatures_many`` and ``fingerprint_many``,
this checkout against another (``--base``, e.g. a worktree of main), side by side in one run.

    git worktree add /tmp/simsql-base main --detach
    python -m benchmarks.signature_cpu --base /tmp/simsql-base --repeat 3
    python -m benchmarks.signature_cpu --base /tmp/simsql-base --repeat 3 --backfill-rows 20000 \\
        --pg-url postgresql+psycopg://postgres@127.0.0.1:5432/<a database of yours>

The texts are the originality benchmark's filler articles: 3,000 English man-page articles
(``filler(corpus(10000, 200, 1000, 22), 3000, 22)``, about 2,500 characters) and 3,000 Chinese
ones (the same from the zh_CN man pages, about 1,000 characters). Each round runs one fresh
process per checkout (``PYTHONPATH`` set to it, so each imports its own ``simsql``), before and
after interleaved, and times ``time.process_time`` (the process's CPU, which a busy machine
inflates far less than wall time) per text for ``Fingerprinter(version=3).signatures_many``,
``fingerprint_many`` and ``feature_counts`` (tokenising alone). The least of the rounds is
reported per side, with the ratio and the load average. ``--backfill-rows`` also runs
:mod:`benchmarks.backfill`'s PostgreSQL measurement (its rows: 100 random words each; version 2
fingerprints, both storage modes, 2 workers) in each round's process: the best of the rounds.

Exactness is checked in the same run: each process also digests every output (words, margins,
feature counts, in order), and, once per checkout, the outputs of many configurations (versions
1-3, every weighting, an IDF table, character n-grams, shingles, jieba, a fitted background and a
wide one, empty and odd texts with ``empty="none"``, a text longer than the tokenizer's chunk) on
a mix of both languages. The run fails unless every digest is equal between the checkouts.

Results go to ``benchmarks/results/signature-cpu.json`` and are printed.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import pickle
import subprocess
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

RESULTS = Path(__file__).resolve().parent / "results"
THIS = Path(__file__).resolve()

# Run in a fresh interpreter whose PYTHONPATH is the checkout measured: nothing of this checkout's
# benchmarks package is imported there, only this file's worker functions (stdlib, numpy, simsql).
_WORKER = "import runpy, sys; runpy.run_path(sys.argv[1], run_name='signature_cpu_worker')['worker'](sys.argv[2:])"


def _digest(values: Any) -> str:
    return hashlib.sha256(repr(values).encode()).hexdigest()[:16]


def _signature_rows(signatures: list[Any]) -> list[Any]:
    return [None if s is None else (s.words, s.margins, s.features) for s in signatures]


def odd_texts() -> list[str]:
    """Texts that exercise the tokenizer's edges, with ``empty="none"``."""
    return [
        "", "   \n\t ", "!!! ... ???", "😀😀", "x", "中", "a 中 b", "ß straße STRASSE", "ﬁ ligature Ｆｕｌｌ ｗｉｄｔｈ",
        "lone \ud800 surrogate \udfff end", "café naïve résumé — “quoted” ’tis", "Привет мир, привет", "العربية نص",
        "한국어 텍스트 カタカナ ひらがな", "𠀀𠀁 supplementary 𠀂", "mixed中文and English单词 123 ٣٤٥ ½ ²",
        "under_score snake_case __dunder__", "tab\tseparated\x0bvertical\x0cform\x1cgroup\x85nel\xa0nbsp",
        "only one feature in one document: zyxwvutsrq",
    ]


def worker(argv: list[str]) -> None:
    """One measured process: ``texts.pickle out.json checkout exact(0/1) backfill_rows pg_url``."""
    texts_path, out_path, checkout, exact, backfill_rows, pg_url = argv
    import simsql

    if not Path(simsql.__file__).resolve().is_relative_to(Path(checkout).resolve()):
        raise SystemExit(f"simsql came from {simsql.__file__}, not from {checkout}")
    with open(texts_path, "rb") as handle:
        texts: dict[str, list[str]] = pickle.load(handle)
    fp = simsql.Fingerprinter(version=3)
    for sample in texts.values():
        fp.signatures_many(sample[:256])  # the prior table, numpy's first calls
    out: dict[str, Any] = {"simsql": simsql.__file__, "timings": {}, "digests": {}}
    calls = {
        "signatures_many": lambda ts: _signature_rows(fp.signatures_many(ts)),
        "fingerprint_many": fp.fingerprint_many,
        "feature_counts": lambda ts: [list(fp.feature_counts(t).items()) for t in ts],
    }
    for lang, sample in texts.items():
        for name, call in calls.items():
            started = time.process_time()
            result = call(sample)
            out["timings"][f"{lang} {name}"] = (time.process_time() - started) / len(sample) * 1e6
            out["digests"][f"{lang} {name}"] = _digest(result)
    if exact == "1":
        out["digests"].update(configurations(texts))
    if int(backfill_rows):
        out["backfill"] = backfill(int(backfill_rows), pg_url)
    with open(out_path, "w") as handle:
        json.dump(out, handle)


def configurations(texts: dict[str, list[str]]) -> dict[str, str]:
    """Digests of many configurations' outputs on a mix of both languages and odd texts."""
    import simsql
    import simsql.fingerprint
    from simsql.text.tokenize import CHUNK_CHARS

    mixed = [t for pair in zip(texts["en"][:300], texts["zh"][:300]) for t in pair] + odd_texts()
    huge = " ".join(texts["en"][:600] + texts["zh"][:300])
    while len(huge) <= CHUNK_CHARS:
        huge += " " + huge
    fitted_on = texts["en"][300:700] + texts["zh"][300:700]
    idf = simsql.fingerprint.IdfTable.fit(fitted_on)
    configs: dict[str, Any] = {
        "v1": simsql.Fingerprinter(version=1),
        "v1 count": simsql.Fingerprinter(version=1, weighting="count"),
        "v1 jieba_idf": simsql.Fingerprinter(version=1, weighting="jieba_idf"),
        "v1 idf": simsql.Fingerprinter(version=1, weighting=idf),
        "v2": simsql.Fingerprinter(),
        "v2 log": simsql.Fingerprinter(weighting="log"),
        "v2 count": simsql.Fingerprinter(weighting="count"),
        "v2 jieba_idf": simsql.Fingerprinter(weighting="jieba_idf"),
        "v2 idf": simsql.Fingerprinter(weighting=idf),
        "v2 jieba": simsql.Fingerprinter(chinese="jieba"),
        "v2 chars": simsql.Fingerprinter(tokenizer="chars"),
        "v2 shingles 3": simsql.Fingerprinter(shingle_size=3, seed=7),
        "v3": simsql.Fingerprinter(version=3),
        "v3 count": simsql.Fingerprinter(version=3, weighting="count"),
        "v3 idf": simsql.Fingerprinter(version=3, weighting=idf),
    }
    backgrounds = {
        "v2 background": simsql.fingerprint.Background.fit(fitted_on, configs["v2"]),
        "v3 background": simsql.fingerprint.Background.fit(fitted_on, configs["v3"]),
        "v3 wide background": simsql.fingerprint.Background.fit(fitted_on, configs["v3"], wide=True),
        "v3 idf wide background": simsql.fingerprint.Background.fit(fitted_on, configs["v3 idf"], wide=True),
    }
    digests = {f"{name} fitted": _digest(background) for name, background in backgrounds.items()}
    for name, background in backgrounds.items():
        configs[name] = replace(configs[name.replace(" wide background", "").replace(" background", "")], background=background)
    for name, fp in configs.items():
        digests[f"{name} fingerprint_many"] = _digest(fp.fingerprint_many(mixed, empty="none"))
        digests[f"{name} signatures_many"] = _digest(_signature_rows(fp.signatures_many(mixed, empty="none")))
        digests[f"{name} one by one"] = _digest([fp.fingerprint_many([t], empty="none")[0] for t in mixed[:40] + odd_texts()])
        digests[f"{name} features"] = _digest([list(fp.features(t).items()) for t in mixed[:200] + odd_texts()])
        digests[f"{name} huge"] = _digest(_signature_rows(fp.signatures_many([huge, texts["en"][0]])))
        digests[f"{name} script_sums"] = _digest(fp.script_sums(mixed[:100], 4 if fp.wide else 1)[0].tolist())
    return digests


def backfill(count: int, url: str) -> dict[str, Any]:
    """:mod:`benchmarks.backfill`'s rows/s on PostgreSQL with 2 workers, both storage modes, as
    the checkout measured has it (its own ``benchmarks`` package and ``simsql``)."""
    from benchmarks import backfill as bench

    data = bench.rows(count)
    with bench._postgresql(url) as engine:
        bench._load(engine, data)
        measured: dict[str, Any] = bench.measure(engine, count, [2], 1)
    return measured


def load_texts(count: int) -> dict[str, list[str]]:
    from .originality import corpus, filler

    return {lang: list(filler(corpus(10000, 200, 1000, 22, lang=lang), count, 22)) for lang in ("en", "zh")}


def run(checkout: Path, texts_path: str, exact: bool, backfill_rows: int = 0, pg_url: str = "") -> dict[str, Any]:
    with tempfile.NamedTemporaryFile(suffix=".json") as out:
        env = {**os.environ, "PYTHONPATH": str(checkout)}
        arguments = [texts_path, out.name, str(checkout), "1" if exact else "0", str(backfill_rows), pg_url]
        subprocess.run([sys.executable, "-c", _WORKER, str(THIS), *arguments], cwd=checkout, env=env, check=True)
        result: dict[str, Any] = json.loads(Path(out.name).read_text())
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.signature_cpu", description=__doc__.splitlines()[0])
    parser.add_argument("--base", type=Path, required=True, help="the checkout to compare with (e.g. a worktree of main)")
    parser.add_argument("--texts", type=int, default=3000, help="articles per language")
    parser.add_argument("--repeat", type=int, default=3, help="rounds, before and after interleaved")
    parser.add_argument("--backfill-rows", type=int, default=0, help="also time benchmarks.backfill on PostgreSQL, 2 workers, each round")
    parser.add_argument("--pg-url", default="", help="a database of your own for --backfill-rows (a schema is made and dropped there)")
    args = parser.parse_args(argv)
    if args.backfill_rows and not args.pg_url:
        parser.error("--backfill-rows needs --pg-url")
    sides = {"before": args.base.resolve(), "after": THIS.parents[1]}
    texts = load_texts(args.texts)
    load: list[float] = []
    runs: dict[str, list[dict[str, Any]]] = {side: [] for side in sides}
    with tempfile.NamedTemporaryFile(suffix=".pickle") as handle:
        pickle.dump(texts, handle)
        handle.flush()
        for round_ in range(args.repeat):
            for side, checkout in sides.items():
                load.append(os.getloadavg()[0])
                runs[side].append(run(checkout, handle.name, round_ == 0, args.backfill_rows, args.pg_url))
                print(f"round {round_ + 1} {side}: " + ", ".join(f"{k} {v:.0f} us" for k, v in runs[side][-1]["timings"].items())
                      + (f"; backfill {runs[side][-1]['backfill']}" if args.backfill_rows else ""), flush=True)  # fmt: skip
    differ = sorted(k for k, v in runs["before"][0]["digests"].items() if runs["after"][0]["digests"].get(k) != v)
    differ += sorted(k for r in range(args.repeat) for side in sides for k, v in runs[side][r]["digests"].items()
                     if runs[side][0]["digests"][k] != v)  # fmt: skip
    table: dict[str, Any] = {}
    for key in runs["before"][0]["timings"]:
        before = min(r["timings"][key] for r in runs["before"])
        after = min(r["timings"][key] for r in runs["after"])
        table[key] = {"before_us": round(before, 1), "after_us": round(after, 1), "ratio": round(before / after, 2)}
        print(f"{key:28} before {before:7.1f} us  after {after:7.1f} us  {before / after:5.2f}x")
    if args.backfill_rows:
        for mode in runs["before"][0]["backfill"]:
            before_rate = max(r["backfill"][mode]["rows_per_second"] for r in runs["before"])
            after_rate = max(r["backfill"][mode]["rows_per_second"] for r in runs["after"])
            table[f"backfill {mode} rows/s"] = {"before": before_rate, "after": after_rate, "ratio": round(after_rate / before_rate, 2)}
            print(f"backfill {mode:24} before {before_rate:7,} rows/s  after {after_rate:7,} rows/s  {after_rate / before_rate:5.2f}x")
    result = {
        "texts_per_language": args.texts, "rounds": args.repeat, "cpu_us_per_text": table,
        "outputs_compared": len(runs["before"][0]["digests"]), "outputs_differing": differ,
        "load_average": {"min": min(load), "max": max(load)}, "when": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
    }  # fmt: skip
    print(f"{len(runs['before'][0]['digests'])} outputs compared, {len(differ)} differ {differ}; load average {min(load):.1f}-{max(load):.1f}")
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "signature-cpu.json").write_text(json.dumps(result, indent=1) + "\n")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
