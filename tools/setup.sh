#!/usr/bin/env bash
# Installs what is missing (Debian packages), builds fastnn-lua, and runs the
# default demo: an MLP trained on Fashion-MNIST, printing loss and test accuracy.
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/install-deps.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j"$(nproc)"
build/fastnn-lua examples/fashion_mlp.lua
