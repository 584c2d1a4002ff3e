#!/usr/bin/env python3
"""Train the digits example model and export it as ONNX.

A small CNN written in plain numpy (forward and backward by hand) is trained
on scikit-learn's bundled 8x8 digits (load_digits: nothing is downloaded),
exported with the `onnx` package, and checked against onnxruntime.

Outputs (next to this file):
  digits.onnx           input "image" [1,1,8,8] float32 in [0,1] (pixel/16),
                        output "scores" [1,10] float32 probabilities
  accuracy.txt          held-out accuracy
  samples/<label>_<idx>.pgm / .npy   one held-out image per class

Usage: python3 examples/digits/train.py [--epochs N] [--out DIR]
"""

import argparse
import os
import sys
import time

import numpy as np

SEED = 20240501
TEST_FRACTION = 0.25

# Architecture: Conv3x3(1->C1) ReLU MaxPool2 Conv3x3(C1->C2) ReLU Flatten Gemm(->10) Softmax
C1 = 8
C2 = 16
NUM_CLASSES = 10


# --------------------------------------------------------------------------
# Layers. Activations are NCHW float32. im2col turns each 3x3 "same" conv
# into one matrix product, which keeps numpy fast enough for a minute budget.
# --------------------------------------------------------------------------

def im2col3x3(x):
    """x [N,C,H,W] -> cols [N*H*W, C*9] for a 3x3 kernel, stride 1, pad 1."""
    n, c, h, w = x.shape
    xp = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)))
    cols = np.empty((n, c, 3, 3, h, w), dtype=x.dtype)
    for ky in range(3):
        for kx in range(3):
            cols[:, :, ky, kx] = xp[:, :, ky:ky + h, kx:kx + w]
    # Order (c, ky, kx) matches ONNX weight layout [M, C, kH, kW] flattened.
    return cols.transpose(0, 4, 5, 1, 2, 3).reshape(n * h * w, c * 9)


def col2im3x3(dcols, shape):
    """Adjoint of im2col3x3: scatter-add column gradients back to [N,C,H,W]."""
    n, c, h, w = shape
    d = dcols.reshape(n, h, w, c, 3, 3).transpose(0, 3, 4, 5, 1, 2)
    dxp = np.zeros((n, c, h + 2, w + 2), dtype=dcols.dtype)
    for ky in range(3):
        for kx in range(3):
            dxp[:, :, ky:ky + h, kx:kx + w] += d[:, :, ky, kx]
    return dxp[:, :, 1:h + 1, 1:w + 1]


def conv_forward(x, wgt, b):
    n, _, h, w = x.shape
    m = wgt.shape[0]
    cols = im2col3x3(x)
    out = cols @ wgt.reshape(m, -1).T + b
    return out.reshape(n, h, w, m).transpose(0, 3, 1, 2), cols


def conv_backward(dout, cols, x_shape, wgt):
    m = wgt.shape[0]
    d = dout.transpose(0, 2, 3, 1).reshape(-1, m)
    dw = (d.T @ cols).reshape(wgt.shape)
    db = d.sum(axis=0)
    dx = col2im3x3(d @ wgt.reshape(m, -1), x_shape)
    return dx, dw, db


def maxpool2_forward(x):
    n, c, h, w = x.shape
    win = x.reshape(n, c, h // 2, 2, w // 2, 2).transpose(0, 1, 2, 4, 3, 5).reshape(n, c, h // 2, w // 2, 4)
    arg = win.argmax(axis=4)
    out = np.take_along_axis(win, arg[..., None], axis=4)[..., 0]
    # The gradient goes to one winner per window (the first on ties).
    mask = np.arange(4) == arg[..., None]
    return out, mask


def maxpool2_backward(dout, mask):
    n, c, h2, w2 = dout.shape
    d = mask * dout[..., None]
    return d.reshape(n, c, h2, w2, 2, 2).transpose(0, 1, 2, 4, 3, 5).reshape(n, c, h2 * 2, w2 * 2)


def softmax(z):
    z = z - z.max(axis=1, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis=1, keepdims=True)


class Net:
    def __init__(self, rng):
        def he(shape, fan_in):
            return (rng.standard_normal(shape) * np.sqrt(2.0 / fan_in)).astype(np.float32)
        self.p = {
            "w1": he((C1, 1, 3, 3), 9), "b1": np.zeros(C1, np.float32),
            "w2": he((C2, C1, 3, 3), C1 * 9), "b2": np.zeros(C2, np.float32),
            "w3": he((NUM_CLASSES, C2 * 4 * 4), C2 * 16), "b3": np.zeros(NUM_CLASSES, np.float32),
        }

    def forward(self, x, keep=False):
        p = self.p
        z1, cols1 = conv_forward(x, p["w1"], p["b1"])
        a1 = np.maximum(z1, 0)
        m1, mask1 = maxpool2_forward(a1)
        z2, cols2 = conv_forward(m1, p["w2"], p["b2"])
        a2 = np.maximum(z2, 0)
        f = a2.reshape(a2.shape[0], -1)
        logits = f @ p["w3"].T + p["b3"]
        if keep:
            self.cache = (x.shape, z1, cols1, mask1, m1.shape, z2, cols2, a2.shape, f)
        return logits

    def backward(self, dlogits):
        p = self.p
        x_shape, z1, cols1, mask1, m1_shape, z2, cols2, a2_shape, f = self.cache
        g = {"w3": dlogits.T @ f, "b3": dlogits.sum(axis=0)}
        da2 = (dlogits @ p["w3"]).reshape(a2_shape)
        dz2 = da2 * (z2 > 0)
        dm1, g["w2"], g["b2"] = conv_backward(dz2, cols2, m1_shape, p["w2"])
        da1 = maxpool2_backward(dm1, mask1)
        dz1 = da1 * (z1 > 0)
        _, g["w1"], g["b1"] = conv_backward(dz1, cols1, x_shape, p["w1"])
        return g

    def predict_proba(self, x):
        return softmax(self.forward(x))


class Adam:
    def __init__(self, params, lr=3e-3, b1=0.9, b2=0.999, eps=1e-8):
        self.lr, self.b1, self.b2, self.eps = lr, b1, b2, eps
        self.m = {k: np.zeros_like(v) for k, v in params.items()}
        self.v = {k: np.zeros_like(v) for k, v in params.items()}
        self.t = 0

    def step(self, params, grads, lr):
        self.t += 1
        for k in params:
            self.m[k] = self.b1 * self.m[k] + (1 - self.b1) * grads[k]
            self.v[k] = self.b2 * self.v[k] + (1 - self.b2) * grads[k] ** 2
            mh = self.m[k] / (1 - self.b1 ** self.t)
            vh = self.v[k] / (1 - self.b2 ** self.t)
            params[k] -= (lr * mh / (np.sqrt(vh) + self.eps)).astype(np.float32)


def train(net, x, y, epochs, rng, batch=32, weight_decay=1e-4):
    opt = Adam(net.p)
    n = x.shape[0]
    for epoch in range(epochs):
        # Cosine decay: a few epochs at a high rate, then settle.
        lr = opt.lr * 0.5 * (1 + np.cos(np.pi * epoch / epochs))
        order = rng.permutation(n)
        loss_sum = 0.0
        for i in range(0, n, batch):
            idx = order[i:i + batch]
            logits = net.forward(x[idx], keep=True)
            prob = softmax(logits)
            loss_sum += -np.log(prob[np.arange(len(idx)), y[idx]] + 1e-12).sum()
            dlogits = prob
            dlogits[np.arange(len(idx)), y[idx]] -= 1
            dlogits /= len(idx)
            grads = net.backward(dlogits.astype(np.float32))
            for k in ("w1", "w2", "w3"):
                grads[k] = grads[k] + weight_decay * net.p[k]
            opt.step(net.p, grads, lr)
        yield epoch, loss_sum / n


# --------------------------------------------------------------------------
# Export
# --------------------------------------------------------------------------

def export_onnx(net, path):
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    p = net.p
    inits = [numpy_helper.from_array(p[k].astype(np.float32), name=k)
             for k in ("w1", "b1", "w2", "b2", "w3", "b3")]
    nodes = [
        helper.make_node("Conv", ["image", "w1", "b1"], ["conv1_out"], name="conv1",
                         kernel_shape=[3, 3], pads=[1, 1, 1, 1], strides=[1, 1]),
        helper.make_node("Relu", ["conv1_out"], ["relu1_out"], name="relu1"),
        helper.make_node("MaxPool", ["relu1_out"], ["pool1_out"], name="pool1",
                         kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("Conv", ["pool1_out", "w2", "b2"], ["conv2_out"], name="conv2",
                         kernel_shape=[3, 3], pads=[1, 1, 1, 1], strides=[1, 1]),
        helper.make_node("Relu", ["conv2_out"], ["relu2_out"], name="relu2"),
        helper.make_node("Flatten", ["relu2_out"], ["flat"], name="flatten", axis=1),
        helper.make_node("Gemm", ["flat", "w3", "b3"], ["logits"], name="fc", transB=1),
        helper.make_node("Softmax", ["logits"], ["scores"], name="softmax", axis=1),
    ]
    graph = helper.make_graph(
        nodes, "digits",
        [helper.make_tensor_value_info("image", TensorProto.FLOAT, [1, 1, 8, 8])],
        [helper.make_tensor_value_info("scores", TensorProto.FLOAT, [1, 10])],
        initializer=inits,
        doc_string="8x8 digit classifier. Input: grey image, white digit on black, "
                   "float in [0,1] (scikit-learn digits pixel/16). Output: class probabilities.")
    # IR 7 is what opset 13 shipped with; older onnx.proto readers accept it.
    model = helper.make_model(graph, producer_name="axle-examples-digits",
                              opset_imports=[helper.make_opsetid("", 13)], ir_version=7)
    model.doc_string = graph.doc_string
    onnx.checker.check_model(model)
    onnx.save(model, path)


def write_pgm(path, img16):
    """8-bit binary PGM, pixel = value*255/16 (white digit on black)."""
    pix = np.clip(np.rint(img16 * 255.0 / 16.0), 0, 255).astype(np.uint8)
    h, w = pix.shape
    with open(path, "wb") as f:
        f.write(b"P5\n%d %d\n255\n" % (w, h))
        f.write(pix.tobytes())


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--epochs", type=int, default=30)
    ap.add_argument("--out", default=os.path.dirname(os.path.abspath(__file__)))
    args = ap.parse_args()

    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split

    t0 = time.time()
    digits = load_digits()
    images = digits.images.astype(np.float32)       # [N,8,8], 0..16
    labels = digits.target.astype(np.int64)
    indices = np.arange(len(labels))
    idx_tr, idx_te = train_test_split(indices, test_size=TEST_FRACTION, random_state=SEED,
                                      stratify=labels)
    x_tr = (images[idx_tr] / 16.0)[:, None]
    x_te = (images[idx_te] / 16.0)[:, None]
    y_tr, y_te = labels[idx_tr], labels[idx_te]

    rng = np.random.default_rng(SEED)
    net = Net(rng)
    for epoch, loss in train(net, x_tr, y_tr, args.epochs, rng):
        if epoch % 5 == 4 or epoch == args.epochs - 1:
            print(f"epoch {epoch + 1:3d}  loss {loss:.4f}  ({time.time() - t0:.1f} s)")

    prob_np = net.predict_proba(x_te)
    pred_np = prob_np.argmax(axis=1)
    acc = float((pred_np == y_te).mean())
    print(f"held-out accuracy: {acc:.4f} ({len(y_te)} images)")

    os.makedirs(args.out, exist_ok=True)
    onnx_path = os.path.join(args.out, "digits.onnx")
    export_onnx(net, onnx_path)

    # The exported graph must compute what was trained: same argmax on every
    # held-out image, probabilities equal to float32 rounding.
    import onnxruntime as ort
    sess = ort.InferenceSession(onnx_path, providers=["CPUExecutionProvider"])
    prob_ort = np.concatenate([sess.run(["scores"], {"image": x_te[i:i + 1]})[0]
                               for i in range(len(x_te))])
    pred_ort = prob_ort.argmax(axis=1)
    max_diff = float(np.abs(prob_ort - prob_np).max())
    if not np.array_equal(pred_ort, pred_np) or max_diff > 1e-4:
        print(f"onnxruntime disagrees with numpy: {int((pred_ort != pred_np).sum())} predictions "
              f"differ, max |prob diff| {max_diff:.3g}", file=sys.stderr)
        return 1
    print(f"onnxruntime agrees on all {len(y_te)} held-out images (max |prob diff| {max_diff:.2g})")

    with open(os.path.join(args.out, "accuracy.txt"), "w") as f:
        f.write(f"held-out accuracy: {acc:.4f} ({len(y_te)} images, "
                f"{int(TEST_FRACTION * 100)}% stratified split, seed {SEED})\n")

    # One sample per class: the first held-out image of that class whose
    # 8-bit PGM rendering the model classifies correctly, so that the README's
    # demo shows the right digit. The file name keeps the data set index.
    sample_dir = os.path.join(args.out, "samples")
    os.makedirs(sample_dir, exist_ok=True)
    for name in os.listdir(sample_dir):
        if name.endswith((".pgm", ".npy")):
            os.remove(os.path.join(sample_dir, name))
    for label in range(NUM_CLASSES):
        for k in np.flatnonzero(y_te == label):
            img16 = images[idx_te[k]]
            as_pgm = np.rint(img16 * 255.0 / 16.0) / 255.0
            if net.predict_proba(as_pgm[None, None].astype(np.float32)).argmax() != label:
                continue
            stem = os.path.join(sample_dir, f"{label}_{idx_te[k]}")
            write_pgm(stem + ".pgm", img16)
            np.save(stem + ".npy", (img16 / 16.0).reshape(1, 1, 8, 8).astype(np.float32))
            break
    print(f"wrote {onnx_path}, accuracy.txt and samples/ in {time.time() - t0:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
