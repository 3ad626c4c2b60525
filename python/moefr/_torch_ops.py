"""moefr._torch_ops - moefr's torch_npu functions as PyTorch operators (PyTorch >= 2.4): torch.ops.npu.*
with op-plugin's schema strings (op_plugin/config/op_plugin_functions.yaml), so that

    torch_npu.npu_X is torch.ops.npu.npu_X          (an OpOverloadPacket, with .default / .List ...)

as in real torch_npu, and torch.compile(fullgraph=True) traces MoE code that calls them.

Each operator has
- a CPU kernel: moefr's Python function of the same name (the ctypes call into libmoefr), run under
  torch.no_grad() so that its own autograd.Function records nothing;
- a fake kernel: output shapes and dtypes from the arguments alone (op-plugin's meta formulas,
  torch_npu/meta/_meta_registrations.py, where moefr computes the same; where moefr's result differs
  the fake follows moefr's, so fake and real always agree: test_torch_ops runs torch.library.opcheck);
- where moefr has a gradient, torch.library.register_autograd whose backward calls operators only:
  torch_npu's own backward operators where op-plugin has them (npu_swiglu_backward,
  npu_moe_token_permute_grad_v2, npu_moe_token_unpermute_grad_v2, npu_moe_gating_top_k_backward,
  npu_moe_token_(un)permute_with_routing_map_grad, npu_grouped_matmul itself), else moefr's own in the
  `moefr` namespace (torch.ops.moefr.*: finalize routing, init routing v2, a grouped bias sum).

On an Ascend host, where the real torch_npu already defined the npu namespace, nothing is redefined:
an operator whose installed schema is the one below gets moefr's CPU kernel (and, where it has none,
moefr's autograd), so CPU tensors get numbers; an operator whose schema differs is left alone and listed
in SKIPPED."""

import torch

from . import _npu_gating, _npu_gating_topk, _npu_gmm, _npu_gmm_add, _npu_init_routing, _npu_init_routing_quant
from . import _npu_quant, _npu_gmm_fused
from . import _npu_init_routing_v2, _npu_mlp, _npu_permute, _npu_re_routing, _npu_routing_map
from . import _routing

NPU = torch.library.Library("npu", "FRAGMENT")
MOEFR = torch.library.Library("moefr", "FRAGMENT")
REGISTERED = []   # "npu::name" of every operator moefr defined or gave a CPU kernel
SKIPPED = {}      # "npu::name" -> why moefr left it alone (an installed torch_npu's schema differs)


def _existing_schema(ns, name):
    """The schema string of ns::name if some library (the real torch_npu) defined it, else None."""
    base, _, overload = name.partition(".")
    try:
        packet = getattr(getattr(torch.ops, ns), base)
        op = getattr(packet, overload or "default")
    except (AttributeError, RuntimeError):
        return None
    return str(op._schema)


def _norm(schema):
    return " ".join(schema.replace("npu::", "").replace("moefr::", "").split())


def _arg_names(schema):
    """The argument names of a schema string, in order ("*" skipped)."""
    inner = schema[schema.index("(") + 1: schema.rindex(") ->")]
    names, depth, cur = [], 0, ""
    for ch in inner + ",":
        if ch in "([":
            depth += 1
        elif ch in ")]":
            depth -= 1
        if ch == "," and depth == 0:
            part = cur.strip().split("=", 1)[0].split()
            if part and part != ["*"]:
                names.append(part[-1])
            cur = ""
        else:
            cur += ch
    return names


class _Args(dict):
    """An operator call's arguments by name (schema order), as attributes too."""
    __getattr__ = dict.__getitem__


def _op(lib, ns, schema, cpu, fake, grad=None, composite=False):
    """Defines ns::schema (or adopts an existing identical definition) with a CPU kernel (run under
    no_grad), a fake kernel and, with grad = (setup, backward), its autograd: setup(ctx, args, output)
    with args an _Args, backward(ctx, *grads) -> {argument name: gradient}."""
    name = schema.split("(", 1)[0]
    qual = "%s::%s" % (ns, name)
    have = _existing_schema(ns, name)
    if have is not None and _norm(have) != _norm(schema):
        SKIPPED[qual] = "installed schema %r differs from moefr's %r" % (have, schema)
        return
    defined_here = have is None
    if defined_here:
        lib.define(schema)

    if composite:  # written in other operators: their kernels, fakes and autograd serve
        lib.impl(name, cpu, "CompositeImplicitAutograd")
        REGISTERED.append(qual)
        return

    def kernel(*args, **kwargs):
        if not torch.is_grad_enabled():
            return cpu(*args, **kwargs)
        with torch.no_grad():
            return cpu(*args, **kwargs)
    kernel.__name__ = name.replace(".", "_") + "_cpu"
    try:
        lib.impl(name, kernel, "CPU")
    except RuntimeError as e:  # an installed library already has a CPU kernel for it
        SKIPPED[qual] = "CPU kernel not registered: %s" % e
        return
    if defined_here:
        torch.library.register_fake(qual, fake, lib=lib)
        if grad is None:  # no gradient, as in torch_npu: outputs simply do not require grad
            lib.impl(name, torch.library.fallthrough_kernel, "Autograd")
    if grad is not None and (defined_here or not _has_autograd(qual)):
        base, _, overload = name.partition(".")
        opo = getattr(getattr(getattr(torch.ops, ns), base), overload or "default")
        lib.impl(name, _autograd_kernel(opo, grad[0], grad[1], kernel), "Autograd", with_keyset=True)
    REGISTERED.append(qual)


def _autograd_kernel(op, setup, backward, cpu_kernel):
    """The Autograd kernel of op: torch.library.register_autograd's design (an autograd.Function around a
    redispatch below autograd), but every tensor argument is an input of the Function, those inside
    Tensor[] and keyword-only ones too (register_autograd refuses keyword-only tensors, and op-plugin's
    schemas have many). setup(ctx, args, output) sees the arguments by name, defaults filled in;
    backward(ctx, *grads) (one grad per output; a Tensor[] output's as one list) returns
    {argument name: gradient (a list for a Tensor[] argument)}; ctx.needs[name] tells which are wanted."""
    schema = op._schema
    names = [a.name for a in schema.arguments]
    kwonly = [a.name for a in schema.arguments if a.kwarg_only]
    defaults = {a.name: a.default_value for a in schema.arguments if a.has_default_value()}
    list_out = len(schema.returns) == 1 and str(schema.returns[0].type).startswith("List[")
    single_out = len(schema.returns) == 1 and not list_out

    class Meta:
        def __init__(self, keyset, values):
            self.keyset, self.values = keyset, values
            # (argument index, position in its list or None) of each tensor input, in order
            self.slots = []
            for i, v in enumerate(values):
                if isinstance(v, torch.Tensor):
                    self.slots.append((i, None))
                elif isinstance(v, (list, tuple)):
                    self.slots.extend((i, j) for j, t in enumerate(v) if isinstance(t, torch.Tensor))

        def rebuild(self, tensors):
            values = [list(v) if isinstance(v, (list, tuple)) else v for v in self.values]
            for (i, j), t in zip(self.slots, tensors):
                if j is None:
                    values[i] = t
                else:
                    values[i][j] = t
            return values

    class Fn(torch.autograd.Function):
        @staticmethod
        def forward(ctx, meta, *tensors):
            values = meta.rebuild(tensors)
            npos = len(names) - len(kwonly)
            kwargs = dict(zip(kwonly, values[npos:]))
            with torch._C._AutoDispatchBelowAutograd():
                out = op.redispatch(meta.keyset & torch._C._after_autograd_keyset, *values[:npos], **kwargs)
            setup(ctx, _Args(zip(names, values)), out)
            ctx.meta = meta
            flat = tuple(out) if isinstance(out, (list, tuple)) else (out,)
            fixed = [o for o in flat if isinstance(o, torch.Tensor) and not o.is_floating_point()]
            if fixed:
                ctx.mark_non_differentiable(*fixed)
            return flat

        @staticmethod
        def backward(ctx, *grads):
            meta = ctx.meta
            needs = {}
            for (i, _), need in zip(meta.slots, ctx.needs_input_grad[1:]):
                needs[names[i]] = needs.get(names[i], False) or need
            ctx.needs = needs
            got = backward(ctx, list(grads)) if list_out else backward(ctx, *grads)
            out = []
            for (i, j), need in zip(meta.slots, ctx.needs_input_grad[1:]):
                g = got.get(names[i])
                if g is not None and j is not None:
                    g = g[j]
                out.append(g if need else None)
            return (None,) + tuple(out)

    after_autograd = torch._C._after_autograd_keyset
    below_autograd = torch._C._AutoDispatchBelowAutograd
    any_requires_grad = torch._C._any_requires_grad

    cpu_key = torch._C.DispatchKey.CPU

    def kernel(keyset, *args, **kwargs):
        if not (torch.is_grad_enabled() and any_requires_grad(*args, **kwargs)):  # nothing to record
            below = keyset & after_autograd
            if below.highestPriorityTypeId() == cpu_key:
                # plain CPU tensors, no mode or subclass: the CPU kernel the redispatch would reach,
                # called here (a second crossing of the dispatcher costs more than the tiny calls)
                return cpu_kernel(*args, **kwargs)
            with below_autograd():
                return op.redispatch(below, *args, **kwargs)
        # the dispatcher leaves out trailing arguments equal to their defaults: put them back
        npos = len(names) - len(kwonly)
        values = list(args) + [defaults.get(n) for n in names[len(args):npos]]
        values += [kwargs.get(n, defaults.get(n)) for n in kwonly]
        meta = Meta(keyset, values)
        tensors = [meta.values[i] if j is None else meta.values[i][j] for i, j in meta.slots]
        flat = Fn.apply(meta, *tensors)
        if list_out:
            return list(flat)
        return flat[0] if single_out else tuple(flat)
    return kernel


def _has_autograd(qual):
    """Whether an installed library registered an autograd kernel for qual (then it is kept)."""
    try:
        return torch._C._dispatch_has_kernel_for_dispatch_key(qual, "Autograd")
    except (AttributeError, RuntimeError):
        return False


def npu(schema, cpu, fake, grad=None, composite=False):
    _op(NPU, "npu", schema, cpu, fake, grad, composite)


def own(schema, cpu, fake):
    _op(MOEFR, "moefr", schema, cpu, fake)


def _empty(shape, dtype, like):
    return like.new_empty(tuple(shape), dtype=dtype)


# --------------------------------------------------------------------------------------------
# gating
# --------------------------------------------------------------------------------------------

def _fake_gating(x, finished=None, k=1):
    shape = tuple(x.shape[:-1]) + (k,)
    return _empty(shape, x.dtype, x), _empty(shape, torch.int32, x), _empty(shape, torch.int32, x)


npu("npu_moe_gating_top_k_softmax(Tensor x, Tensor? finished=None, int k=1) -> (Tensor, Tensor, Tensor)",
    _npu_gating.npu_moe_gating_top_k_softmax, _fake_gating)


def _fake_gating_v2(x, *, k=1, finished=None, renorm=0, output_softmax=False):
    shape = tuple(x.shape[:-1]) + (k,)
    flag = bool(output_softmax) and (renorm or 0) == 0
    return (_empty(shape, x.dtype, x), _empty(shape, torch.int32, x),
            _empty(tuple(x.shape) if flag else (0,), torch.float32, x))


npu("npu_moe_gating_top_k_softmax_v2(Tensor x, *, int k=1, Tensor? finished=None, int? renorm=0, "
    "bool? output_softmax=False) -> (Tensor, Tensor, Tensor)",
    _npu_gating.npu_moe_gating_top_k_softmax_v2, _fake_gating_v2)


def _fake_gating_topk_bwd(x_norm, grad_y, expertIdx, *, renorm=0, norm_type=0, routed_scaling_factor=1.0,
                          eps=1e-20):
    return _empty(x_norm.shape, torch.float32, x_norm)


npu("npu_moe_gating_top_k_backward(Tensor x_norm, Tensor grad_y, Tensor expertIdx, *, int renorm=0, "
    "int norm_type=0, float routed_scaling_factor=1.0, float eps=1e-20) -> Tensor",
    _npu_gating_topk.npu_moe_gating_top_k_backward, _fake_gating_topk_bwd)


def _gating_topk_cpu(x, k, *, bias=None, input_ids=None, tid2eid=None, k_group=1, group_count=1,
                     group_select_mode=0, renorm=0, norm_type=0, out_flag=False, routed_scaling_factor=1.0,
                     eps=1e-20):
    # The norm output is the backward's input (derivatives.yaml: npu_moe_gating_top_k_backward(result2,
    # ...)): always computed, whatever out_flag (torch_npu leaves it unwritten without the flag).
    return _npu_gating_topk.npu_moe_gating_top_k(
        x, k, bias=bias, input_ids=input_ids, tid2eid=tid2eid, k_group=k_group, group_count=group_count,
        group_select_mode=group_select_mode, renorm=renorm, norm_type=norm_type,
        out_flag=True, routed_scaling_factor=routed_scaling_factor, eps=eps)


def _fake_gating_topk(x, k, *, bias=None, input_ids=None, tid2eid=None, k_group=1, group_count=1,
                      group_select_mode=0, renorm=0, norm_type=0, out_flag=False, routed_scaling_factor=1.0,
                      eps=1e-20):
    R, E = x.shape
    return _empty((R, k), x.dtype, x), _empty((R, k), torch.int32, x), _empty((R, E), torch.float32, x)


def _gating_topk_setup(ctx, a, output):
    ctx.kw = dict(renorm=a.renorm, norm_type=a.norm_type, routed_scaling_factor=a.routed_scaling_factor, eps=a.eps)
    ctx.save_for_backward(output[2], output[1])
    ctx.dtype = a.x.dtype


def _gating_topk_backward(ctx, gy, _ge, _gout):
    out, e = ctx.saved_tensors
    return {"x": torch.ops.npu.npu_moe_gating_top_k_backward(out, gy, e, **ctx.kw).to(ctx.dtype)}


npu("npu_moe_gating_top_k(Tensor x, int k, *, Tensor? bias=None, Tensor? input_ids=None, Tensor? tid2eid=None, "
    "int k_group=1, int group_count=1, int group_select_mode=0, int renorm=0, int norm_type=0, "
    "bool out_flag=False, float routed_scaling_factor=1.0, float eps=1e-20) -> (Tensor, Tensor, Tensor)",
    _gating_topk_cpu, _fake_gating_topk, (_gating_topk_setup, _gating_topk_backward))


# --------------------------------------------------------------------------------------------
# init routing
# --------------------------------------------------------------------------------------------

def _fake_init_routing(x, row_idx, expert_idx, active_num):
    n, h = x.shape
    k = row_idx.shape[1]
    a = min(n, active_num)
    return (_empty((a * k, h), x.dtype, x), _empty((n * k,), row_idx.dtype, x),
            _empty((n * k,), row_idx.dtype, x))


npu("npu_moe_init_routing(Tensor x, Tensor row_idx, Tensor expert_idx, int active_num) -> (Tensor, Tensor, Tensor)",
    _npu_init_routing.npu_moe_init_routing, _fake_init_routing)


def _fake_init_routing_v2(x, expert_idx, *, scale=None, offset=None, active_num=-1, expert_capacity=-1,
                          expert_num=-1, drop_pad_mode=0, expert_tokens_num_type=0, expert_tokens_num_flag=False,
                          quant_mode=-1, active_expert_range=(), row_idx_type=0, x_dtype=None):
    N, H = x.shape
    T = N * expert_idx.shape[1]
    rng = list(active_expert_range) if active_expert_range else [0, expert_num]
    rows = T if active_num <= 0 else min(active_num, T)
    dt = x.dtype if quant_mode == -1 else torch.int8
    if drop_pad_mode == 1:
        ex, srows = (expert_num, expert_capacity, H), expert_num * expert_capacity
    else:
        ex, srows = (rows, H), rows
    tokens = (expert_num, 2) if expert_tokens_num_type == 2 else (max(rng[1] - rng[0], 0),)
    return (_empty(ex, dt, x), _empty((T,), torch.int32, x), _empty(tokens, torch.int64, x),
            _empty((max(srows, 0),), torch.float32, x))


def _init_routing_v2_setup(ctx, a, output):
    ctx.args = (a.x.shape[0], a.drop_pad_mode, a.row_idx_type, list(a.active_expert_range or [0, a.expert_num]))
    ctx.differentiable = a.quant_mode == -1 and a.x.is_floating_point()
    ctx.save_for_backward(output[1], a.expert_idx)


def _init_routing_v2_backward(ctx, g_ex, *_):
    if not ctx.differentiable or g_ex is None:
        return {}
    idx, expert_idx = ctx.saved_tensors
    n, mode, row_type, rng = ctx.args
    return {"x": torch.ops.moefr.init_routing_v2_backward(g_ex, idx, expert_idx, n, mode, row_type, rng)}


def _init_routing_v2_bwd_cpu(grad_expanded_x, expanded_row_idx, expert_idx, num_rows, drop_pad_mode, row_idx_type,
                             active_expert_range):
    """dx of npu_moe_init_routing_v2 (aclnnMoeInitRoutingV2Grad over the src->dst map)."""
    K = expert_idx.shape[1]
    T = expanded_row_idx.numel()
    H = grad_expanded_x.shape[-1]
    gather = expanded_row_idx
    if row_idx_type == 1:  # the dst->src permutation of the routed rows: turned into src->dst
        flat = expert_idx.reshape(-1)
        A = int(((flat >= active_expert_range[0]) & (flat < active_expert_range[1])).sum())
        gather = torch.full((T,), -1, dtype=torch.int32)
        gather[expanded_row_idx[:A].long()] = torch.arange(A, dtype=torch.int32)
    if T == 0:
        return torch.zeros((num_rows, H), dtype=grad_expanded_x.dtype)
    if drop_pad_mode == 1:
        g = grad_expanded_x.contiguous()
    else:  # rows cut by active_num: their gradient is zero
        g = grad_expanded_x.new_zeros((T, H))
        g[: grad_expanded_x.shape[0]] = grad_expanded_x
        g = g.reshape(1, -1, H)
    return _routing.init_routing_v2_grad(g, gather, K, 1, 0, num_rows)


own("init_routing_v2_backward(Tensor grad_expanded_x, Tensor expanded_row_idx, Tensor expert_idx, int num_rows, "
    "int drop_pad_mode, int row_idx_type, int[] active_expert_range) -> Tensor",
    _init_routing_v2_bwd_cpu,
    lambda g, idx, e, n, mode, rt, rng: _empty((n, g.shape[-1]), g.dtype, g))


npu("npu_moe_init_routing_v2(Tensor x, Tensor expert_idx, *, Tensor? scale=None, Tensor? offset=None, "
    "int active_num=-1, int expert_capacity=-1, int expert_num=-1, int drop_pad_mode=0, "
    "int expert_tokens_num_type=0, bool expert_tokens_num_flag=False, int quant_mode=-1, "
    "int[2] active_expert_range=[], int row_idx_type=0, int? x_dtype=None) -> (Tensor, Tensor, Tensor, Tensor)",
    _npu_init_routing_v2.npu_moe_init_routing_v2, _fake_init_routing_v2,
    (_init_routing_v2_setup, _init_routing_v2_backward))


def _fake_init_routing_quant(x, expert_idx, *, scale=None, offset=None, active_num=1024, expert_capacity=0,
                             expert_num=256, drop_pad_mode=0, expert_tokens_num_mode=0,
                             expert_tokens_before_capacity_flag=False, quant_mode=1):
    H = x.shape[1]
    T = expert_idx.shape[0] * expert_idx.shape[1]
    rows = min(T, active_num) if active_num > 0 else T
    if drop_pad_mode == 1:
        ex, n_scale = (expert_num, expert_capacity, H), expert_num * expert_capacity
    else:
        ex, n_scale = (rows, H), rows
    cnt = _empty((expert_num,), torch.int32, x) if drop_pad_mode == 0 and expert_tokens_num_mode > 0 else None
    before = (_empty((expert_num,), torch.int32, x)
              if drop_pad_mode == 1 and expert_tokens_before_capacity_flag else None)
    dqs = _empty((n_scale,), torch.float32, x) if quant_mode == 1 else None
    return _empty(ex, torch.int8, x), _empty((T,), torch.int32, x), cnt, before, dqs


npu("npu_moe_init_routing_quant(Tensor x, Tensor expert_idx, *, Tensor? scale=None, Tensor? offset=None, "
    "int active_num=1024, int expert_capacity=0, int expert_num=256, int drop_pad_mode=0, "
    "int expert_tokens_num_mode=0, bool expert_tokens_before_capacity_flag=False, int quant_mode=1) "
    "-> (Tensor, Tensor, Tensor, Tensor, Tensor)",
    _npu_init_routing_quant.npu_moe_init_routing_quant, _fake_init_routing_quant)


def _fake_dynamic_quant_outs(x, dst_type, quant_mode, n):
    # op-plugin's meta (npu_dynamic_quant / _asymmetric): scale (and offset) x.shape[:-2] + [M]
    # (pertoken), + [H] (perchannel), (1,) (pertensor); y int8 like x, or for quint4x2 (16)
    # int32 with the last dim / 8 (x.shape[:-1] + [H // 8]: op-plugin's meta builds it on the
    # scale shape, which is that shape in the two row modes).
    d = x.dim()
    shape = list(x.shape[:d - 2]) + [x.shape[d - 1] if quant_mode == "perchannel" else x.shape[d - 2]]
    if quant_mode == "pertensor":
        shape = [1]
    if dst_type == 16:
        if x.shape[d - 1] % 8:
            raise RuntimeError("If dst_dtype is quint4x2, the last dim of input must be divisible by 8")
        y = _empty(list(x.shape[:d - 1]) + [x.shape[d - 1] // 8], torch.int32, x)
    else:
        y = _empty(x.shape, torch.int8, x)
    return (y,) + tuple(_empty(shape, torch.float32, x) for _ in range(n))


def _fake_dynamic_quant(input, *, smooth_scales=None, group_index=None, dst_type=None, quant_mode="pertoken",
                        dst_type_max=0.0):
    return _fake_dynamic_quant_outs(input, dst_type, quant_mode, 1)


def _fake_dynamic_quant_asymmetric(input, *, smooth_scales=None, group_index=None, dst_type=None,
                                   quant_mode="pertoken", dst_type_max=0.0):
    return _fake_dynamic_quant_outs(input, dst_type, quant_mode, 2)


def _fake_trans_quant_param(scale, offset=None, round_mode=0):
    # op-plugin's meta: (n) or (1, n) scales; the longer of a 1-D scale and offset
    torch._check(scale.dim() == 1 or (scale.dim() == 2 and scale.shape[0] == 1),
                 lambda: "the scale shape support only (1, ) and (1, n)")
    torch._check(round_mode in (0, 1, None), lambda: "round_mode should be 0 or 1, but round_mode is %s" % round_mode)
    return _empty(_npu_quant._trans_shape(scale, offset), torch.int64, scale)


npu("npu_trans_quant_param(Tensor scale, Tensor? offset=None, int? round_mode=0) -> Tensor",
    _npu_quant.npu_trans_quant_param, _fake_trans_quant_param)
npu("npu_dynamic_quant(Tensor input, *, Tensor? smooth_scales=None, Tensor? group_index=None, int? dst_type=None, "
    "str quant_mode=\"pertoken\", float dst_type_max=0.0) -> (Tensor, Tensor)",
    _npu_quant.npu_dynamic_quant, _fake_dynamic_quant)
npu("npu_dynamic_quant_asymmetric(Tensor input, *, Tensor? smooth_scales=None, Tensor? group_index=None, "
    "int? dst_type=None, str quant_mode=\"pertoken\", float dst_type_max=0.0) -> (Tensor, Tensor, Tensor)",
    _npu_quant.npu_dynamic_quant_asymmetric, _fake_dynamic_quant_asymmetric)


def _fake_grouped_matmul_swiglu_quant(x, weight, group_list, weight_scale, x_scale, *, bias=None, offset=None):
    # op-plugin's meta: (x.size(0), weight_scale.size(-1) // 2) int8, (x.size(0),) float32, () float32
    m, n = x.size(0), weight_scale.size(-1)
    return _empty((m, n // 2), torch.int8, x), _empty((m,), torch.float32, x), _empty((), torch.float32, x)


npu("npu_grouped_matmul_swiglu_quant(Tensor x, Tensor weight, Tensor group_list, Tensor weight_scale, "
    "Tensor x_scale, *, Tensor? bias=None, Tensor? offset=None) -> (Tensor, Tensor, Tensor)",
    _npu_gmm_fused.npu_grouped_matmul_swiglu_quant, _fake_grouped_matmul_swiglu_quant)


def _fake_grouped_matmul_finalize_routing(x, w, group_list, *, scale=None, bias=None, offset=None,
                                          pertoken_scale=None, shared_input=None, logit=None, row_index=None,
                                          dtype=None, shared_input_weight=1.0, shared_input_offset=0, output_bs=0,
                                          group_list_type=1, tuning_config=None, x_dtype=None, w_dtype=None,
                                          scale_dtype=None, pertoken_scale_dtype=None):
    # op-plugin's meta: (output_bs or x.size(0), w.size(-1), times 8 for int32 w) float32
    torch._check(x.dim() == 2 and w.dim() == 3, lambda: "x_dim should be 2 and w_dim should be 3.")
    n = w.size(-1) * (8 if w.dtype == torch.int32 else 1)
    return _empty((output_bs or x.size(0), n), torch.float32, x)


npu("npu_grouped_matmul_finalize_routing(Tensor x, Tensor w, Tensor group_list, *, Tensor? scale=None, "
    "Tensor? bias=None, Tensor? offset=None, Tensor? pertoken_scale=None, Tensor? shared_input=None, "
    "Tensor? logit=None, Tensor? row_index=None, ScalarType? dtype=None, float? shared_input_weight=1.0, "
    "int? shared_input_offset=0, int? output_bs=0, int? group_list_type=1, int[]? tuning_config=None, "
    "int? x_dtype=None, int? w_dtype=None, int? scale_dtype=None, int? pertoken_scale_dtype=None) -> Tensor",
    _npu_gmm_fused.npu_grouped_matmul_finalize_routing, _fake_grouped_matmul_finalize_routing)


def _fake_dequant_swiglu_quant(x, *, weight_scale=None, activation_scale=None, bias=None, quant_scale=None,
                               quant_offset=None, group_index=None, activate_left=False, quant_mode=0, dst_type=None,
                               round_mode=None, activate_dim=None, swiglu_mode=0, clamp_limit=7.0, glu_alpha=1.702,
                               glu_bias=1.0):
    # op-plugin's meta: y halves x's dim activate_dim (default -1); scale is x's shape without the last
    # dim (halved at activate_dim when that is not the last); int8 for moefr's only dst_type
    d = x.dim()
    ad = -1 if activate_dim is None else activate_dim
    sel = ad if ad >= 0 else ad + d
    y = [x.shape[i] // 2 if i == sel else x.shape[i] for i in range(d)]
    sc = [x.shape[i] // 2 if i == sel else x.shape[i] for i in range(d - 1)]
    return _empty(y, torch.int8, x), _empty(sc, torch.float32, x)


npu("npu_dequant_swiglu_quant(Tensor x, *, Tensor? weight_scale=None, Tensor? activation_scale=None, "
    "Tensor? bias=None, Tensor? quant_scale=None, Tensor? quant_offset=None, Tensor? group_index=None, "
    "bool activate_left=False, int quant_mode=0, int? dst_type=None, int? round_mode=None, int? activate_dim=None, "
    "int swiglu_mode=0, float clamp_limit=7.0, float glu_alpha=1.702, float glu_bias=1.0) -> (Tensor, Tensor)",
    _npu_quant.npu_dequant_swiglu_quant, _fake_dequant_swiglu_quant)


def _compute_expert_tokens_cpu(sorted_expert_for_source_row, num_expert):
    from . import torch_npu as _tn
    return _tn._npu_moe_compute_expert_tokens(sorted_expert_for_source_row, num_expert)


npu("npu_moe_compute_expert_tokens(Tensor sorted_expert_for_source_row, int num_expert) -> Tensor",
    _compute_expert_tokens_cpu,
    lambda s, num_expert: _empty((num_expert,), s.dtype, s))


def _fake_re_routing(tokens, expert_token_num_per_rank, *, per_token_scales=None, expert_token_num_type=1,
                     idx_type=0, tokens_dtype=None):
    A = tokens.shape[0]
    scales = (_empty(per_token_scales.shape, per_token_scales.dtype, tokens) if per_token_scales is not None
              else _empty((A,), torch.float32, tokens))
    return (_empty(tokens.shape, tokens.dtype, tokens), scales, _empty((A,), torch.int32, tokens),
            _empty((expert_token_num_per_rank.shape[1],), expert_token_num_per_rank.dtype, tokens))


npu("npu_moe_re_routing(Tensor tokens, Tensor expert_token_num_per_rank, *, Tensor? per_token_scales=None, "
    "int expert_token_num_type=1, int idx_type=0, int? tokens_dtype=None) -> (Tensor, Tensor, Tensor, Tensor)",
    _npu_re_routing.npu_moe_re_routing, _fake_re_routing)


# --------------------------------------------------------------------------------------------
# token permute / unpermute (torch_npu's derivatives: the _v2 backward operators)
# --------------------------------------------------------------------------------------------

def _permute_rows(T, num_out_tokens):
    v = 0 if num_out_tokens is None else num_out_tokens
    return min(v, T) if v > 0 else v + T


def _fake_permute(tokens, indices, num_out_tokens=None, padded_mode=False):
    T = indices.numel()
    return (_empty((_permute_rows(T, num_out_tokens), tokens.shape[1]), tokens.dtype, tokens),
            _empty((T,), torch.int32, tokens))


def _permute_setup(ctx, a, output):
    ctx.n, ctx.dtype = a.tokens.shape[0], a.tokens.dtype
    ctx.k = 1 if a.indices.dim() == 1 else a.indices.shape[-1]
    ctx.padded = bool(a.padded_mode)
    ctx.save_for_backward(output[1])


def _permute_backward(ctx, grad, _):
    (sorted_indices,) = ctx.saved_tensors
    return {"tokens": torch.ops.npu.npu_moe_token_permute_grad_v2(grad, sorted_indices, ctx.n, ctx.dtype, ctx.k,
                                                                  ctx.padded)}


def _permute_grad_v2_cpu(grad_permuted_tokens, sorted_indices, tokens_size_0, tokens_dtype, num_topK,
                         padded_mode=False):
    T = sorted_indices.numel()
    if grad_permuted_tokens.shape[0] == 0 and T > 0:  # every row cut: nothing flows back
        return torch.zeros((tokens_size_0, grad_permuted_tokens.shape[1]), dtype=tokens_dtype)
    return _routing.token_permute_grad(grad_permuted_tokens.contiguous(), sorted_indices, num_topK, padded_mode,
                                       tokens_size_0, tokens_dtype)


npu("npu_moe_token_permute_grad_v2(Tensor grad_permuted_tokens, Tensor sorted_indices, int tokens_size_0, "
    "ScalarType tokens_dtype, int num_topK, bool padded_mode=False) -> Tensor",
    _permute_grad_v2_cpu,
    lambda g, si, n, dt, k, padded_mode=False: _empty((n, g.shape[1]), dt, g))


def _permute_grad_cpu(tokens, grad_permuted_tokens, indices, sorted_indices, padded_mode=False):
    k = 1 if indices.dim() == 1 else indices.shape[-1]
    return _permute_grad_v2_cpu(grad_permuted_tokens, sorted_indices, tokens.shape[0], tokens.dtype, k, padded_mode)


npu("npu_moe_token_permute_grad(Tensor tokens, Tensor grad_permuted_tokens, Tensor indices, Tensor sorted_indices, "
    "bool padded_mode=False) -> Tensor",
    _permute_grad_cpu,
    lambda tokens, g, indices, si, padded_mode=False: _empty(tokens.shape, tokens.dtype, tokens))

npu("npu_moe_token_permute(Tensor tokens, Tensor indices, int? num_out_tokens=None, bool padded_mode=False) "
    "-> (Tensor, Tensor)",
    _npu_permute.npu_moe_token_permute, _fake_permute, (_permute_setup, _permute_backward))


def _fake_unpermute(permuted_tokens, sorted_indices, probs=None, padded_mode=False, restore_shape=None):
    topk = 1 if probs is None else probs.shape[1]
    return _empty((sorted_indices.shape[0] // topk, permuted_tokens.shape[-1]), permuted_tokens.dtype,
                  permuted_tokens)


def _unpermute_setup(ctx, a, output):
    ctx.padded = bool(a.padded_mode)
    ctx.restore = list(a.restore_shape) if a.restore_shape is not None else None
    ctx.rows, ctx.dtype = a.permuted_tokens.shape[0], a.permuted_tokens.dtype
    ctx.has_probs = a.probs is not None
    if ctx.has_probs:  # the probs' gradient reads the permuted rows
        ctx.save_for_backward(a.sorted_indices, a.probs, a.permuted_tokens)
    else:
        ctx.save_for_backward(a.sorted_indices)


def _unpermute_backward(ctx, grad):
    if ctx.has_probs:
        sorted_indices, probs, permuted = ctx.saved_tensors
    else:
        (sorted_indices,), probs, permuted = ctx.saved_tensors, None, None
    gp, gprob = torch.ops.npu.npu_moe_token_unpermute_grad_v2(grad, sorted_indices, ctx.rows, ctx.dtype, probs,
                                                              ctx.padded, ctx.restore, permuted)
    return {"permuted_tokens": gp, "probs": gprob}


def _unpermute_grad_v2_cpu(grad_unpermuted_tokens, sorted_indices, permuted_tokens_size_0, permuted_tokens_dtype,
                           probs=None, padded_mode=False, restore_shape=None, permuted_tokens=None):
    if permuted_tokens is None:  # without probs no row of it is read: a stand-in of the right shape
        permuted_tokens = torch.zeros((), dtype=permuted_tokens_dtype).expand(
            permuted_tokens_size_0, grad_unpermuted_tokens.shape[1])
    rs = tuple(int(v) for v in restore_shape) if restore_shape is not None else None
    gp, gprob = _routing.token_unpermute_grad(permuted_tokens, grad_unpermuted_tokens.contiguous(), sorted_indices,
                                              probs, padded_mode, rs, permuted_tokens_size_0, permuted_tokens_dtype)
    return gp, (gprob if probs is not None else None)


def _fake_unpermute_grad_v2(g, si, rows, dt, probs=None, padded_mode=False, restore_shape=None,
                            permuted_tokens=None):
    return _empty((rows, g.shape[1]), dt, g), (_empty(probs.shape, probs.dtype, g) if probs is not None else None)


npu("npu_moe_token_unpermute_grad_v2(Tensor grad_unpermuted_tokens, Tensor sorted_indices, "
    "int permuted_tokens_size_0, ScalarType permuted_tokens_dtype, Tensor? probs=None, bool padded_mode=False, "
    "int[]? restore_shape=None, Tensor? permuted_tokens=None) -> (Tensor, Tensor)",
    _unpermute_grad_v2_cpu, _fake_unpermute_grad_v2)


def _unpermute_grad_cpu(permuted_tokens, grad_unpermuted_tokens, sorted_indices, probs=None, padded_mode=False,
                        restore_shape=None):
    return _unpermute_grad_v2_cpu(grad_unpermuted_tokens, sorted_indices, permuted_tokens.shape[0],
                                  permuted_tokens.dtype, probs, padded_mode, restore_shape, permuted_tokens)


npu("npu_moe_token_unpermute_grad(Tensor permuted_tokens, Tensor grad_unpermuted_tokens, Tensor sorted_indices, "
    "Tensor? probs=None, bool padded_mode=False, int[]? restore_shape=None) -> (Tensor, Tensor)",
    _unpermute_grad_cpu,
    lambda p, g, si, probs=None, padded_mode=False, restore_shape=None: (
        _empty(p.shape, p.dtype, p), _empty(probs.shape, probs.dtype, p) if probs is not None else None))

npu("npu_moe_token_unpermute(Tensor permuted_tokens, Tensor sorted_indices, Tensor? probs=None, "
    "bool padded_mode=False, int[]? restore_shape=None) -> Tensor",
    _npu_permute.npu_moe_token_unpermute, _fake_unpermute, (_unpermute_setup, _unpermute_backward))


# --------------------------------------------------------------------------------------------
# permute / unpermute with a routing map
# --------------------------------------------------------------------------------------------

def _fake_permute_rm(tokens, routing_map, *, probs=None, num_out_tokens=None, drop_and_pad=False):
    num_out = tokens.shape[0] if num_out_tokens is None else num_out_tokens
    align = max(1, routing_map.shape[1 if drop_and_pad else 0])
    rows = num_out // align * align
    return (_empty((rows, tokens.shape[1]), tokens.dtype, tokens),
            _empty((rows,), probs.dtype, tokens) if probs is not None else None,
            _empty((rows,), torch.int32, tokens))


def _permute_rm_setup(ctx, a, output):
    ctx.e, ctx.n, ctx.pad = a.routing_map.shape[1], a.tokens.shape[0], bool(a.drop_and_pad)
    ctx.h, ctx.dtype, ctx.has_probs = a.tokens.shape[1], a.tokens.dtype, a.probs is not None
    ctx.save_for_backward(output[2], a.routing_map)


def _permute_rm_backward(ctx, g_out, g_probs, _):
    si, routing_map = ctx.saved_tensors
    if g_out is None:
        g_out = torch.zeros((si.shape[0], ctx.h), dtype=ctx.dtype)
    gp = g_probs if ctx.has_probs else None
    gt, gprob = torch.ops.npu.npu_moe_token_permute_with_routing_map_grad(g_out, gp, si, routing_map, ctx.e, ctx.n,
                                                                          ctx.pad)
    return {"tokens": gt, "probs": gprob}


def _fake_permute_rm_grad(g, probs_grad, si, routing_map, experts_num, tokens_num, drop_and_pad):
    return (_empty((tokens_num, g.shape[1]), g.dtype, g),
            _empty((tokens_num, experts_num), probs_grad.dtype, g) if probs_grad is not None else None)


def _permute_rm_grad_cpu(g, probs_grad, si, routing_map, experts_num, tokens_num, drop_and_pad):
    return _npu_routing_map.npu_moe_token_permute_with_routing_map_grad(
        g.contiguous(), None if probs_grad is None else probs_grad.contiguous(), si, routing_map, experts_num,
        tokens_num, drop_and_pad)


npu("npu_moe_token_permute_with_routing_map_grad(Tensor permuted_token_out_grad, Tensor? probs_grad, "
    "Tensor sorted_indices, Tensor routing_map, SymInt experts_num, SymInt tokens_num, bool drop_and_pad) "
    "-> (Tensor, Tensor)",
    _permute_rm_grad_cpu, _fake_permute_rm_grad)

npu("npu_moe_token_permute_with_routing_map(Tensor tokens, Tensor routing_map, *, Tensor? probs=None, "
    "int? num_out_tokens=None, bool drop_and_pad=False) -> (Tensor, Tensor, Tensor)",
    _npu_routing_map.npu_moe_token_permute_with_routing_map, _fake_permute_rm,
    (_permute_rm_setup, _permute_rm_backward))


def _fake_unpermute_rm_all(permuted_tokens, sorted_indices, restore_shape, *, probs=None, routing_map=None,
                           drop_and_pad=False):
    like = permuted_tokens
    return (_empty(tuple(restore_shape), permuted_tokens.dtype, like),
            _empty(sorted_indices.shape, sorted_indices.dtype, like),
            _empty(sorted_indices.shape, sorted_indices.dtype, like),
            _empty(sorted_indices.shape, probs.dtype, like) if probs is not None else None)


def _unpermute_rm_setup(ctx, a, output):
    ctx.pad, ctx.restore = bool(a.drop_and_pad), list(a.restore_shape)
    ctx.has_probs, ctx.has_map = a.probs is not None, a.routing_map is not None
    saved = [a.sorted_indices, output[1], output[2]]
    if ctx.has_map:
        saved.append(a.routing_map)
    if ctx.has_probs:
        saved += [a.permuted_tokens, a.probs]
    ctx.save_for_backward(*saved)


def _unpermute_rm_backward(ctx, grad, *_):
    saved = list(ctx.saved_tensors)
    sorted_indices, oidx, tid = saved[:3]
    rest = saved[3:]
    routing_map = rest.pop(0) if ctx.has_map else None
    permuted, probs = (rest[0], rest[1]) if ctx.has_probs else (None, None)
    a, b = (oidx, tid) if ctx.pad else (sorted_indices, sorted_indices)
    gx, gprob = torch.ops.npu.npu_moe_token_unpermute_with_routing_map_grad(grad, a, b, routing_map, permuted, probs,
                                                                            ctx.pad, ctx.restore)
    return {"permuted_tokens": gx, "probs": gprob}


def _fake_unpermute_rm_grad(g, out_index, permuted_token_id, routing_map, permuted_tokens, probs, drop_and_pad,
                            restore_shape):
    return (_empty((out_index.shape[0], g.shape[1]), g.dtype, g),
            _empty(probs.shape, g.dtype, g) if probs is not None else None)


def _unpermute_rm_grad_cpu(g, out_index, permuted_token_id, routing_map, permuted_tokens, probs, drop_and_pad,
                           restore_shape):
    return _npu_routing_map.npu_moe_token_unpermute_with_routing_map_grad(
        g.contiguous(), out_index, permuted_token_id, routing_map, permuted_tokens, probs, drop_and_pad,
        restore_shape)


npu("npu_moe_token_unpermute_with_routing_map_grad(Tensor unpermuted_tokens_grad, Tensor out_index, "
    "Tensor permuted_token_id, Tensor? routing_map, Tensor? permuted_tokens, Tensor? probs, bool drop_and_pad, "
    "int[] restore_shape) -> (Tensor, Tensor)",
    _unpermute_rm_grad_cpu, _fake_unpermute_rm_grad)

npu("_npu_moe_token_unpermute_with_routing_map(Tensor permuted_tokens, Tensor sorted_indices, int[] restore_shape, "
    "*, Tensor? probs=None, Tensor? routing_map=None, bool drop_and_pad=False) -> (Tensor, Tensor, Tensor, Tensor)",
    _npu_routing_map._npu_moe_token_unpermute_with_routing_map, _fake_unpermute_rm_all,
    (_unpermute_rm_setup, _unpermute_rm_backward))


def _unpermute_rm_composite(permuted_tokens, sorted_indices, restore_shape, *, probs=None, routing_map=None,
                            drop_and_pad=False):
    # as in torch_npu: the first result of the underscore operator, which carries the autograd
    return torch.ops.npu._npu_moe_token_unpermute_with_routing_map(
        permuted_tokens, sorted_indices, restore_shape, probs=probs, routing_map=routing_map,
        drop_and_pad=drop_and_pad)[0]


npu("npu_moe_token_unpermute_with_routing_map(Tensor permuted_tokens, Tensor sorted_indices, int[] restore_shape, "
    "*, Tensor? probs=None, Tensor? routing_map=None, bool drop_and_pad=False) -> Tensor",
    _unpermute_rm_composite, None, composite=True)


# --------------------------------------------------------------------------------------------
# finalize routing
# --------------------------------------------------------------------------------------------

def _fake_finalize(expanded_permuted_rows, skip1, skip2, bias, scales, expanded_src_to_dst_row,
                   export_for_source_row, drop_pad_mode=0, k=1):
    m = expanded_src_to_dst_row.shape[0]
    if scales is not None:
        m = scales.shape[0]
    elif k is not None and k > 0:
        m = m // k
    mode = 0 if drop_pad_mode is None else drop_pad_mode
    h = expanded_permuted_rows.shape[2] if mode in (1, 3) else expanded_permuted_rows.shape[1]
    return _empty((m, h), expanded_permuted_rows.dtype, expanded_permuted_rows)


def _finalize_setup(ctx, a, output):
    ctx.mode = 0 if a.drop_pad_mode is None else int(a.drop_pad_mode)
    ctx.save_for_backward(a.expanded_permuted_rows, a.expanded_src_to_dst_row, a.bias, a.scales,
                          a.export_for_source_row)


def _finalize_backward(ctx, grad_out):
    x, idx, bias, scales, expert_idx = ctx.saved_tensors
    need = ctx.needs
    gx, gb, gs = torch.ops.moefr.finalize_routing_backward(
        grad_out, x, idx, bias, scales, expert_idx, ctx.mode,
        [need.get("expanded_permuted_rows", False), need.get("bias", False), need.get("scales", False)])
    return {"expanded_permuted_rows": gx, "skip1": grad_out, "skip2": grad_out, "bias": gb, "scales": gs}


class _Ctx:
    """What an autograd.Function's backward reads of its ctx, filled by hand."""

    def __init__(self, saved, needs, **attrs):
        self.saved_tensors = saved
        self.needs_input_grad = needs
        self.__dict__.update(attrs)


def _finalize_bwd_cpu(grad_out, expanded_x, expanded_row_idx, bias, scales, expert_idx, drop_pad_mode, needs):
    from . import _autograd
    need_x, need_b, need_s = needs
    ctx = _Ctx((expanded_x, expanded_row_idx, bias, scales, expert_idx),
               (need_x, False, False, False, need_b and bias is not None, need_s and scales is not None),
               mode=int(drop_pad_mode))
    g = _autograd.MoeFinalizeRouting.backward(ctx, grad_out.contiguous())
    return g[0], g[4], g[5]


def _fake_finalize_bwd(grad_out, x, idx, bias, scales, expert_idx, mode, needs):
    return (_empty(x.shape, x.dtype, x) if needs[0] else None,
            _empty(bias.shape, bias.dtype, x) if needs[1] and bias is not None else None,
            _empty(scales.shape, scales.dtype, x) if needs[2] and scales is not None else None)


own("finalize_routing_backward(Tensor grad_out, Tensor expanded_x, Tensor expanded_row_idx, Tensor? bias, "
    "Tensor? scales, Tensor? expert_idx, int drop_pad_mode, bool[3] needs) -> (Tensor, Tensor, Tensor)",
    _finalize_bwd_cpu, _fake_finalize_bwd)


def _finalize_cpu(expanded_permuted_rows, skip1, skip2, bias, scales, expanded_src_to_dst_row, export_for_source_row,
                  drop_pad_mode=0, k=1):
    from . import torch_npu as _tn
    return _tn._npu_moe_finalize_routing(expanded_permuted_rows, skip1, skip2, bias, scales, expanded_src_to_dst_row,
                                         export_for_source_row, drop_pad_mode, k)


npu("npu_moe_finalize_routing(Tensor expanded_permuted_rows, Tensor? skip1, Tensor? skip2, Tensor? bias, "
    "Tensor? scales, Tensor expanded_src_to_dst_row, Tensor? export_for_source_row, int? drop_pad_mode=0, "
    "int? k=1) -> Tensor",
    _finalize_cpu, _fake_finalize, (_finalize_setup, _finalize_backward))


# --------------------------------------------------------------------------------------------
# SwiGlu
# --------------------------------------------------------------------------------------------

def _fake_swiglu(x, dim=-1):
    shape = list(x.shape)
    shape[dim] = shape[dim] // 2
    return _empty(shape, x.dtype, x)


def _swiglu_setup(ctx, a, output):
    ctx.dim = a.dim
    ctx.save_for_backward(a.self)


def _swiglu_backward(ctx, grad):
    (x,) = ctx.saved_tensors
    return {"self": torch.ops.npu.npu_swiglu_backward(grad.to(x.dtype), x, ctx.dim)}


npu("npu_swiglu_backward(Tensor grad_output, Tensor self, int dim=-1) -> Tensor",
    _npu_mlp.npu_swiglu_backward, lambda g, x, dim=-1: _empty(x.shape, x.dtype, x))
npu("npu_swiglu(Tensor self, int dim=-1) -> Tensor", _npu_mlp.npu_swiglu, _fake_swiglu,
    (_swiglu_setup, _swiglu_backward))


# --------------------------------------------------------------------------------------------
# GroupedMatmul
# --------------------------------------------------------------------------------------------

_GMM_KW = ("bias", "scale", "offset", "antiquant_scale", "antiquant_offset", "per_token_scale", "group_list",
           "activation_input", "activation_quant_scale", "activation_quant_offset", "split_item", "group_type",
           "group_list_type", "act_type", "tuning_config", "output_dtype", "x_dtype", "weight_dtype", "scale_dtype",
           "per_token_scale_dtype")


def _fake_gmm(x, weight, **kw):
    """moefr's outputs (python/moefr/_npu_gmm.py _out_shapes: torch_npu's allocation). Only forms whose
    shapes follow from the arguments: one output per x, or one (sum of rows, n) / (E, m, n) output
    (split_item 2/3). A tensor group_list splitting one x into several outputs (split_item 0/1) has
    data-dependent shapes: refused under tracing (use split_item 2 or 3, as MoE code does)."""
    split_item = kw.get("split_item") or 0
    group_type = kw.get("group_type")
    group_list = kw.get("group_list")
    single = len(weight) == 1 and weight[0].dim() == 3
    ws = [weight[0][i] for i in range(weight[0].shape[0])] if single else list(weight)
    pack = _npu_gmm._int4_pack(weight)
    n0 = weight[0].shape[-1] * pack
    dt = _npu_gmm._out_dtype(kw.get("output_dtype"), x[0])
    if split_item in (2, 3):
        if group_type == 2:
            E = group_list.shape[0] if isinstance(group_list, torch.Tensor) else len(group_list)
            return [_empty((E, x[0].shape[0], n0), dt, x[0])]
        return [_empty((sum(t.shape[0] for t in x), n0), dt, x[0])]
    if isinstance(group_list, (list, tuple)) and len(x) == 1 and group_type != 2:
        ends = list(group_list)
        sizes = [ends[0]] + [ends[i] - ends[i - 1] for i in range(1, len(ends))]
        return [_empty((s, ws[i].shape[-1] * pack), dt, x[0]) for i, s in enumerate(sizes)]
    if isinstance(group_list, torch.Tensor) and len(x) == 1 and group_type != 2:
        raise RuntimeError("npu_grouped_matmul (moefr): split_item %d with a tensor group_list splits x into "
                           "outputs whose shapes depend on group_list's values; under torch.compile use "
                           "split_item 2 or 3" % split_item)
    return [_empty(tuple(t.shape[:-1]) + (ws[i].shape[-1] * pack,), dt, t) for i, t in enumerate(x)]


def _gmm_cpu(x, weight, **kw):
    return _npu_gmm.npu_grouped_matmul(list(x), list(weight), **kw)


def _gmm_setup(ctx, a, output):
    x, weight = list(a.x), list(a.weight)
    ctx.nx, ctx.nw = len(x), len(weight)
    bias = a.bias or []
    ctx.nb = len(bias)
    ctx.bias_dtypes = [b.dtype for b in bias]
    ctx.args = (a.split_item or 0, a.group_type, a.group_list_type or 0)
    gl = a.group_list
    ctx.has_gl = isinstance(gl, torch.Tensor)
    ctx.quant = any(a[n] is not None and len(a[n]) > 0 for n in _npu_gmm._QUANT)
    ctx.save_for_backward(*x, *weight, *([gl] if ctx.has_gl else []))


def _gmm_backward(ctx, gys):
    """MindSpeed's backward through the same operator (see _npu_gmm's module docstring):
    one x split in M (group_type 0, split_item 2/3): dx = GMM(grad, w^T), dw = GMM(x^T, grad, K split);
    group_type -1 lists: per tensor; dbias: moefr.grouped_bias_sum. Other forms: an error."""
    saved = list(ctx.saved_tensors)
    x, weight = saved[:ctx.nx], saved[ctx.nx:ctx.nx + ctx.nw]
    gl = saved[ctx.nx + ctx.nw] if ctx.has_gl else None
    split_item, group_type, glt = ctx.args
    if ctx.quant:
        raise RuntimeError("npu_grouped_matmul (moefr): no gradient for quantized grouped matmul")
    if group_type == 0 and ctx.nx == 1 and split_item in (2, 3) and gl is not None:
        gy = _npu_gmm._rowmajor(gys[0].to(x[0].dtype))
        wt = [w.transpose(-1, -2) for w in weight]  # transposed views: CANN's "tensor transpose"
        (gx,) = torch.ops.npu.npu_grouped_matmul([gy], wt, group_list=gl, split_item=3, group_type=0,
                                                 group_list_type=glt)
        (dw,) = torch.ops.npu.npu_grouped_matmul([_npu_gmm._rowmajor(x[0]).t()], [gy], group_list=gl, split_item=3,
                                                 group_type=2, group_list_type=glt)
        gw = [dw] if ctx.nw == 1 else list(dw.unbind(0))
        gb = []
        if ctx.nb:
            acc = torch.ops.moefr.grouped_bias_sum(gys[0], gl, glt)
            gb = [acc.to(ctx.bias_dtypes[0])] if ctx.nb == 1 else [acc[i].to(ctx.bias_dtypes[i])
                                                                   for i in range(ctx.nb)]
        return {"x": [gx], "weight": gw, "bias": gb if ctx.nb else None}
    if group_type == -1 and ctx.nx == ctx.nw:
        gys = [_npu_gmm._rowmajor(g.to(x[i].dtype)) for i, g in enumerate(gys)]
        gx = torch.ops.npu.npu_grouped_matmul(gys, [w.transpose(-1, -2) for w in weight], split_item=0,
                                              group_type=-1)
        xt = [_npu_gmm._rowmajor(xi.reshape(-1, xi.shape[-1]).t()) for xi in x]
        gw = torch.ops.npu.npu_grouped_matmul(xt, [g.reshape(-1, g.shape[-1]) for g in gys], split_item=0,
                                              group_type=-1)
        gb = [g.reshape(-1, g.shape[-1]).float().sum(0).to(ctx.bias_dtypes[i]) for i, g in enumerate(gys[:ctx.nb])]
        return {"x": list(gx), "weight": list(gw), "bias": gb if ctx.nb else None}
    raise RuntimeError("npu_grouped_matmul (moefr): no gradient for this form (moefr differentiates one x split "
                       "with group_type 0 and split_item 2/3, and group_type -1 lists)")


def _bias_sum_cpu(grad, group_list, group_list_type):
    ids, total = _npu_gmm._group_rows(group_list, group_list_type, grad.shape[0])
    E = group_list.numel()
    return torch.zeros((E, grad.shape[1]), dtype=torch.float32).index_add_(0, ids, grad[:total].float())


own("grouped_bias_sum(Tensor grad, Tensor group_list, int group_list_type) -> Tensor",
    _bias_sum_cpu, lambda g, gl, glt: _empty((gl.shape[0], g.shape[1]), torch.float32, g))

npu("npu_grouped_matmul(Tensor[] x, Tensor[] weight, *, Tensor[]? bias=None, Tensor[]? scale=None, "
    "Tensor[]? offset=None, Tensor[]? antiquant_scale=None, Tensor[]? antiquant_offset=None, "
    "Tensor[]? per_token_scale=None, Tensor? group_list=None, Tensor[]? activation_input=None, "
    "Tensor[]? activation_quant_scale=None, Tensor[]? activation_quant_offset=None, int? split_item=0, "
    "int? group_type=None, int? group_list_type=0, int? act_type=0, int[]? tuning_config=None, "
    "int? output_dtype=None, int? x_dtype=None, int? weight_dtype=None, int? scale_dtype=None, "
    "int? per_token_scale_dtype=None) -> Tensor[]",
    _gmm_cpu, _fake_gmm, (_gmm_setup, _gmm_backward))
npu("npu_grouped_matmul.List(Tensor[] x, Tensor[] weight, *, Tensor[]? bias=None, Tensor[]? scale=None, "
    "Tensor[]? offset=None, Tensor[]? antiquant_scale=None, Tensor[]? antiquant_offset=None, "
    "Tensor[]? per_token_scale=None, int[]? group_list=None, Tensor[]? activation_input=None, "
    "Tensor[]? activation_quant_scale=None, Tensor[]? activation_quant_offset=None, int? split_item=0, "
    "int? group_type=None, int? group_list_type=0, int? act_type=0, ScalarType? output_dtype=None) -> Tensor[]",
    _gmm_cpu, _fake_gmm)


# npu_grouped_matmul_add_ mutates self (the schema's Tensor(a!)) and returns it. PyTorch functionalizes no
# custom operator whose output aliases an input, so the in-place operator is CompositeImplicitAutograd:
# plain CPU tensors (eager) go to the library in place; anything else (fake, functional tensors under
# torch.compile / opcheck) is written as self.copy_(npu_grouped_matmul_add(self, ...)), the out-of-place
# operator of op-plugin's YAML, which has the CPU kernel and the fake (op-plugin's meta: group_type 2).
# No gradient (torch_npu registers none).
def _gmm_add_cpu(self, x, weight, group_list, *, transpose_x=True, transpose_weight=False, group_type=2,
                 group_list_type=0):
    return _npu_gmm_add.npu_grouped_matmul_add(self, x, weight, group_list, transpose_x=transpose_x,
                                               transpose_weight=transpose_weight, group_type=group_type,
                                               group_list_type=group_list_type)


def _fake_gmm_add(self, x, weight, group_list, *, transpose_x=True, transpose_weight=False, group_type=2,
                  group_list_type=0):
    torch._check(group_type == 2, lambda: "group_type only supports 2, but got %s" % (group_type,))
    return torch.empty_like(self, memory_format=torch.contiguous_format)


def _plain_cpu(t):
    return (type(t) in (torch.Tensor, torch.nn.Parameter) and t.device.type == "cpu"
            and not torch._is_functional_tensor(t))


def _gmm_add_inplace(self, x, weight, group_list, *, transpose_x=True, transpose_weight=False, group_type=2,
                     group_list_type=0):
    kw = dict(transpose_x=transpose_x, transpose_weight=transpose_weight, group_type=group_type,
              group_list_type=group_list_type)
    if all(_plain_cpu(t) for t in (self, x, weight, group_list)):
        with torch.no_grad():
            return _npu_gmm_add.npu_grouped_matmul_add_(self, x, weight, group_list, **kw)
    return self.copy_(torch.ops.npu.npu_grouped_matmul_add(self, x, weight, group_list, **kw))


npu("npu_grouped_matmul_add(Tensor self, Tensor x, Tensor weight, Tensor group_list, *, bool transpose_x=True, "
    "bool transpose_weight=False, int group_type=2, int? group_list_type=0) -> Tensor",
    _gmm_add_cpu, _fake_gmm_add)
npu("npu_grouped_matmul_add_(Tensor(a!) self, Tensor x, Tensor weight, Tensor group_list, *, bool transpose_x=True, "
    "bool transpose_weight=False, int group_type=2, int? group_list_type=0) -> Tensor(a!)",
    _gmm_add_inplace, None, composite=True)
