/* tools/npy.h - a small, strict NumPy .npy reader and writer for the moefr CLI.
 * Accepts format 1.0/2.0/3.0, little-endian, C order, dtypes <f2 <f4 <i4 <u2 <i8 |i1 only. */
#ifndef MOEFR_TOOLS_NPY_H_
#define MOEFR_TOOLS_NPY_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* aclTensor takes at most 8 dimensions, so a file with more is of no use here. */
#define MF_NPY_MAX_DIMS 8

typedef enum {
    MF_NPY_F2 = 0, /* '<f2' IEEE half */
    MF_NPY_F4 = 1, /* '<f4' IEEE single */
    MF_NPY_I4 = 2, /* '<i4' int32 */
    MF_NPY_U2 = 3, /* '<u2' uint16; the CLI reads it as bfloat16 bits under --dtype bf16 */
    MF_NPY_I8 = 4, /* '<i8' int64; the CLI takes it only where an operator wants INT64 (group lists) */
    MF_NPY_I1 = 5  /* '|i1' int8: quantised outputs, and int8 tokens (init-routing-v3 -1, re-routing) */
} mf_npy_dtype;

/* A parsed array. `data` points into the caller's buffer (the parser never
 * allocates), so it lives as long as that buffer does. */
typedef struct {
    int major, minor;          /* format version found in the file */
    mf_npy_dtype dtype;
    int ndim;                  /* 0 for a scalar */
    int64_t dims[MF_NPY_MAX_DIMS];
    int64_t numel;             /* product of dims (1 for a scalar) */
    size_t itemsize;           /* 1, 2, 4 or 8 */
    const void *data;          /* numel * itemsize bytes, possibly unaligned */
    size_t nbytes;
} mf_npy;

/* Parses a whole .npy image held in memory. Returns 0 on success; otherwise
 * -1 with a one-line reason in err (which may be NULL). Never reads outside
 * [buf, buf+len), never allocates, and accepts only a file whose data length
 * matches its shape exactly (truncated or trailing bytes are errors). */
int mf_npy_parse(const void *buf, size_t len, mf_npy *out, char *err, size_t errlen);

/* Item size of a dtype, and its descr string ("<f4", ...). */
size_t mf_npy_itemsize(mf_npy_dtype dt);
const char *mf_npy_descr(mf_npy_dtype dt);

/* Builds the preamble (magic, version, header length, header dict, padding) for
 * an array into hdr[cap]; returns its length, or 0 if cap is too small or the
 * arguments are invalid. Uses format 1.0 unless the header needs 2.0. */
size_t mf_npy_format_header(mf_npy_dtype dt, int ndim, const int64_t *dims, char *hdr, size_t cap);

/* Reads a whole file into a malloc'd buffer and parses it. On success *owner
 * holds the buffer (free() it when done with out->data). Returns 0, or -1 with
 * a reason in err that names the file. */
int mf_npy_load(const char *path, mf_npy *out, void **owner, char *err, size_t errlen);

/* A file written under a temporary name in its target directory, waiting to be
 * renamed into place: several outputs can be committed together only after
 * every one of them was written successfully. */
typedef struct {
    char *final_path;
    char *tmp_path; /* points into a static table while the file is pending */
    int slot;
} mf_npy_pending;

/* Writes the array to a fresh temporary file next to `path`. Returns 0, or -1
 * with a reason in err (nothing is left behind on failure). At most 8 files
 * may be pending at once; not thread-safe (one writer thread per process). */
int mf_npy_write_pending(const char *path, mf_npy_dtype dt, int ndim, const int64_t *dims,
                         const void *data, mf_npy_pending *p, char *err, size_t errlen);
/* Renames the temporary file to its final name. Returns 0 or -1 (err set). */
int mf_npy_commit(mf_npy_pending *p, char *err, size_t errlen);
/* Removes the temporary file (if still there) and frees the names. Safe to call
 * twice and after commit. */
void mf_npy_discard(mf_npy_pending *p);

/* Installs handlers for SIGINT, SIGTERM, SIGHUP, SIGQUIT and SIGPIPE that
 * delete the pending temporary files, then die of the same signal. */
void mf_npy_remove_temporaries_on_signals(void);

/* write_pending + commit. */
int mf_npy_save(const char *path, mf_npy_dtype dt, int ndim, const int64_t *dims, const void *data,
                char *err, size_t errlen);

#ifdef __cplusplus
}
#endif

#endif /* MOEFR_TOOLS_NPY_H_ */
