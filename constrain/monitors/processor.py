"""``MonitorLogitsProcessor``: monitors (and optionally a grammar) in ``model.generate``."""

from __future__ import annotations

from collections.abc import Sequence

from ..compiler import CompiledGrammar, Compiler
from ..matcher import Matcher
from ..samplers.processor import ConstrainedLogitsProcessor
from ..vocab import TokenizerInfo
from .base import Monitor, MonitorContext, MonitoredMatcher

__all__ = ["MonitorLogitsProcessor"]

#: The grammar of "no grammar": any text, EOS anywhere (special tokens other than EOS stay masked).
ANY_TEXT = r"[\s\S]*"


class MonitorLogitsProcessor(ConstrainedLogitsProcessor):
    """A :class:`~constrain.ConstrainedLogitsProcessor` whose rows also obey monitors.

    Each row's mask is the grammar's mask AND the monitors' (see
    :class:`~constrain.monitors.base.MonitoredMatcher`); the monitors read the row's
    prompt plus its output, so a prompt ending in ``obj.`` is constrained from the
    first generated token.  Beam search and assisted generation work as for the
    parent class (rows are forked and replayed).

    Parameters
    ----------
    monitors:
        E.g. ``[PythonMemberMonitor(project_dir), PythonImportMonitor(project_dir)]``.
    tokenizer_info:
        The model's vocabulary.
    compiled:
        Optional grammar(s) the generated text must also follow (one, or one per
        input row); by default any text.
    split_at_triggers:
        See :class:`~constrain.monitors.base.MonitorContext`.

    Examples
    --------
    >>> info = TokenizerInfo.from_huggingface(tokenizer)                          # doctest: +SKIP
    >>> processor = MonitorLogitsProcessor([PythonMemberMonitor("my_project")], info)  # doctest: +SKIP
    >>> out = model.generate(**tokenizer("item = w.find_product('a')\\nitem.", return_tensors="pt"),
    ...                      logits_processor=LogitsProcessorList([processor]))  # doctest: +SKIP
    """

    def __init__(self, monitors: Sequence[Monitor], tokenizer_info: TokenizerInfo,
                 compiled: CompiledGrammar | Sequence[CompiledGrammar] | None = None, *,
                 split_at_triggers: bool = True) -> None:
        if not isinstance(tokenizer_info, TokenizerInfo):
            raise TypeError(f"Invalid tokenizer_info: expected a TokenizerInfo, got {type(tokenizer_info).__name__}")
        if compiled is None:
            compiled = Compiler(tokenizer_info).compile_regex(ANY_TEXT)
        super().__init__(compiled)
        if self.tokenizer_info.hash != tokenizer_info.hash:
            raise ValueError("Invalid compiled: the grammar was compiled for another tokenizer than tokenizer_info")
        self.context = MonitorContext(tokenizer_info, monitors, split_at_triggers=split_at_triggers)

    def _new_matcher(self, row: int, batch: int) -> MonitoredMatcher:  # type: ignore[override]
        prompt = self.tokenizer_info.decode_bytes(self._prompt[row])
        return MonitoredMatcher(self.context, Matcher(self._grammar_for_row(row, batch)), prompt)
