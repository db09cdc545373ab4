"""On-disk cache of compiled artifacts (numpy arrays), keyed by content hashes.

Keys hash everything that affects the result (the source text, the options, the
tokenizer's content hash where it matters, :data:`CACHE_FORMAT`, and the library's
own code: a fingerprint of its source files, so an edited checkout or an upgrade
that kept the version number never reads what older code compiled), entries are
written atomically (temporary file, then ``os.replace``) and a corrupt or
foreign file is treated as a miss, never as a result.

Location: ``$CONSTRAIN_CACHE_DIR``, else ``$XDG_CACHE_HOME/constrain``, else
``~/.cache/constrain``.  ``CONSTRAIN_CACHE_DIR=off`` disables the cache.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from functools import lru_cache
from pathlib import Path

import numpy as np

from .. import __version__

__all__ = ["CACHE_FORMAT", "DiskCache", "default_cache", "content_key"]

CACHE_FORMAT = 1


@lru_cache(maxsize=1)
def code_fingerprint() -> str:
    """A sha256 over the package's Python sources (names and contents), read once per process."""
    root = Path(__file__).resolve().parent.parent
    digest = hashlib.sha256()
    for path in sorted(root.rglob("*.py")):
        digest.update(str(path.relative_to(root)).encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()


def content_key(*parts: str | bytes) -> str:
    """A sha256 hex key over length-prefixed parts, the library version and code, and the cache format."""
    digest = hashlib.sha256()
    for part in (f"constrain-{__version__}-{code_fingerprint()}-fmt{CACHE_FORMAT}", *parts):
        data = part.encode() if isinstance(part, str) else part
        digest.update(len(data).to_bytes(8, "little"))
        digest.update(data)
    return digest.hexdigest()


class DiskCache:
    """A folder of ``.npz`` entries; ``DiskCache(None)`` is a cache that never hits."""

    def __init__(self, directory: str | os.PathLike | None) -> None:
        self.directory = Path(directory) if directory is not None else None

    @property
    def enabled(self) -> bool:
        """Whether entries are kept at all (a caller may skip building what it would store)."""
        return self.directory is not None

    def _path(self, namespace: str, key: str) -> Path:
        assert self.directory is not None
        return self.directory / namespace / f"{key}.npz"

    def load(self, namespace: str, key: str) -> dict[str, np.ndarray] | None:
        """The arrays stored under ``key``, or None on a miss or an unreadable file."""
        if self.directory is None:
            return None
        path = self._path(namespace, key)
        try:
            with np.load(path, allow_pickle=False) as data:
                arrays = {name: data[name] for name in data.files}
        except (OSError, ValueError, KeyError):
            return None
        return arrays

    def save(self, namespace: str, key: str, arrays: dict[str, np.ndarray]) -> None:
        """Store arrays atomically; failures (read-only disk, full disk) are ignored."""
        if self.directory is None:
            return
        path = self._path(namespace, key)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
            with os.fdopen(fd, "wb") as handle:
                np.savez(handle, **arrays)
            os.replace(tmp, path)
        except OSError:
            try:
                os.unlink(tmp)  # type: ignore[possibly-undefined]
            except (OSError, NameError):
                pass


def default_cache() -> DiskCache:
    """The cache at the configured location (see the module docstring)."""
    configured = os.environ.get("CONSTRAIN_CACHE_DIR")
    if configured is not None:
        if configured.lower() in ("", "0", "off", "none", "false"):
            return DiskCache(None)
        return DiskCache(configured)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return DiskCache(os.path.join(base, "constrain"))
