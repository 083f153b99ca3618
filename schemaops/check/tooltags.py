"""Compile and walk the structural tag an engine builds for a tool set (``tool_choice`` auto
with a tool-call parser), as ``check`` and ``compare`` report it.

Why: ``engines/structural_tags.py`` says *what* SGLang and vLLM compile; this module says
what it costs and what it enforces, with evidence: the tag is compiled with the library the
engine would use (xgrammar's structural-tag API; llguidance ``StructTag`` for SGLang's
legacy tag, as ``sglang/srt/constrained/llguidance_backend.py`` does), then real call
texts are pushed token by token through a fresh matcher on the real tokenizer
(``compare/enforce.py`` ``walk``):

- valid: one call per tool with a valid example, in the tag's own format (``begin``,
  ``json.dumps`` of the arguments, ``end``), and under ``auto`` a plain answer;
- invalid, index 0: a call to ``UNKNOWN_TOOL``, which the tag must refuse after the
  trigger (``unknown_tool`` ``refused``/``accepted``); under ``required``/named a plain
  answer; under a named choice a call to another tool of the set (``wrong_tool``); for each
  *strict* tool its first invalid example (non-strict tools' arguments are
  any JSON in both engines: reported as such, not walked as invalid).

The result has compare's shape (``compare/model.py``) plus ``toolset``, so ``gate.evaluate``
judges it like a schema. Compiled and walked in this process (a structural tag is not a
schema that ``compare``'s isolated workers take).
"""

from __future__ import annotations

import json
import time
from typing import Any

from schemaops.backends.base import CompiledGrammar, UnsupportedSchema
from schemaops.compare.enforce import locate, summarize, walk
from schemaops.compare.model import ERROR, OK, UNSUPPORTED, empty_result, unwalked
from schemaops.engines.structural_tags import ToolTag

#: a function name no tool set holds (``check/toolsets.py`` refuses a set that has it)
UNKNOWN_TOOL = "unknown_tool_not_offered"
#: the keyword of the walked call to another tool of the set under a named choice (the
#: audit's name for such a call, ``audit/verdict/toolcalls.py``)
WRONG_TOOL = "wrong_tool"
#: the plain answer a model may give under ``auto`` (and must not under ``required``)
ANSWER = "Your order shipped yesterday and should arrive on Friday."

_NO_LLG_VLLM = (
    "vLLM 0.32.0 compiles tool-call structural tags with xgrammar only: "
    "v1/structured_output/backend_guidance.py reads only the legacy 'structures' shape"
)
_NO_OUTLINES = "neither engine compiles structural tags with outlines"


def compile_tag(backend: Any, tt: ToolTag) -> CompiledGrammar:
    """Compile ``tt.tag`` on a ``schemaops.backends`` backend as ``tt.engine`` does."""
    tag = tt.tag or {}
    legacy = "structures" in tag
    if backend.name == "xgrammar":
        import xgrammar as xgr

        from schemaops.backends.xgrammar import XGrammarCompiled

        if legacy:  # sglang/srt/constrained/xgrammar_backend.py dispatch_structural_tag
            items = [
                xgr.StructuralTagItem(
                    begin=s["begin"], schema=json.dumps(s["schema"]), end=s["end"]
                )
                for s in tag["structures"]
            ]
            new = xgr.StructuralTag.from_legacy_structural_tag(items, tag["triggers"])
            new.format.at_least_one = tag.get("at_least_one", False)
            return XGrammarCompiled(backend.compiler.compile_structural_tag(new))
        return XGrammarCompiled(backend.compiler.compile_structural_tag(json.dumps(tag)))
    if backend.name == "llguidance":
        if not legacy:
            raise UnsupportedSchema(_NO_LLG_VLLM)
        import llguidance

        from schemaops.backends.llguidance import LLGuidanceCompiled

        triggers = tag["triggers"]
        tags = [  # sglang/srt/constrained/llguidance_backend.py: at_least_one is dropped
            llguidance.StructTag(
                begin=s["begin"],
                grammar=s["schema"],
                end=s["end"],
                trigger=next((t for t in triggers if s["begin"].startswith(t)), triggers[0]),
            )
            for s in tag["structures"]
        ]
        grammar = llguidance.StructTag.to_grammar(tags)
        m = llguidance.LLMatcher(backend.lltok, grammar, log_level=0)
        if m.is_error():
            raise RuntimeError(m.get_error())
        return LLGuidanceCompiled(m, grammar)
    raise UnsupportedSchema(_NO_OUTLINES)


def call_text(tt: ToolTag, name: str, args: Any) -> str:
    """The call text the tag describes for ``name`` (its first form)."""
    forms = tt.forms or {}
    begin, end = forms.get(name) or next(iter(forms.values()))
    if name not in forms:  # an unknown tool: the same format, another name
        first = next(iter(forms))
        begin = begin.replace(f'"{first}"', f'"{name}"', 1)
    return begin + json.dumps(args) + end


def tag_instances(tt: ToolTag, examples: dict[str, tuple[list, list]]) -> list[dict[str, Any]]:
    """The walked texts (module docstring); ``examples``: tool -> (valid, invalid) args."""
    required = tt.mode != "auto"
    named = tt.mode[len("named:") :] if tt.mode.startswith("named:") else None
    any_args = next((good[0] for good, _ in examples.values() if good), {})
    out = [
        {
            "kind": "invalid",
            "index": 0,
            "keyword": "unknown_tool",
            "text": call_text(tt, UNKNOWN_TOOL, any_args),
        }
    ]
    valid: list[str] = [] if required else [ANSWER]
    if required:
        out.append({"kind": "invalid", "index": 1, "keyword": "no_tool_call", "text": ANSWER})
    if named is not None:  # a call to another tool of the set, in the named tool's format
        other = next((n for n, (good, _) in examples.items() if n != named and good), None)
        if other is not None:
            text = call_text(tt, other, examples[other][0][0])
            out.append({"kind": "invalid", "index": len(out), "keyword": WRONG_TOOL, "text": text})
    for name in tt.forms or {}:
        good, bad = examples.get(name, ([], []))
        if named is not None and name != named:
            continue
        if good:
            valid.append(call_text(tt, name, good[0]))
        if bad and name in tt.strict_tools:
            kw = f"parameters:{name}"
            text = call_text(tt, name, bad[0])
            out.append({"kind": "invalid", "index": len(out), "keyword": kw, "text": text})
    out += [{"kind": "valid", "index": i, "keyword": None, "text": t} for i, t in enumerate(valid)]
    return out


def tag_result(
    backend: Any, tt: ToolTag, instances: list[dict[str, Any]], name: str
) -> dict[str, Any]:
    """Compile ``tt`` cold on ``backend`` and walk ``instances``: a compare-shaped result."""
    from schemaops.compare.core import percentiles

    result = empty_result(name, backend.name)
    t0 = time.perf_counter()
    try:
        compiled = compile_tag(backend, tt)
    except UnsupportedSchema as exc:
        result.update(status=UNSUPPORTED, error=str(exc))
    except Exception as exc:  # the library's own error
        result.update(status=ERROR, error=f"{type(exc).__name__}: {exc}"[:2000])
    if result["status"] != OK:
        result["enforcement"] = summarize(unwalked(instances), result["status"])
        return result
    result["compile_ms"] = round((time.perf_counter() - t0) * 1000, 3)
    rust = backend.tokenizer.backend_tokenizer
    bitmask = backend.allocate_bitmask()
    details: list[dict[str, Any]] = []
    mask_ns: list[int] = []
    adv_ns: list[int] = []
    for inst in instances:
        enc = rust.encode(inst["text"], add_special_tokens=False)
        w = walk(compiled, bitmask, enc.ids, enc.offsets, backend.stop_token_id)
        if inst["kind"] == "valid":
            mask_ns += w.mask_ns
            adv_ns += w.advance_ns
        outcome = (
            "accepted"
            if w.reached_stop
            else ("rejected" if w.reject_token is not None else "incomplete")
        )
        where = (
            locate(inst["text"], w.reject_offset, w.reject_end)[0]
            if outcome == "rejected"
            else None
        )
        off = w.reject_offset if w.reject_offset is not None else len(inst["text"])
        details.append(
            {
                "kind": inst["kind"],
                "index": inst["index"],
                "source": "toolset",
                "keyword": inst["keyword"],
                "outcome": outcome,
                "tokens": w.n_tokens,
                "token": w.reject_token,
                "offset": w.reject_offset if outcome == "rejected" else None,
                "end": w.reject_end if outcome == "rejected" else None,
                "where": where,
                "content": False,
                "text": inst["text"][max(0, off - 40) : off + 40],
            }
        )
    result["mask_us"] = percentiles(mask_ns)
    result["advance_us"] = percentiles(adv_ns)
    result["mask_steps"] = len(mask_ns)
    result["enforcement"] = summarize(details, OK)
    return result
