/* One frame through cudarl_frame_convert, for tests/unit/test_frames_opencv.py:
 *
 *   frames_dump FORMAT WIDTH HEIGHT PITCH CROP_X CROP_Y CROP_W CROP_H OUT_W OUT_H CHANNELS IN OUT
 *
 * FORMAT gray8|rgb8|bgr8|yuyv|nv12; IN holds the frame's bytes as the camera gives them (PITCH
 * bytes a row, 0: tight), OUT receives uint8 (CHANNELS, OUT_H, OUT_W). Exits 1 with the
 * library's message on a refusal, 2 on bad arguments or files. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cudarl.h"

static int read_file(const char *path, unsigned char **buf, size_t *n) {
    FILE *f = fopen(path, "rb");
    if (!f) return -1;
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    fseek(f, 0, SEEK_SET);
    *buf = malloc(size > 0 ? (size_t)size : 1);
    *n = *buf && size >= 0 ? fread(*buf, 1, (size_t)size, f) : 0;
    fclose(f);
    return *buf && (long)*n == size ? 0 : -1;
}

int main(int argc, char **argv) {
    static const char *const names[] = {"gray8", "rgb8", "bgr8", "yuyv", "nv12"};
    if (argc != 14) {
        fprintf(stderr, "usage: frames_dump FORMAT WIDTH HEIGHT PITCH CROP_X CROP_Y CROP_W "
                        "CROP_H OUT_W OUT_H CHANNELS IN OUT\n");
        return 2;
    }
    cudarl_camera c;
    cudarl_camera_default(&c);
    int fmt = -1;
    for (int i = 0; i < 5; i++)
        if (!strcmp(argv[1], names[i])) fmt = i;
    if (fmt < 0) {
        fprintf(stderr, "frames_dump: format '%s' is none of gray8, rgb8, bgr8, yuyv, nv12\n",
                argv[1]);
        return 2;
    }
    c.format = (cudarl_pixel_format)fmt;
    c.width = atoi(argv[2]), c.height = atoi(argv[3]);
    c.pitch = (size_t)strtoull(argv[4], NULL, 10);
    c.crop_x = atoi(argv[5]), c.crop_y = atoi(argv[6]);
    c.crop_width = atoi(argv[7]), c.crop_height = atoi(argv[8]);
    int ow = atoi(argv[9]), oh = atoi(argv[10]), ch = atoi(argv[11]);
    unsigned char *frame;
    size_t n;
    if (read_file(argv[12], &frame, &n)) {
        fprintf(stderr, "frames_dump: cannot read %s\n", argv[12]);
        return 2;
    }
    static const size_t bpp[] = {1, 3, 3, 2, 1};
    size_t pitch = c.pitch ? c.pitch : (size_t)(c.width > 0 ? c.width : 0) * bpp[fmt];
    size_t rows = (size_t)(c.height > 0 ? c.height : 0) * (fmt == 4 ? 3 : 2) / 2;
    if (n < rows * pitch) {
        fprintf(stderr, "frames_dump: %s holds %zu bytes, less than the frame's %zu\n", argv[12],
                n, rows * pitch);
        return 2;
    }
    size_t out_bytes = (size_t)(ow > 0 ? ow : 0) * (size_t)(oh > 0 ? oh : 0) * (size_t)ch;
    unsigned char *out = malloc(out_bytes ? out_bytes : 1);
    if (cudarl_frame_convert(&c, frame, ow, oh, ch, out) != CUDARL_OK) {
        fprintf(stderr, "frames_dump: %s\n", cudarl_last_error());
        return 1;
    }
    FILE *f = fopen(argv[13], "wb");
    if (!f || fwrite(out, 1, out_bytes, f) != out_bytes || fclose(f)) {
        fprintf(stderr, "frames_dump: cannot write %s\n", argv[13]);
        return 2;
    }
    free(frame), free(out);
    return 0;
}
