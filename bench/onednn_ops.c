/* onednn_ops: oneDNN 2.x primitives (C API) timed on the op families of bench/onednn_ops.lua, the
 * same shapes, so fastnn's own CPU kernels can be held against them (bench/onednn_ops.sh).
 *
 * Every tensor is in the plain layout fastnn's users hold (row-major, NCHW; LSTM batch-first
 * [N,T,C] with PyTorch's weight layout [4H, in], gates i f g o), handed to oneDNN over our own
 * buffers. Primitive creation is outside the timing (cached, as PyTorch's ideep does). Each pass
 * is timed as the median of ITERS runs (and of at least MIN_S seconds of runs) after WARMUP runs,
 * in ms, with the stream waited on; the fastest run is printed beside it.
 * Passes: fwd (forward training), bwd (backward: data and scale/shift or weight gradients),
 * fwdbwd (both, back to back). LSTM: the weights change every training step, so each step
 * reorders W_ih and W_hh from the user layout into the layout the forward primitive picked
 * (and into the backward's, when it differs), zeroes the weight gradients (oneDNN accumulates
 * them) and reorders them back to the user layout; all of that is inside the timed LSTM passes.
 * The bias is b_ih + b_hh summed once, outside the timing (1024 adds).
 *
 *   cc -O2 -std=c11 -Wall -Wextra bench/onednn_ops.c -o build/bench/onednn_ops -ldnnl
 *   OMP_NUM_THREADS=2 build/bench/onednn_ops [ITERS]
 *
 * Output: `RESULT onednn_<op>_<pass> ms=<median> min=<fastest>`, and `# impl onednn_<op>_<pass>: <oneDNN impl>`.
 * A primitive that cannot be made prints `ERROR onednn_<op>: ...` and the other ops still run. */
#define _POSIX_C_SOURCE 200809L
#include <oneapi/dnnl/dnnl.h>
#include <oneapi/dnnl/dnnl_debug.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { WARMUP = 3, MAXOBJ = 64, MAXARGS = 16, MAXSTEPS = 8 };
static const double MIN_S = 0.5;
static int iters = 30;
static dnnl_engine_t eng;
static dnnl_stream_t strm;
static const char *op_name = "";

/* everything one op creates, released when it is done (or failed) */
static dnnl_primitive_desc_t pds[MAXOBJ];
static dnnl_primitive_t prims[MAXOBJ];
static dnnl_memory_t mems[MAXOBJ];
static void *bufs[MAXOBJ];
static int npd, nprim, nmem, nbuf;

static void release_all(void) {
    while (nprim) dnnl_primitive_destroy(prims[--nprim]);
    while (npd) dnnl_primitive_desc_destroy(pds[--npd]);
    while (nmem) dnnl_memory_destroy(mems[--nmem]);
    while (nbuf) free(bufs[--nbuf]);
}

#define CK(call)                                                                        \
    do {                                                                                \
        dnnl_status_t s_ = (call);                                                      \
        if (s_ != dnnl_success) {                                                       \
            fprintf(stderr, "ERROR onednn_%s: %s failed: %s\n", op_name, #call,          \
                    dnnl_status2str(s_));                                               \
            printf("ERROR onednn_%s: %s\n", op_name, dnnl_status2str(s_));              \
            return -1;                                                                  \
        }                                                                               \
    } while (0)
#define TRY(x) do { if ((x) != 0) return -1; } while (0)

static unsigned rng = 12345u;
static float frand(void) { rng = rng * 1664525u + 1013904223u; return (float)(rng >> 8) / 8388608.0f - 1.0f; }

static int mkmd(dnnl_memory_desc_t *md, int nd, const int64_t *dims, dnnl_format_tag_t tag) {
    CK(dnnl_memory_desc_init_by_tag(md, nd, dims, dnnl_f32, tag));
    return 0;
}

/* a memory of layout md over a fresh buffer of values in [-scale, scale] */
static int mkmem(dnnl_memory_t *m, const dnnl_memory_desc_t *md, float scale) {
    size_t bytes = dnnl_memory_desc_get_size(md);
    float *p = malloc(bytes ? bytes : 4);
    if (!p || nbuf == MAXOBJ || nmem == MAXOBJ) { printf("ERROR onednn_%s: out of memory\n", op_name); free(p); return -1; }
    bufs[nbuf++] = p;
    for (size_t i = 0; i < bytes / sizeof(float); i++) p[i] = scale * frand();
    CK(dnnl_memory_create(m, md, eng, p));
    mems[nmem++] = *m;
    return 0;
}

static void *handle(dnnl_memory_t m) { void *p = NULL; dnnl_memory_get_data_handle(m, &p); return p; }

/* primitive from an op descriptor (hint: the forward pd of a backward primitive) */
static int mkprim(dnnl_primitive_desc_t *pd, dnnl_primitive_t *p, const void *desc, const_dnnl_primitive_desc_t hint) {
    CK(dnnl_primitive_desc_create(pd, desc, NULL, eng, hint));
    pds[npd++] = *pd;
    CK(dnnl_primitive_create(p, *pd));
    prims[nprim++] = *p;
    return 0;
}

static int mkreorder(dnnl_primitive_t *p, const dnnl_memory_desc_t *from, const dnnl_memory_desc_t *to) {
    dnnl_primitive_desc_t pd;
    CK(dnnl_reorder_primitive_desc_create(&pd, from, eng, to, eng, NULL));
    pds[npd++] = pd;
    CK(dnnl_primitive_create(p, pd));
    prims[nprim++] = *p;
    return 0;
}

static const char *impl(const_dnnl_primitive_desc_t pd) {
    const char *s = "?";
    dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &s);
    return s;
}

static const dnnl_memory_desc_t *qmd(const_dnnl_primitive_desc_t pd, dnnl_query_t what, int i) {
    return dnnl_primitive_desc_query_md(pd, what, i);
}

/* one timed step: primitives run in order; `zero` regions cleared first */
typedef struct { dnnl_primitive_t p; int n; dnnl_exec_arg_t a[MAXARGS]; } exec_t;
typedef struct { exec_t e[MAXSTEPS]; int n; void *zero[4]; size_t zbytes[4]; int nz; } step_t;

static void add(step_t *s, dnnl_primitive_t p, int n, const dnnl_exec_arg_t *a) {
    exec_t *e = &s->e[s->n++];
    e->p = p; e->n = n;
    memcpy(e->a, a, (size_t)n * sizeof *a);
}

static int run(const step_t *s) {
    for (int z = 0; z < s->nz; z++) memset(s->zero[z], 0, s->zbytes[z]);
    for (int i = 0; i < s->n; i++) CK(dnnl_primitive_execute(s->e[i].p, strm, s->e[i].n, s->e[i].a));
    CK(dnnl_stream_wait(strm));
    return 0;
}

static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + 1e-9 * t.tv_nsec; }
static int cmp(const void *a, const void *b) { double x = *(const double *)a, y = *(const double *)b; return (x > y) - (x < y); }

/* median (and fastest) ms of at least `iters` runs of s1 then s2 (s2 may be NULL), and of at
 * least MIN_S seconds of them (1000 runs at most) */
static int timeit(const char *pass, const step_t *s1, const step_t *s2) {
    enum { MAXT = 1000 };
    static double t[MAXT];
    int n = 0;
    for (int i = 0; i < WARMUP; i++) { TRY(run(s1)); if (s2) TRY(run(s2)); }
    double start = now();
    while (n < MAXT && (n < iters || now() - start < MIN_S)) {
        double t0 = now();
        TRY(run(s1));
        if (s2) TRY(run(s2));
        t[n++] = (now() - t0) * 1e3;
    }
    qsort(t, (size_t)n, sizeof *t, cmp);
    double med = n % 2 ? t[n / 2] : 0.5 * (t[n / 2 - 1] + t[n / 2]);
    printf("RESULT onednn_%s_%s ms=%.4f min=%.4f\n", op_name, pass, med, t[0]);
    fflush(stdout);
    return 0;
}

/* forward alone, backward alone (after one forward), then both */
static int time_passes(const step_t *f, const step_t *b, const_dnnl_primitive_desc_t fpd, const_dnnl_primitive_desc_t bpd) {
    printf("# impl onednn_%s_fwd: %s\n", op_name, impl(fpd));
    TRY(timeit("fwd", f, NULL));
    if (!b) return 0;
    printf("# impl onednn_%s_bwd: %s\n", op_name, impl(bpd));
    TRY(run(f));
    TRY(timeit("bwd", b, NULL));
    return timeit("fwdbwd", f, b);
}

#define ARG(k, m) ((dnnl_exec_arg_t){(k), (m)})

/* GELU (erf) on [2048, 512] */
static int op_gelu(void) {
    int64_t d[2] = {2048, 512};
    dnnl_memory_desc_t md;
    dnnl_eltwise_desc_t fd, bd;
    dnnl_primitive_desc_t fpd, bpd;
    dnnl_primitive_t fp, bp;
    dnnl_memory_t x, y, gy, gx;
    TRY(mkmd(&md, 2, d, dnnl_ab));
    CK(dnnl_eltwise_forward_desc_init(&fd, dnnl_forward_training, dnnl_eltwise_gelu_erf, &md, 0.f, 0.f));
    TRY(mkprim(&fpd, &fp, &fd, NULL));
    CK(dnnl_eltwise_backward_desc_init(&bd, dnnl_eltwise_gelu_erf, &md, &md, 0.f, 0.f));
    TRY(mkprim(&bpd, &bp, &bd, fpd));
    TRY(mkmem(&x, &md, 3.f)); TRY(mkmem(&y, &md, 0.f)); TRY(mkmem(&gy, &md, 1.f)); TRY(mkmem(&gx, &md, 0.f));
    step_t f = {0}, b = {0};
    add(&f, fp, 2, (dnnl_exec_arg_t[]){ARG(DNNL_ARG_SRC, x), ARG(DNNL_ARG_DST, y)});
    add(&b, bp, 3, (dnnl_exec_arg_t[]){ARG(DNNL_ARG_SRC, x), ARG(DNNL_ARG_DIFF_DST, gy), ARG(DNNL_ARG_DIFF_SRC, gx)});
    return time_passes(&f, &b, fpd, bpd);
}

/* layer norm (LayerNorm) or batch norm (BatchNorm2d), training, with scale and shift over c channels */
static int op_norm(int layer, int nd, const int64_t *dims, dnnl_format_tag_t tag, int64_t c) {
    dnnl_memory_desc_t md, smd, cmd;
    dnnl_primitive_desc_t fpd, bpd;
    dnnl_primitive_t fp, bp;
    dnnl_memory_t x, y, gy, gx, sc, sh, gsc, gsh, mean, var, ws = NULL;
    unsigned flags = dnnl_use_scale | dnnl_use_shift;
    int64_t rows = dims[0];
    TRY(mkmd(&md, nd, dims, tag));
    TRY(mkmd(&cmd, 1, &c, dnnl_a));
    TRY(mkmd(&smd, 1, layer ? &rows : &c, dnnl_a));
    if (layer) {
        dnnl_layer_normalization_desc_t fd, bd;
        CK(dnnl_layer_normalization_forward_desc_init(&fd, dnnl_forward_training, &md, &smd, 1e-5f, flags));
        TRY(mkprim(&fpd, &fp, &fd, NULL));
        CK(dnnl_layer_normalization_backward_desc_init(&bd, dnnl_backward, &md, &md, &smd, 1e-5f, flags));
        TRY(mkprim(&bpd, &bp, &bd, fpd));
    } else {
        dnnl_batch_normalization_desc_t fd, bd;
        CK(dnnl_batch_normalization_forward_desc_init(&fd, dnnl_forward_training, &md, 1e-5f, flags));
        TRY(mkprim(&fpd, &fp, &fd, NULL));
        CK(dnnl_batch_normalization_backward_desc_init(&bd, dnnl_backward, &md, &md, 1e-5f, flags));
        TRY(mkprim(&bpd, &bp, &bd, fpd));
    }
    TRY(mkmem(&x, &md, 1.f)); TRY(mkmem(&y, &md, 0.f)); TRY(mkmem(&gy, &md, 1.f)); TRY(mkmem(&gx, &md, 0.f));
    TRY(mkmem(&sc, &cmd, 1.f)); TRY(mkmem(&sh, &cmd, 1.f)); TRY(mkmem(&gsc, &cmd, 0.f)); TRY(mkmem(&gsh, &cmd, 0.f));
    TRY(mkmem(&mean, &smd, 0.f)); TRY(mkmem(&var, &smd, 0.f));
    const dnnl_memory_desc_t *wmd = qmd(fpd, dnnl_query_workspace_md, 0);
    if (wmd && dnnl_memory_desc_get_size(wmd) > 0) TRY(mkmem(&ws, wmd, 0.f));
    step_t f = {0}, b = {0};
    dnnl_exec_arg_t fa[7] = {ARG(DNNL_ARG_SRC, x), ARG(DNNL_ARG_DST, y), ARG(DNNL_ARG_SCALE, sc),
                             ARG(DNNL_ARG_SHIFT, sh), ARG(DNNL_ARG_MEAN, mean), ARG(DNNL_ARG_VARIANCE, var),
                             ARG(DNNL_ARG_WORKSPACE, ws)};
    dnnl_exec_arg_t ba[10] = {ARG(DNNL_ARG_SRC, x), ARG(DNNL_ARG_DIFF_DST, gy), ARG(DNNL_ARG_SCALE, sc),
                              ARG(DNNL_ARG_SHIFT, sh), ARG(DNNL_ARG_MEAN, mean), ARG(DNNL_ARG_VARIANCE, var),
                              ARG(DNNL_ARG_DIFF_SRC, gx), ARG(DNNL_ARG_DIFF_SCALE, gsc),
                              ARG(DNNL_ARG_DIFF_SHIFT, gsh), ARG(DNNL_ARG_WORKSPACE, ws)};
    add(&f, fp, ws ? 7 : 6, fa);
    add(&b, bp, ws ? 10 : 9, ba);
    return time_passes(&f, &b, fpd, bpd);
}

/* softmax over the last dim of [8192, 64] */
static int op_softmax(void) {
    int64_t d[2] = {8192, 64};
    dnnl_memory_desc_t md;
    dnnl_softmax_desc_t fd, bd;
    dnnl_primitive_desc_t fpd, bpd;
    dnnl_primitive_t fp, bp;
    dnnl_memory_t x, y, gy, gx;
    TRY(mkmd(&md, 2, d, dnnl_ab));
    CK(dnnl_softmax_forward_desc_init(&fd, dnnl_forward_training, &md, 1));
    TRY(mkprim(&fpd, &fp, &fd, NULL));
    CK(dnnl_softmax_backward_desc_init(&bd, &md, &md, 1));
    TRY(mkprim(&bpd, &bp, &bd, fpd));
    TRY(mkmem(&x, &md, 3.f)); TRY(mkmem(&y, &md, 0.f)); TRY(mkmem(&gy, &md, 1.f)); TRY(mkmem(&gx, &md, 0.f));
    step_t f = {0}, b = {0};
    add(&f, fp, 2, (dnnl_exec_arg_t[]){ARG(DNNL_ARG_SRC, x), ARG(DNNL_ARG_DST, y)});
    add(&b, bp, 3, (dnnl_exec_arg_t[]){ARG(DNNL_ARG_DST, y), ARG(DNNL_ARG_DIFF_DST, gy), ARG(DNNL_ARG_DIFF_SRC, gx)});
    return time_passes(&f, &b, fpd, bpd);
}

/* max pooling 2x2 stride 2 on NCHW [32, 64, 32, 32], training (the argmax kept in the workspace) */
static int op_maxpool(void) {
    int64_t sd[4] = {32, 64, 32, 32}, dd[4] = {32, 64, 16, 16};
    dnnl_dims_t k = {2, 2}, st = {2, 2}, pad = {0, 0};
    dnnl_memory_desc_t smd, dmd;
    dnnl_pooling_desc_t fd, bd;
    dnnl_primitive_desc_t fpd, bpd;
    dnnl_primitive_t fp, bp;
    dnnl_memory_t x, y, gy, gx, ws;
    TRY(mkmd(&smd, 4, sd, dnnl_nchw));
    TRY(mkmd(&dmd, 4, dd, dnnl_nchw));
    CK(dnnl_pooling_forward_desc_init(&fd, dnnl_forward_training, dnnl_pooling_max, &smd, &dmd, st, k, pad, pad));
    TRY(mkprim(&fpd, &fp, &fd, NULL));
    CK(dnnl_pooling_backward_desc_init(&bd, dnnl_pooling_max, &smd, &dmd, st, k, pad, pad));
    TRY(mkprim(&bpd, &bp, &bd, fpd));
    TRY(mkmem(&x, &smd, 1.f)); TRY(mkmem(&y, &dmd, 0.f)); TRY(mkmem(&gy, &dmd, 1.f)); TRY(mkmem(&gx, &smd, 0.f));
    TRY(mkmem(&ws, qmd(fpd, dnnl_query_workspace_md, 0), 0.f));
    step_t f = {0}, b = {0};
    add(&f, fp, 3, (dnnl_exec_arg_t[]){ARG(DNNL_ARG_SRC, x), ARG(DNNL_ARG_DST, y), ARG(DNNL_ARG_WORKSPACE, ws)});
    add(&b, bp, 3, (dnnl_exec_arg_t[]){ARG(DNNL_ARG_DIFF_DST, gy), ARG(DNNL_ARG_WORKSPACE, ws), ARG(DNNL_ARG_DIFF_SRC, gx)});
    return time_passes(&f, &b, fpd, bpd);
}

/* reorder `user` into a new memory of layout `want` (NULL: use `user` as it is) and add that to s */
static int to_layout(step_t *s, dnnl_memory_t user, const dnnl_memory_desc_t *umd, const dnnl_memory_desc_t *want,
                     dnnl_memory_t *out) {
    dnnl_primitive_t r;
    if (dnnl_memory_desc_equal(umd, want)) { *out = user; return 0; }
    TRY(mkmem(out, want, 0.f));
    TRY(mkreorder(&r, umd, want));
    add(s, r, 2, (dnnl_exec_arg_t[]){ARG(DNNL_ARG_FROM, user), ARG(DNNL_ARG_TO, *out)});
    return 0;
}

/* LSTM, one layer, batch-first x [N=32, T=50, I=64], hidden 256, h0 = c0 = 0, output the whole
 * sequence [N, T, H]; user weights W_ih [4H, I], W_hh [4H, H] (oneDNN's ldgoi) */
static int op_lstm(void) {
    const int64_t N = 32, T = 50, I = 64, H = 256;
    int64_t xd[3] = {T, N, I}, yd[3] = {T, N, H}, wld[5] = {1, 1, I, 4, H}, wid[5] = {1, 1, H, 4, H}, bd[4] = {1, 1, 4, H};
    dnnl_memory_desc_t xmd, ymd, wl_user, wi_user, bmd, wl_any, wi_any;
    dnnl_rnn_desc_t fd, bwd;
    dnnl_primitive_desc_t fpd, bpd;
    dnnl_primitive_t fp, bp;
    dnnl_memory_t x, y, wl, wi, bias, gy, gx, gbias, ws, wl_f, wi_f, wl_b, wi_b, gwl, gwi, gwl_user, gwi_user;
    const dnnl_rnn_direction_t dir = dnnl_unidirectional_left2right;
    TRY(mkmd(&xmd, 3, xd, dnnl_ntc)); TRY(mkmd(&ymd, 3, yd, dnnl_ntc));
    TRY(mkmd(&wl_user, 5, wld, dnnl_ldgoi)); TRY(mkmd(&wi_user, 5, wid, dnnl_ldgoi));
    TRY(mkmd(&wl_any, 5, wld, dnnl_format_tag_any)); TRY(mkmd(&wi_any, 5, wid, dnnl_format_tag_any));
    TRY(mkmd(&bmd, 4, bd, dnnl_ldgo));
    CK(dnnl_lstm_forward_desc_init(&fd, dnnl_forward_training, dir, &xmd, NULL, NULL, &wl_any, &wi_any, &bmd,
                                   &ymd, NULL, NULL, 0));
    TRY(mkprim(&fpd, &fp, &fd, NULL));
    TRY(mkmem(&x, &xmd, 1.f)); TRY(mkmem(&y, &ymd, 0.f)); TRY(mkmem(&bias, &bmd, 0.0625f));
    TRY(mkmem(&wl, &wl_user, 0.0625f)); TRY(mkmem(&wi, &wi_user, 0.0625f));
    TRY(mkmem(&ws, qmd(fpd, dnnl_query_workspace_md, 0), 0.f));
    step_t f = {0}, b = {0};
    TRY(to_layout(&f, wl, &wl_user, qmd(fpd, dnnl_query_weights_md, 0), &wl_f));
    TRY(to_layout(&f, wi, &wi_user, qmd(fpd, dnnl_query_weights_md, 1), &wi_f));
    add(&f, fp, 6, (dnnl_exec_arg_t[]){ARG(DNNL_ARG_SRC_LAYER, x), ARG(DNNL_ARG_WEIGHTS_LAYER, wl_f),
                                       ARG(DNNL_ARG_WEIGHTS_ITER, wi_f), ARG(DNNL_ARG_BIAS, bias),
                                       ARG(DNNL_ARG_DST_LAYER, y), ARG(DNNL_ARG_WORKSPACE, ws)});
    printf("# onednn_lstm: forward weights %s -> %s (reordered every step)\n", dnnl_fmt_tag2str(dnnl_ldgoi),
           dnnl_memory_desc_equal(&wl_user, qmd(fpd, dnnl_query_weights_md, 0)) ? "same layout" : "the primitive's own layout");

    dnnl_status_t s = dnnl_lstm_backward_desc_init(&bwd, dnnl_backward, dir, &xmd, NULL, NULL, &wl_any, &wi_any, &bmd,
                                                   &ymd, NULL, NULL, &xmd, NULL, NULL, &wl_any, &wi_any, &bmd,
                                                   &ymd, NULL, NULL, 0);
    if (s == dnnl_success) s = dnnl_primitive_desc_create(&bpd, &bwd, NULL, eng, fpd);
    if (s != dnnl_success) {
        printf("ERROR onednn_lstm: backward primitive: %s (forward only)\n", dnnl_status2str(s));
        return time_passes(&f, NULL, fpd, NULL);
    }
    pds[npd++] = bpd;
    CK(dnnl_primitive_create(&bp, bpd));
    prims[nprim++] = bp;
    TRY(mkmem(&gy, &ymd, 1.f)); TRY(mkmem(&gx, &xmd, 0.f)); TRY(mkmem(&gbias, &bmd, 0.f));
    TRY(mkmem(&gwl_user, &wl_user, 0.f)); TRY(mkmem(&gwi_user, &wi_user, 0.f));
    const dnnl_memory_desc_t *gwl_md = qmd(bpd, dnnl_query_diff_weights_md, 0), *gwi_md = qmd(bpd, dnnl_query_diff_weights_md, 1);
    int gwl_same = dnnl_memory_desc_equal(gwl_md, &wl_user), gwi_same = dnnl_memory_desc_equal(gwi_md, &wi_user);
    if (gwl_same) gwl = gwl_user; else TRY(mkmem(&gwl, gwl_md, 0.f));
    if (gwi_same) gwi = gwi_user; else TRY(mkmem(&gwi, gwi_md, 0.f));
    /* the backward wants the weights in its own layout too: from the user's (they changed since) */
    TRY(to_layout(&b, wl, &wl_user, qmd(bpd, dnnl_query_weights_md, 0), &wl_b));
    TRY(to_layout(&b, wi, &wi_user, qmd(bpd, dnnl_query_weights_md, 1), &wi_b));
    b.zero[0] = handle(gwl); b.zbytes[0] = dnnl_memory_desc_get_size(gwl_md);
    b.zero[1] = handle(gwi); b.zbytes[1] = dnnl_memory_desc_get_size(gwi_md);
    b.zero[2] = handle(gbias); b.zbytes[2] = dnnl_memory_desc_get_size(&bmd);
    b.nz = 3;
    add(&b, bp, 11, (dnnl_exec_arg_t[]){ARG(DNNL_ARG_SRC_LAYER, x), ARG(DNNL_ARG_WEIGHTS_LAYER, wl_b),
                                        ARG(DNNL_ARG_WEIGHTS_ITER, wi_b), ARG(DNNL_ARG_BIAS, bias),
                                        ARG(DNNL_ARG_DST_LAYER, y), ARG(DNNL_ARG_WORKSPACE, ws),
                                        ARG(DNNL_ARG_DIFF_DST_LAYER, gy), ARG(DNNL_ARG_DIFF_SRC_LAYER, gx),
                                        ARG(DNNL_ARG_DIFF_WEIGHTS_LAYER, gwl), ARG(DNNL_ARG_DIFF_WEIGHTS_ITER, gwi),
                                        ARG(DNNL_ARG_DIFF_BIAS, gbias)});   /* no iter states: h0 = c0 = 0 */
    dnnl_primitive_t r;
    if (!gwl_same) {
        TRY(mkreorder(&r, gwl_md, &wl_user));
        add(&b, r, 2, (dnnl_exec_arg_t[]){ARG(DNNL_ARG_FROM, gwl), ARG(DNNL_ARG_TO, gwl_user)});
    }
    if (!gwi_same) {
        TRY(mkreorder(&r, gwi_md, &wi_user));
        add(&b, r, 2, (dnnl_exec_arg_t[]){ARG(DNNL_ARG_FROM, gwi), ARG(DNNL_ARG_TO, gwi_user)});
    }
    printf("# onednn_lstm: backward weights %s, weight gradients %s\n",
           dnnl_memory_desc_equal(&wl_user, qmd(bpd, dnnl_query_weights_md, 0)) ? "in the user layout" : "reordered",
           gwl_same && gwi_same ? "in the user layout" : "reordered back to the user layout");
    return time_passes(&f, &b, fpd, bpd);
}

int main(int argc, char **argv) {
    if (argc > 1) iters = atoi(argv[1]);
    if (iters < 1) iters = 30;
    const dnnl_version_t *v = dnnl_version();
    const char *nt = getenv("OMP_NUM_THREADS"), *spin = getenv("GOMP_SPINCOUNT");
    printf("# onednn_ops: oneDNN %d.%d.%d, OMP_NUM_THREADS=%s GOMP_SPINCOUNT=%s, median of >= %d runs (>= %.1f s) after %d warm-up\n",
           v->major, v->minor, v->patch, nt ? nt : "(unset)", spin ? spin : "(unset)", iters, MIN_S, WARMUP);
    if (dnnl_engine_create(&eng, dnnl_cpu, 0) != dnnl_success || dnnl_stream_create(&strm, eng, dnnl_stream_default_flags) != dnnl_success) {
        printf("ERROR onednn: no CPU engine\n");
        return 1;
    }
    int64_t ln[2] = {2048, 128}, bn[4] = {64, 64, 32, 32};
    int failed = 0;
    op_name = "gelu";       failed |= op_gelu();                          release_all();
    op_name = "layer_norm"; failed |= op_norm(1, 2, ln, dnnl_ab, 128);    release_all();
    op_name = "softmax";    failed |= op_softmax();                       release_all();
    op_name = "batch_norm2d"; failed |= op_norm(0, 4, bn, dnnl_nchw, 64); release_all();
    op_name = "max_pool2d"; failed |= op_maxpool();                       release_all();
    op_name = "lstm";       failed |= op_lstm();                          release_all();
    dnnl_stream_destroy(strm);
    dnnl_engine_destroy(eng);
    return failed ? 2 : 0;
}
