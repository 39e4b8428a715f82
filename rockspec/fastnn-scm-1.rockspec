-- LuaRocks package for fastnn-lua: the Lua modules, libfastnn and the fastnn-lua launcher.
--   luarocks --lua-version=5.1 make rockspec/fastnn-scm-1.rockspec   (from the repository root)
-- LuaJIT is Lua 5.1 to LuaRocks. Debian's luarocks defaults to the newest Lua it has (5.2 with
-- the luarocks package alone), so a plain `luarocks make` targets 5.2: LuaRocks then stops at its
-- own check with "Failed finding Lua header files" (no Lua 5.2 headers), or, where they are
-- installed, the build command below stops and prints the call to use. Pass --lua-version=5.1,
-- or set it once (`luarocks config --scope user lua_version 5.1`, `--scope system` for every
-- user: it writes default-lua-version.lua) and plain `luarocks make` works from then on.
-- Then `luajit -e "require 'fastnn'"` works from any directory: the modules go to the
-- tree's share/lua/5.1, the library to lib/lua/5.1 (on package.cpath, where
-- lua/fastnn/C.lua looks for it) and the launcher to bin. The system tree (/usr/local, the
-- default as root) is on LuaJIT's default paths; for ~/.luarocks (--local) or another --tree, use
-- `eval "$(luarocks --lua-version=5.1 path --tree=<tree>)"` once per shell (the tree's
-- bin/fastnn-lua needs nothing). tools/check-rock.sh checks it all.
rockspec_format = "3.0"
package = "fastnn"
version = "scm-1"
source = {
   url = "git+file:///dev/null",   -- `luarocks make` builds the checkout it runs in
}
description = {
   summary = "A Torch7-style deep-learning framework: C core, CUDA backend, LuaJIT FFI modules",
   license = "MIT",
   detailed = [[
Tensors and autograd in C (OpenBLAS on the CPU, optional CUDA), layers, losses,
optimizers and training loops in LuaJIT, and the fastnn-lua launcher.
]],
}
-- LuaJIT (Lua 5.1 to LuaRocks) is required; the build command checks it and says in one line
-- how to call LuaRocks. A "lua >= 5.1, < 5.2" dependency would instead answer a 5.2 LuaRocks
-- with "Missing dependencies: lua >= 5.1, < 5.2 (not installed)" and a search of the servers.
dependencies = {}
build_dependencies = {}
build = {
   type = "command",
   -- CMake does the work; FASTNN_ROCK_* select the LuaRocks layout (the `rock` component)
   build_command = [[
case "$(LUADIR)" in */rocks-5.1/*) ;; *)
  echo "fastnn needs LuaJIT, which LuaRocks calls Lua 5.1: run  luarocks --lua-version=5.1 make rockspec/fastnn-scm-1.rockspec" >&2
  exit 1 ;;
esac &&
cmake -S . -B build-rock -DCMAKE_BUILD_TYPE=Release -DCMAKE_INSTALL_PREFIX="$(PREFIX)" \
  -DFASTNN_ROCK_LUADIR="$(LUADIR)" -DFASTNN_ROCK_LIBDIR="$(LIBDIR)" -DFASTNN_ROCK_BINDIR="$(BINDIR)" &&
cmake --build build-rock -j2 --target fastnn fastnn-lua fastnn_cdef
]],
   install_command = [[cmake --install build-rock --component rock]],
}
