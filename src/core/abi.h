/* The public structs a caller fills (cudarl.h, "Structs a caller fills"): each begins with
 * size_t struct_size, and its table here holds the size it has in this build and the sizes the
 * earlier headers of this ABI version gave it. A public function reads a caller's struct through
 * cr_struct_read into a struct of this build's size that holds the defaults, so that a program
 * built against an earlier header keeps working after a field is added at the end. */
#ifndef CUDARL_CORE_ABI_H
#define CUDARL_CORE_ABI_H

#include <stddef.h>

#include "cudarl.h"

#define CR_STRUCT_OLDER_MAX 8

typedef struct cr_struct_abi {
    const char *type; /* "cudarl_ppo_config" */
    const char *fill; /* what sets struct_size, "cudarl_ppo_config_default()"; NULL: the caller */
    size_t size;      /* sizeof in this build */
    /* The sizes earlier headers of CUDARL_ABI_VERSION gave it, ascending, 0 after the last.
     * A field added at the end adds the struct's size before it here: CR_SIZE_BEFORE(T, f)
     * with f the first new field (the test of tests/unit/test_abi.c checks that each is below
     * the size after it, i.e. that the new field did not sit in the old tail padding). */
    size_t older[CR_STRUCT_OLDER_MAX];
} cr_struct_abi;

/* The size struct T had before its field f was added: f's offset rounded up to T's alignment
 * (every such struct begins with a size_t, so its alignment does not change). */
#define CR_SIZE_BEFORE(T, f) \
    ((offsetof(T, f) + _Alignof(T) - 1) / _Alignof(T) * _Alignof(T))

extern const cr_struct_abi cr_abi_env_def, cr_abi_ppo_config, cr_abi_dqn_config,
    cr_abi_replay_request, cr_abi_onnx_options, cr_abi_policy_options, cr_abi_video_options,
    cr_abi_camera, cr_abi_frames_options;
/* Every table above, NULL-terminated (for the test). */
extern const cr_struct_abi *const cr_struct_abis[];

/* Whether `struct_size` is one `abi` reads: CUDARL_OK for this build's size or an earlier one;
 * else CUDARL_ERR_INVALID_ARG with a message that names `where` (the public function), the
 * struct, what is wrong (0: unset; larger than this build's: a newer cudarl.h; any other size:
 * no header had it) and the fix. */
cudarl_status cr_struct_check(const cr_struct_abi *abi, size_t struct_size, const char *where);

/* The caller's struct `src` (its first member is struct_size) over `full`, which holds this
 * build's defaults: checks src's struct_size (cr_struct_check), copies that many bytes and sets
 * full's struct_size to this build's size. A NULL src is CUDARL_ERR_INVALID_ARG. */
cudarl_status cr_struct_read(const cr_struct_abi *abi, void *full, const void *src,
                             const char *where);

/* Writes the first `struct_size` bytes of `full` (a struct of this build's size) to the caller's
 * `dst` and sets dst's struct_size to struct_size, which cr_struct_check accepted. */
void cr_struct_write(void *dst, const void *full, size_t struct_size);

#endif
