"""test_torch_npu_gmm - moefr.torch_npu.npu_grouped_matmul against float64 references (SPEC 10: per group
y = x_g @ w_g + b_g, one rounding): one x split in M (cumulative and count group lists, empty groups, a
total short of x's rows), one (E, K, N) weight or a list, transposed weights, the K split, group_type -1
lists, the .List overload (V1); gradients (x, weight, bias) against float64 autograd; the errors torch_npu
raises. Run twice by CTest: with the default Ascend 950 rules (fp16, bf16) and MOEFR_SOC=ascend910b
(fp32 too)."""

import gc
import os
import random
import threading
import unittest

import torch

import moefr_testlib as tl
from moefr import _routing, torch_npu

_routing.POISON_OUTPUTS = True
RNG = random.Random(tl.SEED)
torch.manual_seed(tl.SEED)
A2 = os.environ.get("MOEFR_SOC") == "ascend910b"
DTYPES = [torch.float16, torch.bfloat16] + ([torch.float32] if A2 else [])
ULP = {torch.float32: 2.0 ** -24, torch.float16: 2.0 ** -11, torch.bfloat16: 2.0 ** -8}
SUB = {torch.float32: 2.0 ** -149, torch.float16: 2.0 ** -24, torch.bfloat16: 2.0 ** -133}  # subnormal spacing


def bias_dtype(dt):
    return torch.float32 if dt == torch.bfloat16 else dt


def check(test, got, want, mag, K, dt, what):
    """|got - want| <= (K + 2) 2^-24 mag (fp32 sums) + one rounding of dt at |want| (subnormals included)."""
    if got.numel() == 0:
        return
    tol = (K + 2) * 2.0 ** -24 * mag + torch.clamp(ULP[dt] * want.abs(), min=SUB[dt])
    err = (got.double() - want).abs()
    bad = err > tol
    test.assertFalse(bool(bad.any()), "%s: max err %g (tol there %g)" % (
        what, float(err.max()), float(tol.flatten()[int(torch.argmax(err.flatten() - tol.flatten()))])))


def groups(E, total, counts_type):
    sizes = [RNG.choice([0, RNG.randint(0, 9), RNG.randint(0, 40)]) for _ in range(E)]
    s = sum(sizes)
    gl = torch.tensor(sizes if counts_type else list(torch.cumsum(torch.tensor(sizes), 0)), dtype=torch.int64)
    return sizes, gl, s


class GroupedMatmul(unittest.TestCase):
    def test_m_split_forward_and_grad(self):
        for _ in range(24):
            dt = RNG.choice(DTYPES)
            E, K, N = RNG.randint(1, 6), RNG.randint(1, 48), RNG.randint(1, 40)
            glt = RNG.randint(0, 1)
            sizes, gl, total = groups(E, 0, glt)
            M = total + RNG.choice([0, 0, 3])
            multi = RNG.random() < 0.4
            trans = RNG.random() < 0.3
            x = torch.randn(M, K).to(dt).requires_grad_()
            if multi:
                ws = [(torch.randn(N, K).to(dt).t() if trans else torch.randn(K, N).to(dt)).requires_grad_()
                      for _ in range(E)]
            else:
                w = torch.randn(E, N, K).to(dt).transpose(1, 2) if trans else torch.randn(E, K, N).to(dt)
                ws = [w.requires_grad_()]
            use_bias = RNG.random() < 0.5
            bs = ([torch.randn(N).to(bias_dtype(dt)).requires_grad_() for _ in range(E)] if multi else
                  [torch.randn(E, N).to(bias_dtype(dt)).requires_grad_()]) if use_bias else None
            y = torch_npu.npu_grouped_matmul([x], ws, bias=bs, group_list=gl, split_item=RNG.choice([2, 3]),
                                             group_type=0, group_list_type=glt)[0]
            self.assertEqual(tuple(y.shape), (M, N))
            # float64 reference
            x64 = x.detach().double().requires_grad_()
            w64 = [w.detach().double().requires_grad_() for w in ws]
            b64 = [b.detach().double().requires_grad_() for b in bs] if bs else None
            outs, mags, r = [], [], 0
            for e in range(E):
                we = w64[e] if multi else w64[0][e]
                xe = x64[r:r + sizes[e]]
                o = xe @ we
                m = xe.abs() @ we.abs()
                if bs:
                    be = b64[e] if multi else b64[0][e]
                    o, m = o + be, m + be.abs()
                outs.append(o)
                mags.append(m.detach())
                r += sizes[e]
            ref = torch.cat(outs) if outs else torch.zeros(0, N, dtype=torch.float64)
            mag = torch.cat(mags) if mags else torch.zeros(0, N, dtype=torch.float64)
            check(self, y[:total].detach(), ref.detach(), mag, K, dt, "m split forward %s" % dt)
            g = torch.randn(M, N).to(dt)
            y.backward(g)
            ref.backward(g[:total].double())
            gmag = g[:total].double().abs()
            # dx = g @ w^T over each group's rows; rows past the total get 0
            dxm = torch.zeros(M, K, dtype=torch.float64)
            r = 0
            for e in range(E):
                we = (w64[e] if multi else w64[0][e]).detach()
                dxm[r:r + sizes[e]] = gmag[r:r + sizes[e]] @ we.abs().t()
                r += sizes[e]
            check(self, x.grad, x64.grad, dxm, N, dt, "m split dx %s" % dt)
            for i, w in enumerate(ws):
                wm = []
                r = 0
                for e in range(E):
                    wm.append(x64[r:r + sizes[e]].detach().abs().t() @ gmag[r:r + sizes[e]])
                    r += sizes[e]
                wmag = wm[i] if multi else torch.stack(wm)
                check(self, w.grad, w64[i].grad, wmag, max(total, 1), dt, "m split dw %s" % dt)
            if bs:
                for b, b64i in zip(bs, b64):
                    check(self, b.grad, b64i.grad, b64i.grad.abs() + 1, max(total, 1), dt, "m split dbias")

    def test_k_split(self):
        for _ in range(8):
            dt = RNG.choice(DTYPES)
            E, M, N = RNG.randint(1, 5), RNG.randint(1, 30), RNG.randint(1, 30)
            sizes, gl, K = groups(E, 0, 0)
            x = torch.randn(K, M).to(dt)  # x^T of a (K, M) activation: the K split's x is a transposed view
            w = torch.randn(K, N).to(dt)
            (y,) = torch_npu.npu_grouped_matmul([x.t()], [w], group_list=gl, split_item=3, group_type=2)
            self.assertEqual(tuple(y.shape), (E, M, N))
            if K == 0:  # every x empty: CANN launches nothing and out is not written
                continue
            r = 0
            for e in range(E):
                xe, we = x[r:r + sizes[e]].double(), w[r:r + sizes[e]].double()
                check(self, y[e], xe.t() @ we, xe.abs().t() @ we.abs(), max(sizes[e], 1), dt, "k split")
                r += sizes[e]

    def test_workspace_kept_grown_and_released(self):
        """moefr._lib keeps one workspace per thread (as torch_npu's caching allocator would):
        reused while big enough, replaced by a bigger one when a call needs more, every
        result still right; a thread's buffer is freed when the thread ends."""
        from moefr import _lib
        dt = DTYPES[-1]
        released = []
        release = _lib._Workspace.release

        def counting(ws):
            if ws.ptr is not None:
                released.append(ws.size)
            release(ws)

        def call(M, K, N, E):
            sizes = [M // E] * (E - 1) + [M - (M // E) * (E - 1)]
            x, w = torch.randn(M, K).to(dt), torch.randn(E, K, N).to(dt)
            (y,) = torch_npu.npu_grouped_matmul([x], [w], group_list=torch.tensor(sizes), split_item=3,
                                                group_type=0, group_list_type=1)
            r = 0
            for e in range(E):
                xe, we = x[r:r + sizes[e]].double(), w[e].double()
                check(self, y[r:r + sizes[e]], xe @ we, xe.abs() @ we.abs(), K, dt, "workspace case")
                r += sizes[e]

        lib = _lib.library()
        malloc, allocs = lib.aclrtMalloc, []

        def counting_malloc(*args):
            allocs.append(args[1])
            return malloc(*args)

        _lib._Workspace.release = counting
        lib.aclrtMalloc = counting_malloc
        try:
            call(37, 29, 23, 3)
            first = _lib._tls.ws.size
            self.assertGreater(first, 0)
            del allocs[:]
            call(37, 29, 23, 3)
            self.assertEqual(allocs, [])  # kept: no new allocation
            call(1500, 300, 700, 2)  # needs more: replaced
            self.assertGreater(_lib._tls.ws.size, first)
            self.assertEqual((released, allocs), ([first], [_lib._tls.ws.size]))
            call(37, 29, 23, 3)  # smaller again: the big one serves
            self.assertEqual(len(allocs), 1)
            released.clear()
            t = threading.Thread(target=call, args=(41, 17, 13, 4))
            t.start()
            t.join()
            gc.collect()
            self.assertEqual(len(released), 1)  # the thread's own, freed with the thread
        finally:
            _lib._Workspace.release = release
            lib.aclrtMalloc = malloc

    def test_no_split_lists_and_grad(self):
        for _ in range(8):
            dt = RNG.choice(DTYPES)
            n = RNG.randint(1, 3)
            xs, ws = [], []
            for _ in range(n):
                K, N = RNG.randint(1, 20), RNG.randint(1, 20)
                shape = (RNG.randint(0, 9), K) if RNG.random() < 0.7 else (2, RNG.randint(1, 5), K)
                xs.append(torch.randn(shape).to(dt).requires_grad_())
                ws.append(torch.randn(K, N).to(dt).requires_grad_())
            ys = torch_npu.npu_grouped_matmul(xs, ws, split_item=0, group_type=-1)
            self.assertEqual(len(ys), n)
            loss = sum((y.float() * (i + 1)).sum() for i, y in enumerate(ys))
            loss.backward()
            for i in range(n):
                x64, w64 = xs[i].detach().double(), ws[i].detach().double()
                K = x64.shape[-1]
                check(self, ys[i].detach(), x64 @ w64, x64.abs() @ w64.abs(), K, dt, "no split")
                gy = torch.full(ys[i].shape, float(i + 1), dtype=torch.float64)
                check(self, xs[i].grad, gy @ w64.t(), gy.abs() @ w64.abs().t(), w64.shape[1], dt, "no split dx")
                xf, gf = x64.reshape(-1, K), gy.reshape(-1, gy.shape[-1])
                check(self, ws[i].grad, xf.t() @ gf, xf.abs().t() @ gf.abs(), max(xf.shape[0], 1), dt,
                      "no split dw")

    def test_list_overload_v1(self):
        x = torch.randn(12, 8).half()
        ws = [torch.randn(8, 5).half() for _ in range(3)]
        (y,) = torch_npu.npu_grouped_matmul([x], ws, group_list=[4, 4, 12], split_item=2, group_type=0)
        ref = torch.cat([x[:4].double() @ ws[0].double(), x[4:12].double() @ ws[2].double()])
        check(self, y, ref, ref.abs() + 1, 8, torch.float16, "V1 list")

    def test_torch_npu_errors(self):
        x, w = torch.randn(4, 3).half(), torch.randn(2, 3, 5).half()
        gl = torch.tensor([2, 4])
        with self.assertRaisesRegex(RuntimeError, "Requires manual passing group_type"):
            torch_npu.npu_grouped_matmul([x], [w], group_list=gl, split_item=3)
        for gt in (1, 3, 100):
            with self.assertRaisesRegex(RuntimeError, "The group type must be"):
                torch_npu.npu_grouped_matmul([x], [w], group_list=gl, split_item=3, group_type=gt)
        with self.assertRaises(RuntimeError):
            torch_npu.npu_grouped_matmul([], [], group_type=0)
        with self.assertRaisesRegex(RuntimeError, "quantized"):
            torch_npu.npu_grouped_matmul([x], [w], scale=[torch.ones(5)], group_list=gl, split_item=3, group_type=0)
        with self.assertRaises(torch_npu.MoefrError):  # the library: a decreasing cumulative list
            torch_npu.npu_grouped_matmul([x], [w], group_list=torch.tensor([3, 2]), split_item=3, group_type=0)
        with self.assertRaises(RuntimeError):  # torch_npu raises RuntimeError: MoefrError is one
            torch_npu.npu_grouped_matmul([x], [w], group_list=torch.tensor([3, 2]), split_item=3, group_type=0)
        self.assertTrue(issubclass(torch_npu.MoefrError, ValueError) and issubclass(torch_npu.MoefrError, RuntimeError))
        if not A2:
            with self.assertRaisesRegex(torch_npu.MoefrError, "FLOAT32"):
                torch_npu.npu_grouped_matmul([x.float()], [w.float()], group_list=gl, split_item=3, group_type=0)


if __name__ == "__main__":
    unittest.main(verbosity=2)
