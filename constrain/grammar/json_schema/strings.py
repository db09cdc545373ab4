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

import json
import re
from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np

from ...automata._dfa_kernels import counted_copies, gather_rows, steps_to_end, unit_pairs
from ...automata.byte_dfa import MAX_DFA_STATES, ByteDFA, _kernel_arrays, _live_states, build_byte_dfa
from ...automata.dfa_ops import assert_ahead, difference, intersect
from ...automata.pushdown import CountedCallee, call_marker
from ...errors import EmptyLanguageError, RegexError
from ..regex import (Alt, Automaton, CharSet, Concat, Graph, Repeat, RegexNode, _WORD, _Anchor, _Boundary, _Look, _Parser,
                     _only_empty, _strip_anchors, normalize_ranges)
from .formats import FORMATS
from .trees import EMPTY, NOTHING, alt, lit, seq, star

__all__ = ["encode_chars", "string_tree", "encoded_string", "ANY_CHAR", "pattern_tree", "format_dfa", "any_string_dfa",
           "counted_dfa", "length_range", "whole_match_dfa", "counted_string_dfa", "counted_string_callee", "CountedString", "counted_states", "LONG_STRING",
           "SHORT_STRING", "MAX_SHORT_COUNTS", "PATTERN_COUNT", "COUNT_MARGIN", "callee_margin", "bounds_implied"]

#: Strings whose length bounds are this far apart are counted callees outside products
#: (:func:`counted_string_callee`): an eager count costs ~14 states per character.
LONG_STRING = 512
#: Closer bounds, from this far apart, are placeholders too, inlined once the schema's DFA
#: is built (:func:`~constrain.automata.pushdown.inline_calls`): no subset construction
#: runs over their copies.  At most :data:`MAX_SHORT_COUNTS` such bounds per schema.
SHORT_STRING = 64
MAX_SHORT_COUNTS = 6
#: Strings with patterns or formats are counted callees from this far apart (they are never
#: inlined: a pattern's eager count costs its states per character, and a product to build).
#: Closer, the loop could not span the longest token beside the copies after it
#: (:func:`callee_margin`).
PATTERN_COUNT = 150
#: The longest token (bytes) a schema's counted callees are chosen for: Llama-3's, Qwen2.5's
#: and GPT-2's (Llama-2's is 27).  A counted loop must span it; a tokenizer with longer tokens
#: gets a SchemaError naming the string when its masks are built, if the callee is then too large.
LONGEST_TOKEN = 128
#: How many bytes of a token the copies after a counted loop are sized for.  Longer tokens
#: (1,312 of Llama-3's) are checked against the count near the loop's exit instead
#: (:mod:`constrain.automata.counted_loops`): sizing the copies for 128 bytes made them most of
#: a counted callee's states.
COUNT_MARGIN = 16
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


@dataclass(frozen=True, eq=False)
class Filtered:
    """The strings of ``body`` that are (``keep``) or are not in ``test``, both trees of
    code points: what a look-ahead, or a ``$`` before a pattern's end, leaves of the text
    that follows it (:func:`pattern_tree`).  It becomes a product of two automata when
    its characters are given bytes (:func:`encode_chars`, :func:`utf8_chars`), since
    either encoding maps each character on its own and so commutes with products."""

    body: RegexNode
    test: RegexNode
    keep: bool


@dataclass(frozen=True, eq=False)
class Asserted:
    """``body`` followed by ``rest``, where ``body`` holds marker bytes standing for
    assertions that each copy of a repetition makes about the text after it (which
    includes the later copies): ``tests`` are (marker, the tree of what the rest must
    or must not start with, must, whether "must" turns round after a word character).
    A body with word boundaries starts where the string does, and ``behind`` is then
    the tree of texts that end with a word character.  Built by
    :func:`~constrain.automata.dfa_ops.assert_ahead` once the characters get bytes."""

    body: RegexNode
    rest: RegexNode
    tests: tuple[tuple[int, RegexNode, bool, bool], ...]
    behind: RegexNode | None = None


def encode_chars(node: RegexNode) -> RegexNode:
    """The tree of the JSON-encoded forms of the strings of ``node`` (a code-point tree).

    An :class:`Automaton` inside it is bytes already (encoded before, or a call or a
    mark, which are no characters) and is kept as it is: escaping maps each character
    on its own, so what stands between the characters needs nothing.
    """
    return _with_bytes(node, _encode_charset_node)


def utf8_chars(node: RegexNode) -> RegexNode:
    """``node`` over raw UTF-8 (a pattern searched in a string's value, not its JSON text)."""
    return _with_bytes(node, None)


def _encode_charset_node(node: CharSet) -> RegexNode:
    return _encode_charset(node.ranges)


def _with_bytes(node: RegexNode, chars) -> RegexNode:
    """``node`` with each :class:`CharSet` given bytes by ``chars`` (None: UTF-8, which
    the DFA builder does itself) and each :class:`Filtered` built as a product."""
    if isinstance(node, Automaton):
        return node
    if isinstance(node, CharSet):
        return node if chars is None else chars(node)
    if isinstance(node, Filtered):
        return _filtered_bytes(_with_bytes(node.body, chars), _with_bytes(node.test, chars), node.keep)
    if isinstance(node, Asserted):
        main = _dfa_or_none(seq(_with_bytes(node.body, chars), _with_bytes(node.rest, chars)))
        if main is None:
            return NOTHING
        tests = {marker: (_dfa_or_none(_with_bytes(test, chars)) or _NO_TEXT, keep, flips)
                 for marker, test, keep, flips in node.tests}
        behind = build_byte_dfa(_with_bytes(node.behind, chars)) if node.behind is not None else None
        out = assert_ahead(main, tests, behind)
        return NOTHING if out is None else Automaton(out)
    if isinstance(node, Concat):
        return Concat(tuple(_with_bytes(item, chars) for item in node.items))
    if isinstance(node, Alt):
        return Alt(tuple(_with_bytes(item, chars) for item in node.items))
    if isinstance(node, Repeat):
        return Repeat(_with_bytes(node.item, chars), node.min, node.max)
    if isinstance(node, Graph):
        return Graph(node.num_states, node.start, node.finals,
                     tuple((a, _with_bytes(item, chars), b) for a, item, b in node.edges))
    raise TypeError(f"cannot encode {type(node).__name__}")


def _filtered_bytes(body: RegexNode, test: RegexNode, keep: bool) -> RegexNode:
    if body is NOTHING or (keep and test is NOTHING):
        return NOTHING
    if test is NOTHING:
        return body
    body_dfa = _dfa_or_none(body)
    if body_dfa is None:
        return NOTHING
    test_dfa = _dfa_or_none(test)
    if test_dfa is None:
        return NOTHING if keep else Automaton(body_dfa)
    out = intersect(body_dfa, test_dfa) if keep else difference(body_dfa, test_dfa)
    return NOTHING if out is None else Automaton(out)


#: The automaton of no text (one state, no move, not accepting): the test of a look-ahead
#: whose body nothing matches, for :func:`~constrain.automata.dfa_ops.assert_ahead`,
#: which reads a test's moves and accepting states only.
_NO_TEXT = ByteDFA(np.full((1, 256), -1, dtype=np.int32), np.zeros(1, dtype=bool), 0)


def _dfa_or_none(node: RegexNode) -> ByteDFA | None:
    """``node``'s automaton, or None where no text matches it.  Parts of a pattern may
    match nothing (``a(?=b)c``) while the pattern still matches something
    (``x|a(?=b)c(?=d)``), so only the whole pattern's emptiness is its caller's to judge."""
    if node is NOTHING:
        return None
    try:
        return build_byte_dfa(node)
    except EmptyLanguageError:
        return None


def encoded_string(text: str) -> str:
    """``json.dumps(text, ensure_ascii=False)``: the spelling the string grammar writes
    (:data:`_SHORT_ESCAPES`, ``\\u00XX`` for other controls), which keys and literals must match.

    Called with the encoder ``json.dumps`` itself ends in for a string: ``dumps`` with a
    keyword argument builds a new ``JSONEncoder`` per call (1.8 against 0.16 µs; a median
    schema's compile makes about 17 of these calls)."""
    return _encode_basestring(text)


_encode_basestring = json.encoder.encode_basestring


@lru_cache(maxsize=1024)
def pattern_tree(pattern: str) -> RegexNode:
    """Code-point tree of the strings that *contain* a match of ``pattern`` (ECMA-262).

    JSON Schema patterns are not anchored: ``"a"`` matches ``"cat"``.  Each
    top-level alternative gets ``[\\s\\S]*`` on the sides where it has no ``^``/``$``.
    Alternatives anchored alike share those sides: ``Σ*(w1|...|wk)Σ*``, not
    ``Σ*w1Σ*|...|Σ*wkΣ*``, whose subset construction tracks which words have been
    seen (2**k states before minimisation: eighteen unanchored words as a
    ``patternProperties`` key passed the state limit).

    Look-aheads, and ``$`` before the end of an alternative, are assertions on the
    text that follows them: an alternative that has them is built from its end
    backwards (:func:`_followed_by`), each assertion filtering what follows it.  The
    tree then holds :class:`Filtered` nodes, which the encoders build as products, and
    for assertions inside long repetitions :class:`Asserted` ones.  A word boundary
    looks behind too, so an alternative with one is a single :class:`Asserted` node
    from the string's start, which also tracks whether the text so far ends in a word
    character.
    """
    parser = _Parser(pattern, "ecma", False, False, lookaheads=True)
    tree = parser.parse()
    by_anchors: dict[tuple[bool, bool], list[RegexNode]] = {}
    for branch in _anchor_branches(tree.items if isinstance(tree, Alt) else (tree,)):
        items = _flat(branch)
        branch = Concat(items)
        # Anchored where a '^' stands among the zero-width items it begins with (after
        # ``(?!a)`` or ``()`` too), and only there: any other '^' is refused below.
        starts = _anchored_end(items, "^")
        ends = _anchored_end(items[::-1], "$")
        if _has_boundary(branch):  # an assertion on both sides: the whole branch, from the string's start
            body = seq(EMPTY if starts else _ANY_STRING, _strip_anchors(branch, starts, True, parser, keep_end=True))
            tests: list[tuple[int, RegexNode, bool, bool]] = []
            marked = _with_markers(body, tests, parser)
            by_anchors.setdefault((True, True), []).append(Asserted(marked, _ANY_STRING, tuple(tests), _ENDS_IN_WORD))
        elif _asserts_ahead(branch):
            body = _strip_anchors(branch, starts, True, parser, keep_end=True)
            by_anchors.setdefault((starts, True), []).append(_followed_by(body, _ANY_STRING, parser))
        else:
            by_anchors.setdefault((starts, ends), []).append(_strip_anchors(branch, starts, ends, parser))
    return alt(*(seq(EMPTY if starts else _ANY_STRING, alt(*bodies), EMPTY if ends else _ANY_STRING)
                 for (starts, ends), bodies in by_anchors.items()))


def whole_match_dfa(pattern: str) -> ByteDFA:
    """The byte automaton of the strings that match all of ``pattern`` (ECMA-262), whose
    look-aheads and word boundaries :func:`pattern_tree` builds: the pattern is searched
    anchored at both ends, ``^(?:pattern)$``.  ``Compiler.compile_regex`` takes this path
    for the patterns the plain parser refuses for their assertions.

    The pattern is parsed alone first, so that a syntax error is its own (``(?=b)a)(?:c``
    would read as a valid group once wrapped), and errors point into it, not the wrapping."""
    _Parser(pattern, "ecma", False, False, lookaheads=True).parse()
    flags = _GLOBAL_FLAGS.match(pattern)  # they must stay first: a scoped group's flags instead
    opening = f"^(?{flags.group(1)}:" if flags else "^(?:"
    rest = pattern[flags.end():] if flags else pattern
    try:
        return build_byte_dfa(utf8_chars(pattern_tree(f"{opening}{rest})$")), pattern)
    except EmptyLanguageError:
        raise EmptyLanguageError(pattern) from None
    except RegexError as err:
        shift = len(opening) - (len(pattern) - len(rest))
        raise RegexError(err.reason, pattern, max(0, min(err.position - shift, len(pattern)))) from None


_GLOBAL_FLAGS = re.compile(r"\(\?([a-zA-Z]*(?:-[a-zA-Z]*)?)\)")


_ANY_STRING = star(ANY_CHAR)
#: A look-ahead inside a repetition is resolved by unrolling it, up to this many times;
#: beyond, the repetition is built with markers (:class:`Asserted`).
MAX_UNROLLED_LOOKS = 16
#: The bytes that stand for assertions inside an :class:`Asserted` repetition: none of them
#: occurs in UTF-8 (they are call symbols elsewhere, never inside a pattern's automaton).
_ASSERTION_MARKERS = tuple(range(0xF5, 0x100))


_WORD_CHAR = CharSet(_WORD)
#: What a word boundary checks behind it and ahead of it.
_ENDS_IN_WORD = seq(_ANY_STRING, _WORD_CHAR)
_STARTS_WITH_WORD = seq(_WORD_CHAR, _ANY_STRING)


def _holds(node, wanted) -> bool:
    """Whether ``node`` or anything inside it is ``wanted`` (a predicate on nodes);
    a look-ahead's body counts as inside it."""
    return _first(node, wanted) is not None


def _first(node, wanted):
    """The first of ``node`` and what is inside it (look-ahead bodies too) that is
    ``wanted``, else None."""
    if wanted(node):
        return node
    inner = node.items if isinstance(node, (Concat, Alt)) else (node.item,) if isinstance(node, Repeat) else (
        (node.body,) if isinstance(node, _Look) else ())
    return next((found for item in inner if (found := _first(item, wanted)) is not None), None)


def _is_assertion(node) -> bool:
    """A ``$``, a look-ahead or a word boundary (``^`` is checked by the stripping)."""
    return isinstance(node, (_Look, _Boundary)) or (isinstance(node, _Anchor) and node.kind == "$")


#: A top-level alternative is split over a group of alternatives with anchors into at most this many.
MAX_ANCHOR_BRANCHES = 32


def _flat(node) -> tuple:
    """The items of ``node`` as one concatenation (groups in a sequence spliced in)."""
    if isinstance(node, Concat):
        return tuple(item for inner in node.items for item in _flat(inner))
    return (node,)


def _anchored_end(items: tuple, kind: str) -> bool:
    """Whether an anchor ``kind`` stands among the zero-width items ``items`` begins with."""
    return _leading(items, lambda item: isinstance(item, _Anchor) and item.kind == kind) is not None


def _leading(items: tuple, wanted) -> int | None:
    """The index of the first item ``wanted`` among the zero-width items ``items`` begins
    with and the item after them, else None."""
    for index, item in enumerate(items):
        if wanted(item):
            return index
        if not _only_empty(item):
            return None
    return None


def _anchor_branches(branches) -> list:
    """``branches`` with each group of alternatives that holds an anchor at the start of
    a branch (``(?:^|x)a``) or at its end (``a(?:$|x)``) distributed into branches of
    their own (``^a|xa``), at most :data:`MAX_ANCHOR_BRANCHES`.  Whether a branch is
    anchored is then read from its ends; a group left over refuses its anchor (the
    stripping says where).  Before, the branch was not anchored and its anchor was
    dropped: ``(?:^|x)a`` matched ``"ba"``."""
    out, todo = [], list(branches)
    while todo:
        branch = todo.pop()
        items = _flat(branch)
        found = _anchor_group(items, "^") if not _anchored_end(items, "^") else None
        if found is None and not _anchored_end(items[::-1], "$"):
            found = _anchor_group(items[::-1], "$")
            found = None if found is None else (len(items) - 1 - found[0], found[1])
        if found is None or len(out) + len(todo) + len(found[1].items) > MAX_ANCHOR_BRANCHES:
            out.append(branch)
            continue
        index, group = found
        todo.extend(Concat(items[:index] + (choice,) + items[index + 1:]) for choice in group.items)
    return out


def _anchor_group(items: tuple, kind: str) -> tuple[int, Alt] | None:
    """The first group of alternatives among the zero-width items ``items`` begins with and
    the item after them that holds an anchor ``kind`` outside any look-ahead, with its index."""
    index = _leading(items, lambda item: isinstance(item, Alt) and _holds_anchor(item, kind))
    return None if index is None else (index, items[index])


def _holds_anchor(node, kind: str) -> bool:
    """Whether an anchor ``kind`` stands in ``node`` outside its look-aheads' bodies."""
    if isinstance(node, _Anchor):
        return node.kind == kind
    if isinstance(node, (Concat, Alt)):
        return any(_holds_anchor(item, kind) for item in node.items)
    if isinstance(node, Repeat):
        return _holds_anchor(node.item, kind)
    return False


def _has_boundary(node) -> bool:
    return _first_boundary(node) is not None


def _first_boundary(node) -> _Boundary | None:
    """The first word boundary in ``node`` (look-ahead bodies included), else None."""
    return _first(node, lambda item: isinstance(item, _Boundary))


def _holds_assertion(node) -> bool:
    return _holds(node, _is_assertion)


def _asserts_ahead(node) -> bool:
    """Whether ``node`` holds a look-ahead or a ``$`` anywhere but at its very end."""
    if isinstance(node, _Look):
        return True
    if isinstance(node, Concat):
        last = len(node.items) - 1
        return any(_asserts_ahead(item) or (k < last and _holds_assertion(item)) for k, item in enumerate(node.items))
    if isinstance(node, Alt):
        return any(_asserts_ahead(item) for item in node.items)
    if isinstance(node, Repeat):  # even x{0,1}: an assertion in its copy sees what follows it
        return _holds_assertion(node.item)
    return False


def _followed_by(node, rest: RegexNode, parser: _Parser) -> RegexNode:
    """The texts of ``node`` followed by ``rest`` (the text after it, to the end of the
    string), with ``node``'s assertions applied to what follows each of them: ``$``
    keeps only the empty rest, ``(?=x)`` the rest that starts with a match of ``x``,
    ``(?!x)`` the rest that does not.  Only what holds an assertion is distributed
    over ``rest``; everything else is simply followed by it."""
    if isinstance(node, _Boundary):
        raise parser.error("a word boundary inside a look-ahead is not supported", node.position)
    if isinstance(node, _Look):
        return Filtered(rest, _followed_by(node.body, _ANY_STRING, parser), not node.negative)
    if isinstance(node, _Anchor):  # '$' ('^' was stripped where it may stand)
        return EMPTY if rest is _ANY_STRING else Filtered(rest, EMPTY, True)
    if not _holds_assertion(node):
        return seq(node, rest)
    if isinstance(node, Concat):
        for item in reversed(node.items):
            rest = _followed_by(item, rest, parser)
        return rest
    if isinstance(node, Alt):
        return alt(*(_followed_by(item, rest, parser) for item in node.items))
    return _repeated_with_assertions(node, rest, parser)


def _unrolled(node: Repeat) -> RegexNode:
    """A bounded repetition as copies (``x{1,3}`` is ``x(x(x)?)?``), so that an assertion
    inside each copy sees what follows that copy."""
    tail: RegexNode = EMPTY
    for _ in range(node.max - node.min):
        tail = Alt((EMPTY, Concat((node.item, tail))))
    return Concat((node.item,) * node.min + (tail,))


def _repeated_with_assertions(node: Repeat, rest: RegexNode, parser: _Parser) -> RegexNode:
    """A repetition whose item asserts something about what follows it: unrolled when it
    is short, else with each assertion a marker byte (:class:`Asserted`): there the
    copies after a copy are part of what its assertion sees, which no tree can split."""
    if node.max is not None and node.max <= MAX_UNROLLED_LOOKS:
        return _followed_by(_unrolled(node), rest, parser)
    boundary = _first_boundary(node)
    if boundary is not None:  # what it sees behind is not known here (no text before the look-ahead's)
        raise parser.error("a word boundary inside a look-ahead is not supported", boundary.position)
    tests: list[tuple[int, RegexNode, bool, bool]] = []
    body = _with_markers(node, tests, parser)
    return Asserted(body, rest, tuple(tests))


def _with_markers(node, tests: list, parser: _Parser):
    """``node`` with each look-ahead, ``$`` and word boundary replaced by a fresh marker
    byte, its test appended to ``tests`` (a look-ahead's body is resolved on its own, as
    a filter)."""
    if isinstance(node, (_Look, _Anchor, _Boundary)):
        if len(tests) == len(_ASSERTION_MARKERS):
            raise parser.error(f"more than {len(_ASSERTION_MARKERS)} look-aheads, '$' or word boundaries in one "
                               f"repetition (or alternative with a word boundary) are not supported", node.position)
        marker = _ASSERTION_MARKERS[len(tests)]
        if isinstance(node, _Look):
            tests.append((marker, _followed_by(node.body, _ANY_STRING, parser), not node.negative, False))
        elif isinstance(node, _Boundary):  # a word character ahead exactly when none behind (\B: when one)
            tests.append((marker, _STARTS_WITH_WORD, not node.negated, True))
        else:
            tests.append((marker, EMPTY, True, False))
        return Automaton(call_marker(marker))
    if not _holds_assertion(node):
        return node
    if isinstance(node, Concat):
        return Concat(tuple(_with_markers(item, tests, parser) for item in node.items))
    if isinstance(node, Alt):
        return Alt(tuple(_with_markers(item, tests, parser) for item in node.items))
    return Repeat(_with_markers(node.item, tests, parser), node.min, node.max)


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
    if (min_length or max_length is not None) and not bounds_implied(patterns, formats, min_length, max_length):
        encoded.insert(0, Automaton(counted_dfa(_encoded_char_dfa(), min_length, max_length)))
    if not encoded:  # the commonest value of all: one cached DFA, copied as a block into the schema's
        return Automaton(any_string_dfa())
    if len(encoded) == 1:
        return seq(lit('"'), encoded[0], lit('"'))
    try:
        dfa = _intersect_all([_as_dfa(part) for part in encoded])
    except EmptyLanguageError:  # a pattern no string matches (``$a``): no string, not an error
        return NOTHING
    return NOTHING if dfa is None else seq(lit('"'), Automaton(dfa), lit('"'))


def _intersect_all(dfas: list[ByteDFA]) -> ByteDFA | None:
    """The intersection of ``dfas`` (at least one); None as soon as it is empty."""
    out: ByteDFA | None = dfas[0]
    for dfa in dfas[1:]:
        out = intersect(out, dfa)
        if out is None:
            return None
    return out


def bounds_implied(patterns: list[str], formats: list[str], min_length: int, max_length: int | None) -> bool:
    """Whether some pattern (or format) alone keeps every string within [min_length, max_length]."""
    for tree in [pattern_tree(p) for p in patterns] + [FORMATS[name] for name in formats]:
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
    if isinstance(node, Filtered):
        return length_range(node.body)
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


@dataclass(frozen=True)
class CountedString:
    """A string whose length bounds are far apart: what a counted callee reads.

    ``patterns`` and ``formats`` are what its content must also meet (none: any
    characters).  Plain strings with bounds :data:`SHORT_STRING` apart are
    counted too (inlined later); ones with patterns or formats from
    :data:`PATTERN_COUNT` apart, when their callee fits (never inlined).
    """

    low: int
    high: int
    patterns: tuple[str, ...] = ()
    formats: tuple[str, ...] = ()
    #: Where the schema writes it (the first place, for errors; not part of its identity).
    pointer: str = field(default="#", compare=False)

    @property
    def is_long(self) -> bool:
        return self.high - self.low >= LONG_STRING

    @property
    def is_inlined(self) -> bool:
        """Whether the schema's DFA gets an eager copy per call (a short plain count) instead
        of keeping the call (long counts, patterns and formats)."""
        return not self.is_long and not self.patterns and not self.formats

    def eager_dfa(self) -> ByteDFA:
        """The same string as one eager DFA, quotes included (a product's operand, a short count)."""
        return _eager_counted(self)

    def fits(self, longest_token: int = LONGEST_TOKEN) -> bool:
        """Whether its callee stays within ``MAX_DFA_STATES`` for tokens of up to ``longest_token`` bytes."""
        return _callee_states(self, callee_margin(self, longest_token)) <= MAX_DFA_STATES

    def describe(self) -> str:
        parts = [f"pattern {p!r}" for p in self.patterns] + [f"format {f!r}" for f in self.formats]
        return " and ".join(parts + [f"minLength {self.low} and maxLength {self.high}"])

    def to_json(self) -> list:
        return [self.low, self.high, list(self.patterns), list(self.formats), self.pointer]

    @classmethod
    def from_json(cls, data: list) -> "CountedString":
        low, high, patterns, formats, pointer = data
        return cls(int(low), int(high), tuple(patterns), tuple(formats), pointer)


def _room(counted: CountedString, margin: int) -> int:
    """How many characters the copies after the loop hold: as many as a token's bytes can
    end, plus the most the content may still need to end, less one (a character a token
    begins counts in both)."""
    return margin + max(_units_to_finish(counted.patterns, counted.formats) - 1, 0)


def callee_margin(counted: CountedString, longest: int) -> int:
    """The margin of ``counted``'s callee for tokens of up to ``longest`` bytes:
    :data:`COUNT_MARGIN` when the loop then spans the longest token (the rest is checked
    near the exit: :mod:`constrain.automata.counted_loops`), else ``longest`` itself."""
    margin = min(COUNT_MARGIN, longest)
    if counted.high - _room(counted, margin) - counted.low >= longest:
        return margin
    return longest


def _callee_states(counted: CountedString, margin: int) -> int:
    """About how many states :func:`counted_string_callee` builds (before pruning)."""
    rows = _content_units(counted.patterns, counted.formats)[0]
    return (counted.low + _room(counted, margin) + 2) * rows.shape[0] + 2


@lru_cache(maxsize=64)
def _eager_counted(counted: CountedString) -> ByteDFA:
    if not counted.patterns and not counted.formats:
        return counted_string_dfa(counted.low, counted.high)
    tree = string_tree(counted.low, counted.high, list(counted.patterns), list(counted.formats))
    if tree is NOTHING:
        raise RegexError("no string meets the patterns, formats and length bounds together", "", 0)
    return _as_dfa(tree)


@lru_cache(maxsize=64)
def counted_string_callee(counted: CountedString, longest: int) -> CountedCallee:
    """``counted`` as a callee whose middle loop counts its characters.

    States: the opening quote; ``low`` eager copies of the content's states (a
    copy per characters read); one copy that loops while the count (kept by
    :class:`~constrain.automata.pushdown.PushdownDFA`) is below the exit; eager
    copies from there to ``high``; the closing quote, from every copy from ``low``
    on where the content may end.  The content's states are those of its
    patterns' and formats' automaton paired with the position inside the current
    character (:func:`_content_units`).  The copies after the loop number
    the margin (:func:`callee_margin` for tokens of up to ``longest`` bytes) plus the
    characters the content may still need to end, so that no token of up to the
    margin's bytes walked in the loop, which ignores the count, can pass the bound
    (longer ones are checked at mask time).  With no room for a loop, the eager DFA.

    Raises
    ------
    RegexError
        When no content meets the patterns and formats, or the copies would pass
        ``MAX_DFA_STATES``.
    """
    rows, ends, done = _content_units(counted.patterns, counted.formats)
    low, high, n = counted.low, counted.high, rows.shape[0]
    margin = callee_margin(counted, longest)
    room = _room(counted, margin)
    if high - room <= low:
        return CountedCallee(counted.eager_dfa(), 0, 0, (), low, high, margin, high)
    copies = low + room + 2  # counts 0..low-1, the loop, then high - room..high
    states = _callee_states(counted, margin)
    if states > MAX_DFA_STATES:
        raise RegexError(f"counting {counted.describe()} takes {states:,} states "
                         f"for tokens of {margin} bytes (the limit is {MAX_DFA_STATES:,})", "", 0)
    bases = np.int32(1) + np.arange(copies, dtype=np.int32) * np.int32(n)
    following = bases + np.int32(n)  # where a finished character goes: the next copy...
    following[low] = bases[low]  # ...but the loop stays in itself
    following[-1] = -1  # and at the bound nothing more is read
    rows = np.ascontiguousarray(rows, dtype=np.int32)
    ending = (rows >= 0) & ends[np.maximum(rows, 0)]
    trans = counted_copies(rows, ending, bases, following, np.ascontiguousarray(done), int(low), ord('"'))
    close = trans.shape[0] - 1
    accepting = np.zeros(trans.shape[0], dtype=bool)
    accepting[close] = True
    live = _live_states(trans, accepting)
    new_index = (np.cumsum(live) - 1).astype(np.int32)
    new_index[~live] = -1
    loop = np.arange(bases[low], bases[low] + n)[live[bases[low]:bases[low] + n]]
    exit_states = loop + (bases[low + 1] - bases[low])
    exits = np.where(ends[loop - bases[low]], np.where(live[exit_states], new_index[exit_states], -2), -1)
    assert (exits != -2).all(), "the copies after the loop are too few for its states to end"
    dfa = ByteDFA(gather_rows(trans, np.flatnonzero(live), new_index), accepting[live], 0)
    first = int(new_index[loop[0]])
    return CountedCallee(dfa, first, first + loop.size, tuple(exits.tolist()), low, high - room, margin, high)


@lru_cache(maxsize=64)
def _content_units(patterns: tuple[str, ...], formats: tuple[str, ...]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The content between the quotes, state by state, with where characters end.

    ``(rows, ends, done)``: ``rows`` [n, 256] the moves (-1: none), state 0 the
    start; ``ends[s]``: a character has just ended at ``s`` (the start is such a
    state); ``done[s]``: the content may end at ``s``.  With no pattern or format,
    one character's states.  Otherwise the pairs (state of the patterns' and
    formats' automaton, state inside the character) reachable from the start: the
    automaton alone cannot tell where characters end (``a`` and ``b\\`` may lead to
    one state).

    Raises
    ------
    RegexError
        When no content meets every pattern and format.
    """
    unit = _encoded_char_dfa()
    if not patterns and not formats:
        template = _unit_template(unit)
        width = template.shape[0]
        ends = np.arange(width) == 0
        return np.where(template == width, 0, template), ends, ends
    content = _intersect_all([build_byte_dfa(encode_chars(pattern_tree(p))) for p in patterns]
                             + [format_dfa(f) for f in formats])
    if content is None:
        raise RegexError("no string meets the patterns and formats together", "", 0)
    unit_table, finished = _kernel_arrays(unit.trans, unit.accepting)
    rows, pair_content, pair_unit = unit_pairs(_kernel_arrays(content.trans, content.accepting)[0],
                                               int(content.start), unit_table, int(unit.start), finished)
    ends = pair_unit == unit.start
    return rows, ends, content.accepting[pair_content] & ends


@lru_cache(maxsize=64)
def _units_to_finish(patterns: tuple[str, ...], formats: tuple[str, ...]) -> int:
    """The most characters the content may still need, from any of its states, before it
    can end (a started character counts as one)."""
    rows, ends, done = _content_units(patterns, formats)
    return int(steps_to_end(np.ascontiguousarray(rows, dtype=np.int32), ends.astype(np.int64),
                            np.ascontiguousarray(done)).max())


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

