"""No form of a credential reaches ``warm`` or ``probe`` output, whatever a server echoes
(issue 22 #14).

TEST DOUBLE: ``_Echo`` is a plain ``http.server`` on 127.0.0.1 answering like SGLang 0.5.23,
except that every answer quotes the ``Authorization`` header it got: raw and placed so that
warm's or probe's own length limits (2,000-character messages, 120-character glimpses,
200-character facts, 80-character answer excerpts) cut it 10 characters before its end; and
HTML-escaped, JSON-escaped and percent-encoded. Real servers and gateways echo requests in
error pages; none does it on demand, in every encoding.
"""

from __future__ import annotations

import base64
import html
import json
import threading
from collections.abc import Iterator
from http.server import ThreadingHTTPServer
from pathlib import Path
from urllib.parse import quote, quote_plus

import pytest
from cli_support import key_env, run_cli
from http_double import QuietJsonHandler

# 40 characters, with every character an echo encodes differently
KEY = 'Zq7<x>&"/%2F+' + "k4Lm9Pw2Rt6Yb8Nc1Vd5Hs3Jf0G"
USER, PASSWORD = "warmer", "pw%40Tr1ckyP4ss"  # the password is percent-encoded in the URL
BASIC = base64.b64encode(f"{USER}:pw@Tr1ckyP4ss".encode()).decode()  # what httpx sends


def _placed(value: str, cut_at: int, before: int) -> str:
    """Padding that puts ``value`` so a cut at ``cut_at`` (``before`` characters already
    there) falls 10 characters before its end."""
    return "x" * max(0, cut_at - before - (len(value) - 10))


class _Echo(QuietJsonHandler):
    """Each answer quotes the Authorization header; which way, by what the request holds."""

    def _auth(self) -> str:
        return self.headers.get("Authorization") or ""

    def do_GET(self) -> None:  # noqa: N802
        if self.path == "/server_info":  # warm and probe show the version cut to 200
            a = self._auth()
            version = _placed(a, 197, 0) + a + " tail"
            self.send_json(200, {"version": version, "grammar_backend": "xgrammar"})
        elif self.path == "/v1/models":
            self.send_json(200, {"data": [{"id": "m", "owned_by": "sglang"}]})
        else:
            self.send_json(200, {})

    def do_POST(self) -> None:  # noqa: N802
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)))
        a = self._auth()
        sp = body.get("sampling_params") or {}
        text = json.dumps(body)
        if "max_new_tokens" in sp and sp.get("max_new_tokens") == 1 and "json_schema" not in sp:
            # warm's baseline: a good 1-token answer
            self.send_json(200, {"text": "x", "meta_info": {"finish_reason": {"type": "length"}}})
        elif "cut2000" in text or "json_schema" in sp and "pick" in text:
            # a 2,000-character message (HTTP 400: + the message), cut before the end
            msg = _placed(a, 1997, 0) + a + " and more"
            self.send_json(400, {"error": {"message": msg}})
        elif "glimpse" in text:  # a 200 that is no answer: warm shows a 120-character glimpse
            self.send_json(200, {"detail": _placed(a, 117, len('{"detail": "')) + a + " end"})
        elif "html" in text or "regex" in sp:
            self.send_json(400, {"error": {"message": f"<p>got {html.escape(a)}</p>"}})
        elif "jsonesc" in text or "ebnf" in sp:
            self.send_json(400, {"error": {"message": f"got {json.dumps({'auth': a})}"}})
        elif "response_format" in body and body["response_format"].get("type") == "json_object":
            # an answer whose text probe quotes in 80 characters: the echo cut there
            content = _placed(a, 77, 1) + a + " end"
            choice = {"index": 0, "message": {"content": content}, "finish_reason": "stop"}
            self.send_json(200, {"choices": [choice]})
        else:  # percent-encoded
            self.send_json(400, {"error": {"message": f"got {quote(a, safe='')}"}})


@pytest.fixture(scope="module")
def echo() -> Iterator[str]:
    srv = ThreadingHTTPServer(("127.0.0.1", 0), _Echo)
    srv.daemon_threads = True
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    yield f"127.0.0.1:{srv.server_address[1]}"
    srv.shutdown()
    srv.server_close()


def _registry(tmp_path: Path) -> Path:
    reg = tmp_path / "reg"
    reg.mkdir()
    for how in ("cut2000", "glimpse", "html", "jsonesc", "urlenc"):
        (reg / f"{how}.json").write_text(json.dumps({"type": "object", "title": how}))
    return reg


def _forbidden(secrets: list[str]) -> list[str]:
    """The first 8 characters of every form of every secret: none may be printed."""
    out = []
    for s in secrets:
        forms = [s, html.escape(s), json.dumps(s)[1:-1], quote(s, safe=""), quote_plus(s)]
        forms += [json.dumps(html.escape(s))[1:-1]]
        out += [f[:8] for f in forms]
    return sorted(set(out))


CREDENTIALS = {
    "api-key": ([KEY, f"Bearer {KEY}"], lambda hostport: f"http://{hostport}", KEY),
    "url": (
        [BASIC, f"{USER}:pw@Tr1ckyP4ss", "pw@Tr1ckyP4ss", PASSWORD],
        lambda hostport: f"http://{USER}:{PASSWORD}@{hostport}",
        None,
    ),
}


@pytest.mark.parametrize("how", list(CREDENTIALS))
def test_warm_json_prints_no_form_of_a_credential(echo: str, tmp_path: Path, how: str) -> None:
    secrets, url, key = CREDENTIALS[how]
    args = ["warm", "--server", url(echo), "-r", str(_registry(tmp_path)), "--retries", "0"]
    for extra in (["--json"], []):
        r = run_cli(*args, *extra, cwd=None, env=key_env(key))
        assert "Traceback" not in r.stderr, r.stderr[-3000:]
        out = r.stdout + r.stderr
        leaked = [f for f in _forbidden(secrets) if f in out]
        assert not leaked, (leaked, out[-3000:])
        assert "***" in out  # the echoes were there, and scrubbed
    doc = json.loads(run_cli(*args, "--json", cwd=None, env=key_env(key)).stdout)
    errors = {r["schema"]: r["error"] for r in doc["results"]}
    assert errors["cut2000"].startswith("HTTP 400: xxx") and "***" in errors["cut2000"]
    assert errors["glimpse"].startswith("HTTP 200 but") and "***" in errors["glimpse"]


@pytest.mark.parametrize("how", list(CREDENTIALS))
def test_probe_json_prints_no_form_of_a_credential(echo: str, how: str) -> None:
    secrets, url, key = CREDENTIALS[how]
    paths = (
        "generate.json_schema,generate.regex,generate.ebnf,response_format.json_schema,"
        "response_format.json_object"
    )
    args = ["probe", "--server", url(echo), "--paths", paths, "--canaries", "1"]
    for extra in (["--json"], []):
        r = run_cli(*args, *extra, cwd=None, env=key_env(key))
        assert "Traceback" not in r.stderr, r.stderr[-3000:]
        out = r.stdout + r.stderr
        leaked = [f for f in _forbidden(secrets) if f in out]
        assert not leaked, (leaked, out[-3000:])
        assert "***" in out


def test_every_form_of_a_secret_is_scrubbed_and_nothing_else() -> None:
    """The forms one by one, mixed and escaped twice, and a cut-off prefix; text without the
    secret is left alone (a run shorter than 8 leading characters is no secret)."""
    from schemaops.http.redact import redactor

    r = redactor([f"http://{USER}:{PASSWORD}@h:1"], [f"Bearer {KEY}", KEY])
    forms = [
        KEY,
        html.escape(KEY),
        html.escape(html.escape(KEY)),
        json.dumps(KEY),
        json.dumps(json.dumps(KEY)),
        quote(KEY, safe=""),
        quote(quote(KEY, safe=""), safe=""),
        quote_plus(KEY),
        json.dumps(html.escape(KEY)),
        KEY.replace("<", "&#60;").replace(">", "&#x3E;"),
        KEY[:30],  # cut by the server
        html.escape(KEY)[:24],  # 9 characters of the key, HTML-escaped
        BASIC,
        f"Basic {BASIC}",
        f"{USER}:pw@Tr1ckyP4ss",
        PASSWORD,
    ]
    for form in forms:
        got = r.text(f"before {form} after")
        assert got.startswith("before ") and "***" in got and "k4Lm9" not in got, (form, got)
        assert not any(f[:8] in got for f in _forbidden([KEY, BASIC, "pw@Tr1ckyP4ss"]))
    plain = 'nothing here: Bearer scheme, Zq7<x> (6 chars), %2F, &amp;, \\"'
    assert r.text(plain) == plain


@pytest.mark.timeout(120)
def test_scrubbing_is_linear_on_hostile_text() -> None:
    """Every repetition in the patterns is bounded: runs of backslashes, ``%25`` and
    ``&amp;`` (each the start of an encoded character) cost one pass, not one per position
    (unbounded, a megabyte of backslashes took minutes)."""
    from schemaops.http.redact import redactor

    r = redactor([], [KEY])
    for unit in ("\\", "%25", "&amp;"):
        text = unit * (1_000_000 // len(unit))
        assert r.text(text) == text
