#!/usr/bin/env python3
"""Held-out and calibration data for the k210 digits test.

Repeats examples/digits/train.py's split of scikit-learn's bundled digits
(load_digits: nothing is downloaded) and writes, into OUT_DIR:
  heldout.f32  the 25% held-out images, float32 [N, 1, 8, 8] (pixel / 16)
  calib.f32    the first 64 training images, the same layout
Exit status 77 when numpy or scikit-learn is missing.
"""
import os
import sys

SEED = 20240501  # examples/digits/train.py

try:
    import numpy as np
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split
except ImportError as e:
    print(f"SKIP: {e}", file=sys.stderr)
    sys.exit(77)

out = sys.argv[1]
os.makedirs(out, exist_ok=True)
digits = load_digits()
images = (digits.images.astype(np.float32) / 16.0)[:, None]
idx = np.arange(len(digits.target))
train, test = train_test_split(idx, test_size=0.25, random_state=SEED, stratify=digits.target)
images[test].astype("<f4").tofile(os.path.join(out, "heldout.f32"))
images[train[:64]].astype("<f4").tofile(os.path.join(out, "calib.f32"))
