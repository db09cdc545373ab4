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

__all__ = ["TokenTrie", "OrdinaryTokens", "token_trie_for", "new_loop_memo"]


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

    @property
    def ordinary(self) -> "OrdinaryTokens":
        """The vocabulary split for walks inside strings (see :class:`OrdinaryTokens`; computed once)."""
        found = self.__dict__.get("_ordinary")
        if found is None:
            found = self.__dict__["_ordinary"] = OrdinaryTokens.of(self)
        return found

    def walk_dfa(self, trans: np.ndarray, state: int, out_words: np.ndarray, out_next: np.ndarray,
                 memo: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None, *, whole: bool = False) -> int:
        """OR into ``out_words`` the tokens viable from ``state`` of the byte DFA ``trans``.

        See :func:`~._kernels.walk_dfa` (``out_next``: empty, or one int32 slot per
        token for its end state).  ``memo`` is :func:`new_loop_memo` of the DFA,
        kept by callers that walk the same DFA again; a fresh one is used otherwise.
        Inside a string (a mask without end states) the ordinary tokens are taken
        by their length and only the rest is walked (:class:`OrdinaryTokens`),
        unless ``whole`` (a trie of a few tokens: walk it all).
        Returns the number of viable tokens.
        """
        from ._kernels import UTF8, walk_dfa

        memo = memo if memo is not None else new_loop_memo(trans.shape[0])
        trie, count = self, 0
        if not out_next.shape[0] and not whole:
            taken = self.ordinary.take(trans, state, memo, out_words)
            if taken is not None:
                trie, count = self.ordinary.rest, taken
        ascii_below, flags, height = trie.summaries
        return count + int(walk_dfa(trans, state, trie.node_byte, trie.node_depth, trie.node_skip,
                                    trie.node_tok_ptr, trie.tok_ids, ascii_below, flags, height, trie.max_depth,
                                    *memo, UTF8, out_words, out_next, trie is not self))

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


_NO_GUARD = (np.empty(0, np.int32), np.empty(0, np.bool_))

#: Ordinary tokens longer than this (in characters) are walked with the rest.  A
#: ``maxLength`` count is followed this far on each first visit of a state
#: (Llama-3 has 225 such tokens, whose walk costs less than following a count 128 far).
ORDINARY_MAX_CHARS = 24


@dataclass(frozen=True, eq=False)
class OrdinaryTokens:
    """A vocabulary split in two for states inside a string.

    Most tokens (121,600 of Llama-3's 128,000) are *ordinary*: whole characters,
    none a quote, a backslash, a control character or U+2028/U+2029, and at most
    :data:`ORDINARY_MAX_CHARS` of them (:func:`~._kernels.ordinary_chars`).
    Inside a JSON string each such character takes one step, so an ordinary
    token is viable exactly when the string has room for its number of
    characters (:func:`~._kernels.ordinary_run`): a free string has room for
    all, a ``maxLength`` count for the shortest few.  Those tokens are taken by
    OR-ing one precomputed row, and only the :attr:`rest` trie (quotes, escapes,
    partial UTF-8: 5 %) is walked.  A trie walk cannot take them whole
    itself, because a token with a quote lies below nearly every trie node.
    """

    rest: TokenTrie
    #: uint32 ``[longest + 1, words]``: row ``k`` holds the ordinary tokens of at most ``k`` characters.
    upto: np.ndarray
    #: int64 ``[longest + 1]``: how many tokens each row of :attr:`upto` holds.
    counts: np.ndarray

    @property
    def longest(self) -> int:
        """The most characters of an ordinary token taken by length (at most :data:`ORDINARY_MAX_CHARS`)."""
        return int(self.upto.shape[0]) - 1

    @classmethod
    def of(cls, trie: TokenTrie) -> "OrdinaryTokens":
        from ._kernels import ORDINARY_UTF8, ordinary_chars, sub_trie

        num_ids = trie.matchable.shape[0]
        chars = ordinary_chars(trie.node_byte, trie.node_depth, trie.node_tok_ptr, trie.tok_ids, trie.max_depth,
                               ORDINARY_UTF8, num_ids)
        chars[chars > ORDINARY_MAX_CHARS] = -1
        rest = TokenTrie(*sub_trie(trie.node_byte, trie.node_depth, trie.node_skip, trie.node_tok_ptr,
                                   trie.tok_ids, trie.matchable & (chars < 0)), trie.max_depth)
        longest = int(chars.max(initial=0))
        by_length = np.zeros((longest + 1, (num_ids + 31) // 32), dtype=np.uint32)
        ids = np.flatnonzero(chars >= 0)
        np.bitwise_or.at(by_length, (chars[ids], ids >> 5), np.left_shift(1, ids & 31).astype(np.uint32))
        counts = np.cumsum(np.bincount(chars[ids], minlength=longest + 1))
        return cls(rest, np.bitwise_or.accumulate(by_length, axis=0), counts)

    def take(self, trans: np.ndarray, state: int, memo, out_words: np.ndarray,
             guard: tuple[np.ndarray, np.ndarray] = _NO_GUARD) -> int | None:
        """OR the ordinary tokens viable from ``state`` into ``out_words`` when their length decides.

        Returns how many tokens were set; the caller then walks :attr:`rest` only.
        None (nothing set, walk the whole trie) when ``state`` is not inside a
        string.  ``memo`` is the DFA's :func:`new_loop_memo`; ``guard`` is
        ``(call_ret, accepting)`` for pushdown walks (see :func:`~._kernels.ordinary_run`).
        """
        from ._kernels import ORDINARY_UTF8, ordinary_run

        words, step_bytes, _ = memo
        run = ordinary_run(trans, state, words, step_bytes, ORDINARY_UTF8, guard[0], guard[1], self.longest)
        if run < 0:
            return None
        out_words[: self.upto.shape[1]] |= self.upto[run]
        return int(self.counts[run])


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
