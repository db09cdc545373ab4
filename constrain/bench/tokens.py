"""Raw token bytes of a Hugging Face tokenizer, decoded without ``constrain.vocab``.

Peers that take a vocabulary as bytes (outlines-core) are fed these, and the
benchmarks use them to print tokens.  The decoding is written independently of
``constrain.vocab`` on purpose, so that a peer given these bytes is a genuine
cross-check rather than a copy of a bug of ours.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

__all__ = ["hf_token_bytes", "TextEncoder", "text_encoder"]


def _byte_level_alphabet() -> dict[str, int]:
    """GPT-2 byte-level BPE: printable stand-in character -> the byte it encodes.

    Printable Latin-1 bytes stand for themselves; the other bytes are given the code
    points 256, 257, ... in byte order.
    """
    keep = set(range(ord("!"), ord("~") + 1)) | set(range(0xA1, 0xAD)) | set(range(0xAE, 0x100))
    table: dict[str, int] = {}
    extra = 0
    for byte in range(256):
        if byte in keep:
            table[chr(byte)] = byte
        else:
            table[chr(256 + extra)] = byte
            extra += 1
    return table


def _decoder_steps(decoder: Mapping[str, Any] | None) -> list[Mapping[str, Any]]:
    if not decoder:
        return []
    if decoder.get("type") == "Sequence":
        steps: list[Mapping[str, Any]] = []
        for inner in decoder.get("decoders", []):
            steps.extend(_decoder_steps(inner))
        return steps
    return [decoder]


def hf_token_bytes(tokenizer: Any) -> tuple[dict[int, bytes], set[int]]:
    """The raw bytes of every ordinary token of a fast Hugging Face tokenizer.

    Returns ``(token_bytes, added_ids)``: ``token_bytes`` maps each id of the model's
    vocabulary (added tokens excluded) to the bytes it produces in a detokenized
    string; ``added_ids`` holds the ids of all added tokens (special or not).

    Handles byte-level BPE (GPT-2, Llama-3, Qwen: ``ByteLevel`` decoder) and
    SentencePiece-style vocabularies (``▁`` for space, ``<0xNN>`` byte-fallback
    pieces).  The decoding here is written independently of ``constrain.vocab`` on
    purpose, so that a peer engine given these bytes is a genuine cross-check.
    """
    backend = getattr(tokenizer, "backend_tokenizer", None)
    if backend is None:
        raise TypeError("hf_token_bytes needs a fast (tokenizers-backed) tokenizer")
    config = json.loads(backend.to_str())
    kinds = {step.get("type") for step in _decoder_steps(config.get("decoder"))}
    added_ids = {int(entry["id"]) for entry in config.get("added_tokens", [])}
    vocab: Mapping[str, int] = config["model"]["vocab"]
    if isinstance(vocab, list):  # Unigram: [[piece, score], ...]
        vocab = {piece: index for index, (piece, _score) in enumerate(vocab)}

    result: dict[int, bytes] = {}
    if "ByteLevel" in kinds:
        alphabet = _byte_level_alphabet()
        for text, token_id in vocab.items():
            if token_id in added_ids:
                continue
            try:
                result[token_id] = bytes(alphabet[ch] for ch in text)
            except KeyError:  # not a byte-level string: keep its UTF-8
                result[token_id] = text.encode("utf-8")
    else:
        byte_fallback = "ByteFallback" in kinds or bool(config["model"].get("byte_fallback"))
        for text, token_id in vocab.items():
            if token_id in added_ids:
                continue
            if byte_fallback and _is_byte_piece(text):
                try:
                    result[token_id] = bytes([int(text[3:5], 16)])
                    continue
                except ValueError:
                    pass
            result[token_id] = text.replace("\u2581", " ").encode("utf-8")
    return result, added_ids


class TextEncoder:
    """Token ids whose bytes spell a text exactly, for forcing it through every engine.

    A SentencePiece tokenizer (Llama-2, Mistral) writes a space before the text
    (the "dummy prefix": ``{`` becomes ``▁{``), so the forced bytes would be the
    instance with a leading space: our flexible whitespace takes it, engines without
    leading whitespace refuse every instance at its first token.  The first token
    is then spelled again without that space (the token of the same bytes less the
    space, or the longest tokens that spell them), so every engine reads the
    instance's own bytes.  Texts whose ids spell them already (byte-level BPE:
    GPT-2, Llama-3, Qwen) keep the tokenizer's ids.
    """

    def __init__(self, tokenizer: Any) -> None:
        self.tokenizer = tokenizer
        self.token_bytes, _ = hf_token_bytes(tokenizer)
        self._by_bytes: dict[bytes, int] = {}
        ids = sorted(self.token_bytes)
        # A byte-fallback piece (``<0x22>``) spells what a plain piece does (``"``); the
        # tokenizer writes the plain one, and engines may allow only that.
        for _, token_id in sorted(zip(map(_is_byte_piece, tokenizer.convert_ids_to_tokens(ids)), ids)):
            data = self.token_bytes[token_id]
            if data:
                self._by_bytes.setdefault(data, token_id)
        self._longest = max(map(len, self._by_bytes), default=1)

    def __call__(self, text: str) -> list[int]:
        ids = self.tokenizer.encode(text, add_special_tokens=False)
        data = text.encode("utf-8")
        # An added token has no bytes here: b"\xff" is in no UTF-8 text, so such ids never match.
        spelled = b"".join(self.token_bytes.get(token_id, b"\xff") for token_id in ids)
        if ids and spelled == b" " + data:
            first = self._spelled(self.token_bytes[ids[0]][1:])
            if first is not None:
                return first + ids[1:]
        return ids

    def _spelled(self, data: bytes) -> list[int] | None:
        """Ids spelling ``data``: the longest token that begins what is left, each time
        (None where no token holds some byte: a vocabulary without byte fallback)."""
        ids, at = [], 0
        while at < len(data):
            for end in range(min(len(data), at + self._longest), at, -1):
                token_id = self._by_bytes.get(data[at:end])
                if token_id is not None:
                    ids.append(token_id)
                    at = end
                    break
            else:
                return None
        return ids


def _is_byte_piece(piece: str | None) -> bool:
    """Whether ``piece`` is a SentencePiece byte-fallback piece such as ``<0x0A>``."""
    return piece is not None and len(piece) == 6 and piece.startswith("<0x") and piece.endswith(">")


_ENCODERS: dict[int, tuple[Any, TextEncoder]] = {}


def text_encoder(tokenizer: Any) -> TextEncoder:
    """The :class:`TextEncoder` of ``tokenizer`` (built once per tokenizer object: reading
    its vocabulary takes a fraction of a second)."""
    found = _ENCODERS.get(id(tokenizer))
    if found is None or found[0] is not tokenizer:
        found = _ENCODERS[id(tokenizer)] = (tokenizer, TextEncoder(tokenizer))
    return found[1]
