"""Writes the ONNX files torch.onnx.export makes of the families fnn.onnx.load reads, for
spec/onnx_spec.lua, with an input and PyTorch's output for each; and files with operators it must
refuse. Prints JSON: {"models": [{"name", "path", "io", "inputs", "outputs"}...], "refused": [{"path", "op", "node",
"attribute"}...]}.

  python3 spec/onnx_torch_models.py <dir>
      <dir>/<name>.onnx and <dir>/<name>.safetensors (the inputs named as "inputs" lists them, "x" and for
      recurrent nets "h0", "c0", for attention "q", "k", "v"; PyTorch's outputs as "outputs" lists them,
      "y" and "h", "c")
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


class GptBlock(nn.Module):
    """a pre-LN decoder block: a packed q/k/v Linear split in three (Split), causal
    scaled_dot_product_attention, a GELU MLP"""
    def __init__(self, width, heads):
        super().__init__()
        self.heads = heads
        self.ln1, self.ln2 = nn.LayerNorm(width), nn.LayerNorm(width)
        self.qkv, self.proj = nn.Linear(width, 3 * width), nn.Linear(width, width)
        self.fc1, self.fc2 = nn.Linear(width, 4 * width), nn.Linear(4 * width, width)

    def forward(self, x):
        b, t, c = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(c, dim=2)
        q, k, v = [z.view(b, t, self.heads, c // self.heads).transpose(1, 2) for z in (q, k, v)]
        a = nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(a.transpose(1, 2).contiguous().view(b, t, c))
        return x + self.fc2(nn.functional.gelu(self.fc1(self.ln2(x))))


class Gpt(nn.Module):
    """a decoder-only GPT over token ids: token and learned position embeddings (positions by
    torch.arange), two blocks, a final LayerNorm and the vocabulary head"""
    def __init__(self):
        super().__init__()
        self.tok, self.pos = nn.Embedding(10, 16), nn.Embedding(8, 16)
        self.blocks = nn.Sequential(GptBlock(16, 4), GptBlock(16, 4))
        self.ln, self.head = nn.LayerNorm(16), nn.Linear(16, 10)

    def forward(self, ids):
        x = self.tok(ids) + self.pos(torch.arange(ids.shape[1]))
        return self.head(self.ln(self.blocks(x)))


class Recurrent(nn.Module):
    """torch.nn.LSTM or GRU with its final states as outputs beside the sequence; the initial states
    as inputs where with_state"""

    def __init__(self, rnn):
        super().__init__()
        self.rnn = rnn

    def forward(self, x, h0=None, c0=None):
        if isinstance(self.rnn, nn.LSTM):
            y, (h, c) = self.rnn(x, None if h0 is None else (h0, c0))
            return y, h, c
        y, h = self.rnn(x, h0)
        return y, h


# recurrent nets: (name, class, input_size, hidden_size, num_layers, batch_first, bidirectional, with_state)
RECURRENT = [
    ("torch_lstm", nn.LSTM, 3, 5, 1, True, False, False),
    ("torch_lstm_2layer_state", nn.LSTM, 4, 6, 2, False, False, True),
    ("torch_lstm_bidir", nn.LSTM, 3, 4, 1, False, True, False),
    ("torch_lstm_bidir_2layer_state", nn.LSTM, 5, 3, 2, True, True, True),
    ("torch_gru", nn.GRU, 3, 5, 1, True, False, False),
    ("torch_gru_2layer_state", nn.GRU, 4, 6, 2, False, False, True),
    ("torch_gru_bidir", nn.GRU, 3, 4, 1, False, True, False),
    ("torch_gru_bidir_2layer_state", nn.GRU, 5, 3, 2, True, True, True),
]


def recurrent():
    torch.manual_seed(1)
    for name, cls, i, h, layers, batch_first, bidir, with_state in RECURRENT:
        model = Recurrent(cls(i, h, num_layers=layers, batch_first=batch_first, bidirectional=bidir)).eval()
        n, t, d = 2, 7, 2 if bidir else 1
        x = torch.randn(*((n, t, i) if batch_first else (t, n, i)))
        inputs = {"x": x}
        if with_state:
            inputs["h0"] = torch.randn(layers * d, n, h)
            if cls is nn.LSTM:
                inputs["c0"] = torch.randn(layers * d, n, h)
        outputs = ["y", "h", "c"] if cls is nn.LSTM else ["y", "h"]
        path = f"{out_dir}/{name}.onnx"
        torch.onnx.export(model, tuple(inputs.values()), path, opset_version=17, dynamo=False,
                          input_names=list(inputs), output_names=outputs, verbose=False)
        with torch.no_grad():
            ys = model(*inputs.values())
        tensors = {k: v.contiguous() for k, v in inputs.items()}
        tensors.update({k: v.contiguous() for k, v in zip(outputs, ys)})
        save_file(tensors, f"{out_dir}/{name}.safetensors")
        yield {"name": name, "path": path, "io": f"{out_dir}/{name}.safetensors", "inputs": list(inputs),
               "outputs": outputs}


class SelfAttention(nn.Module):
    """torch.nn.MultiheadAttention (batch first) on one sequence, causal through an additive -inf mask"""

    def __init__(self, causal, bias):
        super().__init__()
        self.attn = nn.MultiheadAttention(8, 2, batch_first=True, bias=bias)
        self.causal = causal

    def forward(self, x):
        t = x.shape[1]
        mask = torch.triu(torch.full((t, t), float("-inf")), 1) if self.causal else None
        return self.attn(x, x, x, attn_mask=mask, need_weights=False)[0]


class SDPA(nn.Module):
    def __init__(self, causal):
        super().__init__()
        self.causal = causal

    def forward(self, q, k, v):
        return nn.functional.scaled_dot_product_attention(q, k, v, is_causal=self.causal)


def attention():
    torch.manual_seed(2)
    for name, model, shapes in [("torch_mha", SelfAttention(False, True), [(2, 5, 8)]),
                                ("torch_mha_causal_nobias", SelfAttention(True, False), [(3, 6, 8)]),
                                ("torch_sdpa", SDPA(False), [(2, 2, 5, 4), (2, 2, 7, 4), (2, 2, 7, 4)]),
                                ("torch_sdpa_causal", SDPA(True), [(2, 3, 6, 4)] * 3)]:
        model.eval()
        inputs = {n: torch.randn(*shape) for n, shape in zip(["x", "k", "v"] if len(shapes) == 3 else ["x"], shapes)}
        if len(shapes) == 3:
            inputs = {"q": inputs["x"], "k": inputs["k"], "v": inputs["v"]}
        path = f"{out_dir}/{name}.onnx"
        torch.onnx.export(model, tuple(inputs.values()), path, opset_version=17, dynamo=False,
                          input_names=list(inputs), output_names=["y"], verbose=False)
        with torch.no_grad():
            y = model(*inputs.values())
        save_file({**{k: v.contiguous() for k, v in inputs.items()}, "y": y.contiguous()}, f"{out_dir}/{name}.safetensors")
        yield {"name": name, "path": path, "io": f"{out_dir}/{name}.safetensors", "inputs": list(inputs),
               "outputs": ["y"]}


def layout1():
    """an ONNX LSTM with layout = 1 (batch first throughout), bidirectional, initial states given, written
    by hand (torch writes layout 0); the expected outputs are onnx's reference evaluator's (onnxruntime runs layout 0 only:
    the same node with layout 0 there agrees)"""
    import numpy as np
    import onnxruntime as ort
    from onnx.reference import ReferenceEvaluator
    rng = np.random.default_rng(3)
    n, t, i, h = 2, 5, 3, 4

    def init(name, *shape):
        return helper.make_tensor(name, TensorProto.FLOAT, shape, rng.uniform(-0.5, 0.5, shape).astype(np.float32).ravel())

    inits = [init("W", 2, 4 * h, i), init("R", 2, 4 * h, h), init("B", 2, 8 * h)]
    node = helper.make_node("LSTM", ["x", "W", "R", "B", "", "h0", "c0"], ["y", "h", "c"], name="lstm_layout1",
                            hidden_size=h, direction="bidirectional", layout=1)
    def value(name, shape):
        return helper.make_tensor_value_info(name, TensorProto.FLOAT, shape)

    graph = helper.make_graph([node], "layout1", [value("x", [n, t, i]), value("h0", [n, 2, h]), value("c0", [n, 2, h])],
                              [value("y", [n, t, 2, h]), value("h", [n, 2, h]), value("c", [n, 2, h])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    onnx.checker.check_model(model, full_check=True)
    name = "onnx_lstm_bidir_layout1"
    path = f"{out_dir}/{name}.onnx"
    onnx.save(model, path)
    feeds = {"x": rng.standard_normal((n, t, i), dtype=np.float32), "h0": rng.standard_normal((n, 2, h), dtype=np.float32),
             "c0": rng.standard_normal((n, 2, h), dtype=np.float32)}
    ys = ReferenceEvaluator(model).run(None, feeds)
    # the same node with layout 0 in onnxruntime, on transposed inputs, agrees
    for attr in node.attribute:
        if attr.name == "layout":
            attr.i = 0
    graph0 = helper.make_graph([node], "layout0", [value("x", [t, n, i]), value("h0", [2, n, h]), value("c0", [2, n, h])],
                               [value("y", [t, 2, n, h]), value("h", [2, n, h]), value("c", [2, n, h])], inits)
    ort_session = ort.InferenceSession(helper.make_model(graph0, opset_imports=[helper.make_opsetid("", 17)])
                                       .SerializeToString(), providers=["CPUExecutionProvider"])
    y0, h0, c0 = ort_session.run(None, {"x": feeds["x"].transpose(1, 0, 2), "h0": feeds["h0"].transpose(1, 0, 2),
                                        "c0": feeds["c0"].transpose(1, 0, 2)})
    assert np.allclose(ys[0], y0.transpose(2, 0, 1, 3), atol=1e-6) and np.allclose(ys[1], h0.transpose(1, 0, 2), atol=1e-6)
    assert np.allclose(ys[2], c0.transpose(1, 0, 2), atol=1e-6)
    tensors = {k: torch.from_numpy(np.ascontiguousarray(v)) for k, v in feeds.items()}
    tensors.update({k: torch.from_numpy(np.ascontiguousarray(v)) for k, v in zip(["y", "h", "c"], ys)})
    save_file(tensors, f"{out_dir}/{name}.safetensors")
    return {"name": name, "path": path, "io": f"{out_dir}/{name}.safetensors", "inputs": list(feeds),
            "outputs": ["y", "h", "c"]}


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
    # transposed convolutions (ConvTranspose: strided, output_padding, groups, dilation)
    yield "torch_upconv", nn.Sequential(nn.ConvTranspose2d(2, 4, 3, stride=2, padding=1, output_padding=1), nn.ReLU(),
                                        nn.ConvTranspose2d(4, 4, 3, padding=2, dilation=2, groups=2),
                                        nn.ConvTranspose2d(4, 1, 4, stride=2, padding=1)), (2, 2, 5, 6), False
    # transformer stacks: an encoder of two nn.TransformerEncoderLayers, and a decoder-only GPT from token ids
    encoder = nn.TransformerEncoder(nn.TransformerEncoderLayer(16, 4, 32, dropout=0.0, batch_first=True), num_layers=2,
                                    enable_nested_tensor=False)
    yield "torch_encoder", encoder, (2, 5, 16), False
    yield "torch_gpt", Gpt(), (2, 6), False
    # torch.onnx.export's default exporter (torch.export, dynamo=True) too
    yield "torch_mlp_dynamo", nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 3), nn.Softmax(dim=1)), (5, 4), True


listed = []
for name, model, shape, dynamo in models():
    model.eval()
    x = torch.randint(0, 10, shape) if name in ("torch_embedding", "torch_gpt") else torch.randn(*shape) * 2
    path = f"{out_dir}/{name}.onnx"
    torch.onnx.export(model, (x,), path, opset_version=17, dynamo=dynamo, input_names=["x"], output_names=["y"],
                      verbose=False)
    with torch.no_grad():
        y = model(x)
    save_file({"x": x.contiguous(), "y": y.contiguous()}, f"{out_dir}/{name}.safetensors")
    listed.append({"name": name, "path": path, "io": f"{out_dir}/{name}.safetensors", "inputs": ["x"],
                   "outputs": ["y"]})
listed.extend(recurrent())
listed.append(layout1())
listed.extend(attention())


def refused(name, node, domain=""):
    """a graph y = node(x) with one operator fnn.onnx.load does not read"""
    graph = helper.make_graph([node], name, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])])
    opsets = [helper.make_opsetid("", 17)] + ([helper.make_opsetid(domain, 1)] if domain else [])
    model = helper.make_model(graph, opset_imports=opsets)
    path = f"{out_dir}/{name}.onnx"
    onnx.save(model, path)
    return {"path": path, "op": node.op_type, "node": node.name, "domain": domain}


def refused_rnn(name, op, attribute, **attrs):
    """a graph y = Y_h of one LSTM or GRU node with an attribute fastnn's kernels cannot honour"""
    gates, hidden, width = (4 if op == "LSTM" else 3), 2, 3
    inits = [helper.make_tensor("W", TensorProto.FLOAT, [1, gates * hidden, width], [0.1] * (gates * hidden * width)),
             helper.make_tensor("R", TensorProto.FLOAT, [1, gates * hidden, hidden], [0.1] * (gates * hidden * hidden))]
    node = helper.make_node(op, ["x", "W", "R"], ["", "y"], name=f"my_{name}", hidden_size=hidden, **attrs)
    graph = helper.make_graph([node], name, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 2, width])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 2, hidden])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    onnx.checker.check_model(model)
    path = f"{out_dir}/{name}.onnx"
    onnx.save(model, path)
    return {"path": path, "op": op, "node": node.name, "domain": "", "attribute": attribute}


refusals = [refused("refuse_cos", helper.make_node("Cos", ["x"], ["y"], name="my_cos")),
            refused("refuse_domain", helper.make_node("Relu", ["x"], ["y"], name="custom_relu", domain="com.example"),
                    "com.example"),
            refused_rnn("lstm_clip", "LSTM", "clip", clip=3.0),
            refused_rnn("lstm_activations", "LSTM", "activations", activations=["Relu", "Tanh", "Tanh"]),
            refused_rnn("lstm_input_forget", "LSTM", "input_forget", input_forget=1),
            refused_rnn("gru_linear_before_reset", "GRU", "linear_before_reset", linear_before_reset=0),
            refused_rnn("gru_activations", "GRU", "activations", activations=["HardSigmoid", "Tanh"],
                        activation_alpha=[0.2], activation_beta=[0.5])]
json.dump({"models": listed, "refused": refusals}, sys.stdout)
