#include "threshold_ref.h"

void gpuws_threshold_ref(const float *data, size_t n, float t, uint8_t *mask)
{
    for (size_t i = 0; i < n; i++) mask[i] = data[i] > t ? 1 : 0;
}
