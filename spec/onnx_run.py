"""Runs an ONNX file fastnn wrote, for spec/onnx_spec.lua: onnx.checker.check_model (full_check),
then onnxruntime on each input set, writing the outputs beside them; prints JSON.

  python3 spec/onnx_run.py <model.onnx> <inputs.safetensors> [<inputs.safetensors> ...]
      input set k (tensors named as the graph's inputs) -> <inputs file>.out.safetensors
      (outputs named as the graph's outputs); stdout: {"ops": [...], "initializers": [...],
      "inputs": [[name, [dims or dim_param]]...], "outputs": [...], "opset": n, "ir_version": n}
"""
import json
import sys

import onnx
import onnxruntime as ort
from safetensors.numpy import load_file, save_file


def dims(value):
    return [d.dim_param if d.HasField("dim_param") else d.dim_value for d in value.type.tensor_type.shape.dim]


model = onnx.load(sys.argv[1])
onnx.checker.check_model(model, full_check=True)
session = ort.InferenceSession(sys.argv[1], providers=["CPUExecutionProvider"])
out_names = [o.name for o in session.get_outputs()]
for path in sys.argv[2:]:
    feeds = load_file(path)
    results = session.run(None, feeds)
    save_file({name: r for name, r in zip(out_names, results)}, path + ".out.safetensors")
json.dump({"ops": [n.op_type for n in model.graph.node],
           "initializers": [t.name for t in model.graph.initializer],
           "inputs": [[v.name, dims(v)] for v in model.graph.input],
           "outputs": [[v.name, dims(v)] for v in model.graph.output],
           "opset": model.opset_import[0].version, "ir_version": model.ir_version}, sys.stdout)
