"""What every mask engine shares: the vocabulary trie, EOS bits, matchable tokens.

An engine implements the matcher protocol that :class:`constrain.matcher.Matcher`
drives (``initial_state``, ``is_accepting``, ``advance_token``, ``advance_bytes``,
``mask_words``, ``forced_bytes``); this base holds the vocabulary-side data so that
each engine only writes what is specific to its constraint.
"""

from __future__ import annotations

from typing import Callable

import numpy as np

from .cache import DiskCache
from .free_strings import UNKNOWN_EXIT, FreeStrings, free_strings_for
from .token_trie import TokenTrie, token_trie_for

__all__ = ["EngineBase", "new_exit_memo"]


class EngineBase:
    """Vocabulary data for an engine compiled against ``info``."""

    def __init__(self, info, disk: DiskCache | None = None) -> None:
        self.info = info
        self.trie = token_trie_for(info, disk)
        self.num_words = (info.vocab_size + 31) // 32
        self._eos_words = np.zeros(self.num_words, dtype=np.uint32)
        for eos in info.eos_token_ids:
            self._eos_words[eos >> 5] |= np.uint32(1 << (eos & 31))
        self._eos_set = frozenset(info.eos_token_ids)
        self._token_bytes = info.token_bytes
        self._matchable = self.trie.matchable

    def is_eos(self, token_id: int) -> bool:
        return token_id in self._eos_set

    def is_matchable(self, token_id: int) -> bool:
        """True for ids that can appear in constrained text (not special, padding or empty)."""
        return 0 <= token_id < self._matchable.shape[0] and bool(self._matchable[token_id])

    def eos_words(self) -> np.ndarray:
        """The mask that allows exactly the EOS tokens (after termination)."""
        return self._eos_words

    @property
    def free_strings(self) -> FreeStrings:
        """The vocabulary read from inside a free string (:mod:`.free_strings`), built on first use."""
        return free_strings_for(self.info, self.trie)

    def _free_string_walk(self, trans: np.ndarray, state: int, memo: np.ndarray, words: np.ndarray,
                          calls: np.ndarray, accepting: np.ndarray, walk_tails: Callable[[TokenTrie], int]) -> bool:
        """Where ``state`` is inside a free string (:meth:`FreeStrings.exit_of`, answers kept
        in ``memo``), OR its viable tokens into ``words``: the ones that stay inside, and
        those of the tails that ``walk_tails(trie)`` (a walk from ``state`` that returns its
        count, negative when it could not decide) finds.  False (nothing set) elsewhere."""
        strings = self.free_strings
        if strings.exit_of(trans, state, memo, calls, accepting) < 0:
            return False
        if walk_tails(strings.tails) < 0:
            words[:] = 0
            return False
        strings.words_into(words)
        return True


def new_exit_memo(num_states: int) -> np.ndarray:
    """An empty memo for :meth:`EngineBase._free_string_walk` over a table of ``num_states`` states."""
    return np.full(num_states, UNKNOWN_EXIT, dtype=np.int32)
