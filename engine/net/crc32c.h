// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <cstdint>
#include <span>

namespace rookery::net {

/// CRC-32C (Castagnoli), the checksum of every tensor on the wire. Uses the SSE 4.2
/// CRC32 instruction on three interleaved streams when the CPU has it (about 20 GB/s,
/// well above what TLS can encrypt), a slicing-by-8 table otherwise. `crc` chains calls:
/// crc32c(b, crc32c(a)) == crc32c(a + b).
///
/// Thread safety: may be called from any thread.
uint32_t crc32c(std::span<const uint8_t> bytes, uint32_t crc = 0);

/// The portable table implementation, for tests that compare both.
uint32_t crc32cPortable(std::span<const uint8_t> bytes, uint32_t crc = 0);

/// True when crc32c() uses the CPU instruction.
bool crc32cAccelerated();

} // namespace rookery::net
