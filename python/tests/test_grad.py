"""test_grad - moefr.moe_finalize_routing_grad (the functional backward) against a float64
reference: every mode and dtype, numpy and torch, output kinds/shapes/dtypes, strided views, errors."""

import subprocess
import sys
import unittest

import numpy as np
import torch

import moefr_testlib as tl
from moefr_testlib import moefr

NP_DTYPES = {"float32": np.float32, "float16": np.float16}
TORCH_DTYPES = {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16}
BITS = {2: (np.uint16, torch.int16), 4: (np.uint32, torch.int32)}


def cast(x64, kind, dtype):
    """float64 numpy -> the kind/dtype under test (RNE, as the library's own rounding)."""
    if kind == "np":
        return x64.astype(NP_DTYPES[dtype])
    return torch.from_numpy(x64).to(TORCH_DTYPES[dtype])


def bits(x):
    if isinstance(x, torch.Tensor):
        return x.contiguous().view(BITS[x.element_size()][1]).numpy().astype(np.int64)
    return np.ascontiguousarray(x).view(BITS[x.itemsize][0]).astype(np.int64)


def round_like(v64, like):
    """float64 values rounded as the spec rounds gradExpandedX: to fp32 once, then to like's dtype."""
    v32 = v64.astype(np.float32)
    if isinstance(like, torch.Tensor):
        return torch.from_numpy(v32).to(like.dtype)
    return v32.astype(like.dtype)


def ref_backward(gy, rows, D0, x, s, e, b):
    """float64 backward per SPEC section 4 on float64 inputs. rows (R, K): the row of slot
    (r, k), kept when 0 <= row < D0. Returns gx (D0, H), gs (R, K), and the error scale
    sum_j |x_j| |g_j| of each gs entry."""
    R, H = gy.shape
    K = rows.shape[1]
    gx = np.zeros((D0, H))
    gs = np.zeros((R, K))
    scale = np.zeros((R, K))
    for r in range(R):
        for k in range(K):
            d = rows[r, k]
            kept = 0 <= d < D0
            if kept:
                gx[d] = gy[r] * (s[r, k] if s is not None else 1.0)
            if s is not None:
                term = x[d].copy() if kept else np.zeros(H)
                if b is not None:
                    term = term + b[e[r, k]]
                gs[r, k] = term @ gy[r]
                scale[r, k] = np.abs(term) @ np.abs(gy[r])
    return gx, gs, scale


class Case:
    """Inputs of one functional-backward call, in float64 and in the kind/dtype under test."""

    def __init__(self, rng, kind, dtype, mode, R=7, K=3, H=37, E=5, with_scales=True, with_bias=False,
                 active=0, scale_dtype=None):
        p = tl.Problem(rng, R, K, H, 3 if mode == 1 else 2, E=E, with_scales=with_scales,
                       with_bias=with_bias)
        self.p, self.mode, self.active = p, mode, active
        K = p.K
        n = R * K
        self.D0 = p.E * p.C if mode == 1 else (active if 0 < active < n else n)
        # With activeNum the index is still a permutation; rows >= activeNum count as dropped.
        self.rows = p.rows.copy()
        self.expert_num = p.E if mode == 1 else 0
        self.expert_capacity = p.C if mode == 1 else 0
        x_shape = (p.E, p.C, H) if mode == 1 else (self.D0, H)
        sd = scale_dtype or dtype
        # Round every float64 input to the dtype first, so the reference sees what the library sees.
        self.t = {
            "grad_y": cast(rng.standard_normal((R, H)), kind, dtype),
            "expanded_row_idx": self._idx(kind, self.rows.reshape(-1)),
            "expanded_x": cast(rng.standard_normal(x_shape), kind, dtype) if with_scales else None,
            "scales": cast(rng.uniform(-1, 1, (R, K)), kind, sd) if with_scales else None,
            "bias": cast(rng.standard_normal((E, H)), kind, dtype) if with_bias else None,
            "expert_idx": self._idx(kind, p.expert) if with_bias else None,
        }
        self.v = {k: (tl.to64(a) if a is not None and k not in ("expanded_row_idx", "expert_idx") else a)
                  for k, a in self.t.items()}
        self.kw = dict(drop_pad_mode=mode, active_num=active, expert_num=self.expert_num,
                       expert_capacity=self.expert_capacity)

    @staticmethod
    def _idx(kind, a):
        a = np.ascontiguousarray(a, dtype=np.int32)
        return a if kind == "np" else torch.from_numpy(a)

    def call(self, **override):
        t = dict(self.t)
        t.update(override)
        return moefr.moe_finalize_routing_grad(t["grad_y"], t["expanded_row_idx"], t["expanded_x"],
                                               t["scales"], t["expert_idx"], t["bias"], **self.kw)

    def reference(self):
        v = self.v
        x = v["expanded_x"].reshape(-1, self.p.H) if v["expanded_x"] is not None else None
        return ref_backward(v["grad_y"], self.rows, self.D0, x, v["scales"], self.p.expert, v["bias"])


class FunctionalBackward(unittest.TestCase):
    def setUp(self):
        self.rng = np.random.default_rng(tl.SEED)

    def check_case(self, c):
        gx, gs = c.call()
        gy = c.t["grad_y"]
        R, H = c.p.R, c.p.H
        kind = torch.Tensor if isinstance(gy, torch.Tensor) else np.ndarray
        self.assertIsInstance(gx, kind)
        self.assertIsInstance(gs, kind)
        x_shape = (c.p.E, c.p.C, H) if c.mode == 1 else (c.D0, H)
        self.assertEqual(tuple(gx.shape), x_shape)
        self.assertEqual(gx.dtype, gy.dtype)
        s = c.t["scales"]
        self.assertEqual(tuple(gs.shape), (R, c.p.K) if s is not None else (R, 1))
        self.assertEqual(gs.dtype, s.dtype if s is not None else gy.dtype)

        ref_gx, ref_gs, scale = c.reference()
        # gradExpandedX: one fp32 product rounded once -> bit-exact (+0.0 in unnamed rows).
        np.testing.assert_array_equal(bits(gx), bits(round_like(ref_gx, gx).reshape(x_shape)))
        if s is None:
            np.testing.assert_array_equal(tl.to64(gs), np.zeros((R, 1)))
            return
        # gradScales: the spec's bound, 1e-6 * sum|x||g| + half an ulp of the output dtype.
        got = tl.to64(gs)
        tol = 1e-6 * scale + 0.5 * tl.ulp(ref_gs, tl.dtype_name(gs))
        err = np.abs(got - ref_gs)
        self.assertTrue(np.all(err <= tol), "gradScales error %g > tol %g at %s" % (
            (err - tol).max() + tol.flat[np.argmax(err - tol)], tol.flat[np.argmax(err - tol)],
            np.unravel_index(np.argmax(err - tol), err.shape)))

    def test_all_modes_dtypes(self):
        configs = [
            dict(mode=0, with_scales=False),
            dict(mode=0),
            dict(mode=0, with_bias=True),
            dict(mode=0, active=13),
            dict(mode=0, active=13, with_bias=True),
            dict(mode=1, with_scales=False),
            dict(mode=1),
            dict(mode=1, with_bias=True),
            dict(mode=1, R=33, K=4, H=131, E=7, with_bias=True),
        ]
        for kind, dtypes in (("np", NP_DTYPES), ("torch", TORCH_DTYPES)):
            for dtype in dtypes:
                for cfg in configs:
                    with self.subTest(kind=kind, dtype=dtype, **cfg):
                        self.check_case(Case(self.rng, kind, dtype, **cfg))

    def test_mixed_scale_dtype(self):
        # scales may differ from grad_y (Ascend 950 rules): gradScales follows scales.
        for kind, dtype, sd in (("torch", "bfloat16", "float32"), ("np", "float16", "float32"),
                                ("torch", "float32", "bfloat16")):
            for mode in (0, 1):
                with self.subTest(kind=kind, dtype=dtype, scales=sd, mode=mode):
                    self.check_case(Case(self.rng, kind, dtype, mode, with_bias=True, scale_dtype=sd))

    def test_empty(self):
        for kind in ("np", "torch"):
            c = Case(self.rng, kind, "float32", 0, R=0, K=2, H=5)
            gx, gs = c.call()
            self.assertEqual(tuple(gx.shape), (0, 5))
            self.assertEqual(tuple(gs.shape), (0, 2))

    def test_results_are_new_arrays(self):
        c = Case(self.rng, "torch", "float32", 0)
        gx1, gs1 = c.call()
        gx2, gs2 = c.call()
        self.assertNotEqual(gx1.data_ptr(), gx2.data_ptr())
        for a in c.t.values():
            if a is not None:
                self.assertNotEqual(a.data_ptr(), gx1.data_ptr())


def strided_copy_torch(t, how, rng):
    """The same values as t, laid out differently in a larger storage."""
    if t is None or t.dim() == 0:
        return t
    if how == "transposed":
        if t.dim() < 2:
            return strided_copy_torch(t, "sliced", rng)
        perm = list(range(t.dim()))[::-1]
        return t.permute(*perm).contiguous().permute(*perm)
    if how == "sliced":  # every other element of the last dim of a wider buffer
        big = torch.empty(t.shape[:-1] + (2 * t.shape[-1] + 1,), dtype=t.dtype)
        big.zero_()
        big[..., 1::2] = t
        return big[..., 1::2]
    if how == "offset":  # a block in the middle of a larger storage
        big = torch.zeros((t.shape[0] + 3,) + t.shape[1:], dtype=t.dtype)
        big[2:2 + t.shape[0]] = t
        return big[2:2 + t.shape[0]]
    raise ValueError(how)


def strided_copy_numpy(a, how):
    if a is None or a.ndim == 0:
        return a
    if how == "transposed":
        if a.ndim < 2:
            return strided_copy_numpy(a, "reversed")
        return np.ascontiguousarray(a.T).T
    if how == "sliced":
        big = np.zeros(a.shape[:-1] + (3 * a.shape[-1] + 2,), a.dtype)
        big[..., 2::3] = a
        return big[..., 2::3]
    if how == "offset":
        big = np.zeros((a.shape[0] + 4,) + a.shape[1:], a.dtype)
        big[1:1 + a.shape[0]] = a
        return big[1:1 + a.shape[0]]
    if how == "reversed":  # negative strides: base pointer below the view's first element
        big = np.ascontiguousarray(a[::-1])
        return big[::-1]
    raise ValueError(how)


class StridedInputs(unittest.TestCase):
    def setUp(self):
        self.rng = np.random.default_rng(tl.SEED + 1)

    def compare(self, c, make):
        gx, gs = c.call()
        for name in c.t:
            with self.subTest(tensor=name):
                sx, ss = c.call(**{name: make(c.t[name])})
                np.testing.assert_array_equal(bits(sx), bits(gx))
                np.testing.assert_array_equal(bits(ss), bits(gs))
        everything = {k: make(v) for k, v in c.t.items()}
        sx, ss = c.call(**everything)
        np.testing.assert_array_equal(bits(sx), bits(gx))
        np.testing.assert_array_equal(bits(ss), bits(gs))

    def test_torch_views(self):
        for how in ("transposed", "sliced", "offset"):
            for mode in (0, 1):
                with self.subTest(how=how, mode=mode):
                    c = Case(self.rng, "torch", "bfloat16", mode, with_bias=True)
                    self.compare(c, lambda t: strided_copy_torch(t, how, self.rng))

    def test_numpy_views(self):
        for how in ("transposed", "sliced", "offset", "reversed"):
            for mode in (0, 1):
                with self.subTest(how=how, mode=mode):
                    c = Case(self.rng, "np", "float16", mode, with_bias=True)
                    self.compare(c, lambda a: strided_copy_numpy(a, how))

    def test_expanded_grad_y(self):
        # A broadcast (stride 0) grad_y, as autograd produces for out.sum().
        c = Case(self.rng, "torch", "float32", 0)
        row = torch.from_numpy(self.rng.standard_normal((1, c.p.H)).astype(np.float32))
        gx, gs = c.call(grad_y=row.expand(c.p.R, c.p.H))
        rx, rs = c.call(grad_y=row.repeat(c.p.R, 1))
        np.testing.assert_array_equal(bits(gx), bits(rx))
        np.testing.assert_array_equal(bits(gs), bits(rs))

    def test_views_are_not_copies(self):
        from moefr import _views
        big = torch.arange(60, dtype=torch.float32).reshape(6, 10)
        v = big[1:5, 2:9:3].t()
        d = _views.view_of(v, "v")
        self.assertIs(d.owner, v)
        self.assertEqual(d.base_ptr, big.data_ptr())
        self.assertEqual((d.dims, d.strides, d.offset, d.storage), ([3, 4], [3, 10], 12, 60))
        a = np.arange(60, dtype=np.float32).reshape(6, 10)
        w = a[4:0:-1, 2:9:3]
        d = _views.view_of(w, "w")
        self.assertIs(d.owner, w)
        self.assertEqual(d.base_ptr, a.ctypes.data)
        self.assertEqual((d.dims, d.strides, d.offset, d.storage), ([4, 3], [-10, 3], 42, 60))


class Errors(unittest.TestCase):
    def setUp(self):
        self.rng = np.random.default_rng(tl.SEED + 2)

    def expect(self, status, words, fn):
        with self.assertRaises(ValueError) as cm:
            fn()
        e = cm.exception
        self.assertIsInstance(e, moefr.MoefrError)
        self.assertEqual(e.status, status, str(e))
        # The message is the library's own, still readable through aclGetRecentErrMsg.
        from moefr import _lib
        self.assertEqual(str(e), _lib.last_error(_lib.library()))
        for w in words:
            self.assertIn(w, str(e))

    def test_errors(self):
        for kind in ("np", "torch"):
            c = Case(self.rng, kind, "float32", 0, with_bias=True)
            idx = c.t["expanded_row_idx"]
            with self.subTest(kind=kind, error="shape"):
                # CANN takes the rows from expandedRowIdx, so expandedX (or scales) is the one named
                self.expect(561002, ["20", "21"], lambda: c.call(expanded_row_idx=idx[:20]))
            with self.subTest(kind=kind, error="dtype"):
                x16 = c.t["expanded_x"].astype(np.float16) if kind == "np" else c.t["expanded_x"].half()
                self.expect(161002, ["expandedXOptional"], lambda: c.call(expanded_x=x16))
            with self.subTest(kind=kind, error="index dtype"):
                i64 = idx.astype(np.int64) if kind == "np" else idx.long()
                self.expect(161002, ["expandedRowIdx"], lambda: c.call(expanded_row_idx=i64))
            with self.subTest(kind=kind, error="repeated index (accepted: the last writer keeps the row)"):
                dup = idx.copy() if kind == "np" else idx.clone()
                dup[5] = dup[2]
                gx, _ = c.call(expanded_row_idx=dup)
                gy, sc = c.t["grad_y"], c.t["scales"]
                K = sc.shape[1]
                want = (gy[5 // K].astype(np.float32) * sc[5 // K, 5 % K].astype(np.float32)) if kind == "np" else \
                    (gy[5 // K].float() * sc[5 // K, 5 % K].float())
                got = gx[int(dup[5])]
                got = got.astype(np.float32) if kind == "np" else got.float()
                self.assertTrue(bool((got == want).all()), "row %d does not hold entry 5's value" % int(dup[5]))
            with self.subTest(kind=kind, error="expert out of range"):
                e = c.t["expert_idx"].copy() if kind == "np" else c.t["expert_idx"].clone()
                e[1, 1] = 5
                self.expect(161002, ["expertIdx"], lambda: c.call(expert_idx=e))
            with self.subTest(kind=kind, error="mode"):
                self.expect(561002, ["dropPadMode"], lambda: moefr.moe_finalize_routing_grad(
                    c.t["grad_y"], idx, drop_pad_mode=2))
            with self.subTest(kind=kind, error="mode 1 without expert_num"):
                self.expect(561002, ["expertNum"], lambda: moefr.moe_finalize_routing_grad(
                    c.t["grad_y"], idx, drop_pad_mode=1, expert_num=-1, expert_capacity=4))
            with self.subTest(kind=kind, error="scales without expanded_x"):
                self.expect(561002, ["expandedXOptional"], lambda: c.call(expanded_x=None))

    def test_threads(self):
        """Concurrent callers (ctypes drops the GIL in the library): each gets its own result
        and its own error message (aclGetRecentErrMsg is per thread)."""
        import threading
        cases = [Case(np.random.default_rng(tl.SEED + 10 + i), "torch", "float32", i % 2, R=50, H=300,
                      with_bias=True) for i in range(4)]
        want = [c.call() for c in cases]
        errors, results = [], [None] * len(cases)

        def work(i):
            try:
                c = cases[i]
                for _ in range(20):
                    got = c.call()
                    assert all(torch.equal(a, b) for a, b in zip(got, want[i])), "thread %d result" % i
                    try:
                        c.call(expanded_row_idx=c.t["expanded_row_idx"][: 7 + i])
                    except moefr.MoefrError as e:
                        n = 7 + i  # each thread's own shape in its own message
                        assert ("(%d)" % n) in str(e) or ("must be %d," % n) in str(e), str(e)
                    else:
                        raise AssertionError("no error in thread %d" % i)
                results[i] = True
            except Exception as e:  # reported below, in the main thread
                errors.append(e)

        threads = [threading.Thread(target=work, args=(i,)) for i in range(len(cases))]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        self.assertEqual(errors, [])
        self.assertEqual(results, [True] * len(cases))

    def test_unsupported_numpy_dtype(self):
        with self.assertRaises(TypeError):
            moefr.moe_finalize_routing_grad(np.zeros((2, 3), np.float64).astype(np.longdouble),
                                            np.arange(2, dtype=np.int32))


class Package(unittest.TestCase):
    def test_numpy_only_import(self):
        """torch stays optional: with torch unimportable the numpy path works and never imports it."""
        code = (
            "import sys; sys.modules['torch'] = None\n"
            "sys.path.insert(0, %r)\n"
            "import numpy as np, moefr\n"
            "gx, gs = moefr.moe_finalize_routing_grad(np.ones((2, 3), np.float32), np.array([1, 0], np.int32))\n"
            "assert gx.tolist() == [[1.0] * 3] * 2 and gs.shape == (2, 1), (gx, gs)\n"
            "out = None\n"
            "print('ok', moefr.version())\n" % tl.os.path.join(tl.HERE, ".."))
        r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertTrue(r.stdout.startswith("ok 0."), r.stdout)

    def test_source_tree_lookup(self):
        """From a checkout (no MOEFR_LIBRARY) the package takes <root>/build*/libmoefr.so,
        skipping sanitizer builds, which would abort an uninstrumented interpreter."""
        import shutil
        import tempfile
        from moefr import _lib
        real = _lib.library_path()
        with tempfile.TemporaryDirectory() as root:
            shutil.copytree(tl.os.path.join(tl.HERE, "..", "moefr"), tl.os.path.join(root, "python", "moefr"),
                            ignore=shutil.ignore_patterns("__pycache__"))
            open(tl.os.path.join(root, "CMakeLists.txt"), "w").close()
            for d, sanitize in (("build-rel", "OFF"), ("build-asan", "address")):
                tl.os.makedirs(tl.os.path.join(root, d))
                tl.os.symlink(tl.os.path.abspath(real), tl.os.path.join(root, d, "libmoefr.so"))
                with open(tl.os.path.join(root, d, "CMakeCache.txt"), "w") as f:
                    f.write("MOEFR_SANITIZE:STRING=%s\n" % sanitize)
            code = "import sys; sys.path.insert(0, %r); import moefr; print(moefr.library_path(), moefr.version())" % (
                tl.os.path.join(root, "python"))
            env = {k: v for k, v in tl.os.environ.items() if k != "MOEFR_LIBRARY"}
            r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertEqual(r.stdout.split()[0], tl.os.path.join(root, "build-rel", "libmoefr.so"))

    def test_library_override(self):
        code = "import sys; sys.path.insert(0, %r); import moefr; moefr.version()" % tl.os.path.join(tl.HERE, "..")
        env = dict(tl.os.environ, MOEFR_LIBRARY="/nonexistent/libmoefr.so")
        r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("/nonexistent/libmoefr.so", r.stderr)


if __name__ == "__main__":
    unittest.main()
