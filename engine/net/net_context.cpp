// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/net/net_context.h"

#include <exception>

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
    m->ioc.stop();
    for (auto &t : m->threads)
        if (t.joinable())
            t.join();
}

} // namespace rookery::net
