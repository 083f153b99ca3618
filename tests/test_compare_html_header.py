"""The compare HTML report's settings line is prose (issue 34 item 9): it showed Python reprs
(``host={'cpus': 2, 'usable': 2}``, ``limit=None``)."""

from __future__ import annotations

from schemaops.compare.report_html import settings_text


def test_settings_line_has_no_python_reprs() -> None:
    text = settings_text(
        {
            "timeout_s": 60.0,
            "mem_mb": 4096,
            "jobs": 2,
            "limit": None,
            "generate": 0,
            "compile_threads": None,
            "host": {"cpus": 16, "usable": 4},
            "ray": {"address": "10.0.0.5:6379", "nodes": 2, "cpus": 32},
        }
    )
    for repr_ in ("{", "}", "None", "'", "="):
        assert repr_ not in text, text
    assert "timeout 60 s" in text and "memory cap 4096 MB" in text and "2 jobs" in text
    assert "host 16 CPU(s) (4 usable)" in text
    assert "Ray 10.0.0.5:6379 (2 nodes, 32 CPUs)" in text
    assert "limit" not in text and "compile threads" not in text  # not set: not shown
