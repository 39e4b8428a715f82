#!/usr/bin/env bash
# Installs what is missing (Debian packages), builds fastnn-lua, and runs the
# default demo: an MLP trained on Fashion-MNIST, printing loss and test accuracy.
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/install-deps.sh
# with Open MPI present (install-deps installs it), libfastnn_dist too, as tools/test.sh does, so
# `mpirun -np 2 build/fastnn-lua examples/ddp_mlp.lua` works after setup
mpi=OFF
if command -v mpicc >/dev/null 2>&1 && command -v mpirun >/dev/null 2>&1; then mpi=ON; fi
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DFASTNN_MPI=$mpi >/dev/null
cmake --build build -j"$(nproc)"
build/fastnn-lua examples/fashion_mlp.lua
