"""test_torch_npu_mlp - moefr.torch_npu.npu_swiglu and its backward against float64 autograd
(SPEC 10: x split in halves A, B along dim; silu(A) * B). Every dtype, every dim of 1-4-dim x
(negative dims too), non-contiguous inputs, odd half sizes; the errors torch_npu code meets."""

import random
import unittest

import torch

import moefr_testlib as tl
from moefr import _routing, torch_npu

_routing.POISON_OUTPUTS = True
RNG = random.Random(tl.SEED)
torch.manual_seed(tl.SEED)

# one rounding of the output dtype plus the fp32 arithmetic, relative to the terms' size
TOL = {torch.float32: 4e-6, torch.float16: 1.5e-3, torch.bfloat16: 1e-2}


def ref(x, dim, g):
    x64 = x.detach().double().requires_grad_()
    a, b = x64.chunk(2, dim)
    y = torch.nn.functional.silu(a) * b
    y.backward(g.double())
    return y.detach(), x64.grad


def close(got, want, dt, scale):
    err = (got.double() - want).abs()
    return bool((err <= TOL[dt] * (scale + 1)).all()), float(err.max()) if err.numel() else 0.0


class SwiGlu(unittest.TestCase):
    def test_forward_backward(self):
        for _ in range(40):
            nd = RNG.randint(1, 4)
            shape = [RNG.randint(1, 5) for _ in range(nd)]
            d = RNG.randrange(nd)
            shape[d] = 2 * RNG.choice([1, 3, 7, 9, 33, 513])
            dim = d - nd if RNG.random() < 0.5 else d
            dt = RNG.choice([torch.float32, torch.float16, torch.bfloat16])
            x = (torch.randn(shape, dtype=torch.float64) * 3).to(dt)
            if nd >= 2 and RNG.random() < 0.4:  # a non-contiguous view with the same values
                x = x.transpose(0, -1).contiguous().transpose(0, -1)
            x.requires_grad_()
            y = torch_npu.npu_swiglu(x, dim=dim)
            g = torch.randn(y.shape, dtype=torch.float64).to(dt)
            y.backward(g)
            want_y, want_gx = ref(x, dim, g)
            self.assertEqual(y.dtype, dt)
            self.assertEqual(tuple(y.shape), tuple(want_y.shape))
            ok, err = close(y, want_y, dt, want_y.abs())
            self.assertTrue(ok, "forward %s dim %d %s: max err %g" % (shape, dim, dt, err))
            a, b = x.detach().double().chunk(2, dim)
            gb = torch.cat([g.double(), g.double()], dim)
            scale = (gb * torch.cat([b * (1 + a.abs()), a], dim)).abs()
            ok, err = close(x.grad, want_gx, dt, scale)
            self.assertTrue(ok, "backward %s dim %d %s: max err %g" % (shape, dim, dt, err))

    def test_default_dim_and_backward_function(self):
        x = torch.randn(3, 8)
        a, b = x.chunk(2, -1)
        y = torch_npu.npu_swiglu(x)
        self.assertTrue(torch.allclose(y, torch.nn.functional.silu(a) * b, atol=1e-6))
        g = torch.randn(3, 4)
        gx = torch_npu.npu_swiglu_backward(g, x)
        x64 = x.double().requires_grad_()
        a64, b64 = x64.chunk(2, -1)
        (torch.nn.functional.silu(a64) * b64).backward(g.double())
        self.assertTrue(torch.allclose(gx.double(), x64.grad, atol=1e-5))

    def test_errors(self):
        with self.assertRaises(torch_npu.MoefrError):
            torch_npu.npu_swiglu(torch.randn(3, 5))  # odd split size
        with self.assertRaises(torch_npu.MoefrError):
            torch_npu.npu_swiglu(torch.randn(3, 4), dim=2)  # dim out of range
        with self.assertRaises(torch_npu.MoefrError):
            torch_npu.npu_swiglu(torch.randn(3, 4, dtype=torch.float64))  # not in the dtype table


if __name__ == "__main__":
    unittest.main(verbosity=2)
