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
"""

from __future__ import annotations

import numpy as np

from .byte_dfa import ByteDFA, _NFA, _minimize, _prune_dead, _subset_construction
from .cache import DiskCache
from .engine_base import EngineBase
from .token_dfa import MAX_FORCED_BYTES
from .token_trie import new_loop_memo

__all__ = ["CALL", "call_marker", "has_calls", "expand_calls", "PushdownDFA", "TokenPDA"]

#: The byte that stands for "one value of the callee" in a DFA with calls.
CALL = 0xFF


def call_marker() -> ByteDFA:
    """The DFA of the one-symbol text :data:`CALL` (embed it where a callee value goes)."""
    trans = np.full((2, 256), -1, dtype=np.int32)
    trans[0, CALL] = 1
    return ByteDFA(trans, np.array([False, True]), 0)


def has_calls(dfa: ByteDFA) -> bool:
    return bool((dfa.trans[:, CALL] >= 0).any())


def expand_calls(dfa: ByteDFA, callee: ByteDFA) -> ByteDFA:
    """``dfa`` with every :data:`CALL` move replaced by a copy of ``callee`` (which has none).

    For products, which are exact only over real bytes.  One copy per call move,
    then determinised and minimised.
    """
    if not has_calls(dfa):
        return dfa
    nfa = _NFA()
    base = nfa.new_states(dfa.num_states)
    final = nfa.new_state()
    runs = dfa.run_table().copy()
    runs = runs[runs[:, 1] != CALL]
    runs[:, 2] = np.minimum(runs[:, 2], CALL - 1)  # a run ending at 0xFF stops before it
    runs[:, 0] += base
    runs[:, 3] += base
    nfa.edge_blocks.append(runs)
    for state in np.flatnonzero(dfa.accepting).tolist():
        nfa.add_eps(base + state, final)
    for state in np.flatnonzero(dfa.trans[:, CALL] >= 0).tolist():
        nfa.build_automaton(callee, base + state, base + int(dfa.trans[state, CALL]))
    trans, labels, starts = _subset_construction(nfa, (base + dfa.start,), {final: 0})
    pruned = _prune_dead(trans, labels, starts)
    assert pruned is not None  # the callee is not empty, so nothing that was live dies
    trans, labels, (start,) = _minimize(*pruned)
    return ByteDFA(np.ascontiguousarray(trans, dtype=np.int32), labels >= 0, start)


_MOST_BYTES: dict[tuple[str, bytes], int] = {}


def _most_bytes_in_a_token(info, wanted: np.ndarray) -> int:
    """The largest number of bytes from the set ``wanted`` (bool ``[256]``) in one token."""
    key = (info.hash, np.packbits(wanted).tobytes())
    found = _MOST_BYTES.get(key)
    if found is None:
        blobs = [data for data in info.token_bytes if data]
        flat = np.frombuffer(b"".join(blobs), dtype=np.uint8)
        starts = np.zeros(len(blobs), dtype=np.int64)
        np.cumsum([len(data) for data in blobs[:-1]], out=starts[1:])
        found = int(np.add.reduceat(wanted[flat].astype(np.int64), starts).max()) if blobs else 0
        _MOST_BYTES[key] = found
    return found


class PushdownDFA:
    """A DFA whose :data:`CALL` moves call ``callee``, read byte by byte.

    The two automata are laid out as one table: ``dfa``'s states first, then the
    callee's (its own calls recurse into itself).  A configuration is a tuple
    ``(return states..., current state)``; a state of this automaton is a sorted
    tuple of the configurations the text so far can be in (several when it is
    ambiguous).  A text is complete when some configuration is a lone accepting
    state of ``dfa``.
    """

    def __init__(self, dfa: ByteDFA, callee: ByteDFA) -> None:
        self.dfa = dfa
        self.callee = callee
        n = dfa.num_states
        callee_trans = np.where(callee.trans >= 0, callee.trans + n, -1).astype(np.int32)
        table = np.concatenate([dfa.trans, callee_trans])
        self.call_ret = np.ascontiguousarray(table[:, CALL])
        self.trans = table
        self.trans[:, CALL] = -1  # byte 0xFF itself is never text (a <0xFF> byte token must not call)
        self.accepting = np.concatenate([dfa.accepting, callee.accepting])
        self.callee_start = n + int(callee.start)
        if self.call_ret[self.callee_start] >= 0 or self.accepting[self.callee_start]:
            raise ValueError("a callee must start with a byte (its start state can neither call nor accept)")
        self._ret_list = self.call_ret.tolist()
        self._accept_list = self.accepting.tolist()

    @property
    def num_states(self) -> int:
        return int(self.trans.shape[0])

    @property
    def start(self) -> tuple:
        return ((int(self.dfa.start),),)

    def closure(self, configs) -> list[tuple]:
        """``configs`` plus everything reachable by calls and returns (no byte read)."""
        ret, acc, callee = self._ret_list, self._accept_list, self.callee_start
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
            if ret[cur] >= 0:
                todo.append(config[:-1] + (ret[cur], callee))
            if len(config) > 1 and acc[cur]:
                todo.append(config[:-1])
        return out

    def step(self, state: tuple, byte: int) -> tuple:
        """The state after one byte (empty: the text left the language)."""
        item = self.trans.item
        moved = set()
        for config in self.closure(state):
            nxt = item(config[-1], byte)
            if nxt >= 0:
                moved.add(config[:-1] + (nxt,))
        return tuple(sorted(moved))

    def walk(self, state: tuple, data: bytes) -> tuple | None:
        """The state after ``data``, or None when it leaves the language."""
        for byte in data:
            state = self.step(state, byte)
            if not state:
                return None
        return state

    def is_accepting(self, state: tuple) -> bool:
        acc = self._accept_list
        return any(len(c) == 1 and acc[c[0]] for c in self.closure(state))

    def matches(self, data: bytes) -> bool:
        state = self.walk(self.start, data)
        return state is not None and self.is_accepting(state)

    def is_prefix(self, data: bytes) -> bool:
        return self.walk(self.start, data) is not None


class TokenPDA(EngineBase):
    """Token masks and transitions of a :class:`PushdownDFA`.

    Thread-safe like :class:`~.token_dfa.TokenDFA` (rows are published with
    ``dict.setdefault``).
    """

    def __init__(self, automaton: PushdownDFA, info, disk: DiskCache | None = None) -> None:
        super().__init__(info, disk)
        self.automaton = automaton
        self.reach = self._pop_reach()
        self._rows: dict = {}
        self._memo = new_loop_memo(automaton.num_states)

    def _pop_reach(self) -> int:
        """How many frames one token can pop at most: one per byte entering a complete callee
        value, plus one (all of them when a return state is itself complete)."""
        pda = self.automaton
        returns = pda.call_ret[pda.call_ret >= 0]
        if pda.accepting[returns].any():
            return 1 << 30
        block = pda.trans[pda.dfa.num_states:]
        entering = np.zeros(256, dtype=bool)
        targets = block[block >= 0]
        cols = np.nonzero(block >= 0)[1]
        entering[np.unique(cols[pda.accepting[targets]])] = True
        return _most_bytes_in_a_token(self.info, entering) + 1

    # -- matcher protocol ------------------------------------------------------
    @property
    def initial_state(self) -> tuple:
        return self.automaton.start

    def is_accepting(self, state: tuple) -> bool:
        return self.automaton.is_accepting(state)

    def advance_bytes(self, state: tuple, data: bytes) -> tuple | None:
        return self.automaton.walk(state, data)

    def advance_token(self, state: tuple, token_id: int) -> tuple | None:
        """State after a non-EOS token, or None when the token is not allowed there."""
        if not self.is_matchable(token_id):
            return None
        return self.automaton.walk(state, self._token_bytes[token_id])

    def mask_words(self, state: tuple) -> np.ndarray:
        """The packed uint32 mask of ``state`` (EOS bits included when accepting); do not modify."""
        row = self._rows.get(state)
        if row is None:
            if len(state) == 1:
                row = self._config_row(state[0])
            else:
                row = np.bitwise_or.reduce([self._config_row(c) for c in state])
            if self.is_accepting(state):
                row = row | self._eos_words
            row = self._rows.setdefault(state, row)
        return row

    def forced_bytes(self, state: tuple) -> bytes:
        """The bytes every continuation from ``state`` must start with (jump-forward)."""
        pda = self.automaton
        out = bytearray()
        while not pda.is_accepting(state) and len(out) < MAX_FORCED_BYTES:
            live = np.zeros(256, dtype=bool)
            for config in pda.closure(state):
                live |= pda.trans[config[-1]] >= 0
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
        trie = self.trie
        if trie.ordinary.take(pda.trans, config[-1], self._memo, words, (pda.call_ret, pda.accepting)) is not None:
            trie = trie.ordinary.rest  # inside a string: the ordinary tokens are set, walk the rest
        ascii_below, flags, height = trie.summaries
        frames = np.asarray(config[:-1], dtype=np.int32)
        found = walk_pda(pda.trans, pda.call_ret, pda.accepting, pda.callee_start, frames, config[-1],
                         trie.node_byte, trie.node_depth, trie.node_skip, trie.node_tok_ptr, trie.tok_ids,
                         ascii_below, flags, height, trie.max_depth, *self._memo, UTF8, words, trie is not self.trie)
        if found < 0:  # too ambiguous for the kernel's fixed configuration sets: decide each token here
            words[:] = 0
            for token in self.trie.tok_ids.tolist():
                if self.advance_token((config,), token) is not None:
                    words[token >> 5] |= np.uint32(1 << (token & 31))
        return words

    def memory_bytes(self) -> int:
        """Bytes held by the automata and the memoised rows (the trie is shared per vocabulary)."""
        rows = sum(r.nbytes for r in self._rows.values()) + sum(m.nbytes for m in self._memo)
        pda = self.automaton
        return int(pda.trans.nbytes + pda.call_ret.nbytes + pda.accepting.nbytes + rows)
