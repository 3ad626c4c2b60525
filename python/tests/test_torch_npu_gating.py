"""test_torch_npu_gating - moefr.torch_npu.npu_moe_gating_top_k_softmax(_v2) against a float64 softmax
/ top-k reference (SPEC section 9: fp32 softmax, stable descending top-k with ties to the lower expert,
rowIdx = k*R + r, finished rows -> expert E; V2 renorm 1 = top-k of the logits then softmax over k).
Logits are spaced so the top-k order is unambiguous, plus exact ties."""

import random
import unittest

import torch

import moefr_testlib as tl
from moefr import _routing, torch_npu

_routing.POISON_OUTPUTS = True
RNG = random.Random(tl.SEED)
torch.manual_seed(tl.SEED)


def logits(lead, E, dt):
    # a random permutation of a grid with spacing 0.05 per row: no near-ties in any dtype used
    rows = [torch.randperm(E).double() * 0.05 - 0.05 * E / 2 + RNG.uniform(-1, 1) for _ in range(int(torch.tensor(lead).prod()))]
    return torch.stack(rows).reshape(tuple(lead) + (E,)).to(dt)


def ref_topk(x64, k, finished=None, renorm=0):
    E = x64.shape[-1]
    if renorm == 0:
        p = torch.softmax(x64, -1)
        order = torch.argsort(-p, dim=-1, stable=True)[..., :k]
        y = p.gather(-1, order)
    else:
        order = torch.argsort(-x64, dim=-1, stable=True)[..., :k]
        y = torch.softmax(x64.gather(-1, order), -1)
        p = None
    e = order.clone()
    if finished is not None:
        e[finished] = E
    return y, e, p


def tol(dt):
    return {torch.float32: 2e-6, torch.float16: 1e-3, torch.bfloat16: 8e-3}[dt]


class Gating(unittest.TestCase):
    def test_v1(self):
        for _ in range(6):
            E = RNG.choice([1, 3, 8, 17, 64])
            lead = RNG.choice([(RNG.randint(1, 33),), (RNG.randint(1, 4), RNG.randint(1, 9))])
            for dt in (torch.float32, torch.float16, torch.bfloat16):
                k = RNG.randint(1, min(E, 8))
                x = logits(lead, E, dt)
                fin = torch.rand(lead) < 0.3 if RNG.random() < 0.5 else None
                y, e, r = torch_npu.npu_moe_gating_top_k_softmax(x, fin, k=k)
                ry, re, _ = ref_topk(x.double(), k, fin)
                self.assertEqual(y.dtype, dt)
                self.assertTrue(torch.equal(e.long(), re), (lead, E, k, dt))
                self.assertLessEqual((y.double() - ry).abs().max().item(), tol(dt))
                R = int(torch.tensor(lead).prod())
                want_r = (torch.arange(k).reshape(1, k) * R + torch.arange(R).reshape(R, 1)).reshape(tuple(lead) + (k,))
                self.assertTrue(torch.equal(r.long(), want_r))

    def test_ties_to_lower_expert(self):
        x = torch.tensor([[1.0, 3.0, 3.0, 2.0, 3.0]])
        y, e, _ = torch_npu.npu_moe_gating_top_k_softmax(x, None, k=4)
        self.assertEqual(e.tolist(), [[1, 2, 4, 3]])
        y2, e2, _ = torch_npu.npu_moe_gating_top_k_softmax_v2(x, k=4, renorm=1)
        self.assertEqual(e2.tolist(), [[1, 2, 4, 3]])

    def test_v2(self):
        for _ in range(6):
            E = RNG.choice([2, 5, 16, 31])
            lead = (RNG.randint(1, 29),)
            for renorm in (0, 1):
                for flag in (False, True):
                    k = RNG.randint(1, min(E, 6))
                    x = logits(lead, E, torch.float32)
                    y, e, sm = torch_npu.npu_moe_gating_top_k_softmax_v2(x, k=k, renorm=renorm,
                                                                         output_softmax=flag)
                    ry, re, rp = ref_topk(x.double(), k, None, renorm)
                    self.assertTrue(torch.equal(e.long(), re))
                    self.assertLessEqual((y.double() - ry).abs().max().item(), 2e-6)
                    if renorm == 0 and flag:
                        self.assertEqual(sm.dtype, torch.float32)
                        self.assertLessEqual((sm.double() - rp).abs().max().item(), 2e-6)
                    else:
                        self.assertEqual(tuple(sm.shape), (0,))

    def test_k_zero_and_bad_k(self):
        x = torch.randn(3, 4)
        y, e, r = torch_npu.npu_moe_gating_top_k_softmax(x, None, k=0)
        self.assertEqual(tuple(y.shape), (3, 0))
        with self.assertRaises(ValueError):
            torch_npu.npu_moe_gating_top_k_softmax(x, None, k=5)


if __name__ == "__main__":
    unittest.main(verbosity=2)
