"""gpuws: the GPU workshop's algorithms on CUDA, OpenCL and CPUs, from Python.

A thin layer over the C library's public API (libgpuws, through ctypes): every computation runs in the library.

    import gpuws, numpy as np
    with gpuws.Context() as ctx:                 # GPUWS_BACKEND / GPUWS_DEVICE, else the best device
        img = ctx.asarray(np.random.rand(512, 512).astype(np.float32))
        out = gpuws.convolve2d(img, np.ones((5, 5), np.float32), mode="same")   # an Array, on the device
        print(out.get().sum())

NumPy arrays are accepted wherever an Array is; when no Array is given the result is NumPy (docs/python.md). Arrays
of the CPU and CUDA backends share memory through DLPack (np.from_dlpack, gpuws.from_dlpack) without a copy.
"""

from ._lib import LIBRARY_PATH
from ._core import (ArgumentsError, Array, BackendUnavailableError, BuildError, Context, DeviceError, Error, Event,
                    FormatError, InternalError, InvalidArgumentError, IOError, KernelNotFoundError, LaunchConfigError,
                    NoDeviceError, NotConvergedError, NotReadyError, OutOfMemoryError, OutOfRangeError, OverflowError,
                    Stream, UnknownBackendError, UnsupportedError, WrongContextError, backends, contexts, devices)
from ._algorithms import (Catalog, SigmaClipResult, add, convolve, convolve1d, convolve2d, convolve2d_separable,
                          count_primes, default_context, find_sources, gaussian_pdf, hidden_layer, histogram, hypot,
                          l2_norm, label, make_pulses, matmul, max, measure, min, monte_carlo_pi, polar_distance,
                          primes, reduce, set_default_context, sigma_clip, sum, threshold, transpose, vector_add,
                          zero_suppress)
from ._dlpack import from_dlpack
from ._host import (Bands, Segments, convolve1d_host, convolve1d_host_segments, convolve2d_host, convolve2d_host_bands,
                    find_sources_host, label_host, label_host_bands, sigma_clip_host)
from ._kernels import ElementwiseKernel, RawKernel, ReductionKernel

__version__ = "0.2.0"
