"""A remote ``$ref`` is never fetched, also where the schema comes from the log itself.

A tool set offered in a logged request (``{"request": {"tools": [...]}, "response": ...}``)
is judged as the engine would judge it, and its parameters may ``$ref`` anything. jsonschema
4.26's default registry fetches an http(s) ref with ``urllib`` (only warning), so the audit
fetched whatever address a log line named and judged the call ``ok`` against what came back
(a mutation run over tool sets, 2026-12-05). Every jsonschema validator is now built with a
registry that refuses what it does not hold (``registry.refs.no_fetch``): the call is that
line's input error, naming the ref; and a registry tool set whose own file has problems is
refused as a schema with problems is. A real HTTP server on 127.0.0.1 counts what reaches it.
"""

from __future__ import annotations

import http.server
import json
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from schemaops.audit import AuditOptions
from schemaops.audit.run.pipeline import run_audit
from tests.cli_support import run_cli


class _Counting(http.server.BaseHTTPRequestHandler):
    hits: list[str] = []

    def do_GET(self) -> None:  # noqa: N802 (the stdlib's name)
        type(self).hits.append(self.path)
        body = b'{"type": "object", "properties": {"a": {"type": "integer"}}}'
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def remote() -> Iterator[tuple[str, list[str]]]:
    """A schema server on 127.0.0.1 (what a remote ref would fetch) and the paths it served."""
    hits: list[str] = []
    handler = type("Handler", (_Counting,), {"hits": hits})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/remote.json", hits
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def _remote_tools(url: str) -> list[dict]:
    """One function ``f`` whose parameters are the remote schema at ``url``."""
    return [{"type": "function", "function": {"name": "f", "parameters": {"$ref": url}}}]


def _registry(tmp_path: Path, files: dict[str, object]) -> Path:
    """A registry folder holding ``files`` (name -> JSON value)."""
    reg = tmp_path / "reg"
    reg.mkdir()
    for name, value in files.items():
        (reg / name).write_text(json.dumps(value), encoding="utf-8")
    return reg


def _call(arguments: str, url: str) -> dict:
    tools = _remote_tools(url)
    call = {"id": "c", "type": "function", "function": {"name": "f", "arguments": arguments}}
    return {
        "request": {"model": "m", "tools": tools},
        "response": {"choices": [{"message": {"tool_calls": [call]}}]},
    }


def test_a_remote_ref_in_a_logged_request_is_not_fetched(
    tmp_path: Path, remote: tuple[str, list[str]]
) -> None:
    url, hits = remote
    reg = _registry(tmp_path, {"x.json": {"type": "object"}})
    log = tmp_path / "calls.jsonl"
    lines = [_call('{"a": 1}', url), _call('{"a": "one"}', url), {"schema": "x", "text": "{}"}]
    log.write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")
    doc = run_audit(str(log), AuditOptions(registry=str(reg), cache=False)).to_json()
    assert hits == []  # nothing fetched
    assert doc["ok"] == 1 and doc["input_errors"] == 2  # neither call judged ok
    reasons = [e["message"] for e in doc["input_error_lines"]]
    assert all(f"its $ref {url!r} does not resolve" in r for r in reasons), reasons
    res = run_cli("audit", str(log), "--registry", str(reg))
    assert res.returncode == 0 and "Traceback" not in res.stderr
    assert "never fetched" in res.stdout + res.stderr and hits == []


def test_a_registry_tool_set_with_problems_is_refused(
    tmp_path: Path, remote: tuple[str, list[str]]
) -> None:
    url, hits = remote
    reg = _registry(tmp_path, {"agent.tools.json": _remote_tools(url)})
    log = tmp_path / "calls.jsonl"
    log.write_text(json.dumps(_call('{"a": 1}', url)) + "\n", encoding="utf-8")
    res = run_cli("audit", str(log), "--registry", str(reg), "--tools", "agent", "--json")
    assert res.returncode == 2, res.stdout + res.stderr
    doc = json.loads(res.stdout)
    assert doc["ok"] is False and "tool set 'agent' has registry problems" in doc["error"]
    assert "schemaops registry validate" in doc["error"]
    # the request offers exactly the registry's set: that set is refused for the line too
    res = run_cli("audit", str(log), "--registry", str(reg), "--json")
    assert res.returncode == 2 and "has registry problems" in res.stdout
    assert hits == []


def test_every_jsonschema_validator_refuses_to_fetch(remote: tuple[str, list[str]]) -> None:
    """The audit's checker (its explaining validators too) and ``compare``'s instance check."""
    import referencing.exceptions

    from schemaops.audit.verdict.validate import SchemaChecker
    from schemaops.compare.instances import validator

    url, hits = remote
    schema = {"type": "object", "properties": {"a": {"$ref": url}}}
    checker = SchemaChecker("s", schema)
    with pytest.raises(referencing.exceptions.Unresolvable):
        checker.check({"a": 1})
    with pytest.raises(referencing.exceptions.Unresolvable):
        checker.validator.is_valid({"a": 1})
    with pytest.raises(referencing.exceptions.Unresolvable):
        validator(schema).is_valid({"a": 1})
    assert checker.check({"b": 1}).category == "ok"  # a value that never reaches the ref
    assert hits == []


def test_a_set_is_refused_for_its_own_file_only(
    tmp_path: Path, remote: tuple[str, list[str]]
) -> None:
    """``agent`` is judged though ``xagent`` beside it has problems (the file's name is
    compared, not a suffix of its path)."""
    url, hits = remote
    good = {"type": "object", "properties": {"a": {"type": "integer"}}}
    fn = {"name": "f", "parameters": good}
    agent = [{"type": "function", "function": fn}]
    reg = _registry(tmp_path, {"agent.tools.json": agent, "xagent.tools.json": _remote_tools(url)})
    call = {"id": "c", "type": "function", "function": {"name": "f", "arguments": '{"a": 1}'}}
    log = tmp_path / "calls.jsonl"
    log.write_text(json.dumps({"choices": [{"message": {"tool_calls": [call]}}]}) + "\n")
    res = run_cli("audit", str(log), "--registry", str(reg), "--tools", "agent", "--json")
    assert res.returncode == 0, res.stdout + res.stderr
    assert json.loads(res.stdout)["ok"] == 1
    res = run_cli("audit", str(log), "--registry", str(reg), "--tools", "xagent", "--json")
    assert res.returncode == 2 and "tool set 'xagent' has registry problems" in res.stdout
    assert hits == []
