"""moefr._npu_gating - torch_npu.npu_moe_gating_top_k_softmax(_v2) on aclnnMoeGatingTopKSoftmax(V2).
torch_npu registers no gradient for either (derivatives.yaml), so neither has one here."""

import torch

from . import _routing
from ._npu_args import _check


def _check_x_finished(x, finished):
    _check(isinstance(x, torch.Tensor) and x.device.type == "cpu", "x must be a CPU torch.Tensor")
    _check(x.dim() in (2, 3), "x should be 2D or 3D, got %dD" % x.dim())
    _check(x.dtype in (torch.float16, torch.float32, torch.bfloat16),
           "float16, float32 or bfloat16 x expected, got %s" % x.dtype)
    if finished is not None:
        _check(finished.dtype == torch.bool, "finished must be bool, got %s" % finished.dtype)
        _check(finished.dim() == x.dim() - 1 and tuple(finished.shape) == tuple(x.shape[:-1]),
               "finished should be %s, got %s" % (tuple(x.shape[:-1]), tuple(finished.shape)))


def npu_moe_gating_top_k_softmax(x, finished=None, k=1):
    """torch_npu.npu_moe_gating_top_k_softmax -> (y, expert_idx, row_idx), each x.shape[:-1] + (k,):
    softmax over the last dim in fp32, the k largest in descending order (ties to the lower expert),
    y in x's dtype, expert_idx int32 (E where finished), row_idx[r][j] = j * R + r (int32) over the
    R flattened leading rows. k must be in [0, E]; k = 0 or an empty x gives empty results, as
    torch_npu returns before calling the operator."""
    _check_x_finished(x, finished)
    E = x.shape[-1]
    _check(0 <= k <= E, "k should be in [0, %d], got %d" % (E, k))
    shape = tuple(x.shape[:-1]) + (k,)
    if k == 0 or x.numel() == 0:
        return (torch.zeros(shape, dtype=x.dtype), torch.zeros(shape, dtype=torch.int32),
                torch.zeros(shape, dtype=torch.int32))
    return _routing.gating_top_k_softmax(x.detach(), finished, int(k))


def npu_moe_gating_top_k_softmax_v2(x, *, k=1, finished=None, renorm=0, output_softmax=False):
    """torch_npu.npu_moe_gating_top_k_softmax_v2 -> (y, expert_idx, softmax_result). renorm 0: softmax
    over E then top-k; renorm 1: top-k of the logits, then softmax over those k. softmax_result is the
    fp32 softmax (x's shape) when renorm == 0 and output_softmax, else an empty (0,) float32 tensor
    (torch_npu's shapes). renorm/output_softmax None mean 0/False."""
    _check_x_finished(x, finished)
    E = x.shape[-1]
    _check(0 <= k <= E, "k should be in [0, %d], got %d" % (E, k))
    renorm = 0 if renorm is None else int(renorm)
    _check(renorm in (0, 1), "renorm must be 0 or 1, got %d" % renorm)
    flag = bool(output_softmax) and renorm == 0
    shape = tuple(x.shape[:-1]) + (k,)
    if k == 0 or x.numel() == 0:
        sm = torch.zeros(tuple(x.shape) if flag else (0,), dtype=torch.float32)
        return torch.zeros(shape, dtype=x.dtype), torch.zeros(shape, dtype=torch.int32), sm
    y, e, sm = _routing.gating_top_k_softmax_v2(x.detach(), finished, int(k), renorm, flag)
    if sm is None:
        sm = torch.zeros((0,), dtype=torch.float32)
    return y, e, sm
