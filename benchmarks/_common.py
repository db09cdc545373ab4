"""Helpers shared by the benchmark scripts in this folder.

Nothing here is part of the ``constrain`` package: the scripts import it as a sibling
module (``from _common import ...``), which works when they are run as
``python benchmarks/<script>.py`` from anywhere.

* data and tokenizer location (``$CONSTRAIN_DATA_DIR``, default ``<repo>/../shared/data``);
* package versions and the machine, recorded with results;
* progress lines on stderr.

The engine adapters, optional peer imports, timing, percentiles, markdown tables and
the tokenizer-bytes decoder live in :mod:`constrain.bench` (``constrain bench`` uses
them too) and are re-exported here so the scripts import one place.
"""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from constrain.bench.engines import optional_import, timed
from constrain.bench.report import (
    environment,
    fmt,
    markdown_table,
    median,
    package_version,
    percentile,
    ratio,
    write_json,
)
from constrain.bench.tokens import hf_token_bytes

__all__ = [
    "REPO_ROOT",
    "data_dir",
    "tokenizer_dir",
    "optional_import",
    "package_version",
    "environment",
    "timed",
    "percentile",
    "median",
    "markdown_table",
    "fmt",
    "ratio",
    "progress",
    "hf_token_bytes",
    "write_json",
    "within_seconds",
]

#: The repository root (this file lives in ``<repo>/benchmarks``).
REPO_ROOT = Path(__file__).resolve().parent.parent


# -- locations -------------------------------------------------------------------------
def data_dir() -> Path:
    """``$CONSTRAIN_DATA_DIR``, or ``<repo>/../shared/data`` when it is unset."""
    env = os.environ.get("CONSTRAIN_DATA_DIR")
    return Path(env).expanduser() if env else REPO_ROOT.parent / "shared" / "data"


def tokenizer_dir(path_or_name: str | None, default_name: str = "llama-3") -> Path:
    """Resolve a tokenizer folder; exit with a clear message when it is absent.

    ``path_or_name`` may be a folder path, or the name of a folder under
    ``<data dir>/tokenizers``; ``None`` means ``default_name`` there.
    """
    if path_or_name is None:
        path = data_dir() / "tokenizers" / default_name
    else:
        path = Path(path_or_name).expanduser()
        if not path.exists() and not path.is_absolute():
            candidate = data_dir() / "tokenizers" / path_or_name
            if candidate.exists():
                path = candidate
    if not path.is_dir():
        sys.exit(
            f"error: tokenizer folder not found: {path}\n"
            f"Pass --tokenizer PATH, or set CONSTRAIN_DATA_DIR to the folder holding "
            f"tokenizers/{default_name} (default: <repo>/../shared/data)."
        )
    return path


# -- output --------------------------------------------------------------------------------
def progress(message: str) -> None:
    """One progress line on stderr (stdout is kept for the results)."""
    print(message, file=sys.stderr, flush=True)




# -- time limits -----------------------------------------------------------------------
T = TypeVar("T")


class _Alarm(Exception):
    """SIGALRM as an exception.  ``fired`` tells it apart where numba wraps it: a signal
    that lands inside compiled code comes out as a SystemError."""

    fired = False

    @classmethod
    def handler(cls, *_) -> None:
        cls.fired = True
        raise cls()


def within_seconds(seconds: int, build: Callable[[], T], refused: tuple[type[BaseException], ...] = ()) -> T | None:
    """``build()``, or None when it raises one of ``refused`` or runs past ``seconds``
    (the fuzzers' compiles: a refusal and a timeout are both a skipped case)."""
    _Alarm.fired = False
    previous = signal.signal(signal.SIGALRM, _Alarm.handler)
    signal.alarm(seconds)
    try:
        try:
            return build()
        finally:  # a signal that lands in numba code is handled on the way out: maybe here
            signal.alarm(0)
            signal.signal(signal.SIGALRM, previous)
    except refused + (_Alarm,):
        return None
    except SystemError:
        if _Alarm.fired:
            return None
        raise
