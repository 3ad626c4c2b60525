"""moefr._npu_routing_map - torch_npu's routing-map permutation functions on
aclnnMoeTokenPermuteWithRoutingMap(Grad) / aclnnMoeTokenUnpermuteWithRoutingMap(Grad), with the
names, arguments and defaults of op_plugin_functions.yaml and the autograd of derivatives.yaml:

  npu_moe_token_permute_with_routing_map(tokens, routing_map, *, probs=None, num_out_tokens=None,
      drop_and_pad=False) -> (permuted_tokens, permuted_probs, sorted_indices)
      differentiable in tokens and probs (npu_moe_token_permute_with_routing_map_grad)
  npu_moe_token_permute_with_routing_map_grad(permuted_token_out_grad, probs_grad, sorted_indices,
      routing_map, experts_num, tokens_num, drop_and_pad) -> (tokens_grad, probs_grad)
  npu_moe_token_unpermute_with_routing_map(permuted_tokens, sorted_indices, restore_shape, *,
      probs=None, routing_map=None, drop_and_pad=False) -> unpermuted_tokens
  _npu_moe_token_unpermute_with_routing_map(...same...) -> (unpermuted_tokens, out_index,
      permuted_token_id, permute_probs); differentiable in permuted_tokens and probs
  npu_moe_token_unpermute_with_routing_map_grad(unpermuted_tokens_grad, out_index, permuted_token_id,
      routing_map, permuted_tokens, probs, drop_and_pad, restore_shape) -> (permuted_tokens_grad,
      probs_grad)

This is what MindSpeed's --moe-permute-fusion (mindspeed/te/pytorch/permutation.py) and
torchtitan-npu's expert-parallel combine call (keywords included)."""

import torch
from torch.autograd.function import once_differentiable

from . import _routing
from ._npu_args import _check, _cpu


# --------------------------------------------------------------------------------------------
# permute
# --------------------------------------------------------------------------------------------

def npu_moe_token_permute_with_routing_map_grad(permuted_token_out_grad, probs_grad, sorted_indices, routing_map,
                                                experts_num, tokens_num, drop_and_pad):
    """torch_npu.npu_moe_token_permute_with_routing_map_grad -> (tokens_grad (tokens_num, H),
    probs_grad (tokens_num, experts_num) or None when probs_grad is None)."""
    for t, n in ((permuted_token_out_grad, "permuted_token_out_grad"), (probs_grad, "probs_grad"),
                 (sorted_indices, "sorted_indices"), (routing_map, "routing_map")):
        _cpu(t, n)
    return _routing.token_permute_with_routing_map_grad(permuted_token_out_grad, probs_grad, sorted_indices,
                                                        routing_map, int(experts_num), int(tokens_num),
                                                        bool(drop_and_pad))


class _PermuteRM(torch.autograd.Function):
    @staticmethod
    def forward(ctx, tokens, routing_map, probs, num_out, drop_and_pad):
        out, pout, si = _routing.token_permute_with_routing_map(tokens, routing_map, probs, num_out, drop_and_pad)
        ctx.save_for_backward(si, routing_map)
        ctx.E, ctx.N, ctx.pad, ctx.has_probs = routing_map.shape[1], tokens.shape[0], drop_and_pad, probs is not None
        ctx.H, ctx.dtype = tokens.shape[1], tokens.dtype
        ctx.mark_non_differentiable(si)
        return out, pout, si

    @staticmethod
    @once_differentiable
    def backward(ctx, g_out, g_probs, _):
        si, routing_map = ctx.saved_tensors
        if g_out is None:
            g_out = torch.zeros((si.shape[0], ctx.H), dtype=ctx.dtype)
        gp = g_probs.contiguous() if ctx.has_probs and g_probs is not None else None
        gt, gprob = _routing.token_permute_with_routing_map_grad(g_out.contiguous(), gp, si, routing_map, ctx.E,
                                                                 ctx.N, ctx.pad)
        return (gt if ctx.needs_input_grad[0] else None, None,
                gprob if ctx.needs_input_grad[2] else None, None, None)


def npu_moe_token_permute_with_routing_map(tokens, routing_map, *, probs=None, num_out_tokens=None,
                                           drop_and_pad=False):
    """torch_npu.npu_moe_token_permute_with_routing_map -> (permuted_tokens, permuted_probs | None,
    sorted_indices int32).

    tokens (N, H); routing_map (N, E) bool or int8 of 0/1; probs (N, E) like tokens or None.
    num_out_tokens defaults to N (torch_npu's wrapper); the rows are num_out_tokens rounded down to a
    multiple of N (drop_and_pad False: topK = num_out_tokens // N, every row of routing_map holding
    topK ones) or of E (drop_and_pad True: capacity = num_out_tokens // E).
    drop_and_pad False: the ones listed expert by expert (tokens ascending) are the output rows;
    sorted_indices[q] is the row of the q-th one in token order, permuted_tokens[sorted_indices[q]] =
    tokens[q // topK], permuted_probs the probs of the ones in expert order.
    drop_and_pad True: sorted_indices[e*C + c] = the c-th token of expert e (its routed tokens ascending,
    then the others), permuted_tokens = tokens[sorted_indices], permuted_probs[e*C + c] =
    probs[sorted_indices[e*C + c], e]. Differentiable in tokens and probs."""
    _cpu(tokens, "tokens")
    _cpu(routing_map, "routing_map")
    _cpu(probs, "probs")
    _check(tokens.dim() == 2, "tokens should be 2D, got %dD" % tokens.dim())
    _check(routing_map.dim() == 2, "routing_map should be 2D, got %dD" % routing_map.dim())
    num_out = int(tokens.shape[0]) if num_out_tokens is None else int(num_out_tokens)
    return _PermuteRM.apply(tokens, routing_map, probs, num_out, bool(drop_and_pad))


# --------------------------------------------------------------------------------------------
# unpermute
# --------------------------------------------------------------------------------------------

def npu_moe_token_unpermute_with_routing_map_grad(unpermuted_tokens_grad, out_index, permuted_token_id, routing_map,
                                                  permuted_tokens, probs, drop_and_pad, restore_shape):
    """torch_npu.npu_moe_token_unpermute_with_routing_map_grad -> (permuted_tokens_grad
    (out_index.shape[0], H), probs_grad (probs' shape) or None without probs)."""
    for t, n in ((unpermuted_tokens_grad, "unpermuted_tokens_grad"), (out_index, "out_index"),
                 (permuted_token_id, "permuted_token_id"), (routing_map, "routing_map"),
                 (permuted_tokens, "permuted_tokens"), (probs, "probs")):
        _cpu(t, n)
    rs = [int(v) for v in restore_shape] if restore_shape is not None else None
    return _routing.token_unpermute_with_routing_map_grad(unpermuted_tokens_grad, out_index, permuted_token_id,
                                                          routing_map, permuted_tokens, probs, bool(drop_and_pad), rs)


class _UnpermuteRM(torch.autograd.Function):
    @staticmethod
    def forward(ctx, permuted, sorted_indices, restore_shape, probs, routing_map, drop_and_pad):
        out, oidx, tid, pp = _routing.token_unpermute_with_routing_map(permuted, sorted_indices, restore_shape, probs,
                                                                       routing_map, drop_and_pad)
        ctx.pad, ctx.restore = drop_and_pad, restore_shape
        ctx.has_probs, ctx.has_map = probs is not None, routing_map is not None
        saved = [sorted_indices, oidx, tid]
        if routing_map is not None:
            saved.append(routing_map)
        if probs is not None:
            saved += [permuted, probs]
        ctx.save_for_backward(*saved)
        for t in (oidx, tid) + ((pp,) if pp is not None else ()):
            ctx.mark_non_differentiable(t)
        return out, oidx, tid, pp

    @staticmethod
    @once_differentiable
    def backward(ctx, grad, *_):
        saved = list(ctx.saved_tensors)
        sorted_indices, oidx, tid = saved[:3]
        rest = saved[3:]
        routing_map = rest.pop(0) if ctx.has_map else None
        permuted, probs = (rest[0], rest[1]) if ctx.has_probs else (None, None)
        if grad is None:
            grad = torch.zeros(tuple(ctx.restore), dtype=torch.float32)
        # derivatives.yaml: drop_and_pad ? grad(grad, result1, result2, ...) : grad(grad, sorted_indices, sorted_indices, ...)
        a, b = (oidx, tid) if ctx.pad else (sorted_indices, sorted_indices)
        gx, gprob = _routing.token_unpermute_with_routing_map_grad(grad.contiguous(), a, b, routing_map, permuted,
                                                                   probs, ctx.pad, ctx.restore)
        return (gx if ctx.needs_input_grad[0] else None, None, None,
                gprob if ctx.has_probs and ctx.needs_input_grad[3] else None, None, None)


def _npu_moe_token_unpermute_with_routing_map(permuted_tokens, sorted_indices, restore_shape, *, probs=None,
                                              routing_map=None, drop_and_pad=False):
    """torch_npu._npu_moe_token_unpermute_with_routing_map -> (unpermuted_tokens (restore_shape),
    out_index, permuted_token_id, permute_probs | None).

    drop_and_pad False: topK = permuted_tokens.shape[0] // N (N = probs.shape[0], else restore_shape[0]);
    out[r] = sum_k permuted_tokens[d] * p over d = sorted_indices[r*topK + k], p the probs of routing_map's
    ones in token order (1 without probs); d == -1 or d >= permuted_tokens.shape[0] or p == 0 add
    nothing. out_index / permuted_token_id are not computed (zeros).
    drop_and_pad True: permuted_token_id, out_index = sorted_indices.sort(stable=True); with probs
    permute_probs[i] = probs[sorted_indices[i], i // C] and each row is multiplied (rounded to the dtype)
    first; out[t] = the sum of the rows i with sorted_indices[i] == t. Differentiable in
    permuted_tokens and probs."""
    _cpu(permuted_tokens, "permuted_tokens")
    _cpu(sorted_indices, "sorted_indices")
    _cpu(probs, "probs")
    _cpu(routing_map, "routing_map")
    _check(restore_shape is not None and len(restore_shape) == 2, "restore_shape should have 2 values")
    rs = tuple(int(v) for v in restore_shape)
    return _UnpermuteRM.apply(permuted_tokens, sorted_indices, rs, probs, routing_map, bool(drop_and_pad))


def npu_moe_token_unpermute_with_routing_map(permuted_tokens, sorted_indices, restore_shape, *, probs=None,
                                             routing_map=None, drop_and_pad=False):
    """torch_npu.npu_moe_token_unpermute_with_routing_map -> unpermuted_tokens (restore_shape): the
    first result of _npu_moe_token_unpermute_with_routing_map, with its autograd."""
    return _npu_moe_token_unpermute_with_routing_map(permuted_tokens, sorted_indices, restore_shape, probs=probs,
                                                     routing_map=routing_map, drop_and_pad=drop_and_pad)[0]
