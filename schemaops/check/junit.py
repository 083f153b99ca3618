"""JUnit XML for ``schemaops check``: one testcase per schema, failures carry what to change.

JUnit XML is the one test-report format GitHub Actions (via report actions), GitLab
(``artifacts:reports:junit``), Jenkins and Buildkite all ingest, so a failed gate shows up
per schema in the merge request instead of only in a log.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

from schemaops.check.gate import CheckReport
from schemaops.errors import InputError


def junit_xml(report: CheckReport) -> str:
    """The report as a JUnit XML document (``<testsuites><testsuite><testcase>...``)."""
    suites = ET.Element("testsuites")
    total_time = sum((c.compile_ms or 0.0) for c in report.cases) / 1000.0
    suite = ET.SubElement(
        suites,
        "testsuite",
        {
            "name": f"schemaops check {report.backend}",
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
        ET.SubElement(props, "property", {"name": k, "value": v})
    suites.set("tests", str(len(report.cases)))
    suites.set("failures", str(len(report.failed)))
    for c in report.cases:
        tc = ET.SubElement(
            suite,
            "testcase",
            {
                "classname": f"schemaops.check.{report.backend}",
                "name": c.schema,
                "time": f"{(c.compile_ms or 0.0) / 1000.0:.3f}",
            },
        )
        if c.problems:
            first = c.problems[0]
            fail = ET.SubElement(tc, "failure", {"message": first.text(), "type": first.kind})
            fail.text = "\n".join(f"- {p.text()}" for p in c.problems)
        out = [f"status={c.status} compile_ms={c.compile_ms} verdict={c.verdict}"]
        out += [f"warning: {w}" for w in c.warnings]
        ET.SubElement(tc, "system-out").text = "\n".join(out)
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
