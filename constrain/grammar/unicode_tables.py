"""Unicode tables for Python-dialect regexes and case-insensitive matching.

Lark grammars are written in Python's regex dialect, where ``\\d``, ``\\w`` and ``\\s``
are Unicode classes defined by the running interpreter's Unicode database
(``str.isdecimal``, ``str.isalnum``, ``str.isspace``), and ``(?i)`` folds case the way
``str.lower``/``str.upper`` do.  Taking them from the interpreter, not from a copied
table, keeps us exact against lark's own lexer on the same Python.

One scan over all code points (about half a second) builds every table; it runs
once per process, on first use of the Python dialect or of case folding.
"""

from __future__ import annotations

import bisect
from functools import lru_cache

__all__ = ["python_class_ranges", "case_closure"]

Ranges = tuple[tuple[int, int], ...]
_MAX = 0x10FFFF


def _runs(flags: list[bool]) -> Ranges:
    """Code point ranges where ``flags`` is True."""
    out = []
    start = None
    for cp, flag in enumerate(flags):
        if flag and start is None:
            start = cp
        elif not flag and start is not None:
            out.append((start, cp - 1))
            start = None
    if start is not None:
        out.append((start, len(flags) - 1))
    return tuple(out)


def _lowercase_links(chars: list[str]):
    """Pairs (code point, code point) that Python's re treats as the same letter."""
    try:
        import _sre
        from re import _casefix

        tolower = _sre.unicode_tolower
        extra = _casefix._EXTRA_CASES
    except (ImportError, AttributeError):  # another interpreter: fall back to str methods
        for cp, c in enumerate(chars):
            for other in (c.lower(), c.upper()):
                if len(other) == 1 and other != c:
                    yield cp, ord(other)
        return
    for cp in range(len(chars)):
        lower = tolower(cp)
        if lower != cp:
            yield cp, lower
    for lower, others in extra.items():
        for other in others:
            yield lower, other


@lru_cache(maxsize=1)
def _scan() -> tuple[Ranges, Ranges, Ranges, dict[int, tuple[int, ...]]]:
    """One pass over all code points: \\d, \\w, \\s ranges and case-variant groups."""
    chars = [chr(cp) for cp in range(_MAX + 1)]
    digit = [c.isdecimal() for c in chars]
    word = [c.isalnum() or c == "_" for c in chars]
    space = [c.isspace() for c in chars]
    # Python's re matches c against x under IGNORECASE when their simple lowercase
    # mappings agree (_sre.unicode_tolower, not str.lower: 'İ' lowers to 'i'), or
    # through its table of extra cases (i/ı, s/ſ, µ/μ...).  Union-find over those
    # links gives the case-variant groups.
    parent: dict[int, int] = {}

    def find(cp: int) -> int:
        while parent.setdefault(cp, cp) != cp:
            parent[cp] = parent[parent[cp]]
            cp = parent[cp]
        return cp

    for cp, lower in _lowercase_links(chars):
        parent[find(cp)] = find(lower)
    groups: dict[int, list[int]] = {}
    for cp in parent:
        groups.setdefault(find(cp), []).append(cp)
    variants: dict[int, tuple[int, ...]] = {}
    for members in groups.values():
        ordered = tuple(sorted(members))
        for cp in ordered:
            variants[cp] = ordered
    return _runs(digit), _runs(word), _runs(space), variants


def python_class_ranges(letter: str) -> Ranges:
    """Ranges of Python's ``\\d``, ``\\w`` or ``\\s`` (``letter`` in ``"dws"``) for str patterns."""
    digit, word, space, _ = _scan()
    return {"d": digit, "w": word, "s": space}[letter]


def _contains(ranges: Ranges, starts: list[int], cp: int) -> bool:
    i = bisect.bisect_right(starts, cp) - 1
    return i >= 0 and ranges[i][1] >= cp


def case_closure(ranges: Ranges) -> list[tuple[int, int]]:
    """``ranges`` plus every upper/lower-case variant of the characters in it.

    Only cased characters have variants, so the work is bounded by their number
    (a few thousand), whatever the size of ``ranges``.
    """
    variants = _scan()[3]
    starts = [lo for lo, _ in ranges]
    out = list(ranges)
    for cp, group in variants.items():
        if _contains(ranges, starts, cp):
            out.extend((v, v) for v in group)
    return out
