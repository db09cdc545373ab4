"""The regex front end and byte DFAs: semantics, UTF-8, errors.

The DFA is compared with two independent implementations: the ``regex`` module
(on random strings and on mutations of matching ones) and interegular's character
FSM (on the same strings).
"""

from __future__ import annotations

import itertools
import random

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


@pytest.mark.parametrize("pattern", [p for p in DIFFERENTIAL if not any(x in p for x in ("\\u", "\\x", "\\w", "\\s", "[\\d"))])
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
        ("a(?=b)", 1, "look-ahead"),
        ("(?<!x)y", 0, "look-behind"),
        (r"(a)\1", 3, "back-reference"),
        (r"\bword", 0, "word-boundary"),
        ("a**", 2, "quantifier"),
        ("*a", 0, "nothing to repeat"),
        ("(ab", 0, "missing ')'"),
        ("ab)", 2, "unbalanced"),
        ("[z-a]", 2, "out of order"),
        ("a{3,2}", 1, "out of order"),
        (r"\p{L}", 0, "property"),
        ("a^b", 1, "anchor"),
        ("a$b", 1, "anchor"),
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
