/* TensorBoard event files: CRC-32C known answers, and a file for tests/unit/tensorboard_check.py
 * (TensorBoard's own reader) to read back: test_tensorboard --write DIR. */
#define _DEFAULT_SOURCE
#include <dirent.h>
#include <math.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "io/tensorboard.h"

static void test_crc32c(void) {
    /* RFC 3720 (iSCSI) B.4 test vectors for CRC-32C */
    uint8_t zeros[32] = {0}, ones[32], inc[32];
    memset(ones, 0xff, sizeof ones);
    for (int i = 0; i < 32; i++) inc[i] = (uint8_t)i;
    CHECK_MSG(cr_crc32c(zeros, 32) == 0x8a9136aau, "zeros: %08x", cr_crc32c(zeros, 32));
    CHECK_MSG(cr_crc32c(ones, 32) == 0x62a8ab43u, "ones: %08x", cr_crc32c(ones, 32));
    CHECK_MSG(cr_crc32c(inc, 32) == 0x46dd794eu, "incrementing: %08x", cr_crc32c(inc, 32));
    CHECK(cr_crc32c("123456789", 9) == 0xe3069283u);
}

int main(int argc, char **argv) {
    test_crc32c();
    if (argc == 3 && !strcmp(argv[1], "--write")) {
        mkdir(argv[2], 0755); /* a fresh folder: earlier event files would be read too */
        DIR *d = opendir(argv[2]);
        CHECK_MSG(d != NULL, "cannot open %s", argv[2]);
        for (struct dirent *e; (e = readdir(d));)
            if (!strncmp(e->d_name, "events.out.tfevents.", 20)) {
                char p[1024];
                snprintf(p, sizeof p, "%s/%s", argv[2], e->d_name);
                unlink(p);
            }
        closedir(d);
        cr_tb_writer w;
        CHECK_OK(cr_tb_open(&w, argv[2]));
        const char *tags[3] = {"charts/episodic_return", "losses/value_loss", "charts/SPS"};
        for (int step = 1; step <= 5; step++) {
            double v[3] = {10.0 * step, step == 3 ? NAN : 1.0 / step, 1000.0 * step};
            CHECK_OK(cr_tb_scalars(&w, 100 * step, tags, v, 3));
        }
        cr_tb_close(&w);
        printf("wrote %s\n", w.path);
    }
    printf("test_tensorboard: ok\n");
    return 0;
}
