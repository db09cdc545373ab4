"""Random ECMA-262 regexes against Python's ``regex`` module: whole matches, live
prefixes, and patterns searched inside JSON strings.

Not a timed benchmark: a reproducible search for wrong languages (like
``fuzz_json_schema.py``), for the regex parser and the byte DFA built from it.  Each
random pattern is written twice, in ECMA-262 syntax for constrain and in ``regex``
syntax with ECMA's meaning spelled out (``\\d`` as ``[0-9]``, ``.`` without the four line
terminators, ``$`` as ``\\Z``, ``\\b`` over ASCII word characters), so the oracle needs no
translation.  Strings are drawn from the pattern itself (so about half match), mutated,
and drawn at random over an alphabet of ASCII, Latin-1, CJK, astral, quote, backslash
and control characters.

- ``--mode full``: ``regex_to_dfa`` (``Compiler.compile_regex``'s language) against
  ``regex.fullmatch``; and every prefix, character by character, is live in the DFA
  exactly when ``regex`` finds a partial match (``partial=True``): the masks' question.
  Patterns hold look-aheads, word boundaries and inner anchors as in search mode
  (``--plain``: not, the full mode's patterns before ``compile_regex`` built them).
- ``--mode search``: the pattern as a JSON Schema ``pattern`` (searched anywhere in the
  string, look-aheads and word boundaries allowed), with ``minLength``/``maxLength``
  one time in three; ``json.dumps(s, ensure_ascii=False)`` must be accepted exactly
  when ``regex.search`` finds the pattern in ``s`` and the length fits.

Usage: ``python benchmarks/fuzz_regex.py --mode full --seed 1 --count 2000`` (about a
minute per 1,000 patterns on the 2-core development box).  Prints each failure as
``PATTERN | STRING | constrain said | regex said`` (an exception other than a clear
refusal is a failure too), each pattern past ``--timeout`` as ``PATTERN | too slow``, and
a summary of the refusals by the reason they give; exits 1 when something failed.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import sys
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import regex

from constrain.automata.byte_dfa import regex_to_dfa
from constrain.errors import RegexError, SchemaError
from constrain.grammar.json_schema import JsonSchemaOptions, schema_to_dfa

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import within_seconds  # noqa: E402

#: Characters strings are drawn from (and literals): each UTF-8 length, JSON escapes,
#: ECMA line terminators and white space that ``\\s`` and ``.`` treat apart.
ALPHABET = ["a", "b", "c", "A", "Z", "0", "1", "9", "_", " ", "-", ".", "é", "ÿ", "中", "😀", "\n", "\t", '"', "\\",
            "\u2028", "\u00a0", "/", "{", "]"]
_SYNTAX = set("\\^$.|?*+()[]{}/-")
_WORD = "A-Za-z0-9_"
_ECMA_SPACE = "\\t\\n\\x0b\\f\\r \\u00a0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000\\ufeff"
#: Escapes outside a class: (ECMA, regex, pool of characters to draw from).
_CLASS_ESCAPES = {"\\d": "[0-9]", "\\D": "[^0-9]", "\\w": f"[{_WORD}]", "\\W": f"[^{_WORD}]",
                  "\\s": f"[{_ECMA_SPACE}]", "\\S": f"[^{_ECMA_SPACE}]", ".": "[^\\n\\r\\u2028\\u2029]"}
#: Seconds the oracle may backtrack on one string before the string is skipped.
ORACLE_SECONDS = 2.0
_BOUNDARY = {"\\b": f"(?:(?<=[{_WORD}])(?![{_WORD}])|(?<![{_WORD}])(?=[{_WORD}]))",
             "\\B": f"(?:(?<=[{_WORD}])(?=[{_WORD}])|(?<![{_WORD}])(?![{_WORD}]))"}


@dataclass(frozen=True)
class Piece:
    """One random pattern piece: its ECMA text, its ``regex`` text, and a sampler of strings
    it (usually) matches.  Look-aheads and anchors sample the empty string."""

    ecma: str
    python: str
    sample: Callable[[random.Random], str]


def _escaped(char: str, in_class: bool = False) -> str:
    special = set("\\]^-[") if in_class else _SYNTAX
    if char == "\n":
        return "\\n"
    if char == "\t":
        return "\\t"
    return "\\" + char if char in special else char


class PatternGenerator:
    """Random patterns from one seed; ``assertions`` allows look-aheads, word boundaries and
    anchors anywhere (JSON Schema's ``pattern``, and ``compile_regex`` since it builds
    them), else anchors only at the ends."""

    def __init__(self, rng: random.Random, assertions: bool) -> None:
        self.rng = rng
        self.search = assertions

    def pattern(self) -> Piece:
        body = self.alternation(3)
        rng = self.rng
        if rng.random() < 0.3:
            body = Piece("^" + body.ecma, "^" + body.python, body.sample)
        if rng.random() < 0.3:
            body = Piece(body.ecma + "$", body.python + "\\Z", body.sample)
        return body

    def alternation(self, depth: int) -> Piece:
        count = self.rng.choice((1, 1, 1, 2, 3)) if depth else 1
        branches = [self.sequence(depth) for _ in range(count)]
        return Piece("|".join(b.ecma for b in branches), "|".join(b.python for b in branches),
                     lambda rng: rng.choice(branches).sample(rng))

    def sequence(self, depth: int) -> Piece:
        items = [self.quantified(depth) for _ in range(self.rng.choice((1, 1, 2, 2, 3, 4)))]
        return Piece("".join(i.ecma for i in items), "".join(i.python for i in items),
                     lambda rng: "".join(i.sample(rng) for i in items))

    def quantified(self, depth: int) -> Piece:
        atom = self.atom(depth)
        rng = self.rng
        roll = rng.random()
        if roll < 0.55 or atom.ecma in _BOUNDARY or atom.ecma.startswith(("(?=", "(?!")) or atom.ecma in "^$":
            return atom
        kind = rng.randrange(4)
        low, high, text = self._braces() if kind == 3 else ((0, 1, "?"), (0, 3, "*"), (1, 3, "+"))[kind]
        lazy = "?" if rng.random() < 0.15 else ""
        group = atom.ecma if _single(atom.ecma) else f"(?:{atom.ecma})"
        python = atom.python if group == atom.ecma else f"(?:{atom.python})"

        def sample(r: random.Random) -> str:
            return "".join(atom.sample(r) for _ in range(r.randint(low, high)))
        # regex's partial matching errs after lazy quantifiers (``\t[0-9]??\u2028c`` takes
        # ``\tc`` as a live prefix), and laziness leaves the language as it is: greedy there.
        return Piece(group + text + lazy, python + text, sample)

    def _braces(self) -> tuple[int, int, str]:
        rng = self.rng
        low = rng.randint(0, 3)
        kind = rng.randrange(3)
        if kind == 0:
            return low, low, f"{{{low}}}"
        if kind == 1:
            return low, low + 3, f"{{{low},}}"
        high = low + rng.randint(0, 3)
        return low, high, f"{{{low},{high}}}"

    def atom(self, depth: int) -> Piece:
        rng = self.rng
        roll = rng.random()
        if depth > 1 and roll < 0.2:
            inner = self.alternation(depth - 1)
            capture = rng.random() < 0.3
            opening = "(" if capture else "(?:"
            return Piece(opening + inner.ecma + ")", opening + inner.python + ")", inner.sample)
        if self.search and depth > 1 and roll < 0.27:
            inner = self.alternation(depth - 1)
            sign = rng.choice("=!")
            return Piece(f"(?{sign}{inner.ecma})", f"(?{sign}{inner.python})", lambda r: "")
        if self.search and roll < 0.31:
            name = rng.choice(sorted(_BOUNDARY))
            return Piece(name, _BOUNDARY[name], lambda r: "")
        if self.search and roll < 0.33:
            return rng.choice([Piece("^", "^", lambda r: ""), Piece("$", "\\Z", lambda r: "")])
        if roll < 0.5:
            name = rng.choice(sorted(_CLASS_ESCAPES))
            return Piece(name, _CLASS_ESCAPES[name], _drawn(_CLASS_ESCAPES[name]))
        if roll < 0.7:
            return self.bracket()
        char = rng.choice(ALPHABET)
        return Piece(_escaped(char), _escaped(char), lambda r: char)

    def bracket(self) -> Piece:
        rng = self.rng
        ecma, python = [], []
        for _ in range(rng.randint(1, 3)):
            kind = rng.random()
            if kind < 0.5:
                char = rng.choice(ALPHABET)
                ecma.append(_escaped(char, True))
                python.append(_escaped(char, True))
            elif kind < 0.8:
                low, high = rng.choice([("a", "c"), ("0", "9"), ("à", "ÿ"), ("一", "龥"), ("A", "Z"), (" ", "/"),
                                        ("😀", "😂")])
                ecma.append(f"{low}-{high}")
                python.append(f"{low}-{high}")
            else:
                name = rng.choice(["\\d", "\\w", "\\s"])
                ecma.append(name)
                python.append(_CLASS_ESCAPES[name][1:-1])
        negated = "^" if rng.random() < 0.3 else ""
        py = f"[{negated}{''.join(python)}]"
        return Piece(f"[{negated}{''.join(ecma)}]", py, _drawn(py))


def _single(ecma: str) -> bool:
    """Whether ``ecma`` is one atom a quantifier may follow without a group."""
    return len(ecma) == 1 or ecma in _CLASS_ESCAPES or (ecma.startswith("\\") and len(ecma) == 2) or (
        ecma.startswith("[") and ecma.endswith("]") and ecma.count("[") == 1)


#: Characters a class is drawn from: the alphabet and a few more of each class.
_POOL = ALPHABET + ["x", "5", "à", "一", "龥", "😂", "\r", "\u3000", "!", "~", "Ω"]


def _drawn(python_class: str) -> Callable[[random.Random], str]:
    """A sampler of one character of ``python_class`` (from :data:`_POOL`; ``"a"`` if none)."""
    members = [c for c in _POOL if regex.fullmatch(python_class, c)] or ["a"]
    return lambda r: r.choice(members)


def drawn_strings(piece: Piece, rng: random.Random, count: int, search: bool) -> list[str]:
    """Strings drawn from the pattern, mutated, and random ones."""
    out = []
    for _ in range(count):
        roll = rng.random()
        if roll < 0.45:
            text = piece.sample(rng)
            if search:
                text = _random_text(rng, 2) + text + _random_text(rng, 2)
        elif roll < 0.75:
            text = _mutated(piece.sample(rng), rng)
        else:
            text = _random_text(rng, 8)
        out.append(text)
    return out


def _random_text(rng: random.Random, most: int) -> str:
    return "".join(rng.choice(_POOL) for _ in range(rng.randint(0, most)))


def _mutated(text: str, rng: random.Random) -> str:
    chars = list(text)
    for _ in range(rng.randint(1, 2)):
        at = rng.randint(0, len(chars))
        kind = rng.randrange(3)
        if kind == 0 or not chars:
            chars.insert(at, rng.choice(_POOL))
        elif kind == 1:
            del chars[min(at, len(chars) - 1)]
        else:
            chars[min(at, len(chars) - 1)] = rng.choice(_POOL)
    return "".join(chars)


def _built(seconds: int, build: Callable[[], object]) -> object:
    """``build()``, or why it failed: the error's last clause, or ``"too slow"``."""
    def attempt():
        try:
            return build()
        except RegexError as err:
            return "refused: " + err.reason[:70]
        except SchemaError as err:  # "... cannot be compiled (at position 4): <reason>"
            return "refused: " + str(err).split("): ")[-1][:70]
    built = within_seconds(seconds, attempt)
    return f"too slow (over {seconds} s)" if built is None else built


def check_full(piece: Piece, strings: list[str], seconds: int) -> list[str] | str:
    """Failures of the whole-match language and its live prefixes (a string: why no DFA).

    ``regex``'s partial matching says "live" wherever matching ran into the end of the
    text, which a look-ahead or an inner anchor can still fail after (``\\S(?=x)`` at
    the end of a whole match); there, a prefix the DFA keeps live must instead lead to a
    whole match: the DFA's shortest completion of it, which ``regex`` must match.  The
    other way (live, but the DFA refuses) is then left to the drawn strings that match:
    the DFA accepts them whole, so each of their prefixes is live."""
    dfa = _built(seconds, lambda: regex_to_dfa(piece.ecma))
    if isinstance(dfa, str):
        return dfa
    compiled = regex.compile(piece.python)
    partial_is_exact = not _asserts_inside(piece)
    wrong = []
    for text in strings:
        theirs = _oracle(compiled.fullmatch, text)
        if theirs is None:
            continue
        ours = dfa.matches(text.encode("utf-8"))
        if ours != theirs:
            wrong.append(f"{text!r} | match {ours} | {theirs}")
            continue
        for cut in range(len(text) + 1):
            prefix = text[:cut]
            ours = dfa.walk(dfa.start, prefix.encode("utf-8")) >= 0  # every state is live
            if partial_is_exact:
                theirs = _oracle(compiled.fullmatch, prefix, partial=True)
                if theirs is not None and ours != theirs:
                    wrong.append(f"{prefix!r} | live prefix {ours} | {theirs}")
                    break
            elif ours:
                whole = prefix + _completion(dfa, prefix.encode("utf-8"))
                if _oracle(compiled.fullmatch, whole) is False:
                    wrong.append(f"{prefix!r} | live prefix True, its completion {whole!r} | no match")
                    break
    return wrong


def _asserts_inside(piece: Piece) -> bool:
    """Whether the pattern asserts more than a leading ``^`` and a trailing ``$``: a
    look-ahead, a word boundary (look-arounds in ``regex``'s spelling) or an inner anchor
    (a ``^`` outside a class's start, a ``$``, unescaped).  Erring towards yes only trades
    the partial-match oracle for the completion one."""
    body = piece.ecma[1:] if piece.ecma.startswith("^") else piece.ecma
    if body.endswith("$") and not body.endswith("\\$"):
        body = body[:-1]
    return any(look in piece.python for look in ("(?=", "(?!", "(?<")) or bool(re.search(r"(?<![\[\\])\^|(?<!\\)\$", body))


def _completion(dfa, data: bytes) -> str:
    """The shortest text that takes ``dfa`` from where ``data`` leaves it to acceptance (the
    prefix is live, so one exists); whole characters, since ``data`` ends on one."""
    start = dfa.walk(dfa.start, data)
    paths = {start: b""}
    todo = [start]
    for state in todo:  # breadth first: grows while it is read
        if dfa.accepting[state]:
            return paths[state].decode("utf-8")
        for byte in range(256):
            nxt = int(dfa.trans[state, byte])
            if nxt >= 0 and nxt not in paths:
                paths[nxt] = paths[state] + bytes((byte,))
                todo.append(nxt)
    raise AssertionError("a live state reaches no accepting one")


def _oracle(method, text: str, **flags) -> bool | None:
    """Whether ``regex``'s ``method`` finds a match in ``text``; None where it backtracks
    past :data:`ORACLE_SECONDS` (nested quantifiers: the string is skipped)."""
    try:
        return method(text, timeout=ORACLE_SECONDS, **flags) is not None
    except TimeoutError:
        return None


def check_search(piece: Piece, strings: list[str], seconds: int, rng: random.Random) -> list[str] | str:
    """Failures of the pattern searched in a JSON string (a string: why no automaton)."""
    schema: dict = {"type": "string", "pattern": piece.ecma}
    if rng.random() < 0.33:
        schema["minLength"] = rng.randint(0, 3)
        schema["maxLength"] = schema["minLength"] + rng.choice((0, 2, 6, 40))
    automaton = _built(seconds, lambda: schema_to_dfa(schema, JsonSchemaOptions()).automaton)
    if isinstance(automaton, str):
        return automaton
    compiled = regex.compile(piece.python)
    low, high = schema.get("minLength", 0), schema.get("maxLength", 1 << 30)
    wrong = []
    for text in strings:
        found = _oracle(compiled.search, text)
        if found is None:
            continue
        ours = automaton.matches(json.dumps(text, ensure_ascii=False).encode("utf-8"))
        theirs = found and low <= len(text) <= high
        if ours != theirs:
            wrong.append(f"{text!r} | accepted {ours} | {theirs} (length {low}..{high})")
    return wrong


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mode", choices=("full", "search"), default="full")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--count", type=int, default=1000, help="patterns to draw")
    parser.add_argument("--strings", type=int, default=40, help="strings per pattern")
    parser.add_argument("--timeout", type=int, default=10, help="seconds per compile")
    parser.add_argument("--plain", action="store_true",
                        help="full mode without look-aheads, word boundaries or inner anchors (the full mode's "
                             "patterns before compile_regex built assertions)")
    args = parser.parse_args(argv)

    rng = random.Random(args.seed)
    search = args.mode == "search"
    generator = PatternGenerator(rng, search or not args.plain)
    failures, refused = 0, Counter()
    for _ in range(args.count):
        piece = generator.pattern()
        strings = drawn_strings(piece, rng, args.strings, search)
        try:
            wrong = (check_search(piece, strings, args.timeout, rng) if search
                     else check_full(piece, strings, args.timeout))
        except Exception as err:  # anything but a clear refusal is a failure of its own
            wrong = [f"raised {type(err).__name__}: {err}"]
        if isinstance(wrong, str):
            refused[wrong] += 1
            if wrong.startswith("too slow"):
                print(f"{piece.ecma!r} | {wrong}", flush=True)
            continue
        for line in wrong:
            failures += 1
            print(f"{piece.ecma!r} | {line}", flush=True)
    print(f"{args.mode}, seed {args.seed}: {args.count} patterns ({sum(refused.values())} refused), {failures} failures")
    for reason, times in refused.most_common(8):
        print(f"  {times}: {reason}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
