"""Constrained decoding for masked-diffusion LMs (LLaDA / Dream style) with DINGO.

The canvas is the prompt followed by ``gen_length`` mask tokens.  It is filled block
by block, left to right (semi-autoregressive); each block takes ``steps //
num_blocks`` denoising steps.  At every step the model scores the whole canvas, the
lowest-confidence masked positions stay masked (LLaDA's low-confidence remasking)
and the others are committed.  Three methods choose the committed tokens:

``"dingo"``
    :func:`~constrain.samplers.dingo.dingo_decode` over the block: committed
    positions fixed, positions committed now free, positions staying masked as
    wildcards, the block's end state able to finish in the positions left.  With
    ``do_sample=True`` every masked position of the block is drawn jointly from the
    restricted distribution (:func:`~constrain.samplers.dingo.dingo_sample`) and the
    confident ones are kept.
``"greedy"``
    The token-by-token baseline: the same positions are committed, left to right,
    each the most probable token *on its own* that keeps the block viable (what a
    per-token mask gives), instead of the most probable block.
``"unconstrained"``
    Plain LLaDA decoding, for comparison.

Whatever is committed stays a viable prefix (the DP's path is the witness), so the
final canvas always matches: text up to the first EOS is a full match, EOS after.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch

from ..compiler import CompiledGrammar
from .dingo import DiffusionError, DingoTable, dingo_decode, dingo_sample, dingo_table

__all__ = ["DiffusionGenerator", "DiffusionOutput", "generate_diffusion"]

METHODS = ("dingo", "greedy", "unconstrained")


@dataclass
class DiffusionOutput:
    """One generation: the text, its token ids, and what the model thought of them.

    ``log_likelihood`` sums, over the generated positions, the model's log-probability
    of the committed token at the step it was committed (the quantity each step
    maximises); ``tokens`` are the ``gen_length`` canvas ids after the prompt.
    """

    text: str
    tokens: list[int]
    log_likelihood: float
    complete: bool


class DiffusionGenerator:
    """Fill a masked canvas with a diffusion LM, keeping it in a regular language.

    Parameters
    ----------
    model:
        Any callable ``model(input_ids) -> logits`` (or an output with ``.logits``)
        that scores every position of a sequence containing mask tokens: a
        LLaDA/Dream checkpoint loaded with ``trust_remote_code=True``, or any
        bidirectional masked LM.
    tokenizer:
        Its Hugging Face tokenizer (prompts are encoded with it).
    compiled:
        A regular constraint (``Compiler.compile_regex``, or a JSON Schema compiled to
        a regular language) for this tokenizer and the model's logits width.
    gen_length, block_length, steps:
        Canvas length, semi-autoregressive block length (divides ``gen_length``) and
        denoising steps in all (a multiple of the number of blocks).
    mask_token_id:
        The model's mask id (default ``tokenizer.mask_token_id``).
    method:
        ``"dingo"`` (default), ``"greedy"`` or ``"unconstrained"`` (module docstring).
    do_sample, temperature:
        Sample instead of taking the most probable block (DINGO's sampling variant).
    shift_logits:
        Dream predicts position ``i`` from the logits at ``i - 1``; set True for it.

    Examples
    --------
    >>> compiled = Compiler(info).compile_regex(r"\\d{3}-\\d{4}")                # doctest: +SKIP
    >>> DiffusionGenerator(model, tokenizer, compiled, gen_length=32, block_length=8,
    ...                    steps=16).generate("Call me at ")                    # doctest: +SKIP
    '555-0199'
    """

    def __init__(
        self,
        model: Any,
        tokenizer: Any,
        compiled: CompiledGrammar,
        *,
        gen_length: int = 64,
        block_length: int = 32,
        steps: int = 64,
        mask_token_id: int | None = None,
        method: str = "dingo",
        do_sample: bool = False,
        temperature: float = 1.0,
        shift_logits: bool = False,
        generator: torch.Generator | None = None,
    ) -> None:
        _check_schedule(gen_length, block_length, steps)
        if method not in METHODS:
            raise DiffusionError(f"Invalid method: expected one of {METHODS}, got {method!r}")
        if do_sample and method == "greedy":
            raise DiffusionError("Invalid method: the greedy baseline has no sampling variant; use do_sample=False")
        self.model, self.tokenizer, self.compiled = model, tokenizer, compiled
        self.gen_length, self.block_length, self.steps = gen_length, block_length, steps
        self.mask_token_id = getattr(tokenizer, "mask_token_id", None) if mask_token_id is None else mask_token_id
        if self.mask_token_id is None:
            raise DiffusionError("Invalid mask_token_id: the tokenizer has no mask token; pass mask_token_id=")
        self.method, self.do_sample, self.temperature = method, do_sample, temperature
        self.shift_logits, self.generator = shift_logits, generator
        self.table: DingoTable = dingo_table(compiled)  # raises for non-regular constraints
        need = int(self.table.finish_distance[self.table.start])
        if need > gen_length:
            raise DiffusionError(
                f"Invalid gen_length: the constraint needs at least {need} tokens, got gen_length={gen_length}"
            )

    # -- public -------------------------------------------------------------------
    def generate(self, prompt: str | list[int] | torch.Tensor) -> str:
        """The generated text (up to the first EOS); it fully matches the constraint."""
        return self.generate_output(prompt).text

    @torch.no_grad()
    def generate_output(self, prompt: str | list[int] | torch.Tensor) -> DiffusionOutput:
        """Run the diffusion loop and return text, tokens and log-likelihood."""
        prompt_ids = self._prompt_ids(prompt)
        device = _model_device(self.model)
        canvas = torch.cat([prompt_ids, torch.full((self.gen_length,), self.mask_token_id, dtype=torch.long)])
        canvas = canvas.to(device).unsqueeze(0)
        start = prompt_ids.numel()
        num_blocks = self.gen_length // self.block_length
        state, total = self.table.start, 0.0
        for b in range(num_blocks):
            lo = start + b * self.block_length
            block = slice(lo, lo + self.block_length)
            remaining = self.gen_length - (b + 1) * self.block_length
            for count in _transfer_counts(self.block_length, self.steps // num_blocks):
                logp = self._log_probs(canvas)[block]
                total += self._step(canvas[0, block], logp, count, state, remaining)
            if self.method != "unconstrained":
                state = self._advance(state, canvas[0, block].tolist())
        return self._output(canvas[0, start:].tolist(), total)

    # -- one step -------------------------------------------------------------------
    def _step(self, block: torch.Tensor, logp: torch.Tensor, count: int, state: int, remaining: int) -> float:
        """Commit ``count`` masked positions of ``block`` in place; their log-probability."""
        masked = block == self.mask_token_id
        if self.method == "unconstrained" or self.do_sample:
            proposal = self._propose(block, logp, masked, state, remaining)
            confidence = logp.gather(1, proposal.unsqueeze(1)).squeeze(1).masked_fill(~masked, float("-inf"))
            chosen = torch.topk(confidence, count).indices
            tokens = proposal[chosen]
        else:
            top = logp.max(-1).values.masked_fill(~masked, float("-inf"))
            chosen = torch.topk(top, count).indices  # LLaDA's low-confidence remasking
            pick = self._greedy_tokens if self.method == "greedy" else self._dingo_tokens
            tokens = pick(block, logp, masked, chosen, state, remaining)
        block[chosen] = tokens
        return float(logp[chosen, tokens].sum())

    def _propose(self, block, logp, masked, state, remaining) -> torch.Tensor:
        """A token for every position: plain argmax/sample, or a DINGO draw of the whole block."""
        if self.method == "unconstrained":
            if not self.do_sample:
                return logp.argmax(-1)
            return torch.multinomial(torch.softmax(logp / self.temperature, -1), 1, generator=self.generator).squeeze(1)
        scores = _pin_committed(logp / self.temperature, block, masked)
        final = self.table.final_states(remaining)
        return dingo_sample(self.table, scores, start_state=state, final_states=final, generator=self.generator)[0]

    def _dingo_tokens(self, block, logp, masked, chosen, state, remaining) -> torch.Tensor:
        """DINGO's best block: committed fixed, ``chosen`` free, other masks wildcards."""
        scores = _pin_committed(logp, block, masked)
        wildcard = masked.clone()
        wildcard[chosen] = False
        result = dingo_decode(self.table, scores, start_state=state, wildcard=wildcard.tolist(),
                              final_states=self.table.final_states(remaining))
        return torch.as_tensor(result.tokens, device=block.device)[chosen]

    def _greedy_tokens(self, block, logp, masked, chosen, state, remaining) -> torch.Tensor:
        """The token-by-token baseline on the same positions: left to right, each the most
        probable token alone that keeps the block viable (the rest masked or committed)."""
        block = block.clone()
        final = self.table.final_states(remaining)
        for i in sorted(chosen.tolist()):
            masked = block == self.mask_token_id
            wildcard = masked.clone()
            wildcard[i] = False  # the only free position: its best viable token, alone
            result = dingo_decode(self.table, _pin_committed(logp, block, masked), start_state=state,
                                  wildcard=wildcard.tolist(), final_states=final)
            block[i] = result.tokens[i]
        return block[chosen]

    # -- helpers -------------------------------------------------------------------
    def _log_probs(self, canvas: torch.Tensor) -> torch.Tensor:
        """Per-position log-probabilities over the real vocabulary (the mask id excluded)."""
        out = self.model(canvas)
        logits = getattr(out, "logits", out[0] if isinstance(out, (tuple, list)) else out)[0].float()
        if self.shift_logits:
            logits = torch.cat([logits[:1], logits[:-1]])
        width = self.table.vocab_size
        if logits.shape[-1] != width:
            raise DiffusionError(
                f"Invalid model: expected logits of width {width} (the vocabulary the constraint was "
                f"compiled for), got {logits.shape[-1]}"
            )
        logits[:, self.mask_token_id] = float("-inf")
        return torch.log_softmax(logits, -1)

    def _advance(self, state: int, tokens: list[int]) -> int:
        for token in tokens:
            state = self.table.advance(state, token)
        if state < 0:
            raise DiffusionError("Internal error: a committed block left the language")  # pragma: no cover
        return state

    def _prompt_ids(self, prompt: str | list[int] | torch.Tensor) -> torch.Tensor:
        if isinstance(prompt, str):
            return self.tokenizer(prompt, return_tensors="pt")["input_ids"][0]
        return torch.as_tensor(prompt, dtype=torch.long).reshape(-1)

    def _output(self, tokens: list[int], total: float) -> DiffusionOutput:
        info = self.compiled.tokenizer_info
        eos = set(info.eos_token_ids)
        end = next((i for i, t in enumerate(tokens) if t in eos), len(tokens))
        body = tokens[:end]
        engine = self.compiled.engine
        clean = all(engine.is_matchable(t) for t in body) and all(t in eos for t in tokens[end:])
        data = info.decode_bytes([t for t in body if engine.is_matchable(t)])
        complete = clean and _accepts(self.compiled, data)
        if self.method != "unconstrained" and not complete:  # pragma: no cover - the DP guarantees it
            raise DiffusionError(f"Internal error: the constrained output {data[:200]!r} does not match")
        return DiffusionOutput(data.decode("utf-8", errors="replace"), tokens, total, complete)


def generate_diffusion(compiled: CompiledGrammar, prompt: str | list[str], model: Any, tokenizer: Any,
                       **options: Any) -> str | list[str]:
    """Front-end helper: one :class:`DiffusionGenerator` run per prompt (used by
    ``generate_regex(..., diffusion=True)``; ``generate_json`` can call it the same way)."""
    generator = DiffusionGenerator(model, tokenizer, compiled, **options)
    if isinstance(prompt, str):
        return generator.generate(prompt)
    return [generator.generate(p) for p in prompt]


def _accepts(compiled: CompiledGrammar, data: bytes) -> bool:
    """True when ``data`` is a full match of the constraint."""
    engine = compiled.engine
    state = engine.advance_bytes(engine.initial_state, data)
    return state is not None and engine.is_accepting(state)


def _pin_committed(logp: torch.Tensor, block: torch.Tensor, masked: torch.Tensor) -> torch.Tensor:
    """Scores with committed positions forced to their token (0 there, -inf elsewhere)."""
    fixed = torch.full_like(logp, float("-inf"))
    fixed.scatter_(1, block.unsqueeze(1), 0.0)
    return torch.where(masked.unsqueeze(1), logp, fixed)


def _transfer_counts(block_length: int, steps: int) -> list[int]:
    """How many positions each step commits: as even as possible, extras first (LLaDA)."""
    base, extra = divmod(block_length, steps)
    return [base + (1 if s < extra else 0) for s in range(steps) if base + (1 if s < extra else 0) > 0]


def _check_schedule(gen_length: int, block_length: int, steps: int) -> None:
    for name, value in (("gen_length", gen_length), ("block_length", block_length), ("steps", steps)):
        if not isinstance(value, int) or value <= 0:
            raise DiffusionError(f"Invalid {name}: expected a positive int, got {value!r}")
    if gen_length % block_length:
        raise DiffusionError(f"Invalid block_length: expected a divisor of gen_length={gen_length}, got {block_length}")
    if steps % (gen_length // block_length):
        raise DiffusionError(
            f"Invalid steps: expected a multiple of the number of blocks ({gen_length // block_length}), got {steps}"
        )


def _model_device(model: Any) -> torch.device:
    device = getattr(model, "device", None)
    if device is None:
        try:
            device = next(model.parameters()).device
        except (AttributeError, StopIteration):
            device = torch.device("cpu")
    return torch.device(device)
