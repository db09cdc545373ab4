"""Member groups: combinators over an object's members tracked by its member graph.

An ``anyOf``/``oneOf``/``if`` whose branches only require, exclude or constrain members,
and dependencies on names, are followed member by member as small state machines
(:class:`Presence`, :class:`Dependency`) instead of as products of automata; a member's
values split into classes by the constraints on it (:class:`ValueClasses`)."""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ...automata.member_sets import MemberRule
from ...automata.json_strings import GOES_ON, MANY_VALUES, string_values
from ..regex import Automaton, RegexNode
from .document import Loc
from .spec import (ANNOTATION_KEYWORDS, Spec, MemberGroup, admits_nothing, allowed_types, constraining_keywords,
                   dependency_names, group_branches, merge_orders, ref_keyword, says_only, unknown_keywords)
from .strings import encoded_string
from .values import ALL_TYPES
from .trees import NOTHING

#: An any-order object's member groups may mention this many names at most besides its
#: required ones: the matcher searches their subsets for a way to end.
MAX_GROUP_NAMES = 12


class ValueClasses:
    """A member's values split by the member groups' constraints on it: ``kinds[k]`` lists
    the (group, branch) pairs constraint ``k`` decides, and :meth:`options` the classes
    over the constraints still relevant where the member is written.

    A constraint matters only while a branch it decides is open: after ``"kind":
    "noise"``, the ``then`` of ``if: {"properties": {"kind": {"const": "flat"}}}`` no
    longer does, and splitting ``settings`` by it would be a product that fixes the
    member order of every ``settings`` object (JsonSchemaStore minecraft-dimension).
    So classes are built per set of relevant constraints (few per member), and the
    member graph picks them by its state.
    """

    def __init__(self, kinds: list[list[tuple[int, int]]], build, nodes: list[Any] | None = None) -> None:
        self.kinds = kinds
        self._build = build  # relevant constraint indexes -> [(language, constraints failed)]
        self._nodes = nodes  # the constraints' schemas, where known
        self._memo: dict[tuple[int, ...], list] = {}

    def possible(self) -> list[dict[int, frozenset[int]]]:
        """What each class over every constraint may rule out, by group, before any class is
        built: one per set of constraints met (for constants, the sets some listed value
        meets, and none): an upper bound, as some of them may hold no value."""
        count = len(self.kinds)
        values = _constant_values(self._nodes) if self._nodes is not None else None
        if values is None:
            met_sets = {frozenset(k for k in range(count) if bits[k])
                        for bits in itertools.product((True, False), repeat=count)}
        else:
            met_sets = {frozenset(k for k in range(count) if value in values[k]) for value in set().union(*values)}
            met_sets.add(frozenset())
        return [self._ruled_out(k for k in range(count) if k not in met) for met in met_sets]

    def splits_widely(self) -> bool:
        """Whether the constraints, all split on, pass the bound :func:`is_member_wise` keeps."""
        return _splits_widely(self._nodes if self._nodes is not None else [None] * len(self.kinds))

    def _ruled_out(self, failed) -> dict[int, frozenset[int]]:
        """The branches, by group, that failing the constraints ``failed`` rules out."""
        ruled_out: dict[int, set[int]] = {}
        for k in failed:
            for group, branch in self.kinds[k]:
                ruled_out.setdefault(group, set()).add(branch)
        return {group: frozenset(out) for group, out in ruled_out.items()}

    def options(self, status: tuple, holds: Callable[[int, frozenset[int]], bool]) -> tuple[
            tuple, list[tuple[RegexNode, dict[int, frozenset[int]]]] | None]:
        """The constraints relevant in member-graph state ``status`` (group states, member
        groups first), and the classes over them, each with the branches it rules out
        (none where no constraint is relevant: the member's own value then); the first
        item names the classes (equal names, equal classes).

        A relevant constraint is forced where failing it leaves some group unable to
        hold whatever the member's other constraints do (``holds(group, ruled out)``
        says for one group): every value written here must meet it, so it is merged in,
        not split on.  After ``"conditions": "minecraft:match_tool"`` the ``then`` of
        that conditional must hold, and with the tag left out every ``then`` must: 2**k
        classes where one is used (JsonSchemaStore minecraft-predicate, a ``predicate``
        member four conditionals constrain)."""
        relevant = tuple(k for k, pairs in enumerate(self.kinds)
                         if any(branch in status[group][1] for group, branch in pairs))
        if not relevant:
            return (), None
        forced = tuple(k for k in relevant if self._forced(k, relevant, holds))
        return (relevant, forced), self._classes(relevant, forced)

    def _forced(self, k: int, relevant: tuple[int, ...], holds: Callable[[int, frozenset[int]], bool]) -> bool:
        """Whether failing constraint ``k`` leaves a group unable to hold with any of the
        other relevant constraints on it failed too.  Not monotone, hence every subset:
        in a ``oneOf`` failing more branches may spare two from both holding, and failing
        an ``if`` lets its ``else`` stand in for a failed ``then``."""
        for group in {g for g, _ in self.kinds[k]}:
            others = [j for j in relevant if j != k and any(g == group for g, _ in self.kinds[j])]
            if len(others) > MAX_FORCING_OTHERS:
                continue
            subsets = itertools.chain.from_iterable(itertools.combinations(others, r) for r in range(len(others) + 1))
            if not any(holds(group, self._ruled_out([k, *failed]).get(group, frozenset())) for failed in subsets):
                return True
        return False

    def every_class(self) -> list[tuple[RegexNode, dict[int, frozenset[int]]]]:
        """The classes over every constraint (see :meth:`options`)."""
        return self._classes(tuple(range(len(self.kinds))), ())

    def _classes(self, relevant: tuple[int, ...], forced: tuple[int, ...]) -> list[
            tuple[RegexNode, dict[int, frozenset[int]]]]:
        key = (relevant, forced)
        if key not in self._memo:
            self._memo[key] = [(tree, self._ruled_out(failed)) for tree, failed in self._build(relevant, forced)]
        return self._memo[key]


#: A conditional group's state once no branch is open and the rule holds: the condition
#: and ``then`` met, or the condition failed and ``else`` met, are one state.  With two
#: they multiplied: 17 dependencies on one member's value (schema dependencies are
#: conditionals) made 2**17 states of the member graph (JsonSchemaStore
#: mongodb-atlas-search-index-definition: over a minute, then the NFA limit).
_IF_HELD = (frozenset({0, 1}), frozenset())


@dataclass(frozen=True)
class Presence:
    """A member group (``rule``: ``"anyOf"``, ``"oneOf"`` or ``"if"`` over if/then/else)
    whose branches only require, exclude and constrain members: per branch the member
    positions it requires (None: a name the object cannot have), the positions whose
    values it constrains (``constrained``: a value there may rule the branch out, as the
    member's value class says) and the positions it excludes (``excluded``: writing one
    rules the branch out; ``not: {"required": [name]}``, ``"name": false``).

    In schema order the members come by position, so a branch is met once past the
    last position it involves with none of its required positions skipped and no value
    ruling it out.  A group's state is (what is met; the branches still open): for
    anyOf/oneOf how many branches are met (capped at 2), for a conditional which ones.
    One copy of the object instead of one per branch, and no product: the Glaiveai2K
    ``calculate_area`` idiom ``oneOf: [{"required": ["radius"]}, {"required": ["base",
    "height"]}]`` (with or without typed ``properties`` in the branches), eight
    ``anyOf`` branches over a 14-member object (Github_medium o21108), which as copies
    passed the state limit, and chains of ``if: {"properties": {"name": {"const":
    ...}}}, then: {...}`` (Github_hard o36012), one nested product per conditional.
    """

    branches: tuple[frozenset[int] | None, ...]
    rule: str
    constrained: tuple[frozenset[int], ...] = ()
    excluded: tuple[frozenset[int], ...] = ()

    def __post_init__(self) -> None:
        constrained = self.constrained or tuple(frozenset() for _ in self.branches)
        excluded = self.excluded or tuple(frozenset() for _ in self.branches)
        last = tuple(max(needed | more | out, default=-1) if needed is not None else -1
                     for needed, more, out in zip(self.branches, constrained, excluded))
        object.__setattr__(self, "constrained", constrained)
        object.__setattr__(self, "excluded", excluded)
        object.__setattr__(self, "_last", last)

    def resolved(self, ruled_out: frozenset[int], absent: set[int]) -> "Presence":
        """The group once every constrained member has its value class (or is left out,
        ``absent``): the branches ``ruled_out`` or requiring an absent member cannot
        hold, and no value constrains the others any more."""
        branches = tuple(None if needed is None or i in ruled_out or needed & absent else needed
                         for i, needed in enumerate(self.branches))
        return Presence(branches, self.rule, (), self.excluded)

    def start(self) -> tuple:
        live = [i for i, needed in enumerate(self.branches) if needed is not None]
        return self._state(frozenset(i for i in live if self._last[i] < 0), frozenset(i for i in live if self._last[i] >= 0),
                           self._empty_met())

    def step(self, at: tuple, position: int, written: bool, ruled_out: frozenset[int] = frozenset()) -> tuple | None:
        """Past member ``position`` (written, with a value ruling out ``ruled_out``, or
        skipped); None where the group can no longer be met."""
        met, open_ = at
        newly, still = set(), set()
        for i in open_:
            if (position in self.branches[i] and not written) or (
                    written and (i in ruled_out or position in self.excluded[i])):
                continue
            (newly if position >= self._last[i] else still).add(i)
        return self._state(frozenset(newly), frozenset(still), met)

    def _empty_met(self):
        return frozenset() if self.rule == "if" else 0

    def _state(self, newly: frozenset[int], still: frozenset[int], met) -> tuple | None:
        """The state with ``newly`` met, or None where the rule can no longer hold."""
        if self.rule == "if":
            met = met | newly
            alive = met | still
            if not ((0 in alive and 1 in alive) or (0 not in met and 2 in alive)):
                return None
            if not still:  # decided, and it holds: one state whichever branches met it
                return _IF_HELD
            # Only the branch the condition picks still matters: drop the other, so that
            # states that can only end alike are one state.
            unused = 2 if 0 in met else 1 if 0 not in alive else None
            return (met - {unused}, still - {unused}) if unused is not None else (met, still)
        met = min(met + len(newly), 2)
        if (self.rule == "oneOf" and met > 1) or (met == 0 and not still):
            return None
        if self.rule == "anyOf" and met:  # met for good: a met branch is past its last position
            return 1, frozenset()
        return met, still

    def met(self, at: tuple) -> bool:
        return self._holds(at[0])

    def _holds(self, met) -> bool:
        """The rule over what is met (a set of branches for ``"if"``, else a count)."""
        if self.rule == "if":
            return (0 in met and 1 in met) or (0 not in met and 2 in met)
        return met == 1 if self.rule == "oneOf" else met >= 1

    def satisfied_by(self, used: frozenset[int]) -> bool:
        """Whether the members ``used`` (in any order) meet the group (only for groups that
        constrain no values: the any-order graph tracks no value classes)."""
        assert not any(self.constrained), "value classes need the schema-order member graph"
        met = frozenset(i for i, needed in enumerate(self.branches)
                        if needed is not None and needed <= used and not self.excluded[i] & used)
        return self._holds(met if self.rule == "if" else len(met))


@dataclass(frozen=True)
class Dependency:
    """``key`` (a member position) present only with the members at ``needed`` (None: a
    name the object cannot have, so the key cannot be written either), tracked by the
    member graph like :class:`Presence`: the state is (0, key written, a needed member
    skipped), or ``DONE`` once nothing ahead can break it (the key skipped, or every
    position it involves passed)."""

    key: int
    needed: tuple[int | None, ...]
    DONE = (1, False, False)

    def start(self) -> tuple[int, bool, bool]:
        return (0, False, False)

    def step(self, at: tuple[int, bool, bool], position: int, written: bool,
             ruled_out: frozenset[int] = frozenset()) -> tuple[int, bool, bool] | None:
        if at == self.DONE:
            return at
        _, key_written, skipped = at
        if position == self.key:
            if not written:
                return self.DONE
            key_written = True
        elif position in self.needed and not written:
            skipped = True
        if key_written and (skipped or None in self.needed):
            return None
        if position >= max([self.key] + [p for p in self.needed if p is not None]):
            return self.DONE
        return (0, key_written, skipped)

    def met(self, at: tuple[int, bool, bool]) -> bool:
        return at == self.DONE or not (at[1] and at[2])

    def resolved(self, ruled_out: frozenset[int], absent: set[int]) -> "Dependency":
        """The dependency with the members ``absent`` left out (see :meth:`Presence.resolved`):
        a needed one cannot be written (the key is never absent here)."""
        return Dependency(self.key, tuple(None if p in absent else p for p in self.needed))

    def satisfied_by(self, used: frozenset[int]) -> bool:
        return self.key not in used or (None not in self.needed and set(self.needed) <= used)


def holds_past(groups: list["Presence | Dependency"], status: tuple, position: int, index: int,
                ruled_out: frozenset[int]) -> bool:
    """Whether rule ``index`` can still hold past a value written at ``position`` that rules out its branches ``ruled_out``."""
    return groups[index].step(status[index], position, True, ruled_out) is not None


def groups_stepped(groups: list["Presence | Dependency"], status: tuple, position: int, written: bool,
             ruled_out: dict[int, frozenset[int]] | None = None) -> tuple | None:
    """Each rule's state past member ``position`` (``ruled_out``: by rule index, the
    branches the written value rules out); None where some rule can no longer hold."""
    out = []
    for index, (group, at) in enumerate(zip(groups, status)):
        moved = group.step(at, position, written, ruled_out.get(index, frozenset()) if ruled_out else frozenset())
        if moved is None:
            return None
        out.append(moved)
    return tuple(out)


def names_dependency(dependency: tuple[Loc, str, str]) -> bool:
    """Whether a dependency lists names (dependentRequired, draft 4-7 ``dependencies`` arrays)."""
    loc, key, keyword = dependency
    return isinstance(loc.node[keyword][key], list)


def _dependency_names(spec: Spec) -> list[str]:
    """Every name a dependency on names involves: its key, then what it requires."""
    return list(dict.fromkeys(name for loc, key, keyword in spec.dependencies
                              for name in dependency_names(key, loc.node[keyword][key])))


def dependency_positions(spec: Spec, where: dict[str, int]) -> list[Dependency]:
    """``spec``'s dependencies on names over the member positions (``where``: by encoded
    name); none for a key the object cannot have (nothing to require then)."""
    rules = []
    for loc, key, keyword in spec.dependencies:
        position = where.get(encoded_string(key))
        if position is not None:
            names = [n for n in dependency_names(key, loc.node[keyword][key])[1:] if n != key]
            rules.append(Dependency(position, tuple(where.get(encoded_string(n)) for n in names)))
    return rules


def _presence_names(spec: Spec) -> list[str]:
    """The names the member groups involve: their branches' properties in one order that
    keeps each branch's own where they agree (``merge_orders``: ``then: {"properties":
    {"settings": ...}}`` in one conditional and ``then: {"properties": {"seed": ...,
    "settings": ...}}`` in the next write ``seed`` first, as the second branch lists
    them; JsonSchemaStore minecraft-dimension), then names only required, as a merged
    record lists required names after its properties."""
    nodes = [branch for group in spec.presence for branch in group.nodes]
    listed = merge_orders([list(branch.get("properties", {})) for branch in nodes])
    more = [n for branch in nodes for n in branch.get("required", []) + _excluded_names(branch)]
    return listed + [name for name in dict.fromkeys(more) if name not in listed]


def presence_positions(spec: Spec, where: dict[str, int]) -> list[Presence]:
    """``spec``'s member groups over the member positions (``where``: by encoded name)."""
    groups = []
    for group in spec.presence:
        branches, constrained, excluded = [], [], []
        for branch in group.nodes:
            positions = [where.get(encoded_string(name)) for name in branch.get("required", [])]
            branches.append(None if None in positions else frozenset(positions))
            constrained.append(_positions(_constrained_names(branch), where))
            excluded.append(_positions(_excluded_names(branch), where))  # a name not written is not there
        groups.append(Presence(tuple(branches), group.rule, tuple(constrained), tuple(excluded)))
    return groups


def implied_by(base: list[Loc], constraint: Loc, draft: int) -> bool:
    """Whether the ``base`` schemas imply ``constraint`` by their keywords alone: each
    keyword in force in it is one some base schema (of the same base URI) holds alike,
    the same reference or an equal value, or a type list covering the base's.

    A member often repeats its own schema in a group's branch (``"max": {"type":
    ["integer", "object"], "$ref": "#/definitions/numberProvider"}`` beside a ``then``
    giving it ``["number", "object"]`` and the same reference: JsonSchemaStore
    minecraft-predicate); the class failing it holds no value, and building it is a
    product with a negated recursive definition."""
    wanted = _keywords_in_force(constraint.node, draft)
    if wanted is None:
        return False
    held = [kept for loc in base if loc.base == constraint.base
            and (kept := _keywords_in_force(loc.node, draft)) is not None]
    for keyword, value in wanted.items():
        if keyword == "type":
            if not any("type" in kept and _types_within(kept["type"], value) for kept in held):
                return False
        elif not any(keyword in kept and kept[keyword] == value for kept in held):
            return False
    return True


def _keywords_in_force(node: Any, draft: int) -> dict | None:
    """A schema's keywords that constrain values (before 2019-09 a reference hides its
    siblings); None for ``false`` or what is not a schema object."""
    if node is True:
        return {}
    if not isinstance(node, dict):
        return None
    keyword = ref_keyword(node)
    if keyword is not None and draft <= 7:
        return {keyword: node[keyword]}
    return {k: v for k, v in node.items() if k not in ANNOTATION_KEYWORDS}


def _types_within(inner: Any, outer: Any) -> bool:
    """Whether every type the ``type`` value ``inner`` allows ``outer`` allows too."""
    inner_types, outer_types = allowed_types(inner), allowed_types(outer)
    return inner_types is not None and outer_types is not None and inner_types <= outer_types


def member_names(spec: Spec) -> list[str]:
    """The names an object's member list holds, in schema order: the shared slots' names,
    the listed properties (with member groups' names where their combinators stand),
    names only required, then names only member groups and dependencies involve."""
    slotted = set(spec.slots.names)
    listed = list(spec.slots.names) + [p for p in _properties_with_groups(spec) if p not in slotted]
    named = set(listed)
    listed += [name for name in spec.required if name not in named]
    named = set(listed)
    return listed + [name for name in dict.fromkeys(_presence_names(spec) + _dependency_names(spec)) if name not in named]


def _properties_with_groups(spec: Spec) -> list[str]:
    """``spec``'s listed names with each anyOf/oneOf group's names where its combinator
    stands (after the names listed before it, as :meth:`SchemaEmitter._branch` places a
    branch), so that moving a ``oneOf`` to the member graph keeps the order its
    branches had: ``{"allOf": [{"oneOf": [...]}], "properties": {...}}`` writes the
    branch's members first.  A conditional's new names go last, as when merged."""
    order = list(spec.properties)
    for group in spec.presence:
        before = spec.listed_before.get(group.loc.key)
        if before is None or group.rule == "if":
            continue
        names = merge_orders([list(branch.get("properties", {})) for branch in group.nodes])
        new = [name for name in names if name not in order]
        if new and spec.own_after.get(group.loc.key):  # written before its node's own properties
            before = before - spec.own_after[group.loc.key]
        cut = max((i + 1 for i, name in enumerate(order) if name in before), default=0)
        order[cut:cut] = new
    return order


def _positions(names: list[str], where: dict[str, int]) -> frozenset[int]:
    """The member positions of those of ``names`` the object lists (``where``: by encoded name)."""
    return frozenset(where[key] for key in map(encoded_string, names) if key in where)


def _constrained_names(branch: dict) -> list[str]:
    """The members whose values a member-wise branch constrains (``{}``/``true`` do not,
    and a schema no value meets excludes the member instead: :func:`_excluded_names`)."""
    return [name for name, sub in branch.get("properties", {}).items()
            if sub is not True and sub != {} and not admits_nothing(sub)]


def _excluded_names(branch: dict) -> list[str]:
    """The members a member-wise branch forbids: those whose schema no value meets
    (``false``, ``{"not": {}}``: a dependency "x excludes y"), and the one name of
    ``not: {"required": [name]}``."""
    names = [name for name, sub in branch.get("properties", {}).items() if admits_nothing(sub)]
    negated = _negated_name(branch)
    return names + ([negated] if negated is not None and negated not in names else [])


def _negated_name(branch: dict) -> str | None:
    """The name of a branch's ``not: {"required": [name]}`` (``type: "object"`` too), else None."""
    names = _required_names(branch["not"]) if "not" in branch else None
    return names[0] if names is not None and len(names) == 1 else None


def constraint_kinds(presence: list[MemberGroup]) -> dict[str, list[tuple[Loc, list[tuple[int, int]]]]]:
    """By member name: the distinct schemas member groups' branches give its value, each
    with the (group, branch) pairs that give it (the same schema written twice, as in
    ``oneOf: [{"properties": {"r": {"type": "number"}}, "required": ["r"]}, ...]``
    repeated per branch, is one constraint: one class split, not two)."""
    found: dict[str, dict[tuple[str, str], tuple[Loc, list[tuple[int, int]]]]] = {}
    for g, group in enumerate(presence):
        for i, branch in enumerate(group.branches):
            if branch is None:
                continue
            for name in _constrained_names(branch.node):
                loc = branch.child("properties", name)
                kinds = found.setdefault(name, {})
                kind = kinds.setdefault((loc.base, json.dumps(loc.node, sort_keys=True)), (loc, []))
                kind[1].append((g, i))
    return {name: list(kinds.values()) for name, kinds in found.items()}


#: Keywords a member-wise branch may hold (see :func:`is_member_wise`).
_MEMBER_WISE_KEYWORDS = frozenset(("properties", "required", "type")) | ANNOTATION_KEYWORDS


#: Distinct constraints on one member that a group may add: its values split into up to
#: 2**k classes, except constants and enums, which split them by value (one class per
#: value and one for the rest).
MAX_MEMBER_CONSTRAINTS = 3


MAX_CONSTANT_CONSTRAINTS = 32


#: Other constraints on a member from one group past which a constraint is not tried as
#: forced (:meth:`ValueClasses._forced` tries every subset of them).
MAX_FORCING_OTHERS = 4


def is_member_wise(group: MemberGroup, spec: Spec) -> bool:
    """Whether a group only constrains members of ``spec``'s object: every branch an
    object schema of ``properties`` and ``required`` alone (``type: "object"`` at most),
    and no member constrained in more ways that can split its values, by it and the
    groups already moved (``spec.presence``), than :data:`MAX_MEMBER_CONSTRAINTS` (or
    :func:`_few_constants`).

    A ``then``/``else`` constraint on a member written (in the member list's order)
    after every name its ``if`` involves splits nothing: the condition is
    decided there, so the constraint must hold or no longer matters
    (:meth:`ValueClasses.options` merges it in).  The order is the member list's as
    it stands; groups moved later or a product's shared slots may still move names,
    which only makes more classes: what splits is decided per state."""
    branches = group.nodes
    for branch in branches:
        if not isinstance(branch, dict):
            return False
        allowed = _MEMBER_WISE_KEYWORDS | ({"not"} if _negated_name(branch) is not None else set())
        if not set(branch) - set(unknown_keywords(branch)) <= allowed:
            return False
        if not isinstance(branch.get("properties", {}), dict) or not isinstance(branch.get("required", []), list):
            return False
        if not all(isinstance(name, str) for name in branch.get("required", [])):
            return False
        if branch.get("type", "object") not in ("object", ["object"]):
            return False
    if not any(_constrained_names(b) or b.get("required") or _excluded_names(b) for b in branches):
        return False
    groups = spec.presence + [group]
    where: dict[str, int] | None = None  # the member order, read only where the bound is passed
    for name, kinds in constraint_kinds(groups).items():
        if not _splits_widely([loc.node for loc, _ in kinds]):
            continue
        if where is None:
            where = {name: i for i, name in enumerate(member_names(with_member_group(spec, group)))}
        free = [loc.node for loc, pairs in kinds
                if not all(_decided_before(groups[g], branch, where, name) for g, branch in pairs)]
        if _splits_widely(free):
            return False
    return True


def _splits_widely(nodes: list[Any]) -> bool:
    """Whether constraints on one member would split its values into more than
    2**MAX_MEMBER_CONSTRAINTS classes (constants and enums aside: one class per value)."""
    return len(nodes) > MAX_MEMBER_CONSTRAINTS and not _few_constants(nodes)


def _decided_before(group: MemberGroup, branch: int, where: dict[str, int], name: str) -> bool:
    """Whether ``branch`` of ``group`` is a conditional's ``then``/``else`` whose ``if``
    involves only names written before ``name`` (``where``: positions by name)."""
    if group.rule != "if" or branch == 0 or name not in where:
        return False
    condition = group.nodes[0]
    involved = [*condition.get("properties", {}), *condition.get("required", []), *_excluded_names(condition)]
    return all(where.get(other, len(where)) < where[name] for other in involved)


def _constant_values(nodes: list[Any]) -> list[set[str]] | None:
    """The values each of ``nodes`` allows (as JSON texts) where each is a ``const`` or
    ``enum`` alone, else None."""
    found = []
    for node in nodes:
        if not isinstance(node, dict) or not constraining_keywords(node) <= {"const", "enum"} or not (
                "const" in node or isinstance(node.get("enum"), list)):
            return None
        found.append({json.dumps(v, sort_keys=True) for v in ([node["const"]] if "const" in node else node["enum"])})
    return found


def _few_constants(nodes: list[Any]) -> bool:
    """Whether member constraints are all ``const``/``enum`` lists, at most
    :data:`MAX_CONSTANT_CONSTRAINTS` of them over at most as many distinct values: their
    classes are then at most one per value and one for the rest."""
    values = _constant_values(nodes)
    return (values is not None and len(nodes) <= MAX_CONSTANT_CONSTRAINTS
            and len(set().union(*values)) <= MAX_CONSTANT_CONSTRAINTS)


def with_member_group(spec: Spec, group: MemberGroup) -> Spec:
    """``spec`` with the member-wise ``group`` moved to its member graph, and its other
    types kept only where the group holds for them (an untyped branch holds for any
    value that is no object, a ``type: "object"`` one for none)."""
    holds = [_holds_off_objects(node) for node in group.nodes]
    if group.rule == "if":
        others = (holds[0] and holds[1]) or (not holds[0] and holds[2])
    else:
        others = sum(holds) == 1 if group.rule == "oneOf" else any(holds)
    types = spec.types
    if not others:
        types = frozenset({"object"}) & (types if types is not None else ALL_TYPES)
    return spec.without(presence=spec.presence + [group], types=types)


def _holds_off_objects(branch: dict) -> bool:
    """Whether a member-wise branch holds for values that are no object: untyped, and
    any ``not: {"required": ...}`` in it typed ``object`` (``required`` alone holds for
    them, so its negation does not)."""
    negated = branch.get("not")
    return "type" not in branch and (negated is None or "type" in negated)


def types_outside(node: Any, types: frozenset[str] | None) -> frozenset[str] | None:
    """The types of ``types`` (None: all) that ``not: node`` leaves, where ``node`` only
    says ``type`` (None otherwise, or where it takes away integers but not the other
    numbers, which no type set says)."""
    if not says_only(node, "type"):
        return None
    removed = allowed_types(node["type"])
    if not removed:
        return None
    current = ALL_TYPES if types is None else types
    if "integer" in removed and "number" not in removed and "number" in current:
        return None
    return frozenset(current - removed)


#: Keywords a branch may hold and still be only a list of required names.
_PRESENCE_KEYWORDS = frozenset(("required", "title", "description", "$comment"))


def _required_only(group: Loc) -> bool:
    branches = group.node
    return isinstance(branches, list) and bool(branches) and all(
        isinstance(b, dict) and set(b) <= _PRESENCE_KEYWORDS and isinstance(b.get("required"), list)
        and b["required"] and all(isinstance(name, str) for name in b["required"]) for b in branches)


def exclusion_group(loc: Loc) -> MemberGroup | None:
    """``not: {"required": [names]}`` (names that may not all be present: a mutual
    exclusion; ``allOf`` of such lists, ``type: "object"``) as a member group: the
    ``oneOf`` of the negated schema and ``{}``, which holds exactly where the negated
    schema does not.  None for any other ``not``."""
    names = _required_names(loc.node)
    if names is None:
        return None
    negated = {"required": names, **({"type": loc.node["type"]} if "type" in loc.node else {})}
    branches = (Loc(negated, loc.pointer, loc.base, loc.draft), Loc({}, loc.pointer, loc.base, loc.draft))
    return MemberGroup(loc, "oneOf", branches, {"not": loc.node})


def _required_names(node: Any) -> list[str] | None:
    """The names a schema of ``required`` lists alone requires (``allOf`` of such schemas,
    ``type: "object"`` and ``properties`` that constrain nothing too: ``not:
    {"properties": {"x": {}}, "required": ["x"]}``, Github_hard o77304), else None."""
    if not isinstance(node, dict) or set(node) - _PRESENCE_KEYWORDS - {"type", "allOf", "properties"}:
        return None
    if not _constrains_no_member(node.get("properties", {})):
        return None
    if node.get("type", "object") not in ("object", ["object"]):
        return None
    names, parts = node.get("required", []), node.get("allOf", [])
    if "required" not in node and "allOf" not in node:
        return None
    if not isinstance(names, list) or not all(isinstance(name, str) for name in names) or not isinstance(parts, list):
        return None
    for part in parts:
        more = _required_names(part) if isinstance(part, dict) and "type" not in part else None
        if more is None:
            return None
        names = names + more
    return list(dict.fromkeys(names))


def negated_member(branch: Loc) -> Loc:
    """``{"not": {"properties": {name: S}}}`` as the member-wise branch it equals, an
    object with ``name`` whose value fails S (``{"type": "object", "required": [name],
    "properties": {name: {"not": S}}}``), else ``branch``.  The idiom "if this member is
    set" (``if: {"not": {"properties": {"basic_auth": {"const": null}}}}``, then the
    others null: JsonSchemaStore prometheus) was a product per conditional."""
    node = branch.node
    if not says_only(node, "not"):
        return branch
    negated = node["not"]
    if not says_only(negated, "properties"):
        return branch
    properties = negated["properties"]
    if not isinstance(properties, dict) or len(properties) != 1:
        return branch
    (name, schema), = properties.items()
    member = {"type": "object", "required": [name], "properties": {name: {"not": schema}}}
    return Loc(member, branch.pointer + "/not", branch.base, branch.draft)


def _constrains_no_member(properties: Any) -> bool:
    """Whether a ``properties`` value holds only schemas every value meets (``{}``,
    ``true``, annotations alone)."""
    return isinstance(properties, dict) and all(
        sub is True or (isinstance(sub, dict) and not constraining_keywords(sub)) for sub in properties.values())


def with_presence_groups(spec: Spec) -> Spec:
    """``spec`` with its anyOf/oneOf groups of required-only branches moved to ``presence``.

    ``required`` holds for any value that is no object, so such an ``anyOf`` leaves other
    types alone and such a ``oneOf`` of two or more branches refuses them (every branch
    holds)."""
    any_of, one_of, moved = [], [], []
    for groups, rule, kept in ((spec.any_of, "anyOf", any_of), (spec.one_of, "oneOf", one_of)):
        for group in groups:
            if _required_only(group):
                moved.append(MemberGroup(group, rule, tuple(group_branches(group, rule))))
            else:
                kept.append(group)
    if not moved:
        return spec
    spec = spec.without(any_of=any_of, one_of=one_of)
    for group in moved:
        spec = with_member_group(spec, group)
    return spec


def _group_by_names(group: "Presence | Dependency", raw: list[bytes]) -> tuple:
    """A member group (over member positions) as a :class:`MemberRule` group over raw key names."""
    def names(positions) -> frozenset[bytes] | None:
        return None if positions is None or None in positions else frozenset(raw[p] for p in positions)

    if isinstance(group, Dependency):
        return ("dependency", (frozenset({raw[group.key]}), names(group.needed)))
    return (group.rule, tuple(None if names(branch) is None else (names(branch), names(out))
                              for branch, out in zip(group.branches, group.excluded)))


def chosen_classes(members: list[tuple[str, RegexNode, bool]], groups: list["Presence | Dependency"],
                    positions: list[int], combination: tuple) -> tuple[list, list]:
    """The members and groups of one loop of ``SchemaEmitter._loops_by_class``: the member at
    each of ``positions`` required with its value in the chosen class (a ``(language,
    branches ruled out by group)`` pair), or left out (None); the groups resolved."""
    chosen, ruled_out, absent = list(members), {}, set()
    for position, choice in zip(positions, combination):
        key = members[position][0]
        if choice is None:
            chosen[position] = (key, NOTHING, False)
            absent.add(position)
            continue
        tree, out = choice
        chosen[position] = (key, tree, True)
        for group, branches in out.items():
            ruled_out[group] = ruled_out.get(group, frozenset()) | branches
    resolved = [group.resolved(ruled_out.get(index, frozenset()), absent) for index, group in enumerate(groups)
                if not (isinstance(group, Dependency) and group.key in absent)]
    return chosen, resolved


def member_rule(spec: Spec, members: list[tuple[str, RegexNode, bool]], extra_keys: int | None,
                 groups: list["Presence | Dependency"]) -> MemberRule | None:
    """What the matcher checks of an any-order object (see ``SchemaEmitter._any_order_call``;
    ``extra_keys``: :func:`extra_key_count`), or None where a name search cannot see
    every failure: keys that cannot be counted, more than :data:`MAX_GROUP_NAMES` names
    to search."""
    keys = _key_count(members, extra_keys)
    if keys is None or (keys != GOES_ON and keys < spec.min_properties):
        return None
    most = spec.max_properties
    binds = most is not None and (keys == GOES_ON or keys > most)
    raw = [key[1:-1].encode() for key, _, _ in members]
    rule = MemberRule(frozenset(name for name, (_, _, required) in zip(raw, members) if required),
                      spec.min_properties, keys, tuple(_group_by_names(group, raw) for group in groups),
                      most if binds else GOES_ON)
    return None if len(rule.searched) > MAX_GROUP_NAMES else rule


def _key_count(members: list[tuple[str, RegexNode, bool]], extra_keys: int | None) -> int | None:
    """How many keys an object may hold: its listed members (but those left out, of no
    value) and ``extra_keys`` (:func:`extra_key_count`)."""
    if extra_keys is None or extra_keys == GOES_ON:
        return extra_keys
    return sum(value is not NOTHING for _, value, _ in members) + extra_keys


def extra_key_count(extras: list[tuple[RegexNode, RegexNode]]) -> int | None:
    """How many keys an object's extra classes take (:data:`GOES_ON` for unboundedly many;
    None when a class's keys cannot be counted)."""
    count = 0
    for names, _ in extras:
        found = string_values(names.dfa) if isinstance(names, Automaton) else None
        if found is None:
            return None
        if found in (GOES_ON, MANY_VALUES):
            return GOES_ON
        count += found
    return count
