/* fastnn-lua: LuaJIT with `require 'fastnn'` working from any directory.
 *
 *   fastnn-lua [options] [script [args]]
 *
 * Behaves like the luajit command (same `arg` table, same options where they overlap)
 * plus: Ctrl-C becomes the catchable Lua error "interrupted" (fastnn_lua_catch_sigint),
 * and the fastnn module and library paths are set (fastnn_lua_open). Nothing heavy is
 * preloaded: `require 'fastnn'` loads the library when a script asks for it.
 * Exit status: 0 when everything ran, 1 on an uncaught error or bad usage, n for os.exit(n).
 *
 * defines: main and its helpers (argument parsing, error reports, the REPL).
 */
#define _GNU_SOURCE
#include "fastnn_host.h"

#include <lauxlib.h>
#include <luajit.h>
#include <lualib.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifndef FASTNN_VERSION
#define FASTNN_VERSION "0.0.0"
#endif

static const char *progname = "fastnn-lua";   /* NULL inside the REPL: errors print bare */

static void usage(FILE *f) {
    fprintf(f,
        "usage: %s [options]... [script [args]...]\n"
        "Available options are:\n"
        "  -e chunk  Execute string 'chunk' (may repeat; run in order).\n"
        "  -l name   Require library 'name'.\n"
        "  -j cmd    Perform LuaJIT control command (-jon, -joff, -jflush, -jv, ...).\n"
        "  -O[opt]   Control LuaJIT optimizations.\n"
        "  -i        Enter interactive mode after executing 'script'.\n"
        "  -v, --version  Show version information.\n"
        "  -h, --help     Show this help.\n"
        "  --        Stop handling options.\n"
        "  -         Execute stdin and stop handling options.\n"
        "With no script and no -e, runs a REPL when stdin is a terminal, else runs stdin.\n"
        "Ctrl-C raises the Lua error 'interrupted' (pcall catches it); a second Ctrl-C\n"
        "before the first was handled ends the program.\n"
        "Environment: FASTNN_LUA_DIR (Lua modules), FASTNN_LIB (libfastnn path).\n",
        "fastnn-lua");
}

static void print_version(void) {
    const char *jit = LUAJIT_VERSION;             /* "LuaJIT 2.1.0-beta3" */
    if (strncmp(jit, "LuaJIT ", 7) == 0) jit += 7;
    printf("fastnn-lua %s (LuaJIT %s)\n", FASTNN_VERSION, jit);
    fflush(stdout);
}

/* Print the message on top of the stack (if any) to stderr and pop it. */
static int report(lua_State *L, int status) {
    if (status && !lua_isnil(L, -1)) {
        const char *msg = lua_tostring(L, -1);
        if (msg == NULL) msg = "(error object is not a string)";
        if (progname) fprintf(stderr, "%s: ", progname);
        fprintf(stderr, "%s\n", msg);
        fflush(stderr);
        lua_pop(L, 1);
    }
    return status;
}

/* Message handler: the error as text plus a traceback. */
static int traceback(lua_State *L) {
    const char *msg = lua_tostring(L, 1);
    if (msg == NULL) {
        if (luaL_callmeta(L, 1, "__tostring") && lua_type(L, -1) == LUA_TSTRING)
            msg = lua_tostring(L, -1);
        else
            msg = lua_pushfstring(L, "(error object is a %s value)", luaL_typename(L, 1));
    }
    luaL_traceback(L, L, msg, 1);
    return 1;
}

/* Call the function below narg arguments with Ctrl-C turned into a Lua error. */
static int docall(lua_State *L, int narg, int nres) {
    int base = lua_gettop(L) - narg;
    lua_pushcfunction(L, traceback);
    lua_insert(L, base);
    fastnn_lua_catch_sigint(L, 1);
    int status = lua_pcall(L, narg, nres, base);
    fastnn_lua_catch_sigint(L, 0);
    lua_remove(L, base);
    if (status != 0) lua_gc(L, LUA_GCCOLLECT, 0);  /* free what the failed chunk held */
    return status;
}

static int dostring(lua_State *L, const char *s, const char *name) {
    int status = luaL_loadbuffer(L, s, strlen(s), name);
    if (status == 0) status = docall(L, 0, 0);
    return report(L, status);
}

static int dolibrary(lua_State *L, const char *name) {
    lua_getglobal(L, "require");
    lua_pushstring(L, name);
    return report(L, docall(L, 1, 1));
}

/* -j cmd: "on"/"off"/"flush" call jit.<cmd>(); "mod=a,b" calls require("jit.mod").start(a, b). */
static int dojitcmd(lua_State *L, const char *cmd) {
    const char *eq = strchr(cmd, '=');
    size_t n = eq ? (size_t)(eq - cmd) : strlen(cmd);
    lua_getglobal(L, "jit");
    lua_pushlstring(L, cmd, n);
    lua_gettable(L, -2);
    lua_remove(L, -2);
    if (!lua_isfunction(L, -1)) {                 /* not a jit.* function: a jit.* module */
        lua_pop(L, 1);
        lua_getglobal(L, "require");
        lua_pushliteral(L, "jit.");
        lua_pushlstring(L, cmd, n);
        lua_concat(L, 2);
        if (docall(L, 1, 1) != 0) return report(L, 1);
        lua_getfield(L, -1, "start");
        lua_remove(L, -2);
    }
    int narg = 0;
    if (eq) {                                     /* comma-separated arguments */
        const char *a = eq + 1;
        for (;;) {
            const char *c = strchr(a, ',');
            lua_pushlstring(L, a, c ? (size_t)(c - a) : strlen(a));
            narg++;
            if (!c) break;
            a = c + 1;
        }
    }
    return report(L, docall(L, narg, 0));
}

/* -O[opt]: jit.opt.start(opt) */
static int dojitopt(lua_State *L, const char *opt) {
    lua_getglobal(L, "require");
    lua_pushliteral(L, "jit.opt");
    if (docall(L, 1, 1) != 0) return report(L, 1);
    lua_getfield(L, -1, "start");
    lua_remove(L, -2);
    int narg = 0;
    if (*opt) { lua_pushstring(L, opt); narg = 1; }
    return report(L, docall(L, narg, 0));
}

/* ---- REPL ---- */

/* Read one line with a prompt into a new Lua string on the stack; 0 at end of input. */
static int pushline(lua_State *L, int first) {
    char *line = NULL;
    size_t cap = 0;
    fputs(first ? "> " : ">> ", stdout);
    fflush(stdout);
    ssize_t n = getline(&line, &cap, stdin);
    if (n < 0) { free(line); return 0; }
    if (n > 0 && line[n - 1] == '\n') line[--n] = '\0';
    if (first && line[0] == '=')                  /* Lua 5.1's '=expr' */
        lua_pushfstring(L, "return %s", line + 1);
    else
        lua_pushlstring(L, line, (size_t)n);
    free(line);
    return 1;
}

/* A syntax error at '<eof>' means the chunk goes on in the next line. */
static int incomplete(lua_State *L, int status) {
    if (status != LUA_ERRSYNTAX) return 0;
    size_t len;
    const char *msg = lua_tolstring(L, -1, &len);
    const char *eof = "'<eof>'";
    size_t k = strlen(eof);
    if (msg && len >= k && strcmp(msg + len - k, eof) == 0) { lua_pop(L, 1); return 1; }
    return 0;
}

/* Leave a compiled chunk (status 0) or an error message on the stack; -1 at end of input. */
static int loadline(lua_State *L) {
    lua_settop(L, 0);
    if (!pushline(L, 1)) return -1;
    /* an expression first, so '1+1' prints 2 */
    lua_pushfstring(L, "return %s", lua_tostring(L, 1));
    size_t len;
    const char *s = lua_tolstring(L, -1, &len);
    if (luaL_loadbuffer(L, s, len, "=stdin") == 0) {
        lua_remove(L, -2);                        /* the "return" text */
        lua_remove(L, 1);                         /* the line */
        return 0;
    }
    lua_pop(L, 2);                                /* its error and the "return" text */
    for (;;) {                                    /* a statement, maybe over several lines */
        s = lua_tolstring(L, 1, &len);
        int status = luaL_loadbuffer(L, s, len, "=stdin");
        if (!incomplete(L, status)) { lua_remove(L, 1); return status; }
        if (!pushline(L, 0)) { lua_remove(L, 1); return -1; }
        lua_pushliteral(L, "\n");
        lua_insert(L, -2);
        lua_concat(L, 3);
    }
}

static void repl(lua_State *L) {
    const char *old = progname;
    progname = NULL;
    int status;
    while ((status = loadline(L)) != -1) {
        if (status == 0) status = docall(L, 0, LUA_MULTRET);
        report(L, status);
        if (status == 0 && lua_gettop(L) > 0) {   /* print what an expression gave */
            lua_getglobal(L, "print");
            lua_insert(L, 1);
            if (lua_pcall(L, lua_gettop(L) - 1, 0, 0) != 0)
                fprintf(stderr, "error calling 'print' (%s)\n", lua_tostring(L, -1));
        }
    }
    lua_settop(L, 0);
    fputs("\n", stdout);
    fflush(stdout);
    progname = old;
}

/* ---- command line ---- */

typedef struct cmdline {
    int argc;
    char **argv;
    int script;          /* index of the script in argv, argc when none */
    int interactive;     /* -i */
    int version;         /* -v */
    int has_e;           /* any -e */
    int status;          /* exit status of pmain */
} cmdline;

/* Check the options before running any; the script index is where they stop. */
static int collectargs(cmdline *c) {
    int i;
    for (i = 1; i < c->argc; i++) {
        const char *a = c->argv[i];
        if (a[0] != '-') break;                   /* the script */
        if (strcmp(a, "-") == 0) break;           /* stdin as the script */
        if (strcmp(a, "--") == 0) { i++; break; }
        if (strcmp(a, "-i") == 0) { c->interactive = c->version = 1; continue; }
        if (strcmp(a, "-v") == 0 || strcmp(a, "--version") == 0) { c->version = 1; continue; }
        if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) return 2;
        if (a[1] == 'O') continue;
        if (a[1] == 'e' || a[1] == 'l' || a[1] == 'j') {
            if (a[1] == 'e') c->has_e = 1;
            if (a[2] == '\0') {                   /* the value is the next argument */
                if (++i >= c->argc) return -1;
            }
            continue;
        }
        return -1;
    }
    c->script = i < c->argc ? i : c->argc;
    return 0;
}

/* Run -e, -l, -j, -O in order. */
static int runargs(lua_State *L, cmdline *c) {
    for (int i = 1; i < c->script; i++) {
        const char *a = c->argv[i];
        if (strcmp(a, "--") == 0) break;
        char opt = a[1];
        if (opt != 'e' && opt != 'l' && opt != 'j' && opt != 'O') continue;
        const char *v = a + 2;
        if (opt != 'O' && *v == '\0') v = c->argv[++i];
        int status = opt == 'e' ? dostring(L, v, "=(command line)")
                   : opt == 'l' ? dolibrary(L, v)
                   : opt == 'j' ? dojitcmd(L, v)
                                : dojitopt(L, v);
        if (status != 0) return status;
    }
    return 0;
}

/* The global `arg`, as luajit makes it: arg[0] the script, arg[1..] its arguments,
 * arg[-k] the interpreter and its options. */
static void setargs(lua_State *L, const cmdline *c) {
    lua_createtable(L, c->argc - c->script, c->script + 1);
    for (int i = 0; i < c->argc; i++) {
        lua_pushstring(L, c->argv[i]);
        lua_rawseti(L, -2, i - c->script);
    }
    lua_setglobal(L, "arg");
}

/* Run argv[script] (or stdin for "-", unless it came after "--") with the rest as `...`. */
static int runscript(lua_State *L, const cmdline *c) {
    const char *fname = c->argv[c->script];
    if (strcmp(fname, "-") == 0 && strcmp(c->argv[c->script - 1], "--") != 0) fname = NULL;
    int status = luaL_loadfile(L, fname);         /* NULL: stdin */
    int narg = 0;
    if (status == 0) {
        for (int i = c->script + 1; i < c->argc; i++, narg++) lua_pushstring(L, c->argv[i]);
        status = docall(L, narg, 0);
    }
    return report(L, status);
}

static int runstdin(lua_State *L) {
    int status = luaL_loadfile(L, NULL);
    if (status == 0) status = docall(L, 0, 0);
    return report(L, status);
}

/* After an uncaught error: a rank of a distributed job (fastnn.distributed loaded) ends the
 * whole job through the module's _abort_on_error (MPI_Abort), so the other ranks are not left
 * waiting in a collective. Does nothing in a plain run. */
static void abort_distributed(lua_State *L) {
    int top = lua_gettop(L);
    lua_getglobal(L, "package");
    if (lua_istable(L, -1)) {
        lua_getfield(L, -1, "loaded");
        if (lua_istable(L, -1)) {
            lua_getfield(L, -1, "fastnn.distributed");
            if (lua_istable(L, -1)) {
                lua_getfield(L, -1, "_abort_on_error");
                if (lua_isfunction(L, -1)) lua_pcall(L, 0, 0, 0);
            }
        }
    }
    lua_settop(L, top);
}

static int pmain(lua_State *L) {
    cmdline *c = (cmdline *)lua_touserdata(L, 1);
    lua_settop(L, 0);
    int r = collectargs(c);
    if (r != 0) {
        if (r < 0) fprintf(stderr, "%s: bad option or missing value\n", progname);
        usage(r < 0 ? stderr : stdout);
        c->status = r < 0 ? 1 : 0;
        return 0;
    }
    if (c->version) print_version();

    lua_gc(L, LUA_GCSTOP, 0);
    luaL_openlibs(L);
    lua_gc(L, LUA_GCRESTART, -1);
    if (fastnn_lua_open(L) != 0) {
        fprintf(stderr, "%s: cannot set up the fastnn module path\n", progname);
        c->status = 1;
        return 0;
    }
    setargs(L, c);

    if (runargs(L, c) != 0) { abort_distributed(L); c->status = 1; return 0; }
    if (c->script < c->argc) {
        if (runscript(L, c) != 0) { abort_distributed(L); c->status = 1; return 0; }
    }
    if (c->interactive) {
        repl(L);
    } else if (c->script == c->argc && !c->has_e && !c->version) {
        if (isatty(0)) {
            print_version();
            repl(L);
        } else if (runstdin(L) != 0) {
            c->status = 1;
        }
    }
    return 0;
}

int main(int argc, char **argv) {
    /* how OpenMP's workers wait is set by lua/fastnn/C.lua before it loads libfastnn (and so
     * libgomp), from the kernels that library runs */
    lua_State *L = luaL_newstate();
    if (L == NULL) {
        fprintf(stderr, "%s: cannot create state: not enough memory\n", progname);
        return EXIT_FAILURE;
    }
    cmdline c = { .argc = argc, .argv = argv };
    int status = lua_cpcall(L, pmain, &c);
    report(L, status);
    lua_close(L);                                 /* runs finalizers: tensors are freed */
    return (status != 0 || c.status != 0) ? EXIT_FAILURE : EXIT_SUCCESS;
}
