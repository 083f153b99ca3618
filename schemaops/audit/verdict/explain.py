"""``best_match`` of a failed output, with ``jsonschema`` walking only the failing subtrees.

Why: explaining a violation ran ``iter_errors`` over the whole output, which costs a full
``jsonschema`` validation (a new validator object per subschema descended into) although
usually one property is wrong (issue 15: most outputs of a platform registry fail; this was
most of the audit's time). ``treecheck`` has a yes/no check for each subschema; the applicator
keywords here (``properties``, ``additionalProperties``, ``items``, ``prefixItems``,
``allOf``, ``anyOf``) skip a subtree those checks accept. A check says yes only when
``jsonschema`` finds no error there (the contract of ``treecheck``), so a skipped
subtree had no error to give: ``iter_errors`` yields the same errors in the same order, and
``best_match`` picks the same one. Everything else, errors included, is ``jsonschema``'s own
code; a differential test compares keyword, path and message with plain ``best_match``.
"""

from __future__ import annotations

from functools import cache
from typing import Any

from jsonschema import Draft202012Validator, _keywords
from jsonschema._utils import find_additional_properties
from jsonschema.exceptions import ValidationError, best_match
from jsonschema.validators import extend

from schemaops.audit.verdict.subset import Unsupported

#: the ``TreeCheck`` of the output being explained (one audit loop per process, not shared)
_TREE: list[Any] = [None]


def _valid(schema: Any, value: Any) -> bool:
    """True when the tree check of ``schema`` accepts ``value`` (never guesses)."""
    tree = _TREE[0]
    if tree is None:
        return False
    check = tree.of(schema)
    if check is None:
        return False
    try:
        return check(value)
    except (RecursionError, Unsupported):  # Unsupported: a lazy subtree (``treecheck``)
        return False


def _properties(validator: Any, properties: Any, instance: Any, schema: Any) -> Any:
    if not validator.is_type(instance, "object"):
        return
    for prop, subschema in properties.items():
        if prop in instance and not _valid(subschema, instance[prop]):
            yield from validator.descend(instance[prop], subschema, path=prop, schema_path=prop)


def _additional(validator: Any, ap: Any, instance: Any, schema: Any) -> Any:
    if not validator.is_type(instance, "object") or not validator.is_type(ap, "object"):
        yield from _keywords.additionalProperties(validator, ap, instance, schema)
        return
    for extra in set(find_additional_properties(instance, schema)):  # jsonschema's order
        if not _valid(ap, instance[extra]):
            yield from validator.descend(instance[extra], ap, path=extra)


def _items(validator: Any, items: Any, instance: Any, schema: Any) -> Any:
    if items is False or not validator.is_type(instance, "array"):
        yield from _keywords.items(validator, items, instance, schema)
        return
    for index in range(len(schema.get("prefixItems", [])), len(instance)):
        if not _valid(items, instance[index]):
            yield from validator.descend(instance=instance[index], schema=items, path=index)


def _prefix(validator: Any, prefix: Any, instance: Any, schema: Any) -> Any:
    if not validator.is_type(instance, "array"):
        return
    for (index, item), subschema in zip(enumerate(instance), prefix):  # noqa: B905 (as jsonschema)
        if not _valid(subschema, item):
            yield from validator.descend(
                instance=item, schema=subschema, schema_path=index, path=index
            )


def _all_of(validator: Any, all_of: Any, instance: Any, schema: Any) -> Any:
    for index, subschema in enumerate(all_of):
        if not _valid(subschema, instance):
            yield from validator.descend(instance, subschema, schema_path=index)


def _any_of(validator: Any, any_of: Any, instance: Any, schema: Any) -> Any:
    # jsonschema stops at the first branch without errors and reports nothing then
    if any(_valid(s, instance) for s in any_of):
        return
    yield from _keywords.anyOf(validator, any_of, instance, schema)


def _legacy_items(validator: Any, items: Any, instance: Any, schema: Any) -> Any:
    # drafts 4-7: ``items`` as one schema applies to every element (as an array: delegated)
    if not isinstance(items, dict) or not validator.is_type(instance, "array"):
        yield from _ORIGINAL_ITEMS[type(validator)](validator, items, instance, schema)
        return
    for index, item in enumerate(instance):
        if not _valid(items, item):
            yield from validator.descend(item, items, path=index)


_ORIGINAL_ITEMS: dict[type, Any] = {}


@cache
def skipping_class(cls: type = Draft202012Validator) -> type:
    """``cls`` (draft 2020-12, or 4, 6, 7) with the skipping applicators; everything else,
    errors and messages included, is ``cls``'s own."""
    changed = {
        "properties": _properties,
        "additionalProperties": _additional,
        "allOf": _all_of,
        "anyOf": _any_of,
    }
    if cls is Draft202012Validator:
        changed.update(items=_items, prefixItems=_prefix)
    else:
        changed["items"] = _legacy_items
    new = extend(cls, changed)
    _ORIGINAL_ITEMS[new] = cls.VALIDATORS["items"]
    return new


def explain(validator: Any, tree: Any, value: Any) -> ValidationError | None:
    """``best_match(validator.iter_errors(value))``, skipping what ``tree`` accepts."""
    _TREE[0] = tree
    try:
        return best_match(validator.iter_errors(value))
    finally:
        _TREE[0] = None
