/* error.c - the per-thread recent error message and stderr logging.
 * Each failing call replaces its thread's message; reading never clears it. */
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "acl/acl_base.h"
#include "internal.h"

static _Thread_local char tls_msg[512];
static _Thread_local bool tls_has_msg;

const char *aclGetRecentErrMsg(void) { return tls_has_msg ? tls_msg : NULL; }

static int g_log_level;
static pthread_once_t g_log_once = PTHREAD_ONCE_INIT;

static void log_init(void) {
    const char *v = getenv("MOEFR_LOG_LEVEL");
    static const char *const names[] = {"none", "error", "warn", "info", "debug"};
    g_log_level = MF_LOG_NONE;
    if (v == NULL) return;
    for (int i = 0; i < 5; i++)
        if (strcmp(v, names[i]) == 0) g_log_level = i;
}

int mf_log_level(void) {
    pthread_once(&g_log_once, log_init);
    return g_log_level;
}

static void vlog(int level, const char *fmt, va_list ap) {
    static const char *const tags[] = {"", "error", "warn", "info", "debug"};
    if (level > mf_log_level()) return;
    char line[600];
    vsnprintf(line, sizeof line, fmt, ap);
    fprintf(stderr, "moefr %s: %s\n", tags[level], line);
}

void mf_log(int level, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vlog(level, fmt, ap);
    va_end(ap);
}

static void vset(const char *fmt, va_list ap) {
    va_list ap2;
    va_copy(ap2, ap);
    vsnprintf(tls_msg, sizeof tls_msg, fmt, ap);
    /* one line, always */
    for (char *p = tls_msg; *p; p++)
        if (*p == '\n') *p = ' ';
    tls_has_msg = true;
    vlog(MF_LOG_ERROR, fmt, ap2);
    va_end(ap2);
}

void mf_set_error(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vset(fmt, ap);
    va_end(ap);
}

int mf_fail(int status, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vset(fmt, ap);
    va_end(ap);
    return status;
}
