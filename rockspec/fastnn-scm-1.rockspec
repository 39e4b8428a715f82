-- LuaRocks package for fastnn-lua: the Lua modules, libfastnn and the fastnn-lua launcher.
--   luarocks --lua-version=5.1 make rockspec/fastnn-scm-1.rockspec   (from the repository root)
-- LuaJIT is Lua 5.1 to LuaRocks; on a LuaRocks whose default is another Lua, pass
-- --lua-version=5.1 (or set it once: luarocks config --scope system lua_version 5.1).
-- Then `luajit -e "require 'fastnn'"` works from any directory: the modules go to the
-- tree's share/lua/5.1, the library to lib/lua/5.1 (on package.cpath, where
-- lua/fastnn/C.lua looks for it) and the launcher to bin.
rockspec_format = "3.0"
package = "fastnn"
version = "scm-1"
source = {
   url = "git+file:///dev/null",   -- `luarocks make` builds the checkout it runs in
}
description = {
   summary = "A Torch7-style deep-learning framework: C core, CUDA backend, LuaJIT FFI modules",
   detailed = [[
Tensors and autograd in C (OpenBLAS on the CPU, optional CUDA), layers, losses,
optimizers and training loops in LuaJIT, and the fastnn-lua launcher.
]],
}
dependencies = {
   "lua >= 5.1, < 5.2",   -- LuaJIT: the FFI binding needs it
}
build_dependencies = {}
build = {
   type = "command",
   -- CMake does the work; FASTNN_ROCK_* select the LuaRocks layout (the `rock` component)
   build_command = [[
cmake -S . -B build-rock -DCMAKE_BUILD_TYPE=Release -DCMAKE_INSTALL_PREFIX="$(PREFIX)" \
  -DFASTNN_ROCK_LUADIR="$(LUADIR)" -DFASTNN_ROCK_LIBDIR="$(LIBDIR)" -DFASTNN_ROCK_BINDIR="$(BINDIR)" &&
cmake --build build-rock -j2 --target fastnn fastnn-lua fastnn_cdef
]],
   install_command = [[cmake --install build-rock --component rock]],
}
