/* main.c - `make bench`: a thin program around moefr_bench_main (bench.c), the
 * same entry point the `moefr bench` CLI command calls. */
#include "bench/bench.h"

int main(int argc, char **argv) { return moefr_bench_main(argc, argv); }
