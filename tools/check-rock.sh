#!/bin/sh
# tools/check-rock.sh: `luarocks make` installs a working fastnn into a rocks tree.
#   1. luarocks --lua-version=5.1 make --tree=<temporary tree> rockspec/fastnn-scm-1.rockspec
#   2. from another directory, with only the paths `luarocks path --tree=<tree>` prints (LuaJIT
#      reads LUA_PATH and LUA_CPATH): luajit -e "require 'fastnn'" finds the tree's modules and
#      the tree's libfastnn (and the libfastnn_core beside it, through its $ORIGIN run path), and
#      runs a small tensor op. A temporary tree is not on LuaJIT's
#      default paths; the default trees are (/usr/local/share/lua/5.1 and /usr/local/lib/lua/5.1
#      as root, ~/.luarocks with --local plus `luarocks path`), but CI must not install there.
#   3. the tree's launcher bin/fastnn-lua runs a one-liner with no paths set at all: it finds
#      the modules and the library from its own place (<tree>/share/lua/5.1, <tree>/lib/lua/5.1).
#   4. a LuaRocks that targets another Lua (Debian's defaults to 5.2) is told in one line how to
#      call it (faked with a Lua 5.2 lua.h, so that LuaRocks' own header check passes).
# Prints one summary line; exits non-zero on any failure. The build goes to build-rock/.
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
TREE=$TMP/tree
LOG=$TMP/log
mkdir -p "$TMP/elsewhere"

fail() {
    echo "check-rock: FAILED: $1" >&2
    tail -n 30 "$LOG" >&2
    exit 1
}

command -v luarocks >/dev/null || { echo "check-rock: FAILED: no luarocks (apt-get install luarocks)" >&2; exit 1; }
(cd "$ROOT" && luarocks --lua-version=5.1 make --tree="$TREE" rockspec/fastnn-scm-1.rockspec) >"$LOG" 2>&1 \
    || fail "luarocks --lua-version=5.1 make --tree=$TREE rockspec/fastnn-scm-1.rockspec"

CLEAN="env -u FASTNN_LIB -u FASTNN_LUA_DIR -u LUA_INIT -u LUA_PATH -u LUA_CPATH"
PATHS=$(luarocks --lua-version=5.1 path --tree="$TREE" 2>>"$LOG") || fail "luarocks path"
SCRIPT="
local fnn = require 'fastnn'
local y = fnn.ones(2, 3):matmul(fnn.ones(3, 4)) + 1
assert(y:sum():item() == 32, 'wrong sum ' .. y:sum():item())
local mod = package.searchpath('fastnn', package.path)
local lib
local core
for line in io.lines('/proc/self/maps') do
   lib = lib or line:match('(/%S*/libfastnn%.so[^/]*)$')
   core = core or line:match('(/%S*/libfastnn_core%.so[^/]*)$')
end
io.write(mod, ' ', tostring(lib), ' ', tostring(core))"
WHERE=$(cd "$TMP/elsewhere" && $CLEAN sh -c "$PATHS
exec luajit -e \"\$0\"" "$SCRIPT" 2>>"$LOG") || fail "luajit -e \"require 'fastnn'\" with the tree's paths"
case "$WHERE" in
    "$TREE"/share/lua/5.1/*" $TREE/lib/lua/5.1/libfastnn.so $TREE/lib/lua/5.1/libfastnn_core.so.0") ;;
    *) fail "require 'fastnn' did not use the tree's modules and library: $WHERE" ;;
esac

OUT=$(cd "$TMP/elsewhere" && $CLEAN "$TREE/bin/fastnn-lua" -e "local fnn = require 'fastnn'; io.write(fnn.arange(1, 5):sum():item())" \
    2>>"$LOG") || fail "$TREE/bin/fastnn-lua -e ..."
[ "$OUT" = "10" ] || fail "the launcher printed '$OUT', expected 10"

mkdir -p "$TMP/lua52"
printf '#define LUA_VERSION_NUM 502\n' >"$TMP/lua52/lua.h"
(cd "$ROOT" && luarocks --lua-version=5.2 make --tree="$TMP/tree52" LUA_INCDIR="$TMP/lua52" \
    rockspec/fastnn-scm-1.rockspec) >"$TMP/hint" 2>&1 && fail "a Lua 5.2 luarocks make succeeded"
grep -q '^fastnn needs LuaJIT, which LuaRocks calls Lua 5.1: run  luarocks --lua-version=5.1 make' "$TMP/hint" \
    || { cat "$TMP/hint" >>"$LOG"; fail "a Lua 5.2 luarocks make did not print the one-line hint"; }

echo "check-rock: ok (luarocks make into a temporary tree; require 'fastnn' from another directory uses the tree's modules and libfastnn; the tree's fastnn-lua runs; a 5.2 LuaRocks gets the hint)"
