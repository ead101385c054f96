// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <set>
#include <string>

#include "engine/data/dataset_manifest.h"
#include "engine/data/shard_store.h"
#include "engine/net/wire_message.h"

namespace rookery::coord {

/// The coordinator's side of serving a dataset: answers nodes' DataRequests with pieces
/// of the run's manifest and shards, from its content-addressed store
/// (<data dir>/datasets, filled by `rookery-coordinator dataset add`). It serves only
/// the files the run's manifest names, so a request cannot reach any other file. It does
/// not hash what it serves: the node checks each file against its name, so a file
/// damaged on this disk is refused there, and named.
///
/// Thread safety: serve() may be called from any thread, concurrently.
class DatasetServer
{
public:
    /// Loads and checks the manifest `manifestSha256` from `store`: it must be there,
    /// hash to its name and parse, and every shard it names must be there with its size.
    /// Throws rookery::Error saying what is missing and how to add it.
    DatasetServer(const std::filesystem::path &store, const std::string &manifestSha256);

    const data::DatasetManifest &manifest() const { return m_manifest; }
    net::DataPiece serve(const net::DataRequest &request) const;
    uint64_t bytesServed() const { return m_served.load(); }

private:
    data::ShardStore m_store;
    std::string m_manifestSha;
    data::DatasetManifest m_manifest;
    std::set<std::string> m_files;
    mutable std::atomic<uint64_t> m_served{0};
};

} // namespace rookery::coord
