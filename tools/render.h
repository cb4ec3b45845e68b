/* cudarl render: an env's pixel observations under a random policy, written as PNG files. */
#ifndef CUDARL_RENDER_H
#define CUDARL_RENDER_H

/* Runs `cudarl render` on its arguments (after the word "render"); returns the exit code: 0 done,
 * 1 failed (or built without libpng), 2 bad usage. */
int cudarl_cmd_render(int argc, char **argv);

#endif
