"""LALR tables from lark and the incremental parser over them, against lark's own parser.

Random walks over terminal sequences: at every step the set of terminals our parser
can shift must equal what lark's interactive parser accepts, and "complete" must
agree with lark accepting ``$END``.
"""

from __future__ import annotations

import random

import pytest

from constrain import GrammarError
from constrain.automata.lalr import END, acceptable_terminals, accepts_end, feed, initial_stack
from constrain.grammar.lark_grammar import load_lark_grammar

GRAMMARS = {
    "arithmetic": r"""
        start: expr
        expr: expr ("+"|"-") term | term
        term: term ("*"|"/") factor | factor
        factor: NUMBER | "(" expr ")" | "-" factor
        %import common.NUMBER
        %import common.WS
        %ignore WS
    """,
    "sexpr": r"""
        start: sexpr+
        sexpr: ATOM | "(" sexpr* ")" | "'" sexpr
        ATOM: /[a-z0-9+*\/-]+/
        %ignore " "
    """,
    "json": r"""
        ?start: value
        ?value: object | array | STRING | NUMBER | "true" | "false" | "null"
        array: "[" [value ("," value)*] "]"
        object: "{" [pair ("," pair)*] "}"
        pair: STRING ":" value
        STRING: /"([^"\\]|\\.)*"/
        NUMBER: /-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?/
        %ignore /[ \t\n\r]+/
    """,
    "sql": r"""
        start: select
        select: "SELECT" columns "FROM" NAME where? ("ORDER" "BY" NAME)?
        columns: "*" | NAME ("," NAME)*
        where: "WHERE" cond (("AND"|"OR") cond)*
        cond: NAME OP value
        value: NAME | NUMBER | STRING
        OP: "=" | "<" | ">" | "<=" | ">=" | "!="
        NAME: /[a-z_][a-z0-9_]*/
        STRING: /'[^']*'/
        %import common.NUMBER
        %ignore " "
    """,
}


def _lark_accepts(interactive) -> set[str]:
    return set(interactive.accepts())


@pytest.mark.parametrize("name", sorted(GRAMMARS))
def test_parser_agrees_with_lark(name):
    from lark import Lark, Token

    grammar = load_lark_grammar(GRAMMARS[name])
    tables = grammar.tables
    lark_parser = Lark(GRAMMARS[name], parser="lalr", lexer="basic")
    rng = random.Random(name)
    for walk in range(40):
        stack = initial_stack(tables)
        interactive = lark_parser.parse_interactive("")
        for _ in range(rng.randint(1, 30)):
            ours = {tables.terminals[t] for t in acceptable_terminals(tables, stack)}
            if accepts_end(tables, stack):
                ours.add("$END")
            assert ours == _lark_accepts(interactive), (walk, ours ^ _lark_accepts(interactive))
            choices = sorted(ours - {"$END"})
            if not choices:
                break
            terminal = rng.choice(choices)
            stack = feed(tables, stack, tables.terminal_id(terminal))
            assert stack is not None
            interactive.feed_token(Token(terminal, "x"))


def test_feed_rejects_and_keeps_old_stack():
    tables = load_lark_grammar(GRAMMARS["arithmetic"]).tables
    start = initial_stack(tables)
    number = tables.terminal_id("NUMBER")
    after = feed(tables, start, number)
    assert after is not None and accepts_end(tables, after)
    assert feed(tables, after, number) is None  # NUMBER NUMBER is not a sentence prefix
    assert not accepts_end(tables, start)
    assert feed(tables, start, number) is not None  # persistent: start is unchanged
    assert END == 0 and tables.terminals[0] == "$END"


@pytest.mark.parametrize(
    "text,line,fragment",
    [
        ("start: (", 1, "Unclosed parenthesis"),
        ('start: "a"\nstart: "b"', 1, "defined more than once"),
        ('start: x\nx: "a" | y\ny: "a"', 2, "collision"),
        ('start "a"', 1, "missing colon"),
        ("start: a\n", 1, "used but not defined"),
    ],
)
def test_grammar_errors_have_positions(text, line, fragment):
    with pytest.raises(GrammarError) as info:
        load_lark_grammar(text)
    assert fragment in str(info.value)
    assert info.value.line == line
    assert isinstance(info.value, ValueError)
