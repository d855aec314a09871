#!/usr/bin/env python3
"""Golden files for tests/test_histogram.c and tests/test_ufunc.c, made with NumPy and SciPy.

Run from this folder:  python3 make_elementwise_golden.py   (numpy >= 1.20, scipy >= 1.6; the files are deterministic: fixed
seeds, and every number is written exactly, floats in C99 hex notation that strtod reads back bit for bit).

histogram_golden.txt: np.histogram(x.astype(np.float64), bins, range=(lo, hi)) -- float64 data so that NumPy's
bin edges are the float64 np.linspace(lo, hi, bins + 1) that gpuws defines -- minus the values equal to hi, which
NumPy puts in the last bin and gpuws does not count (its bins are half-open [lo, hi)). Data include values exactly
on edges, just beside them, lo, hi, outside the range, NaN and infinities.
    histogram <f32|i32> <n> <lo> <hi> <bins>
    <n lines: one value each>
    counts <bins integers>

ufunc_golden.txt: the workshop's formulas evaluated in float64 on float32 inputs, by SciPy where it has the
function (scipy.stats.norm.pdf) and by NumPy otherwise (np.hypot for hypot and for the polar distance):
    <function> <inputs...> <expected>
"""
import numpy as np
from scipy import stats

rng = np.random.default_rng(20260501)


def hx(v):
    return float(v).hex()


def histogram_case(out, dtype, x, lo, hi, bins):
    x64 = x.astype(np.float64)
    counts, _ = np.histogram(x64, bins=bins, range=(lo, hi))
    counts[-1] -= int(np.count_nonzero(x64 == hi))
    out.write(f"histogram {dtype} {len(x)} {hx(lo)} {hx(hi)} {bins}\n")
    for v in x:
        out.write((hx(v) if dtype == "f32" else str(int(v))) + "\n")
    out.write("counts " + " ".join(str(int(c)) for c in counts) + "\n")


def f32_case(lo, hi, bins, n):
    edges = np.linspace(lo, hi, bins + 1)
    e32 = edges.astype(np.float32)
    special = np.concatenate([
        e32, np.nextafter(e32, np.float32(np.inf)), np.nextafter(e32, np.float32(-np.inf)),
        np.array([lo, hi, lo - 1, hi + 1, np.nan, np.inf, -np.inf, 0.0, -0.0], dtype=np.float32)])
    x = np.concatenate([rng.uniform(lo - 0.5, hi + 0.5, n).astype(np.float32), special]).astype(np.float32)
    rng.shuffle(x)
    return x


with open("histogram_golden.txt", "w") as f:
    f.write("# made by make_elementwise_golden.py: NumPy %s\n" % np.__version__)
    histogram_case(f, "f32", f32_case(-2.3, 4.1, 37, 1000), -2.3, 4.1, 37)
    histogram_case(f, "f32", f32_case(0.0, 1.0, 256, 1000), 0.0, 1.0, 256)
    histogram_case(f, "f32", f32_case(-1e6, 3.3e7, 300, 1000), -1e6, 3.3e7, 1000)
    ints = np.concatenate([rng.integers(-60, 141, 1000), np.arange(-52, 123),
                           [-2**31, 2**31 - 1]]).astype(np.int32)
    rng.shuffle(ints)
    histogram_case(f, "i32", ints, -50.5, 120.25, 17)
    wide = np.concatenate([rng.integers(-2**31, 2**31, 1000, dtype=np.int64),
                           [-2**31, -2**31 + 1, 2**31 - 1, 0, -1, 1]]).astype(np.int32)
    histogram_case(f, "i32", wide, -3e9, 3e9, 64)

f32 = lambda a: np.asarray(a, dtype=np.float32).astype(np.float64)

with open("ufunc_golden.txt", "w") as f:
    f.write("# made by make_elementwise_golden.py: NumPy %s, SciPy %s\n" % (np.__version__, __import__("scipy").__version__))
    n = 40
    x, m, s = f32(rng.uniform(-10, 10, n)), f32(rng.uniform(-3, 3, n)), f32(rng.uniform(0.2, 4, n))
    for a, b, c, r in zip(x, m, s, stats.norm.pdf(x, loc=m, scale=s)):
        f.write(f"gaussian_pdf {hx(a)} {hx(b)} {hx(c)} {hx(r)}\n")
    r1, t1, r2, t2 = (f32(rng.uniform(0, 100, n)), f32(rng.uniform(-7, 7, n)), f32(rng.uniform(0, 100, n)),
                      f32(rng.uniform(-7, 7, n)))
    d = np.hypot(r1 * np.cos(t1) - r2 * np.cos(t2), r1 * np.sin(t1) - r2 * np.sin(t2))
    for vals in zip(r1, t1, r2, t2, d):
        f.write("polar_distance " + " ".join(hx(v) for v in vals) + "\n")
    i, p, a = f32(np.arange(n) * 997.0), f32(np.full(n, 1e6 / 23)), f32(rng.uniform(1, 200, n))
    for vals in zip(i, p, a, np.maximum(np.sin(i / p) - 0.3, 0.0) * a):
        f.write("make_pulses " + " ".join(hx(v) for v in vals) + "\n")
    hxs = np.concatenate([f32(rng.uniform(-1e30, 1e30, n // 2)), f32(rng.uniform(-1, 1, n // 2)),
                          [0.0, -0.0, 3.0, np.inf, -np.inf, np.nan, np.nan, 1e-40, 3e38]])
    hys = np.concatenate([f32(rng.uniform(-1e30, 1e30, n // 2)), f32(rng.uniform(-1e-3, 1e-3, n // 2)),
                          [0.0, 0.0, 4.0, np.nan, 1.0, 1.0, np.inf, 1e-40, 3e38]])
    for vals in zip(hxs, hys, np.hypot(hxs, hys)):
        f.write("hypot " + " ".join(hx(v) for v in vals) + "\n")
    g, w = f32(np.floor(rng.uniform(0, 255, n))), f32(rng.normal(0.5, 0.1, n))
    for vals in zip(g, w, np.tanh(g / 255 * w)):
        f.write("hidden_layer " + " ".join(hx(v) for v in vals) + "\n")
