"""moefr.torch_npu - torch_npu's MoE routing functions on CPU tensors, backed by libmoefr.

    from moefr import torch_npu
    expanded_x, row_idx, counts, _ = torch_npu.npu_moe_init_routing_v2(x, topk_ids, active_num=n * k,
                                                                       expert_num=E)

Names, positional order, keyword-only markers, defaults and return tuples are those of torch_npu's
op_plugin (config/op_plugin_functions.yaml, master branch; differences to torch_npu 7.0.0 are noted
per function and in docs/CANN_COMPAT.md, section "moefr.torch_npu"). The autograd is the one
torch_npu registers in config/derivatives.yaml (npu_moe_token_permute: tokens; npu_moe_token_unpermute:
permuted_tokens and probs) plus, beyond torch_npu, npu_moe_init_routing_v2 (x, through
aclnnMoeInitRoutingV2Grad) and npu_moe_finalize_routing (expanded_permuted_rows, skip1, skip2, bias,
scales, through aclnnMoeFinalizeRoutingV2Grad). npu_moe_init_routing_v2 runs aclnnMoeInitRoutingV3
as torch_npu's wrapper does (python/moefr/_npu_init_routing_v2.py). npu_moe_init_routing (the first version) has no gradient,
in torch_npu or here. Errors: MoefrError (a ValueError and a RuntimeError) carrying the library's
message, or ValueError/TypeError for what torch_npu's wrapper itself rejects."""

import torch

from . import _routing
from ._npu_args import _check, _cpu  # noqa: F401
from ._lib import MoefrError  # noqa: F401
from ._npu_init_routing import npu_moe_init_routing
from ._npu_gating import npu_moe_gating_top_k_softmax, npu_moe_gating_top_k_softmax_v2
from ._npu_permute import npu_moe_token_permute, npu_moe_token_unpermute
from ._npu_mlp import npu_swiglu, npu_swiglu_backward
from ._npu_gmm import npu_grouped_matmul
from ._npu_gmm_add import npu_grouped_matmul_add, npu_grouped_matmul_add_
from ._npu_re_routing import npu_moe_re_routing
from ._npu_init_routing_v2 import npu_moe_init_routing_v2
from ._npu_init_routing_quant import npu_moe_init_routing_quant
from ._npu_quant import npu_dynamic_quant, npu_dynamic_quant_asymmetric, npu_trans_quant_param, npu_dequant_swiglu_quant
from ._npu_gmm_fused import npu_grouped_matmul_swiglu_quant, npu_grouped_matmul_finalize_routing
from ._npu_routing_map import (npu_moe_token_permute_with_routing_map, npu_moe_token_permute_with_routing_map_grad,
                               npu_moe_token_unpermute_with_routing_map, _npu_moe_token_unpermute_with_routing_map,
                               npu_moe_token_unpermute_with_routing_map_grad)
from ._npu_gating_topk import npu_moe_gating_top_k, npu_moe_gating_top_k_backward

__all__ = ["npu_moe_gating_top_k_softmax", "npu_moe_gating_top_k_softmax_v2", "npu_moe_init_routing",
           "npu_moe_init_routing_v2",
           "npu_moe_compute_expert_tokens", "npu_moe_token_permute", "npu_moe_token_unpermute",
           "npu_moe_finalize_routing", "npu_swiglu", "npu_swiglu_backward", "npu_grouped_matmul",
           "npu_moe_re_routing"]
__all__ += ["npu_moe_init_routing_quant"]
__all__ += ["npu_dynamic_quant", "npu_dynamic_quant_asymmetric", "npu_trans_quant_param",
            "npu_dequant_swiglu_quant"]
__all__ += ["npu_moe_token_permute_with_routing_map", "npu_moe_token_permute_with_routing_map_grad", "npu_moe_token_unpermute_with_routing_map", "_npu_moe_token_unpermute_with_routing_map", "npu_moe_token_unpermute_with_routing_map_grad"]
__all__ += ["npu_moe_gating_top_k", "npu_moe_gating_top_k_backward"]
__all__ += ["npu_grouped_matmul_add", "npu_grouped_matmul_add_"]
__all__ += ["npu_grouped_matmul_swiglu_quant", "npu_grouped_matmul_finalize_routing"]


# --------------------------------------------------------------------------------------------
# npu_moe_compute_expert_tokens
# --------------------------------------------------------------------------------------------

def _npu_moe_compute_expert_tokens(sorted_expert_for_source_row, num_expert):
    """torch_npu.npu_moe_compute_expert_tokens -> Tensor (num_expert,) of the input's dtype (int32):
    out[e] = number of ids <= e in the sorted ids (aclnnMoeComputeExpertTokens)."""
    _cpu(sorted_expert_for_source_row, "sorted_expert_for_source_row")
    return _routing.compute_expert_tokens(sorted_expert_for_source_row, int(num_expert))


# --------------------------------------------------------------------------------------------
# npu_moe_finalize_routing
# --------------------------------------------------------------------------------------------

def _npu_moe_finalize_routing(expanded_permuted_rows, skip1, skip2, bias, scales, expanded_src_to_dst_row,
                              export_for_source_row, drop_pad_mode=0, k=1):
    """torch_npu.npu_moe_finalize_routing -> Tensor, running aclnnMoeFinalizeRoutingV2 as torch_npu does
    when the CANN it runs on has V2 but not V4. drop_pad_mode None means 0. k is V4's attribute:
    like torch_npu on such a CANN, anything but None/1 is rejected (ValueError). (torch_npu 7.0.0 has no
    k argument.)

    Autograd (beyond torch_npu): expanded_permuted_rows and scales through
    aclnnMoeFinalizeRoutingV2Grad, skip1/skip2 get grad_out, bias the per-expert sum of
    scales * grad_out (moefr.moe_finalize_routing)."""
    from . import npu_moe_finalize_routing as _finalize
    _check(k is None or int(k) == 1,
           "k=%s needs aclnnMoeFinalizeRoutingV4, which moefr does not have (torch_npu rejects it the "
           "same way without V4)" % (k,))
    for name, t in (("expanded_permuted_rows", expanded_permuted_rows), ("skip1", skip1), ("skip2", skip2),
                    ("bias", bias), ("scales", scales), ("expanded_src_to_dst_row", expanded_src_to_dst_row),
                    ("export_for_source_row", export_for_source_row)):
        _cpu(t, name)
    mode = 0 if drop_pad_mode is None else int(drop_pad_mode)
    return _finalize(expanded_permuted_rows, skip1, skip2, bias, scales, expanded_src_to_dst_row,
                     export_for_source_row, mode)


npu_moe_compute_expert_tokens = _npu_moe_compute_expert_tokens
npu_moe_finalize_routing = _npu_moe_finalize_routing


# --------------------------------------------------------------------------------------------
# PyTorch >= 2.4: every function above is the operator torch.ops.npu.<name> (python/moefr/_torch_ops.py),
# as torch_npu.npu_X is torch.ops.npu.npu_X in real torch_npu; PyTorch 1.13 keeps the Python functions.
# --------------------------------------------------------------------------------------------

def _torch_version():
    parts = []
    for p in torch.__version__.split("+")[0].split(".")[:2]:
        digits = "".join(c for c in p if c.isdigit())
        parts.append(int(digits or 0))
    return tuple(parts)


TORCH_OPS = _torch_version() >= (2, 4)
if TORCH_OPS:
    from . import _torch_ops
    for _qual in _torch_ops.REGISTERED:
        _ns, _name = _qual.split("::")
        if _ns == "npu":
            _base = _name.split(".")[0]
            globals()[_base] = getattr(torch.ops.npu, _base)
            if not _base.startswith("_") and _base not in __all__:
                __all__.append(_base)
    del _qual, _ns, _name, _base
