"""Benchmark applying a token bitmask to CPU logits in place.

Compares, on the same inputs and in the same run:

* ``constrain.kernels.apply_token_bitmask_`` with ``backend="auto"`` (numba for float32)
  and with ``backend="torch"``;
* ``xgrammar.apply_token_bitmask_inplace(..., backend="cpu")`` (skipped, with a note,
  if xgrammar is not installed);
* ``logits.clone()``, the cost of touching every logit once: a floor for any kernel.

for batch 1 and 64, a 128,256-token float32 vocabulary, and two bitmasks: ~50% of the
tokens allowed (dense) and ~1% (sparse).  Methods are timed round-robin, one call each
per round, so that machine noise hits them alike; the logits are restored (untimed)
before every call.  Prints a markdown table of medians in µs and each method's time
relative to xgrammar's.

Usage::

    python benchmarks/bench_kernels.py [--repeats 100] [--json results.json]
"""

from __future__ import annotations

import argparse
import importlib.metadata
import json
import statistics
import time
from collections.abc import Callable
from typing import Any

import torch

from constrain.kernels import apply_token_bitmask_, pack_bool_mask, select_backend

__all__ = ["main"]

VOCAB_SIZE = 128256
DENSITIES = {"dense (~50%)": 0.5, "sparse (~1%)": 0.01}

Method = Callable[[torch.Tensor, torch.Tensor], Any]


def _load_xgrammar() -> Any | None:
    """Return the xgrammar module, or ``None`` if it is not installed."""
    try:
        import xgrammar
    except ImportError:
        return None
    return xgrammar


def _methods(xgrammar: Any | None, logits: torch.Tensor) -> dict[str, Method]:
    """The callables to time, keyed by the name shown in the table."""
    methods: dict[str, Method] = {
        f"constrain auto ({select_backend(logits)})": apply_token_bitmask_,
        "constrain torch": lambda x, m: apply_token_bitmask_(x, m, backend="torch"),
    }
    if xgrammar is not None:
        methods["xgrammar cpu"] = lambda x, m: xgrammar.apply_token_bitmask_inplace(
            x, m, backend="cpu"
        )
    methods["clone (floor)"] = lambda x, m: x.clone()
    return methods


def _inputs(batch: int, vocab: int, density: float) -> tuple[torch.Tensor, torch.Tensor]:
    """Seeded random float32 logits and a bitmask with about ``density`` tokens allowed."""
    gen = torch.Generator().manual_seed(batch * 1000 + int(density * 100))
    logits = torch.randn(batch, vocab, generator=gen)
    bitmask = pack_bool_mask(torch.rand(batch, vocab, generator=gen) < density)
    return logits, bitmask


def _check_agreement(
    methods: dict[str, Method], logits: torch.Tensor, bitmask: torch.Tensor
) -> None:
    """Fail loudly if the masking methods disagree: timing wrong results is pointless."""
    results = {}
    for name, method in methods.items():
        if name.startswith("clone"):
            continue
        out = logits.clone()
        method(out, bitmask)
        results[name] = out
    first_name, first = next(iter(results.items()))
    for name, out in results.items():
        if not torch.equal(out, first):
            raise AssertionError(f"{name} disagrees with {first_name}")


def _time_round_robin(
    methods: dict[str, Method], logits: torch.Tensor, bitmask: torch.Tensor, repeats: int
) -> dict[str, list[int]]:
    """Time each method ``repeats`` times, interleaved; return nanoseconds per call."""
    work = logits.clone()
    times: dict[str, list[int]] = {name: [] for name in methods}
    for _ in range(repeats):
        for name, method in methods.items():
            work.copy_(logits)
            start = time.perf_counter_ns()
            method(work, bitmask)
            times[name].append(time.perf_counter_ns() - start)
    return times


def _run_case(
    xgrammar: Any | None, batch: int, density_name: str, vocab: int, repeats: int, warmup: int
) -> list[dict[str, Any]]:
    """Benchmark every method on one (batch, density) input; one result row per method."""
    logits, bitmask = _inputs(batch, vocab, DENSITIES[density_name])
    methods = _methods(xgrammar, logits)
    _check_agreement(methods, logits, bitmask)
    _time_round_robin(methods, logits, bitmask, warmup)
    times = _time_round_robin(methods, logits, bitmask, repeats)
    medians = {name: statistics.median(ns) / 1000 for name, ns in times.items()}
    reference = medians.get("xgrammar cpu")
    return [
        {
            "batch": batch,
            "bitmask": density_name,
            "method": name,
            "median_us": round(median, 1),
            "vs_xgrammar": None if reference is None else round(median / reference, 3),
        }
        for name, median in medians.items()
    ]


def _markdown(rows: list[dict[str, Any]]) -> str:
    """Render result rows as a markdown table."""
    lines = [
        "| batch | bitmask | method | median µs | time vs xgrammar |",
        "|---:|---|---|---:|---:|",
    ]
    for row in rows:
        ratio = "n/a" if row["vs_xgrammar"] is None else f"{row['vs_xgrammar']:.3f}x"
        lines.append(
            f"| {row['batch']} | {row['bitmask']} | {row['method']} "
            f"| {row['median_us']:.1f} | {ratio} |"
        )
    return "\n".join(lines)


def _environment(xgrammar: Any | None, args: argparse.Namespace) -> dict[str, Any]:
    """Versions and settings recorded with the results."""
    import numba

    return {
        "torch": torch.__version__,
        "numba": numba.__version__,
        "xgrammar": importlib.metadata.version("xgrammar") if xgrammar else None,
        "torch_threads": torch.get_num_threads(),
        "vocab_size": args.vocab,
        "repeats": args.repeats,
        "warmup": args.warmup,
    }


def _parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=100, help="timed calls per method")
    parser.add_argument("--warmup", type=int, default=20, help="untimed calls per method first")
    parser.add_argument("--vocab", type=int, default=VOCAB_SIZE, help="vocabulary size")
    parser.add_argument("--batches", type=int, nargs="+", default=[1, 64], help="batch sizes")
    parser.add_argument("--json", metavar="OUT", help="also write the results as JSON to OUT")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> None:
    """Run every case, print the markdown table, optionally write JSON."""
    args = _parse_args(argv)
    xgrammar = _load_xgrammar()
    if xgrammar is None:
        print("xgrammar is not installed: skipping its kernel (pip install xgrammar).\n")
    rows = [
        row
        for batch in args.batches
        for density_name in DENSITIES
        for row in _run_case(xgrammar, batch, density_name, args.vocab, args.repeats, args.warmup)
    ]
    environment = _environment(xgrammar, args)
    print(f"vocab {args.vocab}, float32 CPU logits, {torch.get_num_threads()} torch threads, "
          f"{args.repeats} repeats\n")
    print(_markdown(rows))
    if args.json:
        with open(args.json, "w", encoding="utf-8") as handle:
            json.dump({"environment": environment, "results": rows}, handle, indent=2)


if __name__ == "__main__":
    main()
