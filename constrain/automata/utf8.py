"""Code point ranges as sequences of UTF-8 byte ranges.

A character class such as ``[^"]`` or ``[\\u4e00-\\u9fff]`` covers up to 1.1 million code
points; enumerating them is out of the question.  Every code point range splits into
a handful of byte-range sequences, each a product of ranges of the lead byte and
continuation bytes: ``[\\u0080-\\u07ff]`` is ``[C2-DF][80-BF]``.  The byte-level DFA is
then built from those sequences, so a token that ends inside a multi-byte character
leaves the automaton in an intermediate state and is handled exactly.

Surrogates (U+D800..U+DFFF) have no UTF-8 encoding and are dropped.
"""

from __future__ import annotations

from functools import lru_cache

__all__ = ["utf8_sequences", "ranges_to_utf8_sequences"]

ByteRange = tuple[int, int]

# Ranges of code points whose UTF-8 encodings have the same length.
_LENGTH_BOUNDS = ((0x0, 0x7F), (0x80, 0x7FF), (0x800, 0xFFFF), (0x10000, 0x10FFFF))
_SURROGATES = (0xD800, 0xDFFF)


def _encode(cp: int, length: int) -> list[int]:
    """UTF-8 bytes of ``cp`` with the given encoded length (no validity checks)."""
    if length == 1:
        return [cp]
    out = []
    for _ in range(length - 1):
        out.append(0x80 | (cp & 0x3F))
        cp >>= 6
    lead_marks = {2: 0xC0, 3: 0xE0, 4: 0xF0}
    out.append(lead_marks[length] | cp)
    return out[::-1]


def _split_same_length(lo: int, hi: int, length: int, out: list[tuple[ByteRange, ...]]) -> None:
    """Split ``[lo, hi]`` (all of one encoded length) into byte-range products.

    A range is a product when, for every continuation position, either the bytes
    below it span their full range [80, BF] at both ends or the prefix above it is
    equal.  Otherwise it is cut at the first 6-bit boundary that breaks this.
    """
    for i in range(1, length):
        mask = (1 << (6 * i)) - 1
        if lo & ~mask != hi & ~mask:
            if lo & mask != 0:
                _split_same_length(lo, lo | mask, length, out)
                _split_same_length((lo | mask) + 1, hi, length, out)
                return
            if hi & mask != mask:
                _split_same_length(lo, (hi & ~mask) - 1, length, out)
                _split_same_length(hi & ~mask, hi, length, out)
                return
    lo_bytes = _encode(lo, length)
    hi_bytes = _encode(hi, length)
    out.append(tuple(zip(lo_bytes, hi_bytes)))


def utf8_sequences(lo: int, hi: int) -> list[tuple[ByteRange, ...]]:
    """Byte-range sequences whose concatenated products encode exactly ``[lo, hi]``."""
    out: list[tuple[ByteRange, ...]] = []
    for length, (blo, bhi) in enumerate(_LENGTH_BOUNDS, start=1):
        a, b = max(lo, blo), min(hi, bhi)
        if a > b:
            continue
        pieces = [(a, b)]
        if length == 3:
            pieces = [(x, y) for x, y in ((a, min(b, _SURROGATES[0] - 1)), (max(a, _SURROGATES[1] + 1), b)) if x <= y]
        for x, y in pieces:
            _split_same_length(x, y, length, out)
    return out


@lru_cache(maxsize=4096)
def ranges_to_utf8_sequences(ranges: tuple[tuple[int, int], ...]) -> tuple[tuple[ByteRange, ...], ...]:
    """All byte-range sequences of a set of code point ranges (memoised per class)."""
    out: list[tuple[ByteRange, ...]] = []
    for lo, hi in ranges:
        out.extend(utf8_sequences(lo, hi))
    return tuple(out)
