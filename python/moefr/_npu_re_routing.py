"""moefr._npu_re_routing - torch_npu.npu_moe_re_routing for moefr.torch_npu: the tokens one rank
received from every rank in the expert-parallel all-to-all (rank-major) put in expert-major order,
through aclnnMoeReRouting. torch_npu registers no gradient for it (derivatives.yaml), so neither
does moefr."""

import torch

from . import _routing
from ._npu_args import _cpu_tensor
from ._lib import MoefrError

# c10_npu::DType values torch_npu's wrapper accepts for tokens_dtype (op-plugin
# MoeReRoutingOpApi.cpp): hifloat8, float4_e2m1fn_x2, float4_e1m2fn_x2.
_TOKENS_DTYPES = {290: "hifloat8", 296: "float4_e2m1fn_x2", 297: "float4_e1m2fn_x2"}


def npu_moe_re_routing(tokens, expert_token_num_per_rank, *, per_token_scales=None, expert_token_num_type=1,
                       idx_type=0, tokens_dtype=None):
    """torch_npu.npu_moe_re_routing(Tensor tokens, Tensor expert_token_num_per_rank, *,
    Tensor? per_token_scales=None, int expert_token_num_type=1, int idx_type=0, int? tokens_dtype=None)
    -> (permute_tokens, permute_per_token_scales, permute_token_idx, expert_token_num).

    tokens (A, H) hold the blocks c[r][e] = expert_token_num_per_rank[r][e] rank-major (rank 0's
    tokens for experts 0..E-1, then rank 1's, ...); permute_tokens holds them expert-major (expert
    0's tokens from ranks 0..N-1, then expert 1's, ...), bit for bit, per_token_scales moved with
    them. permute_token_idx[i] is the tokens row of permute_tokens row i (idx_type 0; idx_type 1,
    Ascend 950 only: the other way round); expert_token_num[e] = sum over ranks of c[r][e]
    (expert_token_num_type 1, the only mode CANN supports). Counts summing to S < A leave rows
    S..A-1 zero; counts summing past A, or negative, raise MoefrError (CANN would read out of
    bounds). Without per_token_scales the second output is (A,) float32 zeros."""
    _cpu_tensor(tokens, "tokens")
    _cpu_tensor(expert_token_num_per_rank, "expert_token_num_per_rank")
    if per_token_scales is not None:
        _cpu_tensor(per_token_scales, "per_token_scales")
    # torch_npu's TORCH_CHECKs (RuntimeError there; MoefrError is a RuntimeError too)
    if tokens.dim() <= 1:
        raise MoefrError("moefr.torch_npu: tokens dim should larger than 1, got %d" % tokens.dim())
    if expert_token_num_per_rank.dim() <= 1:
        raise MoefrError("moefr.torch_npu: expert_token_num_per_rank dim should larger than 1, got %d"
                         % expert_token_num_per_rank.dim())
    if tokens_dtype is not None:
        tokens_dtype = int(tokens_dtype)
        if tokens_dtype not in _TOKENS_DTYPES:
            raise MoefrError("moefr.torch_npu: the optional parameter tokens_dtype only supports hifloat8, "
                             "float4_e2m1fn_x2, float4_e1m2fn_x2 or None, but now is %d" % tokens_dtype)
        raise MoefrError("aclnnMoeReRouting: tokens dtype %s is not in moe_re_routing_def.cpp's table of the "
                         "CANN release moefr follows (FLOAT16, BFLOAT16, INT8)" % _TOKENS_DTYPES[tokens_dtype],
                         161002, "aclnnMoeReRoutingGetWorkspaceSize")
    return _routing.re_routing(tokens, expert_token_num_per_rank, per_token_scales, int(expert_token_num_type),
                               int(idx_type))
