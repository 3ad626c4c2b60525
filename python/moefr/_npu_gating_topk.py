"""moefr._npu_gating_topk - torch_npu.npu_moe_gating_top_k (aclnnMoeGatingTopK, the grouped
DeepSeek-V3 router) with the gradient torch_npu registers for it (derivatives.yaml: x through
npu_moe_gating_top_k_backward(out, grad_y, expert_idx, ...)), and npu_moe_gating_top_k_backward.

torch_npu has no function for aclnnMoeFusedTopk (op_plugin_functions.yaml); moefr._routing.fused_topk
runs the operator on CPU tensors with the aclnn arguments.

npu_moe_gating_top_k_backward is aclnnMoeGatingTopKBackward in torch_npu, an operator ops-transformer
does not carry; moefr computes it in fp32 with torch from the forward's definition (see the function)."""

import torch

from . import _routing
from ._npu_args import _check, _cpu


def _backward(x_norm, grad_y, expert_idx, renorm, norm_type, routed_scaling_factor, eps):
    """d loss / d x from the norm output s = x_norm (R, E), grad_y (R, k) and expert_idx (R, k):
    norm_type 1 (sigmoid), y_i = c * s_i / (S + eps) with S the sum of the k picked s:
        d/ds_j = c * (g_j / (S + eps) - sum_i g_i s_i / (S + eps)^2),  d/dx_j = d/ds_j * s_j (1 - s_j);
    norm_type 0 (softmax), y_i = c * s_i:  d/ds = c * g at the picks (0 elsewhere),
        d/dx = s * (d/ds - sum_j d/ds_j s_j) over all E.
    The bias only chooses the picks; unpicked experts get 0 (sigmoid). All in fp32."""
    s = x_norm.detach().float()
    g = grad_y.detach().float()
    idx = expert_idx.detach().long()
    c = float(routed_scaling_factor)
    sk = s.gather(1, idx)
    if int(norm_type) == 1:
        den = sk.sum(1, keepdim=True) + float(eps)
        ds_k = c * (g / den - (g * sk).sum(1, keepdim=True) / (den * den))
        ds = torch.zeros_like(s).scatter_add_(1, idx, ds_k)
        return (ds * s * (1 - s)).to(grad_y.dtype)
    ds = torch.zeros_like(s).scatter_add_(1, idx, c * g)
    return (s * (ds - (ds * s).sum(1, keepdim=True))).to(grad_y.dtype)


def npu_moe_gating_top_k_backward(x_norm, grad_y, expertIdx, *, renorm=0, norm_type=0,
                                  routed_scaling_factor=1.0, eps=1e-20):
    """torch_npu.npu_moe_gating_top_k_backward -> grad_x (x_norm's shape, grad_y's dtype)."""
    for t, n in ((x_norm, "x_norm"), (grad_y, "grad_y"), (expertIdx, "expertIdx")):
        _cpu(t, n)
        _check(t is not None and t.dim() == 2, "%s should be 2D" % n)
    _check(grad_y.shape == expertIdx.shape and grad_y.shape[0] == x_norm.shape[0],
           "grad_y %s and expertIdx %s should be (rows of x_norm %s, k)" % (tuple(grad_y.shape),
                                                                           tuple(expertIdx.shape),
                                                                           tuple(x_norm.shape)))
    _check(int(renorm) == 0, "renorm must be 0, got %d" % int(renorm))
    _check(int(norm_type) in (0, 1), "norm_type must be 0 or 1, got %d" % int(norm_type))
    E = x_norm.shape[1]
    _check(expertIdx.numel() == 0 or (0 <= int(expertIdx.min()) and int(expertIdx.max()) < E),
           "expertIdx values must be in [0, %d)" % E)
    return _backward(x_norm, grad_y, expertIdx, renorm, norm_type, routed_scaling_factor, eps)


class _GatingTopK(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, bias, k, k_group, group_count, group_select_mode, renorm, norm_type, out_flag,
                routed_scaling_factor, eps):
        # the gradient needs the norm output: computed whenever x requires grad
        need = out_flag or ctx.needs_input_grad[0]
        y, e, out = _routing.gating_top_k(x.detach(), None if bias is None else bias.detach(), k, k_group,
                                          group_count, group_select_mode, renorm, norm_type, need,
                                          routed_scaling_factor, eps)
        ctx.save_for_backward(out, e)
        ctx.args = (renorm, norm_type, routed_scaling_factor, eps, x.dtype)
        ctx.mark_non_differentiable(e, out)
        return y, e, out

    @staticmethod
    def backward(ctx, gy, _ge, _gout):
        out, e = ctx.saved_tensors
        renorm, norm_type, rsf, eps, dt = ctx.args
        if gy is None:
            return (None,) * 11
        gx = _backward(out, gy, e, renorm, norm_type, rsf, eps).to(dt)
        return (gx,) + (None,) * 10


def npu_moe_gating_top_k(x, k, *, bias=None, input_ids=None, tid2eid=None, k_group=1, group_count=1,
                         group_select_mode=0, renorm=0, norm_type=0, out_flag=False,
                         routed_scaling_factor=1.0, eps=1e-20):
    """torch_npu.npu_moe_gating_top_k -> (y (R, k) x's dtype, expert_idx (R, k) int32, out (R, E) fp32).
    s = sigmoid(x) (norm_type 1) or softmax(x) (0); b = s + bias; groups of E / group_count experts
    scored by their max (group_select_mode 0) or top-2 sum (1); the k_group best groups kept; the k
    largest b among their experts (ties to the lower expert); y = s there, / (sum + eps) with the
    sigmoid, * routed_scaling_factor. out = s when out_flag (torch_npu leaves it unwritten otherwise;
    moefr returns zeros, or s when x requires grad). input_ids / tid2eid select aclnnMoeGatingTopKV2,
    which moefr does not have (NotImplementedError)."""
    _cpu(x, "x")
    _cpu(bias, "bias")
    _check(x.dim() == 2, "The x should be 2D")
    _check(x.dtype in (torch.float16, torch.float32, torch.bfloat16),
           "float16, float32 or bfloat16 tensor expected but got a tensor with dtype: %s" % x.dtype)
    E = x.shape[1]
    if bias is not None:
        _check(bias.dtype == x.dtype, "The dtype of x and bias should be same")
        _check(bias.dim() == 1, "The bias should be 1D")
        _check(bias.shape[0] == E, "The bias first dim should be same as x second dim")
    _check((input_ids is None) == (tid2eid is None), "input_ids and tid2eid must be both provided or both omitted")
    if input_ids is not None:
        raise NotImplementedError("moefr.torch_npu: npu_moe_gating_top_k with input_ids / tid2eid calls "
                                  "aclnnMoeGatingTopKV2, which moefr does not implement")
    return _GatingTopK.apply(x, bias, int(k), int(k_group), int(group_count), int(group_select_mode),
                             int(renorm), int(norm_type), bool(out_flag), float(routed_scaling_factor),
                             float(eps))
