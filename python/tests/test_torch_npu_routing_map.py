"""test_torch_npu_routing_map - moefr.torch_npu's routing-map permutation functions against an
independent float64 torch reference written from the semantics (masked_select over the transposed
map, stable sorts, index_select / index_add, the probs gathered as ops-transformer's kernels and
torch_npu's CPU goldens describe them), forward and backward (the reference's float64 autograd),
bool and int8 maps, both modes, with and without probs, non-contiguous inputs; then the calls
MindSpeed's permutation.py and torchtitan-npu's dispatcher make, keywords included."""

import random
import unittest

import torch

import moefr_testlib as tl
from moefr import _routing, torch_npu

_routing.POISON_OUTPUTS = True
RNG = random.Random(tl.SEED)
torch.manual_seed(tl.SEED)

DTYPES = (torch.float32, torch.float16, torch.bfloat16)
TOL = {torch.float32: 2e-6, torch.float16: 2e-3, torch.bfloat16: 1.6e-2}


def rand(shape, dt):
    return (torch.randint(-600, 600, shape, dtype=torch.int32).double() / 128).to(dt)


def rand_map(n, e, k, dt=torch.bool):
    m = torch.zeros((n, e), dtype=torch.bool)
    for r in range(n):
        m[r, torch.randperm(e)[:k]] = True
    return m.to(dt)


def maybe_strided(t):
    """t, or the same values in a non-contiguous view (every other column of a wider tensor)."""
    if RNG.random() < 0.5 or t.dim() != 2:
        return t
    wide = torch.zeros((t.shape[0], 2 * t.shape[1]), dtype=t.dtype)
    wide[:, ::2] = t
    v = wide[:, ::2]
    assert not v.is_contiguous() or t.shape[1] <= 1
    return v


# ---- the float64 reference ----

def ref_permute(tokens, rmap, probs, num_out, pad):
    """-> (permuted, permuted_probs | None, sorted_indices) in float64 (autograd through tokens/probs)."""
    n, e = rmap.shape
    mt = rmap.bool().t()
    if not pad:
        first = torch.arange(n).unsqueeze(0).expand(e, n).masked_select(mt)  # token of each expert-major one
        permuted = tokens.index_select(0, first)
        # .contiguous(): torch 1.13's masked_select backward mis-scatters on a transposed input
        pprobs = probs.t().contiguous().masked_select(mt) if probs is not None else None
        si = torch.sort(first.double(), stable=True)[1]
        return permuted, pprobs, si
    c = num_out // e
    si = torch.sort(mt.to(torch.int8), dim=-1, descending=True, stable=True)[1][:, :c].reshape(-1)
    permuted = tokens.index_select(0, si)
    pprobs = None
    if probs is not None:
        pprobs = probs.t().reshape(-1).index_select(0, (torch.arange(e).unsqueeze(1) * n + si.view(e, c)).reshape(-1))
    return permuted, pprobs, si


def ref_unpermute(x, idx, restore, probs, rmap, pad):
    n, h = restore
    m = x.shape[0]
    idx = idx.long()
    if not pad:
        k = m // (probs.shape[0] if probs is not None else n)
        valid = (idx >= 0) & (idx < m)
        rows = x.index_select(0, idx.clamp(0, m - 1)) * valid.unsqueeze(1).to(x.dtype)
        if probs is not None:
            rows = rows * probs.masked_select(rmap.bool()).unsqueeze(1)
        return rows.view(-1, k, h).sum(1)
    src = x
    if probs is not None:
        c = idx.numel() // probs.shape[1]
        pp = probs.t().reshape(-1).index_select(0, (torch.arange(idx.numel()) // c) * probs.shape[0] + idx)
        src = x * pp.unsqueeze(1)
    return torch.zeros((n, h), dtype=x.dtype).index_add(0, idx, src)


def close(test, got, want, want_abs, dt, what):
    err = (got.double() - want).abs()
    bound = TOL[dt] * (want_abs + 1)
    test.assertTrue(bool((err <= bound).all()), "%s: max error %g" % (what, float(err.max()) if err.numel() else 0))


def grads(fn, inputs, upstream):
    """float64 autograd of sum(out_i * upstream_i) w.r.t. the tensor inputs (None stays None)."""
    leaves = [t.detach().double().requires_grad_() if t is not None else None for t in inputs]
    outs = fn(*leaves)
    tot = sum((o * u.double()).sum() for o, u in zip(outs, upstream) if o is not None and u is not None)
    want = [t for t in leaves if t is not None]
    gs = torch.autograd.grad(tot, want, allow_unused=True)
    it = iter(gs)
    return [next(it) if t is not None else None for t in leaves], [o.detach() if o is not None else None for o in outs]


class Permute(unittest.TestCase):
    def test_forward_backward(self):
        for _ in range(40):
            dt = RNG.choice(DTYPES)
            mdt = RNG.choice((torch.bool, torch.int8))
            n, e, h = RNG.randint(1, 23), RNG.randint(1, 9), RNG.randint(1, 37)
            k = RNG.randint(1, e)
            pad = RNG.random() < 0.4
            rmap = rand_map(n, e, k, mdt)
            x = rand((n, h), dt)
            p = rand((n, e), dt) if RNG.random() < 0.7 else None
            num_out = RNG.randint(1, n) * e + RNG.randrange(e) if pad else n * k + RNG.randrange(n)
            num_out = min(num_out, n * e)
            xs = maybe_strided(x).requires_grad_()
            ps = maybe_strided(p).requires_grad_() if p is not None else None
            out, pout, si = torch_npu.npu_moe_token_permute_with_routing_map(xs, maybe_strided(rmap), probs=ps,
                                                                             num_out_tokens=num_out, drop_and_pad=pad)
            rout, rpout, rsi = ref_permute(x.double(), rmap, p.double() if p is not None else None, num_out, pad)
            what = "permute dt=%s n=%d e=%d k=%d h=%d pad=%s probs=%s" % (dt, n, e, k, h, pad, p is not None)
            self.assertEqual(si.dtype, torch.int32)
            self.assertTrue(torch.equal(si.long(), rsi), what)
            self.assertTrue(torch.equal(out.double(), rout), what)  # pure data movement: exact
            if p is not None:
                self.assertTrue(torch.equal(pout.double(), rpout), what)
            else:
                self.assertIsNone(pout)
            # backward: upstream gradients on both differentiable outputs
            g1 = rand(tuple(out.shape), dt)
            g2 = rand(tuple(pout.shape), dt) if p is not None else None
            loss = (out.double() * g1.double()).sum() + ((pout.double() * g2.double()).sum() if p is not None else 0)
            loss.backward()
            (rgx, rgp), _ = grads(lambda a, b: ref_permute(a, rmap, b, num_out, pad), [x, p], [g1, None, None] if p is None
                                  else [g1, g2, None])
            (agx, _), _ = grads(lambda a, b: ref_permute(a, rmap, b, num_out, pad), [x.abs(), p.abs() if p is not None else None],
                                [g1.abs(), None, None])
            close(self, xs.grad, rgx, agx, dt, what + " tokens grad")
            if p is not None:
                self.assertTrue(torch.equal(ps.grad.double(), rgp), what + " probs grad")

    def test_torch_npu_cases(self):
        """The shapes of torch_npu's own test: 3 tokens, 2 experts."""
        x = rand((3, 4), torch.float32)
        full = torch.ones((3, 2), dtype=torch.bool)
        a, b, c = torch_npu.npu_moe_token_permute_with_routing_map(x, full, num_out_tokens=6, drop_and_pad=False)
        self.assertTrue(torch.equal(a, x[[0, 1, 2, 0, 1, 2]]))
        self.assertEqual(c.tolist(), [0, 3, 1, 4, 2, 5])
        part = torch.tensor([[True, False], [True, True], [True, True]])
        a, b, c = torch_npu.npu_moe_token_permute_with_routing_map(x, part, num_out_tokens=3, drop_and_pad=True)
        self.assertEqual(c.tolist(), [0, 1])  # capacity 1: rows 6 // ... 3 // 2 = 1 per expert
        self.assertTrue(torch.equal(a, x[[0, 1]]))
        p = rand((3, 2), torch.float32)
        a, b, c = torch_npu.npu_moe_token_permute_with_routing_map(x, full, probs=p, num_out_tokens=6, drop_and_pad=True)
        self.assertEqual(c.tolist(), [0, 1, 2, 0, 1, 2])
        self.assertTrue(torch.equal(b, p.t().reshape(-1)))

    def test_default_num_out_tokens(self):
        x = rand((5, 3), torch.float32)
        m = rand_map(5, 4, 1)
        a, b, c = torch_npu.npu_moe_token_permute_with_routing_map(x, m)  # num_out_tokens None -> N
        self.assertEqual(tuple(a.shape), (5, 3))
        self.assertIsNone(b)
        m2 = rand_map(5, 4, 2)  # two ones per row with the default topK 1: refused, as CANN would overflow
        with self.assertRaises(ValueError):
            torch_npu.npu_moe_token_permute_with_routing_map(x, m2)


class Unpermute(unittest.TestCase):
    def test_forward_backward(self):
        for _ in range(40):
            dt = RNG.choice(DTYPES)
            mdt = RNG.choice((torch.bool, torch.int8))
            n, e, h = RNG.randint(1, 19), RNG.randint(1, 9), RNG.randint(1, 33)
            k = RNG.randint(1, e)
            pad = RNG.random() < 0.4
            rmap = rand_map(n, e, k, mdt)
            p = rand((n, e), dt) if RNG.random() < 0.7 else None
            if pad:
                c = RNG.randint(1, n)
                m = e * c
                idx = torch.sort(rmap.bool().t().to(torch.int8), dim=-1, descending=True, stable=True)[1][:, :c]
                idx = idx.reshape(-1).to(torch.int32)
            else:
                m = n * k
                _, _, idx = torch_npu.npu_moe_token_permute_with_routing_map(rand((n, 1), dt), rmap, num_out_tokens=m)
                if RNG.random() < 0.3:
                    idx = idx.clone()
                    idx[RNG.randrange(m)] = -1  # an unused slot
            x = rand((m, h), dt)
            xs = maybe_strided(x).requires_grad_()
            ps = maybe_strided(p).requires_grad_() if p is not None else None
            restore = [n, h]
            out, oidx, tid, pp = torch_npu._npu_moe_token_unpermute_with_routing_map(
                xs, idx, restore, probs=ps, routing_map=rmap if (p is not None or RNG.random() < 0.5) else None,
                drop_and_pad=pad)
            what = "unpermute dt=%s n=%d e=%d k=%d h=%d pad=%s probs=%s" % (dt, n, e, k, h, pad, p is not None)
            p64 = p.double() if p is not None else None
            want = ref_unpermute(x.double(), idx, restore, p64, rmap, pad)
            want_abs = ref_unpermute(x.double().abs(), idx, restore, p64.abs() if p is not None else None, rmap, pad)
            close(self, out, want, want_abs, dt, what)
            if pad:
                sv, si = torch.sort(idx.double(), stable=True)
                self.assertTrue(torch.equal(tid.long(), sv.long()) and torch.equal(oidx.long(), si), what)
            g = rand((n, h), dt)
            out.backward(g)
            (rgx, rgp), _ = grads(lambda a, b: [ref_unpermute(a, idx, restore, b, rmap, pad)], [x, p], [g])
            (agx, agp), _ = grads(lambda a, b: [ref_unpermute(a, idx, restore, b, rmap, pad)],
                                  [x.abs(), p.abs() if p is not None else None], [g.abs()])
            # slots -1 name no row: their rows get no gradient (zeros), as in the reference
            close(self, xs.grad, rgx, agx, dt, what + " permuted_tokens grad")
            if p is not None:
                close(self, ps.grad, rgp, agp * 4, dt, what + " probs grad")


class Callers(unittest.TestCase):
    def test_mindspeed_permutation(self):
        """mindspeed/te/pytorch/permutation.py: permute with keywords, the grad positionally (probs grad
        None without probs), the unpermute through _npu_..., its grad with keywords."""
        n, e, k, h = 11, 6, 2, 8
        rmap = rand_map(n, e, k)
        x = rand((n, h), torch.bfloat16)
        probs = rand((n, e), torch.bfloat16)
        for pad in (False, True):
            num_out = n * k if not pad else 3 * e
            pin, pprob, si = torch_npu.npu_moe_token_permute_with_routing_map(x, rmap, probs=probs,
                                                                              num_out_tokens=num_out, drop_and_pad=pad)
            ag, pg = torch_npu.npu_moe_token_permute_with_routing_map_grad(pin, None, si, rmap, e, n, pad)
            self.assertIsNone(pg)
            self.assertEqual(tuple(ag.shape), (n, h))
            ag, pg = torch_npu.npu_moe_token_permute_with_routing_map_grad(pin, pprob, si, rmap, e, n, pad)
            self.assertEqual(tuple(pg.shape), (n, e))
            restore = torch.Size((n, h))
            out, out_index, token_id, _ = torch_npu._npu_moe_token_unpermute_with_routing_map(
                pin, si, restore, probs=probs, routing_map=rmap, drop_and_pad=pad)
            g = rand((n, h), torch.bfloat16)
            if pad:
                act, pgr = torch_npu.npu_moe_token_unpermute_with_routing_map_grad(
                    g, out_index, permuted_token_id=token_id, routing_map=rmap, permuted_tokens=pin, probs=probs,
                    drop_and_pad=pad, restore_shape=restore)
            else:
                act, pgr = torch_npu.npu_moe_token_unpermute_with_routing_map_grad(
                    g, si, si, routing_map=rmap, permuted_tokens=pin, probs=probs, drop_and_pad=pad,
                    restore_shape=restore)
            self.assertEqual(tuple(act.shape), tuple(pin.shape))
            self.assertEqual(tuple(pgr.shape), (n, e))
            if not pad:  # dropless round trip: sum over the routed experts of probs * token
                want = x.double() * (probs.double() * rmap.double()).sum(1, keepdim=True)
                close(self, out, want, want.abs() * 2, torch.bfloat16, "mindspeed round trip")
            act2, none = torch_npu.npu_moe_token_unpermute_with_routing_map_grad(
                g, si if not pad else out_index, si if not pad else token_id, routing_map=rmap,
                permuted_tokens=None, probs=None, drop_and_pad=pad, restore_shape=restore)
            self.assertIsNone(none)

    def test_torchtitan_combine(self):
        """torchtitan-npu: npu_moe_token_permute, then _npu_moe_token_unpermute_with_routing_map without
        probs or map, and its grad with the sorted indices twice."""
        n, e, h, k = 13, 4, 6, 3
        tok = rand((n, h), torch.float32).requires_grad_()
        ids = torch.stack([torch.randperm(e)[:k] for _ in range(n)])
        routed, sorted_indices = torch_npu.npu_moe_token_permute(tok, ids)
        out, _, _, _ = torch_npu._npu_moe_token_unpermute_with_routing_map(
            routed, sorted_indices, tok.shape, probs=None, routing_map=None, drop_and_pad=False)
        self.assertTrue(torch.allclose(out, tok * k))
        g = rand((n, h), torch.float32)
        act, _ = torch_npu.npu_moe_token_unpermute_with_routing_map_grad(
            g, sorted_indices, sorted_indices, routing_map=None, permuted_tokens=None, probs=None,
            drop_and_pad=False, restore_shape=tok.shape)
        self.assertTrue(torch.equal(act, g.repeat_interleave(k, 0)[torch.argsort(sorted_indices.long())]))
        out2 = torch_npu.npu_moe_token_unpermute_with_routing_map(routed, sorted_indices, list(tok.shape))
        out2.backward(g)
        self.assertTrue(torch.allclose(tok.grad, g * k))

    def test_errors(self):
        x = rand((4, 3), torch.float32)
        m = rand_map(4, 3, 1)
        with self.assertRaises(ValueError):  # routing_map must be 2-D
            torch_npu.npu_moe_token_permute_with_routing_map(x, m.reshape(-1))
        with self.assertRaises(ValueError):  # int8 map value 2
            torch_npu.npu_moe_token_permute_with_routing_map(x, m.to(torch.int8) * 2, num_out_tokens=4)
        with self.assertRaises(ValueError):  # dtype mismatch of probs
            torch_npu.npu_moe_token_permute_with_routing_map(x, m, probs=rand((4, 3), torch.float16), num_out_tokens=4)
        with self.assertRaises(tl.not_a_tensor_error()):
            torch_npu.npu_moe_token_permute_with_routing_map(x.numpy(), m)


if __name__ == "__main__":
    unittest.main(verbosity=2)
