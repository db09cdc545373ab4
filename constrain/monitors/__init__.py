"""Monitor-guided decoding (Agrawal et al. 2023): static analysis as a token constraint.

See :mod:`constrain.monitors.base` for the design; the Python monitors need the
``monitors`` extra (jedi).
"""

from .base import Monitor, MonitorContext, MonitoredMatcher, Trigger
from .identifiers import IdentifierDFA, identifier_dfa

__all__ = [
    "Monitor", "MonitorContext", "MonitoredMatcher", "Trigger", "IdentifierDFA", "identifier_dfa",
    "PythonMemberMonitor", "PythonImportMonitor", "MonitorLogitsProcessor",
]


def __getattr__(name: str):
    # jedi and transformers load only when these are used.
    if name in ("PythonMemberMonitor", "PythonImportMonitor"):
        from . import python

        return getattr(python, name)
    if name == "MonitorLogitsProcessor":
        from .processor import MonitorLogitsProcessor

        return MonitorLogitsProcessor
    raise AttributeError(f"module 'constrain.monitors' has no attribute {name!r}")
