"""A schema node flattened into one record of constraints, and ``allOf`` as merging.

``allOf`` must be *merged*, not concatenated or intersected as text: two object
schemas with different property lists describe the same object with its keys
in one order, so the merged record lists the properties of both (first the
earlier branch's) and keeps, for a key only one branch names, what the other
branch says of keys it does not name (its ``patternProperties`` and
``additionalProperties``: kept per branch in ``key_rules``).  Everything that
is not a merge (``anyOf``, ``oneOf``, ``not``, conditionals, dependencies) stays
as a list of pending combinators that the emitter expands one at a time.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from dataclasses import fields as dataclass_fields
from decimal import Decimal
from typing import Any

from .content import JSON_MEDIA_TYPE
from .document import Loc, SchemaDocument

__all__ = ["Spec", "KeyRule", "SpecWalk", "spec_of", "copy_spec", "merge_orders", "absorption_order", "place_branch",
           "group_branches", "MemberGroup", "ref_keyword", "constraining_keywords", "says_only", "admits_nothing",
           "Slots", "NO_SLOTS", "TYPES", "ANNOTATION_KEYWORDS", "allowed_types", "VARYING_APPLICATORS", "REF_KEYWORDS"]

TYPES = ("null", "boolean", "object", "array", "string", "number", "integer")
ANNOTATION_KEYWORDS = {
    "$schema", "$id", "id", "$comment", "$defs", "definitions", "title", "description", "default", "examples",
    "readOnly", "writeOnly", "deprecated", "contentEncoding", "contentMediaType", "contentSchema", "$anchor",
    "$dynamicAnchor", "$vocabulary", "$recursiveAnchor", "example",
}
# Keywords we recognise; anything else in a schema is an unknown keyword (ignored, as validators do).
_KNOWN = ANNOTATION_KEYWORDS | {
    "type", "enum", "const", "properties", "required", "additionalProperties", "patternProperties",
    "propertyNames", "minProperties", "maxProperties", "items", "prefixItems", "additionalItems", "minItems",
    "maxItems", "contains", "minContains", "maxContains", "uniqueItems", "anyOf", "oneOf", "allOf", "not", "if",
    "then", "else", "dependentRequired", "dependentSchemas", "dependencies", "$ref", "minLength", "maxLength",
    "pattern", "format", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf",
    "unevaluatedProperties", "unevaluatedItems", "$recursiveRef", "$dynamicRef",
}


@dataclass(frozen=True)
class KeyRule:
    """What one merged branch says about keys it does not list in ``properties``."""

    names: frozenset[str]          # the branch's own property names
    patterns: tuple[tuple[str, Loc], ...]
    additional: Loc | None         # None: any value (additionalProperties absent or true)


@dataclass(frozen=True)
class Slots:
    """Member names written at fixed positions, by path: shared by the operands of a
    product so that one value has one text in all of them (see :mod:`.slots`)."""

    names: tuple[str, ...] = ()
    members: tuple[tuple[str, "Slots"], ...] = ()  # below a slotted name
    extra: "Slots | None" = None                   # below members not slotted
    items: "Slots | None" = None                   # below array items

    def member(self, name: str) -> "Slots":
        """The slots below the member ``name`` (an unslotted name is an extra member)."""
        for member, below in self.members:
            if member == name:
                return below
        return self.extra or NO_SLOTS

    def __bool__(self) -> bool:
        return bool(self.names or self.members or self.extra or self.items)


NO_SLOTS = Slots()


@dataclass
class Spec:
    """All constraints on one JSON value, after merging ``allOf`` and ``$ref``."""

    sources: list[Loc] = field(default_factory=list)
    types: frozenset[str] | None = None
    enums: list[list[Any]] = field(default_factory=list)
    # objects
    properties: dict[str, list[Loc]] = field(default_factory=dict)
    # Required names in order of first mention (an ordered set): names only ``required``
    # lists (no ``properties`` entry) are written in this order, the author's.
    required: dict[str, None] = field(default_factory=dict)
    key_rules: list[KeyRule] = field(default_factory=list)
    property_names: list[Loc] = field(default_factory=list)
    min_properties: int = 0
    max_properties: int | None = None
    # arrays
    prefix_items: list[list[Loc]] = field(default_factory=list)
    rest_items: list[Loc] = field(default_factory=list)
    prefix_len_limits: list[int] = field(default_factory=list)  # branches whose items stop after their prefix
    min_items: int = 0
    max_items: int | None = None
    contains: list[tuple[Loc, int, int | None]] = field(default_factory=list)
    unique_items: Loc | None = None
    # strings
    min_length: int = 0
    max_length: int | None = None
    patterns: list[tuple[str, Loc]] = field(default_factory=list)
    formats: list[tuple[str, Loc]] = field(default_factory=list)
    json_content: list[Loc] = field(default_factory=list)  # draft 7 contentMediaType: application/json
    # numbers
    minimum: tuple[Decimal, bool] | None = None
    maximum: tuple[Decimal, bool] | None = None
    multiples: list[tuple[Decimal, Loc]] = field(default_factory=list)
    # pending combinators, expanded by the emitter
    any_of: list[Loc] = field(default_factory=list)      # each: the Loc of an anyOf array
    one_of: list[Loc] = field(default_factory=list)
    nots: list[Loc] = field(default_factory=list)
    # For each pending anyOf/oneOf (by ``Loc.key``): the names listed when it was met.
    # Its branches' members go after those and before names met later (``place_branch``).
    listed_before: dict[str, frozenset[str]] = field(default_factory=dict)
    # For each pending anyOf/oneOf: the names its own node's ``properties`` lists but
    # writes after it (``{"anyOf": [...], "properties": {...}}``); see ``emit._branch``.
    own_after: dict[str, frozenset[str]] = field(default_factory=dict)
    # Member groups: anyOf/oneOf/if-then-else whose branches only require and constrain
    # members, enforced by the object's member graph instead of one copy of the object per
    # branch or a product.
    presence: list["MemberGroup"] = field(default_factory=list)
    conditionals: list[Loc] = field(default_factory=list)  # schemas holding if/then/else
    dependencies: list[tuple[Loc, str, str]] = field(default_factory=list)  # (loc, key, keyword)
    unsupported: list[tuple[Loc, str, str]] = field(default_factory=list)  # (loc, keyword, why)
    # Subschemas the value must also meet as records of their own: an unevaluated* below
    # the root whose subtree evaluates what varies sees that subtree only (emit: a product).
    operands: list[Loc] = field(default_factory=list)
    # unevaluated*: applied at emission, once every applicator has been merged or expanded
    # into this record, so "evaluated" is exactly what the merged record lists.
    unevaluated_properties: list[Loc] = field(default_factory=list)
    unevaluated_items: list[Loc] = field(default_factory=list)
    evaluates_all_keys: bool = False  # some merged source has additionalProperties (even true)
    evaluates_all_items: bool = False  # a subschema's unevaluatedItems (an operand) evaluated them
    slots: Slots = NO_SLOTS  # member positions shared with other operands (see slots.py)
    impossible: bool = False
    depth_limited: bool = False  # impossible only because recursion was unrolled to its bound
    merged_refs: frozenset[str] = frozenset()  # $ref targets merged into this record (this value)

    def require(self, names: Iterable[Any]) -> None:
        """Add the string names of a ``required`` list, keeping the first mention's place."""
        for name in names:
            if isinstance(name, str):
                self.required.setdefault(name)

    def without(self, **fields: Any) -> "Spec":
        """A copy with some pending lists replaced (the emitter expands them one by one).

        A shallow copy of the attributes, not :func:`dataclasses.replace`, which runs
        ``__init__`` over all forty fields (5 µs against 1 µs; JsonSchemaStore web-types
        makes half a million copies)."""
        unknown = fields.keys() - _SPEC_FIELDS
        if unknown:
            raise TypeError(f"Spec has no fields {sorted(unknown)}")
        copied = object.__new__(type(self))
        copied.__dict__.update(self.__dict__)
        copied.__dict__.update(fields)
        return copied


_SPEC_FIELDS = frozenset(f.name for f in dataclass_fields(Spec))


def spec_of(doc: SchemaDocument, loc: Loc, chain: tuple[str, ...] = (), max_recursion: int = 3) -> tuple[Spec, tuple[str, ...]]:
    """The merged Spec of one schema, following ``$ref`` and ``allOf``.

    ``chain`` lists the ``$ref`` targets expanded on the way down from the root;
    a target met more than ``max_recursion`` times makes the spec impossible
    (recursive schemas are unrolled to that depth).  Returns the chain extended
    with the targets this node went through, for its children.
    """
    walk = SpecWalk(doc, list(chain), max_recursion)
    spec = walk.absorb(Spec(), loc, frozenset())
    return spec, tuple(walk.chain)


#: SpecWalk.root when no schema is the record's root.
_NO_ROOT = object()


class SpecWalk:
    """One absorption: the reference chain so far and the recursion bound."""

    def __init__(self, doc: SchemaDocument, chain: list[str], max_recursion: int, rooted: bool = True) -> None:
        """``rooted=False``: no schema the walk absorbs is the record's root (several
        schemas apply to one value), so each unevaluated* sees only its own subtree."""
        self.doc = doc
        self.chain = chain
        self.max_recursion = max_recursion
        # unevaluated* sees the whole record only at the schema the walk started from
        self.root: Loc | None | object = None if rooted else _NO_ROOT

    def absorb(self, spec: Spec, loc: Loc, active: frozenset[str]) -> Spec:
        """Merge the constraints of ``loc`` (and its ``$ref``/``allOf``) into ``spec``."""
        node = loc.node
        if node is True or node == {}:
            return spec
        if node is False:
            spec.impossible = True
            return spec
        if not isinstance(node, dict):
            raise loc.error(f"a schema must be an object or a boolean, got {type(node).__name__}")
        if self.root is None and not spec.sources:
            self.root = loc  # a fresh record: this schema's subtree is all it will hold
        if "$dynamicRef" in node and "$ref" in node:
            spec.unsupported.append((loc, "$dynamicRef", "beside $ref in one schema"))
        keyword = ref_keyword(node)
        if keyword is not None and self.doc.draft <= 7:
            return self.follow(spec, loc, keyword, active)  # before 2019-09, $ref overrides its siblings
        if "allOf" in node and (not isinstance(node["allOf"], list) or not node["allOf"]):
            raise loc.error("allOf must be a non-empty array", "allOf")
        for part in absorption_order(node):
            if part == "$ref":
                spec = self.follow(spec, loc, keyword, active)
                if spec.impossible:
                    return spec
            elif part == "allOf":
                for i, _ in enumerate(node["allOf"]):
                    spec = self.absorb(spec, loc.child("allOf", i), active)
            else:
                spec.sources.append(loc)
                _absorb_keywords(self.doc, spec, loc)
                if loc is not self.root:
                    self._unevaluated_below_root(spec, loc)
        return spec

    def _unevaluated_below_root(self, spec: Spec, loc: Loc) -> None:
        """unevaluated* below the walk's root sees only its own subschema (``loc``'s subtree).

        At the root, the merged record is exactly the root's subtree (its ``$ref``,
        ``allOf`` and later its expanded branches), so "evaluated" is what the record
        lists.  Below it, the record also holds siblings the keyword must not see.  Where
        the subtree evaluates the same members whatever the value (no ``anyOf``,
        ``oneOf``, ``if`` or dependent schema in it), the keyword is an
        ``additionalProperties`` over the subtree's names and patterns: a key rule of the
        record, after which every member counts as evaluated (what the keyword passes it
        evaluates).  A definition closing itself (``{"allOf": [{"$ref": base}],
        "unevaluatedProperties": false}``) reached through a ``$ref`` is the common case.
        Otherwise the subschema is an operand of its own (``operands``): the value meets
        it as a record rooted there, where the keyword is exact, and the emitter
        intersects the two languages.
        """
        own = None
        for keyword, pending in (("unevaluatedProperties", spec.unevaluated_properties),
                                 ("unevaluatedItems", spec.unevaluated_items)):
            if keyword not in loc.node:
                continue
            closing = loc.child(keyword)
            pending[:] = [entry for entry in pending if entry.pointer != closing.pointer]
            if own is None:  # the subtree's own record, once for both keywords
                own = SpecWalk(self.doc, list(self.chain), self.max_recursion).absorb(Spec(), loc, frozenset())
            if _evaluation_varies(own, keyword):
                # Where the operand holds, its keyword has evaluated every member (item) it left.
                if loc not in spec.operands:
                    spec.operands.append(loc)
                if keyword == "unevaluatedProperties":
                    spec.evaluates_all_keys = True
                else:
                    spec.evaluates_all_items = True
            elif keyword == "unevaluatedProperties":
                _close_members(spec, own, closing)
            else:
                _close_items(spec, own, closing)

    def follow(self, spec: Spec, loc: Loc, keyword: str, active: frozenset[str]) -> Spec:
        target = self.doc.resolve(loc, loc.node[keyword], keyword)
        key = target.key
        if key in active:
            raise loc.error(f"{keyword} {loc.node[keyword]!r} refers back to itself without any structure between", keyword)
        if key in spec.merged_refs:
            # Merged into this value's record already (two allOf branches, or an allOf
            # and an if, that $ref one definition): allOf of a schema with itself is that
            # schema, and counting it twice would cut a recursion a level early.
            return spec
        if self.chain.count(key) >= self.max_recursion:
            spec.impossible = True
            spec.depth_limited = True
            return spec
        self.chain.append(key)
        spec.merged_refs = spec.merged_refs | {key}
        return self.absorb(spec, target, active | {key})


def _absorb_keywords(doc: SchemaDocument, spec: Spec, loc: Loc) -> None:
    node = loc.node
    _absorb_type(spec, loc)
    if "enum" in node:
        if not isinstance(node["enum"], list):
            raise loc.error("enum must be an array", "enum")
        spec.enums.append(list(node["enum"]))
    if "const" in node:
        spec.enums.append([node["const"]])
    # The names listed before this node's properties, for a combinator written before them.
    listed_earlier = frozenset(spec.properties) if "anyOf" in node or "oneOf" in node else frozenset()
    _absorb_object(doc, spec, loc)
    _absorb_array(doc, spec, loc)
    _absorb_string(spec, loc)
    if loc.draft == 7:
        _absorb_content(doc, spec, loc)
    _absorb_number(spec, loc)
    for keyword, target in (("anyOf", spec.any_of), ("oneOf", spec.one_of)):
        if keyword in node:
            if not isinstance(node[keyword], list) or not node[keyword]:
                raise loc.error(f"{keyword} must be a non-empty array", keyword)
            group = loc.child(keyword)
            target.append(group)
            spec.listed_before[group.key] = frozenset(spec.properties)
            if _written_before(node, keyword, "properties"):
                spec.own_after[group.key] = frozenset(spec.properties) - listed_earlier
    if "not" in node:
        spec.nots.append(loc.child("not"))
    if "if" in node:
        spec.conditionals.append(loc)
    if "unevaluatedProperties" in node:
        spec.unevaluated_properties.append(loc.child("unevaluatedProperties"))
    if "unevaluatedItems" in node:
        spec.unevaluated_items.append(loc.child("unevaluatedItems"))


def _written_before(node: dict, first: str, second: str) -> bool:
    """Whether ``node`` writes keyword ``first`` (present) before keyword ``second``.

    A branch stands where its combinator is written: ``{"anyOf": [base], "properties":
    {...}}`` extends a base, and instances write the base's members first (the same
    document order as :func:`absorption_order`).
    """
    keys = list(node)
    return second in node and keys.index(first) < keys.index(second)


#: The reference keywords, in the order :func:`ref_keyword` prefers them.
REF_KEYWORDS = ("$ref", "$recursiveRef", "$dynamicRef")

#: The keywords that evaluate members (items), and the applicators that may hold them.
_EVALUATING = {"unevaluatedProperties": frozenset(("properties", "patternProperties", "additionalProperties",
                                                   "unevaluatedProperties")),
               "unevaluatedItems": frozenset(("prefixItems", "items", "additionalItems", "contains",
                                              "unevaluatedItems"))}
_APPLICATORS = frozenset(("allOf", "anyOf", "oneOf", "not", "if", "then", "else", "dependentSchemas", "dependencies",
                          *REF_KEYWORDS))


#: The record's lists of applicators whose evaluation for unevaluated* depends on the
#: value (which branch holds, whether the ``if`` holds, whether a dependency's key is
#: there, which items contain), kept pending until the emitter expands them; the emitter
#: moves member groups from the first three into ``presence``.  Both questions asked of
#: them read this one list: :func:`_evaluation_varies` here, and ``emit._evaluated``.
VARYING_APPLICATORS = ("any_of", "one_of", "conditionals", "dependencies", "contains", "presence")


def _evaluation_varies(own: Spec, keyword: str) -> bool:
    """Whether a subschema's record holds applicators whose evaluation (for ``keyword``)
    depends on the value: any entry of :data:`VARYING_APPLICATORS` except an anyOf or
    oneOf none of whose branches evaluates anything (``required`` alone), a
    ``dependencies`` entry that only requires names, and contains for properties."""
    evaluating = _EVALUATING[keyword] | _APPLICATORS

    def evaluates(branch: Any) -> bool:
        return isinstance(branch, dict) and not evaluating.isdisjoint(branch)

    def varies(kind: str, entry: Any) -> bool:
        if kind in ("any_of", "one_of"):
            return not isinstance(entry.node, list) or any(map(evaluates, entry.node))
        if kind == "dependencies":
            loc, key, word = entry
            return not isinstance(loc.node[word][key], list)
        if kind == "contains":
            return keyword == "unevaluatedItems"
        return True

    return any(varies(kind, entry) for kind in VARYING_APPLICATORS for entry in getattr(own, kind))


def _close_members(spec: Spec, own: Spec, closing: Loc) -> None:
    """A subschema's unevaluatedProperties (``closing``) in the record ``spec``: members its
    own record ``own`` neither lists nor pattern-matches meet it; then all are evaluated."""
    if own.evaluates_all_keys:
        return  # nothing is left to it
    if closing.node is not True and closing.node != {}:
        patterns = tuple(pattern for rule in own.key_rules for pattern in rule.patterns)
        spec.key_rules.append(KeyRule(frozenset(own.properties), patterns, closing))
    spec.evaluates_all_keys = True


def _close_items(spec: Spec, own: Spec, closing: Loc) -> None:
    """A subschema's unevaluatedItems (``closing``) in the record ``spec``: items past its
    own record's prefix meet it, and then every item is evaluated (``rest_items``)."""
    if own.rest_items:
        return  # nothing is left to it
    while len(spec.prefix_items) < len(own.prefix_items):  # its prefix, before the record has read all of it
        spec.prefix_items.append(list(spec.rest_items))
    for slot in spec.prefix_items[len(own.prefix_items):]:
        slot.append(closing)
    spec.rest_items.append(closing)


def _absorb_type(spec: Spec, loc: Loc) -> None:
    declared = loc.node.get("type")
    if declared is None:
        return
    allowed = allowed_types(declared)
    if allowed is None:
        raise loc.error(f"type must be one of {', '.join(TYPES)} or a list of them, got {declared!r}", "type")
    spec.types = allowed if spec.types is None else spec.types & allowed


def allowed_types(declared: Any) -> frozenset[str] | None:
    """The types a ``type`` value allows (``"number"`` brings ``"integer"``: an integer is
    a number), or None where it is no type name nor a list of them."""
    names = [declared] if isinstance(declared, str) else declared
    if not isinstance(names, list) or not all(isinstance(n, str) and n in TYPES for n in names):
        return None
    return frozenset(names) | (frozenset({"integer"}) if "number" in names else frozenset())


def _count(loc: Loc, keyword: str) -> int | None:
    value = loc.node.get(keyword)
    if value is None:
        return None
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise loc.error(f"{keyword} must be a non-negative integer, got {value!r}", keyword)
    return value


def _tighten_counts(spec: Spec, loc: Loc, what: str, low_keyword: str, high_keyword: str) -> None:
    """Merge a min/max count pair (``spec.min_<what>``/``max_<what>``): the tighter bound wins."""
    low, high = _count(loc, low_keyword), _count(loc, high_keyword)
    if low is not None:
        setattr(spec, f"min_{what}", max(getattr(spec, f"min_{what}"), low))
    if high is not None:
        current = getattr(spec, f"max_{what}")
        setattr(spec, f"max_{what}", high if current is None else min(current, high))


def constraining_keywords(node: dict) -> set[str]:
    """The keywords of a schema object other than annotations: what it says of its values."""
    return node.keys() - ANNOTATION_KEYWORDS


def says_only(node: Any, keyword: str) -> bool:
    """Whether ``node`` is a schema object whose one constraining keyword is ``keyword``."""
    return isinstance(node, dict) and constraining_keywords(node) == {keyword}


def admits_nothing(node: Any) -> bool:
    """Whether a schema surely admits no value: ``false``, ``{"not": {}}``, ``{"not": true}``."""
    return node is False or (says_only(node, "not") and (node["not"] is True or node["not"] == {}))


def ref_keyword(node: dict) -> str | None:
    """The reference keyword a schema object uses, if any (``$ref`` first; dynamic ones are
    resolved where the value's path cannot change them, :meth:`SchemaDocument.resolve`)."""
    return next((k for k in REF_KEYWORDS if k in node), None)


def absorption_order(node: dict) -> list[str]:
    """``"$ref"``, ``"allOf"`` and ``"own"`` (the schema's other keywords) in the order the
    schema writes ``$ref``/``$recursiveRef``, ``allOf`` and ``properties``.

    Only the merged member order depends on it: ``{"allOf": [{"$ref": base}],
    "properties": {...}}`` extends a base, and instances write the base's members
    first, while ``{"properties": {...}, "allOf": [...]}`` lists its own first.  This is
    document order, the convention llguidance follows too.
    """
    keys = list(node)
    ref = ref_keyword(node)
    parts = [("own", keys.index("properties") if "properties" in node else -1)]
    if ref is not None:
        parts.append(("$ref", keys.index(ref)))
    if "allOf" in node:
        parts.append(("allOf", keys.index("allOf")))
    return [name for name, _ in sorted(parts, key=lambda part: part[1])]


def merge_orders(orders: list[list[str]]) -> list[str]:
    """Every name of ``orders`` in one order that keeps each given order where they agree.

    Objects are written with their members in schema order, and a merged record
    (``allOf`` with siblings, ``$ref`` with siblings, branches sharing key slots)
    has several listed orders: ``{"allOf": [{"$ref": base}], "properties": {extra}}``
    lists ``extra`` before ``base``'s members, although instances write the base
    members first, as the referenced schema lists them.  So the names are ordered by
    the constraints "a comes right before b in some order" (a stable topological
    sort, earliest mention first among the free names); a constraint that
    contradicts earlier ones (a cycle) is dropped, so the earlier order wins.
    """
    first: dict[str, int] = {}
    successors: dict[str, list[str]] = {}
    for order in orders:
        for name in order:
            first.setdefault(name, len(first))
        for before, after in zip(order, order[1:]):
            if after not in successors.setdefault(before, []) and not _reaches(successors, after, before):
                successors[before].append(after)
    waiting = dict.fromkeys(first, 0)
    for names in successors.values():
        for name in names:
            waiting[name] += 1
    ready = [(first[n], n) for n in first if waiting[n] == 0]
    heapq.heapify(ready)
    out: list[str] = []
    while ready:
        name = heapq.heappop(ready)[1]
        out.append(name)
        for after in successors.get(name, ()):
            waiting[after] -= 1
            if waiting[after] == 0:
                heapq.heappush(ready, (first[after], after))
    return out


def place_branch(merged: Spec, rest: Spec, before: frozenset[str], branch_names: Sequence[str] = ()) -> Spec:
    """``merged`` (``rest`` with one branch of an anyOf/oneOf absorbed) with its members
    where the combinator stands in the schema.

    Members are written in the order the schema lists them, and a branch stands where
    its combinator does: in ``{"allOf": [{"oneOf": [...]}, {"properties": {...}}]}``
    instances write the chosen branch's members first.  Absorbing the branch last
    would put them after every name of ``rest``.  So the order is: the names ``rest``
    listed before the combinator (``before``), then the branch's names, then
    ``rest``'s later names.  Given the branch's own order (``branch_names``), a name
    both the branch and the later names list goes where the branch puts it; without
    it, later names keep their place behind the branch's new ones.
    """
    later = [name for name in rest.properties if name not in before]
    if not later:
        return merged
    listed = set(branch_names)
    order = [name for name in merged.properties if name in before]
    order += [name for name in branch_names if name not in before and name in merged.properties]
    order += [name for name in merged.properties if name not in before and name not in listed
              and name not in rest.properties]  # the branch's own new names, in the order absorbed
    order += [name for name in later if name not in listed]
    merged.properties = {name: merged.properties[name] for name in order}
    return merged


def _reaches(successors: dict[str, list[str]], start: str, goal: str) -> bool:
    seen, stack = {start}, [start]
    while stack:
        name = stack.pop()
        if name == goal:
            return True
        for after in successors.get(name, ()):
            if after not in seen:
                seen.add(after)
                stack.append(after)
    return False


def _absorb_object(doc: SchemaDocument, spec: Spec, loc: Loc) -> None:
    node = loc.node
    props = node.get("properties", {})
    if not isinstance(props, dict):
        raise loc.error("properties must be an object", "properties")
    if spec.properties and props:  # a second listed order: see merge_orders
        order = merge_orders([list(spec.properties), list(props)])
        spec.properties = {name: spec.properties.get(name, []) for name in order}
    for name in props:
        spec.properties.setdefault(name, []).append(loc.child("properties", name))
    required = node.get("required", [])
    if isinstance(required, list):
        spec.require(required)
    elif required is not True and required is not False:  # draft-3 boolean 'required' is ignored by draft-4 validators
        raise loc.error("required must be an array of strings", "required")
    patterns = node.get("patternProperties", {})
    if not isinstance(patterns, dict):
        raise loc.error("patternProperties must be an object", "patternProperties")
    additional = node.get("additionalProperties")
    if additional is not None:
        spec.evaluates_all_keys = True
    if patterns or (additional is not None and additional is not True and additional != {}):
        spec.key_rules.append(KeyRule(
            frozenset(props),
            tuple((p, loc.child("patternProperties", p)) for p in patterns),
            loc.child("additionalProperties") if additional is not None and additional is not True else None,
        ))
    if "propertyNames" in node:
        spec.property_names.append(loc.child("propertyNames"))
    _tighten_counts(spec, loc, "properties", "minProperties", "maxProperties")
    for keyword in ("dependentRequired", "dependentSchemas", "dependencies"):
        value = node.get(keyword)
        if value is None:
            continue
        if not isinstance(value, dict):
            raise loc.error(f"{keyword} must be an object", keyword)
        for key in value:
            spec.dependencies.append((loc, key, keyword))


def _absorb_array(doc: SchemaDocument, spec: Spec, loc: Loc) -> None:
    node = loc.node
    items = node.get("items")
    prefix_key = "prefixItems" if "prefixItems" in node else ("items" if isinstance(items, list) else None)
    if prefix_key is not None:
        prefix = node[prefix_key]
        for i in range(len(prefix)):
            if i == len(spec.prefix_items):
                spec.prefix_items.append(list(spec.rest_items))  # earlier branches' rest applies here too
            spec.prefix_items[i].append(loc.child(prefix_key, i))
        rest_key = "items" if prefix_key == "prefixItems" else "additionalItems"
        rest = loc.child(rest_key) if rest_key in node else None
        for j in range(len(prefix), len(spec.prefix_items)):
            if rest is not None:
                spec.prefix_items[j].append(rest)
        if rest is not None:
            spec.rest_items.append(rest)
    elif items is not None:
        child = loc.child("items")
        for slot in spec.prefix_items:
            slot.append(child)
        spec.rest_items.append(child)
    _tighten_counts(spec, loc, "items", "minItems", "maxItems")
    if "contains" in node:
        low_c = _count(loc, "minContains")
        high_c = _count(loc, "maxContains")
        spec.contains.append((loc.child("contains"), 1 if low_c is None else low_c, high_c))
    if node.get("uniqueItems") is True:
        spec.unique_items = loc


def _absorb_string(spec: Spec, loc: Loc) -> None:
    node = loc.node
    _tighten_counts(spec, loc, "length", "minLength", "maxLength")
    if "pattern" in node:
        if not isinstance(node["pattern"], str):
            raise loc.error("pattern must be a string", "pattern")
        spec.patterns.append((node["pattern"], loc))
    if "format" in node and isinstance(node["format"], str):
        spec.formats.append((node["format"], loc))


# RFC 4648 base64 with its padding, as a validator that asserts contentEncoding decodes it.
BASE64_PATTERN = r"^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$"


def _absorb_content(doc: SchemaDocument, spec: Spec, loc: Loc) -> None:
    """Draft 7's ``contentEncoding`` and ``contentMediaType`` on strings.

    Draft 7 lets validators assert them (the official suite's optional tests do; from
    2019-09 on they are annotations only), so they are not ignored silently: base64 is
    a regular language and is enforced; ``application/json`` content is a callee of its
    own (:mod:`.content`), except under an encoding (the document would be base64 of
    a JSON text), which is refused in strict mode, as other encodings are; other media
    types (which no validator checks) are annotations, with a note.
    """
    node = loc.node
    encoding, media = node.get("contentEncoding"), node.get("contentMediaType")
    if isinstance(encoding, str):
        if encoding.lower() == "base64":
            spec.patterns.append((BASE64_PATTERN, loc))
        else:
            spec.unsupported.append((loc, "contentEncoding", f"encoding {encoding!r} is not checked"))
    if isinstance(media, str):
        if media.split(";")[0].strip().lower() != JSON_MEDIA_TYPE:
            note = f"{loc.pointer or '#'}/contentMediaType: {media!r} is an annotation (not checked)"
            if note not in doc.notes:
                doc.notes.append(note)
        elif isinstance(encoding, str):
            spec.unsupported.append((loc, "contentMediaType", f"a JSON document encoded as {encoding} is not checked"))
        else:
            spec.json_content.append(loc)


def _decimal(loc: Loc, keyword: str) -> Decimal | None:
    value = loc.node.get(keyword)
    if value is None or isinstance(value, bool):
        return None
    if not isinstance(value, (int, float)):
        raise loc.error(f"{keyword} must be a number, got {value!r}", keyword)
    return Decimal(repr(value)) if isinstance(value, float) else Decimal(value)


def _absorb_number(spec: Spec, loc: Loc) -> None:
    node = loc.node
    low, high = _decimal(loc, "minimum"), _decimal(loc, "maximum")
    ex_low, ex_high = node.get("exclusiveMinimum"), node.get("exclusiveMaximum")
    if isinstance(ex_low, bool):  # draft 4: a flag on minimum
        bound_low = (low, ex_low) if low is not None else None
    else:
        bound_low = _tighter_low((low, False) if low is not None else None,
                                 (_decimal(loc, "exclusiveMinimum"), True) if ex_low is not None else None)
    if isinstance(ex_high, bool):
        bound_high = (high, ex_high) if high is not None else None
    else:
        bound_high = _tighter_high((high, False) if high is not None else None,
                                   (_decimal(loc, "exclusiveMaximum"), True) if ex_high is not None else None)
    spec.minimum = _tighter_low(spec.minimum, bound_low)
    spec.maximum = _tighter_high(spec.maximum, bound_high)
    step = _decimal(loc, "multipleOf")
    if step is not None:
        if step <= 0:
            raise loc.error("multipleOf must be greater than 0", "multipleOf")
        spec.multiples.append((step, loc))


def _tighter_low(a, b):
    if a is None or b is None:
        return a or b
    if a[0] != b[0]:
        return a if a[0] > b[0] else b
    return (a[0], a[1] or b[1])


def _tighter_high(a, b):
    if a is None or b is None:
        return a or b
    if a[0] != b[0]:
        return a if a[0] < b[0] else b
    return (a[0], a[1] or b[1])


@dataclass(frozen=True)
class MemberGroup:
    """An anyOf/oneOf (``rule``) or a conditional (``"if"``: ``loc`` holds if/then/else)
    whose ``branches`` (references followed; None: an absent ``then``/``else``, which
    always holds) only require and constrain members."""

    loc: Loc
    rule: str
    branches: tuple[Loc | None, ...]
    #: The schema the group stands for where it is not ``loc``'s own keywords (a
    #: dependency on a schema: ``{"dependentSchemas": {key: schema}}``).
    schema: Any = None

    @property
    def nodes(self) -> list[dict]:
        """The branch schemas (``{}`` for an absent one)."""
        return [branch.node if branch is not None else {} for branch in self.branches]

    @property
    def check(self) -> dict:
        """The schema the group stands for (what an enum candidate must still pass)."""
        if self.schema is not None:
            return self.schema
        if self.rule == "if":
            return {key: self.loc.node[key] for key in ("if", "then", "else") if key in self.loc.node}
        return {self.rule: self.loc.node}


def group_branches(group: Loc, rule: str) -> list[Loc | None]:
    """The branches of a member group: an anyOf/oneOf array's schemas, or a conditional's
    ``if``, ``then`` and ``else`` (None where absent: a branch that always holds)."""
    if rule == "if":
        return [group.child(key) if key in group.node else None for key in ("if", "then", "else")]
    return [group.child(i) for i in range(len(group.node))]


def dependency_names(key: str, value: Any) -> list[str]:
    """The names a dependency involves: its key and, for a list of names
    (dependentRequired, draft 4-7 ``dependencies`` arrays), the names the key requires."""
    return [key] + ([n for n in value if isinstance(n, str)] if isinstance(value, list) else [])


def copy_spec(spec: Spec) -> Spec:
    """A copy whose lists and dicts can be extended without touching ``spec``."""
    return spec.without(
        sources=list(spec.sources), enums=list(spec.enums),
        properties={k: list(v) for k, v in spec.properties.items()}, required=dict(spec.required),
        key_rules=list(spec.key_rules), property_names=list(spec.property_names),
        prefix_items=[list(p) for p in spec.prefix_items], rest_items=list(spec.rest_items),
        contains=list(spec.contains), patterns=list(spec.patterns), json_content=list(spec.json_content),
        unevaluated_properties=list(spec.unevaluated_properties), unevaluated_items=list(spec.unevaluated_items), formats=list(spec.formats),
        multiples=list(spec.multiples), any_of=list(spec.any_of), one_of=list(spec.one_of), nots=list(spec.nots),
        listed_before=dict(spec.listed_before), own_after=dict(spec.own_after),
        conditionals=list(spec.conditionals), dependencies=list(spec.dependencies),
        unsupported=list(spec.unsupported), presence=list(spec.presence), operands=list(spec.operands),
    )


def unknown_keywords(node: dict) -> list[str]:
    """Keywords of a schema object that no draft defines (validators ignore them)."""
    return [k for k in node if k not in _KNOWN]
