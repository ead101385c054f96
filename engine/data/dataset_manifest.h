// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "engine/data/epoch_sampler.h"
#include "engine/data/image_dataset.h"

namespace rookery::data {

/// One content-addressed piece of a dataset: a file whose name is its SHA-256.
struct ShardRef
{
    std::string sha256; ///< 64 lowercase hex digits
    uint64_t bytes = 0;
    int64_t samples = 0;
    bool operator==(const ShardRef &) const = default;
};

/// A dataset as the swarm serves it: its shape and the shards of its train and test
/// splits. The manifest is itself a content-addressed file; the SHA-256 of its bytes
/// (manifestBytes()) is the dataset's content hash, the one a job file names.
///
/// A shard holds consecutive samples as two IDX arrays back to back, uncompressed:
/// the images (magic 00 00 08 03, count, rows, cols) then the labels (00 00 08 01,
/// count). Any IDX reader reads them.
struct DatasetManifest
{
    std::string name;
    int rows = 0;
    int cols = 0;
    int classes = 0;
    float mean = 0.f;
    float stddev = 1.f;
    std::vector<ShardRef> train;
    std::vector<ShardRef> test;
    bool operator==(const DatasetManifest &) const = default;

    int64_t trainSamples() const;
    uint64_t trainBytes() const;
};

/// The manifest format this version writes and reads.
inline constexpr int kManifestFormat = 1;
/// Largest manifest accepted: a few thousand shards.
inline constexpr uint64_t kMaxManifestBytes = uint64_t(1) << 20;
/// Largest shard accepted (checked against the manifest before a download starts).
inline constexpr uint64_t kMaxShardBytes = uint64_t(1) << 30;
/// Samples per shard when a dataset is cut: 5,000 Fashion-MNIST images are 3.9 MB.
inline constexpr int64_t kDefaultShardSamples = 5000;

/// A manifest and the bytes of each shard it names (in manifest order, train first).
struct ShardedDataset
{
    DatasetManifest manifest;
    std::vector<std::string> shards;
};

/// True for 64 lowercase hex digits.
bool isSha256(std::string_view text);

/// Cuts `train` and `test` into shards of `shardSamples` consecutive samples and writes
/// the manifest (named `name`). Deterministic: the same data gives the same hashes.
ShardedDataset cutIntoShards(const std::string &name, const ImageDataset &train, const ImageDataset &test,
                             int64_t shardSamples = kDefaultShardSamples);

/// The same cut, one shard at a time: `each` gets every shard's bytes in manifest order
/// (train first), and only one shard is held at once. Without `each`, just the manifest
/// (a copy's content hash, without holding a second copy of the data).
DatasetManifest cutIntoShards(const std::string &name, const ImageDataset &train, const ImageDataset &test,
                              int64_t shardSamples, const std::function<void(std::string_view)> &each);

/// The manifest's canonical JSON: what is stored, sent and hashed.
std::string manifestBytes(const DatasetManifest &manifest);

/// Reads and validates a manifest: the format, the name, a shape of at most 4096x4096
/// and 2..256 classes, each shard's hash, size (within kMaxShardBytes and equal to what
/// its sample count implies) and sample count. Throws rookery::Error naming the field.
DatasetManifest parseManifest(std::string_view bytes);

/// The samples of one shard, after checking its two IDX headers against the manifest:
/// shape, count, sizes, and every label below the manifest's class count. Throws
/// rookery::Error naming the shard.
ImageDataset decodeShard(const DatasetManifest &manifest, const ShardRef &ref, std::string_view bytes);

/// `parts` one after the other, as one dataset named `name`.
ImageDataset concatenate(const std::string &name, const std::vector<ImageDataset> &parts);

/// Which train shards a cluster reading data shard `shard` (index of count) fetches:
/// those whose position modulo `count` is `shard.index`, so the clusters share the
/// shards out without overlap. When there are more clusters than shards, clusters
/// share a shard: the shard `index % shards`, read through `within`.
struct ShardChoice
{
    std::vector<size_t> train; ///< positions in manifest.train
    Shard within;              ///< the slice of the fetched samples this cluster reads
};
ShardChoice trainShardsFor(const DatasetManifest &manifest, Shard shard);

} // namespace rookery::data
