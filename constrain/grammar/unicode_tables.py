"""Unicode tables for Python-dialect regexes, case-insensitive matching and ECMA-262
property escapes (``\\p{...}``).

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

__all__ = ["python_class_ranges", "case_closure", "property_ranges", "UnknownProperty"]

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


# -- ECMA-262 property escapes -------------------------------------------------------------------
# General_Category values and their aliases (Unicode's PropertyValueAliases.txt, which
# ECMA-262's tables follow): short name, long name, other aliases; the groups (one
# letter) are unions of their subcategories (LC: Lu | Ll | Lt).
_GENERAL_CATEGORIES = (
    ("C", "Other"), ("Cc", "Control", "cntrl"), ("Cf", "Format"), ("Cn", "Unassigned"), ("Co", "Private_Use"),
    ("Cs", "Surrogate"), ("L", "Letter"), ("LC", "Cased_Letter"), ("Ll", "Lowercase_Letter"),
    ("Lm", "Modifier_Letter"), ("Lo", "Other_Letter"), ("Lt", "Titlecase_Letter"), ("Lu", "Uppercase_Letter"),
    ("M", "Mark", "Combining_Mark"), ("Mc", "Spacing_Mark"), ("Me", "Enclosing_Mark"), ("Mn", "Nonspacing_Mark"),
    ("N", "Number"), ("Nd", "Decimal_Number", "digit"), ("Nl", "Letter_Number"), ("No", "Other_Number"),
    ("P", "Punctuation", "punct"), ("Pc", "Connector_Punctuation"), ("Pd", "Dash_Punctuation"),
    ("Pe", "Close_Punctuation"), ("Pf", "Final_Punctuation"), ("Pi", "Initial_Punctuation"),
    ("Po", "Other_Punctuation"), ("Ps", "Open_Punctuation"), ("S", "Symbol"), ("Sc", "Currency_Symbol"),
    ("Sk", "Modifier_Symbol"), ("Sm", "Math_Symbol"), ("So", "Other_Symbol"), ("Z", "Separator"),
    ("Zl", "Line_Separator"), ("Zp", "Paragraph_Separator"), ("Zs", "Space_Separator"),
)
# Binary properties that follow from the general categories alone (White_Space is its
# fixed list: the Z categories plus the C0/C1 controls that act as spaces).
_WHITE_SPACE_CONTROLS: Ranges = ((0x09, 0x0D), (0x85, 0x85))


class UnknownProperty(ValueError):
    """A ``\\p{...}`` name this engine has no exact table for (scripts, most binary properties)."""


def _loose(name: str) -> str:
    """Unicode's loose matching of property names (UAX #44 LM3): case, spaces, ``_`` and ``-`` ignored."""
    return "".join(ch for ch in name.lower() if ch not in " _-")


@lru_cache(maxsize=1)
def _category_aliases() -> dict[str, str]:
    aliases = {}
    for names in _GENERAL_CATEGORIES:
        for name in names:
            aliases[_loose(name)] = names[0]
    return aliases


@lru_cache(maxsize=1)
def _category_table() -> dict[str, Ranges]:
    """Ranges of every two-letter General_Category, from the interpreter's ``unicodedata``
    (one pass over all code points, once per process, only when a pattern uses ``\\p``)."""
    import unicodedata

    runs: dict[str, list[tuple[int, int]]] = {}
    current, start = None, 0
    for cp in range(_MAX + 1):
        category = unicodedata.category(chr(cp))
        if category != current:
            if current is not None:
                runs.setdefault(current, []).append((start, cp - 1))
            current, start = category, cp
    runs.setdefault(current, []).append((start, _MAX))
    return {name: tuple(ranges) for name, ranges in runs.items()}


def _union(*parts: Ranges) -> Ranges:
    from .regex import normalize_ranges  # regex imports this module where it needs it

    return normalize_ranges([r for part in parts for r in part])


def property_ranges(name: str) -> Ranges:
    """The code points of ECMA-262's ``\\p{name}``: a General_Category value by any of
    its aliases (``L``, ``Letter``, ``General_Category=Lu``, ``gc=digit``), or one of
    ``Any``, ``ASCII``, ``Assigned``, ``White_Space``.  Names are matched loosely, as
    Python's ``regex`` module and Unicode's LM3 do (``\\p{letter}`` is ``\\p{Letter}``).
    Tables come from the running interpreter's Unicode database.

    Raises
    ------
    UnknownProperty
        For other properties (``Script=Greek``, ``Alphabetic``...): no exact table here.
    """
    key, _, value = name.partition("=")
    if value:
        if _loose(key) not in ("generalcategory", "gc"):
            raise UnknownProperty(f"property {key!r} (only General_Category values and Any, ASCII, Assigned, "
                                  "White_Space are supported)")
        name = value
    loose = _loose(name)
    if not value:
        if loose == "any":
            return ((0, _MAX),)
        if loose == "ascii":
            return ((0, 0x7F),)
    table = _category_table()
    if not value and loose in ("assigned", "whitespace"):
        if loose == "assigned":
            return _union(*(ranges for category, ranges in table.items() if category != "Cn"))
        return _union(_WHITE_SPACE_CONTROLS, *(table.get(c, ()) for c in ("Zs", "Zl", "Zp")))
    category = _category_aliases().get(loose)
    if category is None:
        raise UnknownProperty(f"property {name!r} (only General_Category values and Any, ASCII, Assigned, "
                              "White_Space are supported)")
    if category == "LC":
        return _union(*(table.get(c, ()) for c in ("Lu", "Ll", "Lt")))
    if len(category) == 1:
        return _union(*(ranges for c, ranges in table.items() if c[0] == category))
    return table.get(category, ())
