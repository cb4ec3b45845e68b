/* TensorBoard event files: the scalars a run logs, readable by TensorBoard and its Python
 * reader as they are. One file per run folder: events.out.tfevents.<unix time>.<host>.cudarl.
 * Format: TFRecord framing (length, masked CRC-32C of the length, an Event protocol buffer,
 * masked CRC-32C of the data); each Event holds wall_time, step and a Summary of
 * (tag, simple_value) pairs. */
#ifndef CUDARL_TENSORBOARD_H
#define CUDARL_TENSORBOARD_H

#include <stdint.h>
#include <stdio.h>

#include "core/core.h"

typedef struct cr_tb_writer {
    FILE *f;
    char path[640];
} cr_tb_writer;

/* Creates the event file in `dir` (io/output_file.h's cr_out_open_append: never through a link
 * or into a FIFO) and writes its version record. */
cudarl_status cr_tb_open(cr_tb_writer *w, const char *dir);
/* Appends one Event with `n` scalars (tags[i], values[i]) at `step`; NaN values are skipped. */
cudarl_status cr_tb_scalars(cr_tb_writer *w, int64_t step, const char *const *tags,
                            const double *values, int n);
/* Appends one Event at `step` with the text summary `tag`/text_summary holding `text` (UTF-8,
 * Markdown), as torch.utils.tensorboard's add_text writes it: a scalar-shaped DT_STRING tensor
 * of one element with plugin "text"; TensorBoard's Text tab shows it. */
cudarl_status cr_tb_text(cr_tb_writer *w, int64_t step, const char *tag, const char *text);
/* Flushes and closes (a NULL file is fine). */
void cr_tb_close(cr_tb_writer *w);
/* CRC-32C (Castagnoli) of n bytes, as TFRecord uses (exposed for the test). */
uint32_t cr_crc32c(const void *data, size_t n);

#endif
