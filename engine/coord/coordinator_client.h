// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "engine/coord/assignment.h"
#include "engine/net/coordinator_address.h"
#include "engine/net/identity.h"
#include "engine/net/net_context.h"
#include "engine/net/wire_message.h"

namespace rookery::coord {

/// Who this node is and how it is reached, as it tells its coordinator.
struct CoordinatorClientConfig
{
    net::CoordinatorAddress address; ///< wss://host:port/path#sha256=<the coordinator's certificate>
    std::string name;                ///< for people: "alice-laptop"
    /// "host:port" of this node's peer listener. An empty or wildcard host ("0.0.0.0:7402",
    /// ":7402") means "the address my coordinator link comes from".
    std::string listenAddress;
    std::string profileJson;         ///< device::toJson(CapabilityProfile)
    double uploadBytesPerSecond = 0; ///< upload known already; 0 = unknown (the coordinator assumes a default)
    /// Measure the upload to the coordinator (net::UploadProbe, padded pings on the new
    /// link, about 2 MiB on a fast link) before the first registration, and register with
    /// that figure. Once per client: a reconnection registers with the same figure.
    bool measureUpload = false;
    /// The volunteer's upload cap (bytes/s; 0: none): the registered upload is never
    /// above it, and is it when nothing was measured.
    double uploadCapBytesPerSecond = 0;
    /// The probe's time: then it registers with what part of the burst measured, or none.
    /// Well within the 10 s a coordinator waits for a new link's Register.
    std::chrono::milliseconds uploadProbeTimeout{6'000};
    /// This node runs a relay for other volunteers on this port (it opted in, and the
    /// coordinator may send pairs to it while it can be dialled); 0: none.
    uint16_t relayPort = 0;
    std::chrono::milliseconds handshakeTimeout{10'000};
    std::chrono::milliseconds initialBackoff{250}; ///< reconnecting: doubles up to maxBackoff, with jitter
    std::chrono::milliseconds maxBackoff{30'000};
};

/// Callbacks of the client. All run on the NetContext's I/O thread, one at a time; they
/// must not block (post work elsewhere). Any may be empty.
struct CoordinatorClientEvents
{
    /// After every successful registration (first connection and each reconnection).
    std::function<void(const Registration &)> registered;
    /// The coordinator changed this node's assignment (not called for the assignment
    /// that comes with `registered`).
    std::function<void(const Assignment &)> assignmentChanged;
    /// Something a person should read: a refusal ("the registration nonce was seen
    /// before"), a malformed reply. After a refusal the client stops reconnecting.
    std::function<void(const std::string &)> error;
    /// The link to the coordinator came up (true) or went down (false). It comes back
    /// by itself, with back-off, unless the coordinator refused this node.
    std::function<void(bool)> connection;
    /// A connection attempt failed, or the link dropped, and the client will try again:
    /// the reason as the network stack gave it ("Connection refused", "timed out").
    std::function<void(const std::string &)> attemptFailed;
    /// A heartbeat was acknowledged, with its round-trip time (for the UI and benches).
    std::function<void(std::chrono::microseconds)> heartbeatAcked;
    /// A relayed link to a peer was granted (asked for by this node or by the peer),
    /// or refused (an empty token, with the reason).
    std::function<void(const net::RelayGrant &)> relayGranted;
    /// This node's relay (config.relayPort) is to expect a pair: register its tokens.
    std::function<void(const net::RelayExpect &)> relayExpected;
    /// The coordinator's ban list (quarantined node ids), whole, each time it changes
    /// and after each registration while it is not empty.
    std::function<void(const net::BanList &)> banned;
    /// A piece of a dataset file, or a refusal, answering requestData().
    std::function<void(const net::DataPiece &)> dataPiece;
    /// The upload to the coordinator was measured (config.measureUpload): bytes/s (0 when
    /// it could not be) and the probe's account ("4.2 MB/s (1.9 MiB in 0.46 s, ...)").
    std::function<void(double, const std::string &)> uploadMeasured;
};

/// Counters for status displays and benchmarks.
struct CoordinatorClientStats
{
    uint64_t registrations = 0;
    uint64_t heartbeatsSent = 0;
    uint64_t heartbeatsAcked = 0;
    uint64_t assignmentUpdates = 0;
    std::chrono::microseconds lastRoundTrip{0};
    /// The heartbeat interval the coordinator asked for last (0 before registering).
    std::chrono::milliseconds heartbeatInterval{0};
};

/// A node's link to its coordinator: registers on every (re)connection with the same
/// identity (presenting a self-signed certificate of its key, so the registration is
/// bound to the key the node proves it holds), then sends a heartbeat every interval
/// the coordinator asked for, carrying the latest report(). Reconnects with back-off
/// when the link drops, until stop(), leave() or a refusal.
///
/// Thread safety: every method may be called from any thread. Events arrive on the
/// NetContext's I/O thread. Destroy the client before its NetContext.
class CoordinatorClient
{
public:
    CoordinatorClient(net::NetContext &context, CoordinatorClientConfig config, net::Identity identity,
                      CoordinatorClientEvents events);
    ~CoordinatorClient();
    CoordinatorClient(const CoordinatorClient &) = delete;
    CoordinatorClient &operator=(const CoordinatorClient &) = delete;

    /// Starts connecting. Call once.
    void start();
    /// The figures the next heartbeats carry. A report with complaints the last heartbeat
    /// did not carry is sent at once (at most one such early beat per 200 ms), so that a
    /// poisoner is quarantined within a round or two of rings, not a heartbeat interval.
    void report(const NodeReport &report);
    /// Asks for a relayed link to `peerId` (neither can dial the other); the answer
    /// comes as `relayGranted`, to both. False when not registered right now.
    bool requestRelay(const std::string &peerId);
    /// Asks for a piece of a dataset file the run's dataset names; the answer comes as
    /// `dataPiece`. False when not registered right now (ask again once registered).
    bool requestData(const net::DataRequest &request);
    /// Tells the coordinator this node leaves (it re-plans at once), then closes.
    void leave(const std::string &reason = "the node is shutting down");
    /// Closes without a Leave: the coordinator keeps this node's assignment for its
    /// rejoin grace period, so a quick restart resumes the same stage. Idempotent.
    void stop();

    bool isConnected() const;
    bool isRegistered() const; ///< on the current connection
    /// The last registration (kept across reconnections); nullopt before the first.
    std::optional<Registration> registration() const;
    /// The newest assignment (from the registration or a later update).
    Assignment assignment() const;
    CoordinatorClientStats stats() const;

    struct Impl;

private:
    std::shared_ptr<Impl> m;
};

} // namespace rookery::coord
