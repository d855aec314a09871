#!/usr/bin/env python3
"""Golden files for tests/test_matmul.c and tests/test_l2_norm.c, made with NumPy (regenerate: python3 this file).

matmul_golden.txt: float32 A (m x k) and B (k x n) from a fixed-seed generator and C = A @ B computed by NumPy in
float64 on the float32 values (error below k * 2^-53 * sum|a||b|, far inside the float32 bound the tests use).
l2_norm_golden.txt: a float32 matrix whose rows span magnitudes from 1e-35 to 1e35 (and a few at the edges of the
float32 range, where squaring in float32 would overflow or underflow) and np.linalg.norm(x.astype(float64), axis=1).

Format: '#' comment lines, then blocks `name dims...` followed by the values as C99 hexadecimal floats (exact)."""
import os

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))


def hexes(a):
    return "\n".join(" ".join(float(v).hex() for v in row) for row in np.atleast_2d(a))


def matmul(rng):
    m, n, k = 7, 5, 13  # not multiples of anything, small enough to read
    a = rng.uniform(-1, 1, (m, k)).astype(np.float32)
    b = rng.uniform(-1, 1, (k, n)).astype(np.float32)
    c = a.astype(np.float64) @ b.astype(np.float64)
    with open(os.path.join(HERE, "matmul_golden.txt"), "w") as f:
        f.write("# made by make_matmul_l2_golden.py with numpy %s: C = A.astype(f64) @ B.astype(f64)\n" % np.__version__)
        f.write("A %d %d\n%s\nB %d %d\n%s\nC %d %d\n%s\n" % (m, k, hexes(a), k, n, hexes(b), m, n, hexes(c)))


def l2_norm(rng):
    rows, cols = 12, 37
    x = rng.uniform(-1, 1, (rows, cols)).astype(np.float64)
    scale = 10.0 ** np.linspace(-35, 35, rows)  # squares of the outer rows leave float32's range
    x = (x * scale[:, None]).astype(np.float32)
    x[0, :] = np.float32(3.0e38)  # near FLT_MAX: the norm 1.8e39 overflows float32 (and must be Inf)
    x[1, :] = np.float32(3.0e38) / np.float32(8.0)  # norm 2.3e38 < FLT_MAX = 3.4e38: finite only with scaling
    x[2, :5] = np.float32(1e-38)  # squares underflow in float32; the rest of the row is zero
    x[2, 5:] = 0
    norms = np.linalg.norm(x.astype(np.float64), axis=1)
    with open(os.path.join(HERE, "l2_norm_golden.txt"), "w") as f:
        f.write("# made by make_matmul_l2_golden.py with numpy %s: np.linalg.norm(X.astype(f64), axis=1)\n" % np.__version__)
        f.write("X %d %d\n%s\nNORM %d 1\n%s\n" % (rows, cols, hexes(x), rows, hexes(norms[:, None])))


if __name__ == "__main__":
    rng = np.random.default_rng(20260505)
    matmul(rng)
    l2_norm(rng)
