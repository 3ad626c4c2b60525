"""test_torch_npu - moefr.torch_npu (torch_npu's MoE routing functions on libmoefr) against float64
pure-torch references written from CANN's documented semantics (SPEC section 9): forward values
(bit-exact for the data-movement operators), the torch_npu argument mapping (V3 count numbering,
row_idx_type, active_num), and gradients against torch.autograd over the float64 reference.
Random cases with odd sizes; every output the package allocates starts poisoned (NaN / -7)."""

import random
import unittest

import torch

import moefr_testlib as tl
from moefr import _routing, torch_npu
from moefr._lib import MoefrError

_routing.POISON_OUTPUTS = True
RNG = random.Random(tl.SEED)
torch.manual_seed(tl.SEED)
FLOATS = (torch.float32, torch.float16, torch.bfloat16)


def sizes():
    """A few random odd-sized problems (N, K, E, H)."""
    out = [(1, 1, 1, 1), (7, 3, 5, 17)]
    for _ in range(4):
        E = RNG.choice([2, 5, 8, 13])
        out.append((RNG.randint(1, 40), RNG.randint(1, min(E, 4)), E, RNG.choice([1, 3, 17, 33])))
    return out


def expert_ids(N, K, E):
    # Without replacement per row (as top-k gives); ties in the sort come from equal ids across rows.
    return torch.stack([torch.randperm(E)[:K] for _ in range(N)]).to(torch.int32).reshape(N, K)


# ---- float64 references (plain torch; differentiable where the operator is) ----

def ref_sort(expert_idx):
    flat = expert_idx.reshape(-1).long()
    # stable ascending by expert, ties by flat position j = r*K + k
    key = flat * (flat.numel() + 1) + torch.arange(flat.numel())
    perm = torch.argsort(key)
    scatter = torch.empty_like(perm)
    scatter[perm] = torch.arange(perm.numel())
    return flat, perm, scatter


def ref_init_routing_v2(x, expert_idx, active_rows, E, C, mode):
    """-> expanded_x, scatter index (slot -> row, -1 dropped), per-expert histogram."""
    N, K = expert_idx.shape
    flat, perm, scatter = ref_sort(expert_idx)
    hist = torch.bincount(flat, minlength=max(E, 1))[:max(E, 0)] if flat.numel() else torch.zeros(E, dtype=torch.long)
    if mode == 0:
        ex = x[perm[:active_rows] // K]
        return ex, scatter, hist
    starts = torch.cumsum(hist, 0) - hist
    pos = scatter - starts[flat]                     # place of slot j inside its expert
    kept = pos < C
    dst = torch.where(kept, flat * C + pos, torch.full_like(pos, -1))
    j = torch.nonzero(kept).reshape(-1)
    ex = torch.zeros((E * C, x.shape[1]), dtype=x.dtype)
    ex = ex.index_put((dst[j],), x[j // K])
    return ex.reshape(E, C, -1), dst, hist


class InitRoutingV2(unittest.TestCase):
    def test_dropless_values_and_counts(self):
        for (N, K, E, H) in sizes():
            for dt in FLOATS:
                x = torch.randn(N, H).to(dt)
                e = expert_ids(N, K, E)
                T = N * K
                for active_num in (-1, 0, max(1, T - 2), T + 5):
                    A = T if active_num <= 0 else min(active_num, T)
                    for num_type in (0, 1, 2):
                        ex, idx, cnt, sc = torch_npu.npu_moe_init_routing_v2(
                            x, e, active_num=active_num, expert_num=E, expert_tokens_num_type=num_type,
                            expert_tokens_num_flag=True)
                        rex, rscatter, hist = ref_init_routing_v2(x.double(), e, A, E, 0, 0)
                        self.assertEqual(tuple(ex.shape), (A, H))
                        self.assertTrue(torch.equal(ex.double(), rex), (N, K, E, H, dt))  # bit-exact
                        self.assertTrue(torch.equal(idx.long(), rscatter))
                        self.assertEqual(idx.dtype, torch.int32)
                        self.assertEqual(cnt.dtype, torch.int64)
                        if num_type == 0:
                            self.assertTrue(torch.equal(cnt, torch.cumsum(hist, 0)))
                        elif num_type == 1:
                            self.assertTrue(torch.equal(cnt, hist))
                        else:
                            self.assertEqual(tuple(cnt.shape), (E, 2))
                            nz = [(i, int(c)) for i, c in enumerate(hist) if c > 0]
                            want = torch.zeros((E, 2), dtype=torch.int64)
                            for row, (i, c) in enumerate(nz):
                                want[row, 0], want[row, 1] = i, c
                            self.assertTrue(torch.equal(cnt, want))
                        self.assertTrue(torch.equal(sc, torch.zeros(A)))

    def test_row_idx_type_gather_and_scale(self):
        for (N, K, E, H) in sizes():
            x = torch.randn(N, H)
            e = expert_ids(N, K, E)
            s = torch.rand(N)
            T = N * K
            A = max(1, T - 1)
            ex, idx, cnt, sc = torch_npu.npu_moe_init_routing_v2(x, e, scale=s, active_num=A, expert_num=E,
                                                                 row_idx_type=1)
            _, perm, _ = ref_sort(e)
            # row_idx_type 1: V3's kernel writes the whole sorted permutation (row i -> flat slot perm[i])
            self.assertTrue(torch.equal(idx.long(), perm))
            self.assertTrue(torch.equal(sc, s[perm[:A] // K]))
            self.assertTrue(torch.equal(cnt, torch.zeros(E, dtype=torch.int64)))  # flag False

    def test_drop_pad(self):
        for (N, K, E, H) in sizes():
            C = RNG.randint(1, N)
            x = torch.randn(N, H)
            e = expert_ids(N, K, E)
            s = torch.rand(N)
            for num_type in (0, 1, 2):
                ex, idx, cnt, sc = torch_npu.npu_moe_init_routing_v2(
                    x, e, scale=s, expert_capacity=C, expert_num=E, drop_pad_mode=1,
                    expert_tokens_num_type=num_type, expert_tokens_num_flag=True)
                rex, dst, hist = ref_init_routing_v2(x.double(), e, 0, E, C, 1)
                self.assertTrue(torch.equal(ex.double(), rex))
                self.assertTrue(torch.equal(idx.long(), dst))
                if num_type == 1:
                    self.assertTrue(torch.equal(cnt, hist))
                elif num_type == 0:
                    self.assertTrue(torch.equal(cnt, torch.cumsum(hist, 0)))
                want_sc = torch.zeros(E * C)
                j = torch.nonzero(dst >= 0).reshape(-1)
                want_sc[dst[j]] = s[j // K]
                self.assertTrue(torch.equal(sc, want_sc))

    def test_gradient(self):
        for (N, K, E, H) in sizes():
            for mode in (0, 1):
                x = torch.randn(N, H, requires_grad=True)
                e = expert_ids(N, K, E)
                T = N * K
                A = max(1, T - RNG.randint(0, 2))
                C = RNG.randint(1, N)
                kw = dict(drop_pad_mode=1, expert_capacity=C) if mode else dict(active_num=A)
                ex, idx, _, _ = torch_npu.npu_moe_init_routing_v2(x, e, expert_num=E, **kw)
                g = torch.randn(ex.shape)
                (ex * g).sum().backward()
                x64 = x.detach().double().requires_grad_()
                rex, _, _ = ref_init_routing_v2(x64, e, A, E, C, mode)
                (rex * g.double()).sum().backward()
                # fp32 sum of at most K terms vs the float64 sum: K ulps of the largest magnitude
                tol = K * 2.0 ** -23 * (g.abs().max().item() * K + 1e-30)
                err = (x.grad.double() - x64.grad).abs().max().item()
                self.assertLessEqual(err, tol, (N, K, E, H, mode))

    def test_active_expert_range(self):
        """V3's range filter (torch_npu's test golden): slots outside [start, end) are not routed."""
        for (N, K, E, H) in sizes():
            start = RNG.randint(0, E - 1)
            end = RNG.randint(start + 1, E)
            T = N * K
            for A in (T, max(1, T - 3)):
                x = torch.randn(N, H, requires_grad=True)
                e = expert_ids(N, K, E)
                s = torch.rand(N)
                for num_type in (0, 1, 2):
                    ex, idx, cnt, sc = torch_npu.npu_moe_init_routing_v2(
                        x, e, scale=s, active_num=A, expert_num=E, expert_tokens_num_type=num_type,
                        expert_tokens_num_flag=True, active_expert_range=[start, end])
                    flat = e.reshape(-1).long()
                    inside = (flat >= start) & (flat < end)
                    key = torch.where(inside, flat, torch.full_like(flat, 1 << 20))
                    perm = torch.argsort(key * (T + 1) + torch.arange(T))
                    actual = int(inside.sum())
                    valid = min(actual, A)
                    want_x = torch.zeros(A, H, dtype=torch.float64)
                    want_x[:valid] = x.detach().double()[perm[:valid] // K]
                    self.assertTrue(torch.equal(ex.double(), want_x), (N, K, E, H, start, end, A))
                    want_idx = torch.full((T,), -1, dtype=torch.long)
                    want_idx[perm[:actual]] = torch.arange(actual)
                    self.assertTrue(torch.equal(idx.long(), want_idx))
                    hist = torch.bincount(flat[inside] - start, minlength=end - start)
                    if num_type == 1:
                        self.assertTrue(torch.equal(cnt, hist))
                    elif num_type == 0:
                        self.assertTrue(torch.equal(cnt, torch.cumsum(hist, 0)))
                    else:
                        nz = torch.nonzero(hist).reshape(-1)
                        want = torch.zeros(E, 2, dtype=torch.int64)
                        want[: nz.numel(), 0], want[: nz.numel(), 1] = nz + start, hist[nz]
                        self.assertTrue(torch.equal(cnt, want))
                    want_sc = torch.zeros(A)
                    want_sc[:valid] = s[perm[:valid] // K]
                    self.assertTrue(torch.equal(sc, want_sc))
                g = torch.randn(ex.shape)
                x.grad = None
                (ex * g).sum().backward()
                want_g = torch.zeros(N, H, dtype=torch.float64)
                want_g.index_add_(0, perm[:valid] // K, g[:valid].double())
                tol = K * 2.0 ** -23 * (K * g.abs().max().item() + 1e-30)
                self.assertLessEqual((x.grad.double() - want_g).abs().max().item(), tol)

    def test_rejects(self):
        x = torch.randn(4, 3)
        e = expert_ids(4, 2, 4)
        with self.assertRaises(ValueError):
            torch_npu.npu_moe_init_routing_v2(x, e, expert_num=4, quant_mode=0)
        with self.assertRaises(ValueError):
            torch_npu.npu_moe_init_routing_v2(x, e, expert_num=4, active_expert_range=[1, 5])
        with self.assertRaises(ValueError):
            torch_npu.npu_moe_init_routing_v2(x, e, expert_num=4, active_expert_range=[1, 3],
                                              drop_pad_mode=1, expert_capacity=2)
        with self.assertRaises(ValueError):
            torch_npu.npu_moe_init_routing_v2(x, e, expert_num=4, row_idx_type=1, drop_pad_mode=1,
                                              expert_capacity=2)
        with self.assertRaises(MoefrError) as cm:  # the library's own check and message
            torch_npu.npu_moe_init_routing_v2(x, e, expert_num=4, drop_pad_mode=1, expert_capacity=0)
        self.assertIn("expertCapacity", str(cm.exception))


class ComputeExpertTokens(unittest.TestCase):
    def test_values(self):
        self.assertEqual(torch_npu.npu_moe_compute_expert_tokens(
            torch.tensor([0, 0, 1, 1, 2, 2], dtype=torch.int32), 3).tolist(), [2, 4, 6])  # CANN's example
        for _ in range(5):
            E = RNG.randint(1, 40)
            ids = torch.sort(torch.randint(0, E, (RNG.randint(1, 300),), dtype=torch.int32)).values
            out = torch_npu.npu_moe_compute_expert_tokens(ids, E)
            want = torch.tensor([int((ids <= v).sum()) for v in range(E)], dtype=torch.int32)
            self.assertTrue(torch.equal(out, want))
            self.assertEqual(out.dtype, torch.int32)

    def test_ids_past_the_experts(self):
        """Ids equal to num_expert or above (torch_npu's own test draws randint(0, num_expert)) are
        not counted, as on the NPU; negative and unsorted ids are refused (issue 22, 5a)."""
        self.assertEqual(torch_npu.npu_moe_compute_expert_tokens(
            torch.tensor([0, 1, 1, 3, 3, 9], dtype=torch.int32), 3).tolist(), [1, 3, 3])
        for _ in range(5):
            E = RNG.randint(1, 40)
            ids = torch.sort(torch.randint(0, E + 1 + RNG.randint(0, 3), (RNG.randint(1, 300),),
                                           dtype=torch.int32)).values
            want = [int((ids <= v).sum()) for v in range(E)]
            self.assertEqual(torch_npu.npu_moe_compute_expert_tokens(ids, E).tolist(), want)
        for bad in ([-1, 0, 1], [0, 2, 1]):
            with self.assertRaises(RuntimeError):
                torch_npu.npu_moe_compute_expert_tokens(torch.tensor(bad, dtype=torch.int32), 3)


class Refusals(unittest.TestCase):
    def test_argument_checks_are_runtime_errors(self):
        """The wrappers' own argument checks raise what torch_npu's TORCH_CHECK raises, a RuntimeError
        (issue 22, difference 4), and stay ValueError / TypeError for moefr's earlier callers."""
        x, ids = torch.randn(4, 8), torch.zeros(4, 2, dtype=torch.int32)
        calls = [  # (call, also a TypeError, passes a non-tensor)
            (lambda: torch_npu.npu_moe_init_routing_v2(x, ids, active_num=4, expert_num=2, quant_mode=5), False, False),
            (lambda: torch_npu.npu_moe_token_permute(x, ids.long(), num_out_tokens=0, padded_mode=True), False, False),
            (lambda: torch_npu.npu_moe_gating_top_k_softmax([[1.0]], k=1), False, True),
            (lambda: torch_npu.npu_moe_token_permute(x.tolist(), ids.long()), True, True),
            (lambda: torch_npu.npu_swiglu("x"), True, True),
        ]
        for call, typ, not_tensor in calls:
            with self.assertRaises(RuntimeError) as cm:
                call()
            if not_tensor and tl.torch_ops():
                continue  # the operator's schema check: a RuntimeError only, as in real torch_npu
            self.assertIsInstance(cm.exception, ValueError)
            if typ:
                self.assertIsInstance(cm.exception, TypeError)


class FinalizeRouting(unittest.TestCase):
    def test_chain_gradients(self):
        """init_routing_v2 -> per-expert linear -> finalize_routing (mode 2, row layout index), all
        gradients (x, expert weights, skip1, bias, scales) against torch.autograd in float64."""
        for (N, K, E, H) in sizes():
            x = torch.randn(N, H, requires_grad=True)
            W = torch.randn(E, H, H, requires_grad=True)
            skip = torch.randn(N, H, requires_grad=True)
            bias = torch.randn(E, H, requires_grad=True)
            scales = torch.rand(N, K, requires_grad=True)
            e = expert_ids(N, K, E)
            g = torch.randn(N, H)

            def model(xx, WW, sk, bb, ss, native):
                if native:
                    ex, idx, cnt, _ = torch_npu.npu_moe_init_routing_v2(
                        xx, e, active_num=N * K, expert_num=E, expert_tokens_num_type=1,
                        expert_tokens_num_flag=True)
                    counts = cnt.tolist()
                else:
                    ex, idx, hist = ref_init_routing_v2(xx, e, N * K, E, 0, 0)
                    counts = hist.tolist()
                outs, start = [], 0
                for i, c in enumerate(counts):
                    outs.append(ex[start:start + c] @ WW[i])
                    start += c
                y = torch.cat(outs)
                if native:
                    return torch_npu.npu_moe_finalize_routing(y, sk, None, bb, ss, idx, e, drop_pad_mode=2)
                d = idx.reshape(N, K)
                return sk + (ss.unsqueeze(-1) * (y[d] + bb[e.long()])).sum(1)

            out = model(x, W, skip, bias, scales, True)
            (out * g).sum().backward()
            leaves64 = [t.detach().double().requires_grad_() for t in (x, W, skip, bias, scales)]
            ref = model(*leaves64, False)
            (ref * g.double()).sum().backward()
            scale = 1.0 + ref.abs().max().item()
            self.assertLessEqual((out.double() - ref).abs().max().item(), 1e-5 * scale * H)
            for name, a, b in zip(("x", "W", "skip1", "bias", "scales"), (x, W, skip, bias, scales), leaves64):
                mag = 1.0 + b.grad.abs().max().item()
                err = (a.grad.double() - b.grad).abs().max().item()
                self.assertLessEqual(err, 1e-5 * mag * max(H, K), (name, N, K, E, H))

    def test_k_and_defaults(self):
        N, K, E, H = 5, 2, 3, 4
        y = torch.randn(N * K, H)
        idx = torch.randperm(N * K).to(torch.int32)
        s = torch.rand(N, K)
        e = expert_ids(N, K, E)
        a = torch_npu.npu_moe_finalize_routing(y, None, None, None, s, idx, e, drop_pad_mode=2)
        b = torch_npu.npu_moe_finalize_routing(y, None, None, None, s, idx, e, 2, None)
        want = (s.double().unsqueeze(-1) * y.double()[idx.long().reshape(N, K)]).sum(1)
        self.assertTrue(torch.equal(a, b))
        self.assertLessEqual((a.double() - want).abs().max().item(), 1e-5 * (1 + want.abs().max().item()))
        with self.assertRaises(ValueError):
            torch_npu.npu_moe_finalize_routing(y, None, None, None, s, idx, e, 2, 2)


# op_plugin's schemas (config/op_plugin_functions.yaml, master), the contract for names, order,
# keyword-only markers and defaults.
SCHEMAS = [
    "npu_moe_gating_top_k_softmax(Tensor x, Tensor? finished=None, int k=1)",
    "npu_moe_gating_top_k_softmax_v2(Tensor x, *, int k=1, Tensor? finished=None, int? renorm=0, "
    "bool? output_softmax=False)",
    "npu_moe_token_permute(Tensor tokens, Tensor indices, int? num_out_tokens=None, bool padded_mode=False)",
    "npu_moe_token_unpermute(Tensor permuted_tokens, Tensor sorted_indices, Tensor? probs=None, "
    "bool padded_mode=False, int[]? restore_shape=None)",
    "npu_moe_init_routing(Tensor x, Tensor row_idx, Tensor expert_idx, int active_num)",
    "npu_moe_init_routing_v2(Tensor x, Tensor expert_idx, *, Tensor? scale=None, Tensor? offset=None, "
    "int active_num=-1, int expert_capacity=-1, int expert_num=-1, int drop_pad_mode=0, "
    "int expert_tokens_num_type=0, bool expert_tokens_num_flag=False, int quant_mode=-1, "
    "int[2] active_expert_range=[], int row_idx_type=0, int? x_dtype=None)",
    "npu_moe_compute_expert_tokens(Tensor sorted_expert_for_source_row, int num_expert)",
    "npu_moe_finalize_routing(Tensor expanded_permuted_rows, Tensor? skip1, Tensor? skip2, Tensor? bias, "
    "Tensor? scales, Tensor expanded_src_to_dst_row, Tensor? export_for_source_row, int? drop_pad_mode=0, "
    "int? k=1)",
]


def parse_schema(text):
    import re
    name, args = re.match(r"(\w+)\((.*)\)$", text).groups()
    params, kwonly = [], False
    for a in [p.strip() for p in args.split(", ")]:
        if a == "*":
            kwonly = True
            continue
        decl, _, default = a.partition("=")
        pname = decl.split()[-1]
        if default:
            default = {"None": None, "True": True, "False": False, "[]": []}.get(default, default)
            if isinstance(default, str):
                default = int(default)
        params.append((pname, kwonly, bool(_), default))
    return name, params


class Signatures(unittest.TestCase):
    def test_match_op_plugin(self):
        for text in SCHEMAS:
            name, params = parse_schema(text)
            fn = getattr(torch_npu, name)
            sig = tl.params(fn)
            self.assertEqual([p[0] for p in sig], [p[0] for p in params], name)
            for (_, pkw, phas, pdef), (pname, kwonly, has_default, default) in zip(sig, params):
                self.assertEqual(pkw, kwonly, (name, pname))
                self.assertEqual(phas, has_default, (name, pname))
                if has_default:
                    self.assertEqual(pdef, default, (name, pname))
            self.assertIn(name, torch_npu.__all__)


class GatherIndexTail(unittest.TestCase):
    def test_row_idx_type_1_narrow_range_tail_is_the_sorted_rest(self):
        # issue 22 difference 2: with row_idx_type 1 CANN's sort writes expandedRowIdx itself, so past
        # the in-range slots come the ids >= end by id, then the ids < start (moe_v3_sort_one_core.h)
        x = torch.randn(4, 3)
        ids = torch.tensor([[0, 3], [1, 2], [3, 0], [2, 1]], dtype=torch.int32)
        _, ri, _, _ = torch_npu.npu_moe_init_routing_v2(x, ids, active_num=8, expert_num=4,
                                                        active_expert_range=[0, 2], row_idx_type=1)
        # experts 0 and 1 in stable order: rows 0, 1 <- slots 0, 5 (expert 0); rows 2, 3 <- slots 2, 7;
        # then expert 2 (slots 3, 6) and expert 3 (slots 1, 4), outside the range
        self.assertEqual(ri.tolist(), [0, 5, 2, 7, 3, 6, 1, 4])


if __name__ == "__main__":
    unittest.main(verbosity=2)
