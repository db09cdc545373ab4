"""Objects: members in schema order or any order, member groups, extra members.

Part of :class:`~.emit.SchemaEmitter` (see :mod:`.emit`), which holds the state these
methods read and write; a module per concern keeps each part readable on its own.
"""

from __future__ import annotations

import hashlib
import itertools
import math
from functools import partial
from typing import Any

import numpy as np

from ...automata.byte_dfa import ByteDFA
from ...automata.dfa_ops import intersect, widen_any_suffix, without_words
from ...automata.pushdown import call_marker
from ..regex import Automaton, RegexNode
from .callees import callable_body, plain_reference
from .document import Loc
from .member_graphs import any_order_graph, keys_by_value, members_graph
from .member_groups import (Dependency, Presence, ValueClasses, chosen_classes, constraint_kinds, dependency_positions,
                            extra_key_count, implied_by, is_member_wise, member_names, member_rule, negated_member,
                            presence_positions)
from .numbers import PLAIN
from .spec import KeyRule, MemberGroup, NO_SLOTS, Slots, Spec, admits_nothing, group_branches
from .strings import any_string_dfa, encoded_string
from .trees import EMPTY, NOTHING, alt, separated_loop, seq
from .values import key_classes, pattern_key_dfa, search_name


#: property_order="any" where no member loop can stand (keys that cannot be counted,
#: no call here): the subset graph, 2**k copies of the
#: values, up to this many members (at 6, ui5.yaml and three others passed the state
#: limit or the compile timeout); larger objects keep schema order.
MAX_GRAPH_ORDER_MEMBERS = 3

#: An any-order object whose member groups split members' values into classes is, per
#: choice of a class (or absence) for each such member, a loop of its own; at most this
#: many loops (see ``SchemaEmitter._loops_by_class``): each holds every member's value,
#: and the classes a value fails are products (at 12, a ``oneOf`` of three tagged kinds,
#: Github_trivial o83138, compiled in 2.8x the time)...
MAX_CLASS_LOOPS = 6

#: ... and at most this many choices are searched for the loops some object can meet.
MAX_CLASS_CHOICES = 256

# propertyNames that no string satisfies: the object can have no member at all.
_NO_NAMES = ByteDFA(np.full((1, 256), -1, dtype=np.int32), np.zeros(1, dtype=bool), 0)


class ObjectEmission:
    """An object's language: members in schema order (a graph of optional members) or any
    order (a member loop kept by the matcher), member groups, value classes, extra members."""

    def _object_tree(self, spec: Spec, chain: tuple[str, ...]) -> RegexNode:
        layout = self.layout
        if spec.unevaluated_properties and not spec.evaluates_all_keys:
            # Keys no merged source lists or pattern-matches must meet unevaluatedProperties.
            patterns = tuple(p for rule in spec.key_rules for p in rule.patterns)
            for loc in spec.unevaluated_properties:
                spec = spec.without(key_rules=spec.key_rules + [KeyRule(frozenset(spec.properties), patterns, loc)])
        names_dfa = self._property_names_dfa(spec, chain)
        members: list[tuple[str, RegexNode, bool]] = []
        slots = spec.slots
        listed = member_names(spec)
        for name in listed:
            value = self.value_of(self._locs_for_key(spec, name), chain, slots.member(name))
            key_text = encoded_string(name)
            if names_dfa is _NO_NAMES or (names_dfa is not None and not names_dfa.matches(key_text.encode())):
                value = NOTHING
            required = name in spec.required
            if value is NOTHING and required:
                return NOTHING
            if value is not NOTHING:
                members.append((key_text, value, required))
        extras = self._extra_members(spec, set(listed), names_dfa, chain)
        where = {key: i for i, (key, _, _) in enumerate(members)}
        groups = presence_positions(spec, where) + dependency_positions(spec, where)
        variants = self._member_variants(spec, where, chain)
        if self.any_order and not slots and (len(members) > 1 or extras):
            call = (self._loops_by_class(spec, members, extras, groups, variants) if variants
                    else self._any_order_call(spec, members, extras, groups))
            if call is not None:
                return call
        elif extras and not variants and self._shareable(slots) and _extras_counted(spec, members):
            # Schema order counts the keys written: two additional members with one name
            # would count twice towards minProperties (a JSON object keeps one of them).
            # The member loop keeps the names written (in any order); where it cannot stand
            # (keys that cannot be counted, no call here), the count stays over the text, and
            # generate_json's parse refuses an output that repeats a key to make it up.
            call = self._any_order_call(spec, members, extras, groups)
            if call is not None:
                return call
            self._note(f"{(spec.sources[0].pointer if spec.sources else '') or '#'}/minProperties: counted over "
                       "the keys written (a repeated additional key counts twice; parsed outputs are checked)")
        if self.any_order and not slots and not variants and (len(members) > 1 or extras) \
                and len(members) <= MAX_GRAPH_ORDER_MEMBERS:
            graph = any_order_graph(members, extras, spec.min_properties, spec.max_properties, layout, groups)
        else:  # operands of products and value classes: one order
            if self.any_order and not slots and (variants or len(members) > MAX_GRAPH_ORDER_MEMBERS):
                self.notes.append(f"{spec.sources[0].pointer or '#'}: {len(members)} properties are kept in schema "
                                  "order (property_order='any' needs a member loop here, or at most "
                                  f"{MAX_GRAPH_ORDER_MEMBERS} members, and no oneOf of member constraints)")
            graph = members_graph(members, extras, spec.min_properties, spec.max_properties, layout, groups,
                                   variants)
        if graph is NOTHING:
            return NOTHING
        return seq(layout.opening("{"), graph, layout.closing("}"))

    def _any_order_call(self, spec: Spec, members: list[tuple[str, RegexNode, bool]],
                        extras: list[tuple[RegexNode, RegexNode]],
                        groups: list["Presence | Dependency"] = ()) -> RegexNode | None:
        """An object whose members come in any order as a call into a callee of its own: the
        loop ``{ member (, member)* }``, whose repeats, required keys and
        ``minProperties`` the matcher keeps (:mod:`constrain.automata.member_sets`; the
        rule goes into :attr:`member_rules`).  Callees of equal languages and rules are one.

        Member groups (``oneOf``/``anyOf``/``if`` over required names, dependencies) are
        rules over the names written too: the matcher refuses a key after which none of
        them could hold (:meth:`MemberRule.feasible`, a search over the
        :data:`MAX_GROUP_NAMES` names at most that they mention besides ``required``).

        ``maxProperties`` below the keys the object may hold is a count the matcher keeps
        too: no comma once it is reached, and only the names the rule still needs once
        they fill what is left (:meth:`MemberRule.open_to_others`).

        None where that is not exact or cannot stand: where a failure could come before
        the closing brace that no name search sees (keys :func:`string_values` cannot
        count), where no call may stand (a product's operand, ``max_any_depth``, all
        wide symbols taken).
        """
        if not self._shareable(spec.slots) or not self._wide_symbols_left():
            return None
        rule = member_rule(spec, members, extra_key_count(extras), groups)
        if rule is None:
            return None
        if not rule.feasible(frozenset()):
            return NOTHING  # no object meets the rule
        layout = self.layout
        member = alt(*(seq(alt(*keys), layout.colon(), value) for value, keys in keys_by_value(members, extras)))
        body = separated_loop(member, layout.comma(), rule.closes(frozenset()))  # else a member at least
        dfa = self._dfa(seq(layout.opening("{"), body, layout.closing("}")))
        if dfa is None or not callable_body(dfa):
            return None
        key = ("members", _digest(dfa), repr(rule))
        if key in self._callee_symbols:
            return self._call_of(key)
        symbol = self._callee_symbols[key] = self._wide_symbol()
        self.callees[symbol] = dfa
        self.member_rules[symbol] = rule
        self.sizes.append(((spec.sources[0].pointer if spec.sources else "") or "#", dfa.num_states))
        return Automaton(call_marker(symbol))

    def _loops_by_class(self, spec: Spec, members: list[tuple[str, RegexNode, bool]],
                        extras: list[tuple[RegexNode, RegexNode]], groups: list["Presence | Dependency"],
                        variants: dict[int, "ValueClasses"]) -> RegexNode | None:
        """An any-order object whose member groups split members' values into classes, as
        one member loop per choice of a class, or of absence, for each such member: the
        member then required with its value in that class, or left out.  With the
        choices made every group is over names only (a branch a class rules out, or
        that requires a member left out, cannot hold), which the loop's rule keeps.
        Each object falls in exactly one loop (its values' classes and its names say
        which), so the union is exact.  ``if: {"properties": {"type": {"const":
        "static"}}}`` per variant (Github_hard o27348) is one loop per tag value and one
        for the rest; ``oneOf`` of two kinds told apart by required members with typed
        values (Github_easy o78062) a few: the choices no object can meet (two ``oneOf``
        branches both holding) make no loop.  None past :data:`MAX_CLASS_LOOPS` loops
        (:data:`MAX_CLASS_CHOICES` choices searched), or where a loop cannot stand (see
        :meth:`_any_order_call`)."""
        if self._class_splits_off:
            return None
        positions = sorted(variants)
        if any(variants[p].splits_widely() for p in positions):
            return None  # every class is built: 2**k of them for k constraints (the schema-order graph builds few)

        def absence(p: int) -> list[None]:
            return [] if members[p][2] else [None]  # a required member is never left out

        # First on names alone, over what each class may rule out: no class is built
        # where the loops would be too many.
        possible = [[(members[p][1], out) for out in variants[p].possible()] + absence(p) for p in positions]
        if math.prod(map(len, possible)) > MAX_CLASS_CHOICES:
            return None
        if self._feasible_choices(spec, members, extras, groups, positions, possible, MAX_CLASS_LOOPS) is None:
            return None
        choices = [variants[p].every_class() + absence(p) for p in positions]
        loops = self._feasible_choices(spec, members, extras, groups, positions, choices, MAX_CLASS_LOOPS)
        if loops is None:
            return None
        built = []
        for chosen, resolved in loops:
            loop = self._any_order_call(spec, chosen, extras, resolved)
            if loop is None:
                return None
            built.append(loop)
        self._class_splits += len(built) > 1
        return alt(*built)

    @staticmethod
    def _feasible_choices(spec: Spec, members: list[tuple[str, RegexNode, bool]], extras: list,
                          groups: list["Presence | Dependency"], positions: list[int], choices: list[list],
                          limit: int) -> list[tuple[list, list]] | None:
        """The (members, groups) of each choice some object can meet (see
        :func:`chosen_classes`), or None past ``limit`` of them or where a rule cannot stand."""
        found, extra_keys = [], extra_key_count(extras)
        for combination in itertools.product(*choices):
            chosen, resolved = chosen_classes(members, groups, positions, combination)
            rule = member_rule(spec, chosen, extra_keys, resolved)
            if rule is None:
                return None
            if rule.feasible(frozenset()):
                found.append((chosen, resolved))
                if len(found) > limit:
                    return None
        return found

    def _member_variants(self, spec: Spec, where: dict[str, int], chain: tuple[str, ...]) -> dict[int, "ValueClasses"]:
        """For each member the member groups' branches constrain (see :func:`is_member_wise`):
        its value classes (:class:`ValueClasses`), by position."""
        variants: dict[int, ValueClasses] = {}
        for name, kinds in constraint_kinds(spec.presence).items():
            position = where.get(encoded_string(name))
            if position is not None:
                locs = [loc for loc, _ in kinds]
                build = partial(self._value_classes, self._locs_for_key(spec, name), locs, chain, spec.slots.member(name))
                variants[position] = ValueClasses([pairs for _, pairs in kinds], build, [loc.node for loc in locs])
        return variants

    def _value_classes(self, base: list[Loc], kinds: list[Loc], chain: tuple[str, ...], slots: Slots,
                       relevant: tuple[int, ...], forced: tuple[int, ...]) -> list[tuple[RegexNode, tuple[int, ...]]]:
        """The values of ``base`` split by which of the ``relevant`` constraints they meet,
        those ``forced`` met by all: ``(language, constraints failed)`` per non-empty class.

        A class is ``base`` with the constraints it meets merged in and the others
        negated (a product only where a constraint is more than a type or a constant).
        Classes are split one constraint at a time, dropping the empty ones: ``k``
        constants for one member (``if: {"properties": {"kind": {"const": ...}}}`` per
        variant) make ``k + 1`` classes, not ``2**k``.
        """
        # A constraint the base implies splits nothing: no value of the member fails it.
        free = [k for k in relevant if k not in forced and not implied_by(base, kinds[k], self.doc.draft)]
        if not free:
            tree = self._class_tree(base, [kinds[i] for i in forced], [], chain, slots)
            return [] if tree is NOTHING else [(tree, ())]
        classes: list[tuple[tuple[int, ...], tuple[int, ...], RegexNode]] = [(forced, (), EMPTY)]  # (free: not empty)
        for k in free:
            split = []
            for met, failed, _ in classes:
                for side in ((met + (k,), failed), (met, failed + (k,))):
                    tree = self._class_tree(base, [kinds[i] for i in side[0]], [kinds[i] for i in side[1]], chain, slots)
                    if tree is not NOTHING:
                        split.append((*side, tree))
            classes = split
        return [(tree, failed) for _, failed, tree in classes]

    def _member_group(self, loc: Loc, rule: str, spec: Spec, branches: list[Loc | None] | None = None,
                      schema: Any = None) -> MemberGroup | None:
        """``loc``'s oneOf (``rule``) or conditional (``"if"``; or the given ``branches``
        and the ``schema`` they stand for) as a member group of ``spec``'s object, its
        branches' plain references followed once, where it is member-wise (None
        otherwise: see :func:`is_member_wise`)."""
        if branches is None:
            if rule != "if" and (not isinstance(loc.node, list) or len(loc.node) < 2):
                return None
            branches = group_branches(loc, rule)
        followed = []
        for branch in branches:
            keyword = plain_reference(branch.node, self.doc.draft) if branch is not None else None
            if keyword is not None:
                branch = self.doc.resolve(branch, branch.node[keyword], keyword)
            followed.append(negated_member(branch) if branch is not None else None)
        group = MemberGroup(loc, rule, tuple(followed), schema)
        return group if is_member_wise(group, spec) else None

    def _class_tree(self, base: list[Loc], met: list[Loc], failed: list[Loc], chain: tuple[str, ...],
                    slots: Slots) -> RegexNode:
        """The values of ``base`` meeting every schema of ``met`` and none of ``failed``."""
        if not failed:
            return self.value_of(base + met, chain, slots)
        record, record_chain = self._walked(base + met, chain, slots)
        return self.spec_tree(record.without(nots=record.nots + failed), record_chain)

    def _locs_for_key(self, spec: Spec, name: str) -> list[Loc]:
        """Every schema a member named ``name`` must meet: its properties, else each rule's patterns/additional."""
        locs = list(spec.properties.get(name, ()))
        for rule in spec.key_rules:
            matched = [loc for pattern, loc in rule.patterns if search_name(pattern, name, loc)]
            locs += matched  # patternProperties apply to listed properties too
            if not matched and rule.additional is not None and name not in rule.names:
                locs.append(rule.additional)
        return locs

    def _extra_members(self, spec: Spec, listed: set[str], names_dfa: ByteDFA | None, chain) -> list[tuple[RegexNode, RegexNode]]:
        """(key language, value language) classes for members not listed in properties:
        one per set of patterns a key can match together (see :func:`key_classes`).

        No classes where a merged branch says ``"additionalProperties": false`` (or another
        schema no value meets) with no ``patternProperties``: it refuses every key no branch
        lists, so the key automaton (any string less the listed names) would be built for
        nothing; a third of the objects of median schemas are written so."""
        if any(rule.additional is not None and admits_nothing(rule.additional.node) and not rule.patterns
               for rule in spec.key_rules):
            return []
        patterns = [(pattern, loc, index) for index, rule in enumerate(spec.key_rules) for pattern, loc in rule.patterns]
        all_keys = any_string_dfa()
        base_keys = without_words(all_keys, [encoded_string(n).encode() for n in sorted(listed)]) if listed else all_keys
        if names_dfa is _NO_NAMES:
            return []
        if names_dfa is not None and base_keys is not None:
            base_keys = intersect(base_keys, names_dfa)
        if base_keys is None:
            return []
        classes = []
        pattern_dfas = [pattern_key_dfa(pattern, loc) for pattern, loc, _ in patterns]
        for keys, matched in key_classes(base_keys, pattern_dfas, [loc for _, loc, _ in patterns]):
            locs = [patterns[i][1] for i in matched]
            for index, rule in enumerate(spec.key_rules):
                if rule.additional is not None and not any(patterns[i][2] == index for i in matched):
                    locs.append(rule.additional)
            value = self.value_of(locs, chain, spec.slots.extra or NO_SLOTS)
            if value is not NOTHING:
                classes.append((Automaton(keys), value))
        return classes

    def _property_names_dfa(self, spec: Spec, chain) -> ByteDFA | None:
        if not spec.property_names:
            return None
        with self.numbers_spelled(PLAIN):  # an operand of a product (names are strings: spelling is moot)
            tree = self.value_of(spec.property_names, chain)
        strings = any_string_dfa()
        if tree is NOTHING:
            return _NO_NAMES
        names = intersect(strings, widen_any_suffix(self._plain(self._dfa(tree), self.over)))
        return names if names is not None else _NO_NAMES


def _extras_counted(spec: Spec, members: list[tuple[str, RegexNode, bool]]) -> bool:
    """Whether ``minProperties`` may need two additional members or more: then, written in
    schema order, a repeated additional name could make up the count."""
    return spec.min_properties >= sum(required for _, _, required in members) + 2


def _digest(dfa: ByteDFA) -> str:
    """A digest of ``dfa``'s table: callees of equal languages (and rules) are built once.

    Hashes the table's byte runs (:meth:`ByteDFA.run_table`, memoised on the DFA), about
    a tenth of its 256 columns: the runs and the accepting states determine the table."""
    return hashlib.blake2b(dfa.run_table().tobytes() + dfa.accepting.tobytes() + str(dfa.start).encode(),
                           digest_size=16).hexdigest()
