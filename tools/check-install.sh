#!/bin/sh
# tools/check-install.sh: a C host builds and runs against an installed fastnn-lua.
#   1. configure a fresh build with CMAKE_INSTALL_PREFIX=<a temporary prefix>, build, cmake --install
#   2. build examples/embed_host.c against the install with pkg-config alone:
#        PKG_CONFIG_PATH=<prefix>/lib/pkgconfig cc embed_host.c $(pkg-config --cflags --libs fastnn) -lpthread
#   3. run it from / with no FASTNN_*/LUA_* variables: it trains, loads the checkpoint once and
#      must print `embed_host: 4 threads agree`; the installed launcher must find the installed
#      modules (not the source tree's).
#   4. the same host built by a CMake project with find_package(fastnn) (fastnn::host), run.
# Prints one summary line; exits non-zero on any failure. JOBS (default 2) sets the build's -j.
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
PREFIX=$TMP/prefix
LOG=$TMP/log

fail() {
    echo "check-install: FAILED: $1" >&2
    tail -n 30 "$LOG" >&2
    exit 1
}

cmake -S "$ROOT" -B "$TMP/build" -DCMAKE_BUILD_TYPE=Release -DCMAKE_INSTALL_PREFIX="$PREFIX" >"$LOG" 2>&1 \
    || fail "cmake configure"
cmake --build "$TMP/build" -j"${JOBS:-2}" --target fastnn fastnn-lua fastnn_host fastnn_cdef >>"$LOG" 2>&1 \
    || fail "cmake build"
cmake --install "$TMP/build" >>"$LOG" 2>&1 || fail "cmake --install"

PC_DIR=$(dirname "$(find "$PREFIX" -name fastnn.pc | head -n 1)")
[ -f "$PC_DIR/fastnn.pc" ] || fail "no fastnn.pc under $PREFIX"
FLAGS=$(PKG_CONFIG_PATH="$PC_DIR" pkg-config --cflags --libs fastnn 2>>"$LOG") || fail "pkg-config fastnn"
LIBDIR=$(PKG_CONFIG_PATH="$PC_DIR" pkg-config --variable=libdir fastnn)
# the rpath only because this prefix is not on the loader's path (/usr/local/lib is, after ldconfig)
# shellcheck disable=SC2086
cc -std=c11 -O2 -Wall -Wextra -o "$TMP/embed_host" "$ROOT/examples/embed_host.c" $FLAGS -lpthread \
    -Wl,-rpath,"$LIBDIR" >>"$LOG" 2>&1 || fail "cc embed_host.c \$(pkg-config --cflags --libs fastnn)"

CLEAN="env -u FASTNN_LIB -u FASTNN_LUA_DIR -u LUA_PATH -u LUA_CPATH -u LUA_INIT"
(cd / && $CLEAN timeout 120 "$TMP/embed_host") >"$TMP/out" 2>&1
rc=$?
cat "$TMP/out" >>"$LOG"
[ $rc -eq 0 ] || fail "embed_host exited $rc"
grep -q '^embed_host: 4 threads agree$' "$TMP/out" || fail "embed_host did not print '4 threads agree'"

WHERE=$(cd / && $CLEAN timeout 60 "$PREFIX/bin/fastnn-lua" -e \
    "local fnn = require 'fastnn'; assert(fnn.ones(2, 3):sum():item() == 6); io.write(package.searchpath('fastnn', package.path))" \
    2>>"$LOG") || fail "installed fastnn-lua"
case "$WHERE" in
    "$PREFIX"/*) ;;
    *) fail "the installed launcher loaded fastnn from $WHERE, not from $PREFIX" ;;
esac
mkdir -p "$TMP/cmake-host"
cat >"$TMP/cmake-host/CMakeLists.txt" <<CMAKE
cmake_minimum_required(VERSION 3.18)
project(embed_host C)
find_package(Threads REQUIRED)
find_package(fastnn REQUIRED)
add_executable(embed_host "$ROOT/examples/embed_host.c")
target_link_libraries(embed_host PRIVATE fastnn::host Threads::Threads)
CMAKE
cmake -S "$TMP/cmake-host" -B "$TMP/cmake-host/build" -DCMAKE_PREFIX_PATH="$PREFIX" >>"$LOG" 2>&1 \
    || fail "find_package(fastnn) in a CMake project"
cmake --build "$TMP/cmake-host/build" >>"$LOG" 2>&1 || fail "building embed_host with fastnn::host"
(cd / && $CLEAN timeout 120 "$TMP/cmake-host/build/embed_host") >"$TMP/out" 2>&1 \
    || { cat "$TMP/out" >>"$LOG"; fail "the CMake-built embed_host"; }
grep -q '^embed_host: 4 threads agree$' "$TMP/out" || fail "the CMake-built embed_host did not agree"

echo "check-install: ok (embed_host built against the install with pkg-config and with find_package(fastnn): 4 threads agree; the launcher uses the installed modules)"
