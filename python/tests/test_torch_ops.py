"""test_torch_ops - moefr's torch_npu functions as torch.ops.npu operators (PyTorch >= 2.4):
- torch_npu.npu_X is torch.ops.npu.npu_X, and each operator's schema is op-plugin's
  (op_plugin/config/op_plugin_functions.yaml, written out below as it stands there);
- torch.library.opcheck on representative inputs of every operator (schema, fake kernel against the real
  one, autograd registration, AOT dispatch with static and dynamic shapes);
- torch.compile(fullgraph=True) of a whole MoE layer (gating, init routing, GroupedMatmul, SwiGlu,
  GroupedMatmul, finalize routing), forward and backward, gives eager's bits, and eager is within
  a float64 reference's bound.
On PyTorch 1.13 the module checks that the functions stay plain Python functions and stops there."""

import os
import random
import unittest

import torch

import moefr_testlib as tl
from moefr import torch_npu

A2 = os.environ.get("MOEFR_SOC") == "ascend910b"  # CTest runs this file on both rule sets
GMM_DT = torch.float32 if A2 else torch.bfloat16   # Ascend 950's GroupedMatmul table has no fp32
RNG = random.Random(tl.SEED)
torch.manual_seed(tl.SEED)

# op-plugin's schema strings (facts: names, types, defaults), as its YAML spells them
OP_PLUGIN = [
    "npu_moe_gating_top_k_softmax(Tensor x, Tensor? finished=None, int k=1) -> (Tensor, Tensor, Tensor)",
    "npu_moe_gating_top_k_softmax_v2(Tensor x, *, int k=1, Tensor? finished=None, int? renorm=0, "
    "bool? output_softmax=False) -> (Tensor, Tensor, Tensor)",
    "npu_moe_init_routing(Tensor x, Tensor row_idx, Tensor expert_idx, int active_num) -> (Tensor, Tensor, Tensor)",
    "npu_moe_init_routing_v2(Tensor x, Tensor expert_idx, *, Tensor? scale=None, Tensor? offset=None, "
    "int active_num=-1, int expert_capacity=-1, int expert_num=-1, int drop_pad_mode=0, "
    "int expert_tokens_num_type=0, bool expert_tokens_num_flag=False, int quant_mode=-1, "
    "int[2] active_expert_range=[], int row_idx_type=0, int? x_dtype=None) -> (Tensor, Tensor, Tensor, Tensor)",
    "npu_moe_compute_expert_tokens(Tensor sorted_expert_for_source_row, int num_expert) -> Tensor",
    "npu_moe_token_permute(Tensor tokens, Tensor indices, int? num_out_tokens=None, bool padded_mode=False) "
    "-> (Tensor, Tensor)",
    "npu_moe_token_permute_grad(Tensor tokens, Tensor grad_permuted_tokens, Tensor indices, Tensor sorted_indices, "
    "bool padded_mode=False) -> Tensor",
    "npu_moe_token_permute_grad_v2(Tensor grad_permuted_tokens, Tensor sorted_indices, int tokens_size_0, "
    "ScalarType tokens_dtype, int num_topK, bool padded_mode=False) -> Tensor",
    "npu_moe_token_unpermute(Tensor permuted_tokens, Tensor sorted_indices, Tensor? probs=None, "
    "bool padded_mode=False, int[]? restore_shape=None) -> Tensor",
    "npu_moe_token_unpermute_grad(Tensor permuted_tokens, Tensor grad_unpermuted_tokens, Tensor sorted_indices, "
    "Tensor? probs=None, bool padded_mode=False, int[]? restore_shape=None) -> (Tensor, Tensor)",
    "npu_moe_token_unpermute_grad_v2(Tensor grad_unpermuted_tokens, Tensor sorted_indices, "
    "int permuted_tokens_size_0, ScalarType permuted_tokens_dtype, Tensor? probs=None, bool padded_mode=False, "
    "int[]? restore_shape=None, Tensor? permuted_tokens=None) -> (Tensor, Tensor)",
    "npu_moe_finalize_routing(Tensor expanded_permuted_rows, Tensor? skip1, Tensor? skip2, Tensor? bias, "
    "Tensor? scales, Tensor expanded_src_to_dst_row, Tensor? export_for_source_row, int? drop_pad_mode=0, "
    "int? k=1) -> Tensor",
    "npu_swiglu(Tensor self, int dim=-1) -> Tensor",
    "npu_swiglu_backward(Tensor grad_output, Tensor self, int dim=-1) -> Tensor",
    "npu_grouped_matmul(Tensor[] x, Tensor[] weight, *, Tensor[]? bias=None, Tensor[]? scale=None, "
    "Tensor[]? offset=None, Tensor[]? antiquant_scale=None, Tensor[]? antiquant_offset=None, "
    "Tensor[]? per_token_scale=None, Tensor? group_list=None, Tensor[]? activation_input=None, "
    "Tensor[]? activation_quant_scale=None, Tensor[]? activation_quant_offset=None, int? split_item=0, "
    "int? group_type=None, int? group_list_type=0, int? act_type=0, int[]? tuning_config=None, "
    "int? output_dtype=None, int? x_dtype=None, int? weight_dtype=None, int? scale_dtype=None, "
    "int? per_token_scale_dtype=None) -> Tensor[]",
    "npu_grouped_matmul.List(Tensor[] x, Tensor[] weight, *, Tensor[]? bias=None, Tensor[]? scale=None, "
    "Tensor[]? offset=None, Tensor[]? antiquant_scale=None, Tensor[]? antiquant_offset=None, "
    "Tensor[]? per_token_scale=None, int[]? group_list=None, Tensor[]? activation_input=None, "
    "Tensor[]? activation_quant_scale=None, Tensor[]? activation_quant_offset=None, int? split_item=0, "
    "int? group_type=None, int? group_list_type=0, int? act_type=0, ScalarType? output_dtype=None) -> Tensor[]",
    "npu_moe_re_routing(Tensor tokens, Tensor expert_token_num_per_rank, *, Tensor? per_token_scales=None, "
    "int expert_token_num_type=1, int idx_type=0, int? tokens_dtype=None) -> (Tensor, Tensor, Tensor, Tensor)",
    "npu_moe_init_routing_quant(Tensor x, Tensor expert_idx, *, Tensor? scale=None, Tensor? offset=None, "
    "int active_num=1024, int expert_capacity=0, int expert_num=256, int drop_pad_mode=0, "
    "int expert_tokens_num_mode=0, bool expert_tokens_before_capacity_flag=False, int quant_mode=1) "
    "-> (Tensor, Tensor, Tensor, Tensor, Tensor)",
    "npu_moe_token_permute_with_routing_map(Tensor tokens, Tensor routing_map, *, Tensor? probs=None, "
    "int? num_out_tokens=None, bool drop_and_pad=False) -> (Tensor, Tensor, Tensor)",
    "npu_moe_token_permute_with_routing_map_grad(Tensor permuted_token_out_grad, Tensor? probs_grad, "
    "Tensor sorted_indices, Tensor routing_map, SymInt experts_num, SymInt tokens_num, bool drop_and_pad) "
    "-> (Tensor, Tensor)",
    "npu_moe_token_unpermute_with_routing_map(Tensor permuted_tokens, Tensor sorted_indices, int[] restore_shape, "
    "*, Tensor? probs=None, Tensor? routing_map=None, bool drop_and_pad=False) -> Tensor",
    "_npu_moe_token_unpermute_with_routing_map(Tensor permuted_tokens, Tensor sorted_indices, int[] restore_shape, "
    "*, Tensor? probs=None, Tensor? routing_map=None, bool drop_and_pad=False) -> (Tensor, Tensor, Tensor, Tensor)",
    "npu_moe_token_unpermute_with_routing_map_grad(Tensor unpermuted_tokens_grad, Tensor out_index, "
    "Tensor permuted_token_id, Tensor? routing_map, Tensor? permuted_tokens, Tensor? probs, bool drop_and_pad, "
    "int[] restore_shape) -> (Tensor, Tensor)",
    "npu_moe_gating_top_k(Tensor x, int k, *, Tensor? bias=None, Tensor? input_ids=None, Tensor? tid2eid=None, "
    "int k_group=1, int group_count=1, int group_select_mode=0, int renorm=0, int norm_type=0, "
    "bool out_flag=False, float routed_scaling_factor=1.0, float eps=1e-20) -> (Tensor, Tensor, Tensor)",
    "npu_moe_gating_top_k_backward(Tensor x_norm, Tensor grad_y, Tensor expertIdx, *, int renorm=0, "
    "int norm_type=0, float routed_scaling_factor=1.0, float eps=1e-20) -> Tensor",
    "npu_grouped_matmul_add(Tensor self, Tensor x, Tensor weight, Tensor group_list, *, bool transpose_x=True, "
    "bool transpose_weight=False, int group_type=2, int? group_list_type=0) -> Tensor",
    "npu_grouped_matmul_add_(Tensor(a!) self, Tensor x, Tensor weight, Tensor group_list, *, "
    "bool transpose_x=True, bool transpose_weight=False, int group_type=2, int? group_list_type=0) -> Tensor(a!)",
    "npu_trans_quant_param(Tensor scale, Tensor? offset=None, int? round_mode=0) -> Tensor",
    "npu_dynamic_quant(Tensor input, *, Tensor? smooth_scales=None, Tensor? group_index=None, int? dst_type=None, "
    "str quant_mode=\"pertoken\", float dst_type_max=0.0) -> (Tensor, Tensor)",
    "npu_dynamic_quant_asymmetric(Tensor input, *, Tensor? smooth_scales=None, Tensor? group_index=None, "
    "int? dst_type=None, str quant_mode=\"pertoken\", float dst_type_max=0.0) -> (Tensor, Tensor, Tensor)",
    "npu_grouped_matmul_swiglu_quant(Tensor x, Tensor weight, Tensor group_list, Tensor weight_scale, "
    "Tensor x_scale, *, Tensor? bias=None, Tensor? offset=None) -> (Tensor, Tensor, Tensor)",
    "npu_grouped_matmul_finalize_routing(Tensor x, Tensor w, Tensor group_list, *, Tensor? scale=None, "
    "Tensor? bias=None, Tensor? offset=None, Tensor? pertoken_scale=None, Tensor? shared_input=None, "
    "Tensor? logit=None, Tensor? row_index=None, ScalarType? dtype=None, float? shared_input_weight=1.0, "
    "int? shared_input_offset=0, int? output_bs=0, int? group_list_type=1, int[]? tuning_config=None, "
    "int? x_dtype=None, int? w_dtype=None, int? scale_dtype=None, int? pertoken_scale_dtype=None) -> Tensor",
    "npu_dequant_swiglu_quant(Tensor x, *, Tensor? weight_scale=None, Tensor? activation_scale=None, "
    "Tensor? bias=None, Tensor? quant_scale=None, Tensor? quant_offset=None, Tensor? group_index=None, "
    "bool activate_left=False, int quant_mode=0, int? dst_type=None, int? round_mode=None, int? activate_dim=None, "
    "int swiglu_mode=0, float clamp_limit=7.0, float glu_alpha=1.702, float glu_bias=1.0) -> (Tensor, Tensor)",
]


def canon(schema):
    """A schema as torch prints it, from op-plugin's spelling (no namespace; 1.0 -> 1., 1e-20 -> torch's repr)."""
    s = torch._C.parse_schema("npu::" + schema)
    return str(s).replace("npu::", "")


def ids(n, k, e):
    return torch.stack([torch.randperm(e)[:k] for _ in range(n)]).to(torch.int32)


def counts_of(e_ids, E):
    return torch.bincount(e_ids.reshape(-1).long(), minlength=E)


@unittest.skipUnless(tl.torch_ops(), "PyTorch < 2.4: moefr.torch_npu keeps Python functions")
class Registration(unittest.TestCase):
    def test_functions_are_the_operators(self):
        for text in OP_PLUGIN:
            name = text.split("(")[0]
            base, _, overload = name.partition(".")
            packet = getattr(torch.ops.npu, base)
            self.assertIs(getattr(torch_npu, base), packet, base)
            op = getattr(packet, overload or "default")
            self.assertEqual(str(op._schema).replace("npu::", ""), canon(text), name)
        self.assertEqual(torch_npu._torch_ops.SKIPPED, {})

    def test_tags_and_overloads(self):
        self.assertEqual(sorted(torch.ops.npu.npu_grouped_matmul.overloads()), ["List", "default"])
        x = [torch.randn(5, 3).bfloat16()]
        w = [torch.randn(3, 2).bfloat16(), torch.randn(3, 2).bfloat16()]
        y = torch_npu.npu_grouped_matmul(x, w, group_list=[2, 5], split_item=0)  # an int list: .List
        self.assertEqual([tuple(t.shape) for t in y], [(2, 2), (3, 2)])


@unittest.skipUnless(tl.torch_ops(), "PyTorch < 2.4")
class OpCheck(unittest.TestCase):
    """torch.library.opcheck: each operator on a few representative inputs."""

    def check(self, op, args, kwargs=None, grad=False):
        torch.library.opcheck(op, args, kwargs or {},
                              test_utils=("test_schema", "test_autograd_registration", "test_faketensor",
                                          "test_aot_dispatch_static", "test_aot_dispatch_dynamic"))

    def test_gating(self):
        x = torch.randn(7, 9)
        self.check(torch.ops.npu.npu_moe_gating_top_k_softmax.default, (x, None, 3))
        self.check(torch.ops.npu.npu_moe_gating_top_k_softmax_v2.default, (x,),
                   dict(k=2, renorm=0, output_softmax=True))
        self.check(torch.ops.npu.npu_moe_gating_top_k.default, (torch.randn(5, 8, requires_grad=True), 2),
                   dict(k_group=2, group_count=4, norm_type=1))

    def test_init_routing(self):
        N, K, E, H = 6, 2, 5, 7
        e = ids(N, K, E)
        x = torch.randn(N, H, requires_grad=True)
        self.check(torch.ops.npu.npu_moe_init_routing_v2.default, (x, e),
                   dict(active_num=N * K, expert_num=E, expert_tokens_num_type=1, expert_tokens_num_flag=True))
        self.check(torch.ops.npu.npu_moe_init_routing_v2.default, (x, e),
                   dict(active_num=5, expert_num=E, expert_tokens_num_type=1, expert_tokens_num_flag=True))
        self.check(torch.ops.npu.npu_moe_init_routing_v2.default, (x, e),
                   dict(expert_num=E, expert_capacity=3, drop_pad_mode=1, expert_tokens_num_type=1,
                        expert_tokens_num_flag=True))
        row = torch.arange(N * K, dtype=torch.int32).reshape(K, N).t().contiguous()
        self.check(torch.ops.npu.npu_moe_init_routing.default, (x.detach(), row, e, N))
        self.check(torch.ops.npu.npu_moe_init_routing_quant.default, (x.detach(), e),
                   dict(active_num=N * K, expert_num=E, quant_mode=1, expert_tokens_num_mode=2))
        self.check(torch.ops.npu.npu_moe_compute_expert_tokens.default,
                   (torch.sort(e.reshape(-1)).values, E))
        xq = torch.randn(2, 3, 16).bfloat16()
        self.check(torch.ops.npu.npu_dynamic_quant.default, (xq,))
        self.check(torch.ops.npu.npu_dynamic_quant.default, (xq.reshape(6, 16),),
                   dict(smooth_scales=torch.rand(2, 16).bfloat16() + 0.5,
                        group_index=torch.tensor([2, 6], dtype=torch.int32), dst_type=16))
        if not os.environ.get("MOEFR_SOC"):  # pertensor / perchannel: aclnnDynamicQuantV4, Ascend 950 only
            self.check(torch.ops.npu.npu_dynamic_quant_asymmetric.default, (xq,), dict(quant_mode="perchannel"))
            self.check(torch.ops.npu.npu_dynamic_quant_asymmetric.default, (xq,), dict(quant_mode="pertensor"))
        # DequantSwigluQuant: int32 x with weight / activation scales and a grouped dynamic quant,
        # bf16 x static; the outputs of uncounted rows and static scale are zeros (deterministic)
        xi = torch.randint(-500, 500, (6, 128), dtype=torch.int32)
        self.check(torch.ops.npu.npu_dequant_swiglu_quant.default, (xi,),
                   dict(weight_scale=torch.rand(2, 128) * 0.01, activation_scale=torch.rand(6) + 0.5,
                        quant_scale=torch.rand(2, 64) + 0.5, group_index=torch.tensor([2, 3]), quant_mode=1,
                        activate_left=True))
        self.check(torch.ops.npu.npu_dequant_swiglu_quant.default, (torch.randn(5, 128).bfloat16(),),
                   dict(quant_scale=torch.rand(64) + 0.5, quant_offset=torch.rand(64), quant_mode=0))

    def test_grouped_matmul_swiglu_quant(self):
        E, M, K, N = 3, 10, 24, 32
        x = torch.randint(-128, 128, (M, K), dtype=torch.int8)
        w = torch.randint(-128, 128, (E, K, N), dtype=torch.int8)
        args = (x, w, torch.tensor([4, 4, 9]), torch.rand(E, N) * 0.01, torch.rand(M) * 0.1)
        self.check(torch.ops.npu.npu_grouped_matmul_swiglu_quant.default, args)
        self.check(torch.ops.npu.npu_grouped_matmul_swiglu_quant.default,
                   args[:3] + (args[3].bfloat16(), args[4]))

    def test_grouped_matmul_finalize_routing(self):
        E, M, K, N = 2, 8, 32, 256
        x = torch.randint(-128, 128, (M, K), dtype=torch.int8)
        w = torch.randint(-128, 128, (E, K, N), dtype=torch.int8)
        kw = dict(scale=torch.rand(E, N) * 0.01, pertoken_scale=torch.rand(M), logit=torch.rand(M),
                  row_index=torch.tensor([0, 3, 1, 2, 3, 0, 1, 2]), output_bs=4)
        self.check(torch.ops.npu.npu_grouped_matmul_finalize_routing.default, (x, w, torch.tensor([5, 3])), kw)
        self.check(torch.ops.npu.npu_grouped_matmul_finalize_routing.default, (x, w, torch.tensor([5, 8])),
                   dict(kw, group_list_type=0, shared_input=torch.rand(2, N).bfloat16(), shared_input_offset=1,
                        shared_input_weight=0.5, bias=torch.rand(E, N).bfloat16(), tuning_config=[4]))

    def test_permute(self):
        N, K, E, H = 6, 3, 4, 5
        tok = torch.randn(N, H, requires_grad=True)
        e = ids(N, K, E).long()
        self.check(torch.ops.npu.npu_moe_token_permute.default, (tok, e))
        self.check(torch.ops.npu.npu_moe_token_permute.default, (tok, e, 10))
        out, si = torch_npu.npu_moe_token_permute(tok.detach(), e)
        probs = torch.rand(N, K, requires_grad=True)
        self.check(torch.ops.npu.npu_moe_token_unpermute.default, (out.requires_grad_(), si, probs))
        self.check(torch.ops.npu.npu_moe_token_unpermute.default, (out, si))
        g = torch.randn(N * K, H)
        self.check(torch.ops.npu.npu_moe_token_permute_grad_v2.default, (g, si, N, torch.float32, K))
        self.check(torch.ops.npu.npu_moe_token_unpermute_grad_v2.default,
                   (torch.randn(N, H), si, N * K, torch.float32, probs.detach(), False, None, out.detach()))

    def test_backward_operators(self):
        """The backward operators torch_npu exposes, called directly."""
        N, K, E, H = 6, 3, 4, 5
        tok = torch.randn(N, H)
        e = ids(N, K, E).long()
        out, si = torch_npu.npu_moe_token_permute(tok, e)
        g = torch.randn(N * K, H)
        self.check(torch.ops.npu.npu_moe_token_permute_grad.default, (tok, g, e, si))
        probs = torch.rand(N, K)
        self.check(torch.ops.npu.npu_moe_token_unpermute_grad.default, (out, torch.randn(N, H), si, probs))
        self.check(torch.ops.npu.npu_moe_token_unpermute_grad.default, (out, torch.randn(N * K, H), si))  # K 1
        x = torch.randn(4, 10)
        self.check(torch.ops.npu.npu_swiglu_backward.default, (torch.randn(4, 5), x))
        y, eidx, norm = torch_npu.npu_moe_gating_top_k(torch.randn(5, 8), 2, k_group=2, group_count=4, norm_type=1)
        self.check(torch.ops.npu.npu_moe_gating_top_k_backward.default, (norm, torch.randn(5, 2), eidx),
                   dict(norm_type=1))

    def test_re_routing(self):
        counts = torch.tensor([[1, 2, 0], [2, 1, 3]], dtype=torch.int32)
        tokens = torch.randn(int(counts.sum()), 6).half()
        scales = torch.rand(int(counts.sum()))
        self.check(torch.ops.npu.npu_moe_re_routing.default, (tokens, counts), dict(per_token_scales=scales))
        self.check(torch.ops.npu.npu_moe_re_routing.default, (tokens, counts))

    def test_grouped_matmul_add_(self):
        # in place on self (Tensor(a!)): opcheck's schema test sees the mutation the schema declares
        x, w = torch.randn(12, 5).bfloat16(), torch.randn(12, 7).bfloat16()
        gl = torch.tensor([4, 4, 12])
        self.check(torch.ops.npu.npu_grouped_matmul_add_.default, (torch.randn(3, 5, 7), x, w, gl))
        self.check(torch.ops.npu.npu_grouped_matmul_add.default, (torch.randn(3, 5, 7), x, w, gl))
        y = torch.randn(3, 5, 7)
        y0 = y.clone()
        z = torch_npu.npu_grouped_matmul_add(y, x, w, gl)
        self.assertTrue(torch.equal(y, y0))
        self.assertIs(torch_npu.npu_grouped_matmul_add_(y, x, w, gl), y)
        self.assertTrue(torch.equal(y, z))

        # torch.compile: the in-place call inside a traced function is functionalized through the
        # out-of-place operator, and gives eager's bits
        def step(acc, a, b, g):
            torch_npu.npu_grouped_matmul_add_(acc, a, b, g)
            return acc * 1
        torch._dynamo.reset()
        y1, y2 = y0.clone(), y0.clone()
        self.assertTrue(torch.equal(torch.compile(step, fullgraph=True)(y1, x, w, gl), step(y2, x, w, gl)))
        self.assertTrue(torch.equal(y1, y2))

    def test_grouped_matmul_list(self):
        x = [torch.randn(5, 3).bfloat16()]
        w = [torch.randn(3, 4).bfloat16(), torch.randn(3, 4).bfloat16()]
        self.check(torch.ops.npu.npu_grouped_matmul.List, (x, w), dict(group_list=[2, 5], split_item=0))

    def test_routing_map(self):
        N, E, H, k = 6, 4, 5, 2
        tok = torch.randn(N, H, requires_grad=True)
        m = torch.zeros(N, E, dtype=torch.bool)
        for r in range(N):
            m[r, torch.randperm(E)[:k]] = True
        probs = torch.rand(N, E, requires_grad=True)
        self.check(torch.ops.npu.npu_moe_token_permute_with_routing_map.default, (tok, m),
                   dict(probs=probs, num_out_tokens=N * k))
        out, pout, si = torch_npu.npu_moe_token_permute_with_routing_map(tok.detach(), m, probs=probs.detach(),
                                                                         num_out_tokens=N * k)
        self.check(torch.ops.npu._npu_moe_token_unpermute_with_routing_map.default,
                   (out.requires_grad_(), si, [N, H]), dict(routing_map=m))
        self.check(torch.ops.npu.npu_moe_token_unpermute_with_routing_map.default, (out, si, [N, H]),
                   dict(routing_map=m))
        self.check(torch.ops.npu.npu_moe_token_permute_with_routing_map_grad.default,
                   (torch.randn(N * k, H), torch.randn(N * k), si, m, E, N, False))
        _, oidx, tid, _ = torch_npu._npu_moe_token_unpermute_with_routing_map(out, si, [N, H], routing_map=m)
        self.check(torch.ops.npu.npu_moe_token_unpermute_with_routing_map_grad.default,
                   (torch.randn(N, H), si, si, m, None, None, False, [N, H]))

    def test_finalize(self):
        R, K, H, E = 5, 2, 6, 3
        T = R * K
        x = torch.randn(T, H, requires_grad=True)
        idx = torch.randperm(T).to(torch.int32)
        scales = torch.rand(R, K, requires_grad=True)
        bias = torch.randn(E, H, requires_grad=True)
        eidx = torch.randint(0, E, (R, K), dtype=torch.int32)
        skip = torch.randn(R, H, requires_grad=True)
        for mode in (0, 2):
            self.check(torch.ops.npu.npu_moe_finalize_routing.default, (x, skip, None, bias, scales, idx, eidx, mode))

    def test_swiglu_and_gmm(self):
        x = torch.randn(5, 2 * 7, requires_grad=True)
        self.check(torch.ops.npu.npu_swiglu.default, (x,))
        self.check(torch.ops.npu.npu_swiglu.default, (torch.randn(6, 3, requires_grad=True), 0))
        M, K, N, E = 11, 6, 5, 3

        def r(*shape):
            return torch.randn(*shape).to(GMM_DT).requires_grad_()
        gl = torch.tensor([4, 0, 7], dtype=torch.int64)
        self.check(torch.ops.npu.npu_grouped_matmul.default, ([r(M, K)], [r(E, K, N)]),
                   dict(group_list=gl, split_item=3, group_type=0, group_list_type=1))
        self.check(torch.ops.npu.npu_grouped_matmul.default, ([r(M, K)], [r(K, N), r(K, N), r(K, N)]),
                   dict(group_list=torch.cumsum(gl, 0), split_item=2, group_type=0, group_list_type=0))
        self.check(torch.ops.npu.npu_grouped_matmul.default, ([r(3, K), r(4, K)], [r(K, N), r(K, 2)]),
                   dict(split_item=0, group_type=-1))
        self.check(torch.ops.npu.npu_trans_quant_param.default, (torch.rand(7) + 0.5, torch.randn(7) * 50), dict(round_mode=1))
        self.check(torch.ops.npu.npu_trans_quant_param.default, (torch.rand(1, 5),))
        # the A8W8 rows: int8 operands, bf16 scales, a per-token scale, output_dtype as a torch.dtype
        q8 = lambda *shape: torch.randint(-128, 128, shape, dtype=torch.int8)  # noqa: E731
        self.check(torch.ops.npu.npu_grouped_matmul.default, ([q8(M, K)], [q8(E, K, N)]),
                   dict(scale=[torch.rand(E, N).bfloat16()], per_token_scale=[torch.rand(M)], group_list=gl,
                        split_item=3, group_type=0, group_list_type=1, output_dtype=torch.bfloat16))
        self.check(torch.ops.npu.npu_grouped_matmul.default, ([q8(M, K)], [q8(E, K, N)]),
                   dict(group_list=gl, split_item=2, group_type=0, group_list_type=1, output_dtype=torch.int32))


def moe_layer(x, wg, w1, w2, k):
    """A MoE layer written against torch_npu as the client projects write it."""
    N, H = x.shape
    E = wg.shape[1]
    logits = x @ wg
    probs, expert_idx, _ = torch_npu.npu_moe_gating_top_k_softmax(logits, None, k)
    ex, row_idx, counts, _ = torch_npu.npu_moe_init_routing_v2(
        x, expert_idx, active_num=N * k, expert_num=E, expert_tokens_num_type=1, expert_tokens_num_flag=True)
    (h,) = torch_npu.npu_grouped_matmul([ex], [w1], group_list=counts, split_item=3, group_type=0,
                                        group_list_type=1)
    a = torch_npu.npu_swiglu(h, dim=-1)
    (y,) = torch_npu.npu_grouped_matmul([a], [w2], group_list=counts, split_item=3, group_type=0,
                                        group_list_type=1)
    return torch_npu.npu_moe_finalize_routing(y, None, None, None, probs.to(y.dtype), row_idx, expert_idx,
                                              drop_pad_mode=2)


def moe_layer64(x, probs, expert_idx, w1, w2):
    """The same layer in float64, token by token, on the routing the layer under test chose (its gating
    has no gradient; a float64 top-k could break near-ties differently)."""
    rows = []
    for r in range(x.shape[0]):
        acc = 0
        for j in range(expert_idx.shape[1]):
            e = int(expert_idx[r, j])
            h = x[r] @ w1[e]
            F = h.shape[0] // 2
            acc = acc + probs[r, j].double() * ((torch.nn.functional.silu(h[:F]) * h[F:]) @ w2[e])
        rows.append(acc)
    return torch.stack(rows)


@unittest.skipUnless(tl.torch_ops(), "PyTorch < 2.4")
class CompiledLayer(unittest.TestCase):
    def run_layer(self, dtype):
        N, H, F, E, k = 37, 24, 20, 6, 2
        x = torch.randn(N, H).to(dtype)
        wg = torch.randn(H, E).to(dtype)
        w1 = (torch.randn(E, H, 2 * F) / H ** 0.5).to(dtype)
        w2 = (torch.randn(E, F, H) / F ** 0.5).to(dtype)
        gy = torch.randn(N, H).to(dtype)

        def run(fn):
            leaves = [t.detach().clone().requires_grad_() for t in (x, w1, w2)]
            out = fn(leaves[0], wg, leaves[1], leaves[2], k)
            out.backward(gy)
            return out.detach(), [t.grad for t in leaves]

        torch._dynamo.reset()
        eager_out, eager_grads = run(moe_layer)
        compiled = torch.compile(moe_layer, fullgraph=True, backend="aot_eager")
        comp_out, comp_grads = run(compiled)
        self.assertTrue(torch.equal(comp_out, eager_out))
        for name, a, b in zip(("x", "w1", "w2"), comp_grads, eager_grads):
            self.assertIsNotNone(a, name)
            self.assertTrue(torch.equal(a, b), name)
        # and eager is the layer: output and gradients against float64 autograd on the same routing (the
        # inputs are exact in float64; the layer rounds its intermediates to the dtype: a few of its ulps
        # relative to the largest value)
        probs, expert_idx, _ = torch_npu.npu_moe_gating_top_k_softmax(x @ wg, None, k)
        leaves64 = [t.double().requires_grad_() for t in (x, w1, w2)]
        want = moe_layer64(leaves64[0], probs, expert_idx, leaves64[1], leaves64[2])
        want.backward(gy.double())
        tol = {torch.float32: 1e-4, torch.bfloat16: 4e-2}[dtype]
        for name, got, ref in [("out", eager_out, want.detach())] + list(zip(
                ("dx", "dw1", "dw2"), eager_grads, [t.grad for t in leaves64])):
            err = (got.double() - ref).abs().max().item()
            self.assertLessEqual(err, tol * ref.abs().max().item(), name)

    def test_bf16(self):
        self.run_layer(torch.bfloat16)

    @unittest.skipUnless(A2, "fp32 GroupedMatmul: the A2/A3 rules (MOEFR_SOC=ascend910b run)")
    def test_fp32(self):
        self.run_layer(torch.float32)

    def test_inductor(self):
        """The default backend (inductor) too: the operators stay opaque calls in its graph."""
        N, H, F, E, k = 16, 8, 6, 4, 2
        x, wg = torch.randn(N, H).bfloat16(), torch.randn(H, E).bfloat16()
        w1, w2 = torch.randn(E, H, 2 * F).bfloat16(), torch.randn(E, F, H).bfloat16()
        torch._dynamo.reset()
        self.assertTrue(torch.equal(torch.compile(moe_layer, fullgraph=True)(x, wg, w1, w2, k),
                                    moe_layer(x, wg, w1, w2, k)))


class PlainFunctions(unittest.TestCase):
    @unittest.skipIf(tl.torch_ops(), "PyTorch >= 2.4")
    def test_torch_1_13_keeps_python_functions(self):
        import types
        self.assertIsInstance(torch_npu.npu_swiglu, types.FunctionType)
        self.assertFalse(torch_npu.TORCH_OPS)


if __name__ == "__main__":
    unittest.main(verbosity=2)
