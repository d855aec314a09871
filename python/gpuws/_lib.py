"""The C library through ctypes: its location, and the public structs and functions of include/gpuws/*.h.

Nothing here computes anything: each declaration mirrors one in the public headers (the ABI), and every call goes to
libgpuws. ctypes releases the GIL around each call into the library.
"""

import ctypes
import os
from ctypes import POINTER, Structure, Union, c_char, c_char_p, c_double, c_float, c_int, c_int32, c_int64
from ctypes import c_size_t, c_uint, c_uint32, c_uint64, c_void_p

LIBRARY_ENV = "GPUWS_PYTHON_LIBRARY"


def _find_library():
    path = os.environ.get(LIBRARY_ENV)
    if path:
        return path, "from " + LIBRARY_ENV
    here = os.path.dirname(os.path.abspath(__file__))
    path = os.path.join(here, "libgpuws.so")
    if os.path.exists(path):
        return path, "installed with the package"
    raise ImportError(
        "gpuws: libgpuws.so is not installed next to the package (%s) and %s is not set; install the package with "
        "`pip install .` from the repository root, or set %s to a built libgpuws.so (build/libgpuws.so)"
        % (here, LIBRARY_ENV, LIBRARY_ENV))


LIBRARY_PATH, LIBRARY_ORIGIN = _find_library()
try:
    lib = ctypes.CDLL(LIBRARY_PATH)
except OSError as e:
    raise ImportError("gpuws: cannot load %s (%s): %s" % (LIBRARY_PATH, LIBRARY_ORIGIN, e)) from None

# ---- include/gpuws.h --------------------------------------------------------------------------------------------
STATUS_OK = 0
BACKEND_COUNT = 3
status_t = c_int
handle = c_void_p  # every gpuws object is an opaque pointer


class BackendInfo(Structure):
    _fields_ = [("kind", c_int), ("name", c_char_p), ("built_in", c_int), ("available", c_int),
                ("reason", c_char * 256)]


class DeviceInfo(Structure):
    _fields_ = [("backend", c_int), ("type", c_int), ("name", c_char * 128), ("vendor", c_char * 128),
                ("platform", c_char * 128), ("driver_version", c_char * 64), ("global_mem_bytes", c_uint64),
                ("max_alloc_bytes", c_uint64), ("compute_units", c_uint32), ("max_block_size", c_uint32),
                ("max_block_dims", c_uint32 * 3), ("max_grid_dims", c_uint64 * 3), ("max_grid_blocks", c_uint64),
                ("shared_mem_bytes", c_uint64), ("shared_mem_per_unit", c_uint64), ("warp_size", c_uint32),
                ("fp64", c_int), ("unified_memory", c_int)]


class ContextOptions(Structure):
    _fields_ = [("struct_size", c_size_t), ("backend", c_char_p), ("device", c_int), ("opencl_platform", c_char_p)]


class KernelInfo(Structure):
    _fields_ = [("name", c_char_p), ("max_block_size", c_uint32), ("static_shared_bytes", c_uint64),
                ("num_params", c_uint32)]


class _ArgValue(Union):
    _fields_ = [("buffer", c_void_p), ("i32", c_int32), ("u32", c_uint32), ("i64", c_int64), ("u64", c_uint64),
                ("f32", c_float), ("f64", c_double), ("local_bytes", c_size_t)]


class Arg(Structure):
    _fields_ = [("kind", c_int), ("v", _ArgValue)]


class LaunchConfig(Structure):
    _fields_ = [("grid", c_uint32 * 3), ("block", c_uint32 * 3)]


# ---- include/gpuws/program.h ------------------------------------------------------------------------------------
class ProgramHeader(Structure):
    _fields_ = [("name", c_char_p), ("source", c_char_p)]


class ProgramOptions(Structure):
    _fields_ = [("struct_size", c_size_t), ("file_name", c_char_p), ("defines", POINTER(c_char_p)),
                ("num_defines", c_size_t), ("headers", POINTER(ProgramHeader)), ("num_headers", c_size_t),
                ("flags", c_uint)]


# ---- include/gpuws/algorithms/*.h ---------------------------------------------------------------------------------
class Convolve2dOptions(Structure):
    _fields_ = [("struct_size", c_size_t), ("mode", c_int), ("boundary", c_int), ("fill_value", c_double)]


# Progress callbacks of the host-to-host calls: (user, band, bands, rows_done, out_rows) and
# (user, pass, passes, band, bands, rows_done, rows).
Convolve2dProgress = ctypes.CFUNCTYPE(None, c_void_p, c_size_t, c_size_t, c_size_t, c_size_t)
LabelHostProgress = ctypes.CFUNCTYPE(None, c_void_p, c_int, c_int, c_size_t, c_size_t, c_size_t, c_size_t)


class Convolve2dHostOptions(Structure):
    _fields_ = [("struct_size", c_size_t), ("mode", c_int), ("boundary", c_int), ("fill_value", c_double),
                ("max_device_bytes", c_uint64), ("progress", Convolve2dProgress), ("progress_user", c_void_p),
                ("more_contexts", POINTER(c_void_p)), ("num_more_contexts", c_size_t)]


class Convolve1dHostOptions(Structure):
    _fields_ = [("struct_size", c_size_t), ("max_device_bytes", c_uint64), ("more_contexts", POINTER(c_void_p)),
                ("num_more_contexts", c_size_t)]


class LabelHostOptions(Structure):
    _fields_ = [("struct_size", c_size_t), ("max_device_bytes", c_uint64), ("progress", LabelHostProgress),
                ("progress_user", c_void_p), ("more_contexts", POINTER(c_void_p)), ("num_more_contexts", c_size_t)]


class SigmaClipOptions(Structure):
    _fields_ = [("struct_size", c_size_t), ("kappa", c_double), ("max_iterations", c_int)]


class SigmaClipResult(Structure):
    _fields_ = [("count", c_size_t), ("median", c_double), ("mean", c_double), ("std", c_double),
                ("iterations", c_int), ("converged", c_int)]


class SourceMeasure(Structure):
    _fields_ = [("sum", c_double), ("row", c_double), ("col", c_double), ("peak", c_double), ("npix", c_int64),
                ("peak_row", c_int64), ("peak_col", c_int64)]


class SourcesOptions(Structure):
    _fields_ = [("struct_size", c_size_t), ("clip", POINTER(SigmaClipOptions)), ("threshold_sigma", c_double),
                ("threshold_abs", c_double), ("connectivity", c_int), ("want_labels", c_int),
                ("more_contexts", POINTER(c_void_p)), ("num_more_contexts", c_size_t)]


class Source(Structure):
    _fields_ = [("id", c_int64), ("x", c_double), ("y", c_double), ("flux", c_double), ("npix", c_int64),
                ("peak", c_double), ("peak_x", c_int64), ("peak_y", c_int64)]


class Catalog(Structure):
    _fields_ = [("clip", SigmaClipResult), ("threshold", c_double), ("num_sources", c_size_t),
                ("sources", POINTER(Source)), ("labels", POINTER(c_int32)),
                ("ms_upload", c_double), ("ms_clip", c_double), ("ms_threshold", c_double), ("ms_label", c_double),
                ("ms_measure", c_double), ("ms_download", c_double), ("ms_total", c_double)]


class Operand(Structure):
    _fields_ = [("array", c_void_p), ("scalar", c_double)]


class PipelineOptions(Structure):
    _fields_ = [("struct_size", c_size_t), ("chunk", c_size_t), ("streams", c_int)]


def _sized(struct, **fields):
    """A struct with struct_size set, as the header's _OPTIONS_INIT macros do; fields are the defaults."""
    s = struct(**fields)
    s.struct_size = ctypes.sizeof(struct)
    return s


def context_options(backend, device, platform):
    return _sized(ContextOptions, backend=backend, device=device, opencl_platform=platform)


def program_options(file_name, flags):
    return _sized(ProgramOptions, file_name=file_name, defines=None, num_defines=0, headers=None, num_headers=0,
                  flags=flags)


def convolve2d_options(mode, boundary, fill_value):
    return _sized(Convolve2dOptions, mode=mode, boundary=boundary, fill_value=fill_value)


def convolve2d_host_options(mode, boundary, fill_value, max_device_bytes, progress, more_contexts,
                            num_more_contexts):
    return _sized(Convolve2dHostOptions, mode=mode, boundary=boundary, fill_value=fill_value,
                  max_device_bytes=max_device_bytes, progress=progress or Convolve2dProgress(),
                  progress_user=None, more_contexts=more_contexts, num_more_contexts=num_more_contexts)


def convolve1d_host_options(max_device_bytes, more_contexts, num_more_contexts):
    return _sized(Convolve1dHostOptions, max_device_bytes=max_device_bytes, more_contexts=more_contexts,
                  num_more_contexts=num_more_contexts)


def label_host_options(max_device_bytes, progress, more_contexts, num_more_contexts):
    return _sized(LabelHostOptions, max_device_bytes=max_device_bytes, progress=progress or LabelHostProgress(),
                  progress_user=None, more_contexts=more_contexts, num_more_contexts=num_more_contexts)


def sigma_clip_options(kappa, max_iterations):
    return _sized(SigmaClipOptions, kappa=kappa, max_iterations=max_iterations)


def sources_options(clip, threshold_sigma, threshold_abs, connectivity, want_labels):
    return _sized(SourcesOptions, clip=clip, threshold_sigma=threshold_sigma, threshold_abs=threshold_abs,
                  connectivity=connectivity, want_labels=want_labels)


P = c_void_p
sz = c_size_t
_S = status_t
_FUNCTIONS = {
    # name: (restype, argtypes)
    "gpuws_status_name": (c_char_p, [c_int]),
    "gpuws_status_string": (c_char_p, [c_int]),
    "gpuws_last_error": (c_char_p, []),
    "gpuws_backend_get_info": (_S, [c_int, POINTER(BackendInfo)]),
    "gpuws_backend_from_name": (_S, [c_char_p, POINTER(c_int)]),
    "gpuws_device_count": (_S, [c_int, c_char_p, POINTER(sz)]),
    "gpuws_device_get_info": (_S, [c_int, c_char_p, sz, POINTER(DeviceInfo)]),
    "gpuws_context_create": (_S, [POINTER(P), POINTER(ContextOptions)]),
    "gpuws_context_destroy": (None, [P]),
    "gpuws_contexts_create": (_S, [POINTER(ContextOptions), sz, POINTER(P), POINTER(sz)]),
    "gpuws_contexts_destroy": (None, [POINTER(P), sz]),
    "gpuws_context_get_device_info": (_S, [P, POINTER(DeviceInfo)]),
    "gpuws_context_get_backend": (_S, [P, POINTER(c_int)]),
    "gpuws_context_synchronize": (_S, [P]),
    "gpuws_stream_create": (_S, [P, POINTER(P)]),
    "gpuws_stream_destroy": (None, [P]),
    "gpuws_stream_synchronize": (_S, [P]),
    "gpuws_stream_get_native": (_S, [P, POINTER(P)]),
    "gpuws_context_get_default_stream": (_S, [P, POINTER(P)]),
    "gpuws_event_create": (_S, [P, POINTER(P)]),
    "gpuws_event_destroy": (None, [P]),
    "gpuws_event_record": (_S, [P, P]),
    "gpuws_event_synchronize": (_S, [P]),
    "gpuws_event_elapsed_ms": (_S, [P, P, POINTER(c_double)]),
    "gpuws_buffer_create": (_S, [P, sz, POINTER(P)]),
    "gpuws_buffer_destroy": (None, [P]),
    "gpuws_buffer_write": (_S, [P, sz, c_void_p, sz]),
    "gpuws_buffer_read": (_S, [P, sz, c_void_p, sz]),
    "gpuws_buffer_copy": (_S, [P, sz, P, sz, sz]),
    "gpuws_buffer_fill": (_S, [P, sz, c_void_p, sz, sz]),
    "gpuws_buffer_write_async": (_S, [P, P, sz, c_void_p, sz]),
    "gpuws_buffer_read_async": (_S, [P, P, sz, c_void_p, sz]),
    "gpuws_buffer_copy_async": (_S, [P, P, sz, P, sz, sz]),
    "gpuws_buffer_fill_async": (_S, [P, P, sz, c_void_p, sz, sz]),
    "gpuws_buffer_get_pointer": (_S, [P, POINTER(c_void_p)]),
    "gpuws_buffer_wrap": (_S, [P, c_void_p, sz, POINTER(P)]),
    "gpuws_kernel_get_info": (_S, [P, POINTER(KernelInfo)]),
    "gpuws_kernel_signature": (c_char_p, [P]),
    "gpuws_launch": (_S, [P, P, POINTER(LaunchConfig), POINTER(Arg), sz]),
    "gpuws_program_create": (_S, [P, c_char_p, POINTER(ProgramOptions), POINTER(P)]),
    "gpuws_program_log": (c_char_p, [P]),
    "gpuws_program_source": (c_char_p, [P]),
    "gpuws_program_get_kernel": (_S, [P, c_char_p, POINTER(P)]),
    "gpuws_program_destroy": (None, [P]),
    "gpuws_elementwise_create": (_S, [P, c_char_p, c_char_p, c_char_p, POINTER(P)]),
    "gpuws_elementwise_launch": (_S, [P, P, c_uint64, POINTER(Arg), sz]),
    "gpuws_reduction_create": (_S, [P, c_char_p, c_char_p, c_char_p, c_char_p, c_char_p, c_char_p, POINTER(P)]),
    "gpuws_reduction_launch": (_S, [P, P, c_uint64, POINTER(Arg), sz, P]),
    "gpuws_vector_add": (_S, [P, c_int, sz, P, P, P]),
    "gpuws_reduce": (_S, [P, c_int, c_int, sz, P, P]),
    "gpuws_reduce_value": (_S, [P, c_int, c_int, sz, P, POINTER(c_double)]),
    "gpuws_convolve2d": (_S, [P, c_int, P, sz, sz, sz, P, sz, sz, POINTER(Convolve2dOptions), P]),
    "gpuws_convolve2d_separable": (_S, [P, c_int, P, sz, sz, sz, P, sz, P, sz, POINTER(Convolve2dOptions), P]),
    "gpuws_convolve2d_host_bands": (_S, [P, c_int, sz, sz, sz, sz, POINTER(Convolve2dHostOptions), POINTER(sz),
                                         POINTER(sz)]),
    "gpuws_convolve2d_host": (_S, [P, c_int, c_void_p, sz, sz, sz, c_void_p, sz, sz, POINTER(Convolve2dHostOptions),
                                   c_void_p]),
    "gpuws_convolve2d_output_shape": (_S, [sz, sz, sz, sz, c_int, POINTER(sz), POINTER(sz)]),
    "gpuws_convolve1d_output_length": (_S, [sz, sz, c_int, POINTER(sz)]),
    "gpuws_convolve1d": (_S, [P, c_int, P, sz, P, sz, c_int, P]),
    "gpuws_convolve1d_host_segments": (_S, [P, c_int, sz, sz, c_int, POINTER(Convolve1dHostOptions), POINTER(sz),
                                            POINTER(sz)]),
    "gpuws_convolve1d_host": (_S, [P, c_int, c_void_p, sz, c_void_p, sz, c_int, POINTER(Convolve1dHostOptions),
                                   c_void_p]),
    "gpuws_sigma_clip": (_S, [P, sz, P, POINTER(SigmaClipOptions), POINTER(SigmaClipResult)]),
    "gpuws_sigma_clip_host": (_S, [P, c_void_p, sz, POINTER(SigmaClipOptions), POINTER(SigmaClipResult)]),
    "gpuws_threshold": (_S, [P, sz, P, c_float, P]),
    "gpuws_label": (_S, [P, sz, sz, P, c_int, P, POINTER(sz)]),
    "gpuws_label_host_bands": (_S, [P, sz, sz, POINTER(LabelHostOptions), POINTER(sz), POINTER(sz)]),
    "gpuws_label_host": (_S, [P, sz, sz, c_void_p, sz, c_int, POINTER(LabelHostOptions), c_void_p, POINTER(sz)]),
    "gpuws_measure": (_S, [P, sz, sz, P, P, sz, P]),
    "gpuws_find_sources": (_S, [P, c_void_p, sz, sz, POINTER(SourcesOptions), POINTER(POINTER(Catalog))]),
    "gpuws_find_sources_host": (_S, [P, c_void_p, sz, sz, POINTER(SourcesOptions), POINTER(LabelHostOptions),
                                     POINTER(POINTER(Catalog))]),
    "gpuws_catalog_free": (None, [POINTER(Catalog)]),
    "gpuws_primes": (_S, [P, c_int, sz, P, P]),
    "gpuws_monte_carlo_pi": (_S, [P, c_uint64, c_uint64, c_uint64, P]),
    "gpuws_monte_carlo_pi_value": (_S, [P, P, c_uint64, c_uint64, c_uint64, POINTER(c_uint64), POINTER(c_double)]),
    "gpuws_histogram": (_S, [P, c_int, sz, P, c_double, c_double, c_uint32, P]),
    "gpuws_matmul_ex": (_S, [P, c_int, c_int, sz, sz, sz, P, P, P]),
    "gpuws_transpose": (_S, [P, c_int, sz, sz, P, P]),
    "gpuws_l2_norm": (_S, [P, c_int, sz, sz, P, P]),
    "gpuws_gaussian_pdf": (_S, [P, sz, Operand, Operand, Operand, P]),
    "gpuws_polar_distance": (_S, [P, sz, Operand, Operand, Operand, Operand, P]),
    "gpuws_zero_suppress": (_S, [P, c_int, sz, P, c_double, P]),
    "gpuws_make_pulses": (_S, [P, sz, Operand, Operand, Operand, P]),
    "gpuws_hypot": (_S, [P, sz, Operand, Operand, P]),
    "gpuws_hypot_checked": (_S, [P, sz, Operand, Operand, P]),
    "gpuws_hidden_layer": (_S, [P, sz, P, P, P]),
    "gpuws_hidden_layer_host": (_S, [P, sz, c_void_p, c_void_p, c_void_p, POINTER(PipelineOptions)]),
}

for _name, (_res, _args) in _FUNCTIONS.items():
    _f = getattr(lib, _name)
    _f.restype = _res
    _f.argtypes = _args
