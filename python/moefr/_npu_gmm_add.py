"""moefr._npu_gmm_add - torch_npu.npu_grouped_matmul_add_ on aclnnGroupedMatmulAddV2 (or V1), and its
out-of-place form npu_grouped_matmul_add.

Schema (op-plugin op_plugin_functions.yaml): npu_grouped_matmul_add_(Tensor(a!) self, Tensor x,
Tensor weight, Tensor group_list, *, bool transpose_x=True, bool transpose_weight=False,
int group_type=2, int? group_list_type=0) -> Tensor(a!): self (g, M, N) fp32 += x_i^T @ weight_i per
group of x's (K, M) rows, in place; returns self.

op-plugin's kernel (ops/opapi/GroupedMatmulAddNpuOpApi.cpp) calls aclnnGroupedMatmulAddV2 where it
exists and the SoC is an aclnn-only one (Ascend 950), else aclnnGroupedMatmulAdd, which has no
group_list_type; moefr does the same by the product its library emulates (moefr.soc()): V2 under
Ascend 950's rules (the default), V1 under MOEFR_SOC=ascend910b, where group_list is read as
cumulative ends whatever group_list_type says, as on those NPUs. No autograd (torch_npu registers
none: the operator is the weight-gradient accumulation itself).

npu_grouped_matmul_add (same arguments, `Tensor self` not annotated, -> Tensor) returns self plus the
products in a new tensor and leaves self alone, as its schema says; op-plugin's kernel for it also
accumulates into self before returning a clone, which moefr does not copy."""

import torch

from . import _routing
from ._npu_args import _cpu_tensor


def _a2():
    from . import soc
    return soc() == "ascend910b"


def npu_grouped_matmul_add_(self, x, weight, group_list, *, transpose_x=True, transpose_weight=False, group_type=2,
                            group_list_type=0):
    """torch_npu.npu_grouped_matmul_add_ -> self, accumulated in place (aclnnGroupedMatmulAddV2; V1 under
    MOEFR_SOC=ascend910b, as torch_npu on A2/A3). The library's refusals raise MoefrError (a ValueError
    and a RuntimeError) with its message; self is then unchanged."""
    for name, t in (("self", self), ("x", x), ("weight", weight), ("group_list", group_list)):
        _cpu_tensor(t, name)
    glt = 0 if group_list_type is None else int(group_list_type)
    if _a2():
        _routing.run("aclnnGroupedMatmulAdd", x, weight, group_list, self, bool(transpose_x), bool(transpose_weight),
                     int(group_type))
    else:
        _routing.run("aclnnGroupedMatmulAddV2", x, weight, group_list, self, bool(transpose_x),
                     bool(transpose_weight), int(group_type), glt)
    return self


def npu_grouped_matmul_add(self, x, weight, group_list, *, transpose_x=True, transpose_weight=False, group_type=2,
                           group_list_type=0):
    """torch_npu.npu_grouped_matmul_add -> a new tensor, self + the grouped products (self unchanged)."""
    _cpu_tensor(self, "self")
    out = torch.empty(self.shape, dtype=self.dtype).copy_(self)
    return npu_grouped_matmul_add_(out, x, weight, group_list, transpose_x=transpose_x,
                                   transpose_weight=transpose_weight, group_type=group_type,
                                   group_list_type=group_list_type)
