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

**Indentation** (:class:`IndentGrammarEngine`, for grammars that ``%declare _INDENT
_DEDENT``): the newline terminal is lexed as one lexeme per indentation column, so
the store is unchanged, and a postlexer on the parser side turns completed newline
lexemes into ``_NEWLINE``/``_INDENT``/``_DEDENT`` from the open-bracket count and the
indent stack it keeps in the matcher state.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from ..errors import GrammarError, RegexError
from ..grammar.lark_grammar import LarkGrammar
from ..grammar.regex import Alt, CharSet, Concat, Repeat, parse_regex
from ..grammar.terminals import terminal_pattern
from .byte_dfa import build_byte_dfa, build_labeled_dfa
from .lalr import Stack, acceptable_terminals, accepts_end, feed, initial_stack, top_states
from .engine_base import EngineBase

__all__ = ["LexerDFA", "GrammarEngine", "IndentGrammarEngine", "IndentSpec", "grammar_engine",
           "MAX_CACHED_MASKS", "MAX_INDENT_COLUMN", "NEWLINE_PATTERN"]

#: Masks kept per grammar, keyed by lexer state and the parser frames they depend on
#: (16 KiB each for a 128k vocabulary: 2,048 entries stay under 32 MiB).
MAX_CACHED_MASKS = 2048

#: Groups with at least this many tokens keep a packed row; smaller ones keep ids.
DENSE_GROUP_TOKENS = 512


_WHITESPACE_BYTES = frozenset(b" \t\n\r\x0b\x0c")

#: Deepest indentation (in spaces) that opens a block; lines indented deeper are
#: fine inside brackets, where newlines are whitespace.
MAX_INDENT_COLUMN = 80

#: The ``_NEWLINE`` terminal an indentation-aware grammar must define: a line break,
#: the blank and comment lines after it, and the next line's indentation.
NEWLINE_PATTERN = r"(\r?\n[\t \f]*(#[^\r\n]*)?)+"

def _control_escapes(pattern: str) -> str:
    """``pattern`` with CR, LF, tab and form feed spelled as escapes (lark unescapes them in regexes)."""
    return pattern.replace("\r", r"\r").replace("\n", r"\n").replace("\t", r"\t").replace("\f", r"\f")


_BRACKETS = {"(": 1, "[": 1, "{": 1, ")": -1, "]": -1, "}": -1}


@dataclass(frozen=True)
class IndentSpec:
    """How an indentation-aware grammar (one that ``%declare _INDENT _DEDENT``) is lexed.

    The lexer splits ``_NEWLINE`` into one lexeme per indentation column of the
    line it ends on (``0 .. max_column``, then one for "deeper"), so that the lexer
    state alone tells the column and the mask store's per-state rows stay valid.
    Lexeme ids ``first_lexeme + c`` follow the parser's terminal ids.  Indentation
    is counted in spaces: a tab in the indentation of a line with code is refused
    (blank and comment lines may hold tabs).
    """

    newline: int
    indent: int
    dedent: int
    first_lexeme: int
    max_column: int
    brackets: dict  # terminal id -> +1 (opens) or -1 (closes)

    @property
    def num_lexemes(self) -> int:
        return self.max_column + 2

    @classmethod
    def of(cls, grammar: LarkGrammar, max_column: int = MAX_INDENT_COLUMN) -> "IndentSpec | None":
        """The spec of ``grammar``, or None when it does not declare ``_INDENT`` and ``_DEDENT``."""
        tables = grammar.tables
        if not {"_INDENT", "_DEDENT"} <= set(tables.terminals):
            return None
        newline = next((s for s in grammar.terminals if s.name == "_NEWLINE"), None)
        if newline is None or not newline.is_regex or _control_escapes(newline.pattern) != _control_escapes(
                NEWLINE_PATTERN) or "_NEWLINE" in grammar.ignore:
            raise GrammarError("Invalid indentation-aware grammar: it declares _INDENT and _DEDENT, so it must "
                               f"define _NEWLINE: /{NEWLINE_PATTERN}/ (not ignored), got "
                               f"{'/' + newline.pattern + '/' if newline is not None else 'no _NEWLINE'}")
        brackets = {tables.terminal_id(s.name): _BRACKETS[s.pattern]
                    for s in grammar.terminals if not s.is_regex and s.pattern in _BRACKETS}
        return cls(tables.terminal_id("_NEWLINE"), tables.terminal_id("_INDENT"), tables.terminal_id("_DEDENT"),
                   len(tables.terminals), max_column, brackets)

    def column_trees(self) -> list:
        """Regex trees of the newline lexemes: column 0, 1, ..., ``max_column``, deeper."""
        lines = parse_regex(r"(\r?\n[\t \f]*(#[^\r\n]*)?)*\r?\n", dialect="python")
        space = CharSet(((32, 32),))
        trees = [Concat((lines,) + (space,) * column) for column in range(self.max_column + 1)]
        trees.append(Concat((lines,) + (space,) * (self.max_column + 1) + (Repeat(space, 0, None),)))
        return trees


def _whitespace_only(tree) -> bool:
    """True when every string of the terminal consists of ASCII whitespace."""
    dfa = build_byte_dfa(tree)
    used = np.nonzero((dfa.trans >= 0).any(axis=0))[0]
    return all(int(b) in _WHITESPACE_BYTES for b in used)


class LexerDFA:
    """The union DFA of a grammar's terminals, with terminal labels and reachable terminals.

    ``max_ignore_len`` bounds runs of ignored whitespace: the ignored terminals made
    only of whitespace are merged into one run terminal of at most that many bytes,
    and a second start state (``restart`` after such a run) cannot begin another run,
    so that a model cannot emit spaces forever where the grammar merely tolerates
    them.  None keeps whitespace unbounded.

    Attributes
    ----------
    trans, label:
        The DFA and, per state, the terminal id lexed when a lexeme ends there (-1: none).
    start:
        The lexer state at the start of the text.
    restart:
        Per terminal id, the state a new lexeme starts from after that terminal.
    """

    def __init__(self, grammar: LarkGrammar, max_ignore_len: int | None = None) -> None:
        tables = grammar.tables
        indent = IndentSpec.of(grammar)
        entries = sorted(
            ((spec.priority, spec.is_regex, spec.name, terminal_pattern(spec, grammar.text)) for spec in grammar.terminals),
            key=lambda e: (-e[0], e[1], e[2]),
        )
        runs = [e for e in entries if max_ignore_len is not None and e[2] in grammar.ignore and _whitespace_only(e[3].tree)]
        entries = [e for e in entries if e not in runs]
        trees = [e[3].tree for e in entries]
        ids = [tables.terminal_id(e[2]) for e in entries]
        shortest = [e[3].shortest for e in entries]
        if indent is not None:  # the newline terminal becomes one lexeme per indentation column
            at = ids.index(indent.newline)
            columns = indent.column_trees()
            trees[at:at + 1] = columns
            ids[at:at + 1] = range(indent.first_lexeme, indent.first_lexeme + len(columns))
            shortest[at:at + 1] = [False] * len(columns)
        if runs:  # one bounded run of all ignored whitespace, ranked last
            trees.append(Repeat(Alt(tuple(e[3].tree for e in runs)), 1, None))
            ids.append(tables.terminal_id(runs[0][2]))
            shortest.append(False)
        bounds = [None] * (len(trees) - bool(runs)) + ([max_ignore_len] if runs else [])
        second = [False] * (len(trees) - bool(runs)) + ([True] if runs else [])
        try:
            trans, rank_labels, starts = build_labeled_dfa(trees, shortest, bounds, second if runs else None)
        except RegexError as err:
            raise GrammarError(f"lexer: {err.reason}") from None
        rank_to_terminal = np.array(ids, dtype=np.int32)
        self.trans = trans
        self.label = np.where(rank_labels >= 0, rank_to_terminal[np.maximum(rank_labels, 0)], -1).astype(np.int32)
        self.start = starts[0]
        #: lexeme ids: the parser's terminals, then (indentation-aware grammars) one per newline column
        self.num_terminals = len(tables.terminals) + (indent.num_lexemes if indent is not None else 0)
        self.restart = np.full(self.num_terminals, starts[0], dtype=np.int32)
        if runs:
            self.restart[tables.terminal_id(runs[0][2])] = starts[1]
        self.ignored = np.zeros(self.num_terminals, dtype=np.bool_)
        for name in grammar.ignore:
            self.ignored[tables.terminal_id(name)] = True
        self.reach = self._reachable_terminals()
        self._derive()

    _ARRAYS = ("trans", "label", "restart", "ignored", "reach")

    def to_arrays(self) -> dict[str, np.ndarray]:
        """The lexer as plain arrays for the disk cache (see :meth:`from_arrays`)."""
        return {**{name: getattr(self, name) for name in self._ARRAYS}, "start": np.int64(self.start)}

    @classmethod
    def from_arrays(cls, arrays: dict[str, np.ndarray]) -> "LexerDFA":
        lexer = cls.__new__(cls)
        for name in cls._ARRAYS:
            setattr(lexer, name, arrays[name])
        lexer.start = int(arrays["start"])
        lexer.num_terminals = int(lexer.ignored.shape[0])
        lexer._derive()
        return lexer

    def _derive(self) -> None:
        """Tables computed from the arrays: reach classes and Python rows for stepping."""
        classes, inverse = np.unique(self.reach, axis=0, return_inverse=True)
        #: states grouped by the set of terminals they can still become
        self.reach_class = inverse.reshape(-1).astype(np.int32)
        self.class_terms = [np.nonzero(row)[0].tolist() for row in classes]
        self.rows = self.trans.tolist()

    def _reachable_terminals(self) -> np.ndarray:
        """bool ``[states, terminals]``: terminals whose acceptance some path from the state reaches.

        A backwards worklist over the DFA's edges with Python ints as bitsets: linear
        in the edges times the depth of the few states that change, where a
        level-by-level numpy fixpoint costs one pass per DFA depth (80 passes for the
        indentation chain of the python grammar).
        """
        n = self.trans.shape[0]
        src, byte = np.nonzero(self.trans >= 0)
        dst = self.trans[src, byte]
        preds: list[set[int]] = [set() for _ in range(n)]
        for s, d in zip(src.tolist(), dst.tolist()):
            preds[d].add(s)
        bits = [0] * n
        for state, term in enumerate(self.label.tolist()):
            if term >= 0:
                bits[state] = 1 << term
        work = [s for s in range(n) if bits[s]]
        while work:
            d = work.pop()
            for s in preds[d]:
                merged = bits[s] | bits[d]
                if merged != bits[s]:
                    bits[s] = merged
                    work.append(s)
        reach = np.zeros((n, self.num_terminals), dtype=np.bool_)
        for state, value in enumerate(bits):
            while value:
                low = value & -value
                reach[state, low.bit_length() - 1] = True
                value ^= low
        return reach


class GrammarEngine(EngineBase):
    """The matcher protocol (see :class:`~constrain.automata.token_dfa.TokenDFA`) for a CFG."""

    def __init__(self, grammar: LarkGrammar, info, disk=None, max_ignore_len: int | None = None,
                 lexer: LexerDFA | None = None) -> None:
        self.grammar = grammar
        self.tables = grammar.tables
        self.lexer = lexer if lexer is not None else LexerDFA(grammar, max_ignore_len)
        super().__init__(info, disk)
        self._groups: dict[int, list] = {}
        # q -> trie over parser states from the top of the stack; see mask_words.
        self._mask_cache: dict[int, dict] = {}
        self._cached_masks = 0

    # -- matcher protocol ------------------------------------------------------
    @property
    def initial_state(self):
        return (self.lexer.start, initial_stack(self.tables))

    def is_accepting(self, state, watch: list[int] | None = None) -> bool:
        q, stack = state
        if q == self.lexer.start:
            return accepts_end(self.tables, stack, watch)
        term = int(self.lexer.label[q])
        if term < 0:
            return False
        if not self.lexer.ignored[term]:
            stack = feed(self.tables, stack, term, watch)
            if stack is None:
                return False
        return accepts_end(self.tables, stack, watch)

    def advance_token(self, state, token_id: int):
        if not self.is_matchable(token_id):
            return None
        return self.advance_bytes(state, self._token_bytes[token_id])

    def advance_bytes(self, state, data: bytes):
        """Lex ``data`` greedily from ``state``, feeding completed terminals to the parser."""
        moved = self._lex(state, data)
        if moved is None:
            return None
        q, parse = moved
        if q != self.lexer.start and not self._remainder_viable(q, parse):
            return None
        return moved

    def _lex(self, state, data: bytes, watch: list[int] | None = None):
        """``(q, parse)`` after lexing ``data`` (remainder not checked), or None on an error."""
        q, parse = state
        lexer = self.lexer
        rows, label, ignored, restart = lexer.rows, lexer.label, lexer.ignored, lexer.restart
        for b in data:
            nxt = rows[q][b]
            if nxt < 0:
                term = int(label[q])
                if term < 0:
                    return None
                if not ignored[term]:
                    parse = self._feed(parse, term, watch)
                    if parse is None:
                        return None
                nxt = rows[restart[term]][b]
                if nxt < 0:
                    return None
            q = nxt
        return q, parse

    # -- the parser side, as hooks that the indentation-aware engine overrides ----
    def _feed(self, parse, lexeme: int, watch: list[int] | None = None):
        """The parser state after a completed (not ignored) lexeme, or None."""
        return feed(self.tables, parse, lexeme, watch)

    def _stack(self, parse) -> Stack:
        return parse

    def _cache_root(self, q: int, parse):
        """What, besides the top parser frames, the mask of ``(q, parse)`` depends on."""
        return q

    def _class_follows(self, parse, terms: list[int], shiftable: frozenset[int], watch: list[int]) -> bool:
        """Whether one of ``terms`` (a remainder's possible lexemes) can come next.

        ``shiftable`` holds the terminals the parser state ``parse`` can shift.
        """
        ignored = self.lexer.ignored
        return any(ignored[t] or t in shiftable for t in terms)

    def _remainder_viable(self, q: int, parse) -> bool:
        """Some terminal the remainder can still become is ignored or shiftable now."""
        return self._any_follows(self.lexer.class_terms[self.lexer.reach_class[q]], parse)

    def _any_follows(self, terms: list[int], parse) -> bool:
        ignored = self.lexer.ignored
        return any(ignored[t] or self._feed(parse, t) is not None for t in terms)

    def mask_words(self, state) -> np.ndarray:
        """The mask of ``state``; cached by (lexer state, the top parser frames it depends on).

        Per lexer state, the cache is a trie over parser states read from the top of
        the stack down; a node holding a mask (key ``None``) means "these top frames
        decide the mask".  A lookup follows the stack until it meets one.
        Thread-safe without a lock: eviction rebinds a fresh cache instead of
        clearing the one other threads may be reading.
        """
        q, parse = state
        stack = self._stack(parse)
        root = self._cache_root(q, parse)
        cache = self._mask_cache
        node = cache.get(root)
        frame = stack
        while node is not None:
            words = node.get(None)
            if words is not None:
                return words
            if frame is None:
                break
            node = node.get(frame.state)
            frame = frame.below
        watch = [stack.depth]
        words = self._compute_mask(q, parse, watch)
        if self._cached_masks >= MAX_CACHED_MASKS:
            cache = self._mask_cache = {}
            self._cached_masks = 0
        node = cache.setdefault(root, {})
        for top_state in top_states(stack, stack.depth - watch[0] + 1):
            node = node.setdefault(top_state, {})
        node[None] = words
        self._cached_masks += 1
        return words

    def _compute_mask(self, q: int, parse, watch: list[int]) -> np.ndarray:
        """OR of the store's rows for ``q`` whose terminal sequence the parser accepts.

        Parser simulations are shared between groups: the parser state after each
        sequence prefix, and the terminals shiftable after each sequence, are
        computed once.  Small groups hold token ids rather than rows; their bits are
        set in one go.
        """
        accepting = self.is_accepting((q, parse), watch)
        words = self._eos_words.copy() if accepting else np.zeros(self.num_words, dtype=np.uint32)
        after_prefix: dict[tuple, object] = {(): parse}
        shiftable: dict[tuple, frozenset[int] | None] = {}
        sparse = []
        for sequence, cls, dense, ids in self._groups_of(q):
            if sequence not in shiftable:
                # None: the parser rejects the sequence itself.
                after = self._after(sequence, after_prefix, watch)
                shiftable[sequence] = None if after is None else frozenset(
                    acceptable_terminals(self.tables, self._stack(after), watch))
            follow = shiftable[sequence]
            if follow is not None and self._class_follows(after_prefix[sequence], self.lexer.class_terms[cls],
                                                          follow, watch):
                if dense is not None:
                    words |= dense
                else:
                    sparse.append(ids)
        if sparse:
            ids = np.concatenate(sparse)
            np.bitwise_or.at(words, ids >> 5, np.left_shift(np.uint32(1), (ids & 31).astype(np.uint32)))
        return words

    def _after(self, sequence: tuple, after_prefix: dict, watch: list[int]):
        """The parser state after feeding ``sequence``, memoised by prefix in ``after_prefix``."""
        found = after_prefix.get(sequence, False)
        if found is not False:
            return found
        before = self._after(sequence[:-1], after_prefix, watch)
        after = None if before is None else self._feed(before, sequence[-1], watch)
        after_prefix[sequence] = after
        return after

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
        # A token completes fewer terminals than it has bytes, so this bound is safe.
        buffer = np.empty(trie.total_token_bytes, dtype=np.int32)
        walk_lexer(lexer.trans, lexer.label, lexer.ignored, q, lexer.restart, trie.node_byte, trie.node_depth,
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
            ids = ids.astype(np.int64)
            dense = None
            if len(ids) >= DENSE_GROUP_TOKENS:
                dense = np.zeros(self.num_words, dtype=np.uint32)
                np.bitwise_or.at(dense, ids >> 5, np.left_shift(np.uint32(1), (ids & 31).astype(np.uint32)))
            groups.append((sequence, int(cls), dense, ids))
        return groups

    def memory_bytes(self) -> int:
        rows = sum((dense.nbytes if dense is not None else 0) + ids.nbytes
                   for groups in self._groups.values() for _, _, dense, ids in groups)
        return int(self.lexer.trans.nbytes + rows)


class IndentState(NamedTuple):
    """Parser side of an indentation-aware matcher state: all persistent, so fork is free.

    ``paren`` counts open brackets (newlines inside them are whitespace);
    ``indents`` is the stack of block indentation columns, ``(0,)`` at top level.
    """

    stack: Stack
    paren: int
    indents: tuple[int, ...]


class IndentGrammarEngine(GrammarEngine):
    """A :class:`GrammarEngine` with Python's indentation postlexer between lexer and parser.

    A completed newline lexeme of column ``c`` outside brackets becomes ``_NEWLINE``
    followed by ``_INDENT`` (``c`` deeper than the current block; pushed) or one
    ``_DEDENT`` per block closed (``c`` must then equal an enclosing column); inside
    brackets it is dropped.  The end of the output counts as one more line break at
    column 0 (so pending ``_DEDENT`` tokens are emitted and a last line needs no newline),
    and its start as one before it: EOS is allowed exactly when ``"\\n" + output + "\\n"``
    is a complete program.

    The postlexer only changes how completed lexemes reach the parser, so the mask
    store's rows (lexing only) are shared unchanged; the mask cache is keyed by
    ``(q, paren, indents)`` as well as the top parser frames, since the checks read them.
    """

    def __init__(self, grammar: LarkGrammar, info, disk=None, max_ignore_len: int | None = None,
                 lexer: LexerDFA | None = None) -> None:
        spec = IndentSpec.of(grammar)
        if spec is None:
            raise GrammarError("Invalid indentation-aware grammar: it must %declare _INDENT _DEDENT")
        self.indent = spec
        super().__init__(grammar, info, disk, max_ignore_len, lexer)

    @property
    def initial_state(self):
        # The output starts after a virtual line break, so that the first line's
        # indentation counts (CPython: "unexpected indent") and leading blank or
        # comment lines are one newline lexeme, as everywhere else.
        return self._lex((self.lexer.start, IndentState(initial_stack(self.tables), 0, (0,))), b"\n")

    def is_accepting(self, state, watch: list[int] | None = None) -> bool:
        moved = self._lex(state, b"\n", watch)
        if moved is None:
            return False
        q, parse = moved
        if int(self.lexer.label[q]) != self.indent.first_lexeme:  # "\n" did not end a column-0 newline
            return False
        parse = self._feed(parse, self.indent.first_lexeme, watch)
        return parse is not None and parse.paren == 0 and accepts_end(self.tables, parse.stack, watch)

    def _feed(self, parse: IndentState, lexeme: int, watch: list[int] | None = None) -> IndentState | None:
        spec, tables = self.indent, self.tables
        column = lexeme - spec.first_lexeme
        if column < 0:  # an ordinary terminal
            paren = parse.paren + spec.brackets.get(lexeme, 0)
            if paren < 0:
                return None
            stack = feed(tables, parse.stack, lexeme, watch)
            return None if stack is None else IndentState(stack, paren, parse.indents)
        if parse.paren:
            return parse
        stack = feed(tables, parse.stack, spec.newline, watch)
        indents = parse.indents
        if stack is not None and column > indents[-1]:
            if column > spec.max_column:
                return None
            stack, indents = feed(tables, stack, spec.indent, watch), indents + (column,)
        while stack is not None and column < indents[-1]:
            stack, indents = feed(tables, stack, spec.dedent, watch), indents[:-1]
        if stack is None or column != indents[-1]:
            return None
        return IndentState(stack, 0, indents)

    def _stack(self, parse: IndentState) -> Stack:
        return parse.stack

    def _cache_root(self, q: int, parse: IndentState):
        return (q, parse.paren, parse.indents)

    def _class_follows(self, parse: IndentState, terms: list[int], shiftable: frozenset[int],
                       watch: list[int]) -> bool:
        ignored, spec = self.lexer.ignored, self.indent
        for t in terms:
            if ignored[t]:
                return True
            if t >= spec.first_lexeme:
                if self._feed(parse, t, watch) is not None:
                    return True
            elif t in shiftable and (parse.paren > 0 or spec.brackets.get(t, 0) >= 0):
                return True
        return False


def grammar_engine(grammar: LarkGrammar, info, disk=None, max_ignore_len: int | None = None,
                   lexer: LexerDFA | None = None) -> GrammarEngine:
    """The engine for ``grammar``: indentation-aware when it ``%declare`` ``_INDENT _DEDENT``."""
    cls = IndentGrammarEngine if IndentSpec.of(grammar) is not None else GrammarEngine
    return cls(grammar, info, disk, max_ignore_len, lexer)
