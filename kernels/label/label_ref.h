/* Connected-component labelling, the scalar reference (the tests' oracle and the CPU backend's implementation). */
#ifndef GPUWS_LABEL_REF_H
#define GPUWS_LABEL_REF_H
#include <stddef.h>
#include <stdint.h>

/* labels[i] = 0 where mask[i] == 0, else the component's number 1..N, numbered in raster order of each
 * component's first pixel (scipy.ndimage.label). connectivity 4 (edges only) or 8 (edges and corners).
 * width * height < 2^31. labels is also the union-find workspace: no other memory is used. Returns N. */
size_t gpuws_label_ref(const uint8_t *mask, size_t width, size_t height, int connectivity, int32_t *labels);

#endif
