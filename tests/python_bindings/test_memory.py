"""10,000 runs with stable memory (RSS from /proc/self/statm)."""
import gc

import numpy as np
import pytest

import axle
from conftest import DIGITS, SANITIZED, statm_rss_bytes

RUNS = 10_000
# AddressSanitizer keeps freed blocks in a quarantine (up to 256 MB) before
# reusing them, so RSS grows with any churn there; the bound is then loose.
BOUND = (300 << 20) if SANITIZED else (4 << 20)


def test_10000_sync_runs_stable_rss(digit_samples):
    images, _ = digit_samples
    sess = axle.Session(DIGITS)
    feeds = [{"image": im[None]} for im in images]
    converted = {"image": images[0][None].astype(np.float64)}   # exercises the copy path
    for i in range(1000):
        sess.run(None, feeds[i % len(feeds)])
        sess.run(["scores"], converted)
    gc.collect()
    before = statm_rss_bytes()
    keep = None
    for i in range(RUNS):
        (out,) = sess.run(None, feeds[i % len(feeds)])
        if i % 7 == 0:
            sess.run(["scores"], converted)
        keep = out          # one output alive at a time, dropped on the next run
    gc.collect()
    grown = statm_rss_bytes() - before
    assert keep.shape == (1, 10)
    assert grown < BOUND, "RSS grew by %d bytes over %d runs" % (grown, RUNS)


def test_async_runs_and_sessions_stable_rss(add_model):
    a = np.ones((1, 1000), np.float32)

    def cycle(n):
        sess = axle.Session(add_model)
        for _ in range(n):
            run = sess.run_async(None, {"a": a, "b": a})
            run.result()
        pending = [sess.run_async(None, {"a": a, "b": a}) for _ in range(8)]
        sess.close()               # deferred until the pending runs are gone
        del pending

    for _ in range(20):
        cycle(100)
    gc.collect()
    before = statm_rss_bytes()
    for _ in range(50):
        cycle(100)
    gc.collect()
    grown = statm_rss_bytes() - before
    assert grown < BOUND, "RSS grew by %d bytes" % grown


def test_buffers_and_dlpack_stable_rss():
    def cycle():
        buf = axle.Buffer((256,), np.float32)
        arr = np.from_dlpack(buf)
        arr[:] = 1
        buf.__dlpack__()          # never consumed: the capsule frees it
        np.from_dlpack(buf, copy=True)

    for _ in range(2000):
        cycle()
    gc.collect()
    before = statm_rss_bytes()
    for _ in range(RUNS):
        cycle()
    gc.collect()
    grown = statm_rss_bytes() - before
    assert grown < BOUND, "RSS grew by %d bytes" % grown


@pytest.mark.parametrize("n", [3])
def test_output_refcount_release(add_model, n):
    """Outputs free their tensor when the last view goes (weak check via exports)."""
    sess = axle.Session(add_model)
    a = np.ones((1, 1000), np.float32)
    outs = [sess.run(None, {"a": a, "b": a})[0] for _ in range(n)]
    owners = [o.base.obj for o in outs]
    assert all(o.exports == 1 for o in owners)
    del outs
    gc.collect()
    assert all(o.exports == 0 for o in owners)
