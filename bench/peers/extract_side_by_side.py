#!/usr/bin/env python3
"""gpuws sources, SEP and SExtractor side by side on the same FITS images: whole commands, wall clock.

    python3 bench/peers/extract_side_by_side.py --gpuws build/tools/gpuws [--backends cuda,opencl@NVIDIA,cpu]
                                                 [--runs 3] [--warmup 1] [--sep-max-mb M] IMAGE.fits...

Each tool runs as a user runs it, from its own start to its catalogue on disk, with the settings of the table in
docs/benchmarks.md: `gpuws sources IMAGE --catalog OUT.csv` (the extraction's defaults) per backend
(`opencl@NAME`: GPUWS_OPENCL_PLATFORM=NAME); SEP from a Python process of its own (read, `sep.Background(bw=64,
bh=64, fw=3, fh=3)`, `sep.extract(data - back, 1.5, err=rms, mask=NaN)` with its defaults, a CSV written; one core),
which also reports the time of its background and extraction alone; `source-extractor` with the same settings in
SExtractor's names (one thread). A peer that is not installed is left out and said so. Prints a Markdown table:
min-max wall seconds over the runs, and the objects each found.
"""
import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time

SEXTRACTOR_SETTINGS = ["-DETECT_THRESH", "1.5", "-ANALYSIS_THRESH", "1.5", "-DETECT_MINAREA", "5",
                       "-DEBLEND_NTHRESH", "32", "-DEBLEND_MINCONT", "0.005", "-CLEAN_PARAM", "1.0",
                       "-BACK_SIZE", "64", "-BACK_FILTERSIZE", "3", "-CHECKIMAGE_TYPE", "NONE",
                       "-VERBOSE_TYPE", "QUIET", "-NTHREADS", "1"]


def read_fits_image(path):
    """The first image HDU as float32 (astropy when installed; else plain 2-D primary HDUs, BSCALE/BZERO)."""
    import numpy as np
    try:
        from astropy.io import fits
        with fits.open(path) as hdul:
            for h in hdul:
                if h.data is not None and h.data.ndim >= 2:
                    return np.asarray(h.data, dtype=np.float32).squeeze()
    except ImportError:
        pass
    with open(path, "rb") as f:
        raw = f.read()
    cards, off = {}, 0
    while True:
        card = raw[off:off + 80].decode("ascii", "replace")
        off += 80
        if card.startswith("END"):
            break
        if card[8:10] == "= ":
            cards[card[:8].strip()] = card[10:].split("/")[0].strip()
    off += -off % 2880
    bitpix, w, h = int(cards["BITPIX"]), int(cards["NAXIS1"]), int(cards["NAXIS2"])
    dtype = {8: ">u1", 16: ">i2", 32: ">i4", 64: ">i8", -32: ">f4", -64: ">f8"}[bitpix]
    data = np.frombuffer(raw, dtype, w * h, off).reshape(h, w).astype(np.float32)
    scale, zero = float(cards.get("BSCALE", 1)), float(cards.get("BZERO", 0))
    return data * np.float32(scale) + np.float32(zero) if (scale, zero) != (1.0, 0.0) else data


def sep_one(image, out):
    """The SEP side, in a process of its own: prints its background + extraction time and its objects."""
    import numpy as np
    import sep
    data = read_fits_image(image)
    mask = ~np.isfinite(data)
    t0 = time.perf_counter()
    bkg = sep.Background(data, mask=mask, bw=64, bh=64, fw=3, fh=3)
    sub, rms = data - bkg.back(), bkg.rms()
    sep.set_extract_pixstack(10**7)
    sep.set_sub_object_limit(10**5)
    objs = sep.extract(sub, 1.5, err=rms, mask=mask)
    t1 = time.perf_counter()
    np.savetxt(out, np.column_stack([objs[k] for k in ("x", "y", "flux", "a", "b", "theta")]), delimiter=",",
               header="x,y,flux,a,b,theta")
    print(f"inside {t1 - t0:.4f} objects {len(objs)} sep {sep.__version__}")


def timed(cmd, env=None):
    t0 = time.perf_counter()
    r = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    return time.perf_counter() - t0, r


def data_lines(path, comment):
    with open(path) as f:
        return sum(1 for line in f if line.strip() and not line.startswith(comment))


def span(ts):
    return f"{min(ts):.3f} s" if len(ts) == 1 or max(ts) - min(ts) < 0.0005 else f"{min(ts):.3f}–{max(ts):.3f} s"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("images", nargs="*")
    ap.add_argument("--gpuws", default="build/tools/gpuws")
    ap.add_argument("--backends", default="cuda,opencl,cpu")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--warmup", type=int, default=1, help="untimed runs of each gpuws backend first (program caches)")
    ap.add_argument("--sep-max-mb", type=float, default=float("inf"),
                    help="leave SEP out on larger files (it takes minutes on a crowded 8192^2 sky)")
    ap.add_argument("--sextractor", default=shutil.which("source-extractor") or shutil.which("sex"))
    ap.add_argument("--sextractor-share", default="/usr/share/source-extractor",
                    help="SExtractor's default.sex, default.conv and default.nnw")
    ap.add_argument("--sep-one", nargs=2, metavar=("IMAGE", "OUT"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.sep_one:
        return sep_one(*args.sep_one)
    if not args.images:
        ap.error("no images")
    backends = [b for b in args.backends.split(",") if b]
    has_sep = subprocess.run([sys.executable, "-c", "import sep, numpy"], capture_output=True).returncode == 0
    if not has_sep:
        print(f"SEP: not importable by {sys.executable}: left out", file=sys.stderr)
    if not args.sextractor:
        print("SExtractor: source-extractor not found: left out", file=sys.stderr)
    tmp = tempfile.mkdtemp(prefix="gpuws-side-")
    params = os.path.join(tmp, "sky.param")
    with open(params, "w") as f:
        f.write("NUMBER\nX_IMAGE\nY_IMAGE\nFLUX_ISO\nA_IMAGE\nB_IMAGE\nFLAGS\n")
    head = ["image"] + [f"gpuws {b}" for b in backends] + ["SEP (its background + extract)", "SExtractor",
                                                           "objects: gpuws / SEP / SExtractor"]
    print("| " + " | ".join(head) + " |")
    print("|" + " --- |" * len(head))
    for image in args.images:
        row, counts = [os.path.basename(image)], []
        for b in backends:
            env = dict(os.environ)
            name, _, platform = b.partition("@")
            env["GPUWS_BACKEND"] = name
            if platform:
                env["GPUWS_OPENCL_PLATFORM"] = platform
            out = os.path.join(tmp, "gpuws.csv")
            ts = []
            for k in range(args.warmup + args.runs):
                t, r = timed([args.gpuws, "sources", image, "--catalog", out], env)
                if r.returncode:
                    sys.exit(f"gpuws sources on {b} failed: {r.stderr.strip()}")
                if k >= args.warmup:
                    ts.append(t)
            row.append(span(ts))
            counts.append(str(data_lines(out, "#") - 1))  # less the header row
        counts = [counts[0] if len(set(counts)) == 1 else "/".join(counts)]
        if has_sep and os.path.getsize(image) <= args.sep_max_mb * 1e6:
            out = os.path.join(tmp, "sep.csv")
            ts, inside = [], []
            for _ in range(args.runs):
                t, r = timed([sys.executable, os.path.abspath(__file__), "--sep-one", image, out])
                if r.returncode:
                    sys.exit(f"SEP failed: {r.stderr.strip()}")
                ts.append(t)
                inside.append(float(r.stdout.split()[1]))
            row.append(f"{span(ts)} ({span(inside)})")
            counts.append(r.stdout.split()[3])
        else:
            row.append("left out")
            counts.append("–")
        if args.sextractor:
            out = os.path.join(tmp, "sex.cat")
            share = args.sextractor_share
            cmd = [args.sextractor, image, "-c", os.path.join(share, "default.sex"), "-PARAMETERS_NAME", params,
                   "-FILTER_NAME", os.path.join(share, "default.conv"), "-STARNNW_NAME",
                   os.path.join(share, "default.nnw"), "-CATALOG_NAME", out, "-CATALOG_TYPE", "ASCII_HEAD"]
            ts = []
            for _ in range(args.runs):
                t, r = timed(cmd + SEXTRACTOR_SETTINGS)
                if r.returncode:
                    sys.exit(f"source-extractor failed: {r.stderr.strip()}")
                ts.append(t)
            row.append(span(ts))
            counts.append(str(data_lines(out, "#")))
        else:
            row.append("left out")
            counts.append("–")
        row.append(" / ".join(counts))
        print("| " + " | ".join(row) + " |", flush=True)
    shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
