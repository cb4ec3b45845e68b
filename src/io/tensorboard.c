/* TensorBoard event files, written by hand: TFRecord framing around Event protocol buffers. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "io/output_file.h"
#include "io/tensorboard.h"

uint32_t cr_crc32c(const void *data, size_t n) {
    static uint32_t table[256];
    static int ready;
    if (!ready) {
        for (uint32_t i = 0; i < 256; i++) {
            uint32_t c = i;
            for (int k = 0; k < 8; k++) c = c & 1 ? 0x82F63B78u ^ (c >> 1) : c >> 1;
            table[i] = c;
        }
        ready = 1;
    }
    const uint8_t *p = data;
    uint32_t c = 0xFFFFFFFFu;
    for (size_t i = 0; i < n; i++) c = table[(c ^ p[i]) & 255] ^ (c >> 8);
    return c ^ 0xFFFFFFFFu;
}

static uint32_t masked_crc(const void *data, size_t n) {
    uint32_t c = cr_crc32c(data, n);
    return ((c >> 15) | (c << 17)) + 0xa282ead8u;
}

/* A small protocol-buffer encoder into a fixed buffer. */
typedef struct pb {
    uint8_t *b;
    size_t n, cap;
} pb;

static void pb_byte(pb *p, uint8_t v) {
    if (p->n < p->cap) p->b[p->n] = v;
    p->n++;
}

static void pb_varint(pb *p, uint64_t v) {
    while (v >= 0x80) pb_byte(p, (uint8_t)(v | 0x80)), v >>= 7;
    pb_byte(p, (uint8_t)v);
}

static void pb_fixed(pb *p, const void *v, int bytes) { /* little-endian hosts */
    for (int i = 0; i < bytes; i++) pb_byte(p, ((const uint8_t *)v)[i]);
}

static void pb_bytes(pb *p, int field, const void *data, size_t n) {
    pb_varint(p, (uint64_t)field << 3 | 2);
    pb_varint(p, n);
    for (size_t i = 0; i < n; i++) pb_byte(p, ((const uint8_t *)data)[i]);
}

static cudarl_status write_record(cr_tb_writer *w, const uint8_t *data, size_t n) {
    uint64_t len = n;
    uint32_t len_crc = masked_crc(&len, 8), data_crc = masked_crc(data, n);
    if (fwrite(&len, 8, 1, w->f) != 1 || fwrite(&len_crc, 4, 1, w->f) != 1 ||
        fwrite(data, 1, n, w->f) != n || fwrite(&data_crc, 4, 1, w->f) != 1)
        return cr_fail(CUDARL_ERR_IO, "cannot write '%s': %s", w->path, strerror(errno));
    return CUDARL_OK;
}

cudarl_status cr_tb_open(cr_tb_writer *w, const char *dir) {
    char host[64] = "host";
    gethostname(host, sizeof host - 1);
    double now = cr_time_unix();
    snprintf(w->path, sizeof w->path, "%s/events.out.tfevents.%lld.%s.cudarl", dir,
             (long long)now, host);
    CR_TRY(cr_out_open_append(w->path, "TensorBoard event file", 1, &w->f));
    uint8_t buf[128];
    pb p = {buf, 0, sizeof buf};
    pb_varint(&p, 1 << 3 | 1), pb_fixed(&p, &now, 8);
    static const char version[] = "brain.Event:2";
    pb_bytes(&p, 3, version, sizeof version - 1);
    return write_record(w, buf, p.n);
}

cudarl_status cr_tb_scalars(cr_tb_writer *w, int64_t step, const char *const *tags,
                            const double *values, int n) {
    if (!w->f) return CUDARL_OK;
    uint8_t summary[4096], value[256], event[4400];
    pb s = {summary, 0, sizeof summary};
    for (int i = 0; i < n; i++) {
        if (isnan(values[i])) continue;
        pb v = {value, 0, sizeof value};
        pb_bytes(&v, 1, tags[i], strlen(tags[i]));
        float x = (float)values[i];
        pb_varint(&v, 2 << 3 | 5), pb_fixed(&v, &x, 4);
        CUDARL_ASSERT(v.n <= v.cap);
        pb_bytes(&s, 1, value, v.n);
    }
    CUDARL_ASSERT(s.n <= s.cap);
    pb e = {event, 0, sizeof event};
    double now = cr_time_unix();
    pb_varint(&e, 1 << 3 | 1), pb_fixed(&e, &now, 8);
    pb_varint(&e, 2 << 3 | 0), pb_varint(&e, (uint64_t)step);
    pb_bytes(&e, 5, summary, s.n);
    CUDARL_ASSERT(e.n <= e.cap);
    return write_record(w, event, e.n);
}

cudarl_status cr_tb_text(cr_tb_writer *w, int64_t step, const char *tag, const char *text) {
    if (!w->f) return CUDARL_OK;
    const size_t n = strlen(text), tag_n = strlen(tag), cap = 2 * n + tag_n + 256;
    uint8_t *buf = malloc(4 * cap); /* value, summary, event and the tensor's bytes */
    if (!buf) return cr_fail(CUDARL_ERR_OUT_OF_MEMORY, "out of host memory for '%s'", w->path);
    uint8_t small[64];
    pb shape = {small, 0, sizeof small}, dim = {small + 32, 0, 32};
    pb_varint(&dim, 1 << 3 | 0), pb_varint(&dim, 1); /* Dim.size = 1 */
    pb_bytes(&shape, 2, dim.b, dim.n);               /* TensorShapeProto.dim */
    pb tensor = {buf, 0, cap};
    pb_varint(&tensor, 1 << 3 | 0), pb_varint(&tensor, 7); /* TensorProto.dtype = DT_STRING */
    pb_bytes(&tensor, 2, shape.b, shape.n);
    pb_bytes(&tensor, 8, text, n);                           /* string_val */
    uint8_t meta[32], plugin[16];
    pb pd = {plugin, 0, sizeof plugin}, md = {meta, 0, sizeof meta};
    pb_bytes(&pd, 1, "text", 4);  /* PluginData.plugin_name */
    pb_bytes(&md, 1, plugin, pd.n); /* SummaryMetadata.plugin_data */
    char full[300];
    snprintf(full, sizeof full, "%s/text_summary", tag); /* what add_text names it */
    pb value = {buf + cap, 0, cap};
    pb_bytes(&value, 1, full, strlen(full));
    pb_bytes(&value, 9, meta, md.n);
    pb_bytes(&value, 8, tensor.b, tensor.n);
    pb summary = {buf + 2 * cap, 0, cap};
    pb_bytes(&summary, 1, value.b, value.n);
    pb e = {buf + 3 * cap, 0, cap};
    double now = cr_time_unix();
    pb_varint(&e, 1 << 3 | 1), pb_fixed(&e, &now, 8);
    pb_varint(&e, 2 << 3 | 0), pb_varint(&e, (uint64_t)step);
    pb_bytes(&e, 5, summary.b, summary.n);
    CUDARL_ASSERT(tensor.n <= cap && value.n <= cap && summary.n <= cap && e.n <= cap);
    cudarl_status s = write_record(w, e.b, e.n);
    if (s == CUDARL_OK && fflush(w->f) != 0)
        s = cr_fail(CUDARL_ERR_IO, "cannot write '%s': %s", w->path, strerror(errno));
    free(buf);
    return s;
}

void cr_tb_close(cr_tb_writer *w) {
    if (w->f) fclose(w->f);
    w->f = NULL;
}
