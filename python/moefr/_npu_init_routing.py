"""moefr._npu_init_routing - torch_npu.npu_moe_init_routing (the first version) on aclnnMoeInitRouting.
torch_npu registers no gradient for it; neither does moefr (npu_moe_init_routing_v2 has one)."""

import torch

from . import _routing
from ._npu_args import _check


def npu_moe_init_routing(x, row_idx, expert_idx, active_num):
    """torch_npu.npu_moe_init_routing -> (expanded_x, expanded_row_idx, expanded_expert_idx).

    x (N, H); row_idx, expert_idx (N, K) int32 (row_idx as npu_moe_gating_top_k_softmax gives it,
    k*N + r). active_num >= 0 is clamped to N as the wrapper does; expanded_x is (active_num * K, H).
    perm = stable sort of the flat expert ids; expanded_expert_idx = the sorted ids,
    expanded_row_idx[row_idx at perm[i]] = i (column layout, what npu_moe_finalize_routing reads with
    drop_pad_mode 0), expanded_x[i] = x[(row_idx at perm[i]) % N]."""
    for name, t in (("x", x), ("row_idx", row_idx), ("expert_idx", expert_idx)):
        _check(isinstance(t, torch.Tensor) and t.device.type == "cpu", "%s must be a CPU torch.Tensor" % name)
    _check(x.dim() == 2, "x should be 2D, got %dD" % x.dim())
    _check(expert_idx.dim() == 2 and row_idx.dim() == 2, "row_idx and expert_idx should be 2D")
    _check(expert_idx.dtype == torch.int32 and row_idx.dtype == torch.int32,
           "int32 row_idx and expert_idx expected, got %s and %s" % (row_idx.dtype, expert_idx.dtype))
    _check(int(active_num) >= 0, "active_num must be non-negative, got %d" % int(active_num))
    _check(x.shape[0] == expert_idx.shape[0], "x and expert_idx rows differ")
    _check(tuple(row_idx.shape) == tuple(expert_idx.shape), "row_idx and expert_idx shapes differ")
    n = x.shape[0]
    active = min(int(active_num), n)
    return _routing.init_routing(x.detach(), row_idx, expert_idx, active)
