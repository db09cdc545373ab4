"""The command line: the demo runs, errors are one line with a non-zero exit code."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
import regex

from constrain.cli import DEMO_PATTERN, main
from conftest import shared_data_or_skip


def _tokenizer_path() -> str:
    return str(shared_data_or_skip("tokenizers/gpt2") / "tokenizers" / "gpt2")


def test_demo_outputs_match(capsys):
    assert main(["demo", "--tokenizer", _tokenizer_path(), "-n", "4", "--max-new-tokens", "24"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 4
    assert all(regex.fullmatch(DEMO_PATTERN, line) for line in lines), lines


def test_demo_custom_regex_greedy(capsys):
    assert main(["demo", "--tokenizer", _tokenizer_path(), "--regex", "(cat|dog)s?", "-n", "1", "--no-sample"]) == 0
    assert regex.fullmatch("(cat|dog)s?", capsys.readouterr().out.strip())


@pytest.mark.parametrize(
    "argv,fragment",
    [
        (["--regex", "a(?<=b)"], "look-behind"),
        (["--regex", "a(?=b)"], "matches no string at all"),  # a whole match has nothing after it
        (["--regex-file", "/nonexistent/regex.txt"], "cannot read regex file"),
        (["--regex", "[z-a]"], "out of order"),
    ],
)
def test_errors_are_one_line(capsys, argv, fragment):
    assert main(["demo", "--tokenizer", _tokenizer_path(), *argv]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) <= 2 and err[-1].startswith("constrain: error:") and fragment in err[-1]


def test_unloadable_tokenizer(capsys, tmp_path):
    assert main(["demo", "--tokenizer", str(tmp_path)]) == 2
    assert "cannot load tokenizer" in capsys.readouterr().err


def test_import_is_light():
    """``import constrain`` loads neither torch nor numba (they load on first use)."""
    code = "import sys, constrain; print(sorted(m for m in ('torch', 'numba', 'transformers') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env=dict(os.environ))
    assert out.stdout.strip() == "[]"


def test_demo_with_grammar_file(capsys, tmp_path):
    from lark import Lark

    grammar = 'start: "(" INT ("," INT)* ")"\nINT: /[0-9]{1,2}/\n'
    path = tmp_path / "tuple.lark"
    path.write_text(grammar)
    assert main(["demo", "--tokenizer", _tokenizer_path(), "--grammar", str(path), "-n", "3",
                 "--max-new-tokens", "64"]) == 0
    lines = capsys.readouterr().out.splitlines()
    parser = Lark(grammar, parser="lalr")
    for line in lines:
        parser.parse(line)
    assert len(lines) == 3


def test_grammar_error_is_one_line(capsys, tmp_path):
    path = tmp_path / "bad.lark"
    path.write_text('start: x\nx: "a" | y\ny: "a"\n')
    assert main(["demo", "--tokenizer", _tokenizer_path(), "--grammar", str(path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert err.startswith("constrain: error: Invalid grammar at line 2")
