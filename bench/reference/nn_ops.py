"""nn_ops: forward + backward of one layer at a representative size, for each layer family that
issue #8 adds, as the PyTorch counterpart of bench/nn_ops.lua. Each op: 2 warm-up iterations, then
the median ms of ITERS timed iterations of y = layer(x); y.backward(g) (gradients of the input and
of the weights). Threads as the other references (../../../shared/bench/reference/_common.py)."""
import os
import sys
HERE = os.path.dirname(os.path.abspath(__file__))
SHARED = os.environ.get("SHARED_BENCH", os.path.join(HERE, "..", "..", "..", "shared", "bench"))
sys.path.insert(0, os.path.join(SHARED, "reference"))
from _common import header, result  # noqa: E402
import statistics  # noqa: E402
import time  # noqa: E402
import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402

NAME, ITERS = "nn_ops", 20
header(NAME)
torch.manual_seed(0)

# (metric, input shape, layer) -- the same table as bench/nn_ops.lua
CASES = [
    ("conv1d_ms", (32, 64, 256), nn.Conv1d(64, 64, 5, padding=2)),
    ("conv3d_ms", (8, 16, 16, 16, 16), nn.Conv3d(16, 32, 3, padding=1)),
    ("conv_transpose2d_ms", (16, 64, 16, 16), nn.ConvTranspose2d(64, 32, 4, stride=2, padding=1)),
    ("depthwise_conv2d_ms", (32, 64, 32, 32), nn.Conv2d(64, 64, 3, padding=1, groups=64)),
    ("batch_norm2d_ms", (64, 64, 32, 32), nn.BatchNorm2d(64)),
    ("group_norm_ms", (32, 64, 32, 32), nn.GroupNorm(8, 64)),
    ("upsample_bilinear2d_ms", (16, 32, 32, 32),
     lambda x: F.interpolate(x, scale_factor=2, mode="bilinear", align_corners=False)),
]

triples = []
for metric, shape, layer in CASES:
    if isinstance(layer, nn.Module):
        layer.train()
    x = torch.randn(*shape, requires_grad=True)
    with torch.no_grad():
        g = torch.randn_like(layer(x))

    def step():
        if isinstance(layer, nn.Module):
            layer.zero_grad(set_to_none=True)
        x.grad = None
        y = layer(x)
        y.backward(g)

    step()
    step()
    times = []
    for _ in range(ITERS):
        t0 = time.perf_counter()
        step()
        times.append((time.perf_counter() - t0) * 1e3)
    ms = statistics.median(times)
    print(f"# {metric}: input {list(shape)} median {ms:.3f} ms over {ITERS}")
    triples.append((metric, ms, "ms"))
result(NAME, *triples)
