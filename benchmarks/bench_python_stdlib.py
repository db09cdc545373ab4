"""How much of the CPython standard library the built-in ``python`` grammar accepts.

Every ``.py`` file of the running interpreter's standard library (``site-packages``
left out; see :func:`constrain.testing.stdlib_python_files`) is tokenised with the
Llama-3 tokenizer (``encode(text, add_special_tokens=False)``) and forced token by
token through a ``Matcher`` of ``Compiler(info).compile_builtin("python")``
(``accept_token`` only), then EOS.  A file passes when every token and EOS are
accepted.  Files that fail are put in categories by looking at the source around
the first refused token:

* ``not Python 3 (ast.parse fails)``: CPython itself rejects the file (test data
  such as ``badsyntax_*.py`` and lib2to3's Python 2 samples) or it is not UTF-8;
* ``match statement``: the file has ``match``/``case`` (soft keywords; not in the grammar);
* ``tab in indentation``: the refused line is indented with tabs (spaces only);
* ``non-ASCII identifier``; ``parenthesised with-items``; ``indentation deeper than 80``;
* ``other``: listed with file and line.

With ``--masks N``, the first N of the (non-test, evenly spread) files are also
forced with a mask at every step: ``fill_next_token_bitmask`` into a preallocated
int32 numpy ``[1, words]`` buffer, timed with ``perf_counter_ns`` (p50/p99/max over
all steps; the compiled grammar is shared, so first visits are counted).

Usage::

    python benchmarks/bench_python_stdlib.py [--limit N] [--no-tests] [--masks N] [--json OUT]

``--limit N`` takes N files evenly spread over the sorted list.  Progress on stderr,
a markdown report on stdout.
"""

from __future__ import annotations

import argparse
import ast
import collections
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from _common import markdown_table, progress, tokenizer_dir, write_json  # noqa: E402


def categorise(source: str, offset: int, path: str) -> str:
    """Why ``source`` was refused at character ``offset`` (see the module docstring)."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return "not Python 3 (ast.parse fails)"
    if any(isinstance(node, ast.Match) for node in ast.walk(tree)):
        return "match statement"
    line_start = source.rfind("\n", 0, offset) + 1
    line = source[line_start: source.find("\n", offset) if source.find("\n", offset) >= 0 else len(source)]
    indent = line[: len(line) - len(line.lstrip())]
    if "\t" in indent or "\t" in source[max(0, offset - 2): offset + 2]:
        return "tab in indentation"
    if len(indent) > 80:
        return "indentation deeper than 80"
    if any(ord(c) > 127 and (c.isidentifier()) for c in line.split("#")[0].split("'")[0].split('"')[0]):
        return "non-ASCII identifier"
    if line.lstrip().startswith("with (") and " as " in line:
        return "parenthesised with-items"
    return "other"


def mask_times(tok, info, compiled, count: int) -> None:
    """Per-token mask time over ``count`` non-test modules (see the module docstring)."""
    import numpy as np

    from constrain import Matcher
    from constrain.testing import stdlib_python_files

    files = stdlib_python_files(include_tests=False)
    files = [files[i * len(files) // count] for i in range(count)]
    bitmask = np.zeros((1, (info.vocab_size + 31) // 32), dtype=np.int32)
    times = []
    for path in files:
        ids = tok.encode(Path(path).read_text(encoding="utf-8"), add_special_tokens=False)
        matcher = Matcher(compiled)
        for token in ids:
            start = time.perf_counter_ns()
            matcher.fill_next_token_bitmask(bitmask)
            times.append(time.perf_counter_ns() - start)
            if not bitmask[0, token >> 5] >> (token & 31) & 1 or not matcher.accept_token(token):
                progress(f"mask refuses {path} at {len(times)}")
                break
    p50, p99, p999 = np.percentile(times, [50, 99, 99.9]) / 1e3
    print(f"mask time over {len(times):,} steps of {count} modules: p50 {p50:.1f} µs, p99 {p99:.0f} µs, "
          f"p99.9 {p999:.0f} µs, max {max(times) / 1e3:.0f} µs\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--limit", type=int, default=None)
    parser.add_argument("--no-tests", action="store_true", help="leave out test packages")
    parser.add_argument("--tokenizer", default=None)
    parser.add_argument("--json", default=None)
    parser.add_argument("--masks", type=int, default=0, help="time masks on this many non-test files")
    args = parser.parse_args()

    from transformers import AutoTokenizer

    from constrain import Compiler, Matcher, TokenizerInfo
    from constrain.testing import force_tokens, stdlib_python_files

    tok = AutoTokenizer.from_pretrained(str(tokenizer_dir(args.tokenizer)))
    info = TokenizerInfo.from_huggingface(tok)
    compiled = Compiler(info).compile_builtin("python")
    if args.masks:
        mask_times(tok, info, compiled, args.masks)
    files = stdlib_python_files(include_tests=not args.no_tests)
    if args.limit:
        files = [files[i * len(files) // args.limit] for i in range(min(args.limit, len(files)))]
    passed, tokens_total, started = 0, 0, time.perf_counter()
    categories: collections.Counter[str] = collections.Counter()
    others: list[str] = []
    for number, path in enumerate(files):
        raw = Path(path).read_bytes()
        try:
            source = raw.decode("utf-8")
        except UnicodeDecodeError:
            categories["not Python 3 (ast.parse fails)"] += 1
            continue
        ids = tok.encode(source, add_special_tokens=False)
        tokens_total += len(ids)
        refused = force_tokens(Matcher(compiled), ids, info.eos_token_ids[0])
        if refused is None:
            passed += 1
        else:
            offset = len(tok.decode(ids[:refused]))
            kind = categorise(source, offset, path)
            categories[kind] += 1
            if kind == "other":
                line = source.count("\n", 0, offset) + 1
                others.append(f"{path} line {line}: {source[max(0, offset - 40): offset + 20]!r}")
        if number % 50 == 0:
            progress(f"{number}/{len(files)} files, {passed} passed")
    elapsed = time.perf_counter() - started
    rows = [["passed", passed]] + [[kind, count] for kind, count in categories.most_common()]
    print(f"## python grammar on the standard library ({sys.version.split()[0]}, Llama-3 tokens)\n")
    print(f"{passed} of {len(files)} files accepted (with EOS); {tokens_total:,} tokens in {elapsed:.0f} s "
          f"({tokens_total / elapsed:,.0f} tokens/s, accept_token only)\n")
    print(markdown_table(["outcome", "files"], rows))
    for line in others:
        print(f"- other: {line}")
    if args.json:
        write_json(args.json, {"files": len(files), "passed": passed, "categories": dict(categories),
                               "others": others, "tokens": tokens_total, "seconds": elapsed})


if __name__ == "__main__":
    main()
