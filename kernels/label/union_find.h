/* The host's union-find, shared by the scalar reference (label_ref.c: pixels, the labels array as the parent array,
 * int32) and the banded labelling (label_host.c: border labels of every band, size_t). Not installed.
 *
 * A set's root is its smallest index: a union links the larger root to the smaller, so every parent has a smaller
 * index than its child, and a raster walk meets a root before any other member of its set (the numbering both rely
 * on, scipy.ndimage.label's). GPUWS__UNION_FIND(prefix, T) defines prefix##_find and prefix##_unite over a parent
 * array of T (p[x] == x at a root); one definition serves both index types. */
#ifndef GPUWS_LABEL_UNION_FIND_H
#define GPUWS_LABEL_UNION_FIND_H

#define GPUWS__UNION_FIND(prefix, T)                                                                                   \
    static inline T prefix##_find(T *p, T x)                                                                           \
    {                                                                                                                  \
        while (p[x] != x) {                                                                                            \
            p[x] = p[p[x]]; /* path halving */                                                                         \
            x = p[x];                                                                                                  \
        }                                                                                                              \
        return x;                                                                                                      \
    }                                                                                                                  \
                                                                                                                       \
    static inline void prefix##_unite(T *p, T a, T b)                                                                  \
    {                                                                                                                  \
        a = prefix##_find(p, a);                                                                                       \
        b = prefix##_find(p, b);                                                                                       \
        if (a < b) p[b] = a;                                                                                           \
        else if (b < a) p[a] = b;                                                                                      \
    }

#endif
