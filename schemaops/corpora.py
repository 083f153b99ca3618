"""The third-party corpora the tests and benchmarks read, found or fetched at pinned content.

Why this module: the corpus tier of the tests (differentials over JSONSchemaBench's ~9.5k
real-world schemas and the official JSON-Schema-Test-Suite) must run from a fresh clone, with
nothing beside it. The corpora are not copied into the repository (54 MB, third-party
licences); this module says where they are and brings them when they are not.

Where, in this order (``locate``):

1. ``$SCHEMAOPS_CORPORA`` when set (a folder holding ``jsonschemabench/`` and/or
   ``json-schema-test-suite/``; nothing else is tried, so a wrong value is seen, not masked);
2. ``../shared/corpora`` beside the repository, when present;
3. the cache folder ``$XDG_CACHE_HOME/schemaops/corpora`` (default ``~/.cache``), which
   ``fetch`` fills.

What ``fetch`` brings, each verified against a pinned SHA-256 before it is put in place:

- **JSONSchemaBench** (guidance-ai/jsonschemabench @ ``JSB_COMMIT``, MIT): the repository
  tarball (or ``git clone``) at that commit; each ``data/<Subset>/<id>.json`` becomes one line
  ``{"unique_id", "path", "git_blob", "json_schema"}`` of ``<Subset>.jsonl`` with whitespace
  outside strings removed (every token as upstream; empty files skipped), and each ``.jsonl``
  must hash to ``JSB_SHA256``.
- **JSON-Schema-Test-Suite** (json-schema-org/JSON-Schema-Test-Suite @ ``JSTS_COMMIT``, MIT):
  ``tests/draft2020-12``, ``tests/draft7``, ``remotes/`` and the licence from the tarball, the
  whole tree hashing to ``JSTS_TREE_SHA256``. Where GitHub cannot be reached, the copy that
  ships inside python-jsonschema's sdist on PyPI (``JSONSCHEMA_SDIST``, file SHA-256 pinned)
  is used instead: a different (older) commit of the same suite, recorded in ``SOURCE.txt``.

Stdlib only, so ``python scripts/get_corpora.py`` works before anything is installed.
"""

from __future__ import annotations

import argparse
import hashlib
import io
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

JSB = "jsonschemabench"
JSTS = "json-schema-test-suite"
#: the test suite at exactly ``JSTS_COMMIT`` (tests that count its cases need this one, not
#: the PyPI fallback's other commit)
JSTS_PINNED = JSTS + "@pinned"
JSB_REPO = "guidance-ai/jsonschemabench"
JSB_COMMIT = "ba103c73756198dd9b149ddc7db7867da7a077f6"
#: ``<Subset>.jsonl`` -> SHA-256 of the file this module writes from ``JSB_COMMIT``.
JSB_SHA256 = {
    "Github_easy": "58cf5c602aab475fbee5e0fbcfafb4b05879a2fa1cc21e4b3325cf0883eb7371",
    "Github_hard": "fab51287a6655e1ac50f97799301d54f3651553da69a675ee77c12493e589676",
    "Github_medium": "fba06b19885e7cbaf0e36c9e49d266be7d4f2bbee50283ca9f9212901faeaf06",
    "Github_trivial": "8efe6f78e0c04777e45d791fc63f21aef01702b5fcc52817a6ae8cc1150bcb21",
    "Github_ultra": "eb77e24fa2b40028f36e4fa78c70566e63c9743c2c2fb3df60d953b67a6b5459",
    "Glaiveai2K": "466a9166a55612d084f3c297a77ad2ea8c6ba48e447cf701e0447a3f59270bd3",
    "JsonSchemaStore": "343630827287ec6869b4c34b35419e658701c4425c2186413cb3a295ec2b0bba",
    "Kubernetes": "67ba69d75d1a01c289efe3628c34a25dd216deeed5b3954a8371a0828b3b9b8f",
    "Snowplow": "75f7b20d4a10c65a77180f925b835b46363fa10f4c0a90be4eb67a22545aa4c6",
    "WashingtonPost": "3fb9905499c5cd9449c88f0b561e1bb47e5739d84c9a51b47a88e2a247f05c71",
}
#: Left out of the pinned copy: a 2.5 MB CloudFormation schema that the corpus as published to
#: this project (9,557 schemas, 491 in JsonSchemaStore) does not hold.
JSB_EXCLUDED = frozenset({"data/JsonSchemaStore/cloudformation.schema.json"})
JSTS_REPO = "json-schema-org/JSON-Schema-Test-Suite"
JSTS_COMMIT = "44401e0c046704b476ec9d2e2fccdaee618f259d"
#: What is kept of the suite (the drafts schemaops serves, the remotes, the licence).
JSTS_KEEP = (
    "LICENSE",
    "README.md",
    "test-schema.json",
    "remotes",
    "tests/draft2020-12",
    "tests/draft7",
)
#: ``tree_digest`` of the kept files at ``JSTS_COMMIT``.
JSTS_TREE_SHA256 = "5952d8fd9b181fcb979e25c865a4fece81f972b3ba3269af757eb41e3e1db3ff"
#: python-jsonschema's sdist vendors the suite under ``json/``: (version, file SHA-256).
JSONSCHEMA_SDIST = ("4.26.0", "0c26707e2efad8aa1bfc5b7ce170f3fccc2e4918ff85989ba9ffa9facb2be326")
TIMEOUT_S = 120.0


@dataclass(frozen=True)
class Corpora:
    """Where each corpus is (``None``: not at hand) and the folder they were found in."""

    root: Path | None
    jsb: Path | None
    jsts: Path | None
    #: the suite found is the pinned commit (its SOURCE.txt says so), not a fallback copy
    jsts_pinned: bool = False

    def missing(self) -> list[str]:
        """The corpora not at hand; ``JSTS_PINNED`` too when the suite is another commit."""
        out = [n for n, p in ((JSB, self.jsb), (JSTS, self.jsts)) if p is None]
        return out + ([JSTS_PINNED] if not self.jsts_pinned else [])


def cache_dir() -> Path:
    from schemaops.cachedir import cache_root

    return cache_root() / "corpora"


def shared_dir() -> Path:
    """``../shared/corpora`` beside the repository this module lives in."""
    return Path(__file__).resolve().parents[2] / "shared" / "corpora"


def _complete(root: Path, name: str) -> Path | None:
    folder = root / name
    if name == JSB:
        ok = folder.is_dir() and all((folder / f"{s}.jsonl").is_file() for s in JSB_SHA256)
    else:
        ok = (folder / "tests" / "draft2020-12").is_dir()
    return folder if ok else None


def locate() -> Corpora:
    """The corpora at hand, without fetching anything (see the module docstring's order)."""
    env = os.environ.get("SCHEMAOPS_CORPORA")
    roots = [Path(env)] if env else [shared_dir(), cache_dir()]
    jsb = jsts = found = None
    for root in roots:
        jsb = jsb or _complete(root, JSB)
        jsts = jsts or _complete(root, JSTS)
        if (jsb or jsts) and found is None:
            found = root
    return Corpora(found, jsb, jsts, jsts is not None and _pinned(jsts))


def _pinned(folder: Path) -> bool:
    try:
        return JSTS_COMMIT in (folder / "SOURCE.txt").read_text(encoding="utf-8")
    except OSError:
        return False


def jsb_dir() -> Path:
    """JSONSchemaBench's folder: where it is at hand, else where ``fetch`` would put it (so a
    caller's "not found" message names a real place)."""
    return locate().jsb or cache_dir() / JSB


def tree_digest(root: Path) -> str:
    """One SHA-256 over every file under ``root`` (relative path and content, sorted), except
    ``SOURCE.txt``: the same files give the same digest on any machine."""
    h = hashlib.sha256()
    for rel, path in sorted(_files(root)):
        if rel == "SOURCE.txt":
            continue
        h.update(rel.encode() + b"\0" + hashlib.sha256(path.read_bytes()).digest())
    return h.hexdigest()


def _files(root: Path) -> Iterator[tuple[str, Path]]:
    for dirpath, _dirs, names in os.walk(root):
        for n in names:
            p = Path(dirpath) / n
            yield p.relative_to(root).as_posix(), p


def strip_whitespace(text: str) -> str:
    """JSON text without whitespace outside strings; every token kept byte for byte (a
    re-serialisation would rewrite numbers such as ``1.0`` and ``1e2``)."""
    out: list[str] = []
    i, n, in_string = 0, len(text), False
    while i < n:
        c = text[i]
        if in_string:
            out.append(c)
            if c == "\\" and i + 1 < n:
                out.append(text[i + 1])
                i += 2
                continue
            if c == '"':
                in_string = False
        elif c not in " \t\r\n":
            in_string = c == '"'
            out.append(c)
        i += 1
    return "".join(out)


def _download(url: str, timeout: float) -> bytes:
    with urllib.request.urlopen(url, timeout=timeout) as r:  # noqa: S310 (a pinned https URL)
        return r.read()


def _github_tarball(repo: str, commit: str, timeout: float) -> tarfile.TarFile:
    data = _download(f"https://codeload.github.com/{repo}/tar.gz/{commit}", timeout)
    return tarfile.open(fileobj=io.BytesIO(data), mode="r:gz")


def _members(tar: tarfile.TarFile) -> Iterator[tuple[str, tarfile.TarInfo]]:
    """Regular files of a tarball, paths without the tarball's top folder (never a link)."""
    for m in tar.getmembers():
        parts = m.name.split("/", 1)
        if m.isfile() and len(parts) == 2 and ".." not in parts[1].split("/"):
            yield parts[1], m


def _git_blob_sha(data: bytes) -> str:
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()  # noqa: S324 (git's id)


def build_jsb(tar: tarfile.TarFile, dest: Path) -> None:
    """JSONSchemaBench's ``data/`` as one ``<Subset>.jsonl`` per subset, verified."""
    subsets: dict[str, list[str]] = {}
    for rel, m in sorted(_members(tar), key=lambda t: t[0]):
        parts = rel.split("/")
        if len(parts) != 3 or parts[0] != "data" or not parts[2].endswith(".json"):
            continue
        if rel in JSB_EXCLUDED:
            continue
        raw = tar.extractfile(m).read()  # type: ignore[union-attr]
        if not raw.strip():
            continue  # an empty upstream file is no schema
        line = {
            "unique_id": parts[2][: -len(".json")],
            "path": rel,
            "git_blob": _git_blob_sha(raw),
            "json_schema": strip_whitespace(raw.decode("utf-8")),
        }
        subsets.setdefault(parts[1], []).append(json.dumps(line, ensure_ascii=False) + "\n")
    dest.mkdir(parents=True)
    for name, want in JSB_SHA256.items():
        data = "".join(subsets.get(name, [])).encode("utf-8")
        got = hashlib.sha256(data).hexdigest()
        if got != want:
            raise CorpusError(f"{JSB}/{name}.jsonl: sha256 {got}, pinned {want}")
        (dest / f"{name}.jsonl").write_bytes(data)
    (dest / "SOURCE.txt").write_text(f"repo={JSB_REPO} commit={JSB_COMMIT}\n")


def build_jsts(tar: tarfile.TarFile, dest: Path, prefix: str = "", pinned: bool = True) -> None:
    """The kept parts of the test suite (``JSTS_KEEP``), under ``prefix`` in the tarball."""
    for rel, m in _members(tar):
        if prefix:
            if not rel.startswith(prefix):
                continue
            rel = rel[len(prefix) :]
        if any(rel == k or rel.startswith(k + "/") for k in JSTS_KEEP):
            target = dest / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(tar.extractfile(m).read())  # type: ignore[union-attr]
    if not (dest / "tests" / "draft2020-12").is_dir():
        raise CorpusError(f"{JSTS}: no tests/draft2020-12 in the archive")
    if pinned and (got := tree_digest(dest)) != JSTS_TREE_SHA256:
        raise CorpusError(f"{JSTS}: tree sha256 {got}, pinned {JSTS_TREE_SHA256}")


def _jsts_from_pypi(dest: Path, timeout: float) -> str:
    version, sha = JSONSCHEMA_SDIST
    with tempfile.TemporaryDirectory() as tmp:
        cmd = [sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--no-binary"]
        cmd += [":all:", f"jsonschema=={version}", "-d", tmp]
        subprocess.run(cmd, check=True, timeout=timeout, capture_output=True)
        (sdist,) = Path(tmp).glob("jsonschema-*.tar.gz")
        data = sdist.read_bytes()
    if (got := hashlib.sha256(data).hexdigest()) != sha:
        raise CorpusError(f"jsonschema-{version}.tar.gz: sha256 {got}, pinned {sha}")
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as tar:
        build_jsts(tar, dest, prefix="json/", pinned=False)
    return f"pypi=jsonschema-{version}.tar.gz sha256={sha} (the suite vendored under json/)"


class CorpusError(Exception):
    """A corpus could not be fetched or did not match its pinned checksum."""


def fetch(dest: Path | None = None, timeout: float = TIMEOUT_S, log=print) -> Corpora:
    """Bring each missing corpus into ``dest`` (default: the cache folder), verified.

    A corpus already at hand (``locate``) is left alone. Each one is built in a temporary
    folder beside ``dest`` and renamed into place only once verified, so an interrupted or
    refused fetch leaves nothing half-written. Raises ``CorpusError`` naming what failed.
    """
    have = locate()
    dest = dest or Path(os.environ.get("SCHEMAOPS_CORPORA") or cache_dir())
    dest.mkdir(parents=True, exist_ok=True)
    errors = []
    for name, at_hand in ((JSB, have.jsb), (JSTS, have.jsts)):
        if at_hand is not None:
            log(f"[corpora] {name}: at hand in {at_hand}")
            continue
        tmp = Path(tempfile.mkdtemp(prefix=f".{name}-", dir=dest))
        try:
            source = _fetch_one(name, tmp / name, timeout, log)
            (tmp / name / "SOURCE.txt").write_text(source + "\n")
            shutil.rmtree(dest / name, ignore_errors=True)
            (tmp / name).rename(dest / name)
            log(f"[corpora] {name}: verified into {dest / name}")
        except (CorpusError, OSError, subprocess.SubprocessError, tarfile.TarError) as e:
            errors.append(f"{name}: {e}")
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    if errors:
        raise CorpusError("; ".join(errors))
    return locate()


def _fetch_one(name: str, dest: Path, timeout: float, log) -> str:
    if name == JSB:
        log(f"[corpora] {name}: {JSB_REPO} @ {JSB_COMMIT[:7]} from GitHub")
        with _github_tarball(JSB_REPO, JSB_COMMIT, timeout) as tar:
            build_jsb(tar, dest)
        return f"repo={JSB_REPO} commit={JSB_COMMIT}"
    try:
        log(f"[corpora] {name}: {JSTS_REPO} @ {JSTS_COMMIT[:7]} from GitHub")
        with _github_tarball(JSTS_REPO, JSTS_COMMIT, timeout) as tar:
            build_jsts(tar, dest)
        return f"repo={JSTS_REPO} commit={JSTS_COMMIT}"
    except (OSError, tarfile.TarError) as e:
        log(f"[corpora] {name}: GitHub unreachable ({e}); python-jsonschema's sdist from PyPI")
        shutil.rmtree(dest, ignore_errors=True)
        return _jsts_from_pypi(dest, timeout)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="get_corpora", description=__doc__.split("\n")[0])
    p.add_argument("--dest", type=Path, help="folder to fill (default: the cache folder)")
    p.add_argument("--timeout", type=float, default=TIMEOUT_S, help="seconds per download")
    p.add_argument("--where", action="store_true", help="only say where the corpora are")
    args = p.parse_args(argv)
    if args.where:
        c = locate()
        where = {JSB: c.jsb, JSTS: c.jsts}
        print(json.dumps({k: str(v) if v else None for k, v in where.items()}))
        return 0 if not c.missing() else 1
    try:
        fetch(args.dest, args.timeout, log=lambda m: print(m, file=sys.stderr))
    except CorpusError as e:
        print(f"[corpora] not fetched: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
