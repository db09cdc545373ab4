"""The Matcher contract on a small synthetic vocabulary (fast, exhaustive where possible)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from constrain import BitmaskError, Compiler, Matcher, TokenizerInfo, allocate_token_bitmask
from constrain.testing import RegexOracle, bitmask_to_ids

# ids: 0..9 digits, 10 "-", 11 "12", 12 "2024-", 13 "-0", 14 "a", 15 "é" first byte, 16 "é" second byte,
# 17 "é", 18 "<eos>", 19 "<pad>" (special), 20 "" (empty), 21 "</s>" (second eos)
TOKENS = [str(d).encode() for d in range(10)] + [b"-", b"12", b"2024-", b"-0", b"a", b"\xc3", b"\xa9", "é".encode(), b"", b"", b"", b""]
EOS = (18, 21)


@pytest.fixture(scope="module")
def info():
    # vocab_size 40: ids 22..39 are padding and must never be allowed.
    return TokenizerInfo(TOKENS, eos_token_ids=EOS, special_token_ids=[18, 19, 21], vocab_size=40)


@pytest.fixture(scope="module")
def compiler(info):
    return Compiler(info, cache_dir=False)


def allowed(matcher: Matcher, width: int = 2) -> set[int]:
    bitmask = np.zeros((1, width), dtype=np.int32)
    matcher.fill_next_token_bitmask(bitmask)
    return set(bitmask_to_ids(bitmask[0]).tolist())


@pytest.mark.parametrize("pattern", [r"\d{4}-\d{2}", r"(a|é)+", r"-?\d+", r"[0-9]{0,3}(-a)?", r"é?-+"])
def test_every_reachable_prefix_matches_oracle(compiler, info, pattern):
    """Breadth-first over all token sequences up to depth 4: the mask equals brute force."""
    oracle = RegexOracle(pattern, info.token_bytes, info.eos_token_ids)
    frontier = [(Matcher(compiler.compile_regex(pattern)), b"")]
    for _ in range(4):
        nxt = []
        for matcher, prefix in frontier:
            got = allowed(matcher)
            assert got == oracle.allowed_ids(prefix, info.special_token_ids), prefix
            for token in sorted(got - set(EOS))[:4]:
                child = matcher.fork()
                assert child.accept_token(token)
                nxt.append((child, prefix + info.token_bytes[token]))
        frontier = nxt


def test_eos_termination_rollback_reset(compiler):
    matcher = Matcher(compiler.compile_regex(r"\d{2}"))
    assert not matcher.accept_token(18)  # EOS before a full match
    assert matcher.accept_token(1) and matcher.accept_token(2)
    assert matcher.is_accepting() and not matcher.is_terminated()
    assert allowed(matcher) == {18, 21}
    assert not matcher.accept_token(3)
    assert matcher.accept_token(21)
    assert matcher.is_terminated()
    assert allowed(matcher) == {18, 21}  # only EOS after termination
    assert not matcher.accept_token(5)
    assert matcher.accept_token(18)  # further EOS is idempotent
    matcher.rollback(2)
    assert not matcher.is_terminated() and matcher.num_steps == 2
    matcher.rollback(1)
    assert allowed(matcher) == set(range(10))
    matcher.reset()
    assert matcher.num_steps == 0
    with pytest.raises(ValueError):
        matcher.rollback(1)


def test_fork_is_independent(compiler):
    matcher = Matcher(compiler.compile_regex(r"\d-\d"))
    assert matcher.accept_token(4)
    child = matcher.fork()
    assert child.accept_token(10)
    assert matcher.num_steps == 1 and child.num_steps == 2
    assert allowed(matcher) == {10, 13}
    assert allowed(child) == set(range(10))


def test_accept_bytes_and_split_character(compiler):
    matcher = Matcher(compiler.compile_regex(r"é+a"))
    assert matcher.accept_token(15)  # first byte of é
    assert allowed(matcher) == {16}
    assert matcher.accept_token(16)
    assert matcher.accept_bytes("é")
    assert not matcher.accept_bytes(b"\xc3\x00")
    assert matcher.accept_bytes(b"a") and matcher.is_accepting()
    matcher.rollback(1)
    assert not matcher.is_accepting()


def test_forced_bytes(compiler):
    matcher = Matcher(compiler.compile_regex(r"2024-(0\d|1[0-2])"))
    assert matcher.forced_bytes() == b"2024-"
    assert matcher.accept_token(12)
    assert matcher.forced_bytes() == b""
    assert matcher.accept_token(1)
    assert matcher.forced_bytes() == b""


def test_padding_ids_and_special_tokens_never_allowed(compiler):
    matcher = Matcher(compiler.compile_regex(r"[\s\S]*"))  # any string at all
    got = allowed(matcher)
    # id 16 is a lone continuation byte: never valid UTF-8 at a character start.
    assert got == (set(range(18)) - {16}) | {18, 21}
    for token in (19, 20, 30, 39):
        assert not matcher.accept_token(token)


def test_bitmask_targets(compiler, info):
    matcher = Matcher(compiler.compile_regex(r"\d"))
    wide = allocate_token_bitmask(3, 200)  # logits wider than the vocabulary: tail cleared
    matcher.fill_next_token_bitmask(wide, row=2)
    assert set(bitmask_to_ids(wide[2]).tolist()) == set(range(10))
    assert (wide[0] == -1).all()  # other rows untouched
    one_d = torch.zeros(2, dtype=torch.int32)
    matcher.fill_next_token_bitmask(one_d)
    assert set(bitmask_to_ids(one_d).tolist()) == set(range(10))
    with pytest.raises(BitmaskError):
        matcher.fill_next_token_bitmask(torch.zeros((1, 2), dtype=torch.int64))
    with pytest.raises(BitmaskError):
        matcher.fill_next_token_bitmask(np.zeros((1, 2), dtype=np.int32), row=1)


def test_bitmask_views_follow_the_tensor(compiler):
    """The remembered view of the last tensor is dropped when that tensor changes in place."""
    matcher = Matcher(compiler.compile_regex(r"\d"))
    first, second = allocate_token_bitmask(2, 40), allocate_token_bitmask(1, 40)
    for target, row in ((first, 1), (second, 0), (first, 0), (first, 0)):
        target.zero_()
        matcher.fill_next_token_bitmask(target, row=row)
        assert set(bitmask_to_ids(target[row]).tolist()) == set(range(10))
    with pytest.raises(BitmaskError, match="row"):
        matcher.fill_next_token_bitmask(second, row=1)
    first.resize_(1, 2)  # same memory, fewer rows
    with pytest.raises(BitmaskError, match="row"):
        matcher.fill_next_token_bitmask(first, row=1)
    first.resize_(1, 1)  # narrower: ids >= 32 are never allowed here, so one word is enough
    first.zero_()
    matcher.fill_next_token_bitmask(first)
    assert set(bitmask_to_ids(first[0]).tolist()) == set(range(10))
    first.data = torch.zeros((2, 2), dtype=torch.int64)
    with pytest.raises(BitmaskError, match="dtype"):
        matcher.fill_next_token_bitmask(first)


def test_compiler_caches_and_validates(compiler, info):
    assert compiler.compile_regex("a+") is compiler.compile_regex("a+")
    with pytest.raises(TypeError):
        Compiler("not an info")
    with pytest.raises(TypeError):
        compiler.compile_regex(42)


def test_disk_cache_round_trip(info, tmp_path):
    first = Compiler(info, cache_dir=tmp_path).compile_regex(r"(ab|cd){2,5}")
    assert any(tmp_path.rglob("*.npz"))
    second = Compiler(info, cache_dir=tmp_path).compile_regex(r"(ab|cd){2,5}")
    assert np.array_equal(first.engine.dfa.trans, second.engine.dfa.trans)
    # A corrupt entry is a miss, never a result.
    for path in tmp_path.rglob("*.npz"):
        path.write_bytes(b"garbage")
    third = Compiler(info, cache_dir=tmp_path).compile_regex(r"(ab|cd){2,5}")
    assert np.array_equal(first.engine.dfa.trans, third.engine.dfa.trans)


def test_disk_cache_keys_change_with_the_code(monkeypatch):
    """An edited checkout (same version number) never reads what older code compiled."""
    from constrain.automata import cache

    before = cache.content_key("regex-dfa", "a+")
    assert cache.content_key("regex-dfa", "a+") == before
    monkeypatch.setattr(cache, "code_fingerprint", lambda: "edited")
    assert cache.content_key("regex-dfa", "a+") != before


def test_precompute_rows_cached_on_disk(info, tmp_path):
    pattern = r"[0-9]{2,3}(-[a-]+)?"
    lazy = Compiler(info, cache_dir=False).compile_regex(pattern)
    eager = Compiler(info, cache_dir=tmp_path).compile_regex(pattern, precompute=True)
    assert len(eager.engine._rows) == eager.engine.dfa.num_states
    assert any(tmp_path.rglob("rows/*.npz"))
    loaded = Compiler(info, cache_dir=tmp_path).compile_regex(pattern, precompute=True)
    for state in range(loaded.engine.dfa.num_states):
        assert np.array_equal(loaded.engine.mask_words(state), lazy.engine.mask_words(state))
