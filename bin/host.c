/* host.c: make `require 'fastnn'` work in a lua_State, and Ctrl-C as a Lua error.
 *
 * defines: fastnn_lua_open (module path + library path for lua/fastnn/C.lua),
 *          fastnn_lua_catch_sigint, fastnn_interrupted (see fastnn_host.h).
 * No mutable state in C except the SIGINT flag and target state, which a signal handler
 * must reach and which are atomics; fastnn_lua_open itself may run in many threads at once.
 */
#define _GNU_SOURCE
#include "fastnn_host.h"

#include <lauxlib.h>
#include <lualib.h>

#include <dlfcn.h>
#include <limits.h>
#include <signal.h>
#include <sys/mman.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#ifndef FASTNN_SOURCE_LUA_DIR
#define FASTNN_SOURCE_LUA_DIR ""
#endif
#ifndef FASTNN_BUILD_LIB_DIR
#define FASTNN_BUILD_LIB_DIR ""
#endif
#ifndef FASTNN_INSTALL_LUA_DIR
#define FASTNN_INSTALL_LUA_DIR "/usr/local/share/lua/5.1"
#endif
#ifndef FASTNN_INSTALL_LIB_DIR
#define FASTNN_INSTALL_LIB_DIR "/usr/local/lib"
#endif

enum { PATH_LEN = PATH_MAX + 64 };

typedef struct host_paths {
    char lua_dir[PATH_LEN];  /* "" when package.path is left alone */
    char lib[PATH_LEN];      /* "" when C.lua searches by itself */
} host_paths;

/* ---- file system helpers ---- */

static int is_dir(const char *p) { struct stat st; return p[0] && stat(p, &st) == 0 && S_ISDIR(st.st_mode); }
static int is_file(const char *p) { struct stat st; return p[0] && stat(p, &st) == 0 && S_ISREG(st.st_mode); }

/* Copy a + b into out (PATH_LEN bytes); 0 when it did not fit. */
static int join(char *out, const char *a, const char *b) {
    int n = snprintf(out, PATH_LEN, "%s%s", a, b);
    return n > 0 && n < PATH_LEN;
}

/* The directory of the running program, resolved (no trailing '/'); "" when unknown. */
static void program_dir(char *out) {
    char buf[PATH_LEN];
    ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
    out[0] = '\0';
    if (n <= 0) return;
    buf[n] = '\0';
    char *slash = strrchr(buf, '/');
    if (!slash) return;
    *slash = '\0';
    if (!realpath(buf[0] ? buf : "/", out)) out[0] = '\0';
}

/* 1 when the program runs from inside the build tree it was compiled in. */
static int in_build_tree(const char *prog_dir) {
    char build[PATH_LEN];
    if (!prog_dir[0] || !FASTNN_BUILD_LIB_DIR[0] || !realpath(FASTNN_BUILD_LIB_DIR, build)) return 0;
    size_t n = strlen(build);
    return strncmp(prog_dir, build, n) == 0 && (prog_dir[n] == '\0' || prog_dir[n] == '/');
}

/* Fill p with the module dir and library file, in the order fastnn_host.h documents. */
static void resolve(host_paths *p) {
    char prog[PATH_LEN], cand[PATH_LEN];
    program_dir(prog);
    int build_tree = in_build_tree(prog);
    p->lua_dir[0] = p->lib[0] = '\0';

    /* Lua modules: a dir that holds fastnn/ */
    const char *env = getenv("FASTNN_LUA_DIR");
    if (env && env[0]) {
        join(p->lua_dir, env, "");
    } else {
        const char *dirs[4] = { build_tree ? FASTNN_SOURCE_LUA_DIR : "", FASTNN_INSTALL_LUA_DIR, NULL,
                                FASTNN_SOURCE_LUA_DIR };
        char rel[PATH_LEN];
        dirs[2] = (prog[0] && join(rel, prog, "/../share/lua/5.1")) ? rel : "";
        for (int i = 0; i < 4; i++) {
            if (dirs[i][0] && join(cand, dirs[i], "/fastnn") && is_dir(cand)) {
                join(p->lua_dir, dirs[i], "");
                break;
            }
        }
    }

    /* a host linked with libfastnn (pkg-config's -lfastnn): the Lua side must load that very
     * library, so that tensors the host made and the ones Lua makes share one core. The probe is
     * a symbol of the I/O layer (libfastnn itself, not libfastnn_core under it); a host linked
     * with libfastnn_core alone loads the libfastnn found below, which reuses that core */
    Dl_info linked;
    void *sym = dlsym(RTLD_DEFAULT, "fnn_safetensors_save");
    if (sym && dladdr(sym, &linked) && linked.dli_fname && strstr(linked.dli_fname, "libfastnn") &&
        is_file(linked.dli_fname)) {
        if (realpath(linked.dli_fname, p->lib)) return;
        p->lib[0] = '\0';
    }

    /* the library; $FASTNN_LIB needs nothing from us, C.lua reads it first */
    const char *libs[5][2] = {
        { build_tree ? FASTNN_BUILD_LIB_DIR : "", "/libfastnn.so" },
        { FASTNN_INSTALL_LIB_DIR, "/libfastnn.so.0" },
        { prog, "/../lib/lua/5.1/libfastnn.so" },
        { prog, "/../lib/libfastnn.so.0" },
        { FASTNN_BUILD_LIB_DIR, "/libfastnn.so" },
    };
    for (int i = 0; i < 5; i++) {
        if (libs[i][0][0] && join(cand, libs[i][0], libs[i][1]) && is_file(cand)) {
            if (!realpath(cand, p->lib)) join(p->lib, cand, "");
            break;
        }
    }
}

static atomic_int interrupt_pending;             /* a Ctrl-C not yet handled (below) */

/* Runs under lua_cpcall, so a memory error cannot escape to a host outside pcall. */
static int open_protected(lua_State *L) {
    const host_paths *p = (const host_paths *)lua_touserdata(L, 1);
    lua_getglobal(L, "package");
    if (!lua_istable(L, -1)) return luaL_error(L, "fastnn_lua_open: call luaL_openlibs first");
    if (p->lua_dir[0]) {
        lua_getfield(L, -1, "path");
        const char *old = lua_tostring(L, -1);
        lua_pushfstring(L, "%s/?.lua;%s/?/init.lua;", p->lua_dir, p->lua_dir);
        const char *prefix = lua_tostring(L, -1);
        if (old && strncmp(old, prefix, strlen(prefix)) == 0) {
            lua_pop(L, 2);                        /* opened before: keep it as it is */
        } else {
            lua_pushstring(L, old ? old : "");
            lua_concat(L, 2);
            lua_setfield(L, -3, "path");
            lua_pop(L, 1);
        }
    }
    if (p->lib[0]) {
        lua_pushstring(L, p->lib);
        lua_setglobal(L, "FASTNN_LIB_PATH");
    }
    /* The Ctrl-C flag, read by every tensor op binding (lua/fastnn/tensor.lua): a loop the
     * JIT compiled into one trace never runs the hook, but it still stops at its next op. */
    lua_pushlightuserdata(L, (void *)&interrupt_pending);
    lua_setfield(L, LUA_REGISTRYINDEX, "fastnn.interrupt_flag");
    return 0;
}

int fastnn_lua_open(lua_State *L) {
    if (!L) return -1;
    host_paths *p = malloc(sizeof *p);           /* 8 KiB: keep it off small thread stacks */
    if (!p) return -1;
    resolve(p);
    int rc = lua_cpcall(L, open_protected, p);
    if (rc != 0) lua_pop(L, 1);                  /* the error message */
    free(p);
    return rc == 0 ? 0 : -1;
}

/* ---- Ctrl-C ---- */

static _Atomic(lua_State *) sigint_state;        /* the state the hook goes to */

/* Whether the innermost Lua function running is fastnn's own (its source under dir). C frames
 * are skipped: the interpreter calls a hook on entering and leaving a builtin too, and indexing
 * a cdata (out.storage in done()) runs the FFI's __index builtin, whose frame is "=[C]". */
static int inside_library(lua_State *L, const char *dir) {
    lua_Debug frame;
    for (int level = 0; lua_getstack(L, level, &frame); level++) {
        if (!lua_getinfo(L, "S", &frame)) return 0;
        if (strcmp(frame.what, "C") != 0) return strncmp(frame.source, dir, strlen(dir)) == 0;
    }
    return 0;
}

/* Runs at the next safe point of the state after a Ctrl-C: drop the hook, raise. */
static void interrupt_hook(lua_State *L, lua_Debug *ar) {
    (void)ar;
    /* Inside fastnn's own Lua code (tensor.lua registers its directory) the hook waits and fires
     * again at the next instruction: an op binding between its C call and done() holds an output
     * with no finalizer yet, which raising here would leak; done() raises after attaching it. */
    lua_getfield(L, LUA_REGISTRYINDEX, "fastnn.library_dir");
    const char *dir = lua_tostring(L, -1);
    int inside = dir && inside_library(L, dir);
    lua_pop(L, 1);
    if (inside && atomic_load(&interrupt_pending)) return;
    lua_sethook(L, NULL, 0, 0);
    if (!atomic_exchange(&interrupt_pending, 0)) return;   /* an op binding raised it already */
    /* fastnn's own raiser puts the error at the user's line, not inside a binding */
    lua_getfield(L, LUA_REGISTRYINDEX, "fastnn.raise_interrupted");
    if (lua_isfunction(L, -1)) lua_call(L, 0, 0);
    lua_pop(L, 1);
    luaL_error(L, "interrupted");
}

/* Async-signal-safe: atomics, lua_sethook (as luajit.c does), signal and raise. */
static void on_sigint(int sig) {
    if (atomic_exchange(&interrupt_pending, 1)) {   /* second Ctrl-C: the default action */
        signal(sig, SIG_DFL);
        raise(sig);
        return;
    }
    lua_State *L = atomic_load(&sigint_state);
    if (L) lua_sethook(L, interrupt_hook, LUA_MASKCALL | LUA_MASKRET | LUA_MASKCOUNT, 1);
}

/* The handler runs on a stack of its own (SA_ONSTACK), not below the interrupted code's stack
 * pointer. With the handler's frame there (about 3 KB with the AVX-512 state), a Ctrl-C landing
 * inside oneDNN's AVX-512 GEMM kernels corrupted the heap in about one run of two of
 * interrupt_leak_spec (glibc: "corrupted size vs. prev_size"), never with oneDNN capped to AVX2
 * and never on this stack: as if the kernels kept data below rsp, past the 128-byte red zone.
 * One stack per thread that installs the handler (a thread-local), freed when it is taken off. */
enum { SIGNAL_STACK_BYTES = 256 * 1024 };
static _Thread_local void *signal_stack;          /* mapped like a thread's stack, not malloc'd */

static void use_signal_stack(void) {
    if (signal_stack) return;
    void *p = mmap(NULL, SIGNAL_STACK_BYTES, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
    if (p == MAP_FAILED) return;                  /* then the handler runs where it lands */
    stack_t ss = {.ss_sp = p, .ss_size = SIGNAL_STACK_BYTES, .ss_flags = 0};
    if (sigaltstack(&ss, NULL) != 0) { munmap(p, SIGNAL_STACK_BYTES); return; }
    signal_stack = p;
}

/* after the handler is gone the stack is not needed; a script that ends in os.exit leaves it to the
 * process's exit, which unmaps it */
static void drop_signal_stack(void) {
    if (!signal_stack) return;
    stack_t ss = {.ss_sp = NULL, .ss_size = 0, .ss_flags = SS_DISABLE};
    if (sigaltstack(&ss, NULL) != 0) return;      /* still in use: keep it */
    munmap(signal_stack, SIGNAL_STACK_BYTES);
    signal_stack = NULL;
}

void fastnn_lua_catch_sigint(lua_State *L, int on) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sigemptyset(&sa.sa_mask);
    if (on && L) {
        atomic_store(&sigint_state, L);
        use_signal_stack();
        sa.sa_handler = on_sigint;
        sa.sa_flags = SA_RESTART | SA_ONSTACK;    /* blocking reads go on; the hook fires after */
        sigaction(SIGINT, &sa, NULL);
    } else {
        sa.sa_handler = SIG_DFL;
        sigaction(SIGINT, &sa, NULL);
        drop_signal_stack();
        lua_State *old = atomic_exchange(&sigint_state, NULL);
        if (old && atomic_exchange(&interrupt_pending, 0)) lua_sethook(old, NULL, 0, 0);
    }
}

int fastnn_interrupted(void) {
    return atomic_exchange(&interrupt_pending, 0);
}
