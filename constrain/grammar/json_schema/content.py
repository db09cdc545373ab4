"""JSON documents inside strings: draft 7's ``contentMediaType: "application/json"``.

The string's content must be a JSON text, and the model writes that text escaped
the way ``json.dumps(..., ensure_ascii=False)`` escapes any string: ``"`` as
``\\"``, the document's own escapes doubled (``\\\\n``), its whitespace
``\\n``/``\\t``/``\\r`` as short escapes.  The document nests without bound, so it
is not a regular language; it is a callee of its own, as a recursive definition
is (:mod:`constrain.automata.pushdown`): one JSON value with one level of
brackets whose members call the callee again, its characters encoded by
:func:`~.strings.encode_chars` (an escaping is a letter-by-letter map, so the
call symbols between the letters are left as they are).

The document is any JSON text, not our serialisation of one: whitespace anywhere
JSON allows it, every string escape (``\\u00e9``, ``\\/``), every number spelling
(``1E+2``), so a string is accepted exactly when its content parses.  Inside the
operands of a product (exact over bytes only) the document is unrolled to a depth
instead, cut on the side the operand's polarity asks for.
"""

from __future__ import annotations

import json
from functools import lru_cache

from ...automata.byte_dfa import ByteDFA, build_byte_dfa
from ...automata.dfa_ops import any_suffix_marker
from ...automata.pushdown import call_marker
from ..regex import Automaton, RegexNode
from .strings import encode_chars
from .trees import DIGIT, NONZERO, alt, cls, lit, opt, plus, rep, seq, star

__all__ = ["JSON_MEDIA_TYPE", "json_text_string", "json_text_callee", "json_text_dfa", "is_json_text"]

JSON_MEDIA_TYPE = "application/json"


def is_json_text(text: str) -> bool:
    """Whether ``text`` parses as JSON (RFC 8259: no NaN or Infinity), for enum values."""
    def refuse(constant: str) -> None:
        raise ValueError(constant)

    try:
        json.loads(text, parse_constant=refuse)
    except ValueError:
        return False
    return True


def _chars(*chars: str) -> RegexNode:
    return cls(*((c, c) for c in chars))


_WS = star(_chars(" ", "\t", "\n", "\r"))
_HEX = cls(("0", "9"), ("a", "f"), ("A", "F"))
# Any JSON string as RFC 8259 spells it: unescaped characters but '"', '\' and controls,
# or any escape (short ones, or \u with four hex digits, lone surrogates included).
_STRING = seq(lit('"'), star(alt(cls((0x20, 0x21), (0x23, 0x5B), (0x5D, 0xD7FF), (0xE000, 0x10FFFF)),
                                 seq(lit("\\"), alt(_chars('"', "\\", "/", "b", "f", "n", "r", "t"), seq(lit("u"), rep(_HEX, 4, 4)))))),
              lit('"'))
_NUMBER = seq(opt(lit("-")), alt(lit("0"), seq(NONZERO, star(DIGIT))), opt(seq(lit("."), plus(DIGIT))),
              opt(seq(_chars("e", "E"), opt(_chars("+", "-")), plus(DIGIT))))
_SCALARS = alt(lit("null"), lit("true"), lit("false"), _NUMBER, _STRING)


def _level(member: RegexNode | None) -> RegexNode:
    """One JSON value, as code points: a scalar, or (with ``member``, an automaton already
    encoded) an array or object whose members are ``member``."""
    if member is None:
        return encode_chars(_SCALARS)
    pair = seq(_STRING, _WS, lit(":"), _WS, member)
    array = seq(lit("["), _WS, opt(seq(member, star(seq(_WS, lit(","), _WS, member)))), _WS, lit("]"))
    obj = seq(lit("{"), _WS, opt(seq(pair, star(seq(_WS, lit(","), _WS, pair)))), _WS, lit("}"))
    return encode_chars(alt(_SCALARS, array, obj))


@lru_cache(maxsize=16)
def json_text_callee(symbol: int) -> ByteDFA:
    """One escaped JSON value whose members are calls on ``symbol`` (the callee's own)."""
    return build_byte_dfa(_level(Automaton(call_marker(symbol))))


@lru_cache(maxsize=16)
def json_text_dfa(depth: int, over: bool) -> ByteDFA:
    """One escaped JSON value nested at most ``depth`` deep; deeper ones refused, or
    (``over``, for a language taken away) cut with :data:`.dfa_ops.ANY_SUFFIX`."""
    dfa = build_byte_dfa(_level(Automaton(any_suffix_marker()) if over else None))
    for _ in range(depth):
        dfa = build_byte_dfa(_level(Automaton(dfa)))
    return dfa


def json_text_string(value: RegexNode) -> RegexNode:
    """The string whose content is a JSON text: its quotes around the escaped whitespace
    and ``value`` (a call into :func:`json_text_callee`, or :func:`json_text_dfa`)."""
    return seq(lit('"'), encode_chars(seq(_WS, value, _WS)), lit('"'))
