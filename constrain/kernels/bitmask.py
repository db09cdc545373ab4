"""Token bitmasks: allocation, shapes, packing, and argument checking for the kernels.

A token bitmask is an ``int32`` tensor of shape ``[batch, ceil(vocab / 32)]`` (or 1-D
``[ceil(vocab / 32)]``).  Bit ``i % 32`` of word ``i // 32`` is set when token ``i`` is
allowed; the bit order inside a word is little-endian (bit 0 is the least significant),
so a word with every token allowed reads ``-1``.  This is the layout xgrammar uses, so a
bitmask filled by either library can be applied by the other.

Everything here is vectorized torch code: no Python loop runs per token or per word.
"""

from __future__ import annotations

import functools
import operator
import sys
from collections.abc import Sequence
from typing import NamedTuple

import torch

from constrain.errors import BitmaskError

__all__ = [
    "BITS_PER_WORD",
    "FLOAT_DTYPES",
    "MaskPlan",
    "get_bitmask_shape",
    "allocate_token_bitmask",
    "reset_token_bitmask",
    "pack_bool_mask",
    "unpack_bitmask",
    "INT_VIEW_DTYPES",
    "neg_inf_bits",
    "expand_bits",
    "disallowed_tokens",
    "prepare_apply",
]

BITS_PER_WORD = 32
"""Tokens covered by one ``int32`` word of a bitmask."""

FLOAT_DTYPES: tuple[torch.dtype, ...] = (
    torch.float16,
    torch.bfloat16,
    torch.float32,
    torch.float64,
)
"""Logits dtypes the kernels accept (the ones that can hold ``-inf``)."""

_LITTLE_ENDIAN = sys.byteorder == "little"


def _check_count(name: str, value: int) -> int:
    """Return ``value`` if it is a non-negative ``int`` (not ``bool``), else raise."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise BitmaskError(f"Invalid {name}: expected a non-negative int, got {value!r}")
    return value


def _words_for(vocab_size: int) -> int:
    """Number of 32-bit words needed to hold ``vocab_size`` bits."""
    return -(-vocab_size // BITS_PER_WORD)


def get_bitmask_shape(batch_size: int, vocab_size: int) -> tuple[int, int]:
    """Return the bitmask shape ``(batch_size, ceil(vocab_size / 32))``.

    Parameters
    ----------
    batch_size : int
        Number of sequences (rows).
    vocab_size : int
        Number of tokens each row covers; the last word may be partly used.

    Returns
    -------
    tuple of int
        The shape :func:`allocate_token_bitmask` allocates.
    """
    _check_count("batch_size", batch_size)
    _check_count("vocab_size", vocab_size)
    return batch_size, _words_for(vocab_size)


def allocate_token_bitmask(
    batch_size: int, vocab_size: int, device: torch.device | str | None = None
) -> torch.Tensor:
    """Allocate a bitmask with every token allowed (every word ``-1``).

    One ``torch.full`` call: ``4 * batch * ceil(vocab / 32)`` bytes.  CPU memory is not
    pinned; copy it to the accelerator yourself when the logits live there.

    Parameters
    ----------
    batch_size, vocab_size : int
        See :func:`get_bitmask_shape`.
    device : torch.device or str, optional
        Where to allocate; the CPU by default.

    Returns
    -------
    torch.Tensor
        ``int32`` tensor of shape ``get_bitmask_shape(batch_size, vocab_size)``.
    """
    shape = get_bitmask_shape(batch_size, vocab_size)
    return torch.full(shape, -1, dtype=torch.int32, device=device)


def _check_bitmask_dtype(bitmask: torch.Tensor) -> None:
    """Raise unless ``bitmask`` is an ``int32`` tensor."""
    if not isinstance(bitmask, torch.Tensor):
        raise BitmaskError(
            f"Invalid bitmask: expected a torch.Tensor, got {type(bitmask).__name__}"
        )
    if bitmask.dtype != torch.int32:
        raise BitmaskError(f"Invalid bitmask dtype: expected torch.int32, got {bitmask.dtype}")


def reset_token_bitmask(bitmask: torch.Tensor) -> None:
    """Mark every token allowed again by filling ``bitmask`` with ``-1`` in place.

    Reusing one allocation per batch avoids an allocation per decoding step; the cost
    is a single ``fill_``.
    """
    _check_bitmask_dtype(bitmask)
    bitmask.fill_(-1)


@functools.cache
def _bit_weights(device: torch.device) -> torch.Tensor:
    """``int64`` tensor ``[1, 2, 4, ..., 2**31]`` on ``device`` (cached: built once)."""
    return torch.bitwise_left_shift(
        torch.ones(BITS_PER_WORD, dtype=torch.int64, device=device),
        torch.arange(BITS_PER_WORD, dtype=torch.int64, device=device),
    )


def pack_bool_mask(mask: torch.Tensor) -> torch.Tensor:
    """Pack a boolean mask ``[..., V]`` into an ``int32`` bitmask ``[..., ceil(V / 32)]``.

    ``True`` means allowed.  Bits past ``V`` in the last word are left clear.  The words
    are summed as ``int64`` (one multiply and one reduction over ``32 * W`` elements per
    row) and then folded into two's-complement ``int32``, so the result does not depend
    on the machine's byte order.

    Parameters
    ----------
    mask : torch.Tensor
        ``bool`` tensor with at least one dimension; the last one is the vocabulary.

    Returns
    -------
    torch.Tensor
        ``int32`` bitmask on the same device.
    """
    if not isinstance(mask, torch.Tensor) or mask.dtype != torch.bool:
        got = mask.dtype if isinstance(mask, torch.Tensor) else type(mask).__name__
        raise BitmaskError(f"Invalid mask dtype: expected torch.bool, got {got}")
    if mask.dim() < 1:
        raise BitmaskError("Invalid mask shape: expected at least 1 dimension, got a scalar")
    vocab = mask.shape[-1]
    words = _words_for(vocab)
    padded = torch.nn.functional.pad(mask, (0, words * BITS_PER_WORD - vocab))
    grouped = padded.reshape(*mask.shape[:-1], words, BITS_PER_WORD).to(torch.int64)
    unsigned = (grouped * _bit_weights(mask.device)).sum(dim=-1)
    signed = torch.where(unsigned >= 2**31, unsigned - 2**32, unsigned)
    return signed.to(torch.int32)


INT_VIEW_DTYPES: dict[torch.dtype, torch.dtype] = {
    torch.float16: torch.int16,
    torch.bfloat16: torch.int16,
    torch.float32: torch.int32,
    torch.float64: torch.int64,
}
"""Integer dtype of the same width as each float dtype, for bit-level blending."""


@functools.cache
def neg_inf_bits(dtype: torch.dtype) -> int:
    """The bit pattern of ``-inf`` in float ``dtype``, read as a signed ``INT_VIEW_DTYPES`` int."""
    return int(torch.tensor(float("-inf"), dtype=dtype).view(INT_VIEW_DTYPES[dtype]).item())


@functools.cache
def _byte_table(
    device: torch.device, dtype: torch.dtype, set_value: int, clear_value: int
) -> torch.Tensor:
    """Table ``[256, 8]``: entry ``[b, k]`` is ``set_value`` if bit ``k`` of byte ``b`` is set.

    Built once per argument tuple; at most 16 KiB each.
    """
    bits = (torch.arange(256, device=device).unsqueeze(1) >> torch.arange(8, device=device)) & 1
    return torch.where(bits == 1, set_value, clear_value).to(dtype)


def _expand_by_table(
    bitmask: torch.Tensor, dtype: torch.dtype, set_value: int, clear_value: int
) -> torch.Tensor:
    """Expand words via their bytes: one ``index_select`` of ``4 * W`` table rows per row.

    Only valid on little-endian hosts, where byte ``j`` of a word holds bits ``8j..8j+7``.
    ``index_select`` is ~4x faster than advanced indexing on the CPU.
    """
    as_bytes = bitmask.contiguous().view(torch.uint8).reshape(-1).to(torch.int64)
    table = _byte_table(bitmask.device, dtype, set_value, clear_value)
    expanded = table.index_select(0, as_bytes)
    return expanded.reshape(*bitmask.shape[:-1], bitmask.shape[-1] * BITS_PER_WORD)


def _expand_by_shift(
    bitmask: torch.Tensor, dtype: torch.dtype, set_value: int, clear_value: int
) -> torch.Tensor:
    """Expand words by shifting each by ``0..31``: byte-order independent, ~2x slower."""
    shifts = torch.arange(BITS_PER_WORD, dtype=torch.int32, device=bitmask.device)
    bits = (bitmask.unsqueeze(-1) >> shifts) & 1
    expanded = torch.where(bits == 1, set_value, clear_value).to(dtype)
    return expanded.reshape(*bitmask.shape[:-1], bitmask.shape[-1] * BITS_PER_WORD)


def expand_bits(
    bitmask: torch.Tensor,
    count: int,
    *,
    dtype: torch.dtype = torch.bool,
    set_value: int = 1,
    clear_value: int = 0,
) -> torch.Tensor:
    """Expand a bitmask ``[..., W]`` into ``[..., count]`` values, one per token.

    A token whose bit is set gets ``set_value``, others ``clear_value``, in ``dtype``:
    the defaults give a bool "allowed" mask; ``dtype=torch.int32, set_value=-1`` gives
    the AND-masks the torch backend blends with.  ``count`` must not exceed ``32 * W``.
    Costs one table gather (little-endian hosts) or one broadcast shift (big-endian)
    over ``32 * W`` elements per row.
    """
    expand = _expand_by_table if _LITTLE_ENDIAN else _expand_by_shift
    return expand(bitmask, dtype, set_value, clear_value)[..., :count]


@functools.cache
def _word_bits(device: torch.device) -> torch.Tensor:
    """``int32`` tensor ``[1, 2, 4, ..., -2**31]``: bit ``k`` of a word, per ``k`` (cached)."""
    return _bit_weights(device).to(torch.int32)


def disallowed_tokens(bitmask: torch.Tensor, count: int) -> torch.Tensor:
    """Bool ``[..., count]``, true where a token's bit is clear (the token is disallowed).

    Two elementwise ops (an AND with each word's bit, a compare) and no gather: the form
    for accelerators, where the CPU-tuned byte-table gather of :func:`expand_bits` is
    slow (an H100 took 2.9 ms for it on 256 rows of 128k tokens).  ``count`` must not
    exceed ``32 * W``.
    """
    bits = bitmask.unsqueeze(-1) & _word_bits(bitmask.device)
    cleared = bits == 0
    return cleared.reshape(*bitmask.shape[:-1], bitmask.shape[-1] * BITS_PER_WORD)[..., :count]


def unpack_bitmask(bitmask: torch.Tensor, vocab_size: int) -> torch.Tensor:
    """Unpack an ``int32`` bitmask ``[..., W]`` into a bool mask ``[..., vocab_size]``.

    ``True`` means allowed.  Tokens at or past ``32 * W`` are reported disallowed, which
    is how :func:`apply_token_bitmask_` treats them.

    Parameters
    ----------
    bitmask : torch.Tensor
        ``int32`` bitmask with at least one dimension.
    vocab_size : int
        Length of the last dimension of the result.

    Returns
    -------
    torch.Tensor
        ``bool`` tensor on the bitmask's device.
    """
    _check_bitmask_dtype(bitmask)
    _check_count("vocab_size", vocab_size)
    if bitmask.dim() < 1:
        raise BitmaskError("Invalid bitmask shape: expected at least 1 dimension, got a scalar")
    covered = min(vocab_size, bitmask.shape[-1] * BITS_PER_WORD)
    allowed = expand_bits(bitmask, covered)
    return torch.nn.functional.pad(allowed, (0, vocab_size - covered))


class MaskPlan(NamedTuple):
    """Checked, normalized arguments of :func:`apply_token_bitmask_`.

    Attributes
    ----------
    logits : torch.Tensor
        2-D view ``[B, V']`` of the caller's logits (writes reach the caller).
    bitmask : torch.Tensor
        2-D ``int32`` bitmask ``[B', W]`` on the same device.
    rows : torch.Tensor or None
        ``int64`` CPU tensor of the rows to mask (row ``i`` of logits with row ``i`` of
        the bitmask), or ``None`` for every row.
    """

    logits: torch.Tensor
    bitmask: torch.Tensor
    rows: torch.Tensor | None


def _as_2d(name: str, tensor: torch.Tensor) -> torch.Tensor:
    """View a 1-D tensor as one row; reject anything but 1-D or 2-D."""
    if tensor.dim() == 1:
        return tensor.unsqueeze(0)
    if tensor.dim() != 2:
        raise BitmaskError(
            f"Invalid {name} shape: expected 1-D or 2-D, got {tuple(tensor.shape)}"
        )
    return tensor


def _check_logits(logits: torch.Tensor) -> None:
    """Raise unless ``logits`` is a tensor of a float dtype that can hold ``-inf``."""
    if not isinstance(logits, torch.Tensor):
        raise BitmaskError(f"Invalid logits: expected a torch.Tensor, got {type(logits).__name__}")
    if logits.dtype not in FLOAT_DTYPES:
        expected = ", ".join(str(d) for d in FLOAT_DTYPES)
        raise BitmaskError(f"Invalid logits dtype: expected one of {expected}, got {logits.dtype}")
    if any(size > 1 and stride == 0 for size, stride in zip(logits.shape, logits.stride())):
        raise BitmaskError(
            "Invalid logits strides: expected every element in its own memory "
            f"(no zero strides from expand()), got {logits.stride()}"
        )


_INDEX_DTYPES = (torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64)


def _as_row_index(value: object) -> int:
    """``value`` as a Python int if it is an integer (numpy ints too, not bools)."""
    if isinstance(value, bool):
        raise TypeError
    return operator.index(value)  # type: ignore[arg-type]


def _rows_tensor(indices: Sequence[int] | torch.Tensor) -> torch.Tensor:
    """Convert ``indices`` to a 1-D ``int64`` CPU tensor (a device sync for CUDA input)."""
    if isinstance(indices, torch.Tensor):
        if indices.dtype not in _INDEX_DTYPES:
            raise BitmaskError(
                f"Invalid indices dtype: expected an integer dtype, got {indices.dtype}"
            )
        if indices.dim() > 1:
            raise BitmaskError(
                f"Invalid indices shape: expected 1-D, got {tuple(indices.shape)}"
            )
        return indices.reshape(-1).to(device="cpu", dtype=torch.int64)
    values = list(indices)
    try:
        rows = [_as_row_index(value) for value in values]
    except TypeError:
        message = f"Invalid indices: expected a sequence of ints, got {values!r}"
        raise BitmaskError(message) from None
    return torch.tensor(rows, dtype=torch.int64)


def _check_rows(rows: torch.Tensor, logits_batch: int, bitmask_batch: int) -> None:
    """Raise unless every row exists in both the logits and the bitmask."""
    if rows.numel() == 0:
        return
    low, high = int(rows.min()), int(rows.max())
    if low < 0 or high >= logits_batch:
        bad = low if low < 0 else high
        raise BitmaskError(
            f"Invalid indices: expected values in [0, {logits_batch}), got {bad}"
        )
    if high >= bitmask_batch:
        raise BitmaskError(
            f"Invalid bitmask batch: expected at least {high + 1} rows "
            f"(max(indices) + 1), got {bitmask_batch}"
        )


def prepare_apply(
    logits: torch.Tensor,
    bitmask: torch.Tensor,
    indices: Sequence[int] | torch.Tensor | None = None,
) -> MaskPlan:
    """Check the arguments of :func:`apply_token_bitmask_` and bring them to 2-D.

    Costs a few attribute reads and, with ``indices``, one small CPU tensor.

    Raises
    ------
    BitmaskError
        Wrong dtype, number of dimensions, batch size, device, or out-of-range indices.
    """
    _check_logits(logits)
    _check_bitmask_dtype(bitmask)
    if bitmask.device != logits.device:
        raise BitmaskError(
            f"Invalid bitmask device: expected {logits.device} (the logits' device), "
            f"got {bitmask.device}"
        )
    logits2d = _as_2d("logits", logits)
    bitmask2d = _as_2d("bitmask", bitmask)
    if indices is None:
        if bitmask2d.shape[0] != logits2d.shape[0]:
            raise BitmaskError(
                f"Invalid bitmask batch: expected {logits2d.shape[0]} rows "
                f"(the logits' batch), got {bitmask2d.shape[0]}"
            )
        return MaskPlan(logits2d, bitmask2d, None)
    rows = _rows_tensor(indices)
    _check_rows(rows, logits2d.shape[0], bitmask2d.shape[0])
    return MaskPlan(logits2d, bitmask2d, rows)
