"""moefr._npu_gmm - torch_npu.npu_grouped_matmul on aclnnGroupedMatmulV4 (an int list as group_list:
the .List overload, on aclnnGroupedMatmul V1, as torch_npu does).

Schema (op-plugin op_plugin_functions.yaml): everything after weight is keyword-only; returns a list.
Outputs are allocated as torch_npu allocates them (uninitialised: rows of a single out past the group
list's total are not written, as on the NPU).

Autograd: torch_npu registers none for npu_grouped_matmul (derivatives.yaml has no entry; frameworks
write their own, e.g. LLaMA-Factory's GmmFunction and MindSpeed's npu_gmm_backward). moefr adds
MindSpeed's backward, through the same operator: for one x split in M (group_type 0),
dx = GMM(grad, weight^T, group_type 0) and dweight = GMM(x^T, grad, group_type 2) (the K split), and
for group_type -1, per tensor; dbias is the per-group sum of grad. Other forms (x lists with
group_type 0, group_type 2 itself) have no gradient (an error at backward)."""

import torch
from torch.autograd.function import once_differentiable

from . import _routing

_QUANT = ("scale", "offset", "antiquant_scale", "antiquant_offset", "per_token_scale", "activation_input",
          "activation_quant_scale", "activation_quant_offset")


def _fail(msg):
    # torch_npu's TORCH_CHECKs raise RuntimeError
    raise RuntimeError("moefr.torch_npu.npu_grouped_matmul: " + msg)


# torch.ScalarType's numbering, as the dispatcher passes a torch.dtype given for an `int?` argument
_SCALAR_TYPES = {1: torch.int8, 3: torch.int32, 5: torch.float16, 6: torch.float32, 15: torch.bfloat16}
# torch_npu's own dtype codes: 256 + aclDataType
_ACL_TYPES = {256 + 2: torch.int8, 256 + 3: torch.int32, 256 + 1: torch.float16, 256 + 0: torch.float32,
              256 + 27: torch.bfloat16}


def _out_dtype(output_dtype, x0):
    """The output's dtype: x's without output_dtype (as torch_npu allocates); a torch.dtype, torch's ScalarType
    number (what PyTorch's dispatcher makes of a dtype given for op-plugin's `int? output_dtype`) or torch_npu's
    256 + aclDataType code otherwise."""
    if output_dtype is None:
        return x0.dtype
    if isinstance(output_dtype, torch.dtype):
        return output_dtype
    dt = _SCALAR_TYPES.get(int(output_dtype)) or _ACL_TYPES.get(int(output_dtype))
    if dt is None:
        _fail("output_dtype %s is not one GroupedMatmul writes (int8, int32, float16, bfloat16, float32)"
              % (output_dtype,))
    return dt


def _as_list(v, name):
    if v is None:
        return []
    if isinstance(v, torch.Tensor):
        return [v]
    if not isinstance(v, (list, tuple)) or not all(isinstance(t, torch.Tensor) for t in v):
        _fail("%s must be a list of tensors" % name)
    return list(v)


def _int4_pack(weight):
    """8 when the weights are int32 holding eight int4 each along N (torch_npu's int4 weights), else 1."""
    return 8 if weight[0].dtype == torch.int32 else 1


def _out_shapes(x, weight, group_list, split_item, group_type):
    """torch_npu's allocation (GroupedMatmulKernelNpuOpApi.cpp)."""
    ws = []
    for w in weight:  # a single 3-D weight counts as weight.size(0) weights
        ws.extend([w[i] for i in range(w.shape[0])] if w.dim() == 3 else [w])
    pack = _int4_pack(weight)
    n0 = weight[0].shape[-1] * pack
    if split_item in (2, 3):
        if group_type == 2:
            E = group_list.numel() if isinstance(group_list, torch.Tensor) else len(group_list)
            return [(E, x[0].shape[0], n0)]
        return [(sum(int(t.shape[0]) for t in x), n0)]
    if isinstance(group_list, torch.Tensor) and len(x) == 1 and group_type != 2:
        gl = group_list.tolist()
        sizes = [gl[0]] + [gl[i] - gl[i - 1] for i in range(1, len(gl))]
        if any(s < 0 for s in sizes):
            _fail("group_list must be ascending")
        return [(s, ws[i].shape[-1] * pack) for i, s in enumerate(sizes)]
    return [tuple(t.shape[:-1]) + (ws[i].shape[-1] * pack,) for i, t in enumerate(x)]


def _gmm(x, weight, bias, group_list, split_item, group_type, group_list_type, zero=False, quant=None,
         out_dtype=None, act_type=0):
    """One aclnnGroupedMatmulV4 (or V1 for an int list) call; returns the output list. quant: the lists
    scale, offset, antiquant_scale, antiquant_offset, per_token_scale (V4's order), each a list or None."""
    if isinstance(group_list, (list, tuple)):
        shapes = _out_shapes(x, weight, torch.tensor(group_list, dtype=torch.int64), split_item, group_type)
    else:
        shapes = _out_shapes(x, weight, group_list, split_item, group_type)
    make = torch.zeros if zero else _routing.empty
    odt = out_dtype or x[0].dtype
    outs = [make(s, dtype=odt) if zero else make(s, odt) for s in shapes]
    L = _routing.TensorList
    q = [L(v) if v else None for v in (quant or [None] * 5)]
    if isinstance(group_list, (list, tuple)):  # the .List overload: V1, cumulative ends
        _routing.run_lists("aclnnGroupedMatmul", L(x), L(weight), L(bias) if bias else None, q[0], q[1], q[2], q[3],
                           [int(v) for v in group_list], int(split_item), L(outs))
    else:
        _routing.run_lists("aclnnGroupedMatmulV4", L(x), L(weight), L(bias) if bias else None, q[0], q[1], q[2],
                           q[3], q[4], group_list, None, None, None, int(split_item), int(group_type),
                           int(group_list_type), int(act_type), L(outs), None, None)
    return outs


def _rowmajor(t):
    """t with the standard row-major strides. torch calls a (K, 1) tensor with strides (1, K) contiguous,
    but CANN's stride test (IsTransposeLastTwoDims) reads it as a transposed view, which groupType -1
    and 0 refuse for x; the backward passes only tensors it laid out itself."""
    want, s = [], 1
    for d in reversed(t.shape):
        want.append(s)
        s *= max(int(d), 1)
    if list(t.stride()) == list(reversed(want)):
        return t
    return torch.empty(t.shape, dtype=t.dtype).copy_(t)


def _group_rows(group_list, group_list_type, rows):
    """Group id of each of the first `total` rows, and total."""
    gl = group_list.to(torch.int64)
    counts = gl if group_list_type == 1 else torch.diff(gl, prepend=gl.new_zeros(1))
    ids = torch.repeat_interleave(torch.arange(counts.numel()), counts)
    return ids, int(counts.sum())


class _GmmM(torch.autograd.Function):
    """One x (M, K) split in M by group_list; weight one (E, K, N) or E tensors (K, N); one out."""

    @staticmethod
    def forward(ctx, group_list, split_item, group_list_type, nw, nb, x, *wb):
        weight, bias = list(wb[:nw]), list(wb[nw:nw + nb])
        (y,) = _gmm([x], weight, bias, group_list, split_item, 0, group_list_type)
        ctx.save_for_backward(group_list, x, *weight)
        ctx.meta = (split_item, group_list_type, nw, nb, [b.dtype for b in bias])
        return y

    @staticmethod
    @once_differentiable
    def backward(ctx, gy):
        group_list, x, *weight = ctx.saved_tensors
        split_item, glt, nw, nb, bdts = ctx.meta
        gy = _rowmajor(gy.to(x.dtype))
        gx = None
        if ctx.needs_input_grad[5]:
            wt = [w.transpose(-1, -2) for w in weight]  # transposed views: CANN's "tensor transpose"
            (gx,) = _gmm([gy], wt, [], group_list, 3, 0, glt, zero=True)
        grads_w = [None] * nw
        if any(ctx.needs_input_grad[6:6 + nw]):
            E = group_list.numel()
            (dw,) = _gmm([_rowmajor(x).t()], [gy], [], group_list, 3, 2, glt, zero=True)  # (E, K, N)
            grads_w = [dw] if nw == 1 else [dw[i] for i in range(E)]
        grads_b = [None] * nb
        if nb and any(ctx.needs_input_grad[6 + nw:]):
            ids, total = _group_rows(group_list, glt, x.shape[0])
            E = group_list.numel()
            acc = torch.zeros((E, gy.shape[1]), dtype=torch.float32).index_add_(0, ids, gy[:total].float())
            grads_b = [acc.to(bdts[0])] if nb == 1 else [acc[i].to(bdts[i]) for i in range(nb)]
        return (None, None, None, None, None, gx, *grads_w, *grads_b)


class _GmmNoSplit(torch.autograd.Function):
    """group_type -1: out[i] = x[i] @ weight[i] (+ bias[i]), lists of equal length n."""

    @staticmethod
    def forward(ctx, group_list, split_item, n, nb, *args):
        x, weight, bias = list(args[:n]), list(args[n:2 * n]), list(args[2 * n:2 * n + nb])
        outs = _gmm(x, weight, bias, group_list, split_item, -1, 0)
        ctx.save_for_backward(*x, *weight)
        ctx.meta = (n, nb, [b.dtype for b in bias])
        return tuple(outs)

    @staticmethod
    @once_differentiable
    def backward(ctx, *gys):
        n, nb, bdts = ctx.meta
        saved = ctx.saved_tensors
        x, weight = list(saved[:n]), list(saved[n:])
        gys = [_rowmajor(g.to(x[i].dtype)) if g is not None else torch.zeros(
            tuple(x[i].shape[:-1]) + (weight[i].shape[-1],), dtype=x[i].dtype) for i, g in enumerate(gys)]
        gx = [None] * n
        if any(ctx.needs_input_grad[4:4 + n]):
            gx = _gmm(gys, [w.transpose(-1, -2) for w in weight], [], None, 0, -1, 0, zero=True)
        gw = [None] * n
        if any(ctx.needs_input_grad[4 + n:4 + 2 * n]):
            xt = [_rowmajor(xi.reshape(-1, xi.shape[-1]).t()) for xi in x]
            gw = _gmm(xt, [g.reshape(-1, g.shape[-1]) for g in gys], [], None, 0, -1, 0, zero=True)
        gb = [g.reshape(-1, g.shape[-1]).float().sum(0).to(bdts[i]) for i, g in enumerate(gys[:nb])] if nb else []
        return (None, None, None, None, *gx, *gw, *gb)


def npu_grouped_matmul(x, weight, *, bias=None, scale=None, offset=None, antiquant_scale=None,
                       antiquant_offset=None, per_token_scale=None, group_list=None, activation_input=None,
                       activation_quant_scale=None, activation_quant_offset=None, split_item=0, group_type=None,
                       group_list_type=0, act_type=0, tuning_config=None, output_dtype=None, x_dtype=None,
                       weight_dtype=None, scale_dtype=None, per_token_scale_dtype=None):
    """torch_npu.npu_grouped_matmul -> list of tensors (aclnnGroupedMatmulV4; an int-list group_list takes
    the .List overload on aclnnGroupedMatmul V1, where group_type is ignored as torch_npu ignores it).
    The quantization arguments go to the library as they are: the A8W8 rows (int8 x and weight; scale,
    per_token_scale, int32 bias, output_dtype int32 / bfloat16 / float16) run, other rows are refused there
    with CANN's code and a message. output_dtype (None: x's dtype) is a torch.dtype, the number PyTorch's
    dispatcher makes of one, or torch_npu's dtype code. Ascend 950's x_dtype / weight_dtype / scale_dtype /
    per_token_scale_dtype raise RuntimeError, as do torch_npu's own checks (group_type must be passed and be
    -1, 0 or 2; x and weight non-empty; split_item 0-3); the library's refusals raise MoefrError."""
    xs, wts, bs = _as_list(x, "x"), _as_list(weight, "weight"), _as_list(bias, "bias")
    if not xs or not wts:
        _fail("x and weight must not be empty lists")
    for t in xs + wts + bs:
        if t.device.type != "cpu":
            _fail("tensors must be on the CPU (moefr), got %s" % t.device)
    is_list = isinstance(group_list, (list, tuple))
    if not is_list and group_type is None:
        _fail("Requires manual passing group_type")
    if not is_list and group_type not in (-1, 0, 2):
        _fail("The group type must be -1, 0 or 2, got %s" % (group_type,))
    if split_item not in (0, 1, 2, 3):
        _fail("split_item must be 0, 1, 2 or 3, got %s" % (split_item,))
    quant = [_as_list(v, n) or None for v, n in ((scale, "scale"), (offset, "offset"),
                                                 (antiquant_scale, "antiquant_scale"),
                                                 (antiquant_offset, "antiquant_offset"),
                                                 (per_token_scale, "per_token_scale"))]
    for name, v in (("activation_input", activation_input), ("activation_quant_scale", activation_quant_scale),
                    ("activation_quant_offset", activation_quant_offset)):
        if v is not None and _as_list(v, name):
            _fail("%s is given: CANN takes none (the activation arguments must be empty)" % name)
    for name, v in (("x_dtype", x_dtype), ("weight_dtype", weight_dtype), ("scale_dtype", scale_dtype),
                    ("per_token_scale_dtype", per_token_scale_dtype)):
        if v is not None:
            _fail("%s names Ascend 950's FP8 / HiF8 / MX / FP4 data, which moefr does not support" % name)
    odt = _out_dtype(output_dtype, xs[0])
    act = 0 if act_type is None else int(act_type)
    quantized = any(quant) or odt != xs[0].dtype or act != 0
    if group_list is not None and not is_list:
        if not isinstance(group_list, torch.Tensor):
            _fail("group_list must be a tensor or a list of ints")
    glt = 0 if group_list_type is None else int(group_list_type)
    grad = torch.is_grad_enabled() and any(t.requires_grad for t in xs + wts + bs)
    if quantized:  # torch_npu registers no gradient, and int8 tensors cannot require one
        return _gmm(xs, wts, bs, group_list, split_item, -1 if is_list else group_type, glt, quant=quant,
                    out_dtype=odt, act_type=act)
    if is_list or not grad:
        return _gmm(xs, wts, bs, group_list, split_item, -1 if is_list else group_type, glt)
    if group_type == 0 and len(xs) == 1 and split_item in (2, 3) and group_list is not None:
        return [_GmmM.apply(group_list, split_item, glt, len(wts), len(bs), xs[0], *wts, *bs)]
    if group_type == -1 and len(xs) == len(wts):
        return list(_GmmNoSplit.apply(group_list, split_item, len(xs), len(bs), *xs, *wts, *bs))
    return list(_GmmOther.apply((group_list, split_item, group_type, glt, len(xs), len(wts)), *xs, *wts, *bs))


class _GmmOther(torch.autograd.Function):
    """The forms without a backward in moefr (x lists split in M, group_type 2 itself): the outputs
    join the graph so that a backward through them is a clear error, never a silent zero."""

    @staticmethod
    def forward(ctx, meta, *tensors):
        group_list, split_item, group_type, glt, nx, nw = meta
        return tuple(_gmm(list(tensors[:nx]), list(tensors[nx:nx + nw]), list(tensors[nx + nw:]), group_list,
                          split_item, group_type, glt))

    @staticmethod
    def backward(ctx, *g):
        raise RuntimeError("moefr.torch_npu.npu_grouped_matmul: no gradient for this form (moefr differentiates "
                           "one x split with group_type 0 and split_item 2/3, and group_type -1 lists)")
