/* The MLP checkpoints' tensors held against the model their metadata describes. */
#include <stdio.h>
#include <string.h>

#include "io/checkpoint.h"
#include "nn/actor_critic.h"
#include "nn/convnet.h"
#include "nn/qnet.h"
#include "runtime/mlp_check.h"

/* The parameter tensors the file's own metadata describes: the PPO actor-critic (obs_dim,
 * hidden, num_actions; with action_dim a Gaussian's: num_actions means and the log-std) or the
 * DQN Q-network (obs_dim, hidden1, hidden2, num_actions). */
static cudarl_status expected_tensors(const cr_st_file *f, const char *path, int dqn,
                                      cr_param_tensor *out, int *n, char *desc, size_t cap) {
    long long obs = 0, h1 = 0, h2 = 0, actions = 0;
    CR_TRY(cr_checkpoint_meta_ll(f, path, "obs_dim", &obs));
    CR_TRY(cr_checkpoint_meta_ll(f, path, dqn ? "hidden1" : "hidden", &h1));
    if (dqn) CR_TRY(cr_checkpoint_meta_ll(f, path, "hidden2", &h2));
    else h2 = h1;
    CR_TRY(cr_checkpoint_meta_ll(f, path, "num_actions", &actions));
    snprintf(desc, cap, "obs_dim %lld, hidden %lld/%lld, num_actions %lld", obs, h1, h2, actions);
    if (obs < 1 || obs > 4096 || h1 < 1 || h1 > 4096 || h2 < 1 || h2 > 4096 || actions < 1 ||
        actions > 4096)
        return cr_fail(CUDARL_ERR_FORMAT, "checkpoint '%s' describes a model of %s, which is out "
                       "of range; the file is damaged", path, desc);
    if (dqn) {
        cr_qnet_layout q;
        cr_qnet_layout_init(&q, (int)obs, (int)h1, (int)h2, (int)actions);
        memcpy(out, q.t, sizeof q.t);
        *n = CR_QNET_NUM_TENSORS;
    } else {
        cr_ac_layout l;
        long long k = 0;
        if (cr_st_meta(f, "action_dim")) {
            CR_TRY(cr_checkpoint_meta_ll(f, path, "action_dim", &k));
            if (k != actions || k > CUDARL_ACTION_DIM_MAX)
                return cr_fail(CUDARL_ERR_FORMAT, "checkpoint '%s': action_dim %lld with "
                               "num_actions %lld; a Gaussian policy's are equal and at most %d: "
                               "the file is damaged", path, k, actions, CUDARL_ACTION_DIM_MAX);
            cr_ac_layout_init_gaussian(&l, (int)obs, (int)h1, (int)k);
        } else {
            cr_ac_layout_init(&l, (int)obs, (int)h1, (int)actions);
        }
        memcpy(out, l.t, sizeof l.t);
        *n = l.num_tensors;
    }
    return CUDARL_OK;
}

/* Refuses parameter tensors (and Adam moments, where present) whose dtype or shape is not the
 * one the file's own metadata describes: a transposed or resized weight must not load just
 * because its element count happens to fit. */
static cudarl_status check_model_tensors(const cr_st_file *f, const char *path, int dqn) {
    cr_param_tensor want_t[CR_AC_MAX_TENSORS];
    int n = 0;
    char desc[128];
    CR_TRY(expected_tensors(f, path, dqn, want_t, &n, desc, sizeof desc));
    static const char *const prefix[] = {"", "optimizer.exp_avg.", "optimizer.exp_avg_sq."};
    for (int i = 0; i < n; i++)
        for (int k = 0; k < 3; k++) {
            const cr_param_tensor *p = &want_t[i];
            char name[96];
            snprintf(name, sizeof name, "%.40s%.40s", prefix[k], p->name);
            cr_st_tensor t;
            cudarl_status found = cr_st_find(f, name, &t);
            if (found != CUDARL_OK && k > 0) continue; /* eval needs no Adam moments */
            CR_TRY(found);
            int64_t want[2] = {p->shape[0], p->shape[1]};
            int same = t.dtype == CR_ST_F32 && t.ndim == p->ndim;
            for (int d = 0; same && d < p->ndim; d++) same = t.shape[d] == want[d];
            if (same) continue;
            char got_s[160], want_s[64];
            return cr_fail(CUDARL_ERR_MISMATCH, "checkpoint '%s': tensor '%s' is %s of shape %s, but "
                           "the model its metadata describes (%s) needs F32 of shape %s; the file "
                           "was altered or damaged: use a model.safetensors written by cudarl train",
                           path, name, cr_st_dtype_name(t.dtype),
                           cr_checkpoint_shape_text(got_s, sizeof got_s, t.ndim, t.shape), desc,
                           cr_checkpoint_shape_text(want_s, sizeof want_s, p->ndim, want));
        }
    return CUDARL_OK;
}

cudarl_status cr_checkpoint_check_format(const cr_st_file *f, const char *path, const char *algo) {
    CR_TRY(cr_checkpoint_check_header(f, path, algo));
    if (cr_st_meta(f, CR_CONVNET_META_KEY)) {
        const char *pol = cr_st_meta(f, "policy");
        return cr_fail(CUDARL_ERR_UNSUPPORTED, "checkpoint '%s' holds a convolutional network "
                       "('%.32s'), which this MLP reader does not take; load it with "
                       "cudarl_policy_load (cudarl eval and export do)", path,
                       pol ? pol : "(no policy name)");
    }
    return check_model_tensors(f, path, !strcmp(algo, "dqn"));
}
