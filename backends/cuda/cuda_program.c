/* CUDA backend: user programs through NVRTC (placeholder). */
#include "../../core/backend_impl.h"
