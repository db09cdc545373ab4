"""Allowed-identifier sets as byte automata, and their token masks over the vocabulary trie.

When a monitor fires, the next characters must spell one of a finite set of
identifiers (optionally after a fixed prefix such as the space of ``import os``) and
then a character that cannot continue an identifier; after that character the monitor
lets go.  That language is regular, so it becomes a byte DFA and the token mask is one
:func:`~constrain.automata._kernels.walk_dfa` pass over the vocabulary trie: the walk
skips every subtree whose prefix leaves the DFA, so a set of 30 members touches a few
hundred trie nodes instead of looping over 128k tokens in Python.

The DFA is the product of two minimal automata:

* ``I``: the identifiers' UTF-8 bytes (a trie with shared suffixes merged), and
* ``T``: one UTF-8 character that is *not* an identifier-continue character (the
  complement of Python's ``XID_Continue``), built once per process.

From an accepting state of ``I`` (a whole identifier was read) the product also
runs ``T``; once ``T`` accepts, the monitor has let go and the product continues in
a two-state *guard* (``RELEASED``, ``AFTER_BOUNDARY``) that accepts any bytes except
a boundary byte (``.``) followed by an identifier-start byte: the rest of the token
must not slip past the next trigger (``sku.upper`` as one token after ``sku``).  Running both halves at once is what keeps a token exact when its
bytes go past the identifier's end (``name(``, ``name)\\n``), when one allowed name
is a prefix of another (``get`` / ``get_all``), and when an identifier's next
multi-byte character shares its lead byte with a terminator (``aé`` vs ``a×``).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from ..automata.byte_dfa import _trie_dfa, build_byte_dfa
from ..errors import MonitorError
from ..grammar.regex import MAX_CODEPOINT, CharSet, complement_ranges

__all__ = ["IdentifierDFA", "identifier_dfa", "identifier_continue_ranges", "is_identifier_char", "boundary_guard"]

#: States after an identifier and its terminating character (the guard; see the module doc).
RELEASED = 0
AFTER_BOUNDARY = 1
#: Bytes that start an identifier in UTF-8 text: ASCII letters, ``_`` and every non-ASCII lead byte.
IDENTIFIER_START = np.zeros(256, dtype=bool)
IDENTIFIER_START[[*range(ord("a"), ord("z") + 1), *range(ord("A"), ord("Z") + 1), ord("_"), *range(0xC2, 0xF5)]] = True


@lru_cache(maxsize=1)
def identifier_continue_ranges() -> tuple[tuple[int, int], ...]:
    """Code point ranges that may continue a Python identifier (``XID_Continue``).

    Taken from the running interpreter (``("a" + c).isidentifier()``, ~0.1 s once),
    so the automaton agrees with ``str.isidentifier`` on the same Python.
    """
    flags = np.fromiter((("a" + chr(cp)).isidentifier() for cp in range(MAX_CODEPOINT + 1)), dtype=bool)
    edges = np.flatnonzero(np.diff(np.concatenate(([False], flags, [False])).astype(np.int8)))
    return tuple((int(lo), int(hi) - 1) for lo, hi in zip(edges[::2], edges[1::2]))


def is_identifier_char(char: str) -> bool:
    """True when ``char`` can continue an identifier (so it does not end one)."""
    return ("a" + char).isidentifier()


@lru_cache(maxsize=1)
def _terminator_dfa():
    """Minimal byte DFA of one character that ends an identifier (built once, ~0.2 s)."""
    return build_byte_dfa(CharSet(complement_ranges(identifier_continue_ranges())))


@dataclass(frozen=True, eq=False)
class IdentifierDFA:
    """Byte DFA of ``prefix + one of names + terminating character + anything``.

    Attributes
    ----------
    trans:
        int32 ``[num_states, 256]``, ``-1`` = forbidden; every state is live.
    accepting:
        bool ``[num_states]``: a whole identifier has been read (EOS may follow).
    settle:
        int32 ``[num_states]``: where the next token starts when one ends in a state.
        A token may not end inside the character that terminates the identifier
        (-1): a grammar composed with the monitor could accept that partial
        character for another reason (``\\w`` is wider than ``XID_Continue``), and the two
        masks would then have no token in common at the next step.  A token ending
        inside a multi-byte *identifier* character forgets the terminator branch.
    start:
        The state before the prefix.
    names:
        The allowed identifiers (for messages and tests).
    """

    trans: np.ndarray
    accepting: np.ndarray
    settle: np.ndarray
    start: int
    names: frozenset[str]
    prefix: str

    def walk(self, state: int, data: bytes) -> int:
        """State after the bytes ``data`` from ``state``; -1 once they leave the language."""
        trans = self.trans
        for byte in data:
            state = int(trans[state, byte])
            if state < 0:
                return -1
        return state

    def walk_token(self, state: int, data: bytes) -> int:
        """State after a whole token; -1 when it leaves the language or ends inside a terminator."""
        end = self.walk(state, data)
        return int(self.settle[end]) if end >= 0 else -1

    @property
    def num_states(self) -> int:
        return int(self.trans.shape[0])

    @staticmethod
    def is_released(state: int) -> bool:
        """True once the identifier and its terminating character have been read."""
        return state in (RELEASED, AFTER_BOUNDARY)


def boundary_guard(boundary: bytes) -> np.ndarray:
    """Transitions ``[2, 256]`` of the guard: any bytes but a boundary byte then an identifier start."""
    is_boundary = np.zeros(256, dtype=bool)
    is_boundary[list(boundary)] = True
    trans = np.zeros((2, 256), dtype=np.int32)
    trans[:, is_boundary] = AFTER_BOUNDARY
    trans[AFTER_BOUNDARY, IDENTIFIER_START & ~is_boundary] = -1
    return trans


@lru_cache(maxsize=8)
def _terminator_block(boundary: bytes) -> tuple[np.ndarray, np.ndarray]:
    """The guard's two rows, then one row per terminator state (ids offset by 2), built once.

    Product states ``(no identifier, t)`` are exactly the terminator's states, so
    their rows are the same for every allowed set: only states still inside an
    identifier are built per trigger.
    """
    term = _terminator_dfa()
    guard = boundary_guard(boundary)
    nxt = term.trans
    done = (nxt >= 0) & term.accepting[np.maximum(nxt, 0)]
    rows = np.where(nxt < 0, -1, np.where(done, guard[RELEASED][None, :], nxt + 2)).astype(np.int32)
    return np.concatenate([guard, rows]), guard


def _product(ident, boundary: bytes) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    """Breadth-first product of the identifier DFA with the terminator DFA (see module doc).

    Returns ``(trans, accepting, settle, start)``; ``settle`` maps the state a token
    ends in to the state the next token starts from (see :class:`IdentifierDFA`).
    """
    term = _terminator_dfa()
    block, guard = _terminator_block(boundary)
    base = block.shape[0]
    index: dict[tuple[int, int], int] = {}
    rows: list[np.ndarray | None] = []
    accepting: list[bool] = []
    queue: list[tuple[int, int]] = []

    def state_of(i: int, t: int) -> int:
        if i < 0:
            return 2 + t  # a terminator state: in the shared block
        if ident.accepting[i]:
            t = term.start  # a whole identifier: a terminator may start here
        key = (i, t)
        found = index.get(key)
        if found is None:
            found = index[key] = base + len(rows)
            rows.append(None)  # filled when dequeued
            accepting.append(bool(ident.accepting[i]))
            queue.append(key)
            if t not in (-1, term.start):
                state_of(i, -1)  # where a token ending here settles
        return found

    start = state_of(ident.start, -1)
    while queue:
        i, t = queue.pop()
        row = block[2 + t].copy() if t >= 0 else np.full(256, -1, dtype=np.int32)
        next_i = ident.trans[i]
        for byte in np.flatnonzero(next_i >= 0).tolist():
            nt = int(term.trans[t, byte]) if t >= 0 else -1
            if nt >= 0 and term.accepting[nt]:
                row[byte] = guard[RELEASED, byte]  # the terminating character is complete
            else:
                row[byte] = state_of(int(next_i[byte]), nt)
        rows[index[(i, t)] - base] = row
    trans = np.ascontiguousarray(np.concatenate([block, np.stack(rows)]), dtype=np.int32)
    settle = np.arange(trans.shape[0], dtype=np.int32)
    settle[2:base] = -1  # inside a terminating character, no identifier left
    for (i, t), state in index.items():
        if t not in (-1, term.start):
            settle[state] = index[(i, -1)]
    accept = np.concatenate([np.zeros(base, dtype=bool), np.asarray(accepting, dtype=bool)])
    return trans, accept, settle, start


def _validate_names(names: Iterable[str], prefix: str) -> frozenset[str]:
    found = frozenset(names)
    bad = sorted(n for n in found if not isinstance(n, str) or not n.isidentifier())
    if bad:
        raise MonitorError(f"Invalid allowed names: expected identifiers, got {bad[:5]!r}")
    if not found:
        raise MonitorError("Invalid allowed names: expected at least one identifier, got an empty set")
    if prefix and is_identifier_char(prefix[-1]):
        raise MonitorError(f"Invalid prefix {prefix!r}: it must not end with an identifier character")
    return found


@lru_cache(maxsize=256)
def identifier_dfa(names: frozenset[str], prefix: str = "", boundary: bytes = b"") -> IdentifierDFA:
    """The :class:`IdentifierDFA` of an allowed set, memoised (triggers repeat across samples).

    ``boundary`` holds the ASCII bytes after which a monitor fires (``b"."``); after
    the identifier's end they may not be followed by an identifier start in the
    same token.  States ``RELEASED`` and ``AFTER_BOUNDARY`` mean the monitor let go.

    Cost: linear in the total UTF-8 length of the names (a few ms for a class's members,
    ~0.1 s for the ~500 module names of ``import``).
    """
    names = _validate_names(names, prefix)
    encoded = prefix.encode("utf-8")
    ident = _trie_dfa(sorted(encoded + n.encode("utf-8") for n in names))
    trans, accepting, settle, start = _product(ident, boundary)
    return IdentifierDFA(trans, accepting, settle, start, names, prefix)
