"""moefr._autograd - moe_finalize_routing as a torch.autograd.Function: the forward operator,
and a backward built on aclnnMoeFinalizeRoutingV2Grad plus exact x1/x2/bias gradients."""

import numpy as np
import torch
from torch.autograd.function import once_differentiable

from . import _ops


def _backward_index(idx, mode, R, K):
    """The backward reads the index in row layout (entry r*K + k); forward modes 0/1 hold it
    in column layout (entry k*R + r), so those are transposed (a small int32 copy)."""
    if mode in (0, 1) and K > 1:
        return idx.reshape(K, R).t().contiguous().reshape(-1)
    return idx


def round_from_f64(x, dtype):
    """float64 -> dtype, rounded once to nearest even. torch converts float64 to fp16/bf16
    through fp32, which rounds twice (a value just above a half-way point can land on it and
    then go to even); rounding to fp32 *to odd* first keeps the final rounding exact, since
    fp32 carries more than two extra bits over fp16 and bf16."""
    if dtype in (torch.float32, torch.float64):
        return x.to(dtype)
    f = x.to(torch.float32)
    back = f.to(torch.float64)
    inexact = back != x
    f = torch.where(inexact & (back.abs() > x.abs()), torch.nextafter(f, torch.zeros_like(f)), f)
    bits = f.view(torch.int32)
    f = torch.where(inexact, bits | 1, bits).view(torch.float32)
    return f.to(dtype)


def bias_grad(grad_out, scales, expert_idx, num_experts, dtype, rows_per_chunk=None, kept=None):
    """grad_bias[e] = sum over the kept slots (r, k) routed to e of scales[r, k] * grad_out[r]
    (a dropped slot's term, bias included, is not in the forward). Products and sums are
    float64 (an fp32 x fp32 product is exact there) and index_add_ adds the slots one after
    another in the fixed order r*K + k, so the result is the same bits on every run; it is
    rounded once to the bias dtype. Rows go in chunks so the float64 products never take more
    than ~32 MB. kept: (R, K) bools, None for all."""
    R, H = grad_out.shape
    K = expert_idx.shape[1]
    acc = torch.zeros((num_experts, H), dtype=torch.float64)
    chunk = rows_per_chunk or max(1, (1 << 22) // max(1, K * H))
    for r0 in range(0, R, chunk):
        r1 = min(R, r0 + chunk)
        g = grad_out[r0:r1].to(torch.float64).repeat_interleave(K, dim=0)
        if scales is not None:
            g = g * scales[r0:r1].to(torch.float64).reshape(-1, 1)
        e = expert_idx[r0:r1].reshape(-1).to(torch.int64)
        if kept is not None:
            k = kept[r0:r1].reshape(-1)
            g, e = g[k], e[k]
        acc.index_add_(0, e, g)
    return round_from_f64(acc, dtype)


def gather_grad(grad_out, rows, scales, x, D0):
    """grad_expanded_x[d] = sum over the slots i naming row d of scales[i] * grad_out[i // K],
    in float64 (each product exact), added in slot order and rounded once to x's dtype."""
    R, H = grad_out.shape
    K = rows.numel() // R if R else 1
    keep = (rows >= 0) & (rows < D0)
    slot = torch.nonzero(keep).reshape(-1)
    g = grad_out.to(torch.float64)[slot // K]
    if scales is not None:
        g = g * scales.reshape(-1).to(torch.float64)[slot].reshape(-1, 1)
    acc = torch.zeros((D0, H), dtype=torch.float64)
    acc.index_add_(0, rows[slot].to(torch.int64), g)
    return round_from_f64(acc, x.dtype).reshape(x.shape)


def scales_grad(grad_out, rows, x, bias, expert_idx, D0, dtype):
    """grad_scales[r, k] = sum_j (x[d][j] + bias[e][j]) * grad_out[r][j] in float64 (dropped
    slots: the bias term only), rounded once."""
    R, H = grad_out.shape
    K = rows.numel() // R if R else 1
    xr = x.reshape(-1, H).to(torch.float64)
    keep = ((rows >= 0) & (rows < D0)).reshape(R, K, 1)
    f = torch.where(keep, xr[rows.clamp(0, max(D0 - 1, 0)).to(torch.int64).reshape(R, K)],
                    torch.zeros((), dtype=torch.float64))
    if bias is not None:
        f = f + bias.to(torch.float64)[expert_idx.to(torch.int64)]
    return round_from_f64((f * grad_out.to(torch.float64).unsqueeze(1)).sum(-1), dtype)


class MoeFinalizeRouting(torch.autograd.Function):
    """out = x1 + x2 + sum_k scales * (expanded_x[d] + bias[e]); see moe_finalize_routing."""

    @staticmethod
    def forward(ctx, expanded_x, expanded_row_idx, x1, x2, bias, scales, expert_idx, drop_pad_mode):
        out = _ops.finalize_routing_forward(expanded_x, expanded_row_idx, x1, x2, bias, scales,
                                            expert_idx, drop_pad_mode)
        ctx.mode = int(drop_pad_mode)
        ctx.save_for_backward(expanded_x, expanded_row_idx, bias, scales, expert_idx)
        return out

    @staticmethod
    @once_differentiable  # the library's gradients are not themselves differentiable
    def backward(ctx, grad_out):
        x, idx, bias, scales, expert_idx = ctx.saved_tensors
        need_x, _, need_x1, need_x2, need_b, need_s = ctx.needs_input_grad[:6]
        mode = ctx.mode
        R = grad_out.shape[0]
        K = scales.shape[1] if scales is not None else 1
        g_x = g_s = g_b = None
        if need_x or need_s:
            drop_pad = mode in (1, 3)
            rows = _backward_index(idx, mode, R, K)[: R * K]
            D0 = x.shape[0] * x.shape[1] if drop_pad else x.shape[0]
            kept = rows[(rows >= 0) & (rows < D0)]
            # The backward operator writes each row once (the last slot naming it). The
            # forward may read a row twice (CANN's forward is a gather), and a gather's
            # gradient sums: then, or when expandedX has more rows than R*K (which the
            # backward's shape rules cannot express), the sums are formed here.
            repeats = kept.numel() != torch.unique(kept).numel()
            general = not drop_pad and D0 > R * K
            if not general:
                gx, gs = _ops.moe_finalize_routing_grad(
                    grad_out, rows, expanded_x=x, scales=scales,
                    expert_idx=expert_idx if scales is not None else None,
                    bias=bias if scales is not None else None,
                    drop_pad_mode=1 if drop_pad else 0,
                    active_num=D0 if not drop_pad and D0 < R * K else 0,
                    expert_num=x.shape[0] if drop_pad else 0,
                    expert_capacity=x.shape[1] if drop_pad else 0)
            if general or repeats:
                gx = gather_grad(grad_out, rows, scales, x, D0)
            if general and need_s and scales is not None:
                gs = scales_grad(grad_out, rows, x, bias, expert_idx, D0, scales.dtype)
            if need_s and scales is not None:
                # The forward skips a dropped slot's whole term (bias too, as CANN's
                # kernels do), so its scale has gradient 0; the backward operator
                # still gives bias . grad_y there (CANN's backward), which is not it.
                dropped = ((rows < 0) | (rows >= D0)).reshape(gs.shape)
                if bool(dropped.any()):
                    gs = torch.where(dropped, torch.zeros((), dtype=gs.dtype), gs)
            g_x = gx if need_x else None
            g_s = gs if need_s and scales is not None else None
        if need_b:
            rows = _backward_index(idx, mode, R, K)[: R * K]
            D0 = x.shape[0] * x.shape[1] if mode in (1, 3) else x.shape[0]
            kept = ((rows >= 0) & (rows < D0)).reshape(R, K)
            g_b = bias_grad(grad_out, scales, expert_idx, bias.shape[0], bias.dtype, kept=kept)
        g_x1 = grad_out if need_x1 else None
        g_x2 = grad_out if need_x2 else None
        return g_x, None, g_x1, g_x2, g_b, g_s, None, None


def apply(expanded_x, expanded_row_idx, x1, x2, bias, scales, expert_idx, drop_pad_mode):
    def t(v):
        return torch.from_numpy(np.asarray(v)) if v is not None and not isinstance(v, torch.Tensor) else v
    return MoeFinalizeRouting.apply(t(expanded_x), t(expanded_row_idx), t(x1), t(x2), t(bias),
                                    t(scales), t(expert_idx), int(drop_pad_mode))
