"""The applicators: anyOf, oneOf, allOf, not, if/then/else, dependencies.

Part of :class:`~.emit.SchemaEmitter` (see :mod:`.emit`), which holds the state these
methods read and write; a module per concern keeps each part readable on its own.
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import Iterator, Sequence

from ...automata.byte_dfa import ByteDFA, build_byte_dfa
from ...automata.dfa_ops import any_suffix_marker, difference, intersect, union
from ...automata.pushdown import has_calls
from ...errors import RegexError, SchemaError
from ..regex import Alt, Automaton, Concat, Graph, RegexNode, Repeat
from .callees import plain_reference
from .document import Loc
from .member_groups import exclusion_group, names_dependency, types_outside, with_member_group, with_presence_groups
from .numbers import EVERY_PLAIN, PLAIN
from .slots import shared_slots
from .spec import NO_SLOTS, Slots, Spec, SpecWalk, VARYING_APPLICATORS, copy_spec, place_branch
from .trees import NOTHING, alt
from .values import ALL_TYPES, narrowed_to


_EMPTY_SPEC = Spec()

# Scalar alternatives up to this many automaton states are merged into one minimal DFA.
MAX_MERGED_SCALAR_STATES = 4096

#: unevaluated* beside an anyOf: at most this many sets of two or more branches are built.
MAX_EVALUATING_SETS = 32

#: At most this many products for subschemas with unevaluated* of their own per schema: in
#: nested combinators each is built again in every operand (a random schema of oneOf, if
#: and anyOf three deep took 286 of them, and more than a minute, before this cap).
MAX_OPERAND_PRODUCTS = 32


class CombinatorEmission:
    """A record's applicators: branches merged into it (allOf), unions (anyOf, oneOf apart),
    products (oneOf, not, if/then/else) and the unevaluated* keywords beside them."""

    def spec_tree(self, spec: Spec, chain: tuple[str, ...]) -> RegexNode:
        """The language of one record; an automaton too large to build is blamed on this record.

        The innermost record whose construction fails names its pointer (outer
        records let the SchemaError through), so the error says which sub-schema grew.
        """
        built_before = len(self.sizes)
        try:
            return self._spec_tree(spec, chain)
        except RegexError as err:
            where = spec.sources[0].pointer if spec.sources else ""
            raise SchemaError(f"the language of this sub-schema could not be built: {err.reason}"
                              f"{largest_parts(self.sizes[built_before:])}", where or "#") from None

    def _spec_tree(self, spec: Spec, chain: tuple[str, ...]) -> RegexNode:
        if spec.impossible:
            if not spec.depth_limited:
                return NOTHING
            self.cuts += 1  # cut by max_recursion: refused where kept, anything where taken away
            if self.over:
                return Automaton(any_suffix_marker())
            self.kept_recursion_cuts += 1
            if self._merged_references and self._shareable(spec.slots):  # not a product's operand
                self._note_cut(chain)
            return NOTHING
        self._check_unsupported(spec)
        if spec.operands:
            return self._with_operand(spec, chain)
        if spec.enums:
            return self._enum_tree(spec)
        spec = with_presence_groups(spec)
        if spec.any_of:
            group, rest = spec.any_of[0], spec.without(any_of=spec.any_of[1:])
            if rest.unevaluated_properties or rest.unevaluated_items:
                return self._any_of_unevaluated(rest, group, chain)
            return _merged_scalars(alt(*(self._branch_tree(rest, group, i, chain) for i in range(len(group.node)))))
        if spec.one_of:
            return self._one_of(spec, chain)
        if spec.nots:
            kept_types = types_outside(spec.nots[0].node, spec.types)
            if kept_types is not None:  # `not: {"type": ...}`: the other types, no product
                return self.spec_tree(spec.without(nots=spec.nots[1:], types=kept_types), chain)
            moved = exclusion_group(spec.nots[0])
            if moved is not None:  # `not: {"required": [...]}`: a member group, no product
                return self.spec_tree(with_member_group(spec.without(nots=spec.nots[1:]), moved), chain)
            base = spec.without(nots=spec.nots[1:])
            negated, negated_chain = self._merged(base, spec.nots[0], chain)
            slots = shared_slots(self.doc, base, [(negated, negated_chain)], self.max_recursion)
            base, negated = base.without(slots=slots), negated.without(slots=slots)
            with self.numbers_spelled(PLAIN):
                kept = self.spec_tree(base, chain)
            return self._minus(kept, self._condition_tree(negated, negated_chain, spec.nots[0], "not"))
        if spec.conditionals:
            return self._conditional(spec, chain)
        if any(not names_dependency(d) for d in spec.dependencies):  # lists of names: the member graph's
            return self._dependency(spec, chain)
        types = ALL_TYPES if spec.types is None else spec.types
        return alt(*(self._type_tree(spec, name, chain) for name in ("null", "boolean", "object", "array", "string", "number")
                     if name in types or (name == "number" and "integer" in types)))

    def _merged(self, spec: Spec, loc: Loc, chain: tuple[str, ...]) -> tuple[Spec, tuple[str, ...]]:
        walk = SpecWalk(self.doc, list(chain), self.max_recursion)
        merged = walk.absorb(copy_spec(spec), loc, frozenset())
        return merged, tuple(walk.chain)

    def _merged_tree(self, spec: Spec, loc: Loc, chain: tuple[str, ...]) -> RegexNode:
        merged, chain = self._merged(spec, loc, chain)
        return self.spec_tree(merged, chain)

    def _branch_tree(self, rest: Spec, group: Loc, index: int, chain: tuple[str, ...],
                     merged: tuple[Spec, tuple[str, ...]] | None = None) -> RegexNode:
        """The language of branch ``index`` of the anyOf (or disjoint oneOf) ``group`` met
        with ``rest`` (``merged``: that branch merged already, :meth:`_branch`).

        A branch that is only a reference, beside nothing else (``Optional[Node]``:
        ``{"anyOf": [{"$ref": "#/$defs/Node"}, {"type": "null"}]}``), is the value of
        that reference, so a recursive definition re-entered there is a call into its
        callee like one re-entered through a member's value: merged into the record
        instead, it was unrolled ``max_recursion`` deep, and a deeper valid value was
        refused.
        """
        reference = plain_reference(group.node[index], self.doc.draft) is not None
        if reference and _constrains_nothing(rest):
            return self.value_of([group.child(index)], chain, rest.slots)
        branch, branch_chain = merged or self._branch(rest, group, index, chain)
        self._merged_references += reference
        try:
            return self.spec_tree(branch, branch_chain)
        finally:
            self._merged_references -= reference

    def _any_of_unevaluated(self, rest: Spec, group: Loc, chain: tuple[str, ...]) -> RegexNode:
        """anyOf under unevaluated*: a value may use the members (items) of *every* branch it
        meets, so the language is the union, over the non-empty sets S of branches, of
        ``rest`` merged with all of S.  Branch by branch alone, ``{"foo": 1, "bar": 2}``
        under ``anyOf: [{properties: {foo}}, {properties: {bar}}]`` and
        ``unevaluatedProperties: false`` was refused, though it meets both branches.

        A set in which some branch evaluates nothing the others do not is not needed:
        the same set without that branch evaluates as much and asks less.  So only sets
        whose every branch adds something are built (:func:`_growing_sets`; none beyond
        single branches where the branches evaluate the same members, or none at all),
        at most :data:`MAX_EVALUATING_SETS`; past that the keyword is not exact.
        """
        count = len(group.node)
        merged = [self._branch(rest, group, i, chain) for i in range(count)]
        base = _evaluated(rest, -1)
        marks = [_evaluated(branch, i, rest) - base for i, (branch, _) in enumerate(merged)]
        sets = _growing_sets(marks, MAX_EVALUATING_SETS)
        if sets is None:
            loc, keyword = ((rest.unevaluated_properties[0], "unevaluatedProperties") if rest.unevaluated_properties
                            else (rest.unevaluated_items[0], "unevaluatedItems"))
            self._not_exact(loc.pointer, keyword, f"the anyOf at {group.pointer or '#'} has more than "
                            f"{MAX_EVALUATING_SETS} sets of branches that evaluate different members or items")
            rest = _without_unevaluated(rest)  # an over-approximation: the branches alone, nothing unevaluated
            return _merged_scalars(alt(*(self._branch_tree(rest, group, i, chain) for i in range(count))))
        trees = [self._branch_tree(rest, group, i, chain, merged[i]) for i in range(count)]
        trees += [self.spec_tree(*self._branches(rest, group, indices, chain)) for indices in sets]
        return _merged_scalars(alt(*trees))

    def _branch(self, rest: Spec, group: Loc, index: int, chain: tuple[str, ...]) -> tuple[Spec, tuple[str, ...]]:
        """Branch ``index`` of the anyOf/oneOf ``group`` merged into ``rest``; see :meth:`_branches`."""
        return self._branches(rest, group, (index,), chain)

    def _branches(self, rest: Spec, group: Loc, indices: Sequence[int],
                  chain: tuple[str, ...]) -> tuple[Spec, tuple[str, ...]]:
        """Branches ``indices`` of the anyOf/oneOf ``group`` merged into ``rest``, their members
        where the combinator stands in the schema (``place_branch``).

        Beside its node's ``properties`` a combinator stands where it is written only
        when its branch *extends* the node, listing members the rest does not (a
        base: ``{"anyOf": [{"$ref": base}], "properties": {...}}``, Github_hard
        o60038).  A branch that only constrains members the node lists (a tagged
        variant: ``"oneOf": [{"properties": {"kind": {"enum": ...}}}]``,
        Github_easy o10011) leaves them in the node's order, whatever the order the
        keywords are written in.
        """
        merged, merged_chain = rest, chain
        for index in indices:
            merged, merged_chain = self._merged(merged, group.child(index), merged_chain)
        before = rest.listed_before.get(group.key)
        if before is None:
            return merged, merged_chain
        own_after = rest.own_after.get(group.key)
        if own_after:
            own = Spec()  # what the branches list, their order
            for index in indices:
                own, _ = self._merged(own, group.child(index), chain)
            if any(name not in rest.properties for name in own.properties):
                return place_branch(merged, rest, before - own_after, list(own.properties)), merged_chain
        return place_branch(merged, rest, before), merged_chain

    def _one_of(self, spec: Spec, chain: tuple[str, ...]) -> RegexNode:
        """Exactly one branch: each branch's language minus the union of the others.

        Branches that no value can meet together (a tagged union: different types, or a
        required member whose values differ, like ``"kind": {"const": ...}``) are an
        ``anyOf``: no product, and no shared member order, is needed.
        """
        group, rest = spec.one_of[0], spec.without(one_of=spec.one_of[1:])
        merged = [self._branch(rest, group, i, chain) for i in range(len(group.node))]
        judged = [(self._judged(rest, branch, group.child(i)), branch_chain)
                  for i, (branch, branch_chain) in enumerate(merged)]
        # A branch cut by the recursion bound whose types past the cut leave none the rest
        # allows meets no value: left out, exactly.
        kept = [i for i, (spec_judged, _) in enumerate(judged) if spec_judged is not None]
        merged, judged = [merged[i] for i in kept], [judged[i] for i in kept]
        unevaluated = bool(rest.unevaluated_properties or rest.unevaluated_items)
        if not unevaluated:
            possible = frozenset().union(*(self._value_types(branch) for branch, _ in judged))
            apart = self._disjoint_types(judged, chain) & possible
            if apart == possible:
                return alt(*(self._branch_tree(rest, group, i, chain, branch) for i, branch in zip(kept, merged)))
            if apart:
                # Split by type: branches apart for objects (required tags) but not for the
                # scalars they all let through need no product over their objects.
                return alt(self.spec_tree(narrowed_to(spec, apart), chain),
                           self.spec_tree(narrowed_to(spec, possible - apart), chain))
        moved = None if unevaluated else self._member_group(group, "oneOf", rest)
        if moved is not None:
            # Branches that only constrain members: rules of the object's member graph
            # (Presence with value classes), not a product of whole objects.
            return self.spec_tree(with_member_group(rest, moved), chain)
        slots = shared_slots(self.doc, rest, merged, self.max_recursion)
        branches = [(branch.without(slots=slots), branch_chain) for branch, branch_chain in merged]
        if unevaluated:
            return self._one_of_unevaluated(branches, group)
        operands = [self._kept_and_removed(branch, branch_chain) for branch, branch_chain in branches]
        return _exactly_one([kept for kept, _ in operands], [removed for _, removed in operands])

    def _kept_and_removed(self, spec: Spec, chain: tuple[str, ...]) -> tuple[ByteDFA | None, ByteDFA | None]:
        """A product operand both kept and taken away (a oneOf branch): its automaton with
        plain numbers and the context's cuts, and with every plain spelling and the cuts
        flipped (widened, ready to take away), built once where they cannot differ."""
        sensitive_before, cuts_before = self.spelling_sensitive, self.cuts
        with self.numbers_spelled(EVERY_PLAIN), self._taken_away():
            built = self._dfa(self.spec_tree(spec, chain))
        same = (self.spelling == EVERY_PLAIN or self.spelling_sensitive == sensitive_before) and self.cuts == cuts_before
        removed = self._taken(built)
        if not same:
            with self.numbers_spelled(PLAIN):
                built = self._dfa(self.spec_tree(spec, chain))
        return self._plain(built, self.over), removed

    def _record(self, locs: list[Loc], chain: tuple[str, ...], slots: Slots = NO_SLOTS) -> Spec:
        """The merged record of ``locs`` (an implicit allOf)."""
        return self._walked(locs, chain, slots)[0]

    def _walked(self, locs: list[Loc], chain: tuple[str, ...], slots: Slots = NO_SLOTS) -> tuple[Spec, tuple[str, ...]]:
        """The merged record of ``locs`` and the reference chain its walk ended with."""
        walk, spec = SpecWalk(self.doc, list(chain), self.max_recursion), Spec(slots=slots)
        for loc in locs:
            spec = walk.absorb(spec, loc, frozenset())
        return spec, tuple(walk.chain)

    def _one_of_unevaluated(self, branches, group: Loc) -> RegexNode:
        """oneOf under unevaluated*: branch i with it, minus the other branches judged without it."""
        out = []
        for index, (branch, branch_chain) in enumerate(branches):
            with self.numbers_spelled(PLAIN):
                tree = self.spec_tree(branch, branch_chain)
            for other, (spec, other_chain) in enumerate(branches):
                if other != index and tree is not NOTHING:
                    tree = self._minus(tree, self._condition_tree(spec, other_chain, group, "oneOf"))
            out.append(tree)
        return alt(*out)

    def _conditional(self, spec: Spec, chain: tuple[str, ...]) -> RegexNode:
        loc, base = spec.conditionals[0], spec.without(conditionals=spec.conditionals[1:])
        moved = None if base.unevaluated_properties or base.unevaluated_items else self._member_group(
            loc, "if", base)
        if moved is not None:
            # if/then/else that only constrain members ("if kind is x then y is required"):
            # a rule of the member graph, not products of whole objects (chains of them
            # nested one product per conditional).
            return self.spec_tree(with_member_group(base, moved), chain)
        if_spec, if_chain = self._merged(base, loc.child("if"), chain)
        slots = shared_slots(self.doc, base, [(if_spec, if_chain)], self.max_recursion)
        base, if_spec = base.without(slots=slots), if_spec.without(slots=slots)
        then_tree = self._merged_tree(if_spec, loc.child("then"), if_chain) if "then" in loc.node else self.spec_tree(if_spec, if_chain)
        with self.numbers_spelled(PLAIN):
            else_tree = self._merged_tree(base, loc.child("else"), chain) if "else" in loc.node else self.spec_tree(base, chain)
        return alt(then_tree, self._minus(else_tree, self._condition_tree(if_spec, if_chain, loc.child("if"), "if")))

    def _condition_tree(self, spec: Spec, chain: tuple[str, ...], at: Loc, keyword: str) -> RegexNode:
        """The language taken away by ``not``, ``if`` or another ``oneOf`` branch: the record
        as a condition (its unevaluated* belong to the parent), every plain number spelling."""
        with self.numbers_spelled(EVERY_PLAIN), self._taken_away():
            return self.spec_tree(_without_unevaluated(spec), chain)

    @contextmanager
    def _taken_away(self) -> Iterator[None]:
        """Build a language that a product takes away: its depth cuts over-approximate.

        Inside a product's operands a recursive definition is unrolled ``max_recursion``
        times and free-form values are expanded :data:`OPERAND_ANY_DEPTH` levels deep.
        Where the operand is kept, a cut refuses the values nested deeper: fewer texts,
        never a wrong one.  Where the operand is taken away (the ``not``, the ``if``
        before ``else``, the other ``oneOf`` branches), refusing them would take away
        too little, and the deeper values it should take away would get through; there
        the cut takes any bytes instead (:data:`.dfa_ops.ANY_SUFFIX`), which takes away
        too much, so the difference only refuses deep values.  An operand of an operand
        taken away is kept again: the polarity flips at every nested product.
        """
        self.over = not self.over
        try:
            yield
        finally:
            self.over = not self.over

    def _dependency(self, spec: Spec, chain: tuple[str, ...]) -> RegexNode:
        """A dependency on a schema: a member group ("if ``key`` is there, then the
        schema") where the schema only constrains members, else two disjoint cases:
        ``key`` absent, or present and the schema merged.  Dependencies on lists of
        names stay on the record for the object's member graph (:class:`Dependency`):
        as cases, ``n`` of them made ``2**n`` copies of the object."""
        index = next(i for i, d in enumerate(spec.dependencies) if not names_dependency(d))
        loc, key, keyword = spec.dependencies[index]
        base = spec.without(dependencies=spec.dependencies[:index] + spec.dependencies[index + 1:])
        if not (base.unevaluated_properties or base.unevaluated_items):
            # A member-wise schema: "if the key is there, then the schema" as a rule of the
            # member graph (n dependencies were 2**n copies of the object).
            then = loc.child(keyword, key)
            condition = Loc({"type": "object", "required": [key]}, then.pointer, then.base, then.draft)
            moved = self._member_group(loc, "if", base, [condition, then, None], {keyword: {key: then.node}})
            if moved is not None:
                return self.spec_tree(with_member_group(base, moved), chain)
        absent = copy_spec(base)
        absent.properties.setdefault(key, []).append(Loc(False, loc.pointer + f"/{keyword}/{key}", loc.base))
        present = copy_spec(base)
        present.require([key])
        return alt(self.spec_tree(absent, chain), self._merged_tree(present, loc.child(keyword, key), chain))

    def _with_operand(self, spec: Spec, chain: tuple[str, ...]) -> RegexNode:
        """The record less its first operand, intersected with that operand as a record of
        its own (rooted there, so its unevaluated* sees exactly its subtree): a product,
        whose member positions the operand fixes (``shared_slots``)."""
        base = spec.without(operands=spec.operands[1:])
        self.operand_products += 1
        if self.operand_products > MAX_OPERAND_PRODUCTS:
            loc = spec.operands[0]
            keyword = "unevaluatedProperties" if "unevaluatedProperties" in loc.node else "unevaluatedItems"
            self._unenforced(loc, keyword, f"more than {MAX_OPERAND_PRODUCTS} products for subschemas whose own "
                                           "unevaluated* sees what varies (nested combinators multiply them)")
            # Not strict: the whole language over-approximated, so a kept side loses the
            # operand, a side taken away (``over``) takes nothing.
            return NOTHING if self.over else self.spec_tree(base, chain)
        walk = SpecWalk(self.doc, list(chain), self.max_recursion)
        own = walk.absorb(Spec(), spec.operands[0], frozenset())
        own_chain = tuple(walk.chain)
        slots = shared_slots(self.doc, base, [(own, own_chain)], self.max_recursion)
        base, own = base.without(slots=slots), own.without(slots=slots)
        with self.numbers_spelled(PLAIN):
            kept = self.spec_tree(base, chain)
            met = self.spec_tree(own, own_chain) if kept is not NOTHING else NOTHING
        if met is NOTHING:
            return NOTHING
        both = intersect(self._plain(self._dfa(kept), self.over), self._plain(self._dfa(met), self.over))
        return NOTHING if both is None else Automaton(both)

    def _minus(self, tree: RegexNode, removed: RegexNode) -> RegexNode:
        if tree is NOTHING or removed is NOTHING:
            return tree
        kept = difference(self._plain(self._dfa(tree), self.over), self._taken(self._dfa(removed)))
        return NOTHING if kept is None else Automaton(kept)


def _constrains_nothing(spec: Spec) -> bool:
    """Whether ``spec`` holds no constraint (its sources said nothing but combinators
    expanded already, or annotations)."""
    return spec.without(sources=[], merged_refs=frozenset(), listed_before={}, own_after={}, slots=NO_SLOTS) == _EMPTY_SPEC


def largest_parts(sizes: list[tuple[str, int]], count: int = 3) -> str:
    """The sub-schemas (strings, unrolled recursion) with the largest automata: what made the whole too large."""
    largest: dict[str, int] = {}
    for pointer, states in sizes:
        largest[pointer] = max(states, largest.get(pointer, 0))
    big = sorted((item for item in largest.items() if item[1] >= 1000), key=lambda item: -item[1])[:count]
    if not big:
        return ""
    return "; largest parts: " + ", ".join(f"{pointer} ({states:,} states)" for pointer, states in big)


def _merged_scalars(tree: RegexNode) -> RegexNode:
    """An ``anyOf`` of scalar languages (no object or array, no call) as one minimal DFA.

    Alternatives that overlap (a string with a pattern or format beside a free string,
    ``date-time`` or ``date``) would otherwise determinise to pairs of states that
    only minimisation merges back: inside such a string every state is a new one, so
    each first visit walks the whole vocabulary instead of meeting a state that loops
    (a mask in ~2 ms instead of ~0.3 ms for Llama-3).  Objects and arrays are left
    to the final automaton: merging them at every level would rebuild them each time.
    """
    if not isinstance(tree, Alt) or not _is_scalar(tree):
        return tree
    try:
        dfa = build_byte_dfa(tree)
    except RegexError:  # no value (contradicting constraints) or too large: left to the whole's build
        return tree
    return Automaton(dfa) if dfa.num_states <= MAX_MERGED_SCALAR_STATES else tree


def _is_scalar(tree: RegexNode) -> bool:
    """Whether ``tree`` has no member graph (object, array) and no call (free-form value)."""
    if isinstance(tree, Graph):
        return False
    if isinstance(tree, Automaton):
        return not has_calls(tree.dfa) and tree.dfa.num_states <= MAX_MERGED_SCALAR_STATES
    if isinstance(tree, (Alt, Concat)):
        return all(_is_scalar(item) for item in tree.items)
    if isinstance(tree, Repeat):
        return _is_scalar(tree.item)
    return True


def _exactly_one(kept: list[ByteDFA | None], removed: list[ByteDFA | None]) -> RegexNode:
    """Texts in exactly one of the languages: each branch's ``kept`` language minus the
    union of the others' ``removed`` ones (prefix/suffix unions).

    A branch is dropped only when both of its languages are empty: the two are built
    with opposite cuts, so one may be empty without the other (a branch that is only a
    recursion cut keeps the mark that over-approximates it, and takes nothing away).
    """
    live = [(k, r) for k, r in zip(kept, removed) if k is not None or r is not None]
    out = []
    before: list[ByteDFA | None] = [None]
    for _, dfa in live[:-1]:
        before.append(_union_opt(before[-1], dfa))
    after: ByteDFA | None = None
    for index in range(len(live) - 1, -1, -1):
        others = _union_opt(before[index], after)
        mine, dfa = live[index]
        only = mine if others is None or mine is None else difference(mine, others)
        if only is not None:
            out.append(Automaton(only))
        after = _union_opt(after, dfa)
    return alt(*reversed(out))


def _evaluated(spec: Spec, index: int, rest: Spec | None = None) -> frozenset:
    """What ``spec`` evaluates for unevaluated*: member names, name patterns, all names,
    item places, all items.  Applicators still pending beyond ``rest``'s (a nested anyOf,
    an if, a dependent schema: what they evaluate depends on the value) count as a mark of
    branch ``index`` of its own, so a set is never dropped for what they might add."""
    marks = {("name", name) for name in spec.properties}
    marks.update(("pattern", pattern) for rule in spec.key_rules for pattern, _ in rule.patterns)
    marks.update(("item", k) for k in range(len(spec.prefix_items)))
    if spec.evaluates_all_keys:
        marks.add(("all names",))
    if spec.rest_items or spec.evaluates_all_items:
        marks.add(("all items",))
    if rest is not None and any(len(getattr(spec, name)) > len(getattr(rest, name)) for name in VARYING_APPLICATORS):
        marks.add(("pending", index))
    return frozenset(marks)


def _growing_sets(marks: Sequence[frozenset], limit: int) -> list[tuple[int, ...]] | None:
    """The sets of two or more branches (by index) in which each branch has a mark no other
    one has, or None when there are more than ``limit``.  A set's sets are growing too, so
    the search extends growing sets only."""
    found: list[tuple[int, ...]] = []
    frontier = [((i,), marks[i]) for i in range(len(marks)) if marks[i]]
    while frontier:
        grown = []
        for indices, covered in frontier:
            for j in range(indices[-1] + 1, len(marks)):
                if marks[j] <= covered:
                    continue
                together = indices + (j,)
                if all(marks[i] - frozenset().union(*(marks[k] for k in together if k != i)) for i in together):
                    grown.append((together, covered | marks[j]))
        found.extend(indices for indices, _ in grown)
        if len(found) > limit:
            return None
        frontier = grown
    return found


def _without_unevaluated(spec: Spec) -> Spec:
    """The spec as a *condition* (if, not, other oneOf branches): unevaluated* belongs to the parent."""
    return spec.without(unevaluated_properties=[], unevaluated_items=[])


def _union_opt(a: ByteDFA | None, b: ByteDFA | None) -> ByteDFA | None:
    if a is None or b is None:
        return a or b
    return union(a, b)
