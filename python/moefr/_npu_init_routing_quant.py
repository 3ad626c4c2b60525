"""moefr._npu_init_routing_quant - torch_npu.npu_moe_init_routing_quant on aclnnMoeInitRoutingQuantV2
(op_plugin MoeInitRoutingQuantKernelNpuOpApi.cpp: the wrapper's own checks, its output shapes, the
arguments passed straight through). torch_npu registers no gradient for it (int8 outputs); neither
does moefr. aclnnMoeInitRoutingQuant (the first version) has no torch_npu function; moefr._routing's
init_routing_quant reaches it."""

import torch

from . import _routing
from ._npu_args import _check, _cpu


def npu_moe_init_routing_quant(x, expert_idx, *, scale=None, offset=None, active_num=1024, expert_capacity=0,
                               expert_num=256, drop_pad_mode=0, expert_tokens_num_mode=0,
                               expert_tokens_before_capacity_flag=False, quant_mode=1):
    """torch_npu.npu_moe_init_routing_quant -> (expanded_x int8, expanded_row_idx int32,
    expert_tokens_count_or_cumsum int32 | None, expert_tokens_before_capacity int32 | None,
    dynamic_quant_scale float32 | None).

    x (N, H) float16/bfloat16/float32; expert_idx (N, K) int32. The routing of
    npu_moe_init_routing_v2's operator (aclnnMoeInitRoutingV2: stable sort by expert,
    expanded_row_idx[perm[i]] = i, drop/pad slots when drop_pad_mode = 1); expanded_x is
    (min(N*K, active_num), H) when active_num > 0, (N*K, H) otherwise, or (expert_num,
    expert_capacity, H) in drop/pad mode. quant_mode 0: static, scale and offset (1,) float32,
    q = rint(fp16(fp16(x) * fp16(scale)) + fp16(offset)) in fp16 steps, half to even, saturated;
    quant_mode 1: dynamic, optional smooth scale (1, H) or (expert_num, H) float32,
    s = max|x * scale| / 127 per row, q = round half away from zero(x * scale / s), the scales
    returned. expert_tokens_num_mode: 0 none, 1 cumsum, 2 count (dropless only). None where
    torch_npu returns an undefined tensor."""
    for name, t in (("x", x), ("expert_idx", expert_idx)):
        _check(isinstance(t, torch.Tensor) and t.device.type == "cpu", "%s must be a CPU torch.Tensor" % name)
    _cpu(scale, "scale")
    _cpu(offset, "offset")
    _check(x.dim() == 2, "Input tensor 'x' must be 2-dimensional, but got dimension %d" % x.dim())
    _check(expert_idx.dim() == 2,
           "Input tensor 'expert_idx' must be 2-dimensional, but got dimension %d" % expert_idx.dim())
    _check(x.shape[0] == expert_idx.shape[0],
           "The number of rows in input 'x' (%d) must match the number of rows in 'expert_idx' (%d)."
           % (x.shape[0], expert_idx.shape[0]))
    _check(drop_pad_mode in (0, 1), "Parameter 'drop_pad_mode' must be 0 or 1, but got: %s" % (drop_pad_mode,))
    _check(quant_mode in (0, 1), "Parameter 'quant_mode' must be 0 or 1, but got: %s" % (quant_mode,))
    _check(expert_tokens_num_mode in (0, 1, 2),
           "Parameter 'expert_tokens_num_mode' must be 0, 1, or 2, but got: %s" % (expert_tokens_num_mode,))
    N, K = expert_idx.shape
    T = N * K
    active_num = int(active_num)
    rows = min(T, active_num) if active_num > 0 else T
    return _routing.init_routing_quant_v2(
        x.detach(), expert_idx, None if scale is None else scale.detach(),
        None if offset is None else offset.detach(), active_num, int(expert_capacity), int(expert_num),
        int(drop_pad_mode), int(expert_tokens_num_mode), bool(expert_tokens_before_capacity_flag),
        int(quant_mode), rows)
