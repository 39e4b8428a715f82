/* fastnn_host.h: what a C program needs to run fastnn inside its own lua_State.
 *
 *     lua_State *L = luaL_newstate();
 *     luaL_openlibs(L);
 *     if (fastnn_lua_open(L) != 0) { ... }           // now `require 'fastnn'` works in L
 *     if (luaL_dostring(L, "local fnn = require 'fastnn'; print(fnn.ones(2, 2):sum():item())"))
 *         fprintf(stderr, "%s\n", lua_tostring(L, -1));
 *     lua_close(L);
 *
 * Link with the fastnn_host static library (bin/host.c) and LuaJIT; libfastnn itself is
 * loaded by lua/fastnn/C.lua through the FFI (a host that also calls the C API links -lfastnn:
 *     cc host.c $(pkg-config --cflags --libs fastnn)
 * and the Lua side then loads that same library). Tensors made in C reach a state without a
 * copy through fnn.adopt(ptr) (examples/embed_host.c shares one checkpoint among 4 threads).
 * Several threads may each open their own lua_State and call fastnn_lua_open on it at the same
 * time: it keeps no state in C.
 * The launcher bin/fastnn-lua is such a host.
 */
#ifndef FASTNN_HOST_H
#define FASTNN_HOST_H
#include <lua.h>
#ifdef __cplusplus
extern "C" {
#endif
#ifndef FASTNN_HOST_API
#define FASTNN_HOST_API __attribute__((visibility("default")))
#endif

/* Make `require 'fastnn'` work in L; call it after luaL_openlibs(L).
 * - Lua modules: prepends DIR/?.lua;DIR/?/init.lua to package.path, DIR being the first of
 *   $FASTNN_LUA_DIR; the source tree's lua/ when this program was built in (and runs from)
 *   the build tree; the installed module dir; <program dir>/../share/lua/5.1; the source
 *   tree's lua/ as a last resort. When none exists, package.path is left alone (a
 *   LuaRocks install puts the modules on LuaJIT's default path).
 * - Library: sets the global FASTNN_LIB_PATH to the libfastnn this program is linked with, if
 *   any (a host that makes tensors in C and hands them to Lua: one core, one allocator); else to
 *   the first existing file of <build dir>/libfastnn.so (a build-tree program), <installed libdir>/libfastnn.so.0,
 *   <program dir>/../lib/lua/5.1/libfastnn.so (LuaRocks), <program dir>/../lib/libfastnn.so.0,
 *   <build dir>/libfastnn.so. lua/fastnn/C.lua loads $FASTNN_LIB first, then FASTNN_LIB_PATH,
 *   then searches package.cpath and the system linker path.
 * Returns 0, or -1 with nothing changed when L has no `package` library (luaL_openlibs
 * not called) or memory ran out. Never raises a Lua error. */
FASTNN_HOST_API int fastnn_lua_open(lua_State *L);

/* Turn SIGINT (Ctrl-C) into the Lua error "interrupted" in L (on = 1), or give SIGINT its
 * default action back (on = 0). The first Ctrl-C sets a flag and installs a hook that raises
 * the error at the next safe point of L (a call, a return or an interpreted instruction), so
 * `pcall` catches it and a training loop can save a checkpoint; a second Ctrl-C before the
 * first was handled kills the process. One lua_State per process at a time (a signal has no
 * thread to go to); the launcher calls it around each chunk it runs.
 * Hooks do not run inside JIT-compiled traces (the luajit CLI has the same caveat), so every
 * tensor op also reads the flag (fastnn_lua_open leaves its address in the registry): a
 * compiled loop that does tensor work stops at its next op. A compiled loop with no tensor
 * op and no call that leaves the trace polls fastnn_interrupted() instead. */
FASTNN_HOST_API void fastnn_lua_catch_sigint(lua_State *L, int on);

/* 1 when Ctrl-C was pressed since the last call and no "interrupted" error was raised for
 * it yet, else 0. The call consumes it: no error is then raised for that Ctrl-C, and the
 * next one again starts the soft path. Exported by fastnn-lua so Lua code can poll it:
 *     ffi.cdef 'int fastnn_interrupted(void);'
 *     if ffi.C.fastnn_interrupted() ~= 0 then save_checkpoint(); os.exit(1) end
 * (ffi.C.fastnn_interrupted raises "undefined symbol" under a plain luajit: pcall it.) */
FASTNN_HOST_API int fastnn_interrupted(void);

#ifdef __cplusplus
}
#endif
#endif
