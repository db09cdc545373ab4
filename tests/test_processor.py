"""End to end: tiny random transformers models generating under regex constraints.

The models are randomly initialised from a config sized to a real tokenizer, so their
outputs are close to uniform over whatever the mask allows: a mask that let one wrong
token through would show up in 100 samples.
"""

from __future__ import annotations

import pytest
import regex
import torch

from constrain import (
    BitmaskError,
    Compiler,
    ConstrainedLogitsProcessor,
    RegexError,
    RegexLogitsProcessor,
    TokenizerInfo,
    generate_regex,
)
from constrain.testing import ecma_to_python_regex

transformers = pytest.importorskip("transformers")


def tiny_llama(vocab_size: int, seed: int = 0):
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(seed)
    config = LlamaConfig(
        vocab_size=vocab_size, hidden_size=16, intermediate_size=32, num_hidden_layers=1,
        num_attention_heads=2, num_key_value_heads=1, max_position_embeddings=256,
    )
    return LlamaForCausalLM(config).eval()


@pytest.fixture(scope="module")
def llama3(load_tokenizer):
    tokenizer = load_tokenizer("llama-3")
    return tokenizer, tiny_llama(len(tokenizer))


BOUNDED = {
    "date": r"\d{4}-\d{2}-\d{2}",
    "choice": r"(red|green|blue|yellow) (car|bike|boat)",
    "cjk": r"[\u4e00-\u9fff]{2,4}",
    "emoji": r"(😀|🎉|🚀){1,3}!",
    "phone": r"\(\d{3}\) \d{3}-\d{4}",
    "word": r"[a-z]{3,8}",
}


@pytest.mark.parametrize("name", sorted(BOUNDED))
def test_hundred_samples_all_match(llama3, name):
    tokenizer, model = llama3
    pattern = BOUNDED[name]
    oracle = regex.compile(ecma_to_python_regex(pattern))
    outputs = generate_regex(
        pattern, ["Answer:", "Here it is"], model, tokenizer,
        do_sample=True, num_return_sequences=50, max_new_tokens=40,
    )
    assert len(outputs) == 100
    bad = [o for o in outputs if not oracle.fullmatch(o)]
    assert not bad, bad[:5]
    assert len(set(outputs)) > 10  # really sampling, not one forced string


def test_beam_search(llama3):
    tokenizer, model = llama3
    pattern = r"(cat|dog|bird)s? (and|or) (cat|dog|bird)s?"
    outputs = generate_regex(pattern, ["Pets:", "I like"], model, tokenizer,
                             num_beams=4, num_return_sequences=3, max_new_tokens=20)
    assert len(outputs) == 6
    assert all(regex.fullmatch(pattern, o) for o in outputs), outputs


def test_greedy_stops_on_any_eos(llama3):
    tokenizer, model = llama3
    info = TokenizerInfo.from_huggingface(tokenizer)
    compiled = Compiler(info, cache_dir=False).compile_regex(r"\d{3}")
    processor = ConstrainedLogitsProcessor(compiled)
    inputs = tokenizer(["x"], return_tensors="pt")
    out = model.generate(**inputs, logits_processor=[processor], max_new_tokens=10,
                         eos_token_id=list(info.eos_token_ids), pad_token_id=info.eos_token_ids[0], do_sample=False)
    generated = out[0, inputs["input_ids"].shape[1]:].tolist()
    assert generated[-1] in info.eos_token_ids
    assert regex.fullmatch(r"\d{3}", info.decode_bytes(generated[:-1]).decode())


def test_processor_reused_across_generate_calls(llama3):
    tokenizer, model = llama3
    processor = RegexLogitsProcessor(r"[0-9]{2}", tokenizer)
    info = processor.tokenizer_info
    for prompt in ["first", "a second, longer prompt"]:
        inputs = tokenizer([prompt], return_tensors="pt")
        out = model.generate(**inputs, logits_processor=[processor], max_new_tokens=6, do_sample=True,
                             eos_token_id=list(info.eos_token_ids), pad_token_id=info.eos_token_ids[0])
        text = info.decode_bytes([t for t in out[0, inputs["input_ids"].shape[1]:].tolist() if t not in info.eos_token_ids])
        assert regex.fullmatch(r"[0-9]{2}", text.decode())


def test_padded_vocabulary_never_emits_padding_ids(load_tokenizer):
    """Qwen2.5 models pad logits to 151,936: ids past the tokenizer are never allowed."""
    tokenizer = load_tokenizer("qwen2.5")
    model = tiny_llama(151936, seed=1)
    with torch.no_grad():  # make padding ids the most likely: the mask must still win
        model.lm_head.weight[len(tokenizer):] = 5.0
    outputs = generate_regex(r"[a-z]{2,5}", "Hi", model, tokenizer, do_sample=True,
                             num_return_sequences=20, max_new_tokens=10)
    assert all(regex.fullmatch(r"[a-z]{2,5}", o) for o in outputs), outputs


def test_byte_fallback_tokenizer_end_to_end(load_tokenizer):
    tokenizer = load_tokenizer("llama-2")
    model = tiny_llama(len(tokenizer), seed=2)
    pattern = r"(猫|犬|鳥){2,3}"
    outputs = generate_regex(pattern, "Animals:", model, tokenizer, do_sample=True,
                             num_return_sequences=30, max_new_tokens=20)
    assert all(regex.fullmatch(pattern, o) for o in outputs), outputs


def test_per_row_grammars(llama3):
    tokenizer, model = llama3
    info = TokenizerInfo.from_huggingface(tokenizer)
    compiler = Compiler(info, cache_dir=False)
    processor = ConstrainedLogitsProcessor([compiler.compile_regex("yes|no"), compiler.compile_regex(r"\d{2}")])
    tokenizer_pad = tokenizer.pad_token
    tokenizer.pad_token = tokenizer.eos_token
    tokenizer.padding_side = "left"
    try:
        inputs = tokenizer(["Q1", "Question two"], return_tensors="pt", padding=True)
    finally:
        tokenizer.pad_token = tokenizer_pad
        tokenizer.padding_side = "right"
    out = model.generate(**inputs, logits_processor=[processor], max_new_tokens=6, do_sample=True,
                         eos_token_id=list(info.eos_token_ids), pad_token_id=info.eos_token_ids[0])
    texts = [info.decode_bytes([t for t in row if t not in info.eos_token_ids]).decode()
             for row in out[:, inputs["input_ids"].shape[1]:].tolist()]
    assert texts[0] in ("yes", "no") and regex.fullmatch(r"\d{2}", texts[1]), texts


def test_errors(llama3):
    tokenizer, _ = llama3
    with pytest.raises(RegexError, match="look-behind"):
        RegexLogitsProcessor(r"a(?<=b)", tokenizer)
    processor = RegexLogitsProcessor(r"\d+", tokenizer)
    with pytest.raises(BitmaskError, match="logits width"):
        processor(torch.zeros((1, 3), dtype=torch.long), torch.zeros((1, 1000)))


needs_cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device on this machine")


@needs_cuda
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_cuda_scores_are_masked_as_on_cpu(llama3, dtype):
    """CUDA logits (wider than the vocabulary) get the CPU mask, token for token, at every step.

    The bitmask is filled on the host and copied to the device each step; a copy that
    raced the next fill, or a kernel that missed the padded columns, would differ here.
    """
    tokenizer, _ = llama3
    pattern = r"\d{2}-[a-z]{2,3}"
    on_cpu = RegexLogitsProcessor(pattern, tokenizer)
    on_cuda = RegexLogitsProcessor(pattern, tokenizer)
    width = len(tokenizer) + 100
    ids = torch.tensor([[1, 2], [3, 4]])
    text = "42-abc"
    for step in range(len(text)):
        scores = torch.randn(2, width, generator=torch.Generator().manual_seed(step))
        expected = torch.isinf(on_cpu(ids, scores))
        got = torch.isinf(on_cuda(ids.cuda(), scores.to("cuda", dtype)).cpu())
        assert torch.equal(got, expected), f"step {step}"
        assert not expected[:, len(tokenizer):].logical_not().any()
        token = tokenizer.convert_tokens_to_ids(text[step])
        ids = torch.cat([ids, torch.tensor([[token], [token]])], dim=1)


@needs_cuda
def test_generate_on_cuda(llama3):
    """A model on the GPU samples under the constraint: every output matches."""
    tokenizer, model = llama3
    pattern = BOUNDED["choice"]
    outputs = generate_regex(pattern, ["Answer:", "Here it is"], model.to("cuda"), tokenizer,
                             do_sample=True, num_return_sequences=25, max_new_tokens=20)
    model.to("cpu")
    assert len(outputs) == 50 and all(regex.fullmatch(pattern, o) for o in outputs), outputs
