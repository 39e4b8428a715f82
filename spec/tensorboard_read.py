"""What TensorBoard's own reader makes of fastnn's event files (spec/tensorboard_spec.lua), as JSON.

  python3 spec/tensorboard_read.py runs <logdir>
      every run under logdir (a directory holding event files) through EventAccumulator, keeping
      every event (no reservoir sampling): scalars, histograms, images (decoded by Pillow) and
      text tensors with their steps, plus each run's first event and the reader's debug log
      (where TensorBoard reports a truncated or corrupt record)
  python3 spec/tensorboard_read.py records <file>
      the file through TensorBoard's record iterator: the events it yields, then the error that
      stopped it (DataLossError on a bad CRC) or null
  python3 spec/tensorboard_read.py torch_histogram <values file>
      PyTorch's histogram of the values (torch.utils.tensorboard's make_histogram over its
      default bins), or {"missing": reason} without torch
"""
import io
import json
import logging
import os
import sys
import tempfile


def runs(logdir):
    from PIL import Image
    from tensorboard.backend.event_processing import event_accumulator as ea

    log = io.StringIO()
    handler = logging.StreamHandler(log)
    logger = logging.getLogger("tensorboard")
    logger.addHandler(handler)
    logger.setLevel(logging.DEBUG)
    keep_all = {ea.SCALARS: 0, ea.HISTOGRAMS: 0, ea.IMAGES: 0, ea.TENSORS: 0, ea.COMPRESSED_HISTOGRAMS: 0}
    out = {}
    for root, _, files in sorted(os.walk(logdir)):
        if not any("tfevents" in f for f in files):
            continue
        acc = ea.EventAccumulator(root, size_guidance=keep_all)
        acc.Reload()
        tags = acc.Tags()
        run = {"files": sorted(f for f in files if "tfevents" in f), "scalars": {}, "histograms": {},
               "images": {}, "texts": {}}
        for tag in tags["scalars"]:
            run["scalars"][tag] = [[e.step, e.value] for e in acc.Scalars(tag)]
        for tag in tags["histograms"]:
            run["histograms"][tag] = [
                {"step": e.step, "min": e.histogram_value.min, "max": e.histogram_value.max,
                 "num": e.histogram_value.num, "sum": e.histogram_value.sum,
                 "sum_squares": e.histogram_value.sum_squares,
                 "bucket_limit": list(e.histogram_value.bucket_limit),
                 "bucket": list(e.histogram_value.bucket)}
                for e in acc.Histograms(tag)]
        for tag in tags["images"]:
            items = []
            for e in acc.Images(tag):
                img = Image.open(io.BytesIO(e.encoded_image_string))
                items.append({"step": e.step, "width": e.width, "height": e.height, "mode": img.mode,
                              "format": img.format, "pixels": [int(v) for v in img.tobytes()]})
            run["images"][tag] = items
        for tag in tags["tensors"]:
            plugin = acc.SummaryMetadata(tag).plugin_data.plugin_name
            run["texts"][tag] = [
                {"step": e.step, "plugin": plugin, "dtype": e.tensor_proto.dtype,
                 "shape": [d.size for d in e.tensor_proto.tensor_shape.dim],
                 "text": [s.decode("utf-8") for s in e.tensor_proto.string_val]}
                for e in acc.Tensors(tag)]
        out[os.path.relpath(root, logdir)] = run
    logger.removeHandler(handler)
    return {"runs": out, "log": log.getvalue()}


def records(path):
    from tensorboard.backend.event_processing import event_file_loader
    from tensorboard.compat import tf
    from tensorboard.compat.proto import event_pb2

    events, error = [], None
    it = event_file_loader._make_tf_record_iterator(path)
    while True:
        try:
            raw = next(it)
        except StopIteration:
            break
        except tf.errors.DataLossError as e:
            error = "DataLossError: " + e.message
            break
        ev = event_pb2.Event.FromString(raw)
        what = ev.WhichOneof("what")
        item = {"what": what, "step": ev.step, "wall_time": ev.wall_time}
        if what == "file_version":
            item["file_version"] = ev.file_version
        elif what == "summary":
            item["tags"] = [v.tag for v in ev.summary.value]
        events.append(item)
    return {"events": events, "error": error or ""}


def torch_histogram(path):
    try:
        import numpy as np
        from torch.utils.tensorboard import SummaryWriter
        from torch.utils.tensorboard.summary import make_histogram
    except ImportError as e:
        return {"missing": str(e)}
    with open(path) as f:
        values = np.array([float(v) for v in f.read().split()], dtype=np.float64)
    with tempfile.TemporaryDirectory() as d:
        w = SummaryWriter(d)          # its default_bins are what add_histogram uses
        bins = w.default_bins
        w.close()
    h = make_histogram(values, bins)
    return {"min": h.min, "max": h.max, "num": h.num, "sum": h.sum, "sum_squares": h.sum_squares,
            "bucket_limit": list(h.bucket_limit), "bucket": list(h.bucket)}


if __name__ == "__main__":
    mode, arg = sys.argv[1], sys.argv[2]
    result = {"runs": runs, "records": records, "torch_histogram": torch_histogram}[mode](arg)
    json.dump(result, sys.stdout)
