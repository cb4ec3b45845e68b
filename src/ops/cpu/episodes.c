/* Episode bookkeeping: running returns and lengths, and the log of finished episodes. */
#include <math.h>

#include "ops/cpu/ops_cpu.h"

void cr_cpu_episodes_record(const float *reward, const uint8_t *done, double *ep_return,
                            int64_t *ep_length, cr_episode_log *log, int N) {
    for (int i = 0; i < N; i++) {
        ep_return[i] += reward[i];
        ep_length[i] += 1;
        if (!done[i]) continue;
        log->recent[log->episodes % CR_RECENT_EPISODES] = ep_return[i];
        log->episodes++;
        log->iter_episodes++;
        log->iter_return_sum += ep_return[i];
        log->iter_length_sum += (double)ep_length[i];
        ep_return[i] = 0;
        ep_length[i] = 0;
    }
}

double cr_episode_log_recent_mean(const cr_episode_log *log) {
    int64_t n = log->episodes < CR_RECENT_EPISODES ? log->episodes : CR_RECENT_EPISODES;
    if (n == 0) return NAN;
    double s = 0;
    for (int64_t i = 0; i < n; i++) s += log->recent[i];
    return s / (double)n;
}
