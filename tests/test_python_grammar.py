"""The built-in ``python`` grammar: indentation against CPython, real modules, tiny models.

* Small programs around indentation (blocks, dedents, brackets spanning lines,
  continuation lines, tabs, the end of input) are accepted, EOS included, exactly
  when CPython's ``ast.parse`` accepts them.
* A sample of 40 standard-library modules (evenly spread over the sorted list of the
  running interpreter's non-test modules) is forced token by token through the
  grammar under the Llama-3 tokenizer, with EOS accepted at the end.  The whole
  standard library runs in ``benchmarks/bench_python_stdlib.py``.
* A tiny random Llama sampling under the grammar finishes programs that CPython and
  lark (with lark's own indenter) both parse.
"""

from __future__ import annotations

import ast

import pytest
import torch

from conftest import finished_generations
from constrain import Compiler, Matcher, TokenizerInfo, generate_grammar
from constrain.grammar.builtin import builtin_grammar
from constrain.testing import assert_same_masks_along, force_tokens, stdlib_python_files


@pytest.fixture(scope="module")
def llama3(load_tokenizer):
    tokenizer = load_tokenizer("llama-3")
    info = TokenizerInfo.from_huggingface(tokenizer)
    return tokenizer, info, Compiler(info).compile_builtin("python")


SNIPPETS = [
    "",
    "x = 1",
    "x = 1\n",
    "if x:\n    pass",
    "if x:\n    pass\n",
    "if x:\npass\n",  # expected an indented block
    "if x:\n    a\n  b\n",  # dedent to a column no block opened
    "if x:\n    a\n        b\n",  # unexpected indent
    "if x:\n    if y:\n        a\n\n\n    b\nc\n",
    "def f(a,\n        b):\n    return (a +\n  b)\n",  # newlines inside brackets are whitespace
    "x = [\n1,\n    2]\ny = 3\n",
    "x = 1 + \\\n    2\n",  # line continuation
    "class A:\n    # comment\n\n        # deeper comment\n    x = 1\n",
    "if x:\n\tpass\n",  # tab indentation: refused by the grammar (spaces only)
    "if x:\n    pass\n  # a comment at any column\n",
    "while x:\n    pass\nelse:\n    pass\n",
    "try:\n    pass\nexcept E as e:\n    raise\nfinally:\n    pass\n",
    "if x:",
    "x = (1,",
    "s = '''a\n    b'''\nt = 1\n",
    "@d\ndef f(): return 1\n",
    "x = 1; y = 2;\n",
    "for i in range(3): print(i)\nelse: pass\n",
    "  x = 1\n",  # the first line's indentation counts too
    "# a comment\n\n  \nx = 1\n",
    "\n\n    # indented comment\nx = 1\n",
]


@pytest.mark.parametrize("source", SNIPPETS)
def test_indentation_agrees_with_cpython(llama3, source):
    _, _, compiled = llama3
    matcher = Matcher(compiled)
    accepted = matcher.accept_bytes(source.encode()) and matcher.is_accepting()
    try:
        ast.parse(source)
        valid = True
    except SyntaxError:
        valid = False
    if source == "if x:\n\tpass\n":
        assert valid and not accepted  # documented limit: indentation in spaces only
    else:
        assert accepted == valid


def test_stdlib_sample_accepted(llama3):
    tokenizer, info, compiled = llama3
    files = stdlib_python_files(include_tests=False)
    assert len(files) >= 300
    sample = [files[i * len(files) // 40] for i in range(40)]
    failures, skipped = [], []
    for path in sample:
        with open(path, encoding="utf-8") as handle:
            source = handle.read()
        if any(isinstance(node, ast.Match) for node in ast.walk(ast.parse(source))):
            skipped.append(path)  # match statements: soft keywords, not in the grammar
            continue
        ids = tokenizer.encode(source, add_special_tokens=False)
        refused = force_tokens(Matcher(compiled), ids, info.eos_token_ids[0])
        if refused is not None:
            failures.append((path, repr(tokenizer.decode(ids[max(0, refused - 8): refused + 1]))))
    assert len(skipped) <= 2, skipped
    assert not failures, failures


def _lark_python_parser():
    from lark import Lark
    from lark.indenter import Indenter

    class PythonIndenter(Indenter):
        NL_type = "_NEWLINE"
        OPEN_PAREN_types = ["LPAR", "LSQB", "LBRACE"]
        CLOSE_PAREN_types = ["RPAR", "RSQB", "RBRACE"]
        INDENT_type = "_INDENT"
        DEDENT_type = "_DEDENT"
        tab_len = 8

    return Lark(builtin_grammar("python"), parser="lalr", lexer="basic", postlex=PythonIndenter())


def test_tiny_model_writes_python(load_tokenizer):
    from transformers import LlamaConfig, LlamaForCausalLM

    tokenizer = load_tokenizer("llama-2")  # 32k tokens: masks four times cheaper than Llama-3's
    torch.manual_seed(5)
    config = LlamaConfig(vocab_size=len(tokenizer), hidden_size=16, intermediate_size=32, num_hidden_layers=1,
                         num_attention_heads=2, num_key_value_heads=1, max_position_embeddings=512)
    model = LlamaForCausalLM(config).eval()
    # Favour line breaks, a few names and EOS so that random programs end within the budget.
    head = torch.nn.Linear(16, len(tokenizer), bias=True)
    with torch.no_grad():
        head.weight.copy_(model.lm_head.weight)
        head.bias.zero_()
        head.bias[tokenizer.convert_tokens_to_ids(["<0x0A>", "\u2581x", "\u2581=", "\u2581y"])] = 5.0
        head.bias[tokenizer.eos_token_id] = 3.0
    model.lm_head = head
    parser = _lark_python_parser()
    finished = finished_generations(
        lambda: generate_grammar("python", "# Python\n", model, tokenizer, do_sample=True, max_new_tokens=40))
    for text in finished:
        ast.parse(text)
        parser.parse(text + "\n")  # lark's own Indenter; the end of input is a line break
    assert len(finished) >= 4, finished
    assert sum("=" in text for text in finished) >= 2, finished


def test_indentation_grammar_errors_and_disk_cache(load_tokenizer, tmp_path):
    """An indentation-aware grammar must define the documented _NEWLINE; a python engine
    loaded from the disk cache gives the same masks as a fresh one."""
    from constrain import GrammarError

    info = TokenizerInfo.from_huggingface(load_tokenizer("gpt2"))
    with pytest.raises(GrammarError, match="_NEWLINE"):
        Compiler(info, cache_dir=False).compile_grammar(
            'start: (NAME _NEWLINE | _INDENT NAME _DEDENT)+\nNAME: /[a-z]+/\n_NEWLINE: /\\n+/\n'
            "%declare _INDENT _DEDENT")
    fresh = Compiler(info, cache_dir=tmp_path).compile_builtin("python")  # built, then saved
    loaded = Compiler(info, cache_dir=tmp_path).compile_builtin("python")
    matchers = [Matcher(fresh), Matcher(loaded)]
    assert_same_masks_along(matchers, ["def f(x):", "\n    if x:", "\n        return [x,\n  1]", "\n    ", "pass\n"])
    assert all(m.is_accepting() for m in matchers)
