#!/usr/bin/env python3
"""The workshop's computations through the libraries the participants used, for `gpuws bench --compare`.

CuPy on the GPU (when it imports and sees a device) and NumPy/SciPy on the CPU run the same workloads as
`gpuws bench`, under the same names (algorithm / variant) and size classes, and the results are written as the
same JSON rows (backend "cupy", "numpy" or "scipy"):

    python3 bench/peers/run_peers.py --out peers.json            # everything available
    python3 bench/peers/run_peers.py --quick --only reduce,ufunc  # small sizes, two algorithms
    gpuws bench --json bench.json --compare peers.json            # gpuws / peer per workload

Timing: one warm-up run, then `--repeat` runs (`--cpu-repeat` for NumPy/SciPy), median and minimum; CuPy is
timed with CUDA events around each run (end-to-end rows include the copies, which synchronise anyway), NumPy with
time.perf_counter. A workload that raises is recorded as a FAILED row with the error and the run goes on.
TF32 is kept off so CuPy's float32 matmul is a float32 matmul (CUPY_TF32=0, set before CuPy is imported).
The inputs follow docs/benchmarks.md ("Peers"): the same recipes as the gpuws workloads, not the same pixels.
"""

import argparse
import json
import math
import os
import platform
import socket
import statistics
import sys
import time
import traceback

os.environ.setdefault("CUPY_TF32", "0")

import numpy as np  # noqa: E402  (after the environment is set for CuPy)

try:
    import scipy
    import scipy.ndimage
    import scipy.signal
except ImportError:  # NumPy-only rows still work
    scipy = None

SCHEMA = "gpuws-bench/1"
SIZES = ("small", "default", "large")

# ---- the execution contexts: the same workload code runs on NumPy/SciPy or on CuPy/cupyx -----------------------


class Ctx:
    """xp: the array module; signal/ndimage: scipy's or cupyx's; to_device/to_host: copies (identity on CPU)."""

    def __init__(self, backend, xp, signal, ndimage, device, gpu):
        self.backend, self.xp, self.signal, self.ndimage, self.device, self.gpu = backend, xp, signal, ndimage, device, gpu

    def to_device(self, a):
        return self.xp.asarray(a) if self.gpu else np.asarray(a)  # no transfer exists on the CPU

    def to_host(self, a):
        return self.xp.asnumpy(a) if self.gpu else a

    def sync(self):
        if self.gpu:
            self.xp.cuda.Device().synchronize()


def cpu_name():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def make_contexts(want_cpu, want_gpu):
    ctxs, notes = [], []
    if want_gpu:
        try:
            import cupy
            import cupyx.scipy.ndimage
            import cupyx.scipy.signal

            n = cupy.cuda.runtime.getDeviceCount()
            if n < 1:
                raise RuntimeError("CuPy sees no CUDA device")
            props = cupy.cuda.runtime.getDeviceProperties(0)
            name = props["name"].decode() if isinstance(props["name"], bytes) else str(props["name"])
            ctxs.append(Ctx("cupy", cupy, cupyx.scipy.signal, cupyx.scipy.ndimage, name, True))
            notes.append({"backend": "cupy", "device": name, "library": "cupy " + cupy.__version__,
                          "global_mem_bytes": int(props.get("totalGlobalMem", 0)),
                          "tf32": os.environ.get("CUPY_TF32")})
        except Exception as e:  # no CuPy, no driver, no device: the CPU rows still run
            print(f"run_peers: CuPy rows skipped: {type(e).__name__}: {e}", file=sys.stderr)
    if want_cpu:
        name = cpu_name()
        ctxs.append(Ctx("numpy", np, scipy.signal if scipy else None, scipy.ndimage if scipy else None, name, False))
        notes.append({"backend": "numpy", "device": name, "library": "numpy " + np.__version__ +
                      (", scipy " + scipy.__version__ if scipy else ", no scipy"), "threads": os.cpu_count()})
    return ctxs, notes


# ---- inputs: the recipes of docs/benchmarks.md ------------------------------------------------------------------


def pick(size, small, default, large):
    return {"small": small, "default": default, "large": large}[size]


def uniform(n, seed, lo=-1.0, hi=1.0, dtype=np.float32):
    return np.random.default_rng(seed).uniform(lo, hi, n).astype(dtype)


def log2_label(n, dtype):
    k = int(round(math.log2(n)))
    return f"2^{k} {dtype}" if 2 ** k == n else f"{n} {dtype}"


def deltas(n, dtype):
    """The workshop's image: zeros with a 1 every 16 pixels from (8, 8)."""
    d = np.zeros((n, n), dtype=dtype)
    d[8::16, 8::16] = 1
    return d


def gauss15(dtype):
    x, y = np.meshgrid(np.linspace(-2, 2, 15), np.linspace(-2, 2, 15))
    return np.exp(-(x ** 2 + y ** 2) / 2).astype(dtype)


def synthetic_sky(n, seed=2026):
    """Gaussian noise of sigma 1e-3 around 0 plus 300 point sources per 2048^2 (Gaussian blobs of sigma 1.5 px,
    7x7, peak 10 to 100 sigma) at uniform random positions."""
    rng = np.random.default_rng(seed)
    img = rng.normal(0.0, 1e-3, size=(n, n)).astype(np.float32)
    nsrc = max(8, round(300 * (n / 2048) ** 2))
    yy, xx = np.mgrid[-3:4, -3:4]
    psf = np.exp(-(xx ** 2 + yy ** 2) / (2 * 1.5 ** 2))
    for y, x, a in zip(rng.integers(8, n - 8, nsrc), rng.integers(8, n - 8, nsrc), rng.uniform(0.01, 0.1, nsrc)):
        img[y - 3:y + 4, x - 3:x + 4] += (a * psf).astype(np.float32)
    return img


def sky_size(size):
    return pick(size, 512, 2048, 4096)


# ---- the workloads ----------------------------------------------------------------------------------------------
# Each setup(ctx, size) makes its inputs (on the device for CuPy, outside the timing) and returns (size label, fn);
# fn() enqueues one run. gpu_only / cpu_only restrict where a workload has a peer.

WORKLOADS = []


def workload(algorithm, variant, gpu_only=False, end_to_end=False, needs_scipy=False, needs_sep=False):
    """needs_sep: the peer is SEP (the C library of SExtractor's algorithms), on the CPU only, on one core."""
    def deco(setup):
        WORKLOADS.append(dict(algorithm=algorithm, variant=variant, setup=setup, gpu_only=gpu_only,
                              end_to_end=end_to_end, needs_scipy=needs_scipy, needs_sep=needs_sep))
        return setup
    return deco


@workload("vector_add", "f32")
def vector_add(ctx, size):
    n = pick(size, 2 ** 20, 2 ** 26, 2 ** 28)
    a, b = ctx.to_device(uniform(n, 1)), ctx.to_device(uniform(n, 2))
    c = ctx.xp.empty_like(a)
    return log2_label(n, "f32"), lambda: ctx.xp.add(a, b, out=c)


@workload("reduce", "sum_f32")
def reduce_sum(ctx, size):
    n = pick(size, 2 ** 20, 2 ** 28, 2 ** 29)
    x = ctx.to_device(uniform(n, 3))
    return log2_label(n, "f32"), lambda: ctx.xp.sum(x)


def conv2d_setup(ctx, size, dtype):
    n = pick(size, 512, 2048, 4096)
    return f"{n}x{n} * 15x15", deltas(n, dtype), gauss15(dtype)


for _dt in ("f32", "f64"):
    def _conv2d(ctx, size, _dt=_dt):
        label, img, k = conv2d_setup(ctx, size, np.float32 if _dt == "f32" else np.float64)
        d_img, d_k = ctx.to_device(img), ctx.to_device(k)
        return label, lambda: ctx.signal.convolve2d(d_img, d_k)  # mode full, boundary fill 0
    workload("convolve2d", _dt, needs_scipy=True)(_conv2d)

    def _conv1d(ctx, size, _dt=_dt):
        dtype = np.float32 if _dt == "f32" else np.float64
        n = pick(size, 512, 2048, 4096)
        x, k = ctx.to_device(deltas(n, dtype).ravel()), ctx.to_device(gauss15(dtype).diagonal().copy())
        return f"{n * n} * 15", lambda: ctx.xp.convolve(x, k)  # mode full
    workload("convolve1d", _dt)(_conv1d)


@workload("convolve2d", "f32+transfers", end_to_end=True, needs_scipy=True)
def conv2d_e2e(ctx, size):
    label, img, k = conv2d_setup(ctx, size, np.float32)
    return label, lambda: ctx.to_host(ctx.signal.convolve2d(ctx.to_device(img), ctx.to_device(k)))


def sigma_clip(xp, data, kappa=3.0, max_iter=100):
    """The workshop's loop: median, population std, keep the values strictly inside med +- kappa*std."""
    x = data.ravel()
    for _ in range(max_iter):
        med, std = xp.median(x), xp.std(x)
        keep = (x > med - kappa * std) & (x < med + kappa * std)
        if int(keep.sum()) == x.size:
            break
        x = x[keep]
    return x, med, std


def sources(ctx, data):
    """Clip, threshold at 5 x clipped std, label (4-connected), measure flux and centre of mass of labels 1..N."""
    xp = ctx.xp
    _, _, std = sigma_clip(xp, data)
    labels, n = ctx.ndimage.label(data > 5 * std)
    index = xp.arange(1, int(n) + 1)
    return ctx.ndimage.sum_labels(data, labels, index), ctx.ndimage.center_of_mass(data, labels, index)


@workload("sigma_clip", "f32")
def sigma_clip_w(ctx, size):
    n = sky_size(size)
    d = ctx.to_device(synthetic_sky(n))
    return f"{n}x{n} f32", lambda: sigma_clip(ctx.xp, d)


def segmented_sky(ctx, size):
    n = sky_size(size)
    d = ctx.to_device(synthetic_sky(n))
    _, _, std = sigma_clip(ctx.xp, d)
    return n, d, 5 * std


@workload("threshold", "f32")
def threshold_w(ctx, size):
    n, d, thr = segmented_sky(ctx, size)
    return f"{n}x{n} f32", lambda: ctx.xp.greater(d, thr)  # one byte per pixel, like gpuws's uint8 mask


@workload("label", "4conn", needs_scipy=True)
def label_w(ctx, size):
    n, d, thr = segmented_sky(ctx, size)
    mask = d > thr
    return f"{n}x{n}", lambda: ctx.ndimage.label(mask)


@workload("measure", "sum+com", needs_scipy=True)
def measure_w(ctx, size):
    n, d, thr = segmented_sky(ctx, size)
    labels, nl = ctx.ndimage.label(d > thr)
    index = ctx.xp.arange(1, int(nl) + 1)
    return (f"{n}x{n}, {int(nl)} labels",
            lambda: (ctx.ndimage.sum_labels(d, labels, index), ctx.ndimage.center_of_mass(d, labels, index)))


@workload("sources", "pipeline", end_to_end=True, needs_scipy=True)
def sources_w(ctx, size):
    n = sky_size(size)
    img = synthetic_sky(n)

    def run():
        flux, com = sources(ctx, ctx.to_device(img))
        return ctx.to_host(flux), ([ctx.to_host(c) for c in com] if ctx.gpu and isinstance(com, list) else com)
    return f"{n}x{n} f32", run


PRIMES_KERNEL = r"""
extern "C" __global__ void check_prime(const int *nums, int *out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    int num = nums[i], r = num >= 2 ? num : 0;   /* gpuws: 0 and 1 are not prime */
    for (int j = 2; j <= num / 2; j++)           /* the workshop's bound */
        if (num % j == 0) { r = 0; break; }
    out[i] = r;
}
"""


def optical_sky(w, h, seed=20261126):
    """background's case recipe (kernels/background/background_cases.c): level 100 with a gradient, Gaussian noise
    of sigma 5, one Gaussian source (sigma 2 px, amplitude 20 to 520) per 2000 pixels, three NaN columns on the left."""
    rng = np.random.default_rng(seed)
    r, c = np.mgrid[0:h, 0:w]
    img = 100.0 + 0.01 * c + 0.02 * r + rng.normal(0.0, 5.0, (h, w))
    yy, xx = np.mgrid[-8:9, -8:9]
    psf = np.exp(-(xx ** 2 + yy ** 2) / (2 * 2.0 ** 2))
    for y, x, a in zip(rng.integers(8, h - 8, w * h // 2000 + 1), rng.integers(8, w - 8, w * h // 2000 + 1),
                       rng.uniform(20, 520, w * h // 2000 + 1)):
        img[y - 8:y + 9, x - 8:x + 9] += a * psf
    img[:, :3] = np.nan
    return img.astype(np.float32)


@workload("background", "f32", needs_sep=True)
def background_w(ctx, size):
    import sep
    w, h = pick(size, (1000, 700), (2050, 2040), (8190, 8180))
    img = optical_sky(w, h)

    def fn():
        b = sep.Background(img, bw=64, bh=64, fw=3, fh=3)
        return b.back(), b.rms()  # gpuws_background writes both maps
    return f"{w}x{h} mesh 64", fn


def extract_sky(w, h, seed=20261126):
    """extract's case recipe (kernels/extract/extract_cases.c): level 100 with a gradient, Gaussian noise of sigma 5,
    one round or elliptical Gaussian source per 1500 pixels, three NaN columns on the left; returns the image, its
    background and its rms map (sigma 5), as the case gives them to gpuws_extract."""
    rng = np.random.default_rng(seed)
    r, c = np.mgrid[0:h, 0:w]
    back = (100.0 + 0.01 * c + 0.02 * r).astype(np.float32)
    img = back + rng.normal(0.0, 5.0, (h, w))
    yy, xx = np.mgrid[-15:16, -15:16]
    n = w * h // 1500 + 1
    for sr, sc, amp, sa, q, t in zip(rng.uniform(0, h, n), rng.uniform(0, w, n),
                                     15 + 800 * rng.uniform(0, 1, n) * rng.uniform(0, 1, n), rng.uniform(1, 4, n),
                                     rng.uniform(0.3, 1.0, n), rng.uniform(0, np.pi, n)):
        y0, x0 = int(sr), int(sc)
        ys, xs = slice(max(y0 - 15, 0), min(y0 + 16, h)), slice(max(x0 - 15, 0), min(x0 + 16, w))
        dy, dx = r[ys, xs] - sr, c[ys, xs] - sc
        u, v = dx * np.cos(t) + dy * np.sin(t), -dx * np.sin(t) + dy * np.cos(t)
        img[ys, xs] += amp * np.exp(-0.5 * (u * u / sa ** 2 + v * v / (sa * q) ** 2))
    img[:, :3] = np.nan
    return img.astype(np.float32), back, np.full((h, w), 5.0, np.float32)


@workload("extract", "f32", needs_sep=True)
def extract_w(ctx, size):
    import sep
    w, h = pick(size, (1000, 700), (2048, 2048), (8192, 8192))
    img, back, rms = extract_sky(w, h)
    sub = img - back

    def fn():  # SEP's defaults, as the case: matched filter, 32 thresholds, contrast 0.005, cleaning
        return sep.extract(sub, 1.5, err=rms, segmentation_map=True)
    return f"{w}x{h} SEP defaults", fn


@workload("primes", "trial", gpu_only=True)
def primes_w(ctx, size):
    n = pick(size, 10 ** 4, 10 ** 6, 10 ** 7)
    xp = ctx.xp
    kernel = xp.RawKernel(PRIMES_KERNEL, "check_prime")
    nums = xp.arange(n, dtype=xp.int32)
    out = xp.empty_like(nums)
    block = 256
    return f"{n}", lambda: kernel(((n + block - 1) // block,), (block,), (nums, out, np.int32(n)))


# Elementwise functions: on CuPy one fused ElementwiseKernel each (what a Numba @vectorize(target='cuda') is);
# on NumPy the expression.
UFUNCS = {
    "gaussian_pdf": ("float32 x, float32 mean, float32 sigma", "float32 y",
                     "float t = (x - mean) / sigma; y = expf(-0.5f * t * t) / (sigma * 2.5066282746310002f)",
                     lambda np_, x, m, s: np_.exp(-0.5 * ((x - m) / s) ** 2) / (s * np_.float32(2.5066282746310002))),
    "polar_distance": ("float32 r1, float32 t1, float32 r2, float32 t2", "float32 d",
                       "float dx = r1 * cosf(t1) - r2 * cosf(t2), dy = r1 * sinf(t1) - r2 * sinf(t2);"
                       " d = sqrtf(dx * dx + dy * dy)",
                       lambda np_, r1, t1, r2, t2: np_.sqrt((r1 * np_.cos(t1) - r2 * np_.cos(t2)) ** 2 +
                                                          (r1 * np_.sin(t1) - r2 * np_.sin(t2)) ** 2)),
    "zero_suppress_i16": ("int16 w, int16 thr", "int16 y", "y = w < thr ? (short)0 : w",
                          lambda np_, w, t: np_.where(w < t, np_.int16(0), w)),
    "zero_suppress_f32": ("float32 w, float32 thr", "float32 y", "y = w < thr ? 0.0f : w",
                          lambda np_, w, t: np_.where(w < t, np_.float32(0), w)),
    # "i" is CuPy's own element index inside an ElementwiseKernel, so the sample index is called "t" here
    "make_pulses": ("float32 t, float32 period, float32 amplitude", "float32 y",
                    "y = fmaxf(sinf(t / period) - 0.3f, 0.0f) * amplitude",
                    lambda np_, i, p, a: np_.maximum(np_.sin(i / p) - np_.float32(0.3), np_.float32(0)) * a),
    "hypot": ("float32 x, float32 y", "float32 r",
              "float ax = fabsf(x), ay = fabsf(y), t = fminf(ax, ay), m = fmaxf(ax, ay); t = t / m;"
              " r = m * sqrtf(1.0f + t * t)",
              lambda np_, x, y: _hypot_np(np_, x, y)),
}


def _hypot_np(np_, x, y):
    x, y = np_.abs(x), np_.abs(y)
    t, m = np_.minimum(x, y), np_.maximum(x, y)
    t = t / m
    return m * np_.sqrt(1 + t * t)


def ufunc_inputs(name, n):
    rng = np.random.default_rng(11)
    f32 = np.float32
    if name == "gaussian_pdf":
        return [rng.normal(0, 1, n).astype(f32), f32(0), f32(1)]
    if name == "polar_distance":
        return [rng.uniform(0, 10, n).astype(f32), rng.uniform(0, 2 * np.pi, n).astype(f32),
                rng.uniform(0, 10, n).astype(f32), rng.uniform(0, 2 * np.pi, n).astype(f32)]
    if name == "zero_suppress_i16":
        return [rng.integers(-100, 100, n).astype(np.int16), np.int16(15)]
    if name == "zero_suppress_f32":
        return [rng.uniform(-100, 100, n).astype(f32), f32(15)]
    if name == "make_pulses":
        return [np.arange(n, dtype=f32), f32(100), f32(100)]
    return [rng.uniform(-10, 10, n).astype(f32), rng.uniform(-10, 10, n).astype(f32)]


for _name, (_params, _out, _body, _np_fn) in UFUNCS.items():
    def _ufunc(ctx, size, _name=_name, _params=_params, _out=_out, _body=_body, _np_fn=_np_fn):
        n = pick(size, 2 ** 20, 2 ** 26, 2 ** 28)
        args = [ctx.to_device(a) if isinstance(a, np.ndarray) else a for a in ufunc_inputs(_name, n)]
        if ctx.gpu:
            kernel = ctx.xp.ElementwiseKernel(_params, _out, _body, "gpuws_peer_" + _name)
            return log2_label(n, "values"), lambda: kernel(*args)
        return log2_label(n, "values"), lambda: _np_fn(np, *args)
    workload("ufunc", _name)(_ufunc)


@workload("ufunc", "hidden_layer+transfers", end_to_end=True)
def hidden_layer(ctx, size):
    n = pick(size, 10 ** 6, 10 ** 8, 2 * 10 ** 8)
    rng = np.random.default_rng(12)
    grey = np.floor(rng.uniform(0, 255, n)).astype(np.float32)
    weights = rng.normal(0.5, 0.1, n).astype(np.float32)
    xp = ctx.xp

    def run():  # pageable host arrays, as in the workshop; normalize, weigh, activate (tanh), back to the host
        g, w = ctx.to_device(grey), ctx.to_device(weights)
        return ctx.to_host(xp.tanh((g / xp.float32(255)) * w))
    return f"{n} f32", run


@workload("monte_carlo_pi", "philox")
def monte_carlo(ctx, size):
    n = pick(size, 10 ** 6, 10 ** 8, 10 ** 9 // 2)
    xp = ctx.xp
    if ctx.gpu:
        bitgen = getattr(xp.random, "Philox4x3210", None) or xp.random.XORWOW
        rng = xp.random.Generator(bitgen(2026))
    else:
        rng = np.random.Generator(np.random.Philox(2026))

    def run():
        x, y = rng.random(n, dtype=xp.float32), rng.random(n, dtype=xp.float32)
        return 4 * xp.count_nonzero(x * x + y * y < 1) / n
    return f"{n} points", run


@workload("histogram", "f32")
def hist_f32(ctx, size):
    n = pick(size, 2 ** 20, 2 ** 26, 2 ** 28)
    x = ctx.to_device(uniform(n, 13, 0.0, 1.0))
    return log2_label(n, "f32") + ", 256 bins", lambda: ctx.xp.histogram(x, bins=256, range=(0.0, 1.0))


@workload("histogram", "i32")
def hist_i32(ctx, size):
    n = pick(size, 2 ** 20, 2 ** 26, 2 ** 28)
    x = ctx.to_device(np.random.default_rng(14).integers(0, 256, n).astype(np.int32))
    return log2_label(n, "i32") + ", 256 bins", lambda: ctx.xp.histogram(x, bins=256, range=(0, 256))


for _dt in ("f32", "f64"):
    def _matmul(ctx, size, _dt=_dt):
        n = pick(size, 512, 4096, 8192)
        dtype = np.float32 if _dt == "f32" else np.float64
        a, b = ctx.to_device(uniform(n * n, 15, dtype=dtype).reshape(n, n)), ctx.to_device(uniform(n * n, 16, dtype=dtype).reshape(n, n))
        c = ctx.xp.empty_like(a)
        return f"{n}x{n}x{n} {_dt}", lambda: ctx.xp.matmul(a, b, out=c)  # cuBLAS / BLAS; TF32 off
    workload("matmul", _dt + "_tiled")(_matmul)


@workload("transpose", "f32")
def transpose_w(ctx, size):
    n = pick(size, 1024, 8192, 16384)
    a = ctx.to_device(uniform(n * n, 17).reshape(n, n))
    return f"{n}x{n} f32", lambda: ctx.xp.ascontiguousarray(a.T)


@workload("l2_norm", "f32")
def l2_norm_w(ctx, size):
    rows = pick(size, 2 ** 12, 2 ** 16, 2 ** 18)
    x = ctx.to_device(uniform(rows * 1024, 18).reshape(rows, 1024))
    return f"{rows}x1024 f32", lambda: ctx.xp.linalg.norm(x, axis=1)


# ---- timing and the report --------------------------------------------------------------------------------------


def time_runs(ctx, fn, repeat, budget_s):
    """One warm-up run, then up to `repeat` timed runs (fewer once budget_s is spent); times in ms."""
    fn()
    ctx.sync()
    times = []
    if ctx.gpu:
        start, end = ctx.xp.cuda.Event(), ctx.xp.cuda.Event()
    for _ in range(repeat):
        if ctx.gpu:
            start.record()
            fn()
            end.record()
            end.synchronize()
            times.append(ctx.xp.cuda.get_elapsed_time(start, end))
        else:
            t0 = time.perf_counter()
            fn()
            times.append((time.perf_counter() - t0) * 1e3)
        if sum(times) > budget_s * 1e3:
            break
    return statistics.median(times), min(times), len(times)


ROW_KEYS = ["algorithm", "variant", "size", "size_class", "backend", "platform", "device", "target", "end_to_end",
            "status", "error", "median_ms", "min_ms", "repeats", "bytes", "flops", "gb_per_s", "gflop_per_s",
            "flop_per_byte", "flop_dtype", "fraction_of_copy_bandwidth", "fraction_of_fma_peak",
            "fraction_of_ceiling", "bound", "speedup_vs_reference", "opencl_over_cuda"]


def selected(only, w):
    if not only:
        return True
    for item in only.split(","):
        item = item.strip()
        if item == w["algorithm"] or item == f'{w["algorithm"]}/{w["variant"]}':
            return True
    return False


def row_backend(ctx, w):
    if not ctx.gpu and w["needs_sep"]:
        return "sep"
    return "scipy" if (not ctx.gpu and w["needs_scipy"]) else ctx.backend


def run_one(ctx, w, size, repeat, budget_s):
    row = dict.fromkeys(ROW_KEYS)
    backend = row_backend(ctx, w)
    row.update(algorithm=w["algorithm"], variant=w["variant"], size_class=size, backend=backend,
               platform="CUDA" if ctx.gpu else "host", device=ctx.device, target=f"{backend} | {ctx.device}",
               end_to_end=w["end_to_end"], repeats=0)
    try:
        if w["needs_scipy"] and ctx.signal is None:
            raise RuntimeError("SciPy is not installed")
        label, fn = w["setup"](ctx, size)
        row["size"] = label
        med, mn, n = time_runs(ctx, fn, repeat, budget_s)
        row.update(status="ok", median_ms=med, min_ms=mn, repeats=n)
    except Exception as e:  # one broken peer must not stop the others
        row.update(status="FAILED", error=f"{type(e).__name__}: {e}"[:300])
        traceback.print_exc(limit=2, file=sys.stderr)
    finally:
        if ctx.gpu:  # give the memory pool back between workloads
            try:
                ctx.xp.get_default_memory_pool().free_all_blocks()
            except Exception:
                pass
    return row


def write_json(path, doc):
    tmp = f"{path}.tmp.{os.getpid()}"
    with open(tmp, "w") as f:
        json.dump(doc, f, indent=1, allow_nan=False)
        f.write("\n")
    os.replace(tmp, path)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default="peers.json", help="the JSON to write (default peers.json)")
    ap.add_argument("--only", help="comma list of algorithms or algorithm/variant")
    ap.add_argument("--size", choices=SIZES, default="default")
    ap.add_argument("--quick", action="store_true", help="small sizes and 3 repeats (a smoke test)")
    ap.add_argument("--repeat", type=int, default=20, help="timed runs on the GPU (default 20)")
    ap.add_argument("--cpu-repeat", type=int, default=3, help="timed runs on the CPU (default 3)")
    ap.add_argument("--budget", type=float, default=60, help="seconds of timed runs per row at most (default 60)")
    ap.add_argument("--no-cpu", action="store_true", help="no NumPy/SciPy rows")
    ap.add_argument("--no-gpu", action="store_true", help="no CuPy rows")
    ap.add_argument("--list", action="store_true", help="print the workloads and exit")
    args = ap.parse_args(argv)
    if args.list:
        for w in WORKLOADS:
            print(f'{w["algorithm"]} {w["variant"]}' + (" (CuPy only)" if w["gpu_only"] else "") +
                  (" (SEP, CPU only)" if w["needs_sep"] else ""))
        return 0
    if args.quick:
        args.size, args.repeat, args.cpu_repeat = "small", 3, 3
    if args.repeat < 1 or args.cpu_repeat < 1:
        ap.error("--repeat and --cpu-repeat need a positive count")
    ctxs, targets = make_contexts(not args.no_cpu, not args.no_gpu)
    if not ctxs:
        print("run_peers: nothing to run on (no CuPy device, and --no-cpu)", file=sys.stderr)
        return 1
    todo = [(c, w) for c in ctxs for w in WORKLOADS if selected(args.only, w) and (c.gpu or not w["gpu_only"]) and
            not (c.gpu and w["needs_sep"])]
    if not todo:
        print(f"run_peers: --only {args.only} selects no workload (see --list)", file=sys.stderr)
        return 2
    rows = []
    for k, (ctx, w) in enumerate(todo, 1):
        print(f'[{k}/{len(todo)}] {row_backend(ctx, w)} | {ctx.device} | {w["algorithm"]} {w["variant"]} ...', end="",
              file=sys.stderr, flush=True)
        row = run_one(ctx, w, args.size, args.repeat if ctx.gpu else args.cpu_repeat, args.budget)
        rows.append(row)
        print(f' {row["median_ms"]:.4g} ms ({row["repeats"]} runs)' if row["status"] == "ok" else f' FAILED: {row["error"]}',
              file=sys.stderr, flush=True)
    doc = {"schema": SCHEMA, "tool": "bench/peers/run_peers.py",
           "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "host": socket.gethostname(),
           "python": sys.version.split()[0], "argv": sys.argv, "size_class": args.size, "repeat": args.repeat,
           "cpu_repeat": args.cpu_repeat,
           "method": "one warm-up run; CUDA events (CuPy) or perf_counter (NumPy/SciPy) around each run; "
                     "median and minimum of the timed runs; inputs made outside the timing",
           "targets": targets, "rows": rows, "comparisons": []}
    write_json(args.out, doc)
    print(f"run_peers: wrote {args.out} ({sum(r['status'] == 'ok' for r in rows)} of {len(rows)} rows ok)",
          file=sys.stderr)
    return 0 if all(r["status"] == "ok" for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
