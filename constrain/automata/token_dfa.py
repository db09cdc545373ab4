"""Token-level masks for regular languages: a byte DFA walked against the token trie.

:class:`TokenDFA` is the engine behind a compiled regex.  Its matcher state is just
the DFA state (an ``int``).  For a state, the allowed-token bitmask is computed by one
numba walk over the vocabulary trie (:func:`constrain.automata._kernels.walk_dfa`,
which sets whole subtrees at once where the DFA loops on a state, as inside a free
JSON string: ~0.25 ms instead of ~3 ms for 128k tokens) and memoised: the next time any sequence reaches that state, the mask is a copy of
a stored row (about a microsecond for 128k tokens).  Rows are built lazily because
most states of a large DFA are never visited; :meth:`TokenDFA.precompute` builds
them all when the caller knows it will need them (DINGO, benchmarks).

Memory: one row is ``ceil(vocab_size / 32) * 4`` bytes (16 KiB for 128k tokens),
so the store is bounded by ``num_states`` rows and reported by :meth:`memory_bytes`.
"""

from __future__ import annotations

import numpy as np

from .byte_dfa import ByteDFA
from .cache import DiskCache
from .engine_base import EngineBase, new_exit_memo
from .token_trie import new_loop_memo

__all__ = ["TokenDFA"]

# Forced strings longer than this are cut (a DFA loop like (ab)+ forces forever).
MAX_FORCED_BYTES = 4096

_NO_CALLS = np.empty(0, dtype=np.int32)  # a regular table calls nothing


class TokenDFA(EngineBase):
    """Token masks and transitions of a :class:`ByteDFA` under one vocabulary.

    Thread-safe: rows are computed outside any lock and published with
    ``dict.setdefault``, so two threads racing on one state compute the same row.
    """

    def __init__(self, dfa: ByteDFA, info, disk: DiskCache | None = None) -> None:
        super().__init__(info, disk)
        self.dfa = dfa
        self._rows: dict[int, np.ndarray] = {}
        self._next_rows: dict[int, np.ndarray] = {}
        self._loops: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None
        self._exits: np.ndarray | None = None  # made with _loops

    # -- matcher protocol ------------------------------------------------------
    @property
    def initial_state(self) -> int:
        return self.dfa.start

    def is_accepting(self, state: int) -> bool:
        return bool(self.dfa.accepting[state])

    def advance_token(self, state: int, token_id: int) -> int | None:
        """State after a non-EOS token, or None when the token is not allowed there."""
        if not self.is_matchable(token_id):
            return None
        nxt = self.dfa.walk(state, self._token_bytes[token_id])
        return nxt if nxt >= 0 else None

    def advance_bytes(self, state: int, data: bytes) -> int | None:
        nxt = self.dfa.walk(state, data)
        return nxt if nxt >= 0 else None

    def mask_words(self, state: int) -> np.ndarray:
        """The packed uint32 mask of ``state`` (EOS bits included when accepting); do not modify."""
        row = self._rows.get(state)
        if row is None:
            row = self._rows.setdefault(state, self._compute_row(state))
        return row

    def forced_bytes(self, state: int) -> bytes:
        """The bytes every continuation from ``state`` must start with (jump-forward)."""
        rows = self.dfa._python_rows()
        out = bytearray()
        while not self.dfa.accepting[state] and len(out) < MAX_FORCED_BYTES:
            live = [b for b, nxt in enumerate(rows[state]) if nxt >= 0]
            if len(live) != 1:
                break
            out.append(live[0])
            state = rows[state][live[0]]
        return bytes(out)

    # -- tables ----------------------------------------------------------------
    def _walk(self, state: int, words: np.ndarray, next_row: np.ndarray) -> None:
        """One numba trie walk from ``state`` (see :func:`~._kernels.walk_dfa`), memo kept;
        inside a free string, the vocabulary's reading of one (:mod:`.free_strings`)."""
        memo = self._loops
        if memo is None:  # the exits first: a thread that sees the loops' memo sees them too
            self._exits = new_exit_memo(self.dfa.num_states)
            memo = self._loops = new_loop_memo(self.dfa.num_states)
        trans = self.dfa.trans
        if not next_row.shape[0] and self._free_string_walk(
                trans, state, self._exits, words, _NO_CALLS, self.dfa.accepting,
                lambda tails: tails.walk_dfa(trans, state, words, next_row, memo, whole=True)):
            return
        self.trie.walk_dfa(trans, state, words, next_row, memo)

    def _compute_row(self, state: int) -> np.ndarray:
        words = np.zeros(self.num_words, dtype=np.uint32)
        self._walk(state, words, np.empty(0, np.int32))
        if self.dfa.accepting[state]:
            words |= self._eos_words
        return words

    def next_states(self, state: int, *, memoize: bool = True) -> np.ndarray:
        """int32 ``[vocab_size]``: the state after each token from ``state``, -1 if not allowed.

        EOS tokens map to -1 here; callers treat EOS separately through
        :meth:`is_accepting`.  Memoised like the mask rows; ``memoize=False`` computes
        a fresh row and keeps nothing (DINGO's table reads each row once, and 1,000
        kept rows of a 128k vocabulary would hold 512 MiB).
        """
        row = self._next_rows.get(state)
        if row is None:
            row = np.full(self.info.vocab_size, -1, dtype=np.int32)
            self._walk(state, np.zeros(self.num_words, dtype=np.uint32), row)
            if memoize:
                row = self._next_rows.setdefault(state, row)
        return row

    def precompute(self) -> np.ndarray:
        """Build the mask row of every state now; returns them stacked ``[states, words]``."""
        return np.stack([self.mask_words(state) for state in range(self.dfa.num_states)])

    def load_rows(self, rows: np.ndarray) -> bool:
        """Adopt rows saved from :meth:`precompute`; False (nothing changed) if the shape is off."""
        if rows.shape != (self.dfa.num_states, self.num_words) or rows.dtype != np.uint32:
            return False
        for state in range(self.dfa.num_states):
            self._rows.setdefault(state, rows[state])
        return True

    def memory_bytes(self) -> int:
        """Bytes held by the DFA and the memoised rows (the trie is shared per vocabulary)."""
        rows = sum(r.nbytes for r in self._rows.values()) + sum(r.nbytes for r in self._next_rows.values())
        rows += sum(memo.nbytes for memo in self._loops or ()) + (self._exits.nbytes if self._exits is not None else 0)
        return int(self.dfa.trans.nbytes + self.dfa.accepting.nbytes + rows)
