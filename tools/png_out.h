/* PNG files of the CLI (`cudarl render`, `cudarl plot`) through libpng, written as every cudarl
 * file is (cudarl_output_*: a temp file renamed over the target). Built without libpng, writing
 * fails saying which package to install. */
#ifndef CUDARL_TOOLS_PNG_OUT_H
#define CUDARL_TOOLS_PNG_OUT_H

#include <stdint.h>

/* Whether this build writes PNG files (libpng found by CMake). */
int png_out_available(void);
/* The message of a build without libpng, after "cudarl <cmd>: " (static storage). */
const char *png_out_missing(void);
/* Writes pixels (h, w, channels) (channels 1: 8-bit grey, 3: RGB) to `path` with text chunks
 * Software (cudarl <version>) and Description; 0, or prints "cudarl <cmd>: why" and returns
 * -1. */
int png_out_write(const char *path, const uint8_t *pixels, int w, int h, int channels,
                  const char *description, const char *cmd);

#endif
