"""The workshop's algorithms (include/gpuws/algorithms/*.h) with NumPy/SciPy-like signatures.

Every function takes gpuws Arrays or NumPy arrays (anything np.asarray takes). When any array argument is an
Array, the work runs on its context, stays on the device, and the result is an Array; when all are NumPy arrays the
work runs on ``ctx`` (default: gpuws.default_context()) and the result comes back as NumPy, like SciPy's. ``stream``
(a gpuws.Stream) queues the work there instead of the context's default stream; ``out=`` writes into an Array.
"""

import ctypes
import math
from collections import namedtuple

import numpy as np

from . import _lib
from ._core import Array, Context, GPUWS_DTYPES, Stream, WrongContextError, _stream, check, invalid
from ._lib import lib

_default = None


def default_context():
    """The context used for NumPy-only calls: made on first use as ``Context()`` (GPUWS_BACKEND, GPUWS_DEVICE)."""
    global _default
    if _default is None or _default.closed:
        _default = Context()
    return _default


def set_default_context(ctx):
    """Makes ``ctx`` (a Context, or None to make a new one on next use) the one NumPy-only calls use."""
    global _default
    if ctx is not None and not isinstance(ctx, Context):
        raise invalid("set_default_context: a gpuws.Context or None, not %s" % type(ctx).__name__)
    _default = ctx


class _Call:
    """One algorithm call: finds the context, uploads NumPy inputs, makes outputs, returns Arrays or NumPy."""

    def __init__(self, fname, args, ctx=None, stream=None):
        self.fname = fname
        found = None
        for a in args:
            if isinstance(a, Array):
                if found is None:
                    found = a.context
                elif a.context is not found:
                    raise WrongContextError("%s: the Arrays belong to different contexts (%r and %r)"
                                            % (fname, found, a.context))
        if stream is not None:
            if not isinstance(stream, Stream):
                raise invalid("%s: stream must be a gpuws.Stream, not %s" % (fname, type(stream).__name__))
            if found is not None and stream.context is not found:
                raise WrongContextError("%s: the stream belongs to %r, the Arrays to %r" % (fname, stream.context,
                                                                                              found))
            found = found or stream.context
        if ctx is not None:
            if found is not None and ctx is not found:
                raise WrongContextError("%s: ctx is %r but the Arrays belong to %r" % (fname, ctx, found))
            found = ctx
        self.device = any(isinstance(a, Array) for a in args)
        self.ctx = found or default_context()
        self.stream = stream
        self.s = _stream(self.ctx, stream)

    def input(self, x, dtype, name, shape_ndim=None):
        """x as an Array of dtype (NumPy input copied to the device in C order; an Array must have that dtype)."""
        if isinstance(x, Array):
            if x.dtype != dtype:
                raise invalid("%s: %s is a %s Array; this call needs %s (convert it on the host, or pass NumPy)"
                              % (self.fname, name, x.dtype, np.dtype(dtype)))
            a = x
        else:
            host = np.ascontiguousarray(x, dtype=dtype)
            a = Array(self.ctx, host.shape, host.dtype)
            if a.nbytes:
                # blocking: the new buffer holds the data before any stream's next work, and the host copy may go
                # as soon as this returns, also when a later check of this call raises
                check(lib.gpuws_buffer_write(a.handle, 0, host.ctypes.data, a.nbytes))
        if shape_ndim is not None and a.ndim != shape_ndim:
            raise invalid("%s: %s must be %d-D, not of shape %s" % (self.fname, name, shape_ndim, a.shape))
        return a

    def output(self, out, shape, dtype, name="out"):
        shape = tuple(shape)
        if out is None:
            return Array(self.ctx, shape, dtype)
        if not isinstance(out, Array):
            raise invalid("%s: out must be a gpuws.Array (NumPy results are returned, not written)" % self.fname)
        if out.context is not self.ctx:
            raise WrongContextError("%s: %s belongs to %r, not %r" % (self.fname, name, out.context, self.ctx))
        if out.shape != shape or out.dtype != np.dtype(dtype):
            raise invalid("%s: %s must be a %s Array of shape %s, not %s of %s"
                          % (self.fname, name, np.dtype(dtype), shape, out.dtype, out.shape))
        self.device = True
        return out

    def done(self, result):
        """The result as the caller gets it: Arrays when an Array went in, else NumPy (read on the call's stream)."""
        if self.device:
            return result
        if isinstance(result, tuple):
            return tuple(r.get(stream=self.stream) if isinstance(r, Array) else r for r in result)
        return result.get(stream=self.stream)


def _float_dtype(fname, *xs):
    """float32 when every array argument is float32, else float64 (SciPy's result type for float input). Arrays
    must already be float32 or float64; NumPy integers are converted to float64."""
    dts = []
    for x in xs:
        dt = x.dtype if isinstance(x, (Array, np.ndarray)) else np.asarray(x).dtype
        if isinstance(x, Array) and dt not in (np.float32, np.float64):
            raise invalid("%s: a %s Array; this call takes float32 or float64" % (fname, dt))
        if dt.kind == "c":
            raise invalid("%s: complex input is not supported" % fname)
        dts.append(dt)
    return np.dtype(np.float32) if all(d == np.float32 for d in dts) else np.dtype(np.float64)


def _enum(fname, what, value, names):
    try:
        return names.index(value)
    except ValueError:
        raise invalid("%s: %s %r is not one of %s" % (fname, what, value, ", ".join(map(repr, names)))) from None


# ---- basics -------------------------------------------------------------------------------------------------------


def vector_add(a, b, out=None, stream=None, ctx=None):
    """``a + b`` elementwise (float32 or float64, equal shapes); out may be a or b."""
    c = _Call("vector_add", (a, b, out), ctx, stream)
    dt = _float_dtype("vector_add", a, b)
    da, db = c.input(a, dt, "a"), c.input(b, dt, "b")
    if da.shape != db.shape:
        raise invalid("vector_add: shapes %s and %s differ (no broadcasting)" % (da.shape, db.shape))
    o = c.output(out, da.shape, dt)
    check(lib.gpuws_vector_add(c.s, GPUWS_DTYPES[dt], da.size, da.handle, db.handle, o.handle))
    return c.done(o)


add = vector_add
_REDUCE_OPS = ("sum", "min", "max")


def reduce(x, op="sum", out=None, stream=None, ctx=None):
    """``x.sum()``, ``x.min()`` or ``x.max()`` of a float32/float64 array. Returns a Python float (waiting for it),
    or, with out= (an Array of shape (1,) and x's dtype), queues the result there and returns out."""
    opi = _enum("reduce", "op", op, _REDUCE_OPS)
    c = _Call("reduce", (x, out), ctx, stream)
    dt = _float_dtype("reduce", x)
    dx = c.input(x, dt, "x")
    if out is not None:
        o = c.output(out, (1,), dt)
        check(lib.gpuws_reduce(c.s, opi, GPUWS_DTYPES[dt], dx.size, dx.handle, o.handle))
        return c.done(o)
    v = ctypes.c_double()
    check(lib.gpuws_reduce_value(c.s, opi, GPUWS_DTYPES[dt], dx.size, dx.handle, ctypes.byref(v)))
    return v.value


def sum(x, stream=None, ctx=None):  # noqa: A001
    return reduce(x, "sum", stream=stream, ctx=ctx)


def min(x, stream=None, ctx=None):  # noqa: A001
    return reduce(x, "min", stream=stream, ctx=ctx)


def max(x, stream=None, ctx=None):  # noqa: A001
    return reduce(x, "max", stream=stream, ctx=ctx)


# ---- convolution ----------------------------------------------------------------------------------------------------

_MODES = ("full", "same", "valid")
_BOUNDARIES = ("fill", "wrap", "symm")


def convolve2d(in1, in2, mode="full", boundary="fill", fillvalue=0, out=None, stream=None, ctx=None):
    """``scipy.signal.convolve2d(in1, in2, mode, boundary, fillvalue)``: in1 the image, in2 the kernel (2-D,
    float32 when both are, else float64). Modes full/same/valid; boundaries fill/wrap/symm ("symmetric" and
    "circular" accepted as SciPy's synonyms)."""
    boundary = {"symmetric": "symm", "circular": "wrap"}.get(boundary, boundary)
    m = _enum("convolve2d", "mode", mode, _MODES)
    bnd = _enum("convolve2d", "boundary", boundary, _BOUNDARIES)
    c = _Call("convolve2d", (in1, in2, out), ctx, stream)
    dt = _float_dtype("convolve2d", in1, in2)
    img, k = c.input(in1, dt, "in1", 2), c.input(in2, dt, "in2", 2)
    oh, ow = ctypes.c_size_t(), ctypes.c_size_t()
    check(lib.gpuws_convolve2d_output_shape(img.shape[0], img.shape[1], k.shape[0], k.shape[1], m,
                                            ctypes.byref(oh), ctypes.byref(ow)))
    o = c.output(out, (oh.value, ow.value), dt)
    opts = _lib.convolve2d_options(m, bnd, float(fillvalue))
    check(lib.gpuws_convolve2d(c.s, GPUWS_DTYPES[dt], img.handle, img.shape[0], img.shape[1], 0, k.handle,
                               k.shape[0], k.shape[1], ctypes.byref(opts), o.handle))
    return c.done(o)


def convolve2d_separable(in1, col, row, mode="full", boundary="fill", fillvalue=0, out=None, stream=None, ctx=None):
    """``convolve2d(in1, np.outer(col, row), ...)`` computed as two 1-D passes (kh + kw products per output)."""
    boundary = {"symmetric": "symm", "circular": "wrap"}.get(boundary, boundary)
    m = _enum("convolve2d_separable", "mode", mode, _MODES)
    bnd = _enum("convolve2d_separable", "boundary", boundary, _BOUNDARIES)
    c = _Call("convolve2d_separable", (in1, col, row, out), ctx, stream)
    dt = _float_dtype("convolve2d_separable", in1, col, row)
    img = c.input(in1, dt, "in1", 2)
    dc, dr = c.input(col, dt, "col", 1), c.input(row, dt, "row", 1)
    oh, ow = ctypes.c_size_t(), ctypes.c_size_t()
    check(lib.gpuws_convolve2d_output_shape(img.shape[0], img.shape[1], dc.size, dr.size, m,
                                            ctypes.byref(oh), ctypes.byref(ow)))
    o = c.output(out, (oh.value, ow.value), dt)
    opts = _lib.convolve2d_options(m, bnd, float(fillvalue))
    check(lib.gpuws_convolve2d_separable(c.s, GPUWS_DTYPES[dt], img.handle, img.shape[0], img.shape[1], 0,
                                         dc.handle, dc.size, dr.handle, dr.size, ctypes.byref(opts), o.handle))
    return c.done(o)


def convolve1d(a, v, mode="full", out=None, stream=None, ctx=None):
    """``numpy.convolve(a, v, mode)`` (1-D, float32 when both are, else float64)."""
    m = _enum("convolve1d", "mode", mode, _MODES)
    c = _Call("convolve1d", (a, v, out), ctx, stream)
    dt = _float_dtype("convolve1d", a, v)
    da, dv = c.input(a, dt, "a", 1), c.input(v, dt, "v", 1)
    n = ctypes.c_size_t()
    check(lib.gpuws_convolve1d_output_length(da.size, dv.size, m, ctypes.byref(n)))
    o = c.output(out, (n.value,), dt)
    check(lib.gpuws_convolve1d(c.s, GPUWS_DTYPES[dt], da.handle, da.size, dv.handle, dv.size, m, o.handle))
    return c.done(o)


convolve = convolve1d

# ---- linear algebra --------------------------------------------------------------------------------------------------

_MATMUL_VARIANTS = ("tiled", "naive", "shared")


def matmul(a, b, out=None, variant="tiled", stream=None, ctx=None):
    """``a @ b`` for 2-D float32/float64 matrices; variant "tiled" (default), "naive" or "shared" (the
    workshop's kernels)."""
    var = _enum("matmul", "variant", variant, _MATMUL_VARIANTS)
    c = _Call("matmul", (a, b, out), ctx, stream)
    dt = _float_dtype("matmul", a, b)
    da, db = c.input(a, dt, "a", 2), c.input(b, dt, "b", 2)
    if da.shape[1] != db.shape[0]:
        raise invalid("matmul: shapes %s and %s do not chain (a's columns must be b's rows)" % (da.shape, db.shape))
    m, k, n = da.shape[0], da.shape[1], db.shape[1]
    o = c.output(out, (m, n), dt)
    check(lib.gpuws_matmul_ex(c.s, var, GPUWS_DTYPES[dt], m, n, k, da.handle, db.handle, o.handle))
    return c.done(o)


def transpose(a, out=None, stream=None, ctx=None):
    """``np.ascontiguousarray(a.T)`` of a 2-D array of a 4- or 8-byte dtype (bit-exact)."""
    c = _Call("transpose", (a, out), ctx, stream)
    dt = a.dtype if isinstance(a, Array) else np.asarray(a).dtype
    if dt not in GPUWS_DTYPES:
        raise invalid("transpose: dtype %s is not a gpuws dtype" % dt)
    da = c.input(a, dt, "a", 2)
    o = c.output(out, (da.shape[1], da.shape[0]), dt)
    check(lib.gpuws_transpose(c.s, GPUWS_DTYPES[dt], da.shape[0], da.shape[1], da.handle, o.handle))
    return c.done(o)


def l2_norm(a, out=None, stream=None, ctx=None):
    """``np.linalg.norm(a, axis=1)`` of a 2-D float32/float64 array (overflow-safe)."""
    c = _Call("l2_norm", (a, out), ctx, stream)
    dt = _float_dtype("l2_norm", a)
    da = c.input(a, dt, "a", 2)
    o = c.output(out, (da.shape[0],), dt)
    check(lib.gpuws_l2_norm(c.s, GPUWS_DTYPES[dt], da.shape[0], da.shape[1], da.handle, o.handle))
    return c.done(o)


# ---- source finding -------------------------------------------------------------------------------------------------

SigmaClipResult = namedtuple("SigmaClipResult", "count median mean std iterations converged")
MEASURE_DTYPE = np.dtype([("sum", "f8"), ("row", "f8"), ("col", "f8"), ("peak", "f8"), ("npix", "i8"),
                          ("peak_row", "i8"), ("peak_col", "i8")])
SOURCE_DTYPE = np.dtype([("id", "i8"), ("x", "f8"), ("y", "f8"), ("flux", "f8"), ("npix", "i8"), ("peak", "f8"),
                         ("peak_x", "i8"), ("peak_y", "i8")])
assert MEASURE_DTYPE.itemsize == ctypes.sizeof(_lib.SourceMeasure)
assert SOURCE_DTYPE.itemsize == ctypes.sizeof(_lib.Source)


def _clip_result(r):
    return SigmaClipResult(r.count, r.median, r.mean, r.std, r.iterations, bool(r.converged))


def sigma_clip(data, kappa=3.0, max_iterations=100, stream=None, ctx=None):
    """κ-σ clipping of every non-NaN value of ``data`` (float32, any shape): NumPy's loop
    ``x = x[(x > med - κ·std) & (x < med + κ·std)]`` until nothing is removed. Returns
    ``SigmaClipResult(count, median, mean, std, iterations, converged)`` of the values kept."""
    c = _Call("sigma_clip", (data,), ctx, stream)
    d = c.input(data, np.float32, "data")
    opts = _lib.sigma_clip_options(float(kappa), int(max_iterations))
    r = _lib.SigmaClipResult()
    check(lib.gpuws_sigma_clip(c.s, d.size, d.handle, ctypes.byref(opts), ctypes.byref(r)))
    return _clip_result(r)


def threshold(data, value, out=None, stream=None, ctx=None):
    """``(data > value).astype(np.uint8)`` of float32 data (NaN gives 0)."""
    c = _Call("threshold", (data, out), ctx, stream)
    d = c.input(data, np.float32, "data")
    o = c.output(out, d.shape, np.uint8)
    check(lib.gpuws_threshold(c.s, d.size, d.handle, float(value), o.handle))
    return c.done(o)


def label(mask, connectivity=4, out=None, stream=None, ctx=None):
    """``scipy.ndimage.label(mask)`` of a 2-D mask (non-zero = foreground), 4- (SciPy's default cross) or
    8-connected. Returns ``(labels, n)``: int32 labels 1..n in raster order of each component's first pixel."""
    if connectivity not in (4, 8):
        raise invalid("label: connectivity must be 4 or 8, not %r" % (connectivity,))
    c = _Call("label", (mask, out), ctx, stream)
    if isinstance(mask, Array):
        m = c.input(mask, np.uint8, "mask", 2)
    else:
        m = c.input(np.asarray(mask) != 0, np.uint8, "mask", 2)
    o = c.output(out, m.shape, np.int32, "out")
    n = ctypes.c_size_t()
    if m.size:  # gpuws_label takes no empty image; SciPy labels it with nothing
        check(lib.gpuws_label(c.s, m.shape[1], m.shape[0], m.handle, connectivity, o.handle, ctypes.byref(n)))
    return c.done(o), n.value


def measure(data, labels, num_labels, stream=None, ctx=None):
    """Per label 1..num_labels: ``sum_labels``, ``center_of_mass`` (row, col), the peak and its position, pixels.
    Returns a NumPy structured array (fields sum, row, col, peak, npix, peak_row, peak_col), record k for label
    k + 1."""
    c = _Call("measure", (data, labels), ctx, stream)
    d = c.input(data, np.float32, "data", 2)
    lab = c.input(labels, np.int32, "labels", 2)
    if d.shape != lab.shape:
        raise invalid("measure: data %s and labels %s differ in shape" % (d.shape, lab.shape))
    res = np.zeros(num_labels, MEASURE_DTYPE)
    if num_labels == 0:
        return res
    o = Array(c.ctx, (num_labels * MEASURE_DTYPE.itemsize,), np.uint8)
    check(lib.gpuws_measure(c.s, d.shape[1], d.shape[0], d.handle, lab.handle, num_labels, o.handle))
    o.get(stream=c.stream, out=res.view(np.uint8))
    return res


class Catalog:
    """What find_sources found: ``sources`` (structured array: id, x, y, flux, npix, peak, peak_x, peak_y; x is the
    column, y the row of the centre of mass), ``clip`` (SigmaClipResult), ``threshold``, ``labels`` (int32 image,
    when asked for) and the device-event times in ``timings_ms``."""

    def __init__(self, cat, shape):
        self.clip = _clip_result(cat.clip)
        self.threshold = cat.threshold
        n = cat.num_sources
        self.sources = np.zeros(n, SOURCE_DTYPE)
        if n:
            ctypes.memmove(self.sources.ctypes.data, cat.sources, n * SOURCE_DTYPE.itemsize)
        self.labels = None
        if cat.labels:
            self.labels = np.empty(shape, np.int32)
            ctypes.memmove(self.labels.ctypes.data, cat.labels, self.labels.nbytes)
        self.timings_ms = {k[3:]: getattr(cat, k) for k in ("ms_upload", "ms_clip", "ms_threshold", "ms_label",
                                                            "ms_measure", "ms_download", "ms_total")}

    def __len__(self):
        return len(self.sources)

    def __repr__(self):
        return "<gpuws.Catalog %d sources, threshold %g>" % (len(self.sources), self.threshold)


def _sources_options(fname, threshold_sigma, threshold_abs, kappa, max_iterations, connectivity, return_labels):
    """find_sources' keywords as a gpuws_sources_options (its clip options kept alive by the struct)."""
    if connectivity not in (4, 8):
        raise invalid("%s: connectivity must be 4 or 8, not %r" % (fname, connectivity))
    clip = _lib.sigma_clip_options(float(kappa), int(max_iterations))
    return _lib.sources_options(ctypes.pointer(clip), float(threshold_sigma),
                                math.nan if threshold_abs is None else float(threshold_abs), connectivity,
                                1 if return_labels else 0)


def _catalog(cat, shape):
    """The Catalog of a gpuws_catalog pointer, which is freed."""
    try:
        return Catalog(cat.contents, shape)
    finally:
        lib.gpuws_catalog_free(cat)


def find_sources(image, threshold_sigma=5.0, threshold_abs=None, kappa=3.0, max_iterations=100, connectivity=4,
                 return_labels=False, ctx=None):
    """The workshop's pipeline on one device: κ-σ clipping, threshold (``threshold_abs``, else
    ``threshold_sigma`` × clipped std), labelling, measurement. ``image``: a 2-D float32 host array (NaN = blank).
    Returns a Catalog. Runs on the context's default stream."""
    if isinstance(image, Array):
        raise invalid("find_sources takes a host image (it uploads it once itself); pass image.get()")
    opts = _sources_options("find_sources", threshold_sigma, threshold_abs, kappa, max_iterations, connectivity,
                            return_labels)
    ctx = ctx or default_context()
    img = np.ascontiguousarray(image, dtype=np.float32)
    if img.ndim != 2:
        raise invalid("find_sources: image must be 2-D, not of shape %s" % (img.shape,))
    cat = ctypes.POINTER(_lib.Catalog)()
    check(lib.gpuws_find_sources(ctx.handle, img.ctypes.data, img.shape[1], img.shape[0], ctypes.byref(opts),
                                 ctypes.byref(cat)))
    return _catalog(cat, img.shape)


# ---- workshop kernels ------------------------------------------------------------------------------------------------

_PRIMES_VARIANTS = ("fast", "trial")


def primes(n, variant="fast", stream=None, ctx=None):
    """The workshop's check_prime_gpu over range(n): an int32 array with out[i] = i where i is prime, else 0
    (a NumPy array)."""
    var = _enum("primes", "variant", variant, _PRIMES_VARIANTS)
    c = _Call("primes", (), ctx, stream)
    o = Array(c.ctx, (int(n),), np.int32)
    if n:
        check(lib.gpuws_primes(c.s, var, int(n), o.handle, None))
    return c.done(o)


def count_primes(n, variant="fast", stream=None, ctx=None):
    """How many primes are below n (the device counts; nothing else is read back)."""
    var = _enum("count_primes", "variant", variant, _PRIMES_VARIANTS)
    c = _Call("count_primes", (), ctx, stream)
    cnt = Array(c.ctx, (1,), np.uint64)
    check(lib.gpuws_primes(c.s, var, int(n), None, cnt.handle))
    return int(cnt.get(stream=stream)[0])


def monte_carlo_pi(n, seed=0, first=0, return_hits=False, ctx=None, stream=None):
    """4 · hits / n over samples [first, first + n) of the counter-based generator (Philox4x32-10): the same
    estimate on every device. With return_hits, ``(pi, hits)``."""
    c = _Call("monte_carlo_pi", (), ctx, stream)
    hits, pi = ctypes.c_uint64(), ctypes.c_double()
    check(lib.gpuws_monte_carlo_pi_value(c.ctx.handle, c.s, int(first), int(n), int(seed), ctypes.byref(hits),
                                         ctypes.byref(pi)))
    return (pi.value, hits.value) if return_hits else pi.value


def histogram(x, bins=10, range=None, stream=None, ctx=None):  # noqa: A002 (NumPy's name)
    """``np.histogram(x, bins, range)`` for float32/int32 x with equal bins over ``range=(lo, hi)`` (required), except
    that x == hi is not counted (gpuws bins are half-open). Returns ``(counts (uint64), edges (float64))``; counts
    is an Array when x is."""
    if range is None:
        raise invalid("histogram: range=(lo, hi) is required (gpuws bins are half-open over [lo, hi))")
    lo, hi = float(range[0]), float(range[1])
    c = _Call("histogram", (x,), ctx, stream)
    dt = x.dtype if isinstance(x, Array) else np.asarray(x).dtype
    dt = np.dtype(np.int32) if dt == np.int32 else np.dtype(np.float32)
    dx = c.input(x, dt, "x")
    counts = Array(c.ctx, (int(bins),), np.uint64)
    check(lib.gpuws_histogram(c.s, GPUWS_DTYPES[dt], dx.size, dx.handle, lo, hi, int(bins), counts.handle))
    return c.done(counts), np.linspace(lo, hi, int(bins) + 1)


# ---- ufuncs (float32) ------------------------------------------------------------------------------------------------


def _ufunc(fname, cfunc, operands, out, stream, ctx):
    c = _Call(fname, tuple(operands.values()) + (out,), ctx, stream)
    shape = None
    ops, keep = [], []
    for name, x in operands.items():
        if isinstance(x, Array) or np.ndim(x) > 0:
            a = c.input(x, np.float32, name)
            if shape is not None and a.shape != shape:
                raise invalid("%s: %s has shape %s, the other arrays %s (no broadcasting; scalars are fine)"
                              % (fname, name, a.shape, shape))
            shape = a.shape
            ops.append(_lib.Operand(a.handle, 0.0))
            keep.append(a)  # alive until the call returns: the operand holds only its handle
        else:
            ops.append(_lib.Operand(None, float(x)))
    if shape is None:
        raise invalid("%s: at least one argument must be an array" % fname)
    o = c.output(out, shape, np.float32)
    size = math.prod(shape)
    check(cfunc(c.s, size, *ops, o.handle))
    return c.done(o)


def gaussian_pdf(x, mean, sigma, out=None, stream=None, ctx=None):
    """exp(-0.5 ((x - mean) / sigma)^2) / (sigma sqrt(2 pi)), float32; each argument an array or a scalar."""
    return _ufunc("gaussian_pdf", lib.gpuws_gaussian_pdf, dict(x=x, mean=mean, sigma=sigma), out, stream, ctx)


def polar_distance(rho1, theta1, rho2, theta2, out=None, stream=None, ctx=None):
    """Distance between (rho1, theta1) and (rho2, theta2) given in polar coordinates, float32."""
    return _ufunc("polar_distance", lib.gpuws_polar_distance,
                  dict(rho1=rho1, theta1=theta1, rho2=rho2, theta2=theta2), out, stream, ctx)


def make_pulses(i, period, amplitude, out=None, stream=None, ctx=None):
    """max(sin(i / period) - 0.3, 0) * amplitude, float32."""
    return _ufunc("make_pulses", lib.gpuws_make_pulses, dict(i=i, period=period, amplitude=amplitude), out, stream,
                  ctx)


def hypot(x, y, out=None, checked=False, stream=None, ctx=None):
    """sqrt(x^2 + y^2) without overflow, float32 (NumPy's special values). checked=True: NaN input raises
    InvalidArgumentError naming the first index instead."""
    f = lib.gpuws_hypot_checked if checked else lib.gpuws_hypot
    return _ufunc("hypot", f, dict(x=x, y=y), out, stream, ctx)


def zero_suppress(w, threshold, out=None, stream=None, ctx=None):
    """``np.where(w < threshold, 0, w)`` for float32 or int16 w (the comparison is exact)."""
    c = _Call("zero_suppress", (w, out), ctx, stream)
    dt = w.dtype if isinstance(w, Array) else np.asarray(w).dtype
    dt = np.dtype(np.int16) if dt == np.int16 else np.dtype(np.float32)
    dw = c.input(w, dt, "w")
    o = c.output(out, dw.shape, dt)
    check(lib.gpuws_zero_suppress(c.s, GPUWS_DTYPES[dt], dw.size, dw.handle, float(threshold), o.handle))
    return c.done(o)


def hidden_layer(greyscales, weights, out=None, stream=None, ctx=None):
    """tanh(greyscales / 255 * weights), float32 arrays of one shape (the assessment, fused in one pass)."""
    c = _Call("hidden_layer", (greyscales, weights, out), ctx, stream)
    g, w = c.input(greyscales, np.float32, "greyscales"), c.input(weights, np.float32, "weights")
    if g.shape != w.shape:
        raise invalid("hidden_layer: shapes %s and %s differ" % (g.shape, w.shape))
    o = c.output(out, g.shape, np.float32)
    check(lib.gpuws_hidden_layer(c.s, g.size, g.handle, w.handle, o.handle))
    return c.done(o)
