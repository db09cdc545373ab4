"""Start-up cost: a fresh ``python`` process from ``import constrain`` to the first mask.

Runs the same child program twice per mode:

* cold: numba's and constrain's on-disk caches empty (``NUMBA_CACHE_DIR`` and
  ``CONSTRAIN_CACHE_DIR`` point at new folders), so the kernels are compiled and the
  vocabulary trie and the regex DFA are built;
* warm: the same folders again: numba loads machine code, constrain loads the trie
  and the DFA from disk.

Reported: the time measured inside the child from
before ``import constrain`` to the first filled bitmask, split into phases, plus the
whole process wall time.

Usage: ``python benchmarks/bench_startup.py [--tokenizer PATH] [--repeats 3]``
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

CHILD = r"""
import json, sys, time
t0 = time.perf_counter()
import constrain
t_import = time.perf_counter()
from transformers import AutoTokenizer
tok = AutoTokenizer.from_pretrained(sys.argv[1])
t_tok = time.perf_counter()
info = constrain.TokenizerInfo.from_huggingface(tok)
t_info = time.perf_counter()
compiled = constrain.Compiler(info).compile_regex(r"\d{4}-\d{2}-\d{2}")
t_compile = time.perf_counter()
matcher = constrain.Matcher(compiled)
bitmask = constrain.allocate_token_bitmask(1, info.vocab_size)
matcher.fill_next_token_bitmask(bitmask)
t_mask = time.perf_counter()
print(json.dumps({
    "import_constrain": t_import - t0,
    "load_hf_tokenizer": t_tok - t_import,
    "tokenizer_info": t_info - t_tok,
    "compile_regex (incl. trie)": t_compile - t_info,
    "first_mask": t_mask - t_compile,
    "total_to_first_mask": t_mask - t0,
    "constrain_only": (t_import - t0) + (t_mask - t_tok),
}))
"""


def _default_tokenizer() -> str:
    base = Path(os.environ.get("CONSTRAIN_DATA_DIR") or Path(__file__).resolve().parents[2] / "shared" / "data")
    return str(base / "tokenizers" / "llama-3")


def _run_child(tokenizer: str, cache_dir: str) -> tuple[dict, float]:
    env = dict(os.environ, NUMBA_CACHE_DIR=os.path.join(cache_dir, "numba"),
               CONSTRAIN_CACHE_DIR=os.path.join(cache_dir, "constrain"))
    start = time.perf_counter()
    out = subprocess.run([sys.executable, "-c", CHILD, tokenizer], env=env, check=True,
                         capture_output=True, text=True)
    wall = time.perf_counter() - start
    return json.loads(out.stdout.strip().splitlines()[-1]), wall


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tokenizer", default=_default_tokenizer())
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    if not Path(args.tokenizer).exists():
        sys.exit(f"tokenizer not found at {args.tokenizer} (set CONSTRAIN_DATA_DIR or --tokenizer)")
    results: dict[str, list[dict]] = {"cold": [], "warm": []}
    for repeat in range(args.repeats):
        with tempfile.TemporaryDirectory() as cache_dir:
            for mode in ("cold", "warm"):
                phases, wall = _run_child(args.tokenizer, cache_dir)
                phases["process_wall"] = wall
                results[mode].append(phases)
                print(f"[{repeat + 1}/{args.repeats}] {mode}: {phases['total_to_first_mask']:.2f} s", file=sys.stderr)
    keys = list(results["cold"][0])
    print("| phase (median s) | caches cold | caches warm |")
    print("|---|---:|---:|")
    for key in keys:
        cold = statistics.median(r[key] for r in results["cold"])
        warm = statistics.median(r[key] for r in results["warm"])
        print(f"| {key} | {cold:.3f} | {warm:.3f} |")


if __name__ == "__main__":
    main()
