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
    acc = {(d.input, d.index): d.accepted for d in sess.report.dims}
    h, w = acc[("image1", 2)].min, acc[("image1", 3)].min
    feed = {n: np.random.randn(1, 3, h, w).astype(np.float32) for n in ("image1", "image2")}
    assert sess.check(feed)["accepted"] is True, sess.check(feed)
    cached = per_call(lambda: sess.check(feed), 20000)
    # Every accepted shape (image2 = image1), each checked once: the native verdict each time.
    fresh = [
        {n: np.empty((b, 3, hh, ww), np.float32) for n in ("image1", "image2")}
        for b in acc[("image1", 0)] for hh in acc[("image1", 2)] for ww in acc[("image1", 3)]
    ]
    sess._cache.clear()
    t0 = time.perf_counter()
    for f in fresh:
        assert sess.check(f)["accepted"] is True
    new = (time.perf_counter() - t0) / len(fresh) * 1e6
    run_plain = per_call(lambda: plain.run(None, feed), 200)
    run_sess = per_call(lambda: sess.run(None, feed), 200)
    print(f"file: {FILE.name}; inputs 1x3x{h}x{w} (two frames); {len(fresh)} accepted shapes for the new-shape check")
    print(f"check, a shape seen before:  {cached:8.1f} us")
    print(f"check, a new shape:          {new:8.1f} us")
    print(f"onnxruntime run:             {run_plain:8.1f} us")
    print(f"Session.run (check + run):   {run_sess:8.1f} us  ({(run_sess - run_plain) / run_plain * 100:+.1f}%)")


if __name__ == "__main__":
    main()
