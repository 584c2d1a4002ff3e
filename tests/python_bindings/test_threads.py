"""The GIL is released around runs: Python threads overlap."""
import contextlib
import sys
import threading

import numpy as np
import pytest

import axle
from conftest import HEAVY_N

RUNS = 6


@contextlib.contextmanager
def gil_handoff_only_when_released():
    """Makes the interpreter's forced GIL hand-over (every 5 ms by default)
    practically never happen, so another thread gets to run Python only
    when the running one releases the GIL itself, as run() must. That turns
    "the threads overlap" into an ordering fact instead of a timing one."""
    old = sys.getswitchinterval()
    sys.setswitchinterval(60.0)
    try:
        yield
    finally:
        sys.setswitchinterval(old)


def _runs_in_thread(sess, x, runs):
    """Starts a thread that signals `entering` and then runs sess `runs`
    times; `finished` is set when the last run has returned."""
    entering, finished = threading.Event(), threading.Event()
    errors = []

    def work():
        entering.set()
        try:
            for _ in range(runs):
                sess.run(None, {"x": x})
        except Exception as e:  # collected and re-raised in the main thread
            errors.append(e)
        finished.set()

    t = threading.Thread(target=work)
    t.start()
    return t, entering, finished, errors


def test_two_threads_two_sessions_overlap(heavy_model):
    """Thread B starts its own session's run while thread A is still inside
    run(): with the GIL held for a whole run, B could start only after A's
    runs returned (the switch interval is a minute)."""
    sessions = [axle.Session(heavy_model, threads=1) for _ in range(2)]
    x = np.random.default_rng(0).standard_normal((HEAVY_N, HEAVY_N)).astype(np.float32)
    want = sessions[0].run(None, {"x": x})[0]
    with gil_handoff_only_when_released():
        a, a_entering, a_finished, a_errors = _runs_in_thread(sessions[0], x, RUNS)
        a_entering.wait()
        got = {}

        def b_work():
            got["a_busy_when_b_started"] = not a_finished.is_set()
            got["y"] = sessions[1].run(None, {"x": x})[0]

        b = threading.Thread(target=b_work)
        b.start()
        b.join()
        a.join()
    assert not a_errors, a_errors
    assert got["a_busy_when_b_started"], "thread B could not start until A's runs returned"
    np.testing.assert_array_equal(got["y"], want)


def test_python_progresses_during_a_run(heavy_model):
    """While another thread is inside run(), this thread keeps executing
    Python: it wakes up and finds the other thread's runs unfinished."""
    sess = axle.Session(heavy_model, threads=1)
    x = np.random.default_rng(1).standard_normal((HEAVY_N, HEAVY_N)).astype(np.float32)
    with gil_handoff_only_when_released():
        t, entering, finished, errors = _runs_in_thread(sess, x, RUNS)
        entering.wait()
        progressed_during_run = not finished.is_set()
        t.join()
    assert not errors, errors
    assert progressed_during_run, "this thread could not run Python until the runs returned"


def test_concurrent_runs_on_one_session(cnn_model):
    """A session may be run from several threads at once; results stay correct."""
    sess = axle.Session(cnn_model)
    rng = np.random.default_rng(5)
    xs = [rng.standard_normal((2, 3, 16, 16)).astype(np.float32) for _ in range(4)]
    want = [sess.run(["probs"], {"x": x})[0] for x in xs]
    errors = []

    def work(i):
        try:
            for _ in range(50):
                (got,) = sess.run(["probs"], {"x": xs[i]})
                np.testing.assert_array_equal(got, want[i])
        except Exception as e:  # collected and re-raised in the main thread
            errors.append(e)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors


def test_close_while_another_thread_runs(heavy_model):
    """close() during a run defers the release; the run finishes normally."""
    sess = axle.Session(heavy_model, threads=1)
    x = np.ones((HEAVY_N, HEAVY_N), np.float32)
    started = threading.Event()
    result = {}

    def worker():
        started.set()
        result["y"] = sess.run(None, {"x": x})[0]

    t = threading.Thread(target=worker)
    t.start()
    started.wait()
    sess.close()
    t.join()
    assert result["y"].shape == (HEAVY_N, HEAVY_N)
    with pytest.raises(axle.InvalidArgument):
        sess.run(None, {"x": x})
