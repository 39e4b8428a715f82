#!/bin/sh
# spec/gpu/emulate.sh: run spec/cuda_parity_spec.lua against the CUDA backend's kernels emulated
# on the host (spec/gpu/emulated_backend.cpp), for a machine without a GPU. It checks the core's
# device dispatch (every op, backward rule and optimizer step that reaches the backend table) and
# the kernels' logic (expressions, strides, the warp/block reductions, line geometry) against the
# CPU path. It is not a GPU run: nothing here counts as verified on a GPU (spec/gpu/check.sh is).
#   sh spec/gpu/emulate.sh          # extra args go to busted
# Needs gcc, g++ (C++17) and the libraries libfastnn links. Builds into build-emu/.
set -eu
cd "$(dirname "$0")/../.."
root=$PWD
out=$root/build-emu
mkdir -p "$out/obj"
# the device code of each .cu file: everything above its "host side" line, common.cuh left out
for f in map reduction optim copy loss index norm cast int64; do
   awk '/==== host side/ {exit} !/#include "common.cuh"/ {print}' "cuda/$f.cu" > "$out/${f}_body.inc"
done
cflags="-O2 -fPIC -fvisibility=hidden -fopenmp -std=gnu11 -Dfastnn_EXPORTS -DFASTNN_WITH_CUDA=1 -Icore/include -Icore"
ls core/*.c core/ops/*.c core/autograd/*.c | xargs -P "${JOBS:-2}" -I{} sh -c \
   "gcc $cflags -c {} -o $out/obj/\$(echo {} | tr / _).o"
g++ -std=c++17 -O1 -fPIC -fvisibility=hidden -Wno-misleading-indentation -Icore -Icore/include -I"$out" \
    -c spec/gpu/emulated_backend.cpp -o "$out/emulated_backend.o"
g++ -shared -fPIC -Wl,-z,nodelete -o "$out/libfastnn.so" "$out"/obj/*.o "$out/emulated_backend.o" \
    -lopenblas -lz -lcurl -lcrypto -lcjson -lpng -lgomp -lm -lpthread
FASTNN_LIB="$out/libfastnn.so" FASTNN_EMULATED_GPU=1 LUA_PATH="$root/lua/?.lua;$root/lua/?/init.lua;;" \
   exec busted --lua=luajit "$@" spec/cuda_parity_spec.lua
