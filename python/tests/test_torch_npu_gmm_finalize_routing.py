"""test_torch_npu_gmm_finalize_routing - moefr.torch_npu.npu_grouped_matmul_finalize_routing (the A8W8
rows, ND int8 weights) against an independent numpy reference of CANN's kernel
(ops-transformer gmm/grouped_matmul_finalize_routing, op_kernel/grouped_matmul_finalize_routing.h):
y = 0, rows [offset, offset + S) = float32(shared_input) * shared_input_weight; per row m of group g,
float32 steps (fp32(acc) * scale) * (logit * pertoken_scale) (+ logit * bias) added into y[row_index[m]]
in row order: compared bit for bit. Both group-list types, output_bs, empty groups, optional inputs,
op-plugin's meta shape, the wrapper's checks."""

import random
import unittest

import numpy as np
import torch

import moefr_testlib as tl
from moefr import MoefrError, torch_npu

RNG = random.Random(tl.SEED)
torch.manual_seed(tl.SEED)
f32 = np.float32


def ref(x, w, gl, scale, pt, logit, rows, bias, shared, sw, off, bs, list_type):
    x, w = x.numpy().astype(np.int64), w.numpy().astype(np.int64)
    s = scale.float().numpy().astype(f32)
    N = w.shape[2]
    y = np.zeros((bs, N), f32)
    if shared is not None:
        sh = shared.float().numpy().astype(f32)
        y[off:off + sh.shape[0]] = (sh * f32(sw)).astype(f32)
    ends = np.cumsum(gl.numpy()) if list_type == 1 else gl.numpy()
    lg = logit.numpy().astype(f32)
    k = (lg * pt.numpy().astype(f32)).astype(f32) if pt is not None else lg
    b = bias.float().numpy().astype(f32) if bias is not None else None
    prev = 0
    for g, end in enumerate(ends.tolist()):
        for m in range(prev, end):
            acc = (x[m] @ w[g]).astype(f32)
            v = ((acc * s[g]).astype(f32) * k[m]).astype(f32)
            if b is not None:
                v = (v + (lg[m] * b[g]).astype(f32)).astype(f32)
            r = int(rows[m])
            y[r] = (y[r] + v).astype(f32)
        prev = end
    return y


def problem(list_type=1, with_pt=True, with_bias=False, with_shared=False, bf16_scale=False, row32=False):
    E, M, K, N = RNG.randint(1, 4), RNG.randint(1, 30), 16 * RNG.randint(1, 3), 256 + 32 * RNG.randint(0, 2)
    x = torch.randint(-128, 128, (M, K), dtype=torch.int8)
    w = torch.randint(-128, 128, (E, K, N), dtype=torch.int8)
    sizes, left = [], M
    for _ in range(E):
        s = 0 if RNG.random() < 0.25 else RNG.randint(0, left)
        left -= s
        sizes.append(s)
    if RNG.random() < 0.5:
        sizes[-1] += left
    gl = torch.tensor(sizes if list_type == 1 else np.cumsum(sizes).tolist(), dtype=torch.int64)
    total = sum(sizes)
    bs = RNG.randint(1, M)
    rows = torch.tensor([RNG.randint(0, bs - 1) if m < total else 10 ** 9 for m in range(M)],
                        dtype=torch.int32 if row32 else torch.int64)
    scale = (torch.rand(E, N) - 0.5) * 0.01
    kw = dict(scale=scale.bfloat16() if bf16_scale else scale, logit=torch.rand(M), row_index=rows,
              group_list_type=list_type, output_bs=bs)
    if with_pt:
        kw["pertoken_scale"] = torch.rand(M) * 0.1
    if with_bias:
        kw["bias"] = ((torch.rand(E, N) - 0.5) * 4).bfloat16()
    if with_shared:
        off = RNG.randint(0, bs - 1)
        kw["shared_input"] = ((torch.rand(RNG.randint(1, bs - off), N) - 0.5) * 8).bfloat16()
        kw["shared_input_offset"] = off
        kw["shared_input_weight"] = RNG.random() * 2
    return x, w, gl, kw


class GroupedMatmulFinalizeRouting(unittest.TestCase):
    def test_random(self):
        for i in range(16):
            x, w, gl, kw = problem(list_type=i % 2, with_pt=i % 3 != 0, with_bias=i % 4 >= 2, with_shared=i % 5 < 3,
                                   bf16_scale=i % 3 == 1, row32=i % 2 == 1)
            y = torch_npu.npu_grouped_matmul_finalize_routing(x, w, gl, **kw)
            want = ref(x, w, gl, kw["scale"], kw.get("pertoken_scale"), kw["logit"], kw["row_index"],
                       kw.get("bias"), kw.get("shared_input"), kw.get("shared_input_weight", 1.0),
                       kw.get("shared_input_offset", 0), kw["output_bs"], kw["group_list_type"])
            self.assertEqual((y.shape, y.dtype), (torch.Size(want.shape), torch.float32))
            np.testing.assert_array_equal(y.numpy().view(np.uint32), want.view(np.uint32))

    def test_output_bs_default(self):
        x, w, gl, kw = problem()
        kw.pop("output_bs")
        kw["row_index"] = torch.arange(x.shape[0])
        y = torch_npu.npu_grouped_matmul_finalize_routing(x, w, gl, **kw)
        self.assertEqual(tuple(y.shape), (x.shape[0], w.shape[2]))

    def test_checks(self):
        x, w, gl, kw = problem()
        with self.assertRaisesRegex(RuntimeError, "group_list_type"):
            torch_npu.npu_grouped_matmul_finalize_routing(x, w, gl, **dict(kw, group_list_type=2))
        with self.assertRaisesRegex(RuntimeError, "A8W4"):
            torch_npu.npu_grouped_matmul_finalize_routing(x, w.view(torch.int32), gl, **kw)
        with self.assertRaisesRegex(RuntimeError, "dtype should be float"):
            torch_npu.npu_grouped_matmul_finalize_routing(x, w, gl, **dict(kw, dtype=torch.float16))
        with self.assertRaisesRegex(MoefrError, "logit is NULL"):
            torch_npu.npu_grouped_matmul_finalize_routing(x, w, gl, **dict(kw, logit=None))
        with self.assertRaisesRegex(MoefrError, "at least 256"):
            torch_npu.npu_grouped_matmul_finalize_routing(x, w[:, :, :128].contiguous(), gl,
                                                          **dict(kw, scale=kw["scale"][:, :128].contiguous()))
        rows = kw["row_index"].clone()
        rows[0] = kw["output_bs"]
        total = int(gl.sum()) if kw["group_list_type"] == 1 else int(gl[-1])
        if total > 0:
            with self.assertRaisesRegex(MoefrError, "outside out's"):
                torch_npu.npu_grouped_matmul_finalize_routing(x, w, gl, **dict(kw, row_index=rows))


if __name__ == "__main__":
    unittest.main()
