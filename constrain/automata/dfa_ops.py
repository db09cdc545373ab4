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

__all__ = ["intersect", "difference", "union", "product", "without_words", "bound_runs", "dfa_from_table", "assert_ahead",
           "ANY_SUFFIX", "any_suffix_marker", "has_any_suffix", "widen_any_suffix"]

#: The byte that stands for "any bytes from here to the end of the text" in an
#: over-approximated language (0xC0 never occurs in UTF-8, and no call uses it).
ANY_SUFFIX = 0xC0

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
        raise RegexError(f"a combined automaton would have more than {MAX_DFA_STATES:,} states", "", 0)
    accepting = _OPS[op](np.append(a.accepting, False)[in_a], np.append(b.accepting, False)[in_b])
    return dfa_from_table(trans, accepting, 0)


def intersect(a: ByteDFA, b: ByteDFA) -> ByteDFA | None:
    """``L(a) ∩ L(b)``, None when empty.

    An :data:`ANY_SUFFIX` cut on either side means what it says: a pair of states
    whose first has the mark goes on as the second alone (the mark's language is
    everything), and the mark comes back only where both sides have it.  (As a plain
    symbol, it would survive only where both had it, and the cut would lose its
    meaning.)  Union and difference need no such care: there the mark rides as a
    symbol, and what is taken away is widened first.
    """
    if not (has_any_suffix(a) or has_any_suffix(b)):
        return product(a, b, "and")
    both = product(widen_any_suffix(a), widen_any_suffix(b), "and")
    return None if both is None else _universal_as_mark(both)


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


def any_suffix_marker() -> ByteDFA:
    """The DFA of the one-symbol text :data:`ANY_SUFFIX` (embed it where a language is cut
    and must over-approximate: whatever follows is accepted)."""
    trans = np.full((2, 256), -1, dtype=np.int32)
    trans[0, ANY_SUFFIX] = 1
    return ByteDFA(trans, np.array([False, True]), 0)


def has_any_suffix(dfa: ByteDFA) -> bool:
    """Whether ``dfa`` has an :data:`ANY_SUFFIX` move (an over-approximation not yet widened)."""
    return bool((dfa.trans[:, ANY_SUFFIX] >= 0).any())


def widen_any_suffix(dfa: ByteDFA) -> ByteDFA:
    """``dfa`` with each state that has an :data:`ANY_SUFFIX` move accepting every continuation.

    The marker rides through concatenation, union and difference as one more symbol,
    so a language can be built with it where its continuation is not known yet; once
    the language is whole (about to be taken away from another), the marker means
    what it says: from that state, every text is in.  A state with the move is then
    universal whatever its other moves, since its language contains everything.
    """
    marked = dfa.trans[:, ANY_SUFFIX] >= 0
    if not marked.any():
        return dfa
    universal = dfa.num_states
    trans = np.vstack([dfa.trans, np.full((1, 256), universal, dtype=np.int32)])
    trans[:universal][marked] = universal
    trans[:, ANY_SUFFIX] = -1  # widened, the language is over real bytes (and call symbols) again
    accepting = np.append(dfa.accepting | marked, True)
    widened = dfa_from_table(trans, accepting, dfa.start)
    assert widened is not None  # the universal state accepts
    return widened


def _universal_as_mark(dfa: ByteDFA) -> ByteDFA:
    """``dfa`` with its universal states replaced by :data:`ANY_SUFFIX` cuts again, so the
    language stays a small prefix automaton wherever it is embedded.

    Universal are the state :func:`widen_any_suffix` makes (accepting, every byte but the
    mark back to itself) and every accepting state whose moves all lead to universal
    ones: a product pairs two marked states into one whose every byte goes to the pair
    of universal states.  Kept as it was, such a state moved on every byte, call symbols
    included, and the product seemed to call callees no side had."""
    rows = np.delete(dfa.trans, ANY_SUFFIX, axis=1)
    universal = (rows == np.arange(dfa.num_states)[:, None]).all(axis=1) & dfa.accepting
    if not universal.any():
        return dfa
    while True:  # the greatest set: states whose every move stays in it
        grown = universal | (dfa.accepting & (rows >= 0).all(axis=1)
                             & universal[np.maximum(rows, 0)].all(axis=1))
        if (grown == universal).all():
            break
        universal = grown
    end = dfa.num_states
    trans = np.vstack([dfa.trans, np.full((1, 256), -1, dtype=np.int32)])
    trans[:end][universal] = -1
    trans[:end][universal, ANY_SUFFIX] = end
    accepting = np.append(dfa.accepting, True)
    cut = dfa_from_table(trans, accepting, dfa.start)
    assert cut is not None
    return cut


#: The runs :func:`assert_ahead`'s states may hold in all.  A state is a set of runs, each
#: a tuple with its obligations, so memory follows the runs, not the states: random
#: patterns with word boundaries in unbounded repetitions held gigabytes before the
#: state limit.  The most any JSONSchemaBench pattern holds is 29,815 (a URL pattern).
MAX_ASSERTION_RUNS = 1_000_000


def assert_ahead(main: ByteDFA, tests: dict[int, tuple[ByteDFA, bool, bool]], behind: ByteDFA | None = None,
                 max_states: int = MAX_DFA_STATES) -> ByteDFA | None:
    """The texts of ``main`` with its marker bytes (the keys of ``tests``) taken out, where
    at each marker ``b`` a run takes, the rest of the text is in ``tests[b][0]`` (when
    ``tests[b][1]``) or is not (otherwise): look-aheads and ``$`` inside a repetition,
    whose every copy asserts something about the copies after it.  Where ``tests[b][2]``
    is set, that wish is turned round when the text read so far is in ``behind``: a
    word boundary wants a word character ahead exactly when there is none behind.

    A subset construction whose states are sets of runs, a run being a state of
    ``main``, the state of ``behind`` on the whole text read, and the obligations taken
    on the run's way: (marker, wish, state of that test on the text read since).  Tests
    are deterministic, so obligations move in step with the text; one whose test has
    died is broken (wished) or met for good (not wished) at once, and the rest are
    settled at the end of the text.  None when empty.
    """
    markers = sorted(tests)
    columns: dict[bytes, list[int]] = {}
    tables = np.vstack([main.trans] + [test.trans for test, _, _ in tests.values()]
                       + ([behind.trans] if behind is not None else []))
    for byte in range(256):
        if byte not in tests:
            columns.setdefault(tables[:, byte].tobytes(), []).append(byte)
    main_trans, main_accepting = main.trans.tolist(), main.accepting.tolist()
    test_trans = {b: test.trans.tolist() for b, (test, _, _) in tests.items()}
    test_accepting = {b: test.accepting.tolist() for b, (test, _, _) in tests.items()}
    behind_trans = behind.trans.tolist() if behind is not None else None
    behind_accepting = behind.accepting.tolist() if behind is not None else None

    def closure(runs: set) -> frozenset:
        todo = list(runs)
        while todo:
            state, back, obligations = todo.pop()
            for b in markers:
                target = main_trans[state][b]
                if target >= 0:
                    test, wish, flips = tests[b]
                    if flips and behind_accepting[back]:
                        wish = not wish
                    run = (target, back, obligations | {(b, wish, test.start)})
                    if run not in runs:
                        runs.add(run)
                        todo.append(run)
        return frozenset(runs)

    def step(runs: frozenset, byte: int) -> frozenset:
        out = set()
        for state, back, obligations in runs:
            target = main_trans[state][byte]
            if target < 0:
                continue
            moved_back = behind_trans[back][byte] if behind_trans is not None else 0
            if moved_back < 0:
                continue  # only bytes no text has: the main automaton refuses them too
            kept = []
            for b, wish, at in obligations:
                moved = test_trans[b][at][byte]
                if moved >= 0:
                    kept.append((b, wish, moved))
                elif wish:
                    break  # a look-ahead that can no longer match
            else:
                out.add((target, moved_back, frozenset(kept)))
        return closure(out)

    def accepts(runs: frozenset) -> bool:
        return any(main_accepting[state] and all(test_accepting[b][at] == wish for b, wish, at in obligations)
                   for state, _, obligations in runs)

    start = closure({(main.start, behind.start if behind is not None else 0, frozenset())})
    index = {start: 0}
    order = [start]
    rows = []
    runs_held = len(start)
    while len(rows) < len(order):
        runs = order[len(rows)]
        row = np.full(256, -1, dtype=np.int32)
        for same in columns.values():
            target = step(runs, same[0])
            if not target:
                continue
            if target not in index:
                if len(order) >= max_states:
                    raise RegexError(f"an assertion inside a repetition needs more than {max_states} states", "", 0)
                runs_held += len(target)
                if runs_held > MAX_ASSERTION_RUNS:
                    raise RegexError(f"an assertion inside a repetition needs more than {MAX_ASSERTION_RUNS:,} runs "
                                     f"of its automaton ({len(order):,} states)", "", 0)
                index[target] = len(order)
                order.append(target)
            row[same] = index[target]
        rows.append(row)
    return dfa_from_table(np.array(rows, dtype=np.int32), np.array([accepts(r) for r in order]), 0)


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


