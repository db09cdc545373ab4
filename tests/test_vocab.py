"""Tests for :mod:`constrain.vocab`: exact token bytes for real and synthetic vocabularies.

The real-tokenizer tests encode text with the tokenizer itself and require our byte
table to give the original bytes back exactly; a single wrong entry in the table would
make masks allow the wrong tokens, so these are the tests that matter most.
"""

from __future__ import annotations

import pickle
import random
import string
from collections.abc import Callable
from itertools import combinations
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from conftest import shared_data_dir

import constrain.vocab as vocab_module
from constrain.errors import TokenizerError
from constrain.vocab import TokenizerInfo, bytes_to_unicode

TOKENIZERS = ("gpt2", "llama-2", "llama-3", "mistral-7b-v0.1", "qwen2.5")
SENTENCEPIECE = ("llama-2", "mistral-7b-v0.1")
BYTE_LEVEL = ("gpt2", "llama-3", "qwen2.5")

EXPECTED_EOS = {
    "gpt2": (50256,),
    "llama-2": (2,),
    "llama-3": (128001, 128008, 128009),
    "mistral-7b-v0.1": (2,),
    "qwen2.5": (151643, 151645),
}

EXPECTED_TYPE = {
    "gpt2": "byte_level",
    "llama-2": "sentencepiece",
    "llama-3": "byte_level",
    "mistral-7b-v0.1": "sentencepiece",
    "qwen2.5": "byte_level",
}

FIXED_TEXTS = (
    "Hello, world!",
    '{"name": "Ada", "age": 36, "tags": ["x", "y"], "ok": true, "pi": 3.14159}',
    "def f(x):\n    return x ** 2  # square\n\n\tprint(f(3))\r\n",
    "中文字符和日本語のテキスト、한국어",
    "emoji: 😀👍🏽🦩 and ZWJ 👨‍👩‍👧",
    "a    b        c                d",
    "\n\n\n   \n\t\t \u00a0x",
    " leading space and trailing   ",
    "ꙮ𝔘𓀀 rare characters",
    "Ünïcödé ß → ∑ ∞ ≠ ≤",
)

_PIECES = (
    *string.ascii_letters,
    *string.digits,
    *string.punctuation,
    " ", "  ", "    ", "\n", "\n\n", "\t", "\r\n",
    "中", "文", "日本", "語", "한", "é", "ß", "ü", "\u00a0", "→", "∑",
    "😀", "🦩", "👍🏽", "𝔘", "ꙮ",
    '{"k": [1, 2]}', "null", "true", "<|", "|>",
)


def _random_texts(count: int = 40, seed: int = 1234) -> list[str]:
    """Return deterministic random texts mixing ASCII, whitespace runs, CJK and emoji."""
    rng = random.Random(seed)
    return ["".join(rng.choice(_PIECES) for _ in range(rng.randint(1, 30))) for _ in range(count)]


TEXTS = (*FIXED_TEXTS, *_random_texts())

_INFO_CACHE: dict[str, TokenizerInfo] = {}


def _tokenizer_dir(name: str) -> Path:
    """Return the shared folder of tokenizer ``name``, or skip where it is absent.

    For tests that need a private, mutable copy rather than the session-cached one.
    """
    data_dir = shared_data_dir()
    path = None if data_dir is None else data_dir / "tokenizers" / name
    if path is None or not (path / "tokenizer.json").is_file():
        pytest.skip(f"shared tokenizer {name!r} not found (set $CONSTRAIN_DATA_DIR)")
    return path


@pytest.fixture(params=TOKENIZERS)
def name(request: pytest.FixtureRequest) -> str:
    """The name of one shared tokenizer folder."""
    return request.param


@pytest.fixture
def tokenizer(name: str, load_tokenizer: Callable[[str], Any]) -> Any:
    """The cached Hugging Face tokenizer ``name`` (skips where the data is absent)."""
    return load_tokenizer(name)


@pytest.fixture
def info(name: str, tokenizer: Any) -> TokenizerInfo:
    """The :class:`TokenizerInfo` of ``tokenizer``, built once per session."""
    if name not in _INFO_CACHE:
        _INFO_CACHE[name] = TokenizerInfo.from_huggingface(tokenizer)
    return _INFO_CACHE[name]


def _expected_bytes(info: TokenizerInfo, text: str) -> bytes:
    """Return what encoding ``text`` should decode back to.

    SentencePiece normalizers prepend "▁" to the whole text, so the first token carries
    a space that was not in the input.
    """
    prefix = b" " if info.vocab_type == "sentencepiece" else b""
    return prefix + text.encode("utf-8")


# ------------------------------------------------------------------- real tokenizers


def test_layout_detected(name: str, info: TokenizerInfo, tokenizer: Any) -> None:
    assert info.vocab_type == EXPECTED_TYPE[name]
    assert info.num_tokens == len(tokenizer) == info.vocab_size
    assert len(info.token_bytes) == info.num_tokens


@pytest.mark.parametrize("text", TEXTS, ids=range(len(TEXTS)))
def test_encode_then_decode_bytes_round_trips(info: TokenizerInfo, tokenizer: Any, text: str) -> None:
    ids = tokenizer.encode(text, add_special_tokens=False)
    assert info.decode_bytes(ids) == _expected_bytes(info, text)


@pytest.mark.parametrize("name", SENTENCEPIECE)
def test_sentencepiece_prepends_exactly_one_space(name: str, info: TokenizerInfo, tokenizer: Any) -> None:
    ids = tokenizer.encode("Hello", add_special_tokens=False)
    assert info.decode_bytes(ids) == b" Hello"
    assert info.token_bytes[ids[0]].startswith(b" ")


@pytest.mark.parametrize("name", SENTENCEPIECE)
def test_sentencepiece_literal_metaspace_decodes_as_space(
    name: str, info: TokenizerInfo, tokenizer: Any
) -> None:
    # SentencePiece cannot represent a literal "▁": the normalizer leaves it as is and
    # the decoder turns it into a space, so its bytes must be a space too.
    ids = tokenizer.encode("a\u2581b", add_special_tokens=False)
    assert tokenizer.decode(ids) == "a b"
    assert info.decode_bytes(ids) == b" a b"


def test_special_token_text_encodes_to_nothing(name: str, info: TokenizerInfo, tokenizer: Any) -> None:
    # Special-token text in the input is matched as the control token, which is not text.
    eos_text = tokenizer.convert_ids_to_tokens(info.eos_token_ids[0])
    ids = tokenizer.encode(f"x{eos_text}y", add_special_tokens=False)
    assert info.eos_token_ids[0] in ids
    # SentencePiece normalizes each text segment between added tokens on its own, so
    # "y" gets its own prepended "▁".
    expected = b" x y" if name in SENTENCEPIECE else b"xy"
    assert info.decode_bytes(ids) == expected


@pytest.mark.parametrize("name", BYTE_LEVEL)
def test_byte_level_tokens_use_gpt2_alphabet(name: str, info: TokenizerInfo, tokenizer: Any) -> None:
    space_newline = tokenizer.convert_tokens_to_ids(["Ġ", "Ċ"])
    assert [info.token_bytes[i] for i in space_newline] == [b" ", b"\n"]


@pytest.mark.parametrize("name", SENTENCEPIECE)
def test_byte_fallback_ids_are_single_bytes(name: str, info: TokenizerInfo, tokenizer: Any) -> None:
    for token_id in range(3, 259):
        assert tokenizer.convert_ids_to_tokens(token_id) == f"<0x{token_id - 3:02X}>"
        assert info.token_bytes[token_id] == bytes([token_id - 3])


def test_multibyte_characters_split_across_tokens_reassemble(info: TokenizerInfo, tokenizer: Any) -> None:
    text = "ꙮ𝔘𓀀🦩"
    ids = tokenizer.encode(text, add_special_tokens=False)
    pieces = [info.token_bytes[i] for i in ids]
    partial = [piece for piece in pieces if not _is_valid_utf8(piece)]
    assert partial, "expected rare characters to be split into partial UTF-8 tokens"
    assert b"".join(pieces) == _expected_bytes(info, text)


def _is_valid_utf8(data: bytes) -> bool:
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def test_eos_ids(name: str, info: TokenizerInfo) -> None:
    assert info.eos_token_ids == EXPECTED_EOS[name]


def test_special_tokens_are_not_matchable(info: TokenizerInfo) -> None:
    matchable = info.matchable_token_ids()
    assert matchable.dtype == np.int32
    assert np.all(np.diff(matchable) > 0)
    assert info.special_token_ids
    assert not set(matchable.tolist()) & info.special_token_ids
    assert not set(matchable.tolist()) & set(info.eos_token_ids)
    assert all(info.token_bytes[i] for i in matchable.tolist())
    assert all(info.token_bytes[i] == b"" for i in info.special_token_ids)
    assert info.decode_bytes(sorted(info.special_token_ids)) == b""


def test_matchable_count(name: str, info: TokenizerInfo) -> None:
    expected = {
        "gpt2": 50256,
        "llama-2": 31997,
        "llama-3": 128000,
        "mistral-7b-v0.1": 31997,
        "qwen2.5": 151651,
    }
    assert len(info.matchable_token_ids()) == expected[name]


def test_qwen_non_special_added_tokens_are_literal_text(load_tokenizer: Callable[[str], Any]) -> None:
    tokenizer = load_tokenizer("qwen2.5")
    info = TokenizerInfo.from_huggingface(tokenizer)
    tool_call = tokenizer.convert_tokens_to_ids("<tool_call>")
    assert info.token_bytes[tool_call] == b"<tool_call>"
    assert tool_call not in info.special_token_ids
    assert tool_call in info.matchable_token_ids()
    assert info.decode_bytes(tokenizer.encode("<tool_call>{}</tool_call>", add_special_tokens=False)) == (
        b"<tool_call>{}</tool_call>"
    )


def test_qwen_padded_vocab(load_tokenizer: Callable[[str], Any]) -> None:
    info = TokenizerInfo.from_huggingface(load_tokenizer("qwen2.5"), vocab_size=151936)
    assert (info.num_tokens, info.vocab_size) == (151665, 151936)
    assert int(info.matchable_token_ids().max()) < 151665
    with pytest.raises(TokenizerError, match="151700"):
        info.decode_bytes([151700])


def test_vocab_size_smaller_than_tokenizer_raises(load_tokenizer: Callable[[str], Any]) -> None:
    pattern = r"Invalid vocab_size: expected at least len\(tokenizer\) = 50257"
    with pytest.raises(TokenizerError, match=pattern):
        TokenizerInfo.from_huggingface(load_tokenizer("gpt2"), vocab_size=50000)


def test_stop_token_ids_override(load_tokenizer: Callable[[str], Any]) -> None:
    tokenizer = load_tokenizer("gpt2")
    newline = tokenizer.convert_tokens_to_ids("Ċ")
    info = TokenizerInfo.from_huggingface(tokenizer, stop_token_ids=[50256, newline, newline])
    assert info.eos_token_ids == (newline, 50256)
    assert newline not in info.matchable_token_ids()
    with pytest.raises(TokenizerError, match="eos_token_ids"):
        TokenizerInfo.from_huggingface(tokenizer, stop_token_ids=[60000])


def test_hash_stable_across_loads_and_distinct(load_tokenizer: Callable[[str], Any]) -> None:
    from transformers import AutoTokenizer

    fresh = AutoTokenizer.from_pretrained(str(_tokenizer_dir("gpt2")))
    first = TokenizerInfo.from_huggingface(load_tokenizer("gpt2"))
    second = TokenizerInfo.from_huggingface(fresh)
    assert first.hash == second.hash
    assert first == second
    assert len(first.hash) == 64 and int(first.hash, 16) >= 0
    padded = TokenizerInfo.from_huggingface(fresh, vocab_size=50304)
    assert padded.hash != first.hash


def test_hashes_differ_between_tokenizers(load_tokenizer: Callable[[str], Any]) -> None:
    hashes = {}
    for name in TOKENIZERS:
        tokenizer = load_tokenizer(name)
        hashes[name] = _INFO_CACHE.setdefault(name, TokenizerInfo.from_huggingface(tokenizer)).hash
    for left, right in combinations(TOKENIZERS, 2):
        assert hashes[left] != hashes[right], (left, right)


def test_pickle_round_trip(info: TokenizerInfo) -> None:
    info.matchable_token_ids()
    restored = pickle.loads(pickle.dumps(info))
    assert restored.hash == info.hash
    assert restored.token_bytes == info.token_bytes
    assert restored.eos_token_ids == info.eos_token_ids
    np.testing.assert_array_equal(restored.matchable_token_ids(), info.matchable_token_ids())


# ------------------------------------------------------------- added tokens, raw backend


def test_added_tokens_match_decoder_byte_level() -> None:
    from tokenizers import AddedToken, Tokenizer

    backend = Tokenizer.from_file(str(_tokenizer_dir("gpt2") / "tokenizer.json"))
    backend.add_tokens(["zzĊ", "Ġfoo bar", AddedToken("<extra>", special=True)])
    info = TokenizerInfo.from_huggingface(backend)
    assert info.num_tokens == 50260
    assert info.token_bytes[50257] == b"zz\n"  # every char is a stand-in: mapped
    assert info.token_bytes[50258] == "Ġfoo bar".encode()  # literal space: kept as text
    assert 50259 in info.special_token_ids and info.token_bytes[50259] == b""
    for token_id in (50257, 50258):
        assert backend.decode([token_id]).encode() == info.token_bytes[token_id]


def test_added_tokens_match_decoder_sentencepiece() -> None:
    from tokenizers import AddedToken, Tokenizer

    backend = Tokenizer.from_file(str(_tokenizer_dir("llama-2") / "tokenizer.json"))
    backend.add_tokens([AddedToken("qq r", normalized=True), AddedToken("<0x41>xyz", normalized=False)])
    info = TokenizerInfo.from_huggingface(backend)
    # A normalized added token is stored as "▁qq▁r" and decodes with its spaces.
    assert info.token_bytes[32000] == b" qq r"
    assert info.token_bytes[32001] == b"<0x41>xyz"
    assert info.eos_token_ids == (2,)


# ------------------------------------------------------------------ unsupported input


def _wrap(backend: Any) -> Any:
    from transformers import PreTrainedTokenizerFast

    return PreTrainedTokenizerFast(tokenizer_object=backend, eos_token="[SEP]")


def _wordpiece_tokenizer() -> Any:
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers

    vocab = {"[UNK]": 0, "[SEP]": 1, "hello": 2, "world": 3, "##s": 4, "wor": 5, "##ld": 6}
    backend = Tokenizer(models.WordPiece(vocab, unk_token="[UNK]"))
    backend.pre_tokenizer = pre_tokenizers.Whitespace()
    backend.decoder = decoders.WordPiece()
    return _wrap(backend)


def test_wordpiece_is_rejected_with_readable_message() -> None:
    tokenizer = _wordpiece_tokenizer()
    assert tokenizer.encode("hello worlds", add_special_tokens=False) == [2, 3, 4]
    with pytest.raises(TokenizerError) as caught:
        TokenizerInfo.from_huggingface(tokenizer)
    message = str(caught.value)
    assert message.startswith("Invalid tokenizer: expected")
    expected = (type(tokenizer).__name__, "model WordPiece", "decoder WordPiece", "ByteLevel", "SentencePiece")
    for fragment in expected:
        assert fragment in message


def test_unknown_decoder_is_rejected() -> None:
    from tokenizers import Tokenizer, decoders, models

    backend = Tokenizer(models.BPE({"a": 0, "b</w>": 1, "[SEP]": 2}, [], end_of_word_suffix="</w>"))
    backend.decoder = decoders.BPEDecoder(suffix="</w>")
    with pytest.raises(TokenizerError, match="decoder BPEDecoder"):
        TokenizerInfo.from_huggingface(_wrap(backend))


def test_missing_decoder_is_rejected() -> None:
    from tokenizers import Tokenizer, models

    backend = Tokenizer(models.BPE({"a": 0, "b": 1, "[SEP]": 2}, []))
    with pytest.raises(TokenizerError, match="no decoder"):
        TokenizerInfo.from_huggingface(_wrap(backend))


def test_slow_tokenizer_is_rejected() -> None:
    class SlowTokenizer:
        eos_token_id = 0

    with pytest.raises(TokenizerError, match="SlowTokenizer without a backend_tokenizer"):
        TokenizerInfo.from_huggingface(SlowTokenizer())


def test_wrong_byte_table_is_caught_by_verification(
    load_tokenizer: Callable[[str], Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    correct = vocab_module._byte_level_token_bytes

    def off_by_one(token: str) -> bytes:
        data = correct(token)
        return data.replace(b"e", b"E")

    monkeypatch.setattr(vocab_module, "_byte_level_token_bytes", off_by_one)
    with pytest.raises(TokenizerError, match="decodes to"):
        TokenizerInfo.from_huggingface(load_tokenizer("gpt2"))


# ------------------------------------------------------------------------ byte table


def test_bytes_to_unicode_is_a_bijection_with_known_entries() -> None:
    table = bytes_to_unicode()
    assert sorted(table) == list(range(256))
    assert len(set(table.values())) == 256
    assert table[ord(" ")] == "Ġ" and table[ord("\n")] == "Ċ" and table[ord("A")] == "A"
    assert table[0] == "\u0100" and table[0xAD] == "\u0143"


def test_byte_level_mapping_inverts_the_table() -> None:
    table = bytes_to_unicode()
    everything = "".join(table[b] for b in range(256))
    assert vocab_module._byte_level_token_bytes(everything) == bytes(range(256))


# ---------------------------------------------------------------- direct construction


def _small(**overrides: Any) -> TokenizerInfo:
    arguments: dict[str, Any] = {
        "eos_token_ids": [3],
        "special_token_ids": [3],
        "vocab_size": 8,
    }
    arguments.update(overrides)
    tokens = arguments.pop("token_bytes", [b"a", b"bc", b"", b"<eos>", b"\xe4\xb8"])
    return TokenizerInfo(tokens, **arguments)


def test_direct_construction() -> None:
    info = _small()
    assert info.num_tokens == 5 and info.vocab_size == 8 and len(info) == 5
    assert info.token_bytes == (b"a", b"bc", b"", b"<eos>", b"\xe4\xb8")
    assert info.eos_token_ids == (3,)
    assert info.special_token_ids == frozenset({3})
    assert info.vocab_type == "raw"
    assert info.matchable_token_ids().tolist() == [0, 1, 4]
    assert info.decode_bytes([0, 3, 1, 4]) == b"abc\xe4\xb8"
    assert info.decode_bytes(np.array([1, 0])) == b"bca"
    assert "TokenizerInfo(" in repr(info) and len(repr(info)) < 200


def test_defaults_and_normalisation() -> None:
    info = TokenizerInfo([bytearray(b"x"), memoryview(b"y")], eos_token_ids=(1, np.int64(1)))
    assert info.token_bytes == (b"x", b"y") and all(type(t) is bytes for t in info.token_bytes)
    assert info.vocab_size == 2 and info.eos_token_ids == (1,)
    assert info.special_token_ids == frozenset()
    assert info.matchable_token_ids().tolist() == [0]


def test_hash_is_pinned_and_sensitive() -> None:
    base = _small()
    # Pinned so that an accidental change of the hashed format is noticed (bump the
    # format version on purpose instead).
    assert base.hash == PINNED_HASH
    variants = [
        _small(vocab_size=9),
        _small(special_token_ids=[3, 2]),
        _small(eos_token_ids=[3, 0]),
        _small(vocab_type="byte_level"),
        _small(token_bytes=[b"ab", b"c", b"", b"<eos>", b"\xe4\xb8"]),
    ]
    assert len({base.hash, *(variant.hash for variant in variants)}) == len(variants) + 1
    assert base.hash == _small().hash and base == _small() and hash(base) == hash(_small())


PINNED_HASH = "d6a733092e5edc74843f16dd9d5d2035d5b951a24b5fa4c9502970ccf163e480"


def test_immutable() -> None:
    info = _small()
    with pytest.raises(AttributeError):
        info.vocab_size = 10  # type: ignore[misc]
    with pytest.raises(AttributeError):
        info.foo = 1  # type: ignore[attr-defined]
    with pytest.raises(AttributeError):
        del info._token_bytes
    with pytest.raises(ValueError):
        info.matchable_token_ids()[0] = 7


def test_decode_bytes_rejects_non_tokens() -> None:
    info = _small()
    for bad in (-1, 5, 7, 8):
        with pytest.raises(TokenizerError, match="Invalid token id"):
            info.decode_bytes([0, bad])
    with pytest.raises(TokenizerError, match="expected int token ids, got str"):
        info.decode_bytes(["a"])  # type: ignore[list-item]


@pytest.mark.parametrize(
    ("overrides", "pattern"),
    [
        ({"token_bytes": "abc"}, r"Invalid token_bytes: expected a sequence of bytes, got str"),
        ({"token_bytes": b"abc"}, r"Invalid token_bytes: expected a sequence of bytes, got bytes"),
        ({"token_bytes": []}, r"Invalid token_bytes: expected at least one token"),
        ({"token_bytes": [b"a", "b"]}, r"Invalid token_bytes\[1\]: expected bytes, got str 'b'"),
        ({"token_bytes": [b"a", None]}, r"Invalid token_bytes\[1\]: expected bytes, got NoneType"),
        ({"eos_token_ids": []}, r"Invalid eos_token_ids: expected at least one"),
        ({"eos_token_ids": 3}, r"Invalid eos_token_ids: expected an iterable of int token ids, got int"),
        ({"eos_token_ids": [5]}, r"Invalid eos_token_ids: expected ids in \[0, 5\) .*got 5"),
        ({"eos_token_ids": [-1]}, r"Invalid eos_token_ids: expected ids in \[0, 5\) .*got -1"),
        ({"eos_token_ids": [True]}, r"Invalid eos_token_ids: expected int token ids, got bool"),
        ({"eos_token_ids": [1.0]}, r"Invalid eos_token_ids: expected int token ids, got float"),
        ({"special_token_ids": [6]}, r"Invalid special_token_ids: expected ids in \[0, 5\) .*got 6"),
        ({"special_token_ids": "3"}, r"Invalid special_token_ids: expected an iterable"),
        ({"vocab_size": 4}, r"Invalid vocab_size: expected at least the number of tokens = 5 .*got 4"),
        ({"vocab_size": 8.0}, r"Invalid vocab_size: expected an int, got float"),
        ({"vocab_size": True}, r"Invalid vocab_size: expected an int, got bool"),
        ({"vocab_type": "wordpiece"}, r"Invalid vocab_type: expected one of .*got 'wordpiece'"),
    ],
)
def test_direct_construction_validation(overrides: dict[str, Any], pattern: str) -> None:
    with pytest.raises(TokenizerError, match=pattern) as caught:
        _small(**overrides)
    assert isinstance(caught.value, ValueError)
