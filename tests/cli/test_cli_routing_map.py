"""moefr permute-map / unpermute-map end to end: numpy-written .npy files, a numpy oracle from the
documented semantics (expert-major ones, stable argsorts, float64 sums), the exit codes and the
no-partial-output rule. usage: test_cli_routing_map.py MOEFR_BINARY WORKDIR"""
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


for case in range(6):
    N, E, H = int(rng.integers(1, 30)), int(rng.integers(1, 8)), int(rng.integers(1, 17))
    K = int(rng.integers(1, E + 1))
    rmap = np.zeros((N, E), np.int32)
    for r in range(N):
        rmap[r, rng.permutation(E)[:K]] = 1
    tok = rng.standard_normal((N, H)).astype(np.float32)
    pr = rng.standard_normal((N, E)).astype(np.float32)
    pad = case % 2 == 1
    num_out = int(rng.integers(1, N + 1)) * E if pad else N * K
    out = os.path.join(work, "p%d" % case)
    args = ["permute-map", "--tokens", f("tok.npy", tok), "--routing-map", f("map.npy", rmap), "--probs",
            f("pr.npy", pr), "--num-out-tokens", str(num_out), "--out", out] + (["--drop-and-pad"] if pad else [])
    r = run(*args)
    check(r.returncode == 0, "permute-map case %d: %s" % (case, r.stderr))
    if r.returncode:
        continue
    got_pt = np.load(os.path.join(out, "permute_tokens.npy"))
    got_si = np.load(os.path.join(out, "sorted_indices.npy"))
    got_pp = np.load(os.path.join(out, "permute_probs.npy"))
    if not pad:
        rr, ee = np.nonzero(rmap)                      # row-major ones
        order = np.argsort(ee, kind="stable")          # expert-major position -> row-major q
        want_si = np.empty(N * K, np.int32)
        want_si[order] = np.arange(N * K)
        check(np.array_equal(got_si, want_si), "case %d sorted_indices" % case)
        check(np.array_equal(got_pt, tok[rr[order]]), "case %d permute_tokens" % case)
        check(np.array_equal(got_pp, pr[rr[order], ee[order]]), "case %d permute_probs" % case)
        o2 = os.path.join(work, "u%d" % case)
        r = run("unpermute-map", "--permuted-tokens", os.path.join(out, "permute_tokens.npy"), "--sorted-indices",
                os.path.join(out, "sorted_indices.npy"), "--tokens-num", str(N), "--probs", f("pr.npy", pr),
                "--routing-map", f("map.npy", rmap), "--out", o2)
        check(r.returncode == 0, "unpermute-map case %d: %s" % (case, r.stderr))
        if r.returncode == 0:
            want = tok.astype(np.float64) * (pr.astype(np.float64) * rmap).sum(1, keepdims=True)
            got = np.load(os.path.join(o2, "out.npy"))
            check(np.abs(got - want).max() <= 1e-5 * (np.abs(tok).max() * np.abs(pr).sum(1).max() + 1),
                  "case %d unpermute-map values" % case)
    else:
        C = num_out // E
        want_si = np.argsort(-rmap.T, axis=1, kind="stable")[:, :C].reshape(-1)
        check(np.array_equal(got_si, want_si), "case %d padded sorted_indices" % case)
        check(np.array_equal(got_pt, tok[want_si]), "case %d padded permute_tokens" % case)
        check(np.array_equal(got_pp, pr[want_si, np.arange(E * C) // C]), "case %d padded probs" % case)

# a map with two ones per row and the default numOutTokens (topK 1): refused, nothing written
rmap = np.ones((3, 2), np.int32)
out = os.path.join(work, "bad")
r = run("permute-map", "--tokens", f("tok.npy", np.ones((3, 4), np.float32)), "--routing-map", f("map.npy", rmap),
        "--out", out)
check(r.returncode == 1 and "161002" in r.stderr and not os.path.exists(out), "refused: %d %s" % (r.returncode, r.stderr))
r = run("permute-map", "--tokens", f("tok.npy", np.ones((3, 4), np.float32)), "--out", out)
check(r.returncode == 2, "missing --routing-map: exit %d" % r.returncode)

print("test_cli_routing_map: %d failures" % fails)
sys.exit(1 if fails else 0)
