/* test_registry.c - every operator kind has exactly one registry entry
 * (src/ops/opdef.h), so a new operator without one fails here, and every
 * entry is well formed: its thunk reaches the operator's own phase 1 (all
 * tensors NULL: 161001 naming the operator; 161002 for GroupedMatmulAdd,
 * whose op_api returns its null checks so) and its phase 2 refuses a NULL
 * executor. fuzz/fuzz_ops.c drives every entry. */
#include <stdio.h>
#include <string.h>

#include "acl/acl.h"
#include "ops/opdef.h"

static int fails;
#define CHECK(c, ...)                                          \
    do {                                                       \
        if (!(c)) {                                            \
            fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__); \
            fprintf(stderr, __VA_ARGS__);                      \
            fputc('\n', stderr);                               \
            fails++;                                           \
        }                                                      \
    } while (0)

int main(void) {
    int n = 0;
    const mf_op_entry *const *all = mf_op_entries(&n);
    int kinds = 0;
    for (int k = 1; k < MF_OP_KIND_END; k++) kinds += !MF_OP_KIND_RESERVED(k);
    CHECK(n == kinds, "%d entries for %d operator kinds", n, kinds);
    for (int k = 1; k < MF_OP_KIND_END; k++) {
        if (MF_OP_KIND_RESERVED(k)) continue;
        int found = 0;
        for (int i = 0; i < n; i++) found += all[i]->sig->kind == (mf_op_kind)k;
        CHECK(found == 1, "operator kind %d has %d registry entries (want 1: define one in its source file and list it in "
                          "src/ops/opdef.c)", k, found);
    }
    for (int i = 0; i < n; i++) {
        const mf_op_entry *e = all[i];
        const mf_op_def *d = e->sig;
        CHECK(d->name && strncmp(d->name, "aclnn", 5) == 0, "entry %d: name %s", i, d->name ? d->name : "(null)");
        for (int j = 0; j < i; j++) CHECK(strcmp(all[j]->sig->name, d->name) != 0, "%s listed twice", d->name);
        CHECK(d->n_in >= 1 && d->n_out >= 1 && d->n_in + d->n_out <= MF_EXEC_SLOTS, "%s: %d inputs, %d outputs",
              d->name, d->n_in, d->n_out);
        CHECK(e->nattr >= 0 && e->nattr <= MF_ATTR_MAX && (e->nattr == 0 || e->attrs != NULL), "%s: %d attributes",
              d->name, e->nattr);
        for (int a = 0; a < e->nattr; a++)
            CHECK(e->attrs[a].name != NULL && e->attrs[a].lo <= e->attrs[a].hi, "%s: attribute %d", d->name, a);
        CHECK(d->ncols >= 1 && d->cols != NULL, "%s: no dtype columns", d->name);
        CHECK(e->gws != NULL && e->run != NULL, "%s: missing phase", d->name);
        const aclTensor *t[MF_EXEC_SLOTS] = {0};
        mf_attr_val av[MF_ATTR_MAX];
        memset(av, 0, sizeof av);
        for (int a = 0; a < e->nattr; a++) av[a].i = e->attrs[a].lo;
        uint64_t ws = 7;
        aclOpExecutor *ex = NULL;
        aclnnStatus rc = e->gws(t, av, &ws, &ex);
        const char *m = aclGetRecentErrMsg();
        /* GroupedMatmulAdd's op_api returns its null checks as PARAM_INVALID (CheckParams) */
        const aclnnStatus want = d->kind == MF_OP_GROUPED_MATMUL_ADD || d->kind == MF_OP_GROUPED_MATMUL_ADD_V2
                                     ? ACLNN_ERR_PARAM_INVALID
                                     : ACLNN_ERR_PARAM_NULLPTR;
        CHECK(rc == want && ex == NULL, "%s: all-NULL phase 1 gave %d", d->name, (int)rc);
        CHECK(m != NULL && strstr(m, d->name) != NULL, "%s: message %s", d->name, m ? m : "(none)");
        rc = e->run(NULL, 0, NULL, NULL);
        CHECK(rc != ACLNN_SUCCESS, "%s: phase 2 accepted a NULL executor", d->name);
    }
    if (fails == 0) printf("test_registry: %d operators, every kind registered\n", n);
    return fails != 0;
}
