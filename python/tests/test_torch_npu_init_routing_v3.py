"""moefr.torch_npu.npu_moe_init_routing_v2 on aclnnMoeInitRoutingV3 (issue 22 part 5): the differences
torch_npu's own test (test_npu_moe_init_routing_v2.py, its CPU golden) found, and the int8 quant modes,
against float64 / integer references written here from CANN's kernels' semantics."""

import random
import unittest

import torch

import moefr_testlib as tl
from moefr import _routing, torch_npu
from moefr._lib import MoefrError

_routing.POISON_OUTPUTS = True  # unwritten outputs show up as NaN / -7
RNG = random.Random(tl.SEED)
torch.manual_seed(tl.SEED)


def ref_order(ids, start, end):
    """CANN's sort: ids in [start, end) by id, then ids >= end by id, then ids < start; ties by slot."""
    flat = ids.reshape(-1).long()
    T = flat.numel()
    big = 1 << 40
    key = torch.where(flat < start, torch.full_like(flat, big), flat - start)
    perm = torch.tensor(sorted(range(T), key=lambda j: (int(key[j]), j)), dtype=torch.long)
    inside = (flat >= start) & (flat < end)
    return flat, perm, int(inside.sum()), inside


def round_half_even(v):
    return torch.round(v)  # torch.round rounds half to even


class Differences(unittest.TestCase):
    def test_1_int8_x_moves_as_is(self):
        for N, K, E, H in ((5, 2, 4, 7), (13, 3, 6, 33)):
            x = torch.randint(-128, 128, (N, H), dtype=torch.int8)
            ids = torch.randint(0, E, (N, K), dtype=torch.int32)
            ex, idx, cnt, _ = torch_npu.npu_moe_init_routing_v2(x, ids, expert_num=E, expert_tokens_num_type=1,
                                                                expert_tokens_num_flag=True)
            _, perm, A, _ = ref_order(ids, 0, E)
            self.assertEqual(ex.dtype, torch.int8)
            self.assertTrue(torch.equal(ex[:A], x[perm[:A] // K]))
            self.assertTrue(torch.equal(cnt, torch.bincount(ids.reshape(-1).long(), minlength=E)))

    def test_2_row_idx_type_1_tail_with_a_narrow_range(self):
        for _ in range(6):
            N, K, E = RNG.randint(1, 20), RNG.randint(1, 5), RNG.randint(2, 12)
            start = RNG.randint(0, E - 1)
            end = RNG.randint(start + 1, E)
            ids = torch.randint(0, E, (N, K), dtype=torch.int32)
            x = torch.randn(N, 9)
            for rt in (0, 1):
                ex, idx, cnt, _ = torch_npu.npu_moe_init_routing_v2(
                    x, ids, expert_num=E, active_expert_range=[start, end], row_idx_type=rt,
                    expert_tokens_num_type=1, expert_tokens_num_flag=True)
                flat, perm, A, inside = ref_order(ids, start, end)
                if rt == 1:  # the whole permutation: the tail holds the out-of-range slots in sort order
                    self.assertEqual(idx.tolist(), perm.tolist())
                else:
                    want = torch.full((N * K,), -1, dtype=torch.long)
                    want[perm[:A]] = torch.arange(A)
                    self.assertEqual(idx.tolist(), want.tolist())
                self.assertTrue(torch.equal(ex[:A], x[perm[:A] // K]))
                self.assertTrue(torch.equal(ex[A:], torch.zeros_like(ex[A:])))
                self.assertTrue(torch.equal(cnt, torch.bincount(flat[inside] - start, minlength=end - start)))

    def test_5_ids_outside_range_or_expert_num_are_dropped(self):
        N, K, E, H = 9, 3, 5, 4
        for rng in ([0, E], [1, 4], []):
            ids = torch.randint(-3, E + 4, (N, K), dtype=torch.int32)
            ids[0, 0], ids[1, 1] = E + 100, -1  # certainly outside
            x = torch.randn(N, H)
            start, end = (rng or [0, E])
            for rt in (0, 1):
                ex, idx, cnt, _ = torch_npu.npu_moe_init_routing_v2(
                    x, ids, expert_num=E, active_expert_range=rng, row_idx_type=rt, expert_tokens_num_type=2,
                    expert_tokens_num_flag=True)
                flat, perm, A, inside = ref_order(ids, start, end)
                self.assertTrue(torch.equal(ex[:A], x[perm[:A] // K]))
                hist = torch.bincount(flat[inside] - start, minlength=end - start)
                nz = torch.nonzero(hist).reshape(-1)
                want = torch.zeros(E, 2, dtype=torch.int64)
                want[: nz.numel(), 0], want[: nz.numel(), 1] = nz + start, hist[nz]
                self.assertTrue(torch.equal(cnt, want))
                if rt == 1:
                    self.assertEqual(idx.tolist(), perm.tolist())
                else:
                    self.assertEqual(int((idx >= 0).sum()), A)
        # drop/pad: ids outside [0, E) get no slot (-1) instead of an error
        ids = torch.tensor([[0, 7], [-2, 1], [1, 5]], dtype=torch.int32)
        x = torch.randn(3, 2)
        ex, idx, cnt, _ = torch_npu.npu_moe_init_routing_v2(x, ids, expert_num=5, expert_capacity=2, drop_pad_mode=1,
                                                            expert_tokens_num_type=1, expert_tokens_num_flag=True)
        self.assertEqual(idx.tolist(), [0, -1, -1, 2, 3, -1])
        self.assertEqual(cnt.tolist(), [1, 2, 0, 0, 0])
        self.assertTrue(torch.equal(ex[1, 1], x[2]) and torch.equal(ex[0, 0], x[0]))

    def test_row_idx_type_1_gradient(self):
        N, K, E, H = 7, 3, 6, 5
        ids = torch.randint(0, E, (N, K), dtype=torch.int32)
        x = torch.randn(N, H, requires_grad=True)
        ex, idx, _, _ = torch_npu.npu_moe_init_routing_v2(x, ids, expert_num=E, active_expert_range=[1, 4],
                                                          row_idx_type=1)
        g = torch.randn(ex.shape)
        (ex * g).sum().backward()
        _, perm, A, _ = ref_order(ids, 1, 4)
        want = torch.zeros(N, H, dtype=torch.float64).index_add_(0, perm[:A] // K, g[:A].double())
        self.assertLessEqual((x.grad.double() - want).abs().max().item(), K * 2.0 ** -22 * (g.abs().max().item() + 1))


class Quant(unittest.TestCase):
    def test_dynamic(self):
        for dt in (torch.float32, torch.float16, torch.bfloat16):
            for smooth in (False, True):
                N, K, E, H = 11, 2, 6, 37
                start, end = 1, 5
                x = (torch.randn(N, H) * 3).to(dt)
                x[2] = 0  # a zero row: scale 0, values 0
                ids = torch.randint(0, E, (N, K), dtype=torch.int32)
                sm = torch.rand(end - start, H) * 2 if smooth else None
                ex, idx, _, sc = torch_npu.npu_moe_init_routing_v2(
                    x, ids, scale=sm, expert_num=E, active_expert_range=[start, end], quant_mode=1)
                flat, perm, A, _ = ref_order(ids, start, end)
                self.assertEqual(ex.dtype, torch.int8)
                for i in range(A):
                    j = int(perm[i])
                    y = x[j // K].float()
                    if smooth:
                        y = y * sm[int(flat[j]) - start]
                    s = (y.abs().max() / 127).float()  # fp32 division
                    self.assertEqual(sc[i].item(), s.item())
                    if s.item() == 0:
                        self.assertTrue(torch.equal(ex[i], torch.zeros(H, dtype=torch.int8)))
                        continue
                    q64 = y.double() / s.double()
                    want = round_half_even((y / s).double()).clamp(-128, 127)
                    self.assertTrue(torch.equal(ex[i].double(), want), (dt, smooth, i))
                    self.assertLessEqual((ex[i].double() - q64).abs().max().item(), 0.5 + 1e-4)
                self.assertTrue(torch.equal(ex[A:], torch.zeros_like(ex[A:])))
                self.assertTrue(torch.equal(sc[A:], torch.zeros_like(sc[A:])))

    def test_static(self):
        for dt in (torch.float32, torch.float16, torch.bfloat16):
            N, K, E, H = 6, 2, 4, 19
            x = (torch.randn(N, H) * 40).to(dt)
            ids = torch.randint(0, E, (N, K), dtype=torch.int32)
            scale = torch.tensor([1.7]) if dt != torch.bfloat16 else torch.tensor([3.1])
            offset = torch.tensor([0.25])
            ex, _, _, _ = torch_npu.npu_moe_init_routing_v2(x, ids, scale=scale, offset=offset, expert_num=E,
                                                            quant_mode=0)
            _, perm, A, _ = ref_order(ids, 0, E)
            # fp16 arithmetic as the kernel: each step rounded to fp16 once, then rint and saturation
            h = x[perm[:A] // K].float().half()
            v = (h.float() * scale.half().float()).half()
            v = (v.float() + offset.half().float()).half().double()
            want = round_half_even(v).clamp(-128, 127).to(torch.int8)
            self.assertTrue(torch.equal(ex[:A], want), dt)
            self.assertGreater(int((want.abs() == 127).sum() + (want == -128).sum()), 0)  # saturation reached

    def test_static_ties_and_rejections(self):
        x = torch.tensor([[2.5, 3.5, -2.5, -3.5, 0.5, 1e6]])
        ids = torch.zeros(1, 1, dtype=torch.int32)
        ex, _, _, _ = torch_npu.npu_moe_init_routing_v2(x, ids, scale=torch.tensor([1.0]), offset=torch.tensor([0.0]),
                                                        expert_num=1, quant_mode=0)
        self.assertEqual(ex.tolist(), [[2, 4, -2, -4, 0, 127]])
        for q in (2, 3, 6, 9, 13):  # fp8 / hifloat8 / mx / int4: the library refuses (561002)
            with self.assertRaises(MoefrError):
                torch_npu.npu_moe_init_routing_v2(x, ids, expert_num=1, quant_mode=q)
        with self.assertRaises(MoefrError):  # static needs scale and offset
            torch_npu.npu_moe_init_routing_v2(x, ids, expert_num=1, quant_mode=0)


if __name__ == "__main__":
    unittest.main(verbosity=2)
