#!/usr/bin/python3
"""expert_parallel.py - expert parallelism across processes with torch.distributed (gloo) around
moefr's per-process routing operators, checked against the single-process layer.

Each of the 2 ranks (127.0.0.1, a free port) holds its own tokens and E / 2 of the experts:

    router (softmax top-k)                               on every rank, replicated weights
    npu_moe_init_routing_v2 -> rows sorted by expert     moefr, local
    all_to_all_single (dispatch: the rows of expert e go to the rank owning e)
    local experts (nn.Linear on each (source rank, expert) block)
    all_to_all_single (combine: the rows go back, in the order they came)
    npu_moe_finalize_routing (weights the K rows of each token)   moefr, local

--experts gmm makes each expert a SwiGLU MLP (W1 (hidden, 2 ffn), W2 (ffn, hidden)), and a rank runs
all its local experts in three calls: the received (source rank, expert) blocks are regrouped by
expert (Megatron's sort_chunks_by_idxs), then npu_grouped_matmul(rows, W1[local], split_item=3,
group_type=0, group_list=rows per local expert, group_list_type=1) -> npu_swiglu ->
npu_grouped_matmul(., W2[local]), and the rows go back to (source rank, expert) order for the combine.
Gradients: npu_grouped_matmul's (moefr adds MindSpeed's backward) and npu_swiglu's. It runs in fp32,
which CANN's GroupedMatmul has only in the A2/A3 table, so main() sets MOEFR_SOC=ascend910b (unless
set) before the ranks start and moefr loads.

The all-to-alls are torch's; gloo in torch 1.13 has no all_to_all (list form: "ProcessGroup gloo
does not support alltoall") but has all_to_all_single with uneven splits, which is used here, wrapped
in an autograd Function whose backward is the reverse all_to_all_single. moefr stays a per-process
library: it never sees the other rank.

--check runs one forward and backward on random problems and compares every rank's output and
gradients (tokens, router weight, its experts' weights and biases, or W1 and W2) with the single-process layer over
all tokens. Tolerance: 1e-5 x (1 + largest magnitude) in fp32. The routing and combine arithmetic is
the same per token, but the expert matmuls see other row blocks (the BLAS may block a 7-row and a
30-row product differently) and the weight-gradient sums add the per-source blocks in another order,
so results may differ by a few fp32 ulps; any routing error is O(1). (Measured: the outputs and
x.grad came out bit-identical, the parameter gradients within ~3e-6 of magnitudes ~10.)

With gmm the single process groups each expert's rows in the same order (rank 0's, then rank 1's), so
the weight-gradient sums see the rows in the same order too.

    /usr/bin/python3 examples/python/expert_parallel.py [--experts linear|gmm] --check
"""

import argparse
import os
import socket
import sys
import tempfile

_SRC = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python")
if os.path.isfile(os.path.join(_SRC, "moefr", "__init__.py")):
    sys.path.insert(0, os.path.normpath(_SRC))

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
import torch.multiprocessing as mp  # noqa: E402
from torch import nn  # noqa: E402

from moefr import torch_npu  # noqa: E402

WORLD = 2


class AllToAllSingle(torch.autograd.Function):
    """all_to_all_single with uneven splits; its gradient is the same exchange in reverse."""

    @staticmethod
    def forward(ctx, x, out_splits, in_splits):
        ctx.out_splits, ctx.in_splits = out_splits, in_splits
        out = x.new_empty((sum(out_splits),) + tuple(x.shape[1:]))
        dist.all_to_all_single(out, x.contiguous(), out_splits, in_splits)
        return out

    @staticmethod
    def backward(ctx, grad):
        g = grad.new_empty((sum(ctx.in_splits),) + tuple(grad.shape[1:]))
        dist.all_to_all_single(g, grad.contiguous(), ctx.in_splits, ctx.out_splits)
        return g, None, None


class MoE(nn.Module):
    """The layer; with world > 1 it keeps only experts [rank * E/world, (rank + 1) * E/world)."""

    def __init__(self, hidden, num_experts, top_k, rank=0, world=1, kind="linear", ffn=8):
        super().__init__()
        self.E, self.K, self.rank, self.world, self.kind = num_experts, top_k, rank, world, kind
        self.local = num_experts // world
        self.gate = nn.Linear(hidden, num_experts, bias=False)
        if kind == "gmm":
            # every rank holds the full stacks (the same state dict) and uses its local slice
            self.w1 = nn.Parameter(torch.randn(num_experts, hidden, 2 * ffn) / hidden ** 0.5)
            self.w2 = nn.Parameter(torch.randn(num_experts, ffn, hidden) / ffn ** 0.5)
        else:
            self.experts = nn.ModuleList(nn.Linear(hidden, hidden) for _ in range(num_experts))

    def swiglu_experts(self, rows, counts, first):
        """Experts [first, first + len(counts)) on rows grouped by expert, counts int64 rows each."""
        last = first + counts.numel()
        gate_up = torch_npu.npu_grouped_matmul([rows], [self.w1[first:last]], group_list=counts, split_item=3,
                                               group_type=0, group_list_type=1)[0]
        return torch_npu.npu_grouped_matmul([torch_npu.npu_swiglu(gate_up, dim=-1)], [self.w2[first:last]],
                                            group_list=counts, split_item=3, group_type=0, group_list_type=1)[0]

    def route(self, x):
        probs = torch.softmax(self.gate(x), dim=-1)
        w, ids = torch.topk(probs, self.K, dim=-1)
        return w / w.sum(-1, keepdim=True), ids.to(torch.int32)

    def forward(self, x):
        n = x.shape[0]
        weights, ids = self.route(x)
        expanded_x, row_idx, counts, _ = torch_npu.npu_moe_init_routing_v2(
            x, ids, active_num=n * self.K, expert_num=self.E, expert_tokens_num_type=1,
            expert_tokens_num_flag=True, active_expert_range=[0, self.E], quant_mode=-1)
        if self.world == 1 and self.kind == "gmm":
            expert_out = self.swiglu_experts(expanded_x, counts, 0)
        elif self.world == 1:
            outs, start = [], 0
            for e, c in enumerate(counts.tolist()):
                outs.append(self.experts[e](expanded_x[start:start + c]))
                start += c
            expert_out = torch.cat(outs)
        else:
            # counts (E,) -> what I send to each rank, and (world, local) counts I receive.
            recv_counts = torch.empty_like(counts)
            dist.all_to_all_single(recv_counts, counts)
            send = counts.view(self.world, self.local).sum(1).tolist()
            recv_counts = recv_counts.view(self.world, self.local)
            recv = recv_counts.sum(1).tolist()
            tokens = AllToAllSingle.apply(expanded_x, recv, send)
            if self.kind == "gmm":
                # (source, expert) blocks -> expert-major (all sources' rows of expert j together), one
                # grouped matmul chain over them, then back to (source, expert) order
                sizes = recv_counts.flatten().tolist()
                blocks = tokens.split(sizes)
                order = [src * self.local + j for j in range(self.local) for src in range(self.world)]
                y = self.swiglu_experts(torch.cat([blocks[i] for i in order]), recv_counts.sum(0),
                                        self.rank * self.local).split([sizes[i] for i in order])
                back = {i: y[pos] for pos, i in enumerate(order)}
                expert_out = torch.cat([back[i] for i in range(len(sizes))])
            else:
                outs, start = [], 0
                for src in range(self.world):
                    for j, c in enumerate(recv_counts[src].tolist()):
                        outs.append(self.experts[self.rank * self.local + j](tokens[start:start + c]))
                        start += c
                expert_out = torch.cat(outs)
            expert_out = AllToAllSingle.apply(expert_out, send, recv)
        return torch_npu.npu_moe_finalize_routing(expert_out, None, None, None, weights, row_idx, ids,
                                                  drop_pad_mode=2)


def problem(seed, hidden, num_experts, top_k, sizes, kind, ffn):
    """Model state, every rank's tokens and output gradients: the same on every process."""
    torch.manual_seed(seed)
    model = MoE(hidden, num_experts, top_k, kind=kind, ffn=ffn)
    xs = [torch.randn(n, hidden) for n in sizes]
    gs = [torch.randn(n, hidden) for n in sizes]
    return model.state_dict(), xs, gs


def worker(rank, port, cases, outdir):
    dist.init_process_group("gloo", init_method="tcp://127.0.0.1:%d" % port, rank=rank, world_size=WORLD)
    try:
        for ci, case in enumerate(cases):
            state, xs, gs = problem(*case)
            model = MoE(case[1], case[2], case[3], rank, WORLD, case[5], case[6])
            model.load_state_dict(state)
            x = xs[rank].clone().requires_grad_()
            out = model(x)
            (out * gs[rank]).sum().backward()
            # The router is replicated: its gradient is the sum over ranks, as DDP would form it.
            dist.all_reduce(model.gate.weight.grad)
            lo = rank * model.local
            grads = {"gate.weight": model.gate.weight.grad}
            for e in range(lo, lo + model.local):
                if model.kind == "gmm":
                    grads["w1.%d" % e] = model.w1.grad[e]
                    grads["w2.%d" % e] = model.w2.grad[e]
                else:
                    grads["experts.%d.weight" % e] = model.experts[e].weight.grad
                    grads["experts.%d.bias" % e] = model.experts[e].bias.grad
            torch.save({"out": out.detach(), "x.grad": x.grad, "grads": grads},
                       os.path.join(outdir, "case%d_rank%d.pt" % (ci, rank)))
    finally:
        dist.destroy_process_group()


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def compare(name, got, want):
    err = (got.double() - want.double()).abs().max().item() if want.numel() else 0.0
    tol = 1e-5 * (1.0 + (want.abs().max().item() if want.numel() else 0.0))
    return err <= tol, "%-22s max |diff| %.3e  tol %.3e" % (name, err, tol)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--check", action="store_true")
    ap.add_argument("--experts", choices=("linear", "gmm"), default="linear",
                    help="linear: an nn.Linear per expert; gmm: a SwiGLU MLP per expert on npu_grouped_matmul")
    ap.add_argument("--seed", type=int, default=int.from_bytes(os.urandom(4), "little"))
    a = ap.parse_args()
    if a.experts == "gmm":
        # CANN's Ascend 950 table for GroupedMatmul has no FLOAT32 (fp16/bf16 only), the A2/A3 one has;
        # moefr applies the Ascend 950 rules unless MOEFR_SOC=ascend910b. Set here, before any moefr call
        # in this process, and inherited by the ranks mp.spawn starts.
        os.environ.setdefault("MOEFR_SOC", "ascend910b")
    print("seed %d, %s experts" % (a.seed, a.experts))
    # (seed, hidden, experts, top_k, tokens per rank, kind, ffn): odd sizes, uneven ranks, one expert per
    # rank with a single token on one side (so some sends are empty).
    cases = [(a.seed, 17, 6, 2, (37, 50), a.experts, 11), (a.seed + 1, 9, 4, 3, (13, 1), a.experts, 5),
             (a.seed + 2, 5, 2, 1, (3, 8), a.experts, 3)]
    with tempfile.TemporaryDirectory() as outdir:
        mp.spawn(worker, args=(free_port(), cases, outdir), nprocs=WORLD, join=True)
        ok = True
        for ci, case in enumerate(cases):
            state, xs, gs = problem(*case)
            ref = MoE(case[1], case[2], case[3], kind=case[5], ffn=case[6])
            ref.load_state_dict(state)
            x = torch.cat(xs).requires_grad_()
            out = ref(x)
            (out * torch.cat(gs)).sum().backward()
            print("case %d: hidden %d, %d %s experts%s, top-%d, tokens %s" % (
                ci, case[1], case[2], case[5], " (ffn %d)" % case[6] if case[5] == "gmm" else "", case[3], case[4]))
            start = 0
            for rank, n in enumerate(case[4]):
                res = torch.load(os.path.join(outdir, "case%d_rank%d.pt" % (ci, rank)))
                checks = [compare("rank%d out" % rank, res["out"], out[start:start + n].detach()),
                          compare("rank%d x.grad" % rank, res["x.grad"], x.grad[start:start + n])]
                params = dict(ref.named_parameters())
                for pname, g in res["grads"].items():
                    stack, _, e = pname.partition(".")
                    want = params[stack].grad[int(e)] if stack in ("w1", "w2") else params[pname].grad
                    checks.append(compare("rank%d %s" % (rank, pname), g, want))
                for good, line in checks:
                    print("  " + line + ("" if good else "  MISMATCH"))
                    ok = ok and good
                start += n
    print("expert parallel (2 ranks, gloo all_to_all_single) %s the single-process layer"
          % ("matches" if ok else "DOES NOT match"))
    return 0 if ok or not a.check else 1


if __name__ == "__main__":
    sys.exit(main())
