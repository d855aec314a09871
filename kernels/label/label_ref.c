/* Two raster passes of union-find with the labels array as the parent array.
 *
 * Pass 1 links every foreground pixel to its backward neighbours (left, and for 8-connectivity up-left, up,
 * up-right; 4-connectivity: left, up). Links always point from the larger to the smaller index, so a component's
 * root is its smallest raster index: its first pixel. Pass 2 walks the pixels in raster order; a component's root
 * is met before any other of its pixels, so numbering roots as they are met gives SciPy's order. Every parent
 * has a smaller index than its child, so when pass 2 reaches a pixel its parent already holds -label. */
#include "label_ref.h"
#include "union_find.h"

GPUWS__UNION_FIND(uf, int32_t)

size_t gpuws_label_ref(const uint8_t *mask, size_t width, size_t height, int connectivity, int32_t *labels)
{
    const size_t w = width;
    for (size_t y = 0; y < height; y++) {
        for (size_t x = 0; x < w; x++) {
            const size_t i = y * w + x;
            if (!mask[i]) {
                labels[i] = 0;
                continue;
            }
            labels[i] = (int32_t)i;
            if (x > 0 && mask[i - 1]) uf_unite(labels, (int32_t)i, (int32_t)(i - 1));
            if (y == 0) continue;
            if (mask[i - w]) uf_unite(labels, (int32_t)i, (int32_t)(i - w));
            if (connectivity == 8) {
                if (x > 0 && mask[i - w - 1]) uf_unite(labels, (int32_t)i, (int32_t)(i - w - 1));
                if (x + 1 < w && mask[i - w + 1]) uf_unite(labels, (int32_t)i, (int32_t)(i - w + 1));
            }
        }
    }
    /* Pass 2: numbered pixels hold -label (< 0); a pixel not yet reached holds its parent's index (a root: its own,
     * pixel 0 included). */
    int32_t count = 0;
    const size_t n = w * height;
    for (size_t i = 0; i < n; i++) {
        if (!mask[i]) continue;
        const int32_t parent = labels[i];
        /* a parent has a smaller index, so it is numbered already */
        labels[i] = (size_t)parent == i ? -(++count) : labels[parent];
    }
    for (size_t i = 0; i < n; i++) labels[i] = -labels[i];
    return (size_t)count;
}
