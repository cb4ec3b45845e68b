/* A trained policy inside a fixed-rate control loop, through the public API only: loads a
 * checkpoint with cudarl_policy_load, then every period reads an observation (synthetic here:
 * smooth signals where a robot would read its sensors) into the policy's own pinned buffer
 * (cudarl_policy_obs_buffer; on the CPU into memory of ours), calls cudarl_policy_act and
 * sleeps to the next period's start with clock_nanosleep(TIMER_ABSTIME), so that the rate does
 * not drift with the time act() takes. At the end it prints act()'s latency (p50, p99, max), the calls
 * over the deadline, and the periods missed (an act() that ended after the next period began).
 *
 * Usage: example_control_loop CHECKPOINT [--hz 1000] [--seconds 1] [--deadline-us 0]
 *                             [--device auto|cpu|cuda] [--batch 1] [--fifo PRIORITY] [--mlock]
 * --fifo runs the loop's thread under SCHED_FIFO at PRIORITY (1-99) and --mlock locks the
 * process's memory (mlockall) once the policy is loaded, both before the first period; each
 * refuses, saying what permission is missing, where the system does not allow it
 * (docs/jetson.md, "A control loop under SCHED_FIFO").
 * Exits 0 when every act() succeeded, 1 when one failed or --fifo / --mlock was refused, 2 on
 * bad usage. Missed deadlines and periods are reported, not failures: how many there are is a
 * property of the machine. */
#define _GNU_SOURCE /* pthread_setschedparam, mlockall */
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include "cudarl.h"

typedef struct loop_args {
    const char *checkpoint;
    double hz, seconds, deadline_us;
    cudarl_device_kind device;
    int batch;
    int fifo;  /* SCHED_FIFO priority, 0: the default scheduler */
    int mlock; /* lock the process's memory before the loop */
} loop_args;

static int usage(const char *why) {
    fprintf(stderr, "example_control_loop: %s\nusage: example_control_loop CHECKPOINT [--hz 1000] "
            "[--seconds 1] [--deadline-us 0] [--device auto|cpu|cuda] [--batch 1] "
            "[--fifo PRIORITY] [--mlock]\n", why);
    return 2;
}

/* A number in [lo, hi] from `s`, or NAN. */
static double number(const char *s, double lo, double hi) {
    char *end;
    double v = s ? strtod(s, &end) : NAN;
    return s && *s && !*end && v >= lo && v <= hi ? v : NAN;
}

/* Fills *a from argv; returns 0, or the exit code of a bad command line. */
static int parse(int argc, char **argv, loop_args *a) {
    *a = (loop_args){NULL, 1000, 1, 0, CUDARL_DEVICE_AUTO, 1, 0, 0};
    for (int i = 1; i < argc; i++) {
        const char *k = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        double *target = !strcmp(k, "--hz") ? &a->hz : !strcmp(k, "--seconds") ? &a->seconds
                       : !strcmp(k, "--deadline-us") ? &a->deadline_us : NULL;
        if (target) {
            *target = number(v, !strcmp(k, "--deadline-us") ? 0 : 1e-3, 1e9);
            if (isnan(*target)) return usage("--hz, --seconds and --deadline-us take a number "
                                             "(> 0; --deadline-us >= 0)");
            i++;
        } else if (!strcmp(k, "--batch")) {
            double b = number(v, 1, CUDARL_POLICY_MAX_BATCH);
            if (isnan(b) || b != floor(b)) return usage("--batch takes an integer from 1 to 65536");
            a->batch = (int)b, i++;
        } else if (!strcmp(k, "--fifo")) {
            int lo = sched_get_priority_min(SCHED_FIFO), hi = sched_get_priority_max(SCHED_FIFO);
            double f = number(v, lo, hi);
            if (isnan(f) || f != floor(f)) {
                char why[160];
                snprintf(why, sizeof why, "--fifo takes a SCHED_FIFO priority, an integer from "
                         "%d to %d (chrt -m lists them)", lo, hi);
                return usage(why);
            }
            a->fifo = (int)f, i++;
        } else if (!strcmp(k, "--mlock")) {
            a->mlock = 1;
        } else if (!strcmp(k, "--device")) {
            if (!v) return usage("--device takes auto, cpu or cuda");
            if (!strcmp(v, "auto")) a->device = CUDARL_DEVICE_AUTO;
            else if (!strcmp(v, "cpu")) a->device = CUDARL_DEVICE_CPU;
            else if (!strcmp(v, "cuda")) a->device = CUDARL_DEVICE_CUDA;
            else return usage("--device takes auto, cpu or cuda");
            i++;
        } else if (k[0] == '-' || a->checkpoint) {
            char why[160];
            snprintf(why, sizeof why, "unexpected argument '%.100s'", k);
            return usage(why);
        } else {
            a->checkpoint = k;
        }
    }
    return a->checkpoint ? 0 : usage("which checkpoint? give the path of a model.safetensors");
}

/* Observation rows of the loop's step t: slow sines around 0 (float), or a moving bar (uint8). */
static void sense(void *obs, const cudarl_policy_info *in, int batch, int64_t t) {
    int64_t n = (int64_t)batch * in->obs_dim;
    for (int64_t i = 0; i < n; i++) {
        double s = sin(1e-3 * (double)t * (1 + i % 7) + (double)i);
        if (in->obs_dtype == CUDARL_OBS_U8) ((uint8_t *)obs)[i] = (uint8_t)(127.5 + 127.5 * s);
        else ((float *)obs)[i] = (float)(0.05 * s);
    }
}

/* --mlock, then --fifo, for the calling thread: 0, or 1 after saying what refused and how to
 * allow it. Memory first: the loop's pages are resident before it gets a real-time priority. */
static int go_real_time(const loop_args *a) {
    if (a->mlock && mlockall(MCL_CURRENT | MCL_FUTURE) != 0) {
        int e = errno;
        fprintf(stderr, "example_control_loop: --mlock: mlockall refused: %s; the process needs "
                "CAP_IPC_LOCK or a memlock limit above its mapped memory (a CUDA process maps "
                "a lot): run as root, or raise it (ulimit -l unlimited; 'memlock' in "
                "/etc/security/limits.conf), or leave --mlock out\n", strerror(e));
        return 1;
    }
    if (a->fifo) {
        struct sched_param sp = {.sched_priority = a->fifo};
        int e = pthread_setschedparam(pthread_self(), SCHED_FIFO, &sp);
        if (e != 0) {
            fprintf(stderr, "example_control_loop: --fifo %d: SCHED_FIFO refused: %s; it needs "
                    "CAP_SYS_NICE or a real-time priority limit of at least %d: run as root, "
                    "give the binary the capability (setcap cap_sys_nice+ep), or raise the limit "
                    "('rtprio' in /etc/security/limits.conf), or leave --fifo out\n", a->fifo,
                    strerror(e), a->fifo);
            return 1;
        }
    }
    return 0;
}

static int64_t ns_of(const struct timespec *t) {
    return (int64_t)t->tv_sec * 1000000000 + t->tv_nsec;
}

static void add_ns(struct timespec *t, int64_t ns) {
    int64_t v = ns_of(t) + ns;
    t->tv_sec = (time_t)(v / 1000000000), t->tv_nsec = (long)(v % 1000000000);
}

/* Runs the loop; returns the exit code. */
static int run(const loop_args *a) {
    cudarl_policy_options o;
    cudarl_policy_options_default(&o);
    o.device = a->device, o.max_batch = a->batch, o.deadline_us = a->deadline_us;
    cudarl_policy *p;
    if (cudarl_policy_load(a->checkpoint, &o, &p) != CUDARL_OK) {
        fprintf(stderr, "example_control_loop: %s\n", cudarl_last_error());
        return 1;
    }
    cudarl_policy_info in;
    cudarl_policy_get_info(p, &in);
    size_t elem = in.obs_dtype == CUDARL_OBS_U8 ? 1 : sizeof(float), bytes = 0;
    /* The observations go where act() reads them without a copy: on a GPU the policy's own
     * pinned buffer; a CPU policy reads them anywhere (it refuses to hand out a buffer), so
     * there they go into memory of ours, allocated before the loop. */
    void *obs = NULL, *own = NULL;
    if (cudarl_policy_obs_buffer(p, &obs, &bytes) != CUDARL_OK)
        obs = own = calloc((size_t)a->batch * in.obs_dim, elem);
    int32_t *actions = calloc((size_t)a->batch, sizeof *actions);
    if (!obs || !actions) {
        fprintf(stderr, "example_control_loop: out of memory\n");
        return 1;
    }
    if (go_real_time(a) != 0) {
        free(own);
        free(actions);
        cudarl_policy_free(p);
        return 1;
    }
    const int64_t period = (int64_t)llround(1e9 / a->hz);
    const int64_t steps = (int64_t)llround(a->seconds * a->hz);
    int64_t missed = 0, action_sum = 0;
    int status = 0;
    struct timespec next, now;
    clock_gettime(CLOCK_MONOTONIC, &next);
    for (int64_t t = 0; t < steps; t++) {
        sense(obs, &in, a->batch, t);
        if (cudarl_policy_act(p, obs, in.obs_dtype, a->batch, actions, NULL, NULL) != CUDARL_OK) {
            fprintf(stderr, "example_control_loop: step %lld: %s\n", (long long)t,
                    cudarl_last_error());
            status = 1;
            break;
        }
        action_sum += actions[0]; /* where a robot would send the command */
        add_ns(&next, period);
        clock_gettime(CLOCK_MONOTONIC, &now);
        if (ns_of(&now) > ns_of(&next)) { /* late: skip the periods already begun */
            int64_t late = (ns_of(&now) - ns_of(&next)) / period + 1;
            missed += late;
            add_ns(&next, late * period);
        }
        while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &next, NULL) == EINTR) {}
    }
    cudarl_latency_stats st;
    cudarl_policy_latency(p, &st);
    int policy = SCHED_OTHER;
    struct sched_param sp = {0};
    char sched[48] = "the default scheduler"; /* as the thread ran, read back */
    if (pthread_getschedparam(pthread_self(), &policy, &sp) == 0 && policy == SCHED_FIFO)
        snprintf(sched, sizeof sched, "SCHED_FIFO priority %d", sp.sched_priority);
    printf("%s (%s, %s) on %s, batch %d, %.0f Hz for %.2f s, %s%s\n", a->checkpoint, in.algo,
           in.env_id, in.device == CUDARL_DEVICE_CUDA ? "cuda" : "cpu", a->batch, a->hz,
           a->seconds, sched, a->mlock ? ", memory locked" : "");
    printf("acts %lld  p50 %.2f us  p99 %.2f us  max %.2f us  deadline %s%.0f us: %lld missed  "
           "periods missed %lld  (sum of actions %lld)\n", (long long)st.count, st.p50_us,
           st.p99_us, st.max_us, st.deadline_us > 0 ? "" : "none, ", st.deadline_us,
           (long long)st.deadline_misses, (long long)missed, (long long)action_sum);
    free(own);
    free(actions);
    cudarl_policy_free(p);
    return status;
}

int main(int argc, char **argv) {
    loop_args a;
    int bad = parse(argc, argv, &a);
    return bad ? bad : run(&a);
}
