#!/usr/bin/env python3
"""report.py: the side-by-side table of bench/run.sh, made from measure.py's log.

    report.py --log FILE [--note JOB=TEXT ...] [--meta KEY=VALUE ...]

The log (measure.py --log) holds every attempt of every job with its exit code
and full output; the last attempt of each (job, rep) is the one measure.py
kept. Values are the median over reps. A job that printed `NOTYET <reason>`
(or `NOTYET <metric>: <reason>` for one metric) shows as "not yet" with the
reason; a job that failed shows its exit code and last line; a job that did
not run shows its --note (for example "not run with --quick").
"""
import argparse
import re
import statistics

# (label, metric, unit, fastnn job, fastnn RESULT name, reference job, reference RESULT name, kind, target)
#   metric 'a|b': the fastnn side reports a, the reference side b
#   kind 'le': time ratio fastnn/reference must be <= target
#   kind 'ge': throughput ratio fastnn/reference must be >= target
#   kind 'acc': fastnn accuracy must be >= reference accuracy - target (points)
#   kind 'info': ratio shown, no target
ROWS = [
    ("tiny_ops (a) add [16], no_grad", "add_us_per_op", "us", "fnn_tiny_ops", "tiny_ops",
     "torch_tiny_ops", "tiny_ops", "le", 0.2),
    ("tiny_ops (b) MLP 32-32-32-1 SGD step", "mlp_us_per_step", "us", "fnn_tiny_ops", "tiny_ops",
     "torch_tiny_ops", "tiny_ops", "le", 0.35),
    ("mlp_fmnist epoch", "sec_per_epoch", "s", "fnn_mlp_fmnist", "mlp_fmnist",
     "torch_mlp_fmnist", "mlp_fmnist", "le", 0.5),
    ("mlp_fmnist test accuracy", "test_acc", "%", "fnn_mlp_fmnist", "mlp_fmnist",
     "torch_mlp_fmnist", "mlp_fmnist", "acc", 1.5),
    ("cnn_fmnist step", "ms_per_step", "ms", "fnn_cnn_fmnist", "cnn_fmnist",
     "torch_cnn_fmnist", "cnn_fmnist", "le", 0.5),
    ("cnn_fmnist step vs torch im2col (CNN_MKLDNN=0)", "ms_per_step", "ms", "fnn_cnn_fmnist", "cnn_fmnist",
     "torch_cnn_fmnist_im2col", "cnn_fmnist", "info", None),
    ("resnet_small step", "ms_per_step", "ms", "fnn_resnet_small", "resnet_small",
     "torch_resnet_small", "resnet_small", "le", 0.6),   # issue 32: every training workload <= 0.6x eager
    ("gpt_generate cached greedy decoding", "ms_per_token", "ms", "fnn_gpt_generate", "gpt_generate",
     "torch_gpt_generate", "gpt_generate", "le", 0.5),
    ("gpt_generate late/early token cost (fastnn; PyTorch's beside)", "late_over_early", "x", "fnn_gpt_generate",
     "gpt_generate", "torch_gpt_generate", "gpt_generate", "info", None),
    ("char_gpt step", "ms_per_step", "ms", "fnn_char_gpt", "char_gpt",
     "torch_char_gpt", "char_gpt", "le", 0.6),   # issue 32: every training workload <= 0.6x eager
    ("lstm_seq step", "ms_per_step", "ms", "fnn_lstm_seq", "lstm_seq",
     "torch_lstm_seq", "lstm_seq", "le", 0.6),   # issue 32: every training workload <= 0.6x eager
] + [
    (f"nn_ops {label} fwd+bwd", metric, "ms", "fnn_nn_ops", "nn_ops", "torch_nn_ops", "nn_ops", "le", 1.0)
    for label, metric in [("conv1d [32,64,256] k5", "conv1d_ms"), ("conv3d [8,16,16^3] k3", "conv3d_ms"),
                          ("conv_transpose2d [16,64,16,16] k4 s2", "conv_transpose2d_ms"),
                          ("depthwise conv2d [32,64,32,32] k3", "depthwise_conv2d_ms"),
                          ("batch_norm2d [64,64,32,32]", "batch_norm2d_ms"),
                          ("group_norm 8 groups [32,64,32,32]", "group_norm_ms"),
                          ("bilinear upsampling x2 [16,32,32,32]", "upsample_bilinear2d_ms")]
] + [
    ("optim_step Adam, 10M params in 100 tensors", "adam_step_ms", "ms", "fnn_optim_step", "optim_step",
     "torch_optim_step", "optim_step", "le", 1.0),
    ("optim_step Adam vs torch fused=True", "adam_step_ms|adam_fused_step_ms", "ms", "fnn_optim_step", "optim_step",
     "torch_optim_step", "optim_step", "le", 1.0),   # issue 32
    # fastnn against its own figures (the 'PyTorch' column holds the second figure)
    ("data_loader shuffled epoch, batch 128 / mlp_fmnist epoch", "loader_s|mlp_hand_s", "s", "fnn_data_loader",
     "data_loader", "fnn_data_loader", "data_loader", "le", 0.05),
    ("data_loader shuffled epoch, DataLoader(..., {reuse = true}) / mlp_fmnist epoch", "loader_reuse_s|mlp_hand_s", "s",
     "fnn_data_loader", "data_loader", "fnn_data_loader", "data_loader", "le", 0.05),   # issue 32: batch buffers reused
    ("mlp_fmnist via DataLoader:prefetch(2) / hand-batched", "mlp_loader_s|mlp_hand_s", "s", "fnn_data_loader",
     "data_loader", "fnn_data_loader", "data_loader", "le", 1.0),
    ("keras fit() on mlp_fmnist / the hand-written loop", "fit_sec_per_epoch|hand_sec_per_epoch", "s",
     "fnn_keras_fit_overhead", "keras_fit_overhead", "fnn_keras_fit_overhead", "keras_fit_overhead", "le", 1.05),
    ("checkpoint save 100 MB, cp time / save time", "cp_ms|save_ms", "ms", "fnn_checkpoint", "checkpoint",
     "fnn_checkpoint", "checkpoint", "ge", 0.5),
    ("checkpoint load 100 MB, cp time / load time", "cp_ms|load_ms", "ms", "fnn_checkpoint", "checkpoint",
     "fnn_checkpoint", "checkpoint", "ge", 0.5),
    # pictures from disk: decode + RandomResizedCrop(224) + flip + Normalize, batch 32 (issue 25);
    # the reference is Pillow + torch's DataLoader(num_workers=2): no torchvision matches this torch
    ("image_loader ImageFolder + prefetch(4, {workers = 2}) vs torchvision ImageFolder + DataLoader(num_workers=2)", "images_per_s", "img/s",
     "fnn_image_loader", "image_loader", "torch_image_loader", "image_loader_reference", "ge", 1.5),
    ("sgemm n=1024, 1 thread (vs raw OpenBLAS)", "gflops", "GFLOP/s", "fnn_sgemm", "sgemm_fastnn_t1_n1024",
     "blas_sgemm_t1", "sgemm_t1_n1024", "ge", 0.9),
    ("sgemm n=1024, 2 threads (vs raw OpenBLAS)", "gflops", "GFLOP/s", "fnn_sgemm", "sgemm_fastnn_t2_n1024",
     "blas_sgemm_t2", "sgemm_t2_n1024", "ge", 0.9),
] + [
    # the compute layer against the machine: fastnn's GEMMs over the measured 2-thread FMA peak
    (f"sgemm {label}, 2 threads / FMA peak", "gflops", "GFLOP/s", "fnn_sgemm", f"sgemm_{key}_t2",
     "blas_sgemm_t1", "fma_peak_t2", "ge", 0.7)
    for key, label in [("fastnn", "n=1024"), ("shape_qkv", "char_gpt qkv 2048x128x384"),
                       ("shape_fc1", "char_gpt fc1 2048x128x512"), ("shape_fc2", "char_gpt fc2 2048x512x128"),
                       ("shape_fc1_dx", "char_gpt fc1 dx 2048x512x128"),
                       ("shape_fc1_dw", "char_gpt fc1 dW 512x2048x128"),
                       ("shape_lstm_step", "lstm_seq step 32x256x1024"),
                       ("shape_lstm_input", "lstm_seq input 1600x64x1024"),
                       ("shape_mlp1", "mlp layer 128x784x128")]
]
# fixes the FMA-peak row of n=1024 (its RESULT name carries the size)
ROWS = [r if r[4] != "sgemm_fastnn_t2" else r[:4] + ("sgemm_fastnn_t2_n1024",) + r[5:] for r in ROWS]

# README's ratios on AMD Zen 3 (df31ead, 2026-12-01): the AVX2-only rows (bench/run.sh --avx2)
# must not be worse; lstm_seq: issue 32's 0.8 as an AVX2-only CPU
ZEN3 = {"mlp_fmnist epoch": 0.502, "cnn_fmnist step": 0.557, "resnet_small step": 1.034, "char_gpt step": 1.073,
        "lstm_seq step": 0.8, "nn_ops conv1d [32,64,256] k5 fwd+bwd": 0.835,
        "nn_ops conv3d [8,16,16^3] k3 fwd+bwd": 1.119, "nn_ops conv_transpose2d [16,64,16,16] k4 s2 fwd+bwd": 1.404,
        "nn_ops depthwise conv2d [32,64,32,32] k3 fwd+bwd": 0.605, "nn_ops batch_norm2d [64,64,32,32] fwd+bwd": 0.289,
        "nn_ops group_norm 8 groups [32,64,32,32] fwd+bwd": 0.766,
        "nn_ops bilinear upsampling x2 [16,32,32,32] fwd+bwd": 0.211}
AVX2_ROWS = [(label + ", as an AVX2-only CPU", metric, unit, fj.replace("fnn_", "fnn_avx2_", 1), fr,
              rj.replace("torch_", "torch_avx2_", 1), rr, kind, ZEN3[label])
             for (label, metric, unit, fj, fr, rj, rr, kind, target) in ROWS if label in ZEN3]

# bf16 (bench/run.sh --bf16): fastnn under fnn.set_float32_precision('bf16') against PyTorch's mkldnn
# fp32_precision = 'bf16' (TORCH_MODE=bf16), and fastnn's fnn.autocast against torch.autocast
# (TORCH_MODE=autocast_bf16, issue 31's target: <= 0.7); each also against fastnn's own float32 run
# (autocast's target: 1.5x faster, so <= 0.667)
TRAINING = ["mlp_fmnist epoch", "cnn_fmnist step", "resnet_small step", "char_gpt step", "lstm_seq step"]
BF16_ROWS = []
for tag, what, vs_torch, vs_self in (("bf16", "bf16 precision", None, None), ("autocast", "autocast bf16", 0.7, 0.667)):
    for (label, metric, unit, fj, fr, rj, rr, kind, target) in ROWS:
        if label not in TRAINING or metric == "test_acc":
            continue
        BF16_ROWS.append((f"{label}, {what} (vs PyTorch's)", metric, unit, fj.replace("fnn_", f"fnn_{tag}_", 1), fr,
                          rj.replace("torch_", f"torch_{tag}_", 1), rr, "le" if vs_torch else "info", vs_torch))
        BF16_ROWS.append((f"{label}, {what} / fastnn float32", metric, unit, fj.replace("fnn_", f"fnn_{tag}_", 1), fr,
                          fj, fr, "le" if vs_self else "info", vs_self))
    BF16_ROWS.append((f"mlp_fmnist test accuracy, {what}", "test_acc", "%", f"fnn_{tag}_mlp_fmnist", "mlp_fmnist",
                      "fnn_mlp_fmnist", "mlp_fmnist", "acc", 0.5))
# torch.compile (bench/run.sh --compile): fastnn float32 against PyTorch compiled (TORCH_MODE=compile;
# issue 32's target: <= 0.8)
COMPILE_ROWS = [(f"{label}, vs torch.compile", metric, unit, fj, fr, rj.replace("torch_", "torch_compile_", 1), rr,
                 "le", 0.8)
                for (label, metric, unit, fj, fr, rj, rr, kind, target) in ROWS
                if label in TRAINING and metric != "test_acc"]
# the bf16 products of the workloads' shapes (bench/sgemm.lua, operands' conversion included) over the
# float32 FMA peak: bf16 units pass it (issue 31's target: >= 1.4)
ROWS += [(f"bf16 gemm {label}, 2 threads / float32 FMA peak", "gflops", "GFLOP/s", "fnn_sgemm", f"bf16_{key}_t2",
          "blas_sgemm_t1", "fma_peak_t2", "ge", 1.4)
         for key, label in [("fastnn_t2_n1024", "n=1024"), ("shape_qkv", "char_gpt qkv 2048x128x384"),
                            ("shape_fc1", "char_gpt fc1 2048x128x512"), ("shape_fc2", "char_gpt fc2 2048x512x128"),
                            ("shape_lstm_step", "lstm_seq step 32x256x1024"), ("shape_mlp1", "mlp layer 128x784x128")]]
ROWS = [r if r[4] != "bf16_fastnn_t2_n1024_t2" else r[:4] + ("bf16_fastnn_t2_n1024",) + r[5:] for r in ROWS]
# the same on the bf16 units where fnn.set_bf16_path('auto') passed over them (bench/sgemm.lua prints these
# only there): side figures, the measurement behind that choice
ROWS += [(f"bf16 gemm {label} on the bf16 units ('native'), 2 threads / float32 FMA peak", "gflops", "GFLOP/s",
          "fnn_sgemm", f"bf16_native_{key}", "blas_sgemm_t1", "fma_peak_t2", "info", None)
         for key, label in [("fastnn_t2_n1024", "n=1024"), ("shape_qkv_t2", "char_gpt qkv 2048x128x384"),
                            ("shape_lstm_step_t2", "lstm_seq step 32x256x1024"),
                            ("shape_mlp1_t2", "mlp layer 128x784x128")]]

METRICS = {m for row in ROWS + BF16_ROWS + COMPILE_ROWS for m in row[1].split("|")}
SIGNALS = {4: "SIGILL", 6: "SIGABRT", 7: "SIGBUS", 8: "SIGFPE", 9: "SIGKILL", 11: "SIGSEGV", 15: "SIGTERM"}

HEAD = re.compile(r"^=== (\S+) rep=(\d+) attempt=(\d+) rc=(-?\d+) wall=([\d.]+)s "
                  r"foreign_cpu=([\d.]+) canary_ns=([\d.]+)/([\d.]+)( CONTAMINATED)?$")


def parse_log(path):
    """-> {job: {rep: attempt}} with attempt = dict(rc, out, foreign, canary, contaminated)"""
    runs = {}
    cur = None
    with open(path, errors="replace") as f:
        for line in f:
            m = HEAD.match(line.rstrip("\n"))
            if m:
                job, rep = m.group(1), int(m.group(2))
                cur = {"rc": int(m.group(4)), "wall": float(m.group(5)), "foreign": float(m.group(6)),
                       "canary": (float(m.group(7)), float(m.group(8))),
                       "contaminated": bool(m.group(9)), "lines": []}
                runs.setdefault(job, {})[rep] = cur      # a later attempt replaces an earlier one
            elif cur is not None:
                cur["lines"].append(line.rstrip("\n"))
    return runs


def results_of(lines):
    """RESULT lines -> {(name, metric): value}"""
    res = {}
    for line in lines:
        if line.startswith("RESULT "):
            toks = line.split()
            name, rest = toks[1], toks[2:]
            for i in range(0, len(rest) - 1, 2):
                if "=" in rest[i]:
                    m, v = rest[i].split("=", 1)
                    try:
                        res[(name, m)] = float(v)
                    except ValueError:
                        pass
    return res


class Job:
    def __init__(self, name, reps, note):
        self.name, self.reps, self.note = name, reps or {}, note

    def values(self, rname, metric):
        vals = []
        for rep in sorted(self.reps):
            v = results_of(self.reps[rep]["lines"]).get((rname, metric))
            if v is not None:
                vals.append(v)
        return vals

    def median(self, rname, metric):
        vals = self.values(rname, metric)
        return statistics.median(vals) if vals else None

    def why_missing(self, metric):
        """text for a cell without a value"""
        if not self.reps:
            return self.note or "not run"
        last = self.reps[max(self.reps)]
        generic = None
        for line in last["lines"]:
            if line.startswith("NOTYET"):
                reason = line[len("NOTYET"):].strip()
                m = re.match(r"^(\w+): (.*)$", reason)
                if m and m.group(1) == metric:
                    return "not yet: " + m.group(2)
                if not (m and m.group(1) in METRICS):     # a reason for another metric
                    generic = generic or reason
        if generic:
            return "not yet: " + generic
        if last["rc"] != 0:
            tail = [l for l in last["lines"] if l.strip() and not l.startswith(("RESULT ", "# "))]
            msg = tail[-1].strip() if tail else ""
            for l in tail:          # the first Lua error line is more telling than a traceback's end
                if re.search(r"(error|luajit:|Error)", l):
                    msg = l.strip()
                    break
            rc = last["rc"]
            if rc > 128 and rc - 128 in SIGNALS:
                return f"error (killed by {SIGNALS[rc - 128]}): {msg[:160]}"
            return f"error (exit {rc}): {msg[:160]}"
        return "no result"

    def headers(self):
        out = []
        for rep in sorted(self.reps):
            out += [l for l in self.reps[rep]["lines"] if l.startswith("# ")]
        return out


def fmt(v, unit):
    if v is None:
        return None
    if unit == "s":
        return f"{v:.3f} s"
    if unit == "%":
        return f"{v:.2f} %"
    if unit == "GFLOP/s":
        return f"{v:.1f} GFLOP/s"
    if abs(v) >= 100:
        return f"{v:.1f} {unit}"
    return f"{v:.3g} {unit}"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--log", required=True)
    ap.add_argument("--note", action="append", default=[], help="JOB=TEXT for a job that did not run")
    ap.add_argument("--meta", action="append", default=[], help="KEY=VALUE for the header")
    ap.add_argument("--workloads", default="", help="the workloads of this run, space-separated")
    a = ap.parse_args()
    notes = dict(n.split("=", 1) for n in a.note)
    meta = dict(m.split("=", 1) for m in a.meta)
    runs = parse_log(a.log)
    jobs = {}

    def job(name):
        if name not in jobs:
            jobs[name] = Job(name, runs.get(name), notes.get(name))
        return jobs[name]

    # ---- header: versions, machine, threads ----
    torch_ver = None
    blas_cfg = None
    for jn in runs:
        for h in job(jn).headers():
            m = re.match(r"^# \w+: torch (\S+)(?: \([^)]*\))?, intra-op threads (\d+), OPENBLAS_NUM_THREADS=(\S+), "
                         r"mkldnn enabled=(\w+), python (\S+)", h)
            if m and not torch_ver:
                torch_ver = (f"PyTorch {m.group(1)} (python {m.group(5)}): torch.set_num_threads({m.group(2)}), "
                             f"OPENBLAS_NUM_THREADS={m.group(3)}")
            m = re.match(r"^# (.*) \| core=(\S+) \| openblas threads=(\d+)", h)
            if m and not blas_cfg:
                blas_cfg = f"OpenBLAS {m.group(1).split()[1] if len(m.group(1).split()) > 1 else m.group(1)} core={m.group(2)}"
    if not torch_ver:
        torch_ver = meta.get("torch", "PyTorch: not run")
    probes = job("blas_sgemm_t1")
    clock = probes.median("cpu_clock", "ghz")
    fma1, fma2 = probes.median("fma_peak_t1", "gflops"), probes.median("fma_peak_t2", "gflops")

    lines = []
    lines.append(f"Machine: {meta.get('cpu', '?')}, {meta.get('cores', '?')} cores"
                 + (f", {clock:.2f} GHz (measured)" if clock else "")
                 + (f", FMA peak {fma1:.0f} / {fma2:.0f} GFLOP/s on 1 / 2 threads" if fma1 and fma2 else "")
                 + (f"; {blas_cfg}" if blas_cfg else ""))
    lines.append(f"Reference: {torch_ver}.")
    lines.append(f"fastnn: {meta.get('fastnn', '?')}.")
    if meta.get("config"):
        lines.append(f"fnn.config(): {meta['config']}.")
    if any(j.startswith("fnn_bf16_") for j in runs):
        lines.append("bf16 rows: fastnn with FASTNN_PRECISION=bf16 (fnn.set_float32_precision('bf16')), PyTorch with "
                     "TORCH_MODE=bf16 (torch.backends.mkldnn.{matmul,conv,rnn}.fp32_precision = 'bf16'), in the "
                     "same interleaved run; tensors stay float32 on both sides.")
    if any(j.startswith("torch_compile_") for j in runs):
        lines.append("torch.compile rows: PyTorch with TORCH_MODE=compile (torch.compile of the model, compiled in "
                     "the untimed warm-up) against fastnn's float32 jobs, in the same interleaved run.")
    if any(j.startswith("fnn_avx2_") for j in runs):
        lines.append("AVX2-only rows: fastnn built with FASTNN_MAX_CLONE=v3 (its own loops' CPU variants stop at "
                     "AVX2) and run with ONEDNN_MAX_CPU_ISA=AVX2 OPENBLAS_CORETYPE=Haswell, PyTorch with "
                     "ATEN_CPU_CAPABILITY=avx2 MKL_ENABLE_INSTRUCTIONS=AVX2 ONEDNN_MAX_CPU_ISA=AVX2, in the same "
                     "interleaved run; their target is README's Zen 3 ratio of df31ead.")
    lines.append(f"Run: {meta.get('date', '?')}, git {meta.get('git', '?')}, reps={meta.get('reps', '?')}"
                 f"{' (--quick)' if meta.get('quick') == '1' else ''}, medians over reps; "
                 f"command: `{meta.get('command', 'bench/run.sh')}`.")
    lines.append("")
    lines.append("| workload | metric | fastnn | PyTorch | ratio | target | pass | fastnn peak RSS | PyTorch peak RSS | RSS pass |")
    lines.append("|---|---|---|---|---|---|---|---|---|---|")

    selected = set(a.workloads.split()) if a.workloads else None
    summary = {"pass": 0, "fail": 0, "open": 0}
    # issue 31: autocast 1.5x faster than float32 where bf16 runs on the CPU's bf16 units; elsewhere
    # (emulated bf16: rounded operands, float32 products; no units, or units no faster than the float32
    # FMA, fnn.config()'s bf16_path) no more than 10% slower
    config = meta.get("config", "")
    has_units = any(u in config for u in ("AVX512-BF16", "AMX"))
    on_units = has_units and ("bf16 path onednn" in config or "bf16 path" not in config)
    why = "" if on_units else (" (bf16 units no faster: emulated)" if has_units else " (no bf16 units)")
    bf16_rows = [r if not (r[0].endswith("autocast bf16 / fastnn float32") and why)
                 else (r[0] + why,) + r[1:8] + (1.1,) for r in BF16_ROWS]
    rows = ROWS + (AVX2_ROWS if any(j.startswith("fnn_avx2_") for j in runs) else []) + \
        (bf16_rows if any(j.startswith("fnn_bf16_") for j in runs) else []) + \
        (COMPILE_ROWS if any(j.startswith("torch_compile_") for j in runs) else [])
    for (label, metric, unit, fj, fr, rj, rr, kind, target) in rows:
        wl = "sgemm" if fr.startswith(("sgemm", "bf16_")) else fr
        if selected is not None and wl not in selected:
            continue
        F, R = job(fj), job(rj)
        fm, rm = metric.split("|") if "|" in metric else (metric, metric)   # "fnn metric|reference metric"
        fv, rv = F.median(fr, fm), R.median(rr, rm)
        if fr.startswith("bf16_native_") and fv is None:
            continue   # only where the bf16 units were passed over
        fcell = fmt(fv, unit) or F.why_missing(fm)
        rcell = fmt(rv, unit) or R.why_missing(rm)
        ratio, tcell, pcell = "", "", ""
        if kind == "le":
            tcell = f"<= {target}"
        elif kind == "ge":
            tcell = f">= {target}"
        elif kind == "acc":
            tcell = f">= PyTorch - {target} pts"
        else:
            tcell = "(side figure)"
        if fv is not None and rv is not None and rv != 0:
            if kind == "acc":
                ratio = f"{fv - rv:+.2f} pts"
                ok = fv >= rv - target
            else:
                r = fv / rv
                ratio = f"{r:.3f}"
                ok = (r <= target) if kind == "le" else (r >= target) if kind == "ge" else None
            pcell = "" if ok is None else ("pass" if ok else "FAIL")
        elif kind != "info":
            if fv is None:
                pcell = "ERROR" if fcell.startswith("error") else "not yet" if fcell.startswith("not yet") else "not run"
            else:
                pcell = "no reference"
        if pcell == "pass":
            summary["pass"] += 1
        elif pcell in ("FAIL", "ERROR"):
            summary["fail"] += 1
        elif kind != "info":
            summary["open"] += 1
        # peak resident memory of each side's process, median over reps
        fm = F.median(wl + "_rss", "max_rss_mb")
        rm = R.median((wl if not rj.startswith("blas_") else "sgemm_peak") + "_rss", "max_rss_mb")
        if fv is None:
            fm = None            # a run that measured nothing says nothing about memory
        if rv is None:
            rm = None
        fmc = f"{fm:.0f} MB" if fm is not None else ""
        rmc = f"{rm:.0f} MB" if rm is not None else ""
        mpass = ""
        if fm is not None and rm is not None and not rj.startswith("blas_"):
            mpass = "pass" if fm <= rm else "FAIL"
        elif rj.startswith("blas_"):
            mpass = "n/a (raw C)"
        if rj.startswith("fnn_"):   # fastnn against its own float32 run: PyTorch's memory is the bar
            mpass = "n/a (fastnn both)"
        lines.append(f"| {label} | {metric} | {fcell} | {rcell} | {ratio} | {tcell} | {pcell} | "
                     f"{fmc} | {rmc} | {mpass} |")

    # ---- footer: noise and what each side ran ----
    canaries = [c for j in runs.values() for r in j.values() for c in r["canary"]]
    contaminated = sum(1 for j in runs.values() for r in j.values() if r["contaminated"])
    lines.append("")
    lines.append(f"Targets: {summary['pass']} pass, {summary['fail']} fail or error, {summary['open']} open "
                 "(not yet / not run). Ratios are fastnn / PyTorch for times (lower is better) and "
                 "fastnn / raw OpenBLAS or / the FMA peak for GFLOP/s (higher is better); peak RSS is the largest "
                 "process of each job (getrusage), which must not exceed PyTorch's.")
    if canaries:
        lines.append(f"Noise: host-speed canary {min(canaries):.0f}-{max(canaries):.0f} ns/iter "
                     f"(~25 calm); {contaminated} run(s) kept while marked CONTAMINATED by measure.py.")
    lines.append(f"Full outputs: {meta.get('log', a.log)}")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
