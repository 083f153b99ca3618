"""``--html FILE``: one self-contained page (no external assets) with the breakdowns and a
chart of compound success against the number of steps, with the 95% band, drawn by
matplotlib and embedded as inline SVG."""

from __future__ import annotations

import html
import io
import re
from pathlib import Path

from schemaops.audit.report.markdown import render_markdown
from schemaops.audit.report.text import fmt_ci, fmt_p, headline, visible
from schemaops.errors import InputError

CSS = """body{font:15px/1.45 system-ui,sans-serif;max-width:60rem;margin:2rem auto;padding:0 1rem;
color:#1b1f24}table{border-collapse:collapse;margin:.5rem 0 1.5rem}td,th{border:1px solid #d0d7de;
padding:.25rem .6rem;text-align:left}td.n{text-align:right}code{background:#f6f8fa;padding:0 .2rem}
.fail{color:#b42318}.pass{color:#067647}h1{font-size:1.4rem}svg{max-width:100%;height:auto}"""


def chart_svg(doc: dict, max_steps: int | None = None) -> str:
    """Compound success p^n for n = 1..N with its Wilson band, plus the observed episode
    success when known. Returns an ``<svg>`` element."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise InputError("--html needs matplotlib: pip install 'schemaops[report]'") from None
    p, ci = doc["p"], doc["p_ci95"]
    if p is None or ci is None:
        return "<p>No classified outputs: nothing to chart.</p>"
    top = max_steps or max(30, max(doc["steps"]))
    ns = list(range(1, top + 1))
    matplotlib.rcParams["svg.hashsalt"] = "schemaops"  # stable ids: reproducible files
    fig, ax = plt.subplots(figsize=(7.5, 4.2), dpi=100)
    ax.fill_between(
        ns,
        [ci[0] ** n for n in ns],
        [ci[1] ** n for n in ns],
        alpha=0.25,
        color="#1f6feb",
        label="95% interval (Wilson, carried through)",
    )
    ax.plot(ns, [p**n for n in ns], color="#1f6feb", label=f"$p^n$, p = {p:.4f}")
    for s in doc["steps"]:
        ax.plot([s], [p**s], "o", color="#1f6feb")
        ax.annotate(f"{p**s:.1%}", (s, p**s), textcoords="offset points", xytext=(4, 6), fontsize=8)
    ep = doc.get("episodes")
    if ep:
        ax.errorbar(
            [ep["mean_steps"]],
            [ep["observed_success"]],
            yerr=[  # never negative (matplotlib refuses it), whatever the document says
                [max(0.0, ep["observed_success"] - ep["observed_ci95"][0])],
                [max(0.0, ep["observed_ci95"][1] - ep["observed_success"])],
            ],
            fmt="s",
            color="#b42318",
            capsize=4,
            label="observed episode success",
        )
    if "target" in doc:
        ax.axhline(doc["target"]["compound"], ls="--", color="#6e7781", lw=1, label="target")
    ax.set(
        xlabel="steps per task (n)", ylabel="P(all n steps valid)", ylim=(0, 1.02), xlim=(1, top)
    )
    ax.grid(alpha=0.3)
    ax.legend(loc="lower left", fontsize=8)
    fig.tight_layout()
    buf = io.StringIO()
    fig.savefig(buf, format="svg", metadata={"Date": None})
    plt.close(fig)
    svg = buf.getvalue()
    return svg[svg.index("<svg") :]


_NUM_CELL = re.compile(r"<td>([0-9][0-9,.]*%?)</td>")


def _md_to_html(md: str) -> str:
    """The Markdown report as HTML, by a CommonMark renderer (markdown-it-py, which rich
    already depends on) with raw HTML off: the report's escaping is read exactly as a Markdown
    viewer reads it, and anything that still looked like a tag would be shown as text."""
    from markdown_it import MarkdownIt

    body = MarkdownIt("commonmark", {"html": False}).enable("table").render(md)
    body = _NUM_CELL.sub(r"<td class=n>\1</td>", body)
    body = body.replace("<strong>PASS</strong>", "<b class=pass>PASS</b>")
    return body.replace("<strong>FAIL</strong>", "<b class=fail>FAIL</b>")


def render_html(doc: dict) -> str:
    """The whole page: headline, chart, then the Markdown report's sections."""
    md = render_markdown(doc)
    body = _md_to_html(md.split("\n", 3)[3] if md.count("\n") > 3 else md)
    n = max(doc["steps"])
    title = html.escape(f"schemaops audit: {visible(doc['input'])}")
    return (
        f"<!doctype html><html lang=en><head><meta charset=utf-8><title>{title}</title>"
        f"<style>{CSS}</style></head><body><h1>{title}</h1>"
        f"<p>{html.escape(headline(doc))}</p>"
        f"<h2>Compound success vs steps</h2><p>If each step succeeds with p = {fmt_p(doc['p'])}"
        f" {fmt_ci(doc['p_ci95'])} independently, a task of n steps succeeds with p^n: "
        f"p^{n} = {fmt_p(doc['compound'][str(n)])}.</p>{chart_svg(doc)}{body}</body></html>\n"
    )


def write_html(doc: dict, path: str | Path) -> None:
    try:
        Path(path).write_text(render_html(doc), encoding="utf-8")
    except OSError as exc:
        raise InputError(f"cannot write {path}: {exc.strerror or exc}") from None
