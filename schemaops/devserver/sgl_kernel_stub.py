"""CPU stand-in for ``sgl_kernel``: ``sgl_kernel/__init__.py`` on the server's PYTHONPATH.

The CPU build of ``sgl_kernel`` is not on PyPI. On CPUs without AMX, SGLang 0.5.23 runs
torch-native layers but still imports helpers from it at module level under ``is_cpu()``:

- used when serving: ``assign_req_to_token_pool_cpu`` (``srt/mem_cache/allocation.py``) and
  ``copy_all_layer_kv_cache_cpu`` (``kernels/ops/kvcache/cache_move.py``): plain-torch
  versions below, with the semantics of the Triton kernels they replace;
- imported but only called by speculative decoding (``kernels/ops/speculative/*.py``): they
  exist so the import succeeds and raise a clear error if ever called.

This file runs inside the server's virtual environment: it must import nothing but torch.
"""

from __future__ import annotations

import ctypes

import torch

__version__ = "0.0.0+schemaops.cpu.stub"


def assign_req_to_token_pool_cpu(
    req_pool_indices: torch.Tensor,
    req_to_token: torch.Tensor,
    start_offset: torch.Tensor,
    end_offset: torch.Tensor,
    out_cache_loc: torch.Tensor,
    pool_len: int,
) -> None:
    """Write each request's new KV-cache locations into its row of the req-to-token table.

    Request ``i`` owns ``out_cache_loc[sum(len_0..len_{i-1}) : ... + len_i]`` where
    ``len_i = end_offset[i] - start_offset[i]``; they go to
    ``req_to_token[req_pool_indices[i], start_offset[i]:end_offset[i]]``.
    """
    del pool_len  # the row length is req_to_token.shape[1]
    starts = start_offset.tolist()
    ends = end_offset.tolist()
    rows = req_pool_indices.tolist()
    pos = 0
    for row, start, end in zip(rows, starts, ends, strict=True):
        n = end - start
        if n > 0:
            req_to_token[row, start:end] = out_cache_loc[pos : pos + n].to(req_to_token.dtype)
        pos += n


def copy_all_layer_kv_cache_cpu(
    data_ptrs: torch.Tensor,
    strides: torch.Tensor,
    tgt_loc: torch.Tensor,
    src_loc: torch.Tensor,
) -> None:
    """For each KV buffer (raw address, row stride in bytes) copy row ``src[j]`` to ``tgt[j]``.

    All source rows are read before any target row is written, so overlapping source and
    target sets behave like the in-place-safe Triton kernel.
    """
    src = src_loc.tolist()
    tgt = tgt_loc.tolist()
    if not src:
        return
    for base, stride in zip(data_ptrs.tolist(), strides.tolist(), strict=True):
        rows = [ctypes.string_at(base + s * stride, stride) for s in src]
        for t, row in zip(tgt, rows, strict=True):
            ctypes.memmove(base + t * stride, row, stride)


def _speculative_only(name: str):
    """A placeholder for a kernel SGLang imports on CPU but calls only for speculative decoding."""

    def unsupported(*args: object, **kwargs: object) -> None:
        raise NotImplementedError(
            f"sgl_kernel.{name}: the schemaops CPU stub has no speculative-decoding kernels"
        )

    unsupported.__name__ = name
    return unsupported


# Imported at start by sglang/kernels/ops/speculative/{spec_tree,eagle,cache_locs,
# multi_layer_eagle}.py when is_cpu(); never called without --speculative-algorithm.
build_tree_kernel_efficient_cpu = _speculative_only("build_tree_kernel_efficient_cpu")
verify_tree_greedy_cpu = _speculative_only("verify_tree_greedy_cpu")
fill_accept_out_cache_loc_cpu = _speculative_only("fill_accept_out_cache_loc_cpu")
fill_bonus_tokens_cpu = _speculative_only("fill_bonus_tokens_cpu")
assign_draft_cache_locs_contiguous_cpu = _speculative_only("assign_draft_cache_locs_contiguous_cpu")
assign_extend_cache_locs_cpu = _speculative_only("assign_extend_cache_locs_cpu")
rotate_input_ids_cpu = _speculative_only("rotate_input_ids_cpu")
