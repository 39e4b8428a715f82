#!/usr/bin/env bash
# Installs the Debian packages fastnn-lua needs, only those missing (needs root or sudo).
set -euo pipefail
PKGS="build-essential cmake pkg-config luajit libluajit-5.1-dev libopenblas-dev libdnnl-dev lua-busted luarocks
      libcurl4-openssl-dev zlib1g-dev libssl-dev libcjson-dev libpng-dev libturbojpeg0-dev dataset-fashion-mnist
      openmpi-bin libopenmpi-dev clang libfuzzer-14-dev libclang-rt-14-dev libprotobuf-c-dev protobuf-c-compiler"
missing=""
for p in $PKGS; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
# the PyPI packages the interop specs use as references (safetensors' own implementation, numpy)
if ! python3 -c 'import numpy, safetensors' >/dev/null 2>&1; then
  echo "installing (PyPI): numpy safetensors"
  python3 -m pip install -q numpy safetensors >/dev/null 2>&1 || echo "install-deps: pip could not install numpy safetensors" >&2
fi
# the exchange formats' own readers: TensorBoard, onnx and onnxruntime (spec/tensorboard_spec.lua,
# spec/onnx_spec.lua; FASTNN_REQUIRE_TENSORBOARD=1 and FASTNN_REQUIRE_ONNX=1 in CI)
if ! python3 -c 'import tensorboard, onnx, onnxruntime' >/dev/null 2>&1; then
  echo "installing (PyPI): tensorboard onnx onnxruntime"
  python3 -m pip install -q tensorboard onnx onnxruntime >/dev/null 2>&1 ||
    echo "install-deps: pip could not install tensorboard onnx onnxruntime" >&2
fi
# PyTorch from PyPI, where the PyTorch-names spec must run (FASTNN_REQUIRE_TORCH=1, as .ci/run sets)
if [ "${FASTNN_REQUIRE_TORCH:-}" = 1 ] && ! python3 -c 'import torch' >/dev/null 2>&1; then
  echo "installing (PyPI): torch"
  python3 -m pip install -q torch >/dev/null 2>&1 || echo "install-deps: pip could not install torch" >&2
fi
[ -z "$missing" ] && exit 0
echo "installing:$missing"
SUDO=""
[ "$(id -u)" -ne 0 ] && SUDO=sudo
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends $missing >/dev/null
