// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <memory>

namespace rookery::net {

/// The networking thread(s) of a process: one Boost.Asio io_context and the threads
/// that run it (one by default: every link's events then arrive on that one thread).
///
/// Destroy Links and Listeners before their NetContext: they own sockets of its
/// io_context.
///
/// Thread safety: construct and destroy on one thread; the rest is internal.
class NetContext
{
public:
    explicit NetContext(int threads = 1);
    ~NetContext();
    NetContext(const NetContext &) = delete;
    NetContext &operator=(const NetContext &) = delete;

    /// Stops the threads after closing nothing: for the end of the process. Idempotent.
    void stop();

    struct Impl;
    Impl &impl() { return *m; }

private:
    std::unique_ptr<Impl> m;
};

} // namespace rookery::net
