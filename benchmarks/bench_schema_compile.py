"""JSON Schema compile time of this checkout over a slice of JSONSchemaBench, for A/B runs.

The slice is chosen from a ``constrain bench jsonschemabench --out`` report: the
schemas constrain compiled there in ``--min-ms`` to ``--max-ms``, every
``--every``-th of them (so two checkouts time the same schemas).  Each schema is
compiled ``--repeat`` times with a fresh compiler (no disk cache) after
``gc.collect()``, and its best time is kept.  Run it once per checkout (for
example ``PYTHONPATH=<other checkout>``), alternating, then ``--compare`` the
outputs: per-schema ratio median and p10/p90, p50/p90/p99 of each side.

Usage::

    python benchmarks/bench_schema_compile.py --report full.json --min-ms 20 --every 4 --out new.json
    PYTHONPATH=/tmp/old python benchmarks/bench_schema_compile.py --report full.json --min-ms 20 --every 4 --out old.json
    python benchmarks/bench_schema_compile.py --compare old.json new.json
"""

from __future__ import annotations

import argparse
import gc
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import data_dir, percentile, progress, write_json  # noqa: E402


def chosen_ids(report: Path, min_ms: float, max_ms: float, every: int) -> set[str]:
    """Ids of the schemas constrain compiled in ``report`` within the time range, every ``every``-th."""
    cases = json.loads(report.read_text())["cases"]["constrain"]
    ids = sorted(c["id"] for c in cases if c["status"] == "ok" and min_ms <= c["compile_ms"] <= max_ms)
    return set(ids[::every])


def time_compiles(ids: set[str], repeat: int) -> dict[str, float]:
    """Best compile time in ms per schema (a SchemaError counts its time too)."""
    from constrain import Compiler
    from constrain.bench.data import load_jsonschemabench
    from constrain.bench.maskbench import load_tokenizer
    from constrain.vocab import TokenizerInfo

    info = TokenizerInfo.from_huggingface(load_tokenizer(None, data_dir()))
    Compiler(info, cache_dir=False).compile_json_schema({"properties": {"a": {"maxLength": 100}, "b": {}}})
    cases = [c for c in load_jsonschemabench(data_dir()) if c.id in ids]
    best: dict[str, float] = {}
    for index, case in enumerate(cases):
        progress(f"{index + 1}/{len(cases)} {case.id}")
        for _ in range(repeat):
            gc.collect()
            start = time.perf_counter()
            try:
                Compiler(info, cache_dir=False).compile_json_schema(case.schema)
            except ValueError:
                pass
            best[case.id] = min(best.get(case.id, float("inf")), (time.perf_counter() - start) * 1e3)
    return best


def compare(old: dict[str, float], new: dict[str, float]) -> str:
    both = sorted(set(old) & set(new))
    ratios = [new[k] / old[k] for k in both]

    def spread(values: list[float]) -> str:
        return " / ".join(f"{percentile(values, q):.2f}" for q in (50, 90, 99))

    return (f"{len(both)} schemas; per-schema ratio new/old median {percentile(ratios, 50):.3f} "
            f"(p10 {percentile(ratios, 10):.2f}, p90 {percentile(ratios, 90):.2f}); "
            f"p50 / p90 / p99 ms old {spread([old[k] for k in both])}, new {spread([new[k] for k in both])}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--report", type=Path, help="a `constrain bench jsonschemabench --out` report")
    parser.add_argument("--min-ms", type=float, default=0.0)
    parser.add_argument("--max-ms", type=float, default=float("inf"))
    parser.add_argument("--every", type=int, default=1)
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--out", type=Path)
    parser.add_argument("--compare", nargs=2, type=Path, metavar=("OLD", "NEW"))
    args = parser.parse_args()
    if args.compare:
        old, new = (json.loads(path.read_text())["best_ms"] for path in args.compare)
        print(compare(old, new))
        return
    if args.report is None or args.out is None:
        parser.error("--report and --out are needed (or --compare OLD NEW)")
    best = time_compiles(chosen_ids(args.report, args.min_ms, args.max_ms, args.every), args.repeat)
    write_json(args.out, {"best_ms": best, "settings": vars(args) | {"report": str(args.report), "out": str(args.out)}})
    print(f"{len(best)} schemas, median {percentile(list(best.values()), 50):.2f} ms")


if __name__ == "__main__":
    main()
