// SPDX-License-Identifier: GPL-3.0-or-later
// Event recording and log capture for the link tests.
#pragma once

#include <QtTest>

#include <mutex>
#include <string>
#include <vector>

#include "engine/common/log.h"
#include "engine/net/link.h"
#include "tests/support/test_support.h"

namespace rookery::test {

/// Records a link's events; all methods may be called from any thread. Always held by
/// a shared_ptr: the events keep it alive for as long as a link may still call them.
struct EventLog : std::enable_shared_from_this<EventLog>
{
    mutable std::mutex mutex;
    int opened = 0;
    int writable = 0;
    std::vector<net::Message> messages;
    std::vector<net::CloseInfo> closed;

    net::LinkEvents events()
    {
        net::LinkEvents e;
        e.opened = [self = shared_from_this()](const std::shared_ptr<net::Link> &) {
            std::lock_guard lock(self->mutex);
            ++self->opened;
        };
        e.message = [self = shared_from_this()](const std::shared_ptr<net::Link> &, net::Message &&m) {
            std::lock_guard lock(self->mutex);
            self->messages.push_back(std::move(m));
        };
        e.writable = [self = shared_from_this()](const std::shared_ptr<net::Link> &) {
            std::lock_guard lock(self->mutex);
            ++self->writable;
        };
        e.closed = [self = shared_from_this()](const std::shared_ptr<net::Link> &, const net::CloseInfo &c) {
            std::lock_guard lock(self->mutex);
            self->closed.push_back(c);
        };
        return e;
    }
    int writableCount() const
    {
        std::lock_guard lock(mutex);
        return writable;
    }
    int openedCount() const
    {
        std::lock_guard lock(mutex);
        return opened;
    }
    size_t messageCount() const
    {
        std::lock_guard lock(mutex);
        return messages.size();
    }
    size_t closedCount() const
    {
        std::lock_guard lock(mutex);
        return closed.size();
    }
    net::CloseInfo lastClose() const
    {
        std::lock_guard lock(mutex);
        return closed.empty() ? net::CloseInfo{} : closed.back();
    }
    std::vector<net::Message> takeMessages()
    {
        std::lock_guard lock(mutex);
        return std::exchange(messages, {});
    }
};

/// Captures log lines while alive.
class LogCapture
{
public:
    LogCapture()
    {
        log::setSink([this](log::Level, std::string_view area, std::string_view message) {
            std::lock_guard lock(m_mutex);
            m_lines.push_back(std::string(area) + ": " + std::string(message));
        });
    }
    ~LogCapture() { log::setSink({}); }
    bool contains(const std::string &text) const
    {
        std::lock_guard lock(m_mutex);
        for (const auto &l : m_lines)
            if (l.find(text) != std::string::npos)
                return true;
        return false;
    }
    std::string all() const
    {
        std::lock_guard lock(m_mutex);
        std::string s;
        for (const auto &l : m_lines)
            s += l + "\n";
        return s;
    }

private:
    mutable std::mutex m_mutex;
    std::vector<std::string> m_lines;
};

inline bool waitUntil(const std::function<bool()> &predicate,
                      std::chrono::milliseconds timeout = std::chrono::seconds(10))
{
    return waitFor(predicate, timeout);
}

} // namespace rookery::test
