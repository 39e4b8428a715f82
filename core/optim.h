/* optim.h: the optimizers' backend contract (core/internal.h's fnn_row_table): the arguments of one
 * fused update and the row type, a row per update rule, filled by core/optim.c (the CPU rows, at its
 * end) and cuda/optim.cu. The family's rows are named by rule, not by registry op (no optimizer step
 * is an op of the registry: fnn_row_family_at leaves the family out). optim.c's entry points check
 * the Param, its gradient and the state tensors, compute the step's constants on the host (bias
 * corrections, decayed rates) and call the row of the parameter's backend; a backend without the
 * row refuses the step by name. The per-element rules themselves are core/optim_rules.h. */
#ifndef FASTNN_OPTIM_H
#define FASTNN_OPTIM_H
#include "internal.h"
#ifdef __cplusplus
extern "C" {
#endif

typedef struct fnn_optim_args {
    int dtype;              /* the element type of w, g and the states (FNN_DTYPE_FLOAT32: the rows' only one) */
    int64_t n;              /* elements; w, g and the states are contiguous, shaped alike, on one device */
    void *w;                /* the parameter, updated in place (lerp: the state) */
    const void *g;          /* its gradient (lerp: the target; decay: NULL) */
    void *s[3];             /* the rule's state tensors, NULL where unused (each row's comment says which) */
    float lr;               /* sgd rmsprop adadelta lion: the learning rate; adagrad: lr / (1 + (t - 1) lr_decay);
                             * radam: the whole factor on m (lr / bc1, times the rectification when rectified) */
    float wd;               /* weight decay added to the gradient (sgd rmsprop adagrad adadelta radam) */
    float eps;              /* adam rmsprop adagrad adadelta radam */
    float beta1, beta2;     /* adam radam lion */
    float alpha;            /* rmsprop's alpha, adadelta's rho */
    float momentum;         /* sgd rmsprop */
    float damp;             /* sgd: 1 - dampening */
    float decay;            /* w's factor: adam (1 - lr wd when decoupled, else 1), lion (1 - lr wd), decay */
    float l2;               /* adam: wd when not decoupled, else 0 */
    float step_size;        /* adam: lr / (1 - beta1^t) */
    float inv_bc2_sqrt;     /* adam: 1 / sqrt(1 - beta2^t) */
    float weight;           /* lerp: w += weight (g - w) */
    bool nesterov, first_step;   /* sgd */
    bool rectified;         /* radam: rho_t > 5 (the adaptive denominator applies) */
} fnn_optim_args;
/* the rows: sgd (s[0] the momentum buffer or NULL), adam (s[0] m, s[1] v, s[2] vmax: amsgrad, or NULL),
 * rmsprop (s[0] square_avg, s[1] grad_avg or NULL: centered, s[2] the momentum buffer or NULL),
 * adagrad (s[0] sum), adadelta (s[0] square_avg, s[1] acc_delta), radam (s[0] m, s[1] v),
 * lion (s[0] m), decay (w *= decay) and lerp (w += weight (g - w)) */
typedef int (*fnn_optim_fn)(int ordinal, const fnn_optim_args *a);
/* count parameters' updates of one rule at once, a[0..count-1] (a multi-tensor apply) */
typedef int (*fnn_optim_many_fn)(int ordinal, const fnn_optim_args *a, int count);
typedef struct fnn_optim_row {
    const char *op;         /* the rule's name ("sgd", "adam", ...); NULL ends a table */
    fnn_optim_fn step;
    fnn_optim_many_fn step_many;   /* NULL: the entry point runs step once per parameter */
} fnn_optim_row;
/* the CPU rows: core/optim.c; the CUDA rows: cuda/ */
FNN_ROW_GLUE(optim, fnn_optim_row)

#ifdef __cplusplus
}
#endif
#endif
