"""test_torch_npu_gmm_quant - moefr.torch_npu.npu_grouped_matmul's A8W8 rows (SPEC 11), as vllm-ascend's W8A8
MoE calls them (x int8 (M, K), weight int8 (E, K, N), count or cumulative group lists, split_item 2/3,
group_type 0), against a reference written here: int64 products summed exactly, taken mod 2^32, then
fp32(acc) * scale and * per_token_scale each rounded to fp32 (a product of two fp32 values is exact in
float64), then one rounding to the output dtype. output_dtype given as torch.int32 / torch.bfloat16 /
torch.float16 (what PyTorch makes of a dtype for op-plugin's `int? output_dtype`) and as torch_npu's dtype
constants; int32 bias; empty groups; rows past the list's total not compared (torch_npu leaves them
uninitialised); x as a list with per-channel scales; the rows moefr has not yet (weight-only, int8 out)
raise with their names; torch.compile(fullgraph=True) of the W8A8 MLP gives eager's bits (PyTorch >= 2.4)."""

import random
import unittest

import numpy as np
import torch

import moefr_testlib as tl
from moefr import torch_npu

RNG = random.Random(tl.SEED)
torch.manual_seed(tl.SEED)


def i8(*shape):
    return torch.randint(-128, 128, shape, dtype=torch.int8)


def f32_mul(a, b):
    """fp32 a * b, one rounding (numpy float32 products are exact-then-rounded, as IEEE says)."""
    return (np.asarray(a, dtype=np.float64) * np.asarray(b, dtype=np.float64)).astype(np.float32)


def reference(x, w, sizes, bias=None, scale=None, pts=None, out_dtype=torch.int32):
    """Rows of the groups, in order: (total, N) in out_dtype."""
    rows, r0 = [], 0
    for e, g in enumerate(sizes):
        acc = x[r0:r0 + g].numpy().astype(np.int64) @ w[e].numpy().astype(np.int64)
        if bias is not None:
            acc = acc + bias[e].numpy().astype(np.int64)
        acc32 = ((acc + 2 ** 31) % 2 ** 32 - 2 ** 31).astype(np.int32)
        if out_dtype == torch.int32:
            rows.append(torch.from_numpy(acc32))
        else:
            v = f32_mul(acc32.astype(np.float32), scale[e].float().numpy()[None, :])
            if pts is not None:
                v = f32_mul(v, pts[r0:r0 + g].numpy()[:, None])
            rows.append(torch.from_numpy(np.ascontiguousarray(v)).to(out_dtype))
        r0 += g
    return torch.cat(rows) if rows else torch.empty(0, w.shape[-1], dtype=out_dtype)


def split(M, E):
    sizes, left = [], M
    for _ in range(E):
        g = 0 if RNG.random() < 0.2 else RNG.randint(0, left)
        sizes.append(g)
        left -= g
    return sizes


class A8W8(unittest.TestCase):
    def one(self, out_dtype, per_token, bias, counts, dtype_arg):
        M, K, N, E = RNG.randint(1, 90), RNG.randint(1, 70), RNG.randint(1, 50), RNG.randint(1, 6)
        x, w = i8(M, K), i8(E, K, N)
        sizes = split(M, E)
        gl = torch.tensor(sizes if counts else np.cumsum(sizes).tolist(), dtype=torch.int64)
        b = torch.randint(-2 ** 20, 2 ** 20, (E, N), dtype=torch.int32) if bias else None
        sdt = torch.bfloat16 if out_dtype == torch.bfloat16 else torch.float32
        s = ((torch.rand(E, N) + 0.25) / 512).to(sdt) if out_dtype != torch.int32 else None
        pt = (torch.rand(M) / 8 + 1e-3) if per_token else None
        (y,) = torch_npu.npu_grouped_matmul([x], [w], bias=[b] if bias else None, scale=[s] if s is not None else None,
                                            per_token_scale=[pt] if per_token else None, group_list=gl,
                                            split_item=RNG.choice([2, 3]), group_type=0,
                                            group_list_type=1 if counts else 0, output_dtype=dtype_arg)
        self.assertEqual(y.dtype, out_dtype)
        self.assertEqual(tuple(y.shape), (M, N))
        want = reference(x, w, sizes, b, s, pt, out_dtype)
        got = y[:sum(sizes)]
        same = torch.equal(got.view(torch.int16) if out_dtype != torch.int32 else got,
                           want.view(torch.int16) if out_dtype != torch.int32 else want)
        self.assertTrue(same, "A8W8 %s per_token=%s bias=%s: max |diff| %s" % (
            out_dtype, per_token, bias, None if same else (got.double() - want.double()).abs().max()))

    def test_rows(self):
        for it in range(30):
            out = (torch.int32, torch.bfloat16, torch.float16)[it % 3]
            arg = out if it % 2 == 0 else {torch.int32: 256 + 3, torch.bfloat16: 256 + 27,
                                             torch.float16: 256 + 1}[out]
            self.one(out, out != torch.int32 and RNG.random() < 0.6, RNG.random() < 0.5, RNG.random() < 0.5, arg)

    def test_lists_per_channel(self):
        xs = [i8(5, 9), i8(0, 9), i8(7, 9)]
        ws = [i8(9, 11) for _ in xs]
        ss = [(torch.rand(11) / 300).bfloat16() for _ in xs]
        ys = torch_npu.npu_grouped_matmul(xs, ws, scale=ss, split_item=0, group_type=-1,
                                          output_dtype=torch.bfloat16)
        for x, w, s, y in zip(xs, ws, ss, ys):
            want = reference(x, w[None], [x.shape[0]], None, s[None], None, torch.bfloat16)
            self.assertTrue(torch.equal(y.view(torch.int16), want.view(torch.int16)))

    def test_not_yet(self):
        x, w = i8(6, 8), i8(2, 8, 4)
        gl = torch.tensor([3, 3])
        with self.assertRaisesRegex(RuntimeError, "antiquantOffsetOptional is required"):
            torch_npu.npu_grouped_matmul([torch.randn(6, 8).half()], [w], antiquant_scale=[torch.ones(2, 4).half()],
                                         group_list=gl, split_item=2, group_type=0, group_list_type=1)
        with self.assertRaisesRegex(RuntimeError, "per-token"):  # INT8 out is per-channel only
            torch_npu.npu_grouped_matmul([x], [w], scale=[torch.ones(2, 4, dtype=torch.int64)], group_list=gl,
                                         per_token_scale=[torch.ones(6)], split_item=2, group_type=0,
                                         group_list_type=1, output_dtype=torch.int8)
        with self.assertRaisesRegex(RuntimeError, "scaleOptional is required"):
            torch_npu.npu_grouped_matmul([x], [w], group_list=gl, split_item=2, group_type=0, group_list_type=1,
                                         output_dtype=torch.bfloat16)

    def test_int8_out(self):
        """INT8 out as op-plugin's test builds it: npu_trans_quant_param's words (and raw fp32 bits, as
        vllm-ascend writes them), bias, requantization: round(acc * scale19) + offset, saturated."""
        import struct
        M, K, N, E = 30, 24, 13, 2
        x, w = i8(M, K), i8(E, K, N)
        sizes = [12, 18]
        sc = (torch.rand(E, N) / 64 + 1e-3)
        off = torch.randint(-20, 20, (E, N)).float()
        words = torch.stack([torch_npu.npu_trans_quant_param(sc[e], off[e]) for e in range(E)])
        (y,) = torch_npu.npu_grouped_matmul([x], [w], scale=[words], group_list=torch.tensor(sizes), split_item=2,
                                            group_type=0, group_list_type=1, output_dtype=torch.int8)
        self.assertEqual(y.dtype, torch.int8)
        acc = reference(x, w, sizes)
        gid = torch.repeat_interleave(torch.arange(E), torch.tensor(sizes))
        sc19 = torch.tensor([struct.unpack("<f", struct.pack("<I", struct.unpack("<I", struct.pack("<f", v))[0]
                                                             & 0xFFFFE000))[0] for v in sc.flatten().tolist()]
                            ).view(E, N)
        v = torch.from_numpy(f32_mul(acc.numpy().astype(np.float32), sc19[gid].numpy()))
        want = (torch.round(v) + off[gid]).clamp(-128, 127).to(torch.int8)  # torch.round: ties to even
        self.assertTrue(torch.equal(y, want))
        # the words' fields, as op-plugin's own test checks them
        b = struct.unpack("<I", struct.pack("<f", float(sc[0, 0])))[0]
        self.assertEqual(int(words[0, 0]) & 0xFFFFFFFF, b & 0xFFFFE000)
        self.assertEqual((int(words[0, 0]) >> 46) & 1, 1)
        self.assertEqual(((int(words[0, 0]) >> 37) & 0x1FF) - (512 if (int(words[0, 0]) >> 45) & 1 else 0),
                         int(off[0, 0]))

    def test_a16w8(self):
        """Weight-only int8 (vllm-ascend's W8A16): each weight dequantized as (w + offset) * scale in x's dtype,
        then the float product (fp32 sums, one rounding): compared with float64 within the sum's bound."""
        for dt in (torch.float16, torch.bfloat16):
            M, K, N, E = 40, 33, 19, 3
            x = torch.randn(M, K).to(dt)
            w = i8(E, K, N)
            sc = ((torch.rand(E, N) + 0.1) / 64).to(dt)
            off = ((torch.rand(E, N) - 0.5) * 16).to(dt)
            counts = [15, 0, 20]
            (y,) = torch_npu.npu_grouped_matmul([x], [w], antiquant_scale=[sc], antiquant_offset=[off],
                                                group_list=torch.tensor(counts), split_item=3, group_type=0,
                                                group_list_type=1)
            self.assertEqual(y.dtype, dt)
            if dt == torch.float16:  # fp16 steps: round to fp16 after the add and after the multiply
                wq = ((w.half() + off[:, None, :]).half() * sc[:, None, :]).half()
            else:  # fp32 steps, then bf16
                wq = ((w.float() + off.float()[:, None, :]) * sc.float()[:, None, :]).bfloat16()
            r0 = 0
            for e, g in enumerate(counts):
                ref = x[r0:r0 + g].double() @ wq[e].double()
                mag = x[r0:r0 + g].double().abs() @ wq[e].double().abs()
                tol = (K + 2) * 2.0 ** -24 * mag + ref.abs() * (2.0 ** -8 if dt == torch.bfloat16 else 2.0 ** -11)
                self.assertTrue(bool(((y[r0:r0 + g].double() - ref).abs() <= tol + 1e-30).all()), "A16W8 %s" % dt)
                r0 += g

    def test_a16w4(self):
        """Weight-only int4 (vllm-ascend's W4A16): int32 weights holding eight int4 each along N (first value in the
        lowest nibble), per-channel and per-group antiquant parameters."""
        for dt, groups in ((torch.float16, 1), (torch.bfloat16, 1), (torch.bfloat16, 4), (torch.float16, 2)):
            M, K, N, E = 21, 32, 24, 2
            x = torch.randn(M, K).to(dt)
            q = torch.randint(-8, 8, (E, K, N), dtype=torch.int32)
            nib = (q & 0xF).view(E, K, N // 8, 8)
            packed = torch.zeros(E, K, N // 8, dtype=torch.int64)
            for j in range(8):
                packed |= nib[..., j].long() << (4 * j)
            packed = torch.where(packed >= 2 ** 31, packed - 2 ** 32, packed).to(torch.int32)
            shape = (E, N) if groups == 1 else (E, groups, N)
            sc = ((torch.rand(shape) + 0.1) / 8).to(dt)
            off = ((torch.rand(shape) - 0.5) * 4).to(dt)
            counts = [9, 12]
            (y,) = torch_npu.npu_grouped_matmul([x], [packed], antiquant_scale=[sc], antiquant_offset=[off],
                                                group_list=torch.tensor(counts), split_item=3, group_type=0,
                                                group_list_type=1)
            self.assertEqual(tuple(y.shape), (M, N))
            scg = sc if groups > 1 else sc[:, None, :]
            offg = off if groups > 1 else off[:, None, :]
            rep = K // scg.shape[1]
            scg, offg = scg.repeat_interleave(rep, 1), offg.repeat_interleave(rep, 1)
            if dt == torch.float16:
                wq = ((q.half() + offg).half() * scg).half()
            else:
                wq = ((q.float() + offg.float()) * scg.float()).bfloat16()
            r0 = 0
            for e, g in enumerate(counts):
                ref = x[r0:r0 + g].double() @ wq[e].double()
                mag = x[r0:r0 + g].double().abs() @ wq[e].double().abs()
                tol = (K + 2) * 2.0 ** -24 * mag + ref.abs() * (2.0 ** -8 if dt == torch.bfloat16 else 2.0 ** -11)
                self.assertTrue(bool(((y[r0:r0 + g].double() - ref).abs() <= tol + 1e-30).all()),
                                "A16W4 %s groups %d" % (dt, groups))
                r0 += g

    @unittest.skipUnless(tl.torch_ops(), "torch.ops.npu needs PyTorch >= 2.4")
    def test_compiled_w8a8_mlp(self):
        """vllm-ascend's W8A8 expert MLP shape: int8 GMM (bf16 out, per-token), swiglu, int8 GMM."""
        M, K, F, E = 24, 32, 16, 3
        x, w1, w2 = i8(M, K), i8(E, K, 2 * F), i8(E, F, K)
        s1, s2 = (torch.rand(E, 2 * F) / 256).bfloat16(), (torch.rand(E, K) / 256).bfloat16()
        pt = torch.rand(M) / 16
        gl = torch.tensor([10, 0, 14])

        def mlp(x, pt):
            (h,) = torch_npu.npu_grouped_matmul([x], [w1], scale=[s1], per_token_scale=[pt], group_list=gl,
                                                split_item=2, group_type=0, group_list_type=1,
                                                output_dtype=torch.bfloat16)
            a = torch_npu.npu_swiglu(h)
            aq = torch.clamp(torch.round(a.float() * 8), -128, 127).to(torch.int8)
            (y,) = torch_npu.npu_grouped_matmul([aq], [w2], scale=[s2], per_token_scale=[pt], group_list=gl,
                                                split_item=2, group_type=0, group_list_type=1,
                                                output_dtype=torch.bfloat16)
            return y
        eager = mlp(x, pt)
        compiled = torch.compile(mlp, fullgraph=True, backend="aot_eager")(x, pt)
        self.assertTrue(torch.equal(eager.view(torch.int16), compiled.view(torch.int16)))


if __name__ == "__main__":
    unittest.main()
