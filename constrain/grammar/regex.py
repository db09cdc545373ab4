"""Regular expressions (ECMA-262 syntax) parsed into a small abstract syntax tree.

Why our own parser: JSON Schema requires ECMA-262 semantics (``\\d`` is ``[0-9]``,
``\\w`` is ASCII, ``.`` excludes the four line terminators), while Python's ``re`` and
interegular follow Python's rules; and interegular's FSM construction takes seconds
for a 1,000-word alternation.  Parsing is cheap and the tree is handed to
:mod:`constrain.automata.byte_dfa`, which builds a UTF-8 byte-level DFA directly.

The tree works on Unicode code points: a :class:`CharSet` is a sorted tuple of
inclusive code point ranges.  Patterns match whole strings (like ``re.fullmatch``):
``^`` and ``$`` are accepted only where they are no-ops for a full match (at the
start or end of the pattern, or of a top-level alternative), and any other
assertion (look-arounds, ``\\b``, back-references) raises :class:`RegexError` naming
the construct and its position.  The JSON Schema compiler alone asks the parser for
look-aheads and word boundaries (:class:`_Look`, :class:`_Boundary` nodes), since a
pattern there is searched in a whole string value and what surrounds an assertion is
known; a Lark terminal's look-ahead would look past the token into text the terminal
does not own.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Union

from ..errors import RegexError

__all__ = [
    "CharSet",
    "Concat",
    "Alt",
    "Repeat",
    "RegexNode",
    "parse_regex",
    "MAX_CODEPOINT",
    "EMPTY",
    "Automaton",
    "Graph",
    "AssertionNotHere",
]

MAX_CODEPOINT = 0x10FFFF


class AssertionNotHere(RegexError):
    """A look-ahead or word boundary met by a parser built without them (a grammar's
    terminals): its own class, so that :func:`~constrain.automata.byte_dfa.regex_to_dfa`
    can take such a pattern down the path that builds assertions instead."""


Ranges = tuple[tuple[int, int], ...]


@dataclass(frozen=True, slots=True)
class CharSet:
    """One code point drawn from ``ranges`` (sorted, disjoint, inclusive)."""

    ranges: Ranges


@dataclass(frozen=True, slots=True)
class Concat:
    """The items in sequence; ``Concat(())`` is the empty string."""

    items: tuple["RegexNode", ...]


@dataclass(frozen=True, slots=True)
class Alt:
    """Any one of the alternatives."""

    items: tuple["RegexNode", ...]


@dataclass(frozen=True, slots=True)
class Repeat:
    """``item`` repeated between ``min`` and ``max`` times (``max=None``: unbounded)."""

    item: "RegexNode"
    min: int
    max: int | None


@dataclass(frozen=True, slots=True)
class _Anchor:
    """``^`` or ``$`` at ``position``; removed (or rejected) before the tree is returned."""

    kind: str
    position: int


@dataclass(frozen=True, slots=True)
class _Look:
    """A look-ahead ``(?=body)`` (``negative``: ``(?!body)``) at ``position``.  Only
    parsers asked for them make these (JSON Schema patterns, matched against a whole
    string value); the JSON Schema compiler resolves them against the text that
    follows (``strings.pattern_tree``)."""

    negative: bool
    body: object
    position: int


@dataclass(frozen=True, slots=True)
class _Boundary:
    """``\\b`` (``negated``: ``\\B``) at ``position``, made only where look-aheads are
    (JSON Schema patterns): a word character on exactly one side (on both or neither)."""

    negated: bool
    position: int


@dataclass(frozen=True, eq=False, slots=True)
class Automaton:
    """A language given directly as a :class:`~constrain.automata.byte_dfa.ByteDFA`.

    Lets compilers that combine languages with automaton operations (intersection,
    difference: JSON Schema's ``allOf``/``oneOf``/``not``) embed the result in a
    larger tree without going back to regex syntax.
    """

    dfa: object


@dataclass(frozen=True, eq=False, slots=True)
class Graph:
    """A small automaton whose edges are labelled by sub-trees.

    ``edges`` are ``(source, node, target)`` over states ``0..num_states-1``; the
    language is every path from ``start`` to a state in ``finals``.  Used where a
    tree would have to repeat a sub-tree in several places (JSON objects with
    optional members: "nothing emitted yet" and "something emitted" states), which
    a DAG of trees would expand exponentially when wired into an NFA.
    """

    num_states: int
    start: int
    finals: tuple[int, ...]
    edges: tuple[tuple[int, "RegexNode", int], ...]


RegexNode = Union[CharSet, Concat, Alt, Repeat, Automaton, Graph]
EMPTY = Concat(())


def normalize_ranges(ranges) -> Ranges:
    """Sort and merge overlapping or adjacent inclusive ranges."""
    merged: list[list[int]] = []
    for lo, hi in sorted(ranges):
        if merged and lo <= merged[-1][1] + 1:
            merged[-1][1] = max(merged[-1][1], hi)
        else:
            merged.append([lo, hi])
    return tuple((lo, hi) for lo, hi in merged)


def complement_ranges(ranges: Ranges) -> Ranges:
    """All code points not in ``ranges``."""
    out = []
    nxt = 0
    for lo, hi in ranges:
        if lo > nxt:
            out.append((nxt, lo - 1))
        nxt = hi + 1
    if nxt <= MAX_CODEPOINT:
        out.append((nxt, MAX_CODEPOINT))
    return tuple(out)


# ECMA-262 character class escapes (22.2.2.9): ASCII \d and \w, Unicode-aware \s.
_DIGIT: Ranges = ((0x30, 0x39),)
_WORD: Ranges = normalize_ranges([(0x30, 0x39), (0x41, 0x5A), (0x5F, 0x5F), (0x61, 0x7A)])
_SPACE: Ranges = normalize_ranges(
    [(0x09, 0x0D), (0x20, 0x20), (0xA0, 0xA0), (0x1680, 0x1680), (0x2000, 0x200A),
     (0x2028, 0x2029), (0x202F, 0x202F), (0x205F, 0x205F), (0x3000, 0x3000), (0xFEFF, 0xFEFF)]
)
_LINE_TERMINATORS: Ranges = ((0x0A, 0x0A), (0x0D, 0x0D), (0x2028, 0x2029))
_DOT: Ranges = complement_ranges(_LINE_TERMINATORS)
_CLASS_ESCAPES: dict[str, Ranges] = {
    "d": _DIGIT,
    "D": complement_ranges(_DIGIT),
    "w": _WORD,
    "W": complement_ranges(_WORD),
    "s": _SPACE,
    "S": complement_ranges(_SPACE),
}
_CONTROL_ESCAPES = {"t": 0x09, "n": 0x0A, "v": 0x0B, "f": 0x0C, "r": 0x0D}
_MAX_REPEAT = 100_000
# Characters with no syntax meaning outside a class (']' and '}' alone are literals too,
# but leave them to the general path, which knows Annex B).
_PLAIN_RUN = re.compile(r"[^\\^$.|?*+()\[\]{}]+")


class _Parser:
    """Recursive-descent parser over the pattern text; one instance per parse."""

    def __init__(self, pattern: str, dialect: str, ignore_case: bool, dotall: bool, lookaheads: bool = False) -> None:
        if dialect not in ("ecma", "python"):
            raise ValueError(f"Invalid regex dialect: expected 'ecma' or 'python', got {dialect!r}")
        self.pattern = pattern
        # Whether look-aheads and \b become _Look/_Boundary nodes (the caller resolves them) or errors.
        self.lookaheads = lookaheads
        self.pos = 0
        self.saw_anchor = False
        self.python = dialect == "python"
        # Scoped flags, changed by '(?i)' at the start and by '(?i:...)' groups.
        self.ignore_case = ignore_case
        self.dotall = dotall

    # -- character sets under the current dialect and flags -------------------
    def charset(self, ranges) -> CharSet:
        """A CharSet of ``ranges``, widened to all case variants under ignore-case."""
        if self.ignore_case:
            from .unicode_tables import case_closure

            return CharSet(normalize_ranges(case_closure(tuple(ranges))))
        return CharSet(tuple(ranges))

    def class_escape_ranges(self, letter: str) -> Ranges:
        """``\\d \\D \\w \\W \\s \\S`` in this dialect (ASCII in ECMA, Unicode in Python)."""
        if not self.python:
            return _CLASS_ESCAPES[letter]
        from .unicode_tables import python_class_ranges

        ranges = python_class_ranges(letter.lower())
        return complement_ranges(ranges) if letter.isupper() else ranges

    def property_escape(self, letter: str, start: int) -> Ranges:
        """``\\p{name}`` / ``\\P{name}`` (ECMA-262 with the ``u`` flag, which JSON Schema
        patterns use): the code points of a General_Category value and a few binary
        properties (:func:`.unicode_tables.property_ranges`).  Python's ``re``, whose
        dialect Lark grammars use, has no property escapes."""
        if self.python:
            raise self.error(f"Unicode property escapes '\\{letter}{{...}}' are not in Python's re dialect", start)
        close = self.pattern.find("}", self.pos)
        if self.peek() != "{" or close < 0:
            raise self.error(f"'\\{letter}' must be followed by a property name in braces", start)
        name = self.pattern[self.pos + 1:close]
        from .unicode_tables import UnknownProperty, property_ranges

        try:
            ranges = property_ranges(name)
        except UnknownProperty as err:
            raise self.error(f"Unicode property escape '\\{letter}{{{name}}}' is not supported: {err}", start) from None
        self.pos = close + 1
        return complement_ranges(ranges) if letter == "P" else ranges

    def dot_ranges(self) -> Ranges:
        if self.dotall:
            return ((0, MAX_CODEPOINT),)
        return ((0, 0x09), (0x0B, MAX_CODEPOINT)) if self.python else _DOT

    # -- helpers ---------------------------------------------------------------
    def error(self, message: str, position: int | None = None) -> RegexError:
        return RegexError(message, self.pattern, self.pos if position is None else position)

    def peek(self, offset: int = 0) -> str:
        i = self.pos + offset
        return self.pattern[i] if i < len(self.pattern) else ""

    def take(self) -> str:
        ch = self.peek()
        if not ch:
            raise self.error("unexpected end of pattern")
        self.pos += 1
        return ch

    def starts_with(self, text: str) -> bool:
        return self.pattern.startswith(text, self.pos)

    # -- grammar ---------------------------------------------------------------
    def parse(self):
        node = self.disjunction()
        if self.pos < len(self.pattern):
            # Only an unbalanced ')' can stop the top-level disjunction early.
            raise self.error("unbalanced ')'")
        return node

    def disjunction(self):
        alternatives = [self.alternative()]
        while self.peek() == "|":
            self.pos += 1
            alternatives.append(self.alternative())
        return alternatives[0] if len(alternatives) == 1 else Alt(tuple(alternatives))

    def alternative(self):
        items = []
        while self.peek() and self.peek() not in "|)":
            if not self.literal_run(items):
                items.append(self.term())
        return items[0] if len(items) == 1 else Concat(tuple(items))

    def literal_run(self, items: list) -> bool:
        """Append a run of plain characters at once (the bulk of word alternations).

        The last character of the run is left to :meth:`term` when a quantifier
        follows it, since the quantifier applies to that character alone.
        """
        match = _PLAIN_RUN.match(self.pattern, self.pos)
        if match is None:
            return False
        end = match.end()
        if end < len(self.pattern) and self.pattern[end] in "*+?{":
            end -= 1
        if end <= self.pos:
            return False
        items.extend(self.charset(((ord(c), ord(c)),)) for c in self.pattern[self.pos : end])
        self.pos = end
        return True

    def term(self):
        start = self.pos
        ch = self.peek()
        if ch in "^$":
            self.pos += 1
            if self.quantifier_ahead():
                raise self.error(f"nothing to repeat: '{ch}' cannot be quantified")
            self.saw_anchor = True
            return _Anchor(ch, start)
        atom = self.atom()
        return self.quantified(atom, start)

    def quantifier_ahead(self) -> bool:
        ch = self.peek()
        return ch in ("*", "+", "?") or (ch == "{" and self.brace_quantifier(peek_only=True) is not None)

    def quantified(self, atom, start: int):
        """Apply at most one quantifier (ECMA rejects ``a**`` and ``a{2}{3}``)."""
        ch = self.peek()
        if ch in ("*", "+", "?"):
            self.pos += 1
            bounds = {"*": (0, None), "+": (1, None), "?": (0, 1)}[ch]
        elif ch == "{":
            bounds = self.brace_quantifier()
            if bounds is None:
                return atom  # Annex B: a '{' that starts no quantifier is a literal
        else:
            return atom
        if self.peek() == "?":  # lazy quantifier: same language
            self.pos += 1
        if self.quantifier_ahead():
            raise self.error("nothing to repeat: a quantifier cannot follow a quantifier")
        return Repeat(atom, bounds[0], bounds[1])

    def brace_quantifier(self, peek_only: bool = False):
        """Parse ``{n}``, ``{n,}`` or ``{n,m}`` at the cursor; None when it is not one."""
        text = self.pattern
        i = self.pos + 1
        j = i
        while j < len(text) and text[j].isdigit():
            j += 1
        if j == i:
            return None
        low = int(text[i:j])
        high: int | None = low
        if j < len(text) and text[j] == ",":
            k = j + 1
            while k < len(text) and text[k].isdigit():
                k += 1
            high = int(text[j + 1 : k]) if k > j + 1 else None
            j = k
        if j >= len(text) or text[j] != "}":
            return None
        if peek_only:
            return (low, high)
        if high is not None and high < low:
            raise self.error(f"numbers out of order in quantifier {{{low},{high}}}")
        if max(low, high or 0) > _MAX_REPEAT:
            raise self.error(f"repetition count above {_MAX_REPEAT} is not supported")
        self.pos = j + 1
        return (low, high)

    def atom(self):
        start = self.pos
        ch = self.take()
        if ch == ".":
            return CharSet(self.dot_ranges())
        if ch == "(":
            return self.group(start)
        if ch == "[":
            return self.char_class(start)
        if ch == "\\":
            return self.atom_escape(start)
        if ch in "*+?":
            raise self.error(f"nothing to repeat: '{ch}' has no preceding item", start)
        if ch == "{" and self.brace_quantifier_at(start):
            raise self.error("nothing to repeat: '{' quantifier has no preceding item", start)
        return self.charset(((ord(ch), ord(ch)),))

    def brace_quantifier_at(self, position: int) -> bool:
        saved = self.pos
        self.pos = position
        try:
            return self.brace_quantifier(peek_only=True) is not None
        finally:
            self.pos = saved

    def group(self, start: int):
        if self.starts_with("?"):
            if self.starts_with("?:"):
                self.pos += 2
            elif self.starts_with("?=") or self.starts_with("?!"):
                if not self.lookaheads:
                    raise AssertionNotHere("look-ahead assertions are not supported here (only in regexes and JSON "
                                           "Schema patterns)", self.pattern, start)
                return self.look_ahead(start)
            elif self.starts_with("?<=") or self.starts_with("?<!"):
                raise self.error("look-behind assertions are not supported", start)
            elif self.starts_with("?<") or self.starts_with("?P<"):
                self.pos += 3 if self.starts_with("?P<") else 2
                close = self.pattern.find(">", self.pos)
                name = self.pattern[self.pos : close] if close >= 0 else ""
                if close < 0 or not name or not (name[0].isalpha() or name[0] in "_$"):
                    raise self.error("invalid group name", start)
                self.pos = close + 1
            elif self.starts_with("?P="):
                raise self.error("back-references are not supported", start)
            else:
                return self.flag_group(start)
        node = self.disjunction()
        if self.peek() != ")":
            raise self.error("missing ')' for the group opened here", start)
        self.pos += 1
        return node

    def look_ahead(self, start: int) -> _Look:
        negative = self.starts_with("?!")
        self.pos += 2
        body = self.disjunction()
        if self.peek() != ")":
            raise self.error("missing ')' for the look-ahead opened here", start)
        self.pos += 1
        if self.quantifier_ahead():
            raise self.error("nothing to repeat: a look-ahead cannot be quantified", start)
        self.saw_anchor = True  # an assertion: callers strip or resolve them
        return _Look(negative, body, start)

    def flag_group(self, start: int):
        """``(?is:...)`` scoped flags, or ``(?is)`` flags for the whole pattern at its start."""
        match = re.match(r"\?([a-zA-Z]*)(?:-([a-zA-Z]*))?([:)])", self.pattern[self.pos :])
        if match is None:
            raise self.error("unsupported '(?' group form", start)
        on, off, kind = match.group(1), match.group(2) or "", match.group(3)
        unknown = set(on + off) - set("isu")
        if unknown:
            letters = "".join(sorted(unknown))
            raise self.error(f"regex flag(s) '{letters}' are not supported (only i, s, u)", start)
        self.pos += match.end()
        saved = (self.ignore_case, self.dotall)
        self.ignore_case = ("i" in on or saved[0]) and "i" not in off
        self.dotall = ("s" in on or saved[1]) and "s" not in off
        if kind == ")":
            if start != 0:
                raise self.error("global flags '(?...)' are only allowed at the start of the pattern", start)
            return EMPTY  # flags stay on for the rest of the pattern
        node = self.disjunction()
        if self.peek() != ")":
            raise self.error("missing ')' for the group opened here", start)
        self.pos += 1
        self.ignore_case, self.dotall = saved
        return node

    def atom_escape(self, start: int):
        ch = self.take()
        if ch in _CLASS_ESCAPES:
            return CharSet(self.class_escape_ranges(ch))
        if ch in "pP":
            return self.charset(self.property_escape(ch, start))
        if ch in "bB":
            if not self.lookaheads:
                raise AssertionNotHere(f"word-boundary assertion '\\{ch}' is not supported here (only in regexes and "
                                       f"JSON Schema patterns)", self.pattern, start)
            if self.quantifier_ahead():
                raise self.error(f"nothing to repeat: '\\{ch}' cannot be quantified", start)
            self.saw_anchor = True
            return _Boundary(ch == "B", start)
        if ch.isdigit() and ch != "0":
            raise self.error(f"back-reference '\\{ch}' is not supported", start)
        if ch == "k" and self.peek() == "<":
            raise self.error("named back-reference '\\k<...>' is not supported", start)
        if ch in "AZz":
            # Python-style absolute anchors, a no-op at the ends of a full match.
            self.saw_anchor = True
            return _Anchor("^" if ch == "A" else "$", start)
        cp = self.character_escape(ch, start)
        return self.charset(((cp, cp),))

    def character_escape(self, ch: str, start: int) -> int:
        """Code point of an escape that stands for one character (after the backslash)."""
        if ch in _CONTROL_ESCAPES:
            return _CONTROL_ESCAPES[ch]
        if ch == "0":
            if self.peek().isdigit():
                raise self.error("octal escapes are not supported", start)
            return 0
        if ch == "c":
            letter = self.peek()
            if letter.isascii() and letter.isalpha():
                self.pos += 1
                return ord(letter) % 32
            raise self.error("'\\c' must be followed by an ASCII letter", start)
        if ch == "x":
            return self.hex_digits(2, start)
        if ch == "u":
            return self.unicode_escape(start)
        if ch == "U" and self.python:
            cp = self.hex_digits(8, start)
            if cp > MAX_CODEPOINT:
                raise self.error("'\\U' escape beyond U+10FFFF", start)
            return cp
        if ch.isascii() and ch.isalnum():
            raise self.error(f"unknown escape '\\{ch}'", start)
        return ord(ch)  # identity escape of a syntax or other non-alphanumeric character

    def hex_digits(self, count: int, start: int) -> int:
        digits = self.pattern[self.pos : self.pos + count]
        if len(digits) != count or any(c not in "0123456789abcdefABCDEF" for c in digits):
            raise self.error(f"expected {count} hexadecimal digits", start)
        self.pos += count
        return int(digits, 16)

    def unicode_escape(self, start: int) -> int:
        if self.peek() == "{":
            close = self.pattern.find("}", self.pos)
            digits = self.pattern[self.pos + 1 : close] if close > 0 else ""
            if not digits or any(c not in "0123456789abcdefABCDEF" for c in digits) or int(digits, 16) > MAX_CODEPOINT:
                raise self.error("invalid '\\u{...}' escape", start)
            self.pos = close + 1
            return int(digits, 16)
        cp = self.hex_digits(4, start)
        # A surrogate pair written as two escapes is one code point.
        if 0xD800 <= cp <= 0xDBFF and self.starts_with("\\u"):
            saved = self.pos
            self.pos += 2
            try:
                low = self.hex_digits(4, start)
            except RegexError:
                self.pos = saved
                return cp
            if 0xDC00 <= low <= 0xDFFF:
                return 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00)
            self.pos = saved
        return cp

    def char_class(self, start: int) -> CharSet:
        negate = self.peek() == "^"
        if negate:
            self.pos += 1
        ranges: list[tuple[int, int]] = []
        first = True
        while True:
            if not self.peek():
                raise self.error("missing ']' for the character class opened here", start)
            if self.peek() == "]" and not first:
                self.pos += 1
                break
            if self.peek() == "]" and first:
                # ECMA: '[]' is the empty class and '[^]' is any character.
                self.pos += 1
                break
            first = False
            low = self.class_atom()
            if self.peek() == "-" and self.peek(1) not in ("]", ""):
                dash = self.pos
                self.pos += 1
                high = self.class_atom()
                if isinstance(low, tuple) or isinstance(high, tuple):
                    raise self.error("a class escape like \\d cannot be a range endpoint", dash)
                if high < low:
                    raise self.error("range out of order in character class", dash)
                ranges.append((low, high))
            elif isinstance(low, tuple):
                ranges.extend(low)
            else:
                ranges.append((low, low))
        merged = normalize_ranges(ranges)
        if negate:
            # Under ignore-case a negated class excludes every variant of its members.
            excluded = self.charset(merged).ranges
            return CharSet(complement_ranges(excluded))
        return self.charset(merged) if self.ignore_case else CharSet(merged)

    def class_atom(self):
        """One class member: a code point, or a tuple of ranges for \\d, \\w, \\s..."""
        start = self.pos
        ch = self.take()
        if ch != "\\":
            return ord(ch)
        esc = self.take()
        if esc in _CLASS_ESCAPES:
            return self.class_escape_ranges(esc)
        if esc in "pP":
            return self.property_escape(esc, start)
        if esc == "b":
            return 0x08
        if esc == "-":
            return ord("-")
        if esc.isdigit() and esc != "0":
            raise self.error(f"back-reference '\\{esc}' is not allowed in a class", start)
        return self.character_escape(esc, start)


def _only_empty(node) -> bool:
    """True when the node can only match the empty string (anchors, empty groups)."""
    if isinstance(node, (_Anchor, _Look, _Boundary)):
        return True
    if isinstance(node, (Concat, Alt)):
        return all(_only_empty(item) for item in node.items)
    if isinstance(node, Repeat):
        return node.max == 0 or _only_empty(node.item)
    return False


def _strip_anchors(node, at_start: bool, at_end: bool, parser: _Parser, keep_end: bool = False,
                   after_text: bool = False, before_text: bool = False):
    """Remove ``^``/``$`` where they are no-ops for a full match, reject them elsewhere.

    An anchor that can never hold is the empty language (:data:`NOTHING`): a ``^`` after
    text that always consumes a character (``after_text``: in ``x^y`` or the JavaScript
    literal ``/^a$/``, no input position 0 is left there), a ``$`` before such text
    (``before_text``).  Either holds only at its end of the input, and without the ``m``
    flag there is one input.  An anchor after text that may be empty (``a?^b``) is
    refused.

    ``keep_end`` leaves every ``$`` (and look-ahead) in place for a caller that resolves
    them against the text that follows; ``^`` is still checked (a look-ahead's body
    is at the start where the look-ahead is)."""
    if isinstance(node, _Anchor):
        if node.kind == "$" and keep_end:
            return node
        if (node.kind == "^" and not at_start) or (node.kind == "$" and not at_end):
            if after_text if node.kind == "^" else before_text:
                return NOTHING
            where = "start" if node.kind == "^" else "end"
            raise parser.error(
                f"anchor '{node.kind}' is only supported at the {where} of the pattern", node.position
            )
        return EMPTY
    if isinstance(node, _Look):
        return _Look(node.negative, _strip_anchors(node.body, at_start, False, parser, keep_end, after_text),
                     node.position)
    if isinstance(node, Alt):
        return Alt(tuple(_strip_anchors(i, at_start, at_end, parser, keep_end, after_text, before_text)
                         for i in node.items))
    if isinstance(node, Concat):
        items = node.items
        fewest = [_fewest(item) for item in items]
        total, before = sum(fewest), 0  # the fewest characters of the whole, and of the items before k
        solid = [k for k, item in enumerate(items) if not _only_empty(item)]
        first, last = (solid[0], solid[-1]) if solid else (len(items), -1)  # zero-width items only outside these
        out = []
        for k, item in enumerate(items):
            start_ok = at_start and k <= first
            end_ok = at_end and k >= last
            out.append(_strip_anchors(item, start_ok, end_ok, parser, keep_end, after_text or before > 0,
                                      before_text or total - before - fewest[k] > 0))
            before += fewest[k]
        return Concat(tuple(out))
    if isinstance(node, Repeat):
        once = node.max is not None and node.max <= 1
        if at_start and not once and not after_text and _fewest(node.item) > 0 and _holds_start(node.item):
            return _first_apart(node, parser, keep_end, before_text)
        return Repeat(_strip_anchors(node.item, at_start and once, at_end and once, parser, keep_end, after_text,
                                     before_text), node.min, node.max)
    return node


def _first_apart(node: Repeat, parser: _Parser, keep_end: bool, before_text: bool):
    """A repetition at the start whose item holds a ``^`` and always consumes a character:
    its first copy is at the start (the ``^`` holds there), and every later one after text
    (there it never does): ``(?:^a|x)*`` is ``(?:a|x)(?:x)*`` or nothing."""
    first = _strip_anchors(node.item, True, False, parser, keep_end, False, before_text or node.min >= 2)
    later = _strip_anchors(node.item, False, False, parser, keep_end, True, before_text)
    most = None if node.max is None else node.max - 1
    copies = Concat((first, Repeat(later, max(node.min - 1, 0), most)))
    return copies if node.min > 0 else Alt((EMPTY, copies))


def _holds_start(node) -> bool:
    """Whether a ``^`` stands in ``node`` (look-ahead bodies included)."""
    if isinstance(node, _Anchor):
        return node.kind == "^"
    if isinstance(node, (Concat, Alt)):
        return any(_holds_start(item) for item in node.items)
    if isinstance(node, Repeat):
        return _holds_start(node.item)
    if isinstance(node, _Look):
        return _holds_start(node.body)
    return False


#: The empty language: an alternation with no branch.
NOTHING = Alt(())


def _fewest(node) -> int:
    """The fewest characters a string of ``node`` has (assertions and anchors: none)."""
    if isinstance(node, CharSet):
        return 1
    if isinstance(node, Concat):
        return sum(_fewest(item) for item in node.items)
    if isinstance(node, Alt):
        return min((_fewest(item) for item in node.items), default=0)
    if isinstance(node, Repeat):
        return node.min * _fewest(node.item)
    return 0


def parse_regex(pattern: str, *, dialect: str = "ecma", ignore_case: bool = False, dotall: bool = False) -> RegexNode:
    """Parse a regular expression into a tree matching whole strings.

    Parameters
    ----------
    pattern:
        The regex text.  ``^``/``$`` at the ends are accepted and ignored (the
        pattern always matches the whole output).
    dialect:
        ``"ecma"`` (ECMA-262, as JSON Schema requires: ASCII ``\\d \\w``, ``.``
        excludes the four line terminators) or ``"python"`` (Python's ``re`` on str
        patterns, as Lark grammars use: Unicode ``\\d \\w \\s``, ``.`` excludes only
        ``\\n``).  Both accept ``(?i)``/``(?s)`` flags at the start and scoped
        ``(?i:...)`` groups.
    ignore_case, dotall:
        Flags for the whole pattern (Python's ``re.I`` and ``re.S``).

    Raises
    ------
    RegexError
        For malformed syntax and for constructs that are not regular (look-arounds,
        back-references, word boundaries), naming the construct and its position.
    """
    if not isinstance(pattern, str):
        raise TypeError(f"Invalid regex: expected str, got {type(pattern).__name__}")
    parser = _Parser(pattern, dialect, ignore_case, dotall)
    tree = parser.parse()
    return _strip_anchors(tree, True, True, parser) if parser.saw_anchor else tree
