"""The vocabulary as a byte trie in flat preorder arrays.

Every mask computation walks this trie against an automaton: a subtree is skipped
as soon as its prefix leaves the language, so a restrictive state touches only a
few hundred nodes of a 128k-token vocabulary, and even a permissive one costs one
pass over ~400k nodes in compiled code.

Layout (``n`` nodes, root excluded, preorder):

``node_byte[i]``
    the byte on the edge into node ``i``;
``node_depth[i]``
    its depth (children of the root have depth 1);
``node_skip[i]``
    the index of the first node after ``i``'s subtree (jump there when the
    prefix is dead);
``node_tok_ptr[i]:node_tok_ptr[i+1]``
    the slice of ``tok_ids`` of tokens whose bytes end exactly at node ``i``.

Only *matchable* tokens are in the trie (see :meth:`TokenizerInfo.matchable_token_ids`):
special tokens, padding ids and tokens with no bytes can never be produced by a
constraint's text.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

import numpy as np

from .cache import DiskCache, content_key

__all__ = ["TokenTrie", "token_trie_for", "new_loop_memo"]


@dataclass(frozen=True, eq=False)
class TokenTrie:
    """Flat preorder byte trie of a vocabulary's matchable tokens."""

    node_byte: np.ndarray
    node_depth: np.ndarray
    node_skip: np.ndarray
    node_tok_ptr: np.ndarray
    tok_ids: np.ndarray
    max_depth: int

    @property
    def matchable(self) -> np.ndarray:
        """bool ``[max token id + 1]``: True for the ids in the trie (computed once)."""
        found = self.__dict__.get("_matchable")
        if found is None:
            found = np.zeros(int(self.tok_ids.max()) + 1 if len(self.tok_ids) else 0, dtype=bool)
            found[self.tok_ids] = True
            self.__dict__["_matchable"] = found
        return found

    @property
    def summaries(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Per node, the ASCII bytes inside its subtree, its UTF-8 flags and height (computed once).

        See :func:`~._kernels.subtree_summaries`: 21 bytes a node, which let a walk
        take a whole subtree at once where the automaton loops on all of it
        (:func:`~._kernels.walk_dfa_bulk`).
        """
        found = self.__dict__.get("_summaries")
        if found is None:
            from ._kernels import UTF8, subtree_summaries

            found = subtree_summaries(self.node_byte, self.node_depth, self.max_depth, UTF8)
            self.__dict__["_summaries"] = found
        return found

    def walk_dfa(self, trans: np.ndarray, state: int, out_words: np.ndarray, out_next: np.ndarray,
                 memo: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None) -> int:
        """OR into ``out_words`` the tokens viable from ``state`` of the byte DFA ``trans``.

        See :func:`~._kernels.walk_dfa` (``out_next``: empty, or one int32 slot per
        token for its end state).  ``memo`` is :func:`new_loop_memo` of the DFA,
        kept by callers that walk the same DFA again; a fresh one is used otherwise.
        Returns the number of viable tokens.
        """
        from ._kernels import UTF8, walk_dfa

        ascii_below, flags, height = self.summaries
        words_memo, step_bytes, alive_bytes = memo if memo is not None else new_loop_memo(trans.shape[0])
        return int(walk_dfa(trans, state, self.node_byte, self.node_depth, self.node_skip, self.node_tok_ptr,
                            self.tok_ids, ascii_below, flags, height, self.max_depth, words_memo, step_bytes,
                            alive_bytes, UTF8, out_words, out_next))

    @property
    def total_token_bytes(self) -> int:
        """Sum of the lengths of all tokens in the trie (an upper bound on per-walk outputs)."""
        return int(np.sum(self.node_depth.astype(np.int64) * np.diff(self.node_tok_ptr)))

    @property
    def num_nodes(self) -> int:
        return int(self.node_byte.shape[0])

    @classmethod
    def from_token_bytes(cls, token_bytes, token_ids) -> "TokenTrie":
        """Build the trie of ``token_bytes[i]`` for each ``i`` in ``token_ids``.

        Cost: one sort of the tokens' bytes in Python, then a linear numba pass.
        """
        from ._kernels import build_trie

        ids = np.asarray(token_ids, dtype=np.int64)
        order = sorted(ids.tolist(), key=token_bytes.__getitem__)
        blobs = [token_bytes[i] for i in order]
        lengths = np.fromiter((len(b) for b in blobs), dtype=np.int64, count=len(blobs))
        offsets = np.zeros(len(blobs) + 1, dtype=np.int64)
        np.cumsum(lengths, out=offsets[1:])
        flat = np.frombuffer(b"".join(blobs), dtype=np.uint8)
        sorted_ids = np.asarray(order, dtype=np.int32)
        node_byte, node_depth, node_skip, node_tok_ptr = build_trie(flat, offsets)
        max_depth = int(lengths.max()) if len(lengths) else 0
        return cls(node_byte, node_depth, node_skip, node_tok_ptr, sorted_ids, max_depth)


def new_loop_memo(num_states: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """An empty memo of what trie walks learn about a DFA's states (see :meth:`TokenTrie.walk_dfa`)."""
    return (np.zeros(num_states, dtype=np.int64), np.zeros((num_states, 2), dtype=np.uint64),
            np.zeros((num_states, 2), dtype=np.uint64))


_TRIE_CACHE: dict[str, TokenTrie] = {}
_TRIE_LOCK = threading.Lock()


_FIELDS = ("node_byte", "node_depth", "node_skip", "node_tok_ptr", "tok_ids")


def _load_or_build(info, disk) -> TokenTrie:
    """From the disk cache when present (skips numba's first-call cost), else built and saved."""
    key = content_key("token-trie", info.hash)
    stored = disk.load("trie", key) if disk is not None else None
    if stored is not None and set(_FIELDS) <= stored.keys() and "max_depth" in stored:
        return TokenTrie(*(stored[name] for name in _FIELDS), int(stored["max_depth"]))
    trie = TokenTrie.from_token_bytes(info.token_bytes, info.matchable_token_ids())
    if disk is not None:
        arrays = {name: getattr(trie, name) for name in _FIELDS}
        disk.save("trie", key, {**arrays, "max_depth": np.int64(trie.max_depth)})
    return trie


def token_trie_for(info, disk: DiskCache | None = None) -> TokenTrie:
    """The trie of a :class:`~constrain.vocab.TokenizerInfo`, built once per vocabulary hash.

    Kept in memory for the process and, when ``disk`` is given, on disk across
    processes (building it costs ~0.1 s plus ~0.4 s of numba loading on first use).
    """
    key = info.hash
    trie = _TRIE_CACHE.get(key)
    if trie is None:
        with _TRIE_LOCK:
            trie = _TRIE_CACHE.get(key)
            if trie is None:
                trie = _load_or_build(info, disk)
                _TRIE_CACHE[key] = trie
    return trie
