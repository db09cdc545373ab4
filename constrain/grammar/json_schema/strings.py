"""JSON strings: the encoded form of character languages, lengths, patterns and formats.

A schema constrains the *decoded* string; the model writes the *encoded* one.
:func:`encode_chars` maps a tree over code points to the tree of their JSON
encodings, exactly as ``json.dumps(..., ensure_ascii=False)`` writes them: ``"``
and ``\\`` escaped, control characters as ``\\n``-style short escapes or
``\\u00XX`` (lower-case hex), everything else literal.  Other spellings of the same
string (``\\u0041`` for ``A``, ``\\/``) are outside the compiled language, so each
string has one text and a token mask never has to reason about equivalent forms.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from ...automata.byte_dfa import MAX_DFA_STATES, ByteDFA, build_byte_dfa
from ...automata.dfa_ops import intersect
from ...automata.pushdown import CountedCallee
from ...errors import RegexError
from ..regex import Alt, Automaton, CharSet, Concat, Graph, Repeat, RegexNode, _Anchor, _Parser, _strip_anchors, normalize_ranges
from .formats import FORMATS
from .trees import EMPTY, NOTHING, alt, lit, rep, seq, star

__all__ = ["encode_chars", "string_tree", "encoded_string", "ANY_CHAR", "pattern_tree", "format_dfa", "any_string_dfa",
           "counted_dfa", "length_range", "counted_string_dfa", "counted_string_callee", "counted_states", "LONG_STRING",
           "SHORT_STRING", "MAX_SHORT_COUNTS"]

#: Strings whose length bounds are this far apart are counted callees outside products
#: (:func:`counted_string_callee`): an eager count costs ~14 states per character.
LONG_STRING = 512
#: Closer bounds, from this far apart, are placeholders too, inlined once the schema's DFA
#: is built (:func:`~constrain.automata.pushdown.inline_calls`): no subset construction
#: runs over their copies.  At most :data:`MAX_SHORT_COUNTS` such bounds per schema.
SHORT_STRING = 64
MAX_SHORT_COUNTS = 6
#: ...unless ``minLength`` itself is larger than this (the copies before the loop stay eager).
MAX_COUNTED_LOW = 4096

ANY_CHAR: RegexNode = CharSet(((0, 0xD7FF), (0xE000, 0x10FFFF)))
_SHORT_ESCAPES = {0x22: '\\"', 0x5C: "\\\\", 0x08: "\\b", 0x0C: "\\f", 0x0A: "\\n", 0x0D: "\\r", 0x09: "\\t"}
_SPECIAL = tuple(range(0x20)) + (0x22, 0x5C)


def _escape(code: int) -> str:
    return _SHORT_ESCAPES.get(code) or f"\\u{code:04x}"


@lru_cache(maxsize=4096)
def _encode_charset(ranges: tuple[tuple[int, int], ...]) -> RegexNode:
    """One character of ``ranges``, encoded: plain bytes, then the escapes grouped by prefix.

    Grouping keeps the tree small (``\\`` once, then a class of short-escape
    letters; ``\\u00`` once, then one class per leading hex digit), which matters
    when the character is repeated ``maxLength`` times.
    """
    plain: list[tuple[int, int]] = []
    specials: list[int] = []
    for lo, hi in ranges:
        start = lo
        for code in _SPECIAL:
            if lo <= code <= hi:
                if start < code:
                    plain.append((start, code - 1))
                specials.append(code)
                start = code + 1
        if start <= hi:
            plain.append((start, hi))
    letters = sorted({_escape(c)[1] for c in specials if c in _SHORT_ESCAPES})
    by_high: dict[str, list[str]] = {}
    for code in specials:
        if code not in _SHORT_ESCAPES:
            text = _escape(code)
            by_high.setdefault(text[4], []).append(text[5])
    escapes = []
    if letters:
        escapes.append(seq(lit("\\"), CharSet(tuple((ord(c), ord(c)) for c in letters))))
    if by_high:
        escapes.append(seq(lit("\\u00"), alt(*(seq(lit(high), CharSet(normalize_ranges((ord(c), ord(c)) for c in lows)))
                                               for high, lows in sorted(by_high.items())))))
    parts = ([CharSet(tuple(plain))] if plain else []) + escapes
    return alt(*parts)


def encode_chars(node: RegexNode) -> RegexNode:
    """The tree of the JSON-encoded forms of the strings of ``node`` (a code-point tree)."""
    if isinstance(node, CharSet):
        return _encode_charset(node.ranges)
    if isinstance(node, Concat):
        return Concat(tuple(encode_chars(item) for item in node.items))
    if isinstance(node, Alt):
        return Alt(tuple(encode_chars(item) for item in node.items))
    if isinstance(node, Repeat):
        return Repeat(encode_chars(node.item), node.min, node.max)
    if isinstance(node, Graph):
        return Graph(node.num_states, node.start, node.finals,
                     tuple((a, encode_chars(item), b) for a, item, b in node.edges))
    raise TypeError(f"cannot encode {type(node).__name__}")  # Automaton: already bytes


def encoded_string(text: str) -> str:
    """``json.dumps(text, ensure_ascii=False)``."""
    return '"' + "".join(_escape(ord(c)) if ord(c) in _SHORT_ESCAPES or ord(c) < 0x20 else c for c in text) + '"'


@lru_cache(maxsize=1024)
def pattern_tree(pattern: str) -> RegexNode:
    """Code-point tree of the strings that *contain* a match of ``pattern`` (ECMA-262).

    JSON Schema patterns are not anchored: ``"a"`` matches ``"cat"``.  Each
    top-level alternative gets ``[\\s\\S]*`` on the sides where it has no ``^``/``$``.
    """
    parser = _Parser(pattern, "ecma", False, False)
    tree = parser.parse()
    branches = tree.items if isinstance(tree, Alt) else (tree,)
    out = []
    for branch in branches:
        items = branch.items if isinstance(branch, Concat) else (branch,)
        starts = bool(items) and isinstance(items[0], _Anchor) and items[0].kind == "^"
        ends = bool(items) and isinstance(items[-1], _Anchor) and items[-1].kind == "$"
        body = _strip_anchors(branch, True, True, parser)
        out.append(seq(EMPTY if starts else star(ANY_CHAR), body, EMPTY if ends else star(ANY_CHAR)))
    return alt(*out)


def string_tree(min_length: int, max_length: int | None, patterns: list[str], formats: list[str]) -> RegexNode:
    """The encoded JSON string (quotes included) meeting every constraint; NOTHING if none can.

    Length bounds become a counting automaton built directly (:func:`counted_dfa`),
    and are dropped where every pattern or format already implies them
    (``^[0-9a-f]{24}$`` with ``maxLength: 255``): the product would only cost time.
    """
    if max_length is not None and min_length > max_length:
        return NOTHING
    trees = [pattern_tree(p) for p in patterns]
    encoded = [encode_chars(tree) for tree in trees] + [Automaton(format_dfa(name)) for name in formats]
    if (min_length or max_length is not None) and not _bounds_implied(trees, formats, min_length, max_length):
        encoded.insert(0, Automaton(counted_dfa(_encoded_char_dfa(), min_length, max_length)))
    if not encoded:
        return seq(lit('"'), encode_chars(star(ANY_CHAR)), lit('"'))
    if len(encoded) == 1:
        return seq(lit('"'), encoded[0], lit('"'))
    dfa = _as_dfa(encoded[0])
    for part in encoded[1:]:
        dfa = intersect(dfa, _as_dfa(part))
        if dfa is None:
            return NOTHING
    return seq(lit('"'), Automaton(dfa), lit('"'))


def _bounds_implied(trees: list[RegexNode], formats: list[str], min_length: int, max_length: int | None) -> bool:
    """Whether some pattern (or format) alone keeps every string within [min_length, max_length]."""
    for tree in trees + [FORMATS[name] for name in formats]:
        low, high = length_range(tree)
        if low >= min_length and (max_length is None or (high is not None and high <= max_length)):
            return True
    return False


def length_range(node: RegexNode) -> tuple[int, int | None]:
    """(fewest, most) code points in a string of a code-point tree; most is None when unbounded.

    A sound over-approximation: an alternative that can never match still counts.
    Embedded automata are over bytes, so they count as "unknown" (0, None).
    """
    if isinstance(node, CharSet):
        return (1, 1) if node.ranges else (0, 0)
    if isinstance(node, (Concat, Alt)):
        ranges = [length_range(item) for item in node.items]
        if not ranges:
            return (0, 0) if isinstance(node, Concat) else (0, None)
        highs = [high for _, high in ranges]
        if isinstance(node, Concat):
            return sum(low for low, _ in ranges), None if None in highs else sum(highs)
        return min(low for low, _ in ranges), None if None in highs else max(highs)
    if isinstance(node, Repeat):
        low, high = length_range(node.item)
        if node.max is None:
            return low * node.min, None if high != 0 else 0
        return low * node.min, None if high is None else high * node.max
    if isinstance(node, _Anchor):
        return (0, 0)
    return (0, None)


@lru_cache(maxsize=None)
def _encoded_char_dfa() -> ByteDFA:
    """One character, JSON-encoded: the unit that ``minLength``/``maxLength`` count."""
    return build_byte_dfa(encode_chars(ANY_CHAR))


@lru_cache(maxsize=256)
def counted_dfa(unit: ByteDFA, low: int, high: int | None) -> ByteDFA:
    """Minimal DFA of ``unit{low,high}`` for a prefix-free ``unit`` (one encoded character).

    Built directly as ``high + 1`` copies of the unit's non-final states (copy k:
    k units read so far), a unit's last byte leading into the next copy, instead of
    subset construction and minimisation, which grow faster than linearly with the
    count (``maxLength: 3000`` took 50 s).  Unbounded counts loop on copy ``low``.

    Raises
    ------
    RegexError
        When the automaton would have more than ``MAX_DFA_STATES`` states.
    """
    inner = np.flatnonzero(~unit.accepting)  # every state but the unit's ends
    assert not unit.accepting[unit.start] and (unit.trans[unit.accepting] < 0).all(), "unit must be prefix-free"
    loops = high is None
    copies = (low if loops else high) + 1
    width = inner.size
    if (copies - 1) * width + 1 > MAX_DFA_STATES:
        raise RegexError(f"counting {copies - 1:,} characters takes {(copies - 1) * width + 1:,}", "", 0)
    template = _unit_template(unit)
    if loops and low == 0:  # one copy, whose finished units lead back to its start
        template[template == width] = 0
    trans = np.repeat(template[None], copies, axis=0)
    trans += (np.arange(copies, dtype=np.int32) * np.int32(width))[:, None, None] * (template >= 0)[None]
    trans = trans.reshape(copies * width, 256)
    if not loops or copies > 1:  # the last copy's inner states are unreachable: keep only its start
        trans = trans[: (copies - 1) * width + 1]
        # maxLength: the last start reads nothing more; minLength with no maximum: it
        # reads another unit like the copy before it (whose finished units lead back here).
        trans[-1] = -1 if not loops else trans[(copies - 2) * width]
    accepting = np.zeros(trans.shape[0], dtype=bool)
    accepting[np.arange(low, copies) * width] = True
    return ByteDFA(np.ascontiguousarray(trans, dtype=np.int32), accepting, 0)


def counted_states(high: int) -> int:
    """States of the eager count of up to ``high`` characters (:func:`counted_dfa`)."""
    return high * int((~_encoded_char_dfa().accepting).sum()) + 1


@lru_cache(maxsize=64)
def counted_string_dfa(low: int, high: int) -> ByteDFA:
    """The encoded string (quotes included) of ``low`` to ``high`` characters, as one eager DFA
    (what a product's operand needs instead of a counted callee); raises RegexError past
    ``MAX_DFA_STATES``."""
    return build_byte_dfa(seq(lit('"'), Automaton(counted_dfa(_encoded_char_dfa(), low, high)), lit('"')))


@lru_cache(maxsize=64)
def counted_string_callee(low: int, high: int, margin: int) -> CountedCallee:
    """The encoded string of ``low`` to ``high`` characters as a callee whose middle loop counts.

    States: the opening quote; ``low`` eager copies of one character (the
    :func:`counted_dfa` template); one copy that loops while the count (kept by
    :class:`~constrain.automata.pushdown.PushdownDFA`) is below ``high - margin``;
    ``margin`` eager copies up to the bound; its last start; the closing quote.
    Every copy from ``low`` on may close the string.  About ``14 * (low + margin)``
    states whatever ``high`` is.  With no room for a loop (``high - margin <= low``), the
    eager :func:`counted_string_dfa`.
    """
    if high - margin <= low:
        return CountedCallee(counted_string_dfa(low, high), 0, 0, 0, low, high, 0, margin)
    template = _unit_template(_encoded_char_dfa())
    width = template.shape[0]
    loop = low  # copies 0..low-1 count up to the loop; low + 1.. are the margin's
    copies = low + 1 + margin
    bases = 1 + np.arange(copies, dtype=np.int32) * width
    following = bases + width  # where a finished character goes: the next copy's start...
    following[loop] = bases[loop]  # ...but the loop returns to its own
    last, close = 1 + copies * width, 2 + copies * width
    trans = np.where(template[None] < 0, -1,
                     np.where(template[None] == width, following[:, None, None], template[None] + bases[:, None, None]))
    trans = np.concatenate([np.full((1, 256), -1, np.int32), trans.reshape(copies * width, 256).astype(np.int32),
                            np.full((2, 256), -1, np.int32)])
    trans[0, ord('"')] = 1
    trans[np.append(bases[low:], last), ord('"')] = close
    accepting = np.zeros(trans.shape[0], dtype=bool)
    accepting[close] = True
    start = int(bases[loop])
    return CountedCallee(ByteDFA(np.ascontiguousarray(trans), accepting, 0), start, start + width, start,
                         low, high - margin, start + width, margin)


def _unit_template(unit: ByteDFA) -> np.ndarray:
    """One copy of a prefix-free unit's rows: its inner states by position (the unit's
    start at 0), a finished unit as ``width`` (the next copy's start), so copy k is the
    template plus ``k * width`` and its finished units lead into copy k + 1."""
    inner = np.flatnonzero(~unit.accepting)
    order = np.concatenate([[unit.start], inner[inner != unit.start]])
    local = np.full(unit.num_states, -1, dtype=np.int32)
    local[order] = np.arange(inner.size, dtype=np.int32)
    local[unit.accepting] = inner.size
    rows = unit.trans[order]
    return np.where(rows >= 0, local[np.maximum(rows, 0)], -1).astype(np.int32)


def _as_dfa(node: RegexNode):
    return node.dfa if isinstance(node, Automaton) else build_byte_dfa(node)


@lru_cache(maxsize=None)
def format_dfa(name: str):
    """The encoded-string DFA of a format (built once per process: ``uri`` alone takes ~0.2 s)."""
    return build_byte_dfa(encode_chars(FORMATS[name]))


@lru_cache(maxsize=None)
def any_string_dfa():
    """``"..."`` with any content, as a DFA (keys of free-form members)."""
    return build_byte_dfa(seq(lit('"'), encode_chars(star(ANY_CHAR)), lit('"')))

