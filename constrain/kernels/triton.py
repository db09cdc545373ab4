"""CUDA backend: a triton kernel, one program per (row, block of bitmask words).

Each program loads ``WORDS_PER_BLOCK`` words of its row and works on the
``[WORDS_PER_BLOCK, 32]`` tile of logits they cover, one 32-token word at a time in
effect, the way the fastest CUDA kernels work on packed vectors:

* a word with every bit set (all 32 tokens allowed) is neither read nor written;
* a word with no bit set is written with ``-inf`` without reading the logits;
* a mixed word is read, blended with ``-inf`` where bits are clear, and written whole.

Every load and store mask is constant along a word, so triton emits wide vector
accesses.  The logits are read and written as integers of their width (``-inf`` is a
bit pattern), which is exact for every float dtype and needs no float constant of the
logits' type (triton's CPU interpreter cannot build a bfloat16 one).  A first version
stored ``-inf`` element by element under a per-token mask: the predicated scalar stores
cost 1.5x a full read and write of the row on an H100 (see BENCHMARKS.md).  The grid
covers ``ceil(V' / 32)`` words, i.e. the whole logits row,
even when the bitmask is narrower: words past the bitmask's width load as ``0`` (every
token disallowed), which masks padded vocabulary ids; columns past ``V'`` are never
touched, so extra bits are ignored.

``triton`` is imported on first use, never at import of ``constrain``; requesting this
backend without triton installed raises an ``ImportError`` that says what to install.
"""

from __future__ import annotations

import functools
from typing import Any

import torch

from constrain.errors import BitmaskError
from constrain.kernels.bitmask import BITS_PER_WORD, INT_VIEW_DTYPES, neg_inf_bits

__all__ = ["NAME", "is_available", "check_supported", "apply_rows"]

NAME = "triton"

WORDS_PER_BLOCK = 32
"""Bitmask words per program: 1,024 tokens, a [32, 32] tile of bits."""

_INSTALL_HINT = (
    "The 'triton' backend needs the triton package: install it with "
    "`pip install triton` (it ships with CUDA builds of torch on Linux)."
)


@functools.cache
def is_available() -> bool:
    """Whether triton can be imported (checked once, then cached)."""
    try:
        import triton  # noqa: F401
    except ImportError:
        return False
    return True


@functools.cache
def _kernel() -> Any:
    """Compile-on-first-launch triton kernel (built once per process)."""
    try:
        import triton
        import triton.language as tl
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError(_INSTALL_HINT) from exc

    @triton.jit
    def mask_kernel(
        logits_ptr,
        bitmask_ptr,
        rows_ptr,
        width,
        n_words,
        logits_row_stride,
        logits_col_stride,
        bitmask_row_stride,
        NEG_INF: tl.constexpr,
        HAS_ROWS: tl.constexpr,
        WORDS: tl.constexpr,
        BITS: tl.constexpr,
    ):
        if HAS_ROWS:
            row = tl.load(rows_ptr + tl.program_id(0)).to(tl.int64)
        else:
            row = tl.program_id(0).to(tl.int64)
        word_ids = tl.program_id(1) * WORDS + tl.arange(0, WORDS)
        words = tl.load(
            bitmask_ptr + row * bitmask_row_stride + word_ids,
            mask=word_ids < n_words,
            other=0,
        )
        bit_ids = tl.arange(0, BITS)
        allowed = ((words[:, None] >> bit_ids[None, :]) & 1) != 0
        cols = word_ids[:, None].to(tl.int64) * BITS + bit_ids[None, :]
        inside = cols < width
        pointers = logits_ptr + row * logits_row_stride + cols * logits_col_stride
        mixed = ((words != 0) & (words != -1))[:, None]
        current = tl.load(pointers, mask=inside & mixed, other=NEG_INF)
        masked = tl.where(allowed, current, NEG_INF)
        tl.store(pointers, masked, mask=inside & (words != -1)[:, None])

    return mask_kernel


def _ceil_div(numerator: int, denominator: int) -> int:
    """``ceil(numerator / denominator)`` for non-negative ints."""
    return -(-numerator // denominator)


def check_supported(logits: torch.Tensor) -> None:
    """Raise unless triton is importable and ``logits`` live on a CUDA device."""
    if not is_available():
        raise ImportError(_INSTALL_HINT)
    if logits.device.type != "cuda":
        raise BitmaskError(
            f"Invalid logits device for backend 'triton': expected cuda, got {logits.device}"
        )


def apply_rows(logits: torch.Tensor, bitmask: torch.Tensor, rows: torch.Tensor | None) -> None:
    """Set disallowed logits to ``-inf`` for ``rows`` (``None``: every row).

    Arguments come from :func:`constrain.kernels.bitmask.prepare_apply` (2-D, checked,
    on one CUDA device).  ``rows`` is copied to the device (a small host-to-device copy).
    """
    batch, width = logits.shape
    n_rows = batch if rows is None else rows.numel()
    if n_rows == 0 or width == 0:
        return
    words = bitmask.contiguous()
    row_ids = words if rows is None else rows.to(device=logits.device, dtype=torch.int32)
    blocks = _ceil_div(_ceil_div(width, BITS_PER_WORD), WORDS_PER_BLOCK)
    _kernel()[(n_rows, blocks)](
        logits.view(INT_VIEW_DTYPES[logits.dtype]),
        words,
        row_ids,
        width,
        words.shape[1],
        logits.stride(0),
        logits.stride(1),
        words.stride(0),
        NEG_INF=neg_inf_bits(logits.dtype),
        HAS_ROWS=rows is not None,
        WORDS=WORDS_PER_BLOCK,
        BITS=BITS_PER_WORD,
    )
