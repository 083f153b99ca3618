"""Secrets out of every text a server sends back, in every form a server may echo them.

Why a module of its own: a server (or the gateway in front of it) may quote the request it
got, and not always byte for byte. ``--server http://user:pass@host`` goes out as
``Authorization: Basic <base64 of user:pass>`` (httpx builds it from the URL's userinfo,
percent-decoded); an echo may HTML-escape a key (``&lt;``, ``&amp;``), JSON-escape it
(``\\"``, ``\\u003c``), percent-encode it, or cut it off mid-way at its own length limit. A
``Redactor`` replaces each such form with ``***``:

- every character of a secret may appear raw, percent-encoded (``%3C``, ``%253C``, ``+`` for a
  space), as an HTML entity (``&lt;``, ``&#60;``, ``&#x3c;``, ``&amp;lt;``) or JSON-escaped
  (``\\u003c``, ``\\"``, ``\\\\/``), in any mixture;
- a secret of ``PREFIX`` or more characters without whitespace is also caught by any run of
  its first ``PREFIX`` or more characters (a secret cut off by the server's own limit);
- the secrets are the credentials given: a URL's userinfo and its parts (raw and decoded),
  the Basic token httpx derives from them, each header value, the token after an
  ``Authorization`` scheme, and the ``user:password`` inside a Basic token given as a header.

Callers scrub *before* cutting text to a length (an error glimpse of 120 characters, a message
of 2,000): a cut made first leaves a prefix the scrub cannot know is one.
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Iterable, Sequence
from functools import lru_cache
from typing import Any
from urllib.parse import unquote

MASK = "***"
# The shortest run of a secret's leading characters taken as that secret, cut off.
PREFIX = 8
# How many times over one text may have been escaped (``&amp;amp;lt;``, ``%25253C``).
LAYERS = 8
_NAMED = {"<": "lt", ">": "gt", "&": "amp", '"': "quot", "'": "(?:apos|#39)"}
# characters that start an encoded form of any character
_ENCODED_STARTS = ("%", "&", "\\", "+")


def _char(c: str) -> str:
    """A regex for one character of a secret in any of the encodings above; the encoded forms
    come first, so that a match that must go on (``&amp;`` for ``&``) takes the whole entity
    rather than its raw first character. Every repetition is bounded (up to ``LAYERS``
    escapings): a search is then linear even in a megabyte of backslashes."""
    n = LAYERS
    alts = ["".join(f"%(?:25){{0,{n}}}(?i:{b:02x})" for b in c.encode("utf-8"))]
    if c == " ":
        alts.append(r"\+")
    o = ord(c)
    alts.append(f"&(?:amp;){{0,{n}}}#0{{0,{n}}}{o};")
    alts.append(f"&(?:amp;){{0,{n}}}#(?i:x0{{0,{n}}}{o:x});")
    if c in _NAMED:
        alts.append(f"&(?:amp;){{0,{n}}}{_NAMED[c]};")
    if o < 0x10000:
        alts.append(f"\\\\{{1,{n}}}u(?i:{o:04x})")
    if c in '"\\/':
        alts.append(f"\\\\{{1,{n}}}" + re.escape(c))
    alts.append(re.escape(c))
    return "(?:" + "|".join(alts) + ")"


class _Secret:
    """One secret: the pattern of its head, and one per character to extend a match."""

    def __init__(self, secret: str) -> None:
        self.first = secret[0]
        self.chars = [re.compile(_char(c)) for c in secret]
        atomic = len(secret) >= PREFIX and not any(c.isspace() for c in secret)
        self.head_len = PREFIX if atomic else len(secret)
        self.head = re.compile("".join(_char(c) for c in secret[: self.head_len]))

    def sub(self, text: str) -> str:
        if self.first not in text and not any(s in text for s in _ENCODED_STARTS):
            return text  # no form of the secret can start anywhere: skip the regex scan
        out: list[str] = []
        i = 0
        while True:
            m = self.head.search(text, i)
            if m is None:
                break
            end, k = m.end(), self.head_len
            while k < len(self.chars):  # as far as the secret goes on (a prefix, or all)
                more = self.chars[k].match(text, end)
                if more is None:
                    break
                end, k = more.end(), k + 1
            out += [text[i : m.start()], MASK]
            i = end
        if not out:
            return text
        out.append(text[i:])
        return "".join(out)


class Redactor:
    """Replace every form of every secret with ``***`` (see the module docstring)."""

    def __init__(self, secrets: Iterable[str]) -> None:
        found = sorted({s for s in secrets if s}, key=len, reverse=True)
        self._secrets = [_Secret(s) for s in found]

    def __bool__(self) -> bool:
        return bool(self._secrets)

    def text(self, text: str) -> str:
        for s in self._secrets:
            text = s.sub(text)
        return text

    def value(self, value: Any) -> Any:
        """Every string inside a JSON-like value (dict keys too), scrubbed."""
        if not self._secrets:
            return value
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, dict):
            return {
                (self.text(k) if isinstance(k, str) else k): self.value(v) for k, v in value.items()
            }
        if isinstance(value, list):
            return [self.value(v) for v in value]
        return value


def url_secrets(url: str) -> list[str]:
    """The credential strings of ``url``: its userinfo and parts (raw and percent-decoded;
    a 1-2 character user name is too common a substring), and the Basic token httpx sends
    for them (``base64(unquote(user) + ":" + unquote(password))``)."""
    head, sep, rest = url.partition("://")
    authority = rest.split("/", 1)[0] if sep else ""
    if "@" not in authority:
        return []
    userinfo = authority.rsplit("@", 1)[0]
    found = {userinfo, unquote(userinfo)}
    for part in userinfo.split(":", 1):
        if len(part) >= 3:
            found.update({part, unquote(part)})
    user, _, password = userinfo.partition(":")
    pair = f"{unquote(user)}:{unquote(password)}".encode()
    found.add(base64.b64encode(pair).decode("ascii"))
    return sorted((s for s in found if s), key=len, reverse=True)


def basic_secrets(value: str) -> list[str]:
    """``user:password`` and the password inside an ``Authorization: Basic`` value."""
    scheme, _, token = value.strip().partition(" ")
    if scheme.lower() != "basic" or not token.strip():
        return []
    try:
        pair = base64.b64decode(token.strip(), validate=True).decode("utf-8")
    except (binascii.Error, ValueError):
        return []
    password = pair.partition(":")[2]
    return [s for s in (pair, password) if len(s) >= 3]


@lru_cache(maxsize=64)
def _redactor(urls: tuple[str, ...], extra: tuple[str, ...]) -> Redactor:
    found = [s for u in urls for s in url_secrets(u)] + list(extra)
    found += [s for e in extra for s in basic_secrets(e)]
    return Redactor(found)


def redactor(urls: Sequence[str], extra: Sequence[str] = ()) -> Redactor:
    """The ``Redactor`` of the credentials in ``urls`` and of ``extra`` (header values and
    tokens: ``auth.Auth.secrets``); built once per set of credentials."""
    return _redactor(tuple(urls), tuple(extra))
