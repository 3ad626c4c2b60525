#!/usr/bin/python3
"""train_moe.py - a small mixture-of-experts layer trained on CPU with moefr's finalize routing
(router with top-k, token permutation, experts as nn.Linear, moefr combines) on a synthetic task.

The task: y = A_c x, where the "cluster" c of x is decided by a hidden projection; a top-2 MoE
learns to route each cluster to experts that fit its map. The router only learns through
moefr's gradient for the scales, the experts through its gradient for expanded_x, the
per-expert bias through its bias gradient and the residual through x1.

    /usr/bin/python3 examples/python/train_moe.py [--steps 300] [--mode 2] [--check]

--mode picks the routing layout: 0/2 dropless (index in column/row layout), 1/3 drop-pad with
an expert capacity (tokens over capacity are dropped, index -1)."""

import argparse
import os
import sys
import time

# Prefer the source tree's package when run from a checkout; else the installed one.
_SRC = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python")
if os.path.isfile(os.path.join(_SRC, "moefr", "__init__.py")):
    sys.path.insert(0, os.path.normpath(_SRC))

import torch  # noqa: E402
from torch import nn  # noqa: E402

import moefr  # noqa: E402


class MoE(nn.Module):
    def __init__(self, dim, hidden_out, experts, top_k, mode, capacity_factor=1.0):
        super().__init__()
        self.E, self.K, self.mode = experts, top_k, mode
        self.router = nn.Linear(dim, experts, bias=False)
        # The expert bias lives in moefr's `bias` (E, H), so the Linear layers carry none.
        self.experts = nn.ModuleList(nn.Linear(dim, hidden_out, bias=False) for _ in range(experts))
        self.expert_bias = nn.Parameter(torch.zeros(experts, hidden_out))
        self.skip = nn.Linear(dim, hidden_out, bias=False)
        self.capacity_factor = capacity_factor
        self.dropped = 0

    def forward(self, x):
        R, K, E = x.shape[0], self.K, self.E
        probs = torch.softmax(self.router(x), dim=-1)
        top_p, top_e = probs.topk(K, dim=-1)
        scales = top_p / top_p.sum(-1, keepdim=True)                 # (R, K)
        expert_idx = top_e.to(torch.int32)                            # (R, K)

        # Permutation: slots (r, k) sorted by expert, stable, so each expert gets a contiguous block.
        flat = top_e.reshape(-1)
        order = torch.sort(flat, stable=True).indices                 # position -> slot r*K + k
        counts = torch.bincount(flat, minlength=E)
        starts = torch.cumsum(counts, 0) - counts
        position = torch.empty_like(order)
        position[order] = torch.arange(R * K)                         # slot -> position

        if self.mode in (0, 2):
            rows = position                                           # dropless: one row per slot
            expanded_in = x[order // K]                               # (R*K, dim)
            blocks = torch.split(expanded_in, counts.tolist())
            expanded_x = torch.cat([f(b) for f, b in zip(self.experts, blocks)])
        else:
            C = max(1, int(self.capacity_factor * R * K / E))
            rank = position - starts[flat]                            # place inside its expert
            kept = rank < C
            self.dropped = int((~kept).sum())
            rows = torch.where(kept, flat * C + rank, torch.full_like(rank, -1))
            buf = torch.zeros(E * C, x.shape[1])
            buf[rows[kept]] = x[torch.arange(R * K)[kept] // K]
            buf = buf.view(E, C, -1)
            expanded_x = torch.stack([f(buf[e]) for e, f in enumerate(self.experts)])  # (E, C, H)

        row_layout = rows.view(R, K)
        index = row_layout.t() if self.mode in (0, 1) else row_layout  # modes 0/1: (K, R) order
        index = index.reshape(-1).to(torch.int32)
        return moefr.moe_finalize_routing(expanded_x, index, x1=self.skip(x), bias=self.expert_bias,
                                          scales=scales, expert_idx=expert_idx, drop_pad_mode=self.mode)


def make_task(dim, clusters, gen):
    proj = torch.randn(dim, clusters, generator=gen)
    maps = torch.randn(clusters, dim, dim, generator=gen) / dim ** 0.5

    def sample(n):
        x = torch.randn(n, dim, generator=gen)
        c = (x @ proj).argmax(-1)
        y = torch.einsum("nij,nj->ni", maps[c], x)
        return x, y
    return sample


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument("--batch", type=int, default=256)
    ap.add_argument("--dim", type=int, default=16)
    ap.add_argument("--experts", type=int, default=4)
    ap.add_argument("--top-k", type=int, default=2)
    ap.add_argument("--mode", type=int, default=2, choices=(0, 1, 2, 3))
    ap.add_argument("--capacity-factor", type=float, default=1.0,
                    help="modes 1/3: expert capacity = factor * batch * top-k / experts")
    ap.add_argument("--lr", type=float, default=1e-2)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--check", action="store_true", help="exit 1 unless the loss at least halved")
    a = ap.parse_args()

    torch.manual_seed(a.seed)
    gen = torch.Generator().manual_seed(a.seed + 1)
    sample = make_task(a.dim, a.experts, gen)
    model = MoE(a.dim, a.dim, a.experts, a.top_k, a.mode, a.capacity_factor)
    opt = torch.optim.Adam(model.parameters(), lr=a.lr)
    print("moefr %s (%s, %s), mode %d, %d experts, top-%d, batch %d" % (
        moefr.version(), moefr.isa(), moefr.library_path(), a.mode, a.experts, a.top_k, a.batch))

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
            extra = "  dropped %d of %d slots" % (model.dropped, a.batch * a.top_k) if a.mode in (1, 3) else ""
            print("step %4d  loss %.4f%s" % (step, sum(losses[-10:]) / len(losses[-10:]), extra), flush=True)
    first = sum(losses[:10]) / min(10, len(losses))
    last = sum(losses[-10:]) / min(10, len(losses))
    print("loss %.4f -> %.4f in %.1f s" % (first, last, time.time() - t0))
    if a.check and not last < 0.5 * first:
        print("FAIL: the loss did not halve", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
