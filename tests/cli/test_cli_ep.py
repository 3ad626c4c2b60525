"""moefr permute-ep / unpermute-ep end to end: numpy-written .npy files, a numpy oracle written
from CANN's documented semantics (stable argsort; the window [S, E) of sorted rows; float64 sums),
CANN's doc samples, the exit codes and the no-partial-output rule.
usage: test_cli_ep.py MOEFR_BINARY WORKDIR"""
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


for case in range(8):
    N, K, H, E = int(rng.integers(1, 30)), int(rng.integers(1, 5)), int(rng.integers(1, 17)), 5
    T = N * K
    tok = rng.standard_normal((N, H)).astype(np.float32)
    probs = rng.random((N, K)).astype(np.float32)
    ind = rng.integers(0, E, (N, K)).astype(np.int32)
    s, e = int(rng.integers(0, T + 1)), int(rng.integers(0, T + 1))
    out = os.path.join(work, "p%d" % case)
    r = run("permute-ep", "--tokens", f("tok.npy", tok), "--indices", f("ind.npy", ind), "--probs",
            f("probs.npy", probs), "--range-start", str(s), "--range-end", str(e), "--out", out)
    check(r.returncode == 0, "permute-ep case %d: %s" % (case, r.stderr))
    if r.returncode:
        continue
    perm = np.argsort(ind.reshape(-1), kind="stable")
    A = e - s
    A = max(0, min(A + T if A <= 0 else A, T))
    lo = 0 if A == T else s
    n = max(0, min(A, T - lo))
    want = np.zeros((A, H), np.float32)
    want[:n] = tok[perm[lo:lo + n] // K]
    wantp = np.zeros(A, np.float32)
    wantp[:n] = probs.reshape(-1)[perm[lo:lo + n]]
    rank = np.empty(T, np.int64)
    rank[perm] = np.arange(T)
    check(np.array_equal(np.load(os.path.join(out, "permute_tokens.npy")), want), "permute-ep %d tokens" % case)
    check(np.array_equal(np.load(os.path.join(out, "permute_probs.npy")), wantp), "permute-ep %d probs" % case)
    check(np.array_equal(np.load(os.path.join(out, "sorted_indices.npy")), rank), "permute-ep %d indices" % case)
    # unpermute the window back: out[r] = sum of probs * the window's rows
    if e <= s:
        continue
    pt = rng.standard_normal((e - s, H)).astype(np.float32)
    r = run("unpermute-ep", "--permuted-tokens", f("pt.npy", pt), "--sorted-indices",
            f("si.npy", rank.astype(np.int32)), "--probs", f("probs.npy", probs), "--num-topk", str(K),
            "--range-start", str(s), "--range-end", str(e), "--out", out)
    check(r.returncode == 0, "unpermute-ep case %d: %s" % (case, r.stderr))
    if r.returncode:
        continue
    d = rank.reshape(N, K)
    kept = (d >= s) & (d < e) & (probs != 0)
    rows = pt.astype(np.float64)[np.clip(d - s, 0, e - s - 1)] * probs.astype(np.float64)[..., None]
    wantu = np.where(kept[..., None], rows, 0.0).sum(1)
    got = np.load(os.path.join(out, "out.npy")).astype(np.float64)
    scale = np.where(kept[..., None], np.abs(rows), 0.0).sum(1) + 1e-30
    check(bool((np.abs(got - wantu) <= 4e-7 * scale).all()), "unpermute-ep %d values" % case)

# refusals: exit 1 (the operator's code and message), 2 (usage), nothing written
bad = os.path.join(work, "bad")
tok = np.zeros((3, 4), np.float32)
ind = np.zeros((3, 2), np.int32)
r = run("permute-ep", "--tokens", f("t.npy", tok), "--indices", f("i.npy", ind), "--range-start", "1",
        "--range-end", "9", "--out", bad)
check(r.returncode == 1 and "561002" in r.stderr and not os.path.exists(bad), "range past T: %d %s" % (r.returncode, r.stderr))
r = run("permute-ep", "--tokens", f("t.npy", tok), "--indices", f("i.npy", ind), "--range-start", "1", "--out", bad)
check(r.returncode == 2 and not os.path.exists(bad), "one range bound: %d" % r.returncode)
print("test_cli_ep: %d failure(s)" % fails)
sys.exit(1 if fails else 0)
