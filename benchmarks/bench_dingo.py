"""Benchmark DINGO: the DP's time per block, and decoding quality with a masked LM.

Part 1, **DP time** (Llama-3 tokenizer, 128,256 logits, block of 32 positions,
random log-probabilities): for regexes with about 100 to 1,000 reachable DFA
states, the one-time table build (:func:`constrain.samplers.dingo.dingo_table`),
then the median of ``--repeats`` calls of ``dingo_decode`` (no wildcards, half the
positions wildcards) and ``dingo_sample``.  Baseline in the same run: the dense DP
the paper describes, ``alpha[q] + s[i, v]`` over the full ``states x vocab`` table
scattered to ``delta(q, v)``, run where its table fits in 300 MiB.

Part 2, **decoding** (GPT-2 tokenizer, a random 1-layer ``BertForMaskedLM`` from
config standing in for a diffusion LM, seeded): for each regex and prompt, the
LLaDA-style loop with DINGO, with the greedy token-by-token baseline on the same
schedule, and unconstrained; reported: how many outputs match (checked with the
``regex`` module), the mean model log-likelihood of the committed tokens, and on how
many runs DINGO's is at least the baseline's.

Run from the repository root::

    python benchmarks/bench_dingo.py --json /tmp/bench_dingo.json

Torch runs on one thread (the machine is shared); ``--threads`` changes it.  DP times
are the process's CPU time (``time.process_time``), which a loaded shared machine
inflates far less than wall time; ``--wall`` measures wall time instead.
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import torch  # noqa: E402
from _common import environment, markdown_table, median, progress, tokenizer_dir, write_json  # noqa: E402

from constrain import Compiler, TokenizerInfo  # noqa: E402
from constrain.samplers.diffusion import DiffusionGenerator  # noqa: E402
from constrain.samplers.dingo import dingo_decode, dingo_sample, dingo_table  # noqa: E402
from constrain.testing import ecma_to_python_regex  # noqa: E402


def _words(n: int, seed: int) -> str:
    rng = random.Random(seed)
    words = {"".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(rng.randint(4, 9))) for _ in range(n)}
    return "(" + "|".join(sorted(words)) + ")"


DP_PATTERNS = {
    "letters{0,100}": r"[a-z ]{0,100}",
    "json_record": r'\{"name": "[A-Za-z ]{1,40}", "age": [0-9]{1,3}, "tags": \[("[a-z]{1,12}"(, "[a-z]{1,12}"){0,4})?\]\}',
    "words_60": _words(60, 1) + "( " + _words(60, 1) + ")*",
    "digits{300}": r"[0-9]{300}",
    "letters{0,1000}": r"[a-z ]{0,1000}",
}

DECODE_PATTERNS = [
    r"\d{4}-\d{2}-\d{2}",
    r"(cat|dog|bird)s?( and (cat|dog|bird)s?)*",
    r"[A-Z][a-z]{2,8}( [A-Z][a-z]{2,8}){0,2}",
    r'\{"id": [0-9]{1,4}, "ok": (true|false)\}',
    r"(true|false|null|-?(0|[1-9][0-9]{0,5}))",
    r"[a-z]+@[a-z]+\.(com|org|net)",
]
PROMPTS = ["Answer: ", "The result is", "x", "Output the value:", "Q: what? A:", "{", "Name", "date"]


def dense_dp(trans: torch.Tensor, scores: torch.Tensor, start: int) -> float:
    """The paper's dense DP (scores only): every (state, token) pair at every position."""
    alpha = torch.full((trans.shape[0],), float("-inf"))
    alpha[start] = 0.0
    live = trans >= 0
    index = trans.clamp(min=0).reshape(-1)
    for row in scores:
        cand = (alpha.unsqueeze(1) + row.unsqueeze(0)).masked_fill(~live, float("-inf")).reshape(-1)
        alpha = torch.full_like(alpha, float("-inf")).scatter_reduce_(0, index, cand, "amax")
    return float(alpha.max())


def bench_dp(info: TokenizerInfo, repeats: int, block: int, clock=time.process_time) -> list[dict]:
    rows = []
    compiler = Compiler(info, cache_dir=False)
    for name, pattern in DP_PATTERNS.items():
        compiled = compiler.compile_regex(pattern)
        t0 = clock()
        table = dingo_table(compiled)
        build = clock() - t0
        gen = torch.Generator().manual_seed(0)
        scores = torch.log_softmax(torch.randn(block, info.vocab_size, generator=gen) * 3, -1)
        final = table.final_states(None)
        wild = [i % 2 == 1 for i in range(block)]
        runs = {"decode": [], "decode_wild": [], "sample": []}
        for _ in range(repeats):
            for key, call in (
                ("decode", lambda: dingo_decode(table, scores, final_states=final)),
                ("decode_wild", lambda: dingo_decode(table, scores, wildcard=wild, final_states=final)),
                ("sample", lambda: dingo_sample(table, scores, final_states=final, generator=gen)),
            ):
                t0 = clock()
                call()
                runs[key].append(clock() - t0)
        row = {"regex": name, "states": table.num_states, "classes": table.num_classes, "edges": table.num_edges,
               "build_s": build, **{f"{k}_ms": median(v) * 1e3 for k, v in runs.items()}}
        dense_bytes = (table.num_states - 1) * info.vocab_size * 4
        if dense_bytes <= 300 << 20:
            engine = compiled.engine
            trans = torch.stack([torch.from_numpy(engine.next_states(int(s), memoize=False)) for s in table.dfa_states])
            trans = torch.where(trans >= 0, torch.as_tensor(_dense_index(table, trans)), -1)
            t0 = clock()
            dense_score = dense_dp(trans, scores, 0)
            row["dense_ms"] = (clock() - t0) * 1e3
            ours = dingo_decode(table, scores, final_states=final).score
            row["dense_agrees"] = abs(dense_score - ours) < 1e-3
        rows.append(row)
        progress(f"dp {name}: {row}")
    return rows


def _dense_index(table, trans: torch.Tensor):
    """DFA state ids in ``trans`` mapped to the table's dense state indices."""
    lookup = torch.full((int(table.dfa_states.max()) + 1,), -1, dtype=torch.long)
    lookup[torch.as_tensor(table.dfa_states)] = torch.arange(len(table.dfa_states))
    return lookup[trans.clamp(min=0).long()]


def bench_decoding(gen_length: int, block_length: int, steps: int, prompts: int) -> dict:
    import regex
    from transformers import AutoTokenizer, BertConfig, BertForMaskedLM

    tokenizer = AutoTokenizer.from_pretrained(str(tokenizer_dir(None, "gpt2")))
    vocab = len(tokenizer) + 1
    torch.manual_seed(0)
    model = BertForMaskedLM(BertConfig(vocab_size=vocab, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                                       num_attention_heads=2, max_position_embeddings=128,
                                       initializer_range=0.5)).eval()
    compiler = Compiler(TokenizerInfo.from_huggingface(tokenizer, vocab_size=vocab), cache_dir=False)
    results = {m: {"match": 0, "loglik": [], "seconds": []} for m in ("dingo", "greedy", "unconstrained")}
    per_run = []
    for pattern in DECODE_PATTERNS:
        compiled = compiler.compile_regex(pattern)
        oracle = regex.compile(ecma_to_python_regex(pattern))
        for prompt in PROMPTS[:prompts]:
            run = {"regex": pattern, "prompt": prompt}
            for method in results:
                generator = DiffusionGenerator(model, tokenizer, compiled, gen_length=gen_length,
                                               block_length=block_length, steps=steps, mask_token_id=vocab - 1,
                                               method=method)
                t0 = time.perf_counter()
                out = generator.generate_output(prompt)
                results[method]["seconds"].append(time.perf_counter() - t0)
                results[method]["match"] += bool(oracle.fullmatch(out.text))
                results[method]["loglik"].append(out.log_likelihood)
                run[method] = {"text": out.text, "loglik": out.log_likelihood}
            per_run.append(run)
        progress(f"decode {pattern}: done")
    n = len(per_run)
    summary = {m: {"runs": n, "match": r["match"], "mean_loglik": sum(r["loglik"]) / n,
                   "median_s": median(r["seconds"])} for m, r in results.items()}
    wins = sum(r["dingo"]["loglik"] >= r["greedy"]["loglik"] - 1e-6 for r in per_run)
    strict = sum(r["dingo"]["loglik"] > r["greedy"]["loglik"] + 1e-6 for r in per_run)
    return {"summary": summary, "dingo_at_least_greedy": wins, "dingo_above_greedy": strict, "runs": per_run}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--tokenizer", default=None, help="tokenizer folder for the DP part (default llama-3)")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--block", type=int, default=32)
    parser.add_argument("--prompts", type=int, default=8, help="prompts per regex in the decoding part")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--skip-dp", action="store_true")
    parser.add_argument("--skip-decoding", action="store_true")
    parser.add_argument("--wall", action="store_true", help="time the DP in wall time, not CPU time")
    parser.add_argument("--json", default=None)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    report: dict = {"environment": environment(["torch", "transformers"])}
    if not args.skip_dp:
        info = TokenizerInfo.from_huggingface(
            __import__("transformers").AutoTokenizer.from_pretrained(str(tokenizer_dir(args.tokenizer))))
        dp = bench_dp(info, args.repeats, args.block, time.perf_counter if args.wall else time.process_time)
        report["dp"] = dp
        clock = "wall" if args.wall else "CPU"
        print(f"\nDP per block of {args.block} (vocabulary {info.vocab_size:,}), {clock} time, "
              f"medians of {args.repeats}:\n")
        print(markdown_table(
            ["regex", "states", "classes", "edges", "table build s", "decode ms", "decode, half wildcards ms",
             "sample ms", "dense DP ms", "dense / ours"],
            [[r["regex"], r["states"], r["classes"], r["edges"], f"{r['build_s']:.2f}", f"{r['decode_ms']:.1f}",
              f"{r['decode_wild_ms']:.1f}", f"{r['sample_ms']:.1f}",
              f"{r['dense_ms']:.0f}" if "dense_ms" in r else "(table > 300 MiB)",
              f"{r['dense_ms'] / r['decode_ms']:.0f}x" if "dense_ms" in r else ""] for r in dp]))
    if not args.skip_decoding:
        dec = bench_decoding(gen_length=32, block_length=16, steps=8, prompts=args.prompts)
        report["decoding"] = dec
        print(f"\nDecoding ({len(dec['runs'])} runs: {len(DECODE_PATTERNS)} regexes x {args.prompts} prompts; "
              f"gen_length 32, block 16, 8 steps = 4 tokens per step):\n")
        print(markdown_table(
            ["method", "outputs matching", "mean log-likelihood", "median s / output"],
            [[m, f"{s['match']} / {s['runs']}", f"{s['mean_loglik']:.2f}", f"{s['median_s']:.2f}"]
             for m, s in dec["summary"].items()]))
        print(f"\nDINGO >= greedy on {dec['dingo_at_least_greedy']} / {len(dec['runs'])} runs "
              f"(strictly above on {dec['dingo_above_greedy']}).")
    if args.json:
        write_json(args.json, report)


if __name__ == "__main__":
    main()
