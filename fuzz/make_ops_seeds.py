#!/usr/bin/env python3
"""make_ops_seeds.py - writes the starting seeds of fuzz_ops (fuzz/corpus/fuzz_ops/):
for each operator index of the registry (byte 0) and each scenario (byte 1:
0 hostile descriptors, 1 a valid problem checked against the oracle, 2 a valid
problem with corrupted contents), a few inputs of deterministic pseudo-random
bytes. Re-running rewrites the same files; crash-* inputs are left alone."""
import os
import random
import sys

N_OPS = 48  # len(mf_op_entries()); byte 0 is taken modulo the count
out = os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus", "fuzz_ops")
os.makedirs(out, exist_ok=True)
rng = random.Random(23)
for op in range(N_OPS):
    for sc in range(3):
        for k in range(2):
            body = bytes(rng.randrange(256) for _ in range(rng.randrange(24, 96)))
            with open(os.path.join(out, "seed-op%02d-s%d-%d" % (op, sc, k)), "wb") as f:
                f.write(bytes([op, sc]) + body)
sys.exit(0)
