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
from .byte_dfa import MAX_DFA_STATES, ByteDFA, _minimize, _prune_dead

__all__ = ["intersect", "difference", "union", "product", "is_empty_product", "bound_runs", "dfa_from_table"]

_OPS: dict[str, Callable[[bool, bool], bool]] = {
    "and": lambda a, b: a and b,
    "or": lambda a, b: a or b,
    "diff": lambda a, b: a and not b,
}


def product(a: ByteDFA, b: ByteDFA, op: str) -> ByteDFA | None:
    """The DFA of ``L(a) op L(b)`` for op in ``and``, ``or``, ``diff``; None when empty.

    States are pairs of states, ``-1`` standing for "this side has left its
    language" (needed for ``or`` and ``diff``, where one side may die and the other
    go on).  Only pairs reachable from the start pair are built.
    """
    accept = _OPS[op]
    keep_dead_b = op in ("or", "diff")
    keep_dead_a = op == "or"
    ta, tb = _with_sink(a.trans), _with_sink(b.trans)
    na, nb = a.num_states, b.num_states  # index na / nb is the sink row
    index = {(a.start, b.start): 0}
    pairs = [(a.start, b.start)]
    rows: list[np.ndarray] = []
    while len(rows) < len(pairs):
        sa, sb = pairs[len(rows)]
        ra, rb = ta[sa], tb[sb]
        alive = np.ones(256, dtype=bool)
        if not keep_dead_a:
            alive &= ra != na
        if not keep_dead_b:
            alive &= rb != nb
        alive &= ~((ra == na) & (rb == nb))
        keys = ra.astype(np.int64) * (nb + 1) + rb
        row = np.full(256, -1, dtype=np.int32)
        for key in np.unique(keys[alive]).tolist():
            pair = (key // (nb + 1), key % (nb + 1))
            target = index.get(pair)
            if target is None:
                target = index[pair] = len(pairs)
                if target >= MAX_DFA_STATES:
                    raise RegexError(f"a combined automaton has more than {MAX_DFA_STATES} states", "", 0)
                pairs.append(pair)
            row[keys == key] = target
        row[~alive] = -1
        rows.append(row)
    trans = np.stack(rows)
    labels = np.array(
        [0 if accept(sa < na and bool(a.accepting[sa]), sb < nb and bool(b.accepting[sb])) else -1
         for sa, sb in pairs], dtype=np.int32)
    return dfa_from_table(trans, labels >= 0, 0)


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


def is_empty_product(a: ByteDFA, b: ByteDFA) -> bool:
    """True when ``L(a) ∩ L(b)`` is empty (the two languages are disjoint)."""
    return intersect(a, b) is None


def bound_runs(dfa: ByteDFA, loop_states: np.ndarray, run_bytes: bytes, max_run: int) -> ByteDFA:
    """Allow at most ``max_run`` consecutive ``run_bytes`` at the given self-loop states.

    ``loop_states[s]`` marks states whose ``run_bytes`` transitions all go back to
    ``s`` (JSON's "whitespace between tokens" states).  Each becomes a chain of
    ``max_run + 1`` copies: copy ``k`` has read ``k`` of those bytes, the last one
    has no such transition, and every other byte behaves as in ``s``.  This keeps
    the schema automata small (one looping state per position) while a model still
    cannot emit spaces forever.
    """
    marked = np.nonzero(loop_states)[0]
    if marked.size == 0:
        return dfa
    n = dfa.num_states
    run = np.frombuffer(run_bytes, dtype=np.uint8)
    extra = max_run  # copies 1..max_run of each marked state
    copy_id = {int(s): n + i * extra for i, s in enumerate(marked.tolist())}
    trans = np.concatenate([dfa.trans, np.full((marked.size * extra, 256), -1, dtype=np.int32)])
    accepting = np.concatenate([dfa.accepting, np.zeros(marked.size * extra, dtype=bool)])
    for state, base in copy_id.items():
        chain = [state] + list(range(base, base + extra))
        for k, here in enumerate(chain):
            if k:
                trans[here] = dfa.trans[state]
                accepting[here] = dfa.accepting[state]
            trans[here, run] = chain[k + 1] if k + 1 < len(chain) else -1
    # A run usually starts outside its loop state (an unminimized DFA enters the loop on
    # the run's first byte): that byte counts too, so it leads to copy 1, not the loop.
    targets = dfa.trans[:n][:, run]
    entering = (targets >= 0) & loop_states[np.maximum(targets, 0)] & ~loop_states[:n, None]
    rows, cols = np.nonzero(entering)
    for row, col in zip(rows.tolist(), cols.tolist()):
        trans[row, run[col]] = copy_id[int(targets[row, col])] if extra else -1
    return ByteDFA(np.ascontiguousarray(trans), accepting, dfa.start)


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


