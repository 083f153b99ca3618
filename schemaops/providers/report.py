"""Reports of ``check --target``: the terminal table and JUnit XML.

The table has one row per finding (schema, target, verdict, rule, pointer, source); the source
column is a number into the list of pages printed under it, so a row stays one line in a CI
log. Text from a schema (names, pointers built from property names) is escaped by the caller
(``terminal_lines``) and by ``xml_safe`` here.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET

from schemaops.check.junit import xml_safe
from schemaops.providers import TABLES, HostedReport
from schemaops.providers.base import Table, TargetVerdict
from schemaops.providers.tools import READ as TOOLS_READ

#: Findings shown per (schema, target) in the table; ``--json`` has them all.
ROWS_PER_PAIR = 4


def _rows(report: HostedReport, sources: dict[str, int]) -> list[tuple[str, ...]]:
    rows: list[tuple[str, ...]] = []
    for r in verdict_rows(report):
        shown = r.refused or (r.unproven + r.narrowed + r.residual)
        if not shown:
            rows.append((r.schema, r.target, r.verdict, "-", "-", "-"))
            continue
        for i, f in enumerate(shown[:ROWS_PER_PAIR]):
            n = sources.setdefault(f.rule.source, len(sources) + 1)
            first = i == 0
            rows.append(
                (
                    r.schema if first else "",
                    r.target if first else "",
                    r.verdict if first else "",
                    f.rule.id,
                    f.pointer or "(root)",
                    f"[{n}]",
                )
            )
        if len(shown) > ROWS_PER_PAIR:
            rows.append(("", "", "", f"... {len(shown) - ROWS_PER_PAIR} more", "", ""))
    return rows


def verdict_rows(report: HostedReport) -> list[TargetVerdict]:
    """Schemas, then each tool set's own row and one row per tool (``providers.tools``)."""
    return [*report.results, *(v for ts in report.toolsets for v in ts.rows())]


def _cites(table: Table, url: str) -> bool:
    return any(r.source == url for r in table.rules.values())


def render_text(report: HostedReport) -> str:
    """The terminal report: the table, the sources, one summary line per target."""
    sources: dict[str, int] = {}
    header = ("schema", "target", "verdict", "rule", "pointer", "source")
    rows = [header, *_rows(report, sources)]
    widths = [max(len(row[i]) for row in rows) for i in range(len(header) - 1)]
    lines = [
        (
            "  ".join(c.ljust(w) for c, w in zip(row[:-1], widths, strict=True)) + "  " + row[-1]
        ).rstrip()
        for row in rows
    ]
    if sources:
        lines.append("")
        lines.append("sources:")
        for url, n in sources.items():
            read = next((t.version for t in TABLES.values() if _cites(t, url)), TOOLS_READ)
            lines.append(f"  [{n}] {url} (read {read})")
    lines.append("")
    for target, c in report.counts().items():
        lines.append(
            f"{target} (rules of {TABLES[target].version}): {c['accepted']} accepted, "
            f"{c['accepted_ignored']} accepted with ignored keywords, {c['accepted_narrowed']} "
            "accepted narrower (a dropped keyword refuses valid outputs), "
            f"{c['unproven']} unproven "
            f"(a documented restriction, effect unknown), {c['refused']} refused"
        )
    for ts in report.toolsets:
        lines.append(
            f"{ts.target}: tool set {ts.toolset} ({len(ts.tools)} tools): {ts.verdict}"
            + (
                f"; refused: {', '.join(t.schema for t in ts.rows() if not t.passed)}"
                if not ts.passed
                else ""
            )
        )
    return "\n".join(lines)


def _suite(report: HostedReport, target: str) -> ET.Element:
    cases = [r for r in verdict_rows(report) if r.target == target]
    suite = ET.Element(
        "testsuite",
        {
            "name": f"schemaops check --target {target}",
            "tests": str(len(cases)),
            "failures": str(sum(1 for c in cases if not c.passed)),
            "errors": "0",
            "skipped": "0",
            "time": "0.000",
        },
    )
    props = ET.SubElement(suite, "properties")
    for k, v in (("target", target), ("rules_version", TABLES[target].version)):
        ET.SubElement(props, "property", {"name": k, "value": xml_safe(v)})
    ET.SubElement(props, "property", {"name": "registry", "value": xml_safe(report.registry)})
    for c in cases:
        _case(suite, c)
    return suite


def _case(suite: ET.Element, c: TargetVerdict) -> None:
    tc = ET.SubElement(
        suite,
        "testcase",
        {"classname": f"schemaops.hosted.{c.target}", "name": xml_safe(c.schema), "time": "0"},
    )
    if c.refused:
        first = c.refused[0]
        fail = ET.SubElement(
            tc,
            "failure",
            {
                "message": xml_safe(
                    f"{first.rule.id} at {first.pointer or '(root)'}: {first.rule.summary}"
                ),
                "type": first.rule.id,
            },
        )
        fail.text = xml_safe(
            "\n".join(
                f"- {f.rule.id} at {f.pointer or '(root)'}: {f.message} ({f.rule.source})"
                for f in c.refused
            )
        )
    out = [f"verdict={c.verdict}"]
    out += [
        f"unproven: {f.rule.id} at {f.pointer or '(root)'}: {f.message} ({f.rule.source})"
        for f in c.unproven
    ]
    out += [
        f"narrowed: {f.rule.id} at {f.pointer or '(root)'}: {f.message} ({f.rule.source})"
        for f in c.narrowed
    ]
    out += [
        f"residual: {f.rule.id} at {f.pointer or '(root)'}: {f.message} ({f.rule.source})"
        for f in c.residual
    ]
    ET.SubElement(tc, "system-out").text = xml_safe("\n".join(out))


def junit_xml(report: HostedReport, extra: str | None = None) -> str:
    """JUnit XML: one testsuite per target, one testcase per schema. ``extra`` is another
    JUnit document (``check --backend``'s) whose suites come first, so a run with both
    writes one file."""
    suites = ET.fromstring(extra) if extra else ET.Element("testsuites")
    for t in report.targets:
        suites.append(_suite(report, t))
    all_suites = list(suites.iter("testsuite"))
    suites.set("tests", str(sum(int(s.get("tests", "0")) for s in all_suites)))
    suites.set("failures", str(sum(int(s.get("failures", "0")) for s in all_suites)))
    ET.indent(suites)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(suites, encoding="unicode")
