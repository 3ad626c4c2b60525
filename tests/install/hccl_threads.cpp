// hccl_threads.cpp - an HCCL program written the way CANN's samples write them (C++, std::thread per
// device, HcclCommInitAll, aclrtSetDevice/aclrtMalloc/aclrtCreateStream, HcclAllReduce then
// aclrtSynchronizeStream), built like hicann/hccl's example Makefiles: -I$ASCEND_HOME_PATH/include
// -L$ASCEND_HOME_PATH/lib64 -lhccl -lascendcl. Prints "hccl_threads ok" when every rank holds the sum.
#include <cstdio>
#include <thread>
#include <vector>

#include "hccl/hccl.h"
#include "hccl/hccl_types.h"

static int Rank(HcclComm comm, uint32_t rank, uint32_t n, int *status) {
    const uint64_t count = 1000;
    *status = 1;
    if (aclrtSetDevice(0) != ACL_SUCCESS) return 1;  // moefr's runtime has device 0 (issue 38 item 6)
    void *send = nullptr, *recv = nullptr;
    aclrtStream stream = nullptr;
    if (aclrtMalloc(&send, count * sizeof(float), ACL_MEM_MALLOC_HUGE_FIRST) != ACL_SUCCESS ||
        aclrtMalloc(&recv, count * sizeof(float), ACL_MEM_MALLOC_HUGE_FIRST) != ACL_SUCCESS ||
        aclrtCreateStream(&stream) != ACL_SUCCESS)
        return 1;
    float *s = static_cast<float *>(send);
    for (uint64_t i = 0; i < count; i++) s[i] = static_cast<float>(rank * 1000 + i);
    char name[COMM_NAME_MAX_LENGTH];
    if (HcclGetCommName(comm, name) != HCCL_SUCCESS) return 1;
    if (HcclAllReduce(send, recv, count, HCCL_DATA_TYPE_FP32, HCCL_REDUCE_SUM, comm, stream) != HCCL_SUCCESS) return 1;
    if (aclrtSynchronizeStream(stream) != ACL_SUCCESS) return 1;
    const float *r = static_cast<const float *>(recv);
    for (uint64_t i = 0; i < count; i++)
        if (r[i] != static_cast<float>(n * i + 1000.0 * n * (n - 1) / 2)) return 1;
    aclrtDestroyStream(stream);
    aclrtFree(send);
    aclrtFree(recv);
    *status = 0;
    return 0;
}

int main() {
    if (aclInit(nullptr) != ACL_SUCCESS) return 1;
    const uint32_t n = 4;
    std::vector<int32_t> devices = {0, 1, 2, 3};
    std::vector<HcclComm> comms(n);
    if (HcclCommInitAll(n, devices.data(), comms.data()) != HCCL_SUCCESS) return 1;
    std::vector<int> status(n, 1);
    std::vector<std::thread> threads;
    for (uint32_t i = 0; i < n; i++) threads.emplace_back(Rank, comms[i], i, n, &status[i]);
    for (auto &t : threads) t.join();
    for (uint32_t i = 0; i < n; i++)
        if (status[i] != 0 || HcclCommDestroy(comms[i]) != HCCL_SUCCESS) return 1;
    aclFinalize();
    std::printf("hccl_threads ok\n");
    return 0;
}
