/* PNG files of the CLI (png_out.h). */
#include <stdio.h>
#include <stdlib.h>

#include "cudarl.h"
#include "png_out.h"

const char *png_out_missing(void) {
    return "this cudarl was built without libpng, which writing PNG files needs; install "
           "libpng-dev (Debian/Ubuntu: apt-get install libpng-dev, or run scripts/setup.sh) and "
           "rebuild";
}

#ifndef CUDARL_HAVE_PNG

int png_out_available(void) { return 0; }

int png_out_write(const char *path, const uint8_t *pixels, int w, int h, int channels,
                  const char *description, const char *cmd) {
    (void)path, (void)pixels, (void)w, (void)h, (void)channels, (void)description;
    fprintf(stderr, "cudarl %s: %s\n", cmd, png_out_missing());
    return -1;
}

#else

#include <png.h>
#include <setjmp.h>

int png_out_available(void) { return 1; }

/* libpng's error callback: keep the message for png_out_write and jump back to it. */
static void on_error(png_structp png, png_const_charp msg) {
    char *why = png_get_error_ptr(png);
    snprintf(why, 256, "%s", msg);
    png_longjmp(png, 1);
}

static void on_warning(png_structp png, png_const_charp msg) {
    (void)png, (void)msg;
}

/* Encodes the rows into open file `f`; 0, or -1 with libpng's message in why (256 bytes). The
 * setjmp is here, where no local changes after it. */
static int encode(FILE *f, png_bytep *rows, int w, int h, int channels, const char *description,
                  char *why) {
    png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, why, on_error, on_warning);
    if (!png) return snprintf(why, 256, "libpng could not start"), -1;
    png_infop info = png_create_info_struct(png);
    if (!info || setjmp(png_jmpbuf(png))) {
        if (!info) snprintf(why, 256, "libpng could not start");
        png_destroy_write_struct(&png, info ? &info : NULL);
        return -1;
    }
    png_text text[2] = {{0}, {0}};
    text[0].compression = text[1].compression = PNG_TEXT_COMPRESSION_NONE;
    text[0].key = (png_charp) "Software";
    text[0].text = (png_charp) "cudarl " CUDARL_VERSION_STRING;
    text[1].key = (png_charp) "Description";
    text[1].text = (png_charp)description;
    png_init_io(png, f);
    png_set_IHDR(png, info, (png_uint_32)w, (png_uint_32)h, 8,
                 channels == 3 ? PNG_COLOR_TYPE_RGB : PNG_COLOR_TYPE_GRAY, PNG_INTERLACE_NONE,
                 PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
    png_set_text(png, info, text, 2);
    png_set_rows(png, info, rows);
    png_write_png(png, info, PNG_TRANSFORM_IDENTITY, NULL);
    png_destroy_write_struct(&png, &info);
    return 0;
}

int png_out_write(const char *path, const uint8_t *pixels, int w, int h, int channels,
                  const char *description, const char *cmd) {
    char why[256] = "";
    png_bytep *rows = malloc(sizeof(png_bytep) * (size_t)h);
    if (!rows) {
        fprintf(stderr, "cudarl %s: out of memory for a %dx%d image\n", cmd, w, h);
        return -1;
    }
    for (int y = 0; y < h; y++)
        rows[y] = (png_bytep)(pixels + (size_t)y * (size_t)w * (size_t)channels);
    cudarl_output *out;
    FILE *f;
    int rc = -1;
    if (cudarl_output_open(&out, path, "PNG file", &f) != CUDARL_OK) {
        fprintf(stderr, "cudarl %s: %s\n", cmd, cudarl_last_error());
    } else if (encode(f, rows, w, h, channels, description, why) != 0) {
        cudarl_output_abort(out);
        fprintf(stderr, "cudarl %s: cannot write '%s': %s\n", cmd, path, why);
    } else if (cudarl_output_commit(out) != CUDARL_OK) {
        fprintf(stderr, "cudarl %s: %s\n", cmd, cudarl_last_error());
    } else {
        rc = 0;
    }
    free(rows);
    return rc;
}

#endif
