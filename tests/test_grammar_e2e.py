"""Grammars on real text and with tiny random models.

* Every valid instance of JSONSchemaBench, serialised with ``json.dumps``, is
  accepted token by token by the built-in ``json`` grammar under the Llama-3
  tokenizer, with EOS allowed at its end.
* Tiny random models sampling under grammars produce complete sentences that
  lark parses.
"""

from __future__ import annotations

import json

import pytest
import torch

from conftest import finished_generations, shared_data_or_skip
from constrain import Compiler, GrammarError, Matcher, TokenizerInfo, generate_grammar
from constrain.testing import assert_same_masks_along


def _bench_instances():
    folder = shared_data_or_skip("jsonschemabench") / "jsonschemabench"
    for path in sorted(folder.glob("*.jsonl")):
        with open(path, encoding="utf-8") as handle:
            for line in handle:
                row = json.loads(line)
                for instance in row.get("instances", []):
                    if instance["valid"]:
                        yield row["id"], instance["data"]


def test_jsonschemabench_valid_instances_accepted(load_tokenizer):
    tokenizer = load_tokenizer("llama-3")
    info = TokenizerInfo.from_huggingface(tokenizer)
    compiled = Compiler(info).compile_builtin("json")
    failures, count = [], 0
    for schema_id, data in _bench_instances():
        text = json.dumps(data, ensure_ascii=False)
        matcher = Matcher(compiled)
        ids = tokenizer.encode(text, add_special_tokens=False)
        ok = all(matcher.accept_token(t) for t in ids) and matcher.accept_token(info.eos_token_ids[0])
        count += 1
        if not ok:
            failures.append(schema_id)
    assert count > 10_000
    assert not failures, failures[:10]


def _tiny_llama(vocab_size: int, seed: int):
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(seed)
    config = LlamaConfig(vocab_size=vocab_size, hidden_size=16, intermediate_size=32, num_hidden_layers=1,
                         num_attention_heads=2, num_key_value_heads=1, max_position_embeddings=512)
    return LlamaForCausalLM(config).eval()


BOUNDED_GRAMMARS = {
    "tuple": r"""
        start: "(" INT ("," INT)* ")"
        INT: /[0-9]{1,3}/
    """,
    "arithmetic": r"""
        start: expr
        expr: term (("+"|"-") term)?
        term: INT | "(" INT ("*"|"/") INT ")"
        INT: /[1-9][0-9]{0,2}/
        %ignore " "
    """,
    "keywords": r"""
        start: stmt stmt?
        stmt: "let" NAME "=" NAME ";" | "print" NAME ";"
        NAME: /[a-z]{1,5}/
        %ignore " "
    """,
}


@pytest.mark.parametrize("name", sorted(BOUNDED_GRAMMARS))
@pytest.mark.parametrize("tokenizer_name", ["llama-3", "llama-2"])
def test_tiny_model_outputs_parse(load_tokenizer, name, tokenizer_name):
    from lark import Lark

    tokenizer = load_tokenizer(tokenizer_name)
    model = _tiny_llama(len(tokenizer), seed=3)
    grammar = BOUNDED_GRAMMARS[name]
    outputs = generate_grammar(grammar, ["Out:", "Answer"], model, tokenizer, do_sample=True,
                               num_return_sequences=15, max_new_tokens=64)
    parser = Lark(grammar, parser="lalr", lexer="basic")
    for text in outputs:
        parser.parse(text)  # raises on a non-sentence
    assert len(set(outputs)) > 3


def test_json_builtin_with_tiny_model(load_tokenizer):
    tokenizer = load_tokenizer("llama-3")
    model = _tiny_llama(len(tokenizer), seed=4)
    with torch.no_grad():  # favour closing brackets so that random documents end
        for text in ("}", "]", "]}", "}}", "}]", " }", "0"):
            for token in tokenizer.encode(text, add_special_tokens=False):
                model.lm_head.weight[token] *= 0
                model.lm_head.bias = None
    finished = finished_generations(
        lambda: generate_grammar("json", "JSON:", model, tokenizer, do_sample=True, max_new_tokens=48))
    for text in finished:
        json.loads(text)
    assert len(finished) >= 1


def test_compile_grammar_errors(load_tokenizer):
    info = TokenizerInfo.from_huggingface(load_tokenizer("gpt2"))
    compiler = Compiler(info, cache_dir=False)
    with pytest.raises(GrammarError, match="line 2"):
        compiler.compile_grammar('start: x\nx: "a" | y\ny: "a"')
    with pytest.raises(GrammarError, match="terminal BAD") as err:
        compiler.compile_grammar('start: BAD\nBAD: /a(?=b)/')
    assert (err.value.line, err.value.column) == (2, 8)  # the look-ahead's "(" inside /a(?=b)/
    # A terminal written inside a rule: lark names it __ANON_0; the error shows its spelling and place.
    with pytest.raises(GrammarError, match=r"line 3, column 17: terminal /\(x\)\\1/: back-reference") as err:
        compiler.compile_grammar('start: a\n\na: "q" NAME /(x)\\1/\nNAME: /[a-z]+/')
    assert "__ANON" not in str(err.value)
    # One Python's re refuses (lark says only "Cannot compile token __ANON_0"): re's reason, and where.
    with pytest.raises(GrammarError, match=r"line 2, column 11: terminal /x\\1/: invalid group reference 1") as err:
        compiler.compile_grammar('start: a\na: "q" /x\\1/')
    with pytest.raises(GrammarError, match=r"line 2, column 7: terminal A: unterminated character set"):
        compiler.compile_grammar('start: A\nA: /ab[c/')
    with pytest.raises(ValueError, match="built-in"):
        compiler.compile_builtin("cobol")


def test_ignored_whitespace_runs_are_bounded(load_tokenizer):
    """%ignore tolerates whitespace; by default one run is at most 64 bytes (no endless spaces)."""
    info = TokenizerInfo.from_huggingface(load_tokenizer("gpt2"))
    grammar = 'start: "a" "b"\n%ignore " "'
    bounded = Compiler(info, cache_dir=False).compile_grammar(grammar)
    matcher = Matcher(bounded)
    assert matcher.accept_bytes(b"a" + b" " * 64)
    assert not matcher.accept_bytes(b" ")  # a 65th space
    assert matcher.accept_bytes(b"b") and matcher.is_accepting()
    unbounded = Compiler(info, cache_dir=False).compile_grammar(grammar, max_ignore_len=None)
    assert Matcher(unbounded).accept_bytes(b"a" + b" " * 500 + b"b")


def test_compiled_grammar_shared_across_threads(load_tokenizer):
    """Matchers in several threads share one compiled grammar (its caches are lock-free)."""
    import hashlib
    from concurrent.futures import ThreadPoolExecutor

    import numpy as np

    tokenizer = load_tokenizer("llama-3")
    info = TokenizerInfo.from_huggingface(tokenizer)
    docs = [json.dumps({"k": i, "v": [i, str(i), None], "n": {"x": i / 3}}) for i in range(12)]
    encoded = [tokenizer.encode(d, add_special_tokens=False) for d in docs]

    def run(compiled, ids):
        matcher, bitmask, digest = Matcher(compiled), np.zeros((1, (info.vocab_size + 31) // 32), np.int32), hashlib.sha256()
        for token in ids:
            matcher.fill_next_token_bitmask(bitmask)
            digest.update(bitmask.tobytes())
            assert matcher.accept_token(token)
        return digest.hexdigest()

    expected = [run(Compiler(info, cache_dir=False).compile_builtin("json"), ids) for ids in encoded]
    shared = Compiler(info, cache_dir=False).compile_builtin("json")
    with ThreadPoolExecutor(4) as pool:
        got = list(pool.map(lambda ids: run(shared, ids), encoded * 2))
    assert got == expected * 2


def test_grammar_disk_cache_round_trip(load_tokenizer, tmp_path):
    """LALR tables and the lexer DFA load from disk; masks are identical; corrupt entries rebuild."""
    info = TokenizerInfo.from_huggingface(load_tokenizer("gpt2"))
    fresh = Compiler(info, cache_dir=False).compile_builtin("sql")
    Compiler(info, cache_dir=tmp_path).compile_builtin("sql")
    assert any(tmp_path.rglob("grammar/*.npz"))
    loaded = Compiler(info, cache_dir=tmp_path).compile_builtin("sql")
    for path in tmp_path.rglob("grammar/*.npz"):
        path.write_bytes(b"not an npz")
    rebuilt = Compiler(info, cache_dir=tmp_path).compile_builtin("sql")
    matchers = [Matcher(c) for c in (fresh, loaded, rebuilt)]
    assert_same_masks_along(matchers, ["SELECT", " name", ", COUNT(*)", " FROM users u", " WHERE u.age >= 18"])
