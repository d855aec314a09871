#!/usr/bin/env python3
"""gpuws aperture photometry against SEP, docs/algorithms/aperture.md.

For each case below: SEP's sum_circle / sum_ellipse (exact overlap, subpix=0, and SEP's default sampling,
subpix=5), kron_radius, the flux_auto recipe of SEP's documentation, and sums on data - bkg with sep.Background's
maps (gpuws: the map in the options' back), then tests/sep/aperture_sep on every backend (cpu, opencl, cuda).
Sums and their errors must agree within 1e-6 relative (|gpuws - sep| <= 1e-6 |sep|; a zero SEP value must be
matched within 1e-9 absolute), Kron radii within 1e-12 relative (the same pixels, summed in another order), flags
equal (gpuws sets ALLMASKED on sums too, exactly where SEP's sum is NaN for want of unmasked pixels; it is left out
of the comparison and checked on its own). Prints the largest relative difference per case and backend. Exit 0
when all agree, 1 otherwise, 77 (skip) when SEP or NumPy is missing and GPUWS_REQUIRE is not set, or when no
backend runs here.
"""
import argparse
import os
import sys

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
from sep_harness import import_sep, run_backend  # noqa: E402

np, sep = import_sep("aperture_sep")

RTOL_SUM = 1e-6
ATOL_ZERO = 1e-9
RTOL_KRON = 1e-12
ALLMASKED = 0x40


def sky(w, h, seed):
    """Level 100, Gaussian noise σ = 5, Gaussian and elliptical sources."""
    rng = np.random.default_rng(seed)
    yy, xx = np.mgrid[0:h, 0:w]
    img = 100.0 + rng.normal(0.0, 5.0, (h, w))
    for _ in range(w * h // 2000 + 1):
        r, c, amp = rng.uniform(0, h), rng.uniform(0, w), 50.0 + 2000.0 * rng.random()
        sa, sb, th = 1.0 + 3.0 * rng.random(), 0.7 + 1.5 * rng.random(), rng.uniform(-1.5, 1.5)
        u = (xx - c) * np.cos(th) + (yy - r) * np.sin(th)
        v = -(xx - c) * np.sin(th) + (yy - r) * np.cos(th)
        img += amp * np.exp(-0.5 * ((u / sa) ** 2 + (v / sb) ** 2))
    return img.astype(np.float32)


def positions(rng, w, h, n, margin=15.0):
    return rng.uniform(-margin, w + margin, n), rng.uniform(-margin, h + margin, n)


def ellipses(rng, n):
    b = rng.uniform(0.5, 4.0, n)
    a = b * rng.uniform(1.0, 3.0, n)
    theta = rng.uniform(-np.pi / 2, np.pi / 2, n)
    return a, b, theta


def cases():
    """(name, image, kind, columns, rms map or None, err, gain, mask or None, subpix[, background map]); with a
    background map, SEP is given image - map (f32) and gpuws the image with the map in its options."""
    out = []
    rng = np.random.default_rng(26)
    img = sky(600, 400, 1)
    h, w = img.shape
    rms = (4.0 + rng.random(img.shape)).astype(np.float32)
    mask = (rng.random(img.shape) < 0.02).astype(np.uint8)
    mask[100:140, 200:260] = 1  # whole apertures masked: SEP's sum is NaN there
    x, y = positions(rng, w, h, 3000)
    r = rng.uniform(0.0, 20.0, 3000)
    r[:20] = 0.0
    r[20:60] = rng.uniform(0.0, 1.0, 40)
    x[60:100], y[60:100] = np.round(x[60:100]), np.round(y[60:100])  # centres on pixel centres
    x[100:140], y[100:140] = np.round(x[100:140]) + 0.5, np.round(y[100:140]) + 0.5  # on pixel corners
    x[140:150], y[140:150] = rng.uniform(205, 255, 10), rng.uniform(105, 135, 10)  # inside the masked block
    r[140:150] = rng.uniform(0.5, 3.0, 10)
    x[150:160], y[150:160], r[150:160] = w / 2, h / 2, rng.uniform(100, 180, 10)  # large, past the edges
    circ = np.column_stack([x, y, r])
    # radii and centres on the grid: pixel edges tangent to the circle, corners on it
    xg = np.round(rng.uniform(20, w - 20, 400)) + rng.choice([0.0, 0.5], 400)
    yg = np.round(rng.uniform(20, h - 20, 400)) + rng.choice([0.0, 0.5], 400)
    rg = rng.integers(1, 12, 400) * rng.choice([1.0, 0.5], 400)
    grid = np.column_stack([xg, yg, rg])
    out.append(("circles on the grid, integer and half radii", img, "circle", grid, None, 1.0, 0.0, mask, 0))
    # Not ellipses with axes along the grid and centres on it: there SEP 1.2.1's exact overlap is wrong for some
    # pixels (docs/algorithms/aperture.md: an ellipse a 3, b 2, r 0.5 at (6, 5.5) gives pixel (7, 5) 0.4978 where
    # its mirror image (5, 5) gets 0.6875 and 100 x 100 samples 0.6877) or NaN (theta ±pi/2); test_aperture.c checks
    # gpuws there by symmetry and against closed-form areas.
    out.append(("circles, err 5, gain 2", img, "circle", circ, None, 5.0, 2.0, None, 0))
    out.append(("circles, rms map, mask", img, "circle", circ, rms, 0.0, 0.0, mask, 0))
    out.append(("circles, subpix 5 (SEP's default)", img, "circle", circ, rms, 0.0, 1.5, mask, 5))
    xe, ye = positions(rng, w, h, 3000)
    a, b, th = ellipses(rng, 3000)
    re = rng.uniform(0.2, 5.0, 3000)
    re[:10] = 0.0
    th[10:40] = rng.choice([-np.pi / 2, 0.0, np.pi / 2], 30)
    a[40:60] = b[40:60]  # circles as ellipses
    xe[60:100], ye[60:100] = np.round(xe[60:100]), np.round(ye[60:100])
    xe[100:110], ye[100:110] = rng.uniform(205, 255, 10), rng.uniform(105, 135, 10)
    re[100:110] = rng.uniform(0.2, 0.8, 10)
    ell = np.column_stack([xe, ye, a, b, th, re])
    out.append(("ellipses, err 3", img, "ellipse", ell, None, 3.0, 0.0, None, 0))
    out.append(("ellipses, rms map, mask, gain 4", img, "ellipse", ell, rms, 0.0, 4.0, mask, 0))
    out.append(("ellipses, subpix 5", img, "ellipse", ell, None, 2.0, 0.0, mask, 5))
    out.append(("ellipses, subpix 1", img, "ellipse", ell, None, 2.0, 0.0, None, 1))
    # Kron radii and flux_auto at the sources' peaks (objects as SEP finds them), and anywhere
    objs = sep.extract(img - 100.0, 15.0)
    xo, yo = objs["x"], objs["y"]
    ao, bo = objs["a"], objs["b"]
    tho = np.clip(objs["theta"], -np.pi / 2, np.pi / 2)
    kr = np.column_stack([xo, yo, ao, bo, tho, np.full(len(xo), 6.0)])
    out.append((f"kron_radius r 6 at {len(xo)} extracted objects", img - 100.0, "kron", kr, None, 0.0, 0.0, None, 0))
    out.append(("kron_radius r 6, mask", img - 100.0, "kron", kr, None, 0.0, 0.0, mask, 0))
    xk, yk = positions(rng, w, h, 1000, margin=5.0)
    ak, bk, thk = ellipses(rng, 1000)
    out.append(("kron_radius anywhere (sky-subtracted noise: NONPOSITIVE)", img - 100.0, "kron",
                np.column_stack([xk, yk, ak, bk, thk, rng.uniform(1.0, 8.0, 1000)]), None, 0.0, 0.0, mask, 0))
    au = np.column_stack([xo, yo, ao, bo, tho])
    out.append((f"flux_auto recipe (subpix 1) at {len(xo)} objects", img - 100.0, "auto", au, None, 5.0, 0.0, None, 1))
    out.append(("flux_auto recipe, exact overlap, rms map", img - 100.0, "auto", au, rms, 0.0, 0.0, None, 0))
    # SExtractor's PHOT_APERTURES as gpuws sources measures them: sep.sum_circle(data - bkg, ..., err=rms, subpix=0)
    # with the Background's maps, at the extracted objects and anywhere
    bkg = sep.Background(img, bw=64, bh=64, fw=3, fh=3)
    bmap, brms = bkg.back(), bkg.rms()
    xb = np.concatenate([xo, circ[:500, 0]])
    yb = np.concatenate([yo, circ[:500, 1]])
    for d in (3.0, 6.0, 13.5):
        cols_b = np.column_stack([xb, yb, np.full(len(xb), d / 2)])
        out.append((f"circles of diameter {d:g} on image - background, its rms", img, "circle", cols_b, brms, 0.0,
                    0.0, None, 0, bmap))
    out.append(("ellipses on image - background, rms map, mask", img, "ellipse", ell, brms, 0.0, 0.0, mask, 0, bmap))
    nan_img = img.copy()
    nan_img[200, 300] = np.nan
    out.append(("circles over a NaN pixel", nan_img, "circle",
                np.column_stack([[300.0, 301.7, 310.0], [200.0, 199.2, 200.0], [3.0, 2.5, 4.0]]),
                None, 1.0, 0.0, None, 0))
    return out


def sep_run(img, kind, cols, rms, err, gain, mask, subpix, back=None):
    """SEP's results as columns kronrad, sum, sumerr, flag (NaN where SEP gives nothing)."""
    n = len(cols)
    kw = dict(mask=None if mask is None else mask.astype(bool), subpix=subpix)
    if rms is not None:
        kw["err"] = rms
    elif err:
        kw["err"] = err
    if gain:
        kw["gain"] = gain
    kr = np.zeros(n)
    if back is not None:
        img = img - back  # both f32: the array sep.sum_circle(data - bkg, ...) is given
    if kind == "circle":
        s, e, f = sep.sum_circle(img, cols[:, 0], cols[:, 1], cols[:, 2], **kw)
    elif kind == "ellipse":
        s, e, f = sep.sum_ellipse(img, cols[:, 0], cols[:, 1], cols[:, 2], cols[:, 3], cols[:, 4], cols[:, 5], **kw)
    elif kind == "kron":
        kr, f = sep.kron_radius(img, cols[:, 0], cols[:, 1], cols[:, 2], cols[:, 3], cols[:, 4], cols[:, 5],
                                mask=kw["mask"])
        s = e = np.zeros(n)
    else:  # SEP's documented recipe
        x, y, a, b, th = (cols[:, k] for k in range(5))
        kr, krflag = sep.kron_radius(img, x, y, a, b, th, 6.0, mask=kw["mask"])
        s, e, f = sep.sum_ellipse(img, x, y, a, b, th, 2.5 * kr, **kw)
        f = f | krflag
        use_circle = kr * np.sqrt(a * b) < 1.75
        cs, ce, cf = sep.sum_circle(img, x[use_circle], y[use_circle], 1.75, **kw)
        s[use_circle], e[use_circle], f[use_circle] = cs, ce, cf
    return np.asarray(kr, float), np.asarray(s, float), np.asarray(e, float), np.asarray(f, int)


def rel(got, want, atol):
    """Largest |got - want| / |want| (|got - want| / atol where want is 0); NaN must meet NaN."""
    nan = np.isnan(want) | np.isnan(got)
    if np.any(np.isnan(want) != np.isnan(got)):
        return np.inf
    g, w = got[~nan], want[~nan]
    d = np.abs(g - w)
    with np.errstate(divide="ignore", invalid="ignore"):
        r = np.where(w == 0, d / atol * RTOL_SUM, d / np.abs(w))
    return float(np.max(r)) if r.size else 0.0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tool", required=True)
    ap.add_argument("--workdir", required=True)
    ap.add_argument("--backends", default="cpu,opencl,cuda")
    args = ap.parse_args()
    os.makedirs(args.workdir, exist_ok=True)
    ok, ran, worst = True, set(), 0.0
    for k, (name, img, kind, cols, rms, err, gain, mask, subpix, *back) in enumerate(cases()):
        img = np.ascontiguousarray(img, dtype=np.float32)
        back = np.ascontiguousarray(back[0], dtype=np.float32) if back else None
        h, w = img.shape
        want_kr, want_s, want_e, want_f = sep_run(img, kind, cols, rms, err, gain, mask, subpix, back)
        ipath = os.path.join(args.workdir, f"case{k}.f32")
        img.tofile(ipath)
        apath = os.path.join(args.workdir, f"case{k}.ap.f64")
        np.ascontiguousarray(cols, dtype=np.float64).tofile(apath)
        rpath = mpath = "-"
        if rms is not None:
            rpath = os.path.join(args.workdir, f"case{k}.rms.f32")
            np.ascontiguousarray(rms, dtype=np.float32).tofile(rpath)
        if mask is not None:
            mpath = os.path.join(args.workdir, f"case{k}.u8")
            mask.astype(np.uint8).tofile(mpath)
        for be in args.backends.split(","):
            out = os.path.join(args.workdir, f"case{k}.{be}.f64")
            cmd = [args.tool, be, ipath, str(w), str(h), kind, apath, str(len(cols)), rpath, repr(float(err)),
                   repr(float(gain)), mpath, str(subpix), out]
            if back is not None:
                bpath = os.path.join(args.workdir, f"case{k}.back.f32")
                back.tofile(bpath)
                cmd.append(bpath)
            ran_ok, res = run_backend(cmd, be, name)
            if not ran_ok:
                if res:
                    print(res)
                    ok = False
                continue
            ran.add(be)
            got = np.fromfile(out, np.float64).reshape(-1, 5)
            kr, s, e, f = got[:, 0], got[:, 1], got[:, 2], got[:, 4].astype(int)
            problems = []
            if kind == "kron":
                ek = rel(kr, want_kr, ATOL_ZERO)
                good_vals = ek * RTOL_SUM / RTOL_SUM <= RTOL_KRON
                es = ee = 0.0
                measure = ek
            else:
                es, ee = rel(s, want_s, ATOL_ZERO), rel(e, want_e, ATOL_ZERO)
                ek = rel(kr, want_kr, ATOL_ZERO) if kind == "auto" else 0.0
                good_vals = es <= RTOL_SUM and ee <= RTOL_SUM and ek <= RTOL_KRON
                measure = max(es, ee)
                worst = max(worst, measure)
            if not good_vals:
                problems.append("values")
            fsep = want_f.copy()
            fg = f.copy()
            if kind != "kron":
                allm = (fg & ALLMASKED) != 0
                if kind in ("circle", "ellipse") and mask is not None:
                    nan_by_mask = np.isnan(want_s) & ((want_f & 0x20) != 0)
                    if np.any(allm != nan_by_mask):
                        problems.append(f"ALLMASKED on {int(np.sum(allm != nan_by_mask))} apertures")
                fg = np.where(allm & ((fsep & ALLMASKED) == 0), fg & ~ALLMASKED, fg)
            bad_flags = int(np.sum(fg != fsep))
            if bad_flags:
                i = int(np.argmax(fg != fsep))
                problems.append(f"{bad_flags} flags differ (first: aperture {i}, {fg[i]} vs sep {fsep[i]})")
            good = not problems
            ok &= good
            nflag = int(np.sum(fsep != 0))
            print(f"{'ok  ' if good else 'FAIL'} {name} [{be}]: {len(cols)} apertures, max rel diff sum {es:.1e} "
                  f"sumerr {ee:.1e} kron {ek:.1e}; {nflag} flagged{'; ' + ', '.join(problems) if problems else ''}")
    if not ran:
        print("aperture_sep: skipped: no backend ran")
        return 77
    print(f"worst relative difference of a sum or its error against SEP: {worst:.2e}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
