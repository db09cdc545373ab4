"""``property_order="any"`` objects as member loops, kept exact by the matcher.

Texts are judged against ``jsonschema`` over every member order (``json.dumps`` and
``indent=2`` texts); masks against an oracle independent of the matcher: every valid
compact document of a finite schema is enumerated (each subset of members holding the
required ones, in each order, with each value), and a token is allowed exactly when
the prefix plus its bytes begins one of them, EOS exactly when the prefix is one.
"""

from __future__ import annotations

import itertools
import json
import random

import jsonschema
import numpy as np
import pytest

from constrain import Compiler, Matcher
from constrain.automata import member_sets as ms
from constrain.automata.unique_items import GOES_ON
from constrain.automata.member_sets import KEY, LEVEL, VALUE, MemberRule, MemberSetTokenPDA, member_roles
from constrain.automata.pushdown import cleared_bits
from constrain.grammar.json_schema import JsonSchemaOptions, schema_to_dfa
from constrain.testing import check_masks_along_random_walk

ANY = JsonSchemaOptions(property_order="any")


def _object(properties, required=(), **more):
    return {"type": "object", "properties": properties, "required": list(required), **more}


SCHEMAS = {
    "required and optional": _object({n: {"type": t} for n, t in zip("abcdefg", ["integer", "string", "boolean",
                                                                                 "null", "number", "string", "integer"])},
                                     "ace", additionalProperties=False),
    "extra members": _object({"a": {"type": "integer"}, "b": {"type": "string"}}, "b"),
    "patterned extras": _object({"a": {"type": "integer"}}, "a", patternProperties={"^x[0-9]$": {"type": "string"}},
                                additionalProperties=False),
    "minProperties": _object({n: {"type": "integer"} for n in "abcd"}, "a", minProperties=3,
                             additionalProperties=False),
    "nested": _object({"a": _object({"x": {"type": "integer"}, "y": {"type": "integer"}, "z": {"type": "string"}},
                                    "xz"), "b": {"type": "array", "items": _object({"p": {}, "q": {}}, "q")},
                       "c": {"type": "string"}}, "ab"),
    "anyOf of objects": {"anyOf": [_object({"a": {"type": "integer"}, "b": {"type": "integer"}}, "ab",
                                           additionalProperties=False),
                                   _object({"a": {"type": "string"}, "c": {"type": "integer"}}, "c")]},
    "recursive": {"$defs": {"node": _object({"v": {"type": "integer"}, "kids": {"type": "array",
                                                                                "items": {"$ref": "#/$defs/node"}}},
                                            "v", additionalProperties=False)}, "$ref": "#/$defs/node"},
    "unique strings": _object({"a": {"type": "integer"}, "t": {"type": "array", "items": {"type": "string"},
                                                               "uniqueItems": True},
                               "u": {"type": "array", "items": _object({"p": {}, "q": {}}, "q")}}, "a",
                              additionalProperties=False),
}

VALUES = [1, 7, -3, 0, "s", True, None, 2.5, {"x": 1, "z": "t"}, [{"q": 1}], [{"p": 1, "q": 2}], [{"p": 1}],
          {"v": 1}, [{"v": 2, "kids": []}]]


TYPED = {"integer": [1, 7, -3], "string": ["s", "t"], "boolean": [True, False], "null": [None], "number": [2.5, 1],
         "object": [{"x": 1, "z": "t"}, {"z": "t", "y": 3, "x": 2}, {"y": 3}],
         "array": [[{"q": 1}], [{"p": 1, "q": 2}, {"q": 3, "p": 4}], [{"kids": [{"v": 3}], "v": 2}], [{"v": 1, "v2": 1}]],
         "strings": [["s", "t"], ["t", "s", "t"], []]}


def _candidates(schema, rng):
    """Objects of up to five members, in several orders each, from the schema's names and
    strangers' (values mostly of the listed type, so that valid objects come up too)."""
    listed = {}
    for part in [schema, *schema.get("anyOf", []), *schema.get("$defs", {}).values()]:
        for name, sub in part.get("properties", {}).items():
            listed.setdefault(name, sub)
    names = sorted(listed) + ["x1"]

    def value(name):
        sub = listed.get(name, {})
        pool = TYPED.get("strings" if sub.get("items", {}).get("type") == "string" else sub.get("type"))
        return rng.choice(pool) if pool and rng.random() < 0.8 else rng.choice(VALUES)

    for size in itertools.chain(range(6), range(6), range(6)):  # three rounds of values
        for chosen in itertools.combinations(names, size):
            values = {name: value(name) for name in chosen}
            orders = list(itertools.permutations(chosen))
            for order in rng.sample(orders, min(4, len(orders))):
                yield {name: values[name] for name in order}


@pytest.mark.parametrize("name", sorted(SCHEMAS))
def test_every_member_order_is_accepted_exactly_when_valid(name):
    schema = SCHEMAS[name]
    language = schema_to_dfa(schema, ANY)
    assert language.members, "the object should be a member loop"
    automaton = language.automaton
    validator = jsonschema.Draft202012Validator(schema)
    rng = random.Random(name)
    verdicts = {True: 0, False: 0}
    for value in _candidates(schema, rng):
        want = validator.is_valid(value)
        for text in (json.dumps(value), json.dumps(value, indent=2)):
            assert automaton.matches(text.encode()) == want, (text, want)
        verdicts[want] += 1
    assert verdicts[True] >= 2 and verdicts[False] >= 4, verdicts  # both kinds met


def test_repeated_keys_and_dead_ends_are_refused_byte_by_byte():
    schema = _object({n: {"type": "integer"} for n in "abc"}, "a", additionalProperties=False)
    automaton = schema_to_dfa(schema, JsonSchemaOptions(property_order="any", whitespace="compact")).automaton
    assert automaton.matches(b'{"c":1,"a":2}') and not automaton.matches(b'{"c":1}')
    assert not automaton.is_prefix(b'{"c":1,"c"') and automaton.is_prefix(b'{"c":1,"a"')
    assert not automaton.is_prefix(b'{"c":1,"b":2,"a":3,')  # no key is left to write
    assert automaton.is_prefix(b'{"c":1,"b":2,') and not automaton.is_prefix(b'{"c":1,"b":2,"b')


@pytest.mark.parametrize("may_be_empty", [False, True])
def test_a_member_loop_holds_one_copy_of_its_members(may_be_empty):
    """``separated_loop`` is ``item (, item)*`` (or nothing) with the item wired once: the
    same language as the tree that repeats it, and a subset construction no larger than
    the minimal automaton's count plus nothing for a second copy (the tree's was)."""
    from constrain.automata.byte_dfa import build_byte_dfa
    from constrain.automata.dfa_ops import difference
    from constrain.grammar.json_schema.trees import NOTHING, EMPTY, alt, lit, opt, separated_loop, seq, star

    item = alt(*(seq(lit(f'"{name}"'), lit(":"), lit(value)) for name, value in
                 [("alpha", "1"), ("beta", "true"), ("gamma", '"x"'), ("delta", "null")]))
    tree = seq(item, star(seq(lit(","), item)))
    repeated = seq(lit("{"), opt(tree) if may_be_empty else tree, lit("}"))
    shared = seq(lit("{"), separated_loop(item, lit(","), may_be_empty), lit("}"))
    minimal = build_byte_dfa(shared)
    assert difference(minimal, build_byte_dfa(repeated)) is None and difference(build_byte_dfa(repeated), minimal) is None
    assert minimal.matches(b"{}") == may_be_empty
    assert minimal.matches(b'{"beta":true,"alpha":1,"beta":true}') and not minimal.matches(b'{"beta":true,}')
    unminimised = build_byte_dfa(shared, minimize=False).num_states
    assert unminimised < build_byte_dfa(repeated, minimize=False).num_states
    assert unminimised <= minimal.num_states + 2
    assert separated_loop(NOTHING, lit(","), may_be_empty) is (EMPTY if may_be_empty else NOTHING)


def test_schema_order_is_unchanged_and_unique_items_join_the_member_loop():
    schema = SCHEMAS["required and optional"]
    assert not schema_to_dfa(schema).members
    with_unique = {**schema, "properties": {**schema["properties"], "g": {"type": "array", "items": {"type": "string"},
                                                                        "uniqueItems": True}}}
    language = schema_to_dfa(with_unique, ANY)
    assert language.unique and language.members
    automaton = language.automaton
    assert automaton.matches(b'{"g": ["x", "y"], "e": 1.5, "a": 1, "c": true}')
    assert not automaton.matches(b'{"g": ["x", "x"], "e": 1.5, "a": 1, "c": true}')  # a repeated item
    assert not automaton.matches(b'{"g": ["x"], "a": 1, "g": [], "c": true}')  # a repeated key


def test_rules_and_roles():
    schema = _object({"ab": {"type": "string"}, "c": {"type": "integer"}}, ["c"], minProperties=1)
    language = schema_to_dfa(schema, JsonSchemaOptions(property_order="any", whitespace="compact"))
    (symbol, rule), = language.members.items()
    assert rule == MemberRule(frozenset({b"c"}), 1, GOES_ON)
    assert MemberRule.from_json(json.loads(json.dumps(rule.to_json()))) == rule
    pda = language.pushdown(8)
    roles = member_roles(pda, symbol)
    lo, _ = pda.blocks[symbol]
    state = pda.walk(pda.start, b'{"ab":"x"')[0][-1] - lo
    assert roles[state] == LEVEL
    assert roles[pda.walk(pda.start, b'{"ab":"x","a')[0][-1] - lo] == KEY
    assert roles[pda.walk(pda.start, b'{"ab":"x')[0][-1] - lo] == VALUE  # inside a string value


# -- masks against enumerated documents -------------------------------------------------------------------------------
FINITE = _object({"a": {"enum": ["1", "22"]}, "b": {"const": "x"}, "c": {"type": "boolean"},
                  "d": _object({"p": {"enum": ["u", "v"]}, "q": {"type": "null"}}, "q", additionalProperties=False)},
                 "a", additionalProperties=False)


def _documents(properties, required, most=None):
    """Every object over ``properties`` (name -> possible values) holding ``required``, in
    every order, of at most ``most`` members."""
    names = list(properties)
    for size in range(min(len(names), len(names) if most is None else most) + 1):
        for chosen in itertools.combinations(names, size):
            if set(required) <= set(chosen):
                for order in itertools.permutations(chosen):
                    for values in itertools.product(*(properties[n] for n in order)):
                        yield dict(zip(order, values))


class _DocumentsOracle:
    """Allowed tokens from the prefixes of an enumerated set of documents."""

    def __init__(self, documents, info):
        texts = {json.dumps(d, separators=(",", ":")).encode() for d in documents}
        self.complete = texts
        self.prefixes = {t[:i] for t in texts for i in range(len(t) + 1)}
        self.token_bytes = info.token_bytes
        self.eos_token_ids = set(info.eos_token_ids)

    def allowed_ids(self, prefix, special_ids=()):
        special = set(special_ids) | self.eos_token_ids
        allowed = {t for t, data in enumerate(self.token_bytes)
                   if data and t not in special and prefix + data in self.prefixes}
        return allowed | (self.eos_token_ids if prefix in self.complete else set())


@pytest.fixture(scope="module")
def finite_oracle(infos):
    inner = list(_documents({"p": ["u", "v"], "q": [None]}, ["q"]))
    return _DocumentsOracle(_documents({"a": ["1", "22"], "b": ["x"], "c": [True, False], "d": inner}, ["a"]),
                            infos("llama-3"))


@pytest.mark.parametrize("start", [b"", b'{"c":true,', b'{"d":{"q":null', b'{"c":false,"b":"x","d":{"q":null',
                                   b'{"a":"22","b":"x","c":true,"d":{"p":"u","q":null}', b'{"b":"x","a":"2',
                                   b'{"a":"1","d":{"q":null,"p":"v"},"b":"x",'])
def test_masks_are_exact_against_the_enumerated_documents(infos, finite_oracle, start):
    info = infos("llama-3")
    compiled = Compiler(info, cache_dir=False).compile_json_schema(FINITE, whitespace="compact", property_order="any")
    assert isinstance(compiled.engine, MemberSetTokenPDA)
    problem = check_masks_along_random_walk(Matcher(compiled), finite_oracle, info, steps=4, seed=len(start),
                                            start=start)
    assert problem is None, problem


UNIQUE_FINITE = _object({"a": {"enum": ["1", "22"]}, "c": {"type": "boolean"},
                         "t": {"type": "array", "items": {"type": "string", "pattern": "^[a-c]{1,2}$"},
                               "uniqueItems": True, "maxItems": 2}}, "a", additionalProperties=False)


@pytest.fixture(scope="module")
def unique_oracle(infos):
    strings = [a + b for a in "abc" for b in ["", *"abc"]]
    arrays = [[]] + [[s] for s in strings] + [[s, t] for s in strings for t in strings if s != t]
    return _DocumentsOracle(_documents({"a": ["1", "22"], "c": [True, False], "t": arrays}, ["a"]), infos("llama-3"))


@pytest.mark.parametrize("start", [b"", b'{"t":["a",', b'{"t":["ab","a', b'{"c":true,"t":["b"', b'{"t":[],"a":"1",',
                                   b'{"a":"22","t":["c","c'])
def test_masks_with_unique_arrays_in_member_loops_are_exact(infos, unique_oracle, start):
    """Both records at once: the keys written (member loop) and the array's items (unique)."""
    info = infos("llama-3")
    compiled = Compiler(info, cache_dir=False).compile_json_schema(UNIQUE_FINITE, whitespace="compact",
                                                                   property_order="any")
    assert isinstance(compiled.engine, MemberSetTokenPDA) and compiled.engine.members.unique is not None
    problem = check_masks_along_random_walk(Matcher(compiled), unique_oracle, info, steps=5, seed=len(start),
                                            start=start)
    assert problem is None, problem


@pytest.mark.parametrize("schema, start, whitespace", [
    *((FINITE, start, "compact") for start in (b'{"c":true,', b'{"c":false,"b":"x",', b'{"d":{"q":null,"p":"u"},',
                                                b'{"b":"x","a":"22",')),
    # Inside a value's string, where the tokens that close it and write a comma fail: the
    # object out of keys, a string counted, a free one, and an object in an array.
    ({"properties": {"k": {"type": "integer"}, "v": {"type": "string"}}, "additionalProperties": False},
     b'{"k":1,"v":"', "flexible"),
    ({"properties": {"k": {"type": "integer"}, "v": {"type": "string", "maxLength": 40}},
      "additionalProperties": False}, b'{"k":1,"v":"ab', "flexible"),
    ({"properties": {"k": {"type": "integer"}, "v": {"type": "string"}}, "required": ["k"]}, b'{"v":"a', "compact"),
    ({"properties": {"n": {"type": "integer"}, "tags": {"type": "array", "items": {
        "properties": {"k": {}, "v": {"type": "string"}}, "additionalProperties": False}}}},
     b'{"tags":[{"k":1,"v":"x', "flexible"),
])
def test_suspects_read_along_shared_beginnings_are_those_read_whole(infos, schema, start, whitespace):
    """``killed`` reads the suspects in byte order, each from where the one before parted:
    the tokens it refuses are exactly those that reading each token whole refuses, over
    every token the plain pushdown allows there (far more than the suspects)."""
    info = infos("llama-3")
    engine = Compiler(info, cache_dir=False).compile_json_schema(schema, whitespace=whitespace,
                                                                 property_order="any").engine
    state = engine.reader.walk(engine.reader.start, start)
    assert state is not None
    words = engine.mask_words(state)
    allowed = np.flatnonzero(np.unpackbits(words.view(np.uint8), bitorder="little"))
    plain = np.flatnonzero(np.unpackbits(engine.configurations_mask(state[0]).view(np.uint8),
                                         bitorder="little"))
    refused = {token for token in plain.tolist() if engine.reader.walk(state, info.token_bytes[token]) is None}
    assert refused and set(allowed.tolist()) <= set(plain.tolist()) - refused
    (where, keep), (want_where, want_keep) = engine.killed(state, plain.tolist()), cleared_bits(sorted(refused))
    assert np.array_equal(where, want_where) and np.array_equal(keep, want_keep)


def test_records_inside_values_do_not_hold_the_value(infos):
    """Only keys are kept, so a value's text is not recorded: two states inside different
    values of one member are one state (their steps are shared), while a key's text is
    kept, and values still end right."""
    schema = _object({"a": {"type": "string"}, "b": {"type": "integer"}}, "a")
    reader = Compiler(infos("llama-3"), cache_dir=False).compile_json_schema(
        schema, whitespace="compact", property_order="any").engine.reader
    walk = lambda text: reader.walk(reader.start, text)  # noqa: E731
    assert walk(b'{"b":1,"a":"xy') == walk(b'{"b":1,"a":"q\\"') == walk(b'{"b":1,"a":"')
    assert walk(b'{"b":1,"a":"xy\\') == walk(b'{"b":1,"a":"\\')
    assert walk(b'{"a":"x","') != walk(b'{"b":1,"')  # the keys written differ
    assert walk(b'{"b":1,"xy') != walk(b'{"b":1,"xz')  # a key's text is kept
    assert walk(b'{"b":1,"a":"x","b"') is None and walk(b'{"a":"b","b"') is not None
    assert reader.matches(b'{"b":1,"a":"x"}') and not reader.matches(b'{"b":1}')


def test_the_disk_cache_keeps_the_rules(infos, tmp_path):
    info = infos("llama-3")
    first = Compiler(info, cache_dir=tmp_path).compile_json_schema(FINITE, property_order="any")
    again = Compiler(info, cache_dir=tmp_path).compile_json_schema(FINITE, property_order="any")
    assert isinstance(again.engine, MemberSetTokenPDA)
    assert again.engine.members.rules == first.engine.members.rules
    for text, valid in (('{"c": true, "a": "1"}', True), ('{"c": true}', False), ('{"a": "1", "a": "1"}', False)):
        matcher = Matcher(again)
        assert (matcher.accept_bytes(text) and matcher.is_accepting()) == valid, text


# -- member groups ----------------------------------------------------------------------------------------------------
_FIVE = {name: {"type": "integer"} for name in "abcdx"}
GROUPED = {
    "oneOf": {"type": "object", "properties": _FIVE, "oneOf": [{"required": ["a"]}, {"required": ["b", "c"]}],
              "additionalProperties": False},
    "anyOf": {"type": "object", "properties": _FIVE, "anyOf": [{"required": ["a"]}, {"required": ["d"]}],
              "additionalProperties": False},
    "dependentRequired": {"type": "object", "properties": _FIVE, "dependentRequired": {"c": ["a"], "d": ["a", "b"]},
                          "additionalProperties": False},
    "if": {"type": "object", "properties": _FIVE, "additionalProperties": False, "if": {"required": ["a"]},
           "then": {"required": ["b"]}, "else": {"required": ["c"]}},
    "oneOf of nested sets": {"type": "object", "properties": _FIVE, "additionalProperties": False,
                             "oneOf": [{"required": ["a"]}, {"required": ["a", "b"]}], "minProperties": 2},
    "not required": {"type": "object", "properties": _FIVE, "additionalProperties": False, "required": ["d"],
                     "not": {"required": ["a", "b"]}},
    "not allOf of required": {"type": "object", "properties": _FIVE, "additionalProperties": False,
                              "not": {"allOf": [{"required": ["a"]}, {"required": ["c"]}]}, "minProperties": 1},
    # Branches that exclude a name (Github_medium o57539, o27148).
    "oneOf branch excluding a name": {"type": "object", "properties": _FIVE, "additionalProperties": False,
                                      "oneOf": [{"required": ["a", "b"]},
                                                {"required": ["c"], "not": {"type": "object", "required": ["b"]}}]},
    "dependencies excluding each other": {"type": "object", "properties": _FIVE, "additionalProperties": False,
                                          "dependentSchemas": {"a": {"properties": {"b": {"not": {}}}},
                                                           "b": {"properties": {"a": False}}},
                                          "anyOf": [{"required": ["a"]}, {"required": ["b"]}]},
}


@pytest.mark.parametrize("name", sorted(GROUPED))
def test_member_groups_refuse_exactly_the_dead_ends(name):
    """Every compact text of every subset of five names in every order (values all 1, which
    the groups ignore; no other names allowed) against jsonschema, and every prefix is
    readable exactly when some valid text goes on from it."""
    schema = GROUPED[name]
    language = schema_to_dfa(schema, JsonSchemaOptions(property_order="any", whitespace="compact"))
    assert language.members and all(rule.groups for rule in language.members.values())
    _check_name_texts(language.automaton, schema, "abcdx", 5)


def _check_name_texts(automaton, schema, names, most, strangers=""):
    """Every compact text of every subset of at most ``most`` of ``names`` in every order
    (values all 1) against jsonschema, and every prefix is readable exactly when some
    valid text goes on from it: where the schema's names are open, a key begun may
    still become a stranger's (one of ``strangers``, whichever is not written, stands
    for it)."""
    validator = jsonschema.Draft202012Validator(schema)
    texts = {json.dumps(dict.fromkeys(chosen, 1), separators=(",", ":")).encode(): None
             for size in range(most + 1) for chosen in itertools.permutations(names, size)}
    valid = {text for text in texts if validator.is_valid(json.loads(text))}
    viable = {text[:i] for text in valid for i in range(len(text) + 1)}
    open_names = schema.get("additionalProperties", True) is not False

    def is_viable(prefix):
        if prefix in viable:
            return True
        key_open = prefix.count(b'"') % 2 == 1
        return open_names and key_open and any(prefix[:prefix.rindex(b'"') + 1] + stranger.encode() in viable
                                               for stranger in strangers)

    assert 0 < len(valid) < len(texts)
    for text in texts:
        assert automaton.matches(text) == (text in valid), text
        for i in range(len(text)):
            assert automaton.is_prefix(text[:i]) == is_viable(text[:i]), text[:i]


GROUPED_FINITE = {"type": "object", "additionalProperties": False,
                  "properties": {"a": {"enum": ["1", "22"]}, "b": {"type": "boolean"}, "c": {"const": "x"},
                                 "d": {"type": "null"}},
                  "oneOf": [{"required": ["a"]}, {"required": ["b", "c"]}], "dependentRequired": {"d": ["a"]}}


# The second blocks "b" before any name is written (with it, both branches would hold).
BLOCKED_AT_START = {**GROUPED_FINITE, "oneOf": [{"required": ["a"]}, {"required": ["a", "b"]}]}
# A branch that excludes a name: "d" rules out the second branch, and "d" needs "a".
EXCLUDING = {**GROUPED_FINITE, "oneOf": [{"required": ["a", "b"]}, {"required": ["c"], "not": {"required": ["b"]}}]}


@pytest.mark.parametrize("schema, start", [
    *((GROUPED_FINITE, start) for start in (b"", b'{"b":true,', b'{"a":"1",', b'{"d":null,', b'{"c":"x","b":false',
                                            b'{"a":"22","d":null')),
    *((BLOCKED_AT_START, start) for start in (b"", b"{", b'{"c":"x",', b'{"a":"1",', b'{"d":null,"a":"1"')),
    *((EXCLUDING, start) for start in (b"", b'{"c":"x",', b'{"a":"22",', b'{"b":false,'))])
def test_masks_with_member_groups_are_exact(infos, schema, start):
    info = infos("llama-3")
    validator = jsonschema.Draft202012Validator(schema)
    values = {"a": ["1", "22"], "b": [True, False], "c": ["x"], "d": [None]}
    oracle = _DocumentsOracle([d for d in _documents(values, []) if validator.is_valid(d)], info)
    compiled = Compiler(info, cache_dir=False).compile_json_schema(schema, whitespace="compact", property_order="any")
    assert isinstance(compiled.engine, MemberSetTokenPDA) and compiled.engine.members.grouped
    problem = check_masks_along_random_walk(Matcher(compiled), oracle, info, steps=4, seed=len(start), start=start)
    assert problem is None, problem


# -- maxProperties ----------------------------------------------------------------------------------------------------
COUNTED = {
    "below the names": {"type": "object", "properties": _FIVE, "required": ["a"], "maxProperties": 2,
                        "additionalProperties": False},
    # Seed 14 of the fuzzer: a required name no property lists, among strangers.
    "required stranger": {"type": "object", "properties": {"a": {}, "b": {}, "c": {}}, "required": ["a", "z"],
                          "maxProperties": 3},
    "with a oneOf": {"type": "object", "properties": _FIVE, "maxProperties": 3, "minProperties": 2,
                     "additionalProperties": False, "oneOf": [{"required": ["a"]}, {"required": ["b", "c"]}]},
    "with a dependency": {"type": "object", "properties": _FIVE, "maxProperties": 3,
                          "dependentRequired": {"c": ["a", "b"]}},
    "required fill it": {"type": "object", "properties": _FIVE, "required": ["b", "d"], "maxProperties": 2},
    "nothing": {"type": "object", "properties": _FIVE, "maxProperties": 0},
}


@pytest.mark.parametrize("name", sorted(COUNTED))
def test_max_properties_refuse_exactly_the_dead_ends(name):
    """As for member groups, over nine names, four strangers to some schemas (whose other
    names are open): the loop counts the keys, refuses a comma once the count is
    reached and, where the room left is the required names', every other key.  Where
    names are open, a key begun may still become a stranger's ("u", "v" or "w" stands
    for it, whichever is not written)."""
    schema = COUNTED[name]
    language = schema_to_dfa(schema, JsonSchemaOptions(property_order="any", whitespace="compact"))
    assert language.members and not language.notes, language.notes
    assert all(rule.max_properties == schema["maxProperties"] for rule in language.members.values())
    _check_name_texts(language.automaton, schema, "abcduvwxz", 4, strangers="uvw")


# Ten patterned names besides four listed: keys the rule does not name, cut off by the count.
COUNTED_FINITE = {"type": "object", "additionalProperties": False, "maxProperties": 3, "required": ["a"],
                  "properties": {"a": {"enum": ["1", "22"]}, "b": {"type": "boolean"}, "c": {"const": "x"},
                                 "d": {"type": "null"}},
                  "patternProperties": {"^x[0-9]$": {"type": "null"}}}
COUNTED_GROUPED = {**GROUPED_FINITE, "maxProperties": 2}
# Two loops (with "a", and without): inside a key, one may write only "a" and the other any name.
COUNTED_SPLIT = {**COUNTED_FINITE, "required": [], "dependentSchemas": {"a": {"maxProperties": 1}}}


@pytest.mark.parametrize("schema, start", [
    *((COUNTED_FINITE, start) for start in (b"", b'{"b":true,', b'{"x1":null,"d":null,', b'{"x1":null,"x',
                                            b'{"a":"1","x2":null,', b'{"c":"x","d":null', b'{"b":false,"c',
                                            b'{"b":true,"c":"x"', b'{"b":true,"c":"x', b'{"x3":null,"b":true')),
    *((COUNTED_GROUPED, start) for start in (b"", b'{"b":true,', b'{"d":null,', b'{"c":"x",')),
    *((COUNTED_SPLIT, start) for start in (b"", b'{"', b'{"x', b'{"b":true,"'))])
def test_masks_with_max_properties_are_exact(infos, schema, start):
    info = infos("llama-3")
    validator = jsonschema.Draft202012Validator(schema)
    values = {"a": ["1", "22"], "b": [True, False], "c": ["x"], "d": [None],
              **{f"x{k}": [None] for k in range(10) if "patternProperties" in schema}}
    documents = (d for d in _documents(values, schema.get("required", []), most=schema["maxProperties"])
                 if validator.is_valid(d))
    oracle = _DocumentsOracle(documents, info)
    compiled = Compiler(info, cache_dir=False).compile_json_schema(schema, whitespace="compact", property_order="any")
    assert isinstance(compiled.engine, MemberSetTokenPDA) and not compiled.notes
    problem = check_masks_along_random_walk(Matcher(compiled), oracle, info, steps=4, seed=len(start), start=start)
    assert problem is None, problem


OPEN_COUNTED = {**COUNTED["required stranger"], "properties": {"a": {}, "b": {}, "c": {}, "z": {}}}
# The fuzzer's seed 18: no key at all may come, so '{"' is refused whole.
NO_KEYS = {"type": ["object", "number"], "maxProperties": 0}


@pytest.mark.parametrize("schema, start", [
    *((OPEN_COUNTED, start) for start in (b'{"b":1', b'{"b":"', b'{"b":1,', b'{"b":1,"', b'{"b":1,"z', b'{"a":1,"q":2',
                                          b'{"q":[1,{"r":2}]', b'{"a":{"s":1}', b'{"', b'{"a":1,"z":1')),
    (NO_KEYS, b""), ({"type": "array", "items": NO_KEYS}, b"["), ({"type": "array", "items": NO_KEYS}, b"[{},")])
def test_masks_with_max_properties_and_open_names_refuse_what_the_reader_refuses(infos, schema, start):
    """Where names are open no documents can be listed, so the mask is checked against the
    byte reader (checked against jsonschema above) over every token the plain pushdown
    allows: a token is masked out exactly when reading it whole is refused.  The suspects
    (tokens simulated) must include every token that may begin a key the count rules
    out, after a comma (',"\\') or a bracket as much as at a key's place, or after the
    brace that opens an object where no key may come ('{"')."""
    _check_mask_against_reader(infos("llama-3"), schema, start)


def _check_mask_against_reader(info, schema, start, whitespace="compact"):
    """The mask at ``start`` (any order) is every token the plain pushdown allows that the
    reader does not refuse when it reads the token whole."""
    engine = Compiler(info, cache_dir=False).compile_json_schema(schema, whitespace=whitespace,
                                                                 property_order="any").engine
    state = engine.reader.walk(engine.reader.start, start)
    assert state is not None, start
    words = engine.mask_words(state)
    allowed = set(np.flatnonzero(np.unpackbits(words.view(np.uint8), bitorder="little")).tolist())
    plain = np.flatnonzero(np.unpackbits(engine.configurations_mask(state[0]).view(np.uint8),
                                         bitorder="little")).tolist()
    read = {token for token in plain if engine.reader.walk(state, info.token_bytes[token]) is not None}
    assert allowed == read, (sorted(allowed - read)[:5], sorted(read - allowed)[:5])


_NAMED = {"Time": {}, "Timestamp": {}, "Tim": {"type": "integer"}}
# Keys that can go on forever wherever they go (additional names are open), keys that end
# within a few bytes past some places (listed names beside a pattern, or bounded names),
# and a key escaped.
KEYS_ENDING = {
    "open": {"properties": _NAMED},
    "pattern": {"properties": _NAMED, "patternProperties": {"^x": {}}, "additionalProperties": False},
    "bounded names": {"properties": _NAMED, "propertyNames": {"maxLength": 9}},
    "escaped": {"properties": {"a\\b": {}, "a\\c": {}}, "additionalProperties": False},
    # The fuzzer's seed 19: '":"",\n' closes the last key an object may hold, then writes a comma.
    "last key": {"properties": {"kids": {"type": "array"}, "v": {}}, "required": ["v"], "additionalProperties": False},
    # A key that breaks a dependency which held, and a brace (no such token in Llama-3).
    "dependency": {"properties": {"v": {}, "w": {}}, "dependentRequired": {"v": ["w"]}},
}


@pytest.mark.parametrize("name, start", [
    *((name, start) for name in ("open", "pattern", "bounded names")
      for start in (b'{"Timestamp":1,"', b'{"Timestamp":1,"T', b'{"Timestamp":1,"Time', b'{"Tim":1,"Time":2,"Ti',
                    b'{"x":1,"Timestamp":1,"xTim')),
    ("escaped", b'{"a\\\\b":1,"a\\\\'), ("escaped", b'{"a\\\\b":1,"a'), ("open", b'{"Time":1,"\\'),
    ("last key", b'{"kids":[],"v'), ("last key", b'{"kids":[],'), ("last key", b'{"v'), ("dependency", b'{"v'),
    ("dependency", b'{"w":1,"v')])
@pytest.mark.parametrize("whitespace", ["compact", "flexible"])
def test_masks_inside_keys_refuse_what_the_reader_refuses(infos, name, start, whitespace):
    """Inside a key of an object open to other names no token that stays inside can be
    refused, and such tokens are not simulated; where the key may end within a few
    bytes (a listed name beside a pattern, a bounded name), a token that spells a written
    name's rest is, and must be refused exactly when reading it is.  A token that closes
    the key, writes a value and a comma (flexible whitespace: '":"",\\n') fails where that
    key was the last one left."""
    _check_mask_against_reader(infos("llama-3"), KEYS_ENDING[name], start, whitespace)


def test_a_few_names_left_count_as_out_of_keys_for_the_suspects(infos):
    """Where only a few names may follow, the tokens that fail when no key is left (a comma,
    a bracket back into the object) are simulated too: whether the table can spell one
    of those names is the simulation's to say, not the count's."""
    engine = Compiler(infos("llama-3"), cache_dir=False).compile_json_schema(
        COUNTED["required stranger"], whitespace="compact", property_order="any").engine
    members = engine.members
    rules = range(len(members.rules))
    assert members.only(0, frozenset({b"b"})) == {b"a", b"z"} and members.only(0, frozenset()) is None
    assert members.exhausted(rules, frozenset({b"b"}), 0) and not members.exhausted(rules, frozenset(), 0)
    assert members.keys_left(0, frozenset({b"b"})) == 2


@pytest.mark.parametrize("data, inside, kinds", [
    (b"}", False, ms._CLOSING), (b"},", False, ms._CLOSING | ms._POPS), (b'"}', True, ms._CLOSING),
    (b"}}", False, ms._CLOSING_MORE), (b",", False, ms._COMMAS), (b',"a":"', False, ms._COMMAS_KEYED),
    (b'},"a', False, ms._CLOSING | ms._POPS_KEYED), (b"{}", False, 0), (b"{},", False, ms._COMMAS),
    (b'{"a":1,', False, ms._OPENS), (b'{"b', False, ms._OPENS_TAIL), (b'{"', False, ms._OPENS_TAIL), (b"[1,", False, 0),
    (b"]}", False, ms._CLOSING_MORE), (b'x"', True, 0), (b'\\"}', True, 0)])
def test_tokens_are_sorted_by_what_they_do_outside_strings(data, inside, kinds):
    """The kinds pick the suspects (a kind missed is a token never simulated): brackets a
    token opens and closes are its own, and what happens inside strings is no structure."""
    assert ms._structure(data, inside) == kinds


def test_a_bracket_back_into_an_object_out_of_keys_is_masked(infos):
    """``],`` closes an array inside an object and writes a comma there: with every key of
    the object written it is a dead end, like the comma alone.  Every token the mask
    allows, or refuses, with a bracket, comma, brace or quote, against the byte reader."""
    info = infos("llama-3")
    schema = {"type": "object", "additionalProperties": False,
              "properties": {"a": {"type": "array", "items": {"type": "string"}}, "b": {"type": "integer"}}}
    compiled = Compiler(info, cache_dir=False).compile_json_schema(schema, whitespace="compact", property_order="any")
    for prefix in ('{"b":1,"a":["x"', '{"a":["x"', '{"b":1,"a":["x","y'):
        matcher = Matcher(compiled)
        assert matcher.accept_bytes(prefix)
        words = matcher.next_token_mask_words()
        state = matcher._states[-1]
        for token, data in enumerate(info.token_bytes):
            if data and any(b in data for b in b'],}"') and token not in info.eos_token_ids:
                allowed = bool(words[token >> 5] >> (token & 31) & 1)
                assert allowed == (compiled.engine.advance_token(state, token) is not None), (prefix, data)


# -- member loops where products or unrolling stood before ------------------------------------------------------------
TAGGED = {"type": "array", "items": {"oneOf": [
    {"additionalProperties": False, "properties": {"t": {"enum": ["A"]}, "k": {"type": "string"}}, "required": ["t", "k"]},
    {"additionalProperties": False, "properties": {"t": {"enum": ["B"]}, "m": {"type": "integer"}}, "required": ["t"]}]}}


def test_a_one_of_tagged_for_objects_only_is_split_by_type():
    """The branches are apart for objects (their required tags differ) but both hold for a
    scalar, which oneOf therefore refuses: the objects need no product and are member
    loops; the scalars are decided alone."""
    language = schema_to_dfa(TAGGED, ANY)
    assert len(language.members) == 2
    automaton = language.automaton
    validator = jsonschema.Draft202012Validator(TAGGED)
    items = [{"t": "A", "k": "s"}, {"k": "s", "t": "A"}, {"m": 1, "t": "B"}, {"t": "B"}, {"t": "A"}, {"t": "B", "k": "s"},
             {"t": "C"}, 1, "s", None, [], {}]
    for first, second in itertools.product(items, repeat=2):
        value = [first, second]
        assert automaton.matches(json.dumps(value).encode()) == validator.is_valid(value), value


def test_a_recursive_definition_that_is_a_member_loop_nests_without_bound():
    """A definition that is one object in any order is its own callee: nesting deeper than
    max_recursion is read (it was unrolled to that depth before, and refused beyond)."""
    schema = {"$ref": "#/$defs/e", "$defs": {"e": {"type": "object", "additionalProperties": False, "required": ["t"],
                                                   "properties": {"t": {"type": "string"},
                                                                  "kids": {"type": "array", "items": {"$ref": "#/$defs/e"}}}}}}
    automaton = schema_to_dfa(schema, ANY).automaton
    value = {"t": "leaf"}
    for depth in range(8):
        value = {"t": str(depth), "kids": [value]} if depth % 2 else {"kids": [value, {"t": "x"}], "t": str(depth)}
    assert automaton.matches(json.dumps(value).encode())
    assert not automaton.matches(json.dumps({"kids": [value]}).encode())  # "t" is required at the top


# -- objects split into loops by value class ---------------------------------------------------------------------------
_TAGS = {"type": {"enum": ["a", "b", "c"]}, "x": {}, "y": {}, "z": {"type": "integer"}}
BY_CLASS = {
    # Github_hard o27348: one conditional per tag value.
    "if const chain": {"type": "object", "properties": _TAGS, "additionalProperties": False, "allOf": [
        {"if": {"properties": {"type": {"const": "a"}}}, "then": {"required": ["x"]}},
        {"if": {"properties": {"type": {"const": "b"}}}, "then": {"required": ["y"], "not": {"required": ["z"]}}}]},
    # Github_easy o78062: two kinds told apart by a required member with a typed value.
    "oneOf of kinds": {"type": "object", "properties": _TAGS, "additionalProperties": False, "oneOf": [
        {"properties": {"x": {"type": "array"}}, "required": ["x"]},
        {"properties": {"y": {"type": "array"}}, "required": ["y"]}]},
}
_CLASS_VALUES = {"type": ["a", "b", "c", 1], "x": [[], 1], "y": [[], "s"], "z": [2]}


def _class_texts():
    """Every compact text of every subset of the four names, in every order, with every value."""
    for size in range(5):
        for names in itertools.permutations(_CLASS_VALUES, size):
            for values in itertools.product(*(_CLASS_VALUES[n] for n in names)):
                yield json.dumps(dict(zip(names, values)), separators=(",", ":")).encode()


@pytest.mark.parametrize("name", sorted(BY_CLASS))
def test_objects_split_by_value_class_are_exact_in_any_order(name):
    """Member groups that split a member's values into classes make one loop per class
    choice, no schema order: every text (all orders, all values) is read exactly as
    jsonschema judges it, and every prefix is readable exactly when a valid text goes
    on from it."""
    schema = BY_CLASS[name]
    language = schema_to_dfa(schema, JsonSchemaOptions(property_order="any", whitespace="compact"))
    assert len(language.members) > 1
    automaton, validator = language.automaton, jsonschema.Draft202012Validator(schema)
    texts = list(_class_texts())
    valid = {text for text in texts if validator.is_valid(json.loads(text))}
    viable = {text[:i] for text in valid for i in range(len(text) + 1)}
    assert 0 < len(valid) < len(texts)
    for text in texts:
        assert automaton.matches(text) == (text in valid), text
    for prefix in {text[:i] for text in texts for i in range(len(text))}:
        assert automaton.is_prefix(prefix) == (prefix in viable), prefix


def test_a_recursive_definition_split_by_class_still_nests_without_bound():
    """A recursive definition whose object would split into loops (a union of calls, which
    no callee may start with) is built as one object instead, so recursion still calls it."""
    schema = {"$ref": "#/$defs/c", "$defs": {"c": {"type": "object", "properties": {"n": {"type": "string"}},
                                                   "required": ["n"], "oneOf": [
        {"properties": {"kids": {"type": "array", "items": {"$ref": "#/$defs/c"}}}, "required": ["kids"]},
        {"properties": {"leaf": {"type": "boolean"}}, "required": ["leaf"]}]}}}
    automaton = schema_to_dfa(schema, ANY).automaton
    value = {"n": "x", "leaf": True}
    for depth in range(8):
        value = {"n": str(depth), "kids": [value]}
    assert automaton.matches(json.dumps(value).encode())
    assert not automaton.matches(json.dumps({"n": "top", "kids": [value], "leaf": True}).encode())


@pytest.mark.parametrize("start", [b"", b'{"type":"b",', b'{"x":1,', b'{"z":2,"type":"', b'{"y":"s","type":"a"'])
def test_masks_of_objects_split_by_class_are_exact(infos, start):
    """The loops of an object split by a tag's value, token by token on the Llama-3
    vocabulary, against every valid document enumerated."""
    info = infos("llama-3")
    schema = {**BY_CLASS["if const chain"], "properties": {"type": {"enum": ["a", "b", "c"]}, "x": {"enum": [[], 1]},
                                                           "y": {"enum": [[], "s"]}, "z": {"const": 2}}}
    validator = jsonschema.Draft202012Validator(schema)
    oracle = _DocumentsOracle([d for d in _documents(_CLASS_VALUES, []) if validator.is_valid(d)], info)
    compiled = Compiler(info, cache_dir=False).compile_json_schema(schema, whitespace="compact", property_order="any")
    assert isinstance(compiled.engine, MemberSetTokenPDA) and len(compiled.engine.members.rules) > 1
    problem = check_masks_along_random_walk(Matcher(compiled), oracle, info, steps=4, seed=len(start), start=start)
    assert problem is None, problem


def test_whole_masks_are_remembered_for_the_latest_states(infos, monkeypatch):
    """A mask read back is the one cut from its row (the same array, not cut again), at most
    ``MAX_REMEMBERED_MASKS`` of them are kept, and a state cut again after they are
    dropped gets an equal mask."""
    from constrain.automata import pushdown

    monkeypatch.setattr(pushdown, "MAX_REMEMBERED_MASKS", 2)
    info = infos("llama-3")
    engine = Compiler(info, cache_dir=False).compile_json_schema(
        {"properties": {"a": {}, "b": {}}, "additionalProperties": False}, property_order="any").engine
    states = [engine.reader.walk(engine.reader.start, text) for text in (b'{"a":1,', b'{"a":1,"', b'{"b":1,"')]
    first = engine.mask_words(states[0])
    assert engine.mask_words(states[0]) is first
    assert not np.array_equal(first, engine.configurations_mask(states[0][0]))  # '"a"' is cut after '{"a":1,'
    assert engine.memory_bytes() > 0
    for state in states[1:]:
        engine.mask_words(state)
    assert len(engine._masks) <= 2 and states[0] not in engine._masks
    assert np.array_equal(engine.mask_words(states[0]), first)
