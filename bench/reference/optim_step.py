"""optim_step: one Adam step over 10 million parameters split into 100 tensors of 100,000, with
fixed gradients, as the PyTorch counterpart of bench/optim_step.lua (issue #9). Reports the median
ms of ITERS steps of the default Adam (adam_step_ms) and of Adam(fused=True) (adam_fused_step_ms,
a side figure). Threads as the other references."""
import os
import sys
HERE = os.path.dirname(os.path.abspath(__file__))
SHARED = os.environ.get("SHARED_BENCH", os.path.join(HERE, "..", "..", "..", "shared", "bench"))
sys.path.insert(0, os.path.join(SHARED, "reference"))
from _common import header, result  # noqa: E402
import statistics  # noqa: E402
import time  # noqa: E402
import torch  # noqa: E402

NAME, NT, SIZE, ITERS = "optim_step", 100, 100_000, 20
header(NAME)
torch.manual_seed(0)


def timed(fused):
    params = [torch.randn(SIZE, requires_grad=True) for _ in range(NT)]
    for p in params:
        p.grad = torch.randn(SIZE)
    opt = torch.optim.Adam(params, lr=1e-3, fused=fused)
    opt.step()                                   # warm-up: allocates the moments
    times = []
    for _ in range(ITERS):
        t0 = time.perf_counter()
        opt.step()
        times.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(times)


default_ms = timed(None)
fused_ms = timed(True)
print(f"# {NT} tensors x {SIZE}: default {default_ms:.3f} ms, fused {fused_ms:.3f} ms")
result(NAME, ("adam_step_ms", default_ms, "ms"), ("adam_fused_step_ms", fused_ms, "ms"))
