"""The forcing harness (the MaskBench method), each engine in its own worker process.

For every case (a schema and its labelled instances) and every engine:

1. compile the schema with a fresh compiler (no caches), timed;
2. for each instance, ``json.dumps(data, ensure_ascii=False)`` tokenised without
   special tokens, a fresh matcher is forced token by token: at every step the mask
   is filled into an int32 ``[1, words]`` bitmask (only that call is timed), the
   token must be in the mask and accepted; after the last token EOS must be in the
   mask.  The instance is *accepted* when all of that holds.

A schema passes when it compiles, every valid instance is accepted and every invalid
one is not.  Each engine runs in a long-lived worker process (forked, so the
tokenizer set up once in the parent is shared); the parent waits for "compiled"
at most ``compile_timeout`` seconds and for the whole case at most ``timeout``,
then kills the worker and reports the case as timed out: a peer that hangs
(outlines-core on some schemas) never stops the run.  A new worker is forked
for the next case.  Where ``fork`` is unavailable, engines run in-process without
timeouts (said in the report).
"""

from __future__ import annotations

import gc
import json
import multiprocessing
import os
import sys
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import ConstrainError
from .data import KEY_ORDERS, Case, default_data_dir, even_sample
from .engines import ADAPTERS, ENGINES, Engine, EngineUnavailable
from .tokens import hf_token_bytes, text_encoder

__all__ = [
    "InstanceOutcome",
    "CaseResult",
    "BenchRun",
    "Tokenized",
    "load_tokenizer",
    "tokenize_case",
    "set_up_engines",
    "run_cases",
    "CompileFn",
]

#: How an engine compiles a case's schema; the default is the engine's JSON Schema compile.
CompileFn = Callable[[Engine, Any, Any], Any]
#: Warm-up work: (schema, token ids of each text to force), see :data:`WARMUP`.
Warm = list[tuple[Any, list[list[int]]]]
#: Seconds a fresh worker may take to start and warm up.
SETUP_TIMEOUT_S = 300.0
#: Untimed work before the first case: a schema with free-form members (pushdown walks)
#: and one without (DFA walks), with free, counted and searched strings, so that every
#: mask kernel is compiled (or loaded from numba's cache) before any timing.  With the
#: first schema only, the first DFA walk of a run compiled its kernel inside a timed
#: mask (1.6 s on BFCL_java_10 from a checkout without numba's cache).  The third, an
#: array of distinct items from an enum of more than 8 strings and null (kept by the
#: matcher), builds the vocabulary's indexes of quotes, plain tokens and scalars
#: (:func:`~constrain.automata.json_strings.quote_index`, :func:`~constrain.automata.
#: unique_items.scalar_index`: once per vocabulary and process, 0.2 s each for Llama
#: 3's), which the first such schema of each worker otherwise paid inside its timed
#: compile; peers build what they keep per tokenizer in their untimed set-up too.  The
#: second's enum under ``minLength`` is checked by ``jsonschema``, whose first import
#: (2 s here, most of it ``rfc3987_syntax`` building its lark parsers where the
#: ``format-nongpl`` extra is installed) the first such schema of each worker paid too.
WARMUP = (
    ({"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "string"}}},
     ('{"a": 1, "b": "x"}', '{"b": "warm"}')),
    ({"type": "object", "additionalProperties": False,
      "properties": {"c": {"type": "string", "maxLength": 40}, "d": {"type": "string", "pattern": "x"},
                     "e": {"enum": ["warm", "up"], "minLength": 2}}},
     ('{"c": "warm up", "d": "a text with x in it", "e": "up"}',)),
    ({"type": "array", "uniqueItems": True, "items": {"enum": ["warm", "up", "a", "b", "c", "d", "e", "f", "g", None]}},
     ('["warm", null, "up"]',)),
)


def compile_json_schema(engine: Engine, compiler: Any, schema: Any) -> Any:
    """Compile with the engine; schemas with remote documents give them to engines that take them."""
    from .data import WithResources

    if isinstance(schema, WithResources):
        if getattr(engine, "accepts_resources", False):
            return engine.compile_json_schema(compiler, schema.schema, resources=schema.resources)
        schema = schema.schema
    return engine.compile_json_schema(compiler, schema)


# -- results -------------------------------------------------------------------------------------
@dataclass
class InstanceOutcome:
    """One instance forced through one engine."""

    valid: bool
    accepted: bool
    step: int  # tokens consumed before the verdict (len(tokens) when it reached EOS)
    reason: str = ""  # why it was refused ("" when accepted)

    @property
    def right(self) -> bool:
        return self.valid == self.accepted


@dataclass
class CaseResult:
    """One engine on one case.  ``status``: ok, compile_error, compile_timeout, timeout, crashed."""

    engine: str
    case_id: str
    group: str
    status: str
    reason: str = ""
    compile_s: float | None = None
    size: int = 0  # instances of the case, run or not
    instances: list[InstanceOutcome] = field(default_factory=list)
    mask_ns: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))

    @property
    def compiled(self) -> bool:
        return self.compile_s is not None and self.status not in ("compile_error", "compile_timeout")

    @property
    def invalid_accepted(self) -> int:
        return sum(1 for i in self.instances if not i.valid and i.accepted)

    @property
    def valid_rejected(self) -> int:
        return sum(1 for i in self.instances if i.valid and not i.accepted)

    @property
    def passed(self) -> bool:
        return self.status == "ok" and all(i.right for i in self.instances)

    def explain(self) -> str:
        """One line: why this case fails (empty when it passes)."""
        if self.passed:
            return ""
        if self.status != "ok":
            return f"{self.status}: {self.reason}"
        wrong = [(n, i) for n, i in enumerate(self.instances) if not i.right]
        n, first = wrong[0]
        what = (f"valid instance {n} rejected at token {first.step}: {first.reason}" if first.valid
                else f"invalid instance {n} accepted")
        more = f" (+{len(wrong) - 1} more wrong)" if len(wrong) > 1 else ""
        return what + more


@dataclass
class BenchRun:
    """Everything a report needs: the cases, each engine's results, the settings."""

    cases: list[Case]
    engines: list[str]
    results: dict[str, list[CaseResult]]
    skipped: dict[str, str]
    sampled: dict[str, list[str]]  # engine -> case ids it ran, when it ran on a sample
    settings: dict[str, Any]
    wall_s: float = 0.0


# -- tokenizer and instances ---------------------------------------------------------------------
def load_tokenizer(name: str | None, data: str | os.PathLike[str] | None = None) -> Any:
    """A Hugging Face tokenizer: a folder, a name under ``<data>/tokenizers``, or a hub id."""
    from transformers import AutoTokenizer

    base = Path(data).expanduser() if data is not None else default_data_dir()
    name = name or "llama-3"
    candidates = [Path(name).expanduser(), base / "tokenizers" / name, default_data_dir() / "tokenizers" / name]
    target = next((str(p) for p in candidates if (p / "tokenizer.json").is_file() or (p / "tokenizer_config.json").is_file()), name)
    try:
        tok = AutoTokenizer.from_pretrained(target)
    except (OSError, ValueError) as err:
        raise ConstrainError(f"cannot load tokenizer {name!r}: {str(err).splitlines()[0]}") from err
    if tok.eos_token_id is None:
        raise ConstrainError(f"tokenizer {name!r} has no eos_token_id")
    return tok


@dataclass
class Tokenized:
    """A case's instances as the engines see them: tokens and labels."""

    tokens: list[list[int]]
    valid: list[bool]
    #: how many valid instances were rewritten in schema member order (``key_order="schema"``)
    rewritten: int = 0


def tokenize_case(tok: Any, case: Case, key_order: str = "instance") -> Tokenized:
    """Each instance as text, encoded without special tokens into ids whose bytes are
    exactly the text (:class:`~.tokens.TextEncoder`: no SentencePiece space before it).

    ``key_order="instance"`` (MaskBench, the default) writes ``json.dumps(data,
    ensure_ascii=False)``: members in the order the instance lists them.
    ``"schema"`` writes each *valid* instance the way ``compile_json_schema``
    documents its language (:func:`constrain.testing.json_schema_instance_text`:
    members in schema order), so that a rejection left is not the order's doing;
    instances it cannot rewrite (member order that depends on a combinator branch,
    the documented limits) and invalid ones stay as given.  ``Tokenized.rewritten``
    counts the rewritten ones.
    """
    texts, rewritten = [], 0
    for instance in case.instances:
        text = json.dumps(instance.data, ensure_ascii=False)
        if key_order == "schema" and instance.valid:
            written = _schema_order_text(instance.data, case.schema)
            if written is not None:
                text, rewritten = written, rewritten + 1
        texts.append(text)
    encode = text_encoder(tok)
    return Tokenized([encode(t) for t in texts], [i.valid for i in case.instances], rewritten)


def _schema_order_text(data: Any, schema: Any) -> str | None:
    """``data`` written in the compiled language's member order, or None where the writer
    cannot (its documented limits, or a schema it cannot follow)."""
    from ..testing import json_schema_instance_text

    try:
        return json_schema_instance_text(data, schema)
    except Exception:  # Unserialisable, or a schema the writer cannot follow (a pattern re rejects...)
        return None


# -- forcing (runs in the worker) ----------------------------------------------------------------
def _describe(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0] if text else ''}"[:300]


def force(engine: Engine, compiled: Any, tokens: Sequence[int], eos: int, bitmask: Any, view: np.ndarray,
          sink: list[int]) -> InstanceOutcome:
    """Force ``tokens`` then EOS through a fresh matcher; append each fill's ns to ``sink``."""
    perf = time.perf_counter_ns
    fill, accept = engine.fill, engine.accept
    matcher = engine.matcher(compiled)
    step = 0
    try:
        while True:
            view[:] = 0
            start = perf()
            fill(matcher, bitmask)
            sink.append(perf() - start)
            token = tokens[step] if step < len(tokens) else eos
            if not (int(view[token >> 5]) >> (token & 31)) & 1:
                what = "EOS" if step == len(tokens) else f"token {token}"
                return InstanceOutcome(False, False, step, f"{what} not in the mask")
            if step == len(tokens):
                return InstanceOutcome(False, True, step)
            if not accept(matcher, token):
                return InstanceOutcome(False, False, step, f"token {token} in the mask but refused by accept")
            step += 1
    except Exception as exc:  # an engine raising refuses the instance; the run goes on
        return InstanceOutcome(False, False, step, f"raised {_describe(exc)}")


def _bitmask(words: int) -> tuple[Any, np.ndarray]:
    import torch

    bitmask = torch.zeros((1, words), dtype=torch.int32)
    return bitmask, bitmask.numpy()[0].view(np.uint32)


def _warm_up(engine: Engine, compile_fn: CompileFn, warm: Warm, eos: int, words: int) -> None:
    """First calls (JIT, lazy imports) happen here, not in the first timed case."""
    bitmask, view = _bitmask(words)
    for schema, tok_ids in warm:
        try:
            compiled = compile_fn(engine, engine.fresh_compiler(), schema)
            for tokens in tok_ids:
                force(engine, compiled, tokens, eos, bitmask, view, [])
        except Exception:  # an engine that cannot take a warm-up schema still runs the cases
            continue


def run_case(engine: Engine, compile_fn: CompileFn, schema: Any, work: Tokenized, eos: int, bitmask: Any,
             view: np.ndarray, send: Callable[[tuple], None]) -> None:
    """Compile and force one case, reporting through ``send``: compiled/compile_error, then done."""
    compiler = engine.fresh_compiler()
    gc.collect()
    start = time.perf_counter_ns()
    try:
        compiled = compile_fn(engine, compiler, schema)
    except Exception as exc:
        send(("compile_error", _describe(exc), (time.perf_counter_ns() - start) / 1e9))
        return
    send(("compiled", (time.perf_counter_ns() - start) / 1e9))
    sink: list[int] = []
    outcomes = []
    gc.disable()
    try:
        for tokens, valid in zip(work.tokens, work.valid):
            outcome = force(engine, compiled, tokens, eos, bitmask, view, sink)
            outcome.valid = valid
            outcomes.append(outcome)
    finally:
        gc.enable()
    send(("done", [(o.accepted, o.step, o.reason) for o in outcomes], np.asarray(sink, dtype=np.int64)))


def _worker_main(conn: Any, engine: Engine, compile_fn: CompileFn, warm: Warm, eos: int,
                 words: int) -> None:
    # The parent's objects are never garbage here: freezing them keeps gc.collect()
    # per case cheap and avoids touching (copying) every inherited page.
    gc.freeze()
    bitmask, view = _bitmask(words)
    _warm_up(engine, compile_fn, warm, eos, words)
    conn.send(("ready",))
    while True:
        job = conn.recv()
        if job is None:
            return
        schema, work = job
        run_case(engine, compile_fn, schema, work, eos, bitmask, view, conn.send)


# -- the parent side ---------------------------------------------------------------------------------
def _finish(result: CaseResult, work: Tokenized, done: tuple) -> CaseResult:
    """Fill ``result`` from a worker's ``("done", verdicts, mask times)`` message."""
    _, verdicts, times = done
    result.instances = [InstanceOutcome(v, a, s, r) for v, (a, s, r) in zip(work.valid, verdicts)]
    result.mask_ns = times
    return result


class _Worker:
    """One engine's worker process, forked on demand and killed on a timeout."""

    def __init__(self, engine: Engine, compile_fn: CompileFn, warm: Warm, eos: int, words: int) -> None:
        self.engine, self.compile_fn, self.warm, self.eos, self.words = engine, compile_fn, warm, eos, words
        self.process: Any = None
        self.conn: Any = None
        self.restarts = 0

    def _start(self) -> None:
        ctx = multiprocessing.get_context("fork")
        self.conn, child = ctx.Pipe()
        self.process = ctx.Process(target=_worker_main, daemon=True,
                                   args=(child, self.engine, self.compile_fn, self.warm, self.eos, self.words))
        self.process.start()
        child.close()
        if not self.conn.poll(SETUP_TIMEOUT_S):
            self.kill()
            raise EngineUnavailable(f"worker did not start within {SETUP_TIMEOUT_S:.0f} s")
        self.conn.recv()

    def kill(self) -> None:
        if self.process is not None:
            self.process.kill()
            self.process.join()
            self.conn.close()
        self.process = self.conn = None

    def _receive(self, seconds: float) -> tuple | None:
        """The next message, None after ``seconds``; raises EOFError when the worker died."""
        if not self.conn.poll(max(seconds, 0.0)):
            return None
        return self.conn.recv()

    def run(self, case: Case, work: Tokenized, compile_timeout: float, timeout: float) -> CaseResult:
        if self.process is None:
            self._start()
            self.restarts += 1
        result = CaseResult(self.engine.name, case.id, case.group, "ok", size=len(work.valid))
        start = time.monotonic()
        try:
            self.conn.send((case.schema, work))
            message = self._receive(min(compile_timeout, timeout))
            if message is None:
                self.kill()
                result.status, result.reason = "compile_timeout", f"compile took more than {min(compile_timeout, timeout):g} s"
                return result
            if message[0] == "compile_error":
                result.status, result.reason = "compile_error", message[1]
                return result
            result.compile_s = message[1]
            message = self._receive(timeout - (time.monotonic() - start))
            if message is None:
                self.kill()
                result.status, result.reason = "timeout", f"compile and forcing took more than {timeout:g} s"
                return result
        except (EOFError, OSError, BrokenPipeError) as exc:
            code = None
            if self.process is not None:
                self.process.join(5)
                code = self.process.exitcode
            self.kill()
            result.status, result.reason = "crashed", f"worker died (exit code {code}): {type(exc).__name__}"
            return result
        return _finish(result, work, message)

    def close(self) -> None:
        if self.process is not None:
            try:
                self.conn.send(None)
                self.process.join(5)
            except (OSError, BrokenPipeError):
                pass
            self.kill()


class _InProcess:
    """Where ``fork`` is unavailable: the same work in this process, without timeouts."""

    def __init__(self, engine: Engine, compile_fn: CompileFn, warm: Warm, eos: int, words: int) -> None:
        self.engine, self.compile_fn, self.eos = engine, compile_fn, eos
        self.bitmask, self.view = _bitmask(words)
        _warm_up(engine, compile_fn, warm, eos, words)
        self.restarts = 0

    def run(self, case: Case, work: Tokenized, compile_timeout: float, timeout: float) -> CaseResult:
        messages: list[tuple] = []
        run_case(self.engine, self.compile_fn, case.schema, work, self.eos, self.bitmask, self.view, messages.append)
        result = CaseResult(self.engine.name, case.id, case.group, "ok", size=len(work.valid))
        if messages[0][0] == "compile_error":
            result.status, result.reason = "compile_error", messages[0][1]
            return result
        result.compile_s = messages[0][1]
        return _finish(result, work, messages[1])

    def close(self) -> None:
        pass


def _serialisation(key_order: str, rewritten: int, valid_total: int) -> str:
    """The report's line on how instances were written."""
    plain = "json.dumps(data, ensure_ascii=False), tokenised with add_special_tokens=False"
    if key_order == "instance":
        return plain
    return (f"{plain}, except {rewritten:,} of {valid_total:,} valid instances written with members in schema "
            "order (--key-order schema: constrain.testing.json_schema_instance_text); the rest as given")


def fork_available() -> bool:
    return "fork" in multiprocessing.get_all_start_methods()


def set_up_engines(names: Iterable[str], tok: Any,
                   factories: dict[str, Callable[[], Engine]] | None = None) -> tuple[dict[str, Engine], dict[str, str]]:
    """Each named engine set up for ``tok``; the ones that cannot run, with the reason."""
    factories = factories if factories is not None else ADAPTERS
    token_bytes: dict[int, bytes] | None = None
    engines: dict[str, Engine] = {}
    skipped: dict[str, str] = {}
    for name in names:
        engine = factories[name]()
        try:
            if engine.needs_token_bytes and token_bytes is None:
                token_bytes, _ = hf_token_bytes(tok)
            engine.setup(tok, token_bytes or {})
            why = engine.supports_json_schema()
            if why:
                raise EngineUnavailable(why)
        except EngineUnavailable as exc:
            skipped[name] = str(exc)
            continue
        except Exception as exc:  # a peer that breaks on this tokenizer is skipped, not fatal
            skipped[name] = f"setup failed: {_describe(exc)}"
            continue
        engines[name] = engine
    return engines, skipped


def _progress(total: int, enabled: bool) -> Any:
    """A tqdm bar on stderr when tqdm is installed, else a counter line every 5 %."""
    if not enabled:
        return None
    try:
        from tqdm import tqdm

        return tqdm(total=total, file=sys.stderr, unit="schema", dynamic_ncols=True)
    except ImportError:
        class Counter:
            def __init__(self) -> None:
                self.n = 0
                self.every = max(1, total // 20)

            def update(self, count: int = 1) -> None:
                self.n += count
                if self.n % self.every == 0 or self.n == total:
                    print(f"[{self.n}/{total}]", file=sys.stderr, flush=True)

            def set_postfix_str(self, text: str) -> None:
                pass

            def close(self) -> None:
                pass

        return Counter()


def run_cases(
    cases: Sequence[Case],
    engines: dict[str, Engine],
    tok: Any,
    *,
    compile_timeout: float = 30.0,
    timeout: float = 120.0,
    sample_slow: int | None = None,
    slow_engines: Iterable[str] = ("outlines",),
    compile_fn: CompileFn = compile_json_schema,
    progress: bool = True,
    skipped: dict[str, str] | None = None,
    key_order: str = "instance",
) -> BenchRun:
    """Run every case on every engine (the slow ones on an even sample of ``sample_slow`` cases).

    ``key_order`` says how instances are written (:func:`tokenize_case`): the same
    texts go to every engine."""
    if key_order not in KEY_ORDERS:
        raise ValueError(f"key_order must be one of {', '.join(KEY_ORDERS)}, got {key_order!r}")
    names = sorted(engines, key=lambda n: (ENGINES.index(n) if n in ENGINES else len(ENGINES), n))
    eos = int(tok.eos_token_id)
    words = (len(tok) + 31) // 32
    encode = text_encoder(tok)
    warm = [(schema, [encode(t) for t in texts]) for schema, texts in WARMUP]
    slow = set(slow_engines) if sample_slow is not None else set()
    sample_ids = {c.id for c in even_sample(cases, sample_slow)} if slow else set()
    worker_cls = _Worker if fork_available() else _InProcess
    for name in names:
        if engines[name].warm_up_before_fork and worker_cls is _Worker:
            _warm_up(engines[name], compile_fn, warm, eos, words)
    workers = {name: worker_cls(engines[name], compile_fn, warm, eos, words) for name in names}
    results: dict[str, list[CaseResult]] = {name: [] for name in names}
    passing = dict.fromkeys(names, 0)  # shown on the progress bar
    bar = _progress(len(cases), progress)
    start = time.perf_counter()
    rewritten = valid_total = 0
    try:
        for case in cases:
            work = tokenize_case(tok, case, key_order)
            rewritten += work.rewritten
            valid_total += sum(work.valid)
            for name in names:
                if name in slow and case.id not in sample_ids:
                    continue
                result = workers[name].run(case, work, compile_timeout, timeout)
                results[name].append(result)
                passing[name] += result.passed
            if bar is not None:
                bar.update(1)
                bar.set_postfix_str(" ".join(f"{n}:{passing[n]}" for n in names))
    finally:
        if bar is not None:
            bar.close()
        for worker in workers.values():
            worker.close()
    settings = {
        "tokenizer": getattr(tok, "name_or_path", ""),
        "vocab_size": len(tok),
        "eos_token_id": eos,
        "compile_timeout_s": compile_timeout,
        "timeout_s": timeout,
        "sample_slow": sample_slow,
        "slow_engines": sorted(slow & set(names)),
        "isolation": "fork (worker per engine, killed on timeout)" if worker_cls is _Worker
                     else "in-process (fork unavailable: no timeouts)",
        "json_schema_options": {n: engines[n].json_schema_options for n in names},
        "serialisation": _serialisation(key_order, rewritten, valid_total),
        "key_order": key_order,
    }
    sampled = {n: [c.id for c in cases if c.id in sample_ids] for n in names if n in slow}
    return BenchRun(list(cases), names, results, dict(skipped or {}), sampled, settings,
                    time.perf_counter() - start)
