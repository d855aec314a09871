#!/usr/bin/env python3
"""Golden catalogues for tests/test_extract.c: SEP's sep.extract on a small crowded sky with an rms map, where SEP's
versions differ (include/gpuws/algorithms/extract.h, GPUWS_SEP_1_4 and GPUWS_SEP_1_2).

    pip install numpy "sep>=1.3.3" && python3 tests/data/make_extract_golden.py   (writes extract_golden_sep1.4.txt)
    pip install numpy "sep==1.2.1" && python3 tests/data/make_extract_golden.py   (writes extract_golden_sep1.2.txt)
    (Debian's python3-sep is 1.2.1.) Each run also writes extract_sky.i16, the same every time.

extract_sky.i16     the image: 48 x 48 little-endian int16, row-major (width = columns), background already
                    subtracted (level 0, Gaussian noise σ = 5, overlapping round and elliptical Gaussian sources),
                    rounded to integers so that it is small and SEP sees exactly the float32 values the test does.
The rms map is not stored: rms = 4 + column / 64 + row / 128, exact in float32.
extract_golden_sep<mode>.txt, for each case:
    case NAME THRESH GAIN CLEAN NOBJ
    then NOBJ lines, SEP's order, one object a line: thresh npix tnpix xmin xmax ymin ymax x y x2 y2 xy errx2 erry2
    errxy a b theta cxx cyy cxy cflux flux cpeak peak xcpeak ycpeak xpeak ypeak flag
    (the shortest text that reads back exactly: as a float32 for the columns SEP holds in float, thresh a b theta
    cxx cyy cxy cflux flux cpeak peak, as a float64 for the others). Every case: sep.extract(data, THRESH,
    err=rms, gain=GAIN, clean=CLEAN) and SEP's other defaults (3x3 matched filter, minarea 5, 32 deblending
    thresholds, deblend_cont 0.005, clean_param 1).
tests/test_extract.c reads the cases from the files; a run rewrites identical files (fixed seed).
"""
import os
import re

import numpy as np
import sep

HERE = os.path.dirname(os.path.abspath(__file__))
W, H = 48, 48
CASES = [("defaults", 1.5, 0.0, True), ("gain_2", 1.5, 2.0, True)]
COLS = ("thresh npix tnpix xmin xmax ymin ymax x y x2 y2 xy errx2 erry2 errxy a b theta cxx cyy cxy cflux flux "
        "cpeak peak xcpeak ycpeak xpeak ypeak flag").split()
F32 = set("thresh a b theta cxx cyy cxy cflux flux cpeak peak".split())  # float in SEP's sep_catalog


def sky():
    rng = np.random.default_rng(20261128)
    yy, xx = np.mgrid[0:H, 0:W]
    img = rng.normal(0.0, 5.0, (H, W))
    for _ in range(17):
        r, c = rng.uniform(-2, H + 2), rng.uniform(-2, W + 2)
        amp = 10.0 * np.exp(rng.uniform(0, np.log(60.0)))
        sa = rng.uniform(1.0, 3.5)
        sb = sa * rng.uniform(0.3, 1.0)
        t = rng.uniform(0, np.pi)
        dy, dx = yy - r, xx - c
        u = dx * np.cos(t) + dy * np.sin(t)
        v = -dx * np.sin(t) + dy * np.cos(t)
        img += amp * np.exp(-0.5 * ((u / sa) ** 2 + (v / sb) ** 2))
    return np.round(img).astype("<i2")


def main():
    version = tuple(int(p) for p in re.findall(r"\d+", sep.__version__)[:3])
    if (1, 3) <= version < (1, 3, 3):
        raise SystemExit(f"SEP {sep.__version__} sums an object's threshold in float: use 1.2.x or >= 1.3.3")
    mode = "1.2" if version < (1, 3) else "1.4"
    img = sky()
    img.tofile(os.path.join(HERE, "extract_sky.i16"))
    data = img.astype(np.float32)
    yy, xx = np.mgrid[0:H, 0:W]
    rms = (4.0 + xx / 64.0 + yy / 128.0).astype(np.float32)
    lines = []
    for name, thresh, gain, clean in CASES:
        objs = sep.extract(data, thresh, err=rms, gain=gain, clean=clean)
        lines.append(f"case {name} {thresh!r} {gain!r} {int(clean)} {len(objs)}")
        for o in objs:
            lines.append(" ".join(str(np.float32(o[c])) if c in F32 else repr(o[c].item()) for c in COLS))
    path = os.path.join(HERE, f"extract_golden_sep{mode}.txt")
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")
    print(f"SEP {sep.__version__}: {path}: " + ", ".join(f"{l.split()[-1]} objects" for l in lines if l[:4] == "case"))


if __name__ == "__main__":
    main()
