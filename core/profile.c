/* profile.c: per-thread op timing behind fnn.profile (lua/fastnn/profile.lua).
 *
 * Forward: the Lua bindings bracket every op's C call, new() calling fnn_profile_begin and
 * done() fnn_profile_mark. Brackets nest (a binding may call p:tensor() or make a scalar
 * between its new() and its C call), so they form a stack: the first op named by fnn_set_op
 * while a bracket is on top owns it (every op names itself when it checks its inputs, before
 * any op it calls), and a bracket's time excludes the brackets inside it. An op that fails
 * (fnn_set_error) ends its bracket there, for bindings that raise without reaching done().
 * Backward: the engine times each node's rule with the accumulation of its input gradients.
 * Everything is per host thread (a thread profiles what it runs) and off unless started: the
 * cost when off is one load of a global counter in fnn_set_op and in the engine's node loop. On
 * a GPU the times are those of the launches, which do not wait for the kernels. */
#include "internal.h"
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { PROFILE_MAX = 512 };
typedef struct {
    const char *name;
    int kind;   /* 0 an op's forward call, 1 a backward rule, 2 an optimizer's update */
    int64_t calls, ns;
} prof_entry;
enum { PROFILE_DEPTH = 16 };
typedef struct {
    const char *name;        /* the op that owns the bracket, NULL until one is named */
    int64_t start, inner;    /* when it opened; the time of the brackets closed inside it */
    int64_t failed_at;       /* when its op failed (fnn_set_error), else 0 */
} prof_bracket;
typedef struct {
    bool on;
    int depth;               /* open brackets */
    int n, dropped;          /* entries in use; spans of ops past PROFILE_MAX names */
    prof_bracket open[PROFILE_DEPTH];
    prof_entry e[PROFILE_MAX];
} prof_state;

/* a pointer, not the 16 KB table itself: static TLS in a dlopen'ed library is scarce */
static _Thread_local prof_state *prof;
/* how many threads are profiling: the hot paths test this plain global first and reach the
 * thread-local state (a __tls_get_addr call from a shared library) only when it is not zero */
atomic_int fnn_profilers;

bool fnn_profiling(void) { return prof && prof->on; }

int64_t fnn_profile_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

void fnn_profile_add(const char *name, int kind, int64_t ns) {
    prof_state *p = prof;
    if (!p || !p->on) return;
    if (!name) name = "(unnamed)";
    for (int i = 0; i < p->n; i++) {
        prof_entry *e = &p->e[i];
        if (e->kind == kind && (e->name == name || strcmp(e->name, name) == 0)) {
            e->calls++;
            e->ns += ns;
            return;
        }
    }
    if (p->n == PROFILE_MAX) { p->dropped++; return; }
    p->e[p->n++] = (prof_entry){name, kind, 1, ns};
}

int fnn_profile_start(void) {
    FNN_CHECK(!fnn_profiling(), FNN_STATUS_ARG, "profile: this thread is already profiling (profiles do not nest)");
    if (!prof) {
        prof = malloc(sizeof *prof);
        FNN_CHECK(prof != NULL, FNN_STATUS_OOM, "profile: out of memory");
    }
    memset(prof, 0, sizeof *prof);
    prof->on = true;
    atomic_fetch_add_explicit(&fnn_profilers, 1, memory_order_relaxed);
    return FNN_STATUS_OK;
}

int fnn_profile_stop(void) {
    if (!prof) return 0;
    if (prof->on) atomic_fetch_sub_explicit(&fnn_profilers, 1, memory_order_relaxed);
    prof->on = false;
    prof->depth = 0;
    return prof->n;
}

int fnn_profile_entry(int i, const char **name, int *kind, int64_t *calls, int64_t *ns) {
    FNN_CHECK(prof && i >= 0 && i < prof->n, FNN_STATUS_ARG, "profile: no entry %d", i);
    const prof_entry *e = &prof->e[i];
    *name = e->name;
    *kind = e->kind;
    *calls = e->calls;
    *ns = e->ns;
    return FNN_STATUS_OK;
}

int fnn_profile_dropped(void) { return prof ? prof->dropped : 0; }

void fnn_profile_release(void) {
    if (prof && prof->on) return;   /* still profiling: keep it */
    free(prof);
    prof = NULL;
}

/* close the top bracket at `end`: its time, less the brackets inside it, to its op */
static void close_top(prof_state *p, int kind, int64_t end) {
    prof_bracket b = p->open[--p->depth];
    int64_t span = end - b.start;
    if (p->depth > 0) p->open[p->depth - 1].inner += span;
    /* an unnamed bracket (a second output of the same op, a header filled outside an op) counts
     * nothing: its op was counted by the bracket that named it */
    if (b.name) fnn_profile_add(b.name, kind, span - b.inner);
}

void fnn_profile_begin(void) {
    prof_state *p = prof;
    if (!p || !p->on) return;
    /* an op that failed and whose binding raised without done() left its bracket open: close it
     * at the failure (it ran, and counts) */
    while (p->depth > 0 && p->open[p->depth - 1].failed_at) close_top(p, 0, p->open[p->depth - 1].failed_at);
    /* a binding that raised before its C call leaves an unnamed bracket: a full stack holds only
     * such leftovers, which are dropped */
    if (p->depth == PROFILE_DEPTH) p->depth = 0;
    p->open[p->depth++] = (prof_bracket){NULL, fnn_profile_now(), 0, 0};
}

/* from fnn_set_op: the first op named while a bracket is on top owns it */
void fnn_profile_op_named(const char *op) {
    prof_state *p = prof;
    if (p && p->depth > 0 && !p->open[p->depth - 1].name) p->open[p->depth - 1].name = op;
}

void fnn_profile_failed(void) {
    prof_state *p = prof;
    if (p && p->on && p->depth > 0 && p->open[p->depth - 1].name && !p->open[p->depth - 1].failed_at)
        p->open[p->depth - 1].failed_at = fnn_profile_now();
}

void fnn_profile_mark(int kind) {
    prof_state *p = prof;
    if (!p || !p->on || p->depth == 0) return;
    /* a failed op whose binding went on (a retry after an out-of-memory error) ends now */
    close_top(p, kind, fnn_profile_now());
}
