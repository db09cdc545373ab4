"""What keeping ``uniqueItems`` over strings costs per token: mask and step, side by side.

For each JSONSchemaBench schema in ``--ids`` (by default the ones refused for
``uniqueItems`` before the matcher kept string items distinct) that now compiles with
such arrays, the same schema with every ``uniqueItems`` removed is compiled too, and
each valid instance is forced through both matchers in turn (the Llama-3 tokenizer,
``json.dumps(ensure_ascii=False)``), timing the mask and the step at every token.
Reports medians and p99 of both and their ratios.

With ``--beside``, the documents are instead long plain values (1,500 numbers, 1,000
strings, a 1,500-word text, 500 objects) beside a short array of distinct strings or
integers: what a unique array costs the rest of its document.

Usage::

    python benchmarks/bench_unique_items.py [--ids benchmarks/unique_strings_schemas.txt] [--out unique.json]
        [--property-order schema|any] [--beside]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import data_dir, percentile, progress, write_json  # noqa: E402

HERE = Path(__file__).resolve().parent


def _without_unique(node):
    """``node`` with every ``uniqueItems`` keyword removed (a schema walked as JSON)."""
    if isinstance(node, dict):
        return {k: _without_unique(v) for k, v in node.items() if k != "uniqueItems"}
    if isinstance(node, list):
        return [_without_unique(v) for v in node]
    return node


def _step_times(matcher, ids: list[int]) -> list[tuple[float, float]]:
    """(mask µs, step µs) per token, up to the first token refused."""
    out = []
    for token in ids:
        start = time.perf_counter()
        words = matcher.next_token_mask_words()
        middle = time.perf_counter()
        if not (int(words[token >> 5]) >> (token & 31)) & 1 or not matcher.accept_token(token):
            break
        out.append(((middle - start) * 1e6, (time.perf_counter() - middle) * 1e6))
    return out


def _beside_cases() -> list[tuple[str, dict, list]]:
    """(name, schema, [instance]): long plain values in ``v`` beside a unique array ``u``."""
    plain = {
        "numbers": ({"type": "array", "items": {"type": "number"}}, [i * 7 % 1000 for i in range(1500)]),
        "strings": ({"type": "array", "items": {"type": "string"}}, [f"w{i * 7 % 1000}" for i in range(1000)]),
        "text": ({"type": "string"}, " ".join(f"word{i}" for i in range(1500))),
        "objects": ({"type": "array", "items": {"type": "object", "properties": {"k": {"type": "string"}}}},
                    [{"k": f"v{i}"} for i in range(500)]),
    }
    return [(f"{name} beside distinct {kind}s", {"type": "object", "properties": {
        "u": {"type": "array", "uniqueItems": True, "items": {"type": kind}}, "v": schema}},
             [{"u": ["a", "b"] if kind == "string" else [1, 2], "v": value}])
            for name, (schema, value) in plain.items() for kind in ("string", "integer")]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--ids", type=Path, default=HERE / "unique_strings_schemas.txt")
    parser.add_argument("--out", type=Path)
    parser.add_argument("--property-order", choices=("schema", "any"), default="schema")
    parser.add_argument("--beside", action="store_true", help="long plain values beside a unique array, not --ids")
    args = parser.parse_args(argv)

    from constrain import Compiler, Matcher, SchemaError
    from constrain.automata.member_sets import MemberSetTokenPDA
    from constrain.automata.unique_items import UniqueItemsTokenPDA
    from constrain.bench.data import load_jsonschemabench
    from constrain.bench.maskbench import load_tokenizer
    from constrain.vocab import TokenizerInfo

    tokenizer = load_tokenizer(None, data_dir())
    info = TokenizerInfo.from_huggingface(tokenizer)
    if args.beside:
        cases = _beside_cases()
    else:
        lines = [line.strip() for line in args.ids.read_text().splitlines()]
        wanted = {line for line in lines if line and not line.startswith("#")}
        cases = [(c.id, c.schema, [i.data for i in c.instances if i.valid])
                 for c in load_jsonschemabench(data_dir()) if c.id in wanted]
    times = {"unique": [], "plain": []}
    used = 0
    for index, (name, schema, instances) in enumerate(cases):
        progress(f"{index + 1}/{len(cases)} {name}")
        try:
            order = args.property_order
            exact = Compiler(info, cache_dir=False).compile_json_schema(schema, property_order=order)
            plain = Compiler(info, cache_dir=False).compile_json_schema(_without_unique(schema), property_order=order)
        except SchemaError:
            continue
        engine = exact.engine
        kept = isinstance(engine, UniqueItemsTokenPDA) or (
            isinstance(engine, MemberSetTokenPDA) and engine.members.unique is not None)  # any order: member loops too
        if not kept:
            continue
        used += 1
        for instance in instances:
            ids = tokenizer.encode(json.dumps(instance, ensure_ascii=False), add_special_tokens=False)
            pairs = [_step_times(Matcher(compiled), ids) for compiled in (exact, plain)]
            steps = min(map(len, pairs))  # the same tokens on both sides
            times["unique"] += pairs[0][:steps]
            times["plain"] += pairs[1][:steps]
    report = {"schemas": used, "steps": len(times["unique"])}
    for side, pairs in times.items():
        for k, name in enumerate(("mask", "step")):
            values = [p[k] for p in pairs]
            report[f"{side}_{name}_p50_us"] = percentile(values, 50)
            report[f"{side}_{name}_p99_us"] = percentile(values, 99)
    for name in ("mask", "step"):
        for q in ("p50", "p99"):
            report[f"{name}_{q}_ratio"] = report[f"unique_{name}_{q}_us"] / report[f"plain_{name}_{q}_us"]
    print(f"{used} schemas, {report['steps']:,} tokens (both sides)")
    print("| side | mask p50 µs | mask p99 µs | step p50 µs | step p99 µs |\n|:---|---:|---:|---:|---:|")
    for side in times:
        print(f"| {side} | " + " | ".join(f"{report[f'{side}_{n}_{q}_us']:.1f}" for n in ("mask", "step")
                                         for q in ("p50", "p99")) + " |")
    print("ratios (unique / plain): " + ", ".join(f"{n} {q} {report[f'{n}_{q}_ratio']:.2f}×"
                                                 for n in ("mask", "step") for q in ("p50", "p99")))
    if args.out:
        write_json(args.out, report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
