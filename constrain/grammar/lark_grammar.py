"""Lark grammar text → terminals and LALR(1) tables, with readable errors.

lark does the heavy lifting (its grammar language, ``%import common.*``, EBNF
expansion, LALR(1) construction and conflict detection); this module extracts what
the engine runs on: the terminal definitions (names, patterns, priorities), the
``%ignore`` set, and the parse tables as integer arrays
(:class:`~constrain.automata.lalr.ParseTables`).

lark reports conflicts and undefined symbols without positions; the errors raised
here carry the line and column of the rule or terminal they name, found in the
grammar text, so the user can go straight to it.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass

import numpy as np

from ..automata.lalr import ParseTables
from ..errors import GrammarError

__all__ = ["TerminalSpec", "LarkGrammar", "load_lark_grammar"]

_AT_LINE_COLUMN = re.compile(r"at line (\d+) column (\d+)")
#: lark's message for a terminal Python's ``re`` refuses: it names the terminal (made up, for
#: one written inline) and the pattern's repr, not why or where.
_CANNOT_COMPILE = re.compile(r"Cannot compile token (\w+): (.+)$")
_NAMED_SYMBOL = re.compile(r"'([A-Za-z_][A-Za-z0-9_]*)'|<([A-Za-z_][A-Za-z0-9_]*) :|in rule ([A-Za-z_][A-Za-z0-9_]*)")


@dataclass(frozen=True)
class TerminalSpec:
    """A lexer terminal as lark defines it.

    ``pattern`` is a Python-syntax regex when ``is_regex``, else a literal string;
    ``flags`` are Python regex flags (``"i"`` for case-insensitive literals).
    """

    name: str
    pattern: str
    is_regex: bool
    flags: frozenset[str]
    priority: int


@dataclass(frozen=True, eq=False)
class LarkGrammar:
    """A Lark grammar ready for the engine: terminals, ignored terminals, LALR tables."""

    text: str
    start: str
    terminals: tuple[TerminalSpec, ...]
    ignore: frozenset[str]
    tables: ParseTables

    def to_arrays(self) -> dict[str, np.ndarray]:
        """Plain arrays (no pickles) for the disk cache; see :meth:`from_arrays`."""
        t = self.tables
        return {
            "term_name": np.array([x.name for x in self.terminals], dtype=str),
            "term_pattern": np.array([x.pattern for x in self.terminals], dtype=str),
            "term_regex": np.array([x.is_regex for x in self.terminals], dtype=bool),
            "term_flags": np.array(["".join(sorted(x.flags)) for x in self.terminals], dtype=str),
            "term_priority": np.array([x.priority for x in self.terminals], dtype=np.int64),
            "ignore": np.array(sorted(self.ignore), dtype=str),
            "tables_terminals": np.array(t.terminals, dtype=str),
            "tables_nonterminals": np.array(t.nonterminals, dtype=str),
            "action": t.action, "goto": t.goto, "rule_len": t.rule_len, "rule_lhs": t.rule_lhs,
            "start_end": np.array([t.start_state, t.end_state], dtype=np.int64),
        }

    @classmethod
    def from_arrays(cls, text: str, start: str, a: dict[str, np.ndarray]) -> "LarkGrammar":
        terminals = tuple(
            TerminalSpec(str(n), str(p), bool(r), frozenset(str(f)), int(pr))
            for n, p, r, f, pr in zip(a["term_name"], a["term_pattern"], a["term_regex"], a["term_flags"],
                                      a["term_priority"])
        )
        tables = ParseTables(tuple(str(x) for x in a["tables_terminals"]), tuple(str(x) for x in a["tables_nonterminals"]),
                             a["action"], a["goto"], a["rule_len"], a["rule_lhs"],
                             int(a["start_end"][0]), int(a["start_end"][1]))
        return cls(text, start, terminals, frozenset(str(x) for x in a["ignore"]), tables)


def _definition_offset(text: str, name: str) -> int | None:
    """Where in ``text`` rule or terminal ``name`` is defined (its name's first character)."""
    pattern = re.compile(rf"^[ \t]*[?!]?{re.escape(name)}(\.-?\d+)?[ \t]*:", re.MULTILINE)
    match = pattern.search(text)
    if match is None:
        return None
    return match.start() + len(match.group(0)) - len(match.group(0).lstrip())


def _line_column(text: str, offset: int) -> tuple[int, int]:
    """The 1-based line and column of ``offset`` in ``text``."""
    return text.count("\n", 0, offset) + 1, offset - (text.rfind("\n", 0, offset) + 1) + 1


def _definition_position(text: str, name: str) -> tuple[int, int] | None:
    """Line and column (1-based) where rule or terminal ``name`` is defined in ``text``."""
    offset = _definition_offset(text, name)
    return None if offset is None else _line_column(text, offset)


def terminal_position(text: str, spec: TerminalSpec, at: int = 0) -> tuple[int, int] | None:
    """Line and column (1-based) in the grammar ``text`` of character ``at`` of a terminal's
    regex (where a regex error points), or of a string terminal's opening quote.

    Lark names the terminals written inline (``/a+/`` in a rule) ``__ANON_0``..., which
    the grammar never spells, so a terminal is found by its spelling, searched from its
    definition where it has one.  Lark keeps a regex's source text, escapes included;
    a string is unescaped, so one with escapes may not be found (None, as for terminals
    that ``%import`` brings in)."""
    defined = _definition_offset(text, spec.name)
    found = text.find(_spelling(spec), defined or 0)
    if found < 0:
        return None if defined is None else _line_column(text, defined)
    return _line_column(text, found + (1 + at if spec.is_regex else 0))


def terminal_shown(spec: TerminalSpec) -> str:
    """How an error names a terminal: its name, or its spelling where lark made the name up."""
    return _spelling(spec) if spec.name.startswith("__") else spec.name


def _spelling(spec: TerminalSpec) -> str:
    """A terminal as a grammar writes it: ``/regex/`` or ``"string"`` (a string unescaped)."""
    return f"/{spec.pattern}/" if spec.is_regex else f'"{spec.pattern}"'


def _grammar_error(text: str, err: Exception) -> GrammarError:
    """Turn a lark exception into a GrammarError with the best position we can find."""
    message = str(err).strip()
    first = message.split("\n\n")[0].strip()
    where = _AT_LINE_COLUMN.search(message)
    if where is not None:
        first = _AT_LINE_COLUMN.sub("", first).rstrip(" ,")
        return GrammarError(first, int(where.group(1)), int(where.group(2)))
    line = getattr(err, "line", None)
    if isinstance(line, int) and line > 0:
        return GrammarError(first, line, getattr(err, "column", None))
    refused = _CANNOT_COMPILE.match(first)
    if refused is not None:
        return _regex_refused(text, refused.group(1), refused.group(2)) or GrammarError(first)
    # Point at the earliest definition among the symbols the message names (lark
    # lists colliding rules in no fixed order).
    names = {next(g for g in match.groups() if g) for match in _NAMED_SYMBOL.finditer(message)}
    positions = [p for p in (_definition_position(text, name) for name in names) if p is not None]
    if positions:
        return GrammarError(" ".join(message.split()), *min(positions))
    return GrammarError(" ".join(message.split()))


def _regex_refused(text: str, name: str, shown: str) -> GrammarError | None:
    """The error for a terminal whose regex Python's ``re`` refuses (lark's "Cannot compile
    token"), with ``re``'s reason and the line and column it points at; None where the
    pattern cannot be read back from lark's message."""
    try:
        pattern = ast.literal_eval(shown)
        re.compile(pattern)
    except re.error as err:
        spec = TerminalSpec(name, pattern, True, frozenset(), 0)
        at = err.pos or 0
        return GrammarError(f"terminal {terminal_shown(spec)}: {err.msg} (at position {at} of /{pattern}/)",
                            *(terminal_position(text, spec, at) or ()))
    except (ValueError, SyntaxError):
        return None
    return None  # ``re`` takes it alone: lark refused it for another reason (its flags)


def load_lark_grammar(text: str, start: str = "start") -> LarkGrammar:
    """Build a :class:`LarkGrammar` from Lark grammar text.

    Raises
    ------
    GrammarError
        Syntax errors in the grammar text, undefined or duplicate symbols, and
        LALR(1) conflicts, with the line and column of the construct where known.
    """
    if not isinstance(text, str):
        raise TypeError(f"Invalid grammar: expected str, got {type(text).__name__}")
    from lark import Lark
    from lark.exceptions import LarkError

    try:
        parser = Lark(text, parser="lalr", start=start, lexer="basic")
    except LarkError as err:
        raise _grammar_error(text, err) from None
    terminals = tuple(
        TerminalSpec(
            name=t.name,
            pattern=t.pattern.value,
            is_regex=type(t.pattern).__name__ == "PatternRE",
            flags=frozenset(t.pattern.flags),
            priority=int(t.priority),
        )
        for t in parser.terminals
    )
    parse_table = parser.parser.parser.parser.parse_table
    # Terminals without a pattern (``%declare _INDENT _DEDENT``) appear only in the
    # table; lark spells terminals in upper case.
    declared = {symbol for actions in parse_table.states.values() for symbol in actions if symbol.isupper()}
    tables = ParseTables.from_lark(parse_table, start, sorted(declared | {t.name for t in terminals}))
    return LarkGrammar(text, start, terminals, frozenset(parser.ignore_tokens), tables)
