"""A self-contained HTML compare report: tables plus matplotlib plots as base64 PNGs.

Self-contained on purpose: the file is attached to CI runs and mailed around, so it must not
reference anything outside itself (no CDN scripts, no image files next to it).
"""

from __future__ import annotations

import base64
import html
import io
from pathlib import Path
from typing import Any

from schemaops.compare.report import STATUSES, CompareReport, keyword_cell, verdict_of
from schemaops.errors import InputError

_COLORS = {"xgrammar": "#4c72b0", "llguidance": "#55a868", "outlines": "#c44e52"}
_STATUS_COLORS = {
    "ok": "#55a868",
    "unsupported": "#8172b2",
    "error": "#c44e52",
    "timeout": "#dd8452",
    "crash": "#000000",
    "oom": "#937860",
}


def _plt() -> Any:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as exc:  # pragma: no cover - depends on the install
        raise InputError("--html needs matplotlib: pip install 'schemaops[report]'") from exc
    return plt


def _png(fig: Any) -> str:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=110, bbox_inches="tight")
    _plt().close(fig)
    return base64.b64encode(buf.getvalue()).decode("ascii")


def plot_compile(report: CompareReport) -> str:
    """Compile-time distribution per backend: an ECDF on a log axis (tails stay visible)."""
    plt = _plt()
    fig, ax = plt.subplots(figsize=(7, 3.6))
    drawn = 0
    for b, rs in report.by_backend().items():
        xs = sorted(
            float(r["compile_ms"])
            for r in rs
            if r.get("status") == "ok" and isinstance(r.get("compile_ms"), (int, float))
        )
        if not xs:
            continue
        n_all = max(len(rs), 1)
        ys = [(i + 1) / n_all for i in range(len(xs))]
        ax.step([max(x, 1e-3) for x in xs], ys, where="post", label=b, color=_COLORS.get(b))
        drawn += 1
    if not drawn:
        ax.text(0.5, 0.5, "no schema compiled", ha="center", va="center", transform=ax.transAxes)
        ax.set_xlim(0.1, 1000)
    ax.set_xscale("log")
    ax.set_xlabel("cold compile time (ms, log)")
    ax.set_ylabel("fraction of schemas compiled")
    ax.set_ylim(0, 1.02)
    ax.grid(True, which="both", alpha=0.3)
    if drawn:
        ax.legend(loc="lower right")
    ax.set_title("Compile-time distribution per backend")
    return _png(fig)


def plot_mask(report: CompareReport) -> str:
    """Per-token mask time percentiles per backend (grouped bars, log axis)."""
    plt = _plt()
    summ = report.summary()
    fig, ax = plt.subplots(figsize=(7, 3.6))
    keys = [("p50", "p50 (median schema)"), ("median_p99", "p99 (median schema)"), ("p99", "p99")]
    width = 0.8 / len(keys)
    names = list(summ)
    for i, (k, label) in enumerate(keys):
        vals = [summ[b]["mask_us"].get(k) or 0.0 for b in names]
        ax.bar([j + i * width for j in range(len(names))], vals, width, label=label)
    ax.set_xticks([j + width * (len(keys) - 1) / 2 for j in range(len(names))], names)
    ax.set_yscale("symlog", linthresh=1.0)
    ax.set_ylabel("mask time per token (µs)")
    ax.legend(fontsize=8)
    ax.set_title("Per-token mask time")
    ax.grid(True, axis="y", alpha=0.3)
    return _png(fig)


def plot_coverage(report: CompareReport) -> str:
    """Compile status per backend as stacked horizontal bars: coverage at a glance."""
    plt = _plt()
    summ = report.summary()
    fig, ax = plt.subplots(figsize=(7, 0.6 + 0.6 * max(len(summ), 1)))
    names = list(summ)
    left = [0.0] * len(names)
    for st in STATUSES:
        vals = [
            (summ[b]["status"].get(st, 0) / summ[b]["schemas"]) if summ[b]["schemas"] else 0.0
            for b in names
        ]
        if not any(vals):
            continue
        ax.barh(names, vals, left=left, label=st, color=_STATUS_COLORS[st])
        left = [a + v for a, v in zip(left, vals, strict=True)]
    ax.set_xlim(0, 1)
    ax.set_xlabel("fraction of schemas")
    ax.legend(loc="center left", bbox_to_anchor=(1.0, 0.5), fontsize=8)
    ax.set_title("Coverage (compile status)")
    return _png(fig)


def _fmt(x: Any, nd: int = 1) -> str:
    return "–" if x is None else f"{x:,.{nd}f}" if isinstance(x, float) else html.escape(str(x))


def _summary_rows(report: CompareReport) -> str:
    rows = []
    for b, s in report.summary().items():
        e = s["enforcement"]
        cov = f"{s['ok']}/{s['schemas']}" + (
            f" ({s['coverage']:.0%})" if s["coverage"] is not None else ""
        )
        bad = ", ".join(f"{k} {v}" for k, v in s["status"].items() if k != "ok") or "–"
        cells = [
            b,
            cov,
            _fmt(s["compile_ms"]["p50"]),
            _fmt(s["compile_ms"]["p90"]),
            _fmt(s["compile_ms"]["p99"]),
            _fmt(s["mask_us"]["p50"]),
            _fmt(s["mask_us"]["p99"]),
            f"{e['enforced']} / {e['accepts_invalid']} / {e['rejects_valid']} / {e['unchecked']}",
            f"{s['rejects_valid_content']} / {s['accepted_retokenized']}",
            bad,
        ]
        rows.append("<tr>" + "".join(f"<td>{html.escape(str(c))}</td>" for c in cells) + "</tr>")
    return "\n".join(rows)


def _schema_rows(report: CompareReport, limit: int = 500) -> str:
    idx = {(str(r.get("schema")), r.get("backend")): r for r in report.results}
    rows = []
    for name in report.schemas()[:limit]:
        cells = [f"<td>{html.escape(name)}</td>"]
        for b in report.backends:
            r = idx.get((name, b))
            if r is None:
                cells.append("<td>–</td>")
                continue
            st = html.escape(str(r.get("status", "?")))
            if st != "ok":
                err = html.escape(str(r.get("error") or "")[:300])
                cells.append(f'<td class="{st}" title="{err}">{st}</td>')
                continue
            v = verdict_of(r)
            mask = (r.get("mask_us") or {}).get("p50")
            cells.append(
                f'<td class="{v}">{_fmt(r.get("compile_ms"))} ms · {_fmt(mask)} µs<br>{v}</td>'
            )
        rows.append("<tr>" + "".join(cells) + "</tr>")
    return "\n".join(rows)


def _keyword_rows(report: CompareReport) -> str:
    rows = []
    for kw, cells in report.keywords().items():
        tds = [f"<td>{html.escape(kw)}</td>"]
        tds += [f"<td>{keyword_cell(cells.get(b), '–')}</td>" for b in report.backends]
        rows.append("<tr>" + "".join(tds) + "</tr>")
    return "\n".join(rows)


_CSS = """
body{font-family:system-ui,sans-serif;margin:2em;max-width:1100px;color:#222}
table{border-collapse:collapse;margin:1em 0;font-size:.9em}
td,th{border:1px solid #ccc;padding:.3em .6em;text-align:left;vertical-align:top}
th{background:#f3f3f3}.enforced,.ok{background:#e7f5ea}.accepts_invalid,.timeout,.crash,
.oom,.error,.failed{background:#fbe4e4}.rejects_valid{background:#fff5d6}.unsupported{background:#eee8f7}
img{max-width:100%;display:block;margin:1em 0}.rec{background:#f0f6ff;padding:1em;border-radius:6px}
"""


#: a setting's words: (label, unit) around its value; the order is the report's
_SETTING_WORDS = {
    "timeout_s": ("timeout", " s"),
    "mem_mb": ("memory cap", " MB"),
    "limit": ("first", " schemas"),
    "generate": ("generated instances", ""),
    "compile_threads": ("compile threads", ""),
}


def settings_text(settings: dict[str, Any]) -> str:
    """The run's settings as words (``timeout 60 s, 2 jobs, host 16 CPU(s) (4 usable)``);
    a setting left unset (``None``) is not shown."""
    parts = []
    for key, value in settings.items():
        if value is None:
            continue
        if key == "jobs":
            parts.append(f"{value} jobs")
        elif key == "host" and isinstance(value, dict):
            usable = value.get("usable")
            extra = f" ({usable} usable)" if usable and usable != value.get("cpus") else ""
            parts.append(f"host {value.get('cpus')} CPU(s){extra}")
        elif key == "ray" and isinstance(value, dict):
            parts.append(
                f"Ray {value.get('address')} ({value.get('nodes')} nodes, {value.get('cpus')} CPUs)"
            )
        elif key in _SETTING_WORDS:
            label, unit = _SETTING_WORDS[key]
            shown = f"{value:g}" if isinstance(value, float) else str(value)
            parts.append(f"{label} {shown}{unit}")
        else:
            parts.append(f"{key.replace('_', ' ')} {value}")
    return ", ".join(parts)


def render_html(report: CompareReport) -> str:
    """The whole report as one HTML string with the three plots embedded."""
    rec = report.recommendation or {}
    rec_html = ""
    if rec:
        items = "".join(f"<li>{html.escape(r)}</li>" for r in rec.get("reasons", []))
        trade = "".join(f"<li>{html.escape(r)}</li>" for r in rec.get("tradeoffs", []))
        rec_html = (
            f'<div class="rec"><h2>Recommendation: {html.escape(str(rec.get("backend")))}</h2>'
            f"<ul>{items}</ul>"
            + (f"<h3>Trade-offs</h3><ul>{trade}</ul>" if trade else "")
            + "</div>"
        )
    head = "".join(f"<th>{html.escape(b)}</th>" for b in report.backends)
    plots = "".join(
        f'<img alt="{alt}" src="data:image/png;base64,{fn(report)}">'
        for alt, fn in (
            ("compile-time distribution", plot_compile),
            ("mask-time percentiles", plot_mask),
            ("coverage", plot_coverage),
        )
    )
    settings = html.escape(settings_text(report.settings))
    kw_rows = _keyword_rows(report)
    kw_html = (
        "<h2>Per keyword</h2><p>invalid examples violating the keyword: refused / let "
        "through to a stop / schema did not compile</p>"
        f"<table><tr><th>keyword</th>{head}</tr>{kw_rows}</table>"
        if kw_rows
        else ""
    )
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<title>schemaops compare: {html.escape(report.source)}</title><style>{_CSS}</style></head><body>
<h1>Backend comparison: {html.escape(report.source)}</h1>
<p>tokenizer {html.escape(report.tokenizer)}; {settings}</p>
{rec_html}
<h2>Summary</h2>
<table><tr><th>backend</th><th>coverage</th><th>compile p50 ms</th><th>p90</th><th>p99</th>
<th>mask p50 µs</th><th>mask p99 µs</th><th>enforced / accepts_invalid / rejects_valid /
unchecked</th><th title="valid examples refused inside a non-ASCII string under every
tokenization tried / produced only by another tokenization">non-ASCII rejected /
retokenized</th><th>not ok</th></tr>
{_summary_rows(report)}</table>
<h2>Plots</h2>
{plots}
{kw_html}
<h2>Per schema</h2><p>compile ms · mask p50 µs/token, then the enforcement verdict</p>
<table><tr><th>schema</th>{head}</tr>
{_schema_rows(report)}</table>
</body></html>
"""


def write_html(report: CompareReport, path: str | Path) -> Path:
    """Write the report; raises InputError when the file cannot be written."""
    out = Path(path)
    try:
        out.write_text(render_html(report), encoding="utf-8")
    except OSError as exc:
        raise InputError(f"cannot write {out}: {exc}") from exc
    return out
