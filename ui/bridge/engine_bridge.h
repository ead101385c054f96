// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>

#include <QList>
#include <QObject>
#include <QString>
#include <QTimer>

#include "engine/host/engine_api.h"
#include "ui/bridge/engine_types.h"

namespace rookery::ui {

/// The desktop app's one door to the engine. It owns the EngineApi, copies its snapshot
/// on a timer and emits snapshotChanged() only when the engine published a new one; the
/// engine's notifier posts a single queued wake-up (coalesced) that drains the event
/// queue. Command results, which the engine reports on its own threads, are hopped onto
/// this object's thread before any callback or signal runs. Nothing here waits: every
/// command returns at once, so the UI thread never blocks on training, disk or network.
///
/// Thread safety: create, use and destroy on one thread (the UI thread). Callbacks and
/// signals arrive on that thread; an engine that reports after the bridge is gone is
/// ignored safely.
class EngineBridge : public QObject
{
    Q_OBJECT

public:
    /// Called on the bridge's thread with "" on success or the engine's sentence.
    using Done = std::function<void(const QString &error)>;

    /// Starts polling at once (every `pollMs`, 250-1000 in the app).
    explicit EngineBridge(std::shared_ptr<host::EngineApi> engine, int pollMs = 500, QObject *parent = nullptr);
    ~EngineBridge() override;

    /// The newest snapshot this bridge has copied.
    const host::EngineSnapshot &snapshot() const { return m_snapshot; }
    std::map<std::string, std::string> governorSettings() const;

    void setConsent(bool given);
    void startLocal(Done done = {});
    void joinSwarm(const QString &address, Done done = {});
    void startDemoSwarm(int nodes, Done done = {});
    void stopTraining(Done done = {});
    void pause();
    void resume();
    void snooze(int minutes);
    void applyGovernorSettings(const std::map<std::string, std::string> &settings, Done done = {});
    void resumeCheckpoint(int64_t id, Done done = {});
    void deleteCheckpoint(int64_t id, Done done = {});

public Q_SLOTS:
    /// Copies the engine's snapshot now; emits snapshotChanged() if it is new.
    void pollNow();
    /// Takes the engine's queued events now; emits eventsArrived() if there were any.
    void drainEvents();

Q_SIGNALS:
    void snapshotChanged(const rookery::host::EngineSnapshot &snapshot);
    void eventsArrived(const QList<rookery::host::EngineEvent> &events);
    /// After every command with a result; `error` is empty on success.
    void commandFinished(const QString &command, const QString &error);

private:
    struct Link;
    host::EngineApi::ResultCallback hop(const QString &command, Done done);
    void pollSoon();

    std::shared_ptr<host::EngineApi> m_engine;
    std::shared_ptr<Link> m_link; // shared with callbacks on engine threads
    QTimer m_poll;
    host::EngineSnapshot m_snapshot;
    bool m_haveSnapshot = false;
};

} // namespace rookery::ui
