// SPDX-License-Identifier: GPL-3.0-or-later
// Helpers for the coordinator tests: measured-looking profiles, heterogeneous
// populations, a coordinator on loopback with short timeouts, and clients.
#pragma once

#include <QtTest>

#include <algorithm>
#include <filesystem>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "engine/coord/coordinator.h"
#include "engine/coord/coordinator_client.h"
#include "engine/device/capability_profile.h"
#include "engine/model/model_zoo.h"
#include "engine/swarm/swarm_planner.h"
#include "tests/support/test_support.h"

namespace rookery::test {

/// A profile as engine/device would measure it.
inline std::string profileJson(double gflops, uint64_t memoryBytes)
{
    device::CapabilityProfile p;
    p.cpuModel = "Test CPU";
    p.physicalCores = p.logicalCores = p.allowedCores = 4;
    p.ramTotalBytes = memoryBytes * 2;
    p.ramAvailableBytes = memoryBytes;
    p.gflopsOneThread = gflops / 4;
    p.gflopsAllThreads = gflops;
    p.memoryBandwidthBytesPerSecond = 10e9;
    p.dataDir = "/tmp";
    p.diskFreeBytes = uint64_t(10) << 30;
    p.measuredAtMs = 1714000000000;
    return device::toJson(p);
}

/// What the MLP needs of a cluster at microbatch 64 with SGD + momentum.
/// Where a node sits in its pipeline: state, cluster, stage and layers, and its
/// neighbours. Rings and shard counts follow the whole swarm, so they are left out.
inline bool sameSeat(const coord::Assignment &a, const coord::Assignment &b)
{
    return a.state == b.state && a.cluster == b.cluster && a.stage == b.stage && a.stages == b.stages &&
           a.firstLayer == b.firstLayer && a.lastLayer == b.lastLayer && a.previous == b.previous && a.next == b.next;
}

inline int64_t mlpDemandBytes() { return swarm::demandOf({model::mlpSpec(), 64, 1}).memoryBytes; }

/// A coordinator's settings for tests: loopback, ephemeral ports, short timeouts.
inline coord::CoordinatorSettings testSettings(const std::filesystem::path &dataDir)
{
    coord::CoordinatorSettings s;
    s.dataDir = dataDir;
    s.swarmName = "test swarm";
    s.bindAddress = "127.0.0.1";
    s.port = 0;
    s.statusPort = 0;
    s.relayPort = 0;
    // Test nodes advertise ports nobody listens on: their checks fail within this, and a
    // first plan waits for the verdicts.
    s.reachabilityTimeout = std::chrono::milliseconds(1000);
    s.run.model = model::mlpSpec();
    s.run.microbatch = 64;
    s.heartbeatInterval = std::chrono::milliseconds(100);
    s.heartbeatTimeout = std::chrono::milliseconds(600);
    s.rejoinGrace = std::chrono::milliseconds(1200);
    s.restartGrace = std::chrono::milliseconds(5000);
    s.firstPlanDelay = std::chrono::milliseconds(0);
    s.planInterval = std::chrono::milliseconds(20);
    s.statusFeedInterval = std::chrono::milliseconds(200);
    s.ioThreads = 1;
    s.planGenerations = 30;
    // Every test node comes from 127.0.0.1 without an invite: the admission tests set these.
    s.admission = coord::Admission::Open;
    s.addressLimits = {0, 0, 0};
    s.maxLinksPerAddress = 0;
    return s;
}

/// A node's client plus everything its callbacks saw.
struct TestNode
{
    net::Identity identity = net::Identity::generate();
    std::unique_ptr<coord::CoordinatorClient> client;
    mutable std::mutex mutex;
    std::vector<coord::Registration> registrations;
    std::vector<coord::Assignment> updates;
    std::vector<std::string> errors;
    int connects = 0, disconnects = 0;
    std::string listenAddress; ///< what it advertises; "": a port on every interface nobody listens on
    uint16_t relayPort = 0;    ///< it offers a relay there (Register.relay_port)
    std::vector<net::RelayGrant> grants;
    std::vector<net::RelayExpect> expects; ///< pairs its relay is told to expect
    std::vector<net::BanList> banLists;    ///< the coordinator's ban lists, as they came
    bool measureUpload = false;            ///< measure the upload before registering (as nodes do)
    double uploadCap = 0;                  ///< the volunteer's upload cap, bytes/s; 0: none
    std::vector<double> uploadsMeasured;   ///< what the client's probe measured

    // The client goes first: its callbacks write to the members above, and the
    // coordinator may push an assignment to it while it is being torn down.
    TestNode() = default;
    TestNode(const TestNode &) = delete;
    TestNode &operator=(const TestNode &) = delete;
    ~TestNode() { client.reset(); }

    /// A client callback that appends what it is given to `into`, under the lock.
    template <class T> std::function<void(const T &)> recordInto(std::vector<T> &into)
    {
        return [this, &into](const T &x) {
            std::lock_guard lock(mutex);
            into.push_back(x);
        };
    }

    void start(net::NetContext &net, const net::CoordinatorAddress &address, double gflops, uint64_t memory,
               const std::string &profile = {})
    {
        coord::CoordinatorClientConfig c;
        c.address = address;
        c.name = "node-" + identity.nodeId().substr(0, 6);
        c.listenAddress =
            listenAddress.empty() ? "0.0.0.0:" + std::to_string(7500 + (identity.nodeId()[0] % 100)) : listenAddress;
        c.profileJson = profile.empty() ? profileJson(gflops, memory) : profile;
        c.uploadBytesPerSecond = measureUpload ? 0 : 100e6;
        c.measureUpload = measureUpload;
        c.uploadCapBytesPerSecond = uploadCap;
        c.relayPort = relayPort;
        c.initialBackoff = std::chrono::milliseconds(50);
        c.maxBackoff = std::chrono::milliseconds(400);
        coord::CoordinatorClientEvents e;
        e.registered = recordInto(registrations);
        e.assignmentChanged = recordInto(updates);
        e.error = recordInto(errors);
        e.connection = [this](bool up) {
            std::lock_guard lock(mutex);
            ++(up ? connects : disconnects);
        };
        e.relayGranted = recordInto(grants);
        e.relayExpected = recordInto(expects);
        e.banned = recordInto(banLists);
        e.uploadMeasured = [this](double bytesPerSecond, const std::string &) {
            std::lock_guard lock(mutex);
            uploadsMeasured.push_back(bytesPerSecond);
        };
        client = std::make_unique<coord::CoordinatorClient>(net, c, identity, e);
        client->start();
    }
    size_t registrationCount() const
    {
        std::lock_guard lock(mutex);
        return registrations.size();
    }
    size_t updateCount() const
    {
        std::lock_guard lock(mutex);
        return updates.size();
    }
    /// The assignments pushed after the first `count`.
    std::vector<coord::Assignment> updatesSince(size_t count) const
    {
        std::lock_guard lock(mutex);
        return {updates.begin() + std::ptrdiff_t(std::min(count, updates.size())), updates.end()};
    }
    /// The newest ban list heard (empty before any).
    std::vector<std::string> banned() const
    {
        std::lock_guard lock(mutex);
        return banLists.empty() ? std::vector<std::string>() : banLists.back().nodeIds;
    }
    std::string lastError() const
    {
        std::lock_guard lock(mutex);
        return errors.empty() ? std::string() : errors.back();
    }
    int disconnectCount() const
    {
        std::lock_guard lock(mutex);
        return disconnects;
    }
    coord::Assignment assignment() const { return client->assignment(); }
    /// The client's current assignment has reached the callbacks too (the client holds
    /// a new assignment a moment before it calls back).
    bool settled() const
    {
        const uint64_t version = client->assignment().version;
        std::lock_guard lock(mutex);
        return (!updates.empty() && updates.back().version == version) ||
               (!registrations.empty() && registrations.back().assignment.version == version);
    }
    bool training() const { return client && client->assignment().isTraining(); }
};

/// Polls `predicate` until it holds; generous, because these tests run next to others
/// on a 2-core machine.
inline bool eventually(const std::function<bool()> &predicate,
                       std::chrono::milliseconds timeout = std::chrono::seconds(30))
{
    return waitFor(predicate, timeout);
}

} // namespace rookery::test
