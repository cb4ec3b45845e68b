/* What the trainers share about a run: its folder (runs/<run_name>/ with metrics.csv), the env
 * its config names, and the stop request (cudarl_request_stop). */
#ifndef CUDARL_RUN_H
#define CUDARL_RUN_H

#include <stdio.h>

#include "core/core.h"
#include "io/tensorboard.h"

/* Opens runs_dir/run_name (creating both), naming the run <env>__<algo>__<seed>__<unix time>
 * when run_name is empty (written back, cap bytes), and claims it: an exclusive lock on the
 * folder's run.lock (flock, released by cr_run_release or when the process ends, however it
 * ends), so a second process that opens the same run while the first runs is refused with a
 * message naming the first (its pid and start time). Then it removes temp files a killed process
 * left there, and refuses a model.safetensors or metrics.csv that is not a regular file
 * (io/output_file.h: a link, a FIFO), before the run trains. A fresh run (resume_iteration < 0)
 * refuses a folder that already holds a checkpoint and starts metrics.csv with `header`; a
 * resumed run drops metrics rows past resume_iteration (written after its last checkpoint) and
 * appends. Writes the folder's path into run_dir (run_dir_cap bytes), the open CSV into *csv
 * and the claim into *lock (-1 when the call failed before taking it). */
cudarl_status cr_run_open(const char *runs_dir, char *run_name, size_t cap, const char *env_id,
                          const char *algo, uint64_t seed, int64_t resume_iteration,
                          const char *header, char *run_dir, size_t run_dir_cap, FILE **csv,
                          int *lock);
/* Saves `toml` (the run's resolved config, as cudarl train writes it: `key = value` lines) as
 * run_dir/config.toml, atomically (io/output_file.h), and adds it to the event file as CleanRL
 * does: the text summary "hyperparameters" of a Markdown table |param|value| of its lines. */
cudarl_status cr_run_save_config(const char *run_dir, const char *toml, cr_tb_writer *tb);
/* Releases a run's claim (cr_run_open's *lock; -1 is fine). */
void cr_run_release(int lock);
/* --run-name: letters, digits, '.', '_' and '-' only, and not "." or "..": one folder inside
 * --runs-dir, whatever the trainer. */
cudarl_status cr_run_check_name(const char *name);

/* The registered env named `env_id` (--env-id) into *def, or CUDARL_ERR_INVALID_ARG with a
 * message that lists the registered ones. */
cudarl_status cr_run_find_env(const char *env_id, const cudarl_env_def **def);

/* Whether cudarl_request_stop was called since the last cr_stop_clear: the trainers' loops stop
 * after their current iteration. A request made during a run's setup counts for that run. */
int cr_stop_requested(void);
/* Forgets the request: a trainer calls it when its run ends (a request applies to one run). */
void cr_stop_clear(void);

/* Hands a metrics row (n names and values) to the run's callback, if it has one; a nonzero
 * answer is a stop request. */
void cr_run_metrics_callback(cudarl_metrics_fn fn, void *user, int64_t step, int64_t iteration,
                             const char *const *names, const double *values, int n);

#endif
