"""Credentials for servers behind an API key or a gateway: sent on every request, never shown.

``--api-key`` (or ``SCHEMAOPS_API_KEY``, which keeps the key out of shell history and ``ps``)
becomes ``Authorization: Bearer KEY``, what SGLang's and vLLM's own ``--api-key`` and most
OpenAI-compatible gateways read. ``--header 'Name: value'`` (repeatable) adds any other header
a gateway wants (``X-Api-Key``, a tenant, ``Authorization: Basic ...``). Both go out with every
request of ``warm`` and ``probe``, readiness checks included, because a gateway may guard them
too.

What makes them safe to pass: ``Auth.secrets`` lists every value (and the token after an
``Authorization`` scheme), and ``urls.scrub``/``scrub_all`` (``redact.Redactor``) replace each,
in any form a server may echo it, with ``***`` in messages, reports and ``--json``; header
values are checked before any request (printable, one line), so httpx never raises an error
that quotes one; no error here quotes a value.
Values shorter than ``MIN_SECRET`` characters are sent but not scrubbed (scrubbing ``1``
everywhere would wreck the report; such a value is no secret).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field

from schemaops.errors import InputError

ENV_KEY = "SCHEMAOPS_API_KEY"
MIN_SECRET = 4
# RFC 9110 token characters for a field name
_NAME = re.compile(r"^[!#$%&'*+.^_`|~0-9A-Za-z-]+$")
# what a field value may hold here: visible ASCII, spaces and tabs inside (one line, no CR/LF)
_VALUE = re.compile(r"^[\x21-\x7e]([\x20-\x7e\t]*[\x21-\x7e])?$")
# headers httpx sets from the request itself: overriding them breaks the exchange
_RESERVED = frozenset({"host", "content-length", "transfer-encoding", "connection"})
HINT = "pass --api-key (or set SCHEMAOPS_API_KEY) or --header 'Name: value'"


@dataclass(frozen=True)
class Auth:
    """The extra headers of every request, and the strings that must never be printed."""

    headers: dict[str, str] = field(default_factory=dict)

    @property
    def given(self) -> bool:
        return bool(self.headers)

    def secrets(self) -> list[str]:
        """Every header value (and an ``Authorization`` value's token), longest first."""
        found: set[str] = set()
        for value in self.headers.values():
            found.add(value)
            scheme, _, token = value.partition(" ")
            if token.strip():
                found.add(token.strip())
        return sorted((s for s in found if len(s) >= MIN_SECRET), key=len, reverse=True)

    def denied(self, status: int) -> str:
        """What a 401/403 means for this run (no value is quoted)."""
        if self.given:
            names = ", ".join(sorted(self.headers))
            return (
                f"HTTP {status}: the server refused the credentials sent ({names}); check "
                f"them, or {HINT}"
            )
        return f"HTTP {status}: the server requires credentials; {HINT}"


def parse_header(text: str) -> tuple[str, str]:
    """``'Name: value'`` -> (name, value); ``InputError`` (exit 2) that never quotes the value."""
    name, sep, value = text.partition(":")
    name, value = name.strip(), value.strip()
    if not sep or not _NAME.match(name):
        shown = name if _NAME.match(name) else "(not a header name)"
        raise InputError(f"--header {shown}: expected 'Name: value' (a token name, a colon)")
    if name.lower() in _RESERVED:
        raise InputError(f"--header {name}: set by the HTTP client itself; cannot be given")
    if not _VALUE.match(value):
        raise InputError(
            f"--header {name}: the value must be one line of printable ASCII, not empty "
            "(the value is not shown)"
        )
    return name, value


def build_auth(api_key: str | None = None, headers: list[str] | None = None) -> Auth:
    """The ``Auth`` of ``--api-key`` / ``SCHEMAOPS_API_KEY`` and ``--header`` options.

    ``api_key`` None reads the environment; an empty string means none. A ``--header
    Authorization`` together with an API key is a contradiction (exit 2), not a silent pick.
    """
    key = os.environ.get(ENV_KEY) if api_key is None else api_key
    out: dict[str, str] = {}
    for h in headers or []:
        name, value = parse_header(h)
        for old in [k for k in out if k.lower() == name.lower()]:
            del out[old]  # the last one given wins, as with curl
        out[name] = value
    key = (key or "").strip()
    if key:
        if not _VALUE.match(key) or " " in key or "\t" in key:
            raise InputError(
                "--api-key / SCHEMAOPS_API_KEY: the key must be printable ASCII without spaces "
                "(the key is not shown)"
            )
        if any(k.lower() == "authorization" for k in out):
            raise InputError("--api-key and --header Authorization both set it: give one")
        out["Authorization"] = f"Bearer {key}"
    return Auth(out)
