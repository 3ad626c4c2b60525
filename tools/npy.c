/* tools/npy.c - strict .npy parsing (pure, in-memory, fuzzable) and atomic
 * writing (temporary file in the target directory, renamed on commit). */
#include "npy.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "the .npy reader hands file bytes to the operator as-is and needs a little-endian host"
#endif

static const char MAGIC[6] = {'\x93', 'N', 'U', 'M', 'P', 'Y'};
/* NumPy has aligned the data to 64 bytes since 1.14 and to 16 before; every
 * real writer meets 16, so anything else is a damaged or hand-made file. */
#define MF_NPY_MIN_ALIGN 16
#define MF_NPY_WRITE_ALIGN 64

static void seterr(char *err, size_t errlen, const char *fmt, ...) {
    if (!err || errlen == 0) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
}

size_t mf_npy_itemsize(mf_npy_dtype dt) {
    switch (dt) {
    case MF_NPY_F2: return 2;
    case MF_NPY_F4: return 4;
    case MF_NPY_I4: return 4;
    case MF_NPY_U2: return 2;
    case MF_NPY_I8: return 8;
    case MF_NPY_I1: return 1;
    }
    return 0;
}

const char *mf_npy_descr(mf_npy_dtype dt) {
    switch (dt) {
    case MF_NPY_F2: return "<f2";
    case MF_NPY_F4: return "<f4";
    case MF_NPY_I4: return "<i4";
    case MF_NPY_U2: return "<u2";
    case MF_NPY_I8: return "<i8";
    case MF_NPY_I1: return "|i1";
    }
    return "?";
}

/* ---- header dictionary: a tiny subset of Python literal syntax ---- */

typedef struct {
    const char *p, *end;
    char *err;
    size_t errlen;
} mf_cursor;

static void skip_ws(mf_cursor *c) {
    while (c->p < c->end && *c->p == ' ') c->p++;
}

static int expect(mf_cursor *c, char ch, const char *what) {
    skip_ws(c);
    if (c->p >= c->end || *c->p != ch) {
        seterr(c->err, c->errlen, "malformed header: expected '%c' %s", ch, what);
        return -1;
    }
    c->p++;
    return 0;
}

/* A quoted string without escapes (no key or descr we accept needs one). */
static int parse_str(mf_cursor *c, const char **s, size_t *n) {
    skip_ws(c);
    if (c->p >= c->end || (*c->p != '\'' && *c->p != '"')) {
        seterr(c->err, c->errlen, "malformed header: expected a quoted string");
        return -1;
    }
    char q = *c->p++;
    const char *start = c->p;
    while (c->p < c->end && *c->p != q) {
        if (*c->p == '\\') {
            seterr(c->err, c->errlen, "malformed header: escapes in strings are not supported");
            return -1;
        }
        c->p++;
    }
    if (c->p >= c->end) {
        seterr(c->err, c->errlen, "malformed header: unterminated string");
        return -1;
    }
    *s = start;
    *n = (size_t)(c->p - start);
    c->p++;
    return 0;
}

static int str_is(const char *s, size_t n, const char *lit) {
    return strlen(lit) == n && memcmp(s, lit, n) == 0;
}

static int parse_descr(mf_cursor *c, mf_npy_dtype *dt) {
    skip_ws(c);
    if (c->p < c->end && (*c->p == '[' || *c->p == '(')) {
        seterr(c->err, c->errlen, "unsupported dtype: structured arrays are not supported");
        return -1;
    }
    const char *s;
    size_t n;
    if (parse_str(c, &s, &n)) return -1;
    static const struct { const char *descr; mf_npy_dtype dt; } known[] = {
        {"<f2", MF_NPY_F2}, {"<f4", MF_NPY_F4}, {"<i4", MF_NPY_I4}, {"<u2", MF_NPY_U2}, {"<i8", MF_NPY_I8},
        {"|i1", MF_NPY_I1}}; /* NumPy writes int8 as '|i1' (no byte order) */
    for (size_t i = 0; i < sizeof known / sizeof known[0]; i++)
        if (str_is(s, n, known[i].descr)) {
            *dt = known[i].dt;
            return 0;
        }
    int shown = n > 16 ? 16 : (int)n;
    if (n > 0 && s[0] == '>')
        seterr(c->err, c->errlen, "big-endian data (descr '%.*s') is not supported; use '<' (little-endian)",
               shown, s);
    else
        seterr(c->err, c->errlen, "unsupported dtype '%.*s%s' (expected <f2, <f4, <i4, <u2, <i8 or |i1)", shown, s,
               n > 16 ? "..." : "");
    return -1;
}

static int parse_bool(mf_cursor *c, int *v) {
    skip_ws(c);
    size_t left = (size_t)(c->end - c->p);
    if (left >= 4 && memcmp(c->p, "True", 4) == 0) {
        *v = 1;
        c->p += 4;
        return 0;
    }
    if (left >= 5 && memcmp(c->p, "False", 5) == 0) {
        *v = 0;
        c->p += 5;
        return 0;
    }
    seterr(c->err, c->errlen, "malformed header: fortran_order must be True or False");
    return -1;
}

static int parse_shape(mf_cursor *c, int *ndim, int64_t *dims) {
    if (expect(c, '(', "to open the shape tuple")) return -1;
    int nd = 0, comma_after_last = 0;
    for (;;) {
        skip_ws(c);
        if (c->p < c->end && *c->p == ')') break;
        if (c->p >= c->end || *c->p < '0' || *c->p > '9') {
            seterr(c->err, c->errlen, "malformed header: shape entries must be non-negative integers");
            return -1;
        }
        if (*c->p == '0' && c->p + 1 < c->end && c->p[1] >= '0' && c->p[1] <= '9') {
            seterr(c->err, c->errlen, "malformed header: shape entry with a leading zero");
            return -1;
        }
        int64_t v = 0;
        while (c->p < c->end && *c->p >= '0' && *c->p <= '9') {
            int digit = *c->p - '0';
            if (v > (INT64_MAX - digit) / 10) {
                seterr(c->err, c->errlen, "shape entry overflows int64");
                return -1;
            }
            v = v * 10 + digit;
            c->p++;
        }
        if (nd >= MF_NPY_MAX_DIMS) {
            seterr(c->err, c->errlen, "shape has more than %d dimensions", MF_NPY_MAX_DIMS);
            return -1;
        }
        dims[nd++] = v;
        skip_ws(c);
        if (c->p < c->end && *c->p == ',') {
            c->p++;
            comma_after_last = 1;
            continue;
        }
        comma_after_last = 0;
        if (c->p >= c->end || *c->p != ')') {
            seterr(c->err, c->errlen, "malformed header: expected ',' or ')' in the shape tuple");
            return -1;
        }
        break;
    }
    c->p++; /* ')' */
    /* "(3)" is the integer 3 in Python, not a tuple: NumPy never writes it. */
    if (nd == 1 && !comma_after_last) {
        seterr(c->err, c->errlen, "malformed header: a 1-D shape needs a trailing comma, as in (3,)");
        return -1;
    }
    *ndim = nd;
    return 0;
}

static int parse_dict(mf_cursor *c, mf_npy *out) {
    int have_descr = 0, have_order = 0, have_shape = 0, fortran = 0;
    const char *k = NULL;
    size_t kn = 0;
    if (expect(c, '{', "to open the header dictionary")) return -1;
    for (;;) {
        skip_ws(c);
        if (c->p < c->end && *c->p == '}') break;
        if (parse_str(c, &k, &kn)) return -1;
        if (expect(c, ':', "after a dictionary key")) return -1;
        if (str_is(k, kn, "descr")) {
            if (have_descr++) goto dup;
            if (parse_descr(c, &out->dtype)) return -1;
        } else if (str_is(k, kn, "fortran_order")) {
            if (have_order++) goto dup;
            if (parse_bool(c, &fortran)) return -1;
        } else if (str_is(k, kn, "shape")) {
            if (have_shape++) goto dup;
            if (parse_shape(c, &out->ndim, out->dims)) return -1;
        } else {
            seterr(c->err, c->errlen, "malformed header: unexpected key '%.*s'", kn > 32 ? 32 : (int)kn, k);
            return -1;
        }
        skip_ws(c);
        if (c->p < c->end && *c->p == ',') {
            c->p++;
            continue;
        }
        skip_ws(c);
        if (c->p >= c->end || *c->p != '}') {
            seterr(c->err, c->errlen, "malformed header: expected ',' or '}' in the dictionary");
            return -1;
        }
        break;
    }
    c->p++; /* '}' */
    if (!have_descr || !have_order || !have_shape) {
        seterr(c->err, c->errlen, "malformed header: missing key '%s'",
               !have_descr ? "descr" : !have_order ? "fortran_order" : "shape");
        return -1;
    }
    if (fortran) {
        seterr(c->err, c->errlen, "fortran_order True is not supported (C order only)");
        return -1;
    }
    return 0;
dup:
    seterr(c->err, c->errlen, "malformed header: key '%.*s' appears twice", (int)kn, k);
    return -1;
}

int mf_npy_parse(const void *buf, size_t len, mf_npy *out, char *err, size_t errlen) {
    const unsigned char *b = (const unsigned char *)buf;
    if (err && errlen) err[0] = '\0';
    if (!out || (!b && len)) {
        seterr(err, errlen, "no buffer");
        return -1;
    }
    memset(out, 0, sizeof *out);
    if (len < 10 || memcmp(b, MAGIC, sizeof MAGIC) != 0) {
        seterr(err, errlen, "not a .npy file (no \\x93NUMPY magic)");
        return -1;
    }
    int major = b[6], minor = b[7];
    if (major < 1 || major > 3 || minor != 0) {
        seterr(err, errlen, "unsupported .npy format version %d.%d (expected 1.0, 2.0 or 3.0)", major, minor);
        return -1;
    }
    size_t hstart, hlen;
    if (major == 1) {
        hstart = 10;
        hlen = (size_t)b[8] | (size_t)b[9] << 8;
    } else {
        if (len < 12) {
            seterr(err, errlen, "truncated .npy preamble");
            return -1;
        }
        hstart = 12;
        hlen = (size_t)b[8] | (size_t)b[9] << 8 | (size_t)b[10] << 16 | (size_t)b[11] << 24;
    }
    if (hlen > len - hstart) {
        seterr(err, errlen, "header length %zu runs past the end of the file (%zu bytes)", hlen, len);
        return -1;
    }
    if ((hstart + hlen) % MF_NPY_MIN_ALIGN != 0) {
        seterr(err, errlen, "header is not padded to a multiple of %d bytes (data starts at %zu)",
               MF_NPY_MIN_ALIGN, hstart + hlen);
        return -1;
    }
    const char *h = (const char *)b + hstart;
    if (hlen == 0 || h[hlen - 1] != '\n') {
        seterr(err, errlen, "malformed header: does not end with a newline");
        return -1;
    }
    for (size_t i = 0; i + 1 < hlen; i++) {
        unsigned char ch = (unsigned char)h[i];
        if (ch < 0x20 || ch > 0x7e) {
            seterr(err, errlen, "malformed header: unexpected byte 0x%02x at offset %zu", ch, hstart + i);
            return -1;
        }
    }
    mf_cursor c = {h, h + hlen - 1, err, errlen};
    if (parse_dict(&c, out)) return -1;
    /* Only the space padding may follow the dictionary. */
    while (c.p < c.end && *c.p == ' ') c.p++;
    if (c.p != c.end) {
        seterr(err, errlen, "malformed header: unexpected text after the dictionary");
        return -1;
    }
    int64_t numel = 1;
    for (int i = 0; i < out->ndim; i++) {
        if (out->dims[i] != 0 && numel > INT64_MAX / out->dims[i]) {
            seterr(err, errlen, "shape product overflows int64");
            return -1;
        }
        numel *= out->dims[i];
    }
    size_t item = mf_npy_itemsize(out->dtype);
    size_t have = len - (hstart + hlen);
    /* Compare by division first so a huge shape can never overflow the byte count. */
    if ((uint64_t)numel > have / item) {
        seterr(err, errlen, "data truncated: shape needs %lld elements (%s), the file holds %zu bytes of data",
               (long long)numel, mf_npy_descr(out->dtype), have);
        return -1;
    }
    size_t need = (size_t)numel * item;
    if (need != have) {
        seterr(err, errlen, "trailing data: shape needs %zu bytes, the file holds %zu bytes of data", need, have);
        return -1;
    }
    out->major = major;
    out->minor = minor;
    out->numel = numel;
    out->itemsize = item;
    out->data = b + hstart + hlen;
    out->nbytes = need;
    return 0;
}

size_t mf_npy_format_header(mf_npy_dtype dt, int ndim, const int64_t *dims, char *hdr, size_t cap) {
    if (ndim < 0 || ndim > MF_NPY_MAX_DIMS || mf_npy_itemsize(dt) == 0 || (ndim && !dims)) return 0;
    char dict[64 + MF_NPY_MAX_DIMS * 24];
    int n = snprintf(dict, sizeof dict, "{'descr': '%s', 'fortran_order': False, 'shape': (", mf_npy_descr(dt));
    for (int i = 0; i < ndim; i++) {
        if (dims[i] < 0) return 0;
        n += snprintf(dict + n, sizeof dict - (size_t)n, i ? ", %lld" : "%lld", (long long)dims[i]);
    }
    n += snprintf(dict + n, sizeof dict - (size_t)n, ndim == 1 ? ",), }" : "), }");
    size_t dlen = (size_t)n;
    /* Version 1.0 holds a header of up to 65535 bytes; beyond that 2.0. */
    size_t pre = 10, total = (pre + dlen + 1 + MF_NPY_WRITE_ALIGN - 1) / MF_NPY_WRITE_ALIGN * MF_NPY_WRITE_ALIGN;
    int major = 1;
    if (total - pre > 65535) {
        pre = 12;
        major = 2;
        total = (pre + dlen + 1 + MF_NPY_WRITE_ALIGN - 1) / MF_NPY_WRITE_ALIGN * MF_NPY_WRITE_ALIGN;
    }
    if (total > cap) return 0;
    size_t hlen = total - pre;
    memcpy(hdr, MAGIC, sizeof MAGIC);
    hdr[6] = (char)major;
    hdr[7] = 0;
    hdr[8] = (char)(hlen & 0xff);
    hdr[9] = (char)(hlen >> 8 & 0xff);
    if (major == 2) {
        hdr[10] = (char)(hlen >> 16 & 0xff);
        hdr[11] = (char)(hlen >> 24 & 0xff);
    }
    memcpy(hdr + pre, dict, dlen);
    memset(hdr + pre + dlen, ' ', total - 1 - pre - dlen);
    hdr[total - 1] = '\n';
    return total;
}

int mf_npy_load(const char *path, mf_npy *out, void **owner, char *err, size_t errlen) {
    *owner = NULL;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        seterr(err, errlen, "%s: cannot open: %s", path, strerror(errno));
        return -1;
    }
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        seterr(err, errlen, "%s: not a regular file", path);
        close(fd);
        return -1;
    }
    size_t size = (size_t)st.st_size;
    /* The file size bounds the allocation; +1 keeps malloc(0) out of the picture. */
    unsigned char *buf = (unsigned char *)malloc(size + 1);
    if (!buf) {
        seterr(err, errlen, "%s: out of memory reading %zu bytes", path, size);
        close(fd);
        return -1;
    }
    size_t got = 0;
    while (got < size) {
        ssize_t r = read(fd, buf + got, size - got);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) {
            seterr(err, errlen, "%s: read error: %s", path, strerror(errno));
            free(buf);
            close(fd);
            return -1;
        }
        if (r == 0) break;
        got += (size_t)r;
    }
    close(fd);
    char why[256];
    if (mf_npy_parse(buf, got, out, why, sizeof why) != 0) {
        seterr(err, errlen, "%s: %s", path, why);
        free(buf);
        return -1;
    }
    *owner = buf;
    return 0;
}

static int write_all(int fd, const void *p, size_t n) {
    const char *c = (const char *)p;
    while (n > 0) {
        ssize_t w = write(fd, c, n);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return -1;
        c += w;
        n -= (size_t)w;
    }
    return 0;
}

/* Temporary files alive right now, in fixed buffers a signal handler can read
 * without locks or allocation: the handler removes them, so an interrupted run
 * leaves nothing behind. A slot is marked used before mkstemp fills it in. */
#define MF_NPY_MAX_PENDING 8
static char g_tmp_names[MF_NPY_MAX_PENDING][4096];
static volatile sig_atomic_t g_tmp_used[MF_NPY_MAX_PENDING];

static void on_fatal_signal(int sig) {
    for (int i = 0; i < MF_NPY_MAX_PENDING; i++)
        if (g_tmp_used[i]) unlink(g_tmp_names[i]);
    signal(sig, SIG_DFL);
    raise(sig);
}

void mf_npy_remove_temporaries_on_signals(void) {
    static const int sigs[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGPIPE};
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_fatal_signal;
    sigemptyset(&sa.sa_mask);
    for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++) {
        struct sigaction old;
        /* Leave a signal alone that the caller's parent chose to ignore. */
        if (sigaction(sigs[i], NULL, &old) == 0 && old.sa_handler == SIG_IGN) continue;
        sigaction(sigs[i], &sa, NULL);
    }
}

int mf_npy_write_pending(const char *path, mf_npy_dtype dt, int ndim, const int64_t *dims,
                         const void *data, mf_npy_pending *p, char *err, size_t errlen) {
    p->final_path = p->tmp_path = NULL;
    p->slot = -1;
    char hdr[256 + MF_NPY_MAX_DIMS * 24];
    size_t hn = mf_npy_format_header(dt, ndim, dims, hdr, sizeof hdr);
    if (hn == 0) {
        seterr(err, errlen, "%s: cannot describe this array in a .npy header", path);
        return -1;
    }
    size_t numel = 1;
    for (int i = 0; i < ndim; i++) numel *= (size_t)dims[i];
    size_t nbytes = numel * mf_npy_itemsize(dt);
    /* Hidden name in the same directory, so rename() is atomic and a crash
     * leaves nothing that looks like a result. */
    const char *slash = strrchr(path, '/');
    size_t dirlen = slash ? (size_t)(slash - path + 1) : 0;
    if (strlen(path) + 9 > sizeof g_tmp_names[0]) {
        seterr(err, errlen, "%s: path too long", path);
        return -1;
    }
    int slot = -1;
    for (int i = 0; i < MF_NPY_MAX_PENDING && slot < 0; i++)
        if (!g_tmp_used[i]) slot = i;
    if (slot < 0) {
        seterr(err, errlen, "%s: more than %d files pending at once", path, MF_NPY_MAX_PENDING);
        return -1;
    }
    p->final_path = strdup(path);
    if (!p->final_path) {
        seterr(err, errlen, "%s: out of memory", path);
        return -1;
    }
    snprintf(g_tmp_names[slot], sizeof g_tmp_names[slot], "%.*s.%s.XXXXXX", (int)dirlen, path, path + dirlen);
    g_tmp_used[slot] = 1;
    p->slot = slot;
    p->tmp_path = g_tmp_names[slot];
    int fd = mkstemp(p->tmp_path);
    if (fd < 0) {
        seterr(err, errlen, "%s: cannot create a temporary file: %s", path, strerror(errno));
        g_tmp_used[slot] = 0;
        p->tmp_path = NULL;
        mf_npy_discard(p);
        return -1;
    }
    /* mkstemp makes 0600; give the result the mode a plain fopen would. */
    mode_t mask = umask(0);
    umask(mask);
    int ok = fchmod(fd, 0666 & ~mask) == 0 && write_all(fd, hdr, hn) == 0 &&
             (nbytes == 0 || write_all(fd, data, nbytes) == 0);
    int saved = errno;
    if (close(fd) != 0 && ok) {
        ok = 0;
        saved = errno;
    }
    if (!ok) {
        seterr(err, errlen, "%s: write error: %s", path, strerror(saved));
        mf_npy_discard(p);
        return -1;
    }
    return 0;
}

int mf_npy_commit(mf_npy_pending *p, char *err, size_t errlen) {
    if (!p->tmp_path || !p->final_path) {
        seterr(err, errlen, "nothing to commit");
        return -1;
    }
    if (rename(p->tmp_path, p->final_path) != 0) {
        seterr(err, errlen, "%s: cannot rename into place: %s", p->final_path, strerror(errno));
        return -1;
    }
    g_tmp_used[p->slot] = 0;
    p->tmp_path = NULL;
    return 0;
}

void mf_npy_discard(mf_npy_pending *p) {
    if (p->tmp_path) {
        unlink(p->tmp_path);
        p->tmp_path = NULL;
    }
    if (p->slot >= 0 && p->slot < MF_NPY_MAX_PENDING) g_tmp_used[p->slot] = 0;
    p->slot = -1;
    free(p->final_path);
    p->final_path = NULL;
}

int mf_npy_save(const char *path, mf_npy_dtype dt, int ndim, const int64_t *dims, const void *data,
                char *err, size_t errlen) {
    mf_npy_pending p;
    if (mf_npy_write_pending(path, dt, ndim, dims, data, &p, err, errlen)) return -1;
    int rc = mf_npy_commit(&p, err, errlen);
    mf_npy_discard(&p);
    return rc;
}
