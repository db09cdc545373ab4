"""Token-bitmask kernels: allocate bitmasks and apply them to logits in place.

The API follows xgrammar's names and semantics, so bitmasks are interchangeable:

* :func:`get_bitmask_shape`, :func:`allocate_token_bitmask`, :func:`reset_token_bitmask`
* :func:`pack_bool_mask` / :func:`unpack_bitmask` between bool masks and bitmasks
* :func:`apply_token_bitmask_`, which sets the logits of disallowed tokens to ``-inf``

:func:`apply_token_bitmask_` checks its arguments once and hands them to one of three
backends: ``numba`` (CPU, a vectorized integer kernel), ``triton`` (CUDA) or ``torch``
(vectorized torch ops, any device and dtype).  Backend modules are imported on first use,
so importing this package compiles nothing and does not import numba or triton.
"""

from __future__ import annotations

import importlib
from collections.abc import Sequence
from types import ModuleType
from typing import Literal

from torch import Tensor, float32, float64

from constrain.errors import BitmaskError
from constrain.kernels.bitmask import (
    allocate_token_bitmask,
    get_bitmask_shape,
    pack_bool_mask,
    prepare_apply,
    reset_token_bitmask,
    unpack_bitmask,
)

__all__ = [
    "Backend",
    "BACKENDS",
    "get_bitmask_shape",
    "allocate_token_bitmask",
    "reset_token_bitmask",
    "pack_bool_mask",
    "unpack_bitmask",
    "select_backend",
    "apply_token_bitmask_",
]

Backend = Literal["auto", "torch", "numba", "triton"]

BACKENDS: tuple[str, ...] = ("auto", "torch", "numba", "triton")
"""Accepted values of the ``backend`` argument."""

_NUMBA_DTYPES = (float32, float64)

# No module-level ``import torch`` here: importing the backend ``constrain.kernels.torch``
# binds the name ``torch`` in this package's namespace to that submodule.


_LOADED: dict[str, ModuleType] = {}


def _backend_module(name: str) -> ModuleType:
    """Return the module implementing backend ``name``, importing it on first use.

    Later calls are one dict lookup (``importlib.import_module`` costs ~1 µs a call).
    """
    module = _LOADED.get(name)
    if module is None:
        if name not in BACKENDS[1:]:
            raise BitmaskError(f"Invalid backend: expected one of {BACKENDS}, got {name!r}")
        module = _LOADED[name] = importlib.import_module(f"constrain.kernels.{name}")
    return module


def select_backend(logits: Tensor) -> str:
    """Name the backend ``backend="auto"`` uses for ``logits``.

    CUDA tensors go to triton when it is importable, else to torch.  CPU float32 and
    float64 tensors go to numba, unless they require grad (numba writes behind
    autograd's back; torch's in-place ops are tracked).  Everything else goes to torch.
    """
    if logits.device.type == "cuda":
        return "triton" if _backend_module("triton").is_available() else "torch"
    if logits.device.type == "cpu" and logits.dtype in _NUMBA_DTYPES and not logits.requires_grad:
        return "numba"
    return "torch"


def apply_token_bitmask_(
    logits: Tensor,
    bitmask: Tensor,
    indices: Sequence[int] | Tensor | None = None,
    *,
    backend: Backend = "auto",
) -> None:
    """Set the logits of disallowed tokens to ``-inf``, in place.

    Parameters
    ----------
    logits : torch.Tensor
        ``[V']`` or ``[B, V']`` of float16, bfloat16, float32 or float64, on any device,
        possibly strided (a slice or a transposed view).  Tokens at or past ``32 * W``
        (the bitmask's coverage) are set to ``-inf`` too, so padded vocabulary ids never
        get through; bitmask bits past ``V'`` are ignored.
    bitmask : torch.Tensor
        ``int32`` ``[W]`` or ``[B', W]`` on the logits' device; bit ``i % 32`` of word
        ``i // 32`` set means token ``i`` is allowed.
    indices : sequence of int or torch.Tensor, optional
        Rows to mask; row ``i`` of the logits is masked with row ``i`` of the bitmask,
        so ``B'`` must exceed ``max(indices)``.  Without it every row is masked and
        ``B'`` must equal ``B``.  A CUDA tensor costs a device sync (it is checked).
    backend : {"auto", "torch", "numba", "triton"}
        ``"auto"`` picks by device and dtype, see :func:`select_backend`.

    Raises
    ------
    BitmaskError
        Wrong dtype, number of dimensions, batch size or device; a backend that cannot
        run these tensors; an unknown backend name.
    ImportError
        ``backend="triton"`` without triton installed.

    Notes
    -----
    Cost on the CPU for one 128,256-token float32 row: about a row copy (~10-20 µs)
    plus a few µs of argument checks with numba; several times that with torch.
    """
    plan = prepare_apply(logits, bitmask, indices)
    name = select_backend(plan.logits) if backend == "auto" else backend
    module = _backend_module(name)
    module.check_supported(plan.logits)
    module.apply_rows(plan.logits, plan.bitmask, plan.rows)
