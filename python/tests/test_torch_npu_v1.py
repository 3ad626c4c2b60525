"""test_torch_npu_v1 - moefr.torch_npu.npu_moe_init_routing against a pure-torch reference (stable sort
by expert, src = rowIdx at the sorted positions, expandedRowIdx[src] = i, expandedX = x[src % N]), and
the V1 chain npu_moe_init_routing -> experts -> npu_moe_finalize_routing(drop_pad_mode=0, column
layout) with its gradients against torch.autograd in float64. Random odd sizes; poisoned outputs."""

import random
import unittest

import torch

import moefr_testlib as tl
from moefr import _routing, torch_npu

_routing.POISON_OUTPUTS = True
RNG = random.Random(tl.SEED)
torch.manual_seed(tl.SEED)


def cases():
    out = [(1, 1, 1, 1), (6, 2, 3, 5)]
    for _ in range(5):
        E = RNG.choice([2, 4, 9, 16])
        out.append((RNG.randint(1, 40), RNG.randint(1, min(E, 4)), E, RNG.choice([1, 7, 18])))
    return out


def standard_row_idx(N, K):
    return (torch.arange(K).reshape(1, K) * N + torch.arange(N).reshape(N, 1)).to(torch.int32)


def ref_v1(x, row_idx, expert_idx, active):
    N, K = expert_idx.shape
    flat = expert_idx.reshape(-1).long()
    perm = torch.argsort(flat * (flat.numel() + 1) + torch.arange(flat.numel()))
    src = row_idx.reshape(-1).long()[perm]
    eri = torch.zeros(N * K, dtype=torch.long)
    eri[src] = torch.arange(N * K)
    return x[src[: active * K] % N], eri, flat[perm]


class InitRoutingV1(unittest.TestCase):
    def test_values(self):
        for (N, K, E, H) in cases():
            for dt in (torch.float32, torch.float16, torch.bfloat16):
                for active_num in (N, max(0, N - 2), N + 3, 0):
                    A = min(active_num, N)
                    e = torch.stack([torch.randperm(E)[:K] for _ in range(N)]).to(torch.int32)
                    ri = standard_row_idx(N, K)
                    x = torch.randn(N, H).to(dt)
                    ex, eri, eei = torch_npu.npu_moe_init_routing(x, ri, e, active_num)
                    rex, reri, reei = ref_v1(x.double(), ri, e, A)
                    self.assertEqual(tuple(ex.shape), (A * K, H))
                    self.assertTrue(torch.equal(ex.double(), rex), (N, K, E, H, dt, active_num))
                    self.assertTrue(torch.equal(eri.long(), reri))
                    self.assertTrue(torch.equal(eei.long(), reei))

    def test_v1_chain_gradients(self):
        for (N, K, E, H) in cases():
            e = torch.stack([torch.randperm(E)[:K] for _ in range(N)]).to(torch.int32)
            ri = standard_row_idx(N, K)
            x = torch.randn(N, H)
            W = torch.randn(E, H, H, requires_grad=True)
            s = torch.rand(N, K, requires_grad=True)
            g = torch.randn(N, H)
            ex, eri, eei = torch_npu.npu_moe_init_routing(x, ri, e, N)
            counts = torch.bincount(eei.long(), minlength=E).tolist()
            y = torch.cat([ex[a:a + c] @ W[i] for i, (a, c) in
                           enumerate(zip(torch.cumsum(torch.tensor([0] + counts[:-1]), 0).tolist(), counts))])
            out = torch_npu.npu_moe_finalize_routing(y, None, None, None, s, eri, e, drop_pad_mode=0)
            (out * g).sum().backward()
            W64, s64 = W.detach().double().requires_grad_(), s.detach().double().requires_grad_()
            ref = (s64.unsqueeze(-1) * torch.einsum("rh,rkhj->rkj", x.double(), W64[e.long()])).sum(1)
            (ref * g.double()).sum().backward()
            self.assertLessEqual((out.double() - ref).abs().max().item(), 1e-5 * H * (1 + ref.abs().max().item()))
            for a, b in ((W, W64), (s, s64)):
                err = (a.grad.double() - b.grad).abs().max().item()
                self.assertLessEqual(err, 1e-5 * H * (1 + b.grad.abs().max().item()), (N, K, E, H))


if __name__ == "__main__":
    unittest.main(verbosity=2)
