/* conv_onednn.c: the CPU convolutions on oneDNN's convolution primitives (the oneDNN kernels,
 * blas.c's default): forward, backward data (a transposed convolution's forward) and backward
 * weights (+ bias), for the geometry of conv.h, depthwise included. conv.c calls it first on the
 * CPU when the oneDNN kernels are selected and keeps im2col + sgemm and the depthwise kernels as
 * the portable kernels and for what this declines (FNN_ONEDNN_DECLINED): a geometry oneDNN
 * refuses, an empty one. FASTNN_CONV=im2col (read once) sends everything to im2col under the
 * oneDNN GEMMs, for A/B measurements of the convolutions alone.
 *
 * Layouts: outside the op, the user's NCHW row-major (ncw / nchw / ncdhw, weights oihw or goihw,
 * the bytes of [O, C/groups, kh, kw]). Inside, the primitives choose their own (format_tag_any:
 * nChw16c-style blocked on AVX-512), with reorders in and out through a scratch block: on plain
 * layouts oneDNN runs its own im2col + gemm ("gemm:jit"), 1.2-4x slower than conv.c's; blocked,
 * its direct JIT kernels run 1.5-2.7x faster than conv.c's even with the reorders (one thread,
 * measured in the commit that added this). A 1-d or 2-d geometry (conv.h pads them to 3-d) gets
 * a 1-d or 2-d descriptor. Repeated reorders are saved: a backward wanting dx and dw reorders
 * diff_dst once for both kinds, and a forward whose weight will want a gradient keeps its blocked
 * src (conv.c saves it on the node, fnn_conv_args.keep_x) for the backward weights, which read it
 * where the batch split and layout still match (else reorder x again).
 *
 * Threads: as conv.c, the images are split over the threads (conv_image_slots), one OpenMP region
 * per call, each slot running a one-thread primitive of its sub-batch; the weight and bias
 * gradients of the slots are summed after in slot order, so they are the same bits run to run at
 * a thread count. Left to its own threads, oneDNN enters several parallel regions per call (the
 * reorders, the kernel), each a barrier that a busy 2-vCPU machine stalls on: 2-5x slower than
 * im2col there. With fewer images than threads, one primitive of the whole batch runs on
 * oneDNN's threads.
 *
 * Primitives are cached by shape (the geometry, the kind, bias or not, the threads it was planned
 * for), as PyTorch's ideep does, so a training step creates none after its first: a table under
 * a mutex, entries never freed while the process runs (a full table makes a primitive per call
 * instead). A cached entry may run on several threads at once: each call brings its own stream,
 * its own memory objects over the caller's pointers and its own scratchpad
 * (dnnl_scratchpad_mode_user, from fnn_alloc), so the primitive holds no state of a call. A
 * geometry oneDNN refuses is cached as refused and goes to im2col without asking again. */
#include "conv.h"
#ifdef FASTNN_WITH_ONEDNN
#include <oneapi/dnnl/dnnl.h>
#include <pthread.h>
#include <stdlib.h>
#ifdef _OPENMP
#include <omp.h>
#endif
#include <string.h>

enum { K_FWD, K_FWD_BIAS, K_BWD_DATA, K_BWD_WEIGHTS, K_BWD_WEIGHTS_BIAS };
static const char *const KIND_NAMES[] = {"forward", "forward", "backward data", "backward weights",
                                         "backward weights"};

typedef struct {
    int64_t v[27];   /* the geometry's sizes (key_of) */
    int kind, threads;
    int bf16;        /* float32 precision "bf16" (precision.c): the two inputs bfloat16 inside, sums float32 */
    int act;         /* forward: FNN_ACT_RELU, an eltwise relu post-op after the bias; else FNN_ACT_NONE */
} conv_key;

/* one tensor argument of a primitive: the user's plain layout and the primitive's own; where they
 * differ, a reorder into the primitive's (an input) or back out of it (the output) */
typedef struct {
    int arg;                        /* DNNL_ARG_* */
    bool out;
    dnnl_memory_desc_t user, inner;
    dnnl_primitive_t reorder;       /* NULL: the primitive reads / writes the user's buffer */
    size_t bytes;                   /* of the inner buffer */
} conv_arg;

typedef struct {
    conv_key key;
    dnnl_primitive_t prim;   /* NULL: refused, use im2col */
    conv_arg a[3];           /* fwd: src, wei, dst; bwd data: diff_dst, wei, diff_src; bwd weights: src, diff_dst, diff_wei */
    dnnl_memory_desc_t bias;
    size_t scratch;          /* bytes: the most any of the primitive and its reorders needs */
} conv_prim;

enum { CACHE_CAP = 256 };
static struct {
    pthread_mutex_t lock;
    int n;
    conv_prim *entries[CACHE_CAP];
} cache = {.lock = PTHREAD_MUTEX_INITIALIZER};

static void key_of(conv_key *k, const conv_geom *g, int kind, int threads, int act) {
    const int64_t v[27] = {g->N,  g->C,  g->O,  g->D,  g->H,  g->W,  g->Do, g->Ho, g->Wo,
                           g->kd, g->kh, g->kw, g->sd, g->sh, g->sw, g->pd, g->ph, g->pw,
                           g->dd, g->dh, g->dw, g->groups, 0, 0, 0, 0, 0};
    memset(k, 0, sizeof *k);
    memcpy(k->v, v, sizeof v);
    k->kind = kind;
    k->threads = threads;
    k->act = kind == K_FWD || kind == K_FWD_BIAS ? act : FNN_ACT_NONE;
    /* bf16 precision without bf16 units runs float32 primitives on rounded inputs (emulated_inputs) */
    k->bf16 = fnn_prec_bf16(FNN_PREC_CONV) && fnn_bf16_native();
}

/* the threads a primitive made now on this thread would plan for and run on (OpenMP's; one inside
 * a parallel region, where oneDNN runs serially) */
static int threads_here(void) {
#ifdef _OPENMP
    return omp_in_parallel() ? 1 : omp_get_max_threads();
#else
    return 1;
#endif
}

/* the descriptors' spatial rank: the leading size-1 dims conv.h added are dropped */
static int rank_of(const conv_geom *g) {
    bool d1 = g->D == 1 && g->Do == 1 && g->kd == 1 && g->pd == 0;
    bool h1 = g->H == 1 && g->Ho == 1 && g->kh == 1 && g->ph == 0;
    return !d1 ? 3 : !h1 ? 2 : 1;
}

/* the last `rank` of (d, h, w) into out */
static void dims3(int64_t *out, int rank, int64_t d, int64_t h, int64_t w) {
    const int64_t v[3] = {d, h, w};
    for (int i = 0; i < rank; i++) out[i] = v[3 - rank + i];
}

/* the scratchpad a primitive desc asks for */
static size_t scratch_of(const_dnnl_primitive_desc_t pd) {
    const dnnl_memory_desc_t *sp = dnnl_primitive_desc_query_md(pd, dnnl_query_scratchpad_md, 0);
    return sp ? dnnl_memory_desc_get_size(sp) : 0;
}

/* a's inner layout from pd (query what, index 0) and its reorder where it differs from the user's */
static bool arg_bind(conv_arg *a, const_dnnl_primitive_desc_t pd, dnnl_query_t what, const_dnnl_primitive_attr_t attr,
                     size_t *scratch) {
    const dnnl_memory_desc_t *md = dnnl_primitive_desc_query_md(pd, what, 0);
    if (!md) return false;
    a->inner = *md;
    a->reorder = NULL;
    a->bytes = 0;
    if (dnnl_memory_desc_equal(&a->inner, &a->user)) return true;
    dnnl_primitive_desc_t rpd = NULL;
    const dnnl_memory_desc_t *from = a->out ? &a->inner : &a->user, *to = a->out ? &a->user : &a->inner;
    if (dnnl_reorder_primitive_desc_create(&rpd, from, fnn_onednn_engine(), to, fnn_onednn_engine(), attr) != dnnl_success)
        return false;
    size_t sp = scratch_of(rpd);
    if (sp > *scratch) *scratch = sp;
    bool ok = dnnl_primitive_create(&a->reorder, rpd) == dnnl_success;
    dnnl_primitive_desc_destroy(rpd);
    a->bytes = dnnl_memory_desc_get_size(&a->inner);
    return ok;
}

/* md's channel dim (1) is padded to at least twice its size (oneDNN's blocked layouts round it up
 * to the block) */
static bool pads_channels(const dnnl_memory_desc_t *md) {
    return md->ndims > 1 && md->dims[1] > 0 && md->padded_dims[1] >= 2 * md->dims[1];
}

static void prim_destroy_parts(conv_prim *p) {
    if (p->prim) dnnl_primitive_destroy(p->prim);
    p->prim = NULL;
    for (int i = 0; i < 3; i++) {
        if (p->a[i].reorder) dnnl_primitive_destroy(p->a[i].reorder);
        p->a[i].reorder = NULL;
    }
}

/* the descriptors of one geometry and the primitive of one kind (with its reorders); NULL prim
 * when oneDNN refuses */
static void prim_create_here(conv_prim *p, const conv_geom *g, int kind);

/* oneDNN plans a primitive's work split for the threads of the creating thread (OpenMP's
 * max-threads): made for `threads`, it runs right on that many (one: inside an image slot) */
static void prim_create(conv_prim *p, const conv_geom *g, int kind, int threads) {
    fnn_onednn_made();
#ifdef _OPENMP
    int saved = omp_get_max_threads();
    if (threads != saved) omp_set_num_threads(threads);
    prim_create_here(p, g, kind);
    if (threads != saved) omp_set_num_threads(saved);
#else
    (void)threads;
    prim_create_here(p, g, kind);
#endif
}

static void prim_create_here(conv_prim *p, const conv_geom *g, int kind) {
    const int r = rank_of(g);
    p->prim = NULL;
    static const dnnl_format_tag_t act[4] = {dnnl_format_tag_undef, dnnl_ncw, dnnl_nchw, dnnl_ncdhw};
    static const dnnl_format_tag_t wt[4] = {dnnl_format_tag_undef, dnnl_oiw, dnnl_oihw, dnnl_oidhw};
    static const dnnl_format_tag_t gwt[4] = {dnnl_format_tag_undef, dnnl_goiw, dnnl_goihw, dnnl_goidhw};
    dnnl_dims_t xs = {g->N, g->C}, ys = {g->N, g->O}, ws, bs = {g->O};
    dims3(xs + 2, r, g->D, g->H, g->W);
    dims3(ys + 2, r, g->Do, g->Ho, g->Wo);
    int wn;
    if (g->groups > 1) {
        ws[0] = g->groups; ws[1] = g->Og; ws[2] = g->Cg;
        dims3(ws + 3, r, g->kd, g->kh, g->kw);
        wn = r + 3;
    } else {
        ws[0] = g->O; ws[1] = g->C;
        dims3(ws + 2, r, g->kd, g->kh, g->kw);
        wn = r + 2;
    }
    dnnl_memory_desc_t src, dst, wei, asrc, adst, awei;
    /* under bf16 precision each kind reads its two inputs as bfloat16 (the reorders from the user's
     * float32 round them, to nearest even) and writes its output in float32: forward src and weights
     * in, dst out; backward data diff_dst and weights in; backward weights src and diff_dst in */
    const bool bf16 = p->key.bf16;
    const bool fwd = kind == K_FWD || kind == K_FWD_BIAS, bwd_w = kind == K_BWD_WEIGHTS || kind == K_BWD_WEIGHTS_BIAS;
    const dnnl_data_type_t tsrc = bf16 && kind != K_BWD_DATA ? dnnl_bf16 : dnnl_f32,
                           tdst = bf16 && !fwd ? dnnl_bf16 : dnnl_f32, twei = bf16 && !bwd_w ? dnnl_bf16 : dnnl_f32;
    if (dnnl_memory_desc_init_by_tag(&src, r + 2, xs, dnnl_f32, act[r]) != dnnl_success ||
        dnnl_memory_desc_init_by_tag(&dst, r + 2, ys, dnnl_f32, act[r]) != dnnl_success ||
        dnnl_memory_desc_init_by_tag(&wei, wn, ws, dnnl_f32, g->groups > 1 ? gwt[r] : wt[r]) != dnnl_success ||
        dnnl_memory_desc_init_by_tag(&p->bias, 1, bs, dnnl_f32, dnnl_a) != dnnl_success ||
        /* the primitive's own layouts (see the top of the file) */
        dnnl_memory_desc_init_by_tag(&asrc, r + 2, xs, tsrc, dnnl_format_tag_any) != dnnl_success ||
        dnnl_memory_desc_init_by_tag(&adst, r + 2, ys, tdst, dnnl_format_tag_any) != dnnl_success ||
        dnnl_memory_desc_init_by_tag(&awei, wn, ws, twei, dnnl_format_tag_any) != dnnl_success)
        return;
    /* the forward a backward kind is planned against (its hint) has the forward's types */
    dnnl_memory_desc_t hsrc = asrc, hdst = adst, hwei = awei;
    if (bf16 && !fwd &&
        (dnnl_memory_desc_init_by_tag(&hsrc, r + 2, xs, dnnl_bf16, dnnl_format_tag_any) != dnnl_success ||
         dnnl_memory_desc_init_by_tag(&hdst, r + 2, ys, dnnl_f32, dnnl_format_tag_any) != dnnl_success ||
         dnnl_memory_desc_init_by_tag(&hwei, wn, ws, dnnl_bf16, dnnl_format_tag_any) != dnnl_success))
        return;
    dnnl_dims_t st, dil, pl, pr;
    dims3(st, r, g->sd, g->sh, g->sw);
    dims3(dil, r, g->dd - 1, g->dh - 1, g->dw - 1);
    dims3(pl, r, g->pd, g->ph, g->pw);
    /* the padding after: what the output size needs (negative where PyTorch's floor division
     * drops input positions; oneDNN may refuse that, then im2col runs it) */
    dims3(pr, r, (g->Do - 1) * g->sd + (g->kd - 1) * g->dd + 1 - g->D - g->pd,
          (g->Ho - 1) * g->sh + (g->kh - 1) * g->dh + 1 - g->H - g->ph,
          (g->Wo - 1) * g->sw + (g->kw - 1) * g->dw + 1 - g->W - g->pw);
    const bool with_bias = kind == K_FWD_BIAS || kind == K_BWD_WEIGHTS_BIAS;
    dnnl_primitive_attr_t attr = NULL, conv_attr = NULL;
    dnnl_primitive_desc_t hint = NULL, pd = NULL;
    dnnl_convolution_desc_t fd, bd;
    bool ok = false;
    if (dnnl_primitive_attr_create(&attr) != dnnl_success) return;
    if (dnnl_primitive_attr_set_scratchpad_mode(attr, dnnl_scratchpad_mode_user) != dnnl_success) goto done;
    /* y = relu(conv + b) inside the kernel, before the reorder out: the primitive's own attributes (its
     * reorders keep attr: a reorder takes no eltwise post-op) */
    if (p->key.act == FNN_ACT_RELU) {
        dnnl_post_ops_t post = NULL;
        bool set = dnnl_primitive_attr_clone(&conv_attr, attr) == dnnl_success &&
                   dnnl_post_ops_create(&post) == dnnl_success &&
                   dnnl_post_ops_append_eltwise(post, 1.0f, dnnl_eltwise_relu, 0.0f, 0.0f) == dnnl_success &&
                   dnnl_primitive_attr_set_post_ops(conv_attr, post) == dnnl_success;
        if (post) dnnl_post_ops_destroy(post);
        if (!set) goto done;
    }
    if (dnnl_dilated_convolution_forward_desc_init(&fd, dnnl_forward_training, dnnl_convolution_direct, &hsrc, &hwei,
                                                   with_bias ? &p->bias : NULL, &hdst, st, dil, pl,
                                                   pr) != dnnl_success)
        goto done;
    if (kind == K_FWD || kind == K_FWD_BIAS) {
        if (dnnl_primitive_desc_create(&pd, &fd, conv_attr ? conv_attr : attr, fnn_onednn_engine(), NULL) != dnnl_success)
            goto done;
    } else {
        if (dnnl_primitive_desc_create(&hint, &fd, attr, fnn_onednn_engine(), NULL) != dnnl_success) goto done;
        dnnl_status_t s = kind == K_BWD_DATA
            ? dnnl_dilated_convolution_backward_data_desc_init(&bd, dnnl_convolution_direct, &asrc, &awei, &adst,
                                                               st, dil, pl, pr)
            : dnnl_dilated_convolution_backward_weights_desc_init(&bd, dnnl_convolution_direct, &asrc, &awei,
                                                                  with_bias ? &p->bias : NULL, &adst, st, dil,
                                                                  pl, pr);
        if (s != dnnl_success || dnnl_primitive_desc_create(&pd, &bd, attr, fnn_onednn_engine(), hint) != dnnl_success)
            goto done;
    }
    if (bf16) {   /* a reference implementation would be far slower than im2col on rounded operands */
        const char *impl = NULL;
        if (dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &impl) != dnnl_success || !impl ||
            strncmp(impl, "ref", 3) == 0)
            goto done;
    }
    p->scratch = scratch_of(pd);
    if (kind == K_FWD || kind == K_FWD_BIAS) {
        p->a[0] = (conv_arg){DNNL_ARG_SRC, false, src, src, NULL, 0};
        p->a[1] = (conv_arg){DNNL_ARG_WEIGHTS, false, wei, wei, NULL, 0};
        p->a[2] = (conv_arg){DNNL_ARG_DST, true, dst, dst, NULL, 0};
        ok = arg_bind(&p->a[0], pd, dnnl_query_src_md, attr, &p->scratch) &&
             arg_bind(&p->a[1], pd, dnnl_query_weights_md, attr, &p->scratch) &&
             arg_bind(&p->a[2], pd, dnnl_query_dst_md, attr, &p->scratch);
    } else if (kind == K_BWD_DATA) {
        p->a[0] = (conv_arg){DNNL_ARG_DIFF_DST, false, dst, dst, NULL, 0};
        p->a[1] = (conv_arg){DNNL_ARG_WEIGHTS, false, wei, wei, NULL, 0};
        p->a[2] = (conv_arg){DNNL_ARG_DIFF_SRC, true, src, src, NULL, 0};
        ok = arg_bind(&p->a[0], pd, dnnl_query_diff_dst_md, attr, &p->scratch) &&
             arg_bind(&p->a[1], pd, dnnl_query_weights_md, attr, &p->scratch) &&
             arg_bind(&p->a[2], pd, dnnl_query_diff_src_md, attr, &p->scratch);
    } else {
        p->a[0] = (conv_arg){DNNL_ARG_SRC, false, src, src, NULL, 0};
        p->a[1] = (conv_arg){DNNL_ARG_DIFF_DST, false, dst, dst, NULL, 0};
        p->a[2] = (conv_arg){DNNL_ARG_DIFF_WEIGHTS, true, wei, wei, NULL, 0};
        ok = arg_bind(&p->a[0], pd, dnnl_query_src_md, attr, &p->scratch) &&
             arg_bind(&p->a[1], pd, dnnl_query_diff_dst_md, attr, &p->scratch) &&
             arg_bind(&p->a[2], pd, dnnl_query_diff_weights_md, attr, &p->scratch);
    }
    /* a weight gradient whose src layout pads the input channels to twice their count or more (an 8-
     * or 16-channel block around a 1-, 2- or 4-channel input) spends half its products or more on
     * zeros: refused, so im2col runs the backward (cnn_fmnist's first layer, 1 -> 32 channels: 2.4 ->
     * 0.7 ms a step, two threads, AVX2). 3 channels get an unpadded kernel (resnet_small's stem) */
    if (ok && bwd_w) ok = !pads_channels(&p->a[0].inner);
    if (ok) ok = dnnl_primitive_create(&p->prim, pd) == dnnl_success;
    if (!ok) prim_destroy_parts(p);
done:
    if (pd) dnnl_primitive_desc_destroy(pd);
    if (hint) dnnl_primitive_desc_destroy(hint);
    if (conv_attr) dnnl_primitive_attr_destroy(conv_attr);
    dnnl_primitive_attr_destroy(attr);
}

/* the cached primitive of (g, kind), made on first use; *owned: not cached, the caller frees it
 * (prim_release). NULL on an allocation failure (error set) */
static conv_prim *prim_get(const conv_geom *g, int kind, int threads, int act, bool *owned) {
    conv_key k;
    key_of(&k, g, kind, threads, act);
    *owned = false;
    pthread_mutex_lock(&cache.lock);
    for (int i = 0; i < cache.n; i++)
        if (memcmp(&cache.entries[i]->key, &k, sizeof k) == 0) {
            conv_prim *p = cache.entries[i];
            pthread_mutex_unlock(&cache.lock);
            return p;
        }
    pthread_mutex_unlock(&cache.lock);
    /* made outside the lock (milliseconds: oneDNN generates code); two threads may both make one,
     * the second is then dropped */
    conv_prim *p = calloc(1, sizeof *p);
    if (!p) { fnn_alloc_failed(FNN_DEVICE_CPU, (double)sizeof *p, "a oneDNN convolution"); return NULL; }
    p->key = k;
    prim_create(p, g, kind, threads);
    pthread_mutex_lock(&cache.lock);
    for (int i = 0; i < cache.n; i++)
        if (memcmp(&cache.entries[i]->key, &k, sizeof k) == 0) {
            conv_prim *q = cache.entries[i];
            pthread_mutex_unlock(&cache.lock);
            prim_destroy_parts(p);
            free(p);
            return q;
        }
    if (cache.n < CACHE_CAP) cache.entries[cache.n++] = p;
    else *owned = true;
    pthread_mutex_unlock(&cache.lock);
    return p;
}

static void prim_release(conv_prim *p, bool owned) {
    if (!owned) return;
    prim_destroy_parts(p);
    free(p);
}

enum { ALIGN = 64 };
static size_t aligned(size_t n) { return (n + ALIGN - 1) / ALIGN * ALIGN; }

/* a memory object over data; NULL on failure */
static dnnl_memory_t mem_over(const dnnl_memory_desc_t *md, void *data) {
    dnnl_memory_t m = NULL;
    return dnnl_memory_create(&m, md, fnn_onednn_engine(), data) == dnnl_success ? m : NULL;
}

/* execute prim with args + a scratchpad over scratch (NULL: none) */
static dnnl_status_t exec(dnnl_primitive_t prim, dnnl_stream_t stream, int n, dnnl_exec_arg_t *args,
                          dnnl_memory_t scratch) {
    if (scratch) { args[n].arg = DNNL_ARG_SCRATCHPAD; args[n].memory = scratch; n++; }
    fnn_onednn_team_mark();
    return dnnl_primitive_execute(prim, stream, n, args);
}

/* the scratch block one run of p takes: its scratchpad, then the reordered copies that have no
 * shared place (run_on) */
static size_t run_bytes(const conv_prim *p, char *const shared[3]) {
    size_t bytes = aligned(p->scratch);
    for (int i = 0; i < 3; i++) bytes += p->a[i].reorder && !shared[i] ? aligned(p->a[i].bytes) : 0;
    return bytes;
}

/* run p on the user's buffers data[0..2] (p->a's order) and bias (its DNNL_ARG_BIAS or
 * DNNL_ARG_DIFF_BIAS, NULL for none), with block (run_bytes) as its scratch: inputs reordered into
 * p's layout, the primitive, the output reordered out, all on one stream of this call. An input i
 * with shared[i] (not NULL) has its p-layout copy there instead of in block: made here unless
 * ready[i] says an earlier run of the same layout made it (backward data and backward weights
 * share diff_dst's). round[i]: the copy made here is rounded to bfloat16 values in place, while it
 * is still in cache (bf16 precision without bf16 units: see emulated_inputs) */
static dnnl_status_t run_on(const conv_prim *p, char *block, void *const data[3], int bias_arg, const void *bias,
                            char *const shared[3], const bool ready[3], const bool round[3]) {
    dnnl_memory_t user[3] = {NULL, NULL, NULL}, inner[3] = {NULL, NULL, NULL}, bm = NULL, sm = NULL;
    dnnl_stream_t stream = NULL;
    dnnl_status_t s = dnnl_stream_create(&stream, fnn_onednn_engine(), dnnl_stream_default_flags);
    size_t at = aligned(p->scratch);
    if (s == dnnl_success && p->scratch > 0) {
        dnnl_memory_desc_t smd;
        const dnnl_dims_t sz = {(int64_t)p->scratch};
        s = dnnl_memory_desc_init_by_tag(&smd, 1, sz, dnnl_u8, dnnl_a);
        if (s == dnnl_success && !(sm = mem_over(&smd, block))) s = dnnl_out_of_memory;
    }
    for (int i = 0; i < 3 && s == dnnl_success; i++) {
        const conv_arg *a = &p->a[i];
        if (!(user[i] = mem_over(&a->user, data[i]))) { s = dnnl_out_of_memory; break; }
        if (!a->reorder) continue;
        char *buf = shared[i] ? shared[i] : block + at;
        if (!(inner[i] = mem_over(&a->inner, buf))) { s = dnnl_out_of_memory; break; }
        if (!shared[i]) at += aligned(a->bytes);
        if (!a->out && !(shared[i] && ready[i])) {
            dnnl_exec_arg_t ra[3] = {{DNNL_ARG_FROM, user[i]}, {DNNL_ARG_TO, inner[i]}};
            s = exec(a->reorder, stream, 2, ra, sm);
            if (s == dnnl_success && round[i] && (s = dnnl_stream_wait(stream)) == dnnl_success) {
                const int64_t n = (int64_t)(a->bytes / sizeof(float));   /* a float32 layout: padding is zeros */
                fnn_round_bf16_matrix((float *)buf, (const float *)buf, 1, n, n);
            }
        }
    }
    if (s == dnnl_success && bias && !(bm = mem_over(&p->bias, (void *)bias))) s = dnnl_out_of_memory;
    if (s == dnnl_success) {
        dnnl_exec_arg_t args[5];
        int n = 0;
        for (int i = 0; i < 3; i++) { args[n].arg = p->a[i].arg; args[n].memory = inner[i] ? inner[i] : user[i]; n++; }
        if (bm) { args[n].arg = bias_arg; args[n].memory = bm; n++; }
        s = exec(p->prim, stream, n, args, sm);
    }
    for (int i = 0; i < 3 && s == dnnl_success; i++)
        if (p->a[i].reorder && p->a[i].out) {
            dnnl_exec_arg_t ra[3] = {{DNNL_ARG_FROM, inner[i]}, {DNNL_ARG_TO, user[i]}};
            s = exec(p->a[i].reorder, stream, 2, ra, sm);
        }
    if (s == dnnl_success) s = dnnl_stream_wait(stream);
    if (stream) dnnl_stream_destroy(stream);
    for (int i = 0; i < 3; i++) {
        if (user[i]) dnnl_memory_destroy(user[i]);
        if (inner[i]) dnnl_memory_destroy(inner[i]);
    }
    if (bm) dnnl_memory_destroy(bm);
    if (sm) dnnl_memory_destroy(sm);
    return s;
}

/* FASTNN_CONV=im2col: the im2col path under the oneDNN GEMMs (for A/B measurements) */
static int conv_env = -1;
static pthread_once_t env_once = PTHREAD_ONCE_INIT;
static void env_read(void) {
    const char *e = getenv("FASTNN_CONV");
    conv_env = e && strcmp(e, "im2col") == 0 ? 0 : 1;
}

bool fnn_onednn_conv_wants(const conv_geom *g) {
    if (fnn_blas_portable()) return false;
    pthread_once(&env_once, env_read);
    if (!conv_env) return false;
    if (g->N == 0 || g->C == 0 || g->O == 0 || g->L == 0 || g->S == 0) return false;
    return fnn_onednn_engine() != NULL;   /* NULL: no CPU engine here, everything to im2col */
}

/* One kind over the batch. With slots > 1 the images are split over the threads as in conv.c (one
 * OpenMP region per call, each slot running a one-thread primitive of its sub-batch serially); else
 * the whole batch runs as one primitive on oneDNN's own threads. data[i] advances per image by
 * stride[i] floats (0: shared, the weights). The backward weights' output (data[2] and the bias
 * gradient) of slot s > 0 goes to part + (s - 1) * (wsz + O), summed after in slot order. */
enum { MAX_SLOTS = 256 };
typedef struct {
    const conv_geom *g;
    int kind, slots, bias_arg;
    int64_t q;                  /* images of the smaller slots: slot sizes are q or q + 1 */
    conv_prim *prim[2];         /* for sub-batches of q and q + 1 images */
    void *data[3];
    int64_t stride[3];
    const float *bias, *bias_in;
    float *part;
    int64_t wsz;
    char *block;                /* per slot: per_slot bytes */
    size_t per_slot;
    char *shared[3];            /* input i's p-layout copies (run_on), per slot shared_slot bytes; NULL: in block */
    bool ready[3];              /* shared[i] already holds them */
    bool round[3];              /* input i's p-layout copies rounded to bfloat16 values in place (run_on) */
    uint16_t *yh;               /* forward: each slot's part of the output also rounded to bfloat16 there */
    size_t shared_slot[3];      /* their bytes per slot */
    dnnl_status_t st[MAX_SLOTS];
} onednn_job;

static void job_slot(void *ctx, int64_t s0, int64_t s1) {
    onednn_job *j = ctx;
    const conv_geom *g = j->g;
    for (int64_t s = s0; s < s1; s++) {
        int64_t q = g->N / j->slots, r = g->N % j->slots;
        int64_t n0 = s * q + (s < r ? s : r), nb = q + (s < r);
        const conv_prim *p = j->prim[nb - j->q];
        void *d[3];
        for (int i = 0; i < 3; i++) d[i] = (float *)j->data[i] + n0 * j->stride[i];
        const void *bias = j->bias;
        if (j->kind >= K_BWD_WEIGHTS && s > 0) {   /* partial sums of dw (and db) */
            d[2] = j->part + (s - 1) * (j->wsz + g->O);
            if (bias) bias = (float *)d[2] + j->wsz;
        }
        char *sh[3];
        for (int i = 0; i < 3; i++) sh[i] = j->shared[i] ? j->shared[i] + (size_t)s * j->shared_slot[i] : NULL;
        j->st[s] = run_on(p, j->block + (size_t)s * j->per_slot, d, j->bias_arg, bias, sh, j->ready, j->round);
        if (j->st[s] == dnnl_success && j->yh)   /* the slot's output rounded while it is in cache */
            fnn_to_bf16_matrix(j->yh + n0 * j->stride[2], (const float *)d[2], 1, nb * j->stride[2], nb * j->stride[2]);
        if (j->st[s] == dnnl_success && j->bias_in)   /* dx + bias_in per input channel */
            for (int64_t n = 0; n < nb; n++)
                for (int64_t c = 0; c < g->C; c++) {
                    float *v = (float *)d[2] + (n * g->C + c) * g->S, bv = j->bias_in[c];
                    for (int64_t i = 0; i < g->S; i++) v[i] += bv;
                }
    }
}

/* the primitives of one kind over the batch (see onednn_job) into j: FNN_ONEDNN_DECLINED where
 * oneDNN refuses it; job_end releases them whatever this returns */
static int job_prepare(onednn_job *j, const conv_geom *g, int kind, void *const data[3], const int64_t stride[3],
                       int bias_arg, const float *bias, const float *bias_in, double flops, int act, bool owned[2]) {
    int slots = conv_image_slots(g->N, flops);
    if (slots > MAX_SLOTS) slots = MAX_SLOTS;
    memset(j, 0, sizeof *j);
    j->g = g; j->kind = kind; j->slots = slots; j->bias_arg = bias_arg; j->bias = bias; j->bias_in = bias_in;
    for (int i = 0; i < 3; i++) { j->data[i] = data[i]; j->stride[i] = stride[i]; }
    j->q = g->N / slots;
    owned[0] = owned[1] = false;
    const int sizes = slots > 1 && g->N % slots ? 2 : 1;
    for (int k = 0; k < sizes; k++) {
        conv_geom sub = *g;
        sub.N = j->q + k;
        if (!(j->prim[k] = prim_get(&sub, kind, slots > 1 ? 1 : threads_here(), act, &owned[k])))
            return fnn_last_status();
        if (!j->prim[k]->prim) return FNN_ONEDNN_DECLINED;
    }
    return FNN_STATUS_OK;
}

static void job_end(onednn_job *j, const bool owned[2]) {
    for (int k = 0; k < 2; k++) if (j->prim[k]) prim_release(j->prim[k], owned[k]);
}

/* run a prepared job: its scratch, the slots, the partial sums */
static int job_run(onednn_job *j, int dev) {
    const conv_geom *g = j->g;
    const int slots = j->slots;
    size_t per = 0;
    for (int k = 0; k < 2; k++)
        if (j->prim[k]) { size_t b = run_bytes(j->prim[k], j->shared); per = b > per ? b : per; }
    j->per_slot = aligned(per);
    j->wsz = j->kind >= K_BWD_WEIGHTS ? g->O * g->Kg : 0;
    const int64_t part_n = j->kind >= K_BWD_WEIGHTS ? (slots - 1) * (j->wsz + g->O) : 0;
    const int64_t bytes = (int64_t)(j->per_slot * (size_t)slots) + part_n * (int64_t)sizeof(float);
    char *block = NULL;
    if (bytes > 0 && !(block = fnn_alloc(dev, bytes))) return fnn_last_status();
    j->block = block;
    j->part = part_n ? (float *)(block + j->per_slot * (size_t)slots) : NULL;
    fnn_parallel_for(slots, slots, job_slot, j);
    dnnl_status_t s = dnnl_success;
    for (int i = 0; i < slots; i++) if (j->st[i] != dnnl_success) { s = j->st[i]; break; }
    if (s == dnnl_success && part_n) {   /* the slots' partial sums, in a fixed order */
        float *dw = j->data[2], *db = (float *)j->bias;
        for (int sl = 1; sl < slots; sl++) {
            const float *pp = j->part + (sl - 1) * (j->wsz + g->O);
            for (int64_t i = 0; i < j->wsz; i++) dw[i] += pp[i];
            if (db) for (int64_t o = 0; o < g->O; o++) db[o] += pp[j->wsz + o];
        }
    }
    if (block) fnn_free(dev, block, bytes);
    FNN_CHECK(s == dnnl_success, FNN_STATUS_INTERNAL,
              "conv (oneDNN %s): failed (oneDNN status %d) on input [%lld, %lld, %lld, %lld, %lld], "
              "output [%lld, %lld, %lld, %lld, %lld], kernel %lldx%lldx%lld, groups %lld",
              KIND_NAMES[j->kind], (int)s, (long long)g->N, (long long)g->C, (long long)g->D, (long long)g->H,
              (long long)g->W, (long long)g->N, (long long)g->O, (long long)g->Do, (long long)g->Ho, (long long)g->Wo,
              (long long)g->kd, (long long)g->kh, (long long)g->kw, (long long)g->groups);
    return FNN_STATUS_OK;
}

/* bf16 precision on a CPU without bf16 units: the float32 primitives on the inputs rounded to bfloat16
 * (a product of two bf16 values is exact in float32, so the numbers are the bf16 kernels' up to the
 * order of the sums); before, these convs fell back to im2col, 1.6x slower on resnet_small. An input
 * that every primitive of its job reorders into a layout of its own is rounded there, in place, just
 * after its reorder (run_on's round: that copy is in cache, and no rounded copy of the tensor is
 * made); one a primitive reads as it is gets a rounded copy (fnn_bf16_values: autocast's bf16
 * values, found by a scan, are used as they are), which owned[] keeps for emulated_free. Inputs that
 * exact flags as widened from bfloat16 tensors are neither scanned nor rounded. */
typedef struct {
    float *owned[3];   /* x, w, dy: the rounded copies made */
    int64_t n[3];
} emulated_inputs;

/* the inputs (CONV_EXACT_* bits among given) that bf16 precision rounds here */
static unsigned to_round(unsigned given, unsigned exact) {
    if (!fnn_prec_bf16(FNN_PREC_CONV) || fnn_bf16_native()) return 0;
    return given & ~exact;
}

/* does every primitive of j reorder its input i (so that run_on can round the copy it makes) */
static bool reorders(const onednn_job *j, int i) {
    for (int k = 0; k < 2; k++)
        if (j->prim[k] && !j->prim[k]->a[i].reorder) return false;
    return j->prim[0] != NULL;
}

/* *p (n floats, the input in slot of e: x, w, dy) pointed at its rounded copy, kept in e (or at itself
 * where its values are bf16 already) */
static int rounded_copy(emulated_inputs *e, int slot, const float **p, int64_t n) {
    const float *r = fnn_bf16_values(*p, n, &e->owned[slot]);
    if (!r) return FNN_STATUS_OOM;
    e->n[slot] = n;
    *p = r;
    return FNN_STATUS_OK;
}

/* input i of j (the user's *p, n floats, slot of emulated_inputs) rounded: in place after its
 * reorder where every primitive of j makes one, else through a rounded copy */
static int round_input(onednn_job *j, int i, emulated_inputs *e, int slot, const float **p, int64_t n) {
    if (reorders(j, i)) {
        j->round[i] = true;
        return FNN_STATUS_OK;
    }
    FNN_TRY(rounded_copy(e, slot, p, n));
    j->data[i] = (void *)*p;
    return FNN_STATUS_OK;
}

static void emulated_free(emulated_inputs *e) {
    for (int i = 0; i < 3; i++)
        if (e->owned[i]) fnn_free(FNN_DEVICE_CPU, e->owned[i], (int64_t)sizeof(float) * e->n[i]);
}

static int conv_forward_run(const conv_geom *g, int dev, const float *x, const float *w, const float *b, float *y,
                            fnn_tensor *keep_x, unsigned round, uint16_t *yh, int act);
static int conv_backward_run(const conv_geom *g, int dev, const float *x, const float *w, const float *dy,
                             const float *dy_in, const float *bias_in, float *dx, float *dw, float *db,
                             const void *x_kept, unsigned round);

int fnn_onednn_conv_forward(const conv_geom *g, int dev, const float *x, const float *w, const float *b, float *y,
                            fnn_tensor *keep_x, unsigned exact, uint16_t *yh, int act) {
    if (!fnn_onednn_conv_wants(g)) return FNN_ONEDNN_DECLINED;
    return conv_forward_run(g, dev, x, w, b, y, keep_x, to_round(CONV_EXACT_X | CONV_EXACT_W, exact), yh, act);
}

/* the forward's blocked copy of x for the backward weights (fnn_onednn_conv_forward's keep_x): this
 * head, then per slot per_slot bytes; the backward reads it where its own batch split and src
 * layouts are these (the same thread count, the same primitives' choice) and its values are the
 * ones it would read (rounded to bfloat16 or not, as the backward rounds x or not) */
typedef struct {
    int64_t slots, q;
    size_t per_slot;
    dnnl_memory_desc_t md[2];   /* src's layout for sub-batches of q and q + 1 images (md[1] unused: one size) */
    bool rounded;               /* the copies were rounded to bfloat16 values (run_on's round) */
} kept_head;
static size_t kept_head_bytes(void) { return aligned(sizeof(kept_head)); }

/* keep (empty) as a float tensor for j's blocked src copies, j->shared[0] pointed into it; left empty
 * where a prim reads x as it is (no reorder to save) */
static int kept_make(onednn_job *j, int dev, fnn_tensor *keep) {
    kept_head h;
    memset(&h, 0, sizeof h);
    h.slots = j->slots;
    h.q = j->q;
    h.rounded = j->round[0];
    for (int k = 0; k < 2; k++) {
        const conv_prim *p = j->prim[k];
        if (!p) continue;
        if (!p->a[0].reorder) return FNN_STATUS_OK;
        h.md[k] = p->a[0].inner;
        if (aligned(p->a[0].bytes) > h.per_slot) h.per_slot = aligned(p->a[0].bytes);
    }
    const size_t bytes = kept_head_bytes() + h.per_slot * (size_t)j->slots;
    const int64_t n = (int64_t)((bytes + sizeof(float) - 1) / sizeof(float));
    FNN_TRY(fnn_new_output(keep, dev, 1, &n));
    char *base = (char *)fnn_data(keep);
    memcpy(base, &h, sizeof h);
    j->shared[0] = base + kept_head_bytes();
    j->shared_slot[0] = h.per_slot;
    return FNN_STATUS_OK;
}

/* point j (backward weights) at the forward's kept src copies where they fit it: its layout, and
 * rounded as this backward rounds x (round_x) */
static void kept_use(onednn_job *j, const void *kept, bool round_x) {
    kept_head h;
    memcpy(&h, kept, sizeof h);
    if (h.slots != j->slots || h.q != j->q || h.rounded != round_x) return;
    for (int k = 0; k < 2; k++) {
        const conv_prim *p = j->prim[k];
        if (p && (!p->a[0].reorder || !dnnl_memory_desc_equal(&h.md[k], &p->a[0].inner) ||
                  aligned(p->a[0].bytes) > h.per_slot))
            return;
    }
    j->shared[0] = (char *)kept + kept_head_bytes();
    j->shared_slot[0] = h.per_slot;
    j->ready[0] = true;
}

static int conv_forward_run(const conv_geom *g, int dev, const float *x, const float *w, const float *b, float *y,
                            fnn_tensor *keep_x, unsigned round, uint16_t *yh, int act) {
    void *const data[3] = {(void *)x, (void *)w, y};
    const int64_t stride[3] = {g->C * g->S, 0, g->O * g->L};
    const double flops = 2.0 * (double)g->N * (double)g->O * (double)g->Kg * (double)g->L;
    onednn_job j;
    bool owned[2];
    emulated_inputs e;
    memset(&e, 0, sizeof e);
    int rc = job_prepare(&j, g, b ? K_FWD_BIAS : K_FWD, data, stride, DNNL_ARG_BIAS, b, NULL, flops, act, owned);
    if (!rc && (round & CONV_EXACT_X)) rc = round_input(&j, 0, &e, 0, &x, g->N * g->C * g->S);
    if (!rc && (round & CONV_EXACT_W)) rc = round_input(&j, 1, &e, 1, &w, g->O * g->Kg);
    if (!rc && keep_x) rc = kept_make(&j, dev, keep_x);
    j.yh = yh;
    if (!rc) rc = job_run(&j, dev);
    job_end(&j, owned);
    emulated_free(&e);
    if (rc && keep_x) fnn_tensor_clear(keep_x);
    return rc;
}

int fnn_onednn_conv_backward(const conv_geom *g, int dev, const float *x, const float *w, const float *dy,
                             const float *bias_in, float *dx, float *dw, float *db, const void *x_kept,
                             unsigned exact) {
    if (!fnn_onednn_conv_wants(g) || (!dx && !dw)) return FNN_ONEDNN_DECLINED;
    /* the bias gradient alone (no dw) sums dy as given, as it does with bf16 units */
    const unsigned given = (dw ? CONV_EXACT_X : 0u) | (dx ? CONV_EXACT_W : 0u) | CONV_EXACT_DY;
    return conv_backward_run(g, dev, x, w, dy, dy, bias_in, dx, dw, db, x_kept, to_round(given, exact));
}

static int conv_backward_run(const conv_geom *g, int dev, const float *x, const float *w, const float *dy,
                             const float *dy_in, const float *bias_in, float *dx, float *dw, float *db,
                             const void *x_kept, unsigned round) {
    const double flops = 2.0 * (double)g->N * (double)g->O * (double)g->Kg * (double)g->L;
    onednn_job jd, jw;
    bool od[2] = {false, false}, ow[2] = {false, false};
    memset(&jd, 0, sizeof jd);
    memset(&jw, 0, sizeof jw);
    emulated_inputs e;
    memset(&e, 0, sizeof e);
    int rc = FNN_STATUS_OK;
    /* both kinds prepared first, the one not wanted too (a cache lookup after the first call): where
     * either is refused, im2col does the whole backward, so a gradient has the same bits whether or
     * not the other one is wanted */
    {
        void *const data[3] = {(void *)dy, (void *)w, dx};
        const int64_t stride[3] = {g->O * g->L, 0, g->C * g->S};
        rc = job_prepare(&jd, g, K_BWD_DATA, data, stride, 0, NULL, bias_in, flops, FNN_ACT_NONE, od);
    }
    if (!rc) {
        void *const data[3] = {(void *)x, (void *)dy, dw};
        const int64_t stride[3] = {g->C * g->S, g->O * g->L, 0};
        rc = job_prepare(&jw, g, db && dw ? K_BWD_WEIGHTS_BIAS : K_BWD_WEIGHTS, data, stride, DNNL_ARG_DIFF_BIAS,
                         dw ? db : NULL, NULL, flops, FNN_ACT_NONE, ow);
        /* src as the forward reordered it */
        if (!rc && dw && x_kept) kept_use(&jw, x_kept, (round & CONV_EXACT_X) != 0);
    }
    /* bf16 precision's rounding (emulated_inputs' comment): x for dw (none where the kept copy serves),
     * w for dx, dy for both: in place after the reorders where both wanted kinds reorder it, else one
     * rounded copy for both */
    if (!rc && dw && (round & CONV_EXACT_X) && !jw.ready[0]) rc = round_input(&jw, 0, &e, 0, &x, g->N * g->C * g->S);
    if (!rc && dx && (round & CONV_EXACT_W)) rc = round_input(&jd, 1, &e, 1, &w, g->O * g->Kg);
    if (!rc && (round & CONV_EXACT_DY)) {
        if ((!dx || reorders(&jd, 0)) && (!dw || reorders(&jw, 1))) {
            jd.round[0] = dx != NULL;
            jw.round[1] = dw != NULL;
        } else {
            rc = rounded_copy(&e, 2, &dy, g->N * g->O * g->L);
            jd.data[0] = jw.data[1] = (void *)dy;
        }
    }
    /* both wanted: diff_dst is reordered into the primitives' layout once, by backward data, and
     * backward weights reads that copy (one reorder of dy a layer and step instead of two) */
    char *dyb = NULL;
    int64_t dyb_bytes = 0;
    if (!rc && dx && dw && jd.slots == jw.slots && jd.q == jw.q) {
        bool same = true;
        size_t per = 0;
        for (int k = 0; k < 2 && same; k++) {
            const conv_prim *pd = jd.prim[k], *pw = jw.prim[k];
            if (!pd && !pw) continue;
            same = pd && pw && pd->a[0].reorder && pw->a[1].reorder &&
                   dnnl_memory_desc_equal(&pd->a[0].inner, &pw->a[1].inner);
            if (same && aligned(pd->a[0].bytes) > per) per = aligned(pd->a[0].bytes);
        }
        if (same && per > 0) {
            dyb_bytes = (int64_t)(per * (size_t)jd.slots);
            if (!(dyb = fnn_alloc(dev, dyb_bytes))) rc = fnn_last_status();
            jd.shared[0] = jw.shared[1] = dyb;
            jd.shared_slot[0] = jw.shared_slot[1] = per;
            jw.ready[1] = true;
        }
    }
    if (!rc && dx) rc = job_run(&jd, dev);
    if (!rc && dw) rc = job_run(&jw, dev);
    if (dyb) fnn_free(dev, dyb, dyb_bytes);
    job_end(&jd, od);
    job_end(&jw, ow);
    emulated_free(&e);
    if (!rc && db && !dw)   /* the bias gradient alone: sums of dy per channel, in a fixed order */
        for (int64_t o = 0; o < g->O; o++) {
            double s = 0;
            for (int64_t n = 0; n < g->N; n++) {
                const float *d = dy_in + (n * g->O + o) * g->L;
                float part = 0;
                for (int64_t i = 0; i < g->L; i++) part += d[i];
                s += part;
            }
            db[o] = (float)s;
        }
    return rc;
}
#else
bool fnn_onednn_conv_wants(const conv_geom *g) { (void)g; return false; }
int fnn_onednn_conv_forward(const conv_geom *g, int dev, const float *x, const float *w, const float *b, float *y,
                            fnn_tensor *keep_x, unsigned exact, uint16_t *yh, int act) {
    (void)g; (void)dev; (void)x; (void)w; (void)b; (void)y; (void)keep_x; (void)exact; (void)yh; (void)act;
    return FNN_ONEDNN_DECLINED;
}
int fnn_onednn_conv_backward(const conv_geom *g, int dev, const float *x, const float *w, const float *dy,
                             const float *bias_in, float *dx, float *dw, float *db, const void *x_kept,
                             unsigned exact) {
    (void)g; (void)dev; (void)x; (void)w; (void)dy; (void)bias_in; (void)dx; (void)dw; (void)db; (void)x_kept;
    (void)exact;
    return FNN_ONEDNN_DECLINED;
}
#endif
