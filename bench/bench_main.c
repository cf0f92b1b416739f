/*
 * bench_main.c -- `idgen-bench`: the benchmark suite as its own program.
 */
int idgen_bench_main(int argc, char **argv);

int main(int argc, char **argv) { return idgen_bench_main(argc, argv); }
