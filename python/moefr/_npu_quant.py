"""moefr._npu_quant - torch_npu.npu_dynamic_quant and npu_dynamic_quant_asymmetric on
aclnnDynamicQuantV2 / V4 (op-plugin DynamicQuantKernelNpuOpApi.cpp: its checks, output shapes and
version choice). torch_npu registers no gradient for them (integer outputs); neither does moefr."""

import torch

from . import _routing
from ._npu_args import _check, _cpu, _cpu_tensor

# c10::ScalarType values op-plugin compares dst_type with
_INT8, _QUINT4X2 = 1, 16
_DTYPE_ENUM = {torch.int8: _INT8, torch.quint4x2: _QUINT4X2}


def _dst(dst_type):
    """True for int4 (int32 output holding eight each), False for int8; others refused."""
    if isinstance(dst_type, torch.dtype):
        dst_type = _DTYPE_ENUM.get(dst_type, dst_type)
    if dst_type is None or dst_type == _INT8:
        return False
    if dst_type == _QUINT4X2:
        return True
    _check(False, "npu_dynamic_quant: dst_type %s is not implemented by moefr (torch.int8 or torch.quint4x2)"
                 % (dst_type,))


def _quant(input, smooth_scales, group_index, dst_type, quant_mode, dst_type_max, symmetric):
    _cpu_tensor(input, "input")
    _cpu(smooth_scales, "smooth_scales")
    _cpu(group_index, "group_index")
    _check(input.dim() > 1, "Input shape dim should be greater than 1")
    int4 = _dst(dst_type)
    if int4:
        _check(input.shape[-1] % 8 == 0, "Input shape last dim must be divded by 8 when int4 quantization")
    return _routing.dynamic_quant(input.detach(), None if smooth_scales is None else smooth_scales.detach(),
                                  None if group_index is None else group_index.detach(), int4, symmetric,
                                  str(quant_mode), float(dst_type_max))


def npu_dynamic_quant(input, *, smooth_scales=None, group_index=None, dst_type=None, quant_mode="pertoken",
                      dst_type_max=0.0):
    """torch_npu.npu_dynamic_quant -> (y, scale): symmetric dynamic quantisation.

    input float16/bfloat16, 2-8 dims; smooth_scales input's dtype, (H,) or, with group_index
    (E,) int32 cumulative row ends, (E, H); quant_mode "pertoken" (scale per row),
    "pertensor" (one), "perchannel" (per column of each trailing matrix; smooth (M,)).
    scale = max|x * smooth| / 127, y = round half to even(x * smooth / scale), int8; with
    dst_type torch.quint4x2 (16): / 7, eight int4 per int32 (last dim / 8)."""
    y, scale, _ = _quant(input, smooth_scales, group_index, dst_type, quant_mode, dst_type_max, True)
    return y, scale


def npu_dynamic_quant_asymmetric(input, *, smooth_scales=None, group_index=None, dst_type=None,
                                 quant_mode="pertoken", dst_type_max=0.0):
    """torch_npu.npu_dynamic_quant_asymmetric -> (y, scale, offset): scale = (max - min) / 255,
    offset = 127 - max / scale, y = round half to even(v / scale + offset) (int4: 15 and 7)."""
    return _quant(input, smooth_scales, group_index, dst_type, quant_mode, dst_type_max, False)


def _trans_shape(scale, offset):
    """op-plugin's output shape: scale's, or for a 1-D scale the longer of scale and offset."""
    if scale.dim() == 1 and offset is not None:
        return (max(scale.shape[0], offset.shape[0]),)
    return tuple(scale.shape)


def npu_trans_quant_param(scale, offset=None, round_mode=0):
    """torch_npu.npu_trans_quant_param -> int64 words for npu_grouped_matmul's int8 output (aclnnTransQuantParamV3):
    the scale's fp32 bits (round_mode 0: the top 19; 1: rounded there, ties to even), bit 46 set, the offset
    rounded to an integer (ties to even) and clamped to [-256, 255] in bits 37-45. scale float32 (n) or (1, n);
    offset float32 (n) or (1, n)."""
    _cpu_tensor(scale, "scale")
    _cpu(offset, "offset")
    rm = 0 if round_mode is None else int(round_mode)
    _check(rm in (0, 1), "round_mode must be 0 or 1. but now is %s" % (rm,))
    return _routing.trans_quant_param(scale.detach(), None if offset is None else offset.detach(), rm,
                                      _trans_shape(scale, offset))
