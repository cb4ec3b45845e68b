/* cudarl plot: the learning curves of runs as one PNG: the mean return of the last 100 episodes
 * (metrics.csv's charts/mean_return_100) against env steps (global_step) in the left panel and
 * against wall time (time/elapsed_s) in the right one, one colour per run or group of runs.
 *
 * Groups: runs that differ only in their seed are one curve, the mean over its runs with a band
 * from their least to their greatest value (min-max), drawn where every run of the group has
 * data (between the latest first point and the earliest last one; each run is sampled at the
 * plot's pixel columns, linearly between its rows). Runs are grouped by folder name: cudarl's
 * default names <env>__<algo>__<seed>__<unix time> by <env>__<algo>, names ending in
 * "seed<N>" or "s<N>" after a '-', '_' or '.' by what comes before; --group gives the labels
 * instead, one per run. A run folder's metrics.csv rows without a mean return yet (no episode
 * ended) are skipped; a resumed run's wall time goes on from where the earlier rows end.
 *
 * Text is drawn in a 5x9 bitmap font (plot_font.c), the PNG written with libpng (png_out.h). */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include "args.h"
#include "cmd.h"
#include "cudarl.h"
#include "plot_draw.h"
#include "png_out.h"

#define MAX_RUNS ARG_MAX_POSITIONAL
#define NAME_MAX_LEN 128
#define LINE_MAX_LEN 65536

typedef struct plot_opts {
    char out[PATH_MAX];
    char group[4096];
    int width, height;
} plot_opts;

static const arg_spec plot_specs[] = {
    {"out", ARG_STR, offsetof(plot_opts, out), PATH_MAX, 0, 0, "the PNG file to write (.png)"},
    {"group", ARG_STR, offsetof(plot_opts, group), 4096, 0, 0, "labels of the runs, comma-separated, one per run in order: runs of one label are one curve (mean, min-max band); default: by folder name without the seed"},
    {"width", ARG_INT, offsetof(plot_opts, width), 0, 640, 4096, "width of the image, pixels"},
    {"height", ARG_INT, offsetof(plot_opts, height), 0, 360, 4096, "height of the image, pixels"},
};
#define N_PLOT_SPECS ((int)(sizeof plot_specs / sizeof plot_specs[0]))

/* One run's curve: its rows with a mean return. */
typedef struct run_data {
    const char *dir;
    char name[NAME_MAX_LEN]; /* the folder's last component */
    int n;
    double *x[2]; /* (n) env steps, wall time (s) */
    double *ret;  /* (n) */
} run_data;

typedef struct group_data {
    char label[NAME_MAX_LEN];
    int members[MAX_RUNS];
    int n;
} group_data;

/* ---- reading metrics.csv ---------------------------------------------------------------- */

static const char *const COLUMNS[3] = {"global_step", "time/elapsed_s", "charts/mean_return_100"};

/* Splits line (modified) at commas into fields (at most cap); the count. */
static int split_fields(char *line, char **fields, int cap) {
    int n = 0;
    line[strcspn(line, "\r\n")] = 0;
    for (char *p = line;;) {
        if (n < cap) fields[n] = p;
        n++;
        char *c = strchr(p, ',');
        if (!c) break;
        *c = 0, p = c + 1;
    }
    return n;
}

/* Reads a run's metrics.csv into r; 0, or prints why and returns -1. */
static int read_metrics(run_data *r) {
    char path[PATH_MAX + 16];
    snprintf(path, sizeof path, "%s/metrics.csv", r->dir);
    struct stat st;
    if (stat(r->dir, &st) != 0 || !S_ISDIR(st.st_mode)) {
        fprintf(stderr, "cudarl plot: run folder '%s' %s; pass the folder of a run "
                        "(runs/<run-name>), which holds its metrics.csv\n", r->dir,
                errno == ENOENT ? "does not exist" : "is not a folder");
        return -1;
    }
    FILE *f = fopen(path, "r");
    if (!f) {
        fprintf(stderr, "cudarl plot: '%s' has no metrics.csv (%s); is it the folder of a run "
                        "of cudarl train? pass runs/<run-name>\n", r->dir, strerror(errno));
        return -1;
    }
    char *line = malloc(LINE_MAX_LEN), *fields[256];
    int col[3] = {-1, -1, -1}, nhead = 0, cap = 0, rc = 0, lineno = 1;
    if (!line || !fgets(line, LINE_MAX_LEN, f)) {
        fprintf(stderr, "cudarl plot: %s is empty (no header line); the run has not started "
                        "writing it: plot it once it has run an iteration\n", path);
        free(line), fclose(f);
        return -1;
    }
    nhead = split_fields(line, fields, 256);
    for (int k = 0; k < 3; k++)
        for (int i = 0; i < nhead && i < 256; i++)
            if (!strcmp(fields[i], COLUMNS[k])) col[k] = i;
    for (int k = 0; k < 3 && !rc; k++)
        if (col[k] < 0) {
            fprintf(stderr, "cudarl plot: %s has no column '%s' in its header; a metrics.csv of "
                            "cudarl train has global_step, charts/mean_return_100 and "
                            "time/elapsed_s: pass a run folder of cudarl train\n", path,
                    COLUMNS[k]);
            rc = -1;
        }
    double time_offset = 0, last_time = -INFINITY;
    int rows = 0;
    while (!rc && fgets(line, LINE_MAX_LEN, f)) {
        lineno++;
        if (line[strspn(line, " \r\n")] == 0) continue; /* a blank line */
        int nf = split_fields(line, fields, 256);
        if (nf != nhead) {
            fprintf(stderr, "cudarl plot: %s line %d has %d fields but the header has %d; the "
                            "file is damaged: repair or remove that line\n", path, lineno, nf,
                    nhead);
            rc = -1;
            break;
        }
        double v[3];
        for (int k = 0; k < 3 && !rc; k++) {
            const char *s = fields[col[k]];
            char *end;
            v[k] = *s ? strtod(s, &end) : NAN;
            if (*s && (*end || !isfinite(v[k]))) {
                fprintf(stderr, "cudarl plot: %s line %d: %s is '%s', not a number; the file "
                                "is damaged: repair or remove that line\n", path, lineno,
                        COLUMNS[k], s);
                rc = -1;
            }
        }
        rows++;
        if (rc || isnan(v[0]) || isnan(v[1]) || isnan(v[2])) continue;
        if (v[1] + time_offset < last_time) time_offset = last_time; /* a resumed run's clock */
        last_time = v[1] + time_offset;
        if (r->n == cap) {
            cap = cap ? cap * 2 : 256;
            double *x0 = realloc(r->x[0], (size_t)cap * sizeof(double));
            if (x0) r->x[0] = x0;
            double *x1 = realloc(r->x[1], (size_t)cap * sizeof(double));
            if (x1) r->x[1] = x1;
            double *re = realloc(r->ret, (size_t)cap * sizeof(double));
            if (re) r->ret = re;
            if (!x0 || !x1 || !re) {
                fprintf(stderr, "cudarl plot: out of memory reading %s\n", path);
                rc = -1;
                break;
            }
        }
        r->x[0][r->n] = v[0], r->x[1][r->n] = last_time, r->ret[r->n] = v[2];
        r->n++;
    }
    if (!rc && rows == 0) {
        fprintf(stderr, "cudarl plot: %s has a header but no rows: the run has not reported "
                        "yet; plot it after its first iteration\n", path);
        rc = -1;
    } else if (!rc && r->n == 0) {
        fprintf(stderr, "cudarl plot: %s has no charts/mean_return_100 yet (no episode has "
                        "ended in its %d rows): nothing to plot; let the run go on\n", path, rows);
        rc = -1;
    }
    free(line);
    fclose(f);
    return rc;
}

/* ---- groups ------------------------------------------------------------------------------ */

/* Whether s is one or more digits. */
static int all_digits(const char *s, size_t n) {
    if (n == 0) return 0;
    for (size_t i = 0; i < n; i++)
        if (s[i] < '0' || s[i] > '9') return 0;
    return 1;
}

/* The name of run folder `name` without its seed (see the top of the file), into key. */
static void seed_free_name(const char *name, char *key, size_t cap) {
    const char *a = strstr(name, "__"), *b = a ? strstr(a + 2, "__") : NULL;
    const char *c = b ? strstr(b + 2, "__") : NULL;
    if (c && !strstr(c + 2, "__") && all_digits(b + 2, (size_t)(c - b - 2)) &&
        all_digits(c + 2, strlen(c + 2))) { /* <env>__<algo>__<seed>__<time> */
        snprintf(key, cap, "%.*s", (int)(b - name), name);
        return;
    }
    size_t n = strlen(name), d = n;
    while (d > 0 && name[d - 1] >= '0' && name[d - 1] <= '9') d--;
    if (d < n) {
        size_t tag = d >= 4 && !strncasecmp(name + d - 4, "seed", 4) ? 4
                     : d >= 1 && (name[d - 1] == 's' || name[d - 1] == 'S') ? 1 : 0;
        if (tag && d > tag && strchr("-_.", name[d - tag - 1]) && d - tag - 1 > 0) {
            snprintf(key, cap, "%.*s", (int)(d - tag - 1), name);
            return;
        }
    }
    snprintf(key, cap, "%s", name);
}

/* Puts run i into the group labelled `label`, making it if new; the count of groups. */
static int add_to_group(group_data *g, int ng, const char *label, int i) {
    int k = 0;
    while (k < ng && strcmp(g[k].label, label)) k++;
    if (k == ng) snprintf(g[k].label, sizeof g[k].label, "%s", label), g[k].n = 0, ng++;
    g[k].members[g[k].n++] = i;
    return ng;
}

/* Groups the runs by --group's labels or by their names; the count, or -1 (said why). */
static int make_groups(const plot_opts *o, run_data *runs, int nr, group_data *g) {
    int ng = 0;
    if (!o->group[0]) {
        for (int i = 0; i < nr; i++) {
            char key[NAME_MAX_LEN];
            seed_free_name(runs[i].name, key, sizeof key);
            ng = add_to_group(g, ng, key, i);
        }
        return ng;
    }
    char labels[4096];
    snprintf(labels, sizeof labels, "%s", o->group);
    char *fields[MAX_RUNS + 1];
    int nl = split_fields(labels, fields, MAX_RUNS + 1);
    if (nl != nr) {
        fprintf(stderr, "cudarl plot: --group gives %d label%s for %d run%s; give one label per "
                        "run, comma-separated, in the order of the runs (e.g. --group "
                        "ppo,ppo,dqn)\n", nl, nl == 1 ? "" : "s", nr, nr == 1 ? "" : "s");
        return -1;
    }
    for (int i = 0; i < nr; i++) {
        if (!fields[i][0] || strlen(fields[i]) >= NAME_MAX_LEN) {
            fprintf(stderr, "cudarl plot: --group's label %d is %s; give each run a label of 1 "
                            "to %d characters\n", i + 1, fields[i][0] ? "too long" : "empty",
                    NAME_MAX_LEN - 1);
            return -1;
        }
        ng = add_to_group(g, ng, fields[i], i);
    }
    return ng;
}

/* ---- drawing ----------------------------------------------------------------------------- */

/* matplotlib's "tab10" colours, one per group in order (then again). */
static const plot_rgb COLOURS[10] = {{31, 119, 180}, {255, 127, 14}, {44, 160, 44},
                                     {214, 39, 40},  {148, 103, 189}, {140, 86, 75},
                                     {227, 119, 194}, {127, 127, 127}, {188, 189, 34},
                                     {23, 190, 207}};
static const plot_rgb BLACK = {0, 0, 0}, GRID = {225, 225, 225}, WHITE = {255, 255, 255};
#define BAND_ALPHA 0.25
#define FONT 2 /* text scale: 10x18 px glyphs */

/* One panel: the data range [lo, hi] of x and y, and the plot area (pixels). */
typedef struct panel {
    double lo[2], hi[2];
    int left, top, right, bottom; /* the area [left, right] x [top, bottom] */
} panel;

static double px_x(const panel *p, double x) {
    return p->left + (x - p->lo[0]) / (p->hi[0] - p->lo[0]) * (p->right - p->left);
}

static double px_y(const panel *p, double y) {
    return p->bottom - (y - p->lo[1]) / (p->hi[1] - p->lo[1]) * (p->bottom - p->top);
}

/* A tick step of about (hi - lo) / 5: 1, 2 or 5 times a power of ten. */
static double tick_step(double lo, double hi) {
    double raw = (hi - lo) / 5, p = pow(10, floor(log10(raw))), m = raw / p;
    return p * (m < 1.5 ? 1 : m < 3.5 ? 2 : m < 7.5 ? 5 : 10);
}

/* A tick's label: steps as 500k or 1.5M, other values as %g. */
static void tick_label(double v, int steps, char *buf, size_t cap) {
    if (fabs(v) < 1e-9 * fmax(1, fabs(v))) v = 0;
    if (steps && fabs(v) >= 1e6) snprintf(buf, cap, "%gM", v / 1e6);
    else if (steps && fabs(v) >= 1e3) snprintf(buf, cap, "%gk", v / 1e3);
    else snprintf(buf, cap, "%g", v);
}

/* Run r's return at x on axis `a` (linear between its rows; NaN outside them). */
static double run_at(const run_data *r, int a, double x) {
    const double *xs = r->x[a];
    if (r->n == 0 || x < xs[0] || x > xs[r->n - 1]) return NAN;
    int lo = 0, hi = r->n - 1;
    while (hi - lo > 1) {
        int mid = (lo + hi) / 2;
        if (xs[mid] <= x) lo = mid;
        else hi = mid;
    }
    if (xs[hi] == xs[lo]) return r->ret[hi];
    double t = (x - xs[lo]) / (xs[hi] - xs[lo]);
    return r->ret[lo] + t * (r->ret[hi] - r->ret[lo]);
}

/* A range for data [lo, hi]: 5% on each side; a flat one opened to +-1 (or 10%). */
static void pad_range(double *lo, double *hi, int from_zero) {
    if (from_zero && *lo > 0) *lo = 0;
    if (*hi - *lo < 1e-12) {
        double d = fmax(1, fabs(*hi) * 0.1);
        *lo -= d, *hi += d;
        return;
    }
    double d = (*hi - *lo) * 0.05;
    if (!(from_zero && *lo == 0)) *lo -= d;
    *hi += d;
}

static void draw_axes(plot_image *im, const panel *p, int a, const char *xlabel) {
    for (int k = 0; k < 2; k++) {
        double step = tick_step(p->lo[k], p->hi[k]);
        for (double v = ceil(p->lo[k] / step) * step; v <= p->hi[k] + step * 1e-9; v += step) {
            char label[32];
            tick_label(v, k == 0 && a == 0, label, sizeof label);
            int w = plot_text_width(label, FONT);
            if (k == 0) {
                int x = (int)floor(px_x(p, v));
                plot_rect(im, x, p->top, x + 1, p->bottom, GRID);
                plot_rect(im, x, p->bottom, x + 1, p->bottom + 5, BLACK);
                plot_text(im, x - w / 2, p->bottom + 8, label, FONT, BLACK);
            } else {
                int y = (int)floor(px_y(p, v));
                plot_rect(im, p->left, y, p->right, y + 1, GRID);
                plot_rect(im, p->left - 5, y, p->left, y + 1, BLACK);
                plot_text(im, p->left - 8 - w, y - PLOT_GLYPH_H * FONT / 2, label, FONT, BLACK);
            }
        }
    }
    plot_rect(im, p->left, p->top, p->right + 1, p->top + 1, BLACK);
    plot_rect(im, p->left, p->bottom, p->right + 1, p->bottom + 1, BLACK);
    plot_rect(im, p->left, p->top, p->left + 1, p->bottom + 1, BLACK);
    plot_rect(im, p->right, p->top, p->right + 1, p->bottom + 1, BLACK);
    int w = plot_text_width(xlabel, FONT);
    plot_text(im, (p->left + p->right - w) / 2, p->bottom + 32, xlabel, FONT, BLACK);
    plot_text_up(im, p->left - 62, (p->top + p->bottom + plot_text_width("return", FONT)) / 2,
                 "return", FONT, BLACK);
}

/* One curve per group: a run's rows joined by lines; a group of several runs its mean over them
 * and the min-max band, at every pixel column where all of them have data. */
static void draw_curves(plot_image *im, const panel *p, int a, const run_data *runs,
                        const group_data *g, int ng) {
    const int clip[4] = {p->left + 1, p->top + 1, p->right, p->bottom};
    for (int k = 0; k < ng; k++) {
        plot_rgb c = COLOURS[k % 10];
        if (g[k].n == 1) {
            const run_data *r = &runs[g[k].members[0]];
            for (int i = 1; i < r->n; i++)
                plot_line(im, px_x(p, r->x[a][i - 1]), px_y(p, r->ret[i - 1]),
                          px_x(p, r->x[a][i]), px_y(p, r->ret[i]), 2, c, clip);
            if (r->n == 1)
                plot_line(im, px_x(p, r->x[a][0]), px_y(p, r->ret[0]), px_x(p, r->x[a][0]),
                          px_y(p, r->ret[0]), 4, c, clip);
            continue;
        }
        double prev = NAN;
        for (int col = p->left; col <= p->right; col++) {
            double x = p->lo[0] + (col + 0.5 - p->left) / (p->right - p->left) *
                                      (p->hi[0] - p->lo[0]);
            double sum = 0, lo = INFINITY, hi = -INFINITY;
            int have = 0;
            for (int m = 0; m < g[k].n; m++) {
                double v = run_at(&runs[g[k].members[m]], a, x);
                if (isnan(v)) break;
                sum += v, lo = fmin(lo, v), hi = fmax(hi, v), have++;
            }
            if (have < g[k].n) {
                prev = NAN;
                continue;
            }
            plot_band_column(im, col, px_y(p, lo), px_y(p, hi), c, BAND_ALPHA, clip);
            double mean = px_y(p, sum / have);
            plot_line(im, col - (isnan(prev) ? 0 : 1), isnan(prev) ? mean : prev, col, mean, 2,
                      c, clip);
            prev = mean;
        }
    }
}

/* Group k's legend text into buf. */
static void legend_text(const group_data *g, char *buf, size_t cap) {
    if (g->n > 1) snprintf(buf, cap, "%s (%d runs: mean, min-max band)", g->label, g->n);
    else snprintf(buf, cap, "%s", g->label);
}

/* The legend below the panels from row `top`: a swatch and the text of each group, wrapping;
 * returns its rows (draw 0: only counts them). */
static int legend(plot_image *im, int top, const group_data *g, int ng, int draw) {
    int x = 80, y = top, rows = ng ? 1 : 0;
    for (int k = 0; k < ng; k++) {
        char text[NAME_MAX_LEN + 64];
        legend_text(&g[k], text, sizeof text);
        int w = 30 + plot_text_width(text, FONT) + 30;
        if (x + w > im->w && x > 80) x = 80, y += 22, rows++;
        if (draw) {
            plot_rect(im, x, y + 6, x + 22, y + 9, COLOURS[k % 10]);
            plot_text(im, x + 30, y, text, FONT, BLACK);
        }
        x += w;
    }
    return rows;
}

/* Lays out and draws both panels; prints each panel's axes (data range to pixels). */
static void draw_plot(plot_image *im, const run_data *runs, int nr, const group_data *g, int ng) {
    static const char *const xlabels[2] = {"env steps (global_step)",
                                           "wall time, s (time/elapsed_s)"};
    static const char *const names[2] = {"steps", "time"};
    plot_rect(im, 0, 0, im->w, im->h, WHITE);
    const char *title = "mean return of the last 100 episodes (charts/mean_return_100)";
    plot_text(im, (im->w - plot_text_width(title, FONT)) / 2, 10, title, FONT, BLACK);
    int rows = legend(im, 0, g, ng, 0);
    int bottom = im->h - 60 - 22 * rows, half = im->w / 2;
    double ylo = INFINITY, yhi = -INFINITY;
    for (int i = 0; i < nr; i++)
        for (int j = 0; j < runs[i].n; j++)
            ylo = fmin(ylo, runs[i].ret[j]), yhi = fmax(yhi, runs[i].ret[j]);
    pad_range(&ylo, &yhi, 0);
    for (int a = 0; a < 2; a++) {
        panel p = {{INFINITY, ylo}, {-INFINITY, yhi}, a * half + 80, 40, a * half + half - 20,
                   bottom};
        for (int i = 0; i < nr; i++)
            p.lo[0] = fmin(p.lo[0], runs[i].x[a][0]),
            p.hi[0] = fmax(p.hi[0], runs[i].x[a][runs[i].n - 1]);
        pad_range(&p.lo[0], &p.hi[0], 1);
        draw_axes(im, &p, a, xlabels[a]);
        draw_curves(im, &p, a, runs, g, ng);
        printf("panel %s: x %.9g .. %.9g at columns %d .. %d; y %.9g .. %.9g at rows %d .. %d\n",
               names[a], p.lo[0], p.hi[0], p.left, p.right, p.lo[1], p.hi[1], p.bottom, p.top);
    }
    legend(im, bottom + 62, g, ng, 1);
}

/* ---- the command --------------------------------------------------------------------------- */

/* --out: a .png that can be written; 0, or prints why and returns -1. */
static int check_out(const char *out) {
    size_t n = strlen(out);
    if (!n) {
        fprintf(stderr, "cudarl plot: where should the plot go? add --out curves.png\n");
        return -1;
    }
    if (n < 4 || strcasecmp(out + n - 4, ".png")) {
        fprintf(stderr, "cudarl plot: --out '%s' must end in .png (cudarl plot writes a PNG "
                        "image); e.g. --out curves.png\n", out);
        return -1;
    }
    if (cudarl_output_check(out, "PNG file") != CUDARL_OK) {
        fprintf(stderr, "cudarl plot: %s\n", cudarl_last_error());
        return -1;
    }
    return 0;
}

static void print_help(const plot_opts *o) {
    printf("usage: cudarl plot RUN [RUN ...] --out curves.png [flags]\n\n"
           "Draws the mean return of the last 100 episodes of each run (its metrics.csv)\n"
           "against env steps (left) and wall time (right). Runs that differ only in their\n"
           "seed (names <env>__<algo>__<seed>__<time>, or ending in -seed<N> / _s<N>), or that\n"
           "--group labels alike, are one curve: the mean over them with a band from the\n"
           "least to the greatest of them (min-max).\n\nflags:\n");
    args_print_help(plot_specs, N_PLOT_SPECS, o, ARGS_CLI_ONLY);
}

int cmd_plot(int argc, char **argv) {
    plot_opts o = {"", "", 1200, 500};
    if (cmd_wants_help(argc, argv)) {
        print_help(&o);
        return 0;
    }
    arg_result r;
    if (args_parse(plot_specs, N_PLOT_SPECS, &o, argc, argv, "plot", ARGS_CLI_ONLY, MAX_RUNS,
                   &r) != 0)
        return EXIT_USAGE;
    if (!png_out_available()) {
        fprintf(stderr, "cudarl plot: %s\n", png_out_missing());
        return EXIT_FAILURE;
    }
    if (r.npositional == 0) {
        fprintf(stderr, "cudarl plot: which runs? usage: cudarl plot runs/A [runs/B ...] --out "
                        "curves.png\n");
        return EXIT_USAGE;
    }
    if (check_out(o.out) != 0) return EXIT_USAGE;
    run_data runs[MAX_RUNS];
    group_data *groups = calloc(MAX_RUNS, sizeof *groups);
    memset(runs, 0, sizeof runs);
    int nr = r.npositional, rc = groups ? 0 : EXIT_FAILURE;
    for (int i = 0; i < nr && !rc; i++) {
        runs[i].dir = r.positional[i];
        size_t len = strlen(runs[i].dir);
        while (len > 1 && runs[i].dir[len - 1] == '/') len--;
        const char *base = runs[i].dir + len;
        while (base > runs[i].dir && base[-1] != '/') base--;
        snprintf(runs[i].name, sizeof runs[i].name, "%.*s", (int)(runs[i].dir + len - base), base);
        if (read_metrics(&runs[i]) != 0) rc = EXIT_USAGE;
    }
    int ng = rc ? 0 : make_groups(&o, runs, nr, groups);
    if (ng < 0) rc = EXIT_USAGE;
    plot_image im = {NULL, o.width, o.height};
    if (!rc) {
        im.rgb = malloc((size_t)o.width * (size_t)o.height * 3);
        if (!im.rgb) {
            fprintf(stderr, "cudarl plot: out of memory for a %dx%d image\n", o.width, o.height);
            rc = EXIT_FAILURE;
        }
    }
    if (!rc) {
        draw_plot(&im, runs, nr, groups, ng);
        char description[256];
        snprintf(description, sizeof description, "cudarl plot: %d runs in %d curves, return "
                 "against env steps and wall time", nr, ng);
        if (png_out_write(o.out, im.rgb, o.width, o.height, 3, description, "plot") != 0)
            rc = EXIT_FAILURE;
        else
            printf("cudarl plot: wrote %s (%dx%d): %d run%s in %d curve%s\n", o.out, o.width,
                   o.height, nr, nr == 1 ? "" : "s", ng, ng == 1 ? "" : "s");
    }
    for (int i = 0; i < nr; i++) free(runs[i].x[0]), free(runs[i].x[1]), free(runs[i].ret);
    free(groups);
    free(im.rgb);
    return rc;
}
