#!/usr/bin/env python3
# tests/cli/test_cli_init_routing_v3.py - `moefr init-routing-v3` end to end on numpy-written .npy
# files against a numpy oracle (CANN's order: in-range ids, ids past the range, ids below it;
# dynamic int8 quantisation with a smooth scale; int8 x passed through), plus exit codes: 1 for an operator rejection
# (an fp8 quant mode), 2 for usage.
# usage: test_cli_init_routing_v3.py MOEFR_BINARY WORKDIR   (MOEFR_TEST_SEED replays)
import os
import random
import shutil
import subprocess
import sys

import numpy as np

moefr, work = sys.argv[1], sys.argv[2]
emu = [os.environ["MOEFR_TEST_EMULATOR"]] if os.environ.get("MOEFR_TEST_EMULATOR") else []
seed = int(os.environ.get("MOEFR_TEST_SEED") or random.SystemRandom().randrange(1 << 31))
print(f"test_cli_init_routing_v3: seed {seed} (MOEFR_TEST_SEED={seed} replays)", flush=True)
rng = np.random.default_rng(seed)
shutil.rmtree(work, ignore_errors=True)
os.makedirs(work)
failures = 0


def run(args):
    p = subprocess.run(emu + [moefr, "init-routing-v3"] + args, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       text=True, timeout=120)
    return p.returncode, p.stderr


for case in range(6):
    N, K, E, H = int(rng.integers(1, 20)), int(rng.integers(1, 5)), int(rng.integers(2, 9)), int(rng.integers(1, 40))
    start = int(rng.integers(0, E))
    end = int(rng.integers(start + 1, E + 1))
    quant = -1 if case == 1 else int(rng.integers(-1, 2)) if case else 1
    rtype = int(rng.integers(0, 2))
    d = os.path.join(work, f"case{case}")
    os.makedirs(d)
    x = rng.standard_normal((N, H)).astype(np.float32) * 3
    if case == 1:  # int8 x ('|i1'), which quant mode -1 moves as it is
        x = rng.integers(-128, 128, (N, H)).astype(np.int8)
    ids = rng.integers(-2, E + 3, (N, K)).astype(np.int32)
    sm = rng.random((end - start, H)).astype(np.float32)
    np.save(d + "/x.npy", x), np.save(d + "/ids.npy", ids), np.save(d + "/sm.npy", sm)
    args = ["--x", d + "/x.npy", "--expert-idx", d + "/ids.npy", "--expert-num", str(E), "--expert-start",
            str(start), "--expert-end", str(end), "--row-idx-type", str(rtype), "--out", d + "/o"]
    if quant == 1:
        args += ["--quant-mode", "1", "--scale", d + "/sm.npy"]
    elif quant == 0:
        np.save(d + "/s.npy", np.array([1.5], np.float32)), np.save(d + "/of.npy", np.array([0.25], np.float32))
        args += ["--quant-mode", "0", "--scale", d + "/s.npy", "--offset", d + "/of.npy"]
    rc, err = run(args)
    if rc != 0:
        failures += 1
        print("FAIL case", case, rc, err)
        continue
    ex = np.load(d + "/o/expanded_x.npy")
    ri = np.load(d + "/o/expanded_row_idx.npy")
    cnt = np.load(d + "/o/expert_tokens_count_or_cumsum.npy")
    flat = ids.reshape(-1)
    key = np.where(flat < start, 1 << 40, flat - start)
    perm = np.array(sorted(range(N * K), key=lambda j: (key[j], j)), dtype=np.int64)
    inside = (flat >= start) & (flat < end)
    A = int(inside.sum())
    ok = cnt.dtype == np.int64 and (cnt == np.bincount(flat[inside] - start, minlength=end - start)).all()
    if rtype == 1:
        ok &= (ri == perm).all()
    else:
        want = np.full(N * K, -1)
        want[perm[:A]] = np.arange(A)
        ok &= (ri == want).all()
    for i in range(A):
        j = perm[i]
        if quant == -1:
            ok &= ex.dtype == x.dtype and (ex[i] == x[j // K]).all()
        elif quant == 0:
            v = (x[j // K].astype(np.float16) * np.float16(1.5)).astype(np.float16)
            v = (v + np.float16(0.25)).astype(np.float16)
            ok &= ex.dtype == np.int8 and (ex[i] == np.clip(np.rint(v.astype(np.float64)), -128, 127)).all()
        else:
            y = x[j // K] * sm[flat[j] - start]
            s = np.float32(np.abs(y).max()) / np.float32(127)
            q = np.clip(np.rint((y / s).astype(np.float32).astype(np.float64)), -128, 127) if s else 0
            ok &= ex.dtype == np.int8 and (ex[i] == q).all()
            ok &= np.load(d + "/o/expanded_scale.npy")[i] == s
    if not ok:
        failures += 1
        print("FAIL case", case, dict(N=N, K=K, E=E, H=H, start=start, end=end, quant=quant, rtype=rtype))

d = os.path.join(work, "bad")
os.makedirs(d)
np.save(d + "/x.npy", np.ones((2, 3), np.float32)), np.save(d + "/ids.npy", np.zeros((2, 1), np.int32))
rc, err = run(["--x", d + "/x.npy", "--expert-idx", d + "/ids.npy", "--expert-num", "2", "--quant-mode", "2",
               "--out", d + "/o"])
if rc != 1 or "quantMode" not in err or os.path.exists(d + "/o/expanded_x.npy"):
    failures += 1
    print("FAIL: quant mode 2 should be rejected with exit 1:", rc, err)
rc, err = run(["--x", d + "/x.npy", "--out", d + "/o"])
if rc != 2:
    failures += 1
    print("FAIL: missing --expert-idx should be a usage error (2):", rc, err)
print("test_cli_init_routing_v3:", "FAILED" if failures else "ok", flush=True)
sys.exit(1 if failures else 0)
