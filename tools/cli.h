/* cli.h - what the moefr CLI's command files (tools/cmd_*.c) share with
 * tools/moefr.c: option parsing, .npy tensors, outputs, error reporting. */
#ifndef MOEFR_TOOLS_CLI_H_
#define MOEFR_TOOLS_CLI_H_

#include <stdint.h>

#include "acl/acl.h"
#include "npy.h"

enum { EXIT_OK = 0, EXIT_REJECTED = 1, EXIT_USAGE = 2, EXIT_FILE = 3 };
extern const char *g_cmd;
extern int g_verbose;

typedef enum { OPT_FILE, OPT_INT, OPT_DTYPE, OPT_DIR } opt_kind;

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
/* 0, 1 for --help, or EXIT_USAGE after printing why */
int parse_opts(int argc, char **argv, int first, cli_opt *opts, int n);
cli_opt *opt(cli_opt *opts, int n, const char *flag);
void cleanup_tensor(cli_tensor *c);
int load_tensor(const cli_opt *o, int bf16, cli_tensor *c);
int make_output(cli_tensor *c, const char *name, aclDataType dt, int ndim, const int64_t *dims);
void operator_error(const char *api, aclnnStatus st, const param_flag *map, int nmap, cli_opt *opts, int nopts);
int write_outputs(const char *dir, cli_tensor **outs, const char **names, int n);
int runtime_up(aclrtStream *stream);
void runtime_down(aclrtStream stream);
void verbose_report(const char *op, double t_load, double t_plan, double t_run, double t_write, double bytes);
aclnnStatus run_phase2(aclnnStatus (*fn)(void *, uint64_t, aclOpExecutor *, aclrtStream), uint64_t ws_size,
                       aclOpExecutor *ex, aclrtStream stream, int *alloc_failed);

/* tools/cmd_permute.c */
int cmd_permute(int argc, char **argv, int first);
int cmd_unpermute(int argc, char **argv, int first);

#endif /* MOEFR_TOOLS_CLI_H_ */
