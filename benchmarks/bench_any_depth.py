"""Mask time with free-form values as calls (the default) against bounded DFA copies.

The same JSONSchemaBench schemas (a fixed sample, ``--schemas`` of at most
``--max-chars`` characters, seed ``--seed``) compiled twice in one process, with
``max_any_depth=None`` (calls into one shared any-value automaton, see
``constrain.automata.pushdown``) and with ``max_any_depth=3`` (one DFA, free-form
values embedded at most 3 deep); their first ``--instances`` instances
(``json.dumps(data, ensure_ascii=False)``, Llama-3) are forced token by token and
every ``Matcher.fill_next_token_bitmask`` is timed, as in ``constrain bench
jsonschemabench``.  Reports per mode: fills timed, p50/p99/p99.9 µs, instances
accepted with EOS.  A fresh compiler per schema and mode, no disk cache.

Usage::

    python benchmarks/bench_any_depth.py --schemas 80 --instances 3
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import data_dir, fmt, markdown_table, percentile, progress, tokenizer_dir  # noqa: E402

MODES = {"calls (max_any_depth=None)": None, "bounded DFA (max_any_depth=3)": 3}


def force(compiled, token_ids, eos: int, bitmask, times: list[float]) -> bool:
    """Force ``token_ids`` then EOS, timing every mask fill; True when all were accepted."""
    from constrain import Matcher

    matcher = Matcher(compiled)
    for token in [*token_ids, eos]:
        start = time.perf_counter()
        matcher.fill_next_token_bitmask(bitmask)
        times.append(time.perf_counter() - start)
        if not matcher.accept_token(token):
            return False
    return True


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--schemas", type=int, default=80)
    parser.add_argument("--instances", type=int, default=3)
    parser.add_argument("--max-chars", type=int, default=20000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--tokenizer", default=None)
    args = parser.parse_args()

    from transformers import AutoTokenizer

    from constrain import Compiler, SchemaError, TokenizerInfo, allocate_token_bitmask
    from constrain.testing import load_jsonschemabench, sample_jsonschemabench

    tokenizer = AutoTokenizer.from_pretrained(str(tokenizer_dir(args.tokenizer)))
    info = TokenizerInfo.from_huggingface(tokenizer)
    bitmask = allocate_token_bitmask(1, info.vocab_size)
    sample = sample_jsonschemabench(load_jsonschemabench(data_dir() / "jsonschemabench"), args.schemas,
                                    seed=args.seed, max_chars=args.max_chars)
    times: dict[str, list[float]] = {mode: [] for mode in MODES}
    accepted = {mode: 0 for mode in MODES}
    for index, (name, schema, instances) in enumerate(sample):
        progress(f"[{index + 1}/{len(sample)}] {name}")
        texts = [json.dumps(case["data"], ensure_ascii=False) for case in instances if case.get("valid")]
        token_lists = [tokenizer.encode(text, add_special_tokens=False) for text in texts[:args.instances]]
        for mode, depth in MODES.items():
            try:
                compiled = Compiler(info, cache_dir=False).compile_json_schema(schema, max_any_depth=depth)
            except SchemaError:
                continue
            for ids in token_lists:
                accepted[mode] += force(compiled, ids, info.eos_token_ids[0], bitmask, times[mode])
    rows = [[mode, len(times[mode]), accepted[mode]] + [fmt(percentile(times[mode], q) * 1e6) for q in (50, 99, 99.9)]
            for mode in MODES]
    print(markdown_table(["mode", "fills", "instances accepted", "p50 µs", "p99 µs", "p99.9 µs"], rows))


if __name__ == "__main__":
    main()
