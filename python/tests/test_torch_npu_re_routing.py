"""test_torch_npu_re_routing - moefr.torch_npu.npu_moe_re_routing against a reference written from
CANN's formulas (moe/moe_re_routing/README.md: SrcOffset sums the blocks of earlier ranks and of
earlier experts on the same rank, DstOffset the blocks of earlier experts on every rank and of
earlier ranks for the same expert), a plain Python loop over every block. Every token dtype, both
count dtypes, with and without scales, strided inputs, counts leaving rows over, the calls
cann-recipes-infer's expert-parallel prefill and op-plugin's test make, and the refusals."""

import os
import random
import unittest

import torch

import moefr_testlib as tl
from moefr import _routing, torch_npu
from moefr.torch_npu import MoefrError

_routing.POISON_OUTPUTS = True
RNG = random.Random(tl.SEED)
torch.manual_seed(tl.SEED)
A2 = os.environ.get("MOEFR_SOC") == "ascend910b"


def reference(tokens, counts, scales, idx_type=0):
    """The four outputs from the offset formulas, one block at a time; rows past the total stay 0."""
    N, E = counts.shape
    c = [[int(counts[r, e]) for e in range(E)] for r in range(N)]
    A = tokens.shape[0]
    pt = torch.zeros_like(tokens)
    ps = torch.zeros_like(scales) if scales is not None else None
    idx = torch.zeros(A, dtype=torch.int32)
    for r in range(N):
        for e in range(E):
            src = sum(sum(c[rr]) for rr in range(r)) + sum(c[r][:e])
            dst = sum(c[rr][ee] for ee in range(e) for rr in range(N)) + sum(c[rr][e] for rr in range(r))
            for i in range(c[r][e]):
                pt[dst + i] = tokens[src + i]
                if ps is not None:
                    ps[dst + i] = scales[src + i]
                if idx_type == 0:
                    idx[dst + i] = src + i
                else:
                    idx[src + i] = dst + i
    num = torch.tensor([sum(c[r][e] for r in range(N)) for e in range(E)], dtype=counts.dtype)
    return pt, ps, idx, num


def random_counts(N, E, S):
    c = torch.zeros(N * E, dtype=torch.int64)
    for _ in range(S):
        c[RNG.randrange(N * E)] += 1
    return c.view(N, E)


def make_tokens(A, H, dt):
    if dt == torch.int8:
        return torch.randint(-128, 128, (A, H), dtype=torch.int8)
    return torch.randn(A, H).to(dt)


def same_bits(a, b):
    if a.dtype in (torch.float16, torch.bfloat16):
        return torch.equal(a.view(torch.int16), b.view(torch.int16))
    if a.dtype == torch.float32:
        return torch.equal(a.view(torch.int32), b.view(torch.int32))
    return torch.equal(a, b)


class ReRouting(unittest.TestCase):
    def test_random(self):
        for it in range(60):
            dt = RNG.choice([torch.float16, torch.bfloat16, torch.int8])
            cdt = RNG.choice([torch.int32, torch.int64])
            A, H = RNG.randint(0, 70), RNG.randint(1, 40)
            N, E = RNG.randint(1, 6), RNG.randint(1, 6)
            S = A if RNG.random() < 0.8 or A == 0 else RNG.randrange(A)
            counts = random_counts(N, E, S).to(cdt)
            tokens = make_tokens(A, H, dt)
            scales = None
            if RNG.random() < 0.6:
                scales = torch.randn(A) if (A2 or RNG.random() < 0.5) else torch.randn(A, RNG.randint(1, 4))
            idx_type = 0 if A2 else RNG.randint(0, 1)
            args_t, args_c, args_s = tokens, counts, scales
            if RNG.random() < 0.4:  # non-contiguous views of the same values
                args_t = tokens.t().contiguous().t()
                args_c = counts.t().contiguous().t()
                if scales is not None and scales.dim() == 2:
                    args_s = scales.t().contiguous().t()
            pt, ps, idx, num = torch_npu.npu_moe_re_routing(args_t, args_c, per_token_scales=args_s,
                                                           expert_token_num_type=1, idx_type=idx_type)
            wpt, wps, widx, wnum = reference(tokens, counts, scales, idx_type)
            what = "case %d: A %d H %d N %d E %d S %d %s %s" % (it, A, H, N, E, S, dt, cdt)
            self.assertEqual(pt.dtype, dt, what)
            self.assertEqual(idx.dtype, torch.int32, what)
            self.assertEqual(num.dtype, cdt, what)
            self.assertTrue(same_bits(pt, wpt), what)
            self.assertTrue(torch.equal(idx, widx), what)
            self.assertTrue(torch.equal(num, wnum), what)
            if scales is not None:
                self.assertEqual(tuple(ps.shape), tuple(scales.shape), what)
                self.assertTrue(same_bits(ps, wps), what)
            else:
                self.assertEqual(tuple(ps.shape), (A,))
                self.assertEqual(ps.dtype, torch.float32)
                self.assertTrue(torch.equal(ps, torch.zeros(A)), what)

    @unittest.skipIf(A2 or not hasattr(torch, "float8_e8m0fnu"), "Ascend 950 rules, PyTorch's 8-bit floats")
    def test_float8(self):
        """Ascend 950: FLOAT8 tokens with FLOAT8_E8M0 scales, moved as bytes (the torch dtypes carry them)."""
        for it in range(12):
            dt = RNG.choice([torch.float8_e4m3fn, torch.float8_e5m2])
            A, H, N, E = RNG.randint(1, 50), RNG.randint(1, 40), RNG.randint(1, 4), RNG.randint(1, 5)
            counts = random_counts(N, E, A).to(torch.int32)
            tokens = (torch.randn(A, H) * 4).to(dt)
            scales = torch.randint(0, 255, (A, RNG.randint(1, 3)), dtype=torch.uint8).view(torch.float8_e8m0fnu)
            pt, ps, idx, num = torch_npu.npu_moe_re_routing(tokens, counts, per_token_scales=scales)
            wpt, wps, widx, wnum = reference(tokens.view(torch.uint8), counts, scales.view(torch.uint8))
            self.assertEqual((pt.dtype, ps.dtype), (dt, torch.float8_e8m0fnu))
            self.assertTrue(torch.equal(pt.view(torch.uint8), wpt), it)
            self.assertTrue(torch.equal(ps.view(torch.uint8), wps), it)
            self.assertTrue(torch.equal(idx, widx) and torch.equal(num, wnum), it)

    def test_recipe_prefill(self):
        """cann-recipes-infer (models/deepseek_r1/models/modeling_deepseek.py forward_expert): after the
        all-to-all a rank holds, per source rank, its tokens for this rank's local experts; it calls
        npu_moe_re_routing(gathered_tokens, tokens_per_expert_group.view(ep_size, -1),
        per_token_scales=gathered_pertoken_scale), runs experts on the expert-major rows, and restores
        the received order with index_select(out, 0, gathered_ids_unsort.float().argsort().int())."""
        ep, local = 4, 3
        for quant in (False, True):
            tokens_per_expert_group = torch.randint(0, 6, (ep * local,), dtype=torch.int64)
            A = int(tokens_per_expert_group.sum())
            gathered = make_tokens(A, 16, torch.int8 if quant else torch.bfloat16)
            scale = torch.rand(A) + 0.5 if quant else None
            hs, gscale, ids_unsort, per_local = torch_npu.npu_moe_re_routing(
                gathered, tokens_per_expert_group.view(ep, -1), per_token_scales=scale)
            self.assertTrue(torch.equal(per_local, tokens_per_expert_group.view(ep, -1).sum(0)))
            # the rows of each local expert are contiguous: group sizes per_local in expert order
            owner = torch.repeat_interleave(torch.arange(local).repeat(ep), tokens_per_expert_group)
            self.assertTrue(torch.equal(owner[ids_unsort.long()], torch.repeat_interleave(torch.arange(local),
                                                                                           per_local)))
            back = torch.index_select(hs, 0, ids_unsort.float().argsort().int())
            self.assertTrue(same_bits(back, gathered))
            if quant:
                self.assertTrue(torch.equal(torch.index_select(gscale, 0, ids_unsort.float().argsort().int()),
                                            scale))

    def test_op_plugin_calls(self):
        """op-plugin test/test_custom_ops/test_npu_moe_re_routing.py: keyword arguments
        per_token_scales=None, expert_token_num_type=1, idx_type=0, tokens_dtype=None, int64 counts
        (2 ranks x 16 experts), fp16 tokens (bs, 4096); its counts are bs // 16 + randint(0, 5) each,
        which add up to about 2 * bs, more rows than tokens has: CANN would read past tokens, moefr
        refuses. With counts that add up the same call works."""
        bs, H = 32, 4096
        tokens = torch.randn(bs, H).to(torch.float16)
        bad = torch.full((2, 16), bs // 16, dtype=torch.int64) + torch.randint(0, 5, (2, 16))
        with self.assertRaises(RuntimeError) as cm:
            torch_npu.npu_moe_re_routing(tokens, bad, per_token_scales=None, expert_token_num_type=1, idx_type=0,
                                         tokens_dtype=None)
        self.assertIn("rows tokens has", str(cm.exception))
        good = random_counts(2, 16, bs)
        pt, ps, idx, num = torch_npu.npu_moe_re_routing(tokens, good, per_token_scales=None,
                                                        expert_token_num_type=1, idx_type=0, tokens_dtype=None)
        self.assertEqual(tuple(pt.shape), (bs, H))
        wpt, _, widx, wnum = reference(tokens, good, None)
        self.assertTrue(same_bits(pt, wpt) and torch.equal(idx, widx) and torch.equal(num, wnum))

    def test_signature(self):
        """op_plugin_functions.yaml: npu_moe_re_routing(Tensor tokens, Tensor expert_token_num_per_rank, *,
        Tensor? per_token_scales=None, int expert_token_num_type=1, int idx_type=0, int? tokens_dtype=None)."""
        ps = tl.params(torch_npu.npu_moe_re_routing)
        want = [("tokens", False, None), ("expert_token_num_per_rank", False, None), ("per_token_scales", True, None),
                ("expert_token_num_type", True, 1), ("idx_type", True, 0), ("tokens_dtype", True, None)]
        self.assertEqual([p[0] for p in ps], [w[0] for w in want])
        for (pname, pkw, phas, pdef), (name, kwonly, default) in zip(ps, want):
            self.assertEqual(pkw, kwonly, name)
            self.assertEqual(phas, kwonly, name)
            if kwonly:
                self.assertEqual(pdef, default, name)
        self.assertIn("npu_moe_re_routing", torch_npu.__all__)

    def test_errors(self):
        tokens = torch.randn(6, 4).half()
        counts = torch.tensor([[1, 2], [2, 1]], dtype=torch.int32)
        with self.assertRaises(RuntimeError):
            torch_npu.npu_moe_re_routing(tokens.view(-1), counts)
        with self.assertRaises(RuntimeError):
            torch_npu.npu_moe_re_routing(tokens, counts.view(-1))
        with self.assertRaises(MoefrError) as cm:  # torch_npu's own tokens_dtype check
            torch_npu.npu_moe_re_routing(tokens, counts, tokens_dtype=5)
        self.assertIn("tokens_dtype only supports", str(cm.exception))
        with self.assertRaises(MoefrError) as cm:  # hifloat8: not in the CANN table moefr follows
            torch_npu.npu_moe_re_routing(tokens.view(torch.uint8), counts, tokens_dtype=290)
        self.assertEqual(cm.exception.status, 161002)
        with self.assertRaises(MoefrError) as cm:
            torch_npu.npu_moe_re_routing(tokens, counts, expert_token_num_type=0)
        self.assertEqual(cm.exception.status, 561002)
        with self.assertRaises(MoefrError) as cm:
            torch_npu.npu_moe_re_routing(tokens.float(), counts)
        self.assertEqual(cm.exception.status, 161002)
        with self.assertRaises(MoefrError) as cm:
            torch_npu.npu_moe_re_routing(tokens, torch.tensor([[1, -1], [2, 1]], dtype=torch.int32))
        self.assertEqual(cm.exception.status, 161002)
        self.assertIn("negative", str(cm.exception))
        with self.assertRaises(MoefrError) as cm:
            torch_npu.npu_moe_re_routing(tokens, counts, idx_type=1 if A2 else 2)
        self.assertEqual(cm.exception.status, 561002)
        with self.assertRaises(tl.not_a_tensor_error()):
            torch_npu.npu_moe_re_routing(tokens.numpy(), counts)


if __name__ == "__main__":
    unittest.main()
