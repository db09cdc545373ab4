"""Arrays: prefix and rest items, counts, contains, distinct items.

Part of :class:`~.emit.SchemaEmitter` (see :mod:`.emit`), which holds the state these
methods read and write; a module per concern keeps each part readable on its own.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from ...automata.byte_dfa import ByteDFA
from ...automata.dfa_ops import has_any_suffix, intersect, union
from ...automata.json_strings import GOES_ON
from ...automata.pushdown import COUNTED_SYMBOLS, call_marker, called_symbols, expand_calls, has_calls
from ...automata.unique_items import item_values
from ..regex import Automaton, RegexNode
from .callees import RESERVED_SYMBOLS, callable_body
from .document import Loc
from .member_graphs import distinct_items_graph, items_graph
from .numbers import EVERY_PLAIN, PLAIN
from .slots import shared_slots
from .spec import NO_SLOTS, Slots, Spec
from .trees import NOTHING, alt, lit, seq
from .values import text_value_key


#: Array items are a callee from this many copies on (maxItems, else minItems), when they would pass ITEMS_CALL_STATES.
ITEMS_CALL_MIN = 16
ITEMS_CALL_STATES = 20_000

#: uniqueItems is exact over items of at most this many distinct values (the set written is the state: 2**k).
MAX_DISTINCT_VALUES = 8

#: ... spelled in at most this many texts in all (a value may have several spellings).
MAX_DISTINCT_TEXTS = 64


class ArrayEmission:
    """An array's language: prefix and rest items, counted copies or an item callee,
    ``contains`` counts, and distinct items (small sets written, or kept by the matcher)."""

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
            separator = None
        else:
            slots = spec.slots.items or NO_SLOTS
            prefix = [self.value_of(locs, chain, slots) for locs in spec.prefix_items]
            copies = spec.max_items if spec.max_items is not None else spec.min_items
            rest, contains = self._repeated_items(rest_locs, chain, slots, copies), None
            separator = self._items_separator(slots, max(len(prefix), copies or 0))
        graph = items_graph(prefix, rest, spec.min_items, spec.max_items, contains, self.layout, separator)
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
        if array is None or not callable_body(array):
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
        if (dfa is None or dfa.num_states * copies < ITEMS_CALL_STATES or not callable_body(dfa)
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
