"""The ``constrain`` command line.

``constrain generate``  constrained generation with a real model (hub id or local path);
``constrain demo``      the same with a tiny random model sized to a tokenizer: no weights
                        are downloaded, so it runs anywhere in seconds.
``constrain bench``     ``jsonschemabench`` / ``test-suite``: JSON Schema engines side by side
                        (:mod:`constrain.bench`).

Errors in the user's input (a bad regex, a missing file, a tokenizer we cannot map)
print one line on stderr and exit with status 2; nothing prints a traceback unless
``CONSTRAIN_DEBUG=1``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any, Sequence

from .errors import ConstrainError
from .grammar.builtin import BUILTIN_GRAMMARS

__all__ = ["main"]

DEMO_PATTERN = r"(19|20)\d{2}-(0[1-9]|1[0-2])-(0[1-9]|[12]\d|3[01])"


def _default_tokenizer() -> str:
    """A local tokenizer from the shared data folder when present, else a hub id."""
    data = os.environ.get("CONSTRAIN_DATA_DIR")
    candidates = [Path(data)] if data else []
    candidates.append(Path(__file__).resolve().parents[2] / "shared" / "data")
    for base in candidates:
        path = base / "tokenizers" / "llama-3"
        if (path / "tokenizer.json").is_file():
            return str(path)
    return "openai-community/gpt2"


def _load_tokenizer(name: str) -> Any:
    from transformers import AutoTokenizer

    try:
        return AutoTokenizer.from_pretrained(name)
    except (OSError, ValueError) as err:
        raise ConstrainError(f"cannot load tokenizer {name!r}: {str(err).splitlines()[0]}") from err


def _tiny_model(vocab_size: int, seed: int) -> Any:
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(seed)
    config = LlamaConfig(vocab_size=vocab_size, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                         num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=1024)
    return LlamaForCausalLM(config).eval()


def _read_file(path: str, what: str) -> str:
    try:
        return Path(path).read_text(encoding="utf-8")
    except OSError as err:
        raise ConstrainError(f"cannot read {what} file {path!r}: {err.strerror}") from err


def _constraint_source(args: argparse.Namespace) -> tuple[str, str]:
    """(kind, text): ``("regex", pattern)``, ``("grammar", lark text)`` or ``("schema", JSON text)``."""
    if args.schema is not None:
        return "schema", _read_file(args.schema, "schema")
    if args.regex is not None:
        return "regex", args.regex
    if args.regex_file is not None:
        return "regex", _read_file(args.regex_file, "regex").rstrip("\n")
    if args.grammar is not None:
        return "grammar", _read_file(args.grammar, "grammar")
    if args.builtin is not None:
        from .grammar.builtin import builtin_grammar

        return "grammar", builtin_grammar(args.builtin)
    return "regex", DEMO_PATTERN


def _generate(args: argparse.Namespace, model: Any, tokenizer: Any) -> int:
    import torch

    from .api import generate_grammar, generate_json, generate_regex

    kind, source = _constraint_source(args)
    torch.manual_seed(args.seed)
    kwargs: dict[str, Any] = {"max_new_tokens": args.max_new_tokens}
    if args.sample:
        kwargs.update(do_sample=True, temperature=args.temperature)
    else:
        kwargs.update(do_sample=False)
    if kind == "schema":
        kwargs["property_order"] = args.property_order
    generate = {"regex": generate_regex, "grammar": generate_grammar, "schema": generate_json}[kind]
    start = time.perf_counter()
    outputs = generate(source, [args.prompt] * args.num, model, tokenizer, **kwargs)
    elapsed = time.perf_counter() - start
    for output in outputs:
        print(json.dumps(output, ensure_ascii=False) if kind == "schema" else output)
    print(f"# {len(outputs)} output(s) in {elapsed:.2f} s", file=sys.stderr)
    return 0


def _cmd_generate(args: argparse.Namespace) -> int:
    from transformers import AutoModelForCausalLM

    tokenizer = _load_tokenizer(args.tokenizer or args.model)
    try:
        model = AutoModelForCausalLM.from_pretrained(args.model).eval()
    except (OSError, ValueError) as err:
        raise ConstrainError(f"cannot load model {args.model!r}: {str(err).splitlines()[0]}") from err
    return _generate(args, model, tokenizer)


def _cmd_demo(args: argparse.Namespace) -> int:
    tokenizer = _load_tokenizer(args.tokenizer or _default_tokenizer())
    model = _tiny_model(len(tokenizer), args.seed)
    kind, source = _constraint_source(args)
    shown = source if len(source) < 80 else source[:77] + "..."
    print(f"# tiny random Llama, vocabulary {len(tokenizer)}; {kind} {shown!r}", file=sys.stderr)
    return _generate(args, model, tokenizer)


def _add_generation_options(parser: argparse.ArgumentParser) -> None:
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--regex", help="ECMA-262 regex the output must match in full")
    group.add_argument("--regex-file", help="file holding the regex")
    group.add_argument("--grammar", help="Lark grammar file (LALR(1)) the output must be a sentence of")
    group.add_argument("--builtin", choices=list(BUILTIN_GRAMMARS), help="a built-in grammar")
    group.add_argument("--schema", help="JSON Schema file the output must validate against")
    parser.add_argument("--property-order", choices=("schema", "any"), default="schema",
                        help="with --schema: members in the schema's order (default) or in any order")
    parser.add_argument("--prompt", default="Output: ", help="prompt text")
    parser.add_argument("--tokenizer", help="tokenizer hub id or local path (default: the model's)")
    parser.add_argument("-n", "--num", type=int, default=3, help="number of outputs")
    parser.add_argument("--max-new-tokens", type=int, default=128)
    parser.add_argument("--sample", action=argparse.BooleanOptionalAction, default=True,
                        help="sample (default) or decode greedily")
    parser.add_argument("--temperature", type=float, default=1.0)
    parser.add_argument("--seed", type=int, default=0)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="constrain", description="Exact constrained generation for transformers.")
    sub = parser.add_subparsers(dest="command", required=True)
    gen = sub.add_parser("generate", help="generate with a real model under a constraint")
    gen.add_argument("--model", required=True, help="model hub id or local path")
    _add_generation_options(gen)
    gen.set_defaults(func=_cmd_generate)
    demo = sub.add_parser("demo", help="generate with a tiny random model (no weights needed)")
    _add_generation_options(demo)
    demo.set_defaults(func=_cmd_demo)
    from .bench.cli import add_bench_parser

    add_bench_parser(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``constrain`` console script."""
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except ConstrainError as err:
        if os.environ.get("CONSTRAIN_DEBUG"):
            raise
        first_line = str(err).splitlines()[0]
        print(f"constrain: error: {first_line}", file=sys.stderr)
        return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
