/* tests/cli/test_npy.c - unit test of tools/npy.c on hand-crafted buffers: every accepted
 * and rejected header form, truncations, overflow, random mutations, and the atomic writer. */
#include <dirent.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/wait.h>
#include <unistd.h>

#include "npy.h"

static int failures;
#define CHECK(c, ...)                                                   \
    do {                                                                \
        if (!(c)) {                                                     \
            failures++;                                                 \
            fprintf(stderr, "%s:%d: CHECK(%s) failed: ", __FILE__, __LINE__, #c); \
            fprintf(stderr, __VA_ARGS__);                               \
            fputc('\n', stderr);                                        \
        }                                                               \
    } while (0)

/* A .npy image built by hand: preamble, dict text padded to `align`, data. */
static size_t craft(unsigned char *buf, size_t cap, int major, const char *dict, size_t align, const void *data,
                    size_t nbytes) {
    size_t pre = major == 1 ? 10 : 12, dl = strlen(dict);
    size_t total = (pre + dl + 1 + align - 1) / align * align;
    if (total + nbytes > cap) abort();
    size_t hlen = total - pre;
    memcpy(buf, "\x93NUMPY", 6);
    buf[6] = (unsigned char)major;
    buf[7] = 0;
    buf[8] = (unsigned char)(hlen & 0xff);
    buf[9] = (unsigned char)(hlen >> 8);
    if (major != 1) {
        buf[10] = (unsigned char)(hlen >> 16);
        buf[11] = (unsigned char)(hlen >> 24);
    }
    memcpy(buf + pre, dict, dl);
    memset(buf + pre + dl, ' ', total - 1 - pre - dl);
    buf[total - 1] = '\n';
    if (nbytes) memcpy(buf + total, data, nbytes);
    return total + nbytes;
}

static unsigned char g_buf[1 << 16];

/* Parses a crafted image; expect_ok says whether it must be accepted, and
 * `why` (if given) must appear in the rejection message. */
static void expect(int line, int major, const char *dict, size_t align, size_t nbytes, int expect_ok,
                   const char *why) {
    static unsigned char data[4096];
    for (size_t i = 0; i < sizeof data; i++) data[i] = (unsigned char)(i * 37 + 11);
    size_t n = craft(g_buf, sizeof g_buf, major, dict, align, data, nbytes);
    /* Copy into an exact-size heap block so ASan catches any read past the end. */
    unsigned char *exact = malloc(n ? n : 1);
    memcpy(exact, g_buf, n);
    mf_npy a;
    char err[256] = "";
    int rc = mf_npy_parse(exact, n, &a, err, sizeof err);
    if (expect_ok)
        CHECK(rc == 0, "line %d: %s rejected: %s", line, dict, err);
    else
        CHECK(rc != 0, "line %d: %s accepted", line, dict);
    if (!expect_ok && rc != 0 && why) CHECK(strstr(err, why) != NULL, "line %d: message '%s' lacks '%s'", line, err, why);
    if (!expect_ok) CHECK(strlen(err) > 0 && !strchr(err, '\n'), "line %d: message must be one non-empty line", line);
    free(exact);
}

#define OK(major, dict, nbytes) expect(__LINE__, major, dict, 64, nbytes, 1, NULL)
#define BAD(major, dict, nbytes, why) expect(__LINE__, major, dict, 64, nbytes, 0, why)

static void test_headers(void) {
    OK(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), }", 48);
    OK(2, "{'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), }", 48);
    OK(3, "{'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), }", 48);
    OK(1, "{'descr': '<f2', 'fortran_order': False, 'shape': (5,), }", 10);
    OK(1, "{'descr': '<i4', 'fortran_order': False, 'shape': (), }", 4); /* scalar */
    OK(1, "{'descr': '<u2', 'fortran_order': False, 'shape': (0, 7), }", 0);
    OK(1, "{'descr': '<i8', 'fortran_order': False, 'shape': (3,), }", 24); /* int64 group lists */
    OK(1, "{'descr': '|i1', 'fortran_order': False, 'shape': (2, 3), }", 6); /* int8 tokens */
    OK(1, "{\"shape\": (2,), \"descr\": \"<i4\", \"fortran_order\": False}", 8); /* any key order, no trailing comma */
    OK(1, "{'descr':'<f4','fortran_order':False,'shape':(1,2,3,4,5,1,1,1,)}", 480);
    expect(__LINE__, 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (3,), }", 16, 12, 1, NULL);

    BAD(1, "{'descr': '>f4', 'fortran_order': False, 'shape': (3,), }", 12, "big-endian");
    BAD(1, "{'descr': '<f8', 'fortran_order': False, 'shape': (3,), }", 24, "unsupported dtype");
    BAD(1, "{'descr': '|u1', 'fortran_order': False, 'shape': (3,), }", 3, "unsupported dtype");
    BAD(1, "{'descr': '|i1', 'fortran_order': False, 'shape': (3,), }", 4, "data");   /* a byte too many */
    BAD(1, "{'descr': '<i1', 'fortran_order': False, 'shape': (3,), }", 3, "unsupported dtype");
    BAD(1, "{'descr': '<u8', 'fortran_order': False, 'shape': (3,), }", 24, "unsupported dtype");
    BAD(1, "{'descr': '>i8', 'fortran_order': False, 'shape': (3,), }", 24, "big-endian");
    BAD(1, "{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (3,), }", 12, "structured");
    BAD(1, "{'descr': '<f4', 'fortran_order': True, 'shape': (3,), }", 12, "fortran_order");
    BAD(1, "{'descr': '<f4', 'fortran_order': 0, 'shape': (3,), }", 12, "fortran_order");
    BAD(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (3), }", 12, "trailing comma");
    BAD(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (3,,), }", 12, "malformed");
    BAD(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (-3,), }", 12, "non-negative");
    BAD(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (03,), }", 12, "leading zero");
    BAD(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (3L,), }", 12, "malformed");
    BAD(1, "{'descr': '<f4', 'fortran_order': False, 'shape': [3], }", 12, "malformed");
    BAD(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (9223372036854775808,), }", 12, "overflows");
    BAD(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (4294967296, 4294967296), }", 12, "overflows");
    BAD(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (9223372036854775807,), }", 12, "truncated");
    BAD(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (1,1,1,1,1,1,1,1,1), }", 4, "more than 8");
    BAD(1, "{'descr': '<f4', 'fortran_order': False, }", 12, "missing key 'shape'");
    BAD(1, "{'fortran_order': False, 'shape': (3,), }", 12, "missing key 'descr'");
    BAD(1, "{'descr': '<f4', 'shape': (3,), }", 12, "missing key 'fortran_order'");
    BAD(1, "{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': (3,), }", 12, "twice");
    BAD(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (3,), 'extra': 1, }", 12, "unexpected key");
    BAD(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (3,), } x", 12, "after the dictionary");
    BAD(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (3,) ", 12, "expected");
    BAD(1, "{'descr': '<f4\\n', 'fortran_order': False, 'shape': (3,), }", 12, "escapes");
    BAD(1, "{'descr': '<f4, 'fortran_order': False, 'shape': (3,), }", 12, "");
    BAD(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (3,), }\t", 12, "unexpected byte");
    BAD(3, "{'descr': '<f4', 'fortran_order': False, 'shape': (3,), '\xc3\xa9': 1}", 12, "unexpected byte");
    BAD(1, "", 0, "");
    /* data length must match the shape exactly */
    BAD(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), }", 47, "truncated");
    BAD(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), }", 49, "trailing");
    BAD(1, "{'descr': '<f2', 'fortran_order': False, 'shape': (0,), }", 2, "trailing");
    /* padding: not a multiple of 16 */
    expect(__LINE__, 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (3,), }", 8, 12, 0, "multiple of 16");
}

static void test_preamble(void) {
    unsigned char b[256];
    size_t n = craft(b, sizeof b, 1, "{'descr': '<i4', 'fortran_order': False, 'shape': (2,), }", 64, "\1\0\0\0\2\0\0\0",
                     8);
    mf_npy a;
    char err[256];
    const size_t nb = n;
    CHECK(mf_npy_parse(b, n, &a, err, sizeof err) == 0, "%s", err);
    CHECK(a.major == 1 && a.dtype == MF_NPY_I4 && a.ndim == 1 && a.dims[0] == 2 && a.numel == 2 && a.nbytes == 8,
          "fields");
    CHECK(((const int32_t *)a.data)[1] == 2, "data pointer");
    /* every strict prefix is rejected, never read past */
    for (size_t cut = 0; cut < n; cut++) {
        unsigned char *p = malloc(cut ? cut : 1);
        memcpy(p, b, cut);
        CHECK(mf_npy_parse(p, cut, &a, err, sizeof err) != 0, "prefix %zu accepted", cut);
        free(p);
    }
    unsigned char c[256];
    memcpy(c, b, n);
    c[6] = 4;
    CHECK(mf_npy_parse(c, n, &a, err, sizeof err) != 0 && strstr(err, "version 4.0"), "version 4: %s", err);
    memcpy(c, b, n);
    c[7] = 1;
    CHECK(mf_npy_parse(c, n, &a, err, sizeof err) != 0 && strstr(err, "version 1.1"), "version 1.1: %s", err);
    memcpy(c, b, n);
    c[1] = 'n';
    CHECK(mf_npy_parse(c, n, &a, err, sizeof err) != 0 && strstr(err, "magic"), "magic: %s", err);
    memcpy(c, b, n);
    c[8] = 0xff;
    c[9] = 0xff;
    CHECK(mf_npy_parse(c, n, &a, err, sizeof err) != 0 && strstr(err, "runs past"), "hlen: %s", err);
    memcpy(c, b, n);
    c[9] = 0;
    c[8] = 0; /* header length 0 */
    CHECK(mf_npy_parse(c, n, &a, err, sizeof err) != 0, "hlen 0 accepted");
    /* a version 2 header length of 4 GiB-1 against a small buffer */
    n = craft(c, sizeof c, 2, "{'descr': '<i4', 'fortran_order': False, 'shape': (2,), }", 64, "\1\0\0\0\2\0\0\0", 8);
    c[8] = c[9] = c[10] = c[11] = 0xff;
    CHECK(mf_npy_parse(c, n, &a, err, sizeof err) != 0 && strstr(err, "runs past"), "v2 hlen: %s", err);
    CHECK(mf_npy_parse(NULL, 0, &a, err, sizeof err) != 0, "NULL buffer accepted");
    CHECK(mf_npy_parse(b, nb, &a, NULL, 0) == 0, "NULL err must be allowed");
    CHECK(mf_npy_parse(c, n, &a, NULL, 0) != 0, "NULL err on a bad file");
}

static uint64_t rng_state;
static uint64_t rnd(void) {
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}

/* format_header -> parse round trip for random shapes, and random byte
 * mutations of valid files (must never crash; checked under ASan builds). */
static void test_roundtrip_and_mutations(void) {
    static unsigned char img[8192];
    for (int iter = 0; iter < 2000; iter++) {
        mf_npy_dtype dt = (mf_npy_dtype)(rnd() % 5);
        int nd = (int)(rnd() % (MF_NPY_MAX_DIMS + 1));
        int64_t dims[MF_NPY_MAX_DIMS], numel = 1;
        for (int i = 0; i < nd; i++) {
            dims[i] = (int64_t)(rnd() % (numel > 64 ? 2 : 5));
            numel *= dims[i];
        }
        size_t item = mf_npy_itemsize(dt), nbytes = (size_t)numel * item;
        size_t hn = mf_npy_format_header(dt, nd, dims, (char *)img, sizeof img);
        CHECK(hn > 0 && hn % 64 == 0 && hn + nbytes <= sizeof img, "format_header %zu", hn);
        if (!hn) continue;
        for (size_t i = 0; i < nbytes; i++) img[hn + i] = (unsigned char)rnd();
        size_t n = hn + nbytes;
        mf_npy a;
        char err[256];
        CHECK(mf_npy_parse(img, n, &a, err, sizeof err) == 0, "round trip rejected: %s", err);
        CHECK(a.dtype == dt && a.ndim == nd && a.numel == numel && a.data == img + hn, "round trip fields");
        for (int i = 0; i < nd; i++) CHECK(a.dims[i] == dims[i], "dim %d", i);
        /* mutate 1-4 bytes (mostly in the header), maybe cut or extend */
        unsigned char *m = malloc(n + 8);
        memcpy(m, img, n);
        size_t mn = n;
        int muts = 1 + (int)(rnd() % 4);
        for (int k = 0; k < muts; k++) {
            size_t at = rnd() % (rnd() % 2 ? (hn < n ? hn : n) : n);
            m[at] = (unsigned char)rnd();
        }
        if (rnd() % 4 == 0) mn = rnd() % (n + 1);
        unsigned char *exact = malloc(mn ? mn : 1);
        memcpy(exact, m, mn);
        if (mf_npy_parse(exact, mn, &a, err, sizeof err) == 0) {
            /* if accepted, the view must lie inside the buffer and match the shape */
            CHECK((const unsigned char *)a.data >= exact && (const unsigned char *)a.data + a.nbytes == exact + mn,
                  "accepted mutation with data outside the buffer");
            CHECK(a.nbytes == (size_t)a.numel * a.itemsize, "nbytes");
        }
        free(exact);
        free(m);
    }
}

static int count_entries(const char *dir) {
    DIR *d = opendir(dir);
    if (!d) return -1;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)))
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) n++;
    closedir(d);
    return n;
}

static void test_files(void) {
    char dir[] = "/tmp/moefr_test_npy_XXXXXX";
    if (!mkdtemp(dir)) {
        CHECK(0, "mkdtemp");
        return;
    }
    char path[256], path2[256], err[512];
    snprintf(path, sizeof path, "%s/a.npy", dir);
    snprintf(path2, sizeof path2, "%s/b.npy", dir);
    float v[6] = {1, 2, 3, 4, 5, 6.5f};
    int64_t dims[2] = {2, 3};
    CHECK(mf_npy_save(path, MF_NPY_F4, 2, dims, v, err, sizeof err) == 0, "save: %s", err);
    mf_npy a;
    void *owner;
    CHECK(mf_npy_load(path, &a, &owner, err, sizeof err) == 0, "load: %s", err);
    if (owner) {
        CHECK(a.ndim == 2 && a.dims[1] == 3 && memcmp(a.data, v, sizeof v) == 0, "load contents");
        free(owner);
    }
    CHECK(count_entries(dir) == 1, "temporary file left behind");
    /* pending writes: nothing visible under the final name until commit, nothing left after discard */
    mf_npy_pending p;
    CHECK(mf_npy_write_pending(path2, MF_NPY_I4, 1, dims, v, &p, err, sizeof err) == 0, "pending: %s", err);
    CHECK(access(path2, F_OK) != 0, "final name exists before commit");
    CHECK(count_entries(dir) == 2, "temporary file not in the target directory");
    mf_npy_discard(&p);
    CHECK(count_entries(dir) == 1 && access(path2, F_OK) != 0, "discard left something");
    CHECK(mf_npy_write_pending(path2, MF_NPY_I4, 1, dims, v, &p, err, sizeof err) == 0, "pending: %s", err);
    CHECK(mf_npy_commit(&p, err, sizeof err) == 0 && access(path2, F_OK) == 0, "commit: %s", err);
    mf_npy_discard(&p);
    CHECK(count_entries(dir) == 2, "after commit");
    /* errors name the file */
    char missing[300];
    snprintf(missing, sizeof missing, "%s/missing.npy", dir);
    CHECK(mf_npy_load(missing, &a, &owner, err, sizeof err) != 0 && strstr(err, missing), "missing: %s", err);
    CHECK(mf_npy_load(dir, &a, &owner, err, sizeof err) != 0 && strstr(err, dir), "directory: %s", err);
    char nodir[300];
    snprintf(nodir, sizeof nodir, "%s/no/such/dir/x.npy", dir);
    CHECK(mf_npy_save(nodir, MF_NPY_F4, 2, dims, v, err, sizeof err) != 0 && strstr(err, nodir), "no dir: %s", err);
    /* a run killed while its outputs are pending leaves no temporary file */
    unlink(path);
    unlink(path2);
    pid_t pid = fork();
    if (pid == 0) {
        mf_npy_remove_temporaries_on_signals();
        mf_npy_pending q[2];
        if (mf_npy_write_pending(path, MF_NPY_F4, 2, dims, v, &q[0], err, sizeof err) ||
            mf_npy_write_pending(path2, MF_NPY_F4, 2, dims, v, &q[1], err, sizeof err) || count_entries(dir) != 2)
            _exit(3);
        raise(SIGTERM);
        _exit(4);
    }
    int status = 0;
    CHECK(pid > 0 && waitpid(pid, &status, 0) == pid, "fork/wait");
    CHECK(WIFSIGNALED(status) && WTERMSIG(status) == SIGTERM, "child did not die of SIGTERM (status %d)", status);
    CHECK(count_entries(dir) == 0, "killed writer left %d file(s)", count_entries(dir));
    CHECK(rmdir(dir) == 0, "stray files in %s", dir);
}

int main(void) {
    const char *s = getenv("MOEFR_TEST_SEED");
    rng_state = s ? strtoull(s, NULL, 10) : (uint64_t)time(NULL) ^ (uint64_t)getpid() << 20;
    if (!rng_state) rng_state = 1;
    printf("test_npy: seed %llu (MOEFR_TEST_SEED replays)\n", (unsigned long long)rng_state);
    test_headers();
    test_preamble();
    test_roundtrip_and_mutations();
    test_files();
    if (failures) {
        printf("test_npy: %d failure(s)\n", failures);
        return 1;
    }
    printf("test_npy: ok\n");
    return 0;
}
