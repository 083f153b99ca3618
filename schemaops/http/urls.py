"""Server URLs: checked before any request, and shown without their credentials.

``--server http://user:pass@host:30000`` is a legitimate way to reach a server behind basic
auth: the URL is used as given for the requests (httpx sends the userinfo as an
``Authorization: Basic`` header), but every line a user or a log sees carries
``http://***@host:30000`` instead. ``scrub`` is the last line of defence for text that may
quote the URL (an exception message, a server's echo of the request, in any encoding:
``redact``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any
from urllib.parse import urlsplit

from schemaops.http.redact import redactor, url_secrets

EXAMPLE = "http://127.0.0.1:30000"


def check_server_url(url: str) -> str | None:
    """Why ``url`` cannot be a ``--server`` base URL, or ``None`` when it can.

    Catches what would otherwise surface as a traceback mid-run: no scheme or host, a port
    outside 1..65535, an unclosed IPv6 bracket, characters httpx refuses.
    """
    import httpx  # here, not at the top: the audit imports this module for ``scrub`` alone

    shown = redact(url)
    try:
        parts = urlsplit(url)
        port = parts.port  # raises ValueError for "99999" or "x"
        httpx.URL(url)
    except (ValueError, httpx.InvalidURL) as exc:
        return f"--server {shown!r} is not a valid URL ({scrub(str(exc), [url])})"
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return f"--server {shown!r} is not an http(s) URL (e.g. {EXAMPLE})"
    if port is not None and not 1 <= port <= 65535:
        return f"--server {shown!r}: port {port} is outside 1..65535"
    return None


def redact(url: str) -> str:
    """``url`` with any ``user:password@`` replaced by ``***@`` (safe to print)."""
    try:
        parts = urlsplit(url)
    except ValueError:
        parts = None
    netloc = parts.netloc if parts is not None else ""
    if "@" not in netloc:
        # urlsplit may have failed on a malformed URL that still carries credentials
        head, sep, rest = url.partition("://")
        if sep and "@" in rest.split("/", 1)[0]:
            host = rest.split("/", 1)[0].rsplit("@", 1)[1]
            tail = rest[len(rest.split("/", 1)[0]) :]
            return f"{head}://***@{host}{tail}"
        return url
    host = netloc.rsplit("@", 1)[1]
    return parts._replace(netloc=f"***@{host}").geturl()  # type: ignore[union-attr]


def secrets(url: str) -> list[str]:
    """The credential strings in ``url`` (raw and percent-decoded, and the Basic token httpx
    sends for them), longest first (``redact.url_secrets``)."""
    return url_secrets(url)


def scrub(text: str, urls: list[str], extra: Sequence[str] = ()) -> str:
    """``text`` with each URL redacted and every form of any credential of ``urls``, and of
    each string of ``extra`` (header values: ``auth.Auth.secrets``), replaced by ``***``
    (raw, Basic token, percent-, HTML- and JSON-escaped, a cut-off prefix: ``redact``)."""
    for url in urls:
        text = text.replace(url, redact(url))
    return redactor(urls, extra).text(text)


def scrub_all(value: Any, urls: list[str], extra: Sequence[str] = ()) -> Any:
    """``scrub`` every string inside a JSON-like value (dicts, lists, strings; keys too)."""
    return redactor(urls, extra).value(value)
