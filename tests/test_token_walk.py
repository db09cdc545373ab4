"""The subtree-skipping trie walk against walking each token on its own, and brute force.

``TokenDFA`` computes mask rows with :func:`constrain.automata._kernels.walk_dfa`,
which takes whole trie subtrees at once where the DFA loops on a state.  Its rows
(and next-state rows) must equal those of walking each token's bytes on its own
(:func:`token_by_token`, no trie) for sampled states, on real vocabularies with
partial UTF-8 tokens (Llama-3 byte-level BPE, Llama-2 byte fallback), for DFAs
from regexes and JSON schemas; and, at a few states, the Python per-token
``dfa.walk(state, bytes(token))``.  Schemas are compiled with ``max_any_depth=3``, so that their
free-form values stay inside one DFA (the pushdown walk has its own tests, test_pushdown.py).
"""

from __future__ import annotations

import codecs
import functools
import json

import numpy as np
import pytest
from conftest import shared_data_dir
from numba import njit

from constrain import Compiler
from constrain.automata.byte_dfa import ByteDFA, regex_to_dfa
from constrain.automata.dfa_ops import difference
from constrain.automata.free_strings import content_automaton
from constrain.automata._kernels import (HAS_HIGH, ORDINARY_UTF8, STRING_EXIT, UTF8, UTF8_CLEAN, _chars_step, _learn_alive,
                                         ordinary_run,
                                         subtree_summaries)
from constrain.automata.token_trie import ORDINARY_MAX_CHARS, OrdinaryTokens, TokenTrie, new_loop_memo
from constrain.grammar.json_schema.strings import any_string_dfa

TOKENIZERS = ["llama-3", "llama-2"]

PATTERNS = {
    "json_string": r'"([^"\\\x00-\x1f]|\\["\\/bfnrt])*"',
    "negated": r'[^"\\]*',
    "anything": r"[\s\S]*",
    "not_e_acute": r"[^\u00e9]*",
    "some_accents": r"(é|[a-z ])*",
    "cjk_and_letters": r"[a-z\u4e00-\u9fff ]*",
    "bounded_dot": r".{0,40}",
    "bounded_letters": r"[a-z ]{0,200}",
    "bounded_negated": r'[^"\\]{2,60}',
    "astral": r"[\u{1F300}-\u{1F5FF} a-z]*",
    "date": r"\d{4}-\d{2}-\d{2}",
    "contains_hex_run": r'"[^"\\]*[0-9a-f]{8}[^"\\]*",?',
    # Ordinary tokens taken by length (OrdinaryTokens): counts past the longest
    # run, a search that no ordinary text can fail ('.' refuses U+2028), and a
    # count that ends where not every ordinary character steps alike.
    "long_count": r'"[^"\\]{0,300}"',
    "dot_search": r".*\.xsl",
    "dot_pair": r"(.+)/(.+)",
    "count_then_search": r'[^"\\]{5,30}x.*',
    "keys_beside_free_keys": r'\{("alpha": 1|"beta": 2|"[^"\\]*": 3)\}',
}

SCHEMAS = {
    "free_strings": {"type": "object", "properties": {"name": {"type": "string"}, "tags": {
        "type": "array", "items": {"type": "string"}}}, "required": ["name"]},
    "bounded_strings": {"type": "object", "properties": {"code": {"type": "string", "maxLength": 30},
                                                         "kind": {"enum": ["alpha", "béta"]}}},
    "unanchored_pattern": {"type": "object", "properties": {"hash": {"type": "string", "pattern": "[A-Fa-f0-9]{16}"}}},
    "pattern_and_numbers": {"type": "object", "properties": {"id": {"type": "string", "pattern": "^[A-Z]{2}-\\d+$"},
                                                             "score": {"type": "number"}}},
}


def _bench_schemas(count: int) -> list[dict]:
    """The first ``count`` schemas of JSONSchemaBench's Github_medium, where the data is present."""
    data = shared_data_dir()
    path = data / "jsonschemabench" / "Github_medium.jsonl" if data else None
    if path is None or not path.is_file():
        return []
    with path.open() as rows:
        return [json.loads(line)["schema"] for line, _ in zip(rows, range(count))]


@njit(cache=True)
def token_by_token(trans, state, flat, offsets, token_ids, out_words, out_next):
    """Each token's bytes through the DFA on their own (no trie): viable when -1 is never reached."""
    for k in range(token_ids.shape[0]):
        q = state
        for j in range(offsets[k], offsets[k + 1]):
            q = trans[q, flat[j]]
            if q < 0:
                break
        if q >= 0:
            t = token_ids[k]
            out_words[t >> 5] |= np.uint32(1) << np.uint32(t & 31)
            out_next[t] = q


@functools.lru_cache(maxsize=None)
def _flat_tokens(info) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The matchable tokens' bytes concatenated, their offsets and their ids."""
    ids = np.asarray(info.matchable_token_ids(), dtype=np.int64)
    blobs = [info.token_bytes[t] for t in ids.tolist()]
    offsets = np.zeros(len(blobs) + 1, dtype=np.int64)
    np.cumsum([len(b) for b in blobs], out=offsets[1:])
    return np.frombuffer(b"".join(blobs), dtype=np.uint8), offsets, ids


def reference_rows(engine, state: int) -> tuple[np.ndarray, np.ndarray]:
    """Mask words (EOS included when accepting) and next states, token by token."""
    words = np.zeros(engine.num_words, dtype=np.uint32)
    nxt = np.full(engine.info.vocab_size, -1, dtype=np.int32)
    token_by_token(engine.dfa.trans, state, *_flat_tokens(engine.info), words, nxt)
    if engine.dfa.accepting[state]:
        words |= engine.eos_words()
    return words, nxt


def _sample_states(engine, limit: int) -> list[int]:
    """Up to ``limit`` states spread over the DFA (all of them when it is small)."""
    num = engine.dfa.num_states
    return sorted(set(np.linspace(0, num - 1, min(num, limit)).astype(int).tolist()))


def _assert_rows_match(engine, limit: int = 120) -> None:
    for state in _sample_states(engine, limit):
        words, nxt = reference_rows(engine, state)
        assert np.array_equal(engine._compute_row(state), words), f"mask row of state {state}"
        assert np.array_equal(engine.next_states(state, memoize=False), nxt), f"next-state row of state {state}"


@pytest.mark.parametrize("tokenizer", TOKENIZERS)
@pytest.mark.parametrize("name", sorted(PATTERNS))
def test_regex_rows_equal_reference(infos, tokenizer, name):
    engine = Compiler(infos(tokenizer), cache_dir=False).compile_regex(PATTERNS[name]).engine
    _assert_rows_match(engine)


@pytest.mark.parametrize("tokenizer", TOKENIZERS)
@pytest.mark.parametrize("name", sorted(SCHEMAS))
def test_schema_rows_equal_reference(infos, tokenizer, name):
    engine = Compiler(infos(tokenizer), cache_dir=False).compile_json_schema(SCHEMAS[name], max_any_depth=3).engine
    _assert_rows_match(engine)


@pytest.mark.parametrize("tokenizer", TOKENIZERS)
def test_bench_schema_rows_equal_reference(infos, tokenizer):
    schemas = _bench_schemas(6)
    if not schemas:
        pytest.skip("JSONSchemaBench not found (shared data directory, or set $CONSTRAIN_DATA_DIR)")
    compiler = Compiler(infos(tokenizer), cache_dir=False)
    for schema in schemas:
        try:
            engine = compiler.compile_json_schema(schema, max_any_depth=3).engine
        except Exception:  # schemas the compiler refuses are not this test's business
            continue
        _assert_rows_match(engine, limit=40)


@pytest.mark.parametrize("tokenizer", TOKENIZERS)
def test_rows_equal_brute_force(infos, tokenizer):
    """Per token, ``dfa.walk`` over its bytes: viable exactly when the row says so."""
    info = infos(tokenizer)
    engine = Compiler(info, cache_dir=False).compile_json_schema(SCHEMAS["bounded_strings"], max_any_depth=3).engine
    matchable = info.matchable_token_ids()
    for state in _sample_states(engine, 6):
        row = engine._compute_row(state)
        nxt = engine.next_states(state, memoize=False)
        for token in matchable:
            end = engine.dfa.walk(state, info.token_bytes[token])
            allowed = bool((row[token >> 5] >> np.uint32(token & 31)) & 1)
            assert allowed == (end >= 0), (state, info.token_bytes[token])
            assert nxt[token] == (end if end >= 0 else -1), (state, info.token_bytes[token])


# Free strings beside strings that are not free (a count, an enum, a pattern): only the
# first may take the vocabulary's reading of a free string (constrain.automata.free_strings).
FREE_AND_OTHER_STRINGS = {"type": "object", "required": ["name"], "properties": {
    "name": {"type": "string"}, "tags": {"type": "array", "items": {"type": "string"}, "maxItems": 3},
    "note": {"type": "string", "maxLength": 5}, "kind": {"enum": ["a\"b", "c"]},
    "code": {"type": "string", "pattern": "^x+$"}, "more": {"type": "array", "items": {"type": "string"}}}}


def _free_string_states(engine) -> list[int]:
    """The DFA states where a row comes from the vocabulary's reading of a free string."""
    engine._compute_row(engine.initial_state)  # makes the walk's memos
    dfa = engine.dfa
    return [state for state in range(dfa.num_states)
            if engine.free_strings.exit_of(dfa.trans, state, engine._exits, np.empty(0, np.int32), dfa.accepting) >= 0]


@pytest.mark.parametrize("tokenizer", TOKENIZERS)
@pytest.mark.parametrize("whitespace", ["flexible", "compact"])
def test_free_string_rows_equal_reference(infos, tokenizer, whitespace):
    """Inside a free string a row is the tokens that stay inside it plus a walk of the
    tokens that close it, from the quote on: token by token agrees at every such state
    (the name, each of the three tag items, the unbounded array's items), and no
    state of the bounded, enumerated or patterned strings takes that way."""
    info = infos(tokenizer)
    engine = Compiler(info, cache_dir=False).compile_json_schema(FREE_AND_OTHER_STRINGS, whitespace=whitespace,
                                                                 max_any_depth=3).engine
    free = _free_string_states(engine)
    assert len(free) >= 5, free
    for prefix in (b'{"name":"a","note":"', b'{"name":"a","kind":"', b'{"name":"a","code":"x'):  # both spacings
        state = engine.dfa.walk(engine.initial_state, prefix)
        assert state >= 0 and state not in free, prefix
    for state in free + _sample_states(engine, 40):
        words, _ = reference_rows(engine, state)
        assert np.array_equal(engine._compute_row(state), words), f"mask row of state {state}"


def test_free_string_content_is_what_schemas_write():
    """The content automaton, between quotes, is the language of a schema's free string
    (any_string_dfa): the reading is taken only where a table reads the same, so this
    keeps it from being silently never taken."""
    table, start = content_automaton()
    n = table.shape[0]
    trans = np.full((n + 2, 256), -1, dtype=np.int32)
    trans[0, ord('"')] = start + 1
    trans[1:n + 1] = np.where(table >= 0, table + 1, -1)
    trans[1:n + 1][table == STRING_EXIT] = n + 1
    quoted = ByteDFA(trans, np.arange(n + 2) == n + 1, 0)
    reference = any_string_dfa()
    assert difference(quoted, reference) is None and difference(reference, quoted) is None


def _valid_prefix(data: bytes) -> bool:
    """True when ``data`` is valid UTF-8 possibly cut inside its last character."""
    try:
        codecs.getincrementaldecoder("utf-8")().decode(data, final=False)
    except UnicodeDecodeError:
        return False
    return True


def _at_boundary(data: bytes) -> bool:
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def test_subtree_summaries_match_brute_force():
    tokens = [b"a", b"ab", b"a\xc3", b"a\xc3\xa9", b"a\xc3\xa9z", b"\xc3", b"\xc3\xa9", b"\xe4\xbd\xa0\xe5",
              b"\xe4\xbd\xa0", b"\xff", b"x\xff", b"x", b"xy", b"\xed\xa0\x80", b"\xc0\x80", b"\xf0\x9f\x98\x80",
              b"\xf0\x9f", b"q\xf4\x90", b"q"]
    trie = TokenTrie.from_token_bytes(tokens, range(len(tokens)))
    ascii_below, flags, height = subtree_summaries(trie.node_byte, trie.node_depth, trie.max_depth, UTF8)
    paths: list[bytes] = []
    for i in range(trie.num_nodes):
        depth = int(trie.node_depth[i])
        parent = next(j for j in range(i - 1, -1, -1) if trie.node_depth[j] == depth - 1) if depth > 1 else None
        paths.append((paths[parent] if parent is not None else b"") + bytes([trie.node_byte[i]]))
    for i in range(trie.num_nodes):
        inside = range(i + 1, int(trie.node_skip[i]))
        below = {int(trie.node_byte[j]) for j in inside}
        want_ascii = sum(1 << b for b in below if b < 0x80)
        got_ascii = int(ascii_below[i, 0]) | (int(ascii_below[i, 1]) << 64)
        assert got_ascii == want_ascii, paths[i]
        assert bool(flags[i] & HAS_HIGH) == any(b >= 0x80 for b in below), paths[i]
        clean = _at_boundary(paths[i]) and all(_valid_prefix(paths[j]) for j in inside)
        assert bool(flags[i] & UTF8_CLEAN) == clean, paths[i]
        assert height[i] == max((len(paths[j]) - len(paths[i]) for j in inside), default=0), paths[i]


@pytest.mark.parametrize("pattern,loops", [(r"[\s\S]*", True), (r'[^"]*', True), (r"(é|[a-z])*", False),
                                           (r"[^\u00e9]*", False), (r"[\u0080-\u{10FFFF}]*", True),
                                           (r"[\u0800-\u{10FFFF}]*", False)])
def test_chars_step(pattern, loops):
    """Every multi-byte character returns to the start state exactly for the patterns that allow them all."""
    dfa = regex_to_dfa(pattern)
    assert _chars_step(dfa.trans, dfa.start, dfa.start, UTF8) == loops


def _alive(dfa, state: int) -> int:
    """How many ASCII bytes ``_learn_alive`` finds no path from ``state`` can die on."""
    memo = new_loop_memo(dfa.num_states)
    _learn_alive(dfa.trans, state, memo[0], memo[2])
    return sum(bin(int(word)).count("1") for word in memo[2][state])


def test_alive_bytes_where_they_take_subtrees():
    """Inside a string that must hold a hex run somewhere, every ASCII byte but the quote
    and the backslash stays alive (many states, no single step); a narrow
    state (a number's digits) and the characters of a long count find none."""
    hex_run = regex_to_dfa(PATTERNS["contains_hex_run"])
    assert _alive(hex_run, hex_run.walk(hex_run.start, b'"ab')) == 128 - 2
    number = regex_to_dfa(r"-?[0-9]+(\.[0-9]+)?")
    assert _alive(number, number.walk(number.start, b"12")) == 0
    count = regex_to_dfa(r'[^"\\]{0,300}')
    assert _alive(count, count.walk(count.start, b"ab")) == 0


def ordinary_length(data: bytes) -> int:
    """Oracle: the characters of a token inside a JSON string when all are ordinary, else -1."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return -1
    if not text or any(c in '"\\\u2028\u2029' or c < " " for c in text) or len(text) > ORDINARY_MAX_CHARS:
        return -1
    return len(text)


def _assert_split_matches(split: OrdinaryTokens, token_bytes, ids) -> None:
    lengths = {t: ordinary_length(token_bytes[t]) for t in ids}
    assert sorted(split.rest.tok_ids.tolist()) == sorted(t for t, n in lengths.items() if n < 0)
    assert split.longest == max(lengths.values())
    for k in range(split.longest + 1):
        bits = np.unpackbits(split.upto[k].view(np.uint8), bitorder="little")
        want = sorted(t for t, n in lengths.items() if 0 <= n <= k)
        assert np.flatnonzero(bits).tolist() == want, k
        assert split.counts[k] == len(want), k


def test_ordinary_tokens_split_by_hand():
    tokens = [b"ab", b'a"', b"\\n", b"\xc3\xa9t\xc3\xa9", b"\xc3", b"x" * (ORDINARY_MAX_CHARS + 1), b"x" * ORDINARY_MAX_CHARS,
              b"\xe2\x80\xa8", b"\xe2\x80\x99", b"\t", b"\x7f", b"a\xe2\x80", b"\xf0\x9f\x98\x80", b"\xed\xa0\x80", b" "]
    trie = TokenTrie.from_token_bytes(tokens, range(len(tokens)))
    _assert_split_matches(OrdinaryTokens.of(trie), tokens, range(len(tokens)))


@pytest.mark.parametrize("tokenizer", TOKENIZERS)
def test_ordinary_tokens_split_of_real_vocabularies(infos, tokenizer):
    info = infos(tokenizer)
    engine = Compiler(info, cache_dir=False).compile_regex("a").engine
    _assert_split_matches(engine.trie.ordinary, info.token_bytes, info.matchable_token_ids().tolist())


@pytest.mark.parametrize("pattern,prefix,run", [
    (r'"([^"\\\x00-\x1f]|\\["\\/bfnrt])*"', '"ab', ORDINARY_MAX_CHARS),  # a free string loops
    (r'"[^"\\]{0,30}"', '"' + "a" * 10, 20),  # a count: exactly the room left
    (r'"[^"\\]{0,30}"', '"' + "a" * 30, 0),
    (r'"[^"\\]{0,300}"', '"', ORDINARY_MAX_CHARS),
    (r".*\.xsl", "ab.x", ORDINARY_MAX_CHARS),  # a search no ordinary text can fail
    (r'\{("alpha": 1|"beta": 2|"[^"\\]*": 3)\}', '{"', ORDINARY_MAX_CHARS),  # a key beside free keys
    (r'\{("alpha": 1|"beta": 2)\}', '{"', -1),  # listed keys only
    (r"[a-z]*", "", -1),  # ordinary characters that die: walk every token
    (r"[^\u00e9]*", "", -1),  # a multi-byte ordinary character that dies
    (r".*[\u2028]", "", ORDINARY_MAX_CHARS),  # U+2029 dies here, but it is no ordinary character
])
def test_ordinary_run(pattern, prefix, run):
    dfa = regex_to_dfa(pattern)
    state = dfa.walk(dfa.start, prefix.encode())
    words, step_bytes, _ = new_loop_memo(dfa.num_states)
    none = np.empty(0, np.int32)
    assert ordinary_run(dfa.trans, state, words, step_bytes, ORDINARY_UTF8, none, none.astype(bool),
                        ORDINARY_MAX_CHARS) == run
