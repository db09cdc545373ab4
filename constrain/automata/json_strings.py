"""JSON strings, in tables and in tokens: what the readers that keep strings distinct
(:mod:`.unique_items`, :mod:`.member_sets`) need to know about them.

* In a table: how many strings an item's DFA reads (:func:`string_values`: a count,
  or :data:`GOES_ON` when from every point inside a string some continuation loops),
  and whether a string open at some state can still end as one not written before
  (:class:`StringEnds`).
* In a vocabulary: which strings a token closes and which it leaves open, read from
  inside a string or outside one (:class:`QuoteIndex`), so that the tokens that may
  close or begin a written string are looked up by what each written string still
  needs (:func:`written_suspects`) rather than simulated one by one.

Strings are raw bytes as written between the quotes: the languages spell each string
one way (``json.dumps(ensure_ascii=False)``), so equal texts are equal strings.
"""

from __future__ import annotations

from bisect import bisect_left
from functools import lru_cache
from typing import NamedTuple

import numpy as np

from ._dfa_kernels import string_loops
from .byte_dfa import ByteDFA
from .memo import BoundedMemo
from .pushdown import CALL_SYMBOLS, WIDE_CALL

__all__ = ["GOES_ON", "MANY_VALUES", "string_values", "StringEnds", "QuoteIndex", "quote_index", "plain_tokens",
           "written_suspects", "token_ids", "all_token_ids", "allowed_tokens", "in_order", "begins_some",
           "beginnings", "short_prefixes", "acyclic_order", "written_ahead", "PlainTokens", "NO_TOKENS"]

_QUOTE, _BACKSLASH = ord('"'), ord("\\")


#: :func:`string_values` of strings that go on from every point inside them.
GOES_ON = -1
#: :func:`string_values` caps its count here (and says so for infinitely many strings
#: with a finite rest somewhere).
MANY_VALUES = 1 << 62


def string_values(item: ByteDFA) -> int | None:
    """How many strings ``item`` reads, for keeping them distinct: :data:`GOES_ON` when
    from every point inside a string some continuation loops (no unfinished string
    then has only finitely many completions); else their number, capped at
    :data:`MANY_VALUES`.  None when ``item`` reads anything but JSON strings, or calls.

    Walks the pairs (state, just after a backslash) inside the string; the closing
    quote must lead to an accepting state with no moves.  The common answer (key
    classes of objects: any name but the listed ones) is :data:`GOES_ON`, found on
    the whole table at once (:func:`_goes_on_everywhere`); counting walks the pairs
    one by one.
    """
    first = np.flatnonzero(item.trans[item.start] >= 0).tolist()
    if item.accepting[item.start] or first != [_QUOTE]:
        return None
    inside = int(item.trans[item.start, _QUOTE])
    found = _goes_on_everywhere(item, inside)
    if found is not None:
        return GOES_ON if found else None
    graph = _inside_graph(item.trans, inside, item.accepting)
    if graph is None:
        return None
    successors, closing = graph
    order = acyclic_order(successors)
    if order is None:
        return MANY_VALUES
    ways: dict[tuple[int, bool], int] = {}
    for node in reversed(order):  # successors first
        ways[node] = min(MANY_VALUES, closing[node] + sum(ways[n] * k for n, k in successors[node].items()))
    return ways[(int(item.trans[item.start, _QUOTE]), False)]


def _goes_on_everywhere(item: ByteDFA, start: int) -> bool | None:
    """Over the pairs (state, escaped) inside a string from ``start`` (one search in
    :func:`._dfa_kernels.string_loops`, the one that :class:`StringEnds` asks; level
    by level in numpy it was a tenth of a median any-order compile): False when one
    is not a string's inside (it accepts or calls, or its closing quote leads
    elsewhere than to an accepting state with no moves), True when from every one
    some continuation never closes the string, None when not (the strings must be
    counted)."""
    trans, accepting = item.trans, item.accepting
    n = len(trans)
    pairs, looping = string_loops(trans, start, 0, np.full(2 * n, -1, dtype=np.int64))
    states = pairs % n
    if accepting[states].any() or (trans[states][:, [*CALL_SYMBOLS, WIDE_CALL]] >= 0).any():
        return False
    closed = trans[states[pairs < n], _QUOTE]
    closed = closed[closed >= 0]
    if not accepting[closed].all() or (trans[closed] >= 0).any():
        return False
    return True if looping.all() else None


def _inside_graph(trans: np.ndarray, start: int, accepting: np.ndarray):
    """The pairs (state, escaped) inside a string from ``start`` (just after its opening
    quote) of an item's own DFA: ``(successors, closing)``: ``successors[node][nxt]``
    how many bytes lead from ``node`` to ``nxt``, ``closing[node]`` 1 where the closing
    quote leaves from it.  None unless every closing quote ends the item and nothing
    inside accepts or calls."""
    calls = [*CALL_SYMBOLS, WIDE_CALL]
    successors: dict[tuple[int, bool], dict[tuple[int, bool], int]] = {}
    closing: dict[tuple[int, bool], int] = {}
    todo = [(start, False)]
    while todo:
        node = todo.pop()
        if node in successors:
            continue
        state, escaped = node
        row = trans[state]
        if accepting[state] or (row[calls] >= 0).any():
            return None
        nexts: dict[tuple[int, bool], int] = {}
        closing[node] = 0
        for byte in np.flatnonzero(row >= 0).tolist():
            target = int(row[byte])
            if byte == _QUOTE and not escaped:
                if not accepting[target] or (trans[target] >= 0).any():
                    return None
                closing[node] = 1
                continue
            key = (target, byte == _BACKSLASH and not escaped)
            nexts[key] = nexts.get(key, 0) + 1
        successors[node] = nexts
        todo.extend(nexts)
    return successors, closing


def acyclic_order(successors: dict) -> list | None:
    """The nodes in topological order (None when there is a cycle)."""
    indegree = dict.fromkeys(successors, 0)
    for nexts in successors.values():
        for node in nexts:
            indegree[node] += 1
    order = [node for node, degree in indegree.items() if degree == 0]
    for node in order:  # grows while it is read
        for nxt in successors[node]:
            indegree[nxt] -= 1
            if indegree[nxt] == 0:
                order.append(nxt)
    return order if len(order) == len(successors) else None


@lru_cache(maxsize=1024)
def in_order(written: frozenset[bytes]) -> tuple[bytes, ...]:
    """``written`` sorted: the texts that begin with a given text are then one run."""
    return tuple(sorted(written))


def begins_some(ordered: tuple[bytes, ...], text: bytes) -> bool:
    """Whether ``text`` begins some text of ``ordered`` (sorted): the first not below it.

    Asked at every byte of a path; testing every written text instead was quadratic in
    the keys of a wide object (200 million prefix tests in one Github_ultra document)."""
    k = bisect_left(ordered, text)
    return k < len(ordered) and ordered[k].startswith(text)


def written_ahead(ordered: tuple[bytes, ...], text: bytes) -> tuple[bytes, ...]:
    """The texts of ``ordered`` (sorted) that begin with ``text``: one run of it.

    A look-ahead from a string that reads ``text`` so far meets only these, so its answer
    is memoised by them, not by everything written: the next key of a wide object adds
    one name, and the answers for beginnings of the others still hold."""
    start = end = bisect_left(ordered, text)
    while end < len(ordered) and ordered[end].startswith(text):
        end += 1
    return ordered[start:end]


@lru_cache(maxsize=1024)
def short_prefixes(written: frozenset[bytes], longest: int) -> frozenset[bytes]:
    """The distinct beginnings of at most ``longest`` bytes (the empty one included) of the
    texts in ``written``: a token's open string is no longer than the token, and slicing
    every beginning of a long written text took a tenth of a second."""
    return frozenset(word[:k] for word in written for k in range(min(len(word), longest) + 1))


class StringEnds:
    """How the strings open at states of one table can end: for keeping strings
    distinct from those written before (array items, object keys)."""

    def __init__(self, trans: np.ndarray) -> None:
        self.trans = trans
        self._loops: dict[tuple[int, bool], bool] = {}
        self._always: dict[tuple[int, bool], bool] = {}
        self._local: np.ndarray | None = None  # string_loops' scratch, made on first use
        self._moves = BoundedMemo(4_096)  # (byte, target) per state read; a free string's state has some 240
        self._fresh = BoundedMemo(10_000)  # keys hold the text read so far, which may be long

    def fresh(self, state: int, text: bytes, escaped: bool, written: frozenset[bytes]) -> bool:
        """Some way on from ``state`` (inside a string, ``text`` read so far) closes the
        string as one not in ``written`` (texts as the language spells them: one per
        string).  Only paths along written texts are followed (a stack, not recursion:
        texts may be long): any other byte leads to a fresh string, since every state
        is live."""
        ahead = written_ahead(in_order(written), text)
        if not ahead:  # no written string begins so: any way on is fresh
            return True
        key = (state, text, escaped, ahead)
        found = self._fresh.get(key)
        if found is None:  # each suspect token of a mask asks again from the same place
            found = self._fresh.remember(key, self._search_fresh(state, text, escaped, ahead))
        return found

    def _search_fresh(self, state: int, text: bytes, escaped: bool, ordered: tuple[bytes, ...]) -> bool:
        """:meth:`fresh`, searched over the written strings ``ordered`` (sorted) that begin
        with ``text``: the only ones a path from here can meet."""
        written = frozenset(ordered)
        todo = [(state, text, escaped)]
        while todo:
            state, text, escaped = todo.pop()
            if not begins_some(ordered, text) or self.goes_on(state, escaped):
                return True
            for byte, target in self.moves_of(state):
                if byte == _QUOTE and not escaped:
                    if text not in written:
                        return True
                else:
                    todo.append((target, text + bytes((byte,)), byte == _BACKSLASH and not escaped))
        return False

    def moves_of(self, state: int) -> list[tuple[int, int]]:
        """The (byte, target) moves of ``state`` (memoised: the table's rows are numpy)."""
        found = self._moves.get(state)
        if found is None:
            row = self.trans[state]
            live = np.flatnonzero(row >= 0)
            found = self._moves.remember(state, list(zip(live.tolist(), row[live].tolist())))
        return found

    def goes_on(self, state: int, escaped: bool) -> bool:
        """Whether from (``state``, ``escaped``) inside a string some path never closes it."""
        key = (state, escaped)
        found = self._loops.get(key)
        if found is None:  # every pair the search reaches is answered at once
            self._search_loops(state, escaped)
            found = self._loops[key]
        return found

    def always_goes_on(self, state: int, escaped: bool) -> bool:
        """Whether from (``state``, ``escaped``) inside a string every place the string can
        reach still :meth:`goes_on`.  Then no text read on inside it leaves only written
        strings to close as (a finite set holds none of the endless others), so a token
        that stays inside cannot be refused for repeating one: an open object's key, where
        any name that is not a member's is an additional one."""
        key = (state, escaped)
        found = self._always.get(key)
        if found is None:
            found = self._always[key] = self._search_loops(state, escaped)
        return found

    def _search_loops(self, state: int, escaped: bool) -> bool:
        """Answer :meth:`goes_on` for every pair reached from (``state``, ``escaped``);
        returns whether it holds at all of them."""
        if self._local is None:
            self._local = np.full(2 * len(self.trans), -1, dtype=np.int64)
        pairs, looping = string_loops(self.trans, state, int(escaped), self._local)
        n = len(self.trans)
        for pair, loops in zip(pairs.tolist(), looping.tolist()):
            self._loops[(pair % n, pair >= n)] = loops
        return bool(looping.all())


def written_suspects(index: "QuoteIndex", plain: "PlainTokens | None", words: np.ndarray,
                     written: frozenset[bytes], string: bytes | None, escaped: bool, bounded: bool,
                     max_depth: int, empty_tails: bool = True, first: bool = True,
                     open_rest: bool = False) -> list[int]:
    """The tokens of the packed mask ``words`` that may close a string of ``written``, or
    (``bounded``: where the strings' rests may be finite) leave one open on a written
    string's beginning, read from the text's place (inside a string when ``string`` is
    not None, ``escaped`` after its backslash).  A superset: the caller simulates them.

    Which string a token closes, and how the string it leaves open begins, are in its
    bytes (:class:`QuoteIndex`), so they are looked up by what each written string
    still needs.  ``plain`` holds the tokens without a quote (only needed when
    ``bounded``).  Without ``empty_tails`` (the caller knows some string not
    written is left to begin), tokens that leave a string open right after its quote are
    not suspects.  Without ``first`` (the string the token reads first is not one
    ``written`` constrains: an object's value, before the keys), only tokens reading
    more strings after it are.  With ``open_rest`` (the string read can go on forever
    wherever it goes: :meth:`StringEnds.always_goes_on`), tokens that stay inside it
    are not suspects either.
    """
    if string is None:
        before, reading = b"", index.outside
    elif escaped:  # the index reads from an unescaped start: simulate (a rare cut)
        if bounded and written and first and not open_rest:  # any byte may finish a written string's beginning
            return allowed_tokens(words, all_token_ids(len(words)))
        return allowed_tokens(words, index.any_quote)
    else:
        before, reading = string, index.inside
    pools: list[np.ndarray] = []  # ids whose allowed tokens are all suspects: masked at once, at the end
    for value in written if first else ():
        if value.startswith(before):
            closing = reading.closing.get(value[len(before):])
            if closing is not None:
                pools.append(closing)
    suspects = []
    for token in allowed_tokens(words, reading.several_ids):
        closed = [before + reading.several[token][0], *reading.several[token][1:]]
        if len(set(closed)) < len(closed) or not written.isdisjoint(closed):
            suspects.append(token)
    if bounded:
        for value in written if first and string is not None and not open_rest else ():
            if value.startswith(before):
                rest = value[len(before):]
                pools.append(plain.beginning(rest, max_depth))
        if first:
            pools.append(reading.openings(written, max_depth, empty_tails))
        ordered = in_order(written)
        for token in allowed_tokens(words, reading.reopening_ids):
            closed, tail = reading.reopening[token]
            if not tail:  # every string begins with the empty one
                if empty_tails:
                    suspects.append(token)
            elif begins_some(ordered, tail) or (before + closed[0]).startswith(tail) or any(
                    text.startswith(tail) for text in closed[1:]):
                suspects.append(token)
    if pools:
        suspects += allowed_tokens(words, pools[0] if len(pools) == 1 else np.concatenate(pools))
    return suspects


def beginnings(text: bytes, longest: int):
    """The non-empty beginnings of ``text`` of at most ``longest`` bytes."""
    return (text[:k] for k in range(1, min(len(text), longest) + 1))


class _Reading(NamedTuple):
    """How a vocabulary's tokens with quotes read from one context (inside a string, or
    outside one).  Strings are raw bytes without quotes; inside, a token's first
    string closed is only what follows the text so far.

    ``closing[v]``: the tokens that close exactly one string, ``v``; ``several[token]``:
    the strings closed by a token closing more (``several_ids``: their ids);
    ``opening[t]``: the tokens that close nothing and end inside a string they opened
    with ``t``; ``reopening[token]``: (the strings closed, the open tail) for tokens
    that close some and end inside one they opened (``reopening_ids``)."""

    closing: dict[bytes, np.ndarray]
    several: dict[int, tuple[bytes, ...]]
    several_ids: np.ndarray
    opening: dict[bytes, np.ndarray]
    reopening: dict[int, tuple[tuple[bytes, ...], bytes]]
    reopening_ids: np.ndarray
    opened: BoundedMemo  # :meth:`openings` by its arguments

    def openings(self, written: frozenset[bytes], longest: int, empty_tails: bool) -> np.ndarray:
        """The tokens of :attr:`opening` under every beginning of at most ``longest`` bytes
        of a text in ``written`` (the empty one only with ``empty_tails``).

        Memoised by the set: every mask of a member asks with the keys written before it,
        and a wide object's keys have hundreds of beginnings (300,000 look-ups over the
        any-order masks of one 60-member document)."""
        key = (written, longest, empty_tails)
        found = self.opened.get(key)
        if found is None:
            prefixes = short_prefixes(written, longest)
            found = self.opened.remember(key, _joined(self.opening.get(p) for p in prefixes if p or empty_tails))
        return found


class QuoteIndex(NamedTuple):
    """A vocabulary's tokens by their quotes (:class:`_Reading` per context), the tokens
    with a quote (``any_quote``) or a comma (``commas``), the most strings one token
    closes (``most_closed``), and the tokens that open an array and then hold three
    quotes or more, enough to close a string and begin or close another in it, or a
    comma, enough to end one scalar and repeat it (``new_array``)."""

    inside: _Reading
    outside: _Reading
    any_quote: np.ndarray
    commas: np.ndarray
    most_closed: int
    new_array: np.ndarray


_QUOTE_INDEXES: dict[str, QuoteIndex] = {}


def quote_index(info) -> QuoteIndex:
    """The :class:`QuoteIndex` of ``info``'s vocabulary (built once per vocabulary)."""
    found = _QUOTE_INDEXES.get(info.hash)
    if found is None:
        tokens = [(token, data) for token, data in enumerate(info.token_bytes) if b'"' in data]
        inside, outside = _reading(tokens, True), _reading(tokens, False)
        most = max((data.count(b'"') for _, data in tokens), default=0)
        found = QuoteIndex(inside, outside, token_ids([t for t, _ in tokens]),
                            token_ids([t for t, data in enumerate(info.token_bytes) if b"," in data]), (most + 1) // 2,
                            token_ids([t for t, data in enumerate(info.token_bytes) if _items_after_a_bracket(data)]))
        _QUOTE_INDEXES[info.hash] = found
    return found


class PlainTokens:
    """The tokens without a quote (what can go on inside a string), looked up by the text
    they may begin: :meth:`beginning`."""

    def __init__(self, token_bytes) -> None:
        by_bytes: dict[bytes, list[int]] = {}
        for token, data in enumerate(token_bytes):
            if data and b'"' not in data:
                by_bytes.setdefault(data, []).append(token)
        self._by_bytes = {data: token_ids(tokens) for data, tokens in by_bytes.items()}
        # The same written keys are looked up at every mask of a wide object: a few
        # dozen names, each sliced into its beginnings, were half of such a mask's suspects.
        self._beginnings = BoundedMemo(4_096)

    def beginning(self, text: bytes, longest: int) -> np.ndarray:
        """The tokens that spell a non-empty beginning of ``text`` of at most ``longest`` bytes."""
        key = (text, longest)
        found = self._beginnings.get(key)
        if found is None:
            found = self._beginnings.remember(key, _joined(map(self._by_bytes.get, beginnings(text, longest))))
        return found


def _joined(pools) -> np.ndarray:
    """The token ids of ``pools`` (arrays, or None for none) in one array."""
    found = [pool for pool in pools if pool is not None]
    return np.concatenate(found) if found else NO_TOKENS


_PLAIN_TOKENS: dict[str, PlainTokens] = {}


def plain_tokens(info) -> PlainTokens:
    """The :class:`PlainTokens` of ``info``'s vocabulary, built once per vocabulary and only
    where strings' rests may be finite (keys of closed objects, distinct array items)."""
    found = _PLAIN_TOKENS.get(info.hash)
    if found is None:
        found = _PLAIN_TOKENS[info.hash] = PlainTokens(info.token_bytes)
    return found


def _reading(tokens: list[tuple[int, bytes]], inside: bool) -> _Reading:
    closing: dict[bytes, list[int]] = {}
    opening: dict[bytes, list[int]] = {}
    several: dict[int, tuple[bytes, ...]] = {}
    reopening: dict[int, tuple[tuple[bytes, ...], bytes]] = {}
    for token, data in tokens:
        closed, tail = _strings_closed(data, inside)
        if tail is not None:
            if closed:
                reopening[token] = (tuple(closed), tail)
            else:
                opening.setdefault(tail, []).append(token)
        if len(closed) == 1:
            closing.setdefault(closed[0], []).append(token)
        elif len(closed) > 1:
            several[token] = tuple(closed)
    return _Reading({v: token_ids(ids) for v, ids in closing.items()}, several, token_ids(list(several)),
                    {t: token_ids(ids) for t, ids in opening.items()}, reopening, token_ids(list(reopening)),
                    BoundedMemo(1_024))


def _strings_closed(data: bytes, inside: bool) -> tuple[list[bytes], bytes | None]:
    """The strings ``data`` closes (raw, without quotes), read from inside a string (the
    first is then only what follows the text so far) or outside one, and the string it
    leaves open if it opened one (None otherwise, or when it stays in the string it
    began in)."""
    closed: list[bytes] = []
    current = bytearray() if inside else None
    opened = False
    escaped = False
    for byte in data:
        if current is None:
            if byte == _QUOTE:
                current, opened = bytearray(), True
            continue
        if byte == _QUOTE and not escaped:
            closed.append(bytes(current))
            current = None
            continue
        current.append(byte)
        escaped = byte == _BACKSLASH and not escaped
    return closed, (bytes(current) if current is not None and opened else None)


def _items_after_a_bracket(data: bytes) -> bool:
    """Whether ``data`` opens an array and then holds three quotes or more, or a comma:
    enough to write an item and then repeat it, or begin a string written."""
    bracket = data.find(b"[")
    return bracket >= 0 and (data[bracket:].count(b'"') >= 3 or b"," in data[bracket:])


def token_ids(tokens: list[int]) -> np.ndarray:
    return np.asarray(tokens, dtype=np.int64)


#: No token ids (shared: read-only).
NO_TOKENS = token_ids([])
NO_TOKENS.setflags(write=False)


@lru_cache(maxsize=8)
def all_token_ids(num_words: int) -> np.ndarray:
    return np.arange(num_words * 32, dtype=np.int64)


def allowed_tokens(words: np.ndarray, tokens: np.ndarray) -> list[int]:
    """Those of ``tokens`` whose bits are set in the packed mask ``words``."""
    if not len(tokens):
        return []
    bits = (words[tokens >> 5] >> (tokens & 31).astype(np.uint32)) & 1
    return tokens[bits.astype(bool)].tolist()
