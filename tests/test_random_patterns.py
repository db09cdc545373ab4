"""Random ECMA-262 patterns against the ``regex`` module, a fixed-seed slice of
``benchmarks/fuzz_regex.py`` (its module docstring says how each pattern is written for
both engines).

Whole matches and every prefix's liveness for the regex DFA (with look-aheads and word
boundaries too), and the pattern searched
inside a JSON string value (look-aheads, word boundaries, anchors anywhere, length
bounds) for the JSON Schema compiler.  The search slice found anchors dropped after
zero-width items and inside groups (``(?:^|x)a`` matched ``"ba"``) and a ``TypeError``
for a word boundary in a repetition inside a look-ahead.
"""

from __future__ import annotations

import random
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))
import fuzz_regex  # noqa: E402


def _run(search: bool, seed: int, count: int, assertions: bool | None = None) -> tuple[list[str], int]:
    """Failures (pattern and what differed) and how many patterns were built (``assertions``:
    look-aheads, word boundaries and inner anchors; by default in search mode only)."""
    rng = random.Random(seed)
    generator = fuzz_regex.PatternGenerator(rng, search if assertions is None else assertions)
    failures, built = [], 0
    for _ in range(count):
        piece = generator.pattern()
        strings = fuzz_regex.drawn_strings(piece, rng, 30, search)
        wrong = (fuzz_regex.check_search(piece, strings, 5, rng) if search
                 else fuzz_regex.check_full(piece, strings, 5))
        if isinstance(wrong, str):  # refused, with a reason, or too slow
            continue
        built += 1
        failures += [f"{piece.ecma!r} | {line}" for line in wrong]
    return failures, built


@pytest.mark.parametrize("seed", [11, 12])
def test_random_patterns_match_whole_strings_and_prefixes_as_regex_does(seed):
    failures, built = _run(False, seed, 120)
    assert not failures, failures[:5]
    assert built >= 110  # the slice is not vacuous: nearly every pattern here builds


@pytest.mark.parametrize("seed", [31, 32])
def test_random_patterns_with_assertions_match_whole_strings_and_prefixes_as_regex_does(seed):
    """compile_regex builds look-aheads and word boundaries (the JSON Schema path, anchored
    at both ends); their whole matches and live prefixes against ``regex``."""
    failures, built = _run(False, seed, 80, assertions=True)
    assert not failures, failures[:5]
    assert built >= 40


@pytest.mark.parametrize("seed", [21, 22])
def test_random_patterns_are_searched_in_json_strings_as_regex_does(seed):
    failures, built = _run(True, seed, 60)
    assert not failures, failures[:5]
    assert built >= 30  # look-behind-like uses (a boundary inside a look-ahead) are refused
