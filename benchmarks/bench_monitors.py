"""Monitor-guided decoding: member rate with and without the monitor, and per-step overhead.

1. **Rates.**  For each prompt of ``tests/monitor_cases.py`` (fixture project under
   ``tests/fixtures/monitor_project``; each prompt stops at ``obj.`` where ``obj``'s
   class is defined in another module), a tiny randomly initialised Llama sized to the
   tokenizer samples ``--samples`` continuations with a
   :class:`~constrain.monitors.MonitorLogitsProcessor` (``PythonMemberMonitor``,
   public members) and as many without any processor, same seed.  An output counts as
   a hit when the identifier it starts with is complete (a non-identifier character
   or EOS follows) and is a real member: in ``dir()`` of the very object, built by
   importing the fixture project (not jedi).
2. **Overhead.**  A fixed continuation is forced token by token through a
   ``MonitoredMatcher`` and, as the baseline, through a plain ``Matcher`` of the
   any-text regex that the monitored matcher wraps.  Per step we time
   ``fill_next_token_bitmask`` + ``accept_token`` and split the steps into idle
   (no trigger active) and triggered (an identifier being constrained).  The first
   step of a trigger is also timed cold: jedi's completion (answer cache cleared),
   the identifier automaton (cleared) and the mask walk (cleared), each on its own.

Usage::

    python benchmarks/bench_monitors.py                 # 60 samples per prompt (240 in all)
    python benchmarks/bench_monitors.py --samples 10    # quick look
"""

from __future__ import annotations

import argparse
import re
import sys
import time
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from _common import environment, markdown_table, median, progress, tokenizer_dir, write_json  # noqa: E402
from monitor_cases import CASES, PROJECT_DIR, member_rate, real_members  # noqa: E402

from constrain import Compiler, Matcher, TokenizerInfo, allocate_token_bitmask  # noqa: E402
from constrain.monitors import MonitorContext, MonitoredMatcher, MonitorLogitsProcessor, PythonMemberMonitor  # noqa: E402
from constrain.monitors.identifiers import identifier_dfa  # noqa: E402
from constrain.monitors.processor import ANY_TEXT  # noqa: E402

CONTINUATION = " * 2\nname = order.customer.name\nline = order.add_line(\"A-1\", 1)\ntotal = line.subtotal()\n"


def tiny_llama(vocab_size: int, seed: int):
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(seed)
    config = LlamaConfig(vocab_size=vocab_size, hidden_size=16, intermediate_size=32, num_hidden_layers=1,
                         num_attention_heads=2, num_key_value_heads=1, max_position_embeddings=512)
    return LlamaForCausalLM(config).eval()


def sample(model, tokenizer, eos, prompt, processor, n, max_new_tokens, seed):
    from transformers import LogitsProcessorList

    inputs = tokenizer(prompt, return_tensors="pt")
    torch.manual_seed(seed)
    out = model.generate(**inputs, do_sample=True, max_new_tokens=max_new_tokens, num_return_sequences=n,
                         logits_processor=LogitsProcessorList([processor] if processor else []),
                         pad_token_id=tokenizer.eos_token_id)
    texts, finished = [], []
    for row in out[:, inputs["input_ids"].shape[1]:].tolist():
        ends = [i for i, t in enumerate(row) if t in eos]
        texts.append(tokenizer.decode(row[: ends[0]] if ends else row))
        finished.append(bool(ends))
    return texts, finished


def rates(tokenizer, info, monitor, samples, max_new_tokens):
    model = tiny_llama(len(tokenizer), seed=0)
    eos = set(info.eos_token_ids)
    rows, totals = [], {"with": [0, 0, 0], "without": [0, 0, 0]}
    for case in CASES:
        members = real_members(case)
        row = [case.name]
        for label, processor in (("with", MonitorLogitsProcessor([monitor], info)), ("without", None)):
            progress(f"sampling {case.name} {label} monitor")
            texts, finished = sample(model, tokenizer, eos, case.prompt, processor, samples, max_new_tokens, seed=1)
            hits, total = member_rate(texts, members, finished)
            started = sum(1 for t in texts if t[:1].isidentifier())
            totals[label][0] += hits
            totals[label][1] += total
            totals[label][2] += started
            row.append(f"{hits}/{total} ({100 * hits / total:.1f} %)")
        rows.append(row)
    for label in ("with", "without"):
        hits, total, started = totals[label]
        totals[label] = {"hits": hits, "total": total, "rate": hits / total, "starts_with_identifier": started}
    rows.append(["**all**"] + [f"**{t['hits']}/{t['total']} ({100 * t['rate']:.1f} %)**" for t in
                               (totals["with"], totals["without"])])
    return rows, totals


def overhead(tokenizer, info, monitor, repeats):
    compiled = Compiler(info).compile_regex(ANY_TEXT)
    context = MonitorContext(info, [monitor])
    case = CASES[0]
    prompt = case.prompt.encode("utf-8")
    # Dots as their own tokens: the idle guard masks ``.customer`` so the trigger is seen.
    pieces = re.split(r"(\.)", "unit_price" + CONTINUATION)
    tokens = [t for piece in pieces if piece for t in tokenizer.encode(piece, add_special_tokens=False)]
    bitmask = allocate_token_bitmask(1, info.vocab_size)
    idle, triggered, baseline = [], [], []
    for _ in range(repeats):
        monitored, plain = MonitoredMatcher(context, Matcher(compiled), prompt), Matcher(compiled)
        for token in tokens:
            active = monitored.active is not None
            start = time.perf_counter_ns()
            monitored.fill_next_token_bitmask(bitmask)
            ok = monitored.accept_token(token)
            (triggered if active else idle).append((time.perf_counter_ns() - start) / 1e3)
            assert ok, tokenizer.decode([token])
            start = time.perf_counter_ns()
            plain.fill_next_token_bitmask(bitmask)
            plain.accept_token(token)
            baseline.append((time.perf_counter_ns() - start) / 1e3)
    cold = {"jedi": [], "automaton": [], "mask": []}
    text = case.prompt
    for _ in range(repeats):
        monitor.clear_cache()
        start = time.perf_counter_ns()
        found = monitor.trigger(text)
        cold["jedi"].append((time.perf_counter_ns() - start) / 1e6)
        identifier_dfa.cache_clear()
        start = time.perf_counter_ns()
        dfa = identifier_dfa(found.names, found.prefix, context.boundary)
        cold["automaton"].append((time.perf_counter_ns() - start) / 1e6)
        context.clear_masks()
        start = time.perf_counter_ns()
        context.identifier_words(dfa, dfa.start)
        cold["mask"].append((time.perf_counter_ns() - start) / 1e6)
    return {
        "idle_us": median(idle), "triggered_us": median(triggered), "baseline_us": median(baseline),
        "idle_steps": len(idle) // repeats, "triggered_steps": len(triggered) // repeats,
        "cold_ms": {k: median(v) for k, v in cold.items()},
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--tokenizer", default=None, help="tokenizer folder or name (default llama-3)")
    parser.add_argument("--samples", type=int, default=60, help="samples per prompt and setting")
    parser.add_argument("--max-new-tokens", type=int, default=16)
    parser.add_argument("--repeats", type=int, default=20, help="repeats of the overhead measurements")
    parser.add_argument("--json", default=None, help="write the results here")
    args = parser.parse_args()

    from transformers import AutoTokenizer

    torch.set_num_threads(1)
    tokenizer = AutoTokenizer.from_pretrained(str(tokenizer_dir(args.tokenizer)))
    info = TokenizerInfo.from_huggingface(tokenizer)
    monitor = PythonMemberMonitor(PROJECT_DIR, include_dunder=False)
    monitor.trigger(CASES[0].prompt)  # jedi's one-off typeshed loading, not charged to any step
    monitor.clear_cache()

    progress("overhead")
    cost = overhead(tokenizer, info, monitor, args.repeats)
    print(f"## Per-step overhead ({tokenizer.name_or_path.rsplit('/', 1)[-1]}, median of {args.repeats} passes)\n")
    print(markdown_table(["step", "time", "vs plain matcher"], [
        [f"idle ({cost['idle_steps']} steps/pass): fill + accept", f"{cost['idle_us']:.1f} µs",
         f"{cost['idle_us'] / cost['baseline_us']:.2f}×"],
        [f"triggered, warm ({cost['triggered_steps']} steps/pass): fill + accept", f"{cost['triggered_us']:.1f} µs",
         f"{cost['triggered_us'] / cost['baseline_us']:.2f}×"],
        ["plain `Matcher` (any text): fill + accept", f"{cost['baseline_us']:.1f} µs", "1.00×"],
        ["triggered, cold: jedi completion", f"{cost['cold_ms']['jedi']:.2f} ms", ""],
        ["triggered, cold: identifier automaton", f"{cost['cold_ms']['automaton']:.2f} ms", ""],
        ["triggered, cold: mask (trie walk)", f"{cost['cold_ms']['mask']:.2f} ms", ""],
    ]))
    print()
    rows, totals = rates(tokenizer, info, monitor, args.samples, args.max_new_tokens)
    print(f"## Real members after the trigger ({args.samples} samples per prompt and setting)\n")
    print(markdown_table(["prompt", "with monitor", "without"], rows))
    print(f"\noutputs starting with an identifier character: with {totals['with']['starts_with_identifier']}, "
          f"without {totals['without']['starts_with_identifier']} (of {totals['without']['total']})")
    if args.json:
        write_json(args.json, {"overhead": cost, "rates": totals, "environment": environment(["jedi", "transformers"])})
    assert totals["with"]["rate"] == 1.0, "a monitored output was not a real member"


if __name__ == "__main__":
    np.seterr(all="ignore")
    main()
