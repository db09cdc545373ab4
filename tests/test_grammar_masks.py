"""Exactness of CFG token masks against a brute-force oracle (lark's parser + ``regex``).

At random viable prefixes (reached by sampling tokens the engine allows), the mask
must equal the set of tokens that keep the text a viable prefix, EOS included, as
decided by :class:`constrain.testing.GrammarOracle` over the whole vocabulary.
"""

from __future__ import annotations

import zlib

import pytest

from constrain import Matcher
from constrain.automata.grammar_engine import grammar_engine
from constrain.compiler import CompiledGrammar
from constrain.grammar.builtin import builtin_grammar
from constrain.grammar.lark_grammar import load_lark_grammar
from constrain.testing import GrammarOracle, check_masks_along_random_walk

GRAMMARS = {
    "json": r"""
        ?start: value
        ?value: object | array | STRING | NUMBER | "true" | "false" | "null"
        array: "[" [value ("," value)*] "]"
        object: "{" [pair ("," pair)*] "}"
        pair: STRING ":" value
        STRING: /"([^"\\\x00-\x1f]|\\["\\\/bfnrt]|\\u[0-9a-fA-F]{4})*"/
        NUMBER: /-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?/
        %ignore /[ \t\n\r]+/
    """,
    "arithmetic": r"""
        start: expr
        expr: expr ("+"|"-") term | term
        term: term ("*"|"/") factor | factor
        factor: INT | "(" expr ")" | "-" factor
        INT: /[0-9]+/
        %ignore " "
    """,
    "keywords": r"""
        start: stmt+
        stmt: "let" NAME "=" NAME ";" | "print" NAME ";"
        NAME: /[a-z]+/
        %ignore " "
    """,
    "sql_builtin": builtin_grammar("sql"),
    "json_builtin": builtin_grammar("json"),
    "sexpr": r"""
        start: sexpr
        sexpr: ATOM | "(" sexpr* ")"
        ATOM: /[a-z0-9]+/
        %ignore " "
    """,
}


def _walk(info, grammar_text, steps, seed, starts=(b"",)):
    grammar = load_lark_grammar(grammar_text)
    compiled = CompiledGrammar(info, "grammar", grammar_text, grammar_engine(grammar, info))
    oracle = GrammarOracle(grammar_text, info.token_bytes, info.eos_token_ids)
    for start in starts:
        problem = check_masks_along_random_walk(Matcher(compiled), oracle, info, steps, seed, start)
        assert problem is None, problem


@pytest.mark.parametrize("tokenizer", ["llama-2", "llama-3"])
@pytest.mark.parametrize("name", sorted(GRAMMARS))
def test_grammar_mask_equals_oracle(infos, tokenizer, name):
    # The oracle costs seconds per check on 128k tokens (tens for the SQL grammar's 37 terminals).
    heavy = name.endswith("_builtin")
    steps = (3 if heavy else 4) if tokenizer == "llama-2" else (1 if heavy else 2)
    _walk(infos(tokenizer), GRAMMARS[name], steps=steps, seed=zlib.crc32(f"{tokenizer}/{name}".encode()))


#: Python prefixes where indentation decides the mask: inside a block, right after a
#: dedent, inside brackets spanning lines, at the end of a block (EOS pending
#: DEDENTs), in a long string and after a line continuation.
PYTHON_STARTS = [
    b"class A(object):\n    def f(self, x=(1,\n            2)):\n        if x:\n            return x  # c\n\n",
    b"if a:\n    if b:\n        y = 1\n    ",
    b"def f():\n    x = [1,\n",
    b"for i in range(3):\n    pass\n",
    b's = """ab\'',
    b"x = 1 \\\n",
]


@pytest.mark.parametrize("tokenizer", ["llama-2", "llama-3"])
def test_python_grammar_mask_equals_oracle(infos, tokenizer):
    """The built-in python grammar (indentation postlexer) against lark + an independent indenter."""
    if tokenizer == "llama-2":  # about 3 s per oracle check on 32k tokens
        starts, steps = PYTHON_STARTS[::2] + [PYTHON_STARTS[5]], 1
    else:  # about 12 s per check on 128k tokens: two starts, the empty one and a dedent
        starts, steps = [b"", PYTHON_STARTS[1]], 0
    _walk(infos(tokenizer), builtin_grammar("python"), steps=steps, seed=zlib.crc32(tokenizer.encode()), starts=starts)
