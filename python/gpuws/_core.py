"""Errors, backends and devices, contexts, streams, events and device arrays."""

import atexit
import ctypes
import math
import weakref
from collections import namedtuple

import numpy as np

from . import _lib
from ._lib import lib

# ---- errors -------------------------------------------------------------------------------------------------------


class Error(Exception):
    """A gpuws call failed. ``status`` is the C status code, ``name`` its name ("GPUWS_ERR_INVALID_ARGUMENT") and
    ``detail`` the C library's detail message (gpuws_last_error()), or the Python layer's own for errors found
    before any C call."""

    status = None

    def __init__(self, detail, status=None, name=None):
        if status is not None:
            self.status = status
        self.name = name or _status_name(self.status)
        self.detail = detail
        super().__init__("%s: %s" % (self.name, detail))


# One class per status of GPUWS_STATUS_MAP (include/gpuws.h); the standard exception each also is lets
# `except ValueError` and the like work as a NumPy user expects.
class InvalidArgumentError(Error, ValueError): status = -1
class OutOfRangeError(Error, IndexError): status = -2
class OverflowError(Error, ArithmeticError): status = -3  # noqa: A001 (gpuws.OverflowError)
class OutOfMemoryError(Error, MemoryError): status = -4
class UnsupportedError(Error, NotImplementedError): status = -5
class BackendUnavailableError(Error, RuntimeError): status = -6
class UnknownBackendError(Error, ValueError): status = -7
class NoDeviceError(Error, LookupError): status = -8
class WrongContextError(Error, ValueError): status = -9
class KernelNotFoundError(Error, LookupError): status = -10


class BuildError(Error, RuntimeError):
    """A kernel did not compile: ``log`` holds the compiler's whole output."""
    status = -11
    log = ""


class LaunchConfigError(Error, ValueError): status = -12
class ArgumentsError(Error, TypeError): status = -13
class DeviceError(Error, RuntimeError): status = -14
class NotReadyError(Error, RuntimeError): status = -15
class IOError(Error, OSError): status = -16  # noqa: A001
class FormatError(Error, ValueError): status = -17
class NotConvergedError(Error, ArithmeticError): status = -18
class InternalError(Error, RuntimeError): status = -19


ERRORS = {c.status: c for c in (
    InvalidArgumentError, OutOfRangeError, OverflowError, OutOfMemoryError, UnsupportedError, BackendUnavailableError,
    UnknownBackendError, NoDeviceError, WrongContextError, KernelNotFoundError, BuildError, LaunchConfigError,
    ArgumentsError, DeviceError, NotReadyError, IOError, FormatError, NotConvergedError, InternalError)}


def _status_name(status):
    return lib.gpuws_status_name(status).decode() if status is not None else "GPUWS_ERROR"


def _error(status, detail=None):
    cls = ERRORS.get(status, Error)
    if detail is None:
        detail = lib.gpuws_last_error().decode(errors="replace")
    return cls(detail, status=status)


def check(status):
    """Raises the Error subclass of a failed status with the C library's detail message."""
    if status != 0:
        raise _error(status)


def invalid(detail):
    return InvalidArgumentError(detail)


# ---- backends and devices -----------------------------------------------------------------------------------------

BACKENDS = ("cpu", "opencl", "cuda")
Backend = namedtuple("Backend", "name built_in available reason")
Device = namedtuple("Device", "backend index name vendor platform type driver_version global_mem_bytes "
                              "max_alloc_bytes compute_units max_block_size warp_size shared_mem_bytes fp64 "
                              "unified_memory")
_DEVICE_TYPES = ("cpu", "gpu", "other")


def backends():
    """Every backend, built in or not: ``Backend(name, built_in, available, reason)``."""
    out = []
    for kind, name in enumerate(BACKENDS):
        info = _lib.BackendInfo()
        check(lib.gpuws_backend_get_info(kind, ctypes.byref(info)))
        out.append(Backend(name, bool(info.built_in), bool(info.available), info.reason.decode()))
    return out


def _device(info, index):
    return Device(BACKENDS[info.backend], index, info.name.decode(), info.vendor.decode(), info.platform.decode(),
                  _DEVICE_TYPES[info.type], info.driver_version.decode(), info.global_mem_bytes,
                  info.max_alloc_bytes, info.compute_units, info.max_block_size, info.warp_size,
                  info.shared_mem_bytes, bool(info.fp64), bool(info.unified_memory))


def devices(backend=None, platform=None):
    """The devices of one backend (or of every available one), in the index order GPUWS_DEVICE and
    ``Context(device=)`` use. ``platform`` narrows OpenCL platforms by a case-insensitive name substring."""
    names = [backend] if backend is not None else [b.name for b in backends() if b.available]
    out = []
    plat = platform.encode() if platform is not None else None
    for name in names:
        kind = ctypes.c_int()
        check(lib.gpuws_backend_from_name(name.encode(), ctypes.byref(kind)))
        count = ctypes.c_size_t()
        check(lib.gpuws_device_count(kind.value, plat, ctypes.byref(count)))
        for i in range(count.value):
            info = _lib.DeviceInfo()
            check(lib.gpuws_device_get_info(kind.value, plat, i, ctypes.byref(info)))
            out.append(_device(info, i))
    return out


# ---- dtypes -------------------------------------------------------------------------------------------------------

# gpuws_dtype (include/gpuws/algorithms.h) of each NumPy dtype the algorithms take.
GPUWS_DTYPES = {np.dtype(np.float32): 0, np.dtype(np.float64): 1, np.dtype(np.int32): 2, np.dtype(np.uint32): 3,
                np.dtype(np.int16): 4, np.dtype(np.uint8): 5, np.dtype(np.int64): 6}
# What an Array may hold: the algorithms' types and the counts some of them write (uint64).
ARRAY_DTYPES = frozenset(GPUWS_DTYPES) | {np.dtype(np.uint64), np.dtype(np.int8), np.dtype(np.uint16)}


def _array_dtype(dtype):
    if dtype.__class__ is np.dtype and dtype in ARRAY_DTYPES:  # the common case, quickly
        return dtype
    try:
        dt = np.dtype(dtype)
    except TypeError as e:
        raise invalid("dtype %r: %s" % (dtype, e)) from None
    if dt.newbyteorder("=") != dt and dt.byteorder not in ("=", "|"):
        raise invalid("dtype %s is not in the machine's byte order" % dt)
    if dt not in ARRAY_DTYPES:
        raise invalid("dtype %s: a gpuws Array holds %s" % (dt, ", ".join(sorted(str(d) for d in ARRAY_DTYPES))))
    return dt


def _shape(shape):
    if shape.__class__ is tuple and all(s.__class__ is int and s >= 0 for s in shape):  # NumPy's shapes
        return shape
    if isinstance(shape, (int, np.integer)):
        shape = (shape,)
    try:
        shape = tuple(int(s) for s in shape)
    except TypeError:
        raise invalid("shape %r is not an int or a tuple of ints" % (shape,)) from None
    if any(s < 0 for s in shape):
        raise invalid("shape %r has a negative dimension" % (shape,))
    return shape


# ---- contexts, streams, events --------------------------------------------------------------------------------------


class _Owned:
    """A C handle that a context owns: released before the context, and dead (None) once released."""

    __slots__ = ("handle", "_destroy", "keep", "__weakref__")  # keep: what must outlive the handle

    def __init__(self, handle, destroy):
        self.handle = handle
        self._destroy = destroy

    def release(self):
        h, self.handle = self.handle, None
        if h:
            self._destroy(h)

    def __del__(self):
        try:
            self.release()
        except Exception:  # interpreter shutdown: the library may be gone already
            pass


def _context_options(backend, device, platform):
    if device is not None and (not isinstance(device, (int, np.integer)) or device < 0):
        raise invalid("device %r: a device index is an int >= 0 (None = GPUWS_DEVICE)" % (device,))
    return _lib.context_options(backend.encode() if backend is not None else None,
                                -1 if device is None else int(device),
                                platform.encode() if platform is not None else None)


class Context:
    """A device: ``Context(backend=None, device=None, platform=None)``.

    backend: "cpu", "opencl", "cuda", or a comma list tried in order ("opencl,cpu"); None = GPUWS_BACKEND, else the
    best available (cuda, opencl, cpu). device: index within the backend; None = GPUWS_DEVICE, else 0. platform:
    OpenCL platform name substring; None = GPUWS_OPENCL_PLATFORM. There is never a silent fallback to a backend
    that was not named (gpuws_context_create). Use as a context manager, or call close(); every Array, Stream,
    Event and kernel of the context is released with it and raises afterwards."""

    def __init__(self, backend=None, device=None, platform=None):
        opts = _context_options(backend, device, platform)
        h = ctypes.c_void_p()
        self._handle = None
        check(lib.gpuws_context_create(ctypes.byref(h), ctypes.byref(opts)))
        self._adopt(h.value, device)

    @classmethod
    def _from_handle(cls, handle):
        """A Context that owns a gpuws_context made elsewhere (gpuws_contexts_create)."""
        self = cls.__new__(cls)
        self._handle = None
        self._adopt(handle, None)
        return self

    def _adopt(self, handle, device):
        self._owned = weakref.WeakValueDictionary()  # id -> _Owned, released before the context
        self._handle = handle
        _open_contexts.add(self)
        kind = ctypes.c_int()
        check(lib.gpuws_context_get_backend(self._handle, ctypes.byref(kind)))
        self.backend = BACKENDS[kind.value]
        info = _lib.DeviceInfo()
        check(lib.gpuws_context_get_device_info(self._handle, ctypes.byref(info)))
        self.device_index = None if device is None else int(device)  # None: GPUWS_DEVICE's choice
        self.device = _device(info, self.device_index)
        self.default_stream = Stream._default(self)

    # -- lifetime --
    @property
    def handle(self):
        if self._handle is None:
            raise invalid("the context is closed")
        return self._handle

    @property
    def closed(self):
        return self._handle is None

    def _make(self, create, destroy):
        """A new object of the context: create(ctx, &handle), owned until destroy(handle)."""
        h = ctypes.c_void_p()
        check(create(self.handle, ctypes.byref(h)))
        return self._own(h.value, destroy)

    def _own(self, handle, destroy):
        o = _Owned(handle, destroy)
        self._owned[id(o)] = o
        return o

    def close(self):
        """Waits for the context's work and releases it with every object made from it (idempotent)."""
        if self._handle is None:
            return
        from ._dlpack import exported_buffers
        shared = exported_buffers(self)  # memory a DLPack consumer still holds
        for o in list(self._owned.values()):
            if o not in shared:
                o.release()
        h, self._handle = self._handle, None
        if shared:  # destroyed when the last consumer lets go (python/gpuws/_dlpack.py)
            self._pending_destroy = h
        else:
            lib.gpuws_context_destroy(h)

    def __del__(self):
        try:
            if getattr(self, "_handle", None) is not None:
                self.close()
        except Exception:  # interpreter shutdown
            pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __repr__(self):
        state = "closed" if self.closed else "%s, %s" % (self.backend, self.device.name)
        return "<gpuws.Context %s>" % state

    def synchronize(self):
        check(lib.gpuws_context_synchronize(self.handle))

    # -- objects --
    def stream(self):
        """A new in-order queue (gpuws_stream_create)."""
        return Stream(self)

    def event(self):
        return Event(self)

    def empty(self, shape, dtype=np.float32):
        """An Array of undefined contents."""
        return Array(self, shape, dtype)

    def zeros(self, shape, dtype=np.float32):
        a = Array(self, shape, dtype)
        a.fill(0)
        return a

    def full(self, shape, value, dtype=np.float32):
        a = Array(self, shape, dtype)
        a.fill(value)
        return a

    def from_dlpack(self, x, stream=None):
        """An Array of this context over ``x``'s memory (DLPack; no copy where the memory is this context's kind):
        gpuws.from_dlpack."""
        from ._dlpack import from_dlpack
        return from_dlpack(x, self, stream)

    def asarray(self, a, dtype=None, stream=None):
        """An Array holding a copy of ``a`` (a NumPy array or anything np.asarray takes; non-contiguous and
        Fortran-ordered input is copied into C order first). An Array of this context is returned as it is when
        its dtype matches (no copy); an Array of another context is refused (WrongContextError)."""
        if isinstance(a, Array):
            if a.context is not self:
                raise WrongContextError("asarray: the Array belongs to %r, not %r" % (a.context, self))
            if dtype is None or np.dtype(dtype) == a.dtype:
                return a
            raise invalid("asarray: the Array is %s, not %s (convert it on the host: a.get().astype(...))"
                          % (a.dtype, np.dtype(dtype)))
        host = np.asarray(a, dtype=dtype)
        if dtype is None and host.dtype == np.float16:
            raise invalid("asarray: float16 is not a gpuws dtype")
        arr = Array(self, host.shape, host.dtype)
        arr.set(host, stream=stream)
        return arr


_open_contexts = weakref.WeakSet()


@atexit.register
def _close_all():
    # At exit, before the interpreter tears objects down in no useful order: each context releases what was made
    # from it first, as close() does (else the C library warns of leaked buffers).
    for ctx in list(_open_contexts):
        ctx.close()


_MAX_CONTEXTS = 1024  # room for gpuws_contexts_create: more contexts than any host has devices


def contexts(backend=None, device=None, platform=None):
    """Contexts on the devices a GPUWS_DEVICE list names, within the backend ``Context(backend, device, platform)``
    would choose (gpuws_contexts_create): ``device`` given, unset or one index, one context, that one; "all", device
    0 and every other device of its backend of the same type (and OpenCL platform); "0,1,...", those device indices,
    in that order (an index may repeat: two contexts on one device). Returns a list of Contexts, each closed as any
    Context is; pass it as ``contexts=`` to convolve2d_host and label_host to share their bands."""
    opts = _context_options(backend, device, platform)
    handles = (ctypes.c_void_p * _MAX_CONTEXTS)()
    n = ctypes.c_size_t()
    check(lib.gpuws_contexts_create(ctypes.byref(opts), _MAX_CONTEXTS, handles, ctypes.byref(n)))
    out = []
    try:
        for i in range(n.value):
            out.append(Context._from_handle(handles[i]))
    except BaseException:
        for c in out:
            c.close()
        for i in range(len(out) + 1, n.value):  # handle len(out) is closed by its Context's __del__
            lib.gpuws_context_destroy(handles[i])
        raise
    return out


class Stream:
    """An in-order queue of work on a context (gpuws_stream). Work on one stream runs in order; streams overlap."""

    def __init__(self, ctx):
        self.context = ctx
        self._o = ctx._make(lib.gpuws_stream_create, lib.gpuws_stream_destroy)

    @classmethod
    def _default(cls, ctx):
        s = cls.__new__(cls)
        s.context = ctx
        s._o = None  # NULL: the context's default stream
        return s

    @property
    def handle(self):
        self.context.handle  # raises once the context is closed
        if self._o is None:
            return None
        if self._o.handle is None:
            raise invalid("the stream was closed")
        return self._o.handle

    @property
    def native(self):
        """The backend's own queue as an int: the cudaStream_t on CUDA, the cl_command_queue on OpenCL; None on the
        CPU backend (gpuws_stream_get_native)."""
        from ._dlpack import native_stream
        return native_stream(self.context, self if self._o is not None else None)

    def synchronize(self):
        h = self.handle
        if h is None:
            # the default stream: gpuws_stream_synchronize takes the stream itself
            check(lib.gpuws_context_synchronize(self.context.handle))
        else:
            check(lib.gpuws_stream_synchronize(h))

    def close(self):
        if self._o is not None:
            self._o.release()

    def record(self, event=None):
        """Records an event (a new one unless given) after the work queued so far; returns it."""
        event = event or Event(self.context)
        event.record(self)
        return event

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __repr__(self):
        return "<gpuws.Stream %s>" % ("default" if self._o is None else hex(self._o.handle or 0))


class Event:
    """A point in a stream's work (gpuws_event): record, synchronize, and time between two."""

    def __init__(self, ctx):
        self.context = ctx
        self._o = ctx._make(lib.gpuws_event_create, lib.gpuws_event_destroy)

    @property
    def handle(self):
        self.context.handle
        if self._o.handle is None:
            raise invalid("the event was closed")
        return self._o.handle

    def record(self, stream=None):
        s = _stream(self.context, stream)
        check(lib.gpuws_event_record(self.handle, s))
        return self

    def synchronize(self):
        check(lib.gpuws_event_synchronize(self.handle))

    def elapsed_ms(self, end):
        """Milliseconds from this event to ``end`` (both recorded; waits for both)."""
        ms = ctypes.c_double()
        check(lib.gpuws_event_elapsed_ms(self.handle, end.handle, ctypes.byref(ms)))
        return ms.value

    def close(self):
        self._o.release()


def _stream(ctx, stream):
    """The C handle of ``stream`` (None = the context's default stream) after checking it belongs to ctx."""
    if stream is None:
        ctx.handle
        return None
    if not isinstance(stream, Stream):
        raise invalid("stream must be a gpuws.Stream or None, not %s" % type(stream).__name__)
    if stream.context is not ctx:
        raise WrongContextError("the stream belongs to %r, not %r" % (stream.context, ctx))
    return stream.handle


# ---- arrays -------------------------------------------------------------------------------------------------------


class Array:
    """A device buffer with a shape and a dtype, C order (row-major), on one context.

    Make one with ``ctx.asarray(numpy_array)``, ``ctx.empty``, ``ctx.zeros``, or as an algorithm's result; read it
    back with ``get()`` (or np.asarray). Every function of gpuws takes an Array or a NumPy array."""

    __array_priority__ = 100

    def __init__(self, ctx, shape, dtype=np.float32, _buffer=None):
        self.context = ctx
        self.shape = _shape(shape)
        self.dtype = _array_dtype(dtype)
        self.size = math.prod(self.shape)
        self.nbytes = self.size * self.dtype.itemsize
        if _buffer is not None:
            self._buf = _buffer
        else:
            # gpuws buffers are never empty: an empty Array holds one element nobody reads, so that the calls
            # that take n == 0 (a sum of nothing is 0) get a live buffer as the C API asks
            h = ctypes.c_void_p()
            check(lib.gpuws_buffer_create(ctx.handle, self.nbytes or self.dtype.itemsize, ctypes.byref(h)))
            self._buf = ctx._own(h.value, lib.gpuws_buffer_destroy)

    @property
    def ndim(self):
        return len(self.shape)

    @property
    def handle(self):
        """The gpuws_buffer; raises once the context is closed."""
        self.context.handle
        if self._buf.handle is None:
            raise invalid("the Array's buffer was released")
        return self._buf.handle

    def __len__(self):
        if not self.shape:
            raise TypeError("len() of a 0-d gpuws.Array")
        return self.shape[0]

    def __repr__(self):
        if self.context.closed:
            return "<gpuws.Array %s %s, context closed>" % (self.shape, self.dtype)
        if self.size > 1000:  # no download of a large array to print it
            return "<gpuws.Array %s %s on %s>" % (self.shape, self.dtype, self.context.backend)
        return "gpuws.Array(%s, backend=%s)" % (np.array2string(self.get(), separator=", "), self.context.backend)

    def set(self, host, stream=None):
        """Copies a host array of the same shape (converted to this dtype, C order) into the Array."""
        src = np.ascontiguousarray(host, dtype=self.dtype)
        if src.shape != self.shape:
            raise invalid("set: the host array's shape %s is not the Array's %s" % (src.shape, self.shape))
        h, s = self.handle, _stream(self.context, stream)
        if self.nbytes == 0:
            return
        if s is None:
            check(lib.gpuws_buffer_write(h, 0, src.ctypes.data, self.nbytes))
        else:  # ordered on that stream; the host array must live until it has run
            check(lib.gpuws_buffer_write_async(s, h, 0, src.ctypes.data, self.nbytes))
            check(lib.gpuws_stream_synchronize(s))

    def get(self, stream=None, out=None):
        """A NumPy copy of the contents, after the work queued on ``stream`` (None = the default stream)."""
        if out is None:
            out = np.empty(self.shape, self.dtype)
        elif out.shape != self.shape or out.dtype != self.dtype or not out.flags.c_contiguous:
            raise invalid("get: out must be a C-contiguous %s array of shape %s" % (self.dtype, self.shape))
        h, s = self.handle, _stream(self.context, stream)
        if self.nbytes == 0:
            return out
        if s is None:
            check(lib.gpuws_buffer_read(h, 0, out.ctypes.data, self.nbytes))
        else:
            check(lib.gpuws_buffer_read_async(s, h, 0, out.ctypes.data, self.nbytes))
            check(lib.gpuws_stream_synchronize(s))
        return out

    def __array__(self, dtype=None, copy=None):
        a = self.get()
        return a if dtype is None else a.astype(dtype)

    # -- sharing memory without a copy (python/gpuws/_dlpack.py) --
    def __dlpack__(self, stream=None):
        """DLPack export: host memory on the CPU backend, device memory on CUDA (BufferError on OpenCL)."""
        from ._dlpack import to_dlpack
        return to_dlpack(self, stream)

    def __dlpack_device__(self):
        from ._dlpack import dlpack_device
        return dlpack_device(self)

    @property
    def __cuda_array_interface__(self):
        """Version 3 of the CUDA array interface, for Arrays of the CUDA backend (others have no such attribute)."""
        from ._dlpack import cuda_array_interface
        return cuda_array_interface(self)

    def fill(self, value, stream=None):
        """Sets every element to ``value`` (converted to the dtype)."""
        pattern = np.array(value, dtype=self.dtype)
        h, s = self.handle, _stream(self.context, stream)
        if self.nbytes and s is None:
            check(lib.gpuws_buffer_fill(h, 0, pattern.ctypes.data, pattern.nbytes, self.nbytes))
        elif self.nbytes:
            check(lib.gpuws_buffer_fill_async(s, h, 0, pattern.ctypes.data, pattern.nbytes, self.nbytes))
            check(lib.gpuws_stream_synchronize(s))  # the pattern is host memory of this call
        return self

    def copy(self, stream=None):
        """A new Array with the same contents (a device-to-device copy)."""
        out = Array(self.context, self.shape, self.dtype)
        if self.nbytes:
            check(lib.gpuws_buffer_copy_async(_stream(self.context, stream), out.handle, 0, self.handle, 0,
                                              self.nbytes))
        return out

    def reshape(self, *shape):
        """The same buffer with another shape of as many elements (no copy)."""
        if len(shape) == 1 and not isinstance(shape[0], (int, np.integer)):
            shape = shape[0]
        shape = list(shape)
        if shape.count(-1) == 1:
            known = math.prod(s for s in shape if s != -1)
            shape[shape.index(-1)] = self.size // known if known else 0
        shape = _shape(shape)
        if math.prod(shape) != self.size:
            raise invalid("reshape: %d elements cannot have shape %s" % (self.size, shape))
        return Array(self.context, shape, self.dtype, _buffer=self._buf)

    def ravel(self):
        return self.reshape(self.size)
