"""numba kernels of the automata layer: trie construction and trie walks.

Pure functions over flat contiguous arrays, ``cache=True`` so that a warm process
loads machine code from disk, ``nogil=True`` so that threads computing masks for
different sequences run in parallel.  This module is imported lazily (on the first
compile), so ``import constrain`` compiles nothing.
"""

from __future__ import annotations

import numpy as np
from numba import njit

__all__ = ["build_trie", "sub_trie", "subtree_summaries", "ordinary_chars", "ordinary_run", "walk_dfa", "walk_pda",
           "string_exits", "free_string_exit", "STRING_EXIT", "most_on_a_path", "PDA_MAX_CONFIGS", "UTF8", "HAS_HIGH", "UTF8_CLEAN"]


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


# UTF-8 decoding as a DFA over bytes (RFC 3629: no overlongs, no surrogates, at most
# U+10FFFF).  State 0 is a character boundary; -1 is invalid.  1/2/5: one, two,
# three continuation bytes (80-BF) to go; 3 (after E0): A0-BF then one; 4 (after
# ED): 80-9F then one; 6 (after F0): 90-BF then two; 7 (after F4): 80-8F then two.
def _utf8_table() -> np.ndarray:
    """int8 ``[8, 256]``: the decoder state after each byte (a table, so that kernels index it)."""
    table = np.full((8, 256), -1, np.int8)
    table[0, 0x00:0x80] = 0
    table[0, 0xC2:0xE0] = 1
    table[0, 0xE0] = 3
    table[0, 0xE1:0xF0] = 2
    table[0, 0xED] = 4
    table[0, 0xF0] = 6
    table[0, 0xF1:0xF4] = 5
    table[0, 0xF4] = 7
    for state, low, high, to in ((1, 0x80, 0xC0, 0), (2, 0x80, 0xC0, 1), (3, 0xA0, 0xC0, 1), (4, 0x80, 0xA0, 1),
                                 (5, 0x80, 0xC0, 2), (6, 0x90, 0xC0, 2), (7, 0x80, 0x90, 2)):
        table[state, low:high] = to
    return table


UTF8 = _utf8_table()


def _ordinary_utf8_table() -> np.ndarray:
    """:data:`UTF8` less U+2028 and U+2029 (E2 80 A8/A9), which are no ordinary characters.

    ``.`` in a pattern excludes those two line terminators, so counting them as
    ordinary would make every pattern with ``.`` fail :func:`_learn_closed`.
    State 8: after E2 (two to go); 9: after E2 80 (one to go).
    """
    table = np.concatenate([_utf8_table(), np.full((2, 256), -1, np.int8)])
    table[0, 0xE2] = 8
    table[8, 0x80] = 9
    table[8, 0x81:0xC0] = 1
    table[9, 0x80:0xC0] = 0
    table[9, 0xA8:0xAA] = -1
    return table


#: The UTF-8 decoder whose completed characters (state 0) are the candidates for
#: ordinary characters (:func:`ordinary_chars`); see :func:`_ordinary_utf8_table`.
ORDINARY_UTF8 = _ordinary_utf8_table()

#: ``node_flags`` bits: the subtree below the node holds a byte >= 0x80 ...
HAS_HIGH = 1
#: ... and the node is at a character boundary and every path below it is valid UTF-8 so far.
UTF8_CLEAN = 2


@njit(cache=True, nogil=True)
def subtree_summaries(node_byte, node_depth, max_depth, utf8):
    """Per node, the ASCII bytes inside its subtree, UTF-8 flags and height (for :func:`walk_dfa`).

    ``ascii_below`` is ``[n, 2]`` uint64: bit ``b & 63`` of word ``b >> 6`` is set
    when some edge strictly below the node carries byte ``b < 0x80``.
    ``flags[i]`` has :data:`HAS_HIGH` when an edge below carries a byte >= 0x80 and
    :data:`UTF8_CLEAN` when the path to ``i`` ends on a character boundary and every
    path below it is a valid UTF-8 prefix.  ``height[i]`` is how many levels the
    subtree goes below node ``i`` (0 for a leaf).  One forward pass (parents,
    decoder states), one backward pass (children follow their parent in preorder).
    """
    n = node_byte.shape[0]
    ascii_below = np.zeros((n, 2), np.uint64)
    flags = np.zeros(n, np.uint8)
    height = np.zeros(n, np.int32)
    parent = np.empty(n, np.int64)
    decoder = np.empty(n, np.int8)  # UTF-8 decoder state after the path to each node
    clean = np.ones(n, np.bool_)  # every path below is a valid UTF-8 continuation
    last_at = np.full(max_depth + 1, -1, np.int64)  # last node seen at each depth
    for i in range(n):
        d = node_depth[i]
        last_at[d] = i
        p = last_at[d - 1] if d > 1 else -1
        parent[i] = p
        before = decoder[p] if p >= 0 else 0
        decoder[i] = utf8[before, node_byte[i]] if before >= 0 else -1
    for i in range(n - 1, -1, -1):
        p = parent[i]
        if p < 0:
            continue
        b = node_byte[i]
        if b < 0x80:
            ascii_below[p, b >> 6] |= np.uint64(1) << np.uint64(b & 63)
        else:
            flags[p] |= HAS_HIGH
        ascii_below[p, 0] |= ascii_below[i, 0]
        ascii_below[p, 1] |= ascii_below[i, 1]
        flags[p] |= flags[i] & HAS_HIGH
        height[p] = max(height[p], height[i] + 1)
        if decoder[i] < 0 or not clean[i]:
            clean[p] = False
    for i in range(n):
        if clean[i] and decoder[i] == 0:
            flags[i] |= UTF8_CLEAN
    return ascii_below, flags, height


@njit(cache=True, nogil=True)
def sub_trie(node_byte, node_depth, node_skip, node_tok_ptr, tok_ids, keep):
    """The trie arrays of the tokens ``t`` with ``keep[t]``, cut from a whole trie (preorder kept).

    A node stays when its subtree holds a kept token.  A subtree's tokens are the
    contiguous slice ``tok_ids[node_tok_ptr[i]:node_tok_ptr[node_skip[i]]]``, so one
    prefix count over ``tok_ids`` answers that per node, and the number of kept
    nodes before an old index is the new index of the first kept node from there.
    """
    n = node_byte.shape[0]
    kept_before = np.zeros(tok_ids.shape[0] + 1, np.int64)
    for p in range(tok_ids.shape[0]):
        kept_before[p + 1] = kept_before[p] + (1 if keep[tok_ids[p]] else 0)
    stays = np.zeros(n, np.bool_)
    nodes_before = np.zeros(n + 1, np.int64)
    for i in range(n):
        stays[i] = kept_before[node_tok_ptr[node_skip[i]]] > kept_before[node_tok_ptr[i]]
        nodes_before[i + 1] = nodes_before[i] + (1 if stays[i] else 0)
    m = nodes_before[n]
    out_byte = np.empty(m, np.uint8)
    out_depth = np.empty(m, np.int32)
    out_skip = np.empty(m, np.int32)
    out_ptr = np.zeros(m + 1, np.int32)
    out_ids = np.empty(kept_before[tok_ids.shape[0]], np.int32)
    for i in range(n):
        if not stays[i]:
            continue
        j = nodes_before[i]
        out_byte[j] = node_byte[i]
        out_depth[j] = node_depth[i]
        out_skip[j] = nodes_before[node_skip[i]]
        at = out_ptr[j]
        for p in range(node_tok_ptr[i], node_tok_ptr[i + 1]):
            if keep[tok_ids[p]]:
                out_ids[at] = tok_ids[p]
                at += 1
        out_ptr[j + 1] = at
    return out_byte, out_depth, out_skip, out_ptr, out_ids


# Ordinary string characters: every character but '"', '\\' and the controls below
# U+0020, which a JSON string must escape, and U+2028/U+2029 (:data:`ORDINARY_UTF8`).
# Their ASCII bytes as a table, and as two uint64 words (bytes 0-63, 64-127) in the
# layout of ``step_bytes``.
_ORDINARY_ASCII = np.array([0x20 <= b and b not in (0x22, 0x5C) for b in range(128)])
_ORDINARY_LOW = np.uint64(sum(1 << b for b in range(64) if _ORDINARY_ASCII[b]))
_ORDINARY_HIGH = np.uint64(sum(1 << (b - 64) for b in range(64, 128) if _ORDINARY_ASCII[b]))


@njit(cache=True, nogil=True)
def ordinary_chars(node_byte, node_depth, node_tok_ptr, tok_ids, max_depth, utf8, num_ids):
    """int32 ``[num_ids]``: per token, its number of characters when it is whole ordinary characters, else -1.

    A token is *ordinary* when its bytes are complete UTF-8 characters, none of
    them a quote, a backslash, a control character or U+2028/U+2029: inside a
    JSON string such a token reads as that many characters and nothing else (see
    :func:`ordinary_run`).  One preorder pass with a decoder state per depth
    (``utf8`` is :data:`ORDINARY_UTF8`).
    """
    out = np.full(num_ids, -1, np.int32)
    decoder = np.zeros(max_depth + 1, np.int8)  # -1: not ordinary so far
    chars = np.zeros(max_depth + 1, np.int32)
    for i in range(node_byte.shape[0]):
        d = node_depth[i]
        b = node_byte[i]
        before = decoder[d - 1]
        after = utf8[before, b] if before >= 0 and (b >= 0x80 or _ORDINARY_ASCII[b]) else -1
        decoder[d] = after
        chars[d] = chars[d - 1] + (1 if after == 0 else 0)
        if after == 0:
            for p in range(node_tok_ptr[i], node_tok_ptr[i + 1]):
                out[tok_ids[p]] = chars[d]
    return out


@njit(cache=True, nogil=True)
def most_on_a_path(node_byte, node_depth, max_depth, wanted):
    """The most bytes with ``wanted[byte]`` (int32 ``[256]``, 0 or 1) on one root-to-node
    path of a trie: the most in one token, since every path ends in one."""
    counts = np.zeros(max_depth + 1, np.int64)
    best = 0
    for i in range(node_byte.shape[0]):
        d = node_depth[i]
        counts[d] = counts[d - 1] + wanted[node_byte[i]]
        if counts[d] > best:
            best = counts[d]
    return best


#: The move of a free string's content automaton (:mod:`.free_strings`) on its closing quote.
STRING_EXIT = -2
# Pairs (content state, table state) :func:`free_string_exit` follows at most, and table
# states it pairs with one content state (the subset construction may split one).
_MAX_STRING_PAIRS = 64
_MAX_COPIES = 4


@njit(cache=True, nogil=True)
def string_exits(node_byte, node_depth, node_skip, node_tok_ptr, tok_ids, content, start, max_depth, num_ids):
    """int32 ``[num_ids]``: how each token reads from ``start`` of ``content`` (a string's
    content automaton whose closing quote is :data:`STRING_EXIT`): ``k >= 0`` when its
    byte ``k`` closes the string, -1 when it stays inside (a beginning of some content),
    -2 when the content refuses it first.  One preorder pass."""
    out = np.full(num_ids, -2, np.int32)
    states = np.empty(max_depth + 1, np.int32)
    states[0] = start
    n = node_byte.shape[0]
    i = 0
    while i < n:
        d = node_depth[i]
        c = content[states[d - 1], node_byte[i]]
        if c == STRING_EXIT:
            for p in range(node_tok_ptr[i], node_tok_ptr[node_skip[i]]):
                out[tok_ids[p]] = d - 1
            i = node_skip[i]
            continue
        if c < 0:
            i = node_skip[i]
            continue
        states[d] = c
        for p in range(node_tok_ptr[i], node_tok_ptr[i + 1]):
            out[tok_ids[p]] = -1
        i += 1
    return out


@njit(cache=True, nogil=True)
def free_string_exit(trans, calls, accepting, s, content, start):
    """Where the closing quote leads from ``s`` when ``s`` reads exactly as ``start`` of
    ``content`` does (see :func:`string_exits`), else -1.

    Follows the pairs (content state, table state) from (``start``, ``s``): every byte
    must be refused by both or by neither, no table state on the way may accept or
    call (``calls`` empty: a table without calls), and every closing quote must lead
    to one and the same state.  Then a token that stays inside is viable exactly
    when the content reads it, and one that closes the string exactly when the content
    reads it up to its quote and the table reads the rest from ``s``'s quote on.  -1
    also past :data:`_MAX_STRING_PAIRS` pairs or :data:`_MAX_COPIES` table states for one
    content state (a table that copies the string's inside: a ``maxLength`` count)."""
    guarded = calls.shape[0] > 0
    if accepting[s] or (guarded and calls[s] >= 0):
        return -1
    copies = np.full((content.shape[0], _MAX_COPIES), -1, np.int32)
    pair_c = np.empty(_MAX_STRING_PAIRS, np.int32)
    pair_x = np.empty(_MAX_STRING_PAIRS, np.int32)
    pair_c[0] = start
    pair_x[0] = s
    copies[start, 0] = s
    n = 1
    k = 0
    exit = -1
    while k < n:
        c = pair_c[k]
        x = pair_x[k]
        k += 1
        for b in range(256):
            ct = content[c, b]
            xt = trans[x, b]
            if ct == STRING_EXIT:
                if xt < 0 or (exit >= 0 and xt != exit):
                    return -1
                exit = xt
            elif ct < 0:
                if xt >= 0:
                    return -1
            elif xt < 0 or accepting[xt] or (guarded and calls[xt] >= 0):
                return -1
            elif not (ct == c and xt == x):
                j = 0
                while j < _MAX_COPIES and copies[ct, j] >= 0 and copies[ct, j] != xt:
                    j += 1
                if j == _MAX_COPIES:
                    return -1
                if copies[ct, j] < 0:
                    if n == _MAX_STRING_PAIRS:
                        return -1
                    copies[ct, j] = xt
                    pair_c[n] = ct
                    pair_x[n] = xt
                    n += 1
    return exit


# What the walk learns per DFA state, in one int64 word (0: nothing yet) so that a
# thread always reads a step together with the flags learnt for it: the step
# (plus one) from bit 8 up, flags below.
_STEP_KNOWN = 1
_CHARS_KNOWN = 2
_CHARS_STEP = 4
_ALIVE_KNOWN = 8
_CLOSED_KNOWN = 16  # :func:`_learn_closed`
_CLOSED = 32
_ORDINARY_KNOWN = 64  # every ordinary multi-byte character lands on the step (:func:`ordinary_run`)
_ORDINARY_STEP = 128
# A state is wide when this many ASCII bytes are live in it (inside a string).
_WIDE = 32
_MAX_ALIVE_STATES = 256


@njit(cache=True, nogil=True)
def _learn_step(trans, s, memo, step_bytes):
    """Record ``s``'s step: its most common ASCII target and the ASCII bytes that go there.

    In a free string the step is a self-loop; in a length-bounded one, the next
    count (-1: no ASCII byte is live).  ``step_bytes[s]`` is written before the
    word ``memo[s]`` that announces it: a thread that reads a half-written set sees
    a subset, which only makes the walk take less at once.  Returns the new word.
    """
    targets = np.empty(128, np.int64)
    counts = np.zeros(128, np.int64)
    distinct = 0
    best = -1
    best_count = 0
    for b in range(128):
        t = trans[s, b]
        if t < 0:
            continue
        k = 0
        while k < distinct and targets[k] != t:
            k += 1
        if k == distinct:
            targets[k] = t
            distinct += 1
        counts[k] += 1
        if counts[k] > best_count:
            best = t
            best_count = counts[k]
    for b in range(128):
        if best >= 0 and trans[s, b] == best:
            step_bytes[s, b >> 6] |= np.uint64(1) << np.uint64(b & 63)
    word = memo[s] | ((best + 1) << 8) | _STEP_KNOWN
    memo[s] = word
    return word


@njit(cache=True, nogil=True)
def _learn_chars(trans, s, word, utf8, memo):
    """Add to ``s``'s word whether every multi-byte character from ``s`` lands on its step (:func:`_chars_step`)."""
    target = (word >> 8) - 1
    word |= _CHARS_KNOWN | (_CHARS_STEP if _chars_step(trans, s, target, utf8) else 0)
    memo[s] = word
    return word


@njit(cache=True, nogil=True)
def _learn_alive(trans, s, memo, alive_bytes):
    """Record ``alive_bytes[s]``: ASCII bytes on which no path from ``s`` can die.

    The largest set ``X`` found such that every state reachable from ``s`` by bytes
    of ``X`` is wide (:data:`_WIDE` live ASCII bytes) and has every byte of ``X``
    live.  Found by shrinking: start from the bytes live at ``s``, visit what they
    reach, and drop a byte wherever it dies or leads to a narrow state (a closing
    quote, an escape); again until nothing is dropped.  A string that must contain
    a pattern (``"pattern": "[0-9a-f]{64}"``, unanchored) counts hex runs in many
    states, which no single step covers: this set still holds all but ``"`` and
    ``\\``.  Gives up (empty set) past 256 states, and so do the states it reached
    then (any subset is exact, only slower: the characters of a long count are each a
    state of their own, and each searched 256 states on its first walk).  The set is
    written before the flag.
    A narrow ``s`` itself (between values: whitespace, a number's digits) gets the
    empty set at once: any subset is exact, only slower, and there the search (a
    tenth of an after-colon state's first walk) found bytes that its steps take anyway.
    """
    num_states = trans.shape[0]
    keep = np.zeros(128, np.bool_)
    live = 0
    for b in range(128):
        keep[b] = trans[s, b] >= 0
        live += 1 if keep[b] else 0
    if live < _WIDE:
        memo[s] |= _ALIVE_KNOWN
        return memo[s]
    seen = np.zeros(num_states, np.bool_)
    queue = np.empty(_MAX_ALIVE_STATES, np.int64)
    changed = True
    while changed:
        changed = False
        queue[0] = s
        seen[s] = True
        found = 1
        done = 0
        while done < found and found < _MAX_ALIVE_STATES:
            q = queue[done]
            done += 1
            for b in range(128):
                if not keep[b]:
                    continue
                t = trans[q, b]
                if t < 0:
                    keep[b] = False
                    changed = True
                elif not seen[t]:
                    live = 0
                    for c in range(128):
                        if trans[t, c] >= 0:
                            live += 1
                    if live < _WIDE:
                        keep[b] = False
                        changed = True
                    elif found < _MAX_ALIVE_STATES:
                        seen[t] = True
                        queue[found] = t
                        found += 1
        for k in range(found):
            seen[queue[k]] = False
        if found >= _MAX_ALIVE_STATES:
            keep[:] = False
            for k in range(found):  # they reach as much, or nearly (a count's next states)
                memo[queue[k]] |= _ALIVE_KNOWN
            break
    for b in range(128):
        if keep[b]:
            alive_bytes[s, b >> 6] |= np.uint64(1) << np.uint64(b & 63)
    word = memo[s] | _ALIVE_KNOWN
    memo[s] = word
    return word


_MAX_CHAR_PAIRS = 64


@njit(cache=True, nogil=True)
def _add_state(queue, found, t):
    """Append ``t`` to ``queue[:found]`` unless there; returns the new size (-1: no room)."""
    for k in range(found):
        if queue[k] == t:
            return found
    if found == queue.shape[0]:
        return -1
    queue[found] = t
    return found + 1


@njit(cache=True, nogil=True)
def _char_ends(trans, s, utf8, ends, found):
    """Add to ``ends[:found]`` where each valid multi-byte character read from ``s`` lands.

    A search over (DFA state, decoder state) pairs: inside a character every
    valid continuation byte must have a transition.  Returns the new size of
    ``ends``, or -1 when a character dies or the pairs or ``ends`` run out of
    room (past 64 pairs: callers then give up, which only costs speed).
    """
    pairs = np.empty((_MAX_CHAR_PAIRS, 2), np.int64)
    pairs[0, 0] = s
    pairs[0, 1] = 0
    num = 1
    done = 0
    while done < num:
        q = pairs[done, 0]
        u = pairs[done, 1]
        done += 1
        last_q = -1  # the previous byte's move: runs of bytes (all continuations) share one
        last_u = -1
        for b in range(0x80 if u != 0 else 0xC2, 256):
            nu = utf8[u, b]
            if nu < 0:
                continue
            nq = trans[q, b]
            if nq < 0:
                return -1
            if nq == last_q and nu == last_u:
                continue
            last_q = nq
            last_u = nu
            if nu == 0:
                found = _add_state(ends, found, nq)
                if found < 0:
                    return -1
                continue
            seen = False
            for k in range(num):
                if pairs[k, 0] == nq and pairs[k, 1] == nu:
                    seen = True
                    break
            if not seen:
                if num == _MAX_CHAR_PAIRS:
                    return -1
                pairs[num, 0] = nq
                pairs[num, 1] = nu
                num += 1
    return found


@njit(cache=True, nogil=True)
def _chars_step(trans, s, target, utf8):
    """True when every valid multi-byte UTF-8 character read from ``s`` stays alive and lands on ``target``."""
    ends = np.empty(1, np.int64)
    ends[0] = target
    return _char_ends(trans, s, utf8, ends, 1) == 1


@njit(cache=True, nogil=True)
def _subtree_viable(trans, s, i, ascii_below, flags, height, memo, step_bytes, alive_bytes, utf8, want_next, rest):
    """True when every token below trie node ``i`` (which has children) survives from DFA state ``s``.

    Follows ``s``'s steps for as many characters as the subtree is deep: every
    character below must take the step at each of them (a free string's
    self-loop, a ``maxLength`` count).  Failing that, a pure-ASCII subtree is
    viable when its bytes cannot die from ``s`` at all (:func:`_learn_alive`).
    With ``want_next`` (callers that need each token's end state) only pure-ASCII
    subtrees on a self-loop qualify: they all end in ``s``.  With ``rest`` (a walk
    of :class:`~.token_trie.OrdinaryTokens`' rest) only subtrees on a self-loop
    qualify, and alive bytes are not tested: its subtrees hold a quote, a
    backslash or a control character, which neither test admits inside a
    string.  The walks then ask only at their start state: learning steps along
    each ``maxLength`` count (up to the rest's 128 levels) cost more than walking
    the rest.  Long runs of spaces in a free string are what that still takes.
    """
    f = flags[i]
    take = not (want_next and f & HAS_HIGH) and (f & UTF8_CLEAN or not f & HAS_HIGH)
    c = s
    for _ in range(height[i] if take else 0):
        word = memo[c]
        if not word & _STEP_KNOWN:
            word = _learn_step(trans, c, memo, step_bytes)
        nxt = (word >> 8) - 1
        if nxt < 0 or ((want_next or rest) and nxt != c) \
                or (ascii_below[i, 0] & ~step_bytes[c, 0]) | (ascii_below[i, 1] & ~step_bytes[c, 1]):
            take = False
            break
        if f & HAS_HIGH:
            if not word & _CHARS_KNOWN:
                word = _learn_chars(trans, c, word, utf8, memo)
            if not word & _CHARS_STEP:
                take = False
                break
        if nxt == c:
            break
        c = nxt
    if not take and not want_next and not rest and not f & HAS_HIGH:
        word = memo[s]
        if not word & _ALIVE_KNOWN:
            word = _learn_alive(trans, s, memo, alive_bytes)
        take = ((ascii_below[i, 0] & ~alive_bytes[s, 0]) | (ascii_below[i, 1] & ~alive_bytes[s, 1])) == 0
    return take


_MAX_CLOSED_STATES = 4096


@njit(cache=True, nogil=True)
def _visit_closed(t, memo, seen, queue, found):
    """Queue ``t`` for :func:`_learn_closed` unless seen or known closed; -1 when it is known
    not to be (or the queue is full)."""
    word = memo[t]
    if seen[t] or word & _CLOSED:
        return found
    if word & _CLOSED_KNOWN or found == queue.shape[0]:
        return -1
    seen[t] = True
    queue[found] = t
    return found + 1


@njit(cache=True, nogil=True)
def _learn_closed(trans, s, memo, utf8, call_ret, accepting):
    """Record whether no text of ordinary characters can die from ``s`` (returns the new word).

    True when every state such a text reaches has a move on every ordinary
    character: a free string, a pattern searched for in it (``"x\\.dll"``
    unanchored), ``^.*\\.xsl$``, an object's key beside free keys.  A state that
    calls or accepts (``call_ret`` non-empty) fails it.  A search over the
    states reached, which stops at states already known either way; gives up
    (False, which only costs speed) past 4,096 of them.  When true, it is true
    of every state reached, which are marked too.
    """
    guarded = call_ret.shape[0] > 0
    queue = np.empty(_MAX_CLOSED_STATES, np.int64)
    seen = np.zeros(trans.shape[0], np.bool_)
    ends = np.empty(_MAX_CHAR_PAIRS, np.int64)
    queue[0] = s
    seen[s] = True
    found = 1
    done = 0
    while 0 <= found and done < found:
        q = queue[done]
        done += 1
        if guarded and (call_ret[q] >= 0 or accepting[q]):
            found = -1
            break
        for b in range(0x20, 0x80):
            if _ORDINARY_ASCII[b]:
                t = trans[q, b]
                found = _visit_closed(t, memo, seen, queue, found) if t >= 0 else -1
                if found < 0:
                    break
        num_ends = _char_ends(trans, q, utf8, ends, 0) if found >= 0 else 0
        if num_ends < 0:
            found = -1
        for k in range(num_ends):
            found = _visit_closed(ends[k], memo, seen, queue, found) if found >= 0 else -1
    if found < 0:
        memo[s] |= _CLOSED_KNOWN
        return memo[s]
    for k in range(found):
        memo[queue[k]] |= _CLOSED_KNOWN | _CLOSED
    return memo[s]


@njit(cache=True, nogil=True)
def ordinary_run(trans, s, memo, step_bytes, utf8, call_ret, accepting, longest):
    """How many ordinary characters (:func:`ordinary_chars`) any text can read from ``s``, or -1.

    Inside a JSON string every ordinary character often leads to one state: the
    same one in a free string, the next count under ``maxLength``.  Following
    that step from ``s`` while it holds gives a run of states.  When the run ends
    at a state where no ordinary character is live (``maxLength`` reached), an
    ordinary token is viable exactly when it has at most that many characters.
    A run that loops (a free string), reaches ``longest`` (the most characters
    of an ordinary token), or ends at a state from which no text of ordinary
    characters can die (:func:`_learn_closed`: a pattern searched for) admits
    them all: ``longest`` is returned.  -1 otherwise: the caller must walk every
    token.  With ``call_ret`` non-empty (a pushdown walk), a state that calls or
    accepts ends the answer too (-1): a value may end or start there, so a
    character can be read in more than one way.  ``utf8`` is :data:`ORDINARY_UTF8`.
    """
    guarded = call_ret.shape[0] > 0
    run = 0
    c = s
    while run < longest:
        if guarded and (call_ret[c] >= 0 or accepting[c]):
            return -1
        word = memo[c]
        if not word & _STEP_KNOWN:
            word = _learn_step(trans, c, memo, step_bytes)
        nxt = (word >> 8) - 1
        if nxt >= 0 and (_ORDINARY_LOW & ~step_bytes[c, 0]) == 0 and (_ORDINARY_HIGH & ~step_bytes[c, 1]) == 0:
            if not word & _ORDINARY_KNOWN:
                word |= _ORDINARY_KNOWN | (_ORDINARY_STEP if _chars_step(trans, c, nxt, utf8) else 0)
                memo[c] = word
            if word & _ORDINARY_STEP:
                run += 1
                if nxt == c:
                    return longest
                c = nxt
                continue
        if not word & _CLOSED_KNOWN:
            word = _learn_closed(trans, c, memo, utf8, call_ret, accepting)
        if word & _CLOSED:
            return longest
        for b in range(0x20, 0x80):
            if _ORDINARY_ASCII[b] and trans[c, b] >= 0:
                return -1
        for b in range(0xC2, 0xF5):
            if trans[c, b] >= 0:
                return -1
        return run
    return longest


@njit(cache=True, nogil=True)
def walk_dfa(trans, start_state, node_byte, node_depth, node_skip, node_tok_ptr, tok_ids, ascii_below, flags,
             height, max_depth, memo, step_bytes, alive_bytes, utf8, out_words, out_next, rest):
    """Walk the token trie from ``start_state`` of a byte DFA whose every state is live.

    A token is viable when walking its bytes never reaches -1.  For each viable
    token the kernel ORs its bit into ``out_words`` (uint32, packed 32 a word) and,
    when ``out_next`` is non-empty, writes the DFA state it leads to into
    ``out_next[token]`` (one row of the token-level DFA that DINGO uses).

    A subtree whose prefix dies is skipped.  A subtree the DFA cannot die in is
    taken whole: inside a JSON string every character leads to the same state (a
    self-loop, or the next count of a ``maxLength``), so when every character of
    the subtree does so along its ``height`` levels, every token below is viable.
    Its tokens are the contiguous slice ``tok_ids[node_tok_ptr[i]:node_tok_ptr[node_skip[i]]]``,
    set without a transition lookup (~12x faster rows in such states).
    ``ascii_below``/``flags``/``height`` come from :func:`subtree_summaries`.  With
    ``out_next`` (whose tokens need each end state), only pure-ASCII subtrees on a
    self-loop are taken whole (they all end in the loop state).  Failing that, a
    pure-ASCII subtree is taken when its bytes cannot die from ``s`` at all
    (:func:`_learn_alive`).  ``memo`` (int64 ``[states]``), ``step_bytes`` and
    ``alive_bytes`` (uint64 ``[states, 2]``), zeros at first, are the DFA's memo
    (:func:`_learn_step`, :func:`_learn_chars`), which may be kept across calls.  ``rest``: the trie is
    :class:`~.token_trie.OrdinaryTokens`' rest (see :func:`_subtree_viable`).  Returns the number of viable tokens.
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
        end = i + 1
        if node_skip[i] > end and (not rest or s == start_state) and \
                _subtree_viable(trans, s, i, ascii_below, flags, height, memo, step_bytes, alive_bytes, utf8,
                                want_next, rest):
            end = node_skip[i]
        else:
            states[d] = s
        for p in range(node_tok_ptr[i], node_tok_ptr[end]):
            t = tok_ids[p]
            out_words[t >> 5] |= np.uint32(1) << np.uint32(t & 31)
            if want_next:
                out_next[t] = s
        count += node_tok_ptr[end] - node_tok_ptr[i]
        i = end
    return count


# Pushdown walks (:func:`walk_pda`) keep at most this many configurations per trie depth.
# An anyOf of many any-order objects calls one member loop per branch at once (JsonSchemaStore
# monika-config-schema: 22), and past the bound every token is decided in Python (seconds).
PDA_MAX_CONFIGS = 48


@njit(cache=True, nogil=True)
def _pda_add(level, cur, pop, npush, src_level, src_k, extra, c_cur, c_pop, c_np, c_push, cnt):
    """Add a configuration to ``level`` unless present: its pushed frames are ``src``'s first
    ``npush`` (or ``npush - 1`` of them plus ``extra`` when ``extra >= 0``).  False on overflow."""
    base = npush - 1 if extra >= 0 else npush
    for j in range(cnt[level]):
        if c_cur[level, j] != cur or c_pop[level, j] != pop or c_np[level, j] != npush:
            continue
        same = True
        for m in range(base):
            if c_push[level, j, m] != c_push[src_level, src_k, m]:
                same = False
                break
        if same and extra >= 0 and c_push[level, j, base] != extra:
            same = False
        if same:
            return True
    k = cnt[level]
    if k == PDA_MAX_CONFIGS:
        return False
    for m in range(base):
        c_push[level, k, m] = c_push[src_level, src_k, m]
    if extra >= 0:
        c_push[level, k, base] = extra
    c_cur[level, k] = cur
    c_pop[level, k] = pop
    c_np[level, k] = npush
    cnt[level] = k + 1
    return True


@njit(cache=True, nogil=True)
def _pda_closure(level, calls, call_ret, accepting, callees, frames, c_cur, c_pop, c_np, c_push, cnt):
    """Close ``level`` under calls (push the return state, enter the callee) and returns
    (a complete callee value pops its frame).  False on overflow."""
    nframes = frames.shape[0]
    max_push = c_push.shape[2]
    k = 0
    while k < cnt[level]:
        s = c_cur[level, k]
        p = c_pop[level, k]
        q = c_np[level, k]
        if calls[s] >= 0 and q < max_push:
            for c in range(call_ret.shape[1]):
                r = call_ret[s, c]
                if r >= 0 and not _pda_add(level, callees[c], p, q + 1, level, k, r, c_cur, c_pop, c_np, c_push, cnt):
                    return False
        if accepting[s]:
            if q > 0:
                if not _pda_add(level, c_push[level, k, q - 1], p, q - 1, level, k, -1, c_cur, c_pop, c_np, c_push, cnt):
                    return False
            elif p < nframes:
                if not _pda_add(level, frames[nframes - 1 - p], p + 1, 0, level, k, -1, c_cur, c_pop, c_np, c_push, cnt):
                    return False
        k += 1
    return True


@njit(cache=True, nogil=True)
def walk_pda(trans, calls, call_ret, accepting, callees, frames, start_state, node_byte, node_depth, node_skip, node_tok_ptr,
             tok_ids, ascii_below, flags, height, max_depth, memo, step_bytes, alive_bytes, utf8, out_words, rest):
    """Walk the token trie from one configuration of a DFA with calls (a pushdown automaton).

    ``trans`` holds byte moves only; ``call_ret[s, c] >= 0`` says that at ``s`` a
    value of callee ``c`` (which starts at ``callees[c]``) may come first, after
    which the walk continues at ``call_ret[s, c]``; ``calls[s] >= 0`` says that
    some callee may.  ``frames`` are the return states
    already on the stack (bottom first); ``accepting[s]`` of a callee state means
    its value is complete, so the top frame may be popped (at the bottom of the
    stack it means the whole text is complete).  Every trie depth keeps the set of
    configurations (state, frames popped from ``frames``, frames pushed since)
    its prefix can be in, closed under calls and returns, so ambiguity (a number
    that may go on or end, a value that is free-form in one branch and not in
    another) is followed exactly.  A subtree that one configuration's byte moves
    take whole (:func:`_subtree_viable`, ``rest`` as there) is set at once.  Returns the number of
    viable tokens, or -1 when a depth needed more than :data:`PDA_MAX_CONFIGS`
    configurations (the caller must then decide each token another way).
    """
    depths = max_depth + 1
    max_push = max_depth + 2
    cnt = np.zeros(depths, np.int64)
    c_cur = np.empty((depths, PDA_MAX_CONFIGS), np.int32)
    c_pop = np.empty((depths, PDA_MAX_CONFIGS), np.int32)
    c_np = np.empty((depths, PDA_MAX_CONFIGS), np.int32)
    c_push = np.empty((depths, PDA_MAX_CONFIGS, max_push), np.int32)
    c_cur[0, 0] = start_state
    c_pop[0, 0] = 0
    c_np[0, 0] = 0
    cnt[0] = 1
    if not _pda_closure(0, calls, call_ret, accepting, callees, frames, c_cur, c_pop, c_np, c_push, cnt):
        return -1
    n = node_byte.shape[0]
    count = 0
    i = 0
    while i < n:
        d = node_depth[i]
        b = node_byte[i]
        if cnt[d - 1] == 1:  # the common case, one configuration: no duplicates to look for
            t = trans[c_cur[d - 1, 0], b]
            if t < 0:
                i = node_skip[i]
                continue
            q = c_np[d - 1, 0]
            c_cur[d, 0] = t
            c_pop[d, 0] = c_pop[d - 1, 0]
            c_np[d, 0] = q
            for m in range(q):
                c_push[d, 0, m] = c_push[d - 1, 0, m]
            cnt[d] = 1
        else:
            cnt[d] = 0
            for k in range(cnt[d - 1]):
                t = trans[c_cur[d - 1, k], b]
                if t >= 0 and not _pda_add(d, t, c_pop[d - 1, k], c_np[d - 1, k], d - 1, k, -1,
                                           c_cur, c_pop, c_np, c_push, cnt):
                    return -1
            if cnt[d] == 0:
                i = node_skip[i]
                continue
        if (cnt[d] > 1 or calls[c_cur[d, 0]] >= 0 or accepting[c_cur[d, 0]]) and \
                not _pda_closure(d, calls, call_ret, accepting, callees, frames, c_cur, c_pop, c_np, c_push, cnt):
            return -1
        end = i + 1
        if node_skip[i] > end:
            for k in range(cnt[d]):
                if rest and c_cur[d, k] != start_state:
                    continue
                if _subtree_viable(trans, c_cur[d, k], i, ascii_below, flags, height, memo, step_bytes,
                                   alive_bytes, utf8, False, rest):
                    end = node_skip[i]
                    break
        for p in range(node_tok_ptr[i], node_tok_ptr[end]):
            t = tok_ids[p]
            out_words[t >> 5] |= np.uint32(1) << np.uint32(t & 31)
        count += node_tok_ptr[end] - node_tok_ptr[i]
        i = end
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
