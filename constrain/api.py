"""One-call front ends: ``generate_json``, ``generate_regex`` and ``generate_grammar``.

These wrap ``model.generate`` with a :class:`ConstrainedLogitsProcessor`, stop on
every EOS id the constraint may end with, and return the text decoded from the
tokens' exact bytes, so that what is returned is exactly what the mask allowed.
"""

from __future__ import annotations

from typing import Any, Mapping

from .compiler import CompiledGrammar
from .errors import ConstrainError, SchemaError

__all__ = ["generate_json", "generate_regex", "generate_grammar", "generate_constrained", "model_vocab_size"]


def model_vocab_size(model: Any) -> int | None:
    """The logits width of a transformers model (may exceed ``len(tokenizer)``)."""
    embeddings = getattr(model, "get_output_embeddings", lambda: None)()
    if embeddings is not None and getattr(embeddings, "weight", None) is not None:
        return int(embeddings.weight.shape[0])
    config = getattr(model, "config", None)
    return getattr(config, "vocab_size", None)


def _encode_prompts(tokenizer: Any, prompts: list[str], chat_template: bool, device: Any) -> dict:
    """Tokenise prompts (left padding, so generated tokens line up), optionally as chat turns."""
    if chat_template:
        prompts = [
            tokenizer.apply_chat_template([{"role": "user", "content": p}], tokenize=False, add_generation_prompt=True)
            for p in prompts
        ]
    saved_side, saved_pad = getattr(tokenizer, "padding_side", "right"), tokenizer.pad_token
    tokenizer.padding_side = "left"
    if saved_pad is None:
        # Only the attention mask matters for left padding; borrow EOS, then restore.
        tokenizer.pad_token = tokenizer.eos_token
    try:
        batch = tokenizer(prompts, return_tensors="pt", padding=len(prompts) > 1,
                          add_special_tokens=not chat_template)
    finally:
        tokenizer.padding_side = saved_side
        tokenizer.pad_token = saved_pad
    return {key: value.to(device) for key, value in batch.items()}


def generate_constrained(
    compiled: CompiledGrammar,
    prompt: str | list[str],
    model: Any,
    tokenizer: Any,
    *,
    chat_template: bool = False,
    require_complete: bool = True,
    draft_model: Any | None = None,
    diffusion: bool = False,
    **generate_kwargs: Any,
) -> str | list[str]:
    """Generate under ``compiled`` and return the decoded output text(s).

    Parameters
    ----------
    compiled:
        A grammar compiled for this tokenizer and the model's logits width.
    prompt:
        One prompt, or a list (batched; the tokenizer needs a pad token).
    chat_template:
        Wrap each prompt as a user turn with the tokenizer's chat template.
    require_complete:
        Raise :class:`ConstrainError` when generation stopped (``max_new_tokens``)
        before the output was a complete string of the language.
    draft_model:
        A smaller model with the same tokenizer: decode speculatively with
        :class:`~constrain.samplers.speculative.SpeculativeGenerator` (one prompt at a
        time, jump-forward on forced text; the output distribution is unchanged).  It
        then takes ``max_new_tokens``, ``do_sample``, ``temperature``, ``num_assistant_tokens``
        (k, default 4) and ``jump_forward`` (default True).
    diffusion:
        ``model`` is a masked-diffusion LM (LLaDA, Dream): decode with
        :class:`~constrain.samplers.diffusion.DiffusionGenerator` and DINGO (regular
        constraints only); the other keyword arguments are then its options
        (``gen_length``, ``block_length``, ``steps``, ``mask_token_id``, ``do_sample``...).
    generate_kwargs:
        Passed to ``model.generate`` (``max_new_tokens``, ``do_sample``,
        ``temperature``, ``num_beams``...); default ``max_new_tokens=256``.
    """
    from .samplers.processor import ConstrainedLogitsProcessor

    if diffusion:
        from .samplers.diffusion import generate_diffusion

        return generate_diffusion(compiled, prompt, model, tokenizer, **generate_kwargs)
    prompts = [prompt] if isinstance(prompt, str) else list(prompt)
    info = compiled.tokenizer_info
    if draft_model is not None:
        rows = _generate_speculative(compiled, prompts, model, draft_model, tokenizer, chat_template, generate_kwargs)
        texts = [_finish_row(info, row, require_complete) for row in rows]
        return texts[0] if isinstance(prompt, str) else texts
    inputs = _encode_prompts(tokenizer, prompts, chat_template, getattr(model, "device", "cpu"))
    processor = ConstrainedLogitsProcessor(compiled)
    user_processors = generate_kwargs.pop("logits_processor", None) or []
    generate_kwargs.setdefault("max_new_tokens", 256)
    generate_kwargs.setdefault("eos_token_id", list(info.eos_token_ids))
    if tokenizer.pad_token_id is None:
        generate_kwargs.setdefault("pad_token_id", info.eos_token_ids[0])
    output = model.generate(**inputs, logits_processor=[*user_processors, processor], **generate_kwargs)
    start = inputs["input_ids"].shape[1]
    texts = [_finish_row(info, row, require_complete) for row in output[:, start:].tolist()]
    # One prompt and one sequence: a string; otherwise one string per returned row.
    return texts[0] if isinstance(prompt, str) and len(texts) == 1 else texts


def _finish_row(info: Any, row: list[int], require_complete: bool) -> str:
    """The text of one generated row up to its first EOS; an error if it has none and must."""
    eos = set(info.eos_token_ids)
    finished = any(t in eos for t in row)
    data = info.decode_bytes(row[: next((i for i, t in enumerate(row) if t in eos), len(row))])
    if require_complete and not finished:
        raise ConstrainError(
            f"Generation stopped after {len(row)} tokens before the output was complete "
            f"(raise max_new_tokens); partial output: {data[:200]!r}"
        )
    return data.decode("utf-8", errors="replace")


_SPECULATIVE_KWARGS = {"max_new_tokens", "do_sample", "temperature", "num_assistant_tokens", "jump_forward",
                       "eos_token_id", "pad_token_id"}


def _generate_speculative(
    compiled: CompiledGrammar, prompts: list[str], model: Any, draft_model: Any, tokenizer: Any,
    chat_template: bool, kwargs: dict,
) -> list[list[int]]:
    """Token rows from :class:`SpeculativeGenerator`, one prompt at a time."""
    from .samplers.speculative import SpeculativeGenerator

    unsupported = sorted(set(kwargs) - _SPECULATIVE_KWARGS)
    if unsupported:
        raise ConstrainError(
            f"Invalid arguments with draft_model: {unsupported} are not supported by speculative "
            f"decoding (supported: {sorted(_SPECULATIVE_KWARGS)}); drop draft_model to use them"
        )
    generator = SpeculativeGenerator(model, draft_model, compiled, k=kwargs.get("num_assistant_tokens", 4),
                                     jump_forward=kwargs.get("jump_forward", True), tokenizer=tokenizer)
    rows = []
    for text in prompts:
        ids = _encode_prompts(tokenizer, [text], chat_template, "cpu")["input_ids"]
        out = generator.generate(ids, max_new_tokens=kwargs.get("max_new_tokens", 256),
                                 do_sample=kwargs.get("do_sample", False), temperature=kwargs.get("temperature", 1.0))
        rows.append(out.token_ids)
    return rows


def generate_regex(
    pattern: str,
    prompt: str | list[str],
    model: Any,
    tokenizer: Any,
    *,
    diffusion: bool = False,
    **generate_kwargs: Any,
) -> str | list[str]:
    """Generate text that fully matches an ECMA-262 regex.

    ``diffusion=True`` decodes with a masked-diffusion LM (LLaDA, Dream) through
    :class:`~constrain.samplers.diffusion.DiffusionGenerator` and DINGO; the other
    keyword arguments are then its options (``gen_length``, ``block_length``,
    ``steps``, ``mask_token_id``, ``do_sample``...).

    Examples
    --------
    >>> generate_regex(r"\\d{4}-\\d{2}-\\d{2}", "Today is ", model, tokenizer)  # doctest: +SKIP
    '2024-05-17'
    >>> generate_regex(r"\\d{4}", "Year: ", llada, tokenizer, diffusion=True, gen_length=32)  # doctest: +SKIP
    '1969'
    """
    from .samplers.processor import compiler_for

    compiled = compiler_for(tokenizer, model_vocab_size(model)).compile_regex(pattern)
    return generate_constrained(compiled, prompt, model, tokenizer, diffusion=diffusion, **generate_kwargs)


def generate_grammar(
    grammar: str,
    prompt: str | list[str],
    model: Any,
    tokenizer: Any,
    *,
    start: str = "start",
    **generate_kwargs: Any,
) -> str | list[str]:
    """Generate a complete sentence of a Lark grammar (LALR(1)).

    ``grammar`` is Lark grammar text, or the name of a built-in grammar (``"json"``).

    Examples
    --------
    >>> generate_grammar("json", "A JSON object: ", model, tokenizer)  # doctest: +SKIP
    '{"name": "x"}'
    """
    from .grammar.builtin import BUILTIN_GRAMMARS, builtin_grammar
    from .samplers.processor import compiler_for

    text = builtin_grammar(grammar) if grammar in BUILTIN_GRAMMARS else grammar
    compiled = compiler_for(tokenizer, model_vocab_size(model)).compile_grammar(text, start=start)
    return generate_constrained(compiled, prompt, model, tokenizer, **generate_kwargs)


def generate_json(
    schema: Any,
    prompt: str | list[str],
    model: Any,
    tokenizer: Any,
    *,
    whitespace: str = "flexible",
    max_whitespace: int = 12,
    strict: bool = True,
    property_order: str = "schema",
    resources: Mapping[str, Any] | None = None,
    diffusion: bool = False,
    **generate_kwargs: Any,
) -> Any:
    """Generate a JSON value valid against ``schema`` and return it parsed.

    ``whitespace``, ``max_whitespace``, ``strict``, ``property_order`` (``"any"``: the
    model picks the order of each object's members) and ``resources`` (other schema
    documents by URI) are :meth:`~constrain.Compiler.compile_json_schema`'s.

    ``schema`` is a dict, JSON text or a pydantic model class.  With
    ``strict=False``, keywords that cannot be enforced exactly are relaxed while
    decoding, and the result is then validated with ``jsonschema`` (formats
    checked): a :class:`~constrain.errors.SchemaError` names the keyword that the
    output broke.  Returns one value, or a list for a list of prompts.

    ``diffusion=True`` decodes with a masked-diffusion LM through DINGO (see
    :func:`generate_regex`); the other keyword arguments then go to
    :class:`~constrain.samplers.diffusion.DiffusionGenerator` (``gen_length``...).

    Examples
    --------
    >>> generate_json({"type": "object", "properties": {"age": {"type": "integer"}}, "required": ["age"]},
    ...               "A person: ", model, tokenizer)  # doctest: +SKIP
    {'age': 42}
    """
    from .grammar.json_schema import UNSATISFIABLE, UNSATISFIABLE_WITHIN_CUTS
    from .samplers.processor import compiler_for

    compiled = compiler_for(tokenizer, model_vocab_size(model)).compile_json_schema(
        schema, whitespace=whitespace, max_whitespace=max_whitespace, strict=strict, property_order=property_order,
        resources=resources)
    if UNSATISFIABLE in compiled.notes:  # say so now, not "no token is allowed" after the prompt
        raise SchemaError("no JSON value satisfies this schema (its keywords contradict each other)", "#")
    if UNSATISFIABLE_WITHIN_CUTS in compiled.notes:
        raise SchemaError(UNSATISFIABLE_WITHIN_CUTS.removeprefix("#: "), "#")
    texts = generate_constrained(compiled, prompt, model, tokenizer, diffusion=diffusion, **generate_kwargs)
    values = [parse_output(text, compiled) for text in ([texts] if isinstance(texts, str) else texts)]
    return values[0] if isinstance(texts, str) else values


def parse_output(text: str, compiled: CompiledGrammar) -> Any:
    """The decoded JSON text as a value, checked with ``jsonschema`` where decoding
    could not check everything: keywords the compile relaxed (``compiled.notes``), and
    a repeated key in a free-form object, which no automaton can rule out and which
    ``json.loads`` collapses to its last member (ARCHITECTURE.md, "Repeated keys").

    Raises
    ------
    SchemaError
        When the value breaks the schema, naming the keyword and why it was not
        enforced while decoding.
    """
    import json

    repeated = False

    def members(pairs: list) -> dict:
        nonlocal repeated
        value = dict(pairs)
        repeated = repeated or len(value) < len(pairs)
        return value

    value = json.loads(text, object_pairs_hook=members)
    if compiled.notes or repeated:
        validate_output(value, compiled, repeated)
    return value


def validate_output(value: Any, compiled: CompiledGrammar, repeated_key: bool = False) -> None:
    """Check a decoded value against the compiled schema with ``jsonschema`` (formats on).

    Only needed when decoding could not check everything (:func:`parse_output`): the
    error says which keyword the value broke and why it was not enforced.
    """
    import jsonschema

    schema = compiled.source
    cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
    validator = cls(schema, format_checker=cls.FORMAT_CHECKER, registry=_registry(compiled.resources, cls))
    error = jsonschema.exceptions.best_match(validator.iter_errors(value))
    if error is not None:
        pointer = "#/" + "/".join(str(p) for p in error.absolute_schema_path)
        why = [*compiled.notes] + (["the output repeats a key, and JSON keeps the last of them"] if repeated_key else [])
        raise SchemaError(f"the output breaks {error.validator!r}, which was not enforced while decoding "
                          f"({'; '.join(why)}): {error.message}", pointer)


def _registry(resources: Mapping[str, Any], cls: Any) -> Any:
    """The ``referencing`` registry of a compile's other documents (the meta-schemas
    ``jsonschema`` adds itself), each read in its own ``$schema``'s draft, else ``cls``'s."""
    from referencing import Registry, Resource
    from referencing.jsonschema import specification_with

    default = specification_with(cls.ID_OF(cls.META_SCHEMA))
    documents = ((uri.partition("#")[0], Resource.from_contents(document, default_specification=default))
                 for uri, document in resources.items())  # keyed without a fragment, as compile_json_schema reads them
    return Registry().with_resources(documents)
