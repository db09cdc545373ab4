"""Benchmark regex compilation and per-token mask computation against peer engines.

Engines, in the same run on the same inputs (a peer that is not installed is reported
and skipped):

* ``constrain``: ``Compiler(info, cache_dir=False).compile_regex`` (a fresh compiler
  per compile, so neither its memory nor its disk cache helps), ``Matcher``;
* ``xgrammar``: ``GrammarCompiler(..., cache_enabled=False).compile_regex``,
  ``GrammarMatcher``;
* ``llguidance``: ``LLMatcher(tokenizer, LLMatcher.grammar_from_regex(p))`` (the
  constructor is where llguidance compiles), one ``deep_copy`` per example;
* ``outlines``: outlines-core ``Index(p, Vocabulary)`` and ``Guide``; the vocabulary
  is built offline from the tokenizer's own files (no hub access).

For each of a dozen regexes:

1. **compile**: median wall time over ``--repeats`` compiles (a compile that takes
   more than 5 s is measured once and not repeated);
2. **mask**: right after compiling, each of 5 fixed example strings that fully match
   the regex is tokenised (``add_special_tokens=False``) and forced through a fresh
   matcher: at every step the mask is filled (only this call is timed, with
   ``perf_counter_ns``), the forced token must be allowed by the mask and accepted,
   and after the last token EOS must be allowed.  Lazy engines pay their lazy work
   here (``constrain`` memoises rows in the compiled grammar, so the first example
   pays most of it).  Any failure is a *disagreement* (the string is in the language
   for every engine) and is reported with engine, regex, example and step;
3. for every peer, each step's mask is compared with ``constrain``'s over the
   ordinary (non-added) tokens: ``mask≠ours`` counts the steps where they differ
   (details in the JSON).  This is information, not a verdict: see the JSON for
   which tokens differ;
4. for ``constrain`` only, ``compiled.engine.precompute()`` (every mask row built
   eagerly) is timed on a separate fresh compile.

Tokenizer setup (``TokenizerInfo`` and the vocabulary trie for us; the peers' own
tokenizer objects) happens once, before anything is timed, and is reported apart.
Each engine also compiles and masks a throw-away regex first, so JIT warm-up is not
charged to the first regex.

The regexes use only constructs that mean the same in ECMA-262 (ours), xgrammar,
Rust ``regex`` syntax (llguidance) and outlines-core: ``[0-9]`` rather than ``\\d``
(which is Unicode-aware in the Rust-based peers), explicit classes rather than
``\\w``/``\\s``, literal characters rather than ``\\uXXXX`` escapes.  The one ``.``
(in the JSON string regex, as commonly written) is the exception: ECMA excludes
``\\n``, ``\\r`` and U+2028/U+2029, the Rust-based peers only ``\\n``, xgrammar
nothing, so those peers allow a few more tokens there (``\\`` followed by a line
break): ``mask≠ours`` steps, not disagreements.  Other known, by-design differences:
llguidance offers only the longest token when the next bytes are forced (e.g. ``" ("``
but not ``" "``).

Usage::

    python benchmarks/bench_regex.py [--tokenizer PATH] [--repeats 5]
        [--engines constrain,xgrammar,llguidance,outlines] [--regexes date,uuid]
        [--json OUT]

The tokenizer defaults to ``$CONSTRAIN_DATA_DIR/tokenizers/llama-3``
(``CONSTRAIN_DATA_DIR`` defaults to ``<repo>/../shared/data``).  Results go to stdout
as markdown tables, progress to stderr.
"""

from __future__ import annotations

import argparse
import gc
import os
import random
import re
import sys
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import (  # noqa: E402
    environment,
    fmt,
    hf_token_bytes,
    markdown_table,
    median,
    package_version,
    percentile,
    progress,
    ratio,
    timed,
    tokenizer_dir,
    write_json,
)

from constrain.bench.engines import (  # noqa: E402
    ADAPTERS,
    ENGINES,
    OURS,
    ConstrainEngine,
    Engine,
    EngineUnavailable,
)

__all__ = ["main"]
#: A compile slower than this is measured once, not ``--repeats`` times.
SLOW_COMPILE_S = 5.0
#: How many differing tokens per step (and steps per engine and regex) the JSON keeps.
DIFF_SAMPLE = 8


# -- the workload ---------------------------------------------------------------------------
@dataclass(frozen=True)
class RegexCase:
    name: str
    pattern: str
    examples: tuple[str, ...]
    shown: str = ""  # how the pattern is printed (defaults to the pattern)

    @property
    def display(self) -> str:
        return self.shown or self.pattern


def _word_list(count: int = 1000, seed: int = 20240601) -> list[str]:
    """``count`` distinct random lowercase words of 3-10 letters (fixed seed)."""
    rng = random.Random(seed)
    words: list[str] = []
    seen: set[str] = set()
    letters = "abcdefghijklmnopqrstuvwxyz"
    while len(words) < count:
        word = "".join(rng.choice(letters) for _ in range(rng.randint(3, 10)))
        if word not in seen:
            seen.add(word)
            words.append(word)
    return words


def _uuids(count: int = 5, seed: int = 7) -> tuple[str, ...]:
    rng = random.Random(seed)
    return tuple(str(uuid.UUID(int=rng.getrandbits(128))) for _ in range(count))


def build_cases() -> list[RegexCase]:
    """The regexes and, for each, 5 strings that fully match it."""
    words = _word_list()
    octet = r"(25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])"
    return [
        RegexCase(
            "date",
            r"[0-9]{4}-[0-9]{2}-[0-9]{2}",
            ("2024-01-15", "1999-12-31", "2000-02-29", "1970-01-01", "2038-01-19"),
        ),
        RegexCase(
            "email",
            r"[a-z0-9._%+-]+@[a-z0-9.-]+\.[a-z]{2,}",
            (
                "alice@example.com",
                "bob.smith+news@mail.example.org",
                "x_y%z@sub-domain.io",
                "first.last@university.edu",
                "user123@test.co.uk",
            ),
        ),
        RegexCase(
            "us-phone",
            r"(\+1 )?\([0-9]{3}\) [0-9]{3}-[0-9]{4}",
            ("(555) 123-4567", "+1 (212) 555-0199", "(800) 000-0000", "+1 (415) 867-5309", "(999) 999-9999"),
        ),
        RegexCase(
            "uuid",
            r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}",
            _uuids(),
        ),
        RegexCase(
            "ipv4",
            rf"({octet}\.){{3}}{octet}",
            ("192.168.0.1", "10.0.0.255", "255.255.255.255", "8.8.4.4", "172.16.254.3"),
        ),
        RegexCase(
            "json-string",
            r'"([^"\\]|\\.)*"',
            (
                '"hello world"',
                r'"He said \"hi\" to me"',
                r'"tab\tand newline\n"',
                '"unicode: é ü 中文 🙂"',
                '""',
            ),
        ),
        RegexCase(
            "json-number",
            r"-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?",
            ("0", "-12", "3.14159", "6.022e23", "-1.5E-10"),
        ),
        RegexCase(
            "url",
            r"https?://[a-z0-9-]+(\.[a-z0-9-]+)+(/[a-zA-Z0-9._~%-]*)*(\?[a-zA-Z0-9._~%=&-]*)?",
            (
                "https://example.com",
                "http://www.test.org/path/to/page.html",
                "https://sub.domain.co.uk/a-b_c/~user/?x=1&y=2",
                "https://api.github.com/repos/owner/name?page=2",
                "http://localhost.dev/",
            ),
        ),
        RegexCase(
            "cjk",
            "[\u4e00-\u9fff]{1,10}",  # literal characters: every engine reads them alike
            ("中文", "你好世界", "汉字", "北京大学", "一二三四五六七八九十"),
            shown=r"[\u4e00-\u9fff]{1,10}",
        ),
        RegexCase(
            "words-1000",
            "(" + "|".join(words) + ")",
            tuple(words[i] for i in (0, 123, 500, 777, 999)),
            shown=f"({words[0]}|{words[1]}|... 1,000 random words, seed 20240601)",
        ),
        RegexCase(
            "word-seq",
            r"[a-z]{3,8}( [a-z]{3,8}){0,5}",
            (
                "hello",
                "quick brown fox",
                "lorem ipsum dolor sit amet",
                "tokens match regex rules",
                "alpha beta gamma delta epsilon zeta",
            ),
        ),
        RegexCase(
            "iso-datetime",
            r"[0-9]{4}-(0[1-9]|1[0-2])-(0[1-9]|[12][0-9]|3[01])T([01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9]"
            r"(\.[0-9]{1,6})?(Z|[+-][0-9]{2}:[0-9]{2})",
            (
                "2024-01-15T10:30:00Z",
                "1999-12-31T23:59:59.999+01:00",
                "2000-02-29T00:00:00-05:00",
                "2038-01-19T03:14:07.123456Z",
                "1970-01-01T12:00:00+00:00",
            ),
        ),
    ]


def check_cases(cases: list[RegexCase]) -> None:
    """Every example must fully match its regex (Python ``re`` reads these alike)."""
    for case in cases:
        for example in case.examples:
            if re.fullmatch(case.pattern, example) is None:
                sys.exit(f"benchmark bug: example {example!r} does not match regex {case.name}")


def tokenize(tok: Any, token_bytes: dict[int, bytes], text: str) -> list[int]:
    """``tok.encode(text, add_special_tokens=False)``, as long as its bytes are ``text``.

    SentencePiece tokenizers prepend a space to the text (``"hello"`` -> ``"▁hello"``),
    which a regex forbids.  Then the text is encoded after a newline and the tokens
    of the newline (and of the prepended space) are dropped; failing that, a greedy
    longest-match tokenization is used.  Either way a note goes to stderr.
    """
    def joined(ids: list[int]) -> bytes:
        return b"".join(token_bytes.get(i, b"\0special") for i in ids)

    target = text.encode("utf-8")
    ids = tok.encode(text, add_special_tokens=False)
    if joined(ids) == target:
        return ids
    full = tok.encode("\n" + text, add_special_tokens=False)
    for cut in range(1, min(4, len(full)) + 1):
        head = joined(full[:cut])
        if head.endswith(b"\n") and head.strip(b" \n") == b"" and joined(full[cut:]) == target:
            progress(f"note: {text!r} encodes as {joined(ids)!r}; using its tokens after a newline")
            return full[cut:]
    by_bytes: dict[bytes, int] = {}
    for token_id, data in sorted(token_bytes.items()):
        if data and token_id not in tok.all_special_ids:
            by_bytes.setdefault(data, token_id)
    longest = max(map(len, by_bytes))
    greedy: list[int] = []
    position = 0
    while position < len(target):
        for size in range(min(longest, len(target) - position), 0, -1):
            token_id = by_bytes.get(target[position:position + size])
            if token_id is not None:
                greedy.append(token_id)
                position += size
                break
        else:
            sys.exit(f"error: the vocabulary cannot spell {text!r}")
    progress(f"note: {text!r} encodes as {joined(ids)!r}; using a greedy longest-match tokenization")
    return greedy


# -- measurement ----------------------------------------------------------------------------------
@dataclass
class Outcome:
    """One engine on one regex."""

    compile_s: list[float] = field(default_factory=list)
    compile_note: str = ""
    compile_error: str = ""
    mask_ns: list[int] = field(default_factory=list)
    examples_ok: int = 0
    failures: list[dict[str, Any]] = field(default_factory=list)
    diff_steps: int = 0
    peer_extra_steps: int = 0  # steps where the peer allows a token we forbid
    ours_extra_steps: int = 0  # steps where we allow a token the peer forbids
    compared_steps: int = 0
    diff_samples: list[dict[str, Any]] = field(default_factory=list)
    precompute_s: float | None = None

    @property
    def compile_median_s(self) -> float | None:
        return median(self.compile_s) if self.compile_s else None


class Harness:
    """Shared state for one run: tokenizer, bitmask buffers, our masks for comparison."""

    def __init__(self, tok: Any, token_bytes: dict[int, bytes], added_ids: set[int]) -> None:
        import numpy as np
        import torch

        self.np, self.torch = np, torch
        self.tok = tok
        self.token_bytes = token_bytes
        self.eos = int(tok.eos_token_id)
        self.vocab_size = len(tok)
        words = (self.vocab_size + 31) // 32
        self.words = words
        ordinary = np.zeros(words * 32, dtype=bool)
        ids = [i for i in token_bytes if i not in added_ids and i < self.vocab_size]
        ordinary[ids] = True
        self.ordinary_words = np.packbits(ordinary, bitorder="little").view(np.uint32)
        #: (regex, example index, step) -> our mask words at that step
        self.ours: dict[tuple[str, int, int], Any] = {}

    def bitmask(self) -> Any:
        return self.torch.zeros((1, self.words), dtype=self.torch.int32)

    def allowed(self, words: Any, token_id: int) -> bool:
        return bool((int(words[token_id >> 5]) >> (token_id & 31)) & 1)

    def describe(self, token_id: int) -> str:
        data = self.token_bytes.get(token_id)
        return f"{token_id} {data!r}" if data is not None else f"{token_id} (special)"

    def compare(self, key: tuple[str, int, int], words: Any, outcome: Outcome) -> None:
        np = self.np
        ours = self.ours.get(key)
        if ours is None:
            return
        outcome.compared_steps += 1
        diff = (words ^ ours) & self.ordinary_words
        if not diff.any():
            return
        outcome.diff_steps += 1
        only_peer_words, only_ours_words = diff & words, diff & ours
        outcome.peer_extra_steps += bool(only_peer_words.any())
        outcome.ours_extra_steps += bool(only_ours_words.any())
        if len(outcome.diff_samples) >= DIFF_SAMPLE:
            return
        only_peer = np.flatnonzero(np.unpackbits(only_peer_words.view(np.uint8), bitorder="little")).tolist()
        only_ours = np.flatnonzero(np.unpackbits(only_ours_words.view(np.uint8), bitorder="little")).tolist()
        outcome.diff_samples.append(
            {
                "example": key[1],
                "step": key[2],
                "only_peer_allows": len(only_peer),
                "only_ours_allows": len(only_ours),
                "only_peer_sample": [self.describe(i) for i in only_peer[:DIFF_SAMPLE]],
                "only_ours_sample": [self.describe(i) for i in only_ours[:DIFF_SAMPLE]],
            }
        )


def measure(
    engine: Engine, case: RegexCase, tokens: list[list[int]], harness: Harness, repeats: int
) -> Outcome:
    """Compile ``repeats`` times, then force every example through a fresh matcher."""
    outcome = Outcome()
    compiled = None
    for attempt in range(repeats):
        compiler = engine.fresh_compiler()
        gc.collect()
        try:
            compiled, seconds = timed(lambda: engine.compile_regex(compiler, case.pattern))
        except Exception as exc:  # a peer rejecting the regex is a finding, not a crash
            outcome.compile_error = f"{type(exc).__name__}: {exc}"[:300]
            break
        outcome.compile_s.append(seconds)
        if seconds > SLOW_COMPILE_S and attempt + 1 < repeats:
            outcome.compile_note = f"measured once (> {SLOW_COMPILE_S:.0f} s)"
            break
    if compiled is None:
        for index, example in enumerate(case.examples):
            outcome.failures.append(
                {"example": index, "text": example, "step": 0, "reason": f"compile failed: {outcome.compile_error}"}
            )
        return outcome

    np = harness.np
    bitmask = harness.bitmask()
    view = bitmask.numpy()[0].view(np.uint32)
    perf = time.perf_counter_ns
    for index, (example, ids) in enumerate(zip(case.examples, tokens)):
        matcher = engine.matcher(compiled)
        failure = None
        gc.collect()
        gc.disable()
        try:
            for step in range(len(ids) + 1):
                view[:] = 0
                start = perf()
                engine.fill(matcher, bitmask)
                outcome.mask_ns.append(perf() - start)
                words = view.copy()
                key = (case.name, index, step)
                if engine.name == OURS:
                    harness.ours[key] = words
                else:
                    harness.compare(key, words, outcome)
                if step == len(ids):
                    if not harness.allowed(words, harness.eos):
                        failure = {"step": step, "reason": f"EOS {harness.eos} not allowed at the end"}
                    break
                token = ids[step]
                if not harness.allowed(words, token):
                    failure = {"step": step, "reason": f"token {harness.describe(token)} not in the mask"}
                    break
                if not engine.accept(matcher, token):
                    failure = {"step": step, "reason": f"accept of token {harness.describe(token)} failed"}
                    break
        except Exception as exc:
            failure = {"step": None, "reason": f"raised {type(exc).__name__}: {exc}"[:300]}
        finally:
            gc.enable()
        if failure is None:
            outcome.examples_ok += 1
        else:
            failure.update({"example": index, "text": example, "tokens": ids})
            outcome.failures.append(failure)
    if isinstance(engine, ConstrainEngine):
        gc.collect()
        outcome.precompute_s = engine.precompute_s(case.pattern)
    return outcome


def warm_up(engine: Engine, harness: Harness) -> None:
    """Compile and mask a throw-away regex so JIT/first-call costs are not timed later."""
    compiled = engine.compile_regex(engine.fresh_compiler(), r"[a-z]+( [a-z]+)*")
    bitmask = harness.bitmask()
    for text in ("warm up", "again"):
        matcher = engine.matcher(compiled)
        for token in harness.tok.encode(text, add_special_tokens=False):
            engine.fill(matcher, bitmask)
            engine.accept(matcher, token)
        engine.fill(matcher, bitmask)
    if isinstance(engine, ConstrainEngine):
        engine.precompute_s(r"[0-9]+")


# -- reporting ---------------------------------------------------------------------------------------
def _ms(seconds: float | None) -> float | None:
    return None if seconds is None else seconds * 1e3


def _us(values: list[int], q: float) -> float | None:
    return percentile(values, q) / 1e3 if values else None


def summarize(names: list[str], cases: list[RegexCase], results: dict[str, dict[str, Outcome]],
              engines: dict[str, Engine]) -> dict[str, dict[str, Any]]:
    summary: dict[str, dict[str, Any]] = {}
    for name in names:
        outcomes = [results[name][case.name] for case in cases]
        medians = [o.compile_median_s for o in outcomes if o.compile_median_s is not None]
        steps = [ns for o in outcomes for ns in o.mask_ns]
        total_examples = sum(len(case.examples) for case in cases)
        precompute = [o.precompute_s for o in outcomes if o.precompute_s is not None]
        summary[name] = {
            "setup_s": sum(engines[name].setup_s.values()),
            "setup_parts_s": engines[name].setup_s,
            "compile_p50_ms": _ms(median(medians)) if medians else None,
            "compile_max_ms": _ms(max(medians)) if medians else None,
            "compile_errors": sum(1 for o in outcomes if o.compile_error),
            "mask_steps": len(steps),
            "mask_p50_us": _us(steps, 50),
            "mask_p99_us": _us(steps, 99),
            "mask_max_us": max(steps) / 1e3 if steps else None,
            "examples": total_examples,
            "disagreements": sum(len(o.failures) for o in outcomes),
            "mask_diff_steps": None if name == OURS else sum(o.diff_steps for o in outcomes),
            "compared_steps": None if name == OURS else sum(o.compared_steps for o in outcomes),
            "precompute_total_ms": _ms(sum(precompute)) if precompute else None,
            "precompute_max_ms": _ms(max(precompute)) if precompute else None,
        }
    return summary


def report(names: list[str], skipped: dict[str, str], cases: list[RegexCase],
           results: dict[str, dict[str, Outcome]], summary: dict[str, dict[str, Any]],
           header: str) -> str:
    out: list[str] = [header, ""]
    if skipped:
        out.append("Skipped: " + "; ".join(f"{name} ({why})" for name, why in skipped.items()))
        out.append("")

    def compile_cell(o: Outcome) -> str:
        if o.compile_error:
            return "error"
        text = fmt(_ms(o.compile_median_s), 2)
        return text + "*" if o.compile_note else text

    has_ours = OURS in names
    out.append("### Compile time per regex (ms, median over repeats)\n")
    headers = ["regex", *names] + (["ours: precompute all rows"] if has_ours else [])
    rows = []
    for case in cases:
        row: list[Any] = [case.name] + [compile_cell(results[n][case.name]) for n in names]
        if has_ours:
            row.append(fmt(_ms(results[OURS][case.name].precompute_s), 2))
        rows.append(row)
    out.append(markdown_table(headers, rows))
    if any(results[n][c.name].compile_note for n in names for c in cases):
        out.append(f"\n\\* compile took more than {SLOW_COMPILE_S:.0f} s: measured once.")

    out.append("\n### Mask time per regex (µs, p50 over all steps of its 5 examples; failed examples / 5)\n")
    headers = ["regex", "steps"] + [f"{n}" for n in names] + ["disagreements"]
    rows = []
    for case in cases:
        failed = [f"{n} {len(results[n][case.name].failures)}" for n in names if results[n][case.name].failures]
        steps = max(len(results[n][case.name].mask_ns) for n in names)
        rows.append(
            [case.name, steps]
            + [fmt(_us(results[n][case.name].mask_ns, 50), 1) for n in names]
            + [", ".join(failed) if failed else "0"]
        )
    out.append(markdown_table(headers, rows))

    out.append("\n### Summary per engine\n")
    headers = [
        "engine", "tokenizer setup s", "compile p50 ms", "compile max ms", "mask p50 µs", "mask p99 µs",
        "mask max µs", "steps", "disagreements (failed examples)", "mask≠ours steps",
    ]
    rows = []
    for name in names:
        s = summary[name]
        diff = "-" if s["mask_diff_steps"] is None else f"{s['mask_diff_steps']} / {s['compared_steps']}"
        errors = f" ({s['compile_errors']} compile errors)" if s["compile_errors"] else ""
        rows.append([
            name, fmt(s["setup_s"], 2), fmt(s["compile_p50_ms"], 2), fmt(s["compile_max_ms"], 2),
            fmt(s["mask_p50_us"], 1), fmt(s["mask_p99_us"], 1), fmt(s["mask_max_us"], 1), s["mask_steps"],
            f"{s['disagreements']} / {s['examples']}{errors}", diff,
        ])
    out.append(markdown_table(headers, rows))
    if has_ours:
        s = summary[OURS]
        parts = ", ".join(f"{k} {v:.2f} s" for k, v in s["setup_parts_s"].items())
        out.append(
            f"\nconstrain tokenizer setup: {parts}.  "
            f"`compiled.engine.precompute()` (all rows eagerly): total {fmt(s['precompute_total_ms'], 1)} ms "
            f"over {len(cases)} regexes, max {fmt(s['precompute_max_ms'], 1)} ms."
        )

    peers = [n for n in names if n != OURS]
    if has_ours and peers:
        out.append("\n### constrain vs the fastest peer (ours / best peer; < 1 means we are faster)\n")
        rows = []
        for key, label in (("compile_p50_ms", "compile p50 ms"), ("mask_p50_us", "mask p50 µs"),
                           ("mask_p99_us", "mask p99 µs")):
            candidates = [(summary[p][key], p) for p in peers if summary[p][key] is not None]
            if not candidates:
                rows.append([label, fmt(summary[OURS][key], 2), "-", "-"])
                continue
            best, best_name = min(candidates)
            rows.append([label, fmt(summary[OURS][key], 2), f"{fmt(best, 2)} ({best_name})",
                         ratio(summary[OURS][key], best)])
        out.append(markdown_table(["metric", "constrain", "best peer", "ratio"], rows))

    differing = [(n, c.name, results[n][c.name]) for n in peers for c in cases if results[n][c.name].diff_steps]
    if has_ours and differing:
        out.append(
            "\n### Masks that differ from ours (ordinary tokens only; information, not failures)\n"
        )
        rows = []
        for name, regex, o in differing:
            first = o.diff_samples[0] if o.diff_samples else {}
            sample = "; ".join(
                f"{label}: {', '.join(first.get(key, [])[:3])}"
                for label, key in (("peer only", "only_peer_sample"), ("ours only", "only_ours_sample"))
                if first.get(key)
            )
            rows.append([name, regex, f"{o.diff_steps} / {o.compared_steps}", o.peer_extra_steps,
                         o.ours_extra_steps, sample])
        out.append(markdown_table(
            ["peer", "regex", "steps differing", "peer allows more", "ours allows more", "first difference (token id, bytes)"],
            rows, align="llrrrl",
        ))

    failures = [(n, c.name, f) for n in names for c in cases for f in results[n][c.name].failures]
    if failures:
        out.append("\n### Disagreements\n")
        for name, regex, f in failures:
            out.append(f"- {name} / {regex} / example {f['example']} {f['text']!r} step {f['step']}: {f['reason']}")
    return "\n".join(out)


# -- main -------------------------------------------------------------------------------------------
def _parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tokenizer", metavar="PATH",
                        help="tokenizer folder (default: $CONSTRAIN_DATA_DIR/tokenizers/llama-3)")
    parser.add_argument("--repeats", type=int, default=5, help="compiles per engine and regex (median)")
    parser.add_argument("--engines", default=",".join(ENGINES), help="comma-separated subset of " + ",".join(ENGINES))
    parser.add_argument("--regexes", help="comma-separated subset of the regex names (default: all)")
    parser.add_argument("--json", metavar="OUT", help="also write every raw figure as JSON to OUT")
    args = parser.parse_args(argv)
    if args.repeats < 1:
        parser.error("--repeats must be at least 1")
    names = [n.strip() for n in args.engines.split(",") if n.strip()]
    unknown = [n for n in names if n not in ENGINES]
    if unknown or not names:
        parser.error(f"unknown engine(s) {unknown}; choose from {','.join(ENGINES)}")
    args.engine_names = list(dict.fromkeys(names))
    return args


def main(argv: list[str] | None = None) -> None:
    args = _parse_args(argv)
    path = tokenizer_dir(args.tokenizer)
    cases = build_cases()
    if args.regexes:
        wanted = {n.strip() for n in args.regexes.split(",") if n.strip()}
        unknown = wanted - {c.name for c in cases}
        if unknown:
            sys.exit(f"error: unknown regex name(s) {sorted(unknown)}; choose from {[c.name for c in cases]}")
        cases = [c for c in cases if c.name in wanted]
    check_cases(cases)

    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    from transformers import AutoTokenizer

    progress(f"loading tokenizer {path}")
    tok = AutoTokenizer.from_pretrained(str(path))
    if tok.eos_token_id is None:
        sys.exit(f"error: tokenizer {path} has no eos_token_id")
    token_bytes, added_ids = hf_token_bytes(tok)
    harness = Harness(tok, token_bytes, added_ids)

    tokens = {case.name: [tokenize(tok, token_bytes, s) for s in case.examples] for case in cases}

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
    if OURS in names:  # ours first: the peers' masks are compared with ours
        names.remove(OURS)
        names.insert(0, OURS)

    results: dict[str, dict[str, Outcome]] = {name: {} for name in names}
    run_start = time.perf_counter()
    for number, case in enumerate(cases, 1):
        for name in names:
            progress(f"[{number}/{len(cases)}] {case.name}: {name}")
            outcome = measure(engines[name], case, tokens[case.name], harness, args.repeats)
            results[name][case.name] = outcome
            status = f"compile {fmt(_ms(outcome.compile_median_s), 2)} ms, mask p50 {fmt(_us(outcome.mask_ns, 50), 1)} µs"
            if outcome.failures:
                status += f", {len(outcome.failures)} FAILED"
            progress("    " + status)
    progress(f"done in {time.perf_counter() - run_start:.1f} s")

    summary = summarize(names, cases, results, engines)
    versions = {e.name: package_version(e.distribution) for e in engines.values()}
    header = (
        f"Regex benchmark: tokenizer `{path.name}` ({harness.vocab_size:,} tokens), "
        f"{len(cases)} regexes x 5 examples, compile median of {args.repeats}, "
        f"{os.cpu_count()} CPUs.  Versions: " + ", ".join(f"{k} {v}" for k, v in versions.items())
    )
    print(report(names, skipped, cases, results, summary, header))

    if args.json:
        payload = {
            "environment": environment(["constrain", "xgrammar", "llguidance", "outlines-core", "torch",
                                        "transformers", "tokenizers", "numpy", "numba"]),
            "settings": {"tokenizer": str(path), "repeats": args.repeats, "engines": names,
                         "skipped": skipped, "slow_compile_s": SLOW_COMPILE_S, "eos_token_id": harness.eos},
            "regexes": [
                {"name": c.name, "pattern": c.pattern, "display": c.display,
                 "examples": list(c.examples), "tokens": tokens[c.name]}
                for c in cases
            ],
            "results": {
                name: {
                    c.name: {
                        "compile_s": o.compile_s,
                        "compile_median_s": o.compile_median_s,
                        "compile_note": o.compile_note,
                        "compile_error": o.compile_error,
                        "mask_ns": o.mask_ns,
                        "mask_p50_us": _us(o.mask_ns, 50),
                        "examples_ok": o.examples_ok,
                        "failures": o.failures,
                        "mask_diff_steps": o.diff_steps,
                        "mask_peer_extra_steps": o.peer_extra_steps,
                        "mask_ours_extra_steps": o.ours_extra_steps,
                        "compared_steps": o.compared_steps,
                        "mask_diff_samples": o.diff_samples,
                        "precompute_s": o.precompute_s,
                    }
                    for c in cases
                    for o in [results[name][c.name]]
                }
                for name in names
            },
            "summary": summary,
        }
        write_json(args.json, payload)
        progress(f"wrote {args.json}")


if __name__ == "__main__":
    main()
