#!/usr/bin/env python3
"""Writes the golden files of tests/test_convolve2d.c and tests/test_convolve1d.c from SciPy and NumPy.

    pip install numpy scipy      # made with NumPy 2.4.6, SciPy 1.17.1
    python3 tests/data/make_convolve_golden.py      # rewrites tests/data/convolve{2,1}d_golden.txt

Inputs are small random integers in [-4, 4] (fixed seed), so every output is an integer far below 2^24: exact in
float32 and float64 whatever the summation order, and the tests can demand equality from every backend and dtype.

convolve2d_golden.txt, whitespace-separated tokens:
    convolve2d-golden 1 <ncases>
    per case:   case <H> <W> <kh> <kw>  <H*W image values>  <kh*kw kernel values>  <nresults>
    per result: <mode> <boundary> <fillvalue> <OH> <OW> <OH*OW values>     (row-major)
                <mode> <boundary> <fillvalue> error                       (SciPy raised ValueError)
convolve1d_golden.txt:
    convolve1d-golden 1 <ncases>
    per case:   case <n> <m> <n values of a> <m values of v> 3
    per result: <mode> <length> <values>
"""
import os

import numpy as np
import scipy.signal

HERE = os.path.dirname(os.path.abspath(__file__))
rng = np.random.default_rng(20261121)

# (H, W, kh, kw): odd, even and non-square kernels, a 1x1 image, kernels larger than the image (both ways round,
# which 'valid' swaps, or in one dimension only, which 'valid' refuses), kernels several times the image (wrap and
# symm then reach several periods away), row and column vectors.
CASES_2D = [
    (5, 7, 3, 3),
    (6, 5, 4, 2),
    (4, 6, 2, 5),
    (1, 1, 3, 3),
    (1, 1, 1, 1),
    (3, 4, 5, 7),
    (3, 8, 5, 2),
    (7, 3, 6, 6),
    (9, 11, 1, 1),
    (2, 2, 7, 6),
    (1, 9, 1, 4),
    (8, 1, 3, 1),
    (10, 13, 6, 4),
]
BOUNDARIES = [("fill", 0), ("fill", -2), ("wrap", 0), ("symm", 0)]
MODES = ["full", "same", "valid"]

CASES_1D = [(1, 1), (5, 3), (5, 4), (3, 5), (4, 5), (7, 7), (10, 1), (1, 6), (13, 6), (2, 9), (16, 8)]


def ints(a):
    return " ".join(str(int(v)) for v in np.asarray(a).ravel())


def values(a):
    a = np.asarray(a)
    assert np.all(a == np.round(a)), "outputs of integer inputs must be integers"
    return ints(np.round(a))


def main():
    lines = [f"convolve2d-golden 1 {len(CASES_2D)}"]
    for h, w, kh, kw in CASES_2D:
        image = rng.integers(-4, 5, size=(h, w)).astype(np.float64)
        kernel = rng.integers(-4, 5, size=(kh, kw)).astype(np.float64)
        lines.append(f"case {h} {w} {kh} {kw}")
        lines.append(ints(image))
        lines.append(ints(kernel))
        lines.append(str(len(MODES) * len(BOUNDARIES)))
        for mode in MODES:
            for boundary, fill in BOUNDARIES:
                try:
                    out = scipy.signal.convolve2d(image, kernel, mode=mode, boundary=boundary, fillvalue=fill)
                except ValueError:
                    lines.append(f"{mode} {boundary} {fill} error")
                    continue
                lines.append(f"{mode} {boundary} {fill} {out.shape[0]} {out.shape[1]}")
                lines.append(values(out))
    with open(os.path.join(HERE, "convolve2d_golden.txt"), "w") as f:
        f.write("\n".join(lines) + "\n")

    lines = [f"convolve1d-golden 1 {len(CASES_1D)}"]
    for n, m in CASES_1D:
        a = rng.integers(-4, 5, size=n).astype(np.float64)
        v = rng.integers(-4, 5, size=m).astype(np.float64)
        lines.append(f"case {n} {m}")
        lines.append(ints(a))
        lines.append(ints(v))
        lines.append(str(len(MODES)))
        for mode in MODES:
            out = np.convolve(a, v, mode=mode)
            lines.append(f"{mode} {len(out)}")
            lines.append(values(out))
    with open(os.path.join(HERE, "convolve1d_golden.txt"), "w") as f:
        f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
