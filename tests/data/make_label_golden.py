#!/usr/bin/env python3
"""Golden files for the `label` tests: masks and scipy.ndimage.label's answers for 4- and 8-connectivity.

    pip install numpy scipy && python3 tests/data/make_label_golden.py   (writes tests/data/label_<case>.bin)

scipy.ndimage.label(mask) uses the cross (4-connectivity) by default; 8-connectivity is
structure=np.ones((3, 3)). Both number components 1..N in raster order of their first pixel; that order is what
gpuws_label must reproduce exactly.

File layout (little-endian):
    char[4]  "GWL1"
    u32      height, width
    u32      n4, n8             number of labels with connectivity 4 and 8
    u32      label_bytes        2 or 4: the width of each stored label
    u8[]     mask, ceil(height*width/8) bytes, bit k of byte j = pixel 8*j + k (row-major, numpy bitorder='little')
    uint[]   labels4 of the foreground pixels only, in raster order (background is 0 by definition)
    uint[]   labels8 likewise

The case list is repeated in tests/test_label.c (golden_cases); the files are regenerated bit-identically (fixed
seeds) by running this script again.
"""
import os
import struct

import numpy as np
from scipy import ndimage

HERE = os.path.dirname(os.path.abspath(__file__))


def random_mask(h, w, density, seed):
    return np.random.default_rng(seed).random((h, w)) < density


def spiral(n):
    """A square spiral one pixel wide with one-pixel gaps, drawn by a turtle that turns right whenever going on
    would touch the path: one component that crosses every tile boundary many times, so the GPU's merges build
    long chains."""
    m = np.zeros((n, n), bool)
    y, x, dy, dx = 0, 0, 0, 1
    m[0, 0] = True
    while True:
        for _ in range(2):
            ny, nx, ay, ax = y + dy, x + dx, y + 2 * dy, x + 2 * dx
            if 0 <= ny < n and 0 <= nx < n and not m[ny, nx] and not (0 <= ay < n and 0 <= ax < n and m[ay, ax]):
                y, x = ny, nx
                m[y, x] = True
                break
            dy, dx = dx, -dy  # turn right
        else:
            return m


def diagonals(h, w):
    """Lines of slope +1 and -1: each pixel is its own 4-connected component; 8-connectivity joins the lines."""
    y, x = np.mgrid[0:h, 0:w]
    return ((x - y) % 7 == 0) | ((x + y) % 11 == 0)


def comb(h, w):
    """Teeth joined only at the bottom: each component's first pixel is a tooth's top, far from where the teeth
    meet, so the numbering depends on merges found late in raster order."""
    m = np.zeros((h, w), bool)
    m[:, ::4] = True
    m[-1, :] = True
    m[:h // 2, 2::8] = True  # shorter teeth in between that touch nothing, numbered between the long ones' tops
    return m


def blobs(h, w, seed):
    """Smooth random blobs: smoothed noise thresholded, like a sky image's segmentation."""
    noise = np.random.default_rng(seed).standard_normal((h, w))
    return ndimage.gaussian_filter(noise, 2.0) > 0.15


def checker(h, w):
    y, x = np.mgrid[0:h, 0:w]
    return (x + y) % 2 == 0


CASES = {
    "random_64x64_d10": lambda: random_mask(64, 64, 0.10, 1),
    "random_64x64_d30": lambda: random_mask(64, 64, 0.30, 2),
    "random_64x64_d45": lambda: random_mask(64, 64, 0.45, 3),
    "random_64x64_d55": lambda: random_mask(64, 64, 0.55, 4),
    "random_64x64_d70": lambda: random_mask(64, 64, 0.70, 5),
    "random_64x64_d90": lambda: random_mask(64, 64, 0.90, 6),
    "random_7x13_d50": lambda: random_mask(7, 13, 0.50, 7),
    "random_37x101_d50": lambda: random_mask(37, 101, 0.50, 8),
    "random_101x37_d60": lambda: random_mask(101, 37, 0.60, 9),
    "random_97x131_d55": lambda: random_mask(97, 131, 0.55, 10),
    "row_1x257_d60": lambda: random_mask(1, 257, 0.60, 11),
    "col_257x1_d60": lambda: random_mask(257, 1, 0.60, 12),
    "blobs_120x100": lambda: blobs(120, 100, 13),
    "spiral_97x97": lambda: spiral(97),
    "diagonals_40x50": lambda: diagonals(40, 50),
    "comb_70x95": lambda: comb(70, 95),
    "checker_33x65": lambda: checker(33, 65),
    "ones_45x70": lambda: np.ones((45, 70), bool),
    "zeros_30x30": lambda: np.zeros((30, 30), bool),
    "one_1x1": lambda: np.ones((1, 1), bool),
    "zero_1x1": lambda: np.zeros((1, 1), bool),
}


def write_case(name, mask):
    mask = np.ascontiguousarray(mask, dtype=bool)
    h, w = mask.shape
    l4, n4 = ndimage.label(mask)
    l8, n8 = ndimage.label(mask, structure=np.ones((3, 3), int))
    nbytes = 2 if max(n4, n8) < 65536 else 4
    dt = np.dtype("<u2" if nbytes == 2 else "<u4")
    fg = mask.ravel()
    with open(os.path.join(HERE, f"label_{name}.bin"), "wb") as f:
        f.write(b"GWL1")
        f.write(struct.pack("<5I", h, w, n4, n8, nbytes))
        f.write(np.packbits(fg, bitorder="little").tobytes())
        f.write(l4.ravel()[fg].astype(dt).tobytes())
        f.write(l8.ravel()[fg].astype(dt).tobytes())
    return h, w, n4, n8


if __name__ == "__main__":
    for name, make in CASES.items():
        h, w, n4, n8 = write_case(name, make())
        print(f"label_{name}.bin: {h}x{w}, {n4} labels (4-connectivity), {n8} (8-connectivity)")
