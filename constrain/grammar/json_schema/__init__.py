"""JSON Schema to a byte DFA of the schema's JSON texts (free-form values as calls).

Pipeline: :mod:`document` (load, index ``$id``/``$anchor``, resolve ``$ref``) →
:mod:`spec` (merge ``$ref``/``allOf`` into one record per value) → :mod:`emit`
(records to regex trees and embedded automata) → one minimal DFA, whose
whitespace runs are then bounded.  See ARCHITECTURE.md, "JSON Schema".
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, Mapping

import numpy as np

from ...automata.byte_dfa import MAX_DFA_STATES, ByteDFA, build_byte_dfa
from ...automata.dfa_ops import bound_runs
from ...automata.pushdown import CALL, COUNTED_SYMBOLS, PushdownDFA, called_symbols, inline_calls
from ...errors import RegexError, SchemaError
from .document import SchemaDocument, load_schema
from .emit import WHITESPACE_MODES, WS_BYTES, Layout, SchemaEmitter, any_value_callee, largest_parts
from .strings import CountedString, counted_string_callee
from .trees import NOTHING, seq

__all__ = ["JsonSchemaOptions", "SchemaLanguage", "schema_to_dfa", "load_schema", "pushdown_automaton", "UNSATISFIABLE"]


# The language of a schema no value satisfies: one state, no transitions, not accepting.
EMPTY_LANGUAGE = ByteDFA(np.full((1, 256), -1, dtype=np.int32), np.zeros(1, dtype=bool), 0)
#: The note an unsatisfiable schema's compile carries (``generate_json`` refuses to decode it).
UNSATISFIABLE = "#: no JSON value satisfies this schema"


@dataclass(frozen=True)
class JsonSchemaOptions:
    """How a schema's values are written; see :meth:`constrain.Compiler.compile_json_schema`."""

    whitespace: str = "flexible"
    max_whitespace: int = 12
    property_order: str = "schema"
    strict: bool = True
    max_recursion: int = 3
    max_any_depth: int | None = None

    def __post_init__(self) -> None:
        if self.whitespace not in WHITESPACE_MODES:
            raise ValueError(f"whitespace must be one of {', '.join(WHITESPACE_MODES)}, got {self.whitespace!r}")
        if self.property_order not in ("schema", "any"):
            raise ValueError(f"property_order must be 'schema' or 'any', got {self.property_order!r}")
        if self.max_whitespace < 0 or self.max_recursion < 0 or (self.max_any_depth or 0) < 0:
            raise ValueError("max_whitespace, max_recursion and max_any_depth must be >= 0")


@dataclass
class SchemaLanguage:
    """The compiled language and what the compile had to say about it.

    ``callee`` is the any-value automaton that ``dfa``'s :data:`~constrain.automata.pushdown.CALL`
    moves call (None when ``dfa`` has none); ``counted`` holds the counted strings (length
    bounds, patterns, formats) that ``COUNTED_SYMBOLS[j]`` moves call.  With neither, the
    language is regular.
    """

    dfa: ByteDFA
    notes: list[str] = field(default_factory=list)
    callee: ByteDFA | None = None
    counted: tuple[CountedString, ...] = ()

    @property
    def is_regular(self) -> bool:
        return self.callee is None and not self.counted

    @property
    def automaton(self) -> ByteDFA | PushdownDFA:
        """What reads the texts (``matches``, ``is_prefix``): ``dfa``, or ``dfa`` with its calls."""
        return self.dfa if self.is_regular else self.pushdown(BYTE_MARGIN)

    def pushdown(self, margin: int) -> PushdownDFA:
        """``dfa`` with its calls, counted loops exact for tokens of up to ``margin`` bytes."""
        return pushdown_automaton(self.dfa, self.callee, self.counted, margin)


#: Any margin is exact byte by byte; it only matters to the masks of tokens.
BYTE_MARGIN = 8


def pushdown_automaton(dfa: ByteDFA, callee: ByteDFA | None, counted, margin: int) -> PushdownDFA:
    """The pushdown automaton of a compiled schema (see :class:`SchemaLanguage`)."""
    callees = []
    for string in counted:
        try:
            callees.append(counted_string_callee(string, margin))
        except RegexError as err:  # a tokenizer with longer tokens than LONGEST_TOKEN
            raise SchemaError(err.reason, string.pointer) from None
    return PushdownDFA(dfa, callee, callees)


def schema_to_dfa(schema: Any, options: JsonSchemaOptions = JsonSchemaOptions(),
                  resources: Mapping[str, Any] | None = None) -> SchemaLanguage:
    """Compile a schema (dict, JSON text or pydantic model) to the DFA of its JSON texts.

    Free-form values are :data:`~constrain.automata.pushdown.CALL` moves into
    ``callee`` unless ``options.max_any_depth`` bounds them; read texts with
    ``language.automaton``.

    ``resources`` maps URIs to other schema documents that ``$ref`` may point into
    (nothing is ever fetched).

    Raises
    ------
    SchemaError
        Malformed schemas, unresolvable references, keywords that cannot be
        enforced exactly (in strict mode), and schemas no value satisfies.
    """
    doc = SchemaDocument(load_schema(schema), resources)
    layout = Layout(options.whitespace)
    emitter = SchemaEmitter(doc, layout, strict=options.strict, max_recursion=options.max_recursion,
                            max_any_depth=options.max_any_depth, any_order=options.property_order == "any")
    try:
        tree = emitter.root()
        if tree is NOTHING:  # e.g. `false`: a valid compile whose matcher allows nothing, not even EOS
            return SchemaLanguage(EMPTY_LANGUAGE, emitter.notes + [UNSATISFIABLE])
        dfa = build_byte_dfa(seq(layout.ws, tree, layout.ws), minimize=False)
    except RegexError as err:
        raise SchemaError(f"the schema's language could not be built: {err.reason}{largest_parts(emitter.sizes)}",
                          "#") from None
    except RecursionError:
        raise SchemaError("the schema nests too deeply to compile", "#") from None
    if not dfa.accepting.any():  # emptiness found only by the set operations (oneOf, not, ...)
        return SchemaLanguage(EMPTY_LANGUAGE, emitter.notes + [UNSATISFIABLE])
    dfa, counted = _inline_short_counts(dfa, emitter.counted)
    callee = _bounded_callee(options.whitespace, options.max_whitespace) if CALL in called_symbols(dfa) else None
    if options.whitespace == "flexible":
        dfa = bound_runs(dfa, structural_loops(dfa), WS_BYTES, options.max_whitespace)
    return SchemaLanguage(dfa, emitter.notes, callee, counted)


def _inline_short_counts(dfa: ByteDFA, counted: list[CountedString]) -> tuple[ByteDFA, tuple[CountedString, ...]]:
    """``dfa`` with its short counted strings inlined (a copy per call, before whitespace
    bounding multiplies the call sites), and the counts still called, renumbered onto
    the first symbols.  A short count's site that cannot be inlined (it already reads a
    quote there: an ``anyOf`` of strings) stays a call; products expanded theirs already."""
    called: list[tuple[CountedString, int]] = []
    used = called_symbols(dfa)
    for symbol, string in zip(COUNTED_SYMBOLS, counted):
        if symbol not in used:
            continue
        if string.is_inlined:
            dfa = inline_calls(dfa, symbol, string.eager_dfa(), MAX_DFA_STATES) or dfa
            if symbol not in called_symbols(dfa):  # every site inlined
                continue
        called.append((string, symbol))
    if [symbol for _, symbol in called] != list(COUNTED_SYMBOLS[:len(called)]):
        trans = dfa.trans.copy()
        trans[:, list(COUNTED_SYMBOLS)] = -1
        for index, (_, symbol) in enumerate(called):
            trans[:, COUNTED_SYMBOLS[index]] = dfa.trans[:, symbol]
        dfa = ByteDFA(trans, dfa.accepting, dfa.start)
    return dfa, tuple(string for string, _ in called)


@lru_cache(maxsize=8)
def _bounded_callee(whitespace: str, max_whitespace: int) -> ByteDFA:
    """The any-value callee with its whitespace runs bounded like the schema's (one per layout)."""
    callee = any_value_callee(whitespace)
    if whitespace == "flexible":
        callee = bound_runs(callee, structural_loops(callee), WS_BYTES, max_whitespace)
    return callee


def structural_loops(dfa: ByteDFA) -> np.ndarray:
    """States that loop on all four JSON whitespace bytes: the "between tokens" states.

    No state inside a string qualifies: raw tab, newline and carriage return are
    never allowed there (they must be escaped), so they cannot loop.
    """
    ws = np.frombuffer(WS_BYTES, dtype=np.uint8)
    return np.all(dfa.trans[:, ws] == np.arange(dfa.num_states)[:, None], axis=1)
