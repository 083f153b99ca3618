"""Instances to walk through backends: registry examples, generated ones, and the official
JSON-Schema-Test-Suite.

Every instance becomes a small dict the worker understands::

    {"kind": "valid"|"invalid", "index": int, "source": "registry"|"generated"|"suite"|"given",
     "value": <the JSON value>, "keyword": <violated keyword, invalid only>}

Values are re-ordered like the schema (``order_like_schema``) before serialisation, because
xgrammar, llguidance and outlines all make a model write properties in schema order: a valid
instance with keys in another order is not one these grammars can produce, and counting it
as ``rejects_valid`` would blame the backend for the example's key order.
"""

from __future__ import annotations

import json
import re
import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from jsonschema import exceptions as js_exceptions
from jsonschema import validators

JSTS_DEFAULT = Path(__file__).resolve().parents[3] / "shared" / "corpora" / "json-schema-test-suite"


def validator(schema: Any) -> Any:
    """A jsonschema validator for ``schema``'s draft, asserting ``format`` (as the audit does)."""
    cls = validators.validator_for(schema, default=validators.Draft202012Validator)
    return cls(schema, format_checker=cls.FORMAT_CHECKER)


def violated_keyword(schema: Any, instance: Any) -> str | None:
    """The keyword of jsonschema's most relevant error for ``instance`` (None if valid)."""
    try:
        err = js_exceptions.best_match(validator(schema).iter_errors(instance))
    except Exception:  # an unresolvable $ref or a broken schema: no attribution
        return "?"
    return None if err is None else str(err.validator)


def _resolve(schema: Any, root: Any) -> Any:
    """Follow local ``$ref`` (``#/...`` JSON pointers) a few times; give up on anything else."""
    for _ in range(16):
        if not isinstance(schema, dict) or not isinstance(schema.get("$ref"), str):
            return schema
        ref = schema["$ref"]
        if not ref.startswith("#"):
            return schema
        node = root
        for part in [p for p in ref[1:].split("/") if p]:
            part = part.replace("~1", "/").replace("~0", "~")
            if isinstance(node, dict) and part in node:
                node = node[part]
            elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
                node = node[int(part)]
            else:
                return schema
        schema = node
    return schema


def _branches(schema: dict) -> list[dict]:
    out = [schema]
    for key in ("allOf", "anyOf", "oneOf"):
        for sub in schema.get(key) or []:
            if isinstance(sub, dict):
                out.append(sub)
    return out


def _subschema(key: str, props: dict, patterns: list, extra: Any) -> Any:
    """The schema that governs ``key``: its property, else a matching pattern, else extra."""
    if key in props:
        return props[key]
    for pat, sch in patterns:
        try:
            if re.search(pat, key):
                return sch
        except re.error:
            continue
    return extra


def order_like_schema(instance: Any, schema: Any, root: Any = None, depth: int = 0) -> Any:
    """``instance`` with object keys in the order the schema declares them (recursively).

    Keys come in order of first appearance across ``properties`` of the schema and its
    ``allOf``/``anyOf``/``oneOf`` branches (local ``$ref`` followed); undeclared keys keep
    their order after them. Approximate by design: it never changes values, only key order.
    """
    root = schema if root is None else root
    schema = _resolve(schema, root)
    if depth > 64 or not isinstance(schema, dict):
        return instance
    branches = [_resolve(b, root) for b in _branches(schema)]
    branches = [b for b in branches if isinstance(b, dict)]
    if isinstance(instance, dict):
        order: list[str] = []
        sub: dict[str, Any] = {}
        for b in branches:
            for k, v in (b.get("properties") or {}).items():
                if k not in sub:
                    order.append(k)
                    sub[k] = v
        extra = next(
            (
                b["additionalProperties"]
                for b in branches
                if isinstance(b.get("additionalProperties"), dict)
            ),
            None,
        )
        patterns = [
            (pat, sch)
            for b in branches
            if isinstance(b.get("patternProperties"), dict)
            for pat, sch in b["patternProperties"].items()
        ]
        keys = [k for k in order if k in instance] + [k for k in instance if k not in sub]
        return {
            k: order_like_schema(instance[k], _subschema(k, sub, patterns, extra), root, depth + 1)
            for k in keys
        }
    if isinstance(instance, list):
        prefix = next(
            (b["prefixItems"] for b in branches if isinstance(b.get("prefixItems"), list)), []
        )
        items = next((b["items"] for b in branches if isinstance(b.get("items"), dict)), None)
        return [
            order_like_schema(v, prefix[i] if i < len(prefix) else items, root, depth + 1)
            for i, v in enumerate(instance)
        ]
    return instance


def build_instances(
    schema: Any,
    valid: list[Any] = (),  # type: ignore[assignment]
    invalid: list[Any] = (),  # type: ignore[assignment]
    source: str = "registry",
) -> list[dict[str, Any]]:
    """Worker-ready instance dicts (schema-ordered, invalid ones with their keyword)."""
    out: list[dict[str, Any]] = []
    for i, v in enumerate(valid):
        out.append(
            {
                "kind": "valid",
                "index": i,
                "source": source,
                "value": order_like_schema(v, schema),
                "keyword": None,
            }
        )
    for i, v in enumerate(invalid):
        out.append(
            {
                "kind": "invalid",
                "index": i,
                "source": source,
                "value": order_like_schema(v, schema),
                "keyword": violated_keyword(schema, v),
            }
        )
    return out


GENERATION_EXTRA = "schemaops[compare]"


class GenerationError(Exception):
    """Valid instances could not be generated; the message says why (a missing package, a
    schema hypothesis-jsonschema cannot handle, no instance within the time budget)."""


def generation_missing() -> str | None:
    """Why instance generation is impossible in this environment (None: it is possible).

    Checked by ``run_compare`` before any worker starts, so a normal install without the
    generator says so up front instead of walking nothing.
    """
    import importlib.util

    for mod, dist in (
        ("hypothesis", "hypothesis"),
        ("hypothesis_jsonschema", "hypothesis-jsonschema"),
    ):
        try:
            found = importlib.util.find_spec(mod) is not None
        except (ImportError, ValueError):
            found = False
        if not found:
            return (
                f"generating valid instances needs {dist}, which is not installed: "
                f'pip install "{GENERATION_EXTRA}" (also in "schemaops[all]")'
            )
    return None


def generate_valid(schema: Any, n: int = 5, max_time_s: float = 10.0) -> list[Any]:
    """Up to ``n`` valid instances from hypothesis-jsonschema; raises ``GenerationError``
    with the reason when it finds none (so a caller can say why a verdict is unchecked).

    hypothesis-jsonschema 0.23.1 needs ``hypothesis==6.130.13`` and cannot follow recursive or
    remote ``$ref``s; it fills strings with control characters and rare Unicode, which the
    walk reports separately as ``content`` rejections. Deterministic (``derandomize``) and
    bounded by ``n``; call it inside a worker with a deadline: it can be slow on big schemas.
    Every instance is re-checked with jsonschema (format asserted) and dropped if invalid.
    Generation runs on ``close_objects(schema)``: left open, hypothesis pads objects with
    random undeclared keys, which xgrammar's strict mode and outlines refuse, so every
    schema would read ``rejects_valid`` from generator noise. Whether a backend refuses
    undeclared properties is shown by the registry's own examples instead.
    ``max_time_s`` bounds the generation (with ``SIGALRM``, so only in a main thread, as in a
    worker): a schema hypothesis-jsonschema chews on yields what it found so far.
    """
    if n <= 0:
        return []
    missing = generation_missing()
    if missing:
        raise GenerationError(missing)
    try:
        from hypothesis import HealthCheck, Phase, given, settings
        from hypothesis_jsonschema import from_schema

        strategy = from_schema(close_objects(schema))
    except Exception as exc:  # the schema is beyond hypothesis-jsonschema
        raise GenerationError(
            f"hypothesis-jsonschema cannot use this schema: {_why(exc)}"
        ) from None
    found: list[Any] = []
    failure: list[str] = []

    @settings(
        max_examples=n,
        database=None,
        deadline=None,
        derandomize=True,
        phases=[Phase.generate],
        suppress_health_check=list(HealthCheck),
    )
    @given(strategy)
    def collect(value: Any) -> None:
        found.append(value)

    with _time_budget(max_time_s) as budget:
        try:
            collect()
        except Exception as exc:  # e.g. Unsatisfiable: keep what was found, say why
            failure.append(_why(exc))
    if budget.expired:
        failure.append(f"stopped after {max_time_s:g} s")
    check = validator(schema)
    out, seen, dropped = [], set(), 0
    for v in found:
        key = json.dumps(v, sort_keys=True, default=str)
        if key in seen:
            continue
        seen.add(key)
        try:
            ok = check.is_valid(v)
        except Exception as exc:  # jsonschema itself failed on the schema
            failure.append(f"jsonschema could not check an instance: {_why(exc)}")
            break
        if ok:
            out.append(v)
        else:
            dropped += 1
    if not out:
        if dropped:
            failure.append(f"{dropped} generated instance(s) were invalid for jsonschema")
        raise GenerationError(
            "no valid instance generated" + (f" ({'; '.join(failure)})" if failure else "")
        )
    return out[:n]


def _why(exc: BaseException) -> str:
    """One line naming an exception (its first message line, bounded)."""
    msg = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {msg[0][:300]}" if msg else type(exc).__name__


_SCHEMA_MAPS = ("properties", "patternProperties", "$defs", "definitions", "dependentSchemas")
_SCHEMA_VALUES = (
    "items",
    "additionalItems",
    "contains",
    "not",
    "if",
    "then",
    "else",
    "propertyNames",
    "additionalProperties",
    "unevaluatedItems",
)
_SCHEMA_LISTS = ("anyOf", "oneOf", "prefixItems", "items")


def close_objects(schema: Any) -> Any:
    """A copy of ``schema`` where objects that list ``properties`` and say nothing about
    other keys get ``additionalProperties: false``: its instances are valid for ``schema``.

    ``allOf`` branches are left open (closing each would make the conjunction refuse the
    other branches' keys)."""
    if isinstance(schema, list):
        return [close_objects(s) for s in schema]
    if not isinstance(schema, dict):
        return schema
    out = dict(schema)
    for key in _SCHEMA_MAPS:
        if isinstance(out.get(key), dict):
            out[key] = {k: close_objects(v) for k, v in out[key].items()}
    for key in _SCHEMA_VALUES:
        if isinstance(out.get(key), dict):
            out[key] = close_objects(out[key])
    for key in _SCHEMA_LISTS:
        if isinstance(out.get(key), list):
            out[key] = [close_objects(v) for v in out[key]]
    open_keys = ("additionalProperties", "unevaluatedProperties", "patternProperties", "allOf")
    if isinstance(out.get("properties"), dict) and not any(k in out for k in open_keys):
        out["additionalProperties"] = False
    return out


class _OutOfTime(BaseException):
    """Raised by the generation alarm; a BaseException so hypothesis does not swallow it."""


class _Budget:
    """What ``_time_budget`` yields: whether the alarm went off."""

    expired = False


@contextmanager
def _time_budget(seconds: float) -> Iterator[_Budget]:
    """Interrupt the body after ``seconds`` (no-op outside the main thread)."""
    budget = _Budget()
    if seconds <= 0 or threading.current_thread() is not threading.main_thread():
        yield budget
        return

    def alarm(signum: int, frame: Any) -> None:
        raise _OutOfTime()

    old = signal.signal(signal.SIGALRM, alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield budget
    except _OutOfTime:
        budget.expired = True
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


@dataclass
class SuiteCase:
    """One JSON-Schema-Test-Suite group: a schema and its valid/invalid instances."""

    name: str
    schema: Any
    valid: list[Any]
    invalid: list[Any]

    @property
    def text(self) -> str:
        return json.dumps(self.schema, separators=(",", ":"), ensure_ascii=False)


def suite_cases(
    root: Path | str = JSTS_DEFAULT, draft: str = "draft2020-12", optional: bool = False
) -> Iterator[SuiteCase]:
    """The suite's groups for ``draft`` (``tests/<draft>/*.json``), skipping ``optional/``
    unless asked, and groups needing remote refs (``http://localhost:1234``: never fetched)."""
    folder = Path(root) / "tests" / draft
    files = sorted(folder.glob("*.json"))
    if optional:
        files += sorted((folder / "optional").rglob("*.json"))
    for path in files:
        for i, group in enumerate(json.loads(path.read_text())):
            if "localhost:1234" in json.dumps(group["schema"]):
                continue
            tests = group.get("tests") or []
            yield SuiteCase(
                name=f"{path.stem}/{i}: {group.get('description', '')}",
                schema=group["schema"],
                valid=[t["data"] for t in tests if t.get("valid")],
                invalid=[t["data"] for t in tests if not t.get("valid")],
            )
