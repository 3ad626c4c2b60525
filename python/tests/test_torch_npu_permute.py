"""test_torch_npu_permute - moefr.torch_npu.npu_moe_token_permute / npu_moe_token_unpermute against
float64 pure-torch references of SPEC section 9 (stable sort by expert, ties by flat slot; unpermute
as the probs-weighted sum): forward values (permute bit-exact), num_out_tokens rules, and the
gradients torch_npu registers (tokens; permuted tokens and probs) against torch.autograd in float64.
Random odd sizes; outputs start poisoned."""

import random
import unittest

import torch

import moefr_testlib as tl
from moefr import _routing, torch_npu

_routing.POISON_OUTPUTS = True
RNG = random.Random(tl.SEED)
torch.manual_seed(tl.SEED)


def cases():
    out = [(1, 1, 1, 1), (9, 2, 4, 7)]
    for _ in range(5):
        E = RNG.choice([2, 3, 8, 17])
        out.append((RNG.randint(1, 45), RNG.randint(1, min(4, E)), E, RNG.choice([1, 5, 19, 32])))
    return out


def ref_sort(ids):
    flat = ids.reshape(-1).long()
    perm = torch.argsort(flat * (flat.numel() + 1) + torch.arange(flat.numel()))
    scatter = torch.empty_like(perm)
    scatter[perm] = torch.arange(perm.numel())
    return perm, scatter


def ref_permute(tokens, ids, M):
    K = 1 if ids.dim() == 1 else ids.shape[1]
    perm, scatter = ref_sort(ids)
    return tokens[perm[:M] // K], scatter


def ref_unpermute(permuted, scatter, probs, N, K):
    M = permuted.shape[0]
    d = scatter.reshape(N, K)
    kept = (d < M).unsqueeze(-1)
    rows = permuted[d.clamp(max=max(M - 1, 0))] if M else torch.zeros((N, K, permuted.shape[1]), dtype=permuted.dtype)
    rows = torch.where(kept, rows, torch.zeros((), dtype=permuted.dtype))
    p = probs.unsqueeze(-1) if probs is not None else torch.ones((N, K, 1), dtype=permuted.dtype)
    return (rows * p).sum(1)


class Permute(unittest.TestCase):
    def test_forward_and_grad(self):
        for (N, K, E, H) in cases():
            for dt in (torch.float32, torch.float16, torch.bfloat16):
                T = N * K
                for num_out in (None, 0, max(1, T - 3), -1, T + 4):
                    M = T if not num_out else (min(num_out, T) if num_out > 0 else num_out + T)
                    ids = torch.stack([torch.randperm(E)[:K] for _ in range(N)])  # int64, as torch.topk gives
                    ids_in = ids if K > 1 or RNG.random() < 0.5 else ids.reshape(-1)
                    x = torch.randn(N, H).to(dt).requires_grad_()
                    out, si = torch_npu.npu_moe_token_permute(x, ids_in, num_out)
                    rout, scatter = ref_permute(x.detach().double(), ids, M)
                    self.assertEqual(tuple(out.shape), (M, H))
                    self.assertTrue(torch.equal(out.double(), rout), (N, K, E, H, dt, num_out))
                    self.assertTrue(torch.equal(si.long(), scatter))
                    if dt != torch.float32:
                        continue
                    g = torch.randn(M, H)
                    (out * g).sum().backward()
                    x64 = x.detach().double().requires_grad_()
                    (ref_permute(x64, ids, M)[0] * g.double()).sum().backward()
                    gmax = g.abs().max().item() if g.numel() else 0.0
                    tol = K * 2.0 ** -23 * (K * gmax + 1e-30)
                    self.assertLessEqual((x.grad.double() - x64.grad).abs().max().item(), tol)


class Unpermute(unittest.TestCase):
    def test_forward_and_grad(self):
        for (N, K, E, H) in cases():
            T = N * K
            for with_probs in (True, False):
                if not with_probs and K != 1:
                    continue
                for M in (T, max(1, T - 2)):
                    ids = torch.stack([torch.randperm(E)[:K] for _ in range(N)])
                    _, scatter = ref_sort(ids)
                    si = scatter.to(torch.int32)
                    perm = torch.randn(M, H, requires_grad=True)
                    probs = torch.rand(N, K, requires_grad=True) if with_probs else None
                    out = torch_npu.npu_moe_token_unpermute(perm, si, probs=probs)
                    p64 = perm.detach().double().requires_grad_()
                    pr64 = probs.detach().double().requires_grad_() if with_probs else None
                    ref = ref_unpermute(p64, scatter, pr64, N, K)
                    self.assertEqual(tuple(out.shape), (N, H))
                    # the forward's canonical order (fp32 for K <= 32): tl.fwd_rel of the summed
                    # magnitudes per element, plus half an ulp of fp32 (2^-150 in the subnormal range)
                    S = ref_unpermute(p64.detach().abs(), scatter, pr64.detach().abs() if with_probs else None, N, K)
                    tol = tl.fwd_rel(K) * S + 2.0 ** -24 * ref.detach().abs() + 2.0 ** -150
                    self.assertTrue(bool(((out.double() - ref.detach()).abs() <= tol).all()), (N, K, H, M))
                    g = torch.randn(N, H)
                    (out * g).sum().backward()
                    (ref * g.double()).sum().backward()
                    mag = 1.0 + p64.grad.abs().max().item()
                    self.assertLessEqual((perm.grad.double() - p64.grad).abs().max().item(), 2.0 ** -22 * mag)
                    if with_probs:
                        mag = 1.0 + pr64.grad.abs().max().item()
                        err = (probs.grad.double() - pr64.grad).abs().max().item()
                        self.assertLessEqual(err, H * 2.0 ** -22 * mag, (N, K, E, H, M))

    def test_no_probs_keeps_no_tokens(self):
        # torch_npu (issue 22, difference 3): without probs the backward saves nothing of
        # permuted_tokens; the gradient is the same (each slot's row gets grad_out of its token)
        x = torch.randn(7, 5)
        idx = torch.tensor([[0], [3], [1], [0], [2], [1], [3]])
        p, si = torch_npu.npu_moe_token_permute(x, idx)
        p = p.detach().requires_grad_()
        out = torch_npu.npu_moe_token_unpermute(p, si)
        self.assertFalse(any(t.data_ptr() == p.data_ptr() for t in out.grad_fn.saved_tensors))
        g = torch.randn(7, 5)
        out.backward(g)
        want = torch.empty_like(g)
        want[si.long()] = g  # slot r (K = 1) sits at row si[r]
        self.assertTrue(torch.equal(p.grad, want))

    def test_round_trip(self):
        """permute then unpermute with probs of 1 gives each token back K times (a chain check)."""
        for (N, K, E, H) in cases():
            ids = torch.stack([torch.randperm(E)[:K] for _ in range(N)])
            x = torch.randn(N, H)
            p, si = torch_npu.npu_moe_token_permute(x, ids)
            back = torch_npu.npu_moe_token_unpermute(p, si, probs=torch.ones(N, K))
            self.assertLessEqual((back.double() - K * x.double()).abs().max().item(),
                                 K * 2.0 ** -22 * (1 + K * x.abs().max().item()))


if __name__ == "__main__":
    unittest.main(verbosity=2)
