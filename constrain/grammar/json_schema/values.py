"""JSON values as JSON Schema compares, types and matches them (equality keys, ECMA-262
pattern searches, the validator enum values are checked with), apart from any automaton."""

from __future__ import annotations

import json
from decimal import Decimal
from functools import lru_cache
from typing import Any

from ...automata.byte_dfa import ByteDFA, build_byte_dfa
from ...automata.dfa_ops import difference, intersect
from ...errors import EmptyLanguageError, RegexError, SchemaError
from .content import is_json_text
from .document import Loc
from .spec import BASE64_PATTERN, Spec
from .strings import encode_chars, pattern_tree, utf8_chars
from .trees import lit, seq


ALL_TYPES = frozenset(("null", "boolean", "object", "array", "string", "number", "integer"))


def text_value_key(text: bytes) -> str:
    """The same key for texts that are equal as JSON values, as uniqueItems compares
    them: ``1`` and ``1.0`` are one value, ``-0.0`` and ``0`` too, ``true`` and ``1`` two."""
    return json_key(json.loads(text), signed_zero=False)


def json_types(value: Any) -> frozenset[str]:
    """The JSON Schema types a JSON value has (an integral number is an integer too)."""
    if value is None:
        return frozenset(("null",))
    if isinstance(value, bool):
        return frozenset(("boolean",))
    if isinstance(value, (int, float)):
        return frozenset(("number", "integer")) if float(value).is_integer() else frozenset(("number",))
    return frozenset(("string" if isinstance(value, str) else "array" if isinstance(value, list) else "object",))


def narrowed_to(spec: Spec, types: frozenset[str]) -> Spec:
    """``spec`` narrowed to values of ``types``."""
    return spec.without(types=possible_types(spec) & types)


def possible_types(spec: Spec) -> frozenset[str]:
    """Types a value meeting ``spec`` may have: its ``type`` keywords, and its enum values' types."""
    types = ALL_TYPES if spec.types is None else spec.types
    if spec.enums:
        types = types & frozenset().union(*map(json_types, spec.enums[0]))
    return types


def enum_keys(spec: Spec) -> set[str] | None:
    """The enum/const values ``spec`` may take (as equality keys), or None without an enum:
    those every enum lists whose strings match every pattern (``"enum": [kinds...]`` from
    a shared base, narrowed per variant by ``"pattern": "compound"``, is a common tag)."""
    if not spec.enums:
        return None
    keys = set.intersection(*({json_key(v, False) for v in values} for values in spec.enums))
    return {json_key(v, False) for v in spec.enums[0] if json_key(v, False) in keys and _matches_patterns(v, spec)}


def _matches_patterns(value: Any, spec: Spec) -> bool:
    """False only when ``value`` is a string that surely fails one of ``spec``'s patterns."""
    if not isinstance(value, str):
        return True
    for pattern, loc in spec.patterns:
        try:
            if not search_name(pattern, value, loc):
                return False
        except SchemaError:  # the build reports the pattern; here it proves nothing
            continue
    return True


def meets_content(value: Any, spec: Spec) -> bool:
    """Draft 7's content keywords on an enum value, which ``jsonschema`` does not assert:
    base64 (the pattern ``spec._absorb_content`` adds) and a JSON text inside the string."""
    if not isinstance(value, str):
        return True
    if any(pattern == BASE64_PATTERN for pattern, _ in spec.patterns) and not _ecma_search(BASE64_PATTERN, value):
        return False
    return not spec.json_content or is_json_text(value)


def json_key(value: Any, signed_zero: bool = True) -> str:
    """Equality of JSON values as JSON Schema defines it (1 == 1.0, true != 1).

    ``signed_zero`` keeps ``-0.0`` apart from ``0``, which JSON Schema counts equal: an
    enum listing both keeps both spellings that way.  Judging whether two values are
    one (uniqueItems, disjoint branches) passes False."""
    if isinstance(value, bool) or value is None:
        return json.dumps(value)
    if isinstance(value, (int, float)):
        if value == 0 and not signed_zero:
            return "n:0"
        return "n:" + str(Decimal(repr(value)).normalize()) if isinstance(value, float) else "n:" + str(Decimal(value).normalize())
    if isinstance(value, list):
        return "[" + ",".join(json_key(v, signed_zero) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ",".join(json.dumps(k) + ":" + json_key(v, signed_zero) for k, v in sorted(value.items())) + "}"
    return json.dumps(value)


def unique_values(values: list[Any]) -> list[Any]:
    seen, out = set(), []
    for value in values:
        key = json_key(value)
        if key not in seen:
            seen.add(key)
            out.append(value)
    return out


@lru_cache(maxsize=1024)
def _search_dfa(pattern: str) -> ByteDFA | None:
    """The texts holding a match of ``pattern``; None where no text does (``$a``)."""
    try:
        return build_byte_dfa(utf8_chars(pattern_tree(pattern)))
    except EmptyLanguageError:
        return None


def _ecma_search(pattern: str, text: str) -> bool:
    """``pattern`` found in ``text`` with ECMA-262 semantics, as the compiled language
    reads it (Python's ``re`` differs: ``\\d`` is Unicode there, ``\\p{...}`` an error)."""
    dfa = _search_dfa(pattern)
    return dfa is not None and dfa.matches(text.encode("utf-8", "surrogatepass"))


def _ecma_pattern(validator, pattern, instance, schema):
    if validator.is_type(instance, "string") and not _ecma_search(pattern, instance):
        import jsonschema

        yield jsonschema.ValidationError(f"{instance!r} does not match {pattern!r}")


def _ecma_pattern_properties(validator, patterns, instance, schema):
    if not validator.is_type(instance, "object"):
        return
    for pattern, subschema in patterns.items():
        for key, member in instance.items():
            if _ecma_search(pattern, key):
                yield from validator.descend(member, subschema, path=key, schema_path=pattern)


def _ecma_additional_properties(validator, additional, instance, schema):
    if not validator.is_type(instance, "object"):
        return
    listed, patterns = schema.get("properties", {}), schema.get("patternProperties", {})
    extras = [key for key in instance if key not in listed and not any(_ecma_search(p, key) for p in patterns)]
    if validator.is_type(additional, "object"):
        for key in extras:
            yield from validator.descend(instance[key], additional, path=key)
    elif additional is False and extras:
        import jsonschema

        yield jsonschema.ValidationError(f"additional properties are not allowed ({', '.join(map(repr, extras))})")


@lru_cache(maxsize=None)
def ecma_validator_class(cls):
    """``cls`` with ``pattern``, ``patternProperties`` and ``additionalProperties`` (which
    tells extra names by the patterns) searched the ECMA-262 way, so that enum values are
    filtered by the same rules the compiled language applies."""
    import jsonschema

    return jsonschema.validators.extend(cls, {"pattern": _ecma_pattern, "patternProperties": _ecma_pattern_properties,
                                              "additionalProperties": _ecma_additional_properties})


def search_name(pattern: str, name: str, loc: Loc) -> bool:
    """Whether the property name contains a match of the pattern (patternProperties semantics)."""
    try:
        return _ecma_search(pattern, name)
    except RegexError as err:
        raise SchemaError(regex_blame("patternProperties key", pattern, err), loc.pointer) from None


@lru_cache(maxsize=1024)
def _pattern_key_dfa_cached(pattern: str) -> ByteDFA | None:
    try:
        return build_byte_dfa(seq(lit('"'), encode_chars(pattern_tree(pattern)), lit('"')))
    except EmptyLanguageError:
        return None


def pattern_key_dfa(pattern: str, loc: Loc) -> ByteDFA | None:
    """The encoded keys (quotes included) holding a match of ``pattern``; None where no key
    does (such a patternProperties entry applies to no member)."""
    try:
        return _pattern_key_dfa_cached(pattern)
    except RegexError as err:
        raise SchemaError(regex_blame("patternProperties key", pattern, err), loc.pointer) from None


def regex_blame(what: str, pattern: str, err: RegexError) -> str:
    return f"{what} {pattern!r} cannot be compiled (at position {err.position}): {err.reason}"


#: Sets of patternProperties that keys can match together, at most, in one object.
MAX_KEY_CLASSES = 64


def key_classes(keys: ByteDFA, patterns: list[ByteDFA | None], locs: list[Loc]) -> list[tuple[ByteDFA, tuple[int, ...]]]:
    """The keys of ``keys`` split by which ``patterns`` they match (None: a pattern no key
    matches): (keys, indices of the patterns matched) for each non-empty class.

    Each pattern splits every class found so far into the keys it matches and those it
    does not, and empty halves are dropped at once, so the work follows the classes
    that exist rather than all ``2**n`` subsets: patterns that exclude each other
    (``^name:(en|nl)$`` beside a dozen other names) give ``n + 1`` classes.  Keys that
    overlap in more than :data:`MAX_KEY_CLASSES` ways are refused (each class is one
    more value automaton); ``locs`` name the patterns for that error."""
    classes: list[tuple[ByteDFA, tuple[int, ...]]] = [(keys, ())]
    for index, pattern in enumerate(patterns):
        split = []
        for part, matched in classes:
            inside, outside = (intersect(part, pattern), difference(part, pattern)) if pattern is not None else (
                None, part)
            split += [(half, got) for half, got in ((inside, matched + (index,)), (outside, matched)) if half is not None]
        if len(split) > MAX_KEY_CLASSES:
            raise SchemaError(f"patternProperties whose keys overlap in more than {MAX_KEY_CLASSES} ways are not "
                              f"supported (pattern {index + 1} of {len(patterns)})", locs[index].pointer or "#")
        classes = split
    return classes
