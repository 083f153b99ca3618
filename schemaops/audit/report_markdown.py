"""``--markdown FILE``: the report as GitHub-flavoured Markdown (for PR comments, CI summaries)."""

from __future__ import annotations

from pathlib import Path

from schemaops.audit.report_text import fmt_ci, fmt_p, headline
from schemaops.errors import InputError


def _cell(text: object) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def _table(head: list[str], rows: list[list[object]]) -> list[str]:
    out = ["| " + " | ".join(head) + " |", "|" + "|".join("---" for _ in head) + "|"]
    out += ["| " + " | ".join(_cell(c) for c in row) + " |" for row in rows]
    return out + [""]


def render_markdown(doc: dict) -> str:
    """The Markdown text of one ``--json`` document."""
    n = doc["outputs"] or 1
    lines = [f"# schemaops audit: `{doc['input']}`", "", headline(doc), ""]
    if doc["input_errors"]:
        shown = ", ".join(f"{e['line']} ({e['message']})" for e in doc["input_error_lines"][:10])
        lines += [f"**{doc['input_errors']} input error(s)** (excluded from p): lines {shown}", ""]
    rows: list[list[object]] = []
    for cat, k in doc["categories"].items():
        rows.append([cat, f"{k:,}", f"{k / n:.2%}"])
        if cat == "json_parse_failure":
            rows += [[f"↳ {s}", f"{j:,}", f"{j / n:.2%}"] for s, j in doc["parse_failures"].items()]
    lines += ["## Outcomes", ""] + _table(["category", "count", "share"], rows)
    rows = [[s, fmt_p(doc["compound"][str(s)]), fmt_ci(doc["compound_ci95"][str(s)])]
            for s in doc["steps"]]  # fmt: skip
    lines += ["## Compound success", "", "Assuming steps fail independently: p^n."]
    lines += [""] + _table(["steps n", "p^n", "95% CI"], rows)
    if "target" in doc:
        t = doc["target"]
        for s, need in t["required_p"].items():
            met = "met" if t["met"][s] else "not met"
            lines.append(f"- p^{s} >= {t['compound']:g} needs p >= {need:.5f} ({met})")
        lines.append("")
    ep = doc.get("episodes")
    if ep:
        lines += ["## Episodes", "", (
            f"{ep['episodes']:,} episodes, mean {ep['mean_steps']:.1f} steps: observed success"
            f" {fmt_p(ep['observed_success'])} {fmt_ci(ep['observed_ci95'])}, versus"
            f" {fmt_p(ep['expected_independent'])} if steps failed independently (gap"
            f" {ep['gap']:+.1%}). A failed episode has"
            f" {ep['mean_failures_per_failed_episode']:.2f} failures on average: failures"
            " cluster, so p^n is a pessimistic bound for this workload."
            if ep["gap"] > 0 else
            f"{ep['episodes']:,} episodes: observed success {fmt_p(ep['observed_success'])} vs"
            f" {fmt_p(ep['expected_independent'])} expected under independence."
        ), ""]  # fmt: skip
    rows = [[name, f"{s['outputs']:,}", fmt_p(s["p"]),
             ", ".join(f"{c} {k}" for c, k in s["categories"].items() if c != "ok" and k) or "-"]
            for name, s in doc["by_schema"].items()]  # fmt: skip
    lines += ["## By schema", ""] + _table(["schema", "outputs", "p", "failures"], rows)
    if doc["paths"]:
        rows = [[r["schema"], r["category"], f"`{r['path'] or '(root)'}`", r["count"]]
                for r in doc["paths"]]  # fmt: skip
        lines += ["## Top failing locations", ""]
        lines += _table(["schema", "category", "JSON pointer", "count"], rows)
    if doc["examples"]:
        lines += ["## Examples", ""]
        for key, exs in sorted(doc["examples"].items()):
            lines.append(f"### {key}")
            lines.append("")
            for e in exs:
                where = f" at `{e['path'] or '(root)'}`" if e["path"] is not None else ""
                lines.append(f"- line {e['line']} ({e['schema']}){where}: {_cell(e['message'])}")
                lines.append(f"  `{_cell(e['text'][:160]).replace('`', 'ˋ')}`")
            lines.append("")
    if doc["gates"]:
        lines += ["## Gates", ""]
        lines += [f"- **{'PASS' if g['passed'] else 'FAIL'}** {g['gate']}: {g['reason']}"
                  for g in doc["gates"]] + [""]  # fmt: skip
    return "\n".join(lines)


def write_markdown(doc: dict, path: str | Path) -> None:
    try:
        Path(path).write_text(render_markdown(doc), encoding="utf-8")
    except OSError as exc:
        raise InputError(f"cannot write {path}: {exc.strerror or exc}") from None
