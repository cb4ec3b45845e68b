/* Internal core: errors, assertions, logging, arenas, Philox RNG, timers. */
#ifndef CUDARL_CORE_H
#define CUDARL_CORE_H

#include <stddef.h>
#include <stdint.h>

#include "core/philox.h"
#include "cudarl.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- errors ------------------------------------------------------------------------ */

/* Records a formatted message for cudarl_last_error() and returns `s`. */
cudarl_status cr_fail(cudarl_status s, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Propagates a non-OK status from an expression. */
#define CR_TRY(expr)                            \
    do {                                        \
        cudarl_status cr_try_s_ = (expr);       \
        if (cr_try_s_ != CUDARL_OK) return cr_try_s_; \
    } while (0)

/* Refuses bad user input: unless cond, records the message (which names the problem and the
 * fix) and returns CUDARL_ERR_INVALID_ARG from the calling function. */
#define CR_REQUIRE(cond, ...)                                                  \
    do {                                                                       \
        if (!(cond)) return cr_fail(CUDARL_ERR_INVALID_ARG, __VA_ARGS__);      \
    } while (0)

/* A broken invariant is a bug in cudarl: print file:line and abort. Never for user input. */
#define CUDARL_ASSERT(cond)                                                  \
    do {                                                                     \
        if (!(cond)) cr_assert_fail(#cond, __FILE__, __LINE__);              \
    } while (0)
#ifdef __cplusplus
[[noreturn]]
#else
_Noreturn
#endif
void cr_assert_fail(const char *expr, const char *file, int line);

/* ---- limits of numeric settings (limits.c) -------------------------------------------- */

/* Checks `value` against `r`: CUDARL_OK inside [lo, hi]; else CUDARL_ERR_INVALID_ARG with
 * "--flag must be between lo and hi, got value" (the message of cudarl_flag_check). */
cudarl_status cr_flag_range_check(const cudarl_flag_range *r, double value);
/* Checks the field of each range of `table` (ended by a NULL flag) in `config`, the struct the
 * table describes, in table order; the first out of range is refused as above. */
cudarl_status cr_flag_ranges_check(const cudarl_flag_range *table, const void *config);
/* The range of `flag` in `table`, or NULL. */
const cudarl_flag_range *cr_flag_range_find(const cudarl_flag_range *table, const char *flag);

/* ---- environment variables (envvars.c) --------------------------------------------- */

/* The CUDARL_* variables cudarl reads; envvars.c holds each one's values, in this order:
 *   CR_ENVVAR_LOG          error, warn, info, debug (cudarl_log_level's order)
 *   CR_ENVVAR_SYNC_DEBUG   0, 1
 *   CR_ENVVAR_FUSED        0, 1
 *   CR_ENVVAR_CONV_ENGINE  gemm, cudnn */
typedef enum cr_envvar {
    CR_ENVVAR_LOG = 0,
    CR_ENVVAR_SYNC_DEBUG,
    CR_ENVVAR_FUSED,
    CR_ENVVAR_CONV_ENGINE,
    CR_ENVVAR_COUNT
} cr_envvar;

#define CR_ENVVAR_UNSET (-1) /* unset or empty */
#define CR_ENVVAR_BAD (-2)   /* a value not in its list (cr_envvar_check says which) */

/* Which of its values `var` holds: its index in the list above, CR_ENVVAR_UNSET or
 * CR_ENVVAR_BAD. Reads the environment on each call. */
int cr_envvar_value(cr_envvar var);
/* CUDARL_OK unless `var` holds a value not in its list: then CUDARL_ERR_INVALID_ARG naming the
 * variable, the value, the values it takes and "or unset it". */
cudarl_status cr_envvar_check(cr_envvar var);
/* That refusal's text into buf (cap bytes), without touching the last error. */
void cr_envvar_refusal(cr_envvar var, char *buf, size_t cap);

/* ---- logging ----------------------------------------------------------------------- */

void cr_log(cudarl_log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int cr_log_enabled(cudarl_log_level level);
#define CR_ERROR(...) cr_log(CUDARL_LOG_ERROR, __VA_ARGS__)
#define CR_WARN(...) cr_log(CUDARL_LOG_WARN, __VA_ARGS__)
#define CR_INFO(...) cr_log(CUDARL_LOG_INFO, __VA_ARGS__)
#define CR_DEBUG(...) cr_log(CUDARL_LOG_DEBUG, __VA_ARGS__)

/* ---- arena: plan sizes first, allocate once ------------------------------------------ */

#define CR_ARENA_ALIGN 64
#define CR_ARENA_MAX_ITEMS 64

/* A plan is a list of named sizes; an arena is one allocation carved by that plan.
 * Usage: cr_plan_add() each buffer, cr_arena_alloc() once, then cr_arena_get() pointers. */
typedef struct cr_plan {
    const char *names[CR_ARENA_MAX_ITEMS];
    size_t offsets[CR_ARENA_MAX_ITEMS];
    size_t sizes[CR_ARENA_MAX_ITEMS];
    int count;
    size_t total;
} cr_plan;

typedef enum cr_mem_kind { CR_MEM_HOST = 0, CR_MEM_PINNED, CR_MEM_DEVICE } cr_mem_kind;

typedef struct cr_arena {
    cr_plan plan;
    cr_mem_kind kind;
    unsigned char *base;
} cr_arena;

void cr_plan_init(cr_plan *p);
/* Adds `bytes` under `name` (static string); returns the item index. */
int cr_plan_add(cr_plan *p, const char *name, size_t bytes);
/* Allocates the whole plan once, zero-filled (host). */
cudarl_status cr_arena_alloc(cr_arena *a, const cr_plan *p, cr_mem_kind kind);
void *cr_arena_get(const cr_arena *a, int item);
void cr_arena_free(cr_arena *a);
/* Prints the plan as a table at INFO level under `title`. */
void cr_plan_print(const cr_plan *p, const char *title);

/* ---- Philox4x32-10 ------------------------------------------------------------------ */

/* Counter-based RNG (Salmon et al., SC'11). One stream = (key, counter high words); the
 * same (key, counter) gives the same four words on CPU and GPU. cr_philox_state and the
 * host/device inline functions these call are in philox.h. */

void cr_philox4x32_10(const uint32_t ctr[4], const uint32_t key[2], uint32_t out[4]);
/* Stream `stream` of `seed`: key = seed, ctr = (0, 0, stream lo, stream hi). */
void cr_philox_seed(cr_philox_state *s, uint64_t seed, uint64_t stream);
uint32_t cr_philox_next_u32(cr_philox_state *s);
/* Uniform in [0, 1) with 24 random bits. */
float cr_philox_uniform(cr_philox_state *s);
/* Uniform in [0, 1) with 53 random bits. */
double cr_philox_uniform_f64(cr_philox_state *s);
/* Standard normal (Box-Muller, double precision). */
double cr_philox_normal(cr_philox_state *s);

/* A Philox stream whose position is plain data (it can live in device memory): word w is word
 * w % 4 of philox(ctr = {w/4 lo, w/4 hi, stream lo, stream hi}, key = seed) - the sequence a
 * cr_philox_state seeded with (seed, stream) yields, so either can stand for the other. */
typedef struct cr_rng_stream {
    uint32_t key[2];
    uint32_t stream[2];
    uint64_t offset; /* words consumed */
} cr_rng_stream;

void cr_rng_stream_seed(cr_rng_stream *s, uint64_t seed, uint64_t stream);
/* Word `w` of the stream (does not advance). */
uint32_t cr_rng_stream_word(const cr_rng_stream *s, uint64_t w);

/* ---- timers ------------------------------------------------------------------------- */

/* Monotonic seconds since an arbitrary origin. */
double cr_time_now(void);
/* Seconds since this process started (Linux: /proc/self/stat's start time against /proc/uptime,
 * to the clock tick, 10 ms), or -1 where the system does not say. */
double cr_process_age(void);
/* Wall-clock seconds since the Unix epoch (for timing across processes). */
double cr_time_unix(void);

/* ---- memory budgets ----------------------------------------------------------------------- */

/* Bytes the host can still give (MemAvailable of /proc/meminfo), plus SwapFree when
 * include_swap: the CUDA-for-Tegra estimate of what an integrated GPU can allocate, since
 * cudaMemGetInfo leaves swap out there. -1 if /proc/meminfo cannot be read. */
int64_t cr_host_available_bytes(int include_swap);

#ifdef __cplusplus
}
#endif

#endif
