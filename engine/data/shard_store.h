// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <set>
#include <string>
#include <string_view>

namespace rookery::data {

/// A directory of content-addressed files, each named by the SHA-256 of its bytes:
/// dataset manifests and shards. The coordinator keeps the datasets it serves in one; a
/// node caches what it fetched in another, capped in size. A download in progress is
/// kept as "<sha256>.part", so that it resumes where it stopped; it takes its real name
/// only once its bytes hash to that name, so nothing corrupt is ever kept as a shard.
///
/// Thread safety: not thread-safe; one owner. Two processes may share a directory
/// (files are renamed into place whole).
class ShardStore
{
public:
    /// Creates `dir` when missing. `capBytes`: evict() keeps the directory under this
    /// (0: no cap).
    explicit ShardStore(std::filesystem::path dir, uint64_t capBytes = 0);

    const std::filesystem::path &directory() const { return m_dir; }
    std::filesystem::path pathOf(const std::string &sha256) const;
    bool has(const std::string &sha256) const;

    /// Stores `bytes` under their hash (unless there already) and returns the hash.
    std::string put(std::string_view bytes);

    /// The file's bytes when they still hash to its name. A file that does not (damaged
    /// on disk) is deleted and nothing is returned. Marks the file as just used.
    std::optional<std::string> readVerified(const std::string &sha256);

    /// Up to `maxBytes` of the file from `offset`, and its whole size; for serving.
    /// Throws rookery::Error when the file is missing or unreadable.
    struct Range
    {
        std::string bytes;
        uint64_t total = 0;
    };
    Range readRange(const std::string &sha256, uint64_t offset, uint64_t maxBytes) const;

    /// Bytes of `sha256` downloaded so far (the .part file); 0 when none.
    uint64_t partialSize(const std::string &sha256) const;
    /// Appends to the .part file; `offset` must be partialSize() (else it starts over).
    void appendPartial(const std::string &sha256, uint64_t offset, std::string_view bytes);
    /// The download is complete: its bytes must hash to `sha256`. Then the file takes its
    /// name and its bytes are returned. Otherwise the .part file is deleted and
    /// rookery::Error names `what` (the shard), the expected hash and the one found.
    std::string commitPartial(const std::string &sha256, const std::string &what);

    /// Deletes the least recently used files, except those in `keep`, until the
    /// directory holds at most the cap. Returns the bytes it holds after.
    uint64_t evict(const std::set<std::string> &keep);
    /// Bytes held by the directory's files, partial ones included.
    uint64_t bytesHeld() const;

private:
    std::filesystem::path partPath(const std::string &sha256) const;

    std::filesystem::path m_dir;
    uint64_t m_cap;
};

} // namespace rookery::data
