"""Monitor-guided decoding: the monitor interface and the per-sequence matcher that applies it.

Agrawal et al. ("Guiding Language Models of Code with Global Context using
Monitors", 2023) let a static analyser steer decoding: a *monitor* watches the code
generated so far; at a *trigger* (in Python, an attribute access ``expr.``) it asks
the analyser which identifiers are valid there, and until that identifier is
complete the model may only emit tokens that keep spelling one of them.

The split of work here:

* a :class:`Monitor` answers one question, "does the text end at a trigger, and if
  so which identifiers may follow?" (:meth:`Monitor.trigger`), plus a cheap
  byte-level pre-check (:meth:`Monitor.might_trigger`) so that the analyser runs only
  where a trigger is possible;
* :class:`MonitorContext` (one per tokenizer and monitor list) turns the answer into
  token masks: :func:`~constrain.monitors.identifiers.identifier_dfa` plus one trie walk;
* :class:`MonitoredMatcher` (one per sequence) has the :class:`~constrain.Matcher`
  interface and ANDs the monitor's mask with a grammar matcher's, so monitors compose
  with any compiled constraint through the same ``LogitsProcessor``
  (:class:`~constrain.monitors.processor.MonitorLogitsProcessor`).

Extension point: any language whose analyser can list completions can be monitored
by subclassing :class:`Monitor`.  For a language server, ``trigger`` sends the text as
the document (``textDocument/didChange``) and asks ``textDocument/completion`` at its
end, keeping the ``label`` of items whose ``kind`` is Field, Method or Property; see
ARCHITECTURE.md ("Monitors").
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from ..automata.memo import BoundedMemo
from ..automata.token_trie import token_trie_for
from ..matcher import Matcher, _as_numpy_rows
from .identifiers import RELEASED, IdentifierDFA, boundary_guard, identifier_dfa

if TYPE_CHECKING:
    import torch

    from ..vocab import TokenizerInfo

__all__ = ["Trigger", "Monitor", "MonitorContext", "MonitoredMatcher"]

#: How many trailing bytes :meth:`Monitor.might_trigger` sees.
TAIL_BYTES = 16
#: Per-state identifier masks kept per context (each is vocab_size / 8 bytes).
_MASK_CACHE_SIZE = 4096


@dataclass(frozen=True)
class Trigger:
    """What a monitor allows at one point of the text.

    Attributes
    ----------
    names:
        The identifiers that may come next.
    prefix:
        Text every continuation starts with before the identifier (``" "`` after
        ``import``); must not end with an identifier character.
    monitor:
        Name of the monitor that fired (for messages and statistics).
    """

    names: frozenset[str]
    prefix: str = ""
    monitor: str = field(default="", compare=False)


class Monitor(ABC):
    """Watches generated text and names the identifiers allowed at a trigger.

    Subclasses implement :meth:`trigger` (may be slow: it runs a static analyser, so
    cache by text) and usually :meth:`might_trigger` (runs at every step: keep it to a
    few byte comparisons).  ``boundary_bytes`` lists the bytes after which the monitor
    fires; tokens in which such a byte is followed by an identifier-start byte (``.get``)
    would cross the trigger inside one token and escape it, so by default they are
    masked while the monitor is idle and the model writes ``.`` and ``get`` as two tokens.
    """

    #: Bytes that end a trigger (``b"."`` for attribute access); see the class docstring.
    boundary_bytes: bytes = b""

    @property
    def name(self) -> str:
        return type(self).__name__

    def might_trigger(self, tail: bytes) -> bool:
        """Cheap pre-check on the last :data:`TAIL_BYTES` bytes; False skips :meth:`trigger`."""
        return True

    @abstractmethod
    def trigger(self, text: str) -> Trigger | None:
        """The allowed identifiers when ``text`` (prompt plus generated) ends at a trigger, else None.

        Return None, not an empty set, when the analyser knows nothing there: a monitor
        restricts only where it can name the valid continuations.
        """


class MonitorContext:
    """Per-tokenizer machinery shared by the rows of a batch: masks, caches, the monitors.

    Parameters
    ----------
    tokenizer_info:
        The vocabulary the masks are over.
    monitors:
        Checked in order at each step; the first that fires wins.
    split_at_triggers:
        Mask tokens that would cross a trigger boundary while no monitor is active
        (see :class:`Monitor`).  Turning it off lets e.g. ``.get`` through unchecked.
    """

    def __init__(self, tokenizer_info: "TokenizerInfo", monitors: Sequence[Monitor], *,
                 split_at_triggers: bool = True) -> None:
        monitors = list(monitors)
        if not monitors or not all(isinstance(m, Monitor) for m in monitors):
            raise TypeError("Invalid monitors: expected a non-empty list of Monitor instances")
        self.tokenizer_info = tokenizer_info
        self.monitors = monitors
        self.trie = token_trie_for(tokenizer_info)
        self.num_words = (tokenizer_info.vocab_size + 31) // 32
        self.token_bytes = tokenizer_info.token_bytes
        self.matchable = np.zeros(tokenizer_info.vocab_size, dtype=bool)
        self.matchable[tokenizer_info.matchable_token_ids()] = True
        self.eos_ids = frozenset(tokenizer_info.eos_token_ids)
        self.eos_words = _ids_to_words(tokenizer_info.eos_token_ids, self.num_words)
        boundary = b"".join(m.boundary_bytes for m in monitors)
        self.boundary = bytes(sorted(set(boundary))) if split_at_triggers else b""
        self.idle_words = self._boundary_guard(self.boundary) if self.boundary else None
        # Keyed by the automaton object itself (not its id, which a collected one could reuse).
        self._masks: BoundedMemo = BoundedMemo(_MASK_CACHE_SIZE)  # (IdentifierDFA, state) -> mask words
        self.stats = {"trigger_checks": 0, "triggers": 0, "mask_walks": 0}

    def _walk(self, trans: np.ndarray, state: int, ends: np.ndarray | None = None) -> np.ndarray:
        """Packed mask of the matchable tokens whose bytes stay inside ``trans`` from ``state``.

        With ``ends`` (int32, one slot per token), also writes each such token's end state.
        """
        words = np.zeros(self.num_words, dtype=np.uint32)
        self.trie.walk_dfa(trans, state, words, ends if ends is not None else np.empty(0, np.int32))
        return words

    def _identifier_walk(self, dfa: IdentifierDFA, state: int) -> np.ndarray:
        """One trie walk; then drop the tokens whose end state does not settle (see ``IdentifierDFA``)."""
        ends = np.full(self.tokenizer_info.vocab_size, -1, dtype=np.int32)
        self._walk(dfa.trans, state, ends)
        settles = np.zeros(ends.shape[0], dtype=bool)
        reached = ends >= 0
        settles[reached] = dfa.settle[ends[reached]] >= 0
        packed = np.packbits(settles, bitorder="little")
        padded = np.zeros(self.num_words * 4, dtype=np.uint8)
        padded[: packed.shape[0]] = packed
        return padded.view(np.uint32)

    def _boundary_guard(self, boundary: bytes) -> np.ndarray:
        """Mask of tokens with no boundary byte followed by an identifier-start byte; others all set."""
        words = self._walk(boundary_guard(boundary), RELEASED)
        others = np.flatnonzero(~self.matchable[: self.tokenizer_info.vocab_size])
        return words | _ids_to_words(others, self.num_words)

    def identifier_words(self, dfa: IdentifierDFA, state: int) -> np.ndarray:
        """Tokens allowed from ``state`` of ``dfa`` (plus EOS where an identifier is complete), memoised."""
        key = (dfa, state)
        words = self._masks.get(key)
        if words is None:
            self.stats["mask_walks"] += 1
            words = self._identifier_walk(dfa, state)
            if dfa.accepting[state]:
                words |= self.eos_words
            self._masks.remember(key, words)
        return words

    def clear_masks(self) -> None:
        """Drop the memoised identifier masks (benchmarks time the walk with this)."""
        self._masks.clear()

    def check(self, text: bytes | bytearray) -> IdentifierDFA | None:
        """Ask the monitors about ``text``; the automaton of the first trigger, else None."""
        tail = bytes(text[-TAIL_BYTES:])
        for monitor in self.monitors:
            if not monitor.might_trigger(tail):
                continue
            self.stats["trigger_checks"] += 1
            found = monitor.trigger(text.decode("utf-8", errors="replace"))
            if found is not None and found.names:
                self.stats["triggers"] += 1
                return identifier_dfa(found.names, found.prefix, self.boundary)
        return None


def _ids_to_words(ids, num_words: int) -> np.ndarray:
    words = np.zeros(num_words, dtype=np.uint32)
    ids = np.asarray(ids, dtype=np.int64)
    np.bitwise_or.at(words, ids >> 5, (np.uint32(1) << (ids & 31).astype(np.uint32)))
    return words


class MonitoredMatcher:
    """A grammar :class:`~constrain.Matcher` and the monitors, stepped together on one sequence.

    The mask is the grammar's AND the monitor's: the identifier mask while a trigger is
    active, the boundary guard while idle.  ``accept_token`` returns False, leaving
    both unchanged, for a token either side forbids.

    Parameters
    ----------
    context:
        The shared :class:`MonitorContext`.
    matcher:
        The grammar matcher of the generated text (use a ``[\\s\\S]*`` regex for none).
    prompt:
        The bytes before the generated text; the monitors see prompt plus output, and
        a prompt ending in ``obj.`` triggers at once.
    """

    __slots__ = ("context", "matcher", "_text", "_dfa", "_state")

    def __init__(self, context: MonitorContext, matcher: Matcher, prompt: bytes = b"") -> None:
        self.context = context
        self.matcher = matcher
        self._text = bytearray(prompt)
        self._dfa: IdentifierDFA | None = None
        self._state = -1
        self._arm()

    def _arm(self) -> None:
        self._dfa = self.context.check(self._text)
        self._state = self._dfa.start if self._dfa is not None else -1

    # -- queries ---------------------------------------------------------------
    @property
    def active(self) -> IdentifierDFA | None:
        """The automaton of the trigger being enforced, None while idle."""
        return self._dfa

    @property
    def text(self) -> bytes:
        """Prompt plus accepted output bytes."""
        return bytes(self._text)

    def is_terminated(self) -> bool:
        return self.matcher.is_terminated()

    # -- stepping --------------------------------------------------------------
    def accept_token(self, token_id: int) -> bool:
        """Advance by one token; False (state unchanged) when the grammar or the monitor forbids it."""
        token_id = int(token_id)
        context = self.context
        if token_id in context.eos_ids:
            if self._dfa is not None and not self._dfa.accepting[self._state]:
                return False
            return self.matcher.accept_token(token_id)
        if self.matcher.is_terminated():
            return False
        data = context.token_bytes[token_id]
        state = -1
        if self._dfa is not None:
            if not context.matchable[token_id]:
                return False
            state = self._dfa.walk_token(self._state, data)
            if state < 0:
                return False
        elif context.idle_words is not None and not (context.idle_words[token_id >> 5] >> (token_id & 31)) & 1:
            return False
        if not self.matcher.accept_token(token_id):
            return False
        self._text += data
        if self._dfa is not None and not self._dfa.is_released(state):
            self._state = state
        else:
            self._arm()  # released (or idle): the new text may end at the next trigger
        return True

    def next_token_mask_words(self) -> np.ndarray:
        """The packed uint32 mask of this step (a fresh array)."""
        words = self.matcher.next_token_mask_words()
        if self.matcher.is_terminated():
            return words
        if self._dfa is not None:
            return words & self.context.identifier_words(self._dfa, self._state)
        if self.context.idle_words is not None:
            return words & self.context.idle_words
        return words.copy()

    def fill_next_token_bitmask(self, bitmask: "torch.Tensor | np.ndarray", row: int = 0) -> bool:
        """Write grammar mask AND monitor mask into ``bitmask[row]`` (int32, 32 tokens per word)."""
        self.matcher.fill_next_token_bitmask(bitmask, row)
        if self.matcher.is_terminated():
            return True
        if self._dfa is None and self.context.idle_words is None:
            return True
        target = _as_numpy_rows(bitmask)
        monitor = (self.context.identifier_words(self._dfa, self._state) if self._dfa is not None
                   else self.context.idle_words)
        n = min(target.shape[1], monitor.shape[0])
        target[row, :n] &= monitor[:n].view(np.int32)
        return True

    def fork(self) -> "MonitoredMatcher":
        """An independent copy at the same position (beams)."""
        clone = MonitoredMatcher.__new__(MonitoredMatcher)
        clone.context = self.context
        clone.matcher = self.matcher.fork()
        clone._text = bytearray(self._text)
        clone._dfa = self._dfa
        clone._state = self._state
        return clone

    __copy__ = fork
