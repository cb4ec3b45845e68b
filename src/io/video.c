/* Videos (video.h): the format by extension, the checks before work, the output file, and MP4
 * through an ffmpeg process fed raw frames on a pipe. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "io/output_file.h"
#include "io/video.h"

extern char **environ;

struct cr_video {
    cr_video_format format;
    int w, h, fps, frames;
    cr_out_file out;
    cr_gif *gif;  /* GIF */
    pid_t ffmpeg; /* MP4: the encoder, -1 once reaped */
    int pipe_fd;  /* MP4: its stdin, -1 once closed */
};

cudarl_status cr_video_format_of(const char *path, cr_video_format *format) {
    const char *dot = path ? strrchr(path, '.') : NULL;
    if (dot && strchr(dot, '/')) dot = NULL; /* a dot in a folder's name */
    if (dot && !strcasecmp(dot, ".gif")) return *format = CR_VIDEO_GIF, CUDARL_OK;
    if (dot && !strcasecmp(dot, ".mp4")) return *format = CR_VIDEO_MP4, CUDARL_OK;
    return cr_fail(CUDARL_ERR_INVALID_ARG, "video '%s': the name must end in .gif (GIF, through "
                   "giflib) or .mp4 (H.264, through ffmpeg), which says the format to write; "
                   "rename it, e.g. %s", path ? path : "(null)", "policy.gif");
}

/* The first executable `ffmpeg` in $PATH into buf (cap bytes); 0, or -1 when there is none. */
static int find_ffmpeg(char *buf, size_t cap) {
    const char *path = getenv("PATH");
    for (const char *p = path; p && *p;) {
        const char *end = strchr(p, ':');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        if (len > 0 && (size_t)snprintf(buf, cap, "%.*s/ffmpeg", (int)len, p) < cap &&
            access(buf, X_OK) == 0)
            return 0;
        p = end ? end + 1 : p + len;
    }
    return -1;
}

static cudarl_status ffmpeg_missing(void) {
    return cr_fail(CUDARL_ERR_UNSUPPORTED, "writing .mp4 needs the ffmpeg program, and there is "
                   "no executable 'ffmpeg' on PATH; install it (Debian/Ubuntu: apt-get install "
                   "ffmpeg) or put it on PATH, or write a .gif instead");
}

cudarl_status cr_video_check(const char *path, int fps) {
    cr_video_format format = CR_VIDEO_GIF;
    CR_TRY(cr_video_format_of(path, &format));
    int max = format == CR_VIDEO_GIF ? CR_VIDEO_GIF_MAX_FPS : CR_VIDEO_MAX_FPS;
    if (fps < 1 || fps > max)
        return cr_fail(CUDARL_ERR_INVALID_ARG, "--fps must be between 1 and %d for %s, got %d%s",
                       max, format == CR_VIDEO_GIF ? "a GIF" : "an MP4", fps,
                       format == CR_VIDEO_GIF && fps > max
                           ? " (a GIF's frame delays are hundredths of a second, and browsers "
                             "play delays below 2/100 s slowed down); lower --fps or write .mp4"
                           : "");
    if (format == CR_VIDEO_GIF) {
        CR_TRY(cr_gif_available());
    } else {
        char ffmpeg[PATH_MAX];
        if (find_ffmpeg(ffmpeg, sizeof ffmpeg) != 0) return ffmpeg_missing();
    }
    return cr_out_check(path, format == CR_VIDEO_GIF ? "GIF video" : "MP4 video");
}

/* Starts ffmpeg reading raw rgb24 frames from a pipe and writing an MP4 to the temp file. */
static cudarl_status ffmpeg_start(cr_video *v) {
    char ffmpeg[PATH_MAX], size[32], rate[16];
    if (find_ffmpeg(ffmpeg, sizeof ffmpeg) != 0) return ffmpeg_missing();
    snprintf(size, sizeof size, "%dx%d", v->w, v->h);
    snprintf(rate, sizeof rate, "%d", v->fps);
    char *argv[] = {"ffmpeg", "-hide_banner", "-loglevel", "error", "-y", "-f", "rawvideo",
                    "-pix_fmt", "rgb24", "-s", size, "-r", rate, "-i", "pipe:0", "-an",
                    "-pix_fmt", "yuv420p", "-movflags", "+faststart", "-f", "mp4", v->out.tmp,
                    NULL};
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) != 0)
        return cr_fail(CUDARL_ERR_IO, "cannot make a pipe to ffmpeg: %s", strerror(errno));
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, fds[0], 0); /* dup2 clears O_CLOEXEC */
    int rc = posix_spawn(&v->ffmpeg, ffmpeg, &actions, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&actions);
    close(fds[0]);
    if (rc != 0) {
        close(fds[1]);
        v->ffmpeg = -1;
        return cr_fail(CUDARL_ERR_IO, "cannot start %s: %s", ffmpeg, strerror(rc));
    }
    v->pipe_fd = fds[1];
    return CUDARL_OK;
}

/* Writes bytes[0, n) to ffmpeg's stdin. SIGPIPE (ffmpeg gone) is held back for this thread and
 * taken back if raised, so that a failed encoder is an error, not the end of the process. */
static cudarl_status ffmpeg_write(cr_video *v, const uint8_t *bytes, size_t n) {
    sigset_t pipe_set, old;
    sigemptyset(&pipe_set);
    sigaddset(&pipe_set, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &pipe_set, &old);
    int err = 0;
    while (n > 0 && !err) {
        ssize_t k = write(v->pipe_fd, bytes, n);
        if (k < 0 && errno != EINTR) err = errno;
        if (k > 0) bytes += k, n -= (size_t)k;
    }
    if (err == EPIPE) {
        struct timespec zero = {0, 0};
        sigtimedwait(&pipe_set, NULL, &zero); /* the pending SIGPIPE */
    }
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (err)
        return cr_fail(CUDARL_ERR_IO, "ffmpeg stopped taking frames (%s) after %d of them; its "
                       "messages, above, say why", strerror(err), v->frames);
    return CUDARL_OK;
}

/* Closes ffmpeg's stdin and waits for it: CUDARL_OK when it exited 0. */
static cudarl_status ffmpeg_finish(cr_video *v) {
    if (v->pipe_fd >= 0) close(v->pipe_fd), v->pipe_fd = -1;
    if (v->ffmpeg < 0) return CUDARL_OK;
    int status = 0;
    pid_t r;
    while ((r = waitpid(v->ffmpeg, &status, 0)) < 0 && errno == EINTR) {
    }
    v->ffmpeg = -1;
    if (r < 0) return cr_fail(CUDARL_ERR_IO, "cannot wait for ffmpeg: %s", strerror(errno));
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return CUDARL_OK;
    if (WIFEXITED(status))
        return cr_fail(CUDARL_ERR_IO, "ffmpeg failed (exit status %d) writing the MP4; its "
                       "messages, above, say why", WEXITSTATUS(status));
    return cr_fail(CUDARL_ERR_IO, "ffmpeg was ended by signal %d writing the MP4",
                   WTERMSIG(status));
}

cudarl_status cr_video_open(cr_video **out, const char *path, int width, int height, int fps) {
    *out = NULL;
    CR_REQUIRE(width >= 2 && height >= 2 && width <= CR_VIDEO_MAX_SIDE &&
                   height <= CR_VIDEO_MAX_SIDE && width % 2 == 0 && height % 2 == 0,
               "a video's frames must have even sides of 2 to %d pixels, got %dx%d",
               CR_VIDEO_MAX_SIDE, width, height);
    CR_TRY(cr_video_check(path, fps));
    cr_video *v = calloc(1, sizeof *v);
    if (!v) return cr_fail(CUDARL_ERR_OUT_OF_MEMORY, "out of host memory for a video");
    cr_video_format_of(path, &v->format);
    v->w = width, v->h = height, v->fps = fps, v->ffmpeg = -1, v->pipe_fd = -1;
    cudarl_status s = cr_out_open(&v->out, path,
                                  v->format == CR_VIDEO_GIF ? "GIF video" : "MP4 video");
    if (s != CUDARL_OK) {
        free(v);
        return s;
    }
    s = v->format == CR_VIDEO_GIF ? cr_gif_open(&v->gif, v->out.f, width, height, fps)
                                  : ffmpeg_start(v);
    if (s != CUDARL_OK) {
        cr_out_abort(&v->out);
        free(v);
        return s;
    }
    *out = v;
    return CUDARL_OK;
}

cudarl_status cr_video_add(cr_video *v, const uint8_t *rgb) {
    if (v->format == CR_VIDEO_GIF) CR_TRY(cr_gif_add(v->gif, rgb));
    else CR_TRY(ffmpeg_write(v, rgb, (size_t)v->w * (size_t)v->h * 3));
    v->frames++;
    return CUDARL_OK;
}

int cr_video_frames(const cr_video *v) { return v->frames; }

cudarl_status cr_video_commit(cr_video *v) {
    cudarl_status s = v->frames > 0 ? CUDARL_OK
                                    : cr_fail(CUDARL_ERR_INVALID_ARG, "a video needs at least "
                                              "one frame; none was added");
    if (v->format == CR_VIDEO_GIF) {
        cudarl_status c = cr_gif_close(v->gif, s == CUDARL_OK);
        if (s == CUDARL_OK) s = c;
    } else {
        cudarl_status c = ffmpeg_finish(v);
        if (s == CUDARL_OK) s = c;
    }
    if (s == CUDARL_OK) s = cr_out_commit(&v->out);
    else cr_out_abort(&v->out);
    free(v);
    return s;
}

void cr_video_abort(cr_video *v) {
    if (!v) return;
    if (v->format == CR_VIDEO_GIF) {
        cr_gif_close(v->gif, 0);
    } else {
        if (v->pipe_fd >= 0) close(v->pipe_fd);
        if (v->ffmpeg > 0) { /* our own child: stop it rather than let it finish a file */
            kill(v->ffmpeg, SIGTERM);
            while (waitpid(v->ffmpeg, NULL, 0) < 0 && errno == EINTR) {
            }
        }
    }
    cr_out_abort(&v->out);
    free(v);
}
