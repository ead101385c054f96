// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/net/wan_emulation.h"

#include <algorithm>
#include <cstdlib>
#include <deque>
#include <map>
#include <mutex>
#include <random>
#include <sstream>
#include <variant>

#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>

#include "engine/common/error.h"
#include "engine/net/net_context_impl.h"

namespace rookery::net {

namespace asio = boost::asio;
using Clock = std::chrono::steady_clock;

std::string WanEmulationConfig::describe() const
{
    std::ostringstream s;
    s << "delay " << double(delay.count()) / 1000 << " ms, jitter " << double(jitter.count()) / 1000 << " ms, ";
    if (rateMbit > 0)
        s << rateMbit << " Mbit/s";
    else
        s << "no bandwidth cap";
    return s.str();
}

WanEmulationConfig parseWanEmulation(const std::string &spec)
{
    WanEmulationConfig c;
    std::istringstream in(spec);
    std::string item;
    while (std::getline(in, item, ',')) {
        if (item.empty())
            continue;
        const auto eq = item.find('=');
        const std::string key = item.substr(0, eq);
        double value = 0;
        try {
            size_t used = 0;
            if (eq == std::string::npos)
                throw std::invalid_argument("no value");
            value = std::stod(item.substr(eq + 1), &used);
            if (used != item.size() - eq - 1 || value < 0)
                throw std::invalid_argument("bad value");
        } catch (const std::exception &) {
            throw Error("WAN emulation: '" + item + "' is not key=number (a number at least 0)");
        }
        const auto us = std::chrono::microseconds(int64_t(value * 1000));
        if (key == "delay_ms")
            c.delay = us;
        else if (key == "jitter_ms")
            c.jitter = us;
        else if (key == "rate_mbit")
            c.rateMbit = value;
        else if (key == "seed")
            c.seed = uint64_t(value);
        else
            throw Error("WAN emulation: unknown key '" + key + "' (delay_ms, jitter_ms, rate_mbit, seed)");
    }
    return c;
}

WanEmulationConfig wanEmulationFromEnvironment()
{
    const char *v = std::getenv("ROOKERY_WAN_EMULATION");
    return v ? parseWanEmulation(v) : WanEmulationConfig{};
}

namespace {

// One link's held-back events, all touched on its strand only.
struct LinkQueue
{
    struct Item
    {
        Clock::time_point due;
        std::variant<Message, CloseInfo> event;
    };

    LinkQueue(asio::io_context &ioc, uint64_t seed)
        : strand(asio::make_strand(ioc))
        , timer(strand)
        , rng(seed)
    { }

    asio::strand<asio::io_context::executor_type> strand;
    asio::steady_timer timer;
    std::mt19937_64 rng;
    std::deque<Item> items;
    bool armed = false;
    uint64_t lastReceived = 0;   // the link's received-bytes counter at the last message
    Clock::time_point serialEnd; // when the emulated wire finished the last message
    Clock::time_point lastDue;
};

struct Emulator : std::enable_shared_from_this<Emulator>
{
    Emulator(NetContext &context, WanEmulationConfig c, LinkEvents e)
        : ioc(context.impl().ioc)
        , config(c)
        , events(std::move(e))
    { }

    asio::io_context &ioc;
    const WanEmulationConfig config;
    const LinkEvents events;
    std::mutex mutex;
    std::map<const Link *, std::shared_ptr<LinkQueue>> queues;
    uint64_t linksSeen = 0;

    std::shared_ptr<LinkQueue> queueFor(const Link *link)
    {
        std::lock_guard lock(mutex);
        auto &q = queues[link];
        if (!q)
            q = std::make_shared<LinkQueue>(ioc, config.seed + 7919 * linksSeen++);
        return q;
    }

    Clock::duration sampleDelay(LinkQueue &q) const
    {
        auto d = std::chrono::duration_cast<Clock::duration>(config.delay);
        if (config.jitter.count() > 0) {
            const auto j = std::chrono::duration_cast<Clock::duration>(config.jitter).count();
            std::uniform_int_distribution<int64_t> u(-j, j);
            d += Clock::duration(u(q.rng));
        }
        return std::max(d, Clock::duration::zero());
    }

    // On the strand: books a message of `received` bytes so far that arrived at `at`.
    void hold(const std::shared_ptr<Link> &link, const std::shared_ptr<LinkQueue> &q, Message &&m, Clock::time_point at,
              uint64_t received)
    {
        const uint64_t bytes = received >= q->lastReceived ? received - q->lastReceived : received; // reconnected
        q->lastReceived = received;
        q->serialEnd = std::max(at, q->serialEnd);
        if (config.rateMbit > 0)
            q->serialEnd += std::chrono::duration_cast<Clock::duration>(
                std::chrono::duration<double>(double(bytes) * 8 / (config.rateMbit * 1e6)));
        q->lastDue = std::max(q->serialEnd + sampleDelay(*q), q->lastDue);
        q->items.push_back({q->lastDue, std::move(m)});
        arm(link, q);
    }

    void arm(const std::shared_ptr<Link> &link, const std::shared_ptr<LinkQueue> &q)
    {
        if (q->armed || q->items.empty())
            return;
        q->armed = true;
        q->timer.expires_at(q->items.front().due);
        q->timer.async_wait([self = shared_from_this(), link, q](const boost::system::error_code &) {
            q->armed = false;
            self->deliverDue(link, q);
        });
    }

    void deliverDue(const std::shared_ptr<Link> &link, const std::shared_ptr<LinkQueue> &q)
    {
        while (!q->items.empty() && q->items.front().due <= Clock::now()) {
            auto item = std::move(q->items.front());
            q->items.pop_front();
            if (auto *m = std::get_if<Message>(&item.event)) {
                if (events.message)
                    events.message(link, std::move(*m));
            } else {
                forget(link.get(), q);
                if (events.closed)
                    events.closed(link, std::get<CloseInfo>(item.event));
            }
        }
        arm(link, q);
    }

    void forget(const Link *link, const std::shared_ptr<LinkQueue> &q)
    {
        std::lock_guard lock(mutex);
        auto it = queues.find(link);
        if (it != queues.end() && it->second == q && q->items.empty())
            queues.erase(it);
    }
};

} // namespace

LinkEvents emulateWan(NetContext &context, const WanEmulationConfig &config, LinkEvents events)
{
    if (!config.enabled())
        return events;
    auto em = std::make_shared<Emulator>(context, config, events);
    LinkEvents e;
    e.opened = events.opened;
    e.writable = events.writable;
    e.message = [em](const std::shared_ptr<Link> &link, Message &&m) {
        const auto at = Clock::now();
        const uint64_t received = link->stats().bytesReceived;
        auto q = em->queueFor(link.get());
        asio::post(q->strand, [em, link, q, m = std::move(m), at, received]() mutable {
            em->hold(link, q, std::move(m), at, received);
        });
    };
    e.closed = [em](const std::shared_ptr<Link> &link, const CloseInfo &info) {
        auto q = em->queueFor(link.get());
        asio::post(q->strand, [em, link, q, info] {
            // After the link's last message, not before: nothing overtakes on a wire.
            q->lastDue = std::max(q->lastDue, Clock::now());
            q->items.push_back({q->lastDue, info});
            em->arm(link, q);
        });
    };
    return e;
}

} // namespace rookery::net
