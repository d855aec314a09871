#ifndef GPUWS_THRESHOLD_REF_H
#define GPUWS_THRESHOLD_REF_H
#include <stddef.h>
#include <stdint.h>
/* mask[i] = data[i] > t ? 1 : 0 (a NaN on either side compares false). */
void gpuws_threshold_ref(const float *data, size_t n, float t, uint8_t *mask);
#endif
