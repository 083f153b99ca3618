"""``probe --registry schemas`` on the real SGLang 0.5.23 dev server: the ``tools.*`` paths
carry the shipped ``support_agent`` tool set beside the canary function (issue 35).

``tools.named`` names the canary function, so the grammar SGLang derives for the whole
request (the set's five functions compiled with it) must force its canary: ``enforced``. On
``tools.required`` the random model may call any of the six functions: a call to one of the
set's is no evidence about the canary (``inconclusive``), so the path is ``enforced`` or
``unproven``, never ``unconstrained`` (a grammar makes the name an enum).
"""

from __future__ import annotations

import pytest

from schemaops.devserver import DevServer
from schemaops.probe import ProbeSettings, run_probe

pytestmark = pytest.mark.integration


def test_tools_paths_probe_the_registry_tool_set(sglang_server: DevServer) -> None:
    settings = ProbeSettings(
        server=sglang_server.url,
        paths=["tools.named,tools.required"],
        registry="schemas",  # type: ignore[arg-type]
        canaries=2,
    )
    doc, _ = run_probe(settings)
    rows = {p["path"]: p for p in doc["paths"] if p.get("toolset")}
    assert set(rows) == {"tools.named", "tools.required"}, doc["paths"]
    assert all(r["toolset"] == "support_agent" for r in rows.values())
    assert "support_agent (5 tools)" in rows["tools.named"]["what"]
    assert rows["tools.named"]["verdict"] == "enforced", rows["tools.named"]
    assert rows["tools.required"]["verdict"] in ("enforced", "unproven"), rows["tools.required"]
