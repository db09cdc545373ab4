"""Constrained speculative decoding against non-speculative constrained decoding, on CPU.

Models (random weights, no download): a GPT-2-small-shaped Llama target (768 wide,
12 layers by default) and, as draft, **the target's own first layer** (same embeddings,
final norm and head, one of twelve layers).  Random models agree poorly, so the target's
layers 2..12 are scaled down (``--depth-scale``, default 0.02 on their attention and MLP
output projections): the draft then predicts the target well, as a trained draft would.
A random independent small draft is also measured (``draft=random``) to show the
acceptance such models have.  The head is sharpened (``--head-scale``) so that the
distributions are peaked like a trained model's rather than near uniform.

Rows, per constraint, greedy decoding, same prompts, medians over prompts:

* ``hf generate``: ``model.generate`` with :class:`ConstrainedLogitsProcessor` (baseline);
* ``hf assisted``: ``model.generate(assistant_model=draft)`` with the same processor;
* ``ours, no draft, no jump``: our loop with nothing to propose (one target forward per token);
* ``jump-forward only``: forced text proposed, no draft model;
* ``draft``, ``draft + jump-forward``: :class:`SpeculativeGenerator`.

Time is the process's CPU time with one torch thread: on a shared machine wall-clock
time measures the neighbours; single-threaded CPU time is what the wall clock reads on
an idle core.  Every speculative row's tokens are checked equal to the baseline's (greedy equality).
Reported: tokens, acceptance rate of draft tokens, acceptance of forced tokens, target
forwards per token, ms per token, speed-up vs ``hf generate``.

Usage: ``python benchmarks/bench_speculative.py [--tokenizer gpt2] [--prompts 4] [--max-new-tokens 64]``
"""

from __future__ import annotations

import argparse
import copy
import statistics
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import environment, markdown_table, progress, tokenizer_dir  # noqa: E402

JSON_REGEX = (r'\{"id": \d{1,6}, "name": "[a-z]{2,10}", "email": "[a-z]{2,8}@example\.com", '
              r'"active": (true|false), "role": "(admin|user|guest)", "tags": \["[a-z]{2,6}"(, "[a-z]{2,6}"){0,3}\]\}')
CONSTRAINTS = {
    "json-shaped regex": ("regex", JSON_REGEX),
    "free text regex": ("regex", r"[a-z]+( [a-z]+){5,12}\."),
    "JSON Schema": ("schema", {"type": "object", "additionalProperties": False,
                               "required": ["name", "email", "age", "tags"],
                               "properties": {"name": {"type": "string", "maxLength": 12},
                                              "email": {"type": "string", "format": "email"},
                                              "age": {"type": "integer", "minimum": 0, "maximum": 130},
                                              "tags": {"type": "array", "items": {"enum": ["a", "b", "c"]},
                                                       "maxItems": 3}}}),
    "lark json grammar": ("builtin", "json"),
}
PROMPTS = ["Here is the record:", "User profile as JSON:", "Output:", "The answer is", "Data:", "Result ->"]


def build_models(vocab: int, hidden: int, layers: int, depth_scale: float, head_scale: float):
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    config = LlamaConfig(vocab_size=vocab, hidden_size=hidden, intermediate_size=int(hidden * 8 / 3) // 64 * 64,
                         num_hidden_layers=layers, num_attention_heads=hidden // 64, num_key_value_heads=hidden // 64,
                         max_position_embeddings=1024, tie_word_embeddings=False)
    target = LlamaForCausalLM(config).eval()
    with torch.no_grad():
        target.lm_head.weight.mul_(head_scale)
        for layer in target.model.layers[1:]:
            layer.self_attn.o_proj.weight.mul_(depth_scale)
            layer.mlp.down_proj.weight.mul_(depth_scale)
    truncated = copy.deepcopy(target)
    truncated.model.layers = truncated.model.layers[:1]
    truncated.config.num_hidden_layers = 1
    small = LlamaConfig(vocab_size=vocab, hidden_size=64, intermediate_size=128, num_hidden_layers=1,
                        num_attention_heads=1, num_key_value_heads=1, max_position_embeddings=1024)
    torch.manual_seed(1)
    random_draft = LlamaForCausalLM(small).eval()
    return target, truncated, random_draft


def compile_all(info):
    from constrain import Compiler

    compiler = Compiler(info)
    out = {}
    for name, (kind, source) in CONSTRAINTS.items():
        if kind == "schema":
            out[name] = compiler.compile_json_schema(source, whitespace="canonical")
        else:
            out[name] = compiler.compile_regex(source) if kind == "regex" else compiler.compile_builtin(source)
    return out


def run_hf(target, compiled, info, ids, max_new, assistant=None):
    from constrain import ConstrainedLogitsProcessor

    kwargs = dict(max_new_tokens=max_new, do_sample=False, eos_token_id=list(info.eos_token_ids),
                  pad_token_id=info.eos_token_ids[0], logits_processor=[ConstrainedLogitsProcessor(compiled)])
    if assistant is not None:
        kwargs["assistant_model"] = assistant
    start = time.process_time()
    with torch.no_grad():
        out = target.generate(torch.tensor([ids]), **kwargs)
    return out[0, len(ids):].tolist(), time.process_time() - start, None


def run_ours(target, draft, compiled, tokenizer, ids, max_new, *, jump_forward, k=4):
    from constrain.samplers.speculative import SpeculativeGenerator

    gen = SpeculativeGenerator(target, draft, compiled, k=k, jump_forward=jump_forward, tokenizer=tokenizer)
    start = time.process_time()
    out = gen.generate(ids, max_new_tokens=max_new)
    return out.token_ids, time.process_time() - start, out.stats


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tokenizer", default="gpt2")
    parser.add_argument("--prompts", type=int, default=4)
    parser.add_argument("--max-new-tokens", type=int, default=64)
    parser.add_argument("--hidden", type=int, default=768)
    parser.add_argument("--layers", type=int, default=12)
    parser.add_argument("--depth-scale", type=float, default=0.02)
    parser.add_argument("--head-scale", type=float, default=20.0)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--constraints", nargs="*", default=list(CONSTRAINTS))
    args = parser.parse_args()
    torch.set_num_threads(args.threads)

    from transformers import AutoTokenizer

    from constrain import TokenizerInfo

    tokenizer = AutoTokenizer.from_pretrained(tokenizer_dir(args.tokenizer, args.tokenizer))
    info = TokenizerInfo.from_huggingface(tokenizer)
    target, truncated, random_draft = build_models(len(tokenizer), args.hidden, args.layers,
                                                   args.depth_scale, args.head_scale)
    params = {name: sum(p.numel() for p in m.parameters()) / 1e6
              for name, m in (("target", target), ("truncated", truncated), ("random", random_draft))}
    compiled = compile_all(info)
    prompts = [tokenizer(p).input_ids for p in PROMPTS[: args.prompts]]
    modes = {
        "hf generate": lambda c, ids: run_hf(target, c, info, ids, args.max_new_tokens),
        "hf assisted (truncated draft)": lambda c, ids: run_hf(target, c, info, ids, args.max_new_tokens, truncated),
        "ours, no draft, no jump": lambda c, ids: run_ours(target, None, c, tokenizer, ids, args.max_new_tokens,
                                                            jump_forward=False),
        "jump-forward only": lambda c, ids: run_ours(target, None, c, tokenizer, ids, args.max_new_tokens,
                                                     jump_forward=True),
        "draft=random": lambda c, ids: run_ours(target, random_draft, c, tokenizer, ids, args.max_new_tokens,
                                                jump_forward=False),
        "draft=truncated": lambda c, ids: run_ours(target, truncated, c, tokenizer, ids, args.max_new_tokens,
                                                   jump_forward=False),
        "draft=truncated + jump-forward": lambda c, ids: run_ours(target, truncated, c, tokenizer, ids,
                                                                  args.max_new_tokens, jump_forward=True),
    }
    # Warm up numba kernels, mask caches and torch.
    for c in compiled.values():
        run_ours(target, truncated, c, tokenizer, prompts[0], 8, jump_forward=True)
    rows = []
    for cname in args.constraints:
        c = compiled[cname]
        base_ms, references = None, {}
        for mode, fn in modes.items():
            per_token, tokens, accept, forced_acc, fwd = [], 0, [], [], []
            for i, ids in enumerate(prompts):
                out, seconds, stats = fn(c, ids)
                # Greedy speculative decoding must reproduce the baseline (which runs first).
                if references.setdefault(i, out) != out:
                    raise SystemExit(f"greedy mismatch: {cname} / {mode} / prompt {i}")
                per_token.append(1000 * seconds / len(out))
                tokens += len(out)
                if stats is not None:
                    accept.append((stats.drafted_accepted, stats.drafted))
                    forced_acc.append((stats.forced_accepted, stats.forced))
                    fwd.append(stats.target_forwards / stats.generated_tokens)
            ms = statistics.median(per_token)
            if mode == "hf generate":
                base_ms = ms
            rows.append([cname, mode, tokens, _rate(accept), _rate(forced_acc),
                         f"{statistics.median(fwd):.2f}" if fwd else ("1.00" if mode == "hf generate" else "-"),
                         f"{ms:.1f}", f"{base_ms / ms:.2f}x"])
            progress(f"{cname} / {mode}: {ms:.1f} ms/token")
    env = environment(["torch", "transformers"])
    print(f"target {params['target']:.1f}M params ({args.layers} x {args.hidden}, deeper layers x{args.depth_scale}), "
          f"truncated draft {params['truncated']:.1f}M (1 layer), random draft {params['random']:.1f}M; "
          f"tokenizer {args.tokenizer}; {args.prompts} prompts, max {args.max_new_tokens} new tokens, greedy; "
          f"torch threads {args.threads}; {env.get('platform', '')}")
    print(markdown_table(["constraint", "mode", "tokens", "draft accept", "forced accept", "target fwd/token",
                          "CPU ms/token (median)", "speed-up vs hf generate"], rows))


def _rate(pairs: list[tuple[int, int]]) -> str:
    accepted, total = sum(a for a, _ in pairs), sum(t for _, t in pairs)
    return f"{accepted / total:.0%} of {total}" if total else "-"


if __name__ == "__main__":
    main()
