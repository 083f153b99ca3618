"""Drafts and metaschemas: which JSON Schema dialect a schema declares, and checking it.

A schema's ``$schema`` names its draft; without one the registry assumes 2020-12 (the
current draft and what SGLang's grammar backends target). Matching is deliberately a
little forgiving about spelling that real schemas use (``http`` vs ``https``, a trailing
``#`` or not) and strict about everything else: an unknown dialect is an error, because
validating with the wrong rules gives answers that look right and are not.
"""

from __future__ import annotations

import json
import re
import warnings
from functools import cache
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from schemaops.strings import pointer, truncate

if TYPE_CHECKING:
    from jsonschema.exceptions import ValidationError
    from jsonschema.protocols import Validator

#: the draft a schema without ``$schema`` is read as (what SGLang's grammar backends target)
DEFAULT_DRAFT = "https://json-schema.org/draft/2020-12/schema"

#: draft label -> (canonical ``$schema`` URI, the name of its ``jsonschema`` validator class).
#: Names, not classes: importing ``jsonschema`` costs more than the rest of a one-line audit's
#: start (its format checkers import their optional packages; issue 36), and an audit whose
#: outputs jsonschema-rs accepts never needs it (``validator_class`` imports it on first use).
DRAFTS: dict[str, tuple[str, str]] = {
    "draft-03": ("http://json-schema.org/draft-03/schema#", "Draft3Validator"),
    "draft-04": ("http://json-schema.org/draft-04/schema#", "Draft4Validator"),
    "draft-06": ("http://json-schema.org/draft-06/schema#", "Draft6Validator"),
    "draft-07": ("http://json-schema.org/draft-07/schema#", "Draft7Validator"),
    "2019-09": ("https://json-schema.org/draft/2019-09/schema", "Draft201909Validator"),
    "2020-12": (DEFAULT_DRAFT, "Draft202012Validator"),
}
#: the drafts whose closure check and explanations this project builds (``treecheck.py``)
LEGACY_LABELS = frozenset(("draft-04", "draft-06", "draft-07"))

#: ``jsonschema.validators.validator_for``'s table (4.26.0): each draft's metaschema id as
#: its ``URIDict`` stores it (``urlsplit(id).geturl()``, which drops an empty ``#``), so the
#: draft ``validator_for`` picks is known without importing ``jsonschema``
#: (``dialect_label``; ``tests/test_drafts_dialect.py`` holds it to ``validator_for``)
_VALIDATOR_FOR = {urlsplit(uri).geturl(): label for label, (uri, _) in DRAFTS.items()}

_KEY = re.compile(
    r"^(?:https?://)?json-schema\.org/(draft-0[3467]/schema|draft/20(?:19-09|20-12)/schema)/?#?$"
)
_LABELS = {
    "draft-03/schema": "draft-03",
    "draft-04/schema": "draft-04",
    "draft-06/schema": "draft-06",
    "draft-07/schema": "draft-07",
    "draft/2019-09/schema": "2019-09",
    "draft/2020-12/schema": "2020-12",
}

MAX_MESSAGE = 240


class UnknownDraft(ValueError):
    """``$schema`` names a dialect the registry cannot validate."""


def draft_label(uri: Any) -> str:
    """The short label (``"2020-12"``, ``"draft-07"``...) of a ``$schema`` value.

    ``None`` (no ``$schema``) is 2020-12. Raises UnknownDraft for anything else unrecognised.
    """
    if uri is None:
        return "2020-12"
    if not isinstance(uri, str):
        raise UnknownDraft(f"$schema must be a string URI, got {type(uri).__name__}")
    m = _KEY.match(uri.strip())
    if not m:
        known = ", ".join(DRAFTS)
        raise UnknownDraft(f"unknown draft {uri!r} in $schema (known: {known})")
    return _LABELS[m.group(1)]


def draft_uri(label: str) -> str:
    """The canonical ``$schema`` URI for a draft label."""
    return DRAFTS[label][0]


@cache
def own_draft_uris(label: str) -> frozenset[str]:
    """The ``$schema`` strings ``validator_for`` reads as draft ``label``: its metaschema id
    as ``URIDict`` stores it, with and without the empty fragment (``#``) that ``urlsplit``
    drops. Empty for a label of no draft."""
    uris = {uri for uri, found in _VALIDATOR_FOR.items() if found == label}
    return frozenset(uris | {uri + "#" for uri in uris})


def validator_class(label: str) -> type[Validator]:
    """The jsonschema validator class for a draft label (imports ``jsonschema``)."""
    import jsonschema

    return getattr(jsonschema, DRAFTS[label][1])


def dialect_label(schema: Any) -> str:
    """The label of the draft ``validator_for(schema, default=Draft202012Validator)`` picks,
    without importing ``jsonschema`` where the answer is certain: no ``$schema`` (or a boolean
    schema) is 2020-12, a string is looked up as ``validator_for``'s ``URIDict`` does
    (normalised by ``urlsplit``) and an unknown one is the default. Anything else (a
    ``$schema`` that is not a string, a URI ``urlsplit`` refuses) asks ``validator_for``
    itself, which may raise as it always did."""
    if schema is True or schema is False:
        return "2020-12"
    if type(schema) is dict:
        uri = schema.get("$schema", None)
        if uri is None and "$schema" not in schema:
            return "2020-12"
        if type(uri) is str:
            try:
                return _VALIDATOR_FOR.get(urlsplit(uri).geturl(), "2020-12")
            except ValueError:
                pass
    from jsonschema.validators import Draft202012Validator, validator_for

    cls = validator_for(schema, default=Draft202012Validator)
    return next(label for label, (_, name) in DRAFTS.items() if cls.__name__ == name)


@cache
def _meta_validator(label: str) -> Validator:
    """One reusable metaschema validator per draft (constructing them is the slow part)."""
    from schemaops.formats import format_checker  # one format semantics (a bad regex is "no")

    cls = validator_class(label)
    return cls(cls.META_SCHEMA, format_checker=format_checker())


def _fast_valid(schema: Any, label: str, parsed: bool = False) -> bool:
    """True when jsonschema-rs finds ``schema`` valid against its draft's metaschema, in a way
    held never more lenient than ``jsonschema`` (``metars.py``): no ``jsonschema`` error could
    be reported, so ``iter_errors`` (milliseconds) is skipped. False: ask ``jsonschema``.
    ``parsed``: ``schema`` is what ``jsontext.parse`` read without a stopping problem (exact
    JSON types, nested within its bound), so ``metars`` need not walk it to know that."""
    from schemaops.registry.metars import rs_valid

    with warnings.catch_warnings():  # re.compile's FutureWarnings (format regex): noise
        warnings.simplefilter("ignore", FutureWarning)
        return rs_valid(schema, label, parsed)


def meta_valid(schema: Any, label: str) -> bool:
    """``_fast_valid`` for a draft label (False: ask ``check_schema``)."""
    return label in DRAFTS and _fast_valid(schema, label)


def short(text: str, limit: int = MAX_MESSAGE) -> str:
    """Trim a message to one line: jsonschema repeats whole instances, which can be megabytes."""
    return truncate(" ".join(text.split()), limit)


def _leaf(error: ValidationError) -> ValidationError:
    """The most specific error under an anyOf/oneOf failure (its own message is vague)."""
    from jsonschema.exceptions import best_match

    return best_match([error]) if error.context else error


def describe(error: ValidationError) -> str:
    """A one-line reason that names the problem, not megabytes of the offending value.

    jsonschema messages start with the whole instance (``[...] has non-unique elements``);
    keep the start of the value, the verdict, and for uniqueItems the duplicate itself.
    """
    msg, shown = error.message, repr(error.instance)
    if msg.startswith(shown) and len(shown) > 80:
        msg = shown[:60] + "..." + msg[len(shown) :]
    if error.validator == "uniqueItems" and isinstance(error.instance, list):
        seen: set[str] = set()
        for item in error.instance:
            key = json.dumps(item, sort_keys=True)
            if key in seen:
                msg += f" (duplicate: {short(key, 60)})"
                break
            seen.add(key)
    return short(msg)


def metaschema_problems(schema: Any, label: str, parsed: bool = False) -> list[tuple[str, str]]:
    """Every metaschema violation as ``(json pointer in the schema, reason)``, all at once.
    (``parsed``: as for ``_fast_valid``.)

    Format assertions are on (as ``check_schema`` does): a ``pattern`` that is not a valid
    regular expression is reported here instead of failing later inside a grammar compiler.
    """
    out: list[tuple[str, str]] = []
    seen: set[tuple[str, str]] = set()
    if _fast_valid(schema, label, parsed):
        return out
    with warnings.catch_warnings():  # re.compile's FutureWarnings about odd patterns: noise
        warnings.simplefilter("ignore", FutureWarning)
        errors = sorted(
            _meta_validator(label).iter_errors(schema), key=lambda e: list(map(str, e.path))
        )
    for top in errors:
        e = _leaf(top)
        item = (pointer(e.absolute_path), f"{describe(e)} (metaschema keyword {e.validator!r})")
        if item not in seen:
            seen.add(item)
            out.append(item)
    return out
