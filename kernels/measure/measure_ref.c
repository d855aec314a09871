#include "measure_ref.h"

#include <math.h>
#include <stdbool.h>

void gpuws_measure_ref_sums(const float *data, const int32_t *labels, size_t width, size_t height, size_t num_labels,
                            gpuws_source_measure *out)
{
    for (size_t k = 0; k < num_labels; k++) out[k] = (gpuws_source_measure){ 0.0, 0.0, 0.0, NAN, 0, -1, -1 };
    for (size_t r = 0, i = 0; r < height; r++)
        for (size_t c = 0; c < width; c++, i++) {
            const int32_t l = labels[i];
            if (l < 1 || (size_t)l > num_labels) continue;
            gpuws_measure_ref_add(&out[l - 1], (double)data[i], r, c);
        }
}

void gpuws_measure_ref(const float *data, const int32_t *labels, size_t width, size_t height, size_t num_labels,
                       gpuws_source_measure *out)
{
    gpuws_measure_ref_sums(data, labels, width, height, num_labels, out);
    for (size_t k = 0; k < num_labels; k++) gpuws_measure_ref_centre(&out[k]);
}
