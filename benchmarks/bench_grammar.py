"""Benchmark the JSON grammar: compile time and per-token mask time on real JSON documents.

Engines, in the same run on the same inputs (a peer that is not installed is reported
and skipped):

* ``constrain``: ``Compiler(info, cache_dir=False).compile_builtin("json")`` (RFC 8259,
  runs of up to 64 bytes of whitespace between tokens), ``Matcher``;
* ``xgrammar``: ``GrammarCompiler(..., cache_enabled=False).compile_builtin_json_grammar()``,
  ``GrammarMatcher``;
* ``llguidance``: ``LLMatcher(tokenizer, LLMatcher.grammar_from_json_schema({},
  defaults={"whitespace_flexible": True}))``: the empty schema, i.e. any JSON value,
  with flexible whitespace (the constructor is where llguidance compiles); one
  ``deep_copy`` of it per document.

The language is the same for all three, any JSON value with whitespace allowed
between tokens, with one exception: xgrammar's built-in grammar allows only an
object or an array at the top level, so it refuses the documents that are a bare
scalar (reported as failures of kind "top-level scalar").  The adapters are those of ``bench_regex.py`` with ``compile`` swapped for
the JSON grammar.

Inputs: every *valid* instance of ``<data>/jsonschemabench/*.jsonl`` (files in name
order, lines and instances in file order), serialised with
``json.dumps(data, ensure_ascii=False)`` (so ``", "`` and ``": "`` separators) and
tokenised with ``tok.encode(s, add_special_tokens=False)``.  ``--limit N`` takes N
instances evenly spread over that list (a deterministic sample: instance
``floor(i * total / N)`` for ``i < N``), so every subset stays represented.

Measurements:

1. **compile**: per engine, the median of ``--repeats`` compiles of the JSON grammar,
   each with a fresh compiler and caches off (``cache_dir=False``,
   ``cache_enabled=False``).  ``constrain`` also compiles the Lark grammars of
   ``tests/test_grammar_masks.py`` (``GRAMMARS``), when that module imports, and
   every built-in grammar (``json``, ``sql``, ``python``) cold (no disk cache) and
   warm (LALR tables and lexer DFA from the disk cache, as in a second process).
2. **mask**: one compiled grammar per engine (the last of its compiles, untouched)
   serves every document, so lazy work (our mask-store rows and mask cache,
   llguidance's lexer) is paid by the first documents that need it and counted.
   For each document and each engine in turn, a fresh matcher is forced through
   the tokens: at every step the mask is written into a preallocated ``[1, words]``
   int32 torch tensor (the buffer a logits processor uses; only this call is timed,
   with ``perf_counter_ns``), the forced token must be allowed by the mask and
   accepted, and after the last token EOS must be allowed.  A refusal is a
   *failure* (every document is valid JSON, so in the language of every engine):
   counted per engine and reported with document id, step and kind, never fatal.
   When the forced token is missing from the mask, ``accept_token`` is tried anyway
   (untimed) to tell a wrong mask ("mask lacks the token") from a refusal.

Every engine is warmed up first on throw-away compiles (for ``constrain`` a small
Lark grammar plus a JSON compile, each masked over a few tokens) so that numba JIT
compilation and first-call costs are not charged to the measurements.

Usage::

    python benchmarks/bench_grammar.py [--tokenizer PATH] [--limit N]
        [--engines constrain,xgrammar,llguidance] [--repeats 5] [--json OUT]

The tokenizer defaults to ``$CONSTRAIN_DATA_DIR/tokenizers/llama-3``
(``CONSTRAIN_DATA_DIR`` defaults to ``<repo>/../shared/data``).  Results go to stdout
as markdown tables, progress to stderr.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import (  # noqa: E402
    REPO_ROOT,
    data_dir,
    environment,
    fmt,
    hf_token_bytes,
    markdown_table,
    median,
    package_version,
    progress,
    ratio,
    timed,
    tokenizer_dir,
    write_json,
)
from bench_regex import Harness  # noqa: E402

from constrain.bench.engines import ADAPTERS, ConstrainEngine, Engine, EngineUnavailable  # noqa: E402

__all__ = ["main"]

ENGINES = ("constrain", "xgrammar", "llguidance")
OURS = "constrain"
#: The grammar argument that means "the engine's JSON grammar".
JSON_GRAMMAR = "json"
#: A throw-away Lark grammar for our warm-up (numba JIT, first calls).
WARMUP_GRAMMAR = r"""
start: item+
item: WORD | "(" item* ")"
WORD: /[a-z]+/
%ignore " "
"""
WARMUP_TEXTS = ("(warm up (again) now)", "(more words)")
WARMUP_JSON = ('{"warm": [1, 2.5, true, null, "up"]}', '[{"a": {}}, []]')
#: Failures kept with full details per engine (all are counted).
MAX_FAILURE_DETAILS = 200
#: Percentiles written to the JSON output.
JSON_PERCENTILES = (1, 5, 10, 25, 50, 75, 90, 95, 99, 99.5, 99.9, 99.99)


# -- compiling: the adapters of constrain.bench.engines --------------------------------------
def compile_for(engine: Engine, compiler: Any, grammar: str) -> Any:
    """The engine's JSON grammar for ``JSON_GRAMMAR``, else a Lark grammar (ours only)."""
    if grammar == JSON_GRAMMAR:
        return engine.compile_json_grammar(compiler)
    return engine.compile_grammar(compiler, grammar)


# -- inputs --------------------------------------------------------------------------------
@dataclass
class Document:
    id: str  # "<schema id>#<instance index>"
    subset: str
    text: str
    tokens: list[int]


def load_documents(tok: Any, limit: int | None) -> tuple[list[Document], int]:
    """The valid JSONSchemaBench instances (an even sample of ``limit``), and the total."""
    folder = data_dir() / "jsonschemabench"
    paths = sorted(folder.glob("*.jsonl"))
    if not paths:
        sys.exit(f"error: no *.jsonl under {folder}; set CONSTRAIN_DATA_DIR (default <repo>/../shared/data)")
    found: list[tuple[str, str, Any]] = []
    for path in paths:
        with open(path, encoding="utf-8") as handle:
            for line in handle:
                row = json.loads(line)
                for index, instance in enumerate(row.get("instances") or []):
                    if instance.get("valid"):
                        found.append((f"{row['id']}#{index}", path.stem, instance["data"]))
    total = len(found)
    if limit is not None and limit < total:
        found = [found[(i * total) // limit] for i in range(limit)]
    documents = []
    for doc_id, subset, data in found:
        text = json.dumps(data, ensure_ascii=False)
        documents.append(Document(doc_id, subset, text, tok.encode(text, add_special_tokens=False)))
    return documents, total


# -- measurement -----------------------------------------------------------------------------
@dataclass
class Outcome:
    """One engine over the whole run."""

    compile_s: list[float] = field(default_factory=list)
    compile_error: str = ""
    mask_ns: Any = None  # numpy int64, one entry per timed fill (first ``steps``)
    steps: int = 0
    documents: int = 0
    failures: int = 0
    failure_details: list[dict[str, Any]] = field(default_factory=list)
    failure_kinds: dict[str, int] = field(default_factory=dict)
    #: per document: (steps timed, sum of ns, max ns, failed)
    per_document: list[tuple[int, int, int, bool]] = field(default_factory=list)

    @property
    def compile_median_s(self) -> float | None:
        return median(self.compile_s) if self.compile_s else None

    def times(self) -> Any:
        return self.mask_ns[: self.steps]


def compile_repeatedly(engine: Engine, grammar: str, repeats: int) -> tuple[list[float], Any]:
    """``repeats`` compiles, each with a fresh compiler; the times and the last result."""
    seconds: list[float] = []
    compiled = None
    for _ in range(repeats):
        compiler = engine.fresh_compiler()
        gc.collect()
        compiled, elapsed = timed(lambda: compile_for(engine, compiler, grammar))
        seconds.append(elapsed)
    return seconds, compiled


def force(engine: Engine, compiled: Any, tokens: list[int], harness: Harness, bitmask: Any, view: Any,
          sink: Any, offset: int) -> tuple[int, dict[str, Any] | None]:
    """Force ``tokens`` through a fresh matcher; time each fill into ``sink[offset:]``.

    Returns the number of timed fills and the failure (or None).
    """
    perf = time.perf_counter_ns
    fill, accept, allowed = engine.fill, engine.accept, harness.allowed
    matcher = engine.matcher(compiled)
    count = len(tokens)
    step = done = 0
    try:
        while True:
            view[:] = 0
            start = perf()
            fill(matcher, bitmask)
            sink[offset + step] = perf() - start
            done = step + 1
            if step == count:
                if not allowed(view, harness.eos):
                    return step + 1, {"step": step, "kind": "EOS refused",
                                      "reason": f"EOS {harness.eos} not allowed at the end"}
                return step + 1, None
            token = tokens[step]
            if not allowed(view, token):
                # untimed diagnosis: is the mask wrong, or does the matcher refuse it too?
                try:
                    verdict = "accept_token accepts it" if accept(matcher, token) else "accept_token refuses it too"
                except Exception as exc:
                    verdict = f"accept_token raises {type(exc).__name__}"
                return step + 1, {"step": step, "kind": "mask lacks the token" if verdict.endswith("accepts it")
                                  else "token refused",
                                  "reason": f"token {harness.describe(token)} not in the mask ({verdict})"}
            if not accept(matcher, token):
                return step + 1, {"step": step, "kind": "accept refused an allowed token",
                                  "reason": f"accept of token {harness.describe(token)} failed"}
            step += 1
    except Exception as exc:  # an engine raising is a failure of that engine, not of the run
        return done, {"step": step, "kind": "raised", "reason": f"raised {type(exc).__name__}: {exc}"[:300]}


def warm_up(engine: Engine, harness: Harness) -> None:
    """Throw-away compiles and masks, so JIT and first-call costs are not timed later."""
    bitmask = harness.bitmask()
    jobs = [(JSON_GRAMMAR, WARMUP_JSON)]
    if isinstance(engine, ConstrainEngine):
        jobs.insert(0, (WARMUP_GRAMMAR, WARMUP_TEXTS))
    for grammar, texts in jobs:
        compiled = compile_for(engine, engine.fresh_compiler(), grammar)
        for text in texts:
            matcher = engine.matcher(compiled)
            for token in harness.tok.encode(text, add_special_tokens=False):
                engine.fill(matcher, bitmask)
                if not engine.accept(matcher, token):
                    raise RuntimeError(f"warm-up text {text!r} refused")
            engine.fill(matcher, bitmask)


def failure_context(harness: Harness, doc: Document, step: int) -> str:
    """The last bytes before a failing step, and the bytes of the token there."""
    before = b"".join(harness.token_bytes.get(t, b"") for t in doc.tokens[:step])[-60:]
    token = doc.tokens[step] if step < len(doc.tokens) else None
    at = "EOS" if token is None else repr(harness.token_bytes.get(token, b"<special>"))
    return f"...{before.decode('utf-8', 'replace')!r} + {at}"


def our_grammar_compiles(engine: Engine, repeats: int) -> tuple[dict[str, float], str]:
    """Median compile time of ``tests/test_grammar_masks.py``'s ``GRAMMARS`` (ours only)."""
    tests = str(REPO_ROOT / "tests")
    added = tests not in sys.path
    if added:
        sys.path.insert(0, tests)
    try:
        from test_grammar_masks import GRAMMARS  # type: ignore[import-not-found]
    except Exception as exc:  # optional: the tests folder or pytest may be absent
        return {}, f"tests/test_grammar_masks.py not importable: {type(exc).__name__}: {exc}"
    finally:
        if added:
            sys.path.remove(tests)
    result: dict[str, float] = {}
    errors = []
    for name, text in sorted(GRAMMARS.items()):
        try:
            seconds, _ = compile_repeatedly(engine, text, repeats)
        except Exception as exc:
            errors.append(f"{name}: {type(exc).__name__}: {exc}"[:200])
            continue
        result[name] = median(seconds)
    return result, "; ".join(errors)


def builtin_compile_times(engine: Engine, repeats: int) -> dict[str, tuple[float, float]]:
    """Median (cold, warm) compile seconds of each built-in grammar (ours only).

    *cold*: a fresh ``Compiler`` with the disk cache off (``cache_dir=False``): lark's
    LALR construction, the lexer DFA, the engine.  *warm*: a fresh ``Compiler`` on a
    disk cache that already holds the grammar (LALR tables and lexer DFA loaded from
    ``.npz``), as in a second process; the token trie is in it too.
    """
    import tempfile

    from constrain.grammar.builtin import BUILTIN_GRAMMARS

    compiler_cls = type(engine.fresh_compiler())
    result = {}
    with tempfile.TemporaryDirectory() as folder:
        for name in BUILTIN_GRAMMARS:
            cold, warm = [], []
            compiler_cls(engine.info, cache_dir=folder).compile_builtin(name)  # fills the disk cache
            for _ in range(repeats):
                cold.append(timed(lambda: compiler_cls(engine.info, cache_dir=False).compile_builtin(name))[1])
                warm.append(timed(lambda: compiler_cls(engine.info, cache_dir=folder).compile_builtin(name))[1])
            result[name] = (median(cold), median(warm))
    return result


# -- reporting ---------------------------------------------------------------------------------
def _percentiles_us(values: Any, qs: tuple[float, ...]) -> list[float | None]:
    import numpy as np

    if len(values) == 0:
        return [None] * len(qs)
    return [float(v) / 1e3 for v in np.percentile(values, qs)]


def summarize(names: list[str], outcomes: dict[str, Outcome], engines: dict[str, Engine]) -> dict[str, dict[str, Any]]:
    summary: dict[str, dict[str, Any]] = {}
    for name in names:
        o = outcomes[name]
        times = o.times()
        p50, p99, p999 = _percentiles_us(times, (50, 99, 99.9))
        summary[name] = {
            "setup_s": sum(engines[name].setup_s.values()),
            "setup_parts_s": dict(engines[name].setup_s),
            "compile_ms": None if o.compile_median_s is None else o.compile_median_s * 1e3,
            "compile_all_ms": [s * 1e3 for s in o.compile_s],
            "compile_error": o.compile_error,
            "documents": o.documents,
            "failures": o.failures,
            "steps": o.steps,
            "mask_p50_us": p50,
            "mask_p99_us": p99,
            "mask_p999_us": p999,
            "mask_max_us": float(times.max()) / 1e3 if len(times) else None,
            "mask_mean_us": float(times.mean()) / 1e3 if len(times) else None,
            "mask_total_s": float(times.sum()) / 1e9 if len(times) else None,
        }
    return summary


def subset_rows(names: list[str], outcomes: dict[str, Outcome], documents: list[Document]) -> list[list[Any]]:
    """Per subset: documents, steps, and each engine's mask p50 / p99 (µs)."""
    import numpy as np

    order: dict[str, list[int]] = {}
    for index, doc in enumerate(documents):
        order.setdefault(doc.subset, []).append(index)
    # where each document's timings start, per engine
    starts = {}
    for name in names:
        counts = np.array([d[0] for d in outcomes[name].per_document], dtype=np.int64)
        starts[name] = (np.concatenate([[0], np.cumsum(counts)]), counts)
    rows = []
    for subset, indices in order.items():
        cells: list[Any] = [subset, len(indices)]
        steps = None
        for name in names:
            begin, counts = starts[name]
            times = outcomes[name].times()
            parts = [times[begin[i]: begin[i] + counts[i]] for i in indices if i < len(counts)]
            joined = np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64)
            steps = len(joined) if steps is None else max(steps, len(joined))
            p50, p99 = _percentiles_us(joined, (50, 99))
            failed = sum(1 for i in indices if i < len(counts) and outcomes[name].per_document[i][3])
            cell = f"{fmt(p50, 1)} / {fmt(p99, 1)}"
            cells.append(cell + (f" ({failed} failed)" if failed else ""))
        cells.insert(2, steps or 0)
        rows.append(cells)
    return rows


def report(names: list[str], skipped: dict[str, str], outcomes: dict[str, Outcome],
           summary: dict[str, dict[str, Any]], documents: list[Document], header: str,
           grammar_compiles: dict[str, float], grammar_note: str) -> str:
    out: list[str] = [header, ""]
    if skipped:
        out.append("Skipped: " + "; ".join(f"{name} ({why})" for name, why in skipped.items()))
        out.append("")

    out.append("### Per engine (mask times in µs over every timed fill, EOS steps included)\n")
    headers = ["engine", "documents", "failures", "steps", "mask p50", "mask p99", "mask p99.9", "mask max",
               "mask mean", "mask total s", "compile ms", "tokenizer setup s"]
    rows = []
    for name in names:
        s = summary[name]
        compile_cell = "error" if s["compile_error"] else fmt(s["compile_ms"], 1)
        rows.append([name, s["documents"], s["failures"], s["steps"], fmt(s["mask_p50_us"], 1),
                     fmt(s["mask_p99_us"], 1), fmt(s["mask_p999_us"], 1), fmt(s["mask_max_us"], 1),
                     fmt(s["mask_mean_us"], 1), fmt(s["mask_total_s"], 2), compile_cell, fmt(s["setup_s"], 2)])
    out.append(markdown_table(headers, rows))

    peers = [n for n in names if n != OURS and not summary[n]["compile_error"]]
    if OURS in names and peers:
        out.append("\n### constrain vs the best peer (ours / best peer; < 1 means we are faster)\n")
        rows = []
        for key, label in (("mask_p50_us", "mask p50 µs"), ("mask_p99_us", "mask p99 µs"),
                           ("mask_p999_us", "mask p99.9 µs"), ("mask_max_us", "mask max µs"),
                           ("compile_ms", "compile ms")):
            candidates = [(summary[p][key], p) for p in peers if summary[p][key] is not None]
            if not candidates or summary[OURS][key] is None:
                rows.append([label, fmt(summary[OURS][key], 1), "-", "-"])
                continue
            best, best_name = min(candidates)
            rows.append([label, fmt(summary[OURS][key], 1), f"{fmt(best, 1)} ({best_name})",
                         ratio(summary[OURS][key], best)])
        out.append(markdown_table(["metric", "constrain", "best peer", "ratio"], rows))

    out.append("\n### Per subset: mask p50 / p99 µs\n")
    out.append(markdown_table(["subset", "documents", "steps", *names], subset_rows(names, outcomes, documents)))

    if grammar_compiles or grammar_note:
        out.append("\n### constrain: compile of tests/test_grammar_masks.py GRAMMARS (ms, median)\n")
        if grammar_compiles:
            out.append(markdown_table(["grammar", "compile ms"],
                                      [[k, fmt(v * 1e3, 2)] for k, v in grammar_compiles.items()]))
        if grammar_note:
            out.append(f"\n{grammar_note}")

    failing = [n for n in names if outcomes[n].failures or outcomes[n].compile_error]
    if failing:
        out.append("\n### Failures\n")
        for name in failing:
            o = outcomes[name]
            if o.compile_error:
                out.append(f"- {name}: compile failed: {o.compile_error}")
                continue
            kinds = ", ".join(f"{kind}: {count}" for kind, count in sorted(o.failure_kinds.items()))
            out.append(f"- **{name}**: {o.failures} of {o.documents} documents refused ({kinds}); "
                       f"examples (all {len(o.failure_details)} kept in the JSON):")
            shown: dict[str, int] = {}
            for f in o.failure_details:  # up to 4 examples of each kind
                shown[f["kind"]] = shown.get(f["kind"], 0) + 1
                if shown[f["kind"]] <= 4:
                    out.append(f"  - `{f['document']}` step {f['step']} of {f['tokens']}: {f['reason']}; "
                               f"context {f['context']}")
    else:
        out.append("\nNo failures: every engine accepted every document and allowed EOS at its end.")
    if "xgrammar" in names:
        out.append(
            "\nNote: xgrammar's built-in JSON grammar (`root ::= object | array`) allows only an object or an "
            "array at the top level, so it refuses documents that are a bare string, number, `true`, `false` "
            "or `null`; constrain and llguidance allow any JSON value there."
        )
    return "\n".join(out)


# -- main -------------------------------------------------------------------------------------------
def _parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tokenizer", metavar="PATH",
                        help="tokenizer folder (default: $CONSTRAIN_DATA_DIR/tokenizers/llama-3)")
    parser.add_argument("--limit", type=int, metavar="N",
                        help="at most N documents, evenly spread over all valid instances (default: all)")
    parser.add_argument("--engines", default=",".join(ENGINES), help="comma-separated subset of " + ",".join(ENGINES))
    parser.add_argument("--repeats", type=int, default=5, help="compiles per engine (median)")
    parser.add_argument("--json", metavar="OUT", help="also write the raw figures as JSON to OUT")
    args = parser.parse_args(argv)
    if args.repeats < 1:
        parser.error("--repeats must be at least 1")
    if args.limit is not None and args.limit < 1:
        parser.error("--limit must be at least 1")
    names = [n.strip() for n in args.engines.split(",") if n.strip()]
    unknown = [n for n in names if n not in ENGINES]
    if unknown or not names:
        parser.error(f"unknown engine(s) {unknown}; choose from {','.join(ENGINES)}")
    args.engine_names = list(dict.fromkeys(names))
    return args


def main(argv: list[str] | None = None) -> None:
    import numpy as np

    args = _parse_args(argv)
    path = tokenizer_dir(args.tokenizer)
    wall_start = time.perf_counter()

    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    from transformers import AutoTokenizer

    progress(f"loading tokenizer {path}")
    tok = AutoTokenizer.from_pretrained(str(path))
    if tok.eos_token_id is None:
        sys.exit(f"error: tokenizer {path} has no eos_token_id")
    token_bytes, added_ids = hf_token_bytes(tok)
    harness = Harness(tok, token_bytes, added_ids)

    progress("loading and tokenising JSONSchemaBench valid instances")
    documents, total = load_documents(tok, args.limit)
    changed = sum(
        1 for d in documents
        if b"".join(token_bytes.get(t, b"\0") for t in d.tokens) != d.text.encode("utf-8")
    )
    if changed:
        progress(f"note: {changed} documents' tokens do not spell the text exactly (e.g. a prepended space)")
    total_steps = sum(len(d.tokens) + 1 for d in documents)
    progress(f"  {len(documents):,} documents of {total:,}, {total_steps:,} mask steps per engine")

    engines: dict[str, Engine] = {}
    skipped: dict[str, str] = {}
    for name in args.engine_names:
        engine = ADAPTERS[name]()
        progress(f"setting up {name}")
        try:
            engine.setup(tok, token_bytes)
            warm_up(engine, harness)
        except EngineUnavailable as exc:
            skipped[name] = str(exc)
            progress(f"  {name}: {exc}, skipped")
            continue
        except Exception as exc:  # a peer that breaks on this tokenizer is skipped, not fatal
            skipped[name] = f"setup failed: {type(exc).__name__}: {exc}"[:300]
            progress(f"  {name}: {skipped[name]}, skipped")
            continue
        engines[name] = engine
    names = list(engines)
    if not names:
        sys.exit("error: no engine could run")
    if OURS in names:
        names.remove(OURS)
        names.insert(0, OURS)

    # 1. compile
    outcomes = {name: Outcome() for name in names}
    compiled: dict[str, Any] = {}
    for name in names:
        progress(f"compiling the JSON grammar x{args.repeats}: {name}")
        try:
            outcomes[name].compile_s, compiled[name] = compile_repeatedly(engines[name], JSON_GRAMMAR, args.repeats)
        except Exception as exc:
            outcomes[name].compile_error = f"{type(exc).__name__}: {exc}"[:300]
            progress(f"    compile failed: {outcomes[name].compile_error}")
            continue
        progress(f"    median {outcomes[name].compile_median_s * 1e3:.1f} ms")
    grammar_compiles: dict[str, float] = {}
    builtin_compiles: dict[str, tuple[float, float]] = {}
    grammar_note = ""
    if OURS in names:
        progress("compiling tests/test_grammar_masks.py GRAMMARS: constrain")
        grammar_compiles, grammar_note = our_grammar_compiles(engines[OURS], args.repeats)
        progress("compiling the built-in grammars, cold and warm: constrain")
        builtin_compiles = builtin_compile_times(engines[OURS], args.repeats)

    # 2. masks, document by document, every engine in turn
    running = [n for n in names if n in compiled]
    for name in running:
        outcomes[name].mask_ns = np.zeros(total_steps, dtype=np.int64)
    bitmask = harness.bitmask()
    view = bitmask.numpy()[0].view(np.uint32)
    mask_start = time.perf_counter()
    last_report = mask_start
    gc.collect()
    gc.disable()
    try:
        for number, doc in enumerate(documents, 1):
            for name in running:
                o = outcomes[name]
                steps, failure = force(engines[name], compiled[name], doc.tokens, harness, bitmask, view,
                                       o.mask_ns, o.steps)
                span = o.mask_ns[o.steps: o.steps + steps]
                o.per_document.append((steps, int(span.sum()), int(span.max()) if steps else 0, failure is not None))
                o.steps += steps
                o.documents += 1
                if failure is not None:
                    o.failures += 1
                    if failure["step"] == 0 and doc.text[:1] not in ("{", "["):
                        failure["kind"] = "top-level scalar refused at step 0"
                    o.failure_kinds[failure["kind"]] = o.failure_kinds.get(failure["kind"], 0) + 1
                    if len(o.failure_details) < MAX_FAILURE_DETAILS:
                        step = failure["step"]
                        failure.update({"document": doc.id, "tokens": len(doc.tokens),
                                        "context": failure_context(harness, doc, step)})
                        o.failure_details.append(failure)
                    if o.failures <= 3:
                        progress(f"    {name} FAILED on {doc.id} step {failure['step']}: {failure['reason']}")
            if number % 500 == 0:
                gc.collect()
            now = time.perf_counter()
            if now - last_report > 30 or number == len(documents):
                last_report = now
                parts = ", ".join(
                    f"{n} p50 {np.median(outcomes[n].times()) / 1e3:.1f} µs ({outcomes[n].failures} failed)"
                    for n in running
                )
                progress(f"[{number:,}/{len(documents):,}] {now - mask_start:.0f} s: {parts}")
    finally:
        gc.enable()
    for name in names:
        if outcomes[name].mask_ns is None:
            outcomes[name].mask_ns = np.zeros(0, dtype=np.int64)
    wall_s = time.perf_counter() - wall_start
    progress(f"done in {wall_s:.1f} s (masks {time.perf_counter() - mask_start:.1f} s)")

    summary = summarize(names, outcomes, engines)
    versions = {e.name: package_version(e.distribution) for e in engines.values()}
    sample = (f"all {total:,} valid JSONSchemaBench instances" if len(documents) == total
              else f"{len(documents):,} of {total:,} valid JSONSchemaBench instances (even sample, --limit)")
    header = (
        f"JSON grammar benchmark: tokenizer `{path.name}` ({harness.vocab_size:,} tokens), {sample}, "
        f"json.dumps(ensure_ascii=False); compile median of {args.repeats}; {os.cpu_count()} CPUs; "
        f"wall {wall_s:.0f} s.  Versions: " + ", ".join(f"{k} {v}" for k, v in versions.items())
    )
    print(report(names, skipped, outcomes, summary, documents, header, grammar_compiles, grammar_note))
    if builtin_compiles:
        print("\n### constrain: compile of the built-in grammars (ms, median; warm = from the disk cache)\n")
        print(markdown_table(["grammar", "cold ms", "warm ms"],
                             [[k, fmt(c * 1e3, 1), fmt(w * 1e3, 1)] for k, (c, w) in builtin_compiles.items()]))

    if args.json:
        payload = {
            "environment": environment(["constrain", "xgrammar", "llguidance", "torch", "transformers",
                                        "tokenizers", "numpy", "numba"]),
            "settings": {"tokenizer": str(path), "limit": args.limit, "documents": len(documents),
                         "valid_instances": total, "repeats": args.repeats, "engines": names,
                         "skipped": skipped, "eos_token_id": harness.eos, "wall_s": wall_s},
            "summary": summary,
            "grammar_compiles_ms": {k: v * 1e3 for k, v in grammar_compiles.items()},
            "grammar_compiles_note": grammar_note,
            "builtin_compiles_ms": {k: {"cold": c * 1e3, "warm": w * 1e3} for k, (c, w) in builtin_compiles.items()},
            "results": {
                name: {
                    "compile_s": outcomes[name].compile_s,
                    "compile_error": outcomes[name].compile_error,
                    "mask_percentiles_us": dict(zip(map(str, JSON_PERCENTILES),
                                                    _percentiles_us(outcomes[name].times(), JSON_PERCENTILES))),
                    "failures": outcomes[name].failures,
                    "failure_kinds": outcomes[name].failure_kinds,
                    "failure_details": outcomes[name].failure_details,
                    # per document, in "documents" order: [steps, total ns, max ns, failed]
                    "per_document": [list(d) for d in outcomes[name].per_document],
                }
                for name in names
            },
            "documents": [{"id": d.id, "subset": d.subset, "tokens": len(d.tokens)} for d in documents],
        }
        write_json(args.json, payload)
        progress(f"wrote {args.json}")


if __name__ == "__main__":
    main()
