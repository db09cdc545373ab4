"""``constrain bench jsonschemabench`` and ``constrain bench test-suite``: argument parsing and runs.

Wired into :mod:`constrain.cli` by :func:`add_bench_parser`.  A markdown report goes
to stdout, progress to stderr, the full JSON report to ``--out``.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any

from ..errors import ConstrainError
from .data import KEY_ORDERS, TEST_SUITE_DRAFTS, even_sample, load_jsonschemabench, load_jsonschemabench_hub, load_test_suite
from .engines import ENGINES, OURS

__all__ = ["add_bench_parser"]


def _names(text: str, choices: tuple[str, ...] | None, what: str) -> list[str]:
    names = list(dict.fromkeys(n.strip() for n in text.split(",") if n.strip()))
    unknown = [n for n in names if choices is not None and n not in choices]
    if unknown or not names:
        raise ConstrainError(f"unknown {what} {','.join(unknown) or '(none)'}; choose from {','.join(choices or ())}")
    return names


def _common_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--data", help="data folder (holding jsonschemabench/ and json-schema-test-suite/, or "
                                       "the data set folder itself); default $CONSTRAIN_DATA_DIR or ../shared/data")
    parser.add_argument("--tokenizer", default="llama-3",
                        help="tokenizer folder, name under <data>/tokenizers, or hub id (default llama-3)")
    parser.add_argument("--engines", default="constrain",
                        help=f"comma-separated engines from {','.join(ENGINES)} (default constrain); "
                             "peers not installed are reported as skipped")
    parser.add_argument("--limit", type=int, help="at most N schemas (test cases), evenly spread over the run")
    parser.add_argument("--sample-slow", type=int, metavar="N",
                        help="run the slow engines (--slow-engines) on a fixed even sample of N schemas only")
    parser.add_argument("--slow-engines", default="outlines", help="engines --sample-slow applies to (default outlines)")
    parser.add_argument("--compile-timeout", type=float, default=30.0, help="seconds per schema compile (default 30)")
    parser.add_argument("--timeout", type=float, default=120.0,
                        help="seconds per schema, compile and forcing every instance (default 120)")
    parser.add_argument("--out", help="write the full JSON report here")
    parser.add_argument("--explain", action="store_true", help="one line per failing schema with the reason")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")
    parser.add_argument("--key-order", choices=KEY_ORDERS, default="instance",
                        help="instance (default, MaskBench): json.dumps of each instance as given; schema: valid "
                             "instances rewritten with members in the order constrain's language writes them, "
                             "so that a rejection left is not the member order's doing (same texts for every engine)")
    parser.add_argument("--property-order", choices=("schema", "any"), default="schema",
                        help="constrain's compile_json_schema(property_order=...): schema (default) writes members "
                             "in the schema's order, as the peers do; any lets them come in any order")


def add_bench_parser(sub: Any) -> None:
    """Add ``bench`` with its two subcommands to the ``constrain`` subparsers."""
    bench = sub.add_parser("bench", help="benchmark JSON Schema engines (MaskBench method)")
    which = bench.add_subparsers(dest="benchmark", required=True)
    jsb = which.add_parser("jsonschemabench", help="every schema of JSONSchemaBench with its instances")
    _common_options(jsb)
    jsb.add_argument("--subset", help="comma-separated subsets (file names without .jsonl), default all")
    jsb.add_argument("--ids", type=Path, metavar="FILE",
                     help="only the schemas whose ids FILE lists, one per line (# starts a comment)")
    jsb.add_argument("--hub", action="store_true",
                     help="read epfl-dlab/JSONSchemaBench from the Hugging Face hub (schemas only: compile only)")
    jsb.set_defaults(func=_cmd_jsonschemabench)
    suite = which.add_parser("test-suite", help="the official JSON Schema Test Suite")
    _common_options(suite)
    suite.add_argument("--drafts", default=",".join(TEST_SUITE_DRAFTS), help="comma-separated draft folders")
    suite.add_argument("--no-optional", action="store_true", help="leave out tests/<draft>/optional/")
    suite.set_defaults(func=_cmd_test_suite)


def _validate(args: argparse.Namespace) -> None:
    for option in ("limit", "sample_slow"):
        value = getattr(args, option)
        if value is not None and value < 1:
            raise ConstrainError(f"--{option.replace('_', '-')} must be at least 1, got {value}")
    if args.compile_timeout <= 0 or args.timeout <= 0:
        raise ConstrainError("timeouts must be positive")
    args.engine_names = _names(args.engines, ENGINES, "engine(s)")


def _run(args: argparse.Namespace, cases: list[Any], kind: str) -> int:
    from .maskbench import load_tokenizer, run_cases, set_up_engines
    from .report import render_jsonschemabench, run_json, render_test_suite, write_json

    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    cases = even_sample(cases, args.limit)
    tok = load_tokenizer(args.tokenizer, args.data)
    engines, skipped = set_up_engines(args.engine_names, tok)
    if OURS in engines:
        engines[OURS].property_order = args.property_order
    for name, why in skipped.items():
        print(f"constrain bench: {name} skipped: {why}", file=sys.stderr)
    if not engines:
        raise ConstrainError(f"no engine could run ({'; '.join(f'{k}: {v}' for k, v in skipped.items())})")
    run = run_cases(cases, engines, tok, compile_timeout=args.compile_timeout, timeout=args.timeout,
                    sample_slow=args.sample_slow, slow_engines=_names(args.slow_engines, None, "engine(s)"),
                    progress=not args.no_progress, skipped=skipped, key_order=args.key_order)
    render = render_jsonschemabench if kind == "jsonschemabench" else render_test_suite
    print(render(run, explain=args.explain))
    if args.out:
        write_json(args.out, run_json(run, kind))
        print(f"constrain bench: wrote {args.out}", file=sys.stderr)
    return 0


def _cmd_jsonschemabench(args: argparse.Namespace) -> int:
    _validate(args)
    subsets = _names(args.subset, None, "subset(s)") if args.subset else None
    if args.hub:
        cases = load_jsonschemabench_hub(subsets)
    else:
        cases = [c for c in load_jsonschemabench(args.data, subsets) if c.instances]
    if args.ids is not None:
        cases = _listed(cases, args.ids)
    return _run(args, cases, "jsonschemabench")


def _listed(cases: list[Any], path: Path) -> list[Any]:
    """The cases whose ids ``path`` lists (an A/B slice kept as a file); unknown ids are an error."""
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError as err:
        raise ConstrainError(f"--ids: cannot read {path}: {err.strerror}") from None
    wanted = {line.split("#", 1)[0].strip() for line in lines} - {""}
    unknown = sorted(wanted - {c.id for c in cases})
    if unknown:
        raise ConstrainError(f"--ids: {len(unknown)} id(s) not among the schemas run, e.g. {unknown[0]!r}")
    return [c for c in cases if c.id in wanted]


def _cmd_test_suite(args: argparse.Namespace) -> int:
    _validate(args)
    drafts = _names(args.drafts, None, "draft(s)")
    return _run(args, load_test_suite(args.data, drafts, optional=not args.no_optional), "test-suite")
