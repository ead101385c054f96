// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/net/net_context.h"

#include <chrono>
#include <exception>
#include <mutex>

#include "engine/common/log.h"
#include "engine/net/net_context_impl.h"

namespace rookery::net {

NetContext::NetContext(int threads)
    : m(std::make_unique<Impl>(std::max(1, threads)))
{
    for (auto &thread : m->threads)
        thread = std::thread([this] {
            // A handler that throws is a bug; log it and keep the thread serving the
            // other links rather than ending the process.
            for (;;) {
                try {
                    m->ioc.run();
                    std::lock_guard lock(m->doneMutex);
                    ++m->threadsDone;
                    m->done.notify_all();
                    return;
                } catch (const std::exception &e) {
                    log::error("net", std::string("uncaught exception on the network thread: ") + e.what());
                }
            }
        });
}

NetContext::~NetContext() { stop(); }

void NetContext::stop()
{
    m->work.reset();
    // Let what is still queued (closing links, goodbyes, cancelled timers) finish, so that
    // few handlers are left to destroy with the io_context; stop outright after a while.
    {
        std::unique_lock lock(m->doneMutex);
        m->done.wait_for(lock, std::chrono::seconds(2), [&] { return m->threadsDone == m->threads.size(); });
    }
    m->ioc.stop();
    for (auto &t : m->threads)
        if (t.joinable())
            t.join();
}

} // namespace rookery::net
