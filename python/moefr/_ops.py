"""moefr._ops - the two operators as plain functions over numpy arrays and CPU torch tensors:
allocate the outputs (of the input's kind), describe every tensor as a view, run both phases."""

import numpy as np

from . import _lib, _views

# Tests set this to fill fresh (floating-point) outputs with NaN before the library runs,
# so an element the library forgot to write cannot pass as correct.
POISON_OUTPUTS = False


def _size(x):
    return int(np.prod(x.shape)) if x is not None else 0


def _dim(x, i, default=0):
    return int(x.shape[i]) if x is not None and x.ndim > i else default


def _empty(like, shape, dtype_src):
    """A new array/tensor shaped `shape`, of `like`'s kind and `dtype_src`'s dtype."""
    shape = tuple(max(0, int(s)) for s in shape)
    if _views.is_torch(like):
        torch = _views.torch_module()
        dt = dtype_src.dtype if _views.is_torch(dtype_src) else torch.from_numpy(
            np.empty(0, dtype_src.dtype)).dtype
        out = torch.empty(shape, dtype=dt)
        if POISON_OUTPUTS and out.is_floating_point():
            out.fill_(float("nan"))
        return out
    if _views.is_torch(dtype_src):
        if dtype_src.dtype == _views.torch_module().bfloat16:
            raise TypeError("moefr: numpy has no bfloat16; pass grad_y as a torch tensor")
        dt = dtype_src.new_empty(0).numpy().dtype
    else:
        dt = dtype_src.dtype
    out = np.empty(shape, dt)
    if POISON_OUTPUTS and np.issubdtype(dt, np.floating):
        out.fill(np.nan)
    return out


def _zeros(like, shape, dtype_src):
    out = _empty(like, shape, dtype_src)
    out[...] = 0
    return out


def moe_finalize_routing_grad(grad_y, expanded_row_idx, expanded_x=None, scales=None, expert_idx=None,
                              bias=None, drop_pad_mode=0, active_num=0, expert_num=0, expert_capacity=0):
    """Backward of MoE finalize routing (aclnnMoeFinalizeRoutingV2Grad, SPEC section 4).

    grad_y (R, H); expanded_row_idx (R*K,) int32 in row layout (entry r*K + k);
    expanded_x (R*K, H), (active_num, H) or, in drop_pad_mode 1, (expert_num, expert_capacity, H);
    scales, expert_idx (R, K); bias (E, H). Returns (grad_expanded_x, grad_scales), new
    arrays of grad_y's kind (numpy or torch); grad_scales is zeros (R, 1) in grad_y's dtype
    when scales is None. Inputs may be strided views; the library reads them in place.
    Raises MoefrError (a ValueError and a RuntimeError) with the library's message when it rejects the call."""
    lib = _lib.library()
    gy = _views.as_input(grad_y, "grad_y")
    idx = _views.as_input(expanded_row_idx, "expanded_row_idx")
    x = _views.as_input(expanded_x, "expanded_x")
    s = _views.as_input(scales, "scales")
    e = _views.as_input(expert_idx, "expert_idx")
    b = _views.as_input(bias, "bias")
    mode, active, en, ec = int(drop_pad_mode), int(active_num), int(expert_num), int(expert_capacity)

    R = _dim(gy, 0)
    H = _dim(gy, 1) if gy.ndim >= 2 else _dim(gy, gy.ndim - 1)
    K = _dim(s, 1, 1) if s is not None else 1
    if mode == 1:  # non-positive expertNum/expertCapacity: an empty output, then the library's 561002
        gx_shape = (max(en, 0), max(ec, 0), H)
    else:
        n = _size(idx)
        gx_shape = (active if 0 < active < n else n, H)
    gx = _empty(gy, gx_shape, gy)
    gs = _empty(gy, (R, K), s) if s is not None else _zeros(gy, (R, 1), gy)

    with _views.Descriptors(lib) as d:
        args = (d.make(gy, "grad_y"), d.make(idx, "expanded_row_idx"), d.make(x, "expanded_x"),
                d.make(s, "scales"), d.make(e, "expert_idx"), d.make(b, "bias"),
                mode, active, en, ec, d.make(gx, "grad_expanded_x"), d.make(gs, "grad_scales"))
        _lib.run_two_phase(lib, lib.aclnnMoeFinalizeRoutingV2GradGetWorkspaceSize,
                           lib.aclnnMoeFinalizeRoutingV2Grad, args, "aclnnMoeFinalizeRoutingV2Grad")
    return gx, gs


def finalize_routing_forward(expanded_x, expanded_row_idx, x1=None, x2=None, bias=None, scales=None,
                             expert_idx=None, drop_pad_mode=0):
    """The forward operator (aclnnMoeFinalizeRoutingV2, SPEC section 8) without autograd;
    returns out (R, H), a new array/tensor of expanded_x's kind and dtype."""
    lib = _lib.library()
    if not hasattr(lib, "aclnnMoeFinalizeRoutingV2GetWorkspaceSize"):
        raise NotImplementedError("moefr: %s has no aclnnMoeFinalizeRoutingV2 (forward operator)"
                                  % _lib.library_path())
    x = _views.as_input(expanded_x, "expanded_x")
    idx = _views.as_input(expanded_row_idx, "expanded_row_idx")
    a1 = _views.as_input(x1, "x1")
    a2 = _views.as_input(x2, "x2")
    b = _views.as_input(bias, "bias")
    s = _views.as_input(scales, "scales")
    e = _views.as_input(expert_idx, "expert_idx")

    # R = len(expanded_row_idx) // K, as CANN's tiling derives it (K = scales dim1, or 1);
    # K = 0 keeps scales' rows so that the library refuses it with its own message.
    K = _dim(s, 1) if s is not None and s.ndim == 2 else 1
    R = _size(idx) // K if K > 0 else _dim(s, 0)
    H = _dim(x, x.ndim - 1) if x.ndim >= 1 else 0
    out = _empty(x, (R, H), x)

    with _views.Descriptors(lib) as d:
        args = (d.make(x, "expanded_x"), d.make(idx, "expanded_row_idx"), d.make(a1, "x1"),
                d.make(a2, "x2"), d.make(b, "bias"), d.make(s, "scales"), d.make(e, "expert_idx"),
                int(drop_pad_mode), d.make(out, "out"))
        _lib.run_two_phase(lib, lib.aclnnMoeFinalizeRoutingV2GetWorkspaceSize,
                           lib.aclnnMoeFinalizeRoutingV2, args, "aclnnMoeFinalizeRoutingV2")
    return out
