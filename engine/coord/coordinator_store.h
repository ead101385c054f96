// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <condition_variable>
#include <deque>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "engine/coord/assignment.h"

namespace rookery::store {
class Database;
}

namespace rookery::coord {

/// A volunteer as the coordinator remembers it.
struct StoredVolunteer
{
    std::string nodeId;
    std::string name;
    std::string listenAddress;
    std::string profileJson;
    double uploadBytesPerSecond = 0;
    std::string certificatePem;
    std::string software;
    int64_t firstSeenMs = 0;
    int64_t lastSeenMs = 0;
    std::string presence; ///< "online", "lost", "gone", "left"
    bool operator==(const StoredVolunteer &) const = default;
};

struct StoredRun
{
    std::string id;
    int64_t createdAtMs = 0;
    std::string configJson; ///< coord::toJson(RunConfig)
    std::string planJson;   ///< PlanState::toJson(); empty before the first plan
};

/// A node's figures at one moment.
struct StoredMetric
{
    std::string nodeId;
    int64_t atMs = 0;
    NodeReport report;
};

/// Everything the coordinator reloads when it starts.
struct StoredState
{
    std::vector<StoredVolunteer> volunteers;
    std::optional<StoredRun> run;                        ///< the newest run
    std::map<std::string, Assignment> assignments;       ///< of that run, by node id
    std::vector<std::pair<std::string, int64_t>> nonces; ///< nonce, seen at (ms)
};

/// The coordinator's tables in Rookery's SQLite database (schema version 3). Writes are
/// queued and committed by one writer thread, one transaction per batch, so the network
/// threads do not wait on the disk; nothing is lost at a clean shutdown (the destructor
/// drains the queue), and after a crash nodes re-register anyway.
///
/// The queue is bounded, so a disk slower than the swarm's writes cannot grow the
/// coordinator without end: past kSheddingJobs queued writes or kSheddingBytes, node
/// metrics (history only) are dropped and counted; past kMaxJobs or kMaxBytes, a state
/// write waits for the writer to make room (the caller's thread is held back rather than
/// the state lost).
///
/// Thread safety: all methods may be called from any thread.
class CoordinatorStore
{
public:
    /// Opens or creates the database (openRookeryDatabase's checks and migrations);
    /// throws rookery::Error when it cannot.
    explicit CoordinatorStore(const std::filesystem::path &databasePath);
    ~CoordinatorStore();
    CoordinatorStore(const CoordinatorStore &) = delete;
    CoordinatorStore &operator=(const CoordinatorStore &) = delete;

    /// Reads the stored state (after the writes queued before it).
    StoredState load();
    /// Metrics of one node, oldest first (tests, later the metrics endpoint).
    std::vector<StoredMetric> metrics(const std::string &nodeId);

    void saveVolunteer(StoredVolunteer volunteer);
    void saveRun(StoredRun run);
    void savePlan(const std::string &runId, std::string planJson);
    /// Shared, so that the caller's copy serves the push too; serialised on the writer.
    void saveAssignment(const std::string &runId, const std::string &nodeId,
                        std::shared_ptr<const Assignment> assignment);
    void saveNonce(std::string nonce, const std::string &nodeId, int64_t seenAtMs);
    void saveMetrics(std::vector<StoredMetric> metrics);
    /// Forgets nonces seen before `nonceHorizonMs` and metrics older than `metricsHorizonMs`.
    void prune(int64_t nonceHorizonMs, int64_t metricsHorizonMs);
    /// Blocks until every write queued so far is committed.
    void flush();

    const std::filesystem::path &path() const { return m_path; }

    static constexpr size_t kSheddingJobs = 4096;
    static constexpr size_t kSheddingBytes = size_t(16) << 20;
    static constexpr size_t kMaxJobs = 65536;
    static constexpr size_t kMaxBytes = size_t(64) << 20;

    struct QueueFigures
    {
        size_t jobs = 0;             ///< writes waiting now
        size_t bytes = 0;            ///< their approximate size
        uint64_t droppedMetrics = 0; ///< metric batches dropped since start
        uint64_t heldBack = 0;       ///< state writes that waited for room since start
    };
    QueueFigures queueFigures() const;

private:
    using Job = std::function<void(store::Database &)>;
    enum class Priority { State, History };
    /// Queues `job`, of about `bytes`: a History job is dropped over the shedding mark, a
    /// State one waits while the queue is full.
    void post(Job job, size_t bytes = 256, Priority priority = Priority::State);
    void run();

    std::filesystem::path m_path;
    std::unique_ptr<store::Database> m_db;
    mutable std::mutex m_mutex;
    std::condition_variable m_wake, m_idle;
    std::deque<std::pair<Job, size_t>> m_queue;
    size_t m_queuedBytes = 0;
    uint64_t m_queued = 0, m_done = 0;
    uint64_t m_droppedMetrics = 0, m_heldBack = 0;
    bool m_stop = false;
    std::thread m_writer;
};

} // namespace rookery::coord
