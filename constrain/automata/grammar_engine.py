"""Token masks for context-free grammars: a lexer DFA, an LALR(1) parser and a mask store.

**Lexing semantics.** One DFA recognises all terminals at once (the union, labelled
at each accepting state with the terminal that wins a tie: higher priority, then
string literals before regexes, then name).  Lexing is greedy: a lexeme ends when
the next byte has no transition, and must then be at an accepting state.  This is
the longest-match lexing of hand-written lexers and of llguidance; it agrees with
lark's basic lexer on grammars whose terminals do not need backtracking.  Lazy
terminals end at their first acceptance.  ``%ignore`` terminals are lexed and
dropped.

**Matcher state** ``(q, stack)``: the lexer state of the partial last lexeme (the
remainder) and the persistent parser stack of the lexemes completed so far.  A
state is viable when some terminal the remainder can still become is ignored or
can be shifted by the parser.

**Mask store (after SynCode, made exact).**  Because lexing does not depend on the
parser, the effect of a token from lexer state ``q`` is fixed: the terminals it
completes (a sequence, usually empty) and the lexer state it ends in.  For each
visited ``q``, one numba walk of the vocabulary trie computes that for every token;
tokens are grouped by (completed sequence, the set of terminals the final remainder
can still become), and each group gets a packed bitmask row.  A mask is then the OR
of the rows whose group the parser accepts: feed the sequence, then check that one
of the remainder's terminals can follow.  Tokens crossing any number of lexeme
boundaries are checked exactly this way, with the real parser; there is no
over-approximation.
"""

from __future__ import annotations

import numpy as np

from ..errors import GrammarError, RegexError
from ..grammar.lark_grammar import LarkGrammar
from ..grammar.terminals import terminal_pattern
from .byte_dfa import build_labeled_dfa
from .lalr import Stack, accepts_end, feed, initial_stack
from .token_trie import token_trie_for

__all__ = ["LexerDFA", "GrammarEngine"]


class LexerDFA:
    """The union DFA of a grammar's terminals, with terminal labels and reachable terminals."""

    def __init__(self, grammar: LarkGrammar) -> None:
        tables = grammar.tables
        patterns = [terminal_pattern(spec) for spec in grammar.terminals]
        ranked = sorted(
            zip(grammar.terminals, patterns),
            key=lambda pair: (-pair[0].priority, pair[0].is_regex, pair[0].name),
        )
        try:
            trans, rank_labels, start = build_labeled_dfa([p.tree for _, p in ranked], [p.shortest for _, p in ranked])
        except RegexError as err:
            raise GrammarError(f"lexer: {err.reason}") from None
        rank_to_terminal = np.array([tables.terminal_id(spec.name) for spec, _ in ranked], dtype=np.int32)
        self.trans = trans
        self.label = np.where(rank_labels >= 0, rank_to_terminal[np.maximum(rank_labels, 0)], -1).astype(np.int32)
        self.start = start
        self.num_terminals = len(tables.terminals)
        self.ignored = np.zeros(self.num_terminals, dtype=np.bool_)
        for name in grammar.ignore:
            self.ignored[tables.terminal_id(name)] = True
        self.reach = self._reachable_terminals()
        classes, inverse = np.unique(self.reach, axis=0, return_inverse=True)
        #: states grouped by the set of terminals they can still become
        self.reach_class = inverse.reshape(-1).astype(np.int32)
        self.class_terms = [np.nonzero(row)[0].tolist() for row in classes]
        self.rows = trans.tolist()

    def _reachable_terminals(self) -> np.ndarray:
        """bool ``[states, terminals]``: terminals whose acceptance some path from the state reaches."""
        n = self.trans.shape[0]
        reach = np.zeros((n, self.num_terminals), dtype=np.bool_)
        accepting = self.label >= 0
        reach[np.nonzero(accepting)[0], self.label[accepting]] = True
        src, byte = np.nonzero(self.trans >= 0)
        dst = self.trans[src, byte]
        while True:  # propagate backwards to a fixpoint (depth of the DFA iterations)
            before = reach.copy()
            np.logical_or.at(reach, src, reach[dst])
            if np.array_equal(before, reach):
                return reach


class GrammarEngine:
    """The matcher protocol (see :class:`~constrain.automata.token_dfa.TokenDFA`) for a CFG."""

    def __init__(self, grammar: LarkGrammar, info, disk=None) -> None:
        self.grammar = grammar
        self.tables = grammar.tables
        self.lexer = LexerDFA(grammar)
        self.info = info
        self.trie = token_trie_for(info, disk)
        self.num_words = (info.vocab_size + 31) // 32
        self._eos_words = np.zeros(self.num_words, dtype=np.uint32)
        for eos in info.eos_token_ids:
            self._eos_words[eos >> 5] |= np.uint32(1 << (eos & 31))
        self._eos_set = frozenset(info.eos_token_ids)
        self._token_bytes = info.token_bytes
        self._matchable = self.trie.matchable
        self._groups: dict[int, list] = {}

    # -- matcher protocol ------------------------------------------------------
    @property
    def initial_state(self):
        return (self.lexer.start, initial_stack(self.tables))

    def is_eos(self, token_id: int) -> bool:
        return token_id in self._eos_set

    def is_accepting(self, state) -> bool:
        q, stack = state
        if q == self.lexer.start:
            return accepts_end(self.tables, stack)
        term = int(self.lexer.label[q])
        if term < 0:
            return False
        if not self.lexer.ignored[term]:
            stack = feed(self.tables, stack, term)
            if stack is None:
                return False
        return accepts_end(self.tables, stack)

    def advance_token(self, state, token_id: int):
        if not 0 <= token_id < self._matchable.shape[0] or not self._matchable[token_id]:
            return None
        return self.advance_bytes(state, self._token_bytes[token_id])

    def advance_bytes(self, state, data: bytes):
        """Lex ``data`` greedily from ``state``, feeding completed terminals to the parser."""
        q, stack = state
        rows, label, ignored, start = self.lexer.rows, self.lexer.label, self.lexer.ignored, self.lexer.start
        for b in data:
            nxt = rows[q][b]
            if nxt < 0:
                term = int(label[q])
                if term < 0:
                    return None
                if not ignored[term]:
                    stack = feed(self.tables, stack, term)
                    if stack is None:
                        return None
                nxt = rows[start][b]
                if nxt < 0:
                    return None
            q = nxt
        if q != start and not self._remainder_viable(q, stack):
            return None
        return (q, stack)

    def _remainder_viable(self, q: int, stack: Stack) -> bool:
        """Some terminal the remainder can still become is ignored or shiftable now."""
        return self._any_follows(self.lexer.class_terms[self.lexer.reach_class[q]], stack)

    def _any_follows(self, terms: list[int], stack: Stack) -> bool:
        ignored = self.lexer.ignored
        return any(ignored[t] or feed(self.tables, stack, t) is not None for t in terms)

    def mask_words(self, state) -> np.ndarray:
        q, stack = state
        words = self._eos_words.copy() if self.is_accepting(state) else np.zeros(self.num_words, dtype=np.uint32)
        for sequence, terms, row in self._groups_of(q):
            after = stack
            for term in sequence:
                after = feed(self.tables, after, term)
                if after is None:
                    break
            if after is not None and self._any_follows(terms, after):
                words |= row
        return words

    def eos_words(self) -> np.ndarray:
        return self._eos_words

    def forced_bytes(self, state) -> bytes:
        return b""  # jump-forward for grammars is future work

    # -- the mask store ----------------------------------------------------------
    def _groups_of(self, q: int) -> list:
        groups = self._groups.get(q)
        if groups is None:
            groups = self._groups.setdefault(q, self._build_groups(q))
        return groups

    def _build_groups(self, q: int) -> list:
        """Group the tokens viable from lexer state ``q`` by (completed terminals, remainder's terminals)."""
        from ._kernels import walk_lexer

        trie, lexer = self.trie, self.lexer
        vocab = self.info.vocab_size
        out_state = np.full(vocab, -1, dtype=np.int32)
        out_nb = np.zeros(vocab, dtype=np.int32)
        out_start = np.zeros(vocab, dtype=np.int32)
        buffer = np.empty(int(trie.num_nodes) + int(trie.tok_ids.shape[0]) * 2, dtype=np.int32)
        walk_lexer(lexer.trans, lexer.label, lexer.ignored, q, lexer.start, trie.node_byte, trie.node_depth,
                   trie.node_skip, trie.node_tok_ptr, trie.tok_ids, trie.max_depth, out_state, out_nb,
                   out_start, buffer)
        alive = np.nonzero(out_state >= 0)[0]
        crossing = alive[out_nb[alive] > 0]
        plain = alive[out_nb[alive] == 0]
        # Most tokens stay inside the current lexeme: group them with numpy by the
        # terminals their final state can still become.
        keyed: dict[tuple, np.ndarray] = {}
        plain_class = lexer.reach_class[out_state[plain]]
        for cls in np.unique(plain_class).tolist():
            keyed[((), cls)] = plain[plain_class == cls]
        # The few that complete lexemes carry their terminal sequence.
        crossing_keys: dict[tuple, list[int]] = {}
        for token, final, nb, start in zip(crossing.tolist(), out_state[crossing].tolist(),
                                           out_nb[crossing].tolist(), out_start[crossing].tolist()):
            key = (tuple(buffer[start : start + nb].tolist()), int(lexer.reach_class[final]))
            crossing_keys.setdefault(key, []).append(token)
        keyed.update((key, np.asarray(tokens, dtype=np.int64)) for key, tokens in crossing_keys.items())
        groups = []
        for (sequence, cls), ids in keyed.items():
            row = np.zeros(self.num_words, dtype=np.uint32)
            ids = ids.astype(np.int64)
            np.bitwise_or.at(row, ids >> 5, np.left_shift(np.uint32(1), (ids & 31).astype(np.uint32)))
            groups.append((sequence, lexer.class_terms[cls], row))
        return groups

    def memory_bytes(self) -> int:
        rows = sum(row.nbytes for groups in self._groups.values() for _, _, row in groups)
        return int(self.lexer.trans.nbytes + rows)
