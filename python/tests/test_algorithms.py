"""Every algorithm against NumPy/SciPy on random inputs, on every backend present."""

import math

import numpy as np
import pytest
import scipy.ndimage as ndi
import scipy.signal as sig

import gpuws


def close_to_sum(got, want, terms, dtype):
    """Equal within the C API's bound: terms * u * sum|products| (include/gpuws/algorithms/convolve.h)."""
    u = np.finfo(dtype).eps / 2
    np.testing.assert_allclose(got, want, rtol=0, atol=terms * u * max(1.0, float(np.abs(want).max())) * 4)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("mode", ["full", "same", "valid"])
@pytest.mark.parametrize("boundary", ["fill", "wrap", "symm"])
def test_convolve2d_is_scipy_signal_convolve2d(ctx, rng, dtype, mode, boundary):
    img = rng.random((37, 29)).astype(dtype)
    k = rng.random((5, 4)).astype(dtype)
    want = sig.convolve2d(img, k, mode=mode, boundary=boundary, fillvalue=0.5)
    got = gpuws.convolve2d(img, k, mode=mode, boundary=boundary, fillvalue=0.5, ctx=ctx)
    assert got.dtype == dtype and got.shape == want.shape
    close_to_sum(got, want, k.size, dtype)
    d = gpuws.convolve2d(ctx.asarray(img), ctx.asarray(k), mode=mode, boundary=boundary, fillvalue=0.5)
    assert isinstance(d, gpuws.Array)
    np.testing.assert_array_equal(d.get(), got)


def test_convolve2d_separable_is_convolve2d_of_the_outer_product(ctx, rng):
    img = rng.random((40, 33)).astype(np.float32)
    col, row = rng.random(7).astype(np.float32), rng.random(5).astype(np.float32)
    want = sig.convolve2d(img, np.outer(col, row), mode="same", boundary="symm")
    close_to_sum(gpuws.convolve2d_separable(img, col, row, mode="same", boundary="symmetric", ctx=ctx), want, 12,
                 np.float32)


def test_convolve2d_mixed_dtypes_give_float64_like_scipy(ctx, rng):
    img = rng.integers(0, 10, (8, 8))  # int64
    k = np.ones((3, 3), np.float32)
    got = gpuws.convolve2d(img, k, ctx=ctx)
    assert got.dtype == np.float64
    np.testing.assert_array_equal(got, sig.convolve2d(img, k))


def test_convolve2d_bad_mode_and_boundary_name_the_choices(ctx):
    with pytest.raises(gpuws.InvalidArgumentError, match="'full', 'same', 'valid'"):
        gpuws.convolve2d(np.ones((3, 3)), np.ones((2, 2)), mode="fool", ctx=ctx)
    with pytest.raises(gpuws.InvalidArgumentError, match="boundary"):
        gpuws.convolve2d(np.ones((3, 3)), np.ones((2, 2)), boundary="reflect", ctx=ctx)


@pytest.mark.parametrize("mode", ["full", "same", "valid"])
def test_convolve1d_is_numpy_convolve(ctx, rng, mode):
    a, v = rng.random(1000), rng.random(31)
    close_to_sum(gpuws.convolve1d(a, v, mode, ctx=ctx), np.convolve(a, v, mode), 31, np.float64)
    close_to_sum(gpuws.convolve(v, a, mode, ctx=ctx), np.convolve(v, a, mode), 31, np.float64)


@pytest.mark.parametrize("connectivity", [4, 8])
def test_label_is_scipy_ndimage_label(ctx, rng, connectivity):
    mask = rng.random((61, 47)) > 0.6
    structure = None if connectivity == 4 else np.ones((3, 3))
    want, n = ndi.label(mask, structure=structure)
    labels, got_n = gpuws.label(mask, connectivity=connectivity, ctx=ctx)
    assert got_n == n and labels.dtype == np.int32
    np.testing.assert_array_equal(labels, want)
    with pytest.raises(gpuws.InvalidArgumentError, match="connectivity"):
        gpuws.label(mask, connectivity=6, ctx=ctx)


def test_measure_is_sum_labels_and_center_of_mass(ctx, rng):
    data = rng.random((50, 40)).astype(np.float32)
    labels, n = ndi.label(data > 0.7)
    m = gpuws.measure(data, labels.astype(np.int32), n, ctx=ctx)
    idx = np.arange(1, n + 1)
    np.testing.assert_allclose(m["sum"], ndi.sum_labels(data.astype(np.float64), labels, idx), rtol=1e-12)
    com = np.array(ndi.center_of_mass(data.astype(np.float64), labels, idx))
    np.testing.assert_allclose(np.stack([m["row"], m["col"]], 1), com, rtol=1e-10)
    np.testing.assert_array_equal(m["npix"], ndi.sum_labels(np.ones_like(data), labels, idx))


def numpy_sigma_clip(x, kappa=3.0):
    x = x[~np.isnan(x)].astype(np.float64)
    while True:
        med, std = np.median(x), x.std()
        keep = x[(x > med - kappa * std) & (x < med + kappa * std)]
        if keep.size == x.size:
            return x
        x = keep


def test_sigma_clip_is_the_workshops_numpy_loop(ctx, rng):
    data = rng.normal(10, 2, (100, 100)).astype(np.float32)
    data[rng.random(data.shape) > 0.99] = 1000
    data[0, :5] = np.nan
    want = numpy_sigma_clip(data.astype(np.float64))
    r = gpuws.sigma_clip(data, ctx=ctx)
    assert r.converged and r.count == want.size
    assert r.median == pytest.approx(np.median(want), rel=1e-6)
    assert r.std == pytest.approx(want.std(), rel=1e-6)
    assert r.mean == pytest.approx(want.mean(), rel=1e-6)


def test_find_sources_is_the_workshops_four_steps(ctx, rng):
    img = rng.normal(0, 1, (128, 160)).astype(np.float32)
    for y, x in rng.integers(5, 120, (12, 2)):
        img[y - 1:y + 2, x - 1:x + 2] += 40
    cat = gpuws.find_sources(img, return_labels=True, ctx=ctx)
    clipped = numpy_sigma_clip(img)
    assert cat.threshold == pytest.approx(5 * clipped.std(), rel=1e-5)
    labels, n = ndi.label(img > cat.threshold)
    assert len(cat) == n and (cat.labels == labels).all()
    idx = np.arange(1, n + 1)
    np.testing.assert_allclose(cat.sources["flux"], ndi.sum_labels(img.astype(np.float64), labels, idx), rtol=1e-9)
    com = np.array(ndi.center_of_mass(img.astype(np.float64), labels, idx))
    np.testing.assert_allclose(cat.sources["y"], com[:, 0], rtol=1e-9)
    np.testing.assert_allclose(cat.sources["x"], com[:, 1], rtol=1e-9)
    assert cat.clip.count == clipped.size
    with pytest.raises(gpuws.InvalidArgumentError, match="host image"):
        gpuws.find_sources(ctx.asarray(img))


@pytest.mark.parametrize("variant", ["tiled", "naive", "shared"])
def test_matmul_is_numpy_matmul(ctx, rng, variant):
    a, b = rng.random((33, 70)).astype(np.float32), rng.random((70, 45)).astype(np.float32)
    want = a.astype(np.float64) @ b
    got = gpuws.matmul(a, b, variant=variant, ctx=ctx)
    np.testing.assert_allclose(got, want, rtol=70 * 2 ** -23)
    exact = rng.integers(-8, 8, (20, 30)).astype(np.float64)
    np.testing.assert_array_equal(gpuws.matmul(exact, exact.T, ctx=ctx), exact @ exact.T)


def test_transpose_and_l2_norm(ctx, rng):
    a = rng.random((37, 19))
    np.testing.assert_array_equal(gpuws.transpose(a, ctx=ctx), a.T)
    ints = rng.integers(0, 100, (5, 9), dtype=np.int32)
    np.testing.assert_array_equal(gpuws.transpose(ints, ctx=ctx), ints.T)
    np.testing.assert_allclose(gpuws.l2_norm(a, ctx=ctx), np.linalg.norm(a, axis=1), rtol=1e-14)


def test_reduce_sum_min_max(ctx, rng):
    x = rng.random(100001).astype(np.float32)
    assert gpuws.sum(x, ctx=ctx) == pytest.approx(x.astype(np.float64).sum(), rel=1e-7)
    assert gpuws.min(x, ctx=ctx) == x.min() and gpuws.max(x, ctx=ctx) == x.max()
    out = ctx.empty(1)
    assert gpuws.reduce(ctx.asarray(x), "max", out=out) is out and out.get()[0] == x.max()
    assert gpuws.sum(np.zeros(0, np.float32), ctx=ctx) == 0
    with pytest.raises(gpuws.InvalidArgumentError, match="no value"):
        gpuws.min(np.zeros(0, np.float32), ctx=ctx)


def test_histogram_is_numpy_histogram_on_half_open_bins(ctx, rng):
    x = rng.normal(0, 1, 50000).astype(np.float32)
    counts, edges = gpuws.histogram(x, bins=37, range=(-2.5, 3.0), ctx=ctx)
    want, want_edges = np.histogram(x.astype(np.float64), bins=37, range=(-2.5, 3.0))
    np.testing.assert_array_equal(edges, want_edges)
    np.testing.assert_array_equal(counts, want)  # no x == 3.0 exactly here
    with pytest.raises(gpuws.InvalidArgumentError, match="range"):
        gpuws.histogram(x, 10, ctx=ctx)


def test_ufuncs_are_the_workshops_formulas(ctx, rng):
    x = rng.normal(0, 2, 1000).astype(np.float32)
    y = rng.normal(0, 2, 1000).astype(np.float32)
    g = gpuws.gaussian_pdf(x, 0.5, 1.5, ctx=ctx)
    want = np.exp(-0.5 * ((x - np.float32(0.5)) / np.float32(1.5)) ** 2) / (np.float32(1.5) * math.sqrt(2 * math.pi))
    np.testing.assert_allclose(g, want, rtol=1e-5)
    np.testing.assert_allclose(gpuws.hypot(x, y, ctx=ctx), np.hypot(x, y), rtol=1e-6)
    d = gpuws.polar_distance(x, y, 1.0, 0.25, ctx=ctx)
    x64, y64 = x.astype(np.float64), y.astype(np.float64)
    np.testing.assert_allclose(d, np.hypot(x64 * np.cos(y64) - np.cos(0.25), x64 * np.sin(y64) - np.sin(0.25)),
                               rtol=1e-4, atol=1e-5)
    i = np.arange(1000, dtype=np.float32)
    np.testing.assert_allclose(gpuws.make_pulses(i, 16.0, 5.0, ctx=ctx),
                               np.maximum(np.sin(i / np.float32(16)) - np.float32(0.3), 0) * 5, atol=1e-5)
    w = rng.integers(-100, 100, 1000).astype(np.int16)
    np.testing.assert_array_equal(gpuws.zero_suppress(w, 15.5, ctx=ctx), np.where(w < 15.5, 0, w))
    gs, ws = np.floor(rng.uniform(0, 255, 1000)).astype(np.float32), rng.normal(0.5, 0.1, 1000).astype(np.float32)
    np.testing.assert_allclose(gpuws.hidden_layer(gs, ws, ctx=ctx), np.tanh(gs / 255 * ws), rtol=2e-6, atol=1e-7)
    nan = x.copy()
    nan[17] = np.nan
    with pytest.raises(gpuws.InvalidArgumentError, match="17"):
        gpuws.hypot(nan, y, checked=True, ctx=ctx)
    with pytest.raises(gpuws.InvalidArgumentError, match="at least one argument must be an array"):
        gpuws.hypot(1.0, 2.0, ctx=ctx)


def test_primes_are_the_workshops_check_prime(ctx):
    n = 10000
    want = np.array([i if i > 1 and all(i % d for d in range(2, int(i ** 0.5) + 1)) else 0 for i in range(n)],
                    np.int32)
    np.testing.assert_array_equal(gpuws.primes(n, ctx=ctx), want)
    np.testing.assert_array_equal(gpuws.primes(2000, variant="trial", ctx=ctx), want[:2000])
    assert gpuws.count_primes(n, ctx=ctx) == np.count_nonzero(want)


def test_monte_carlo_pi_counts_the_same_on_every_device(ctx):
    pi, hits = gpuws.monte_carlo_pi(10 ** 6, seed=42, return_hits=True, ctx=ctx)
    with gpuws.Context("cpu") as ref:
        assert gpuws.monte_carlo_pi(10 ** 6, seed=42, return_hits=True, ctx=ref) == (pi, hits)
    assert pi == 4 * hits / 10 ** 6 and abs(pi - math.pi) < 0.01
    # ranges add up
    a = gpuws.monte_carlo_pi(400000, seed=42, return_hits=True, ctx=ctx)[1]
    b = gpuws.monte_carlo_pi(600000, seed=42, first=400000, return_hits=True, ctx=ctx)[1]
    assert a + b == hits


def test_vector_add_and_work_queued_on_a_stream(ctx, rng):
    s = ctx.stream()
    a, b = rng.random(4097), rng.random(4097)
    np.testing.assert_array_equal(gpuws.add(a, b, stream=s), a + b)
    da = ctx.asarray(a)
    gpuws.vector_add(da, da, out=da, stream=s)
    np.testing.assert_array_equal(da.get(stream=s), a + a)
