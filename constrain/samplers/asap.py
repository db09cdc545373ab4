"""Grammar-aligned sampling with ASAp (Park et al., "Grammar-Aligned Decoding", 2024).

Constrained decoding masks and renormalises token by token.  The result is always
grammatical but its distribution is distorted: a token that opens a likely prefix is
taken with its full next-token probability even when every grammatical continuation
of that prefix is very unlikely.  The distribution we want is the model's,
conditioned on the language: ``P(s | s ∈ L) ∝ P(s) · 1[s ∈ L]``.

ASAp (adaptive sampling with approximate expected futures) gets there over repeated
sampling for one prompt.  The expected future grammaticality of a prefix ``w`` is

    EFG(w) = Σ_{t allowed after w} P(t | w) · EFG(w t),   EFG(w EOS) = 1,

the probability that the model's own continuation of ``w`` ends in the language.
Sampling every token with weight ``P(t | w) · EFG(w t)`` would be exact.  ASAp keeps
an *upper bound* on EFG for every prefix it has sampled, in a trie:

* a prefix never evaluated has bound 1;
* once the model has been run at ``w`` the bound becomes the sum above with the
  children's current bounds: the mass of the tokens the mask allows
  (``allowed(w)``) minus, for each visited child ``c``, ``P(c | w) · (1 - EFG(w c))``;
* a change is pushed up to the root (each ancestor recomputed from its children).

Each bound is a sum of sound bounds, so it never falls below the exact EFG; once every
prefix of a finite language has been visited the bounds are exact and so is sampling.
The first sample (all bounds 1) is ordinary constrained sampling.

Vectorization and memory: a node stores its parent, token, ``P(token | parent)``,
``allowed`` and its bound, plus a dict of *visited* children; never a vocabulary-sized
row.  At each step the weights are formed for the whole vocabulary from the masked
log-probabilities plus one sparse correction, ``log EFG(w c)`` added at the visited
children ``c`` (``Tensor.index_put_`` with accumulation), so the per-step cost is one
tensor op over the vocabulary plus ``O(visited children)``.  The trie holds at most
``n · max_new_tokens`` nodes after ``n`` samples (:meth:`ASApTrie.memory_bytes`).

Batches: rows of a batch are drawn in lockstep from one shared trie.  A node is
expanded (and its bound pushed to the root) the moment the model is first evaluated
there, so every row sees the bounds that the other rows' earlier steps produced.
With ``batch_size=1`` this is exactly the paper's sequential algorithm; with larger
batches the rows of one step share a proposal, which converges a little more slowly
per sample but needs ``batch_size`` times fewer model calls.  Bounds stay sound either
way (each update is a recomputation from sound children).

Length budget: a sequence must end with EOS within ``max_new_tokens`` tokens, so the
last step allows only EOS.  The trie is therefore keyed by (prompt, temperature,
``max_new_tokens``): the same prefix has a different EFG under another budget.
"""

from __future__ import annotations

import hashlib
import json
import math
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from ..compiler import CompiledGrammar
from ..errors import ConstrainError
from ..kernels import apply_token_bitmask_, pack_bool_mask
from ..matcher import Matcher
from .processor import ConstrainedLogitsProcessor

__all__ = ["ASApTrie", "ASApState", "ASApSample", "ASApSampler", "ASApLogitsProcessor", "reweight_"]

#: Format version of saved tries (bumped when the arrays change meaning).
_FORMAT_VERSION = 1

#: Tries are keyed by (prompt token ids, temperature, max_new_tokens).
TrieKey = tuple[tuple[int, ...], float, int]


def grammar_fingerprint(compiled: CompiledGrammar) -> str:
    """A digest of the constraint and the vocabulary, so a saved trie is not reused
    under another grammar or tokenizer (its bounds would be meaningless)."""
    source = compiled.source
    text = source if isinstance(source, str) else json.dumps(source, sort_keys=True, default=str)
    digest = hashlib.sha256()
    for part in (compiled.kind, text, compiled.tokenizer_info.hash):
        digest.update(part.encode("utf-8"))
        digest.update(b"\0")
    return digest.hexdigest()


class ASApTrie:
    """The sampled prefixes of one prompt, each with an upper bound on its EFG.

    Nodes are integers (the root is 0) in flat lists, so the trie saves as a handful of
    arrays.  Only visited children are stored.

    Parameters
    ----------
    prompt_ids, temperature, max_new_tokens:
        What the bounds are relative to (see the module docstring).
    """

    ROOT = 0

    def __init__(self, prompt_ids: Sequence[int], temperature: float, max_new_tokens: int) -> None:
        self.prompt_ids = tuple(int(t) for t in prompt_ids)
        self.temperature = float(temperature)
        self.max_new_tokens = int(max_new_tokens)
        self.parent: list[int] = [-1]
        self.token: list[int] = [-1]
        self.prob: list[float] = [1.0]  # P(token | parent prefix)
        self.allowed: list[float] = [math.nan]  # mass the mask allows here; NaN: never evaluated
        self.efg: list[float] = [1.0]
        # Σ over visited children of P(c | w) · (1 - EFG(w c)), kept up to date by deltas
        # so that tightening costs O(depth), not O(children) per ancestor.
        self.deficit: list[float] = [0.0]
        self.children: list[dict[int, int]] = [{}]
        # Per node: (child tokens, log EFG of children) for the sparse correction; None when stale.
        self._correction: list[tuple[np.ndarray, np.ndarray] | None] = [None]

    @property
    def key(self) -> TrieKey:
        return (self.prompt_ids, self.temperature, self.max_new_tokens)

    def __len__(self) -> int:
        return len(self.parent)

    # -- structure ---------------------------------------------------------------------
    def child(self, node: int, token: int, prob: float) -> int:
        """The child of ``node`` by ``token``, created (bound 1) when first visited."""
        kids = self.children[node]
        found = kids.get(token)
        if found is not None:
            return found
        new = len(self.parent)
        self.parent.append(node)
        self.token.append(int(token))
        self.prob.append(float(prob))
        self.allowed.append(math.nan)
        self.efg.append(1.0)
        self.deficit.append(0.0)
        self.children.append({})
        self._correction.append(None)
        kids[token] = new
        self._correction[node] = None
        return new

    def find(self, tokens: Sequence[int]) -> int | None:
        """The node of a prefix (token ids after the prompt), or None if never sampled."""
        node = self.ROOT
        for token in tokens:
            node = self.children[node].get(int(token))
            if node is None:
                return None
        return node

    def path(self, node: int) -> list[int]:
        """The token ids from the root to ``node``."""
        tokens = []
        while node != self.ROOT:
            tokens.append(self.token[node])
            node = self.parent[node]
        return tokens[::-1]

    def is_expanded(self, node: int) -> bool:
        """True once the model has been evaluated at this prefix."""
        return not math.isnan(self.allowed[node])

    # -- bounds ------------------------------------------------------------------------
    def expand(self, node: int, allowed_mass: float) -> None:
        """Record the mass the mask allowed at ``node`` (first evaluation) and tighten.

        ``allowed_mass`` is ``Σ_{t allowed} P(t | prefix)``; with every child bound at 1
        that is the node's new bound.
        """
        self.allowed[node] = float(allowed_mass)
        self._tighten(node)

    def mark_dead(self, node: int) -> None:
        """No grammatical continuation has any weight here (budget or underflow): EFG 0."""
        self.allowed[node] = 0.0
        self._tighten(node)

    def _value(self, node: int) -> float:
        allowed = self.allowed[node]
        if math.isnan(allowed):
            return self.efg[node]
        return min(1.0, max(0.0, allowed - self.deficit[node]))

    def _tighten(self, node: int) -> None:
        """Recompute ``node``'s bound and push the change up to the root by deltas."""
        while node >= 0:
            old, new = self.efg[node], self._value(node)
            if new == old:
                break
            self.efg[node] = new
            parent = self.parent[node]
            if parent >= 0:
                self.deficit[parent] += self.prob[node] * (old - new)
                self._correction[parent] = None
            node = parent

    def correction(self, node: int) -> tuple[np.ndarray, np.ndarray]:
        """(tokens, log EFG) of the visited children of ``node`` whose bound is below 1."""
        cached = self._correction[node]
        if cached is None:
            kids = [(tok, self.efg[kid]) for tok, kid in self.children[node].items() if self.efg[kid] < 1.0]
            tokens = np.fromiter((tok for tok, _ in kids), dtype=np.int64, count=len(kids))
            with np.errstate(divide="ignore"):
                logs = np.log(np.fromiter((e for _, e in kids), dtype=np.float64, count=len(kids)))
            cached = self._correction[node] = (tokens, logs.astype(np.float32))
        return cached

    # -- size and persistence ----------------------------------------------------------
    def memory_bytes(self) -> int:
        """Bytes held by the trie's lists and dicts (the bound the docs promise: O(nodes))."""
        total = sum(sys.getsizeof(x) for x in (self.parent, self.token, self.prob, self.allowed, self.efg, self.deficit))
        total += sys.getsizeof(self.children) + sys.getsizeof(self._correction)
        total += sum(sys.getsizeof(kids) for kids in self.children)
        # Element objects: ints/floats beyond the small-int cache, 24-32 bytes each.
        total += 32 * 6 * len(self.parent)
        return total

    def to_arrays(self) -> dict[str, np.ndarray]:
        """The trie as flat arrays (parents before children, as built)."""
        return {
            "parent": np.asarray(self.parent, dtype=np.int64),
            "token": np.asarray(self.token, dtype=np.int64),
            "prob": np.asarray(self.prob, dtype=np.float64),
            "allowed": np.asarray(self.allowed, dtype=np.float64),
            "efg": np.asarray(self.efg, dtype=np.float64),
            "prompt_ids": np.asarray(self.prompt_ids, dtype=np.int64),
        }

    @classmethod
    def from_arrays(cls, arrays: dict[str, np.ndarray], temperature: float, max_new_tokens: int) -> "ASApTrie":
        """Rebuild a trie written by :meth:`to_arrays`."""
        trie = cls(arrays["prompt_ids"].tolist(), temperature, max_new_tokens)
        parent = arrays["parent"].tolist()
        if not parent or parent[0] != -1 or any(not 0 <= p < i for i, p in enumerate(parent) if i):
            raise ConstrainError("Invalid ASAp trie file: parents must precede their children")
        trie.parent = parent
        trie.token = arrays["token"].tolist()
        trie.prob = arrays["prob"].tolist()
        trie.allowed = arrays["allowed"].tolist()
        trie.efg = arrays["efg"].tolist()
        trie.children = [{} for _ in parent]
        trie.deficit = [0.0] * len(parent)
        for node in range(1, len(parent)):
            trie.children[parent[node]][trie.token[node]] = node
            trie.deficit[parent[node]] += trie.prob[node] * (1.0 - trie.efg[node])
        trie._correction = [None] * len(parent)
        return trie


class ASApState:
    """All tries of one compiled grammar: one per (prompt, temperature, budget).

    Shared by :class:`ASApSampler` and :class:`ASApLogitsProcessor`; :meth:`save` and
    :meth:`load` let sampling resume in another process.
    """

    def __init__(self, compiled: CompiledGrammar) -> None:
        if not isinstance(compiled, CompiledGrammar):
            raise TypeError(f"Invalid compiled: expected a CompiledGrammar, got {type(compiled).__name__}")
        self.compiled = compiled
        self.tries: dict[TrieKey, ASApTrie] = {}

    def trie(self, prompt_ids: Sequence[int], temperature: float, max_new_tokens: int) -> ASApTrie:
        """The trie for this prompt and settings, created empty on first use."""
        key = (tuple(int(t) for t in prompt_ids), float(temperature), int(max_new_tokens))
        found = self.tries.get(key)
        if found is None:
            found = self.tries[key] = ASApTrie(*key)
        return found

    def memory_bytes(self) -> int:
        return sum(trie.memory_bytes() for trie in self.tries.values())

    def save(self, path: str | Path) -> None:
        """Write every trie to one ``.npz`` file (no pickle; arrays and a JSON header)."""
        header = {
            "format": _FORMAT_VERSION,
            "grammar": grammar_fingerprint(self.compiled),
            "tries": [{"temperature": t.temperature, "max_new_tokens": t.max_new_tokens} for t in self.tries.values()],
        }
        arrays: dict[str, np.ndarray] = {"header": np.frombuffer(json.dumps(header).encode("utf-8"), dtype=np.uint8)}
        for index, trie in enumerate(self.tries.values()):
            for name, array in trie.to_arrays().items():
                arrays[f"{index}/{name}"] = array
        with open(path, "wb") as handle:
            np.savez_compressed(handle, **arrays)

    def load(self, path: str | Path) -> None:
        """Add the tries saved by :meth:`save` (replacing tries with the same key).

        Raises :class:`ConstrainError` when the file was written for another grammar or
        tokenizer, or by another format version.
        """
        with np.load(path, allow_pickle=False) as data:
            header = json.loads(bytes(data["header"]).decode("utf-8"))
            if header.get("format") != _FORMAT_VERSION:
                raise ConstrainError(
                    f"Invalid ASAp trie file {path}: expected format {_FORMAT_VERSION}, got {header.get('format')}"
                )
            if header.get("grammar") != grammar_fingerprint(self.compiled):
                raise ConstrainError(
                    f"Invalid ASAp trie file {path}: it was saved for another grammar or tokenizer"
                )
            for index, meta in enumerate(header["tries"]):
                names = ("parent", "token", "prob", "allowed", "efg", "prompt_ids")
                arrays = {name: data[f"{index}/{name}"] for name in names}
                trie = ASApTrie.from_arrays(arrays, meta["temperature"], meta["max_new_tokens"])
                self.tries[trie.key] = trie


class _Reweighter:
    """The per-step work shared by the sampler and the logits processor.

    It turns one step's logits and filled bitmask into the tempered, masked
    log-probabilities ``log P(t | w)`` (EOS only on a row's last step); :func:`reweight_`
    then adds ``log EFG``.
    """

    def __init__(self, compiled: CompiledGrammar, temperature: float) -> None:
        if not (isinstance(temperature, (int, float)) and temperature > 0 and math.isfinite(temperature)):
            raise ValueError(f"Invalid temperature: expected a finite number > 0, got {temperature!r}")
        self.temperature = float(temperature)
        self.info = compiled.tokenizer_info
        self._eos_words: dict[int, torch.Tensor] = {}

    def eos_words(self, width: int) -> torch.Tensor:
        """A one-row bitmask allowing only the EOS ids, for a logits width ``width``."""
        words = self._eos_words.get(width)
        if words is None:
            mask = torch.zeros(width, dtype=torch.bool)
            mask[list(self.info.eos_token_ids)] = True
            words = self._eos_words[width] = pack_bool_mask(mask)
        return words

    def log_probs(self, scores: torch.Tensor, bitmask: torch.Tensor, last_step: Sequence[bool]) -> torch.Tensor:
        """Tempered log-softmax with disallowed tokens at ``-inf`` (EOS only on last steps)."""
        if any(last_step):
            rows = torch.tensor([i for i, last in enumerate(last_step) if last])
            bitmask[rows] &= self.eos_words(scores.shape[-1])
        logp = torch.log_softmax(scores.float() / self.temperature, dim=-1)
        apply_token_bitmask_(logp, bitmask.to(logp.device) if logp.device.type != "cpu" else bitmask)
        return logp


class StepProbs:
    """One step's ``P(t | w)`` as float32 ``exp(logp - top)`` per row, times ``exp(top)``.

    A bound is the allowed mass *minus* the children's shares, so the mass and the
    children's probabilities must be rounded alike or the difference can land below
    the exact EFG of a nearly dead prefix.  Both are read from this one tensor (the
    mass summed in float64), which is also ~20x cheaper than a float64 logsumexp.
    """

    def __init__(self, logp: torch.Tensor) -> None:
        top = logp.amax(dim=-1, keepdim=True)
        top = torch.where(torch.isneginf(top), torch.zeros_like(top), top)
        self.scaled = torch.exp(logp - top)
        self.scale = top.double().exp().view(-1).tolist()

    def masses(self, rows: list[int]) -> list[float]:
        """``Σ_t P(t | w)`` over the allowed tokens of each row in ``rows``."""
        block = self.scaled if len(rows) == self.scaled.shape[0] else self.scaled[rows]
        sums = block.sum(dim=-1, dtype=torch.float64).tolist()
        return [total * self.scale[row] for row, total in zip(rows, sums)]

    def prob(self, row: int, token: int) -> float:
        return float(self.scaled[row, token]) * self.scale[row]


def reweight_(logp: torch.Tensor, tries: Sequence[ASApTrie | None], nodes: Sequence[int | None]) -> StepProbs:
    """Turn ``logp`` into ASAp log-weights ``log P(t | w) + log EFG(w t)``, in place.

    ``logp`` holds the masked log-probabilities of one step (``[batch, vocab]``) and
    row ``i`` stands at ``nodes[i]`` of ``tries[i]`` (None: keep the row as is).
    Unevaluated nodes are expanded with their allowed mass first (pushing their new
    bound to the root); then ``log EFG`` of every visited child whose bound is below 1
    is added in one sparse accumulate over the whole batch.  Returns the step's
    probabilities, taken before the correction, for the children the caller creates.
    """
    probs = StepProbs(logp)
    active = [i for i, node in enumerate(nodes) if node is not None]
    fresh = [i for i in active if not tries[i].is_expanded(nodes[i])]
    if fresh:
        for row, mass in zip(fresh, probs.masses(fresh)):
            tries[row].expand(nodes[row], mass)
    row_parts, token_parts, value_parts = [], [], []
    for row in active:
        tokens, logs = tries[row].correction(nodes[row])
        if tokens.size:
            row_parts.append(np.full(tokens.size, row, dtype=np.int64))
            token_parts.append(tokens)
            value_parts.append(logs)
    if not row_parts:
        return probs
    index = (
        torch.from_numpy(np.concatenate(row_parts)).to(logp.device),
        torch.from_numpy(np.concatenate(token_parts)).to(logp.device),
    )
    values = torch.from_numpy(np.concatenate(value_parts)).to(device=logp.device, dtype=logp.dtype)
    logp.index_put_(index, values, accumulate=True)
    return probs


@dataclass(frozen=True)
class ASApSample:
    """One sampled sequence: the generated token ids (EOS excluded) and their text."""

    token_ids: tuple[int, ...]
    text: str


class ASApSampler:
    """Sample from a causal LM conditioned on a constraint, with ASAp.

    Repeated calls for the same prompt share a trie, so the samples' distribution
    converges to the model's distribution restricted to the language (see the module
    docstring).  :meth:`sample_constrained` runs the same loop without reweighting
    (ordinary constrained sampling), for comparison.

    Parameters
    ----------
    model:
        A Hugging Face causal LM (anything whose forward takes ``input_ids``,
        ``past_key_values``, ``use_cache`` and returns ``logits`` and
        ``past_key_values``).
    tokenizer:
        Its tokenizer (used to encode string prompts).
    compiled:
        The constraint, from :class:`~constrain.compiler.Compiler` (regex, grammar or
        JSON Schema alike).

    Examples
    --------
    >>> compiled = Compiler(TokenizerInfo.from_huggingface(tokenizer)).compile_regex(r"(cat|dog)s?")  # doctest: +SKIP
    >>> sampler = ASApSampler(model, tokenizer, compiled)                     # doctest: +SKIP
    >>> samples = sampler.sample("Pet: ", 100, max_new_tokens=8)              # doctest: +SKIP
    >>> sampler.state.save("pets.npz")    # later: sampler.state.load("pets.npz")   # doctest: +SKIP
    """

    def __init__(self, model: Any, tokenizer: Any, compiled: CompiledGrammar, state: ASApState | None = None) -> None:
        self.model = model
        self.tokenizer = tokenizer
        self.compiled = compiled
        self.state = state if state is not None else ASApState(compiled)
        if self.state.compiled is not compiled:
            raise ValueError("Invalid state: it belongs to another CompiledGrammar")

    # -- public entry points ------------------------------------------------------------
    def sample(
        self,
        prompt: str | Sequence[int] | torch.Tensor,
        n: int,
        *,
        max_new_tokens: int = 64,
        temperature: float = 1.0,
        batch_size: int = 1,
        generator: torch.Generator | None = None,
        max_attempts: int | None = None,
    ) -> list[ASApSample]:
        """Draw ``n`` grammatical samples with ASAp, updating this prompt's trie.

        Parameters
        ----------
        batch_size:
            Rows drawn in lockstep (one model call per step for the whole batch); 1 is
            the paper's sequential algorithm.
        generator:
            Source of randomness for ``torch.multinomial`` (fixed seeds reproduce).
        max_attempts:
            Samples that cannot end within ``max_new_tokens`` are discarded (their
            prefix gets EFG 0, so they become rarer); give up after this many attempts
            (default ``10 * n + 100``).
        """
        return self._run(
            prompt, n, max_new_tokens=max_new_tokens, temperature=temperature, batch_size=batch_size,
            generator=generator, max_attempts=max_attempts, adaptive=True,
        )

    def sample_constrained(self, prompt: str | Sequence[int] | torch.Tensor, n: int, **options: Any) -> list[ASApSample]:
        """Ordinary constrained sampling (mask and renormalise): the same loop and
        options as :meth:`sample`, without the trie (for comparison)."""
        return self._run(prompt, n, adaptive=False, **options)

    def trie(self, prompt: str | Sequence[int] | torch.Tensor, *, max_new_tokens: int = 64, temperature: float = 1.0) -> ASApTrie:
        """The trie that :meth:`sample` uses for these arguments."""
        return self.state.trie(self._prompt_ids(prompt), temperature, max_new_tokens)

    def logits_processor(self, *, max_new_tokens: int, temperature: float = 1.0) -> "ASApLogitsProcessor":
        """An :class:`ASApLogitsProcessor` sharing this sampler's tries."""
        return ASApLogitsProcessor(self.compiled, max_new_tokens=max_new_tokens, temperature=temperature, state=self.state)

    # -- the loop ------------------------------------------------------------------------
    def _prompt_ids(self, prompt: str | Sequence[int] | torch.Tensor) -> list[int]:
        if isinstance(prompt, str):
            ids = self.tokenizer(prompt, return_tensors="pt").input_ids[0].tolist()
        elif isinstance(prompt, torch.Tensor):
            ids = prompt.reshape(-1).tolist()
        else:
            ids = [int(t) for t in prompt]
        if not ids:
            raise ValueError("Invalid prompt: expected at least one token (a BOS token will do)")
        return ids

    def _run(
        self, prompt, n, *, max_new_tokens=64, temperature=1.0, batch_size=1, generator=None, max_attempts=None,
        adaptive: bool,
    ) -> list[ASApSample]:
        for name, value in (("n", n), ("max_new_tokens", max_new_tokens), ("batch_size", batch_size)):
            if not isinstance(value, int) or value < 1:
                raise ValueError(f"Invalid {name}: expected an int >= 1, got {value!r}")
        prompt_ids = self._prompt_ids(prompt)
        reweighter = _Reweighter(self.compiled, temperature)
        trie = self.state.trie(prompt_ids, temperature, max_new_tokens) if adaptive else None
        limit = 10 * n + 100 if max_attempts is None else max_attempts
        samples: list[ASApSample] = []
        attempts = 0
        while len(samples) < n:
            rows = min(batch_size, n - len(samples))
            if attempts + rows > limit:
                raise ConstrainError(
                    f"ASAp gave up after {attempts} attempts: only {len(samples)} of {n} samples ended "
                    f"within max_new_tokens={max_new_tokens}; raise max_new_tokens"
                )
            attempts += rows
            samples.extend(self._sample_batch(prompt_ids, rows, max_new_tokens, reweighter, trie, generator))
            if trie is not None and trie.efg[ASApTrie.ROOT] == 0.0:
                raise ConstrainError(
                    f"No string of the constraint can end within max_new_tokens={max_new_tokens} "
                    "(the trie proved every prefix dead); raise max_new_tokens"
                )
        return samples

    @torch.no_grad()
    def _sample_batch(self, prompt_ids, rows, max_new_tokens, reweighter, trie, generator) -> list[ASApSample]:
        """One lockstep batch; returns the rows that ended with EOS within the budget."""
        info = self.compiled.tokenizer_info
        eos = info.eos_token_ids[0]
        matchers = [Matcher(self.compiled) for _ in range(rows)]
        nodes: list[int | None] = [ASApTrie.ROOT if trie is not None else None] * rows
        tries = [trie] * rows
        outputs: list[list[int]] = [[] for _ in range(rows)]
        running = [True] * rows
        finished: list[ASApSample] = []
        device = self.model.device if hasattr(self.model, "device") else torch.device("cpu")
        inputs = torch.tensor([prompt_ids] * rows, device=device)
        past = None
        bitmask = None
        for step in range(max_new_tokens):
            result = self.model(input_ids=inputs, past_key_values=past, use_cache=True)
            past = result.past_key_values
            scores = result.logits[:, -1, :]
            if bitmask is None:
                bitmask = torch.empty(((rows, (scores.shape[-1] + 31) // 32)), dtype=torch.int32)
            for row, matcher in enumerate(matchers):
                matcher.fill_next_token_bitmask(bitmask, row)
            last = [running[r] and step == max_new_tokens - 1 for r in range(rows)]
            logp = reweighter.log_probs(scores, bitmask, last)
            probs = reweight_(logp, tries, nodes) if trie is not None else None
            logw = logp  # reweighted in place
            tokens = _draw(logw, generator)
            dead = torch.isneginf(logw.amax(dim=-1)).tolist()
            for row in range(rows):
                if not running[row]:
                    continue
                if dead[row]:
                    running[row] = False
                    if trie is not None:
                        trie.mark_dead(nodes[row])
                        nodes[row] = None
                    continue
                token = int(tokens[row])
                if not matchers[row].accept_token(token):  # pragma: no cover - masks are exact
                    raise ConstrainError(f"Internal error: sampled token {token} is not allowed by the mask")
                if token in info.eos_token_ids:
                    running[row] = False
                    nodes[row] = None
                    finished.append(ASApSample(tuple(outputs[row]), _decode(info, outputs[row])))
                    continue
                outputs[row].append(token)
                if trie is not None:
                    nodes[row] = trie.child(nodes[row], token, probs.prob(row, token))
            if not any(running):
                break
            tokens = torch.where(torch.tensor(running), tokens.cpu(), torch.full_like(tokens.cpu(), eos))
            inputs = tokens.view(-1, 1).to(device)
        for row in range(rows):  # ran out of budget without EOS (only if the last step was dead)
            if running[row] and trie is not None:  # pragma: no cover - the last step allows only EOS
                trie.mark_dead(nodes[row])
        return finished


def _draw(logw: torch.Tensor, generator: torch.Generator | None) -> torch.Tensor:
    """One token per row from ``softmax(logw)`` by inverse CDF (``torch.multinomial`` is
    several times slower over a 128k vocabulary); rows with no weight draw 0 (ignored)."""
    top = logw.amax(dim=-1, keepdim=True)
    top = torch.where(torch.isneginf(top), torch.zeros_like(top), top)
    cdf = torch.exp(logw - top).cumsum_(dim=-1)  # zero weight adds exactly 0: no drift
    device = generator.device if generator is not None else cdf.device
    uniform = torch.rand((logw.shape[0], 1), generator=generator, dtype=cdf.dtype, device=device).to(cdf.device)
    total = cdf[:, -1:]
    # Strictly below the total, so the first cdf entry above it has positive weight.
    target = torch.minimum(uniform * total, torch.nextafter(total, torch.zeros_like(total)))
    return torch.searchsorted(cdf, target, right=True).view(-1).clamp_(max=logw.shape[-1] - 1)


def _decode(info, token_ids: Sequence[int]) -> str:
    data = b"".join(info.token_bytes[t] for t in token_ids)
    return data.decode("utf-8", errors="replace")


class ASApLogitsProcessor(ConstrainedLogitsProcessor):
    """ASAp inside ``model.generate``: grammar mask plus EFG reweighting.

    The processor returns ``log P(t | w) + log EFG(w t)`` (tempered by its own
    ``temperature``) with disallowed tokens at ``-inf``; ``generate`` then samples
    ``softmax`` of it.  Use it with ``do_sample=True, temperature=1.0, top_k=0,
    top_p=1.0`` (any other warper would change the weights) and the same
    ``max_new_tokens`` as here (the last step allows only EOS).  Each row's trie is
    chosen by its prompt (left padding stripped when ``pad_token_id`` is given); rows
    of one call share and update the tries as in :class:`ASApSampler`'s batches.
    Beam search and assisted decoding are refused (rows must extend by one token).

    A row that cannot end within the budget (no EOS allowed at the last step) is
    marked EFG 0 in the trie and continues under the plain mask; its output is
    truncated, as with ordinary constrained decoding, and should be discarded.

    Examples
    --------
    >>> processor = ASApLogitsProcessor(compiled, max_new_tokens=16)          # doctest: +SKIP
    >>> model.generate(**inputs, do_sample=True, temperature=1.0, top_k=0, max_new_tokens=16,
    ...                logits_processor=LogitsProcessorList([processor]))     # doctest: +SKIP
    """

    def __init__(
        self,
        compiled: CompiledGrammar,
        *,
        max_new_tokens: int,
        temperature: float = 1.0,
        state: ASApState | None = None,
        pad_token_id: int | None = None,
    ) -> None:
        if not isinstance(max_new_tokens, int) or max_new_tokens < 1:
            raise ValueError(f"Invalid max_new_tokens: expected an int >= 1, got {max_new_tokens!r}")
        self.state = state if state is not None else ASApState(compiled)
        self.max_new_tokens = max_new_tokens
        self.pad_token_id = pad_token_id
        self._reweighter = _Reweighter(compiled, temperature)
        super().__init__(compiled)

    def reset(self) -> None:
        super().reset()
        self._tries: list[ASApTrie] = []
        self._nodes: list[int | None] = []
        self._last_probs: StepProbs | None = None

    def __call__(self, input_ids: torch.LongTensor, scores: torch.FloatTensor) -> torch.FloatTensor:
        self._check_width(scores)
        ids = input_ids.detach().cpu()
        if self._prompt is not None and ids.shape == self._prompt.shape:
            self.reset()  # a new ``generate`` call with the same prompt
        fresh = self._is_new_generation(ids)
        if not fresh and not self._extends_previous(ids):
            raise ConstrainError(
                "ASApLogitsProcessor needs rows that grow by one sampled token per call "
                "(do_sample=True, no beam search or assisted decoding)"
            )
        self._sync(ids)
        if fresh:
            self._start_rows(ids)
        else:
            self._descend(ids[:, -1].tolist())
        bitmask = self._bitmask_for(scores)
        for row, matcher in enumerate(self._matchers):
            matcher.fill_next_token_bitmask(bitmask, row)
        depth = ids.shape[1] - self._prompt.shape[1]
        last = [node is not None and depth == self.max_new_tokens - 1 for node in self._nodes]
        plain = bitmask.clone()
        logp = self._reweighter.log_probs(scores, bitmask, last)
        self._last_probs = reweight_(logp, self._tries, self._nodes)
        logw = logp  # reweighted in place
        dead = torch.isneginf(logw.amax(dim=-1)).tolist()
        if any(dead):
            logw = self._handle_dead_rows(logw, scores, plain, dead)
        return logw.to(scores.dtype)

    def _start_rows(self, ids: torch.Tensor) -> None:
        temperature = self._reweighter.temperature
        self._tries = []
        for row in ids.tolist():
            if self.pad_token_id is not None:
                while len(row) > 1 and row[0] == self.pad_token_id:
                    row = row[1:]
            self._tries.append(self.state.trie(row, temperature, self.max_new_tokens))
        self._nodes = [ASApTrie.ROOT] * ids.shape[0]

    def _descend(self, tokens: list[int]) -> None:
        """Move each running row to the child of its last token (created on first visit)."""
        eos = set(self.tokenizer_info.eos_token_ids)
        for row, token in enumerate(tokens):
            node = self._nodes[row]
            if node is None:
                continue
            if token in eos or self._matchers[row].is_terminated():
                self._nodes[row] = None
                continue
            self._nodes[row] = self._tries[row].child(node, token, self._last_probs.prob(row, token))

    def _handle_dead_rows(self, logw, scores, plain_bitmask, dead) -> torch.Tensor:
        """Rows with no weight: EFG 0 in the trie, then the plain grammar mask (truncated output)."""
        logw = logw.clone()
        for row, is_dead in enumerate(dead):
            if not is_dead:
                continue
            if self._nodes[row] is not None:
                self._tries[row].mark_dead(self._nodes[row])
                self._nodes[row] = None
            fallback = self._reweighter.log_probs(scores[row : row + 1], plain_bitmask[row : row + 1].clone(), [False])
            if torch.isneginf(fallback.amax()):
                raise ConstrainError(f"No token is allowed for row {row} (never unmasking, to keep output valid)")
            logw[row] = fallback[0]
        return logw
