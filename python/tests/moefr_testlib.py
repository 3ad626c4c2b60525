"""moefr_testlib - shared pieces of the Python tests: seeding (MOEFR_TEST_SEED replays a run),
random MoE routing problems in all four layouts, float64 references, and ulp-based tolerances."""

import os
import random
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.normpath(os.path.join(HERE, "..")))  # the source-tree package

import moefr  # noqa: E402
from moefr import _ops  # noqa: E402

# Every output the package allocates starts as NaN, so an element the library fails to
# write shows up as a mismatch instead of passing by luck.
_ops.POISON_OUTPUTS = True


def seed():
    """One seed per test process, printed so a failure can be replayed."""
    s = os.environ.get("MOEFR_TEST_SEED")
    s = int(s) if s else random.SystemRandom().randrange(1 << 31)
    print("seed %d (replay with MOEFR_TEST_SEED=%d)" % (s, s), file=sys.stderr)
    return s


SEED = seed()

# (mantissa bits, minimum normal exponent) per dtype name, for ulp().
_FORMATS = {"float32": (23, -126), "float16": (10, -14), "bfloat16": (7, -126)}


def ulp(ref, dtype_name):
    """Spacing of the dtype's values at |ref| (float64 array), subnormals included."""
    mant, emin = _FORMATS[dtype_name]
    a = np.abs(np.asarray(ref, dtype=np.float64))
    e = np.floor(np.log2(np.where(a > 0, a, 1.0)))
    e = np.where(a > 0, np.maximum(e, emin), emin)
    return np.exp2(e - mant)


def fwd_rel(K):
    """The forward's accumulation error relative to the summed magnitudes (tests/fwd_ref.h's
    fr_bound, the canonical order of issue 13): fp32 for K <= 32 (at most 2K + 1 <= 65 roundings
    of 2^-24), fp64 for K > 32 ((K + 3) 2^-52, rounded up to 1e-12 to cover a float64 reference's
    own rounding too). Add half an ulp of the output dtype for the final rounding."""
    return 65 * 2.0 ** -24 * (1 + 2.0 ** -20) if K <= 32 else max((K + 3) * 2.0 ** -52, 1e-12)


def dtype_name(x):
    return str(x.dtype).replace("torch.", "")


def to64(x):
    """float64 numpy copy of a numpy array or torch tensor (bf16 included)."""
    if hasattr(x, "detach"):
        return x.detach().double().numpy()
    return np.asarray(x, dtype=np.float64)


class Problem:
    """A random routing problem. Indices are generated in row layout (slot r*K + k) and
    re-laid in the column layout the forward reads in modes 0/1."""

    def __init__(self, rng, R, K, H, mode, E=5, C=None, with_scales=True, with_bias=False,
                 with_x1=False, with_x2=False):
        self.R, self.K, self.H, self.mode, self.E = R, K, H, mode, E
        if not with_scales:
            K = self.K = 1
        drop_pad = mode in (1, 3)
        # Each token picks K distinct experts (top-k never repeats one).
        self.expert = np.array([rng.permutation(E)[:K] for _ in range(R)], np.int32).reshape(R, K)
        if drop_pad:
            self.C = C if C is not None else max(1, (R * K) // E - 1)  # tight: some slots drop
            fill = np.zeros(E, np.int64)
            rows = np.full((R, K), -1, np.int64)
            for r in range(R):
                for k in range(K):
                    e = self.expert[r, k]
                    if fill[e] < self.C:
                        rows[r, k] = e * self.C + fill[e]
                        fill[e] += 1
            self.x_shape = (E, self.C, H)
        else:
            self.C = None
            rows = rng.permutation(R * K).reshape(R, K)
            self.x_shape = (R * K, H)
        self.rows = rows.astype(np.int32)  # (R, K): the expanded_x row of slot (r, k), -1 dropped
        self.with_scales, self.with_bias = with_scales, with_bias
        self.with_x1, self.with_x2 = with_x1, with_x2

    def index(self):
        """expanded_row_idx as the forward expects it for this mode."""
        return (self.rows.T if self.mode in (0, 1) else self.rows).reshape(-1).copy()

    def data(self, rng, scale_dtype=None):
        """float64 numpy values (exactly representable in bf16 and fp16 with mild magnitudes is
        not required: inputs are rounded by the caller to the dtype under test)."""
        d = {"expanded_x": rng.standard_normal(self.x_shape)}
        if self.with_scales:
            d["scales"] = rng.uniform(-1.0, 1.0, (self.R, self.K))
        if self.with_bias:
            d["bias"] = rng.standard_normal((self.E, self.H))
        if self.with_x1:
            d["x1"] = rng.standard_normal((self.R, self.H))
        if self.with_x2:
            d["x2"] = rng.standard_normal((self.R, self.H))
        return d


def ref_forward64(p, v):
    """float64 forward from float64 inputs v (dict of numpy arrays); returns (R, H)."""
    R, K, H = p.R, p.K, p.H
    x = v["expanded_x"].reshape(-1, H)
    out = np.zeros((R, H))
    if "x1" in v:
        out += v["x1"]
    if "x2" in v:
        out += v["x2"]
    s = v["scales"] if "scales" in v else np.ones((R, 1))
    for r in range(R):
        for k in range(K):
            d = p.rows[r, k]
            term = x[d].copy() if d >= 0 else np.zeros(H)
            if "bias" in v:
                term += v["bias"][p.expert[r, k]]
            out[r] += s[r, k] * term
    return out


def ref_grads64(p, v, g):
    """float64 gradients of sum(out * g) with respect to every input in v."""
    R, K, H = p.R, p.K, p.H
    s = v["scales"] if "scales" in v else np.ones((R, 1))
    x = v["expanded_x"].reshape(-1, H)
    gx = np.zeros_like(x)
    gs = np.zeros((R, K))
    gb = np.zeros((p.E, H))
    for r in range(R):
        for k in range(K):
            d, e = p.rows[r, k], p.expert[r, k]
            term = x[d].copy() if d >= 0 else np.zeros(H)
            if "bias" in v:
                term += v["bias"][e]
                gb[e] += s[r, k] * g[r]
            if d >= 0:
                gx[d] = s[r, k] * g[r]
            gs[r, k] = term @ g[r]
    out = {"expanded_x": gx.reshape(v["expanded_x"].shape), "x1": g, "x2": g}
    if "scales" in v:
        out["scales"] = gs
    if "bias" in v:
        out["bias"] = gb
    return out


def dot_bound(x_terms, g):
    """sum_j |x_j| |g_j| per row pair, the scale of the spec's gradScales error bound."""
    return np.abs(x_terms) @ np.abs(g)


def torch_ops():
    """True where moefr.torch_npu's functions are torch.ops.npu operators (PyTorch >= 2.4)."""
    from moefr import torch_npu
    return torch_npu.TORCH_OPS


def not_a_tensor_error():
    """What passing a non-tensor where a Tensor goes raises: moefr's TypeError (also a ValueError and a
    RuntimeError) from the Python functions on PyTorch 1.13; on PyTorch >= 2.4 the operator's schema
    check in the dispatcher, a RuntimeError, as real torch_npu raises."""
    return RuntimeError if torch_ops() else TypeError


def params(fn):
    """[(name, keyword-only, has default, default)] of a torch_npu function: its Python signature on
    PyTorch 1.13, its operator's schema (the default overload) on PyTorch >= 2.4."""
    if torch_ops():
        out = []
        for a in fn.default._schema.arguments:
            d = a.default_value if a.has_default_value() else None
            out.append((a.name, a.kwarg_only, a.has_default_value(), d))
        return out
    import inspect
    return [(p.name, p.kind == inspect.Parameter.KEYWORD_ONLY, p.default is not inspect.Parameter.empty,
             None if p.default is inspect.Parameter.empty else p.default)
            for p in inspect.signature(fn).parameters.values()]
