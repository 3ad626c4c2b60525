#!/usr/bin/python3
# check_example.py - reads the CANN-style example's stdout and checks every printed
# gradient against a float64 recomputation from the example's inputs (kept here, separately).
#
# usage: opapi_test | check_example.py      (exit 0 = all numbers right)
import re
import sys

import numpy as np

R, K, H, E = 4, 2, 8, 3
grad_y = np.array([
    [0.5, -1.0, 1.5, 2.0, -0.25, 0.75, 1.0, -2.0],
    [1.0, 0.5, -0.5, 0.25, 2.0, -1.5, 0.0, 1.25],
    [-1.0, 2.0, 0.75, -0.5, 1.5, 0.25, -2.5, 0.5],
    [0.25, 0.0, -1.25, 1.0, 0.5, 2.0, -0.75, -1.0],
])
row_idx = [5, 2, 0, 7, 3, 6, 1, 4]
expanded_x = np.array([
    [1.0, 0.5, -1.0, 0.25, 2.0, -0.5, 1.5, 0.0],
    [-0.5, 1.0, 0.75, -2.0, 0.5, 1.25, 0.0, 1.0],
    [0.25, -1.5, 1.0, 0.5, -1.0, 2.0, 0.75, -0.25],
    [2.0, 0.0, -0.5, 1.5, 0.25, -1.0, 0.5, 0.75],
    [-1.25, 0.75, 0.5, 1.0, -0.5, 0.0, 2.0, 1.5],
    [0.5, 2.0, -0.25, 0.0, 1.0, 0.5, -1.5, 1.0],
    [1.5, -1.0, 0.0, 0.75, 0.25, -0.5, 1.0, 2.0],
    [0.0, 0.25, 1.25, -1.0, 1.5, 0.75, -0.25, 0.5],
])
scales = np.array([[0.75, 0.25], [0.25, 0.75], [0.625, 0.375], [0.875, 0.125]])
expert_idx = [[0, 2], [1, 0], [2, 1], [0, 1]]
bias = np.array([
    [0.5, 0.0, -0.5, 1.0, 0.25, 0.0, 0.5, -1.0],
    [-1.0, 0.25, 0.5, 0.0, 0.75, -0.5, 0.0, 0.25],
    [0.0, 1.0, 0.25, 0.5, -0.25, 0.5, -0.75, 0.0],
])

# Reference, float64, written from the operator's definition (dropless mode 0).
want_gx = np.full((R * K, H), np.nan)
want_gs = np.zeros((R, K))
bound_gs = np.zeros((R, K))
for r in range(R):
    for k in range(K):
        d = row_idx[r * K + k]
        # fp32 product of two fp32 numbers = float64 product rounded once to fp32.
        want_gx[d] = (grad_y[r] * scales[r][k]).astype(np.float32).astype(np.float64)
        factor = expanded_x[d] + bias[expert_idx[r][k]]
        want_gs[r][k] = np.dot(factor, grad_y[r])
        bound_gs[r][k] = 1e-5 * np.dot(np.abs(factor), np.abs(grad_y[r]))
assert not np.isnan(want_gx).any(), "row index is not a permutation"


def parse(text, name, rows, cols):
    got = {}
    for m in re.finditer(r"^%s\[(\d+)\] =((?: \S+)+)\s*$" % re.escape(name), text, re.M):
        got[int(m.group(1))] = [float(v) for v in m.group(2).split()]
    if sorted(got) != list(range(rows)):
        sys.exit("check_example: %s rows printed: %s, want 0..%d" % (name, sorted(got), rows - 1))
    out = np.array([got[i] for i in range(rows)])
    if out.shape != (rows, cols):
        sys.exit("check_example: %s has shape %s, want %s" % (name, out.shape, (rows, cols)))
    return out


text = sys.stdin.read()
got_gx = parse(text, "gradExpandedX", R * K, H)
got_gs = parse(text, "gradScales", R, K)

failures = 0
# gradExpandedX is exact: compare at the precision the example prints (%.6f).
for d in range(R * K):
    for j in range(H):
        if "%.6f" % want_gx[d][j] != "%.6f" % got_gx[d][j]:
            print("gradExpandedX[%d][%d] = %.6f, want %.6f" % (d, j, got_gx[d][j], want_gx[d][j]))
            failures += 1
# gradScales: the spec's bound, plus half an fp32 ulp and the 6-decimal print rounding.
for r in range(R):
    for k in range(K):
        want = want_gs[r][k]
        tol = bound_gs[r][k] + np.spacing(np.float32(abs(want))) / 2 + 5e-7
        if not abs(got_gs[r][k] - want) <= tol:
            print("gradScales[%d][%d] = %.6f, want %.6f (tol %.2g)" % (r, k, got_gs[r][k], want, tol))
            failures += 1

if failures:
    sys.exit("check_example: %d wrong numbers" % failures)
print("check_example: %d gradExpandedX and %d gradScales values match the float64 reference"
      % (R * K * H, R * K))
