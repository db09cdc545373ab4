"""Per-step overhead of ASAp over ordinary constrained sampling, vocabulary 128k.

Both methods run the same loop of :class:`constrain.samplers.asap.ASApSampler`
(``sample`` vs ``sample_constrained``) on the Llama-3 tokenizer (128,256 ids) with a
synthetic model that returns random logits (seeded), so the figures are the sampler's
own cost: mask fill, tempered log-softmax, mask apply, the draw and, for ASAp, the
trie (expansion, the sparse ``log EFG`` correction, tightening).  The model's time is
measured inside it and subtracted.  Methods alternate round by round (one run of
``--samples`` samples each), so machine noise hits them alike; medians per step.

A second table times the reweighting op alone (:func:`constrain.samplers.asap.reweight_`)
against the number of visited children of the current node: the sparse correction is
``O(children)``, the rest one pass over the vocabulary.

Usage::

    python benchmarks/bench_asap.py [--rounds 5] [--samples 32] [--tokenizer llama-3]
"""

from __future__ import annotations

import argparse
import statistics
import time
from types import SimpleNamespace

import torch

from _common import environment, markdown_table, progress, ratio, tokenizer_dir

from constrain import Compiler, TokenizerInfo
from constrain.samplers.asap import ASApSampler, ASApTrie, reweight_

PATTERN = r'\{"name": "[A-Za-z ]{1,12}", "age": [0-9]{1,3}, "tags": \[("[a-z]{1,8}"(, "[a-z]{1,8}"){0,2})?\]\}'


class SyntheticLM:
    """Random but deterministic logits: a function of the whole prefix, as a real model's.

    ASAp assumes ``P(t | w)`` is the same every time ``w`` is evaluated (a model that
    returned fresh noise at every call would make the trie's sums inconsistent).  Each
    row carries a hash of its tokens in ``past_key_values``; the logits are row
    ``hash % 64`` of a fixed random table.  The time spent here is measured and
    subtracted from the sampler's.
    """

    TABLE_ROWS = 64

    def __init__(self, vocab_size: int, seed: int = 0) -> None:
        generator = torch.Generator().manual_seed(seed)
        self.table = 3.0 * torch.randn((self.TABLE_ROWS, vocab_size), generator=generator)
        self.device = torch.device("cpu")
        self.seconds = 0.0
        self.calls = 0

    def __call__(self, input_ids: torch.Tensor, past_key_values=None, use_cache: bool = True):
        start = time.perf_counter()
        hashes = torch.zeros(input_ids.shape[0], dtype=torch.int64) if past_key_values is None else past_key_values
        for column in input_ids.T:
            hashes = (hashes * 1_000_003 + column) % 2_147_483_647
        logits = self.table[hashes % self.TABLE_ROWS].unsqueeze(1)
        self.seconds += time.perf_counter() - start
        self.calls += 1
        return SimpleNamespace(logits=logits, past_key_values=hashes)


def step_cost(sampler: ASApSampler, method: str, samples: int, batch: int, seed: int) -> float:
    """Seconds per sampling step (one model call for the batch), model time excluded."""
    model = sampler.model
    model.seconds, model.calls = 0.0, 0
    run = getattr(sampler, method)
    start = time.perf_counter()
    run([128000], samples, max_new_tokens=96, batch_size=batch, generator=torch.Generator().manual_seed(seed))
    total = time.perf_counter() - start
    return (total - model.seconds) / model.calls


def end_to_end(info: TokenizerInfo, rounds: int, samples: int) -> list[list[str]]:
    compiled = Compiler(info).compile_regex(PATTERN)
    rows = []
    for batch in (1, 16):
        sampler = ASApSampler(SyntheticLM(info.vocab_size), None, compiled)
        step_cost(sampler, "sample_constrained", batch, batch, 0)  # warm-up (numba, masks)
        times: dict[str, list[float]] = {"sample_constrained": [], "sample": []}
        for r in range(rounds):
            for method in times:
                times[method].append(step_cost(sampler, method, samples * batch, batch, r))
            progress(f"batch {batch}: round {r + 1}/{rounds}")
        plain = statistics.median(times["sample_constrained"])
        asap = statistics.median(times["sample"])
        trie = sampler.trie([128000], max_new_tokens=96)
        rows.append([
            str(batch), f"{plain * 1e3:.2f}", f"{asap * 1e3:.2f}", f"{(asap - plain) * 1e3:+.2f}",
            ratio(asap, plain), f"{len(trie):,}", f"{trie.memory_bytes() / 2**20:.1f}",
        ])
    return rows


def reweight_only(vocab: int, rounds: int) -> list[list[str]]:
    """The reweighting op alone at batch 1 against the current node's visited children."""
    generator = torch.Generator().manual_seed(0)
    logp = torch.log_softmax(torch.randn((1, vocab), generator=generator), dim=-1)
    rows = []
    for children in (0, 100, 10_000, 100_000):
        trie = ASApTrie([1], 1.0, 8)
        trie.expand(ASApTrie.ROOT, 1.0)
        for token in torch.randperm(vocab, generator=generator)[:children].tolist():
            trie.expand(trie.child(ASApTrie.ROOT, token, 1.0 / vocab), 0.5)
        trie.correction(ASApTrie.ROOT)  # built once, cached until a child's bound moves
        softmax, op = [], []
        for _ in range(rounds):
            start = time.perf_counter()
            torch.log_softmax(logp, dim=-1)
            softmax.append(time.perf_counter() - start)
            work = logp.clone()  # reweight_ works in place
            start = time.perf_counter()
            reweight_(work, [trie], [ASApTrie.ROOT])
            op.append(time.perf_counter() - start)
        rows.append([
            f"{children:,}", f"{statistics.median(softmax) * 1e6:.0f}", f"{statistics.median(op) * 1e6:.0f}",
            ratio(statistics.median(op), statistics.median(softmax)),
        ])
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--samples", type=int, default=32, help="samples per run and batch row")
    parser.add_argument("--tokenizer", default=None, help="folder or name under the data dir (default llama-3)")
    args = parser.parse_args(argv)
    from transformers import AutoTokenizer

    torch.set_num_threads(1)
    info = TokenizerInfo.from_huggingface(AutoTokenizer.from_pretrained(tokenizer_dir(args.tokenizer)))
    env = environment(["torch", "numba"])
    print(f"vocab {info.vocab_size:,}; torch threads 1; {env['platform']}; {env.get('usable_cpus')} usable CPUs")
    print(f"\nPer sampling step (one batched model call), model time excluded; regex `{PATTERN}`\n")
    print(markdown_table(
        ["batch", "constrained (ms)", "ASAp (ms)", "overhead (ms)", "ASAp / constrained", "trie nodes", "trie MiB"],
        end_to_end(info, args.rounds, args.samples),
    ))
    print("\nThe reweighting op alone, batch 1, against visited children of the node (µs, medians)\n")
    print(markdown_table(
        ["visited children", "log_softmax over vocab", "reweight_ (sparse correction, in place)", "ratio"],
        reweight_only(info.vocab_size, max(20, args.rounds * 4)),
    ))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
