"""Benchmark applying a token bitmask to logits in place, on CPU or on a CUDA device.

Compares, on the same inputs and in the same run:

* ``constrain.kernels.apply_token_bitmask_`` with ``backend="auto"`` (numba for CPU
  float32, triton on CUDA) and with ``backend="torch"``;
* ``xgrammar.apply_token_bitmask_inplace`` with its ``cpu`` backend, or on CUDA its
  ``cuda`` and ``triton`` backends (skipped, with a note, if xgrammar is not installed
  or a backend cannot be built);
* ``logits.clone()``, the cost of touching every logit once: a floor for any kernel.

for batch 1 and 64, a 128,256-token float32 vocabulary, and two bitmasks: ~50% of the
tokens allowed (dense) and ~1% (sparse).  Methods are timed round-robin, one call each
per round, so that machine noise hits them alike; the logits are restored (untimed)
before every call.  On CUDA each timed call is bracketed by ``torch.cuda.synchronize()``
(the latency a decoding step sees: launch plus kernel), and a second column gives the
device time per call from CUDA events around ``--repeats`` back-to-back calls (the
kernel's throughput, launch overhead hidden).  Prints a markdown table of medians in µs
and each method's time relative to xgrammar's (its ``cpu``, or on CUDA its ``cuda``,
backend).

Usage::

    python benchmarks/bench_kernels.py [--device cuda] [--repeats 100] [--json results.json]
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


def _xgrammar_methods(xgrammar: Any, device: str) -> dict[str, Method]:
    """xgrammar's kernels for ``device``: its ``cpu`` backend, or its ``cuda`` and ``triton``."""
    backends = ["cpu"] if device == "cpu" else ["cuda", "triton"]
    return {
        f"xgrammar {name}": (
            lambda x, m, name=name: xgrammar.apply_token_bitmask_inplace(x, m, backend=name)
        )
        for name in backends
    }


def _methods(xgrammar: Any | None, logits: torch.Tensor) -> dict[str, Method]:
    """The callables to time, keyed by the name shown in the table."""
    methods: dict[str, Method] = {
        f"constrain auto ({select_backend(logits)})": apply_token_bitmask_,
        "constrain torch": lambda x, m: apply_token_bitmask_(x, m, backend="torch"),
    }
    if xgrammar is not None:
        methods.update(_xgrammar_methods(xgrammar, logits.device.type))
    methods["clone (floor)"] = lambda x, m: x.clone()
    return methods


def _inputs(
    batch: int, vocab: int, density: float, device: str
) -> tuple[torch.Tensor, torch.Tensor]:
    """Seeded random float32 logits and a bitmask with about ``density`` tokens allowed."""
    gen = torch.Generator().manual_seed(batch * 1000 + int(density * 100))
    logits = torch.randn(batch, vocab, generator=gen)
    bitmask = pack_bool_mask(torch.rand(batch, vocab, generator=gen) < density)
    return logits.to(device), bitmask.to(device)


def _working_methods(
    methods: dict[str, Method], logits: torch.Tensor, bitmask: torch.Tensor
) -> dict[str, Method]:
    """The methods that run and agree with the first; fail loudly if constrain's disagree.

    A peer backend that cannot run here (xgrammar's ``cuda`` one compiles its kernel with
    nvcc on first use) is dropped with a note rather than ending the run; one that runs
    and disagrees is an error: timing wrong results is pointless.
    """
    first_name, first = None, None
    kept: dict[str, Method] = {}
    for name, method in methods.items():
        out = logits.clone()
        try:
            method(out, bitmask)
        except Exception as exc:  # noqa: BLE001 - a peer's backend may be unbuildable here
            if name.startswith("constrain"):
                raise
            print(f"{name}: skipped ({type(exc).__name__}: {str(exc).splitlines()[0][:120]})")
            continue
        kept[name] = method
        if name.startswith("clone"):
            continue
        if first is None:
            first_name, first = name, out
        elif not torch.equal(out, first):
            raise AssertionError(f"{name} disagrees with {first_name}")
    return kept


def _synchronize(device: str) -> Callable[[], None]:
    """What waits for queued work on ``device``: nothing on CPU."""
    return torch.cuda.synchronize if device == "cuda" else (lambda: None)


def _time_round_robin(
    methods: dict[str, Method], logits: torch.Tensor, bitmask: torch.Tensor, repeats: int
) -> dict[str, list[int]]:
    """Time each method ``repeats`` times, interleaved; return nanoseconds per call."""
    sync = _synchronize(logits.device.type)
    work = logits.clone()
    times: dict[str, list[int]] = {name: [] for name in methods}
    for _ in range(repeats):
        for name, method in methods.items():
            work.copy_(logits)
            sync()
            start = time.perf_counter_ns()
            method(work, bitmask)
            sync()
            times[name].append(time.perf_counter_ns() - start)
    return times


def _device_times(
    methods: dict[str, Method], logits: torch.Tensor, bitmask: torch.Tensor, repeats: int
) -> dict[str, float]:
    """CUDA only: device µs per call, from events around ``repeats`` back-to-back calls.

    Masking again is idempotent (the same stores), so the calls need no restore between
    them; the median of five such loops is reported.
    """
    per_call: dict[str, float] = {}
    for name, method in methods.items():
        loops = []
        for _ in range(5):
            work = logits.clone()
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            for _ in range(repeats):
                method(work, bitmask)
            end.record()
            end.synchronize()
            loops.append(start.elapsed_time(end) * 1000 / repeats)
        per_call[name] = statistics.median(loops)
    return per_call


def _run_case(
    xgrammar: Any | None, batch: int, density_name: str, args: argparse.Namespace
) -> list[dict[str, Any]]:
    """Benchmark every method on one (batch, density) input; one result row per method."""
    logits, bitmask = _inputs(batch, args.vocab, DENSITIES[density_name], args.device)
    methods = _working_methods(_methods(xgrammar, logits), logits, bitmask)
    _time_round_robin(methods, logits, bitmask, args.warmup)
    times = _time_round_robin(methods, logits, bitmask, args.repeats)
    medians = {name: statistics.median(ns) / 1000 for name, ns in times.items()}
    on_device = _device_times(methods, logits, bitmask, args.repeats) if args.device == "cuda" else {}
    reference = medians.get("xgrammar cpu" if args.device == "cpu" else "xgrammar cuda")
    return [
        {
            "batch": batch,
            "bitmask": density_name,
            "method": name,
            "median_us": round(median, 1),
            "device_us": round(on_device[name], 2) if name in on_device else None,
            "vs_xgrammar": None if reference is None else round(median / reference, 3),
        }
        for name, median in medians.items()
    ]


def _markdown(rows: list[dict[str, Any]], device: str) -> str:
    """Render result rows as a markdown table (a device-time column on CUDA)."""
    cuda = device == "cuda"
    extra_head, extra_rule = (" device µs per call |", "---:|") if cuda else ("", "")
    lines = [
        f"| batch | bitmask | method | median µs |{extra_head} time vs xgrammar |",
        f"|---:|---|---|---:|{extra_rule}---:|",
    ]
    for row in rows:
        ratio = "n/a" if row["vs_xgrammar"] is None else f"{row['vs_xgrammar']:.3f}x"
        extra = f" {row['device_us']:.2f} |" if cuda else ""
        lines.append(
            f"| {row['batch']} | {row['bitmask']} | {row['method']} "
            f"| {row['median_us']:.1f} |{extra} {ratio} |"
        )
    return "\n".join(lines)


def _environment(xgrammar: Any | None, args: argparse.Namespace) -> dict[str, Any]:
    """Versions and settings recorded with the results."""
    import numba

    environment = {
        "torch": torch.__version__,
        "numba": numba.__version__,
        "xgrammar": importlib.metadata.version("xgrammar") if xgrammar else None,
        "torch_threads": torch.get_num_threads(),
        "device": args.device,
        "vocab_size": args.vocab,
        "repeats": args.repeats,
        "warmup": args.warmup,
    }
    if args.device == "cuda":
        import triton

        environment["gpu"] = torch.cuda.get_device_name()
        environment["triton"] = triton.__version__
    return environment


def _parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--device", choices=["cpu", "cuda"], default="cpu", help="where the logits live")
    parser.add_argument("--repeats", type=int, default=100, help="timed calls per method")
    parser.add_argument("--warmup", type=int, default=20, help="untimed calls per method first")
    parser.add_argument("--vocab", type=int, default=VOCAB_SIZE, help="vocabulary size")
    parser.add_argument("--batches", type=int, nargs="+", default=[1, 64], help="batch sizes")
    parser.add_argument("--json", metavar="OUT", help="also write the results as JSON to OUT")
    args = parser.parse_args(argv)
    if args.device == "cuda" and not torch.cuda.is_available():
        parser.error("--device cuda: torch sees no CUDA device here")
    return args


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
        for row in _run_case(xgrammar, batch, density_name, args)
    ]
    environment = _environment(xgrammar, args)
    where = environment.get("gpu", f"CPU, {torch.get_num_threads()} torch threads")
    print(f"vocab {args.vocab}, float32 logits on {where}, {args.repeats} repeats\n")
    print(_markdown(rows, args.device))
    if args.json:
        with open(args.json, "w", encoding="utf-8") as handle:
            json.dump({"environment": environment, "results": rows}, handle, indent=2)


if __name__ == "__main__":
    main()
