"""The out-of-core calls: host memory in, host memory out, streamed through one or several devices in row bands
(gpuws_convolve2d_host, gpuws_label_host and gpuws_find_sources_host; docs/scale.md) or in segments of outputs
(gpuws_convolve1d_host), and gpuws_sigma_clip_host, which clips host values on the host's cores.

They take NumPy arrays of any size (a np.memmap too) and write NumPy arrays; gpuws Arrays are refused, since their
data is on a device already (use convolve2d and label). A 2-D input whose rows are each contiguous and in order (a
row slice or a column window of a larger C-ordered image) goes to the library as it lies, with its row stride;
other layouts and dtypes are copied first, as the in-core calls do.
"""

import ctypes
from collections import namedtuple

import numpy as np

from . import _lib
from ._algorithms import (_BOUNDARIES, _MODES, _catalog, _clip_result, _enum, _float_dtype, _sources_options,
                          default_context)
from ._core import Array, Context, GPUWS_DTYPES, _error, check, invalid
from ._lib import lib

Bands = namedtuple("Bands", "band_rows bands")
Segments = namedtuple("Segments", "segment segments")


def _no_arrays(fname, **arrays):
    for name, x in arrays.items():
        if isinstance(x, Array):
            raise invalid("%s takes host memory: %s is a gpuws.Array (pass %s.get(), or call the in-core form)"
                          % (fname, name, name))


def _budget(fname, max_device_memory):
    """max_device_bytes of the C options: None (or 0) = the device's free memory."""
    if max_device_memory is None:
        return 0
    if isinstance(max_device_memory, bool) or not isinstance(max_device_memory, (int, np.integer)):
        raise invalid("%s: max_device_memory is a number of bytes (an int) or None, not %r"
                      % (fname, max_device_memory))
    if not 0 <= max_device_memory < 1 << 64:
        raise invalid("%s: max_device_memory %d is not a number of bytes" % (fname, max_device_memory))
    return int(max_device_memory)


def _contexts(fname, ctx, contexts):
    """The driving context's handle and the C array of the others (ctx, or contexts= in order)."""
    if contexts is None:
        if ctx is not None and not isinstance(ctx, Context):
            raise invalid("%s: ctx must be a gpuws.Context, not %s" % (fname, type(ctx).__name__))
        return (ctx or default_context()).handle, None, 0
    if ctx is not None:
        raise invalid("%s: give ctx= or contexts=, not both (contexts[0] drives the call)" % fname)
    if isinstance(contexts, Context):
        raise invalid("%s: contexts= is a list of Contexts (one Context goes to ctx=)" % fname)
    ctxs = list(contexts)
    if not ctxs:
        raise invalid("%s: contexts= is empty" % fname)
    for c in ctxs:
        if not isinstance(c, Context):
            raise invalid("%s: contexts= holds a %s, not a gpuws.Context" % (fname, type(c).__name__))
    handles = [c.handle for c in ctxs]  # raises for a closed one
    more = (ctypes.c_void_p * (len(handles) - 1))(*handles[1:]) if len(handles) > 1 else None
    return handles[0], more, len(handles) - 1


class _Progress:
    """A Python progress callback as the C function pointer. An exception it raises cannot cross the C call: the
    first one is kept, later calls are skipped, and it is raised once the call has returned."""

    def __init__(self, fname, fn, cfunctype):
        if fn is not None and not callable(fn):
            raise invalid("%s: progress must be a callable or None, not %s" % (fname, type(fn).__name__))
        self.fn = fn
        self.error = None
        # the C pointer lives as long as this object, which the caller keeps until the C call returns
        self.c = cfunctype(self._call) if fn is not None else None

    def _call(self, user, *args):
        if self.error is not None:
            return
        try:
            self.fn(*args)
        except BaseException as e:  # KeyboardInterrupt too: the call cannot stop, it is raised when it returns
            self.error = e

    def finish(self, status):
        """Raises the call's error (the callback's exception as its context), else the callback's exception."""
        error, self.error = self.error, None
        try:
            if status != 0:
                err = _error(status)
                err.__context__ = error
                raise err
            if error is not None:
                raise error
        finally:
            error = None  # no cycle through the traceback


def _label_host_options(fname, max_device_memory, progress, ctx, contexts):
    """The keywords of label_host's family as gpuws_label_host_options: the driving context's handle, the options
    and the progress callback (keep it until the C call has returned, then call its finish with the status)."""
    budget = _budget(fname, max_device_memory)
    prog = _Progress(fname, progress, _lib.LabelHostProgress)
    h, more, nmore = _contexts(fname, ctx, contexts)
    return h, _lib.label_host_options(budget, prog.c, more, nmore), prog


def _row_stride(a):
    """Elements from one row of the 2-D array a to the next when each row is contiguous and the rows lie in order
    (0 when a is C-contiguous), as the C calls' row_stride takes them; None when a must be copied."""
    e = a.itemsize
    h, w = a.shape
    if not a.flags.aligned or (w > 1 and a.strides[1] != e):
        return None
    if h <= 1 or a.flags.c_contiguous:
        return 0
    s = a.strides[0]
    if s <= 0 or s % e or s < w * e:
        return None
    return s // e


def _host_input(fname, name, x, dtype):
    """x as a 2-D NumPy array of dtype and its row stride, without a copy where its layout allows one."""
    a = np.asarray(x)
    if a.ndim != 2:
        raise invalid("%s: %s must be 2-D, not of shape %s" % (fname, name, a.shape))
    stride = _row_stride(a) if a.dtype == dtype else None
    if stride is None:
        a, stride = np.ascontiguousarray(a, dtype=dtype), 0
    return a, stride


def _host_output(fname, out, shape, dtype):
    if out is None:
        return np.empty(shape, dtype)
    if not isinstance(out, np.ndarray):
        raise invalid("%s: out must be a NumPy array, not %s" % (fname, type(out).__name__))
    if (out.shape != shape or out.dtype != dtype or not out.flags.c_contiguous or not out.flags.writeable
            or not out.flags.aligned):
        raise invalid("%s: out must be a writeable C-contiguous %s array of shape %s, not %s of %s%s"
                      % (fname, np.dtype(dtype), shape, out.dtype, out.shape,
                         "" if out.flags.c_contiguous and out.flags.writeable else " (not C-contiguous or read-only)"))
    return out


def _convolve2d_modes(fname, mode, boundary):
    boundary = {"symmetric": "symm", "circular": "wrap"}.get(boundary, boundary)
    return _enum(fname, "mode", mode, _MODES), _enum(fname, "boundary", boundary, _BOUNDARIES)


def convolve2d_host(in1, in2, mode="full", boundary="fill", fillvalue=0, max_device_memory=None, progress=None,
                    out=None, ctx=None, contexts=None):
    """``convolve2d`` of NumPy arrays of any size (gpuws_convolve2d_host): the image goes through the device in bands
    of output rows when it, the output and the kernel do not fit ``max_device_memory`` bytes (None: the device's
    free memory); the result is byte for byte convolve2d's. ``progress(band, bands, rows_done, out_rows)`` is called
    after each band is in the output, in band order. ``contexts`` (a list of Contexts of one backend, e.g.
    gpuws.contexts()) share the bands instead of ``ctx``, the budget holding on each. Returns the output (a new
    float32/float64 array, or ``out``, a C-contiguous one of the output's shape and dtype)."""
    fname = "convolve2d_host"
    m, bnd = _convolve2d_modes(fname, mode, boundary)
    _no_arrays(fname, in1=in1, in2=in2, out=out)
    budget = _budget(fname, max_device_memory)
    prog = _Progress(fname, progress, _lib.Convolve2dProgress)
    h, more, nmore = _contexts(fname, ctx, contexts)
    dt = _float_dtype(fname, in1, in2)
    img, stride = _host_input(fname, "in1", in1, dt)
    k, kstride = _host_input(fname, "in2", in2, dt)
    if kstride:  # the kernel has no row stride
        k = np.ascontiguousarray(k)
    oh, ow = ctypes.c_size_t(), ctypes.c_size_t()
    check(lib.gpuws_convolve2d_output_shape(img.shape[0], img.shape[1], k.shape[0], k.shape[1], m,
                                            ctypes.byref(oh), ctypes.byref(ow)))
    o = _host_output(fname, out, (oh.value, ow.value), dt)
    opts = _lib.convolve2d_host_options(m, bnd, float(fillvalue), budget, prog.c, more, nmore)
    prog.finish(lib.gpuws_convolve2d_host(h, GPUWS_DTYPES[dt], img.ctypes.data, img.shape[0], img.shape[1], stride,
                                          k.ctypes.data, k.shape[0], k.shape[1], ctypes.byref(opts), o.ctypes.data))
    return o


def convolve2d_host_bands(shape, kernel_shape, dtype=np.float32, mode="full", boundary="fill",
                          max_device_memory=None, ctx=None, contexts=None):
    """How convolve2d_host would split an image of ``shape`` convolved with a kernel of ``kernel_shape``
    (gpuws_convolve2d_host_bands): ``Bands(band_rows, bands)``, output rows per band (the last may have fewer) and
    the number of bands; one band when it runs in-core. Reads no image; its errors are convolve2d_host's."""
    fname = "convolve2d_host_bands"
    m, bnd = _convolve2d_modes(fname, mode, boundary)
    budget = _budget(fname, max_device_memory)
    h, more, nmore = _contexts(fname, ctx, contexts)
    dt = np.dtype(dtype)
    if dt not in (np.float32, np.float64):
        raise invalid("%s: dtype %s; convolve2d_host computes on float32 or float64" % (fname, dt))
    (ih, iw), (kh, kw) = _shape2(fname, "shape", shape), _shape2(fname, "kernel_shape", kernel_shape)
    opts = _lib.convolve2d_host_options(m, bnd, 0.0, budget, None, more, nmore)
    rows, bands = ctypes.c_size_t(), ctypes.c_size_t()
    check(lib.gpuws_convolve2d_host_bands(h, GPUWS_DTYPES[dt], ih, iw, kh, kw, ctypes.byref(opts), ctypes.byref(rows),
                                          ctypes.byref(bands)))
    return Bands(rows.value, bands.value)


def convolve1d_host(a, v, mode="full", max_device_memory=None, out=None, ctx=None, contexts=None):
    """``numpy.convolve(a, v, mode)`` of 1-D NumPy arrays of any length (gpuws_convolve1d_host): the longer input
    goes through the device in segments of outputs when both and the output do not fit ``max_device_memory`` bytes
    (None: the device's free memory); the result is byte for byte convolve1d's. ``contexts`` share the segments as
    for convolve2d_host. Returns the output (a new float32/float64 array, or ``out``, a C-contiguous one of the
    output's length and dtype)."""
    fname = "convolve1d_host"
    m = _enum(fname, "mode", mode, _MODES)
    _no_arrays(fname, a=a, v=v, out=out)
    budget = _budget(fname, max_device_memory)
    h, more, nmore = _contexts(fname, ctx, contexts)
    dt = _float_dtype(fname, a, v)
    x, y = (np.ascontiguousarray(z, dtype=dt) for z in (a, v))
    for name, z in (("a", x), ("v", y)):
        if z.ndim != 1:
            raise invalid("%s: %s must be 1-D, not of shape %s" % (fname, name, z.shape))
    n = ctypes.c_size_t()
    check(lib.gpuws_convolve1d_output_length(x.size, y.size, m, ctypes.byref(n)))
    o = _host_output(fname, out, (n.value,), dt)
    opts = _lib.convolve1d_host_options(budget, more, nmore)
    check(lib.gpuws_convolve1d_host(h, GPUWS_DTYPES[dt], x.ctypes.data, x.size, y.ctypes.data, y.size, m,
                                    ctypes.byref(opts), o.ctypes.data))
    return o


def convolve1d_host_segments(n, m, dtype=np.float32, mode="full", max_device_memory=None, ctx=None, contexts=None):
    """How convolve1d_host would split inputs of ``n`` and ``m`` elements (gpuws_convolve1d_host_segments):
    ``Segments(segment, segments)``, outputs per segment (the last may have fewer) and the number of segments; one
    segment when it runs in-core. Reads no array; its errors are convolve1d_host's."""
    fname = "convolve1d_host_segments"
    md = _enum(fname, "mode", mode, _MODES)
    budget = _budget(fname, max_device_memory)
    h, more, nmore = _contexts(fname, ctx, contexts)
    dt = np.dtype(dtype)
    if dt not in (np.float32, np.float64):
        raise invalid("%s: dtype %s; convolve1d_host computes on float32 or float64" % (fname, dt))
    opts = _lib.convolve1d_host_options(budget, more, nmore)
    seg, segs = ctypes.c_size_t(), ctypes.c_size_t()
    check(lib.gpuws_convolve1d_host_segments(h, GPUWS_DTYPES[dt], int(n), int(m), md, ctypes.byref(opts),
                                             ctypes.byref(seg), ctypes.byref(segs)))
    return Segments(seg.value, segs.value)


def _shape2(fname, name, shape):
    try:
        rows, cols = (int(s) for s in shape)
    except (TypeError, ValueError):
        raise invalid("%s: %s must be (rows, columns), not %r" % (fname, name, shape)) from None
    if rows < 0 or cols < 0:
        raise invalid("%s: %s %r has a negative dimension" % (fname, name, shape))
    return rows, cols


def label_host(mask, connectivity=4, max_device_memory=None, progress=None, out=None, ctx=None, contexts=None):
    """``label`` of a NumPy mask of any size (gpuws_label_host): through the device in bands of rows (twice on
    GPUs) when the mask and its labels do not fit ``max_device_memory`` bytes (None: the device's free memory);
    labels and n are label's (scipy.ndimage.label's numbering) for any banding. ``progress(pass_, passes, band,
    bands, rows_done, rows)`` is called after each band of each pass, in order (one pass in-core or on CPU devices,
    else pass 1 then pass 2).
    ``contexts`` share the bands as for convolve2d_host. Returns ``(labels, n)``: int32 labels (a new array, or
    ``out``, C-contiguous of the mask's shape)."""
    fname = "label_host"
    if connectivity not in (4, 8):
        raise invalid("%s: connectivity must be 4 or 8, not %r" % (fname, connectivity))
    _no_arrays(fname, mask=mask, out=out)
    h, opts, prog = _label_host_options(fname, max_device_memory, progress, ctx, contexts)
    m = np.asarray(mask)
    if m.ndim != 2:
        raise invalid("%s: mask must be 2-D, not of shape %s" % (fname, m.shape))
    stride = None
    if m.dtype in (np.bool_, np.uint8, np.int8):  # a byte per pixel: non-zero bytes are the foreground already
        m = m.view(np.uint8)
        stride = _row_stride(m)
    if stride is None:
        m, stride = np.ascontiguousarray(m != 0).view(np.uint8), 0
    o = _host_output(fname, out, m.shape, np.int32)
    if m.size == 0:  # gpuws_label_host takes no empty image; SciPy labels it with nothing
        return o, 0
    n = ctypes.c_size_t()
    prog.finish(lib.gpuws_label_host(h, m.shape[1], m.shape[0], m.ctypes.data, stride * m.itemsize, connectivity,
                                     ctypes.byref(opts), o.ctypes.data, ctypes.byref(n)))
    return o, n.value


def label_host_bands(shape, max_device_memory=None, ctx=None, contexts=None):
    """How label_host would split a mask of ``shape`` (gpuws_label_host_bands): ``Bands(band_rows, bands)``, rows
    per band (the last may have fewer) and the number of bands; one band when it runs in-core."""
    fname = "label_host_bands"
    h, opts, _ = _label_host_options(fname, max_device_memory, None, ctx, contexts)
    rows_, cols = _shape2(fname, "shape", shape)
    rows, bands = ctypes.c_size_t(), ctypes.c_size_t()
    check(lib.gpuws_label_host_bands(h, cols, rows_, ctypes.byref(opts), ctypes.byref(rows), ctypes.byref(bands)))
    return Bands(rows.value, bands.value)


def sigma_clip_host(data, kappa=3.0, max_iterations=100, ctx=None):
    """``sigma_clip`` of NumPy values of any number (gpuws_sigma_clip_host): the same loop on the host's cores, in
    exact sums, without sending the values to a device; count and median are sigma_clip's, mean and std the exact
    ones rounded once. ``data``: float32 of any shape (other dtypes are converted). Returns a SigmaClipResult."""
    fname = "sigma_clip_host"
    _no_arrays(fname, data=data)
    h = _contexts(fname, ctx, None)[0]
    d = np.ascontiguousarray(data, dtype=np.float32).reshape(-1)
    opts = _lib.sigma_clip_options(float(kappa), int(max_iterations))
    r = _lib.SigmaClipResult()
    check(lib.gpuws_sigma_clip_host(h, d.ctypes.data, d.size, ctypes.byref(opts), ctypes.byref(r)))
    return _clip_result(r)


def find_sources_host(image, threshold_sigma=5.0, threshold_abs=None, kappa=3.0, max_iterations=100, connectivity=4,
                      return_labels=False, max_device_memory=None, contexts=None, progress=None, ctx=None):
    """``find_sources`` of a NumPy image of any size (gpuws_find_sources_host): the clipping (sigma_clip_host), the
    threshold and the measurement on the host's cores, the labelling with label_host, whose ``max_device_memory``,
    ``contexts`` and ``progress`` these are. Labels and the number of sources are find_sources'; the ``timings_ms``
    are the host clock's. Returns a Catalog."""
    fname = "find_sources_host"
    _no_arrays(fname, image=image)
    opts = _sources_options(fname, threshold_sigma, threshold_abs, kappa, max_iterations, connectivity,
                            return_labels)
    h, label_opts, prog = _label_host_options(fname, max_device_memory, progress, ctx, contexts)
    img = np.ascontiguousarray(image, dtype=np.float32)
    if img.ndim != 2:
        raise invalid("%s: image must be 2-D, not of shape %s" % (fname, img.shape))
    cat = ctypes.POINTER(_lib.Catalog)()
    status = lib.gpuws_find_sources_host(h, img.ctypes.data, img.shape[1], img.shape[0], ctypes.byref(opts),
                                         ctypes.byref(label_opts), ctypes.byref(cat))
    found = _catalog(cat, img.shape) if status == 0 else None  # freed also when the callback's exception is raised
    prog.finish(status)
    return found
