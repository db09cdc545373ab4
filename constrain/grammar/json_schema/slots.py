"""Shared member positions for the operands of ``oneOf``, ``not`` and ``if``, by path.

Products intersect and subtract *texts*, so a value that two operands both accept
must have the same text in both, or "A minus B" keeps A's text of a value B
accepts too.  Member order is the one freedom that differs between operands: each
schema writes its members in its own listed order.  So, before a product, every
member name that any operand lists at a path (at the top, inside a named member,
inside an unnamed member, inside array items), in any schema that can apply
there (``$ref``, ``allOf``, and the branches of nested combinators), gets one fixed
position at that path in every operand (:class:`~.spec.Slots`).  A schema that
does not list a slotted name still writes it at its slot when its own rules admit
the member; anything else is an extra member, written after the slots in any
order by every operand alike.

Recursive references are followed as deep as the operands unroll them: from the
operand's own reference chain, a reference already met ``max_recursion`` times is
where the operand's record is cut (:class:`~.spec.SpecWalk`), so every object an
operand writes has its slots.  The same count also keeps a product nested inside an
operand from fixing slots deeper than the enclosing product did: its chain holds at
least the references the enclosing walk followed to reach it, so it stops no later.
Until the eighteenth session references were followed once per path from a fresh
start, and below that each operand kept its own order: ``oneOf`` of two recursive
definitions listing ``a, b`` and ``b, a`` accepted a value two levels down that met
both, and a ``not`` nested in a ``oneOf`` branch could fix an order one level deeper
than the ``oneOf``, so the branch took away one order of a value the other branch
wrote in any order.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .document import Loc, SchemaDocument
from .spec import NO_SLOTS, Slots, Spec, absorption_order, dependency_names, merge_orders, ref_keyword

__all__ = ["shared_slots"]

# Sub-schemas that describe members of an object (by name, or unnamed) and items of an array.
_EXTRA_SCHEMAS = ("additionalProperties", "unevaluatedProperties")
_ITEM_SCHEMAS = ("additionalItems", "contains", "unevaluatedItems")
# Sub-schemas that apply to the same value as the schema holding them.
_SAME_VALUE_SCHEMAS = ("not", "if")
_BRANCHES_OF_IF = ("then", "else")  # ignored without an "if", as validators ignore them
_SAME_VALUE_LISTS = ("anyOf", "oneOf")
_DEPENDENCY_KEYWORDS = ("dependentRequired", "dependentSchemas", "dependencies")


def shared_slots(doc: SchemaDocument, base: Spec, subtracted: list[tuple[Spec, tuple[str, ...]]],
                 max_recursion: int) -> Slots:
    """The slot tree for a product whose ``subtracted`` operands (merged onto ``base``)
    are taken away from, or intersected with, other languages.

    Only the subtracted side's orders are needed: an operand written with these slots
    puts every name the subtracted side lists at the same position, and anything else
    after them, where the subtracted side has it as an extra member (any order, any
    value) or refuses it, so for a value both accept its text is also the subtracted
    side's.  ``oneOf`` subtracts every branch; ``not`` the negated schema; ``if`` the
    condition; ``contains`` intersects with its schema.  Slots already fixed by an
    enclosing combination (``base.slots``) stay first at every path: that
    combination's other operands write any new name among their extra members.
    Each operand comes with its reference chain (as the emitter's walk left it), and
    references are followed until a target is met ``max_recursion`` times, where the
    operand's record is cut.
    """
    found = _Orders()
    collector = _Collector(doc, max_recursion)
    for spec, chain in subtracted:
        collector.spec(spec, found, chain)
    return found.slots(base.slots)


@dataclass
class _Orders:
    """The listed member orders found at one path, and below it."""

    orders: list[list[str]] = field(default_factory=list)
    required: list[str] = field(default_factory=list)  # names only required keep order of first mention
    members: dict[str, "_Orders"] = field(default_factory=dict)
    extra: "_Orders | None" = None
    items: "_Orders | None" = None

    def member(self, name: str) -> "_Orders":
        return self.members.setdefault(name, _Orders())

    def extras(self) -> "_Orders":
        if self.extra is None:
            self.extra = _Orders()
        return self.extra

    def item(self) -> "_Orders":
        if self.items is None:
            self.items = _Orders()
        return self.items

    def slots(self, fixed: Slots) -> Slots:
        """One position per name: ``fixed`` first, then :func:`merge_orders` of the listed
        orders, then names only required; the same below every slotted name (whose
        value may come from an operand's unnamed-member schema, so those orders count
        too), below unnamed members and below items."""
        taken = set(fixed.names)
        names = dict.fromkeys(merge_orders([[n for n in order if n not in taken] for order in self.orders]))
        names.update(dict.fromkeys(n for n in self.required if n not in taken))
        all_names = fixed.names + tuple(names)
        members = []
        for name in all_names:
            below = _combined(self.members.get(name), self.extra)
            inner = below.slots(fixed.member(name)) if below is not None else fixed.member(name)
            if inner:
                members.append((name, inner))
        extra = self.extra.slots(fixed.extra or NO_SLOTS) if self.extra is not None else fixed.extra
        items = self.items.slots(fixed.items or NO_SLOTS) if self.items is not None else fixed.items
        return Slots(all_names, tuple(members), extra or None, items or None)


def _combined(a: _Orders | None, b: _Orders | None) -> _Orders | None:
    """Orders found under either path (a named member whose value some operand takes from its extras)."""
    if a is None or b is None:
        return a or b
    members = {name: _combined(a.members.get(name), b.members.get(name)) for name in {**a.members, **b.members}}
    return _Orders(a.orders + b.orders, a.required + b.required, members,
                   _combined(a.extra, b.extra), _combined(a.items, b.items))


class _Collector:
    """Walks schemas as the absorption does ($ref, allOf and own keywords in document
    order) and records each schema's merged member order at its path."""

    def __init__(self, doc: SchemaDocument, max_recursion: int) -> None:
        self.doc = doc
        self.max_recursion = max_recursion

    def spec(self, spec: Spec, at: _Orders, chain: tuple[str, ...]) -> None:
        """An operand already merged into a record (``chain``: the references followed to
        it): its merged order, then what it holds."""
        at.orders.append(list(spec.properties))
        at.required.extend(spec.required)
        for name, locs in spec.properties.items():
            for loc in locs:
                self.visit(loc, at.member(name), chain)
        for rule in spec.key_rules:
            for _, loc in rule.patterns:
                self.visit(loc, at.extras(), chain)
            if rule.additional is not None:
                self.visit(rule.additional, at.extras(), chain)
        for loc in spec.unevaluated_properties:
            self.visit(loc, at.extras(), chain)
        item_locs = [loc for locs in spec.prefix_items for loc in locs] + spec.rest_items + spec.unevaluated_items
        for loc in item_locs + [loc for loc, _, _ in spec.contains]:
            self.visit(loc, at.item(), chain)
        pending = [group.child(i) for group in spec.any_of + spec.one_of for i in range(len(group.node))]
        pending += [branch for group in spec.presence for branch in group.branches if branch is not None]
        pending += spec.nots + [loc.child(k) for loc in spec.conditionals for k in ("if", "then", "else") if k in loc.node]
        # A dependency's names are the operand's members as much as listed ones: without a
        # slot, the operand taken away wrote them in its own order while a free-form kept
        # side wrote them in any ({"not": {"dependentRequired": {"a": ["b"]}}} accepted
        # {"b": 0, "a": 0}).
        for loc, key, keyword in spec.dependencies:
            at.required.extend(dependency_names(key, loc.node[keyword][key]))
        pending += [loc.child(keyword, key) for loc, key, keyword in spec.dependencies
                    if isinstance(loc.node[keyword][key], dict)]
        for loc in pending:
            self.visit(loc, at, chain)

    def visit(self, loc: Loc, at: _Orders, active: tuple[str, ...]) -> None:
        """Record the order ``loc`` merges to at ``at``, and everything below it."""
        order = self.absorbed(loc, at, active)
        if order:
            at.orders.append(order)

    def absorbed(self, loc: Loc, at: _Orders, active: tuple[str, ...]) -> list[str]:
        """The member order ``loc`` merges to, as :meth:`~.spec.SpecWalk.absorb` merges it."""
        node = loc.node
        if not isinstance(node, dict):
            return []
        keyword = ref_keyword(node)
        if keyword is not None and self.doc.draft <= 7:
            return self.follow(loc, keyword, at, active)
        order: list[str] = []
        for part in absorption_order(node):
            if part == "$ref":
                listed = self.follow(loc, keyword, at, active)
            elif part == "allOf":
                listed = []
                for i in range(len(node["allOf"]) if isinstance(node["allOf"], list) else 0):
                    listed = _merged(listed, self.absorbed(loc.child("allOf", i), at, active))
            else:
                listed = list(node["properties"]) if isinstance(node.get("properties"), dict) else []
                self.own(loc, at, active)
            order = _merged(order, listed)
        return order

    def follow(self, loc: Loc, keyword: str, at: _Orders, active: tuple[str, ...]) -> list[str]:
        target = self.doc.resolve(loc, loc.node[keyword], keyword)
        key = target.key
        if active.count(key) >= self.max_recursion:  # where the operand's record is cut (SpecWalk.follow)
            return []
        return self.absorbed(target, at, active + (key,))

    def own(self, loc: Loc, at: _Orders, active: tuple[str, ...]) -> None:
        """A schema's own keywords: required names, member and item schemas, and the
        combinators that apply to the same value (each branch one more order here)."""
        node = loc.node
        if isinstance(node.get("required"), list):
            at.required.extend(n for n in node["required"] if isinstance(n, str))
        properties = node.get("properties") if isinstance(node.get("properties"), dict) else {}
        for name in properties:
            self.visit(loc.child("properties", name), at.member(name), active)
        below: list[tuple[Loc, _Orders]] = []
        if isinstance(node.get("patternProperties"), dict):
            below += [(loc.child("patternProperties", p), at.extras()) for p in node["patternProperties"]]
        below += [(loc.child(k), at.extras()) for k in _EXTRA_SCHEMAS if isinstance(node.get(k), dict)]
        for keyword in ("items", "prefixItems"):
            if isinstance(node.get(keyword), list):
                below += [(loc.child(keyword, i), at.item()) for i in range(len(node[keyword]))]
            elif isinstance(node.get(keyword), dict):
                below.append((loc.child(keyword), at.item()))
        below += [(loc.child(k), at.item()) for k in _ITEM_SCHEMAS if isinstance(node.get(k), dict)]
        same_value = _SAME_VALUE_SCHEMAS + (_BRANCHES_OF_IF if "if" in node else ())
        below += [(loc.child(k), at) for k in same_value if isinstance(node.get(k), dict)]
        for keyword in _SAME_VALUE_LISTS:
            if isinstance(node.get(keyword), list):
                below += [(loc.child(keyword, i), at) for i in range(len(node[keyword]))]
        for keyword in _DEPENDENCY_KEYWORDS:
            if isinstance(node.get(keyword), dict):
                for key, value in node[keyword].items():
                    at.required.extend(dependency_names(key, value))
                below += [(loc.child(keyword, k), at) for k, v in node[keyword].items() if isinstance(v, dict)]
        for child, where in below:
            self.visit(child, where, active)


def _merged(order: list[str], listed: list[str]) -> list[str]:
    """One more listed order merged in, as a record absorbs a further ``properties``."""
    return merge_orders([order, listed]) if order and listed else order + listed
