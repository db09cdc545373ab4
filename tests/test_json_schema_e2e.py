"""JSON Schema end to end on JSONSchemaBench schemas.

* A tiny random Llama (Llama-3 vocabulary) under :func:`constrain.generate_json`:
  every finished output validates with ``jsonschema`` (format checker on).
* ``hypothesis-jsonschema`` instances of benchmark schemas, written the documented
  way, are accepted token by token (Llama-3) with EOS at the end; instances the
  documented language leaves out are counted with their reason.

Fixed deterministic samples keep this under a minute; the full runs (200 schemas,
a few hundred for hypothesis) are ``benchmarks/bench_generate_json.py``.
"""

from __future__ import annotations

import collections

import jsonschema
import pytest
import torch

from conftest import shared_data_or_skip
from constrain import Compiler, ConstrainError, Matcher, SchemaError, generate_json
from constrain.testing import (force_hypothesis_instances, json_ending_bias, load_jsonschemabench,
                               sample_jsonschemabench)
from test_grammar_e2e import _tiny_llama

GENERATE_SAMPLE, GENERATE_SEED = 18, 11
HYPOTHESIS_SAMPLE, HYPOTHESIS_SEED = 30, 12
MAX_CHARS = 600  # schemas of at most this much JSON text compile in well under a second


def validator(schema):
    cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
    return cls(schema, format_checker=cls.FORMAT_CHECKER)


@pytest.fixture(scope="module")
def bench_rows():
    return load_jsonschemabench(shared_data_or_skip("jsonschemabench") / "jsonschemabench")


@pytest.fixture(scope="module")
def llama3(load_tokenizer, infos):
    return load_tokenizer("llama-3"), infos("llama-3")


def compile_sample(compiler, rows):
    """Compiled grammars of the sample's rows; unsupported ones counted by reason."""
    compiled, skipped = [], collections.Counter()
    for schema_id, schema, instances in rows:
        try:
            compiled.append((schema_id, schema, instances, compiler.compile_json_schema(schema)))
        except SchemaError as err:
            skipped[err.reason.split(" (")[0][:60]] += 1
    return compiled, skipped


def test_tiny_model_outputs_validate(bench_rows, llama3):
    tokenizer, info = llama3
    model = _tiny_llama(len(tokenizer), seed=5)
    compiler = Compiler(info, cache_dir=False)
    rows = sample_jsonschemabench(bench_rows, GENERATE_SAMPLE, GENERATE_SEED, MAX_CHARS)
    compiled, skipped = compile_sample(compiler, rows)
    assert len(compiled) >= 12, (len(compiled), skipped)
    bias = json_ending_bias(info.token_bytes, info.eos_token_ids)
    finished, unfinished = 0, []
    for index, (schema_id, schema, _, _) in enumerate(compiled):
        torch.manual_seed(index)
        try:
            values = generate_json(schema, ["JSON:", "Answer:"], model, tokenizer, do_sample=True,
                                   max_new_tokens=40, logits_processor=[bias])
        except ConstrainError as err:  # only "ran out of max_new_tokens" may stop a schema here
            assert "before the output was complete" in str(err), (schema_id, str(err))
            unfinished.append(schema_id)
            continue
        for value in values:
            errors = [e.message for e in validator(schema).iter_errors(value)]
            assert not errors, (schema_id, value, errors)
        finished += 1
    print(f"{finished} of {len(compiled)} schemas finished, {len(unfinished)} ran out of tokens; "
          f"skipped at compile: {dict(skipped)}")
    assert finished >= len(compiled) // 2, unfinished


def test_generate_json_refuses_an_unsatisfiable_schema_before_decoding(llama3):
    tokenizer, _ = llama3
    schema = {"type": "object", "required": ["a"], "properties": {"a": {"type": "integer", "minimum": 3,
                                                                       "maximum": 2}}}
    with pytest.raises(SchemaError, match="no JSON value satisfies"):
        generate_json(schema, "JSON:", _tiny_llama(len(tokenizer), seed=5), tokenizer, max_new_tokens=4)


def test_generate_json_refuses_a_schema_emptied_by_depth_cuts_saying_so(llama3):
    """Every value of this schema nests four definitions deep inside a ``not``, one past
    what products unroll: refused before decoding, naming the cut rather than a contradiction."""
    tokenizer, _ = llama3
    schema = {"$defs": {"n": {"type": "object", "required": ["k"],
                              "properties": {"k": {"anyOf": [{"type": "null"}, {"$ref": "#/$defs/n"}]}}}},
              "not": {"type": "string"}, "allOf": [{"$ref": "#/$defs/n"}],
              "properties": {"k": {"type": "object", "properties": {"k": {"type": "object", "properties": {
                  "k": {"type": "object"}}}}}}}
    with pytest.raises(SchemaError, match="it may need deeper values"):
        generate_json(schema, "JSON:", _tiny_llama(len(tokenizer), seed=5), tokenizer, max_new_tokens=4)


def test_outputs_with_a_repeated_key_are_checked(llama3):
    """json.loads keeps the last of two equal keys, so a text may write more members than
    its value has.  Where minProperties needs additional members the matcher keeps the
    names written (a member loop) and refuses a repeat (the fuzzer found ``{"a": 1, "a":
    2}`` accepted for minProperties 2); inside a product's operands the count is still
    over the text, and generate_json's parse checks such an output instead of returning it."""
    from constrain.api import parse_output
    from constrain.testing import force_tokens

    tokenizer, info = llama3
    compiler = Compiler(info, cache_dir=False)
    repeated = '{"a": 1, "a": 2}'
    counted = compiler.compile_json_schema({"type": "object", "minProperties": 2})
    assert force_tokens(Matcher(counted), tokenizer.encode(repeated, add_special_tokens=False),
                        tokenizer.eos_token_id) is not None  # refused
    assert parse_output('{"a": 1, "b": 2}', counted) == {"a": 1, "b": 2}
    compiled = compiler.compile_json_schema({"type": "object", "not": {"maxProperties": 1}})
    assert force_tokens(Matcher(compiled), tokenizer.encode(repeated, add_special_tokens=False),
                        tokenizer.eos_token_id) is None  # the text is in the language
    with pytest.raises(SchemaError, match="repeats a key"):
        parse_output(repeated, compiled)
    assert parse_output('{"a": 1, "b": 2, "b": 3}', compiled) == {"a": 1, "b": 3}  # still valid: returned


_DEFS = {"https://example.com/defs.json": {"$defs": {
    "point": {"type": "object", "properties": {"x": {"type": "integer"}}, "required": ["x"],
              "additionalProperties": False},
    "flag": {"type": "boolean"}}}}


def test_outputs_are_checked_with_the_other_documents_of_their_schema(llama3):
    """References into ``resources`` resolve while decoding and in the check of a relaxed
    keyword after it (jsonschema alone cannot resolve them: nothing is fetched)."""
    from constrain.api import parse_output

    tokenizer, info = llama3
    schema = {"type": "array", "items": {"$ref": "https://example.com/defs.json#/$defs/point"}, "uniqueItems": True}
    compiled = Compiler(info, cache_dir=False).compile_json_schema(schema, strict=False, resources=_DEFS)
    assert any("uniqueItems" in note for note in compiled.notes)  # objects: relaxed, so checked after decoding
    assert parse_output('[{"x": 1}, {"x": 2}]', compiled) == [{"x": 1}, {"x": 2}]
    with pytest.raises(SchemaError, match="uniqueItems"):
        parse_output('[{"x": 1}, {"x": 1}]', compiled)
    with_fragment = {uri + "#": document for uri, document in _DEFS.items()}  # the same document
    compiled = Compiler(info, cache_dir=False).compile_json_schema(schema, strict=False, resources=with_fragment)
    with pytest.raises(SchemaError, match="uniqueItems"):
        parse_output('[{"x": 1}, {"x": 1}]', compiled)
    value = generate_json({"$ref": "https://example.com/defs.json#/$defs/flag"}, "JSON:",
                          _tiny_llama(len(tokenizer), seed=5), tokenizer, resources=_DEFS, whitespace="compact",
                          max_new_tokens=8)
    assert isinstance(value, bool)


def test_hypothesis_instances_accepted(bench_rows, llama3):
    tokenizer, info = llama3
    compiler = Compiler(info, cache_dir=False)
    rows = sample_jsonschemabench(bench_rows, HYPOTHESIS_SAMPLE, HYPOTHESIS_SEED, MAX_CHARS)
    compiled, skipped = compile_sample(compiler, rows)
    counts, rejected = collections.Counter(), []
    for schema_id, schema, _, grammar in compiled:
        force_hypothesis_instances(schema, grammar, tokenizer, info.eos_token_ids[0], 5, counts, rejected, schema_id)
    print(f"{len(compiled)} schemas compiled, skipped at compile: {dict(skipped)}; instances: {dict(counts)}")
    assert not rejected, rejected[:5]
    assert not counts["GENERATOR INVALID"], counts
    assert counts["accepted"] >= 40, counts


ANY_ORDER_SCHEMAS = [
    {"type": "object", "additionalProperties": False, "required": ["a", "c"],
     "properties": {"a": {"type": "boolean"}, "b": {"type": "null"}, "c": {"enum": ["x", "y"]}, "d": {"type": "boolean"}}},
    {"type": "object", "additionalProperties": False, "properties": {n: {"type": "null"} for n in "pqrs"},
     "oneOf": [{"required": ["p"]}, {"required": ["q", "r"]}], "dependentRequired": {"s": ["p"]}},
]


@pytest.mark.parametrize("schema", ANY_ORDER_SCHEMAS)
def test_generate_json_in_any_order_validates(llama3, schema):
    """Sampled member orders from a random model: every output meets required, the group
    rules and no repeats, whatever order the model picked."""
    tokenizer, info = llama3
    model = _tiny_llama(len(tokenizer), seed=7)
    bias = json_ending_bias(info.token_bytes, info.eos_token_ids)
    torch.manual_seed(3)
    values = generate_json(schema, ["JSON:", "Answer:", "Out:"], model, tokenizer, property_order="any",
                           whitespace="compact", do_sample=True, max_new_tokens=60, logits_processor=[bias])
    for value in values:
        assert not list(validator(schema).iter_errors(value)), value
