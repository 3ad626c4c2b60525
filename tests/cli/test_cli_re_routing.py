#!/usr/bin/python3
"""test_cli_re_routing.py - `moefr re-routing` end to end: numpy-written .npy
inputs (fp16 tokens, bf16 as <u2 bits, int8 as |i1, <i4 counts, <f4 scales 1-D and 2-D),
a reference from the documented offsets (block (r, e) moves from the sum of
the blocks before it rank-major to the sum before it expert-major), both
index types, counts that leave rows over (zeros); exit codes 1 (counts past
the tokens), 2 (usage) and 3 (file), and no output left by a failed run.

usage: test_cli_re_routing.py MOEFR_EXE WORKDIR"""
import os
import shutil
import subprocess
import sys

import numpy as np

EXE, WORK = sys.argv[1], sys.argv[2]
EMU = [os.environ["MOEFR_TEST_EMULATOR"]] if os.environ.get("MOEFR_TEST_EMULATOR") else []
shutil.rmtree(WORK, ignore_errors=True)
os.makedirs(WORK)
rng = np.random.default_rng()
fails = 0
cases = 0


def check(cond, what):
    global fails
    if not cond:
        print("FAIL:", what)
        fails += 1


def run(*args):
    env = dict(os.environ)
    env.pop("MOEFR_SOC", None)
    return subprocess.run(EMU + [EXE, "re-routing"] + list(args), capture_output=True, text=True, env=env)


def reference(tok, cnt, scl, idx_type):
    N, E = cnt.shape
    pt, idx = np.zeros_like(tok), np.zeros(tok.shape[0], np.int32)
    ps = np.zeros_like(scl) if scl is not None else None
    for r in range(N):
        for e in range(E):
            src = int(cnt[:r].sum() + cnt[r, :e].sum())
            dst = int(cnt[:, :e].sum() + cnt[:r, e].sum())
            for i in range(int(cnt[r, e])):
                pt[dst + i] = tok[src + i]
                if ps is not None:
                    ps[dst + i] = scl[src + i]
                idx[dst + i if idx_type == 0 else src + i] = src + i if idx_type == 0 else dst + i
    return pt, ps, idx, cnt.sum(0).astype(np.int32)


for case in range(12):
    cases += 1
    d = os.path.join(WORK, "c%d" % case)
    os.makedirs(d)
    A, H, N, E = int(rng.integers(1, 40)), int(rng.integers(1, 9)), int(rng.integers(1, 5)), int(rng.integers(1, 5))
    S = A if case % 3 else int(rng.integers(0, A + 1))
    cnt = np.bincount(rng.integers(0, N * E, S), minlength=N * E).reshape(N, E).astype(np.int32)
    bf16 = case % 2 == 1
    tok = rng.integers(0, 65536, (A, H)).astype(np.uint16) if bf16 else rng.standard_normal((A, H)).astype(np.float16)
    if case % 4 == 2:  # int8 tokens ('|i1')
        tok = rng.integers(-128, 128, (A, H)).astype(np.int8)
    scl = None
    if case % 4:
        scl = rng.standard_normal((A,) if case % 4 != 3 else (A, 2)).astype(np.float32)
    idx_type = case % 2
    np.save(os.path.join(d, "t.npy"), tok)
    np.save(os.path.join(d, "c.npy"), cnt)
    args = ["--tokens", os.path.join(d, "t.npy"), "--expert-token-num-per-rank", os.path.join(d, "c.npy"),
            "--idx-type", str(idx_type), "--out", os.path.join(d, "o")]
    if scl is not None:
        np.save(os.path.join(d, "s.npy"), scl)
        args += ["--per-token-scales", os.path.join(d, "s.npy")]
    if bf16:
        args += ["--dtype", "bf16"]
    p = run(*args)
    check(p.returncode == 0, "case %d: exit %d %s" % (case, p.returncode, p.stderr))
    if p.returncode:
        continue
    wpt, wps, widx, wnum = reference(tok, cnt, scl, idx_type)
    o = lambda n: np.load(os.path.join(d, "o", n + ".npy"))
    got = o("permute_tokens")
    check(got.dtype == tok.dtype and np.array_equal(got.view(np.uint8), wpt.view(np.uint8)), "case %d: tokens" % case)
    check(np.array_equal(o("permute_token_idx"), widx), "case %d: idx" % case)
    check(np.array_equal(o("expert_token_num"), wnum), "case %d: counts" % case)
    if scl is not None:
        check(np.array_equal(o("permute_per_token_scales").view(np.uint32), wps.view(np.uint32)), "case %d: scales" % case)
    else:
        check(not os.path.exists(os.path.join(d, "o", "permute_per_token_scales.npy")), "case %d: scales file" % case)

# refusals: counts past the tokens (1), a missing option (2), a missing file (3); nothing written
cases += 1
d = os.path.join(WORK, "bad")
os.makedirs(d)
np.save(os.path.join(d, "t.npy"), np.ones((4, 2), np.float16))
np.save(os.path.join(d, "c.npy"), np.array([[2, 3]], np.int32))
p = run("--tokens", os.path.join(d, "t.npy"), "--expert-token-num-per-rank", os.path.join(d, "c.npy"), "--out",
        os.path.join(d, "o"))
check(p.returncode == 1 and "161002" in p.stderr and not os.path.exists(os.path.join(d, "o")),
      "counts past the tokens: exit %d %s" % (p.returncode, p.stderr))
p = run("--tokens", os.path.join(d, "t.npy"), "--out", os.path.join(d, "o"))
check(p.returncode == 2, "missing option: exit %d" % p.returncode)
p = run("--tokens", os.path.join(d, "nope.npy"), "--expert-token-num-per-rank", os.path.join(d, "c.npy"), "--out",
        os.path.join(d, "o"))
check(p.returncode == 3, "missing file: exit %d" % p.returncode)

print("test_cli_re_routing: %d cases, %d failures" % (cases, fails))
sys.exit(1 if fails else 0)
