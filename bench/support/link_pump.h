// SPDX-License-Identifier: GPL-3.0-or-later
// Bulk tensors over one of our links, for benchmarks: the receiving side counts what
// arrives (Flow, fed from the link's events), the sender keeps the link's queue full
// and waits for `writable` when it is (pump).
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>

#include "engine/common/error.h"
#include "engine/common/tensor_buffer.h"
#include "engine/net/link.h"

namespace rookery::bench {

// Counts arriving tensor bytes and wakes the sender when its queue has room.
struct Flow
{
    std::mutex mutex;
    std::condition_variable cv;
    uint64_t received = 0;
    std::chrono::steady_clock::time_point firstAt, lastAt;
    bool writable = false;

    void onTensor(size_t bytes)
    {
        std::lock_guard lock(mutex);
        if (received == 0)
            firstAt = std::chrono::steady_clock::now();
        received += bytes;
        lastAt = std::chrono::steady_clock::now();
        cv.notify_all();
    }
    void onWritable()
    {
        std::lock_guard lock(mutex);
        writable = true;
        cv.notify_all();
    }
};

// Sends `total` bytes of tensors from `from`; returns the receiver's rate (bytes/s),
// timed from the first tensor's arrival to the last's.
inline double pump(net::Link &from, Flow &flow, const TensorBuffer &tensor, uint64_t total)
{
    {
        std::lock_guard lock(flow.mutex);
        flow.received = 0;
    }
    uint64_t sent = 0;
    for (uint64_t id = 0; sent < total; ++id) {
        const auto r = from.send(net::Activations{id, 1, tensor, {}});
        if (r == net::SendResult::Queued) {
            sent += tensor.bytes;
            continue;
        }
        if (r != net::SendResult::QueueFull)
            throw Error("the link closed during the benchmark");
        std::unique_lock lock(flow.mutex);
        flow.cv.wait_for(lock, std::chrono::milliseconds(50), [&] { return flow.writable; });
        flow.writable = false;
    }
    std::unique_lock lock(flow.mutex);
    flow.cv.wait(lock, [&] { return flow.received >= total; });
    return double(flow.received - tensor.bytes) / std::chrono::duration<double>(flow.lastAt - flow.firstAt).count();
}

} // namespace rookery::bench
