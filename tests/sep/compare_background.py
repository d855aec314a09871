#!/usr/bin/env python3
"""gpuws_background against SEP (sep.Background), docs/algorithms/background.md.

For each sky below (float32, and one float64 that SEP rounds to float): SEP's back(), rms(), globalback and
globalrms, and tests/sep/background_sep's on every backend (cpu, opencl, cuda); each must agree with SEP within 1e-4
relative (|gpuws - sep| <= 1e-4 |sep|, per pixel). Prints the largest relative errors per case and backend. Exit 0
when all agree, 1 otherwise, 77 (skip) when SEP or NumPy is missing and GPUWS_REQUIRE is not set, or when no backend
runs here.
"""
import argparse
import os
import sys

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
from sep_harness import import_sep, run_backend  # noqa: E402

np, sep = import_sep("background_sep")

RTOL = 1e-4


def sky(w, h, seed, nan_cols=3, nan_rows=0):
    """Level 100 with a gradient, Gaussian noise σ = 5, Gaussian sources, NaN columns (and rows) at the edges."""
    rng = np.random.default_rng(seed)
    yy, xx = np.mgrid[0:h, 0:w]
    img = 100.0 + 0.01 * xx + 0.02 * yy + rng.normal(0.0, 5.0, (h, w))
    for _ in range(w * h // 2000 + 1):
        r, c, amp = rng.integers(0, h), rng.integers(0, w), 20.0 + 500.0 * rng.random()
        img += amp * np.exp(-((yy - r) ** 2 + (xx - c) ** 2) / (2 * 2.0 ** 2))
    img = img.astype(np.float32)
    img[:, :nan_cols] = np.nan
    if nan_rows:
        img[:nan_rows, :] = np.nan
    return img


def cases():
    out = []
    img = sky(1000, 700, 1, nan_cols=3, nan_rows=5)
    out.append(("sky 1000x700, defaults, NaN borders", img, None, dict(bw=64, bh=64, fw=3, fh=3, fthresh=0.0)))
    mask = np.zeros(img.shape, np.uint8)
    mask[200:330, 400:520] = 1  # covers whole meshes: they are filled from their neighbours
    mask[np.random.default_rng(2).random(img.shape) < 0.05] = 1
    out.append(("sky 1000x700, mask, mesh 50x40, filter 5x3", img, mask, dict(bw=50, bh=40, fw=5, fh=3, fthresh=0.0)))
    img = sky(517, 389, 3, nan_cols=0)
    img[100:220, 150:300] = np.nan  # a blanked block: bad meshes
    out.append(("sky 517x389, NaN block, mesh 32x48, filter 3x1, fthresh 2", img, None,
                dict(bw=32, bh=48, fw=3, fh=1, fthresh=2.0)))
    out.append(("sky 517x389, mesh 33x17 (odd), filter 4x2 (even)", sky(517, 389, 4), None,
                dict(bw=33, bh=17, fw=4, fh=2, fthresh=0.0)))
    img = sky(800, 600, 7)
    yy, xx = np.mgrid[0:600, 0:800]
    for r, c, amp, s in ((150, 200, 80.0, 40.0), (420, 560, 40.0, 25.0), (300, 700, 200.0, 10.0)):
        img += (amp * np.exp(-((yy - r) ** 2 + (xx - c) ** 2) / (2 * s * s))).astype(np.float32)
    out.append(("sky 800x600, extended sources (skewed meshes), mesh 32, fthresh 0.5", img, None,
                dict(bw=32, bh=32, fw=3, fh=3, fthresh=0.5)))
    img = sky(517, 389, 8).astype(np.float64)
    img += 1e-6 * (np.arange(img.size) % 7).reshape(img.shape)  # below float resolution: SEP rounds to float
    out.append(("sky 517x389 float64, mesh 40x30", img, None, dict(bw=40, bh=30, fw=3, fh=3, fthresh=0.0)))
    out.append(("sky 300x60, one row of meshes", sky(300, 60, 5), None, dict(bw=64, bh=60, fw=3, fh=3, fthresh=0.0)))
    out.append(("sky 60x300, one column of meshes", sky(60, 300, 6), None, dict(bw=60, bh=64, fw=3, fh=3, fthresh=0.0)))
    out.append(("constant 100x90", np.full((90, 100), 7.25, np.float32), None,
                dict(bw=32, bh=32, fw=3, fh=3, fthresh=0.0)))
    try:
        from skimage import data, color  # optional: the Hubble Deep Field of python3-skimage
        hdf = color.rgb2gray(data.hubble_deep_field()).astype(np.float32)
        out.append(("Hubble Deep Field (scikit-image) %dx%d" % (hdf.shape[1], hdf.shape[0]), hdf, None,
                    dict(bw=64, bh=64, fw=3, fh=3, fthresh=0.0)))
    except Exception as e:  # noqa: BLE001 - not installed, or its data not shipped
        print(f"(Hubble Deep Field left out: {e})")
    return out


def rel(a, b):
    d = np.abs(a.astype(np.float64) - b.astype(np.float64))
    scale = np.abs(b.astype(np.float64))
    with np.errstate(divide="ignore", invalid="ignore"):
        r = np.where(d == 0, 0.0, d / scale)
    return float(np.max(r))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tool", required=True)
    ap.add_argument("--workdir", required=True)
    ap.add_argument("--backends", default="cpu,opencl,cuda")
    args = ap.parse_args()
    os.makedirs(args.workdir, exist_ok=True)
    ok, ran = True, set()
    for k, (name, img, mask, p) in enumerate(cases()):
        img = np.ascontiguousarray(img, dtype=np.float64 if img.dtype == np.float64 else np.float32)
        h, w = img.shape
        bkg = sep.Background(img, mask=None if mask is None else mask.astype(bool), **p)
        want_back, want_rms = bkg.back(), bkg.rms()
        ipath = os.path.join(args.workdir, f"case{k}." + ("f64" if img.dtype == np.float64 else "f32"))
        img.tofile(ipath)
        mpath = "-"
        if mask is not None:
            mpath = os.path.join(args.workdir, f"case{k}.u8")
            mask.astype(np.uint8).tofile(mpath)
        for be in args.backends.split(","):
            out = os.path.join(args.workdir, f"case{k}.{be}")
            cmd = [args.tool, be, ipath, str(w), str(h), str(p["bw"]), str(p["bh"]), str(p["fw"]), str(p["fh"]),
                   repr(p["fthresh"]), mpath, out]
            ran_ok, res = run_backend(cmd, be, name)
            if not ran_ok:
                if res:
                    print(res)
                    ok = False
                continue
            ran.add(be)
            gb, gr = (float(np.float32(v)) for v in res.stdout.split())  # %.9g: the float exactly
            back = np.fromfile(out + ".back.f32", np.float32).reshape(h, w)
            rms = np.fromfile(out + ".rms.f32", np.float32).reshape(h, w)
            eb, er = rel(back, want_back), rel(rms, want_rms)
            egb = abs(gb - bkg.globalback) / abs(bkg.globalback) if bkg.globalback else abs(gb)
            egr = abs(gr - bkg.globalrms) / abs(bkg.globalrms) if bkg.globalrms else abs(gr)
            good = max(eb, er, egb, egr) <= RTOL
            ok &= good
            print(f"{'ok  ' if good else 'FAIL'} {name} [{be}]: max rel err back {eb:.2e} rms {er:.2e}, "
                  f"globalback {gb:.7g} (sep {bkg.globalback:.7g}, {egb:.1e}), "
                  f"globalrms {gr:.7g} (sep {bkg.globalrms:.7g}, {egr:.1e})")
    if not ran:
        print("background_sep: skipped: no backend ran")
        return 77
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
