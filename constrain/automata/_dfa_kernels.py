"""numba kernels of the regex-to-DFA pipeline: subset construction, dead-state search,
minimisation, and the product of two DFAs.

The Python versions in :mod:`constrain.automata.byte_dfa` spend their time in
per-state loops over frozensets and dicts; these kernels do the same work over
flat int32 arrays (a CSR form of the NFA).  Every kernel is ``cache=True`` (a
warm process loads machine code from disk) and is compiled on first use by
:func:`warm_up`, which the compiler calls once per process, so that no JIT time
lands in a schema's compile time.  Importing this module compiles nothing.
"""

from __future__ import annotations

import numpy as np
from numba import njit

__all__ = ["subset_construction", "moves_into_live", "live_states", "pair_product", "SUBSET_OVERFLOW",
           "PRODUCT_OVERFLOW", "PRODUCT_MODES", "json_places"]

#: Status returned by :func:`subset_construction` when the DFA state limit is hit.
SUBSET_OVERFLOW = 1

_HASH_SEED = np.uint64(0xCBF29CE484222325)
_HASH_PRIME = np.uint64(0x100000001B3)


@njit(cache=True, nogil=True, inline="always")
def _hash_members(members):  # pragma: no cover - compiled
    """64-bit FNV-style hash of a sorted int32 member array."""
    h = _HASH_SEED
    for m in members:
        h = (h ^ np.uint64(m)) * _HASH_PRIME
        h ^= h >> np.uint64(29)
    return h


@njit(cache=True, nogil=True, inline="always")
def _grow_1d(array, needed):  # pragma: no cover - compiled
    """``array`` itself when it holds ``needed`` items, else a copy at least twice as long."""
    if needed <= array.shape[0]:
        return array
    out = np.empty(max(needed, 2 * array.shape[0]), array.dtype)
    out[: array.shape[0]] = array
    return out


@njit(cache=True, nogil=True, inline="always")
def _grouped(keys, values, size, count):  # pragma: no cover - compiled
    """``(ptr, grouped)``: the first ``count`` of ``values`` grouped by their ``keys``
    (ids below ``size``) in their order, a counting sort; key ``k``'s values are
    ``grouped[ptr[k]:ptr[k + 1]]``.  Reverse graphs and the NFA's CSR form are built so."""
    ptr = np.zeros(size + 1, np.int64)
    for i in range(count):
        ptr[keys[i] + 1] += 1
    for k in range(size):
        ptr[k + 1] += ptr[k]
    grouped = np.empty(count, values.dtype)
    fill = ptr[:size].copy()
    for i in range(count):
        grouped[fill[keys[i]]] = values[i]
        fill[keys[i]] += 1
    return ptr, grouped


@njit(cache=True, nogil=True, inline="always")
def _visit(state, stamp, generation, out, size, stack, top):  # pragma: no cover - compiled
    """Add ``state`` to the closure being built unless it is there; returns the new (size, top)."""
    if stamp[state] == generation:
        return size, top
    stamp[state] = generation
    out[size] = state
    stack[top] = state
    return size + 1, top + 1


@njit(cache=True, nogil=True, inline="always")
def _closure(seeds, num_seeds, eps_ptr, eps_dst, stamp, generation, stack, out):  # pragma: no cover
    """Epsilon closure of ``seeds[:num_seeds]`` into ``out`` (unsorted); returns its size.

    ``stamp[s] == generation`` marks states already found, so no clearing is needed
    between calls.
    """
    size = 0
    top = 0
    for k in range(num_seeds):
        size, top = _visit(seeds[k], stamp, generation, out, size, stack, top)
    while top > 0:
        top -= 1
        s = stack[top]
        for e in range(eps_ptr[s], eps_ptr[s + 1]):
            size, top = _visit(eps_dst[e], stamp, generation, out, size, stack, top)
    return size


@njit(cache=True, nogil=True, inline="always")
def _find_or_add(members, set_ptr, set_buf, set_hash, table):  # pragma: no cover
    """The id of the set ``members`` (sorted), or ``-1 - slot`` when it is new (``slot``: where it goes)."""
    h = _hash_members(members)
    mask = np.uint64(table.shape[0] - 1)
    slot = np.int64(h & mask)
    size = members.shape[0]
    while True:
        found = table[slot]
        if found < 0:
            return -1 - slot
        if set_hash[found] == h and set_ptr[found + 1] - set_ptr[found] == size:
            base = set_ptr[found]
            same = True
            for k in range(size):
                if set_buf[base + k] != members[k]:
                    same = False
                    break
            if same:
                return found
        slot = np.int64((np.uint64(slot) + np.uint64(1)) & mask)


@njit(cache=True, nogil=True)
def _rehash(set_hash, num_sets, capacity):  # pragma: no cover - compiled
    """A fresh open-addressing table of ``capacity`` slots holding states ``0..num_sets-1``."""
    table = np.full(capacity, -1, np.int32)
    mask = np.uint64(capacity - 1)
    for i in range(num_sets):
        slot = np.int64(set_hash[i] & mask)
        while table[slot] >= 0:
            slot = np.int64((np.uint64(slot) + np.uint64(1)) & mask)
        table[slot] = i
    return table


#: Longest prefix :func:`_sort_prefix` sorts by insertion.
_INSERTION_SORT_MAX = 48


@njit(cache=True, nogil=True, inline="always")
def _sort_prefix(values, size):  # pragma: no cover - compiled
    """``values[:size]`` sorted in place (insertion sort) and returned as a view.

    Closures and a row's interval points are a handful of items: ``np.sort`` would
    allocate a copy for each, which cost more than the whole row's other work.  Past
    :data:`_INSERTION_SORT_MAX` items the quadratic sort loses (a closure of hundreds
    of states in a wide ``anyOf``), and ``np.sort`` takes over.
    """
    if size > _INSERTION_SORT_MAX:
        values[:size] = np.sort(values[:size])
        return values[:size]
    for i in range(1, size):
        item = values[i]
        j = i - 1
        while j >= 0 and values[j] > item:
            values[j + 1] = values[j]
            j -= 1
        values[j + 1] = item
    return values[:size]


@njit(cache=True, nogil=True)
def group_by_source(moves, num_states):  # pragma: no cover - compiled
    """``(ptr, columns)``: ``moves`` (rows whose column 0 is a source state) grouped by
    source in their order (a counting sort), ``columns[j]`` their column ``j + 1``
    (each row of ``columns`` contiguous, as the subset construction reads it) and
    state ``s``'s moves at ``[ptr[s]:ptr[s + 1]]``.  With numpy's stable argsort and
    column copies instead, the CSR form took 19.5 ms for the 430 NFAs of 400 median
    schemas (3 % of their compile); with this, 12 ms."""
    m, width = moves.shape
    ptr, order = _grouped(moves[:, 0], np.arange(m), num_states, m)
    columns = np.empty((width - 1, m), np.int32)
    for i in range(m):
        for j in range(1, width):
            columns[j - 1, i] = moves[order[i], j]
    return ptr.astype(np.int32), columns


@njit(cache=True, nogil=True)
def moves_into_live(eps, edges, accepting):  # pragma: no cover - compiled
    """``(eps, edges)`` less the moves into NFA states from which no accepting state is
    reachable (a reverse depth-first search over both kinds of move).

    Determinising what is left makes only live DFA states: a set of NFA states can
    reach acceptance exactly when one of its members can, and every set the
    construction makes holds the live target it was made for.  So the dead-state
    search over the whole ``[states, 256]`` table, and the renumbering after it, are
    not needed (they were a twentieth of a median schema's compile).
    """
    n = accepting.shape[0]
    k, m = eps.shape[0], edges.shape[0]
    targets = np.empty(k + m, np.int32)
    sources = np.empty(k + m, np.int32)
    for i in range(k):
        targets[i] = eps[i, 1]
        sources[i] = eps[i, 0]
    for i in range(m):
        targets[k + i] = edges[i, 3]
        sources[k + i] = edges[i, 0]
    ptr, preds = _grouped(targets, sources, n, k + m)
    live = _reaching(accepting, ptr, preds)
    return _rows_into(eps, 1, live), _rows_into(edges, 3, live)


@njit(cache=True, nogil=True)
def _rows_into(moves, column, live):  # pragma: no cover - compiled
    """The rows of ``moves`` whose ``column`` (a target state) is ``live``, in order."""
    count = 0
    for i in range(moves.shape[0]):
        if live[moves[i, column]]:
            count += 1
    kept = np.empty((count, moves.shape[1]), np.int32)
    count = 0
    for i in range(moves.shape[0]):
        if live[moves[i, column]]:
            kept[count] = moves[i]
            count += 1
    return kept


@njit(cache=True, nogil=True)
def subset_construction(eps_ptr, eps_dst, edge_ptr, edge_lo, edge_hi, edge_dst, rank, starts, max_states):
    """Determinise a byte-range NFA given in CSR form; ``(trans, labels, start_ids, status)``.

    NFA state ``s`` has epsilon moves to ``eps_dst[eps_ptr[s]:eps_ptr[s+1]]`` and byte
    edges ``edge_lo/edge_hi/edge_dst[edge_ptr[s]:edge_ptr[s+1]]`` (inclusive ranges).
    ``rank[s]`` is ``-1`` or the rank of an accepting state; a DFA state's label is the
    smallest rank among its members.  DFA states are numbered in discovery order:
    the starts' closures first, then breadth first, each row scanned in byte order,
    which is exactly the order of the reference Python construction.

    Member sets are interned as sorted slices of one flat buffer
    (``set_buf[set_ptr[i]:set_ptr[i + 1]]``), found again through an open-addressing
    table on their 64-bit hash and verified member by member.  JSON's NFAs are nearly
    deterministic, so most intervals have one target NFA state: the DFA state of that
    state's closure is remembered (``single``) and reused without a closure, sort or
    hash (a third of the construction's time on a median schema).  ``status`` is
    ``SUBSET_OVERFLOW`` (and the arrays partial) when a state numbered ``max_states``
    would be created.
    """
    n = eps_ptr.shape[0] - 1
    stamp = np.zeros(n, np.int64)
    single = np.full(n, -1, np.int32)  # the state of closure({t}), once found
    stack = np.empty(n, np.int32)
    scratch = np.empty(n, np.int32)
    # Rows are 1 KiB: growing the table by copies was a third of a large schema's
    # construction.  Most DFAs here have fewer states than the NFA (JSON's NFAs are
    # nearly deterministic), so that many rows are reserved; ``np.empty`` only reserves
    # the address space, and :func:`_add_set` writes each row when its state is made.
    capacity = max(64, min(n, max_states + 1))
    set_ptr = np.zeros(capacity + 1, np.int64)
    set_hash = np.zeros(capacity, np.uint64)
    set_buf = np.empty(1024, np.int32)
    labels = np.full(capacity, -1, np.int32)
    trans = np.empty((capacity, 256), np.int32)
    table = np.full(256, -1, np.int32)
    num_sets = 0
    generation = 0
    start_ids = np.empty(starts.shape[0], np.int32)
    for k in range(starts.shape[0]):
        generation += 1
        size = _closure(starts[k : k + 1], 1, eps_ptr, eps_dst, stamp, generation, stack, scratch)
        members = _sort_prefix(scratch, size)
        found = _find_or_add(members, set_ptr, set_buf, set_hash, table)
        if found < 0:
            num_sets, set_ptr, set_buf, set_hash, labels, trans, table = _add_set(
                members, found, rank, num_sets, set_ptr, set_buf, set_hash, labels, trans, table)
            found = num_sets - 1
        start_ids[k] = found
    # Per-row work arrays: interval boundaries, interval of each byte, targets per interval.
    is_point = np.zeros(257, np.bool_)
    points = np.empty(257, np.int32)
    interval_of = np.empty(257, np.int32)
    counts = np.zeros(258, np.int64)
    targets = np.empty(64, np.int32)
    fill = np.empty(258, np.int64)
    row = 0
    while row < num_sets:
        base, stop = set_ptr[row], set_ptr[row + 1]
        # The row's interval boundaries: each edge's first byte and the byte after its last.
        num_points = 0
        for k in range(base, stop):
            s = set_buf[k]
            for e in range(edge_ptr[s], edge_ptr[s + 1]):
                num_points = _add_point(np.int64(edge_lo[e]), is_point, points, num_points)
                num_points = _add_point(np.int64(edge_hi[e]) + 1, is_point, points, num_points)
        if num_points == 0:
            row += 1
            continue
        _sort_prefix(points, num_points)
        for i in range(num_points):  # only boundaries are ever looked up
            is_point[points[i]] = False
            interval_of[points[i]] = i
        num_intervals = num_points - 1
        # Targets of each interval, grouped by interval (counting sort).
        counts[: num_intervals + 1] = 0
        for k in range(base, stop):
            s = set_buf[k]
            for e in range(edge_ptr[s], edge_ptr[s + 1]):
                for iv in range(interval_of[edge_lo[e]], interval_of[edge_hi[e] + 1]):
                    counts[iv + 1] += 1
        for iv in range(num_intervals):
            counts[iv + 1] += counts[iv]
        targets = _grow_1d(targets, counts[num_intervals])
        fill[:num_intervals] = counts[:num_intervals]
        for k in range(base, stop):
            s = set_buf[k]
            for e in range(edge_ptr[s], edge_ptr[s + 1]):
                for iv in range(interval_of[edge_lo[e]], interval_of[edge_hi[e] + 1]):
                    targets[fill[iv]] = edge_dst[e]
                    fill[iv] += 1
        for iv in range(num_intervals):
            lo, hi = counts[iv], counts[iv + 1]
            if lo == hi:
                continue
            if hi - lo == 1:
                found = single[targets[lo]]
                if found >= 0:
                    trans[row, points[iv] : points[iv + 1]] = found
                    continue
            generation += 1
            size = _closure(targets[lo:hi], hi - lo, eps_ptr, eps_dst, stamp, generation, stack, scratch)
            members = _sort_prefix(scratch, size)
            found = _find_or_add(members, set_ptr, set_buf, set_hash, table)
            if found < 0:
                if num_sets >= max_states:
                    return trans[:num_sets], labels[:num_sets], start_ids, SUBSET_OVERFLOW
                num_sets, set_ptr, set_buf, set_hash, labels, trans, table = _add_set(
                    members, found, rank, num_sets, set_ptr, set_buf, set_hash, labels, trans, table)
                found = num_sets - 1
            if hi - lo == 1:
                single[targets[lo]] = found
            trans[row, points[iv] : points[iv + 1]] = found
        row += 1
    return trans[:num_sets], labels[:num_sets], start_ids, 0


@njit(cache=True, nogil=True, inline="always")
def _add_point(byte, is_point, points, num_points):  # pragma: no cover - compiled
    """Record ``byte`` as an interval boundary of the row (once); returns the new count."""
    if not is_point[byte]:
        is_point[byte] = True
        points[num_points] = byte
        num_points += 1
    return num_points


@njit(cache=True, nogil=True, inline="always")
def _add_set(members, found, rank, num_sets, set_ptr, set_buf, set_hash, labels, trans, table):  # pragma: no cover
    """Store ``members`` as DFA state ``num_sets`` (``found``: :func:`_find_or_add`'s miss code).

    Grows every per-state array as needed and returns them all with the new count.
    """
    size = members.shape[0]
    if num_sets + 1 > labels.shape[0]:
        capacity = 2 * labels.shape[0]
        set_ptr = _grow_1d(set_ptr, capacity + 1)
        set_hash = _grow_1d(set_hash, capacity)
        grown = np.full(capacity, -1, np.int32)
        grown[:num_sets] = labels[:num_sets]
        labels = grown
        wider = np.empty((capacity, 256), np.int32)
        wider[:num_sets] = trans[:num_sets]
        trans = wider
    trans[num_sets, :] = -1  # the table is allocated empty (see subset_construction)
    base = set_ptr[num_sets]
    set_buf = _grow_1d(set_buf, base + size)
    set_buf[base : base + size] = members
    set_ptr[num_sets + 1] = base + size
    set_hash[num_sets] = _hash_members(members)
    label = -1
    for m in members:
        r = rank[m]
        if r >= 0 and (label < 0 or r < label):
            label = r
    labels[num_sets] = label
    table[-1 - found] = num_sets
    num_sets += 1
    if 2 * num_sets > table.shape[0]:
        table = _rehash(set_hash, num_sets, 2 * table.shape[0])
    return num_sets, set_ptr, set_buf, set_hash, labels, trans, table


@njit(cache=True, nogil=True)
def live_states(trans, accepting):
    """States from which an accepting state is reachable (reverse depth-first search).

    The reverse graph is stored once per run of equal targets in a row, which keeps
    it small (rows are mostly a few byte ranges).
    """
    n = trans.shape[0]
    # One scan of the table: an edge per run of equal targets, then grouped by target.
    src = np.empty(4 * n + 16, np.int32)
    dst = np.empty(4 * n + 16, np.int32)
    row_targets = np.empty(256, np.int32)
    num_edges = 0
    for s in range(n):
        k = 0
        prev = -1
        for b in range(256):
            t = trans[s, b]
            if t >= 0 and t != prev:
                row_targets[k] = t
                k += 1
            prev = t
        if num_edges + k > src.shape[0]:
            src = _grow_1d(src, num_edges + k)
            dst = _grow_1d(dst, num_edges + k)
        for j in range(k):
            src[num_edges + j] = s
            dst[num_edges + j] = row_targets[j]
        num_edges += k
    counts, preds = _grouped(dst, src, n, num_edges)
    return _reaching(accepting, counts, preds)


@njit(cache=True, nogil=True)
def _reaching(accepting, ptr, preds):  # pragma: no cover - compiled
    """The states from which a state marked in ``accepting`` is reachable, by a depth-first
    search over the reverse graph (state ``s``'s predecessors are ``preds[ptr[s]:ptr[s + 1]]``)."""
    live = accepting.copy()
    stack = np.empty(accepting.shape[0], np.int32)
    top = 0
    for s in range(accepting.shape[0]):
        if live[s]:
            stack[top] = s
            top += 1
    while top > 0:
        top -= 1
        s = stack[top]
        for k in range(ptr[s], ptr[s + 1]):
            p = preds[k]
            if not live[p]:
                live[p] = True
                stack[top] = p
                top += 1
    return live


@njit(cache=True, nogil=True, inline="always")
def _row_runs(trans, s, out, k, write):  # pragma: no cover - compiled
    """Count (``write`` False) or write into ``out`` from row ``k`` on the runs of row ``s``
    (see :func:`byte_runs`); returns ``k`` plus the row's number of runs."""
    prev = -1
    for b in range(256):
        t = trans[s, b]
        if t >= 0 and t != prev:
            if write:
                out[k, 0] = s
                out[k, 1] = b
                out[k, 3] = t
            k += 1
        if write and t >= 0:
            out[k - 1, 2] = b
        prev = t
    return k


@njit(cache=True, nogil=True)
def byte_runs(trans):  # pragma: no cover - compiled
    """int32 ``[k, 4]`` rows ``(state, lo, hi, target)``: each maximal run of bytes with one
    live target, by state then byte (see :meth:`~constrain.automata.byte_dfa.ByteDFA.run_table`).

    Two row-wise passes, count then write, so the only allocation is the result.
    """
    n = trans.shape[0]
    out = np.empty((0, 4), np.int32)
    count = 0
    for s in range(n):
        count = _row_runs(trans, s, out, count, False)
    out = np.empty((count, 4), np.int32)
    k = 0
    for s in range(n):
        k = _row_runs(trans, s, out, k, True)
    return out


@njit(cache=True, nogil=True)
def gather_rows(trans, rows, new_index):
    """``new_index[trans[rows]]`` with ``-1`` kept as ``-1``, in one pass (no n x 256 temporaries)."""
    out = np.empty((rows.shape[0], 256), np.int32)
    for i in range(rows.shape[0]):
        r = rows[i]
        for b in range(256):
            t = trans[r, b]
            out[i, b] = new_index[t] if t >= 0 else -1
    return out


@njit(cache=True, nogil=True)
def byte_classes(trans):
    """Compact transition table over byte classes, ``-1`` mapped to ``n`` (the sink).

    Bytes whose columns are equal behave alike in every state, so minimisation
    only needs one column per class.  Columns are grouped by a 64-bit hash built
    row by row (the table is row-major: walking it by columns would miss the cache
    on every entry), then the grouping is verified in a second row-wise pass; a
    hash collision, should one ever occur, falls back to comparing columns.
    """
    n = trans.shape[0]
    hashes = np.full(256, _HASH_SEED, np.uint64)
    for s in range(n):
        for b in range(256):
            h = (hashes[b] ^ np.uint64(trans[s, b] + 1)) * _HASH_PRIME
            hashes[b] = h ^ (h >> np.uint64(29))
    # Each byte's representative: the smallest byte of equal hash (a stable sort groups
    # them; comparing each byte with every smaller one was 32,000 steps per table).
    rep = np.empty(256, np.int32)
    order = np.argsort(hashes, kind="mergesort")
    for k in range(256):
        b = order[k]
        rep[b] = b if k == 0 or hashes[order[k - 1]] != hashes[b] else rep[order[k - 1]]
    collision = False
    for s in range(n):
        for b in range(256):
            if trans[s, b] != trans[s, rep[b]]:
                collision = True
    if collision:
        for b in range(256):
            rep[b] = b
            for other in range(b):
                if rep[other] == other and np.array_equal(trans[:, other], trans[:, b]):
                    rep[b] = other
                    break
    kept = np.flatnonzero(rep == np.arange(256))
    compact = np.empty((n, kept.shape[0]), np.int32)
    for s in range(n):
        for k in range(kept.shape[0]):
            t = trans[s, kept[k]]
            compact[s, k] = t if t >= 0 else n
    return compact


@njit(cache=True, nogil=True, inline="always")
def _queue_entered(block, lo, hi, elems, into_ptr, into, num_classes, in_work, work, top):  # pragma: no cover
    """Queue ``(block, c)`` for each class ``c`` some move enters the block's states
    ``elems[lo:hi]`` on, unless queued already; returns the new top of ``work``."""
    for i in range(lo, hi):
        t = elems[i]
        for k in range(into_ptr[t], into_ptr[t + 1]):
            code = block * num_classes + into[k]
            if not in_work[code]:
                in_work[code] = True
                work[top] = code
                top += 1
    return top


@njit(cache=True, nogil=True)
def hopcroft_blocks(compact, labels):
    """Hopcroft's partition refinement; block of each state, numbered by first state.

    ``compact[s, c]`` is the target on byte class ``c``, ``n`` for the sink (which
    starts in the block of the rejecting states).  Blocks are contiguous runs of
    ``elems``; marking a predecessor swaps it to the front of its block, so a split
    costs only the marked states.  The worklist holds (block, class) pairs; a split
    block's new part is always the smaller one, so it is the part to add (Hopcroft's
    "add the smaller half unless the pair is already pending").
    """
    n, num_classes = compact.shape
    total = n + 1  # the sink is state n
    # Predecessors on each class: inv_src[c, inv_ptr[c, t]:inv_ptr[c, t + 1]].
    # (Row-major walks of ``compact``: it is (n, classes), C order.)
    inv_ptr = np.zeros((num_classes, total + 1), np.int32)
    for s in range(n):
        for c in range(num_classes):
            inv_ptr[c, compact[s, c] + 1] += 1
    for c in range(num_classes):
        inv_ptr[c, total] += 1  # sink -> sink
        for t in range(total):
            inv_ptr[c, t + 1] += inv_ptr[c, t]
    inv_src = np.empty((num_classes, total), np.int32)
    fill = inv_ptr[:, :total].copy()
    for s in range(n):
        for c in range(num_classes):
            t = compact[s, c]
            inv_src[c, fill[c, t]] = s
            fill[c, t] += 1
    for c in range(num_classes):
        inv_src[c, fill[c, n]] = n
    # The classes each state is entered on: a splitter (block, class) no move enters splits
    # nothing, so only these are queued (a state of a key is entered on one byte class of
    # dozens; queueing every class was most of a member loop's minimisation).
    into_ptr = np.zeros(total + 1, np.int32)
    for t in range(total):
        for c in range(num_classes):
            if inv_ptr[c, t + 1] > inv_ptr[c, t]:
                into_ptr[t + 1] += 1
        into_ptr[t + 1] += into_ptr[t]
    into = np.empty(into_ptr[total], np.int32)
    k = 0
    for t in range(total):
        for c in range(num_classes):
            if inv_ptr[c, t + 1] > inv_ptr[c, t]:
                into[k] = c
                k += 1
    # Initial partition: one block per label, the sink with label -1.
    ext_labels = np.empty(total, np.int64)
    ext_labels[:n] = labels
    ext_labels[n] = -1
    order = np.argsort(ext_labels, kind="mergesort")
    elems = order.astype(np.int32)
    loc = np.empty(total, np.int32)
    block_of = np.empty(total, np.int32)
    first = np.empty(total + 1, np.int32)
    end = np.empty(total + 1, np.int32)
    marks = np.zeros(total + 1, np.int32)
    num_blocks = 0
    for i in range(total):
        s = elems[i]
        loc[s] = i
        if i == 0 or ext_labels[s] != ext_labels[elems[i - 1]]:
            if num_blocks > 0:
                end[num_blocks - 1] = i
            first[num_blocks] = i
            num_blocks += 1
        block_of[s] = num_blocks - 1
    end[num_blocks - 1] = total
    largest = 0
    for b in range(num_blocks):
        if end[b] - first[b] > end[largest] - first[largest]:
            largest = b
    in_work = np.zeros(total * num_classes, np.bool_)
    work = np.empty(total * num_classes, np.int32)
    top = 0
    for b in range(num_blocks):
        if b != largest:
            top = _queue_entered(b, first[b], end[b], elems, into_ptr, into, num_classes, in_work, work, top)
    splitter = np.empty(total, np.int32)
    touched = np.empty(total, np.int32)
    while top > 0:
        top -= 1
        code = work[top]
        in_work[code] = False
        a, c = code // num_classes, code % num_classes
        size = end[a] - first[a]
        splitter[:size] = elems[first[a] : end[a]]  # marking may reorder block a itself
        num_touched = 0
        for i in range(size):
            t = splitter[i]
            for k in range(inv_ptr[c, t], inv_ptr[c, t + 1]):
                p = inv_src[c, k]
                b = block_of[p]
                slot = first[b] + marks[b]
                if loc[p] >= slot:  # not marked yet: swap it to the marked front
                    other = elems[slot]
                    elems[loc[p]] = other
                    loc[other] = loc[p]
                    elems[slot] = p
                    loc[p] = slot
                    if marks[b] == 0:
                        touched[num_touched] = b
                        num_touched += 1
                    marks[b] += 1
        for j in range(num_touched):
            b = touched[j]
            marked = marks[b]
            marks[b] = 0
            if marked == end[b] - first[b]:
                continue
            new = num_blocks
            num_blocks += 1
            if 2 * marked <= end[b] - first[b]:  # the marked front becomes the new block
                first[new], end[new] = first[b], first[b] + marked
                first[b] = first[b] + marked
            else:  # the unmarked rest becomes the new block
                first[new], end[new] = first[b] + marked, end[b]
                end[b] = first[b] + marked
            for i in range(first[new], end[new]):
                block_of[elems[i]] = new
            top = _queue_entered(new, first[new], end[new], elems, into_ptr, into, num_classes, in_work, work, top)
    # Dense block ids in order of each block's first state.
    dense = np.full(num_blocks, -1, np.int32)
    out = np.empty(n, np.int32)
    count = 0
    for s in range(n):
        b = block_of[s]
        if dense[b] < 0:
            dense[b] = count
            count += 1
        out[s] = dense[b]
    return out


#: Status returned by :func:`pair_product` when the state limit is hit.
PRODUCT_OVERFLOW = 1
_PRODUCT_AND, _PRODUCT_OR, _PRODUCT_DIFF = 0, 1, 2
#: ``mode`` argument of :func:`pair_product` for each operation.
PRODUCT_MODES = {"and": _PRODUCT_AND, "or": _PRODUCT_OR, "diff": _PRODUCT_DIFF}


@njit(cache=True, nogil=True, inline="always")
def _pair_slot(table_keys, key, mask):  # pragma: no cover - compiled
    """The slot of ``key`` in an open-addressing table (its own, or the empty one it would take)."""
    h = np.uint64(key) * np.uint64(0x9E3779B97F4A7C15)
    slot = np.int64((h ^ (h >> np.uint64(31))) & mask)
    while table_keys[slot] != key and table_keys[slot] != -1:
        slot = np.int64((np.uint64(slot) + np.uint64(1)) & mask)
    return slot


@njit(cache=True, nogil=True)
def _rehash_pairs(table_keys, table_ids, capacity):  # pragma: no cover - compiled
    """The pair table moved into ``capacity`` slots."""
    keys = np.full(capacity, -1, np.int64)
    ids = np.empty(capacity, np.int32)
    for old in range(table_keys.shape[0]):
        if table_keys[old] != -1:
            moved = _pair_slot(keys, table_keys[old], np.uint64(capacity - 1))
            keys[moved] = table_keys[old]
            ids[moved] = table_ids[old]
    return keys, ids


@njit(cache=True, nogil=True)
def pair_product(ta, tb, start_a, start_b, mode, max_states):  # pragma: no cover - compiled
    """Breadth-first product of two DFAs whose tables end in a sink row (``-1`` mapped to it).

    Returns ``(status, trans, pair_a, pair_b)``: the table over the reachable pairs
    (``-1`` where the pair would be dead for ``mode``: both sides in their sinks, or
    for ``and``/``diff`` the side that must stay in its language has left it), and
    each pair's two states.  ``mode`` is from :data:`PRODUCT_MODES`.  One pass over each
    pair's 256 bytes with a hash table of pairs: the Python frontier loop it replaces
    paid numpy call overhead per breadth-first layer.
    """
    sink_a = ta.shape[0] - 1
    sink_b = tb.shape[0] - 1
    width = np.int64(tb.shape[0])
    capacity = 1024
    table_keys = np.full(capacity, -1, np.int64)
    table_ids = np.empty(capacity, np.int32)
    pair_a = np.empty(512, np.int32)
    pair_b = np.empty(512, np.int32)
    trans = np.empty((512, 256), np.int32)
    key = np.int64(start_a) * width + start_b
    slot = _pair_slot(table_keys, key, np.uint64(capacity - 1))
    table_keys[slot] = key
    table_ids[slot] = 0
    pair_a[0] = start_a
    pair_b[0] = start_b
    count = 1
    done = 0
    while done < count:
        sa = pair_a[done]
        sb = pair_b[done]
        last_a = -2  # the previous byte's pair: runs of bytes (ranges) lead to one pair
        last_b = -2
        last_id = -1
        # Room for every pair the row may add, before its byte loop: growing the
        # arrays inside that loop made the whole product ten times slower.
        if count + 256 > pair_a.shape[0]:
            pair_a = _grow_1d(pair_a, count + 256)
            pair_b = _grow_1d(pair_b, count + 256)
            grown = np.empty((pair_a.shape[0], 256), np.int32)
            grown[:count] = trans[:count]
            trans = grown
        if 2 * (count + 256) > capacity:  # keep the table at most half full
            while 2 * (count + 256) > capacity:
                capacity *= 2
            table_keys, table_ids = _rehash_pairs(table_keys, table_ids, capacity)
        for byte in range(256):
            ra = ta[sa, byte]
            rb = tb[sb, byte]
            if ra == last_a and rb == last_b:
                trans[done, byte] = last_id
                continue
            last_a = ra
            last_b = rb
            last_id = -1
            dead = ra == sink_a and rb == sink_b
            if mode != _PRODUCT_OR and ra == sink_a:
                dead = True
            if mode == _PRODUCT_AND and rb == sink_b:
                dead = True
            if dead:
                trans[done, byte] = -1
                continue
            key = np.int64(ra) * width + rb
            slot = _pair_slot(table_keys, key, np.uint64(capacity - 1))
            if table_keys[slot] == -1:
                if count >= max_states:
                    return PRODUCT_OVERFLOW, trans[:0], pair_a[:0], pair_b[:0]
                table_keys[slot] = key
                table_ids[slot] = count
                pair_a[count] = ra
                pair_b[count] = rb
                count += 1
            last_id = table_ids[slot]
            trans[done, byte] = last_id
        done += 1
    return 0, trans[:count], pair_a[:count], pair_b[:count]


@njit(cache=True, nogil=True)
def trie_without_words(trans, accepting, start, data, offsets):  # pragma: no cover - compiled
    """The table of ``L(trans)`` minus the words ``data[offsets[i]:offsets[i + 1]]`` (sorted, distinct).

    A trie of the words rides on top of the DFA: each node copies the row of the
    state its prefix reaches, its children override their bytes, and nodes that
    end a word stop accepting.  Sorted words share a prefix with the one before,
    so the trie is built without lookups, and nodes come after their parents.  A
    node dies when it does not accept and every byte its state reads leads to a
    child that died (every state of the DFA itself is live).  Returns ``(trans,
    accepting, start)`` with rows ``n..`` the live nodes; start -1 when nothing is
    left.
    """
    n = trans.shape[0]
    num_words = offsets.shape[0] - 1
    capacity = data.shape[0] + 1
    parent = np.empty(capacity, np.int32)
    via = np.empty(capacity, np.int32)  # the byte from the parent
    paired = np.empty(capacity, np.int32)  # the DFA state the node's prefix reaches, -1 when it left
    ends = np.zeros(capacity, np.bool_)
    path = np.empty(capacity, np.int32)  # nodes of the previous word, by depth
    parent[0], via[0], paired[0], path[0] = -1, -1, start, 0
    count = 1
    for w in range(num_words):
        lo, hi = offsets[w], offsets[w + 1]
        shared = 0
        if w > 0:
            plo, phi = offsets[w - 1], offsets[w]
            while shared < hi - lo and shared < phi - plo and data[lo + shared] == data[plo + shared]:
                shared += 1
        for depth in range(shared, hi - lo):
            up = path[depth]
            byte = data[lo + depth]
            parent[count], via[count] = up, byte
            paired[count] = trans[paired[up], byte] if paired[up] >= 0 else -1
            path[depth + 1] = count
            count += 1
        ends[path[hi - lo]] = True
    overridden = np.zeros(count, np.int32)  # children whose byte the state reads
    live_child = np.zeros(count, np.bool_)
    live = np.zeros(count, np.bool_)
    for node in range(count - 1, -1, -1):
        state = paired[node]
        if state < 0:
            continue
        reads = 0
        for byte in range(256):
            if trans[state, byte] >= 0:
                reads += 1
        live[node] = (accepting[state] and not ends[node]) or reads > overridden[node] or live_child[node]
        if node > 0:
            overridden[parent[node]] += 1
            if live[node]:
                live_child[parent[node]] = True
    if not live[0]:
        return trans[:0], accepting[:0], -1
    row_of = np.full(count, -1, np.int32)
    kept = 0
    for node in range(count):
        if live[node]:
            row_of[node] = n + kept
            kept += 1
    out = np.empty((n + kept, 256), np.int32)
    out[:n] = trans
    out_accepting = np.empty(n + kept, np.bool_)
    out_accepting[:n] = accepting
    for node in range(count):
        if live[node]:
            out[row_of[node]] = trans[paired[node]]
            out_accepting[row_of[node]] = accepting[paired[node]] and not ends[node]
    for node in range(1, count):
        if row_of[parent[node]] >= 0:
            out[row_of[parent[node]], via[node]] = row_of[node]
    return out, out_accepting, row_of[0]


@njit(cache=True, nogil=True)
def bounded_runs(trans, accepting, loops, run, max_run):  # pragma: no cover - compiled
    """The table of :func:`~constrain.automata.dfa_ops.bound_runs`, written in one pass.

    Loop state ``s`` (``loops[s]``) gets ``max_run`` copies, rows ``first[s]..``: copy
    ``k`` reads a run byte into copy ``k + 1`` (the last reads none) and every other
    byte as ``s`` does.  ``s`` itself and every state whose run byte enters a loop
    state go to that state's first copy instead (no copies: nowhere).
    """
    n = trans.shape[0]
    first = np.full(n, -1, np.int32)
    count = 0
    for s in range(n):
        if loops[s]:
            if max_run > 0:
                first[s] = n + count * max_run
            count += 1
    total = n + count * max_run
    out = np.empty((total, 256), np.int32)
    out_accepting = np.empty(total, np.bool_)
    for s in range(n):
        out[s] = trans[s]
        out_accepting[s] = accepting[s]
        for b in run:
            target = trans[s, b]
            if target >= 0 and loops[target]:
                out[s, b] = first[target]
        if loops[s] and max_run > 0:
            for k in range(max_run):
                row = first[s] + k
                out[row] = trans[s]
                out_accepting[row] = accepting[s]
                for b in run:
                    out[row, b] = row + 1 if k + 1 < max_run else -1
    return out, out_accepting


@njit(cache=True, nogil=True)
def place_block(table, block, row0, symbol_column, first_symbol, call_ret):  # pragma: no cover - compiled
    """Write ``block`` into ``table`` from row ``row0``, renumbered to its rows, and take out
    its one-byte call moves; returns a bit per call symbol moved on with no column.

    Symbol byte ``first_symbol + j`` is column ``symbol_column[j]`` of ``call_ret`` (-1:
    no callee stands for it): each such move's target goes there and the table keeps
    no move on the byte (symbols are never text).  One pass over the block: renumbering,
    masking and the strided gathers of the call columns took three passes and a
    temporary each, the pushdown automaton's whole build for a large schema (a
    Kubernetes schema's 61,000 rows: 23 ms).
    """
    rows = block.shape[0]
    if row0 == 0:
        table[:rows] = block
    else:
        flat_in = block.reshape(-1)
        flat_out = table[row0:row0 + rows].reshape(-1)
        for i in range(flat_in.shape[0]):
            target = flat_in[i]
            flat_out[i] = target + row0 if target >= 0 else -1
    unknown = 0
    num_symbols = symbol_column.shape[0]
    for out in range(row0, row0 + rows):
        for j in range(num_symbols):
            target = table[out, first_symbol + j]
            if target < 0:
                continue
            column = symbol_column[j]
            if column < 0:
                unknown |= 1 << j
            else:
                call_ret[out, column] = target
                table[out, first_symbol + j] = -1
    return unknown


@njit(cache=True, nogil=True)
def unit_pairs(content, content_start, unit, unit_start, finished):  # pragma: no cover - compiled
    """The product of a content automaton and the one-character unit, explored from the
    start pair: ``(rows, pair_content, pair_unit)``, int32 ``rows[i, b]`` the pair that
    pair ``i`` goes to on byte ``b`` (-1: none), a finished character going back to the
    unit's start.  Pairs are numbered as found, each row's new ones by ``(content,
    unit)`` order.  A Python loop with a ``np.unique`` per row took 130 ms for a
    hundred-word pattern's 3,800 pairs."""
    width = unit.shape[0]
    index = np.full(content.shape[0] * width, -1, np.int64)
    pair_c = np.empty(64, np.int64)
    pair_u = np.empty(64, np.int64)
    rows = np.empty((64, 256), np.int32)
    keys = np.empty(256, np.int64)
    first = content_start * width + unit_start
    index[first] = 0
    pair_c[0], pair_u[0] = content_start, unit_start
    count = 1
    i = 0
    while i < count:
        c, u = pair_c[i], pair_u[i]
        if count + 256 > pair_c.shape[0]:
            pair_c = _grow_1d(pair_c, count + 256)
            pair_u = _grow_1d(pair_u, count + 256)
        if i >= rows.shape[0]:
            grown = np.empty((2 * rows.shape[0], 256), np.int32)
            grown[: rows.shape[0]] = rows
            rows = grown
        num_new = 0
        for b in range(256):
            tc, tu = content[c, b], unit[u, b]
            if tc < 0 or tu < 0:
                keys[b] = -1
                continue
            if finished[tu]:
                tu = unit_start
            key = np.int64(tc) * width + tu
            keys[b] = key
            if index[key] == -1:
                index[key] = -2  # new: numbered below, in key order
                pair_c[count + num_new] = key
                num_new += 1
        fresh = _sort_prefix(pair_c[count:], num_new)
        for k in range(num_new):
            key = fresh[k]
            index[key] = count + k
            pair_c[count + k], pair_u[count + k] = key // width, key % width
        count += num_new
        for b in range(256):
            rows[i, b] = index[keys[b]] if keys[b] >= 0 else -1
        i += 1
    return rows[:count], pair_c[:count], pair_u[:count]


@njit(cache=True, nogil=True)
def steps_to_end(rows, cost, done):  # pragma: no cover - compiled
    """Per state of ``rows`` (int32 ``[n, 256]``, -1: no move), the least total ``cost`` of
    the states a path enters before it reaches a ``done`` state (0 there; ``n + 1``
    where none is reachable), the costs 0 or 1: a 0-1 breadth-first search backwards
    from the done states.  Iterating the table to a fixed point took 60 ms for a
    hundred-word pattern's 3,800 states, one pass per character of the longest path."""
    n = rows.shape[0]
    sources = np.empty(n * 256, np.int64)
    targets = np.empty(n * 256, np.int64)
    m = 0
    for s in range(n):
        for b in range(256):
            t = rows[s, b]
            if t >= 0 and (b == 0 or rows[s, b - 1] != t):
                sources[m], targets[m] = s, t
                m += 1
    ptr, preds = _grouped(targets, sources, n, m)
    far = n + 1
    dist = np.full(n, far, np.int64)
    room = 2 * m + n  # pushes: at most two per edge and one per start
    queue = np.empty(2 * room, np.int64)  # a deque: 0-cost steps go in front
    head = room
    tail = head
    for s in range(n):
        if done[s]:
            dist[s] = 0
            queue[tail] = s
            tail += 1
    while head < tail:
        u = queue[head]
        head += 1
        step = dist[u] + cost[u]
        for k in range(ptr[u], ptr[u + 1]):
            p = preds[k]
            if step < dist[p]:
                dist[p] = step
                if cost[u] == 0:
                    head -= 1
                    queue[head] = p
                else:
                    queue[tail] = p
                    tail += 1
    return dist


@njit(cache=True, nogil=True)
def counted_copies(rows, ending, bases, following, done, low, quote):  # pragma: no cover - compiled
    """The table of a counted string callee (``strings.counted_string_callee``): row 0 the
    opening quote, then copy ``k`` of the content's ``n`` rows from ``bases[k]``, where
    a move that ends a character (``ending``) goes to ``following[k]`` (-1: nowhere)
    plus its state and any other to ``bases[k]`` plus it; from copy ``low`` on, the
    states where the content may end (``done``) close on ``quote`` into the last row.
    One pass: the copies as broadcast numpy temporaries were 100 MB and 230 ms for a
    hundred-word pattern under ``maxLength: 5000``."""
    n = rows.shape[0]
    copies = bases.shape[0]
    total = 2 + copies * n
    close = total - 1
    out = np.full((total, 256), -1, np.int32)
    out[0, quote] = 1
    for k in range(copies):
        base, follow = bases[k], following[k]
        for s in range(n):
            row = base + s
            for b in range(256):
                target = rows[s, b]
                if target < 0:
                    continue
                if ending[s, b]:
                    if follow >= 0:
                        out[row, b] = follow + target
                else:
                    out[row, b] = base + target
            if k >= low and done[s]:
                out[row, quote] = close
    return out


@njit(cache=True, nogil=True)
def wired_copies(trans, accepting, sites, symbol, template, start_row):  # pragma: no cover - compiled
    """The table of :func:`~constrain.automata.pushdown.inline_calls`, written in one pass.

    ``template`` holds the callee's inner states as rows of local ids (``m``, its
    row count, meaning "a value ended: return"), ``start_row`` its start's moves
    the same way.  Site ``i`` gets rows ``n + i * m ..``, its return state where
    the template returns, and its own row takes the start's moves instead of the
    call move.
    """
    n = trans.shape[0]
    m = template.shape[0]
    out = np.empty((n + sites.shape[0] * m, 256), np.int32)
    out[:n] = trans
    out_accepting = np.zeros(out.shape[0], np.bool_)
    out_accepting[:n] = accepting
    for i in range(sites.shape[0]):
        site = sites[i]
        ret = trans[site, symbol]
        base = n + i * m
        for row in range(m):
            for byte in range(256):
                local = template[row, byte]
                out[base + row, byte] = -1 if local < 0 else (ret if local == m else base + local)
        for byte in range(256):
            local = start_row[byte]
            if local >= 0:
                out[site, byte] = ret if local == m else base + local
        out[site, symbol] = -1
    return out, out_accepting


# -- where a JSON text's states are (member_sets.member_roles) ---------------------------
_PLACE_OUT, _PLACE_IN, _PLACE_ESC = 0, 1, 2


@njit(cache=True, nogil=True, inline="always")
def _place(mode, depth, key):
    return mode | (key << 2) | (depth << 3)


@njit(cache=True, nogil=True)
def json_places(block, returns, lo, start):
    """Lex JSON along the moves of one callee's block of a table (rows ``block``, states
    absolute, ``lo`` the block's first; ``returns``: where a call at each row goes on)
    from ``start`` (relative): each reached state's place ``mode | key << 2 | depth << 3``
    (mode 0 outside strings, 1 inside, 2 just after a backslash; key: a string there is
    one of the outermost object's keys), -1 where unreached.  Returns the places and
    the first state reached at two places (-1: none)."""
    n = block.shape[0]
    places = np.full(n, -1, np.int64)
    stack = np.empty(n, np.int64)
    places[start] = _place(_PLACE_OUT, 0, 0)
    stack[0] = start
    top = 1
    while top:
        top -= 1
        state = stack[top]
        here = places[state]
        mode, key, depth = here & 3, (here >> 2) & 1, here >> 3
        for byte in range(256 + returns.shape[1]):
            if byte < 256:
                target = block[state, byte]
            elif mode == _PLACE_OUT:  # a called value: the place after it is the same
                target = returns[state, byte - 256]
            else:
                break
            if target < 0:
                continue
            target -= lo
            reached = here
            if mode == _PLACE_ESC:
                reached = _place(_PLACE_IN, depth, key)
            elif byte >= 256:
                reached = here
            elif mode == _PLACE_IN:
                if byte == 34:  # "
                    reached = _place(_PLACE_OUT, depth, 0)
                elif byte == 92:  # backslash
                    reached = _place(_PLACE_ESC, depth, key)
            elif byte == 34:
                reached = _place(_PLACE_IN, depth, key)
            elif byte == 123:  # {
                reached = _place(_PLACE_OUT, depth + 1, 1 if depth == 0 else 0)
            elif byte == 91:  # [
                reached = _place(_PLACE_OUT, depth + 1, 0)
            elif byte == 125 or byte == 93:  # } ]
                reached = _place(_PLACE_OUT, depth - 1, 0)
            elif byte == 44:  # ,
                reached = _place(_PLACE_OUT, depth, 1 if depth == 1 else 0)
            elif byte == 58:  # :
                reached = _place(_PLACE_OUT, depth, 0)
            known = places[target]
            if known < 0:
                places[target] = reached
                stack[top] = target
                top += 1
            elif known != reached:
                return places, target
    return places, -1


# -- the inside of a JSON string (json_strings.string_values) ---------------------------
@njit(cache=True, nogil=True, inline="always")
def _inside_move(escaped, byte):  # pragma: no cover - compiled
    """Where ``byte`` leads inside a string: 0 (unescaped) or 1 (after a backslash), or -1
    when it is the quote that closes the string."""
    if escaped == 1:
        return 0
    if byte == 34:  # "
        return -1
    return 1 if byte == 92 else 0  # backslash


@njit(cache=True, nogil=True)
def string_loops(trans, start, escaped, local):  # pragma: no cover - compiled
    """``(pairs, looping)`` over the pairs inside a string from ``(start, escaped)``:
    ``pairs`` the pairs reached without closing it (as ``escaped * n + state``, ``n``
    the table's size), ``looping[i]`` whether some path from ``pairs[i]`` never closes
    the string.  The pairs whose every move ends (closes the string or leads to pairs
    that do) are peeled off until none is left; the rest can go on forever.

    The work is in the region's size, not the table's (a pushdown table has hundreds
    of thousands of rows, and a long value asks this of many strings): ``local`` is a
    scratch of ``2 * n`` entries, all -1, which holds the region's own numbering and
    is -1 again on return.
    """
    n = trans.shape[0]
    pairs = np.empty(64, np.int64)
    edge_from = np.empty(256, np.int64)
    edge_to = np.empty(256, np.int64)
    first = escaped * n + start
    local[first] = 0
    pairs[0] = first
    count, edges, head = 1, 0, 0
    while head < count:  # breadth first: each pair's moves that stay inside, numbered locally
        pair = pairs[head]
        here, state = pair // n, pair % n
        # Room for the row's 256 moves first: an array reassigned inside the byte loop
        # made that loop twenty times slower.
        pairs = _grow_1d(pairs, count + 256)
        edge_from = _grow_1d(edge_from, edges + 256)
        edge_to = _grow_1d(edge_to, edges + 256)
        last = -1
        for byte in range(256):
            target = trans[state, byte]
            nxt = _inside_move(here, byte)
            if target < 0 or nxt < 0:
                continue
            other = nxt * n + target
            if other == last:  # a run of bytes to one pair is one move
                continue
            last = other
            if local[other] < 0:
                local[other] = count
                pairs[count] = other
                count += 1
            edge_from[edges] = head
            edge_to[edges] = local[other]
            edges += 1
        head += 1
    out = np.zeros(count, np.int64)  # moves that stay inside, by local pair
    for e in range(edges):
        out[edge_from[e]] += 1
    starts, sources = _grouped(edge_to, edge_from, count, edges)  # reverse moves, by target
    looping = np.ones(count, np.bool_)
    stack = np.empty(count, np.int64)
    top = 0
    for k in range(count):
        if out[k] == 0:
            looping[k] = False
            stack[top] = k
            top += 1
    while top > 0:
        top -= 1
        k = stack[top]
        for j in range(starts[k], starts[k + 1]):
            before = sources[j]
            out[before] -= 1
            if out[before] == 0 and looping[before]:
                looping[before] = False
                stack[top] = before
                top += 1
    for k in range(count):
        local[pairs[k]] = -1
    return pairs[:count].copy(), looping


@njit(cache=True, nogil=True)
def wide_call_moves(trans, wide_call, ids):  # pragma: no cover - compiled
    """``(states, ids, targets)``: every wide call in ``trans``, a move on byte ``wide_call``
    into a middle state, then on an id byte below ``ids`` from there, in state order then
    id order.  One pass down the ``wide_call`` column, reading only the middles' id bytes:
    the numpy form gathered every middle's whole row and took 20 ms for the 3,000 separator
    calls of a large schema."""
    n = trans.shape[0]
    count = 0
    for s in range(n):
        middle = trans[s, wide_call]
        if middle >= 0:
            for b in range(ids):
                if trans[middle, b] >= 0:
                    count += 1
    states = np.empty(count, np.int64)
    id_bytes = np.empty(count, np.int64)
    targets = np.empty(count, np.int64)
    k = 0
    for s in range(n):
        middle = trans[s, wide_call]
        if middle >= 0:
            for b in range(ids):
                target = trans[middle, b]
                if target >= 0:
                    states[k], id_bytes[k], targets[k] = s, b, target
                    k += 1
    return states, id_bytes, targets
