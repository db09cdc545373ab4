"""The regex front end and byte DFAs: semantics, UTF-8, errors.

The DFA is compared with two independent implementations: the ``regex`` module
(on random strings and on mutations of matching ones) and interegular's character
FSM (on the same strings).
"""

from __future__ import annotations

import itertools
import random
import re

import numpy as np
import pytest

from constrain import RegexError
from constrain.automata.byte_dfa import regex_to_dfa
from constrain.automata.utf8 import utf8_sequences
from constrain.testing import ecma_to_python_regex

DIFFERENTIAL = [
    r"\d{4}-\d{2}-\d{2}",
    r"(a|ab)(c|bcd)(d*)",
    r"[a-c]{2,4}x?",
    r"(ab|cd)*e?",
    r"[^abc]{1,3}",
    r"a{0}b",
    r"(x*)*y",
    r"((a|b)*c)+|d{3,}",
    r"[\u00e0-\u00ff]+z",
    r"(é|è|ê)[0-9]",
    r"\w+\s\W?",
    r"-?(0|[1-9]\d*)(\.\d+)?",
    r"[😀-😂]{1,2}",
    r"(?:ab){2,3}|ba",
    r"[\d.]+",
    r"[-a]b[a-]",
    r"\x41\u0042\u{43}",
    # a '^' inside a repetition holds in its first copy only; after text, never (one input)
    r"(?:^a|b)+c",
    r"(?:(?:^|b)a){1,3}",
    r"x|a^b",
]
ALPHABET = "abcdexyz0129.- é😁\u00ff\n"


def _random_strings(rng: random.Random, count: int) -> list[str]:
    return ["".join(rng.choice(ALPHABET) for _ in range(rng.randint(0, 8))) for _ in range(count)]


@pytest.mark.parametrize("pattern", DIFFERENTIAL)
def test_dfa_agrees_with_regex_module(pattern):
    import regex

    oracle = regex.compile(ecma_to_python_regex(pattern))
    dfa = regex_to_dfa(pattern)
    rng = random.Random(pattern)
    for text in _random_strings(rng, 3000):
        data = text.encode()
        assert dfa.matches(data) == bool(oracle.fullmatch(text)), text
        assert dfa.is_prefix(data) == bool(oracle.fullmatch(text, partial=True)), text


@pytest.mark.parametrize("pattern", [p for p in DIFFERENTIAL if not any(x in p for x in ("\\u", "\\x", "\\w", "\\s", "[\\d", "^"))])
def test_dfa_agrees_with_interegular(pattern):
    """interegular has Python semantics, so only patterns where ECMA agrees are compared."""
    import interegular

    fsm = interegular.parse_pattern(pattern.replace(r"\d", "[0-9]")).to_fsm()
    dfa = regex_to_dfa(pattern)
    rng = random.Random(pattern + "i")
    for text in _random_strings(rng, 1000):
        assert dfa.matches(text.encode()) == fsm.accepts(text), text


def test_ecma_semantics():
    assert regex_to_dfa(r"\d").matches(b"7")
    assert not regex_to_dfa(r"\d").matches("٣".encode())  # Arabic-Indic digit: not ECMA \d
    assert not regex_to_dfa(r"\w").matches("é".encode())
    assert regex_to_dfa(r"\s").matches("\u00a0".encode())
    dot = regex_to_dfa(".")
    for terminator in "\n\r\u2028\u2029":
        assert not dot.matches(terminator.encode())
    assert dot.matches("😀".encode())
    assert regex_to_dfa("^abc$").matches(b"abc")
    assert regex_to_dfa("^a$|^b$").matches(b"b")
    assert regex_to_dfa("([]|a)b").matches(b"ab")  # "[]" is the empty class
    assert regex_to_dfa("a{").matches(b"a{")  # Annex B literal brace


PROPERTY_NAMES = ["L", "Letter", "Lu", "Ll", "Lt", "LC", "Lm", "Lo", "M", "Mn", "Nd", "digit", "N", "No", "P",
                  "punct", "Pd", "S", "Sm", "Sc", "Z", "Zs", "C", "Cc", "cntrl", "gc=Lo", "letter",
                  "General_Category=Uppercase_Letter", "White_Space", "ASCII", "Any", "Assigned"]


@pytest.mark.parametrize("name", PROPERTY_NAMES)
def test_property_escapes_agree_with_regex_module(name):
    """``\\p{...}``, ``\\P{...}`` and a property inside a class, on every code point below
    U+0800 and a random sample above, against the ``regex`` module.  Code points whose
    category the two disagree on are skipped: the interpreter's Unicode version and
    regex's differ on characters added or recategorised since (U+0295)."""
    import unicodedata

    import regex

    oracle = regex.compile(rf"\p{{{name}}}")
    plain, in_class = regex_to_dfa(rf"\p{{{name}}}"), regex_to_dfa(rf"[x\p{{{name}}}]")
    negated = None if name == "Any" else regex_to_dfa(rf"\P{{{name}}}")  # \P{Any} matches nothing: an error
    rng = random.Random(name)
    points = list(range(0x800)) + [rng.randrange(0x800, 0x110000) for _ in range(2500)]
    for cp in points:
        char = chr(cp)
        category = unicodedata.category(char)
        if 0xD800 <= cp <= 0xDFFF or category == "Cn" or not regex.fullmatch(rf"\p{{{category}}}", char):
            continue
        expected, data = bool(oracle.fullmatch(char)), char.encode()
        assert plain.matches(data) == expected, hex(cp)
        assert negated is None or negated.matches(data) != expected, hex(cp)
        assert in_class.matches(data) == (expected or char == "x"), hex(cp)


def test_property_escapes_in_patterns():
    """The JSON Schema Test Suite's uses: a letter before "cole", non-ASCII digits."""
    letter = regex_to_dfa(r"\p{Letter}cole")
    assert letter.matches("école".encode()) and letter.matches(b"ecole") and not letter.matches(b"1cole")
    digits = regex_to_dfa(r"^\p{digit}+$")
    assert digits.matches(b"42") and digits.matches("৪২".encode()) and not digits.matches(b"-%#")
    assert regex_to_dfa(r"[^\p{L}\s]+").matches(b"12!") and not regex_to_dfa(r"[^\p{L}\s]+").matches(b"1 2")


def test_utf8_split_characters_are_prefixes():
    dfa = regex_to_dfa("[你好]+")
    data = "你好".encode()
    for cut in range(1, len(data)):
        assert dfa.is_prefix(data[:cut])
    assert not dfa.matches(data[:4])
    assert not dfa.is_prefix(b"\xe4\x00")


@pytest.mark.parametrize("lo,hi", [(0, 0x7F), (0x80, 0x7FF), (0x7F0, 0x900), (0xD000, 0xE100), (0xFFF0, 0x10010), (0x1F600, 0x1F64F)])
def test_utf8_sequences_cover_exactly(lo, hi):
    encoded = set()
    for seq in utf8_sequences(lo, hi):
        for values in itertools.product(*[range(a, b + 1) for a, b in seq]):
            encoded.add(bytes(values))
    expected = {chr(c).encode() for c in range(lo, hi + 1) if not 0xD800 <= c <= 0xDFFF}
    assert encoded == expected


def test_dfa_is_minimal_for_alternation_suffixes():
    # "ab|cb" minimises to 3 states: start, after a/c, after b.
    assert regex_to_dfa("ab|cb").num_states == 3


@pytest.mark.parametrize(
    "pattern,position,fragment",
    [
        ("a(?=b)", 0, "matches no string at all"),  # a whole match has nothing after it
        (r"x(?=\bq)", 4, "word boundary inside a look-ahead"),
        (r"(?i)a(?=b)(", 10, "missing ')'"),  # positions point into the pattern, not its anchored wrapping
        ("(?<!x)y", 0, "look-behind"),
        (r"(a)\1", 3, "back-reference"),
        ("a**", 2, "quantifier"),
        ("*a", 0, "nothing to repeat"),
        ("(ab", 0, "missing ')'"),
        ("ab)", 2, "unbalanced"),
        ("[z-a]", 2, "out of order"),
        ("a{3,2}", 1, "out of order"),
        (r"\p{Script=Greek}", 0, "property escape"),
        (r"a\p{Alphabetic}", 1, "property escape"),
        (r"\pL", 0, "property name in braces"),
        ("a?^b", 2, "anchor"),  # holds only where a? matched nothing: refused
        ("a$b?", 1, "anchor"),
        ("a^b", 0, "matches no string at all"),  # after text, '^' never holds (no m flag: one input)
        ("a$b", 0, "matches no string at all"),
        ("[abc", 0, "missing ']'"),
        (r"\q", 0, "unknown escape"),
        ("(?x)abc", 0, "flag(s) 'x' are not supported"),
        ("a(?i)bc", 1, "only allowed at the start"),
        ("[^\\s\\S]", 0, "no string"),
    ],
)
def test_errors_name_construct_and_position(pattern, position, fragment):
    with pytest.raises(RegexError) as info:
        regex_to_dfa(pattern)
    assert info.value.position == position
    assert fragment in str(info.value)
    assert isinstance(info.value, ValueError)
    assert "^" in str(info.value).splitlines()[-1]  # caret excerpt


PYTHON_DIALECT = [
    r"\d+",
    r"\w+\s?",
    r"[^\W\d]\w*",
    r".{1,3}",
    r"(?i)select|from",
    r"(?i:ab)c",
    r"(?s)a.b",
    r"[^k]+",
    r"\S\D",
    r"(?i)[a-c]+",
    r"(?i)[^s]",
]
PY_ALPHABET = "aAbBcCkKsSſK0٣9_ \n\r\u00a0é\u2028x.-"


@pytest.mark.parametrize("pattern", PYTHON_DIALECT)
def test_python_dialect_agrees_with_re(pattern):
    """Lark grammars use Python's regex dialect: compare with ``re`` itself."""
    import re

    from constrain.automata.byte_dfa import build_byte_dfa
    from constrain.grammar.regex import parse_regex

    oracle = re.compile(pattern)
    dfa = build_byte_dfa(parse_regex(pattern, dialect="python"), pattern)
    rng = random.Random(pattern)
    for _ in range(3000):
        text = "".join(rng.choice(PY_ALPHABET) for _ in range(rng.randint(0, 5)))
        assert dfa.matches(text.encode()) == bool(oracle.fullmatch(text)), text


def test_ignore_case_flag_argument():
    from constrain.automata.byte_dfa import build_byte_dfa
    from constrain.grammar.regex import parse_regex

    dfa = build_byte_dfa(parse_regex("select", dialect="python", ignore_case=True))
    assert dfa.matches(b"SeLeCt") and not dfa.matches(b"selec")


def test_literal_alternation_trie_matches_general_construction():
    """Word alternations take a direct trie path; it must give the same minimal DFA."""
    import numpy as np

    from constrain.automata import byte_dfa

    rng = random.Random(5)
    alphabet = "abcé你😀"
    words = sorted({"".join(rng.choice(alphabet) for _ in range(rng.randint(1, 6))) for _ in range(300)})
    pattern = "|".join(words)
    fast = regex_to_dfa(pattern)
    original = byte_dfa._literal_strings
    try:
        byte_dfa._literal_strings = lambda node: None  # force the NFA path
        general = regex_to_dfa(pattern)
    finally:
        byte_dfa._literal_strings = original
    assert fast.num_states == general.num_states
    for text in words + ["".join(rng.choice(alphabet) for _ in range(rng.randint(0, 7))) for _ in range(2000)]:
        data = text.encode()
        assert fast.matches(data) == general.matches(data) == (text in words)
        for cut in range(len(data) + 1):
            assert fast.is_prefix(data[:cut]) == general.is_prefix(data[:cut])
    assert np.all(fast.trans[fast.trans >= 0] < fast.num_states)


# -- the numba kernels against the pure-Python reference construction ------------------------------
KERNEL_PATTERNS = DIFFERENTIAL + [
    r"[\u0100-\uffff]+z",
    r"[\u00c0-\u024f\u4e00-\u9fff]{2,5}",
    r"[^\u0000-\u007f]{1,3}|[\u{10000}-\u{10ffff}]",
    r"\d{1,3}(\.\d{1,3}){3}",
    r"(a|b)*abb(a|b){3}",
    r"(ab|a)*(ba|b)*",
    r"(foo|bar|baz)+x?|qux{2,}",
    r"[^\"\\]*(\\.[^\"\\]*)*",
    r"(?:[a-f0-9]{8}-){2}[a-f0-9]{4}",
    r".{0,7}",
    r"(a{2,4}|b{3}){1,3}c*",
]


def _nfa_of(tree):
    from constrain.automata.byte_dfa import _NFA

    nfa = _NFA()
    start, final = nfa.new_state(), nfa.new_state()
    nfa.build(tree, start, final)
    return nfa, start, final


def _reference_dfa(tree):
    """``build_byte_dfa`` done entirely by the Python reference functions."""
    import numpy as np

    from constrain.automata.byte_dfa import (
        ByteDFA, _live_states_reference, _minimize, _subset_construction_reference,
    )

    nfa, start, final = _nfa_of(tree)
    trans, labels, (start_state,) = _subset_construction_reference(nfa, (start,), {final: 0})
    live = _live_states_reference(trans, labels >= 0)
    index = np.cumsum(live) - 1
    targets = trans[live]
    pruned = np.where((targets >= 0) & live[np.maximum(targets, 0)], index[np.maximum(targets, 0)], -1)  # dead: no move
    trans, labels, (start_state,) = _minimize(pruned, labels[live], (int(index[start_state]),), reference=True)
    return ByteDFA(trans.astype(np.int32), labels >= 0, start_state)


def _assert_same_language(a, b, same_size=True):
    from constrain.automata.dfa_ops import difference

    assert a.num_states == b.num_states or not same_size
    assert difference(a, b) is None and difference(b, a) is None


def _assert_same_construction(nfa, starts, finals):
    """The numba subset construction is bit-identical to the Python one (same numbering)."""
    import numpy as np

    from constrain.automata.byte_dfa import _subset_construction, _subset_construction_reference

    fast = _subset_construction(nfa, starts, finals)
    slow = _subset_construction_reference(nfa, starts, finals)
    assert np.array_equal(fast[0], slow[0]) and np.array_equal(fast[1], slow[1]) and fast[2] == slow[2]
    return fast


def _assert_kernel_matches_reference(tree):
    from constrain.automata.byte_dfa import build_byte_dfa

    nfa, start, final = _nfa_of(tree)
    _assert_same_construction(nfa, (start,), {final: 0})
    _assert_same_language(build_byte_dfa(tree), _reference_dfa(tree))


@pytest.mark.parametrize("pattern", KERNEL_PATTERNS)
def test_numba_construction_matches_reference(pattern):
    from constrain.grammar.regex import parse_regex

    _assert_kernel_matches_reference(parse_regex(pattern))


@pytest.mark.parametrize("pattern, words, non_words", [
    ("[0-9]+", ["7", "70", "7000"], ["", "7a"]),
    ("(ab)+", ["ab", "abab"], ["", "a", "aba"]),
    ("x(é|ab){2,}", ["xabé", "xéabéé"], ["x", "xab", "xaba"]),
])
def test_one_or_more_is_one_copy_looped(pattern, words, non_words):
    """``x+`` is wired as one copy of ``x`` entered once and repeated: its subset
    construction is already minimal (``x x*`` gave equal states after the first pass
    and after the later ones, merged only by minimisation)."""
    from constrain.automata.byte_dfa import build_byte_dfa
    from constrain.grammar.regex import parse_regex

    built = build_byte_dfa(parse_regex(pattern), minimize=False)
    assert built.num_states == build_byte_dfa(parse_regex(pattern)).num_states
    assert all(built.matches(w.encode()) for w in words) and not any(built.matches(w.encode()) for w in non_words)


def test_numba_construction_finds_a_large_closure_again_whatever_order_it_is_reached_in():
    """A closure past the kernel's insertion sort (a wide ``anyOf`` holds hundreds of NFA
    states) must still be interned by its members: ``x`` and ``y`` reach the same set with
    their targets listed in opposite orders, so an unsorted closure would make two states."""
    from constrain.automata.byte_dfa import _NFA

    nfa = _NFA()
    start, left, right, final = (nfa.new_state() for _ in range(4))
    for head in (left, right):
        state = head
        for _ in range(60):
            nxt = nfa.new_state()
            nfa.add_eps(state, nxt)
            state = nxt
        nfa.add_edge(state, ord("z"), ord("z"), final)
    nfa.add_edge(start, ord("x"), ord("x"), left)
    nfa.add_edge(start, ord("x"), ord("x"), right)
    nfa.add_edge(start, ord("y"), ord("y"), right)
    nfa.add_edge(start, ord("y"), ord("y"), left)
    trans, _, _ = _assert_same_construction(nfa, (start,), {final: 0})
    assert trans[0, ord("x")] == trans[0, ord("y")] >= 0 and trans.shape[0] == 3


def test_numba_construction_matches_reference_on_schema_automata():
    """Trees embedding JSON Schema DFAs (the Automaton blocks of the NFA) and several starts."""
    from constrain.automata.byte_dfa import _NFA, build_labeled_dfa
    from constrain.grammar.json_schema import schema_to_dfa
    from constrain.grammar.regex import Alt, Automaton, Concat, Repeat, parse_regex

    schemas = [
        {"type": "object", "properties": {"a": {"type": "integer", "minimum": 3}, "b": {"type": "string"}},
         "required": ["a"]},
        {"type": "array", "items": {"enum": ["x", "yy", 1, None]}, "maxItems": 3},
        {"type": "string", "pattern": "^[a-z]{2,4}-\\d+$"},
        {"oneOf": [{"type": "integer"}, {"type": "string", "maxLength": 3}]},
    ]
    dfas = [schema_to_dfa(schema).dfa for schema in schemas]
    for dfa in dfas:
        _assert_kernel_matches_reference(Concat((Automaton(dfa), Repeat(parse_regex("[,;]"), 0, None))))
    _assert_kernel_matches_reference(Repeat(Alt(tuple(Automaton(dfa) for dfa in dfas)), 1, 2))
    # Several starts and ranked finals: the lexer's labelled union.
    trees = [Automaton(dfas[0]), parse_regex(r"[a-z]+"), parse_regex(r"\d+|null")]
    nfa = _NFA()
    starts = (nfa.new_state(), nfa.new_state())
    finals = {}
    for rank, tree in enumerate(trees):
        final = nfa.new_state()
        entry = nfa.new_state()
        for start in starts[: 2 - (rank % 2)]:
            nfa.add_eps(start, entry)
        nfa.build(tree, entry, final)
        finals[final] = rank
    _, labels, _ = _assert_same_construction(nfa, starts, finals)
    assert set(labels.tolist()) == {-1, 0, 1, 2}
    build_labeled_dfa(trees, [False, False, True], second_start=[False, True, False])


def test_construction_over_live_moves_equals_pruning_afterwards_on_random_nfas():
    """``_live_dfa`` (dead moves dropped from the NFA before determinising) against the
    construction over every move followed by the dead-state search over the table: the
    same language, every state live (the Python search), and None exactly when the
    language is empty.  Random NFAs over a few bytes with dead ends, dead loops and
    epsilon moves into dead states."""
    import numpy as np

    from constrain.automata.byte_dfa import (_NFA, ByteDFA, _live_dfa, _live_states_reference, _prune_dead,
                                             _subset_construction)

    rng = np.random.default_rng(5)
    empties = 0
    for _ in range(150):
        nfa = _NFA()
        n = int(rng.integers(2, 25))
        nfa.new_states(n)
        for _ in range(int(rng.integers(0, 2 * n))):
            nfa.add_eps(int(rng.integers(0, n)), int(rng.integers(0, n)))
        for _ in range(int(rng.integers(0, 3 * n))):
            lo = int(rng.integers(97, 101))
            nfa.add_edge(int(rng.integers(0, n)), lo, lo + int(rng.integers(0, 2)), int(rng.integers(0, n)))
        start, final = 0, int(rng.integers(0, n))
        expected = _prune_dead(*_subset_construction(nfa, (start,), {final: 0}))
        got = _live_dfa(nfa, start, final)
        assert (got is None) == (expected is None)
        if got is None:
            empties += 1
            continue
        assert got[0].shape[0] <= expected[0].shape[0]
        assert _live_states_reference(got[0], got[1] >= 0).all()
        _assert_same_language(ByteDFA(got[0], got[1] >= 0, got[2][0]),
                              ByteDFA(expected[0], expected[1] >= 0, expected[2][0]), same_size=False)
    assert 0 < empties < 150


def test_numba_minimisation_matches_reference_on_random_tables():
    """Random partial DFAs (many equivalent states) minimise to the same language and size:
    with a few byte classes, and with dozens where most states are entered on one or two
    (keys' letters: the kernel queues only the classes a block is entered on)."""
    import numpy as np

    from constrain.automata.byte_dfa import ByteDFA, _minimize, _prune_dead

    rng = np.random.default_rng(7)
    for trial in range(80):
        n = int(rng.integers(2, 60))
        width = 4 if trial % 2 else 40
        classes = rng.integers(0, width, size=256)
        table = rng.integers(-1, n, size=(n, width)).astype(np.int32)
        if width > 4:  # sparse rows: each state moves on a few classes
            table[rng.random((n, width)) < 0.9] = -1
        trans = np.ascontiguousarray(table[:, classes])
        labels = np.where(rng.random(n) < 0.3, rng.integers(0, 3, size=n), -1).astype(np.int32)
        pruned = _prune_dead(trans, labels, (0,))
        if pruned is None:
            continue
        fast = _minimize(*pruned)
        slow = _minimize(*pruned, reference=True)
        assert fast[0].shape == slow[0].shape and sorted(fast[1].tolist()) == sorted(slow[1].tolist())
        for label in set(slow[1].tolist()):
            a = ByteDFA(fast[0], fast[1] == label, fast[2][0])
            b = ByteDFA(slow[0], slow[1] == label, slow[2][0])
            _assert_same_language(a, b, same_size=False)


def test_run_table_lists_every_maximal_run_with_a_live_target():
    """``run_table`` against a byte-by-byte reading of each row, on random tables with
    runs at both ends of a row, adjacent runs with different targets, and empty rows."""
    from constrain.automata.byte_dfa import ByteDFA

    rng = np.random.default_rng(11)
    for _ in range(30):
        n = int(rng.integers(1, 12))
        cuts = np.sort(rng.integers(0, 257, size=(n, int(rng.integers(0, 6)))), axis=1)
        trans = np.full((n, 256), -1, dtype=np.int32)
        for s, row_cuts in enumerate(cuts):
            for lo, hi in zip([0, *row_cuts], [*row_cuts, 256]):
                trans[s, lo:hi] = rng.integers(-1, n)
        expected = []
        for s in range(n):
            for b in range(256):
                t = int(trans[s, b])
                if t < 0:
                    continue
                if b and trans[s, b - 1] == t:
                    expected[-1][2] = b
                else:
                    expected.append([s, b, b, t])
        runs = ByteDFA(trans, np.zeros(n, dtype=bool), 0).run_table()
        assert runs.dtype == np.int32 and runs.tolist() == expected


@pytest.mark.parametrize("width", [2, 4])
def test_moves_are_grouped_by_source_in_their_order(width):
    """The NFA's CSR form (``group_by_source``, a counting sort) is numpy's stable sort by
    source: random moves over 50 states, some states without any, none at all."""
    from constrain.automata._dfa_kernels import group_by_source

    rng = np.random.default_rng(width)
    for count in (0, 1, 300):
        moves = rng.integers(0, 40, size=(count, width)).astype(np.int32)
        ptr, columns = group_by_source(moves, 50)
        ordered = moves[np.argsort(moves[:, 0], kind="stable")]
        assert columns.shape == (width - 1, count) and np.array_equal(columns, ordered[:, 1:].T)
        assert ptr.tolist() == [int((moves[:, 0] < s).sum()) for s in range(51)]


def test_numba_construction_keeps_the_state_limit(monkeypatch):
    from constrain.automata import byte_dfa

    monkeypatch.setattr(byte_dfa, "MAX_DFA_STATES", 5)
    with pytest.raises(RegexError, match="more than 5 states"):
        byte_dfa.build_byte_dfa(byte_dfa.parse_regex(r"[a-z]{10}x"))


# -- products ---------------------------------------------------------------------------------------------------------

PRODUCT_REGEXES = ["(ab|b)*a?", "a*b*", "(a|b)(a|b)(a|b)?", "b(ab)*|a+", "", "[ab]*aa[ab]*"]


@pytest.mark.parametrize("left, right", list(itertools.combinations(PRODUCT_REGEXES, 2)))
def test_products_agree_with_membership(left, right):
    """intersect / union / difference accept exactly the strings the two DFAs' verdicts say,
    over every string of length up to 7 on the alphabet {a, b, c}."""
    from constrain.automata.dfa_ops import difference, intersect, union

    a, b = regex_to_dfa(left), regex_to_dfa(right)
    results = {"and": intersect(a, b), "or": union(a, b), "diff": difference(a, b)}
    rules = {"and": lambda x, y: x and y, "or": lambda x, y: x or y, "diff": lambda x, y: x and not y}
    for length in range(8):
        for letters in itertools.product(b"abc", repeat=length):
            text = bytes(letters)
            x, y = a.matches(text), b.matches(text)
            for op, dfa in results.items():
                want = rules[op](x, y)
                assert (dfa is not None and dfa.matches(text)) == want, (op, left, right, text)


def test_large_products_agree_with_membership():
    """A product of 1,408 reachable pairs (the last seven letters times the count of a's
    modulo 11) outgrows the kernel's first arrays and its pair table several times; the
    three products still accept exactly what ``re`` says of both sides, on random strings."""
    from constrain.automata import _dfa_kernels
    from constrain.automata.dfa_ops import _with_sink, difference, intersect, union

    left, right = "[ab]*a[ab]{6}", "((b*a){11})*b*"
    a, b = regex_to_dfa(left), regex_to_dfa(right)
    status, trans, _, _ = _dfa_kernels.pair_product(_with_sink(a.trans), _with_sink(b.trans), int(a.start),
                                                    int(b.start), _dfa_kernels.PRODUCT_MODES["or"], 10**6)
    assert status == 0 and trans.shape[0] == 128 * 11
    results = {"and": intersect(a, b), "or": union(a, b), "diff": difference(a, b)}
    rules = {"and": lambda x, y: x and y, "or": lambda x, y: x or y, "diff": lambda x, y: x and not y}
    rng = random.Random(5)
    for _ in range(3000):
        text = "".join(rng.choice("ab") for _ in range(rng.randint(0, 40)))
        x, y = re.fullmatch(left, text) is not None, re.fullmatch(right, text) is not None
        for op, dfa in results.items():
            assert dfa.matches(text.encode()) == rules[op](x, y), (op, text)


@pytest.mark.parametrize("pattern, words", [
    ("[ab]*c?", [b"", b"a", b"ab", b"abc", b"ba"]),  # the empty word, prefixes of one another
    ("a[bc]*", [b"ab", b"abc", b"b", b"acx"]),  # words outside the language take nothing away
    ("ab|ac", [b"ab", b"ac"]),  # everything taken away: the empty language
    ('"[^"]*"', [b'"a"', b'"ab"', b'"b"', b'""']),  # keys of free-form members
    ("a[bc]|x", [b"ac", b"ab", b"ab"]),  # a node that dies inside the trie, a repeated word
])
def test_without_words_is_difference_with_the_words(pattern, words):
    """``without_words`` (a trie on top of the DFA) accepts what ``difference`` with the words'
    DFA does, over every string of length up to 6 on the alphabet the cases use."""
    from constrain.automata.dfa_ops import without_words

    dfa = regex_to_dfa(pattern)
    kept = without_words(dfa, words)
    alphabet = sorted(set(b"abcx\"" + b"".join(words)))
    checked = 0
    for length in range(7):
        for letters in itertools.product(alphabet, repeat=length):
            text = bytes(letters)
            want = dfa.matches(text) and text not in words
            assert (kept is not None and kept.matches(text)) == want, (pattern, text)
            checked += want
    assert (kept is None) == (checked == 0)
    if kept is not None:  # a ByteDFA's every state can still reach acceptance
        from constrain.automata.byte_dfa import _live_states_reference

        assert _live_states_reference(kept.trans, kept.accepting).all()


@pytest.mark.parametrize("minimize", [True, False])
@pytest.mark.parametrize("max_run", [0, 1, 2])
def test_bound_runs_refuses_exactly_the_long_runs(minimize, max_run):
    """``bound_runs`` keeps the strings whose every run of spaces (all of them between
    tokens here) is at most ``max_run`` long, over every string of up to 7 bytes.  The
    unminimised DFA enters its space loops from other states on the first space, the
    minimised one loops in place: both ways of starting a run are covered."""
    from constrain.automata.byte_dfa import _live_states_reference, build_byte_dfa
    from constrain.automata.dfa_ops import bound_runs
    from constrain.grammar.regex import parse_regex

    dfa = build_byte_dfa(parse_regex(r"\[ *(a *(, *a *)*)?\]"), minimize=minimize)
    loops = dfa.trans[:, ord(" ")] == np.arange(dfa.num_states)
    assert loops.any()
    bounded = bound_runs(dfa, loops, b" ", max_run)
    assert _live_states_reference(bounded.trans, bounded.accepting).all()
    for length in range(8):
        for letters in itertools.product(b"[a, ]", repeat=length):
            text = bytes(letters)
            longest = max((len(run) for run in re.findall(rb" +", text)), default=0)
            assert bounded.matches(text) == (dfa.matches(text) and longest <= max_run), text
            assert bounded.is_prefix(text) == (dfa.is_prefix(text) and longest <= max_run), text


def test_product_over_the_state_limit_is_a_regex_error(monkeypatch):
    from constrain.automata import dfa_ops

    monkeypatch.setattr(dfa_ops, "MAX_DFA_STATES", 3)
    with pytest.raises(RegexError, match="more than 3 states"):
        dfa_ops.intersect(regex_to_dfa("[ab]*a[ab]{4}"), regex_to_dfa("[ab]*b[ab]{3}"))


def _cut_language(rng: random.Random):
    """A random language over {a, b}: some words, and some prefixes cut with ANY_SUFFIX
    (each standing for every text that starts with it), as (DFA, oracle)."""
    from constrain.automata.byte_dfa import build_byte_dfa
    from constrain.automata.dfa_ops import any_suffix_marker
    from constrain.grammar.json_schema.trees import alt, lit, seq
    from constrain.grammar.regex import Automaton

    def word():
        return "".join(rng.choice("ab") for _ in range(rng.randint(0, 4)))

    words, prefixes = {word() for _ in range(rng.randint(1, 5))}, {word() for _ in range(rng.randint(0, 2))}
    tree = alt(*map(lit, sorted(words)), *(seq(lit(p), Automaton(any_suffix_marker())) for p in sorted(prefixes)))
    return build_byte_dfa(tree), words, prefixes


def _in(words, prefixes, text: bytes) -> bool:
    return text.decode() in words or _cut(prefixes, text)


def _cut(prefixes, text: bytes) -> bool:
    return any(text.decode().startswith(p) for p in prefixes)


def test_any_suffix_cuts_mean_every_continuation_through_products():
    """A DFA with ANY_SUFFIX cuts, widened, accepts exactly the texts its words and cut
    prefixes stand for.  Union and intersection keep that meaning exactly; a difference
    with the cuts on the side kept (what is taken away is widened first) keeps them as
    cuts, so it is exact except below them, where it takes every text: an
    over-approximation, as a language taken away needs.  Over every text of up to 6 letters."""
    from constrain.automata.dfa_ops import difference, has_any_suffix, intersect, union, widen_any_suffix

    rng = random.Random(7)
    texts = [bytes(letters) for length in range(7) for letters in itertools.product(b"ab", repeat=length)]
    for _ in range(60):
        (a, words_a, cuts_a), (b, words_b, cuts_b) = _cut_language(rng), _cut_language(rng)
        wide_b = widen_any_suffix(b)
        assert not has_any_suffix(wide_b)
        results = {"and": intersect(a, b), "or": union(a, b), "diff": difference(a, wide_b)}
        for text in texts:
            in_a, in_b = _in(words_a, cuts_a, text), _in(words_b, cuts_b, text)
            assert wide_b.matches(text) == in_b, text
            wanted = {"and": in_a and in_b, "or": in_a or in_b, "diff": in_a and (not in_b or _cut(cuts_a, text))}
            for op, dfa in results.items():
                assert (dfa is not None and widen_any_suffix(dfa).matches(text)) == wanted[op], (op, text)
