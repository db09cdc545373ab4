"""The JSON Schema compiler against ``jsonschema`` as the oracle.

For every keyword, candidate values (hand-picked plus random ones near the
boundaries) are serialised the documented way (``json.dumps(v, ensure_ascii=False)``,
keys in schema order) and must be accepted by the compiled DFA exactly when
``jsonschema`` (format checker on) says the value is valid.  Formats that the
installed ``jsonschema`` does not check (uri, hostname, duration) are decided by
hand-written verdicts instead.  Some values also go through a :class:`Matcher` with
the Llama-3 tokenizer, EOS included.  Masks along random walks are compared with a
brute-force oracle over the whole vocabulary that enumerates the schema's (finite)
language from values ``jsonschema`` validates, independent of our automata.
"""

from __future__ import annotations

import base64
import functools
import itertools
import json
import math
import random
import re
from decimal import Decimal
from fractions import Fraction

import jsonschema
import pytest

from constrain import Compiler, Matcher, SchemaError
from constrain.grammar.json_schema import UNSATISFIABLE, UNSATISFIABLE_WITHIN_CUTS, JsonSchemaOptions, schema_to_dfa
from constrain.grammar.json_schema.combinators import _growing_sets
from constrain.grammar.json_schema.objects import MAX_GRAPH_ORDER_MEMBERS
from constrain.grammar.json_schema.formats import FORMATS
from constrain.automata.byte_dfa import build_byte_dfa
from constrain.grammar.json_schema.document import resolve_uri
from constrain.grammar.json_schema.spec import Spec, absorption_order, copy_spec, merge_orders
from constrain.testing import bitmask_to_ids, json_schema_instance_text, value_depth


# -- helpers ---------------------------------------------------------------------------------------------------------

@functools.lru_cache(maxsize=None)
def _compiled(schema_text: str, whitespace: str = "flexible", max_whitespace: int = 12):
    """The schema's automaton (a ByteDFA, or a PushdownDFA where free-form values call), compiled once."""
    return schema_to_dfa(json.loads(schema_text), JsonSchemaOptions(whitespace, max_whitespace)).automaton


def dfa_for(schema, **options):
    return _compiled(json.dumps(schema), **options)


def _exact_multiple_of(validator, step, instance, schema):
    """``multipleOf`` on the decimal values as written (jsonschema divides floats: 0.3 / 0.1 fails)."""
    if validator.is_type(instance, "number"):
        if Fraction(str(instance)) % Fraction(str(step)):
            yield jsonschema.ValidationError(f"{instance!r} is not a multiple of {step!r}")


@functools.lru_cache(maxsize=None)
def _exact_validator_class(cls):
    return jsonschema.validators.extend(cls, {"multipleOf": _exact_multiple_of})


def is_valid(schema, value) -> bool:
    """The oracle: ``jsonschema`` with the format checker of the schema's draft.

    Only ``multipleOf`` is replaced, by exact decimal arithmetic on the number as
    JSON writes it (the schema language is about decimal texts, not binary floats).
    """
    cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
    return _exact_validator_class(cls)(schema, format_checker=cls.FORMAT_CHECKER).is_valid(value)


def text_of(value) -> str:
    return json.dumps(value, ensure_ascii=False)


def key_order(schema) -> list[str]:
    """The documented member order: the ``properties`` orders met walking the schema (its
    ``allOf`` branches and own members in the order written) and its combinator branches,
    merged one after the other (``merge_orders``: each listed order is
    kept where the lists agree), then ``required`` names not among them, in order of
    first mention."""
    props: list[str] = []
    required: dict[str, None] = {}

    def walk(node):
        nonlocal props
        if not isinstance(node, dict):
            return
        for part in absorption_order(node):  # allOf and the schema's own members, as written
            if part == "allOf":
                for branch in node["allOf"]:
                    walk(branch)
            elif part == "own":
                listed = list(node.get("properties", {}))
                props = merge_orders([props, listed])
                required.update(dict.fromkeys(node.get("required", [])))
        for key in ("anyOf", "oneOf"):
            for branch in node.get(key, []):
                walk(branch)
        for key in ("if", "then", "else"):
            walk(node.get(key))
        for branch in node.get("dependentSchemas", {}).values():
            walk(branch)

    walk(schema)
    return props + [name for name in required if name not in props]


def documented_text(schema, value) -> str:
    """``json.dumps(value, ensure_ascii=False)`` with a top-level object's keys in documented order."""
    if isinstance(value, dict):
        order = key_order(schema)
        listed = [k for k in order if k in value]
        value = {k: value[k] for k in listed + [k for k in value if k not in order]}
    return text_of(value)


def mismatches(schema, values):
    """Values whose DFA verdict differs from the oracle's, as (text, oracle verdict)."""
    dfa = dfa_for(schema)
    out = []
    for value in values:
        text = documented_text(schema, value)
        want = is_valid(schema, value)
        if dfa.matches(text.encode()) != want:
            out.append((text, want))
    return out


def assert_agrees(schema, values, *, min_valid=1, min_invalid=1):
    """The DFA accepts exactly the valid candidates, and both verdicts occur."""
    values = list(values)
    verdicts = [is_valid(schema, v) for v in values]
    assert sum(verdicts) >= min_valid and len(verdicts) - sum(verdicts) >= min_invalid, "weak candidate set"
    assert not mismatches(schema, values), mismatches(schema, values)


RNG = random.Random(20261122)


def near(*points, spread=3, count=12):
    """Integers at and around ``points`` plus a few random ones nearby."""
    out = set()
    for p in points:
        out.update(range(p - spread, p + spread + 1))
        out.update(RNG.randint(p - 10 * spread, p + 10 * spread) for _ in range(count))
    return sorted(out)


ALPHABET = "aZ9 \"\\/\n\t\x01é€😀-_.@"


def random_strings(count, max_len, alphabet=ALPHABET):
    return ["".join(RNG.choice(alphabet) for _ in range(RNG.randint(0, max_len))) for _ in range(count)]


SCALARS = [None, True, False, 0, 1, -1, 2.5, "", "a", "1", [], {}, [1], {"a": 1}]


# -- type ------------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("type_", ["null", "boolean", "integer", "number", "string", "array", "object",
                                   ["string", "null"], ["integer", "boolean"], ["number", "array"]])
def test_type(type_):
    schema = {"type": type_}
    values = SCALARS + [12345678901234567890, -0.5, 1e-7, 3.25e-40, "é\n😀", [None, [True]], {"b": {"c": []}}]
    assert_agrees(schema, values)


def test_empty_schema_and_true_accept_any_shallow_value():
    for schema in ({}, True):
        dfa = _compiled(json.dumps(schema))
        for value in SCALARS + [{"a": [1, {"b": None}]}, 1.5e300]:
            assert dfa.matches(text_of(value).encode()), value
        assert not dfa.matches(b"{\"a\": 1,}") and not dfa.matches(b"01")


def test_integers_are_canonical_numbers_any_json_form():
    """Documented: integers are written canonically; unbounded numbers take any JSON number form."""
    dfa = dfa_for({"type": "integer"})
    assert dfa.matches(b"-12") and not dfa.matches(b"012") and not dfa.matches(b"-0012")
    number = dfa_for({"type": "number"})
    for text in (b"0", b"-0.5", b"1e5", b"1.25E-3", b"-2e+10"):
        assert number.matches(text), text
    for text in (b"01", b".5", b"1.", b"+1", b"1e", b"NaN", b"Infinity"):
        assert not number.matches(text), text


# -- objects ---------------------------------------------------------------------------------------------------------

def object_candidates(keys, values, max_keys=3):
    """Objects over ``keys`` (in the given order) with values drawn from ``values``."""
    out = []
    for n in range(max_keys + 1):
        for combo in itertools.combinations(keys, n):
            for _ in range(3):
                out.append({k: RNG.choice(values) for k in combo})
    return out


OBJECT_SCHEMAS = {
    "properties+required": {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "string"}},
                            "required": ["a"]},
    "additional false": {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "boolean"}},
                         "additionalProperties": False},
    "additional true": {"type": "object", "properties": {"a": {"type": "integer"}}, "additionalProperties": True},
    "additional schema": {"type": "object", "properties": {"a": {"type": "string"}},
                          "additionalProperties": {"type": "integer", "minimum": 0}},
    "patternProperties": {"type": "object", "patternProperties": {"^x-": {"type": "integer"}, "id$": {"type": "string"}},
                          "additionalProperties": False},
    "propertyNames": {"type": "object", "propertyNames": {"pattern": "^[a-c]+$", "maxLength": 2}},
    "min/maxProperties": {"type": "object", "minProperties": 1, "maxProperties": 2},
    "required only": {"required": ["a", "x-1"]},
    "dependentRequired": {"type": "object", "properties": {"a": {}, "b": {}, "c": {}},
                          "dependentRequired": {"a": ["b"], "c": ["a", "b"]}},
    "dependentSchemas": {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
                         "dependentSchemas": {"a": {"required": ["b"], "properties": {"b": {"minimum": 5}}}}},
    "dependencies draft7": {"$schema": "http://json-schema.org/draft-07/schema#", "type": "object",
                            "properties": {"a": {}, "b": {}, "c": {"type": "integer"}},
                            "dependencies": {"a": ["b"], "c": {"properties": {"a": {"type": "string"}}}}},
}
OBJECT_KEYS = ["a", "b", "c", "x-1", "zid", "ab", "abc"]
OBJECT_VALUES = [0, 7, -1, "s", "", True, None, 2.5, [1], {"k": 1}]


@pytest.mark.parametrize("name", sorted(OBJECT_SCHEMAS))
def test_object_keywords(name):
    schema = OBJECT_SCHEMAS[name]
    order = list(schema.get("properties", {})) + [k for k in OBJECT_KEYS if k not in schema.get("properties", {})]
    values = object_candidates(order, OBJECT_VALUES) + [1, "a", None, []]
    assert_agrees(schema, values)


def test_keys_follow_schema_order_then_additional():
    schema = {"type": "object", "properties": {"b": {"type": "integer"}, "a": {"type": "integer"}}}
    dfa = dfa_for(schema)
    assert dfa.matches(b'{"b": 1, "a": 2}') and dfa.matches(b'{"a": 2}')
    assert not dfa.matches(b'{"a": 2, "b": 1}')  # documented: schema order only
    assert dfa.matches(b'{"b": 1, "zz": [1]}') and not dfa.matches(b'{"b": 1, "b": 2}')


def test_objects_of_thousands_of_optional_members_compile():
    """Where an object may end is settled across its skips without recursion: 1,500
    optional members (past Python's recursion limit) compile, in schema order, and end
    after any member, with a required one last only after it."""
    names = [f"p{i}" for i in range(1500)]
    dfa = dfa_for({"type": "object", "properties": {name: {"type": "integer"} for name in names},
                   "additionalProperties": False})
    assert dfa.matches(b"{}") and dfa.matches(b'{"p0": 1}') and dfa.matches(b'{"p1499": 2}')
    assert dfa.matches(b'{"p3": 1, "p7": 2}') and not dfa.matches(b'{"p7": 1, "p3": 2}')
    assert not dfa.matches(b'{"p3": 1, "p3": 2}') and not dfa.matches(b'{"q": 1}')
    required = dfa_for({"type": "object", "properties": {name: {"type": "integer"} for name in names},
                        "required": ["p1499"], "additionalProperties": False})
    assert required.matches(b'{"p5": 1, "p1499": 2}') and required.matches(b'{"p1499": 2}')
    assert not required.matches(b'{"p5": 1}') and not required.matches(b"{}")


def any_order_dfa(schema):
    return schema_to_dfa(schema, JsonSchemaOptions(property_order="any")).automaton


def test_property_order_any_takes_every_order_once_each():
    schema = {"type": "object", "properties": {"b": {"type": "integer"}, "a": {"type": "integer"},
                                               "c": {"type": "string"}}, "required": ["a", "c"]}
    dfa = any_order_dfa(schema)
    for value in ({"a": 1, "c": "x"}, {"a": 1, "b": 2, "c": "x"}, {"a": 1, "c": "x", "zz": None}, {"a": 1}, {"b": 2}):
        for text in every_text(value):
            assert dfa.matches(text.encode()) == is_valid(schema, value), text
    assert not dfa.matches(b'{"a": 1, "c": "x", "a": 2}')  # each member at most once


def test_property_order_any_keeps_one_order_inside_products():
    """Operands of a product keep their shared slot order (one text per value), so oneOf stays exact."""
    wide = _object("x", *"ghijkl", types="string", required="x")  # over MAX_ANY_ORDER_MEMBERS: schema order
    narrow = {**_object("y", "x", types="string", required="y"), "additionalProperties": False}
    schema = {"oneOf": [{"type": "object", "properties": {"c": wide}, "required": ["c"]},
                        {"type": "object", "properties": {"c": narrow}, "required": ["c"]}]}
    dfa = any_order_dfa(schema)
    verdicts = [(dfa.matches(t.encode()), is_valid(schema, v)) for v in NESTED_ORDER_VALUES for t in every_text(v, True)]
    assert not any(accepted and not valid for accepted, valid in verdicts)
    assert any(accepted for accepted, _ in verdicts)


# -- arrays ----------------------------------------------------------------------------------------------------------

ARRAY_SCHEMAS = {
    "items": {"type": "array", "items": {"type": "integer", "minimum": 0}},
    "prefixItems": {"type": "array", "prefixItems": [{"type": "string"}, {"type": "integer"}], "items": False},
    "prefixItems+items": {"type": "array", "prefixItems": [{"type": "boolean"}], "items": {"type": "null"}},
    "draft7 array items": {"$schema": "http://json-schema.org/draft-07/schema#", "type": "array",
                           "items": [{"type": "integer"}, {"type": "string"}], "additionalItems": {"type": "boolean"}},
    "draft7 additionalItems false": {"$schema": "http://json-schema.org/draft-07/schema#", "type": "array",
                                     "items": [{"type": "integer"}], "additionalItems": False},
    "min/maxItems": {"type": "array", "minItems": 2, "maxItems": 3},
    "contains": {"type": "array", "contains": {"type": "integer", "minimum": 5}},
    "min/maxContains": {"type": "array", "items": {"type": "integer"}, "contains": {"const": 1},
                        "minContains": 2, "maxContains": 3},
    "maxContains only": {"type": "array", "contains": {"type": "string"}, "maxContains": 1, "maxItems": 4},
    "uniqueItems over an enum": {"type": "array", "items": {"enum": [1, 5, "s", True, None]}, "uniqueItems": True},
    "uniqueItems over booleans": {"type": "array", "items": {"type": "boolean"}, "uniqueItems": True, "minItems": 1},
    "uniqueItems with maxItems 1": {"type": "array", "items": {"type": "integer"}, "uniqueItems": True, "maxItems": 1},
    "uniqueItems with prefixItems": {"type": "array", "prefixItems": [{"type": "boolean"}, {"enum": [1, True, "s"]}],
                                    "items": {"enum": [None, 5, False]}, "uniqueItems": True},
    "uniqueItems, prefixItems, items false": {"type": "array", "prefixItems": [{"type": "boolean"}, {"type": "boolean"}],
                                              "items": False, "uniqueItems": True},
}
ARRAY_VALUES = [0, 1, 5, 9, -3, "s", "", True, False, None, 1.5, [2], {"a": 1}]


def array_candidates(count=150, max_len=5):
    out = [[], [1, 1], [1, 1, 1, 1], [5], ["a", 1], [True, None, None]]
    for _ in range(count):
        out.append([RNG.choice(ARRAY_VALUES) for _ in range(RNG.randint(0, max_len))])
    return out


@pytest.mark.parametrize("name", sorted(ARRAY_SCHEMAS))
def test_array_keywords(name):
    assert_agrees(ARRAY_SCHEMAS[name], array_candidates() + [{}, 1, "x"])


@pytest.mark.parametrize("whitespace", ["flexible", "canonical", "compact"])
def test_unique_items_over_few_values_is_exact_for_every_array(whitespace):
    """Every array of up to four items drawn from the values (and one outside them):
    distinct ones in the enum are accepted, repeats refused, 1 and 1.0 one value.
    (Flexible whitespace spells ``[2]`` in too many ways to enumerate: scalars only there.)"""
    enum = [1, "a", True, None, "b"] + ([] if whitespace == "flexible" else [[2]])
    schema = {"type": "array", "items": {"enum": enum}, "uniqueItems": True, "minItems": 1}
    dfa = dfa_for(schema, whitespace=whitespace)
    separators = (",", ":") if whitespace == "compact" else (", ", ": ")
    values = enum + [0]
    verdicts = {True: 0, False: 0}
    for n in range(5):
        for items in itertools.product(values, repeat=n):
            want = is_valid(schema, list(items))
            verdicts[want] += 1
            assert dfa.matches(json.dumps(list(items), separators=separators).encode()) == want, items
    assert verdicts[True] > 200 and verdicts[False] > 300
    for equal in ([1, 1.0], [1.0, 1]):  # equal values, as uniqueItems compares them
        assert not dfa.matches(json.dumps(equal, separators=separators).encode())
    assert dfa.matches(json.dumps([True, 1], separators=separators).encode())  # true is not 1


def test_unique_items_counts_every_zero_as_one_value():
    schema = {"type": "array", "items": {"enum": [0, -0.0, 1]}, "uniqueItems": True}
    dfa = dfa_for(schema, whitespace="compact")
    for items in ([0, -0.0], [-0.0, 0], [0, 1], [-0.0, 1], [1, 1]):
        text = json.dumps(items, separators=(",", ":")).encode()
        assert dfa.matches(text) == is_valid(schema, items), items
    assert not is_valid(schema, [0, -0.0])


def test_one_of_branches_whose_enums_share_a_zero_are_not_disjoint():
    """``0`` and ``-0.0`` are one JSON value: it meets both branches, so oneOf refuses it."""
    schema = {"oneOf": [{"const": 0}, {"const": -0.0}]}
    dfa = dfa_for(schema, whitespace="compact")
    for text in ("0", "-0.0", "0.0"):
        assert not is_valid(schema, json.loads(text))
        assert not dfa.matches(text.encode()), text


# -- enum, const, combinators ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("schema, kept, dropped", [
    ({"type": "string", "maxLength": 1, "enum": ["a", "bb", 1]}, [b'"a"'], [b'"bb"', b"1"]),
    ({"type": ["string", "null"], "enum": ["a", "b", None, 3], "pattern": "^a"}, [b'"a"', b"null"], [b'"b"', b"3"]),
    ({"type": "integer", "enum": [1.0, 2, "x"]}, [b"1.0", b"1", b"2"], [b'"x"']),
    ({"$schema": "http://json-schema.org/draft-04/schema#", "type": "integer", "enum": [1.0, 2, "x"]}, [b"2"],
     [b"1.0", b"1", b'"x"']),
])
def test_enum_values_meet_the_rest_of_their_schema(schema, kept, dropped):
    """An enum keeps the values its schema's other keywords admit: its type (a string under
    ``type: string`` needs no validator), its string constraints, and draft 4's integers,
    which ``1.0`` is not (the validator decides that for numbers)."""
    dfa = dfa_for(schema)
    assert all(dfa.matches(text) for text in kept) and not any(dfa.matches(text) for text in dropped)



COMBINATOR_SCHEMAS = {
    "enum": {"enum": ["a", 1, None, [1, "b"], {"k": True}, "é\"\n"]},
    "const object": {"const": {"x": [1, 2], "y": "z"}},
    "const with type": {"type": "string", "const": "a\\b"},
    "anyOf": {"anyOf": [{"type": "integer", "maximum": 3}, {"type": "string", "maxLength": 1}]},
    "oneOf overlapping": {"oneOf": [{"type": "integer", "minimum": 0, "maximum": 10},
                                    {"type": "integer", "multipleOf": 3}]},
    "oneOf objects": {"oneOf": [{"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]},
                                {"type": "object", "properties": {"b": {"type": "integer"}}, "required": ["b"]}]},
    "allOf objects merged": {"allOf": [{"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]},
                                       {"properties": {"b": {"type": "string"}, "a": {"minimum": 2}},
                                        "required": ["b"]}]},
    "not": {"type": "integer", "not": {"enum": [1, 2, 3]}},
    "not type": {"not": {"type": ["string", "object", "array"]}},
    "if/then/else": {"type": "integer", "if": {"minimum": 10}, "then": {"multipleOf": 2}, "else": {"maximum": 3}},
    "if/then objects": {"type": "object", "properties": {"kind": {"enum": ["a", "b"]}, "n": {"type": "integer"}},
                        "if": {"properties": {"kind": {"const": "a"}}}, "then": {"required": ["n"]}},
}
COMBINATOR_VALUES = (near(0, 10, spread=4) + ["", "a", "ab", "é\"\n", "a\\b", None, True, [1, "b"], [1],
                                              {"k": True}, {"x": [1, 2], "y": "z"}]
                     + object_candidates(["kind", "a", "n", "b"], [1, 3, "a", "b", "x"]))


@pytest.mark.parametrize("name", sorted(COMBINATOR_SCHEMAS))
def test_combinators(name):
    values = COMBINATOR_VALUES
    assert_agrees(COMBINATOR_SCHEMAS[name], values)


_D4, _D6, _D7 = (f"http://json-schema.org/draft-{n:02d}/schema#" for n in (4, 6, 7))
# Keywords a schema's declared draft does not define yet: its validators ignore them.
# Each case: the schema, and the keywords the compile must note as ignored.
LATER_KEYWORD_SCHEMAS = {
    "draft-04 const and if/then": ({"$schema": _D4, "type": "integer", "const": 3, "if": {"minimum": 5},
                                    "then": {"maximum": 6}, "maximum": 9}, ("const", "if", "then")),
    "draft-04 contains and propertyNames": ({"$schema": _D4, "type": ["array", "object"], "contains": {"const": 1},
                                             "propertyNames": {"maxLength": 1}, "maxItems": 2},
                                            ("contains", "propertyNames")),
    "draft-06 if/then/else": ({"$schema": _D6, "type": "integer", "const": 7, "if": {"minimum": 5},
                               "then": {"maximum": 6}, "else": {"const": 1}}, ("if", "then", "else")),
    "draft-07 2019-09 keywords": ({"$schema": _D7, "type": ["array", "object"], "maxItems": 2,
                                   "prefixItems": [{"type": "string"}], "dependentRequired": {"a": ["b"]},
                                   "contains": {"type": "integer"}, "maxContains": 1,
                                   "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
                                   "additionalProperties": False}, ("prefixItems", "dependentRequired", "maxContains")),
    "2019-09 prefixItems": ({"$schema": "https://json-schema.org/draft/2019-09/schema", "type": "array",
                             "prefixItems": [{"type": "string"}], "items": {"type": "integer"}, "maxItems": 2},
                            ("prefixItems",)),
    "draft-04 pointer into an ignored keyword": ({"$schema": _D4, "type": "object", "if": {"type": "integer"},
                                                  "properties": {"a": {"$ref": "#/if"}}}, ("if",)),
}


@pytest.mark.parametrize("name", sorted(LATER_KEYWORD_SCHEMAS))
def test_keywords_of_later_drafts_are_ignored_as_validators_do(name):
    schema, ignored = LATER_KEYWORD_SCHEMAS[name]
    assert_agrees(schema, COMBINATOR_VALUES + [[1, 1], ["a", 1], [1, "a"], {"a": 1}, {"ab": 1}, {"b": 2}])
    notes = schema_to_dfa(schema).notes
    noted = sorted(note.split(":")[0] for note in notes if "is not a keyword of" in note or ": not a keyword of" in note)
    assert noted == sorted(f"#/{keyword}" for keyword in ignored), notes


def test_one_of_branches_with_different_orders():
    schema = COMBINATOR_SCHEMAS["oneOf objects"]
    value = {"a": 1, "b": 2}
    assert not is_valid(schema, value)
    assert not dfa_for(schema).matches(documented_text(schema, value).encode())


def _package(version: int, names: str) -> dict:
    props = {"v": {"const": version}, **{n: {"type": "integer"} for n in names}}
    return {"type": "object", "properties": props, "required": ["v"], "additionalProperties": False}


# Versions 1 and 2 of one record: version 2 adds "u" between "f" and "p".
PACKAGES = {"oneOf": [_package(1, "afp"), _package(2, "afup")]}


def test_one_of_branch_orders_are_merged_not_appended():
    """Each branch's listed order survives the shared key slots (JSONSchemaBench's
    Github_hard o90607: a newer version's members were pushed after all older ones)."""
    value = {"v": 2, "a": 1, "f": 2, "u": 3, "p": 4}
    assert is_valid(PACKAGES, value)
    assert dfa_for(PACKAGES).matches(json.dumps(value).encode())
    assert not dfa_for(PACKAGES).matches(json.dumps({"v": 2, "a": 1, "f": 2, "p": 4, "u": 3}).encode())
    # Still exactly one branch: a version-1 record may not carry "u".
    assert not dfa_for(PACKAGES).matches(json.dumps({"v": 1, "a": 1, "u": 3}).encode())


def test_ref_members_come_before_sibling_properties_that_extend_them():
    """``allOf: [$ref base]`` with sibling ``properties`` naming a member of base: base's
    listed order decides (Github_ultra o58926: ``priority`` then ``options``)."""
    schema = {"$defs": {"base": {"type": "object", "required": ["priority"],
                                 "properties": {"priority": {"type": "number"}, "options": {"type": "object"}}}},
              "allOf": [{"$ref": "#/$defs/base"}],
              "properties": {"options": {"properties": {"x": {"type": "integer"}}}}}
    value = {"priority": 1, "options": {"x": 2}}
    assert is_valid(schema, value)
    assert dfa_for(schema).matches(json.dumps(value).encode())
    assert json_schema_instance_text(value, schema) == json.dumps(value)


def test_names_only_required_lists_keep_its_order():
    """Names without a ``properties`` entry are written as ``required`` lists them, the
    author's order, not sorted (JSONSchemaBench's Github_easy o11794 and o57603)."""
    schema = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["zeta", "alpha", "name"]}
    value = {"name": "x", "zeta": 1, "alpha": [2]}
    assert dfa_for(schema).matches(json.dumps(value).encode())
    assert not dfa_for(schema).matches(json.dumps({"name": "x", "alpha": [2], "zeta": 1}).encode())
    assert json_schema_instance_text(value, schema) == json.dumps(value)


def _state(name: str, **more) -> dict:
    return {"properties": {**more, "state": {"const": name}}, "required": ["state"]}


def test_branch_members_stand_where_their_combinator_does():
    """``allOf: [{oneOf: [...]}, {properties: ...}]``: instances write the chosen branch's
    members first, as the schema lists the combinator first (Github_trivial o64859)."""
    branches = [_state("stopped"), _state("running", current={"type": "number"})]
    schema = {"type": "object", "allOf": [{"oneOf": branches},
                                          {"properties": {"builder": {"type": "object"}, "id": {"type": "number"}},
                                           "required": ["builder", "id"]}]}
    value = {"current": 50, "state": "running", "builder": {}, "id": 1}
    assert is_valid(schema, value)
    assert dfa_for(schema).matches(json.dumps(value).encode())
    assert not dfa_for(schema).matches(json.dumps({"builder": {}, "id": 1, "current": 50, "state": "running"}).encode())
    assert dfa_for({**schema, "allOf": schema["allOf"][:1] + [{"anyOf": branches}] + schema["allOf"][1:]}) \
        .matches(json.dumps(value).encode())  # both combinators stand before the listed members
    # Members the same schema object lists beside its oneOf still come first.
    own = {"type": "object", "properties": {"id": {"type": "number"}}, "oneOf": branches}
    assert dfa_for(own).matches(json.dumps({"id": 1, "current": 5, "state": "running"}).encode())
    assert not dfa_for(own).matches(json.dumps({"current": 5, "state": "running", "id": 1}).encode())


def test_all_of_members_are_merged_in_document_order():
    """``{"allOf": [{"$ref": base}], "properties": {extra}}`` extends base: base's members
    first, then the extension's (Github_ultra o58926: ``connections``, then ``merge``)."""
    schema = {"$defs": {"db": {"type": "object", "properties": {"connections": {"type": "array"},
                                                                "lifetime": {"enum": ["Scoped"]}}}},
              "allOf": [{"$ref": "#/$defs/db"}],
              "properties": {"merge": {"type": "boolean"}}, "required": ["merge"]}
    value = {"connections": [], "lifetime": "Scoped", "merge": True}
    assert is_valid(schema, value)
    assert dfa_for(schema).matches(json.dumps(value).encode())
    assert not dfa_for(schema).matches(json.dumps({"merge": True, "connections": []}).encode())
    assert json_schema_instance_text(value, schema) == json.dumps(value)
    # Written the other way round (the test suite's unevaluatedProperties and ref cases),
    # the schema's own members come first: document order, as llguidance reads it too.
    own_first = {"properties": schema["properties"], "allOf": schema["allOf"], "$defs": schema["$defs"],
                 "required": ["merge"]}
    value = {"merge": True, "connections": [], "lifetime": "Scoped"}
    assert dfa_for(own_first).matches(json.dumps(value).encode())
    assert not dfa_for(own_first).matches(json.dumps({"connections": [], "merge": True}).encode())
    assert json_schema_instance_text(value, own_first) == json.dumps(value)


@pytest.mark.parametrize("schema, value", [
    # The fuzzer's seed 22: names only a dependency involves are members, before extras.
    ({"type": "object", "dependentRequired": {"": ["1"]}}, {"c": 1.0, "1": [10], "id": False}),
    ({"type": "object", "properties": {"b": {}}, "required": ["r"], "dependentRequired": {"x": ["1", "b"]}},
     {"r": 1, "1": 2, "x": 3, "b": 4, "q": 5}),
])
def test_the_instance_writer_puts_dependency_names_where_the_language_does(schema, value):
    """Schema order writes the names ``dependentRequired`` involves after the listed and
    required ones (each key before what it requires) and before additional members."""
    text = json_schema_instance_text(value, schema)
    assert is_valid(schema, value) and json.loads(text) == value
    assert dfa_for(schema).matches(text.encode()) and not dfa_for(schema).matches(json.dumps(value).encode())


def test_a_ref_beside_properties_is_read_in_document_order():
    base = {"$defs": {"b": {"properties": {"bar": {"type": "string"}}}}, "type": "object"}
    ref_first = {**base, "$ref": "#/$defs/b", "properties": {"foo": {"type": "string"}}}
    own_first = {**base, "properties": {"foo": {"type": "string"}}, "$ref": "#/$defs/b"}
    assert dfa_for(ref_first).matches(b'{"bar": "b", "foo": "a"}')
    assert not dfa_for(ref_first).matches(b'{"foo": "a", "bar": "b"}')
    assert dfa_for(own_first).matches(b'{"foo": "a", "bar": "b"}')
    assert not dfa_for(own_first).matches(b'{"bar": "b", "foo": "a"}')


@pytest.mark.parametrize("combinator", ["anyOf", "oneOf"])
def test_a_combinator_beside_properties_is_read_in_document_order(combinator):
    """A branch stands where its combinator is written, also beside the same node's
    ``properties`` (Github_hard o60038: ``{"anyOf": [{"$ref": base}], "properties":
    {"Protanopia": ...}}``, whose instances write base's members first)."""
    base = {"$defs": {"b": {"properties": {"bar": {"type": "string"}}}}, "type": "object"}
    branch_first = {**base, combinator: [{"$ref": "#/$defs/b"}], "properties": {"foo": {"type": "string"}}}
    own_first = {**base, "properties": {"foo": {"type": "string"}}, combinator: [{"$ref": "#/$defs/b"}]}
    assert dfa_for(branch_first).matches(b'{"bar": "b", "foo": "a"}')
    assert not dfa_for(branch_first).matches(b'{"foo": "a", "bar": "b"}')
    assert dfa_for(own_first).matches(b'{"foo": "a", "bar": "b"}')
    assert not dfa_for(own_first).matches(b'{"bar": "b", "foo": "a"}')
    # A name both list goes where the branch puts it (Github_medium o55595's "type").
    shared = {"type": "object", combinator: [{"properties": {"bar": {}, "kind": {"type": "string"}}}],
              "properties": {"foo": {}, "kind": {"minLength": 1}}}
    assert dfa_for(shared).matches(b'{"bar": 1, "kind": "k", "foo": 2}')
    assert not dfa_for(shared).matches(b'{"bar": 1, "foo": 2, "kind": "k"}')
    assert not dfa_for(shared).matches(b'{"bar": 1, "kind": "", "foo": 2}')
    # A branch that only constrains listed members (a tagged variant) keeps the node's
    # order, wherever it is written (Github_easy o10011).
    tagged = {"type": "object", combinator: [{"properties": {"kind": {"enum": ["a"]}, "mode": {"enum": ["x"]}}}],
              "properties": {"kind": {"type": "string"}, "foo": {}, "mode": {"type": "string"}}}
    assert dfa_for(tagged).matches(b'{"kind": "a", "foo": 1, "mode": "x"}')
    assert not dfa_for(tagged).matches(b'{"kind": "a", "mode": "x", "foo": 1}')


def every_text(value, spellings: bool = False) -> list[str]:
    """Every text of ``value``: its objects' members in every order, at every level, and
    with ``spellings`` each number written in several ways (small values only)."""
    if isinstance(value, dict):
        keys = [json.dumps(k, ensure_ascii=False) for k in value]
        inner = [every_text(v, spellings) for v in value.values()]
        out = []
        for order in itertools.permutations(range(len(keys))):
            for texts in itertools.product(*(inner[i] for i in order)):
                out.append("{" + ", ".join(f"{keys[i]}: {t}" for i, t in zip(order, texts)) + "}")
        return out
    if isinstance(value, list):
        return ["[" + ", ".join(texts) + "]" for texts in itertools.product(*(every_text(v, spellings) for v in value))]
    if spellings and isinstance(value, (int, float)) and not isinstance(value, bool):
        return number_spellings(value)
    return [text_of(value)]


def number_spellings(value: int | float) -> list[str]:
    """Texts of one number: as written, with trailing fraction zeros, with exponents, as negative zero."""
    text = text_of(value)
    digits = str(int(value)) if float(value).is_integer() else format(Decimal(repr(value)), "f")
    out = {text, digits, f"{digits}e0", f"{digits}E+0", f"{digits}0e-1"}
    out |= {f"{digits}.0", f"{digits}.00"} if "." not in digits else {f"{digits}0"}
    if value == 0:
        out |= {"-0", "-0.0", "0e5"}
    return sorted(out)


def test_any_of_scalars_is_one_minimal_automaton():
    """Overlapping scalar alternatives are merged and minimised: inside a string that is
    free in one branch and searched for a pattern in another, every state is the one
    "free string" state (a first mask there meets a loop instead of walking the whole
    vocabulary again at each character), and the language is unchanged."""
    schema = {"anyOf": [{"type": "string", "pattern": "data:"}, {"type": "string", "format": "date"},
                        {"type": "string"}, {"type": "integer", "minimum": 3}]}
    dfa = dfa_for(schema)
    assert len({dfa.walk(dfa.start, text) for text in (b'"', b'"d', b'"da', b'"data:', b'"x', b'"2024-')}) == 1
    for value in ["", "data:x", "2024-01-01", "x", 3, 2, 7.5, None]:
        assert dfa.matches(text_of(value).encode()) == is_valid(schema, value), value


def test_any_of_scalars_without_values_still_compile():
    """A scalar alternative no value meets (an array that must be a string: JSONSchemaBench
    Github_trivial o2142) leaves the merge to the whole schema's build instead of failing it."""
    schema = {"type": "object", "properties": {"t": {
        "anyOf": [{"type": "string", "pattern": "^A$"}, {"type": "array", "anyOf": [{"type": "string"}]}],
        "not": {"type": "object"}}}}
    dfa = dfa_for(schema)
    for value in ({"t": "A"}, {"t": "B"}, {"t": []}, {"t": ["A"]}, {}):
        assert dfa.matches(text_of(value).encode()) == is_valid(schema, value), value


# Products whose operands spell numbers differently: an integer, an enum literal and a
# number range write different texts of one value (2, 2.0, 2e0), and a value both sides
# accept must be refused in every spelling (ARCHITECTURE.md, "Number spellings").
NUMBER_SPELLING_SCHEMAS = {
    "oneOf integer or number": {"oneOf": [{"type": "integer"}, {"type": "number"}]},
    "oneOf const or number": {"oneOf": [{"const": 2}, {"type": "number"}]},
    "oneOf floats": {"oneOf": [{"enum": [2.5, 1e-7]}, {"type": "number", "minimum": 0}]},
    "not integer": {"type": "number", "not": {"type": "integer"}},
    "not const": {"type": "number", "not": {"const": 2}},
    "not multiple": {"type": "number", "not": {"type": "integer", "multipleOf": 3}},
    "not a oneOf": {"type": "number", "not": {"oneOf": [{"type": "integer"}, {"type": "number", "minimum": 2.5, "maximum": 3}]}},
    "if integer": {"if": {"type": "integer"}, "then": {"const": 100}, "else": {"type": "number"}},
    "contains integer": {"type": "array", "items": {"type": "number"}, "contains": {"type": "integer"}, "maxContains": 1},
    "member": {"oneOf": [{"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]},
                         {"type": "object", "properties": {"a": {"type": "number", "multipleOf": 0.5}}, "required": ["a"]}]},
    "free-form member": {"oneOf": [{"type": "object", "properties": {"a": {}}, "required": ["a"]},
                                   {"type": "object", "properties": {"a": {"type": "integer"}}}]},
}
_NUMBERS = [0, 2, 2.0, 2.5, 2.75, 3, 3.0, 3.5, 4, 4.5, 6, 6.0, 6.5, 100, 1e-7, -3]
NUMBER_SPELLING_VALUES = _NUMBERS + ["s", [], [1], [1, 2], [1, 2.5], [2.0], [2.0, 2.5]] + [{"a": v} for v in (2, 2.0, 2.5, 1.25, "s")]


@pytest.mark.parametrize("name", sorted(NUMBER_SPELLING_SCHEMAS))
def test_products_refuse_every_spelling_of_a_value_both_sides_accept(name):
    """No text of an invalid value is accepted, however its numbers are written (``2.00``,
    ``2e0``, ``20e-1``, ``-0``), and every valid value keeps its ``json.dumps`` text
    where that text is plain (no exponent): products cost no valid plain text."""
    schema = NUMBER_SPELLING_SCHEMAS[name]
    dfa = dfa_for(schema)
    accepted_invalid = [t for v in NUMBER_SPELLING_VALUES if not is_valid(schema, v)
                        for t in every_text(v, spellings=True) if dfa.matches(t.encode())]
    assert not accepted_invalid
    refused_valid = [text_of(v) for v in NUMBER_SPELLING_VALUES
                     if is_valid(schema, v) and "e" not in text_of(v) and not dfa.matches(text_of(v).encode())]
    assert not refused_valid
    assert any(not is_valid(schema, v) for v in NUMBER_SPELLING_VALUES)


def _object(*names: str, types: str | None = None, required=()) -> dict:
    props = {n: {"type": types} if types else {} for n in names}
    return {"type": "object", "properties": props, "required": list(required)}


# Products whose operands list members in different orders below the top: a value valid
# under two oneOf branches (under base and not, under if and not then) must be refused in
# every order, and contains must count an item whatever order its own schema lists.
NESTED_ORDER_SCHEMAS = {
    # JSONSchemaBench Github_medium o85194: each branch lists the nested members differently.
    "oneOf nested members": {"oneOf": [
        {"type": "object", "properties": {"c": _object("x", types="string", required="x")}, "required": ["c"]},
        {"type": "object", "properties": {"c": _object("y", "x", types="string", required="y")}, "required": ["c"]}]},
    "not with a free-form base": {"type": "object", "properties": {"a": {}},
                           "not": {"properties": {"a": _object("q", "p", types="integer", required="pq")},
                                   "required": ["a"]}},
    "if nested members": {"type": "object", "if": {"properties": {"a": _object("q", "p", types="integer",
                                                                             required="pq")}, "required": ["a"]},
                          "then": {"required": ["b"]}},
    # One branch lists its members only inside an anyOf of its own.
    "oneOf members inside anyOf": {"oneOf": [{"type": "object", "anyOf": [_object("z", "w")]},
                                             {"type": "object", "minProperties": 2}]},
    "oneOf items": {"oneOf": [{"type": "array", "items": _object("p", "q")},
                              {"type": "array", "items": _object("q", "p", types="integer"), "minItems": 1}]},
    "oneOf unlisted members": {"oneOf": [{"type": "object", "additionalProperties": _object("p", "q")},
                                         {"type": "object", "additionalProperties": _object("q", "p", types="integer"),
                                          "minProperties": 1}]},
    "oneOf const object": {"oneOf": [{"const": {"a": {"q": 2, "p": 1}}},
                                     {"type": "object", "properties": {"a": _object("p", "q")}}]},
    "contains with its own member order": {"type": "array", "items": _object("p", "q"), "maxContains": 1,
                                           "contains": _object("q", "p", types="integer", required="pq")},
    "oneOf free-form side": {"oneOf": [
        {"type": "object", "properties": {"a": _object("p", "q", types="integer", required="pq")}, "required": ["a"]},
        {"type": "object", "properties": {"a": {}}, "required": ["a"], "maxProperties": 1}]},
}
_PAIRS = [{"p": 1, "q": 2}, {"q": 2, "p": 1}, {"p": "s"}, {"q": 1}, {"p": 1, "q": "s"}]
NESTED_ORDER_VALUES = (
    [{"c": c} for c in ({"x": "a"}, {"y": "b"}, {"x": "a", "y": "b"}, {"y": "b", "x": "a"}, {"x": "a", "y": 1})]
    + [{"a": a} for a in _PAIRS] + [{"a": a, "b": 0} for a in _PAIRS[:3]]
    + [{"z": 1}, {"w": 1}, {"z": 1, "w": 2}, {"w": 1, "z": 2}, {}]
    + [[a] for a in _PAIRS] + [[a, b] for a in _PAIRS[:3] for b in _PAIRS[:3]] + [{"k": a} for a in _PAIRS])


@pytest.mark.parametrize("name", sorted(NESTED_ORDER_SCHEMAS))
def test_products_share_member_order_below_the_top(name):
    """Every text the product accepts is of a valid value, whatever its members' order, and
    some valid value is accepted in some order (the check is not vacuous)."""
    schema = NESTED_ORDER_SCHEMAS[name]
    dfa = dfa_for(schema)
    accepted_invalid, accepted = [], 0
    for value in NESTED_ORDER_VALUES:
        for text in every_text(value, spellings=True):
            if dfa.matches(text.encode()):
                accepted += 1
                if not is_valid(schema, value):
                    accepted_invalid.append(text)
    assert not accepted_invalid
    assert accepted and any(not is_valid(schema, v) for v in NESTED_ORDER_VALUES)


def _tagged(kind, *names: str) -> dict:
    """An object variant: ``kind`` fixed, the other members (listed in the given order) optional."""
    props = {n: {"type": "string"} if n != "kind" else {"const": kind} for n in names}
    return {"type": "object", "properties": props, "required": ["kind"]}


def _patterned(tag: str, *types: str) -> dict:
    """An object variant whose required member ``kind`` is a string matching ``tag``."""
    variant = {"properties": {"kind": {"type": "string", "pattern": tag}}, "required": ["kind"]}
    return {**variant, "type": list(types)} if types else variant


def _listed(*values_or_schema) -> dict:
    """An object variant whose required member ``c`` is an enum of the given values, or the given schema."""
    first = values_or_schema[0]
    value = first if isinstance(first, dict) else {"enum": list(values_or_schema)}
    return {"type": "object", "properties": {"c": value}, "required": ["c"]}


# oneOf whose branches no value meets together (an anyOf, no product), near misses that
# some value does meet together (so the product must stay), and branches that only
# constrain members (rules of the member graph, no product).
ONE_OF_DISJOINT = {
    "tagged union": ({"oneOf": [_tagged("a", "kind", "x"), _tagged("b", "x", "kind")]}, "anyOf"),
    "types": ({"oneOf": [{"type": "string"}, {"type": "object"}, {"type": ["null", "boolean"]}]}, "anyOf"),
    # Github_hard o35186: a base's enum of kinds, narrowed per variant by an unanchored pattern.
    "tag narrowed by pattern": ({"$defs": {"base": {"type": "object", "properties": {
        "kind": {"type": "string", "enum": ["a", "b", "ab"]}, "x": {"type": "string"}}, "required": ["kind"]}},
        "oneOf": [{"allOf": [{"$ref": "#/$defs/base"}, {"properties": {"kind": {"pattern": "^a$"}}}]},
                  {"allOf": [{"$ref": "#/$defs/base"}, {"properties": {"kind": {"pattern": "b"}}}]}]}, "anyOf"),
    "tags overlapping by pattern": ({"oneOf": [
        {"type": "object", "properties": {"kind": {"enum": ["a", "ab"], "pattern": "a"}}, "required": ["kind"]},
        {"type": "object", "properties": {"kind": {"enum": ["a", "ab"], "pattern": "b"}}, "required": ["kind"]}]},
        "members"),
    "member values by type": ({"oneOf": [{"type": "object", "properties": {"k": {"const": 1}}, "required": ["k"]},
                                         {"type": "object", "properties": {"k": {"type": "string"}}}]}, "anyOf"),
    "integer in number": ({"oneOf": [{"type": "integer"}, {"type": "number", "maximum": 5}]}, "product"),
    "enum 2 and 2.0": ({"oneOf": [{"enum": [1, 2]}, {"enum": [2.0, 3]}]}, "product"),
    "const in its type": ({"oneOf": [{"const": "a"}, {"type": "string", "maxLength": 1}]}, "product"),
    "member free in the other": ({"oneOf": [{"type": "object", "properties": {"k": {"const": 1}}, "required": ["k"]},
                                           {"type": "object", "maxProperties": 1}]}, "product"),
    "member required where no object": ({"oneOf": [{"properties": {"k": {"const": 1}}, "required": ["k"]},
                                                   {"properties": {"k": {"const": 2}}, "required": ["k"]}]}, "members"),
    "typed members": ({"type": "object", "oneOf": [
        {"properties": {"k": {"type": "integer"}}, "required": ["k"]},
        {"properties": {"k": {"type": "number", "maximum": 1}, "kind": {"enum": ["a", "b"]}}}]}, "members"),
    "member schemas by type": ({"oneOf": [{"type": "object", "properties": {"kind": {"type": "string"}}},
                                          {"type": "object", "properties": {"k": {"type": ["null", "array"]}}}]},
                               "members"),
    # Github_medium o65917: a tag listed as an enum against a schema that admits none of it.
    "enum against a schema": ({"oneOf": [_listed(["deleted"]), _listed({"type": "array", "minItems": 1,
                                                                        "items": {"enum": ["size", "mode"]}})]}, "anyOf"),
    "enum meeting a schema": ({"oneOf": [_listed(["deleted"], ["size"]), _listed({"type": "array", "minItems": 1,
                                                                                  "items": {"enum": ["size", "mode"]}})]},
                              "members"),
    # A branch's types are narrowed by its own oneOf/anyOf (JsonSchemaStore web-types: a value
    # or a list of them, where a value is a oneOf of an object and scalars).
    "types of a nested oneOf": ({"oneOf": [{"oneOf": [{"type": "object"}, {"type": "string", "maxLength": 1}]},
                                           {"type": "array"}]}, "anyOf"),
    "types of a nested anyOf that meet": ({"oneOf": [{"anyOf": [{"type": "array", "maxItems": 0}, {"type": "string"}]},
                                                     {"type": "array"}]}, "product"),
    # Github_hard o82273 (tree-sitter's grammar schema): tags written as anchored patterns,
    # one variant with no "type": "object" (it also takes every value that is no object).
    "tags as patterns": ({"oneOf": [_patterned("^SEQ$"), _patterned("^CHOICE$", "object"),
                                    _patterned("^(TOKEN|IMMEDIATE_TOKEN)$", "object")]}, "anyOf"),
    "strings by format": ({"oneOf": [{"type": "string", "format": "date"}, {"type": "string", "format": "email"}]},
                          "anyOf"),
    "patterns that meet": ({"oneOf": [{"type": "string", "pattern": "^S"}, {"type": "string", "pattern": "Q$"}]},
                           "product"),
    "ranges apart": ({"oneOf": [{"type": "integer", "maximum": 2}, {"type": "number", "exclusiveMinimum": 2},
                                {"type": "object", "properties": {"k": {"type": "number", "minimum": 5}}, "required": ["k"]},
                                {"type": "object", "properties": {"k": {"type": "integer", "exclusiveMaximum": 5}},
                                 "required": ["k"]}]}, "anyOf"),
    "ranges that meet": ({"oneOf": [{"type": "integer", "maximum": 2}, {"type": "number", "minimum": 2}]}, "product"),
    "counts apart": ({"oneOf": [{"type": "string", "maxLength": 1}, {"type": "string", "minLength": 2},
                                {"type": "array", "maxItems": 0}, {"type": "array", "minItems": 1},
                                {"type": "object", "minProperties": 2}, {"type": "object", "maxProperties": 1}]}, "anyOf"),
    "counts that meet": ({"oneOf": [{"type": "array", "maxItems": 1}, {"type": "array", "minItems": 1}]}, "product"),
    # semgrep's "exactly one of these members": each variant requires its own and refuses the others'.
    "one member of several": ({"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "string"}},
                               "oneOf": [{"required": ["a"], "not": {"anyOf": [{"required": ["b"]}, {"required": ["c"]}]}},
                                         {"required": ["b"], "not": {"required": ["a"]}}]}, "anyOf"),
    "one member, refusals that miss": ({"type": "object", "oneOf": [{"required": ["a"], "not": {"required": ["a", "c"]}},
                                                                   {"required": ["b"], "not": {"required": ["c"]}}]},
                                       "product"),
}
ONE_OF_VALUES = (near(0, 5, spread=2) + [2.0, 1.5, 7.5, "", "a", "ab", None, True, [], [1]]
                 + [{"kind": "a"}, {"kind": "b", "x": "s"}, {"kind": "ab"}, {"kind": "c"}, {"k": 1}, {"k": 1.0}, {"k": "s"}, {"k": 2},
                    {}, {"k": 1, "j": 2}, {"kind": "a", "x": 1}, {"k": 0.5}, {"k": 2, "kind": "c"}, {"kind": "a", "k": [1]},
                    {"kind": "b", "k": None}, {"c": ["deleted"]}, {"c": ["size"]}, {"c": []}, {"c": ["mode", "x"]},
                    {"c": ["size"], "k": 1}, {"kind": "SEQ"}, {"kind": "CHOICE", "k": 1}, {"kind": "TOKEN"},
                    {"kind": "SEQQ"}, {"kind": "seq"}, "S", "SEQ", "SQ", "Q", "2020-01-31", "2020-02-31", "a@b.co",
                    "a@b", {"k": 5}, {"k": 4.5}, {"k": 6}, {"a": 1}, {"b": "s"}, {"a": 1, "b": "s"},
                    {"a": 1, "c": 2}, {"b": "s", "c": 2}, {"a": "s", "b": 1}])


# Known gap (ARCHITECTURE.md, "Texts, not values"): integers are written canonically, so the
# integer branch has no text "2.0" for the value 2.0 that the number branch writes, and
# "number minus integer" keeps it although both branches accept the value.
ONE_OF_KNOWN_GAPS: dict[str, str] = {}


@pytest.mark.parametrize("name", sorted(ONE_OF_DISJOINT))
def test_one_of_is_exact_with_or_without_products(name, monkeypatch, request):
    """Branches proved disjoint compile as anyOf, member-wise ones as member-graph rules,
    others through products; all exact (every text of every candidate value), and the
    proof holds where it is claimed."""
    if name in ONE_OF_KNOWN_GAPS:
        request.applymarker(pytest.mark.xfail(strict=True, reason=ONE_OF_KNOWN_GAPS[name]))
    schema, route = ONE_OF_DISJOINT[name]
    products = _one_of_products(monkeypatch)
    member_wise = _member_wise_routes(monkeypatch)
    dfa = schema_to_dfa(schema).automaton
    taken = "product" if products else "members" if any(member_wise) else "anyOf"
    assert taken == route
    verdicts = [(dfa.matches(t.encode()), is_valid(schema, v)) for v in ONE_OF_VALUES for t in every_text(v, True)]
    assert not any(accepted and not valid for accepted, valid in verdicts)
    assert any(accepted for accepted, _ in verdicts) and any(not valid for _, valid in verdicts)


def test_tags_judged_by_values_are_member_groups_in_any_order(monkeypatch):
    """In any order each object variant is a member loop, and a union keeps every loop
    alive until its tag is read (41 pattern-tagged variants took 2.2 s masks), so there
    the judgments by patterns, ranges and ``not: {required}`` are not made (the variants
    are the object's member groups, or a product: one loop either way); enum tags still are."""
    products, member_wise = _one_of_products(monkeypatch), _member_wise_routes(monkeypatch)
    for name, route in (("tags as patterns", "members"), ("one member of several", "product"),
                        ("tagged union", "anyOf")):
        products.clear()
        member_wise.clear()
        schema_to_dfa(ONE_OF_DISJOINT[name][0], JsonSchemaOptions(property_order="any"))
        assert ("product" if products else "members" if any(member_wise) else "anyOf") == route, name


_CUT_DEFS = {"item": {"oneOf": [{"$ref": "#/$defs/node"}, {"type": "string"}, {"type": "integer"}]},
             "node": {"type": "object", "properties": {"kids": {"type": "array", "items": {"$ref": "#/$defs/item"}}},
                      "additionalProperties": False}}


def _nodes(depth: int) -> list:
    """Values for ``_CUT_DEFS``: nodes nested ``depth`` deep, and near misses at each level."""
    if depth == 0:
        return ["s", 1, 1.5, None, {}]
    inner = _nodes(depth - 1)
    return inner + [{"kids": []}, {"kids": inner[-3:]}, {"kids": [inner[-1], 2.5]}, {"kids": [inner[-1]], "x": 1}]


def test_a_one_of_branch_cut_by_the_recursion_bound_is_judged_by_its_types(monkeypatch):
    """Inside ``not`` recursion is unrolled ``max_recursion`` deep; at the bound the object
    branch of ``item``'s oneOf is cut.  A cut record was apart from no other branch, so
    that oneOf became a product at every bound; read past the cut the branch is an object,
    apart from the string and integer branches: a union, and exact above the bound (values
    past it are refused, as a ``not`` takes every deeper value away)."""
    products = _one_of_products(monkeypatch)
    schema = {"$defs": _CUT_DEFS, "not": {"$ref": "#/$defs/node"}}
    dfa = schema_to_dfa(schema).automaton
    assert not products
    for value in _nodes(4):
        accepted, valid = dfa.matches(text_of(value).encode()), is_valid(schema, value)
        assert not accepted or valid, value
        if value_depth(value) <= 4:
            assert accepted == valid, value


def test_tagged_union_variants_keep_their_own_member_order():
    """No shared slots without a product: each variant is written in its own listed order."""
    dfa = dfa_for(ONE_OF_DISJOINT["tagged union"][0])
    assert dfa.matches(b'{"kind": "a", "x": "s"}') and dfa.matches(b'{"x": "s", "kind": "b"}')
    assert not dfa.matches(b'{"kind": "b", "x": "s"}')


@pytest.mark.parametrize("orders, merged", [
    ([["options"], ["priority", "options"]], ["priority", "options"]),
    ([list("abfp"), list("abfup")], list("abfup")),
    ([list("abc"), list("xbz")], list("axbcz")),
    ([list("ab"), list("ba")], list("ab")),  # contradiction: the earlier order wins
    ([list("abc"), list("cba"), ["d"]], list("abcd")),
    ([[], list("ba")], list("ba")),
])
def test_merge_orders(orders, merged):
    assert merge_orders(orders) == merged


# -- references ------------------------------------------------------------------------------------------------------

REF_SCHEMAS = {
    "$defs": {"$defs": {"pos": {"type": "integer", "minimum": 1}}, "type": "array", "items": {"$ref": "#/$defs/pos"}},
    "definitions": {"definitions": {"s": {"type": "string", "maxLength": 2}},
                    "type": "object", "properties": {"a": {"$ref": "#/definitions/s"}}, "required": ["a"]},
    "pointer": {"type": "object", "properties": {"a": {"type": "boolean"}, "b": {"$ref": "#/properties/a"}}},
    "$anchor": {"$defs": {"x": {"$anchor": "flag", "enum": [1, 2]}}, "type": "array", "items": {"$ref": "#flag"}},
    "$id": {"$id": "https://example.com/root.json",
            "$defs": {"n": {"$id": "num.json", "type": "integer", "maximum": 2}},
            "type": "array", "items": {"$ref": "https://example.com/num.json"}},
    # Identifiers need not be hierarchical URLs (urllib's urljoin drops fragments on these).
    "classpath $id": {"id": "classpath:///schemas/entry.json#", "definitions": {"n": {"type": "integer", "maximum": 2}},
                      "type": "array", "items": {"$ref": "#/definitions/n"}},
    "urn $id": {"$id": "urn:example:root", "$defs": {"n": {"$anchor": "small", "type": "integer", "maximum": 2}},
                "type": "array", "items": {"$ref": "urn:example:root#small"}},
    "$ref with siblings": {"$defs": {"i": {"type": "integer"}}, "$ref": "#/$defs/i", "minimum": 3},
    "recursive tree": {"$defs": {"node": {"type": "object", "properties": {
        "v": {"type": "integer"}, "kids": {"type": "array", "items": {"$ref": "#/$defs/node"}}},
        "required": ["v"], "additionalProperties": False}}, "$ref": "#/$defs/node"},
}
REF_VALUES = ([1, 2, 3, 0, -1, "a", "abc", True, [], [1, 2], [0], [3], [True], ["ab"]]
              + object_candidates(["a", "b", "v", "kids"], [True, "ab", "abc", 1, [], [{"v": 1}], [{"v": "x"}]])
              + [{"v": 1, "kids": [{"v": 2, "kids": [{"v": 3}]}]}, {"v": 1, "kids": [{"v": 2, "kids": [{}]}]}])


@pytest.mark.parametrize("name", sorted(REF_SCHEMAS))
def test_references(name):
    assert_agrees(REF_SCHEMAS[name], REF_VALUES)


def _kid_chain(depth: int, leaf=None):
    """A tree of ``depth`` nodes along one path, ending in ``leaf`` (a valid node by default)."""
    node = {"v": depth} if leaf is None else leaf
    for d in range(depth):
        node = {"v": d, "kids": [node]}
    return node


def test_recursion_is_exact_at_any_depth():
    schema = REF_SCHEMAS["recursive tree"]
    automaton = dfa_for(schema)
    for depth in (2, 6, 12, 40):
        assert automaton.matches(text_of(_kid_chain(depth)).encode()), depth
        assert not automaton.matches(text_of(_kid_chain(depth, {"kids": []})).encode()), depth  # "v" missing
        assert not automaton.matches(text_of(_kid_chain(depth, {"v": 1, "x": 2})).encode()), depth


def test_a_recursive_member_no_value_meets_is_left_out():
    """``a`` must be both the node (an object) and a string: no value, at any depth, while
    ``b`` recurs freely (the callee of ``a``'s schemas is recorded as meeting nothing)."""
    schema = {"$defs": {"n": {"type": "object", "additionalProperties": False, "properties": {
        "a": {"allOf": [{"$ref": "#/$defs/n"}, {"type": "string"}]}, "b": {"$ref": "#/$defs/n"}}}},
        "$ref": "#/$defs/n"}
    language = schema_to_dfa(schema)
    assert len(language.recursive) == 1
    deep = {}
    for _ in range(8):
        deep = {"b": deep}
    assert_agrees(schema, [{}, {"a": {}}, {"a": "x"}, deep, {"b": {"b": {"a": {}}}}, {"b": {"b": {"a": "x"}}}])


def test_recursion_is_unrolled_where_one_dfa_must_hold_the_language():
    schema = REF_SCHEMAS["recursive tree"]
    bounded = schema_to_dfa(schema, JsonSchemaOptions(max_any_depth=2))
    assert bounded.is_regular
    assert bounded.automaton.matches(text_of(_kid_chain(2)).encode())
    assert not bounded.automaton.matches(text_of(_kid_chain(12)).encode())  # documented limit
    deeper = schema_to_dfa(schema, JsonSchemaOptions(max_any_depth=2, max_recursion=8)).automaton
    assert deeper.matches(text_of(_kid_chain(6)).encode())


# -- strings ---------------------------------------------------------------------------------------------------------

STRING_SCHEMAS = {
    "minLength": {"type": "string", "minLength": 2},
    "maxLength": {"type": "string", "maxLength": 3},
    "min+max": {"type": "string", "minLength": 1, "maxLength": 2},
    "pattern unanchored": {"type": "string", "pattern": "a[0-9]"},
    "pattern anchored": {"type": "string", "pattern": "^a[0-9]+$"},
    "pattern start only": {"type": "string", "pattern": "^ab", "maxLength": 4},
    "pattern with length": {"type": "string", "pattern": "\\d", "minLength": 2, "maxLength": 3},
    "length implied by pattern": {"type": "string", "pattern": "^[a0-9]{2,3}$", "minLength": 1, "maxLength": 255},
    "pattern longer than maxLength": {"type": "string", "pattern": "^[a0-9]{2,4}$", "maxLength": 3},
    "pattern shorter than minLength": {"type": "string", "pattern": "^[ab0-9]{1,4}$", "minLength": 3},
    "minLength no maximum": {"type": "string", "minLength": 3},
}


@pytest.mark.parametrize("name", sorted(STRING_SCHEMAS))
def test_strings(name):
    schema = STRING_SCHEMAS[name]
    values = (random_strings(250, 5) + random_strings(100, 5, "a0123b")
              + ["", "a1", "xa1", "a12", "a1\n", "ab", "abcd", "abcde", "é€", "😀😀", "\"\\", "\u2028"])
    if schema.get("pattern", "").endswith("$"):
        # jsonschema searches with Python's re, whose $ also matches before a final newline;
        # ECMA-262's (the spec's) does not: those strings are checked by hand below.
        values = [v for v in values if not v.endswith("\n")]
    assert_agrees(schema, values)


@pytest.mark.parametrize("low, high", [(0, 0), (0, 1), (1, 3), (3, 3), (0, None), (1, None), (4, None)])
def test_counted_length_automaton_is_the_minimal_dfa(low, high):
    """The directly built length automaton is the same minimal DFA as subset construction gives."""
    from constrain.automata.byte_dfa import build_byte_dfa
    from constrain.automata.dfa_ops import difference
    from constrain.grammar.json_schema.strings import ANY_CHAR, _encoded_char_dfa, counted_dfa, encode_chars
    from constrain.grammar.json_schema.trees import rep

    direct = counted_dfa(_encoded_char_dfa(), low, high)
    reference = build_byte_dfa(encode_chars(rep(ANY_CHAR, low, high)))
    assert direct.num_states == reference.num_states
    assert difference(direct, reference) is None and difference(reference, direct) is None


def test_long_length_bound_with_pattern_compiles_quickly():
    """maxLength 2000 with a pattern: the length automaton used to be minimised (tens of seconds)."""
    schema = {"type": "string", "pattern": "^[a-z ]*$", "maxLength": 2000}
    dfa = dfa_for(schema)
    for text in ["", "ab c", "a" * 2000, "a" * 2001, "aB", "é", " " * 1999 + "x"]:
        assert dfa.matches(text_of(text).encode()) == is_valid(schema, text), text[:10]


def test_unanchored_alternatives_share_their_sides():
    """Eighteen unanchored words as a key pattern (Github_medium o48427): each word with
    its own ``Σ*`` sides made the subset construction track which words were seen and
    pass the state limit; sharing the sides keeps the search automaton linear."""
    words = ["Normal", "Fighting", "Flying", "Poison", "Ground", "Rock", "Bug", "Ghost", "Steel", "Fire",
             "Water", "Grass", "Electric", "Psychic", "Ice", "Dragon", "Dark", "Fairy"]
    schema = {"type": "object", "patternProperties": {"|".join(words): {"type": "integer"}},
              "additionalProperties": False}
    dfa = dfa_for(schema)
    assert dfa.num_states < 2_000
    rng = random.Random(7)
    for _ in range(200):
        key = "".join(rng.choice(["Fire", "Ice", "Dra", "gon", "x", "é", "Rock"]) for _ in range(rng.randint(0, 3)))
        for value in ({key: 1}, {key: "a"}, {key: 1, "Bug": 2}):
            assert dfa.matches(text_of(value).encode()) == is_valid(schema, value), value
    mixed = {"type": "string", "pattern": "^ab|cd$|ef|^gh$|ij"}
    mixed_dfa = dfa_for(mixed)
    for text in ["abx", "xab", "xcd", "cdx", "xefx", "gh", "xgh", "ijk", "", "x"]:
        assert mixed_dfa.matches(text_of(text).encode()) == is_valid(mixed, text), text


def test_many_pattern_properties_split_keys_by_the_classes_that_exist():
    """Nine mutually exclusive key patterns (pyrseas-0.8) were refused for passing six;
    classes are now split pattern by pattern and empty ones dropped, so only keys that
    overlap in more than MAX_KEY_CLASSES ways are refused."""
    kinds = ["table", "view", "type", "domain", "function", "sequence", "aggregate", "collation", "foreign table"]
    schema = {"type": "object", "properties": {"name": {"type": "string"}},
              "patternProperties": {f"^{kind} ": {"type": "integer", "minimum": i} for i, kind in enumerate(kinds)},
              "additionalProperties": False}
    dfa = dfa_for(schema)
    rng = random.Random(3)
    for _ in range(300):
        key = rng.choice(kinds + ["x", "tab", ""]) + rng.choice([" a", "", "  ", "b"])
        value = {"name": "n", key: rng.randint(-1, 9)} if rng.random() < 0.5 else {key: rng.randint(-1, 9)}
        assert dfa.matches(text_of(value).encode()) == is_valid(schema, value), value
    overlapping = {"type": "object", "patternProperties": {chr(97 + i): {"type": "integer"} for i in range(7)}}
    with pytest.raises(SchemaError, match="overlap in more than 64 ways") as err:
        dfa_for(overlapping)
    assert err.value.pointer == "/patternProperties/g"


LOOK_AHEAD_PATTERNS = [
    r"^(?!@@)[@a-zA-Z0-9_-]+$", r"^(?!org\.bukkit\.)([a-zA-Z_][a-zA-Z\d_]*\.)*[a-zA-Z_][a-zA-Z\d_]*$",
    r"((?:[^/]*/)*)(?=\.(yaml|yml|json))", r"^(?!^lucene\.|builtin\.|mongodb\.).*", r"^(?!pattern$).*$",
    r"^(?!(False|None|True|and)$)[a-zA-Z_]\w*$", r"^$[a-z]*$", r"a$|b", r"(?=ab)", r"x(?!y)",
    r"^(?=.{1,5}$)a+b*$", r"^(?:a(?!b)){0,3}$", r"^(a|b(?=c))c?$", r"(?=a)(?!ab)", r"^(?:(?=a)|b)\w$",
    r"^(.{1,3}\.){1,3}(?![0-9]*$)[a-z0-9-]+\.?$", r"^((?!ab).)*$", r"^([^,]+(,|$)){3,}$",
    r"^(\/?((\.{2})|([a-z0-9\-]*))($|\/))*$", r"^(a(?=b)b?){2,20}$", r"((?!a.).)+b", r"^(?:(?!\.\.)[a-z.,])*$",
    r"\bab\b", r"\Ba", r"^\w+\b", r"x\b.y", r"\b", r"\B", r"^(a\b|b)+$", r"(?=a)\b\w",
    r"^https?:\/\/(www\.)?[-a-z0-9@:%._]{1,25}\.[a-z]{1,6}\b([-a-z0-9@:%_.~#?&//=]*)$",
]
#: Anchors after zero-width items or inside groups of alternatives (the regex fuzzer's
#: finds: ``(?:^|x)a`` matched ``"ba"``, ``(?!a)^b`` matched ``"cb"``).
ANCHOR_PATTERNS = [
    r"(?!a)^b", r"()^b", r"(?=a)^a", r"(?:^|x)a", r"a(?:$|x)", r"()^$()", r"(?:^a)b", r"x|(?:^|y)(?:c|$)",
    r"(?:(?:^|x)y|c)a", r"^(?:a|b$)", r"(?:^a|b)(?=c)", r"\b(?:^|x)a",
    # An assertion inside an optional group at a branch's end: a TypeError ("cannot encode _Look") before.
    r"^(?:x(?!ab))?", r"(?:x(?!ab))?|b", r"a(?:b(?=c))?", r"x(?:y$)?", r"^(?:a(?!b))?$",
]
#: Parts that match nothing inside a pattern that matches something (``a(?=b)c`` before a
#: look-ahead or in a repetition): the whole pattern was refused as "matches no string at all".
EMPTY_PART_PATTERNS = [
    r"^(?:x|a(?=b)c(?=d))$", r"^(?:x|(?:a(?=b)c)+(?=d))$", r"^(?:x|(?:a(?=b)c){2}(?=d))$", r"x|(?:y(?=(?!z)(?=z)))+",
    r"^(?:x|a(?=b)c\b)$", r"x(?!a(?=b)c)", r"x(?=a(?=b)c)|y", r"(?:x(?!a$b))+$",
    # a '^' after text that always consumes a character never holds (one input, no m flag)
    r"/^[0-9]{4}$/", r"x|a^b", r"(?:x^)?y", r"a(?:^b|c)", r"a(?:^|x)", r"\d+^|é", r"(?=x^)y|z", r"(?!a^)b",
    r"^(?:(?:^a|[bx])\.)*c$", r"^(?:(?:^|b)a)+$",  # '^' in a repetition: its first copy only
]


@pytest.mark.parametrize("pattern", LOOK_AHEAD_PATTERNS + ANCHOR_PATTERNS + EMPTY_PART_PATTERNS)
def test_look_aheads_and_inner_dollars_in_patterns(pattern):
    """Look-aheads, a ``$`` before a pattern's end, word boundaries (strings.pattern_tree:
    filters on the text that follows, or markers checked by dfa_ops.assert_ahead) and
    anchors wherever they may stand.  Oracle: the ``regex`` module's search, ASCII classes
    as in ECMA-262, ``$`` as end of input."""
    import regex
    oracle = regex.compile(pattern.replace("$", r"\Z"), flags=regex.ASCII)
    dfa = dfa_for({"type": "string", "pattern": pattern})
    pieces = list("ab.c/xy@_-09,,") + ["http://", "www.", ".com", "yaml", "org.bukkit.", "lucene.", "pattern", "None", "é", "\n", "1.2"]
    rng = random.Random(pattern)
    for _ in range(1500):
        text = "".join(rng.choice(pieces) for _ in range(rng.randint(0, 6)))
        assert dfa.matches(text_of(text).encode()) == (oracle.search(text) is not None), text
    assert dfa_for({"enum": ["@@x", "ab", "a", "x"], "pattern": pattern}).matches(b'"x"') == (oracle.search("x") is not None)


def test_too_many_assertions_in_one_repetition_are_refused_by_position():
    """Inside an unbounded repetition each assertion is a marker byte; there are eleven."""
    pattern = "^(?:" + "(?!a)" * 12 + ".)*$"
    with pytest.raises(SchemaError, match=r"position 59\): more than 11 look-aheads, '\$' or word boundaries in one repetition"):
        dfa_for({"type": "string", "pattern": pattern})
    with pytest.raises(SchemaError, match=r"position 4\): a word boundary inside a look-ahead"):
        dfa_for({"type": "string", "pattern": r"x(?=\ba)"})
    # Inside a long repetition in a look-ahead too (a TypeError from dfa_ops before).
    with pytest.raises(SchemaError, match=r"position 6\): a word boundary inside a look-ahead"):
        dfa_for({"type": "string", "pattern": r"(?=(?:\bx)+)y"})


def test_assertion_automata_past_their_runs_budget_are_refused(monkeypatch):
    """The subset construction of assertions holds sets of runs; past the budget of runs in
    all, the pattern is refused with its pointer (memory follows the runs, not the states)."""
    import constrain.automata.dfa_ops as dfa_ops

    assert dfa_for({"type": "string", "pattern": r"\bab\b"}).matches(b'"x ab y"')
    monkeypatch.setattr(dfa_ops, "MAX_ASSERTION_RUNS", 100)
    with pytest.raises(SchemaError, match=r"needs more than 100 runs of its automaton") as err:
        dfa_for({"properties": {"a": {"pattern": r"\bcd\b"}}})  # another pattern: built ones are memoised
    assert err.value.pointer == "/properties/a"


@pytest.mark.parametrize("pattern", [r"a?(?:^|x)", r"(?:^|x)?a", r"(?=^a)a"])
def test_anchors_that_cannot_stand_are_refused_by_position(pattern):
    """A '^' that is not at the start of a branch, once groups of alternatives are split, and
    not after text that always consumes a character (where it never holds), is refused by
    position, never dropped (before, ``(?=^a)a`` matched ``"ba"``)."""
    with pytest.raises(SchemaError, match=r"anchor '\^' is only supported at the start"):
        dfa_for({"type": "string", "pattern": pattern})


def test_pattern_dollar_is_ecma_end_of_input():
    dfa = dfa_for(STRING_SCHEMAS["pattern anchored"])
    assert dfa.matches(b'"a12"') and not dfa.matches(b'"a12\\n"')


def test_unicode_property_escapes_in_patterns_and_keys():
    """``\\p{...}`` as the JSON Schema Test Suite uses it (Python's re, hence jsonschema,
    has no property escapes: the ``regex`` module, unanchored like the keyword, is the oracle)."""
    import regex

    words = ["l'ecole", "l'école", "L'ÉCOLE", "1cole", "cole", "ٍécole", "école"]
    dfa = dfa_for({"type": "string", "pattern": r"\p{Letter}cole"})
    for word in words:
        assert dfa.matches(text_of(word).encode()) == bool(regex.search(r"\p{Letter}cole", word)), word
    keys = {"type": "object", "patternProperties": {r"^\p{digit}+$": True}, "additionalProperties": False}
    dfa = dfa_for(keys)
    for key in ["42", "৪২", "-%#", "4a", ""]:
        assert dfa.matches(text_of({key: 1}).encode()) == bool(regex.search(r"^\p{digit}+$", key)), key
    with pytest.raises(SchemaError, match=r"/pattern.*Script=Greek"):
        dfa_for({"type": "string", "pattern": r"\p{Script=Greek}"})


def test_object_constants_in_any_member_order():
    """JSON equality ignores member order, so an object ``const``/``enum`` value is
    written in any order (nested ones too), each member once; arrays keep theirs.
    A constant a product takes away is taken away in every order: before the
    nineteenth session only its own order was, and ``{"type": "object", "not":
    {"enum": [value]}}`` accepted the value written in another order."""
    value = {"foo": "bar", "baz": [1, {"p": 2, "q": None}], "n": {"x": 1, "y": True}}
    schemas = [{"const": value}, {"enum": [value, {"foo": 1}]},
               {"type": "object", "not": {"enum": [value]}},
               {"oneOf": [{"const": value}, {"type": "object", "required": ["foo", "n"]}]}]
    texts = set()
    for order in itertools.permutations(value):
        inner = [{k: value["n"][k] for k in o} for o in itertools.permutations(value["n"])]
        for n in inner:
            texts.add(text_of({k: (n if k == "n" else value[k]) for k in order}))
    texts |= {text_of({"foo": "bar", "baz": [{"p": 2, "q": None}, 1], "n": value["n"]}), text_of({"foo": "bar"}),
              text_of({"foo": 1}), text_of({"baz": [1, {"q": None, "p": 2}], "n": {"y": True, "x": 1}, "foo": "bar"}),
              '{"foo": "bar", "foo": "bar", "baz": [1, {"p": 2, "q": null}], "n": {"x": 1, "y": true}}'}
    for schema in schemas:
        dfa = dfa_for(schema)
        for text in texts:
            expected = is_valid(schema, json.loads(text)) and text.count('"foo"') == 1
            if "not" in schema or "oneOf" in schema:  # products: one order, on the safe side
                if text.count('"foo"') > 1:
                    continue  # a free-form object admits repeated keys (ARCHITECTURE.md, "Repeated keys")
                assert not dfa.matches(text.encode()) or expected, (schema, text)
            else:
                assert dfa.matches(text.encode()) == expected, (schema, text)


_CONST = {"a": 1, "b": 2}


@pytest.mark.parametrize("schema", [
    {"type": "array", "contains": {"const": _CONST}, "maxContains": 1},
    {"type": "array", "contains": {"const": _CONST}, "minContains": 2},
    {"if": {"const": _CONST}, "then": False},
    {"oneOf": [{"const": _CONST}, {"const": {"b": 2, "a": 1}}]},
    {"oneOf": [{"const": _CONST}, {"type": "object", "required": ["a"]}]},
    {"dependentSchemas": {"a": {"not": {"const": _CONST}}}},
    {"type": "object", "properties": {"x": {"not": {"const": _CONST}}}},
    {"not": {"anyOf": [{"const": _CONST}, {"const": [_CONST]}]}},
    {"not": {"enum": [{"a": {"c": 1, "d": 2}, "b": [_CONST]}]}},
])
def test_object_constants_are_taken_away_in_every_order(schema):
    """Six of these schemas (all but minContains, the oneOf beside a schema object and
    dependentSchemas) accepted an invalid value written in another member order than the
    constant's before the nineteenth session."""
    dfa = dfa_for(schema)
    values = [_CONST, {"b": 2, "a": 1}, [_CONST, {"b": 2, "a": 1}], [{"b": 2, "a": 1}], {"x": {"b": 2, "a": 1}},
              {"b": [{"b": 2, "a": 1}], "a": {"d": 2, "c": 1}}, {"a": 1}]
    for value in values:
        for text in (text_of(value), json.dumps(value, indent=2)):
            assert not dfa.matches(text.encode()) or is_valid(schema, value), text


@pytest.mark.parametrize("schema", [
    {"not": {"type": "object", "dependentRequired": {"a": ["b"]}}},
    {"not": {"oneOf": [{"type": "array"}, {"type": "object", "dependentRequired": {"a": ["b"]}}]}},
    {"not": {"type": "object", "dependentSchemas": {"a": {"required": ["c"]}}}},
    {"type": "array", "contains": {"not": {"type": "object", "dependentSchemas": {"a": {"required": ["c"]}}}}},
    {"oneOf": [{"type": "object"}, {"dependentRequired": {"b": ["a", "c"]}}]},
    {"if": {"dependentRequired": {"a": ["b"]}}, "then": {"maxProperties": 1}, "else": True},
])
def test_dependency_names_keep_one_order_in_products(schema):
    """A dependency's names are members the operand writes: before the twentieth
    session they had no slot, the side taken away wrote them in its own order and a
    free-form kept side in any, so ``{"b": 0, "a": 0}`` got through these (found by
    the random product fuzzer)."""
    dfa = dfa_for(schema)
    values = [{"a": 1}, {"b": 0, "a": 0}, {"a": 0, "b": 0}, {"c": 1, "b": 2, "a": 3}, {"c": 1, "a": 2},
              {"b": 1, "c": 2, "a": 3}, [{"c": {}, "b": 1, "a": 2}], [{"a": 1}], {}]
    for value in values:
        for text in (text_of(value), json.dumps(value, indent=2)):
            assert not dfa.matches(text.encode()) or is_valid(schema, value), text


def test_enum_lists_meet_by_json_schema_equality():
    """``enum: [0]`` and ``const: -0.0`` share one value (JSON Schema: 0 equals -0.0).
    Matched with signed zeros they shared none, so under ``not`` nothing was taken away
    and ``0`` got through (found by the random product fuzzer)."""
    both = {"allOf": [{"enum": [0, [0]]}, {"enum": [-0.0, [-0.0], 1]}]}
    dfa = dfa_for(both)
    assert all(dfa.matches(t) for t in [b"0", b"-0.0", b"[0]", b"[-0.0]"]) and not dfa.matches(b"1")
    for schema in ({"not": both}, {"if": {"oneOf": [{"type": "array", "items": {"type": "string"}}, both]},
                                   "then": {"type": "object"}}):
        dfa = dfa_for(schema)
        for text in ["0", "0.0", "-0", "-0.0", "0e0", "[0]", "[-0.0]", "[0.0]", "1", "[]"]:
            assert not dfa.matches(text.encode()) or is_valid(schema, json.loads(text)), (schema, text)


def test_zero_literals_take_each_zero_json_dumps_writes():
    """``const: -0.0`` equals ``0`` and ``0.0``; json.dumps writes the three (0, 0.0, -0.0
    as int, float, negative float), so a valid instance may come in any of them (the
    completeness fuzzer found ``0.0`` refused)."""
    for schema in ({"const": -0.0}, {"const": 0}, {"enum": [0.0, "x"]}, {"const": [0]}):
        dfa = dfa_for(schema)
        for value in (0, 0.0, -0.0, [0], [-0.0], [0.0], 1, [1]):
            assert dfa.matches(text_of(value).encode()) == is_valid(schema, value), (schema, value)


def test_bounded_numbers_take_the_negative_zero_json_dumps_writes():
    """``json.dumps(-0.0)`` is ``-0.0``, a zero: in range wherever 0 is (the fuzzer found it
    refused under any bound); ``-0`` is no text json.dumps writes for a float."""
    for schema in ({"type": "number", "minimum": 0}, {"type": "number", "maximum": 1}, {"type": "number", "maximum": 0},
                   {"type": "number", "exclusiveMinimum": 0}, {"type": "number", "exclusiveMaximum": 0},
                   {"type": "number", "minimum": -2, "maximum": 3, "multipleOf": 0.5}, {"type": "number", "minimum": 1}):
        dfa = dfa_for(schema)
        assert dfa.matches(b"-0.0") == is_valid(schema, -0.0), schema
        assert not dfa.matches(b"-0")


@pytest.mark.parametrize("schema", [
    {"type": "object", "minProperties": 2},
    {"type": "object", "additionalProperties": {"type": "integer"}, "minProperties": 2},
    {"type": "object", "patternProperties": {"^x": {"type": "integer"}}, "minProperties": 2},
    {"type": "object", "properties": {"v": {"type": "integer"}}, "minProperties": 3},
    {"type": "object", "properties": {"v": {"type": "integer"}}, "required": ["v"], "minProperties": 2},
])
def test_min_properties_counts_a_repeated_additional_key_once(schema):
    """In schema order the keys written were counted, so ``{"a": 1, "a": 2}`` (one member
    once parsed) met minProperties 2 (found by the fuzzer).  Where minProperties needs two
    additional members the object is a member loop, which keeps the names written."""
    texts = ['{"a": 1, "a": 2}', '{"a": 1, "b": 2}', '{"x": 1, "x": 2}', '{"x": 1, "xy": 2}', '{"v": 1, "a": 1, "a": 2}',
             '{"v": 1, "a": 1, "b": 2}', '{"v": 1, "a": 2}', '{"v": 1}', '{"v": 1, "x": 1, "x": 2, "y": 3}']
    language = schema_to_dfa(schema)
    for text in texts:
        accepted, valid = language.automaton.matches(text.encode()), is_valid(schema, json.loads(text))
        if len(re.findall(r'"\w+":', text)) == len(json.loads(text)):
            assert accepted == valid, text
        else:  # a repeated key: never accepted for a value that is invalid once parsed
            assert not accepted or valid, text


@pytest.mark.parametrize("schema", [
    {"type": "object", "properties": {"tags": {"type": "object"}}, "maxProperties": 3},
    {"properties": {"tags": {"type": "integer"}}, "required": ["tags"], "additionalProperties": {"type": "integer"},
     "maxProperties": 2},
])
def test_any_order_puts_extras_before_a_lone_listed_property(schema):
    """property_order="any" where maxProperties leaves the member loop out: with one listed
    property and additional ones, the object was left in schema order, with no note, so
    ``{"x": {}, "tags": {}}`` was refused (found by the fuzzer).  It is the subset graph, as
    with two or three listed properties: exact on every order of up to four keys."""
    language = schema_to_dfa(schema, JsonSchemaOptions(property_order="any"))
    assert not language.notes
    for size in range(5):
        for names in itertools.permutations(["tags", "x", "y", "z"], size):
            value = {name: {} if name == "tags" and "object" in json.dumps(schema) else 1 for name in names}
            text = text_of(value).encode()
            assert language.automaton.matches(text) == is_valid(schema, value), value


_PRESENCE_PROPS = {"a": {"type": "integer"}, "b": {"type": "integer"}, "c": {"type": "integer"}, "d": {"type": "string"}}


@pytest.mark.parametrize("schema", [
    {"type": "object", "properties": _PRESENCE_PROPS, "anyOf": [{"required": ["a"]}, {"required": ["c"]}]},
    {"type": "object", "properties": _PRESENCE_PROPS,
     "oneOf": [{"required": ["a"]}, {"required": ["b", "c"]}, {"required": ["d"], "title": "d"}]},
    {"properties": _PRESENCE_PROPS, "oneOf": [{"required": ["a"]}, {"required": ["b"]}]},  # no type: scalars fail
    {"properties": _PRESENCE_PROPS, "oneOf": [{"required": ["b"]}]},  # one branch: scalars pass
    {"properties": _PRESENCE_PROPS, "anyOf": [{"required": ["a"]}, {"required": ["x"]}]},
    {"properties": _PRESENCE_PROPS, "additionalProperties": False, "anyOf": [{"required": ["a"]}, {"required": ["x"]}]},
    {"type": "object", "properties": _PRESENCE_PROPS, "minProperties": 2, "maxProperties": 3,
     "oneOf": [{"required": ["a", "b"]}, {"required": ["b", "c"]}], "anyOf": [{"required": ["d"]}, {"required": ["a"]}]},
    {"not": {"properties": _PRESENCE_PROPS, "oneOf": [{"required": ["a"]}, {"required": ["b"]}]}},
    {"oneOf": [{"properties": _PRESENCE_PROPS, "anyOf": [{"required": ["a"]}, {"required": ["b"]}]},
               {"type": "object", "required": ["c"]}]},
    {"type": "object", "properties": _PRESENCE_PROPS, "dependentRequired": {"c": ["a"], "d": ["a", "b"]}},
    {"properties": _PRESENCE_PROPS, "additionalProperties": False, "dependentRequired": {"a": ["x"], "b": []}},
    {"type": "object", "properties": _PRESENCE_PROPS, "maxProperties": 2, "dependentRequired": {"a": ["b", "c"]},
     "anyOf": [{"required": ["a"]}, {"required": ["d"]}]},
    {"not": {"properties": _PRESENCE_PROPS, "dependentRequired": {"b": ["a"]}}},
    {"$schema": "http://json-schema.org/draft-07/schema#", "type": "object", "properties": _PRESENCE_PROPS,
     "dependencies": {"x": ["a"], "a": ["x"]}},
])
@pytest.mark.parametrize("order", ["schema", "any"])
def test_member_rules_are_exact(schema, order):
    """anyOf/oneOf whose branches only list required names (member_groups.Presence) and
    dependencies on lists of names (member_groups.Dependency) are tracked in the member graph
    instead of one copy of the object per branch or case: exact against jsonschema on
    every member order of up to four names (refusals only where the documented member
    order, or a product's one order, leaves the text out)."""
    dfa = schema_to_dfa(schema, JsonSchemaOptions(property_order=order)).automaton
    rng = random.Random(json.dumps(schema) + order)
    in_products = "not" in schema or "oneOf" in schema and "properties" not in schema
    # maxProperties below the keys there are leaves the member loop out: the subset graph
    # takes few members, larger objects keep schema order (documented)
    in_products |= "maxProperties" in schema and len(_PRESENCE_PROPS) > MAX_GRAPH_ORDER_MEMBERS
    for size in range(5):
        for names in itertools.permutations("abcdx", size):
            value = {name: rng.choice([1, 2, "s"]) for name in names}
            accepted, valid = dfa.matches(text_of(value).encode()), is_valid(schema, value)
            assert not accepted or valid, value
            in_order = list(names) == sorted(names, key="abcdx".index)
            if valid and (in_order or (order == "any" and not in_products)):
                assert accepted, value
    for scalar in (1, "s", None, [], True):
        assert dfa.matches(text_of(scalar).encode()) == is_valid(schema, scalar), scalar


_NUMBER = {"type": "number"}
_MEMBER_WISE = [
    # Glaiveai2K calculate_area: one shape's dimensions per branch.
    {"type": "object", "oneOf": [{"properties": {"a": _NUMBER}, "required": ["a"]},
                                 {"properties": {"b": _NUMBER, "c": _NUMBER}, "required": ["b", "c"]}]},
    # Object-valued members: the value classes are products needing shared slots.
    {"oneOf": [{"type": "object", "properties": {"a": {"type": "object", "properties": {"x": {"type": "integer"}},
                                                       "required": ["x"]}}},
               {"type": "object", "properties": {"a": {"type": "object", "required": ["y"]}, "b": {"type": "string"}},
                "required": ["b"]}]},
    # Three constraints on one member, one of them `false`; a base schema for it too.
    {"properties": {"a": {"type": ["integer", "string"]}},
     "oneOf": [{"properties": {"a": {"type": "integer"}}}, {"properties": {"a": {"maximum": 1}}},
               {"properties": {"a": False, "c": {"const": 1}}, "required": ["c"]}]},
    # Inside a product: the negated operand holds the group.
    {"type": "object", "not": {"oneOf": [{"properties": {"a": _NUMBER}, "required": ["a"]},
                                         {"properties": {"b": {"type": "string"}}, "required": ["b"]}]}},
    # Conditionals: a chain of tags (Github_hard o36012), and an untyped one that leaves scalars alone.
    {"type": "object", "properties": {"a": {"enum": [1, 2, "s"]}},
     "allOf": [{"if": {"properties": {"a": {"const": 1}}}, "then": {"properties": {"b": _NUMBER}, "required": ["b"]}},
               {"if": {"properties": {"a": {"const": 2}}}, "then": {"properties": {"b": {"type": "string"}}},
                "else": {"properties": {"c": {"type": "null"}}}},
               {"if": {"required": ["c"]}, "then": {"required": ["x"]}}]},
    {"if": {"properties": {"a": _NUMBER}, "required": ["a"]}, "then": {"properties": {"b": {"const": 1}}},
     "else": {"type": "object", "required": ["c"]}},
    # Dependencies on member-wise schemas (as "if the key is there"; scalars untouched).
    {"properties": {"a": {"type": ["integer", "string"]}},
     "dependentSchemas": {"a": {"properties": {"b": _NUMBER}, "required": ["b"]},
                          "b": {"type": "object", "properties": {"a": {"type": "integer"}, "c": {"const": 1}}}}},
    {"$schema": "http://json-schema.org/draft-07/schema#", "type": "object", "properties": {"a": {}, "b": {}, "c": {}},
     "dependencies": {"c": {"properties": {"a": {"type": "string"}}}, "b": ["a"]}},
    # Many dependencies constraining one tag by enums (mongodb-atlas-search-index-definition's idiom):
    # more than three constraints, split by value.
    {"type": "object", "properties": {"a": {"enum": [1, 2, "s", None]}, "b": {}, "c": {}, "x": {}},
     "dependentSchemas": {"b": {"properties": {"a": {"enum": [1, 2]}}}, "c": {"properties": {"a": {"enum": [2, "s"]}}},
                          "x": {"properties": {"a": {"const": None}}}, "d": {"properties": {"a": {"enum": [1]}}}}},
    # A branch that is a reference.
    {"$defs": {"num": {"properties": {"a": _NUMBER}, "required": ["a"]}},
     "oneOf": [{"$ref": "#/$defs/num"}, {"properties": {"a": {"type": "string"}, "b": {}}, "required": ["b"]}]},
    # A member both an `if` and its `then` constrain: failing the `if` lets the `else` stand
    # in for a failed `then` (1.5 is valid), so the `then` is no forced constraint.
    {"type": "object", "if": {"properties": {"a": {"type": "integer"}}}, "then": {"properties": {"a": {"minimum": 5}}}},
    # Two groups on the same members, and extra members beside them.
    {"type": "object", "properties": {"x": {"type": "integer"}},
     "oneOf": [{"properties": {"a": _NUMBER}}, {"properties": {"a": {"type": "string"}}}],
     "allOf": [{"oneOf": [{"properties": {"b": _NUMBER}, "required": ["b"]}, {"properties": {"a": {"const": 1}}}]}]},
]
_MEMBER_VALUES = [1, 2, 1.5, "s", None, [1], {"x": 1}, {"y": 1}, {"x": "s", "y": 2}]


@pytest.mark.parametrize("schema", _MEMBER_WISE)
def test_member_wise_one_of_is_exact(schema, monkeypatch):
    """``oneOf`` branches (and if/then/else) that only constrain members are rules of the member graph: each
    constrained member's value split into classes by the constraints it meets (no
    product of whole objects).  Exact against jsonschema for every member order of up
    to three names (refusals only out of the documented order)."""
    routes = _member_wise_routes(monkeypatch)
    dfa = schema_to_dfa(schema).automaton
    assert any(routes)
    _assert_exact_over_members(schema, dfa)


def _member_wise_routes(monkeypatch) -> list[bool]:
    """What each member-group candidate was found (see ``member_groups.is_member_wise``), in call order."""
    import constrain.grammar.json_schema.objects as objects

    routes: list[bool] = []
    original = objects.is_member_wise
    monkeypatch.setattr(objects, "is_member_wise", lambda *args: routes.append(original(*args)) or routes[-1])
    return routes


def _one_of_products(monkeypatch) -> list[int]:
    """One entry per ``oneOf`` built as a product (``combinators._exactly_one``), in call order."""
    import constrain.grammar.json_schema.combinators as combinators

    products: list[int] = []
    original = combinators._exactly_one
    monkeypatch.setattr(combinators, "_exactly_one", lambda *operands: products.append(1) or original(*operands))
    return products


def _refuse_products(monkeypatch) -> None:
    """Fail the test where a compile builds a product (``SchemaEmitter._minus``)."""
    import constrain.grammar.json_schema.emit as emit

    monkeypatch.setattr(emit.SchemaEmitter, "_minus", lambda *args: pytest.fail("a product was built"))


def _assert_exact_over_members(schema, dfa) -> None:
    """``dfa`` against jsonschema over objects of up to three of the names a, b, c, x with
    values drawn from ``_MEMBER_VALUES``, in every order (valid ones accepted in schema
    order), and over scalars."""
    rng = random.Random(json.dumps(schema))
    order = key_order(schema.get("not", schema))  # a product's kept side writes the negated side's slots
    for size in range(4):
        for names in itertools.permutations("abcx", size):
            in_order = list(names) == sorted(names, key=lambda n: order.index(n) if n in order else len(order))
            for _ in range(6):
                value = {name: rng.choice(_MEMBER_VALUES) for name in names}
                accepted, valid = dfa.matches(text_of(value).encode()), is_valid(schema, value)
                assert not accepted or valid, value
                if valid and in_order:
                    assert accepted, value
    for scalar in (1, "s", None, []):
        assert dfa.matches(text_of(scalar).encode()) == is_valid(schema, scalar), scalar


def _tagged_conditionals(properties: dict) -> dict:
    """Five conditionals on the tag ``a``, each giving member ``b`` another schema (with
    ``a`` left out every ``if`` holds, and no ``b`` meets all five)."""
    constraints = [{"type": "number"}, {"type": "string"}, {"maximum": 1}, {"type": "object", "required": ["x"]},
                   {"type": "array"}]
    return {"type": "object", "properties": properties,
            "allOf": [{"if": {"properties": {"a": {"const": i}}}, "then": {"properties": {"b": constraint}}}
                      for i, constraint in enumerate(constraints, 1)]}


def test_conditionals_decided_before_a_member_split_none_of_its_values(monkeypatch):
    """A ``then`` constraining a member written after every name its ``if`` involves is
    decided there: it must hold, or no longer matters.  So five conditionals on a tag,
    each constraining one member another way, stay member groups (more than
    ``MAX_MEMBER_CONSTRAINTS`` constraints that could split the member's values were a
    product of whole objects, JsonSchemaStore minecraft-predicate: 100 s), exact
    against jsonschema.  With the member before the tag they could split it: refused."""
    routes = _member_wise_routes(monkeypatch)
    schema = _tagged_conditionals({"a": {"enum": [1, 2, 3, 4, 5, "s"]}})
    with monkeypatch.context() as patch:  # a forced constraint is merged in, never negated
        _refuse_products(patch)
        dfa = schema_to_dfa(schema).automaton
    assert routes and all(routes)
    _assert_exact_over_members(schema, dfa)
    routes.clear()
    schema_to_dfa(_tagged_conditionals({"b": {}, "a": {"enum": [1, 2, 3, 4, 5, "s"]}}))
    assert not all(routes)


def test_if_a_member_is_set_is_a_member_group(monkeypatch):
    """``if: {"not": {"properties": {name: S}}}`` ("if the member is there and fails S",
    JsonSchemaStore prometheus' mutually exclusive credentials) is a member-wise branch,
    not a product per conditional: exact against jsonschema, scalars included."""
    schema = {"type": "object", "properties": {"a": {}, "b": {}, "c": {"type": "integer"}},
              "allOf": [{"if": {"not": {"properties": {name: {"const": None}}}},
                         "then": {"properties": {other: {"const": None} for other in "abc" if other != name}}}
                        for name in "abc"]}
    routes = _member_wise_routes(monkeypatch)
    dfa = schema_to_dfa(schema).automaton
    assert len(routes) == 3 and all(routes)
    _assert_exact_over_members(schema, dfa)
    untyped = {"properties": {"a": {}, "b": {}}, "if": {"not": {"properties": {"a": {"const": None}}}},
               "then": {"required": ["b"]}}
    _assert_exact_over_members(untyped, schema_to_dfa(untyped).automaton)


def test_a_constraint_the_member_schema_implies_splits_nothing(monkeypatch):
    """A ``then`` repeating a member's own schema (a wider type, the same recursive
    reference) before the tag is written: no value fails it, so no class negating the
    recursive definition is built (a product past the state limit in JsonSchemaStore
    minecraft-predicate); exact against jsonschema on nested values."""
    schema = {"$ref": "#/$defs/r", "$defs": {"r": {
        "type": "object",
        "properties": {"m": {"type": ["integer", "object"], "$ref": "#/$defs/r"}, "k": {"enum": ["u", "v"]}},
        "allOf": [{"if": {"properties": {"k": {"const": "u"}}},
                   "then": {"properties": {"m": {"type": ["number", "object"], "$ref": "#/$defs/r"}}}}]}}}
    _refuse_products(monkeypatch)
    dfa = schema_to_dfa(schema).automaton
    values = [{}, {"k": "u"}, {"m": 1, "k": "u"}, {"m": 1.5, "k": "v"}, {"m": {"m": 2, "k": "u"}, "k": "v"},
              {"m": {"m": {"k": "w"}}}, {"m": {"m": {"m": 3}, "k": "u"}, "k": "u"}, {"m": "s"}, {"k": "u", "m": 1}]
    for value in values:
        in_order = list(value) == [n for n in ("m", "k") if n in value]
        assert dfa.matches(text_of(value).encode()) == (is_valid(schema, value) and in_order), value


@pytest.mark.parametrize("base, constraint, draft, implied", [
    ({"type": ["integer", "object"], "$ref": "#/r"}, {"type": ["number", "object"], "$ref": "#/r"}, 2020, True),
    ({"type": "integer", "minimum": 1}, {"minimum": 1}, 2020, True),
    ({"type": "integer", "minimum": 1}, {"minimum": 2}, 2020, False),
    ({"type": "number"}, {"type": "integer"}, 2020, False),
    ({"$ref": "#/r"}, {"$ref": "#/s"}, 2020, False),
    # Before 2019-09 a reference hides its siblings: the base says nothing of its type.
    ({"type": "integer", "$ref": "#/r"}, {"type": "number"}, 7, False),
    ({"type": "integer", "$ref": "#/r"}, {"type": "string", "$ref": "#/r"}, 7, True),
    ({"type": "integer"}, False, 2020, False),
    ({"type": "integer"}, True, 2020, True),
])
def test_implied_constraints(base, constraint, draft, implied):
    """Which member constraints the member's own schema implies keyword by keyword."""
    from constrain.grammar.json_schema.document import Loc
    from constrain.grammar.json_schema.member_groups import implied_by

    assert implied_by([Loc(base, "/p", "urn:x", draft)], Loc(constraint, "/q", "urn:x", draft), draft) is implied
    assert not implied_by([Loc(base, "/p", "urn:y", draft)], Loc({"minimum": 1}, "/q", "urn:x", draft), draft)


@pytest.mark.parametrize("schema, order", [
    ({"properties": {"a": _NUMBER, "b": {}, "c": {"type": "string"}}, "not": {"required": ["a", "b"]}}, "abc"),
    ({"type": "object", "properties": {"a": _NUMBER, "b": {}}, "required": ["b"],
      "not": {"allOf": [{"required": ["a"]}, {"required": ["x"]}]}}, "abx"),  # the group's names after the listed ones
    ({"properties": {"a": _NUMBER}, "not": {"type": "object", "required": ["a"]}}, "a"),
    # `properties` that constrain nothing beside the names (Github_hard o77304).
    ({"properties": {"a": _NUMBER, "b": {}}, "not": {"properties": {"a": {}, "b": {"title": "B"}}, "required": ["a", "b"]}},
     "ab"),
])
def test_not_of_required_names_is_a_member_group(schema, order, monkeypatch):
    """``not: {"required": [...]}`` (names that may not all be there) is a rule of the member
    graph, not a product: exact against jsonschema for every member order of up to three
    names in schema order, and for scalars (refused unless the negated schema is typed)."""
    _refuse_products(monkeypatch)
    dfa = schema_to_dfa(schema).automaton
    for size in range(4):
        for names in itertools.permutations("abcx", size):
            value = dict.fromkeys(names, 1)
            accepted, valid = dfa.matches(text_of(value).encode()), is_valid(schema, value)
            assert not accepted or valid, value
            if valid and list(names) == sorted(names, key=lambda n: order.index(n) if n in order else len(order)):
                assert accepted, value
    for scalar in (1, "s", None, []):
        assert dfa.matches(text_of(scalar).encode()) == is_valid(schema, scalar), scalar


@pytest.mark.parametrize("schema", [
    {"properties": {"a": _NUMBER, "b": {}, "c": {}}, "oneOf": [
        {"required": ["a", "b"]}, {"required": ["c"], "not": {"type": "object", "required": ["b"]}}]},
    {"properties": {"a": _NUMBER, "b": {}, "c": {}}, "anyOf": [{"required": ["c"]}, {"not": {"required": ["a"]}}]},
    {"properties": {"a": _NUMBER, "b": {}, "c": {}},
     "anyOf": [{"required": ["c"]}, {"not": {"properties": {"a": True}, "required": ["a"]}}]},
    {"properties": {"a": _NUMBER, "b": {}}, "dependentSchemas": {"a": {"properties": {"b": {"not": {}}}},
                                                            "b": {"properties": {"a": False, "c": True}}}},
])
def test_branches_that_exclude_names_are_member_groups(schema, monkeypatch):
    """A branch's ``not: {"required": [name]}`` and a member schema no value meets
    (``false``, ``{"not": {}}``) exclude the name: a rule of the member graph, exact
    against jsonschema for every subset of names in schema order, and for scalars (which
    an untyped ``not: {"required": ...}`` refuses)."""
    _refuse_products(monkeypatch)
    dfa = schema_to_dfa(schema).automaton
    for size in range(4):
        for names in itertools.combinations("abcx", size):
            value = dict.fromkeys(names, 1)
            assert dfa.matches(text_of(value).encode()) == is_valid(schema, value), value
    for scalar in (1, "s", None, []):
        assert dfa.matches(text_of(scalar).encode()) == is_valid(schema, scalar), scalar


def test_member_wise_branches_stand_where_their_combinator_does():
    """A ``oneOf`` moved to the member graph keeps its branches' place: before the
    node's own properties when absorbed first (grunt-watch-task's options), after the
    names listed before it otherwise."""
    first = {"allOf": [{"oneOf": [{"properties": {"e": {"type": "array"}}}, {"properties": {"e": {"type": "string"}}}]}],
             "properties": {"s": {"type": "boolean"}}}
    assert dfa_for(first).matches(b'{"e": [], "s": true}') and not dfa_for(first).matches(b'{"s": true, "e": []}')
    later = {"properties": {"s": {"type": "boolean"}}, "required": ["r"],
             "oneOf": [{"properties": {"e": _NUMBER}}, {"properties": {"e": {"type": "string"}}}]}
    assert dfa_for(later).matches(b'{"s": true, "e": 1, "r": 0}')


def test_member_classes_split_only_by_open_branches():
    """A member's value is split only by the constraints of branches still open where it
    is written: once ``"kind": "noise"`` rules out the ``flat`` conditional, its
    ``settings`` schema no longer splits (a product there would fix the member order of
    every ``settings`` object; JsonSchemaStore minecraft-dimension)."""
    schema = {"type": "object", "properties": {"kind": {"enum": ["flat", "noise"]}},
              "allOf": [{"if": {"properties": {"kind": {"const": "flat"}}},
                         "then": {"properties": {"settings": {"type": "object", "properties": {"layers": {}, "biome": {}},
                                                              "required": ["layers"]}}}},
                        {"if": {"properties": {"kind": {"const": "noise"}}},
                         "then": {"properties": {"seed": {"type": "integer"}, "settings": {"type": ["string", "object"]}}}}]}
    dfa = dfa_for(schema)
    for value, accepted in (({"kind": "noise", "seed": 1, "settings": {"biome": 1, "layers": 2}}, True),
                            ({"kind": "noise", "settings": {"z": {"y": [1]}, "biome": 1}}, True),
                            ({"kind": "flat", "settings": {"layers": 2, "biome": 1}}, True),
                            ({"kind": "flat", "settings": {"biome": 1}}, False),
                            ({"kind": "flat", "settings": "s"}, False),
                            ({"kind": "noise", "seed": "1"}, False)):
        assert is_valid(schema, value) == accepted, value
        assert dfa.matches(text_of(value).encode()) == accepted, value


def test_not_of_a_type_needs_no_product(monkeypatch):
    """``not: {"type": ...}`` narrows the types (no product), and stays exact; taking away
    ``integer`` alone leaves numbers no type set says, so that one is still a product."""
    import constrain.grammar.json_schema.combinators as combinators

    calls = []
    original = combinators.difference
    monkeypatch.setattr(combinators, "difference", lambda *args: calls.append(1) or original(*args))
    values = [1, 1.5, "s", None, True, [], {}, {"a": [1, {"b": None}]}]
    for negated, product in ((["object", "null"], False), ("number", False), ("integer", True), ("string", False)):
        schema = {"not": {"type": negated, "description": "x"}}
        calls.clear()
        dfa = schema_to_dfa(schema).automaton
        assert bool(calls) == product, negated
        for value in values:
            assert dfa.matches(text_of(value).encode()) == is_valid(schema, value), (negated, value)
    assert dfa_for({"type": "integer", "not": {"type": "integer"}}).matches(b"1") is False


def test_enum_values_meet_patterns_the_ecma_way():
    """Enum values are filtered by the same pattern rules as the strings the language
    builds: ECMA-262 (``\\d`` is ASCII, ``\\p{...}`` known), not Python's ``re``."""
    cases = [({"enum": ["école", "x", "1cole"], "pattern": r"\p{L}cole"}, ["école"]),
             ({"enum": ["٣", "3"], "pattern": r"^\d$"}, ["3"]),
             ({"enum": [{"a1": 1}, {"a1": "x"}, {"b": "x"}], "patternProperties": {r"\d": {"type": "integer"}}},
              [{"a1": 1}, {"b": "x"}]),
             ({"enum": [{"٣": 1}, {"3": 1}, {"x": 1}], "patternProperties": {r"^\d$": {}}, "properties": {"x": {}},
               "additionalProperties": False}, [{"3": 1}, {"x": 1}]),
             ({"enum": [{"٣": 1}, {"3": "a"}], "patternProperties": {r"^\d$": {}}, "additionalProperties": {"type": "string"}},
              [{"3": "a"}])]
    for schema, kept in cases:
        dfa = dfa_for(schema)
        assert [v for v in schema["enum"] if dfa.matches(text_of(v).encode())] == kept, schema
    with pytest.raises(SchemaError, match="look-behind"):
        dfa_for({"enum": ["x"], "pattern": "(?<=a)x"})


def test_strings_use_json_dumps_escapes():
    dfa = dfa_for({"type": "string", "maxLength": 2})
    assert dfa.matches('"é\\n"'.encode()) and dfa.matches(b'"\\u0001"')
    assert not dfa.matches(b'"\\u00e9"')  # json.dumps(ensure_ascii=False) writes é itself
    assert not dfa.matches(b'"\\/"') and not dfa.matches(b'"\n"')


# -- formats ---------------------------------------------------------------------------------------------------------

CHECKED_FORMATS = {
    "date-time": ["2024-02-29T12:00:00Z", "2023-02-29T12:00:00Z", "1900-02-29T00:00:00Z", "2000-02-29T00:00:00Z",
                  "2024-04-31T00:00:00Z", "2024-12-31T23:59:59.123+05:30", "2024-01-01 00:00:00Z",
                  "2024-01-01T24:00:00Z", "2024-01-01T00:00:00", "2024-1-01T00:00:00Z", "2024-01-01t00:00:00z"],
    "date": ["2024-02-29", "2023-02-29", "2100-02-29", "2400-02-29", "2024-06-31", "2024-13-01", "24-01-01",
             "2024-01-01T00:00:00Z", "0001-01-01"],
    "time": ["12:00:00Z", "23:59:59+01:00", "12:00:00", "24:00:00Z", "12:60:00Z", "12:00:00.5-00:00", "1:00:00Z"],
    "ipv4": ["0.0.0.0", "255.255.255.255", "256.0.0.1", "1.2.3", "01.2.3.4", "1.2.3.4.5", "a.b.c.d"],
    "ipv6": ["::", "::1", "1:2:3:4:5:6:7:8", "1:2:3:4:5:6:7:8:9", "fe80::1%eth0", "::ffff:1.2.3.4", "1::2::3",
             "12345::", "abcd:ef01::"],
    "uuid": ["123e4567-e89b-12d3-a456-426614174000", "123E4567-E89B-12D3-A456-426614174000",
             "123e4567e89b12d3a456426614174000", "123e4567-e89b-12d3-a456-42661417400", "g23e4567-e89b-12d3-a456-426614174000"],
    # The checkers below come with jsonschema's format-nongpl extra (the dev extra asks for it).  Left out: where
    # they are laxer than the RFCs the formats name ("P1.5D", "PT1H1S", "example.com.", "a..b@c.d") or than
    # formats.FORMAT_NOTES ("xn--..." host names), and where stricter ("http://[::1]" as an iri, "{%20}" as a template).
    "duration": ["P1D", "PT1H", "P1W", "P1Y2M3DT4H5M6S", "P", "PT", "P1D2W", "1D", "P1DT", "PT36H", "P1Y1W", "p1d"],
    "hostname": ["example.com", "a", "a-b.c", "-ab.com", "ab-.com", "a" * 63 + ".com", "a" * 64 + ".com",
                 "exa_mple.com", "ex..com", "", "host name"],
    "uri": ["http://example.com", "https://a.b/c?d#e", "mailto:a@b.c", "urn:isbn:123", "/relative", "http://exa mple.com",
            "http://[::1]/", "a:", "1a:b", "http://a/%zz", "http://a/%20", "//no-scheme"],
    "uri-reference": ["/relative", "#frag", "", "a b", "http://x/y", "//host/p", "\\\\bad", "?q", "%zz"],
    "json-pointer": ["", "/a", "/a~0", "/a~1b", "/a~2", "a", "/~", "//", "/ a"],
    "relative-json-pointer": ["0", "1/a", "0#", "01", "-1", "1#/a", "", "2/a~1b"],
    "uri-template": ["http://x/{a}", "{a", "{+path}/x", "x}", "{a,b}", "{a:3}", "{a*}", "{?x,y}", "{a b}", "plain"],
}


@pytest.mark.parametrize("fmt", sorted(CHECKED_FORMATS))
def test_formats_checked_by_jsonschema(fmt):
    checkers = jsonschema.Draft202012Validator.FORMAT_CHECKER.checkers
    assert fmt in checkers, f"jsonschema checks no {fmt!r} format here: install the dev extra (jsonschema[format-nongpl])"
    assert_agrees({"type": "string", "format": fmt}, CHECKED_FORMATS[fmt])


# jsonschema here has no checker for these (its optional dependencies are absent), and its email check is only
# "contains @": verdicts by hand (RFC 3986, RFC 1123, RFC 5321, ISO 8601 durations as RFC 3339 appendix A writes them).
HAND_FORMATS = {
    "email": {"a@b.c": True, "first.last@example.com": True, "noat": False, "@": False, "a@": False,
              "@b.c": False, "x y@z.com": False, "a-b~c@d.e": True, ".a@b.c": False, "a..b@c.d": False,
              # quoted local parts (RFC 5321 quoted-string) and address literals
              '"x y"@z.com': True, '"a..b@c"@d.e': True, '"a\\"b"@c.d': True, '"a"b"@c.d': False, '"a@c.d': False,
              "a@[127.0.0.1]": True, "a@[127.0.0.300]": False, "a@[IPv6:::1]": True, "a@[ipv6:::1]": True, "a@[IPv6:1]": False,
              "a@[::1]": False, "δ@b.c": False},
    # RFC 6531: non-ASCII characters in the local part, dot-atom or quoted; the domain is as email's
    "idn-email": {"δοκιμή@example.com": True, '"δ δ"@b.c': True, "\x85@b.c": True, "𝕏@b.c": True,
                  "a＠b.c": False, ".δ@b.c": False, "a@b.c": True, "a b@c.d": False},
    "uri": {"https://example.com/a?b=c#d": True, "urn:isbn:0451450523": True, "mailto:a@b.c": True,
            "http://[v1.fe]/": True, "http://[V1.fe]/": True, "http://[w1.fe]/": False,
            "/relative/path": False, "no scheme": False, "http://exa mple.com": False, "1http://x": False},
    "hostname": {"example.com": True, "a": True, "a-b.c-d": True, "-ab.com": False, "ab-.com": False,
                 "a..b": False, "a" * 64 + ".com": False, "a_b.com": False,
                 # At most 253 characters in all (RFC 1123 2.1), each label at most 63.
                 ".".join(["a" * 63] * 3 + ["b" * 61]): True, ".".join(["a" * 63] * 3 + ["b" * 62]): False,
                 ".".join(["a" * 20] * 13): False, ".".join(["a" * 20] * 11 + ["b" * 22]): True},
    # RFC 3987: ucschar anywhere a URI takes unreserved characters, iprivate only in the query.
    "iri": {"http://ƒøø.ßår/?∂éœ=πîx#πîüx": True, "https://example.com/a?b#c": True, "http://x/?\ue000": True,
            "http://x/\ue000": False, "http://é é": False, "//ƒøø.ßår/": False, "ƒøø": False},
    "iri-reference": {"//ƒøø.ßår/": True, "ƒøø": True, "#ƒrägmênt": True, "\\WINDOWS\\fileshare": False,
                      "http://x/\ue000": False},
    # jsonschema's time checker refuses every leap second; RFC 3339 allows one at 23:59:60 UTC.
    "time": {"23:59:60Z": True, "23:59:60+00:00": True, "23:59:61Z": False},
    "date-time": {"2016-12-31T23:59:60Z": True, "2016-12-31T23:59:60.5Z": True},
    # RFC 6570: literals take ucschar and iprivate in every plane (not plane 14's first 4,096), and the apostrophe.
    "uri-template": {"a😀b": True, "a'b": True, "\U000E0001": False, "\U000E1000": True, "\U0010FFFD": True,
                     "\U0001FFFE": False, "a b": False, "{a..b}": False, "x{+var}/{x,y*}": True},
    "duration": {"P1D": True, "PT1H30M": True, "P1Y2M3DT4H5M6S": True, "P2W": True, "P": False, "PT": False,
                 "1D": False, "P1H": False, "P1DT": False, "P1Y2D": False, "PT1H2S": False, "P1Y2M": True,
                 "PT1M2S": True, "P1M3D": True},
}


REGEXES = {  # the format's subset refuses what ECMA-262 or Python's re refuses, and some valid ones
    "^/api/(.*)$": True, "[a-z0-9_-]+": True, r"\d{4}-\d{2}": True, "(a|b)*c?": True, "a|": True, "()": True,
    "[^a]": True, r"\bword\b": True, "(?:x)+?": True, "a{0}": True, "a{1,10}": True, "[-a]": True, r"[\]]": True,
    r"\/": True, "((((a))))": True, "x.y": True, "é+": True,
    "[": False, "(": False, ")": False, "a**": False, "*a": False, "a{2,1}": False, "[z-a]": False, "[^]": False,
    "a\\": False, "a*+": False, r"\p{L}": False, "(?<n>a)": False, "(?P<n>a)": False, r"(a)\1": False, "^*": False,
    "(((((a)))))": False, "(?<=a)b": False, "a{,5}": False, "a]": False, "x{": False, r"\q": False,
    "a{999999999}": True, "a{9999999999}": False,  # Python's re takes counts below 2**32 - 1
    "[1-9][0-9]*": True, "[a-fA-F0-7]": True, "[x-z]": False,  # ranges from 0, 1, a or A only
}


def test_regex_format_is_a_nested_subset_of_the_syntax_ecma_and_python_share():
    dfa = dfa_for({"type": "string", "format": "regex"})
    wrong = [(s, want) for s, want in REGEXES.items() if dfa.matches(text_of(s).encode()) != want]
    assert not wrong, wrong


@pytest.mark.parametrize("fmt", ["idn-hostname", "idn-email"])
def test_idn_formats_take_ascii_names_and_never_an_invalid_one(fmt):
    """IDNA 2008 is not regular to check: the formats are their ASCII counterparts, stricter
    (a U-label is refused) but never accepting what ``idna`` (jsonschema's checker) refuses."""
    schema = {"type": "string", "format": fmt}
    hosts = ["example.com", "EXAMPLE.com", "a-b.c", "a", "123", "xn--abc", "a_b", "ex--ample.com", "-a.com", "a..b",
             "실례.테스트", "ÖBB.at", "a" * 64, ".".join(["a" * 63] * 4), "a.b."]
    texts = hosts if fmt == "idn-hostname" else [f"user@{h}" for h in hosts] + ["a.b@c", "no-at", "@x.y", "실례@x.y"]
    dfa = dfa_for(schema)
    accepted = {t for t in texts if dfa.matches(text_of(t).encode())}
    assert accepted and all(is_valid(schema, t) for t in accepted), [t for t in accepted if not is_valid(schema, t)]
    assert {"example.com", "a-b.c"} <= {t.split("@")[-1] for t in accepted}


def test_regex_format_texts_all_compile():
    """Random texts of the format's language, walked byte by byte: Python's re compiles each."""
    dfa = build_byte_dfa(FORMATS["regex"])
    rows, rng, texts = dfa.trans.tolist(), random.Random(5), set()
    while len(texts) < 400:
        state, text = dfa.start, bytearray()
        while len(text) < 30 and not (dfa.accepting[state] and rng.random() < 0.15):
            byte = rng.choice([b for b in range(256) if rows[state][b] >= 0])
            text.append(byte)
            state = rows[state][byte]
        if dfa.accepting[state]:
            texts.add(text.decode())
    for text in texts:
        re.compile(text)  # raises on a text the format should not hold


@pytest.mark.parametrize("fmt, text", [("time", "23:59:60+01:00"), ("date-time", "2024-12-31T12:59:60Z")])
def test_leap_second_only_at_end_of_utc_day(fmt, text):
    assert not dfa_for({"type": "string", "format": fmt}).matches(text_of(text).encode())


@pytest.mark.parametrize("fmt", sorted(HAND_FORMATS))
def test_formats_by_hand(fmt):
    dfa = dfa_for({"type": "string", "format": fmt})
    wrong = [(s, want) for s, want in HAND_FORMATS[fmt].items() if dfa.matches(text_of(s).encode()) != want]
    assert not wrong, wrong


DRAFT_7 = "http://json-schema.org/draft-07/schema#"


def _is_base64(text: str) -> bool:
    """RFC 4648 base64 with padding, the oracle for draft 7's contentEncoding: whole
    quanta, padding only at the end (Python's decoder lets an extra ``=`` through, and
    before 3.11 data after the padding too), and the standard alphabet."""
    data = text.rstrip("=")
    if len(text) % 4 or len(text) - len(data) > 2 or "=" in data:
        return False
    try:
        base64.b64decode(text.encode("ascii"), validate=True)
    except (ValueError, UnicodeEncodeError):
        return False
    return True


def test_draft_7_content_encoding_base64_is_enforced_and_later_drafts_annotate_it():
    """Draft 7 lets a validator assert contentEncoding (the official suite's optional tests
    do), so base64 is enforced there, exactly; from 2019-09 on it is an annotation."""
    texts = ["", "eyJmb28iOiAiYmFyIn0K", "eyJmb28iOi%iYmFyIn0K", "{}", "ab==", "abc=", "abcd", "ab=", "a===", "abc",
             "ab+/", "ab-_", "YQ==YQ==", "é"] + ["".join(RNG.choice("aZ9+/=") for _ in range(RNG.randint(0, 9)))
                                                 for _ in range(40)]
    enforced = dfa_for({"$schema": DRAFT_7, "contentEncoding": "base64"})
    wrong = [t for t in texts if enforced.matches(text_of(t).encode()) != _is_base64(t)]
    assert not wrong, wrong
    assert enforced.matches(b"100") and enforced.matches(b"[1]")  # only strings are content
    annotated = dfa_for({"contentEncoding": "base64"})
    assert all(annotated.matches(text_of(t).encode()) for t in texts)


def _is_json_text(text: str) -> bool:
    """The oracle for draft 7's ``application/json`` content: RFC 8259, so Python's own
    extensions (NaN, Infinity) are no JSON text."""
    try:
        parsed = json.loads(text)
    except ValueError:
        return False
    return not re.search(r"\bNaN\b|\bInfinity\b", text) or _no_special_floats(parsed)


def _no_special_floats(value) -> bool:
    if isinstance(value, float):
        return math.isfinite(value)
    if isinstance(value, list):
        return all(map(_no_special_floats, value))
    if isinstance(value, dict):
        return all(map(_no_special_floats, value.values()))
    return True


def _json_documents(rng: random.Random, count: int) -> list[str]:
    """JSON texts of random values, written in varied ways, and broken copies of them."""
    def value(depth):
        kind = rng.randrange(6 if depth else 4)
        if kind == 0:
            return rng.choice([None, True, False, 0, -1.5e-3, 12, "", "é\n\"\\/😀", 1e300])
        if kind in (1, 2, 3):
            return rng.choice(["x", 3, None, 0.5, "a\u0001b"])
        if kind == 4:
            return [value(depth - 1) for _ in range(rng.randint(0, 3))]
        return {rng.choice(["a", "é", "k\"", ""]): value(depth - 1) for _ in range(rng.randint(0, 3))}

    out = []
    for _ in range(count):
        doc = json.dumps(value(rng.randint(0, 9)), ensure_ascii=rng.random() < 0.5,
                         indent=rng.choice([None, 1, "\t"]), separators=rng.choice([None, (",", ":"), (" , ", " : ")]))
        doc = rng.choice(["", " ", "\n"]) + doc + rng.choice(["", "\r\n", " "])
        out.append(doc)
        at = rng.randrange(len(doc) + 1)
        out.append(doc[:at] + rng.choice(["", ",", "]", "}", '"', ":", "\\", "x", "1", "\u0007"]) + doc[at + 1:])
    return out


def test_draft_7_json_content_is_a_callee_exact_at_any_depth():
    """A string whose content is a JSON text (draft 7's ``contentMediaType:
    application/json``) is accepted exactly when the content parses, at any depth, with
    any whitespace, escape and number spelling inside; non-strings are not content."""
    schema = {"$schema": DRAFT_7, "type": "object", "properties": {"doc": {"contentMediaType": "application/json"}}}
    language = schema_to_dfa(schema)
    assert not language.notes and language.recursive  # the document is a callee of its own
    hand = ['{"foo": "bar"}', "{:}", "", " ", "NaN", "01", "-0.5E+3", '"\\u00e9"', "[" * 30 + "]" * 30,
            "[" * 30 + "]" * 29, '{"a":1,}', "1 2", "\ttrue\n", '"\\ud800"', '"a\tb"']
    docs = hand + _json_documents(random.Random(5), 150)
    verdicts = [_is_json_text(doc) for doc in docs]
    assert 50 < sum(verdicts) < len(docs) - 50
    wrong = [doc for doc, valid in zip(docs, verdicts)
             if language.automaton.matches(text_of({"doc": doc}).encode()) != valid]
    assert not wrong, wrong[:5]
    assert language.automaton.matches(b'{"doc": 100}') and language.automaton.matches(b'{"doc": [1]}')


def test_draft_7_json_content_inside_products_is_cut_on_the_safe_side():
    """Inside ``not`` the document is unrolled: shallow texts exact, deep ones refused
    whichever side they are on, and never an invalid one accepted."""
    schema = {"$schema": DRAFT_7, "type": "string", "not": {"contentMediaType": "application/json"}}
    automaton = schema_to_dfa(schema).automaton
    docs = _json_documents(random.Random(6), 150)
    for doc in docs:
        valid = not _is_json_text(doc)
        got = automaton.matches(text_of(doc).encode())
        assert got == valid or (not got and doc.count("[") + doc.count("{") > 3), doc


def test_draft_7_content_keywords_filter_enum_values():
    """``jsonschema`` does not assert draft 7's content keywords, so enum values are checked
    against them here: a const that is not base64, or not a JSON text, is no value."""
    assert not dfa_for({"$schema": DRAFT_7, "contentEncoding": "base64", "const": "%%%"}).matches(b'"%%%"')
    both = dfa_for({"$schema": DRAFT_7, "contentEncoding": "base64", "enum": ["%%%", "YQ=="]})
    assert both.matches(b'"YQ=="') and not both.matches(b'"%%%"')
    # ECMA's $ is the end of the text (Python's re also matched before a final newline)
    assert not dfa_for({"$schema": DRAFT_7, "contentEncoding": "base64", "const": "YQ==\n"}).matches(b'"YQ==\\n"')
    documents = dfa_for({"$schema": DRAFT_7, "contentMediaType": "application/json", "enum": ["{:}", "[1]", 3]})
    assert [documents.matches(t) for t in (b'"[1]"', b'"{:}"', b"3")] == [True, False, True]


def test_draft_7_content_media_types_that_are_not_checked():
    """Base64 of a JSON text is refused (a note when relaxed); other media types are
    annotations, with a note; from 2019-09 on the keyword is an annotation."""
    encoded = {"$schema": DRAFT_7, "contentMediaType": "application/json", "contentEncoding": "base64"}
    with pytest.raises(SchemaError, match="encoded as base64") as info:
        schema_to_dfa(encoded)
    assert info.value.pointer.endswith("/contentMediaType")
    relaxed = schema_to_dfa(encoded, JsonSchemaOptions(strict=False))
    assert any("contentMediaType not enforced" in n for n in relaxed.notes)
    assert relaxed.automaton.matches(b'"ezp9Cg=="') and not relaxed.automaton.matches(b'"{}"')  # still base64
    html = schema_to_dfa({"$schema": DRAFT_7, "contentMediaType": "text/html"})
    assert html.notes == ["#/contentMediaType: 'text/html' is an annotation (not checked)"]
    later = schema_to_dfa({"contentMediaType": "application/json"})
    assert not later.notes and later.automaton.matches(b'"{:}"')  # 2020-12: an annotation by the spec


# -- numbers ---------------------------------------------------------------------------------------------------------

NUMBER_SCHEMAS = {
    "int min/max": {"type": "integer", "minimum": -17, "maximum": 1234},
    "int exclusive (draft 6+)": {"type": "integer", "exclusiveMinimum": -3, "exclusiveMaximum": 100},
    "int exclusive (draft 4)": {"$schema": "http://json-schema.org/draft-04/schema#", "type": "integer",
                                "minimum": 5, "exclusiveMinimum": True, "maximum": 50, "exclusiveMaximum": True},
    "int fractional bounds": {"type": "integer", "minimum": 2.5, "maximum": 9.5},
    "int multipleOf": {"type": "integer", "multipleOf": 7, "minimum": -30, "maximum": 40},
    "int multipleOf unbounded": {"type": "integer", "multipleOf": 4},
    "number min/max": {"type": "number", "minimum": -1.5, "maximum": 2.25},
    "number exclusive (draft 4)": {"$schema": "http://json-schema.org/draft-04/schema#", "type": "number",
                                   "minimum": 0, "exclusiveMinimum": True, "maximum": 1},
    "number exclusive": {"type": "number", "exclusiveMinimum": 0, "exclusiveMaximum": 0.5},
    "number multipleOf decimal": {"type": "number", "multipleOf": 0.25, "minimum": -2, "maximum": 3},
    "number multipleOf 0.1": {"type": "number", "multipleOf": 0.1, "maximum": 1, "minimum": 0},
}


def number_candidates():
    out = near(-17, -3, 0, 5, 50, 100, 1234, spread=3)
    for base in (-2, -1.5, 0, 0.5, 1, 2.25, 3, 9.5):
        out += [base, base + 0.25, base - 0.25, base + 0.1, base - 0.01, base + 0.001]
    out += [round(RNG.uniform(-3, 4), RNG.randint(1, 3)) for _ in range(150)]
    return [v for v in out if not (isinstance(v, float) and v.is_integer())] + [0.3, 0.7, 0.30000000000000004]


@pytest.mark.parametrize("name", sorted(NUMBER_SCHEMAS))
def test_numbers(name):
    assert_agrees(NUMBER_SCHEMAS[name], number_candidates())


def test_bounded_numbers_take_only_the_scientific_exponent_form_and_integers_are_canonical():
    number = dfa_for(NUMBER_SCHEMAS["number min/max"])
    assert number.matches(b"1.5") and number.matches(b"-1.5") and number.matches(b"2")
    assert number.matches(b"1e0") and number.matches(b"-1.25E+00") and not number.matches(b"3e0")
    # documented: one nonzero digit before the point, as json.dumps writes floats
    assert not any(number.matches(t) for t in (b"0.1e1", b"10e-1", b"15e-1", b"0e0"))
    integer = dfa_for(NUMBER_SCHEMAS["int min/max"])
    assert not integer.matches(b"5.0")  # documented: integers canonical (jsonschema would take 5.0)


# Bounds where json.dumps writes the values near them with an exponent (below 1e-4, from 1e16).
SCIENTIFIC_SCHEMAS = {
    "tiny minimum": {"type": "number", "minimum": 2.5e-05},
    "non-negative": {"type": "number", "minimum": 0},
    "huge exclusive maximum": {"type": "number", "exclusiveMaximum": 1e16, "minimum": -1.5e20},
    "one decade": {"type": "number", "minimum": 1.5e-07, "exclusiveMaximum": 8e-07},
    "negative range": {"type": "number", "minimum": -3e-06, "maximum": -2e-09},
    "exclusive zero (draft 4)": {"$schema": "http://json-schema.org/draft-04/schema#", "type": "number",
                                 "minimum": 0, "exclusiveMinimum": True, "maximum": 1e17},
}


@pytest.mark.parametrize("name", sorted(SCIENTIFIC_SCHEMAS))
def test_bounded_numbers_written_with_an_exponent_are_exact(name):
    """``json.dumps`` writes 1e-05 and 2.5e+16: under bounds those texts are accepted
    exactly when jsonschema accepts the value, on both sides of every bound."""
    schema = SCIENTIFIC_SCHEMAS[name]
    values = [sign * mantissa * 10.0 ** power for sign in (1, -1)
              for mantissa in (1, 1.5, 2.4999, 2.5, 2.5001, 3, 7.9999, 8, 9.75)
              for power in (*range(-10, -4), *range(15, 22))]
    values += [float(b) for key, b in schema.items() if key.endswith(("imum",)) and not isinstance(b, bool)]
    assert any("e" in text_of(v) for v in values)
    assert_agrees(schema, values)


# -- whitespace ------------------------------------------------------------------------------------------------------

WS_SCHEMA = {"type": "object", "properties": {"a": {"type": "array", "items": {"type": "integer"}},
                                              "b": {"type": "object", "properties": {"c": {"type": "string"}}}}}
WS_VALUE = {"a": [1, 2, 3], "b": {"c": "x y"}}


def test_flexible_whitespace_accepts_dumps_and_indent():
    dfa = dfa_for(WS_SCHEMA)
    for text in (json.dumps(WS_VALUE), json.dumps(WS_VALUE, indent=2), json.dumps(WS_VALUE, indent="\t"),
                 json.dumps(WS_VALUE, separators=(",", ":")), " \n" + json.dumps(WS_VALUE) + "\n"):
        assert dfa.matches(text.encode()), text
    assert not dfa.matches(json.dumps(WS_VALUE).replace('"a"', '"a" ').replace(":", "").encode())


def test_flexible_whitespace_runs_are_bounded():
    dfa = dfa_for(WS_SCHEMA, max_whitespace=4)
    assert dfa.matches(b'{"a":    [1]}') and not dfa.matches(b'{"a":     [1]}')
    assert dfa.matches(b'{"a": [1,\n   2]}') and not dfa.matches(b'{"a": [1,\n\n\n\n\n2]}')
    assert dfa.matches(b'{"b": {"c": "      "}}')  # spaces inside strings are content, not whitespace
    default = dfa_for(WS_SCHEMA)
    assert default.matches(b"{" + b" " * 12 + b"}") and not default.matches(b"{" + b" " * 13 + b"}")


def test_canonical_and_compact_whitespace():
    canonical = dfa_for(WS_SCHEMA, whitespace="canonical")
    compact = dfa_for(WS_SCHEMA, whitespace="compact")
    dumps, tight = json.dumps(WS_VALUE), json.dumps(WS_VALUE, separators=(",", ":"))
    assert canonical.matches(dumps.encode()) and not canonical.matches(tight.encode())
    assert not canonical.matches(json.dumps(WS_VALUE, indent=2).encode())
    assert compact.matches(tight.encode()) and not compact.matches(dumps.encode())
    assert not compact.matches((tight + " ").encode())


# -- through the Matcher with a real tokenizer -----------------------------------------------------------------------

@pytest.fixture(scope="module")
def llama3(load_tokenizer, infos):
    return load_tokenizer("llama-3"), Compiler(infos("llama-3"), cache_dir=False)


MATCHER_CASES = [
    (OBJECT_SCHEMAS["dependentSchemas"], [{"a": 1, "b": 5}, {"a": 1, "b": 4}, {"b": 1}, {"a": 1}]),
    (COMBINATOR_SCHEMAS["oneOf overlapping"], [3, 6, 12, 5, 13, 0]),
    (STRING_SCHEMAS["min+max"], ["é", "😀😀", "\n\t", "abc", ""]),
    (REF_SCHEMAS["recursive tree"], [{"v": 1, "kids": [{"v": 2}]}, {"v": 1, "kids": [{"w": 2}]}]),
    ({"type": "string", "format": "date"}, ["2024-02-29", "2023-02-29"]),
]


@pytest.mark.parametrize("case", range(len(MATCHER_CASES)))
def test_matcher_with_llama3_and_eos(llama3, case):
    tokenizer, compiler = llama3
    schema, values = MATCHER_CASES[case]
    compiled = compiler.compile_json_schema(schema)
    eos = compiler.tokenizer_info.eos_token_ids[0]
    for value in values:
        for text in (text_of(value), json.dumps(value, ensure_ascii=False, indent=2)):
            matcher = Matcher(compiled)
            ids = tokenizer.encode(text, add_special_tokens=False)
            accepted = all(matcher.accept_token(t) for t in ids) and matcher.accept_token(eos)
            assert accepted == is_valid(schema, value), text
            if accepted:
                assert matcher.is_terminated()


# -- masks against an enumerating oracle -----------------------------------------------------------------------------

class FiniteLanguageOracle:
    """Allowed tokens of a finite language given as the set of its texts.

    The texts come from values ``jsonschema`` validates, serialised the documented
    way; a token is allowed iff prefix+token is a prefix of one of them, and EOS iff
    the prefix is one of them.
    """

    def __init__(self, texts, token_bytes, eos_token_ids):
        self.texts = {t.encode() for t in texts}
        self.prefixes = {t[:i] for t in self.texts for i in range(len(t) + 1)}
        self.token_bytes = token_bytes
        self.eos_token_ids = list(eos_token_ids)

    def allowed_ids(self, prefix: bytes, special_ids=()) -> set[int]:
        special = set(special_ids) | set(self.eos_token_ids)
        allowed = {tid for tid, data in enumerate(self.token_bytes)
                   if data and tid not in special and prefix + data in self.prefixes}
        if prefix in self.texts:
            allowed.update(self.eos_token_ids)
        return allowed


@functools.lru_cache(maxsize=None)
def _universe():
    """A finite set of candidate values that covers every value the mask schemas allow
    (integral floats left out: integers are written canonically, documented)."""
    scalars = [None, True, False, *range(-6, 33), "a", "b", "é", "ab", "x\n", ""]
    arrays = [list(c) for n in range(3) for c in itertools.product(scalars, repeat=n)]
    arrays += [list(c) for c in itertools.product(["a", "b", None, True, 1], repeat=3)]  # maxItems is 2
    member_values = [None, True, False, *range(-1, 13), "a", "b", "é", "x\n"]
    objects = []
    for n in range(4):
        for keys in itertools.combinations(["k", "n", "t"], n):
            objects += [dict(zip(keys, vals)) for vals in itertools.product(member_values, repeat=n)]
    objects += [{"k": "a", "z": 1}, {"z": None}]
    return tuple(scalars + arrays + objects)


MASK_SCHEMAS = {
    "object": {"type": "object", "properties": {"k": {"enum": ["a", "é", "x\n"]}, "n": {"type": "integer",
               "minimum": 1, "maximum": 11}, "t": {"type": "boolean"}}, "required": ["k"], "additionalProperties": False},
    "oneOf": {"oneOf": [{"type": "integer", "minimum": 0, "maximum": 12}, {"type": "integer", "multipleOf": 2},
                        {"enum": ["a", "ab", None]}], "minimum": -4, "maximum": 30},
    "array": {"type": "array", "items": {"enum": ["a", "b", None, True]}, "maxItems": 2, "contains": {"const": "b"}},
    "unique array": {"type": "array", "items": {"enum": ["a", "b", None, True]}, "uniqueItems": True, "maxItems": 3},
}


@functools.lru_cache(maxsize=None)
def _language_values(name: str) -> list:
    return [v for v in _universe() if is_valid(MASK_SCHEMAS[name], v)]


def _language_texts(name: str, whitespace: str) -> frozenset[str]:
    separators = (",", ":") if whitespace == "compact" else (", ", ": ")
    return frozenset(json.dumps(v, ensure_ascii=False, separators=separators) for v in _language_values(name))


@pytest.mark.parametrize("whitespace", ["compact", "canonical"])
@pytest.mark.parametrize("tokenizer_name", ["llama-3", "llama-2"])
@pytest.mark.parametrize("name", sorted(MASK_SCHEMAS))
def test_masks_match_enumerating_oracle(infos, name, tokenizer_name, whitespace):
    info = infos(tokenizer_name)
    schema = MASK_SCHEMAS[name]
    texts = _language_texts(name, whitespace)
    assert len(texts) > 3
    compiled = Compiler(info, cache_dir=False).compile_json_schema(schema, whitespace=whitespace)
    oracle = FiniteLanguageOracle(texts, info.token_bytes, info.eos_token_ids)
    import numpy as np

    rng = random.Random(hash((name, tokenizer_name, whitespace)) & 0xFFFF)
    for walk in range(2):
        target = rng.choice(sorted(texts)).encode()
        matcher = Matcher(compiled)
        bitmask = np.zeros((1, (info.vocab_size + 31) // 32), dtype=np.int32)
        prefix = b""
        while True:
            matcher.fill_next_token_bitmask(bitmask)
            got = set(bitmask_to_ids(bitmask[0]).tolist())
            want = oracle.allowed_ids(prefix, info.special_token_ids)
            assert got == want, (prefix, sorted(got - want)[:5], sorted(want - got)[:5])
            if prefix == target:
                break
            # follow the target with a random allowed token that stays on it
            steps = [t for t in got if t < info.num_tokens and target.startswith(prefix + info.token_bytes[t])
                     and info.token_bytes[t]]
            token = rng.choice(steps)
            assert matcher.accept_token(token)
            prefix += info.token_bytes[token]


# -- errors ----------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("schema, pointer, words", [
    ({"type": "strnig"}, "#/type", "strnig"),
    ({"properties": {"a": {"type": ["integer", "bogus"]}}}, "#/properties/a/type", "bogus"),
    ({"properties": {"a": 3}}, "#/properties/a", ""),
    ({"$ref": "#/$defs/missing"}, "#/$ref", "missing"),
    ({"properties": {"a": {"$ref": "other.json#/x"}}}, "#/properties/a", "other.json"),
    ({"$defs": {"a": {"$ref": "#/$defs/b"}, "b": {"$ref": "#/$defs/a"}}, "$ref": "#/$defs/a"}, "#/$defs/", "refers back"),
    ({"type": "array", "uniqueItems": True}, "#/uniqueItems", "uniqueItems"),
    ({"type": "array", "items": {"enum": list(range(9))}, "uniqueItems": True}, "#/uniqueItems", "at most 8 values"),
    ({"type": "array", "contains": {"const": 1}, "items": {"enum": [1, 2]}, "uniqueItems": True}, "#/uniqueItems",
     "no contains"),
    ({"type": "array", "items": {"enum": [[1], {"a": 2}]}, "uniqueItems": True}, "#/uniqueItems", "few spellings"),
    ({"type": "array", "allOf": [{"contains": {"const": 1}}, {"contains": {"const": 2}}]}, "#/allOf/1/contains",
     "only one contains per array"),
    ({"type": "string", "pattern": "a(b"}, "#/pattern", "a(b"),
    # A pattern with a long maxLength is a counted callee, but its copies before the loop are eager.
    ({"properties": {"d": {"type": "string", "pattern": "^[a-z ]*$", "minLength": 90000, "maxLength": 100000}}},
     "#/properties/d", "pattern '^[a-z ]*$' with minLength 90000 and maxLength 100000 cannot be built"),
    # Alone, a long string is a counted callee; an operand of a product counts eagerly.
    ({"properties": {"d": {"not": {"type": "string", "maxLength": 100000}}}}, "#/properties/d",
     "counting 100,000 characters"),
    ({"properties": {"d": {"$ref": "#/$defs/long"}}, "$defs": {"long": {"type": "string", "minLength": 90000}}},
     "#/$defs/long", "minLength 90000 cannot be built"),
])
def test_schema_errors_name_keyword_and_pointer(schema, pointer, words):
    with pytest.raises(SchemaError) as info:
        schema_to_dfa(schema)
    err = info.value
    if pointer:
        assert ("#" + err.pointer.lstrip("#")).startswith(pointer), (err.pointer, str(err))
    assert words in str(err)
    assert isinstance(err, ValueError)


def test_too_large_automata_name_the_sub_schema_and_what_grew(monkeypatch):
    """With the state limit lowered: the innermost sub-schema is named, not '#', and why it grew."""
    import constrain.automata.byte_dfa as byte_dfa
    import constrain.automata.dfa_ops as dfa_ops
    import constrain.grammar.json_schema.strings as strings

    for module in (byte_dfa, dfa_ops, strings):
        monkeypatch.setattr(module, "MAX_DFA_STATES", 3000)
    product = {"properties": {"t": {"type": "string", "pattern": "^(?:\\S+\\s+){0,9}\\S+$", "maxLength": 100}}}
    combined = {"properties": {"a": {"oneOf": [{"type": "array", "maxItems": 0}, {"type": "array", "maxItems": 5,
                                                                  "items": {"type": "string", "maxLength": 100}}]}}}
    # (A length alone would be a counted callee: inlined where it fits, else called.)
    whole = {"properties": {k: {"type": "string", "pattern": "^[^x]*$", "maxLength": 100} for k in "abc"}}
    for schema, pointer, words in [(product, "/properties/t", "with maxLength 100 cannot be built: a combined automaton would have "
                                                     "more than 3,000 states"),
                                   (combined, "/properties/a", "/properties/a/oneOf/1/items (1,401 states)"),
                                   (whole, "#", "largest parts: /properties/")]:
        with pytest.raises(SchemaError) as info:
            schema_to_dfa(schema)
        assert info.value.pointer == pointer and words in str(info.value), str(info.value)


def test_unevaluated_properties_see_the_schema_and_its_expanded_branches():
    schema = {"properties": {"a": {"type": "integer"}}, "unevaluatedProperties": False,
              "anyOf": [{"properties": {"b": {"type": "string"}}, "required": ["b"]}, {"required": ["a"]}]}
    values = [{"a": 1}, {"b": "x"}, {"a": 1, "b": "x"}, {"c": 1}, {"a": 1, "c": 2}, {"b": "x", "c": 1}, {}]
    assert_agrees(schema, values)


def test_unevaluated_properties_see_every_any_of_branch_a_value_meets():
    # {"foo", "bar", "baz"} meets the first two branches, so both evaluate; branch by branch
    # it was refused (the test suite's "unevaluatedProperties with anyOf").
    branches = [{"properties": {name: {"const": name}}, "required": [name]} for name in ("bar", "baz", "quux")]
    schema = {"properties": {"foo": {"type": "string"}}, "anyOf": branches, "unevaluatedProperties": False}
    keys = ["foo", "bar", "baz", "quux", "zz"]
    values = [{key: key for key in combo} | changed for n in range(len(keys) + 1)
              for combo in itertools.combinations(keys, n) for changed in ({}, {"baz": "not-baz"})]
    assert_agrees(schema, values, min_valid=10, min_invalid=10)


def test_unevaluated_items_see_every_any_of_branch_a_value_meets():
    schema = {"anyOf": [{"prefixItems": [True, {"type": "string"}]}, {"prefixItems": [{"const": 1}]},
                        {"contains": {"const": 0}, "items": {"type": "integer"}}],
              "unevaluatedItems": False}
    values = [[], [1], [1, "a"], ["x", "a"], [2, "a"], [1, "a", 3], [0, 1], [1, 0, 2], ["a"], [1, 2, 3],
              ["x", "a", 5], [1, "a", "b"], [1, "a", 0], ["a", 2], [1, 2, 0], [{}, "a", None]]
    assert_agrees(schema, values, min_valid=3, min_invalid=3)


CLOSED_BELOW_THE_ROOT = {
    # a definition closing itself over its base, reached through $ref
    "closed definition": {"$defs": {"base": {"properties": {"a": {"type": "integer"}}, "patternProperties": {"^x": {}}},
                                    "closed": {"allOf": [{"$ref": "#/$defs/base"}], "properties": {"b": {}},
                                               "unevaluatedProperties": False}},
                          "properties": {"v": {"$ref": "#/$defs/closed"}, "c": {}}},
    # it does not see its cousins' members ...
    "cousins": {"allOf": [{"properties": {"a": True}}, {"unevaluatedProperties": {"type": "integer"}}]},
    # ... and what it lets through counts as evaluated for the root's
    "nested true": {"properties": {"a": {"type": "string"}}, "allOf": [{"unevaluatedProperties": True}],
                    "unevaluatedProperties": False},
    # two schemas for one member: each sees its own subtree
    "one member twice": {"properties": {"a": {"properties": {"b": {}}, "unevaluatedProperties": False}},
                         "anyOf": [{"properties": {"a": {"properties": {"c": {}}}}}]},
    # items: past the subschema's own prefix
    "items": {"allOf": [{"prefixItems": [{"type": "integer"}], "unevaluatedItems": {"type": "string"}}],
              "prefixItems": [True, {"type": "boolean"}]},
}


@pytest.mark.parametrize("name", sorted(CLOSED_BELOW_THE_ROOT))
def test_unevaluated_keywords_below_the_root_see_their_own_subtree(name):
    schema = CLOSED_BELOW_THE_ROOT[name]
    keys = ["a", "b", "c", "v", "x1", "zz"]
    members = object_candidates(keys, [1, "s", True, {"a": 1}, {"b": 2}, {"c": 3}, {"b": None, "x2": 0}, {"d": 1}])
    arrays = [[], [1], [1, True], [1, "s"], [1, True, "s"], [1, True, 2], ["s"], [1, "s", "t"], [True]]
    assert_agrees(schema, members + arrays, min_valid=3, min_invalid=3)


def _evaluating_schema(rng: random.Random, depth: int) -> dict:
    """A random object schema mixing the keywords that evaluate members with
    unevaluatedProperties at any level (the root, branches, conditions, definitions)."""
    node: dict = {}
    if rng.random() < 0.5:
        node["properties"] = {k: rng.choice([True, {"type": "integer"}, {"type": "string"}, {"const": 1}])
                              for k in rng.sample("abcd", rng.randint(1, 2))}
    if rng.random() < 0.2:
        node["patternProperties"] = {"^x": rng.choice([True, {"type": "integer"}])}
    if rng.random() < 0.15:
        node["additionalProperties"] = rng.choice([False, True, {"type": "integer"}])
    if rng.random() < 0.3:
        node["required"] = rng.sample("abcd", 1)
    if depth > 0:
        for word in ("allOf", "anyOf", "oneOf"):
            if rng.random() < 0.3:
                node[word] = [_evaluating_schema(rng, depth - 1) for _ in range(rng.randint(1, 3))]
        if rng.random() < 0.15:
            node["if"], node["then"] = _evaluating_schema(rng, depth - 1), _evaluating_schema(rng, depth - 1)
        if rng.random() < 0.2:
            node["$ref"] = f"#/$defs/d{rng.randint(0, 1)}"
    if rng.random() < 0.4:
        node["unevaluatedProperties"] = rng.choice([False, True, {"type": "integer"}, {"type": "string"}])
    return node


def test_unevaluated_properties_agree_with_jsonschema_on_random_schemas():
    """Where such a schema compiles (one whose evaluation varies below the root is
    refused), its language is exact: an instance is accepted in some key order iff it is
    valid (inside products one order is kept, so every order is tried)."""
    rng = random.Random(37)
    checked = 0
    for _ in range(60):
        schema = _evaluating_schema(rng, 2) | {"$defs": {"d0": _evaluating_schema(rng, 0), "d1": _evaluating_schema(rng, 0)}}
        try:
            automaton = schema_to_dfa(schema, JsonSchemaOptions(property_order="any")).automaton
        except SchemaError:
            continue
        validator = jsonschema.Draft202012Validator(schema)
        for _ in range(30):
            instance = {k: rng.choice([1, "s", 2.5, None]) for k in rng.sample(["a", "b", "c", "d", "x1", "z"], rng.randint(0, 4))}
            orders = [json.dumps(dict(order)).encode() for order in itertools.permutations(instance.items())]
            assert any(map(automaton.matches, orders)) == validator.is_valid(instance), (schema, instance)
            checked += 1
    assert checked >= 900


@pytest.mark.parametrize("schema", [
    {"prefixItems": [True], "contains": {"type": "string"}, "unevaluatedItems": False},
    {"contains": {"type": "string"}, "minContains": 0, "unevaluatedItems": {"type": "integer"}},
    {"allOf": [{"contains": {"const": 1}, "unevaluatedItems": {"type": "string"}}], "prefixItems": [True, True]},
])
def test_unevaluated_items_beside_contains_take_what_contains_misses(schema):
    # contains evaluates the items it matches; the others past the prefix meet unevaluatedItems
    values = [list(items) for n in range(5) for items in itertools.product([1, "s", None], repeat=n)]
    assert_agrees(schema, values, min_valid=5, min_invalid=5)


_TREE = {"$id": "https://example.com/tree", "$dynamicAnchor": "node", "type": "object",
         "properties": {"data": True, "children": {"type": "array", "items": {"$dynamicRef": "#node"}}}}
DYNAMIC_REFERENCES = {
    # the extension pattern: the root's anchor is the outermost of every path's scope
    "strict tree": {"$id": "https://example.com/strict-tree", "$dynamicAnchor": "node", "$ref": "tree",
                    "unevaluatedProperties": False, "$defs": {"tree": _TREE}},
    # no extension: the only resource with the anchor
    "plain tree": _TREE,
    # the target has no dynamic anchor of the fragment's name: a $ref
    "as $ref": {"$defs": {"a": {"$anchor": "n", "type": "integer"}, "b": {"$dynamicAnchor": "n", "type": "string"}},
                "properties": {"data": {"$dynamicRef": "#/$defs/a"}, "children": {"$dynamicRef": "#n"}}},
    # 2019-09: $recursiveRef with $recursiveAnchor at the root
    "recursive": {"$schema": "https://json-schema.org/draft/2019-09/schema", "$id": "https://example.com/r",
                  "$recursiveAnchor": True, "$ref": "base", "properties": {"data": {"type": "integer"}},
                  "$defs": {"base": {"$id": "base", "$recursiveAnchor": True, "type": "object",
                                     "properties": {"children": {"type": "array", "items": {"$recursiveRef": "#"}}}}}},
}


@pytest.mark.parametrize("name", sorted(DYNAMIC_REFERENCES))
def test_dynamic_references_the_value_path_cannot_change(name):
    schema = DYNAMIC_REFERENCES[name]
    leaves = [{}, {"data": 1}, {"data": "s"}, {"extra": 1}, {"children": []}, {"children": [1]}, {"children": "x"}, 3]
    values = leaves + [{"children": [leaf]} for leaf in leaves] + [{"children": [{"children": [leaf]}]} for leaf in leaves]
    assert_agrees(schema, values, min_valid=3, min_invalid=3)


_LENGTHS = {"$ref": "first#/$defs/go", "$defs": {
    "first": {"$id": "first", "$defs": {"go": {"$ref": "second#/$defs/go"}}},
    "second": {"$id": "second", "$defs": {"go": {"$ref": "third#/$defs/go"},
                                          "size": {"$dynamicAnchor": "size", "type": "string", "maxLength": 2}}},
    "third": {"$id": "third", "$defs": {"go": {"$dynamicRef": "#size"},
                                        "size": {"$dynamicAnchor": "size", "type": "string", "maxLength": 4}}}}}
_SCOPES = {"properties": {
    "left": {"$id": "left", "$defs": {"t": {"$dynamicAnchor": "t", "type": "integer"}}},
    "right": {"$id": "right", "$ref": "start", "$defs": {"t": {"$dynamicAnchor": "t", "type": "string"}}}},
    "$defs": {"start": {"$id": "start", "$dynamicRef": "inner#t"},
              "inner": {"$id": "inner", "$dynamicAnchor": "t", "type": "boolean"}}}


@pytest.mark.parametrize("schema, values", [
    # every chain of resources from the root to the reference meets `second` first
    (_LENGTHS, ["", "ab", "abc", "abcd", "abcde", 1]),
    # `right` is on the only chain to `start`; `left`, a sibling scope, is not
    (_SCOPES, [{"right": "s"}, {"right": 1}, {"right": True}, {"left": 1}, {"left": "s"}, {"left": None}]),
])
def test_dynamic_references_every_chain_of_resources_settles(schema, values):
    """Where more than one resource holds the anchor, the target is still unique when the
    first of them on every chain of resources evaluation can enter is the same one
    (definitions are entered only by reference)."""
    assert_agrees(schema, values, min_valid=2, min_invalid=2)


def test_dynamic_scope_holds_the_resource_an_embedded_one_is_entered_from():
    """The dynamic scope is every resource navigated (2020-12, section 7.1), so descending
    from ``outer`` into the resource embedded in it keeps ``outer`` in scope, and its anchor
    is the outermost.  Verdicts by hand: ``jsonschema`` (``referencing`` 0.37) forgets the
    outer resource on such a descent and would take ``inner``'s anchor."""
    inner = {"$id": "inner", "properties": {"v": {"$dynamicRef": "#t"}},
             "$defs": {"t": {"$dynamicAnchor": "t", "type": "null"}}}
    schema = {"$id": "https://example.com/root", "properties": {"o": {"$ref": "outer"}},
              "$defs": {"outer": {"$id": "outer", "properties": {"e": inner},
                                  "$defs": {"t": {"$dynamicAnchor": "t", "type": "boolean"}}}}}
    dfa = dfa_for(schema)
    assert dfa.matches(b'{"o": {"e": {"v": true}}}') and not dfa.matches(b'{"o": {"e": {"v": null}}}')


def test_dynamic_references_whose_target_depends_on_the_path_are_refused():
    anchor = {"$dynamicAnchor": "t", "type": "integer"}
    schema = {"$defs": {"one": {"$id": "one", "$defs": {"t": anchor}, "$ref": "list"},
                        "two": {"$id": "two", "$defs": {"t": {"$dynamicAnchor": "t", "type": "string"}}, "$ref": "list"},
                        "list": {"$id": "list", "$defs": {"t": {"$dynamicAnchor": "t"}},
                                 "items": {"$dynamicRef": "#t"}}},
              "properties": {"a": {"$ref": "one"}, "b": {"$ref": "two"}}}
    with pytest.raises(SchemaError) as info:
        schema_to_dfa(schema)
    assert info.value.pointer.endswith("/items/$dynamicRef") and "the value's path enters first" in str(info.value)


def test_operand_products_past_the_cap_are_refused_or_relaxed(monkeypatch):
    """A subschema whose unevaluated* sees what varies is a product of its own; nested
    combinators build it again in every operand, so their number is capped."""
    import constrain.grammar.json_schema.combinators as combinators
    monkeypatch.setattr(combinators, "MAX_OPERAND_PRODUCTS", 0)
    schema = {"properties": {"o": {"allOf": [{"anyOf": [{"properties": {"x": {}}}, {"required": ["y"]}],
                                               "unevaluatedProperties": False}]}}}
    with pytest.raises(SchemaError) as info:
        schema_to_dfa(schema)
    assert info.value.pointer == "/properties/o/allOf/0/unevaluatedProperties" and "products" in str(info.value)
    relaxed = schema_to_dfa(schema, JsonSchemaOptions(strict=False))
    assert any("unevaluatedProperties not enforced" in note for note in relaxed.notes)
    assert relaxed.automaton.matches(b'{"o": {"x": 1, "z": 2}}')  # over-approximated: z is let through


@pytest.mark.parametrize("seed", range(20))
def test_growing_sets_are_the_sets_no_smaller_set_covers(seed):
    rng = random.Random(seed)
    marks = [frozenset(rng.sample(range(6), rng.randint(0, 3))) for _ in range(rng.randint(1, 6))]
    found = set(_growing_sets(marks, 10_000))
    for size in range(2, len(marks) + 1):
        for indices in itertools.combinations(range(len(marks)), size):
            union = frozenset().union(*(marks[i] for i in indices))
            smaller_covers = any(frozenset().union(*(marks[k] for k in indices if k != i)) == union for i in indices)
            assert (indices in found) == (not smaller_covers), (marks, indices)


def test_unevaluated_properties_beside_too_many_evaluating_branches():
    branches = [{"properties": {f"p{i}": {"type": "integer"}}} for i in range(8)]
    schema = {"anyOf": branches, "unevaluatedProperties": False}
    with pytest.raises(SchemaError) as info:
        schema_to_dfa(schema)
    assert info.value.pointer == "/unevaluatedProperties" and "sets of branches" in str(info.value)
    relaxed = schema_to_dfa(schema, JsonSchemaOptions(strict=False))
    assert any("unevaluatedProperties not enforced" in note for note in relaxed.notes)
    for value in ({"p0": 1, "p5": 2, "p7": 3}, {"p1": 1}, {}):  # an over-approximation: every valid value
        assert relaxed.automaton.matches(text_of(value).encode())


@pytest.mark.parametrize("bad", [3, "[1, 2]", "{not json", None])
def test_malformed_schema_documents(bad):
    with pytest.raises(SchemaError):
        schema_to_dfa(bad)


KEYED = {"n": {"type": "object", "properties": {"k": {"$ref": "#/$defs/n"}}, "additionalProperties": False}}


def _keyed(depth: int, leaf):
    """``{"k": {"k": ... leaf}}``, ``depth`` objects deep."""
    for _ in range(depth):
        leaf = {"k": leaf}
    return leaf


def _deep_values():
    """Values along one path up to 8 levels deep, through objects and arrays, with leaves of every kind."""
    leaves = [{}, 1, "x", None, [], [1], {"a": 1}]
    out = []
    for depth in range(8):
        for leaf in leaves:
            out += [_keyed(depth, leaf), {"a": _keyed(depth, leaf)}, {"x": _keyed(depth, leaf)}]
            nested = leaf
            for _ in range(depth):
                nested = [nested]
            out += [nested, {"a": nested}]
    return out


@pytest.mark.parametrize("schema", [
    # Recursion unrolled to max_recursion inside what a product takes away (not, oneOf, if).
    {"$defs": KEYED, "properties": {"x": {"not": {"$ref": "#/$defs/n"}}}},
    {"$defs": KEYED, "oneOf": [{"$ref": "#/$defs/n"}, {"type": "object"}]},
    {"$defs": KEYED, "if": {"$ref": "#/$defs/n"}, "then": {"required": ["k"]}},
    # Free-form values expanded to the operand depth inside what a product takes away.
    {"oneOf": [{"type": "object"}, {"type": "object", "properties": {"a": {"type": "array"}}}]},
    {"oneOf": [{}, {"type": "object", "properties": {"a": {"type": "array"}}}, {"type": "array"}]},
    {"type": "object", "not": {"properties": {"a": {"type": "array", "items": {"type": "array"}}}}},
    # Twice taken away is kept: the polarity flips back.
    {"not": {"not": {"type": "object", "properties": {"k": {"type": "object"}}}}},
    {"not": {"oneOf": [{"$ref": "#/$defs/n"}, {"type": "object", "required": ["k"]}]}, "$defs": KEYED},
    # A oneOf branch that is only a recursion cut: empty where kept, a mark where taken away.
    {"$defs": {"t": {"type": "array", "items": {"oneOf": [{"$ref": "#/$defs/t"}, {"type": "integer"}]}}},
     "not": {"$ref": "#/$defs/t"}},
    {"$defs": {"t": {"type": "array", "items": {"oneOf": [{"$ref": "#/$defs/t"}, {"type": "integer"}]}}},
     "if": {"$ref": "#/$defs/t"}, "then": False},
    # contains counts the items that meet it: those cut must be neither counted nor missed wrongly.
    {"type": "array", "contains": {"type": "array", "items": {"type": "array"}}, "maxContains": 1},
    {"type": "array", "contains": {"$ref": "#/$defs/n"}, "minContains": 1, "$defs": KEYED},
    {"not": {"type": "array", "contains": {"type": "array", "items": {"type": "array"}}, "maxContains": 1}},
])
def test_cuts_in_a_language_taken_away_over_approximate(schema):
    """A depth cut (recursion unrolled to max_recursion, free-form values expanded to the
    operand depth) refuses the deeper values where the language is kept and takes any bytes
    where it is taken away, so at any depth no invalid value gets through; shallow values
    are exact.  Until the eighteenth session a cut in a language taken away took away too
    little: the oneOf over objects accepted ``{"a": [[[[1]]]]}``, which meets both branches,
    and recursion cuts there were refused."""
    language = schema_to_dfa(schema)
    assert not language.notes
    values = _deep_values()
    wrong = [(text_of(v), is_valid(schema, v)) for v in values
             if language.automaton.matches(text_of(v).encode()) and not is_valid(schema, v)]
    assert not wrong, wrong[:5]
    shallow = [v for v in values if value_depth(v) <= 2]
    assert_agrees(schema, shallow)


def test_a_language_emptied_by_depth_cuts_says_so():
    """Inside a product, a schema whose values all nest past the unrolled depth compiles to
    nothing (sound) with a note that names the cut, not "unsatisfiable"; raised, it compiles."""
    schema = {"$defs": {"n": {"type": "object", "required": ["k"],
                              "properties": {"k": {"anyOf": [{"type": "null"}, {"$ref": "#/$defs/n"}]}}}},
              "not": {"type": "string"}, "allOf": [{"$ref": "#/$defs/n"}], "properties": {"k": {"type": "object"}}}
    cut = schema_to_dfa(schema, JsonSchemaOptions(max_recursion=1))
    assert cut.notes[-1] == UNSATISFIABLE_WITHIN_CUTS and not cut.automaton.is_prefix(b"{")
    # k's anyOf meets {"type": "object"} beside it: its reference is merged, and unrolled, which is said too
    assert cut.notes[:-1] == ["#/$defs/n: recursion merged with sibling keywords is unrolled 1 level deep; "
                              "deeper values are refused"]
    assert schema_to_dfa(schema).automaton.matches(b'{"k": {"k": null}}')
    assert schema_to_dfa({"type": "string", "not": {"type": "string"}}).notes == [UNSATISFIABLE]


@pytest.mark.parametrize("schema", [{"type": "string", "pattern": "$a"}, {"type": "string", "pattern": "$a", "maxLength": 2},
                                    {"type": "string", "pattern": "$a", "minLength": 1, "maxLength": 300}])
def test_patterns_no_string_matches_are_no_string(schema):
    """A pattern no string matches leaves no string: at the root the schema is unsatisfiable
    (noted, as other empty schemas are), below it the member or branch is simply absent.
    With a length bound this refused the whole schema before ("... matches no string at all")."""
    assert schema_to_dfa(schema).notes == [UNSATISFIABLE]
    optional = schema_to_dfa({"properties": {"a": schema}}).automaton
    assert optional.matches(b'{}') and optional.matches(b'"a"') and not optional.is_prefix(b'{"a"')
    assert schema_to_dfa({"anyOf": [schema, {"type": "null"}]}).automaton.matches(b"null")


def test_patterns_no_string_matches_in_enums_and_member_names():
    """Such a pattern keeps no enum string and names no member (it was "cannot check enum
    value 'x': pattern '' cannot be compiled", and a patternProperties key refused)."""
    assert dfa_for({"enum": ["x", 1], "pattern": "$a"}).matches(b"1")
    assert not dfa_for({"enum": ["x", 1], "pattern": "$a"}).matches(b'"x"')
    closed = dfa_for({"patternProperties": {"$a": {"type": "integer"}, "b": {"type": "string"}},
                      "additionalProperties": False})
    assert closed.matches(b'{"b":"x"}') and not closed.is_prefix(b'{"a"') and not closed.is_prefix(b'{"c"')


def test_sibling_references_to_one_definition_are_no_recursion():
    """Four allOf branches that $ref one definition, or an allOf and an if that do, merge
    it once: counted as recursion they cut the value away (inside not, they took it away)."""
    defs = {"s": {"type": "string"}}
    four = {"$defs": defs, "allOf": [{"$ref": "#/$defs/s"}] * 4}
    assert dfa_for(four).matches(b'"a"') and not dfa_for(four).matches(b"1")
    negated = {"$defs": defs, "not": {"allOf": [{"$ref": "#/$defs/s"}] * 4}}
    assert dfa_for(negated).matches(b"1") and not dfa_for(negated).matches(b'"a"')
    conditional = {"$defs": defs, "allOf": [{"$ref": "#/$defs/s"}], "if": {"$ref": "#/$defs/s"}, "then": {"minLength": 2}}
    automaton = schema_to_dfa(conditional, JsonSchemaOptions(max_recursion=1)).automaton
    assert [automaton.matches(t) for t in (b'"a"', b'"ab"', b"1")] == [False, True, False]


def test_a_definition_merged_twice_into_one_value_counts_once_toward_max_recursion():
    """allOf of two schemas that both $ref one recursive definition merge it once: counted
    twice, the recursion was cut a level early (Handwritten notnames9's al7 and al9)."""
    schema = {"$defs": {"n": {"type": "object", "properties": {"k": {"$ref": "#/$defs/both"}}},
                        "a": {"$ref": "#/$defs/n"}, "b": {"$ref": "#/$defs/n"},
                        "both": {"allOf": [{"$ref": "#/$defs/a"}, {"$ref": "#/$defs/b"}]}},
              "not": {"type": "string"}, "allOf": [{"$ref": "#/$defs/both"}]}
    automaton = schema_to_dfa(schema).automaton
    assert automaton.matches(b'{"k": {"k": {}}}')  # three levels of "both": max_recursion
    assert not automaton.matches(b'{"k": 1}')


ORDERED_P = {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}, "k": {"$ref": "#/$defs/p"}}}
ORDERED_Q = {"type": "object", "properties": {"b": {"type": "integer"}, "a": {"type": ["integer", "string"]},
                                              "k": {"$ref": "#/$defs/q"}}}


@pytest.mark.parametrize("schema", [
    {"$defs": {"p": ORDERED_P, "q": ORDERED_Q}, "oneOf": [{"$ref": "#/$defs/p"}, {"$ref": "#/$defs/q"}]},
    {"$defs": {"q": ORDERED_Q}, "oneOf": [{}, {"not": {"$ref": "#/$defs/q"}}]},
    {"$defs": {"p": ORDERED_P, "q": ORDERED_Q}, "anyOf": [{"$ref": "#/$defs/p"}, {"$ref": "#/$defs/q"}],
     "not": {"$ref": "#/$defs/q"}},
])
def test_products_over_recursive_definitions_share_member_order_at_every_depth(schema):
    """Operands write one text per value down to where recursion is cut: the slots follow
    recursive references as far as the operands unroll them, and a product nested in an
    operand fixes no order deeper than the one around it.  Before the eighteenth session
    the first schema accepted ``{"k": {"k": {"a": 1, "b": 2}}}`` (both branches meet it:
    below the first recursion each wrote its own order) and the second
    ``{"k": {"k": 2, "a": "x"}}`` (the ``not`` fixed an order one level deeper than the
    ``oneOf``, so the other branch's text of the value was never taken away)."""
    automaton = schema_to_dfa(schema, JsonSchemaOptions(whitespace="compact")).automaton
    inners = [{"a": 1, "b": 2}, {"b": 2, "a": 1}, {"a": "x", "b": 2}, {"b": 2, "a": "x"}, {"a": 1}, {},
              {"k": 2, "a": "x"}, {"a": 1, "k": {"k": 2, "a": "x"}}]
    for depth, inner in itertools.product(range(5), inners):
        value = _keyed(depth, inner)
        text = json.dumps(value, separators=(",", ":"))
        assert not automaton.matches(text.encode()) or is_valid(schema, value), text


def test_random_products_with_cuts_accept_no_invalid_value():
    """Random nestings of not, oneOf, if and contains over recursion (two definitions
    listing the same members in opposite orders among them), free-form values, arrays
    of arrays, object constants, dependencies and signed zeros, against values up to 7
    levels deep: the languages may refuse deep valid values (a cut) but never accept an
    invalid one."""
    rng = random.Random(18)
    defs = {**KEYED, "t": {"anyOf": [{"type": "integer"}, {"type": "array", "items": {"$ref": "#/$defs/t"}}]},
            "p": {"type": "object", "properties": {"a": {"type": "integer"}, "b": {}, "k": {"$ref": "#/$defs/p"}}},
            "q": {"type": "object", "properties": {"b": {"type": "integer"}, "a": {"type": ["integer", "string"]},
                                                   "k": {"$ref": "#/$defs/q"}}}}
    leaves = [{}, {"type": "object"}, {"type": "array"}, {"type": "integer"}, {"$ref": "#/$defs/n"},
              {"$ref": "#/$defs/t"}, {"$ref": "#/$defs/p"}, {"$ref": "#/$defs/q"},
              {"type": "array", "items": {"type": "array"}}, {"const": 1}, {"type": "object", "required": ["k"]},
              {"const": {"a": 1, "b": 2}}, {"enum": [{"b": 1, "a": "x"}, 1]},  # object constants: every order
              {"type": "object", "dependentRequired": {"a": ["b"]}},  # a dependency's names: slotted
              {"allOf": [{"enum": [0, "x"]}, {"const": -0.0}]}]  # lists meet by JSON Schema equality

    def schema(depth):
        kind = rng.randrange(7) if depth else 6
        if kind == 0:
            return {"oneOf": [schema(depth - 1) for _ in range(rng.randint(2, 3))]}
        if kind == 1:
            return {"not": schema(depth - 1)}
        if kind == 2:
            return {"if": schema(depth - 1), "then": schema(depth - 1), "else": schema(depth - 1)}
        if kind == 3:
            return {"type": "object", "properties": {"k": schema(depth - 1), "a": schema(depth - 1)}}
        if kind == 4:
            return {"type": "array", "items": schema(depth - 1)}
        if kind == 5:
            return {"type": "array", "contains": schema(depth - 1), "maxContains": rng.randint(1, 2)}
        return rng.choice(leaves)

    def value(depth):
        kind = rng.randrange(4) if depth else 3
        if kind == 0:
            return {rng.choice("kabv"): value(depth - 1) for _ in range(rng.randint(0, 3))}
        if kind == 1:
            return [value(depth - 1) for _ in range(rng.randint(0, 2))]
        if kind == 2:
            return {"k": value(depth - 1)}
        return rng.choice([1, "x", None, {}, [], [[[]]], {"a": 1, "b": 2}, {"b": 2, "a": 1}, {"b": 1, "a": "x"}, 0, -0.0])

    checked = 0
    for _ in range(60):
        tree = schema(rng.randint(1, 3)) | {"$defs": defs}
        try:
            automaton = schema_to_dfa(tree, JsonSchemaOptions(whitespace="compact")).automaton
        except SchemaError:  # a second contains in one array: refused, never wrong
            continue
        for _ in range(40):
            instance = value(rng.randint(0, 7))
            text = json.dumps(instance, separators=(",", ":"))
            if automaton.matches(text.encode()):
                assert is_valid(tree, instance), (json.dumps(tree), text)
            checked += 1
    assert checked >= 2000


def test_non_strict_lists_unsupported_keywords_and_unknown_formats_are_notes():
    schema = {"type": "object", "properties": {"tags": {"type": "array", "items": {"type": "integer"},
                                                        "uniqueItems": True}},
              "allOf": [{"properties": {"tags": {"contains": {"const": 1}, "allOf": [{"contains": {"const": 2}}]}}}]}
    language = schema_to_dfa(schema, JsonSchemaOptions(strict=False))
    notes = " ".join(language.notes)
    assert "uniqueItems" in notes and "/properties/tags" in notes and "/contains: contains not enforced" in notes
    assert language.automaton.matches(b'{"tags": [1, 1]}')  # over-approximated, as the note says
    fmt = schema_to_dfa({"type": "string", "format": "made-up-format"})
    assert any("made-up-format" in n for n in fmt.notes)
    assert fmt.automaton.matches(b'"anything"')


def test_compiled_grammar_notes(llama3):
    _, compiler = llama3
    compiled = compiler.compile_json_schema({"type": "array", "uniqueItems": True}, strict=False)
    assert any("uniqueItems" in n for n in compiled.notes)
    with pytest.raises(SchemaError, match="uniqueItems"):
        compiler.compile_json_schema({"type": "array", "uniqueItems": True})


CONTRADICTORY_DIMENSIONS = {  # every branch of the oneOf forbids a name the object requires
    "type": "object", "required": ["length", "width", "radius"],
    "properties": {"length": {"type": "number"}, "width": {"type": "number"}, "radius": {"type": "number"}},
    "oneOf": [{"not": {"required": ["radius"]}, "required": ["length", "width"]},
              {"not": {"required": ["length", "width"]}, "required": ["radius"]}]}


@pytest.mark.parametrize("schema", [False, {"not": {}}, {"type": "object", "required": ["d"],
                                                          "properties": {"d": CONTRADICTORY_DIMENSIONS}}])
def test_unsatisfiable_schemas_compile_to_the_empty_language_with_a_note(schema):
    language = schema_to_dfa(schema)
    assert UNSATISFIABLE in language.notes
    assert not language.dfa.accepting.any() and (language.dfa.trans < 0).all()


def test_refs_into_other_documents_given_as_resources():
    resources = {"https://example.com/defs.json": {"$defs": {"port": {"type": "integer", "minimum": 1,
                                                                        "maximum": 65535}}}}
    schema = {"type": "object", "properties": {"port": {"$ref": "https://example.com/defs.json#/$defs/port"}},
              "required": ["port"]}
    dfa = schema_to_dfa(schema, resources=resources).automaton
    assert dfa.matches(b'{"port": 8080}') and not dfa.matches(b'{"port": 0}')
    with pytest.raises(SchemaError) as info:
        schema_to_dfa(schema)
    assert "defs.json" in str(info.value)


META_SCHEMA_VALUES = [
    {}, True, False, 3, "x", [], {"type": "integer"}, {"type": "intege"}, {"type": 1}, {"type": ["string", "null"]},
    {"type": ["string", "string"]}, {"minLength": 2}, {"minLength": -1}, {"minLength": 1.5}, {"required": ["a"]},
    {"required": ["a", "a"]}, {"properties": {"a": {"type": "string"}}}, {"properties": {"a": {"type": "strin"}}},
    {"properties": {"a": {"properties": {"b": {"maxItems": -2}}}}}, {"items": {"type": "nul"}}, {"anyOf": []},
    {"anyOf": [{"type": "null"}]}, {"not": {"minimum": "1"}}, {"enum": [1, "a"]}, {"pattern": "^a+$"}]
LATER_META_SCHEMA_VALUES = [{"$defs": {"a": {"type": "strin"}}}, {"$defs": {"a": {"maxLength": 1}}},
                            {"dependentRequired": {"a": ["b"]}}, {"dependentRequired": {"a": ["b", "b"]}},
                            {"unevaluatedProperties": {"type": 3}}, {"additionalProperties": {"$defs": {"x": 1}}}]


@pytest.mark.parametrize("uri, later", [
    ("http://json-schema.org/draft-06/schema#", False), ("http://json-schema.org/draft-07/schema#", False),
    ("https://json-schema.org/draft/2019-09/schema", True), ("https://json-schema.org/draft/2020-12/schema", True)])
def test_refs_to_published_meta_schemas(uri, later):
    """A schema may describe schemas: the published meta-schemas (and the 2019-09 and 2020-12
    vocabularies they name, with their recursive and dynamic references) resolve offline."""
    assert_agrees({"$ref": uri}, META_SCHEMA_VALUES + (LATER_META_SCHEMA_VALUES if later else []),
                  min_valid=8, min_invalid=8)


def test_meta_schemas_by_either_scheme_and_errors_inside_them():
    dfa = schema_to_dfa({"properties": {"s": {"$ref": "https://json-schema.org/draft-07/schema"}}}).automaton
    assert dfa.matches(b'{"s": {"type": "integer"}}') and not dfa.matches(b'{"s": {"type": 1}}')
    with pytest.raises(SchemaError) as info:  # draft 4's enum is an array of distinct values of any type
        schema_to_dfa({"$ref": "http://json-schema.org/draft-04/schema#"})
    assert info.value.pointer == "http://json-schema.org/draft-04/schema#/properties/enum/uniqueItems"
    with pytest.raises(SchemaError, match="is not part of this document"):
        schema_to_dfa({"$ref": "https://json-schema.org/draft/2020-12/meta/nothing"})


def test_a_pointer_missing_under_an_embedded_id_falls_back_to_the_root_with_a_note():
    """Draft-4 schemas often give each definition an ``id`` yet write refs from the
    document root; the pointer is tried there, and the compile says so."""
    schema = {"$schema": "http://json-schema.org/draft-04/schema#", "$ref": "#/definitions/source",
              "definitions": {"limit": {"type": "integer", "minimum": 1},
                              "source": {"id": "/source", "type": "object",
                                         "properties": {"limit": {"$ref": "#/definitions/limit"}}}}}
    language = schema_to_dfa(schema)
    assert language.automaton.matches(b'{"limit": 3}') and not language.automaton.matches(b'{"limit": 0}')
    assert language.notes == ["/definitions/source/properties/limit/$ref: '#/definitions/limit' is not found under "
                              "the $id at /definitions/source, the base in force there; resolved against the "
                              "document root instead"]
    missing = {**schema, "definitions": {"source": schema["definitions"]["source"]}}
    with pytest.raises(SchemaError) as info:
        schema_to_dfa(missing)
    assert info.value.pointer == "/definitions/source/properties/limit/$ref"
    assert str(info.value).endswith("unresolvable $ref '#/definitions/limit': nothing at 'definitions' under the $id "
                                    "at /definitions/source (the base in force), nor at 'limit' from the document root")


@pytest.mark.parametrize("base, ref, expected", [
    ("http://a/b/c/d;p?q", "../g", "http://a/b/g"), ("http://a/b/c/d;p?q", "g/./h", "http://a/b/c/g/h"),
    ("http://a/b/c/d;p?q", "?y", "http://a/b/c/d;p?y"), ("http://a/b/c/d;p?q", "//g", "http://g"),
    ("http://a/b/c/d;p?q", "../../../g", "http://a/g"), ("http://a/b/c/d;p?q", "#s", "http://a/b/c/d;p?q#s"),
    ("classpath:///x/y.json", "#/definitions/a", "classpath:///x/y.json#/definitions/a"),
    ("classpath:///x/y.json", "z.json", "classpath:///x/z.json"), ("urn:a:b", "#c", "urn:a:b#c"),
])
def test_uri_resolution_follows_rfc3986_for_any_scheme(base, ref, expected):
    assert resolve_uri(base, ref) == expected


def test_spec_copies_replace_only_the_fields_named():
    """``Spec.without`` copies the record's attributes instead of running ``__init__`` (as
    ``dataclasses.replace`` did): the fields named change in the copy alone, the others are
    shared, an unknown name is refused, and ``copy_spec``'s lists are the copy's own."""
    spec = Spec(types=frozenset({"object"}), any_of=["a"], min_properties=2)
    spec.require(["x"])
    changed = spec.without(any_of=[], min_properties=0)
    assert (changed.any_of, changed.min_properties, spec.any_of, spec.min_properties) == ([], 0, ["a"], 2)
    assert changed.types == spec.types and changed.required is spec.required
    assert changed == Spec(types=frozenset({"object"}), required={"x": None})
    with pytest.raises(TypeError, match="anyof"):
        spec.without(anyof=[])
    copied = copy_spec(spec)
    copied.require(["y"])
    copied.any_of.append("b")
    assert list(spec.required) == ["x"] and spec.any_of == ["a"] and copied == spec.without(
        required={"x": None, "y": None}, any_of=["a", "b"])


@pytest.mark.parametrize("text", ["", "name", "é ü 日本", 'quote " and \\ backslash', "\n\r\t\b\f", "\x00\x01\x1f\x7f",
                                  "\u2028\u2029", "\ud800 lone surrogate", "emoji \U0001F600"])
def test_encoded_string_is_json_dumps_spelling(text):
    """Keys and string literals are matched in ``json.dumps(..., ensure_ascii=False)``'s
    spelling; ``encoded_string`` calls the encoder behind it directly, and must agree with
    it on every kind of character the string grammar escapes or keeps."""
    import json

    from constrain.grammar.json_schema.strings import encoded_string

    assert encoded_string(text) == json.dumps(text, ensure_ascii=False)


def test_settled_conditionals_are_one_state_however_they_held():
    """A conditional group with no branch open is one state whether its condition and
    ``then`` held or its condition failed (and ``else`` held).  Schema dependencies
    (``dependentSchemas``, draft 7's ``dependencies``) are conditionals; twelve of them on one tag's value (JsonSchemaStore
    mongodb-atlas-search-index-definition has seventeen) made 2**12 copies of the member
    graph, 228,000 states, and the seventeen passed the state limit after a minute.  Exact
    against jsonschema over random objects written in schema order."""
    rng = random.Random(3)
    tags = [f"k{i}" for i in range(8)]
    names = [f"m{i:02d}" for i in range(12)]
    schema = {"type": "object", "properties": {"t": {"enum": tags}, **{n: {"type": "boolean"} for n in names}},
              "additionalProperties": False,
              "dependentSchemas": {n: {"properties": {"t": {"enum": rng.sample(tags, 3)}}} for n in names}}
    dfa = schema_to_dfa(schema).dfa
    assert dfa.num_states < 10_000
    seen = {True: 0, False: 0}
    for _ in range(400):
        value = {"t": rng.choice(tags)} if rng.random() < 0.8 else {}
        value.update((n, rng.random() < 0.5) for n in names if rng.random() < 0.2)
        valid = is_valid(schema, value)
        seen[valid] += 1
        assert dfa.matches(text_of(value).encode()) == valid, value
    assert min(seen.values()) > 50


@pytest.mark.parametrize("refusing", [{"not": {}}, {"not": True}])
def test_extra_members_refused_by_any_spelling_build_the_same_language(refusing):
    """``additionalProperties`` that no value meets, however it is written, refuses every
    key no branch lists: the same language as ``false`` (where the key automaton of
    extra members is skipped), unlisted keys refused and listed ones kept."""
    from constrain.automata.dfa_ops import difference

    base = {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "string"}}, "required": ["a"]}
    closed = schema_to_dfa({**base, "additionalProperties": False}).dfa
    other = schema_to_dfa({**base, "additionalProperties": refusing}).dfa
    assert difference(closed, other) is None and difference(other, closed) is None
    assert other.matches(b'{"a": 1, "b": "x"}') and not other.matches(b'{"a": 1, "c": 2}')
