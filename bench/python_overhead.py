#!/usr/bin/env python3
"""What one call through the Python package costs over the same C call (issue 28's two figures).

  python3 bench/python_overhead.py [--backend cuda|opencl|cpu] [--side 2048] [--calls 20000]

1. A tiny call: gpuws.vector_add of 16 float32 Arrays with out=, against gpuws_vector_add called straight through
   ctypes with the same handles (the C call plus ctypes' own cost, about half a microsecond, so the overhead shown
   is a slight underestimate). Calls go in batches of 100 followed by a synchronize, so the device queue never
   fills; per-call time = batch time / 100, median over batches.
2. The workshop's pipeline on a side x side float32 image (uniform noise plus a few bright squares):
   gpuws.find_sources against gpuws_find_sources through ctypes, median of repeated calls after a warm-up.
Run with the package on PYTHONPATH (python/) and GPUWS_PYTHON_LIBRARY naming the library, as ctest does, or after
`pip install .`.
"""
import argparse
import ctypes
import statistics
import time

import numpy as np

import gpuws
from gpuws import _lib
from gpuws._lib import lib


def per_call(fn, sync, calls, batch=100):
    fn()
    sync()
    times = []
    for _ in range(max(1, calls // batch)):
        t0 = time.perf_counter()
        for _ in range(batch):
            fn()
        sync()
        times.append((time.perf_counter() - t0) / batch)
    return statistics.median(times)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--backend", default=None)
    ap.add_argument("--side", type=int, default=2048)
    ap.add_argument("--calls", type=int, default=20000)
    ap.add_argument("--repeat", type=int, default=30)
    args = ap.parse_args()
    with gpuws.Context(backend=args.backend) as ctx:
        print("context: %r" % (ctx,))
        a = ctx.asarray(np.arange(16, dtype=np.float32))
        b = ctx.asarray(np.ones(16, dtype=np.float32))
        c = ctx.empty((16,), np.float32)
        s = ctx.default_stream
        f32 = gpuws._core.GPUWS_DTYPES[np.dtype(np.float32)]
        raw = per_call(lambda: lib.gpuws_vector_add(None, f32, 16, a.handle, b.handle, c.handle), ctx.synchronize,
                       args.calls)
        py = per_call(lambda: gpuws.vector_add(a, b, out=c, stream=s), ctx.synchronize, args.calls)
        assert np.array_equal(c.get(), np.arange(16, dtype=np.float32) + 1)
        print("vector_add 16 f32: C through ctypes %.2f us, Python %.2f us, overhead %.2f us"
              % (raw * 1e6, py * 1e6, (py - raw) * 1e6))

        rng = np.random.default_rng(1)
        img = rng.random((args.side, args.side), dtype=np.float32)
        for k in range(20):
            r, q = (k * 97) % (args.side - 8), (k * 193) % (args.side - 8)
            img[r:r + 6, q:q + 6] += 50.0
        clip = _lib.sigma_clip_options(3.0, 100)
        opts = _lib.sources_options(ctypes.pointer(clip), 5.0, float("nan"), 4, 0)

        def c_pipeline():
            cat = ctypes.POINTER(_lib.Catalog)()
            gpuws._core.check(lib.gpuws_find_sources(ctx.handle, img.ctypes.data, args.side, args.side,
                                                     ctypes.byref(opts), ctypes.byref(cat)))
            n = cat.contents.num_sources
            lib.gpuws_catalog_free(cat)
            return n

        def py_pipeline():
            return len(gpuws.find_sources(img, ctx=ctx))

        c_pipeline()
        py_pipeline()
        tc, tp = [], []
        for _ in range(args.repeat):  # alternate, so drifts hit both alike
            t0 = time.perf_counter()
            c_pipeline()
            tc.append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            n = py_pipeline()
            tp.append(time.perf_counter() - t0)
        mc, mp = statistics.median(tc), statistics.median(tp)
        print("find_sources %dx%d (%d sources): C through ctypes %.3f ms, Python %.3f ms, ratio %.3f"
              % (args.side, args.side, n, mc * 1e3, mp * 1e3, mp / mc))


if __name__ == "__main__":
    main()
