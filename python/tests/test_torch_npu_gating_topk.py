"""test_torch_npu_gating_topk - moefr.torch_npu.npu_moe_gating_top_k (aclnnMoeGatingTopK), its autograd
and npu_moe_gating_top_k_backward, plus moefr._routing.fused_topk (aclnnMoeFusedTopk), against float64
references written from the semantics (CANN's aclnn docs and kernels):

    s = sigmoid(x) (norm_type 1) or softmax(x) (0), b = s + bias; groups of E / G experts scored by
    their max (mode 0) or top-2 / top-N sum; the k_group best groups (ties: lower group); GatingTopK:
    the k largest b among the kept groups' experts; FusedTopk: every expert, unkept ones at b * 0
    (ties: lower expert); y = s at the picks, GatingTopK: / (sum + eps) for the sigmoid, then * scale;
    FusedTopk: / sum * scale with is_norm.

Grid inputs (s near 8^-j, one bias for all experts) make every decision either an exact tie or far
from one, so the picks must match exactly; random inputs check y at moefr's own picks."""

import math
import random
import unittest

import torch

import moefr_testlib as tl
from moefr import _routing, torch_npu
from moefr._lib import MoefrError

_routing.POISON_OUTPUTS = True
RNG = random.Random(tl.SEED)
torch.manual_seed(tl.SEED)
DTS = (torch.float32, torch.float16, torch.bfloat16)


def grid_x(R, E, dt, norm_type):
    j = torch.randint(1, 5, (R, E)).double()
    if norm_type == 1:
        t = torch.pow(8.0, -j)
        return torch.log(t / (1 - t)).to(dt)
    return (-j * math.log(8.0)).to(dt)


def ref(x, bias, k, k_group, group_count, mode, norm_type, scale, eps, fused=False, top_n=2, is_norm=True):
    """float64 reference -> (y, picks)."""
    x = x.double()
    R, E = x.shape
    s = torch.sigmoid(x) if norm_type == 1 else torch.softmax(x, -1)
    b = s + (bias.double() if bias is not None else 0)
    G, P = group_count, E // group_count
    every = (k_group == G) if fused else (k_group == G or G == E)
    cand = b.clone()
    if not every:
        tn = top_n if fused else (2 if mode == 1 else 1)
        score = b.reshape(R, G, P).sort(-1, descending=True).values[..., :tn].sum(-1)
        order = torch.argsort(-score, dim=-1, stable=True)[:, :k_group]
        kept = torch.zeros(R, G, dtype=torch.bool).scatter_(1, order, True)
        kept = kept.repeat_interleave(P, dim=1)
        cand = torch.where(kept, b, b * 0.0 if fused else torch.full_like(b, -math.inf))
    picks = torch.argsort(-cand, dim=-1, stable=True)[:, :k]
    y = s.gather(1, picks)
    if fused:
        if is_norm:
            y = y / y.sum(1, keepdim=True) * scale
    else:
        if norm_type == 1:
            y = y / (y.sum(1, keepdim=True) + eps)
        y = y * scale
    return y, picks, s


def tol(dt):
    return {torch.float32: 2e-6, torch.float16: 2e-3, torch.bfloat16: 1.6e-2}[dt]


def problem(fused=False):
    while True:
        G = RNG.choice([1, 2, 4, 5, 8])
        P = RNG.choice([1, 2, 3, 7, 16, 32])
        E = G * P
        kg = RNG.randint(1, G)
        if fused:
            if E > 1024:
                continue
            tn = RNG.randint(1, min(P, 4))
            k = RNG.randint(1, min(E, 10))
            return dict(E=E, G=G, kg=kg, k=k, mode=0, tn=tn)
        mode = RNG.choice([0, 1]) if P >= 2 else 0
        k = RNG.randint(1, min(kg * P, 10))
        if G == E and kg < k:
            continue
        return dict(E=E, G=G, kg=kg, k=k, mode=mode, tn=2)


class GatingTopK(unittest.TestCase):
    def test_grid_exact(self):
        for it in range(60):
            p = problem()
            dt = RNG.choice(DTS)
            norm = RNG.choice([0, 1])
            R = RNG.randint(1, 30)
            x = grid_x(R, p["E"], dt, norm)
            bias = torch.full((p["E"],), 0.5 if norm == 1 and RNG.random() < 0.5 else 0.0, dtype=dt) \
                if RNG.random() < 0.7 else None
            scale = RNG.choice([1.0, 2.5])
            eps = RNG.choice([1e-20, 0.125])
            out_flag = RNG.random() < 0.5
            y, e, out = torch_npu.npu_moe_gating_top_k(
                x, p["k"], bias=bias, k_group=p["kg"], group_count=p["G"], group_select_mode=p["mode"],
                norm_type=norm, out_flag=out_flag, routed_scaling_factor=scale, eps=eps)
            ry, rp, s = ref(x, bias, p["k"], p["kg"], p["G"], p["mode"], norm, scale, eps)
            self.assertEqual(y.dtype, dt)
            self.assertEqual(e.dtype, torch.int32)
            self.assertEqual(tuple(out.shape), (R, p["E"]))
            self.assertTrue(torch.equal(e.long(), rp), (it, p, dt, norm))
            self.assertTrue(bool(((y.double() - ry).abs() <= ry.abs() * tol(dt) + 1e-7).all()), (it, p, dt))
            if out_flag:
                self.assertLessEqual(((out.double() - s).abs() / s.clamp_min(1e-30)).max().item(), 2e-6)
            elif tl.torch_ops():  # the operator always forms it: the gradient's input (derivatives.yaml)
                self.assertLessEqual(((out.double() - s).abs() / s.clamp_min(1e-30)).max().item(), 2e-6)
            else:
                self.assertEqual(out.abs().sum().item(), 0.0)

    def test_random_values(self):
        for it in range(40):
            p = problem()
            dt = RNG.choice(DTS)
            norm = RNG.choice([0, 1])
            R = RNG.randint(1, 20)
            x = (torch.randn(R, p["E"]) * 3).to(dt)
            bias = (torch.randn(p["E"]) * 0.1).to(dt)
            y, e, _ = torch_npu.npu_moe_gating_top_k(
                x, p["k"], bias=bias, k_group=p["kg"], group_count=p["G"], group_select_mode=p["mode"],
                norm_type=norm, routed_scaling_factor=1.5)
            _, rp, s = ref(x, bias, p["k"], p["kg"], p["G"], p["mode"], norm, 1.5, 1e-20)
            # y recomputed at moefr's own picks; the picks' b in non-increasing order
            ys = s.gather(1, e.long())
            if norm == 1:
                ys = ys / (ys.sum(1, keepdim=True) + 1e-20)
            ys = ys * 1.5
            self.assertTrue(bool(((y.double() - ys).abs() <= ys.abs() * tol(dt) + 1e-7).all()), (it, p, dt))
            bb = (s + bias.double()).gather(1, e.long())
            self.assertTrue(bool((bb[:, :-1] >= bb[:, 1:] - 1e-5).all()), (it, p))
            agree = (e.long() == rp).all(1).double().mean().item()
            self.assertGreater(agree, 0.8, (it, p))  # near ties aside, the oracle's picks

    def test_strided_x(self):
        x = torch.randn(40, 7 * 8).t().contiguous().t()  # column-major (40, 56)
        b = torch.randn(112)[::2]
        y, e, _ = torch_npu.npu_moe_gating_top_k(x, 6, bias=b, k_group=3, group_count=8, group_select_mode=1,
                                                 norm_type=1)
        y2, e2, _ = torch_npu.npu_moe_gating_top_k(x.contiguous(), 6, bias=b.contiguous(), k_group=3,
                                                   group_count=8, group_select_mode=1, norm_type=1)
        self.assertTrue(torch.equal(e, e2) and torch.equal(y, y2))

    def test_autograd(self):
        for norm in (0, 1):
            for dt in (torch.float32, torch.bfloat16):
                E, G, kg, k = 64, 8, 4, 8
                x0 = torch.randn(12, E).to(dt)
                bias = (torch.randn(E) * 0.1).to(dt)
                x = x0.clone().requires_grad_(True)
                y, e, out = torch_npu.npu_moe_gating_top_k(x, k, bias=bias, k_group=kg, group_count=G,
                                                           group_select_mode=1, norm_type=norm,
                                                           routed_scaling_factor=2.0, eps=1e-20)
                w = torch.randn(12, k)
                (y.float() * w).sum().backward()
                # float64 autograd through the reference at moefr's picks
                x64 = x0.double().requires_grad_(True)
                s = torch.sigmoid(x64) if norm == 1 else torch.softmax(x64, -1)
                ys = s.gather(1, e.long())
                if norm == 1:
                    ys = ys / (ys.sum(1, keepdim=True) + 1e-20)
                (ys * 2.0 * w.double()).sum().backward()
                err = (x.grad.double() - x64.grad).abs().max().item()
                self.assertLessEqual(err, 1e-5 if dt == torch.float32 else 3e-2 * x64.grad.abs().max().item(),
                                     (norm, dt))
                self.assertEqual(x.grad.dtype, dt)

    def test_backward_function(self):
        # torch_npu's own test: sigmoid scores, normalised top-k, scaled; x_norm = sigmoid(logits)
        M, N, K = 64, 48, 6
        logits = torch.randn(M, N)
        bias = torch.randn(N) * 0.1
        g = torch.randn(M, K)
        idx = torch.topk(torch.sigmoid(logits) + bias, K, dim=1).indices
        xn = torch.sigmoid(logits)
        got = torch_npu.npu_moe_gating_top_k_backward(xn, g, idx.int(), renorm=0, norm_type=1,
                                                      routed_scaling_factor=1.7, eps=1e-20)
        x64 = logits.double().requires_grad_(True)
        sc = torch.sigmoid(x64).gather(1, idx)
        ((sc / (sc.sum(1, keepdim=True) + 1e-20)) * 1.7 * g.double()).sum().backward()
        self.assertLessEqual((got.double() - x64.grad).abs().max().item(), 1e-5)
        self.assertEqual(got.shape, xn.shape)

    def test_errors(self):
        x = torch.randn(4, 64)
        with self.assertRaises(ValueError):
            torch_npu.npu_moe_gating_top_k(x, 8, bias=torch.randn(64).half())
        with self.assertRaises(ValueError):
            torch_npu.npu_moe_gating_top_k(x[0], 8)
        with self.assertRaises(NotImplementedError):
            torch_npu.npu_moe_gating_top_k(x, 8, input_ids=torch.zeros(4, dtype=torch.int32),
                                           tid2eid=torch.zeros(4, 8, dtype=torch.int32))
        with self.assertRaises(MoefrError) as cm:  # k_group > group_count: CANN's tiling check (561002)
            torch_npu.npu_moe_gating_top_k(x, 8, k_group=9, group_count=8)
        self.assertIn("kGroup", str(cm.exception))
        with self.assertRaises(MoefrError):
            torch_npu.npu_moe_gating_top_k(x, 8, renorm=1)


class FusedTopk(unittest.TestCase):
    def test_grid_exact(self):
        for it in range(60):
            p = problem(fused=True)
            dt = RNG.choice(DTS)
            R = RNG.randint(1, 30)
            x = grid_x(R, p["E"], dt, 1)
            add = torch.full((p["E"],), 0.5 if RNG.random() < 0.5 else 0.0, dtype=dt)
            is_norm = RNG.random() < 0.5
            scale = RNG.choice([1.0, 2.5])
            mapping = RNG.random() < 0.4
            mn = mt = None
            if mapping:
                tdim = RNG.randint(1, 5)
                mn = torch.randint(0, tdim + 1, (p["E"],), dtype=torch.int32)
                mt = torch.randint(0, 1000, (p["E"], tdim), dtype=torch.int32)
            y, idx = _routing.fused_topk(x, add, mn, mt, p["G"], p["kg"], p["tn"], p["k"], 0, is_norm, scale,
                                         mapping)
            ry, rp, _ = ref(x, add, p["k"], p["kg"], p["G"], 0, 1, scale, 0.0, fused=True, top_n=p["tn"],
                            is_norm=is_norm)
            if mapping:
                rows = torch.arange(R).reshape(R, 1).expand(R, p["k"])
                m = mn.long()[rp]
                off = torch.where(m == 0, torch.zeros_like(rows), rows % m.clamp_min(1))
                rp = mt.long()[rp, off]
            self.assertEqual(y.dtype, torch.float32)
            self.assertTrue(torch.equal(idx.long(), rp), (it, p, dt, mapping))
            self.assertLessEqual(((y.double() - ry).abs() / ry.abs().clamp_min(1e-30)).max().item(), 2e-6)

    def test_unkept_groups_at_zero(self):
        # a negative addNum: the kept groups' b < 0, the unkept experts' b * 0 = 0 win (the kernel's mask)
        x = torch.zeros(1, 8)
        add = torch.full((8,), -2.0)
        y, idx = _routing.fused_topk(x, add, None, None, 4, 1, 2, 3, 0, False, 1.0, False)
        self.assertEqual(idx.tolist(), [[2, 3, 4]])  # group 0 kept; then the lowest unkept experts

    def test_mapping_out_of_table(self):
        x = torch.randn(6, 8)
        mn = torch.full((8,), 5, dtype=torch.int32)  # 5 > 3 columns: rows 3, 4 read outside
        mt = torch.zeros(8, 3, dtype=torch.int32)
        with self.assertRaises(MoefrError):
            _routing.fused_topk(x, torch.zeros(8), mn, mt, 2, 1, 2, 2, 0, True, 1.0, True)


if __name__ == "__main__":
    unittest.main(verbosity=2)
