"""Constrained speculative decoding whose output is distributed exactly as constrained sampling.

One round of :class:`SpeculativeGenerator`:

1. **Propose.**  A forked matcher walks ahead of the committed output.  Where the
   constraint forces a unique continuation (:meth:`Matcher.forced_bytes`), its tokens
   are proposed without running the draft model (*jump-forward*); elsewhere the draft
   model proposes up to ``k`` tokens, each drawn from its logits masked by the forked
   matcher (``q̃``, the draft's constrained distribution).
2. **Verify.**  The target scores the last committed token and all ``n`` proposals in
   one forward pass.  The committed matcher is advanced through the proposals to
   write ``n + 1`` bitmask rows, then rolled back; the masked, renormalised rows are
   ``p̃``.
3. **Accept.**  Proposal ``x`` at position ``i`` is kept with probability
   ``min(1, p̃_i(x) / q̃_i(x))``; at the first rejection a token is drawn from
   ``max(0, p̃_i − q̃_i)`` renormalised; after ``n`` acceptances a bonus token is drawn
   from ``p̃_n``.  A jump-forward proposal has a point-mass ``q̃`` (it was proposed with
   probability one), so it is kept with probability ``p̃_i(x)`` and the residual is
   ``p̃_i`` without ``x``.  This is the rule of Leviathan et al. (2023) applied to the
   constrained distributions, so every emitted token is distributed exactly as one
   step of constrained sampling from the target.  Greedy mode keeps a proposal iff it
   equals the target's masked argmax, and emits that argmax at the first mismatch, so
   the output equals greedy constrained decoding token for token.
4. **Crop.**  Both models keep a ``DynamicCache``; the positions of rejected proposals
   are cropped away and the draft catches up on the committed tokens it has not seen
   in its next forward pass.

Jump-forward never bypasses the target: forced tokens are proposals, verified like
any other.  Their tokenisation therefore only affects the acceptance rate, never the
output distribution.  To make acceptance likely the forced bytes are tokenised the way
the target was trained to see them (see :meth:`SpeculativeGenerator.forced_tokens`).

Batch size one: speculative decoding is a latency technique, and rows accept
different numbers of tokens.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

from ..compiler import CompiledGrammar
from ..errors import ConstrainError
from ..kernels import allocate_token_bitmask, apply_token_bitmask_
from ..matcher import Matcher

__all__ = [
    "SpeculativeGenerator",
    "SpeculativeOutput",
    "SpeculativeStats",
    "masked_logits",
    "verify_proposals",
]


# -- the acceptance rule (pure functions, tested on their own) -------------------------
def masked_logits(logits: torch.Tensor, bitmask: torch.Tensor) -> torch.Tensor:
    """A float64 copy of ``logits`` ``[n, V]`` with disallowed tokens set to ``-inf``.

    float64 so that the acceptance ratios ``p̃/q̃`` and the residual ``p̃ − q̃`` do not
    lose the small probabilities a constraint leaves behind.
    """
    masked = logits.detach().to(device="cpu", dtype=torch.float64).clone()
    apply_token_bitmask_(masked, bitmask)
    return masked


def _probabilities(masked: torch.Tensor, temperature: float) -> torch.Tensor:
    return torch.softmax(masked / temperature, dim=-1)


def _draw(probs: torch.Tensor, generator: torch.Generator | None) -> int:
    """One token from an unnormalised row, by inverse CDF over its support.

    ``torch.multinomial`` costs milliseconds on a 128k row; a mask leaves few tokens.
    """
    support = torch.nonzero(probs).flatten()
    cdf = torch.cumsum(probs[support], dim=0)
    u = float(torch.rand((), generator=generator, dtype=torch.float64)) * float(cdf[-1])
    index = min(int(torch.searchsorted(cdf, torch.tensor([u], dtype=cdf.dtype), right=True)), len(support) - 1)
    return int(support[index])


def verify_proposals(
    target: torch.Tensor,
    proposals: list[int],
    draft: list[torch.Tensor | None],
    *,
    greedy: bool,
    generator: torch.Generator | None = None,
) -> tuple[int, int]:
    """Apply the speculative acceptance rule; return ``(accepted, next_token)``.

    Parameters
    ----------
    target:
        ``[n + 1, V]``: in greedy mode the target's masked logits, otherwise its masked,
        renormalised probabilities ``p̃`` at each proposal position and one past them.
    proposals:
        The ``n`` proposed token ids.
    draft:
        ``q̃`` for each proposal: a ``[V]`` probability row, or ``None`` for a
        proposal made with probability one (jump-forward).  Unused in greedy mode.
    greedy:
        Accept iff a proposal is the target's argmax; the next token is the argmax.

    Returns
    -------
    accepted, next_token:
        The first ``accepted`` proposals are kept, then ``next_token`` (the correction
        at the first rejection, or the bonus token after all ``n``).
    """
    for i, token in enumerate(proposals):
        row = target[i]
        if greedy:
            best = int(torch.argmax(row))
            if best != token:
                return i, best
            continue
        p, q = float(row[token]), 1.0 if draft[i] is None else float(draft[i][token])
        u = float(torch.rand((), generator=generator, dtype=torch.float64))
        if u * q < p:  # u < p/q without dividing (q > 0: the proposal was drawn from q)
            continue
        if draft[i] is None:
            residual = row.clone()
            residual[token] = 0.0
        else:
            residual = torch.clamp(row - draft[i], min=0.0)
        if float(residual.sum()) <= 0.0:
            residual = row  # p̃ == q̃ up to rounding: rejection had probability ~0
        return i, _draw(residual, generator)
    last = target[len(proposals)]
    return len(proposals), int(torch.argmax(last)) if greedy else _draw(last, generator)


# -- statistics -----------------------------------------------------------------------
@dataclass
class SpeculativeStats:
    """Counters of one or more :meth:`SpeculativeGenerator.generate` calls."""

    generated_tokens: int = 0
    rounds: int = 0
    target_forwards: int = 0
    draft_forwards: int = 0
    drafted: int = 0
    drafted_accepted: int = 0
    forced: int = 0
    forced_accepted: int = 0

    @property
    def acceptance_rate(self) -> float:
        """Accepted share of the draft model's proposals (jump-forward excluded)."""
        return self.drafted_accepted / self.drafted if self.drafted else 0.0

    @property
    def forced_acceptance_rate(self) -> float:
        """Accepted share of the jump-forward proposals."""
        return self.forced_accepted / self.forced if self.forced else 0.0

    @property
    def target_forwards_per_token(self) -> float:
        """Target forward passes per generated token (1.0 without speculation)."""
        return self.target_forwards / self.generated_tokens if self.generated_tokens else 0.0

    def __iadd__(self, other: "SpeculativeStats") -> "SpeculativeStats":
        for name in self.__dataclass_fields__:
            setattr(self, name, getattr(self, name) + getattr(other, name))
        return self


@dataclass
class SpeculativeOutput:
    """What one :meth:`SpeculativeGenerator.generate` call produced."""

    token_ids: list[int]
    """Generated token ids, including the final EOS when the output is complete."""
    finished: bool
    """True when an EOS token was generated (the output is a complete string)."""
    data: bytes
    """The generated bytes (EOS excluded), exactly as the mask allowed them."""
    stats: SpeculativeStats = field(default_factory=SpeculativeStats)

    @property
    def text(self) -> str:
        return self.data.decode("utf-8", errors="replace")


# -- a causal LM with its own KV cache --------------------------------------------------
class _CachedModel:
    """A causal LM and its ``DynamicCache``; feeds only the tokens the cache lacks."""

    def __init__(self, model: Any) -> None:
        from transformers import DynamicCache

        self.model = model
        self.device = getattr(model, "device", torch.device("cpu"))
        try:
            self.cache = DynamicCache(config=model.config)
        except TypeError:  # transformers < 4.56 takes no config
            self.cache = DynamicCache()
        self.seen = 0  # tokens of the sequence held in the cache
        params = inspect.signature(model.forward).parameters
        self._logits_to_keep = "logits_to_keep" in params
        self.forwards = 0
        self.head = self._plain_head(model)

    @staticmethod
    def _plain_head(model: Any) -> torch.nn.Linear | None:
        """The output head when logits are exactly ``head(base_model(x))``, else None.

        Checked once on a one-token input, so a model that scales, caps or biases its
        logits in ``forward`` (Gemma's soft-capping, Cohere's logit scale) is detected.
        """
        head = getattr(model, "get_output_embeddings", lambda: None)()
        base = getattr(model, "base_model", model)
        if not isinstance(head, torch.nn.Linear) or base is model:
            return None
        ids = torch.zeros((1, 1), dtype=torch.long, device=getattr(model, "device", "cpu"))
        try:
            with torch.no_grad():
                full = model(input_ids=ids, use_cache=False).logits[0, -1]
                hidden = base(input_ids=ids, use_cache=False).last_hidden_state[0, -1]
                sparse = head(hidden)
        except Exception:  # noqa: BLE001 - any surprise means: use the full forward
            return None
        return head if torch.allclose(full, sparse, rtol=1e-4, atol=1e-4) else None

    def allowed_logits(self, sequence: list[int], allowed: torch.Tensor) -> torch.Tensor:
        """Logits of the ``allowed`` token ids only, after the last token of ``sequence``.

        Under a narrow mask the head over the whole vocabulary is most of a small draft's
        cost; the masked, renormalised distribution needs only these rows.
        """
        new = sequence[self.seen:]
        ids = torch.tensor([new], dtype=torch.long, device=self.device)
        base = self.model.base_model
        with torch.no_grad():
            out = base(input_ids=ids, past_key_values=self.cache, use_cache=True)
            weight = self.head.weight[allowed.to(self.head.weight.device)]
            logits = torch.nn.functional.linear(out.last_hidden_state[0, -1], weight, self.head.bias)
        self.cache = out.past_key_values
        self.seen = len(sequence)
        self.forwards += 1
        return logits

    def logits(self, sequence: list[int], last: int) -> torch.Tensor:
        """Logits ``[last, V]`` predicting after each of the last ``last`` tokens of ``sequence``."""
        new = sequence[self.seen:]
        if len(new) < last:
            raise AssertionError("the cache already holds positions whose logits are needed")
        ids = torch.tensor([new], dtype=torch.long, device=self.device)
        kwargs = {"logits_to_keep": last} if self._logits_to_keep else {}
        with torch.no_grad():
            out = self.model(input_ids=ids, past_key_values=self.cache, use_cache=True, **kwargs)
        self.cache = out.past_key_values
        self.seen = len(sequence)
        self.forwards += 1
        return out.logits[0, -last:]

    def crop(self, length: int) -> None:
        """Forget the positions past ``length`` (rejected proposals)."""
        if self.seen > length:
            # A negative argument removes that many positions in every transformers version.
            self.cache.crop(length - self.seen)
            self.seen = length


# -- the generator ----------------------------------------------------------------------
class SpeculativeGenerator:
    """Speculative decoding under a constraint, exact in distribution.

    Parameters
    ----------
    target:
        The transformers causal LM whose constrained distribution the output follows.
    draft:
        A smaller causal LM with the same tokenizer, or ``None`` to speculate only on
        grammar-forced text (jump-forward alone).
    compiled:
        The constraint, compiled for the shared tokenizer.
    k:
        Tokens the draft model proposes per round (the start value when ``adaptive``).
    adaptive:
        Grow ``k`` by one after a round whose draft tokens were all accepted, shrink it
        by one after a rejection, within ``[1, max_k]`` (as transformers' "heuristic").
    jump_forward:
        Propose grammar-forced tokens without the draft model.
    tokenizer:
        The Hugging Face tokenizer, used to tokenise forced text canonically; without
        it forced text is tokenised greedily by longest token.

    Examples
    --------
    >>> compiled = Compiler(info).compile_regex(r'\\{"id": \\d+\\}')          # doctest: +SKIP
    >>> gen = SpeculativeGenerator(target, draft, compiled, k=4)            # doctest: +SKIP
    >>> out = gen.generate(tokenizer("Q:").input_ids, max_new_tokens=32)    # doctest: +SKIP
    >>> out.text, out.stats.acceptance_rate                                 # doctest: +SKIP
    """

    def __init__(
        self,
        target: Any,
        draft: Any | None,
        compiled: CompiledGrammar,
        *,
        k: int = 4,
        adaptive: bool = True,
        max_k: int = 12,
        jump_forward: bool = True,
        tokenizer: Any | None = None,
    ) -> None:
        if not isinstance(compiled, CompiledGrammar):
            raise TypeError(f"Invalid compiled: expected a CompiledGrammar, got {type(compiled).__name__}")
        if not isinstance(k, int) or k < 1 or not isinstance(max_k, int) or max_k < k:
            raise ValueError(f"Invalid k: expected an int with 1 <= k <= max_k, got k={k!r}, max_k={max_k!r}")
        info = compiled.tokenizer_info
        for name, model in (("target", target), ("draft", draft)):
            width = _logits_width(model)
            if width is not None and width < info.num_tokens:
                raise ConstrainError(
                    f"Invalid {name} model: its logits width {width} is smaller than the tokenizer's "
                    f"{info.num_tokens} tokens; was the grammar compiled for this model's tokenizer?"
                )
        self.target, self.draft, self.compiled = target, draft, compiled
        self.k, self.adaptive, self.max_k = k, adaptive, max_k
        self.jump_forward, self.tokenizer = jump_forward, tokenizer
        self.stats = SpeculativeStats()
        self._forced_cache: dict[bytes, tuple[int, ...]] = {}
        self._by_bytes: dict[bytes, int] | None = None
        self._lengths: np.ndarray | None = None

    # -- public ------------------------------------------------------------------------
    def generate(
        self,
        input_ids: Any,
        *,
        max_new_tokens: int = 256,
        do_sample: bool = False,
        temperature: float = 1.0,
        generator: torch.Generator | None = None,
    ) -> SpeculativeOutput:
        """Generate one constrained continuation of ``input_ids`` (one prompt).

        ``input_ids`` is a list of ids or a ``[1, L]`` / ``[L]`` tensor.  Sampling uses
        ``generator`` (a CPU ``torch.Generator``) when given, for reproducible runs.
        """
        prompt = _prompt_ids(input_ids)
        if max_new_tokens < 1:
            raise ValueError(f"Invalid max_new_tokens: expected >= 1, got {max_new_tokens}")
        if do_sample and not temperature > 0:
            raise ValueError(f"Invalid temperature: expected > 0 when sampling, got {temperature}")
        run = _Run(self, prompt, max_new_tokens, greedy=not do_sample, temperature=temperature, generator=generator)
        output = run.loop()
        self.stats += output.stats
        return output

    def forced_tokens(self, matcher: Matcher) -> tuple[int, ...]:
        """Token ids proposing the text the constraint forces after ``matcher`` (may be empty).

        Canonical tokenisation: the forced bytes are encoded by the tokenizer on their own,
        as the model saw such text in training (a longest-token walk without a tokenizer).
        At the far boundary a BPE merge may join the last forced token with the free text
        that follows (``"`` + ``J`` -> ``"J``), so the last token is held back whenever the
        constraint allows a token that starts where it starts and reaches past the forced
        text; the draft model then proposes from there.  Exactness never depends on this:
        forced tokens are verified like any other proposal.
        """
        data = matcher.forced_bytes()
        if not data:
            return ()
        tokens = self._forced_cache.get(data)
        if tokens is None:
            tokens = self._forced_cache[data] = self._tokenise(matcher, data)
        if not tokens:
            return ()
        probe = matcher.fork()
        for token in tokens[:-1]:
            probe.accept_token(token)
        tail = len(self.compiled.tokenizer_info.token_bytes[tokens[-1]])
        return tokens[:-1] if self._crosses(probe, tail) else tokens

    def _crosses(self, matcher: Matcher, length: int) -> bool:
        """True when the matcher allows a token longer than ``length`` bytes."""
        if self._lengths is None:
            self._lengths = np.fromiter(map(len, self.compiled.tokenizer_info.token_bytes), dtype=np.int64)
        words = matcher.next_token_mask_words()
        allowed = np.unpackbits(words.view(np.uint8), bitorder="little")[: len(self._lengths)].astype(bool)
        return bool((self._lengths[allowed] > length).any())

    # -- forced text ---------------------------------------------------------------------
    def _tokenise(self, matcher: Matcher, data: bytes) -> tuple[int, ...]:
        info = self.compiled.tokenizer_info
        if self.tokenizer is not None:
            try:
                ids = tuple(self.tokenizer.encode(data.decode("utf-8"), add_special_tokens=False))
            except UnicodeDecodeError:
                ids = None
            if ids and info.decode_bytes(ids) == data and _walks(matcher, ids):
                return ids
        return self._longest_match(matcher, data)

    def _longest_match(self, matcher: Matcher, data: bytes) -> tuple[int, ...]:
        """Greedy longest-token tokenisation of ``data`` that the matcher accepts."""
        if self._by_bytes is None:
            info = self.compiled.tokenizer_info
            special = info.special_token_ids
            by_bytes: dict[bytes, int] = {}
            for token, raw in enumerate(info.token_bytes):
                if raw and token not in special:
                    by_bytes.setdefault(raw, token)
            self._by_bytes = by_bytes
        probe, out, pos = matcher.fork(), [], 0
        longest = max(map(len, self._by_bytes), default=0)
        while pos < len(data):
            for end in range(min(len(data), pos + longest), pos, -1):
                token = self._by_bytes.get(data[pos:end])
                if token is not None and probe.accept_token(token):
                    out.append(token)
                    pos = end
                    break
            else:
                break  # no token spells the next byte here: stop the forced run early
        return tuple(out)


class _Run:
    """The state of one ``generate`` call: sequence, matcher, caches, k and counters."""

    def __init__(self, owner: SpeculativeGenerator, prompt: list[int], max_new_tokens: int, *,
                 greedy: bool, temperature: float, generator: torch.Generator | None) -> None:
        self.owner = owner
        self.info = owner.compiled.tokenizer_info
        self.sequence = list(prompt)
        self.start = len(prompt)
        self.max_new_tokens = max_new_tokens
        self.greedy, self.temperature, self.generator = greedy, temperature, generator
        self.matcher = Matcher(owner.compiled)
        self.target = _CachedModel(owner.target)
        self.draft = _CachedModel(owner.draft) if owner.draft is not None else None
        self.k = owner.k
        self.stats = SpeculativeStats()
        # Logits width (a padded vocabulary may exceed the tokenizer).
        self.width = _logits_width(owner.target) or self.info.vocab_size

    def loop(self) -> SpeculativeOutput:
        finished = False
        while not finished and len(self.sequence) - self.start < self.max_new_tokens:
            finished = self.round()
        self.stats.target_forwards = self.target.forwards
        self.stats.draft_forwards = self.draft.forwards if self.draft is not None else 0
        generated = self.sequence[self.start:]
        self.stats.generated_tokens = len(generated)
        body = generated[:-1] if finished else generated
        return SpeculativeOutput(generated, finished, self.info.decode_bytes(body), self.stats)

    # -- one round -------------------------------------------------------------------------
    def round(self) -> bool:
        """Propose, verify, accept, crop; True once EOS is emitted."""
        budget = self.max_new_tokens - (len(self.sequence) - self.start) - 1
        proposals, draft_rows, forced = self.propose(budget)
        committed = len(self.sequence)
        target = self.verify(proposals)
        accepted, token = verify_proposals(target, proposals, draft_rows, greedy=self.greedy, generator=self.generator)
        self.count(forced, accepted)
        new = proposals[:accepted]
        if accepted == len(proposals) and proposals and self._is_eos(proposals[-1]):
            token = None  # EOS accepted: nothing follows it
        if token is not None:
            new = [*new, token]
        for t in new:
            if not self.matcher.accept_token(t):
                raise AssertionError(f"token {t} was verified under the mask but the matcher refused it")
        self.sequence.extend(new)
        # Keep the cache positions of the accepted proposals; the new token is fed next round.
        self.target.crop(committed + accepted)
        if self.draft is not None:
            self.draft.crop(committed + accepted)
        self.adapt(accepted, forced)
        return bool(new) and self._is_eos(new[-1])

    def propose(self, budget: int) -> tuple[list[int], list[torch.Tensor | None], list[bool]]:
        """Proposals from a forked matcher within ``budget``: tokens, ``q̃`` rows, and which were forced."""
        walker = self.matcher.fork()
        proposals: list[int] = []
        rows: list[torch.Tensor | None] = []
        forced: list[bool] = []
        drafted = 0
        while len(proposals) < budget and not walker.is_terminated():
            run = self.owner.forced_tokens(walker) if self.owner.jump_forward else ()
            if run:
                run = run[: budget - len(proposals)]
                for token in run:
                    walker.accept_token(token)
                proposals.extend(run)
                rows.extend([None] * len(run))
                forced.extend([True] * len(run))
                continue
            if self.draft is None or drafted >= self.k:
                break
            token, row = self.draft_one(walker, proposals)
            walker.accept_token(token)
            proposals.append(token)
            rows.append(row)
            forced.append(False)
            drafted += 1
        return proposals, rows, forced

    def draft_one(self, walker: Matcher, proposals: list[int]) -> tuple[int, torch.Tensor | None]:
        """One draft-model token under ``walker``'s mask, and ``q̃`` (None when greedy)."""
        width = self.width
        bitmask = allocate_token_bitmask(1, width)
        walker.fill_next_token_bitmask(bitmask, 0)
        _check_not_empty(bitmask, "draft")
        if self.draft.head is not None:
            allowed = torch.from_numpy(np.flatnonzero(
                np.unpackbits(bitmask.numpy().view(np.uint8), bitorder="little")[:width]))
            if len(allowed) * 4 < width:
                return self._draft_sparse(self.draft.allowed_logits(self.sequence + proposals, allowed), allowed)
        logits = self.draft.logits(self.sequence + proposals, 1)[:, :width]
        masked = masked_logits(logits, bitmask)
        if self.greedy:
            return int(torch.argmax(masked[0])), None
        q = torch.zeros(width, dtype=torch.float64)
        q[: masked.shape[1]] = _probabilities(masked[0], self.temperature)  # a draft head may be narrower
        return _draw(q, self.generator), q

    def _draft_sparse(self, logits: torch.Tensor, allowed: torch.Tensor) -> tuple[int, torch.Tensor | None]:
        """``draft_one`` from the allowed tokens' logits: the same ``q̃``, scattered to a full row."""
        logits = logits.detach().to(device="cpu", dtype=torch.float64)
        if self.greedy:
            return int(allowed[int(torch.argmax(logits))]), None
        q = torch.zeros(self.width, dtype=torch.float64)
        q[allowed] = torch.softmax(logits / self.temperature, dim=0)
        return _draw(q, self.generator), q

    def verify(self, proposals: list[int]) -> torch.Tensor:
        """The target's masked logits (greedy) or ``p̃`` rows at the ``n + 1`` positions."""
        n = len(proposals)
        logits = self.target.logits(self.sequence + proposals, n + 1)
        bitmask = allocate_token_bitmask(n + 1, logits.shape[-1])
        self.matcher.fill_next_token_bitmask(bitmask, 0)
        for i, token in enumerate(proposals):
            self.matcher.accept_token(token)
            self.matcher.fill_next_token_bitmask(bitmask, i + 1)
        self.matcher.rollback(n)
        _check_not_empty(bitmask, "target")
        masked = masked_logits(logits, bitmask)
        return masked if self.greedy else _probabilities(masked, self.temperature)

    # -- bookkeeping -----------------------------------------------------------------------
    def _is_eos(self, token: int) -> bool:
        return token in self.info.eos_token_ids

    def count(self, forced: list[bool], accepted: int) -> None:
        stats = self.stats
        stats.rounds += 1
        stats.forced += sum(forced)
        stats.drafted += len(forced) - sum(forced)
        stats.forced_accepted += sum(forced[:accepted])
        stats.drafted_accepted += accepted - sum(forced[:accepted])

    def adapt(self, accepted: int, forced: list[bool]) -> None:
        """Adaptive k: one more after a fully accepted draft, one fewer after a rejection."""
        if not self.owner.adaptive or all(forced):
            return
        self.k = min(self.owner.max_k, self.k + 1) if accepted == len(forced) else max(1, self.k - 1)


def _walks(matcher: Matcher, tokens: tuple[int, ...]) -> bool:
    probe = matcher.fork()
    return all(probe.accept_token(t) for t in tokens)


def _check_not_empty(bitmask: torch.Tensor, which: str) -> None:
    if not bool(bitmask.any(dim=-1).all()):
        raise ConstrainError(
            f"No token is allowed for the {which} model: the tokenizer cannot spell any "
            "continuation of the constraint (never unmasking, to keep output valid)"
        )


def _logits_width(model: Any) -> int | None:
    if model is None:
        return None
    from ..api import model_vocab_size

    return model_vocab_size(model)


def _prompt_ids(input_ids: Any) -> list[int]:
    if isinstance(input_ids, torch.Tensor):
        if input_ids.ndim == 2 and input_ids.shape[0] == 1:
            input_ids = input_ids[0]
        if input_ids.ndim != 1:
            raise ValueError(
                f"Invalid input_ids: expected one prompt ([L] or [1, L]), got shape {tuple(input_ids.shape)}; "
                "speculative decoding runs one sequence at a time"
            )
        input_ids = input_ids.tolist()
    ids = [int(t) for t in input_ids]
    if not ids:
        raise ValueError("Invalid input_ids: expected at least one prompt token, got none")
    return ids
