"""constrain: exact structured generation for Hugging Face transformers.

Compile a constraint once per tokenizer, then drive one cheap matcher per sequence::

    from constrain import TokenizerInfo, Compiler, Matcher, allocate_token_bitmask

    info = TokenizerInfo.from_huggingface(tokenizer)
    compiled = Compiler(info).compile_regex(r"\\d{4}-\\d{2}-\\d{2}")
    matcher = Matcher(compiled)
    bitmask = allocate_token_bitmask(1, info.vocab_size)
    matcher.fill_next_token_bitmask(bitmask)

Or hand the constraint to ``model.generate`` with
:class:`~constrain.samplers.processor.RegexLogitsProcessor`, or call
:func:`generate_regex`.

Heavy modules (torch, transformers, numba) load on first use of the names that need
them: ``import constrain`` stays fast and compiles nothing.
"""

from __future__ import annotations

import importlib
from typing import Any

__version__ = "0.1.0"

from .errors import (  # noqa: E402
    BitmaskError,
    ConstrainError,
    GrammarError,
    MonitorError,
    RegexError,
    SchemaError,
    TokenizerError,
)

# name -> module that defines it; imported on first attribute access.
_LAZY = {
    "TokenizerInfo": "constrain.vocab",
    "Compiler": "constrain.compiler",
    "CompiledGrammar": "constrain.compiler",
    "Matcher": "constrain.matcher",
    "allocate_token_bitmask": "constrain.kernels",
    "apply_token_bitmask_": "constrain.kernels",
    "reset_token_bitmask": "constrain.kernels",
    "get_bitmask_shape": "constrain.kernels",
    "ConstrainedLogitsProcessor": "constrain.samplers.processor",
    "RegexLogitsProcessor": "constrain.samplers.processor",
    "GrammarLogitsProcessor": "constrain.samplers.processor",
    "JSONSchemaLogitsProcessor": "constrain.samplers.processor",
    "generate_json": "constrain.api",
    "generate_regex": "constrain.api",
    "generate_grammar": "constrain.api",
    "DiffusionGenerator": "constrain.samplers.diffusion",
    "DiffusionOutput": "constrain.samplers.diffusion",
    "DiffusionError": "constrain.samplers.dingo",
    "NonRegularConstraintError": "constrain.samplers.dingo",
    "dingo_table": "constrain.samplers.dingo",
    "dingo_decode": "constrain.samplers.dingo",
    "dingo_sample": "constrain.samplers.dingo",
    "Monitor": "constrain.monitors.base",
    "Trigger": "constrain.monitors.base",
    "MonitorLogitsProcessor": "constrain.monitors.processor",
    "PythonMemberMonitor": "constrain.monitors.python",
    "PythonImportMonitor": "constrain.monitors.python",
    "ASApSampler": "constrain.samplers.asap",
    "ASApLogitsProcessor": "constrain.samplers.asap",
    "ASApState": "constrain.samplers.asap",
    "ASApTrie": "constrain.samplers.asap",
    "SpeculativeGenerator": "constrain.samplers.speculative",
}

__all__ = [
    "__version__",
    "ConstrainError",
    "RegexError",
    "GrammarError",
    "SchemaError",
    "TokenizerError",
    "BitmaskError",
    "MonitorError",
    *_LAZY,
]


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'constrain' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
