// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/data/idx_file.h"

#include <cstdio>
#include <memory>
#include <string>

#include <zlib.h>

#include "engine/common/error.h"

namespace rookery::data {
namespace {

struct GzCloser
{
    void operator()(gzFile_s *f) const { gzclose(f); }
};
using GzFile = std::unique_ptr<gzFile_s, GzCloser>;

[[noreturn]] void fail(const std::filesystem::path &path, const std::string &what)
{
    throw Error("dataset file " + path.string() + ": " + what);
}

// Reads up to `size` bytes; returns how many arrived. A corrupt gzip stream is an error.
size_t readSome(gzFile file, const std::filesystem::path &path, uint8_t *dst, size_t size)
{
    size_t done = 0;
    while (done < size) {
        const unsigned chunk = unsigned(std::min<size_t>(size - done, 1u << 30));
        const int n = gzread(file, dst + done, chunk);
        if (n < 0) {
            int code = 0;
            const char *msg = gzerror(file, &code);
            fail(path, std::string("corrupt compressed data (") + (msg ? msg : "unknown zlib error") + ")");
        }
        if (n == 0)
            break;
        done += size_t(n);
    }
    return done;
}

uint32_t bigEndian32(const uint8_t *p)
{
    return uint32_t(p[0]) << 24 | uint32_t(p[1]) << 16 | uint32_t(p[2]) << 8 | uint32_t(p[3]);
}

} // namespace

IdxArray readIdxFile(const std::filesystem::path &path, int expectedDims)
{
    std::error_code ec;
    if (!std::filesystem::exists(path, ec))
        fail(path, "not found (on Debian, install the package dataset-fashion-mnist: installer/setup.sh)");
    GzFile file(gzopen(path.c_str(), "rb"));
    if (!file)
        fail(path, "cannot be opened");
    gzbuffer(file.get(), 1 << 17);

    uint8_t magic[4];
    if (readSome(file.get(), path, magic, 4) != 4)
        fail(path, "truncated: shorter than the 4-byte IDX header");
    if (magic[0] != 0 || magic[1] != 0 || magic[2] != 0x08) {
        char buf[64];
        std::snprintf(buf, sizeof buf, "not an unsigned-byte IDX file (magic %02x %02x %02x %02x)", magic[0], magic[1],
                      magic[2], magic[3]);
        fail(path, buf);
    }
    if (magic[3] != expectedDims)
        fail(path, "has " + std::to_string(magic[3]) + " dimensions, expected " + std::to_string(expectedDims));

    IdxArray out;
    uint64_t total = 1;
    for (int i = 0; i < expectedDims; ++i) {
        uint8_t raw[4];
        if (readSome(file.get(), path, raw, 4) != 4)
            fail(path, "truncated inside the header");
        const uint32_t dim = bigEndian32(raw);
        if (dim == 0)
            fail(path, "dimension " + std::to_string(i) + " is zero");
        total *= dim;
        if (total > kMaxIdxBytes)
            fail(path, "declares more than " + std::to_string(kMaxIdxBytes) + " bytes of data; refusing");
        out.dims.push_back(dim);
    }
    out.values.resize(total);
    const size_t got = readSome(file.get(), path, out.values.data(), total);
    if (got != total)
        fail(path, "truncated: expected " + std::to_string(total) + " bytes of data, found " + std::to_string(got));
    uint8_t extra;
    if (readSome(file.get(), path, &extra, 1) != 0)
        fail(path, "has data after the declared " + std::to_string(total) + " bytes (not an IDX file?)");
    return out;
}

} // namespace rookery::data
