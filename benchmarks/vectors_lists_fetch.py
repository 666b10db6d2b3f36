"""What a vector-lists query on MySQL/MariaDB spends fetching its candidates (issue 44): the
candidate statement by hand on a table :mod:`benchmarks.vectors_lists` left (``--keep``), three
ways, interleaved, ``--runs`` times each:

- ``keys only``: the ``--candidates`` rows of the probed lists nearest by 256-bit distance
  (``BIT_COUNT`` over the four words), keys and distances;
- ``rows``: the same with each candidate's vector joined in, a row each (what simsql sends);
- ``packed``: the same vectors packed by the server into one row (``GROUP_CONCAT`` in candidate
  order under ``SET STATEMENT group_concat_max_len``, MariaDB's per-statement setting).

The probed lists are every ``--step``-th list of the table's live generation (16 of 200 by
default), the target row ``--target``'s signature. Decoding included (numpy). JSON on stdout.

    python -m benchmarks.vectors_lists_fetch --url mysql+pymysql://root@127.0.0.1:3306/bench44_lists
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections.abc import Sequence

import numpy as np
from sqlalchemy import create_engine

from .lists_models import VectorDoc

WORDS = ("simhash", "simhash_w1", "simhash_w2", "simhash_w3")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.vectors_lists_fetch", description=__doc__.splitlines()[0])
    parser.add_argument("--url", required=True)
    parser.add_argument("--candidates", type=int, default=1000)
    parser.add_argument("--step", type=int, default=12)
    parser.add_argument("--target", type=int, default=77)
    parser.add_argument("--runs", type=int, default=12)
    args = parser.parse_args(argv)
    table = VectorDoc.__tablename__
    engine = create_engine(args.url)
    with engine.connect() as connection:
        words = connection.exec_driver_sql(f"SELECT {', '.join(WORDS)} FROM {table} WHERE id = {int(args.target)}").one()
        lists = [int(v) for (v,) in connection.exec_driver_sql(f"SELECT DISTINCT simhash_part FROM {table} ORDER BY 1")][:: args.step]
        distance = " + ".join(f"BIT_COUNT({column} ^ {int(value)})" for column, value in zip(WORDS, words))
        candidates = (
            f"SELECT id, {distance} AS distance FROM {table} WHERE simhash_part IN ({', '.join(map(str, lists))}) "
            f"ORDER BY distance, id LIMIT {int(args.candidates)}"
        )
        shapes = {
            "keys only": candidates,
            "rows": f"SELECT v.id, v.embedding, c.distance FROM {table} v JOIN ({candidates}) c ON v.id = c.id",
            "packed": (
                "SET STATEMENT group_concat_max_len = 4294967295 FOR SELECT "
                "GROUP_CONCAT(v.embedding ORDER BY c.distance, c.id SEPARATOR ''), GROUP_CONCAT(c.id ORDER BY c.distance, c.id) "
                f"FROM {table} v JOIN ({candidates}) c ON v.id = c.id"
            ),
        }
        times: dict[str, list[float]] = {name: [] for name in shapes}
        for _ in range(args.runs):
            for name, sql in shapes.items():
                started = time.perf_counter()
                rows = connection.exec_driver_sql(sql).all()
                if name == "rows":
                    np.stack([np.frombuffer(row[1], dtype="<f4") for row in rows])
                elif name == "packed":
                    np.frombuffer(rows[0][0], dtype="<f4").reshape(-1, 256)
                    np.array(str(rows[0][1]).split(","), dtype=np.int64)
                times[name].append((time.perf_counter() - started) * 1000)
    engine.dispose()
    report = {"lists_probed": len(lists), "candidates": args.candidates, "runs": args.runs}
    report |= {name: {"p50_ms": round(statistics.median(t), 1)} for name, t in times.items()}
    print(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
