"""JSON numbers as regular languages: exact ranges and ``multipleOf``.

Integers are written canonically (``0``, ``-?[1-9][0-9]*``: no leading zeros, no
``-0``).  Bounded numbers are written plainly (``0.00001``) or in the scientific
form ``json.dumps`` uses for floats below 1e-4 and from 1e16 (``1e-05``,
``2.5E+16``: one nonzero digit before the point), never as ``0.1e-4`` or
``10e-6``.  In that form the exponent alone says the magnitude, so a range is two
regular conditions (on the exponent, then on the mantissa where the exponent
equals the bound's); with any mantissa it would need counting.  Unbounded
numbers take the full JSON syntax.  Ranges are exact for any decimal bound:
``x >= 2.5`` is built digit by digit, not approximated.

Inside the operands of a product (``oneOf``, ``not``, ``if``, ``contains``) numbers
are *plain*: no exponent, no negative zero.  A value's plain texts (``2``, ``2.0``,
``2.00``; ``2.5``, ``2.50``) are one set whatever schema writes the value, so a
difference of two languages is a difference of two sets of values when the side
taken away writes :data:`EVERY_PLAIN` text of each value it accepts (integers with
zero fractions too) and the side kept writes :data:`PLAIN` texts only (ARCHITECTURE.md,
"Number spellings").
"""

from __future__ import annotations

from decimal import Decimal

import numpy as np

from ...automata.byte_dfa import ByteDFA, build_byte_dfa
from ...automata.dfa_ops import difference, dfa_from_table, intersect
from ..regex import Automaton, RegexNode
from .trees import DIGIT, NONZERO, NOTHING, alt, cls, lit, opt, plus, seq, star

__all__ = ["integer_tree", "number_tree", "number_literal", "multiple_of_dfa", "INTEGER", "NUMBER",
           "JSON_SPELLING", "PLAIN", "EVERY_PLAIN"]

# How numbers are spelled, from loosest to tightest (an emitter only ever raises it):
JSON_SPELLING = 0  # as JSON writers print them: canonical integers, exponents allowed
PLAIN = 1  # only plain texts (no exponent, no negative zero), as few as JSON_SPELLING's
EVERY_PLAIN = 2  # every plain text of each value: 2.0 for an integer, 2.50 for 2.5

_NATURAL = alt(lit("0"), seq(NONZERO, star(DIGIT)))
_FRACTION = seq(lit("."), plus(DIGIT))
_EXPONENT = seq(cls(("e", "e"), ("E", "E")), opt(cls(("+", "+"), ("-", "-"))), plus(DIGIT))
INTEGER: RegexNode = seq(opt(lit("-")), _NATURAL)
NUMBER: RegexNode = seq(opt(lit("-")), _NATURAL, opt(_FRACTION), opt(_EXPONENT))
_ZERO_FRACTION = seq(lit("."), plus(lit("0")))
_MAX_MODULUS = 4096  # multipleOf automata have one state per remainder


def integer_tree(low: int | None, high: int | None, spelling: int = JSON_SPELLING) -> RegexNode:
    """Canonical integers in ``[low, high]`` (None: unbounded); with any number of zero
    fraction digits too (``2.0``) where every plain spelling is wanted."""
    canonical = _canonical_integers(low, high)
    return seq(canonical, opt(_ZERO_FRACTION)) if spelling == EVERY_PLAIN else canonical


def number_literal(value: int | float, spelling: int = JSON_SPELLING) -> RegexNode:
    """The texts of one numeric enum/const value: ``json.dumps``'s, and for an integral
    value the other of ``2`` and ``2.0`` (how JSON writers print ints and floats);
    exponents written out where numbers are plain; trailing zeros where every plain
    spelling is wanted.  Zero is also ``-0.0`` where negative zero is written (JSON
    Schema counts them equal, and ``json.dumps`` writes a negative zero so)."""
    if spelling == JSON_SPELLING and value == 0:
        return alt(lit("0"), lit("0.0"), lit("-0.0"))
    if spelling == JSON_SPELLING and isinstance(value, float) and not value.is_integer():
        return lit(repr(value))
    if spelling == JSON_SPELLING and isinstance(value, float):
        return alt(lit(repr(value)), lit(str(int(value))))
    exact = Decimal(repr(value)) if isinstance(value, float) else Decimal(value)
    if exact == exact.to_integral_value():
        whole = str(int(exact))
        return seq(lit(whole), opt(_ZERO_FRACTION)) if spelling == EVERY_PLAIN else alt(lit(whole), lit(whole + ".0"))
    text = format(exact.normalize(), "f")
    return seq(lit(text), star(lit("0"))) if spelling == EVERY_PLAIN else lit(text)


def _canonical_integers(low: int | None, high: int | None) -> RegexNode:
    if low is not None and high is not None and low > high:
        return NOTHING
    parts = []
    if high is None or high >= 0:
        parts.append(_naturals(max(low, 0) if low is not None else 0, high))
    if low is None or low < 0:
        top = -low if low is not None else None
        bottom = max(1, -high) if high is not None else 1
        if top is None or bottom <= top:
            parts.append(seq(lit("-"), _naturals(bottom, top)))
    return alt(*parts)


def number_tree(low: Decimal | None, high: Decimal | None, low_exclusive: bool, high_exclusive: bool,
                spelling: int = JSON_SPELLING) -> RegexNode:
    """JSON numbers whose value lies in the interval; exact.  Plain ones (no exponent,
    no negative zero) are written without exponent; the others also in scientific
    form (module docstring).  Unbounded numbers take the full syntax unless plain."""
    if low is None and high is None and spelling == JSON_SPELLING:
        return NUMBER
    if low is not None and high is not None and (low > high or (low == high and (low_exclusive or high_exclusive))):
        return NOTHING
    scientific = spelling == JSON_SPELLING
    parts = []
    # Whether the interval reaches zero from above and from below: both, it holds zero.
    reaches_up = high is None or high > 0 or (high == 0 and not high_exclusive)
    reaches_down = low is None or low < 0 or (low == 0 and not low_exclusive)
    if reaches_up:
        lo = low if low is not None and low >= 0 else Decimal(0)
        lo_excl = low_exclusive if low is not None and low >= 0 else False
        parts.append(_bounded_magnitudes(lo, lo_excl, high, high_exclusive, scientific))
    if low is None or low < 0:
        hi = -high if high is not None and high <= 0 else Decimal(0)
        hi_excl = high_exclusive if high is not None and high <= 0 else False
        magnitudes = _bounded_magnitudes(hi, hi_excl, -low if low is not None else None, low_exclusive, scientific)
        if magnitudes is not NOTHING:
            positive = difference(build_byte_dfa(magnitudes), build_byte_dfa(_ZERO))
            if positive is not None:
                parts.append(seq(lit("-"), Automaton(positive)))
    if scientific and reaches_up and reaches_down:
        parts.append(lit("-0.0"))  # json.dumps(-0.0): a zero, in range where 0 is
    return alt(*parts)


_ZERO = seq(lit("0"), opt(seq(lit("."), plus(lit("0")))))


def _bounded_magnitudes(low: Decimal, low_excl: bool, high: Decimal | None, high_excl: bool,
                        scientific: bool = False) -> RegexNode:
    """Non-negative decimals in the interval (``low >= 0``), no sign; no exponent
    unless ``scientific`` (then also :func:`_scientific_magnitudes`)."""
    lower = _at_least(low, low_excl)
    if high is None:
        plain = lower
    else:
        both = intersect(build_byte_dfa(lower), build_byte_dfa(_at_most(high, high_excl)))
        plain = Automaton(both) if both is not None else NOTHING
    return alt(plain, _scientific_magnitudes(low, low_excl, high, high_excl)) if scientific else plain


_MANTISSA = seq(NONZERO, opt(_FRACTION))
_E = cls(("e", "e"), ("E", "E"))


def _scientific_magnitudes(low: Decimal, low_excl: bool, high: Decimal | None, high_excl: bool) -> RegexNode:
    """``d[.ddd]e[+-]n`` texts (``d`` nonzero, no sign) whose value lies in the interval.

    The value is ``m * 10**n`` with ``1 <= m < 10``, so it is above a bound
    ``A * 10**k`` (``1 <= A < 10``) exactly when ``n > k``, or ``n == k`` and
    ``m >= A``: one exponent range and one mantissa range per bound.  Every such
    text is positive, so a lower bound of 0 (exclusive or not) keeps all of them.
    """
    if high is not None and high <= 0:
        return NOTHING
    low_at = _normalized(low) if low > 0 else None
    high_at = _normalized(high) if high is not None else None
    if low_at and high_at and low_at[1] == high_at[1]:  # both bounds in one decade
        both = intersect(build_byte_dfa(_mantissa_at_least(low_at[0], low_excl)),
                         build_byte_dfa(_mantissa_at_most(high_at[0], high_excl)))
        return NOTHING if both is None else seq(Automaton(both), _E, _exponents(low_at[1], low_at[1]))
    parts = [seq(_MANTISSA, _E, _exponents(low_at[1] + 1 if low_at else None, high_at[1] - 1 if high_at else None))]
    if low_at:
        parts.append(seq(_mantissa_at_least(low_at[0], low_excl), _E, _exponents(low_at[1], low_at[1])))
    if high_at:
        parts.append(seq(_mantissa_at_most(high_at[0], high_excl), _E, _exponents(high_at[1], high_at[1])))
    return alt(*parts)


def _normalized(value: Decimal) -> tuple[Decimal, int]:
    """``(A, k)`` with ``value == A * 10**k`` and ``1 <= A < 10`` (``value > 0``)."""
    k = value.adjusted()
    return value.scaleb(-k), k


def _mantissa_at_least(value: Decimal, exclusive: bool) -> RegexNode:
    """Mantissas ``d[.ddd]`` (``1 <= d <= 9``) that are >= (or >) ``value`` in ``[1, 10)``."""
    whole, frac = _split(value)
    above = [seq(cls((str(whole + 1), "9")), opt(_FRACTION))] if whole < 9 else []
    return alt(*above, seq(lit(str(whole)), _fraction_at_least(frac, exclusive)))


def _mantissa_at_most(value: Decimal, exclusive: bool) -> RegexNode:
    """Mantissas ``d[.ddd]`` that are <= (or <) ``value`` in ``[1, 10)``."""
    whole, frac = _split(value)
    below = [seq(cls(("1", str(whole - 1))), opt(_FRACTION))] if whole > 1 else []
    return alt(*below, seq(lit(str(whole)), _fraction_at_most(frac, exclusive)))


def _exponents(low: int | None, high: int | None) -> RegexNode:
    """Exponent texts ``[+-]?[0-9]+`` (leading zeros allowed: ``e-05``) whose value is
    in ``[low, high]`` (None: unbounded); ``-0`` is zero."""
    if low is not None and high is not None and low > high:
        return NOTHING
    zeros = star(lit("0"))
    parts = []
    if high is None or high >= 0:
        parts.append(seq(opt(lit("+")), zeros, _naturals(max(low, 0) if low is not None else 0, high)))
    if low is None or low <= 0:
        bottom = -high if high is not None and high < 0 else 0
        parts.append(seq(lit("-"), zeros, _naturals(bottom, -low if low is not None else None)))
    return alt(*parts)


def _split(value: Decimal) -> tuple[int, str]:
    """Integer part and fraction digits (no trailing zeros) of a non-negative decimal."""
    text = format(value, "f")
    whole, _, frac = text.partition(".")
    return int(whole), frac.rstrip("0")


def _at_least(value: Decimal, exclusive: bool) -> RegexNode:
    whole, frac = _split(value)
    return alt(seq(_naturals(whole + 1, None), opt(_FRACTION)), seq(lit(str(whole)), _fraction_at_least(frac, exclusive)))


def _at_most(value: Decimal, exclusive: bool) -> RegexNode:
    whole, frac = _split(value)
    below = seq(_naturals(0, whole - 1), opt(_FRACTION)) if whole >= 1 else NOTHING
    return alt(below, seq(lit(str(whole)), _fraction_at_most(frac, exclusive)))


def _fraction_at_least(frac: str, exclusive: bool) -> RegexNode:
    """Optional ``.digits`` part whose value (as 0.digits) is >= (or >) 0.frac."""
    if not frac:
        return seq(lit("."), star(DIGIT), NONZERO, star(DIGIT)) if exclusive else opt(_FRACTION)
    branches = [seq(lit(frac[:k]), cls((str(int(frac[k]) + 1), "9")), star(DIGIT))
                for k in range(len(frac)) if frac[k] != "9"]
    tail = seq(star(DIGIT), NONZERO, star(DIGIT)) if exclusive else star(DIGIT)
    branches.append(seq(lit(frac), tail))
    return seq(lit("."), alt(*branches))


def _fraction_at_most(frac: str, exclusive: bool) -> RegexNode:
    """Optional ``.digits`` part whose value is <= (or <) 0.frac."""
    if not frac:
        return NOTHING if exclusive else opt(seq(lit("."), plus(lit("0"))))
    branches = [seq(lit(frac[:k]), cls(("0", str(int(frac[k]) - 1))), star(DIGIT))
                for k in range(len(frac)) if frac[k] != "0"]
    branches += [lit(frac[:k]) for k in range(1, len(frac))]
    if not exclusive:
        branches.append(seq(lit(frac), star(lit("0"))))
    return opt(seq(lit("."), alt(*branches)))


def _naturals(low: int, high: int | None) -> RegexNode:
    """Canonical non-negative integers in ``[low, high]``."""
    if high is not None and low > high:
        return NOTHING
    low_text = str(low)
    if high is None:
        longer = seq(NONZERO, _digits(len(low_text)), star(DIGIT))
        return alt(_same_length(low_text, "9" * len(low_text)), longer)
    high_text = str(high)
    if len(low_text) == len(high_text):
        return _same_length(low_text, high_text)
    parts = [_same_length(low_text, "9" * len(low_text))]
    for length in range(len(low_text) + 1, len(high_text)):
        parts.append(seq(NONZERO, _digits(length - 1)))
    parts.append(_same_length("1" + "0" * (len(high_text) - 1), high_text))
    return alt(*parts)


def _digits(count: int) -> RegexNode:
    return seq(*([DIGIT] * count))


def _same_length(low: str, high: str) -> RegexNode:
    """Digit strings of one length between ``low`` and ``high`` (inclusive, no sign)."""
    if low == high:
        return lit(low)
    if len(low) == 1:
        return cls((low, high))
    if low[0] == high[0]:
        return seq(lit(low[0]), _same_length(low[1:], high[1:]))
    rest = len(low) - 1
    if low[1:] == "0" * rest and high[1:] == "9" * rest:
        return seq(cls((low[0], high[0])), _digits(rest))
    parts = [seq(lit(low[0]), _same_length(low[1:], "9" * rest))]
    if int(high[0]) - int(low[0]) >= 2:
        parts.append(seq(cls((str(int(low[0]) + 1), str(int(high[0]) - 1))), _digits(rest)))
    parts.append(seq(lit(high[0]), _same_length("0" * rest, high[1:])))
    return alt(*parts)


def multiple_of_dfa(step: Decimal, integer: bool) -> ByteDFA | None:
    """Numbers (canonical, no exponent) that are multiples of ``step`` > 0.

    ``step = a / 10**k`` with integer ``a``: a number ``I.F`` is a multiple iff the
    integer ``I F[:k]`` (fraction padded with zeros) is divisible by ``a`` and the
    fraction has only zeros after ``k`` digits.  One state per (remainder, number
    of fraction digits read), so ``a`` is bounded by ``_MAX_MODULUS``; None when
    the step is too fine for that.
    """
    sign, digits, exponent = step.normalize().as_tuple()
    places = max(0, -int(exponent))
    modulus = int(step * (10 ** places))
    if modulus > _MAX_MODULUS or modulus <= 0:
        return None
    builder = _TableBuilder()
    start = builder.state("start")
    neg = builder.state("neg")
    builder.edge(start, "-", neg)
    zero = builder.state(("int", 0, True))
    for origin in (start, neg):
        builder.edge(origin, "0", zero)
        for d in range(1, 10):
            builder.edge(origin, str(d), builder.state(("int", d % modulus, False)))
    builder.close(lambda key: _multiple_of_step(key, modulus, places, integer))
    return builder.build(lambda key: _multiple_of_accepts(key, modulus, places))


def _multiple_of_step(key, modulus: int, places: int, integer: bool) -> list[tuple[str, object]]:
    """Outgoing (byte, key) pairs of one state of the multipleOf automaton."""
    if key in ("start", "neg"):
        return []
    kind, rem, is_zero = key[0], key[1], key[2] if key[0] == "int" else False
    out: list[tuple[str, object]] = []
    if kind == "int":
        if not is_zero:
            out += [(str(d), ("int", (rem * 10 + d) % modulus, False)) for d in range(10)]
        if not integer:
            out.append((".", ("dot", rem, 0)))
    elif kind in ("dot", "frac"):
        read = key[2]
        if read < places:
            out += [(str(d), ("frac", (rem * 10 + d) % modulus, read + 1)) for d in range(10)]
        else:
            out.append(("0", ("frac", rem, read)))
    return out


def _multiple_of_accepts(key, modulus: int, places: int) -> bool:
    """Accept when the digits read, padded with zeros to ``places`` fraction digits, are divisible."""
    if key[0] == "int":
        return key[1] * 10 ** places % modulus == 0
    if key[0] == "frac":
        return key[1] * 10 ** (places - key[2]) % modulus == 0
    return False


class _TableBuilder:
    """Build a DFA from states named by hashable keys and a step function."""

    def __init__(self) -> None:
        self.keys: list = []
        self.index: dict = {}
        self.edges: dict[int, list[tuple[int, int]]] = {}

    def state(self, key) -> int:
        found = self.index.get(key)
        if found is None:
            found = self.index[key] = len(self.keys)
            self.keys.append(key)
        return found

    def edge(self, source: int, char: str, target: int) -> None:
        self.edges.setdefault(source, []).append((ord(char), target))

    def close(self, step) -> None:
        """Explore every state reachable through ``step(key) -> [(char, key)]``."""
        done = 0
        while done < len(self.keys):
            key = self.keys[done]
            for char, target_key in step(key):
                self.edge(done, char, self.state(target_key))
            done += 1

    def build(self, accepts) -> ByteDFA | None:
        trans = np.full((len(self.keys), 256), -1, dtype=np.int32)
        for source, pairs in self.edges.items():
            for byte, target in pairs:
                trans[source, byte] = target
        accepting = np.array([accepts(key) for key in self.keys], dtype=bool)
        return dfa_from_table(trans, accepting, 0)
