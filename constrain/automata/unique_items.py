"""``uniqueItems`` over arrays of strings, kept in the matcher's state.

No regular (or context-free) language keeps an unbounded list of strings distinct, so
such an array is a callee of its own (:class:`~.pushdown.PushdownDFA` keeps which
block each configuration is in) and the set of items written lives next to the
configurations, as a counted string's count does.  What makes that exact and cheap:

* *The set is textual.*  Whichever configuration reads it, "the strings written
  directly in the innermost open array" is a function of the text alone (JSON nests
  one way, and the language spells each string one way), so one tracker serves
  every configuration of an ambiguous state; only the configurations inside a unique
  array's block are bound by it.
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

from typing import Mapping, NamedTuple

import numpy as np

from .json_strings import (GOES_ON, MANY_VALUES, QuoteIndex, StringEnds, allowed_tokens, plain_tokens, quote_index,
                           string_values, written_suspects)
from .pushdown import ByteReader, PushdownDFA, ReaderTokenPDA, without_bits

__all__ = ["string_values", "GOES_ON", "MANY_VALUES", "ItemTrack", "NO_ITEMS", "tracked_items", "item_suspects",
           "UniqueItemsAutomaton", "UniqueItemsTokenPDA"]

_QUOTE, _BACKSLASH, _COMMA = ord('"'), ord("\\"), ord(",")
_OPEN_ARRAY, _OTHER_BRACKETS = ord("["), frozenset(b"{]}")


class ItemTrack(NamedTuple):
    """What the text says about strings in arrays: the strings written directly in the
    innermost open container when it is an array (None otherwise, or once it holds
    anything but strings: no unique array's configuration can be there, so which
    container encloses it need not be kept), the string being read (None outside
    one) and whether its last byte was an escaping backslash.  Strings are kept as written, without their quotes:
    the language spells each string one way (``json.dumps(ensure_ascii=False)``), so
    equal texts are equal strings."""

    written: frozenset[bytes] | None = None
    string: bytes | None = None
    escaped: bool = False


NO_ITEMS = ItemTrack()


class UniqueItemsAutomaton(ByteReader):
    """A :class:`PushdownDFA` whose callees ``values`` names are arrays of distinct strings.

    ``values[symbol]`` is :func:`string_values` of that array's items.  A state is
    ``(configurations, track)``: the pushdown automaton's state and the
    :class:`ItemTrack` of the text.  The configurations whose current state is in one of
    those callees are dropped where their array would repeat an item or could only
    go on by repeating one (see the module's docstring); the others read on.
    """

    def __init__(self, pda: PushdownDFA, values: Mapping[int, int]) -> None:
        self.pda = pda
        block_values = np.zeros(pda.stride, dtype=np.int64)  # 0: not in a unique array
        for symbol, count in values.items():
            lo, hi = pda.blocks[symbol]
            block_values[lo:hi] = count
        self._values = block_values.tolist()
        self._bounded = any(count != GOES_ON for count in values.values())
        self.fewest_values = min((c for c in values.values() if c != GOES_ON), default=MANY_VALUES)
        self.ends = StringEnds(pda.trans)

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
        after, repeated = tracked_items(track, byte)
        moved = self.pda.move(self.before(self.pda.closure(configs), track, byte, repeated), byte)
        moved = self.after(moved, after)
        return (moved, after) if moved else None

    def before(self, closed: list, track: "ItemTrack", byte: int, repeated: bool) -> list:
        """The closed configurations that may read ``byte`` (``repeated``: it closes a string
        the innermost array holds already)."""
        if repeated:
            return self._without(closed, lambda count: True)
        if byte == _COMMA and track.string is None and track.written is not None and self._bounded:
            written = len(track.written)  # another item must come: one not written yet
            return self._without(closed, lambda count: count != GOES_ON and count <= written)
        return closed

    def after(self, moved: tuple, track: "ItemTrack") -> tuple:
        """The configurations ``moved`` that can still finish the string they are in with
        one the array has not written (``track``: the record after the byte)."""
        if moved and track.string is not None and track.written and self._bounded:
            return tuple(c for c in moved if self._can_finish(c[-1], track))
        return moved

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

    def is_accepting(self, state: tuple) -> bool:
        return self.pda.is_accepting(state[0])


def tracked_items(track: ItemTrack, byte: int) -> tuple[ItemTrack, bool]:
    """The track after ``byte`` and whether that byte closed a string the innermost array
    already holds."""
    if track.string is not None:
        if track.escaped:
            return track._replace(string=track.string + bytes((byte,)), escaped=False), False
        if byte == _BACKSLASH:
            return track._replace(string=track.string + b"\\", escaped=True), False
        if byte != _QUOTE:
            return track._replace(string=track.string + bytes((byte,))), False
        written, value = track.written, track.string
        if written is None:
            return track._replace(string=None), False
        return track._replace(string=None, written=written | {value}), value in written
    if byte == _QUOTE:
        return track._replace(string=b""), False
    if byte == _OPEN_ARRAY:
        return ItemTrack(frozenset()), False
    if byte in _OTHER_BRACKETS:  # inside an object, or back in a container that held one
        return NO_ITEMS, False
    return track, False


class UniqueItemsTokenPDA(ReaderTokenPDA):
    """Token masks of a :class:`UniqueItemsAutomaton`: the pushdown automaton's rows, less
    the tokens whose simulation kills every configuration.

    Which string a token closes, and how the string it leaves open begins, are in its
    bytes: inside a string, the string is the text so far plus the token's bytes
    before its first quote; outside, the bytes after its first quote.  So the tokens
    to simulate are looked up (:class:`QuoteIndex`) by what each written string
    still needs; the rows stay memoised by configuration.
    """

    def __init__(self, automaton: PushdownDFA, info, disk=None, values: Mapping[int, int] | None = None) -> None:
        super().__init__(automaton, info, disk)
        self.unique = self.reader = UniqueItemsAutomaton(automaton, values or {})
        self._quotes = quote_index(info)
        self._plain = plain_tokens(info) if self.unique.bounded else {}

    def _cut_mask(self, state: tuple) -> np.ndarray:
        words = self.configurations_mask(state[0])
        suspects = self._suspects(state[1], words)
        return without_bits(words, self.killed(state, suspects)) if suspects else words

    def _suspects(self, track: ItemTrack, words: np.ndarray) -> list[int]:
        return item_suspects(self.unique, self._quotes, self._plain, words, track, self.trie.max_depth)


def item_suspects(unique: UniqueItemsAutomaton, index: "QuoteIndex", plain: dict[bytes, list[int]],
                  words: np.ndarray, track: ItemTrack, max_depth: int) -> list[int]:
    """The allowed tokens of ``words`` that may kill a configuration in a unique array (a
    superset: the simulation decides): those closing a string written before in the
    innermost array, and where some array's items have finite rests, those leaving a
    string open on a written string's beginning, or writing a comma once nearly every
    value is written."""
    bounded = unique.bounded
    if track.written is None:  # not directly in an array: only one the token opens can fail
        return allowed_tokens(words, index.new_array)
    suspects = written_suspects(index, plain, words, track.written, track.string, track.escaped, bounded, max_depth)
    if bounded and len(track.written) + index.most_closed >= unique.fewest_values:
        suspects += allowed_tokens(words, index.commas)
    return suspects
