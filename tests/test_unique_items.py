"""``uniqueItems`` over strings that can always go on: kept distinct by the matcher.

Texts are judged against ``jsonschema`` (arrays of up to four items from a pool with
strings ``json.dumps`` escapes), masks against a brute-force oracle over
the whole Llama-3 vocabulary: the array's structure by the ``regex`` module's
partial matching, the distinct items by decoding the strings the prefix completes
(independent of the matcher's textual tracker).
"""

from __future__ import annotations

import itertools
import json

import jsonschema
import pytest

from constrain import Compiler, Matcher, SchemaError
from constrain.automata.unique_items import GOES_ON, MANY_VALUES, UniqueItemsTokenPDA, string_values
from constrain.automata.byte_dfa import regex_to_dfa
from constrain.automata.member_sets import MemberSetTokenPDA
from constrain.grammar.json_schema import JsonSchemaOptions, schema_to_dfa
from constrain.testing import RegexOracle, check_masks_along_random_walk

TAGS = {"type": "array", "items": {"type": "string"}, "uniqueItems": True}

SCHEMAS = {
    "strings": TAGS,
    "bounded": {**TAGS, "minItems": 2, "maxItems": 3},
    "minLength": {"type": "array", "items": {"type": "string", "minLength": 1}, "uniqueItems": True},
    "pattern": {"type": "array", "items": {"type": "string", "pattern": "^[a-c]+$"}, "uniqueItems": True},
    "in objects": {"type": "object", "properties": {
        "tags": TAGS, "more": {"type": "array", "items": {"type": "object", "properties": {"tags": TAGS}}}}},
    "shared definition": {"$defs": {"tags": TAGS}, "type": "object",
                          "properties": {"a": {"$ref": "#/$defs/tags"}, "b": {"$ref": "#/$defs/tags"}}},
    # Either branch may read the array: a repeat is refused by one branch only.
    "anyOf with a plain array": {"anyOf": [TAGS, {"type": "array", "items": {"type": "string", "maxLength": 1}}]},
    "nested arrays": {"type": "array", "items": TAGS},
    # Finite rests: a look-ahead over the strings written decides.
    "enum of ten": {"type": "array", "items": {"enum": ["a", "b", "ab", "", "é", 'q"', "\n", "x", "y", "z"]},
                    "uniqueItems": True},
    "maxLength": {"type": "array", "items": {"type": "string", "maxLength": 2}, "uniqueItems": True, "minItems": 1},
}

#: Strings json.dumps writes with escapes too (the language spells each string one way).
POOL = ["a", "b", "ab", "", "é", 'q"', "\n"]


def _candidates(schema):
    """Arrays of up to four pooled strings, wrapped as the schema nests them."""
    arrays = [list(items) for n in range(5) for items in itertools.product(POOL, repeat=n) if n < 4 or len(set(items)) < 3]
    if "properties" in schema:
        names = list(schema["properties"])
        values = [{names[0]: items} for items in arrays]
        values += [{names[-1]: [{"tags": items}] if names[-1] == "more" else items} for items in arrays[::3]]
        return values
    if schema.get("items") is TAGS:
        return [[items, ["a"]] for items in arrays[::2]] + [[["a"], ["a"]]]
    return arrays


@pytest.mark.parametrize("name", sorted(SCHEMAS))
def test_texts_are_accepted_exactly_when_the_items_are_distinct(name):
    schema = SCHEMAS[name]
    language = schema_to_dfa(schema)
    assert language.unique, "the array should be a unique callee"
    automaton = language.automaton
    verdicts = {True: 0, False: 0}
    validator = jsonschema.Draft202012Validator(schema)
    for value in _candidates(schema):
        want = validator.is_valid(value)
        text = json.dumps(value, ensure_ascii=False)
        assert automaton.matches(text.encode()) == want, (text, want)
        verdicts[want] += 1
    assert verdicts[True] >= 16 and verdicts[False] > 50


def test_an_array_past_the_narrow_call_symbols_takes_a_wide_one(llama3_compiler, infos):
    """Shared and recursive definitions may take all ten narrow call symbols
    (JsonSchemaStore jsconfig, project-1.0.0-rc2): the array of distinct strings then
    takes a wide one, as member loops do, where it was refused; exact on texts, and
    the token closing a repeat is masked."""
    from constrain.automata.pushdown import WIDE_SYMBOLS

    defs = {f"d{i}": {"type": "object", "properties": {f"k{j}": {"type": "integer"} for j in range(25)}} for i in range(8)}
    defs.update({f"r{i}": {"type": "object", "properties": {"next": {"$ref": f"#/$defs/r{i}"}}} for i in range(2)})
    schema = {"$defs": defs, "type": "object",
              "properties": {**{f"{c}{d}": {"$ref": f"#/$defs/{d}"} for c in "pqs" for d in defs}, "tags": TAGS}}
    language = schema_to_dfa(schema)
    assert list(language.unique) == [WIDE_SYMBOLS[0]] and len(language.recursive) == 11
    validator = jsonschema.Draft202012Validator(schema)
    for items in _candidates(TAGS)[::5]:
        for value in ({"tags": items}, {"pd0": {"k1": 1}, "tags": items}):
            text = json.dumps(value, ensure_ascii=False)
            assert language.automaton.matches(text.encode()) == validator.is_valid(value), text
    matcher = Matcher(llama3_compiler.compile_json_schema(schema))
    assert isinstance(matcher.compiled.engine, UniqueItemsTokenPDA)
    assert matcher.accept_bytes('{"tags": ["hello", "world", "hello')
    words = matcher.next_token_mask_words()
    ids = {data: token for token, data in enumerate(infos("llama-3").token_bytes)}
    for data, allowed in ((b'"', False), (b'"]', False), (b'!"', True)):
        assert bool(words[ids[data] >> 5] >> (ids[data] & 31) & 1) == allowed, data


def test_strict_mode_still_refuses_what_the_matcher_cannot_keep_distinct():
    numbers = {"type": "array", "items": {"type": "number"}, "uniqueItems": True}  # 1, 1.0 and 1e0 are one value
    mixed = {"type": "array", "items": {"type": ["string", "number"]}, "uniqueItems": True}
    too_few = {"type": "array", "items": {"type": "string", "pattern": "^[a-i]$"}, "uniqueItems": True, "minItems": 10}
    under_not = {"not": {"type": "array", "items": {"type": "string"}, "uniqueItems": True}}
    # Items that may be an object: in any order the object is a member loop's wide call,
    # which the items' check inlined (an IndexError, JsonSchemaStore adonisrc).
    objects = {"type": "object", "properties": {"choices": {"type": "array", "uniqueItems": True, "items": {"oneOf": [
        {"type": "string"}, {"type": "object", "properties": {"name": {"type": "string"}, "checked": {"type": "boolean"}},
                             "required": ["name", "checked"], "additionalProperties": False}]}}}}
    for schema in (numbers, mixed, too_few, under_not, objects):
        for order in ("schema", "any"):
            with pytest.raises(SchemaError, match="uniqueItems"):
                schema_to_dfa(schema, JsonSchemaOptions(property_order=order))
    relaxed = schema_to_dfa(numbers, JsonSchemaOptions(strict=False))
    assert relaxed.automaton.matches(b'[1, 1]') and not relaxed.unique


@pytest.mark.parametrize("pattern, values", [
    ('"([a-z]|\\\\n)*"', GOES_ON),
    ('"[a-z]+"', GOES_ON),
    ('"[a-z]+0"', MANY_VALUES),  # after 0 only the quote
    ('"[a-c]{0,2}"', 13),
    ('"a*"|"b"', MANY_VALUES),  # "b then only the quote
    ('"a"*', None),  # not one string
    ('"a"|1', None),
])
def test_string_values_count_what_the_look_ahead_needs(pattern, values):
    assert string_values(regex_to_dfa(pattern)) == values


@pytest.mark.parametrize("pattern", ['"([a-z]|\\\\n)*"', '"a\\\\"?b"x', '"[a-c]{0,2}"', '"(ab)+c"', '"x(y*z|w)"',
                                     '"(\\\\\\\\|[^"\\\\])*"|"[0-9]{2}"'])
def test_strings_that_go_on_forever_are_found_from_every_point(pattern):
    """``string_loops`` (numba) against a Python search: from a pair inside the string,
    some path never closes it exactly when a cycle of moves that stay inside is
    reachable."""
    import numpy as np

    from constrain.automata._dfa_kernels import string_loops

    dfa = regex_to_dfa(pattern)

    def moves(pair):
        state, escaped = pair
        for byte in range(256):
            target = int(dfa.trans[state, byte])
            if target >= 0 and (escaped or byte != ord('"')):
                yield target, int(byte == ord("\\") and not escaped)

    def reachable(pair):
        seen, todo = {pair}, [pair]
        while todo:
            for nxt in moves(todo.pop()):
                if nxt not in seen:
                    seen.add(nxt)
                    todo.append(nxt)
        return seen

    def on_a_cycle(pair):
        return any(pair in reachable(nxt) for nxt in moves(pair))

    start, n = int(dfa.trans[dfa.start, ord('"')]), dfa.num_states
    local = np.full(2 * n, -1, dtype=np.int64)
    for origin in sorted(reachable((start, 0))):
        pairs, looping = string_loops(dfa.trans, *origin, local)
        found = {(pair % n, int(pair >= n)): bool(loops) for pair, loops in zip(pairs.tolist(), looping.tolist())}
        assert found.keys() == reachable(origin) and (local == -1).all()  # the scratch is clean again
        for pair, loops in found.items():
            assert loops == any(on_a_cycle(p) for p in reachable(pair)), (pattern, pair)


@pytest.mark.parametrize("pattern", ['"(ab|abc|b|ba)"', '"[ab]{0,3}"', '"(a|\\\\")(b|c)?"', '"a[bc]*"'])
def test_a_fresh_string_is_found_exactly(pattern):
    """``StringEnds.fresh`` (is some way on from here a string not written yet?) against
    enumeration, from every point of the string and for every set of written strings
    up to two: the strings of these languages are short, or go on forever, so every
    answer shows within eight bytes of the text so far."""
    import numpy as np

    from constrain.automata.json_strings import StringEnds

    dfa = regex_to_dfa(pattern)
    quote, backslash = ord('"'), ord("\\")

    def moves(state, escaped):
        for byte in np.flatnonzero(dfa.trans[state] >= 0).tolist():
            yield byte, int(dfa.trans[state, byte]), not escaped and byte == backslash

    def strings_on(state, text, escaped, depth):
        """The strings closed within ``depth`` more bytes from (state, text so far)."""
        for byte, target, after in moves(state, escaped):
            if byte == quote and not escaped:
                yield text
            elif depth:
                yield from strings_on(target, text + bytes((byte,)), after, depth - 1)

    points, todo = [], [(int(dfa.trans[dfa.start, quote]), b"", False)]
    while todo:
        point = todo.pop()
        points.append(point)
        state, text, escaped = point
        if len(text) < 4:
            todo += [(t, text + bytes((b,)), a) for b, t, a in moves(state, escaped) if b != quote or escaped]
    every = sorted({s for state, text, escaped in points for s in strings_on(state, text, escaped, 4)})
    ends = StringEnds(dfa.trans)
    for size in range(3):
        for written in map(frozenset, itertools.combinations(every, size)):
            for state, text, escaped in points:
                want = any(s not in written for s in strings_on(state, text, escaped, 8))
                assert ends.fresh(state, text, escaped, written) == want, (pattern, text, written)
                assert ends.fresh(state, text, escaped, written) == want  # memoised: the same answer


class _UniqueStringsOracle(RegexOracle):
    """Compact arrays of distinct strings of ``[a-c]``: the structure by partial matching,
    distinctness by decoding the strings the prefix completes."""

    CHAR = "[a-c]"

    def __init__(self, info):
        item = f'"{self.CHAR}+"'
        super().__init__(f"\\[(?:{item}(?:,{item})*)?\\]", info.token_bytes, info.eos_token_ids)

    def is_viable(self, data: bytes) -> bool:
        if not super().is_viable(data):
            return False
        text = data.decode("utf-8", "ignore")
        parts = [p.rstrip("]") for p in text[1:].split(",")]
        values = [json.loads(p) for p in parts if p.endswith('"') and len(p) > 1]
        return len(values) == len(set(values))


@pytest.fixture(scope="module")
def llama3_compiler(infos):
    return Compiler(infos("llama-3"), cache_dir=False)


@pytest.mark.parametrize("start", [b"", b'["ab","', b'["a","b","a', b'["cab","ca', b'["c","b","ab","'])
def test_masks_are_exact_against_a_brute_force_oracle(llama3_compiler, infos, start):
    schema = {"type": "array", "items": {"type": "string", "pattern": "^[a-c]+$"}, "uniqueItems": True}
    compiled = llama3_compiler.compile_json_schema(schema, whitespace="compact")
    assert isinstance(compiled.engine, UniqueItemsTokenPDA)
    info = infos("llama-3")
    problem = check_masks_along_random_walk(Matcher(compiled), _UniqueStringsOracle(info), info, steps=4,
                                            seed=len(start), start=start)
    assert problem is None, problem


def test_the_closing_quote_of_a_repeat_is_masked_and_refused(llama3_compiler, infos):
    info = infos("llama-3")
    compiled = llama3_compiler.compile_json_schema(TAGS)
    matcher = Matcher(compiled)
    assert matcher.accept_bytes('["hello", "world", "hello')
    ids = {data: token for token, data in enumerate(info.token_bytes)}
    words = matcher.next_token_mask_words()
    for data, allowed in ((b'"', False), (b'",', False), (b'"]', False), (b'!"', True), (b"s", True)):
        token = ids[data]
        assert bool(words[token >> 5] >> (token & 31) & 1) == allowed, data
        assert (Matcher(compiled).accept_bytes('["hello", "world", "hello' + data.decode())) == allowed


class _TenValuesOracle(RegexOracle):
    """Compact arrays of distinct strings ``"ax"`` .. ``"jx"``, judged from the values: the
    strings closed are distinct, an open string can still become one not written, and
    after a comma some value is left."""

    VALUES = [f"{c}x" for c in "abcdefghij"]

    def __init__(self, info):
        item = '"[a-j]x"'
        super().__init__(f"\\[(?:{item}(?:,{item})*)?\\]", info.token_bytes, info.eos_token_ids)

    def is_viable(self, data: bytes) -> bool:
        if not super().is_viable(data):
            return False
        text = data.decode("utf-8", "ignore")[1:].rstrip("]")
        parts = text.split(",")
        closed = [p[1:-1] for p in parts if len(p) > 1 and p.endswith('"')]
        if len(closed) != len(set(closed)):
            return False
        left = [v for v in self.VALUES if v not in closed]
        last = parts[-1]
        if last.startswith('"') and not (len(last) > 1 and last.endswith('"')):
            return any(v.startswith(last[1:]) for v in left)
        return bool(left) or last != ""


TEN = {"type": "array", "items": {"type": "string", "pattern": "^[a-j]x$"}, "uniqueItems": True}
ALL_BUT_ONE = "[" + ",".join(f'"{c}x"' for c in "abcdefghi")


@pytest.mark.parametrize("start", [b'["a', b'["ax","', b'["ax","bx","cx"', (ALL_BUT_ONE + ',"').encode(),
                                   ALL_BUT_ONE.encode(), (ALL_BUT_ONE + ',"jx"').encode(), b'["bx","ax","c'])
def test_finite_items_look_ahead_over_the_strings_written(llama3_compiler, infos, start):
    """Each string has one way to end (``x``, then the quote): the look-ahead must refuse an
    ``a`` once ``"ax"`` is written, a comma once all ten are, and so on."""
    compiled = llama3_compiler.compile_json_schema(TEN, whitespace="compact")
    info = infos("llama-3")
    problem = check_masks_along_random_walk(Matcher(compiled), _TenValuesOracle(info), info, steps=3,
                                            seed=len(start), start=start)
    assert problem is None, problem


def test_finite_items_refuse_dead_ends_byte_by_byte():
    automaton = schema_to_dfa(TEN, JsonSchemaOptions(whitespace="compact")).automaton
    assert automaton.is_prefix(b'["ax","b') and not automaton.is_prefix(b'["ax","a')
    assert automaton.is_prefix((ALL_BUT_ONE + ',"j').encode()) and not automaton.is_prefix((ALL_BUT_ONE + ',"a').encode())
    full = ALL_BUT_ONE + ',"jx"'
    assert automaton.matches((full + "]").encode()) and not automaton.is_prefix((full + ",").encode())


def test_the_per_token_fallback_keeps_the_rows_of_the_configurations(llama3_compiler, infos, monkeypatch):
    """Where the trie walk gives up (too ambiguous), each token is decided by the pushdown
    automaton alone: the rows stay those of the configurations, the tracker applies after."""
    import constrain.automata._kernels as kernels

    prefix = '{"tags": ["hello", "world", "hello'
    expected = Matcher(llama3_compiler.compile_json_schema({"type": "object", "properties": {"tags": TAGS}}))
    assert expected.accept_bytes(prefix)
    monkeypatch.setattr(kernels, "walk_pda", lambda *args: -1)
    compiled = Compiler(infos("llama-3"), cache_dir=False).compile_json_schema({"type": "object", "properties": {"tags": TAGS}})
    matcher = Matcher(compiled)
    assert matcher.accept_bytes(prefix)
    got = matcher.next_token_mask_words()
    assert (got == expected.next_token_mask_words()).all()
    token = infos("llama-3").token_bytes.index(b'"')
    assert not got[token >> 5] >> (token & 31) & 1  # "hello" again


# Other scalars: integers, booleans and null, alone or with strings.
INTEGERS = {"type": "array", "items": {"type": "integer"}, "uniqueItems": True}
MIXED = {"type": "array", "uniqueItems": True, "items": {"anyOf": [
    {"type": "string", "pattern": "^[ab]{1,2}$"}, {"type": "integer", "minimum": -3, "maximum": 12},
    {"type": "boolean"}, {"type": "null"}]}}  # 25 values: more than a regular language keeps apart
SCALAR_SCHEMAS = {
    "integers": INTEGERS,
    "integers, bounded": {**INTEGERS, "items": {"type": "integer", "minimum": 0, "maximum": 20}, "maxItems": 30},
    "strings or null": {"type": "array", "items": {"type": ["string", "null"]}, "uniqueItems": True},
    "booleans, null and integers": {"type": "array", "items": {"type": ["boolean", "null", "integer"]},
                                    "uniqueItems": True, "minItems": 1},
    "mixed, finite": MIXED,
    "in any-order objects": {"type": "object", "properties": {"a": INTEGERS, "b": {"type": "string"}},
                             "required": ["a", "b"]},
}
SCALAR_POOL = [0, 1, -1, 10, 12, 100, True, False, None, "a", "ab", "", "null", "1"]


@pytest.mark.parametrize("name", sorted(SCALAR_SCHEMAS))
@pytest.mark.parametrize("order", ["schema", "any"])
def test_scalar_items_are_accepted_exactly_when_distinct(name, order):
    """Against ``jsonschema``, in the three layouts json.dumps writes (the scalar ends at a
    comma, a bracket or whitespace: each is where a repeat must fail)."""
    schema = SCALAR_SCHEMAS[name]
    language = schema_to_dfa(schema, JsonSchemaOptions(property_order=order))
    assert language.unique, "the array should be a unique callee"
    automaton = language.automaton
    validator = jsonschema.Draft202012Validator(schema)
    verdicts = {True: 0, False: 0}
    arrays = [list(items) for n in range(4) for items in itertools.product(SCALAR_POOL, repeat=n)]
    for items in arrays[::3]:
        value = {"a": items, "b": "x"} if "properties" in schema else items
        want = validator.is_valid(value)
        for text in (json.dumps(value), json.dumps(value, separators=(",", ":")), json.dumps(value, indent=2)):
            assert automaton.matches(text.encode()) == want, (text, want)
        verdicts[want] += 1
    assert verdicts[True] >= 8 and verdicts[False] >= 50, verdicts


def test_item_values_count_scalars_and_strings():
    from constrain.automata.unique_items import item_values

    def values(item):
        return item_values(schema_to_dfa(item, JsonSchemaOptions(whitespace="compact")).dfa)

    assert values({"type": "integer"}) == (MANY_VALUES, True)
    assert values({"type": "integer", "minimum": -3, "maximum": 12}) == (16, True)
    assert values({"type": ["boolean", "null"]}) == (3, True)
    assert values({"type": ["string", "null"]}) == (MANY_VALUES, True)  # null is a finite rest
    assert values(MIXED["items"]) == (25, True)
    assert values({"type": "string"}) == (GOES_ON, False)
    for refused in ({"type": "number"}, {"type": ["integer", "number"]}, {"enum": [1, 2]}, {"type": "object"}):
        assert values(refused) is None, refused  # 1.0 and 1e0 spell 1; objects have members in any order


class _ScalarItemsOracle(RegexOracle):
    """Compact arrays of distinct scalars, judged from the values: the items ended (by a
    comma or the bracket) are distinct, and the one being written can still end as one
    not written.  ``fresh(last, ended)`` says the latter, from the values alone."""

    def __init__(self, info, item: str, fresh):
        super().__init__(f"\\[(?:{item}(?:,{item})*)?\\]", info.token_bytes, info.eos_token_ids)
        self.fresh = fresh

    def is_viable(self, data: bytes) -> bool:
        if not super().is_viable(data):
            return False
        text = data.decode("utf-8", "ignore")[1:]
        parts = text.split(",")
        last = parts.pop()
        if last.endswith("]"):
            parts.append(last[:-1])
            return len(parts) == len(set(parts))
        return len(parts) == len(set(parts)) and self.fresh(last, set(parts))

    def is_complete(self, data: bytes) -> bool:
        return super().is_complete(data) and self.is_viable(data)


def _integers_oracle(info):
    def fresh(last, ended):  # a non-zero beginning has endless ways on; 0 has one
        return last != "0" or "0" not in ended

    return _ScalarItemsOracle(info, "(?:-?[1-9][0-9]*|0)", fresh)


MIXED_VALUES = (['"a"', '"b"', '"aa"', '"ab"', '"ba"', '"bb"'] + [str(n) for n in range(-3, 13)]
                + ["true", "false", "null"])


def _mixed_oracle(info):
    def fresh(last, ended):
        return any(v.startswith(last) and v not in ended for v in MIXED_VALUES)

    return _ScalarItemsOracle(info, '(?:"[ab]{1,2}"|-[1-3]|[0-9]|1[0-2]|true|false|null)', fresh)


ALL_MIXED_BUT_NULL = "[" + ",".join(v for v in MIXED_VALUES if v != "null")


@pytest.mark.parametrize("schema, oracle, start", [
    (INTEGERS, _integers_oracle, b""),
    (INTEGERS, _integers_oracle, b"[0,"),
    (INTEGERS, _integers_oracle, b"[1,10,0,1"),
    (INTEGERS, _integers_oracle, b"[7,-12,-1"),
    (MIXED, _mixed_oracle, b'["a",1'),
    (MIXED, _mixed_oracle, b"[true,fal"),
    (MIXED, _mixed_oracle, b'[1,0,12,-3,"ab","a'),
    (MIXED, _mixed_oracle, ALL_MIXED_BUT_NULL.encode()),
    (MIXED, _mixed_oracle, (ALL_MIXED_BUT_NULL + ",").encode()),
])
def test_scalar_masks_are_exact_against_a_brute_force_oracle(llama3_compiler, infos, schema, oracle, start):
    """Every token of Llama 3 against the values: ``0`` once 0 is written (it cannot go on),
    ``1,`` or ``1]`` after ``[1,``, an ``f`` once false is written, a comma once only one
    value is left, and so on."""
    compiled = llama3_compiler.compile_json_schema(schema, whitespace="compact")
    assert isinstance(compiled.engine, UniqueItemsTokenPDA)
    info = infos("llama-3")
    problem = check_masks_along_random_walk(Matcher(compiled), oracle(info), info, steps=4, seed=len(start),
                                            start=start)
    assert problem is None, problem


#: A unique array beside a plain one: the matcher records the values of the first only.
BESIDE_PLAIN = {"type": "object", "additionalProperties": False, "required": ["u", "v"], "properties": {
    "u": INTEGERS, "v": {"type": "array", "items": {"anyOf": [{"type": "integer"}, {"enum": ["a", "b"]}]}}}}


class _BesidePlainOracle(RegexOracle):
    """``{"u":[distinct integers],"v":[integers or "a"/"b", repeats allowed]}``, compact:
    the structure by partial matching, ``u``'s items as :func:`_integers_oracle` judges
    them, ``v``'s by nothing but the structure."""

    def __init__(self, info):
        item = "(?:-?[1-9][0-9]*|0)"
        array = f"\\[(?:{item}(?:,{item})*)?\\]"
        plain = '(?:-?[1-9][0-9]*|0|"a"|"b")'
        super().__init__(f'\\{{"u":{array},"v":\\[(?:{plain}(?:,{plain})*)?\\]\\}}', info.token_bytes,
                         info.eos_token_ids)
        self.unique = _integers_oracle(info)

    def is_viable(self, data: bytes) -> bool:
        if not super().is_viable(data):
            return False
        items = data[len(b'{"u":'):]
        return not items or self.unique.is_viable(items[:items.index(b"]") + 1] if b"]" in items else items)

    def is_complete(self, data: bytes) -> bool:
        return super().is_complete(data) and self.is_viable(data)


@pytest.mark.parametrize("order, start", [
    ("schema", b'{"u":[1,0,1'), ("schema", b'{"u":[1,0],"v":[0,0,1'), ("schema", b'{"u":[],"v":["a",1,"a",1,'),
    ("any", b'{"u":[7],"v":[7,7'), ("any", b'{"u":[0,1,2,3'),
])
def test_a_plain_array_beside_a_unique_one_may_repeat(llama3_compiler, infos, order, start):
    """Every token of Llama 3 against the oracle: ``v`` repeats freely once its values are
    no longer recorded (only arrays some configuration keeps distinct are); in any member
    order too (``u`` is written first here, so the oracle's order holds)."""
    compiled = llama3_compiler.compile_json_schema(BESIDE_PLAIN, whitespace="compact", property_order=order)
    assert isinstance(compiled.engine, UniqueItemsTokenPDA if order == "schema" else MemberSetTokenPDA)
    info = infos("llama-3")
    problem = check_masks_along_random_walk(Matcher(compiled), _BesidePlainOracle(info), info, steps=4,
                                            seed=len(start), start=start)
    assert problem is None, problem


@pytest.mark.parametrize("schema", [BESIDE_PLAIN,
                                    {"type": "object", "properties": {"u": TAGS, "t": {"type": "string"}}}])
def test_texts_outside_unique_arrays_leave_no_record(llama3_compiler, schema):
    """The matcher's state after different plain values is the same (so its masks are
    remembered), while inside a unique array the values written are kept."""
    automaton = llama3_compiler.compile_json_schema(schema, whitespace="compact").engine.unique

    def state(text: str):
        current = automaton.start
        for byte in text.encode():
            current = automaton.step(current, byte)
            assert current is not None, text
        return current

    if "v" in schema["properties"]:
        assert state('{"u":[1],"v":[2,"a",3') == state('{"u":[4,5],"v":[6,"b",7,8,9')
        assert state('{"u":[1,2') != state('{"u":[1,3')
    else:
        assert state('{"t":"a long text') == state('{"t":"another, [longer] one')
        assert state('{"u":["a","b') != state('{"u":["a","c')


def test_a_repeated_scalar_is_refused_where_it_ends(llama3_compiler, infos):
    info = infos("llama-3")
    compiled = llama3_compiler.compile_json_schema(SCALAR_SCHEMAS["booleans, null and integers"])
    matcher = Matcher(compiled)
    assert matcher.accept_bytes("[12, true, null, 0, 1")
    ids = {data: token for token, data in enumerate(info.token_bytes)}
    words = matcher.next_token_mask_words()
    for data, allowed in ((b"2", True), (b"23", True), (b",", True), (b"]", True), (b" ", True), (b"0", True)):
        token = ids[data]  # 12 may go on (120), 1 may end
        assert bool(words[token >> 5] >> (token & 31) & 1) == allowed, data
    assert matcher.accept_bytes("2")
    words = matcher.next_token_mask_words()
    for data, allowed in ((b",", False), (b"]", False), (b" ", False), (b"],", False), (b"3", True), (b"0", True)):
        token = ids[data]  # 12 again: only going on is left
        assert bool(words[token >> 5] >> (token & 31) & 1) == allowed, data
        assert Matcher(compiled).accept_bytes("[12, true, null, 0, 12" + data.decode()) == allowed, data
    assert matcher.accept_bytes("0, ")
    words = matcher.next_token_mask_words()
    for data, allowed in ((b"0", False), (b"null", False), (b"true", False), (b"false", True), (b"01", False),
                          (b"-", True), (b"12", True), (b"123", True)):  # 12 may go on: 123
        token = ids[data]
        assert bool(words[token >> 5] >> (token & 31) & 1) == allowed, data


@pytest.mark.parametrize("seed, items", [
    (0, {"type": "string", "pattern": "^[a-c]{1,2}$"}), (1, {"type": "string", "pattern": "^[a-c]{1,2}$"}),
    (2, {"type": "string", "pattern": "^[a-c]{1,2}$"}), (3, {"type": "string", "pattern": "^[a-c]{1,2}$"}),
    (0, {"type": ["integer", "boolean", "null"], "minimum": 0, "maximum": 8}),
    (1, {"type": ["integer", "boolean", "null"], "minimum": 0, "maximum": 8}),
])
def test_generate_json_with_a_tiny_model_writes_distinct_items(load_tokenizer, seed, items):
    """Twelve values, up to six items: a random model repeats often unless the mask stops it."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    from constrain import generate_json

    tokenizer = load_tokenizer("llama-3")
    torch.manual_seed(seed)
    config = LlamaConfig(vocab_size=len(tokenizer), hidden_size=16, intermediate_size=32, num_hidden_layers=1,
                         num_attention_heads=2, num_key_value_heads=1, max_position_embeddings=512)
    model = LlamaForCausalLM(config).eval()
    schema = {"type": "array", "items": items, "uniqueItems": True, "minItems": 4, "maxItems": 6}
    value = generate_json(schema, "Tags: ", model, tokenizer, whitespace="compact", max_new_tokens=80, do_sample=True)
    assert jsonschema.Draft202012Validator(schema).is_valid(value), value
