"""Dev-server lifecycle checks folded into tests that kill and restart a server anyway.

A fresh SGLang server costs about a minute to start on 2 cores: the kill/restart and stop
checks ride on the tests whose scenario already kills, restarts or stops one (the Kubernetes
sidecar test, the dp-2 warm test) instead of starting servers of their own.
"""

from __future__ import annotations

import json
from collections.abc import Callable

import httpx

from schemaops.devserver import DevServer
from schemaops.devserver.launcher import group_members


def health(url: str) -> int:
    """``/health``'s status code, 0 when nothing answers."""
    try:
        return httpx.get(url + "/health", timeout=10).status_code
    except httpx.HTTPError:
        return 0


def kill_then_restart(server: DevServer, between: Callable[[], None] = lambda: None) -> None:
    """SIGKILL leaves no process of the group; restart keeps the URL with a new process."""
    url, first_pid = server.url, server.pid
    assert first_pid is not None
    server.kill()
    assert not server.is_running()
    assert group_members(first_pid) == []
    assert health(url) == 0
    between()
    server.restart()
    assert server.url == url and server.pid not in (None, first_pid)
    assert health(url) == 200


def stop_leaves_nothing(server: DevServer) -> None:
    """stop() ends the whole process group (scheduler, detokenizer, helpers) and the URL."""
    pid = server.pid
    assert pid is not None
    server.stop()
    assert group_members(pid) == []
    assert health(server.url) == 0


OK_BOOLEAN = {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}


def enforces_ok_boolean(url: str, max_new_tokens: int, *, rank: int | None = None) -> None:
    """One /generate with a one-boolean schema: HTTP 200 and exactly {"ok": true|false}."""
    body: dict = {
        "text": "x",
        "sampling_params": {
            "max_new_tokens": max_new_tokens,
            "temperature": 0,
            "json_schema": json.dumps(OK_BOOLEAN),
        },
    }
    if rank is not None:
        body["routed_dp_rank"] = rank
    resp = httpx.post(url + "/generate", json=body, timeout=300)
    assert resp.status_code == 200, resp.text
    assert json.loads(resp.json()["text"]) in ({"ok": True}, {"ok": False})
