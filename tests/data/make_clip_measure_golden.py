#!/usr/bin/env python3
"""Golden data for tests/test_sigma_clip.c and tests/test_measure.c, made with NumPy and SciPy.

Run from anywhere:  python3 tests/data/make_clip_measure_golden.py   (pip install numpy scipy)
The outputs are deterministic (fixed seeds); re-running rewrites identical files.

sigma_clip_<case>.f32      raw little-endian float32 input (NaNs included)
sigma_clip_golden.txt      one line per case: name input n kappa max_iterations count median mean std iterations converged
    (input names the .f32 file, sigma_clip_<input>.f32; several cases may share one)
    The loop is the workshop's, run by NumPy on a float64 copy of the non-NaN values (so bounds, comparisons and
    statistics are all float64 and the definition is exact; NumPy on the float32 array would accumulate in float32
    and can differ in the last bits, or on constant arrays in the outcome, see docs/algorithms/sigma_clip.md).

measure_<case>_data.f32    raw float32 image (row-major, width = columns)
measure_<case>_labels.i32  raw int32 label image
measure_<case>_golden.txt  first line: width height num_labels; then one line per label k = 1..N:
    k npix sum row col peak peak_row peak_col peak_unique
    from scipy.ndimage (sum_labels, center_of_mass, maximum, maximum_position; npix from numpy.bincount).
    peak_unique is 1 when the peak value occurs once in the label: scipy's maximum_position picks an arbitrary
    one among ties, gpuws the first in raster order, so positions are compared only when it is 1.
"""
import os

import numpy as np
import scipy.ndimage as ndi

HERE = os.path.dirname(os.path.abspath(__file__))


def clip(data, kappa=3.0, max_iterations=100):
    x = data[~np.isnan(data)].astype(np.float64)
    converged = 0
    it = 0
    with np.errstate(all="ignore"):
        import warnings

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            while it < max_iterations:
                it += 1
                med = np.median(x)
                std = np.std(x)
                new = x[(x > med - kappa * std) & (x < med + kappa * std)]
                if len(new) == len(x):
                    converged = 1
                    break
                x = new
            med, mean, std = np.median(x), np.mean(x), np.std(x)
    return len(x), med, mean, std, it, converged


def sky(rng, h, w, sigma=1e-3, sources=0, border=0):
    img = rng.normal(0.0, sigma, (h, w))
    for _ in range(sources):
        r, c = rng.integers(0, h), rng.integers(0, w)
        amp = rng.uniform(5 * sigma, 200 * sigma)
        rr, cc = np.ogrid[:h, :w]
        img += amp * np.exp(-((rr - r) ** 2 + (cc - c) ** 2) / (2 * 1.5**2))
    img = img.astype(np.float32)
    if border:
        img[:border, :] = np.nan
        img[:, -border:] = np.nan
    return img


def sigma_clip_cases():
    rng = np.random.default_rng(20261121)
    f = np.float32
    cases = []
    cases.append(("n1", np.array([0.5], f), 3.0, 100))
    cases.append(("n2", np.array([1.0, 2.0], f), 3.0, 100))
    odd7 = np.array([3, -1, 4, 1, -5, 9, 2.5], f)
    cases.append(("odd7_k1", odd7, 1.0, 100))      # shrinks to nothing in 5 passes
    cases.append(("odd7_k1.2", odd7, 1.2, 100))    # ends with 2 values: the even median
    cases.append(("odd7_k2", odd7, 2.0, 100))      # nothing removed
    even10 = np.array([2, 2, 7, 2, -3, 2, 5, 100, 3, 1], f)
    cases.append(("even10_ties_k1.5", even10, 1.5, 100))
    cases.append(("even10_ties_k2", even10, 2.0, 100))
    # the bounds m ± κs of a later pass reach past an earlier pass's: values removed then must stay removed
    cases.append(("regrowth_k1.5", np.array([-3, 1, 8, 7, -1, 5, 5, 1, 5, -1, 100, 0, 10, 5, 0], f), 1.5, 100))
    cases.append(("regrowth_k1.2", np.array([-3, 10, 30, -1, 7, 8, 1], f), 1.2, 100))
    cases.append(("constant", np.full(1000, 0.1, f), 3.0, 100))
    cases.append(("two_value_60_40", np.array([1.0] * 600 + [3.0] * 400, f), 3.0, 100))
    cases.append(("two_value_90_10", rng.permutation(np.array([2.0] * 900 + [-1.0] * 100, f)), 3.0, 100))
    g = rng.normal(0.0, 1.0, 10007).astype(f)
    g[rng.choice(g.size, 1000, replace=False)] = np.nan
    g[rng.choice(g.size, 20, replace=False)] = rng.uniform(8, 50, 20).astype(f)
    cases.append(("nan_sprinkled", g, 3.0, 100))
    cases.append(("sky_160", sky(rng, 160, 160, sources=30, border=5).ravel(), 3.0, 100))
    cases.append(("offset_1000", (1000.0 + rng.normal(0, 1, 5001)).astype(f), 3.0, 100))
    heavy = rng.standard_cauchy(8000).astype(f)
    cases.append(("cauchy", heavy, 3.0, 100))
    cases.append(("cauchy_maxit2", heavy, 3.0, 2))
    cases.append(("gauss_kappa2", rng.normal(-7.0, 0.25, 4096).astype(f), 2.0, 100))
    cases.append(("small_ints_zeros", np.array([0, -0.0, 0, 1, -1, 0, 2, -0.0, 0, 3, 0, -2, 0, 40], f), 3.0, 100))
    cases.append(("with_inf", np.array([1, 2, 3, np.inf], f), 3.0, 100))
    cases.append(("wide_kappa", rng.normal(0, 1, 999).astype(f), 100.0, 100))
    return cases


def write_sigma_clip():
    lines = []
    written = {}
    for name, data, kappa, maxit in sigma_clip_cases():
        data = np.ascontiguousarray(data, dtype="<f4")
        # cases on the same array share one input file
        input_name = next((k for k, v in written.items() if v is data or np.array_equal(v, data, equal_nan=True)), None)
        if input_name is None:
            input_name = name
            written[name] = data
            data.tofile(os.path.join(HERE, f"sigma_clip_{name}.f32"))
        cnt, med, mean, std, it, conv = clip(data, kappa, maxit)
        lines.append(f"{name} {input_name} {data.size} {kappa!r} {maxit} {cnt} {float(med)!r} {float(mean)!r} {float(std)!r} {it} {conv}")
    with open(os.path.join(HERE, "sigma_clip_golden.txt"), "w") as fh:
        fh.write("\n".join(lines) + "\n")


def measure_cases():
    rng = np.random.default_rng(4242)
    cases = []
    # Random labels 0..12 over random data, with hand-made specials; N = 14, so labels 13 and 14 have no pixel.
    h, w = 37, 53
    data = rng.uniform(-1.0, 2.0, (h, w)).astype(np.float32)
    labels = rng.integers(0, 13, (h, w)).astype(np.int32)
    labels[labels == 7] = 0          # label 7: made below with a zero sum
    labels[labels == 9] = 0          # label 9: a single pixel
    labels[labels == 11] = 0         # label 11: all-zero data
    labels[3, 4], data[3, 4] = 7, 1.5
    labels[20, 30], data[20, 30] = 7, -1.5
    labels[10, 10], data[10, 10] = 9, 0.25
    for r, c in [(0, 0), (5, 52), (36, 1)]:
        labels[r, c], data[r, c] = 11, 0.0
    # label 2: an exact tie for its peak at two places
    top = data[labels == 2].max()
    idx = np.flatnonzero(labels.ravel() == 2)
    data.ravel()[idx[-1]] = top
    data.ravel()[idx[len(idx) // 2]] = top
    labels[labels == 12] = -3        # negative labels are ignored
    cases.append(("random", data, labels, 14))
    # A small sky through the workshop's steps (threshold at 5 sigma, scipy.ndimage.label).
    img = sky(rng, 120, 160, sources=25)
    seg = img > 5 * 1e-3
    lab, n = ndi.label(seg)
    cases.append(("sky", img, lab.astype(np.int32), n))
    # N = 1: one label covering a block.
    one = rng.normal(3.0, 1.0, (9, 11)).astype(np.float32)
    lab1 = np.zeros((9, 11), np.int32)
    lab1[2:7, 3:10] = 1
    cases.append(("one", one, lab1, 1))
    return cases


def write_measure():
    for name, data, labels, n in measure_cases():
        h, w = data.shape
        np.ascontiguousarray(data, dtype="<f4").tofile(os.path.join(HERE, f"measure_{name}_data.f32"))
        np.ascontiguousarray(labels, dtype="<i4").tofile(os.path.join(HERE, f"measure_{name}_labels.i32"))
        index = np.arange(1, n + 1)
        with np.errstate(all="ignore"):
            import warnings

            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                sums = ndi.sum_labels(data, labels, index)
                com = ndi.center_of_mass(data, labels, index)
                peak = ndi.maximum(data, labels, index)
                pos = ndi.maximum_position(data, labels, index)
        npix = np.bincount(np.where(labels > 0, labels, 0).ravel(), minlength=n + 1)[1:n + 1]
        out = [f"{w} {h} {n}"]
        for k in range(n):
            vals = data[labels == k + 1]
            unique = int(vals.size > 0 and np.count_nonzero(vals == vals.max()) == 1)
            r, c = com[k]
            out.append(f"{k + 1} {npix[k]} {float(sums[k])!r} {float(r)!r} {float(c)!r} {float(peak[k])!r} "
                       f"{int(pos[k][0])} {int(pos[k][1])} {unique}")
        with open(os.path.join(HERE, f"measure_{name}_golden.txt"), "w") as fh:
            fh.write("\n".join(out) + "\n")


if __name__ == "__main__":
    write_sigma_clip()
    write_measure()
