"""One adapter per engine: ``constrain`` and the peers it is measured against.

The benchmark scripts in ``benchmarks/`` and ``constrain bench`` drive every engine
through the same small interface (:class:`Engine`): set up once per tokenizer, get
a fresh compiler, compile a regex / the JSON grammar / a JSON Schema, make a
matcher, fill a mask into an int32 ``[1, words]`` torch bitmask, accept a token.
Keeping the adapters in one place means a peer is called the same way by every
measurement, and a fix to one adapter fixes all of them.

Peers (xgrammar, llguidance, outlines-core) are optional: :meth:`Engine.setup`
raises :class:`EngineUnavailable` with the reason when one cannot be imported.

JSON Schema options are each engine's natural ones, as in MaskBench
(``guidance-ai/jsonschemabench``): see :attr:`Engine.json_schema_options`.
"""

from __future__ import annotations

import importlib
import json
import os
import time
from collections.abc import Callable
from typing import Any

__all__ = [
    "ENGINES",
    "OURS",
    "Engine",
    "EngineUnavailable",
    "ConstrainEngine",
    "XGrammarEngine",
    "LLGuidanceEngine",
    "OutlinesEngine",
    "ADAPTERS",
    "optional_import",
    "require",
    "timed",
    "schema_text",
]

#: Engine names in report order.
ENGINES = ("constrain", "xgrammar", "llguidance", "outlines")
OURS = "constrain"


class EngineUnavailable(Exception):
    """The engine cannot run here (not installed, too old, or its setup failed)."""


def optional_import(module: str) -> tuple[Any | None, str | None]:
    """``(module, None)``, or ``(None, reason)`` when it cannot be imported."""
    try:
        return importlib.import_module(module), None
    except ImportError as exc:  # includes ModuleNotFoundError
        missing = getattr(exc, "name", None)
        if missing and module.split(".")[0] == missing.split(".")[0]:
            return None, "not installed"
        return None, f"import failed: {exc}"
    except Exception as exc:  # a broken install must not stop a benchmark
        return None, f"import failed: {type(exc).__name__}: {exc}"


def require(module: str) -> Any:
    """The imported module, or :class:`EngineUnavailable` saying why it cannot be."""
    imported, why = optional_import(module)
    if imported is None:
        raise EngineUnavailable(f"{module}: {why}")
    return imported


def timed(fn: Callable[[], Any]) -> tuple[Any, float]:
    """Call ``fn()``; return its result and the elapsed wall time in seconds."""
    start = time.perf_counter_ns()
    result = fn()
    return result, (time.perf_counter_ns() - start) / 1e9


def schema_text(schema: Any) -> str:
    """A schema as JSON text (peers that take text get exactly the document's JSON)."""
    return schema if isinstance(schema, str) else json.dumps(schema, ensure_ascii=False)


class Engine:
    """One engine: tokenizer setup, compile, matcher, mask fill, token acceptance.

    Subclasses implement what their engine supports; the rest raise
    ``NotImplementedError`` (a benchmark reports the engine as not taking that input).
    """

    name = ""
    distribution = ""
    #: The options the JSON Schema compile uses, as said in reports.
    json_schema_options = ""
    #: Whether warming up in the parent, before worker processes are forked, is safe
    #: (no threads started).  Ours is: its numba JIT then happens once, not per worker.
    warm_up_before_fork = False
    #: Whether :meth:`setup` reads ``token_bytes`` (decoding them costs about a second).
    needs_token_bytes = False

    def __init__(self) -> None:
        self.setup_s: dict[str, float] = {}

    def setup(self, tok: Any, token_bytes: dict[int, bytes]) -> None:
        """Build the engine's tokenizer object (once per run, untimed by the measurements)."""
        raise NotImplementedError

    def fresh_compiler(self) -> Any:
        """Whatever a compile needs that must not be reused between compiles (no caches)."""
        return None

    def compile_regex(self, compiler: Any, pattern: str) -> Any:
        """A full-match regex; by default the xgrammar-style ``compiler.compile_regex``."""
        return compiler.compile_regex(pattern)

    def compile_json_grammar(self, compiler: Any) -> Any:
        """The engine's grammar of any JSON value, whitespace allowed between tokens."""
        raise NotImplementedError(f"{self.name} has no JSON grammar here")

    def compile_grammar(self, compiler: Any, grammar: str) -> Any:
        """A Lark grammar (ours only)."""
        raise NotImplementedError(f"{self.name} does not compile Lark grammars")

    def supports_json_schema(self) -> str | None:
        """``None`` when :meth:`compile_json_schema` works, else why not."""
        return None

    def compile_json_schema(self, compiler: Any, schema: Any) -> Any:
        raise NotImplementedError(f"{self.name} does not compile JSON Schemas")

    def matcher(self, compiled: Any) -> Any:
        raise NotImplementedError

    def fill(self, matcher: Any, bitmask: Any) -> None:
        """Write the next-token mask into row 0 of the int32 torch ``bitmask``.

        The default is the xgrammar-style call that ``constrain.Matcher`` shares.
        """
        matcher.fill_next_token_bitmask(bitmask)

    def accept(self, matcher: Any, token_id: int) -> bool:
        """Advance by ``token_id``; False when the engine refuses it."""
        return bool(matcher.accept_token(token_id))


class ConstrainEngine(Engine):
    """``constrain``: a fresh ``Compiler(info, cache_dir=False)`` per compile, ``Matcher``."""

    name = OURS
    distribution = "constrain"
    warm_up_before_fork = True
    #: ``compile_json_schema``'s ``property_order`` (``constrain bench ... --property-order``).
    property_order = "schema"

    @property
    def json_schema_options(self) -> str:  # type: ignore[override]
        return f"compile_json_schema defaults: whitespace='flexible', strict=True, property_order={self.property_order!r}"

    def setup(self, tok: Any, token_bytes: dict[int, bytes]) -> None:
        from constrain import Compiler, Matcher, TokenizerInfo
        from constrain.automata.byte_dfa import warm_up
        from constrain.automata.token_trie import token_trie_for

        self._compiler_cls, self._matcher_cls = Compiler, Matcher
        self.info, self.setup_s["tokenizer_info"] = timed(lambda: TokenizerInfo.from_huggingface(tok))
        _, self.setup_s["token_trie"] = timed(lambda: token_trie_for(self.info))
        _, self.setup_s["dfa_kernels"] = timed(warm_up)

    def fresh_compiler(self) -> Any:
        return self._compiler_cls(self.info, cache_dir=False)

    def compile_json_grammar(self, compiler: Any) -> Any:
        return compiler.compile_builtin("json")

    def compile_grammar(self, compiler: Any, grammar: str) -> Any:
        return compiler.compile_grammar(grammar)

    def supports_json_schema(self) -> str | None:
        from constrain import Compiler

        if not hasattr(Compiler, "compile_json_schema"):
            return "this constrain has no Compiler.compile_json_schema"
        return None

    accepts_resources = True  # the suite's remotes/ documents, by URI

    def compile_json_schema(self, compiler: Any, schema: Any, resources: Any = None) -> Any:
        return compiler.compile_json_schema(schema if isinstance(schema, dict) else schema_text(schema),
                                            resources=resources, property_order=self.property_order)

    def matcher(self, compiled: Any) -> Any:
        return self._matcher_cls(compiled)

    def precompute_s(self, pattern: str) -> float:
        """Seconds to build every mask row of a fresh compile of ``pattern`` eagerly."""
        compiled = self.compile_regex(self.fresh_compiler(), pattern)
        return timed(compiled.engine.precompute)[1]


class XGrammarEngine(Engine):
    """xgrammar: ``GrammarCompiler(..., cache_enabled=False)``, ``GrammarMatcher``."""

    name = "xgrammar"
    distribution = "xgrammar"
    #: MaskBench's "compliant" xgrammar: any whitespace, and non-strict mode, so that
    #: properties and items the schema does not list are allowed as the spec says.
    json_schema_options = "compile_json_schema(any_whitespace=True, strict_mode=False)"

    def setup(self, tok: Any, token_bytes: dict[int, bytes]) -> None:
        self.xgr = xgr = require("xgrammar")
        self.info, self.setup_s["tokenizer_info"] = timed(lambda: xgr.TokenizerInfo.from_huggingface(tok))
        # xgrammar's default is 8 compile threads; do not oversubscribe a small machine.
        self.threads = max(1, min(8, os.cpu_count() or 8))

    def fresh_compiler(self) -> Any:
        return self.xgr.GrammarCompiler(self.info, max_threads=self.threads, cache_enabled=False)

    def compile_json_grammar(self, compiler: Any) -> Any:
        return compiler.compile_builtin_json_grammar()

    def compile_json_schema(self, compiler: Any, schema: Any) -> Any:
        return compiler.compile_json_schema(schema_text(schema), any_whitespace=True, strict_mode=False)

    def matcher(self, compiled: Any) -> Any:
        return self.xgr.GrammarMatcher(compiled)


class LLGuidanceEngine(Engine):
    """llguidance: ``LLMatcher(tokenizer, grammar)`` compiles; one ``deep_copy`` per use."""

    name = "llguidance"
    distribution = "llguidance"
    json_schema_options = 'grammar_from_json_schema(defaults={"whitespace_flexible": True})'

    def setup(self, tok: Any, token_bytes: dict[int, bytes]) -> None:
        self.llg, self.llg_torch = require("llguidance"), require("llguidance.torch")
        llg_hf = require("llguidance.hf")
        self.tokenizer, self.setup_s["tokenizer"] = timed(lambda: llg_hf.from_tokenizer(tok))

    def _matcher_for(self, grammar: str) -> Any:
        matcher = self.llg.LLMatcher(self.tokenizer, grammar, log_level=0)
        if matcher.is_error():
            raise RuntimeError(matcher.get_error())
        return matcher

    def compile_regex(self, compiler: Any, pattern: str) -> Any:
        return self._matcher_for(self.llg.LLMatcher.grammar_from_regex(pattern))

    def compile_json_grammar(self, compiler: Any) -> Any:
        return self.compile_json_schema(compiler, {})

    def compile_json_schema(self, compiler: Any, schema: Any) -> Any:
        grammar = self.llg.LLMatcher.grammar_from_json_schema(
            schema_text(schema), defaults={"whitespace_flexible": True}
        )
        return self._matcher_for(grammar)

    def matcher(self, compiled: Any) -> Any:
        return compiled.deep_copy()

    def fill(self, matcher: Any, bitmask: Any) -> None:
        self.llg_torch.fill_next_token_bitmask(matcher, bitmask, 0)

    def accept(self, matcher: Any, token_id: int) -> bool:
        return bool(matcher.consume_token(token_id)) and not matcher.is_error()


class OutlinesEngine(Engine):
    """outlines-core: ``Index(regex, Vocabulary)`` and ``Guide``.

    The vocabulary is built offline from the tokenizer's own bytes (no hub access);
    a JSON Schema goes through ``build_regex_from_schema`` with its default
    whitespace pattern.
    """

    name = "outlines"
    distribution = "outlines-core"
    needs_token_bytes = True
    json_schema_options = "json_schema.build_regex_from_schema(schema) (default whitespace pattern), Index"

    def setup(self, tok: Any, token_bytes: dict[int, bytes]) -> None:
        self.oc = oc = require("outlines_core")
        eos = tok.eos_token_id

        def build() -> Any:
            by_bytes: dict[bytes, list[int]] = {}
            for token_id, data in token_bytes.items():
                if token_id != eos and data:
                    by_bytes.setdefault(data, []).append(token_id)
            return oc.Vocabulary(eos, by_bytes)

        self.vocabulary, self.setup_s["vocabulary"] = timed(build)

    def compile_regex(self, compiler: Any, pattern: str) -> Any:
        return self.oc.Index(pattern, self.vocabulary)

    def compile_json_schema(self, compiler: Any, schema: Any) -> Any:
        from outlines_core.json_schema import build_regex_from_schema

        return self.compile_regex(compiler, build_regex_from_schema(schema_text(schema)))

    def matcher(self, compiled: Any) -> Any:
        return self.oc.Guide(compiled)

    def fill(self, matcher: Any, bitmask: Any) -> None:
        matcher.write_mask_into(bitmask.data_ptr(), bitmask.numel(), 4)

    def accept(self, matcher: Any, token_id: int) -> bool:
        try:
            matcher.advance(token_id, return_tokens=False)
        except ValueError:
            return False
        return True


ADAPTERS: dict[str, Callable[[], Engine]] = {
    "constrain": ConstrainEngine,
    "xgrammar": XGrammarEngine,
    "llguidance": LLGuidanceEngine,
    "outlines": OutlinesEngine,
}
