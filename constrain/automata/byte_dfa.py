"""Regex trees to minimal byte-level DFAs.

The pipeline is Thompson construction over UTF-8 byte ranges, subset construction,
then Hopcroft minimisation over byte equivalence classes, then removal of dead
states.  The result, :class:`ByteDFA`, is three flat arrays: ``trans[state, byte]``
(``-1`` where the byte leads to a dead end), ``accepting[state]`` and a start state.
Because dead states are removed, *every* state of a ByteDFA can still reach an
accepting state: "the walk never hit -1" is the same as "still a viable prefix",
which is what makes token masks exact with a single trie walk.

Cost: linear in the size of the tree for the NFA (the only per-node Python work);
determinisation, dead-state search and minimisation run as numba kernels
(:mod:`constrain.automata._dfa_kernels`) over a CSR form of the NFA and over the
flat tables, and work on byte ranges and byte classes, never on 256 separate
bytes per state.  The Python versions of subset construction and Hopcroft's
refinement stay here as ``*_reference`` functions: they are the readable
specification the tests hold the kernels to.  A 1,000-word alternation compiles
in tens of milliseconds (interegular's FSM construction takes seconds on it).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache
from typing import NamedTuple

import numpy as np

from ..errors import EmptyLanguageError, RegexError
from ..grammar.regex import Alt, AssertionNotHere, Automaton, CharSet, Concat, Graph, Repeat, RegexNode, parse_regex
from .utf8 import ranges_to_utf8_sequences

__all__ = ["ByteDFA", "build_byte_dfa", "build_labeled_dfa", "regex_to_dfa", "warm_up"]

# Guard against patterns like (a{1000}){1000} whose expansion is astronomically large.
MAX_NFA_STATES = 2_000_000
MAX_DFA_STATES = 200_000


@dataclass(frozen=True, eq=False)
class ByteDFA:
    """A minimal DFA over bytes whose every state is live.

    Attributes
    ----------
    trans:
        int32 ``[num_states, 256]``; ``-1`` marks a byte that leaves the language.
    accepting:
        bool ``[num_states]``.
    start:
        The start state.
    """

    trans: np.ndarray
    accepting: np.ndarray
    start: int
    _rows: list = field(default=None, repr=False, compare=False)  # type: ignore[assignment]
    _runs: np.ndarray = field(default=None, repr=False, compare=False)  # type: ignore[assignment]
    _run_tuples: list = field(default=None, repr=False, compare=False)  # type: ignore[assignment]
    _accepting_states: list = field(default=None, repr=False, compare=False)  # type: ignore[assignment]

    @property
    def num_states(self) -> int:
        return int(self.trans.shape[0])

    def walk(self, state: int, data: bytes) -> int:
        """State after reading ``data`` from ``state``; -1 once it leaves the language."""
        rows = self._python_rows()
        for b in data:
            state = rows[state][b]
            if state < 0:
                return -1
        return state

    def matches(self, data: bytes) -> bool:
        """True when ``data`` is a complete string of the language."""
        state = self.walk(self.start, data)
        return state >= 0 and bool(self.accepting[state])

    def is_prefix(self, data: bytes) -> bool:
        """True when ``data`` can still be extended to a string of the language."""
        return self.walk(self.start, data) >= 0

    def shortest_match(self) -> "ByteDFA":
        """The DFA of strings in the language none of whose proper prefixes is in it.

        This is the language of a lazy pattern under ``re.match``: the match ends at
        the first place it can.  Built by cutting every transition out of an
        accepting state, then pruning and minimising again.
        """
        trans = self.trans.copy()
        trans[self.accepting] = -1
        pruned = _prune_dead(trans, np.where(self.accepting, 0, -1).astype(np.int32), (self.start,))
        assert pruned is not None  # the start state still reaches its first acceptance
        trans, labels, (start,) = _minimize(*pruned)
        return ByteDFA(np.ascontiguousarray(trans, dtype=np.int32), labels >= 0, start)

    def run_table(self) -> np.ndarray:
        """int32 ``[k, 4]`` rows ``(state, lo, hi, target)``: each maximal run of bytes with one
        live target, by state then byte (memoised; a numba pass over the table, since
        embedding a DFA into an NFA needs every run of every row).
        """
        if self._runs is None:
            from ._dfa_kernels import byte_runs

            object.__setattr__(self, "_runs", byte_runs(_kernel_arrays(self.trans, self.accepting)[0]))
        return self._runs

    def _run_list(self) -> list[tuple[int, int, int, int]]:
        """:meth:`run_table` as a list of tuples (memoised: small DFAs are wired from it)."""
        if self._run_tuples is None:
            object.__setattr__(self, "_run_tuples", [tuple(run) for run in self.run_table().tolist()])
        return self._run_tuples

    def _accepting_list(self) -> list[int]:
        """The accepting states as a list (memoised beside :meth:`_run_list`)."""
        if self._accepting_states is None:
            object.__setattr__(self, "_accepting_states", np.flatnonzero(self.accepting).tolist())
        return self._accepting_states

    def _python_rows(self) -> list:
        """``trans`` as nested lists: indexing them is ~5x faster than numpy scalars."""
        if self._rows is None:
            object.__setattr__(self, "_rows", self.trans.tolist())
        return self._rows


class _NFA:
    """A Thompson NFA over byte ranges, built from a regex tree.

    Moves are kept as flat lists (``eps``: source, target pairs; ``edges``: source,
    lo, hi, target quadruples) plus whole int32 blocks of edges for embedded DFAs,
    because the determinisation kernel wants them as CSR arrays (:meth:`csr`), and
    flat appends are the cheapest thing Python can do per move.
    """

    def __init__(self) -> None:
        self.num_states = 0
        self.eps: list[int] = []
        self.edges: list[int] = []
        self.edge_blocks: list[np.ndarray] = []

    def new_state(self) -> int:
        return self.new_states(1)

    def new_states(self, count: int) -> int:
        """Allocate ``count`` consecutive states; returns the first one."""
        if self.num_states + count > MAX_NFA_STATES:
            raise RegexError(
                f"the pattern expands to more than {MAX_NFA_STATES} automaton states; "
                "reduce nested repetition counts", "", 0,
            )
        self.num_states += count
        return self.num_states - count

    def add_eps(self, source: int, target: int) -> None:
        self.eps += (source, target)

    def add_edge(self, source: int, lo: int, hi: int, target: int) -> None:
        """A move from ``source`` to ``target`` on any byte in ``lo..hi``."""
        self.edges += (source, lo, hi, target)

    def csr(self, accepting: np.ndarray | None = None) -> "_CSR":
        """The NFA as CSR arrays (moves grouped by source state, in insertion order).

        With ``accepting`` (a flag per state), moves into states that cannot reach an
        accepting one are left out (:func:`~._dfa_kernels.moves_into_live`)."""
        from ._dfa_kernels import group_by_source, moves_into_live

        eps = np.asarray(self.eps, dtype=np.int32).reshape(-1, 2)
        edges = np.concatenate([np.asarray(self.edges, dtype=np.int32).reshape(-1, 4), *self.edge_blocks])
        if accepting is not None:
            eps, edges = moves_into_live(eps, edges, accepting)
        eps_ptr, (eps_dst,) = group_by_source(eps, self.num_states)
        edge_ptr, (edge_lo, edge_hi, edge_dst) = group_by_source(edges, self.num_states)
        return _CSR(eps_ptr, eps_dst, edge_ptr, edge_lo, edge_hi, edge_dst)

    def build(self, node: RegexNode, start: int, end: int) -> None:
        """Wire ``node`` between ``start`` and ``end``.

        Dispatched on the node's type through :data:`_BUILDERS`: a schema's tree is
        hundreds of nodes, and one dict lookup per node is cheaper than a chain of
        ``isinstance`` tests."""
        builder = _BUILDERS.get(type(node))
        if builder is None:  # pragma: no cover - the parser produces nothing else
            raise TypeError(f"unknown regex node {node!r}")
        builder(self, node, start, end)

    def build_alt(self, node: Alt, start: int, end: int) -> None:
        for item in node.items:
            self.build(item, start, end)

    def build_embedded(self, node: Automaton, start: int, end: int) -> None:
        self.build_automaton(node.dfa, start, end)

    def build_automaton(self, dfa: "ByteDFA", start: int, end: int) -> None:
        """Wire a copy of ``dfa`` between ``start`` and ``end`` (one NFA state per DFA state).

        A call marker (two or three states) is wired move by move: a counted array
        calls its comma callee at every position (thousands in a large schema), and the
        numpy copy of the run table cost twenty times as much per call."""
        if dfa.num_states <= _FEW_STATES:
            self.build_few(dfa, start, end)
            return
        base = self.new_states(dfa.num_states)
        self.add_eps(start, base + dfa.start)
        for state in np.flatnonzero(dfa.accepting).tolist():
            self.add_eps(base + state, end)
        runs = dfa.run_table().copy()
        runs[:, 0] += base
        runs[:, 3] += base
        self.edge_blocks.append(runs)

    def build_few(self, dfa: "ByteDFA", start: int, end: int) -> None:
        """:meth:`build_automaton` for a DFA of a few states, in Python."""
        base = self.new_states(dfa.num_states)
        eps, edges = self.eps, self.edges
        eps += (start, base + dfa.start)
        for state in dfa._accepting_list():
            eps += (base + state, end)
        for source, lo, hi, target in dfa._run_list():
            edges += (base + source, lo, hi, base + target)

    def build_graph(self, graph: "Graph", start: int, end: int) -> None:
        """Wire a :class:`Graph`: one NFA state per graph state, each edge its sub-tree."""
        ids = [self.new_state() for _ in range(graph.num_states)]
        self.add_eps(start, ids[graph.start])
        for final in graph.finals:
            self.add_eps(ids[final], end)
        for source, node, target in graph.edges:
            self.build(node, ids[source], ids[target])

    def build_bounded(self, dfa: "ByteDFA", start: int, end: int, max_len: int) -> None:
        """Wire the strings of ``dfa`` of at most ``max_len`` bytes between ``start`` and ``end``.

        The DFA is unrolled by length (one NFA state per reachable (state, length)),
        so the fragment is acyclic: a lexer built from it cannot loop.
        """
        rows = dfa._python_rows()
        ids = {(dfa.start, 0): start}
        queue = [(dfa.start, 0)]
        while queue:
            state, length = queue.pop()
            here = ids[(state, length)]
            if dfa.accepting[state] and length > 0:
                self.add_eps(here, end)
            if length == max_len:
                continue
            for byte, last, target in _byte_runs(rows[state]):
                key = (target, length + 1)
                if key not in ids:
                    ids[key] = self.new_state()
                    queue.append(key)
                self.add_edge(here, byte, last, ids[key])

    def build_charset(self, node: CharSet, start: int, end: int) -> None:
        ranges = _ascii_ranges(node)
        if ranges is not None:  # one byte each: most literals
            for lo, hi in ranges:
                self.edges += (start, lo, hi, end)
            return
        inner, plan = _utf8_plan(node.ranges)
        block = plan.copy()
        ends = block[:, ::3]  # sources and targets: inner states, or the START / END codes
        base = self.new_states(inner)
        inside = ends >= 0
        ends[inside] += base
        ends[ends == _START] = start
        ends[ends == _END] = end
        self.edge_blocks.append(block)

    def build_concat(self, node: Concat, start: int, end: int) -> None:
        """Chain ``node``'s items through fresh states; ASCII characters (literals: most of
        a schema's keys) are wired here directly, the commonest node by far."""
        items = node.items
        if not items:
            self.add_eps(start, end)
            return
        last = len(items) - 1
        base = self.new_states(last) if last else 0
        edges = self.edges
        current = start
        for k, item in enumerate(items):
            nxt = end if k == last else base + k
            ranges = _ascii_ranges(item)
            if ranges is not None:
                for lo, hi in ranges:
                    edges += (current, lo, hi, nxt)
            else:
                self.build(item, current, nxt)
            current = nxt

    def build_repeat(self, node: Repeat, start: int, end: int) -> None:
        """``node.item`` ``node.min`` to ``node.max`` times.

        Unbounded, the last required copy is the loop's own first pass (``x+`` is one
        copy of ``x`` entered once and repeated, not ``x x*``): two copies would give the
        subset construction two equal states for every point of ``x`` (after the first
        digit of a number and after the later ones), which only minimisation merges,
        and the schema's whole automaton is not minimised."""
        unbounded = node.max is None
        at_least_one = unbounded and node.min > 0
        current = start
        for _ in range(node.min - 1 if at_least_one else node.min):
            nxt = self.new_state()
            self.build(node.item, current, nxt)
            current = nxt
        if unbounded:
            ranges = _ascii_ranges(node.item)
            if ranges is not None:  # one looping state (flexible whitespace: hundreds per schema)
                loop = self.new_state()
                self.eps += (loop, end)
                for lo, hi in ranges:
                    self.edges += (loop, lo, hi, loop)
                    if at_least_one:
                        self.edges += (current, lo, hi, loop)
                if not at_least_one:
                    self.eps += (current, loop)
                return
            loop_in, loop_out = self.new_state(), self.new_state()
            self.add_eps(current, loop_in)
            self.build(node.item, loop_in, loop_out)
            self.add_eps(loop_out, loop_in)
            self.add_eps(loop_out if at_least_one else loop_in, end)
            return
        for _ in range(node.max - node.min):
            nxt = self.new_state()
            self.add_eps(current, end)
            self.build(node.item, current, nxt)
            current = nxt
        self.add_eps(current, end)


#: :meth:`_NFA.build` by node type.
_BUILDERS = {CharSet: _NFA.build_charset, Concat: _NFA.build_concat, Alt: _NFA.build_alt,
             Repeat: _NFA.build_repeat, Automaton: _NFA.build_embedded, Graph: _NFA.build_graph}


def _ascii_ranges(node: RegexNode) -> tuple | None:
    """The byte ranges of an ASCII character set (one byte per character), else None.

    Ranges are sorted, so the last one's end decides."""
    if type(node) is CharSet and node.ranges and node.ranges[-1][1] < 0x80:
        return node.ranges
    return None


#: DFAs of at most this many states are wired into an NFA move by move (:meth:`_NFA.build_few`).
_FEW_STATES = 4

#: The codes :func:`_utf8_plan` writes for the fragment's own start and end states.
_START, _END = -1, -2


@lru_cache(maxsize=4096)
def _utf8_plan(ranges: tuple[tuple[int, int], ...]) -> tuple[int, np.ndarray]:
    """A non-ASCII character set's NFA fragment, planned once per set: the number of inner
    states and the ``(source, lo, hi, target)`` moves, ends numbered from 0 or :data:`_START`
    / :data:`_END`.  Sequences sharing a suffix (the trailing ``[80-BF][80-BF]``) share
    states.  A word pattern under a count (``^(?:\\S+\\s+){0,99}\\S+$``) wires ``\\S``
    hundreds of times: planning each copy anew was a third of such a schema's compile."""
    suffix_states: dict[tuple, int] = {}
    moves: list[tuple[int, int, int, int]] = []
    for seq in ranges_to_utf8_sequences(ranges):
        target = _END
        for k in range(len(seq) - 1, 0, -1):
            key = seq[k:]
            state = suffix_states.get(key)
            if state is None:
                state = suffix_states[key] = len(suffix_states)
                moves.append((state, *seq[k], target))
            target = state
        moves.append((_START, *seq[0], target))
    plan = np.array(moves, dtype=np.int32).reshape(-1, 4)
    plan.setflags(write=False)
    return len(suffix_states), plan


class _CSR(NamedTuple):
    """An NFA as flat int32 arrays: state ``s``'s moves are ``[ptr[s]:ptr[s + 1]]`` slices."""

    eps_ptr: np.ndarray
    eps_dst: np.ndarray
    edge_ptr: np.ndarray
    edge_lo: np.ndarray
    edge_hi: np.ndarray
    edge_dst: np.ndarray


def _byte_runs(row: list[int]):
    """``(lo, hi, target)`` for each maximal run of bytes with one live target in a row."""
    byte = 0
    while byte < 256:
        target = row[byte]
        last = byte
        while last + 1 < 256 and row[last + 1] == target:
            last += 1
        if target >= 0:
            yield byte, last, target
        byte = last + 1


def _closure_fn(nfa: "_ListNFA"):
    """Return a memoised epsilon-closure of single NFA states."""
    memo: dict[int, frozenset[int]] = {}

    def closure(state: int) -> frozenset[int]:
        found = memo.get(state)
        if found is not None:
            return found
        seen = {state}
        stack = [state]
        while stack:
            for nxt in nfa.eps[stack.pop()]:
                if nxt not in seen:
                    seen.add(nxt)
                    stack.append(nxt)
        result = frozenset(seen)
        memo[state] = result
        return result

    return closure


def _byte_partition(edges: dict[tuple[int, int], set[int]]):
    """Split the byte axis into intervals on which the set of NFA targets is constant."""
    keys = sorted(edges)
    if all(a[1] < b[0] for a, b in zip(keys, keys[1:])):
        # Disjoint ranges (the common case: literals, one class per state).
        for lo, hi in keys:
            yield lo, hi + 1, edges[(lo, hi)]
        return
    points = sorted({lo for lo, _ in keys} | {hi + 1 for _, hi in keys})
    for a, b in zip(points, points[1:]):
        targets: set[int] = set()
        for lo, hi in keys:
            if lo <= a and b - 1 <= hi:
                targets |= edges[(lo, hi)]
        if targets:
            yield a, b, targets


class _ListNFA(NamedTuple):
    """An NFA as per-state Python lists, for the reference construction."""

    eps: list[list[int]]
    edges: list[list[tuple[int, int, int]]]

    @staticmethod
    def from_csr(csr: _CSR) -> "_ListNFA":
        eps_ptr, edge_ptr = csr.eps_ptr.tolist(), csr.edge_ptr.tolist()
        eps_dst = csr.eps_dst.tolist()
        edges = list(zip(csr.edge_lo.tolist(), csr.edge_hi.tolist(), csr.edge_dst.tolist()))
        return _ListNFA([eps_dst[a:b] for a, b in zip(eps_ptr, eps_ptr[1:])],
                        [edges[a:b] for a, b in zip(edge_ptr, edge_ptr[1:])])


def _too_many_dfa_states() -> RegexError:
    return RegexError(f"its automaton would have more than {MAX_DFA_STATES:,} states", "", 0)


def _subset_construction(nfa: _NFA, starts: tuple[int, ...], finals: dict[int, int], *, live_only: bool = False):
    """Determinise the NFA; returns (trans, labels, start_ids) with -1 for missing bytes.

    ``finals`` maps accepting NFA states to a rank; a DFA state's label is the
    smallest rank among its accepting members (-1: not accepting).  DFA states are
    numbered in discovery order, the starts first.  Runs the numba kernel (the
    Python loop over frozensets was most of a JSON Schema's compile time);
    :func:`_subset_construction_reference` is the same algorithm in Python.

    ``live_only`` determinises the NFA less its moves into dead states: every DFA
    state is then live, except a start whose NFA state is dead (no moves, not
    accepting); :func:`_live_dfa` is the call that relies on it.
    """
    from ._dfa_kernels import SUBSET_OVERFLOW, subset_construction

    rank = np.full(nfa.num_states, -1, dtype=np.int32)
    rank[list(finals)] = list(finals.values())
    trans, labels, start_ids, status = subset_construction(
        *nfa.csr(rank >= 0 if live_only else None), rank, np.asarray(starts, dtype=np.int32), MAX_DFA_STATES)
    if status == SUBSET_OVERFLOW:
        raise _too_many_dfa_states()
    return trans, labels, tuple(start_ids.tolist())


def _live_dfa(nfa: _NFA, start: int, final: int):
    """``(trans, labels, (start,))``: the NFA from ``start`` to ``final`` determinised with
    every state live, as :func:`_prune_dead` would leave it (same states, same numbering,
    or fewer where dead NFA states made two sets differ); None when the language is empty.

    Dead moves are dropped from the NFA before the construction instead of dead states
    from the DFA after it, so the search runs over the NFA's moves, not the table."""
    trans, labels, starts = _subset_construction(nfa, (start,), {final: 0}, live_only=True)
    first = starts[0]
    if labels[first] < 0 and not (trans[first] >= 0).any():  # the start reaches nothing
        return None
    return _owned(trans), labels, starts


def _subset_construction_reference(nfa: _NFA, starts: tuple[int, ...], finals: dict[int, int]):
    """Pure-Python :func:`_subset_construction` (same contract, same state numbering).

    Kept as the readable specification of the numba kernel, which the tests compare
    against it.
    """
    nfa = _ListNFA.from_csr(nfa.csr())
    closure = _closure_fn(nfa)
    index: dict[frozenset[int], int] = {}
    order: list[frozenset[int]] = []
    for start in starts:  # DFA states 0..len(starts)-1 (or fewer, if two coincide) are the starts
        start_set = closure(start)
        if start_set not in index:
            index[start_set] = len(order)
            order.append(start_set)
    rows: list[np.ndarray] = []
    while len(rows) < len(order):
        members = order[len(rows)]
        grouped: dict[tuple[int, int], set[int]] = {}
        for state in members:
            for lo, hi, tgt in nfa.edges[state]:
                grouped.setdefault((lo, hi), set()).add(tgt)
        row = np.full(256, -1, dtype=np.int32)
        for a, b, targets in _byte_partition(grouped):
            target_set = frozenset().union(*(closure(t) for t in targets))
            dfa_state = index.get(target_set)
            if dfa_state is None:
                dfa_state = len(order)
                if dfa_state >= MAX_DFA_STATES:
                    raise _too_many_dfa_states()
                index[target_set] = dfa_state
                order.append(target_set)
            row[a:b] = dfa_state
        rows.append(row)
    trans = np.stack(rows) if rows else np.full((1, 256), -1, dtype=np.int32)
    labels = np.array([min((finals[m] for m in members if m in finals), default=-1) for members in order],
                      dtype=np.int32)
    return trans, labels, tuple(index[closure(start)] for start in starts)


def _kernel_arrays(trans: np.ndarray, accepting: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """A table and its accepting flags in the one layout the kernels are compiled for
    (C-ordered int32 and bool: another layout would compile a kernel again, for seconds,
    in the middle of a compile)."""
    return np.ascontiguousarray(trans, dtype=np.int32), np.ascontiguousarray(accepting, dtype=np.bool_)


def _live_states(trans: np.ndarray, accepting: np.ndarray) -> np.ndarray:
    """States from which an accepting state is reachable (a numba reverse search)."""
    from ._dfa_kernels import live_states

    return live_states(*_kernel_arrays(trans, accepting))


def _live_states_reference(trans: np.ndarray, accepting: np.ndarray) -> np.ndarray:
    """Pure-Python :func:`_live_states` (reverse breadth-first search), for the tests."""
    src, byte = np.nonzero(trans >= 0)
    dst = trans[src, byte]
    n = trans.shape[0]
    keys = np.unique(dst.astype(np.int64) * n + src)  # sorted by destination
    pairs = np.stack([keys // n, keys % n], axis=1)
    starts = np.searchsorted(pairs[:, 0], np.arange(n + 1))
    live = accepting.copy()
    stack = list(np.nonzero(accepting)[0])
    while stack:
        state = stack.pop()
        for pred in pairs[starts[state] : starts[state + 1], 1]:
            if not live[pred]:
                live[pred] = True
                stack.append(pred)
    return live


def _prune_dead(trans: np.ndarray, labels: np.ndarray, starts: tuple[int, ...]):
    """Drop states that cannot reach acceptance (label >= 0); their incoming bytes become -1.

    Returns None when a start state is dead (its language is empty).
    """
    live = _live_states(trans, labels >= 0)
    if not all(live[start] for start in starts):
        return None
    if live.all():  # the usual case for automata built from all-live parts: nothing to renumber
        return _owned(trans), labels, starts
    from ._dfa_kernels import gather_rows

    kept = np.flatnonzero(live)
    new_index = np.full(trans.shape[0], -1, dtype=np.int32)
    new_index[kept] = np.arange(kept.size, dtype=np.int32)
    pruned = gather_rows(np.ascontiguousarray(trans, dtype=np.int32), kept, new_index)
    return pruned, labels[live], tuple(int(new_index[start]) for start in starts)


def _owned(trans: np.ndarray) -> np.ndarray:
    """``trans`` as a C-ordered int32 table, copied when it is a view holding a much
    larger buffer alive (subset construction over-allocates its rows by up to 2x)."""
    trans = np.ascontiguousarray(trans, dtype=np.int32)
    base = trans.base
    if isinstance(base, np.ndarray) and base.nbytes > trans.nbytes + trans.nbytes // 4:
        trans = trans.copy()
    return trans


def _distinct_columns(trans: np.ndarray) -> np.ndarray:
    """The distinct columns of ``trans`` (bytes that behave alike share one column).

    Hashing 256 column byte-strings is ~50x faster than ``np.unique(axis=1)``.
    """
    by_content: dict[bytes, int] = {}
    keep = []
    for byte, column in enumerate(np.ascontiguousarray(trans.T)):
        key = column.tobytes()
        if key not in by_content:
            by_content[key] = byte
            keep.append(byte)
    return trans[:, keep]


def _inverse_transitions(compact: np.ndarray) -> list[list[list[int]]]:
    """``inverse[c][t]``: the states that go to ``t`` on byte class ``c`` (sink included)."""
    n = compact.shape[0]
    inverse = []
    for column in compact.T:
        order = np.argsort(column, kind="stable")
        bounds = np.searchsorted(column[order], np.arange(n + 2)).tolist()
        sources = order.tolist()
        inverse.append([sources[bounds[t] : bounds[t + 1]] for t in range(n + 1)])
    return inverse


def _hopcroft_blocks_reference(compact: np.ndarray, labels: np.ndarray) -> np.ndarray:
    """Pure-Python Hopcroft partition refinement (the numba kernel's specification, for the tests).

    The sink (state ``n``) starts with the rejecting states.
    """
    n, num_classes = compact.shape
    inverse = _inverse_transitions(compact)
    by_label: dict[int, set[int]] = {-1: {n}}
    for state, label in enumerate(labels.tolist()):
        by_label.setdefault(label, set()).add(state)
    blocks = list(by_label.values())
    block_of = [0] * (n + 1)
    for index, members in enumerate(blocks):
        for state in members:
            block_of[state] = index
    # Splitting by every initial block but the largest is enough (Hopcroft's lemma).
    largest = max(range(len(blocks)), key=lambda i: len(blocks[i]))
    work = {(i, c) for i in range(len(blocks)) if i != largest for c in range(num_classes)}
    while work:
        splitter, c = work.pop()
        by_block: dict[int, list[int]] = {}
        for target in blocks[splitter]:
            for state in inverse[c][target]:
                by_block.setdefault(block_of[state], []).append(state)
        for index, members in by_block.items():
            old = blocks[index]
            if len(members) == len(old):
                continue
            part = set(members)
            old -= part
            new_index = len(blocks)
            blocks.append(part)
            for state in part:
                block_of[state] = new_index
            for cls in range(num_classes):
                if (index, cls) in work:
                    work.add((new_index, cls))
                else:
                    work.add((new_index if len(part) <= len(old) else index, cls))
    # Dense numbering of the real states' blocks (the sink's block holds only the sink,
    # because every real state is live).
    _, dense = np.unique(np.asarray(block_of[:n]), return_inverse=True)
    return dense.reshape(-1)


def _minimize(trans: np.ndarray, labels: np.ndarray, starts: tuple[int, ...], *, reference: bool = False):
    """Merge equivalent states (same label, same futures); returns (trans, labels, start).

    Blocks come from the numba Hopcroft kernel over byte classes; ``reference=True``
    uses the pure-Python refinement instead (for the tests).
    """
    from ._dfa_kernels import byte_classes, gather_rows, hopcroft_blocks

    n = trans.shape[0]
    trans = np.ascontiguousarray(trans, dtype=np.int32)
    labels = np.ascontiguousarray(labels, dtype=np.int32)
    if reference:
        columns = _distinct_columns(trans)
        block = _hopcroft_blocks_reference(np.where(columns < 0, n, columns), labels)
    else:
        block = hopcroft_blocks(byte_classes(trans), labels)
    num_blocks = int(block.max()) + 1
    representative = np.full(num_blocks, -1, dtype=np.int64)
    representative[block[::-1]] = np.arange(n - 1, -1, -1)  # first state of each block
    mapped = gather_rows(trans, representative, block.astype(np.int32))
    return mapped, labels[representative], tuple(int(block[start]) for start in starts)


# Finite languages up to this many strings get the direct trie construction.
_MAX_LITERAL_STRINGS = 50_000


def _literal_strings(node) -> list[bytes] | None:
    """The strings of a tree that is a finite set of literals (alternations of words), else None."""
    if isinstance(node, CharSet):
        (lo, hi), *rest = node.ranges if node.ranges else ((1, 0),)
        return [chr(lo).encode("utf-8")] if not rest and lo == hi and not 0xD800 <= lo <= 0xDFFF else None
    if isinstance(node, Alt):
        out: list[bytes] = []
        for item in node.items:
            strings = _literal_strings(item)
            if strings is None or len(out) + len(strings) > _MAX_LITERAL_STRINGS:
                return None
            out.extend(strings)
        return out
    if isinstance(node, Concat):
        out = [b""]
        for item in node.items:
            strings = _literal_strings(item)
            if strings is None or len(out) * len(strings) > _MAX_LITERAL_STRINGS:
                return None
            out = [a + b for a in out for b in strings]
        return out
    return None


def byte_trie(strings: list[bytes]) -> tuple[list[dict[int, int]], list[bool]]:
    """A trie of byte strings: each node's children by byte (node 0 the root, every node
    after its parent), and which nodes end one of the strings."""
    children: list[dict[int, int]] = [{}]
    ends = [False]
    for data in strings:
        state = 0
        for byte in data:
            nxt = children[state].get(byte)
            if nxt is None:
                nxt = len(children)
                children[state][byte] = nxt
                children.append({})
                ends.append(False)
            state = nxt
        ends[state] = True
    return children, ends


def _trie_dfa(strings: list[bytes]) -> ByteDFA:
    """Minimal DFA of a finite set of strings: a byte trie, then merging equal suffixes.

    A trie is acyclic and its children come after their parents, so walking states
    from the last to the first and interning each by (accepting, transitions to
    already-canonical states) minimises it in one linear pass.
    """
    children, accepting = byte_trie(strings)
    canonical = [0] * len(children)
    signatures: dict[tuple, int] = {}
    for state in range(len(children) - 1, -1, -1):
        key = (accepting[state], tuple(sorted((b, canonical[c]) for b, c in children[state].items())))
        canonical[state] = signatures.setdefault(key, len(signatures))
    # Renumber so that the start state is 0.
    order = {canonical[0]: 0}
    for key_id in range(len(signatures)):
        order.setdefault(key_id, len(order))
    trans = np.full((len(signatures), 256), -1, dtype=np.int32)
    accept = np.zeros(len(signatures), dtype=bool)
    for (is_accepting, edges), key_id in signatures.items():
        row = order[key_id]
        accept[row] = is_accepting
        for byte, child in edges:
            trans[row, byte] = order[child]
    return ByteDFA(trans, accept, 0)


def build_byte_dfa(tree: RegexNode, pattern: str = "", *, minimize: bool = True) -> ByteDFA:
    """Build the minimal byte-level DFA of a regex tree (every state live).

    ``minimize=False`` skips the state merging (the result is still deterministic
    and all-live, only possibly larger): for big automata built from trees whose
    subset construction is already near-minimal, where merging would cost more
    than the extra states ever will.

    Raises
    ------
    RegexError
        When the automaton is too large; :class:`EmptyLanguageError` (a subclass)
        when the language is empty (nothing can ever match).
    """
    strings = _literal_strings(tree)
    if strings is not None and any(strings):
        return _trie_dfa(strings)
    nfa = _NFA()
    start, final = nfa.new_state(), nfa.new_state()
    nfa.build(tree, start, final)
    pruned = _live_dfa(nfa, start, final)
    if pruned is None:
        raise EmptyLanguageError(pattern)
    trans, labels, (start_state,) = _minimize(*pruned) if minimize else pruned
    return ByteDFA(np.ascontiguousarray(trans, dtype=np.int32), labels >= 0, start_state)


def build_labeled_dfa(trees, shortest, max_len=None, second_start=None):
    """Union DFA of several regex trees, for a lexer: ``(trans, labels, starts)``.

    A state's label is the index of the first tree (in the given order, i.e. the
    tie-break order) that accepts there, -1 if none.  States labelled with a
    ``shortest`` tree lose their outgoing bytes (a lazy terminal ends at its first
    acceptance).  ``max_len[i]``, when not None, keeps only the strings of tree ``i``
    of at most that many bytes.  ``second_start[i]`` True leaves tree ``i`` out of a
    second start state (``starts[1]``), e.g. to forbid two whitespace lexemes in a
    row.  Minimal, every state live.
    """
    nfa = _NFA()
    starts = [nfa.new_state()] + ([nfa.new_state()] if second_start is not None else [])
    finals: dict[int, int] = {}
    bounds = list(max_len) if max_len is not None else [None] * len(trees)
    excluded = list(second_start) if second_start is not None else [False] * len(trees)
    for index, (tree, bound) in enumerate(zip(trees, bounds)):
        final = nfa.new_state()
        entry = nfa.new_state()
        for k, start in enumerate(starts):
            if k == 0 or not excluded[index]:
                nfa.add_eps(start, entry)
        if bound is None:
            nfa.build(tree, entry, final)
        else:
            nfa.build_bounded(build_byte_dfa(tree), entry, final, bound)
        finals[final] = index
    trans, labels, dfa_starts = _subset_construction(nfa, tuple(starts), finals)
    cut = np.asarray(list(shortest), dtype=bool)
    if cut.any():
        trans[(labels >= 0) & cut[np.maximum(labels, 0)]] = -1
    pruned = _prune_dead(trans, labels, dfa_starts)
    if pruned is None:
        raise RegexError("no terminal matches any string", "", 0)
    trans, labels, dfa_starts = _minimize(*pruned)
    return np.ascontiguousarray(trans, dtype=np.int32), labels.astype(np.int32), dfa_starts


def regex_to_dfa(pattern: str) -> ByteDFA:
    """Parse an ECMA-262 regex and build its minimal byte-level DFA (full-match semantics).

    A pattern with look-aheads or word boundaries is built the way a JSON Schema
    ``pattern`` is (filters on what follows, assertion markers), anchored at both ends:
    that machinery lives with JSON Schema strings, which first needed it."""
    try:
        return build_byte_dfa(parse_regex(pattern), pattern)
    except AssertionNotHere:
        from ..grammar.json_schema.strings import whole_match_dfa

        return whole_match_dfa(pattern)
    except RegexError as err:
        if err.pattern or not pattern:
            raise
        raise RegexError(err.reason, pattern, err.position) from None


def warm_up() -> None:
    """Compile (or load from numba's disk cache) every kernel of this pipeline, once per process.

    The first call of each kernel costs seconds of JIT (hundreds of milliseconds to
    load it from the cache); calling this before timing or forking keeps that out
    of any one compile.  A regex that is not a finite word list takes the general
    path: subset construction, dead-state pruning, minimisation; a difference takes
    the product kernel.
    """
    from .dfa_ops import bound_runs, difference, without_words  # dfa_ops builds on this module

    looping = build_byte_dfa(parse_regex("(a|bc)*d"))
    looping.run_table()
    difference(looping, build_byte_dfa(parse_regex("ad")))
    words = without_words(build_byte_dfa(parse_regex("[ab]+ *")), [b"a", b"ab"])
    bound_runs(words, words.trans[:, 32] == np.arange(words.num_states), b" ", 2)
    from .pushdown import COUNTED_SYMBOLS, PushdownDFA, call_marker, inline_calls  # pushdown imports this module

    symbol = COUNTED_SYMBOLS[0]
    quoted = build_byte_dfa(parse_regex('"a*"'))
    inline_calls(call_marker(symbol), symbol, quoted, MAX_DFA_STATES)
    PushdownDFA(call_marker(), quoted)
    from ._dfa_kernels import counted_copies, steps_to_end, string_loops, unit_pairs

    table = np.ascontiguousarray(looping.trans, dtype=np.int32)
    unit_pairs(table, int(looping.start), table, int(looping.start), np.ascontiguousarray(looping.accepting))
    step = np.zeros(1, dtype=np.int32)
    counted_copies(table, table >= 0, step, step, np.ascontiguousarray(looping.accepting), 0, ord('"'))
    steps_to_end(table, looping.accepting.astype(np.int64), np.ascontiguousarray(looping.accepting))

    string_loops(looping.trans, looping.start, 0, np.full(2 * looping.num_states, -1, dtype=np.int64))
