"""test_torch_npu_gmm_add - moefr.torch_npu.npu_grouped_matmul_add_ against a float64 reference (SPEC 11:
self[i] += x[k0:k1]^T @ weight[k0:k1] per group of x's rows): a random initial self (so overwriting
instead of adding fails), fp16 and bf16, cumulative and count group lists with empty groups and a total
short of K, M and N off any tile width, x as a transposed view; the call returns self itself; refusals
(MoefrError, a RuntimeError) leave self's values. Run by CTest with the default Ascend 950 rules and with
MOEFR_SOC=ascend910b (torch_npu then calls aclnnGroupedMatmulAdd V1: the list is read as cumulative
ends and a 2-D self of g*M*N floats works)."""

import os
import random
import unittest

import torch

import moefr_testlib as tl
from moefr import torch_npu

RNG = random.Random(tl.SEED)
torch.manual_seed(tl.SEED)
A2 = os.environ.get("MOEFR_SOC") == "ascend910b"


def groups(E, K, counts):
    sizes, left = [], K
    for _ in range(E):
        g = 0 if RNG.random() < 0.25 else RNG.randint(0, min(left, 2 * K // E + 1))
        sizes.append(g)
        left -= g
    ends = [sum(sizes[:i + 1]) for i in range(E)]
    return sizes, torch.tensor(sizes if counts else ends, dtype=torch.int64)


def reference(y0, x, w, sizes):
    out, k0 = y0.double().clone().reshape(len(sizes), x.shape[1], w.shape[1]), 0
    for i, g in enumerate(sizes):
        out[i] += x[k0:k0 + g].double().t() @ w[k0:k0 + g].double()
        k0 += g
    return out


def bound(y0, x, w, sizes):
    b, k0 = y0.double().abs().clone().reshape(len(sizes), x.shape[1], w.shape[1]), 0
    for i, g in enumerate(sizes):
        b[i] = (g + 2) * 2.0 ** -24 * (b[i] + x[k0:k0 + g].double().abs().t() @ w[k0:k0 + g].double().abs())
        k0 += g
    return b


class GroupedMatmulAdd(unittest.TestCase):
    def test_accumulates(self):
        for _ in range(30):
            dt = RNG.choice([torch.float16, torch.bfloat16])
            E, K = RNG.randint(1, 5), RNG.choice([RNG.randint(0, 8), RNG.randint(9, 300)])
            M, N = RNG.randint(1, 70), RNG.randint(1, 90)
            counts = (not A2) and RNG.random() < 0.5
            sizes, gl = groups(E, K, counts)
            x = torch.randn(M, K).to(dt).t() if RNG.random() < 0.3 else torch.randn(K, M).to(dt)  # (K, M)
            w = torch.randn(K, N).to(dt)
            y = torch.randn(E * M, N) if A2 and RNG.random() < 0.3 else torch.randn(E, M, N)
            y0 = y.clone()
            out = torch_npu.npu_grouped_matmul_add_(y, x, w, gl, transpose_x=True, transpose_weight=False,
                                                    group_type=2, group_list_type=1 if counts else 0)
            self.assertIs(out, y)
            want = reference(y0, x, w, sizes)
            got = y.double().reshape(want.shape)
            err = (got - want).abs()
            self.assertTrue(bool((err <= bound(y0, x, w, sizes)).all()), "max err %g, %s E %d K %d M %d N %d" % (
                float(err.max()), dt, E, K, M, N))
            y0 = y0.reshape(want.shape)
            for i, g in enumerate(sizes):  # empty groups keep their values exactly
                if g == 0:
                    self.assertTrue(torch.equal(got[i].float(), y0[i]))

    def test_defaults_and_example(self):
        # torch_npu's documented example: x (512, 256), weight (512, 256), self (2, 256, 256), [256, 512]
        x, w = torch.randn(512, 256).bfloat16(), torch.randn(512, 256).bfloat16()
        y = torch.zeros(2, 256, 256)
        out = torch_npu.npu_grouped_matmul_add_(y, x, w, torch.tensor([256, 512]), transpose_x=True)
        self.assertIs(out, y)
        want = reference(torch.zeros(2, 256, 256), x, w, [256, 256])
        self.assertLess(float((y.double() - want).abs().max()), 1e-3)

    def test_refusals_leave_self(self):
        x, w, y = torch.randn(10, 4).half(), torch.randn(10, 3).half(), torch.randn(2, 4, 3)
        y0 = y.clone()
        bad = [
            dict(group_list=torch.tensor([6, 11])),                      # past K
            dict(group_list=torch.tensor([6, 4])),                       # descending ends
            dict(group_list=torch.tensor([6, 4]).int()),                 # INT32
            dict(group_list=torch.tensor([6, 10]), x=x.float()),         # FLOAT x
            dict(group_list=torch.tensor([6, 10]), w=w.bfloat16()),      # weight dtype differs
            dict(group_list=torch.tensor([6, 10]), y=y.half()),          # self FLOAT16
        ]
        if not A2:
            bad += [dict(group_list=torch.tensor([6, 10]), kw=dict(transpose_x=False)),
                    dict(group_list=torch.tensor([6, 10]), kw=dict(group_list_type=2)),
                    dict(group_list=torch.tensor([6, 10]), y=y.reshape(8, 3))]
        for case in bad:
            target = case.get("y", y)
            before = target.clone()
            with self.assertRaises(RuntimeError, msg=str(case)):
                torch_npu.npu_grouped_matmul_add_(target, case.get("x", x), case.get("w", w), case["group_list"],
                                                  **case.get("kw", {}))
            self.assertTrue(torch.equal(target, before), str(case))
        self.assertTrue(torch.equal(y, y0))


if __name__ == "__main__":
    unittest.main(verbosity=2)
