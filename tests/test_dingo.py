"""DINGO against brute force, statistically, and end to end with a tiny masked LM.

The oracles never touch the engine's automata: viability and full matches come from
the ``regex`` module (``constrain.testing.RegexOracle``), and the best block or the
exact restricted distribution from enumerating every token string of the block over
a real tokenizer (GPT-2) restricted to a few hundred ids.
"""

from __future__ import annotations

import math
import random
import zlib
from collections import Counter

import pytest
import torch

from constrain import Compiler, ConstrainError, TokenizerInfo
from constrain.samplers.diffusion import DiffusionGenerator
from constrain.samplers.dingo import (
    DiffusionError,
    NonRegularConstraintError,
    dingo_decode,
    dingo_sample,
    dingo_table,
)
from constrain.testing import RegexOracle, ecma_to_python_regex

PATTERNS = {
    "date": r"\d{4}-\d{2}-\d{2}",
    "pets": r"(cat|dog|bird)s?( and (cat|dog|bird)s?)*",
    "number": r"-?(0|[1-9][0-9]*)(\.[0-9]+)?",
    "letters": r"[a-c]+(x|yz)?",
    "ab": r"(ab|a)(ba)*c?",
}
ALPHABET = set(b"0123456789-. abcdgirostxyzn")


@pytest.fixture(autouse=True)
def _one_thread():
    """Two shared cores: torch's thread pool only adds contention for these small ops."""
    saved = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(saved)


@pytest.fixture(scope="module")
def small_info(infos) -> TokenizerInfo:
    """GPT-2 restricted to printable ASCII bytes plus about 155 of its multi-byte tokens
    over the patterns' alphabet (seeded, few all-digit ones to keep enumeration small),
    and one EOS: about 250 ids."""
    full = infos("gpt2")
    singles = [bytes([b]) for b in range(32, 127)]
    multi = sorted({t for t in full.token_bytes if 2 <= len(t) <= 4 and set(t) <= ALPHABET})
    digits = [t for t in multi if t.isdigit()]
    words = [t for t in multi if not t.isdigit()]
    rng = random.Random(6)
    picked = rng.sample(digits, 12) + rng.sample(words, 140)
    picked += [t for t in (b" and", b"cat", b"dog", b"bird", b"cats", b"dogs") if t in multi and t not in picked]
    tokens = singles + picked + [b""]
    return TokenizerInfo(tokens, eos_token_ids=[len(tokens) - 1], special_token_ids=[len(tokens) - 1])


def _compiled(info: TokenizerInfo, pattern: str):
    return Compiler(info, cache_dir=False).compile_regex(pattern)


# -- the brute-force oracle ------------------------------------------------------------
class BlockOracle:
    """Every token string of a block, enumerated with viability pruning (``regex`` module)."""

    def __init__(self, info: TokenizerInfo, pattern: str) -> None:
        self.info = info
        self.eos = info.eos_token_ids[0]
        self.oracle = RegexOracle(pattern, info.token_bytes, info.eos_token_ids)
        self.real = [t for t, b in enumerate(info.token_bytes) if b]
        self._viable: dict[bytes, bool] = {}
        self._finish: dict[tuple, bool] = {}

    def viable(self, data: bytes) -> bool:
        if data not in self._viable:
            self._viable[data] = self.oracle.is_viable(data)
        return self._viable[data]

    def next_tokens(self, data: bytes, ended: bool) -> list[tuple[int, bytes, bool]]:
        """(token, new text, ended) for every token that keeps the text viable."""
        if ended:
            return [(self.eos, data, True)]
        out = [(t, data + self.info.token_bytes[t], False) for t in self.real
               if self.viable(data + self.info.token_bytes[t])]
        if self.oracle.is_complete(data):
            out.append((self.eos, data, True))
        return out

    def can_finish(self, data: bytes, ended: bool, within: int | None) -> bool:
        key = (data, ended, within)
        if key not in self._finish:
            if ended or self.oracle.is_complete(data):
                self._finish[key] = True
            elif within is None:
                self._finish[key] = self.viable(data)
            else:
                self._finish[key] = within > 0 and any(
                    self.can_finish(d, e, within - 1) for _, d, e in self.next_tokens(data, ended))
        return self._finish[key]

    def blocks(self, length: int, prefix: bytes = b"", within: int | None = None):
        """Yield ``(tokens, data)`` for every block of ``length`` tokens that can finish in ``within``."""
        def walk(tokens, data, ended):
            if len(tokens) == length:
                if self.can_finish(data, ended, within):
                    yield tokens, data
                return
            for t, d, e in self.next_tokens(data, ended):
                yield from walk(tokens + [t], d, e)

        yield from walk([], prefix, False)

    def best(self, scores: torch.Tensor, wildcard: list[bool], within: int | None) -> tuple[float, list[int]]:
        """Brute-force argmax: wildcard positions contribute 0 whatever token fills them."""
        s = scores.double().tolist()
        best, arg = -math.inf, None
        for tokens, _ in self.blocks(len(wildcard), within=within):
            total = sum(0.0 if w else s[i][t] for i, (t, w) in enumerate(zip(tokens, wildcard)))
            if total > best:
                best, arg = total, [-1 if w else t for t, w in zip(tokens, wildcard)]
        return best, arg


# -- exactness ---------------------------------------------------------------------
@pytest.mark.parametrize("name", sorted(PATTERNS))
@pytest.mark.parametrize("wild", ["none", "middle", "first"])
def test_decode_equals_bruteforce_argmax(small_info, name, wild):
    pattern = PATTERNS[name]
    table = dingo_table(_compiled(small_info, pattern))
    oracle = BlockOracle(small_info, pattern)
    gen = torch.Generator().manual_seed(zlib.crc32(f"{name}/{wild}".encode()))
    wildcard = {"none": [False] * 3, "middle": [False, True, False], "first": [True, False, False]}[wild]
    # The length-bounded oracle enumerates every 2-token continuation: too slow for the date.
    for remaining in (None, 0, 2) if name != "date" else (None, 0):
        scores = torch.randn(3, small_info.vocab_size, generator=gen) * 3
        expected, tokens = oracle.best(scores, wildcard, remaining)
        final = table.final_states(remaining)
        if expected == -math.inf:  # e.g. no date ends within three tokens of this vocabulary
            with pytest.raises(DiffusionError, match="No block"):
                dingo_decode(table, scores, wildcard=wildcard, final_states=final)
            continue
        result = dingo_decode(table, scores, wildcard=wildcard, final_states=final)
        assert result.score == pytest.approx(expected, abs=1e-4), (pattern, remaining)
        assert result.tokens == tokens, (pattern, remaining)


def test_decode_from_a_mid_output_state_with_committed_tokens(small_info):
    """A block after a committed prefix, with one position pinned to a token."""
    pattern = PATTERNS["pets"]
    table = dingo_table(_compiled(small_info, pattern))
    prefix_tokens = [small_info.token_bytes.index(b"c"), small_info.token_bytes.index(b"a")]
    state = table.start
    for t in prefix_tokens:
        state = table.advance(state, t)
    pinned = small_info.token_bytes.index(b" ")
    scores = torch.randn(3, small_info.vocab_size, generator=torch.Generator().manual_seed(3))
    scores[1] = float("-inf")
    scores[1, pinned] = 0.0
    result = dingo_decode(table, scores, start_state=state, final_states=table.final_states(None))
    oracle = BlockOracle(small_info, pattern)
    s = scores.double().tolist()
    best = max((sum(s[i][t] for i, t in enumerate(toks)), toks) for toks, _ in oracle.blocks(3, prefix=b"ca"))
    assert result.score == pytest.approx(best[0], abs=1e-4)
    assert result.tokens == best[1]


def test_table_transitions_equal_the_token_dfa(small_info):
    """Every (state, token) transition through the classes equals the engine's own walk."""
    for pattern in PATTERNS.values():
        compiled = _compiled(small_info, pattern)
        table, engine = dingo_table(compiled), compiled.engine
        for dense, dfa_state in enumerate(table.dfa_states):
            for token in range(small_info.vocab_size):
                nxt = table.advance(dense, token)
                if token in small_info.eos_token_ids:
                    assert (nxt == table.done_state) == engine.is_accepting(int(dfa_state))
                    continue
                want = engine.advance_token(int(dfa_state), token)
                assert (table.dfa_states[nxt] if nxt >= 0 else None) == want


# -- sampling ----------------------------------------------------------------------
@pytest.mark.parametrize("name,length,remaining", [("date", 2, None), ("pets", 3, 0), ("letters", 3, 0)])
def test_sample_matches_exact_restricted_distribution(small_info, name, length, remaining):
    pattern = PATTERNS[name]
    table = dingo_table(_compiled(small_info, pattern))
    gen = torch.Generator().manual_seed(11)
    scores = torch.randn(length, small_info.vocab_size, generator=gen) * 2
    s = scores.double().tolist()
    blocks = [tuple(t) for t, _ in BlockOracle(small_info, pattern).blocks(length, within=remaining)]
    assert len(blocks) > 1
    weights = [math.exp(sum(s[i][t] for i, t in enumerate(b))) for b in blocks]
    total = sum(weights)
    exact = {b: w / total for b, w in zip(blocks, weights)}
    n = 20_000
    drawn = dingo_sample(table, scores, final_states=table.final_states(remaining), num_samples=n, generator=gen)
    counts = Counter(map(tuple, drawn.tolist()))
    assert set(counts) <= set(exact), "a sampled block is outside the language"
    tv = 0.5 * sum(abs(counts.get(b, 0) / n - p) for b, p in exact.items())
    # E[TV] <= sum sqrt(p(1-p)/n) / 2, and TV concentrates within 0.015 (McDiarmid, p < 1e-4).
    bound = 0.5 * sum(math.sqrt(p * (1 - p) / n) for p in exact.values()) + 0.015
    assert tv < bound, (tv, bound, len(exact))
    top = max(exact, key=exact.get)
    assert abs(counts[top] / n - exact[top]) < 5 * math.sqrt(exact[top] * (1 - exact[top]) / n)


# -- errors ------------------------------------------------------------------------
def test_non_regular_constraint_is_refused(small_info):
    grammar = Compiler(small_info, cache_dir=False).compile_grammar('start: "a" start "b" | "c"')
    with pytest.raises(NonRegularConstraintError, match="regular language"):
        dingo_table(grammar)
    assert issubclass(NonRegularConstraintError, ConstrainError)
    compiler = Compiler(small_info, cache_dir=False)
    free_form = {"type": "object", "properties": {"a": {}}}
    with pytest.raises(NonRegularConstraintError, match="max_any_depth"):
        dingo_table(compiler.compile_json_schema(free_form))
    assert dingo_table(compiler.compile_json_schema(free_form, max_any_depth=2)) is not None


def test_bad_inputs_name_the_problem(small_info):
    table = dingo_table(_compiled(small_info, PATTERNS["date"]))
    with pytest.raises(DiffusionError, match="columns"):
        dingo_decode(table, torch.zeros(2, 7))
    with pytest.raises(DiffusionError, match="wildcard"):
        dingo_decode(table, torch.zeros(2, small_info.vocab_size), wildcard=[True])
    with pytest.raises(DiffusionError, match="start_state"):
        dingo_decode(table, torch.zeros(2, small_info.vocab_size), start_state=table.num_states)
    with pytest.raises(DiffusionError, match="No block"):  # a date cannot end after 3 tokens
        dingo_decode(table, torch.zeros(3, small_info.vocab_size), final_states=table.final_states(0))


# -- end to end --------------------------------------------------------------------
@pytest.fixture(scope="module")
def masked_lm(load_tokenizer, infos):
    """A 1-layer random BertForMaskedLM sized to GPT-2 plus one mask id (seeded)."""
    from transformers import BertConfig, BertForMaskedLM

    tokenizer = load_tokenizer("gpt2")
    vocab = len(tokenizer) + 1
    torch.manual_seed(0)
    config = BertConfig(vocab_size=vocab, hidden_size=32, intermediate_size=64, num_hidden_layers=1,
                        num_attention_heads=2, max_position_embeddings=64, initializer_range=0.5)
    model = BertForMaskedLM(config).eval()
    info = TokenizerInfo.from_huggingface(tokenizer, vocab_size=vocab)
    return model, tokenizer, Compiler(info, cache_dir=False), vocab - 1


E2E_PATTERNS = [PATTERNS["date"], PATTERNS["pets"], r"[A-Z][a-z]{2,5}( [A-Z][a-z]{2,5})?", r"(true|false|null|-?\d{1,3})"]


@pytest.mark.parametrize("method,do_sample", [("dingo", False), ("dingo", True), ("greedy", False)])
def test_constrained_outputs_always_match(masked_lm, method, do_sample):
    import regex

    model, tokenizer, compiler, mask = masked_lm
    for k, pattern in enumerate(E2E_PATTERNS):
        generator = DiffusionGenerator(model, tokenizer, compiler.compile_regex(pattern), gen_length=16,
                                       block_length=8, steps=4, mask_token_id=mask, method=method,
                                       do_sample=do_sample, generator=torch.Generator().manual_seed(k))
        for prompt in ("Answer: ", "x"):
            out = generator.generate_output(prompt)
            assert regex.fullmatch(ecma_to_python_regex(pattern), out.text), (pattern, out.text)
            assert out.complete and math.isfinite(out.log_likelihood)


def test_unconstrained_decoding_almost_never_matches(masked_lm):
    import regex

    model, tokenizer, compiler, mask = masked_lm
    matched = 0
    for pattern in E2E_PATTERNS:
        generator = DiffusionGenerator(model, tokenizer, compiler.compile_regex(pattern), gen_length=16,
                                       block_length=8, steps=4, mask_token_id=mask, method="unconstrained")
        for prompt in ("Answer: ", "x", "A date: "):
            text = generator.generate_output(prompt).text
            matched += bool(regex.fullmatch(ecma_to_python_regex(pattern), text))
    assert matched <= 1


def test_dingo_block_scores_at_least_the_greedy_block(masked_lm):
    """On the same canvas and positions, the joint optimum beats token-by-token choices."""
    model, tokenizer, compiler, mask = masked_lm
    generator = DiffusionGenerator(model, tokenizer, compiler.compile_regex(PATTERNS["date"]), gen_length=16,
                                   block_length=8, steps=2, mask_token_id=mask)
    canvas = torch.full((1, 18), mask)
    canvas[0, :2] = torch.tensor(tokenizer("x:")["input_ids"][:2])
    with torch.no_grad():
        logp = generator._log_probs(canvas)[2:10]
    block = canvas[0, 2:10].clone()
    masked = block == mask
    wins = 0
    for chosen in ([0, 1, 2, 3], [1, 3, 5, 6], [0, 2, 4, 7]):
        chosen = torch.tensor(chosen)
        joint = generator._dingo_tokens(block, logp, masked, chosen, generator.table.start, 8)
        greedy = generator._greedy_tokens(block, logp, masked, chosen, generator.table.start, 8)
        joint_score, greedy_score = float(logp[chosen, joint].sum()), float(logp[chosen, greedy].sum())
        assert joint_score >= greedy_score - 1e-5
        wins += joint_score > greedy_score + 1e-5
    assert wins >= 1, "the date regex should make token-by-token choices lose somewhere"


def test_generator_refuses_bad_schedules(masked_lm):
    model, tokenizer, compiler, mask = masked_lm
    compiled = compiler.compile_regex(PATTERNS["date"])
    with pytest.raises(DiffusionError, match="block_length"):
        DiffusionGenerator(model, tokenizer, compiled, gen_length=16, block_length=5, steps=4, mask_token_id=mask)
    with pytest.raises(DiffusionError, match="steps"):
        DiffusionGenerator(model, tokenizer, compiled, gen_length=16, block_length=8, steps=3, mask_token_id=mask)
    with pytest.raises(DiffusionError, match="at least"):  # a date needs more than 2 tokens
        DiffusionGenerator(model, tokenizer, compiled, gen_length=2, block_length=2, steps=2, mask_token_id=mask)
    with pytest.raises(DiffusionError, match="mask"):
        DiffusionGenerator(model, tokenizer, compiled, gen_length=16, block_length=8, steps=4)


def test_generate_regex_accepts_a_diffusion_model(masked_lm):
    import regex

    from constrain import generate_regex

    model, tokenizer, _, mask = masked_lm
    pattern = r"[a-z]+@[a-z]+\.(com|org)"
    texts = generate_regex(pattern, ["Mail: ", "x"], model, tokenizer, diffusion=True, gen_length=16,
                           block_length=8, steps=4, mask_token_id=mask)
    assert len(texts) == 2
    assert all(regex.fullmatch(ecma_to_python_regex(pattern), t) for t in texts), texts


def test_generate_json_accepts_a_diffusion_model(masked_lm):
    """A JSON Schema compiles to a TokenDFA, so DINGO decodes it; outputs validate."""
    import jsonschema

    from constrain import generate_json

    model, tokenizer, _, mask = masked_lm
    schema = {"type": "object", "properties": {"ok": {"type": "boolean"},
                                               "n": {"type": "integer", "minimum": 0, "maximum": 99}},
              "required": ["ok", "n"], "additionalProperties": False}
    values = generate_json(schema, ["Answer: ", "x"], model, tokenizer, whitespace="compact", diffusion=True,
                           gen_length=24, block_length=8, steps=6, mask_token_id=mask)
    assert len(values) == 2
    for value in values:
        jsonschema.validate(value, schema)
