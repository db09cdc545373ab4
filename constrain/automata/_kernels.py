"""numba kernels of the automata layer: trie construction and trie walks.

Pure functions over flat contiguous arrays, ``cache=True`` so that a warm process
loads machine code from disk, ``nogil=True`` so that threads computing masks for
different sequences run in parallel.  This module is imported lazily (on the first
compile), so ``import constrain`` compiles nothing.
"""

from __future__ import annotations

import numpy as np
from numba import njit

__all__ = ["build_trie", "walk_dfa"]


@njit(cache=True, nogil=True)
def build_trie(flat, offsets):
    """Preorder trie arrays from tokens sorted by bytes (``flat[offsets[i]:offsets[i+1]]``).

    Tokens with identical bytes share one node.  ``node_skip`` is filled by closing,
    whenever a node of depth ``d`` is created, every open node of depth ``>= d``.
    """
    num_tokens = offsets.shape[0] - 1
    capacity = flat.shape[0] + 1
    node_byte = np.empty(capacity, np.uint8)
    node_depth = np.empty(capacity, np.int32)
    node_skip = np.empty(capacity, np.int32)
    node_tok_count = np.zeros(capacity, np.int32)
    max_len = 0
    for t in range(num_tokens):
        max_len = max(max_len, offsets[t + 1] - offsets[t])
    open_nodes = np.full(max_len + 2, -1, np.int64)  # open_nodes[d]: open node at depth d
    n = 0
    prev_start = 0
    prev_len = 0
    for t in range(num_tokens):
        start = offsets[t]
        length = offsets[t + 1] - start
        lcp = 0
        if t > 0:
            limit = min(length, prev_len)
            while lcp < limit and flat[start + lcp] == flat[prev_start + lcp]:
                lcp += 1
        for d in range(lcp + 1, length + 1):
            for k in range(d, max_len + 1):
                if open_nodes[k] >= 0:
                    node_skip[open_nodes[k]] = n
                    open_nodes[k] = -1
            node_byte[n] = flat[start + d - 1]
            node_depth[n] = d
            open_nodes[d] = n
            n += 1
        node_tok_count[open_nodes[length]] += 1
        prev_start = start
        prev_len = length
    for k in range(max_len + 1):
        if open_nodes[k] >= 0:
            node_skip[open_nodes[k]] = n
    tok_ptr = np.zeros(n + 1, np.int32)
    for i in range(n):
        tok_ptr[i + 1] = tok_ptr[i] + node_tok_count[i]
    return node_byte[:n].copy(), node_depth[:n].copy(), node_skip[:n].copy(), tok_ptr


@njit(cache=True, nogil=True)
def walk_dfa(trans, start_state, node_byte, node_depth, node_skip, node_tok_ptr, tok_ids, max_depth, out_words, out_next):
    """Walk the token trie from ``start_state`` of a byte DFA whose every state is live.

    A token is viable when walking its bytes never reaches -1.  For each viable
    token the kernel ORs its bit into ``out_words`` (uint32, packed 32 a word) and,
    when ``out_next`` is non-empty, writes the DFA state it leads to into
    ``out_next[token]`` (one row of the token-level DFA that DINGO uses).
    Returns the number of viable tokens.
    """
    states = np.empty(max_depth + 1, np.int32)
    states[0] = start_state
    want_next = out_next.shape[0] > 0
    n = node_byte.shape[0]
    count = 0
    i = 0
    while i < n:
        d = node_depth[i]
        s = trans[states[d - 1], node_byte[i]]
        if s < 0:
            i = node_skip[i]
            continue
        states[d] = s
        for k in range(node_tok_ptr[i], node_tok_ptr[i + 1]):
            t = tok_ids[k]
            out_words[t >> 5] |= np.uint32(1) << np.uint32(t & 31)
            if want_next:
                out_next[t] = s
            count += 1
        i += 1
    return count


@njit(cache=True, nogil=True)
def walk_lexer(trans, label, ignored, start_state, restart, node_byte, node_depth, node_skip, node_tok_ptr,
               tok_ids, max_depth, out_state, out_nb, out_start, buffer):
    """Walk the token trie through a lexer DFA with greedy (longest, no backtracking) lexing.

    From lexer state ``start_state``, a byte with no transition ends the current
    lexeme (which must be accepting: its label is the terminal) and starts a new one
    from ``restart[terminal]``.  For every token that survives, writes the lexer state it
    ends in (``out_state``), how many non-ignored terminals it completes
    (``out_nb``), and where those terminal ids start in ``buffer`` (``out_start``).
    Other tokens keep ``out_state = -1``.  Returns the number of buffer slots used.
    """
    states = np.empty(max_depth + 1, np.int32)
    nbs = np.zeros(max_depth + 1, np.int32)
    path = np.empty(max_depth + 1, np.int32)  # completed terminals along the current path
    states[0] = start_state
    n = node_byte.shape[0]
    pos = 0
    i = 0
    while i < n:
        d = node_depth[i]
        q = states[d - 1]
        nb = nbs[d - 1]
        b = node_byte[i]
        s = trans[q, b]
        if s < 0:
            term = label[q]
            if term < 0:
                i = node_skip[i]
                continue
            s = trans[restart[term], b]
            if s < 0:
                i = node_skip[i]
                continue
            if not ignored[term]:
                path[nb] = term
                nb += 1
        states[d] = s
        nbs[d] = nb
        for k in range(node_tok_ptr[i], node_tok_ptr[i + 1]):
            t = tok_ids[k]
            out_state[t] = s
            out_nb[t] = nb
            out_start[t] = pos
            for j in range(nb):
                buffer[pos + j] = path[j]
            pos += nb
        i += 1
    return pos
