"""JUnit XML for ``schemaops check``: one testcase per schema, failures carry what to change.

JUnit XML is the one test-report format GitHub Actions (via report actions), GitLab
(``artifacts:reports:junit``), Jenkins and Buildkite all ingest, so a failed gate shows up
per schema in the merge request instead of only in a log.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from pathlib import Path

from schemaops.check.gate import CheckReport
from schemaops.errors import InputError

# Characters XML 1.0 does not allow anywhere (not even as character references): C0 controls
# except tab/newline/return, lone surrogates, U+FFFE and U+FFFF. ElementTree writes them raw,
# which makes the whole file unparseable for the CI system reading it.
_ILLEGAL_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")


def xml_safe(text: object) -> str:
    """``text`` with every character XML 1.0 forbids written as a visible ``\\xNN``/``\\uNNNN``
    escape, so a name carrying one stays readable and the document stays well-formed."""

    def esc(m: re.Match[str]) -> str:
        c = ord(m.group(0))
        return f"\\x{c:02x}" if c < 0x100 else f"\\u{c:04x}"

    return _ILLEGAL_XML.sub(esc, str(text))


def junit_xml(report: CheckReport) -> str:
    """The report as a JUnit XML document (``<testsuites><testsuite><testcase>...``)."""
    suites = ET.Element("testsuites")
    total_time = sum((c.compile_ms or 0.0) for c in report.cases) / 1000.0
    suite = ET.SubElement(
        suites,
        "testsuite",
        {
            "name": xml_safe(f"schemaops check {report.backend}"),
            "tests": str(len(report.cases)),
            "failures": str(len(report.failed)),
            "errors": "0",
            "skipped": "0",
            "time": f"{total_time:.3f}",
        },
    )
    props = ET.SubElement(suite, "properties")
    for k, v in (
        ("backend", report.backend),
        ("tokenizer", report.tokenizer),
        ("registry", report.registry),
        ("compile_budget_ms", f"{report.budget_ms:g}"),
    ):
        ET.SubElement(props, "property", {"name": k, "value": xml_safe(v)})
    suites.set("tests", str(len(report.cases)))
    suites.set("failures", str(len(report.failed)))
    for c in report.cases:
        tc = ET.SubElement(
            suite,
            "testcase",
            {
                "classname": xml_safe(f"schemaops.check.{report.backend}"),
                "name": xml_safe(c.schema),
                "time": f"{(c.compile_ms or 0.0) / 1000.0:.3f}",
            },
        )
        if c.problems:
            first = c.problems[0]
            fail = ET.SubElement(
                tc, "failure", {"message": xml_safe(first.text()), "type": first.kind}
            )
            fail.text = xml_safe("\n".join(f"- {p.text()}" for p in c.problems))
        enf = c.result.get("enforcement") or {}
        out = [
            f"status={c.status} compile_ms={c.compile_ms} verdict={c.verdict} "
            f"rejects_valid_content={enf.get('rejects_valid_content', 0)} "
            f"accepted_retokenized={enf.get('accepted_retokenized', 0)}"
        ]
        out += [f"warning: {w}" for w in c.warnings]
        ET.SubElement(tc, "system-out").text = xml_safe("\n".join(out))
    ET.indent(suites)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(suites, encoding="unicode")


def write_junit(report: CheckReport, path: str | Path) -> Path:
    """Write the JUnit file; an unwritable path is a usage error (exit 2)."""
    out = Path(path)
    try:
        out.write_text(junit_xml(report) + "\n", encoding="utf-8")
    except OSError as exc:
        raise InputError(f"cannot write {out}: {exc}") from exc
    return out
