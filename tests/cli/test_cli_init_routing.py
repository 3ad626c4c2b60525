#!/usr/bin/python3
# tests/cli/test_cli_init_routing.py - `moefr init-routing` end to end on numpy-written
# .npy files: aclnnMoeInitRoutingV2 (dropless, active, counts, drop-pad, before-capacity)
# and, with --v1, aclnnMoeInitRouting (default and given rowIdx), against a numpy oracle
# written from CANN's documented formulas (stable argsort by expert); bf16 as <u2 bits;
# usage, file and operator errors with their exit codes and no output files left behind.
#
# usage: test_cli_init_routing.py MOEFR_BINARY WORKDIR   (MOEFR_TEST_SEED replays)
import os
import random
import shutil
import subprocess
import sys

import numpy as np

moefr, work = sys.argv[1], sys.argv[2]
emu = [os.environ["MOEFR_TEST_EMULATOR"]] if os.environ.get("MOEFR_TEST_EMULATOR") else []
seed = int(os.environ.get("MOEFR_TEST_SEED", random.SystemRandom().randrange(1 << 31)))
print(f"test_cli_init_routing: seed {seed} (MOEFR_TEST_SEED={seed} replays)", flush=True)
rng = np.random.default_rng(seed)
shutil.rmtree(work, ignore_errors=True)
os.makedirs(work)
failures = 0
case_no = 0


def fail(msg):
    global failures
    failures += 1
    print("FAIL:", msg, flush=True)


def save(path, arr):
    version = [(1, 0), (2, 0), (3, 0)][int(rng.integers(3))]
    with open(path, "wb") as f:
        np.lib.format.write_array(f, np.ascontiguousarray(arr), version=version)
    return path


def run(args):
    p = subprocess.run(emu + [moefr, "init-routing"] + args, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       text=True, timeout=120)
    return p.returncode, p.stdout, p.stderr


def new_case():
    global case_no
    case_no += 1
    d = os.path.join(work, f"case{case_no:03d}")
    os.makedirs(d)
    return d


def random_x(N, H, dt):
    """Random bit patterns (NaN payloads included): rows must travel bit for bit."""
    if dt == "f32":
        return rng.integers(0, 1 << 32, size=(N, H), dtype=np.uint64).astype(np.uint32).view(np.float32)
    bits = rng.integers(0, 1 << 16, size=(N, H), dtype=np.uint32).astype(np.uint16)
    return bits.view(np.float16) if dt == "f16" else bits


def same_bits(a, b):
    return a.shape == b.shape and a.dtype == b.dtype and a.tobytes() == b.tobytes()


def files_are(outdir, names, label):
    have = sorted(os.listdir(outdir)) if os.path.isdir(outdir) else []
    if have != sorted(names):
        fail(f"{label}: files in --out are {have}, expected {sorted(names)}")
        return False
    return True


def v2_case(dt, mode, cflag=0, bflag=0, active=0):
    d = new_case()
    N, K, H, E = int(rng.integers(1, 30)), int(rng.integers(1, 7)), int(rng.integers(1, 37)), int(rng.integers(1, 9))
    T = N * K
    x = random_x(N, H, dt)
    ei = rng.integers(0, E, size=(N, K)).astype(np.int32)
    C = int(rng.integers(1, N + 1))
    args = ["--x", save(f"{d}/x.npy", x), "--expert-idx", save(f"{d}/ei.npy", ei), "--out", f"{d}/out"]
    if dt == "bf16":
        args += ["--dtype", "bf16"]
    args += ["--expert-num", str(E), "--drop-pad-mode", str(mode)]
    if mode == 1:
        args += ["--expert-capacity", str(C), "--before-capacity-flag", str(bflag)]
    else:
        args += ["--count-flag", str(cflag), "--active-num", str(active)]
    rc, out, err = run(args)
    label = f"V2 {dt} mode={mode} cflag={cflag} bflag={bflag} active={active} N={N} K={K} H={H} E={E} C={C}"
    if rc != 0:
        fail(f"{label}: exit {rc}: {err.strip()}")
        return
    # the oracle: CANN's formulas (aclnnMoeInitRoutingV2.md)
    perm = np.argsort(ei.reshape(-1), kind="stable")
    flat = ei.reshape(-1)
    row = np.empty(T, np.int32)
    hist = np.bincount(flat, minlength=E)
    names = ["expanded_x.npy", "expanded_row_idx.npy"]
    if mode == 0:
        row[perm] = np.arange(T, dtype=np.int32)
        A = T if active <= 0 else min(active, T)
        wx = x[perm[:A] // K]
        if cflag:
            names.append("expert_tokens_count_or_cumsum.npy")
    else:
        wx = np.zeros((E, C, H), dtype=x.dtype)
        seen = np.zeros(E, np.int64)
        for i in range(T):
            j = perm[i]
            e = flat[j]
            if seen[e] < C:
                wx[e, seen[e]] = x[j // K]
                row[j] = e * C + seen[e]
            else:
                row[j] = -1
            seen[e] += 1
        if bflag:
            names.append("expert_tokens_before_capacity.npy")
    if not files_are(f"{d}/out", names, label):
        return
    if not same_bits(np.load(f"{d}/out/expanded_x.npy"), wx):
        fail(f"{label}: expanded_x differs")
    if not same_bits(np.load(f"{d}/out/expanded_row_idx.npy"), row):
        fail(f"{label}: expanded_row_idx differs")
    if mode == 0 and cflag:
        want = (np.cumsum(hist) if cflag == 1 else hist).astype(np.int32)
        if not same_bits(np.load(f"{d}/out/expert_tokens_count_or_cumsum.npy"), want):
            fail(f"{label}: counts differ")
    if mode == 1 and bflag:
        if not same_bits(np.load(f"{d}/out/expert_tokens_before_capacity.npy"), hist.astype(np.int32)):
            fail(f"{label}: before-capacity counts differ")


def v1_case(dt, give_row_idx, active=None):
    d = new_case()
    N, K, H, E = int(rng.integers(1, 30)), int(rng.integers(1, 7)), int(rng.integers(1, 37)), int(rng.integers(1, 6))
    T = N * K
    x = random_x(N, H, dt)
    ei = rng.integers(0, E, size=(N, K)).astype(np.int32)
    ri = (np.arange(T).reshape(K, N).T if not give_row_idx else rng.permutation(T).reshape(N, K)).astype(np.int32)
    args = ["--v1", "--x", save(f"{d}/x.npy", x), "--expert-idx", save(f"{d}/ei.npy", ei), "--out", f"{d}/out"]
    if give_row_idx:
        args += ["--row-idx", save(f"{d}/ri.npy", ri)]
    if active is not None:
        args += ["--active-num", str(active)]
    if dt == "bf16":
        args += ["--dtype", "bf16"]
    rc, out, err = run(args)
    label = f"V1 {dt} rowIdx={'given' if give_row_idx else 'default'} active={active} N={N} K={K} H={H}"
    if rc != 0:
        fail(f"{label}: exit {rc}: {err.strip()}")
        return
    # the oracle: CANN's golden script (moe_init_routing_data/gen_data.py)
    perm = np.argsort(ei.reshape(-1), kind="stable")
    src = ri.reshape(-1)[perm]
    row = np.zeros(T, np.int32)
    row[src] = np.arange(T, dtype=np.int32)
    A = min(N if active is None else active, N) * K
    wx = x[src[:A] % N]
    if not files_are(f"{d}/out", ["expanded_x.npy", "expanded_row_idx.npy", "expanded_expert_idx.npy"], label):
        return
    if not same_bits(np.load(f"{d}/out/expanded_x.npy"), wx):
        fail(f"{label}: expanded_x differs")
    if not same_bits(np.load(f"{d}/out/expanded_row_idx.npy"), row):
        fail(f"{label}: expanded_row_idx differs")
    if not same_bits(np.load(f"{d}/out/expanded_expert_idx.npy"), ei.reshape(-1)[perm].astype(np.int32)):
        fail(f"{label}: expanded_expert_idx differs")


def expect_error(args, want_rc, want_text, label):
    d = new_case()
    rc, out, err = run([a.replace("@", d) for a in args] + ["--out", f"{d}/out"])
    if rc != want_rc or want_text not in err:
        fail(f"{label}: exit {rc} (want {want_rc}), stderr {err.strip()!r} (want {want_text!r})")
    if os.path.isdir(f"{d}/out") and os.listdir(f"{d}/out"):
        fail(f"{label}: output files left behind: {os.listdir(f'{d}/out')}")


for dt in ("f32", "f16", "bf16"):
    for cflag in (0, 1, 2):
        v2_case(dt, 0, cflag=cflag)
    v2_case(dt, 0, cflag=1, active=int(rng.integers(1, 20)))
    v2_case(dt, 1, bflag=1)
    v2_case(dt, 1, bflag=0)
    v1_case(dt, False)
    v1_case(dt, True)
    v1_case(dt, True, active=int(rng.integers(0, 10)))

# errors: usage (2), file (3), operator (1, its message and the option it names)
base = os.path.join(work, "base")
os.makedirs(base)
xf = save(f"{base}/x.npy", np.ones((4, 3), np.float32))
ef = save(f"{base}/ei.npy", np.array([[0, 1], [2, 0], [1, 1], [0, 2]], np.int32))
bad_e = save(f"{base}/bad_ei.npy", np.array([[0, 1], [5, 0], [1, 1], [0, 2]], np.int32))
bad_r = save(f"{base}/bad_ri.npy", np.array([[0, 1], [2, 3], [4, 5], [6, 8]], np.int32))
with open(f"{base}/trunc.npy", "wb") as f:
    f.write(open(xf, "rb").read()[:-4])
expect_error(["--expert-idx", ef], 2, "missing required option --x", "no --x")
expect_error(["--x", xf, "--expert-idx", ef, "--row-idx", ef], 2, "add --v1", "--row-idx without --v1")
expect_error(["--v1", "--x", xf, "--expert-idx", ef, "--drop-pad-mode", "1"], 2, "not a parameter", "--v1 + mode")
expect_error(["--x", xf, "--expert-idx", ef, "--active-num", "x"], 2, "not an integer", "bad integer")
expect_error(["--v1=1", "--x", xf, "--expert-idx", ef], 2, "--v1", "--v1 takes no value")
expect_error(["--x", f"{base}/trunc.npy", "--expert-idx", ef], 3, "--x", "truncated file")
expect_error(["--x", f"{base}/missing.npy", "--expert-idx", ef], 3, "--x", "missing file")
expect_error(["--x", xf, "--expert-idx", bad_e, "--drop-pad-mode", "1", "--expert-num", "3", "--expert-capacity", "2"],
             1, "expertIdx[1][0] = 5 is out of range [0, 3)", "V2 id out of range")
expect_error(["--x", xf, "--expert-idx", ef, "--drop-pad-mode", "1", "--expert-num", "3", "--expert-capacity", "9"],
             1, "[--expert-capacity 9]", "V2 tiling names the option")
expect_error(["--v1", "--x", xf, "--expert-idx", ef, "--row-idx", bad_r], 1,
             "rowIdx[3][1] = 8 is out of range [0, 8) [--row-idx", "V1 rowIdx out of range")
expect_error(["--v1", "--x", xf, "--expert-idx", ef, "--active-num", "-1"], 1, "activeNum must be >= 0",
             "V1 negative activeNum")
rc, out, err = run(["--help"])
if rc != 0 or "--v1" not in out:
    fail(f"--help: exit {rc}")

print(f"test_cli_init_routing: {case_no} cases, {failures} failed", flush=True)
sys.exit(1 if failures else 0)
