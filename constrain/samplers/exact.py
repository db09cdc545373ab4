"""Exact sampling distributions over a finite language, by enumeration.

The oracle for grammar-aligned samplers (tests, the KL plot): given a causal LM, a
prompt and the finite language as an explicit list of strings, it walks every token
sequence that spells a string of the language and computes

* the target ``P(s | s ∈ L)`` that ASAp converges to,
* the distribution ordinary constrained sampling actually draws from (each step
  renormalised over the allowed tokens), and
* the exact EFG of every grammatical prefix (ASAp's bounds must stay above it).

It does not use the compiled grammar or the :class:`~constrain.matcher.Matcher`: a
token is allowed after a prefix when the prefix's bytes followed by the token's bytes
are a prefix of a string in the list, and EOS when the bytes are a string in the
list, so it checks the engine instead of repeating it.  Model forward passes are made
once per prefix.  Sequences are keyed without their EOS token (the several EOS ids of
a tokenizer are summed), and must end within ``max_new_tokens`` tokens, EOS included,
as in :class:`~constrain.samplers.asap.ASApSampler`.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import torch

from ..vocab import TokenizerInfo

__all__ = [
    "ExactDistribution",
    "enumerate_exact",
    "kl_divergence",
    "empirical_distribution",
    "tiny_biased_llama",
    "substring_bias",
]


@dataclass
class ExactDistribution:
    """What :func:`enumerate_exact` returns (token-id tuples, EOS excluded)."""

    target: dict[tuple[int, ...], float] = field(default_factory=dict)
    constrained: dict[tuple[int, ...], float] = field(default_factory=dict)
    efg: dict[tuple[int, ...], float] = field(default_factory=dict)

    @property
    def language_mass(self) -> float:
        """``P(L)`` under the model: the exact EFG of the empty prefix."""
        return self.efg[()]


def _candidate_tokens(info: TokenizerInfo, strings: Sequence[bytes]) -> dict[int, bytes]:
    """Tokens whose bytes occur inside some string (the only ones that can be allowed)."""
    pieces = {s[i:j] for s in strings for i in range(len(s)) for j in range(i + 1, len(s) + 1)}
    skip = set(info.eos_token_ids) | set(info.special_token_ids)
    return {t: b for t, b in enumerate(info.token_bytes) if b in pieces and t not in skip}


def enumerate_exact(
    model: Any,
    prompt_ids: Sequence[int],
    language: Iterable[str | bytes],
    info: TokenizerInfo,
    *,
    max_new_tokens: int,
    temperature: float = 1.0,
) -> ExactDistribution:
    """Enumerate every token sequence of ``language`` and its exact probabilities.

    Parameters
    ----------
    language:
        The finite language, written out (keep it small: the number of token
        sequences grows quickly with string length).
    """
    strings = [s.encode("utf-8") if isinstance(s, str) else bytes(s) for s in language]
    complete = set(strings)
    prefixes = {s[:i] for s in strings for i in range(len(s) + 1)}
    tokens = _candidate_tokens(info, strings)
    eos = list(info.eos_token_ids)

    # Breadth first, one batched forward pass per depth (all prefixes of a level have
    # the same length, so no padding is needed).  Per prefix keep only what the sums
    # below read: the log-probabilities of its allowed tokens and of EOS.
    level: list[tuple[tuple[int, ...], bytes]] = [((), b"")]
    allowed: dict[tuple[int, ...], list[tuple[int, float]]] = {}
    eos_mass: dict[tuple[int, ...], float] = {}
    for depth in range(max_new_tokens):
        if not level:
            break
        logps = _log_probs(model, prompt_ids, [seq for seq, _ in level], temperature)
        following = []
        for (seq, text), logp in zip(level, logps):
            eos_mass[seq] = float(torch.logsumexp(logp[eos], 0).exp()) if text in complete else 0.0
            allowed[seq] = []
            if depth == max_new_tokens - 1:
                continue  # the last step allows only EOS
            for token, piece in tokens.items():
                if text + piece in prefixes:
                    allowed[seq].append((token, float(logp[token])))
                    following.append((seq + (token,), text + piece))
        level = following

    result = ExactDistribution()

    def efg(seq: tuple[int, ...]) -> float:
        value = eos_mass[seq] + sum(math.exp(lp) * efg(seq + (t,)) for t, lp in allowed[seq])
        result.efg[seq] = value
        return value

    def spread(seq: tuple[int, ...], log_p: float, log_q: float) -> None:
        total = eos_mass[seq] + sum(math.exp(lp) for _, lp in allowed[seq])
        if eos_mass[seq] > 0:
            result.target[seq] = math.exp(log_p) * eos_mass[seq]
            result.constrained[seq] = math.exp(log_q) * eos_mass[seq] / total
        for token, lp in allowed[seq]:
            spread(seq + (token,), log_p + lp, log_q + lp - math.log(total))

    mass = efg(())
    if mass <= 0:
        raise ValueError("Invalid language: no string has positive probability within max_new_tokens")
    spread((), 0.0, 0.0)
    result.target = {seq: p / mass for seq, p in result.target.items()}
    return result


@torch.no_grad()
def _log_probs(model: Any, prompt_ids: Sequence[int], seqs: list[tuple[int, ...]], temperature: float) -> torch.Tensor:
    """Tempered next-token log-probabilities (float64) after each ``prompt + seq``, batched."""
    rows = []
    for start in range(0, len(seqs), 64):
        ids = torch.tensor([list(prompt_ids) + list(seq) for seq in seqs[start : start + 64]])
        logits = model(input_ids=ids).logits[:, -1].float()
        rows.append(torch.log_softmax(logits / temperature, dim=-1).double())
    return torch.cat(rows)


def empirical_distribution(samples: Iterable[Sequence[int]]) -> dict[tuple[int, ...], float]:
    """Relative frequency of each token sequence."""
    counts = Counter(tuple(s) for s in samples)
    n = sum(counts.values())
    return {seq: c / n for seq, c in counts.items()}


def kl_divergence(p: Mapping[tuple[int, ...], float], q: Mapping[tuple[int, ...], float]) -> float:
    """``KL(p || q)`` in nats; ``inf`` when ``p`` puts mass where ``q`` has none."""
    total = 0.0
    for key, mass in p.items():
        if mass <= 0:
            continue
        other = q.get(key, 0.0)
        if other <= 0:
            return math.inf
        total += mass * math.log(mass / other)
    return total


def tiny_biased_llama(
    info: TokenizerInfo,
    token_bias: Mapping[bytes, float],
    *,
    eos_bias: float = 0.0,
    initializer_range: float = 0.2,
    seed: int = 0,
) -> Any:
    """A one-layer random ``LlamaForCausalLM`` sized to ``info``, with a logit bias.

    A random model spreads its mass over the whole vocabulary, so every grammatical
    token is about ``1/V`` likely and the target distribution collapses onto the
    fewest-token spellings.  A bias on the tokens spelling the language (by their
    bytes: byte-fallback twins included) and on EOS makes it a model that "talks
    about" the language, the situation the ASAp paper studies; uneven biases create
    the paper's distortion (a likely first token whose continuations are unlikely).
    The bias lives in ``lm_head`` so the model still works with ``generate``.
    """
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(seed)
    config = LlamaConfig(
        vocab_size=info.vocab_size, hidden_size=32, intermediate_size=64, num_hidden_layers=1,
        num_attention_heads=2, num_key_value_heads=2, max_position_embeddings=128,
        initializer_range=initializer_range, tie_word_embeddings=False,
    )
    model = LlamaForCausalLM(config).eval()
    bias = torch.zeros(info.vocab_size)
    for token, data in enumerate(info.token_bytes):
        if data in token_bias and token not in info.special_token_ids:
            bias[token] = token_bias[data]
    bias[list(info.eos_token_ids)] = eos_bias
    head = torch.nn.Linear(config.hidden_size, info.vocab_size, bias=True)
    head.weight = model.lm_head.weight
    head.bias = torch.nn.Parameter(bias, requires_grad=False)
    model.lm_head = head
    return model


def substring_bias(language: Iterable[str], value: float) -> dict[bytes, float]:
    """``value`` for every substring of a string of ``language`` (all tokens that spell it)."""
    data = [s.encode("utf-8") for s in language]
    return {s[i:j]: value for s in data for i in range(len(s)) for j in range(i + 1, len(s) + 1)}
