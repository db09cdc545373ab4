"""Lark terminals as regex trees (Python dialect), ready for byte-DFA construction.

Two kinds of lark patterns need care:

* **Lazy quantifiers** (``/\\/\\*(.|\\n)*?\\*\\//``, a C comment): lark's lexer takes
  Python's ``re.match``, which for such patterns stops at the *first* place the
  pattern can end.  We mark the terminal ``shortest``: its DFA loses every
  transition out of an accepting state (:meth:`ByteDFA.shortest_match`), which is
  exactly "ends at the first possible place".
* **Look-behind in lark's own ``ESCAPED_STRING``** (``".*?(?<!\\\\)(\\\\\\\\)*?"``):
  not regular as written, but its language is; the known pattern is replaced by the
  equivalent ``"([^"\\\\\\n]|\\\\[^\\n])*"`` (a quote, then non-quote characters or
  backslash escapes, then the first unescaped quote).

Any other construct our regex parser refuses (look-arounds, back-references)
becomes a :class:`GrammarError` naming the terminal.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import GrammarError, RegexError
from .lark_grammar import TerminalSpec, terminal_position, terminal_shown
from .regex import CharSet, Concat, RegexNode, parse_regex

__all__ = ["TerminalPattern", "terminal_pattern"]

# lark's common.lark spells ESCAPED_STRING with a look-behind; its language is regular.
_KNOWN_REWRITES = {
    r'".*?(?<!\\)(\\\\)*?"': r'"(?:[^"\\\n]|\\[^\n])*"',
}


@dataclass(frozen=True)
class TerminalPattern:
    """The regex tree of a terminal and whether it matches shortest-first (lazy)."""

    name: str
    tree: RegexNode
    shortest: bool
    priority: int


def _has_lazy_quantifier(pattern: str) -> bool:
    """True when a quantifier in ``pattern`` is followed by ``?`` (outside classes and escapes)."""
    i, in_class = 0, False
    while i < len(pattern):
        ch = pattern[i]
        if ch == "\\":
            i += 2
            continue
        if in_class:
            in_class = ch != "]"
        elif ch == "[":
            in_class = True
        elif ch in "*+?}" and pattern.startswith("?", i + 1) and (ch != "?" or i > 0 and pattern[i - 1] not in "("):
            return True
        i += 1
    return False


def _literal_tree(text: str, ignore_case: bool) -> RegexNode:
    if ignore_case:
        # Reuse the regex parser's case folding on an escaped literal.
        return parse_regex("".join(f"\\u{{{ord(c):x}}}" for c in text), ignore_case=True)
    return Concat(tuple(CharSet(((ord(c), ord(c)),)) for c in text))


def terminal_pattern(spec: TerminalSpec, text: str | None = None) -> TerminalPattern:
    """The regex tree of one lark terminal (see the module docstring for the rewrites).

    ``text`` (the grammar's) lets an error give the line and column of what it refuses."""
    ignore_case = "i" in spec.flags
    if not spec.is_regex:
        if not spec.pattern:
            raise _terminal_error(spec, text, "matches only the empty string")
        return TerminalPattern(spec.name, _literal_tree(spec.pattern, ignore_case), False, spec.priority)
    pattern = _KNOWN_REWRITES.get(spec.pattern, spec.pattern)
    try:
        tree = parse_regex(pattern, dialect="python", ignore_case=ignore_case, dotall="s" in spec.flags)
    except RegexError as err:
        raise _terminal_error(spec, text, f"{err.reason} (at position {err.position} of /{pattern}/)",
                              err.position) from None
    return TerminalPattern(spec.name, tree, _has_lazy_quantifier(spec.pattern), spec.priority)


def _terminal_error(spec: TerminalSpec, text: str | None, reason: str, at: int = 0) -> GrammarError:
    """A :class:`GrammarError` naming the terminal, at its place in ``text`` where it can be found."""
    where = terminal_position(text, spec, at) if text is not None else None
    return GrammarError(f"terminal {terminal_shown(spec)}: {reason}", *(where or ()))
