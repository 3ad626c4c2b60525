#!/usr/bin/python3
"""train_moe_torch_npu.py - a small MoE model trained on CPU with torch_npu's routing calls, written
exactly as torch_npu code writes them, running on moefr through `from moefr import torch_npu`.

Two routing APIs (--api):
  routing  npu_moe_init_routing_v2 -> experts -> npu_moe_finalize_routing (the vLLM-Ascend style;
           gradients: x through aclnnMoeInitRoutingV2Grad, expert outputs and routing weights
           through aclnnMoeFinalizeRoutingV2Grad - the autograd moefr adds beyond torch_npu)
  permute  npu_moe_token_permute -> experts -> npu_moe_token_unpermute (the Megatron/MindSpeed
           style; the autograd torch_npu registers: tokens; permuted tokens and probs)
--gating npu takes the top-k experts from npu_moe_gating_top_k_softmax (torch_npu registers no
gradient for it, so the weights the router learns through are gathered from a torch softmax).

Two kinds of experts (--experts):
  linear   one nn.Linear (hidden x hidden) per expert, run block by block (the default)
  gmm      one SwiGLU MLP per expert, all experts in three calls over the routed rows:
           npu_grouped_matmul(x, W1 (E, hidden, 2 ffn), split_item=3, group_type=0) -> npu_swiglu
           -> npu_grouped_matmul(., W2 (E, ffn, hidden)); the group list is the per-expert row counts
           (group_list_type=1) from npu_moe_init_routing_v2 or, for --api permute, a histogram of the
           expert ids. Trained end to end: npu_grouped_matmul's backward (moefr adds MindSpeed's,
           through the same operator) and npu_swiglu's (torch_npu's, aclnnSwiGluGrad).
--dtype bf16 runs the MoE layer (routing, experts, combine) in bfloat16 with fp32 master weights,
cast at each forward (the router and the loss stay fp32). fp32 GroupedMatmul exists only in CANN's
A2/A3 table, so --experts gmm in fp32 sets MOEFR_SOC=ascend910b before moefr loads (unless set);
bf16 runs on the default Ascend 950 rules. --check (the loss at least halves) is the same for both
dtypes: bf16's rounding (8-bit mantissa) limits how low the loss can go, not the halving. Measured
(--steps 150, seed 0): gmm fp32 1.05 -> 0.24, gmm bf16 1.05 -> 0.24.

The task: y = A_c x, where the "cluster" c of x is decided by a hidden projection.

    /usr/bin/python3 examples/python/train_moe_torch_npu.py [--api routing|permute] [--experts linear|gmm]
        [--dtype fp32|bf16] [--steps 200] [--check]
"""

import argparse
import os
import sys
import time

_SRC = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python")
if os.path.isfile(os.path.join(_SRC, "moefr", "__init__.py")):
    sys.path.insert(0, os.path.normpath(_SRC))

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from torch import nn  # noqa: E402

torch_npu = None  # main() imports moefr.torch_npu once MOEFR_SOC is settled (on an Ascend machine: import torch_npu)


class MoELayer(nn.Module):
    def __init__(self, hidden, num_experts, top_k, api="routing", gating="torch", experts="linear", ffn=32,
                 dtype=torch.float32):
        super().__init__()
        self.num_experts, self.top_k, self.api, self.gating = num_experts, top_k, api, gating
        self.kind, self.dtype = experts, dtype
        self.gate = nn.Linear(hidden, num_experts, bias=False)
        if experts == "gmm":
            # One SwiGLU MLP per expert, stacked as grouped matmul weights: gate|up columns, then down.
            self.w1 = nn.Parameter(torch.randn(num_experts, hidden, 2 * ffn) / hidden ** 0.5)
            self.w2 = nn.Parameter(torch.randn(num_experts, ffn, hidden) / ffn ** 0.5)
        else:
            self.experts = nn.ModuleList(nn.Linear(hidden, hidden) for _ in range(num_experts))

    def route(self, hidden_states):
        router_logits = self.gate(hidden_states)
        if self.gating == "npu":
            _, topk_ids, _ = torch_npu.npu_moe_gating_top_k_softmax(router_logits.detach(), None, k=self.top_k)
            probs = torch.softmax(router_logits, dim=-1, dtype=torch.float32)
            topk_weights = probs.gather(1, topk_ids.long())
        else:
            probs = torch.softmax(router_logits, dim=-1, dtype=torch.float32)
            topk_weights, topk_ids = torch.topk(probs, self.top_k, dim=-1)
            topk_ids = topk_ids.to(torch.int32)
        topk_weights = topk_weights / topk_weights.sum(dim=-1, keepdim=True)
        return topk_weights.to(hidden_states.dtype), topk_ids

    def run_experts(self, tokens, counts):
        """tokens: the routed rows, expert by expert; counts: int64 (E,) rows per expert."""
        dt = tokens.dtype
        if self.kind == "gmm":
            gate_up = torch_npu.npu_grouped_matmul([tokens], [self.w1.to(dt)], group_list=counts, split_item=3,
                                                   group_type=0, group_list_type=1)[0]
            act = torch_npu.npu_swiglu(gate_up, dim=-1)
            return torch_npu.npu_grouped_matmul([act], [self.w2.to(dt)], group_list=counts, split_item=3,
                                                group_type=0, group_list_type=1)[0]
        outs, start = [], 0
        for expert, n in zip(self.experts, counts.tolist()):
            outs.append(F.linear(tokens[start:start + n], expert.weight.to(dt), expert.bias.to(dt)))
            start += n
        return torch.cat(outs, dim=0)

    def forward(self, hidden_states):
        num_tokens = hidden_states.shape[0]
        topk_weights, topk_ids = self.route(hidden_states)  # the router in fp32
        hidden_states, topk_weights = hidden_states.to(self.dtype), topk_weights.to(self.dtype)
        return self.dispatch(hidden_states, topk_weights, topk_ids, num_tokens).float()

    def dispatch(self, hidden_states, topk_weights, topk_ids, num_tokens):
        if self.api == "routing":
            expanded_x, expanded_row_idx, expert_tokens, _ = torch_npu.npu_moe_init_routing_v2(
                hidden_states, topk_ids, active_num=num_tokens * self.top_k, expert_num=self.num_experts,
                expert_tokens_num_type=1, expert_tokens_num_flag=True,
                active_expert_range=[0, self.num_experts], quant_mode=-1)
            expert_out = self.run_experts(expanded_x, expert_tokens)
            return torch_npu.npu_moe_finalize_routing(
                expert_out, skip1=None, skip2=None, bias=None, scales=topk_weights,
                expanded_src_to_dst_row=expanded_row_idx, export_for_source_row=topk_ids, drop_pad_mode=2)
        permuted_tokens, sorted_indices = torch_npu.npu_moe_token_permute(hidden_states, topk_ids.long())
        tokens_per_expert = torch.histc(topk_ids.float(), bins=self.num_experts, min=0, max=self.num_experts)
        expert_out = self.run_experts(permuted_tokens, tokens_per_expert.long())
        return torch_npu.npu_moe_token_unpermute(expert_out, sorted_indices, probs=topk_weights)


def make_task(dim, clusters, gen):
    proj = torch.randn(dim, clusters, generator=gen)
    maps = torch.randn(clusters, dim, dim, generator=gen) / dim ** 0.5

    def sample(n):
        x = torch.randn(n, dim, generator=gen)
        c = (x @ proj).argmax(-1)
        return x, torch.einsum("nij,nj->ni", maps[c], x)
    return sample


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--api", choices=("routing", "permute"), default="routing")
    ap.add_argument("--gating", choices=("torch", "npu"), default="torch")
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--batch", type=int, default=255)  # odd on purpose
    ap.add_argument("--dim", type=int, default=16)
    ap.add_argument("--experts", choices=("linear", "gmm"), default="linear",
                    help="linear: an nn.Linear per expert; gmm: a SwiGLU MLP per expert on npu_grouped_matmul")
    ap.add_argument("--num-experts", type=int, default=4)
    ap.add_argument("--ffn", type=int, default=32, help="--experts gmm: each expert's intermediate size")
    ap.add_argument("--dtype", choices=("fp32", "bf16"), default="fp32", help="the MoE layer's data type")
    ap.add_argument("--top-k", type=int, default=2)
    ap.add_argument("--lr", type=float, default=1e-2)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--check", action="store_true", help="exit 1 unless the loss at least halved")
    a = ap.parse_args()

    if a.experts == "gmm" and a.dtype == "fp32":
        # CANN's Ascend 950 table for GroupedMatmul has no FLOAT32 (fp16/bf16 only), the A2/A3 one has;
        # moefr applies the Ascend 950 rules unless MOEFR_SOC=ascend910b (read once, at its first call).
        os.environ.setdefault("MOEFR_SOC", "ascend910b")
    global torch_npu
    from moefr import torch_npu  # (on an Ascend machine: import torch_npu)

    dtype = {"fp32": torch.float32, "bf16": torch.bfloat16}[a.dtype]
    torch.manual_seed(a.seed)
    sample = make_task(a.dim, a.num_experts, torch.Generator().manual_seed(a.seed + 1))
    # An input projection before the layer, so the routing's own backward (token gradients through
    # aclnnMoeInitRoutingV2Grad / aclnnMoeTokenPermuteGrad) is exercised too.
    model = nn.Sequential(nn.Linear(a.dim, a.dim), MoELayer(a.dim, a.num_experts, a.top_k, a.api, a.gating,
                                                             a.experts, a.ffn, dtype))
    opt = torch.optim.Adam(model.parameters(), lr=a.lr)
    print("moefr.torch_npu, api %s, gating %s, %d %s experts%s, %s, top-%d, batch %d%s"
          % (a.api, a.gating, a.num_experts, a.experts, " (ffn %d)" % a.ffn if a.experts == "gmm" else "",
             a.dtype, a.top_k, a.batch, ", MOEFR_SOC=" + os.environ["MOEFR_SOC"] if "MOEFR_SOC" in os.environ
             else ""))
    t0 = time.time()
    losses = []
    for step in range(1, a.steps + 1):
        x, y = sample(a.batch)
        loss = torch.mean((model(x) - y) ** 2)
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
        if step == 1 or step % 25 == 0 or step == a.steps:
            print("step %4d  loss %.4f" % (step, sum(losses[-10:]) / len(losses[-10:])), flush=True)
    first = sum(losses[:10]) / min(10, len(losses))
    last = sum(losses[-10:]) / min(10, len(losses))
    print("loss %.4f -> %.4f in %.1f s" % (first, last, time.time() - t0))
    if a.check and not last < 0.5 * first:
        print("FAIL: the loss did not halve", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
