"""test_torch_npu_init_routing_quant - moefr.torch_npu.npu_moe_init_routing_quant (and
_routing.init_routing_quant, the first version) against an independent numpy reference: a stable
argsort of the flat expert ids for the routing, and the int8 quantisation with every rounding of
CANN's kernels done explicitly in float64 - static: fp16 (numpy's correctly rounded cast) after the
cast, the product and the sum, np.rint (half to even), clip; dynamic: fp32 products and quotients,
max|v| / 127, the quotient truncated to fp16 toward zero, then rounded half away from zero, clip
(0 for NaN). Also the op-plugin test's own golden formula (np.round etc.) within its tolerance of 1.
Random odd sizes, every dtype, both modes, every smooth kind, drop/pad, count modes, strided x;
the wrapper's own checks and the library's refusals."""

import random
import unittest

import numpy as np
import torch

import moefr_testlib as tl
from moefr import MoefrError, _routing, torch_npu

_routing.POISON_OUTPUTS = True
RNG = random.Random(tl.SEED)
torch.manual_seed(tl.SEED)
np.random.seed(tl.SEED % (1 << 31))


def f16(v):
    return np.asarray(v, dtype=np.float64).astype(np.float16).astype(np.float64)


def f32(v):
    return np.asarray(v, dtype=np.float64).astype(np.float32).astype(np.float64)


def sat(r):
    r = np.where(np.isnan(r), 0.0, r)
    return np.clip(r, -128, 127).astype(np.int8)


def q_static(x, scale, offset):
    hs, ho = f16(np.float32(scale)), f16(np.float32(offset))
    a = f16(x)
    with np.errstate(over="ignore", invalid="ignore"):
        m = f16(a * hs)
        r = f16(m + ho)
    return sat(np.rint(r))


def trunc16(q):
    t = q.astype(np.float16)  # nearest; step back toward zero where it rounded away
    with np.errstate(invalid="ignore"):
        away = np.abs(t.astype(np.float64)) > np.abs(q)
    t = np.where(away, np.nextafter(t, np.float16(0)), t)
    return t.astype(np.float64)


def q_dynamic_row(x, sm):
    v = f32(x * sm) if sm is not None else x
    s = f32(np.max(np.abs(v)) / 127.0) if v.size else 0.0
    with np.errstate(invalid="ignore", divide="ignore"):
        t = trunc16(f32(v / s))
        r = np.sign(t) * np.floor(np.abs(t) + 0.5)
    return sat(r), np.float32(s)


def reference(x, ids, scale, offset, active_num, C, E, drop, cmode, bflag, qmode):
    """numpy reference of the wrapper + aclnnMoeInitRoutingQuantV2."""
    x = x.double().numpy()
    N, H = x.shape
    K = ids.shape[1]
    T = N * K
    flat = ids.reshape(-1).numpy().astype(np.int64)
    perm = np.argsort(flat, kind="stable")
    counts = np.bincount(flat, minlength=max(E, 1))[:E] if E > 0 else np.zeros(0, np.int64)
    row = np.zeros(T, np.int64)
    if drop == 0:
        R = min(T, active_num) if active_num > 0 else T
        row[perm] = np.arange(T)
        src = perm[:R]
    else:
        R = E * C
        src = np.full(R, -1)
        i = 0
        for e in range(E):
            for s in range(int(counts[e])):
                j = perm[i]
                if s < C:
                    src[e * C + s] = j
                    row[j] = e * C + s
                else:
                    row[j] = -1
                i += 1
    ex = np.zeros((R, H), np.int8)
    dqs = np.zeros(R, np.float32)
    sc = None if scale is None else scale.double().numpy()
    for i in range(R):
        j = src[i]
        if j < 0:
            continue
        if qmode == 0:
            ex[i] = q_static(x[j // K], sc[0], offset.double().numpy()[0])
        else:
            if sc is None:
                sm = None
            elif sc.shape[0] == 1:  # shared
                sm = sc[0]
            else:  # the slot's expert
                sm = sc[flat[j] if drop == 0 else i // C]
            ex[i], dqs[i] = q_dynamic_row(x[j // K], sm)
    cnt = None
    if drop == 0 and cmode > 0:
        cnt = np.cumsum(counts) if cmode == 1 else counts
    before = counts if drop == 1 and bflag else None
    if drop == 1:
        ex = ex.reshape(E, C, H)
    return ex, row, cnt, before, (dqs if qmode == 1 else None)


def make_x(N, H, dt, kind):
    if kind == 0:
        x = torch.randn(N, H) * 3
        x[torch.rand(N, H) < 0.1] *= 300
    elif kind == 1:
        x = torch.randint(-600, 601, (N, H)).double() / 4  # ties
    else:
        x = torch.randn(N, H)
        if N:
            x[torch.rand(N) < 0.3] = 0.0  # zero rows: scale 0
    x = x.to(dt)
    if RNG.random() < 0.4:  # a strided view
        big = torch.zeros(N, 2 * H + 1, dtype=dt)
        big[:, 1::2] = x
        x = big[:, 1::2]
    return x


class InitRoutingQuant(unittest.TestCase):
    def check(self, got, want, what):
        names = ("expanded_x", "expanded_row_idx", "count", "before", "scale")
        for name, g, w in zip(names, got, want):
            if w is None:
                self.assertIsNone(g, (name, what))
                continue
            self.assertIsNotNone(g, (name, what))
            if name == "scale":
                self.assertTrue(np.array_equal(g.numpy().view(np.uint32), w.view(np.uint32)), (name, what))
            else:
                self.assertEqual(tuple(g.shape), tuple(w.shape), (name, what))
                self.assertTrue(np.array_equal(g.numpy().astype(np.int64), w.astype(np.int64)), (name, what))

    def test_random(self):
        for it in range(160):
            N, K, H = RNG.randint(1, 24), RNG.randint(1, 4), RNG.choice([1, 5, 13, 33, 70])
            E = RNG.randint(1, 9)
            drop = 1 if RNG.random() < 0.3 else 0
            C = RNG.randint(1, N) if drop else 0
            qmode = RNG.randint(0, 1)
            smooth = RNG.randint(0, 2) if qmode == 1 else 0
            cmode = RNG.randint(0, 2)
            bflag = RNG.random() < 0.5
            active = RNG.choice([0, RNG.randint(1, N * K + 2), N * K + 5])
            dt = RNG.choice([torch.float32, torch.float16, torch.bfloat16])
            kind = RNG.randint(0, 2)
            bounded = drop == 1 or cmode > 0 or smooth == 2
            ids = torch.randint(0, E if bounded else E + 3, (N, K), dtype=torch.int32)
            x = make_x(N, H, dt, kind)
            if qmode == 0:
                scale = torch.tensor([RNG.uniform(-100, 100) if kind != 1 else RNG.randint(-8, 8) / 4])
                offset = torch.tensor([RNG.uniform(-4, 4) if kind != 1 else RNG.randint(-8, 8) / 4])
            else:
                scale = None if smooth == 0 else torch.rand(1 if smooth == 1 else E, H) * 3 - 1
                offset = None
            got = torch_npu.npu_moe_init_routing_quant(
                x, ids, scale=scale, offset=offset, active_num=active, expert_capacity=C, expert_num=E,
                drop_pad_mode=drop, expert_tokens_num_mode=cmode, expert_tokens_before_capacity_flag=bflag,
                quant_mode=qmode)
            want = reference(x, ids, scale, offset, active, C, E, drop, cmode, bflag, qmode)
            self.check(got, want, (it, N, K, H, E, C, drop, qmode, smooth, cmode, bflag, active, dt, kind))

    def test_hand_rows(self):
        # half to even (static) against half away from zero (dynamic)
        x = torch.tensor([[127.0, 63.5, -0.5, 2.5, 0.0]])
        ids = torch.zeros(1, 1, dtype=torch.int32)
        one, zero = torch.tensor([1.0]), torch.tensor([0.0])
        ex = torch_npu.npu_moe_init_routing_quant(x, ids, scale=one, offset=zero, expert_num=1, quant_mode=0)[0]
        self.assertEqual(ex.tolist(), [[127, 64, 0, 2, 0]])
        ex, _, _, _, s = torch_npu.npu_moe_init_routing_quant(x, ids, expert_num=1, quant_mode=1)
        self.assertEqual(ex.tolist(), [[127, 64, -1, 3, 0]])
        self.assertEqual(s.tolist(), [1.0])

    def test_op_plugin_golden(self):
        # the op-plugin test's CPU golden (dropless, count mode 2) within its tolerance of 1
        N, H, K, E = 4, 1024, 8, 32
        for qmode in (0, 1):
            for dt in (torch.float16, torch.float32, torch.bfloat16):
                xf = np.random.uniform(-1, 1, size=(N, H)).astype(np.float32)
                x = torch.tensor(xf).to(dt)
                xf = x.float().numpy()
                ids = np.random.randint(0, E, size=(N, K)).astype(np.int32)
                scale = torch.tensor(np.random.uniform(-1, 1, size=(1,)).astype(np.float32)) if qmode == 0 else None
                offset = torch.tensor(np.random.uniform(-1, 1, size=(1,)).astype(np.float32)) if qmode == 0 else None
                ex, row, cnt, _, s = torch_npu.npu_moe_init_routing_quant(
                    x, torch.tensor(ids), scale=scale, offset=offset, active_num=0, expert_capacity=0,
                    expert_num=E, drop_pad_mode=0, expert_tokens_num_mode=2, quant_mode=qmode)
                order = np.argsort(ids.reshape(-1), kind="stable")
                if qmode == 0:
                    g = xf.astype(np.float16)[order // K] * scale.numpy().astype(np.float16)[0]
                    g = np.clip(np.rint(g + offset.numpy().astype(np.float16)[0]), -128, 127).astype(np.int8)
                else:
                    e = xf[order // K].astype(np.float32)
                    gs = np.max(np.abs(e), axis=-1, keepdims=True) / 127
                    g = np.round(e / gs).astype(np.int8)
                    self.assertTrue(np.allclose(s.numpy(), gs.reshape(-1), rtol=1e-6))
                self.assertLessEqual(int(np.abs(ex.numpy().astype(np.int64) - g.astype(np.int64)).max()), 1)
                want_row = np.empty(N * K, np.int64)
                want_row[order] = np.arange(N * K)
                self.assertTrue(np.array_equal(row.numpy(), want_row))
                self.assertTrue(np.array_equal(cnt.numpy(), np.bincount(ids.reshape(-1), minlength=E)))

    def test_errors(self):
        x = torch.randn(4, 8)
        ids = torch.zeros(4, 2, dtype=torch.int32)
        with self.assertRaises(ValueError):
            torch_npu.npu_moe_init_routing_quant(x, ids, quant_mode=2)
        with self.assertRaises(ValueError):
            torch_npu.npu_moe_init_routing_quant(x, ids, drop_pad_mode=3)
        with self.assertRaises(ValueError):
            torch_npu.npu_moe_init_routing_quant(x[0], ids)
        with self.assertRaises(MoefrError):  # static quant needs scale and offset (561002)
            torch_npu.npu_moe_init_routing_quant(x, ids, quant_mode=0)
        with self.assertRaises(MoefrError):  # (expert_num, H) smooth scale: ids must be below expert_num
            torch_npu.npu_moe_init_routing_quant(x, ids + 3, scale=torch.ones(3, 8), expert_num=3)
        with self.assertRaises(MoefrError):  # negative active_num: shape (N*K, H) but refused
            torch_npu.npu_moe_init_routing_quant(x, ids, active_num=-1)

    def test_first_version(self):
        for _ in range(20):
            N, K, H = RNG.randint(1, 20), RNG.randint(1, 4), RNG.randint(1, 40)
            active = RNG.randint(0, N + 2)
            dt = RNG.choice([torch.float32, torch.float16, torch.bfloat16])
            x = make_x(N, H, dt, RNG.randint(0, 2))
            ids = torch.randint(-2, 6, (N, K), dtype=torch.int32)
            ri = (torch.arange(K).reshape(1, K) * N + torch.arange(N).reshape(N, 1)).to(torch.int32)
            sc, of = RNG.uniform(-50, 50), RNG.uniform(-3, 3)
            ex, row, eei = _routing.init_routing_quant(x, ri, ids, active, sc, of)
            flat = ids.reshape(-1).numpy().astype(np.int64)
            perm = np.argsort(flat, kind="stable")
            srcs = ri.reshape(-1).numpy()[perm]
            want_row = np.zeros(N * K, np.int64)
            want_row[srcs] = np.arange(N * K)
            A = min(active, N) * K
            xd = x.double().numpy()
            want_x = np.stack([q_static(xd[s % N], sc, of) for s in srcs[:A]]) if A else np.zeros((0, H), np.int8)
            self.assertTrue(np.array_equal(ex.numpy(), want_x.reshape(A, H)))
            self.assertTrue(np.array_equal(row.numpy(), want_row))
            self.assertTrue(np.array_equal(eei.numpy(), flat[perm]))


if __name__ == "__main__":
    unittest.main()
