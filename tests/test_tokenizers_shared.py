"""One tokenizer conversion for both environments (the main venv and the dev server's own).

``schemaops/qwen_vocab.py`` is imported by ``schemaops.tokenizers`` and loaded by path by
``devserver/make_model.py``, which runs in the server's venv where schemaops is not installed.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

from schemaops import qwen_vocab
from schemaops.devserver import make_model

REPO = Path(__file__).resolve().parents[1]


def test_model_maker_loads_the_shared_file_by_path() -> None:
    assert make_model.QWEN_VOCAB == Path(qwen_vocab.__file__).resolve()
    source = Path(make_model.__file__).read_text(encoding="utf-8")
    for duplicated in ("TikTokenConverter", "QWEN_PAT", "CHATML_TEMPLATE", "QWEN3_5_SPECIAL"):
        assert duplicated not in source, duplicated


def test_shared_file_imports_nothing_from_schemaops() -> None:
    tree = ast.parse(Path(qwen_vocab.__file__).read_text(encoding="utf-8"))
    modules = {n.module or "" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
    modules |= {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    assert not any(m.split(".")[0] == "schemaops" for m in modules), modules


def test_model_maker_works_where_schemaops_is_not_importable() -> None:
    """-I -S: no site-packages, no cwd on the path, so no schemaops, as in the server's venv."""
    script = (
        "import runpy, sys\n"
        "try:\n    import schemaops\nexcept ImportError:\n    pass\n"
        "else:\n    sys.exit('schemaops importable: the test proves nothing')\n"
        f"ns = runpy.run_path({str(REPO / 'schemaops/devserver/make_model.py')!r})\n"
        "vocab = ns['qwen_vocab']()\n"
        "print(vocab.QWEN25_FIRST_SPECIAL, vocab.BASE_SPECIALS[2])\n"
    )
    r = subprocess.run(
        [sys.executable, "-I", "-S", "-c", script],
        capture_output=True,
        text=True,
        timeout=60,
        cwd="/",
    )
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["151643", "<|im_end|>"]
