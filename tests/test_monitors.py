"""Monitor-guided decoding: exact identifier masks, jedi monitors, generation with tiny models.

Oracles:

* masks: brute force over every token of a real vocabulary, with the semantics spelled
  out in Python (``bytes.startswith``, ``str.isidentifier``, UTF-8 decoding), not with
  the library's automata;
* members: the fixture project imported for real and ``dir()`` of the object each
  prompt's expression evaluates to (tests/monitor_cases.py), not jedi;
* grammar composition: lark parsing the outputs.
"""

from __future__ import annotations

import random

import numpy as np
import pytest
import torch

from constrain import Compiler, Matcher, MonitorError, TokenizerInfo
from constrain.monitors import (
    Monitor,
    MonitorContext,
    MonitoredMatcher,
    MonitorLogitsProcessor,
    Trigger,
    identifier_dfa,
)
from constrain.testing import bitmask_to_ids
from monitor_cases import CASES, PROJECT_DIR, fixture_modules, leading_identifier, member_rate, real_members

jedi = pytest.importorskip("jedi", reason="the Python monitors need jedi (pip install 'constrain[monitors]')")
from constrain.monitors import PythonImportMonitor, PythonMemberMonitor  # noqa: E402

NAME_SETS = {
    "shared_prefixes": ["get", "get_all", "getter", "g", "gets", "set", "settings"],
    "unicode": ["höhe", "fläche", "größe", "naïve", "数据", "é", "aé", "a"],
    "dunder": ["__init__", "__class__", "_private", "x1", "x"],
}


# -- oracle of the mask semantics ------------------------------------------------------------
def _is_identifier_start_byte(byte: int) -> bool:
    return chr(byte).isidentifier() if byte < 0x80 else 0xC2 <= byte <= 0xF4


def _utf8_length(lead: int) -> int:
    return 1 if lead < 0x80 else 2 if 0xC2 <= lead < 0xE0 else 3 if 0xE0 <= lead < 0xF0 else 4 if 0xF0 <= lead < 0xF5 else 0


def _ends_identifier(rest: bytes, boundary: bytes) -> bool:
    """``rest`` (after a whole identifier) starts with a terminating character, or could still."""
    size = _utf8_length(rest[0])
    if size == 0:
        return False
    if len(rest) < size:
        return False  # a token may not end inside the terminating character
    try:
        char = rest[:size].decode("utf-8")
    except UnicodeDecodeError:
        return False
    if ("a" + char).isidentifier():
        return False
    return not any(rest[i] in boundary and _is_identifier_start_byte(rest[i + 1]) for i in range(len(rest) - 1))


def _viable(data: bytes, names: list[bytes], boundary: bytes) -> bool:
    for name in names:
        if name.startswith(data):
            return True
        if data.startswith(name) and len(data) > len(name) and _ends_identifier(data[len(name):], boundary):
            return True
    return False


def _oracle_ids(info: TokenizerInfo, prefix: bytes, names: list[bytes], boundary: bytes) -> set[int]:
    token_bytes = info.token_bytes
    allowed = {t for t in info.matchable_token_ids().tolist() if _viable(prefix + token_bytes[t], names, boundary)}
    if prefix in names:
        allowed |= set(info.eos_token_ids)
    return allowed


class FixedMonitor(Monitor):
    """A monitor with a fixed answer after a fixed trigger string (the interface, without jedi)."""

    def __init__(self, names, after: str = ".", prefix: str = "") -> None:
        self.names, self.after, self.prefix = frozenset(names), after, prefix
        self.boundary_bytes = after[-1:].encode()

    def might_trigger(self, tail: bytes) -> bool:
        return tail.endswith(self.after.encode())

    def trigger(self, text: str) -> Trigger | None:
        return Trigger(self.names, self.prefix) if text.endswith(self.after) else None


def _test_prefixes(names: list[bytes], rng: random.Random) -> list[bytes]:
    """Start, mid-name (also mid-character) and whole names."""
    proper = sorted({n[:k] for n in names for k in range(1, len(n))})
    whole = sorted(set(names))
    return [b""] + rng.sample(proper, min(4, len(proper))) + rng.sample(whole, min(2, len(whole)))


@pytest.mark.parametrize(("tokenizer_name", "set_name"), [
    ("llama-3", "shared_prefixes"), ("llama-3", "unicode"), ("llama-3", "dunder"), ("gpt2", "unicode")])
def test_identifier_masks_exact_against_brute_force(infos, tokenizer_name, set_name):
    info = infos(tokenizer_name)
    names = NAME_SETS[set_name]
    context = MonitorContext(info, [FixedMonitor(names)])
    dfa = identifier_dfa(frozenset(names), "", context.boundary)
    encoded = [n.encode("utf-8") for n in names]
    spanning = 0
    for prefix in _test_prefixes(encoded, random.Random(set_name)):
        state = dfa.walk_token(dfa.start, prefix)
        assert state >= 0, prefix
        got = set(bitmask_to_ids(context.identifier_words(dfa, state).view(np.int32), info.vocab_size).tolist())
        want = _oracle_ids(info, prefix, encoded, context.boundary)
        assert got == want, (prefix, sorted(got ^ want)[:10])
        spanning += sum(1 for t in got if any((prefix + info.token_bytes[t]).startswith(n + b"(") for n in encoded))
    if set_name == "shared_prefixes":
        assert spanning > 0  # tokens such as "get(" that cross the identifier's end were exercised


def test_unicode_terminators_and_guard():
    dfa = identifier_dfa(frozenset(["a", "aé", "get"]), "", b".")
    assert dfa.walk(dfa.start, "aé".encode()) >= 0
    assert dfa.walk(dfa.start, "aà".encode()) == -1  # à continues an identifier: "aà" is no allowed name
    assert dfa.is_released(dfa.walk(dfa.start, "a×".encode()))  # × ends one
    assert dfa.walk(dfa.start, "a→".encode()[:-1]) >= 0 and dfa.walk_token(dfa.start, "a→".encode()[:-1]) == -1
    assert dfa.walk_token(dfa.start, "aé".encode()[:-1]) >= 0  # inside an identifier character is fine
    assert dfa.is_released(dfa.walk(dfa.start, b"get)"))
    assert dfa.walk(dfa.start, b"get.upper") == -1  # would cross the next trigger inside the token
    assert dfa.is_released(dfa.walk(dfa.start, b"get."))
    assert dfa.walk(dfa.start, b"gex") == -1 and dfa.walk(dfa.start, b".") == -1


def test_idle_guard_exact(infos):
    info = infos("llama-3")
    context = MonitorContext(info, [FixedMonitor(["x"])])
    got = set(bitmask_to_ids(context.idle_words.view(np.int32), info.vocab_size).tolist())
    matchable = set(info.matchable_token_ids().tolist())
    want = {t for t in range(info.num_tokens) if t not in matchable or not any(
        a == ord(".") and _is_identifier_start_byte(b) for a, b in zip(info.token_bytes[t], info.token_bytes[t][1:]))}
    assert got == want
    assert info.token_bytes.index(b".get") not in got
    assert MonitorContext(info, [FixedMonitor(["x"])], split_at_triggers=False).idle_words is None


def test_invalid_inputs():
    with pytest.raises(MonitorError, match="identifiers"):
        identifier_dfa(frozenset(["ok", "not ok"]))
    with pytest.raises(MonitorError, match="empty"):
        identifier_dfa(frozenset())
    with pytest.raises(MonitorError, match="project_dir"):
        PythonMemberMonitor(PROJECT_DIR / "missing")
    with pytest.raises(TypeError, match="Monitor"):
        MonitorContext(None, [object()])


# -- jedi monitors ---------------------------------------------------------------------------
@pytest.fixture(scope="module")
def member_monitor():
    return PythonMemberMonitor(PROJECT_DIR)


@pytest.fixture(scope="module")
def public_member_monitor():
    return PythonMemberMonitor(PROJECT_DIR, include_dunder=False)


@pytest.fixture(scope="module")
def import_monitor():
    return PythonImportMonitor(PROJECT_DIR)


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_member_monitor_names_real_members(member_monitor, case):
    found = member_monitor.trigger(case.prompt)
    real = real_members(case)
    # jedi reads members from typeshed, whose ``object`` declares ``__annotations__``; at run
    # time only classes with annotations have it.  Every other name must exist.
    assert found is not None and found.names - real <= {"__annotations__"}
    public = {n for n in real if not n.startswith("__")}
    assert {n for n in found.names if not n.startswith("__")} == public


@pytest.mark.parametrize("text", ["x = 1.", "x = 1\n# see the order.", 'x = "order.', "order.customer ", "x = order"])
def test_member_monitor_ignores_non_attribute_dots(member_monitor, text):
    tail = text.encode()[-16:]
    assert not member_monitor.might_trigger(tail) or member_monitor.trigger(text) is None


def test_import_monitor(import_monitor):
    models = fixture_modules()["models"]
    found = import_monitor.trigger("from shop.models import")
    assert found is not None and found.prefix == " "
    assert {"Product", "Customer", "Größe"} <= found.names <= set(dir(models))
    assert {"models", "inventory", "orders"} <= import_monitor.trigger("import os\nfrom shop import").names
    modules = import_monitor.trigger("import json\nimport").names
    assert {"shop", "os", "json"} <= modules and "Product" not in modules
    assert not import_monitor.might_trigger(b"x = reimport")
    assert import_monitor.trigger("x = 1  # import") is None


# -- generation with tiny random models ------------------------------------------------------
def _tiny_llama(vocab_size: int, seed: int = 0):
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(seed)
    config = LlamaConfig(vocab_size=vocab_size, hidden_size=16, intermediate_size=32, num_hidden_layers=1,
                         num_attention_heads=2, num_key_value_heads=1, max_position_embeddings=512)
    return LlamaForCausalLM(config).eval()


@pytest.fixture(scope="module")
def llama3(load_tokenizer, infos):
    tokenizer = load_tokenizer("llama-3")
    return tokenizer, infos("llama-3"), _tiny_llama(len(tokenizer))


def _sample(model, tokenizer, prompt, processor, n, max_new_tokens, **kwargs):
    from transformers import LogitsProcessorList

    inputs = tokenizer(prompt, return_tensors="pt")
    processors = LogitsProcessorList([processor] if processor is not None else [])
    out = model.generate(**inputs, do_sample=kwargs.pop("do_sample", True), max_new_tokens=max_new_tokens,
                         num_return_sequences=n, logits_processor=processors,
                         pad_token_id=tokenizer.eos_token_id, **kwargs)
    texts, finished = [], []
    eos = set(TokenizerInfo.from_huggingface(tokenizer).eos_token_ids) if processor is None else set(
        processor.tokenizer_info.eos_token_ids)
    for row in out[:, inputs["input_ids"].shape[1]:].tolist():
        ends = [i for i, t in enumerate(row) if t in eos]
        texts.append(tokenizer.decode(row[: ends[0]] if ends else row))
        finished.append(bool(ends))
    return texts, finished


def test_generated_identifiers_are_real_members(llama3, public_member_monitor):
    tokenizer, info, model = llama3
    with_hits = with_total = without_hits = without_total = 0
    for case in CASES:
        members = real_members(case)
        processor = MonitorLogitsProcessor([public_member_monitor], info)
        texts, finished = _sample(model, tokenizer, case.prompt, processor, 6, 14)
        hits, total = member_rate(texts, members, finished)
        assert hits == total, [t for t in texts if leading_identifier(t)[0] not in members]
        with_hits, with_total = with_hits + hits, with_total + total
        texts, finished = _sample(model, tokenizer, case.prompt, None, 6, 14)
        hits, total = member_rate(texts, members, finished)
        without_hits, without_total = without_hits + hits, without_total + total
    assert with_hits == with_total == 24
    assert without_hits <= 0.2 * without_total


def test_composes_with_a_grammar_and_outputs_parse(llama3, public_member_monitor):
    import lark

    tokenizer, info, model = llama3
    # NAME's characters are all identifier characters.  (With ``/[^\W\d]\w*/``, as lark's own
    # Python grammar has it, ``tags③x`` parses: ``③`` is alphanumeric but ends an identifier,
    # so the monitor lets go and the grammar keeps the name growing.)
    grammar = r"""
        start: NAME call? "\n"
        call: "(" ")"
        NAME: /[A-Za-z_\u00c0-\u00d6\u00d8-\u00f6\u00f8-\u024f][A-Za-z0-9_\u00c0-\u00d6\u00d8-\u00f6\u00f8-\u024f]*/
    """
    compiled = Compiler(info).compile_grammar(grammar)
    parser = lark.Lark(grammar, parser="lalr")
    for case in CASES:
        processor = MonitorLogitsProcessor([public_member_monitor], info, compiled)
        texts, finished = _sample(model, tokenizer, case.prompt, processor, 4, 24)
        assert all(finished), texts
        for text in texts:
            parser.parse(text)
            assert leading_identifier(text)[0] in real_members(case)


def test_beam_search_rows_stay_members(llama3, public_member_monitor):
    tokenizer, info, model = llama3
    case = CASES[1]
    processor = MonitorLogitsProcessor([public_member_monitor], info)
    texts, finished = _sample(model, tokenizer, case.prompt, processor, 3, 8, do_sample=False, num_beams=3)
    members = real_members(case)
    assert all(leading_identifier(t)[0] in members for t in texts), texts


def test_matcher_accepts_exactly_its_mask(llama3):
    _, info, _ = llama3
    context = MonitorContext(info, [FixedMonitor(["get", "get_all", "höhe"])])
    any_text = Compiler(info).compile_regex(r"[\s\S]*")
    rng = np.random.default_rng(0)
    for _ in range(3):
        matcher = MonitoredMatcher(context, Matcher(any_text), b"x = obj.")
        for _ in range(6):
            words = matcher.next_token_mask_words()
            allowed = bitmask_to_ids(words.view(np.int32), info.vocab_size)
            allowed_set = set(allowed.tolist())
            probe = rng.choice(info.num_tokens, 50, replace=False)
            for token in probe.tolist():
                if token not in allowed_set:
                    assert not matcher.fork().accept_token(token), token
            choice = int(rng.choice(allowed))
            assert matcher.accept_token(choice)
            if matcher.is_terminated():
                break
        text = matcher.text[len(b"x = obj."):].decode("utf-8", errors="replace")
        ident, complete = leading_identifier(text)
        assert ident in {"get", "get_all", "höhe"} or not complete and any(
            n.startswith(ident) for n in ("get", "get_all", "höhe"))


def test_triggers_inside_the_output_compose_with_a_regex(llama3):
    """Every ``x.`` the model writes re-triggers; a regex constraint is ANDed in."""
    import regex

    tokenizer, info, model = llama3
    compiled = Compiler(info).compile_regex(r"(x\.[a-z]{1,8} ){3}")
    processor = MonitorLogitsProcessor([FixedMonitor(["alpha", "beta", "betamax"])], info, compiled)
    texts, finished = _sample(model, tokenizer, "print(", processor, 8, 40)
    oracle = regex.compile(r"(x\.(alpha|beta|betamax) ){3}")
    assert all(finished), texts
    assert all(oracle.fullmatch(t) for t in texts), texts
    assert processor.context.stats["triggers"] >= 3 * 8


def test_composes_with_the_builtin_python_grammar(llama3, public_member_monitor):
    """Monitor AND the built-in python grammar: outputs are members and whole Python programs.

    A random model rarely ends a program by itself, so EOS and newline logits get a bias
    (applied before the constraint's mask, which still decides what is allowed).  The
    unicode case is left out: the python grammar's NAME is ASCII (documented there).
    """
    import ast

    from transformers import LogitsProcessor, LogitsProcessorList

    tokenizer, info, model = llama3
    favoured = list(info.eos_token_ids) + [t for t in range(info.vocab_size) if info.token_bytes[t] == b"\n"]

    class Ending(LogitsProcessor):
        def __call__(self, input_ids, scores):
            scores[:, favoured] += 30.0
            return scores

    compiled = Compiler(info).compile_builtin("python")
    for case in CASES[:2]:
        processor = MonitorLogitsProcessor([public_member_monitor], info, compiled)
        inputs = tokenizer(case.prompt, return_tensors="pt")
        out = model.generate(**inputs, do_sample=True, max_new_tokens=16, num_return_sequences=2,
                             logits_processor=LogitsProcessorList([Ending(), processor]),
                             pad_token_id=tokenizer.eos_token_id)
        for row in out[:, inputs["input_ids"].shape[1]:].tolist():
            ends = [i for i, t in enumerate(row) if t in info.eos_token_ids]
            assert ends, row
            text = info.decode_bytes(row[: ends[0]]).decode()
            ast.parse(text)
            assert leading_identifier(text)[0] in real_members(case), text
