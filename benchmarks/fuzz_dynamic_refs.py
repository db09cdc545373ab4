"""Random documents of several schema resources with dynamic references, against ``jsonschema``.

Each document has two to four resources (``$id`` ``r0``...) under the root's ``$defs``,
objects whose properties ``$ref`` one another (cycles included), some with a
``$dynamicAnchor: "t"`` of their own (a different leaf type each), some properties a
``$dynamicRef`` to ``#t`` or to another resource's ``t``; the root may hold an anchor
too.  Where the compiler settles a dynamic reference (the first anchored resource is
the same on every chain of resources from the root: ``SchemaDocument._first_anchored``),
its automaton must agree with ``Draft202012Validator`` on values written along the
document's own property paths, with every leaf value where a dynamic reference stands;
where it cannot, it must refuse with the "enters first" error, nothing else.

Resources are entered only by ``$ref`` here.  ``jsonschema`` (its ``referencing``
library, 0.37) drops the outer resource from the dynamic scope when evaluation descends
into an embedded resource (``Resolver.in_subresource`` does not record it), where the
specification's dynamic scope holds every resource navigated; such documents would
test that difference, not the compiler.

    python benchmarks/fuzz_dynamic_refs.py --seed 1 --count 300
"""

from __future__ import annotations

import argparse
import json
import random
import sys

import jsonschema

from constrain import SchemaError
from constrain.grammar.json_schema import schema_to_dfa

LEAVES = [{"type": "integer"}, {"type": "string"}, {"type": "boolean"}, {"type": "null"}, {"type": "array"}]
VALUES = [1, "s", True, None, []]


def random_document(rng: random.Random) -> tuple[dict, dict[str, dict]]:
    """A root schema and its resources by ``$id``."""
    names = [f"r{i}" for i in range(rng.randint(2, 4))]
    resources = {name: _object(name) for name in names}
    for node in resources.values():
        if rng.random() < 0.6:
            node["$defs"]["t"] = {"$dynamicAnchor": "t", **rng.choice(LEAVES)}
    root = _object("https://example.com/root")
    if rng.random() < 0.25:
        root["$defs"]["t"] = {"$dynamicAnchor": "t", **rng.choice(LEAVES)}
    anchored = [name for name in names if "t" in resources[name]["$defs"]]
    for name, node in resources.items():
        for index in range(rng.randint(0, 2)):
            node["properties"][f"p{index}"] = {"$ref": rng.choice(names)}
        if "t" in node["$defs"] and rng.random() < 0.8:
            node["properties"]["v"] = {"$dynamicRef": "#t"}
        elif anchored and rng.random() < 0.3:
            node["properties"]["w"] = {"$dynamicRef": rng.choice(anchored) + "#t"}
    for index in range(rng.randint(1, 2)):
        root["properties"][f"q{index}"] = {"$ref": rng.choice(names)}
    root["$defs"].update(resources)
    return root, resources


def _object(ident: str) -> dict:
    return {"$id": ident, "type": "object", "properties": {}, "additionalProperties": False, "$defs": {}}


def values_along(node: dict, depth: int, resources: dict[str, dict], rng: random.Random) -> list:
    """Values written along ``node``'s property paths (``$ref`` followed by name), every
    leaf value where a dynamic reference stands, and an unknown key at each level."""
    if "$ref" in node:
        return values_along(resources[node["$ref"]], depth, resources, rng)
    if "$dynamicRef" in node or node.get("type") != "object":
        return list(VALUES)
    out: list = [{}, {"zz": 1}]
    if depth > 0:
        for key, sub in node["properties"].items():
            inner = values_along(sub, depth - 1, resources, rng)
            out += [{key: value} for value in rng.sample(inner, min(len(inner), 5))]
    return out


def check(seed: int, count: int) -> tuple[list[str], int, int]:
    """Disagreements (document, value, verdicts), documents compared and refused."""
    rng = random.Random(seed)
    failures, compared, refused = [], 0, 0
    for _ in range(count):
        schema, resources = random_document(rng)
        try:
            automaton = schema_to_dfa(schema).automaton
        except SchemaError as err:
            refused += 1
            if "enters first" not in str(err):
                failures.append(f"{json.dumps(schema)}: refused for {err}")
            continue
        oracle = jsonschema.Draft202012Validator(schema)
        compared += 1
        for value in values_along(schema, 4, resources, rng):
            want = oracle.is_valid(value)
            if automaton.matches(json.dumps(value).encode()) != want:
                failures.append(f"{json.dumps(schema)} {json.dumps(value)}: valid is {want}")
    return failures, compared, refused


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--count", type=int, default=300, help="documents to draw")
    args = parser.parse_args()
    failures, compared, refused = check(args.seed, args.count)
    for line in failures:
        print(line)
    print(f"seed {args.seed}: {compared} documents compared, {refused} refused, {len(failures)} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
