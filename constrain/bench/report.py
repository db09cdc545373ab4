"""Statistics and output for the benchmarks: percentiles, markdown tables, JSON files.

Shared by ``constrain bench`` (:mod:`constrain.bench.maskbench`) and the scripts in
``benchmarks/``, so every figure in BENCHMARKS.md is computed and printed one way.
"""

from __future__ import annotations

import importlib.metadata
import json
import math
import os
import platform
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

__all__ = [
    "percentile",
    "median",
    "fmt",
    "ratio",
    "markdown_table",
    "write_json",
    "package_version",
    "environment",
]


def percentile(values: Sequence[float], q: float) -> float:
    """The ``q``-th percentile (0-100), linear interpolation between order statistics.

    Same definition as ``numpy.percentile``'s default; NaN for an empty sequence.
    """
    if not values:
        return math.nan
    if not 0 <= q <= 100:
        raise ValueError(f"percentile q must be in [0, 100], got {q}")
    ordered = sorted(values)
    position = (len(ordered) - 1) * q / 100
    low = math.floor(position)
    high = min(low + 1, len(ordered) - 1)
    fraction = position - low
    return ordered[low] + (ordered[high] - ordered[low]) * fraction


def median(values: Sequence[float]) -> float:
    """The 50th percentile (NaN when empty)."""
    return percentile(values, 50)


# -- output --------------------------------------------------------------------------------
def fmt(value: Any, digits: int = 1) -> str:
    """A table cell: numbers with ``digits`` decimals, ``None``/NaN as ``-``, text as is."""
    if value is None:
        return "-"
    if isinstance(value, bool):
        return str(value)
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        if math.isnan(value):
            return "-"
        if value != 0 and abs(value) < 10 ** (-digits):
            return f"{value:.2g}"
        return f"{value:,.{digits}f}"
    return str(value)


def ratio(ours: float | None, theirs: float | None) -> str:
    """``ours / theirs`` as ``1.23x``, or ``-`` when either side is missing."""
    if ours is None or theirs is None or math.isnan(ours) or math.isnan(theirs) or theirs <= 0:
        return "-"
    return f"{ours / theirs:.2f}x"


def markdown_table(headers: Sequence[str], rows: Iterable[Sequence[Any]], align: str | None = None) -> str:
    """Render a markdown table; ``align`` has one letter per column (``l`` or ``r``).

    By default the first column is left-aligned and the others right-aligned.  Cells
    are passed through :func:`fmt` unless they already are strings; ``|`` in a cell
    is escaped.
    """
    if align is None:
        align = "l" + "r" * (len(headers) - 1)
    if len(align) != len(headers):
        raise ValueError("align needs one letter per column")

    def cell(value: Any) -> str:
        text = value if isinstance(value, str) else fmt(value)
        return text.replace("|", "\\|").replace("\n", " ")

    lines = [
        "| " + " | ".join(cell(h) for h in headers) + " |",
        "|" + "|".join("---:" if a == "r" else ":---" for a in align) + "|",
    ]
    for row in rows:
        if len(row) != len(headers):
            raise ValueError(f"row has {len(row)} cells, expected {len(headers)}")
        lines.append("| " + " | ".join(cell(v) for v in row) + " |")
    return "\n".join(lines)



def write_json(path: str | os.PathLike[str], payload: Mapping[str, Any]) -> None:
    """Write ``payload`` as indented JSON (NaN becomes null)."""

    def clean(value: Any) -> Any:
        if isinstance(value, float) and math.isnan(value):
            return None
        if isinstance(value, Mapping):
            return {str(k): clean(v) for k, v in value.items()}
        if isinstance(value, (list, tuple)):
            return [clean(v) for v in value]
        return value

    with open(path, "w", encoding="utf-8") as handle:
        json.dump(clean(payload), handle, indent=1, ensure_ascii=False)
        handle.write("\n")




# -- versions ------------------------------------------------------------------------
def package_version(distribution: str) -> str | None:
    """The installed version of a distribution, or ``None``."""
    try:
        return importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        return None


def environment(distributions: Iterable[str] = ()) -> dict[str, Any]:
    """Machine and package versions recorded with results."""
    info: dict[str, Any] = {
        "python": platform.python_version(),
        "platform": platform.platform(),
        "machine": platform.machine(),
        "cpu_count": os.cpu_count(),
    }
    try:
        info["usable_cpus"] = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        pass
    info["packages"] = {name: package_version(name) for name in distributions}
    return info



# -- constrain bench: summaries and tables ----------------------------------------------------------
MASK_PERCENTILES = (50, 99, 99.9)
#: Statuses that end a case early, in report order.
FAILURE_STATUSES = ("compile_error", "compile_timeout", "timeout", "crashed")


def summarize(results: Iterable[Any]) -> dict[str, Any]:
    """Counts and timing percentiles over some :class:`~constrain.bench.maskbench.CaseResult`."""
    import numpy as np

    results = list(results)
    compiles = [r.compile_s for r in results if r.compiled]
    masks = [r.mask_ns for r in results if len(r.mask_ns)]
    times = np.concatenate(masks) if masks else np.zeros(0, dtype=np.int64)
    stats: dict[str, Any] = {
        "schemas": len(results),
        "compiled": sum(1 for r in results if r.compiled),
        "passing": sum(1 for r in results if r.passed),
        "instances": sum(len(r.instances) for r in results),
        "invalid_accepted": sum(r.invalid_accepted for r in results),
        "valid_rejected": sum(r.valid_rejected for r in results),
        "schemas_accepting_invalid": sum(1 for r in results if r.invalid_accepted),
        "tests": sum(r.size for r in results),
        "tests_not_run": sum(r.size for r in results if r.status != "ok"),
        "tests_passed": sum(1 for r in results if r.status == "ok" for i in r.instances if i.right),
        **{s: sum(1 for r in results if r.status == s) for s in FAILURE_STATUSES},
        "compile_p50_ms": percentile(compiles, 50) * 1e3 if compiles else None,
        "compile_p99_ms": percentile(compiles, 99) * 1e3 if compiles else None,
        "compile_max_ms": max(compiles) * 1e3 if compiles else None,
        "mask_steps": int(len(times)),
    }
    qs = np.percentile(times, MASK_PERCENTILES) / 1e3 if len(times) else [None] * len(MASK_PERCENTILES)
    stats.update({"mask_p50_us": qs[0], "mask_p99_us": qs[1], "mask_p999_us": qs[2],
                  "mask_max_us": float(times.max()) / 1e3 if len(times) else None})
    return {k: (float(v) if isinstance(v, np.floating) else v) for k, v in stats.items()}


def _groups(run: Any) -> list[str]:
    return list(dict.fromkeys(c.group for c in run.cases))


def _engine_label(run: Any, name: str) -> str:
    if name in run.sampled:
        return f"{name} (sample of {len(run.sampled[name]):,})"
    return name


def _pct(part: int, whole: int) -> str:
    return f"{part:,} ({100 * part / whole:.1f} %)" if whole else f"{part:,}"


def header_lines(run: Any, title: str) -> list[str]:
    """The run's settings, one markdown line each, so a table is never read without them."""
    s = run.settings
    lines = [f"## {title}", "",
             f"- tokenizer `{s['tokenizer']}` ({s['vocab_size']:,} tokens, EOS {s['eos_token_id']}); "
             f"instances: {s['serialisation']}",
             f"- per-schema timeouts: compile {s['compile_timeout_s']:g} s, compile + forcing {s['timeout_s']:g} s; "
             f"isolation: {s['isolation']}; wall {run.wall_s:,.0f} s"]
    for name in run.engines:
        version = package_version(ADAPTER_DISTRIBUTIONS.get(name, name))
        lines.append(f"- {name} {version or ''}: {s['json_schema_options'].get(name, '')}")
    for name, ids in run.sampled.items():
        lines.append(f"- {name} ran on a fixed even sample of {len(ids):,} of {len(run.cases):,} schemas "
                     f"(--sample-slow); the 'same sample' table compares every engine on it")
    for name, why in run.skipped.items():
        lines.append(f"- {name}: skipped ({why})")
    return lines + [""]


#: engine name -> distribution, for versions in report headers.
ADAPTER_DISTRIBUTIONS = {"constrain": "constrain", "xgrammar": "xgrammar", "llguidance": "llguidance",
                         "outlines": "outlines-core"}

_OVERALL_HEADERS = ["engine", "schemas", "compiled", "passing", "invalid accepted", "valid rejected",
                    "compile errors / timeouts / crashes", "compile p50 ms", "p99 ms", "max ms",
                    "mask p50 µs", "p99 µs", "p99.9 µs", "max µs"]


def _overall_row(label: str, s: dict[str, Any]) -> list[Any]:
    return [label, s["schemas"], s["compiled"], _pct(s["passing"], s["schemas"]), s["invalid_accepted"],
            s["valid_rejected"], f"{s['compile_error']:,} / {s['compile_timeout'] + s['timeout']:,} / {s['crashed']:,}",
            fmt(s["compile_p50_ms"], 2), fmt(s["compile_p99_ms"], 1), fmt(s["compile_max_ms"], 0),
            fmt(s["mask_p50_us"], 1), fmt(s["mask_p99_us"], 0), fmt(s["mask_p999_us"], 0),
            fmt(s["mask_max_us"], 0)]


def render_jsonschemabench(run: Any, explain: bool = False) -> str:
    """The side-by-side tables of a ``constrain bench jsonschemabench`` run."""
    out = header_lines(run, "JSONSchemaBench (MaskBench method)")
    with_instances = sum(1 for c in run.cases if c.instances)
    out.append(f"{len(run.cases):,} schemas, {with_instances:,} with instances "
               f"({sum(len(c.instances) for c in run.cases):,} instances).\n")
    out.append("### Overall\n")
    out.append(markdown_table(_OVERALL_HEADERS,
                              [_overall_row(_engine_label(run, n), summarize(run.results[n])) for n in run.engines]))
    if run.sampled:
        ids = set(next(iter(run.sampled.values())))
        out.append("\n### Same sample (every engine on the slow engines' sample)\n")
        out.append(markdown_table(_OVERALL_HEADERS, [
            _overall_row(n, summarize(r for r in run.results[n] if r.case_id in ids)) for n in run.engines]))
    if len(run.engines) > 1:
        common = compiled_by_all(run)
        out.append(f"\n### Like for like: the {len(common):,} schemas every engine compiled\n")
        out.append("An engine that cannot compile a schema rejects none of its instances; on these "
                   "schemas, valid rejected and compile times compare the same work.\n")
        out.append(markdown_table(_OVERALL_HEADERS, [
            _overall_row(n, summarize(r for r in run.results[n] if r.case_id in common)) for n in run.engines]))
    out.append("\n### Per subset: passing / schemas (invalid accepted, valid rejected)\n")
    rows = []
    for group in _groups(run):
        row: list[Any] = [group]
        for name in run.engines:
            s = summarize(r for r in run.results[name] if r.group == group)
            row.append(f"{s['passing']:,} / {s['schemas']:,} ({s['invalid_accepted']}, {s['valid_rejected']})")
        rows.append(row)
    out.append(markdown_table(["subset", *[_engine_label(run, n) for n in run.engines]], rows))
    out.append("\n### Per subset: compile p50 / p99 ms, mask p50 / p99 µs\n")
    rows = []
    for group in _groups(run):
        row = [group]
        for name in run.engines:
            s = summarize(r for r in run.results[name] if r.group == group)
            row.append(f"{fmt(s['compile_p50_ms'], 2)} / {fmt(s['compile_p99_ms'], 1)}; "
                       f"{fmt(s['mask_p50_us'], 1)} / {fmt(s['mask_p99_us'], 0)}")
        rows.append(row)
    out.append(markdown_table(["subset", *run.engines], rows))
    if explain:
        out.append("\n" + explain_lines(run))
    return "\n".join(out)


def compiled_by_all(run: Any) -> set[str]:
    """The ids of the cases that every engine ran and compiled (sampled engines: on their sample)."""
    ids: set[str] | None = None
    for name in run.engines:
        compiled = {r.case_id for r in run.results[name] if r.compiled}
        ids = compiled if ids is None else ids & compiled
    return ids or set()


def explain_lines(run: Any) -> str:
    """One line per failing case and engine: ``engine  case: reason``."""
    lines = ["### Failing schemas", ""]
    for name in run.engines:
        for r in run.results[name]:
            if not r.passed:
                lines.append(f"- {name} `{r.case_id}`: {r.explain()}")
    return "\n".join(lines)


def render_test_suite(run: Any, explain: bool = False) -> str:
    """Per-file and per-part (draft, required/optional) counts of a ``constrain bench test-suite`` run."""
    out = header_lines(run, "JSON Schema Test Suite")
    remote = sum(len(c.instances) for c in run.cases if c.remote_ref)
    out.append(f"{len(run.cases):,} test cases, {sum(len(c.instances) for c in run.cases):,} tests; "
               f"{remote:,} tests use remote refs (http://localhost:1234/), counted as compile errors "
               f"where an engine cannot resolve them.  A test passes when its schema compiles and the "
               f"instance is accepted iff valid.\n")

    def part(group: str) -> str:
        draft = group.split("/")[0]
        return f"{draft} optional" if "/optional/" in f"/{group}/" else f"{draft} required"

    def cell(results: list[Any]) -> str:
        s = summarize(results)
        return f"{s['tests_passed']:,} / {s['tests']:,}"

    parts = list(dict.fromkeys(part(g) for g in _groups(run)))
    out.append("### Tests passed / tests\n")
    rows = [[p, *[cell([r for r in run.results[n] if part(r.group) == p]) for n in run.engines]] for p in parts]
    rows.append(["**all**", *[cell(run.results[n]) for n in run.engines]])
    out.append(markdown_table(["part", *run.engines], rows))
    out.append("\n### Per engine and part: compile errors (tests), valid rejected, invalid accepted\n")
    rows = []
    for name in run.engines:
        for p in parts:
            chosen = [r for r in run.results[name] if part(r.group) == p]
            s = summarize(chosen)
            rows.append([name, p, s["tests_passed"], s["tests"], s["tests_not_run"],
                         s["valid_rejected"], s["invalid_accepted"]])
    out.append(markdown_table(["engine", "part", "passed", "tests", "not run (compile error / timeout)",
                               "valid rejected", "invalid accepted"], rows))
    out.append("\n### Per file: tests passed / tests\n")
    rows = []
    for group in _groups(run):
        total = sum(len(c.instances) for c in run.cases if c.group == group)
        rows.append([group, total, *[
            summarize(r for r in run.results[n] if r.group == group)["tests_passed"] for n in run.engines]])
    out.append(markdown_table(["file", "tests", *run.engines], rows))
    if explain:
        out.append("\n" + explain_lines(run))
    return "\n".join(out)


def run_json(run: Any, kind: str) -> dict[str, Any]:
    """The JSON report: settings, per-engine summaries overall and per group, every case's verdict."""
    groups = _groups(run)
    common = compiled_by_all(run)
    return {
        "benchmark": kind,
        "environment": environment(ADAPTER_DISTRIBUTIONS.values()),
        "settings": run.settings,
        "wall_s": run.wall_s,
        "engines": run.engines,
        "skipped": run.skipped,
        "sampled": run.sampled,
        "summary": {n: summarize(run.results[n]) for n in run.engines},
        "summary_compiled_by_all": {n: summarize(r for r in run.results[n] if r.case_id in common)
                                    for n in run.engines},
        "per_group": {n: {g: summarize(r for r in run.results[n] if r.group == g) for g in groups}
                      for n in run.engines},
        "cases": {
            n: [
                {"id": r.case_id, "group": r.group, "status": r.status, "passed": r.passed,
                 "compile_ms": None if r.compile_s is None else r.compile_s * 1e3,
                 "mask_steps": int(len(r.mask_ns)),
                 "mask_max_us": float(r.mask_ns.max()) / 1e3 if len(r.mask_ns) else None,
                 "invalid_accepted": r.invalid_accepted, "valid_rejected": r.valid_rejected,
                 "reason": r.explain()}
                for r in run.results[n]
            ]
            for n in run.engines
        },
    }
