/* embed_host.c: a C host application running fastnn inference from several threads.
 *
 * Each of 4 threads opens its own lua_State, calls fastnn_lua_open so that
 * `require 'fastnn'` works in it, and runs a small two-layer network (matmul, relu,
 * matmul) 50 times on inputs and weights made from its thread id. The host checks each
 * thread's checksum against the same network computed here in plain C (doubles), prints
 * both, and exits 1 when any thread failed or disagreed.
 *
 *   build:  cmake --build build --target embed_host
 *   run:    ./build/embed_host            (FASTNN_LIB / FASTNN_LUA_DIR override the paths)
 *
 * A real application links the same way: LuaJIT + the fastnn_host library (bin/host.c),
 * with bin/fastnn_host.h; libfastnn is loaded by the Lua side.
 */
#include "fastnn_host.h"

#include <lauxlib.h>
#include <lualib.h>

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

enum { THREADS = 4, N = 8, IN = 16, HIDDEN = 32, OUT = 4, STEPS = 50 };

/* The model as Lua: receives the thread id, returns the sum of the output [N, OUT]. */
static const char *inference_lua =
    "local id = ...\n"
    "local fnn = require 'fastnn'\n"
    "local N, IN, HIDDEN, OUT, STEPS = 8, 16, 32, 4, 50\n"
    "local function fill(rows, cols, f)\n"
    "   local flat = {}\n"
    "   for i = 1, rows do for j = 1, cols do flat[#flat + 1] = f(i, j) end end\n"
    "   return fnn.tensor(flat, {rows, cols})\n"
    "end\n"
    "local x  = fill(N, IN,      function(i, j) return ((i * 7 + j * 3 + id) % 11) / 11 - 0.5 end)\n"
    "local w1 = fill(IN, HIDDEN, function(i, j) return ((i * 5 + j * 2 + id) % 13) / 13 - 0.5 end)\n"
    "local w2 = fill(HIDDEN, OUT, function(i, j) return ((i * 3 + j + id) % 7) / 7 - 0.5 end)\n"
    "local checksum\n"
    "for _ = 1, STEPS do                    -- the same batch again: the states really run at once\n"
    "   local y = x:matmul(w1):relu():matmul(w2)\n"
    "   checksum = 0\n"
    "   for _, v in ipairs(y:to_flat()) do checksum = checksum + v end\n"
    "end\n"
    "return checksum\n";

typedef struct job {
    int id;              /* 1..THREADS */
    double checksum;     /* from Lua */
    int ok;              /* the Lua side ran */
    char error[1024];
} job;

/* The same network in C: x [N, IN] @ w1 [IN, HIDDEN] -> relu -> @ w2 [HIDDEN, OUT], summed. */
static double reference(int id) {
    double x[N][IN], w1[IN][HIDDEN], w2[HIDDEN][OUT], h[N][HIDDEN], sum = 0;
    for (int i = 1; i <= N; i++)
        for (int j = 1; j <= IN; j++) x[i - 1][j - 1] = ((i * 7 + j * 3 + id) % 11) / 11.0 - 0.5;
    for (int i = 1; i <= IN; i++)
        for (int j = 1; j <= HIDDEN; j++) w1[i - 1][j - 1] = ((i * 5 + j * 2 + id) % 13) / 13.0 - 0.5;
    for (int i = 1; i <= HIDDEN; i++)
        for (int j = 1; j <= OUT; j++) w2[i - 1][j - 1] = ((i * 3 + j + id) % 7) / 7.0 - 0.5;
    for (int n = 0; n < N; n++)
        for (int k = 0; k < HIDDEN; k++) {
            double acc = 0;
            for (int i = 0; i < IN; i++) acc += x[n][i] * w1[i][k];
            h[n][k] = acc > 0 ? acc : 0;
        }
    for (int n = 0; n < N; n++)
        for (int o = 0; o < OUT; o++)
            for (int k = 0; k < HIDDEN; k++) sum += h[n][k] * w2[k][o];
    return sum;
}

/* One thread: its own state, fastnn_lua_open, the model, close. */
static void *run(void *arg) {
    job *j = (job *)arg;
    lua_State *L = luaL_newstate();
    if (!L) { snprintf(j->error, sizeof j->error, "cannot create a lua_State"); return NULL; }
    luaL_openlibs(L);
    if (fastnn_lua_open(L) != 0) {
        snprintf(j->error, sizeof j->error, "fastnn_lua_open failed");
    } else if (luaL_loadbuffer(L, inference_lua, strlen(inference_lua), "=inference") != 0) {
        snprintf(j->error, sizeof j->error, "%s", lua_tostring(L, -1));
    } else {
        lua_pushinteger(L, j->id);
        if (lua_pcall(L, 1, 1, 0) != 0) {
            const char *msg = lua_tostring(L, -1);
            snprintf(j->error, sizeof j->error, "%s", msg ? msg : "(error object is not a string)");
        } else if (!lua_isnumber(L, -1)) {
            snprintf(j->error, sizeof j->error, "the model returned no number");
        } else {
            j->checksum = lua_tonumber(L, -1);
            j->ok = 1;
        }
    }
    lua_close(L);           /* runs the finalizers: every tensor of this state is released */
    return NULL;
}

int main(void) {
    pthread_t threads[THREADS];
    job jobs[THREADS];
    int started[THREADS], failures = 0;
    for (int t = 0; t < THREADS; t++) {
        memset(&jobs[t], 0, sizeof jobs[t]);
        jobs[t].id = t + 1;
        started[t] = pthread_create(&threads[t], NULL, run, &jobs[t]) == 0;
        if (!started[t]) run(&jobs[t]);   /* no thread: run it here rather than not at all */
    }
    for (int t = 0; t < THREADS; t++)
        if (started[t]) pthread_join(threads[t], NULL);

    for (int t = 0; t < THREADS; t++) {
        double want = reference(jobs[t].id);
        if (!jobs[t].ok) {
            printf("thread %d: error: %s\n", jobs[t].id, jobs[t].error);
            failures++;
            continue;
        }
        /* float32 compute against doubles: a relative tolerance */
        int agree = fabs(jobs[t].checksum - want) <= 1e-4 * (1 + fabs(want));
        printf("thread %d: checksum %.6f (reference %.6f) %s\n", jobs[t].id, jobs[t].checksum, want,
               agree ? "ok" : "MISMATCH");
        if (!agree) failures++;
    }
    printf("%d passed, %d failed\n", THREADS - failures, failures);
    return failures ? 1 : 0;
}
