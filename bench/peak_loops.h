/* peak_loops.h - the body of the arithmetic-peak loops (peak.c), written once
 * and built per ISA. The includer defines PK_V (the accumulator type),
 * PK_SET(x) (x in every lane), PK_A, PK_INIT_A and PK_INIT_B (the operands'
 * type and values), PK_STEP(acc, a, b) (one multiply-add instruction into
 * acc), PK_SUM(v) (v's lanes summed), PK_REG(a) (an asm constraint holding a
 * in a vector register) and PK_FN (the function's name). Twelve independent
 * accumulators cover the latency of every multiply-add pipe of the CPUs moefr
 * runs on (4-6 cycles, two pipes); the empty asm makes `a` look changed each
 * pass, so the compiler can neither hoist nor fold the work. */
float PK_FN(long iters) {
    /* distinct starting values: twelve equal chains would be folded into one */
    PK_V c0 = PK_SET(0.0f), c1 = PK_SET(1.0f), c2 = PK_SET(2.0f), c3 = PK_SET(3.0f), c4 = PK_SET(4.0f);
    PK_V c5 = PK_SET(5.0f), c6 = PK_SET(6.0f), c7 = PK_SET(7.0f), c8 = PK_SET(8.0f), c9 = PK_SET(9.0f);
    PK_V c10 = PK_SET(10.0f), c11 = PK_SET(11.0f);
    PK_A a = PK_INIT_A, b = PK_INIT_B;
    for (long i = 0; i < iters; i++) {
        __asm__ volatile("" : PK_REG(a));
        c0 = PK_STEP(c0, a, b), c1 = PK_STEP(c1, a, b), c2 = PK_STEP(c2, a, b), c3 = PK_STEP(c3, a, b);
        c4 = PK_STEP(c4, a, b), c5 = PK_STEP(c5, a, b), c6 = PK_STEP(c6, a, b), c7 = PK_STEP(c7, a, b);
        c8 = PK_STEP(c8, a, b), c9 = PK_STEP(c9, a, b), c10 = PK_STEP(c10, a, b), c11 = PK_STEP(c11, a, b);
    }
    return PK_SUM(c0) + PK_SUM(c1) + PK_SUM(c2) + PK_SUM(c3) + PK_SUM(c4) + PK_SUM(c5) + PK_SUM(c6) + PK_SUM(c7) +
           PK_SUM(c8) + PK_SUM(c9) + PK_SUM(c10) + PK_SUM(c11);
}
