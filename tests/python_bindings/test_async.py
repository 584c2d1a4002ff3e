"""Session.run_async: asyncio (event fd watched by the loop) and plain use."""
import asyncio
import selectors
import threading

import numpy as np
import pytest

import axle
from conftest import DIGITS, HEAVY_N


def test_asyncio_gather(digit_samples):
    images, labels = digit_samples
    sess = axle.Session(DIGITS)
    want = [sess.run(None, {"image": im[None]})[0] for im in images]

    async def main():
        runs = [sess.run_async(None, {"image": im[None]}) for im in images]
        return await asyncio.gather(*runs)

    got = asyncio.run(main())
    assert len(got) == len(images)
    for (g,), w in zip(got, want):
        np.testing.assert_array_equal(g, w)


def test_asyncio_waits_on_the_event_fd(heavy_model):
    """The loop is not blocked while runs execute: other tasks keep running."""
    sess = axle.Session(heavy_model, threads=1)
    x = np.ones((HEAVY_N, HEAVY_N), np.float32)
    ticks = []

    async def ticker(stop):
        while not stop.is_set():
            ticks.append(1)
            await asyncio.sleep(0.001)

    async def main():
        stop = asyncio.Event()
        tick = asyncio.ensure_future(ticker(stop))
        outs = await asyncio.gather(*[sess.run_async(None, {"x": x}) for _ in range(4)])
        stop.set()
        await tick
        return outs

    outs = asyncio.run(main())
    assert len(outs) == 4 and all(o[0].shape == (HEAVY_N, HEAVY_N) for o in outs)
    assert len(ticks) >= 3


def test_fd_becomes_readable_on_completion(heavy_model):
    sess = axle.Session(heavy_model, threads=1)
    run = sess.run_async(None, {"x": np.ones((HEAVY_N, HEAVY_N), np.float32)})
    sel = selectors.DefaultSelector()
    sel.register(run.fileno(), selectors.EVENT_READ)
    assert sel.select(timeout=60)
    sel.close()
    assert run.done()
    assert run.result()[0].shape == (HEAVY_N, HEAVY_N)


def test_result_done_wait_without_asyncio(add_model):
    sess = axle.Session(add_model)
    a = np.full((1, 1000), 3.0, np.float32)
    run = sess.run_async(None, {"a": a, "b": a})
    assert run.wait(timeout=30) is True
    assert run.done()
    (c,) = run.result()
    np.testing.assert_array_equal(c, 6.0)
    assert run.result()[0] is c          # the same outputs every time
    assert run.cancel() is False         # already finished
    assert "done" in repr(run)


def test_async_inputs_read_in_place_and_held(add_model):
    sess = axle.Session(add_model)
    a = np.ones((1, 1000), np.float32)
    b = np.ones((1, 1000), np.float32)
    run = sess.run_async(["c"], {"a": a, "b": b})
    assert sess._last_input_pointers() == {"a": a.ctypes.data, "b": b.ctypes.data}
    del a, b   # the run holds the input buffers until it completes
    np.testing.assert_array_equal(run.result(timeout=30)[0], 2.0)


def test_result_timeout_then_success(heavy_model):
    sess = axle.Session(heavy_model, threads=1)
    x = np.ones((HEAVY_N, HEAVY_N), np.float32)
    runs = [sess.run_async(None, {"x": x}) for _ in range(4)]
    last = runs[-1]
    if not last.done():
        try:
            last.result(timeout=0)
        except axle.Timeout as e:
            assert isinstance(e, TimeoutError) and e.code == 8
        else:
            pass  # finished in between: nothing to assert
    for r in runs:
        assert r.result(timeout=60)[0].shape == (HEAVY_N, HEAVY_N)


def test_cancel_pending_run(heavy_model):
    sess = axle.Session(heavy_model, threads=1)
    x = np.ones((HEAVY_N, HEAVY_N), np.float32)
    runs = [sess.run_async(None, {"x": x}) for _ in range(8)]
    cancelled = [r.cancel() for r in runs]
    outcomes = []
    for r, c in zip(runs, cancelled):
        try:
            r.result(timeout=60)
            outcomes.append("ok")
        except axle.Cancelled as e:
            assert c and e.code == 9 and not isinstance(e, asyncio.CancelledError)
            outcomes.append("cancelled")
    assert "cancelled" in outcomes, outcomes


def test_cancelling_the_awaiting_task_cancels_the_run(heavy_model):
    sess = axle.Session(heavy_model, threads=1)
    x = np.ones((HEAVY_N, HEAVY_N), np.float32)

    async def main():
        runs = [sess.run_async(None, {"x": x}) for _ in range(6)]
        task = asyncio.ensure_future(runs[-1])
        await asyncio.sleep(0)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        return runs

    runs = asyncio.run(main())
    for r in runs[:-1]:
        r.result(timeout=60)
    with pytest.raises((axle.Cancelled,)):
        runs[-1].result(timeout=60)


def test_async_errors_raise_from_await_and_result(add_model):
    sess = axle.Session(add_model)
    a = np.ones((1, 1000), np.float32)
    with pytest.raises(axle.NotFound):
        sess.run_async(None, {"a": a, "nope": a})    # refused at submit

    async def main():
        return await sess.run_async(["c"], {"a": a, "b": a})

    (c,) = asyncio.run(main())
    np.testing.assert_array_equal(c, 2.0)


def test_dropping_a_pending_run_is_safe(heavy_model):
    sess = axle.Session(heavy_model, threads=1)
    x = np.ones((HEAVY_N, HEAVY_N), np.float32)
    for _ in range(3):
        sess.run_async(None, {"x": x})   # dropped at once: cancelled and waited for
    assert sess._active == 0
    sess.run(None, {"x": x})


def test_run_async_from_threads(add_model):
    sess = axle.Session(add_model)
    a = np.ones((1, 1000), np.float32)
    errors = []

    def work():
        try:
            for _ in range(100):
                np.testing.assert_array_equal(sess.run_async(None, {"a": a, "b": a}).result()[0], 2)
        except Exception as e:
            errors.append(e)

    ts = [threading.Thread(target=work) for _ in range(3)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert not errors
    assert sess._active == 0
