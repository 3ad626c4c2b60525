/* big_frame.c - one deliberately large frame (128 KiB, twice the budget of
 * scripts/check-frames.sh), compiled only for test_stack_frames_selftest. */
void mf_big_frame_sink(volatile char *p);
void mf_big_frame(void);
void mf_big_frame(void) {
    volatile char big[128 * 1024];
    mf_big_frame_sink(big);
}
