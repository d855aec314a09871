/* CPU backend: fibers (placeholder). */
#include "../../core/backend_impl.h"
