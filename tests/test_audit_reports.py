"""Reports of hostile data (issue 14.8): the Markdown report, rendered by a real CommonMark
renderer, carries no tag from the data and no code span the data closed early; the terminal
report writes control characters from output keys as escapes."""

from __future__ import annotations

import io
import json
from html.parser import HTMLParser
from pathlib import Path

from markdown_it import MarkdownIt
from rich.console import Console

from schemaops.audit import AuditOptions, run_audit
from schemaops.audit.report.html import render_html
from schemaops.audit.report.markdown import render_markdown
from schemaops.audit.report.terminal import render_terminal

# no "/": a schema name is a file name (registry/names.py refuses a path separator)
EVIL_SCHEMA = "<script>alert(1)<script src=x>"
EVIL_KEY = "<img src=x onerror=alert(2)>"
ESC_KEY = "k\x1b[31mRED\x1b]8;;http://x\x07\u202e"
ALLOWED = {"h1", "h2", "h3", "p", "table", "thead", "tbody", "tr", "th", "td", "ul", "li"}
ALLOWED |= {"code", "strong", "em", "b", "br", "svg"}


def _hostile_doc(tmp_path: Path) -> dict:
    reg = tmp_path / "reg"
    reg.mkdir()
    schema = {
        "type": "object",
        "properties": {"a": {"type": "integer"}},
        "additionalProperties": {"type": "integer"},
    }
    # A file name cannot hold "<" on every system, so the name comes from x-schemaops-name.
    (reg / "evil.json").write_text(json.dumps({**schema, "x-schemaops-name": EVIL_SCHEMA}))
    outputs = [
        {EVIL_KEY: "x"},
        {ESC_KEY: "y"},
        {"a": "``` `</code><script>alert(3)</script>"},
    ]
    lines = [{"schema": EVIL_SCHEMA, "text": json.dumps(o)} for o in outputs]
    lines.append({"schema": EVIL_SCHEMA, "text": "Sure ``<b onmouseover=alert(4)>`` " + "{"})
    f = tmp_path / "<i>evil`name.jsonl"
    f.write_text("".join(json.dumps(x) + "\n" for x in lines))
    doc = run_audit(str(f), AuditOptions(registry=str(reg))).to_json()
    assert doc["outputs"] == 4 and doc["input_errors"] == 0, doc["input_error_lines"]
    return doc


class _Tags(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, list]] = []
        self.code: list[str] = []
        self._in_code = 0

    def handle_starttag(self, tag: str, attrs: list) -> None:
        self.tags.append((tag, attrs))
        if tag == "code":
            self._in_code += 1
            self.code.append("")

    def handle_endtag(self, tag: str) -> None:
        if tag == "code":
            self._in_code -= 1

    def handle_data(self, data: str) -> None:
        if self._in_code:
            self.code[-1] += data


def _check_html(page: str) -> _Tags:
    parser = _Tags()
    parser.feed(page)
    names = {t for t, _ in parser.tags}
    assert not {"script", "img", "i"} & names, names
    assert not [a for _, attrs in parser.tags for a, _ in attrs if a.startswith("on")]
    return parser


def test_markdown_report_is_inert_when_rendered(tmp_path: Path) -> None:
    doc = _hostile_doc(tmp_path)
    md = render_markdown(doc)
    html = MarkdownIt("commonmark").enable("table").render(md)  # raw HTML allowed, as on GitHub
    parsed = _check_html(html)
    assert {t for t, _ in parsed.tags} <= ALLOWED, {t for t, _ in parsed.tags}
    # Data that was put in a code span is whole inside one code element (not broken out).
    assert any(EVIL_SCHEMA == c for c in parsed.code), parsed.code
    assert any("</code><script>alert(3)</script>" in c for c in parsed.code), parsed.code
    assert any(c.startswith("/<img src=x onerror=alert(2)>") for c in parsed.code), parsed.code
    # The data is still readable: shown, not dropped.
    assert "onerror" in "".join(parsed.code)
    assert "\x1b" not in md and "\u202e" not in md


def test_html_report_is_inert(tmp_path: Path) -> None:
    doc = _hostile_doc(tmp_path)
    _check_html(render_html(doc).split("<svg", 1)[0] + render_html(doc).split("</svg>", 1)[-1])


def test_terminal_report_escapes_control_characters(tmp_path: Path) -> None:
    doc = _hostile_doc(tmp_path)
    buf = io.StringIO()
    render_terminal(doc, Console(file=buf, color_system=None, width=200, highlight=False))
    out = buf.getvalue()
    assert not [c for c in out if (ord(c) < 32 and c != "\n") or 0x7F <= ord(c) < 0xA0], out
    assert "\u202e" not in out
    assert "\\x1b[31mRED" in out  # shown as an escape, not swallowed


def _sources_doc(tmp_path: Path) -> dict:
    """A real audit of one log mixing SGLang text, a two-choice completions answer and a
    chat answer with two tool calls: five sources, one failure among them."""
    schema = tmp_path / "s.json"
    schema.write_text(json.dumps({"type": "object", "required": ["a"]}))
    recs = [
        {"text": '{"a": 1}'},
        {"text": '{"a": 2}'},
        {"choices": [{"text": '{"a": 1}'}, {"text": '{"b": 1}'}]},
        {
            "choices": [
                {
                    "message": {
                        "content": None,
                        "tool_calls": [
                            {"function": {"name": "f", "arguments": '{"a": 1}'}},
                            {"function": {"name": "g", "arguments": '{"a": 3}'}},
                        ],
                    }
                }
            ]
        },
    ]
    log = tmp_path / "log.jsonl"
    log.write_text("".join(json.dumps(r) + "\n" for r in recs))
    doc = run_audit(str(log), AuditOptions(schema=str(schema), cache=False)).to_json()
    assert len(doc["sources"]) == 5 and doc["sources"]["choices[1].text"]["ok"] == 0, doc
    return doc


def test_markdown_and_html_reports_show_outputs_by_source(tmp_path: Path) -> None:
    doc = _sources_doc(tmp_path)
    md = render_markdown(doc)
    assert "## By source" in md
    section = md.split("## By source", 1)[1].split("\n## ", 1)[0]
    rows = [r for r in section.splitlines() if r.startswith("| `")]
    got = {r.split("`")[1]: [c.strip() for c in r.split("|")[2:-1]] for r in rows}
    want = {s: [str(v["outputs"]), str(v["ok"])] for s, v in doc["sources"].items()}
    assert {s: c[:2] for s, c in got.items()} == want
    assert rows[0].startswith("| `text`")  # most outputs first
    page = render_html(doc)
    assert "<h2>By source</h2>" in page
    for src in doc["sources"]:
        assert f"<td><code>{src}</code></td>" in page
    # a document written before sources existed still renders
    old = {k: v for k, v in doc.items() if k != "sources"}
    assert "By source" not in render_markdown(old) and "By source" not in render_html(old)


def test_by_source_table_is_bounded(tmp_path: Path) -> None:
    """A completions answer over 25 prompts has 25 sources: 20 rows, the rest in one line."""
    schema = tmp_path / "s.json"
    schema.write_text(json.dumps({"type": "object"}))
    log = tmp_path / "log.jsonl"
    log.write_text(json.dumps({"choices": [{"text": "{}"}] * 25}) + "\n")
    doc = run_audit(str(log), AuditOptions(schema=str(schema), cache=False)).to_json()
    md = render_markdown(doc)
    section = md.split("## By source", 1)[1].split("\n## ", 1)[0]
    assert sum(r.startswith("| `choices[") for r in section.splitlines()) == 20
    assert "\n\n5 more source(s) with 5 output(s).\n" in section
    assert "5 more source(s)" in render_html(doc)
