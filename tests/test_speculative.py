"""Constrained speculative decoding: greedy equality, exact sampling distribution, assisted generation.

Oracles:

* greedy: transformers' own greedy ``generate`` with :class:`ConstrainedLogitsProcessor`
  (one target forward per token), compared token for token;
* sampling: the exact distribution of non-speculative constrained sampling over a small
  finite language, computed by enumerating every token path with the target alone, and
  compared with speculative samples by a chi-square test and a total-variation bound
  (with a control showing the same test rejects the draft's constrained distribution);
* the acceptance rule on its own: Monte Carlo against the target row it must reproduce.

Models are tiny random Llamas sized to the real GPT-2 and Llama-3 tokenizers, in float64
for the greedy comparisons so that one multi-token forward and several one-token forwards
cannot round a near-tie differently.
"""

from __future__ import annotations

import math

import numpy as np
import json

import pytest
import regex
import torch

from constrain import Compiler, ConstrainedLogitsProcessor, ConstrainError, Matcher, TokenizerInfo
from constrain.kernels import allocate_token_bitmask
from constrain.samplers.speculative import SpeculativeGenerator, masked_logits, verify_proposals

transformers = pytest.importorskip("transformers")
scipy_stats = pytest.importorskip("scipy.stats")

JSON_PERSON = r'\{"name": "[a-z]{1,6}", "age": \d{1,2}, "pets": \["(cat|dog)"(, "(cat|dog)"){0,2}\]\}'
ARITH = r"""
start: expr
?expr: term (("+" | "-") term)*
?term: atom (("*" | "/") atom)*
?atom: NUMBER | "(" expr ")" | NAME
NUMBER: /[0-9]{1,3}/
NAME: /[a-z]{1,4}/
%ignore " "
"""
CONSTRAINTS = {
    "date": ("regex", r"\d{4}-\d{2}-\d{2}"),
    "choice": ("regex", r"(red|green|blue) (car|bike|boat)s?"),
    "json_regex": ("regex", JSON_PERSON),
    "json_lark": ("builtin", "json"),
    "arith_lark": ("grammar", ARITH),
    "json_schema": ("schema", json.dumps({
        "type": "object", "additionalProperties": False, "required": ["name", "age"],
        "properties": {"name": {"type": "string", "maxLength": 6}, "age": {"type": "integer", "minimum": 0}}})),
}
PROMPTS = ["Hello", "The answer is", "{", "Write it:"]


@pytest.fixture(autouse=True, scope="module")
def one_thread():
    """One intra-op thread: on a shared 2-core machine torch's thread pool only adds contention."""
    saved = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(saved)


def tiny_llama(vocab_size: int, *, hidden: int, layers: int, seed: int, dtype=torch.float64):
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(seed)
    config = LlamaConfig(vocab_size=vocab_size, hidden_size=hidden, intermediate_size=2 * hidden,
                         num_hidden_layers=layers, num_attention_heads=2, num_key_value_heads=2,
                         max_position_embeddings=512)
    return LlamaForCausalLM(config).eval().to(dtype)


@pytest.fixture(scope="module")
def gpt2(load_tokenizer):
    tokenizer = load_tokenizer("gpt2")
    info = TokenizerInfo.from_huggingface(tokenizer)
    target = tiny_llama(len(tokenizer), hidden=32, layers=2, seed=0)
    draft = tiny_llama(len(tokenizer), hidden=16, layers=1, seed=1)
    return tokenizer, info, Compiler(info), target, draft


def compile_constraint(compiler: Compiler, kind: str, source: str):
    if kind == "regex":
        return compiler.compile_regex(source)
    if kind == "builtin":
        return compiler.compile_builtin(source)
    if kind == "schema":
        return compiler.compile_json_schema(source)
    return compiler.compile_grammar(source)


def greedy_reference(model, info, compiled, prompt_ids, max_new_tokens):
    """Non-speculative greedy constrained decoding by transformers' own loop."""
    out = model.generate(torch.tensor([prompt_ids]), logits_processor=[ConstrainedLogitsProcessor(compiled)],
                         max_new_tokens=max_new_tokens, do_sample=False, eos_token_id=list(info.eos_token_ids),
                         pad_token_id=info.eos_token_ids[0])
    return out[0, len(prompt_ids):].tolist()


# -- greedy: token for token ------------------------------------------------------------------
VARIANTS = [
    dict(k=3, jump_forward=True),
    dict(k=2, jump_forward=False, adaptive=False),
    dict(k=5, jump_forward=True, use_tokenizer=False),
    dict(k=1, jump_forward=True, no_draft=True),
]


@pytest.mark.parametrize("name", sorted(CONSTRAINTS))
def test_greedy_equals_non_speculative(gpt2, name):
    tokenizer, info, compiler, target, draft = gpt2
    compiled = compile_constraint(compiler, *CONSTRAINTS[name])
    for i, prompt in enumerate(PROMPTS):
        variant = dict(VARIANTS[i % len(VARIANTS)])
        model = None if variant.pop("no_draft", False) else draft
        use_tokenizer = variant.pop("use_tokenizer", True)
        gen = SpeculativeGenerator(target, model, compiled, tokenizer=tokenizer if use_tokenizer else None, **variant)
        ids = tokenizer(prompt).input_ids
        out = gen.generate(ids, max_new_tokens=32)
        assert out.token_ids == greedy_reference(target, info, compiled, ids, 32), (name, prompt, variant)
        assert out.stats.target_forwards <= len(out.token_ids)
    assert gen.stats.generated_tokens > 0


def test_greedy_llama3_json_regex_with_jump_forward(load_tokenizer):
    tokenizer = load_tokenizer("llama-3")
    info = TokenizerInfo.from_huggingface(tokenizer)
    compiled = Compiler(info).compile_regex(JSON_PERSON)
    target = tiny_llama(len(tokenizer), hidden=32, layers=2, seed=3)
    draft = tiny_llama(len(tokenizer), hidden=16, layers=1, seed=4)
    gen = SpeculativeGenerator(target, draft, compiled, k=3, tokenizer=tokenizer)
    for prompt in ["Person:", "JSON please"]:
        ids = tokenizer(prompt).input_ids
        out = gen.generate(ids, max_new_tokens=48)
        assert out.token_ids == greedy_reference(target, info, compiled, ids, 48)
    assert gen.stats.forced_accepted > 0  # jump-forward tokens were proposed and kept


def test_draft_equal_to_target_accepts_everything(gpt2):
    """With the target as its own draft every greedy proposal is kept: bonus and crop paths."""
    tokenizer, info, compiler, target, _ = gpt2
    compiled = compiler.compile_regex(r"[a-z]{12,16}")
    gen = SpeculativeGenerator(target, target, compiled, k=4, adaptive=False, jump_forward=False)
    ids = tokenizer("Letters:").input_ids
    out = gen.generate(ids, max_new_tokens=40)
    assert out.finished and regex.fullmatch(r"[a-z]{12,16}", out.text)
    assert out.token_ids == greedy_reference(target, info, compiled, ids, 40)
    assert out.stats.acceptance_rate == 1.0
    # k accepted + 1 bonus per target forward.
    assert out.stats.target_forwards == math.ceil(len(out.token_ids) / 5)


def test_max_new_tokens_respected(gpt2):
    tokenizer, info, compiler, target, draft = gpt2
    compiled = compiler.compile_regex(r"[a-z]{30}")
    out = SpeculativeGenerator(target, target, compiled, k=4).generate(tokenizer("x").input_ids, max_new_tokens=7)
    assert len(out.token_ids) == 7 and not out.finished
    assert regex.fullmatch(r"[a-z]+", out.text)


# -- jump-forward tokenisation ------------------------------------------------------------------
def test_forced_tokens_are_canonical_and_hold_back_the_boundary(gpt2):
    """Jump-forward proposals are a prefix of the tokenizer's own encoding of every full output."""
    tokenizer, info, compiler, target, draft = gpt2
    cases = {
        JSON_PERSON: ['{"name": "bob", "age": 7, "pets": ["cat"]}', '{"name": "x", "age": 10, "pets": ["dog", "cat"]}'],
        r"hel(lo|p) there": ["hello there", "help there"],  # 'hello' and 'help' are single tokens
        r"(ab|cd)\]\}": ["ab]}", "cd]}"],
    }
    proposed = 0
    for pattern, outputs in cases.items():
        compiled = compiler.compile_regex(pattern)
        gen = SpeculativeGenerator(target, draft, compiled, tokenizer=tokenizer)
        for text in outputs:
            # Walk the canonical tokens; wherever jump-forward proposes, it must propose them.
            canonical = tokenizer.encode(text, add_special_tokens=False)
            matcher, i = Matcher(compiled), 0
            while i < len(canonical):
                run = gen.forced_tokens(matcher)
                assert list(run) == canonical[i:i + len(run)], (pattern, text, i, run)
                proposed += len(run)
                for token in run or canonical[i:i + 1]:
                    assert matcher.accept_token(token)
                i += max(len(run), 1)
        # Without a tokenizer: longest-token spelling, still a prefix of the forced bytes.
        matcher = Matcher(compiled)
        run = SpeculativeGenerator(target, draft, compiled).forced_tokens(matcher)
        assert matcher.forced_bytes().startswith(info.decode_bytes(run))
    assert proposed > 10
    # 'hel' is forced but must not be proposed: 'hello'/'help' would merge across the boundary.
    matcher = Matcher(compiler.compile_regex(r"hel(lo|p) there"))
    assert matcher.forced_bytes() == b"hel"
    assert SpeculativeGenerator(target, draft, matcher.compiled, tokenizer=tokenizer).forced_tokens(matcher) == ()


# -- the acceptance rule ---------------------------------------------------------------------
def test_acceptance_rule_reproduces_target_row():
    """One proposal from q (or a point mass) then accept/residual must emit exactly p."""
    gen = torch.Generator().manual_seed(0)
    p = torch.tensor([[0.5, 0.3, 0.15, 0.05, 0.0], [0.2, 0.2, 0.2, 0.2, 0.2]], dtype=torch.float64)
    q = torch.tensor([0.1, 0.1, 0.5, 0.1, 0.2], dtype=torch.float64)
    n = 5000
    for draft_row in (q, None):
        counts = np.zeros(5)
        for _ in range(n):
            x = 2 if draft_row is None else int(torch.multinomial(q, 1, generator=gen))
            accepted, token = verify_proposals(p, [x], [draft_row], greedy=False, generator=gen)
            counts[x if accepted else token] += 1
        assert counts[4] == 0  # zero target probability never emitted, even when drafted
        stat = scipy_stats.chisquare(counts[:4], p[0, :4].numpy() * n)
        assert stat.pvalue > 1e-3, (counts, draft_row)
    logits = torch.tensor([[0.0, 3.0, 1.0], [2.0, 0.0, 5.0]])
    bitmask = allocate_token_bitmask(2, 3)
    bitmask[0, 0] = 0b101
    bitmask[1, 0] = 0b011
    masked = masked_logits(logits, bitmask)
    assert verify_proposals(masked, [2], [None], greedy=True) == (1, 0)  # argmax within the mask
    assert verify_proposals(masked, [0], [None], greedy=True) == (0, 2)


# -- sampling: exact distribution --------------------------------------------------------------
def exact_distribution(model, prompt_ids, compiled, temperature=1.0):
    """Every token path of a finite language with its probability under constrained sampling."""
    info = compiled.tokenizer_info
    out: dict[tuple[int, ...], float] = {}

    def visit(matcher: Matcher, path: tuple[int, ...], prob: float) -> None:
        with torch.no_grad():
            logits = model(torch.tensor([prompt_ids + list(path)])).logits[0, -1:]
        bitmask = allocate_token_bitmask(1, logits.shape[-1])
        matcher.fill_next_token_bitmask(bitmask)
        probs = torch.softmax(masked_logits(logits, bitmask)[0] / temperature, dim=-1)
        for token in torch.nonzero(probs > 0).flatten().tolist():
            if token in info.eos_token_ids:
                out[path + (token,)] = out.get(path + (token,), 0.0) + prob * float(probs[token])
                continue
            child = matcher.fork()
            assert child.accept_token(token)
            visit(child, path + (token,), prob * float(probs[token]))

    visit(Matcher(compiled), (), 1.0)
    return out


def chi_square_pvalue(counts: dict, expected: dict, n: int) -> float:
    """Chi-square goodness of fit, bins with expected count < 5 pooled into one."""
    keys = sorted(expected, key=expected.get, reverse=True)
    obs, exp, pool_o, pool_e = [], [], 0.0, 0.0
    for key in keys:
        if expected[key] * n >= 5:
            obs.append(counts.get(key, 0))
            exp.append(expected[key] * n)
        else:
            pool_o += counts.get(key, 0)
            pool_e += expected[key] * n
    pool_o += sum(v for k, v in counts.items() if k not in expected)
    if pool_e > 0 or pool_o > 0:
        obs.append(pool_o)
        exp.append(max(pool_e, 1e-9))
    return float(scipy_stats.chisquare(obs, np.array(exp) * sum(obs) / sum(exp)).pvalue)


def test_sampling_distribution_is_exact(gpt2):
    tokenizer, info, compiler, _, _ = gpt2
    vocab = len(tokenizer)
    # Float32 and sharpened heads: peaky, different distributions, so rejections happen often.
    target = tiny_llama(vocab, hidden=32, layers=2, seed=10, dtype=torch.float32)
    draft = tiny_llama(vocab, hidden=16, layers=1, seed=11, dtype=torch.float32)
    with torch.no_grad():
        target.lm_head.weight.mul_(60.0)
        draft.lm_head.weight.mul_(60.0)
    compiled = compiler.compile_regex(r"(cat|dog|pig): (yes|no)")
    prompt = tokenizer("Answer:").input_ids
    exact = exact_distribution(target, prompt, compiled)
    draft_exact = exact_distribution(draft, prompt, compiled)
    assert abs(sum(exact.values()) - 1.0) < 1e-6
    gen = SpeculativeGenerator(target, draft, compiled, k=3, tokenizer=tokenizer)
    rng = torch.Generator().manual_seed(1234)
    n = 600
    counts: dict[tuple[int, ...], int] = {}
    for _ in range(n):
        out = gen.generate(prompt, max_new_tokens=16, do_sample=True, generator=rng)
        assert out.finished and regex.fullmatch(r"(cat|dog|pig): (yes|no)", out.text)
        counts[tuple(out.token_ids)] = counts.get(tuple(out.token_ids), 0) + 1
    stats = gen.stats
    assert 0.05 < stats.acceptance_rate < 0.95 and stats.forced > 0  # both accept and reject paths ran
    assert chi_square_pvalue(counts, exact, n) > 1e-3
    keys = set(exact) | set(counts)
    tv = 0.5 * sum(abs(counts.get(k, 0) / n - exact.get(k, 0.0)) for k in keys)
    assert tv < 0.08, tv
    # Control: the same samples are far from the draft's own constrained distribution.
    tv_draft = 0.5 * sum(abs(draft_exact.get(k, 0.0) - exact.get(k, 0.0)) for k in keys | set(draft_exact))
    assert tv_draft > 0.25
    assert chi_square_pvalue(counts, draft_exact, n) < 1e-6


# -- transformers' assisted generation ----------------------------------------------------------
@pytest.mark.parametrize("name", ["json_regex", "arith_lark"])
def test_transformers_assisted_generation(gpt2, name):
    tokenizer, info, compiler, target, draft = gpt2
    compiled = compile_constraint(compiler, *CONSTRAINTS[name])
    ids = tokenizer("Output:").input_ids
    kwargs = dict(max_new_tokens=32, eos_token_id=list(info.eos_token_ids), pad_token_id=info.eos_token_ids[0])
    out = target.generate(torch.tensor([ids]), assistant_model=draft, do_sample=False,
                          logits_processor=[ConstrainedLogitsProcessor(compiled)], **kwargs)
    assert out[0, len(ids):].tolist() == greedy_reference(target, info, compiled, ids, 32)
    torch.manual_seed(0)
    processor = ConstrainedLogitsProcessor(compiled)
    for _ in range(3):
        out = target.generate(torch.tensor([ids]), assistant_model=draft, do_sample=True,
                              logits_processor=[processor], **kwargs)
        generated = out[0, len(ids):].tolist()
        matcher = Matcher(compiled)
        assert all(matcher.accept_token(t) for t in generated)  # every token allowed, in order


def test_bad_input(gpt2):
    tokenizer, info, compiler, target, draft = gpt2
    compiled = compiler.compile_regex(r"\d+")
    with pytest.raises(ValueError, match="Invalid k"):
        SpeculativeGenerator(target, draft, compiled, k=0)
    with pytest.raises(TypeError, match="Invalid compiled"):
        SpeculativeGenerator(target, draft, r"\d+")
    small = tiny_llama(1000, hidden=16, layers=1, seed=5)
    with pytest.raises(ConstrainError, match="draft model"):
        SpeculativeGenerator(target, small, compiled)
    gen = SpeculativeGenerator(target, draft, compiled)
    with pytest.raises(ValueError, match="one prompt"):
        gen.generate(torch.zeros((2, 3), dtype=torch.long))
    with pytest.raises(ValueError, match="temperature"):
        gen.generate([1, 2], do_sample=True, temperature=0.0)


def test_api_draft_model_hook(gpt2):
    from constrain import generate_grammar, generate_regex

    tokenizer, info, compiler, target, draft = gpt2
    for prompts in ("Name:", ["Name:", "Who?"]):
        plain = generate_regex(r"[A-Z][a-z]{2,5}", prompts, target, tokenizer, max_new_tokens=12, do_sample=False)
        fast = generate_regex(r"[A-Z][a-z]{2,5}", prompts, target, tokenizer, max_new_tokens=12, do_sample=False,
                              draft_model=draft, num_assistant_tokens=3)
        assert fast == plain
    text = generate_grammar(ARITH, "Sum:", target, tokenizer, draft_model=draft, max_new_tokens=24,
                            require_complete=False)
    assert isinstance(text, str)
    with pytest.raises(ConstrainError, match="num_beams"):
        generate_regex(r"\d", "x", target, tokenizer, draft_model=draft, num_beams=2)


def test_sparse_draft_head_only_for_plain_heads(gpt2):
    """Allowed-rows-only drafting is used only where logits are exactly head(base(x))."""
    from constrain.samplers.speculative import _CachedModel

    tokenizer, info, compiler, target, draft = gpt2
    assert _CachedModel(draft).head is draft.lm_head
    scaled = tiny_llama(len(tokenizer), hidden=16, layers=1, seed=1)
    original = scaled.forward

    def forward(*args, **kwargs):  # a model that rescales its logits in forward (like logit_scale)
        out = original(*args, **kwargs)
        out.logits = out.logits * 2.0
        return out

    scaled.forward = forward
    assert _CachedModel(scaled).head is None
    compiled = compiler.compile_regex(r"\d{3}-\d{3}")
    ids = tokenizer("Call").input_ids
    for model in (draft, scaled):
        out = SpeculativeGenerator(target, model, compiled, k=3).generate(ids, max_new_tokens=12)
        assert out.token_ids == greedy_reference(target, info, compiled, ids, 12)
