"""moefr permute / unpermute end to end: numpy-written .npy files, a numpy
oracle written from CANN's documented semantics (stable argsort; float64
sums, against SPEC 8's error bound), the exit codes and the no-partial-output rule.
usage: test_cli_permute.py MOEFR_BINARY WORKDIR"""
import os
import shutil
import subprocess
import sys

import numpy as np

moefr, work = sys.argv[1], sys.argv[2]
shutil.rmtree(work, ignore_errors=True)
os.makedirs(work)
rng = np.random.default_rng(int.from_bytes(os.urandom(4), "little"))
fails = 0


# Under make test-aarch64 the CLI is an aarch64 binary: run it through the emulator.
EMU = [os.environ["MOEFR_TEST_EMULATOR"]] if os.environ.get("MOEFR_TEST_EMULATOR") else []


def run(*args):
    return subprocess.run([*EMU, moefr, *args], capture_output=True, text=True)


def check(cond, what):
    global fails
    if not cond:
        print("FAIL", what)
        fails += 1


def f(name, a):
    p = os.path.join(work, name)
    np.save(p, a)
    return p


for case in range(6):
    N, K, H, E = int(rng.integers(1, 40)), int(rng.integers(1, 6)), int(rng.integers(1, 20)), 4
    T = N * K
    dt = [np.float32, np.float16][case % 2]
    tok = rng.standard_normal((N, H)).astype(dt)
    ind = rng.integers(0, E, (N, K)).astype(np.int32)
    num_out = int(rng.integers(-T, T + 3))
    out = os.path.join(work, "p%d" % case)
    r = run("permute", "--tokens", f("tok.npy", tok), "--indices", f("ind.npy", ind),
            "--num-out-tokens", str(num_out), "--out", out)
    check(r.returncode == 0, "permute case %d: %s" % (case, r.stderr))
    if r.returncode:
        continue
    perm = np.argsort(ind.reshape(-1), kind="stable")
    A = num_out + T if num_out <= 0 else num_out
    A = max(0, min(A, T))
    want_si = np.empty(T, np.int32)
    want_si[perm] = np.arange(T, dtype=np.int32)
    got_pt = np.load(os.path.join(out, "permute_tokens.npy"))
    got_si = np.load(os.path.join(out, "sorted_indices.npy"))
    check(np.array_equal(got_si, want_si), "permute case %d: sorted_indices" % case)
    check(got_pt.shape == (A, H) and np.array_equal(got_pt.view(np.uint8), tok[perm[:A] // K].view(np.uint8)),
          "permute case %d: permute_tokens" % case)
    # unpermute the permuted rows back with probs: out[r] = sum_k p[r,k] * pt[si[r*K+k]] over si < A
    probs = rng.standard_normal((N, K)).astype(np.float32)
    out2 = os.path.join(work, "u%d" % case)
    r = run("unpermute", "--permuted-tokens", f("pt.npy", got_pt), "--sorted-indices", f("si.npy", got_si),
            "--probs", f("pr.npy", probs), "--out", out2)
    check(r.returncode == 0, "unpermute case %d: %s" % (case, r.stderr))
    if r.returncode:
        continue
    # SPEC 8's fp32 order (C tests check its bits): within 65 * 2^-24 of the
    # summed magnitudes plus half an ulp of the dtype; rows nobody names are +0.0
    want = np.zeros((N, H), np.float64)
    mag = np.zeros((N, H), np.float64)
    named = np.zeros(N, bool)
    for i in range(T):
        d = got_si[i]
        if d < A:
            term = np.float64(probs.reshape(-1)[i]) * got_pt[d].astype(np.float64)
            want[i // K] += term
            mag[i // K] += np.abs(term)
            named[i // K] = True
    got = np.load(os.path.join(out2, "out.npy"))
    ok = got.dtype == dt and got.shape == (N, H)
    if ok:
        g64 = got.astype(np.float64)
        top = np.maximum(np.abs(g64), np.abs(want)).astype(dt)
        tol = 65 * 2.0 ** -24 * (1 + 2.0 ** -20) * mag + np.spacing(top).astype(np.float64) / 2
        ok = bool(np.all(np.abs(g64 - want) <= tol)) and not np.any(got[~named].view(np.uint8))
    check(ok, "unpermute case %d: out" % case)

# rejected by the operator (indices dim0 != tokens dim0): exit 1, no outputs
bad = os.path.join(work, "bad")
r = run("permute", "--tokens", f("t2.npy", np.zeros((3, 4), np.float32)), "--indices",
        f("i2.npy", np.zeros((2, 1), np.int32)), "--out", bad)
check(r.returncode == 1 and "aclnnMoeTokenPermute" in r.stderr and not os.path.exists(os.path.join(bad, "sorted_indices.npy")),
      "permute mismatch: rc %d, %s" % (r.returncode, r.stderr))
# a negative index is refused in phase 2: exit 1, no outputs
r = run("unpermute", "--permuted-tokens", f("x3.npy", np.ones((4, 2), np.float32)), "--sorted-indices",
        f("s3.npy", np.array([0, -1, 2, 3], np.int32)), "--out", bad)
check(r.returncode == 1 and "sortedIndices" in r.stderr and not os.path.exists(os.path.join(bad, "out.npy")),
      "unpermute negative: rc %d, %s" % (r.returncode, r.stderr))
# a missing file: exit 3; a missing option: exit 2
check(run("permute", "--tokens", os.path.join(work, "nope.npy"), "--indices", f("i4.npy", np.zeros((1,), np.int32)),
          "--out", bad).returncode == 3, "missing file")
check(run("unpermute", "--permuted-tokens", f("x5.npy", np.ones((1, 1), np.float32)), "--out", bad).returncode == 2,
      "missing --sorted-indices")
print("test_cli_permute: %d failures" % fails)
sys.exit(1 if fails else 0)
