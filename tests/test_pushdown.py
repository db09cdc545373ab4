"""Free-form JSON values through calls into one shared automaton (``constrain.automata.pushdown``).

The language is checked against ``jsonschema`` on values nested far deeper than
any DFA copy could follow; the numba trie walk's masks are checked against
walking every token of the vocabulary on its own through the Python
:class:`PushdownDFA` (brute force), along random walks that start deep inside
nested values, on Llama-3 (byte-level BPE) and Llama-2 (byte fallback).
"""

from __future__ import annotations

import json
import random
import re

import jsonschema
import numpy as np
import pytest

from constrain import Compiler, Matcher
from constrain.automata.byte_dfa import ByteDFA
from constrain.automata.dfa_ops import difference
from constrain.automata.pushdown import (CALL, CALL_SYMBOLS, COUNTED_SYMBOLS, PushdownDFA, TokenPDA, expand_calls,
                                         has_calls)
from constrain.grammar.json_schema import UNSATISFIABLE, JsonSchemaOptions, schema_to_dfa
from constrain.grammar.json_schema import sharing
from constrain.grammar.json_schema.document import SchemaDocument
from constrain.errors import SchemaError
from constrain.grammar.json_schema.strings import COUNT_MARGIN, LONGEST_TOKEN, CountedString
from constrain.testing import bitmask_to_ids, check_masks_along_random_walk

FREE = {}
# More recursive definitions than one-byte call symbols (ten).
WIDE_RECURSION = {"$defs": {f"r{i}": {"type": "object", "properties": {"v": {"type": "integer"},
                                                                       "next": {"$ref": f"#/$defs/r{i}"}}}
                            for i in range(12)},
                  "type": "object", "properties": {f"p{i}": {"$ref": f"#/$defs/r{i}"} for i in range(12)}}
OBJECT_WITH_EXTRAS = {"type": "object", "properties": {"id": {"type": "integer"}, "meta": {}}, "required": ["id"]}
# After '{"a": ' one branch calls the any-value automaton and the other reads a short string.
AMBIGUOUS = {"anyOf": [{"type": "object", "properties": {"a": {}}, "required": ["a"]},
                       {"type": "object", "properties": {"a": {"type": "string", "maxLength": 3}},
                        "additionalProperties": False}]}
ARRAY_OF_ANY = {"type": "array", "maxItems": 4}
# Strings beside free-form values: a count, and a pattern no ordinary text can fail.
STRINGS_WITH_EXTRAS = {"type": "object", "properties": {
    "s": {"type": "string", "maxLength": 40}, "p": {"type": "string", "pattern": "x\\.dll"}, "m": {}}}
# A count this long took ~14 states per character eagerly (458,739 for 32767: refused).
LONG_TEXT = {"type": "object", "properties": {"text": {"type": "string", "minLength": 3, "maxLength": 32767},
                                              "n": {"type": "integer"}}, "required": ["text"]}
# Short enough to count eagerly too (with max_any_depth), so the two engines can be compared.
LONG_ENOUGH = {"type": "object", "properties": {"s": {"type": "string", "minLength": 2, "maxLength": 600},
                                                "t": {"type": "integer"}}, "required": ["s"]}
# Recursive definitions, each a callee of its own (see the last section).
JSON_TEXT = {"$schema": "http://json-schema.org/draft-07/schema#", "type": "object",
             "properties": {"doc": {"type": "string", "contentMediaType": "application/json"}}, "required": ["doc"]}
TREE = {"$defs": {"node": {"type": "object", "properties": {
    "v": {"type": "integer"}, "kids": {"type": "array", "items": {"$ref": "#/$defs/node"}}},
    "required": ["v"], "additionalProperties": False}}, "$ref": "#/$defs/node"}
# The root itself recurs, through a map and an array (draft-07: $ref "#").
ROOT_RECURSION = {"$schema": "http://json-schema.org/draft-07/schema#", "type": ["object", "integer"],
                  "additionalProperties": {"$ref": "#"}, "properties": {"list": {"type": "array", "items": {"$ref": "#"}}}}
# Two definitions that call each other; the leaf string is a long count (a counted callee beside them).
MUTUAL = {"$defs": {
    "expr": {"anyOf": [{"type": "integer"}, {"$ref": "#/$defs/call"}]},
    "call": {"type": "object", "properties": {"fn": {"type": "string", "maxLength": 3000},
                                              "args": {"type": "array", "items": {"$ref": "#/$defs/expr"}}},
             "required": ["fn", "args"], "additionalProperties": False}},
    "$ref": "#/$defs/expr"}
# Recursion through anyOf branches that are only references: pydantic's Optional[Node] ...
OPTIONAL_CHAIN = {"$defs": {"Node": {"type": "object", "properties": {
    "v": {"type": "integer"}, "next": {"anyOf": [{"$ref": "#/$defs/Node"}, {"type": "null"}], "default": None}},
    "required": ["v"], "additionalProperties": False}}, "$ref": "#/$defs/Node"}
OPTIONAL_ONE_OF = json.loads(json.dumps(OPTIONAL_CHAIN).replace('"anyOf"', '"oneOf"'))  # its branches are apart
# ... and a union of mutually recursive types (CWL's parameter types, Github_hard o69207).
TYPE_UNION = {"$defs": {
    "Type": {"anyOf": [{"enum": ["int", "string"]}, {"$ref": "#/$defs/Array"}, {"$ref": "#/$defs/Record"},
                       {"$ref": "#/$defs/Map"}]},
    "Array": {"type": "object", "properties": {"type": {"const": "array"}, "items": {"$ref": "#/$defs/Type"}},
              "required": ["type", "items"], "additionalProperties": False},
    "Record": {"type": "object", "properties": {"type": {"const": "record"}, "fields": {"type": "array", "items": {
        "type": "object", "properties": {"name": {"type": "string"}, "type": {"$ref": "#/$defs/Type"}},
        "required": ["name", "type"], "additionalProperties": False}}}, "required": ["type"], "additionalProperties": False},
    "Map": {"type": "object", "properties": {"type": {"const": "map"}, "values": {"anyOf": [
        {"$ref": "#/$defs/Array"}, {"$ref": "#/$defs/Record"}, {"type": "array", "items": {"$ref": "#/$defs/Type"}}]}},
        "required": ["type", "values"], "additionalProperties": False}},
    "$ref": "#/$defs/Type"}
# A definition referenced from many places (a shared callee), once inside overlapping oneOf
# branches (a product, where it is built in place) and once with a sibling keyword.
ITEM = {"type": "object", "required": ["id"], "additionalProperties": False, "properties": {
    "id": {"type": "integer", "minimum": 0, "maximum": 999},
    "tags": {"type": "array", "items": {"type": "string", "maxLength": 4}, "maxItems": 3},
    "kind": {"enum": ["a", "b"]},
    "meta": {"type": "object", "additionalProperties": False, "properties": {"x": {"type": "number"}, "y": {"type": "boolean"}}}}}
SHARED = {"$schema": "http://json-schema.org/draft-07/schema#", "definitions": {"item": ITEM}, "type": "object",
          "additionalProperties": False, "properties": {
              **{f"p{k}": {"$ref": "#/definitions/item"} for k in range(6)},
              "list": {"type": "array", "items": {"$ref": "#/definitions/item"}},
              "either": {"oneOf": [{"$ref": "#/definitions/item"}, {"type": "object", "required": ["tags"]}]},
              "capped": {"allOf": [{"$ref": "#/definitions/item"}], "maxProperties": 1}}}
# Many items of a large automaton: the item is a callee, the count stays in the DFA.
MANY_ITEMS = {"type": "array", "minItems": 2, "maxItems": 200, "items": {
    "type": "object", "required": ["a"], "additionalProperties": False,
    "properties": {"a": {"type": "integer"}, "b": {"type": "string", "maxLength": 40}}}}
# A short count at every position of a bounded array: its copies would pass the inlining
# budget, so its sites keep their calls (a counted loop), while "a"'s count is inlined.
REPEATED_SHORT = {"type": "object", "additionalProperties": False, "properties": {
    "a": {"type": "string", "maxLength": 100},
    "list": {"type": "array", "minItems": 1, "maxItems": 20, "items": {"type": "string", "minLength": 1, "maxLength": 255}}}}
# Past SEPARATOR_CALL_MIN items: the commas between them are calls into one callee.
COUNTED_STRINGS = {"type": "array", "items": {"type": "string", "maxLength": 2}, "minItems": 2, "maxItems": 12}
CHARS = ["a", " ", "é", "😀", "\n", '"', "\\", "\u0001", "ab"]


def nested(depth: int, rng: random.Random):
    """A random JSON value with ``depth`` levels of nested brackets along one path."""
    if depth == 0:
        return rng.choice([None, True, False, 0, -12, 3.5, 1e-7, "", "a\"b", "é😀\n"])
    inner = nested(depth - 1, rng)
    if rng.random() < 0.5:
        return [rng.choice([1, "x", None]), inner] if rng.random() < 0.5 else [inner]
    return {"k": inner, "z": rng.choice([[], {}, 2])} if rng.random() < 0.5 else {"": inner}


def deep_values(seed: int = 0) -> list:
    rng = random.Random(seed)
    return [nested(depth, rng) for depth in (0, 1, 2, 5, 9, 14, 20) for _ in range(3)]


@pytest.mark.parametrize("schema", [FREE, OBJECT_WITH_EXTRAS, AMBIGUOUS, ARRAY_OF_ANY],
                         ids=["free", "object_with_extras", "ambiguous", "array_of_any"])
def test_language_matches_jsonschema_at_any_depth(schema):
    language = schema_to_dfa(schema)
    assert language.callee is not None
    automaton = language.automaton
    values = deep_values()
    values += [{"id": 1, "meta": v} for v in values] + [{"a": v} for v in values] + [[v, v] for v in values]
    values += [{"a": "abc"}, {"a": "abcd"}, {"id": "x"}]
    verdicts = [jsonschema.Draft202012Validator(schema).is_valid(v) for v in values]
    assert any(verdicts) and (schema == FREE or not all(verdicts))  # {} refuses texts only (see below)
    for value, valid in zip(values, verdicts):
        for text in (json.dumps(value, ensure_ascii=False), json.dumps(value, ensure_ascii=False, indent=1)):
            if valid and "\n" + " " * 13 in text:
                continue  # indentation past max_whitespace (12) is refused by design
            assert automaton.matches(text.encode()) == valid, (text[:80], valid)


def test_broken_nesting_is_refused():
    automaton = schema_to_dfa(FREE).automaton
    for text in ('[[[1]]', '[[[1]]]]', '{"a": [1,]}', '[{"a" 1}]', '[[[[[[[[[[]]]]]]]]]}', '{"a": {"b": }}', '[1 2]'):
        assert not automaton.matches(text.encode()), text
    assert automaton.is_prefix(b"[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[{") and not automaton.is_prefix(b"[[[[[[[}")


def test_matcher_accepts_deep_instances_with_eos(load_tokenizer, infos):
    tokenizer, info = load_tokenizer("llama-3"), infos("llama-3")
    compiled = Compiler(info, cache_dir=False).compile_json_schema(OBJECT_WITH_EXTRAS)
    assert isinstance(compiled.engine, TokenPDA) and not compiled.is_regular
    eos = info.eos_token_ids[0]
    for value in deep_values(1):
        text = json.dumps({"id": 7, "meta": value}, ensure_ascii=False)
        matcher = Matcher(compiled)
        for token in tokenizer.encode(text, add_special_tokens=False):
            assert matcher.accept_token(token), text
        assert matcher.is_accepting() and matcher.accept_token(eos), text
    matcher = Matcher(compiled)
    assert matcher.accept_bytes(b'{"id": 1, "meta": [[[[[[[[1]]]]]]]]') and not matcher.is_accepting()
    assert not matcher.accept_bytes(b"}}") and matcher.accept_bytes(b"}") and matcher.is_accepting()


class PushdownOracle:
    """Brute force: every token walked on its own through the Python byte-level automaton."""

    def __init__(self, automaton: PushdownDFA, info) -> None:
        self.automaton = automaton
        self.info = info

    def allowed_ids(self, prefix: bytes, special_ids) -> set[int]:
        state = self.automaton.walk(self.automaton.start, prefix)
        assert state is not None
        allowed = {t for t, data in enumerate(self.info.token_bytes)
                   if data and t not in special_ids and self.automaton.walk(state, data) is not None}
        if self.automaton.is_accepting(state):
            allowed |= set(self.info.eos_token_ids)
        return allowed


# Strings of at most 100 (and 10) words (Github_easy o21053, Github_medium o21142).
WORDS_100 = {"type": "object", "properties": {"q": {"type": "string", "minLength": 1, "maxLength": 5000,
                                                    "pattern": "^$|(^(?:\\S+\\s+){0,99}\\S+$)"}}}
WORDS_10 = {"type": "object", "properties": {"q": {"type": "string", "maxLength": 100,
                                                   "pattern": "^(?:\\S+\\s+){0,9}\\S+$"}}}

WALKS = [
    (FREE, b'[{"a": [[{"b": ', 1),
    (FREE, b"[1, [2, [3, [4, [5, [6, [7, [8, [9, [10, 1", 2),
    (OBJECT_WITH_EXTRAS, b'{"id": 1, "meta": {"x": [[["', 3),
    (AMBIGUOUS, b'{"a": ', 4),
    (ARRAY_OF_ANY, b"[12", 5),
    (STRINGS_WITH_EXTRAS, b'{"s": "abcdefghijklmnopqrstuvwxyz0123456', 6),
    (STRINGS_WITH_EXTRAS, b'{"s": "", "p": "a', 7),
    # recursive definitions: calls into their own callees, several frames deep
    (TREE, b'{"v": 1, "kids": [{"v": 2, "kids": [{"v": 3, "kids": [{"v": 4, "kids": [{"v": 5, "kids": [', 11),
    (ROOT_RECURSION, b'{"a": {"b": {"list": [1, {"c": {"list": [{"d": ', 12),
    (MUTUAL, b'{"fn": "a", "args": [{"fn": "b", "args": [1, {"fn": "c", "args": [{"fn": "de', 13),
    # recursion through anyOf branches that are references
    (OPTIONAL_CHAIN, b'{"v": 1, "next": {"v": 2, "next": {"v": 3, "next": {"v": 4, "next": {"v": 5, "next": ', 19),
    (TYPE_UNION, b'{"type": "map", "values": [{"type": "record", "fields": [{"name": "a", "type": {"type": "array", '
                 b'"items": {"type": "map", "values": {"type": "', 20),
    # an eleventh recursive definition: wide calls, several frames deep
    (WIDE_RECURSION, b'{"p11": {"v": 1, "next": {"v": 2, "next": {"v": 3, "next": {"v": 4, "next": {"v": 5, "next": {"v', 18),
    # array items as a callee, one item short of maxItems
    (MANY_ITEMS, b"[" + b'{"a": 1}, ' * 199 + b'{"a": 2, "b": "x', 15),
    # a short count past the inlining budget: inside its counted loop, and near its bound
    (REPEATED_SHORT, b'{"a": "x", "list": ["' + b'y", "' * 19 + b"ab", 21),
    (REPEATED_SHORT, b'{"list": ["y", "' + b"z" * 236, 22),
    # a JSON text inside a string (draft 7 application/json content): a callee whose characters are escaped
    (JSON_TEXT, b'{"doc": "{\\"a\\": [1, {\\"b\\": [[\\"x\\\\n', 16),
    (JSON_TEXT, b'{"doc": " [1e', 17),
    # a shared definition: inside its callee, called from an array
    (SHARED, b'{"p0": {"id": 7}, "list": [{"id": 1, "tags": ["ab"]}, {"id": 2, "meta": {"x": 1', 14),
    # words counted by a pattern under a long maxLength: far from the word bound (spaces
    # alive a few bytes ahead, not forever), and a word or two from it
    (WORDS_100, b'{"q": "one two three', 23),
    (WORDS_10, b'{"q": "w1 w2 w3 w4 w5 w6 w7 w8 w', 24),
    (WORDS_10, b'{"q": "w1 w2 w3 w4 w5 w6', 25),
    # a counted array's comma as a call: inside its whitespace, one item short of the
    # bound, and at the bound (only the closing bracket is left)
    (COUNTED_STRINGS, b'["ab" , \n', 26),
    (COUNTED_STRINGS, b'["a"' + b', "b"' * 10 + b' ', 27),
    (COUNTED_STRINGS, b'["a"' + b',"b"' * 11, 28),
]


@pytest.mark.parametrize("tokenizer", ["llama-3", "llama-2"])
@pytest.mark.parametrize("schema,start,seed", WALKS, ids=[f"walk{seed}" for _, _, seed in WALKS])
def test_masks_equal_brute_force(infos, tokenizer, schema, start, seed):
    info = infos(tokenizer)
    compiled = Compiler(info, cache_dir=False).compile_json_schema(schema)
    oracle = PushdownOracle(compiled.engine.automaton, info)
    problem = check_masks_along_random_walk(Matcher(compiled), oracle, info, steps=4, seed=seed, start=start)
    assert problem is None, problem


# Free strings read inside calls: a free-form value's string, its key, its array's item,
# and a recursive definition's value, frames deep (constrain.automata.free_strings).
LABELLED_TREE = {"$defs": {"node": {"type": "object", "required": ["label"], "additionalProperties": False, "properties": {
    "label": {"type": "string"}, "kids": {"type": "array", "items": {"$ref": "#/$defs/node"}}}}}, "$ref": "#/$defs/node"}
FREE_STRING_STARTS = [
    (OBJECT_WITH_EXTRAS, b'{"id": 1, "meta": {"x": "'),
    (OBJECT_WITH_EXTRAS, b'{"id": 1, "meta": {"'),
    (OBJECT_WITH_EXTRAS, b'{"id": 1, "meta": [1, "'),
    (LABELLED_TREE, b'{"label": "a", "kids": [{"label": "b", "kids": [{"label": "c"}, {"label": "'),
]


@pytest.mark.parametrize("tokenizer", ["llama-3", "llama-2"])
def test_masks_inside_free_strings_equal_brute_force(infos, tokenizer):
    """Right after a free string's opening quote, several calls deep, the row comes from
    the vocabulary's reading of a free string, and equals every token walked on its own."""
    info = infos(tokenizer)
    for schema, start in FREE_STRING_STARTS:
        compiled = Compiler(info, cache_dir=False).compile_json_schema(schema)
        engine = compiled.engine
        matcher = Matcher(compiled)
        assert matcher.accept_bytes(start), start
        ids = set(bitmask_to_ids(matcher.next_token_mask_words().view(np.int32)).tolist())
        (config,) = matcher._states[-1]
        assert engine._exits[config[-1]] >= 0, start  # the free strings' reading was taken
        assert ids == PushdownOracle(engine.automaton, info).allowed_ids(start, info.special_token_ids), start


@pytest.mark.parametrize("tokenizer", ["llama-3", "llama-2"])
def test_most_wanted_bytes_in_a_token_equal_brute_force(infos, tokenizer):
    """How many frames one token may pop (a row's reach) counts a set's bytes down the
    token trie; per matchable token, counted directly, the most is the same."""
    from constrain.automata.pushdown import _most_bytes_in_a_token
    from constrain.automata.token_trie import token_trie_for

    info = infos(tokenizer)
    trie = token_trie_for(info)
    rng = random.Random(5)
    for chosen in (b"]}", b'"]}0123456789el', bytes(rng.sample(range(256), 40)), b" "):
        wanted = np.zeros(256, dtype=bool)
        wanted[list(chosen)] = True
        most = max(sum(byte in chosen for byte in info.token_bytes[t]) for t in info.matchable_token_ids())
        assert _most_bytes_in_a_token(info, trie, wanted) == most, chosen


def test_rows_keyed_by_reach_equal_rows_of_whole_stacks(infos):
    """A row is memoised by the top ``reach`` frames only; the whole stack gives the same row."""
    info = infos("llama-3")
    compiler = Compiler(info, cache_dir=False)
    engine = compiler.compile_json_schema(FREE).engine
    whole = TokenPDA(engine.automaton, info)
    whole.reach = 1 << 30
    assert engine.reach < 64
    state = engine.automaton.walk(engine.initial_state, b"[" * 70 + b"1")
    for suffix in (b"", b"]", b"]]]]", b', {"a": "x'):
        here = engine.automaton.walk(state, suffix)
        assert np.array_equal(engine.mask_words(here), whole.mask_words(here)), suffix


# Recursion through counted arrays, whose commas are calls: frames of three callees.
LISTED_TREE = {"$defs": {"node": {"type": "object", "additionalProperties": False, "properties": {
    "v": {"type": "integer"}, "kids": {"type": "array", "maxItems": 9, "items": {"$ref": "#/$defs/node"}}}}},
    "$ref": "#/$defs/node"}


def _listed_tree(depth: int, rng: random.Random) -> dict:
    node = {"v": rng.randint(0, 99)}
    if depth:
        node["kids"] = [_listed_tree(depth - 1, rng) for _ in range(rng.randint(1, 3))]
    return node


def test_rows_keyed_by_reach_equal_rows_of_whole_stacks_through_comma_calls(infos):
    """The reach counts only bytes that complete a callee's value (a comma's callee stays
    complete through the whitespace after it, which no longer counts); at every place of
    deep documents, rows keyed by it equal rows of the whole stack."""
    info = infos("llama-3")
    engine = Compiler(info, cache_dir=False).compile_json_schema(LISTED_TREE).engine
    whole = TokenPDA(engine.automaton, info)
    whole.reach = 1 << 30
    assert engine.reach < 40  # the longest run of spaces in a token is 128 bytes
    rng = random.Random(3)
    for separators in ((", ", ": "), (",", ":"), (" ,\n", " :\t")):
        text = json.dumps(_listed_tree(6, rng), separators=separators).encode()
        state = engine.initial_state
        for k, byte in enumerate(text):
            state = engine.automaton.step(state, byte)
            assert state, text[:k + 1]
            if max(len(config) for config in state) > 3 and k % 3 == 0:
                assert np.array_equal(engine.mask_words(state), whole.mask_words(state)), text[:k + 1]


def test_products_expand_calls_to_the_operand_depth():
    """``not``/``oneOf`` operands are products over bytes: their free-form values are expanded."""
    schema = {"oneOf": [{"type": "array"}, {"type": "array", "items": {"type": "integer"}}]}
    language = schema_to_dfa(schema)
    assert language.callee is None and not has_calls(language.dfa)
    assert language.automaton.matches(b'[[["x"]]]') and not language.automaton.matches(b"[1, 2]")
    assert not language.automaton.matches(b"[[[[[1]]]]]")  # deeper than the operand depth (3)
    # Outside the operands the same values nest freely.
    assert schema_to_dfa({"type": "array"}).automaton.matches(b"[[[[[1]]]]]")


def test_expand_calls_equals_the_bounded_embedding():
    from constrain.grammar.json_schema.callees import any_value_callee, any_value_dfa

    bounded = schema_to_dfa(OBJECT_WITH_EXTRAS, JsonSchemaOptions(max_any_depth=2, whitespace="compact")).dfa
    called = schema_to_dfa(OBJECT_WITH_EXTRAS, JsonSchemaOptions(whitespace="compact")).dfa
    expanded = expand_calls(called, any_value_dfa("compact", 2))
    assert difference(expanded, bounded) is None and difference(bounded, expanded) is None  # same language
    for text in (b'{"id":1}', b'{"id":1,"meta":[[1]]}', b'{"id":1,"meta":[[[1]]]}', b'{"id":1,"x":{"y":[]}}'):
        assert expanded.matches(text) == bounded.matches(text), text
    assert not has_calls(any_value_dfa("compact", 2)) and has_calls(any_value_callee("compact"))


def test_expand_calls_replaces_wide_calls_too():
    """A wide call (two bytes: WIDE_CALL and an id) is expanded like a one-byte one: a
    unique array's items may hold a member loop's or another unique array's wide call,
    and inlining them raised IndexError (JsonSchemaStore backportrc, adonisrc)."""
    from constrain.automata.byte_dfa import Automaton, build_byte_dfa
    from constrain.automata.pushdown import WIDE_SYMBOLS, call_marker
    from constrain.grammar.json_schema.trees import alt, lit, seq

    wide, narrow = WIDE_SYMBOLS[3], COUNTED_SYMBOLS[0]
    callees = {wide: build_byte_dfa(alt(lit("ab"), lit("c"))), narrow: build_byte_dfa(lit("n"))}
    called = build_byte_dfa(seq(lit("["), Automaton(call_marker(wide)), lit(","), Automaton(call_marker(narrow)),
                                alt(lit("]"), seq(lit(";"), Automaton(call_marker(wide)), lit("]")))))
    expanded = expand_calls(called, callees)
    inlined = build_byte_dfa(seq(lit("["), alt(lit("ab"), lit("c")), lit(",n"),
                                 alt(lit("]"), seq(lit(";"), alt(lit("ab"), lit("c")), lit("]")))))
    assert not has_calls(expanded)
    assert difference(expanded, inlined) is None and difference(inlined, expanded) is None
    assert expanded.matches(b"[ab,n;c]") and not expanded.matches(b"[ab,n;\xc1\x03]")


# Arrays counted past SEPARATOR_CALL_MIN call one shared "ws , ws" callee between items.
COUNTED_ARRAYS = [
    {"type": "array", "items": {"type": "integer"}, "maxItems": 9},
    {"type": "array", "items": {"type": "string", "maxLength": 2}, "minItems": 2, "maxItems": 12},
    {"type": "array", "prefixItems": [{"const": "x"}], "items": {"type": "boolean"}, "maxItems": 10},
    {"type": "object", "properties": {"a": {"type": "array", "items": {"enum": [1, "b"]}, "maxItems": 8},
                                      "n": {"type": "array", "items": {"type": "array", "items": {"type": "null"},
                                                                       "maxItems": 20}, "minItems": 16}}},
]


def _spaced_json(value, rng: random.Random, too_long: list[bool]) -> str:
    """``value`` in JSON with a random whitespace run at every place between two tokens;
    where ``too_long`` holds True, one run somewhere passes the bound of 12 (then False)."""
    def ws() -> str:
        count = rng.choice([0, 0, 1, 2, 5, 12])
        if too_long[0] and rng.random() < 0.1:
            count, too_long[0] = 13, False
        return "".join(rng.choice(" \t\n\r") for _ in range(count))
    if isinstance(value, list):
        inner = (ws() + "," + ws()).join(_spaced_json(v, rng, too_long) for v in value) if value else ""
        return "[" + ws() + inner + ws() + "]"
    if isinstance(value, dict):
        inner = (ws() + "," + ws()).join(json.dumps(k) + ws() + ":" + ws() + _spaced_json(v, rng, too_long)
                                         for k, v in value.items())
        return "{" + ws() + inner + ws() + "}"
    return json.dumps(value)


def _counted_array_values(schema: dict, rng: random.Random):
    """Random values around ``schema``'s counts: right and wrong lengths, and now and then
    a wrong item."""
    def one(good: list, bad: list):
        return rng.choice(bad if rng.random() < 0.08 else good)

    if schema["type"] == "object":
        return {"a": [one([1, "b"], [2]) for _ in range(rng.randint(6, 9))],
                "n": [[None] * rng.randint(0, 20 + (rng.random() < 0.01))
                      for _ in range(rng.randint(16, 17) - (rng.random() < 0.1))]}
    pick = {"integer": lambda: one([0, -3, 17], ["1"]), "string": lambda: one(["", "ab", "c"], ["abc", 1]),
            "boolean": lambda: one([True, False], [None])}[schema["items"]["type"]]
    head = [one(["x"], ["y"])] if "prefixItems" in schema else []
    return head + [pick() for _ in range(rng.randint(0, schema["maxItems"] + 2))]


@pytest.mark.parametrize("schema", COUNTED_ARRAYS, ids=[str(i) for i in range(len(COUNTED_ARRAYS))])
def test_counted_arrays_calling_their_comma_keep_the_language(schema, monkeypatch):
    """An array counted to SEPARATOR_CALL_MIN items or more calls the comma callee (its
    whitespace runs are bounded there, not copied at every position); its language is
    the one the inline commas give, and what jsonschema and the whitespace bound say."""
    from constrain.grammar.json_schema import callees

    called = schema_to_dfa(schema)
    monkeypatch.setattr(callees, "SEPARATOR_CALL_MIN", 1 << 30)
    inline = schema_to_dfa(schema)
    assert len(called.recursive) == len(inline.recursive) + 1  # the comma's callee
    assert called.dfa.num_states < inline.dfa.num_states
    rng = random.Random(len(json.dumps(schema)))
    validator = jsonschema.Draft202012Validator(schema)
    runs = re.compile(r"[ \t\n\r]{13}")
    verdicts = []
    for _ in range(400):
        value = _counted_array_values(schema, rng)
        text = _spaced_json(value, rng, [rng.random() < 0.3])
        expected = validator.is_valid(value) and not runs.search(text)
        verdicts.append(expected)
        assert called.automaton.matches(text.encode()) == expected == inline.automaton.matches(text.encode()), text
    assert 0.15 < sum(verdicts) / len(verdicts) < 0.85  # both kinds of text, often


def test_integer_max_any_depth_keeps_one_dfa(infos):
    compiler = Compiler(infos("llama-3"), cache_dir=False)
    assert compiler.compile_json_schema(OBJECT_WITH_EXTRAS, max_any_depth=3).is_regular
    assert not compiler.compile_json_schema(OBJECT_WITH_EXTRAS).is_regular
    assert compiler.compile_json_schema({"type": "string"}).is_regular  # no free-form value: no call


def test_forced_bytes_cross_calls(infos):
    compiler = Compiler(infos("llama-3"), cache_dir=False)
    schema = {"type": "object", "properties": {"meta": {}, "n": {"const": "x"}}, "required": ["meta", "n"],
              "additionalProperties": False}
    matcher = Matcher(compiler.compile_json_schema(schema, whitespace="compact"))
    assert matcher.forced_bytes() == b'{"meta":'
    assert matcher.accept_bytes(b'{"meta":[[') and matcher.forced_bytes() == b""
    assert matcher.accept_bytes(b"]]") and matcher.forced_bytes() == b',"n":"x"}'


@pytest.mark.parametrize("schema", [FREE, LONG_TEXT], ids=["any_value", "counted"])
def test_call_bytes_never_call(infos, schema):
    """Llama-2's ``<0xF5>``-``<0xFF>`` byte tokens carry the bytes that mark calls in the table."""
    info = infos("llama-2")
    compiled = Compiler(info, cache_dir=False).compile_json_schema(schema)
    symbols = [t for t, data in enumerate(info.token_bytes) if len(data) == 1 and data[0] in CALL_SYMBOLS]
    assert len(symbols) == len(CALL_SYMBOLS)
    matcher = Matcher(compiled)
    matcher.accept_bytes(b'{"text": ' if schema is LONG_TEXT else b"")
    words = matcher.next_token_mask_words()
    assert words.any() and not any(words[t >> 5] >> (t & 31) & 1 for t in symbols)


def test_disk_cache_round_trip(infos, tmp_path):
    info = infos("llama-3")
    first = Compiler(info, cache_dir=tmp_path).compile_json_schema(OBJECT_WITH_EXTRAS)
    second = Compiler(info, cache_dir=tmp_path).compile_json_schema(OBJECT_WITH_EXTRAS)
    assert isinstance(second.engine, TokenPDA)
    assert np.array_equal(first.engine.automaton.trans, second.engine.automaton.trans)
    for matcher in (Matcher(first), Matcher(second)):
        assert matcher.accept_bytes(b'{"id": 3, "meta": [[[[[{}]]]]]}') and matcher.is_accepting()



# -- long strings: counted callees ---------------------------------------------------------------


def _string_of(length: int, rng: random.Random) -> str:
    return "".join(rng.choice(CHARS[:-1]) for _ in range(length))


def test_long_strings_count_characters_exactly():
    language = schema_to_dfa(LONG_TEXT)
    assert language.counted == (CountedString(3, 32767),) and not language.is_regular
    automaton = language.automaton
    assert automaton.num_states < 1000
    rng = random.Random(0)
    for length in (0, 2, 3, 4, 100, 32700, 32766, 32767, 32768, 32800):
        for tail in ("x", "é", "\n", "😀"):
            value = _string_of(max(length - 1, 0), rng) + (tail if length else "")
            text = json.dumps({"text": value, "n": 1}, ensure_ascii=False).encode()
            assert automaton.matches(text) == (3 <= length <= 32767), (length, tail)
    # The bound is reached: the next character cannot even begin.
    over = json.dumps({"text": "é" * 32768}, ensure_ascii=False).encode()
    assert automaton.is_prefix(over[:-4]) and not automaton.is_prefix(over[:-3])  # a 32768th character begins


@pytest.mark.parametrize("tokenizer", ["llama-3", "llama-2"])
def test_counted_masks_equal_the_eager_count(infos, tokenizer):
    """Rows inside the loop ignore the count: compare every mask with the eagerly counted DFA."""
    info = infos(tokenizer)
    compiler = Compiler(info, cache_dir=False)
    counted = compiler.compile_json_schema(LONG_ENOUGH)
    eager = compiler.compile_json_schema(LONG_ENOUGH, max_any_depth=3)
    assert isinstance(counted.engine, TokenPDA) and counted.engine.automaton.counted and eager.is_regular
    margin = counted.engine.automaton.counted[0].margin
    rng = random.Random(len(info.token_bytes))
    lengths = [0, 1, 2, 3, 50, 600 - margin - 2, 600 - margin, 600 - margin + 1, 590, 598, 599, 600]
    for length in lengths:
        text = json.dumps({"s": _string_of(length, rng)}, ensure_ascii=False).encode()[:-2]
        for cut in (len(text), len(text) - 1, len(text) - 2):
            prefix, after = text[:cut], None
            matchers = [Matcher(counted), Matcher(eager)]
            assert all(m.accept_bytes(prefix) for m in matchers), (length, cut)
            rows = [m.next_token_mask_words() for m in matchers]
            assert np.array_equal(rows[0], rows[1]), (length, cut, prefix[-20:])
            after = [m.accept_bytes(b'", "t": 4}') for m in matchers]
            assert after[0] == after[1] and (after[0] or cut < len(text) or length < 2), (length, cut)


def test_counted_tokens_reach_the_bound(load_tokenizer, infos):
    """Token by token through the loop and the copies after it, to exactly the bound."""
    tokenizer, info = load_tokenizer("llama-3"), infos("llama-3")
    compiled = Compiler(info, cache_dir=False).compile_json_schema(LONG_TEXT)
    eos = info.eos_token_ids[0]
    for value, valid in (("ab" * 16383 + "c", True), ("ab" * 16384, False), ("ab", False), ("é😀\n\"" * 100, True)):
        matcher = Matcher(compiled)
        tokens = tokenizer.encode(json.dumps({"text": value}, ensure_ascii=False), add_special_tokens=False)
        accepted = all(matcher.accept_token(t) for t in tokens) and matcher.accept_token(eos)
        assert accepted == valid, (len(value), valid)


def test_counted_strings_in_products_are_counted_eagerly():
    schema = {"oneOf": [{"type": "string", "maxLength": 700}, {"type": "string", "pattern": "^a"}]}
    language = schema_to_dfa(schema)
    assert language.is_regular and language.counted == ()
    for value, valid in (("b", True), ("a", False), ("b" * 700, True), ("b" * 701, False), ("a" * 701, True)):
        assert language.automaton.matches(json.dumps(value).encode()) == valid, (len(value), valid)


def test_counted_callees_round_trip_the_disk_cache(infos, tmp_path):
    info = infos("llama-3")
    first = Compiler(info, cache_dir=tmp_path).compile_json_schema(LONG_TEXT)
    second = Compiler(info, cache_dir=tmp_path).compile_json_schema(LONG_TEXT)
    assert second.engine.automaton.counted == first.engine.automaton.counted != ()
    matcher = Matcher(second)
    assert matcher.accept_bytes(b'{"text": "' + b"x" * 32767) and matcher.forced_bytes() == b'"'


def test_short_counts_are_inlined_into_one_dfa():
    """Bounds 64 to 511 apart are placeholders inlined after the schema's DFA is built: the
    language stays regular and equal to the eager count's."""
    schema = {"type": "object", "additionalProperties": False, "properties": {
        "a": {"type": "string", "maxLength": 100}, "e": {"type": "string", "minLength": 3, "maxLength": 200},
        "c": {"anyOf": [{"type": "string", "maxLength": 100}, {"type": "integer"}]}}}
    language = schema_to_dfa(schema)
    eager = schema_to_dfa(schema, JsonSchemaOptions(max_any_depth=3)).dfa
    assert language.is_regular and not has_calls(language.dfa)
    assert difference(language.dfa, eager) is None and difference(eager, language.dfa) is None
    # Where a site already reads a quote (an anyOf of two strings), that site keeps its call.
    mixed = {**schema, "properties": {**schema["properties"], "b": {"type": "string", "maxLength": 1000},
                                      "d": {"anyOf": [{"type": "string", "maxLength": 100}, {"pattern": "^x"}]}}}
    language = schema_to_dfa(mixed)
    assert language.counted == (CountedString(0, 100), CountedString(0, 1000))
    # The inlined count (e's) leaves its symbol unused: the others keep theirs, gap and all.
    assert language.counted_symbols == (COUNTED_SYMBOLS[0], COUNTED_SYMBOLS[2])
    automaton, eager = language.automaton, schema_to_dfa(mixed, JsonSchemaOptions(max_any_depth=3)).dfa
    rng = random.Random(2)
    for _ in range(300):
        value = {key: "".join(rng.choice('ax"é') for _ in range(rng.choice([0, 2, 3, 99, 100, 101, 199, 200, 201, 1001])))
                 for key in rng.sample("abcde", rng.randint(0, 5))}
        text = json.dumps(value, ensure_ascii=False).encode()
        assert automaton.matches(text) == eager.matches(text), {k: len(v) for k, v in value.items()}


def test_short_counts_copied_past_the_budget_stay_calls():
    """A short count whose copies would pass ``INLINED_COPY_STATES`` in an automaton keeps
    its calls there (20 positions of ``maxLength: 255``: 71,000 states inlined), and the
    language is still the eager count's, around both bounds and the item count."""
    from constrain.grammar.json_schema import INLINED_COPY_STATES

    language = schema_to_dfa(REPEATED_SHORT)
    assert language.counted == (CountedString(1, 255),) and language.dfa.num_states < INLINED_COPY_STATES
    automaton, eager = language.automaton, schema_to_dfa(REPEATED_SHORT, JsonSchemaOptions(max_any_depth=3)).dfa
    rng = random.Random(3)
    verdicts = []
    for _ in range(200):
        items = ["".join(rng.choice('ax"é') for _ in range(rng.choice([0, 1, 2, 254, 255, 256])))
                 for _ in range(rng.choice([0, 1, 2, 19, 20, 21]))]
        value = {"a": "é" * rng.choice([0, 100, 101]), "list": items}
        text = json.dumps(value, ensure_ascii=False).encode()
        verdicts.append(eager.matches(text))
        assert automaton.matches(text) == verdicts[-1], ({k: len(v) for k, v in value.items()}, list(map(len, items)))
    assert any(verdicts) and not all(verdicts)


# Patterns whose content needs several more characters to end: the copies after the loop
# must outnumber a token's bytes plus those characters.  The second reads escapes and é.
PATTERNS = [r"\.json$", '^[a-c\u00e9"\\n]*z[0-9]{3}$']


def _pattern_value(pattern: str, length: int, rng: random.Random) -> str:
    """A string of ``length`` characters, matching ``pattern`` when long enough (and not always)."""
    tail = ".json" if pattern == PATTERNS[0] else "z" + "".join(rng.choice("0123456789") for _ in range(3))
    body = "".join(rng.choice('abcé"\n' if pattern == PATTERNS[1] else "ab.jsoné") for _ in range(length))
    if length >= len(tail) and rng.random() < 0.7:
        body = body[:length - len(tail)] + tail
    return body


@pytest.mark.parametrize("high", [3000, 300])  # a long count, and one from PATTERN_COUNT
@pytest.mark.parametrize("pattern", PATTERNS)
def test_patterned_strings_are_counted_exactly(pattern, high):
    """Byte by byte against Python's ``re`` and the length bounds, around the loop's exit and the bound."""
    import re

    schema = {"type": "object", "properties": {"s": {"type": "string", "pattern": pattern, "minLength": 2,
                                                     "maxLength": high}}}
    language = schema_to_dfa(schema)
    assert language.counted == (CountedString(2, high, (pattern,)),) and not language.is_regular
    automaton = language.automaton
    rng = random.Random(7)
    for length in (0, 1, 2, 3, 4, 5, 6, 7, 100, *(high + d for d in (-10, -5, -2, -1, 0, 1, 5))):
        for _ in range(6):
            value = _pattern_value(pattern, length, rng)
            expected = bool(re.search(pattern, value)) and 2 <= len(value) <= high
            text = json.dumps({"s": value}, ensure_ascii=False).encode()
            assert automaton.matches(text) == expected, (length, value[-12:])


@pytest.mark.parametrize("patterns, formats",
                         [((r"^(?:\\S+\\s+){0,3}\\S+$",), ()), (PATTERNS[1:], ()), ((), ("date",))])
def test_content_pairs_are_the_reachable_product(patterns, formats):
    """The content's states (numba, ``unit_pairs``) are exactly the (pattern automaton,
    place in a character) pairs a breadth-first search reaches from the start, numbered
    in the order it finds them, each row's new pairs by their (content, unit) order."""
    from constrain.grammar.json_schema.strings import (_content_units, _encoded_char_dfa, _intersect_all,
                                                       _units_to_finish, build_byte_dfa, encode_chars, format_dfa,
                                                       pattern_tree)

    unit = _encoded_char_dfa()
    content = _intersect_all([build_byte_dfa(encode_chars(pattern_tree(p))) for p in patterns]
                             + [format_dfa(f) for f in formats])
    index, pairs, rows = {(content.start, unit.start): 0}, [(content.start, unit.start)], []
    for c, u in pairs:
        moves = {}
        for byte in range(256):
            tc, tu = int(content.trans[c, byte]), int(unit.trans[u, byte])
            if tc >= 0 and tu >= 0:
                moves[byte] = (tc, unit.start if unit.accepting[tu] else tu)
        for pair in sorted(set(moves.values())):
            if pair not in index:
                index[pair] = len(pairs)
                pairs.append(pair)
        rows.append([index[moves[b]] if b in moves else -1 for b in range(256)])
    got_rows, ends, done = _content_units(tuple(patterns), tuple(formats))
    assert got_rows.tolist() == rows
    assert ends.tolist() == [u == unit.start for _, u in pairs]
    assert done.tolist() == [bool(content.accepting[c]) and u == unit.start for c, u in pairs]
    # The most characters any state still needs before the content may end (numba,
    # steps_to_end), against relaxing every move until nothing changes.
    need = [0 if d else len(rows) + 1 for d in done.tolist()]
    changed = True
    while changed:
        changed = False
        for s, row in enumerate(rows):
            best = min([need[t] + int(ends[t]) for t in row if t >= 0] + [need[s]])
            changed |= best < need[s]
            need[s] = best
    assert _units_to_finish(tuple(patterns), tuple(formats)) == max(need)


@pytest.mark.parametrize("tokenizer", ["llama-3", "llama-2"])
@pytest.mark.parametrize("pattern", PATTERNS)
def test_counted_pattern_masks_equal_the_eager_count(infos, tokenizer, pattern):
    """The loop's rows ignore the count: every mask equals the eagerly counted DFA's, in the
    loop, at its exit, and in the copies up to the bound."""
    info = infos(tokenizer)
    compiler = Compiler(info, cache_dir=False)
    schema = {"type": "object", "properties": {"s": {"type": "string", "pattern": pattern, "maxLength": 600}}}
    counted = compiler.compile_json_schema(schema)
    eager = compiler.compile_json_schema(schema, max_any_depth=3)
    assert isinstance(counted.engine, TokenPDA) and eager.is_regular
    (callee,) = counted.engine.automaton.counted
    assert 0 < callee.exit_at <= 600 - callee.margin
    rng = random.Random(len(info.token_bytes))
    exit_at, compared = callee.exit_at, 0
    for length in (0, 1, 4, 5, 50, exit_at - 2, exit_at - 1, exit_at, exit_at + 1, 590, 594, 595, 596, 599, 600):
        value = _pattern_value(pattern, length, rng)
        text = json.dumps({"s": value}, ensure_ascii=False).encode()[:-2]
        for cut in (len(text), len(text) - 1, len(text) - 3):
            matchers = [Matcher(counted), Matcher(eager)]
            alive = [m.accept_bytes(text[:cut]) for m in matchers]
            assert alive[0] == alive[1], (length, cut)
            if not alive[0]:  # e.g. 599 characters without the pattern's ending: no room left
                continue
            compared += 1
            rows = [m.next_token_mask_words() for m in matchers]
            assert np.array_equal(rows[0], rows[1]), (length, cut, text[cut - 20:cut])
            after = [m.accept_bytes(text[cut:] + b'"}') for m in matchers]
            assert after[0] == after[1], (length, cut)
    assert compared >= 30


WORDS = r"^(?:\S+\s+){0,9}\S+$"


def _words(count: int, length: int, rng: random.Random) -> str:
    """``count`` words of letters, dashes and é, ``length`` characters in all (about)."""
    words = ["".join(rng.choice("ab-é") for _ in range(max(1, length // max(count, 1) - 1))) for _ in range(count)]
    return " ".join(words)[:length].rstrip()


def test_word_count_patterns_with_long_tokens_near_the_bound(infos):
    """A word-count pattern (380 content states) is a counted loop sized for 16-byte tokens;
    Llama-3's longer ones (up to 128 bytes) are checked against the count near the bound.
    Every mask equals the eagerly counted DFA's, and a long token that fits far from the
    bound is refused where it would pass it."""
    info = infos("llama-3")
    compiler = Compiler(info, cache_dir=False)
    schema = {"type": "object", "properties": {"s": {"type": "string", "pattern": WORDS, "minLength": 1,
                                                     "maxLength": 250}}}
    counted = compiler.compile_json_schema(schema)
    eager = compiler.compile_json_schema(schema, max_any_depth=3)
    (callee,) = counted.engine.automaton.counted
    assert callee.loops and callee.margin == COUNT_MARGIN < counted.engine.trie.max_depth and eager.is_regular
    rng = random.Random(3)
    compared = 0
    for length in (1, 10, 100, callee.exit_at - 40, callee.exit_at - 5, callee.exit_at, 236, 240, 245, 249, 250):
        for words in (1, 5, 10):
            value = _words(words, length, rng)
            text = json.dumps({"s": value}, ensure_ascii=False).encode()[:-2]
            for cut in (len(text), len(text) - 1):
                matchers = [Matcher(counted), Matcher(eager)]
                alive = [m.accept_bytes(text[:cut]) for m in matchers]
                assert alive[0] == alive[1], (length, words, cut)
                if alive[0]:
                    compared += 1
                    rows = [m.next_token_mask_words() for m in matchers]
                    assert np.array_equal(rows[0], rows[1]), (length, words, cut)
    assert compared >= 40
    dashes = next(t for t, data in enumerate(info.token_bytes) if data == b"-" * 32)  # one 32-byte token
    for length, allowed in ((10, True), (215, True), (218, True), (219, False), (240, False)):
        matcher = Matcher(counted)
        assert matcher.accept_bytes(b'{"s": "' + b"a" * length)
        words = matcher.next_token_mask_words()
        assert bool(words[dashes >> 5] >> (dashes & 31) & 1) == allowed, length


def test_repeated_large_patterned_strings_share_one_eager_callee():
    """A large patterned string closer than PATTERN_COUNT apart, written at several sites, is one
    call into one eager copy (each site used to inline its own 30,000 states)."""
    import re

    item = {"type": "string", "pattern": WORDS, "maxLength": 100}
    schema = {"type": "object", "properties": {"a": {"type": "array", "items": item}, "b": item, "c": dict(item)}}
    language = schema_to_dfa(schema)
    assert language.counted == (CountedString(0, 100, (WORDS,)),) and not language.is_regular
    (callee,) = language.pushdown(LONGEST_TOKEN).counted
    assert not callee.loops and callee.dfa.num_states > 20000 > 50 * language.dfa.num_states
    once = schema_to_dfa({"type": "object", "properties": {"b": item}})  # a single site: copied in place
    assert once.counted == ()
    # Unknown formats are annotations in the scan too; small repeated strings stay in place.
    for other in ({"type": "string", "format": "expose", "maxLength": 100}, {"type": "string", "pattern": "^a+$",
                                                                              "maxLength": 100}):
        assert schema_to_dfa({"properties": {"a": other, "b": dict(other)}}).counted == ()
    rng = random.Random(5)
    automaton = language.automaton
    for _ in range(200):
        values = [_words(rng.choice([1, 3, 10, 11]), rng.choice([5, 40, 99, 100, 101, 120]), rng) for _ in range(3)]
        values[0] += rng.choice(["", " ", "  x"])
        value = {"a": values[:2], "b": values[2]}
        expected = all(re.search(WORDS, v) and len(v) <= 100 for v in values)
        assert automaton.matches(json.dumps(value, ensure_ascii=False).encode()) == expected, value


def test_counted_patterns_in_products_are_counted_eagerly():
    schema = {"properties": {"d": {"type": "string", "pattern": "@", "maxLength": 700}},
              "not": {"properties": {"x": {"type": "integer"}}, "required": ["x"]}}  # a product (not a member group)
    language = schema_to_dfa(schema)
    assert language.counted == ()
    for value, valid in (({"d": "a@b"}, True), ({"d": "a" * 698 + "@b"}, True), ({"d": "a" * 699 + "@b"}, False),
                         ({"d": "ab.co"}, False), ({"x": 1}, False)):
        assert language.automaton.matches(json.dumps(value).encode()) == valid, value


def test_oversized_pattern_counts_are_schema_errors_with_pointers():
    """Too many content states to copy: the eager count's error names the string at emit time;
    a tokenizer with tokens too long for the callee gets one naming it when masks are built."""
    words = {"type": "string", "pattern": r"^(?:\S+\s+){0,49}\S+$", "minLength": 200, "maxLength": 20000}
    with pytest.raises(SchemaError) as info:  # 200 eager copies of 1,900 content states before the loop
        schema_to_dfa({"properties": {"w": words}})
    assert info.value.pointer == "/properties/w" and "maxLength 20000" in str(info.value)
    language = schema_to_dfa({"properties": {"e": {"type": "string", "format": "email", "maxLength": 5000}}})
    assert language.counted == (CountedString(0, 5000, (), ("email",)),)
    assert language.pushdown(4000).counted[0].margin == COUNT_MARGIN  # the loop spans such a token
    with pytest.raises(SchemaError) as info:
        language.pushdown(4990)  # as if a token held 4,990 bytes: the loop cannot span it
    assert info.value.pointer == "/properties/e" and "format 'email'" in str(info.value)
    assert "tokens of 4990 bytes" in str(info.value)


def test_a_call_without_its_callee_is_refused_by_name():
    """A table that calls a symbol no callee was given for must not build: the call
    would read as a dead end, silently shrinking the language."""
    from constrain.automata.pushdown import COUNTED_SYMBOLS, call_marker

    with pytest.raises(ValueError, match="no callee stands for: 0xf5"):
        PushdownDFA(call_marker(COUNTED_SYMBOLS[0]), None)
    with pytest.raises(ValueError, match="no callee stands for: 0xff"):
        PushdownDFA(call_marker(CALL), None)
    assert PushdownDFA(call_marker(CALL), call_marker(0x61)).call_ret[0].tolist() == [1]


# -- recursive definitions: callees of their own ----------------------------------------------------

def _flawed(node: dict, flaw: str | None, typed: str) -> dict:
    """``node`` with ``flaw``: its required "v" missing, an extra member, or a string at ``typed``."""
    if flaw == "missing":
        del node["v"]
    elif flaw == "extra":
        node["x"] = 1
    elif flaw == "type":
        node[typed] = "5"
    return node


def _tree(depth: int, rng: random.Random, flaw: str | None):
    """A random tree with one path ``depth`` deep; ``flaw`` (if any) is put on the deepest node."""
    if depth == 0:
        return _flawed({"v": rng.randint(-5, 5)}, flaw, "v")
    kids = [_tree(depth - 1, rng, flaw)] + [{"v": 1}] * rng.randint(0, 1)
    rng.shuffle(kids)
    return {"v": depth, "kids": kids}


def _root_value(depth: int, rng: random.Random, flaw: str | None):
    if depth == 0:
        return {"list": "x"} if flaw else rng.choice([7, {}, {"list": []}])
    inner = _root_value(depth - 1, rng, flaw)
    return rng.choice([{"a": inner}, {"list": [1, inner]}, {"list": [inner], "b": 2}])


def _expr(depth: int, rng: random.Random, flaw: str | None):
    if depth == 0:
        return {"fn": "f", "args": 1} if flaw else rng.choice([3, {"fn": "x" * rng.choice([0, 5, 2999]), "args": []}])
    return {"fn": rng.choice(["g", "é😀"]), "args": [_expr(depth - 1, rng, flaw)] + [rng.randint(0, 9)] * rng.randint(0, 2)}


def _chain(depth: int, rng: random.Random, flaw: str | None):
    if depth == 0:
        return _flawed({"v": rng.randint(-5, 5), "next": None} if rng.random() < 0.5 else {"v": 0}, flaw, "next")
    return {"v": depth, "next": _chain(depth - 1, rng, flaw)}


def _type(depth: int, rng: random.Random, flaw: str | None):
    """A type expression of TYPE_UNION with one path ``depth`` deep; ``flaw`` at its end."""
    if depth == 0:
        return {"missing": {"type": "array"}, "extra": {"type": "record", "x": 1},
                "type": {"type": "map", "values": "int"}}.get(flaw, rng.choice(["int", "string", {"type": "record"}]))
    inner = _type(depth - 1, rng, flaw)
    kind = rng.choice(["array", "record", "map"] if isinstance(inner, dict) else ["array", "record"])
    if kind == "array":
        return {"type": "array", "items": inner}
    if kind == "record":
        return {"type": "record", "fields": [{"name": "f", "type": "int"}, {"name": "é", "type": inner}][rng.randint(0, 1):]}
    return {"type": "map", "values": inner if inner.get("type") in ("array", "record") else [inner]}


RECURSIVE = {"tree": (TREE, _tree), "root": (ROOT_RECURSION, _root_value), "mutual": (MUTUAL, _expr),
             "optional": (OPTIONAL_CHAIN, _chain), "optional-oneOf": (OPTIONAL_ONE_OF, _chain),
             "union": (TYPE_UNION, _type)}


@pytest.mark.parametrize("name", sorted(RECURSIVE))
def test_recursive_definitions_are_exact_at_any_depth(name):
    """Recursion is a call into the definition's callee: texts far deeper than any unrolled
    copy agree with ``jsonschema``, valid or not (a flaw at the deepest node)."""
    schema, make = RECURSIVE[name]
    language = schema_to_dfa(schema)
    assert language.recursive
    automaton = language.automaton
    validator = jsonschema.validators.validator_for(schema)(schema)
    rng = random.Random(5)
    verdicts = []
    for depth in (0, 1, 4, 9, 17):
        for flaw in (None, "missing", "extra", "type"):
            value = make(depth, rng, flaw)
            valid = validator.is_valid(value)
            verdicts.append(valid)
            assert automaton.matches(json.dumps(value, ensure_ascii=False).encode()) == valid, (depth, flaw, valid)
    assert any(verdicts) and not all(verdicts)


def test_recursive_definitions_past_the_narrow_call_symbols_take_wide_ones(infos):
    """Ten one-byte call symbols serve shared and recursive definitions; an eleventh
    recursive definition was unrolled max_recursion deep, refusing valid values nested
    deeper (silently).  It takes a wide symbol instead: exact at any depth, and a
    matcher on Llama-3 reads a deep value through the wide calls to EOS."""
    from constrain.automata.pushdown import WIDE_SYMBOLS

    schema = WIDE_RECURSION
    language = schema_to_dfa(schema)
    assert len(language.recursive) == 12 and sum(s in WIDE_SYMBOLS for s in language.recursive) == 2
    validator = jsonschema.Draft202012Validator(schema)
    for depth in (0, 3, 7, 12):
        chain = {"v": 0}
        for _ in range(depth):
            chain = {"v": 1, "next": chain}
        for value in ({"p11": chain}, {"p0": chain, "p11": chain}, {"p11": {"next": chain, "v": "x"}}):
            text = json.dumps(value)
            assert language.automaton.matches(text.encode()) == validator.is_valid(value), text
    matcher = Matcher(Compiler(infos("llama-3"), cache_dir=False).compile_json_schema(schema))
    assert matcher.accept_bytes(json.dumps({"p10": chain, "p11": chain}).encode())
    assert matcher.is_accepting()


def test_recursive_definitions_are_calls_from_their_first_reference():
    """A definition on a reference cycle is a callee at its first reference, not built in
    place until some definition comes back: with many mutually recursive ones (CWL's
    types, Github_hard o69207) the paths before the first return were exponentially
    many (a compile timeout).  Here the schema's own automaton holds no copy of it."""
    node = {"type": "object", "properties": {"v": {"type": "integer"}, "name": {"type": "string", "maxLength": 5},
                                             "kids": {"type": "array", "items": {"$ref": "#/$defs/node"}}},
            "required": ["v"], "additionalProperties": False}
    schema = {"$defs": {"node": node}, "type": "object", "additionalProperties": False,
              "properties": {"a": {"$ref": "#/$defs/node"}, "b": {"$ref": "#/$defs/node"}}}
    language = schema_to_dfa(schema)
    (body,) = language.recursive.values()
    assert language.dfa.num_states < body.num_states
    validator = jsonschema.Draft202012Validator(schema)
    leaf = {"v": 1, "name": "é"}
    for value in ({}, {"a": leaf}, {"a": {"v": 2, "kids": [leaf, {"v": 3, "kids": [leaf]}]}, "b": leaf},
                  {"b": {"v": 2, "kids": [{"v": "x"}]}}, {"a": {"kids": []}}, {"a": leaf, "c": 1}):
        assert language.automaton.matches(json.dumps(value, ensure_ascii=False).encode()) == validator.is_valid(value)


def test_recursion_merged_with_sibling_keywords_is_unrolled_and_says_so():
    """A recursive reference in an anyOf beside other keywords is merged into the record
    (no callee of its own) and unrolled ``max_recursion`` deep: never silently.  A note
    names the definition, and below the bound the language agrees with jsonschema."""
    schema = {"$defs": {"n": {"type": "object", "properties": {
        "c": {"type": ["object", "null"], "anyOf": [{"$ref": "#/$defs/n"}, {"type": "null"}]}}}}, "$ref": "#/$defs/n"}
    language = schema_to_dfa(schema)
    assert any(note.startswith("#/$defs/n: recursion merged with sibling keywords is unrolled 3 levels")
               for note in language.notes), language.notes
    validator = jsonschema.Draft202012Validator(schema)
    value = None
    for depth in range(6):
        value = {"c": value}  # valid at every depth; kept to the bound
        assert validator.is_valid(value) and language.automaton.matches(json.dumps(value).encode()) == (depth < 3)
        for invalid in ({"c": value | {"c": 1}}, {"c": [value]}):
            assert not validator.is_valid(invalid) and not language.automaton.matches(json.dumps(invalid).encode())
    assert not schema_to_dfa(OPTIONAL_CHAIN).notes  # a branch that is only a reference: a call, exact


def test_more_objects_than_wide_symbols_compile_to_the_schema_language():
    """Wide symbols are ``WIDE_CALL`` and an id byte; an id that is itself a mark (0xC0, a
    polarity cut; 0xC1; 0xF5-0xFF, one-byte calls) was read as that mark, so past 192 wide
    symbols a schema compiled to calls nobody made or to a cut that "escaped a product"
    (JsonSchemaStore web-types).  200 objects that each want a member loop: the first 192
    get one, the rest are any-order graphs, and the language is the schema's."""
    from constrain.automata.dfa_ops import ANY_SUFFIX
    from constrain.automata.pushdown import WIDE_SYMBOLS

    assert max(symbol & 0xFF for symbol in WIDE_SYMBOLS) < ANY_SUFFIX
    schema = {"type": "object", "additionalProperties": False, "properties": {
        f"p{i}": {"type": "object", "properties": {"a": {"type": "integer", "minimum": i}, "b": {"type": "string"}},
                  "required": ["a"], "additionalProperties": False} for i in range(200)}}
    language = schema_to_dfa(schema, JsonSchemaOptions(property_order="any"))
    validator = jsonschema.Draft202012Validator(schema)
    for value in ({"p0": {"a": 0}, "p191": {"b": "x", "a": 191}, "p192": {"a": 192}, "p199": {"b": "", "a": 300}},
                  {"p193": {"a": 5}}, {"p194": {"b": "x"}}, {"p0": {"a": -1}}, {"p198": {"b": "y", "a": 198, "c": 1}}):
        text = json.dumps(value).encode()
        assert language.automaton.matches(text) == validator.is_valid(value), value


def test_recursion_without_a_finite_value_reads_nothing():
    """A definition that must always recur has no value: its calls are dead ends, which masks
    must never offer (a model would be stuck), so they are removed, and a schema left
    with nothing is unsatisfiable."""
    endless = {"type": "object", "required": ["next"], "properties": {"next": {"$ref": "#"}}}
    assert schema_to_dfa(endless).notes[-1] == UNSATISFIABLE
    either = {"$defs": {"chain": endless | {"properties": {"next": {"$ref": "#/$defs/chain"}}}},
              "anyOf": [{"type": "null"}, {"$ref": "#/$defs/chain"}]}
    automaton = schema_to_dfa(either).automaton
    assert automaton.matches(b"null") and not automaton.is_prefix(b"{")


def test_recursion_inside_a_product_operand_is_cut_on_the_safe_side():
    """``oneOf`` branches that overlap are products over bytes: recursion inside them is
    unrolled to ``max_recursion`` levels.  Below that, the branch kept refuses deeper
    values and the branch taken away takes any: a deep tree that meets both branches is
    refused, and the shallow values are exact."""
    schema = {"$defs": TREE["$defs"], "oneOf": [{"$ref": "#/$defs/node"}, {"type": "object", "properties": {"v": {"const": 0}}}]}
    language = schema_to_dfa(schema)
    assert not language.notes
    automaton = language.automaton
    assert automaton.matches(json.dumps(_tree(1, random.Random(0), None)).encode())
    assert not automaton.matches(b'{"v": 0}')  # in both branches
    both = {"v": 0, "kids": [{"v": 2, "kids": [{"v": 3, "kids": [{"v": 4, "kids": [{"v": 5}]}]}]}]}
    assert not automaton.matches(json.dumps(both).encode())
    deep = {"v": 1, "kids": [{"v": 2, "kids": [{"v": 3, "kids": [{"v": 4, "kids": [{"v": 5}]}]}]}]}
    assert schema_to_dfa(TREE).automaton.matches(json.dumps(deep).encode())  # outside products: exact at any depth


def _item(rng: random.Random, flaw: str | None):
    item = {"id": rng.randint(0, 999), "tags": ["x", "é😀"][:rng.randint(0, 2)], "meta": {"x": 1.5, "y": True}}
    if flaw == "extra":
        item["meta"]["z"] = 1
    elif flaw == "range":
        item["id"] = 1000
    elif flaw == "missing":
        del item["id"]
    return item


def _shared_value(rng: random.Random, flaw: str | None, where: str):
    value = {f"p{k}": _item(rng, None) for k in range(rng.randint(0, 6))}
    value["list"] = [_item(rng, None) for _ in range(rng.randint(0, 3))]
    value["either"] = rng.choice([_item(rng, None), {"tags": "not an item"}, {"id": 3, "tags": []}])
    value["capped"] = rng.choice([{}, {"id": 4}])
    if flaw:
        if where == "list":
            value["list"].append(_item(rng, flaw))
        else:
            value[where] = _item(rng, flaw)
    return value


def test_shared_definitions_are_callees_and_exact(monkeypatch):
    """A definition referenced from many places is one callee, called from each site (not
    where a product needs bytes), and the language is the same as with a copy per site:
    both agree with ``jsonschema`` on values valid or flawed at any site."""
    shared = schema_to_dfa(SHARED)
    assert shared.recursive and shared.is_regular is False
    monkeypatch.setattr(sharing, "MIN_SAVED", 10**9)
    copied = schema_to_dfa(SHARED)
    assert not copied.recursive and copied.dfa.num_states > shared.dfa.num_states
    validator = jsonschema.validators.validator_for(SHARED)(SHARED)
    rng = random.Random(9)
    verdicts = []
    for flaw in (None, "extra", "range", "missing"):
        for where in ("p0", "p5", "list", "either", "capped"):
            for _ in range(3):
                text = json.dumps(_shared_value(rng, flaw, where), ensure_ascii=False).encode()
                valid = validator.is_valid(json.loads(text))
                verdicts.append(valid)
                assert shared.automaton.matches(text) == copied.automaton.matches(text) == valid, (flaw, where, text)
    assert any(verdicts) and not all(verdicts)


def _items_agree_with_jsonschema(schema: dict, language, wrap=lambda items: items) -> None:
    """Arrays of :data:`MANY_ITEMS`' items (``wrap`` puts them where ``schema`` has them):
    counts around both bounds and a flawed last item, against ``jsonschema``."""
    validator = jsonschema.validators.validator_for(schema)(schema)
    verdicts = []
    for count in (0, 1, 2, 3, 199, 200, 201):
        for last in ({"a": 2, "b": "é" * 40}, {"a": 2, "b": "é" * 41}, {"b": "x"}, {"a": 1, "c": 0}):
            value = wrap([{"a": k} for k in range(count - 1)] + [last] * (count > 0))
            valid = validator.is_valid(value)
            verdicts.append(valid)
            assert language.automaton.matches(json.dumps(value, ensure_ascii=False).encode()) == valid, (count, last)
    assert any(verdicts) and not all(verdicts)


def _item_callee(language) -> tuple[int, ByteDFA]:
    """The symbol and body of an array item's callee (beside the callee of its commas)."""
    (found,) = ((symbol, body) for symbol, body in language.recursive.items() if not body.matches(b","))
    return found


def test_many_items_of_a_large_automaton_are_calls():
    """``maxItems: 200`` of an object with a 40-character string would be 200 copies of
    the object's automaton; the item is one callee and each copy one call, and counts
    around both bounds and a flawed last item agree with ``jsonschema``."""
    language = schema_to_dfa(MANY_ITEMS)
    _, body = _item_callee(language)
    assert language.dfa.num_states < 200 * body.num_states // 10  # a call per position, not a copy
    _items_agree_with_jsonschema(MANY_ITEMS, language)


def test_many_required_items_of_a_large_automaton_are_calls():
    """``minItems: 200`` with no ``maxItems`` copies the item 200 times too (Github_easy
    o12622's ``minItems: 600`` of objects built for 0.4 s): the item is one callee, and
    counts around the bound agree with ``jsonschema``."""
    schema = {key: value for key, value in MANY_ITEMS.items() if key != "maxItems"} | {"minItems": 200}
    language = schema_to_dfa(schema)
    _, body = _item_callee(language)
    assert language.dfa.num_states < 200 * body.num_states // 10
    _items_agree_with_jsonschema(schema, language)


def test_many_items_past_the_narrow_call_symbols_take_a_wide_one(infos):
    """Long strings beside the array hold the narrow symbols: the item was then copied
    once per position (Github_medium o9906: 100 copies of a 2,726-state array, past the
    state limit).  It takes a wide symbol instead, and stays exact."""
    from constrain.automata.pushdown import WIDE_SYMBOLS

    strings = {f"s{k}": {"type": "string", "maxLength": 1000 + k} for k in range(len(COUNTED_SYMBOLS) - 1)}
    schema = {"type": "object", "properties": {**strings, "items": MANY_ITEMS}, "required": ["items"],
              "additionalProperties": False}
    language = schema_to_dfa(schema)
    symbol, body = _item_callee(language)
    assert symbol in WIDE_SYMBOLS and language.dfa.num_states < 200 * body.num_states // 10
    _items_agree_with_jsonschema(schema, language, lambda items: {"s0": "x", "items": items})
    matcher = Matcher(Compiler(infos("llama-3"), cache_dir=False).compile_json_schema(schema))
    value = {"s8": "é" * 30, "items": [{"a": 1, "b": "x"}] * 150}
    assert matcher.accept_bytes(json.dumps(value, ensure_ascii=False).encode())
    assert matcher.is_accepting()


def test_counted_symbols_with_a_gap_round_trip_the_disk_cache(load_tokenizer, infos, tmp_path):
    """Counts called on symbols with a gap between them (an inlined count's) read the
    same texts token by token after a disk-cache load as after the compile."""
    info = infos("llama-3")
    schema = {"type": "object", "additionalProperties": False, "required": ["b", "d"], "properties": {
        "a": {"type": "string", "maxLength": 100}, "e": {"type": "string", "maxLength": 200},
        "b": {"type": "string", "maxLength": 1000},
        "d": {"anyOf": [{"type": "string", "maxLength": 100}, {"pattern": "^x"}]}}}
    first = Compiler(info, cache_dir=tmp_path).compile_json_schema(schema)
    second = Compiler(info, cache_dir=tmp_path).compile_json_schema(schema)
    one, two = first.engine.automaton, second.engine.automaton
    assert np.array_equal(one.trans, two.trans) and np.array_equal(one.call_ret, two.call_ret)
    assert one.counted == two.counted and len(one.counted) == 2
    for value, valid in (({"e": "z" * 200, "b": "x" * 1000, "d": "y" * 100}, True), ({"b": "x" * 1001, "d": ""}, False),
                         ({"b": "", "d": "y" * 101}, False), ({"b": "", "d": 5}, True)):
        tokens = load_tokenizer("llama-3").encode(json.dumps(value, ensure_ascii=False), add_special_tokens=False)
        for compiled in (first, second):
            matcher = Matcher(compiled)
            assert (all(matcher.accept_token(t) for t in tokens) and matcher.is_accepting()) == valid, value


def test_recursive_callees_round_trip_the_disk_cache(infos, tmp_path):
    info = infos("llama-3")
    first = Compiler(info, cache_dir=tmp_path).compile_json_schema(MUTUAL)
    second = Compiler(info, cache_dir=tmp_path).compile_json_schema(MUTUAL)
    one, two = first.engine.automaton, second.engine.automaton
    assert one.recursive.keys() == two.recursive.keys() != set()
    assert np.array_equal(one.trans, two.trans) and one.counted == two.counted != ()
    text = json.dumps(_expr(12, random.Random(3), None), ensure_ascii=False).encode()
    for compiled in (first, second):
        matcher = Matcher(compiled)
        assert matcher.accept_bytes(text) and matcher.is_accepting()


def test_sharing_picks_the_definitions_that_save_most():
    """Symbols go to the definitions whose callee saves most copies times size, counted again
    after each choice (a chosen definition's inner references are one copy each); a
    recursive definition is never a shared one (recursion has its own callees)."""
    small = {"type": "object", "properties": {f"s{k}": {"type": "integer"} for k in range(8)}}
    big = {"type": "object", "properties": {f"f{k}": {"type": "object", "properties": {"a": {"$ref": "#/$defs/small"}}}
                                            for k in range(10)}}
    loop = {"type": "array", "items": {"$ref": "#/$defs/loop"}}
    schema = {"$defs": {"small": small, "big": big, "loop": loop},
              "properties": {**{name: {"$ref": "#/$defs/big"} for name in "abc"},
                             **{name: {"$ref": "#/$defs/loop"} for name in "de"}}}
    doc = SchemaDocument(schema)

    def key(loc):
        return (loc.key,)

    names = {(doc.root_loc.child("$defs", name).key,): name for name in ("small", "big", "loop")}
    graph = sharing.scan_references(doc, key)
    assert {names[k] for k in sharing.shared_definitions(graph, 1)} == {"small"}  # 30 copies of 10 objects
    assert {names[k] for k in sharing.shared_definitions(graph, 5)} == {"small", "big"}
    assert sharing.shared_definitions(graph, 0) == set()
    # The recursive one is a callee from its first reference instead.
    assert {names[k] for k in sharing.recursive_definitions(graph)} == {"loop"}


def test_closures_are_remembered_and_bounded(monkeypatch):
    """A closure read again is the one computed (a reader steps a state by many bytes), and
    the memo starts afresh past its bound (MAX_CLOSURES, set when the automaton is made)
    without changing what closures are."""
    automaton = schema_to_dfa({"type": "array", "items": {}}).automaton
    state = automaton.walk(automaton.start, b"[[1")
    closed = automaton.closure(state)
    assert automaton.closure(state) is closed and len(closed) > len(state)
    assert sorted(closed) == sorted(set(automaton._closure(state)))
    monkeypatch.setattr(automaton._closures, "limit", 1)
    assert automaton.walk(automaton.start, b'[[{"a":[') is not None  # a closure per step
    assert len(automaton._closures) <= 1 and automaton.closure(state) == closed
