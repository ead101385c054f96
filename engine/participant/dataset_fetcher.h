// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "engine/data/dataset_manifest.h"
#include "engine/data/image_dataset.h"
#include "engine/data/shard_store.h"
#include "engine/net/wire_message.h"

namespace rookery::participant {

/// What a root stage trains and tests on.
struct StageData
{
    std::shared_ptr<const data::ImageDataset> train;
    std::shared_ptr<const data::ImageDataset> test;
    /// The slice of `train` the stage reads. Fetched data holds only this cluster's
    /// shards, read whole (or a slice when clusters share a shard); a local copy holds
    /// everything, read through the assignment's data shard.
    data::Shard within;
};

/// A node's side of the swarm serving its dataset: fetches the manifest and the shards a
/// root stage needs from the coordinator (DataRequest/DataPiece over the coordinator
/// link), a piece at a time, into a size-capped cache in the data directory. A download
/// resumes where the bytes held end (after a lost link or a restart), and a file is used
/// only once its bytes hash to its name: one that does not is refused with an error
/// naming it and the expected hash, and nothing of it is kept.
///
/// Thread safety: onPiece() from any thread (the coordinator link's); the rest from one
/// thread, which it blocks while it downloads.
class DatasetFetcher
{
public:
    struct Config
    {
        data::ShardStore *cache = nullptr;
        /// Sends a request to the coordinator; false while not registered (tried again).
        std::function<bool(const net::DataRequest &)> send;
        std::function<void(const std::string &)> say;   ///< progress, for people
        const std::atomic<bool> *stop = nullptr;        ///< the node stops: give up at once
        std::chrono::milliseconds pieceTimeout{30'000}; ///< no answer this long: ask again
        int attempts = 5;                               ///< ... this many times, then fail
    };

    explicit DatasetFetcher(Config config);

    void onPiece(const net::DataPiece &piece);

    /// The data a root stage of data shard `shard` needs from the dataset whose manifest
    /// hash is `manifestSha256`: its train shards (data::trainShardsFor) and enough test
    /// shards for `testSamples` (0: all). Throws rookery::Error saying what failed.
    StageData rootData(const std::string &manifestSha256, data::Shard shard, int64_t testSamples);

    /// The verified bytes of one file: from the cache, else downloaded. `expectedBytes`
    /// 0: unknown (a manifest: at most data::kMaxManifestBytes).
    std::string file(const std::string &sha256, uint64_t expectedBytes, const std::string &what);

private:
    std::optional<net::DataPiece> awaitPiece(const std::string &sha256, uint64_t offset);

    Config m_config;
    std::mutex m_mutex;
    std::condition_variable m_arrived;
    std::optional<net::DataPiece> m_piece;
};

} // namespace rookery::participant
