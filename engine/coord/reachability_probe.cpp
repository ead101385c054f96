// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/coord/reachability_probe.h"

#include <deque>
#include <map>
#include <mutex>
#include <utility>
#include <vector>

#include "engine/common/error.h"
#include "engine/net/dialer.h"
#include "engine/net/host_port.h"

namespace rookery::coord {
namespace {

using Clock = ReachabilityProbe::Clock;

std::string seconds(std::chrono::milliseconds ms) { return std::to_string((ms.count() + 999) / 1000) + " s"; }

constexpr const char *kBehindNat = "Behind a home router: turn on UPnP, forward the port, or give --public-address";

} // namespace

struct ReachabilityProbe::State : std::enable_shared_from_this<ReachabilityProbe::State>
{
    struct Check
    {
        std::string address;
        uint64_t serial = 0;
        std::shared_ptr<net::Link> link;
        Clock::time_point started, deadline;
        std::string lastError;
    };
    struct Verdict
    {
        std::string nodeId, address;
        bool reachable = false;
        std::string note;
    };

    net::NetContext &context;
    ReachabilityProbeConfig config;
    Result result;

    mutable std::mutex mutex;
    std::map<std::string, Check> flying;
    std::deque<std::string> queue;             // node ids, oldest first
    std::map<std::string, std::string> queued; // node id -> the address to check
    uint64_t nextSerial = 0;
    bool closed = false;

    // Held while a verdict is delivered; the destructor takes it to detach.
    std::mutex resultMutex;
    bool detached = false;

    State(net::NetContext &c, ReachabilityProbeConfig cfg, Result r)
        : context(c)
        , config(std::move(cfg))
        , result(std::move(r))
    { }

    void deliver(const std::vector<Verdict> &verdicts)
    {
        std::lock_guard lock(resultMutex);
        if (detached || !result)
            return;
        for (const auto &v : verdicts)
            result(v.nodeId, v.address, v.reachable, v.note);
    }

    void onOpened(const std::string &id, uint64_t serial, const std::shared_ptr<net::Link> &link)
    {
        std::string address;
        {
            std::lock_guard lock(mutex);
            const auto it = flying.find(id);
            if (it == flying.end() || it->second.serial != serial) {
                address.clear();
            } else {
                address = it->second.address;
                flying.erase(it);
            }
        }
        link->close("reachability check done");
        if (!address.empty())
            deliver({{id, address, true, "peers can dial it at " + address}});
    }

    void onClosed(const std::string &id, uint64_t serial, const net::CloseInfo &info)
    {
        Verdict verdict;
        std::shared_ptr<net::Link> link;
        {
            std::lock_guard lock(mutex);
            const auto it = flying.find(id);
            if (it == flying.end() || it->second.serial != serial)
                return;
            it->second.lastError = info.reason;
            const auto checked =
                std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - it->second.started);
            if (info.nothingListens && checked >= config.refusedAfter) {
                verdict = {id, it->second.address, false,
                           "peers cannot dial it at " + it->second.address +
                               ": nothing listens there (connections still refused " + seconds(checked) +
                               " into the check). " + kBehindNat};
            } else if (!info.fatal) {
                return; // the dialer tries again until the deadline
            } else {
                // Something answered, but not this node (its certificate or protocol differs).
                verdict = {id, it->second.address, false,
                           "something other than this node answers at " + it->second.address + ": " + info.reason};
            }
            link = std::move(it->second.link);
            flying.erase(it);
        }
        if (link)
            link->close("reachability check failed");
        deliver({verdict});
    }

    net::LinkEvents eventsFor(const std::string &id, uint64_t serial)
    {
        std::weak_ptr<State> weak = weak_from_this();
        net::LinkEvents e;
        e.opened = [weak, id, serial](const std::shared_ptr<net::Link> &link) {
            if (auto self = weak.lock())
                self->onOpened(id, serial, link);
            else
                link->close("reachability check done");
        };
        e.closed = [weak, id, serial](const std::shared_ptr<net::Link> &, const net::CloseInfo &info) {
            if (auto self = weak.lock())
                self->onClosed(id, serial, info);
        };
        return e;
    }
};

ReachabilityProbe::ReachabilityProbe(net::NetContext &context, ReachabilityProbeConfig config, Result result)
    : m(std::make_shared<State>(context, std::move(config), std::move(result)))
{ }

ReachabilityProbe::~ReachabilityProbe()
{
    std::vector<std::shared_ptr<net::Link>> links;
    {
        std::lock_guard lock(m->mutex);
        m->closed = true;
        for (auto &[id, c] : m->flying)
            if (c.link)
                links.push_back(std::move(c.link));
        m->flying.clear();
        m->queue.clear();
        m->queued.clear();
    }
    for (auto &link : links)
        link->close("coordinator shutting down");
    std::lock_guard lock(m->resultMutex); // waits for a verdict being delivered
    m->detached = true;
}

void ReachabilityProbe::check(const std::string &nodeId, const std::string &address)
{
    std::shared_ptr<net::Link> replaced;
    {
        std::lock_guard lock(m->mutex);
        if (m->closed)
            return;
        if (const auto it = m->flying.find(nodeId); it != m->flying.end()) {
            replaced = std::move(it->second.link);
            m->flying.erase(it);
        }
        if (m->queued.insert_or_assign(nodeId, address).second)
            m->queue.push_back(nodeId);
    }
    if (replaced)
        replaced->close("a newer reachability check replaces this one");
}

void ReachabilityProbe::tick(Clock::time_point now)
{
    std::vector<State::Verdict> verdicts;
    std::vector<std::shared_ptr<net::Link>> expired;
    std::vector<std::pair<std::string, State::Check>> starts;
    {
        std::lock_guard lock(m->mutex);
        if (m->closed)
            return;
        for (auto it = m->flying.begin(); it != m->flying.end();) {
            if (now < it->second.deadline) {
                ++it;
                continue;
            }
            const State::Check &c = it->second;
            verdicts.push_back(
                {it->first, c.address, false,
                 "peers cannot dial it at " + c.address + ": no handshake within " + seconds(m->config.timeout) +
                     (c.lastError.empty() ? std::string() : " (" + c.lastError + ")") + ". " + kBehindNat});
            expired.push_back(std::move(it->second.link));
            it = m->flying.erase(it);
        }
        while (!m->queue.empty() && m->flying.size() + starts.size() < m->config.maxConcurrent) {
            const std::string id = std::move(m->queue.front());
            m->queue.pop_front();
            const auto q = m->queued.find(id);
            if (q == m->queued.end())
                continue;
            State::Check c;
            c.address = std::move(q->second);
            c.serial = ++m->nextSerial;
            c.started = now;
            c.deadline = now + m->config.timeout;
            m->queued.erase(q);
            starts.emplace_back(id, std::move(c));
        }
        for (const auto &[id, c] : starts)
            m->flying[id] = c; // before dialling: an event may come at once
    }
    for (auto &link : expired)
        if (link)
            link->close("reachability check timed out");
    for (auto &[id, c] : starts) {
        net::DialConfig dc;
        try {
            std::tie(dc.host, dc.port) = net::splitHostPort(c.address);
        } catch (const Error &e) {
            {
                std::lock_guard lock(m->mutex);
                m->flying.erase(id);
            }
            verdicts.push_back({id, c.address, false, e.what()});
            continue;
        }
        dc.credentials = m->config.credentials;
        dc.server.kind = net::PeerCheck::Kind::SwarmCa;
        dc.server.expectedNodeId = id; // an address that is not this node's fails here
        dc.link = m->config.link;
        dc.initialBackoff = std::chrono::milliseconds(1000);
        dc.maxBackoff = std::chrono::milliseconds(4000);
        auto link = net::dial(m->context, dc, m->eventsFor(id, c.serial));
        bool stale = false;
        {
            std::lock_guard lock(m->mutex);
            const auto it = m->flying.find(id);
            stale = it == m->flying.end() || it->second.serial != c.serial;
            if (!stale)
                it->second.link = link;
        }
        if (stale) // answered already, or replaced
            link->close("reachability check done");
    }
    m->deliver(verdicts);
}

size_t ReachabilityProbe::inFlight() const
{
    std::lock_guard lock(m->mutex);
    return m->flying.size();
}

} // namespace rookery::coord
