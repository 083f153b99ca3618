"""vLLM's HTTP 400 for a server configuration problem is ``failed`` with a hint, not
``invalid`` (which in warm means the schema failed to compile, cached as such on SGLang).

The messages are vLLM 0.32.0's own, as the real dev server answered them (quoted in
``tests/integration/test_vllm_warm.py``, which sees them end to end); the compile failures
were answered by the same server (xgrammar backend) to ``response_format`` requests.
"""

from __future__ import annotations

import pytest

from schemaops.http.client import Attempt, Result
from schemaops.http.retry import AttemptOutcome
from schemaops.warm.engine import Cell

CONFIG = {
    "named tool": 'tool_choice=function "get_order" requires --tool-call-parser to be set',
    "required": 'tool_choice="required" requires --tool-call-parser to be set',
    "auto": '"auto" tool choice requires --enable-auto-tool-choice and --tool-call-parser '
    "to be set",
    "dp rank": "data_parallel_rank 1 is out of range [0, 1).",
}
COMPILE = {
    "ref": "Failed to transform json schema into a grammar: [17:06:01] <path>:4950: Cannot "
    "find field $defs in #/$defs/nope",
    "pattern": "Failed to transform json schema into a grammar: [17:06:01] <path>:83: Regex "
    "parsing error at position 3: Unclosed '['",
    "type": "Failed to transform json schema into a grammar: [17:06:01] <path>:4944: "
    'Unsupported type "frobnicate"',
}


def _cell_after_400(message: str) -> Cell:
    cell = Cell()
    cell.record(Result(Attempt(AttemptOutcome.VERDICT, 400, 12.0, f"HTTP 400: {message}"), 1))
    return cell


@pytest.mark.parametrize("message", CONFIG.values(), ids=CONFIG.keys())
def test_server_configuration_400_is_failed_with_a_hint(message: str) -> None:
    cell = _cell_after_400(message)
    assert cell.status == "failed"
    assert cell.error is not None and message in cell.error
    assert "server configuration problem, not the schema" in cell.error


def test_the_dp_hint_names_the_servers_rank_count() -> None:
    cell = _cell_after_400("data_parallel_rank 3 is out of range [0, 2).")
    assert cell.error is not None and "pass --dp 2" in cell.error


@pytest.mark.parametrize("message", COMPILE.values(), ids=COMPILE.keys())
def test_a_compile_failure_stays_invalid(message: str) -> None:
    cell = _cell_after_400(message)
    assert cell.status == "invalid" and cell.error == f"HTTP 400: {message}"
