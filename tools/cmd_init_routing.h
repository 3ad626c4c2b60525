/* tools/cmd_init_routing.h - `moefr init-routing` (tools/cmd_init_routing.c). */
#ifndef MOEFR_TOOLS_CMD_INIT_ROUTING_H_
#define MOEFR_TOOLS_CMD_INIT_ROUTING_H_

/* argv[first..argc): the subcommand's options; verbose: -v given before it.
 * Returns the CLI's exit status (0, 1 rejected, 2 usage, 3 file). */
int moefr_cmd_init_routing(int argc, char **argv, int first, int verbose);

#define MOEFR_INIT_ROUTING_USAGE                                                                  \
    "  init-routing  aclnnMoeInitRoutingV2 (or with --v1 aclnnMoeInitRouting) on .npy files\n"   \
    "           --x F --expert-idx F [--active-num N] [--expert-capacity N] [--expert-num N]\n"   \
    "           [--drop-pad-mode N] [--count-flag N] [--before-capacity-flag 0|1]\n"               \
    "           [--v1 [--row-idx F]] [--dtype bf16] --out DIR   (init-routing --help)\n"

#endif /* MOEFR_TOOLS_CMD_INIT_ROUTING_H_ */
