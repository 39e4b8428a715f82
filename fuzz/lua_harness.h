/* lua_harness.h: a libFuzzer target whose parser is Lua code (lua/fastnn over the instrumented
 * shared core). The driver fuzz/<name>.lua returns a function(path, bytes) that feeds one input to
 * the public API and returns true, or false and why the result broke the contract (a result of the
 * wrong shape, an error that is not a string naming the op at the caller's line). The harness
 * aborts on false and on any error escaping the driver: libFuzzer records a crash.
 * What the driver keeps for the whole run (fdl's model) lives in LuaJIT's mmap'ed heap, where
 * LeakSanitizer finds no pointers: tools/fuzz.sh turns the check at exit off (leaks are checked
 * per input while fuzzing).
 * Coverage: libFuzzer sees the C core's edges; a line hook adds the Lua lines run, hashed into
 * extra counters, so mutations that reach new Lua branches are kept too (JIT off: traces skip hooks). */
#ifndef FASTNN_FUZZ_LUA_HARNESS_H
#define FASTNN_FUZZ_LUA_HARNESS_H
#define _GNU_SOURCE
#include <lauxlib.h>
#include <luajit.h>
#include <lualib.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define LUA_COUNTERS (1 << 16)
__attribute__((section("__libfuzzer_extra_counters"), used)) static uint8_t lua_counters[LUA_COUNTERS];

static lua_State *L;
static int driver_ref = LUA_NOREF, input_fd = -1, inputs_run;
static char input_path[64];

static void line_hook(lua_State *l, lua_Debug *ar) {
    if (!lua_getinfo(l, "S", ar)) return;
    uintptr_t h = ((uintptr_t)ar->source * 0x9E3779B97F4A7C15ull) ^ ((uintptr_t)ar->currentline * 0x85EBCA6Bu);
    uint8_t *c = &lua_counters[(h >> 7) % LUA_COUNTERS];
    if (*c < 255) (*c)++;
}

static void harness_init(const char *driver) {
    setenv("FASTNN_LIB", FUZZ_LIB, 1);
    setenv("FASTNN_NUM_THREADS", "1", 1);
    L = luaL_newstate();
    if (!L) abort();
    luaL_openlibs(L);
    luaJIT_setmode(L, 0, LUAJIT_MODE_ENGINE | LUAJIT_MODE_OFF);
    char setup[1024];
    snprintf(setup, sizeof setup,
             "package.path = '%s/?.lua;%s/?/init.lua;%s/?.lua;' .. package.path\n"
             "return dofile('%s/%s.lua')",
             FUZZ_LUA_DIR, FUZZ_LUA_DIR, FUZZ_DIR, FUZZ_DIR, driver);
    if (luaL_loadstring(L, setup) || lua_pcall(L, 0, 1, 0) || !lua_isfunction(L, -1)) {
        fprintf(stderr, "fuzz %s: cannot load the driver: %s\n", driver, lua_tostring(L, -1));
        abort();
    }
    driver_ref = luaL_ref(L, LUA_REGISTRYINDEX);
    input_fd = memfd_create("fastnn-fuzz", MFD_CLOEXEC);
    if (input_fd < 0) { perror("fuzz: memfd_create"); abort(); }
    snprintf(input_path, sizeof input_path, "/proc/self/fd/%d", input_fd);
    lua_sethook(L, line_hook, LUA_MASKLINE, 0);
}

/* one input through the driver: the bytes as a file (its path) and as a string */
static void harness_run(const char *driver, const uint8_t *data, size_t size) {
    if (!L) harness_init(driver);
    if (ftruncate(input_fd, 0) != 0 || (size && pwrite(input_fd, data, size, 0) != (ssize_t)size)) {
        perror("fuzz: writing the input");
        abort();
    }
    lua_rawgeti(L, LUA_REGISTRYINDEX, driver_ref);
    lua_pushstring(L, input_path);
    lua_pushlstring(L, (const char *)data, size);
    if (lua_pcall(L, 2, 2, 0) != 0) {
        fprintf(stderr, "fuzz %s: an error escaped the driver: %s\n", driver, lua_tostring(L, -1));
        abort();
    }
    if (!lua_toboolean(L, -2)) {
        fprintf(stderr, "fuzz %s: %s\n", driver, lua_tostring(L, -1));
        abort();
    }
    lua_pop(L, 2);
    /* the finalizers free this input's tensors before libFuzzer's leak check looks; the core's
     * buffer cache would hide a use-after-free from ASan, so it is emptied now and then */
    lua_gc(L, LUA_GCCOLLECT, 0);
    if (++inputs_run % 64 == 0) {
        lua_getglobal(L, "FUZZ_EMPTY_CACHE");
        if (lua_isfunction(L, -1)) lua_pcall(L, 0, 0, 0);
        else lua_pop(L, 1);
    }
}
#endif
