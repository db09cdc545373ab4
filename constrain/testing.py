"""Independent oracles for tests and benchmarks.

Nothing here uses the engine's automata: the regex oracle asks the third-party
``regex`` module (partial matching) whether ``prefix + bytes(token)`` can still be
extended to a full match, token by token over the whole vocabulary.  It is slow
(about 1.5 µs per token) and exact, which is what a test of exactness needs.

Tokens that end inside a multi-byte UTF-8 character are decided by trying, as the
missing character, every code point that could change the answer: the ends of the
code point interval the partial bytes allow, and the neighbours of every character
the pattern mentions (a regex can only distinguish characters at those boundaries).
"""

from __future__ import annotations

import functools
import re as _re
from collections import Counter
from collections.abc import Iterable, Sequence

import numpy as np

from .automata.memo import BoundedMemo

__all__ = [
    "ecma_to_python_regex",
    "RegexOracle",
    "bitmask_to_ids",
    "ids_to_bitmask",
    "GrammarOracle",
    "check_masks_along_random_walk",
    "assert_same_masks_along",
    "Unserialisable",
    "value_depth",
    "json_schema_instance_text",
    "force_hypothesis_instances",
    "load_jsonschemabench",
    "sample_jsonschemabench",
    "json_ending_bias",
]

# ECMA-262 classes written out for Python's regex engines.
_ECMA_SPACE = r"\t\n\x0b\x0c\r \xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff"
_ECMA_CLASS = {
    "d": "0-9",
    "w": "A-Za-z0-9_",
    "s": _ECMA_SPACE,
}
_CLASS_BOUNDARIES = [0x30, 0x39, 0x41, 0x5A, 0x5F, 0x61, 0x7A, 0x09, 0x0D, 0x20, 0xA0, 0x1680, 0x2000,
                     0x200A, 0x2028, 0x2029, 0x202F, 0x205F, 0x3000, 0xFEFF, 0x0A, 0x0B, 0x0C]


def ecma_to_python_regex(pattern: str) -> str:
    """Rewrite ``\\d \\w \\s \\D \\W \\S`` and ``.`` to their ECMA-262 meaning for ``regex``.

    A small scanner tracks escapes and character classes; it does not validate.
    """
    out = []
    i = 0
    in_class = False
    while i < len(pattern):
        ch = pattern[i]
        if ch == "\\" and i + 1 < len(pattern):
            esc = pattern[i + 1]
            lower = esc.lower()
            braced = _re.match(r"\\u\{([0-9a-fA-F]+)\}", pattern[i:])
            if braced:
                out.append(f"\\U{int(braced.group(1), 16):08x}")
                i += braced.end()
                continue
            if lower in _ECMA_CLASS and esc.isalpha():
                body = _ECMA_CLASS[lower]
                if in_class:
                    if esc.isupper():
                        raise ValueError("negated class escapes inside a class are not supported by the oracle")
                    out.append(body)
                else:
                    out.append(f"[{'^' if esc.isupper() else ''}{body}]")
            else:
                out.append(pattern[i : i + 2])
            i += 2
            continue
        if in_class:
            if ch == "]":
                in_class = False
            out.append(ch)
        elif ch == "[":
            in_class = True
            out.append(ch)
            if pattern.startswith("^", i + 1):
                out.append("^")
                i += 1
            if pattern.startswith("]", i + 1):
                out.append(r"\]")
                i += 1
        elif ch == ".":
            out.append(r"[^\n\r\u2028\u2029]")
        else:
            out.append(ch)
        i += 1
    return "".join(out)


def _pattern_codepoints(pattern: str) -> set[int]:
    """Every code point the pattern text mentions, literally or as an escape."""
    points = {ord(c) for c in pattern}
    for match in _re.finditer(r"\\u\{([0-9a-fA-F]+)\}|\\u([0-9a-fA-F]{4})|\\x([0-9a-fA-F]{2})", pattern):
        points.add(int(next(g for g in match.groups() if g), 16))
    return points


_UTF8_LENGTH_RANGES = {2: (0x80, 0x7FF), 3: (0x800, 0xFFFF), 4: (0x10000, 0x10FFFF)}


def _incomplete_tail(data: bytes) -> tuple[str, bytes] | None:
    """Split ``data`` into decoded text and an incomplete trailing character.

    Returns None when ``data`` is not valid UTF-8 followed by at most one incomplete
    character.
    """
    for cut in range(0, 4):
        head, tail = data[: len(data) - cut], data[len(data) - cut :]
        try:
            text = head.decode("utf-8")
        except UnicodeDecodeError:
            continue
        return text, tail
    return None


def _tail_candidates(tail: bytes, boundaries: set[int]) -> list[str]:
    """Characters whose UTF-8 encoding starts with ``tail`` and may matter to a regex."""
    lead = tail[0]
    length = 2 if 0xC0 <= lead < 0xE0 else 3 if 0xE0 <= lead < 0xF0 else 4 if 0xF0 <= lead < 0xF8 else 0
    if length == 0 or len(tail) >= length or any(not 0x80 <= b <= 0xBF for b in tail[1:]):
        return []
    lead_bits = {2: 5, 3: 4, 4: 3}[length]
    value = lead & ((1 << lead_bits) - 1)
    for b in tail[1:]:
        value = (value << 6) | (b & 0x3F)
    free = 6 * (length - len(tail))
    lo, hi = value << free, (value << free) | ((1 << free) - 1)
    min_cp, max_cp = _UTF8_LENGTH_RANGES[length]
    lo, hi = max(lo, min_cp), min(hi, max_cp)
    points = {lo, hi, 0xD7FF, 0xE000}
    for b in boundaries:
        points.update((b - 1, b, b + 1))
    out = []
    for cp in sorted(points):
        if lo <= cp <= hi and not 0xD800 <= cp <= 0xDFFF:
            out.append(chr(cp))
    return out


class RegexOracle:
    """Brute-force mask of an ECMA-262 regex (full-match semantics) over a vocabulary.

    Parameters
    ----------
    pattern:
        The ECMA-262 pattern (it is rewritten with :func:`ecma_to_python_regex`).
    token_bytes:
        Bytes of every token id; ids with empty bytes are never allowed.
    eos_token_ids:
        Allowed exactly when the prefix is a full match.
    """

    def __init__(self, pattern: str, token_bytes: Sequence[bytes], eos_token_ids: Iterable[int]) -> None:
        import regex

        self.pattern = pattern
        self.compiled = regex.compile(ecma_to_python_regex(pattern))
        self.token_bytes = token_bytes
        self.eos_token_ids = sorted(set(eos_token_ids))
        self.boundaries = _pattern_codepoints(pattern) | set(_CLASS_BOUNDARIES)

    def is_viable(self, data: bytes) -> bool:
        """True when ``data`` can be extended to a full match."""
        split = _incomplete_tail(data)
        if split is None:
            return False
        text, tail = split
        if not tail:
            return self.compiled.fullmatch(text, partial=True) is not None
        return any(
            self.compiled.fullmatch(text + ch, partial=True) is not None
            for ch in _tail_candidates(tail, self.boundaries)
        )

    def is_complete(self, data: bytes) -> bool:
        """True when ``data`` is a full match."""
        try:
            return self.compiled.fullmatch(data.decode("utf-8")) is not None
        except UnicodeDecodeError:
            return False

    def allowed_ids(self, prefix: bytes, special_ids: Iterable[int] = ()) -> set[int]:
        """Every token id ``t`` with ``prefix + bytes(t)`` viable, plus EOS at full matches."""
        special = set(special_ids) | set(self.eos_token_ids)
        allowed = {
            tid
            for tid, data in enumerate(self.token_bytes)
            if data and tid not in special and self.is_viable(prefix + data)
        }
        if self.is_complete(prefix):
            allowed.update(self.eos_token_ids)
        return allowed


def bitmask_to_ids(bitmask_row, vocab_size: int | None = None) -> np.ndarray:
    """Token ids whose bit is set in one packed int32 row (tensor or array)."""
    row = np.asarray(bitmask_row.cpu() if hasattr(bitmask_row, "cpu") else bitmask_row).astype(np.int32)
    bits = np.unpackbits(row.view(np.uint8), bitorder="little")
    ids = np.nonzero(bits)[0]
    return ids if vocab_size is None else ids[ids < vocab_size]


def ids_to_bitmask(ids: Iterable[int], vocab_size: int) -> np.ndarray:
    """One packed int32 row with the bits of ``ids`` set."""
    bits = np.zeros(((vocab_size + 31) // 32) * 32, dtype=np.uint8)
    bits[list(ids)] = 1
    return np.packbits(bits, bitorder="little").view(np.int32)


@functools.lru_cache(maxsize=None)
def _python_case_class(char: str) -> str:
    """A class of every character below U+10000 that Python's ``re`` matches to ``char``
    under IGNORECASE (decided by ``re`` itself, one call per code point)."""
    probe = _re.compile("(?i)" + _re.escape(char))
    members = [chr(cp) for cp in range(0x10000) if not 0xD800 <= cp <= 0xDFFF and probe.fullmatch(chr(cp))]
    return "[" + "".join(_re.escape(m) for m in members) + "]"


def _oracle_pattern(pattern) -> str:
    """A ``regex``-module pattern for a lark terminal with Python ``re`` semantics.

    The ``regex`` module folds case differently from ``re`` (``ı`` does not match
    ``i``), so case-insensitive literals are spelled out with :func:`_python_case_class`.
    """
    if "i" not in pattern.flags:
        return pattern.to_regexp()
    if type(pattern).__name__ == "PatternStr":
        return "".join(_python_case_class(c) for c in pattern.value)
    return "(?i:" + pattern.value + ")"


class GrammarOracle:
    """Brute-force mask of a Lark grammar under greedy (longest-match) lexing.

    Independent of the engine's automata: terminals are matched with the ``regex``
    module (partial matching; case-sensitive string literals by a table of their
    prefixes) and complete lexemes are fed to lark's own LALR parser.  Lexing
    follows the engine's documented semantics: a lexeme grows while some terminal
    can still match a longer string, ends at the first character that no terminal
    can take, and is then the highest-ranked terminal matching it in full
    (priority, string literals before regexes, name).  Lazy terminals are not
    supported here.

    Grammars that ``%declare _INDENT _DEDENT`` get Python's indentation rules from
    :class:`OracleIndenter`, written apart from the engine's postlexer.
    """

    def __init__(self, grammar_text: str, token_bytes: Sequence[bytes], eos_token_ids: Iterable[int],
                 start: str = "start") -> None:
        import regex
        from lark import Lark

        self.lark = Lark(grammar_text, parser="lalr", lexer="basic", start=start)
        ranked = sorted(self.lark.terminals, key=lambda t: (-t.priority, type(t.pattern).__name__ == "PatternRE", t.name))
        sources = [_oracle_pattern(t.pattern) for t in ranked]
        self.terminals = [(t.name, regex.compile(src)) for t, src in zip(ranked, sources)]
        self.rank = {t.name: i for i, t in enumerate(ranked)}
        literals = {t.name: t.pattern.value for t in ranked
                    if type(t.pattern).__name__ == "PatternStr" and "i" not in t.pattern.flags}
        self.literal_of = {value: name for name, value in reversed(list(literals.items()))}
        self.literal_prefixes: dict[str, list[str]] = {}
        for name, value in literals.items():
            for end in range(1, len(value) + 1):
                self.literal_prefixes.setdefault(value[:end], []).append(name)
        self.patterns = [(name, pattern) for name, pattern in self.terminals if name not in literals]
        self._starts: dict[str, list] = {}
        self.ignored = set(self.lark.ignore_tokens)
        self.token_bytes = token_bytes
        self.eos_token_ids = sorted(set(eos_token_ids))
        # Characters at which a terminal's verdict can change: everything the patterns
        # mention (case classes included), so split multi-byte characters are decided exactly.
        self.boundaries = set(range(0x80)).union(*(_pattern_codepoints(src) for src in sources))
        symbols = {s for state in self.lark.parser.parser.parser.parse_table.states.values() for s in state}
        self.indenter = OracleIndenter(self.lark) if {"_INDENT", "_DEDENT"} <= symbols else None
        #: text before the output: indentation-aware grammars start after a line break
        self.lead = "" if self.indenter is None else "\n"

    # -- lexing ----------------------------------------------------------------
    def _partial(self, text: str) -> list[str]:
        """Terminals that ``text`` is a prefix of (possibly complete).

        A pattern is tried only when its partial match of the first character alone
        succeeds (memoised): a necessary condition, since prefixes of a partial match
        are partial matches.
        """
        first = text[0]
        starts = self._starts.get(first)
        if starts is None:
            starts = self._starts[first] = [(name, pattern) for name, pattern in self.patterns
                                            if pattern.fullmatch(first, partial=True)]
        found = list(self.literal_prefixes.get(text, ()))
        return found + [name for name, pattern in starts if pattern.fullmatch(text, partial=True)]

    def _complete(self, text: str) -> str | None:
        """The highest-ranked terminal matching ``text`` in full."""
        found = [name for name, pattern in self.patterns if pattern.fullmatch(text)]
        if text in self.literal_of:
            found.append(self.literal_of[text])
        return min(found, key=self.rank.__getitem__, default=None)

    def _start(self):
        parser = self.lark.parse_interactive("")
        return parser if self.indenter is None else self.indenter.start(parser)

    def _feed(self, state, name: str, value: str):
        """The parse state after a non-ignored lexeme, or None when the parser rejects it."""
        if self.indenter is not None:
            return self.indenter.feed(state, name, value)
        return _shift(state, name, value)

    def _lex(self, text: str, parser, start: int):
        """Greedily lex ``text[start:]`` feeding lark; returns (parser, remainder start) or None."""
        pos, end = start, start
        while end < len(text):
            if self._partial(text[pos : end + 1]):
                end += 1
                continue
            name = self._complete(text[pos:end]) if end > pos else None
            if name is None:
                return None
            if name not in self.ignored:
                parser = self._feed(parser, name, text[pos:end])
                if parser is None:
                    return None
            pos = end
        return parser, pos

    def _remainder_ok(self, parser, remainder: str) -> bool:
        if not remainder:
            return True
        names = self._partial(remainder)
        if self.indenter is not None:
            return any(name in self.ignored or self.indenter.can_follow(parser, name) for name in names)
        accepts = _accepts(parser)
        return any(name in self.ignored or name in accepts for name in names)

    def is_viable_text(self, text: str, base=None) -> bool:
        """Viability of ``text``; ``base`` = (parser, pos) from lexing a prefix of it (its
        completed lexemes are final under greedy lexing, so only the rest is re-lexed)."""
        parser, start = base if base is not None else (self._start(), 0)
        lexed = self._lex(text, parser, start)
        return lexed is not None and self._remainder_ok(lexed[0], text[lexed[1]:])

    def is_viable(self, data: bytes, base=None) -> bool:
        split = _incomplete_tail(data)
        if split is None:
            return False
        text, tail = split
        text = self.lead + text
        if not tail:
            return self.is_viable_text(text, base)
        return any(self.is_viable_text(text + ch, base) for ch in _tail_candidates(tail, self.boundaries))

    def is_complete(self, data: bytes) -> bool:
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            return False
        if self.indenter is not None:
            text = self.lead + text + "\n"  # the end of input counts as one more line break
        lexed = self._lex(text, self._start(), 0)
        if lexed is None:
            return False
        parser, pos = lexed
        remainder = text[pos:]
        if remainder:
            name = self._complete(remainder)
            if name is None:
                return False
            if name not in self.ignored:
                parser = self._feed(parser, name, remainder)
                if parser is None:
                    return False
        if self.indenter is not None:
            return self.indenter.at_end(parser)
        return "$END" in _accepts(parser)

    def allowed_ids(self, prefix: bytes, special_ids: Iterable[int] = ()) -> set[int]:
        """Every token id ``t`` with ``prefix + bytes(t)`` viable, plus EOS when complete."""
        special = set(special_ids) | set(self.eos_token_ids)
        base = None
        try:
            prefix_text = prefix.decode("utf-8")
        except UnicodeDecodeError:
            prefix_text = None
        if prefix_text is not None:
            base = self._lex(self.lead + prefix_text, self._start(), 0)
            if base is None:
                return set()
        allowed = {tid for tid, data in enumerate(self.token_bytes)
                   if data and tid not in special and self.is_viable(prefix + data, base)}
        if self.is_complete(prefix):
            allowed.update(self.eos_token_ids)
        return allowed


#: ``_parser_key -> (parse table, accepts)``; holding the table keeps its id from being reused.
_ACCEPTS_MEMO = BoundedMemo(1 << 16)


def _parser_key(parser) -> tuple:
    """What decides an interactive lark parser's future: its tables and its state stack."""
    state = parser.parser_state
    return id(state.parse_conf.parse_table), tuple(state.state_stack)


def _accepts(parser) -> frozenset[str]:
    """lark's ``parser.accepts()`` (one parser copy per terminal), memoised by :func:`_parser_key`."""
    key = _parser_key(parser)
    found = _ACCEPTS_MEMO.get(key)
    if found is None:
        found = _ACCEPTS_MEMO.remember(key, (parser.parser_state.parse_conf.parse_table, frozenset(parser.accepts())))
    return found[1]


#: ``(_parser_key, terminal name) -> (parse table, parser after it)``.
_SHIFT_MEMO = BoundedMemo(1 << 16)


def _shift(parser, name: str, value: str = ""):
    """A copy of lark's interactive ``parser`` after ``Token(name, value)``, or None.

    Memoised by :func:`_parser_key` and ``name`` (the value does not steer an LALR
    parser); the results are never fed in place, so sharing them is safe.
    """
    from lark import Token
    from lark.exceptions import UnexpectedInput

    key = (_parser_key(parser), name)
    if key in _SHIFT_MEMO:
        return _SHIFT_MEMO[key][1]
    result = parser.copy()
    try:
        result.feed_token(Token(name, value))
    except UnexpectedInput:
        result = None
    _SHIFT_MEMO.remember(key, (parser.parser_state.parse_conf.parse_table, result))
    return result


class OracleIndenter:
    """Python's indentation rules for :class:`GrammarOracle`, over lark's interactive parser.

    A ``_NEWLINE`` lexeme outside brackets becomes ``_NEWLINE`` then ``_INDENT`` or
    ``_DEDENT`` tokens by the indentation (in spaces) of the line it ends on; inside
    brackets it is dropped.  A line with code indented by a tab or form feed, or
    deeper than ``max_column`` outside brackets, is an error.  States are
    ``(parser, open brackets, indentation stack)``.
    """

    def __init__(self, lark, max_column: int = 80) -> None:
        self.max_column = max_column
        self.bracket = {t.name: (1 if t.pattern.value in "([{" else -1) for t in lark.terminals
                        if type(t.pattern).__name__ == "PatternStr" and t.pattern.value in ("(", "[", "{", ")", "]", "}")}
        self._column_fits: dict[tuple, bool] = {}

    def start(self, parser):
        return (parser, 0, (0,))

    def feed(self, state, name: str, value: str):
        parser, paren, indents = state
        if name != "_NEWLINE":
            paren += self.bracket.get(name, 0)
            parser = _shift(parser, name, value) if paren >= 0 else None
            return None if parser is None else (parser, paren, indents)
        if paren:
            return state
        last_line = value[value.rfind("\n") + 1:]
        if last_line.strip(" "):
            return None  # a tab or form feed in the indentation of a line with code
        return self._newline(parser, indents, len(last_line))

    def _newline(self, parser, indents: tuple, column: int):
        parser = _shift(parser, "_NEWLINE", "\n")
        if parser is None:
            return None
        if column > indents[-1]:
            parser = _shift(parser, "_INDENT") if column <= self.max_column else None
            return None if parser is None else (parser, 0, indents + (column,))
        while column < indents[-1]:
            parser, indents = _shift(parser, "_DEDENT"), indents[:-1]
            if parser is None:
                return None
        return (parser, 0, indents) if column == indents[-1] else None

    def can_follow(self, state, name: str) -> bool:
        """Whether a lexeme of terminal ``name``, still growing, can come next."""
        parser, paren, indents = state
        if name != "_NEWLINE":
            return name in _accepts(parser) and (paren > 0 or self.bracket.get(name, 0) >= 0)
        # A further line break can always follow, so the column is still open.
        if paren:
            return True
        key = (_parser_key(parser), indents)
        if key not in self._column_fits:
            self._column_fits[key] = any(self._newline(parser, indents, c) is not None
                                         for c in range(self.max_column + 1))
        return self._column_fits[key]

    def at_end(self, state) -> bool:
        parser, paren, _ = state
        return paren == 0 and "$END" in _accepts(parser)


def check_masks_along_random_walk(matcher, oracle, info, steps: int, seed: int, start: bytes = b"") -> str | None:
    """Walk ``steps`` random allowed tokens, comparing the mask with ``oracle`` at each step.

    The walk begins after the bytes ``start`` (fed to ``matcher`` here), so that tests
    can reach states a random walk rarely finds, such as nested indentation.

    ``oracle`` has ``allowed_ids(prefix_bytes, special_ids)`` (:class:`RegexOracle`,
    :class:`GrammarOracle`).  Returns a description of the first mismatch, or None.
    At the end, a token the mask forbids must be refused without changing the state.
    """
    import random

    bitmask = np.zeros((1, (info.vocab_size + 31) // 32), dtype=np.int32)
    rng = random.Random(seed)
    prefix = start
    if start and not matcher.accept_bytes(start):
        return f"start {start!r} refused"

    def describe(ids):
        return [info.token_bytes[i] if i < info.num_tokens else i for i in sorted(ids)[:5]]

    for step in range(steps + 1):
        matcher.fill_next_token_bitmask(bitmask)
        got = set(bitmask_to_ids(bitmask[0]).tolist())
        want = oracle.allowed_ids(prefix, info.special_token_ids)
        if got != want:
            return (f"mask differs at prefix {prefix!r} (step {step}): wrongly allowed {describe(got - want)}, "
                    f"wrongly blocked {describe(want - got)}")
        text_ids = sorted(t for t in got if t not in info.eos_token_ids)
        if not text_ids or step == steps:
            break
        token = rng.choice(text_ids)
        if not matcher.accept_token(token):
            return f"token {info.token_bytes[token]!r} allowed by the mask but refused at {prefix!r}"
        prefix += info.token_bytes[token]
    forbidden = next(t for t in range(info.num_tokens) if t not in got)
    before = matcher.num_steps
    if matcher.accept_token(forbidden) or matcher.num_steps != before:
        return f"forbidden token {info.token_bytes[forbidden]!r} accepted at {prefix!r}"
    return None


def assert_same_masks_along(matchers, pieces: Sequence[str]) -> None:
    """Feed every piece to every matcher; before each, all matchers must fill the same mask.

    For grammars compiled several ways (fresh, loaded from the disk cache, rebuilt
    from a corrupt entry) that must behave identically.
    """
    width = (matchers[0].compiled.tokenizer_info.vocab_size + 31) // 32
    for piece in pieces:
        masks = []
        for matcher in matchers:
            bitmask = np.zeros((1, width), np.int32)
            matcher.fill_next_token_bitmask(bitmask)
            masks.append(bitmask)
            assert matcher.accept_bytes(piece), piece
        assert all(np.array_equal(masks[0], mask) for mask in masks[1:]), piece


def stdlib_python_files(include_tests: bool = True) -> list[str]:
    """Paths of the running interpreter's standard-library ``.py`` files, sorted.

    ``site-packages`` is left out (third-party code); ``include_tests=False`` also
    leaves out the test packages (``test/``, ``tests/``, ``idle_test/``), which hold
    deliberately invalid files such as ``badsyntax_*.py``.
    """
    import os
    import sysconfig

    root = sysconfig.get_paths()["stdlib"]
    found = []
    for folder, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d != "site-packages" and d != "__pycache__"
                         and (include_tests or d not in ("test", "tests", "idle_test")))
        found.extend(os.path.join(folder, name) for name in files if name.endswith(".py"))
    return sorted(found)


def force_tokens(matcher, token_ids: Sequence[int], eos_token_id: int) -> int | None:
    """Feed ``token_ids`` then EOS with ``accept_token``; the index of the first refused
    token (``len(token_ids)`` for EOS), or None when all are accepted."""
    for index, token in enumerate(token_ids):
        if not matcher.accept_token(token):
            return index
    return None if matcher.accept_token(eos_token_id) else len(token_ids)
# -- JSON Schema helpers ------------------------------------------------------------------------------------------

class Unserialisable(Exception):
    """A valid instance the compiled grammar does not write, by a documented limit (the reason)."""


_COMBINATORS = ("anyOf", "oneOf", "if", "dependentSchemas", "dependencies", "not")
# Keywords that make a position more than a free-form value ($ref and allOf only
# through the schemas they bring, which are views of their own).
_STRUCTURAL = {"type", "properties", "patternProperties", "additionalProperties", "items", "prefixItems",
               "additionalItems", "enum", "const", "required", "contains", "propertyNames",
               "minProperties", "maxProperties", "minItems", "maxItems", "format", "pattern", "minLength",
               "maxLength", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf",
               *_COMBINATORS}


def value_depth(value) -> int:
    """How many arrays/objects nest in ``value`` (0 for a scalar)."""
    if isinstance(value, dict):
        return 1 + max(map(value_depth, value.values()), default=0)
    if isinstance(value, list):
        return 1 + max(map(value_depth, value), default=0)
    return 0


class _InstanceWriter:
    """Writes a valid instance as ``compile_json_schema`` documents its language:
    ``json.dumps(..., ensure_ascii=False)`` with every object's keys in schema order
    (the ``properties`` orders of the ``$ref`` target, the ``allOf`` branches and the
    schema itself, in the order the schema writes them (``absorption_order``), merged
    by ``merge_orders``, then other ``required`` names in order of first mention, then the
    names ``dependentRequired`` involves (each key before the names it requires), then the
    rest as given).
    Raises :class:`Unserialisable` where the documented language has no text for the value."""

    def __init__(self, schema, max_recursion: int, max_any_depth: int | None) -> None:
        self.root = schema
        self.max_recursion = max_recursion
        self.max_any_depth = max_any_depth
        draft = str(schema.get("$schema", "")) if isinstance(schema, dict) else ""
        self.ref_overrides = any(d in draft for d in ("draft-03", "draft-04", "draft-06", "draft-07"))

    def resolve(self, ref: str):
        if not ref.startswith("#"):
            raise Unserialisable(f"non-local $ref {ref!r} (the writer follows JSON pointers only)")
        node = self.root
        for part in [p for p in ref[1:].split("/") if p]:
            part = part.replace("~1", "/").replace("~0", "~")
            try:
                node = node[int(part)] if isinstance(node, list) else node[part]
            except (KeyError, IndexError, ValueError, TypeError):
                raise Unserialisable(f"$ref {ref!r} is not a JSON pointer of this document") from None
        return node

    def views(self, node, chain: tuple[str, ...]) -> tuple[list[dict], tuple[str, ...]]:
        """The schema objects in force at one position, in the compiler's merge order."""
        if not isinstance(node, dict):
            return [], chain
        from .grammar.json_schema.spec import absorption_order

        if "$ref" in node and self.ref_overrides:
            return self.ref_views(node["$ref"], chain)
        out: list[dict] = []
        for part in absorption_order(node):
            if part == "$ref" and "$ref" in node:  # $recursiveRef is not followed here
                target, chain = self.ref_views(node["$ref"], chain)
                out += target
            elif part == "allOf":
                for branch in node["allOf"]:
                    more, chain = self.views(branch, chain)
                    out += more
            else:
                out.append(node)
        return out, chain

    def ref_views(self, ref: str, chain: tuple[str, ...]) -> tuple[list[dict], tuple[str, ...]]:
        # Recursion is unrolled only where one DFA must hold the language (and inside the
        # operands of products, which this writer refuses anyway); elsewhere it is exact.
        if self.max_any_depth is not None and chain.count(ref) >= self.max_recursion:
            raise Unserialisable("recursion deeper than max_recursion")
        return self.views(self.resolve(ref), chain + (ref,))

    def write(self, value, node, chain: tuple[str, ...] = ()):
        views, chain = self.views(node, chain)
        if not any(_STRUCTURAL & view.keys() for view in views):
            if self.max_any_depth is not None and value_depth(value) > self.max_any_depth:
                raise Unserialisable("free-form value nested deeper than max_any_depth")
            return value
        if isinstance(value, list) and any("contains" in view for view in views):
            from .grammar.json_schema.callees import OPERAND_ANY_DEPTH

            if value_depth(value) > 1 + OPERAND_ANY_DEPTH:
                raise Unserialisable(f"items of an array with contains nested deeper than {OPERAND_ANY_DEPTH} "
                                    "(expanded for the product)")
        if isinstance(value, (dict, list)) and any(k in view for view in views for k in _COMBINATORS):
            raise Unserialisable("member order depends on which anyOf/oneOf/if/not/dependentSchemas branch applies")
        if isinstance(value, float) and any(k in view for view in views for k in
                                            ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum",
                                             "multipleOf")) and "e" in repr(value):
            raise Unserialisable("bounded number that json.dumps writes with an exponent")
        if isinstance(value, float) and value.is_integer() and any(view.get("type") == "integer" for view in views):
            raise Unserialisable("integer written as a float (integers are canonical)")
        if isinstance(value, str):
            self.check_ecma_patterns(value, [view["pattern"] for view in views if isinstance(view.get("pattern"), str)])
        if isinstance(value, dict):
            for view in views:
                for key in value:
                    self.check_ecma_patterns(key, [p for p in view.get("patternProperties") or {}])
            return self.write_object(value, views, chain)
        if isinstance(value, list):
            return self.write_array(value, views, chain)
        return value

    @staticmethod
    def check_ecma_patterns(text: str, patterns: list[str]) -> None:
        """jsonschema (and hypothesis-jsonschema) search with Python's ``re``, whose ``\\d``,
        ``\\w`` and ``\\s`` are Unicode; the spec's ECMA-262 classes are ASCII."""
        import re

        import regex

        for pattern in patterns:
            try:
                ecma = regex.compile(ecma_to_python_regex(pattern))
            except (regex.error, ValueError):
                continue
            if re.search(pattern, text) and not ecma.search(text):
                raise Unserialisable("matches the pattern only under Python's Unicode classes, not ECMA-262's")

    def write_object(self, value: dict, views: list[dict], chain):
        import re

        from .grammar.json_schema.spec import dependency_names, merge_orders

        order: list[str] = []
        required: dict[str, None] = {}  # in order of first mention
        dependent: dict[str, None] = {}  # dependentRequired's keys, each before the names it requires
        for view in views:  # each further listed order merged in, as allOf/$ref siblings are
            listed = list(view.get("properties") or {})
            order = merge_orders([order, listed])
            required.update(dict.fromkeys(n for n in view.get("required") or () if isinstance(n, str)))
            for key, names in (view.get("dependentRequired") or {}).items():
                dependent.update(dict.fromkeys(dependency_names(key, names)))
        named = set(order)
        order += [name for name in dict.fromkeys([*required, *dependent]) if name not in named]
        out = {}
        for key in [k for k in order if k in value] + [k for k in value if k not in order]:
            children = []
            for view in views:
                if key in (view.get("properties") or {}):
                    children.append(view["properties"][key])
                    continue
                matched = [s for p, s in (view.get("patternProperties") or {}).items() if re.search(p, key)]
                children += matched
                if not matched and "additionalProperties" in view:
                    children.append(view["additionalProperties"])
            out[key] = self.write(value[key], {"allOf": children} if children else True, chain)
        return out

    def write_array(self, value: list, views: list[dict], chain):
        out = []
        for index, item in enumerate(value):
            children = []
            for view in views:
                prefix = view.get("prefixItems")
                items = view.get("items")
                if isinstance(items, list):  # draft 4-7 tuple form
                    prefix, items = items, view.get("additionalItems")
                if prefix is not None and index < len(prefix):
                    children.append(prefix[index])
                elif items is not None:
                    children.append(items)
            out.append(self.write(item, {"allOf": children} if children else True, chain))
        return out


def json_schema_instance_text(value, schema, *, max_recursion: int = 3, max_any_depth: int | None = None) -> str:
    """``value`` (valid against ``schema``) written the way ``compile_json_schema``'s language writes it.

    Raises :class:`Unserialisable`, with the documented limit as its message, for a
    value that language leaves out (recursion or free-form nesting deeper than the
    limits, exponents in bounded numbers, lone surrogates) or whose member order is
    not defined by the schema alone (objects under ``anyOf``/``oneOf``/``if``...).
    """
    import json

    written = _InstanceWriter(schema, max_recursion, max_any_depth).write(value, schema)
    text = json.dumps(written, ensure_ascii=False)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise Unserialisable("a lone surrogate (not UTF-8)") from None
    return text


def force_hypothesis_instances(schema, grammar, tokenizer, eos_token_id: int, examples: int,
                               counts: Counter, rejected: list, label: str = "") -> None:
    """Draw ``examples`` valid instances of ``schema`` with hypothesis-jsonschema, write each
    as the compiled language documents it, and force it through ``grammar`` token by token
    with EOS at the end.  Tallies outcomes into ``counts`` ("accepted", "REJECTED",
    "GENERATOR INVALID" for a drawn value ``jsonschema`` (formats on) refuses, or the
    documented reason an instance has no text) and appends ``(label, text)`` to ``rejected``.

    hypothesis-jsonschema rewrites the schema it is given in place (it inlines ``$ref``
    and re-sorts ``properties``), so it gets a deep copy: the writer must see the schema
    the grammar was compiled from, or it orders members differently from the grammar.
    """
    import copy

    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st
    from hypothesis_jsonschema import from_schema

    import jsonschema

    from .matcher import Matcher

    cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
    validator = cls(schema, format_checker=cls.FORMAT_CHECKER)
    try:
        strategy = from_schema(copy.deepcopy(schema))
    except Exception as err:  # hypothesis-jsonschema refuses some schemas (its own limits)
        counts[f"hypothesis-jsonschema cannot generate: {type(err).__name__}"] += 1
        return

    @settings(max_examples=examples, deadline=None, database=None, derandomize=True,
              suppress_health_check=list(HealthCheck))
    @given(st.data())
    def check(data):
        value = data.draw(strategy)
        if not validator.is_valid(value):  # the generator's own promise, checked rather than trusted
            counts["GENERATOR INVALID"] += 1
            return
        try:
            text = json_schema_instance_text(value, schema)
        except Unserialisable as why:
            counts[f"not written: {why}"] += 1
            return
        # Text that spells a special token ("<|end_of_text|>" in a string) is text here, as a
        # model writes it: encoded without special-token parsing.
        ids = tokenizer.encode(text, add_special_tokens=False, split_special_tokens=True)
        ok = force_tokens(Matcher(grammar), ids, eos_token_id) is None
        counts["accepted" if ok else "REJECTED"] += 1
        if not ok:
            rejected.append((label, text))

    try:
        check()
    except Exception as err:  # hypothesis(-jsonschema) giving up on a hard schema is counted, not fatal
        if not type(err).__module__.startswith("hypothesis"):
            raise
        counts[f"hypothesis gave up: {type(err).__name__}"] += 1


def load_jsonschemabench(folder) -> list[tuple[str, object, list]]:
    """(id, schema, instances) of every row of JSONSchemaBench's ``*.jsonl`` files, in file order."""
    import json
    from pathlib import Path

    rows = []
    for path in sorted(Path(folder).glob("*.jsonl")):
        with open(path, encoding="utf-8") as handle:
            rows += [(row["id"], row["schema"], row.get("instances", [])) for row in map(json.loads, handle)]
    return rows


def sample_jsonschemabench(rows, count: int, seed: int, max_chars: int | None = None):
    """A fixed sample: ``count`` rows drawn with ``seed``, schemas up to ``max_chars`` of JSON text."""
    import json
    import random

    pool = [row for row in rows if max_chars is None or len(json.dumps(row[1])) <= max_chars]
    return random.Random(seed).sample(pool, min(count, len(pool)))


def json_ending_bias(token_bytes, eos_token_ids=(), boost: float = 8.0):
    """A logits processor adding ``boost`` to EOS and to tokens that close a JSON string, array
    or object (only punctuation, digits and spaces, with a quote or a closing bracket), so that a
    tiny random model finishes its values within a few dozen tokens."""
    import torch

    allowed = set(b'"{}[],:0123456789 ')
    ids = [i for i, data in enumerate(token_bytes) if data and set(data) <= allowed and set(data) & set(b'"}]')]
    ids = torch.tensor(sorted(set(ids) | set(eos_token_ids)))

    def processor(input_ids, scores):
        scores = scores.clone()
        scores[:, ids[ids < scores.shape[-1]]] += boost
        return scores

    return processor
