/* cli.h - what the moefr CLI's commands (tools/moefr.c and tools/cmd_*.c)
 * share, defined in tools/cli.c: option parsing, .npy tensors, outputs, error
 * reporting; and the commands of the cmd_*.c files, for main in tools/moefr.c. */
#ifndef MOEFR_TOOLS_CLI_H_
#define MOEFR_TOOLS_CLI_H_

#include <stdint.h>

#include "acl/acl.h"
#include "aclnn/aclnn_base.h"
#include "npy.h"

/* Exit status, SPEC section 7. */
enum { EXIT_OK = 0, EXIT_REJECTED = 1, EXIT_USAGE = 2, EXIT_FILE = 3 };
extern const char *g_cmd;
extern int g_verbose;

/* OPT_FILE: a .npy tensor of <f2 <f4 <i4 |i1 (or <u2 as bf16 bits with --dtype bf16);
 * OPT_FILE_FLOAT: the same without <i4 and |i1; OPT_FILE_BOOL: an <i4 file read as an
 * ACL_BOOL tensor, nonzero = true (.npy bool is not among the CLI's dtypes);
 * OPT_FILE_INT64: an <i8 file read as ACL_INT64 (a group list), the only kind
 * that takes <i8; OPT_FLAG: takes no value (value = the flag, ival = 1;
 * repeating it is harmless). */
typedef enum {
    OPT_FILE, OPT_INT, OPT_DTYPE, OPT_DIR, OPT_FILE_FLOAT, OPT_FILE_BOOL, OPT_FLAG, OPT_FILE_INT64
} opt_kind;

typedef struct {
    const char *flag;  /* "--grad-y" */
    const char *param; /* operator parameter it feeds, for messages */
    opt_kind kind;
    int required;
    const char *value; /* as given */
    int64_t ival;
} cli_opt;

/* One operator argument: its file, the bytes in "device" memory and the tensor. */
typedef struct {
    const char *flag, *path;
    mf_npy npy;
    void *file_buf;
    aclDataType dt;
    int ndim;
    int64_t dims[MF_NPY_MAX_DIMS];
    size_t nbytes;
    void *dev;
    aclTensor *t;
} cli_tensor;

typedef struct {
    const char *param, *flag;
} param_flag;

void msg(const char *fmt, ...);
double now_us(void);
/* 0, 1 for --help (after printing help to stdout), or EXIT_USAGE after printing why */
int parse_opts(int argc, char **argv, int first, cli_opt *opts, int n, const char *help);
cli_opt *opt(cli_opt *opts, int n, const char *flag);
void cleanup_tensor(cli_tensor *c);
/* Loads o's file as o->kind says; an option not given leaves c empty (c->t NULL). */
int load_tensor(const cli_opt *o, int bf16, cli_tensor *c);
int make_output(cli_tensor *c, const char *name, aclDataType dt, int ndim, const int64_t *dims);
void operator_error(const char *api, aclnnStatus st, const param_flag *map, int nmap, cli_opt *opts, int nopts);
/* outs[0..n) (n <= 4) to dir/names[i], all or nothing. */
int write_outputs(const char *dir, cli_tensor **outs, const char **names, int n);
int runtime_up(aclrtStream *stream);
void runtime_down(aclrtStream stream);
void verbose_report(const char *op, double t_load, double t_plan, double t_run, double t_write, double bytes);
aclnnStatus run_phase2(aclnnStatus (*fn)(void *, uint64_t, aclOpExecutor *, aclrtStream), uint64_t ws_size,
                       aclOpExecutor *ex, aclrtStream stream, int *alloc_failed);
/* Phase 1's status st (reported as plan_api), then phase 2 (as run_api) with
 * its workspace; returns 0 or EXIT_REJECTED after operator_error. */
int run_operator(const char *plan_api, const char *run_api, aclnnStatus st, aclOpExecutor *ex, uint64_t ws,
                 aclnnStatus (*phase2)(void *, uint64_t, aclOpExecutor *, aclrtStream), aclrtStream stream,
                 const param_flag *map, int nmap, cli_opt *opts, int nopts);

/* The commands main (tools/moefr.c) dispatches to. tools/cmd_permute.c: */
int cmd_permute(int argc, char **argv, int first);
int cmd_unpermute(int argc, char **argv, int first);
/* tools/cmd_init_routing.c: */
int cmd_init_routing(int argc, char **argv, int first);
/* tools/cmd_init_routing_v3.c: */
int cmd_init_routing_v3(int argc, char **argv, int first);
/* tools/cmd_gating.c: */
int cmd_gating(int argc, char **argv, int first);
/* tools/cmd_gating_group.c: */
int cmd_gating_topk(int argc, char **argv, int first);
int cmd_fused_topk(int argc, char **argv, int first);
/* tools/cmd_mlp.c: */
int cmd_swiglu(int argc, char **argv, int first);
int cmd_gmm(int argc, char **argv, int first);
/* tools/cmd_re_routing.c: */
int cmd_re_routing(int argc, char **argv, int first);
/* tools/cmd_init_routing_quant.c: */
int cmd_init_routing_quant(int argc, char **argv, int first);

/* tools/cmd_routing_map.c (issue 22): */
int cmd_permute_map(int argc, char **argv, int first);
int cmd_unpermute_map(int argc, char **argv, int first);
/* tools/cmd_ep.c: */
int cmd_permute_ep(int argc, char **argv, int first);
int cmd_unpermute_ep(int argc, char **argv, int first);

#endif /* MOEFR_TOOLS_CLI_H_ */
