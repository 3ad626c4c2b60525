"""test_torch_npu_gmm_swiglu_quant - moefr.torch_npu.npu_grouped_matmul_swiglu_quant against an
independent numpy reference of CANN's kernel (ops-transformer gmm/grouped_matmul_swiglu_quant,
op_kernel/grouped_matmul_swiglu_quant.h): int64 sums, float32 products in the kernel's order
(fp32(acc) * x_scale, then * weight_scale), swish on the first half times the second, scale = max|s| /
127, s * (1 / scale) in float32, to float16 then int8 (both half to even). Swish goes through exp: in
the "exact" problems every act value is >= 20, where swish(a) == a in float32, and everything is
compared bit for bit; elsewhere the scale within 1e-5 relative and each int8 within rounding of s / scale
(and 99% of them equal). Also op-plugin's own golden (test_npu_grouped_matmul_swiglu_quant.py: round(s *
127 / max)) within one, the output shapes of op-plugin's meta, rows past group_list[-1] (zero here),
empty groups, short group lists, strided weights and the refusals."""

import random
import unittest

import numpy as np
import torch

import moefr_testlib as tl
from moefr import MoefrError, torch_npu

RNG = random.Random(tl.SEED)
torch.manual_seed(tl.SEED)


def ref(x, w, gl, ws, xs, exact):
    x, w = x.numpy().astype(np.int64), w.numpy().astype(np.int64)
    ws, xs = ws.float().numpy().astype(np.float32), xs.numpy().astype(np.float32)
    M, N = x.shape[0], w.shape[2]
    H = N // 2
    out, osc, smat = np.zeros((M, H), np.int8), np.zeros(M, np.float32), np.zeros((M, H), np.float64)
    prev = 0
    for g, end in enumerate(gl.tolist()):
        rows = slice(prev, end)
        acc = x[rows] @ w[g]
        c = (acc.astype(np.float32) * xs[rows, None]).astype(np.float32) * ws[g][None, :]
        c = c.astype(np.float32)
        a, b = c[:, :H], c[:, H:]
        with np.errstate(all="ignore"):
            if exact:
                s = (a * b).astype(np.float32)
            else:
                a64 = a.astype(np.float64)
                s = a64 / (1 + np.exp(-a64)) * b.astype(np.float64)
            mx = np.abs(s).max(axis=1) if H else np.zeros(end - prev)
            qs = (mx / 127.0).astype(np.float32)
            inv = (np.float32(1) / qs).astype(np.float32)
            v = (s * inv[:, None]).astype(np.float32)
            h = v.astype(np.float16).astype(np.float32)
            q = np.clip(np.where(np.isnan(h), 0, np.rint(h)), -128, 127).astype(np.int8)
        out[rows], osc[rows], smat[rows] = q, qs, s
        prev = end
    return out, osc, smat


def problem(exact, E=None, M=None, K=None, N=None, wdt=torch.float32, strided=False, short=False):
    E = E or RNG.randint(1, 5)
    M = RNG.randint(0, 40) if M is None else M
    K = K or RNG.randint(1, 150)
    N = N or 2 * RNG.randint(1, 70)
    H = N // 2
    if exact:
        x = torch.randint(1, 4, (M, K), dtype=torch.int8)
        w = torch.randint(-128, 128, (E, K, N), dtype=torch.int8)
        w[:, :, :H] = torch.randint(1, 4, (E, K, H), dtype=torch.int8)
        ws = torch.cat([20 + 8 * torch.rand(E, H), (torch.rand(E, H) - 0.5) * 0.5], dim=1).to(wdt)
        xs = 1 + torch.rand(M)
    else:
        x = torch.randint(-128, 128, (M, K), dtype=torch.int8)
        w = torch.randint(-128, 128, (E, K, N), dtype=torch.int8)
        ws = ((torch.rand(E, N) - 0.5) * 0.02).to(wdt)
        xs = (torch.rand(M) - 0.5) * 0.1
    if strided:  # (E, K, N) over (E, N, K) memory
        w = w.transpose(1, 2).contiguous().transpose(1, 2)
    L = RNG.randint(1, E) if short else E
    ends, left = [], M
    for _ in range(L):
        s = 0 if RNG.random() < 0.25 else RNG.randint(0, left)
        left -= s
        ends.append((ends[-1] if ends else 0) + s)
    if RNG.random() < 0.5:
        ends[-1] += left
    return x, w, torch.tensor(ends, dtype=torch.int64), ws, xs


class GroupedMatmulSwigluQuant(unittest.TestCase):
    def run_check(self, exact, **kw):
        x, w, gl, ws, xs = problem(exact, **kw)
        out, osc, off = torch_npu.npu_grouped_matmul_swiglu_quant(x, w, gl, ws, xs)
        M, N = x.shape[0], ws.shape[-1]
        self.assertEqual((out.shape, out.dtype), (torch.Size([M, N // 2]), torch.int8))
        self.assertEqual((osc.shape, osc.dtype), (torch.Size([M]), torch.float32))
        self.assertEqual((off.shape, off.dtype), (torch.Size([]), torch.float32))
        q, qs, s = ref(x, w, gl, ws, xs, exact)
        T = int(gl[-1])
        got, gs = out.numpy(), osc.numpy()
        self.assertTrue((got[T:] == 0).all() and (gs[T:] == 0).all(), "rows past group_list[-1] were written")
        if exact:
            np.testing.assert_array_equal(gs[:T].view(np.uint32), qs[:T].view(np.uint32))
            np.testing.assert_array_equal(got[:T], q[:T])
        else:
            mx = qs[:T].astype(np.float64)
            self.assertTrue((np.abs(gs[:T] - mx) <= 1e-5 * mx + 1e-30).all(), "output_scale off")
            with np.errstate(all="ignore"):
                v = np.where(gs[:T, None] > 0, s[:T] / gs[:T, None].astype(np.float64), 0)
            self.assertTrue((np.abs(got[:T] - v) <= 0.5 + 0.0313 + 1e-3 * np.abs(v)).all(), "int8 off")
            if got[:T].size:
                self.assertGreaterEqual((got[:T] == q[:T]).mean(), 0.99)
        return x, w, gl, ws, xs, out, osc

    def test_exact(self):
        for i in range(12):
            self.run_check(True, wdt=(torch.float32, torch.float16, torch.bfloat16)[i % 3], strided=i % 4 == 3,
                           short=i % 5 == 4)

    def test_random(self):
        for i in range(12):
            self.run_check(False, wdt=(torch.float32, torch.float16, torch.bfloat16)[i % 3], strided=i % 4 == 1,
                           short=i % 3 == 2)

    def test_op_plugin_golden(self):
        # op-plugin's golden (test_npu_grouped_matmul_swiglu_quant.py): torch ops, round(s * 127 / max)
        x, w, gl, ws, xs = problem(False, E=4, M=64, K=96, N=128)
        out, osc, _ = torch_npu.npu_grouped_matmul_swiglu_quant(x, w, gl, ws, xs)
        prev = 0
        for g, end in enumerate(gl.tolist()):
            if end > prev:
                c = torch.matmul(x[prev:end].to(torch.int32), w[g].to(torch.int32)).to(torch.float32)
                c = c * ws[g] * xs[prev:end].reshape(-1, 1)
                a, b = c.chunk(2, dim=-1)
                s = a * torch.sigmoid(a) * b
                k = 127 / torch.max(torch.abs(s), -1).values
                q = torch.round(s * k.reshape(-1, 1)).to(torch.int8)
                self.assertLessEqual((out[prev:end].int() - q.int()).abs().max().item(), 1)
                torch.testing.assert_close(osc[prev:end], 1 / k, rtol=1e-5, atol=0)
            prev = end

    def test_refusals(self):
        x, w, gl, ws, xs = problem(False, E=2, M=8, K=32, N=64)
        with self.assertRaisesRegex(MoefrError, "FRACTAL_NZ"):  # an NZ-shaped weight: not yet read
            torch_npu.npu_grouped_matmul_swiglu_quant(x, torch.zeros(2, 2, 2, 16, 32, dtype=torch.int8), gl, ws, xs)
        with self.assertRaisesRegex(MoefrError, "must not decrease"):
            torch_npu.npu_grouped_matmul_swiglu_quant(x, w, torch.tensor([8, 2]), ws, xs)
        with self.assertRaisesRegex(MoefrError, "beyond x's 8 rows"):
            torch_npu.npu_grouped_matmul_swiglu_quant(x, w, torch.tensor([2, 9]), ws, xs)
        with self.assertRaisesRegex(MoefrError, "more than weight's 2"):
            torch_npu.npu_grouped_matmul_swiglu_quant(x, w, torch.tensor([2, 4, 8]), ws, xs)
        with self.assertRaisesRegex(MoefrError, "not even"):
            torch_npu.npu_grouped_matmul_swiglu_quant(x, w[:, :, :63], gl, ws[:, :63], xs)
        with self.assertRaises((TypeError, RuntimeError)):  # the operator's own schema check on PyTorch 2
            torch_npu.npu_grouped_matmul_swiglu_quant(x.numpy(), w, gl, ws, xs)

    def test_empty(self):
        x, w, gl, ws, xs = problem(True, E=3, M=0, K=16, N=32)
        out, osc, off = torch_npu.npu_grouped_matmul_swiglu_quant(x, w, gl, ws, xs)
        self.assertEqual((tuple(out.shape), tuple(osc.shape), tuple(off.shape)), ((0, 16), (0,), ()))


if __name__ == "__main__":
    unittest.main()
