"""The PNG plots of BENCHMARKS.md: p50 latency against table size per workload, and recall,
false positives and precision against the threshold per language. Drawn only where matplotlib
is installed (``pip install -e '.[bench]'``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .markdown import get, is_num, slug
from .quality import configs
from .sections import SYSTEM_ORDER, WORKLOADS, result_sizes


def pyplot() -> Any:
    """matplotlib's pyplot on the Agg backend, or None when matplotlib is not installed."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    return plt


def latency_plots(results: dict[str, Any], plots_dir: Path, plt: Any) -> dict[str, Path]:
    out: dict[str, Path] = {}
    sizes = result_sizes(results)
    for workload, title in WORKLOADS:
        series: dict[str, tuple[list[int], list[float]]] = {}
        for n in sizes:
            for s, r in (get(results, "queries", n, "workloads", workload, "systems") or {}).items():
                y = r.get("p50_ms")
                label = s
                if not is_num(y) and is_num(r.get("qps")):
                    y, label = 1000.0 / r["qps"], f"{s} (batched, ms per query)"
                if is_num(y) and y > 0:
                    series.setdefault(label, ([], []))
                    series[label][0].append(int(n))
                    series[label][1].append(float(y))
        if not series:
            continue
        fig, ax = plt.subplots(figsize=(7, 4.5))
        for label in sorted(series, key=lambda s: (SYSTEM_ORDER.index(s) if s in SYSTEM_ORDER else 99, s)):
            xs, ys = series[label]
            ax.plot(xs, ys, marker="o", label=label, linewidth=2.2 if label == "simsql" else 1.3)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("rows (N)")
        ax.set_ylabel("p50 latency (ms)")
        ax.set_title(f"{workload}: p50 latency vs table size")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8)
        fig.tight_layout()
        path = plots_dir / f"latency_{slug(workload)}.png"
        fig.savefig(path, dpi=110)
        plt.close(fig)
        out[workload] = path
    return out


def quality_plots(results: dict[str, Any], plots_dir: Path, plt: Any) -> dict[str, Path]:
    out: dict[str, Path] = {}
    q = results.get("quality") or {}
    thresholds = q.get("thresholds") or list(range(13))
    names = {"en": "English", "zh": "Chinese"}
    for lang, entry in (q.get("languages") or {}).items():
        cfgs = configs(entry)
        if not cfgs:
            continue
        fig, axes = plt.subplots(1, 3, figsize=(15, 4.5))
        for c in cfgs:
            ce = entry["configs"][c]
            width = 2.2 if c == "default" else 1.2
            recall = ce.get("recall_all")
            if recall:
                axes[0].plot(thresholds[: len(recall)], recall, marker=".", label=c, linewidth=width)
            fp = get(ce, "fp_rate", "random_pairs")
            if fp:
                axes[1].plot(thresholds[: len(fp)], fp, marker=".", label=c, linewidth=width)
            prec = ce.get("precision_at_prior")
            if prec:
                xs = [t for t, p in zip(thresholds, prec) if p is not None]
                ys = [p for p in prec if p is not None]
                axes[2].plot(xs, ys, marker=".", label=c, linewidth=width)
        axes[0].set_title("recall (all planted positives)")
        axes[1].set_title("false-positive rate (random pairs)")
        axes[1].set_yscale("symlog", linthresh=1e-5)
        prior = q.get("prior", 1e-3)
        axes[2].set_title(f"precision with 1 duplicate per {1 / prior:,.0f} pairs")
        for ax in axes:
            ax.set_xlabel("threshold (max Hamming distance)")
            ax.grid(True, alpha=0.3)
        axes[0].set_ylim(0, 1.02)
        axes[2].set_ylim(0, 1.02)
        axes[0].legend(fontsize=8)
        fig.suptitle(f"{names.get(lang, lang)}: duplicate detection vs threshold")
        fig.tight_layout()
        path = plots_dir / f"quality_{slug(lang)}.png"
        fig.savefig(path, dpi=110)
        plt.close(fig)
        out[lang] = path
    return out
