"""``constrain bench``: the MaskBench harness, timeouts, reports and the command line.

The engine under test here is a stand-in around ``Compiler.compile_regex`` (enums,
integers and booleans become regexes): its verdict on an instance must equal Python
``re.fullmatch`` of the instance text, and the labels come from ``jsonschema``, so
both sides of every assertion are independent of the harness.  A peer (llguidance)
runs the same cases where installed.  Fake engines that hang or crash check that a
case is cut off and reported while the run goes on.
"""

from __future__ import annotations

import json
import os
import re
import time

import jsonschema
import pytest

from conftest import shared_data_or_skip
from constrain import SchemaError
from constrain.bench.data import Case, Instance, load_jsonschemabench, load_test_suite
from constrain.bench.engines import ConstrainEngine, Engine, LLGuidanceEngine, optional_import
from constrain.bench.maskbench import run_cases, set_up_engines, tokenize_case
from constrain.bench.report import render_jsonschemabench, run_json, summarize, render_test_suite
from constrain.cli import main

_SPECIAL = set("\\^$.|?*+()[]{}/")


def _literal(text: str) -> str:
    return "".join("\\" + ch if ch in _SPECIAL else ch for ch in text)


def stand_in_pattern(schema: object) -> str:
    """The regex the stand-in compiles for ``schema``; SchemaError for anything else."""
    if isinstance(schema, dict):
        body = {k: v for k, v in schema.items() if k != "$schema"}
        if set(body) == {"enum"}:
            return "|".join(_literal(json.dumps(v, ensure_ascii=False)) for v in body["enum"])
        if body == {"type": "integer"}:
            return r"-?(0|[1-9][0-9]*)"
        if body == {"type": "boolean"}:
            return "true|false"
    raise SchemaError("the stand-in takes only enum, integer and boolean schemas", "")


class StandIn(ConstrainEngine):
    """constrain's regex engine behind the JSON Schema interface, for a few schema forms."""

    name = "constrain"
    json_schema_options = "stand-in: compile_regex of enum / integer / boolean"

    def supports_json_schema(self) -> str | None:
        return None

    def compile_json_schema(self, compiler, schema):
        return compiler.compile_regex(stand_in_pattern(schema))


class Anything(Engine):
    """Allows every token always: accepts every instance.  ``hang``/``crash`` keys misbehave."""

    name = "anything"
    json_schema_options = "all tokens allowed"

    def setup(self, tok, token_bytes):
        pass

    def compile_json_schema(self, compiler, schema):
        if isinstance(schema, dict) and schema.get("hang") == "compile":
            time.sleep(600)
        return schema

    def matcher(self, compiled):
        return compiled

    def fill(self, matcher, bitmask):
        if isinstance(matcher, dict) and matcher.get("hang") == "force":
            time.sleep(600)
        if isinstance(matcher, dict) and matcher.get("crash"):
            os._exit(3)
        bitmask.fill_(-1)

    def accept(self, matcher, token_id):
        return True


FACTORIES = {"constrain": StandIn, "anything": Anything, "llguidance": LLGuidanceEngine,
             "constrain-json": ConstrainEngine}


def _case(case_id: str, group: str, schema: object, values: list) -> Case:
    """A case whose labels come from jsonschema (draft 2020-12)."""
    validator = jsonschema.Draft202012Validator(schema)
    return Case(case_id, group, schema, [Instance(v, validator.is_valid(v)) for v in values])


def handful() -> list[Case]:
    return [
        _case("colors", "enums", {"enum": ["red", "green", "blué"]}, ["red", "blué", "blue", "gree", "redd", 3, None]),
        _case("numbers", "enums", {"enum": [1, 2.5, None]}, [1, 2.5, None, 25, 2, "1"]),
        # 1000.0 is an integer for jsonschema but not for the stand-in's regex: a valid rejected
        _case("integer", "types", {"type": "integer"}, [0, 42, -7, 3.5, "4", 1000.0]),
        _case("boolean", "types", {"type": "boolean"}, [True, False, 0, "true"]),
        _case("object", "types", {"type": "object", "required": ["a"]}, [{"a": 1}, {}]),
    ]


@pytest.fixture(scope="module")
def llama3(load_tokenizer):
    return load_tokenizer("llama-3")


@pytest.fixture(scope="module")
def engines(llama3):
    """Each engine set up once (setting up ours builds the Llama-3 token trie)."""
    names = ["constrain", "anything", "constrain-json"] + (["llguidance"] if optional_import("llguidance")[0] else [])
    engines, skipped = set_up_engines(names, llama3, FACTORIES)
    assert not skipped
    return lambda *wanted: {name: engines[name] for name in wanted}


@pytest.fixture(scope="module")
def stand_in_run(llama3, engines):
    return run_cases(handful(), engines("constrain"), llama3, progress=False)


def test_stand_in_verdicts_match_regex_and_labels(stand_in_run, llama3):
    by_id = {c.id: c for c in stand_in_run.cases}
    results = stand_in_run.results["constrain"]
    assert [r.case_id for r in results] == list(by_id)
    for result in results:
        case = by_id[result.case_id]
        try:
            pattern = stand_in_pattern(case.schema)
        except SchemaError:
            assert result.status == "compile_error" and "stand-in takes only" in result.reason
            assert not result.passed and result.instances == []
            continue
        assert result.status == "ok" and result.compile_s > 0
        expected = [re.fullmatch(pattern, json.dumps(i.data, ensure_ascii=False)) is not None for i in case.instances]
        assert [i.accepted for i in result.instances] == expected, case.id
        assert [i.valid for i in result.instances] == [i.valid for i in case.instances]
        assert result.passed == all(e == i.valid for e, i in zip(expected, case.instances))
        # one timed fill per step: tokens consumed, plus the step that refused or saw EOS
        assert len(result.mask_ns) == sum(i.step + 1 for i in result.instances)
        for outcome, instance in zip(result.instances, case.instances):
            tokens = llama3.encode(json.dumps(instance.data, ensure_ascii=False), add_special_tokens=False)
            assert (outcome.step == len(tokens)) if outcome.accepted else (outcome.step <= len(tokens))
    verdicts = {r.case_id: (r.passed, r.valid_rejected, r.invalid_accepted) for r in results}
    assert verdicts["integer"] == (False, 1, 0)  # 1000.0
    assert verdicts["colors"][0] and verdicts["numbers"][0] and verdicts["boolean"][0]


def test_summary_and_reports(stand_in_run):
    results = stand_in_run.results["constrain"]
    s = summarize(results)
    assert (s["schemas"], s["compiled"], s["passing"], s["compile_error"]) == (5, 4, 3, 1)
    assert s["valid_rejected"] == sum(r.valid_rejected for r in results) == 1
    assert s["mask_steps"] == sum(len(r.mask_ns) for r in results)
    assert 0 < s["mask_p50_us"] <= s["mask_p99_us"] <= s["mask_p999_us"] <= s["mask_max_us"]
    assert s["compile_p50_ms"] <= s["compile_p99_ms"] <= s["compile_max_ms"]
    text = render_jsonschemabench(stand_in_run, explain=True)
    assert "| constrain | 5 | 4 | 3 (60.0 %) | 0 | 1 | 1 / 0 / 0 |" in text
    assert "| enums | 2 / 2 (0, 0) |" in text and "| types | 1 / 3 (0, 1) |" in text
    assert "- constrain `integer`: valid instance 5 rejected at token" in text
    assert "- constrain `object`: compile_error: SchemaError" in text
    payload = json.loads(json.dumps(run_json(stand_in_run, "jsonschemabench")))
    assert payload["summary"]["constrain"]["passing"] == 3
    assert payload["per_group"]["constrain"]["types"]["schemas"] == 3
    assert [c["passed"] for c in payload["cases"]["constrain"]] == [r.passed for r in results]


def test_peer_on_the_same_work(llama3, engines):
    if optional_import("llguidance")[0] is None:
        pytest.skip("llguidance not installed")
    schema = {"type": "object", "properties": {"a": {"type": "integer", "minimum": 0},
                                               "b": {"type": "string", "maxLength": 3}},
              "required": ["a"], "additionalProperties": False}
    cases = [_case("obj", "peer", schema, [{"a": 1}, {"a": 1, "b": "xy"}, {"a": -1}, {"b": "x"},
                                           {"a": 1, "c": 2}, {"a": 1, "b": "long"}, [1]]), *handful()[:2]]
    run = run_cases(cases, engines("constrain", "llguidance"), llama3, progress=False)
    assert run.engines == ["constrain", "llguidance"]
    peer = {r.case_id: r for r in run.results["llguidance"]}
    assert all(r.passed for r in peer.values()), [r.explain() for r in peer.values()]
    assert [i.accepted for i in peer["obj"].instances] == [i.valid for i in cases[0].instances]
    ours = {r.case_id: r for r in run.results["constrain"]}
    assert ours["obj"].status == "compile_error" and ours["colors"].passed
    assert "| llguidance | 3 | 3 | 3 (100.0 %) | 0 | 0 | 0 / 0 / 0 |" in render_jsonschemabench(run)


@pytest.mark.parametrize("name", ["llama-2", "mistral-7b-v0.1", "llama-3"])
def test_instances_are_forced_as_their_own_bytes(load_tokenizer, infos, name):
    """SentencePiece writes a space before a text (``{`` is ``▁{``): forced as encoded, every
    instance would begin with whitespace, which engines without leading whitespace refuse
    at the first token.  The ids spell exactly the instance's bytes, read with
    constrain's own vocabulary decoding (independent of the bench's)."""
    tok, info = load_tokenizer(name), infos(name)
    values = [{"a": 1, "b": "xy"}, [1, 2], "é😀", True, {" lead": " space"}]
    work = tokenize_case(tok, _case("spelled", "peer", {}, values))
    for value, ids in zip(values, work.tokens):
        assert b"".join(info.token_bytes[i] for i in ids) == json.dumps(value, ensure_ascii=False).encode()
    if name != "llama-3":  # the tokenizer's own ids begin with the space
        first = tok.encode(json.dumps(values[0]), add_special_tokens=False)[0]
        assert info.token_bytes[first].startswith(b" ")


def test_peer_reads_sentencepiece_instances(load_tokenizer):
    """llguidance (no leading whitespace in its JSON) passes the same cases with Llama-2's
    tokenizer: before the instances were spelled without SentencePiece's space, it refused
    every valid one at token 0."""
    if optional_import("llguidance")[0] is None:
        pytest.skip("llguidance not installed")
    tok = load_tokenizer("llama-2")
    peers, skipped = set_up_engines(["llguidance"], tok, FACTORIES)
    assert not skipped
    cases = handful()[:2] + [handful()[4]]
    run = run_cases(cases, peers, tok, progress=False)
    assert all(r.passed for r in run.results["llguidance"]), [r.explain() for r in run.results["llguidance"]]


def test_our_json_schema_compiler_on_the_same_work(llama3, engines):
    """The real ``compile_json_schema`` through the adapter: verdicts equal jsonschema's labels."""
    schema = {"type": "object", "properties": {"n": {"type": "integer", "minimum": 1, "maximum": 12},
                                               "tags": {"type": "array", "items": {"enum": ["a", "b"]},
                                                        "maxItems": 2}},
              "required": ["n"], "additionalProperties": False}
    cases = [_case("obj", "ours", schema, [{"n": 3}, {"n": 12, "tags": ["a", "b"]}, {"n": 0}, {"n": 13},
                                           {"tags": []}, {"n": 2, "tags": ["c"]}, {"n": 2, "tags": ["a", "a", "a"]},
                                           {"n": 2, "x": 1}, [2]]),
             _case("enum", "ours", {"enum": ["x", 1, None]}, ["x", 1, None, "y", 1.5])]
    run = run_cases(cases, engines("constrain-json"), llama3, progress=False)
    for case, result in zip(cases, run.results["constrain-json"]):
        assert result.status == "ok", result.reason
        assert [i.accepted for i in result.instances] == [i.valid for i in case.instances], case.id
        assert result.passed


def test_key_order_schema_rewrites_valid_instances_only(llama3, engines):
    """``key_order="schema"``: a valid instance listing members out of schema order is
    rewritten (and then accepted); invalid ones, and those under a combinator whose
    member order depends on the branch, stay as given."""
    schema = {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "string"}},
              "required": ["a"], "additionalProperties": False}
    out_of_order = {"b": "x", "a": 1}
    cases = [_case("order", "ours", schema, [out_of_order, {"a": 1, "b": "y"}, {"b": "x"}, {"b": 2, "a": 1}]),
             _case("branch", "ours", {"anyOf": [schema, {"type": "integer"}]}, [out_of_order])]
    given = tokenize_case(llama3, cases[0])
    assert given.rewritten == 0
    written = tokenize_case(llama3, cases[0], "schema")
    texts = [llama3.decode(t) for t in written.tokens]
    assert written.rewritten == 2 and texts[0] == '{"a": 1, "b": "x"}' and texts[1] == '{"a": 1, "b": "y"}'
    assert texts[2:] == [json.dumps(i.data) for i in cases[0].instances[2:]]  # invalid: as given
    assert tokenize_case(llama3, cases[1], "schema").rewritten == 0
    plain = run_cases(cases[:1], engines("constrain-json"), llama3, progress=False).results["constrain-json"][0]
    assert [i.accepted for i in plain.instances] == [False, True, False, False]  # schema order is the language
    run = run_cases(cases[:1], engines("constrain-json"), llama3, progress=False, key_order="schema")
    assert [i.accepted for i in run.results["constrain-json"][0].instances] == [True, True, False, False]
    assert "2 of 2 valid instances written with members in schema order" in run.settings["serialisation"]
    with pytest.raises(ValueError, match="key_order"):
        run_cases(cases[:1], engines("constrain-json"), llama3, progress=False, key_order="sorted")


def test_hanging_and_crashing_engines_are_cut_off(llama3, engines):
    cases = [_case("a", "g", {"enum": [1]}, [1, 2]), Case("hang-compile", "g", {"hang": "compile"}, [Instance(1, True)]),
             _case("b", "g", {"enum": [2]}, [2]), Case("hang-force", "g", {"hang": "force"}, [Instance(1, True)]),
             Case("crash", "g", {"crash": True}, [Instance(1, True)]), _case("c", "g", {"enum": [3]}, [3, 4])]
    start = time.monotonic()
    run = run_cases(cases, engines("anything"), llama3, compile_timeout=1.0, timeout=2.0, progress=False)
    assert time.monotonic() - start < 30
    results = run.results["anything"]
    assert [r.status for r in results] == ["ok", "compile_timeout", "ok", "timeout", "crashed", "ok"]
    assert "more than 1 s" in results[1].reason and results[3].compile_s is not None
    assert "exit code 3" in results[4].reason
    # everything is accepted: the invalid instances are counted as accepted
    assert [(r.invalid_accepted, r.passed) for r in results if r.status == "ok"] == [(1, False), (0, True), (1, False)]
    s = summarize(results)
    assert (s["compile_timeout"], s["timeout"], s["crashed"], s["invalid_accepted"]) == (1, 1, 1, 2)


def test_sample_slow(llama3, engines):
    cases = handful()
    run = run_cases(cases, engines("constrain", "anything"), llama3, sample_slow=2, slow_engines=("anything",), progress=False)
    assert [r.case_id for r in run.results["anything"]] == ["colors", "integer"] == run.sampled["anything"]
    assert len(run.results["constrain"]) == 5
    text = render_jsonschemabench(run)
    assert "anything (sample of 2)" in text and "### Same sample" in text
    assert "| constrain | 2 | 2 | 1 (50.0 %) |" in text  # ours on the sample: colors passes, integer fails
    # Like for like: what every engine compiled (anything compiles its sample; the stand-in two of those).
    like = text[text.index("### Like for like: the 2 schemas every engine compiled"):]
    assert "| constrain | 2 | 2 | 1 (50.0 %) | 0 | 1 |" in like and "| anything | 2 | 2 | 0 (0.0 %) |" in like
    payload = json.loads(json.dumps(run_json(run, "jsonschemabench")))
    assert payload["summary_compiled_by_all"]["constrain"]["schemas"] == 2
    assert payload["summary_compiled_by_all"]["anything"]["valid_rejected"] == 0
    # Without sampling: the stand-in's compile error ("object") leaves that schema out.
    full = run_cases(cases, engines("constrain", "anything"), llama3, progress=False)
    assert "### Like for like: the 4 schemas every engine compiled" in render_jsonschemabench(full)


_BENCH, _SUITE = "jsonschemabench", "json-schema-test-suite"


def test_loaders_read_every_case():
    data = shared_data_or_skip(_BENCH, _SUITE)
    lines = (data / "jsonschemabench" / "MCPspec.jsonl").read_text(encoding="utf-8").splitlines()
    cases = load_jsonschemabench(data, ["mcpspec"])
    assert [c.id for c in cases] == [json.loads(line)["id"] for line in lines]
    assert sum(len(c.instances) for c in cases) == sum(len(json.loads(x).get("instances") or []) for x in lines)
    folder = data / "json-schema-test-suite" / "tests" / "draft7"
    expected = sum(len(e["tests"]) for p in folder.rglob("*.json") for e in json.loads(p.read_text(encoding="utf-8")))
    suite = load_test_suite(data, ["draft7"])
    assert sum(len(c.instances) for c in suite) == expected
    assert all(c.schema.get("$schema") for c in suite if isinstance(c.schema, dict))
    assert {c.group for c in suite} >= {"draft7/enum", "draft7/optional/format/date"}
    assert any(c.remote_ref for c in suite)


def test_test_suite_report(llama3, engines):
    data = shared_data_or_skip(_SUITE)
    cases = [c for c in load_test_suite(data, ["draft2020-12"]) if c.group in ("draft2020-12/enum", "draft2020-12/const")]
    run = run_cases(cases, engines("constrain"), llama3, progress=False)
    passed = {}
    for case, result in zip(cases, run.results["constrain"]):
        try:
            pattern = stand_in_pattern(case.schema)
        except SchemaError:
            assert result.status == "compile_error"
            continue
        for instance, outcome in zip(case.instances, result.instances):
            accepted = re.fullmatch(pattern, json.dumps(instance.data, ensure_ascii=False)) is not None
            assert outcome.accepted == accepted
            passed[case.group] = passed.get(case.group, 0) + (accepted == instance.valid)
    assert passed.get("draft2020-12/enum", 0) > 0
    text = render_test_suite(run)
    for group in ("draft2020-12/enum", "draft2020-12/const"):
        total = sum(len(c.instances) for c in cases if c.group == group)
        assert f"| {group} | {total} | {passed.get(group, 0)} |" in text


@pytest.mark.parametrize("argv,fragment", [
    (["bench", "jsonschemabench", "--data", "/nonexistent/data"], "data folder not found"),
    (["bench", "test-suite", "--data", "/nonexistent/data"], "data folder not found"),
    (["bench", "jsonschemabench", "--engines", "constrain,nope"], "unknown engine(s) nope"),
    (["bench", "jsonschemabench", "--subset", "NoSuchSubset"], "unknown subset(s) NoSuchSubset"),
    (["bench", "jsonschemabench", "--limit", "0"], "--limit must be at least 1"),
    (["bench", "jsonschemabench", "--subset", "MCPspec", "--ids", "/nonexistent/ids.txt"], "--ids: cannot read"),
])
def test_cli_errors_are_one_line(capsys, argv, fragment):
    if "--data" not in argv:  # the default data folder's, whose subsets the error names
        shared_data_or_skip(_BENCH)
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("constrain: error:") and fragment in err[0], err


def test_cli_runs_with_a_peer(capsys, tmp_path):
    data = shared_data_or_skip(_BENCH, "tokenizers/gpt2")
    if optional_import("llguidance")[0] is None:
        pytest.skip("llguidance not installed")
    out = tmp_path / "report.json"
    argv = ["bench", "jsonschemabench", "--data", str(data), "--engines", "llguidance", "--subset", "MCPspec",
            "--tokenizer", "gpt2", "--limit", "3", "--out", str(out), "--no-progress", "--explain"]
    assert main(argv) == 0
    text = capsys.readouterr().out
    payload = json.loads(out.read_text(encoding="utf-8"))
    s = payload["summary"]["llguidance"]
    assert s["schemas"] == 3 and f"| llguidance | 3 | {s['compiled']} |" in text
    assert "### Per subset" in text and "| MCPspec |" in text
    assert len(payload["cases"]["llguidance"]) == 3


def test_cli_runs_the_schemas_an_ids_file_lists(capsys, tmp_path):
    """``--ids`` keeps an A/B slice (such as benchmarks/recursive_schemas.txt) as a file."""
    data = shared_data_or_skip(_BENCH)
    ids = tmp_path / "ids.txt"
    ids.write_text("# two schemas\nMCPspec---CancelledNotification\n\nGithub_trivial---o47165  # recursive\n")
    cases = [c.id for c in load_jsonschemabench(data, ["MCPspec", "Github_trivial"]) if c.instances]
    if not {"MCPspec---CancelledNotification", "Github_trivial---o47165"} <= set(cases):
        pytest.skip("the data set lacks the two listed schemas")
    out = tmp_path / "report.json"
    argv = ["bench", "jsonschemabench", "--data", str(data), "--subset", "MCPspec,Github_trivial", "--ids", str(ids),
            "--out", str(out), "--no-progress"]
    assert main(argv) == 0
    run = {c["id"]: c for c in json.loads(out.read_text(encoding="utf-8"))["cases"]["constrain"]}
    assert set(run) == {"MCPspec---CancelledNotification", "Github_trivial---o47165"}
    assert run["Github_trivial---o47165"]["passed"]  # a depth-4 tree: recursion is exact
    ids.write_text("Github_trivial---no_such_schema\n")
    assert main(argv) == 2 and "not among the schemas run" in capsys.readouterr().err


def test_the_warm_up_builds_the_vocabulary_indexes_the_matchers_keep(llama3, infos, monkeypatch):
    """Each warm-up text is accepted, and afterwards the per-vocabulary indexes that arrays
    of distinct items read are built, and an enum was checked with ``jsonschema`` (whose
    first import costs seconds), so that no timed compile pays for them."""
    import jsonschema

    from constrain import Compiler, Matcher
    from constrain.automata.json_strings import _PLAIN_TOKENS, _QUOTE_INDEXES
    from constrain.automata.unique_items import _SCALAR_INDEXES
    from constrain.bench.maskbench import WARMUP

    info = infos("llama-3")
    for built in (_QUOTE_INDEXES, _PLAIN_TOKENS, _SCALAR_INDEXES):  # as in a fresh worker
        built.pop(info.hash, None)
    validators_made = []
    validator_for = jsonschema.validators.validator_for
    monkeypatch.setattr(jsonschema.validators, "validator_for",
                        lambda *args, **kwargs: validators_made.append(args) or validator_for(*args, **kwargs))
    compiler = Compiler(info, cache_dir=False)
    for schema, texts in WARMUP:
        compiled = compiler.compile_json_schema(schema)
        for text in texts:
            matcher = Matcher(compiled)
            assert matcher.accept_bytes(text) and matcher.is_accepting(), text
    assert info.hash in _QUOTE_INDEXES and info.hash in _PLAIN_TOKENS and info.hash in _SCALAR_INDEXES
    assert validators_made, "no warm-up enum was checked with jsonschema"
