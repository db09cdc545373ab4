"""CPU backend: a numba kernel working on numpy views of the torch tensors.

The kernel never looks at the logits as floats.  It views them as integers of the same
width (``int16`` for float16/bfloat16, ``int32`` for float32, ``int64`` for float64) and
blends in the bit pattern of ``-inf`` with an integer mask::

    x = (x & ~clear) | (NEG_INF_BITS & clear)      # clear = 0 or -1 per token

which LLVM turns into wide vector code for contiguous rows.  Words equal to ``-1``
(every token allowed) are skipped with one compare.  One 128,256-token float32 row costs
about as much as copying it (~10-15 µs); the Python-side overhead is a few µs.

Strided logits are handled without copies: the kernel gets one flat 1-D view spanning
the tensor plus its row and column strides in elements.

Importing this module imports numba but compiles nothing; each kernel is compiled on
its first call for the integer width it sees (``cache=True`` keeps the machine code on
disk, so later processes load it in milliseconds).
"""

from __future__ import annotations

import numba
import numpy as np
import torch

from constrain.errors import BitmaskError
from constrain.kernels.bitmask import BITS_PER_WORD, INT_VIEW_DTYPES, neg_inf_bits

__all__ = ["NAME", "check_supported", "apply_rows"]

NAME = "numba"

_NUMPY_INTS = {torch.int16: np.int16, torch.int32: np.int32, torch.int64: np.int64}


def _neg_inf_scalar(dtype: torch.dtype) -> np.integer:
    """``-inf``'s bit pattern in ``dtype`` as a numpy integer of the same width.

    Typed numpy scalars make numba compile one kernel per width (16, 32, 64 bits).
    """
    return _NUMPY_INTS[INT_VIEW_DTYPES[dtype]](neg_inf_bits(dtype))


_NEG_INF_BITS: dict[torch.dtype, np.integer] = {
    dtype: _neg_inf_scalar(dtype) for dtype in INT_VIEW_DTYPES
}


@numba.njit(cache=True, nogil=True, inline="always")
def _blend(flat, pos, clear, neg_inf):  # pragma: no cover - compiled
    """Write ``neg_inf`` at ``flat[pos]`` where ``clear`` is -1; keep the value where it is 0."""
    flat[pos] = (flat[pos] & ~clear) | (neg_inf & clear)


@numba.njit(cache=True, nogil=True, inline="always")
def _clear_mask(word, bit):  # pragma: no cover - compiled
    """``-1`` if bit ``bit`` of ``word`` is clear (token disallowed), else ``0``, as int32."""
    one = np.int32(1)
    return np.int32(np.int32((word >> np.int32(bit)) & one) - one)


@numba.njit(cache=True, nogil=True, inline="always")
def _mask_word_contiguous(flat, start, word, neg_inf):  # pragma: no cover - compiled
    """Mask the 32 adjacent tokens at ``flat[start:start + 32]`` (vectorized by LLVM).

    Positions are unsigned so numba emits no negative-index wraparound, which would
    otherwise block vectorization.
    """
    for bit in range(BITS_PER_WORD):
        _blend(flat, np.uint64(start + bit), _clear_mask(word, bit), neg_inf)


@numba.njit(cache=True, nogil=True, inline="always")
def _mask_word_strided(flat, start, step, word, neg_inf, scratch):  # pragma: no cover
    """Mask 32 tokens ``step`` elements apart, starting at ``flat[start]``.

    The per-bit masks go through ``scratch`` first: computed inline, LLVM recognizes
    the blend as a select on one bit and, in scalar code, turns it into a branch that
    mispredicts on random masks (about 25x slower at 50% density).
    """
    for bit in range(BITS_PER_WORD):
        scratch[bit] = _clear_mask(word, bit)
    for bit in range(BITS_PER_WORD):
        _blend(flat, np.uint64(start + bit * step), scratch[bit], neg_inf)


@numba.njit(cache=True, nogil=True)
def _mask_row(flat, start, step, width, words, neg_inf, scratch):  # pragma: no cover
    """Mask one logits row of ``width`` tokens starting at ``flat[start]`` with ``words``.

    Tokens at or past ``32 * len(words)`` are disallowed; bits past ``width`` are
    ignored.  The last, partly used word goes through the scalar loop.
    """
    covered = min(width, words.shape[0] * BITS_PER_WORD)
    full_words = covered // BITS_PER_WORD
    for w in range(full_words):
        word = words[w]
        if word == -1:
            continue
        base = start + w * BITS_PER_WORD * step
        if step == 1:
            _mask_word_contiguous(flat, base, word, neg_inf)
        else:
            _mask_word_strided(flat, base, step, word, neg_inf, scratch)
    for token in range(full_words * BITS_PER_WORD, covered):
        bit = token - full_words * BITS_PER_WORD
        _blend(flat, np.uint64(start + token * step), _clear_mask(words[full_words], bit), neg_inf)
    for token in range(covered, width):
        flat[np.uint64(start + token * step)] = neg_inf


@numba.njit(cache=True, nogil=True)
def _mask_rows(flat, row_stride, col_stride, width, bitmask, rows, neg_inf):  # pragma: no cover
    """Mask logits row ``r`` with bitmask row ``r`` for every ``r`` in ``rows``."""
    scratch = np.empty(BITS_PER_WORD, dtype=np.int32)
    for i in range(rows.shape[0]):
        r = rows[i]
        _mask_row(flat, r * row_stride, col_stride, width, bitmask[r], neg_inf, scratch)


def check_supported(logits: torch.Tensor) -> None:
    """Raise :class:`BitmaskError` unless ``logits`` live on the CPU."""
    if logits.device.type != "cpu":
        raise BitmaskError(
            f"Invalid logits device for backend 'numba': expected cpu, got {logits.device}"
        )


def _flat_view(logits: torch.Tensor) -> tuple[np.ndarray, int, int]:
    """Return a 1-D integer numpy view spanning ``logits`` and its strides in elements.

    No data is copied: the view starts at the first element and ends at the last one
    of the (possibly strided) 2-D tensor.  Contiguous logits take a shortcut that saves
    ~1 µs of the ~3 µs this costs.
    """
    ints = logits.detach().view(INT_VIEW_DTYPES[logits.dtype])
    (batch, width), (row_stride, col_stride) = ints.shape, ints.stride()
    if ints.is_contiguous():
        return ints.numpy().reshape(-1), row_stride, col_stride
    span = (batch - 1) * row_stride + (width - 1) * col_stride + 1
    flat = torch.as_strided(ints, (span,), (1,), ints.storage_offset())
    return flat.numpy(), row_stride, col_stride


def apply_rows(logits: torch.Tensor, bitmask: torch.Tensor, rows: torch.Tensor | None) -> None:
    """Set disallowed logits to ``-inf`` for ``rows`` (``None``: every row).

    Arguments come from :func:`constrain.kernels.bitmask.prepare_apply` (2-D, checked,
    on the CPU).  The bitmask is copied only if it is not contiguous.  The writes go
    through a detached view, so autograd does not see them (``backend="auto"`` sends
    logits that require grad to the torch backend).
    """
    batch, width = logits.shape
    if batch == 0 or width == 0:
        return
    flat, row_stride, col_stride = _flat_view(logits)
    row_ids = np.arange(batch) if rows is None else rows.numpy()
    words = bitmask.contiguous().numpy()
    _mask_rows(flat, row_stride, col_stride, width, words, row_ids, _NEG_INF_BITS[logits.dtype])
