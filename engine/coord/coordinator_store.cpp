// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/coord/coordinator_store.h"

#include <future>
#include <utility>

#include "engine/common/error.h"
#include "engine/common/log.h"
#include "engine/common/wall_clock.h"
#include "engine/coord/coord_json.h"
#include "engine/store/schema.h"
#include "engine/store/sqlite_db.h"

namespace rookery::coord {
namespace {

NodeActivity activityFrom(const std::string &name)
{
    for (auto a : {NodeActivity::Unknown, NodeActivity::Waiting, NodeActivity::Loading, NodeActivity::Training,
                   NodeActivity::Paused, NodeActivity::Failed})
        if (nodeActivityName(a) == name)
            return a;
    return NodeActivity::Unknown;
}

StoredState readState(store::Database &db)
{
    StoredState s;
    auto v =
        db.prepare("SELECT node_id, name, listen_address, profile, upload_bytes_per_second, certificate, software, "
                   "first_seen_at, last_seen_at, presence FROM coord_volunteers ORDER BY node_id");
    while (v.step())
        s.volunteers.push_back({v.columnText(0), v.columnText(1), v.columnText(2), v.columnText(3), v.columnDouble(4),
                                v.columnText(5), v.columnText(6), v.columnInt(7), v.columnInt(8), v.columnText(9)});
    auto r = db.prepare("SELECT id, created_at, config, plan FROM coord_runs ORDER BY created_at DESC, rowid DESC "
                        "LIMIT 1");
    if (r.step())
        s.run = StoredRun{r.columnText(0), r.columnInt(1), r.columnText(2), r.columnText(3)};
    if (s.run) {
        auto a = db.prepare("SELECT node_id, assignment FROM coord_assignments WHERE run_id = ?");
        a.bind(1, std::string_view(s.run->id));
        while (a.step())
            s.assignments.emplace(a.columnText(0), assignmentFromJson(a.columnText(1)));
    }
    auto n = db.prepare("SELECT nonce, seen_at FROM coord_nonces");
    while (n.step()) {
        const auto blob = n.columnBlob(0);
        s.nonces.emplace_back(std::string(blob.begin(), blob.end()), n.columnInt(1));
    }
    return s;
}

} // namespace

CoordinatorStore::CoordinatorStore(const std::filesystem::path &databasePath)
    : m_path(databasePath)
    , m_db(std::make_unique<store::Database>(store::openRookeryDatabase(databasePath)))
{
    m_writer = std::thread([this] { run(); });
}

CoordinatorStore::~CoordinatorStore()
{
    {
        std::lock_guard lock(m_mutex);
        m_stop = true;
    }
    m_wake.notify_all();
    m_writer.join();
}

void CoordinatorStore::post(Job job, size_t bytes, Priority priority)
{
    {
        std::unique_lock lock(m_mutex);
        if (priority == Priority::History &&
            (m_queue.size() >= kSheddingJobs || m_queuedBytes + bytes > kSheddingBytes)) {
            if (++m_droppedMetrics == 1 || m_droppedMetrics % 1000 == 0)
                log::warning("coord", "the database at " + m_path.string() + " is behind: node metrics were dropped (" +
                                          std::to_string(m_droppedMetrics) + " batches so far)");
            return;
        }
        if (m_queue.size() >= kMaxJobs || m_queuedBytes + bytes > kMaxBytes) {
            ++m_heldBack;
            // Room comes as the writer takes a batch; an empty queue always takes one job.
            m_idle.wait(lock, [&] {
                return m_queue.empty() || (m_queue.size() < kMaxJobs && m_queuedBytes + bytes <= kMaxBytes);
            });
        }
        m_queue.emplace_back(std::move(job), bytes);
        m_queuedBytes += bytes;
        ++m_queued;
    }
    m_wake.notify_one();
}

// The writer: everything queued at a wake-up goes in one transaction.
void CoordinatorStore::run()
{
    std::unique_lock lock(m_mutex);
    for (;;) {
        m_wake.wait(lock, [&] { return m_stop || !m_queue.empty(); });
        if (m_queue.empty() && m_stop)
            return;
        auto batch = std::exchange(m_queue, {});
        m_queuedBytes = 0;
        m_idle.notify_all(); // room for writers held back
        lock.unlock();
        try {
            store::Transaction tx(*m_db);
            for (auto &job : batch)
                job.first(*m_db);
            tx.commit();
        } catch (const std::exception &e) {
            log::error("coord", "could not write the coordinator's state to " + m_path.string() + ": " + e.what());
        }
        lock.lock();
        m_done += batch.size();
        m_idle.notify_all();
    }
}

CoordinatorStore::QueueFigures CoordinatorStore::queueFigures() const
{
    std::lock_guard lock(m_mutex);
    return {m_queue.size(), m_queuedBytes, m_droppedMetrics, m_heldBack};
}

void CoordinatorStore::flush()
{
    std::unique_lock lock(m_mutex);
    const uint64_t target = m_queued;
    m_idle.wait(lock, [&] { return m_done >= target; });
}

StoredState CoordinatorStore::load()
{
    auto promise = std::make_shared<std::promise<StoredState>>();
    auto future = promise->get_future();
    post([promise](store::Database &db) {
        try {
            promise->set_value(readState(db));
        } catch (...) {
            promise->set_exception(std::current_exception());
        }
    });
    return future.get();
}

std::vector<StoredMetric> CoordinatorStore::metrics(const std::string &nodeId)
{
    auto promise = std::make_shared<std::promise<std::vector<StoredMetric>>>();
    auto future = promise->get_future();
    post([promise, nodeId](store::Database &db) {
        std::vector<StoredMetric> out;
        auto q = db.prepare("SELECT at, step, samples_per_second, loss, samples_total, busy_fraction, activity FROM "
                            "coord_metrics WHERE node_id = ? ORDER BY at");
        q.bind(1, std::string_view(nodeId));
        while (q.step()) {
            NodeReport r;
            r.samplesPerSecond = q.columnDouble(2);
            r.step = q.columnInt(1);
            r.loss = q.columnDouble(3);
            r.activity = activityFrom(q.columnText(6));
            r.samplesTotal = q.columnInt(4);
            r.busyFraction = q.columnDouble(5);
            out.push_back({nodeId, q.columnInt(0), std::move(r)});
        }
        promise->set_value(std::move(out));
    });
    return future.get();
}

void CoordinatorStore::saveVolunteer(StoredVolunteer v)
{
    const size_t bytes = sizeof v + v.profileJson.size() + v.certificatePem.size() + v.name.size();
    post(
        [v = std::move(v)](store::Database &db) {
            db.prepare("INSERT OR REPLACE INTO coord_volunteers (node_id, name, listen_address, profile, "
                       "upload_bytes_per_second, certificate, software, first_seen_at, last_seen_at, presence) VALUES "
                       "(?, ?, ?, ?, ?, ?, ?, ?, ?, ?)")
                .bind(1, std::string_view(v.nodeId))
                .bind(2, std::string_view(v.name))
                .bind(3, std::string_view(v.listenAddress))
                .bind(4, std::string_view(v.profileJson))
                .bind(5, v.uploadBytesPerSecond)
                .bind(6, std::string_view(v.certificatePem))
                .bind(7, std::string_view(v.software))
                .bind(8, v.firstSeenMs)
                .bind(9, v.lastSeenMs)
                .bind(10, std::string_view(v.presence))
                .run();
        },
        bytes);
}

void CoordinatorStore::saveRun(StoredRun r)
{
    const size_t bytes = sizeof r + r.configJson.size() + r.planJson.size();
    post(
        [r = std::move(r)](store::Database &db) {
            db.prepare("INSERT INTO coord_runs (id, created_at, config, plan, updated_at) VALUES (?, ?, ?, ?, ?) "
                       "ON CONFLICT (id) DO UPDATE SET config = excluded.config, plan = excluded.plan, "
                       "updated_at = excluded.updated_at")
                .bind(1, std::string_view(r.id))
                .bind(2, r.createdAtMs)
                .bind(3, std::string_view(r.configJson))
                .bind(4, std::string_view(r.planJson))
                .bind(5, nowMs())
                .run();
        },
        bytes);
}

void CoordinatorStore::savePlan(const std::string &runId, std::string planJson)
{
    const size_t bytes = planJson.size() + runId.size();
    post(
        [runId, plan = std::move(planJson)](store::Database &db) {
            db.prepare("UPDATE coord_runs SET plan = ?, updated_at = ? WHERE id = ?")
                .bind(1, std::string_view(plan))
                .bind(2, nowMs())
                .bind(3, std::string_view(runId))
                .run();
        },
        bytes);
}

void CoordinatorStore::saveAssignment(const std::string &runId, const std::string &nodeId,
                                      std::shared_ptr<const Assignment> a)
{
    post([runId, nodeId, a = std::move(a)](store::Database &db) {
        const int64_t version = int64_t(a->version);
        const std::string text = toJson(*a);
        db.prepare("INSERT OR REPLACE INTO coord_assignments (run_id, node_id, version, assignment, updated_at) "
                   "VALUES (?, ?, ?, ?, ?)")
            .bind(1, std::string_view(runId))
            .bind(2, std::string_view(nodeId))
            .bind(3, version)
            .bind(4, std::string_view(text))
            .bind(5, nowMs())
            .run();
    });
}

void CoordinatorStore::saveNonce(std::string nonce, const std::string &nodeId, int64_t seenAtMs)
{
    post([nonce = std::move(nonce), nodeId, seenAtMs](store::Database &db) {
        db.prepare("INSERT OR IGNORE INTO coord_nonces (nonce, node_id, seen_at) VALUES (?, ?, ?)")
            .bindBlob(1, {reinterpret_cast<const uint8_t *>(nonce.data()), nonce.size()})
            .bind(2, std::string_view(nodeId))
            .bind(3, seenAtMs)
            .run();
    });
}

void CoordinatorStore::saveMetrics(std::vector<StoredMetric> metrics)
{
    if (metrics.empty())
        return;
    const size_t bytes = metrics.size() * (sizeof(StoredMetric) + 64);
    post(
        [metrics = std::move(metrics)](store::Database &db) {
            auto insert = db.prepare("INSERT INTO coord_metrics (node_id, at, step, samples_per_second, loss, "
                                     "samples_total, busy_fraction, activity) VALUES (?, ?, ?, ?, ?, ?, ?, ?)");
            for (const auto &m : metrics) {
                insert.bind(1, std::string_view(m.nodeId))
                    .bind(2, m.atMs)
                    .bind(3, m.report.step)
                    .bind(4, m.report.samplesPerSecond)
                    .bind(5, m.report.loss)
                    .bind(6, m.report.samplesTotal)
                    .bind(7, m.report.busyFraction)
                    .bind(8, nodeActivityName(m.report.activity))
                    .run();
                insert.reset();
            }
        },
        bytes, Priority::History);
}

void CoordinatorStore::prune(int64_t nonceHorizonMs, int64_t metricsHorizonMs)
{
    post([nonceHorizonMs, metricsHorizonMs](store::Database &db) {
        db.prepare("DELETE FROM coord_nonces WHERE seen_at < ?").bind(1, nonceHorizonMs).run();
        db.prepare("DELETE FROM coord_metrics WHERE at < ?").bind(1, metricsHorizonMs).run();
    });
}

} // namespace rookery::coord
