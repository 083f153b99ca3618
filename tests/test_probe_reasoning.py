"""``schemaops probe`` against a reasoning model that stops inside its reasoning, and the
``--registry`` rows of a path that enforces nothing (issue 22 #2).

TEST DOUBLE: ``_Reasoner`` is a plain ``http.server`` stand-in for SGLang 0.5.23 started with
``--reasoning-parser``, not SGLang. A real reasoning model cannot be made to stop inside its
reasoning on demand (nor to write valid JSON for the registry while ignoring every grammar),
and none runs on this machine's CPU dev server; the answer shapes are the engines' own:
``/generate`` returns the raw text (``<think>...`` with no end marker), chat returns
``content`` null or empty with ``reasoning_content`` (SGLang) or ``reasoning`` (vLLM).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import ThreadingHTTPServer
from pathlib import Path

import pytest
from cli_support import run_cli
from http_double import QuietJsonHandler


class _Reasoner(QuietJsonHandler):
    """SGLang with a reasoning parser; ``mode`` picks the answers.

    ``think``: every answer stops inside the reasoning (``finish_reason`` stop).
    ``free``: no grammar is applied: prose for the canaries, ``{}`` for the registry prompt
    (with ``parser`` None: a server without a reasoning parser).
    """

    mode = "think"
    parser: str | None = "deepseek-r1"

    def do_GET(self) -> None:  # noqa: N802
        if self.path == "/server_info":
            info = {"version": "0.5.23", "grammar_backend": "xgrammar"}
            if self.parser:
                info["reasoning_parser"] = self.parser
            self.send_json(200, info)
        elif self.path == "/v1/models":
            self.send_json(200, {"data": [{"id": "r1", "owned_by": "sglang"}]})
        else:
            self.send_json(200, {})

    def do_POST(self) -> None:  # noqa: N802
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)))
        form = "Fill in the form." in json.dumps(body)  # a --registry request
        free = "{}" if form else "The sky is blue."
        if self.path == "/generate":
            text = "<think>\nThe user asks about the sky" if self.mode == "think" else free
            self.send_json(200, {"text": text, "meta_info": {"finish_reason": {"type": "stop"}}})
            return
        if self.mode == "think":
            msg = {"role": "assistant", "content": None, "reasoning_content": "Hmm, the sky"}
        else:
            msg = {"role": "assistant", "content": free}
        choice = {"index": 0, "message": msg, "finish_reason": "stop"}
        self.send_json(200, {"choices": [choice]})


@pytest.fixture()
def reasoner() -> Iterator[type[_Reasoner]]:
    handler = type("Reasoner", (_Reasoner,), {})
    srv = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    srv.daemon_threads = True
    handler.url = f"http://127.0.0.1:{srv.server_address[1]}"  # type: ignore[attr-defined]
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    yield handler
    srv.shutdown()
    srv.server_close()


def _probe(url: str, *args: str) -> tuple[dict, int]:
    r = run_cli("probe", "--server", url, "--canaries", "2", *args, "--json", cwd=None)
    assert "Traceback" not in r.stderr, r.stderr[-2000:]
    return json.loads(r.stdout), r.returncode


def _registry(tmp_path: Path) -> Path:
    reg = tmp_path / "reg"
    reg.mkdir()
    (reg / "anything.json").write_text(json.dumps({"type": "object"}))
    return reg


def test_stopped_in_reasoning_is_unproven_on_every_path(reasoner: type[_Reasoner]) -> None:
    """The old probe called every path ``unconstrained`` (content null, raw ``<think>``): a
    false verdict the contract rules out. Each path is now ``unproven`` with the reason."""
    paths = "generate.json_schema,generate.regex,response_format.json_schema,tools.required"
    doc, code = _probe(reasoner.url, "--paths", paths)  # type: ignore[attr-defined]
    assert code == 1  # the deployment's paths are not proven enforced
    assert {p["verdict"] for p in doc["paths"]} == {"unproven"}, doc["paths"]
    for p in doc["paths"]:
        assert "reasoning" in p["reason"] and "no evidence" in p["reason"]
    assert "unconstrained" not in doc["counts"]


def test_a_valid_registry_output_on_an_unconstrained_path_is_not_enforced(
    reasoner: type[_Reasoner], tmp_path: Path
) -> None:
    """A server that applies no grammar writes ``{}`` for ``{"type": "object"}``: valid, by
    luck. The old row said ``enforced``; it is ``unproven`` with the reason. And ``--paths``
    gates the registry's own path: the old run exited 0 here (only ``generate.regex`` gated)."""
    reasoner.mode, reasoner.parser = "free", None
    reg = _registry(tmp_path)
    doc, code = _probe(reasoner.url, "--registry", str(reg))  # type: ignore[attr-defined]
    verdicts = {p["path"]: p["verdict"] for p in doc["paths"]}
    assert verdicts["generate.json_schema"] == "unconstrained"
    (row,) = doc["registry"]
    assert row["category"] == "ok" and row["verdict"] == "unproven", row
    assert "no evidence" in row["reason"]
    # the deployment says it uses only generate.regex; the registry went by generate.json_schema
    doc, code = _probe(
        reasoner.url,  # type: ignore[attr-defined]
        "--paths",
        "generate.regex",
        "--registry",
        str(reg),
    )
    assert code == 1 and "generate.json_schema" in doc["failed"], doc["failed"]
    assert doc["gate"]["paths"] == ["generate.regex", "generate.json_schema"]


def test_stopped_in_reasoning_registry_rows_are_unproven(
    reasoner: type[_Reasoner], tmp_path: Path
) -> None:
    doc, _ = _probe(reasoner.url, "--registry", str(_registry(tmp_path)))  # type: ignore[attr-defined]
    (row,) = doc["registry"]
    assert row["verdict"] == "unproven" and "reasoning" in row["reason"], row
    assert not any(f.startswith("registry:") for f in doc["failed"])
