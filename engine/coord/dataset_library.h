// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <filesystem>
#include <optional>
#include <string>

#include "engine/coord/assignment.h"
#include "engine/data/dataset_manifest.h"

namespace rookery::coord {

/// A dataset in the coordinator's store.
struct StoredDataset
{
    std::string sha256; ///< the manifest's hash: the dataset's content hash
    data::DatasetManifest manifest;
    uint64_t bytes = 0; ///< all its shards
};

/// Cuts `train` and `test` into shards, stores them and the manifest under
/// datasetStoreOf(dataDir), and records `name` as naming it (replacing what the name
/// named before; the old files stay, for runs that use them). Files already there are
/// not written again.
StoredDataset addDataset(const std::filesystem::path &dataDir, const std::string &name, const data::ImageDataset &train,
                         const data::ImageDataset &test, int64_t shardSamples = data::kDefaultShardSamples);

/// The manifest hash `name` names in the store, if any.
std::optional<std::string> datasetNamed(const std::filesystem::path &dataDir, const std::string &name);

/// Images (IDX, 3 dimensions) and labels (IDX, 1 dimension), .gz or plain, as a dataset
/// called `name`: counts must agree; the class count is the highest label + 1 (at least
/// 2); pixels are normalised by their own mean and deviation. Throws rookery::Error
/// naming the file.
data::ImageDataset readIdxPair(const std::filesystem::path &images, const std::filesystem::path &labels,
                               const std::string &name);

/// Settles which dataset `run` trains on and whether this coordinator serves it: fills in
/// run.datasetSha256.
/// - `jobSha256` given: the store must hold that manifest (or, for Fashion-MNIST, the
///   copy in `fashionMnistDir` must hash to it, and is added).
/// - Fashion-MNIST without a hash: the copy in `fashionMnistDir` is added and served;
///   without one, nothing is served (every root reads its own copy).
/// - Another dataset without a hash: whatever its name names in the store.
/// Returns a line for the operator. Throws rookery::Error naming the dataset, both hashes
/// on a mismatch, and how to add a dataset that is missing.
std::string settleServedDataset(RunConfig &run, const std::string &jobSha256, const std::filesystem::path &dataDir,
                                const std::filesystem::path &fashionMnistDir);

} // namespace rookery::coord
