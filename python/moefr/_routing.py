"""moefr._routing - the routing-family operators of SPEC section 9 as plain functions over CPU
torch tensors: allocate the outputs, describe every tensor as a view, run both phases of the
aclnn operator in libmoefr. No autograd here (moefr.torch_npu adds it); arguments are the aclnn
operator's own (CANN 8.1.RC1 signatures), not torch_npu's."""

import ctypes

import torch

from . import _lib, _views

_vp = ctypes.c_void_p
_i64 = ctypes.c_int64
_u64 = ctypes.c_uint64
_bool = ctypes.c_bool
_dbl = ctypes.c_double
_u32 = ctypes.c_uint32
_f32 = ctypes.c_float

# Phase-1 argument types before (workspaceSize, executor), per aclnn operator (CANN 8.1.RC1 headers).
_SIGNATURES = {
    "aclnnMoeInitRoutingV2": [_vp, _vp, _i64, _i64, _i64, _i64, _i64, _bool, _vp, _vp, _vp, _vp],
    "aclnnMoeInitRoutingV2Grad": [_vp, _vp, _i64, _i64, _i64, _vp],
    "aclnnMoeComputeExpertTokens": [_vp, _i64, _vp],
    "aclnnMoeGatingTopKSoftmax": [_vp, _vp, _i64, _vp, _vp, _vp],
    "aclnnMoeGatingTopKSoftmaxV2": [_vp, _vp, _i64, _i64, _bool, _vp, _vp, _vp],
    "aclnnMoeInitRouting": [_vp, _vp, _vp, _i64, _vp, _vp, _vp],
    "aclnnMoeFinalizeRouting": [_vp] * 8,
    "aclnnMoeTokenPermute": [_vp, _vp, _i64, _bool, _vp, _vp],
    "aclnnMoeTokenPermuteGrad": [_vp, _vp, _i64, _bool, _vp],
    "aclnnMoeTokenUnpermute": [_vp, _vp, _vp, _bool, _vp, _vp],
    "aclnnMoeTokenUnpermuteGrad": [_vp, _vp, _vp, _vp, _bool, _vp, _vp, _vp],
    "aclnnSwiGlu": [_vp, _i64, _vp],
    "aclnnGroupedMatmulV4": [_vp] * 12 + [_i64] * 4 + [_vp] * 3,
    "aclnnGroupedMatmul": [_vp] * 8 + [_i64, _vp],
    "aclnnGroupedMatmulAdd": [_vp] * 4 + [_bool, _bool, _i64],
    "aclnnGroupedMatmulAddV2": [_vp] * 4 + [_bool, _bool, _i64, _i64],
    "aclnnSwiGluGrad": [_vp, _vp, _i64, _vp],
    "aclnnMoeReRouting": [_vp, _vp, _vp, _i64, _i64, _vp, _vp, _vp, _vp],
    "aclnnMoeInitRoutingV3": [_vp] * 4 + [_i64] * 5 + [_bool, _i64, _vp, _i64] + [_vp] * 4,
    "aclnnMoeTokenPermuteWithRoutingMap": [_vp, _vp, _vp, _i64, _bool, _vp, _vp, _vp],
    "aclnnMoeTokenPermuteWithRoutingMapGrad": [_vp, _vp, _vp, _vp, _i64, _i64, _bool, _vp, _vp],
    "aclnnMoeTokenUnpermuteWithRoutingMap": [_vp, _vp, _vp, _vp, _bool, _vp, _vp, _vp, _vp, _vp],
    "aclnnMoeTokenUnpermuteWithRoutingMapGrad": [_vp] * 6 + [_bool, _vp, _vp, _vp],
    "aclnnMoeTokenPermuteWithEp": [_vp, _vp, _vp, _vp, _i64, _bool, _vp, _vp, _vp],
    "aclnnMoeTokenPermuteWithEpGrad": [_vp, _vp, _vp, _i64, _vp, _bool, _vp, _vp],
    "aclnnMoeTokenUnpermuteWithEp": [_vp, _vp, _vp, _i64, _vp, _bool, _vp, _vp],
    "aclnnMoeTokenUnpermuteWithEpGrad": [_vp, _vp, _vp, _vp, _bool, _vp, _vp, _i64, _vp, _vp],
    "aclnnMoeGatingTopK": [_vp, _vp] + [_i64] * 6 + [_bool, _dbl, _dbl, _vp, _vp, _vp],
    "aclnnMoeFusedTopk": [_vp] * 4 + [_u32] * 5 + [_bool, _f32, _bool, _vp, _vp],
    "aclnnDynamicQuantV2": [_vp, _vp, _vp, _i64, _vp, _vp, _vp],
    "aclnnDynamicQuantV3": [_vp, _vp, _vp, _i64, _bool, ctypes.c_char_p, _vp, _vp, _vp],
    "aclnnDynamicQuantV4": [_vp, _vp, _vp, _i64, _bool, ctypes.c_char_p, _f32, _vp, _vp, _vp],
    "aclnnTransQuantParamV3": [_vp, _vp, _i64, _vp],
    "aclnnGroupedMatmulSwigluQuant": [_vp] * 10,
    "aclnnGroupedMatmulSwigluQuantWeightNZ": [_vp] * 10,
    "aclnnGroupedMatmulFinalizeRoutingWeightNz": [_vp] * 9 + [_i64, _f32, _i64, _bool, _bool, _i64, _vp],
    "aclnnGroupedMatmulFinalizeRoutingWeightNzV2": [_vp] * 12 + [_i64, _f32, _i64, _bool, _bool, _i64, _vp, _vp],
    "aclnnDequantSwigluQuant": [_vp] * 7 + [_bool, ctypes.c_char_p, _vp, _vp],
    "aclnnDequantSwigluQuantV2": [_vp] * 7 + [_bool, ctypes.c_char_p, _i64, ctypes.c_char_p, _i64, _i64, _dbl, _dbl,
                                              _dbl, _vp, _vp],
}

POISON_OUTPUTS = False  # tests: fill fresh floating outputs with NaN before the library writes


def has(name):
    """Whether the loaded libmoefr exports aclnn operator `name` (both phases)."""
    lib = _lib.library()
    return hasattr(lib, name + "GetWorkspaceSize") and hasattr(lib, name)


def _functions(name):
    lib = _lib.library()
    if not has(name):
        raise NotImplementedError("moefr: %s has no %s" % (_lib.library_path(), name))
    p1, p2 = getattr(lib, name + "GetWorkspaceSize"), getattr(lib, name)
    if p1.argtypes is None:
        p1.restype = ctypes.c_int32
        p1.argtypes = _SIGNATURES[name] + [ctypes.POINTER(_u64), ctypes.POINTER(_vp)]
        p2.restype = ctypes.c_int32
        p2.argtypes = [_vp, _u64, _vp, _vp]
    return lib, p1, p2


def _int_array_api(lib):
    if lib.aclCreateIntArray.argtypes is None:
        lib.aclCreateIntArray.restype = _vp
        lib.aclCreateIntArray.argtypes = [ctypes.POINTER(_i64), _u64]
        lib.aclDestroyIntArray.restype = ctypes.c_int32
        lib.aclDestroyIntArray.argtypes = [_vp]


def run(name, *args):
    """Runs aclnn operator `name`: tensors (or None) become aclTensor views, lists/tuples of ints
    become aclIntArray, TensorList arguments aclTensorList, other values pass as they are;
    everything is released on every path (run_lists below)."""
    run_lists(name, *args)


def empty(shape, dtype):
    out = torch.empty(tuple(max(0, int(s)) for s in shape), dtype=dtype)
    if POISON_OUTPUTS and out.is_floating_point():
        out.fill_(float("nan"))
    elif POISON_OUTPUTS:
        out.fill_(-7)
    return out


def init_routing_v2(x, expert_idx, active_num, expert_capacity, expert_num, drop_pad_mode,
                    count_flag, before_capacity_flag):
    """aclnnMoeInitRoutingV2 -> (expanded_x, expanded_row_idx, count_or_cumsum | None,
    before_capacity | None). active_num as the aclnn operator reads it (0: all T rows)."""
    N, H = x.shape
    T = expert_idx.numel()
    if drop_pad_mode == 1:
        ex = empty((expert_num, expert_capacity, H), x.dtype)
    else:
        rows = T if active_num <= 0 else min(active_num, T)
        ex = empty((rows, H), x.dtype)
    idx = empty((T,), torch.int32)
    cnt = empty((expert_num,), torch.int32) if count_flag and drop_pad_mode == 0 else None
    before = empty((expert_num,), torch.int32) if before_capacity_flag and drop_pad_mode == 1 else None
    run("aclnnMoeInitRoutingV2", x, expert_idx, int(active_num), int(expert_capacity), int(expert_num),
        int(drop_pad_mode), int(count_flag if drop_pad_mode == 0 else 0),
        bool(before_capacity_flag and drop_pad_mode == 1), ex, idx, cnt, before)
    return ex, idx, cnt, before


def init_routing_v2_grad(grad_expanded_x, expanded_row_idx, top_k, drop_pad_mode, active_num, num_rows):
    """aclnnMoeInitRoutingV2Grad -> grad_x (num_rows, H)."""
    H = grad_expanded_x.shape[-1]
    out = empty((num_rows, H), grad_expanded_x.dtype)
    run("aclnnMoeInitRoutingV2Grad", grad_expanded_x, expanded_row_idx, int(top_k), int(drop_pad_mode),
        int(active_num), out)
    return out


def compute_expert_tokens(sorted_experts, num_experts):
    out = empty((num_experts,), sorted_experts.dtype)
    run("aclnnMoeComputeExpertTokens", sorted_experts, int(num_experts), out)
    return out


def gating_top_k_softmax(x, finished, k):
    shape = tuple(x.shape[:-1]) + (k,)
    y = empty(shape, x.dtype)
    e = empty(shape, torch.int32)
    r = empty(shape, torch.int32)
    run("aclnnMoeGatingTopKSoftmax", x, finished, int(k), y, e, r)
    return y, e, r


def gating_top_k_softmax_v2(x, finished, k, renorm, softmax_flag):
    shape = tuple(x.shape[:-1]) + (k,)
    y = empty(shape, x.dtype)
    e = empty(shape, torch.int32)
    sm = empty(tuple(x.shape), torch.float32) if softmax_flag else None
    run("aclnnMoeGatingTopKSoftmaxV2", x, finished, int(k), int(renorm), bool(softmax_flag), y, e, sm)
    return y, e, sm


def init_routing(x, row_idx, expert_idx, active_num):
    N, H = x.shape
    K = expert_idx.shape[1]
    ex = empty((active_num * K, H), x.dtype)
    ri = empty((N * K,), torch.int32)
    ei = empty((N * K,), torch.int32)
    run("aclnnMoeInitRouting", x, row_idx, expert_idx, int(active_num), ex, ri, ei)
    return ex, ri, ei


def finalize_routing(expanded_x, x1, x2, bias, scales, expanded_row_idx, expanded_expert_idx):
    out = empty(tuple(x1.shape), expanded_x.dtype)
    run("aclnnMoeFinalizeRouting", expanded_x, x1, x2, bias, scales, expanded_row_idx, expanded_expert_idx, out)
    return out


def token_permute(tokens, indices, num_out_tokens, padded_mode):
    out = empty((num_out_tokens, tokens.shape[1]), tokens.dtype)
    si = empty((indices.numel(),), torch.int32)
    run("aclnnMoeTokenPermute", tokens, indices, int(num_out_tokens), bool(padded_mode), out, si)
    return out, si


def token_permute_grad(grad_permuted, sorted_indices, num_topk, padded_mode, num_tokens, dtype):
    out = empty((num_tokens, grad_permuted.shape[1]), dtype)
    run("aclnnMoeTokenPermuteGrad", grad_permuted, sorted_indices, int(num_topk), bool(padded_mode), out)
    return out


def token_unpermute(permuted, sorted_indices, probs, padded_mode, restore_shape):
    k = probs.shape[1] if probs is not None else 1
    out = empty((sorted_indices.numel() // k, permuted.shape[-1]), permuted.dtype)
    run("aclnnMoeTokenUnpermute", permuted, sorted_indices, probs, bool(padded_mode),
        list(restore_shape) if restore_shape is not None else [1], out)
    return out


def token_unpermute_grad(permuted, grad_unpermuted, sorted_indices, probs, padded_mode, restore_shape,
                         permuted_rows, permuted_dtype):
    gp = empty((permuted_rows, grad_unpermuted.shape[1]), permuted_dtype)
    # Without probs torch_npu still hands a (0-d, grad-typed) probs-gradient tensor, which the
    # operator requires but does not write; it is not returned.
    gprob = empty(tuple(probs.shape), probs.dtype) if probs is not None else empty((), grad_unpermuted.dtype)
    run("aclnnMoeTokenUnpermuteGrad", permuted, grad_unpermuted, sorted_indices, probs, bool(padded_mode),
        list(restore_shape) if restore_shape is not None else [1], gp, gprob)
    return gp, (gprob if probs is not None else None)


def swiglu(x, dim):
    """aclnnSwiGlu -> silu(A) * B, x's shape with dim halved (an odd size is the library's to refuse)."""
    shape = list(x.shape)
    if x.dim() > 0:
        d = dim + x.dim() if -x.dim() <= dim < 0 else dim
        if 0 <= d < x.dim():
            shape[d] //= 2
    out = empty(shape, x.dtype)
    run("aclnnSwiGlu", x, int(dim), out)
    return out


def swiglu_grad(grad_out, x, dim):
    """aclnnSwiGluGrad -> the gradient of x (x's shape): d/dA in the first half, d/dB in the second."""
    out = empty(tuple(x.shape), x.dtype)
    run("aclnnSwiGluGrad", grad_out, x, int(dim), out)
    return out


def re_routing(tokens, expert_token_num_per_rank, per_token_scales, expert_token_num_type, idx_type):
    """aclnnMoeReRouting -> (permute_tokens, permute_per_token_scales, permute_token_idx,
    expert_token_num). Output shapes as torch_npu allocates them; without scales the scale output
    is (A,) float32 zeros (the operator does not write it)."""
    A = tokens.shape[0] if tokens.dim() >= 1 else 0
    pt = empty(tokens.shape, tokens.dtype)
    if per_token_scales is not None:
        ps = empty(per_token_scales.shape, per_token_scales.dtype)
    else:
        ps = torch.zeros((A,), dtype=torch.float32)
    idx = empty((A,), torch.int32)
    E = expert_token_num_per_rank.shape[1] if expert_token_num_per_rank.dim() >= 2 else 0
    cnt = empty((E,), expert_token_num_per_rank.dtype)
    run("aclnnMoeReRouting", tokens, expert_token_num_per_rank, per_token_scales, int(expert_token_num_type),
        int(idx_type), pt, ps, idx, cnt)
    return pt, ps, idx, cnt


def _tensor_list_api(lib):
    if lib.aclCreateTensorList.argtypes is None:
        lib.aclCreateTensorList.restype = _vp
        lib.aclCreateTensorList.argtypes = [ctypes.POINTER(_vp), _u64]
        lib.aclDestroyTensorList.restype = ctypes.c_int32
        lib.aclDestroyTensorList.argtypes = [_vp]


class TensorList:
    """An argument of run() passed as an aclTensorList (tensors may be views)."""

    def __init__(self, tensors):
        self.tensors = list(tensors)


def run_lists(name, *args):
    """run() that also takes TensorList arguments. A list owns its tensors (aclDestroyTensorList
    destroys them, as CANN's does), so their descriptors leave the Descriptors' care once the
    list holds them."""
    lib, p1, p2 = _functions(name)
    _tensor_list_api(lib)
    lists, arrays = [], []
    with _views.Descriptors(lib) as d:
        try:
            cargs = []
            for i, a in enumerate(args):
                if isinstance(a, TensorList):
                    hs = [d.make(t, (name, i, j)) for j, t in enumerate(a.tensors)]
                    arr = (_vp * max(1, len(hs)))(*hs)
                    h = lib.aclCreateTensorList(arr, len(hs))
                    if not h:
                        raise _lib.MoefrError("moefr: aclCreateTensorList: %s" % _lib.last_error(lib))
                    for x in hs:
                        d.handles.remove(x)
                    lists.append(h)
                    cargs.append(h)
                elif a is None or isinstance(a, torch.Tensor):
                    cargs.append(d.make(a, (name, i)) if a is not None else None)
                elif isinstance(a, (list, tuple)):
                    _int_array_api(lib)
                    vals = (_i64 * max(1, len(a)))(*[int(v) for v in a])
                    h = lib.aclCreateIntArray(vals, len(a))
                    if not h:
                        raise _lib.MoefrError("moefr: aclCreateIntArray: %s" % _lib.last_error(lib))
                    arrays.append(h)
                    cargs.append(h)
                else:
                    cargs.append(a)
            _lib.run_two_phase(lib, p1, p2, tuple(cargs), name)
        finally:
            for h in lists:
                lib.aclDestroyTensorList(h)
            for h in arrays:
                lib.aclDestroyIntArray(h)


def init_routing_v3(x, expert_idx, scale, offset, active_num, expert_capacity, expert_num, drop_pad_mode,
                    num_type, num_flag, quant_mode, expert_range, row_idx_type):
    """aclnnMoeInitRoutingV3 -> (expanded_x, expanded_row_idx, expert_tokens, expanded_scale), the
    outputs shaped as the operator checks them: expanded_x (T, H) or (E, C, H), of x's dtype when
    quant_mode is -1 and int8 otherwise; expanded_scale (T,) or (E*C,)."""
    N, H = x.shape
    T = expert_idx.numel()
    dt = x.dtype if quant_mode == -1 else torch.int8
    rows = expert_num * expert_capacity if drop_pad_mode == 1 else T
    ex = empty((expert_num, expert_capacity, H) if drop_pad_mode == 1 else (T, H), dt)
    if quant_mode == 1 and x.dtype == torch.int8:
        ex.zero_()  # the operator writes neither expanded_x nor expanded_scale then
    idx = empty((T,), torch.int32)
    L = expert_range[1] - expert_range[0]
    cnt = empty((expert_num, 2) if num_type == 2 else (L,), torch.int64)
    sc = empty((rows,), torch.float32)
    if quant_mode == 0 or (quant_mode == -1 and scale is None) or (quant_mode == 1 and x.dtype == torch.int8):
        sc.zero_()  # the operator does not write expanded_scale then
    run("aclnnMoeInitRoutingV3", x, expert_idx, scale, offset, int(active_num), int(expert_capacity),
        int(expert_num), int(drop_pad_mode), int(num_type), bool(num_flag), int(quant_mode),
        [int(v) for v in expert_range], int(row_idx_type), ex, idx, cnt, sc)
    return ex, idx, cnt, sc
# ---- issue 22: the init-routing quant operators (int8 expanded rows) ----
_SIGNATURES["aclnnMoeInitRoutingQuant"] = [_vp, _vp, _vp, _i64, ctypes.c_double, ctypes.c_double, _vp, _vp, _vp]
_SIGNATURES["aclnnMoeInitRoutingQuantV2"] = [_vp] * 4 + [_i64] * 5 + [_bool, _i64] + [_vp] * 5


def init_routing_quant(x, row_idx, expert_idx, active_num, scale, offset):
    """aclnnMoeInitRoutingQuant -> (expanded_x int8 (min(N, active_num) * K, H), expanded_row_idx,
    expanded_expert_idx)."""
    N, H = x.shape
    K = expert_idx.shape[1]
    ex = empty((min(int(active_num), N) * K, H), torch.int8)
    ri = empty((N * K,), torch.int32)
    ei = empty((N * K,), torch.int32)
    run("aclnnMoeInitRoutingQuant", x, row_idx, expert_idx, int(active_num), float(scale), float(offset), ex, ri, ei)
    return ex, ri, ei


def init_routing_quant_v2(x, expert_idx, scale, offset, active_num, expert_capacity, expert_num, drop_pad_mode,
                          count_flag, before_capacity_flag, quant_mode, rows):
    """aclnnMoeInitRoutingQuantV2 -> (expanded_x int8, expanded_row_idx, count_or_cumsum | None,
    before_capacity | None, dynamic_quant_scale | None). rows: expanded_x's rows in dropless mode
    (the caller's shape rule); the outputs are allocated as torch_npu's wrapper allocates them."""
    H = x.shape[1]
    T = expert_idx.numel()
    if drop_pad_mode == 1:
        ex = empty((expert_num, expert_capacity, H), torch.int8)
        n_scale = expert_num * expert_capacity
    else:
        ex = empty((rows, H), torch.int8)
        n_scale = rows
    idx = empty((T,), torch.int32)
    cnt = empty((expert_num,), torch.int32) if drop_pad_mode == 0 and count_flag > 0 else None
    before = empty((expert_num,), torch.int32) if drop_pad_mode == 1 and before_capacity_flag else None
    dqs = empty((n_scale,), torch.float32) if quant_mode == 1 else None
    run("aclnnMoeInitRoutingQuantV2", x, expert_idx, scale, offset, int(active_num), int(expert_capacity),
        int(expert_num), int(drop_pad_mode), int(count_flag), bool(before_capacity_flag), int(quant_mode), ex, idx,
        cnt, before, dqs)
    return ex, idx, cnt, before, dqs
def token_permute_with_routing_map(tokens, routing_map, probs, num_out_tokens, drop_and_pad):
    """aclnnMoeTokenPermuteWithRoutingMap -> (permuted_tokens, permuted_probs | None, sorted_indices);
    rows = num_out_tokens rounded down to a multiple of routing_map.shape[drop_and_pad]."""
    align = max(1, int(routing_map.shape[1 if drop_and_pad else 0]))
    rows = int(num_out_tokens) // align * align
    out = empty((rows, tokens.shape[1]), tokens.dtype)
    pout = empty((rows,), probs.dtype) if probs is not None else None
    si = empty((rows,), torch.int32)
    run("aclnnMoeTokenPermuteWithRoutingMap", tokens, routing_map, probs, int(num_out_tokens), bool(drop_and_pad),
        out, pout, si)
    return out, pout, si


def token_permute_with_routing_map_grad(grad, probs_grad, sorted_indices, routing_map, experts_num, tokens_num,
                                        drop_and_pad):
    """aclnnMoeTokenPermuteWithRoutingMapGrad -> (tokens_grad (tokens_num, H), probs_grad | None)."""
    out = empty((int(tokens_num), grad.shape[1]), grad.dtype)
    pout = empty((int(tokens_num), int(experts_num)), probs_grad.dtype) if probs_grad is not None else None
    run("aclnnMoeTokenPermuteWithRoutingMapGrad", grad, probs_grad, sorted_indices, routing_map, int(experts_num),
        int(tokens_num), bool(drop_and_pad), out, pout)
    return out, pout


def token_unpermute_with_routing_map(permuted, sorted_indices, restore_shape, probs, routing_map, drop_and_pad):
    """aclnnMoeTokenUnpermuteWithRoutingMap -> (unpermuted (restore_shape), out_index, permuted_token_id,
    permute_probs | None). The index outputs are written in drop_and_pad mode only (zeros otherwise)."""
    shape = (int(restore_shape[0]), int(restore_shape[1]))
    # no rows to add (the operator then writes nothing, as CANN's): zeros
    out = torch.zeros(shape, dtype=permuted.dtype) if permuted.numel() == 0 or sorted_indices.numel() == 0 \
        else empty(shape, permuted.dtype)
    oidx = torch.zeros(tuple(sorted_indices.shape), dtype=sorted_indices.dtype)
    tid = torch.zeros(tuple(sorted_indices.shape), dtype=sorted_indices.dtype)
    pp = empty(tuple(sorted_indices.shape), probs.dtype) if probs is not None else None
    run("aclnnMoeTokenUnpermuteWithRoutingMap", permuted, sorted_indices, routing_map, probs, bool(drop_and_pad),
        [int(v) for v in restore_shape], out, oidx, tid, pp)
    return out, oidx, tid, pp


def token_unpermute_with_routing_map_grad(grad, out_index, permuted_token_id, routing_map, permuted_tokens, probs,
                                          drop_and_pad, restore_shape):
    """aclnnMoeTokenUnpermuteWithRoutingMapGrad -> (permuted_tokens_grad (out_index rows, H), probs_grad | None).
    Rows no index names are zeros (torch_npu leaves them unset)."""
    gx = torch.zeros((out_index.shape[0], grad.shape[1]), dtype=grad.dtype)
    gp = empty(tuple(probs.shape), grad.dtype) if probs is not None else None
    run("aclnnMoeTokenUnpermuteWithRoutingMapGrad", grad, out_index, permuted_token_id, routing_map, permuted_tokens,
        probs, bool(drop_and_pad), [int(v) for v in restore_shape] if restore_shape is not None else None, gx, gp)
    return gx, gp


# ---- the expert-parallel permute family (issue 22; torch_npu exposes none of them) ----


def _ep_rows(rng, total, num_out_tokens):
    """Rows of the permuted output: end - start (+ total when <= 0) with a range, else
    numOutTokens as aclnnMoeTokenPermute counts it; clamped to [0, total]."""
    a = (int(rng[1]) - int(rng[0])) if rng else int(num_out_tokens)
    a = a + total if a <= 0 else a
    return max(0, min(a, total))


def token_permute_with_ep(tokens, indices, probs=None, range_=None, num_out_tokens=0, padded_mode=False):
    """aclnnMoeTokenPermuteWithEp -> (permuted_tokens, sorted_indices, permuted_probs).

    The stable sort of the flat ids (ties by flat position); with range_ = [start, end) the
    rows of sorted positions [start, end) (start > end wraps: end - start + T rows, the rows past
    T are +0.0; start == end: all T rows); without it (None or []) aclnnMoeTokenPermute's
    num_out_tokens and probs ignored (permuted_probs None)."""
    K = 1 if indices.dim() == 1 else indices.shape[1]
    T = indices.shape[0] * K
    rng = list(range_) if range_ is not None and len(range_) else None
    A = _ep_rows(rng, T, num_out_tokens)
    out = empty((A,) + tuple(tokens.shape[1:]), tokens.dtype)
    si = empty((T,), torch.int32)
    pp = empty((A,), tokens.dtype) if probs is not None and rng else None
    run("aclnnMoeTokenPermuteWithEp", tokens, indices, probs, rng if rng else None, int(num_out_tokens),
        bool(padded_mode), out, si, pp)
    return out, si, pp


def token_permute_with_ep_grad(grad_permuted, sorted_indices, grad_permuted_probs=None, num_topk=1, range_=None,
                               padded_mode=False, dtype=None):
    """aclnnMoeTokenPermuteWithEpGrad -> (tokens_grad (T // num_topk, H), probs_grad (.., num_topk) or None):
    the fp32 k-order sum of grad_permuted[d - start] over sorted positions d in [start, end), and the
    copy of grad_permuted_probs[d - start] (0 outside). Without a range: aclnnMoeTokenPermuteGrad."""
    rng = list(range_) if range_ is not None and len(range_) else None
    K = int(num_topk) if int(num_topk) > 0 else 1
    R = sorted_indices.numel() // K
    tg = empty((R, grad_permuted.shape[1]), dtype or grad_permuted.dtype)
    pg = empty((R, K), grad_permuted.dtype) if grad_permuted_probs is not None and rng else None
    run("aclnnMoeTokenPermuteWithEpGrad", grad_permuted, sorted_indices, grad_permuted_probs if rng else None,
        int(num_topk), rng, bool(padded_mode), tg, pg)
    return tg, pg


def token_unpermute_with_ep(permuted, sorted_indices, probs=None, num_topk=1, range_=None, padded_mode=False,
                            restore_shape=None):
    """aclnnMoeTokenUnpermuteWithEp -> out (R, H): sum over k of probs[r, k] * permuted[d - start] for
    d = sorted_indices[r*K + k] in [start, end) and a nonzero prob (fp32, k order). Without a range
    aclnnMoeTokenUnpermute (num_topk ignored)."""
    rng = list(range_) if range_ is not None and len(range_) else None
    K = probs.shape[1] if probs is not None else (int(num_topk) if rng else 1)
    out = empty((sorted_indices.numel() // max(K, 1), permuted.shape[-1]), permuted.dtype)
    run("aclnnMoeTokenUnpermuteWithEp", permuted, sorted_indices, probs, int(num_topk), rng, bool(padded_mode),
        list(restore_shape) if restore_shape is not None else None, out)
    return out


def token_unpermute_with_ep_grad(grad_unpermuted, sorted_indices, permuted=None, probs=None, padded_mode=False,
                                 restore_shape=None, range_=None, topk_num=1, permuted_rows=None):
    """aclnnMoeTokenUnpermuteWithEpGrad -> (permuted_grad, probs_grad or None). The range is
    normalised as CANN's tiling does (negative + T, clamped); kept d in [start, end) (and, for
    start 0, below permuted's rows): permuted_grad[d - start] = grad[r] * probs[r, k], rows nobody
    names +0.0; probs_grad[r, k] = <permuted[d - start], grad[r]>, 0 when not kept.
    permuted_rows: permuted_grad's rows (default permuted's, or end - start without permuted)."""
    rng = list(range_) if range_ is not None and len(range_) else None
    T = sorted_indices.numel()
    if permuted_rows is None:
        if permuted is not None:
            permuted_rows = permuted.shape[0]
        else:
            s, e = (rng if rng else (0, T))
            s, e = (s + T if s < 0 else s), (e + T if e < 0 else e)
            permuted_rows = max(0, min(e, T)) - max(0, min(s, T))
    gx = empty((permuted_rows, grad_unpermuted.shape[1]), grad_unpermuted.dtype)
    gp = empty(tuple(probs.shape), probs.dtype) if probs is not None else None
    run("aclnnMoeTokenUnpermuteWithEpGrad", grad_unpermuted, sorted_indices, permuted, probs, bool(padded_mode),
        list(restore_shape) if restore_shape is not None else None, rng, int(topk_num), gx, gp)
    return gx, gp
def gating_top_k(x, bias, k, k_group, group_count, group_select_mode, renorm, norm_type, out_flag,
                 routed_scaling_factor, eps):
    """aclnnMoeGatingTopK -> (y (R, k) x's dtype, expert_idx (R, k) int32, out (R, E) float32; out is
    written only with out_flag)."""
    R, E = x.shape
    y = empty((R, k), x.dtype)
    e = empty((R, k), torch.int32)
    out = empty((R, E), torch.float32) if out_flag else torch.zeros((R, E), dtype=torch.float32)
    run("aclnnMoeGatingTopK", x, bias, int(k), int(k_group), int(group_count), int(group_select_mode),
        int(renorm), int(norm_type), bool(out_flag), float(routed_scaling_factor), float(eps), y, e, out)
    return y, e, out


def fused_topk(x, add_num, mapping_num, mapping_table, group_num, group_topk, top_n, top_k, activate_type,
               is_norm, scale, enable_expert_mapping):
    """aclnnMoeFusedTopk -> (y (R, top_k) float32, indices (R, top_k) int32)."""
    R = x.shape[0]
    y = empty((R, top_k), torch.float32)
    idx = empty((R, top_k), torch.int32)
    run("aclnnMoeFusedTopk", x, add_num, mapping_num, mapping_table, int(group_num), int(group_topk),
        int(top_n), int(top_k), int(activate_type), bool(is_norm), float(scale), bool(enable_expert_mapping),
        y, idx)
    return y, idx


def dequant_swiglu_quant(x, weight_scale, activation_scale, bias, quant_scale, quant_offset, group_index,
                         activate_left, dynamic, v2=None):
    """aclnnDequantSwigluQuant (v2 None) or aclnnDequantSwigluQuantV2 (v2 = (dst_type, round_mode or None,
    activate_dim, swiglu_mode, clamp_limit, glu_alpha, glu_bias)) -> (y int8 of x's shape with the last
    dim halved, scale float32 of x's shape without it). Both start as zeros: the operator leaves scale
    unwritten in static mode, and the rows past a group index's counts."""
    shape = list(x.shape)
    y = torch.zeros(shape[:-1] + [shape[-1] // 2], dtype=torch.int8)
    scale = torch.zeros(shape[:-1], dtype=torch.float32)
    mode = b"dynamic" if dynamic else b"static"
    ts = (x, weight_scale, activation_scale, bias, quant_scale, quant_offset, group_index)
    if v2 is None:
        run("aclnnDequantSwigluQuant", *ts, bool(activate_left), mode, y, scale)
    else:
        dst, rm, ad, sm, cl, ga, gb = v2
        run("aclnnDequantSwigluQuantV2", *ts, bool(activate_left), mode, int(dst),
            None if rm is None else str(rm).encode(), int(ad), int(sm), float(cl), float(ga), float(gb), y, scale)
    return y, scale


def dynamic_quant(x, smooth_scales, group_index, int4, symmetric, quant_mode, dst_type_max):
    """aclnnDynamicQuantV2 (pertoken, dst_type_max 0), else V4 (op-plugin's choice) -> (y, scale, offset | None).
    y int8 of x's shape, or with int4 int32 holding eight int4 each (last dim / 8); scale and offset
    float32: x's shape without the last dim (pertoken), (1,) (pertensor), or without the
    second-to-last dim (perchannel)."""
    shape = list(x.shape)
    if quant_mode == "pertensor":
        sshape = [1]
    elif quant_mode == "perchannel" and len(shape) >= 2:
        sshape = shape[:-2] + shape[-1:]
    else:
        sshape = shape[:-1]
    yshape = shape[:-1] + [shape[-1] // 8] if int4 else shape
    y = empty(yshape, torch.int32 if int4 else torch.int8)
    scale = empty(sshape, torch.float32)
    offset = None if symmetric else empty(sshape, torch.float32)
    dst = 3 if int4 else 2
    if quant_mode == "pertoken" and dst_type_max == 0.0:
        run("aclnnDynamicQuantV2", x, smooth_scales, group_index, dst, y, scale, offset)
    else:
        run("aclnnDynamicQuantV4", x, smooth_scales, group_index, dst, bool(symmetric),
            str(quant_mode).encode(), float(dst_type_max), y, scale, offset)
    return y, scale, offset


def trans_quant_param(scale, offset, round_mode, shape):
    """aclnnTransQuantParamV3 -> int64 words of the given shape (the fixpipe's scale and offset fields)."""
    out = empty(shape, torch.int64)
    run("aclnnTransQuantParamV3", scale, offset, int(round_mode), out)
    return out
