"""ASAp against the exact answer, by enumeration over every allowed token sequence.

The model is a one-layer random Llama sized to the real Llama-2 tokenizer (32k ids,
byte-fallback twins of every character), with a logit bias on the tokens that spell
the language so that the language is not a 1e-10 corner of the model.  For a finite
language :func:`constrain.samplers.exact.enumerate_exact` gives the target
``P(s | s ∈ L)``, the distribution ordinary constrained sampling really draws from,
and the exact EFG of every prefix, without using the compiled grammar or the matcher.

Statistics use fixed seeds; every threshold below leaves a wide margin over the
sampling noise of a few hundred draws (an exact sampler's empirical KL is about
``(outcomes - 1) / (2 n)``, i.e. below 0.05 here).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from constrain import Compiler, ConstrainError
from constrain.samplers.asap import ASApLogitsProcessor, ASApSampler, ASApState, ASApTrie, reweight_
from constrain.samplers.exact import (
    empirical_distribution,
    enumerate_exact,
    kl_divergence,
    substring_bias,
    tiny_biased_llama,
)

pytest.importorskip("transformers")


@pytest.fixture(scope="module", autouse=True)
def one_thread():
    """One torch thread: these models are tiny, and on a shared machine two threads
    spinning on each other made the tests 20 times slower."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)

N = 240  # samples per method and case
BATCH = 12

CASES = {
    # Even biases: distortion comes from tokenization alone (constrained sampling
    # prefers many-token spellings because each step renormalises).
    "regex_pets": dict(
        language=["cat", "dog"], regex=r"cat|dog", bias=substring_bias(["cat", "dog"], 6.0),
    ),
    # The paper's trap: the model loves "a", but after "a" the grammar only allows
    # "b", which the model finds very unlikely.  Constrained sampling walks into "ab"
    # almost always; the target is almost always "c".
    "grammar_trap": dict(
        language=["ab", "c"], grammar='start: "ab" | "c"', bias={b"a": 10.0, b"c": 4.0},
    ),
}


class Case:
    """Everything one case's tests read, computed once per module."""

    def __init__(self, name: str, tokenizer, info) -> None:
        spec = CASES[name]
        self.language = spec["language"]
        compiler = Compiler(info)
        if "regex" in spec:
            self.compiled = compiler.compile_regex(spec["regex"])
        else:
            self.compiled = compiler.compile_grammar(spec["grammar"])
        self.info = info
        self.model = tiny_biased_llama(info, spec["bias"], eos_bias=6.0)
        self.prompt = tokenizer("").input_ids  # just BOS
        self.max_new_tokens = max(len(s) for s in self.language) + 1
        self.exact = enumerate_exact(
            self.model, self.prompt, self.language, info, max_new_tokens=self.max_new_tokens
        )
        self.sampler = ASApSampler(self.model, tokenizer, self.compiled)
        self.asap = self._draw(self.sampler.sample)
        self.constrained = self._draw(self.sampler.sample_constrained)

    def _draw(self, method) -> list[tuple[int, ...]]:
        generator = torch.Generator().manual_seed(1)
        samples = method(self.prompt, N, max_new_tokens=self.max_new_tokens, batch_size=BATCH, generator=generator)
        for sample in samples:
            assert sample.text in self.language
        return [s.token_ids for s in samples]

    @property
    def trie(self) -> ASApTrie:
        return self.sampler.trie(self.prompt, max_new_tokens=self.max_new_tokens)


@pytest.fixture(scope="module")
def llama2(load_tokenizer, infos):
    return load_tokenizer("llama-2"), infos("llama-2")


@pytest.fixture(scope="module", params=sorted(CASES))
def case(request, llama2):
    return Case(request.param, *llama2)


def kl_to(target, samples) -> float:
    return kl_divergence(empirical_distribution(samples), target)


def test_distortion_is_large(case):
    # Ordinary constrained sampling is far from the target in both cases.
    assert kl_divergence(case.exact.constrained, case.exact.target) > 2.0


def test_constrained_sampling_matches_its_exact_distribution(case):
    # The oracle and the sampler agree on what plain constrained sampling draws: the
    # empirical KL is within twice its expected noise, (outcomes - 1) / (2 n).
    noise = (len(case.exact.constrained) - 1) / (2 * N)
    assert kl_to(case.exact.constrained, case.constrained) < max(0.1, 2 * noise)


def test_kl_falls_and_ends_far_below_constrained_sampling(case):
    checkpoints = [N // 4, N // 2, N]
    asap = [kl_to(case.exact.target, case.asap[:k]) for k in checkpoints]
    constrained = [kl_to(case.exact.target, case.constrained[:k]) for k in checkpoints]
    assert asap[0] > asap[1] > asap[2]
    assert asap[-1] < 0.35 * constrained[-1]
    # Once the trie has been explored, ASAp draws from the target itself: the second
    # half alone is within sampling noise of it, while constrained sampling stays biased.
    late_asap = kl_to(case.exact.target, case.asap[N // 2 :])
    late_constrained = kl_to(case.exact.target, case.constrained[N // 2 :])
    assert late_asap < 0.25 and late_constrained > 1.5 and late_asap < 0.1 * late_constrained


def _fully_explored(trie: ASApTrie, exact_efg, node: int, path: tuple[int, ...], out: set[int]) -> bool:
    """True when every grammatical continuation below ``node`` is in the trie, expanded."""
    if not trie.is_expanded(node):
        return False
    complete = True
    for child_path in (p for p in exact_efg if len(p) == len(path) + 1 and p[: len(path)] == path):
        child = trie.children[node].get(child_path[-1])
        if child is None or not _fully_explored(trie, exact_efg, child, child_path, out):
            complete = False
    if complete:
        out.add(node)
    return complete


def test_efg_bounds_are_sound_and_tight_where_explored(case):
    trie = case.trie
    assert 1 < len(trie) <= N * case.max_new_tokens + 1  # only visited prefixes are stored
    for node in range(len(trie)):
        path = tuple(trie.path(node))
        assert path in case.exact.efg, "the trie holds an ungrammatical prefix"
        exact = case.exact.efg[path]
        # float32 logits through a KV cache vs a full forward: relative noise ~1e-6.
        assert trie.efg[node] >= exact * (1 - 1e-4), (path, trie.efg[node], exact)
        # The incrementally kept deficit equals a recomputation from the children.
        kids = trie.children[node].values()
        assert trie.deficit[node] == pytest.approx(sum(trie.prob[k] * (1 - trie.efg[k]) for k in kids), abs=1e-15)
    explored: set[int] = set()
    _fully_explored(trie, case.exact.efg, ASApTrie.ROOT, (), explored)
    assert explored, "no subtree was fully explored; the test checks nothing"
    for node in explored:
        exact = case.exact.efg[tuple(trie.path(node))]
        assert trie.efg[node] == pytest.approx(exact, rel=1e-3)


def test_first_sample_is_ordinary_constrained_sampling(llama2):
    tokenizer, info = llama2
    model = tiny_biased_llama(info, substring_bias(["yes", "no"], 5.0), eos_bias=5.0, seed=3)
    compiled = Compiler(info).compile_regex("yes|no")
    for seed in range(4):
        sampler = ASApSampler(model, tokenizer, compiled)  # fresh trie: all bounds 1
        a = sampler.sample("", 1, max_new_tokens=4, generator=torch.Generator().manual_seed(seed))
        b = sampler.sample_constrained("", 1, max_new_tokens=4, generator=torch.Generator().manual_seed(seed))
        assert a == b


def test_reweighting_matches_a_loop_over_tokens():
    """The one-op sparse correction equals P(t | w) * EFG(w t) computed token by token."""
    torch.manual_seed(0)
    vocab = 300
    logp = torch.log_softmax(torch.randn(3, vocab), dim=-1)
    logp[:, 100:] = -math.inf  # the mask
    trie = ASApTrie([1], 1.0, 8)
    other = ASApTrie([2], 1.0, 8)
    trie.expand(ASApTrie.ROOT, float(logp[0].double().exp().sum()))
    bounds = {5: 0.25, 17: 0.0, 42: 1.0, 99: 0.5}
    for token, bound in bounds.items():
        child = trie.child(ASApTrie.ROOT, token, float(logp[0, token].exp()))
        trie.expand(child, bound)
    fresh = trie.child(ASApTrie.ROOT, 60, float(logp[0, 60].exp()))  # bound 1, never evaluated
    got = logp.clone()
    reweight_(got, [trie, trie, other], [ASApTrie.ROOT, fresh, None])
    # Row 1 evaluated ``fresh`` first: its bound is now row 1's allowed mass, and
    # row 0 (its parent) already sees that in the same call.
    mass = float(logp[1].double().exp().sum())
    assert trie.allowed[fresh] == pytest.approx(mass) and trie.efg[fresh] == pytest.approx(mass)
    expected = logp.clone()
    for token, bound in {**bounds, 60: mass}.items():
        expected[0, token] = logp[0, token] + (math.log(bound) if bound > 0 else -math.inf)
    torch.testing.assert_close(got, expected)
    deficit = sum(
        float(logp[0, t].exp()) * (1 - trie.efg[trie.children[0][t]]) for t in trie.children[ASApTrie.ROOT]
    )
    assert trie.efg[ASApTrie.ROOT] == pytest.approx(float(logp[0].double().exp().sum()) - deficit)


def test_logits_processor_in_generate(llama2):
    tokenizer, info = llama2
    spec = CASES["grammar_trap"]
    compiled = Compiler(info).compile_grammar(spec["grammar"])
    model = tiny_biased_llama(info, spec["bias"], eos_bias=6.0)
    prompt = tokenizer("", return_tensors="pt").input_ids
    exact = enumerate_exact(model, prompt[0].tolist(), spec["language"], info, max_new_tokens=3)
    assert exact.constrained and sum(p for s, p in exact.target.items() if len(s) == 1) > 0.99
    processor = ASApLogitsProcessor(compiled, max_new_tokens=3)
    texts = []
    torch.manual_seed(0)
    for _ in range(6):
        out = model.generate(
            prompt.repeat(16, 1), attention_mask=torch.ones(16, prompt.shape[1], dtype=torch.long),
            logits_processor=[processor], do_sample=True, temperature=1.0, top_k=0, top_p=1.0,
            max_new_tokens=3, pad_token_id=tokenizer.eos_token_id,
        )
        batch = []
        for row in out[:, prompt.shape[1] :].tolist():
            ids = [t for t in row if t not in info.eos_token_ids]
            batch.append(b"".join(info.token_bytes[t] for t in ids).decode())
        texts.append(batch)
    assert all(text in spec["language"] for batch in texts for text in batch)
    late = [t for batch in texts[3:] for t in batch]
    # Plain constrained sampling gives "c" well under 1% of the time; the target 99%.
    assert sum(t == "c" for t in late) / len(late) > 0.8
    trie = processor.state.trie(prompt[0].tolist(), 1.0, 3)
    for node in range(len(trie)):
        assert trie.efg[node] >= exact.efg[tuple(trie.path(node))] * (1 - 1e-4)


def test_save_and_load_resume(llama2, tmp_path):
    tokenizer, info = llama2
    compiler = Compiler(info)
    compiled = compiler.compile_regex("yes|no")
    model = tiny_biased_llama(info, substring_bias(["yes", "no"], 5.0), eos_bias=5.0, seed=3)
    sampler = ASApSampler(model, tokenizer, compiled)
    sampler.sample("", 20, max_new_tokens=4, batch_size=10, generator=torch.Generator().manual_seed(0))
    sampler.sample("", 5, max_new_tokens=6, temperature=2.0, generator=torch.Generator().manual_seed(0))
    path = tmp_path / "tries.npz"
    sampler.state.save(path)

    restored = ASApState(compiled)
    restored.load(path)
    assert set(restored.tries) == set(sampler.state.tries)
    for key, trie in sampler.state.tries.items():
        for name, array in trie.to_arrays().items():
            np.testing.assert_array_equal(restored.tries[key].to_arrays()[name], array)
    resumed = ASApSampler(model, tokenizer, compiled, state=restored)
    trie = resumed.trie("", max_new_tokens=4)
    before = trie.efg[ASApTrie.ROOT]
    resumed.sample("", 10, max_new_tokens=4, batch_size=10, generator=torch.Generator().manual_seed(1))
    assert resumed.trie("", max_new_tokens=4) is trie and trie.efg[ASApTrie.ROOT] <= before

    with pytest.raises(ConstrainError, match="another grammar"):
        ASApState(compiler.compile_regex("yes|nope")).load(path)


def test_bad_arguments(llama2):
    tokenizer, info = llama2
    compiled = Compiler(info).compile_regex("a")
    sampler = ASApSampler(tiny_biased_llama(info, {}), tokenizer, compiled)
    with pytest.raises(ValueError, match="temperature"):
        sampler.sample("", 1, temperature=0.0)
    with pytest.raises(ValueError, match="n"):
        sampler.sample("", 0)
    with pytest.raises(ValueError, match="prompt"):
        sampler.sample([], 1)
    with pytest.raises(ValueError, match="max_new_tokens"):
        ASApLogitsProcessor(compiled, max_new_tokens=0)


def test_budget_dead_ends_get_efg_zero_and_are_retried(llama2):
    """With max_new_tokens=3, 'cat' spelt in three tokens cannot end (EOS is the 4th):
    such prefixes get bound 0 from the EOS-only last step, the sample is retried, and
    the bounds stay above the exact EFG under the same budget."""
    tokenizer, info = llama2
    language = ["cat", "dog"]
    model = tiny_biased_llama(info, substring_bias(language, 6.0), eos_bias=6.0)
    compiled = Compiler(info).compile_regex("cat|dog")
    prompt = tokenizer("").input_ids
    exact = enumerate_exact(model, prompt, language, info, max_new_tokens=3)
    sampler = ASApSampler(model, tokenizer, compiled)
    samples = sampler.sample(prompt, 48, max_new_tokens=3, batch_size=12, generator=torch.Generator().manual_seed(0))
    assert len(samples) == 48 and all(s.text in language and len(s.token_ids) <= 2 for s in samples)
    trie = sampler.trie(prompt, max_new_tokens=3)
    dead = [n for n in range(len(trie)) if trie.is_expanded(n) and trie.efg[n] == 0.0]
    assert dead and all(exact.efg[tuple(trie.path(n))] == 0.0 for n in dead)
    for node in range(len(trie)):
        assert trie.efg[node] >= exact.efg[tuple(trie.path(node))] * (1 - 1e-4)
    with pytest.raises(ConstrainError, match="max_new_tokens"):
        sampler.sample(prompt, 1, max_new_tokens=1)  # nothing fits: EOS is never allowed first
