// SPDX-License-Identifier: GPL-3.0-or-later
// The coordinator's write queue is bounded: while its database is held (another
// connection's exclusive lock, as a slow or stuck disk would), node metrics past the
// shedding mark are dropped and counted, and a state write past the cap waits for room
// instead of growing the queue; once the disk answers, every state write is there.
#include <QtTest>

#include <atomic>
#include <chrono>
#include <thread>

#include "engine/coord/coordinator_store.h"
#include "engine/store/sqlite_db.h"

using namespace rookery;
using namespace std::chrono_literals;
using coord::CoordinatorStore;

class TestCoordinatorStore : public QObject
{
    Q_OBJECT

    static coord::StoredMetric metric(int64_t atMs)
    {
        coord::StoredMetric m;
        m.nodeId = "node";
        m.atMs = atMs;
        m.report.step = atMs;
        return m;
    }

private Q_SLOTS:
    void aStuckDiskShedsMetricsAndHoldsStateWritesBack()
    {
        QTemporaryDir dir;
        const std::filesystem::path path = dir.filePath(QStringLiteral("rookery.db")).toStdString();
        CoordinatorStore store(path);
        store.saveNonce("first", "node", 1);
        store.flush();

        // Another connection takes the write lock: the writer's next batch waits on it
        // (up to SQLite's 5 s busy timeout), and the queue fills meanwhile.
        store::Database other(path, store::Database::Access::ReadWrite);
        other.exec("BEGIN EXCLUSIVE");
        store.saveNonce("stuck", "node", 2); // the batch the writer now waits with
        std::this_thread::sleep_for(100ms);

        const int metrics = int(CoordinatorStore::kSheddingJobs) + 500;
        for (int i = 0; i < metrics; ++i)
            store.saveMetrics({metric(i)});
        auto f = store.queueFigures();
        QCOMPARE(f.jobs, CoordinatorStore::kSheddingJobs);
        QCOMPARE(f.droppedMetrics, uint64_t(500));
        QCOMPARE(f.heldBack, uint64_t(0));

        // State writes are never dropped: past the cap the caller waits.
        const int nonces = int(CoordinatorStore::kMaxJobs - CoordinatorStore::kSheddingJobs) + 10;
        std::atomic<int> posted{0};
        std::thread writer([&] {
            for (int i = 0; i < nonces; ++i) {
                store.saveNonce("n" + std::to_string(i), "node", 10 + i);
                ++posted;
            }
        });
        QTRY_VERIFY_WITH_TIMEOUT(store.queueFigures().heldBack == 1, 2000);
        std::this_thread::sleep_for(200ms);
        QCOMPARE(store.queueFigures().jobs, CoordinatorStore::kMaxJobs);
        QVERIFY(posted.load() < nonces);
        QCOMPARE(store.queueFigures().droppedMetrics, uint64_t(500)); // nothing of the state dropped

        other.exec("COMMIT"); // the disk answers
        writer.join();
        store.flush();
        f = store.queueFigures();
        QCOMPARE(f.jobs, size_t(0));
        QCOMPARE(f.heldBack, uint64_t(1));
        const auto state = store.load();
        QCOMPARE(state.nonces.size(), size_t(nonces + 2));
        QCOMPARE(store.metrics("node").size(), CoordinatorStore::kSheddingJobs);
    }
};

QTEST_APPLESS_MAIN(TestCoordinatorStore)
#include "tst_coordinator_store.moc"
