"""test_torch_npu_dequant_swiglu_quant - moefr.torch_npu.npu_dequant_swiglu_quant against an independent
numpy reference of ops-nn's DequantSwigluQuant kernels (numpy float32 operations in the kernels' order:
int32 bias added in int32, the cast, * weight_scale, * activation_scale, + float bias; silu as
a / (exp(-a) + 1) with exp rounded once to float32; the clamped variant for swiglu_mode 1 (odd / even
pairs) and 2 (halves); * quant_scale (dynamic) or / quant_scale + quant_offset (static; A2's one-element
scale as * (1 / scale)); scale = max|v| / 127, y = rint(v / scale) (A2 without groups: v * (1 / scale); A2 grouped: max * fp32(1/127)); NaN -> 0,
clipped to int8). Groups by counts with empty groups and uncounted rows (zeros), op-plugin's argument
checks, and its version choice. Runs on both PyTorch versions and both rule sets (CTest)."""

import os
import random
import unittest

import numpy as np
import torch

import moefr_testlib as tl
from moefr import torch_npu

RNG = random.Random(tl.SEED)
torch.manual_seed(tl.SEED)
A2 = os.environ.get("MOEFR_SOC") == "ascend910b"
F = np.float32


def ref(x, ws=None, act=None, bias=None, qs=None, qo=None, gi=None, left=False, dynamic=True, mode=0,
        clamp=7.0, alpha=1.702, gbias=1.0):
    H2 = x.shape[-1]
    H = H2 // 2
    X = x.reshape(-1, H2)
    R = X.shape[0]
    if gi is None:
        groups = np.zeros(R, np.int64)
        counted = R
    else:
        c = gi.numpy().astype(np.int64)
        groups = np.repeat(np.arange(len(c)), c)
        counted = int(c.sum())
    y = np.zeros((R, H), np.int8)
    sc = np.zeros(R, F)

    def row_of(t, g, n):
        if t is None:
            return None
        a = t.float().numpy().astype(F) if t.dtype != torch.int32 else t.numpy()
        a = a.reshape(-1)
        if a.size == n:
            return a
        if a.size == 1:
            return np.full(n, a[0], a.dtype)
        return a.reshape(-1, n)[g]

    with np.errstate(all="ignore"):
        for r in range(counted):
            g = groups[r] if gi is not None else 0
            if x.dtype == torch.int32:
                v = X[r].numpy().astype(np.int64)
                b = row_of(bias, g, H2)
                if bias is not None and bias.dtype == torch.int32:
                    v = ((v + b.astype(np.int64) + 2 ** 31) % 2 ** 32) - 2 ** 31
                f = v.astype(F) * row_of(ws, g, H2)
                if act is not None:
                    f = f * F(act.reshape(-1)[r].item())
                if bias is not None and bias.dtype != torch.int32:
                    f = f + b
            else:
                f = X[r].float().numpy().astype(F)
            if mode == 1:
                a, b_ = f[0::2], f[1::2]
            else:
                a, b_ = (f[:H], f[H:]) if left else (f[H:], f[:H])
            if mode == 0:
                e = np.exp(-a.astype(np.float64)).astype(F)
                s = a / (e + F(1)) * b_
            else:
                a = np.where(a < F(clamp), a, F(clamp))
                e = np.exp((a * F(-F(alpha))).astype(np.float64)).astype(F)
                sa = a / (e + F(1))
                b_ = np.where(b_ < F(clamp), b_, F(clamp))
                b_ = np.where(b_ > F(-F(clamp)), b_, F(-F(clamp)))
                s = sa * (b_ + F(gbias))
            if qs is not None:
                q = row_of(qs, g, H)
                if dynamic:
                    s = s * q
                elif A2 and qs.numel() == (1 if gi is None else len(gi)):
                    k1 = F(1) if gi is not None and q[0] == 0 else F(1) / q
                    s = s * k1 + row_of(qo, g, H)
                else:
                    s = s / q
                    if qo is not None:
                        s = s + row_of(qo, g, H)
            if dynamic:
                m = F(np.max(np.where(np.isnan(s), F(0), np.abs(s)), initial=F(0)))
                grouped_a2 = A2 and gi is not None  # A2/A3's grouped kernel: max * fp32(1/127), then v / scale
                k = m * F(1.0 / 127.0) if grouped_a2 else m / F(127)
                sc[r] = k
                s = s * (F(1) / k) if A2 and not grouped_a2 else s / k
            s = np.where(np.isnan(s), F(0), s)
            y[r] = np.rint(np.clip(s, -128, 127)).astype(np.int8)
    return y.reshape(x.shape[:-1] + (H,)), sc.reshape(x.shape[:-1])


class DequantSwigluQuant(unittest.TestCase):
    def check(self, x, **kw):
        y, s = torch_npu.npu_dequant_swiglu_quant(x, **kw)
        names = dict(weight_scale="ws", activation_scale="act", bias="bias", quant_scale="qs",
                     quant_offset="qo", group_index="gi", activate_left="left", swiglu_mode="mode",
                     clamp_limit="clamp", glu_alpha="alpha", glu_bias="gbias")
        rk = {names[k]: v for k, v in kw.items() if k in names}
        rk["dynamic"] = kw.get("quant_mode", 0) == 1
        wy, ws = ref(x, **rk)
        self.assertEqual(y.dtype, torch.int8)
        self.assertEqual(s.dtype, torch.float32)
        self.assertEqual(tuple(y.shape), x.shape[:-1] + (x.shape[-1] // 2,))
        np.testing.assert_array_equal(y.numpy(), wy)
        if rk["dynamic"]:
            np.testing.assert_array_equal(s.numpy().view(np.int32), ws.view(np.int32))
        else:
            self.assertTrue(bool((s == 0).all()))  # not written by the operator: zeros here
        return y, s

    def test_int32_dynamic(self):
        for H in (1, 3, 17, 96, 300):
            for left in (False, True):
                R = RNG.randint(1, 9)
                x = torch.randint(-4000, 4000, (R, 2 * H), dtype=torch.int32)
                x[0] = 0  # an all-zero row
                kw = dict(weight_scale=torch.rand(2 * H) * 0.01, quant_mode=1, activate_left=left)
                if RNG.random() < 0.7:
                    kw["activation_scale"] = torch.rand(R) + 0.5
                bdt = RNG.choice([None, torch.float32, torch.float16, torch.bfloat16, torch.int32])
                if bdt is torch.int32:
                    kw["bias"] = torch.randint(-300, 300, (2 * H,), dtype=torch.int32)
                elif bdt is not None:
                    kw["bias"] = (torch.rand(2 * H) * 4 - 2).to(bdt)
                if RNG.random() < 0.6:
                    kw["quant_scale"] = torch.rand(H) + 0.5
                self.check(x, **kw)

    def test_float_static_and_ties(self):
        for dt in (torch.float16, torch.bfloat16):
            H = 33
            x = (torch.randn(4, 3, 2 * H) * 3).to(dt)
            self.check(x, quant_scale=torch.rand(H) * 0.1 + 0.01, quant_offset=torch.rand(H) * 4 - 2)
            self.check(x, quant_scale=torch.tensor([0.05]), quant_offset=torch.tensor([0.5]))
        # silu(32) == 32 in float32; with a scale of 32 the value is b: ties k + 0.5 go to even,
        # and the ends saturate at -128 and 127
        H = 280
        b = torch.arange(H, dtype=torch.float32) - 140 + 0.5
        x = torch.cat([torch.full((2, H), 32.0), b.expand(2, H)], 1).half()
        y, _ = self.check(x, quant_scale=torch.tensor([32.0]), quant_offset=torch.tensor([0.0]), activate_left=True)
        t = torch.arange(H) - 140
        want = torch.where(t % 2 == 0, t, t + 1).clamp(-128, 127)
        self.assertTrue(torch.equal(y[0].long(), want))

    def test_special_rows(self):
        x = torch.randn(4, 20).bfloat16()
        x[1] = 0
        x[2, 3] = float("nan")
        x[3, 15] = float("inf")
        self.check(x, quant_mode=1)

    def test_groups(self):
        H = 64 if A2 else 20
        G = 4
        counts = torch.tensor([3, 0, 2, 1])  # an empty group; 2 of 8 rows uncounted
        x = torch.randint(-2000, 2000, (8, 2 * H), dtype=torch.int32)
        kw = dict(weight_scale=torch.rand(G, 2 * H) * 0.01, activation_scale=torch.rand(8) + 0.5,
                  bias=torch.rand(G, 2 * H), quant_scale=torch.rand(G, H) + 0.5, group_index=counts, quant_mode=1)
        y, s = self.check(x, **kw)
        self.assertTrue(bool((y[6:] == 0).all()) and bool((s[6:] == 0).all()))
        kw2 = dict(weight_scale=kw["weight_scale"], group_index=counts, quant_scale=torch.rand(G, H) * 0.1 + 0.01,
                   quant_offset=torch.rand(G, H))
        self.check(x, **kw2)
        if A2:
            for mode in (1, 2):
                self.check(x, **dict(kw, swiglu_mode=mode, clamp_limit=3.0, glu_alpha=1.5, glu_bias=0.5))
        else:
            self.check(x, **dict(kw, swiglu_mode=1, clamp_limit=3.0, glu_alpha=1.5, glu_bias=0.5, round_mode=0))

    def test_checks(self):
        x = torch.randn(4, 8).half()
        for bad in (dict(quant_mode=2), dict(swiglu_mode=3), dict(clamp_limit=0.0), dict(glu_alpha=float("inf")),
                    dict(glu_bias=float("nan"))):
            with self.assertRaises(RuntimeError):
                torch_npu.npu_dequant_swiglu_quant(x, **dict(dict(quant_mode=1), **bad))
        with self.assertRaises(RuntimeError):
            torch_npu.npu_dequant_swiglu_quant(torch.randn(8).half(), quant_mode=1)
        with self.assertRaises(RuntimeError):
            torch_npu.npu_dequant_swiglu_quant(torch.randn(4, 7).half(), quant_mode=1)
        if not A2:
            with self.assertRaises(RuntimeError):  # moefr implements int8 only
                torch_npu.npu_dequant_swiglu_quant(x, quant_mode=1, dst_type=291)
            with self.assertRaises(RuntimeError):  # the library's refusal: INT32 x needs a weight scale
                torch_npu.npu_dequant_swiglu_quant(torch.zeros(4, 8, dtype=torch.int32), quant_mode=1)


if __name__ == "__main__":
    unittest.main()
