"""JSON Schema to a byte DFA: the regular language of the schema's JSON texts.

Pipeline: :mod:`document` (load, index ``$id``/``$anchor``, resolve ``$ref``) →
:mod:`spec` (merge ``$ref``/``allOf`` into one record per value) → :mod:`emit`
(records to regex trees and embedded automata) → one minimal DFA, whose
whitespace runs are then bounded.  See ARCHITECTURE.md, "JSON Schema".
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping

import numpy as np

from ...automata.byte_dfa import ByteDFA, build_byte_dfa
from ...automata.dfa_ops import bound_runs
from ...errors import RegexError, SchemaError
from .document import SchemaDocument, load_schema
from .emit import WHITESPACE_MODES, WS_BYTES, Layout, SchemaEmitter, largest_parts
from .trees import NOTHING, seq

__all__ = ["JsonSchemaOptions", "SchemaLanguage", "schema_to_dfa", "load_schema", "UNSATISFIABLE"]


# The language of a schema no value satisfies: one state, no transitions, not accepting.
EMPTY_LANGUAGE = ByteDFA(np.full((1, 256), -1, dtype=np.int32), np.zeros(1, dtype=bool), 0)
#: The note an unsatisfiable schema's compile carries (``generate_json`` refuses to decode it).
UNSATISFIABLE = "#: no JSON value satisfies this schema"


@dataclass(frozen=True)
class JsonSchemaOptions:
    """How a schema's values are written; see :meth:`constrain.Compiler.compile_json_schema`."""

    whitespace: str = "flexible"
    max_whitespace: int = 12
    property_order: str = "schema"
    strict: bool = True
    max_recursion: int = 3
    max_any_depth: int = 3

    def __post_init__(self) -> None:
        if self.whitespace not in WHITESPACE_MODES:
            raise ValueError(f"whitespace must be one of {', '.join(WHITESPACE_MODES)}, got {self.whitespace!r}")
        if self.property_order not in ("schema", "any"):
            raise ValueError(f"property_order must be 'schema' or 'any', got {self.property_order!r}")
        if self.max_whitespace < 0 or self.max_recursion < 0 or self.max_any_depth < 0:
            raise ValueError("max_whitespace, max_recursion and max_any_depth must be >= 0")


@dataclass
class SchemaLanguage:
    """The compiled language and what the compile had to say about it."""

    dfa: ByteDFA
    notes: list[str] = field(default_factory=list)


def schema_to_dfa(schema: Any, options: JsonSchemaOptions = JsonSchemaOptions(),
                  resources: Mapping[str, Any] | None = None) -> SchemaLanguage:
    """Compile a schema (dict, JSON text or pydantic model) to the DFA of its JSON texts.

    ``resources`` maps URIs to other schema documents that ``$ref`` may point into
    (nothing is ever fetched).

    Raises
    ------
    SchemaError
        Malformed schemas, unresolvable references, keywords that cannot be
        enforced exactly (in strict mode), and schemas no value satisfies.
    """
    doc = SchemaDocument(load_schema(schema), resources)
    layout = Layout(options.whitespace)
    emitter = SchemaEmitter(doc, layout, strict=options.strict, max_recursion=options.max_recursion,
                            max_any_depth=options.max_any_depth, any_order=options.property_order == "any")
    try:
        tree = emitter.root()
        if tree is NOTHING:  # e.g. `false`: a valid compile whose matcher allows nothing, not even EOS
            return SchemaLanguage(EMPTY_LANGUAGE, emitter.notes + [UNSATISFIABLE])
        dfa = build_byte_dfa(seq(layout.ws, tree, layout.ws), minimize=False)
    except RegexError as err:
        raise SchemaError(f"the schema's language could not be built: {err.reason}{largest_parts(emitter.sizes)}",
                          "#") from None
    except RecursionError:
        raise SchemaError("the schema nests too deeply to compile", "#") from None
    if not dfa.accepting.any():  # emptiness found only by the set operations (oneOf, not, ...)
        return SchemaLanguage(EMPTY_LANGUAGE, emitter.notes + [UNSATISFIABLE])
    if options.whitespace == "flexible":
        dfa = bound_runs(dfa, structural_loops(dfa), WS_BYTES, options.max_whitespace)
    return SchemaLanguage(dfa, emitter.notes)


def structural_loops(dfa: ByteDFA) -> np.ndarray:
    """States that loop on all four JSON whitespace bytes: the "between tokens" states.

    No state inside a string qualifies: raw tab, newline and carriage return are
    never allowed there (they must be escaped), so they cannot loop.
    """
    ws = np.frombuffer(WS_BYTES, dtype=np.uint8)
    return np.all(dfa.trans[:, ws] == np.arange(dfa.num_states)[:, None], axis=1)
