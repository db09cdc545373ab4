"""The exception hierarchy.

Every error the library raises on bad input derives from :class:`ConstrainError`, and
each subclass also derives from the built-in exception a caller would naturally catch
(``ValueError`` or ``TypeError``), so ``except ValueError`` keeps working.  Errors carry
*where* the problem is: a position in a regex, a line and column in grammar text, or a
JSON pointer into a schema, so that the message alone is enough to fix the input.
"""

from __future__ import annotations

__all__ = [
    "ConstrainError",
    "RegexError",
    "EmptyLanguageError",
    "GrammarError",
    "SchemaError",
    "TokenizerError",
    "BitmaskError",
    "MonitorError",
]


class ConstrainError(Exception):
    """Root of every error raised by ``constrain`` on bad input."""


def caret_excerpt(text: str, position: int, width: int = 60) -> str:
    """Return two lines: the part of ``text`` around ``position`` and a caret under it.

    Long inputs are cut to about ``width`` characters around the position so that
    the message stays readable for a 7,000-character alternation.
    """
    position = max(0, min(position, len(text)))
    start = max(0, position - width // 2)
    end = min(len(text), start + width)
    prefix = "..." if start > 0 else ""
    suffix = "..." if end < len(text) else ""
    shown = text[start:end].replace("\n", " ")
    caret = " " * (len(prefix) + position - start) + "^"
    return f"{prefix}{shown}{suffix}\n{caret}"


class RegexError(ConstrainError, ValueError):
    """A regular expression that is malformed or uses an unsupported construct.

    ``position`` is the 0-based character offset of the offending construct in
    ``pattern``.
    """

    def __init__(self, message: str, pattern: str, position: int) -> None:
        self.pattern = pattern
        self.position = position
        self.reason = message
        super().__init__(
            f"Invalid regex at position {position}: {message}\n"
            f"{caret_excerpt(pattern, position)}"
        )


class EmptyLanguageError(RegexError):
    """A regular expression (or an intersection of constraints) that no string matches.

    A :class:`RegexError` of its own, so that callers for which an empty language is an
    answer (a string schema no string meets is simply no string) can tell it from a
    malformed or too large one."""

    def __init__(self, pattern: str = "") -> None:
        super().__init__("the pattern matches no string at all", pattern, 0)


class GrammarError(ConstrainError, ValueError):
    """A grammar that is malformed, ambiguous for LALR(1), or uses an unsupported construct.

    ``line`` and ``column`` are 1-based where known.
    """

    def __init__(self, message: str, line: int | None = None, column: int | None = None) -> None:
        self.line = line
        self.column = column
        self.reason = message
        where = f" at line {line}, column {column}" if line is not None else ""
        super().__init__(f"Invalid grammar{where}: {message}")


class SchemaError(ConstrainError, ValueError):
    """A JSON Schema that is malformed or uses a keyword that cannot be enforced exactly.

    ``pointer`` is the JSON pointer (RFC 6901) of the offending schema location.
    """

    def __init__(self, message: str, pointer: str = "") -> None:
        self.pointer = pointer
        self.reason = message
        super().__init__(f"Invalid schema at '{pointer or '#'}': {message}")


class TokenizerError(ConstrainError, ValueError):
    """A tokenizer whose tokens cannot be mapped to exact bytes."""


class BitmaskError(ConstrainError, ValueError):
    """A bitmask or logits tensor of the wrong shape, dtype or device."""


class MonitorError(ConstrainError, ValueError):
    """A monitor (monitor-guided decoding) was misconfigured: bad project directory,
    allowed names that are not identifiers, a missing static analyser."""
