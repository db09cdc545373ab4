"""Loading a JSON Schema document and resolving ``$ref`` inside it.

Every sub-schema is addressed by a :class:`Loc`: the node, the JSON pointer that
reaches it from the root (for error messages) and the base URI in force there
(``$id`` / draft-4 ``id`` change it), so relative references resolve the way the
spec says.  All ``$id``\\ s, ``$anchor``\\ s and pointers of the document are
indexed once.  References outside the document resolve into the ``resources`` the
caller gives, and into the published meta-schemas and vocabularies of every draft
(``jsonschema`` ships them: a schema may describe a schema, ``{"$ref":
"http://json-schema.org/draft-07/schema#"}``); others are an error.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Iterable, Mapping
from urllib.parse import unquote

from ...errors import SchemaError

__all__ = ["Loc", "SchemaDocument", "load_schema", "DRAFTS"]

DRAFTS = {"draft-03": 4, "draft-04": 4, "draft-06": 6, "draft-07": 7, "2019-09": 2019, "2020-12": 2020}
_ROOT_BASE = "https://constrain.invalid/root.json"  # the base of a document without an $id
# Keywords whose values are schemas, maps of schemas or lists of schemas: where $id/$anchor may hide.
_SCHEMA_VALUED = {"additionalProperties", "additionalItems", "contains", "not", "if", "then", "else",
                  "propertyNames", "unevaluatedProperties", "unevaluatedItems", "contentSchema"}
_SCHEMA_MAPS = {"properties", "patternProperties", "$defs", "definitions", "dependentSchemas", "dependencies"}
_SCHEMA_LISTS = {"allOf", "anyOf", "oneOf", "prefixItems"}
_REFERENCES = ("$ref", "$dynamicRef", "$recursiveRef")
_DEFINITIONS = ("$defs", "definitions")


_FROM_2019 = frozenset({"dependentRequired", "dependentSchemas", "unevaluatedProperties", "unevaluatedItems",
                        "minContains", "maxContains", "prefixItems"})
#: The keywords a draft does not define yet: its validators ignore them, and so does
#: the compiler (``{"$schema": "...draft-04...", "if": ...}`` constrains nothing;
#: ``jsonschema``'s ``Draft4Validator`` accepts what the ``then`` would refuse).
LATER_KEYWORDS = {
    4: frozenset({"const", "contains", "propertyNames", "if", "then", "else"}) | _FROM_2019,
    6: frozenset({"if", "then", "else"}) | _FROM_2019,
    7: _FROM_2019,
    2019: frozenset({"prefixItems"}),
}


@dataclass(frozen=True)
class Loc:
    """A sub-schema with where it is: ``pointer`` from the root and the base URI in force.

    ``node`` is the schema object as its draft reads it: without the keywords of
    later drafts (:data:`LATER_KEYWORDS`); ``raw`` is the object as written, which
    JSON pointers walk.
    """

    node: Any
    pointer: str
    base: str
    draft: int = 2020
    raw: Any = field(default=None, repr=False, compare=False)

    def __post_init__(self) -> None:
        node = self.node
        if self.raw is None:
            object.__setattr__(self, "raw", node)
        later = LATER_KEYWORDS.get(self.draft)
        if later is not None and isinstance(node, dict) and not later.isdisjoint(node):
            object.__setattr__(self, "node", {k: v for k, v in node.items() if k not in later})

    def child(self, *path: str | int) -> "Loc":
        """The sub-schema at ``path`` below this one (keys or list indices)."""
        node = self.raw
        pointer = self.pointer
        for part in path:
            node = node[part]
            pointer += "/" + pointer_part(part)
        return Loc(node, pointer, base_of(node, self.base, self.draft), self.draft)

    def later_keywords(self) -> list[str]:
        """The keywords written here that this draft does not define (ignored)."""
        if self.raw is self.node or not isinstance(self.raw, dict):
            return []
        return [k for k in self.raw if k not in self.node]

    @property
    def key(self) -> str:
        """Which sub-schema this is, whatever reference reached it: ``base#pointer``."""
        return self.base + "#" + self.pointer

    def error(self, message: str, *keys: str) -> SchemaError:
        pointer = self.pointer + "".join("/" + k for k in keys)
        return SchemaError(message, pointer or "#")


# RFC 3986, appendix B: scheme, authority (None when absent), path, query, fragment.
_URI_PARTS = re.compile(r"^(?:([^:/?#]+):)?(?://([^/?#]*))?([^?#]*)(?:\?([^#]*))?(?:#(.*))?$", re.S)


def resolve_uri(base: str, ref: str) -> str:
    """``ref`` resolved against ``base`` as RFC 3986 section 5.2 says, for any scheme.

    ``urllib.parse.urljoin`` only resolves schemes it lists as hierarchical, so a
    schema whose ``$id`` is ``classpath:///a.json`` or ``tag:...`` would lose its
    document for ``$ref: "#/definitions/x"``; identifiers are just names here.
    """
    scheme, authority, path, query, fragment = _URI_PARTS.match(ref).groups()
    if scheme is None:
        b_scheme, b_authority, b_path, b_query, _ = _URI_PARTS.match(base).groups()
        scheme = b_scheme
        if authority is None:
            if path == "":
                path, query = b_path, query if query is not None else b_query
            elif not path.startswith("/"):
                path = _merge_paths(b_authority, b_path, path)
            authority = b_authority
    path = _remove_dot_segments(path)
    return ((scheme + ":" if scheme is not None else "") + ("//" + authority if authority is not None else "")
            + path + ("?" + query if query is not None else "") + ("#" + fragment if fragment is not None else ""))


def split_fragment(uri: str) -> tuple[str, str]:
    """``(uri without its fragment, fragment)``; unlike ``urldefrag`` it keeps ``scheme:///``."""
    url, _, fragment = uri.partition("#")
    return url, fragment


def _merge_paths(base_authority: str | None, base_path: str, path: str) -> str:
    if base_authority is not None and base_path == "":
        return "/" + path
    return base_path[: base_path.rfind("/") + 1] + path


def _remove_dot_segments(path: str) -> str:
    """RFC 3986 section 5.2.4, by segments: "." dropped, ".." drops the one before."""
    if "." not in path:
        return path
    out: list[str] = []
    segments = path.split("/")
    for index, segment in enumerate(segments):
        last = index == len(segments) - 1
        if segment == ".":
            if last:
                out.append("")
        elif segment == "..":
            if len(out) > 1 or (out and out[0] != ""):
                out.pop()
            if last:
                out.append("")
        else:
            out.append(segment)
    result = "/".join(out)
    return "/" + result if path.startswith("/") and not result.startswith("/") else result


def pointer_part(part: str | int) -> str:
    """A key or index as one JSON pointer part (RFC 6901: ``~`` and ``/`` escaped)."""
    return str(part).replace("~", "~0").replace("/", "~1")


def base_of(node: Any, parent_base: str, draft: int) -> str:
    """The base URI inside ``node``: its ``$id`` (or draft-4 ``id``) resolved against the parent's."""
    if isinstance(node, dict):
        ident = node.get("$id") if draft > 7 or "$ref" not in node else None  # draft <= 7: $ref hides siblings
        if not isinstance(ident, str):
            ident = node.get("id") if isinstance(node.get("id"), str) and "$ref" not in node else None
        if isinstance(ident, str) and not ident.startswith("#"):
            return split_fragment(resolve_uri(parent_base, ident))[0] or parent_base
    return parent_base


def load_schema(schema: Any) -> Any:
    """A schema given as a dict/bool, JSON text, or a pydantic model class, as a JSON value."""
    if isinstance(schema, (dict, bool)):
        return schema
    if isinstance(schema, (str, bytes)):
        try:
            value = json.loads(schema)
        except json.JSONDecodeError as err:
            raise SchemaError(f"the schema is not valid JSON: {err.msg} at line {err.lineno} column {err.colno}") from None
        if not isinstance(value, (dict, bool)):
            raise SchemaError(f"a schema must be an object or a boolean, got {type(value).__name__}")
        return value
    if isinstance(schema, type) and hasattr(schema, "model_json_schema"):
        return schema.model_json_schema()
    raise SchemaError(f"a schema must be a dict, JSON text or a pydantic model class, got {type(schema).__name__}")


def readable_key(key: str) -> str:
    """A sub-schema's key (base URI and fragment) as a message names it: within a document
    without an ``$id``, the fragment alone (``#/$defs/node``)."""
    return key[len(_ROOT_BASE):] if key.startswith(_ROOT_BASE + "#") else key


class SchemaDocument:
    """The root schema, its draft, and an index of every addressable sub-schema."""

    def __init__(self, root: Any, resources: Mapping[str, Any] | None = None) -> None:
        self.root = root
        self.draft = _draft_of(root)
        self.index: dict[str, Loc] = {}
        #: Every ``$dynamicAnchor`` by name, and the resources whose root says
        #: ``$recursiveAnchor: true``: where dynamic references may land.
        self.dynamic_anchors: dict[str, list[Loc]] = {}
        self.recursive_anchors: list[Loc] = []
        #: What the compile should say: keywords ignored because their draft does not
        #: define them, references resolved against the root instead of their base.
        self.notes: list[str] = []
        #: Every reference (where, which keyword) and every resource embedded in another
        #: (outer base, inner base): the ways evaluation enters a resource (:meth:`_scopes`).
        self._references: list[tuple[Loc, str]] = []
        self._embedded: set[tuple[str, str]] = set()
        base = base_of(root, _ROOT_BASE, self.draft)
        self.root_loc = Loc(root, "", base, self.draft)
        self._register(self.root_loc, is_root=True)
        for uri, document in (resources or {}).items():  # other documents $ref may point into
            if not isinstance(uri, str) or not isinstance(document, (dict, bool)):
                raise SchemaError(f"resources must map URIs to schemas, got {uri!r}: {type(document).__name__}")
            self._add_document(split_fragment(uri)[0], document)
        self._add_meta_schemas()

    def _add_document(self, url: str, document: Any) -> None:
        """Index ``document`` as the one at ``url`` (and at its own ``$id``).  Its pointers
        begin with ``url#``, so that errors inside it name the document."""
        draft = _draft_of(document) if isinstance(document, dict) and "$schema" in document else self.draft
        loc = Loc(document, url + "#", base_of(document, url, draft), draft)
        self.index.setdefault(url + "#", loc)
        self._register(loc, is_root=True)

    def _add_meta_schemas(self) -> None:
        """Index the published meta-schemas that references name and the document lacks,
        and those they name in turn (the 2020-12 schema's vocabularies)."""
        done = 0
        while done < len(self._references):
            loc, keyword = self._references[done]
            done += 1
            ref = loc.node.get(keyword) if isinstance(loc.node, dict) else None
            if isinstance(ref, str):
                url = split_fragment(resolve_uri(loc.base, ref))[0]
                if url + "#" not in self.index:
                    document = meta_schema(url)
                    if document is not None:
                        self._add_document(url, document)

    def resolve(self, loc: Loc, ref: str, keyword: str = "$ref") -> Loc:
        """The sub-schema a reference found at ``loc`` points to (dynamic references as
        :meth:`_resolve_dynamic` and :meth:`_resolve_recursive` settle them)."""
        if keyword == "$dynamicRef":
            return self._resolve_dynamic(loc, ref)
        if keyword == "$recursiveRef":
            return self._resolve_recursive(loc, ref)
        return self._resolve_static(loc, ref, keyword)

    def _resolve_dynamic(self, loc: Loc, ref: str) -> Loc:
        """A ``$dynamicRef``, where the value's dynamic scope cannot change its target.

        It lands where ``$ref`` would, unless that is a ``$dynamicAnchor`` of the
        fragment's name: then on the outermost schema resource in the dynamic scope with
        such an anchor.  Every evaluation starts at the document root, so the root's
        resource is the outermost of every scope: where it holds the anchor, that is the
        target, whatever the path.  Where one resource alone holds it, the target is
        that one too.  Otherwise the target depends on the path that reached the
        reference, which the grammar does not follow: refused.
        """
        initial = self._resolve_static(loc, ref, "$dynamicRef")
        fragment = split_fragment(resolve_uri(loc.base, ref))[1]
        if not isinstance(initial.node, dict) or initial.node.get("$dynamicAnchor") != fragment:
            return initial  # behaves as $ref
        return self._outermost(loc, self.dynamic_anchors.get(fragment, []), initial, "$dynamicRef",
                               f"$dynamicAnchor {fragment!r}")

    def _resolve_recursive(self, loc: Loc, ref: str) -> Loc:
        """A 2019-09 ``$recursiveRef`` (always ``"#"``): the resource root it names, or where
        that root says ``$recursiveAnchor: true``, the outermost resource in the dynamic
        scope whose root says so; settled as :meth:`_resolve_dynamic` settles its case."""
        initial = self._resolve_static(loc, ref, "$recursiveRef")
        if not isinstance(initial.node, dict) or initial.node.get("$recursiveAnchor") is not True:
            return initial
        return self._outermost(loc, self.recursive_anchors, initial, "$recursiveRef", "$recursiveAnchor")

    def _outermost(self, loc: Loc, anchors: list[Loc], initial: Loc, keyword: str, what: str) -> Loc:
        """Of the dynamic ``anchors``, the one every path's outermost scope holds: the root
        resource's, or ``initial`` where one resource alone has such an anchor; else an
        error at ``loc``."""
        at_root = [anchor for anchor in anchors if anchor.base == self.root_loc.base]
        if at_root:
            return at_root[0]
        if len({anchor.base for anchor in anchors}) <= 1:
            return initial
        by_base: dict[str, Loc] = {}
        for anchor in anchors:
            by_base.setdefault(anchor.base, anchor)
        targets = {found.key: found for found in (initial if first is None else by_base[first]
                                                  for first in self._first_anchored(loc.base, by_base))}
        if len(targets) <= 1:  # no path reaches the reference (never evaluated), or every path agrees
            return next(iter(targets.values()), initial)
        raise loc.error(f"{keyword} {loc.node[keyword]!r} resolves to whichever of the {len(anchors)} resources with "
                        f"a {what} the value's path enters first, which the grammar does not track", keyword)

    def _first_anchored(self, target: str, anchored: Mapping[str, Loc]) -> set[str | None]:
        """The first resource of ``anchored`` on each chain of resources evaluation can enter
        from the root to the resource ``target`` (None: a chain with none of them).

        A dynamic scope is that chain, so its outermost anchored resource is one of these;
        where they are all the same resource, so is the reference's target whatever the
        value's path.  The chains are read from every reference and embedded resource
        of the documents (a superset of those evaluation follows: more chains can only
        make the answer less often unique)."""
        edges = self._scopes
        reaches = _reaching(edges, target)
        firsts: set[str | None] = set()
        root = self.root_loc.base
        if root not in reaches:
            return firsts
        todo, seen = [root], {root}
        while todo:
            current = todo.pop()
            if current == target:
                firsts.add(None)
            for after in edges.get(current, ()):
                if after in anchored:
                    if after in reaches:
                        firsts.add(after)
                elif after not in seen and after in reaches:
                    seen.add(after)
                    todo.append(after)
        return firsts

    @cached_property
    def _scopes(self) -> dict[str, set[str]]:
        """The resources evaluation may enter from each resource (by base URI): where its
        references land, and the resources embedded in it (read once: the document is
        whole after ``__init__``)."""
        edges: dict[str, set[str]] = {}
        for outer, inner in self._embedded:
            edges.setdefault(outer, set()).add(inner)
        for loc, keyword in self._references:
            for target in self._landings(loc, keyword):
                if target != loc.base:
                    edges.setdefault(loc.base, set()).add(target)
        return edges

    def _landings(self, loc: Loc, keyword: str) -> set[str]:
        """The resources a reference may land in: its static target's, and for a dynamic
        reference every resource with an anchor of its name."""
        try:
            initial = self._resolve_static(loc, loc.node[keyword], keyword)
        except SchemaError:
            return set()  # an error where it is compiled, if it is
        found = {initial.base}
        if keyword == "$dynamicRef":
            fragment = split_fragment(resolve_uri(loc.base, loc.node[keyword]))[1]
            found.update(anchor.base for anchor in self.dynamic_anchors.get(fragment, []))
        elif keyword == "$recursiveRef":
            found.update(anchor.base for anchor in self.recursive_anchors)
        return found

    def _resolve_static(self, loc: Loc, ref: str, keyword: str) -> Loc:
        """The sub-schema a reference found at ``loc`` names by its URI."""
        if not isinstance(ref, str):
            raise loc.error(f"{keyword} must be a string", keyword)
        target = resolve_uri(loc.base, ref)
        url, fragment = split_fragment(target)
        found = self.index.get(url + "#" + fragment) if not fragment.startswith("/") else None
        if found is not None:
            return found
        doc = self.index.get(url + "#")
        if doc is None:
            raise loc.error(f"unresolvable {keyword} {ref!r}: {url or ref!r} is not part of this document", keyword)
        if fragment == "":
            return doc
        if not fragment.startswith("/"):
            raise loc.error(f"unresolvable {keyword} {ref!r}: no $anchor {fragment!r}", keyword)
        found, missing = self._follow_pointer(doc, unquote(fragment))
        if found is not None:
            return found
        if doc is self.root_loc or not ref.startswith("#"):
            raise loc.error(f"unresolvable {keyword} {ref!r}: nothing at {missing!r}", keyword)
        found, missing_at_root = self._follow_pointer(self.root_loc, unquote(fragment))
        if found is None:
            raise loc.error(f"unresolvable {keyword} {ref!r}: nothing at {missing!r} under the $id at "
                            f"{doc.pointer or '#'} (the base in force), nor at {missing_at_root!r} from the "
                            "document root", keyword)
        # A fragment-only reference under an embedded $id (draft-4 "id": "/source")
        # that only makes sense from the document root: the author's evident target.
        note = (f"{loc.pointer}/{keyword}: {ref!r} is not found under the $id at {doc.pointer or '#'}, the base "
                "in force there; resolved against the document root instead")
        if note not in self.notes:
            self.notes.append(note)
        return found

    @staticmethod
    def _follow_pointer(doc: Loc, fragment: str) -> tuple[Loc | None, str]:
        """The sub-schema the JSON pointer ``fragment`` names below ``doc``, or None and
        the first part that names nothing there."""
        current = doc
        for raw in fragment.split("/")[1:]:
            part = raw.replace("~1", "/").replace("~0", "~")
            node = current.raw
            if isinstance(node, dict) and part in node:
                current = current.child(part)
            elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
                current = current.child(int(part))
            else:
                return None, part
        return current, ""

    def _register(self, loc: Loc, is_root: bool = False) -> None:
        node = loc.node
        if not isinstance(node, dict):
            return
        for keyword in loc.later_keywords():
            self.notes.append(f"{loc.pointer or '#'}/{keyword}: not a keyword of {_DRAFT_NAMES[loc.draft]} "
                                "(the schema's $schema), so it is ignored, as that draft's validators do")
        self.index.setdefault(loc.base + "#", loc) if (is_root or _declares_id(node)) else None
        for anchor in (node.get("$anchor"), node.get("$dynamicAnchor")):  # a dynamic anchor is an anchor too
            if isinstance(anchor, str):
                self.index.setdefault(loc.base + "#" + anchor, loc)
        if isinstance(node.get("$dynamicAnchor"), str):
            self.dynamic_anchors.setdefault(node["$dynamicAnchor"], []).append(loc)
        if node.get("$recursiveAnchor") is True and (is_root or _declares_id(node)):
            self.recursive_anchors.append(loc)
        ident = node.get("$id") if isinstance(node.get("$id"), str) else node.get("id")
        if isinstance(ident, str) and ident.startswith("#") and len(ident) > 1:  # draft-4/6/7 plain-name ids
            self.index.setdefault(resolve_uri(loc.base, ident), loc)
        self._references.extend((loc, keyword) for keyword in _REFERENCES if keyword in node)
        for key, child in _children(loc):
            if child.base != loc.base and key not in _DEFINITIONS:  # definitions are entered by reference
                self._embedded.add((loc.base, child.base))
            self._register(child)


def _children(loc: Loc) -> Iterable[tuple[str, Loc]]:
    """The sub-schemas directly below ``loc`` (where ``$id``, ``$anchor`` and references may
    be), each with the keyword it is under."""
    for key, value in loc.node.items():
        if key in ("enum", "const", "examples", "default"):
            continue
        if key in _SCHEMA_VALUED or key == "items":
            if isinstance(value, list):
                for i in range(len(value)):
                    yield key, loc.child(key, i)
            else:
                yield key, loc.child(key)
        elif key in _SCHEMA_MAPS and isinstance(value, dict):
            for name in value:
                yield key, loc.child(key, name)
        elif key in _SCHEMA_LISTS and isinstance(value, list):
            for i in range(len(value)):
                yield key, loc.child(key, i)


def _reaching(edges: Mapping[str, set[str]], target: str) -> set[str]:
    """The resources from which ``edges`` lead to ``target`` (itself included)."""
    back: dict[str, set[str]] = {}
    for source, targets in edges.items():
        for after in targets:
            back.setdefault(after, set()).add(source)
    found, todo = {target}, [target]
    while todo:
        for before in back.get(todo.pop(), ()):
            if before not in found:
                found.add(before)
                todo.append(before)
    return found


def meta_schema(url: str) -> Any | None:
    """The published meta-schema or vocabulary at ``url`` (json-schema.org, either scheme),
    as ``jsonschema`` ships them, or None."""
    if "json-schema.org/" not in url:
        return None
    from jsonschema_specifications import REGISTRY  # installed with jsonschema (a dependency, >= 4.20)

    scheme, _, rest = url.partition("://")
    for candidate in (url, ("https" if scheme == "http" else "http") + "://" + rest):
        try:
            return REGISTRY.contents(candidate)
        except LookupError:
            continue
    return None


def _declares_id(node: dict) -> bool:
    ident = node.get("$id", node.get("id"))
    return isinstance(ident, str) and not ident.startswith("#")


_DRAFT_NAMES = {draft: name for name, draft in DRAFTS.items() if name != "draft-03"}  # read as draft-04


def _draft_of(root: Any) -> int:
    if isinstance(root, dict) and isinstance(root.get("$schema"), str):
        for marker, draft in DRAFTS.items():
            if marker in root["$schema"]:
                return draft
    return 2020
