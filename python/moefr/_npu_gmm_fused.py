"""moefr._npu_gmm_fused - torch_npu.npu_grouped_matmul_swiglu_quant and npu_grouped_matmul_finalize_routing.

npu_grouped_matmul_swiglu_quant runs
aclnnGroupedMatmulSwigluQuantWeightNZ, the entry op-plugin calls (GroupedMatmulSwigluQuantNpuOpapi.cpp:
N from weight_scale's last dim, output (M, N / 2) int8, output_scale (M,) float32, output_offset a 0-dim
float32 that CANN reserves and never writes). torch_npu registers no gradient (int8 outputs); neither
does moefr.

moefr reads no FRACTAL_NZ weight yet: weight is the ND (E, K, N) int8 tensor (what torch_npu's
npu_format_cast(w, 29) would be made from); the WeightNZ entry takes that ND path. Rows at or past
group_list[-1] are left as allocated on the NPU; moefr allocates its outputs zeroed, so they read 0."""

import torch

from . import _routing
from ._npu_args import _check, _cpu, _cpu_tensor


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


def npu_grouped_matmul_finalize_routing(x, w, group_list, *, scale=None, bias=None, offset=None, pertoken_scale=None,
                                        shared_input=None, logit=None, row_index=None, dtype=None,
                                        shared_input_weight=1.0, shared_input_offset=0, output_bs=0,
                                        group_list_type=1, tuning_config=None, x_dtype=None, w_dtype=None,
                                        scale_dtype=None, pertoken_scale_dtype=None):
    """torch_npu.npu_grouped_matmul_finalize_routing -> y (output_bs or M, N) float32, the A8W8 rows.

    x (M, K) int8, w (E, K, N) int8 (ND: moefr reads no FRACTAL_NZ weight yet), group_list (E,) int64
    (group_list_type 1: counts, the default; 0: cumulative ends), scale (E, N) float32/bfloat16,
    pertoken_scale (M,) float32, logit (M,) float32, row_index (M,) int64/int32, optional bias (E, N)
    bfloat16 and shared_input (S, N) bfloat16 placed at shared_input_offset times shared_input_weight:
    y = 0 (+ shared rows); y[row_index[m]] += (fp32(x[m] @ w[g]) * scale[g]) * (logit[m] * pertoken_scale[m])
    (+ logit[m] * bias[g]), rows in order. Runs aclnnGroupedMatmulFinalizeRoutingWeightNzV2 (op-plugin's
    NZ-weight entry); the A8W4 rows (int32 w) and the float8/float4 dtypes are not in moefr."""
    _check(group_list_type in (0, 1), "only support group_list_type's value 0 or 1.")
    for name, t in (("x", x), ("w", w), ("group_list", group_list)):
        _cpu_tensor(t, name)
    for name, t in (("scale", scale), ("bias", bias), ("offset", offset), ("pertoken_scale", pertoken_scale),
                    ("shared_input", shared_input), ("logit", logit), ("row_index", row_index)):
        _cpu(t, name)
    _check(x.dim() == 2 and w.dim() == 3, "x dim is 2 weight dim is 3")
    for name, v in (("x_dtype", x_dtype), ("w_dtype", w_dtype), ("scale_dtype", scale_dtype),
                    ("pertoken_scale_dtype", pertoken_scale_dtype)):
        _check(v is None, "%s (the float8 / float4 rows) is not implemented by moefr" % name)
    _check(w.dtype != torch.int32, "the A8W4 rows (int32 w holding eight int4) are not yet in moefr")
    dst = torch.float32 if dtype is None else dtype
    _check(dst == torch.float32, "The dtype should be float")
    m, n = x.shape[0], w.shape[2]
    bs = int(output_bs or 0) or m
    y = torch.empty((bs, n), dtype=torch.float32)
    d = lambda t: None if t is None else t.detach()
    _routing.run("aclnnGroupedMatmulFinalizeRoutingWeightNzV2", d(x), d(w), d(scale), d(bias), d(offset), None, None,
                 d(pertoken_scale), d(group_list), d(shared_input), d(logit), d(row_index), 0,
                 float(1.0 if shared_input_weight is None else shared_input_weight),
                 int(shared_input_offset or 0), False, False, int(group_list_type),
                 None if tuning_config is None else [int(v) for v in tuning_config], y)
    return y
