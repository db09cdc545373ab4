"""Long tokens near a counted loop's bound: callee size, and mask time near and far from it.

Compiles a word-count pattern with ``maxLength: 500`` (Llama-3 tokenizer), whose counted
callee is sized for 16-byte tokens (``COUNT_MARGIN``) instead of the longest token, and
forces a value of nearly 500 characters token by token, twice through fresh matchers of
the same compile: the first pass pays every first visit (for steps near the bound, the
vectorised walk of the long tokens), the second only memoised rows.  Steps are split by
whether some configuration's count is within one longest token of the loop's exit.

Usage::

    python benchmarks/bench_counted_bound.py [--out bound.json]
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import data_dir, percentile, write_json  # noqa: E402

WORDS = r"^(?:\S+\s+){0,49}\S+$"
SCHEMA = {"type": "object", "properties": {"s": {"type": "string", "pattern": WORDS, "minLength": 1,
                                               "maxLength": 500}}}


def _value(seed: int = 0) -> str:
    """46 hyphenated words, cut to 495 characters: within the pattern and the bound."""
    rng = random.Random(seed)
    words = ["alpha", "beta", "gamma", "delta", "epsilon", "zeta", "theta", "kappa", "lambda", "omicron"]
    return " ".join(f"{rng.choice(words)}-{rng.choice(words)}" for _ in range(46))[:495].rstrip()


def _pass(compiled, ids: list[int]) -> dict[str, list[float]]:
    """Mask µs per step of one fresh matcher, split into steps near the bound and the rest."""
    from constrain import Matcher

    engine, matcher = compiled.engine, Matcher(compiled)
    times: dict[str, list[float]] = {"near": [], "far": []}
    for token in ids:
        state = matcher._states[-1]
        start = time.perf_counter()
        matcher.next_token_mask_words()
        elapsed = (time.perf_counter() - start) * 1e6
        times["near" if engine._long is not None and engine._long.near_bound(state) else "far"].append(elapsed)
        if not matcher.accept_token(token):
            raise SystemExit("the value was refused: the benchmark's text no longer fits the schema")
    return times


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path)
    args = parser.parse_args(argv)

    from constrain import Compiler
    from constrain.automata.byte_dfa import warm_up
    from constrain.bench.maskbench import load_tokenizer
    from constrain.grammar.json_schema import schema_to_dfa
    from constrain.grammar.json_schema.strings import LONGEST_TOKEN, _callee_states
    from constrain.vocab import TokenizerInfo

    tokenizer = load_tokenizer(None, data_dir())
    info = TokenizerInfo.from_huggingface(tokenizer)
    warm_up()
    start = time.perf_counter()
    compiled = Compiler(info, cache_dir=False).compile_json_schema(SCHEMA)
    compile_ms = (time.perf_counter() - start) * 1e3
    (callee,) = compiled.engine.automaton.counted
    (string,) = schema_to_dfa(SCHEMA).counted  # what the callee counts, for its size at another margin
    value = _value()
    ids = tokenizer.encode(json.dumps({"s": value}, ensure_ascii=False), add_special_tokens=False)
    report = {"compile_ms": compile_ms, "callee_states": callee.dfa.num_states, "margin": callee.margin,
              "states_for_longest_token": _callee_states(string, LONGEST_TOKEN), "characters": len(value),
              "tokens": len(ids)}
    for name, times in (("first", _pass(compiled, ids)), ("memoised", _pass(compiled, ids))):
        for side, values in times.items():
            report[f"{name}_{side}_steps"] = len(values)
            report[f"{name}_{side}_p50_us"] = percentile(values, 50) if values else None
            report[f"{name}_{side}_max_us"] = max(values) if values else None
    print(f"compile {compile_ms:.0f} ms; callee {callee.dfa.num_states:,} states at margin {callee.margin} "
          f"({report['states_for_longest_token']:,} at {LONGEST_TOKEN}); {len(value)} characters, {len(ids)} tokens")
    print("| pass | steps near / far | near p50 / max µs | far p50 / max µs |\n|:---|---:|---:|---:|")
    for name in ("first", "memoised"):
        cells = [f"{report[f'{name}_near_steps']} / {report[f'{name}_far_steps']}"]
        for side in ("near", "far"):
            cells.append(f"{report[f'{name}_{side}_p50_us']:.1f} / {report[f'{name}_{side}_max_us']:,.0f}")
        print(f"| {name} | " + " | ".join(cells) + " |")
    if args.out:
        write_json(args.out, report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
