"""Masks inside free JSON strings, read once per vocabulary instead of once per state.

A schema's table holds a copy of a string's inside for every string value it allows
(each property's ``{"type": "string"}``, each item position of an array), so nearly
every first visit of a string's first character is a table state seen for the first
time.  Its mask was a walk of the vocabulary's rest trie (the tokens with quotes,
escapes and partial characters: 14,600 nodes of Llama-3's, about 0.2 ms), though
every free string reads the same tokens the same way until its closing quote.

So the vocabulary is read once against the content of a free string
(:func:`content_automaton`, the characters as ``json.dumps(ensure_ascii=False)``
writes them): the tokens that stay inside are one packed row
(:attr:`FreeStrings.inside`), and the tokens that close the string are kept by what
follows their content, from the closing quote on (:attr:`FreeStrings.tails`: Llama-3's
1,312 such tokens make a trie of 914 nodes, since their tails share most beginnings;
built once per process, about 60 ms with the kernels' loading).  A table state that
reads exactly like that content, with every closing quote leading to one state
(:func:`~._kernels.free_string_exit`, checked once per state), takes the row and
walks only the tails from its quote: the value's end (``",``, ``"}``...) decides, a
few dozen nodes.  Other states (patterns, formats, counts, keys that may be listed
names) walk as before.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

import numpy as np

from ..grammar.regex import Alt, CharSet, Concat, Repeat
from .byte_dfa import build_byte_dfa
from .token_trie import TokenTrie

__all__ = ["FreeStrings", "free_strings_for", "content_automaton", "UNKNOWN_EXIT"]

_QUOTE = ord('"')

#: A state's entry in an engine's memo of :meth:`FreeStrings.exit_of` before it is asked.
UNKNOWN_EXIT = -2


def _chars(text: str) -> CharSet:
    return CharSet(tuple((ord(c), ord(c)) for c in sorted(set(text))))


def _literal(text: str) -> Concat:
    return Concat(tuple(_chars(c) for c in text))


def content_automaton() -> tuple[np.ndarray, int]:
    """The content of a free JSON string as ``json.dumps(ensure_ascii=False)`` writes it
    (the compiled schemas' spelling, :mod:`constrain.grammar.json_schema.strings`), as a
    table whose closing quote is :data:`~._kernels.STRING_EXIT`, and its start state.

    Every character but a surrogate; ``"`` and ``\\`` escaped, the controls as short
    escapes or lower-case ``\\u00XX``."""
    from ._kernels import STRING_EXIT

    plain = CharSet(((0x20, 0x21), (0x23, 0x5B), (0x5D, 0xD7FF), (0xE000, 0x10FFFF)))
    short = Concat((_chars("\\"), _chars('"\\bfnrt')))
    coded = Concat((_literal("\\u00"), Alt((Concat((_chars("0"), _chars("01234567bef"))),
                                            Concat((_chars("1"), _chars("0123456789abcdef")))))))
    dfa = build_byte_dfa(Repeat(Alt((plain, short, coded)), 0, None))
    table = dfa.trans.copy()
    ends = np.flatnonzero(dfa.accepting)
    if (table[ends, _QUOTE] >= 0).any():  # pragma: no cover - a quote is only ever escaped
        raise AssertionError("a string's content reads a bare quote")
    table[ends, _QUOTE] = STRING_EXIT
    return table, int(dfa.start)


@dataclass(frozen=True, eq=False)
class FreeStrings:
    """A vocabulary read from inside a free string (see the module docstring)."""

    #: int32 ``[states, 256]``: :func:`content_automaton`'s table.
    content: np.ndarray
    start: int
    #: uint32 packed words: the tokens that stay inside a free string.
    inside: np.ndarray
    #: The tokens that close a free string, each by its bytes from the closing quote on.
    tails: TokenTrie

    @classmethod
    def of(cls, trie: TokenTrie, token_bytes) -> "FreeStrings":
        from ._kernels import string_exits

        content, start = content_automaton()
        num_ids = trie.matchable.shape[0]
        exits = string_exits(trie.node_byte, trie.node_depth, trie.node_skip, trie.node_tok_ptr, trie.tok_ids,
                             content, start, trie.max_depth, num_ids)
        inside = np.zeros((num_ids + 31) // 32, dtype=np.uint32)
        ids = np.flatnonzero(exits == -1)
        np.bitwise_or.at(inside, ids >> 5, np.left_shift(1, ids & 31).astype(np.uint32))
        closing = np.flatnonzero(exits >= 0).tolist()
        tails = {token: token_bytes[token][exits[token]:] for token in closing}
        return cls(content, start, inside, TokenTrie.from_token_bytes(tails, closing))

    def exit_of(self, trans: np.ndarray, state: int, memo: np.ndarray, calls: np.ndarray,
                accepting: np.ndarray) -> int:
        """Where ``state``'s closing quote leads when ``state`` is at a character's boundary
        inside a free string (:func:`~._kernels.free_string_exit`), else -1; ``memo``
        (int32 per table state, :data:`UNKNOWN_EXIT` at first) keeps the answers."""
        found = int(memo[state])
        if found == UNKNOWN_EXIT:
            from ._kernels import free_string_exit

            found = memo[state] = free_string_exit(trans, calls, accepting, state, self.content, self.start)
        return found

    def words_into(self, out_words: np.ndarray) -> None:
        """OR the tokens that stay inside a free string into ``out_words``."""
        out_words[: self.inside.shape[0]] |= self.inside


_CACHE: dict[str, FreeStrings] = {}
_LOCK = threading.Lock()


def free_strings_for(info, trie: TokenTrie) -> FreeStrings:
    """The :class:`FreeStrings` of a vocabulary (``trie`` is its :func:`~.token_trie.token_trie_for`), built once per process."""
    found = _CACHE.get(info.hash)
    if found is None:
        with _LOCK:
            found = _CACHE.get(info.hash)
            if found is None:
                found = _CACHE[info.hash] = FreeStrings.of(trie, info.token_bytes)
    return found
