"""From merged schema records to the language of their JSON texts.

Once the serialisation is fixed (key order, string escapes, number spelling,
bounded whitespace), a non-recursive JSON Schema describes a regular language
except where a value is free-form (``{}``, ``additionalProperties: true``), whose
brackets nest without bound.  So the schema compiles to one byte DFA in which each
free-form value is a call into one shared any-value automaton (see
:mod:`constrain.automata.pushdown`; an integer ``max_any_depth`` embeds a bounded
copy instead), and masks come from the same trie-walk machinery as regexes.
A recursive definition is a callee of its own, called where it recurs; inside
the operands of products it is unrolled to ``max_recursion`` levels.  ``oneOf``, ``not``
and ``if``/``then``/``else`` are exact through DFA products (see
:mod:`constrain.automata.dfa_ops`), whose operands have their calls expanded.
"""

from __future__ import annotations

import json
import math
from typing import Any

from ...automata.byte_dfa import ByteDFA, build_byte_dfa
from ...automata.dfa_ops import intersect
from ...automata.member_sets import MemberRule
from ...automata.pushdown import call_marker
from ...automata.unique_items import ItemValues
from ...errors import RegexError, SchemaError
from ..regex import Automaton, Concat, RegexNode
from .arrays import ArrayEmission
from .callees import CalleeEmission, any_value_callee
from .combinators import CombinatorEmission, largest_parts
from .content import json_text_callee, json_text_dfa, json_text_string
from .disjoint import DisjointBranches
from .document import Loc, SchemaDocument, readable_key
from .formats import FORMATS, FORMAT_MAX_LENGTH, FORMAT_NOTES, UNENFORCEABLE_FORMATS
from .layout import Layout
from .member_graphs import any_order_graph, with_separators
from .numbers import EVERY_PLAIN, JSON_SPELLING, integer_tree, multiple_of_dfa, number_literal, number_tree
from .objects import ObjectEmission
from .spec import ANNOTATION_KEYWORDS, NO_SLOTS, Slots, Spec, SpecWalk, spec_of
from .strings import CountedString, LONG_STRING, counted_states, encoded_string, pattern_tree, string_tree
from .trees import NOTHING, alt, lit, rep, seq
from .values import ecma_validator_class, json_key, json_types, meets_content, regex_blame, unique_values


__all__ = ["SchemaEmitter", "largest_parts", "any_value_callee"]

# The _callee_symbols key of the callee of JSON documents inside strings (no schema pointer looks so).
_JSON_TEXT = ("contentMediaType: application/json",)
# Object constants are written in any order up to this many members (2**k states per object).
MAX_ANY_ORDER_MEMBERS = 6


class SchemaEmitter(CombinatorEmission, DisjointBranches, ObjectEmission, ArrayEmission,
                    CalleeEmission):
    """Compile one schema document to a regex tree (with embedded automata).

    This class holds the state of one compile and the entry points, scalars, enums and
    helpers; the rest of its methods live with their concern, one mixin per module:
    :class:`~.combinators.CombinatorEmission` (applicators), :class:`~.disjoint.DisjointBranches`
    (``oneOf`` branches apart, value types), :class:`~.objects.ObjectEmission`,
    :class:`~.arrays.ArrayEmission` and :class:`~.callees.CalleeEmission` (recursive and
    shared definitions, counted strings, free-form values, operands of products).  They
    share ``self`` as one class did; the split is by what a reader looks for.
    """

    def __init__(self, doc: SchemaDocument, layout: Layout, *, strict: bool, max_recursion: int,
                 max_any_depth: int | None,
                 any_order: bool = False, over: bool = False) -> None:
        self.doc = doc
        self.any_order = any_order
        self.layout = layout
        self.strict = strict
        self.max_recursion = max_recursion
        self.max_any_depth = max_any_depth
        self.notes: list[str] = doc.notes  # one list: references resolved while emitting add theirs
        self._validator = None
        self._group_types_memo: dict[tuple[str, int], frozenset[str]] = {}
        self._string_languages: dict[tuple, ByteDFA | RegexNode | None] = {}  # _string_language's memo
        self._recursive_memo: dict[tuple, tuple[RegexNode, int]] = {}  # (tree, built spelling-sensitive)
        # How numbers are spelled (numbers.py): plain inside a product's operands.
        self.spelling = JSON_SPELLING
        # Counts integer trees and numeric literals built at EVERY_PLAIN: where an operand
        # taken away (EVERY_PLAIN) and the same operand kept (PLAIN) could differ.
        self.spelling_sensitive = 0
        #: Whether the language being built is taken away from another (by ``not``, the
        #: ``if`` before ``else``, another ``oneOf`` branch): its cuts over-approximate
        #: (see :meth:`_taken_away`).  Flips at every nested product.  Set from the start,
        #: every cut of the whole language over-approximates (a probe: does the schema have
        #: values only past a cut?).
        self.over = over
        #: Counts the choices that depend on ``over`` (a depth bound met: a recursion cut or
        #: a free-form value expanded), so an operand built both ways knows whether they differ.
        self.cuts = 0
        #: Recursion cuts in a language kept (they refuse the deeper values): where the whole
        #: language comes out empty, these may be why (see ``schema_to_dfa``).
        self.kept_recursion_cuts = 0
        #: Products built for subschemas with unevaluated* of their own (:meth:`_with_operand`).
        self.operand_products = 0
        # (pointer, states) of the string and recursion automata built: what grew, when the whole is too large.
        self.sizes: list[tuple[str, int]] = []
        # The strings that are counted callees: COUNTED_SYMBOLS[j] calls entry j.
        self.counted: list[CountedString] = []
        # Definitions read by callees (recursive or shared): their symbol (None: built in place), by _callee_key.
        self._callee_symbols: dict[tuple[str, ...], int | None] = {}
        #: The callees built (recursive and shared definitions), by call symbol (see _build_callee).
        self.callees: dict[int, ByteDFA] = {}
        #: The callees that are arrays of distinct items, with how many values their
        #: items take (see :meth:`_unique_items_call`).
        self.unique_symbols: dict[int, ItemValues] = {}
        #: The callees that are objects whose members come in any order, with what the
        #: matcher checks of them (see :meth:`_any_order_call`).
        self.member_rules: dict[int, MemberRule] = {}
        self._wide_given = 0  # wide symbols given out (never reused)
        #: Objects split into loops by value class so far (see :meth:`_loops_by_class`), and
        #: whether that is off (in a recursive definition's body that it made uncallable).
        self._class_splits = 0
        self._class_splits_off = False
        #: How many anyOf/oneOf branches that are a reference beside sibling keywords are being
        #: built (merged, so recursion through them is unrolled: see :meth:`_note_cut`).
        self._merged_references = 0

    # -- entry points -------------------------------------------------------------
    def root(self) -> RegexNode:
        spec, chain = spec_of(self.doc, self.doc.root_loc, (), self.max_recursion)
        return self.spec_tree(spec, chain)

    def value_of(self, locs: list[Loc], chain: tuple[str, ...], slots: Slots = NO_SLOTS) -> RegexNode:
        """The language of values meeting every schema in ``locs`` (an implicit allOf),
        objects written with the member positions ``slots`` fixes (inside a product's operand)."""
        if not slots and all(loc.node is True or loc.node == {} for loc in locs):
            return self.any_value()
        if len(locs) > 1:  # the same schema met twice (merged sources both list it) is one constraint
            locs = list({loc.key: loc for loc in locs}.values())
        # Several schemas for one value: each one's unevaluated* sees its own subtree only.
        walk = SpecWalk(self.doc, list(chain), self.max_recursion, rooted=len(locs) == 1)
        spec = Spec(slots=slots)
        for loc in locs:
            spec = walk.absorb(spec, loc, frozenset())
        key = None
        if len(walk.chain) > len(chain) and walk.chain[-1] in chain:  # entering a recursive reference again
            call = self._recursive_call(locs, slots)
            if call is not None:
                return call
            key = (tuple(sorted(set(walk.chain))), tuple(walk.chain.count(k) for k in sorted(set(walk.chain))),
                   tuple(loc.key for loc in locs), slots, self.spelling, self.over)
            found = self._recursive_memo.get(key)
            if found is not None:
                self.spelling_sensitive += found[1]
                self.cuts += found[2]
                return found[0]
        elif len(walk.chain) > len(chain) and self._shareable(slots):  # a reference followed
            call = self._shared_call(locs)
            if call is not None:
                return call
        sensitive_before, cuts_before = self.spelling_sensitive, self.cuts
        tree = self.spec_tree(spec, tuple(walk.chain))
        if key is not None:
            tree = self._as_automaton(tree)
            self._recursive_memo[key] = (tree, int(self.spelling_sensitive > sensitive_before),
                                         int(self.cuts > cuts_before))
            if isinstance(tree, Automaton):  # an unrolled recursion level: a candidate for "what grew"
                self.sizes.append((locs[0].pointer or "#", tree.dfa.num_states))
        return tree

    # -- per type -----------------------------------------------------------------------
    def _type_tree(self, spec: Spec, name: str, chain: tuple[str, ...]) -> RegexNode:
        if name == "null":
            return lit("null")
        if name == "boolean":
            return alt(lit("true"), lit("false"))
        if name == "string":
            return self._string_tree(spec)
        if name == "number":
            integer = spec.types is not None and "number" not in spec.types
            return self._number_tree(spec, integer)
        if name == "object":
            return self._object_tree(spec, chain)
        return self._array_tree(spec, chain)

    def _string_tree(self, spec: Spec) -> RegexNode:
        if spec.json_content:
            tree = self._json_text(spec)
            if tree is not None:
                return tree
        formats = []
        for name, loc in spec.formats:
            if name in FORMATS:
                formats.append(name)
                if name in FORMAT_NOTES:
                    self.notes.append(f"{loc.pointer or '#'}/format: {name}: {FORMAT_NOTES[name]}")
            elif name in UNENFORCEABLE_FORMATS:
                self._unenforced(loc, "format", f"{name!r}: {UNENFORCEABLE_FORMATS[name]}")
            else:
                self.notes.append(f"{loc.pointer or '#'}/format: unknown format {name!r} is an annotation (not checked)")
        patterns = []
        for pattern, loc in spec.patterns:
            try:
                pattern_tree(pattern)
            except RegexError as err:
                raise SchemaError(regex_blame("pattern", pattern, err), (loc.pointer or "#") + "/pattern") from None
            patterns.append(pattern)
        max_length = min((n for n in [spec.max_length, *map(FORMAT_MAX_LENGTH.get, formats)] if n is not None),
                         default=None)
        tree = self._counted_call(spec.min_length, max_length, tuple(patterns), tuple(formats), _string_pointer(spec))
        if tree is not None:
            if not (patterns or formats) and max_length - spec.min_length < LONG_STRING:
                # inlined or expanded: it still costs its states (a pattern's callee stays a call)
                self.sizes.append((_string_pointer(spec), counted_states(max_length)))
            return tree
        try:
            tree = string_tree(spec.min_length, max_length, patterns, formats)
        except RegexError as err:
            raise SchemaError(_string_blame(spec, patterns, formats, err.reason), _string_pointer(spec)) from None
        self.sizes.append((_string_pointer(spec), _embedded_states(tree)))
        return tree

    def _json_text(self, spec: Spec) -> RegexNode | None:
        """A string whose content is a JSON text (draft 7's ``contentMediaType:
        application/json``): a call into the document's callee, or, inside a product's
        operands, the document unrolled to the operand depth and cut by polarity (see
        :mod:`.content`).  None where it cannot be enforced and ``strict`` is off."""
        loc = spec.json_content[0]
        if spec.patterns or spec.formats or spec.min_length or spec.max_length is not None:
            self._unenforced(loc, "contentMediaType", "a JSON document with other string constraints is not checked")
            return None
        if not self._shareable(NO_SLOTS):
            self.cuts += 1
            return json_text_string(Automaton(json_text_dfa(self._operand_depth, self.over)))
        if _JSON_TEXT not in self._callee_symbols:
            symbol = self._callee_symbols[_JSON_TEXT] = self._free_callee_symbol()
            if symbol is not None:
                self.callees[symbol] = json_text_callee(symbol)
        symbol = self._callee_symbols[_JSON_TEXT]
        if symbol is None:
            self._unenforced(loc, "contentMediaType", "no call symbol is left for the document's callee")
            return None
        return json_text_string(Automaton(call_marker(symbol)))

    def _number_tree(self, spec: Spec, integer: bool) -> RegexNode:
        low, high = spec.minimum, spec.maximum
        spelling = self.spelling
        if integer:
            self.spelling_sensitive += spelling == EVERY_PLAIN
            tree = integer_tree(_int_low(low), _int_high(high), spelling)
        else:
            tree = number_tree(low[0] if low else None, high[0] if high else None,
                               bool(low and low[1]), bool(high and high[1]), spelling)
        for step, loc in spec.multiples:
            if tree is NOTHING:
                break
            dfa = multiple_of_dfa(step, integer and spelling != EVERY_PLAIN)  # with zero fractions there
            if dfa is None:
                self._unenforced(loc, "multipleOf", f"a step of {step} needs more than 4096 remainders")
                continue
            both = intersect(build_byte_dfa(tree), dfa)
            tree = NOTHING if both is None else Automaton(both)
        return tree

    # -- enum / const -------------------------------------------------------------------
    def _enum_tree(self, spec: Spec) -> RegexNode:
        """The values every ``enum``/``const`` of ``spec`` lists, equal as JSON Schema counts
        (``0`` is ``-0.0``), each written as any list writes it: ``allOf`` of ``enum: [0]``
        and ``const: -0.0`` is zero, spelled ``0`` and ``-0.0``.  (Matched with signed
        zeros, the two lists had nothing in common, and under ``not`` nothing was taken
        away.)"""
        return alt(*(self._literal(v, spec.slots) for v in self._enum_values(spec)))

    def _enum_values(self, spec: Spec) -> list[Any]:
        """The values every enum/const of ``spec`` lists that meet the rest of ``spec``."""
        common = set.intersection(*({json_key(v, False) for v in values} for values in spec.enums))
        candidates = [v for values in spec.enums for v in values if json_key(v, False) in common]
        return [v for v in unique_values(candidates) if self._admits(spec, v)]

    def _admits(self, spec: Spec, value: Any) -> bool:
        """Whether ``value`` meets ``spec``: its types, what is pending (:meth:`_valid`), content."""
        return (spec.types is None or bool(spec.types & json_types(value))) and self._valid(value, spec) \
            and meets_content(value, spec)

    def _valid(self, value: Any, spec: Spec) -> bool:
        """Whether ``value`` meets what ``spec`` still requires (jsonschema, formats checked).

        The schema checked is each source's own assertions (its combinators and
        references stripped: those were merged or expanded already) plus the
        combinators still pending in ``spec``, so a branch being expanded never
        judges its own enum by the other branches.
        """
        checks = _pending_checks(spec, typed=not isinstance(value, (int, float)) or isinstance(value, bool))
        if not checks:  # most enums: a list of strings under "type": "string" (no validator is made)
            return True
        import jsonschema
        from referencing.exceptions import Unresolvable  # what jsonschema raises for a $ref it cannot follow

        if self._validator is None:
            cls_ = ecma_validator_class(
                jsonschema.validators.validator_for(self.doc.root, default=jsonschema.Draft202012Validator))
            self._validator = cls_(self.doc.root, format_checker=cls_.FORMAT_CHECKER)
        try:
            return self._validator.evolve(schema={"allOf": checks}).is_valid(value)
        except RegexError as err:
            raise SchemaError(f"cannot check enum value {value!r}: pattern {err.pattern!r} cannot be compiled: "
                              f"{err.reason}", spec.sources[0].pointer or "#") from None
        except (jsonschema.exceptions.SchemaError, Unresolvable, LookupError) as err:
            raise SchemaError(f"cannot check enum value {value!r} against the rest of the schema: {err}",
                              spec.sources[0].pointer or "#") from None
        except BaseException as err:  # the validator's own failures (a Rust panic is no Exception)
            if isinstance(err, (KeyboardInterrupt, SystemExit, GeneratorExit)):
                raise
            raise SchemaError(f"cannot check enum value {value!r} against the rest of the schema: the validator "
                              f"failed ({type(err).__name__})", spec.sources[0].pointer or "#") from None

    def _literal(self, value: Any, slots: Slots = NO_SLOTS) -> RegexNode:
        """The texts of an enum/const value.

        JSON equality ignores member order, so where it is safe an object is written
        in any member order (each member once, :func:`any_order_graph`): outside
        products for objects of up to :data:`MAX_ANY_ORDER_MEMBERS` members (larger
        ones keep the value's order), and always on the side of a product that is
        taken away, which must hold every text of its values, as it holds every
        spelling of its numbers (there a larger object takes away every text of its
        members' count drawn from its members: the value's orders, and texts with a
        repeated key, which is on the safe side).  On a kept side members keep the
        value's own order, the names ``slots`` fixes first, in slot order, as the
        schema objects beside them do.
        """
        layout = self.layout
        if isinstance(value, str):
            return lit(encoded_string(value))
        taken = self.spelling == EVERY_PLAIN
        small = isinstance(value, dict) and 1 < len(value) <= MAX_ANY_ORDER_MEMBERS
        if isinstance(value, dict) and len(value) > 1 and (taken or (small and not slots and self.spelling == JSON_SPELLING)):
            self.spelling_sensitive += taken  # a kept side writes one order: it must be built apart
            members = [(encoded_string(k), self._literal(v, NO_SLOTS), True) for k, v in value.items()]
            if small:
                graph = any_order_graph(members, [], len(value), len(value), layout)
            else:  # taken away: every sequence of that many members drawn from the value's
                one = alt(*(seq(lit(key), layout.colon(), member) for key, member, _ in members))
                graph = seq(one, rep(seq(layout.comma(), one), len(value) - 1, len(value) - 1))
            return seq(layout.opening("{"), graph, layout.closing("}"))
        if isinstance(value, dict):
            slotted = set(slots.names)
            keys = [k for k in slots.names if k in value] + [k for k in value if k not in slotted]
            members = [seq(lit(encoded_string(k)), layout.colon(), self._literal(value[k], slots.member(k))) for k in keys]
            return seq(layout.opening("{"), *with_separators(members, layout.comma()), layout.closing("}"))
        if isinstance(value, list):
            items = [self._literal(v, slots.items or NO_SLOTS) for v in value]
            return seq(layout.opening("["), *with_separators(items, layout.comma()), layout.closing("]"))
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            self.spelling_sensitive += self.spelling == EVERY_PLAIN
            return number_literal(value, self.spelling)
        return lit(json.dumps(value))

    # -- helpers ------------------------------------------------------------------------
    def _check_unsupported(self, spec: Spec) -> None:
        for loc, keyword, why in spec.unsupported:
            self._unenforced(loc, keyword, why)

    def _note_cut(self, chain: tuple[str, ...]) -> None:
        """Say where recursion is unrolled outside the operands of products (where
        ``max_recursion`` documents it): a recursive reference in an anyOf/oneOf branch
        merged with sibling keywords (``{"minProperties": 1, "anyOf": [{"$ref": ...}]}``)
        has no callee of its own, and values nested deeper are refused."""
        where = readable_key(chain[-1]) if chain else "#"
        levels = f"{self.max_recursion} level{'' if self.max_recursion == 1 else 's'}"
        self._note(f"{where}: recursion merged with sibling keywords is unrolled {levels} deep; deeper values are refused")

    def _unenforced(self, loc: Loc, keyword: str, why: str) -> None:
        self._not_exact((loc.pointer or "#") + "/" + keyword, keyword, why)

    def _not_exact(self, where: str, keyword: str, why: str) -> None:
        """Raise in strict mode; otherwise note that ``keyword`` at ``where`` is over-approximated."""
        if self.strict:
            raise SchemaError(f"{keyword} cannot be enforced exactly ({why}); pass strict=False to relax it", where)
        self._note(f"{where}: {keyword} not enforced ({why})")

    def _note(self, note: str) -> None:
        """Add ``note`` to the compile's notes, once (the same place may be built again)."""
        if note not in self.notes:
            self.notes.append(note)

    def _dfa(self, tree: RegexNode) -> ByteDFA | None:
        if tree is NOTHING:
            return None
        if isinstance(tree, Automaton):
            return tree.dfa
        return build_byte_dfa(tree)

    def _as_automaton(self, tree: RegexNode) -> RegexNode:
        dfa = self._dfa(tree)
        return NOTHING if dfa is None else Automaton(dfa)


_STRIPPED = frozenset(("enum", "const", "allOf", "anyOf", "oneOf", "not", "if", "then", "else", "$ref",
                       "dependentSchemas", "dependentRequired", "dependencies", "$defs", "definitions"))


def _string_pointer(spec: Spec) -> str:
    """The pointer of the schema that sets the string's length or pattern (a $ref target, maybe)."""
    for loc in spec.sources:
        if isinstance(loc.node, dict) and any(k in loc.node for k in ("maxLength", "minLength", "pattern", "format")):
            return loc.pointer or "#"
    return (spec.sources[0].pointer if spec.sources else "") or "#"


def _string_blame(spec: Spec, patterns: list[str], formats: list[str], reason: str) -> str:
    """Why a string's automaton could not be built: its patterns, formats and length bounds, and the reason
    (too many states, or no string at all)."""
    parts = [f"pattern {p!r}" for p in patterns] + [f"format {f!r}" for f in formats]
    bounds = ([f"minLength {spec.min_length}"] if spec.min_length else []) + \
             ([f"maxLength {spec.max_length}"] if spec.max_length is not None else [])
    what = " with ".join(filter(None, [" and ".join(parts), " and ".join(bounds)]))
    return f"{what or 'the string'} cannot be built: {reason}"


def _embedded_states(tree: RegexNode) -> int:
    """States of the automata embedded in a string tree (the quotes around one automaton)."""
    items = tree.items if isinstance(tree, Concat) else (tree,)
    return sum(item.dfa.num_states for item in items if isinstance(item, Automaton))


def _pending_checks(spec: Spec, typed: bool = False) -> list[Any]:
    """Schemas an enum candidate must still pass: sources' own assertions and pending combinators.

    ``typed``: the candidate's type was checked against ``spec.types``, which every
    source's ``type`` narrowed, so ``type`` is left out (a number keeps it: draft 4
    counts ``1.0`` as no integer, which only the validator knows)."""
    checks: list[Any] = []
    stripped = _STRIPPED | {"type"} if typed else _STRIPPED
    for loc in spec.sources:
        own = {k: v for k, v in loc.node.items() if k not in stripped} if isinstance(loc.node, dict) else loc.node
        if own and any(k not in ANNOTATION_KEYWORDS for k in own):
            checks.append(own)
    checks += [{"anyOf": group.node} for group in spec.any_of]
    checks += [{"oneOf": group.node} for group in spec.one_of]
    checks += [group.check for group in spec.presence]
    checks += [{"not": loc.node} for loc in spec.nots]
    checks += [{k: loc.node[k] for k in ("if", "then", "else") if k in loc.node} for loc in spec.conditionals]
    checks += [{keyword: {key: loc.node[keyword][key]}} for loc, key, keyword in spec.dependencies]
    return checks


def _int_low(bound) -> int | None:
    if bound is None:
        return None
    value, exclusive = bound
    low = math.ceil(value)
    return low + 1 if exclusive and low == value else low


def _int_high(bound) -> int | None:
    if bound is None:
        return None
    value, exclusive = bound
    high = math.floor(value)
    return high - 1 if exclusive and high == value else high


