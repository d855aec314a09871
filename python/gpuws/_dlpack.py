"""DLPack (the "dltensor" capsule of dlpack.h, version 0.x ABI) and the CUDA array interface, over
gpuws_buffer_get_pointer and gpuws_buffer_wrap: Arrays of the CPU backend share host memory with NumPy, those of
CUDA device memory with CuPy and PyTorch, without a copy. OpenCL buffers have no address: their Arrays are
exported by copy only (``np.asarray``)."""

import ctypes
import os

import numpy as np

from . import _core
from ._core import Array, UnsupportedError, check, invalid
from ._lib import lib

KDL_CPU, KDL_CUDA, KDL_CUDA_HOST = 1, 2, 3
_DL_CODES = {"i": 0, "u": 1, "f": 2}


class DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", DLDevice), ("ndim", ctypes.c_int32), ("dtype", DLDataType),
                ("shape", ctypes.POINTER(ctypes.c_int64)), ("strides", ctypes.POINTER(ctypes.c_int64)),
                ("byte_offset", ctypes.c_uint64)]


class DLManagedTensor(ctypes.Structure):
    pass


_Deleter = ctypes.CFUNCTYPE(None, ctypes.POINTER(DLManagedTensor))
DLManagedTensor._fields_ = [("dl_tensor", DLTensor), ("manager_ctx", ctypes.c_void_p), ("deleter", _Deleter)]

_api = ctypes.pythonapi
_Destructor = ctypes.CFUNCTYPE(None, ctypes.c_void_p)
_api.PyCapsule_New.restype = ctypes.py_object
_api.PyCapsule_New.argtypes = [ctypes.c_void_p, ctypes.c_char_p, _Destructor]
_api.PyCapsule_IsValid.restype = ctypes.c_int
_api.PyCapsule_IsValid.argtypes = [ctypes.c_void_p, ctypes.c_char_p]
_api.PyCapsule_GetPointer.restype = ctypes.c_void_p
_api.PyCapsule_GetPointer.argtypes = [ctypes.c_void_p, ctypes.c_char_p]
_api.PyCapsule_SetName.restype = ctypes.c_int
_api.PyCapsule_SetName.argtypes = [ctypes.py_object, ctypes.c_char_p]

# What an exported tensor keeps alive until its consumer calls the deleter: the struct, its shape and the Array.
_exported = {}


def exported_buffers(ctx):
    """The buffers (_Owned) of ctx that a DLPack consumer still holds."""
    return [e[2]._buf for e in _exported.values() if e[2].context is ctx]


def _release(addr):
    e = _exported.pop(addr, None)
    if e is None:
        return
    ctx = e[2].context
    h = getattr(ctx, "_pending_destroy", None)
    if h is not None and not exported_buffers(ctx):
        # the context was closed while consumers held its memory: it goes with the last of them
        e[2]._buf.release()
        ctx._pending_destroy = None
        lib.gpuws_context_destroy(h)


@_Deleter
def _delete_managed(p):
    _release(ctypes.addressof(p.contents))


@_Destructor
def _capsule_destructor(capsule):
    # A capsule nobody consumed still has its name: the producer deletes the tensor (DLPack's rule).
    if _api.PyCapsule_IsValid(capsule, b"dltensor"):
        _release(_api.PyCapsule_GetPointer(capsule, b"dltensor"))


def _pointer(arr, what):
    p = ctypes.c_void_p()
    st = lib.gpuws_buffer_get_pointer(arr.handle, ctypes.byref(p))
    if st == UnsupportedError.status:
        raise BufferError("%s: %s" % (what, _core._error(st).detail))
    check(st)
    return p.value


def device_index(ctx):
    """The CUDA device ordinal of ctx (the index given, else GPUWS_DEVICE's first, 0 for "all", else 0: what
    gpuws_context_create chose)."""
    if ctx.device_index is not None:
        return ctx.device_index
    first = (os.environ.get("GPUWS_DEVICE") or "0").split(",")[0]
    return 0 if first == "all" else int(first)


def dlpack_device(arr):
    b = arr.context.backend
    if b == "cpu":
        return (KDL_CPU, 0)
    if b == "cuda":
        return (KDL_CUDA, device_index(arr.context))
    raise BufferError("__dlpack_device__: an OpenCL buffer has no address to share; use np.asarray(a) (a copy)")


def to_dlpack(arr, stream=None):
    """The "dltensor" capsule of an Array (no copy). The work queued on the Array's context is finished first, so
    the data is ready on any stream of the consumer (stream=-1: the consumer asks for no synchronisation)."""
    dev = dlpack_device(arr)
    if dev[0] == KDL_CPU and stream is not None:
        raise BufferError("__dlpack__: stream must be None for CPU memory, not %r" % (stream,))
    ptr = _pointer(arr, "__dlpack__")
    if stream != -1:
        check(lib.gpuws_context_synchronize(arr.context.handle))
    m = DLManagedTensor()
    shape = (ctypes.c_int64 * max(arr.ndim, 1))(*arr.shape)
    m.dl_tensor.data = ptr
    m.dl_tensor.device = DLDevice(*dev)
    m.dl_tensor.ndim = arr.ndim
    m.dl_tensor.dtype = DLDataType(_DL_CODES[arr.dtype.kind], arr.dtype.itemsize * 8, 1)
    m.dl_tensor.shape = shape
    m.dl_tensor.strides = None  # C order
    m.dl_tensor.byte_offset = 0
    m.deleter = _delete_managed
    addr = ctypes.addressof(m)
    _exported[addr] = (m, shape, arr)
    return _api.PyCapsule_New(addr, b"dltensor", _capsule_destructor)


def cuda_array_interface(arr):
    if arr.context.backend != "cuda":
        raise AttributeError("__cuda_array_interface__: only Arrays of the CUDA backend are CUDA memory")
    ptr = _pointer(arr, "__cuda_array_interface__")
    # gpuws's streams are not the consumer's: the data is made ready before it is handed on (stream None: the
    # consumer need not synchronise, version 3 of the interface).
    check(lib.gpuws_context_synchronize(arr.context.handle))
    return {"shape": arr.shape, "typestr": arr.dtype.str, "data": (ptr, False), "version": 3, "strides": None,
            "stream": None}


class _Consumed:
    """The producer's tensor, held until the Array made over it goes: then its deleter runs."""

    def __init__(self, managed_ptr, owner):
        self.managed = managed_ptr
        self.owner = owner

    def __del__(self):
        m = self.managed
        if m and m.contents.deleter:
            m.contents.deleter(m)


def native_stream(ctx, stream=None):
    """The cudaStream_t (an int) behind a gpuws Stream, None = the context's default stream."""
    h = ctypes.c_void_p(stream.handle if stream is not None else None)
    if stream is None or h.value is None:
        check(lib.gpuws_context_get_default_stream(ctx.handle, ctypes.byref(h)))
    n = ctypes.c_void_p()
    check(lib.gpuws_stream_get_native(h, ctypes.byref(n)))
    return n.value


def from_dlpack(x, ctx=None, stream=None):
    """An Array over ``x``'s memory (anything with ``__dlpack__``: NumPy arrays, CuPy arrays, PyTorch tensors) without
    a copy when the memory is the context's kind (host memory on the CPU backend, device memory of the device on
    CUDA), C-contiguous and 16-byte aligned; otherwise a copy (host memory to any backend). ctx: the context the Array
    belongs to (default gpuws.default_context()). stream: the gpuws Stream that will use the Array (default the
    context's default stream): a CUDA producer is asked to have the data ready on its queue (DLPack's stream=)."""
    from ._algorithms import default_context
    ctx = ctx or (stream.context if stream is not None else default_context())
    if isinstance(x, Array) and x.context is ctx:
        return x
    if not hasattr(x, "__dlpack_device__"):
        raise invalid("from_dlpack: %s has no __dlpack_device__" % type(x).__name__)
    dev_type, dev_id = x.__dlpack_device__()
    zero_copy = (ctx.backend == "cpu" and dev_type in (KDL_CPU, KDL_CUDA_HOST)) or \
                (ctx.backend == "cuda" and dev_type == KDL_CUDA and dev_id == device_index(ctx))
    if not zero_copy:
        if dev_type not in (KDL_CPU, KDL_CUDA_HOST):
            raise BufferError("from_dlpack: device type %d, id %d is not this context's memory (%s) nor host memory"
                              % (dev_type, dev_id, ctx.backend))
        return ctx.asarray(np.from_dlpack(x))
    # CUDA: the producer orders its work before our queue (a non-blocking stream, which would not wait for the
    # legacy default stream that stream=None names)
    capsule = x.__dlpack__() if dev_type != KDL_CUDA else x.__dlpack__(stream=native_stream(ctx, stream))
    if not _api.PyCapsule_IsValid(id(capsule), b"dltensor"):
        raise BufferError("from_dlpack: __dlpack__ did not give a \"dltensor\" capsule")
    mp = ctypes.cast(_api.PyCapsule_GetPointer(id(capsule), b"dltensor"), ctypes.POINTER(DLManagedTensor))
    _api.PyCapsule_SetName(capsule, b"used_dltensor")  # consumed: its deleter is ours to call now
    held = _Consumed(mp, x)
    t = mp.contents.dl_tensor
    shape = tuple(t.shape[i] for i in range(t.ndim))
    code = {v: k for k, v in _DL_CODES.items()}.get(t.dtype.code)
    if code is None or t.dtype.lanes != 1:
        raise BufferError("from_dlpack: DLPack dtype code %d, %d bits, %d lanes is not a gpuws dtype"
                          % (t.dtype.code, t.dtype.bits, t.dtype.lanes))
    dtype = np.dtype("%s%d" % (code, t.dtype.bits // 8))
    contiguous = True
    if t.strides:
        expect = 1
        for i in reversed(range(t.ndim)):
            if shape[i] != 1 and t.strides[i] != expect:
                contiguous = False
            expect *= shape[i]
    ptr = (t.data or 0) + t.byte_offset
    nbytes = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
    if not contiguous or ptr % 16 or nbytes == 0:
        if dev_type == KDL_CUDA:
            raise BufferError("from_dlpack: CUDA memory that is not C-contiguous, 16-byte aligned and non-empty "
                              "cannot be wrapped (make it contiguous first: cupy.ascontiguousarray)")
        del held
        return ctx.asarray(np.from_dlpack(x))
    h = ctypes.c_void_p()
    check(lib.gpuws_buffer_wrap(ctx.handle, ptr, nbytes, ctypes.byref(h)))
    buf = ctx._own(h.value, lib.gpuws_buffer_destroy)
    buf.keep = held  # the producer's memory lives as long as the buffer
    return Array(ctx, shape, dtype, _buffer=buf)
