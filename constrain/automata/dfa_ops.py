"""Boolean operations on byte DFAs, and bounding of whitespace runs.

JSON Schema needs languages that regex syntax cannot write directly: ``oneOf``
is "in exactly one branch", ``not`` is a difference, ``allOf`` leftovers are
intersections.  Over regular languages all of these are exact through the
product construction; the results are minimal, all-live :class:`ByteDFA`\\ s that
can be embedded back into a regex tree with :class:`~constrain.grammar.regex.Automaton`.
"""

from __future__ import annotations

from typing import Callable

import numpy as np

from ..errors import RegexError
from ._dfa_kernels import PRODUCT_MODES, PRODUCT_OVERFLOW, bounded_runs, pair_product, trie_without_words
from .byte_dfa import MAX_DFA_STATES, ByteDFA, _kernel_arrays, _minimize, _prune_dead

__all__ = ["intersect", "difference", "union", "product", "without_words", "bound_runs", "dfa_from_table"]

# Which pairs accept, from whether each side accepts (boolean arrays).
_OPS: dict[str, Callable[[np.ndarray, np.ndarray], np.ndarray]] = {
    "and": lambda a, b: a & b,
    "or": lambda a, b: a | b,
    "diff": lambda a, b: a & ~b,
}


def product(a: ByteDFA, b: ByteDFA, op: str) -> ByteDFA | None:
    """The DFA of ``L(a) op L(b)`` for op in ``and``, ``or``, ``diff``; None when empty.

    States are pairs of states, the sink standing for "this side has left its
    language" (needed for ``or`` and ``diff``, where one side may die and the other
    go on).  Only pairs reachable from the start pair are built, breadth first, by
    the numba kernel :func:`~constrain.automata._dfa_kernels.pair_product`.
    """
    status, trans, in_a, in_b = pair_product(_with_sink(a.trans), _with_sink(b.trans), int(a.start),
                                             int(b.start), PRODUCT_MODES[op], MAX_DFA_STATES)
    if status == PRODUCT_OVERFLOW:
        raise RegexError(f"a combined automaton has more than {MAX_DFA_STATES} states", "", 0)
    accepting = _OPS[op](np.append(a.accepting, False)[in_a], np.append(b.accepting, False)[in_b])
    return dfa_from_table(trans, accepting, 0)


def intersect(a: ByteDFA, b: ByteDFA) -> ByteDFA | None:
    """``L(a) ∩ L(b)``, None when empty."""
    return product(a, b, "and")


def difference(a: ByteDFA, b: ByteDFA) -> ByteDFA | None:
    """``L(a) \\ L(b)``, None when empty."""
    return product(a, b, "diff")


def union(a: ByteDFA, b: ByteDFA) -> ByteDFA:
    """``L(a) ∪ L(b)``."""
    result = product(a, b, "or")
    assert result is not None  # both sides are non-empty
    return result


def without_words(dfa: ByteDFA, words: list[bytes]) -> ByteDFA | None:
    """``L(dfa)`` minus a finite set of words; None when empty.

    The same language as ``difference(dfa, <the words' DFA>)``, built without a
    product: a trie of the words rides on top of ``dfa`` (the kernel
    :func:`~constrain.automata._dfa_kernels.trie_without_words`).  JSON objects
    need "any key but the listed ones" once per object, where the product (and
    then a trie walked in Python) was most of the cost.
    """
    ordered = sorted(set(words))
    offsets = np.zeros(len(ordered) + 1, dtype=np.int64)
    offsets[1:] = np.cumsum([len(word) for word in ordered])
    data = np.frombuffer(b"".join(ordered), dtype=np.uint8)
    table, accepting = _kernel_arrays(dfa.trans, dfa.accepting)
    trans, accepting, start = trie_without_words(table, accepting, int(dfa.start), data, offsets)
    if start < 0:
        return None
    return ByteDFA(trans, accepting, int(start))  # not minimized: that would cost more than the rest


def bound_runs(dfa: ByteDFA, loop_states: np.ndarray, run_bytes: bytes, max_run: int) -> ByteDFA:
    """Allow at most ``max_run`` consecutive ``run_bytes`` at the given self-loop states.

    ``loop_states[s]`` marks states whose ``run_bytes`` transitions all go back to
    ``s`` (JSON's "whitespace between tokens" states).  Each becomes a chain of
    ``max_run + 1`` copies: copy ``k`` has read ``k`` of those bytes, the last one
    has no such transition, and every other byte behaves as in ``s``.  This keeps
    the schema automata small (one looping state per position) while a model still
    cannot emit spaces forever.
    """
    if not loop_states.any():
        return dfa
    run = np.frombuffer(run_bytes, dtype=np.uint8)
    loops = np.ascontiguousarray(loop_states, dtype=np.bool_)
    trans, accepting = bounded_runs(*_kernel_arrays(dfa.trans, dfa.accepting), loops, run, max_run)
    return ByteDFA(trans, accepting, dfa.start)


def dfa_from_table(trans: np.ndarray, accepting: np.ndarray, start: int) -> ByteDFA | None:
    """A minimal all-live ByteDFA from a raw table (``-1``: no transition); None when empty."""
    labels = np.where(accepting, 0, -1).astype(np.int32)
    pruned = _prune_dead(np.asarray(trans, dtype=np.int32), labels, (start,))
    if pruned is None:
        return None
    trans, labels, (start,) = _minimize(*pruned)
    return ByteDFA(np.ascontiguousarray(trans, dtype=np.int32), labels >= 0, start)


def _with_sink(trans: np.ndarray) -> np.ndarray:
    """``trans`` plus a sink row, with ``-1`` mapped to the sink index."""
    n = trans.shape[0]
    out = np.where(trans < 0, n, trans).astype(np.int32)
    return np.concatenate([out, np.full((1, 256), n, dtype=np.int32)])


