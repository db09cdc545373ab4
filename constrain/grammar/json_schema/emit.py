"""From merged schema records to the language of their JSON texts.

Once the serialisation is fixed (key order, string escapes, number spelling,
bounded whitespace), a non-recursive JSON Schema describes a regular language
except where a value is free-form (``{}``, ``additionalProperties: true``), whose
brackets nest without bound.  So the schema compiles to one byte DFA in which each
free-form value is a call into one shared any-value automaton (see
:mod:`constrain.automata.pushdown`; an integer ``max_any_depth`` embeds a bounded
copy instead), and masks come from the same trie-walk machinery as regexes.
A recursive definition is a callee of its own, called where it recurs; inside
the operands of products it is unrolled to ``max_recursion`` levels.  ``oneOf``, ``not``
and ``if``/``then``/``else`` are exact through DFA products (see
:mod:`constrain.automata.dfa_ops`), whose operands have their calls expanded.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import math
from collections import Counter
from contextlib import contextmanager
from functools import cached_property, lru_cache, partial
from typing import Any, Collection, Iterator, Sequence

import numpy as np

from ...automata.byte_dfa import ByteDFA, build_byte_dfa
from ...automata.dfa_ops import (any_suffix_marker, difference, has_any_suffix, intersect, union, widen_any_suffix,
                                  without_words)
from ...automata.pushdown import (CALL, CALL_SYMBOLS, COUNTED_SYMBOLS, WIDE_CALL, WIDE_SYMBOLS, call_marker, called_symbols,
                                  expand_calls, has_calls)
from ...automata.member_sets import MemberRule
from ...automata.json_strings import GOES_ON
from ...automata.unique_items import ItemValues, item_values
from ...errors import RegexError, SchemaError
from ..regex import Alt, Automaton, Concat, Graph, Repeat, RegexNode
from .content import json_text_callee, json_text_dfa, json_text_string
from .document import Loc, SchemaDocument, readable_key
from .formats import FORMAT_MAX_LENGTH, FORMAT_NOTES, FORMATS, UNENFORCEABLE_FORMATS
from .layout import Layout
from .member_graphs import (any_order_graph, distinct_items_graph, items_graph, keys_by_value, members_graph,
                            with_separators)
from .member_groups import (Dependency, Presence, ValueClasses, chosen_classes, constraint_kinds, dependency_positions,
                            exclusion_group, extra_key_count, implied_by, is_member_wise, member_names, member_rule,
                            names_dependency, negated_member, presence_positions, types_outside, with_member_group,
                            with_presence_groups)
from .numbers import EVERY_PLAIN, JSON_SPELLING, NUMBER, PLAIN, integer_tree, multiple_of_dfa, number_literal, number_tree
from .sharing import recursive_definitions, scan_references, shared_definitions
from .slots import shared_slots
from .spec import (ANNOTATION_KEYWORDS, NO_SLOTS, VARYING_APPLICATORS, KeyRule, Slots, Spec, SpecWalk, copy_spec,
                   MemberGroup, group_branches, place_branch, ref_keyword, spec_of)
from .strings import (ANY_CHAR, LONG_STRING, MAX_COUNTED_LOW, MAX_SHORT_COUNTS, PATTERN_COUNT, SHORT_STRING,
                      CountedString, any_string_dfa, bounds_implied, counted_states, encode_chars, encoded_string,
                      pattern_tree, string_tree)
from .trees import EMPTY, NOTHING, alt, lit, rep, separated_loop, seq, star
from .values import (ALL_TYPES, ecma_validator_class, enum_keys, json_key, json_types, key_classes, meets_content,
                     narrowed_to, pattern_key_dfa, possible_types, regex_blame, search_name, text_value_key,
                     unique_values)

__all__ = ["SchemaEmitter", "largest_parts", "any_value_callee"]

_TYPE_GROUPS = tuple(map(frozenset, (("null",), ("boolean",), ("object",), ("array",), ("string",), ("number", "integer"))))
# Free-form values inside the operands of products (not, oneOf, if, contains) nest at most this deep.
OPERAND_ANY_DEPTH = 3
# What _callee_symbols records for a recursive definition no value meets (not a byte).
_NO_VALUE = -1
# The _callee_symbols key of the callee of JSON documents inside strings (no schema pointer looks so).
_JSON_TEXT = ("contentMediaType: application/json",)
#: A patterned string closer than PATTERN_COUNT apart that the document writes more than once
#: is one shared (eager) callee from this many states; smaller ones are copied at each site.
SHARED_STRING_STATES = 2000
# Object constants are written in any order up to this many members (2**k states per object).
MAX_ANY_ORDER_MEMBERS = 6
#: property_order="any" where no member loop can stand (keys that cannot be counted,
#: no call here): the subset graph, 2**k copies of the
#: values, up to this many members (at 6, ui5.yaml and three others passed the state
#: limit or the compile timeout); larger objects keep schema order.
MAX_GRAPH_ORDER_MEMBERS = 3
#: An any-order object whose member groups split members' values into classes is, per
#: choice of a class (or absence) for each such member, a loop of its own; at most this
#: many loops (see ``SchemaEmitter._loops_by_class``): each holds every member's value,
#: and the classes a value fails are products (at 12, a ``oneOf`` of three tagged kinds,
#: Github_trivial o83138, compiled in 2.8x the time)...
MAX_CLASS_LOOPS = 6
#: ... and at most this many choices are searched for the loops some object can meet.
MAX_CLASS_CHOICES = 256
#: Call symbols the shared definitions leave free, for recursive definitions.
RESERVED_SYMBOLS = 2
#: Array items are a callee from this many copies on (maxItems, else minItems), when they would pass ITEMS_CALL_STATES.
ITEMS_CALL_MIN = 16
ITEMS_CALL_STATES = 20_000
#: Enums of at most this many values are checked value by value (jsonschema) against another
#: ``oneOf`` branch's schema for the same member, to find branches that are apart.
MAX_ENUM_CHECKED = 32
#: How many nested anyOf/oneOf groups narrow the types a value may have (``_value_types``).
MAX_TYPE_DEPTH = 3
#: uniqueItems is exact over items of at most this many distinct values (the set written is the state: 2**k).
MAX_DISTINCT_VALUES = 8
#: ... spelled in at most this many texts in all (a value may have several spellings).
MAX_DISTINCT_TEXTS = 64


class SchemaEmitter:
    """Compile one schema document to a regex tree (with embedded automata)."""

    def __init__(self, doc: SchemaDocument, layout: Layout, *, strict: bool, max_recursion: int,
                 max_any_depth: int | None,
                 any_order: bool = False, over: bool = False) -> None:
        self.doc = doc
        self.any_order = any_order
        self.layout = layout
        self.strict = strict
        self.max_recursion = max_recursion
        self.max_any_depth = max_any_depth
        self.notes: list[str] = doc.notes  # one list: references resolved while emitting add theirs
        self._validator = None
        self._group_types_memo: dict[tuple[str, int], frozenset[str]] = {}
        self._string_languages: dict[tuple, ByteDFA | RegexNode | None] = {}  # _string_language's memo
        self._recursive_memo: dict[tuple, tuple[RegexNode, int]] = {}  # (tree, built spelling-sensitive)
        # How numbers are spelled (numbers.py): plain inside a product's operands.
        self.spelling = JSON_SPELLING
        # Counts integer trees and numeric literals built at EVERY_PLAIN: where an operand
        # taken away (EVERY_PLAIN) and the same operand kept (PLAIN) could differ.
        self.spelling_sensitive = 0
        #: Whether the language being built is taken away from another (by ``not``, the
        #: ``if`` before ``else``, another ``oneOf`` branch): its cuts over-approximate
        #: (see :meth:`_taken_away`).  Flips at every nested product.  Set from the start,
        #: every cut of the whole language over-approximates (a probe: does the schema have
        #: values only past a cut?).
        self.over = over
        #: Counts the choices that depend on ``over`` (a depth bound met: a recursion cut or
        #: a free-form value expanded), so an operand built both ways knows whether they differ.
        self.cuts = 0
        #: Recursion cuts in a language kept (they refuse the deeper values): where the whole
        #: language comes out empty, these may be why (see ``schema_to_dfa``).
        self.kept_recursion_cuts = 0
        #: Products built for subschemas with unevaluated* of their own (:meth:`_with_operand`).
        self.operand_products = 0
        # (pointer, states) of the string and recursion automata built: what grew, when the whole is too large.
        self.sizes: list[tuple[str, int]] = []
        # The strings that are counted callees: COUNTED_SYMBOLS[j] calls entry j.
        self.counted: list[CountedString] = []
        # Definitions read by callees (recursive or shared): their symbol (None: built in place), by _callee_key.
        self._callee_symbols: dict[tuple[str, ...], int | None] = {}
        #: The callees built (recursive and shared definitions), by call symbol (see _build_callee).
        self.callees: dict[int, ByteDFA] = {}
        #: The callees that are arrays of distinct items, with how many values their
        #: items take (see :meth:`_unique_items_call`).
        self.unique_symbols: dict[int, ItemValues] = {}
        #: The callees that are objects whose members come in any order, with what the
        #: matcher checks of them (see :meth:`_any_order_call`).
        self.member_rules: dict[int, MemberRule] = {}
        self._wide_given = 0  # wide symbols given out (never reused)
        #: Objects split into loops by value class so far (see :meth:`_loops_by_class`), and
        #: whether that is off (in a recursive definition's body that it made uncallable).
        self._class_splits = 0
        self._class_splits_off = False
        #: How many anyOf/oneOf branches that are a reference beside sibling keywords are being
        #: built (merged, so recursion through them is unrolled: see :meth:`_note_cut`).
        self._merged_references = 0

    # -- entry points -------------------------------------------------------------
    def root(self) -> RegexNode:
        spec, chain = spec_of(self.doc, self.doc.root_loc, (), self.max_recursion)
        return self.spec_tree(spec, chain)

    def value_of(self, locs: list[Loc], chain: tuple[str, ...], slots: Slots = NO_SLOTS) -> RegexNode:
        """The language of values meeting every schema in ``locs`` (an implicit allOf),
        objects written with the member positions ``slots`` fixes (inside a product's operand)."""
        if not slots and all(loc.node is True or loc.node == {} for loc in locs):
            return self.any_value()
        if len(locs) > 1:  # the same schema met twice (merged sources both list it) is one constraint
            locs = list({loc.key: loc for loc in locs}.values())
        # Several schemas for one value: each one's unevaluated* sees its own subtree only.
        walk = SpecWalk(self.doc, list(chain), self.max_recursion, rooted=len(locs) == 1)
        spec = Spec(slots=slots)
        for loc in locs:
            spec = walk.absorb(spec, loc, frozenset())
        key = None
        if len(walk.chain) > len(chain) and walk.chain[-1] in chain:  # entering a recursive reference again
            call = self._recursive_call(locs, slots)
            if call is not None:
                return call
            key = (tuple(sorted(set(walk.chain))), tuple(walk.chain.count(k) for k in sorted(set(walk.chain))),
                   tuple(loc.key for loc in locs), slots, self.spelling, self.over)
            found = self._recursive_memo.get(key)
            if found is not None:
                self.spelling_sensitive += found[1]
                self.cuts += found[2]
                return found[0]
        elif len(walk.chain) > len(chain) and self._shareable(slots):  # a reference followed
            call = self._shared_call(locs)
            if call is not None:
                return call
        sensitive_before, cuts_before = self.spelling_sensitive, self.cuts
        tree = self.spec_tree(spec, tuple(walk.chain))
        if key is not None:
            tree = self._as_automaton(tree)
            self._recursive_memo[key] = (tree, int(self.spelling_sensitive > sensitive_before),
                                         int(self.cuts > cuts_before))
            if isinstance(tree, Automaton):  # an unrolled recursion level: a candidate for "what grew"
                self.sizes.append((locs[0].pointer or "#", tree.dfa.num_states))
        return tree

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
            keyword = _plain_reference(loc.node, self.doc.draft)
            while keyword is not None:
                loc = self.doc.resolve(loc, loc.node[keyword], keyword)
                keyword = _plain_reference(loc.node, self.doc.draft) if loc.key not in seen else None
                seen.add(loc.key)
            keys.append(loc.key)
        return tuple(dict.fromkeys(keys))

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
        if (dfa is None or not _callable(dfa)) and self._class_splits > splits_before and not self._class_splits_off:
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
        if dfa is not None and _callable(dfa):
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

    # -- combinators --------------------------------------------------------------------
    def spec_tree(self, spec: Spec, chain: tuple[str, ...]) -> RegexNode:
        """The language of one record; an automaton too large to build is blamed on this record.

        The innermost record whose construction fails names its pointer (outer
        records let the SchemaError through), so the error says which sub-schema grew.
        """
        built_before = len(self.sizes)
        try:
            return self._spec_tree(spec, chain)
        except RegexError as err:
            where = spec.sources[0].pointer if spec.sources else ""
            raise SchemaError(f"the language of this sub-schema could not be built: {err.reason}"
                              f"{largest_parts(self.sizes[built_before:])}", where or "#") from None

    def _spec_tree(self, spec: Spec, chain: tuple[str, ...]) -> RegexNode:
        if spec.impossible:
            if not spec.depth_limited:
                return NOTHING
            self.cuts += 1  # cut by max_recursion: refused where kept, anything where taken away
            if self.over:
                return Automaton(any_suffix_marker())
            self.kept_recursion_cuts += 1
            if self._merged_references and self._shareable(spec.slots):  # not a product's operand
                self._note_cut(chain)
            return NOTHING
        self._check_unsupported(spec)
        if spec.operands:
            return self._with_operand(spec, chain)
        if spec.enums:
            return self._enum_tree(spec)
        spec = with_presence_groups(spec)
        if spec.any_of:
            group, rest = spec.any_of[0], spec.without(any_of=spec.any_of[1:])
            if rest.unevaluated_properties or rest.unevaluated_items:
                return self._any_of_unevaluated(rest, group, chain)
            return _merged_scalars(alt(*(self._branch_tree(rest, group, i, chain) for i in range(len(group.node)))))
        if spec.one_of:
            return self._one_of(spec, chain)
        if spec.nots:
            kept_types = types_outside(spec.nots[0].node, spec.types)
            if kept_types is not None:  # `not: {"type": ...}`: the other types, no product
                return self.spec_tree(spec.without(nots=spec.nots[1:], types=kept_types), chain)
            moved = exclusion_group(spec.nots[0])
            if moved is not None:  # `not: {"required": [...]}`: a member group, no product
                return self.spec_tree(with_member_group(spec.without(nots=spec.nots[1:]), moved), chain)
            base = spec.without(nots=spec.nots[1:])
            negated, negated_chain = self._merged(base, spec.nots[0], chain)
            slots = shared_slots(self.doc, base, [(negated, negated_chain)], self.max_recursion)
            base, negated = base.without(slots=slots), negated.without(slots=slots)
            with self.numbers_spelled(PLAIN):
                kept = self.spec_tree(base, chain)
            return self._minus(kept, self._condition_tree(negated, negated_chain, spec.nots[0], "not"))
        if spec.conditionals:
            return self._conditional(spec, chain)
        if any(not names_dependency(d) for d in spec.dependencies):  # lists of names: the member graph's
            return self._dependency(spec, chain)
        types = ALL_TYPES if spec.types is None else spec.types
        return alt(*(self._type_tree(spec, name, chain) for name in ("null", "boolean", "object", "array", "string", "number")
                     if name in types or (name == "number" and "integer" in types)))

    def _merged(self, spec: Spec, loc: Loc, chain: tuple[str, ...]) -> tuple[Spec, tuple[str, ...]]:
        walk = SpecWalk(self.doc, list(chain), self.max_recursion)
        merged = walk.absorb(copy_spec(spec), loc, frozenset())
        return merged, tuple(walk.chain)

    def _merged_tree(self, spec: Spec, loc: Loc, chain: tuple[str, ...]) -> RegexNode:
        merged, chain = self._merged(spec, loc, chain)
        return self.spec_tree(merged, chain)

    def _branch_tree(self, rest: Spec, group: Loc, index: int, chain: tuple[str, ...],
                     merged: tuple[Spec, tuple[str, ...]] | None = None) -> RegexNode:
        """The language of branch ``index`` of the anyOf (or disjoint oneOf) ``group`` met
        with ``rest`` (``merged``: that branch merged already, :meth:`_branch`).

        A branch that is only a reference, beside nothing else (``Optional[Node]``:
        ``{"anyOf": [{"$ref": "#/$defs/Node"}, {"type": "null"}]}``), is the value of
        that reference, so a recursive definition re-entered there is a call into its
        callee like one re-entered through a member's value: merged into the record
        instead, it was unrolled ``max_recursion`` deep, and a deeper valid value was
        refused.
        """
        reference = _plain_reference(group.node[index], self.doc.draft) is not None
        if reference and _constrains_nothing(rest):
            return self.value_of([group.child(index)], chain, rest.slots)
        branch, branch_chain = merged or self._branch(rest, group, index, chain)
        self._merged_references += reference
        try:
            return self.spec_tree(branch, branch_chain)
        finally:
            self._merged_references -= reference

    def _any_of_unevaluated(self, rest: Spec, group: Loc, chain: tuple[str, ...]) -> RegexNode:
        """anyOf under unevaluated*: a value may use the members (items) of *every* branch it
        meets, so the language is the union, over the non-empty sets S of branches, of
        ``rest`` merged with all of S.  Branch by branch alone, ``{"foo": 1, "bar": 2}``
        under ``anyOf: [{properties: {foo}}, {properties: {bar}}]`` and
        ``unevaluatedProperties: false`` was refused, though it meets both branches.

        A set in which some branch evaluates nothing the others do not is not needed:
        the same set without that branch evaluates as much and asks less.  So only sets
        whose every branch adds something are built (:func:`_growing_sets`; none beyond
        single branches where the branches evaluate the same members, or none at all),
        at most :data:`MAX_EVALUATING_SETS`; past that the keyword is not exact.
        """
        count = len(group.node)
        merged = [self._branch(rest, group, i, chain) for i in range(count)]
        base = _evaluated(rest, -1)
        marks = [_evaluated(branch, i, rest) - base for i, (branch, _) in enumerate(merged)]
        sets = _growing_sets(marks, MAX_EVALUATING_SETS)
        if sets is None:
            loc, keyword = ((rest.unevaluated_properties[0], "unevaluatedProperties") if rest.unevaluated_properties
                            else (rest.unevaluated_items[0], "unevaluatedItems"))
            self._not_exact(loc.pointer, keyword, f"the anyOf at {group.pointer or '#'} has more than "
                            f"{MAX_EVALUATING_SETS} sets of branches that evaluate different members or items")
            rest = _without_unevaluated(rest)  # an over-approximation: the branches alone, nothing unevaluated
            return _merged_scalars(alt(*(self._branch_tree(rest, group, i, chain) for i in range(count))))
        trees = [self._branch_tree(rest, group, i, chain, merged[i]) for i in range(count)]
        trees += [self.spec_tree(*self._branches(rest, group, indices, chain)) for indices in sets]
        return _merged_scalars(alt(*trees))

    def _branch(self, rest: Spec, group: Loc, index: int, chain: tuple[str, ...]) -> tuple[Spec, tuple[str, ...]]:
        """Branch ``index`` of the anyOf/oneOf ``group`` merged into ``rest``; see :meth:`_branches`."""
        return self._branches(rest, group, (index,), chain)

    def _branches(self, rest: Spec, group: Loc, indices: Sequence[int],
                  chain: tuple[str, ...]) -> tuple[Spec, tuple[str, ...]]:
        """Branches ``indices`` of the anyOf/oneOf ``group`` merged into ``rest``, their members
        where the combinator stands in the schema (``place_branch``).

        Beside its node's ``properties`` a combinator stands where it is written only
        when its branch *extends* the node, listing members the rest does not (a
        base: ``{"anyOf": [{"$ref": base}], "properties": {...}}``, Github_hard
        o60038).  A branch that only constrains members the node lists (a tagged
        variant: ``"oneOf": [{"properties": {"kind": {"enum": ...}}}]``,
        Github_easy o10011) leaves them in the node's order, whatever the order the
        keywords are written in.
        """
        merged, merged_chain = rest, chain
        for index in indices:
            merged, merged_chain = self._merged(merged, group.child(index), merged_chain)
        before = rest.listed_before.get(group.key)
        if before is None:
            return merged, merged_chain
        own_after = rest.own_after.get(group.key)
        if own_after:
            own = Spec()  # what the branches list, their order
            for index in indices:
                own, _ = self._merged(own, group.child(index), chain)
            if any(name not in rest.properties for name in own.properties):
                return place_branch(merged, rest, before - own_after, list(own.properties)), merged_chain
        return place_branch(merged, rest, before), merged_chain

    def _one_of(self, spec: Spec, chain: tuple[str, ...]) -> RegexNode:
        """Exactly one branch: each branch's language minus the union of the others.

        Branches that no value can meet together (a tagged union: different types, or a
        required member whose values differ, like ``"kind": {"const": ...}``) are an
        ``anyOf``: no product, and no shared member order, is needed.
        """
        group, rest = spec.one_of[0], spec.without(one_of=spec.one_of[1:])
        merged = [self._branch(rest, group, i, chain) for i in range(len(group.node))]
        judged = [(self._judged(rest, branch, group.child(i)), branch_chain)
                  for i, (branch, branch_chain) in enumerate(merged)]
        # A branch cut by the recursion bound whose types past the cut leave none the rest
        # allows meets no value: left out, exactly.
        kept = [i for i, (spec_judged, _) in enumerate(judged) if spec_judged is not None]
        merged, judged = [merged[i] for i in kept], [judged[i] for i in kept]
        unevaluated = bool(rest.unevaluated_properties or rest.unevaluated_items)
        if not unevaluated:
            possible = frozenset().union(*(self._value_types(branch) for branch, _ in judged))
            apart = self._disjoint_types(judged, chain) & possible
            if apart == possible:
                return alt(*(self._branch_tree(rest, group, i, chain, branch) for i, branch in zip(kept, merged)))
            if apart:
                # Split by type: branches apart for objects (required tags) but not for the
                # scalars they all let through need no product over their objects.
                return alt(self.spec_tree(narrowed_to(spec, apart), chain),
                           self.spec_tree(narrowed_to(spec, possible - apart), chain))
        moved = None if unevaluated else self._member_group(group, "oneOf", rest)
        if moved is not None:
            # Branches that only constrain members: rules of the object's member graph
            # (Presence with value classes), not a product of whole objects.
            return self.spec_tree(with_member_group(rest, moved), chain)
        slots = shared_slots(self.doc, rest, merged, self.max_recursion)
        branches = [(branch.without(slots=slots), branch_chain) for branch, branch_chain in merged]
        if unevaluated:
            return self._one_of_unevaluated(branches, group)
        operands = [self._kept_and_removed(branch, branch_chain) for branch, branch_chain in branches]
        return _exactly_one([kept for kept, _ in operands], [removed for _, removed in operands])

    def _kept_and_removed(self, spec: Spec, chain: tuple[str, ...]) -> tuple[ByteDFA | None, ByteDFA | None]:
        """A product operand both kept and taken away (a oneOf branch): its automaton with
        plain numbers and the context's cuts, and with every plain spelling and the cuts
        flipped (widened, ready to take away), built once where they cannot differ."""
        sensitive_before, cuts_before = self.spelling_sensitive, self.cuts
        with self.numbers_spelled(EVERY_PLAIN), self._taken_away():
            built = self._dfa(self.spec_tree(spec, chain))
        same = (self.spelling == EVERY_PLAIN or self.spelling_sensitive == sensitive_before) and self.cuts == cuts_before
        removed = self._taken(built)
        if not same:
            with self.numbers_spelled(PLAIN):
                built = self._dfa(self.spec_tree(spec, chain))
        return self._plain(built, self.over), removed

    def _disjoint_types(self, branches: list[tuple[Spec, tuple[str, ...]]], chain: tuple[str, ...]) -> frozenset[str]:
        """The types for which no value meets two of ``branches`` (:meth:`_disjoint` on the
        branches narrowed to each type in turn; ``number`` and ``integer`` go together)."""
        apart: frozenset[str] = frozenset()
        for group in _TYPE_GROUPS:
            narrowed = [narrowed_to(branch, group) for branch, _ in branches]
            if all(self._disjoint(a, b, chain) for i, a in enumerate(narrowed) for b in narrowed[i + 1:]):
                apart |= group
        return apart

    def _disjoint(self, a: Spec, b: Spec, chain: tuple[str, ...], depth: int = 2) -> bool:
        """Whether no value meets both records, judged from what surely holds (conservative):
        their types and enums, and (for objects) a member one requires whose values the
        other's schema for that member excludes, ``depth`` levels down.  In schema order
        also ranges that cannot meet, string languages with an empty product, and members
        one requires that the other's ``not: {required}`` refuses (:meth:`_apart_by_values`)."""
        if (a.impossible and not a.depth_limited) or (b.impossible and not b.depth_limited):
            return True  # a record no value meets
        if a.impossible or b.impossible:  # a record cut by the recursion bound is not judged here
            return False
        common = self._value_types(a) & self._value_types(b)
        if not common:
            return True
        keys_a, keys_b = enum_keys(a), enum_keys(b)
        if keys_a is not None and keys_b is not None and not keys_a & keys_b:
            return True
        for one, other in ((a, b), (b, a)):
            if one.enums and len(one.enums[0]) <= MAX_ENUM_CHECKED:
                # A tag that is an enum against one that is a schema ("changes": ["deleted"]
                # against an array of other words): apart when no listed value meets the other.
                if not any(self._admits(other, value) for value in self._enum_values(one)):
                    return True
        if not self.any_order and self._apart_by_values(a, b, common):
            return True
        if depth == 0:
            return False
        for one, other in ((a, b), (b, a)):
            if one.types is not None and one.types <= {"object"}:
                for name in sorted(one.required):
                    mine = self._record(self._locs_for_key(one, name), chain)
                    theirs = self._record(self._locs_for_key(other, name), chain)
                    if self._disjoint(mine, theirs, chain, depth - 1):
                        return True
        return False

    def _apart_by_values(self, a: Spec, b: Spec, common: frozenset[str]) -> bool:
        """Whether ranges (numbers, lengths, counts), string languages or, for objects, a
        ``not: {required}`` of one against the other's required members keep ``a`` and
        ``b`` apart (``common``: the types both may have).

        Only in schema order: there the union of apart variants is determinised into one
        automaton, never worse than their product.  In any order each object variant is a
        member loop of its own, and a union keeps every variant whose members were
        written so far alive until its tag comes: Github_ultra o17072's 41 libnoise
        modules, tagged by patterns, then took masks of 2.2 s, against 0.55 ms as the
        member groups (one loop) they were before.
        """
        if _bounds_apart(a, b, common) or common == {"string"} and self._strings_apart(a, b):
            return True
        return any(one.types is not None and one.types <= {"object"} and _refuses_all_of(other, one.required.keys())
                   for one, other in ((a, b), (b, a)))

    def _strings_apart(self, a: Spec, b: Spec) -> bool:
        """Whether no string meets both records' patterns, formats and lengths (a tag
        written as a pattern: ``"type": {"pattern": "^SEQ$"}`` against ``"^CHOICE$"``).

        Each side's language over-approximates its record (its other keywords are left
        out), so languages apart mean values apart: a string both allow would have its
        ``json.dumps`` spelling, which every string language holds, in both.  Records
        with no pattern or format are not judged here.
        """
        sides = [self._string_language(spec) for spec in (a, b)]
        if any(side is NOTHING for side in sides):
            return True
        if sides[0] is None or sides[1] is None:
            return False
        try:
            return intersect(sides[0], sides[1]) is None
        except RegexError:  # past the state limit: not judged
            return False

    def _string_language(self, spec: Spec) -> ByteDFA | RegexNode | None:
        """The DFA of the strings ``spec``'s patterns, known formats and short lengths
        allow (memoised by them); NOTHING where no string meets them; None where it has
        no pattern or format, or it cannot be built."""
        patterns = tuple(sorted({pattern for pattern, _ in spec.patterns}))
        formats = tuple(sorted({name for name, _ in spec.formats if name in FORMATS}))
        if not (patterns or formats):
            return None
        short = spec.max_length is not None and spec.max_length <= SHORT_STRING
        low, high = (spec.min_length, spec.max_length) if short else (0, None)  # long counts: left out (wider)
        key = (low, high, patterns, formats)
        if key not in self._string_languages:
            try:
                tree = string_tree(low, high, list(patterns), list(formats))
                self._string_languages[key] = NOTHING if tree is NOTHING else build_byte_dfa(tree)
            except RegexError:
                self._string_languages[key] = None
        return self._string_languages[key]

    def _judged(self, rest: Spec, branch: Spec, loc: Loc) -> Spec | None:
        """The record that stands for ``branch`` (``loc`` merged into ``rest``) when judging
        which branches no value meets together: itself, unless the recursion bound cut it.

        A cut record tells nothing of its values, so it was apart from no other branch: a
        ``oneOf`` of an object definition and scalars, met at the bound, was a product
        over every level above (JsonSchemaStore web-types ran past the timeout).  Its types
        are still known: those of ``loc`` read from a fresh chain that the rest allows.  It
        stands in as any value of those types (more values than it has, so what is apart
        from it is apart from the branch), and None when there are none (it meets no value).
        """
        if not (branch.impossible and branch.depth_limited):
            return branch
        fresh = self._record([loc], ())
        if fresh.impossible:
            return branch
        types = self._value_types(fresh) & self._value_types(rest)
        return Spec(types=types) if types else None

    def _value_types(self, spec: Spec, depth: int = MAX_TYPE_DEPTH) -> frozenset[str]:
        """Types a value meeting ``spec`` may have: :func:`possible_types`, narrowed by its
        ``anyOf``/``oneOf`` groups (a value meets some branch of each), ``depth`` groups down.

        ``{"oneOf": [{"$ref": "#/definitions/x"}, {"type": "array", "items": {"$ref": ...}}]}``
        where ``x`` is a ``oneOf`` of an object and scalars is a union of types no value
        meets twice; judged on the record's own ``type`` alone, it was a product over
        recursive definitions (JsonSchemaStore web-types ran past the timeout).
        """
        types = possible_types(spec)
        if depth == 0:
            return types
        for group in spec.any_of + spec.one_of:
            types = types & self._group_types(group, depth)
            if not types:
                break
        return types

    def _group_types(self, group: Loc, depth: int) -> frozenset[str]:
        """The types a value meeting some branch of ``group`` may have (memoised: a
        group's branches are the same schemas wherever it is reached, and the records are
        walked from a fresh chain, whose cuts only ever widen the answer)."""
        key = (group.key, depth)
        types = self._group_types_memo.get(key)
        if types is None:
            self._group_types_memo[key] = ALL_TYPES  # a group inside its own branch: no narrowing
            branches = (self._record([group.child(i)], ()) for i in range(len(group.node)))
            types = frozenset().union(*(ALL_TYPES if branch.impossible else self._value_types(branch, depth - 1)
                                        for branch in branches))
            self._group_types_memo[key] = types
        return types

    def _record(self, locs: list[Loc], chain: tuple[str, ...], slots: Slots = NO_SLOTS) -> Spec:
        """The merged record of ``locs`` (an implicit allOf)."""
        return self._walked(locs, chain, slots)[0]

    def _walked(self, locs: list[Loc], chain: tuple[str, ...], slots: Slots = NO_SLOTS) -> tuple[Spec, tuple[str, ...]]:
        """The merged record of ``locs`` and the reference chain its walk ended with."""
        walk, spec = SpecWalk(self.doc, list(chain), self.max_recursion), Spec(slots=slots)
        for loc in locs:
            spec = walk.absorb(spec, loc, frozenset())
        return spec, tuple(walk.chain)

    def _one_of_unevaluated(self, branches, group: Loc) -> RegexNode:
        """oneOf under unevaluated*: branch i with it, minus the other branches judged without it."""
        out = []
        for index, (branch, branch_chain) in enumerate(branches):
            with self.numbers_spelled(PLAIN):
                tree = self.spec_tree(branch, branch_chain)
            for other, (spec, other_chain) in enumerate(branches):
                if other != index and tree is not NOTHING:
                    tree = self._minus(tree, self._condition_tree(spec, other_chain, group, "oneOf"))
            out.append(tree)
        return alt(*out)

    def _conditional(self, spec: Spec, chain: tuple[str, ...]) -> RegexNode:
        loc, base = spec.conditionals[0], spec.without(conditionals=spec.conditionals[1:])
        moved = None if base.unevaluated_properties or base.unevaluated_items else self._member_group(
            loc, "if", base)
        if moved is not None:
            # if/then/else that only constrain members ("if kind is x then y is required"):
            # a rule of the member graph, not products of whole objects (chains of them
            # nested one product per conditional).
            return self.spec_tree(with_member_group(base, moved), chain)
        if_spec, if_chain = self._merged(base, loc.child("if"), chain)
        slots = shared_slots(self.doc, base, [(if_spec, if_chain)], self.max_recursion)
        base, if_spec = base.without(slots=slots), if_spec.without(slots=slots)
        then_tree = self._merged_tree(if_spec, loc.child("then"), if_chain) if "then" in loc.node else self.spec_tree(if_spec, if_chain)
        with self.numbers_spelled(PLAIN):
            else_tree = self._merged_tree(base, loc.child("else"), chain) if "else" in loc.node else self.spec_tree(base, chain)
        return alt(then_tree, self._minus(else_tree, self._condition_tree(if_spec, if_chain, loc.child("if"), "if")))

    def _condition_tree(self, spec: Spec, chain: tuple[str, ...], at: Loc, keyword: str) -> RegexNode:
        """The language taken away by ``not``, ``if`` or another ``oneOf`` branch: the record
        as a condition (its unevaluated* belong to the parent), every plain number spelling."""
        with self.numbers_spelled(EVERY_PLAIN), self._taken_away():
            return self.spec_tree(_without_unevaluated(spec), chain)

    @contextmanager
    def _taken_away(self) -> Iterator[None]:
        """Build a language that a product takes away: its depth cuts over-approximate.

        Inside a product's operands a recursive definition is unrolled ``max_recursion``
        times and free-form values are expanded :data:`OPERAND_ANY_DEPTH` levels deep.
        Where the operand is kept, a cut refuses the values nested deeper: fewer texts,
        never a wrong one.  Where the operand is taken away (the ``not``, the ``if``
        before ``else``, the other ``oneOf`` branches), refusing them would take away
        too little, and the deeper values it should take away would get through; there
        the cut takes any bytes instead (:data:`.dfa_ops.ANY_SUFFIX`), which takes away
        too much, so the difference only refuses deep values.  An operand of an operand
        taken away is kept again: the polarity flips at every nested product.
        """
        self.over = not self.over
        try:
            yield
        finally:
            self.over = not self.over

    def _dependency(self, spec: Spec, chain: tuple[str, ...]) -> RegexNode:
        """A dependency on a schema: a member group ("if ``key`` is there, then the
        schema") where the schema only constrains members, else two disjoint cases:
        ``key`` absent, or present and the schema merged.  Dependencies on lists of
        names stay on the record for the object's member graph (:class:`Dependency`):
        as cases, ``n`` of them made ``2**n`` copies of the object."""
        index = next(i for i, d in enumerate(spec.dependencies) if not names_dependency(d))
        loc, key, keyword = spec.dependencies[index]
        base = spec.without(dependencies=spec.dependencies[:index] + spec.dependencies[index + 1:])
        if not (base.unevaluated_properties or base.unevaluated_items):
            # A member-wise schema: "if the key is there, then the schema" as a rule of the
            # member graph (n dependencies were 2**n copies of the object).
            then = loc.child(keyword, key)
            condition = Loc({"type": "object", "required": [key]}, then.pointer, then.base, then.draft)
            moved = self._member_group(loc, "if", base, [condition, then, None], {keyword: {key: then.node}})
            if moved is not None:
                return self.spec_tree(with_member_group(base, moved), chain)
        absent = copy_spec(base)
        absent.properties.setdefault(key, []).append(Loc(False, loc.pointer + f"/{keyword}/{key}", loc.base))
        present = copy_spec(base)
        present.require([key])
        return alt(self.spec_tree(absent, chain), self._merged_tree(present, loc.child(keyword, key), chain))

    def _with_operand(self, spec: Spec, chain: tuple[str, ...]) -> RegexNode:
        """The record less its first operand, intersected with that operand as a record of
        its own (rooted there, so its unevaluated* sees exactly its subtree): a product,
        whose member positions the operand fixes (``shared_slots``)."""
        base = spec.without(operands=spec.operands[1:])
        self.operand_products += 1
        if self.operand_products > MAX_OPERAND_PRODUCTS:
            loc = spec.operands[0]
            keyword = "unevaluatedProperties" if "unevaluatedProperties" in loc.node else "unevaluatedItems"
            self._unenforced(loc, keyword, f"more than {MAX_OPERAND_PRODUCTS} products for subschemas whose own "
                                           "unevaluated* sees what varies (nested combinators multiply them)")
            # Not strict: the whole language over-approximated, so a kept side loses the
            # operand, a side taken away (``over``) takes nothing.
            return NOTHING if self.over else self.spec_tree(base, chain)
        walk = SpecWalk(self.doc, list(chain), self.max_recursion)
        own = walk.absorb(Spec(), spec.operands[0], frozenset())
        own_chain = tuple(walk.chain)
        slots = shared_slots(self.doc, base, [(own, own_chain)], self.max_recursion)
        base, own = base.without(slots=slots), own.without(slots=slots)
        with self.numbers_spelled(PLAIN):
            kept = self.spec_tree(base, chain)
            met = self.spec_tree(own, own_chain) if kept is not NOTHING else NOTHING
        if met is NOTHING:
            return NOTHING
        both = intersect(self._plain(self._dfa(kept), self.over), self._plain(self._dfa(met), self.over))
        return NOTHING if both is None else Automaton(both)

    def _minus(self, tree: RegexNode, removed: RegexNode) -> RegexNode:
        if tree is NOTHING or removed is NOTHING:
            return tree
        kept = difference(self._plain(self._dfa(tree), self.over), self._taken(self._dfa(removed)))
        return NOTHING if kept is None else Automaton(kept)

    # -- per type -----------------------------------------------------------------------
    def _type_tree(self, spec: Spec, name: str, chain: tuple[str, ...]) -> RegexNode:
        if name == "null":
            return lit("null")
        if name == "boolean":
            return alt(lit("true"), lit("false"))
        if name == "string":
            return self._string_tree(spec)
        if name == "number":
            integer = spec.types is not None and "number" not in spec.types
            return self._number_tree(spec, integer)
        if name == "object":
            return self._object_tree(spec, chain)
        return self._array_tree(spec, chain)

    def _string_tree(self, spec: Spec) -> RegexNode:
        if spec.json_content:
            tree = self._json_text(spec)
            if tree is not None:
                return tree
        formats = []
        for name, loc in spec.formats:
            if name in FORMATS:
                formats.append(name)
                if name in FORMAT_NOTES:
                    self.notes.append(f"{loc.pointer or '#'}/format: {name}: {FORMAT_NOTES[name]}")
            elif name in UNENFORCEABLE_FORMATS:
                self._unenforced(loc, "format", f"{name!r}: {UNENFORCEABLE_FORMATS[name]}")
            else:
                self.notes.append(f"{loc.pointer or '#'}/format: unknown format {name!r} is an annotation (not checked)")
        patterns = []
        for pattern, loc in spec.patterns:
            try:
                pattern_tree(pattern)
            except RegexError as err:
                raise SchemaError(regex_blame("pattern", pattern, err), (loc.pointer or "#") + "/pattern") from None
            patterns.append(pattern)
        max_length = min((n for n in [spec.max_length, *map(FORMAT_MAX_LENGTH.get, formats)] if n is not None),
                         default=None)
        tree = self._counted_call(spec.min_length, max_length, tuple(patterns), tuple(formats), _string_pointer(spec))
        if tree is not None:
            if not (patterns or formats) and max_length - spec.min_length < LONG_STRING:
                # inlined or expanded: it still costs its states (a pattern's callee stays a call)
                self.sizes.append((_string_pointer(spec), counted_states(max_length)))
            return tree
        try:
            tree = string_tree(spec.min_length, max_length, patterns, formats)
        except RegexError as err:
            raise SchemaError(_string_blame(spec, patterns, formats, err.reason), _string_pointer(spec)) from None
        self.sizes.append((_string_pointer(spec), _embedded_states(tree)))
        return tree

    def _json_text(self, spec: Spec) -> RegexNode | None:
        """A string whose content is a JSON text (draft 7's ``contentMediaType:
        application/json``): a call into the document's callee, or, inside a product's
        operands, the document unrolled to the operand depth and cut by polarity (see
        :mod:`.content`).  None where it cannot be enforced and ``strict`` is off."""
        loc = spec.json_content[0]
        if spec.patterns or spec.formats or spec.min_length or spec.max_length is not None:
            self._unenforced(loc, "contentMediaType", "a JSON document with other string constraints is not checked")
            return None
        if not self._shareable(NO_SLOTS):
            self.cuts += 1
            return json_text_string(Automaton(json_text_dfa(self._operand_depth, self.over)))
        if _JSON_TEXT not in self._callee_symbols:
            symbol = self._callee_symbols[_JSON_TEXT] = self._free_callee_symbol()
            if symbol is not None:
                self.callees[symbol] = json_text_callee(symbol)
        symbol = self._callee_symbols[_JSON_TEXT]
        if symbol is None:
            self._unenforced(loc, "contentMediaType", "no call symbol is left for the document's callee")
            return None
        return json_text_string(Automaton(call_marker(symbol)))

    def _number_tree(self, spec: Spec, integer: bool) -> RegexNode:
        low, high = spec.minimum, spec.maximum
        spelling = self.spelling
        if integer:
            self.spelling_sensitive += spelling == EVERY_PLAIN
            tree = integer_tree(_int_low(low), _int_high(high), spelling)
        else:
            tree = number_tree(low[0] if low else None, high[0] if high else None,
                               bool(low and low[1]), bool(high and high[1]), spelling)
        for step, loc in spec.multiples:
            if tree is NOTHING:
                break
            dfa = multiple_of_dfa(step, integer and spelling != EVERY_PLAIN)  # with zero fractions there
            if dfa is None:
                self._unenforced(loc, "multipleOf", f"a step of {step} needs more than 4096 remainders")
                continue
            both = intersect(build_byte_dfa(tree), dfa)
            tree = NOTHING if both is None else Automaton(both)
        return tree

    def _object_tree(self, spec: Spec, chain: tuple[str, ...]) -> RegexNode:
        layout = self.layout
        if spec.unevaluated_properties and not spec.evaluates_all_keys:
            # Keys no merged source lists or pattern-matches must meet unevaluatedProperties.
            patterns = tuple(p for rule in spec.key_rules for p in rule.patterns)
            for loc in spec.unevaluated_properties:
                spec = spec.without(key_rules=spec.key_rules + [KeyRule(frozenset(spec.properties), patterns, loc)])
        names_dfa = self._property_names_dfa(spec, chain)
        members: list[tuple[str, RegexNode, bool]] = []
        slots = spec.slots
        listed = member_names(spec)
        for name in listed:
            value = self.value_of(self._locs_for_key(spec, name), chain, slots.member(name))
            key_text = encoded_string(name)
            if names_dfa is _NO_NAMES or (names_dfa is not None and not names_dfa.matches(key_text.encode())):
                value = NOTHING
            required = name in spec.required
            if value is NOTHING and required:
                return NOTHING
            if value is not NOTHING:
                members.append((key_text, value, required))
        extras = self._extra_members(spec, set(listed), names_dfa, chain)
        where = {key: i for i, (key, _, _) in enumerate(members)}
        groups = presence_positions(spec, where) + dependency_positions(spec, where)
        variants = self._member_variants(spec, where, chain)
        if self.any_order and not slots and (len(members) > 1 or extras):
            call = (self._loops_by_class(spec, members, extras, groups, variants) if variants
                    else self._any_order_call(spec, members, extras, groups))
            if call is not None:
                return call
        elif extras and not variants and self._shareable(slots) and _extras_counted(spec, members):
            # Schema order counts the keys written: two additional members with one name
            # would count twice towards minProperties (a JSON object keeps one of them).
            # The member loop keeps the names written (in any order); where it cannot stand
            # (keys that cannot be counted, no call here), the count stays over the text, and
            # generate_json's parse refuses an output that repeats a key to make it up.
            call = self._any_order_call(spec, members, extras, groups)
            if call is not None:
                return call
            self._note(f"{(spec.sources[0].pointer if spec.sources else '') or '#'}/minProperties: counted over "
                       "the keys written (a repeated additional key counts twice; parsed outputs are checked)")
        if self.any_order and not slots and not variants and (len(members) > 1 or extras) \
                and len(members) <= MAX_GRAPH_ORDER_MEMBERS:
            graph = any_order_graph(members, extras, spec.min_properties, spec.max_properties, layout, groups)
        else:  # operands of products and value classes: one order
            if self.any_order and not slots and (variants or len(members) > MAX_GRAPH_ORDER_MEMBERS):
                self.notes.append(f"{spec.sources[0].pointer or '#'}: {len(members)} properties are kept in schema "
                                  "order (property_order='any' needs a member loop here, or at most "
                                  f"{MAX_GRAPH_ORDER_MEMBERS} members, and no oneOf of member constraints)")
            graph = members_graph(members, extras, spec.min_properties, spec.max_properties, layout, groups,
                                   variants)
        if graph is NOTHING:
            return NOTHING
        return seq(layout.opening("{"), graph, layout.closing("}"))

    def _any_order_call(self, spec: Spec, members: list[tuple[str, RegexNode, bool]],
                        extras: list[tuple[RegexNode, RegexNode]],
                        groups: list["Presence | Dependency"] = ()) -> RegexNode | None:
        """An object whose members come in any order as a call into a callee of its own: the
        loop ``{ member (, member)* }``, whose repeats, required keys and
        ``minProperties`` the matcher keeps (:mod:`constrain.automata.member_sets`; the
        rule goes into :attr:`member_rules`).  Callees of equal languages and rules are one.

        Member groups (``oneOf``/``anyOf``/``if`` over required names, dependencies) are
        rules over the names written too: the matcher refuses a key after which none of
        them could hold (:meth:`MemberRule.feasible`, a search over the
        :data:`MAX_GROUP_NAMES` names at most that they mention besides ``required``).

        ``maxProperties`` below the keys the object may hold is a count the matcher keeps
        too: no comma once it is reached, and only the names the rule still needs once
        they fill what is left (:meth:`MemberRule.open_to_others`).

        None where that is not exact or cannot stand: where a failure could come before
        the closing brace that no name search sees (keys :func:`string_values` cannot
        count), where no call may stand (a product's operand, ``max_any_depth``, all
        wide symbols taken).
        """
        if not self._shareable(spec.slots) or not self._wide_symbols_left():
            return None
        rule = member_rule(spec, members, extra_key_count(extras), groups)
        if rule is None:
            return None
        if not rule.feasible(frozenset()):
            return NOTHING  # no object meets the rule
        layout = self.layout
        member = alt(*(seq(alt(*keys), layout.colon(), value) for value, keys in keys_by_value(members, extras)))
        body = separated_loop(member, layout.comma(), rule.closes(frozenset()))  # else a member at least
        dfa = self._dfa(seq(layout.opening("{"), body, layout.closing("}")))
        if dfa is None or not _callable(dfa):
            return None
        key = ("members", _digest(dfa), repr(rule))
        if key in self._callee_symbols:
            return self._call_of(key)
        symbol = self._callee_symbols[key] = self._wide_symbol()
        self.callees[symbol] = dfa
        self.member_rules[symbol] = rule
        self.sizes.append(((spec.sources[0].pointer if spec.sources else "") or "#", dfa.num_states))
        return Automaton(call_marker(symbol))

    def _loops_by_class(self, spec: Spec, members: list[tuple[str, RegexNode, bool]],
                        extras: list[tuple[RegexNode, RegexNode]], groups: list["Presence | Dependency"],
                        variants: dict[int, "ValueClasses"]) -> RegexNode | None:
        """An any-order object whose member groups split members' values into classes, as
        one member loop per choice of a class, or of absence, for each such member: the
        member then required with its value in that class, or left out.  With the
        choices made every group is over names only (a branch a class rules out, or
        that requires a member left out, cannot hold), which the loop's rule keeps.
        Each object falls in exactly one loop (its values' classes and its names say
        which), so the union is exact.  ``if: {"properties": {"type": {"const":
        "static"}}}`` per variant (Github_hard o27348) is one loop per tag value and one
        for the rest; ``oneOf`` of two kinds told apart by required members with typed
        values (Github_easy o78062) a few: the choices no object can meet (two ``oneOf``
        branches both holding) make no loop.  None past :data:`MAX_CLASS_LOOPS` loops
        (:data:`MAX_CLASS_CHOICES` choices searched), or where a loop cannot stand (see
        :meth:`_any_order_call`)."""
        if self._class_splits_off:
            return None
        positions = sorted(variants)
        if any(variants[p].splits_widely() for p in positions):
            return None  # every class is built: 2**k of them for k constraints (the schema-order graph builds few)

        def absence(p: int) -> list[None]:
            return [] if members[p][2] else [None]  # a required member is never left out

        # First on names alone, over what each class may rule out: no class is built
        # where the loops would be too many.
        possible = [[(members[p][1], out) for out in variants[p].possible()] + absence(p) for p in positions]
        if math.prod(map(len, possible)) > MAX_CLASS_CHOICES:
            return None
        if self._feasible_choices(spec, members, extras, groups, positions, possible, MAX_CLASS_LOOPS) is None:
            return None
        choices = [variants[p].every_class() + absence(p) for p in positions]
        loops = self._feasible_choices(spec, members, extras, groups, positions, choices, MAX_CLASS_LOOPS)
        if loops is None:
            return None
        built = []
        for chosen, resolved in loops:
            loop = self._any_order_call(spec, chosen, extras, resolved)
            if loop is None:
                return None
            built.append(loop)
        self._class_splits += len(built) > 1
        return alt(*built)

    @staticmethod
    def _feasible_choices(spec: Spec, members: list[tuple[str, RegexNode, bool]], extras: list,
                          groups: list["Presence | Dependency"], positions: list[int], choices: list[list],
                          limit: int) -> list[tuple[list, list]] | None:
        """The (members, groups) of each choice some object can meet (see
        :func:`chosen_classes`), or None past ``limit`` of them or where a rule cannot stand."""
        found, extra_keys = [], extra_key_count(extras)
        for combination in itertools.product(*choices):
            chosen, resolved = chosen_classes(members, groups, positions, combination)
            rule = member_rule(spec, chosen, extra_keys, resolved)
            if rule is None:
                return None
            if rule.feasible(frozenset()):
                found.append((chosen, resolved))
                if len(found) > limit:
                    return None
        return found

    def _member_variants(self, spec: Spec, where: dict[str, int], chain: tuple[str, ...]) -> dict[int, "ValueClasses"]:
        """For each member the member groups' branches constrain (see :func:`is_member_wise`):
        its value classes (:class:`ValueClasses`), by position."""
        variants: dict[int, ValueClasses] = {}
        for name, kinds in constraint_kinds(spec.presence).items():
            position = where.get(encoded_string(name))
            if position is not None:
                locs = [loc for loc, _ in kinds]
                build = partial(self._value_classes, self._locs_for_key(spec, name), locs, chain, spec.slots.member(name))
                variants[position] = ValueClasses([pairs for _, pairs in kinds], build, [loc.node for loc in locs])
        return variants

    def _value_classes(self, base: list[Loc], kinds: list[Loc], chain: tuple[str, ...], slots: Slots,
                       relevant: tuple[int, ...], forced: tuple[int, ...]) -> list[tuple[RegexNode, tuple[int, ...]]]:
        """The values of ``base`` split by which of the ``relevant`` constraints they meet,
        those ``forced`` met by all: ``(language, constraints failed)`` per non-empty class.

        A class is ``base`` with the constraints it meets merged in and the others
        negated (a product only where a constraint is more than a type or a constant).
        Classes are split one constraint at a time, dropping the empty ones: ``k``
        constants for one member (``if: {"properties": {"kind": {"const": ...}}}`` per
        variant) make ``k + 1`` classes, not ``2**k``.
        """
        # A constraint the base implies splits nothing: no value of the member fails it.
        free = [k for k in relevant if k not in forced and not implied_by(base, kinds[k], self.doc.draft)]
        if not free:
            tree = self._class_tree(base, [kinds[i] for i in forced], [], chain, slots)
            return [] if tree is NOTHING else [(tree, ())]
        classes: list[tuple[tuple[int, ...], tuple[int, ...], RegexNode]] = [(forced, (), EMPTY)]  # (free: not empty)
        for k in free:
            split = []
            for met, failed, _ in classes:
                for side in ((met + (k,), failed), (met, failed + (k,))):
                    tree = self._class_tree(base, [kinds[i] for i in side[0]], [kinds[i] for i in side[1]], chain, slots)
                    if tree is not NOTHING:
                        split.append((*side, tree))
            classes = split
        return [(tree, failed) for _, failed, tree in classes]

    def _member_group(self, loc: Loc, rule: str, spec: Spec, branches: list[Loc | None] | None = None,
                      schema: Any = None) -> MemberGroup | None:
        """``loc``'s oneOf (``rule``) or conditional (``"if"``; or the given ``branches``
        and the ``schema`` they stand for) as a member group of ``spec``'s object, its
        branches' plain references followed once, where it is member-wise (None
        otherwise: see :func:`is_member_wise`)."""
        if branches is None:
            if rule != "if" and (not isinstance(loc.node, list) or len(loc.node) < 2):
                return None
            branches = group_branches(loc, rule)
        followed = []
        for branch in branches:
            keyword = _plain_reference(branch.node, self.doc.draft) if branch is not None else None
            if keyword is not None:
                branch = self.doc.resolve(branch, branch.node[keyword], keyword)
            followed.append(negated_member(branch) if branch is not None else None)
        group = MemberGroup(loc, rule, tuple(followed), schema)
        return group if is_member_wise(group, spec) else None

    def _class_tree(self, base: list[Loc], met: list[Loc], failed: list[Loc], chain: tuple[str, ...],
                    slots: Slots) -> RegexNode:
        """The values of ``base`` meeting every schema of ``met`` and none of ``failed``."""
        if not failed:
            return self.value_of(base + met, chain, slots)
        record, record_chain = self._walked(base + met, chain, slots)
        return self.spec_tree(record.without(nots=record.nots + failed), record_chain)

    def _locs_for_key(self, spec: Spec, name: str) -> list[Loc]:
        """Every schema a member named ``name`` must meet: its properties, else each rule's patterns/additional."""
        locs = list(spec.properties.get(name, ()))
        for rule in spec.key_rules:
            matched = [loc for pattern, loc in rule.patterns if search_name(pattern, name, loc)]
            locs += matched  # patternProperties apply to listed properties too
            if not matched and rule.additional is not None and name not in rule.names:
                locs.append(rule.additional)
        return locs

    def _extra_members(self, spec: Spec, listed: set[str], names_dfa: ByteDFA | None, chain) -> list[tuple[RegexNode, RegexNode]]:
        """(key language, value language) classes for members not listed in properties:
        one per set of patterns a key can match together (see :func:`key_classes`)."""
        patterns = [(pattern, loc, index) for index, rule in enumerate(spec.key_rules) for pattern, loc in rule.patterns]
        all_keys = any_string_dfa()
        base_keys = without_words(all_keys, [encoded_string(n).encode() for n in sorted(listed)]) if listed else all_keys
        if names_dfa is _NO_NAMES:
            return []
        if names_dfa is not None and base_keys is not None:
            base_keys = intersect(base_keys, names_dfa)
        if base_keys is None:
            return []
        classes = []
        pattern_dfas = [pattern_key_dfa(pattern, loc) for pattern, loc, _ in patterns]
        for keys, matched in key_classes(base_keys, pattern_dfas, [loc for _, loc, _ in patterns]):
            locs = [patterns[i][1] for i in matched]
            for index, rule in enumerate(spec.key_rules):
                if rule.additional is not None and not any(patterns[i][2] == index for i in matched):
                    locs.append(rule.additional)
            value = self.value_of(locs, chain, spec.slots.extra or NO_SLOTS)
            if value is not NOTHING:
                classes.append((Automaton(keys), value))
        return classes

    def _property_names_dfa(self, spec: Spec, chain) -> ByteDFA | None:
        if not spec.property_names:
            return None
        with self.numbers_spelled(PLAIN):  # an operand of a product (names are strings: spelling is moot)
            tree = self.value_of(spec.property_names, chain)
        strings = any_string_dfa()
        if tree is NOTHING:
            return _NO_NAMES
        names = intersect(strings, widen_any_suffix(self._plain(self._dfa(tree), self.over)))
        return names if names is not None else _NO_NAMES

    def _array_tree(self, spec: Spec, chain: tuple[str, ...]) -> RegexNode:
        rest_locs, unevaluated = spec.rest_items, []
        if spec.unevaluated_items and not spec.rest_items and not spec.evaluates_all_items:
            if spec.contains:
                unevaluated = list(spec.unevaluated_items)  # for items past the prefix that contains misses
            else:
                rest_locs = list(spec.unevaluated_items)  # items past every prefix are the unevaluated ones
        if spec.unique_items is not None and (spec.max_items is None or spec.max_items > 1):
            distinct = self._distinct_items_tree(spec, rest_locs, chain)
            if distinct is None:
                distinct = self._unique_items_call(spec, rest_locs, chain)
            if distinct is not None:
                return distinct
            self._unenforced(spec.unique_items, "uniqueItems", "no regular language keeps items distinct, unless "
                             f"they take at most {MAX_DISTINCT_VALUES} values, each in a few spellings, and there "
                             "is no contains; the matcher keeps them distinct for items that are strings, integers, "
                             "booleans or null (not other numbers, objects or arrays), with no prefixItems, where a "
                             "call may stand)")
        if spec.contains:
            if len(spec.contains) > 1:
                self._not_exact(spec.contains[1][0].pointer, "contains", "only one contains per array is supported")
            prefix, rest, contains = self._contained_items(spec, rest_locs, chain, unevaluated)
        else:
            slots = spec.slots.items or NO_SLOTS
            prefix = [self.value_of(locs, chain, slots) for locs in spec.prefix_items]
            copies = spec.max_items if spec.max_items is not None else spec.min_items
            rest, contains = self._repeated_items(rest_locs, chain, slots, copies), None
        graph = items_graph(prefix, rest, spec.min_items, spec.max_items, contains, self.layout)
        if graph is NOTHING:
            return NOTHING
        return seq(self.layout.opening("["), graph, self.layout.closing("]"))

    def _distinct_items_tree(self, spec: Spec, rest_locs: list[Loc], chain: tuple[str, ...]) -> RegexNode | None:
        """An array under ``uniqueItems`` whose items take few values (enums, booleans):
        exact, since the set of values written so far is a finite state.

        None where that does not hold: ``contains`` (its count is a second state), or
        items with more than :data:`MAX_DISTINCT_VALUES` values in all, or spelled in
        more than :data:`MAX_DISTINCT_TEXTS` ways, which no regular language keeps
        distinct.
        """
        if spec.contains:
            return None
        slots = spec.slots.items or NO_SLOTS
        trees = [self.value_of(locs, chain, slots) for locs in spec.prefix_items] + [self.value_of(rest_locs, chain, slots)]
        positions = []
        for tree in trees:
            texts = [] if tree is NOTHING else _finite_texts(self._dfa(tree), MAX_DISTINCT_TEXTS)
            if texts is None:
                return None
            by_value: dict[str, list[str]] = {}
            for text in texts:
                by_value.setdefault(text_value_key(text), []).append(text.decode())
            positions.append({key: alt(*map(lit, spellings)) for key, spellings in by_value.items()})
        if len(set().union(*positions)) > MAX_DISTINCT_VALUES:
            return None
        graph = distinct_items_graph(positions, spec.min_items, spec.max_items, self.layout)
        return seq(self.layout.opening("["), graph, self.layout.closing("]"))  # NOTHING when no array fits

    def _unique_items_call(self, spec: Spec, rest_locs: list[Loc], chain: tuple[str, ...]) -> RegexNode | None:
        """An array of distinct strings, integers, booleans or null as a call into a
        callee of its own, whose items the matcher keeps distinct
        (:mod:`constrain.automata.unique_items`; the symbol goes into
        :attr:`unique_symbols`).

        None where that is not exact: ``contains`` or ``prefixItems``, items that are
        something else (:func:`item_values`; other numbers and objects have many texts
        per value), fewer values than ``minItems``, or where no call may stand (a
        product's operand, ``max_any_depth``, no symbol left).
        """
        slots = spec.slots.items or NO_SLOTS
        if spec.contains or spec.prefix_items or not self._shareable(slots):
            return None
        key = ("unique", str(spec.min_items), str(spec.max_items)) + self._callee_key(rest_locs)
        if key in self._callee_symbols:
            return self._call_of(key)
        item = self._inline_definitions(self._dfa(self.value_of(rest_locs, chain, slots)))
        values = None if item is None else item_values(item)
        too_few = values is not None and values.count != GOES_ON and values.count < spec.min_items
        narrow = self._spare_symbols() > 0
        if values is None or too_few or (not narrow and not self._wide_symbols_left()):
            return None
        graph = items_graph([], Automaton(item), spec.min_items, spec.max_items, None, self.layout)
        array = self._dfa(seq(self.layout.opening("["), graph, self.layout.closing("]")))
        if array is None or not _callable(array):
            return None
        symbol = self._callee_symbols[key] = self._free_callee_symbol() if narrow else self._wide_symbol()
        self.callees[symbol] = array
        self.unique_symbols[symbol] = values
        self.sizes.append(((spec.unique_items.pointer or "#"), array.num_states))
        return Automaton(call_marker(symbol))

    def _inline_definitions(self, dfa: ByteDFA | None) -> ByteDFA | None:
        """``dfa`` with its calls into shared definitions' callees replaced by copies of
        them, where those make no calls themselves (a string definition many items
        reference: ``{"$ref": "#/definitions/nonEmptyString"}``); else as it is."""
        if dfa is None:
            return None
        symbols = called_symbols(dfa)
        if not symbols or not symbols <= self.callees.keys() or any(has_calls(self.callees[s]) for s in symbols):
            return dfa
        return expand_calls(dfa, {s: self.callees[s] for s in symbols})

    def _repeated_items(self, locs: list[Loc], chain: tuple[str, ...], slots: Slots, copies: int | None) -> RegexNode:
        """The value of an array's rest items: a callee when the array's count (``maxItems``,
        else ``minItems``) would copy a large automaton many times.

        ``{"maxItems": 256, "items": {<an object of 3,000 states>}}`` is exact only as
        256 copies of the item (a DFA counts by copying), and nested bounded arrays
        multiply (Github_hard o9832: over 2,000,000 states); so is ``minItems: 600``
        alone (Github_easy o12622: 600 copies of a two-member object, 0.4 s to
        build and determinise before they were calls).  As a callee the item is
        built once and each copy is one call move.  Only where calls may stand (see
        :meth:`_shareable`) and for an item that starts with a byte; on a narrow symbol
        while one is spare (:meth:`_spare_symbols`), else on a wide one (counted strings
        may hold the narrow ones: Github_medium o9906 copied an array of 2,726 states
        100 times in each of 15 branches).
        """
        tree = self.value_of(locs, chain, slots)
        if copies is None or copies < ITEMS_CALL_MIN or tree is NOTHING or not self._shareable(slots):
            return tree
        key = ("items",) + self._callee_key(locs)
        if key in self._callee_symbols:
            call = self._call_of(key)
            return tree if call is None else call
        dfa = self._dfa(tree)
        narrow = self._spare_symbols() > RESERVED_SYMBOLS
        if (dfa is None or dfa.num_states * copies < ITEMS_CALL_STATES or not _callable(dfa)
                or not (narrow or self._wide_symbols_left())):
            return tree if dfa is None else Automaton(dfa)
        symbol = self._callee_symbols[key] = self._free_callee_symbol() if narrow else self._wide_symbol()
        self.callees[symbol] = dfa
        self.sizes.append(((locs[0].pointer if locs else "") or "#", dfa.num_states))
        return Automaton(call_marker(symbol))

    def _spare_symbols(self) -> int:
        """Call symbols free above those the counted strings (long ones included, met or not) take."""
        taken = set(self._callee_symbols.values())
        return sum(symbol not in taken for symbol in COUNTED_SYMBOLS[max(len(self.counted), self._long_count):])

    def _contained_items(self, spec: Spec, rest_locs: list[Loc], chain: tuple[str, ...],
                         unevaluated: Sequence[Loc] = ()):
        """Prefix items, rest items and the ``contains`` count (automaton, low, high): items
        are split by ``contains`` (intersected, subtracted), so they are product operands,
        written with ``contains``'s member order and number spellings.

        ``unevaluated``: the record's unevaluatedItems where no items keyword covers the
        rest.  ``contains`` evaluates the items it matches, so a rest item either matches
        it or meets those: the rest is intersected with the union of the two."""
        loc, low, high = spec.contains[0]
        fixed = spec.slots.items or NO_SLOTS
        slots = shared_slots(self.doc, Spec(slots=fixed), [self._merged(Spec(slots=fixed), loc, chain)],
                             self.max_recursion)
        with self.numbers_spelled(PLAIN):
            prefix = [self._plain_tree(self.value_of(locs, chain, slots)) for locs in spec.prefix_items]
            rest = self._plain_tree(self.value_of(rest_locs, chain, slots))
        with self.numbers_spelled(EVERY_PLAIN):
            cuts_before = self.cuts
            built = flipped = self._dfa(self.value_of([loc], chain, slots))
            if self.cuts != cuts_before:  # cut while built: the misses need the other polarity's cuts
                with self._taken_away():
                    flipped = self._dfa(self.value_of([loc], chain, slots))
            hit, miss = self._plain(built, self.over), self._taken(flipped)
        if unevaluated and rest is not NOTHING:
            with self.numbers_spelled(PLAIN):
                closing = self._plain(self._dfa(self.value_of(unevaluated, chain, slots)), self.over)
            allowed = hit if closing is None else closing if hit is None else union(hit, closing)
            kept = None if allowed is None else intersect(self._dfa(rest), allowed)
            rest = NOTHING if kept is None else Automaton(kept)
        return prefix, rest, (hit, miss, low, high)

    # -- enum / const -------------------------------------------------------------------
    def _enum_tree(self, spec: Spec) -> RegexNode:
        """The values every ``enum``/``const`` of ``spec`` lists, equal as JSON Schema counts
        (``0`` is ``-0.0``), each written as any list writes it: ``allOf`` of ``enum: [0]``
        and ``const: -0.0`` is zero, spelled ``0`` and ``-0.0``.  (Matched with signed
        zeros, the two lists had nothing in common, and under ``not`` nothing was taken
        away.)"""
        return alt(*(self._literal(v, spec.slots) for v in self._enum_values(spec)))

    def _enum_values(self, spec: Spec) -> list[Any]:
        """The values every enum/const of ``spec`` lists that meet the rest of ``spec``."""
        common = set.intersection(*({json_key(v, False) for v in values} for values in spec.enums))
        candidates = [v for values in spec.enums for v in values if json_key(v, False) in common]
        return [v for v in unique_values(candidates) if self._admits(spec, v)]

    def _admits(self, spec: Spec, value: Any) -> bool:
        """Whether ``value`` meets ``spec``: its types, what is pending (:meth:`_valid`), content."""
        return (spec.types is None or bool(spec.types & json_types(value))) and self._valid(value, spec) \
            and meets_content(value, spec)

    def _valid(self, value: Any, spec: Spec) -> bool:
        """Whether ``value`` meets what ``spec`` still requires (jsonschema, formats checked).

        The schema checked is each source's own assertions (its combinators and
        references stripped: those were merged or expanded already) plus the
        combinators still pending in ``spec``, so a branch being expanded never
        judges its own enum by the other branches.
        """
        checks = _pending_checks(spec, typed=not isinstance(value, (int, float)) or isinstance(value, bool))
        if not checks:  # most enums: a list of strings under "type": "string" (no validator is made)
            return True
        import jsonschema
        from referencing.exceptions import Unresolvable  # what jsonschema raises for a $ref it cannot follow

        if self._validator is None:
            cls_ = ecma_validator_class(
                jsonschema.validators.validator_for(self.doc.root, default=jsonschema.Draft202012Validator))
            self._validator = cls_(self.doc.root, format_checker=cls_.FORMAT_CHECKER)
        try:
            return self._validator.evolve(schema={"allOf": checks}).is_valid(value)
        except RegexError as err:
            raise SchemaError(f"cannot check enum value {value!r}: pattern {err.pattern!r} cannot be compiled: "
                              f"{err.reason}", spec.sources[0].pointer or "#") from None
        except (jsonschema.exceptions.SchemaError, Unresolvable, LookupError) as err:
            raise SchemaError(f"cannot check enum value {value!r} against the rest of the schema: {err}",
                              spec.sources[0].pointer or "#") from None
        except BaseException as err:  # the validator's own failures (a Rust panic is no Exception)
            if isinstance(err, (KeyboardInterrupt, SystemExit, GeneratorExit)):
                raise
            raise SchemaError(f"cannot check enum value {value!r} against the rest of the schema: the validator "
                              f"failed ({type(err).__name__})", spec.sources[0].pointer or "#") from None

    def _literal(self, value: Any, slots: Slots = NO_SLOTS) -> RegexNode:
        """The texts of an enum/const value.

        JSON equality ignores member order, so where it is safe an object is written
        in any member order (each member once, :func:`any_order_graph`): outside
        products for objects of up to :data:`MAX_ANY_ORDER_MEMBERS` members (larger
        ones keep the value's order), and always on the side of a product that is
        taken away, which must hold every text of its values, as it holds every
        spelling of its numbers (there a larger object takes away every text of its
        members' count drawn from its members: the value's orders, and texts with a
        repeated key, which is on the safe side).  On a kept side members keep the
        value's own order, the names ``slots`` fixes first, in slot order, as the
        schema objects beside them do.
        """
        layout = self.layout
        if isinstance(value, str):
            return lit(encoded_string(value))
        taken = self.spelling == EVERY_PLAIN
        small = isinstance(value, dict) and 1 < len(value) <= MAX_ANY_ORDER_MEMBERS
        if isinstance(value, dict) and len(value) > 1 and (taken or (small and not slots and self.spelling == JSON_SPELLING)):
            self.spelling_sensitive += taken  # a kept side writes one order: it must be built apart
            members = [(encoded_string(k), self._literal(v, NO_SLOTS), True) for k, v in value.items()]
            if small:
                graph = any_order_graph(members, [], len(value), len(value), layout)
            else:  # taken away: every sequence of that many members drawn from the value's
                one = alt(*(seq(lit(key), layout.colon(), member) for key, member, _ in members))
                graph = seq(one, rep(seq(layout.comma(), one), len(value) - 1, len(value) - 1))
            return seq(layout.opening("{"), graph, layout.closing("}"))
        if isinstance(value, dict):
            slotted = set(slots.names)
            keys = [k for k in slots.names if k in value] + [k for k in value if k not in slotted]
            members = [seq(lit(encoded_string(k)), layout.colon(), self._literal(value[k], slots.member(k))) for k in keys]
            return seq(layout.opening("{"), *with_separators(members, layout.comma()), layout.closing("}"))
        if isinstance(value, list):
            items = [self._literal(v, slots.items or NO_SLOTS) for v in value]
            return seq(layout.opening("["), *with_separators(items, layout.comma()), layout.closing("]"))
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            self.spelling_sensitive += self.spelling == EVERY_PLAIN
            return number_literal(value, self.spelling)
        return lit(json.dumps(value))

    # -- helpers ------------------------------------------------------------------------
    def _check_unsupported(self, spec: Spec) -> None:
        for loc, keyword, why in spec.unsupported:
            self._unenforced(loc, keyword, why)

    def _note_cut(self, chain: tuple[str, ...]) -> None:
        """Say where recursion is unrolled outside the operands of products (where
        ``max_recursion`` documents it): a recursive reference in an anyOf/oneOf branch
        merged with sibling keywords (``{"minProperties": 1, "anyOf": [{"$ref": ...}]}``)
        has no callee of its own, and values nested deeper are refused."""
        where = readable_key(chain[-1]) if chain else "#"
        levels = f"{self.max_recursion} level{'' if self.max_recursion == 1 else 's'}"
        self._note(f"{where}: recursion merged with sibling keywords is unrolled {levels} deep; deeper values are refused")

    def _unenforced(self, loc: Loc, keyword: str, why: str) -> None:
        self._not_exact((loc.pointer or "#") + "/" + keyword, keyword, why)

    def _not_exact(self, where: str, keyword: str, why: str) -> None:
        """Raise in strict mode; otherwise note that ``keyword`` at ``where`` is over-approximated."""
        if self.strict:
            raise SchemaError(f"{keyword} cannot be enforced exactly ({why}); pass strict=False to relax it", where)
        self._note(f"{where}: {keyword} not enforced ({why})")

    def _note(self, note: str) -> None:
        """Add ``note`` to the compile's notes, once (the same place may be built again)."""
        if note not in self.notes:
            self.notes.append(note)

    def _dfa(self, tree: RegexNode) -> ByteDFA | None:
        if tree is NOTHING:
            return None
        if isinstance(tree, Automaton):
            return tree.dfa
        return build_byte_dfa(tree)

    def _as_automaton(self, tree: RegexNode) -> RegexNode:
        dfa = self._dfa(tree)
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


# propertyNames that no string satisfies: the object can have no member at all.
_NO_NAMES = ByteDFA(np.full((1, 256), -1, dtype=np.int32), np.zeros(1, dtype=bool), 0)

_STRIPPED = frozenset(("enum", "const", "allOf", "anyOf", "oneOf", "not", "if", "then", "else", "$ref",
                       "dependentSchemas", "dependentRequired", "dependencies", "$defs", "definitions"))


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


def _callable(dfa: ByteDFA) -> bool:
    """Whether ``dfa`` can be a callee's body: it starts with a byte (its start neither
    accepts nor calls), so a call always reads something before it can return."""
    return not dfa.accepting[dfa.start] and not (dfa.trans[dfa.start, [*CALL_SYMBOLS, WIDE_CALL]] >= 0).any()


def _extras_counted(spec: Spec, members: list[tuple[str, RegexNode, bool]]) -> bool:
    """Whether ``minProperties`` may need two additional members or more: then, written in
    schema order, a repeated additional name could make up the count."""
    return spec.min_properties >= sum(required for _, _, required in members) + 2


def _constrains_nothing(spec: Spec) -> bool:
    """Whether ``spec`` holds no constraint (its sources said nothing but combinators
    expanded already, or annotations)."""
    return spec.without(sources=[], merged_refs=frozenset(), listed_before={}, own_after={}, slots=NO_SLOTS) == _EMPTY_SPEC


_EMPTY_SPEC = Spec()


def _plain_reference(node: Any, draft: int) -> str | None:
    """The reference keyword of a schema that says nothing else (before 2019-09 a
    ``$ref`` overrides its siblings), else None."""
    keyword = ref_keyword(node) if isinstance(node, dict) else None
    if keyword is None or (draft > 7 and set(node) - ANNOTATION_KEYWORDS - {keyword}):
        return None
    return keyword


def largest_parts(sizes: list[tuple[str, int]], count: int = 3) -> str:
    """The sub-schemas (strings, unrolled recursion) with the largest automata: what made the whole too large."""
    largest: dict[str, int] = {}
    for pointer, states in sizes:
        largest[pointer] = max(states, largest.get(pointer, 0))
    big = sorted((item for item in largest.items() if item[1] >= 1000), key=lambda item: -item[1])[:count]
    if not big:
        return ""
    return "; largest parts: " + ", ".join(f"{pointer} ({states:,} states)" for pointer, states in big)


def _string_pointer(spec: Spec) -> str:
    """The pointer of the schema that sets the string's length or pattern (a $ref target, maybe)."""
    for loc in spec.sources:
        if isinstance(loc.node, dict) and any(k in loc.node for k in ("maxLength", "minLength", "pattern", "format")):
            return loc.pointer or "#"
    return (spec.sources[0].pointer if spec.sources else "") or "#"


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


def _string_blame(spec: Spec, patterns: list[str], formats: list[str], reason: str) -> str:
    """Why a string's automaton could not be built: its patterns, formats and length bounds, and the reason
    (too many states, or no string at all)."""
    parts = [f"pattern {p!r}" for p in patterns] + [f"format {f!r}" for f in formats]
    bounds = ([f"minLength {spec.min_length}"] if spec.min_length else []) + \
             ([f"maxLength {spec.max_length}"] if spec.max_length is not None else [])
    what = " with ".join(filter(None, [" and ".join(parts), " and ".join(bounds)]))
    return f"{what or 'the string'} cannot be built: {reason}"


def _embedded_states(tree: RegexNode) -> int:
    """States of the automata embedded in a string tree (the quotes around one automaton)."""
    items = tree.items if isinstance(tree, Concat) else (tree,)
    return sum(item.dfa.num_states for item in items if isinstance(item, Automaton))


def _pending_checks(spec: Spec, typed: bool = False) -> list[Any]:
    """Schemas an enum candidate must still pass: sources' own assertions and pending combinators.

    ``typed``: the candidate's type was checked against ``spec.types``, which every
    source's ``type`` narrowed, so ``type`` is left out (a number keeps it: draft 4
    counts ``1.0`` as no integer, which only the validator knows)."""
    checks: list[Any] = []
    stripped = _STRIPPED | {"type"} if typed else _STRIPPED
    for loc in spec.sources:
        own = {k: v for k, v in loc.node.items() if k not in stripped} if isinstance(loc.node, dict) else loc.node
        if own and any(k not in ANNOTATION_KEYWORDS for k in own):
            checks.append(own)
    checks += [{"anyOf": group.node} for group in spec.any_of]
    checks += [{"oneOf": group.node} for group in spec.one_of]
    checks += [group.check for group in spec.presence]
    checks += [{"not": loc.node} for loc in spec.nots]
    checks += [{k: loc.node[k] for k in ("if", "then", "else") if k in loc.node} for loc in spec.conditionals]
    checks += [{keyword: {key: loc.node[keyword][key]}} for loc, key, keyword in spec.dependencies]
    return checks


def _digest(dfa: ByteDFA) -> str:
    """A digest of ``dfa``'s table: callees of equal languages (and rules) are built once.

    Hashes the table's byte runs (:meth:`ByteDFA.run_table`, memoised on the DFA), about
    a tenth of its 256 columns: the runs and the accepting states determine the table."""
    return hashlib.blake2b(dfa.run_table().tobytes() + dfa.accepting.tobytes() + str(dfa.start).encode(),
                           digest_size=16).hexdigest()


def _finite_texts(dfa: ByteDFA, limit: int) -> list[bytes] | None:
    """Every text ``dfa`` accepts, or None when there are more than ``limit`` of them
    (infinitely many included) or it calls a callee.

    Walks the paths from the start.  Every state of a built DFA is live, so each path
    waiting on the stack ends in a text of its own: the walk stops as soon as the
    texts found and the paths waiting pass ``limit``.  A path that meets its own
    state again is a loop (a DFA with a dead state only stops early: None).
    """
    if has_calls(dfa) or has_any_suffix(dfa):
        return None
    moves = {}
    texts: list[bytes] = []
    stack = [(dfa.start, b"", (dfa.start,))]
    while stack:
        state, text, path = stack.pop()
        if dfa.accepting[state]:
            texts.append(text)
        if state not in moves:
            row = dfa.trans[state]
            moves[state] = [(byte, int(row[byte])) for byte in np.flatnonzero(row >= 0).tolist()]
        for byte, target in moves[state]:
            if target in path:
                return None
            stack.append((target, text + bytes((byte,)), path + (target,)))
        if len(texts) + len(stack) > limit:  # each path on the stack ends in a text of its own
            return None
    return sorted(texts)


# Scalar alternatives up to this many automaton states are merged into one minimal DFA.
MAX_MERGED_SCALAR_STATES = 4096


def _merged_scalars(tree: RegexNode) -> RegexNode:
    """An ``anyOf`` of scalar languages (no object or array, no call) as one minimal DFA.

    Alternatives that overlap (a string with a pattern or format beside a free string,
    ``date-time`` or ``date``) would otherwise determinise to pairs of states that
    only minimisation merges back: inside such a string every state is a new one, so
    each first visit walks the whole vocabulary instead of meeting a state that loops
    (a mask in ~2 ms instead of ~0.3 ms for Llama-3).  Objects and arrays are left
    to the final automaton: merging them at every level would rebuild them each time.
    """
    if not isinstance(tree, Alt) or not _is_scalar(tree):
        return tree
    try:
        dfa = build_byte_dfa(tree)
    except RegexError:  # no value (contradicting constraints) or too large: left to the whole's build
        return tree
    return Automaton(dfa) if dfa.num_states <= MAX_MERGED_SCALAR_STATES else tree


def _is_scalar(tree: RegexNode) -> bool:
    """Whether ``tree`` has no member graph (object, array) and no call (free-form value)."""
    if isinstance(tree, Graph):
        return False
    if isinstance(tree, Automaton):
        return not has_calls(tree.dfa) and tree.dfa.num_states <= MAX_MERGED_SCALAR_STATES
    if isinstance(tree, (Alt, Concat)):
        return all(_is_scalar(item) for item in tree.items)
    if isinstance(tree, Repeat):
        return _is_scalar(tree.item)
    return True


def _exactly_one(kept: list[ByteDFA | None], removed: list[ByteDFA | None]) -> RegexNode:
    """Texts in exactly one of the languages: each branch's ``kept`` language minus the
    union of the others' ``removed`` ones (prefix/suffix unions).

    A branch is dropped only when both of its languages are empty: the two are built
    with opposite cuts, so one may be empty without the other (a branch that is only a
    recursion cut keeps the mark that over-approximates it, and takes nothing away).
    """
    live = [(k, r) for k, r in zip(kept, removed) if k is not None or r is not None]
    out = []
    before: list[ByteDFA | None] = [None]
    for _, dfa in live[:-1]:
        before.append(_union_opt(before[-1], dfa))
    after: ByteDFA | None = None
    for index in range(len(live) - 1, -1, -1):
        others = _union_opt(before[index], after)
        mine, dfa = live[index]
        only = mine if others is None or mine is None else difference(mine, others)
        if only is not None:
            out.append(Automaton(only))
        after = _union_opt(after, dfa)
    return alt(*reversed(out))


def _evaluated(spec: Spec, index: int, rest: Spec | None = None) -> frozenset:
    """What ``spec`` evaluates for unevaluated*: member names, name patterns, all names,
    item places, all items.  Applicators still pending beyond ``rest``'s (a nested anyOf,
    an if, a dependent schema: what they evaluate depends on the value) count as a mark of
    branch ``index`` of its own, so a set is never dropped for what they might add."""
    marks = {("name", name) for name in spec.properties}
    marks.update(("pattern", pattern) for rule in spec.key_rules for pattern, _ in rule.patterns)
    marks.update(("item", k) for k in range(len(spec.prefix_items)))
    if spec.evaluates_all_keys:
        marks.add(("all names",))
    if spec.rest_items or spec.evaluates_all_items:
        marks.add(("all items",))
    if rest is not None and any(len(getattr(spec, name)) > len(getattr(rest, name)) for name in VARYING_APPLICATORS):
        marks.add(("pending", index))
    return frozenset(marks)


#: unevaluated* beside an anyOf: at most this many sets of two or more branches are built.
MAX_EVALUATING_SETS = 32
#: At most this many products for subschemas with unevaluated* of their own per schema: in
#: nested combinators each is built again in every operand (a random schema of oneOf, if
#: and anyOf three deep took 286 of them, and more than a minute, before this cap).
MAX_OPERAND_PRODUCTS = 32


def _growing_sets(marks: Sequence[frozenset], limit: int) -> list[tuple[int, ...]] | None:
    """The sets of two or more branches (by index) in which each branch has a mark no other
    one has, or None when there are more than ``limit``.  A set's sets are growing too, so
    the search extends growing sets only."""
    found: list[tuple[int, ...]] = []
    frontier = [((i,), marks[i]) for i in range(len(marks)) if marks[i]]
    while frontier:
        grown = []
        for indices, covered in frontier:
            for j in range(indices[-1] + 1, len(marks)):
                if marks[j] <= covered:
                    continue
                together = indices + (j,)
                if all(marks[i] - frozenset().union(*(marks[k] for k in together if k != i)) for i in together):
                    grown.append((together, covered | marks[j]))
        found.extend(indices for indices, _ in grown)
        if len(found) > limit:
            return None
        frontier = grown
    return found


def _without_unevaluated(spec: Spec) -> Spec:
    """The spec as a *condition* (if, not, other oneOf branches): unevaluated* belongs to the parent."""
    return spec.without(unevaluated_properties=[], unevaluated_items=[])


def _union_opt(a: ByteDFA | None, b: ByteDFA | None) -> ByteDFA | None:
    if a is None or b is None:
        return a or b
    return union(a, b)


def _refuses_all_of(spec: Spec, names: Collection[str]) -> bool:
    """Whether a pending ``not`` of ``spec`` refuses every object that holds all of
    ``names``: ``"not": {"required": R}``, or ``"not": {"anyOf": [{"required": R}, ...]}``
    (the "exactly one of these members" idiom), with some ``R`` among ``names``."""
    for loc in spec.nots:
        node = loc.node
        branches = node.get("anyOf") if isinstance(node, dict) and _constraining(node) == {"anyOf"} else [node]
        for branch in branches if isinstance(branches, list) else ():
            required = branch.get("required") if isinstance(branch, dict) and _constraining(branch) == {"required"} else None
            if isinstance(required, list) and all(isinstance(n, str) and n in names for n in required):
                return True
    return False


def _constraining(node: dict) -> set[str]:
    """The keywords of a schema object other than annotations."""
    return node.keys() - ANNOTATION_KEYWORDS


#: For each type, the Spec fields of its lower and upper bound: counts are inclusive
#: ints, number bounds ``(value, exclusive)`` pairs.
_BOUNDS = {"string": ("min_length", "max_length"), "array": ("min_items", "max_items"),
           "object": ("min_properties", "max_properties"), "number": ("minimum", "maximum"),
           "integer": ("minimum", "maximum")}


def _bounds_apart(a: Spec, b: Spec, common: frozenset[str]) -> bool:
    """Whether, for every type in ``common`` (the types both records allow), one record's
    range (lengths, item or member counts, numbers) ends before the other's begins."""
    def apart(low_field: str, high_field: str) -> bool:
        return any(_below(getattr(one, high_field), getattr(other, low_field)) for one, other in ((a, b), (b, a)))
    return bool(common) and common <= _BOUNDS.keys() and all(apart(*_BOUNDS[name]) for name in common)


def _below(high: Any, low: Any) -> bool:
    """Whether every value under the upper bound ``high`` is below every value over the
    lower bound ``low`` (ints, or ``(value, exclusive)`` pairs; None: unbounded)."""
    if high is None or low is None:
        return False
    if not isinstance(high, tuple):
        return high < low
    return high[0] < low[0] or (high[0] == low[0] and (high[1] or low[1]))


def _int_low(bound) -> int | None:
    if bound is None:
        return None
    value, exclusive = bound
    low = math.ceil(value)
    return low + 1 if exclusive and low == value else low


def _int_high(bound) -> int | None:
    if bound is None:
        return None
    value, exclusive = bound
    high = math.floor(value)
    return high - 1 if exclusive and high == value else high


