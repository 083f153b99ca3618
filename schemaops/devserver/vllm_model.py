"""Make the vLLM dev server's tiny Qwen2 model: random weights, the real Qwen2.5 tokenizer.

Run INSIDE the vLLM dev server's venv (``python vllm_model.py OUT_DIR``). Same tokenizer and
vocabulary as the SGLang dev server's model (``make_model.write_tokenizer``, imported from this
directory, which Python puts on ``sys.path`` for a script), but 2 attention heads of width 32
instead of 4 of width 16: vLLM's CPU attention supports head sizes 32, 64, 80, ... only and
fails the first request with "Unsupported CPU attention configuration: head_dim=16".
The config-writing lines mirror ``make_model.py``: this file runs inside another venv where
schemaops itself is not importable, so only ``make_model.write_tokenizer`` is shared.
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import make_model  # the sibling file: this directory is sys.path[0] when run as a script

HEAD_DIM = 32


def write_model(out: Path) -> None:
    """Save a randomly initialised 2-layer Qwen2 (about 20 MB) with a fixed seed."""
    import torch
    from transformers import GenerationConfig, Qwen2Config, Qwen2ForCausalLM

    torch.manual_seed(0)
    config = Qwen2Config(
        vocab_size=151936,
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=64 // HEAD_DIM,
        num_key_value_heads=1,
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
        print("usage: vllm_model.py OUT_DIR", file=sys.stderr)
        return 2
    final = Path(argv[1])
    tmp = final.with_name(final.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    size = make_model.write_tokenizer(tmp)
    write_model(tmp)
    shutil.rmtree(final, ignore_errors=True)
    os.replace(tmp, final)
    print(f"tiny Qwen2 model (head_dim {HEAD_DIM}) with a {size}-token Qwen tokenizer in {final}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
