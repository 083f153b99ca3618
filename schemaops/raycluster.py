"""The one way schemaops reaches a Ray cluster (``--ray [ADDRESS]`` on compare, check, audit).

Why a module of its own: every command that scales out needs the same four answers, and they
must be the same everywhere:

- Ray is an optional extra. Without it, ``--ray`` is a usage error (exit 2) that says how to
  install it (``require_ray``), never an ``ImportError`` traceback.
- Which cluster: ``None``/``"auto"`` is the running cluster (``RAY_ADDRESS`` if set, else the
  one ``ray start`` recorded on this machine); ``"local"`` starts a private single-node Ray
  for this run only (asked for by name, never as a fallback: a typo in an address must not
  silently run everything on the laptop); anything else is ``HOST:PORT`` of a head node
  (GCS) or ``ray://HOST:PORT`` (Ray Client).
- A cluster that is not there is a bounded, clean exit 2: a TCP probe first (a refused or
  unroutable address fails in seconds; ``ray.init`` alone retries for minutes), then
  ``ray.init`` under a deadline.
- An address may carry credentials (``ray://user:secret@host``); messages show it redacted.
  Ray's token (``RAY_AUTH_TOKEN``/``RAY_AUTH_TOKEN_PATH``, on by default since Ray 2.5x) is
  read by Ray itself and never printed by us.

``map_tasks`` runs one remote function over payloads, feeds a progress callback as tasks
finish (``ray.wait``), and returns one result per payload in input order: a task Ray gave
up on after its retries (its node died again and again) is turned into a result by the
caller's ``lost`` function, so nothing is lost or counted twice.
"""

from __future__ import annotations

import os
import re
import threading
from collections.abc import Callable, Sequence
from typing import Any
from urllib.parse import urlsplit

from schemaops.errors import InputError

INSTALL_HINT = "pip install 'schemaops[ray]'"
LOCAL = "local"
# ray.init against a head that accepts TCP but never answers (a wrong port, a firewall that
# drops) retries for minutes; this bounds it. SCHEMAOPS_RAY_CONNECT_TIMEOUT overrides.
CONNECT_TIMEOUT_S = 60.0
PROBE_TIMEOUT_S = 5.0
GCS_DEFAULT_PORT = 6379
CLIENT_DEFAULT_PORT = 10001
# Ray's default for tasks; a task whose node dies is rescheduled up to this many times.
TASK_RETRIES = 3


# What may follow a bare ``--ray`` as its address (anything else is the next argument).
_ADDRESS = re.compile(r"^(auto|local|ray://\S+|\[?[\w.\-:]+\]?:\d{1,5})$", re.IGNORECASE)


def normalise_ray_flag(argv: list[str]) -> list[str]:
    """``--ray`` given without an address means ``--ray auto``.

    typer has no option with an optional value, so the entry point rewrites argv: ``--ray``
    followed by nothing, by an option, or by something that is not an address (``auto``,
    ``local``, ``HOST:PORT``, ``ray://...``; audit's positional paths, say) gets ``auto``.
    ``--ray=ADDRESS`` is never rewritten.
    """
    out: list[str] = []
    for i, arg in enumerate(argv):
        if arg == "--":
            return out + argv[i:]
        out.append(arg)
        if arg == "--ray":
            nxt = argv[i + 1] if i + 1 < len(argv) else None
            if nxt is None or not _ADDRESS.match(nxt):
                out.append("auto")
    return out


def require_ray() -> Any:
    """The ``ray`` module, or ``InputError`` (exit 2) saying how to install it."""
    try:
        import ray
    except ImportError as exc:
        missing = getattr(exc, "name", None) or "ray"
        raise InputError(
            f"--ray needs the Ray extra ({missing} is not importable): {INSTALL_HINT}"
        ) from None
    return ray


def redact_address(address: str) -> str:
    """``address`` with any ``user:password@`` and query string replaced, for messages."""
    if "@" not in address and "?" not in address:
        return address
    scheme, sep, rest = address.partition("://")
    if not sep:
        scheme, rest = "", address
    host = rest.rsplit("@", 1)[-1].split("?", 1)[0]
    shown = ("***@" if "@" in rest else "") + host + ("?***" if "?" in rest else "")
    return f"{scheme}://{shown}" if sep else shown


def resolve_address(address: str | None) -> str | None:
    """The address to connect to; None means "start a private local Ray" (``local``).

    ``None``/``""``/``"auto"``: ``RAY_ADDRESS`` if set, else the cluster ``ray start``
    recorded on this machine; no running cluster is an ``InputError``, not a new one.
    """
    addr = (address or "").strip()
    if addr.lower() == LOCAL:
        return None
    if addr and addr.lower() != "auto":
        return addr
    env = os.environ.get("RAY_ADDRESS", "").strip()
    if env and env.lower() != "auto":
        return env
    try:
        from ray._private.services import get_ray_address_from_environment

        found = get_ray_address_from_environment("auto", None)
    except Exception:  # a private API: if it moved, say what to do instead
        found = None
    if not found or found == "auto":
        raise InputError(
            "--ray: no running Ray cluster found on this machine; give its address "
            "(--ray HOST:PORT), set RAY_ADDRESS, or use --ray local for a one-off local Ray"
        )
    return str(found)


def _host_port(address: str) -> tuple[str, int]:
    """(host, port) of ``HOST:PORT``, ``ray://[user@]HOST:PORT`` or ``[v6]:PORT``."""
    client = address.startswith("ray://")
    try:
        # both raise ValueError: urlsplit on an unclosed IPv6 bracket ("[::1"), port on "x"
        parts = urlsplit(address if "://" in address else f"gcs://{address}")
    except ValueError:
        raise InputError(
            f"--ray: {redact_address(address)} is not HOST:PORT or ray://HOST:PORT "
            "(an IPv6 host is written [ADDR]:PORT)"
        ) from None
    try:
        port = parts.port
    except ValueError:
        raise InputError(f"--ray: bad port in {redact_address(address)}") from None
    if not parts.hostname:
        raise InputError(f"--ray: {redact_address(address)} is not HOST:PORT or ray://HOST:PORT")
    return parts.hostname, port or (CLIENT_DEFAULT_PORT if client else GCS_DEFAULT_PORT)


def probe(address: str, timeout_s: float = PROBE_TIMEOUT_S) -> None:
    """Fail fast (``InputError``) when nothing accepts TCP at the head's address."""
    import socket  # imported here: only a --ray run probes

    host, port = _host_port(address)
    try:
        with socket.create_connection((host, port), timeout=timeout_s):
            pass
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
        if isinstance(exc, TimeoutError):
            reason = f"no answer in {timeout_s:g} s"
        raise InputError(
            f"--ray: cannot reach the Ray cluster at {redact_address(address)} ({reason})"
        ) from None


def _connect_timeout() -> float:
    try:
        return float(os.environ.get("SCHEMAOPS_RAY_CONNECT_TIMEOUT", CONNECT_TIMEOUT_S))
    except ValueError:
        return CONNECT_TIMEOUT_S


def connect(address: str | None = None, *, timeout_s: float | None = None) -> dict[str, Any]:
    """Connect this process to a Ray cluster (once; a second call reuses the connection).

    Returns what a report may show: ``{"address", "nodes", "cpus"}`` (the address
    redacted; ``local`` for a private local Ray). Raises ``InputError`` (exit 2) when Ray
    is missing, no cluster is found, or the cluster does not answer in time.
    """
    ray = require_ray()
    if ray.is_initialized():
        return cluster_info(ray, redact_address(address or "auto"))
    target = resolve_address(address)
    shown = LOCAL if target is None else redact_address(target)
    if target is not None:
        probe(target)
    kwargs: dict[str, Any] = {
        "log_to_driver": False,  # workers' prints would interleave with progress on stderr
        "logging_level": "error",  # not Ray's notes (e.g. no SIGTERM handler off main thread)
        "configure_logging": True,
    }
    if target is None:  # Ray's "local": a new instance even if a cluster runs here
        kwargs.update(address="local", include_dashboard=False)
    else:
        kwargs["address"] = target
    failure: list[BaseException] = []

    def init() -> None:
        try:
            ray.init(**kwargs)
        except BaseException as exc:  # reported below, in the caller's thread
            failure.append(exc)

    if target is None:
        # In this thread: Ray starts its GCS and raylet as children with a parent-death
        # signal, which Linux sends when the *thread* that started them ends.
        try:
            ray.init(**kwargs)
        except Exception as exc:
            raise InputError(
                f"--ray local: Ray did not start: {type(exc).__name__}: {exc}"
            ) from None
        return cluster_info(ray, shown)
    limit = timeout_s if timeout_s is not None else _connect_timeout()
    t = threading.Thread(target=init, name="schemaops-ray-init", daemon=True)
    t.start()
    t.join(limit)
    if t.is_alive():
        raise InputError(f"--ray: the Ray cluster at {shown} did not answer in {limit:g} s")
    if failure:
        exc = failure[0]
        first = (str(exc).strip().splitlines() or [""])[0][:300]
        if target is not None:
            first = first.replace(target, shown)
            userinfo = target.split("://", 1)[-1].rsplit("@", 1)[0] if "@" in target else ""
            if userinfo:
                first = first.replace(userinfo, "***")
        raise InputError(
            f"--ray: cannot connect to the Ray cluster at {shown}: {type(exc).__name__}: {first}"
        )
    return cluster_info(ray, shown)


def cluster_info(ray: Any, shown: str) -> dict[str, Any]:
    """``{"address", "nodes", "cpus"}`` of the connected cluster (alive nodes only)."""
    try:
        nodes = [n for n in ray.nodes() if n.get("Alive")]
        cpus = int(ray.cluster_resources().get("CPU", 0))
    except Exception:
        nodes, cpus = [], 0
    return {"address": shown, "nodes": len(nodes), "cpus": cpus}


def disconnect() -> None:
    """Leave the cluster (a no-op without Ray or a connection); the cluster keeps running."""
    try:
        import ray
    except ImportError:
        return
    if ray.is_initialized():
        ray.shutdown()


def map_tasks(
    remote_fn: Any,
    payloads: Sequence[Any],
    *,
    lost: Callable[[Any, BaseException], Any],
    progress: Callable[[int, int, Any], None] | None = None,
    max_retries: int = TASK_RETRIES,
    num_cpus: float = 1,
) -> list[Any]:
    """Run ``remote_fn(payload)`` as one Ray task per payload; results in input order.

    ``remote_fn`` is a plain module-level function (Ray pickles it by reference).
    ``progress(done, total, result)`` is called in this thread as each task finishes.
    A task whose worker or node died is retried by Ray up to ``max_retries`` times (on
    another node when its node is gone); one that still fails, or raises, becomes
    ``lost(payload, exception)``. Every payload yields exactly one result: a retried task
    returns through the same object reference, so it is never counted twice.
    """
    ray = require_ray()
    task = ray.remote(remote_fn).options(
        num_cpus=num_cpus, max_retries=max_retries, retry_exceptions=False
    )
    refs = [task.remote(p) for p in payloads]
    index = {ref: i for i, ref in enumerate(refs)}
    results: list[Any] = [None] * len(refs)
    filled = [False] * len(refs)
    pending = list(refs)
    done = 0
    while pending:
        ready, pending = ray.wait(pending, num_returns=1)
        for ref in ready:
            i = index[ref]
            try:
                res = ray.get(ref)
            except Exception as exc:  # RayTaskError, WorkerCrashedError, NodeDiedError...
                res = lost(payloads[i], exc)
            if filled[i]:  # cannot happen with one reference per payload; never double count
                continue
            results[i], filled[i] = res, True
            done += 1
            if progress is not None:
                progress(done, len(refs), res)
    return results
