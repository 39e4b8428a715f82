#!/usr/bin/env bash
# Installs the Debian packages fastnn-lua needs, only those missing (needs root or sudo), and never one
# that would remove a package the machine has (apt-get -s checks first).
#   tools/install-deps.sh --simulate   what it would install, from scratch, and that it removes nothing
set -euo pipefail
PKGS="build-essential cmake pkg-config libopenblas-dev libdnnl-dev lua-busted luarocks
      libcurl4-openssl-dev zlib1g-dev libssl-dev libcjson-dev libpng-dev libturbojpeg0-dev dataset-fashion-mnist
      openmpi-bin libopenmpi-dev clang libfuzzer-14-dev libclang-rt-14-dev libprotobuf-c-dev protobuf-c-compiler"
have() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "install ok installed"; }
# LuaJIT: Debian's (luajit libluajit-5.1-dev) or OpenResty's branch (luajit2 libluajit2-5.1-dev, which
# nginx's Lua module needs). The two conflict and fastnn builds on either (the same pkg-config name and
# headers), so the one the machine has stays; with neither, OpenResty's, so that nginx's Lua module (the
# serving spec) installs too. FASTNN_LUAJIT=luajit|luajit2 asks for one: the other is then removed (CI's swap).
luajit=${FASTNN_LUAJIT:-}
if [ -z "$luajit" ]; then
  luajit=luajit2
  if ! have libluajit2-5.1-2 && have libluajit-5.1-2; then luajit=luajit; fi
fi
case $luajit in
  luajit) PKGS="$PKGS luajit libluajit-5.1-dev nginx-light lua-cjson wrk";;
  luajit2) PKGS="$PKGS luajit2 libluajit2-5.1-dev nginx-light libnginx-mod-http-lua lua-cjson wrk";;
  *) echo "install-deps: FASTNN_LUAJIT=$luajit, expected luajit or luajit2" >&2; exit 1;;
esac
if [ "$luajit" = luajit ] && ! have libnginx-mod-http-lua; then
  echo "install-deps: keeping Debian's LuaJIT, so not nginx's Lua module (it needs OpenResty's, luajit2): the" \
       "serving spec fails without it; FASTNN_LUAJIT=luajit2 $0 swaps them (fastnn builds on both)" >&2
fi
# the packages apt would remove to install $1..., one a line
removals() { apt-get -s install --no-install-recommends "$@" 2>/dev/null | sed -n 's/^Remv \([^ ]*\).*/\1/p'; }
if [ "${1:-}" = --simulate ]; then
  gone=$(removals $PKGS)
  echo "install-deps: LuaJIT $luajit;" $PKGS
  if [ -n "$gone" ]; then echo "install-deps: would remove: $(echo $gone)" >&2; exit 1; fi
  echo "install-deps: removes nothing"
  exit 0
fi
missing=""
for p in $PKGS; do
  have "$p" || missing="$missing $p"
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
# PyTorch from PyPI, where the PyTorch-names spec must run (FASTNN_REQUIRE_TORCH=1, as .ci/run sets), with
# onnxscript, which torch.onnx.export imports (onnx_spec's PyTorch-exported models; not a torch dependency)
if [ "${FASTNN_REQUIRE_TORCH:-}" = 1 ] && ! python3 -c 'import torch, onnxscript' >/dev/null 2>&1; then
  echo "installing (PyPI): torch onnxscript"
  python3 -m pip install -q torch onnxscript >/dev/null 2>&1 || echo "install-deps: pip could not install torch onnxscript" >&2
fi
[ -z "$missing" ] && exit 0
echo "installing:$missing"
SUDO=""
[ "$(id -u)" -ne 0 ] && SUDO=sudo
$SUDO apt-get update -qq
gone=$(removals $missing)
if [ -n "$gone" ] && [ -z "${FASTNN_LUAJIT:-}" ]; then
  echo "install-deps: installing$missing would remove $(echo $gone): refused" >&2
  exit 1
fi
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends $missing >/dev/null
