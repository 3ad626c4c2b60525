"""moefr._npu_permute - torch_npu.npu_moe_token_permute / npu_moe_token_unpermute on
aclnnMoeTokenPermute(Grad) / aclnnMoeTokenUnpermute(Grad), with the autograd torch_npu registers in
derivatives.yaml: permute -> tokens (npu_moe_token_permute_grad_v2 = aclnnMoeTokenPermuteGrad);
unpermute -> permuted_tokens and probs (npu_moe_token_unpermute_grad_v2 = aclnnMoeTokenUnpermuteGrad)."""

import torch
from torch.autograd.function import once_differentiable

from . import _routing
from ._npu_args import _check, _cpu


class _Permute(torch.autograd.Function):
    @staticmethod
    def forward(ctx, tokens, indices, num_out, padded_mode):
        T = indices.numel()
        if num_out == 0 and T > 0:
            # Every row cut: the operator reads numOutTokens 0 as "all T" (<= 0 means T + value), so it
            # runs with T and the rows are dropped here; sortedIndices do not depend on the row count.
            out, sorted_indices = _routing.token_permute(tokens, indices, T, padded_mode)
            out = out[:0].contiguous()
        else:
            out, sorted_indices = _routing.token_permute(tokens, indices, num_out, padded_mode)
        ctx.num_out = num_out
        ctx.N, ctx.dtype, ctx.padded = tokens.shape[0], tokens.dtype, padded_mode
        ctx.K = 1 if indices.dim() == 1 else indices.shape[-1]
        ctx.save_for_backward(sorted_indices)
        ctx.mark_non_differentiable(sorted_indices)
        return out, sorted_indices

    @staticmethod
    @once_differentiable
    def backward(ctx, grad, _):
        (sorted_indices,) = ctx.saved_tensors
        if grad is None or not ctx.needs_input_grad[0]:
            return None, None, None, None
        if ctx.num_out == 0:
            return torch.zeros((ctx.N, grad.shape[-1]), dtype=ctx.dtype), None, None, None
        g = _routing.token_permute_grad(grad.contiguous(), sorted_indices, ctx.K, ctx.padded, ctx.N, ctx.dtype)
        return g, None, None, None


def npu_moe_token_permute(tokens, indices, num_out_tokens=None, padded_mode=False):
    """torch_npu.npu_moe_token_permute -> (permuted_tokens, sorted_indices).

    tokens (N, H); indices (N, K) or (N,) expert ids; T = indices.numel(). num_out_tokens None/0 keeps
    all T rows, > 0 keeps min(num_out_tokens, T), < 0 keeps T + num_out_tokens (torch_npu's
    npu_moe_token_permute_out_size; -T keeps none: torch_npu would hand the operator 0, which it reads
    as all T, so moefr runs it with T and returns no rows). permuted_tokens[i] = tokens[perm[i] // K] with perm the stable sort of
    the flat ids; sorted_indices (T,) int32 maps flat slot r*K + k to its row (aclnnMoeTokenPermute's
    sortedIndicesOut). Differentiable in tokens (aclnnMoeTokenPermuteGrad)."""
    _cpu(tokens, "tokens")
    _cpu(indices, "indices")
    _check(tokens.dim() == 2, "tokens should be 2D, got %dD" % tokens.dim())
    _check(indices.dim() in (1, 2), "indices should be 1D or 2D, got %dD" % indices.dim())
    v = 0 if num_out_tokens is None else int(num_out_tokens)
    T = indices.numel()
    actual = min(v, T) if v > 0 else v + T
    return _Permute.apply(tokens, indices, actual, bool(padded_mode))


class _Unpermute(torch.autograd.Function):
    @staticmethod
    def forward(ctx, permuted, sorted_indices, probs, padded_mode, restore_shape):
        out = _routing.token_unpermute(permuted, sorted_indices, probs, padded_mode, restore_shape)
        ctx.padded, ctx.restore = padded_mode, restore_shape
        ctx.has_probs = probs is not None
        # Without probs the backward needs only permuted_tokens' shape and dtype (torch_npu saves
        # nothing of it either): keep no reference to its memory.
        ctx.shape, ctx.dtype = tuple(permuted.shape), permuted.dtype
        if ctx.has_probs:
            ctx.save_for_backward(permuted, sorted_indices, probs)
        else:
            ctx.save_for_backward(sorted_indices)
        return out

    @staticmethod
    @once_differentiable
    def backward(ctx, grad):
        if ctx.has_probs:
            permuted, sorted_indices, probs = ctx.saved_tensors
        else:  # a stand-in of the right shape and dtype, no memory: the operator reads no rows of it
            (sorted_indices,) = ctx.saved_tensors
            permuted, probs = torch.zeros((), dtype=ctx.dtype).expand(ctx.shape), None
        gp, gprob = _routing.token_unpermute_grad(permuted, grad.contiguous(), sorted_indices, probs,
                                                  ctx.padded, ctx.restore, permuted.shape[0], permuted.dtype)
        return (gp if ctx.needs_input_grad[0] else None, None,
                gprob if ctx.has_probs and ctx.needs_input_grad[2] else None, None, None)


def npu_moe_token_unpermute(permuted_tokens, sorted_indices, probs=None, padded_mode=False, restore_shape=None):
    """torch_npu.npu_moe_token_unpermute -> unpermuted_tokens (T / K, H) with K = probs.shape[1] (1
    without probs): out[r] = sum_k probs[r, k] * permuted_tokens[sorted_indices[r*K + k]], slots whose
    row is past permuted_tokens' rows contribute nothing. Differentiable in permuted_tokens and probs
    (aclnnMoeTokenUnpermuteGrad)."""
    _cpu(permuted_tokens, "permuted_tokens")
    _cpu(sorted_indices, "sorted_indices")
    _cpu(probs, "probs")
    _check(permuted_tokens.dim() == 2, "permuted_tokens should be 2D, got %dD" % permuted_tokens.dim())
    _check(sorted_indices.dim() == 1, "sorted_indices should be 1D, got %dD" % sorted_indices.dim())
    _check(probs is None or probs.dim() == 2, "probs should be 2D")
    rs = tuple(int(v) for v in restore_shape) if restore_shape is not None else None
    return _Unpermute.apply(permuted_tokens, sorted_indices, probs, bool(padded_mode), rs)
