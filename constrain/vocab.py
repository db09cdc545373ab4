"""The exact bytes of every token id.

Token masks are computed by walking automata over *bytes*, so every layer above this
one needs to know, for each token id, exactly which bytes the model appends to the
text when it emits that id.  Tokenizers do not store that directly: byte-level BPE
vocabularies (GPT-2, Llama-3, Qwen2) spell bytes with a printable stand-in alphabet,
SentencePiece vocabularies (Llama-2, Mistral) spell spaces as ``"▁"`` and raw bytes as
``<0xNN>``, and special tokens are control symbols that are not text at all.
:class:`TokenizerInfo` resolves all of that once, verifies the result against the
tokenizer's own decoder, and then stays immutable so it can be shared, hashed (for
caches keyed on the vocabulary) and pickled (for worker processes).
"""

from __future__ import annotations

import functools
import hashlib
import json
import operator
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from constrain.errors import TokenizerError

__all__ = [
    "TokenizerInfo",
    "VOCAB_TYPES",
    "END_OF_TURN_MARKERS",
    "bytes_to_unicode",
]

#: Bumped whenever the hashed representation changes, so stale caches are not reused.
_HASH_FORMAT_VERSION = 1

#: How the token strings were turned into bytes; "raw" means the caller gave bytes.
VOCAB_TYPES = frozenset({"raw", "byte_level", "sentencepiece"})

#: Contents of special tokens that end a generation in well-known chat models.  The
#: tokenizer's single ``eos_token`` is often only one of several stop tokens (Llama-3
#: Instruct ends turns with ``<|eot_id|>`` but base models with ``<|end_of_text|>``), so
#: a mask that only allowed ``eos_token_id`` could force the model to keep talking.
END_OF_TURN_MARKERS = frozenset(
    {
        "<|eot_id|>",
        "<|end_of_text|>",
        "<|eom_id|>",
        "<|im_end|>",
        "<|endoftext|>",
        "</s>",
        "<|end|>",
        "<eos>",
        "<end_of_turn>",
        "<|return|>",
        "<|call|>",
        "<|eos|>",
        "<|END_OF_TURN_TOKEN|>",
        "<|end▁of▁sentence|>",
        "<｜end▁of▁sentence｜>",
    }
)

_VERIFY_SAMPLE_SIZE = 2000
_VERIFY_SEED = 0x5EED
_MAX_REPORTED = 5
_BYTE_FALLBACK_TOKEN = re.compile(r"<0x([0-9A-Fa-f]{2})>")
_SENTENCEPIECE_SPACE = "\u2581"
_PREFIX_CANDIDATES = tuple("abcdefghijklmnopqrstuvwxyz0123456789")
_SUPPORTED = (
    "a fast (Rust-backed) tokenizer whose decoder is ByteLevel (byte-level BPE: GPT-2, "
    "Llama-3, Qwen2) or SentencePiece-style (Metaspace, or Replace('\u2581', ' ') with "
    "optional ByteFallback/Fuse/Strip: Llama-2, Mistral)"
)


# --------------------------------------------------------------------------- byte-level


def bytes_to_unicode() -> dict[int, str]:
    """Return GPT-2's byte -> printable character table.

    Byte-level BPE stores tokens as strings, so each byte is given a visible stand-in:
    the 188 bytes that are already printable Latin-1 characters (``!``..``~``,
    ``¡``..``¬``, ``®``..``ÿ``) stand for themselves, and the remaining 68 (control
    characters, space, NBSP, soft hyphen) are mapped, in byte order, to the code points
    from U+0100 upwards.  That is why a leading space appears as ``"Ġ"`` (U+0120).

    Returns
    -------
    dict[int, str]
        All 256 byte values, each mapped to a distinct one-character string.
    """
    printable = [
        *range(ord("!"), ord("~") + 1),
        *range(ord("¡"), ord("¬") + 1),
        *range(ord("®"), ord("ÿ") + 1),
    ]
    table = {byte: chr(byte) for byte in printable}
    next_code_point = 256
    for byte in range(256):
        if byte not in table:
            table[byte] = chr(next_code_point)
            next_code_point += 1
    return table


@functools.cache
def _byte_level_translation() -> dict[int, str]:
    """Return a ``str.translate`` table that undoes :func:`bytes_to_unicode`.

    Each stand-in character becomes the Latin-1 character with the byte's value, so
    ``token.translate(table).encode("latin-1")`` yields the bytes in one C-level pass.
    Latin-1 characters that are *not* stand-ins (such as a literal space) are mapped to
    U+FFFF, which makes the Latin-1 encode fail: that is how tokens outside the
    alphabet are detected without a per-character Python loop.
    """
    table: dict[int, str] = {}
    alphabet = bytes_to_unicode()
    stand_ins = set(alphabet.values())
    for code_point in range(256):
        if chr(code_point) not in stand_ins:
            table[code_point] = "\uffff"
    for byte, char in alphabet.items():
        table[ord(char)] = chr(byte)
    return table


def _byte_level_token_bytes(token: str) -> bytes:
    """Return the bytes the ByteLevel decoder produces for one token string.

    Like the decoder in ``tokenizers``, a token made only of stand-in characters is
    mapped back byte by byte, and any other token (an added token such as
    ``"foo bar"``, which contains a literal space) is taken as UTF-8 text unchanged.
    """
    try:
        return token.translate(_byte_level_translation()).encode("latin-1")
    except UnicodeEncodeError:
        return token.encode("utf-8")


# --------------------------------------------------------------------- layout detection


@dataclass(frozen=True)
class _Layout:
    """How one tokenizer's token strings become bytes.

    Attributes
    ----------
    vocab_type : str
        ``"byte_level"`` or ``"sentencepiece"``.
    replacements : tuple of (str, str)
        Literal substitutions the decoder applies to every token, in order
        (``("▁", " ")`` for SentencePiece).
    byte_fallback : bool
        Whether ``<0xNN>`` tokens decode to the single byte ``NN``.
    """

    vocab_type: str
    replacements: tuple[tuple[str, str], ...] = ()
    byte_fallback: bool = False

    def token_bytes(self, token: str) -> bytes:
        """Return the bytes that this layout's decoder emits for ``token``."""
        if self.vocab_type == "byte_level":
            return _byte_level_token_bytes(token)
        if self.byte_fallback:
            match = _BYTE_FALLBACK_TOKEN.fullmatch(token)
            if match is not None:
                return bytes([int(match.group(1), 16)])
        for old, new in self.replacements:
            token = token.replace(old, new)
        return token.encode("utf-8")


def _backend_of(tokenizer: Any) -> Any:
    """Return the ``tokenizers.Tokenizer`` behind ``tokenizer``, or raise.

    Only the Rust pipeline has a serialised decoder to inspect; slow (pure Python)
    tokenizers would need per-class knowledge that we do not want to guess at.
    """
    try:
        from tokenizers import Tokenizer
    except ImportError:  # pragma: no cover - tokenizers is a transformers dependency
        Tokenizer = None  # noqa: N806
    if Tokenizer is not None and isinstance(tokenizer, Tokenizer):
        return tokenizer
    backend = getattr(tokenizer, "backend_tokenizer", None)
    if backend is None:
        raise TokenizerError(
            f"Invalid tokenizer: expected {_SUPPORTED}, got {type(tokenizer).__name__} "
            "without a backend_tokenizer (a slow tokenizer?); load it with use_fast=True"
        )
    return backend


def _component_json(component: Any) -> Any:
    """Return the JSON config of one pipeline component (``None`` stays ``None``)."""
    if component is None:
        return None
    return json.loads(component.__getstate__())


def _pipeline_config(backend: Any) -> dict[str, Any]:
    """Return the decoder and model settings of a Rust tokenizer as JSON-like data.

    The full ``backend.to_str()`` JSON carries every merge (280k for Llama-3) and takes
    most of a second to parse, so the small components are serialised one by one; the
    full JSON is the fallback for components that cannot be serialised alone.
    """
    model = backend.model
    try:
        decoder = _component_json(backend.decoder)
        model_config = {
            "type": type(model).__name__,
            "byte_fallback": bool(getattr(model, "byte_fallback", False)),
        }
    except Exception:  # noqa: BLE001 - any failure means "use the full serialisation"
        full = json.loads(backend.to_str())
        decoder = full.get("decoder")
        model_config = {
            "type": full["model"].get("type", type(model).__name__),
            "byte_fallback": bool(full["model"].get("byte_fallback", False)),
        }
    return {"decoder": decoder, "model": model_config}


def _flatten_decoders(decoder: Mapping[str, Any] | None) -> list[Mapping[str, Any]]:
    """Return the steps of a (possibly nested) ``Sequence`` decoder in order."""
    if decoder is None:
        return []
    if decoder.get("type") == "Sequence":
        return [step for inner in decoder.get("decoders", []) for step in _flatten_decoders(inner)]
    return [decoder]


def _describe_decoder(decoder: Mapping[str, Any] | None) -> str:
    """Return a short human-readable name for a decoder config, for error messages."""
    steps = _flatten_decoders(decoder)
    if not steps:
        return "no decoder"
    names = [str(step.get("type")) for step in steps]
    return names[0] if decoder and decoder.get("type") != "Sequence" else f"Sequence[{', '.join(names)}]"


def _sentencepiece_layout(steps: Sequence[Mapping[str, Any]]) -> _Layout | None:
    """Return the SentencePiece layout for decoder ``steps``, or ``None`` if they don't fit.

    ``Fuse`` only joins tokens and ``Strip`` (after ``Fuse``) only removes the leading
    space of a *whole* decode, so neither changes what a token contributes in the
    middle of a text; a ``Strip`` that runs per token would, so it is refused.
    """
    replacements: list[tuple[str, str]] = []
    byte_fallback = False
    fused = False
    for step in steps:
        kind = step.get("type")
        if kind == "Replace" and "String" in step.get("pattern", {}):
            replacements.append((step["pattern"]["String"], step.get("content", "")))
        elif kind == "Metaspace":
            replacements.append((step.get("replacement", _SENTENCEPIECE_SPACE), " "))
        elif kind == "ByteFallback":
            byte_fallback = True
        elif kind == "Fuse":
            fused = True
        elif kind == "Strip" and fused:
            continue
        else:
            return None
    if not any(new == " " for _, new in replacements):
        return None
    return _Layout("sentencepiece", tuple(replacements), byte_fallback)


def _detect_layout(tokenizer: Any, config: Mapping[str, Any]) -> _Layout:
    """Classify the tokenizer's decoder as byte-level or SentencePiece, else raise."""
    decoder = config["decoder"]
    model_type = config["model"]["type"]
    steps = _flatten_decoders(decoder)
    kinds = {step.get("type") for step in steps}
    layout: _Layout | None = None
    if model_type == "WordPiece":
        layout = None
    elif "ByteLevel" in kinds and kinds <= {"ByteLevel", "Fuse"}:
        layout = _Layout("byte_level")
    elif steps:
        layout = _sentencepiece_layout(steps)
    if layout is None:
        raise TokenizerError(
            f"Invalid tokenizer: expected {_SUPPORTED}, got {type(tokenizer).__name__} with "
            f"model {model_type} and decoder {_describe_decoder(decoder)}; its tokens "
            "cannot be mapped to exact bytes"
        )
    return layout


# ---------------------------------------------------------------------- vocabulary read


def _id_to_token_strings(vocab: Mapping[str, int], num_tokens: int) -> list[str | None]:
    """Invert ``token -> id`` into a list indexed by id; ids without a token stay ``None``."""
    strings: list[str | None] = [None] * num_tokens
    for token, token_id in vocab.items():
        strings[token_id] = token
    return strings


def _added_tokens(backend: Any) -> tuple[set[int], dict[int, str]]:
    """Split the added tokens into special ids and the strings of the textual ones.

    Special tokens are control symbols, not text.  The others are text, but what the
    decoder sees is the *stored* form, which ``get_vocab`` does not show: an added token
    with ``normalized=True`` is kept normalized (``"qq r"`` becomes ``"▁qq▁r"`` under a
    SentencePiece normalizer) and so decodes with spaces.  ``id_to_token`` returns that
    stored form.
    """
    special: set[int] = set()
    textual: dict[int, str] = {}
    for token_id, added in backend.get_added_tokens_decoder().items():
        if added.special:
            special.add(token_id)
        else:
            stored = backend.id_to_token(token_id)
            textual[token_id] = added.content if stored is None else stored
    return special, textual


def _map_tokens(
    strings: Sequence[str | None], special_ids: set[int], layout: _Layout
) -> list[bytes]:
    """Return the bytes of every id: special tokens and id holes get ``b""``."""
    decode = layout.token_bytes
    return [
        b"" if token is None or token_id in special_ids else decode(token)
        for token_id, token in enumerate(strings)
    ]


def _tokenizer_length(tokenizer: Any, backend: Any) -> int:
    """Return ``len(tokenizer)``, the vocabulary size including added tokens."""
    try:
        return len(tokenizer)
    except TypeError:
        return int(backend.get_vocab_size(with_added_tokens=True))


def _default_eos_ids(
    tokenizer: Any, strings: Sequence[str | None], special_ids: set[int]
) -> list[int]:
    """Return the tokenizer's ``eos_token_id`` plus every special well-known end marker."""
    eos: set[int] = set()
    eos_id = getattr(tokenizer, "eos_token_id", None)
    if isinstance(eos_id, int) and 0 <= eos_id < len(strings):
        eos.add(eos_id)
    for token_id in special_ids:
        if token_id < len(strings) and strings[token_id] in END_OF_TURN_MARKERS:
            eos.add(token_id)
    return sorted(eos)


# ------------------------------------------------------------------------- verification


def _find_prefix_id(vocab: Mapping[str, int], special_ids: set[int]) -> int | None:
    """Return the id of a one-letter token to decode in front of sampled tokens.

    SentencePiece decoders strip the leading space of a whole decode, so decoding a
    token alone would lose the space that the token really contributes mid-text.
    Decoding ``[prefix, id]`` and removing the prefix's text keeps it.
    """
    for candidate in _PREFIX_CANDIDATES:
        token_id = vocab.get(candidate)
        if token_id is not None and token_id not in special_ids:
            return token_id
    return None


def _sample_ids(token_bytes: Sequence[bytes], special_ids: set[int]) -> list[int]:
    """Return a deterministic sample of non-special, non-empty token ids to verify."""
    candidates = np.array(
        [i for i, data in enumerate(token_bytes) if data and i not in special_ids], dtype=np.int64
    )
    if len(candidates) <= _VERIFY_SAMPLE_SIZE:
        return candidates.tolist()
    rng = np.random.default_rng(_VERIFY_SEED)
    return np.sort(rng.choice(candidates, size=_VERIFY_SAMPLE_SIZE, replace=False)).tolist()


def _decoded_suffixes(backend: Any, ids: Sequence[int], prefix_id: int | None) -> list[str | None]:
    """Decode each id behind ``prefix_id`` and return what the id added (``None``: unknown)."""
    if prefix_id is None:
        return list(backend.decode_batch([[i] for i in ids], skip_special_tokens=False))
    prefix = backend.decode([prefix_id], skip_special_tokens=False)
    texts = backend.decode_batch([[prefix_id, i] for i in ids], skip_special_tokens=False)
    return [text[len(prefix):] if text.startswith(prefix) else None for text in texts]


def _verify(
    tokenizer: Any,
    backend: Any,
    vocab: Mapping[str, int],
    strings: Sequence[str | None],
    token_bytes: Sequence[bytes],
    special_ids: set[int],
    textual_added: Mapping[int, str],
) -> None:
    """Check a sample of mapped tokens against the tokenizer's own decoder, or raise.

    A wrong byte table would not crash anything: it would silently produce masks that
    allow the wrong tokens.  Comparing ~2000 tokens, plus every non-special added token
    (few, and the likeliest to be odd), with ``decode`` catches that at load time.
    Tokens whose decode contains U+FFFD (partial UTF-8 sequences) can't be compared as
    text and are skipped.
    """
    prefix_id = _find_prefix_id(vocab, special_ids)
    extra = sorted(textual_added)[:_VERIFY_SAMPLE_SIZE]
    ids = sorted(set(_sample_ids(token_bytes, special_ids)).union(extra))
    mismatches: list[str] = []
    for token_id, text in zip(ids, _decoded_suffixes(backend, ids, prefix_id)):
        ours = token_bytes[token_id]
        if text is not None and "\ufffd" in text:
            continue
        if prefix_id is None and text is not None and ours == b" " + text.encode("utf-8"):
            continue  # the decoder stripped the leading space of a lone token
        if text is None or text.encode("utf-8") != ours:
            mismatches.append(f"{token_id} ({strings[token_id]!r}: decodes to {text!r}, mapped to {ours!r})")
    if mismatches:
        shown = "; ".join(mismatches[:_MAX_REPORTED])
        raise TokenizerError(
            f"Invalid tokenizer: expected every token's mapped bytes to equal its decoded text, "
            f"got {len(mismatches)} of {len(ids)} sampled ids of {type(tokenizer).__name__} "
            f"differing, e.g. {shown}"
        )


# -------------------------------------------------------------------------- validation


def _validate_token_bytes(token_bytes: Any) -> tuple[bytes, ...]:
    """Return ``token_bytes`` as a tuple of ``bytes``, or raise naming the bad entry."""
    if isinstance(token_bytes, (str, bytes, bytearray)) or not isinstance(token_bytes, Sequence):
        raise TokenizerError(
            f"Invalid token_bytes: expected a sequence of bytes, got {type(token_bytes).__name__}"
        )
    if len(token_bytes) == 0:
        raise TokenizerError("Invalid token_bytes: expected at least one token, got an empty sequence")
    result: list[bytes] = []
    for index, data in enumerate(token_bytes):
        if not isinstance(data, (bytes, bytearray, memoryview)):
            raise TokenizerError(
                f"Invalid token_bytes[{index}]: expected bytes, got {type(data).__name__} {data!r}"
            )
        result.append(bytes(data))
    return tuple(result)


def _as_token_id(name: str, value: Any, num_tokens: int) -> int:
    """Return ``value`` as an int id in ``[0, num_tokens)``, or raise."""
    if isinstance(value, bool):
        raise TokenizerError(f"Invalid {name}: expected int token ids, got bool {value!r}")
    try:
        token_id = operator.index(value)
    except TypeError:
        raise TokenizerError(
            f"Invalid {name}: expected int token ids, got {type(value).__name__} {value!r}"
        ) from None
    if not 0 <= token_id < num_tokens:
        raise TokenizerError(
            f"Invalid {name}: expected ids in [0, {num_tokens}) (real tokens), got {token_id}"
        )
    return token_id


def _validate_ids(name: str, ids: Any, num_tokens: int) -> set[int]:
    """Return ``ids`` as a set of valid token ids; a bare int or string is refused."""
    if isinstance(ids, (str, bytes)) or not isinstance(ids, Iterable):
        raise TokenizerError(
            f"Invalid {name}: expected an iterable of int token ids, got {type(ids).__name__} {ids!r}"
        )
    return {_as_token_id(name, value, num_tokens) for value in ids}


def _validate_vocab_size(vocab_size: Any, num_tokens: int, what: str = "the number of tokens") -> int:
    """Return the logits width: ``num_tokens`` by default, never smaller than it.

    The mask must cover every real token, so a narrower logits row can only come from
    a mismatched model/tokenizer pair and is refused rather than truncated.
    """
    if vocab_size is None:
        return num_tokens
    if isinstance(vocab_size, bool) or not isinstance(vocab_size, (int, np.integer)):
        raise TokenizerError(f"Invalid vocab_size: expected an int, got {type(vocab_size).__name__}")
    if vocab_size < num_tokens:
        raise TokenizerError(
            f"Invalid vocab_size: expected at least {what} = {num_tokens} "
            f"(the logits must cover every token), got {vocab_size}"
        )
    return int(vocab_size)


def _validate_vocab_type(vocab_type: Any) -> str:
    """Return ``vocab_type`` if it is one of :data:`VOCAB_TYPES`, else raise."""
    if vocab_type not in VOCAB_TYPES:
        raise TokenizerError(
            f"Invalid vocab_type: expected one of {sorted(VOCAB_TYPES)}, got {vocab_type!r}"
        )
    return str(vocab_type)


# ---------------------------------------------------------------------------- the class


class TokenizerInfo:
    """The exact bytes of every token id of one tokenizer, immutable after construction.

    Parameters
    ----------
    token_bytes : Sequence[bytes]
        ``token_bytes[i]`` is what the model appends to the text when it emits id ``i``.
        Its length is the number of real tokens.
    eos_token_ids : Sequence[int]
        Ids that end generation (at least one; stored sorted, without duplicates).
    special_token_ids : Iterable[int], optional
        Control tokens: never matchable, and they contribute ``b""`` to decoded bytes.
    vocab_size : int, optional
        Width of the logits (default ``len(token_bytes)``).  Models often pad the
        embedding (Qwen2.5: 151665 tokens, 151936 logits); ids past the real tokens
        are padding and never allowed by a mask.
    vocab_type : str, optional
        How the bytes were derived: ``"raw"`` (given directly), ``"byte_level"`` or
        ``"sentencepiece"``.

    Raises
    ------
    TokenizerError
        If any argument is malformed or out of range.

    Notes
    -----
    Instances are read-only; the hash and the matchable-id array are computed lazily
    and cached.  Pickling keeps only the defining data.
    """

    def __init__(
        self,
        token_bytes: Sequence[bytes],
        *,
        eos_token_ids: Sequence[int],
        special_token_ids: Iterable[int] = (),
        vocab_size: int | None = None,
        vocab_type: str = "raw",
    ) -> None:
        tokens = _validate_token_bytes(token_bytes)
        eos = _validate_ids("eos_token_ids", eos_token_ids, len(tokens))
        if not eos:
            raise TokenizerError(
                "Invalid eos_token_ids: expected at least one end-of-sequence id, got none"
            )
        state = self.__dict__
        state["_token_bytes"] = tokens
        state["_eos_token_ids"] = tuple(sorted(eos))
        state["_special_token_ids"] = frozenset(
            _validate_ids("special_token_ids", special_token_ids, len(tokens))
        )
        state["_vocab_size"] = _validate_vocab_size(vocab_size, len(tokens))
        state["_vocab_type"] = _validate_vocab_type(vocab_type)

    # ------------------------------------------------------------------ construction

    @classmethod
    def from_huggingface(
        cls,
        tokenizer: Any,
        vocab_size: int | None = None,
        *,
        stop_token_ids: Sequence[int] | None = None,
    ) -> TokenizerInfo:
        """Build the byte table of a Hugging Face fast tokenizer.

        Parameters
        ----------
        tokenizer : PreTrainedTokenizerFast or tokenizers.Tokenizer
            A tokenizer with a byte-level BPE or SentencePiece-style decoder.
        vocab_size : int, optional
            The model's logits width; default ``len(tokenizer)``.  Pass the model
            config's ``vocab_size`` when the embedding is padded.
        stop_token_ids : Sequence[int], optional
            Ids that end generation.  Default: ``tokenizer.eos_token_id`` plus every
            special token whose content is a well-known end marker
            (:data:`END_OF_TURN_MARKERS`).

        Returns
        -------
        TokenizerInfo

        Raises
        ------
        TokenizerError
            If the tokenizer's layout is unsupported, if a sample of tokens does not
            decode to the mapped bytes, if ``vocab_size`` is smaller than the
            tokenizer, or if no stop token can be found.
        """
        backend = _backend_of(tokenizer)
        layout = _detect_layout(tokenizer, _pipeline_config(backend))
        vocab = backend.get_vocab(with_added_tokens=True)
        length = _tokenizer_length(tokenizer, backend)
        num_tokens = max(length, max(vocab.values(), default=-1) + 1)
        vocab_size = _validate_vocab_size(vocab_size, num_tokens, what="len(tokenizer)")
        strings = _id_to_token_strings(vocab, num_tokens)
        special_ids, textual_added = _added_tokens(backend)
        for token_id, stored in textual_added.items():
            strings[token_id] = stored
        token_bytes = _map_tokens(strings, special_ids, layout)
        _verify(tokenizer, backend, vocab, strings, token_bytes, special_ids, textual_added)
        eos = _default_eos_ids(tokenizer, strings, special_ids) if stop_token_ids is None else stop_token_ids
        if stop_token_ids is None and not eos:
            raise TokenizerError(
                f"Invalid tokenizer: expected an eos_token_id or a special end-of-turn token, "
                f"got neither in {type(tokenizer).__name__}; pass stop_token_ids explicitly"
            )
        return cls(
            token_bytes,
            eos_token_ids=eos,
            special_token_ids=special_ids,
            vocab_size=vocab_size,
            vocab_type=layout.vocab_type,
        )

    # -------------------------------------------------------------------- attributes

    @property
    def token_bytes(self) -> tuple[bytes, ...]:
        """The bytes of each real token, indexed by id (special tokens as constructed)."""
        return self._token_bytes

    @property
    def vocab_size(self) -> int:
        """The logits width; ids in ``[num_tokens, vocab_size)`` are padding."""
        return self._vocab_size

    @property
    def num_tokens(self) -> int:
        """The number of real token ids (``len(token_bytes)``)."""
        return len(self._token_bytes)

    @property
    def eos_token_ids(self) -> tuple[int, ...]:
        """The ids that end generation, sorted."""
        return self._eos_token_ids

    @property
    def special_token_ids(self) -> frozenset[int]:
        """The control tokens: never part of constrained text."""
        return self._special_token_ids

    @property
    def vocab_type(self) -> str:
        """How the bytes were derived: ``"raw"``, ``"byte_level"`` or ``"sentencepiece"``."""
        return self._vocab_type

    @property
    def hash(self) -> str:
        """A stable SHA-256 hex digest of everything that affects a token mask.

        Used as a cache key for compiled grammars, so it covers the vocabulary type,
        the logits width, every token's bytes (length-prefixed, so no two
        vocabularies collide by concatenation) and the special and EOS ids.
        """
        return self._cached("_hash", self._compute_hash)

    def matchable_token_ids(self) -> np.ndarray:
        """Return the ids that may appear inside constrained text.

        Those are the real tokens with non-empty bytes that are neither special nor an
        EOS id: an empty token would let a mask loop forever without progress, and EOS
        is handled by the caller when the constraint accepts.

        Returns
        -------
        numpy.ndarray
            Sorted, read-only ``int32`` array.
        """
        return self._cached("_matchable", self._compute_matchable)

    def decode_bytes(self, ids: Iterable[int]) -> bytes:
        """Return the concatenated bytes of ``ids``; special tokens contribute ``b""``.

        Raises
        ------
        TokenizerError
            If an id is not a real token (negative, padding, or past ``vocab_size``).
        """
        if hasattr(ids, "tolist"):
            ids = ids.tolist()
        table = self._cached("_decode_table", self._compute_decode_table)
        return b"".join(table[_as_token_id("token id", value, len(table))] for value in ids)

    # ----------------------------------------------------------------------- helpers

    def _cached(self, name: str, compute: Callable[[], Any]) -> Any:
        """Return the cached attribute ``name``, computing it on first use."""
        value = self.__dict__.get(name)
        if value is None:
            value = compute()
            self.__dict__[name] = value
        return value

    def _compute_hash(self) -> str:
        """Hash the defining data (see :attr:`hash`)."""
        digest = hashlib.sha256()
        header = f"constrain.vocab/v{_HASH_FORMAT_VERSION}\0{self._vocab_type}\0{self._vocab_size}\0"
        digest.update(header.encode("utf-8"))
        lengths = np.fromiter(map(len, self._token_bytes), dtype="<u8", count=self.num_tokens)
        digest.update(np.uint64(self.num_tokens).astype("<u8").tobytes())
        digest.update(lengths.tobytes())
        digest.update(b"".join(self._token_bytes))
        for ids in (sorted(self._special_token_ids), self._eos_token_ids):
            digest.update(np.asarray([len(ids), *ids], dtype="<i8").tobytes())
        return digest.hexdigest()

    def _compute_matchable(self) -> np.ndarray:
        """Compute :meth:`matchable_token_ids`."""
        lengths = np.fromiter(map(len, self._token_bytes), dtype=np.int64, count=self.num_tokens)
        keep = lengths > 0
        excluded = np.fromiter(self._special_token_ids | set(self._eos_token_ids), dtype=np.int64)
        keep[excluded] = False
        ids = np.flatnonzero(keep).astype(np.int32)
        ids.setflags(write=False)
        return ids

    def _compute_decode_table(self) -> tuple[bytes, ...]:
        """Return the token bytes with special tokens blanked, for :meth:`decode_bytes`."""
        special = self._special_token_ids
        return tuple(b"" if i in special else data for i, data in enumerate(self._token_bytes))

    # ---------------------------------------------------------------------- protocols

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"TokenizerInfo is immutable; cannot set {name!r}")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"TokenizerInfo is immutable; cannot delete {name!r}")

    def __getstate__(self) -> dict[str, Any]:
        """Return the defining data only; caches are recomputed after unpickling."""
        return {key: value for key, value in self.__dict__.items() if key not in _CACHE_KEYS}

    def __setstate__(self, state: Mapping[str, Any]) -> None:
        """Restore from :meth:`__getstate__` (bypassing the immutability guard)."""
        self.__dict__.update(state)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, TokenizerInfo):
            return NotImplemented
        return self is other or self.hash == other.hash

    def __hash__(self) -> int:
        return int(self.hash[:16], 16)

    def __len__(self) -> int:
        return self.num_tokens

    def __repr__(self) -> str:
        return (
            f"TokenizerInfo(vocab_type={self._vocab_type!r}, num_tokens={self.num_tokens}, "
            f"vocab_size={self._vocab_size}, eos_token_ids={self._eos_token_ids}, "
            f"special={len(self._special_token_ids)})"
        )


_CACHE_KEYS = frozenset({"_hash", "_matchable", "_decode_table"})
