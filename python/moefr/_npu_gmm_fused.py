"""moefr._npu_gmm_fused - torch_npu.npu_grouped_matmul_swiglu_quant on
aclnnGroupedMatmulSwigluQuantWeightNZ, the entry op-plugin calls (GroupedMatmulSwigluQuantNpuOpapi.cpp:
N from weight_scale's last dim, output (M, N / 2) int8, output_scale (M,) float32, output_offset a 0-dim
float32 that CANN reserves and never writes). torch_npu registers no gradient (int8 outputs); neither
does moefr.

moefr reads no FRACTAL_NZ weight yet: weight is the ND (E, K, N) int8 tensor (what torch_npu's
npu_format_cast(w, 29) would be made from); the WeightNZ entry takes that ND path. Rows at or past
group_list[-1] are left as allocated on the NPU; moefr allocates its outputs zeroed, so they read 0."""

import torch

from . import _routing
from ._npu_args import _cpu, _cpu_tensor


def npu_grouped_matmul_swiglu_quant(x, weight, group_list, weight_scale, x_scale, *, bias=None, offset=None):
    """torch_npu.npu_grouped_matmul_swiglu_quant -> (output, output_scale, output_offset).

    x (M, K) int8, weight (E, K, N) int8, group_list (<= E,) int64 cumulative row ends, weight_scale
    (E, N) float32/float16/bfloat16, x_scale (M,) float32. Per row m of group g:
    c = (fp32(x[m] @ weight[g]) * x_scale[m]) * weight_scale[g]; s = silu(c[:N/2]) * c[N/2:];
    output_scale[m] = max|s| / 127; output[m] = round(fp16(s / output_scale[m])) (half to even).
    bias and offset are reserved by CANN (ignored)."""
    for name, t in (("x", x), ("weight", weight), ("group_list", group_list), ("weight_scale", weight_scale),
                    ("x_scale", x_scale)):
        _cpu_tensor(t, name)
    _cpu(bias, "bias")
    _cpu(offset, "offset")
    m = x.shape[0] if x.dim() >= 1 else 0
    n = weight_scale.shape[-1] if weight_scale.dim() >= 1 else 0
    output = torch.zeros((m, n // 2), dtype=torch.int8)
    output_scale = torch.zeros((m,), dtype=torch.float32)
    output_offset = torch.zeros((), dtype=torch.float32)
    d = torch.Tensor.detach
    _routing.run("aclnnGroupedMatmulSwigluQuantWeightNZ", d(x), d(weight), None if bias is None else d(bias),
                 None if offset is None else d(offset), d(weight_scale), d(x_scale), d(group_list), output,
                 output_scale, output_offset)
    return output, output_scale, output_offset
