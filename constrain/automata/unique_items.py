"""``uniqueItems`` over arrays of strings, integers, booleans and null, kept in the
matcher's state.

No regular (or context-free) language keeps an unbounded list of strings distinct, so
such an array is a callee of its own (:class:`~.pushdown.PushdownDFA` keeps which
block each configuration is in) and the set of items written lives next to the
configurations, as a counted string's count does.  What makes that exact and cheap:

* *The set is textual.*  Whichever configuration reads it, "the strings written
  directly in the innermost open array" is a function of the text alone (JSON nests
  one way, and the language spells each string one way), so one tracker serves
  every configuration of an ambiguous state; only the configurations inside a unique
  array's block are bound by it.  Other scalars are kept the same way where the items
  spell each value one way (:func:`item_values`): integers as JSON writes them (no
  ``-0``, ``1.0`` or ``1e0``: the language of ``integer`` has none), ``true``,
  ``false`` and ``null``.  A scalar ends at the first byte that cannot go on in one
  (a comma, a bracket, whitespace), so that byte is where a repeat fails, and
  inside one the look-ahead (:class:`ScalarEnds`) follows the table's moves as it
  does inside a string.  Numbers in general are not kept: ``1``, ``1.0`` and ``1e0``
  are one value in infinitely many spellings.
* *Few bytes can fail.*  A configuration dies on the quote that closes a string
  already written; on a comma once every value the items can take is written; and
  inside a string, once every way to finish it gives a string already written.  The
  last needs a look (:meth:`UniqueItemsAutomaton._can_finish`) only where the
  string's rest is finite (``pattern: "^\\d+x$"`` after ``1x``, an enum): strings that
  go on from every point inside (:func:`string_values` says -1) never need it.
* *Masks are the pushdown automaton's rows* (memoised by configuration, as before)
  less the tokens whose simulation kills every configuration, and only tokens that
  could kill are simulated: those whose bytes close or begin a string written
  before, looked up by the written strings (:class:`~.json_strings.QuoteIndex`;
  :mod:`.json_strings` holds what this and :mod:`.member_sets` know of JSON strings).
"""

from __future__ import annotations

from collections import Counter
from functools import lru_cache
from typing import Mapping, NamedTuple

import numpy as np

from .byte_dfa import ByteDFA, regex_to_dfa
from .dfa_ops import dfa_from_table, difference
from .memo import BoundedMemo
from .json_strings import (GOES_ON, MANY_VALUES, StringEnds, acyclic_order, allowed_tokens, begins_some, beginnings,
                           in_order, plain_tokens, quote_index, short_prefixes, string_values, token_ids,
                           written_suspects)
from .pushdown import ByteReader, PushdownDFA, ReaderTokenPDA, without_bits

__all__ = ["string_values", "item_values", "ItemValues", "GOES_ON", "MANY_VALUES", "ItemTrack", "NO_ITEMS",
           "tracked_items", "tracked_scalars", "ItemSuspects", "ScalarIndex", "scalar_index", "ScalarEnds",
           "UniqueItemsAutomaton", "UniqueItemsTokenPDA"]

_QUOTE, _BACKSLASH, _COMMA = ord('"'), ord("\\"), ord(",")
_OPEN_ARRAY, _OTHER_BRACKETS = ord("["), frozenset(b"{]}")
#: The bytes a JSON number or literal is made of: outside a string, any other byte ends one.
SCALAR_BYTES = frozenset(b"0123456789+-.eE") | frozenset(b"truefalsn")
_SCALAR_TABLE_BYTES = bytes(sorted(SCALAR_BYTES))
#: The bytes that may follow a scalar in an array: a comma, its closing bracket, whitespace
#: (a closing brace too, for the index's sake: an object's member ends there).
SCALAR_ENDS = frozenset(b",]} \t\n\r")
#: Scalars that JSON spells one way each: the items :func:`item_values` lets the matcher keep distinct.
CANONICAL_SCALARS = r"-?[1-9][0-9]*|0|true|false|null"


class ItemValues(NamedTuple):
    """What the matcher needs of a unique array's items: how many values they take
    (:func:`string_values`'s count, :data:`GOES_ON` or :data:`MANY_VALUES`), and whether
    some are scalars other than strings (integers, booleans, null)."""

    count: int
    scalars: bool = False


def item_values(item: ByteDFA) -> ItemValues | None:
    """The :class:`ItemValues` of an item's DFA, or None where the matcher cannot keep its
    values distinct: it reads containers, calls, or numbers with several spellings of
    one value (``1.0``, ``1e0``), or strings the way :func:`string_values` refuses.

    The strings (texts that begin with a quote) and the other scalars are split at the
    first byte and counted apart: the two share no value.
    """
    if item.accepting[item.start]:
        return None
    first = set(np.flatnonzero(item.trans[item.start] >= 0).tolist())
    if first == {_QUOTE}:
        count = string_values(item)
        return None if count is None else ItemValues(count)
    scalars = _first_bytes(item, first - {_QUOTE})
    if scalars is None or difference(scalars, _canonical_scalars()) is not None:
        return None
    count = _count_texts(scalars)
    if _QUOTE in first:
        strings = _first_bytes(item, {_QUOTE})
        more = None if strings is None else string_values(strings)
        if more is None:
            return None
        count = MANY_VALUES if more == GOES_ON else min(MANY_VALUES, count + more)
    return ItemValues(count, True)


def _first_bytes(item: ByteDFA, first: set[int]) -> ByteDFA | None:
    """The texts of ``item`` that begin with one of the bytes ``first``."""
    trans = item.trans.copy()
    keep = np.zeros(trans.shape[1], dtype=bool)
    keep[list(first)] = True
    trans[item.start, ~keep] = -1
    return dfa_from_table(trans, item.accepting, item.start)


@lru_cache(maxsize=1)
def _canonical_scalars() -> ByteDFA:
    return regex_to_dfa(CANONICAL_SCALARS)


def _count_texts(dfa: ByteDFA) -> int:
    """How many texts ``dfa`` (trimmed: every state live) accepts, capped at
    :data:`MANY_VALUES` (and that where it loops)."""
    trans, accepting = dfa.trans, dfa.accepting
    graph = _graph(dfa.start, lambda state: trans[state][trans[state] >= 0].tolist())  # a byte each: a text each
    order = acyclic_order(graph)
    if order is None:
        return MANY_VALUES
    counts: dict[int, int] = {}
    for state in reversed(order):  # successors first
        counts[state] = min(MANY_VALUES, int(accepting[state]) + sum(counts[n] * k for n, k in graph[state].items()))
    return counts[dfa.start]


def _graph(start: int, successors) -> dict[int, Counter]:
    """The states reachable from ``start``, each with how many moves lead to each of its
    ``successors`` (the form :func:`~.json_strings.acyclic_order` takes)."""
    graph: dict[int, Counter] = {}
    todo = [start]
    while todo:
        state = todo.pop()
        if state not in graph:
            graph[state] = Counter(successors(state))
            todo.extend(graph[state])
    return graph


class ItemTrack(NamedTuple):
    """What the text says about strings in arrays: the strings written directly in the
    innermost open container when it is an array (None otherwise, once it holds
    anything but strings, or where no configuration is in a unique array: none can
    be there later, so which container encloses it need not be kept;
    :meth:`UniqueItemsAutomaton.recorded`), the string being read (None outside one;
    ``b""`` while ``written`` is None, where only that one is open matters) and
    whether its last byte was an escaping backslash.  Strings are kept as written,
    without their quotes: the language spells each string one way
    (``json.dumps(ensure_ascii=False)``), so equal texts are equal strings.  Where some unique array's items are other scalars
    too (:attr:`UniqueItemsAutomaton.scalars`), ``scalars`` holds those the array wrote,
    as written, and ``scalar`` the one being read (None outside one)."""

    written: frozenset[bytes] | None = None
    string: bytes | None = None
    escaped: bool = False
    scalars: frozenset[bytes] = frozenset()
    scalar: bytes | None = None

    @property
    def values_written(self) -> int:
        """How many items the innermost array holds (strings and other scalars)."""
        return len(self.written or ()) + len(self.scalars)


NO_ITEMS = ItemTrack()


class UniqueItemsAutomaton(ByteReader):
    """A :class:`PushdownDFA` whose callees ``values`` names are arrays of distinct strings.

    ``values[symbol]`` is :func:`string_values` of that array's items.  A state is
    ``(configurations, track)``: the pushdown automaton's state and the
    :class:`ItemTrack` of the text.  The configurations whose current state is in one of
    those callees are dropped where their array would repeat an item or could only
    go on by repeating one (see the module's docstring); the others read on.
    """

    def __init__(self, pda: PushdownDFA, values: Mapping[int, ItemValues]) -> None:
        self.pda = pda
        block_values = np.zeros(pda.stride, dtype=np.int64)  # 0: not in a unique array
        for symbol, items in values.items():
            lo, hi = pda.blocks[symbol]
            block_values[lo:hi] = items.count
        self._values = block_values.tolist()
        counts = [items.count for items in values.values()]
        self._bounded = any(count != GOES_ON for count in counts)
        self.fewest_values = min((c for c in counts if c != GOES_ON), default=MANY_VALUES)
        self.ends = StringEnds(pda.trans)
        #: Whether some array's items are scalars other than strings (the track keeps them).
        self.scalars = any(items.scalars for items in values.values())
        self.scalar_ends = ScalarEnds(self.ends) if self.scalars else None
        self.track = tracked_scalars if self.scalars else tracked_items

    @property
    def start(self) -> tuple:
        return (self.pda.start, NO_ITEMS)

    @property
    def bounded(self) -> bool:
        """Whether some array's items have a finite rest somewhere (look-aheads may kill)."""
        return self._bounded

    def step(self, state: tuple, byte: int) -> tuple | None:
        """The state after one byte, or None when the text left the language."""
        configs, track = state
        after, repeated = self.track(track, byte)
        moved = self.pda.move(self.before(self.pda.closure(configs), after, byte, repeated), byte)
        moved = self.after(moved, after)
        return (moved, self.recorded(moved, after)) if moved else None

    def before(self, closed: list, after: "ItemTrack", byte: int, repeated: bool) -> list:
        """The closed configurations that may read ``byte`` (``after``: the record after it;
        ``repeated``: it ends a string or scalar the innermost array holds already)."""
        if repeated:
            return self._without(closed, lambda count: True)
        if byte == _COMMA and after.string is None and after.written is not None and self._bounded:
            written = after.values_written  # another item must come: one not written yet
            return self._without(closed, lambda count: count != GOES_ON and count <= written)
        return closed

    def after(self, moved: tuple, track: "ItemTrack") -> tuple:
        """The configurations ``moved`` that can still finish the string or scalar they are
        in with one the array has not written (``track``: the record after the byte)."""
        if moved and track.string is not None and track.written and self._bounded:
            return tuple(c for c in moved if self._can_finish(c[-1], track))
        if moved and track.scalar is not None and track.scalars:
            return tuple(c for c in moved if self._can_finish_scalar(c[-1], track))
        return moved

    def recorded(self, moved: tuple, track: ItemTrack) -> ItemTrack:
        """``track``, or no record of the innermost array where none of the configurations
        ``moved`` is in a unique array (in its block, or in a callee it called).

        A unique array's block is entered only on its opening bracket, where the record
        starts afresh, so nothing written in other arrays is needed later.  Kept, the
        values of a long plain array made every mask a new state with their look-ups
        (1.7 ms a token, against 3 µs, for numbers beside an array of distinct integers).
        """
        if track.written is None or not moved:
            return track
        values, stride = self._values, self.pda.stride
        if any(values[frame % stride] for config in moved for frame in config):
            return track
        return ItemTrack(None, None if track.string is None else b"", track.escaped)

    def _without(self, closed: list, dies) -> list:
        """The closed configurations ``closed`` less those in a unique array for whose value
        count ``dies`` (a closure must not bring them back: see :meth:`PushdownDFA.move`)."""
        values, stride = self._values, self.pda.stride
        kept = []
        for config in closed:
            count = values[config[-1] % stride]
            if not (count and dies(count)):
                kept.append(config)
        return tuple(kept)

    def _can_finish(self, state: int, track: ItemTrack) -> bool:
        """Whether a configuration at ``state`` (inside a string, written ``track.string``
        so far) can finish it with a string not written in the array yet."""
        count = self._values[state % self.pda.stride]
        if not count or count == GOES_ON:
            return True
        return self.ends.fresh(state % self.pda.stride, track.string, track.escaped, track.written)

    def _can_finish_scalar(self, state: int, track: ItemTrack) -> bool:
        """Whether a configuration at ``state`` (inside a scalar, written ``track.scalar``
        so far) can end it as one not written in the array yet."""
        if not self._values[state % self.pda.stride]:
            return True
        return self.scalar_ends.fresh(state % self.pda.stride, track.scalar, track.scalars)

    def is_accepting(self, state: tuple) -> bool:
        return self.pda.is_accepting(state[0])


class ScalarEnds:
    """How the scalars (numbers, literals) open at states of one table can end: the
    look-ahead :class:`StringEnds` is for strings, with "a byte no scalar holds" for the
    closing quote.  Only spellings that are one per value reach it (:func:`item_values`),
    so texts compare as values."""

    def __init__(self, ends: StringEnds) -> None:
        self._ends = ends  # its memoised rows
        self._loops: dict[int, bool] = {}
        self._fresh = BoundedMemo(10_000)  # (state, text, written) -> bool

    def fresh(self, state: int, text: bytes, written: frozenset[bytes]) -> bool:
        """Some way on from ``state`` (``text`` read so far) ends the scalar as one not in
        ``written``.  Only paths along written texts are followed: off them, any way to
        end is fresh, and one exists since every state is live."""
        key = (state, text, written)
        found = self._fresh.get(key)
        if found is None:
            found = self._fresh.remember(key, self._search_fresh(state, text, written))
        return found

    def _search_fresh(self, state: int, text: bytes, written: frozenset[bytes]) -> bool:
        ordered = in_order(written)
        todo = [(state, text)]
        while todo:
            state, text = todo.pop()
            if not begins_some(ordered, text) or self.goes_on(state):
                return True
            for byte, target in self._ends.moves_of(state):
                if byte in SCALAR_BYTES:
                    todo.append((target, text + bytes((byte,))))
                elif text not in written:
                    return True
        return False

    def goes_on(self, state: int) -> bool:
        """Whether from ``state`` some path of scalar bytes loops: then infinitely many
        texts, so values, are ahead, and a finite set cannot hold them all."""
        found = self._loops.get(state)
        if found is None:
            found = self._loops[state] = self._search_loops(state)
        return found

    def _search_loops(self, start: int) -> bool:
        moves_of = self._ends.moves_of
        graph = _graph(start, lambda state: [target for byte, target in moves_of(state) if byte in SCALAR_BYTES])
        return acyclic_order(graph) is None


def tracked_items(track: ItemTrack, byte: int) -> tuple[ItemTrack, bool]:
    """The track after ``byte`` and whether that byte closed a string the innermost array
    already holds.

    An open string grows only where it is written directly in an array, whose items are
    compared; elsewhere only that a string is open matters, so it stays ``b""`` and the
    track repeats (the same object while nothing changes): a long text in a member
    otherwise made every mask inside it a new state, simulated afresh (150 µs a token
    against 2).  Tracks are built whole, not by ``_replace``: suspect tokens are
    simulated byte by byte, and ``_replace`` costs three times a tuple's construction."""
    written, string, escaped, scalars, scalar = track
    if string is not None:
        if escaped or byte != _QUOTE:
            escaping = not escaped and byte == _BACKSLASH
            if written is None:
                return (track if escaping == escaped else ItemTrack(None, string, escaping, scalars, scalar)), False
            return ItemTrack(written, string + bytes((byte,)), escaping, scalars, scalar), False
        if written is None:
            return ItemTrack(None, None, False, scalars, scalar), False
        return ItemTrack(written | {string}, None, False, scalars, scalar), string in written
    if byte == _QUOTE:
        return ItemTrack(written, b"", escaped, scalars, scalar), False
    if byte == _OPEN_ARRAY:
        return ItemTrack(frozenset()), False
    if byte in _OTHER_BRACKETS:  # inside an object, or back in a container that held one
        return NO_ITEMS, False
    return track, False


def tracked_scalars(track: ItemTrack, byte: int) -> tuple[ItemTrack, bool]:
    """:func:`tracked_items`, keeping the other scalars of arrays too: a byte no scalar
    holds ends the one being read (a repeat when the array holds it already), then
    reads on as :func:`tracked_items` does."""
    if track.string is None and track.written is not None:
        if byte in SCALAR_BYTES:
            return track._replace(scalar=(track.scalar or b"") + bytes((byte,))), False
        if track.scalar is not None:
            value = track.scalar
            after, repeated = tracked_items(track._replace(scalar=None, scalars=track.scalars | {value}), byte)
            return after, repeated or value in track.scalars
    return tracked_items(track, byte)


class UniqueItemsTokenPDA(ReaderTokenPDA):
    """Token masks of a :class:`UniqueItemsAutomaton`: the pushdown automaton's rows, less
    the tokens whose simulation kills every configuration.

    Which string a token closes, and how the string it leaves open begins, are in its
    bytes: inside a string, the string is the text so far plus the token's bytes
    before its first quote; outside, the bytes after its first quote.  So the tokens
    to simulate are looked up (:class:`QuoteIndex`) by what each written string
    still needs; the rows stay memoised by configuration.
    """

    def __init__(self, automaton: PushdownDFA, info, disk=None, values: Mapping[int, ItemValues] | None = None) -> None:
        super().__init__(automaton, info, disk)
        self.unique = self.reader = UniqueItemsAutomaton(automaton, values or {})
        self._suspects = ItemSuspects(self.unique, info, self.trie.max_depth)

    def _cut_mask(self, state: tuple) -> np.ndarray:
        words = self.configurations_mask(state[0])
        suspects = self._suspects(words, state[1])
        return without_bits(words, self.killed(state, suspects)) if suspects else words


class ItemSuspects:
    """The allowed tokens of a mask that may kill a configuration in a unique array (a
    superset: the simulation decides), looked up by what the innermost array wrote.

    Strings: those closing a string written before, and where some array's items have
    finite rests, those leaving a string open on a written string's beginning
    (:func:`written_suspects`).  Other scalars (:class:`ScalarIndex`): those ending one
    written before, or leaving one open on a written one's beginning (only there can
    every way to end it be written).  And, once nearly every value is written, those
    writing a comma.
    """

    def __init__(self, unique: UniqueItemsAutomaton, info, max_depth: int) -> None:
        self.unique = unique
        self.quotes = quote_index(info)
        self.plain = plain_tokens(info) if unique.bounded else None
        self.scalars = scalar_index(info) if unique.scalars else None
        self.max_depth = max_depth

    def __call__(self, words: np.ndarray, track: ItemTrack) -> list[int]:
        unique, index = self.unique, self.quotes
        if track.written is None:  # not directly in an array: only one the token opens can fail
            return allowed_tokens(words, index.new_array)
        bounded = unique.bounded
        suspects = written_suspects(index, self.plain, words, track.written, track.string, track.escaped, bounded,
                                    self.max_depth)
        most = index.most_closed
        if self.scalars is not None:
            suspects += self._scalar_suspects(words, track)
            most += self.scalars.most_closed
        if bounded and track.values_written + most >= unique.fewest_values:
            suspects += allowed_tokens(words, index.commas)
        return suspects

    def _scalar_suspects(self, words: np.ndarray, track: ItemTrack) -> list[int]:
        index = self.scalars
        if track.string is not None:  # the token must leave the string first: rare, simulated
            return allowed_tokens(words, index.leaving if not track.escaped else self.quotes.any_quote)
        written, current = track.scalars, track.scalar or b""
        pools = [index.several_ids]
        for value in written:
            if value.startswith(current):
                rest = value[len(current):]
                if not rest:  # the open scalar is written: any byte that ends it kills
                    pools.append(index.ending_now)
                elif rest in index.ending:
                    pools.append(index.ending[rest])
                pools += [index.plain[p] for p in beginnings(rest, self.max_depth) if p in index.plain]
        ended = written | {current} if current else written  # the token may end the open one first
        for prefix in short_prefixes(ended, self.max_depth) if ended else ():
            if prefix in index.opening:
                pools.append(index.opening[prefix])
        return allowed_tokens(words, np.concatenate(pools))


class ScalarIndex(NamedTuple):
    """A vocabulary's tokens by the scalars (numbers, literals) they write, read from
    outside a string: ``plain[data]``: the tokens of scalar bytes alone (they go on
    with the scalar open); ``ending[lead]``: those whose first byte no scalar holds
    comes after ``lead`` (they end the open scalar, ``lead`` added), and ``ending_now``
    those with no lead; ``opening[tail]``:
    those that end, after such a byte, inside a scalar they began with ``tail``;
    ``several_ids``: those that begin and end a scalar of their own; ``leaving``: those
    that close a string and then write scalar bytes; ``most_closed``: the most scalars
    one token ends."""

    plain: dict[bytes, np.ndarray]
    ending: dict[bytes, np.ndarray]
    ending_now: np.ndarray
    opening: dict[bytes, np.ndarray]
    several_ids: np.ndarray
    leaving: np.ndarray
    most_closed: int


_SCALAR_INDEXES: dict[str, ScalarIndex] = {}


def scalar_index(info) -> ScalarIndex:
    """The :class:`ScalarIndex` of ``info``'s vocabulary (built once per vocabulary)."""
    found = _SCALAR_INDEXES.get(info.hash)
    if found is None:
        plain: dict[bytes, list[int]] = {}
        ending: dict[bytes, list[int]] = {}
        opening: dict[bytes, list[int]] = {}
        several, leaving, most = [], [], 1
        for token, data in enumerate(info.token_bytes):
            if not data or len(data.translate(None, _SCALAR_TABLE_BYTES)) == len(data):
                continue  # no scalar bytes: it ends an open scalar at once (ending_now) or stays a string's
            read = _scalars_read(data)
            if read is None:
                continue
            lead, closed, tail = read
            if closed is None:
                plain.setdefault(data, []).append(token)
                continue
            if lead:
                ending.setdefault(lead, []).append(token)
            if tail:
                opening.setdefault(tail, []).append(token)
            if closed:
                several.append(token)
            most = max(most, len(closed) + 1)
            if _leaves_a_string_for_scalars(data):
                leaving.append(token)
        starts = [t for t, data in enumerate(info.token_bytes) if data and data[0] not in SCALAR_BYTES]
        found = ScalarIndex({k: token_ids(v) for k, v in plain.items()}, {k: token_ids(v) for k, v in ending.items()},
                            token_ids(starts), {k: token_ids(v) for k, v in opening.items()}, token_ids(several),
                            token_ids(leaving), most)
        _SCALAR_INDEXES[info.hash] = found
    return found


def _scalars_read(data: bytes) -> tuple[bytes, list[bytes] | None, bytes | None] | None:
    """``data`` read from outside a string: the scalar bytes it begins with, the scalars
    it begins and ends after its first other byte (None when there is no other byte),
    and the scalar it leaves open after one (None if none).  None for a token no JSON
    text holds there (a scalar that a byte other than :data:`SCALAR_ENDS` follows: the
    pushdown automaton refuses it, so no suspect is missed)."""
    lead = 0
    while lead < len(data) and data[lead] in SCALAR_BYTES:
        lead += 1
    if lead == len(data):
        return data, None, None
    closed, run, in_string, escaped = [], None, False, False
    for at, byte in enumerate(data[lead:]):
        if in_string:
            if escaped:
                escaped = False
            elif byte == _BACKSLASH:
                escaped = True
            elif byte == _QUOTE:
                in_string = False
        elif byte in SCALAR_BYTES:
            run = (run or b"") + bytes((byte,))
        elif (run is not None or (at == 0 and lead)) and byte not in SCALAR_ENDS:
            return None
        else:
            if run is not None:
                closed.append(run)
                run = None
            in_string = byte == _QUOTE
    return data[:lead], closed, run


def _leaves_a_string_for_scalars(data: bytes) -> bool:
    """Whether ``data``, read from inside a string, closes it and then writes scalar bytes."""
    escaped = False
    for at, byte in enumerate(data):
        if escaped:
            escaped = False
        elif byte == _BACKSLASH:
            escaped = True
        elif byte == _QUOTE:
            read = _scalars_read(data[at + 1:])
            return read is not None and any(read)
    return False
