"""The Matcher: per-sequence constraint state, the only object samplers talk to.

A matcher is cheap (a stack of small engine states) and reads everything heavy
from its :class:`~constrain.compiler.CompiledGrammar`.  The contract:

* :meth:`Matcher.fill_next_token_bitmask` sets exactly the tokens ``t`` for which
  the output so far followed by ``bytes(t)`` is still a prefix of a string in the
  language, plus the EOS tokens exactly when the output is a complete string.
* :meth:`Matcher.accept_token` returns False and leaves the state unchanged for a
  token the mask forbids.
* After an EOS token is accepted the matcher is terminated: the mask allows only
  EOS and only EOS is accepted, until :meth:`rollback` or :meth:`reset`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from .errors import BitmaskError

if TYPE_CHECKING:
    from collections.abc import Sequence

    import torch

    from .compiler import CompiledGrammar

__all__ = ["Matcher"]


class Matcher:
    """Tracks one sequence's progress through a compiled constraint.

    Parameters
    ----------
    compiled:
        The grammar from :class:`~constrain.compiler.Compiler`.

    Examples
    --------
    >>> matcher = Matcher(compiler.compile_regex(r"\\d+"))          # doctest: +SKIP
    >>> bitmask = allocate_token_bitmask(1, info.vocab_size)         # doctest: +SKIP
    >>> matcher.fill_next_token_bitmask(bitmask)                     # doctest: +SKIP
    >>> matcher.accept_token(token_id)                               # doctest: +SKIP
    """

    __slots__ = ("compiled", "_engine", "_states", "_terminated_at")

    def __init__(self, compiled: "CompiledGrammar") -> None:
        self.compiled = compiled
        self._engine = compiled.engine
        self._states: list = [self._engine.initial_state]
        # Length of ``_states`` right after the EOS token was accepted; None while running.
        self._terminated_at: int | None = None

    # -- stepping --------------------------------------------------------------
    def accept_token(self, token_id: int) -> bool:
        """Advance by one token; False (state unchanged) when the mask forbids it."""
        token_id = int(token_id)
        state = self._states[-1]
        engine = self._engine
        if engine.is_eos(token_id):
            if self._terminated_at is None and not engine.is_accepting(state):
                return False
            self._states.append(state)
            if self._terminated_at is None:
                self._terminated_at = len(self._states)
            return True
        if self._terminated_at is not None:
            return False
        nxt = engine.advance_token(state, token_id)
        if nxt is None:
            return False
        self._states.append(nxt)
        return True

    def accept_bytes(self, data: bytes | str) -> bool:
        """Advance by raw bytes (counts as one step for :meth:`rollback`)."""
        if isinstance(data, str):
            data = data.encode("utf-8")
        if self._terminated_at is not None:
            return False
        nxt = self._engine.advance_bytes(self._states[-1], bytes(data))
        if nxt is None:
            return False
        self._states.append(nxt)
        return True

    def rollback(self, num_tokens: int = 1) -> None:
        """Undo the last ``num_tokens`` accepted steps."""
        if not 0 <= num_tokens < len(self._states):
            raise ValueError(
                f"Invalid rollback: expected 0 <= num_tokens <= {len(self._states) - 1} "
                f"(steps accepted so far), got {num_tokens}"
            )
        if num_tokens:
            del self._states[-num_tokens:]
        if self._terminated_at is not None and len(self._states) < self._terminated_at:
            self._terminated_at = None

    def reset(self) -> None:
        """Back to the start, as freshly constructed."""
        del self._states[1:]
        self._terminated_at = None

    def fork(self) -> "Matcher":
        """An independent copy at the same position (beams, drafts, ASAp)."""
        clone = Matcher.__new__(Matcher)
        clone.compiled = self.compiled
        clone._engine = self._engine
        clone._states = self._states.copy()
        clone._terminated_at = self._terminated_at
        return clone

    __copy__ = fork

    # -- queries ---------------------------------------------------------------
    def is_terminated(self) -> bool:
        """True once an EOS token has been accepted."""
        return self._terminated_at is not None

    def is_accepting(self) -> bool:
        """True when the output so far is a complete string (EOS would be allowed)."""
        return self._terminated_at is not None or self._engine.is_accepting(self._states[-1])

    @property
    def num_steps(self) -> int:
        """Steps accepted so far (what :meth:`rollback` can undo)."""
        return len(self._states) - 1

    def forced_bytes(self) -> bytes:
        """Bytes that every valid continuation starts with (empty if there is a choice)."""
        if self._terminated_at is not None:
            return b""
        return self._engine.forced_bytes(self._states[-1])

    def next_token_mask_words(self) -> np.ndarray:
        """The packed uint32 mask of the current step (shared; do not modify)."""
        if self._terminated_at is not None:
            return self._engine.eos_words()
        return self._engine.mask_words(self._states[-1])

    def fill_next_token_bitmask(self, bitmask: "torch.Tensor | np.ndarray", row: int = 0) -> bool:
        """Write the allowed-token mask into ``bitmask[row]`` (int32, packed 32 per word).

        ``bitmask`` is a CPU int32 tensor or array of shape ``[batch, words]`` (or 1-D
        ``[words]`` with ``row=0``) from :func:`constrain.allocate_token_bitmask`.  Words
        beyond the tokenizer's vocabulary are cleared, so padded logits stay masked.
        Returns True (a mask was written; kept for API parity with xgrammar).

        This runs once per decoding step, so it is kept to one cached view lookup and
        one same-dtype row copy (about a microsecond for a 128k vocabulary).
        """
        cached = _last_views
        if (cached[0] is bitmask and cached[1] == bitmask.data_ptr() and cached[2] == bitmask.shape
                and cached[3] is bitmask.dtype):
            rows = cached[4]
        else:
            rows = _row_views(bitmask)
        words = self.next_token_mask_words()
        if not 0 <= row < len(rows):
            raise BitmaskError(f"Invalid bitmask row: expected 0 <= row < {len(rows)}, got {row}")
        target = rows[row]
        if target.shape[0] == words.shape[0]:
            target[...] = words
        else:
            self._fill_other_width(target, words)
        return True

    def _fill_other_width(self, target: np.ndarray, words: np.ndarray) -> None:
        """Copy ``words`` into a row wider (padded logits: the rest cleared) or narrower than it."""
        n, width = words.shape[0], target.shape[0]
        if width > n:
            target[:n] = words
            target[n:] = 0
            return
        if words[width:].any():
            raise BitmaskError(
                f"Invalid bitmask width: expected at least {n} words for vocab_size "
                f"{self.compiled.tokenizer_info.vocab_size}, got {width}"
            )
        target[...] = words[:width]


# The row views of the last tensor filled, keyed by what they were made from:
# decoding loops pass the same bitmask every step, and ``Tensor.numpy()`` plus its
# checks cost several times the row copy.  One tuple ``(tensor, data pointer, shape,
# dtype, rows)``, replaced whole, so that threads always read a consistent entry.
# It keeps that one tensor alive until another tensor is filled.  Strides are not
# compared (a tenth of a microsecond): the same object with the same memory, shape
# and dtype has other strides only after in-place surgery such as ``as_strided_``,
# and the rows still write inside the memory they view.
_last_views: tuple = (None, None, None, None, ())


def _row_views(bitmask) -> "Sequence[np.ndarray]":
    """Writable uint32 views (same memory) of the rows of a checked bitmask.

    A tensor's row views are remembered in ``_last_views`` until another tensor is
    filled; a numpy array is cheap to view, so it is viewed afresh (as a 2-D array,
    whose ``[row]`` is the row view).
    """
    global _last_views
    array = _as_numpy_rows(bitmask).view(np.uint32)
    if isinstance(bitmask, np.ndarray):
        return array
    rows = tuple(array)
    _last_views = (bitmask, bitmask.data_ptr(), bitmask.shape, bitmask.dtype, rows)
    return rows


def _as_numpy_rows(bitmask) -> np.ndarray:
    """A writable 2-D int32 numpy view of a CPU bitmask tensor or array."""
    if isinstance(bitmask, np.ndarray):
        array = bitmask
    else:
        device = getattr(bitmask, "device", None)
        if device is not None and device.type != "cpu":
            raise BitmaskError(
                f"Invalid bitmask device: expected a CPU tensor (fill on CPU, then copy to "
                f"{device} with .to(device, non_blocking=True)), got {device}"
            )
        array = bitmask.numpy()
    if array.dtype != np.int32:
        raise BitmaskError(f"Invalid bitmask dtype: expected int32, got {array.dtype}")
    if array.ndim == 1:
        return array.reshape(1, -1)
    if array.ndim != 2:
        raise BitmaskError(f"Invalid bitmask shape: expected [batch, words] or [words], got {tuple(array.shape)}")
    return array
