// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "engine/train/training_state.h"

namespace rookery::store {

class Database;

/// A checkpoint's summary, cheap to list.
struct CheckpointInfo
{
    int64_t id = 0;
    std::string run;
    int64_t step = 0;
    int64_t createdAtMs = 0; ///< Unix time in milliseconds
    std::string modelName;
    int64_t bytes = 0; ///< tensor bytes held
};

struct Checkpoint
{
    CheckpointInfo info;
    train::TrainingState state;
};

/// Checkpoints in Rookery's SQLite database. A checkpoint is written in one
/// transaction (parameters, optimizer state, step, data cursor, RNG state and model
/// spec together), so it is there whole or not at all, whatever kills the process.
///
/// Thread safety: all methods may be called from any thread; they serialise on one
/// connection. Saving from the trainer's thread is the CheckpointWriter's job.
class CheckpointStore
{
public:
    /// Opens (or creates) the database; see openRookeryDatabase() for the checks.
    explicit CheckpointStore(const std::filesystem::path &databasePath);
    ~CheckpointStore();

    /// Saves `state` under `run` and deletes all but the newest `keepNewest` of that
    /// run, in the same transaction. Returns the new checkpoint's id.
    int64_t save(const std::string &run, const train::TrainingState &state, int keepNewest);

    std::optional<Checkpoint> loadNewest(const std::string &run);
    /// Throws rookery::Error when there is no checkpoint `id`.
    Checkpoint load(int64_t id);
    /// Newest first; all runs when `run` is empty.
    std::vector<CheckpointInfo> list(const std::string &run = {});
    /// Returns false when there was no such checkpoint.
    bool remove(int64_t id);

    const std::filesystem::path &path() const { return m_path; }

private:
    Checkpoint loadLocked(int64_t id);

    std::filesystem::path m_path;
    std::mutex m_mutex;
    std::unique_ptr<Database> m_db;
};

} // namespace rookery::store
