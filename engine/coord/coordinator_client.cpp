// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/coord/coordinator_client.h"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <deque>
#include <mutex>

#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <openssl/rand.h>

#include "engine/common/error.h"
#include "engine/common/log.h"
#include "engine/common/version.h"
#include "engine/common/wall_clock.h"
#include "engine/coord/wire_convert.h"
#include "engine/net/certificate_authority.h"
#include "engine/net/dialer.h"
#include "engine/net/net_context_impl.h"
#include "engine/net/upload_probe.h"

namespace rookery::coord {
namespace asio = boost::asio;
using Clock = std::chrono::steady_clock;

namespace {

constexpr const char *kArea = "coord";
constexpr auto kEarlyBeatSpacing = std::chrono::milliseconds(200);

std::string randomNonce()
{
    std::string nonce(16, '\0');
    if (RAND_bytes(reinterpret_cast<unsigned char *>(nonce.data()), int(nonce.size())) != 1)
        throw Error("cannot draw a random registration nonce");
    return nonce;
}

// The interval the coordinator asks for, within what this node will do: beats closer
// than 50 ms apart are a load on the coordinator, and one a minute would let the
// coordinator's links time out (a coordinator's choice; this node keeps to it).
std::chrono::milliseconds heartbeatIntervalFrom(uint32_t ms)
{
    return std::chrono::milliseconds(std::clamp<uint32_t>(ms, 50, 30'000));
}

} // namespace

struct CoordinatorClient::Impl : std::enable_shared_from_this<CoordinatorClient::Impl>
{
    Impl(asio::io_context &io, CoordinatorClientConfig c, net::Identity id, CoordinatorClientEvents e)
        : ioc(io)
        , strand(asio::make_strand(io))
        , timer(strand)
        , retryTimer(strand)
        , renewTimer(strand)
        , probeTimer(strand)
        , config(std::move(c))
        , identity(std::move(id))
        , events(std::move(e))
    { }

    // Calls a user callback unless the client is being destroyed; never under `mutex`.
    template <class Fn, class... Args> void notify(const Fn &member, Args &&...args)
    {
        std::lock_guard lock(eventsMutex);
        const auto &fn = events.*member;
        if (!fn)
            return;
        try {
            fn(std::forward<Args>(args)...);
        } catch (const std::exception &e) {
            log::error(kArea, std::string("a coordinator client callback threw: ") + e.what());
        }
    }

    void start()
    {
        net::LinkConfig lc;
        lc.nodeId = identity.nodeId();
        lc.role = net::NodeRole::Node;
        lc.limits = coordinatorLinkLimits();
        lc.handshakeTimeout = config.handshakeTimeout;
        auto dc = net::coordinatorDialConfig(
            config.address, {identity.selfSignedCertificate(), identity.privateKeyPem(), ""}, std::move(lc));
        dc.initialBackoff = config.initialBackoff;
        dc.maxBackoff = config.maxBackoff;
        std::weak_ptr<Impl> weak = shared_from_this();
        uint64_t serial;
        {
            std::lock_guard lock(mutex);
            serial = ++linkSerial;
        }
        net::LinkEvents le;
        le.opened = [weak, serial](const std::shared_ptr<net::Link> &l) {
            if (auto self = weak.lock())
                self->onOpened(l, serial);
        };
        le.message = [weak, serial](const std::shared_ptr<net::Link> &l, net::Message &&m) {
            if (auto self = weak.lock())
                self->onMessage(l, std::move(m), serial);
        };
        le.closed = [weak, serial](const std::shared_ptr<net::Link> &l, const net::CloseInfo &info) {
            if (auto self = weak.lock())
                self->onClosed(l, info, serial);
        };
        auto l = net::dial(*context, std::move(dc), std::move(le));
        std::lock_guard lock(mutex);
        if (serial == linkSerial) // its events may have come first and set it already
            link = std::move(l);
        if (stopped)
            link->close("stopped");
    }

    // A link this client has replaced (a renewal) may still come and go: it is closed,
    // and what it says is not heard. Links are told apart by the serial of the start()
    // that dialled them, not by the pointer start() stores: on a loaded machine the new
    // link's first events can come before dial() has returned it.
    bool isCurrent(const std::shared_ptr<net::Link> &l, uint64_t serial)
    {
        std::lock_guard lock(mutex);
        if (serial != linkSerial)
            return false;
        link = l;
        return true;
    }

    void onOpened(const std::shared_ptr<net::Link> &l, uint64_t serial)
    {
        if (!isCurrent(l, serial))
            return l->close("replaced by a newer connection");
        uint64_t gen;
        {
            std::lock_guard lock(mutex);
            connected = true;
            registered = false;
            gen = ++generation;
        }
        notify(&CoordinatorClientEvents::connection, true);
        if (config.measureUpload && startUploadProbe(l, gen))
            return; // registers when the probe is done
        sendRegistration(l, gen);
    }

    // The upload figure a registration carries: what was measured or known, within the cap.
    double registeredUpload() const
    {
        const double measured = measuredUpload.load();
        const double known = measured > 0 ? measured : config.uploadBytesPerSecond;
        const double cap = config.uploadCapBytesPerSecond;
        if (cap > 0)
            return known > 0 ? std::min(known, cap) : cap;
        return known;
    }

    // Starts measuring the upload on `l` unless it was measured (or tried) before: false
    // then, and the caller registers at once.
    bool startUploadProbe(const std::shared_ptr<net::Link> &l, uint64_t gen)
    {
        std::lock_guard probeLock(probeMutex);
        if (uploadProbed)
            return false;
        uploadProbed = true;
        uint64_t base = 0;
        RAND_bytes(reinterpret_cast<unsigned char *>(&base), sizeof base);
        base |= uint64_t(1) << 63; // clear of the link's own small ping nonces
        std::weak_ptr<net::Link> weak = l;
        probe = std::make_unique<net::UploadProbe>(
            [weak](const net::Ping &p) {
                auto link = weak.lock();
                return link && link->send(p) == net::SendResult::Queued;
            },
            base);
        probeLink = l;
        probe->start(Clock::now());
        if (probe->done()) { // could not even send: register without a figure
            asio::post(strand, [self = shared_from_this(), gen] { self->finishUploadProbe(gen); });
            return true;
        }
        probeTimer.expires_after(config.uploadProbeTimeout);
        probeTimer.async_wait([self = shared_from_this(), gen](boost::system::error_code ec) {
            if (!ec)
                self->finishUploadProbe(gen);
        });
        return true;
    }

    // The probe is done, or out of time: registers on the link it ran on, if that is
    // still the current one.
    void finishUploadProbe(uint64_t gen)
    {
        std::shared_ptr<net::Link> l;
        std::string account;
        {
            std::lock_guard probeLock(probeMutex);
            if (!probe)
                return;
            probe->finishEarly(); // out of time: what part of its burst says, if anything
            measuredUpload = probe->bytesPerSecond();
            account = probe->describe();
            probe.reset();
            l = std::exchange(probeLink, nullptr);
        }
        probeTimer.cancel();
        log::debug(kArea, "upload to the coordinator: " + account);
        notify(&CoordinatorClientEvents::uploadMeasured, measuredUpload.load(), account);
        if (l)
            sendRegistration(l, gen);
    }

    void sendRegistration(const std::shared_ptr<net::Link> &l, uint64_t gen)
    {
        net::Register r;
        {
            std::lock_guard lock(mutex);
            if (gen != generation || !connected)
                return; // the link went meanwhile: its successor registers
            r = {config.name,
                 config.listenAddress,
                 config.profileJson,
                 randomNonce(),
                 nowMs(),
                 std::string("rookery ") + kVersion,
                 registeredUpload(),
                 identity.publicKeyPem(),
                 config.relayPort,
                 config.address.invite};
        }
        if (l->send(r) != net::SendResult::Queued)
            log::warning(kArea, "could not queue the registration on " + l->describe());
    }

    void onMessage(const std::shared_ptr<net::Link> &l, net::Message &&m, uint64_t serial)
    {
        if (!isCurrent(l, serial))
            return;
        if (auto *reply = std::get_if<net::RegisterReply>(&m))
            return onRegistered(l, *reply);
        if (auto *update = std::get_if<net::AssignmentUpdate>(&m))
            return onAssignment(fromWire(update->assignment));
        if (auto *ack = std::get_if<net::HeartbeatAck>(&m))
            return onAck(*ack);
        if (auto *pong = std::get_if<net::Pong>(&m)) {
            bool finished = false;
            uint64_t gen = 0;
            {
                std::lock_guard probeLock(probeMutex);
                if (!probe || !probe->pong(pong->nonce, Clock::now()))
                    return; // not the probe's: nothing to do with it
                finished = probe->done();
            }
            if (finished) {
                {
                    std::lock_guard lock(mutex);
                    gen = generation;
                }
                asio::post(strand, [self = shared_from_this(), gen] { self->finishUploadProbe(gen); });
            }
            return;
        }
        if (auto *err = std::get_if<net::CoordinatorError>(&m)) {
            if (err->code == net::CoordinatorErrorCode::Limited)
                return waitForRoom(l, err->reason);
            return refuse(l, "the coordinator refused this node: " + err->reason);
        }
        if (auto *grant = std::get_if<net::RelayGrant>(&m))
            return notify(&CoordinatorClientEvents::relayGranted, *grant);
        if (auto *bans = std::get_if<net::BanList>(&m))
            return notify(&CoordinatorClientEvents::banned, *bans);
        if (auto *piece = std::get_if<net::DataPiece>(&m))
            return notify(&CoordinatorClientEvents::dataPiece, *piece);
        if (auto *expect = std::get_if<net::RelayExpect>(&m)) {
            if (config.relayPort == 0)
                return log::warning(kArea, "ignoring a RelayExpect: this node runs no relay");
            return notify(&CoordinatorClientEvents::relayExpected, *expect);
        }
        log::warning(kArea, "ignoring an unexpected " + std::string(net::messageName(m)) + " from the coordinator");
    }

    void onRegistered(const std::shared_ptr<net::Link> &l, const net::RegisterReply &reply)
    {
        Registration reg;
        std::chrono::system_clock::time_point expiry;
        try {
            if (reply.nodeId != identity.nodeId())
                throw Error("the coordinator registered node " + reply.nodeId.substr(0, 12) + ", not this node " +
                            identity.nodeId().substr(0, 12));
            expiry = net::certificateExpiry(reply.certificatePem);
            reg = {reply.nodeId,        reply.certificatePem,       reply.caCertificatePem,
                   fromWire(reply.run), fromWire(reply.assignment), heartbeatIntervalFrom(reply.heartbeatIntervalMs)};
        } catch (const Error &e) {
            return refuse(l, std::string("the coordinator's registration reply is not usable: ") + e.what());
        }
        uint64_t gen;
        std::shared_ptr<net::Link> replaced;
        {
            std::lock_guard lock(mutex);
            replaced = std::exchange(renewing, nullptr);
            registered = true;
            limitedStrikes = 0;
            interval = reg.heartbeatInterval;
            assignment = reg.assignment;
            registration = reg;
            ++stats.registrations;
            gen = generation;
        }
        if (replaced) // registered on the new link: the old one can go (the coordinator closes it too)
            replaced->close("renewed the certificate on a new connection");
        log::info(kArea, "registered as node " + reg.nodeId.substr(0, 12) + "; " + reg.assignment.describe());
        notify(&CoordinatorClientEvents::registered, reg);
        scheduleHeartbeat(gen);
        scheduleRenewal(gen, expiry);
    }

    // Peers refuse an expired certificate, so a node registers again (on a new link: one
    // Register per link) when half of its certificate's life is left, and gets a fresh one.
    // The old link stays until the new one has registered, so the coordinator never sees
    // the node gone.
    void scheduleRenewal(uint64_t gen, std::chrono::system_clock::time_point expiry)
    {
        const auto left =
            std::chrono::duration_cast<std::chrono::milliseconds>(expiry - std::chrono::system_clock::now());
        const auto wait = std::max(left / 2, std::chrono::milliseconds(1000));
        asio::post(strand, [self = shared_from_this(), gen, wait] {
            self->renewTimer.expires_after(wait);
            self->renewTimer.async_wait([self, gen](boost::system::error_code ec) {
                std::shared_ptr<net::Link> abandoned;
                {
                    std::lock_guard lock(self->mutex);
                    if (ec || gen != self->generation || self->stopped || self->refused)
                        return;
                    abandoned = std::exchange(self->renewing, self->link);
                }
                if (abandoned) // an earlier renewal's old link, never replaced: it goes now
                    abandoned->close("renewing the certificate again");
                log::info(kArea, "renewing this node's certificate: registering again on a new connection");
                self->start();
            });
        });
    }

    void onAssignment(Assignment a)
    {
        {
            std::lock_guard lock(mutex);
            if (a.version <= assignment.version && assignment.version != 0)
                return; // already have it (a repeat after a heartbeat crossed the push)
            assignment = a;
            if (registration)
                registration->assignment = a;
            ++stats.assignmentUpdates;
        }
        log::info(kArea, "new assignment: " + a.describe());
        notify(&CoordinatorClientEvents::assignmentChanged, a);
    }

    void onAck(const net::HeartbeatAck &ack)
    {
        std::chrono::microseconds rtt{-1};
        {
            std::lock_guard lock(mutex);
            while (!inflight.empty() && inflight.front().first < ack.seq)
                inflight.pop_front();
            if (!inflight.empty() && inflight.front().first == ack.seq) {
                rtt = std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - inflight.front().second);
                inflight.pop_front();
                stats.lastRoundTrip = rtt;
            }
            ++stats.heartbeatsAcked;
            if (ack.heartbeatIntervalMs != 0) // the swarm grew or shrank: the next beat is at the new pace
                interval = heartbeatIntervalFrom(ack.heartbeatIntervalMs);
        }
        if (rtt.count() >= 0)
            notify(&CoordinatorClientEvents::heartbeatAcked, rtt);
    }

    // Over the coordinator's limits for this address: not a refusal, so try again, but
    // later than a dropped link would (that one's back-off starts over once it opens),
    // so that waiting nodes do not hammer the coordinator with handshakes.
    void waitForRoom(const std::shared_ptr<net::Link> &l, const std::string &why)
    {
        int strikes;
        {
            std::lock_guard lock(mutex);
            strikes = std::min(++limitedStrikes, 8);
        }
        const auto wait = std::min(config.maxBackoff, config.initialBackoff * (int64_t(4) << strikes));
        log::warning(kArea, "the coordinator asks this node to wait (" + why + "); trying again in " +
                                std::to_string(wait.count()) + " ms");
        notify(&CoordinatorClientEvents::attemptFailed, "the coordinator asks to wait: " + why);
        l->close("waiting for room at the coordinator");
        asio::post(strand, [self = shared_from_this(), wait] {
            self->retryTimer.expires_after(wait);
            self->retryTimer.async_wait([self](boost::system::error_code ec) {
                bool go;
                {
                    std::lock_guard lock(self->mutex);
                    go = !ec && !self->stopped && !self->refused;
                }
                if (go)
                    self->start();
            });
        });
    }

    void refuse(const std::shared_ptr<net::Link> &l, const std::string &why)
    {
        {
            std::lock_guard lock(mutex);
            refused = true;
        }
        log::error(kArea, why);
        notify(&CoordinatorClientEvents::error, why);
        l->close("refused"); // a dialled link stops reconnecting once closed
    }

    // So that a process that exits next does not cut the connection under its goodbye.
    void awaitClose()
    {
        std::unique_lock lock(mutex);
        closedCv.wait_for(lock, std::chrono::seconds(1), [&] { return !connected; });
    }

    void onClosed(const std::shared_ptr<net::Link> &closed, const net::CloseInfo &info, uint64_t serial)
    {
        bool was;
        bool report;
        bool retrying;
        {
            std::lock_guard lock(mutex);
            if (serial != linkSerial)
                return; // a link this client already replaced (a renewal)
            link = closed;
            was = connected;
            connected = registered = false;
            ++generation;
            closedCv.notify_all();
            inflight.clear();
            report = info.fatal && !refused && !stopped;
            retrying = !info.fatal && !refused && !stopped;
        }
        if (report)
            notify(&CoordinatorClientEvents::error, "cannot reach the coordinator: " + info.reason);
        else if (retrying)
            notify(&CoordinatorClientEvents::attemptFailed, info.reason);
        if (was) {
            log::info(kArea, "coordinator link closed: " + info.reason);
            notify(&CoordinatorClientEvents::connection, false);
        }
    }

    void scheduleHeartbeat(uint64_t gen)
    {
        asio::post(strand, [self = shared_from_this(), gen] {
            std::chrono::milliseconds wait;
            {
                std::lock_guard lock(self->mutex);
                if (gen != self->generation || self->stopped)
                    return;
                wait = self->interval;
            }
            // One chain of beats: a beat sent early (beatNow) starts a new one, and a
            // timer of the old chain that had already fired sends nothing.
            const uint64_t token = ++self->beatChain;
            self->timer.expires_after(wait);
            self->timer.async_wait([self, gen, token](boost::system::error_code ec) {
                if (!ec && token == self->beatChain)
                    self->sendHeartbeat(gen);
            });
        });
    }

    /// The next heartbeat now instead of at its time (new complaints: the coordinator
    /// should hear of a poisoner before it sends many more rounds).
    void beatNow()
    {
        asio::post(strand, [self = shared_from_this()] {
            uint64_t gen;
            {
                std::lock_guard lock(self->mutex);
                self->beatQueued = false;
                gen = self->generation;
            }
            ++self->beatChain; // the pending timer's beat is this one
            self->timer.cancel();
            self->sendHeartbeat(gen);
        });
    }

    void sendHeartbeat(uint64_t gen)
    {
        net::Heartbeat hb;
        std::shared_ptr<net::Link> l;
        {
            std::lock_guard lock(mutex);
            if (gen != generation || !registered || stopped)
                return;
            hb = {++seq, assignment.version, toWire(latest)};
            sentComplaints = latest.complaints;
            lastBeat = Clock::now();
            inflight.emplace_back(hb.seq, Clock::now());
            if (inflight.size() > 64)
                inflight.pop_front();
            ++stats.heartbeatsSent;
            l = renewing ? renewing : link; // mid-renewal: the old link is the one registered
        }
        if (l)
            (void)l->send(hb); // QueueFull or NotOpen: the next beat tries again
        scheduleHeartbeat(gen);
    }

    std::shared_ptr<net::Link> currentLink()
    {
        std::lock_guard lock(mutex);
        return link;
    }

    asio::io_context &ioc;
    net::NetContext *context = nullptr;
    asio::strand<asio::io_context::executor_type> strand;
    asio::steady_timer timer;
    asio::steady_timer retryTimer;       ///< after the coordinator asked to wait (Limited)
    asio::steady_timer renewTimer;       ///< registers again before this node's certificate expires
    asio::steady_timer probeTimer;       ///< the upload probe's time limit
    std::shared_ptr<net::Link> renewing; ///< the link a renewal replaces, until the new one registers
    const CoordinatorClientConfig config;
    const net::Identity identity;

    std::mutex eventsMutex; // held while a callback runs; the destructor waits on it
    CoordinatorClientEvents events;

    mutable std::mutex mutex;
    std::shared_ptr<net::Link> link;
    uint64_t linkSerial = 0;          ///< start()s so far: the newest dialled link's serial
    std::condition_variable closedCv; // leave() and stop() wait, briefly, for the goodbye to go out
    bool connected = false, registered = false, stopped = false, refused = false;
    int limitedStrikes = 0;  ///< "wait" answers in a row; reset by a registration
    uint64_t generation = 0; // bumps on every (dis)connection: stale timers see it and stop
    std::optional<Registration> registration;
    Assignment assignment;
    NodeReport latest;
    std::chrono::milliseconds interval{1000};
    std::map<std::string, int64_t> sentComplaints; ///< in the last heartbeat sent
    Clock::time_point lastBeat;
    bool beatQueued = false; ///< beatNow() posted and not yet run
    uint64_t beatChain = 0;  ///< strand only: the heartbeat timer chain that may send
    uint64_t seq = 0;
    std::deque<std::pair<uint64_t, Clock::time_point>> inflight;
    CoordinatorClientStats stats;

    std::mutex probeMutex; ///< the upload probe's; never held while taking `mutex`
    std::unique_ptr<net::UploadProbe> probe;
    std::shared_ptr<net::Link> probeLink;  ///< the link it runs on, which registers when it is done
    bool uploadProbed = false;             ///< once per client
    std::atomic<double> measuredUpload{0}; ///< bytes/s; 0: not measured
};

CoordinatorClient::CoordinatorClient(net::NetContext &context, CoordinatorClientConfig config, net::Identity identity,
                                     CoordinatorClientEvents events)
    : m(std::make_shared<Impl>(context.impl().ioc, std::move(config), std::move(identity), std::move(events)))
{
    m->context = &context;
}

CoordinatorClient::~CoordinatorClient()
{
    stop();
    std::lock_guard lock(m->eventsMutex); // waits for a callback in flight; none follows
    m->events = {};
}

void CoordinatorClient::start() { m->start(); }

void CoordinatorClient::report(const NodeReport &report)
{
    bool now = false;
    {
        std::lock_guard lock(m->mutex);
        m->latest = report;
        // New refusals go out at once, at most one early beat per kEarlyBeatSpacing.
        if (m->registered && !m->stopped && !m->beatQueued && report.complaints != m->sentComplaints &&
            Clock::now() - m->lastBeat >= kEarlyBeatSpacing) {
            m->beatQueued = now = true;
        }
    }
    if (now)
        m->beatNow();
}

bool CoordinatorClient::requestRelay(const std::string &peerId)
{
    auto l = m->currentLink();
    if (!l || !isRegistered())
        return false;
    return l->send(net::RelayRequest{peerId}) == net::SendResult::Queued;
}

bool CoordinatorClient::requestData(const net::DataRequest &request)
{
    auto l = m->currentLink();
    if (!l || !isRegistered())
        return false;
    return l->send(request) == net::SendResult::Queued;
}

void CoordinatorClient::leave(const std::string &reason)
{
    auto l = m->currentLink();
    std::shared_ptr<net::Link> renewing;
    {
        std::lock_guard lock(m->mutex);
        if (m->stopped)
            return;
        m->stopped = true;
        ++m->generation;
        renewing = std::exchange(m->renewing, nullptr);
    }
    if (renewing) { // mid-renewal: the old link is the registered one
        if (renewing->isOpen())
            (void)renewing->send(net::Leave{reason});
        renewing->close("left: " + reason);
    }
    if (!l)
        return;
    if (l->isOpen())
        (void)l->send(net::Leave{reason});
    l->close("left: " + reason);
    m->awaitClose();
}

void CoordinatorClient::stop()
{
    auto l = m->currentLink();
    std::shared_ptr<net::Link> renewing;
    {
        std::lock_guard lock(m->mutex);
        if (m->stopped)
            return;
        m->stopped = true;
        ++m->generation;
        renewing = std::exchange(m->renewing, nullptr);
    }
    if (renewing)
        renewing->close("the node stopped");
    asio::post(m->strand, [impl = m] {
        impl->timer.cancel();
        impl->retryTimer.cancel();
        impl->renewTimer.cancel();
        impl->probeTimer.cancel();
    });
    if (l) {
        l->close("the node stopped");
        m->awaitClose();
    }
}

bool CoordinatorClient::isConnected() const
{
    std::lock_guard lock(m->mutex);
    return m->connected;
}

bool CoordinatorClient::isRegistered() const
{
    std::lock_guard lock(m->mutex);
    return m->registered;
}

std::optional<Registration> CoordinatorClient::registration() const
{
    std::lock_guard lock(m->mutex);
    return m->registration;
}

Assignment CoordinatorClient::assignment() const
{
    std::lock_guard lock(m->mutex);
    return m->assignment;
}

CoordinatorClientStats CoordinatorClient::stats() const
{
    std::lock_guard lock(m->mutex);
    CoordinatorClientStats s = m->stats;
    if (m->registered)
        s.heartbeatInterval = m->interval;
    return s;
}

} // namespace rookery::coord
