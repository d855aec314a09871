/* CPU backend: user programs (placeholder while the compiler driver is written). */
#include "../../core/backend_impl.h"
