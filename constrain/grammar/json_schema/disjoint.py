"""When oneOf branches are apart: no value meets two of them.

Part of :class:`~.emit.SchemaEmitter` (see :mod:`.emit`), which holds the state these
methods read and write; a module per concern keeps each part readable on its own.
"""

from __future__ import annotations

from typing import Any, Collection

from ...automata.byte_dfa import ByteDFA, build_byte_dfa
from ...automata.dfa_ops import intersect
from ...errors import RegexError
from ..regex import RegexNode
from .document import Loc
from .formats import FORMATS
from .spec import Spec, says_only
from .strings import SHORT_STRING, string_tree
from .trees import NOTHING
from .values import ALL_TYPES, enum_keys, narrowed_to, possible_types


_TYPE_GROUPS = tuple(map(frozenset, (("null",), ("boolean",), ("object",), ("array",), ("string",), ("number", "integer"))))

#: Enums of at most this many values are checked value by value (jsonschema) against another
#: ``oneOf`` branch's schema for the same member, to find branches that are apart.
MAX_ENUM_CHECKED = 32

#: How many nested anyOf/oneOf groups narrow the types a value may have (``_value_types``).
MAX_TYPE_DEPTH = 3

#: For each type, the Spec fields of its lower and upper bound: counts are inclusive
#: ints, number bounds ``(value, exclusive)`` pairs.
_BOUNDS = {"string": ("min_length", "max_length"), "array": ("min_items", "max_items"),
           "object": ("min_properties", "max_properties"), "number": ("minimum", "maximum"),
           "integer": ("minimum", "maximum")}


class DisjointBranches:
    """Judges ``oneOf`` branches apart (a union, not a product) by their types, tags (enum,
    const, patterns, formats), ranges and required members; and which types a record's
    values may have, which every judgment reads first."""

    def _disjoint_types(self, branches: list[tuple[Spec, tuple[str, ...]]], chain: tuple[str, ...]) -> frozenset[str]:
        """The types for which no value meets two of ``branches`` (:meth:`_disjoint` on the
        branches narrowed to each type in turn; ``number`` and ``integer`` go together)."""
        apart: frozenset[str] = frozenset()
        for group in _TYPE_GROUPS:
            narrowed = [narrowed_to(branch, group) for branch, _ in branches]
            if all(self._disjoint(a, b, chain) for i, a in enumerate(narrowed) for b in narrowed[i + 1:]):
                apart |= group
        return apart

    def _disjoint(self, a: Spec, b: Spec, chain: tuple[str, ...], depth: int = 2) -> bool:
        """Whether no value meets both records, judged from what surely holds (conservative):
        their types and enums, and (for objects) a member one requires whose values the
        other's schema for that member excludes, ``depth`` levels down.  In schema order
        also ranges that cannot meet, string languages with an empty product, and members
        one requires that the other's ``not: {required}`` refuses (:meth:`_apart_by_values`)."""
        if (a.impossible and not a.depth_limited) or (b.impossible and not b.depth_limited):
            return True  # a record no value meets
        if a.impossible or b.impossible:  # a record cut by the recursion bound is not judged here
            return False
        common = self._value_types(a) & self._value_types(b)
        if not common:
            return True
        keys_a, keys_b = enum_keys(a), enum_keys(b)
        if keys_a is not None and keys_b is not None and not keys_a & keys_b:
            return True
        for one, other in ((a, b), (b, a)):
            if one.enums and len(one.enums[0]) <= MAX_ENUM_CHECKED:
                # A tag that is an enum against one that is a schema ("changes": ["deleted"]
                # against an array of other words): apart when no listed value meets the other.
                if not any(self._admits(other, value) for value in self._enum_values(one)):
                    return True
        if not self.any_order and self._apart_by_values(a, b, common):
            return True
        if depth == 0:
            return False
        for one, other in ((a, b), (b, a)):
            if one.types is not None and one.types <= {"object"}:
                for name in sorted(one.required):
                    mine = self._record(self._locs_for_key(one, name), chain)
                    theirs = self._record(self._locs_for_key(other, name), chain)
                    if self._disjoint(mine, theirs, chain, depth - 1):
                        return True
        return False

    def _apart_by_values(self, a: Spec, b: Spec, common: frozenset[str]) -> bool:
        """Whether ranges (numbers, lengths, counts), string languages or, for objects, a
        ``not: {required}`` of one against the other's required members keep ``a`` and
        ``b`` apart (``common``: the types both may have).

        Only in schema order: there the union of apart variants is determinised into one
        automaton, never worse than their product.  In any order each object variant is a
        member loop of its own, and a union keeps every variant whose members were
        written so far alive until its tag comes: Github_ultra o17072's 41 libnoise
        modules, tagged by patterns, then took masks of 2.2 s, against 0.55 ms as the
        member groups (one loop) they were before.
        """
        if _bounds_apart(a, b, common) or common == {"string"} and self._strings_apart(a, b):
            return True
        return any(one.types is not None and one.types <= {"object"} and _refuses_all_of(other, one.required.keys())
                   for one, other in ((a, b), (b, a)))

    def _strings_apart(self, a: Spec, b: Spec) -> bool:
        """Whether no string meets both records' patterns, formats and lengths (a tag
        written as a pattern: ``"type": {"pattern": "^SEQ$"}`` against ``"^CHOICE$"``).

        Each side's language over-approximates its record (its other keywords are left
        out), so languages apart mean values apart: a string both allow would have its
        ``json.dumps`` spelling, which every string language holds, in both.  Records
        with no pattern or format are not judged here.
        """
        sides = [self._string_language(spec) for spec in (a, b)]
        if any(side is NOTHING for side in sides):
            return True
        if sides[0] is None or sides[1] is None:
            return False
        try:
            return intersect(sides[0], sides[1]) is None
        except RegexError:  # past the state limit: not judged
            return False

    def _string_language(self, spec: Spec) -> ByteDFA | RegexNode | None:
        """The DFA of the strings ``spec``'s patterns, known formats and short lengths
        allow (memoised by them); NOTHING where no string meets them; None where it has
        no pattern or format, or it cannot be built."""
        patterns = tuple(sorted({pattern for pattern, _ in spec.patterns}))
        formats = tuple(sorted({name for name, _ in spec.formats if name in FORMATS}))
        if not (patterns or formats):
            return None
        short = spec.max_length is not None and spec.max_length <= SHORT_STRING
        low, high = (spec.min_length, spec.max_length) if short else (0, None)  # long counts: left out (wider)
        key = (low, high, patterns, formats)
        if key not in self._string_languages:
            try:
                tree = string_tree(low, high, list(patterns), list(formats))
                self._string_languages[key] = NOTHING if tree is NOTHING else build_byte_dfa(tree)
            except RegexError:
                self._string_languages[key] = None
        return self._string_languages[key]

    def _judged(self, rest: Spec, branch: Spec, loc: Loc) -> Spec | None:
        """The record that stands for ``branch`` (``loc`` merged into ``rest``) when judging
        which branches no value meets together: itself, unless the recursion bound cut it.

        A cut record tells nothing of its values, so it was apart from no other branch: a
        ``oneOf`` of an object definition and scalars, met at the bound, was a product
        over every level above (JsonSchemaStore web-types ran past the timeout).  Its types
        are still known: those of ``loc`` read from a fresh chain that the rest allows.  It
        stands in as any value of those types (more values than it has, so what is apart
        from it is apart from the branch), and None when there are none (it meets no value).
        """
        if not (branch.impossible and branch.depth_limited):
            return branch
        fresh = self._record([loc], ())
        if fresh.impossible:
            return branch
        types = self._value_types(fresh) & self._value_types(rest)
        return Spec(types=types) if types else None

    def _value_types(self, spec: Spec, depth: int = MAX_TYPE_DEPTH) -> frozenset[str]:
        """Types a value meeting ``spec`` may have: :func:`possible_types`, narrowed by its
        ``anyOf``/``oneOf`` groups (a value meets some branch of each), ``depth`` groups down.

        ``{"oneOf": [{"$ref": "#/definitions/x"}, {"type": "array", "items": {"$ref": ...}}]}``
        where ``x`` is a ``oneOf`` of an object and scalars is a union of types no value
        meets twice; judged on the record's own ``type`` alone, it was a product over
        recursive definitions (JsonSchemaStore web-types ran past the timeout).
        """
        types = possible_types(spec)
        if depth == 0:
            return types
        for group in spec.any_of + spec.one_of:
            types = types & self._group_types(group, depth)
            if not types:
                break
        return types

    def _group_types(self, group: Loc, depth: int) -> frozenset[str]:
        """The types a value meeting some branch of ``group`` may have (memoised: a
        group's branches are the same schemas wherever it is reached, and the records are
        walked from a fresh chain, whose cuts only ever widen the answer)."""
        key = (group.key, depth)
        types = self._group_types_memo.get(key)
        if types is None:
            self._group_types_memo[key] = ALL_TYPES  # a group inside its own branch: no narrowing
            branches = (self._record([group.child(i)], ()) for i in range(len(group.node)))
            types = frozenset().union(*(ALL_TYPES if branch.impossible else self._value_types(branch, depth - 1)
                                        for branch in branches))
            self._group_types_memo[key] = types
        return types


def _refuses_all_of(spec: Spec, names: Collection[str]) -> bool:
    """Whether a pending ``not`` of ``spec`` refuses every object that holds all of
    ``names``: ``"not": {"required": R}``, or ``"not": {"anyOf": [{"required": R}, ...]}``
    (the "exactly one of these members" idiom), with some ``R`` among ``names``."""
    for loc in spec.nots:
        node = loc.node
        branches = node.get("anyOf") if says_only(node, "anyOf") else [node]
        for branch in branches if isinstance(branches, list) else ():
            required = branch.get("required") if says_only(branch, "required") else None
            if isinstance(required, list) and all(isinstance(n, str) and n in names for n in required):
                return True
    return False


def _bounds_apart(a: Spec, b: Spec, common: frozenset[str]) -> bool:
    """Whether, for every type in ``common`` (the types both records allow), one record's
    range (lengths, item or member counts, numbers) ends before the other's begins."""
    def apart(low_field: str, high_field: str) -> bool:
        return any(_below(getattr(one, high_field), getattr(other, low_field)) for one, other in ((a, b), (b, a)))
    return bool(common) and common <= _BOUNDS.keys() and all(apart(*_BOUNDS[name]) for name in common)


def _below(high: Any, low: Any) -> bool:
    """Whether every value under the upper bound ``high`` is below every value over the
    lower bound ``low`` (ints, or ``(value, exclusive)`` pairs; None: unbounded)."""
    if high is None or low is None:
        return False
    if not isinstance(high, tuple):
        return high < low
    return high[0] < low[0] or (high[0] == low[0] and (high[1] or low[1]))
