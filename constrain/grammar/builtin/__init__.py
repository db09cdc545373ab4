"""Grammars shipped with constrain, as Lark text files beside this module."""

from __future__ import annotations

from importlib import resources

__all__ = ["BUILTIN_GRAMMARS", "builtin_grammar"]

BUILTIN_GRAMMARS = ("json", "sql", "python")


def builtin_grammar(name: str) -> str:
    """The Lark text of a built-in grammar."""
    if name not in BUILTIN_GRAMMARS:
        raise ValueError(f"Invalid built-in grammar: expected one of {', '.join(BUILTIN_GRAMMARS)}, got {name!r}")
    return resources.files(__package__).joinpath(f"{name}.lark").read_text(encoding="utf-8")
