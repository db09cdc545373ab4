"""Tests for constrain.kernels: bitmask helpers and apply_token_bitmask_ on every backend.

Every kernel result is compared exactly (``torch.equal``: -inf positions and untouched
values) with a reference written here at the Python level: each bitmask row is read as
one little-endian big integer and its bits as a string, independent of the library's
unpacking code.
"""

from __future__ import annotations

import os
import struct
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from constrain.errors import BitmaskError
from constrain.kernels import (
    allocate_token_bitmask,
    apply_token_bitmask_,
    get_bitmask_shape,
    pack_bool_mask,
    reset_token_bitmask,
    select_backend,
    unpack_bitmask,
)

CPU_BACKENDS = ["torch", "numba", "auto"]
VOCAB_SIZES = [1, 31, 32, 33, 1000, 32000, 128256, 151936]
FLOAT_DTYPES = [torch.float16, torch.bfloat16, torch.float32, torch.float64]

HAS_CUDA = torch.cuda.is_available()


def _triton_importable() -> bool:
    try:
        import triton  # noqa: F401
    except ImportError:
        return False
    return True


HAS_TRITON = _triton_importable()
needs_cuda = pytest.mark.skipif(not HAS_CUDA, reason="no CUDA device on this machine")
needs_cuda_triton = pytest.mark.skipif(
    not (HAS_CUDA and HAS_TRITON), reason="needs a CUDA device and the triton package"
)


# ----------------------------------------------------------------------------- reference


def reference_allowed(words: list[int], width: int) -> np.ndarray:
    """Allowed flags for tokens ``0..width-1`` from one bitmask row, in plain Python."""
    raw = struct.pack(f"<{len(words)}i", *words)
    bits = format(int.from_bytes(raw, "little"), f"0{32 * len(words)}b")[::-1][:width]
    allowed = np.zeros(width, dtype=bool)
    allowed[: len(bits)] = np.frombuffer(bits.encode(), dtype=np.uint8) == ord("1")
    return allowed


def reference_apply(logits: torch.Tensor, bitmask: torch.Tensor, indices=None) -> torch.Tensor:
    """A masked copy of ``logits``: what apply_token_bitmask_ must produce."""
    expected = logits.detach().cpu().clone()
    rows2d = expected.view(1, -1) if expected.dim() == 1 else expected
    masks = bitmask.cpu().view(1, -1) if bitmask.dim() == 1 else bitmask.cpu()
    rows = range(rows2d.shape[0]) if indices is None else [int(i) for i in indices]
    for r in rows:
        allowed = reference_allowed(masks[r].tolist(), rows2d.shape[1])
        rows2d[r, torch.from_numpy(~allowed)] = float("-inf")
    return expected


def random_bitmask(batch: int, words: int, density: float, seed: int = 0) -> torch.Tensor:
    """An int32 bitmask with about ``density`` of its bits set, plus all-0/all-1 words."""
    gen = torch.Generator().manual_seed(seed)
    bits = torch.rand(batch, words, 32, generator=gen) < density
    weights = torch.tensor([1 << k for k in range(32)], dtype=torch.int64)
    unsigned = (bits.to(torch.int64) * weights).sum(-1)
    bitmask = torch.where(unsigned >= 2**31, unsigned - 2**32, unsigned).to(torch.int32)
    if words >= 3:
        bitmask[:, 0] = -1
        bitmask[:, 1] = 0
    return bitmask


def random_logits(batch: int, vocab: int, dtype=torch.float32, seed: int = 1) -> torch.Tensor:
    gen = torch.Generator().manual_seed(seed)
    return torch.randn(batch, vocab, generator=gen).to(dtype)


def check_apply(logits, bitmask, indices=None, backend="auto"):
    expected = reference_apply(logits, bitmask, indices)
    apply_token_bitmask_(logits, bitmask, indices, backend=backend)
    assert torch.equal(logits.cpu(), expected)


# ------------------------------------------------------------------ reference sanity


def test_reference_reads_little_endian_bits():
    assert reference_allowed([0b101], 4).tolist() == [True, False, True, False]
    assert reference_allowed([-1, 1], 34).tolist() == [True] * 33 + [False]
    assert reference_allowed([-1], 40).tolist() == [True] * 32 + [False] * 8
    assert reference_allowed([-(2**31)], 32).tolist() == [False] * 31 + [True]


def test_reference_detects_unmasked_logits():
    logits = random_logits(1, 64)
    bitmask = torch.tensor([[-1, 0b10]], dtype=torch.int32)
    assert not torch.equal(logits, reference_apply(logits, bitmask))


# ------------------------------------------------------------------------ shapes/helpers


def test_get_bitmask_shape():
    assert get_bitmask_shape(1, 1) == (1, 1)
    assert get_bitmask_shape(2, 32) == (2, 1)
    assert get_bitmask_shape(3, 33) == (3, 2)
    assert get_bitmask_shape(4, 128256) == (4, 4008)
    assert get_bitmask_shape(1, 151936) == (1, 4748)


@pytest.mark.parametrize("bad", [(-1, 10), (1, -5), (1.5, 10), (True, 10)])
def test_get_bitmask_shape_rejects_bad_counts(bad):
    with pytest.raises(BitmaskError, match="Invalid"):
        get_bitmask_shape(*bad)


def test_allocate_and_reset():
    bitmask = allocate_token_bitmask(3, 1000)
    assert bitmask.shape == (3, 32) and bitmask.dtype == torch.int32
    assert bitmask.device.type == "cpu"
    assert bool((bitmask == -1).all())
    bitmask[1, 5] = 0
    bitmask[2].zero_()
    reset_token_bitmask(bitmask)
    assert bool((bitmask == -1).all())
    assert unpack_bitmask(bitmask, 1000).all()


def test_reset_rejects_wrong_dtype():
    with pytest.raises(BitmaskError, match="Invalid bitmask dtype"):
        reset_token_bitmask(torch.zeros(2, 3))


@pytest.mark.parametrize("vocab", [1, 31, 32, 33, 1000, 128256])
def test_pack_matches_reference_and_roundtrips(vocab):
    gen = torch.Generator().manual_seed(vocab)
    mask = torch.rand(2, vocab, generator=gen) < 0.5
    packed = pack_bool_mask(mask)
    assert packed.dtype == torch.int32 and packed.shape == get_bitmask_shape(2, vocab)
    for row in range(2):
        assert np.array_equal(reference_allowed(packed[row].tolist(), vocab), mask[row].numpy())
    assert torch.equal(unpack_bitmask(packed, vocab), mask)


def test_pack_sets_high_bit_and_clears_padding():
    mask = torch.ones(33, dtype=torch.bool)
    assert pack_bool_mask(mask).tolist() == [-1, 1]
    only_last = torch.zeros(32, dtype=torch.bool)
    only_last[31] = True
    assert pack_bool_mask(only_last).tolist() == [-(2**31)]


@pytest.mark.parametrize("count", [1, 31, 32, 33, 95])
def test_disallowed_tokens_flags_exactly_the_cleared_bits(count):
    """The accelerator form of the mask agrees with the plain-Python reference per row."""
    from constrain.kernels.bitmask import disallowed_tokens

    bitmask = random_bitmask(4, 3, 0.5, seed=count)
    flags = disallowed_tokens(bitmask, count)
    assert flags.shape == (4, count) and flags.dtype == torch.bool
    for row in range(4):
        expected = ~reference_allowed(bitmask[row].tolist(), count)
        assert flags[row].tolist() == expected.tolist()


def test_unpack_beyond_coverage_is_disallowed():
    bitmask = torch.full((2,), -1, dtype=torch.int32)
    unpacked = unpack_bitmask(bitmask, 70)
    assert unpacked.tolist() == [True] * 64 + [False] * 6
    assert unpack_bitmask(bitmask, 10).tolist() == [True] * 10


def test_pack_rejects_non_bool():
    with pytest.raises(BitmaskError, match="Invalid mask dtype"):
        pack_bool_mask(torch.ones(3, dtype=torch.int32))


# ----------------------------------------------------------------- apply: correctness


@pytest.mark.parametrize("backend", CPU_BACKENDS)
@pytest.mark.parametrize("vocab", VOCAB_SIZES)
def test_apply_matches_reference(vocab, backend):
    words = get_bitmask_shape(1, vocab)[1]
    for density in (0.5, 0.01):
        logits = random_logits(3, vocab)
        check_apply(logits, random_bitmask(3, words, density, seed=vocab), backend=backend)


@pytest.mark.parametrize("backend", CPU_BACKENDS)
@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("vocab", [33, 1000])
def test_apply_dtypes(dtype, vocab, backend):
    logits = random_logits(2, vocab, dtype)
    check_apply(logits, random_bitmask(2, get_bitmask_shape(1, vocab)[1], 0.5), backend=backend)


@pytest.mark.parametrize("backend", ["numba"])
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_numba_accepts_16_bit_floats_when_asked(dtype, backend):
    logits = random_logits(2, 1000, dtype)
    check_apply(logits, random_bitmask(2, 32, 0.5), backend=backend)


@pytest.mark.parametrize("backend", CPU_BACKENDS)
@pytest.mark.parametrize("vocab", [1, 1000, 32000])
def test_logits_wider_than_bitmask_mask_padding_ids(vocab, backend):
    words = get_bitmask_shape(1, vocab)[1]
    width = words * 32 + 45
    logits = random_logits(2, width)
    bitmask = torch.full((2, words), -1, dtype=torch.int32)
    check_apply(logits, bitmask, backend=backend)
    assert torch.isinf(logits[:, words * 32 :]).all()
    assert torch.isfinite(logits[:, : words * 32]).all()


@pytest.mark.parametrize("backend", CPU_BACKENDS)
def test_bits_beyond_logits_width_are_ignored(backend):
    bitmask = random_bitmask(2, 40, 0.5)  # covers 1280 tokens
    logits = random_logits(2, 1000)
    check_apply(logits, bitmask, backend=backend)
    assert logits.shape == (2, 1000)


@pytest.mark.parametrize("backend", CPU_BACKENDS)
@pytest.mark.parametrize("vocab", [33, 1000, 32000])
def test_strided_slice_of_wider_tensor(vocab, backend):
    big = random_logits(3, vocab + 17)
    untouched = big[:, vocab:].clone()
    logits = big[:, :vocab]
    assert not logits.is_contiguous()
    check_apply(logits, random_bitmask(3, get_bitmask_shape(1, vocab)[1], 0.5), backend=backend)
    assert torch.equal(big[:, vocab:], untouched)


@pytest.mark.parametrize("backend", CPU_BACKENDS)
@pytest.mark.parametrize("vocab", [33, 1000, 32000])
def test_transposed_logits(vocab, backend):
    logits = random_logits(vocab, 4).t()
    assert logits.shape == (4, vocab) and logits.stride() == (1, 4)
    check_apply(logits, random_bitmask(4, get_bitmask_shape(1, vocab)[1], 0.5), backend=backend)


@pytest.mark.parametrize("backend", CPU_BACKENDS)
def test_column_stride_two_leaves_gaps_untouched(backend):
    big = random_logits(2, 2000)
    gaps = big[:, 1::2].clone()
    logits = big[:, ::2]
    check_apply(logits, random_bitmask(2, 32, 0.5), backend=backend)
    assert torch.equal(big[:, 1::2], gaps)


@pytest.mark.parametrize("backend", CPU_BACKENDS)
@pytest.mark.parametrize("bitmask_2d", [False, True])
def test_one_dimensional_logits(bitmask_2d, backend):
    logits = random_logits(1, 1000)[0]
    bitmask = random_bitmask(1, 32, 0.5)
    check_apply(logits, bitmask if bitmask_2d else bitmask[0], backend=backend)
    assert logits.dim() == 1


@pytest.mark.parametrize("backend", CPU_BACKENDS)
@pytest.mark.parametrize("as_tensor", [False, True])
def test_indices_mask_only_listed_rows(as_tensor, backend):
    logits = random_logits(5, 1000)
    bitmask = random_bitmask(4, 32, 0.5)  # fewer rows than logits: allowed with indices
    indices = [3, np.int64(0), 3]
    before = logits.clone()
    check_apply(logits, bitmask, torch.tensor(indices) if as_tensor else indices, backend=backend)
    for row in (1, 2, 4):
        assert torch.equal(logits[row], before[row])


@pytest.mark.parametrize("backend", CPU_BACKENDS)
def test_empty_indices_change_nothing(backend):
    logits = random_logits(2, 100)
    before = logits.clone()
    apply_token_bitmask_(logits, random_bitmask(2, 4, 0.5), [], backend=backend)
    assert torch.equal(logits, before)


@pytest.mark.parametrize("backend", CPU_BACKENDS)
def test_batch_64(backend):
    check_apply(random_logits(64, 1000), random_bitmask(64, 32, 0.3), backend=backend)


def test_requires_grad_goes_through_autograd():
    leaf = torch.randn(2, 100, requires_grad=True)
    logits = leaf * 1.0
    bitmask = random_bitmask(2, 4, 0.5)
    assert select_backend(logits) == "torch"
    expected = reference_apply(logits, bitmask)
    apply_token_bitmask_(logits, bitmask)
    assert torch.equal(logits.detach(), expected)
    logits.exp().sum().backward()
    assert torch.equal(leaf.grad == 0, torch.isinf(expected))


def test_select_backend_on_cpu():
    assert select_backend(torch.zeros(1, 4)) == "numba"
    assert select_backend(torch.zeros(1, 4, dtype=torch.float64)) == "numba"
    assert select_backend(torch.zeros(1, 4, dtype=torch.float16)) == "torch"
    assert select_backend(torch.zeros(1, 4, dtype=torch.bfloat16)) == "torch"


def test_import_compiles_nothing():
    code = (
        "import sys, constrain.kernels\n"
        "loaded = [m for m in ('constrain.kernels.numba', 'constrain.kernels.triton', 'triton')"
        " if m in sys.modules]\n"
        "assert not loaded, loaded\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


# ------------------------------------------------------------------------------ errors


def _apply_error(logits, bitmask, indices=None, backend="auto", match="Invalid"):
    with pytest.raises(BitmaskError, match=match):
        apply_token_bitmask_(logits, bitmask, indices, backend=backend)


@pytest.mark.parametrize("backend", CPU_BACKENDS)
def test_errors(backend):
    logits, bitmask = random_logits(2, 64), random_bitmask(2, 2, 0.5)
    _apply_error(logits.to(torch.int64), bitmask, backend=backend, match="Invalid logits dtype")
    _apply_error(logits, bitmask.float(), backend=backend, match="Invalid bitmask dtype")
    _apply_error(logits, bitmask.to(torch.int64), backend=backend, match="Invalid bitmask dtype")
    _apply_error(logits.view(2, 8, 8), bitmask, backend=backend, match="Invalid logits shape")
    _apply_error(logits, bitmask.view(2, 2, 1), backend=backend, match="Invalid bitmask shape")
    _apply_error(logits, bitmask[:1], backend=backend, match="Invalid bitmask batch")
    _apply_error(logits[:1], bitmask, backend=backend, match="Invalid bitmask batch")
    _apply_error(logits, bitmask, [2], backend=backend, match="Invalid indices")
    _apply_error(logits, bitmask, [-1], backend=backend, match="Invalid indices")
    _apply_error(logits, bitmask, [0.5], backend=backend, match="Invalid indices")
    _apply_error(logits, bitmask[:1], [1], backend=backend, match="Invalid bitmask batch")
    _apply_error(logits[:1].expand(2, 64), bitmask, backend=backend, match="Invalid logits str")
    _apply_error(logits, bitmask, torch.tensor([0.0]), backend=backend, match="Invalid indices")


def test_error_message_format():
    with pytest.raises(BitmaskError) as info:
        apply_token_bitmask_(torch.zeros(2, 64), torch.zeros(3, 2, dtype=torch.int32))
    assert str(info.value) == (
        "Invalid bitmask batch: expected 2 rows (the logits' batch), got 3"
    )
    assert isinstance(info.value, ValueError)


def test_unknown_backend():
    _apply_error(torch.zeros(1, 4), torch.zeros(1, 1, dtype=torch.int32), backend="cpu",
                 match="Invalid backend")


def test_device_mismatch():
    logits = torch.zeros(1, 32, device="meta")
    _apply_error(logits, torch.zeros(1, 1, dtype=torch.int32), match="Invalid bitmask device")


def test_numba_rejects_non_cpu_tensors():
    logits = torch.zeros(1, 32, device="meta")
    bitmask = torch.zeros(1, 1, dtype=torch.int32, device="meta")
    _apply_error(logits, bitmask, backend="numba", match="Invalid logits device")


def test_triton_missing_says_what_to_install(monkeypatch):
    import constrain.kernels.triton as triton_backend

    monkeypatch.setattr(triton_backend, "is_available", lambda: False)
    with pytest.raises(ImportError, match="pip install triton"):
        apply_token_bitmask_(torch.zeros(1, 32), torch.zeros(1, 1, dtype=torch.int32),
                             backend="triton")


@pytest.mark.skipif(not HAS_TRITON, reason="triton is not installed")
def test_triton_rejects_cpu_tensors():
    _apply_error(torch.zeros(1, 32), torch.zeros(1, 1, dtype=torch.int32), backend="triton",
                 match="Invalid logits device")


_INTERPRETER_SCRIPT = """
import sys, torch
sys.path.insert(0, {tests_dir!r})
from test_kernels import random_logits, random_bitmask, reference_apply
from constrain.kernels.bitmask import prepare_apply
from constrain.kernels import triton as backend
cases = [
    (random_logits(3, vocab, dtype), random_bitmask(3, -(-vocab // 32), 0.5), None)
    for dtype in (torch.float32, torch.float16, torch.bfloat16, torch.float64)
    for vocab in (1, 33, 2100)
] + [
    (random_logits(3, 1100), random_bitmask(3, 32, 0.5), None),
    (random_logits(3, 1000), random_bitmask(3, 40, 0.5), None),
    (random_logits(3, 1017)[:, :1000], random_bitmask(3, 32, 0.5), None),
    (random_logits(1000, 3).t(), random_bitmask(3, 32, 0.5), None),
    (random_logits(5, 1000), random_bitmask(4, 32, 0.5), [3, 0]),
    (random_logits(1, 1000)[0], random_bitmask(1, 32, 0.5)[0], None),
]
for logits, bitmask, indices in cases:
    expected = reference_apply(logits, bitmask, indices)
    backend.apply_rows(*prepare_apply(logits, bitmask, indices))
    assert torch.equal(logits, expected), (tuple(logits.shape), logits.dtype, indices)
"""


@pytest.mark.skipif(not HAS_TRITON, reason="triton is not installed")
def test_triton_kernel_in_interpreter():
    """Run the triton kernel on CPU tensors in triton's interpreter (no GPU needed).

    A subprocess, because ``TRITON_INTERPRET`` is read when the kernel is built, and the
    built kernel is cached for the process.
    """
    script = _INTERPRETER_SCRIPT.format(tests_dir=str(Path(__file__).parent))
    env = dict(os.environ, TRITON_INTERPRET="1")
    result = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True,
                            text=True)
    assert result.returncode == 0, result.stderr[-3000:]


# -------------------------------------------------------------------------------- CUDA

CUDA_BACKENDS = [
    pytest.param("torch", marks=needs_cuda),
    pytest.param("triton", marks=needs_cuda_triton),
    pytest.param("auto", marks=needs_cuda),
]


@pytest.mark.parametrize("backend", CUDA_BACKENDS)
@pytest.mark.parametrize("vocab", [1, 33, 1000, 128256, 151936])
@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_cuda_matches_reference(vocab, dtype, backend):
    logits = random_logits(3, vocab, dtype).cuda()
    bitmask = random_bitmask(3, get_bitmask_shape(1, vocab)[1], 0.5).cuda()
    check_apply(logits, bitmask, backend=backend)


@pytest.mark.parametrize("backend", CUDA_BACKENDS)
def test_cuda_widths_strides_and_indices(backend):
    wide = random_logits(3, 1100).cuda()  # bitmask covers 1024 tokens
    check_apply(wide, random_bitmask(3, 32, 0.5).cuda(), backend=backend)
    narrow = random_logits(3, 1000).cuda()  # bitmask covers 1280 tokens
    check_apply(narrow, random_bitmask(3, 40, 0.5).cuda(), backend=backend)
    big = random_logits(3, 1017).cuda()
    check_apply(big[:, :1000], random_bitmask(3, 32, 0.5).cuda(), backend=backend)
    check_apply(random_logits(1000, 3).cuda().t(), random_bitmask(3, 32, 0.5).cuda(),
                backend=backend)
    logits = random_logits(5, 1000).cuda()
    check_apply(logits, random_bitmask(4, 32, 0.5).cuda(), [3, 0], backend=backend)
    check_apply(random_logits(1, 1000)[0].cuda(), random_bitmask(1, 32, 0.5)[0].cuda(),
                backend=backend)
