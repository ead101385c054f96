// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/data/shard_store.h"
#include "engine/common/secret_token.h"

#include <algorithm>
#include <fstream>
#include <iterator>
#include <vector>

#include "engine/common/error.h"
#include "engine/common/log.h"
#include "engine/data/dataset_manifest.h"

namespace rookery::data {
namespace fs = std::filesystem;
namespace {

void checkName(const std::string &sha256)
{
    if (!isSha256(sha256)) // it names a file: nothing else may reach the path
        throw Error("'" + sha256.substr(0, 80) + "' is not a SHA-256 (64 lowercase hex digits)");
}

std::string readWhole(const fs::path &path)
{
    std::ifstream in(path, std::ios::binary);
    if (!in)
        throw Error("cannot read " + path.string());
    std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (in.bad())
        throw Error("reading " + path.string() + " failed");
    return bytes;
}

} // namespace

ShardStore::ShardStore(fs::path dir, uint64_t capBytes)
    : m_dir(std::move(dir))
    , m_cap(capBytes)
{
    std::error_code ec;
    fs::create_directories(m_dir, ec);
    if (!fs::is_directory(m_dir))
        throw Error("cannot make the data directory " + m_dir.string() + (ec ? ": " + ec.message() : ""));
}

fs::path ShardStore::pathOf(const std::string &sha256) const
{
    checkName(sha256);
    return m_dir / sha256;
}

fs::path ShardStore::partPath(const std::string &sha256) const
{
    checkName(sha256);
    return m_dir / (sha256 + ".part");
}

bool ShardStore::has(const std::string &sha256) const
{
    std::error_code ec;
    return fs::is_regular_file(pathOf(sha256), ec);
}

std::string ShardStore::put(std::string_view bytes)
{
    const std::string sha = sha256Hex(bytes);
    if (has(sha))
        return sha;
    const fs::path tmp = m_dir / (sha + ".new");
    {
        std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
        out.write(bytes.data(), std::streamsize(bytes.size()));
        out.flush();
        if (!out)
            throw Error("cannot write " + tmp.string() + " (disk full?)");
    }
    fs::rename(tmp, pathOf(sha));
    return sha;
}

std::optional<std::string> ShardStore::readVerified(const std::string &sha256)
{
    const fs::path path = pathOf(sha256);
    std::error_code ec;
    if (!fs::is_regular_file(path, ec))
        return std::nullopt;
    std::string bytes = readWhole(path);
    if (sha256Hex(bytes) != sha256) {
        log::warning("data", path.string() + " no longer matches its hash (damaged on disk); deleted, to fetch again");
        fs::remove(path, ec);
        return std::nullopt;
    }
    fs::last_write_time(path, fs::file_time_type::clock::now(), ec); // recently used: evicted last
    return bytes;
}

ShardStore::Range ShardStore::readRange(const std::string &sha256, uint64_t offset, uint64_t maxBytes) const
{
    const fs::path path = pathOf(sha256);
    std::ifstream in(path, std::ios::binary | std::ios::ate);
    if (!in)
        throw Error("no file " + sha256 + " here");
    Range r;
    r.total = uint64_t(in.tellg());
    if (offset > r.total)
        throw Error("offset " + std::to_string(offset) + " is past the end of " + sha256 + " (" +
                    std::to_string(r.total) + " bytes)");
    r.bytes.resize(size_t(std::min(maxBytes, r.total - offset)));
    in.seekg(std::streamoff(offset));
    in.read(r.bytes.data(), std::streamsize(r.bytes.size()));
    if (!in)
        throw Error("reading " + path.string() + " failed");
    return r;
}

uint64_t ShardStore::partialSize(const std::string &sha256) const
{
    std::error_code ec;
    const auto size = fs::file_size(partPath(sha256), ec);
    return ec ? 0 : uint64_t(size);
}

void ShardStore::appendPartial(const std::string &sha256, uint64_t offset, std::string_view bytes)
{
    const fs::path path = partPath(sha256);
    const bool fresh = offset == 0 || offset != partialSize(sha256);
    if (fresh && offset != 0)
        throw Error("a piece of " + sha256 + " at " + std::to_string(offset) + " does not follow the " +
                    std::to_string(partialSize(sha256)) + " bytes held");
    std::ofstream out(path, std::ios::binary | (fresh ? std::ios::trunc : std::ios::app));
    out.write(bytes.data(), std::streamsize(bytes.size()));
    out.flush();
    if (!out)
        throw Error("cannot write " + path.string() + " (disk full?)");
}

std::string ShardStore::commitPartial(const std::string &sha256, const std::string &what)
{
    const fs::path part = partPath(sha256);
    std::string bytes = readWhole(part);
    const std::string actual = sha256Hex(bytes);
    std::error_code ec;
    if (actual != sha256) {
        fs::remove(part, ec);
        throw Error(what + " does not match its hash: expected sha256 " + sha256 + ", received data with sha256 " +
                    actual + " (" + std::to_string(bytes.size()) + " bytes); nothing was kept");
    }
    fs::rename(part, pathOf(sha256));
    return bytes;
}

uint64_t ShardStore::bytesHeld() const
{
    uint64_t total = 0;
    std::error_code ec;
    for (const auto &e : fs::directory_iterator(m_dir, ec))
        if (e.is_regular_file(ec))
            total += e.file_size(ec);
    return total;
}

uint64_t ShardStore::evict(const std::set<std::string> &keep)
{
    struct Held
    {
        fs::path path;
        uint64_t bytes;
        fs::file_time_type used;
    };
    std::vector<Held> held;
    uint64_t total = 0;
    std::error_code ec;
    for (const auto &e : fs::directory_iterator(m_dir, ec)) {
        if (!e.is_regular_file(ec))
            continue;
        const uint64_t size = e.file_size(ec);
        total += size;
        const std::string name = e.path().filename().string();
        if (!keep.count(name.substr(0, 64)))
            held.push_back({e.path(), size, e.last_write_time(ec)});
    }
    if (m_cap == 0 || total <= m_cap)
        return total;
    std::sort(held.begin(), held.end(), [](const Held &a, const Held &b) { return a.used < b.used; });
    for (const auto &h : held) {
        if (total <= m_cap)
            break;
        if (fs::remove(h.path, ec))
            total -= h.bytes;
    }
    return total;
}

} // namespace rookery::data
