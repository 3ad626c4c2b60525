"""moefr._npu_init_routing_v2 - torch_npu.npu_moe_init_routing_v2 on aclnnMoeInitRoutingV3, as
torch_npu's wrapper (op_plugin/ops/opapi/MoeInitRoutingV2KernelNpuOpApi.cpp) calls it, with the
few conveniences listed in npu_moe_init_routing_v2's docstring (docs/CANN_COMPAT.md, "moefr.torch_npu").
Autograd (beyond torch_npu, which registers none): x through aclnnMoeInitRoutingV2Grad."""

import torch
from torch.autograd.function import once_differentiable

from . import _routing
from ._npu_args import _check, _cpu


_CUMSUM, _COUNT, _KEY_VALUE = 0, 1, 2


def _key_value(counts, expert_num, first):
    """(expert_num, 2) int64 rows [expert, count] for count > 0, ascending, then rows of zeros."""
    out = torch.zeros((expert_num, 2), dtype=torch.int64)
    nz = torch.nonzero(counts > 0).reshape(-1)
    out[: nz.numel(), 0] = nz + first
    out[: nz.numel(), 1] = counts[nz]
    return out


class _InitRoutingV3(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, expert_idx, scale, offset, args):
        (capacity, expert_num, mode, num_type, quant, rng, row_type) = args
        ex, idx, cnt, sc = _routing.init_routing_v3(x, expert_idx, scale, offset, -1, capacity, expert_num, mode,
                                                    num_type, True, quant, rng, row_type)
        ctx.N, ctx.K, ctx.mode, ctx.rows = x.shape[0], expert_idx.shape[1], mode, ex.shape[0]
        ctx.differentiable = quant == -1 and x.is_floating_point()
        # the gather-layout index (slot -> row or -1) the backward reads
        gather = idx
        if row_type == 1:
            T = idx.numel()
            L = rng[1] - rng[0]
            flat = expert_idx.reshape(-1)
            A = int(((flat >= rng[0]) & (flat < rng[0] + L)).sum())
            gather = torch.full((T,), -1, dtype=torch.int32)
            gather[idx[:A].long()] = torch.arange(A, dtype=torch.int32)
        ctx.save_for_backward(gather)
        for t in (idx, cnt, sc):
            ctx.mark_non_differentiable(t)
        if not ctx.differentiable:
            ctx.mark_non_differentiable(ex)
        return ex, idx, cnt, sc

    @staticmethod
    @once_differentiable
    def backward(ctx, g_ex, *_):
        if g_ex is None or not ctx.differentiable or not ctx.needs_input_grad[0]:
            return (None,) * 5
        (gather,) = ctx.saved_tensors
        H = g_ex.shape[-1]
        if gather.numel() == 0:
            return (torch.zeros((ctx.N, H), dtype=g_ex.dtype),) + (None,) * 4
        # drop/pad layout: -1 slots are skipped; a dropless (T, H) gradient is one "expert" of T rows
        g = g_ex.contiguous() if ctx.mode == 1 else g_ex.contiguous().reshape(1, -1, H)
        g_x = _routing.init_routing_v2_grad(g, gather, ctx.K, 1, 0, ctx.N)
        return (g_x,) + (None,) * 4


def npu_moe_init_routing_v2(x, expert_idx, *, scale=None, offset=None, active_num=-1, expert_capacity=-1,
                            expert_num=-1, drop_pad_mode=0, expert_tokens_num_type=0,
                            expert_tokens_num_flag=False, quant_mode=-1, active_expert_range=[],
                            row_idx_type=0, x_dtype=None):
    """torch_npu.npu_moe_init_routing_v2 -> (expanded_x, expanded_row_idx, expert_tokens_count_or_cumsum,
    expanded_scale), running aclnnMoeInitRoutingV3 with torch_npu's arguments.

    As torch_npu: x and expert_idx 2-D; expanded_x has min(active_num, N*K) rows (N*K when active_num
    <= 0) in dropless mode, (expert_num, expert_capacity, H) with drop_pad_mode 1, int8 when
    quant_mode is 0 or 1; expert_tokens is int64 (end - start,) or (expert_num, 2) for key_value;
    expanded_scale float32 with one entry per expanded row; bs == 0 returns without calling the
    operator (tokens zeroed). Everything else is the operator's (include/aclnnop/aclnn_moe_init_routing_v3.h):
    row_idx_type 0 = -1 outside the range, 1 = the whole sorted permutation; ids outside the range
    (also negative or >= expert_num) are not routed; int8 x moves as is with quant_mode -1;
    quant_mode 0 static (scale, offset of shape (1,)), 1 dynamic (optional smooth scale
    (end - start, H)); other quant modes fail in the library (MoefrError).

    Calls the Ascend 950 tiling refuses but the A2/A3 one takes give A2/A3's results on every product:
    - active_expert_range [] means [0, expert_num];
    - expert_tokens_num_flag False: the counts returned are zeros (the operator runs with True);
    - active_num other than -1 and N*K: the first min(active_num, N*K) rows (the operator runs with -1).
    And drop_pad_mode 1 with expert_tokens_num_type 0 or 2 (refused by both with the flag): run as
    count, cumulated / keyed here.
    Autograd (beyond torch_npu): x gets aclnnMoeInitRoutingV2Grad when quant_mode is -1."""
    _cpu(x, "x")
    _cpu(expert_idx, "expert_idx")
    _cpu(scale, "scale")
    _cpu(offset, "offset")
    _check(x.dim() == 2, "The x should be 2-Dimension, current is %d-Dimension." % x.dim())
    _check(expert_idx.dim() == 2,
           "The expert_idx should be 2-Dimension, current is %d-Dimension." % expert_idx.dim())
    _check(x_dtype is None, "x_dtype (hifloat8/fp4 reinterpretation) is not supported")
    rng = list(active_expert_range) if active_expert_range is not None else []
    if not rng:
        rng = [0, int(expert_num)]
    _check(len(rng) == 2, "The length of list active_expert_range should be 2, current is %d." % len(rng))
    N, H = x.shape
    K = expert_idx.shape[1]
    T = N * K
    L = int(rng[1]) - int(rng[0])
    rows = T if active_num <= 0 else min(int(active_num), T)
    num_type = int(expert_tokens_num_type)
    if N == 0:
        dt = x.dtype if quant_mode == -1 else torch.int8
        ex = torch.empty((expert_num, expert_capacity, H) if drop_pad_mode == 1 else (rows, H), dtype=dt)
        tokens = torch.zeros((expert_num, 2) if num_type == _KEY_VALUE else (max(L, 0),), dtype=torch.int64)
        srows = expert_num * expert_capacity if drop_pad_mode == 1 else rows
        return ex, torch.empty((T,), dtype=torch.int32), tokens, torch.empty((max(srows, 0),), dtype=torch.float32)
    op_type = _COUNT if drop_pad_mode == 1 and num_type in (_CUMSUM, _KEY_VALUE) else num_type
    args = (int(expert_capacity), int(expert_num), int(drop_pad_mode), op_type, int(quant_mode),
            [int(v) for v in rng], int(row_idx_type))
    ex, idx, cnt, sc = _InitRoutingV3.apply(x, expert_idx, scale, offset, args)
    if drop_pad_mode == 1 and num_type == _CUMSUM:
        cnt = torch.cumsum(cnt, 0)
    elif drop_pad_mode == 1 and num_type == _KEY_VALUE:
        cnt = _key_value(cnt, int(expert_num), int(rng[0]))
    if not expert_tokens_num_flag:
        cnt = torch.zeros_like(cnt)
    if drop_pad_mode == 0 and rows < T:
        ex, sc = ex[:rows], sc[:rows]
    return ex, idx, cnt, sc
