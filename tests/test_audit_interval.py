"""The Wilson interval at its ends, and the reports that draw it.

With no success the interval's lower bound is exactly 0, with no failure its upper bound
exactly 1; computed in floating point they missed by ~1e-17 for about a third of all sample
sizes, so an observed 0 % (or 100 %) lay outside its own interval, and ``--html`` crashed on
an agent log whose every episode failed (or succeeded): matplotlib refuses a negative
error-bar length. Found by feeding the audit random records."""

from __future__ import annotations

import json
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st
from typer.testing import CliRunner

from schemaops.audit.tally.stats import wilson
from schemaops.cli import app

REPO = Path(__file__).resolve().parents[1]


def test_the_ends_are_exact_for_every_sample_size() -> None:
    for n in range(1, 3001):
        assert wilson(0, n)[0] == 0.0, n
        assert wilson(n, n)[1] == 1.0, n


@given(st.integers(1, 10**6).flatmap(lambda n: st.tuples(st.integers(0, n), st.just(n))))
def test_the_interval_holds_the_observed_rate(case: tuple[int, int]) -> None:
    ok, n = case
    lower, upper = wilson(ok, n)
    assert 0.0 <= lower <= ok / n <= upper <= 1.0


def _episodes(path: Path, text: str, n: int) -> None:
    rows = [
        {"schema": "get_order", "text": text, "episode_id": f"e{e}", "step": s}
        for e in range(n)
        for s in range(3)
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")


def test_html_draws_a_log_whose_every_episode_failed_or_succeeded(tmp_path: Path) -> None:
    good = json.dumps({"order_id": "ORD-12345678"})
    # 3 and 10 episodes: sample sizes where the computed ends missed (lower 5.6e-17 at 3,
    # upper below 1 at 10)
    for text, n in (("{", 3), (good, 10)):
        log, page = tmp_path / f"{n}.jsonl", tmp_path / f"{n}.html"
        _episodes(log, text, n)
        result = CliRunner().invoke(
            app,
            ["audit", str(log), "--registry", str(REPO / "schemas"), "--html", str(page)]
            + ["--episode-field", "episode_id", "--step-field", "step", "--json"],
            catch_exceptions=False,
        )
        assert result.exit_code == 0, result.output
        ep = json.loads(result.stdout)["episodes"]
        seen = 1.0 if text == good else 0.0
        assert ep["episodes"] == n and ep["observed_success"] == seen
        assert seen in ep["observed_ci95"]  # the exact end, not 1e-17 beside it
        assert "<svg" in page.read_text(encoding="utf-8")
