"""Random JSON Schemas against ``jsonschema``: the compiled language's two directions.

Not a timed benchmark: a reproducible search for wrong languages, kept beside the
benchmarks because it runs for minutes.  Schemas are random nestings of the products
(``not``, ``oneOf``, ``anyOf``, ``allOf``, ``if``/``then``/``else``, ``contains``),
object and array keywords, constants and enums (objects in shuffled member order, signed
zeros), dependencies, required-only anyOf/oneOf branches, oneOf branches that only
constrain members (and such if/then/else), oneOf variants told apart (or not) by
``not: {required}``, by a member's pattern or by number ranges, ``not`` of a type,
patterns with look-aheads and word boundaries, formats and a ``$defs`` entry that may
recurse.

- ``--mode sound``: random values, each written compact and indented; a text the
  automaton accepts must be valid (formats checked).  This found the unslotted
  dependency names and the signed-zero enum intersection of the twentieth session.
- ``--mode complete``: valid values written the way the language documents
  (:func:`constrain.testing.json_schema_instance_text`) must be accepted.  Values
  the documented limits leave out are skipped: exponents, negative zero and zero
  fractions inside products, and (counted apart) member orders that a ``contains``
  fixes for the items it does not count or a dependency fixes for its names.

Usage: ``python benchmarks/fuzz_json_schema.py --mode sound --seed 1 --count 3000``
(about 3 minutes per 1,000 schemas on the 2-core development box).  Prints each
failure as ``SCHEMA | TEXT`` and a summary line; exits 1 when something failed.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import sys
from pathlib import Path

import jsonschema

from constrain.errors import RegexError, SchemaError
from constrain.grammar.json_schema import JsonSchemaOptions, schema_to_dfa
from constrain.testing import Unserialisable, json_schema_instance_text

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import within_seconds  # noqa: E402

SCALARS = [0, 1, -1, 2, 3, 6, 1.5, 100, 1.0, 0.0, -0.0, 2.0, 1e20, 1e-7, "", "a", "b", "ab", "é", "2020-01-01",
           "1.2.3.4", "a@b.c", "a b", "x.y", True, False, None]
PATTERNS = ["^a", "b$", "^[ab]*$", "é", "^(?!a)", "a(?=b)", "^(?:a|b$)", "(?!ab)b|a$", r"\ba", r"^((?!ab).)*$"]
#: Texts a product's plain numbers leave out (ARCHITECTURE.md, "Number spellings").
_PLAIN_LIMITS = re.compile(r"\d[eE]|-0\.0|-0\b|\d\.0\b")


class Generator:
    """Random schemas and values from one seed."""

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)

    def value(self, depth: int):
        rng = self.rng
        kind = rng.randrange(5) if depth else 0
        if kind in (0, 4):
            return rng.choice(SCALARS)
        if kind == 1:
            return [self.value(depth - 1) for _ in range(rng.randint(0, 3))]
        return {key: self.value(depth - 1) for key in rng.sample("abcxy", rng.randint(0, 4))}

    def leaf(self):
        rng = self.rng
        return rng.choice([
            lambda: {"const": self.value(2)},
            lambda: {"enum": [self.value(2) for _ in range(rng.randint(1, 3))]},
            lambda: {"type": rng.choice(["object", "array", "string", "integer", "number", "boolean", "null"])},
            lambda: {"type": "object", "required": rng.sample("abc", rng.randint(1, 2))},
            lambda: {"type": "string", "maxLength": rng.randint(0, 2)},
            lambda: {"type": "string", "pattern": rng.choice(PATTERNS)},
            lambda: {"type": "integer", "minimum": rng.randint(-1, 2)},
            lambda: {"type": "number", "maximum": rng.choice([0, 1, 1.5])},
            lambda: {"type": "array", "maxItems": rng.randint(0, 2)},
            lambda: {"type": "object", "maxProperties": rng.randint(0, 2)},
            lambda: {"type": "object", "properties": {"a": {"type": "integer"}},
                     "additionalProperties": rng.choice([True, False])},
            lambda: {"type": "object", "propertyNames": {"enum": ["a", "b"]}},
            lambda: {"type": "object", "patternProperties": {"^a": {"type": "integer"}},
                     "additionalProperties": {"type": "string"}},
            lambda: {"type": "object", "dependentRequired": {"a": ["b"]}},
            lambda: {"type": "object", "dependentSchemas": {"a": {"required": ["c"]}}},
            lambda: {"type": "array", "uniqueItems": True, "items": {"enum": [1, 2, "a"]}},
            lambda: {"type": "array", "uniqueItems": True, "items": {"type": "string", **rng.choice(
                [{}, {"maxLength": 1}, {"pattern": rng.choice(PATTERNS)}, {"enum": list("abcdefghij")}])}},
            lambda: {"type": "array", "uniqueItems": True, "items": {
                "type": rng.choice(["integer", ["integer", "null"], ["string", "boolean", "null"], ["boolean", "integer"]]),
                **rng.choice([{}, {"minimum": -2, "maximum": 11}, {"maxLength": 1, "maximum": 3}])}},
            lambda: {"type": "integer", "multipleOf": rng.choice([2, 3])},
            lambda: {"type": "string", "format": rng.choice(["date", "ipv4", "email", "uuid"])},
            lambda: {"type": "object", "properties": {"a": {"type": "integer"}}, "unevaluatedProperties": False},
            lambda: {"type": "array", "prefixItems": [{"type": "integer"}], "items": False},
            lambda: {"type": "array", "contains": {"type": "string"}, "minContains": 0, "maxContains": 1},
            lambda: {"type": "object", "if": {"required": ["a"]}, "then": {"required": ["b"]}},
            lambda: {"allOf": [{"enum": [0, "a"]}, {"const": -0.0}]},
            lambda: {"anyOf": [{"required": ["a"]}, {"required": ["b", "c"]}]},
            lambda: {"oneOf": [{"required": ["a"]}, {"required": ["b"]}], "properties": {"b": {"type": "integer"}}},
            lambda: {"oneOf": self.member_branches(self.leaf)},
            lambda: {"oneOf": [{"required": [name], "not": rng.choice([
                {"required": rng.sample("abc", rng.randint(1, 2))},
                {"anyOf": [{"required": [other]} for other in rng.sample("abc", 2)]}])} for name in rng.sample("abc", 2)]},
            lambda: {"oneOf": [{"properties": {"a": {"type": "string", "pattern": pattern}}, "required": ["a"]}
                               for pattern in rng.sample(PATTERNS, 2)]},
            lambda: {"oneOf": [{"type": "number", "maximum": rng.randint(0, 2)},
                               {"type": rng.choice(["integer", "number"]),
                                rng.choice(["minimum", "exclusiveMinimum"]): rng.randint(0, 2)}]},
            lambda: {"if": {"properties": {"a": {"const": rng.choice([1, "x"])}}}, "then": {"required": ["b"]},
                     "else": {"properties": {"b": {"type": "string"}}}},
            lambda: {"not": {"type": rng.choice(["object", "integer", "number", ["string", "null"]])}},
            lambda: {"$ref": "#/$defs/r"},
            lambda: rng.choice([True, False, {}]),
        ])()

    def schema(self, depth: int):
        rng = self.rng
        if not depth:
            return self.leaf()
        inner = lambda: self.schema(depth - 1)  # noqa: E731
        return rng.choice([
            lambda: {"not": inner()},
            lambda: {"oneOf": [inner() for _ in range(rng.randint(2, 3))]},
            lambda: {"anyOf": [inner() for _ in range(rng.randint(2, 3))]},
            lambda: {"allOf": [inner(), inner()]},
            lambda: {"if": inner(), "then": inner(), "else": inner()},
            lambda: {"type": "object", "properties": {"a": inner(), "b": inner()}},
            lambda: {"type": "array", "items": inner()},
            lambda: {"type": "array", "contains": inner(), "maxContains": rng.randint(1, 2)},
            lambda: {"type": "array", "prefixItems": [inner()]},
            lambda: {"oneOf": self.member_branches(inner)},
            lambda: dict(zip(("if", "then", "else"), self.member_branches(inner, 3))),
            self.leaf,
        ])()

    def member_branches(self, inner, count: int | None = None) -> list[dict]:
        """``oneOf`` branches (or if/then/else) that only constrain members (the member
        graph's value classes)."""
        rng = self.rng
        typed = rng.random() < 0.5
        branches = []
        for _ in range(count or rng.randint(2, 3)):
            branch = {"properties": {name: inner() for name in rng.sample("abc", rng.randint(1, 2))}}
            if rng.random() < 0.7:
                branch["required"] = rng.sample("abc", rng.randint(1, 2))
            if typed:
                branch["type"] = "object"
            branches.append(branch)
        return branches

    def document(self) -> dict:
        """A schema object with a ``$defs`` entry that may recurse."""
        while True:
            schema = self.schema(self.rng.randint(1, 4))
            if isinstance(schema, dict):
                break
        recursive = [{"anyOf": [{"type": "integer"}, {"type": "array", "items": {"$ref": "#/$defs/r"}}]},
                     {"type": "object", "properties": {"a": {"$ref": "#/$defs/r"}, "b": {"type": "integer"}}}]
        schema["$defs"] = {"r": self.rng.choice(recursive + [self.leaf()])}
        return schema


def _constants(node):
    """Every const/enum value in a schema, to be tried as values (and reordered)."""
    if isinstance(node, dict):
        if "const" in node:
            yield node["const"]
        if isinstance(node.get("enum"), list):
            yield from node["enum"]
        for value in node.values():
            yield from _constants(value)
    elif isinstance(node, list):
        for value in node:
            yield from _constants(value)


def _values(gen: Generator, schema: dict, count: int) -> list:
    values = [gen.value(3) for _ in range(count)]
    for const in list(_constants(schema)):
        values += [const, [const], {"a": const}, {"b": const, "a": const}]
        if isinstance(const, dict) and len(const) > 1:
            values.append(dict(reversed(list(const.items()))))
    return values


def _compile(schema: dict, seconds: int):
    """The schema's automaton, or None when it is refused or takes too long."""
    return within_seconds(seconds, lambda: schema_to_dfa(schema, JsonSchemaOptions()).automaton,
                          (SchemaError, RegexError))


def _sound(dfa, schema, values, validator) -> list[str]:
    wrong = []
    for value in values:
        for text in {json.dumps(value, ensure_ascii=False), json.dumps(value, indent=1, ensure_ascii=False)}:
            if dfa.matches(text.encode()) and not validator.is_valid(value):
                wrong.append(text.replace("\n", " "))
    return wrong


def _complete(dfa, schema, values, validator) -> list[str]:
    wrong = []
    for value in values:
        if not validator.is_valid(value):
            continue
        try:
            text = json_schema_instance_text(value, schema)
        except Unserialisable:
            continue
        if not _PLAIN_LIMITS.search(text) and not dfa.matches(text.encode()):
            wrong.append(text)
    return wrong


def _documented_order(schema, text: str) -> bool:
    """Whether a refused valid text may be one of the documented member orders the
    instance writer does not know: the items a ``contains`` does not count keep its
    slots first, and a dependency writes its key before the names it requires."""
    written = json.dumps(schema)
    return "{" in text and any(k in written for k in ('"contains"', '"dependentRequired"', '"dependentSchemas"',
                                                       '"dependencies"'))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mode", choices=("sound", "complete"), default="sound")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--count", type=int, default=1000, help="schemas to draw")
    parser.add_argument("--timeout", type=int, default=20, help="seconds per compile")
    args = parser.parse_args(argv)

    gen = Generator(args.seed)
    check = _sound if args.mode == "sound" else _complete
    failures = skipped = ordered = 0
    for _ in range(args.count):
        schema = gen.document()
        values = _values(gen, schema, 40)
        dfa = _compile(schema, args.timeout)
        if dfa is None:
            skipped += 1
            continue
        validator = jsonschema.Draft202012Validator(schema, format_checker=jsonschema.Draft202012Validator.FORMAT_CHECKER)
        for text in check(dfa, schema, values, validator):
            if args.mode == "complete" and _documented_order(schema, text):
                ordered += 1
                continue
            failures += 1
            print(f"{json.dumps(schema)} | {text}", flush=True)
    order_note = f", {ordered} refused texts left as documented member orders" if args.mode == "complete" else ""
    print(f"{args.mode}, seed {args.seed}: {args.count} schemas ({skipped} refused or too slow), "
          f"{failures} failures{order_note}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
