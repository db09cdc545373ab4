"""Callees: recursive and shared definitions, counted strings, free-form values.

Part of :class:`~.emit.SchemaEmitter` (see :mod:`.emit`), which holds the state these
methods read and write; a module per concern keeps each part readable on its own.
"""

from __future__ import annotations

from collections import Counter
from contextlib import contextmanager
from functools import cached_property, lru_cache
from typing import Any, Iterator

import numpy as np

from ...automata.byte_dfa import ByteDFA, build_byte_dfa
from ...automata.dfa_ops import any_suffix_marker, widen_any_suffix
from ...automata.pushdown import (CALL, CALL_SYMBOLS, COUNTED_SYMBOLS, WIDE_CALL, WIDE_SYMBOLS, call_marker,
                                  called_symbols, expand_calls, has_calls)
from ...errors import RegexError, SchemaError
from ..regex import Automaton, RegexNode
from .document import Loc
from .formats import FORMATS
from .layout import Layout
from .member_graphs import items_graph, members_graph
from .numbers import JSON_SPELLING, NUMBER, PLAIN, number_tree
from .sharing import recursive_definitions, scan_references, shared_definitions
from .spec import Slots, Spec, SpecWalk, constraining_keywords, ref_keyword
from .strings import (ANY_CHAR, CountedString, LONG_STRING, MAX_COUNTED_LOW, MAX_SHORT_COUNTS, PATTERN_COUNT,
                      SHORT_STRING, bounds_implied, encode_chars)
from .trees import NOTHING, alt, lit, seq, star


# Free-form values inside the operands of products (not, oneOf, if, contains) nest at most this deep.
OPERAND_ANY_DEPTH = 3

# What _callee_symbols records for a recursive definition no value meets (not a byte).
_NO_VALUE = -1

#: A patterned string closer than PATTERN_COUNT apart that the document writes more than once
#: is one shared (eager) callee from this many states; smaller ones are copied at each site.
SHARED_STRING_STATES = 2000

#: Call symbols the shared definitions leave free, for recursive definitions.
RESERVED_SYMBOLS = 2

#: Arrays counted to this many items call their commas (:meth:`CalleeEmission._items_separator`)
#: in flexible whitespace.
SEPARATOR_CALL_MIN = 8


class CalleeEmission:
    """Where a part of the language is a callee of the pushdown automaton instead of a copy: recursive
    and shared definitions, long counted strings, free-form values; and how operands of products
    are built (plain number spellings, cuts over or under the language)."""

    # -- recursive definitions ----------------------------------------------------------
    def _recursive_call(self, locs: list[Loc], slots: Slots) -> RegexNode | None:
        """A call into the callee of the recursive definition ``locs`` re-enter (built on
        first use), or None where the recursion is unrolled to ``max_recursion`` instead.

        A callee reads one value of the definition and calls itself (or the other
        recursive definitions) where the definition recurs, so recursion is exact at
        any depth and costs one automaton per definition, not ``max_recursion`` nested
        copies.  Unrolled instead: inside a product's operands (products are exact over
        bytes only), where one DFA must hold the language (``max_any_depth``), once
        the call symbols are all taken, and for a definition whose value can begin with
        a call or be empty (a callee must start with a byte).
        """
        if not self._shareable(slots):
            return None
        key = self._callee_key(locs)
        if key not in self._callee_symbols:
            self._build_callee(key, locs)
        return self._call_of(key)

    def _shareable(self, slots: Slots) -> bool:
        """Whether a value built here may be a call: not inside a product's operands (exact
        over bytes only), nor where one DFA must hold the language (``max_any_depth``)."""
        return not slots and self.spelling == JSON_SPELLING and self.max_any_depth is None

    def _call_of(self, key: tuple[str, ...]) -> RegexNode | None:
        """The call into the callee ``key`` has (None: it is built in place)."""
        symbol = self._callee_symbols[key]
        if symbol == _NO_VALUE:
            return NOTHING
        return None if symbol is None else Automaton(call_marker(symbol))

    def _shared_call(self, locs: list[Loc]) -> RegexNode | None:
        """A call into the callee of a definition that references reach from many places
        (chosen by :func:`.sharing.shared_definitions`) or that is on a reference cycle
        (:func:`.sharing.recursive_definitions`: built at its first reference, not
        unrolled until one comes back), or into a recursive definition's callee built
        already, or None where the definition is built in place."""
        key = self._callee_key(locs)
        if key not in self._callee_symbols:
            if key not in self._shared and key not in self._recursive:
                return None
            self._build_callee(key, locs)
        return self._call_of(key)

    @cached_property
    def _references(self) -> tuple[dict, dict] | None:
        """The document's reference graph (:func:`.sharing.scan_references`), scanned once."""
        return scan_references(self.doc, lambda loc: self._callee_key([loc]))

    @cached_property
    def _recursive(self) -> set[tuple[str, ...]]:
        """The definitions on reference cycles, callees from their first reference."""
        return recursive_definitions(self._references)

    @cached_property
    def _shared(self) -> set[tuple[str, ...]]:
        """The definitions to share, from the symbols the long counted strings leave, less
        :data:`RESERVED_SYMBOLS` for recursive definitions (chosen on the first reference)."""
        taken = sum(symbol in COUNTED_SYMBOLS for symbol in self._callee_symbols.values())
        budget = len(COUNTED_SYMBOLS) - self._long_count - taken - RESERVED_SYMBOLS
        return shared_definitions(self._references, budget) if budget > 0 else set()

    @cached_property
    def _long_count(self) -> int:
        """How many counted strings the schema's long bounds may need (scanned once, when needed)."""
        return len(self._callee_bounds)

    @cached_property
    def _callee_bounds(self) -> set[tuple]:
        """The strings that may take a counted symbol (:func:`_long_bounds`): repeated ones only
        when large, so that small ones leave their symbols to shared definitions."""
        long, repeated = _long_bounds(self.doc.root)
        return long | {key for key in repeated if _large_string(*key)}

    def _callee_key(self, locs: list[Loc]) -> tuple[str, ...]:
        """What a recursive callee is keyed by: its schemas, each followed through references
        that are all the schema says (every site of ``{"$ref": "#/$defs/node"}`` shares one)."""
        keys = []
        for loc in locs:
            seen = {loc.key}  # (a cycle of plain references was refused when they were absorbed)
            keyword = plain_reference(loc.node, self.doc.draft)
            while keyword is not None:
                loc = self.doc.resolve(loc, loc.node[keyword], keyword)
                keyword = plain_reference(loc.node, self.doc.draft) if loc.key not in seen else None
                seen.add(loc.key)
            keys.append(loc.key)
        return tuple(dict.fromkeys(keys))

    def _items_separator(self, slots: Slots, positions: int) -> RegexNode:
        """The comma between the items of an array counted to ``positions`` of them: the
        layout's, or for a long count in flexible whitespace, where calls may stand, a
        call into one callee ``ws , ws`` that every such array shares (built on first use).

        In flexible whitespace every place between two tokens is a loop on the four
        whitespace bytes, and bounding each run copies its state once per byte the run
        may hold (``max_whitespace``): with ``maxItems: 1000``, two loops per position
        made the copies most of the schema's table (two such arrays: 8,000 states
        determinised, 63,000 after the copies), and every pass after them as large.  As
        a call, a position keeps none: the callee holds the runs around the comma, and
        the run before the closing bracket is one state for the whole array.

        Objects keep their separators: calls at every member boundary made first masks
        there slower (JSONSchemaBench masks p90 +40 %, p99 +30 % with calls from eight
        members on, +10 % and +7 % from twenty-four, for no more compile time saved than
        arrays alone save).
        """
        layout = self.layout
        if layout.mode != "flexible" or positions < SEPARATOR_CALL_MIN or not self._shareable(slots):
            return layout.comma()
        key = ("separator", ",")
        if key not in self._callee_symbols:
            if not self._wide_symbols_left():
                return layout.comma()
            symbol = self._callee_symbols[key] = self._wide_symbol()
            self.callees[symbol] = build_byte_dfa(layout.comma())
        return self._call_of(key)

    def _wide_symbol(self) -> int:
        """The next wide call symbol (member loops; unique arrays and recursive definitions
        once the narrow ones are taken: the ten narrow symbols go to shared definitions first)."""
        self._wide_given += 1
        return WIDE_SYMBOLS[self._wide_given - 1]

    def _wide_symbols_left(self) -> bool:
        return self._wide_given < len(WIDE_SYMBOLS)

    def _free_callee_symbol(self) -> int | None:
        """A call symbol for a recursive callee: from the top of :data:`COUNTED_SYMBOLS`
        down, above those the counted strings have taken (they take theirs from the bottom)."""
        taken = set(self._callee_symbols.values())
        return next((symbol for symbol in reversed(COUNTED_SYMBOLS[len(self.counted):]) if symbol not in taken), None)

    def _build_callee(self, key: tuple[str, ...], locs: list[Loc]) -> None:
        """Build the callee of ``locs`` under a fresh symbol, or record that it is unrolled.

        The symbol is registered before the body is built, so the body's own
        recursion calls it.  A body that cannot be a callee is undone with every
        callee and unrolled level built inside it (they may call its symbol); the
        definitions decided meanwhile (unrolled, or meeting no value) stay so.
        """
        symbol = self._free_callee_symbol()
        if symbol is None and self._wide_symbols_left():
            # Shared definitions and other callees hold the ten narrow symbols: a wide one,
            # not a definition unrolled max_recursion deep along every path (JsonSchemaStore
            # web-types: dozens of mutually recursive definitions, past 2,000,000 states).
            symbol = self._wide_symbol()
        self._callee_symbols[key] = symbol
        if symbol is None:
            return
        position = len(self._callee_symbols) - 1
        memo_before = set(self._recursive_memo)
        splits_before = self._class_splits
        tree, dfa = self._callee_body(locs, symbol)
        if (dfa is None or not callable_body(dfa)) and self._class_splits > splits_before and not self._class_splits_off:
            # Its top object split into loops by value class: a union of calls, which no
            # callee may start with.  Built again with one loop per object instead (schema
            # order where classes matter), which recursion can call.
            self._undo_callees(position, memo_before)
            self._callee_symbols[key] = symbol
            self._class_splits_off = True
            try:
                tree, dfa = self._callee_body(locs, symbol)
            finally:
                self._class_splits_off = False
        if dfa is not None and callable_body(dfa):
            self.callees[symbol] = dfa
            self.sizes.append((locs[0].pointer or "#", dfa.num_states))
            return
        self._undo_callees(position, memo_before)
        self._callee_symbols[key] = _NO_VALUE if tree is NOTHING else None  # NOTHING: whatever the recursion

    def _callee_body(self, locs: list[Loc], symbol: int) -> tuple[RegexNode, ByteDFA | None]:
        """The tree and automaton of a callee's body (see :meth:`_build_callee`)."""
        walk, spec = SpecWalk(self.doc, [], self.max_recursion), Spec()
        for loc in locs:
            spec = walk.absorb(spec, loc, frozenset())
        tree = self.spec_tree(spec, tuple(walk.chain))
        dfa = self._dfa(tree)
        loop = _single_call(dfa) if dfa is not None else None
        if loop in self.member_rules:
            # The definition is one member loop (property_order="any"): its body under this
            # symbol too, so the recursion into it is a call like any other.
            dfa, self.member_rules[symbol] = self.callees[loop], self.member_rules[loop]
        return tree, dfa

    def _undo_callees(self, position: int, memo_before: set) -> None:
        """Forget the callee registered at ``position`` and every callee and unrolled level
        built since (they may call its symbol); definitions decided meanwhile (unrolled, or
        meeting no value) stay so."""
        for later in list(self._callee_symbols)[position:]:
            if self._callee_symbols[later] not in (None, _NO_VALUE):  # decided ones stay: not built again
                symbol = self._callee_symbols.pop(later)
                self.callees.pop(symbol, None)
                self.unique_symbols.pop(symbol, None)
                self.member_rules.pop(symbol, None)
        for memo_key in set(self._recursive_memo) - memo_before:
            del self._recursive_memo[memo_key]

    def any_value(self) -> RegexNode:
        """Any JSON value (free-form members): a call into the shared any-value automaton,
        or, with an integer ``max_any_depth``, an embedded copy nested at most that deep."""
        if self.max_any_depth is None:
            return Automaton(call_marker())
        self.cuts += 1
        return Automaton(any_value_dfa(self.layout.mode, self.max_any_depth, self.spelling != JSON_SPELLING, self.over))

    @contextmanager
    def numbers_spelled(self, spelling: int) -> Iterator[None]:
        """Build the operands of a product (a difference or intersection of languages):
        the side kept with :data:`PLAIN` numbers, the side taken away with :data:`EVERY_PLAIN`.

        A value has many texts (``2``, ``2.0``, ``2e0``), and a schema writes some of
        them; taking away the texts of what one side accepts removes a value from the
        other only if it removes each of the value's texts there.  So the side taken
        away writes every plain text of its values, the side kept plain texts only:
        ``{"oneOf": [{"type": "integer"}, {"type": "number"}]}`` then accepts no
        integral value, however written.  A stricter outer spelling is kept (an
        operand of an operand taken away must be complete too).
        """
        before = self.spelling
        self.spelling = max(before, spelling)
        try:
            yield
        finally:
            self.spelling = before

    def _plain(self, dfa: ByteDFA | None, over: bool) -> ByteDFA | None:
        """``dfa`` with its calls expanded (products are exact over bytes only): free-form
        values inside ``not``/``oneOf``/``if``/``contains`` operands nest at most
        :data:`OPERAND_ANY_DEPTH` deep (or ``max_any_depth``, when set), past which they
        are refused, or, in a language ``over``-approximated, take any bytes; counted
        strings are eager counts again (which may be too large: RegexError)."""
        if dfa is None or not has_calls(dfa):
            return dfa
        used = called_symbols(dfa)
        callees = {symbol: counted.eager_dfa() for symbol, counted in zip(COUNTED_SYMBOLS, self.counted)
                   if symbol in used}
        if CALL in used:
            callees[CALL] = any_value_dfa(self.layout.mode, self._operand_depth, plain_numbers=True, over=over)
            self.cuts += 1
        return expand_calls(dfa, callees)

    @property
    def _operand_depth(self) -> int:
        """How deep free-form values and JSON texts are unrolled inside products' operands."""
        return OPERAND_ANY_DEPTH if self.max_any_depth is None else self.max_any_depth

    def _taken(self, dfa: ByteDFA | None) -> ByteDFA | None:
        """A language to take away from another, whole: built with ``over`` flipped, its
        calls expanded that way, and its cuts widened to take every continuation."""
        dfa = self._plain(dfa, not self.over)
        return None if dfa is None else widen_any_suffix(dfa)

    @cached_property
    def _short_budget(self) -> int:
        """Short counts (inlined later) take only the symbols the long ones, which stay calls,
        leave (scanned on the first short count, not for every schema)."""
        return max(0, min(MAX_SHORT_COUNTS, len(COUNTED_SYMBOLS) - self._long_count))

    def _counted_call(self, low: int, high: int | None, patterns: tuple[str, ...], formats: tuple[str, ...],
                      pointer: str) -> RegexNode | None:
        """A call into a counted callee for a string whose length bounds are far apart (None:
        count it eagerly here).  Long ones stay calls; short ones, which only plain strings
        get, are inlined when the schema's DFA is built (``schema_to_dfa``).  Not where one
        DFA must hold the language (``max_any_depth``), nor past the symbols there are, nor
        where a pattern already bounds the length."""
        if self.max_any_depth is not None or high is None or high - low < SHORT_STRING or low > MAX_COUNTED_LOW:
            return None
        counted = CountedString(low, high, patterns, formats, pointer)
        if counted not in self.counted:
            if (patterns or formats) and not self._patterned_callee(counted):
                return None
            short = sum(c.is_inlined for c in self.counted)
            if (len(self.counted) == len(COUNTED_SYMBOLS) or COUNTED_SYMBOLS[len(self.counted)] in self._callee_symbols.values()
                    or (counted.is_inlined and short >= self._short_budget)):
                return None
            self.counted.append(counted)
        return Automaton(call_marker(COUNTED_SYMBOLS[self.counted.index(counted)]))

    def _patterned_callee(self, counted: CountedString) -> bool:
        """Whether a string with patterns or formats is a call: a counted loop from
        :data:`PATTERN_COUNT` apart; closer, an eager callee where the document writes the
        same large string more than once (word-count patterns with ``maxLength: 100`` as
        the items of several arrays: one shared copy instead of one per site)."""
        if counted.high - counted.low >= PATTERN_COUNT:
            return self._pattern_count(counted)
        return _bounds_key(counted.low, counted.high, counted.patterns, counted.formats) in self._callee_bounds

    @staticmethod
    def _pattern_count(counted: CountedString) -> bool:
        """Whether a string with patterns or formats gets a counted callee: not when a pattern
        bounds the length already, nor when its content has too many states to copy."""
        if bounds_implied(list(counted.patterns), list(counted.formats), counted.low, counted.high):
            return False
        try:
            return counted.fits()
        except RegexError:  # no content meets them all: the eager tree says so
            return False

    def _plain_tree(self, tree: RegexNode) -> RegexNode:
        dfa = self._plain(self._dfa(tree), self.over)
        return NOTHING if dfa is None else Automaton(dfa)


@lru_cache(maxsize=16)
def any_value_dfa(mode: str, depth: int, plain_numbers: bool = False, over: bool = False) -> ByteDFA:
    """Any JSON value of nesting depth <= ``depth``, built level by level (each level embeds
    the last); numbers in plain spelling inside product operands (see numbers.py).
    ``over``: deeper values are not refused but cut with :data:`.dfa_ops.ANY_SUFFIX`
    (a superset, for a language taken away)."""
    number = number_tree(None, None, False, False, PLAIN) if plain_numbers else NUMBER
    dfa = build_byte_dfa(_any_value_level(Layout(mode), Automaton(any_suffix_marker()) if over else None, number))
    for _ in range(depth):
        dfa = build_byte_dfa(_any_value_level(Layout(mode), Automaton(dfa), number))
    return dfa


@lru_cache(maxsize=4)
def any_value_callee(mode: str) -> ByteDFA:
    """Any JSON value, one level of brackets whose members are calls to itself (see :mod:`~constrain.automata.pushdown`)."""
    return build_byte_dfa(_any_value_level(Layout(mode), Automaton(call_marker()), NUMBER))


def _any_value_level(layout: Layout, inner: RegexNode | None, number: RegexNode) -> RegexNode:
    """Scalars, and (when ``inner`` is given) arrays and objects whose members are ``inner``."""
    string = seq(lit('"'), encode_chars(star(ANY_CHAR)), lit('"'))
    scalars = alt(lit("null"), lit("true"), lit("false"), number, string)
    if inner is None:
        return scalars
    array = seq(layout.opening("["), items_graph([], inner, 0, None, None, layout), layout.closing("]"))
    obj = seq(layout.opening("{"), members_graph([], [(string, inner)], 0, None, layout), layout.closing("}"))
    return alt(scalars, array, obj)


def _single_call(dfa: ByteDFA) -> int | None:
    """The symbol whose one call is all ``dfa`` reads, else None."""
    called = called_symbols(dfa)
    if len(called) != 1:
        return None
    (symbol,) = called
    marker = call_marker(symbol)
    alike = (dfa.num_states == marker.num_states and not dfa.accepting[dfa.start] and int(dfa.accepting.sum()) == 1
             and np.count_nonzero(dfa.trans >= 0) == np.count_nonzero(marker.trans >= 0))
    return symbol if alike else None


def callable_body(dfa: ByteDFA) -> bool:
    """Whether ``dfa`` can be a callee's body: it starts with a byte (its start neither
    accepts nor calls), so a call always reads something before it can return."""
    return not dfa.accepting[dfa.start] and not (dfa.trans[dfa.start, [*CALL_SYMBOLS, WIDE_CALL]] >= 0).any()


def plain_reference(node: Any, draft: int) -> str | None:
    """The reference keyword of a schema that says nothing else (before 2019-09 a
    ``$ref`` overrides its siblings), else None."""
    keyword = ref_keyword(node) if isinstance(node, dict) else None
    if keyword is None or (draft > 7 and constraining_keywords(node) - {keyword}):
        return None
    return keyword


def _long_bounds(root: Any) -> tuple[set[tuple], set[tuple]]:
    """The strings a document writes that may be counted callees, by :func:`_bounds_key`:
    those with long bounds, and the patterned ones from :data:`SHORT_STRING` apart written
    more than once (a raw scan: merged bounds can differ, which only changes who gets a
    symbol)."""
    found: set[tuple] = set()
    repeated: Counter = Counter()
    todo = [root]
    while todo:
        node = todo.pop()
        if isinstance(node, dict):
            low, high = node.get("minLength", 0), node.get("maxLength")
            if isinstance(high, int) and isinstance(low, int):
                fmt = node.get("format")
                formats = (fmt,) if isinstance(fmt, str) and fmt in FORMATS else ()  # others are annotations
                patterned = "pattern" in node or bool(formats)
                key = _bounds_key(low, high, _raw(node.get("pattern")), formats)
                if high - low >= (PATTERN_COUNT if patterned else LONG_STRING):
                    found.add(key)
                elif patterned and high - low >= SHORT_STRING:
                    repeated[key] += 1
            todo.extend(node.values())
        elif isinstance(node, list):
            todo.extend(node)
    return found, {key for key, times in repeated.items() if times > 1}


def _large_string(low: int, high: int, patterns: tuple[str, ...], formats: tuple[str, ...]) -> bool:
    """Whether the eager DFA of this string has :data:`SHARED_STRING_STATES` states (built
    now rather than at its first site: it is memoised either way)."""
    try:
        return CountedString(low, high, patterns, formats).eager_dfa().num_states >= SHARED_STRING_STATES
    except (RegexError, SchemaError):  # no content meets them all, or a bad pattern: its site says so
        return False


def _raw(pattern: Any) -> tuple[str, ...]:
    return (pattern,) if isinstance(pattern, str) else ()


def _bounds_key(low: int, high: int, patterns: tuple[str, ...], formats: tuple[str, ...]) -> tuple:
    return (low, high, patterns, formats)
