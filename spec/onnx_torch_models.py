"""Writes the ONNX files torch.onnx.export makes of the families fnn.onnx.load reads, for
spec/onnx_spec.lua, with an input and PyTorch's output for each; and files with operators it must
refuse. Prints JSON: {"models": [{"name", "path", "io"}...], "refused": [{"path", "op", "node"}...]}.

  python3 spec/onnx_torch_models.py <dir>
      <dir>/<name>.onnx and <dir>/<name>.safetensors ({"x": input, "y": PyTorch's output})
"""
import json
import sys
import warnings

import onnx
import torch
from onnx import TensorProto, helper
from safetensors.torch import save_file

warnings.filterwarnings("ignore")
out_dir = sys.argv[1]
nn = torch.nn


class Embedder(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(10, 6)
        self.norm = nn.LayerNorm(6, elementwise_affine=False)
        self.head = nn.Linear(6, 3)

    def forward(self, ids):
        return self.head(self.norm(self.emb(ids)))


def models():
    torch.manual_seed(0)
    yield "torch_mlp", nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 3), nn.Softmax(dim=1)), (5, 4), False
    yield "torch_gelu", nn.Sequential(nn.Linear(5, 12), nn.GELU(), nn.Linear(12, 6, bias=False), nn.SiLU(),
                                      nn.Linear(6, 4), nn.LogSoftmax(dim=1)), (3, 5), False
    yield "torch_flatten", nn.Sequential(nn.Flatten(), nn.Linear(16, 6), nn.Tanh(), nn.Linear(6, 3),
                                         nn.Sigmoid()), (2, 1, 4, 4), False
    yield "torch_leaky", nn.Sequential(nn.Linear(4, 8), nn.LeakyReLU(0.2), nn.Linear(8, 8), nn.ELU(0.7),
                                       nn.Linear(8, 2)), (6, 4), False
    yield "torch_seq", nn.Sequential(nn.Linear(3, 5), nn.ReLU(), nn.Linear(5, 2)), (2, 7, 3), False
    # a convolutional net: padded, strided, grouped and dilated Conv, MaxPool, AveragePool,
    # BatchNormalization after a ReLU (not folded into a Conv), GlobalAveragePool
    cnn = nn.Sequential(nn.Conv2d(1, 4, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                        nn.Conv2d(4, 8, 3, stride=2, padding=1, groups=2, bias=False), nn.ReLU(), nn.BatchNorm2d(8),
                        nn.Conv2d(8, 8, 3, padding=2, dilation=2), nn.AvgPool2d(2), nn.AdaptiveAvgPool2d(1),
                        nn.Flatten(), nn.Linear(8, 3))
    cnn[5].running_mean.uniform_(-1, 1)
    cnn[5].running_var.uniform_(0.5, 2)
    yield "torch_cnn", cnn, (2, 1, 12, 12), False
    yield "torch_conv1d", nn.Sequential(nn.Conv1d(3, 6, 5, padding=2), nn.Tanh(), nn.MaxPool1d(3, stride=2),
                                        nn.Flatten(), nn.Linear(6 * 7, 2)), (4, 3, 16), False
    yield "torch_layernorm", nn.Sequential(nn.Linear(6, 10), nn.LayerNorm(10), nn.GELU(), nn.Linear(10, 4)), (3, 6), False
    # an embedding (Gather) of int64 ids, pooled, then a LayerNorm without affine parameters
    yield "torch_embedding", Embedder(), (2, 5), False
    # upsampling: nearest by 2, bilinear with half-pixel centres and with aligned corners
    yield "torch_upsample", nn.Sequential(nn.Conv2d(2, 3, 3, padding=1), nn.Upsample(scale_factor=2),
                                          nn.Upsample(scale_factor=2, mode="bilinear"),
                                          nn.Upsample(size=(29, 31), mode="bilinear", align_corners=True)), (2, 2, 3, 4), False
    # torch.onnx.export's default exporter (torch.export, dynamo=True) too
    yield "torch_mlp_dynamo", nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 3), nn.Softmax(dim=1)), (5, 4), True


listed = []
for name, model, shape, dynamo in models():
    model.eval()
    x = torch.randint(0, 10, shape) if name == "torch_embedding" else torch.randn(*shape) * 2
    path = f"{out_dir}/{name}.onnx"
    torch.onnx.export(model, (x,), path, opset_version=17, dynamo=dynamo, input_names=["x"], output_names=["y"],
                      verbose=False)
    with torch.no_grad():
        y = model(x)
    save_file({"x": x.contiguous(), "y": y.contiguous()}, f"{out_dir}/{name}.safetensors")
    listed.append({"name": name, "path": path, "io": f"{out_dir}/{name}.safetensors"})


def refused(name, node, domain=""):
    """a graph y = node(x) with one operator fnn.onnx.load does not read"""
    graph = helper.make_graph([node], name, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])])
    opsets = [helper.make_opsetid("", 17)] + ([helper.make_opsetid(domain, 1)] if domain else [])
    model = helper.make_model(graph, opset_imports=opsets)
    path = f"{out_dir}/{name}.onnx"
    onnx.save(model, path)
    return {"path": path, "op": node.op_type, "node": node.name, "domain": domain}


refusals = [refused("refuse_cos", helper.make_node("Cos", ["x"], ["y"], name="my_cos")),
            refused("refuse_domain", helper.make_node("Relu", ["x"], ["y"], name="custom_relu", domain="com.example"),
                    "com.example")]
json.dump({"models": listed, "refused": refusals}, sys.stdout)
