"""Byte DFAs with calls into one shared sub-automaton, and their token masks.

A free-form JSON value (``{}``, ``additionalProperties: true``) nests without
bound, which no DFA can follow: an eager DFA pays ``2**depth`` states per copy
to remember the stack of open brackets, and JSON Schema embeds one copy at every
free-form position.  Here the schema's DFA carries a *call* instead: byte
:data:`CALL` (0xFF never occurs in UTF-8 text, so no JSON text uses it) marks "a
value of the callee goes here", and its target is where the text continues
after that value.  The callee (any JSON value, one level of brackets, its own
nested values again calls) is one small DFA shared by every call site.  At run
time a configuration is a stack: the return states of the open calls, then the
current state.  Determinising and minimising treat :data:`CALL` as one more
symbol, which is exact because the callee's language is fixed.  What is not
exact over an abstract symbol is a product (intersection, difference): operands
of those are expanded first (:func:`expand_calls`, to a bounded depth), so
``not``/``oneOf`` over free-form values keep the bounded behaviour.

:class:`TokenPDA` is the engine.  Its matcher state is a sorted tuple of
configurations (several when the text so far is ambiguous: a number that may go
on or end, a value that one ``anyOf`` branch leaves free-form and another does
not).  A configuration's mask depends only on its current state and the top
:attr:`TokenPDA.reach` frames (a token cannot pop more), so rows are memoised by
that key and computed by one numba walk of the token trie
(:func:`~._kernels.walk_pda`).

A recursive schema definition is a callee the same way (``PushdownDFA.recursive``,
on a counted symbol the counted strings leave): its body calls itself where the
definition recurs, so recursion is exact at any depth.  Definitions that many
references share, and array items that ``maxItems`` repeats many times, are such
callees too (built once instead of copied at every site).

Long counted strings (``maxLength: 32767``, with or without a pattern or format)
are callees too, one per string constraint (:class:`CountedCallee`, symbols
:data:`COUNTED_SYMBOLS`): their middle is one loop whose count is kept in the
configuration instead of in ``maxLength`` copies of the string's states.  Far from the bound no token can see the count, so the loop's
rows are rows of the table; near it, the states are ordinary counted copies.
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass
from typing import Mapping, Sequence

import numpy as np

from ._dfa_kernels import place_block, wired_copies
from .byte_dfa import ByteDFA, _NFA, _kernel_arrays, _live_dfa, _minimize
from .cache import DiskCache
from .counted_loops import LongTokens
from .engine_base import EngineBase, new_exit_memo
from .memo import BoundedMemo
from .token_dfa import MAX_FORCED_BYTES
from .token_trie import TokenTrie, new_loop_memo

__all__ = ["CALL", "COUNTED_SYMBOLS", "CALL_SYMBOLS", "WIDE_CALL", "WIDE_SYMBOLS", "call_marker", "called_symbols",
           "wide_calls", "without_symbols", "has_calls", "expand_calls",
           "inline_calls", "CountedCallee", "ByteReader", "PushdownDFA", "TokenPDA", "ReaderTokenPDA",
           "cleared_bits", "without_bits"]

#: The byte that stands for "one value of the callee" in a DFA with calls.
CALL = 0xFF
#: Bytes that stand for "one value of counted callee j" (0xF5-0xFE never occur in UTF-8 either).
COUNTED_SYMBOLS = tuple(range(0xF5, CALL))
CALL_SYMBOLS = COUNTED_SYMBOLS + (CALL,)
_FIRST_SYMBOL = COUNTED_SYMBOLS[0]


#: The byte that begins a two-byte call: it and an id byte stand for "one value of callee
#: ``0x100 + id``" (a *wide* symbol).  0xC1 never occurs in UTF-8 (0xC0 marks polarity
#: cuts).  Wide symbols are for callees beyond the eleven one-byte ones: one per kind of
#: object whose members come in any order (:mod:`.member_sets`).
WIDE_CALL = 0xC1
#: The wide symbols (:data:`WIDE_CALL` and one id byte).  Ids stop below 0xC0: an id byte
#: that is itself a mark (0xC0 a polarity cut, 0xC1 another wide call, 0xF5-0xFF a one-byte
#: call) is read as that mark by whatever scans the table for it (``wide_calls`` took the
#: state after id 0xC1 for a second call's id byte, ``inline_calls`` an id 0xF5 for a counted
#: call): JsonSchemaStore web-types, past 192 wide symbols, compiled to calls nobody made.
WIDE_SYMBOLS = range(0x100, 0x1C0)


def call_marker(symbol: int = CALL) -> ByteDFA:
    """The DFA of the one-symbol text ``symbol`` (embed it where a callee value goes): one
    byte, or :data:`WIDE_CALL` and the id byte of a wide symbol."""
    if symbol in WIDE_SYMBOLS:
        trans = np.full((3, 256), -1, dtype=np.int32)
        trans[0, WIDE_CALL], trans[1, symbol & 0xFF] = 1, 2
        return ByteDFA(trans, np.array([False, False, True]), 0)
    trans = np.full((2, 256), -1, dtype=np.int32)
    trans[0, symbol] = 1
    return ByteDFA(trans, np.array([False, True]), 0)


def wide_calls(trans: np.ndarray) -> list[tuple[int, int, int]]:
    """``(state, symbol, return state)`` of every wide call move (:data:`WIDE_CALL`, id) in ``trans``."""
    return list(zip(*(column.tolist() for column in wide_call_arrays(trans))))


def wide_call_arrays(trans: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """:func:`wide_calls` as three arrays: calling states, symbols, return states."""
    from ._dfa_kernels import wide_call_moves

    states, ids, targets = wide_call_moves(np.ascontiguousarray(trans, dtype=np.int32), WIDE_CALL, len(WIDE_SYMBOLS))
    return states, ids + WIDE_SYMBOLS[0], targets


def without_symbols(trans: np.ndarray, symbols) -> np.ndarray:
    """A copy of ``trans`` without the call moves on ``symbols`` (one-byte or wide)."""
    trans = trans.copy()
    narrow = sorted(s for s in symbols if s not in WIDE_SYMBOLS)
    trans[:, narrow] = -1
    wide = [s & 0xFF for s in symbols if s in WIDE_SYMBOLS]
    if wide:
        middles = np.unique(trans[trans[:, WIDE_CALL] >= 0, WIDE_CALL])
        trans[np.ix_(middles, wide)] = -1
    return trans


def called_symbols(dfa: ByteDFA) -> frozenset[int]:
    """The call symbols (:data:`CALL_SYMBOLS`) ``dfa`` has moves on: the callees it calls.

    Memoised per DFA (they are immutable): a schema's compile asks this of its big
    table several times, and each answer is a strided scan of every row.
    """
    found = _CALLED.get(dfa)
    if found is None:
        used = (dfa.trans[:, CALL_SYMBOLS] >= 0).any(axis=0)
        found = frozenset(symbol for symbol, hit in zip(CALL_SYMBOLS, used.tolist()) if hit)
        found |= set(wide_call_arrays(dfa.trans)[1].tolist())  # one pass down the WIDE_CALL column
        _CALLED[dfa] = found
    return found


def has_calls(dfa: ByteDFA) -> bool:
    """Whether ``dfa`` calls any callee (:data:`CALL` or a counted one)."""
    return bool(called_symbols(dfa))


_CALLED: "weakref.WeakKeyDictionary[ByteDFA, frozenset[int]]" = weakref.WeakKeyDictionary()


def expand_calls(dfa: ByteDFA, callees: ByteDFA | Mapping[int, ByteDFA]) -> ByteDFA:
    """``dfa`` with every call move replaced by a copy of its callee (``callees`` by symbol,
    one-byte or wide, or the one callee of :data:`CALL`; callees have no calls themselves).

    For products, which are exact only over real bytes.  One copy per call move,
    then determinised and minimised.

    Raises
    ------
    ValueError
        When ``dfa`` calls a symbol ``callees`` does not give.
    """
    if not has_calls(dfa):
        return dfa
    callees = {CALL: callees} if isinstance(callees, ByteDFA) else callees
    missing = called_symbols(dfa) - callees.keys()
    if missing:
        raise ValueError(f"no callee given for call symbols {', '.join(map(hex, sorted(missing)))}")
    nfa = _NFA()
    base = nfa.new_states(dfa.num_states)
    final = nfa.new_state()
    wide = wide_calls(dfa.trans)
    bytes_only = dfa
    if wide:  # a wide call's first byte leads into its id byte: dropped, the callee goes there
        trans = dfa.trans.copy()
        trans[:, WIDE_CALL] = -1
        bytes_only = ByteDFA(trans, dfa.accepting, dfa.start)
    runs = bytes_only.run_table().copy()
    runs = runs[runs[:, 1] < _FIRST_SYMBOL]
    runs[:, 2] = np.minimum(runs[:, 2], _FIRST_SYMBOL - 1)  # a run into the symbols stops before them
    runs[:, 0] += base
    runs[:, 3] += base
    nfa.edge_blocks.append(runs)
    for state in np.flatnonzero(dfa.accepting).tolist():
        nfa.add_eps(base + state, final)
    for symbol, callee in callees.items():
        if symbol not in WIDE_SYMBOLS:
            for state in np.flatnonzero(dfa.trans[:, symbol] >= 0).tolist():
                nfa.build_automaton(callee, base + state, base + int(dfa.trans[state, symbol]))
    for state, symbol, target in wide:
        nfa.build_automaton(callees[symbol], base + state, base + target)
    pruned = _live_dfa(nfa, base + dfa.start, final)
    assert pruned is not None  # the callee is not empty, so nothing that was live dies
    trans, labels, (start,) = _minimize(*pruned)
    return ByteDFA(np.ascontiguousarray(trans, dtype=np.int32), labels >= 0, start)


def inline_calls(dfa: ByteDFA, symbol: int, callee: ByteDFA, max_states: int) -> ByteDFA | None:
    """``dfa`` with each ``symbol`` move ``s -> r`` replaced by a copy of ``callee`` wired
    from ``s`` to ``r``, without determinising anything again.

    The callee must start in a state nothing returns to and end in accepting
    states that read nothing more (a JSON string does).  Its start's moves then
    become ``s``'s, its ends become ``r``: deterministic unless ``s`` already moves
    on a byte the callee starts with, so such sites keep their call.  Every copied
    state is live, because every callee state reaches an end and ``r`` is live.
    Unlike :func:`expand_calls`, this costs a copy of the callee per call, not a
    subset construction over all.  None when the result would pass ``max_states``.
    """
    ctrans, start = callee.trans, callee.start
    first = ctrans[start] >= 0
    if (ctrans == start).any() or callee.accepting[start] or (ctrans[callee.accepting] >= 0).any():
        raise ValueError("the callee must start where nothing returns and end where nothing follows")
    sites = np.flatnonzero(dfa.trans[:, symbol] >= 0)
    sites = sites[~(dfa.trans[sites][:, first] >= 0).any(axis=1)]  # not where a site reads those bytes already
    if sites.size == 0:
        return dfa
    inner = np.flatnonzero(~callee.accepting & (np.arange(callee.num_states) != start))
    m = inner.size
    if dfa.num_states + sites.size * m > max_states:
        return None
    local = np.full(callee.num_states, -1, dtype=np.int32)  # int32 throughout: the result is large
    local[inner] = np.arange(m, dtype=np.int32)
    local[callee.accepting] = m  # an end: the site's return state
    template = np.where(ctrans >= 0, local[np.maximum(ctrans, 0)], np.int32(-1))
    trans, accepting = wired_copies(*_kernel_arrays(dfa.trans, dfa.accepting),
                                    sites.astype(np.int64), symbol, np.ascontiguousarray(template[inner]),
                                    np.ascontiguousarray(template[start]))
    return ByteDFA(trans, accepting, dfa.start)


_MOST_BYTES: dict[tuple[str, bytes], int] = {}
# Callees are shared by every schema that calls them (cached), so is this.
_ENTERING: "weakref.WeakKeyDictionary[ByteDFA, np.ndarray]" = weakref.WeakKeyDictionary()


def _entering_bytes(callee: ByteDFA) -> np.ndarray:
    """bool ``[256]``: the bytes on which some move of ``callee`` completes one of its values
    from a state where it is not complete (see :meth:`TokenPDA._pop_reach`).

    Moves between complete states do not count: in the comma callee ``ws , ws`` the
    whitespace after the comma keeps its value complete, and counting those bytes made
    the reach of every schema with that callee the longest run of spaces in a token (129
    for Llama-3), so rows stopped being shared between stacks that differ below the top
    frame."""
    found = _ENTERING.get(callee)
    if found is None:
        moves = callee.trans >= 0
        moves[callee.accepting] = False
        ends = np.zeros_like(moves)
        ends[moves] = callee.accepting[callee.trans[moves]]
        found = _ENTERING.setdefault(callee, ends.any(axis=0))
    return found


def _most_bytes_in_a_token(info, trie: TokenTrie, wanted: np.ndarray) -> int:
    """The largest number of bytes from the set ``wanted`` (bool ``[256]``) in one token
    that text may hold (``trie``: ``info``'s matchable tokens), counted down the trie:
    joining the vocabulary's bytes for each new set took a millisecond, one schema in nine."""
    key = (info.hash, np.packbits(wanted).tobytes())
    found = _MOST_BYTES.get(key)
    if found is None:
        from ._kernels import most_on_a_path

        found = _MOST_BYTES[key] = int(most_on_a_path(trie.node_byte, trie.node_depth, trie.max_depth,
                                                      wanted.astype(np.int32)))
    return found


@dataclass(frozen=True)
class CountedCallee:
    """A callee whose middle is one loop that counts its units outside the table.

    ``dfa`` reads the whole value; its states ``[loop_first, loop_stop)`` are the
    loop, which reads any number of units (encoded characters).  ``exits`` says,
    per loop state, whether a unit has just ended there: -1 if not, else where the
    text goes once the count reaches ``exit_at`` (the same place in the first of
    the eager copies that end at the bound).  The loop is entered, on a unit's end,
    with ``entry`` units read, and the value holds at most ``high`` units.  ``margin``
    is how many bytes a token may read without the count mattering (the copies after
    the exit hold that many units): the loop's rows ignore the count, and a longer
    token is checked against it near the exit (:mod:`.counted_loops`), which needs
    the loop to span the longest token (``exit_at - entry``).  A plain string's loop is one character that
    returns to its start; a pattern's is the product of its automaton with the
    character.  An empty loop (``loop_first == loop_stop``) makes an eager callee.
    """

    dfa: ByteDFA
    loop_first: int
    loop_stop: int
    exits: tuple[int, ...]
    entry: int
    exit_at: int
    margin: int
    high: int

    def __post_init__(self) -> None:
        if len(self.exits) != self.loop_stop - self.loop_first:
            raise ValueError("a counted callee needs one exit (or -1) per loop state")
        if self.loop_first < self.loop_stop and not (self.entry < self.exit_at <= self.high and max(self.exits) >= 0):
            raise ValueError("a counted callee's loop must end units and be entered below its exit count")

    @property
    def loops(self) -> bool:
        return self.loop_first < self.loop_stop


def _stacked(blocks: Sequence[ByteDFA], offsets: Sequence[int],
             symbols: Sequence[int]) -> tuple[np.ndarray, np.ndarray]:
    """The blocks' tables one after another, each renumbered to its rows, without their
    call moves, and ``call_ret``: where the text goes on after a value of each callee in
    ``symbols`` (one column each), called at each state.  Symbols are never text (a
    <0xFF> byte token must not call), so no move on one stays in the table.

    Raises ValueError for a call on a symbol no callee in ``symbols`` stands for.
    """
    table = np.empty((offsets[-1], 256), dtype=np.int32)
    call_ret = np.full((offsets[-1], len(symbols)), -1, dtype=np.int32)
    narrow_column = np.full(len(CALL_SYMBOLS), -1, dtype=np.int64)  # call_ret's column per symbol
    wide_column = np.full(len(WIDE_SYMBOLS), -1, dtype=np.int64)
    for column, symbol in enumerate(symbols):
        if symbol in WIDE_SYMBOLS:
            wide_column[symbol - WIDE_SYMBOLS[0]] = column
        else:
            narrow_column[symbol - _FIRST_SYMBOL] = column
    unknown = 0
    for block, lo in zip(blocks, offsets):
        unknown |= place_block(table, _kernel_arrays(block.trans, block.accepting)[0], lo, narrow_column,
                               _FIRST_SYMBOL, call_ret)
    missing = [hex(symbol) for j, symbol in enumerate(CALL_SYMBOLS) if unknown >> j & 1]
    states, wide_symbols, rets = wide_call_arrays(table)
    columns = wide_column[wide_symbols - WIDE_SYMBOLS[0]]
    missing += sorted({hex(symbol) for symbol in wide_symbols[columns < 0].tolist()})
    if missing:
        raise ValueError(f"the DFA calls symbols no callee stands for: {', '.join(missing)}")
    call_ret[states, columns] = rets
    table[states, WIDE_CALL] = -1  # (the id bytes after it are then never reached)
    return table, call_ret


#: Closures a :class:`PushdownDFA` remembers (by configurations) before it starts afresh.
MAX_CLOSURES = 100_000


class ByteReader:
    """Reading whole texts for what steps byte by byte: ``start``, ``step`` (a falsy
    state once the text left the language) and ``is_accepting``."""

    def walk(self, state, data: bytes):
        """The state after ``data``, or None when it leaves the language."""
        for byte in data:
            state = self.step(state, byte)
            if not state:
                return None
        return state

    def matches(self, data: bytes) -> bool:
        state = self.walk(self.start, data)
        return state is not None and self.is_accepting(state)

    def is_prefix(self, data: bytes) -> bool:
        return self.walk(self.start, data) is not None


class PushdownDFA(ByteReader):
    """A DFA whose call moves call callees, read byte by byte.

    The automata are laid out as one table: ``dfa``'s states first, then the
    any-value callee's (:data:`CALL`; its own calls recurse into itself), then the
    recursive callees' (``recursive[symbol]``, on counted symbols the counted callees
    leave; any automaton may call them, themselves included), then each counted
    callee's (symbol ``counted_symbols[j]``, by default ``COUNTED_SYMBOLS[j]``, calls
    ``counted[j]``).  A
    configuration is a tuple ``(return states..., current state)``; a state of
    this automaton is a sorted tuple of the configurations the text so far can be
    in (several when it is ambiguous).  A text is complete when some configuration
    is a lone accepting state of ``dfa``.  Inside a counted loop the current state
    is *virtual*: ``state + stride * (units read + 1)`` (``stride`` is the table's
    size), and :meth:`real` gives the table's state back.
    """

    def __init__(self, dfa: ByteDFA, callee: ByteDFA | None, counted: Sequence[CountedCallee] = (),
                 recursive: Mapping[int, ByteDFA] | None = None, counted_symbols: Sequence[int] | None = None) -> None:
        recursive = dict(recursive or {})
        if len(counted) > len(COUNTED_SYMBOLS):
            raise ValueError(f"at most {len(COUNTED_SYMBOLS)} counted callees, got {len(counted)}")
        counted_symbols = tuple(COUNTED_SYMBOLS[:len(counted)] if counted_symbols is None else counted_symbols)
        if len(counted_symbols) != len(counted) or len(set(counted_symbols)) != len(counted) \
                or not set(counted_symbols) <= set(COUNTED_SYMBOLS):
            raise ValueError(f"each counted callee needs its own counted symbol, got {[hex(s) for s in counted_symbols]}")
        clashing = [hex(s) for s in recursive
                    if s not in WIDE_SYMBOLS and (s not in COUNTED_SYMBOLS or s in counted_symbols)]
        if clashing:
            raise ValueError(f"recursive callees need counted symbols the counted ones leave: {', '.join(clashing)}")
        self.dfa = dfa
        self.callee = callee
        self.counted = tuple(counted)
        self.recursive = recursive
        symbols = ([CALL] if callee is not None else []) + list(recursive) + list(counted_symbols)
        blocks = [dfa] + ([callee] if callee is not None else []) + list(recursive.values()) + [c.dfa for c in counted]
        offsets = np.cumsum([0] + [b.num_states for b in blocks]).tolist()
        #: call_ret[s, c]: where the text goes on after a value of callee c called at s (-1: no call).
        table, self.call_ret = _stacked(blocks, offsets, symbols)
        #: The table rows ``[lo, hi)`` of each callee, by its symbol.
        self.blocks = {symbol: (offsets[k + 1], offsets[k + 2]) for k, symbol in enumerate(symbols)}
        #: The start state of each callee, by column of ``call_ret``.
        self.callee_starts = np.array([off + b.start for b, off in zip(blocks[1:], offsets[1:-1])], dtype=np.int32)
        #: >= 0 where a state calls some callee (the guard of the trie walks).
        self.calls = (self.call_ret.max(axis=1) if symbols else np.full(len(table), -1)).astype(np.int32)
        self.trans = table  # without the call moves (see _stacked)
        self.accepting = np.concatenate([b.accepting for b in blocks])
        for start in self.callee_starts.tolist():
            if self.calls[start] >= 0 or self.accepting[start]:
                raise ValueError("a callee must start with a byte (its start state can neither call nor accept)")
        self.stride = int(table.shape[0])
        #: Per calling state, its (return state, callee start) pairs: read from ``call_ret``
        #: on first use (a large schema's separators are calls at thousands of states).
        self._calls_of: dict[int, tuple] = {}
        self._accept_list = self.accepting.tolist()
        self._closures = BoundedMemo(MAX_CLOSURES)  # configurations -> their closure
        self._loops: list[tuple[int, int]] = []  # (entry, exit_at) per counted callee
        #: Per state: the index in ``counted`` of its counted loop, or -1 (None: no loops).
        self.loop_of: list[int] | None = None
        self._exit_of: list[int] = []  # per state: where a unit ending there exits its loop (-1: none)
        #: The table rows ``[lo, hi)`` of each counted callee's loop.
        self.loop_rows: list[tuple[int, int]] = []
        #: 1 at the loop states where a unit has just ended (the count goes up on arrival).
        self.unit_ends = np.zeros(self.stride, dtype=np.int64)
        if counted:
            loop_of = np.full(self.stride, -1, dtype=np.int64)
            exit_of = np.full(self.stride, -1, dtype=np.int64)
            for j, (c, off) in enumerate(zip(counted, offsets[len(blocks) - len(counted):-1])):
                loop_of[off + c.loop_first:off + c.loop_stop] = j
                exits = np.asarray(c.exits, dtype=np.int64)
                exit_of[off + c.loop_first:off + c.loop_stop] = np.where(exits >= 0, exits + off, -1)
                self.unit_ends[off + c.loop_first:off + c.loop_stop] = exits >= 0
                self._loops.append((c.entry, c.exit_at))
                self.loop_rows.append((off + c.loop_first, off + c.loop_stop))
            self.loop_of, self._exit_of = loop_of.tolist(), exit_of.tolist()

    def real(self, state: int) -> int:
        """The table's state of a configuration's current state (virtual inside a counted loop)."""
        return state % self.stride

    @property
    def num_states(self) -> int:
        return int(self.trans.shape[0])

    @property
    def start(self) -> tuple:
        return ((int(self.dfa.start),),)

    def closure(self, configs: tuple) -> tuple:
        """``configs`` plus everything reachable by calls and returns (no byte read).

        Memoised: a reader steps one state by many bytes (a mask's suspects begin with
        a quote, a comma, a brace...), each step from the same closure."""
        found = self._closures.get(configs)
        if found is None:
            found = self._closures.remember(configs, tuple(self._closure(configs)))
        return found

    def _closure(self, configs: tuple) -> list[tuple]:
        """:meth:`closure`, computed."""
        acc, stride = self._accept_list, self.stride
        out: list[tuple] = []
        seen: set[tuple] = set()
        todo = list(configs)
        while todo:
            config = todo.pop()
            if config in seen:
                continue
            seen.add(config)
            out.append(config)
            cur = config[-1]
            if cur >= stride:  # inside a counted loop: no call, no end
                continue
            for ret, start in self._calls_at(cur):
                todo.append(config[:-1] + (ret, start))
            if len(config) > 1 and acc[cur]:
                todo.append(config[:-1])
        return out

    def _calls_at(self, state: int) -> tuple:
        """The (return state, callee start) pairs of the calls ``state`` may make (by callee)."""
        found = self._calls_of.get(state)
        if found is None:
            if self.calls[state] < 0:
                found = ()
            else:
                row = self.call_ret[state]
                columns = np.flatnonzero(row >= 0)
                found = tuple(zip(row[columns].tolist(), self.callee_starts[columns].tolist()))
            self._calls_of[state] = found
        return found

    def step(self, state: tuple, byte: int) -> tuple:
        """The state after one byte (empty: the text left the language)."""
        return self.move(self.closure(state), byte)

    def move(self, closed, byte: int) -> tuple:
        """The state after one byte from configurations already closed (:meth:`closure`):
        for readers that drop some of them first, which a closure must not bring back."""
        item, loop_of, stride = self.trans.item, self.loop_of, self.stride
        moved = set()
        for config in closed:
            cur = config[-1]
            nxt = item(cur % stride, byte)
            if nxt >= 0:
                if loop_of is not None and loop_of[nxt] >= 0:
                    nxt = self._counted(cur, nxt)
                moved.add(config[:-1] + (nxt,))
        return tuple(sorted(moved))

    def _counted(self, cur: int, nxt: int) -> int:
        """The virtual state for table state ``nxt`` of a counted loop, reached from ``cur``:
        a unit completes on each arrival where one ends (``exits``)."""
        entry, exit_at = self._loops[self.loop_of[nxt]]
        exit_to = self._exit_of[nxt]
        if cur >= self.stride:  # within the loop (loops never lead into one another)
            count = cur // self.stride - 1 + (exit_to >= 0)
        else:  # entered, on a unit's end
            count = entry
        if exit_to >= 0 and count >= exit_at:
            return exit_to
        return nxt + self.stride * (count + 1)

    def is_accepting(self, state: tuple) -> bool:
        acc = self._accept_list
        return any(len(c) == 1 and acc[c[0]] for c in self.closure(state))


class TokenPDA(EngineBase):
    """Token masks and transitions of a :class:`PushdownDFA`.

    Thread-safe like :class:`~.token_dfa.TokenDFA` (rows are published with
    ``dict.setdefault``).
    """

    def __init__(self, automaton: PushdownDFA, info, disk: DiskCache | None = None) -> None:
        super().__init__(info, disk)
        self.automaton = automaton
        #: What reads the matcher's states (``start``, ``walk``, ``is_accepting``): the
        #: automaton itself, or a reader that keeps more beside its configurations
        #: (:class:`~.unique_items.UniqueItemsAutomaton`).
        self.reader = automaton
        longest = self.trie.max_depth
        short = [c for c in automaton.counted if c.loops and c.margin < longest]
        for counted in short:
            if counted.exit_at - counted.entry < longest:
                raise ValueError(f"a counted loop with a margin ({counted.margin}) below the longest token "
                                 f"({longest} bytes) must span it (it spans {counted.exit_at - counted.entry})")
        self._virtual = bool(automaton.counted)  # states may hold counts (rows are keyed without them)
        #: Tokens longer than some loop's margin, checked against the count near its exit.
        self._long = LongTokens(automaton, info, longest) if short else None
        self.reach = self._pop_reach()
        self._rows: dict = {}
        self._memo = new_loop_memo(automaton.num_states)
        self._exits = new_exit_memo(automaton.num_states)

    def _pop_reach(self) -> int:
        """How many frames one token can pop at most: one per byte that completes a callee's
        value (:func:`_entering_bytes`), plus one (all of them when a return state is itself
        complete).

        After the first pop, the next frame's value resumes at its return state, which is
        not complete (else the reach is unbounded), so it pops only once some byte of the
        token has moved it from an incomplete state into a complete one: each later pop
        takes a byte of its own from that set.  A byte between two complete states (the
        whitespace after a comma) never lets a frame pop that could not pop before it."""
        pda = self.automaton
        returns = pda.call_ret[pda.call_ret >= 0]
        if pda.accepting[returns].any():
            return 1 << 30
        entering = np.zeros(256, dtype=bool)
        for block in [pda.callee, *pda.recursive.values()] + [c.dfa for c in pda.counted]:
            if block is not None:
                entering |= _entering_bytes(block)
        return _most_bytes_in_a_token(self.info, self.trie, entering) + 1

    # -- matcher protocol ------------------------------------------------------
    @property
    def initial_state(self) -> tuple:
        return self.reader.start

    def is_accepting(self, state: tuple) -> bool:
        return self.reader.is_accepting(state)

    def advance_bytes(self, state: tuple, data: bytes) -> tuple | None:
        return self.reader.walk(state, data)

    def advance_token(self, state: tuple, token_id: int) -> tuple | None:
        """State after a non-EOS token, or None when the token is not allowed there."""
        if not self.is_matchable(token_id):
            return None
        return self.reader.walk(state, self._token_bytes[token_id])

    def mask_words(self, state: tuple) -> np.ndarray:
        """The packed uint32 mask of ``state`` (EOS bits included when accepting); do not modify.

        Rows are keyed without loop counts, except where a count is within a long token of
        its loop's exit (:mod:`.counted_loops`): those keep their counts (at most as many per
        loop state as the longest token has bytes)."""
        if self._virtual and not (self._long is not None and self._long.near_bound(state)):
            state = self._without_counts(state)
        row = self._rows.get(state)
        if row is None:
            if len(state) == 1:
                row = self._counted_row(state[0])
            else:
                row = np.bitwise_or.reduce([self._counted_row(c) for c in state])
            if self.automaton.is_accepting(state):
                row = row | self._eos_words
            row = self._rows.setdefault(state, row)
        return row

    def _counted_row(self, config: tuple) -> np.ndarray:
        """:meth:`_config_row`, for a configuration inside a counted loop less the long tokens
        that would pass its string's bound."""
        stride = self.automaton.stride
        if config[-1] < stride:
            return self._config_row(config)
        row = self._config_row(config[:-1] + (config[-1] % stride,))
        over = self._long.overflowing(config)
        if over.size:
            row = row.copy()
            np.bitwise_and.at(row, over >> 5, ~(np.uint32(1) << (over & 31).astype(np.uint32)))
        return row

    def _without_counts(self, state: tuple) -> tuple:
        """``state`` with the table's states for virtual ones: no token sees a loop's count."""
        stride = self.automaton.stride
        for config in state:
            if config[-1] >= stride:
                return tuple(sorted({c[:-1] + (c[-1] % stride,) for c in state}))
        return state

    def forced_bytes(self, state: tuple) -> bytes:
        """The bytes every continuation from ``state`` must start with (jump-forward)."""
        pda = self.automaton
        out = bytearray()
        while not pda.is_accepting(state) and len(out) < MAX_FORCED_BYTES:
            live = np.zeros(256, dtype=bool)
            for config in pda.closure(state):
                live |= pda.trans[pda.real(config[-1])] >= 0
            (candidates,) = np.nonzero(live)
            if len(candidates) != 1:  # every state is live, so one byte with a move is forced
                break
            out.append(int(candidates[0]))
            state = pda.step(state, int(candidates[0]))
        return bytes(out)

    # -- rows ------------------------------------------------------------------
    def _config_row(self, config: tuple) -> np.ndarray:
        """The tokens viable from one configuration (no EOS), memoised by what a token can see."""
        key = ("config",) + config[-self.reach - 1:]
        row = self._rows.get(key)
        if row is None:
            row = self._rows.setdefault(key, self._walk(key[1:]))
        return row

    def _walk(self, config: tuple) -> np.ndarray:
        from ._kernels import UTF8, walk_pda

        pda = self.automaton
        words = np.zeros(self.num_words, dtype=np.uint32)
        frames = np.asarray(config[:-1], dtype=np.int32)

        def walk(trie: TokenTrie, rest: bool = False) -> int:
            ascii_below, flags, height = trie.summaries
            return int(walk_pda(pda.trans, pda.calls, pda.call_ret, pda.accepting, pda.callee_starts, frames, config[-1],
                                trie.node_byte, trie.node_depth, trie.node_skip, trie.node_tok_ptr, trie.tok_ids,
                                ascii_below, flags, height, trie.max_depth, *self._memo, UTF8, words, rest))

        if self._free_string_walk(pda.trans, config[-1], self._exits, words, pda.calls, pda.accepting, walk):
            return words
        trie = self.trie
        if trie.ordinary.take(pda.trans, config[-1], self._memo, words, (pda.calls, pda.accepting)) is not None:
            trie = trie.ordinary.rest  # inside a string: the ordinary tokens are set, walk the rest
        found = walk(trie, trie is not self.trie)
        if found < 0:  # too ambiguous for the kernel's fixed configuration sets: decide each token here
            words[:] = 0
            for token in self.trie.tok_ids.tolist():
                if self.is_matchable(token) and pda.walk((config,), self._token_bytes[token]) is not None:
                    words[token >> 5] |= np.uint32(1 << (token & 31))
        return words

    def memory_bytes(self) -> int:
        """Bytes held by the automata and the memoised rows (the trie is shared per vocabulary)."""
        rows = sum(r.nbytes for r in self._rows.values()) + sum(m.nbytes for m in self._memo) + self._exits.nbytes
        pda = self.automaton
        return int(pda.trans.nbytes + pda.call_ret.nbytes + pda.calls.nbytes + pda.accepting.nbytes + rows)


#: The matcher states whose whole masks a :class:`ReaderTokenPDA` remembers (16 KB each
#: for a 128k vocabulary, besides the rows they are cut from): documents revisit the
#: states of the ones before, and cutting a mask again at each visit (a 16 KB copy, the
#: state hashed twice) made the median any-order fill 1.3 µs against 1.0 read back whole.
MAX_REMEMBERED_MASKS = 1_024


class ReaderTokenPDA(TokenPDA):
    """A :class:`TokenPDA` whose matcher states are ``(configurations, record)``: its
    ``reader`` keeps a record of the text beside the configurations and refuses more
    than the automaton does (:mod:`.unique_items`, :mod:`.member_sets`).  Subclasses
    cut a state's mask from its configurations' row (:meth:`_cut_mask`); the latest
    masks are remembered whole."""

    def __init__(self, automaton: PushdownDFA, info, disk: DiskCache | None = None) -> None:
        super().__init__(automaton, info, disk)
        self._masks = BoundedMemo(MAX_REMEMBERED_MASKS)  # state -> mask words

    def mask_words(self, state: tuple) -> np.ndarray:
        found = self._masks.get(state)
        if found is None:
            found = self._masks.remember(state, self._cut_mask(state))
        return found

    def _cut_mask(self, state: tuple) -> np.ndarray:
        """The mask of ``state``: its configurations' row less what the reader refuses."""
        raise NotImplementedError

    def configurations_mask(self, configs: tuple) -> np.ndarray:
        """The plain pushdown automaton's mask of ``configs`` (what the reader cuts from)."""
        return TokenPDA.mask_words(self, configs)

    def memory_bytes(self) -> int:
        rows = {id(row) for row in self._rows.values()}
        return super().memory_bytes() + sum(m.nbytes for m in self._masks.values() if id(m) not in rows)

    def forced_bytes(self, state: tuple) -> bytes:
        data = super().forced_bytes(state[0])
        while data and self.reader.walk(state, data) is None:  # forced bytes must stay viable here too
            data = data[:-1]
        return data

    def killed(self, state: tuple, suspects) -> tuple:
        """The tokens of ``suspects`` after which the reader refuses ``state``'s text, as
        :func:`cleared_bits` (``()``: none).

        The suspects are read in byte order, each from where the one before it parted:
        the reader's steps are Python, and suspects share beginnings (``",``, ``","``,
        ``",\n``...), so this takes half the steps of reading each token whole (48,874
        for 106,392 over the any-order masks of 150 median benchmark schemas)."""
        token_bytes, step = self._token_bytes, self.reader.step
        after = [state]  # after[k]: the state after the first k bytes of the token before
        before = b""
        refused = []
        for token in sorted(set(suspects), key=token_bytes.__getitem__):
            data = token_bytes[token]
            shared, most = 0, min(len(data), len(before))
            while shared < most and data[shared] == before[shared]:
                shared += 1
            del after[shared + 1:]
            current = after[-1]
            for byte in data[shared:]:
                current = step(current, byte) if current is not None else None  # once refused, refused
                after.append(current)
            before = data
            if current is None:
                refused.append(token)
        return cleared_bits(refused)


def cleared_bits(tokens) -> tuple:
    """The packed-mask words that ``tokens`` touch and the bits to keep in each (``()``: no
    token), so that clearing them is one vectorised step (a state inside a long string
    may refuse hundreds of tokens, each cleared in Python before)."""
    ids = np.fromiter(tokens, dtype=np.int64)
    if not len(ids):
        return ()
    where = np.unique(ids >> 5)
    cleared = np.zeros(len(where), dtype=np.uint32)
    np.bitwise_or.at(cleared, np.searchsorted(where, ids >> 5), (np.uint32(1) << (ids & 31).astype(np.uint32)))
    return where, ~cleared


def without_bits(words: np.ndarray, cleared: tuple) -> np.ndarray:
    """``words`` (not changed) less the bits :func:`cleared_bits` names."""
    if not cleared:
        return words
    where, keep = cleared
    words = words.copy()
    words[where] &= keep
    return words
