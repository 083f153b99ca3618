"""The CPU ``sgl_kernel`` stand-in matches the semantics of the Triton kernels it replaces.

Runs in the project's environment (torch only, no server); lives here because it belongs to
the dev server, so it carries the ``integration`` mark with the rest of this folder.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

STUB = Path(__file__).resolve().parents[2] / "schemaops" / "devserver" / "sgl_kernel_stub.py"


@pytest.fixture(scope="module")
def stub():
    spec = importlib.util.spec_from_file_location("sgl_kernel_stub", STUB)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_assign_req_to_token_pool(stub) -> None:
    table = torch.zeros((4, 10), dtype=torch.int32)
    rows = torch.tensor([2, 0])
    start = torch.tensor([3, 0])
    end = torch.tensor([5, 3])
    out = torch.tensor([11, 12, 21, 22, 23], dtype=torch.int64)
    stub.assign_req_to_token_pool_cpu(rows, table, start, end, out, table.shape[1])
    assert table[2, 3:5].tolist() == [11, 12]
    assert table[0, 0:3].tolist() == [21, 22, 23]
    assert int(table.sum()) == 11 + 12 + 21 + 22 + 23


def test_copy_all_layer_kv_cache_is_in_place_safe(stub) -> None:
    k = torch.arange(6 * 4, dtype=torch.float32).reshape(6, 4)
    v = -torch.arange(6 * 4, dtype=torch.float32).reshape(6, 4)
    k0, v0 = k.clone(), v.clone()
    ptrs = torch.tensor([k.data_ptr(), v.data_ptr()], dtype=torch.uint64)
    strides = torch.tensor([k.stride(0) * 4, v.stride(0) * 4], dtype=torch.int64)
    src, tgt = torch.tensor([0, 1]), torch.tensor([1, 5])  # row 1 is read and overwritten
    stub.copy_all_layer_kv_cache_cpu(ptrs, strides, tgt, src)
    for buf, orig in ((k, k0), (v, v0)):
        assert torch.equal(buf[1], orig[0]) and torch.equal(buf[5], orig[1])
        assert torch.equal(buf[[0, 2, 3, 4]], orig[[0, 2, 3, 4]])


def test_speculative_kernels_fail_loudly(stub) -> None:
    with pytest.raises(NotImplementedError, match="speculative"):
        stub.verify_tree_greedy_cpu()
