// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>

#include "engine/host/engine_api.h"

namespace rookery::control {

/// Where a headless node's control API is.
struct RemoteTarget
{
    /// The node's data directory: its control-port and control-token files are read
    /// there at every (re)connection, so a restarted node is found again.
    std::filesystem::path dataDir;
    uint16_t port = 0;               ///< nonzero: this port instead of the data directory's
    std::filesystem::path tokenFile; ///< with a port: the token's file (default: dataDir's)

    /// "127.0.0.1:7480" or the data directory, for messages.
    std::string describe() const;

    /// rookery --attach's argument: a port number (1-65535) or a node's data directory.
    /// A port takes its token from `tokenFile`, or else from the default data
    /// directory's control-token. Throws rookery::Error for a number out of range.
    static RemoteTarget parse(const std::string &text, const std::string &tokenFile = {});
};

/// The engine of a rookery-node running on this machine, driven over its local control
/// API (engine/control/engine_control.h), whose routes are EngineApi's methods: what the
/// desktop app uses when started with --attach instead of an engine of its own.
///
/// A worker thread polls the node's status and events every poll interval and sends
/// the commands, in order, as they are queued; nothing the caller does waits on the
/// network. Every command maps onto its route and the node answers it; rookery-node
/// refuses starting other work with a sentence (it trains what it was started with),
/// and its job's end ends the process. Withdrawing consent pauses the node: its
/// operator consented by starting it. When the node cannot be reached or refuses the
/// token, the snapshot says so in lastError and the worker keeps trying.
///
/// Thread safety: as EngineApi; callbacks and the notifier come from the worker thread.
class RemoteEngine final : public host::EngineApi
{
public:
    explicit RemoteEngine(RemoteTarget target, std::chrono::milliseconds pollInterval = std::chrono::milliseconds(500));
    ~RemoteEngine() override;
    RemoteEngine(const RemoteEngine &) = delete;
    RemoteEngine &operator=(const RemoteEngine &) = delete;

    void setConsent(bool given) override;
    void startLocal(ResultCallback done) override;
    void joinSwarm(const std::string &address, ResultCallback done) override;
    void startDemoSwarm(int nodes, ResultCallback done) override;
    void stopTraining(ResultCallback done) override;
    void pause() override;
    void resume() override;
    void snooze(int minutes) override;
    std::map<std::string, std::string> governorSettings() const override;
    void applyGovernorSettings(const std::map<std::string, std::string> &settings, ResultCallback done) override;
    void resumeCheckpoint(int64_t id, ResultCallback done) override;
    void deleteCheckpoint(int64_t id, ResultCallback done) override;
    host::EngineSnapshot snapshot() const override;
    std::vector<host::EngineEvent> takeEvents() override;
    void setNotifier(std::function<void()> notify) override;

    /// True while the last exchange with the node succeeded.
    bool connected() const;
    const RemoteTarget &target() const;

    struct Impl;

private:
    std::shared_ptr<Impl> d;
};

} // namespace rookery::control
