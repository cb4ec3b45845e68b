/* The CPU reference of frame_to_obs (ops/frames.h): one frame converted, cropped and
 * area-resized into (channels, out_h, out_w) planes, output rows split over OpenMP's threads
 * (integer sums: the same bytes for any thread count). */
#include "ops/frames.h"
#include "ops/parallel.h"

#define PARALLEL_PIXELS (1 << 20) /* source pixels below which one thread does it all */

void cr_cpu_frame_to_obs(const cr_frame_geom *g, const uint8_t *frame, uint8_t *out) {
    const size_t plane = (size_t)g->out_w * (size_t)g->out_h;
    const int64_t work = (int64_t)g->crop_w * g->crop_h + (int64_t)plane;
    (void)work; /* read by the pragma only where the build has OpenMP */
#pragma omp parallel for schedule(static) if (work >= PARALLEL_PIXELS)
    for (int oy = 0; oy < g->out_h; oy++)
        for (int ox = 0; ox < g->out_w; ox++) {
            uint8_t v[3];
            cr_frame_box(g, frame, ox, oy, v);
            const size_t at = (size_t)oy * (size_t)g->out_w + (size_t)ox;
            for (int c = 0; c < g->channels; c++) out[(size_t)c * plane + at] = v[c];
        }
}
