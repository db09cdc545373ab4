"""Tokens longer than a counted loop's margin, checked against the count near the bound.

A counted callee (:class:`~.pushdown.CountedCallee`) keeps its loop's count outside the
table, so the loop's rows, memoised without the count, see an unbounded string.  That is
exact for a token of ``margin`` bytes or fewer: the eager copies after the loop hold that
many characters and the most the content still needs, so such a token either stays in the
loop or finishes its walk in the copies.  Sizing ``margin`` for the longest token (128
bytes in Llama-3) made the copies the bulk of every counted callee: a word-count pattern
(``^(?:\\S+\\s+){0,49}\\S+$``, 1,900 content states) with ``maxLength: 500`` needed 200,000
states and was refused.  Tokens of more than 16 bytes are few (1,312 of Llama-3's 128,256),
so the callees are sized for those (:data:`~constrain.grammar.json_schema.strings.COUNT_MARGIN`)
and the long ones are checked here, only where a configuration's count is within one
long token of the loop's exit:

* a long token walked from a loop state ignores the count in the table; the text it
  reads inside the string is fixed by its bytes, so per loop state and long token the
  walk gives the characters it completes and, if it ends inside the string, the fewest
  characters the content still needs to end (:meth:`LongTokens._walked`, vectorised over
  the long tokens, memoised per state);
* the token is viable at count ``c`` exactly when the row allows it and ``c`` plus those
  two fit in the string's ``maxLength`` (what the copies after the exit keep).

From outside the loop no token can pass the exit (the loop spans at least the longest
token: :func:`~constrain.grammar.json_schema.strings.counted_string_callee` chooses the
margin so), and once past it the copies are exact, so only loop configurations are checked.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

__all__ = ["LongTokens"]

_QUOTE = ord('"')
_FAR = np.int64(1) << 40  # more characters than any string holds: "cannot end"


class LongTokens:
    """The tokens longer than some counted loop's margin, and where their walks end.

    ``pda`` is a :class:`~.pushdown.PushdownDFA` whose counted callees may have a margin
    below ``longest`` (the vocabulary's longest token, in bytes).
    """

    def __init__(self, pda, info, longest: int) -> None:
        self.pda = pda
        self.longest = longest
        self.ids, self.lengths, self.bytes = _long_tokens(info, min(c.margin for c in pda.counted if c.loops))
        self._needs: dict[int, np.ndarray] = {}
        self._walks: dict[int, tuple[np.ndarray, np.ndarray]] = {}

    def near_bound(self, state: tuple) -> bool:
        """Whether some configuration of ``state`` is in a loop with a count a long token can
        carry past its exit (only those need :meth:`overflowing`)."""
        return any(self._loop_near_exit(config) is not None for config in state)

    def overflowing(self, config: tuple) -> np.ndarray:
        """The long tokens that ``config`` (in a loop, with its count) cannot read: those its
        row may allow but whose string would pass ``maxLength``."""
        loop = self._loop_near_exit(config)
        if loop is None:
            return self.ids[:0]
        state, count = config[-1] % self.pda.stride, config[-1] // self.pda.stride - 1
        needed, walked = self._walked(state)
        return self.ids[walked & (self.lengths > loop.margin) & (needed > loop.high - count)]

    def _loop_near_exit(self, config: tuple):
        """The counted callee whose loop ``config`` is in, if its margin is below the longest
        token and its count within one longest token of the exit (None otherwise)."""
        current, stride = config[-1], self.pda.stride
        if current < stride:
            return None
        loop = self.pda.counted[self.pda.loop_of[current % stride]]
        if loop.margin < self.longest and current // stride - 1 + self.longest >= loop.exit_at:
            return loop
        return None

    def _walked(self, state: int) -> tuple[np.ndarray, np.ndarray]:
        """Per long token from loop state ``state``: the characters its string then holds at
        the least (those it completes plus the fewest the content needs to end, if it stops
        inside), and whether the table walk survives at all."""
        found = self._walks.get(state)
        if found is None:
            found = self._walks[state] = self._walk_all(state)
        return found

    def _walk_all(self, state: int) -> tuple[np.ndarray, np.ndarray]:
        pda = self.pda
        index = pda.loop_of[state]
        lo, hi = pda.loop_rows[index]
        ends = pda.unit_ends[lo:hi]
        n = len(self.ids)
        current = np.full(n, state, dtype=np.int64)
        units = np.zeros(n, dtype=np.int64)
        inside = np.ones(n, dtype=bool)  # still reading the string
        alive = np.ones(n, dtype=bool)
        for position in range(self.bytes.shape[1]):
            active = np.flatnonzero(inside & alive & (self.lengths > position))
            if not active.size:
                break
            moved = pda.trans[current[active], self.bytes[active, position]].astype(np.int64)
            in_loop = (moved >= lo) & (moved < hi)
            alive[active[moved < 0]] = False
            inside[active[(moved >= 0) & ~in_loop]] = False  # the closing quote: the only way out
            stays = active[in_loop]
            current[stays] = moved[in_loop]
            units[stays] += ends[moved[in_loop] - lo]
        rest = np.where(inside, self._need(index)[current - lo], 0)
        return units + rest, alive

    def _need(self, index: int) -> np.ndarray:
        """Per state of loop ``index``: the fewest characters the content needs before its
        closing quote (0 where the quote may come now), counting the one in progress."""
        found = self._needs.get(index)
        if found is None:
            found = self._needs[index] = _characters_to_end(self.pda, index)
        return found


_LONG_TOKENS: dict[tuple[str, int], tuple[np.ndarray, np.ndarray, np.ndarray]] = {}


def _long_tokens(info, margin: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The ids, lengths and zero-padded bytes of ``info``'s tokens of more than ``margin``
    bytes (built once per vocabulary: a scan of the whole vocabulary costs milliseconds)."""
    key = (info.hash, margin)
    found = _LONG_TOKENS.get(key)
    if found is None:
        token_bytes: Sequence[bytes] = info.token_bytes
        ids = [t for t, data in enumerate(token_bytes) if len(data) > margin]
        lengths = np.asarray([len(token_bytes[t]) for t in ids], dtype=np.int64)
        table = np.zeros((len(ids), int(lengths.max()) if ids else 0), dtype=np.int64)
        for row, token in enumerate(ids):
            data = token_bytes[token]
            table[row, :len(data)] = np.frombuffer(data, dtype=np.uint8)
        found = _LONG_TOKENS[key] = (np.asarray(ids, dtype=np.int64), lengths, table)
    return found


def _characters_to_end(pda, index: int) -> np.ndarray:
    """Shortest paths (in completed characters) from each loop state to one whose closing
    quote leaves the loop: relaxed over the loop's moves until nothing changes (the loop is a
    content automaton of a few thousand states at most)."""
    lo, hi = pda.loop_rows[index]
    table = pda.trans[lo:hi].astype(np.int64)
    quote = table[:, _QUOTE]
    need = np.where((quote >= 0) & ((quote < lo) | (quote >= hi)), 0, _FAR)
    inside = (table >= lo) & (table < hi)
    targets = np.where(inside, table - lo, 0)
    cost = np.where(inside, pda.unit_ends[lo:hi][targets], 0)
    while True:
        through = np.where(inside, cost + need[targets], _FAR).min(axis=1)
        relaxed = np.minimum(need, through)
        if np.array_equal(relaxed, need):
            return need
        need = relaxed
