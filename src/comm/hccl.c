/* hccl.c - HCCL's host API with threads as ranks (HcclCommInitAll, or
 * HcclGetRootInfo + HcclCommInitRootInfo within one process): every rank of a
 * communicator is a thread of this process, so ranks share memory and a
 * collective moves data with plain copies, no transport.
 *
 * A collective is a rendezvous. Each rank publishes its call (kind, type,
 * counts, buffer addresses) in its slot and arrives at the group's barrier;
 * the last to arrive judges the calls together (same kind, type, op, counts,
 * alltoallv matrices that agree) and sets one verdict for all. Then each rank
 * moves its share of the data straight between the ranks' buffers and waits
 * at a second barrier, so no rank returns (and lets its caller reuse its
 * buffers) while a peer still reads them. Barriers count generations, so a
 * fast rank entering the next call never mixes with a slow rank leaving this
 * one. Only the arrival waits time out (HCCL_EXEC_TIMEOUT): past it the
 * communicator is broken and every rank's calls return HCCL_E_TIMEOUT; once a
 * rank is destroyed, its peers' calls return HCCL_E_UNAVAIL. The second
 * barrier cannot hang: every rank in it has passed the verdict and only
 * copies. Outputs are written only after a success verdict.
 *
 * Reductions run in rank order (reduce.c). HcclAllReduce splits the elements
 * in n slices; rank r reduces slice r and writes it to every rank's output.
 * The other collectives pull: each rank writes only its own output. Where an
 * output overlaps an input some rank reads (other than the in-place forms
 * HCCL defines), the outputs are staged: computed into scratch, written after
 * the second barrier, and a third keeps every rank in the call until all
 * outputs are written.
 *
 * Send/Recv: a send copies its data into a message queued for the (src, dst)
 * pair and returns; a receive takes the pair's oldest message. So rings of
 * sends before receives work, as they do on CANN's streams.
 *
 * Lock order: g_groups_lock, then a group's lock. */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "acl/acl.h"
#include "comm/comm.h"
#include "hccl/hccl.h"
#include "internal.h"

#define SYS_MAX_COUNT 0x7FFFFFFFFull   /* HCCL's largest count (hicann/hccl src/common/hccl_common.h) */
#define MAX_DISPL ((uint64_t)1 << 48) /* moefr: displacements beyond this are refused (no address overflow) */
#define MAX_RANKS 1024u               /* ranks of one HcclCommInitAll communicator */
#define DEFAULT_EXEC_TIMEOUT 1836.0   /* seconds: HCCL_EXEC_TIMEOUT's documented default */

enum {
    K_BARRIER = 1,
    K_ALLREDUCE,
    K_BROADCAST,
    K_REDUCE_SCATTER,
    K_ALLGATHER,
    K_ALLTOALLV,
    K_ALLTOALL,
    K_ALLGATHERV,
    K_REDUCE_SCATTERV
};
static const char *const kind_names[] = {"",
                                         "HcclBarrier",
                                         "HcclAllReduce",
                                         "HcclBroadcast",
                                         "HcclReduceScatter",
                                         "HcclAllGather",
                                         "HcclAlltoAllV",
                                         "HcclAlltoAll",
                                         "HcclAllGatherV",
                                         "HcclReduceScatterV"};

typedef struct slot {
    int kind, dtype, op;
    uint64_t count; /* allreduce/broadcast count, reduce-scatter(v) recvCount, allgather(v) sendCount */
    uint32_t root;
    const char *send;
    char *recv;
    const uint64_t *sc, *sd, *rc, *rd; /* alltoallv, allgatherv (rc, rd), reduce-scatterv (sc, sd): the
                                          caller's arrays (live during the call) */
    char *stage;                       /* set by the judge when outputs are staged */
    uint64_t wlo, whi, rlo, rhi;       /* byte ranges written and read (addresses), for the judge */
} slot;

typedef struct msg {
    struct msg *next;
    int dtype;
    uint64_t count;
    unsigned char data[];
} msg;

struct rank;
typedef struct group {
    pthread_mutex_t lock;
    pthread_cond_t cond; /* CLOCK_MONOTONIC */
    uint32_t n, live;
    char name[COMM_NAME_MAX_LENGTH];
    double timeout_s; /* 0: no timeout */
    HcclResult broken;
    uint32_t arrived;
    uint64_t gen;
    HcclResult verdict;
    bool staged;
    char why[256];
    slot *slots;
    const void **ptrs;   /* n pointers of scratch per rank */
    msg **q_head, **q_tail; /* [src * n + dst] */
    struct rank *ranks;
    struct group *next;
    /* HcclCommInitRootInfo: the root info's id; pending until every rank joined; failed when a joiner's
     * HCCL_CONNECT_TIMEOUT passed first (the joined ranks leave, the last one frees it) */
    uint64_t root_id;
    bool pending, failed;
    uint32_t joined;
} group;

typedef struct rank {
    group *g;
    uint32_t id;
    int32_t device;
    bool joined; /* HcclCommInitRootInfo */
    bool has_owner;
    pthread_t owner;   /* the thread that last used this rank */
    uint64_t last_use; /* when (g_use_seq), to find the rank a thread used last */
} rank;

static pthread_mutex_t g_groups_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t g_join_cond; /* CLOCK_MONOTONIC; with g_groups_lock: a pending group completed or failed */
static pthread_once_t g_join_once = PTHREAD_ONCE_INIT;
static group *g_groups;
static _Atomic uint64_t g_comm_seq;
static _Atomic uint64_t g_use_seq;
static _Atomic int g_deterministic; /* HcclSetConfig(HCCL_DETERMINISTIC): stored, moefr is always strict */

/* ---- arguments ---- */

static size_t dt_size(int dt) {
    switch (dt) {
    case HCCL_DATA_TYPE_INT8: case HCCL_DATA_TYPE_UINT8: case HCCL_DATA_TYPE_HIF8: case HCCL_DATA_TYPE_FP8E4M3:
    case HCCL_DATA_TYPE_FP8E5M2: case HCCL_DATA_TYPE_FP8E8M0: return 1;
    case HCCL_DATA_TYPE_INT16: case HCCL_DATA_TYPE_UINT16: case HCCL_DATA_TYPE_FP16: case HCCL_DATA_TYPE_BFP16:
        return 2;
    case HCCL_DATA_TYPE_INT32: case HCCL_DATA_TYPE_UINT32: case HCCL_DATA_TYPE_FP32: return 4;
    case HCCL_DATA_TYPE_INT64: case HCCL_DATA_TYPE_UINT64: case HCCL_DATA_TYPE_FP64: return 8;
    case HCCL_DATA_TYPE_INT128: return 16;
    default: return 0;
    }
}

static const char *dt_name(int dt) {
    static const char *const names[] = {"int8",   "int16",  "int32",  "fp16",  "fp32",    "int64",
                                        "uint64", "uint8",  "uint16", "uint32", "fp64",   "bfp16",
                                        "int128", "?",      "hif8",   "fp8e4m3", "fp8e5m2", "fp8e8m0"};
    return dt >= 0 && dt <= HCCL_DATA_TYPE_FP8E8M0 && dt != 13 ? names[dt] : "unknown";
}

/* HCCL's CheckDataType (hicann/hccl src/ops/op_common/op_common.cc): reductions take int8/16/32/64, fp16,
 * fp32, bfp16, uint64, fp64; the others every type but int128. Atlas A2/A3 (MOEFR_SOC=ascend910b): the
 * per-product lists of the operator docs (no uint64/fp64 reductions, no 8-bit floats). */
static HcclResult check_dtype(const char *fn, int dt, bool reduce) {
    bool ok = dt_size(dt) != 0 && dt != HCCL_DATA_TYPE_INT128;
    if (ok && reduce)
        ok = dt == HCCL_DATA_TYPE_INT8 || dt == HCCL_DATA_TYPE_INT16 || dt == HCCL_DATA_TYPE_INT32 ||
             dt == HCCL_DATA_TYPE_INT64 || dt == HCCL_DATA_TYPE_FP16 || dt == HCCL_DATA_TYPE_FP32 ||
             dt == HCCL_DATA_TYPE_BFP16 || dt == HCCL_DATA_TYPE_UINT64 || dt == HCCL_DATA_TYPE_FP64;
    if (ok && mf_soc_strict()) {
        if (reduce) ok = dt != HCCL_DATA_TYPE_UINT64 && dt != HCCL_DATA_TYPE_FP64;
        else ok = dt != HCCL_DATA_TYPE_HIF8 && (dt < HCCL_DATA_TYPE_FP8E4M3 || dt > HCCL_DATA_TYPE_FP8E8M0);
    }
    if (!ok)
        return (HcclResult)mf_fail(HCCL_E_NOT_SUPPORT, "%s: data type %d (%s) is not supported%s", fn, dt,
                                   dt_name(dt), reduce ? " by reductions" : "");
    return HCCL_SUCCESS;
}

/* HCCL's CheckReduceOp: prod takes int8, int32, int64, uint64, fp16, fp32, fp64. */
static HcclResult check_op(const char *fn, int dt, int op) {
    if (op < HCCL_REDUCE_SUM || op > HCCL_REDUCE_MIN)
        return (HcclResult)mf_fail(HCCL_E_PARA, "%s: op %d is not an HcclReduceOp (0..3)", fn, op);
    if (op == HCCL_REDUCE_PROD && (dt == HCCL_DATA_TYPE_INT16 || dt == HCCL_DATA_TYPE_BFP16))
        return (HcclResult)mf_fail(HCCL_E_NOT_SUPPORT, "%s: prod does not support %s", fn, dt_name(dt));
    return HCCL_SUCCESS;
}

static HcclResult check_count(const char *fn, const char *what, uint64_t count) {
    if (count > SYS_MAX_COUNT)
        return (HcclResult)mf_fail(HCCL_E_PARA, "%s: %s %llu is above HCCL's maximum %llu", fn, what,
                                   (unsigned long long)count, (unsigned long long)SYS_MAX_COUNT);
    return HCCL_SUCCESS;
}

/* HCCL requires a stream (HCCL_E_PTR for NULL); a stale one is HCCL_E_PARA. */
static HcclResult check_stream(const char *fn, aclrtStream stream) {
    if (stream == NULL) return (HcclResult)mf_fail(HCCL_E_PTR, "%s: stream is NULL", fn);
    if (mf_check_stream(fn, stream) != ACL_SUCCESS) return HCCL_E_PARA;
    return HCCL_SUCCESS;
}

/* The rank behind a handle, bound to the calling thread (the name lookup's first choice). */
static HcclResult get_rank(const char *fn, HcclComm comm, rank **out) {
    if (comm == NULL) return (HcclResult)mf_fail(HCCL_E_PTR, "%s: comm is NULL", fn);
    if (!mf_registry_has(&mf_comms, comm))
        return (HcclResult)mf_fail(HCCL_E_PARA, "%s: %p is not a live communicator (destroyed?)", fn, comm);
    rank *r = comm;
    pthread_mutex_lock(&r->g->lock);
    r->owner = pthread_self();
    r->has_owner = true;
    r->last_use = atomic_fetch_add(&g_use_seq, 1) + 1;
    pthread_mutex_unlock(&r->g->lock);
    *out = r;
    return HCCL_SUCCESS;
}

/* ---- communicators ---- */

/* HCCL_EXEC_TIMEOUT in seconds (fractions accepted), read when a communicator is created; 0: none. */
static double exec_timeout(void) {
    const char *v = getenv("HCCL_EXEC_TIMEOUT");
    if (v == NULL || *v == '\0') return DEFAULT_EXEC_TIMEOUT;
    char *end = NULL;
    double s = strtod(v, &end);
    if (end == v || *end != '\0' || !(s >= 0) || s > 2147483647.0) {
        mf_log(MF_LOG_WARN, "HCCL_EXEC_TIMEOUT=%s is not a number of seconds in [0, 2147483647]: using %.0f", v,
               DEFAULT_EXEC_TIMEOUT);
        return DEFAULT_EXEC_TIMEOUT;
    }
    return s;
}

static void deadline_after(double s, struct timespec *ts) {
    clock_gettime(CLOCK_MONOTONIC, ts);
    double whole = (double)(time_t)s;
    long ns = (long)((s - whole) * 1e9);
    ts->tv_sec += (time_t)whole;
    ts->tv_nsec += ns;
    if (ts->tv_nsec >= 1000000000L) {
        ts->tv_sec++;
        ts->tv_nsec -= 1000000000L;
    }
}

static void group_free(group *g) {
    if (g->q_head != NULL)
        for (size_t i = 0; i < (size_t)g->n * g->n; i++)
            for (msg *m = g->q_head[i], *nx; m != NULL; m = nx) {
                nx = m->next;
                free(m);
            }
    free(g->q_head);
    free(g->q_tail);
    free(g->slots);
    free(g->ptrs);
    free(g->ranks);
    pthread_cond_destroy(&g->cond);
    pthread_mutex_destroy(&g->lock);
    free(g);
}

static void cond_init_monotonic(pthread_cond_t *c) {
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(c, &ca);
    pthread_condattr_destroy(&ca);
}

/* A communicator of n ranks (live 0, unlinked), named moefr_hccl_<pid>_<n>; NULL on OOM. */
static group *group_new(uint32_t n) {
    group *g = mf_calloc(1, sizeof *g);
    if (g == NULL) return NULL;
    pthread_mutex_init(&g->lock, NULL);
    cond_init_monotonic(&g->cond);
    g->n = n;
    g->timeout_s = exec_timeout();
    g->slots = mf_calloc(n, sizeof *g->slots);
    g->ptrs = mf_calloc((size_t)n * n, sizeof *g->ptrs);
    g->q_head = mf_calloc((size_t)n * n, sizeof *g->q_head);
    g->q_tail = mf_calloc((size_t)n * n, sizeof *g->q_tail);
    g->ranks = mf_calloc(n, sizeof *g->ranks);
    if (g->slots == NULL || g->ptrs == NULL || g->q_head == NULL || g->q_tail == NULL || g->ranks == NULL) {
        group_free(g);
        return NULL;
    }
    for (uint32_t i = 0; i < n; i++) {
        g->ranks[i].g = g;
        g->ranks[i].id = i;
        g->ranks[i].device = -1;
    }
    snprintf(g->name, sizeof g->name, "moefr_hccl_%ld_%llu", (long)getpid(),
             (unsigned long long)atomic_fetch_add(&g_comm_seq, 1));
    return g;
}

HcclResult HcclCommInitAll(uint32_t ndev, int32_t *devices, HcclComm *comms) {
    const char *fn = "HcclCommInitAll";
    if (devices == NULL) return (HcclResult)mf_fail(HCCL_E_PTR, "%s: devices is NULL", fn);
    if (comms == NULL) return (HcclResult)mf_fail(HCCL_E_PTR, "%s: comms is NULL", fn);
    if (ndev == 0 || ndev > MAX_RANKS)
        return (HcclResult)mf_fail(HCCL_E_PARA, "%s: ndev must be 1..%u, got %u", fn, MAX_RANKS, ndev);
    for (uint32_t i = 0; i < ndev; i++) {
        if (devices[i] < 0)
            return (HcclResult)mf_fail(HCCL_E_PARA, "%s: devices[%u] is %d (a device id is >= 0)", fn, i,
                                       (int)devices[i]);
        for (uint32_t j = 0; j < i; j++)
            if (devices[j] == devices[i])
                return (HcclResult)mf_fail(HCCL_E_PARA, "%s: devices[%u] and devices[%u] are both %d", fn, j, i,
                                           (int)devices[i]);
    }
    group *g = group_new(ndev);
    if (g == NULL) return (HcclResult)mf_fail(HCCL_E_MEMORY, "%s: out of memory", fn);
    g->live = ndev;
    uint32_t added = 0;
    for (; added < ndev; added++) {
        g->ranks[added].device = devices[added];
        if (!mf_registry_add(&mf_comms, &g->ranks[added])) break;
    }
    if (added < ndev) {
        while (added > 0) mf_registry_remove(&mf_comms, &g->ranks[--added]);
        group_free(g);
        return (HcclResult)mf_fail(HCCL_E_MEMORY, "%s: out of memory", fn);
    }
    pthread_mutex_lock(&g_groups_lock);
    g->next = g_groups;
    g_groups = g;
    pthread_mutex_unlock(&g_groups_lock);
    for (uint32_t i = 0; i < ndev; i++) comms[i] = &g->ranks[i];
    mf_log(MF_LOG_INFO, "%s: %s, %u ranks (threads), exec timeout %.3f s", fn, g->name, ndev, g->timeout_s);
    return HCCL_SUCCESS;
}

HcclResult HcclCommDestroy(HcclComm comm) {
    const char *fn = "HcclCommDestroy";
    if (comm == NULL) return (HcclResult)mf_fail(HCCL_E_PTR, "%s: comm is NULL", fn);
    pthread_mutex_lock(&g_groups_lock); /* the last rank unlinks the group */
    if (!mf_registry_remove(&mf_comms, comm)) {
        pthread_mutex_unlock(&g_groups_lock);
        return (HcclResult)mf_fail(HCCL_E_PARA, "%s: %p is not a live communicator (destroyed twice?)", fn, comm);
    }
    rank *r = comm;
    group *g = r->g;
    pthread_mutex_lock(&g->lock);
    bool last = --g->live == 0;
    if (!last && g->broken == HCCL_SUCCESS) g->broken = HCCL_E_UNAVAIL;
    pthread_cond_broadcast(&g->cond);
    pthread_mutex_unlock(&g->lock);
    if (last) {
        for (group **p = &g_groups; *p != NULL; p = &(*p)->next)
            if (*p == g) {
                *p = g->next;
                break;
            }
    }
    pthread_mutex_unlock(&g_groups_lock);
    if (last) group_free(g);
    return HCCL_SUCCESS;
}

HcclResult HcclGetRankSize(HcclComm comm, uint32_t *rankSize) {
    rank *r = NULL;
    HcclResult rc = get_rank("HcclGetRankSize", comm, &r);
    if (rc != HCCL_SUCCESS) return rc;
    if (rankSize == NULL) return (HcclResult)mf_fail(HCCL_E_PTR, "HcclGetRankSize: rankSize is NULL");
    *rankSize = r->g->n;
    return HCCL_SUCCESS;
}

HcclResult HcclGetRankId(HcclComm comm, uint32_t *rankId) {
    rank *r = NULL;
    HcclResult rc = get_rank("HcclGetRankId", comm, &r);
    if (rc != HCCL_SUCCESS) return rc;
    if (rankId == NULL) return (HcclResult)mf_fail(HCCL_E_PTR, "HcclGetRankId: rank is NULL");
    *rankId = r->id;
    return HCCL_SUCCESS;
}

HcclResult HcclGetCommName(HcclComm comm, char *commName) {
    rank *r = NULL;
    HcclResult rc = get_rank("HcclGetCommName", comm, &r);
    if (rc != HCCL_SUCCESS) return rc;
    if (commName == NULL) return (HcclResult)mf_fail(HCCL_E_PTR, "HcclGetCommName: commName is NULL");
    memcpy(commName, r->g->name, strlen(r->g->name) + 1); /* < COMM_NAME_MAX_LENGTH bytes */
    return HCCL_SUCCESS;
}

/* True when a live rank of the communicator `name` was last used by this thread. */
static bool bound_here(const char *name) {
    bool yes = false;
    pthread_t self = pthread_self();
    pthread_mutex_lock(&g_groups_lock);
    for (group *g = g_groups; g != NULL && !yes; g = g->next) {
        if (strncmp(g->name, name, sizeof g->name) != 0) continue;
        pthread_mutex_lock(&g->lock);
        for (uint32_t i = 0; i < g->n && !yes; i++)
            yes = g->ranks[i].has_owner && pthread_equal(g->ranks[i].owner, self) &&
                  mf_registry_has(&mf_comms, &g->ranks[i]);
        pthread_mutex_unlock(&g->lock);
    }
    pthread_mutex_unlock(&g_groups_lock);
    return yes;
}

HcclResult mf_comm_lookup(const char *name, HcclComm *comm) {
    const char *fn = "HcclCommGetHandleWithName";
    if (name == NULL) return (HcclResult)mf_fail(HCCL_E_PTR, "%s: commName is NULL", fn);
    if (comm == NULL) return (HcclResult)mf_fail(HCCL_E_PTR, "%s: comm is NULL", fn);
    int32_t dev = -1;
    if (!bound_here(name)) { /* then the thread's device decides; none set is no error here */
        const char *saved = aclGetRecentErrMsg();
        char keep[512];
        bool had = saved != NULL;
        if (had) snprintf(keep, sizeof keep, "%s", saved);
        if (aclrtGetDevice(&dev) != ACL_SUCCESS) dev = -1;
        if (had) mf_set_error("%s", keep);
    }
    pthread_t self = pthread_self();
    rank *found = NULL;
    bool named = false;
    pthread_mutex_lock(&g_groups_lock);
    for (group *g = g_groups; g != NULL && found == NULL; g = g->next) {
        if (strncmp(g->name, name, sizeof g->name) != 0) continue;
        named = true;
        pthread_mutex_lock(&g->lock);
        rank *by_dev = NULL;
        int n_dev = 0;
        for (uint32_t i = 0; i < g->n; i++) {
            rank *r = &g->ranks[i];
            if (!mf_registry_has(&mf_comms, r)) continue;
            if (r->has_owner && pthread_equal(r->owner, self)) {
                if (found == NULL || r->last_use > found->last_use) found = r;
                continue;
            }
            if (dev >= 0 && r->device == dev) {
                by_dev = r;
                n_dev++;
            }
        }
        if (found == NULL && n_dev == 1) found = by_dev;
        if (found == NULL && g->n == 1 && mf_registry_has(&mf_comms, &g->ranks[0])) found = &g->ranks[0];
        pthread_mutex_unlock(&g->lock);
    }
    pthread_mutex_unlock(&g_groups_lock);
    if (found == NULL)
        return (HcclResult)mf_fail(HCCL_E_NOT_FOUND,
                                   named ? "%s: communicator \"%.128s\" has no rank for this thread (pass the "
                                           "thread's rank to an HCCL call such as HcclGetCommName first)"
                                         : "%s: no communicator is named \"%.128s\"",
                                   fn, name);
    *comm = found;
    return HCCL_SUCCESS;
}

HcclResult HcclCommGetHandleWithName(const char *commName, HcclComm *comm) { return mf_comm_lookup(commName, comm); }

HcclResult HcclGetCommAsyncError(HcclComm comm, HcclResult *asyncError) {
    rank *r = NULL;
    HcclResult rc = get_rank("HcclGetCommAsyncError", comm, &r);
    if (rc != HCCL_SUCCESS) return rc;
    if (asyncError == NULL) return (HcclResult)mf_fail(HCCL_E_PTR, "HcclGetCommAsyncError: asyncError is NULL");
    pthread_mutex_lock(&r->g->lock);
    *asyncError = r->g->broken;
    pthread_mutex_unlock(&r->g->lock);
    return HCCL_SUCCESS;
}

HcclResult HcclSetConfig(HcclConfig config, HcclConfigValue configValue) {
    if (config != HCCL_DETERMINISTIC)
        return (HcclResult)mf_fail(HCCL_E_PARA, "HcclSetConfig: config %d is not HCCL_DETERMINISTIC", (int)config);
    if (configValue.value < 0 || configValue.value > 2)
        return (HcclResult)mf_fail(HCCL_E_PARA, "HcclSetConfig: HCCL_DETERMINISTIC must be 0, 1 or 2, got %d",
                                   (int)configValue.value);
    atomic_store(&g_deterministic, configValue.value);
    return HCCL_SUCCESS;
}

HcclResult HcclGetConfig(HcclConfig config, HcclConfigValue *configValue) {
    if (configValue == NULL) return (HcclResult)mf_fail(HCCL_E_PTR, "HcclGetConfig: configValue is NULL");
    if (config != HCCL_DETERMINISTIC)
        return (HcclResult)mf_fail(HCCL_E_PARA, "HcclGetConfig: config %d is not HCCL_DETERMINISTIC", (int)config);
    configValue->value = atomic_load(&g_deterministic);
    return HCCL_SUCCESS;
}

/* ---- HcclGetRootInfo / HcclCommInitRootInfo: ranks as threads of this process ----
 * The root info carries a magic, this process's pid and host name, and a unique id; a rank of another
 * process or host is refused (HCCL_E_NOT_SUPPORT) until processes come. The first rank to join creates
 * the communicator; each waits until all nRanks joined, at most HCCL_CONNECT_TIMEOUT seconds. */
#define ROOT_MAGIC "moefr-hccl-root"
typedef struct root_info {
    char magic[16];
    uint32_t version;
    int32_t pid;
    uint64_t id;
    char host[64];
} root_info;
_Static_assert(sizeof(root_info) <= sizeof(HcclRootInfo), "root info fits HCCL's 4108 bytes");
static _Atomic uint64_t g_root_seq;

/* HCCL_CONNECT_TIMEOUT in seconds (HCCL: 120..7200, default 120; moefr also takes smaller values and
 * fractions), read at each HcclCommInitRootInfo. */
static double connect_timeout(void) {
    const char *v = getenv("HCCL_CONNECT_TIMEOUT");
    if (v == NULL || *v == '\0') return 120.0;
    char *end = NULL;
    double s = strtod(v, &end);
    if (end == v || *end != '\0' || !(s > 0) || s > 7200.0) {
        mf_log(MF_LOG_WARN, "HCCL_CONNECT_TIMEOUT=%s is not a number of seconds in (0, 7200]: using 120", v);
        return 120.0;
    }
    return s;
}

static void join_once(void) { cond_init_monotonic(&g_join_cond); }

HcclResult HcclGetRootInfo(HcclRootInfo *rootInfo) {
    if (rootInfo == NULL) return (HcclResult)mf_fail(HCCL_E_PTR, "HcclGetRootInfo: rootInfo is NULL");
    root_info ri;
    memset(&ri, 0, sizeof ri);
    memcpy(ri.magic, ROOT_MAGIC, sizeof ROOT_MAGIC);
    ri.version = 1;
    ri.pid = (int32_t)getpid();
    ri.id = atomic_fetch_add(&g_root_seq, 1) + 1;
    if (gethostname(ri.host, sizeof ri.host - 1) != 0) ri.host[0] = '\0';
    memset(rootInfo, 0, sizeof *rootInfo);
    memcpy(rootInfo->internal, &ri, sizeof ri);
    return HCCL_SUCCESS;
}

static HcclResult init_root(const char *fn, uint32_t nRanks, const HcclRootInfo *rootInfo, uint32_t rank_,
                            const HcclCommConfig *config, HcclComm *comm) {
    if (rootInfo == NULL) return (HcclResult)mf_fail(HCCL_E_PTR, "%s: rootInfo is NULL", fn);
    if (comm == NULL) return (HcclResult)mf_fail(HCCL_E_PTR, "%s: comm is NULL", fn);
    if (nRanks == 0 || nRanks > MAX_RANKS)
        return (HcclResult)mf_fail(HCCL_E_PARA, "%s: nRanks must be 1..%u, got %u", fn, MAX_RANKS, nRanks);
    if (rank_ >= nRanks)
        return (HcclResult)mf_fail(HCCL_E_PARA, "%s: rank %u is not below nRanks %u", fn, rank_, nRanks);
    char name[COMM_NAME_MAX_LENGTH] = "";
    double exec_s = -1;
    if (config != NULL) {
        uint32_t magic;
        memcpy(&magic, config->reserved + sizeof(size_t), sizeof magic);
        if (magic != HCCL_COMM_CONFIG_MAGIC_WORD)
            return (HcclResult)mf_fail(HCCL_E_PARA, "%s: config was not set up by HcclCommConfigInit", fn);
        if (memchr(config->hcclCommName, '\0', sizeof config->hcclCommName) == NULL)
            return (HcclResult)mf_fail(HCCL_E_PARA, "%s: config's hcclCommName has no terminating NUL", fn);
        memcpy(name, config->hcclCommName, sizeof name);
        if (config->hcclExecTimeOut != HCCL_COMM_EXECTIMEOUT_CONFIG_NOT_SET) {
            if (config->hcclExecTimeOut < 0)
                return (HcclResult)mf_fail(HCCL_E_PARA, "%s: config's hcclExecTimeOut %d is negative", fn,
                                           (int)config->hcclExecTimeOut);
            exec_s = config->hcclExecTimeOut;
        }
    }
    root_info ri;
    memcpy(&ri, rootInfo->internal, sizeof ri);
    if (memcmp(ri.magic, ROOT_MAGIC, sizeof ROOT_MAGIC) != 0 || ri.version != 1)
        return (HcclResult)mf_fail(HCCL_E_PARA, "%s: rootInfo was not filled by HcclGetRootInfo", fn);
    char host[64] = "";
    if (gethostname(host, sizeof host - 1) != 0) host[0] = '\0';
    if (ri.pid != (int32_t)getpid() || strncmp(ri.host, host, sizeof host) != 0)
        return (HcclResult)mf_fail(HCCL_E_NOT_SUPPORT,
                                   "%s: the root info comes from another process (pid %d on %.64s); moefr's "
                                   "communicators are threads of one process for now",
                                   fn, (int)ri.pid, ri.host);
    const double wait_s = connect_timeout();
    struct timespec deadline;
    deadline_after(wait_s, &deadline);
    pthread_once(&g_join_once, join_once);
    int32_t dev = -1;
    {
        const char *saved = aclGetRecentErrMsg();
        char keep[512];
        bool had = saved != NULL;
        if (had) snprintf(keep, sizeof keep, "%s", saved);
        if (aclrtGetDevice(&dev) != ACL_SUCCESS) dev = -1;
        if (had) mf_set_error("%s", keep);
    }

    pthread_mutex_lock(&g_groups_lock);
    group *g = g_groups;
    while (g != NULL && !(g->root_id == ri.id && (g->pending || g->failed))) g = g->next;
    if (g != NULL && g->failed) {
        pthread_mutex_unlock(&g_groups_lock);
        return (HcclResult)mf_fail(HCCL_E_TIMEOUT, "%s: the communicator of this root info timed out before "
                                   "rank %u joined (HCCL_CONNECT_TIMEOUT)", fn, rank_);
    }
    if (g == NULL) {
        for (group *o = g_groups; o != NULL && name[0]; o = o->next)
            if (strncmp(o->name, name, sizeof o->name) == 0) {
                pthread_mutex_unlock(&g_groups_lock);
                return (HcclResult)mf_fail(HCCL_E_PARA, "%s: a communicator is already named \"%s\"", fn, name);
            }
        g = group_new(nRanks);
        if (g == NULL) {
            pthread_mutex_unlock(&g_groups_lock);
            return (HcclResult)mf_fail(HCCL_E_MEMORY, "%s: out of memory", fn);
        }
        g->root_id = ri.id;
        g->pending = true;
        if (name[0]) memcpy(g->name, name, sizeof g->name);
        if (exec_s >= 0) g->timeout_s = exec_s;
        g->next = g_groups;
        g_groups = g;
    } else if (g->n != nRanks) {
        uint32_t had = g->n;
        pthread_mutex_unlock(&g_groups_lock);
        return (HcclResult)mf_fail(HCCL_E_PARA, "%s: rank %u says nRanks %u, an earlier rank said %u", fn, rank_,
                                   nRanks, had);
    } else if (g->ranks[rank_].joined) {
        pthread_mutex_unlock(&g_groups_lock);
        return (HcclResult)mf_fail(HCCL_E_PARA, "%s: rank %u joined this root info's communicator twice", fn, rank_);
    }
    g->ranks[rank_].joined = true;
    g->ranks[rank_].device = dev;
    g->joined++;
    HcclResult rc = HCCL_SUCCESS;
    if (g->joined == g->n) { /* the last to join makes the handles live */
        uint32_t added = 0;
        while (added < g->n && mf_registry_add(&mf_comms, &g->ranks[added])) added++;
        if (added < g->n) {
            while (added > 0) mf_registry_remove(&mf_comms, &g->ranks[--added]);
            g->failed = true;
            rc = HCCL_E_MEMORY;
        } else {
            g->live = g->n;
        }
        g->pending = false;
        pthread_cond_broadcast(&g_join_cond);
    }
    while (g->pending && !g->failed) {
        int w = pthread_cond_timedwait(&g_join_cond, &g_groups_lock, &deadline);
        if (w == ETIMEDOUT && g->pending && !g->failed) {
            g->failed = true;
            pthread_cond_broadcast(&g_join_cond);
        }
    }
    if (g->failed) { /* leave; the last to leave frees it */
        if (rc == HCCL_SUCCESS) rc = HCCL_E_TIMEOUT;
        if (--g->joined == 0) {
            for (group **p = &g_groups; *p != NULL; p = &(*p)->next)
                if (*p == g) {
                    *p = g->next;
                    break;
                }
            group_free(g);
        }
        pthread_mutex_unlock(&g_groups_lock);
        return rc == HCCL_E_MEMORY ? (HcclResult)mf_fail(rc, "%s: out of memory", fn)
                                   : (HcclResult)mf_fail(rc, "%s: not every one of the %u ranks joined within "
                                                         "HCCL_CONNECT_TIMEOUT=%g s", fn, nRanks, wait_s);
    }
    *comm = &g->ranks[rank_];
    pthread_mutex_unlock(&g_groups_lock);
    return HCCL_SUCCESS;
}

HcclResult HcclCommInitRootInfo(uint32_t nRanks, const HcclRootInfo *rootInfo, uint32_t rank_, HcclComm *comm) {
    return init_root("HcclCommInitRootInfo", nRanks, rootInfo, rank_, NULL, comm);
}

HcclResult HcclCommInitRootInfoConfig(uint32_t nRanks, const HcclRootInfo *rootInfo, uint32_t rank_,
                                      const HcclCommConfig *config, HcclComm *comm) {
    if (config == NULL) return (HcclResult)mf_fail(HCCL_E_PTR, "HcclCommInitRootInfoConfig: config is NULL");
    return init_root("HcclCommInitRootInfoConfig", nRanks, rootInfo, rank_, config, comm);
}

HcclResult HcclCommInitClusterInfo(const char *clusterInfo, uint32_t rank_, HcclComm *comm) {
    (void)clusterInfo, (void)rank_, (void)comm;
    return (HcclResult)mf_fail(HCCL_E_NOT_SUPPORT, "HcclCommInitClusterInfo: rank tables are not supported yet; "
                               "use HcclCommInitAll or HcclGetRootInfo + HcclCommInitRootInfo (threads of one process)");
}

const char *HcclGetErrorString(HcclResult code) {
    switch (code) {
    case HCCL_SUCCESS: return "success";
    case HCCL_E_PARA: return "parameter error";
    case HCCL_E_PTR: return "empty pointer";
    case HCCL_E_MEMORY: return "memory error";
    case HCCL_E_INTERNAL: return "internal error";
    case HCCL_E_NOT_SUPPORT: return "not supported";
    case HCCL_E_NOT_FOUND: return "resource not found";
    case HCCL_E_UNAVAIL: return "resource unavailable";
    case HCCL_E_SYSCALL: return "system call error";
    case HCCL_E_TIMEOUT: return "timeout";
    case HCCL_E_OPEN_FILE_FAILURE: return "open file failure";
    case HCCL_E_TCP_CONNECT: return "tcp connect failure";
    case HCCL_E_ROCE_CONNECT: return "roce connect failure";
    case HCCL_E_TCP_TRANSFER: return "tcp transfer failure";
    case HCCL_E_ROCE_TRANSFER: return "roce transfer failure";
    case HCCL_E_RUNTIME: return "runtime error";
    case HCCL_E_DRV: return "driver error";
    case HCCL_E_PROFILING: return "profiling error";
    case HCCL_E_CCE: return "cce error";
    case HCCL_E_NETWORK: return "network error";
    case HCCL_E_AGAIN: return "try again";
    case HCCL_E_REMOTE: return "remote error";
    case HCCL_E_SUSPENDING: return "communicator suspending";
    case HCCL_E_OPRETRY_FAIL: return "operation retry failed";
    case HCCL_E_OOM: return "out of memory";
    case HCCL_E_IN_STATUS: return "error in status";
    default: return "unknown error";
    }
}

/* ---- the rendezvous ---- */


static void judge(group *g);

/* With g->lock held. arrival: a broken communicator ends the wait, and a
 * deadline (NULL: none) breaks it; the last rank to arrive runs the judge.
 * Otherwise (leaving): an untimed wait for every rank. */
static HcclResult barrier(group *g, bool arrival, const struct timespec *deadline) {
    uint64_t my = g->gen;
    if (++g->arrived == g->n) {
        g->arrived = 0;
        if (arrival) judge(g);
        g->gen++;
        pthread_cond_broadcast(&g->cond);
        return HCCL_SUCCESS;
    }
    while (g->gen == my) {
        if (!arrival) {
            pthread_cond_wait(&g->cond, &g->lock);
            continue;
        }
        if (g->broken != HCCL_SUCCESS) {
            g->arrived--;
            return g->broken;
        }
        int rc = deadline ? pthread_cond_timedwait(&g->cond, &g->lock, deadline)
                          : pthread_cond_wait(&g->cond, &g->lock);
        if (rc == ETIMEDOUT && g->gen == my) {
            g->arrived--;
            if (g->broken == HCCL_SUCCESS) g->broken = HCCL_E_TIMEOUT;
            pthread_cond_broadcast(&g->cond);
            return g->broken;
        }
    }
    return HCCL_SUCCESS;
}

static bool ranges_meet(uint64_t alo, uint64_t ahi, uint64_t blo, uint64_t bhi) {
    return alo < ahi && blo < bhi && alo < bhi && blo < ahi;
}

/* An output that overlaps its own input in the form HCCL defines as in-place. */
static bool in_place_form(const slot *s, uint32_t r, size_t e) {
    switch (s->kind) {
    case K_ALLREDUCE: return s->wlo == s->rlo && s->whi == s->rhi;
    case K_REDUCE_SCATTER: return s->wlo == s->rlo + r * s->count * e;
    case K_ALLGATHER: return s->rlo == s->wlo + r * s->count * e;
    default: return false;
    }
}

#define VERDICT(code, ...)                                                    \
    do {                                                                      \
        g->verdict = (code);                                                  \
        snprintf(g->why, sizeof g->why, __VA_ARGS__);                         \
        return;                                                               \
    } while (0)

/* The last rank to arrive, with g->lock held: the calls must agree. */
static void judge(group *g) {
    const uint32_t n = g->n;
    const slot *s0 = &g->slots[0];
    g->verdict = HCCL_SUCCESS;
    g->staged = false;
    g->why[0] = '\0';
    for (uint32_t r = 1; r < n; r++) {
        const slot *s = &g->slots[r];
        const char *k = kind_names[s0->kind];
        if (s->kind != s0->kind)
            VERDICT(HCCL_E_PARA, "rank %u called %s while rank 0 called %s", r, kind_names[s->kind], k);
        if (s->dtype != s0->dtype)
            VERDICT(HCCL_E_PARA, "%s: rank %u's data type %s differs from rank 0's %s", k, r, dt_name(s->dtype),
                    dt_name(s0->dtype));
        if (s->op != s0->op) VERDICT(HCCL_E_PARA, "%s: rank %u's op %d differs from rank 0's %d", k, r, s->op, s0->op);
        if (s->count != s0->count && s0->kind != K_ALLGATHERV && s0->kind != K_REDUCE_SCATTERV)
            VERDICT(HCCL_E_PARA, "%s: rank %u's count %llu differs from rank 0's %llu", k, r,
                    (unsigned long long)s->count, (unsigned long long)s0->count);
        if (s->root != s0->root)
            VERDICT(HCCL_E_PARA, "%s: rank %u's root %u differs from rank 0's %u", k, r, s->root, s0->root);
    }
    if (s0->kind == K_BARRIER) return;
    if (s0->kind == K_ALLTOALLV)
        for (uint32_t i = 0; i < n; i++)
            for (uint32_t j = 0; j < n; j++)
                if (g->slots[i].sc[j] != g->slots[j].rc[i])
                    VERDICT(HCCL_E_PARA, "HcclAlltoAllV: rank %u sends %llu elements to rank %u, which expects %llu",
                            i, (unsigned long long)g->slots[i].sc[j], j, (unsigned long long)g->slots[j].rc[i]);
    if (s0->kind == K_ALLGATHERV)
        for (uint32_t i = 0; i < n; i++)
            for (uint32_t j = 0; j < n; j++)
                if (g->slots[i].rc[j] != g->slots[j].count)
                    VERDICT(HCCL_E_PARA, "HcclAllGatherV: rank %u expects %llu elements from rank %u, which sends %llu",
                            i, (unsigned long long)g->slots[i].rc[j], j, (unsigned long long)g->slots[j].count);
    if (s0->kind == K_REDUCE_SCATTERV)
        for (uint32_t i = 0; i < n; i++)
            for (uint32_t j = 0; j < n; j++)
                if (g->slots[i].sc[j] != g->slots[j].count)
                    VERDICT(HCCL_E_PARA,
                            "HcclReduceScatterV: rank %u's sendCounts[%u] is %llu, rank %u's recvCount is %llu", i, j,
                            (unsigned long long)g->slots[i].sc[j], j, (unsigned long long)g->slots[j].count);
    const size_t e = dt_size(s0->dtype);
    for (uint32_t a = 0; a < n; a++) {
        const slot *sa = &g->slots[a];
        for (uint32_t b = 0; b < n; b++) {
            const slot *sb = &g->slots[b];
            if (b != a && ranges_meet(sa->wlo, sa->whi, sb->wlo, sb->whi))
                VERDICT(HCCL_E_PARA, "%s: the outputs of ranks %u and %u overlap", kind_names[s0->kind], a, b);
            if (ranges_meet(sa->wlo, sa->whi, sb->rlo, sb->rhi) && !(a == b && in_place_form(sa, a, e)))
                g->staged = true;
        }
    }
    if (!g->staged) return;
    for (uint32_t a = 0; a < n; a++) {
        slot *s = &g->slots[a];
        uint64_t bytes;
        if (s0->kind == K_ALLREDUCE) { /* rank a's slice */
            uint64_t base = s0->count / n, rem = s0->count % n;
            bytes = (base + (a < rem)) * e;
        } else {
            bytes = s->whi > (uint64_t)(uintptr_t)s->recv ? s->whi - (uint64_t)(uintptr_t)s->recv : 0;
        }
        s->stage = bytes ? mf_malloc((size_t)bytes) : NULL;
        if (bytes && s->stage == NULL) {
            for (uint32_t b = 0; b <= a; b++) {
                free(g->slots[b].stage);
                g->slots[b].stage = NULL;
            }
            VERDICT(HCCL_E_MEMORY, "%s: out of memory staging %llu bytes", kind_names[s0->kind],
                    (unsigned long long)bytes);
        }
    }
}

/* ---- data movement: rank r's share, after a success verdict, lock released ---- */

static void slice_of(uint64_t count, uint32_t n, uint32_t r, uint64_t *lo, uint64_t *hi) {
    uint64_t base = count / n, rem = count % n;
    *lo = r * base + (r < rem ? r : rem);
    *hi = *lo + base + (r < rem);
}

static void move_allreduce(group *g, uint32_t r, bool staged) {
    const slot *s0 = &g->slots[0];
    const uint32_t n = g->n;
    const size_t e = dt_size(s0->dtype);
    const void **src = g->ptrs + (size_t)r * n;
    uint64_t lo, hi;
    slice_of(s0->count, n, r, &lo, &hi);
    _Alignas(64) unsigned char tmp[MF_COMM_REDUCE_BLOCK * 8];
    for (uint64_t off = lo; off < hi; off += MF_COMM_REDUCE_BLOCK) {
        size_t len = (size_t)(hi - off < MF_COMM_REDUCE_BLOCK ? hi - off : MF_COMM_REDUCE_BLOCK);
        for (uint32_t q = 0; q < n; q++) src[q] = g->slots[q].send + off * e;
        void *dst = staged ? g->slots[r].stage + (off - lo) * e : (void *)tmp;
        mf_comm_reduce(s0->dtype, s0->op, src, n, len, dst);
        if (!staged)
            for (uint32_t q = 0; q < n; q++) memcpy(g->slots[q].recv + off * e, tmp, len * e);
    }
}

static void allreduce_write_stage(group *g, uint32_t r) {
    const slot *s0 = &g->slots[0];
    const size_t e = dt_size(s0->dtype);
    uint64_t lo, hi;
    slice_of(s0->count, g->n, r, &lo, &hi);
    if (hi > lo)
        for (uint32_t q = 0; q < g->n; q++) memcpy(g->slots[q].recv + lo * e, g->slots[r].stage, (hi - lo) * e);
}

/* The pull collectives write out[] (the rank's output, or its stage standing in for it). */
static void move_pull(group *g, uint32_t r, char *out) {
    const slot *me = &g->slots[r];
    const uint32_t n = g->n;
    const size_t e = dt_size(me->dtype);
    const uint64_t c = me->count;
    switch (me->kind) {
    case K_BROADCAST:
        if (r != me->root) memcpy(out, g->slots[me->root].send, c * e);
        break;
    case K_ALLGATHER:
        for (uint32_t q = 0; q < n; q++)
            if (out + q * c * e != g->slots[q].send) memcpy(out + q * c * e, g->slots[q].send, c * e);
        break;
    case K_REDUCE_SCATTER:
    case K_REDUCE_SCATTERV: { /* rank q's block for r starts at r * c, or at sendDispls[r] of rank q */
        const void **src = g->ptrs + (size_t)r * n;
        for (uint64_t off = 0; off < c; off += MF_COMM_REDUCE_BLOCK) {
            size_t len = (size_t)(c - off < MF_COMM_REDUCE_BLOCK ? c - off : MF_COMM_REDUCE_BLOCK);
            for (uint32_t q = 0; q < n; q++) {
                const slot *sq = &g->slots[q];
                src[q] = sq->send + ((me->kind == K_REDUCE_SCATTER ? r * c : sq->sd[r]) + off) * e;
            }
            mf_comm_reduce(me->dtype, me->op, src, n, len, out + off * e);
        }
        break;
    }
    case K_ALLGATHERV:
        for (uint32_t q = 0; q < n; q++)
            if (me->rc[q] && out + me->rd[q] * e != g->slots[q].send)
                memcpy(out + me->rd[q] * e, g->slots[q].send, me->rc[q] * e);
        break;
    default: /* K_ALLTOALLV */
        for (uint32_t q = 0; q < n; q++) {
            const slot *sq = &g->slots[q];
            if (me->rc[q]) memcpy(out + me->rd[q] * e, sq->send + sq->sd[r] * e, me->rc[q] * e);
        }
        break;
    }
}

/* One collective on rank r: publish, arrive, judge, move, leave. s holds the call. */
static HcclResult collective(rank *rk, slot *call) {
    group *g = rk->g;
    const uint32_t r = rk->id;
    const char *fn = kind_names[call->kind];
    struct timespec deadline;
    if (g->timeout_s > 0) deadline_after(g->timeout_s, &deadline);
    pthread_mutex_lock(&g->lock);
    rk->owner = pthread_self();
    rk->has_owner = true;
    rk->last_use = atomic_fetch_add(&g_use_seq, 1) + 1;
    if (g->broken != HCCL_SUCCESS) {
        HcclResult b = g->broken;
        pthread_mutex_unlock(&g->lock);
        return (HcclResult)mf_fail(b, "%s: communicator %s is unusable: %s", fn, g->name,
                                   b == HCCL_E_TIMEOUT ? "a collective timed out (HCCL_EXEC_TIMEOUT)"
                                                       : "a rank was destroyed");
    }
    call->stage = NULL;
    g->slots[r] = *call;
    HcclResult rc = barrier(g, true, g->timeout_s > 0 ? &deadline : NULL);
    if (rc != HCCL_SUCCESS) {
        pthread_mutex_unlock(&g->lock);
        if (rc == HCCL_E_TIMEOUT)
            return (HcclResult)mf_fail(rc, "%s: rank %u of %s: not every rank arrived within HCCL_EXEC_TIMEOUT=%g s",
                                       fn, r, g->name, g->timeout_s);
        return (HcclResult)mf_fail(rc, "%s: rank %u of %s: a peer destroyed its rank", fn, r, g->name);
    }
    HcclResult verdict = g->verdict;
    const bool staged = g->staged;
    char why[sizeof g->why];
    memcpy(why, g->why, sizeof why);
    if (verdict != HCCL_SUCCESS || call->kind == K_BARRIER) {
        pthread_mutex_unlock(&g->lock);
        return verdict == HCCL_SUCCESS ? HCCL_SUCCESS : (HcclResult)mf_fail(verdict, "%s", why);
    }
    pthread_mutex_unlock(&g->lock);

    slot *me = &g->slots[r];
    if (call->kind == K_ALLREDUCE) {
        move_allreduce(g, r, staged);
    } else if (staged) {
        if (me->stage != NULL) {
            uint64_t off = me->wlo - (uint64_t)(uintptr_t)me->recv; /* keep what no source writes (gaps) */
            memcpy(me->stage + off, me->recv + off, me->whi - me->wlo);
            move_pull(g, r, me->stage);
        }
    } else {
        move_pull(g, r, me->recv);
    }

    pthread_mutex_lock(&g->lock);
    barrier(g, false, NULL); /* nobody reads an input any more */
    pthread_mutex_unlock(&g->lock);
    if (staged) {
        if (call->kind == K_ALLREDUCE) {
            allreduce_write_stage(g, r);
        } else if (me->stage != NULL) {
            uint64_t off = me->wlo - (uint64_t)(uintptr_t)me->recv;
            memcpy(me->recv + off, me->stage + off, me->whi - me->wlo);
        }
        free(me->stage);
        me->stage = NULL;
        /* every output written before any rank returns: an output here overlaps some rank's input */
        pthread_mutex_lock(&g->lock);
        barrier(g, false, NULL);
        pthread_mutex_unlock(&g->lock);
    }
    return HCCL_SUCCESS;
}

static void set_range(uint64_t *lo, uint64_t *hi, const void *p, uint64_t from, uint64_t to) {
    if (p == NULL || to <= from) {
        *lo = *hi = 0;
        return;
    }
    *lo = (uint64_t)(uintptr_t)p + from;
    *hi = (uint64_t)(uintptr_t)p + to;
}

/* count * mult elements of e bytes have a byte size below 2^63 (HCCL checks each count only). */
static HcclResult check_bytes(const char *fn, uint64_t count, uint64_t mult, size_t e) {
    uint64_t t;
    if (__builtin_mul_overflow(count, mult, &t) || __builtin_mul_overflow(t, e, &t) || t > (UINT64_MAX >> 1))
        return (HcclResult)mf_fail(HCCL_E_PARA, "%s: %llu x %llu elements do not fit in memory", fn,
                                   (unsigned long long)count, (unsigned long long)mult);
    return HCCL_SUCCESS;
}

#define TRY(x)                                   \
    do {                                         \
        HcclResult try_rc_ = (x);                \
        if (try_rc_ != HCCL_SUCCESS) return try_rc_; \
    } while (0)

/* ---- the collectives ---- */

HcclResult HcclAllReduce(void *sendBuf, void *recvBuf, uint64_t count, HcclDataType dataType, HcclReduceOp op,
                         HcclComm comm, aclrtStream stream) {
    const char *fn = "HcclAllReduce";
    if (count == 0) return HCCL_SUCCESS; /* as HCCL: before any check */
    TRY(check_stream(fn, stream));
    rank *r = NULL;
    TRY(get_rank(fn, comm, &r));
    if (sendBuf == NULL || recvBuf == NULL)
        return (HcclResult)mf_fail(HCCL_E_PTR, "%s: %s is NULL", fn, sendBuf == NULL ? "sendBuf" : "recvBuf");
    TRY(check_count(fn, "count", count));
    TRY(check_dtype(fn, dataType, true));
    TRY(check_op(fn, dataType, op));
    const size_t e = dt_size(dataType);
    slot s = {.kind = K_ALLREDUCE, .dtype = dataType, .op = op, .count = count, .send = sendBuf, .recv = recvBuf};
    set_range(&s.rlo, &s.rhi, sendBuf, 0, count * e);
    set_range(&s.wlo, &s.whi, recvBuf, 0, count * e);
    return collective(r, &s);
}

HcclResult HcclBroadcast(void *buf, uint64_t count, HcclDataType dataType, uint32_t root, HcclComm comm,
                         aclrtStream stream) {
    const char *fn = "HcclBroadcast";
    if (count == 0) return HCCL_SUCCESS;
    TRY(check_stream(fn, stream));
    rank *r = NULL;
    TRY(get_rank(fn, comm, &r));
    if (buf == NULL) return (HcclResult)mf_fail(HCCL_E_PTR, "%s: buf is NULL", fn);
    TRY(check_count(fn, "count", count));
    TRY(check_dtype(fn, dataType, false));
    if (root >= r->g->n)
        return (HcclResult)mf_fail(HCCL_E_PARA, "%s: root %u is not a rank (rank size %u)", fn, root, r->g->n);
    const size_t e = dt_size(dataType);
    slot s = {.kind = K_BROADCAST, .dtype = dataType, .count = count, .root = root, .send = buf, .recv = buf};
    if (r->id == root) set_range(&s.rlo, &s.rhi, buf, 0, count * e);
    else set_range(&s.wlo, &s.whi, buf, 0, count * e);
    return collective(r, &s);
}

HcclResult HcclReduceScatter(void *sendBuf, void *recvBuf, uint64_t recvCount, HcclDataType dataType,
                             HcclReduceOp op, HcclComm comm, aclrtStream stream) {
    const char *fn = "HcclReduceScatter";
    if (recvCount == 0) return HCCL_SUCCESS;
    TRY(check_stream(fn, stream));
    rank *r = NULL;
    TRY(get_rank(fn, comm, &r));
    if (sendBuf == NULL || recvBuf == NULL)
        return (HcclResult)mf_fail(HCCL_E_PTR, "%s: %s is NULL", fn, sendBuf == NULL ? "sendBuf" : "recvBuf");
    TRY(check_count(fn, "recvCount", recvCount));
    TRY(check_dtype(fn, dataType, true));
    TRY(check_op(fn, dataType, op));
    const size_t e = dt_size(dataType);
    TRY(check_bytes(fn, recvCount, r->g->n, e));
    slot s = {.kind = K_REDUCE_SCATTER, .dtype = dataType, .op = op, .count = recvCount, .send = sendBuf,
              .recv = recvBuf};
    set_range(&s.rlo, &s.rhi, sendBuf, 0, recvCount * r->g->n * e);
    set_range(&s.wlo, &s.whi, recvBuf, 0, recvCount * e);
    return collective(r, &s);
}

HcclResult HcclAllGather(void *sendBuf, void *recvBuf, uint64_t sendCount, HcclDataType dataType, HcclComm comm,
                         aclrtStream stream) {
    const char *fn = "HcclAllGather";
    if (sendCount == 0) return HCCL_SUCCESS;
    TRY(check_stream(fn, stream));
    rank *r = NULL;
    TRY(get_rank(fn, comm, &r));
    if (sendBuf == NULL || recvBuf == NULL)
        return (HcclResult)mf_fail(HCCL_E_PTR, "%s: %s is NULL", fn, sendBuf == NULL ? "sendBuf" : "recvBuf");
    TRY(check_count(fn, "sendCount", sendCount));
    TRY(check_dtype(fn, dataType, false));
    const size_t e = dt_size(dataType);
    TRY(check_bytes(fn, sendCount, r->g->n, e));
    slot s = {.kind = K_ALLGATHER, .dtype = dataType, .count = sendCount, .send = sendBuf, .recv = recvBuf};
    set_range(&s.rlo, &s.rhi, sendBuf, 0, sendCount * e);
    set_range(&s.wlo, &s.whi, recvBuf, 0, sendCount * r->g->n * e);
    return collective(r, &s);
}

/* Byte hull of the non-empty [displs[j], displs[j] + counts[j]) entries, after checking each. */
static HcclResult hull(const char *fn, const char *cname, const char *dname, const uint64_t *counts,
                       const uint64_t *displs, uint32_t n, size_t e, uint64_t *lo, uint64_t *hi) {
    *lo = UINT64_MAX;
    *hi = 0;
    for (uint32_t j = 0; j < n; j++) {
        TRY(check_count(fn, cname, counts[j]));
        if (displs[j] > MAX_DISPL)
            return (HcclResult)mf_fail(HCCL_E_PARA, "%s: %s[%u] = %llu is beyond 2^48 elements", fn, dname, j,
                                       (unsigned long long)displs[j]);
        if (counts[j] == 0) continue;
        if (displs[j] * e < *lo) *lo = displs[j] * e;
        if ((displs[j] + counts[j]) * e > *hi) *hi = (displs[j] + counts[j]) * e;
    }
    if (*hi == 0) *lo = 0;
    return HCCL_SUCCESS;
}

static HcclResult alltoallv(const char *fn, int kind, const void *sendBuf, const uint64_t *sc, const uint64_t *sd,
                            const void *recvBuf, const uint64_t *rc, const uint64_t *rd, HcclDataType recvType,
                            rank *r) {
    const uint32_t n = r->g->n;
    for (uint32_t j = 0; j < n; j++) { /* HCCL's order: the counts (CheckCount), then the type */
        TRY(check_count(fn, "sendCounts[j]", sc[j]));
        TRY(check_count(fn, "recvCounts[j]", rc[j]));
    }
    TRY(check_dtype(fn, recvType, false));
    const size_t e = dt_size(recvType);
    uint64_t slo, shi, rlo, rhi;
    TRY(hull(fn, "sendCounts", "sdispls", sc, sd, n, e, &slo, &shi));
    TRY(hull(fn, "recvCounts", "rdispls", rc, rd, n, e, &rlo, &rhi));
    if (shi > 0 && sendBuf == NULL) return (HcclResult)mf_fail(HCCL_E_PTR, "%s: sendBuf is NULL", fn);
    if (rhi > 0 && recvBuf == NULL) return (HcclResult)mf_fail(HCCL_E_PTR, "%s: recvBuf is NULL", fn);
    slot s = {.kind = kind, .dtype = recvType, .send = sendBuf, .recv = (char *)(uintptr_t)recvBuf,
              .sc = sc, .sd = sd, .rc = rc, .rd = rd};
    set_range(&s.rlo, &s.rhi, sendBuf, slo, shi);
    set_range(&s.wlo, &s.whi, recvBuf, rlo, rhi);
    return collective(r, &s);
}

/* As HCCL's: the element type is recvType (sendType is not read); sendBuf == recvBuf is refused. */
HcclResult HcclAlltoAllV(const void *sendBuf, const void *sendCounts, const void *sdispls, HcclDataType sendType,
                         const void *recvBuf, const void *recvCounts, const void *rdispls, HcclDataType recvType,
                         HcclComm comm, aclrtStream stream) {
    const char *fn = "HcclAlltoAllV";
    (void)sendType;
    rank *r = NULL;
    TRY(get_rank(fn, comm, &r));
    const char *null = sendCounts == NULL ? "sendCounts" : sdispls == NULL ? "sdispls" : recvCounts == NULL ? "recvCounts"
                                                                                    : rdispls == NULL ? "rdispls" : NULL;
    if (null != NULL) return (HcclResult)mf_fail(HCCL_E_PTR, "%s: %s is NULL", fn, null);
    TRY(check_stream(fn, stream));
    if (sendBuf != NULL && sendBuf == recvBuf)
        return (HcclResult)mf_fail(HCCL_E_PARA, "%s: sendBuf and recvBuf are the same (no in-place alltoallv)", fn);
    return alltoallv(fn, K_ALLTOALLV, sendBuf, sendCounts, sdispls, recvBuf, recvCounts, rdispls, recvType, r);
}

/* As HCCL's: recvCount elements of recvType to and from every rank (sendCount and sendType are not read
 * beyond the both-zero early return). */
HcclResult HcclAlltoAll(const void *sendBuf, uint64_t sendCount, HcclDataType sendType, const void *recvBuf,
                        uint64_t recvCount, HcclDataType recvType, HcclComm comm, aclrtStream stream) {
    const char *fn = "HcclAlltoAll";
    (void)sendType;
    if (sendCount == 0 && recvCount == 0) return HCCL_SUCCESS;
    TRY(check_stream(fn, stream));
    rank *r = NULL;
    TRY(get_rank(fn, comm, &r));
    TRY(check_count(fn, "recvCount", recvCount));
    TRY(check_dtype(fn, recvType, false));
    TRY(check_bytes(fn, recvCount, r->g->n, dt_size(recvType)));
    if (recvCount > 0 && (sendBuf == NULL || recvBuf == NULL))
        return (HcclResult)mf_fail(HCCL_E_PTR, "%s: %s is NULL", fn, sendBuf == NULL ? "sendBuf" : "recvBuf");
    const uint32_t n = r->g->n;
    uint64_t *arr = mf_malloc((size_t)n * 2 * sizeof *arr);
    if (arr == NULL) return (HcclResult)mf_fail(HCCL_E_MEMORY, "%s: out of memory", fn);
    uint64_t *counts = arr, *displs = arr + n;
    for (uint32_t j = 0; j < n; j++) {
        counts[j] = recvCount;
        displs[j] = j * recvCount;
    }
    HcclResult rc = alltoallv(fn, K_ALLTOALL, sendBuf, counts, displs, recvBuf, counts, displs, recvType, r);
    free(arr);
    return rc;
}

HcclResult HcclBarrier(HcclComm comm, aclrtStream stream) {
    const char *fn = "HcclBarrier";
    TRY(check_stream(fn, stream));
    rank *r = NULL;
    TRY(get_rank(fn, comm, &r));
    slot s = {.kind = K_BARRIER};
    return collective(r, &s);
}

/* recvBuf[recvDispls[r] ..] = rank r's sendBuf (recvCounts[r] == rank r's sendCount). As HCCL's: recvCounts
 * all 0 returns at once; sendBuf may be NULL when sendCount is 0, recvBuf when recvCounts are all 0. */
HcclResult HcclAllGatherV(void *sendBuf, uint64_t sendCount, void *recvBuf, const void *recvCounts,
                          const void *recvDispls, HcclDataType dataType, HcclComm comm, aclrtStream stream) {
    const char *fn = "HcclAllGatherV";
    rank *r = NULL;
    TRY(get_rank(fn, comm, &r));
    if (recvCounts == NULL || recvDispls == NULL)
        return (HcclResult)mf_fail(HCCL_E_PTR, "%s: %s is NULL", fn, recvCounts == NULL ? "recvCounts" : "recvDispls");
    TRY(check_stream(fn, stream));
    if (sendCount > 0 && sendBuf == NULL) return (HcclResult)mf_fail(HCCL_E_PTR, "%s: sendBuf is NULL", fn);
    const uint64_t *rc = recvCounts, *rd = recvDispls;
    const uint32_t n = r->g->n;
    bool all_zero = true;
    for (uint32_t j = 0; j < n; j++) all_zero = all_zero && rc[j] == 0;
    if (all_zero) return HCCL_SUCCESS;
    if (recvBuf == NULL) return (HcclResult)mf_fail(HCCL_E_PTR, "%s: recvBuf is NULL", fn);
    TRY(check_count(fn, "sendCount", sendCount));
    TRY(check_dtype(fn, dataType, false));
    const size_t e = dt_size(dataType);
    uint64_t wlo, whi;
    TRY(hull(fn, "recvCounts", "recvDispls", rc, rd, n, e, &wlo, &whi));
    slot s = {.kind = K_ALLGATHERV, .dtype = dataType, .count = sendCount, .send = sendBuf, .recv = recvBuf,
              .rc = rc, .rd = rd};
    set_range(&s.rlo, &s.rhi, sendBuf, 0, sendCount * e);
    set_range(&s.wlo, &s.whi, recvBuf, wlo, whi);
    return collective(r, &s);
}

/* recvBuf = op over ranks q of rank q's sendBuf[sendDispls[r] ..] (sendCounts[r] == rank r's recvCount). As
 * HCCL's: sendCounts all 0 returns at once; recvBuf may be NULL when recvCount is 0. */
HcclResult HcclReduceScatterV(void *sendBuf, const void *sendCounts, const void *sendDispls, void *recvBuf,
                              uint64_t recvCount, HcclDataType dataType, HcclReduceOp op, HcclComm comm,
                              aclrtStream stream) {
    const char *fn = "HcclReduceScatterV";
    TRY(check_stream(fn, stream));
    rank *r = NULL;
    TRY(get_rank(fn, comm, &r));
    if (sendCounts == NULL || sendDispls == NULL)
        return (HcclResult)mf_fail(HCCL_E_PTR, "%s: %s is NULL", fn, sendCounts == NULL ? "sendCounts" : "sendDispls");
    if (recvCount > 0 && recvBuf == NULL) return (HcclResult)mf_fail(HCCL_E_PTR, "%s: recvBuf is NULL", fn);
    const uint64_t *sc = sendCounts, *sd = sendDispls;
    const uint32_t n = r->g->n;
    bool all_zero = true;
    for (uint32_t j = 0; j < n; j++) all_zero = all_zero && sc[j] == 0;
    if (all_zero) return HCCL_SUCCESS;
    if (sendBuf == NULL) return (HcclResult)mf_fail(HCCL_E_PTR, "%s: sendBuf is NULL", fn);
    TRY(check_count(fn, "recvCount", recvCount));
    TRY(check_dtype(fn, dataType, true));
    TRY(check_op(fn, dataType, op));
    const size_t e = dt_size(dataType);
    uint64_t rlo, rhi;
    TRY(hull(fn, "sendCounts", "sendDispls", sc, sd, n, e, &rlo, &rhi));
    slot s = {.kind = K_REDUCE_SCATTERV, .dtype = dataType, .op = op, .count = recvCount, .send = sendBuf,
              .recv = recvBuf, .sc = sc, .sd = sd};
    set_range(&s.rlo, &s.rhi, sendBuf, rlo, rhi);
    set_range(&s.wlo, &s.whi, recvBuf, 0, recvCount * e);
    return collective(r, &s);
}

/* ---- point to point ---- */

static HcclResult p2p_args(const char *fn, const void *buf, uint64_t count, HcclDataType dt, uint32_t peer,
                           const char *pname, HcclComm comm, aclrtStream stream, rank **r) {
    TRY(check_stream(fn, stream));
    TRY(get_rank(fn, comm, r));
    if (buf == NULL) return (HcclResult)mf_fail(HCCL_E_PTR, "%s: buffer is NULL", fn);
    TRY(check_count(fn, "count", count));
    TRY(check_dtype(fn, dt, false));
    if (peer >= (*r)->g->n || peer == (*r)->id)
        return (HcclResult)mf_fail(HCCL_E_PARA, "%s: %s %u is not another rank (rank %u of %u)", fn, pname, peer,
                                   (*r)->id, (*r)->g->n);
    return HCCL_SUCCESS;
}

HcclResult HcclSend(void *sendBuf, uint64_t count, HcclDataType dataType, uint32_t destRank, HcclComm comm,
                    aclrtStream stream) {
    const char *fn = "HcclSend";
    if (count == 0) return HCCL_SUCCESS;
    rank *r = NULL;
    TRY(p2p_args(fn, sendBuf, count, dataType, destRank, "destRank", comm, stream, &r));
    group *g = r->g;
    size_t bytes = (size_t)(count * dt_size(dataType));
    msg *m = mf_malloc(sizeof *m + bytes);
    if (m == NULL) return (HcclResult)mf_fail(HCCL_E_MEMORY, "%s: cannot stage %zu bytes", fn, bytes);
    m->next = NULL;
    m->dtype = dataType;
    m->count = count;
    memcpy(m->data, sendBuf, bytes);
    pthread_mutex_lock(&g->lock);
    if (g->broken != HCCL_SUCCESS) {
        HcclResult b = g->broken;
        pthread_mutex_unlock(&g->lock);
        free(m);
        return (HcclResult)mf_fail(b, "%s: communicator %s is unusable", fn, g->name);
    }
    size_t q = (size_t)r->id * g->n + destRank;
    if (g->q_tail[q] != NULL) g->q_tail[q]->next = m;
    else g->q_head[q] = m;
    g->q_tail[q] = m;
    pthread_cond_broadcast(&g->cond);
    pthread_mutex_unlock(&g->lock);
    return HCCL_SUCCESS;
}

/* Takes the oldest message from srcRank; one whose count or type differs is refused (and stays queued). */
HcclResult HcclRecv(void *recvBuf, uint64_t count, HcclDataType dataType, uint32_t srcRank, HcclComm comm,
                    aclrtStream stream) {
    const char *fn = "HcclRecv";
    if (count == 0) return HCCL_SUCCESS;
    rank *r = NULL;
    TRY(p2p_args(fn, recvBuf, count, dataType, srcRank, "srcRank", comm, stream, &r));
    group *g = r->g;
    struct timespec deadline;
    if (g->timeout_s > 0) deadline_after(g->timeout_s, &deadline);
    size_t q = (size_t)srcRank * g->n + r->id;
    pthread_mutex_lock(&g->lock);
    while (g->q_head[q] == NULL) { /* a message sent before the sender left is still delivered */
        if (g->broken != HCCL_SUCCESS) {
            HcclResult b = g->broken;
            pthread_mutex_unlock(&g->lock);
            return (HcclResult)mf_fail(b, "%s: communicator %s is unusable (%s)", fn, g->name,
                                       b == HCCL_E_TIMEOUT ? "timed out" : "a rank was destroyed");
        }
        int rc = g->timeout_s > 0 ? pthread_cond_timedwait(&g->cond, &g->lock, &deadline)
                                  : pthread_cond_wait(&g->cond, &g->lock);
        if (rc == ETIMEDOUT && g->q_head[q] == NULL) {
            if (g->broken == HCCL_SUCCESS) g->broken = HCCL_E_TIMEOUT;
            pthread_cond_broadcast(&g->cond);
            pthread_mutex_unlock(&g->lock);
            return (HcclResult)mf_fail(HCCL_E_TIMEOUT, "%s: rank %u got nothing from rank %u within "
                                       "HCCL_EXEC_TIMEOUT=%g s", fn, r->id, srcRank, g->timeout_s);
        }
    }
    msg *m = g->q_head[q];
    if (m->count != count || m->dtype != (int)dataType) {
        pthread_mutex_unlock(&g->lock);
        return (HcclResult)mf_fail(HCCL_E_PARA, "%s: rank %u sent %llu x %s, rank %u receives %llu x %s", fn, srcRank,
                                   (unsigned long long)m->count, dt_name(m->dtype), r->id,
                                   (unsigned long long)count, dt_name(dataType));
    }
    g->q_head[q] = m->next;
    if (m->next == NULL) g->q_tail[q] = NULL;
    pthread_mutex_unlock(&g->lock);
    memcpy(recvBuf, m->data, (size_t)(count * dt_size(dataType)));
    free(m);
    return HCCL_SUCCESS;
}
