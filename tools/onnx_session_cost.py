"""What ``dimguard.onnx.Session``'s shape check costs against ``run``, on the small ONNX file of
tests/data/onnx (raft_pair, written by tools/onnx_fixtures.py). Prints microseconds per call
(median of repeated batches): the check at a shape seen before (a dictionary look-up), the check
at a new shape (the native verdict over every condition the program checks), plain
onnxruntime's ``run``, and the Session's ``run``.

    python tools/onnx_session_cost.py
"""

import pathlib
import statistics
import time

import numpy as np
import onnxruntime as ort

import dimguard.onnx

FILE = pathlib.Path(__file__).resolve().parents[1] / "tests" / "data" / "onnx" / "raft_pair.onnx"


def per_call(f, n):
    """Median over 7 batches of ``n`` calls, in microseconds per call."""
    out = []
    for _ in range(7):
        t0 = time.perf_counter()
        for _ in range(n):
            f()
        out.append((time.perf_counter() - t0) / n * 1e6)
    return statistics.median(out)


def main() -> None:
    sess = dimguard.onnx.Session(FILE, providers=["CPUExecutionProvider"])
    plain = ort.InferenceSession(str(FILE), providers=["CPUExecutionProvider"])
    ok = sess.report.dims[0]
    del ok
    h = 64
    feed = {"image1": np.random.randn(1, 3, h, h).astype(np.float32), "image2": np.random.randn(1, 3, h, h).astype(np.float32)}
    assert sess.check(feed)["accepted"] is True, sess.check(feed)
    cached = per_call(lambda: sess.check(feed), 20000)
    fresh_feeds = []
    for b in range(1, 5):
        for k in range(200):
            fresh_feeds.append({"image1": np.empty((b, 3, 1000 + k, h), np.float32), "image2": np.empty((b, 3, 1000 + k, h), np.float32)})
    it = iter(fresh_feeds)
    sess._cache.clear()
    t0 = time.perf_counter()
    for f in fresh_feeds:
        sess.check(f)
    fresh = (time.perf_counter() - t0) / len(fresh_feeds) * 1e6
    del it
    run_plain = per_call(lambda: plain.run(None, feed), 200)
    run_sess = per_call(lambda: sess.run(None, feed), 200)
    print(f"file: {FILE.name}; input 1x3x{h}x{h} (two frames)")
    print(f"check, a shape seen before:  {cached:8.1f} us")
    print(f"check, a new shape:          {fresh:8.1f} us")
    print(f"onnxruntime run:             {run_plain:8.1f} us")
    print(f"Session.run (check + run):   {run_sess:8.1f} us  ({(run_sess - run_plain) / run_plain * 100:+.1f}%)")


if __name__ == "__main__":
    main()
