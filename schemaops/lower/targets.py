"""``lower --target T`` (``providers.TARGETS``): the rewrite of one schema for a hosted provider.

The provider tables (``schemaops.providers``) say what each provider refuses or ignores; this
module turns a schema into one the provider accepts, with the transforms its rules call for,
each declared in the exactness model of ``lower`` (``schemaops.lower.model``):

- a keyword the table finds refused or ignored at a node (``undocumented-keyword``,
  ``unsupported-composition``, ``unsupported-keyword``, ``numeric-constraints``,
  ``string-length``, ``array-constraints``, ``format-value``, ``pattern-features``,
  ``enum-complex``, ``enum-types``, Anthropic's counted repeats above 100, Azure's
  ``default`` below the root) is removed: ``exact`` for an annotation or ``x-`` key
  (it constrains nothing), else ``widens`` with a residual rule at its pointer. ``oneOf``
  becomes ``anyOf`` (widens: exclusivity is the residual). Anthropic's ``minItems`` above 1
  is served as 1 (widens; the residual keeps the real bound); ``items`` goes with a removed
  ``prefixItems`` (kept, it would apply from the first position: a narrowing);
- a ``$ref`` with siblings the provider refuses becomes ``{"anyOf": [{"$ref": R}], ...}``
  (exact: the same conjunction); a ``$ref`` inside ``allOf`` (Anthropic) is inlined (exact:
  a non-recursive target is copied; a recursive one is refused by the same table anyway);
- where every object needs ``additionalProperties: false``, it is set: ``narrows`` unless it
  was false already (extra keys the original allowed can no longer be produced); a removed
  ``patternProperties`` beside ``additionalProperties: false`` narrows too, on any provider;
- where every property must be ``required`` (OpenAI), an optional property P becomes required
  with a ``null`` union (``type: [T, "null"]`` or ``anyOf: [S, {"type": "null"}]``):
  ``widens`` (null is accepted where the original had the key absent), residual rule
  ``null-means-absent``: "property P: null means absent; an original instance never has null
  there". When S itself accepts null, an original ``P: null`` reads as absent: ``narrows``;
- a root that is not a plain object (OpenAI) is wrapped: ``{"type": "object", "properties":
  {"value": ROOT}, ...}`` (exact; the instance is ``{"value": x}``).

What no transform removes (a recursive schema where the provider refuses recursion, limits on
size and nesting) is left, and the re-judge of the served schema with the same table says so:
the schema is not lowerable. A ``restricted`` finding left there (the provider documents a
restriction without saying whether the API refuses it or drops it) is no problem: the schema
is served, labelled ``unproven`` (``TargetLowering.unproven``), never called exact.
``to_served``/``to_original`` map instances between the original shape and the served one
(absent optional key <-> null, root wrap); the proof (``schemaops.lower.target_run``) goes
through them.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any

from schemaops.lower.model import EXACT, NARROWS, WIDENS, Lowered, Rewrite, UncoveredWidening
from schemaops.lower.nullabsent import presence_reads
from schemaops.lower.residual import ResidualRule
from schemaops.lower.shape import old_draft_reading
from schemaops.lower.targetmap import Subvalidators, draft_of, map_instance
from schemaops.lower.targetrefs import (
    BASE,
    RefTargets,
    as_pointer,
    ref_targets,
    served_ref_problems,
)
from schemaops.providers import TABLES, TargetVerdict, judge_schema
from schemaops.providers.base import (
    DEFS,
    SCHEMA_LISTS,
    SCHEMA_MAPS,
    SCHEMA_ONE,
    Finding,
    constrains,
    is_object_schema,
)
from schemaops.providers.narrowing import pattern_keys_refused
from schemaops.registry.refs import iter_subschemas
from schemaops.strings import pointer, ref_parts, resolve_pointer

#: the property the root is wrapped in where the provider needs an object root
WRAP_KEY = "value"
#: the residual keyword of the optional-to-required rewrite
NULL_MEANS_ABSENT = "null-means-absent"
#: table rules whose finding at a keyword means: remove that keyword (to the residual)
REMOVE_RULES = frozenset(
    {
        "undocumented-keyword",
        "unsupported-composition",
        "unsupported-keyword",
        "numeric-constraints",
        "string-length",
        "array-constraints",
        "format-value",
        "pattern-features",
        "enum-complex",
        "enum-types",
        "oneof-as-anyof",
        # Anthropic: a {n,m} bound above 1000 is refused, one from 101 to 1000 restricted
        # (providers/anthropic.py, read from LIMITS there): the pattern goes to the residual,
        # the application checks it after decoding
        "pattern-large-quantifier",
        "pattern-quantifier-range",
        # Azure: a default below the root is refused (providers/azure.py, DEFAULT_SOURCE):
        # an annotation, so dropped exactly (``constrains("default")`` is false)
        "default",
    }
)
#: what a ``restricted`` finding left in the served schema means (providers/base.py)
RESTRICTS = "restricts (effect unknown: the provider documents a restriction, not a refusal)"
#: keywords whose insides are never rewritten (dropping there would tighten, not relax)
OPAQUE = ("not", "if", "contains")


@dataclass
class TargetLowering:
    """One schema lowered for one provider: the ``Lowered`` (its ``backend`` is the target),
    the instance mapping, and the re-judge of the served schema by the provider's table."""

    target: str
    lowered: Lowered
    #: original pointers of the properties served as required-with-null (null means absent)
    null_means_absent: list[str] = field(default_factory=list)
    wrapped: bool = False
    verdict: TargetVerdict | None = None
    problems: list[str] = field(default_factory=list)
    #: ``restricted`` findings of the served schema: served, but no exactness claim (the
    #: provider may answer 400, or drop or unroll the construct: nothing says which)
    unproven: list[str] = field(default_factory=list)
    #: id(schema node) -> names served with a null union; original and served trees
    _orig_nullable: dict[int, set[str]] = field(default_factory=dict, repr=False)
    _served_nullable: dict[int, set[str]] = field(default_factory=dict, repr=False)
    #: id(original node holding $ref) -> (its target, pointer parts): anchors and $ids too
    _orig_refs: dict[int, tuple[Any, tuple[str, ...]]] = field(default_factory=dict, repr=False)

    @property
    def null_rules(self) -> list[ResidualRule]:
        return [r for r in self.lowered.residual if r.keyword == NULL_MEANS_ABSENT]

    @property
    def check_rules(self) -> list[ResidualRule]:
        """The residual rules an instance is validated against (the null rules are the
        mapping ``to_original`` applies, not a validation)."""
        return [r for r in self.lowered.residual if r.keyword != NULL_MEANS_ABSENT]

    def to_served(self, instance: Any) -> Any:
        """An original-shaped instance in the served shape: every absent property served as
        required-with-null gets ``null``; the root wrapped where the served root is."""
        y = map_instance(
            self.lowered.original, instance, self._orig_nullable, fill=True, refs=self._orig_refs
        )
        return {WRAP_KEY: y} if self.wrapped else y

    def to_original(self, instance: Any) -> Any:
        """What the application does with a served answer: unwrap, and drop each property
        served as required-with-null whose value is null (null means absent)."""
        served = self.lowered.served
        y = map_instance(served, instance, self._served_nullable, fill=False)
        if self.wrapped:
            return y.get(WRAP_KEY) if isinstance(y, dict) else y
        return y


class _Builder:
    """One depth-first walk of the original, building the served schema (see module doc)."""

    def __init__(self, original: Any, target: str) -> None:
        self.root = original
        self.target = target
        self.table = TABLES[target]
        self.rewrites: list[Rewrite] = []
        self.residual: list[ResidualRule] = []
        self.orig_nullable: dict[int, set[str]] = {}
        self.served_nullable: dict[int, set[str]] = {}
        self.null_pointers: list[str] = []
        self.findings: dict[str, list[Finding]] = {}
        #: where each $ref of the original resolves; what the served refs must resolve to
        self.refs: RefTargets = ref_targets(original)
        self.expect: dict[int, Any] = {}  # id(served ref node) -> the original target
        self.counterparts: dict[int, list[Any]] = {}  # id(original node) -> served forms
        self.nulled: set[int] = set()  # served nodes changed in place to accept null
        self.problems: list[str] = []  # why the schema is not lowerable (beside the table's)
        for f in self.table.judge(original):
            self.findings.setdefault(f.pointer, []).append(f)
        #: the original is draft-04, whose ``integer`` refuses ``1.0`` (jsonschema's
        #: ``draft4_type_checker``; draft 6 redefined it, ``draft6_type_checker`` in
        #: jsonschema/_types.py), while 2020-12, which the providers read, accepts it
        #: (JSON-Schema-Test-Suite tests/draft2020-12/type.json: "a float with zero fractional
        #: part is an integer")
        self.fraction_free = draft_of(original) == "draft-04"

    def has(self, rule: str) -> bool:
        return f"{self.target}.{rule}" in self.table.rules

    def removal(self, parts: tuple[str, ...], kw: str, value: Any) -> Finding | None:
        """The table's finding that asks to remove keyword ``kw`` of the node at ``parts``."""
        at = [pointer((*parts, kw))]
        if kw == "enum" and isinstance(value, list):
            at += [pointer((*parts, kw, str(i))) for i in range(len(value))]
        for p in at:
            for f in self.findings.get(p, []):
                if f.rule.id.split(".", 1)[1] in REMOVE_RULES:
                    return f
        return None

    def widen(self, parts: tuple[str, ...], kw: str, value: Any, rule: str, why: str) -> None:
        p = pointer((*parts, kw))
        self.rewrites.append(Rewrite(p, rule, WIDENS, why))
        self.residual.append(ResidualRule(p, kw, copy.deepcopy(value), why))

    def repoint(self, s: dict[str, Any], out: dict[str, Any], parts: tuple[str, ...]) -> None:
        """``out["$ref"]``: the original's target by a JSON pointer from the root (exact: the
        same target, found without the ``$anchor``/``$id`` a provider may not be sent)."""
        target, at = self.refs.targets[id(s)]
        new = as_pointer(at)
        if new != s["$ref"]:
            why = f"{s['$ref']!r} names {new}: the same target, by a JSON pointer"
            self.rewrites.append(Rewrite(pointer((*parts, "$ref")), "ref-to-pointer", EXACT, why))
        out["$ref"] = new
        if isinstance(target, dict):
            self.expect[id(out)] = target

    def opaque(self, v: Any) -> Any:
        """A subtree never rewritten (``OPAQUE``), copied with its refs repointed."""
        c = copy.deepcopy(v)
        for node, sub, _ in iter_subschemas(v, BASE, "2020-12"):
            mine = resolve_pointer(c, [str(p) for p in sub])
            if not isinstance(mine, dict):
                continue
            self.counterparts.setdefault(id(node), []).append(mine)
            if id(node) in self.refs.targets:
                self.repoint(node, mine, ())
        return c

    def child(self, kw: str, v: Any, parts: tuple[str, ...]) -> Any:
        if kw in OPAQUE:
            return self.opaque(v)
        if kw in SCHEMA_MAPS and isinstance(v, dict):
            return {k: self.node(sub, (*parts, kw, str(k))) for k, sub in v.items()}
        if kw in SCHEMA_ONE and isinstance(v, dict):
            return self.node(v, (*parts, kw))
        if kw in SCHEMA_LISTS and isinstance(v, list):
            return [self.node(sub, (*parts, kw, str(i))) for i, sub in enumerate(v)]
        return copy.deepcopy(v)

    def node(self, s: Any, parts: tuple[str, ...]) -> Any:
        if not isinstance(s, dict):
            return copy.deepcopy(s)
        out: dict[str, Any] = {}
        removed: set[str] = set()
        for kw, v in s.items():
            if kw == "$ref" and id(s) in self.refs.targets:
                self.repoint(s, out, parts)
                continue
            if kw == "$id" and parts and isinstance(v, str):
                # every $ref now names its target by a pointer from the root: an embedded
                # resource's $id finds nothing any more, and kept it would make those
                # pointers resolve inside it
                why = "an embedded $id: every $ref names its target by a pointer from the root"
                self.rewrites.append(Rewrite(pointer((*parts, kw)), "drop-embedded-id", EXACT, why))
                continue
            f = self.removal(parts, kw, v)
            if f is None:
                out[kw] = self.child(kw, v, parts)
                continue
            src = f"{f.rule.id}: {f.rule.summary} ({f.rule.source})"
            if kw == "oneOf" and isinstance(v, list):
                out["anyOf"] = [self.node(b, (*parts, kw, str(i))) for i, b in enumerate(v)]
                why = f"oneOf served as anyOf: an output matching two branches is served; {src}"
                self.widen(parts, kw, "exclusive: exactly one branch", "oneof-to-anyof", why)
            elif (
                kw == "minItems" and isinstance(v, int) and v > 1 and self.has("array-constraints")
            ):
                out["minItems"] = 1
                self.widen(parts, kw, v, "min-items-to-1", f"minItems {v} served as 1; {src}")
            elif not constrains(kw):
                removed.add(kw)
                self.rewrites.append(Rewrite(pointer((*parts, kw)), "drop-annotation", EXACT, src))
            else:
                removed.add(kw)
                self.widen(parts, kw, v, "drop-keyword", f"not served to {self.target}: {src}")
        if "prefixItems" in removed and "items" in out:
            # items would now apply from the first position, not after prefixItems: moved too
            v = s.get("items")
            del out["items"]
            why = f"items follows prefixItems, which {self.target} is not served"
            self.widen(parts, "items", v, "drop-keyword", why)
        t = s.get("type")
        if self.fraction_free and (t == "integer" or isinstance(t, list) and "integer" in t):
            why = (
                "draft-04's integer refuses 1.0, which 2020-12 and the provider accept:"
                " the application refuses a fraction"
            )
            self.widen(parts, "type", t, "draft04-integer", why)
        out = self.ref_siblings(out, parts)
        self.inline_allof_refs(out, parts)
        self.close_object(s, out, parts, removed)
        self.require_all(s, out, parts)
        self.counterparts.setdefault(id(s), []).append(out)
        return out

    def ref_siblings(self, out: dict[str, Any], parts: tuple[str, ...]) -> dict[str, Any]:
        """``{"$ref": R, ...siblings}`` as ``{...siblings, "anyOf": [{"$ref": R}]}`` where the
        table refuses the siblings (exact: the same conjunction)."""
        if "$ref" not in out or not self.has("ref-siblings"):
            return out
        dollar_ok = self.target == "gemini"  # Gemini allows $-keywords beside $ref
        extra = [k for k in out if k != "$ref" and not (dollar_ok and k.startswith("$"))]
        if not extra or "anyOf" in out:
            return out
        ref = out["$ref"]
        new = {k: v for k, v in out.items() if k != "$ref"}
        new["anyOf"] = [{"$ref": ref}]
        if id(out) in self.expect:  # the ref moved into the anyOf branch
            self.expect[id(new["anyOf"][0])] = self.expect.pop(id(out))
        self.rewrites.append(
            Rewrite(pointer((*parts, "$ref")), "ref-to-anyof", EXACT, f"$ref beside {extra}")
        )
        return new

    def inline_allof_refs(self, out: dict[str, Any], parts: tuple[str, ...]) -> None:
        """Anthropic refuses ``allOf`` with ``$ref``: a branch's ref target is copied in."""
        branches = out.get("allOf")
        if not self.has("allof-ref") or not isinstance(branches, list):
            return
        for i, b in enumerate(branches):
            ref = b.get("$ref") if isinstance(b, dict) else None
            parts_ref = ref_parts(ref) if isinstance(ref, str) else None
            target = resolve_pointer(self.root, parts_ref) if parts_ref is not None else None
            if not isinstance(target, dict) or len(b) != 1:
                continue
            branches[i] = self.node(target, tuple(parts_ref or ()))
            where = pointer((*parts, "allOf", str(i), "$ref"))
            self.rewrites.append(Rewrite(where, "inline-ref", EXACT, f"{ref} inlined"))

    def close_object(
        self, s: dict[str, Any], out: dict[str, Any], parts: tuple[str, ...], removed: set[str]
    ) -> None:
        was = s.get("additionalProperties", True)
        wrote = False
        if self.has("additional-properties") and is_object_schema(out):
            wrote = out.get("additionalProperties") is not False
            out["additionalProperties"] = False
        # the judgement check --target makes of the same object (providers.narrowing)
        served_node = {**s, "additionalProperties": out.get("additionalProperties", True)}
        pattern = pattern_keys_refused(served_node, removed)
        if not (wrote or pattern):
            return
        p = pointer((*parts, "additionalProperties")) if "additionalProperties" in s else None
        self.rewrites.append(
            Rewrite(
                p if p is not None else pointer(parts),
                "additional-properties-false",
                NARROWS,
                f"patternProperties is not served to {self.target}: the keys it allowed meet "
                "additionalProperties: false"
                if pattern
                else f"{self.target} needs additionalProperties: false on every object; the "
                f"original allowed other keys (additionalProperties {was!r})",
                {"additionalProperties": False},
            )
        )

    def require_all(self, s: dict[str, Any], out: dict[str, Any], parts: tuple[str, ...]) -> None:
        props = out.get("properties")
        if not self.has("all-required") or not isinstance(props, dict):
            return
        req = out.get("required") if isinstance(out.get("required"), list) else []
        missing = [k for k in props if k not in req]
        if not missing:
            return
        self.presence(s, out, parts, set(missing))
        orig_props = s.get("properties") if isinstance(s.get("properties"), dict) else {}
        for name in missing:
            p = pointer((*parts, "properties", name))
            if _accepts_null(self.root, orig_props.get(name, True)):
                why = (
                    f"property {name!r} served as required; it already accepts null, so an "
                    "original instance with null there reads as absent"
                )
                self.rewrites.append(
                    Rewrite(p, "optional-to-required", NARROWS, why, {"required": name})
                )
            else:
                why = (
                    f"property {name!r}: null means absent; an original instance never has null "
                    f"there ({self.target} needs every property in required: served as required "
                    "with a null union; drop the key when its value is null)"
                )
                self.rewrites.append(Rewrite(p, "optional-to-required", WIDENS, why))
                self.residual.append(ResidualRule(p, NULL_MEANS_ABSENT, name, why))
            before = props[name]
            props[name] = _nullable(before)
            if props[name] is before:  # changed in place: a $ref to it would now accept null
                self.nulled.add(id(before))
            self.null_pointers.append(p)
        out["required"] = [*req, *missing]
        self.orig_nullable.setdefault(id(s), set()).update(missing)
        self.served_nullable.setdefault(id(out), set()).update(missing)

    def presence(
        self, s: dict[str, Any], out: dict[str, Any], parts: tuple[str, ...], names: set[str]
    ) -> None:
        """Keywords kept beside the optional-to-required rewrite that read which keys are
        present (``nullabsent``): a ``required`` in a kept applicator widens (the keyword to
        the residual); anything else that counts keys is a problem (not lowerable)."""
        reads = presence_reads(out, names, self.root)
        for kw in reads.widen:
            orig_kw = kw if kw in s else "oneOf" if kw == "anyOf" and "oneOf" in s else kw
            p = pointer((*parts, orig_kw))
            why = (
                f"{orig_kw} reads which keys are present, and {sorted(names)} are served as "
                "required with null (null means absent): the served schema counts a null as "
                "present, so the application checks this keyword after dropping the nulls"
            )
            self.rewrites.append(Rewrite(p, "presence-after-null", WIDENS, why))
            if not any(r.pointer == p for r in self.residual):
                self.residual.append(ResidualRule(p, orig_kw, copy.deepcopy(s.get(orig_kw)), why))
        for kw in reads.refuse:
            self.problems.append(
                f"{pointer((*parts, kw.split('/')[0]))}: {kw} counts or tests which keys are "
                f"present beside {sorted(names)} served as required with null (null means "
                "absent): the served schema may accept more or less there; not lowerable"
            )

    def wrap_root(self, served: Any) -> tuple[Any, bool]:
        """OpenAI needs an object root (not ``anyOf``): the root is wrapped (exact)."""
        if not self.has("root-object"):
            return served, False
        if isinstance(served, dict) and served.get("type") == "object" and "anyOf" not in served:
            return served, False
        inner = dict(served) if isinstance(served, dict) else served
        defs = {}
        if isinstance(inner, dict):
            defs = {k: inner.pop(k) for k in DEFS if k in inner}
        wrapped = {
            "type": "object",
            "properties": {WRAP_KEY: inner},
            "required": [WRAP_KEY],
            "additionalProperties": False,
            **defs,
        }
        self.rewrites.append(
            Rewrite(
                "",
                "wrap-root",
                EXACT,
                f"{self.target} needs an object root: served as {{{WRAP_KEY!r}: ROOT}}",
            )
        )
        return wrapped, True


def _accepts_null(root: Any, sub: Any) -> bool:
    """Whether the original property schema ``sub`` accepts null (definitions of ``root``)."""
    return Subvalidators(root).valid(sub, None)


def _nullable(sub: Any) -> Any:
    """``sub`` that also accepts null: a type list where that is exact, else an ``anyOf``.
    The node is changed in place where it can be (its identity keys the instance mapping)."""
    if isinstance(sub, dict):
        t = sub.get("type")
        plain = not any(k in sub for k in ("enum", "const", "anyOf", "oneOf", "allOf", "$ref"))
        if isinstance(t, str) and t != "null" and plain:
            sub["type"] = [t, "null"]
            return sub
    return {"anyOf": [sub, {"type": "null"}]}


def _refs_outside_defs(schema: Any) -> list[str]:
    from schemaops.providers.base import walk

    out = []
    for n in walk(schema):
        ref = n.schema.get("$ref")
        if isinstance(ref, str) and not any(ref.startswith(f"#/{d}/") for d in DEFS):
            out.append(ref)
    return out


def lower_for_target(original: Any, target: str, name: str = "") -> TargetLowering:
    """Lower one (bundled) schema for ``target`` and re-judge the served schema with the
    provider's table; ``problems`` says why it is not lowerable (empty when it is)."""
    b = _Builder(original, target)
    served = b.node(original, ())
    problems: list[str] = []
    older = old_draft_reading(original)
    if older:  # the transforms read 2020-12, as the providers do
        problems.append(f"{older}: not lowerable (rewrite the schema in 2020-12 first)")
    served, wrapped = b.wrap_root(served)
    if wrapped and _refs_outside_defs(served):
        problems.append(
            "the root must be wrapped for this provider, but a $ref points into the root "
            f"itself ({_refs_outside_defs(served)[0]}): not lowerable"
        )
    # every $ref of the served schema lands where the original's did (module targetrefs)
    problems += b.problems + b.refs.problems
    if not b.refs.problems:
        problems += served_ref_problems(served, b.expect, b.counterparts, b.nulled)
    try:
        lw = Lowered(target, original, served, b.rewrites, b.residual)
    except UncoveredWidening as exc:  # a lowering bug: said, never served
        lw = Lowered(target, original, original)
        problems.append(f"lowering bug: {exc}")
    tl = TargetLowering(target, lw, b.null_pointers, wrapped, problems=problems)
    tl._orig_nullable, tl._served_nullable = b.orig_nullable, b.served_nullable
    tl._orig_refs = b.refs.targets
    tl.verdict = judge_schema(name, lw.served, target)
    for f in tl.verdict.findings:
        if f.rule.effect == "restricted":
            tl.unproven.append(
                f"{target} {RESTRICTS} the served schema: {f.rule.id} at {f.pointer or '/'} "
                f"({f.message}); no transform removes it: served, labelled unproven "
                f"({f.rule.source})"
            )
            continue
        what = "refuses" if f.rule.effect == "refused" else "ignores"
        tl.problems.append(
            f"{target} {what} the served schema: {f.rule.id} at {f.pointer or '/'} "
            f"({f.message}); no transform removes it: not lowerable ({f.rule.source})"
        )
    return tl
