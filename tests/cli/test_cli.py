#!/usr/bin/python3
# tests/cli/test_cli.py - end-to-end tests of the `moefr` CLI on numpy-written .npy files
# (versions 1-3), against an independent float64 reference, plus bad inputs -> exit codes.
#
# usage: test_cli.py grad|forward|misc MOEFR_BINARY WORKDIR
# MOEFR_TEST_SEED replays a run; the seed is printed first.
import os
import random
import shutil
import subprocess
import sys

import numpy as np

what, moefr, work = sys.argv[1], sys.argv[2], sys.argv[3]
# cross builds run the CLI through qemu-user (make test-aarch64 sets MOEFR_TEST_EMULATOR)
emu = [os.environ["MOEFR_TEST_EMULATOR"]] if os.environ.get("MOEFR_TEST_EMULATOR") else []
seed = int(os.environ.get("MOEFR_TEST_SEED", random.SystemRandom().randrange(1 << 31)))
print(f"test_cli {what}: seed {seed} (MOEFR_TEST_SEED={seed} replays)", flush=True)
rng = np.random.default_rng(seed)
shutil.rmtree(work, ignore_errors=True)
os.makedirs(work)
failures = 0
case_no = 0


def fail(msg):
    global failures
    failures += 1
    print("FAIL:", msg, flush=True)


# ---------------------------------------------------------------- rounding, independent of numpy's casts

BITS = {"f32": (24, -149, 127), "f16": (11, -24, 15), "bf16": (8, -133, 127)}


def round_to(v, dt):
    """Round float64 values to nearest-even in dtype dt, by explicit quantum arithmetic."""
    prec, min_q, emax = BITS[dt]
    v = np.asarray(v, dtype=np.float64)
    out = np.zeros_like(v)
    nz = v != 0
    _, e = np.frexp(v[nz])  # |v| = m * 2^e, m in [0.5, 1): leading bit 2^(e-1)
    q = np.maximum(e - prec, min_q).astype(np.float64)
    r = np.rint(np.ldexp(v[nz], (-q).astype(np.int64))) * np.exp2(q)  # scaling by 2^k is exact
    maxv = (2.0 - 2.0 ** (1 - prec)) * 2.0 ** emax
    r = np.where(np.abs(r) > maxv, np.copysign(np.inf, r), r)
    out[nz] = r
    out[~nz] = v[~nz]
    return out


def fma32(s, v, a):
    """fp32 s * v + a with one rounding (IEEE fusedMultiplyAdd), for fp32 values held in float64:
    s * v is exact in float64, the sum is split exactly into hi + lo (TwoSum), and hi rounds to
    fp32 as hi + lo does unless hi is an fp32 midpoint with lo != 0 (then lo decides the side)."""
    p = s * v
    hi = p + a
    bb = hi - p
    lo = (p - (hi - bb)) + (a - bb)
    r = round_to(hi, "f32")
    prec, min_q, emax = BITS["f32"]
    nz = (hi != 0) & np.isfinite(hi)
    _, e = np.frexp(np.where(nz, hi, 1.0))
    q = np.maximum(e - prec, min_q)
    m = np.ldexp(np.where(nz, hi, 0.0), -q)
    fl = np.floor(m)
    mid = nz & (m - fl == 0.5) & (lo != 0)
    side = np.ldexp(fl + (lo > 0), q)
    maxv = (2.0 - 2.0 ** (1 - prec)) * 2.0 ** emax
    side = np.where(np.abs(side) > maxv, np.copysign(np.inf, side), side)
    return np.where(mid, side, r)


def to_bits(v64, dt):
    """float64 values exactly representable in dt -> the array numpy/moefr stores."""
    if dt == "f32":
        return v64.astype(np.float32)
    if dt == "f16":
        return v64.astype(np.float16)
    return (v64.astype(np.float32).view(np.uint32) >> 16).astype(np.uint16)


def widen(a, dt):
    """Stored array -> float64 values."""
    if dt == "bf16":
        return (a.astype(np.uint32) << 16).view(np.float32).astype(np.float64)
    return a.astype(np.float64)


def rand_values(shape, dt, scale=1.0):
    v = rng.standard_normal(shape) * scale
    return to_bits(round_to(v, dt), dt)


def half_ulp(v64, dt):
    """Half an ulp of dt at |v| (subnormal spacing included)."""
    prec, min_q, _ = BITS[dt]
    a = np.abs(v64)
    _, e = np.frexp(np.where(a == 0, 1.0, a))
    q = np.where(a == 0, min_q, np.maximum(e - prec, min_q))
    return np.exp2(q.astype(np.float64)) / 2


def bitsof(a):
    return a.view(np.uint32 if a.dtype.itemsize == 4 else np.uint16)


# ---------------------------------------------------------------- files and running

def save(path, arr, version=None):
    if version is None:
        version = [(1, 0), (2, 0), (3, 0)][int(rng.integers(3))]
    with open(path, "wb") as f:
        np.lib.format.write_array(f, np.ascontiguousarray(arr), version=version)
    return path


def run(args):
    p = subprocess.run(emu + [moefr] + args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=120)
    return p.returncode, p.stdout, p.stderr


def new_case():
    global case_no
    case_no += 1
    d = os.path.join(work, f"case{case_no:03d}")
    os.makedirs(d)
    return d


def load_out(path, expect_dtype):
    a = np.load(path)
    if a.dtype != np.dtype(expect_dtype):
        raise ValueError(f"{path}: dtype {a.dtype}, expected {expect_dtype}")
    return a


NPDT = {"f32": "<f4", "f16": "<f2", "bf16": "<u2"}


def check_only_files(outdir, names, label):
    have = sorted(os.listdir(outdir)) if os.path.isdir(outdir) else []
    if have != sorted(names):
        fail(f"{label}: files in --out are {have}, expected {sorted(names)}")


# ---------------------------------------------------------------- grad

def grad_case(dt, sdt, mode, with_scales, with_bias, with_x, active=0, big=False):
    R = int(rng.integers(200, 400)) if big else int(rng.integers(1, 14))
    K = int(rng.integers(1, 5)) if with_scales else 1
    H = int(rng.integers(129, 300)) if big else int(rng.integers(1, 70))
    RK = R * K
    E = int(rng.integers(1, 5))
    C = int(rng.integers(1, RK + 2))
    d = new_case()
    label = f"grad dt={dt} scales={sdt if with_scales else None} mode={mode} bias={with_bias} x={with_x} " \
            f"active={active} R={R} K={K} H={H} ({d})"
    gy = rand_values((R, H), dt)
    if mode == 0:
        idx = rng.permutation(RK).astype(np.int32)
        D0 = active if 0 < active < RK else RK
        xshape = (D0, H)
        if rng.random() < 0.4:  # CANN's UT data: draws from [0, activeNum) with repeats
            idx = rng.integers(0, D0, size=RK).astype(np.int32)
    else:
        slots = rng.permutation(E * C)[: min(RK, E * C)]
        idx = np.full(RK, -1, dtype=np.int32)
        pos = rng.permutation(RK)[: len(slots)]
        keep = rng.random(len(slots)) < 0.8
        idx[pos[keep]] = slots[keep]
        D0 = E * C
        xshape = (E, C, H)
        if rng.random() < 0.4:  # CANN's system tests: uniform in [-1, E*C) with repeats
            idx = rng.integers(-1, E * C, size=RK).astype(np.int32)
    args = ["grad", "--grad-y", save(f"{d}/gy.npy", gy), "--expanded-row-idx", save(f"{d}/idx.npy", idx)]
    if mode:
        args += ["--drop-pad-mode", str(mode), "--expert-num", str(E), "--expert-capacity", str(C)]
    if active:
        args += ["--active-num", str(active)]
    x = sc = bias = ei = None
    if with_x:
        x = rand_values(xshape, dt)
        args += ["--expanded-x", save(f"{d}/x.npy", x)]
    if with_scales:
        sc = rand_values((R, K), sdt)
        args += ["--scales", save(f"{d}/sc.npy", sc)]
    if with_bias:
        ei = rng.integers(0, E, size=(R, K)).astype(np.int32)
        bias = rand_values((E, H), dt)
        args += ["--expert-idx", save(f"{d}/ei.npy", ei), "--bias", save(f"{d}/bias.npy", bias)]
    if "bf16" in (dt, sdt if with_scales else dt):
        args += ["--dtype", "bf16"]
    out = f"{d}/out/sub"  # two levels: --out is created with its parents
    args += ["--out", out]
    rc, so, se = run(args)
    if rc != 0:
        fail(f"{label}: exit {rc}: {se.strip()}")
        return
    names = ["grad_expanded_x.npy"] + (["grad_scales.npy"] if with_scales else [])
    check_only_files(out, names, label)

    # Reference: the fp32 product gy*s (exact in float64, then one RNE to fp32), rounded once more to dt.
    g64 = widen(gy, dt)
    want_gx = np.zeros(xshape, dtype=np.float64).reshape(D0, H)
    written = np.zeros(D0, dtype=bool)
    s64 = widen(sc, sdt) if with_scales else np.ones((R, K))
    x64 = widen(x, dt).reshape(D0, H) if with_x else None
    b64 = widen(bias, dt) if with_bias else None
    want_gs = np.zeros((R, K))
    bound = np.zeros((R, K))
    for i in range(RK):
        r, k, di = i // K, i % K, int(idx[i])
        kept = 0 <= di < D0
        if kept:
            want_gx[di] = round_to(round_to(g64[r] * s64[r, k], "f32"), dt) if with_scales else g64[r]
            written[di] = True
        if with_scales:
            f = np.zeros(H)
            if kept:
                f = f + x64[di]
            if with_bias:
                f = f + b64[int(ei[r, k])]
            want_gs[r, k] = float(np.sum(f * g64[r]))
            bound[r, k] = 1e-6 * float(np.sum(np.abs(f) * np.abs(g64[r])))
    try:
        gx = load_out(f"{out}/grad_expanded_x.npy", NPDT[dt])
    except Exception as e:  # noqa: BLE001 - any read problem is a failure
        fail(f"{label}: {e}")
        return
    if gx.shape != tuple(xshape):
        fail(f"{label}: grad_expanded_x shape {gx.shape}, expected {xshape}")
        return
    want_bits = bitsof(to_bits(want_gx.reshape(xshape), dt))
    if not np.array_equal(bitsof(gx), want_bits):
        bad = np.argwhere(bitsof(gx) != want_bits)[0]
        fail(f"{label}: grad_expanded_x differs first at {tuple(bad)}: got {widen(gx, dt)[tuple(bad)]!r}, "
             f"want {want_gx.reshape(xshape)[tuple(bad)]!r}")
    if with_scales:
        try:
            gs = load_out(f"{out}/grad_scales.npy", NPDT[sdt])
        except Exception as e:  # noqa: BLE001
            fail(f"{label}: {e}")
            return
        if gs.shape != (R, K):
            fail(f"{label}: grad_scales shape {gs.shape}, expected {(R, K)}")
            return
        got = widen(gs, sdt)
        tol = bound + half_ulp(np.maximum(np.abs(want_gs), np.abs(got)), sdt)
        err = np.abs(got - want_gs)
        if not np.all(err <= tol):
            bad = np.argwhere(~(err <= tol))[0]
            fail(f"{label}: grad_scales at {tuple(bad)}: got {got[tuple(bad)]!r}, want {want_gs[tuple(bad)]!r}, "
                 f"bound {tol[tuple(bad)]!r}")


def test_grad():
    for dt in ("f32", "f16", "bf16"):
        grad_case(dt, dt, 0, False, False, False)
        grad_case(dt, dt, 0, False, False, True)
        grad_case(dt, dt, 0, True, False, True)
        grad_case(dt, dt, 0, True, True, True)
        grad_case(dt, dt, 0, True, True, True, active=int(rng.integers(1, 3)))
        grad_case(dt, dt, 1, True, True, True)
        grad_case(dt, dt, 1, True, False, True)
        grad_case(dt, dt, 1, False, False, False)
    # scales in another dtype than the data (Ascend 950 rule; fp32 scales with bf16 data)
    grad_case("bf16", "f32", 0, True, True, True)
    grad_case("f32", "f16", 1, True, True, True)
    grad_case("f16", "bf16", 0, True, False, True)
    # large enough for the vector bodies and several threads to take part
    for dt in ("f32", "f16", "bf16"):
        grad_case(dt, dt, 0, True, True, True, big=True)
        grad_case(dt, dt, 1, True, True, True, big=True)


# ---------------------------------------------------------------- forward

def forward_case(dt, sdt, mode, with_scales, with_bias, nx, big=False):
    R = int(rng.integers(200, 400)) if big else int(rng.integers(1, 14))
    K = int(rng.integers(1, 5)) if with_scales else 1
    H = int(rng.integers(129, 300)) if big else int(rng.integers(1, 70))
    RK = R * K
    E = int(rng.integers(K if with_bias else 1, (K if with_bias else 1) + 4))  # CANN: bias rows >= K
    C = int(rng.integers(1, RK + 2))
    d = new_case()
    label = f"forward dt={dt} scales={sdt if with_scales else None} mode={mode} bias={with_bias} x1x2={nx} " \
            f"R={R} K={K} H={H} ({d})"
    if mode in (0, 2):
        idx = rng.permutation(RK).astype(np.int32)
        xshape, D = (RK, H), RK
        if rng.random() < 0.4:  # rows read twice (or never): fine for a gather
            idx = rng.integers(0, RK, size=RK).astype(np.int32)
    else:
        slots = rng.permutation(E * C)[: min(RK, E * C)]
        idx = np.full(RK, -1, dtype=np.int32)
        pos = rng.permutation(RK)[: len(slots)]
        keep = rng.random(len(slots)) < 0.8
        idx[pos[keep]] = slots[keep]
        xshape, D = (E, C, H), E * C
    x = rand_values(xshape, dt)
    args = ["forward", "--expanded-x", save(f"{d}/x.npy", x), "--expanded-row-idx", save(f"{d}/idx.npy", idx),
            "--drop-pad-mode", str(mode)]
    xs = []
    for n in range(nx):
        xi = rand_values((R, H), dt)
        xs.append(xi)
        args += [f"--x{n + 1}", save(f"{d}/x{n + 1}.npy", xi)]
    sc = ei = bias = None
    if with_scales:
        sc = rand_values((R, K), sdt)
        args += ["--scales", save(f"{d}/sc.npy", sc)]
    if with_bias:
        Eb = E if mode in (1, 3) else int(rng.integers(K, K + 6))
        ei = rng.integers(0, Eb, size=(R, K)).astype(np.int32)
        bias = rand_values((Eb, H), dt)
        args += ["--expert-idx", save(f"{d}/ei.npy", ei), "--bias", save(f"{d}/bias.npy", bias)]
    if "bf16" in (dt, sdt if with_scales else dt):
        args += ["--dtype", "bf16"]
    out = f"{d}/out"
    args += ["--out", out]
    rc, so, se = run(args)
    if rc != 0:
        fail(f"{label}: exit {rc}: {se.strip()}")
        return
    check_only_files(out, ["out.npy"], label)
    # The canonical order (issue 13; tests/fwd_ref.h): K <= 32 here, so per element an fp32 candidate
    # a = x1, fl32(a + x2), then per present slot v = fl32(x_d + b_e) (or x_d), a = fma32(s, v, a)
    # (fl32(s * v) for the first term); in groups of 32 elements from element 0 of the row, a group
    # whose every a is finite with 2^-100 <= |a| < HI(dt) stores RNE(a), any other group the SPEC
    # section 8 fp64 sequence (acc = x1 + x2, acc += s * (x_d + b_e) in float64, one rounding).
    # Absent inputs are absent terms (as the library and tests/fwd_ref.c): a dropped slot adds nothing,
    # and the sum starts at its first present term, not at +0.0, so a lone -0.0 term stays -0.0; no term
    # at all gives +0.0.
    x64 = widen(x, dt).reshape(D, H)
    want = np.zeros((R, H))
    a32 = np.zeros((R, H))
    have = np.zeros(R, dtype=bool)
    for r in range(R):
        acc = a = None
        if nx >= 1:
            acc = widen(xs[0], dt)[r].copy()
            a = acc.copy()
        if nx >= 2:
            acc = acc + widen(xs[1], dt)[r]
            a = round_to(a + widen(xs[1], dt)[r], "f32")  # fp32 + fp32 through float64: no double rounding
        for k in range(K):
            di = int(idx[k * R + r] if mode in (0, 1) else idx[r * K + k])
            s = widen(sc, sdt)[r, k] if with_scales else 1.0
            if di < 0 or di >= D:  # a dropped slot has no term at all, bias included (as CANN's kernels)
                continue
            term = x64[di]
            v = term
            if with_bias:
                term = term + widen(bias, dt)[int(ei[r, k])]
                v = round_to(term, "f32")
            acc = s * term if acc is None else acc + s * term
            a = round_to(s * v, "f32") if a is None else fma32(s, v, a)
        want[r] = np.zeros(H) if acc is None else acc
        a32[r] = np.zeros(H) if a is None else a
        have[r] = a is not None
    hi = {"f32": np.inf, "bf16": float.fromhex("0x1.fep127"), "f16": 65504.0}[dt]
    ok = np.isfinite(a32) & (np.abs(a32) >= 2.0 ** -100) & (np.abs(a32) < hi)
    for g0 in range(0, H, 32):
        grp = ok[:, g0:g0 + 32].all(axis=1) & have  # rows whose group g0 takes the fp32 result
        want[grp, g0:g0 + 32] = a32[grp, g0:g0 + 32]
    want_bits = bitsof(to_bits(round_to(want, dt), dt))
    try:
        got = load_out(f"{out}/out.npy", NPDT[dt])
    except Exception as e:  # noqa: BLE001
        fail(f"{label}: {e}")
        return
    if got.shape != (R, H):
        fail(f"{label}: out shape {got.shape}, expected {(R, H)}")
        return
    if not np.array_equal(bitsof(got), want_bits):
        bad = tuple(np.argwhere(bitsof(got) != want_bits)[0])
        fail(f"{label}: out differs first at {bad}: got {widen(got, dt)[bad]!r}, want {want[bad]!r}")


def test_forward():
    for dt in ("f32", "f16", "bf16"):
        for mode in (0, 1, 2, 3):
            forward_case(dt, dt, mode, True, True, 2)
            forward_case(dt, dt, mode, True, False, 1)
            forward_case(dt, dt, mode, False, False, 0)
    forward_case("bf16", "f32", 2, True, True, 1)
    forward_case("bf16", "f32", 1, True, True, 0)
    forward_case("f32", "f16", 3, True, True, 2)
    for dt in ("f32", "f16", "bf16"):
        forward_case(dt, dt, 0, True, True, 2, big=True)
        forward_case(dt, dt, 3, True, True, 1, big=True)


# ---------------------------------------------------------------- bad inputs

def expect_error(label, args, code, must_mention, outdir):
    rc, so, se = run(args)
    lines = [ln for ln in se.splitlines() if ln.strip()]
    if os.environ.get("MOEFR_TEST_VERBOSE"):
        print(f"  [{label}] exit {rc}: {se.strip()}")
    if rc != code:
        fail(f"{label}: exit {rc}, expected {code}; stderr: {se.strip()!r}")
    elif len(lines) != 1:
        fail(f"{label}: expected one line of error, got {len(lines)}: {se!r}")
    elif must_mention and not any(m in lines[0] for m in must_mention):
        fail(f"{label}: message does not name any of {must_mention}: {lines[0]!r}")
    if outdir is not None and os.path.isdir(outdir) and os.listdir(outdir):
        fail(f"{label}: failing run left files in --out: {os.listdir(outdir)}")
    return lines[0] if lines else ""


def corrupt(path, fn):
    b = bytearray(open(path, "rb").read())
    b = fn(b)
    open(path, "wb").write(bytes(b))
    return path


def expect_success(label, args, outdir):
    rc, so, se = run(args)
    if rc != 0:
        fail(f"{label}: exit {rc}, expected 0; stderr: {se.strip()!r}")
    shutil.rmtree(outdir, ignore_errors=True)


def test_bad_inputs(op):
    d = new_case()
    R, K, H = 5, 3, 7
    gy = rand_values((R, H), "f32")
    idx = rng.permutation(R * K).astype(np.int32)
    x = rand_values((R * K, H), "f32")
    sc = rand_values((R, K), "f32")
    ok = {"gy": save(f"{d}/gy.npy", gy), "idx": save(f"{d}/idx.npy", idx), "x": save(f"{d}/x.npy", x),
          "sc": save(f"{d}/sc.npy", sc)}
    out = f"{d}/out"

    def args_with(**repl):
        files = dict(ok)
        files.update(repl)
        if op == "grad":
            return ["grad", "--grad-y", files["gy"], "--expanded-row-idx", files["idx"], "--expanded-x",
                    files["x"], "--scales", files["sc"], "--out", out]
        return ["forward", "--expanded-x", files["x"], "--expanded-row-idx", files["idx"], "--scales",
                files["sc"], "--drop-pad-mode", "2", "--out", out]

    # the good run works (and its outputs are then removed, so later checks see an empty DIR)
    rc, so, se = run(args_with())
    if rc != 0:
        fail(f"{op} baseline run: exit {rc}: {se.strip()}")
    shutil.rmtree(out, ignore_errors=True)

    target = "gy" if op == "grad" else "x"
    flag = "--grad-y" if op == "grad" else "--expanded-x"
    src = ok[target]
    arr = gy if op == "grad" else x

    def variant(name, data_fn=None, arr_fn=None, version=(1, 0)):
        p = f"{d}/{name}.npy"
        if arr_fn is not None:
            with open(p, "wb") as f:
                np.lib.format.write_array(f, arr_fn(arr), version=version)
        else:
            shutil.copy(src, p)
        if data_fn is not None:
            corrupt(p, data_fn)
        return p

    # ---- exit 3: file errors
    missing = f"{d}/does_not_exist.npy"
    expect_error(f"{op}: missing file", args_with(**{target: missing}), 3, [missing], out)
    expect_error(f"{op}: directory as file", args_with(**{target: d}), 3, [d], out)
    empty = variant("empty", lambda b: b[:0])
    expect_error(f"{op}: empty file", args_with(**{target: empty}), 3, [empty], out)
    p = variant("badmagic", lambda b: b"\x93NUMPX" + b[6:])
    expect_error(f"{op}: bad magic", args_with(**{target: p}), 3, [p], out)
    p = variant("badversion", lambda b: b[:6] + bytes([4, 0]) + b[8:])
    expect_error(f"{op}: format version 4.0", args_with(**{target: p}), 3, [p], out)
    p = variant("baddict", lambda b: b.replace(b"'shape'", b"'shap' "))
    expect_error(f"{op}: malformed header", args_with(**{target: p}), 3, [p], out)
    p = variant("badhlen", lambda b: b[:8] + bytes([0xF0, 0xFF]) + b[10:])
    expect_error(f"{op}: header length past the end", args_with(**{target: p}), 3, [p], out)
    p = variant("fortran", arr_fn=lambda a: np.asfortranarray(a))
    if b"True" not in open(p, "rb").read(128):
        fail("test bug: fortran file not fortran")
    expect_error(f"{op}: fortran order", args_with(**{target: p}), 3, [p], out)
    p = variant("bigendian", arr_fn=lambda a: a.astype(">f4"))
    expect_error(f"{op}: big-endian", args_with(**{target: p}), 3, [p], out)
    p = variant("f64", arr_fn=lambda a: a.astype("<f8"), version=(3, 0))
    expect_error(f"{op}: float64", args_with(**{target: p}), 3, [p], out)
    p = variant("u2", arr_fn=lambda a: a.view("<u2"), version=(2, 0))
    expect_error(f"{op}: <u2 without --dtype bf16", args_with(**{target: p}), 3, [p], out)
    p = variant("truncated", lambda b: b[:-3])
    expect_error(f"{op}: truncated data", args_with(**{target: p}), 3, [p], out)
    p = variant("trailing", lambda b: b + b"\0\0\0\0")
    expect_error(f"{op}: trailing data", args_with(**{target: p}), 3, [p], out)
    blocker = f"{d}/not_a_dir"
    open(blocker, "w").write("x")
    a = args_with()
    a[-1] = blocker
    expect_error(f"{op}: --out is a file", a, 3, [blocker], None)
    a[-1] = f"{blocker}/sub"
    expect_error(f"{op}: --out below a file", a, 3, [blocker], None)

    # ---- exit 1: rejected by the operator
    # (the forward takes expandedX's rows as the index bound, so its wrong shape is a rank)
    p = variant("wrongshape", arr_fn=(lambda a: a[:-1]) if op == "grad" else (lambda a: a.reshape(-1)))
    expect_error(f"{op}: wrong shape", args_with(**{target: p}), 1, [flag, "161002", "561002", "561103"], out)
    p = save(f"{d}/idx_f32.npy", idx.astype(np.float32))
    expect_error(f"{op}: index as float32", args_with(idx=p), 1, ["--expanded-row-idx", "expandedRowIdx"], out)
    bad = idx.copy()
    bad[4] = R * K  # past the rows: a dropped slot in both operators (the forward as Ascend 950's kernel)
    p = save(f"{d}/idx_range.npy", bad)
    expect_success(f"{op}: index past the rows (a dropped slot)", args_with(idx=p), out)
    bad[4] = -2  # negative: a dropped slot for the backward, an out-of-bounds read for the forward
    p = save(f"{d}/idx_neg.npy", bad)
    if op == "grad":
        expect_success(f"{op}: negative index (a dropped slot)", args_with(idx=p), out)
    else:
        expect_error(f"{op}: negative index", args_with(idx=p), 1, ["--expanded-row-idx"], out)
    bad = idx.copy()
    bad[1] = bad[2]  # a repeat: the backward keeps the last writer, the forward reads the row twice
    p = save(f"{d}/idx_dup.npy", bad)
    expect_success(f"{op}: repeated index", args_with(idx=p), out)
    if op == "grad":
        p = save(f"{d}/sc_r.npy", rand_values((R, K + 1), "f32"))
    else:  # K = 0: CANN's tiling refuses it
        p = save(f"{d}/sc_r.npy", rand_values((R, 0), "f32"))
    expect_error(f"{op}: scales shape", args_with(sc=p), 1, ["--scales", "--expanded-row-idx"], out)
    if op == "grad":  # gradY float16, expandedX float32
        p = save(f"{d}/f16data.npy", arr.astype(np.float16))
        expect_error(f"{op}: mixed data dtypes", args_with(**{target: p}), 1, [], out)
    else:  # x1 float16, expandedX float32
        a = args_with()[:-2] + ["--x1", save(f"{d}/x1_f16.npy", rand_values((R, H), "f16")), "--out", out]
        expect_error(f"{op}: mixed data dtypes", a, 1, ["--x1", "--expanded-x"], out)
    # expert index out of range (needs bias)
    ei = rng.integers(0, K, size=(R, K)).astype(np.int32)
    ei[2, 1] = K
    bias = rand_values((K, H), "f32")  # K rows: CANN's forward wants bias rows >= K
    a = args_with()[:-2] + ["--expert-idx", save(f"{d}/ei.npy", ei), "--bias", save(f"{d}/bias.npy", bias),
                            "--out", out]
    expect_error(f"{op}: expertIdx out of range", a, 1, ["--expert-idx"], out)
    a = args_with()[:-2] + ["--bias", save(f"{d}/bias.npy", bias), "--out", out]
    expect_error(f"{op}: bias without expertIdx", a, 1, [], out)
    if op == "grad":  # scales need expandedX
        a = args_with()
        i = a.index("--expanded-x")
        expect_error(f"{op}: scales without expandedX", a[:i] + a[i + 2:], 1, [], out)
    else:  # x2 needs x1
        a = args_with()[:-2] + ["--x2", save(f"{d}/x2.npy", rand_values((R, H), "f32")), "--out", out]
        expect_error(f"{op}: x2 without x1", a, 1, [], out)
    a = args_with()
    a[a.index("--out"):a.index("--out")] = ["--drop-pad-mode", "7"] if op == "grad" else []
    if op == "forward":
        a[a.index("--drop-pad-mode") + 1] = "7"
    expect_error(f"{op}: drop-pad-mode 7", a, 1, ["--drop-pad-mode", "dropPadMode"], out)

    # ---- exit 2: usage
    a = args_with()
    expect_error(f"{op}: unknown flag", a[:1] + ["--frobnicate", "1"] + a[1:], 2, ["--frobnicate"], out)
    i = a.index("--out")
    expect_error(f"{op}: missing --out", a[:i], 2, ["--out"], None)
    expect_error(f"{op}: missing value", a + ["--scales"], 2, ["--scales"], out)
    expect_error(f"{op}: flag twice", a + ["--scales", ok["sc"]], 2, ["--scales"], out)
    expect_error(f"{op}: --dtype fp8", a + ["--dtype", "fp8"], 2, ["--dtype"], out)
    b = list(a)
    if "--drop-pad-mode" in b:
        b[b.index("--drop-pad-mode") + 1] = "x1"
    else:
        b += ["--drop-pad-mode", "x1"]
    line = expect_error(f"{op}: non-integer mode", b, 2, ["--drop-pad-mode"], out)
    if "not an integer" not in line:
        fail(f"{op}: non-integer mode: {line!r}")
    c = list(a)
    if "--drop-pad-mode" in c:
        i = c.index("--drop-pad-mode")
        del c[i:i + 2]
    line = expect_error(f"{op}: --flag=value with a bad value", c + ["--drop-pad-mode=1.5"], 2, ["--drop-pad-mode"],
                        out)
    if "not an integer" not in line:
        fail(f"{op}: --drop-pad-mode=1.5: {line!r}")
    expect_error(f"{op}: stray argument", a + ["stray"], 2, ["stray"], out)
    req = "--grad-y" if op == "grad" else "--expanded-x"
    i = a.index(req)
    expect_error(f"{op}: missing {req}", a[:i] + a[i + 2:], 2, [req], out)


def test_misc():
    rc, so, se = run(["--version"])
    if rc != 0 or not so.startswith("moefr 0."):
        fail(f"--version: exit {rc}, {so!r}")
    rc, so, se = run(["--help"])
    if rc != 0 or "moefr grad" not in so.replace("  grad", "moefr grad") or "exit status" not in so:
        fail(f"--help: exit {rc}")
    rc, so, se = run(["grad", "--help"])
    if rc != 0 or "--grad-y" not in so:
        fail(f"grad --help: exit {rc}")
    rc, so, se = run([])
    if rc != 2 or "usage" not in se:
        fail(f"no arguments: exit {rc}")
    expect_error("unknown command", ["frob"], 2, ["frob"], None)
    rc, so, se = run(["demo"])
    if rc != 0 or "gradExpandedX" not in so or "gradScales" not in so or "max |diff| gradExpandedX 0," not in so:
        fail(f"demo: exit {rc}: {so[-300:]!r} {se!r}")
    rc, so, se = run(["bench", "--help"])
    if rc != 0 or "usage" not in so + se:
        fail(f"bench --help: exit {rc}: {so!r} {se!r}")
    # bench on small shapes: operator rows and the access-pattern references
    # (bench/ceiling.c) run and print a positive ratio each; rows that are not
    # whole cache lines are skipped with a note, not timed.
    rc, so, se = run(["bench", "--shape", "64,8,256,bf16", "--shape", "33,3,96,fp32", "--shape", "5,2,7,fp16",
                      "--ceilings", "--arith", "--forward", "--no-torch", "--no-threads", "--reps", "2"])
    pats = [ln for ln in so.splitlines() if "(backward," in ln or "(forward)" in ln]
    ratios = [float(ln.split("ratio")[-1]) for ln in pats]
    if rc != 0 or len(pats) != 6 or not all(r > 0 for r in ratios) or "5,2,7 fp16: rows of 14 bytes" not in so:
        fail(f"bench --ceilings: exit {rc}, {len(pats)} pattern rows {ratios}: {so[-600:]!r} {se!r}")
    # --arith: one row per shape, a positive time per row and a positive bound
    ar = [ln.split() for ln in so.splitlines() if "ns/row" in ln]
    if len(ar) != 3 or not all(float(a[2]) > 0 and float(a[-1]) > 0 for a in ar):
        fail(f"bench --arith: {ar!r}: {so[-600:]!r}")
    # and its overlap check: one row per shape whose rows are whole cache lines, times > 0
    ov = [ln for ln in so.splitlines() if "rows pattern" in ln and "hidden" in ln]
    if len(ov) != 2 or not all(float(ln.split("in one loop")[1].split()[0]) > 0 for ln in ov):
        fail(f"bench --arith overlap: {ov!r}: {so[-600:]!r}")
    # bench --experts on a shape of our own: four prefill rows and four decode rows per GEMM, each
    # with a positive rate; the decode rows' touched experts between 1 and E; a bad shape is refused
    rc, so, se = run(["bench", "--experts", "--expert-shape", "96,40,5,2", "--tokens", "37", "--reps", "1"])
    pre = [ln for ln in so.splitlines() if " prefill " in ln and "GFLOP/s" in ln]
    dec = [ln for ln in so.splitlines() if " decode " in ln and "GB/s" in ln]
    touched = [float(ln.split("(")[1].split()[0]) for ln in dec]
    if (rc != 0 or len(pre) != 8 or len(dec) != 8 or not all(float(ln.split("GFLOP/s")[0].split()[-1]) > 0
                                                             for ln in pre + dec)
            or not all(1 <= t <= 5 for t in touched)):
        fail(f"bench --experts: exit {rc}, {len(pre)} prefill and {len(dec)} decode rows: {so[-900:]!r} {se!r}")
    rc, so, se = run(["bench", "--experts", "--expert-shape", "33,17,3,4"])
    if rc != 2 or "bad --expert-shape" not in se:
        fail(f"bench --experts with top-k > E: exit {rc}: {se!r}")
    rc, so, se = run(["bench", "--experts=no-such-model", "--reps", "1"])
    if rc != 2 or "no model matches" not in se:
        fail(f"bench --experts=no-such-model: exit {rc}: {se!r}")
    # -v: timing and kernel path, either before or after the command
    d = new_case()
    gy = rand_values((3, 5), "f32")
    args = ["grad", "--grad-y", save(f"{d}/gy.npy", gy), "--expanded-row-idx",
            save(f"{d}/i.npy", np.array([2, 0, 1], np.int32)), "--out", f"{d}/o"]
    for a in (["-v"] + args, args + ["-v"]):
        rc, so, se = run(a)
        if rc != 0 or "kernel path" not in se or " us" not in se:
            fail(f"-v: exit {rc}, stderr {se!r}")
    got = np.load(f"{d}/o/grad_expanded_x.npy")
    if not np.array_equal(got, gy[[1, 2, 0]]):
        fail("copy case: wrong rows")
    # rerunning into an existing --out replaces the outputs and leaves no temporary files
    rc, so, se = run(args)
    check_only_files(f"{d}/o", ["grad_expanded_x.npy"], "rerun")
    # MOEFR_ISA forces the kernel path the CLI reports
    env = dict(os.environ, MOEFR_ISA="scalar")
    p = subprocess.run(emu + [moefr, "-v"] + args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    if p.returncode != 0 or "kernel path scalar" not in p.stderr:
        fail(f"MOEFR_ISA=scalar -v: {p.returncode} {p.stderr!r}")
    # bench --isa all marks the default path: the one a process without
    # MOEFR_ISA gets (-v says which), even when the bench itself runs forced
    env = {k: v for k, v in os.environ.items() if k != "MOEFR_ISA"}
    p = subprocess.run(emu + [moefr, "-v"] + args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    dflt = p.stderr.split("kernel path ")[1].split()[0].rstrip(",") if "kernel path " in p.stderr else "?"
    p = subprocess.run(emu + [moefr, "bench", "--shape", "33,3,96,fp32", "--forward", "--isa", "all", "--no-torch",
                              "--no-threads", "--reps", "2"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       text=True, env=dict(os.environ, MOEFR_ISA="scalar"))
    marked = [ln for ln in p.stdout.splitlines() if f" {dflt}* " in ln]
    if (p.returncode != 0 or f"default path (no MOEFR_ISA) on this CPU: {dflt}\n" not in p.stdout or len(marked) != 2
            or f"default path {dflt}: at least" not in p.stdout):
        fail(f"bench --isa all: default {dflt!r}, exit {p.returncode}, marked rows {marked!r}: {p.stdout[-600:]!r}")


if what == "grad":
    test_grad()
    test_bad_inputs("grad")
elif what == "forward":
    test_forward()
    test_bad_inputs("forward")
elif what == "misc":
    test_misc()
else:
    sys.exit(f"unknown test group {what}")

if failures:
    print(f"test_cli {what}: {failures} failure(s); seed {seed}")
    sys.exit(1)
shutil.rmtree(work, ignore_errors=True)
print(f"test_cli {what}: ok ({case_no} cases)")
