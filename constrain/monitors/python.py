"""Python monitors backed by jedi: attribute members (``obj.``) and importable names.

jedi sees the whole project: the generated file is analysed as if it lived at
``file_path`` inside ``project_dir``, so ``from shop.inventory import Warehouse`` in the
prompt resolves to the project's module and ``warehouse.find_product("x").`` completes
to the members of the class that method returns, defined in yet another module.

Each trigger costs one jedi completion (~30 ms warm; the first call of a process
loads jedi's typeshed stubs, ~1.5 s).  Answers are cached by the full text, so the
200 samples of one prompt pay for the prompt's trigger once.
"""

from __future__ import annotations

from abc import abstractmethod
from collections import OrderedDict
from pathlib import Path
from typing import Any

from ..errors import MonitorError
from .base import Monitor, Trigger
from .identifiers import is_identifier_char

__all__ = ["PythonMemberMonitor", "PythonImportMonitor"]

_CACHE_SIZE = 512
#: Bytes that may end the expression before an attribute dot: identifiers, calls,
#: subscripts, string literals (``"a".join``), and non-ASCII identifier bytes.
_BEFORE_DOT = frozenset(b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_)]\"'") | frozenset(range(0x80, 0x100))


def _import_jedi() -> Any:
    try:
        import jedi
    except ImportError as err:  # pragma: no cover - exercised only without the extra
        raise MonitorError("Python monitors need jedi: pip install 'constrain[monitors]'") from err
    return jedi


class _JediMonitor(Monitor):
    """Shared plumbing: the jedi project, the file path, the parse check and the answer cache."""

    def __init__(self, project_dir: str | Path, *, file_path: str | Path | None = None) -> None:
        jedi = _import_jedi()
        root = Path(project_dir)
        if not root.is_dir():
            raise MonitorError(f"Invalid project_dir: expected an existing directory, got {str(project_dir)!r}")
        self.project_dir = root.resolve()
        path = Path(file_path) if file_path is not None else Path("__generated__.py")
        self.file_path = path if path.is_absolute() else self.project_dir / path
        self._jedi = jedi
        self._project = jedi.Project(self.project_dir)
        self._cache: OrderedDict[str, Trigger | None] = OrderedDict()

    def trigger(self, text: str) -> Trigger | None:
        if text in self._cache:
            self._cache.move_to_end(text)
            return self._cache[text]
        found = self._analyse(text)
        self._cache[text] = found
        if len(self._cache) > _CACHE_SIZE:
            self._cache.popitem(last=False)
        return found

    def _last_leaf(self, text: str) -> Any | None:
        """The code leaf ending exactly at the end of ``text``; None inside comments or trailing space."""
        import parso  # a jedi dependency

        module = parso.parse(text)
        end = module.get_last_leaf()  # the end marker; its prefix holds trailing comments and space
        if end.prefix:
            return None
        leaf = end.get_previous_leaf()
        return leaf if leaf is not None and leaf.end_pos == end.start_pos else None

    def _complete(self, text: str) -> list[Any]:
        return self._jedi.Script(text, path=self.file_path, project=self._project).complete()

    def clear_cache(self) -> None:
        """Forget the cached answers (after the project's files changed)."""
        self._cache.clear()

    @abstractmethod
    def _analyse(self, text: str) -> Trigger | None:
        """The uncached answer of :meth:`trigger`."""


class PythonMemberMonitor(_JediMonitor):
    """Constrain the identifier after an attribute dot to the members jedi infers.

    Parameters
    ----------
    project_dir:
        Root of the user's project; its modules are importable from the generated file.
    file_path:
        Where the generated file would live (relative to ``project_dir`` or absolute);
        matters for relative imports.  Default ``__generated__.py`` at the root.
    include_dunder:
        Also allow ``__dunder__`` members (``obj.__class__``).  Default True.

    Examples
    --------
    >>> monitor = PythonMemberMonitor("path/to/project")                         # doctest: +SKIP
    >>> processor = MonitorLogitsProcessor([monitor], info)                      # doctest: +SKIP
    >>> model.generate(**inputs, logits_processor=LogitsProcessorList([processor]))  # doctest: +SKIP
    """

    boundary_bytes = b"."

    def __init__(self, project_dir: str | Path, *, file_path: str | Path | None = None,
                 include_dunder: bool = True) -> None:
        super().__init__(project_dir, file_path=file_path)
        self.include_dunder = include_dunder

    def might_trigger(self, tail: bytes) -> bool:
        return len(tail) >= 2 and tail[-1] == 0x2E and tail[-2] in _BEFORE_DOT

    def _analyse(self, text: str) -> Trigger | None:
        leaf = self._last_leaf(text)
        if leaf is None or leaf.type != "operator" or leaf.value != ".":
            return None  # a float literal ``1.``, a comment, the inside of a string
        names = {
            c.name for c in self._complete(text)
            if c.type != "keyword" and c.name.isidentifier()
            and (self.include_dunder or not (c.name.startswith("__") and c.name.endswith("__")))
        }
        return Trigger(frozenset(names), monitor=self.name) if names else None


class PythonImportMonitor(_JediMonitor):
    """Constrain the name after ``import`` / ``from module import`` to what exists.

    After ``import`` the allowed names are the modules jedi finds (the project's,
    the standard library's, installed packages'); after ``from module import`` the
    module's members and submodules.  The continuation is ``" " + name``, matching
    how BPE vocabularies spell it (`` os``).  Dotted paths (``import shop.``) are the
    member monitor's job.
    """

    def might_trigger(self, tail: bytes) -> bool:
        return tail.endswith(b"import") and (len(tail) == 6 or not is_identifier_char(chr(tail[-7])))

    def _analyse(self, text: str) -> Trigger | None:
        leaf = self._last_leaf(text)
        if leaf is None or leaf.type != "keyword" or leaf.value != "import":
            return None
        is_from = leaf.parent.type == "import_from" or leaf.get_previous_leaf() is not None and _in_from(leaf)
        names = {
            c.name for c in self._complete(text + " ")
            if c.name.isidentifier() and (is_from or c.type == "module") and c.type != "keyword"
        }
        return Trigger(frozenset(names), prefix=" ", monitor=self.name) if names else None


def _in_from(leaf: Any) -> bool:
    """True when the ``import`` keyword follows ``from x`` on its statement (parso error recovery)."""
    node = leaf.get_previous_leaf()
    while node is not None and node.type != "newline":
        if node.type == "keyword" and node.value == "from":
            return True
        node = node.get_previous_leaf()
    return False
