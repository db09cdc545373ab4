"""Plot KL(empirical || exact) against the number of samples, ASAp vs constrained sampling.

Regenerates ``docs/asap_kl.png`` (the figure in ARCHITECTURE.md's ASAp section), in
the style of the ASAp paper's figures: for each case the KL divergence between the
empirical distribution of the first ``k`` samples and the exact ``P(s | s ∈ L)``
(enumerated over every allowed token sequence), for ASAp and for ordinary constrained
sampling.  Same setting as ``tests/test_asap.py``: a one-layer random Llama sized to
the Llama-2 tokenizer with a logit bias on the language's tokens; sequential sampling
(``batch_size=1``, the paper's algorithm) unless ``--batch-size`` says otherwise.

Usage::

    python benchmarks/plot_asap_kl.py [--samples 1000] [--out docs/asap_kl.png]

Needs matplotlib (``pip install matplotlib``); about a minute on one core.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import torch

from _common import REPO_ROOT, progress, tokenizer_dir

from constrain import Compiler, TokenizerInfo
from constrain.samplers.asap import ASApSampler
from constrain.samplers.exact import (
    empirical_distribution,
    enumerate_exact,
    kl_divergence,
    substring_bias,
    tiny_biased_llama,
)

#: (title, language, constraint kind, constraint, token bias by bytes)
CASES = [
    ("regex cat|dog (tokenization distortion)", ["cat", "dog"], "regex", r"cat|dog",
     substring_bias(["cat", "dog"], 6.0)),
    ('grammar start: "ab" | "c" (the paper\'s trap)', ["ab", "c"], "grammar", 'start: "ab" | "c"',
     {b"a": 10.0, b"c": 4.0}),
]


def checkpoints(n: int) -> list[int]:
    """Roughly log-spaced sample counts up to ``n``."""
    points, k = [], 10
    while k < n:
        points.append(k)
        k = int(k * 1.5) + 1
    return points + [n]


def curve(samples: list[tuple[int, ...]], target: dict, points: list[int]) -> list[float]:
    return [kl_divergence(empirical_distribution(samples[:k]), target) for k in points]


def run_case(tokenizer, info, case, n: int, batch_size: int):
    title, language, kind, source, bias = case
    compiler = Compiler(info)
    compiled = compiler.compile_regex(source) if kind == "regex" else compiler.compile_grammar(source)
    model = tiny_biased_llama(info, bias, eos_bias=6.0)
    prompt = tokenizer("").input_ids
    budget = max(len(s) for s in language) + 1
    exact = enumerate_exact(model, prompt, language, info, max_new_tokens=budget)
    sampler = ASApSampler(model, tokenizer, compiled)
    results = {}
    for name, method in (("ASAp", sampler.sample), ("constrained sampling", sampler.sample_constrained)):
        progress(f"{title}: {name}, {n} samples")
        drawn = method(prompt, n, max_new_tokens=budget, batch_size=batch_size,
                       generator=torch.Generator().manual_seed(1))
        results[name] = [s.token_ids for s in drawn]
    floor = kl_divergence(exact.constrained, exact.target)
    return title, exact, results, floor


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=1000)
    parser.add_argument("--batch-size", type=int, default=1)
    parser.add_argument("--out", type=Path, default=REPO_ROOT / "docs" / "asap_kl.png")
    args = parser.parse_args(argv)
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("plot_asap_kl.py needs matplotlib: pip install matplotlib", file=sys.stderr)
        return 2
    from transformers import AutoTokenizer

    torch.set_num_threads(1)
    tokenizer = AutoTokenizer.from_pretrained(tokenizer_dir(None, "llama-2"))
    info = TokenizerInfo.from_huggingface(tokenizer)
    points = checkpoints(args.samples)
    fig, axes = plt.subplots(1, len(CASES), figsize=(6 * len(CASES), 4.2))
    for axis, case in zip(axes, CASES):
        title, exact, results, floor = run_case(tokenizer, info, case, args.samples, args.batch_size)
        for (name, samples), style in zip(results.items(), ("-o", "-s")):
            values = curve(samples, exact.target, points)
            axis.plot(points, values, style, markersize=3, label=name)
            print(f"{title} | {name} | " + " ".join(f"{k}:{v:.3f}" for k, v in zip(points, values)))
        axis.axhline(floor, color="grey", linestyle=":", label="KL(constrained || exact), exact")
        axis.set_xscale("log")
        axis.set_yscale("log")
        axis.set_xlabel("number of samples")
        axis.set_ylabel("KL(empirical || exact)  [nats]")
        axis.set_title(title, fontsize=10)
        axis.legend(fontsize=8)
    fig.suptitle(f"ASAp vs constrained sampling, tiny random Llama on the Llama-2 tokenizer "
                 f"(batch_size={args.batch_size}, seed 1)", fontsize=10)
    fig.tight_layout()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(args.out, dpi=110)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
