"""Lark terminals compiled to byte DFAs agree with lark's own reading of them (Python ``re``).

lark's lexer uses ``re.match``, so a terminal matches exactly the strings ``s`` with
``re.match(pattern, s).group() == s`` when the pattern is lazy, and the strings
``re.fullmatch(pattern, s)`` accepts otherwise.
"""

from __future__ import annotations

import random
import re

import pytest

from constrain import GrammarError
from constrain.automata.byte_dfa import build_byte_dfa
from constrain.grammar.lark_grammar import TerminalSpec, load_lark_grammar
from constrain.grammar.terminals import terminal_pattern

COMMON = ["DIGIT", "HEXDIGIT", "INT", "SIGNED_INT", "DECIMAL", "FLOAT", "SIGNED_FLOAT", "NUMBER",
          "SIGNED_NUMBER", "ESCAPED_STRING", "LETTER", "WORD", "CNAME", "WS_INLINE", "WS", "NEWLINE",
          "SH_COMMENT", "CPP_COMMENT", "C_COMMENT", "SQL_COMMENT"]
ALPHABET = ['"', "\\", "a", "Z", "_", "0", "7", "e", "+", "-", ".", " ", "\t", "\n", "\r", "/", "*", "#", "é"]


@pytest.fixture(scope="module")
def common_terminals():
    text = "start: " + " | ".join(COMMON) + "\n" + "\n".join(f"%import common.{n}" for n in COMMON)
    return {t.name: t for t in load_lark_grammar(text).terminals}


def _sample(rng: random.Random, seeds: list[str]) -> str:
    if seeds and rng.random() < 0.5:
        text = list(rng.choice(seeds))
        for _ in range(rng.randint(0, 2)):
            text.insert(rng.randint(0, len(text)), rng.choice(ALPHABET))
        return "".join(text)
    return "".join(rng.choice(ALPHABET) for _ in range(rng.randint(0, 7)))


SEEDS = ['"abc"', '"a\\"b"', '"a\\\\"', "12.5e-3", "-42", "/* x */", "/* a */ b */", "// hi", "# c", "abc_9",
         " \t ", "\r\n\n", "-- q"]


@pytest.mark.parametrize("name", COMMON)
def test_common_terminal_matches_lark_semantics(common_terminals, name):
    spec = common_terminals[name]
    term = terminal_pattern(spec)
    dfa = build_byte_dfa(term.tree)
    if term.shortest:
        dfa = dfa.shortest_match()
    pattern = re.compile(spec.pattern)
    rng = random.Random(name)
    for _ in range(4000):
        text = _sample(rng, SEEDS)
        if term.shortest:
            match = pattern.match(text)
            expected = match is not None and match.group() == text
        else:
            expected = pattern.fullmatch(text) is not None
        assert dfa.matches(text.encode()) == expected, (name, text)


def test_case_insensitive_literal():
    spec = TerminalSpec("SELECT", "select", False, frozenset({"i"}), 0)
    dfa = build_byte_dfa(terminal_pattern(spec).tree)
    assert dfa.matches(b"SELECT") and dfa.matches(b"sElEcT") and not dfa.matches(b"selec")


def test_unsupported_terminal_names_itself():
    spec = TerminalSpec("BAD", r"a(?=b)", True, frozenset(), 0)
    with pytest.raises(GrammarError, match="terminal BAD: look-ahead"):
        terminal_pattern(spec)
