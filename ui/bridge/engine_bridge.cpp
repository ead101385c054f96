// SPDX-License-Identifier: GPL-3.0-or-later
#include "ui/bridge/engine_bridge.h"

#include <atomic>
#include <mutex>

#include <QMetaObject>

namespace rookery::ui {

void registerEngineMetaTypes()
{
    qRegisterMetaType<host::EngineSnapshot>();
    qRegisterMetaType<host::EngineEvent>();
    qRegisterMetaType<QList<host::EngineEvent>>();
}

/// What engine threads hold on to: the bridge while it lives. Posting happens under the
/// mutex, and the destructor clears the pointer under the same mutex, so a post never
/// targets a dead object; a posted call that has not run when the bridge dies is
/// discarded by Qt together with the bridge's pending events.
struct EngineBridge::Link
{
    std::mutex mutex;
    EngineBridge *bridge = nullptr;
    std::atomic<bool> wakePending{false};

    template <typename F> void post(F fn)
    {
        std::lock_guard lock(mutex);
        if (bridge)
            QMetaObject::invokeMethod(
                bridge, [b = bridge, fn = std::move(fn)]() mutable { fn(b); }, Qt::QueuedConnection);
    }
};

EngineBridge::EngineBridge(std::shared_ptr<host::EngineApi> engine, int pollMs, QObject *parent)
    : QObject(parent)
    , m_engine(std::move(engine))
    , m_link(std::make_shared<Link>())
{
    registerEngineMetaTypes();
    m_link->bridge = this;
    m_engine->setNotifier([link = m_link] {
        // Many notifications, one wake-up: the flag stays set until drainEvents() runs.
        if (!link->wakePending.exchange(true))
            link->post([](EngineBridge *b) { b->drainEvents(); });
    });
    m_poll.setInterval(pollMs);
    connect(&m_poll, &QTimer::timeout, this, &EngineBridge::pollNow);
    m_poll.start();
}

EngineBridge::~EngineBridge()
{
    m_engine->setNotifier({});
    std::lock_guard lock(m_link->mutex);
    m_link->bridge = nullptr;
}

std::map<std::string, std::string> EngineBridge::governorSettings() const { return m_engine->governorSettings(); }

void EngineBridge::pollNow()
{
    host::EngineSnapshot next = m_engine->snapshot();
    if (m_haveSnapshot && next.sequence == m_snapshot.sequence)
        return;
    m_snapshot = std::move(next);
    m_haveSnapshot = true;
    Q_EMIT snapshotChanged(m_snapshot);
}

void EngineBridge::drainEvents()
{
    // Clear first: a notification that lands while we take the queue posts a new wake-up.
    m_link->wakePending.store(false);
    const std::vector<host::EngineEvent> taken = m_engine->takeEvents();
    pollNow();
    if (taken.empty())
        return;
    QList<host::EngineEvent> events(taken.begin(), taken.end());
    Q_EMIT eventsArrived(events);
}

void EngineBridge::pollSoon()
{
    // The engine applies commands on its own thread; look again shortly rather than wait.
    QTimer::singleShot(60, this, &EngineBridge::pollNow);
}

host::EngineApi::ResultCallback EngineBridge::hop(const QString &command, Done done)
{
    return [link = m_link, command, done = std::move(done)](const std::string &error) {
        link->post([command, done, error = QString::fromStdString(error)](EngineBridge *b) {
            if (done)
                done(error);
            Q_EMIT b->commandFinished(command, error);
            b->pollNow();
        });
    };
}

void EngineBridge::setConsent(bool given)
{
    m_engine->setConsent(given);
    pollSoon();
}

void EngineBridge::startLocal(Done done) { m_engine->startLocal(hop(QStringLiteral("start-local"), std::move(done))); }

void EngineBridge::joinSwarm(const QString &address, Done done)
{
    m_engine->joinSwarm(address.toStdString(), hop(QStringLiteral("join"), std::move(done)));
}

void EngineBridge::startDemoSwarm(int nodes, Done done)
{
    m_engine->startDemoSwarm(nodes, hop(QStringLiteral("demo-swarm"), std::move(done)));
}

void EngineBridge::stopTraining(Done done) { m_engine->stopTraining(hop(QStringLiteral("stop"), std::move(done))); }

void EngineBridge::pause()
{
    m_engine->pause();
    pollSoon();
}

void EngineBridge::resume()
{
    m_engine->resume();
    pollSoon();
}

void EngineBridge::snooze(int minutes)
{
    m_engine->snooze(minutes);
    pollSoon();
}

void EngineBridge::applyGovernorSettings(const std::map<std::string, std::string> &settings, Done done)
{
    m_engine->applyGovernorSettings(settings, hop(QStringLiteral("settings"), std::move(done)));
}

void EngineBridge::resumeCheckpoint(int64_t id, Done done)
{
    m_engine->resumeCheckpoint(id, hop(QStringLiteral("resume-checkpoint"), std::move(done)));
}

void EngineBridge::deleteCheckpoint(int64_t id, Done done)
{
    m_engine->deleteCheckpoint(id, hop(QStringLiteral("delete-checkpoint"), std::move(done)));
}

} // namespace rookery::ui
