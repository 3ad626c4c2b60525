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

The all-to-alls are torch's; gloo in torch 1.13 has no all_to_all (list form: "ProcessGroup gloo
does not support alltoall") but has all_to_all_single with uneven splits, which is used here, wrapped
in an autograd Function whose backward is the reverse all_to_all_single. moefr stays a per-process
library: it never sees the other rank.

--check runs one forward and backward on random problems and compares every rank's output and
gradients (tokens, router weight, its experts' weights and biases) with the single-process layer over
all tokens. Tolerance: 1e-5 x (1 + largest magnitude) in fp32. The routing and combine arithmetic is
the same per token, but the expert matmuls see other row blocks (the BLAS may block a 7-row and a
30-row product differently) and the weight-gradient sums add the per-source blocks in another order,
so results may differ by a few fp32 ulps; any routing error is O(1). (Measured: the outputs and
x.grad came out bit-identical, the parameter gradients within ~3e-6 of magnitudes ~10.)

    /usr/bin/python3 examples/python/expert_parallel.py --check
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

    def __init__(self, hidden, num_experts, top_k, rank=0, world=1):
        super().__init__()
        self.E, self.K, self.rank, self.world = num_experts, top_k, rank, world
        self.local = num_experts // world
        self.gate = nn.Linear(hidden, num_experts, bias=False)
        self.experts = nn.ModuleList(nn.Linear(hidden, hidden) for _ in range(num_experts))

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
        if self.world == 1:
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
            outs, start = [], 0
            for src in range(self.world):
                for j, c in enumerate(recv_counts[src].tolist()):
                    outs.append(self.experts[self.rank * self.local + j](tokens[start:start + c]))
                    start += c
            expert_out = AllToAllSingle.apply(torch.cat(outs), send, recv)
        return torch_npu.npu_moe_finalize_routing(expert_out, None, None, None, weights, row_idx, ids,
                                                  drop_pad_mode=2)


def problem(seed, hidden, num_experts, top_k, sizes):
    """Model state, every rank's tokens and output gradients: the same on every process."""
    torch.manual_seed(seed)
    model = MoE(hidden, num_experts, top_k)
    xs = [torch.randn(n, hidden) for n in sizes]
    gs = [torch.randn(n, hidden) for n in sizes]
    return model.state_dict(), xs, gs


def worker(rank, port, cases, outdir):
    dist.init_process_group("gloo", init_method="tcp://127.0.0.1:%d" % port, rank=rank, world_size=WORLD)
    try:
        for ci, case in enumerate(cases):
            state, xs, gs = problem(*case)
            model = MoE(case[1], case[2], case[3], rank, WORLD)
            model.load_state_dict(state)
            x = xs[rank].clone().requires_grad_()
            out = model(x)
            (out * gs[rank]).sum().backward()
            # The router is replicated: its gradient is the sum over ranks, as DDP would form it.
            dist.all_reduce(model.gate.weight.grad)
            lo = rank * model.local
            grads = {"gate.weight": model.gate.weight.grad}
            for e in range(lo, lo + model.local):
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
    ap.add_argument("--seed", type=int, default=int.from_bytes(os.urandom(4), "little"))
    a = ap.parse_args()
    print("seed %d" % a.seed)
    # (seed, hidden, experts, top_k, tokens per rank): odd sizes, uneven ranks, one expert per rank
    # with a single token on one side (so some sends are empty).
    cases = [(a.seed, 17, 6, 2, (37, 50)), (a.seed + 1, 9, 4, 3, (13, 1)), (a.seed + 2, 5, 2, 1, (3, 8))]
    with tempfile.TemporaryDirectory() as outdir:
        mp.spawn(worker, args=(free_port(), cases, outdir), nprocs=WORLD, join=True)
        ok = True
        for ci, case in enumerate(cases):
            state, xs, gs = problem(*case)
            ref = MoE(case[1], case[2], case[3])
            ref.load_state_dict(state)
            x = torch.cat(xs).requires_grad_()
            out = ref(x)
            (out * torch.cat(gs)).sum().backward()
            print("case %d: hidden %d, %d experts, top-%d, tokens %s" % (ci, case[1], case[2], case[3], case[4]))
            start = 0
            for rank, n in enumerate(case[4]):
                res = torch.load(os.path.join(outdir, "case%d_rank%d.pt" % (ci, rank)))
                checks = [compare("rank%d out" % rank, res["out"], out[start:start + n].detach()),
                          compare("rank%d x.grad" % rank, res["x.grad"], x.grad[start:start + n])]
                params = dict(ref.named_parameters())
                for pname, g in res["grads"].items():
                    checks.append(compare("rank%d %s" % (rank, pname), g, params[pname].grad))
                for good, line in checks:
                    print("  " + line + ("" if good else "  MISMATCH"))
                    ok = ok and good
                start += n
    print("expert parallel (2 ranks, gloo all_to_all_single) %s the single-process layer"
          % ("matches" if ok else "DOES NOT match"))
    return 0 if ok or not a.check else 1


if __name__ == "__main__":
    sys.exit(main())
