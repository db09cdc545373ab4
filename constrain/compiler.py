"""Compile constraints once per (constraint, tokenizer); share the result everywhere.

``Compiler(info).compile_regex(pattern)`` returns an immutable :class:`CompiledGrammar`
that any number of :class:`~constrain.matcher.Matcher` objects (one per sequence,
any thread) read from.  Compiling is cached twice: in memory per compiler (the same
pattern returns the same object) and on disk for the tokenizer-independent byte
DFA (see :mod:`constrain.automata.cache`).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Any, Mapping

import numpy as np

from .automata.byte_dfa import ByteDFA, regex_to_dfa
from .automata.cache import DiskCache, content_key, default_cache
from .automata.pushdown import TokenPDA
from .automata.member_sets import MemberSetTokenPDA
from .automata.unique_items import UniqueItemsTokenPDA
from .automata.token_dfa import TokenDFA
from .automata.token_trie import token_trie_for
from .vocab import TokenizerInfo

__all__ = ["Compiler", "CompiledGrammar", "MAX_DISK_ROWS_BYTES"]

#: Precomputed mask rows larger than this stay in memory only (64 MiB: about 4,000
#: states of a 128k vocabulary).
MAX_DISK_ROWS_BYTES = 64 << 20

#: Default bound on one run of ignored whitespace in grammars (bytes).
DEFAULT_MAX_IGNORE_LEN = 64


class CompiledGrammar:
    """A constraint compiled for one tokenizer: immutable and safe to share across threads.

    Attributes
    ----------
    tokenizer_info:
        The vocabulary it was compiled for.
    kind:
        ``"regex"``, ``"grammar"`` or ``"json_schema"``.
    source:
        The constraint as the user gave it.
    notes:
        What the compile relaxed or treated as annotation (unknown formats,
        keywords relaxed with ``strict=False``), one line each with its JSON pointer.
    resources:
        A JSON Schema's other documents by URI, as given to the compile (what a
        validation of the output resolves references in, too).
    """

    def __init__(self, tokenizer_info: TokenizerInfo, kind: str, source: Any, engine: Any,
                 notes: tuple[str, ...] = (), resources: Mapping[str, Any] | None = None) -> None:
        self.tokenizer_info = tokenizer_info
        self.kind = kind
        self.source = source
        self.engine = engine
        self.notes = notes
        self.resources = dict(resources or {})

    @property
    def is_regular(self) -> bool:
        """True when the language is regular (a token-level DFA exists; DINGO needs this)."""
        return isinstance(self.engine, TokenDFA)

    def memory_bytes(self) -> int:
        """Bytes held by this grammar's automata and memoised masks."""
        return self.engine.memory_bytes()

    def __repr__(self) -> str:
        text = str(self.source)
        if len(text) > 60:
            text = text[:57] + "..."
        return f"CompiledGrammar(kind={self.kind!r}, source={text!r}, vocab_size={self.tokenizer_info.vocab_size})"


class Compiler:
    """Compiles regexes (and later grammars and schemas) for one tokenizer.

    Parameters
    ----------
    tokenizer_info:
        The vocabulary; build it with :meth:`TokenizerInfo.from_huggingface`.
    cache_dir:
        Where to keep compiled automata on disk.  ``None`` uses the default location
        (``$CONSTRAIN_CACHE_DIR`` or ``~/.cache/constrain``); ``False`` disables it.
    max_cached:
        How many compiled grammars this compiler keeps in memory (LRU).
    """

    def __init__(
        self,
        tokenizer_info: TokenizerInfo,
        *,
        cache_dir: str | bool | None = None,
        max_cached: int = 256,
    ) -> None:
        if not isinstance(tokenizer_info, TokenizerInfo):
            raise TypeError(
                "Invalid tokenizer_info: expected a constrain.TokenizerInfo "
                f"(see TokenizerInfo.from_huggingface), got {type(tokenizer_info).__name__}"
            )
        self.tokenizer_info = tokenizer_info
        if cache_dir is False:
            self._disk = DiskCache(None)
        elif cache_dir is None or cache_dir is True:
            self._disk = default_cache()
        else:
            self._disk = DiskCache(cache_dir)
        self._memory: OrderedDict[tuple, CompiledGrammar] = OrderedDict()
        self._max_cached = max_cached
        self._lock = threading.Lock()

    def compile_regex(self, pattern: str, *, precompute: bool = False) -> CompiledGrammar:
        """Compile an ECMA-262 regular expression (full-match semantics).

        The output must match the whole pattern: ``compile_regex("[0-9]+")`` allows
        ``"42"`` and then EOS, never ``"42a"``.  ``\\d`` is ``[0-9]``, ``\\w`` is
        ``[A-Za-z0-9_]``, ``.`` is any character but a line terminator.  Look-aheads
        (``(?!0)\\d+``) and word boundaries are exact; as in a whole match, what
        follows the text is nothing, so ``a(?=b)`` matches no string.

        Parameters
        ----------
        pattern:
            The regex.
        precompute:
            Build every state's mask row now instead of on first visit, so that no
            mask computation later costs more than a copy.  The rows are cached on
            disk (when they fit in :data:`MAX_DISK_ROWS_BYTES`) and loaded by later
            compiles of the same pattern for the same tokenizer.

        Raises
        ------
        RegexError
            Malformed patterns and non-regular constructs (look-behinds,
            back-references), with the position of the construct.
        """
        if not isinstance(pattern, str):
            raise TypeError(f"Invalid regex: expected str, got {type(pattern).__name__}")
        key = ("regex", pattern)
        compiled = self._memory_get(key)
        if compiled is None:
            dfa = self._regex_dfa(pattern)
            engine = TokenDFA(dfa, self.tokenizer_info, self._disk)
            compiled = self._memory_put(key, CompiledGrammar(self.tokenizer_info, "regex", pattern, engine))
        if precompute:
            self._precompute_rows(compiled.engine, content_key("regex-rows", pattern, self.tokenizer_info.hash))
        return compiled

    def compile_grammar(
        self, grammar: str, *, start: str = "start", max_ignore_len: int | None = DEFAULT_MAX_IGNORE_LEN
    ) -> CompiledGrammar:
        """Compile a Lark grammar (LALR(1)); the output must be a complete sentence.

        Terminals are lexed greedily (longest match; ties go to the higher priority,
        then to string literals over regexes), ``%ignore`` terminals may appear
        between any two terminals.  See :mod:`constrain.automata.grammar_engine`.

        ``max_ignore_len`` bounds each run of ignored *whitespace* to that many bytes
        (default 64), so that a model cannot loop on spaces where the grammar only
        tolerates them; ``None`` lifts the bound.  Ignored comments are not bounded.

        Raises
        ------
        GrammarError
            Malformed grammars, LALR(1) conflicts, undefined symbols and terminals
            that use non-regular constructs, with line and column where known.
        """
        key = ("grammar", grammar, start, max_ignore_len)
        compiled = self._memory_get(key)
        if compiled is None:
            engine = self._grammar_engine(grammar, start, max_ignore_len)
            compiled = self._memory_put(key, CompiledGrammar(self.tokenizer_info, "grammar", grammar, engine))
        return compiled

    def _grammar_engine(self, grammar: str, start: str, max_ignore_len: int | None):
        """A GrammarEngine; LALR tables and lexer DFA come from the disk cache when present."""
        import lark

        from .automata.grammar_engine import LexerDFA, grammar_engine
        from .grammar.lark_grammar import LarkGrammar, load_lark_grammar

        key = content_key("lark-grammar", grammar, start, str(max_ignore_len), lark.__version__)
        stored = self._disk.load("grammar", key)
        if stored is not None:
            try:
                parsed = LarkGrammar.from_arrays(grammar, start, {k[8:]: v for k, v in stored.items() if k.startswith("grammar.")})
                lexer = LexerDFA.from_arrays({k[6:]: v for k, v in stored.items() if k.startswith("lexer.")})
                return grammar_engine(parsed, self.tokenizer_info, self._disk, max_ignore_len, lexer)
            except (KeyError, ValueError, IndexError):
                pass  # an entry from another layout: rebuild it
        parsed = load_lark_grammar(grammar, start)
        engine = grammar_engine(parsed, self.tokenizer_info, self._disk, max_ignore_len)
        arrays = {**{f"grammar.{k}": v for k, v in parsed.to_arrays().items()},
                  **{f"lexer.{k}": v for k, v in engine.lexer.to_arrays().items()}}
        self._disk.save("grammar", key, arrays)
        return engine

    def compile_json_schema(
        self,
        schema: Any,
        *,
        whitespace: str = "flexible",
        max_whitespace: int = 12,
        property_order: str = "schema",
        strict: bool = True,
        max_recursion: int = 3,
        max_any_depth: int | None = None,
        resources: Mapping[str, Any] | None = None,
    ) -> CompiledGrammar:
        """Compile a JSON Schema (dict, JSON text or pydantic model class).

        The output is one JSON value valid against the schema, written with keys in
        the schema's ``properties`` order (then any additional keys; an object
        ``enum``/``const`` value of up to 6 members in any order), strings as
        ``json.dumps(..., ensure_ascii=False)`` escapes them, numbers without
        leading zeros (where bounds apply, exponents only in the form ``json.dumps``
        writes, one nonzero digit before the point: ``1e-05``; none where
        ``multipleOf`` applies, nor inside ``oneOf``, ``not``, ``if``/``else`` and
        ``contains``, which stay exact that way: ARCHITECTURE.md, "Number spellings").

        Parameters
        ----------
        whitespace:
            ``"flexible"``: any JSON whitespace between tokens, each run at most
            ``max_whitespace`` bytes (so both ``json.dumps(x)`` and
            ``json.dumps(x, indent=2)`` fit, and a model cannot loop on spaces);
            ``"canonical"``: exactly ``json.dumps``'s ``", "`` and ``": "``;
            ``"compact"``: no whitespace at all.
        property_order:
            ``"schema"``: listed properties in the schema's order, then any others
            (where ``minProperties`` may need two additional members, the object is
            the member loop below, which keeps a key from being written twice);
            ``"any"``: the model picks the order, each property at most once and
            every required one present.  An object is a loop over its members whose
            repeats, required keys, ``minProperties`` and ``maxProperties`` the matcher
            keeps (:mod:`constrain.automata.member_sets`); where that cannot stand (keys
            that cannot be counted, member groups over more than 12 names, no call
            symbol left) an object of up to 3 listed properties is a
            graph over the sets written, and larger ones stay in schema order, said in
            ``notes``.  Objects inside ``not``, ``if`` and the branches of a ``oneOf``
            that one value can meet together keep one shared order, which keeps those
            exact.
        strict:
            Raise :class:`~constrain.errors.SchemaError` for keywords that cannot be
            enforced exactly (``uniqueItems`` over items of more than 8 values that
            are not all strings, ``unevaluatedProperties`` below a branch...).  With
            ``False`` they are left out and listed in ``compiled.notes``.
        max_recursion:
            How many times a recursive ``$ref`` is unrolled on one path where it
            cannot be a call into its own callee (inside ``not``/``oneOf``/``if``/
            ``contains`` operands, and with an integer ``max_any_depth``);
            elsewhere recursion is exact at any depth.  The cut refuses deeper
            values, never lets an invalid one through: where the language is
            taken away (a ``not``, the ``if`` before an ``else``, the other
            ``oneOf`` branches) it takes every deeper value away instead.
        max_any_depth:
            ``None`` (default): free-form values (``{}``, ``true``,
            ``additionalProperties: true``) nest without bound, through a call into
            one shared any-value automaton (the compiled grammar is then not
            regular; see :mod:`constrain.automata.pushdown`), as are recursive
            definitions, long strings' counts and, in flexible whitespace, the commas
            of arrays counted to 8 items or more.  An integer bounds free-form
            nesting instead and keeps the language one DFA (DINGO needs that).
            Inside ``not``/``oneOf``/``if``/``contains`` operands they nest at most
            3 deep either way (deeper ones are refused, on the safe side as for
            ``max_recursion``).
        resources:
            Other schema documents by URI, for references that leave this one
            (nothing is fetched over the network).  The published meta-schemas
            (``http://json-schema.org/draft-07/schema#``...) resolve without them.

        Raises
        ------
        SchemaError
            Malformed schemas, unresolvable ``$ref``, unsupported keywords (strict),
            with the JSON pointer of the offending keyword.
        """
        import json

        from .grammar.json_schema import JsonSchemaOptions, load_schema, schema_to_dfa

        options = JsonSchemaOptions(whitespace, max_whitespace, property_order, strict, max_recursion, max_any_depth)
        value = load_schema(schema)
        text = json.dumps([value, resources or {}], sort_keys=True)
        key = ("json_schema", text, options)
        compiled = self._memory_get(key)
        if compiled is None:
            # No key and no arrays without a disk cache (3 % of a median compile).
            disk_key = content_key("json-schema-dfa-11", text, repr(options)) if self._disk.enabled else None
            stored = self._disk.load("dfa", disk_key) if disk_key is not None else None
            if stored is not None and {"trans", "accepting", "start", "notes", "counted", "unique", "members"} <= stored.keys():
                language = _stored_language(stored)
            else:
                language = schema_to_dfa(value, options, resources)
                if disk_key is not None:
                    self._disk.save("dfa", disk_key, _language_arrays(language))
            if language.is_regular:
                engine: Any = TokenDFA(language.dfa, self.tokenizer_info, self._disk)
            else:
                longest = token_trie_for(self.tokenizer_info, self._disk).max_depth
                if language.members:
                    engine = MemberSetTokenPDA(language.pushdown(longest), self.tokenizer_info, self._disk,
                                               language.members, language.unique)
                elif language.unique:
                    engine = UniqueItemsTokenPDA(language.pushdown(longest), self.tokenizer_info, self._disk,
                                                 language.unique)
                else:
                    engine = TokenPDA(language.pushdown(longest), self.tokenizer_info, self._disk)
            notes = tuple(language.notes)
            compiled = self._memory_put(key, CompiledGrammar(self.tokenizer_info, "json_schema", value, engine, notes,
                                                             resources))
        return compiled

    def compile_builtin(self, name: str) -> CompiledGrammar:
        """Compile a grammar shipped with constrain: ``"json"`` (RFC 8259), ``"sql"`` or ``"python"``.

        ``"python"`` is Python 3 with indentation (see :class:`IndentGrammarEngine`
        in :mod:`constrain.automata.grammar_engine`).
        """
        from .grammar.builtin import builtin_grammar

        return self.compile_grammar(builtin_grammar(name))

    # -- caches ----------------------------------------------------------------
    def _regex_dfa(self, pattern: str) -> ByteDFA:
        """The byte DFA of a pattern, from the disk cache when present."""
        key = content_key("regex-dfa", pattern)
        stored = self._disk.load("dfa", key)
        if stored is not None and {"trans", "accepting", "start"} <= stored.keys():
            return _stored_dfa(stored, "")
        dfa = regex_to_dfa(pattern)
        self._disk.save("dfa", key, _dfa_arrays(dfa, ""))
        return dfa

    def _precompute_rows(self, engine: TokenDFA, key: str) -> None:
        """All mask rows of ``engine``, from the disk cache when present, else built and saved."""
        stored = self._disk.load("rows", key)
        if stored is not None and "rows" in stored and engine.load_rows(stored["rows"]):
            return
        rows = engine.precompute()
        if rows.nbytes <= MAX_DISK_ROWS_BYTES:
            self._disk.save("rows", key, {"rows": rows})

    def _memory_get(self, key: tuple) -> CompiledGrammar | None:
        with self._lock:
            found = self._memory.get(key)
            if found is not None:
                self._memory.move_to_end(key)
            return found

    def _memory_put(self, key: tuple, compiled: CompiledGrammar) -> CompiledGrammar:
        with self._lock:
            existing = self._memory.setdefault(key, compiled)
            self._memory.move_to_end(key)
            while len(self._memory) > self._max_cached:
                self._memory.popitem(last=False)
            return existing


def _dfa_arrays(dfa: ByteDFA, prefix: str) -> dict[str, np.ndarray]:
    """A DFA as named arrays for the disk cache."""
    return {prefix + "trans": dfa.trans, prefix + "accepting": dfa.accepting, prefix + "start": np.int64(dfa.start)}


def _language_arrays(language) -> dict[str, np.ndarray]:
    """A compiled schema (:class:`~.grammar.json_schema.SchemaLanguage`) as named arrays."""
    import json

    arrays = _dfa_arrays(language.dfa, "")
    if language.callee is not None:
        arrays.update(_dfa_arrays(language.callee, "callee_"))
    for symbol, body in language.recursive.items():
        arrays.update(_dfa_arrays(body, f"recursive{symbol}_"))
    arrays["counted"] = np.frombuffer(json.dumps([c.to_json() for c in language.counted]).encode(), dtype=np.uint8)
    if language.counted_symbols is not None:
        arrays["counted_symbols"] = np.asarray(language.counted_symbols, dtype=np.int32)
    arrays["notes"] = np.frombuffer(json.dumps(language.notes).encode(), dtype=np.uint8)
    arrays["unique"] = np.asarray([(symbol, *values) for symbol, values in sorted(language.unique.items())],
                                  dtype=np.int64).reshape(-1, 3)
    members = {str(symbol): rule.to_json() for symbol, rule in language.members.items()}
    arrays["members"] = np.frombuffer(json.dumps(members).encode(), dtype=np.uint8)
    return arrays


def _stored_language(stored: Mapping[str, np.ndarray]):
    """The compiled schema :func:`_language_arrays` saved."""
    import json

    from .grammar.json_schema import SchemaLanguage
    from .automata.member_sets import MemberRule
    from .automata.unique_items import ItemValues
    from .grammar.json_schema.strings import CountedString

    symbols = sorted(int(name[len("recursive"):-len("_trans")]) for name in stored
                     if name.startswith("recursive") and name.endswith("_trans"))
    return SchemaLanguage(
        _stored_dfa(stored, ""), json.loads(bytes(stored["notes"]).decode()),
        _stored_dfa(stored, "callee_") if "callee_trans" in stored else None,
        tuple(CountedString.from_json(c) for c in json.loads(bytes(stored["counted"]).decode())),
        {symbol: _stored_dfa(stored, f"recursive{symbol}_") for symbol in symbols},
        tuple(stored["counted_symbols"].tolist()) if "counted_symbols" in stored else None,
        {int(symbol): ItemValues(int(count), bool(scalars)) for symbol, count, scalars in stored["unique"].tolist()},
        {int(symbol): MemberRule.from_json(rule) for symbol, rule in json.loads(bytes(stored["members"]).decode()).items()})


def _stored_dfa(stored: Mapping[str, np.ndarray], prefix: str) -> ByteDFA:
    """The DFA that :func:`_dfa_arrays` saved under ``prefix``."""
    return ByteDFA(stored[prefix + "trans"].astype(np.int32, copy=False), stored[prefix + "accepting"].astype(bool),
                   int(stored[prefix + "start"]))
