"""moefr.torch_npu - torch_npu's MoE routing functions on CPU tensors, backed by libmoefr.

    from moefr import torch_npu
    expanded_x, row_idx, counts, _ = torch_npu.npu_moe_init_routing_v2(x, topk_ids, active_num=n * k,
                                                                       expert_num=E)

Names, positional order, keyword-only markers, defaults and return tuples are those of torch_npu's
op_plugin (config/op_plugin_functions.yaml, master branch; differences to torch_npu 7.0.0 are noted
per function and in docs/CANN_COMPAT.md, section "moefr.torch_npu"). The autograd is the one
torch_npu registers in config/derivatives.yaml (npu_moe_token_permute: tokens; npu_moe_token_unpermute:
permuted_tokens and probs) plus, beyond torch_npu, npu_moe_init_routing_v2 (x, through
aclnnMoeInitRoutingV2Grad) and npu_moe_finalize_routing (expanded_permuted_rows, skip1, skip2, bias,
scales, through aclnnMoeFinalizeRoutingV2Grad). Where torch_npu's wrapper differs from the aclnn
operator (npu_moe_init_routing_v2 is aclnnMoeInitRoutingV3's interface), the wrapper is followed and
translated onto the operator moefr has. npu_moe_init_routing (the first version) has no gradient,
in torch_npu or here. Errors: MoefrError (a ValueError and a RuntimeError) carrying the library's
message, or ValueError/TypeError for what torch_npu's wrapper itself rejects."""

import torch
from torch.autograd.function import once_differentiable

from . import _routing
from ._lib import MoefrError  # noqa: F401
from ._npu_init_routing import npu_moe_init_routing
from ._npu_gating import npu_moe_gating_top_k_softmax, npu_moe_gating_top_k_softmax_v2
from ._npu_permute import npu_moe_token_permute, npu_moe_token_unpermute
from ._npu_mlp import npu_swiglu, npu_swiglu_backward
from ._npu_gmm import npu_grouped_matmul
from ._npu_gating_topk import npu_moe_gating_top_k, npu_moe_gating_top_k_backward

__all__ = ["npu_moe_gating_top_k_softmax", "npu_moe_gating_top_k_softmax_v2", "npu_moe_init_routing",
           "npu_moe_init_routing_v2",
           "npu_moe_compute_expert_tokens", "npu_moe_token_permute", "npu_moe_token_unpermute",
           "npu_moe_finalize_routing", "npu_swiglu", "npu_swiglu_backward", "npu_grouped_matmul",
           "npu_moe_gating_top_k", "npu_moe_gating_top_k_backward"]


def _check(cond, msg):
    if not cond:
        raise ValueError("moefr.torch_npu: " + msg)


def _cpu(t, name):
    if t is not None and not isinstance(t, torch.Tensor):
        raise TypeError("moefr.torch_npu: %s must be a torch.Tensor, got %s" % (name, type(t).__name__))
    if t is not None and t.device.type != "cpu":
        raise TypeError("moefr.torch_npu: %s is on %s; moefr runs on CPU tensors" % (name, t.device))
    return t


# --------------------------------------------------------------------------------------------
# npu_moe_init_routing_v2
# --------------------------------------------------------------------------------------------

_CUMSUM, _COUNT, _KEY_VALUE = 0, 1, 2  # expert_tokens_num_type, numbered as aclnnMoeInitRoutingV3 does
_V2_CUMSUM, _V2_COUNT = 1, 2           # aclnnMoeInitRoutingV2's expertTokensCountOrCumsumFlag


def _key_value(counts, expert_num, first=0):
    """(expert_num, 2) int64: [expert, count] for the experts with count > 0 in ascending order
    (expert = first + position in counts), then rows of zeros (CANN leaves those rows unspecified;
    moefr writes 0)."""
    out = torch.zeros((expert_num, 2), dtype=torch.int64)
    nz = torch.nonzero(counts > 0).reshape(-1)
    out[: nz.numel(), 0] = nz + first
    out[: nz.numel(), 1] = counts[nz]
    return out


class _InitRoutingV2(torch.autograd.Function):
    """aclnnMoeInitRoutingV2 with its backward. overflow >= 0: the ids were remapped for an active
    expert range (in range -> id - start, outside -> overflow, the last of expert_num); rows past the
    in-range ones are zeroed and the slots outside get index -1 (V3's rule)."""

    @staticmethod
    def forward(ctx, x, expert_idx, active, capacity, expert_num, mode, count_flag, before_flag, overflow):
        ex, idx, cnt, before = _routing.init_routing_v2(x, expert_idx, active, capacity, expert_num, mode,
                                                        count_flag, before_flag)
        ctx.K = expert_idx.shape[1] if expert_idx.dim() == 2 else 1
        ctx.N = x.shape[0]
        ctx.mode = mode
        T = idx.numel()
        valid = ex.shape[0] if mode == 0 else 0
        idx_out = idx
        if overflow >= 0:
            valid = min(valid, int(cnt[:overflow].sum()))
            ex[valid:] = 0
            idx_out = torch.where(expert_idx.reshape(-1) == overflow, torch.full_like(idx, -1), idx)
        ctx.valid = valid if mode == 0 else T
        ctx.save_for_backward(idx)
        outs = [ex, idx_out]
        for t in (cnt, before):
            outs.append(t)
        for t in outs[1:]:
            if t is not None:
                ctx.mark_non_differentiable(t)
        return tuple(outs)

    @staticmethod
    @once_differentiable
    def backward(ctx, g_ex, *_):
        (idx,) = ctx.saved_tensors
        if g_ex is None or not ctx.needs_input_grad[0]:
            return (None,) * 9
        if ctx.valid == 0:
            return (torch.zeros((ctx.N, g_ex.shape[-1]), dtype=g_ex.dtype),) + (None,) * 8
        if ctx.mode == 0 and ctx.valid < idx.numel():
            # dropless with fewer rows than slots: the operator keeps slots whose row is < activeNum
            g_x = _routing.init_routing_v2_grad(g_ex[:ctx.valid].contiguous(), idx, ctx.K, 0, ctx.valid, ctx.N)
        else:
            g_x = _routing.init_routing_v2_grad(g_ex.contiguous(), idx, ctx.K, ctx.mode, 0, ctx.N)
        return (g_x,) + (None,) * 8


def npu_moe_init_routing_v2(x, expert_idx, *, scale=None, offset=None, active_num=-1, expert_capacity=-1,
                            expert_num=-1, drop_pad_mode=0, expert_tokens_num_type=0,
                            expert_tokens_num_flag=False, quant_mode=-1, active_expert_range=[],
                            row_idx_type=0, x_dtype=None):
    """torch_npu.npu_moe_init_routing_v2 -> (expanded_x, expanded_row_idx, expert_tokens_count_or_cumsum,
    expanded_scale), running aclnnMoeInitRoutingV2.

    torch_npu's function is aclnnMoeInitRoutingV3's interface; this is how it maps onto V2:
    - expert_tokens_num_type counts as V3 does: 0 cumsum, 1 count, 2 key_value (V2's flag is 1 cumsum,
      2 count); the result is int64 of (expert_num,) ((expert_num, 2) for key_value), zeros when
      expert_tokens_num_flag is False. In drop_pad_mode 1 the counts are the before-capacity histogram
      (V2's expertTokensBeforeCapacityOut), cumulated for type 0.
    - active_num <= 0 means all N*K rows, otherwise min(active_num, N*K) rows (the wrapper's rule on
      every product; V2 on Ascend 950 would read a negative activeNum as T + activeNum).
    - row_idx_type 0 gives V2's expandedRowIdx (scatter: entry of flat slot r*K + k -> its row, -1 when
      dropped), 1 the inverse (gather: row -> flat slot), dropless only. This follows torch_npu's own
      test (test_npu_moe_init_routing_v2.py); the V3 doc names the two the other way round.
    - expanded_scale: scale (N,) float32 gathered to the rows (zeros where a row has no token);
      zeros when scale is None.
    - active_expert_range [start, end) (dropless only): slots whose expert is outside are not routed:
      index -1, the rows after the in-range ones are zeros (torch_npu's test golden), the counts cover
      the range (end - start entries). Implemented on V2 by remapping the outside ids to one extra
      expert sorted last.
    Not supported (ValueError): quant_mode other than -1 (torch_npu 7.0.0's default was 0, master's -1),
    offset, x_dtype, an active_expert_range in drop_pad_mode 1.

    Autograd (beyond torch_npu): expanded_x is differentiable in x through aclnnMoeInitRoutingV2Grad."""
    _cpu(x, "x")
    _cpu(expert_idx, "expert_idx")
    _cpu(scale, "scale")
    _check(x.dim() == 2, "x should be 2D, got %dD" % x.dim())
    _check(expert_idx.dim() == 2, "expert_idx should be 2D, got %dD" % expert_idx.dim())
    _check(quant_mode == -1, "quant_mode=%d is not supported (moefr has no quantised routing; use -1)"
           % quant_mode)
    _check(offset is None, "offset is only used with quantisation, which moefr does not support")
    _check(x_dtype is None, "x_dtype is not supported")
    rng = list(active_expert_range) if active_expert_range is not None else []
    _check(len(rng) in (0, 2), "active_expert_range must have 2 elements, got %s" % (rng,))
    ranged = len(rng) == 2 and rng != [0, expert_num]
    if ranged:
        _check(0 <= rng[0] < rng[1] <= expert_num,
               "active_expert_range %s must satisfy 0 <= start < end <= expert_num (%d)" % (rng, expert_num))
        _check(drop_pad_mode == 0, "active_expert_range other than [0, expert_num] needs drop_pad_mode 0")
    _check(drop_pad_mode in (0, 1), "drop_pad_mode must be 0 or 1, got %d" % drop_pad_mode)
    _check(expert_tokens_num_type in (0, 1, 2),
           "expert_tokens_num_type must be 0, 1 or 2, got %d" % expert_tokens_num_type)
    _check(row_idx_type in (0, 1), "row_idx_type must be 0 or 1, got %d" % row_idx_type)
    _check(not (row_idx_type == 1 and drop_pad_mode == 1),
           "row_idx_type=1 (gather index) is defined for drop_pad_mode 0 only")
    N, K = x.shape[0], expert_idx.shape[1]
    _check(expert_idx.shape[0] == N, "x and expert_idx rows differ (%d vs %d)" % (N, expert_idx.shape[0]))
    if scale is not None:
        _check(scale.dim() == 1 and scale.shape[0] == N, "scale should be (%d,), got %s" % (N, tuple(scale.shape)))
    T = N * K
    want = bool(expert_tokens_num_flag)
    _check(not want or expert_num > 0, "expert_num must be > 0 to count tokens, got %d" % expert_num)
    ids = expert_idx
    overflow = -1
    if drop_pad_mode == 0:
        active = 0 if active_num <= 0 or active_num >= T else int(active_num)
        v2_flag = (_V2_CUMSUM if expert_tokens_num_type == _CUMSUM else _V2_COUNT) if want else 0
        before_flag = False
        # V2 takes expertNum 0 for an uncounted dropless call; torch_npu's default is -1.
        en = int(expert_num) if expert_num > 0 else 0
        if ranged:
            # Experts outside [start, end) become one overflow expert L after the range; V2's stable
            # sort then puts every in-range slot first, in the same order as the unmapped ids.
            L = rng[1] - rng[0]
            inside = (expert_idx >= rng[0]) & (expert_idx < rng[1])
            ids = torch.where(inside, expert_idx - rng[0], torch.full_like(expert_idx, L)).to(torch.int32)
            overflow, en, v2_flag = L, L + 1, _V2_COUNT
    else:
        active, v2_flag, before_flag, en = 0, 0, want, int(expert_num)
    cap = int(expert_capacity) if drop_pad_mode == 1 else max(0, int(expert_capacity))  # unused dropless
    ex, idx, cnt, before = _InitRoutingV2.apply(x, ids, active, cap, en, int(drop_pad_mode), v2_flag,
                                                before_flag, overflow)
    E = max(int(expert_num), 0)
    L = rng[1] - rng[0] if ranged else E
    if not want:
        tokens = torch.zeros((E, 2) if expert_tokens_num_type == _KEY_VALUE else (L,), dtype=torch.int64)
    else:
        counts = (cnt if drop_pad_mode == 0 else before).to(torch.int64)
        if ranged:
            counts = counts[:L]
            if expert_tokens_num_type == _CUMSUM:
                counts = torch.cumsum(counts, 0)
        if drop_pad_mode == 1 and expert_tokens_num_type == _CUMSUM:
            counts = torch.cumsum(counts, 0)
        if expert_tokens_num_type == _KEY_VALUE:  # from the counts (V2 flag 2 / before-capacity)
            counts = _key_value(counts, E, rng[0] if ranged else 0)
        tokens = counts
    rows = ex.shape[0] * (ex.shape[1] if drop_pad_mode == 1 else 1)
    expanded_scale = torch.zeros((rows,), dtype=torch.float32)
    if scale is not None:
        j = torch.nonzero((idx >= 0) & (idx < rows)).reshape(-1)
        expanded_scale[idx[j].long()] = scale.to(torch.float32)[j // K]
    if row_idx_type == 1:
        gather = torch.full((T,), -1, dtype=torch.int32)
        # slots with a row (not -1, not past the rows kept): a -1 must not index from the end
        j = torch.nonzero((idx >= 0) & (idx < rows)).reshape(-1) if drop_pad_mode == 0 else torch.arange(T)
        gather[idx[j].long()] = j.to(torch.int32)
        idx = gather
    return ex, idx, tokens, expanded_scale


# --------------------------------------------------------------------------------------------
# npu_moe_compute_expert_tokens
# --------------------------------------------------------------------------------------------

def npu_moe_compute_expert_tokens(sorted_expert_for_source_row, num_expert):
    """torch_npu.npu_moe_compute_expert_tokens -> Tensor (num_expert,) of the input's dtype (int32):
    out[e] = number of ids <= e in the sorted ids (aclnnMoeComputeExpertTokens)."""
    _cpu(sorted_expert_for_source_row, "sorted_expert_for_source_row")
    return _routing.compute_expert_tokens(sorted_expert_for_source_row, int(num_expert))


# --------------------------------------------------------------------------------------------
# npu_moe_finalize_routing
# --------------------------------------------------------------------------------------------

def npu_moe_finalize_routing(expanded_permuted_rows, skip1, skip2, bias, scales, expanded_src_to_dst_row,
                             export_for_source_row, drop_pad_mode=0, k=1):
    """torch_npu.npu_moe_finalize_routing -> Tensor, running aclnnMoeFinalizeRoutingV2 as torch_npu does
    when the CANN it runs on has V2 but not V4. drop_pad_mode None means 0. k is V4's attribute:
    like torch_npu on such a CANN, anything but None/1 is rejected (ValueError). (torch_npu 7.0.0 has no
    k argument.)

    Autograd (beyond torch_npu): expanded_permuted_rows and scales through
    aclnnMoeFinalizeRoutingV2Grad, skip1/skip2 get grad_out, bias the per-expert sum of
    scales * grad_out (moefr.moe_finalize_routing)."""
    from . import npu_moe_finalize_routing as _finalize
    _check(k is None or int(k) == 1,
           "k=%s needs aclnnMoeFinalizeRoutingV4, which moefr does not have (torch_npu rejects it the "
           "same way without V4)" % (k,))
    for name, t in (("expanded_permuted_rows", expanded_permuted_rows), ("skip1", skip1), ("skip2", skip2),
                    ("bias", bias), ("scales", scales), ("expanded_src_to_dst_row", expanded_src_to_dst_row),
                    ("export_for_source_row", export_for_source_row)):
        _cpu(t, name)
    mode = 0 if drop_pad_mode is None else int(drop_pad_mode)
    return _finalize(expanded_permuted_rows, skip1, skip2, bias, scales, expanded_src_to_dst_row,
                     export_for_source_row, mode)
