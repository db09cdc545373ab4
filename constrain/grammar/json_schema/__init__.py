"""JSON Schema to a byte DFA of the schema's JSON texts (free-form values as calls).

Pipeline: :mod:`document` (load, index ``$id``/``$anchor``, resolve ``$ref``) →
:mod:`spec` (merge ``$ref``/``allOf`` into one record per value) → :mod:`emit`
(records to regex trees and embedded automata) → one minimal DFA, whose
whitespace runs are then bounded.  See ARCHITECTURE.md, "JSON Schema".
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, Mapping, Sequence

import numpy as np

from ...automata.byte_dfa import MAX_DFA_STATES, ByteDFA, build_byte_dfa, _live_states
from ...automata.dfa_ops import bound_runs, dfa_from_table, has_any_suffix
from ...automata.pushdown import CALL, COUNTED_SYMBOLS, PushdownDFA, called_symbols, inline_calls, without_symbols
from ...automata.member_sets import MemberRule, MemberSetAutomaton
from ...automata.unique_items import UniqueItemsAutomaton
from ...errors import EmptyLanguageError, RegexError, SchemaError
from .document import SchemaDocument, load_schema
from .emit import SchemaEmitter, any_value_callee, largest_parts
from .layout import WHITESPACE_MODES, WS_BYTES, Layout
from .strings import CountedString, counted_string_callee
from .trees import NOTHING, seq

__all__ = ["JsonSchemaOptions", "SchemaLanguage", "schema_to_dfa", "load_schema", "pushdown_automaton", "UNSATISFIABLE",
           "UNSATISFIABLE_WITHIN_CUTS"]


# The language of a schema no value satisfies: one state, no transitions, not accepting.
EMPTY_LANGUAGE = ByteDFA(np.full((1, 256), -1, dtype=np.int32), np.zeros(1, dtype=bool), 0)
#: The note an unsatisfiable schema's compile carries (``generate_json`` refuses to decode it).
UNSATISFIABLE = "#: no JSON value satisfies this schema"
#: Said instead when products cut something on the way (their operands are unrolled to a
#: depth), so the schema may only need values deeper than the cut.
UNSATISFIABLE_WITHIN_CUTS = ("#: no JSON value satisfies this schema within the depths that not/oneOf/if/contains "
                             "unroll (recursion max_recursion times, free-form values 3 levels): it may need deeper "
                             "values (raise max_recursion)")


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
    moves call (None when nothing calls it); ``counted`` holds the counted strings (length
    bounds, patterns, formats) that ``counted_symbols[j]`` moves call; ``recursive`` holds
    the callees of recursive definitions, of definitions many references share, and of
    array items repeated many times, by the symbol that calls them (any automaton here
    may call them; the name is from when recursion was their only use).  With none of
    these, the language is regular.
    """

    dfa: ByteDFA
    notes: list[str] = field(default_factory=list)
    callee: ByteDFA | None = None
    counted: tuple[CountedString, ...] = ()
    recursive: Mapping[int, ByteDFA] = field(default_factory=dict)
    #: The symbol that calls each of ``counted`` (None: ``COUNTED_SYMBOLS[j]`` for entry j).
    counted_symbols: tuple[int, ...] | None = None
    #: The symbols of ``recursive`` whose callees are arrays of distinct strings, with
    #: how many strings their items take (:func:`~constrain.automata.unique_items.string_values`):
    #: the matcher keeps their items distinct (:mod:`constrain.automata.unique_items`).
    unique: Mapping[int, int] = field(default_factory=dict)
    #: The symbols of ``recursive`` whose callees are objects whose members come in any
    #: order, with what the matcher checks of them (:mod:`constrain.automata.member_sets`).
    members: Mapping[int, MemberRule] = field(default_factory=dict)

    @property
    def is_regular(self) -> bool:
        return self.callee is None and not self.counted and not self.recursive

    @property
    def automaton(self) -> ByteDFA | PushdownDFA | UniqueItemsAutomaton | MemberSetAutomaton:
        """What reads the texts (``matches``, ``is_prefix``): ``dfa``, or ``dfa`` with its calls
        (and with its arrays' items kept distinct, or its objects' members)."""
        if self.is_regular:
            return self.dfa
        pda = self.pushdown(BYTE_MARGIN)
        if self.members:
            return MemberSetAutomaton(pda, self.members, self.unique)
        return UniqueItemsAutomaton(pda, self.unique) if self.unique else pda

    def pushdown(self, longest: int) -> PushdownDFA:
        """``dfa`` with its calls, counted loops sized for tokens of up to ``longest`` bytes."""
        return pushdown_automaton(self.dfa, self.callee, self.counted, longest, self.recursive, self.counted_symbols)


#: A short count is inlined into an automaton while its copies add at most this many states
#: there; past that its sites keep their calls.  Repeated items copy a string once per
#: position (``maxItems: 20`` of ``maxLength: 255`` strings: 71,000 states), and every pass
#: after the inlining (whitespace bounding, the pushdown's tables) is as large as the table.
INLINED_COPY_STATES = 20_000

#: Any margin is exact byte by byte; it only matters to the masks of tokens.
BYTE_MARGIN = 8


def pushdown_automaton(dfa: ByteDFA, callee: ByteDFA | None, counted, longest: int,
                       recursive: Mapping[int, ByteDFA] | None = None,
                       counted_symbols: Sequence[int] | None = None) -> PushdownDFA:
    """The pushdown automaton of a compiled schema (see :class:`SchemaLanguage`)."""
    callees = []
    for string in counted:
        try:
            callees.append(counted_string_callee(string, longest))
        except RegexError as err:  # a tokenizer with longer tokens than LONGEST_TOKEN
            raise SchemaError(err.reason, string.pointer) from None
    return PushdownDFA(dfa, callee, callees, recursive, counted_symbols)


def _emitter(root: Any, options: JsonSchemaOptions, resources: Mapping[str, Any] | None, *, strict: bool,
             over: bool = False) -> SchemaEmitter:
    """An emitter for the schema document ``root`` with the compile's options."""
    return SchemaEmitter(SchemaDocument(root, resources), Layout(options.whitespace), strict=strict,
                         max_recursion=options.max_recursion, max_any_depth=options.max_any_depth,
                         any_order=options.property_order == "any", over=over)


def _whole_dfa(emitter: SchemaEmitter) -> ByteDFA | None:
    """The emitter's language with the document's outer whitespace, not minimised (None:
    no value); RegexError and RecursionError pass through."""
    tree = emitter.root()
    if tree is NOTHING:  # e.g. `false`: a valid compile whose matcher allows nothing, not even EOS
        return None
    return build_byte_dfa(seq(emitter.layout.ws, tree, emitter.layout.ws), minimize=False)


def _empty(emitter: SchemaEmitter, root: Any, options: JsonSchemaOptions,
           resources: Mapping[str, Any] | None) -> SchemaLanguage:
    """The language of a schema no value meets within the cuts (nothing allowed, not even
    EOS), with the note that says whether a recursion cut where the language is kept may
    be why (asked of :func:`_has_values_past_cuts` only when there was such a cut)."""
    past_cuts = emitter.kept_recursion_cuts and _has_values_past_cuts(root, options, resources)
    return SchemaLanguage(EMPTY_LANGUAGE, emitter.notes + [UNSATISFIABLE_WITHIN_CUTS if past_cuts else UNSATISFIABLE])


def _has_values_past_cuts(root: Any, options: JsonSchemaOptions, resources: Mapping[str, Any] | None) -> bool:
    """Whether the schema's language is empty only because of depth cuts: built again with
    every cut over-approximating (kept operands take any bytes past a cut, those taken away
    refuse), a superset of its values; empty there too, no value exists at any depth."""
    emitter = _emitter(root, options, resources, strict=False, over=True)
    try:
        dfa = _whole_dfa(emitter)
    except (RegexError, SchemaError, RecursionError):  # cannot tell: say the cuts may be why
        return True
    return dfa is not None and dfa.accepting.any() and _productive(dfa, emitter.callees) is not None


def schema_to_dfa(schema: Any, options: JsonSchemaOptions = JsonSchemaOptions(),
                  resources: Mapping[str, Any] | None = None) -> SchemaLanguage:
    """Compile a schema (dict, JSON text or pydantic model) to the DFA of its JSON texts.

    Free-form values are :data:`~constrain.automata.pushdown.CALL` moves into
    ``callee`` unless ``options.max_any_depth`` bounds them, and recursive
    definitions are calls into their own callees; read texts with
    ``language.automaton``.

    ``resources`` maps URIs to other schema documents that ``$ref`` may point into
    (nothing is ever fetched).

    Raises
    ------
    SchemaError
        Malformed schemas, unresolvable references, keywords that cannot be
        enforced exactly (in strict mode), and schemas no value satisfies.
    """
    root = load_schema(schema)
    emitter = _emitter(root, options, resources, strict=options.strict)
    try:
        dfa = _whole_dfa(emitter)
        if dfa is None:
            return _empty(emitter, root, options, resources)
        # Cuts over-approximate only inside a language taken away, which is widened there;
        # a mark left here would let byte 0xC0 through, so this is checked even under -O.
        if any(map(has_any_suffix, [dfa, *emitter.callees.values()])):
            raise RuntimeError("internal error: an ANY_SUFFIX cut escaped a product (please report the schema)")
    except EmptyLanguageError:  # a part no text meets, found by the whole build (an unbounded `$a` pattern)
        return _empty(emitter, root, options, resources)
    except RegexError as err:
        raise SchemaError(f"the schema's language could not be built: {err.reason}{largest_parts(emitter.sizes)}",
                          "#") from None
    except RecursionError:
        raise SchemaError("the schema nests too deeply to compile", "#") from None
    live = _productive(dfa, emitter.callees) if dfa.accepting.any() else None
    if live is None:  # emptiness found only by the set operations (oneOf, not, ...) or by recursion
        return _empty(emitter, root, options, resources)
    dfa, recursive = live
    symbols = list(recursive)
    (dfa, *bodies), counted, counted_symbols = _inline_short_counts([dfa, *recursive.values()], emitter.counted)
    used = frozenset().union(*map(called_symbols, [dfa, *bodies]))
    callee = _bounded_callee(options.whitespace, options.max_whitespace) if CALL in used else None
    if options.whitespace == "flexible":
        dfa, *bodies = (bound_runs(d, structural_loops(d), WS_BYTES, options.max_whitespace) for d in [dfa, *bodies])
    unique = {symbol: values for symbol, values in emitter.unique_symbols.items() if symbol in symbols}
    members = {symbol: rule for symbol, rule in emitter.member_rules.items() if symbol in symbols}
    return SchemaLanguage(dfa, emitter.notes, callee, counted, dict(zip(symbols, bodies)), counted_symbols, unique,
                          members)


def _productive(dfa: ByteDFA, recursive: Mapping[int, ByteDFA]) -> tuple[ByteDFA, dict[int, ByteDFA]] | None:
    """``dfa`` and the recursive callees it reaches, without calls into callees that read
    no finite value (``{"required": ["next"], "properties": {"next": {"$ref": "#"}}}``);
    None when ``dfa`` itself then reads nothing.

    Masks rely on every state being live; a call is live only if its callee can end,
    which is a least fixed point over the callees (a grammar's productive symbols).
    """
    if not recursive:
        return dfa, {}
    productive: set[int] = set()
    grown = True
    while grown:
        grown = False
        for symbol, body in recursive.items():
            if symbol not in productive and _ends(body, set(recursive) - productive):
                productive.add(symbol)
                grown = True
    dead = set(recursive) - productive
    if dead:
        dfa = _without_calls(dfa, dead)
        if dfa is None:
            return None
        recursive = {symbol: _without_calls(recursive[symbol], dead) for symbol in productive}
    reached, todo = set(), [dfa]
    while todo:  # the callees reached from dfa (some were built for sites a product discarded)
        for symbol in called_symbols(todo.pop()) & recursive.keys() - reached:
            reached.add(symbol)
            todo.append(recursive[symbol])
    return dfa, {symbol: body for symbol, body in recursive.items() if symbol in reached}


def _ends(dfa: ByteDFA, blocked: set[int]) -> bool:
    """Whether ``dfa`` reaches acceptance without moving on the symbols ``blocked``."""
    return bool(_live_states(_table_without(dfa, blocked), dfa.accepting)[dfa.start])


def _without_calls(dfa: ByteDFA, symbols: set[int]) -> ByteDFA | None:
    """``dfa`` without its moves on ``symbols`` (minimal and all-live again; None: empty)."""
    if not symbols & called_symbols(dfa):
        return dfa
    return dfa_from_table(_table_without(dfa, symbols), dfa.accepting, dfa.start)


def _table_without(dfa: ByteDFA, symbols: set[int]) -> np.ndarray:
    """``dfa``'s table with no moves on ``symbols`` (the table itself when it has none)."""
    if not symbols & called_symbols(dfa):
        return dfa.trans
    return without_symbols(dfa.trans, symbols)


def _inline_short_counts(automata: list[ByteDFA], counted: list[CountedString]
                         ) -> tuple[list[ByteDFA], tuple[CountedString, ...], tuple[int, ...]]:
    """``automata`` (the schema's DFA and its recursive callees) with their short counted
    strings inlined (a copy per call, before whitespace bounding multiplies the call
    sites), the counts still called, and their symbols.  A short count's site that
    cannot be inlined (it already reads a quote there: an ``anyOf`` of strings) stays a
    call, and so do all its sites in an automaton where the copies would pass
    :data:`INLINED_COPY_STATES`; products expanded theirs already.

    The counts keep the symbols the emitter gave them, gaps and all: moving them onto
    the first symbols copied every table, 0.4 s for a 200,000-state one (Snowplow
    sp_338), for nothing the pushdown automaton needs."""
    called: list[tuple[CountedString, int]] = []
    for symbol, string in zip(COUNTED_SYMBOLS, counted):
        if not any(symbol in called_symbols(a) for a in automata):
            continue
        if string.is_inlined:
            automata = [_inlined(a, symbol, string) for a in automata]
            if not any(symbol in called_symbols(a) for a in automata):  # every site inlined
                continue
        called.append((string, symbol))
    return automata, tuple(string for string, _ in called), tuple(symbol for _, symbol in called)


def _inlined(automaton: ByteDFA, symbol: int, string: CountedString) -> ByteDFA:
    """``automaton`` with its calls on ``symbol`` replaced by copies of ``string``'s eager
    count; as it is where it makes none, or where the copies would pass
    :data:`INLINED_COPY_STATES` (then its sites keep their calls)."""
    if symbol not in called_symbols(automaton):
        return automaton
    budget = min(MAX_DFA_STATES, automaton.num_states + INLINED_COPY_STATES)
    return inline_calls(automaton, symbol, string.eager_dfa(), budget) or automaton


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
