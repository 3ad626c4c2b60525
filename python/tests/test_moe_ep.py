"""test_moe_ep - moefr._routing's expert-parallel permute family (aclnnMoeTokenPermuteWithEp(Grad),
aclnnMoeTokenUnpermuteWithEp(Grad); torch_npu exposes none of them, so these are the moefr-level
functions) against float64 pure-torch references written from CANN's docs and kernels: the stable
sort by expert (ties by flat slot), the window [start, end) of sorted rows (start == end: all T,
start > end: wraps, rows past T +0.0), sums in float64 within the dtype's rounding. Random odd
sizes, every range shape, with and without probs; outputs start poisoned."""

import random
import unittest

import torch

import moefr_testlib as tl
from moefr import MoefrError, _routing

_routing.POISON_OUTPUTS = True
RNG = random.Random(tl.SEED)
torch.manual_seed(tl.SEED)
DTYPES = (torch.float32, torch.float16, torch.bfloat16)
TOL = {torch.float32: 2e-6, torch.float16: 2e-3, torch.bfloat16: 1.6e-2}


def ranges(T):
    s = RNG.randint(0, T)
    return [None, [], [0, T], [s, s], [s, RNG.randint(s, T)], [RNG.randint(0, T), RNG.randint(0, T)], [s, T]]


def ref_sort(ids):
    flat = ids.reshape(-1).long()
    return torch.argsort(flat * (flat.numel() + 1) + torch.arange(flat.numel()))


def close(test, got, want, dt, what, scale=None):
    """got within the dtype's rounding of the float64 want; scale: the sum of |terms| (cancellation)."""
    want = want.to(torch.float64)
    err = (got.to(torch.float64) - want).abs()
    bound = TOL[dt] * ((want.abs() if scale is None else scale) + 1e-3)
    test.assertTrue(bool((err <= bound).all()), "%s: max error %g" % (what, float((err - bound).max())))


class Permute(unittest.TestCase):
    def test_forward(self):
        for _ in range(12):
            N, K, E, H = RNG.randint(1, 30), RNG.randint(1, 5), RNG.randint(1, 9), RNG.choice([1, 3, 17])
            T = N * K
            for dt in DTYPES:
                ids = torch.randint(0, E, (N, K), dtype=RNG.choice([torch.int32, torch.int64]))
                tok = torch.randn(N, H).to(dt)
                probs = torch.rand(N, K).to(dt)
                perm = ref_sort(ids)
                for rng in ranges(T):
                    num_out = RNG.randint(-T, T)
                    pt, si, pp = _routing.token_permute_with_ep(tok, ids, probs, rng, num_out)
                    # reference: rank of each flat slot; the window of sorted rows
                    rank = torch.empty(T, dtype=torch.long)
                    rank[perm] = torch.arange(T)
                    self.assertTrue(torch.equal(si.long(), rank), "sorted_indices")
                    if rng:
                        A = rng[1] - rng[0]
                        A = max(0, min(A + T if A <= 0 else A, T))
                        lo = 0 if A == T else rng[0]
                    else:
                        A = max(0, min(num_out + T if num_out <= 0 else num_out, T))
                        lo = 0
                    want = torch.zeros(A, H, dtype=torch.float64)
                    wantp = torch.zeros(A, dtype=torch.float64)
                    n = max(0, min(A, T - lo))
                    want[:n] = tok.double()[perm[lo:lo + n] // K]
                    wantp[:n] = probs.double().reshape(-1)[perm[lo:lo + n]]
                    self.assertTrue(torch.equal(pt.double(), want), "permuted tokens %s range %s" % (dt, rng))
                    if rng:
                        self.assertTrue(torch.equal(pp.double(), wantp), "permuted probs %s range %s" % (dt, rng))
                    else:
                        self.assertIsNone(pp)

    def test_grad(self):
        for _ in range(12):
            N, K, H = RNG.randint(1, 25), RNG.randint(1, 5), RNG.choice([1, 4, 19])
            T = N * K
            for dt in DTYPES:
                si = torch.randperm(T).to(torch.int32)
                for rng in ranges(T):
                    lo, hi = (rng[0], rng[1]) if rng else (0, None)
                    M = max(rng[1] - rng[0], 0) if rng else RNG.randint(1, T)
                    g = torch.randn(M, H).to(dt)
                    gp = torch.randn(M).to(dt)
                    if rng:
                        si = torch.where((si >= lo) & (si < hi) & (si >= lo + M), torch.tensor(hi, dtype=torch.int32), si)
                    tg, pg = _routing.token_permute_with_ep_grad(g, si, gp, K, rng)
                    d = si.long().reshape(N, K)
                    kept = (d >= lo) & (d < (hi if rng else M))
                    rows = g.double()[(d - lo).clamp(0, max(M - 1, 0))] if M else torch.zeros(N, K, H, dtype=torch.float64)
                    want = torch.where(kept.unsqueeze(-1), rows, torch.zeros((), dtype=torch.float64))
                    close(self, tg, want.sum(1), dt, "token grad %s %s" % (dt, rng), want.abs().sum(1))
                    if rng:
                        pw = gp.double()[(d - lo).clamp(0, max(M - 1, 0))] if M else torch.zeros(N, K, dtype=torch.float64)
                        pw = torch.where(kept, pw, torch.zeros((), dtype=torch.float64))
                        self.assertTrue(torch.equal(pg.double(), pw), "probs grad %s %s" % (dt, rng))
                    else:
                        self.assertIsNone(pg)


class Unpermute(unittest.TestCase):
    def test_forward(self):
        for _ in range(12):
            N, K, H = RNG.randint(1, 25), RNG.randint(1, 5), RNG.choice([1, 5, 33])
            T = N * K
            for dt in DTYPES:
                pdt = RNG.choice(DTYPES)
                for rng in ranges(T):
                    if not rng:
                        continue  # aclnnMoeTokenUnpermute: covered by test_torch_npu_permute
                    lo, hi = rng
                    M = max(hi - lo, 1)
                    x = torch.randn(M, H).to(dt)
                    probs = torch.rand(N, K).to(pdt)
                    probs[probs < 0.1] = 0
                    si = torch.randint(0, T, (T,), dtype=torch.int32)
                    si = torch.where((si >= lo) & (si < hi) & (si - lo >= M), torch.tensor(hi, dtype=torch.int32), si)
                    out = _routing.token_unpermute_with_ep(x, si, probs, K, rng)
                    d = si.long().reshape(N, K)
                    kept = (d >= lo) & (d < hi) & (probs != 0)
                    rows = x.double()[(d - lo).clamp(0, M - 1)] * probs.double().unsqueeze(-1)
                    want = torch.where(kept.unsqueeze(-1), rows, torch.zeros((), dtype=torch.float64))
                    close(self, out, want.sum(1), dt, "unpermute %s/%s %s" % (dt, pdt, rng), want.abs().sum(1))

    def test_grad(self):
        for _ in range(12):
            N, K, H = RNG.randint(1, 25), RNG.randint(1, 5), RNG.choice([1, 6, 21])
            T = N * K
            for dt in DTYPES:
                pdt = RNG.choice(DTYPES)
                for rng in ranges(T):
                    lo, hi = (rng[0], rng[1]) if rng else (0, T)
                    if hi < lo:
                        continue
                    M = max(hi - lo, 1)
                    x = torch.randn(M, H).to(dt)
                    g = torch.randn(N, H).to(dt)
                    probs = torch.rand(N, K).to(pdt)
                    si = torch.randperm(T).to(torch.int32)
                    gx, gp = _routing.token_unpermute_with_ep_grad(g, si, x, probs, range_=rng, topk_num=K)
                    d = si.long().reshape(N, K)
                    kept = (d >= lo) & (d < min(hi, lo + M) if lo == 0 else d < hi)
                    want = torch.zeros(M, H, dtype=torch.float64)
                    prod = g.double().unsqueeze(1) * probs.double().unsqueeze(-1)  # (N, K, H)
                    want[(d - lo)[kept]] = prod[kept]
                    close(self, gx, want, dt, "permuted grad %s/%s %s" % (dt, pdt, rng))
                    dots = (x.double()[(d - lo).clamp(0, M - 1)] * g.double().unsqueeze(1)).sum(-1)
                    wantp = torch.where(kept, dots, torch.zeros((), dtype=torch.float64))
                    err = (gp.double() - wantp).abs()
                    scale = (x.double().abs().max() * g.double().abs().sum(-1).max()).item() + 1e-3
                    self.assertTrue(bool((err <= TOL[pdt] * scale + TOL[dt] * scale).all()),
                                    "probs grad %s/%s %s" % (dt, pdt, rng))

    def test_refusals(self):
        x = torch.zeros(2, 4)
        si = torch.arange(6, dtype=torch.int32)
        with self.assertRaises(MoefrError):  # sorted position 4 names row 3 of permuted's 2
            _routing.token_unpermute_with_ep(x, si, torch.ones(3, 2), 2, [1, 5])
        with self.assertRaises(MoefrError):  # end below start after normalisation
            _routing.token_unpermute_with_ep_grad(torch.zeros(3, 4), si, x, torch.ones(3, 2), range_=[4, 2],
                                                  topk_num=2)
        with self.assertRaises(MoefrError):  # range of three values
            _routing.token_permute_with_ep(torch.zeros(3, 4), torch.zeros(3, 2, dtype=torch.int32), None, [0, 1, 2])


if __name__ == "__main__":
    unittest.main()
