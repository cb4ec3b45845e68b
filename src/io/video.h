/* Videos: RGB frames of one size encoded into a file, written as every output file is
 * (output_file.h: a temp file beside the target, renamed over it at commit; nothing at the
 * target until then, and no temp file after a failure).
 *
 * Formats, from the target's extension (case-insensitive):
 *   .gif  GIF89a through giflib (built in when CMake found it: Debian's libgif-dev), looping
 *         forever; each frame stores only the rectangle that changed since the last one, in
 *         the first frame's palette where its colours are there, else in a palette of its own:
 *         exact when the rectangle has at most 256 colours (every render of cudarl's envs has a
 *         handful), else giflib's median-cut quantization. Frame delays are hundredths of a
 *         second, rounded so that frame k starts at round(100 k / fps).
 *   .mp4  H.264 (or whatever the ffmpeg found first on PATH picks for MP4), yuv420p: the frames
 *         go to an `ffmpeg` process through a pipe as raw rgb24, and it writes the temp file.
 * A format whose encoder is missing is refused at the check, naming what to install. */
#ifndef CUDARL_IO_VIDEO_H
#define CUDARL_IO_VIDEO_H

#include <stdint.h>

#include "core/core.h"

#define CR_VIDEO_MAX_FPS 100    /* frames a second, any format */
#define CR_VIDEO_GIF_MAX_FPS 50 /* a GIF delay below 2/100 s plays slowed down in browsers */
#define CR_VIDEO_MAX_SIDE 4096  /* pixels of a frame's width or height */

typedef enum cr_video_format { CR_VIDEO_GIF = 0, CR_VIDEO_MP4 } cr_video_format;

/* The format of `path` by its extension; CUDARL_ERR_INVALID_ARG naming the extensions taken. */
cudarl_status cr_video_format_of(const char *path, cr_video_format *format);
/* Before any work: the format, its encoder (giflib built in; ffmpeg on PATH), fps (1 ..
 * CR_VIDEO_MAX_FPS; a GIF's up to CR_VIDEO_GIF_MAX_FPS) and the target (cr_out_check). Each
 * refusal names the fix. */
cudarl_status cr_video_check(const char *path, int fps);

typedef struct cr_video cr_video;

/* Starts a video of width x height frames (even sides, up to CR_VIDEO_MAX_SIDE) at `fps` into
 * the temp file of `path` (checked as cr_video_check does). *out (host memory) goes to exactly
 * one of cr_video_commit or cr_video_abort. */
cudarl_status cr_video_open(cr_video **out, const char *path, int width, int height, int fps);
/* Appends frame rgb (height, width, 3), rows top to bottom. */
cudarl_status cr_video_add(cr_video *v, const uint8_t *rgb);
/* Frames added so far. */
int cr_video_frames(const cr_video *v);
/* Finishes the file (at least one frame) and renames it over `path`; frees v either way. */
cudarl_status cr_video_commit(cr_video *v);
/* Drops the temp file (and stops ffmpeg); frees v. NULL is fine. */
void cr_video_abort(cr_video *v);

/* ---- the formats (video.c dispatches to them) ------------------------------------------- */

typedef struct cr_gif cr_gif;
/* Whether giflib is built in; when not, CUDARL_ERR_UNSUPPORTED naming the package. */
cudarl_status cr_gif_available(void);
/* A GIF writer onto stream `f` (the output file's temp file). */
cudarl_status cr_gif_open(cr_gif **out, FILE *f, int width, int height, int fps);
cudarl_status cr_gif_add(cr_gif *g, const uint8_t *rgb);
/* Writes the trailer (commit) or not (abort), and frees g. */
cudarl_status cr_gif_close(cr_gif *g, int commit);

#endif
