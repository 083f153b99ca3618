"""``check --target`` against what the providers' own SDKs send for ordinary pydantic models.

A provider accepts what its own SDK sends for an ordinary model: the schemas here are the real
output of openai-python's ``to_strict_json_schema`` (src/openai/lib/_pydantic.py, what
``client.chat.completions.parse(response_format=Model)`` sends) and anthropic-sdk-python's
``transform_schema`` (src/anthropic/lib/_parse/_transform.py, what ``messages.parse`` sends), on
twelve ordinary models: optional fields, defaults, lists, enums, unions, nesting, recursion,
``constr``/``conint``, descriptions, examples. No schema is written by hand, so a table that
refuses what the SDK sends (a false 400) fails here. Where a documented refusal applies, the
test names the rule, and the rule cites its source (the table's own check).
"""

from __future__ import annotations

import enum
from typing import Annotated, Any, Literal, Optional, Union

import pytest
from pydantic import BaseModel, Field, conint, constr

from schemaops.providers import TABLES, judge_schema

openai_pydantic = pytest.importorskip("openai.lib._pydantic")
anthropic_transform = pytest.importorskip("anthropic.lib._parse._transform")


class Color(str, enum.Enum):
    red = "red"
    green = "green"


class Plain(BaseModel):
    name: str
    age: int


class WithOptional(BaseModel):
    name: str
    nickname: Optional[str] = None  # noqa: UP045 (the spelling people write)


class WithDefaults(BaseModel):
    name: str
    retries: int = 3
    verbose: bool = False
    label: str = "x"


class WithList(BaseModel):
    tags: list[str]
    scores: list[float] = Field(default_factory=list)


class WithEnum(BaseModel):
    color: Color
    level: Literal["low", "high"] = "low"


class Address(BaseModel):
    street: str
    city: str


class Nested(BaseModel):
    home: Address
    work: Address | None = None


class Cat(BaseModel):
    kind: Literal["cat"]
    lives: int


class Dog(BaseModel):
    breed: str
    good: bool


class WithUnion(BaseModel):
    pet: Union[Cat, Dog]  # noqa: UP007
    id: int | str


class Node(BaseModel):
    value: int
    children: list[Node] = Field(default_factory=list)


class Constrained(BaseModel):
    code: constr(min_length=2, max_length=8)  # type: ignore[valid-type]
    qty: conint(ge=1, le=10)  # type: ignore[valid-type]


class Documented(BaseModel):
    """A documented model."""

    name: Annotated[str, Field(description="the name", examples=["Ada"])]
    when: str = Field(description="a date", json_schema_extra={"$comment": "ISO 8601"})


class Mixed(BaseModel):
    items: list[Address]
    color: Color | None = None
    note: str | None = Field(default=None, description="a note")


class Bird(BaseModel):
    kind: Literal["bird"]
    wings: int


class SharedFirstKey(BaseModel):
    """A union of two models whose first field is the same (pydantic writes ``anyOf``)."""

    pet: Union[Cat, Bird]  # noqa: UP007


MODELS: list[type[BaseModel]] = [
    Plain,
    WithOptional,
    WithDefaults,
    WithList,
    WithEnum,
    Nested,
    WithUnion,
    Node,
    Constrained,
    Documented,
    Mixed,
    SharedFirstKey,
]

#: (target, model) -> the documented rules that refuse what the SDK sends; every other pair
#: must not be refused.
DOCUMENTED_REFUSALS: dict[tuple[str, str], set[str]] = {
    # "Objects provided via 'anyOf' must not share identical first keys" (the API's 400)
    ("openai", "SharedFirstKey"): {"openai.anyof-first-keys"},
    # "Recursive schemas are not supported" (the Anthropic page's limitations)
    ("anthropic", "Node"): {"anthropic.recursive"},
}


def sent(target: str, model: type[BaseModel]) -> dict[str, Any]:
    """What the provider's own SDK sends for ``model``."""
    if target == "openai":
        return openai_pydantic.to_strict_json_schema(model)
    return anthropic_transform.transform_schema(model.model_json_schema())


PAIRS = [(t, m) for t in ("openai", "anthropic") for m in MODELS]


@pytest.mark.parametrize(("target", "model"), PAIRS, ids=[f"{t}-{m.__name__}" for t, m in PAIRS])
def test_what_the_sdk_sends_is_not_refused_unless_documented(target, model):
    v = judge_schema(model.__name__, sent(target, model), target)
    refused = {f.rule.id for f in v.refused}
    expected = DOCUMENTED_REFUSALS.get((target, model.__name__), set())
    assert refused == expected, [(f.rule.id, f.pointer, f.message) for f in v.refused]
    for rid in refused:
        assert TABLES[target].rules[rid].source.startswith("https://")


def test_the_sdks_really_send_what_the_tables_used_to_refuse():
    """The inputs are not vacuous: openai-python keeps a non-null ``default`` and
    ``minLength``/``maxLength``, and the examples and ``$comment`` pydantic writes."""
    defaults = sent("openai", WithDefaults)
    assert defaults["properties"]["retries"]["default"] == 3
    code = sent("openai", Constrained)["properties"]["code"]
    assert code["minLength"] == 2 and code["maxLength"] == 8
    doc = sent("openai", Documented)["properties"]
    assert doc["name"]["examples"] == ["Ada"] and doc["when"]["$comment"] == "ISO 8601"


def test_openai_length_is_accepted_with_a_residual_not_refused():
    """minLength/maxLength: accepted (live probe, pydantic-ai #7400), not documented as
    enforced: the verdict keeps them as the residual to re-check."""
    v = judge_schema("Constrained", sent("openai", Constrained), "openai")
    assert v.verdict == "accepted_ignored"
    assert {f.pointer for f in v.residual} == {
        "/properties/code/minLength",
        "/properties/code/maxLength",
    }


@pytest.mark.parametrize("model", [WithDefaults, WithEnum, Documented, Mixed])
def test_openai_annotations_the_sdk_sends_are_accepted(model):
    assert judge_schema(model.__name__, sent("openai", model), "openai").verdict == "accepted"
