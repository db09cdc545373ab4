"""End-to-end JSON Schema figures: a tiny random model under ``generate_json``, and
``hypothesis-jsonschema`` instances forced token by token.

Inputs: a fixed sample of ``<data>/jsonschemabench`` schemas (``--schemas N``, drawn with
``--seed`` among schemas of at most ``--max-chars`` characters of JSON text, the same
sampler as ``tests/test_json_schema_e2e.py``), the Llama-3 tokenizer, and a tiny random
Llama sized to its vocabulary (hidden size 16, one layer, seed 5) with a logits bias
towards closing tokens (``constrain.testing.json_ending_bias``) so that outputs finish.

Reports:

1. **compile**: schemas compiled, refused (``SchemaError``, by reason), compile time
   p50/p99/max (``Compiler.compile_json_schema``, no disk cache);
2. **generate**: for each compiled schema, ``generate_json(schema, ["JSON:", "Answer:"],
   do_sample=True, max_new_tokens=--max-new-tokens)``: outputs finished, outputs that
   validate with ``jsonschema`` (format checker on; must be all of the finished ones),
   generation time per token p50;
3. **hypothesis** (``--hypothesis N`` schemas, ``--examples`` instances each): instances
   accepted token by token with EOS at the end, rejected (must be 0), and those the
   documented language does not write, by reason (never silently).

Usage::

    python benchmarks/bench_generate_json.py --schemas 200 --hypothesis 300
    python benchmarks/bench_generate_json.py --schemas 0 --hypothesis 300   # instances only
"""

from __future__ import annotations

import argparse
import collections
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from _common import data_dir, fmt, percentile, tokenizer_dir  # noqa: E402


def _validator(schema):
    import jsonschema

    cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
    return cls(schema, format_checker=cls.FORMAT_CHECKER)


def compile_all(compiler, rows):
    from constrain import SchemaError

    compiled, refused, times = [], collections.Counter(), []
    for schema_id, schema, _ in rows:
        start = time.perf_counter()
        try:
            grammar = compiler.compile_json_schema(schema)
        except SchemaError as err:
            refused[err.reason.split(" (")[0][:70]] += 1
            continue
        times.append(time.perf_counter() - start)
        compiled.append((schema_id, schema, grammar))
    return compiled, refused, times


def run_generate(compiled, model, tokenizer, info, max_new_tokens: int) -> dict:
    import torch

    from constrain import ConstrainError, generate_json
    from constrain.testing import json_ending_bias

    bias = json_ending_bias(info.token_bytes, info.eos_token_ids)
    finished = valid = unfinished = 0
    invalid, per_token = [], []
    for index, (schema_id, schema, _) in enumerate(compiled):
        torch.manual_seed(index)
        start = time.perf_counter()
        try:
            values = generate_json(schema, ["JSON:", "Answer:"], model, tokenizer, do_sample=True,
                                   max_new_tokens=max_new_tokens, logits_processor=[bias])
        except ConstrainError as err:
            if "before the output was complete" not in str(err):
                invalid.append((schema_id, str(err)[:200]))
            unfinished += 1
            continue
        per_token.append((time.perf_counter() - start) / max_new_tokens)
        for value in values:
            finished += 1
            if _validator(schema).is_valid(value):
                valid += 1
            else:
                invalid.append((schema_id, value))
    return {"finished": finished, "valid": valid, "unfinished_schemas": unfinished, "invalid": invalid,
            "seconds_per_token_p50": percentile(per_token, 50) if per_token else None}


def run_hypothesis(compiled, tokenizer, info, examples: int) -> dict:
    from constrain.testing import force_hypothesis_instances

    counts, rejected = collections.Counter(), []
    for schema_id, schema, grammar in compiled:
        force_hypothesis_instances(schema, grammar, tokenizer, info.eos_token_ids[0], examples, counts, rejected,
                                   schema_id)
    return {"counts": dict(counts), "rejected": [(label, text[:300]) for label, text in rejected]}


def report_generate(compiler, rows, tokenizer, info, args) -> dict:
    from test_grammar_e2e import _tiny_llama

    from constrain.testing import sample_jsonschemabench

    sample = sample_jsonschemabench(rows, args.schemas, args.seed, args.max_chars)
    compiled, refused, times = compile_all(compiler, sample)
    print(f"## generate_json: {len(sample)} schemas, {len(compiled)} compiled, refused: {dict(refused)}")
    print(f"compile s: p50 {fmt(percentile(times, 50), 3)}, p99 {fmt(percentile(times, 99), 3)}, "
          f"max {fmt(max(times), 3)}")
    model = _tiny_llama(len(tokenizer), seed=5)
    gen = run_generate(compiled, model, tokenizer, info, args.max_new_tokens)
    print(f"outputs finished {gen['finished']}, valid {gen['valid']} (jsonschema, formats on), schemas out of "
          f"tokens {gen['unfinished_schemas']}, s/token p50 {fmt(gen['seconds_per_token_p50'], 4)}")
    for item in gen["invalid"][:20]:
        print("INVALID", item)
    return gen


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--schemas", type=int, default=200)
    parser.add_argument("--hypothesis", type=int, default=300)
    parser.add_argument("--examples", type=int, default=10)
    parser.add_argument("--seed", type=int, default=11)
    parser.add_argument("--max-chars", type=int, default=2000)
    parser.add_argument("--max-new-tokens", type=int, default=64)
    args = parser.parse_args(argv)

    from transformers import AutoTokenizer

    from constrain import Compiler, TokenizerInfo
    from constrain.testing import load_jsonschemabench, sample_jsonschemabench

    tokenizer = AutoTokenizer.from_pretrained(tokenizer_dir(None))
    info = TokenizerInfo.from_huggingface(tokenizer)
    rows = load_jsonschemabench(data_dir() / "jsonschemabench")
    compiler = Compiler(info, cache_dir=False)

    gen = {"invalid": []}
    if args.schemas:  # --schemas 0: only the hypothesis part
        gen = report_generate(compiler, rows, tokenizer, info, args)
    hyp_sample = sample_jsonschemabench(rows, args.hypothesis, args.seed + 1, args.max_chars)
    hyp_compiled, hyp_refused, _ = compile_all(compiler, hyp_sample)
    hyp = run_hypothesis(hyp_compiled, tokenizer, info, args.examples)
    print(f"## hypothesis-jsonschema: {len(hyp_sample)} schemas, {len(hyp_compiled)} compiled, "
          f"refused: {dict(hyp_refused)}")
    for reason, count in sorted(hyp["counts"].items(), key=lambda kv: -kv[1]):
        print(f"{count:6d}  {reason}")
    for item in hyp["rejected"][:20]:
        print("REJECTED", item)
    return 1 if gen["invalid"] or hyp["rejected"] or hyp["counts"].get("GENERATOR INVALID") else 0


if __name__ == "__main__":
    sys.exit(main())
