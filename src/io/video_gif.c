/* GIF videos through giflib's streaming writer (video.h says what is written). Built without
 * giflib, the writer is absent and says which package to install. */
#include <stdlib.h>
#include <string.h>

#include "io/video.h"

#ifndef CUDARL_HAVE_GIF

cudarl_status cr_gif_available(void) {
    return cr_fail(CUDARL_ERR_UNSUPPORTED, "this cudarl was built without giflib, which writing "
                   "GIF files needs; install libgif-dev (Debian/Ubuntu: apt-get install "
                   "libgif-dev, or run scripts/setup.sh) and rebuild, or write an .mp4 instead");
}

cudarl_status cr_gif_open(cr_gif **out, FILE *f, int width, int height, int fps) {
    (void)f, (void)width, (void)height, (void)fps;
    *out = NULL;
    return cr_gif_available();
}

cudarl_status cr_gif_add(cr_gif *g, const uint8_t *rgb) {
    (void)g, (void)rgb;
    return cr_gif_available();
}

cudarl_status cr_gif_close(cr_gif *g, int commit) {
    (void)g, (void)commit;
    return cr_gif_available();
}

#else

#include <gif_lib.h>

#define HASH_SLOTS 1024 /* open addressing for up to 256 colours: at most a quarter full */

/* Colour -> palette index. */
typedef struct cr_gif_lookup {
    int32_t keys[HASH_SLOTS]; /* colour 0xRRGGBB, or -1 */
    uint8_t vals[HASH_SLOTS];
} cr_gif_lookup;

struct cr_gif {
    GifFileType *gif;   /* NULL until the first frame (its colours make the global palette) */
    FILE *f;
    int w, h, fps, frames;
    uint8_t *prev;      /* (h, w, 3) the picture as the last frame left it */
    uint8_t *index;     /* (h, w) a rectangle's pixels as palette indices */
    uint8_t *planes;    /* (3, h, w) a rectangle's red, green and blue, for the quantizer */
    GifColorType global[256];
    int global_n;       /* colours in the global palette */
    int global_lookup;  /* 1: the lookup holds the global palette (the first frame's exact
                         * colours); 0: the first frame was quantized, so later frames get
                         * palettes of their own */
    cr_gif_lookup lookup;
};

/* giflib's output function: into the stream (a failed write shows when the file commits). */
static int gif_write(GifFileType *gif, const GifByteType *bytes, int n) {
    return (int)fwrite(bytes, 1, (size_t)n, (FILE *)gif->UserData);
}

static cudarl_status gif_fail(int err, const char *what) {
    const char *why = GifErrorString(err);
    return cr_fail(CUDARL_ERR_IO, "writing the GIF failed at %s: %s", what,
                   why ? why : "giflib error");
}

cudarl_status cr_gif_available(void) { return CUDARL_OK; }

cudarl_status cr_gif_open(cr_gif **out, FILE *f, int width, int height, int fps) {
    size_t px = (size_t)width * (size_t)height;
    cr_gif *g = calloc(1, sizeof *g);
    if (g) g->prev = malloc(px * 3), g->index = malloc(px), g->planes = malloc(px * 3);
    if (!g || !g->prev || !g->index || !g->planes) {
        if (g) free(g->prev), free(g->index), free(g->planes);
        free(g);
        return cr_fail(CUDARL_ERR_OUT_OF_MEMORY, "out of host memory for a %dx%d GIF", width,
                       height);
    }
    g->f = f, g->w = width, g->h = height, g->fps = fps;
    *out = g;
    return CUDARL_OK;
}

static void lookup_clear(cr_gif_lookup *l) { memset(l->keys, 0xff, sizeof l->keys); }

/* The slot of colour `key` in l: where it is, or the empty slot where it would go. */
static int lookup_slot(const cr_gif_lookup *l, int32_t key) {
    uint32_t h = ((uint32_t)key * 2654435761u) >> 22; /* 10 bits: HASH_SLOTS */
    while (l->keys[h] != -1 && l->keys[h] != key) h = (h + 1) & (HASH_SLOTS - 1);
    return (int)h;
}

/* The rectangle [r0, r1) x [r2, r3) of frame rgb that differs from the last picture; the first
 * frame, all of it; an unchanged frame, its top-left pixel. */
static void changed_rect(const cr_gif *g, const uint8_t *rgb, int r[4]) {
    if (g->frames == 0) {
        r[0] = 0, r[1] = g->w, r[2] = 0, r[3] = g->h;
        return;
    }
    const size_t row = (size_t)g->w * 3;
    int x0 = g->w, x1 = 0, y0 = g->h, y1 = 0;
    for (int y = 0; y < g->h; y++) {
        const uint8_t *a = rgb + (size_t)y * row, *b = g->prev + (size_t)y * row;
        if (!memcmp(a, b, row)) continue;
        int lo = 0, hi = g->w - 1;
        while (!memcmp(a + lo * 3, b + lo * 3, 3)) lo++;
        while (!memcmp(a + hi * 3, b + hi * 3, 3)) hi--;
        x0 = lo < x0 ? lo : x0, x1 = hi + 1 > x1 ? hi + 1 : x1;
        y0 = y < y0 ? y : y0, y1 = y + 1;
    }
    if (x0 >= x1) x0 = 0, x1 = 1, y0 = 0, y1 = 1;
    r[0] = x0, r[1] = x1, r[2] = y0, r[3] = y1;
}

/* The rectangle's pixels as indices (g->index) of the palette that lookup l maps to (colours,
 * *n of them so far), adding each new colour while `grow` and there is room: 1 when every pixel
 * has its index, 0 when a colour was missing. */
static int index_rect(cr_gif *g, cr_gif_lookup *l, const uint8_t *rgb, const int r[4],
                      GifColorType *colours, int *n, int grow) {
    size_t k = 0;
    for (int y = r[2]; y < r[3]; y++)
        for (int x = r[0]; x < r[1]; x++) {
            const uint8_t *p = rgb + ((size_t)y * (size_t)g->w + (size_t)x) * 3;
            int32_t key = (int32_t)p[0] << 16 | p[1] << 8 | p[2];
            int s = lookup_slot(l, key);
            if (l->keys[s] == -1) {
                if (!grow || *n == 256) return 0;
                l->keys[s] = key, l->vals[s] = (uint8_t)*n;
                colours[(*n)++] = (GifColorType){p[0], p[1], p[2]};
            }
            g->index[k++] = l->vals[s];
        }
    return 1;
}

/* The rectangle in a palette of 256 colours by giflib's median cut, into colours and g->index;
 * *n = 256. */
static cudarl_status quantize_rect(cr_gif *g, const uint8_t *rgb, const int r[4],
                                   GifColorType *colours, int *n) {
    int w = r[1] - r[0], h = r[3] - r[2];
    size_t px = (size_t)w * (size_t)h, k = 0;
    uint8_t *red = g->planes, *green = red + px, *blue = green + px;
    for (int y = r[2]; y < r[3]; y++)
        for (int x = r[0]; x < r[1]; x++, k++) {
            const uint8_t *p = rgb + ((size_t)y * (size_t)g->w + (size_t)x) * 3;
            red[k] = p[0], green[k] = p[1], blue[k] = p[2];
        }
    int size = 256;
    if (GifQuantizeBuffer((unsigned)w, (unsigned)h, &size, red, green, blue, g->index,
                          colours) != GIF_OK)
        return cr_fail(CUDARL_ERR_OUT_OF_MEMORY, "giflib could not quantize a %dx%d frame", w, h);
    *n = 256;
    return CUDARL_OK;
}

/* A giflib colour map of the n colours, padded with black to a power of two (at least 2). */
static ColorMapObject *make_map(const GifColorType *colours, int n) {
    int size = 2;
    while (size < n) size *= 2;
    GifColorType padded[256];
    memset(padded, 0, sizeof padded);
    memcpy(padded, colours, (size_t)n * sizeof *colours);
    return GifMakeMapObject(size, padded);
}

/* The header: screen, global palette, loop forever (the NETSCAPE2.0 application block). */
static cudarl_status start_file(cr_gif *g) {
    int err = 0;
    g->gif = EGifOpen(g->f, gif_write, &err);
    if (!g->gif) return gif_fail(err, "the start");
    EGifSetGifVersion(g->gif, true);
    ColorMapObject *map = make_map(g->global, g->global_n);
    if (!map) return cr_fail(CUDARL_ERR_OUT_OF_MEMORY, "out of host memory for a GIF palette");
    int ok = EGifPutScreenDesc(g->gif, g->w, g->h, map->BitsPerPixel, 0, map) == GIF_OK;
    GifFreeMapObject(map);
    static const GifByteType loop[3] = {1, 0, 0}; /* sub-block 1: repeat count 0 = forever */
    ok = ok && EGifPutExtensionLeader(g->gif, APPLICATION_EXT_FUNC_CODE) == GIF_OK &&
         EGifPutExtensionBlock(g->gif, 11, "NETSCAPE2.0") == GIF_OK &&
         EGifPutExtensionBlock(g->gif, 3, loop) == GIF_OK &&
         EGifPutExtensionTrailer(g->gif) == GIF_OK;
    return ok ? CUDARL_OK : gif_fail(g->gif->Error, "the header");
}

/* Writes the indexed rectangle r with its delay, in `map` (NULL: the global palette). Frame k
 * shows from round(100 k / fps) to round(100 (k + 1) / fps) hundredths of a second. */
static cudarl_status put_frame(cr_gif *g, const int r[4], ColorMapObject *map) {
    long long k = g->frames, fps = g->fps;
    int delay = (int)((200 * (k + 1) + fps) / (2 * fps) - (200 * k + fps) / (2 * fps));
    GraphicsControlBlock gcb = {DISPOSE_DO_NOT, false, delay, NO_TRANSPARENT_COLOR};
    GifByteType ext[4];
    EGifGCBToExtension(&gcb, ext);
    int w = r[1] - r[0], h = r[3] - r[2];
    if (!map && g->gif->Image.ColorMap) {
        /* giflib 5.2.1 drops the last frame's own palette without freeing it when the next
         * frame has none; free it here (a giflib that frees it finds NULL) */
        GifFreeMapObject(g->gif->Image.ColorMap);
        g->gif->Image.ColorMap = NULL;
    }
    int ok = EGifPutExtension(g->gif, GRAPHICS_EXT_FUNC_CODE, 4, ext) == GIF_OK &&
             EGifPutImageDesc(g->gif, r[0], r[2], w, h, false, map) == GIF_OK;
    for (int y = 0; ok && y < h; y++)
        ok = EGifPutLine(g->gif, g->index + (size_t)y * (size_t)w, w) == GIF_OK;
    return ok ? CUDARL_OK : gif_fail(g->gif->Error, "a frame");
}

/* A frame after the first: in the global palette when it holds every colour of the changed
 * rectangle, else in a palette of the rectangle's own. */
static cudarl_status add_later(cr_gif *g, const uint8_t *rgb, const int r[4]) {
    int n = g->global_n;
    if (g->global_lookup && index_rect(g, &g->lookup, rgb, r, g->global, &n, 0))
        return put_frame(g, r, NULL);
    GifColorType colours[256];
    int m = 0;
    cr_gif_lookup *own = malloc(sizeof *own);
    if (!own) return cr_fail(CUDARL_ERR_OUT_OF_MEMORY, "out of host memory for a palette");
    lookup_clear(own);
    cudarl_status s = CUDARL_OK;
    if (!index_rect(g, own, rgb, r, colours, &m, 1)) s = quantize_rect(g, rgb, r, colours, &m);
    free(own);
    CR_TRY(s);
    ColorMapObject *map = make_map(colours, m);
    if (!map) return cr_fail(CUDARL_ERR_OUT_OF_MEMORY, "out of host memory for a palette");
    s = put_frame(g, r, map);
    GifFreeMapObject(map);
    return s;
}

cudarl_status cr_gif_add(cr_gif *g, const uint8_t *rgb) {
    int r[4];
    changed_rect(g, rgb, r);
    if (g->frames == 0) { /* the global palette: the first frame's colours */
        lookup_clear(&g->lookup);
        g->global_lookup = index_rect(g, &g->lookup, rgb, r, g->global, &g->global_n, 1);
        if (!g->global_lookup) CR_TRY(quantize_rect(g, rgb, r, g->global, &g->global_n));
        CR_TRY(start_file(g));
        CR_TRY(put_frame(g, r, NULL));
    } else {
        CR_TRY(add_later(g, rgb, r));
    }
    memcpy(g->prev, rgb, (size_t)g->w * (size_t)g->h * 3);
    g->frames++;
    return CUDARL_OK;
}

cudarl_status cr_gif_close(cr_gif *g, int commit) {
    cudarl_status s = CUDARL_OK;
    if (!g) return s;
    int err = 0;
    /* an aborted file's trailer goes to its temp file, which is removed */
    if (g->gif && EGifCloseFile(g->gif, &err) != GIF_OK && commit) s = gif_fail(err, "the end");
    if (!g->gif && commit) s = cr_fail(CUDARL_ERR_INVALID_ARG, "a GIF needs at least one frame");
    free(g->prev), free(g->index), free(g->planes);
    free(g);
    return s;
}

#endif
