#!/usr/bin/env python3
"""bench/reference/serve_fastapi.py: bench/serve.sh's anchor. The MLP of examples/mnist_mlp.lua in
PyTorch (784-256-256-10), with the weights of the checkpoint examples/serve serves (a .fdl is a
safetensors file: its Linear layers' weights, in order), behind FastAPI: POST /predict
{"inputs": [[784 numbers], ...]} -> {"outputs": [[10 logits], ...]}, the JSON of fastnn.serve.

  FDL=path/mnist_mlp.fdl uvicorn --app-dir bench/reference serve_fastapi:app --port 8081 --workers 2

One forward pass per request (torch.no_grad, eval mode), one thread per worker (as fastnn.serve's
workers), 422 for a wrong shape, 400 for a body that is not JSON.
"""
import os

import torch
from fastapi import FastAPI, HTTPException, Request
from fastapi.responses import JSONResponse
from safetensors.torch import load_file

torch.set_num_threads(1)


def build(path):
    tensors = load_file(path)
    # the fastnn names are '<position>.weight' / '<position>.bias' of the Sequential (1-based)
    linears = sorted({int(k.split(".")[0]) for k in tensors if k.endswith(".weight") and k.split(".")[0].isdigit()})
    model = torch.nn.Sequential(
        torch.nn.Flatten(),
        torch.nn.Linear(784, 256), torch.nn.ReLU(), torch.nn.Dropout(0.2),
        torch.nn.Linear(256, 256), torch.nn.ReLU(), torch.nn.Dropout(0.2),
        torch.nn.Linear(256, 10))
    layers = [m for m in model if isinstance(m, torch.nn.Linear)]
    assert len(layers) == len(linears), (linears, list(tensors)[:10])
    with torch.no_grad():
        for layer, pos in zip(layers, linears):
            layer.weight.copy_(tensors[f"{pos}.weight"])
            layer.bias.copy_(tensors[f"{pos}.bias"])
    return model.eval()


model = build(os.environ["FDL"])
app = FastAPI()


@app.get("/health")
def health():
    return {"status": "ok"}


@app.post("/predict")
async def predict(request: Request):
    try:
        doc = await request.json()
        rows = doc["inputs"]
        x = torch.tensor(rows, dtype=torch.float32)
    except Exception as e:
        raise HTTPException(status_code=400, detail=f"bad body: {e}")
    if x.dim() != 2 or x.shape[1] != 784:
        raise HTTPException(status_code=422, detail=f"inputs has shape {list(x.shape)}, the model takes [n,784]")
    with torch.no_grad():
        y = model(x)
    return JSONResponse({"outputs": y.tolist()})
