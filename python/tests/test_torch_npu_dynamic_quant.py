"""test_torch_npu_dynamic_quant - moefr.torch_npu.npu_dynamic_quant and npu_dynamic_quant_asymmetric
against an independent numpy reference of ops-nn's Ascend 950 kernels (arch35/dynamic_quant_regbase_*.h):
fp32 products and quotients (numpy float32), scale = max|v| * fp32(1/127) (asymmetric: (max - min) *
fp32(1/255), offset = 127 - max / scale), np.rint (half to even), clip, NaN -> 0; int4 (quint4x2):
7 and 15, eight per int32 with the first in the lowest nibble. pertoken / pertensor / perchannel, smooth
scales 1-D and by a cumulative group index, odd row lengths, ties, all-zero rows; the wrapper's checks."""

import os
import random
import unittest

import numpy as np
import torch

import moefr_testlib as tl
from moefr import MoefrError, _routing, torch_npu

_routing.POISON_OUTPUTS = True
RNG = random.Random(tl.SEED)
torch.manual_seed(tl.SEED)
A2 = os.environ.get("MOEFR_SOC") == "ascend910b"


def ref(x, smooth=None, group=None, sym=True, mode="pertoken", Q=127):
    v = x.float().numpy().astype(np.float32)
    if smooth is not None:
        s = smooth.float().numpy().astype(np.float32)
        if group is not None:
            g = np.searchsorted(np.maximum.accumulate(group.numpy().astype(np.int64)),
                                np.arange(v.reshape(-1, v.shape[-1]).shape[0]), side="right")
            v = (v.reshape(-1, v.shape[-1]) * s[g]).reshape(v.shape).astype(np.float32)
        elif mode == "perchannel":
            v = (v * s[:, None]).astype(np.float32)
        else:
            v = (v * s).astype(np.float32)
    if mode == "pertoken":
        axis, keep = -1, True
    elif mode == "perchannel":
        axis, keep = -2, True
    else:
        axis, keep = None, True
    with np.errstate(all="ignore"):
        if sym:
            mx = np.nanmax(np.abs(v), axis=axis, keepdims=keep)
            scale = (mx.astype(np.float32) * np.float32(np.float32(1) / np.float32(Q))).astype(np.float32)
            f = (v / scale).astype(np.float32)
            off = None
        else:
            hi = np.nanmax(v, axis=axis, keepdims=keep).astype(np.float32)
            lo = np.nanmin(v, axis=axis, keepdims=keep).astype(np.float32)
            scale = ((hi - lo).astype(np.float32) * np.float32(np.float32(1) / np.float32(2 * Q + 1))).astype(np.float32)
            off = (np.float32(Q) - (hi / scale).astype(np.float32)).astype(np.float32)
            f = ((v / scale).astype(np.float32) + off).astype(np.float32)
        y = np.clip(np.where(np.isnan(f), 0.0, np.rint(f)), -Q - 1, Q).astype(np.int8)
    sq = lambda a: a.reshape(1) if mode == "pertensor" else np.squeeze(a, axis=axis)
    return y, sq(scale), None if off is None else sq(off)


def unpack4(y32):
    w = y32.numpy().astype(np.uint32)
    nib = np.stack([(w >> (4 * k)) & 0xF for k in range(8)], axis=-1).astype(np.int8)
    nib = np.where(nib >= 8, nib - 16, nib).astype(np.int8)
    return nib.reshape(tuple(y32.shape[:-1]) + (y32.shape[-1] * 8,))


def same_f32(a, b):
    return np.array_equal(np.asarray(a, np.float32).view(np.uint32), np.asarray(b, np.float32).view(np.uint32)) \
        or np.array_equal(np.asarray(a, np.float32), np.asarray(b, np.float32), equal_nan=True)


class DynamicQuant(unittest.TestCase):
    def check(self, x, sym, mode="pertoken", smooth=None, group=None, int4=False):
        Q = 7 if int4 else 127
        kw = dict(smooth_scales=smooth, group_index=group, quant_mode=mode)
        if int4:
            kw["dst_type"] = torch.quint4x2
        if sym:
            y, s = torch_npu.npu_dynamic_quant(x, **kw)
            o = None
        else:
            y, s, o = torch_npu.npu_dynamic_quant_asymmetric(x, **kw)
        yr, sr, orf = ref(x, smooth, group, sym, mode, Q)
        got = unpack4(y) if int4 else y.numpy()
        what = "%s %s %s %s int4=%s smooth=%s group=%s" % (tuple(x.shape), x.dtype, mode, sym, int4,
                                                         smooth is not None, group is not None)
        self.assertTrue(same_f32(s.numpy(), sr), what + " scale")
        if o is not None:
            self.assertTrue(same_f32(o.numpy(), orf), what + " offset")
        np.testing.assert_array_equal(got, yr, err_msg=what)

    @unittest.skipIf(A2, "the reference is Ascend 950's arithmetic")
    def test_random(self):
        for _ in range(120):
            dt = RNG.choice([torch.float16, torch.bfloat16])
            H = RNG.choice([1, 7, 33, 1003, 8, 24, 2056])
            mode = RNG.choice(["pertoken", "pertoken", "pertensor", "perchannel"])
            int4 = RNG.random() < 0.3 and H % 8 == 0
            shape = (RNG.randint(1, 3), RNG.randint(1, 9), H) if RNG.random() < 0.3 else (RNG.randint(1, 12), H)
            x = (torch.randn(shape) * RNG.choice([0.01, 1, 300])).to(dt)
            if RNG.random() < 0.3:
                x.view(-1, H)[0] = 0  # an all-zero row
            smooth = group = None
            r = RNG.random()
            if r < 0.3:
                smooth = (torch.rand(shape[-2] if mode == "perchannel" else H) + 0.5).to(dt)
            elif r < 0.5 and mode == "pertoken":
                R = int(np.prod(shape[:-1]))
                E = RNG.randint(1, 4)
                ends = sorted(RNG.randint(0, R) for _ in range(E - 1)) + [R]
                group = torch.tensor(ends, dtype=torch.int32)
                smooth = (torch.rand(E, H) + 0.5).to(dt)
            self.check(x, RNG.random() < 0.5, mode, smooth, group, int4)

    @unittest.skipIf(A2, "the reference is Ascend 950's arithmetic")
    def test_ties(self):
        # max |x| = 127 makes the scale exactly 1: x itself is the quotient, halves are ties
        h = torch.tensor([[127.0, 0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 126.5]])
        y, s = torch_npu.npu_dynamic_quant(h.half())
        self.assertEqual(s.item(), 1.0)
        self.assertEqual(y.tolist(), [[127, 0, 2, 2, 0, -2, -2, 126]])

    def test_wrapper_checks(self):
        with self.assertRaises(RuntimeError):
            torch_npu.npu_dynamic_quant(torch.randn(8).half())
        with self.assertRaises(RuntimeError):
            torch_npu.npu_dynamic_quant(torch.randn(2, 12).half(), dst_type=torch.quint4x2)
        with self.assertRaises(MoefrError):  # uncovered rows: the library refuses
            torch_npu.npu_dynamic_quant(torch.randn(4, 8).half(), smooth_scales=torch.ones(2, 8).half(),
                                        group_index=torch.tensor([1, 2], dtype=torch.int32))


if __name__ == "__main__":
    unittest.main()
