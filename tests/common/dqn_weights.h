/* Reading a DQN checkpoint's tensors back for the DQN tests: the online network, the target,
 * and Adam's two moments, as one float array in that order (host). */
#ifndef CUDARL_TEST_DQN_WEIGHTS_H
#define CUDARL_TEST_DQN_WEIGHTS_H

#include <stdio.h>
#include <stdlib.h>

#include "check.h"
#include "nn/qnet.h"
#include "io/safetensors.h"

#define DQN_WEIGHT_KINDS 4
static const char *const dqn_weight_prefix[DQN_WEIGHT_KINDS] = {
    "", "target_", "optimizer.exp_avg.", "optimizer.exp_avg_sq."};

/* 4 x l->num_params floats (malloc'd) read from `run_dir`/model.safetensors. */
static float *dqn_weights_load(const char *run_dir, const cr_qnet_layout *l) {
    char path[700];
    snprintf(path, sizeof path, "%s/model.safetensors", run_dir);
    size_t P = l->num_params;
    float *w = malloc(DQN_WEIGHT_KINDS * P * sizeof(float));
    CHECK(w != NULL);
    cr_st_file *f = NULL;
    CHECK_OK(cr_st_open(&f, path));
    for (int k = 0; k < DQN_WEIGHT_KINDS; k++)
        for (int i = 0; i < CR_QNET_NUM_TENSORS; i++) {
            char name[96];
            snprintf(name, sizeof name, "%s%s", dqn_weight_prefix[k], l->t[i].name);
            CHECK_OK(cr_st_read_f32(f, name, w + k * P + l->t[i].offset, l->t[i].count));
        }
    cr_st_close(f);
    return w;
}

#endif
