"""Exactness of regex token masks against a brute-force oracle on real tokenizers.

At random viable prefixes (reached by sampling tokens the engine allows), the
engine's mask must equal the set of tokens ``t`` for which ``prefix + bytes(t)`` can
still be extended to a full match, as decided by the ``regex`` module's partial
matching over the whole vocabulary (:class:`constrain.testing.RegexOracle`), and EOS
must be set exactly at full matches.
"""

from __future__ import annotations

import random
import string
import zlib

import pytest

from constrain import Compiler, Matcher, RegexError, TokenizerInfo
from constrain.testing import RegexOracle, check_masks_along_random_walk

TOKENIZERS = ["llama-3", "llama-2", "gpt2", "qwen2.5", "mistral-7b-v0.1"]


def _thousand_words() -> str:
    rng = random.Random(7)
    words = {"".join(rng.choice(string.ascii_lowercase) for _ in range(rng.randint(2, 9))) for _ in range(1200)}
    return "|".join(sorted(words)[:1000])


PATTERNS = {
    "date": r"\d{4}-\d{2}-\d{2}",
    "email": r"[a-z0-9._%+-]+@[a-z0-9.-]+\.[a-z]{2,4}",
    "json_number": r"-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?",
    "animals": r"(cat|dog|bird|fish|caterpillar|doge)",
    "bounded_letters": r"[a-z]{3,8}",
    "full_name": r"[A-Z][a-z]+ [A-Z][a-z]+",
    "us_phone": r"\(\d{3}\) \d{3}-\d{4}",
    "intl_phone": r"(\+\d{1,3} )?\d{3}-\d{3}-\d{4}",
    "cjk_class": r"[\u4e00-\u9fff]{1,4}",
    "cjk_literal": r"你好(世界|朋友)",
    "emoji": r"(😀|🎉|🚀)+",
    "latin1_class": r"[àáâãäåæçèéêë]+",
    "negated_class": r'[^"\\]{0,12}',
    "json_string": r'"([^"\\\x00-\x1f]|\\["\\/bfnrt])*"',
    "literals": r"(true|false|null)",
    "word_email": r"\w+@\w+\.com",
    "integer": r"(0|[1-9]\d*)",
    "uuid": r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}",
    "ipv4": r"((25[0-5]|2[0-4]\d|1?\d?\d)\.){3}(25[0-5]|2[0-4]\d|1?\d?\d)",
    "url": r"https?://[a-z0-9.-]+(/[a-z0-9._-]*)*",
    "repeat_alt": r"(ab|cd)*e?",
    "spaces": r"\s*yes\s*",
    "dot": r".{0,10}",
    "thousand_words": _thousand_words(),
    "postcode": r"[A-Z]{2}\d{2} ?\d{4}",
    "title": r"(Mr|Mrs|Ms|Dr)\. [A-Z][a-z]*",
    "hex_color": r"#[0-9a-fA-F]{6}",
    "thousands": r"\d+(,\d{3})*",
    "counted": r"(?:x|y){2}z{0,3}",
    "accented_words": r"Ünïcödé|ñandú|straße",
    "astral_class": r"[\u{1F300}-\u{1F5FF}]{2}",
}


def _check_walk(info: TokenizerInfo, pattern: str, steps: int, seed: int) -> None:
    """Walk ``steps`` random allowed tokens, comparing the mask to the oracle each time."""
    compiled = Compiler(info, cache_dir=False).compile_regex(pattern)
    oracle = RegexOracle(pattern, info.token_bytes, info.eos_token_ids)
    problem = check_masks_along_random_walk(Matcher(compiled), oracle, info, steps, seed)
    assert problem is None, problem


@pytest.mark.parametrize("tokenizer", TOKENIZERS)
@pytest.mark.parametrize("name", sorted(PATTERNS))
def test_mask_equals_bruteforce_oracle(infos, tokenizer, name):
    steps = 2 if name == "thousand_words" or tokenizer != "llama-3" else 4
    _check_walk(infos(tokenizer), PATTERNS[name], steps=steps, seed=zlib.crc32(f"{tokenizer}/{name}".encode()))


@pytest.mark.parametrize("tokenizer", ["llama-2", "llama-3"])
def test_multibyte_character_split_across_tokens(infos, tokenizer):
    """A CJK character fed one byte at a time (byte-fallback or byte tokens) is exact."""
    info = infos(tokenizer)
    compiled = Compiler(info, cache_dir=False).compile_regex(r"你好(世界|朋友)")
    matcher = Matcher(compiled)
    byte_tokens = {data: tid for tid, data in enumerate(info.token_bytes) if len(data) == 1}
    for byte in "你好世".encode():
        assert matcher.accept_token(byte_tokens[bytes([byte])]), byte
    assert not matcher.is_accepting()
    for byte in "界".encode()[:-1]:
        assert matcher.accept_token(byte_tokens[bytes([byte])])
    wrong = "朋".encode()[0]
    assert not matcher.accept_token(byte_tokens[bytes([wrong])]) or "界".encode()[0] == wrong
    assert matcher.accept_token(byte_tokens[bytes(["界".encode()[-1]])])
    assert matcher.is_accepting()


#: Look-aheads and word boundaries (compile_regex builds them the JSON Schema way, anchored
#: at both ends), where ``regex``'s partial matching judges prefixes exactly: none asserts
#: past the end of a whole match.
ASSERTION_PATTERNS = {
    "no_leading_zero": r"(?!0\d)\d{1,4}",
    "word_then_number": r"[a-z]+\b ?\d{1,3}",
    "no_double_dot": r"(?:(?!\.\.)[a-z.]){1,12}",
    "not_a_keyword": r"(?!(?:if|in)(?![a-z]))[a-z]{1,6}(?: [0-9])?",
}


@pytest.mark.parametrize("tokenizer", ["llama-3", "gpt2"])
@pytest.mark.parametrize("name", sorted(ASSERTION_PATTERNS))
def test_masks_with_assertions_equal_bruteforce_oracle(infos, tokenizer, name):
    _check_walk(infos(tokenizer), ASSERTION_PATTERNS[name], steps=4, seed=zlib.crc32(f"{tokenizer}/{name}".encode()))


def test_assertions_in_whole_matches(infos):
    """What the assertions decide, token by token: ``00`` and ``if`` are refused where the
    look-aheads say so, and a look-ahead past the text's end matches nothing."""
    compiler = Compiler(infos("gpt2"), cache_dir=False)

    def whole(compiled, text: str) -> bool:
        matcher = Matcher(compiled)
        return matcher.accept_bytes(text) and matcher.is_accepting()

    digits = compiler.compile_regex(r"(?!0\d)\d{1,4}")
    assert whole(digits, "0") and whole(digits, "1000") and not Matcher(digits).accept_bytes("00")
    keyword = compiler.compile_regex(r"(?!(?:if|in)(?![a-z]))[a-z]{1,6}(?: [0-9])?")
    assert whole(keyword, "iff") and whole(keyword, "int 3") and not whole(keyword, "if")
    assert not Matcher(keyword).accept_bytes("if ")
    with pytest.raises(RegexError, match="matches no string at all"):
        compiler.compile_regex("a(?=b)")
