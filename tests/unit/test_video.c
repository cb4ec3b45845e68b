/* Videos (io/video.h): a GIF written from renderer frames decodes with giflib (DGifSlurp) to the
 * same pixels, frame for frame (exactly for frames of at most 256 colours; a frame of more within
 * the quantizer's error), with the delays round(100 k / fps) and the loop block; an MP4 reaches an
 * `ffmpeg` on PATH as raw rgb24 frames (a stand-in script records them) and its failures are
 * errors, not a dead process; the refusals of the checks (extension, fps, encoder, target); and no
 * target or temp file after a failure, an abort or a commit of no frames. CPU only, in a fresh
 * temporary directory. */
#define _GNU_SOURCE
#include <dirent.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "cudarl.h"
#include "env/render.h"
#include "io/video.h"

#ifdef CUDARL_HAVE_GIF
#include <gif_lib.h>
#endif

#define W 600
#define H 400
#define NF 8

static char tmpdir[256];

static const char *tmp_path(char buf[static 512], const char *name) {
    snprintf(buf, 512, "%s/%s", tmpdir, name);
    return buf;
}

/* Entries of tmpdir whose name holds ".tmp.". */
static int temp_count(void) {
    DIR *d = opendir(tmpdir);
    CHECK(d);
    int n = 0;
    for (struct dirent *e; (e = readdir(d));) n += strstr(e->d_name, ".tmp.") != NULL;
    closedir(d);
    return n;
}

static int exists(const char *path) {
    struct stat st;
    return stat(path, &st) == 0;
}

/* The test's frames (NF, H, W, 3): CartPole states, one frame repeated (nothing changes), a
 * gradient of 600 x 400 colours (more than a palette holds), then CartPole again. */
static uint8_t *make_frames(void) {
    static const double states[][4] = {{0, 0, 0, 0}, {0.5, 0, 0.1, 0}, {0.5, 0, 0.1, 0},
                                       {-1, 0, -0.2, 0}, {2.4, 0, 0.21, 0}, {0, 0, 0, 0},
                                       {0, 0, 0, 0}, {1, 0, 0.05, 0}};
    size_t fb = (size_t)W * H * 3;
    uint8_t *f = malloc(fb * NF);
    CHECK(f);
    for (int k = 0; k < NF; k++) cr_cartpole_draw(states[k], f + fb * k);
    uint8_t *g = f + fb * 5; /* the gradient */
    for (int y = 0; y < H; y++)
        for (int x = 0; x < W; x++) {
            uint8_t *p = g + ((size_t)y * W + x) * 3;
            p[0] = (uint8_t)(x * 255 / (W - 1)), p[1] = (uint8_t)(y * 255 / (H - 1));
            p[2] = (uint8_t)((x + y) & 255);
        }
    return f;
}

static cudarl_status write_video(const char *path, const uint8_t *frames, int n, int fps) {
    cr_video *v;
    CR_TRY(cr_video_open(&v, path, W, H, fps));
    for (int k = 0; k < n; k++) {
        cudarl_status s = cr_video_add(v, frames + (size_t)W * H * 3 * k);
        if (s != CUDARL_OK) {
            cr_video_abort(v);
            return s;
        }
    }
    return cr_video_commit(v);
}

#ifdef CUDARL_HAVE_GIF
/* Decodes `path` and holds each frame against frames (composited: every frame draws its
 * rectangle over the last picture, as DISPOSE_DO_NOT says), its delay against fps. */
static void check_gif(const char *path, const uint8_t *frames, int fps) {
    int err = 0;
    GifFileType *gif = DGifOpenFileName(path, &err);
    CHECK_MSG(gif, "giflib cannot open %s: %s", path, GifErrorString(err));
    CHECK_MSG(DGifSlurp(gif) == GIF_OK, "giflib cannot decode %s: %s", path,
              GifErrorString(gif->Error));
    CHECK_MSG(gif->SWidth == W && gif->SHeight == H, "screen %dx%d", gif->SWidth, gif->SHeight);
    CHECK_MSG(gif->ImageCount == NF, "%d frames, expected %d", gif->ImageCount, NF);
    int loop = 0; /* giflib hands blocks before the first image to that image */
    const SavedImage *first = &gif->SavedImages[0];
    for (int i = 0; i < first->ExtensionBlockCount; i++)
        loop |= first->ExtensionBlocks[i].Function == APPLICATION_EXT_FUNC_CODE &&
                first->ExtensionBlocks[i].ByteCount == 11 &&
                !memcmp(first->ExtensionBlocks[i].Bytes, "NETSCAPE2.0", 11);
    CHECK_MSG(loop, "no NETSCAPE2.0 loop block");
    uint8_t *pic = calloc((size_t)W * H * 3, 1);
    CHECK(pic);
    int shown = 0; /* hundredths of a second so far */
    for (int k = 0; k < NF; k++) {
        SavedImage *im = &gif->SavedImages[k];
        GraphicsControlBlock gcb;
        CHECK(DGifSavedExtensionToGCB(gif, k, &gcb) == GIF_OK);
        shown += gcb.DelayTime;
        CHECK_MSG(shown == (200 * (k + 1) + fps) / (2 * fps), "frame %d ends at %d/100 s, "
                  "expected round(100 * %d / %d)", k, shown, k + 1, fps);
        CHECK(gcb.DisposalMode == DISPOSE_DO_NOT);
        ColorMapObject *map = im->ImageDesc.ColorMap ? im->ImageDesc.ColorMap : gif->SColorMap;
        GifImageDesc *d = &im->ImageDesc;
        for (int y = 0; y < d->Height; y++)
            for (int x = 0; x < d->Width; x++) {
                GifColorType c = map->Colors[im->RasterBits[(size_t)y * d->Width + x]];
                uint8_t *p = pic + ((size_t)(d->Top + y) * W + (size_t)(d->Left + x)) * 3;
                p[0] = c.Red, p[1] = c.Green, p[2] = c.Blue;
            }
        const uint8_t *want = frames + (size_t)W * H * 3 * k;
        long long off = 0, worst = 0, sum = 0;
        for (size_t i = 0; i < (size_t)W * H * 3; i++) {
            int e = abs(pic[i] - want[i]);
            off += e != 0, worst = e > worst ? e : worst, sum += e;
        }
        /* the gradient fills the colour cube (240000 colours): median cut to 256 boxes, about
         * 255 / 256^(1/3) = 40 levels a side, so about 10 off per channel on average */
        if (k == 5) {
            double mean = (double)sum / ((double)W * H * 3);
            printf("  quantized frame: mean error %.2f, worst %lld (of 255)\n", mean, worst);
            CHECK_MSG(mean <= 12 && worst <= 96, "frame %d: channels off by %.2f on average, "
                      "%lld at worst, after quantization", k, mean, worst);
        } else
            CHECK_MSG(off == 0, "frame %d: %lld channel values differ (worst %lld) from the "
                      "frame written", k, off, worst);
        /* frames that repeat their predecessor store one pixel */
        if (k == 2) CHECK_MSG(d->Width == 1 && d->Height == 1, "unchanged frame %d stored %dx%d",
                              k, d->Width, d->Height);
        if (k == 1) CHECK_MSG(d->Width < W / 2, "frame %d stored %d columns, expected only the "
                              "cart's and pole's", k, d->Width);
    }
    free(pic);
    DGifCloseFile(gif, &err);
    printf("ok: %s decodes to the %d frames written (delays at %d fps, loop block)\n", path, NF,
           fps);
}
#endif

static void test_gif(const uint8_t *frames) {
    char path[512];
#ifdef CUDARL_HAVE_GIF
    tmp_path(path, "a.gif");
    CHECK_OK(write_video(path, frames, NF, 30));
    check_gif(path, frames, 30);
    CHECK_OK(write_video(path, frames, NF, 50)); /* replaces the file */
    check_gif(path, frames, 50);
    CHECK(temp_count() == 0);
#else
    CHECK(cr_video_check(tmp_path(path, "a.gif"), 50) == CUDARL_ERR_UNSUPPORTED);
    CHECK_MSG(strstr(cudarl_last_error(), "libgif-dev"), "%s", cudarl_last_error());
    printf("ok: built without giflib, a .gif is refused naming libgif-dev\n");
    (void)frames;
#endif
}

static void write_script(const char *path, const char *body) {
    FILE *f = fopen(path, "w");
    CHECK(f && fprintf(f, "#!/bin/sh\n%s\n", body) > 0 && fclose(f) == 0);
    CHECK(chmod(path, 0755) == 0);
}

/* MP4 through a stand-in ffmpeg on PATH: it copies its stdin to the file named last on its
 * command line and writes its arguments beside it. */
static void test_mp4(const uint8_t *frames) {
    char bin[512], path[512], script[600], args[512];
    tmp_path(bin, "bin");
    CHECK(mkdir(bin, 0755) == 0);
    snprintf(script, sizeof script, "%s/ffmpeg", bin);
    tmp_path(args, "ffmpeg-args");
    char body[1024];
    snprintf(body, sizeof body, "echo \"$@\" > %s\nfor a; do last=$a; done\ncat > \"$last\"",
             args);
    write_script(script, body);
    const char *old_path = getenv("PATH");
    char *saved = strdup(old_path ? old_path : "/usr/bin:/bin");
    char with_bin[4200];
    snprintf(with_bin, sizeof with_bin, "%s:%s", bin, saved); /* the stand-in first */
    setenv("PATH", with_bin, 1);
    tmp_path(path, "a.mp4");
    CHECK_OK(write_video(path, frames, NF, 50));
    struct stat st;
    CHECK(stat(path, &st) == 0);
    CHECK_MSG(st.st_size == (off_t)W * H * 3 * NF, "ffmpeg got %lld bytes, expected %d frames "
              "of %dx%d rgb24", (long long)st.st_size, NF, W, H);
    FILE *f = fopen(path, "rb");
    uint8_t *got = malloc((size_t)st.st_size);
    CHECK(f && got && fread(got, 1, (size_t)st.st_size, f) == (size_t)st.st_size);
    fclose(f);
    CHECK_MSG(!memcmp(got, frames, (size_t)st.st_size), "ffmpeg's stdin is not the frames");
    free(got);
    char line[1024] = "";
    f = fopen(args, "r");
    CHECK(f && fgets(line, sizeof line, f));
    fclose(f);
    CHECK_MSG(strstr(line, "-f rawvideo -pix_fmt rgb24 -s 600x400 -r 50 -i pipe:0") &&
                  strstr(line, "-pix_fmt yuv420p") && strstr(line, "-f mp4"),
              "ffmpeg's arguments: %s", line);
    printf("ok: .mp4 pipes the frames to ffmpeg as rgb24 (%s)", line);

    /* an encoder that fails: an error naming its exit status, nothing left behind */
    write_script(script, "cat > /dev/null; exit 3");
    unlink(path);
    CHECK(write_video(path, frames, NF, 50) == CUDARL_ERR_IO);
    CHECK_MSG(strstr(cudarl_last_error(), "exit status 3"), "%s", cudarl_last_error());
    CHECK(!exists(path) && temp_count() == 0);
    /* one that quits at once: the writes meet a closed pipe (SIGPIPE held back), an error */
    write_script(script, "exit 1");
    CHECK(write_video(path, frames, NF, 50) == CUDARL_ERR_IO);
    CHECK(!exists(path) && temp_count() == 0);
    printf("ok: a failing ffmpeg is an error naming it; no file, no temp file\n");

    setenv("PATH", tmpdir, 1); /* no ffmpeg there */
    CHECK(cr_video_check(path, 50) == CUDARL_ERR_UNSUPPORTED);
    CHECK_MSG(strstr(cudarl_last_error(), "apt-get install ffmpeg"), "%s", cudarl_last_error());
    printf("ok: without ffmpeg on PATH, .mp4 is refused naming the package\n");
    setenv("PATH", saved, 1);
    free(saved);
}

static void expect_refusal(const char *path, int fps, cudarl_status want, const char *needle) {
    cudarl_status s = cr_video_check(path, fps);
    CHECK_MSG(s == want && strstr(cudarl_last_error(), needle), "cr_video_check(%s, %d): %s %s, "
              "expected %s containing '%s'", path, fps, cudarl_status_name(s),
              cudarl_last_error(), cudarl_status_name(want), needle);
}

static void test_refusals(const uint8_t *frames) {
    char path[512], dir[512];
    expect_refusal(tmp_path(path, "a.avi"), 30, CUDARL_ERR_INVALID_ARG, ".gif");
    expect_refusal(tmp_path(path, "noext"), 30, CUDARL_ERR_INVALID_ARG, ".mp4");
    expect_refusal(tmp_path(path, "dir.gif/x"), 30, CUDARL_ERR_INVALID_ARG, ".gif");
#ifdef CUDARL_HAVE_GIF
    expect_refusal(tmp_path(path, "a.gif"), 51, CUDARL_ERR_INVALID_ARG, "write .mp4");
    expect_refusal(tmp_path(path, "a.gif"), 0, CUDARL_ERR_INVALID_ARG, "--fps must be between");
    expect_refusal(tmp_path(path, "missing/a.gif"), 30, CUDARL_ERR_IO, "missing");
    tmp_path(dir, "d.gif");
    CHECK(mkdir(dir, 0755) == 0);
    expect_refusal(dir, 30, CUDARL_ERR_IO, "directory");
    /* no frames: refused at commit, nothing left */
    cr_video *v;
    CHECK_OK(cr_video_open(&v, tmp_path(path, "empty.gif"), W, H, 30));
    CHECK(cr_video_commit(v) != CUDARL_OK);
    CHECK(!exists(path) && temp_count() == 0);
    /* an abort after frames: nothing left */
    CHECK_OK(cr_video_open(&v, path, W, H, 30));
    CHECK_OK(cr_video_add(v, frames));
    cr_video_abort(v);
    CHECK(!exists(path) && temp_count() == 0);
    /* odd sides */
    CHECK(cr_video_open(&v, path, 601, 400, 30) == CUDARL_ERR_INVALID_ARG);
#else
    (void)frames, (void)dir;
#endif
    printf("ok: bad extensions, frame rates, targets, empty and aborted videos are refused\n");
}

/* Which envs can be drawn: the built-ins' sizes; an env registered without a renderer and an
 * unknown id refused naming those that can. */
static void test_render_info(void) {
    int w = 0, h = 0, fps = 0;
    CHECK_OK(cudarl_env_render_info("CartPole-v1", &w, &h, &fps));
    CHECK_MSG(w == 600 && h == 400 && fps == 50, "CartPole-v1: %dx%d at %d fps", w, h, fps);
    CHECK_OK(cudarl_env_render_info("MinAtar/Breakout-v1", &w, &h, &fps));
    CHECK_MSG(w == 320 && h == 320 && fps == 20, "MinAtar: %dx%d at %d fps", w, h, fps);
    cudarl_env_def d = *cudarl_env_find("CartPole-v1");
    d.id = "NoPicture-v0";
    CHECK_OK(cudarl_env_register(&d));
    CHECK(cudarl_env_render_info("NoPicture-v0", NULL, NULL, NULL) == CUDARL_ERR_UNSUPPORTED);
    CHECK_MSG(strstr(cudarl_last_error(), "'NoPicture-v0' cannot be drawn") &&
                  strstr(cudarl_last_error(), "CartPole-v1, CartPolePixels-v1"),
              "%s", cudarl_last_error());
    CHECK(cudarl_env_render_info("Nope-v0", NULL, NULL, NULL) == CUDARL_ERR_INVALID_ARG);
    printf("ok: render info of drawn envs; an env without a renderer and an unknown id refused\n");
}

int main(void) {
    test_render_info();
    snprintf(tmpdir, sizeof tmpdir, "/tmp/cudarl_video_XXXXXX");
    CHECK(mkdtemp(tmpdir));
    uint8_t *frames = make_frames();
    test_gif(frames);
    test_mp4(frames);
    test_refusals(frames);
    free(frames);
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf %s", tmpdir);
    CHECK(system(cmd) == 0);
    printf("all video checks passed\n");
    return 0;
}
