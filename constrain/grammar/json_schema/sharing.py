"""Which ``$ref`` targets are worth one shared callee instead of a copy per site.

A definition that references reach from many places (Kubernetes' ``Container``
sits under a dozen paths of a workload schema, ``Probe`` under sixty) is copied
into the schema's DFA at every site, and the DFA, with every pass over it, grows
with the copies.  As a callee (see ``SchemaEmitter._build_callee``) it is built
once and called from each site.  Call symbols are few (:data:`COUNTED_SYMBOLS`,
shared with counted strings and recursive definitions), so they go where they
save most: this module estimates, before anything is built, how many copies of
each definition the schema would expand to and how large one is, and picks
greedily by copies saved times size.

Sizes are counts of schema objects, and references inside a definition chosen
already cost one (a call).  Definitions on or leading into a reference cycle are
left out: recursion has its own callees, and the depth to which the rest unrolls
depends on the references above a site.  The same graph says which definitions
are on a cycle (:func:`recursive_definitions`): those are callees from their
first reference.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from typing import Callable

from ...errors import SchemaError
from .document import Loc, SchemaDocument, base_of, pointer_part
from .spec import ref_keyword

# Keywords whose values are data or annotations, never sub-schemas.
_DATA_KEYWORDS = frozenset(("enum", "const", "default", "examples", "example", "description", "title",
                            "$comment", "definitions", "$defs"))

#: A definition is shared only when sharing saves at least this many schema objects.
MIN_SAVED = 40


def scan_references(doc: SchemaDocument, key_of: Callable[[Loc], tuple[str, ...]]) -> tuple[dict, dict] | None:
    """The document's reference graph: per definition reached from the root (key ``()``),
    its own size in schema objects and the references in it (target key: count).  None
    when no ``$ref`` string occurs twice: then no definition is copied twice, nor (with
    plain pointers) referenced again from inside itself."""
    if not _some_reference_repeats(doc.root):
        return None
    own: dict = {}
    edges: dict = {}
    todo = [((), doc.root_loc)]
    while todo:
        key, loc = todo.pop()
        if key in own:
            continue
        size, found = _scan(doc, loc, key_of)
        own[key] = size
        edges[key] = Counter(target for target, _ in found)
        todo.extend(found)
    return own, edges


def shared_definitions(graph: tuple[dict, dict] | None, budget: int) -> set[tuple[str, ...]]:
    """The callee keys of at most ``budget`` definitions of ``graph`` (:func:`scan_references`)
    to share, best first."""
    if budget <= 0 or graph is None:
        return set()
    acyclic = _acyclic_part(*graph)
    if acyclic is None:
        return set()
    own, edges, order = acyclic
    chosen: list[tuple[str, ...]] = []
    while len(chosen) < budget:
        sizes = _expanded_sizes(own, edges, order, chosen)
        copies = _copies(edges, order, chosen)
        gain, best = max((((copies[k] - 1) * sizes[k], k) for k in order[1:] if k not in chosen), default=(0, None))
        if gain < MIN_SAVED:
            break
        chosen.append(best)
    return set(chosen)


def recursive_definitions(graph: tuple[dict, dict] | None) -> set[tuple[str, ...]]:
    """The callee keys of the definitions of ``graph`` (:func:`scan_references`) on a
    reference cycle: each reaches itself.

    Built in place, such a definition unrolls along every path until some definition
    on the path comes back; where many reference each other (CWL's dozen mutually
    recursive types, each a union of the others) the paths before the first return
    are exponentially many.  A callee from the first reference on is one automaton
    per definition.
    """
    return set() if graph is None else _on_cycles(graph[1])


def _some_reference_repeats(root) -> bool:
    """Whether some ``$ref`` string occurs twice in the document: without that, no
    definition is copied twice (a copy of a copy needs a repeated reference above it).
    A scan of the serialised text, far cheaper than walking the schema objects."""
    try:
        text = json.dumps(root)
    except (TypeError, ValueError):  # not JSON data: walk it instead
        return True
    seen = set()
    for ref in _REF_TEXT.findall(text):
        if ref in seen:
            return True
        seen.add(ref)
    return False


_REF_TEXT = re.compile(r'"\$ref": ("(?:[^"\\]|\\.)*")')


def _on_cycles(edges: dict) -> set:
    """The keys in a strongly connected component with a cycle (Tarjan's algorithm,
    iterative: reference chains in large schemas pass Python's recursion limit)."""
    index: dict = {}
    low: dict = {}
    stack: list = []
    on_stack: set = set()
    found: set = set()
    for root in edges:
        if root in index:
            continue
        work = [(root, iter(edges[root]))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            key, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(edges[child])))
                elif child in on_stack:
                    low[key] = min(low[key], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[key])
            if low[key] == index[key]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == key:
                        break
                if len(component) > 1 or key in edges[key]:
                    found.update(component)
    found.discard(())  # the root is built in place whatever it leads into
    return found


def _acyclic_part(own: dict, edges: dict) -> tuple[dict, dict, list] | None:
    """The reference graph without the definitions on or leading into a cycle, and the
    rest in topological order, root first.  None when the document makes fewer than
    two references."""
    if sum(sum(counts.values()) for counts in edges.values()) < 2:
        return None
    order, cyclic = _topological(edges)
    cyclic.discard(())  # the root is built in place whatever it leads into
    for key in cyclic:
        own.pop(key, None)
    edges = {k: Counter({t: n for t, n in v.items() if t not in cyclic}) for k, v in edges.items() if k not in cyclic}
    return own, edges, [k for k in order if k not in cyclic]


def _scan(doc: SchemaDocument, loc: Loc, key_of) -> tuple[int, list[tuple[tuple[str, ...], Loc]]]:
    """The schema objects in ``loc`` (not through references), and the references it
    makes, by target key (with the target).  Walks the raw objects with their pointer
    and base URI, making a :class:`Loc` only where a reference is resolved."""
    size = 0
    found = []
    stack = [(loc.raw, loc.pointer, loc.base)]
    while stack:
        node, pointer, base = stack.pop()
        if isinstance(node, list):
            stack.extend((item, f"{pointer}/{i}", base) for i, item in enumerate(node) if isinstance(item, (dict, list)))
            continue
        if not isinstance(node, dict):  # a boolean schema a reference points at
            continue
        size += 1
        keyword = ref_keyword(node)
        if keyword == "$ref":
            try:
                target = doc.resolve(Loc(node, pointer, base, loc.draft), node[keyword], keyword)
                found.append((key_of(target), target))
            except (SchemaError, RecursionError):
                pass  # the emitter reports it where it matters
        for key, value in node.items():
            if key not in _DATA_KEYWORDS and isinstance(value, (dict, list)):
                stack.append((value, f"{pointer}/{pointer_part(key)}", base_of(value, base, loc.draft)))
    return size, found


def _topological(edges: dict) -> tuple[list, set]:
    """The keys in topological order from the root, and those on or leading into a cycle."""
    state: dict = {}  # 1: on the path, 2: done
    order: list = []
    cyclic: set = set()
    root = next(iter(edges))  # the first key scanned
    stack = [(root, iter(edges[root]))]
    state[root] = 1
    while stack:
        key, children = stack[-1]
        child = next(children, None)
        if child is None:
            stack.pop()
            state[key] = 2
            order.append(key)
            if any(c in cyclic for c in edges[key]):
                cyclic.add(key)
        elif state.get(child) == 1:
            cyclic.update(k for k, _ in stack[[k for k, _ in stack].index(child):])
        elif child not in state:
            state[child] = 1
            stack.append((child, iter(edges[child])))
    order.reverse()
    return order, cyclic


def _expanded_sizes(own: dict, edges: dict, order: list, chosen: list) -> dict:
    """Each definition's size with its references expanded, chosen ones costing one."""
    sizes: dict = {}
    for key in reversed(order):
        sizes[key] = own[key] + sum(n * (1 if t in chosen else sizes[t]) for t, n in edges[key].items())
    return sizes


def _copies(edges: dict, order: list, chosen: list) -> dict:
    """How many copies of each definition the root expands to (a chosen one is built once)."""
    copies = Counter({order[0]: 1})
    for key in order:
        for target, n in edges[key].items():
            copies[target] += n * (1 if key in chosen else copies[key])
    return copies
