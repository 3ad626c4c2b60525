"""test_autograd - moefr.moe_finalize_routing (forward operator + torch autograd) against a float64
pure-torch reference in all four modes and fp32/bf16/fp16, plus adjoint (gradcheck-style) checks."""

import unittest

import numpy as np
import torch

import moefr_testlib as tl
from moefr_testlib import moefr

DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}
INPUTS = ("expanded_x", "x1", "x2", "bias", "scales")


def ref_forward_torch(p, v, idx, expert_idx):
    """float64 forward in plain torch ops (independent of moefr), differentiable."""
    R, K, H = p.R, p.K, p.H
    x = v["expanded_x"].reshape(-1, H)
    d = idx.long().reshape(K, R).t() if p.mode in (0, 1) else idx.long().reshape(R, K)
    kept = ((d >= 0) & (d < x.shape[0])).unsqueeze(-1)
    xs = x[d.clamp(0, x.shape[0] - 1)]  # (R, K, H)
    if "bias" in v:
        xs = xs + v["bias"][expert_idx.long()]
    # a dropped slot (-1, or past expandedX's rows) has no term at all, bias included
    xs = torch.where(kept, xs, torch.zeros((), dtype=torch.float64))
    s = v["scales"] if "scales" in v else torch.ones((R, 1), dtype=torch.float64)
    out = (s.unsqueeze(-1) * xs).sum(1)
    if "x1" in v:
        out = out + v["x1"]
    if "x2" in v:
        out = out + v["x2"]
    return out


def dtype_name(t):
    return str(t.dtype).replace("torch.", "")


class Setup:
    """One problem: inputs in the dtype under test (leaves with requires_grad), their float64
    values, the int32 index/expert tensors and a grad_out."""

    def __init__(self, rng, mode, dtype, R=9, K=3, H=37, E=5, scale_dtype=None, **flags):
        p = tl.Problem(rng, R, K, H, mode, E=E, **flags)
        self.p = p
        raw = p.data(rng)
        self.t = {}
        for k, a in raw.items():
            dt = DTYPES[scale_dtype] if (k == "scales" and scale_dtype) else DTYPES[dtype]
            self.t[k] = torch.from_numpy(a).to(dt).requires_grad_(True)
        self.v64 = {k: t.detach().double().requires_grad_(True) for k, t in self.t.items()}
        self.idx = torch.from_numpy(p.index())
        self.expert_idx = torch.from_numpy(p.expert) if "bias" in self.t else None
        self.g = torch.from_numpy(rng.standard_normal((R, H))).to(DTYPES[dtype])

    def run(self, **override):
        t = dict(self.t)
        t.update(override)
        return moefr.moe_finalize_routing(t["expanded_x"], self.idx, x1=t.get("x1"), x2=t.get("x2"),
                                          bias=t.get("bias"), scales=t.get("scales"),
                                          expert_idx=self.expert_idx, drop_pad_mode=self.p.mode)

    def reference(self):
        out = ref_forward_torch(self.p, self.v64, self.idx, self.expert_idx)
        names = list(self.v64)
        grads = torch.autograd.grad(out, [self.v64[n] for n in names], self.g.double())
        return out.detach(), dict(zip(names, grads))

    def scales_bound(self):
        """SPEC section 4's bound on gradScales: 1e-6 * sum_h |x_d + b_e| |g| per slot (kept slots;
        a dropped one has no term), in float64."""
        p, x = self.p, self.v64["expanded_x"].detach().reshape(-1, self.p.H)
        d = self.idx.long().reshape(p.K, p.R).t() if p.mode in (0, 1) else self.idx.long().reshape(p.R, p.K)
        kept = ((d >= 0) & (d < x.shape[0])).unsqueeze(-1)
        xs = x[d.clamp(0, x.shape[0] - 1)]
        if "bias" in self.v64:
            xs = xs + self.v64["bias"].detach()[self.expert_idx.long()]
        xs = torch.where(kept, xs, torch.zeros((), dtype=torch.float64))
        return 1e-6 * (xs.abs() * self.g.double().abs().unsqueeze(1)).sum(-1).numpy()

    def abs_bounds(self, vals=None):
        """Per-element magnitudes the forward sums, |x1| + |x2| + sum_k |s| (|x_d| + |b_e|), in
        float64, for the inputs vals (default: this problem's)."""
        vals = self.v64 if vals is None else vals
        a = {k: v.detach().double().abs() for k, v in vals.items()}
        return ref_forward_torch(self.p, a, self.idx, self.expert_idx)


class ForwardAndGradients(unittest.TestCase):
    def setUp(self):
        self.rng = np.random.default_rng(tl.SEED)

    def check(self, s):
        out = s.run()
        self.assertIsInstance(out, torch.Tensor)
        self.assertEqual(out.dtype, s.t["expanded_x"].dtype)
        self.assertEqual(tuple(out.shape), (s.p.R, s.p.H))
        out.backward(s.g)
        ref_out, ref_g = s.reference()
        dt = dtype_name(out)

        # Forward: the canonical order (issue 13): K <= 32 accumulates in fp32 (at most 2K+1 <= 65
        # roundings of 2^-24 of the summed magnitudes, tests/fwd_ref.h's fr_bound), K > 32 in fp64
        # (1e-12 of the summed magnitudes covers it and the float64 reference's own rounding);
        # then half an ulp of the output dtype.
        slack = tl.fwd_rel(s.p.K) * s.abs_bounds().numpy()
        self.within(out, ref_out.numpy(), 0.5 * tl.ulp(ref_out.numpy(), dt) + slack, "out")

        for name, t in s.t.items():
            self.assertIsNotNone(t.grad, name)
            self.assertEqual(t.grad.dtype, t.dtype, name)
            self.assertEqual(t.grad.shape, t.shape, name)
            ref = ref_g[name].numpy()
            gdt = dtype_name(t.grad)
            if name in ("x1", "x2"):
                tol = np.zeros_like(ref)  # exactly grad_out
            elif name == "expanded_x":
                # One fp32 product g*s rounded once (RNE): exact against the float64
                # product rounded through fp32 (an fp32 product of these inputs is exact
                # or singly rounded; the extra rounding to fp16/bf16 is the spec's).
                r = torch.from_numpy(ref).float().to(t.dtype).double().numpy()
                np.testing.assert_array_equal(t.grad.double().numpy(), r, err_msg=name)
                continue
            elif name == "scales":
                # SPEC section 4 bound: 1e-6 * sum_j |x_j + b_j| |g_j| + half an ulp.
                x = s.v64["expanded_x"].detach().reshape(-1, s.p.H)
                R, K = s.p.R, s.p.K
                d = torch.from_numpy(s.p.rows).long()
                xs = torch.where((d >= 0).unsqueeze(-1), x[d.clamp(min=0)], torch.zeros((), dtype=torch.float64))
                if "bias" in s.v64:
                    xs = xs + s.v64["bias"].detach()[s.expert_idx.long()]
                scale = (xs.abs() * s.g.double().abs().unsqueeze(1)).sum(-1).numpy()
                tol = 1e-6 * scale + 0.5 * tl.ulp(ref, gdt)
            elif name == "bias":
                # float64 sums rounded once: half an ulp plus float64 slack.
                R, K = s.p.R, s.p.K
                sc = s.v64["scales"].detach().abs() if "scales" in s.v64 else torch.ones((R, K), dtype=torch.float64)
                mag = torch.zeros((s.p.E, s.p.H), dtype=torch.float64).index_add_(
                    0, s.expert_idx.reshape(-1).long(),
                    (sc.unsqueeze(-1) * s.g.double().abs().unsqueeze(1)).reshape(R * K, s.p.H))
                tol = 0.5 * tl.ulp(ref, gdt) + 1e-12 * mag.numpy()
            self.within(t.grad, ref, tol, name)

    def within(self, got, ref, tol, name):
        err = np.abs(got.detach().double().numpy() - ref)
        bad = ~(err <= tol)  # NaN (a poisoned, unwritten element) counts as bad
        if bad.any():
            i = np.unravel_index(np.argmax(bad), bad.shape)
            self.fail("%s: %d elements off, first at %s: got %r, want %r, tol %g" % (
                name, bad.sum(), i, float(got.detach().double().numpy()[i]), ref[i], tol[i]))

    def test_modes_dtypes(self):
        flags = [
            dict(with_bias=True, with_x1=True, with_x2=True),
            dict(),
            dict(with_bias=True),
            dict(with_scales=False, with_x1=True),
            dict(with_scales=False, with_bias=True, with_x1=True, with_x2=True),
        ]
        for mode in range(4):
            for dtype in DTYPES:
                for f in flags:
                    with self.subTest(mode=mode, dtype=dtype, **f):
                        self.check(Setup(self.rng, mode, dtype, **f))

    def test_larger_and_mixed(self):
        for mode in range(4):
            with self.subTest(mode=mode, case="larger"):
                self.check(Setup(self.rng, mode, "float32", R=40, K=4, H=131, E=9,
                                 with_bias=True, with_x1=True))
            with self.subTest(mode=mode, case="bf16 data, fp32 scales"):
                self.check(Setup(self.rng, mode, "bfloat16", scale_dtype="float32", with_bias=True))

    def test_partial_requires_grad(self):
        s = Setup(self.rng, 1, "float32", with_bias=True, with_x1=True)
        for k in ("bias", "x1", "expanded_x"):
            s.t[k].requires_grad_(False)
        out = s.run()
        out.backward(s.g)
        self.assertIsNotNone(s.t["scales"].grad)
        for k in ("bias", "x1", "expanded_x"):
            self.assertIsNone(s.t[k].grad)

    def test_no_grad_and_numpy(self):
        s = Setup(self.rng, 2, "float32", with_bias=True, with_x1=True)
        with torch.no_grad():
            out = s.run()
        self.assertFalse(out.requires_grad)
        np_out = moefr.moe_finalize_routing(
            s.t["expanded_x"].detach().numpy(), s.idx.numpy(), x1=s.t["x1"].detach().numpy(),
            bias=s.t["bias"].detach().numpy(), scales=s.t["scales"].detach().numpy(),
            expert_idx=s.expert_idx.numpy(), drop_pad_mode=2)
        self.assertIsInstance(np_out, np.ndarray)
        np.testing.assert_array_equal(np_out, out.numpy())

    def test_strided_forward_inputs(self):
        s = Setup(self.rng, 0, "bfloat16", with_bias=True, with_x1=True, with_x2=True)
        base = s.run().detach()
        views = {k: t.detach().t().contiguous().t() if t.dim() == 2 else t.detach() for k, t in s.t.items()}
        views["expanded_x"] = torch.cat([s.t["expanded_x"].detach()] * 2, 1)[:, s.p.H:]
        out = s.run(**views).detach()
        self.assertTrue(torch.equal(out.view(torch.int16), base.view(torch.int16)))

    def test_bias_grad_deterministic(self):
        s = Setup(self.rng, 3, "float32", R=64, K=4, H=33, E=6, with_bias=True)
        grads = []
        for _ in range(3):
            s.t["bias"].grad = None
            s.run().backward(s.g)
            grads.append(s.t["bias"].grad.clone())
        for g in grads[1:]:
            self.assertTrue(torch.equal(g.view(torch.int32), grads[0].view(torch.int32)))

    def test_torch_npu_signature(self):
        s = Setup(self.rng, 0, "float32", with_bias=True, with_x1=True, with_x2=True)
        t = {k: v.detach() for k, v in s.t.items()}
        a = moefr.npu_moe_finalize_routing(t["expanded_x"], t["x1"], t["x2"], t["bias"], t["scales"], s.idx,
                                           s.expert_idx)
        self.assertTrue(torch.equal(a, s.run().detach()))

    def test_double_backward_refused(self):
        s = Setup(self.rng, 0, "float32")
        out = s.run()
        (gx,) = torch.autograd.grad(out, [s.t["expanded_x"]], s.g, create_graph=True)
        with self.assertRaises(RuntimeError):
            gx.sum().backward()

    def test_round_from_f64(self):
        """Single rounding from float64, checked against exact neighbours taken from the bits:
        values at and next to the half-way points of fp16/bf16 (normal and subnormal), where
        rounding through fp32 goes wrong."""
        from moefr._autograd import round_from_f64
        for dt in (torch.float16, torch.bfloat16):
            mag = torch.from_numpy(np.abs(self.rng.standard_normal(4000)) * np.exp2(
                self.rng.integers(-30, 12, 4000))).to(dt)
            extra = [6.0e-5, 6.1e-8, 2.0 ** -14, 1.0, 3.0] if dt == torch.float16 else [1e-39, 1.0, 3.0]
            base16 = torch.cat([mag, torch.tensor(extra).to(dt)])
            base16 = base16[(base16 > 0) & torch.isfinite(base16)]
            nxt16 = (base16.view(torch.int16) + 1).view(dt)          # next value up, from the bits
            keep = torch.isfinite(nxt16)
            base, nxt = base16[keep].double(), nxt16[keep].double()
            even_lo = (base16[keep].view(torch.int16) & 1) == 0
            mid = (base + nxt) / 2                                   # exact in float64
            for rel in (-2e-16, -1e-9, 0.0, 1e-9, 2e-16):
                for sign in (1.0, -1.0):
                    x = sign * mid * (1 + rel)
                    got = round_from_f64(x, dt).double() * sign
                    if rel < 0:
                        want = base
                    elif rel > 0:
                        want = nxt
                    else:
                        want = torch.where(even_lo, base, nxt)
                    bad = got != want
                    self.assertFalse(bad.any(), (dt, rel, sign, x[bad][:3], got[bad][:3], want[bad][:3]))

    def test_bias_grad_chunks(self):
        from moefr import _autograd
        s = Setup(self.rng, 1, "bfloat16", R=23, K=3, H=17, E=4, with_bias=True)
        args = (s.g, s.t["scales"].detach(), s.expert_idx, 4, torch.bfloat16)
        whole = _autograd.bias_grad(*args)
        for rows in (1, 5, 22):
            self.assertTrue(torch.equal(_autograd.bias_grad(*args, rows_per_chunk=rows).view(torch.int16),
                                        whole.view(torch.int16)))

    def test_repeated_and_extra_rows(self):
        """The forward may read a row twice (a gather) and, in modes 0/2, expandedX may have more
        rows than R*K; the gradient of a gather sums. Checked against the float64 reference
        within one rounding of the dtype (plus float64 slack of the summed magnitudes)."""
        for mode in range(4):
            for dtype in ("float32", "bfloat16"):
                with self.subTest(mode=mode, dtype=dtype):
                    s = Setup(self.rng, mode, dtype, R=11, K=3, H=29, with_bias=True, with_x1=True)
                    R, K, n = s.p.R, s.p.K, s.p.R * s.p.K
                    if mode in (1, 3):
                        D0 = s.t["expanded_x"].shape[0] * s.t["expanded_x"].shape[1]
                        idx = self.rng.integers(-1, D0, size=n)
                    else:
                        extra = mode == 2  # mode 2: five rows nobody can name through R*K alone
                        if extra:
                            x = torch.from_numpy(self.rng.standard_normal((n + 5, s.p.H))).to(DTYPES[dtype])
                            s.t["expanded_x"] = x.requires_grad_(True)
                            s.v64["expanded_x"] = x.detach().double().requires_grad_(True)
                        idx = self.rng.integers(0, n + (5 if extra else 0), size=n)
                        idx[:2] = idx[2]  # at least one repeat
                    s.idx = torch.from_numpy(idx.astype(np.int32))
                    out = s.run()
                    out.backward(s.g)
                    ref_out, ref_g = s.reference()
                    for name in ("expanded_x", "scales"):
                        got, ref = s.t[name].grad, ref_g[name].numpy()
                        if name == "scales":  # SPEC section 4: the bound on summed magnitudes
                            tol = s.scales_bound() + 0.5 * tl.ulp(ref, dtype_name(got))
                        else:  # a sum of a repeated row's products: one rounding each
                            tol = tl.ulp(ref, dtype_name(got)) + 1e-5 * (np.abs(ref) + 1e-12)
                        self.within(got, ref, tol, name)

    def test_forward_errors(self):
        s = Setup(self.rng, 0, "float32", with_bias=True)
        with self.assertRaises(ValueError) as cm:
            moefr.moe_finalize_routing(s.t["expanded_x"], s.idx, scales=s.t["scales"], drop_pad_mode=4)
        self.assertEqual(cm.exception.status, 561002)  # CANN's tiling code
        self.assertIn("dropPadMode", str(cm.exception))
        bad = s.idx.clone()
        bad[0] = -5  # a row CANN would read out of bounds (mode 0: a negative value)
        with self.assertRaises(ValueError) as cm:
            moefr.moe_finalize_routing(s.t["expanded_x"], bad, scales=s.t["scales"])
        self.assertEqual(cm.exception.status, 161002)
        self.assertIn("expandedRowIdx[0]", str(cm.exception))
        # a repeated row is only read twice (CANN's forward is a gather)
        rep = s.idx.clone()
        rep[0] = rep[1]
        out = moefr.moe_finalize_routing(s.t["expanded_x"], rep, scales=s.t["scales"])
        self.assertEqual(tuple(out.shape), (s.t["scales"].shape[0], s.t["expanded_x"].shape[1]))


class Adjoint(unittest.TestCase):
    """gradcheck-style, but in the operator's own dtypes (float64 is not supported, so
    torch.autograd.gradcheck's finite differences in float64 cannot run): the forward is
    linear in each input with the others fixed, so <g, F(v)> must equal <F^T g, v> where F
    is the library's forward with that input set to v and the rest to zero, and F^T g the
    library's backward. Both sides are float64 dot products of fp32 results; the tolerance
    is fp32 rounding (2^-24 relative per element, 4x margin) of the summed magnitudes plus the
    forward's fp32 accumulation bound (tl.fwd_rel) of them."""

    def test_adjoint(self):
        rng = np.random.default_rng(tl.SEED + 7)
        for mode in range(4):
            s = Setup(rng, mode, "float32", R=11, K=3, H=19, E=4, with_bias=True, with_x1=True)
            for name in ("expanded_x", "bias", "scales", "x1"):
                with self.subTest(mode=mode, input=name):
                    # Linear in `name`: the other additive inputs are zero (for scales, x1
                    # only: out = sum_k s_k (x_d + b_e) is linear in s with x and b fixed).
                    zero = ("x1",) if name == "scales" else tuple(k for k in s.t if k not in (name, "scales"))
                    args = {k: (torch.zeros_like(t) if k in zero else t.detach().clone()) for k, t in s.t.items()}
                    args[name] = torch.from_numpy(rng.standard_normal(tuple(s.t[name].shape))).float()
                    v = args[name].clone()
                    for t in args.values():
                        t.requires_grad_(True)
                    out = s.run(**args)
                    out.backward(s.g)
                    lhs = float((s.g.double() * out.detach().double()).sum())
                    rhs = float((args[name].grad.double() * v.double()).sum())
                    mag = float((s.g.double().abs() * s.abs_bounds(args)).sum())
                    self.assertLessEqual(abs(lhs - rhs), (4 * 2.0 ** -24 + tl.fwd_rel(s.p.K)) * mag, (lhs, rhs, mag))


if __name__ == "__main__":
    unittest.main()
