"""The transformers drop-in: a ``LogitsProcessor`` that keeps one matcher per row.

``model.generate`` gives a processor only ``(input_ids, scores)``.  The processor
therefore resynchronises its matchers from ``input_ids`` at every call:

* fast path: the rows are the previous call's rows plus one token each (greedy,
  sampling, any batch size): one ``torch.equal`` and one ``accept_token`` per row;
* slow path: rows were reordered or duplicated (beam search), or tokens were
  appended several at a time (assisted generation): each row is matched to the
  previous matcher whose history is its prefix, forked, and advanced; a row with no
  such matcher is replayed from the prompt.

A new ``generate`` call with the same processor is detected by a changed prompt and
starts afresh.  Finished rows (EOS accepted) are masked to EOS only; what
transformers writes after them (padding) is ignored.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch

from ..compiler import CompiledGrammar, Compiler
from ..errors import BitmaskError, ConstrainError
from ..kernels import apply_token_bitmask_
from ..matcher import Matcher
from ..vocab import TokenizerInfo

try:  # transformers is a dependency, but keep the import error readable.
    from transformers import LogitsProcessor
except ImportError as err:  # pragma: no cover
    raise ImportError("constrain.samplers.processor needs transformers: pip install transformers") from err

__all__ = ["ConstrainedLogitsProcessor", "RegexLogitsProcessor", "GrammarLogitsProcessor", "compiler_for"]


class ConstrainedLogitsProcessor(LogitsProcessor):
    """Mask ``model.generate`` logits to a compiled constraint, exactly.

    Parameters
    ----------
    compiled:
        One compiled grammar for every row, or one per input row (the batch given to
        ``generate``; beams of row ``i`` use ``compiled[i]``).

    Examples
    --------
    >>> from transformers import LogitsProcessorList                  # doctest: +SKIP
    >>> info = TokenizerInfo.from_huggingface(tokenizer)               # doctest: +SKIP
    >>> compiled = Compiler(info).compile_regex(r"\\d{3}-\\d{4}")        # doctest: +SKIP
    >>> out = model.generate(**inputs, max_new_tokens=16,              # doctest: +SKIP
    ...     logits_processor=LogitsProcessorList([ConstrainedLogitsProcessor(compiled)]))
    """

    def __init__(self, compiled: CompiledGrammar | Sequence[CompiledGrammar]) -> None:
        grammars = [compiled] if isinstance(compiled, CompiledGrammar) else list(compiled)
        if not grammars or not all(isinstance(g, CompiledGrammar) for g in grammars):
            raise TypeError("Invalid compiled: expected a CompiledGrammar or a non-empty list of them")
        infos = {g.tokenizer_info.hash for g in grammars}
        if len(infos) != 1:
            raise ValueError("Invalid compiled: every grammar must be compiled for the same tokenizer")
        self.grammars = grammars
        self.tokenizer_info = grammars[0].tokenizer_info
        self.reset()

    def reset(self) -> None:
        """Forget all rows (done automatically when a new prompt is seen)."""
        self._prompt: torch.Tensor | None = None
        self._previous: torch.Tensor | None = None
        self._matchers: list[Matcher] = []
        self._bitmask: torch.Tensor | None = None

    # -- transformers entry point ---------------------------------------------
    def __call__(self, input_ids: torch.LongTensor, scores: torch.FloatTensor) -> torch.FloatTensor:
        self._check_width(scores)
        self._sync(input_ids)
        bitmask = self._bitmask_for(scores)
        for row, matcher in enumerate(self._matchers):
            matcher.fill_next_token_bitmask(bitmask, row)
        if not bitmask.any(dim=1).all():
            row = int((~bitmask.any(dim=1)).nonzero()[0, 0])
            raise ConstrainError(
                f"No token is allowed for row {row}: the tokenizer cannot spell any "
                "continuation of the constraint (never unmasking, to keep output valid)"
            )
        masked = scores.clone()
        device_mask = bitmask.to(scores.device, non_blocking=True) if scores.device.type != "cpu" else bitmask
        apply_token_bitmask_(masked, device_mask)
        return masked

    # -- row state --------------------------------------------------------------
    def _check_width(self, scores: torch.Tensor) -> None:
        if scores.ndim != 2:
            raise BitmaskError(f"Invalid scores: expected a 2-D [batch, vocab] tensor, got shape {tuple(scores.shape)}")
        if scores.shape[-1] < self.tokenizer_info.num_tokens:
            raise BitmaskError(
                f"Invalid logits width: expected at least {self.tokenizer_info.num_tokens} "
                f"(the tokenizer's size), got {scores.shape[-1]}; was the grammar compiled "
                "for this model's tokenizer?"
            )

    def _bitmask_for(self, scores: torch.Tensor) -> torch.Tensor:
        words = (scores.shape[-1] + 31) // 32
        shape = (scores.shape[0], words)
        if self._bitmask is None or tuple(self._bitmask.shape) != shape:
            self._bitmask = torch.empty(shape, dtype=torch.int32)
        return self._bitmask

    def _grammar_for_row(self, row: int, batch: int) -> CompiledGrammar:
        if len(self.grammars) == 1:
            return self.grammars[0]
        if batch % len(self.grammars):
            raise ValueError(
                f"Invalid batch: {len(self.grammars)} grammars given but the batch has {batch} rows "
                "(expected a multiple: rows x beams)"
            )
        return self.grammars[row // (batch // len(self.grammars))]

    def _new_matcher(self, row: int, batch: int) -> Matcher:
        """A fresh matcher for ``row`` at the end of its prompt (subclasses add per-row state)."""
        return Matcher(self._grammar_for_row(row, batch))

    def _sync(self, input_ids: torch.Tensor) -> None:
        """Bring one matcher per row up to date with ``input_ids``."""
        ids = input_ids.detach()
        if ids.device.type != "cpu":
            ids = ids.cpu()
        if self._is_new_generation(ids):
            self._prompt = ids.clone()
            self._previous = ids
            self._matchers = [self._new_matcher(r, ids.shape[0]) for r in range(ids.shape[0])]
            return
        if self._extends_previous(ids):
            for row, token in enumerate(ids[:, -1].tolist()):
                self._advance(self._matchers[row], [token], row)
        else:
            self._resync_rows(ids)
        self._previous = ids

    def _extends_previous(self, ids: torch.Tensor) -> bool:
        """True when every row is the previous call's row plus one token (the fast path)."""
        prev = self._previous
        return (
            prev is not None
            and ids.shape[0] == prev.shape[0]
            and ids.shape[1] == prev.shape[1] + 1
            and torch.equal(ids[:, :-1], prev)
        )

    def _is_new_generation(self, ids: torch.Tensor) -> bool:
        prompt = self._prompt
        if prompt is None or ids.shape[1] < prompt.shape[1]:
            return True
        if ids.shape[0] != prompt.shape[0]:
            # Beam search expands the batch before the first call, so a changed batch
            # size means a new call; so does a changed prompt.
            return True
        return not torch.equal(ids[:, : prompt.shape[1]], prompt)

    def _resync_rows(self, ids: torch.Tensor) -> None:
        """Slow path: match each row to a previous matcher by history, fork, advance."""
        start = self._prompt.shape[1]
        by_history: dict[tuple[int, ...], Matcher] = {}
        for matcher, row_ids in zip(self._matchers, self._previous[:, start:].tolist()):
            by_history.setdefault(tuple(row_ids), matcher)
        matchers = []
        for row, row_ids in enumerate(ids[:, start:].tolist()):
            base = None
            for cut in range(len(row_ids), -1, -1):
                base = by_history.get(tuple(row_ids[:cut]))
                if base is not None:
                    break
            if base is None:
                # Assisted generation verifies drafts by calling again with shorter rows:
                # roll a previous matcher back to the common prefix instead of replaying.
                base, cut = self._rolled_back(row_ids)
            if base is None:
                matcher, rest = self._new_matcher(row, ids.shape[0]), row_ids
            else:
                matcher, rest = base.fork(), row_ids[cut:]
            self._advance(matcher, rest, row)
            matchers.append(matcher)
        self._matchers = matchers

    def _rolled_back(self, row_ids: list[int]) -> tuple[Matcher | None, int]:
        """A fork of the previous matcher sharing the longest prefix with ``row_ids``, rolled back to it.

        Only matchers that took one step per token (none stopped at EOS) can be rolled
        back by token count; returns ``(None, 0)`` when none shares a prefix.
        """
        start = self._prompt.shape[1]
        best, best_len = None, 0
        for matcher, history in zip(self._matchers, self._previous[:, start:].tolist()):
            if not hasattr(matcher, "rollback") or matcher.num_steps != len(history):
                continue  # monitored matchers cannot roll back; they are replayed instead
            common = 0
            for a, b in zip(history, row_ids):
                if a != b:
                    break
                common += 1
            if common > best_len:
                best, best_len = (matcher, len(history)), common
        if best is None:
            return None, 0
        matcher, length = best
        fork = matcher.fork()
        fork.rollback(length - best_len)
        return fork, best_len

    def _advance(self, matcher: Matcher, tokens: list[int], row: int) -> None:
        for token in tokens:
            if matcher.is_terminated():
                return  # padding after EOS
            if not matcher.accept_token(token):
                raise ConstrainError(
                    f"Token {token} in row {row} is not allowed by the constraint: was another "
                    "logits processor or a forced token applied after this one?"
                )


_COMPILERS: dict[tuple[int, int | None], tuple[Any, Compiler]] = {}


def compiler_for(tokenizer: Any, vocab_size: int | None = None) -> Compiler:
    """A :class:`Compiler` for a Hugging Face tokenizer, reused across calls.

    Keyed by the tokenizer object's identity (and the logits width), so repeated
    ``RegexLogitsProcessor(pattern, tokenizer)`` calls share the vocabulary analysis
    and the compiled-grammar cache.
    """
    key = (id(tokenizer), vocab_size)
    entry = _COMPILERS.get(key)
    if entry is None or entry[0] is not tokenizer:
        compiler = Compiler(TokenizerInfo.from_huggingface(tokenizer, vocab_size=vocab_size))
        _COMPILERS[key] = (tokenizer, compiler)
        return compiler
    return entry[1]


class RegexLogitsProcessor(ConstrainedLogitsProcessor):
    """A :class:`ConstrainedLogitsProcessor` for a regex, built from a tokenizer.

    Parameters
    ----------
    pattern:
        ECMA-262 regular expression the generated text must match in full.
    tokenizer:
        The Hugging Face tokenizer of the model.
    vocab_size:
        The model's logits width when it exceeds ``len(tokenizer)`` (padded
        embeddings); extra ids are never allowed.
    """

    def __init__(self, pattern: str, tokenizer: Any, *, vocab_size: int | None = None) -> None:
        super().__init__(compiler_for(tokenizer, vocab_size).compile_regex(pattern))


class GrammarLogitsProcessor(ConstrainedLogitsProcessor):
    """A :class:`ConstrainedLogitsProcessor` for a Lark grammar (text or built-in name)."""

    def __init__(self, grammar: str, tokenizer: Any, *, start: str = "start", vocab_size: int | None = None) -> None:
        from ..grammar.builtin import BUILTIN_GRAMMARS, builtin_grammar

        text = builtin_grammar(grammar) if grammar in BUILTIN_GRAMMARS else grammar
        super().__init__(compiler_for(tokenizer, vocab_size).compile_grammar(text, start=start))


class JSONSchemaLogitsProcessor(ConstrainedLogitsProcessor):
    """A :class:`ConstrainedLogitsProcessor` for a JSON Schema (dict, JSON text or pydantic model).

    Keyword arguments (``whitespace``, ``strict``...) are those of
    :meth:`constrain.Compiler.compile_json_schema`.
    """

    def __init__(self, schema: Any, tokenizer: Any, *, vocab_size: int | None = None, **options: Any) -> None:
        super().__init__(compiler_for(tokenizer, vocab_size).compile_json_schema(schema, **options))
