"""A memo that empties itself when full: what the automata remember of questions asked
about states they met (closures, masks, look-aheads over written strings and keys)."""

from __future__ import annotations

from typing import Hashable, TypeVar

__all__ = ["BoundedMemo"]

V = TypeVar("V")


class BoundedMemo(dict):
    """A ``dict`` of at most ``limit`` entries, emptied whole when full.

    Keys hold the text read so far (strings written, keys of an object, configurations),
    so over a long generation they grow without end. Emptying whole is the cheapest
    bound, and an answer is asked for again only from a state met again. Look-ups are a
    plain ``get``; :meth:`remember` stores.
    """

    __slots__ = ("limit",)

    def __init__(self, limit: int) -> None:
        super().__init__()
        self.limit = limit

    def remember(self, key: Hashable, value: V) -> V:
        """Store ``value`` under ``key`` (emptying the memo first when it is full); return it."""
        if len(self) >= self.limit:
            self.clear()
        self[key] = value
        return value
