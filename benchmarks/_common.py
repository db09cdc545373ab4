"""Helpers shared by the benchmark scripts in this folder.

Nothing here is part of the ``constrain`` package: the scripts import it as a sibling
module (``from _common import ...``), which works when they are run as
``python benchmarks/<script>.py`` from anywhere.

* data and tokenizer location (``$CONSTRAIN_DATA_DIR``, default ``<repo>/../shared/data``);
* optional peer imports that never raise, and package versions;
* ``perf_counter_ns`` timing, percentiles and medians;
* markdown tables and number formatting;
* raw token bytes of a Hugging Face tokenizer, decoded without ``constrain`` (so a
  peer fed with them does not inherit a bug of ours);
* progress lines on stderr.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import json
import math
import os
import platform
import sys
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar

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
]

T = TypeVar("T")

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


# -- optional peers ----------------------------------------------------------------------
def optional_import(module: str) -> tuple[Any | None, str | None]:
    """``(module, None)``, or ``(None, reason)`` when it cannot be imported."""
    try:
        return importlib.import_module(module), None
    except ImportError as exc:  # includes ModuleNotFoundError
        missing = getattr(exc, "name", None)
        if missing and module.split(".")[0] == missing.split(".")[0]:
            return None, "not installed"
        return None, f"import failed: {exc}"
    except Exception as exc:  # a broken install must not stop the benchmark
        return None, f"import failed: {type(exc).__name__}: {exc}"


def package_version(distribution: str) -> str | None:
    """The installed version of a distribution, or ``None``."""
    try:
        return importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        return None


def environment(distributions: Iterable[str] = ()) -> dict[str, Any]:
    """Machine and package versions recorded with results."""
    info: dict[str, Any] = {
        "python": platform.python_version(),
        "platform": platform.platform(),
        "machine": platform.machine(),
        "cpu_count": os.cpu_count(),
    }
    try:
        info["usable_cpus"] = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        pass
    info["packages"] = {name: package_version(name) for name in distributions}
    return info


# -- timing and statistics ---------------------------------------------------------------
def timed(fn: Callable[[], T]) -> tuple[T, float]:
    """Call ``fn()``; return its result and the elapsed wall time in seconds."""
    start = time.perf_counter_ns()
    result = fn()
    return result, (time.perf_counter_ns() - start) / 1e9


def percentile(values: Sequence[float], q: float) -> float:
    """The ``q``-th percentile (0-100), linear interpolation between order statistics.

    Same definition as ``numpy.percentile``'s default; NaN for an empty sequence.
    """
    if not values:
        return math.nan
    if not 0 <= q <= 100:
        raise ValueError(f"percentile q must be in [0, 100], got {q}")
    ordered = sorted(values)
    position = (len(ordered) - 1) * q / 100
    low = math.floor(position)
    high = min(low + 1, len(ordered) - 1)
    fraction = position - low
    return ordered[low] + (ordered[high] - ordered[low]) * fraction


def median(values: Sequence[float]) -> float:
    """The 50th percentile (NaN when empty)."""
    return percentile(values, 50)


# -- output --------------------------------------------------------------------------------
def fmt(value: Any, digits: int = 1) -> str:
    """A table cell: numbers with ``digits`` decimals, ``None``/NaN as ``-``, text as is."""
    if value is None:
        return "-"
    if isinstance(value, bool):
        return str(value)
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        if math.isnan(value):
            return "-"
        if value != 0 and abs(value) < 10 ** (-digits):
            return f"{value:.2g}"
        return f"{value:,.{digits}f}"
    return str(value)


def ratio(ours: float | None, theirs: float | None) -> str:
    """``ours / theirs`` as ``1.23x``, or ``-`` when either side is missing."""
    if ours is None or theirs is None or math.isnan(ours) or math.isnan(theirs) or theirs <= 0:
        return "-"
    return f"{ours / theirs:.2f}x"


def markdown_table(headers: Sequence[str], rows: Iterable[Sequence[Any]], align: str | None = None) -> str:
    """Render a markdown table; ``align`` has one letter per column (``l`` or ``r``).

    By default the first column is left-aligned and the others right-aligned.  Cells
    are passed through :func:`fmt` unless they already are strings; ``|`` in a cell
    is escaped.
    """
    if align is None:
        align = "l" + "r" * (len(headers) - 1)
    if len(align) != len(headers):
        raise ValueError("align needs one letter per column")

    def cell(value: Any) -> str:
        text = value if isinstance(value, str) else fmt(value)
        return text.replace("|", "\\|").replace("\n", " ")

    lines = [
        "| " + " | ".join(cell(h) for h in headers) + " |",
        "|" + "|".join("---:" if a == "r" else ":---" for a in align) + "|",
    ]
    for row in rows:
        if len(row) != len(headers):
            raise ValueError(f"row has {len(row)} cells, expected {len(headers)}")
        lines.append("| " + " | ".join(cell(v) for v in row) + " |")
    return "\n".join(lines)


def progress(message: str) -> None:
    """One progress line on stderr (stdout is kept for the results)."""
    print(message, file=sys.stderr, flush=True)


def write_json(path: str | os.PathLike[str], payload: Mapping[str, Any]) -> None:
    """Write ``payload`` as indented JSON (NaN becomes null)."""

    def clean(value: Any) -> Any:
        if isinstance(value, float) and math.isnan(value):
            return None
        if isinstance(value, Mapping):
            return {str(k): clean(v) for k, v in value.items()}
        if isinstance(value, (list, tuple)):
            return [clean(v) for v in value]
        return value

    with open(path, "w", encoding="utf-8") as handle:
        json.dump(clean(payload), handle, indent=1, ensure_ascii=False)
        handle.write("\n")


# -- tokenizer bytes (independent of constrain) --------------------------------------------
def _byte_level_alphabet() -> dict[str, int]:
    """GPT-2 byte-level BPE: printable stand-in character -> the byte it encodes.

    Printable Latin-1 bytes stand for themselves; the other bytes are given the code
    points 256, 257, ... in byte order.
    """
    keep = set(range(ord("!"), ord("~") + 1)) | set(range(0xA1, 0xAD)) | set(range(0xAE, 0x100))
    table: dict[str, int] = {}
    extra = 0
    for byte in range(256):
        if byte in keep:
            table[chr(byte)] = byte
        else:
            table[chr(256 + extra)] = byte
            extra += 1
    return table


def _decoder_steps(decoder: Mapping[str, Any] | None) -> list[Mapping[str, Any]]:
    if not decoder:
        return []
    if decoder.get("type") == "Sequence":
        steps: list[Mapping[str, Any]] = []
        for inner in decoder.get("decoders", []):
            steps.extend(_decoder_steps(inner))
        return steps
    return [decoder]


def hf_token_bytes(tokenizer: Any) -> tuple[dict[int, bytes], set[int]]:
    """The raw bytes of every ordinary token of a fast Hugging Face tokenizer.

    Returns ``(token_bytes, added_ids)``: ``token_bytes`` maps each id of the model's
    vocabulary (added tokens excluded) to the bytes it produces in a detokenized
    string; ``added_ids`` holds the ids of all added tokens (special or not).

    Handles byte-level BPE (GPT-2, Llama-3, Qwen: ``ByteLevel`` decoder) and
    SentencePiece-style vocabularies (``▁`` for space, ``<0xNN>`` byte-fallback
    pieces).  The decoding here is written independently of ``constrain.vocab`` on
    purpose, so that a peer engine given these bytes is a genuine cross-check.
    """
    backend = getattr(tokenizer, "backend_tokenizer", None)
    if backend is None:
        raise TypeError("hf_token_bytes needs a fast (tokenizers-backed) tokenizer")
    config = json.loads(backend.to_str())
    kinds = {step.get("type") for step in _decoder_steps(config.get("decoder"))}
    added_ids = {int(entry["id"]) for entry in config.get("added_tokens", [])}
    vocab: Mapping[str, int] = config["model"]["vocab"]
    if isinstance(vocab, list):  # Unigram: [[piece, score], ...]
        vocab = {piece: index for index, (piece, _score) in enumerate(vocab)}

    result: dict[int, bytes] = {}
    if "ByteLevel" in kinds:
        alphabet = _byte_level_alphabet()
        for text, token_id in vocab.items():
            if token_id in added_ids:
                continue
            try:
                result[token_id] = bytes(alphabet[ch] for ch in text)
            except KeyError:  # not a byte-level string: keep its UTF-8
                result[token_id] = text.encode("utf-8")
    else:
        byte_fallback = "ByteFallback" in kinds or bool(config["model"].get("byte_fallback"))
        for text, token_id in vocab.items():
            if token_id in added_ids:
                continue
            if (
                byte_fallback
                and len(text) == 6
                and text.startswith("<0x")
                and text.endswith(">")
            ):
                try:
                    result[token_id] = bytes([int(text[3:5], 16)])
                    continue
                except ValueError:
                    pass
            result[token_id] = text.replace("\u2581", " ").encode("utf-8")
    return result, added_ids
