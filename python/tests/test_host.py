"""The out-of-core calls convolve2d_host, convolve1d_host, label_host and find_sources_host: NumPy in, NumPy out,
through the device in bands or segments. Budgets small enough to force several bands or segments give the in-core
calls' bytes and SciPy's (NumPy's) results; several contexts (of one device here: the calls cannot tell) give the
same bytes; progress comes once per band, in order.
sigma_clip_host clips host values on the host's cores and gives sigma_clip's statistics."""

import numpy as np
import pytest
import scipy.ndimage as ndi
import scipy.signal as sig

import gpuws

from test_algorithms import close_to_sum, numpy_sigma_clip


def in_core_bytes(img, k, mode):
    """What the in-core form of convolve2d_host holds on the device: image, output and kernel."""
    oh, ow = sig.convolve2d(np.zeros(img.shape), np.zeros(k.shape), mode=mode).shape
    return (img.size + oh * ow + k.size) * img.itemsize


def more_contexts(ctx, n):
    """n further contexts on ctx's device (GPUWS_DEVICE and GPUWS_OPENCL_PLATFORM choose it as they chose ctx's)."""
    return [gpuws.Context(ctx.backend, device=ctx.device_index) for _ in range(n)]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("mode,boundary", [("full", "fill"), ("same", "symm"), ("valid", "fill"), ("same", "wrap")])
def test_convolve2d_host_in_bands_is_convolve2d_and_scipy(ctx, rng, dtype, mode, boundary):
    img = rng.random((67, 45)).astype(dtype)
    k = rng.random((5, 4)).astype(dtype)
    budget = in_core_bytes(img, k, mode) // 4
    bands = gpuws.convolve2d_host_bands(img.shape, k.shape, dtype, mode, boundary, max_device_memory=budget, ctx=ctx)
    assert bands.bands >= 4
    got = gpuws.convolve2d_host(img, k, mode, boundary, fillvalue=0.5, max_device_memory=budget, ctx=ctx)
    assert got.dtype == dtype
    np.testing.assert_array_equal(got, gpuws.convolve2d(img, k, mode, boundary, fillvalue=0.5, ctx=ctx))
    close_to_sum(got, sig.convolve2d(img, k, mode=mode, boundary=boundary, fillvalue=0.5), k.size, dtype)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("mode", ["full", "same", "valid"])
def test_convolve1d_host_in_segments_is_convolve1d_and_numpy(ctx, rng, dtype, mode):
    a, v = rng.random(30011).astype(dtype), rng.random(41).astype(dtype)
    budget = (41 + 3 * (41 + 16) + 6 * 4096) * a.itemsize  # the filter and three slots of 4096 outputs
    segs = gpuws.convolve1d_host_segments(a.size, v.size, dtype, mode, max_device_memory=budget, ctx=ctx)
    assert segs.segment == 4096 and segs.segments >= 7
    for x, y in ((a, v), (v, a)):  # NumPy's swap: the longer input is the signal
        got = gpuws.convolve1d_host(x, y, mode, max_device_memory=budget, ctx=ctx)
        assert got.dtype == dtype
        np.testing.assert_array_equal(got, gpuws.convolve1d(x, y, mode, ctx=ctx))
        close_to_sum(got, np.convolve(x, y, mode), v.size, dtype)
    with pytest.raises(gpuws.InvalidArgumentError, match="too small"):
        gpuws.convolve1d_host(a, v, mode, max_device_memory=budget - 1, ctx=ctx)


def test_convolve1d_host_over_several_contexts_gives_the_same_bytes(ctx, rng):
    a, v = rng.random(50000).astype(np.float32), rng.random(15).astype(np.float32)
    ctxs = [ctx] + more_contexts(ctx, 2)
    assert gpuws.convolve1d_host_segments(a.size, v.size, contexts=ctxs).segments >= 3
    np.testing.assert_array_equal(gpuws.convolve1d_host(a, v, contexts=ctxs), gpuws.convolve1d(a, v, ctx=ctx))
    for c in ctxs[1:]:
        c.close()


def test_convolve2d_host_by_default_runs_in_core(ctx, rng):
    img, k = rng.random((40, 30)).astype(np.float32), rng.random((3, 3)).astype(np.float32)
    assert gpuws.convolve2d_host_bands(img.shape, k.shape, ctx=ctx) == (42, 1)
    calls = []
    got = gpuws.convolve2d_host(img, k, progress=lambda *a: calls.append(a), ctx=ctx)
    np.testing.assert_array_equal(got, gpuws.convolve2d(img, k, ctx=ctx))
    assert calls == [(0, 1, 42, 42)]


def test_convolve2d_host_mixed_dtypes_give_float64_like_convolve2d(ctx, rng):
    img = rng.integers(0, 10, (30, 20))  # int64
    k = np.ones((3, 3), np.float32)
    got = gpuws.convolve2d_host(img, k, max_device_memory=in_core_bytes(img, k, "full") // 3, ctx=ctx)
    assert got.dtype == np.float64
    np.testing.assert_array_equal(got, sig.convolve2d(img, k))


def test_convolve2d_host_progress_comes_once_per_band_in_order(ctx, rng):
    img, k = rng.random((50, 40)).astype(np.float32), rng.random((7, 3)).astype(np.float32)
    budget = in_core_bytes(img, k, "same") // 5
    rows, bands = gpuws.convolve2d_host_bands(img.shape, k.shape, mode="same", max_device_memory=budget, ctx=ctx)
    calls = []
    gpuws.convolve2d_host(img, k, "same", max_device_memory=budget, progress=lambda *a: calls.append(a), ctx=ctx)
    assert bands > 3 and calls == [(b, bands, min((b + 1) * rows, 50), 50) for b in range(bands)]


def test_convolve2d_host_over_three_contexts_gives_the_same_bytes(ctx, rng):
    img, k = rng.random((90, 61)).astype(np.float32), rng.random((5, 5)).astype(np.float32)
    budget = in_core_bytes(img, k, "same") // 4
    one = gpuws.convolve2d_host(img, k, "same", "symm", max_device_memory=budget, ctx=ctx)
    ctxs = [ctx] + more_contexts(ctx, 2)
    rows, bands = gpuws.convolve2d_host_bands(img.shape, k.shape, mode="same", boundary="symm",
                                              max_device_memory=budget, contexts=ctxs)
    calls = []
    three = gpuws.convolve2d_host(img, k, "same", "symm", max_device_memory=budget, contexts=ctxs,
                                  progress=lambda *a: calls.append(a))
    np.testing.assert_array_equal(three, one)
    assert bands >= 6 and calls == [(b, bands, min((b + 1) * rows, 90), 90) for b in range(bands)]
    two = gpuws.convolve2d_host(img, k, "same", "symm", max_device_memory=budget, contexts=ctxs[1:])
    np.testing.assert_array_equal(two, one)
    for c in ctxs[1:]:
        c.close()


def test_convolve2d_host_takes_row_strided_views_and_copies_other_layouts(ctx, rng):
    big = rng.random((90, 70)).astype(np.float32)
    k = rng.random((4, 3)).astype(np.float32)
    for view in (big[7:80, 5:60],      # rows apart by 70 elements: passed as they lie, with the row stride
                 big[7:80, 5:6],       # one column
                 big[::2, ::3],        # columns apart: copied
                 big[::-1],            # rows backwards: copied
                 np.asfortranarray(big)):
        budget = in_core_bytes(view, k, "full") // 3
        got = gpuws.convolve2d_host(view, k, max_device_memory=budget, ctx=ctx)
        np.testing.assert_array_equal(got, gpuws.convolve2d(np.ascontiguousarray(view), k, ctx=ctx))
    kernel_view = big[:5, :4]  # a strided kernel is copied (the C call takes none)
    np.testing.assert_array_equal(gpuws.convolve2d_host(big, kernel_view, ctx=ctx),
                                  gpuws.convolve2d(big, kernel_view.copy(), ctx=ctx))


def test_convolve2d_host_writes_into_out(ctx, rng):
    img, k = rng.random((33, 20)), rng.random((3, 3))
    out = np.full((35, 22), np.nan)
    assert gpuws.convolve2d_host(img, k, out=out, max_device_memory=2000, ctx=ctx) is out
    np.testing.assert_array_equal(out, gpuws.convolve2d(img, k, ctx=ctx))
    bad = (np.empty((35, 22), np.float32), np.empty((35, 21)), np.empty((22, 35)).T, np.empty((35, 22 * 2))[:, ::2])
    for o in bad:
        with pytest.raises(gpuws.InvalidArgumentError, match="out must be a writeable C-contiguous float64 array"):
            gpuws.convolve2d_host(img, k, out=o, ctx=ctx)
    ro = np.empty((35, 22))
    ro.flags.writeable = False
    with pytest.raises(gpuws.InvalidArgumentError, match="read-only"):
        gpuws.convolve2d_host(img, k, out=ro, ctx=ctx)


def test_convolve2d_host_budget_below_one_band_raises_the_library_error(ctx):
    img, k = np.ones((20, 16), np.float32), np.ones((3, 3), np.float32)
    minimum = (3 * 16 + 18 + 9) * 4  # one slot of one output row (3 input rows of 16, 18 outputs) and the kernel
    out = np.full((22, 18), np.nan, np.float32)
    for call in (lambda: gpuws.convolve2d_host(img, k, max_device_memory=minimum - 1, out=out, ctx=ctx),
                 lambda: gpuws.convolve2d_host_bands(img.shape, k.shape, max_device_memory=minimum - 1, ctx=ctx)):
        with pytest.raises(gpuws.InvalidArgumentError,
                           match="a device budget of %d bytes is too small: .* need at least %d bytes"
                           % (minimum - 1, minimum)):
            call()
    assert np.isnan(out).all()
    assert gpuws.convolve2d_host_bands(img.shape, k.shape, max_device_memory=minimum, ctx=ctx) == (1, 22)
    np.testing.assert_array_equal(gpuws.convolve2d_host(img, k, max_device_memory=minimum, ctx=ctx),
                                  gpuws.convolve2d(img, k, ctx=ctx))


class Stop(Exception):
    pass


def test_a_progress_callback_that_raises_is_raised_after_the_call(ctx, rng):
    img, k = rng.random((60, 40)).astype(np.float32), rng.random((5, 5)).astype(np.float32)
    budget = in_core_bytes(img, k, "full") // 4
    calls = []

    def stop(*args):
        calls.append(args)
        raise Stop("at band %d" % args[0])

    for contexts in (None, [ctx] + more_contexts(ctx, 1)):
        calls.clear()
        out = np.full((64, 44), np.nan, np.float32)
        with pytest.raises(Stop, match="at band 0"):
            gpuws.convolve2d_host(img, k, max_device_memory=budget, progress=stop, out=out,
                                  ctx=None if contexts else ctx, contexts=contexts)
        assert len(calls) == 1  # not called again once it raised; the call ran to its end
        np.testing.assert_array_equal(out, gpuws.convolve2d(img, k, ctx=ctx))
        calls.clear()
        with pytest.raises(Stop, match="at band 0"):
            gpuws.label_host(img > 0.5, max_device_memory=img.size, progress=lambda *a: stop(*a[2:]),
                             ctx=None if contexts else ctx, contexts=contexts)
        assert len(calls) == 1
    contexts[1].close()


def test_convolve2d_host_refuses_what_it_cannot_take(ctx):
    img, k = np.ones((8, 8), np.float32), np.ones((3, 3), np.float32)
    with pytest.raises(gpuws.InvalidArgumentError, match="takes host memory: in1 is a gpuws.Array"):
        gpuws.convolve2d_host(ctx.asarray(img), k, ctx=ctx)
    with pytest.raises(gpuws.InvalidArgumentError, match="'full', 'same', 'valid'"):
        gpuws.convolve2d_host(img, k, mode="fool", ctx=ctx)
    with pytest.raises(gpuws.InvalidArgumentError, match="in1 must be 2-D"):
        gpuws.convolve2d_host(img.ravel(), k, ctx=ctx)
    for budget in (-1, 1.5, "1G", True):
        with pytest.raises(gpuws.InvalidArgumentError, match="max_device_memory"):
            gpuws.convolve2d_host(img, k, max_device_memory=budget, ctx=ctx)
    with pytest.raises(gpuws.InvalidArgumentError, match="progress must be a callable"):
        gpuws.convolve2d_host(img, k, progress=3, ctx=ctx)
    with pytest.raises(gpuws.InvalidArgumentError, match="not both"):
        gpuws.convolve2d_host(img, k, ctx=ctx, contexts=[ctx])
    with pytest.raises(gpuws.InvalidArgumentError, match="contexts= is a list"):
        gpuws.convolve2d_host(img, k, contexts=ctx)
    with pytest.raises(gpuws.InvalidArgumentError, match="is ctx again"):
        gpuws.convolve2d_host(img, k, contexts=[ctx, ctx])
    closed = gpuws.Context(ctx.backend, device=ctx.device_index)
    closed.close()
    with pytest.raises(gpuws.InvalidArgumentError, match="the context is closed"):
        gpuws.convolve2d_host(img, k, contexts=[ctx, closed])


def banded_calls(ctxs, bands, rows, h):
    """label_host's progress calls over bands: one pass where every device is a CPU (each band's labels kept and
    mapped in place), pass 1 then pass 2 on GPUs."""
    passes = 1 if all(c.device.type == "cpu" for c in ctxs) else 2
    return [(p, passes, b, bands, min((b + 1) * rows, h), h) for p in range(1, passes + 1) for b in range(bands)]


@pytest.mark.parametrize("connectivity", [4, 8])
def test_label_host_in_bands_is_label_and_scipy(ctx, rng, connectivity):
    mask = rng.random((83, 57)) > 0.55
    budget = mask.size * 5 // 4  # a quarter of the mask and its labels
    rows, bands = gpuws.label_host_bands(mask.shape, max_device_memory=budget, ctx=ctx)
    assert bands >= 4
    calls = []
    labels, n = gpuws.label_host(mask, connectivity, max_device_memory=budget, progress=lambda *a: calls.append(a),
                                 ctx=ctx)
    want, want_n = ndi.label(mask, structure=None if connectivity == 4 else np.ones((3, 3)))
    assert n == want_n and labels.dtype == np.int32
    np.testing.assert_array_equal(labels, want)
    in_core, in_core_n = gpuws.label(mask, connectivity, ctx=ctx)
    assert n == in_core_n
    np.testing.assert_array_equal(labels, in_core)
    assert calls == banded_calls([ctx], bands, rows, 83)


def test_label_host_by_default_runs_in_core_in_one_pass(ctx, rng):
    mask = rng.random((30, 20)) > 0.5
    calls = []
    labels, n = gpuws.label_host(mask, progress=lambda *a: calls.append(a), ctx=ctx)
    want, want_n = ndi.label(mask)
    assert n == want_n and calls == [(1, 1, 0, 1, 30, 30)]
    np.testing.assert_array_equal(labels, want)


def test_label_host_over_three_contexts_gives_the_same_labels(ctx, rng):
    mask = rng.random((120, 50)) > 0.4
    budget = mask.size * 5 // 6
    one, n1 = gpuws.label_host(mask, 8, max_device_memory=budget, ctx=ctx)
    ctxs = [ctx] + more_contexts(ctx, 2)
    rows, bands = gpuws.label_host_bands(mask.shape, max_device_memory=budget, contexts=ctxs)
    calls = []
    three, n3 = gpuws.label_host(mask, 8, max_device_memory=budget, contexts=ctxs,
                                 progress=lambda *a: calls.append(a))
    assert n3 == n1 and bands >= 6
    np.testing.assert_array_equal(three, one)
    assert calls == banded_calls(ctxs, bands, rows, 120)
    for c in ctxs[1:]:
        c.close()


def test_label_host_masks_of_every_layout_and_dtype(ctx, rng):
    base = rng.random((70, 60))
    budget = 70 * 60 * 5 // 3
    masks = {
        "bool": base > 0.5,
        "uint8 of any non-zero byte": np.where(base > 0.5, rng.integers(1, 256, base.shape), 0).astype(np.uint8),
        "int8, negative too": np.where(base > 0.5, -3, 0).astype(np.int8),
        "float": np.where(base > 0.5, base - 0.5, 0.0),
        "a row-strided uint8 window": (base > 0.5).astype(np.uint8)[5:66, 3:50],
        "columns apart": (base > 0.5)[:, ::2],
        "Fortran order": np.asfortranarray(base > 0.5),
    }
    for what, mask in masks.items():
        want, want_n = ndi.label(mask != 0)
        labels, n = gpuws.label_host(mask, max_device_memory=budget, ctx=ctx)
        assert n == want_n, what
        np.testing.assert_array_equal(labels, want, err_msg=what)


def test_label_host_of_an_empty_mask_is_nothing_as_label(ctx):
    labels, n = gpuws.label_host(np.zeros((0, 5), bool), ctx=ctx)
    assert n == 0 and labels.shape == (0, 5) and labels.dtype == np.int32


def test_label_host_budget_below_one_band_raises_the_library_error(ctx):
    mask = np.ones((12, 16), bool)
    minimum = 5 * 16 + 4 * 2  # one row: its mask and labels, and gpuws_label's counts
    out = np.full(mask.shape, -1, np.int32)
    with pytest.raises(gpuws.InvalidArgumentError,
                       match="a device budget of %d bytes is too small: .* needs at least %d bytes"
                       % (minimum - 1, minimum)):
        gpuws.label_host(mask, max_device_memory=minimum - 1, out=out, ctx=ctx)
    assert (out == -1).all()
    assert gpuws.label_host_bands(mask.shape, max_device_memory=minimum, ctx=ctx) == (1, 12)
    labels, n = gpuws.label_host(mask, max_device_memory=minimum, out=out, ctx=ctx)
    assert labels is out and n == 1 and (out == 1).all()


def test_label_host_refuses_what_it_cannot_take(ctx):
    mask = np.ones((8, 8), bool)
    with pytest.raises(gpuws.InvalidArgumentError, match="connectivity must be 4 or 8"):
        gpuws.label_host(mask, connectivity=6, ctx=ctx)
    with pytest.raises(gpuws.InvalidArgumentError, match="mask must be 2-D"):
        gpuws.label_host(np.ones((2, 2, 2)), ctx=ctx)
    with pytest.raises(gpuws.InvalidArgumentError, match="takes host memory: mask is a gpuws.Array"):
        gpuws.label_host(ctx.asarray(mask.astype(np.uint8)), ctx=ctx)
    with pytest.raises(gpuws.InvalidArgumentError, match="out must be a writeable C-contiguous int32 array"):
        gpuws.label_host(mask, out=np.empty((8, 8), np.int64), ctx=ctx)


def test_contexts_from_a_gpuws_device_list_share_the_bands(ctx, rng, monkeypatch):
    monkeypatch.setenv("GPUWS_DEVICE", "0,0,0")  # one device three times: three contexts
    three = gpuws.contexts(ctx.backend)
    img, k = rng.random((70, 40)).astype(np.float32), rng.random((3, 3)).astype(np.float32)
    budget = in_core_bytes(img, k, "full") // 4
    np.testing.assert_array_equal(gpuws.convolve2d_host(img, k, max_device_memory=budget, contexts=three),
                                  gpuws.convolve2d_host(img, k, max_device_memory=budget, contexts=three[:1]))
    for c in three:
        c.close()
    with pytest.raises(gpuws.InvalidArgumentError, match="the context is closed"):
        gpuws.convolve2d_host(img, k, contexts=three)


def test_sigma_clip_host_is_sigma_clip_in_exact_sums(ctx, rng):
    data = rng.normal(10, 2, (150, 130)).astype(np.float32)
    data[rng.random(data.shape) > 0.99] = 1000
    data[3, :7] = np.nan
    got = gpuws.sigma_clip_host(data, ctx=ctx)
    want = gpuws.sigma_clip(data, ctx=ctx)
    assert isinstance(got, gpuws.SigmaClipResult)
    assert (got.count, got.median, got.iterations, got.converged) == (want.count, want.median, want.iterations,
                                                                      want.converged)
    assert got.std == pytest.approx(want.std, rel=1e-12, abs=0)
    assert got.mean == pytest.approx(want.mean, rel=1e-12, abs=0)


def test_sigma_clip_host_is_the_workshops_numpy_loop(ctx):
    data = np.array([[1, 2, 3, 4, 5, 6], [7, 8, 9, 10, 11, np.nan], [100, 2.5, 4.5, 6.5, 3, 200]])
    for kappa in (3.0, 2.0):
        want = numpy_sigma_clip(data.astype(np.float32), kappa)  # float64 input is converted to float32
        r = gpuws.sigma_clip_host(data, kappa=kappa, ctx=ctx)
        assert r.converged and (r.count, r.median) == (want.size, np.median(want))
        assert r.std == pytest.approx(want.std(), rel=1e-12)
    one_pass = gpuws.sigma_clip_host(data, kappa=2.0, max_iterations=1, ctx=ctx)
    x = data[~np.isnan(data)]
    first = x[np.abs(x - np.median(x)) < 2 * x.std()]  # the loop's first pass
    assert first.size < x.size and first.size > numpy_sigma_clip(x, 2.0).size
    assert (one_pass.count, one_pass.median, one_pass.iterations, one_pass.converged) == (first.size,
                                                                                         np.median(first), 1, False)
    with pytest.raises(gpuws.InvalidArgumentError):
        gpuws.sigma_clip_host(np.full(4, np.nan, np.float32), ctx=ctx)
    with pytest.raises(gpuws.InvalidArgumentError, match="host memory"):
        gpuws.sigma_clip_host(ctx.asarray(data.astype(np.float32)))


def sky(rng, shape=(96, 120), n=14):
    img = rng.normal(0, 1, shape).astype(np.float32)
    for y, x in rng.integers(3, min(shape) - 3, (n, 2)):
        img[y - 1:y + 2, x - 2:x + 1] += 40
    img[0, :4] = np.nan
    return img


@pytest.mark.parametrize("connectivity", [4, 8])
def test_find_sources_host_is_find_sources_in_core_and_in_bands(ctx, rng, connectivity):
    img = sky(rng)
    want = gpuws.find_sources(img, connectivity=connectivity, return_labels=True, ctx=ctx)
    assert len(want) >= 5
    budget = img.size * 5 // 4  # a quarter of the mask and its labels
    rows, bands = gpuws.label_host_bands(img.shape, max_device_memory=budget, ctx=ctx)
    assert bands >= 4
    for memory, passes in ((None, 1), (budget, 2)):
        calls = []
        got = gpuws.find_sources_host(img, connectivity=connectivity, return_labels=True, max_device_memory=memory,
                                      progress=lambda *a: calls.append(a), ctx=ctx)
        assert isinstance(got, gpuws.Catalog) and len(got) == len(want)
        np.testing.assert_array_equal(got.labels, want.labels)
        assert (got.clip.count, got.clip.median) == (want.clip.count, want.clip.median)
        assert got.threshold == pytest.approx(want.threshold, rel=1e-12)
        np.testing.assert_array_equal(got.sources["npix"], want.sources["npix"])
        np.testing.assert_allclose(got.sources["flux"], want.sources["flux"], rtol=1e-9)
        h = img.shape[0]
        if passes == 1:
            assert calls == [(1, 1, 0, 1, h, h)]
        else:
            assert calls == banded_calls([ctx], bands, rows, h)


def test_find_sources_host_over_three_contexts_and_its_keywords(ctx, rng):
    img = sky(rng, (110, 70), 10)
    want = gpuws.find_sources(img, threshold_abs=20.0, kappa=2.5, max_iterations=3, return_labels=True, ctx=ctx)
    ctxs = [ctx] + more_contexts(ctx, 2)
    got = gpuws.find_sources_host(img, threshold_abs=20.0, kappa=2.5, max_iterations=3, return_labels=True,
                                  max_device_memory=img.size * 5 // 6, contexts=ctxs)
    assert got.threshold == 20.0 and len(got) == len(want)
    np.testing.assert_array_equal(got.labels, want.labels)
    assert (got.clip.count, got.clip.iterations) == (want.clip.count, want.clip.iterations)
    assert gpuws.find_sources_host(img, ctx=ctx).labels is None
    for c in ctxs[1:]:
        c.close()
    with pytest.raises(gpuws.InvalidArgumentError, match="connectivity"):
        gpuws.find_sources_host(img, connectivity=6, ctx=ctx)
    with pytest.raises(gpuws.InvalidArgumentError, match="host memory"):
        gpuws.find_sources_host(ctx.asarray(img))
    with pytest.raises(gpuws.InvalidArgumentError, match="2-D"):
        gpuws.find_sources_host(img.ravel(), ctx=ctx)

    def stop(*args):
        raise Stop("at pass %d band %d" % args[::2][:2])

    with pytest.raises(Stop, match="at pass 1 band 0"):
        gpuws.find_sources_host(img, max_device_memory=img.size, progress=stop, ctx=ctx)
