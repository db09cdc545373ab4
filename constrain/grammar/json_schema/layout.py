"""Where JSON whitespace goes between tokens: the three whitespace modes as regex pieces."""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from ..regex import RegexNode
from .trees import EMPTY, cls, lit, seq, star


WHITESPACE_MODES = ("flexible", "canonical", "compact")
WS_BYTES = b" \t\n\r"


@dataclass(frozen=True)
class Layout:
    """Where whitespace goes: between every two tokens (flexible) or as json.dumps writes it."""

    mode: str

    # Trees are immutable: each piece is built once per layout (objects ask for them per member).
    @property
    def ws(self) -> RegexNode:
        return _layout_piece(self.mode, "ws")

    def comma(self) -> RegexNode:
        return _layout_piece(self.mode, ",")

    def colon(self) -> RegexNode:
        return _layout_piece(self.mode, ":")

    def opening(self, char: str) -> RegexNode:
        return _layout_piece(self.mode, char)

    def closing(self, char: str) -> RegexNode:
        return _layout_piece(self.mode, char)


@lru_cache(maxsize=None)
def _layout_piece(mode: str, piece: str) -> RegexNode:
    """Whitespace, a separator or a bracket (with the whitespace on its inner side) in ``mode``."""
    ws = star(cls((" ", " "), ("\t", "\t"), ("\n", "\n"), ("\r", "\r"))) if mode == "flexible" else EMPTY
    if piece == "ws":
        return ws
    if piece in "{[":
        return seq(lit(piece), ws)
    if piece in "}]":
        return seq(ws, lit(piece))
    if mode == "flexible":
        return seq(ws, lit(piece), ws)
    return lit(piece + " ") if mode == "canonical" else lit(piece)
