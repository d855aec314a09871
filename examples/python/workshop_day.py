#!/usr/bin/env python3
"""The GPU workshop's day with gpuws, on whatever backend is present (GPUWS_BACKEND picks one), each answer checked
against NumPy/SciPy: convolution, source finding, primes, Monte Carlo pi, matrix multiply.

    python3 examples/python/workshop_day.py            # the best device: CUDA, else OpenCL, else the CPU
    GPUWS_BACKEND=cpu python3 examples/python/workshop_day.py --small

Exits 1 if an answer differs from the reference.
"""

import argparse
import math
import sys
import time

import numpy as np

import gpuws

try:
    import scipy.ndimage as ndi
    import scipy.signal as sig
except ImportError:  # the checks that need SciPy are skipped, said so
    ndi = sig = None

failures = []


def check(what, ok, detail=""):
    print("  %-44s %s %s" % (what, "ok" if ok else "DIFFERS", detail))
    if not ok:
        failures.append(what)


def timed(f):
    t = time.perf_counter()
    r = f()
    return r, (time.perf_counter() - t) * 1e3


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--small", action="store_true", help="smaller sizes (a quick check, as the ctest runs it)")
    args = ap.parse_args()
    n = 512 if args.small else 2048

    with gpuws.Context() as ctx:
        print("gpuws on %s: %s" % (ctx.backend, ctx.device.name))

        print("1. convolution: %d² deltas ⊛ 15×15 Gaussian (scipy.signal.convolve2d, mode full)" % n)
        deltas = np.zeros((n, n), np.float32)
        deltas[8::16, 8::16] = 1
        x, y = np.meshgrid(np.linspace(-2, 2, 15), np.linspace(-2, 2, 15))
        gauss = np.exp(-(x ** 2 + y ** 2) / 2).astype(np.float32)
        img = ctx.asarray(deltas)  # keep the data on the device between calls
        out, ms = timed(lambda: gpuws.convolve2d(img, gauss).get())
        print("  %d×%d in %.1f ms (with the download)" % (out.shape + (ms,)))
        if sig is not None:
            # SciPy takes seconds on the whole image: output pixels (r, c) < 256 read only the 256² corner
            ref = sig.convolve2d(deltas[:256, :256], gauss)
            check("equals scipy.signal.convolve2d (a corner)", np.allclose(out[:256, :256], ref[:256, :256],
                                                                       atol=1e-6))
        one_d = gpuws.convolve1d(deltas[:64].ravel(), gauss.diagonal().copy())
        check("1-D equals np.convolve", np.allclose(one_d, np.convolve(deltas[:64].ravel(), gauss.diagonal()),
                                                    atol=1e-6))

        print("2. source finding: κ-σ clipping, threshold, label, measure")
        rng = np.random.default_rng(1)
        sky = rng.normal(0, 1, (n // 2, n // 2)).astype(np.float32)
        for r, c in rng.integers(4, n // 2 - 4, (40, 2)):
            sky[r - 2:r + 3, c - 2:c + 3] += gauss[5:10, 5:10] * 30
        cat = gpuws.find_sources(sky, return_labels=True)
        print("  %d sources above %.3f (clipped std %.4f, %d passes) in %.1f ms of device time"
              % (len(cat), cat.threshold, cat.clip.std, cat.clip.iterations, cat.timings_ms["total"]))
        if ndi is not None:
            labels, nlab = ndi.label(sky > cat.threshold)
            flux = ndi.sum_labels(sky.astype(np.float64), labels, np.arange(1, nlab + 1))
            check("labels equal scipy.ndimage.label", nlab == len(cat) and (labels == cat.labels).all())
            check("fluxes equal scipy.ndimage.sum_labels", np.allclose(cat.sources["flux"], flux, rtol=1e-9))

        print("3. primes below 100 000 (the workshop's check_prime_gpu)")
        p, ms = timed(lambda: gpuws.primes(100000))
        sieve = np.ones(100000, bool)
        sieve[:2] = False
        for i in range(2, 317):
            if sieve[i]:
                sieve[i * i::i] = False
        check("%d primes in %.1f ms, equal to a NumPy sieve" % (np.count_nonzero(p), ms),
              (p == np.where(sieve, np.arange(100000), 0)).all())

        print("4. Monte Carlo π")
        samples = 10 ** 7 if not args.small else 10 ** 6
        (pi, hits), ms = timed(lambda: gpuws.monte_carlo_pi(samples, seed=2024, return_hits=True))
        check("π ≈ %.6f from %d samples in %.1f ms" % (pi, samples, ms),
              abs(pi - math.pi) < 4 / math.sqrt(samples) * 3 and pi == 4 * hits / samples)

        print("5. matrix multiply")
        m = 256 if args.small else 1024
        a = rng.random((m, m)).astype(np.float32)
        b = rng.random((m, m)).astype(np.float32)
        da, db = ctx.asarray(a), ctx.asarray(b)
        c, ms = timed(lambda: gpuws.matmul(da, db).get())
        check("%d² @ %d² in %.1f ms equals NumPy's" % (m, m, ms),
              np.allclose(c, a.astype(np.float64) @ b, rtol=m * 2 ** -23))

    if failures:
        print("FAILED: %s" % ", ".join(failures))
        return 1
    print("every answer equals NumPy/SciPy's")
    return 0


if __name__ == "__main__":
    sys.exit(main())
