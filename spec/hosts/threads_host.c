/* threads_host.c: fastnn from several host threads at once (spec/host_threads_spec.lua).
 *
 *   threads_host WORKER.lua [threads [rounds]]
 *   threads_host --churn WORKER.lua rounds threads
 *
 * WORKER.lua returns a function(id, rounds) -> a line of figures that depend only on id. The
 * host runs it for every id on the main thread, one after another (the reference), then starts
 * the threads at once, each with its own lua_State (fastnn_lua_open) running its id, and checks
 * that every thread's line equals its reference line. Prints "thread <id>: <line>" per thread,
 * "threads_host: <n> threads agree" and exits 0, or names the mismatch or error and exits 1.
 * --churn: `rounds` times, start `threads` threads that each run the worker once (rounds = 1) and
 * end; prints "round <r> rss_mb <X>" after each, so a spec sees whether ended threads leave memory
 * behind (the core's per-thread free lists did, before they were released at thread exit).
 * Built in the TSan build too: there it must run race-free. FASTNN_SAN_JIT=off (set by
 * tools/test.sh --sanitize thread) turns LuaJIT's compiler off: its traces crash under TSan.
 */
#include "fastnn_host.h"

#include <lauxlib.h>
#include <luajit.h>
#include <lualib.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { MAX_THREADS = 64, LINE = 512 };

typedef struct job {
    const char *worker;
    int id, rounds;
    char line[LINE];     /* the worker's line, or the error */
    int ok;
} job;

/* One run of the worker in a fresh lua_State; fills j->line and j->ok. */
static void run_worker(job *j) {
    lua_State *L = luaL_newstate();
    if (!L) { snprintf(j->line, LINE, "cannot create a lua_State"); return; }
    luaL_openlibs(L);
    const char *jit = getenv("FASTNN_SAN_JIT");
    if (jit && strcmp(jit, "off") == 0) luaJIT_setmode(L, 0, LUAJIT_MODE_ENGINE | LUAJIT_MODE_OFF);
    if (fastnn_lua_open(L) != 0) {
        snprintf(j->line, LINE, "fastnn_lua_open failed");
    } else if (luaL_loadfile(L, j->worker) != 0 || lua_pcall(L, 0, 1, 0) != 0) {
        snprintf(j->line, LINE, "loading %s: %s", j->worker, lua_tostring(L, -1));
    } else {
        lua_pushinteger(L, j->id);
        lua_pushinteger(L, j->rounds);
        if (lua_pcall(L, 2, 1, 0) != 0) {
            const char *msg = lua_tostring(L, -1);
            snprintf(j->line, LINE, "error: %s", msg ? msg : "(not a string)");
        } else if (!lua_isstring(L, -1)) {
            snprintf(j->line, LINE, "the worker returned no string");
        } else {
            snprintf(j->line, LINE, "%s", lua_tostring(L, -1));
            j->ok = 1;
        }
    }
    lua_close(L);        /* finalizers release every tensor of the state */
}

static void *thread_main(void *arg) {
    run_worker((job *)arg);
    return NULL;
}

/* VmRSS of this process in MB, or -1 */
static double rss_mb(void) {
    FILE *f = fopen("/proc/self/status", "r");
    if (!f) return -1;
    char line[256];
    long kb = -1;
    while (fgets(line, sizeof line, f))
        if (strncmp(line, "VmRSS:", 6) == 0) sscanf(line + 6, "%ld", &kb);
    fclose(f);
    return kb < 0 ? -1 : kb / 1024.0;
}

static int churn(const char *worker, int rounds, int n) {
    for (int r = 1; r <= rounds; r++) {
        pthread_t threads[MAX_THREADS];
        static job jobs[MAX_THREADS];
        for (int t = 0; t < n; t++) {
            jobs[t] = (job){.worker = worker, .id = t + 1, .rounds = 1};
            if (pthread_create(&threads[t], NULL, thread_main, &jobs[t]) != 0) {
                printf("round %d: cannot start a thread\n", r);
                return 1;
            }
        }
        for (int t = 0; t < n; t++) pthread_join(threads[t], NULL);
        for (int t = 0; t < n; t++)
            if (!jobs[t].ok) { printf("round %d thread %d: %s\n", r, t + 1, jobs[t].line); return 1; }
        printf("round %d rss_mb %.1f\n", r, rss_mb());
    }
    return 0;
}

int main(int argc, char **argv) {
    if (argc == 5 && strcmp(argv[1], "--churn") == 0) {
        int rounds = atoi(argv[3]), n = atoi(argv[4]);
        if (rounds < 1 || n < 1 || n > MAX_THREADS) {
            fprintf(stderr, "%s: --churn needs rounds >= 1 and threads 1..%d\n", argv[0], MAX_THREADS);
            return 2;
        }
        return churn(argv[2], rounds, n);
    }
    if (argc < 2) {
        fprintf(stderr, "usage: %s WORKER.lua [threads [rounds]] | --churn WORKER.lua rounds threads\n", argv[0]);
        return 2;
    }
    int n = argc > 2 ? atoi(argv[2]) : 4, rounds = argc > 3 ? atoi(argv[3]) : 20;
    if (n < 1 || n > MAX_THREADS || rounds < 1) {
        fprintf(stderr, "%s: threads must be 1..%d and rounds >= 1\n", argv[0], MAX_THREADS);
        return 2;
    }
    static job ref[MAX_THREADS], par[MAX_THREADS];
    for (int t = 0; t < n; t++) {
        ref[t] = (job){.worker = argv[1], .id = t + 1, .rounds = rounds};
        par[t] = ref[t];
        run_worker(&ref[t]);
        if (!ref[t].ok) {
            printf("reference %d: %s\n", t + 1, ref[t].line);
            return 1;
        }
    }
    pthread_t threads[MAX_THREADS];
    for (int t = 0; t < n; t++) {
        if (pthread_create(&threads[t], NULL, thread_main, &par[t]) != 0) {
            printf("thread %d: cannot start a thread\n", t + 1);
            return 1;
        }
    }
    for (int t = 0; t < n; t++) pthread_join(threads[t], NULL);
    int failures = 0;
    for (int t = 0; t < n; t++) {
        int agree = par[t].ok && strcmp(par[t].line, ref[t].line) == 0;
        if (agree) printf("thread %d: %s\n", t + 1, par[t].line);
        else printf("thread %d: MISMATCH: %s (single thread: %s)\n", t + 1, par[t].line, ref[t].line);
        failures += !agree;
    }
    if (failures) printf("threads_host: %d of %d threads disagree\n", failures, n);
    else printf("threads_host: %d threads agree\n", n);
    return failures ? 1 : 0;
}
