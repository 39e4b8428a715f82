/* embed_host.c: a C host that loads a trained model once and serves it from 4 threads.
 *
 *   embed_host [model.fdl]
 *
 * 1. With no argument it first trains a small MLP (nn.Sequential of Linear and ReLU) in a
 *    lua_State of its own and saves it with fnn.save into a temporary directory.
 * 2. It loads the checkpoint ONCE, in C, with the core's own loader (fnn_safetensors_*): the
 *    weights are host-owned fnn_tensor headers over refcounted storages, independent of any
 *    lua_State, so no state has to outlive its thread and releasing them is one C call.
 * 3. A single-thread run (a lua_State on the main thread) computes the reference output of a
 *    fixed batch. Then 4 threads each open their own lua_State (fastnn_lua_open), receive the
 *    weights as pointers and wrap them with fnn.adopt (no copy: one more atomic reference,
 *    dropped by the state's GC), build the model from the checkpoint's names, run it RUNS times
 *    and hand back the last output and the data addresses they saw.
 * 4. Every thread's output must be bit-equal to the reference (same kernels, same data; the core
 *    and OpenBLAS run at one thread each, so no reduction order depends on a thread count), its
 *    runs bit-equal to each other, and its weight addresses the host's. At the end every weight
 *    is released: the core's live bytes are back to what they were before the load.
 * Prints one line per thread and `embed_host: 4 threads agree`; exits 1 on any mismatch.
 *
 * Sharing is race-free: the weights are written once before the threads start and only read
 * after; storage refcounts are atomics; each thread has its own lua_State and its own core
 * allocation lists (_Thread_local), and nothing in Lua is shared.
 *
 *   build:  cmake --build build --target embed_host           (links fastnn_host + libfastnn)
 *   or, against an install:  cc embed_host.c $(pkg-config --cflags --libs fastnn) -lpthread
 */
#define _GNU_SOURCE
#include "fastnn.h"
#include "fastnn_host.h"

#include <lauxlib.h>
#include <lualib.h>

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum { THREADS = 4, RUNS = 200, MAX_WEIGHTS = 64, MAX_OUT = 1 << 16 };

/* The checkpoint as the host holds it: names and tensors in file order. */
typedef struct weights {
    int n;
    char *names[MAX_WEIGHTS];
    fnn_tensor t[MAX_WEIGHTS];
} weights;

/* One inference run in one lua_State (id 0: the single-thread reference, on the main thread). */
typedef struct job {
    int id;
    const weights *w;
    float out[MAX_OUT];            /* the last run's output, row-major */
    int64_t out_n;
    char shape[64];
    int runs_equal;                /* runs bit-equal to this state's first */
    uintptr_t seen[MAX_WEIGHTS];   /* each weight's data address as the state saw it */
    pthread_barrier_t *start;      /* the threads begin their runs together (NULL: alone) */
    int ok;
    char error[1024];
} job;

/* Trains the demo model and saves it to the path given as its argument. */
static const char *train_lua =
    "local path = ...\n"
    "local fnn = require 'fastnn'\n"
    "local nn = fnn.nn\n"
    "fnn.manual_seed(7)\n"
    "local model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 4))\n"
    "local opt = fnn.optim.Adam(model:parameters(), 0.01)\n"
    "local x = fnn.randn(64, 16)\n"
    "local y = x:narrow(2, 1, 4):tanh()                -- a target the MLP can learn\n"
    "local first, last\n"
    "for step = 1, 60 do\n"
    "   opt:zero_grad()\n"
    "   local loss = fnn.mse_loss(model(x), y)\n"
    "   loss:backward()\n"
    "   opt:step()\n"
    "   last = loss:item()\n"
    "   first = first or last\n"
    "end\n"
    "fnn.save(model, path)\n"
    "return first, last\n";

/* Inference in one state. Arguments: names, pointers to the host's tensors, the address of
 * fnn_detach as the host linked it, the output buffer and its capacity, the address buffer,
 * the run count. Returns the function that runs the model (so that the host can start every
 * thread's runs at once); it returns the output's numel, its shape and the runs equal to the
 * first. */
static const char *infer_lua =
    "local names, ptrs, host_fn, out, cap, seen, runs = ...\n"
    "local ffi = require 'ffi'\n"
    "local fnn = require 'fastnn'\n"
    "local C = require 'fastnn.C'\n"
    "local nn = fnn.nn\n"
    "if ffi.cast('void *', C.fnn_detach) ~= ffi.cast('void *', host_fn) then\n"
    "   error('Lua loaded another libfastnn than the host is linked with (FASTNN_LIB names another file)', 0)\n"
    "end\n"
    "-- the host's tensors, shared: no copy, one more reference each\n"
    "local w, seen_at = {}, ffi.cast('uint64_t *', seen)\n"
    "for i, name in ipairs(names) do\n"
    "   w[name] = fnn.adopt(ptrs[i])\n"
    "   seen_at[i - 1] = ffi.cast('uint64_t', ffi.cast('uintptr_t', C.fnn_tensor_data(w[name])))\n"
    "end\n"
    "-- nn.Param keeps a private copy (optimizers update it in place), so the shared weights go in\n"
    "-- as buffers of a Linear that never trains\n"
    "local Shared = nn.Module:extend('SharedLinear')\n"
    "function Shared:__init(weight, bias)\n"
    "   self:register_buffer('weight', weight)\n"
    "   self:register_buffer('bias', bias)\n"
    "end\n"
    "function Shared:forward(x) return fnn.linear(x, self.weight, self.bias) end\n"
    "function Shared:short_str()\n"
    "   return ('SharedLinear(%d -> %d)'):format(self.weight:size(2), self.weight:size(1))\n"
    "end\n"
    "-- the model from nn.Sequential's names: a Linear at each '<i>.weight', ReLU at the gaps\n"
    "local last = 0\n"
    "for _, name in ipairs(names) do\n"
    "   local i, kind = name:match('^(%d+)%.(%a+)$')\n"
    "   if not i or (kind ~= 'weight' and kind ~= 'bias') then\n"
    "      error(('checkpoint tensor %s is not <i>.weight or <i>.bias of an nn.Sequential MLP'):format(name), 0)\n"
    "   end\n"
    "   last = math.max(last, tonumber(i))\n"
    "end\n"
    "local layers = {}\n"
    "for i = 1, last do\n"
    "   local weight = w[i .. '.weight']\n"
    "   layers[i] = weight and Shared(weight, w[i .. '.bias']) or nn.ReLU()\n"
    "end\n"
    "if not w['1.weight'] then error('checkpoint has no 1.weight (the first Linear)', 0) end\n"
    "local model = nn.Sequential(layers):eval()\n"
    "-- the fixed batch: 8 rows, the first layer's input width\n"
    "local width, flat = w['1.weight']:size(2), {}\n"
    "for r = 1, 8 do for c = 1, width do flat[#flat + 1] = math.sin(0.7 * r + 1.3 * c) end end\n"
    "local x = fnn.tensor(flat, {8, width})\n"
    "local buf = ffi.cast('float *', out)\n"
    "return function()\n"
    "local first, equal, y, bytes\n"
    "for run = 1, runs do\n"
    "   y = fnn.no_grad(function() return model(x) end)\n"
    "   local n = y:numel()\n"
    "   if n > cap then error(('output %s has more than %d elements'):format(y:shape_str(), cap), 0) end\n"
    "   if C.fnn_copy_to_floats(y, buf, n) ~= 0 then error(ffi.string(C.fnn_last_error()), 0) end\n"
    "   bytes = ffi.string(buf, n * 4)\n"
    "   if run == 1 then first, equal = bytes, 1 elseif bytes == first then equal = equal + 1 end\n"
    "end\n"
    "return y:numel(), y:shape_str(), equal\n"
    "end\n";

/* Opens a state ready for `require 'fastnn'`; NULL and a message in err on failure. */
static lua_State *open_state(char *err, size_t len) {
    lua_State *L = luaL_newstate();
    if (!L) { snprintf(err, len, "cannot create a lua_State"); return NULL; }
    luaL_openlibs(L);
    if (fastnn_lua_open(L) != 0) {
        snprintf(err, len, "fastnn_lua_open failed");
        lua_close(L);
        return NULL;
    }
    return L;
}

/* The message on top of L into err. */
static void take_error(lua_State *L, char *err, size_t len) {
    const char *msg = lua_tostring(L, -1);
    snprintf(err, len, "%s", msg ? msg : "(error object is not a string)");
}

static void *run_job(void *arg) {
    job *j = (job *)arg;
    lua_State *L = open_state(j->error, sizeof j->error);
    if (!L) {
        if (j->start) pthread_barrier_wait(j->start);   /* the others must not wait for us */
        return NULL;
    }
    int ready = 0;
    if (luaL_loadbuffer(L, infer_lua, strlen(infer_lua), "=inference") != 0) {
        take_error(L, j->error, sizeof j->error);
    } else {
        const weights *w = j->w;
        lua_createtable(L, w->n, 0);
        lua_createtable(L, w->n, 0);
        for (int i = 0; i < w->n; i++) {
            lua_pushstring(L, w->names[i]);
            lua_rawseti(L, -3, i + 1);
            lua_pushlightuserdata(L, (void *)&w->t[i]);   /* read only: adopt takes a reference */
            lua_rawseti(L, -2, i + 1);
        }
        lua_pushlightuserdata(L, (void *)(uintptr_t)fnn_detach);
        lua_pushlightuserdata(L, j->out);
        lua_pushinteger(L, MAX_OUT);
        lua_pushlightuserdata(L, j->seen);
        lua_pushinteger(L, RUNS);
        if (lua_pcall(L, 7, 1, 0) != 0) take_error(L, j->error, sizeof j->error);
        else ready = 1;
    }
    if (j->start) pthread_barrier_wait(j->start);
    if (ready) {
        if (lua_pcall(L, 0, 3, 0) != 0) {
            take_error(L, j->error, sizeof j->error);
        } else {
            j->out_n = (int64_t)lua_tonumber(L, -3);
            snprintf(j->shape, sizeof j->shape, "%s", lua_tostring(L, -2));
            j->runs_equal = (int)lua_tointeger(L, -1);
            j->ok = 1;
        }
    }
    lua_close(L);        /* finalizers drop this state's references to the shared weights */
    fnn_empty_cache();   /* this thread's small-buffer lists die with it: hand them back now */
    return NULL;
}

/* Trains and saves the demo model to path. */
static int train(const char *path) {
    char err[1024];
    lua_State *L = open_state(err, sizeof err);
    if (!L) { fprintf(stderr, "embed_host: %s\n", err); return -1; }
    int rc = luaL_loadbuffer(L, train_lua, strlen(train_lua), "=train");
    if (rc == 0) {
        lua_pushstring(L, path);
        rc = lua_pcall(L, 1, 2, 0);
    }
    if (rc != 0) {
        take_error(L, err, sizeof err);
        fprintf(stderr, "embed_host: training failed: %s\n", err);
    } else {
        printf("embed_host: trained a 16-32-4 MLP for 60 steps (loss %.4f -> %.4f), saved %s\n",
               lua_tonumber(L, -2), lua_tonumber(L, -1), path);
    }
    lua_close(L);
    return rc == 0 ? 0 : -1;
}

static void release(weights *w) {
    for (int i = 0; i < w->n; i++) {
        fnn_tensor_clear(&w->t[i]);
        free(w->names[i]);
    }
    w->n = 0;
}

/* Loads every tensor of the checkpoint at path into w, once. */
static int load(weights *w, const char *path) {
    fnn_safetensors *f = NULL;
    w->n = 0;
    if (fnn_safetensors_open(&f, path) != 0) {
        fprintf(stderr, "embed_host: %s\n", fnn_last_error());
        return -1;
    }
    int n = fnn_safetensors_count(f), rc = 0;
    if (n > MAX_WEIGHTS) {
        fprintf(stderr, "embed_host: %s has %d tensors, at most %d supported\n", path, n, MAX_WEIGHTS);
        rc = -1;
    }
    for (int i = 0; i < n && rc == 0; i++) {
        fnn_tensor_init(&w->t[i]);
        w->names[i] = strdup(fnn_safetensors_name(f, i));
        w->n = i + 1;
        if (!w->names[i] || fnn_safetensors_read(&w->t[i], f, i) != 0) {
            fprintf(stderr, "embed_host: %s\n", w->names[i] ? fnn_last_error() : "out of memory");
            rc = -1;
        } else if (w->t[i].dtype != FNN_DTYPE_FLOAT32) {
            fprintf(stderr, "embed_host: %s: tensor %s is %s, expected float32 weights\n", path,
                    w->names[i], fnn_dtype_name(w->t[i].dtype));
            rc = -1;
        }
    }
    fnn_safetensors_close(f);
    if (rc != 0) release(w);
    return rc;
}

/* 0 when job j agrees with the reference ref in every respect; prints its line either way. */
static int check(const job *j, const job *ref, const weights *w) {
    char who[32];
    snprintf(who, sizeof who, j->id ? "thread %d" : "single-thread", j->id);
    if (!j->ok) {
        printf("%s: error: %s\n", who, j->error);
        return 1;
    }
    /* a tensor of at most 16 floats keeps its data inline in its header, and adopting copies the
     * header: only storages are shared (and there the addresses must be the host's) */
    int shared = 1, storages = 0;
    for (int i = 0; i < w->n; i++) {
        if (!fnn_tensor_needs_clear(&w->t[i])) continue;
        storages++;
        shared &= j->seen[i] == (uintptr_t)fnn_tensor_data(&w->t[i]);
    }
    int same = j->out_n == ref->out_n && memcmp(j->out, ref->out, (size_t)j->out_n * sizeof(float)) == 0;
    int steady = j->runs_equal == RUNS;
    printf("%s: %d runs, output %s %s, runs %s, %d weight storages %s (%s at %#lx)\n", who, RUNS,
           j->shape, same ? "bit-equal to the single-thread run" : "DIFFERS from the single-thread run",
           steady ? "identical" : "DIFFER", storages, shared ? "shared" : "COPIED", w->names[0],
           (unsigned long)j->seen[0]);
    return !(same && steady && shared);
}

int main(int argc, char **argv) {
    if (argc > 2) {
        fprintf(stderr, "usage: %s [model.fdl]   (no file: train one first)\n", argv[0]);
        return 2;
    }
    /* one thread inside the core and OpenBLAS: the 4 host threads are the parallelism, and no
     * sum's order can depend on a thread count. Set before any state runs (a global setting). */
    fnn_set_num_threads(1);

    char dir[] = "/tmp/embed_host.XXXXXX", made[sizeof dir + 16] = "";
    const char *path = argc == 2 ? argv[1] : NULL;
    if (!path) {
        if (!mkdtemp(dir)) { perror("embed_host: mkdtemp"); return 1; }
        snprintf(made, sizeof made, "%s/model.fdl", dir);
        path = made;
        if (train(path) != 0) { rmdir(dir); return 1; }
    }

    int64_t live_before = fnn_live_bytes(FNN_DEVICE_CPU);
    static weights w;
    int failures = load(&w, path) != 0;
    if (made[0]) { unlink(made); rmdir(dir); }
    if (failures) return 1;
    int64_t numel = 0;
    for (int i = 0; i < w.n; i++) numel += fnn_tensor_numel(&w.t[i]);
    printf("embed_host: loaded %d tensors (%lld floats) from %s once\n", w.n, (long long)numel, path);

    static job ref, jobs[THREADS];
    ref.w = &w;
    run_job(&ref);
    if (check(&ref, &ref, &w) != 0) { release(&w); return 1; }
    double sum = 0;
    for (int64_t k = 0; k < ref.out_n; k++) sum += ref.out[k];
    printf("embed_host: single-thread output %s sum %.9g row 1:", ref.shape, sum);
    int64_t cols = ref.out_n / 8;
    for (int64_t k = 0; k < cols; k++) printf(" %.9g", ref.out[k]);
    printf("\n");

    pthread_t threads[THREADS];
    pthread_barrier_t start;
    pthread_barrier_init(&start, NULL, THREADS);
    for (int t = 0; t < THREADS; t++) {
        jobs[t].id = t + 1;
        jobs[t].w = &w;
        jobs[t].start = &start;
        int rc = pthread_create(&threads[t], NULL, run_job, &jobs[t]);
        if (rc != 0) {   /* the threads already started would wait at the barrier for ever */
            fprintf(stderr, "embed_host: pthread_create: %s\n", strerror(rc));
            return 1;
        }
    }
    for (int t = 0; t < THREADS; t++) pthread_join(threads[t], NULL);
    pthread_barrier_destroy(&start);
    for (int t = 0; t < THREADS; t++) failures += check(&jobs[t], &ref, &w);

    release(&w);
    fnn_empty_cache();
    int64_t live_after = fnn_live_bytes(FNN_DEVICE_CPU);
    if (live_after != live_before) {
        printf("embed_host: %lld bytes still live after every state closed and the host released "
               "the weights (refcount leak)\n", (long long)(live_after - live_before));
        failures++;
    }
    if (failures) {
        printf("embed_host: FAILED (%d problems)\n", failures);
        return 1;
    }
    printf("embed_host: %d threads agree\n", THREADS);
    return 0;
}
