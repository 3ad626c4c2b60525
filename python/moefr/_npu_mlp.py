"""moefr._npu_mlp - the expert computation of a MoE layer for moefr.torch_npu: npu_swiglu (with the
backward torch_npu registers in derivatives.yaml, npu_swiglu_backward through aclnnSwiGluGrad)."""

import torch
from torch.autograd.function import once_differentiable

from . import _routing
from ._npu_args import _cpu_tensor


class _SwiGlu(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, dim):
        ctx.dim = dim
        ctx.save_for_backward(x)
        return _routing.swiglu(x, dim)

    @staticmethod
    @once_differentiable
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return _routing.swiglu_grad(grad.contiguous() if grad.dtype == x.dtype else grad.to(x.dtype), x,
                                    ctx.dim), None


def npu_swiglu(x, dim=-1):
    """torch_npu.npu_swiglu(Tensor self, int dim=-1) -> Tensor: x split in halves A (first), B along
    dim; silu(A) * B in fp32, rounded once to x's dtype (aclnnSwiGlu). Differentiable in x."""
    _cpu_tensor(x, "x")
    if x.requires_grad and torch.is_grad_enabled():
        return _SwiGlu.apply(x, int(dim))
    return _routing.swiglu(x, int(dim))  # nothing to record: no autograd.Function around the call


def npu_swiglu_backward(grad_output, x, dim=-1):
    """torch_npu.npu_swiglu_backward(Tensor grad_output, Tensor self, int dim=-1) -> Tensor (x's shape)."""
    _cpu_tensor(grad_output, "grad_output")
    _cpu_tensor(x, "x")
    return _routing.swiglu_grad(grad_output, x, int(dim))
