/* env.c - environment switches read once per process, and the version. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "moefr/moefr.h"

static bool g_strict;
static pthread_once_t g_soc_once = PTHREAD_ONCE_INIT;

static void soc_init(void) {
    const char *v = getenv("MOEFR_SOC");
    g_strict = v != NULL && strcmp(v, "ascend910b") == 0;
}

bool mf_soc_strict(void) {
    pthread_once(&g_soc_once, soc_init);
    return g_strict;
}

const char *moefrSoc(void) { return mf_soc_strict() ? "ascend910b" : "ascend950"; }

static bool g_index_strict;
static pthread_once_t g_istrict_once = PTHREAD_ONCE_INIT;

static void istrict_init(void) {
    const char *v = getenv("MOEFR_STRICT");
    g_index_strict = v != NULL && strcmp(v, "1") == 0;
    if (v != NULL && *v != '\0' && strcmp(v, "0") != 0 && !g_index_strict)
        mf_log(MF_LOG_WARN, "MOEFR_STRICT=%s is not 0 or 1: index checks stay off", v);
}

bool mf_index_strict(void) {
    pthread_once(&g_istrict_once, istrict_init);
    return g_index_strict;
}

static int g_grad_order;
static pthread_once_t g_order_once = PTHREAD_ONCE_INIT;

static void order_init(void) {
    const char *v = getenv("MOEFR_GRAD_ORDER");
    if (v == NULL || *v == '\0' || strcmp(v, "auto") == 0) g_grad_order = MF_ORDER_AUTO;
    else if (strcmp(v, "token") == 0) g_grad_order = MF_ORDER_TOKEN;
    else if (strcmp(v, "row") == 0) g_grad_order = MF_ORDER_ROW;
    else mf_log(MF_LOG_WARN, "MOEFR_GRAD_ORDER=%s is not auto, token or row: using auto", v);
}

int mf_grad_order(void) {
    pthread_once(&g_order_once, order_init);
    return g_grad_order;
}

#define MF_STR2(x) #x
#define MF_STR(x) MF_STR2(x)
const char *moefrVersion(void) {
    return MF_STR(MOEFR_VERSION_MAJOR) "." MF_STR(MOEFR_VERSION_MINOR) "." MF_STR(MOEFR_VERSION_PATCH);
}

int moefrNumThreads(void) { return mf_num_threads(); }
