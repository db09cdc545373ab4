"""Shared pytest helpers.

Real tokenizers are large and live outside the repository, so their location is
configurable (``CONSTRAIN_DATA_DIR``) and every test that needs them skips, with the
reason spelled out, where they are absent instead of failing.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

__all__ = ["DATA_DIR_ENV", "shared_data_dir", "shared_data_or_skip", "load_tokenizer", "infos"]

#: Environment variable that overrides the shared data directory.
DATA_DIR_ENV = "CONSTRAIN_DATA_DIR"

_DEFAULT_DATA_DIR = Path(__file__).resolve().parents[1].parent / "shared" / "data"


def shared_data_dir() -> Path | None:
    """Return the shared data directory, or ``None`` where it does not exist.

    ``$CONSTRAIN_DATA_DIR`` wins over the default ``<repo>/../shared/data`` so that CI
    and other checkouts can point at their own copy.
    """
    configured = os.environ.get(DATA_DIR_ENV)
    path = Path(configured) if configured else _DEFAULT_DATA_DIR
    return path if path.is_dir() else None


def shared_data_or_skip(*needed: str) -> Path:
    """Return the shared data directory, or skip the calling test where it, or one of the
    folders or files ``needed`` inside it, is absent.

    A copy of the data may hold only some of its parts (the tokenizers alone, say, on a
    machine lent for the GPU tests), so a test names the parts it reads.
    """
    data_dir = shared_data_dir()
    if data_dir is None:
        configured = os.environ.get(DATA_DIR_ENV)
        where = configured if configured else str(_DEFAULT_DATA_DIR)
        pytest.skip(f"shared data directory not found at {where} (set ${DATA_DIR_ENV})")
    for part in needed:
        if not (data_dir / part).exists():
            pytest.skip(f"{part} not found in the shared data directory {data_dir} (set ${DATA_DIR_ENV})")
    return data_dir


@functools.lru_cache(maxsize=None)
def _load_tokenizer_from(path: str) -> Any:
    """Load a tokenizer once per session: loading Llama-3 or Qwen takes about a second."""
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(path)


def _tokenizer_path_or_skip(name: str) -> Path:
    """Return ``<data>/tokenizers/<name>``, or skip the calling test with the reason."""
    path = shared_data_or_skip() / "tokenizers" / name
    if not (path / "tokenizer.json").is_file():
        pytest.skip(f"tokenizer {name!r} not found at {path}")
    return path


@pytest.fixture(scope="session")
def load_tokenizer() -> Callable[[str], Any]:
    """Return ``load(name)``: the cached Hugging Face tokenizer ``name``, or skip.

    The tokenizer objects are shared by every test in the session; do not mutate them
    (``add_tokens`` and the like) — load a private copy for that.
    """

    def load(name: str) -> Any:
        return _load_tokenizer_from(str(_tokenizer_path_or_skip(name)))

    return load


@pytest.fixture(scope="session")
def infos(load_tokenizer: Callable[[str], Any]) -> Callable[[str], Any]:
    """Return ``get(name)``: the :class:`constrain.TokenizerInfo` of tokenizer ``name``, cached."""
    from constrain import TokenizerInfo

    cache: dict[str, Any] = {}

    def get(name: str) -> Any:
        if name not in cache:
            cache[name] = TokenizerInfo.from_huggingface(load_tokenizer(name))
        return cache[name]

    return get


def finished_generations(generate: Callable[[], str], seeds: range = range(6)) -> list[str]:
    """Outputs of ``generate()`` under each torch seed that finished within ``max_new_tokens``.

    A random tiny model may still be mid-sentence when the token budget runs out; that
    error is expected and skipped, any other error fails the test.
    """
    import torch

    from constrain import ConstrainError

    finished = []
    for seed in seeds:
        torch.manual_seed(seed)
        try:
            finished.append(generate())
        except ConstrainError as err:
            assert "before the output was complete" in str(err)
    return finished
