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

__all__ = ["hf_token_bytes"]


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
            if (
                byte_fallback
                and len(text) == 6
                and text.startswith("<0x")
                and text.endswith(">")
            ):
                try:
                    result[token_id] = bytes([int(text[3:5], 16)])
                    continue
                except ValueError:
                    pass
            result[token_id] = text.replace("\u2581", " ").encode("utf-8")
    return result, added_ids
