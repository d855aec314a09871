"""Your own kernels (include/gpuws/program.h), called as CuPy calls its RawKernel and ElementwiseKernel.

Sources are in the gpuws kernel dialect (docs/kernels.md). A kernel is compiled for a context on its first call
there (the library caches builds on disk); its parameters' kinds come from the library (gpuws_kernel_signature), so
Python ints and floats are converted to what the kernel takes, and NumPy scalars must match it exactly.
"""

import ctypes
import weakref

import numpy as np

from . import _lib
from ._algorithms import _Call
from ._core import Array, ArgumentsError, BuildError, check, invalid, _error
from ._lib import lib

_ARG_KINDS = {"b": None, "s": None, "i": np.dtype(np.int32), "u": np.dtype(np.uint32), "l": np.dtype(np.int64),
              "L": np.dtype(np.uint64), "f": np.dtype(np.float32), "d": np.dtype(np.float64)}
_UNION_FIELD = {"i": "i32", "u": "u32", "l": "i64", "L": "u64", "f": "f32", "d": "f64"}
_KIND_OF_DTYPE = {dt: k for k, dt in _ARG_KINDS.items() if dt is not None}
PROGRAM_DEBUG, PROGRAM_FAST_MATH = 1 << 1, 1 << 2


def _dims(what, v):
    t = (v,) if isinstance(v, (int, np.integer)) else tuple(v)
    if not 1 <= len(t) <= 3 or not all(isinstance(x, (int, np.integer)) and x >= 1 for x in t):
        raise invalid("%s must be an int >= 1 or a tuple of 1 to 3 of them, not %r" % (what, v))
    return tuple(int(x) for x in t) + (1,) * (3 - len(t))


class _Args:
    """gpuws_arg values for one launch; NumPy arrays are copied in before it and out after it."""

    def __init__(self, call, fname, sig, args):
        self.call = call
        self.arr = (_lib.Arg * max(len(sig), 1))()
        self.copy_back, self.keep = [], []
        for i, (kind, a) in enumerate(zip(sig, args)):
            slot = self.arr[i]
            slot.kind = ord(kind) if kind != "?" else ord("b")
            if kind == "s":
                if not isinstance(a, (int, np.integer)) or isinstance(a, bool) or a < 0:
                    raise ArgumentsError("%s argument %d is GW_LOCAL memory: its size in bytes (an int >= 0), not %r"
                                         % (fname, i, a))
                slot.v.local_bytes = int(a)
            elif kind in ("b", "?"):
                if isinstance(a, Array):
                    d = call.input(a, a.dtype, "argument %d" % i)
                elif isinstance(a, np.ndarray):
                    d = call.input(a, a.dtype, "argument %d" % i)
                    if a.flags.writeable:
                        self.copy_back.append((d, a))
                else:
                    raise ArgumentsError("%s argument %d is a buffer: give a gpuws.Array or a NumPy array, not %s"
                                         % (fname, i, type(a).__name__))
                slot.v.buffer = d.handle
                self.keep.append(d)  # the slot holds only the handle
            else:
                setattr(slot.v, _UNION_FIELD[kind], self._scalar(fname, i, kind, a))

    @staticmethod
    def _scalar(fname, i, kind, a):
        want = _ARG_KINDS[kind]
        if isinstance(a, np.generic):
            if a.dtype != want:
                raise ArgumentsError("%s argument %d: the kernel takes %s, the NumPy scalar is %s" % (fname, i, want,
                                                                                                      a.dtype))
            return a.item()
        if isinstance(a, bool) or not isinstance(a, (int, float)):
            raise ArgumentsError("%s argument %d: the kernel takes %s, not %s" % (fname, i, want, type(a).__name__))
        if want.kind in "iu":
            if isinstance(a, float):
                raise ArgumentsError("%s argument %d: the kernel takes %s, not a float (%r)" % (fname, i, want, a))
            info = np.iinfo(want)
            if not info.min <= a <= info.max:
                raise ArgumentsError("%s argument %d: %d does not fit the kernel's %s" % (fname, i, a, want))
        return a

    def finish(self):
        for d, host in self.copy_back:
            np.copyto(host, d.get(stream=self.call.stream).reshape(host.shape))


class _PerContext:
    """What a kernel made from texts holds per context: built on first use, released with the context."""

    def __init__(self):
        self._by_ctx = weakref.WeakKeyDictionary()

    def get(self, ctx, make):
        got = self._by_ctx.get(ctx)
        if got is None or (got[0] is not None and got[0].handle is None):
            got = self._by_ctx[ctx] = make(ctx)
        return got


def _size(what, args, size):
    """size, or by default the element count of the first array argument."""
    if size is not None:
        return int(size)
    arrays = [x for x in args if isinstance(x, (Array, np.ndarray))]
    if not arrays:
        raise invalid("%s: no array argument; give size=" % what)
    return arrays[0].size


def _signature(k):
    s = lib.gpuws_kernel_signature(k)
    if s is None:
        raise _error(-1, "the kernel is not live (its context was closed)")
    return s.decode()


class RawKernel:
    """``RawKernel(code, name, options=(), *, file_name="kernel.gw", debug=False, fast_math=False)``: the GW_KERNEL
    ``name`` of ``code``. Call it ``k(grid, block, args, shared_mem=0, stream=None)``: grid and block are ints or
    tuples of up to 3; args one per parameter (Arrays or NumPy arrays for GW_GLOBAL pointers, numbers for scalars).
    A single GW_LOCAL parameter may be left out of args: shared_mem bytes go there. ``options``: "-DNAME" or
    "-DNAME=VALUE". A compile error raises BuildError whose ``log`` holds the compiler's output."""

    def __init__(self, code, name, options=(), *, file_name="kernel.gw", debug=False, fast_math=False):
        self.code, self.name, self.file_name = code, name, file_name
        self.defines = []
        for o in options:
            if not o.startswith("-D") or len(o) == 2:
                raise invalid("RawKernel option %r: only -DNAME[=VALUE] is taken" % (o,))
            self.defines.append(o[2:])
        self.flags = (PROGRAM_DEBUG if debug else 0) | (PROGRAM_FAST_MATH if fast_math else 0)
        self._built = _PerContext()

    def _make(self, ctx):
        defs = (ctypes.c_char_p * max(len(self.defines), 1))(*[d.encode() for d in self.defines])
        opts = _lib.program_options(self.file_name.encode(), self.flags)
        opts.defines, opts.num_defines = ctypes.cast(defs, ctypes.POINTER(ctypes.c_char_p)), len(self.defines)
        p = ctypes.c_void_p()
        st = lib.gpuws_program_create(ctx.handle, self.code.encode(), ctypes.byref(opts), ctypes.byref(p))
        if st != 0:
            err = _error(st)
            if p.value:  # a failed program: only its log, then destroy it
                log = lib.gpuws_program_log(p.value)
                err.log = log.decode(errors="replace") if log else ""
                lib.gpuws_program_destroy(p.value)
            raise err
        prog = ctx._own(p.value, lib.gpuws_program_destroy)
        k = ctypes.c_void_p()
        check(lib.gpuws_program_get_kernel(prog.handle, self.name.encode(), ctypes.byref(k)))
        return prog, k.value, _signature(k.value)

    def compile(self, ctx=None):
        """Builds the kernel for ctx (default: gpuws.default_context()) now; returns the parameters' kinds."""
        c = _Call("RawKernel", (), ctx, None)
        return self._built.get(c.ctx, self._make)[2]

    @property
    def log(self):
        """The compiler's output of the last build on the default context ('' for a build from the cache)."""
        from ._algorithms import default_context
        prog = self._built.get(default_context(), self._make)[0]
        return lib.gpuws_program_log(prog.handle).decode(errors="replace")

    def __call__(self, grid, block, args, shared_mem=0, stream=None, ctx=None):
        args = tuple(args)
        call = _Call(self.name, args, ctx, stream)
        prog, k, sig = self._built.get(call.ctx, self._make)
        prog.handle  # raises if released
        nlocal = sig.count("s")
        if len(args) == len(sig) - nlocal and nlocal:
            if nlocal > 1:
                raise ArgumentsError("%s has %d GW_LOCAL parameters: give each one's size in args" % (self.name,
                                                                                                      nlocal))
            args = args[:sig.index("s")] + (int(shared_mem),) + args[sig.index("s"):]
        elif shared_mem and not nlocal:
            raise ArgumentsError("%s: shared_mem=%d but the kernel has no GW_LOCAL parameter to receive it"
                                 % (self.name, shared_mem))
        elif len(args) != len(sig):
            raise ArgumentsError("%s takes %d arguments (%s), not %d" % (self.name, len(sig), sig, len(args)))
        a = _Args(call, self.name, sig, args)
        cfg = _lib.LaunchConfig((ctypes.c_uint32 * 3)(*_dims("grid", grid)),
                                (ctypes.c_uint32 * 3)(*_dims("block", block)))
        check(lib.gpuws_launch(call.s, k, ctypes.byref(cfg), a.arr, len(sig)))
        a.finish()


class ElementwiseKernel:
    """``ElementwiseKernel(params, operation, preamble=None)``: gpuws_elementwise_create. params is a C parameter
    list in the dialect's types ("const gw_f32 *x, const gw_f32 *y, gw_f32 *z, gw_f32 a"; pointers are buffers),
    operation a statement on element i ("z[i] = a * x[i] + y[i]"). Call ``k(*args, size=None, stream=None)``:
    args in params' order, size the element count (default: the first array argument's size)."""

    def __init__(self, params, operation, preamble=None):
        self.params, self.operation, self.preamble = params, operation, preamble
        self._built = _PerContext()

    def _make(self, ctx):
        k = ctypes.c_void_p()
        check(lib.gpuws_elementwise_create(ctx.handle, self.params.encode(), self.operation.encode(),
                                           self.preamble.encode() if self.preamble else None, ctypes.byref(k)))
        return None, k.value, _signature(k.value)[:-1]  # the generated kernel's last parameter is n

    def __call__(self, *args, size=None, stream=None, ctx=None):
        call = _Call("ElementwiseKernel", args, ctx, stream)
        _, k, sig = self._built.get(call.ctx, self._make)
        if len(args) != len(sig):
            raise ArgumentsError("the ElementwiseKernel takes %d arguments (%s), not %d" % (len(sig), sig, len(args)))
        size = _size("ElementwiseKernel", args, size)
        a = _Args(call, "ElementwiseKernel", sig, args)
        check(lib.gpuws_elementwise_launch(call.s, k, size, a.arr, len(sig)))
        a.finish()


_OUT_TYPES = {"gw_i32": np.int32, "gw_u32": np.uint32, "gw_i64": np.int64, "gw_u64": np.uint64, "gw_f32": np.float32,
              "gw_f64": np.float64}


class ReductionKernel:
    """``ReductionKernel(out_type, neutral, map_expr, reduce_expr, params, preamble=None)``: gpuws_reduction_create
    ("gw_f64", "0", "(gw_f64)x[i] * x[i]", "a + b", "const gw_f32 *x"). Call ``k(*args, size=None, out=None)``:
    returns the value as a NumPy scalar, or writes it into out (an Array of shape (1,)). Array parameters take
    Arrays or NumPy arrays; scalar parameters take NumPy scalars of the parameter's type (np.float32(2), ...): the
    library does not tell a reduction's parameter kinds, so a bare Python number is refused."""

    def __init__(self, out_type, neutral, map_expr, reduce_expr, params, preamble=None):
        if out_type not in _OUT_TYPES:
            raise invalid("ReductionKernel out_type %r is not one of %s" % (out_type, ", ".join(_OUT_TYPES)))
        self.out_dtype = np.dtype(_OUT_TYPES[out_type])
        self.texts = (out_type, neutral, map_expr, reduce_expr, params, preamble)
        self._built = _PerContext()

    def _make(self, ctx):
        r = ctypes.c_void_p()
        t = [x.encode() if x is not None else None for x in self.texts]
        check(lib.gpuws_reduction_create(ctx.handle, *t, ctypes.byref(r)))
        return None, r.value, None

    def __call__(self, *args, size=None, out=None, stream=None, ctx=None):
        call = _Call("ReductionKernel", args + ((out,) if out is not None else ()), ctx, stream)
        _, r, _ = self._built.get(call.ctx, self._make)
        sig = ""
        for i, x in enumerate(args):
            if isinstance(x, (Array, np.ndarray)):
                sig += "b"
            elif isinstance(x, np.generic) and x.dtype in _KIND_OF_DTYPE:
                sig += _KIND_OF_DTYPE[x.dtype]
            else:
                raise ArgumentsError("ReductionKernel argument %d: an array or a NumPy scalar (np.float32(...), "
                                     "np.int64(...)), not %s" % (i, type(x).__name__))
        size = _size("ReductionKernel", args, size)
        a = _Args(call, "ReductionKernel", sig, args)
        o = call.output(out, (1,), self.out_dtype)
        check(lib.gpuws_reduction_launch(call.s, r, size, a.arr, len(sig), o.handle))
        a.finish()
        if out is not None:
            return out
        return o.get(stream=stream)[0]
