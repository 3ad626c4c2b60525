"""moefr._npu_quant - torch_npu.npu_dynamic_quant and npu_dynamic_quant_asymmetric on
aclnnDynamicQuantV2 / V4 (op-plugin DynamicQuantKernelNpuOpApi.cpp: its checks, output shapes and
version choice), npu_dequant_swiglu_quant on aclnnDequantSwigluQuant / V2 (DequantSwigluQuantOpApi.cpp).
torch_npu registers no gradient for them (integer outputs); neither does moefr."""

import math

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


_ROUND_MODES = ("rint", "round", "floor", "ceil", "trunc")


def _dst_int8(dst_type):
    """op-plugin's dst_type (None, a c10::ScalarType number, a torch.dtype): moefr implements int8 only."""
    if isinstance(dst_type, torch.dtype):
        dst_type = _DTYPE_ENUM.get(dst_type, dst_type)
    _check(dst_type is None or dst_type == _INT8,
           "npu_dequant_swiglu_quant: dst_type %s is not implemented by moefr (int8 only)" % (dst_type,))


def npu_dequant_swiglu_quant(x, *, weight_scale=None, activation_scale=None, bias=None, quant_scale=None,
                             quant_offset=None, group_index=None, activate_left=False, quant_mode=0, dst_type=None,
                             round_mode=None, activate_dim=None, swiglu_mode=0, clamp_limit=7.0, glu_alpha=1.702,
                             glu_bias=1.0):
    """torch_npu.npu_dequant_swiglu_quant -> (y int8, scale float32).

    x int32 (dequantised: + int32 bias, * weight_scale (2H,) or (groups, 2H), * activation_scale
    per row, + float bias) or float16 / bfloat16 (x.shape[-1] = 2H); SwiGlu on the halves
    (activate_left: silu on the first half, else the second; swiglu_mode 1: odd / even pairs,
    1 and 2 the clamped variant a / (1 + exp(-glu_alpha a)) * (b + glu_bias)); quant_mode 1
    (dynamic): v * quant_scale, scale = max|v| / 127 per row, y = rint(v / scale); 0 (static):
    y = rint(v / quant_scale + quant_offset) and scale is not written (zeros here). group_index:
    rows per group (int64 counts); rows past their sum are not written (zeros here).
    Version as op-plugin chooses it: on Ascend 950 (the default) V1 unless dst_type, round_mode or
    activate_dim is given; under MOEFR_SOC=ascend910b V2 (moefr has it)."""
    _cpu_tensor(x, "x")
    for n, t in (("weight_scale", weight_scale), ("activation_scale", activation_scale), ("bias", bias),
                 ("quant_scale", quant_scale), ("quant_offset", quant_offset), ("group_index", group_index)):
        _cpu(t, n)
    _check(x.dim() > 1, "x dim should larger than 1")
    _check(quant_mode in (0, 1), "quant_mode only support 0 or 1, but got %s" % (quant_mode,))
    _check(swiglu_mode in (0, 1, 2), "swiglu_mode only support 0, 1 or 2, but got %s" % (swiglu_mode,))
    _check(math.isfinite(clamp_limit) and clamp_limit > 0.0, "clamp_limit should be positive finite")
    _check(math.isfinite(glu_alpha), "glu_alpha should be finite")
    _check(math.isfinite(glu_bias), "glu_bias should be finite")
    from . import soc
    ts = tuple(None if t is None else t.detach() for t in
               (x, weight_scale, activation_scale, bias, quant_scale, quant_offset, group_index))
    if soc() == "ascend910b":
        _check(x.shape[-1] % 2 == 0, "x last dim should be even")
        return _routing.dequant_swiglu_quant(*ts, activate_left, quant_mode == 1,
                                             (2, "rint", -1, swiglu_mode, clamp_limit, glu_alpha, glu_bias))
    _dst_int8(dst_type)
    if dst_type is None and round_mode is None and activate_dim is None:
        _check(x.shape[-1] % 2 == 0, "x last dim should be even")
        return _routing.dequant_swiglu_quant(*ts, activate_left, quant_mode == 1)
    rm = 0 if round_mode is None else round_mode
    _check(0 <= rm <= 4, "round_mode only support [0, 1, 2, 3, 4], but got %s" % (rm,))
    ad = -1 if activate_dim is None else activate_dim
    ad = ad + x.dim() if ad < 0 else ad
    _check(0 <= ad <= x.dim() - 1, "activate_dim should less than %d" % (x.dim() - 1))
    _check(x.shape[ad] % 2 == 0, "x last dim should be even")
    _check(ad == x.dim() - 1, "npu_dequant_swiglu_quant: activate_dim %d (not the last dim) is not implemented by "
                              "moefr" % ad)
    return _routing.dequant_swiglu_quant(*ts, activate_left, quant_mode == 1,
                                         (2, _ROUND_MODES[rm], ad, swiglu_mode, clamp_limit, glu_alpha, glu_bias))
