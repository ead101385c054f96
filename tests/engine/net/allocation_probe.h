// SPDX-License-Identifier: GPL-3.0-or-later
// Replaces the global operator new for one test executable to record the largest
// single allocation, so that a test can show that a hostile length field allocated
// nothing. Include from exactly one file per executable (it defines the replacements).
#pragma once

#include <atomic>
#include <cstdlib>
#include <new>

namespace rookery::test {

inline std::atomic<size_t> g_largestAllocation{0};

inline void noteAllocation(size_t n)
{
    size_t seen = g_largestAllocation.load(std::memory_order_relaxed);
    while (n > seen && !g_largestAllocation.compare_exchange_weak(seen, n, std::memory_order_relaxed)) { }
}

/// Forgets earlier allocations; returns what the largest was.
inline size_t resetLargestAllocation() { return g_largestAllocation.exchange(0); }
inline size_t largestAllocation() { return g_largestAllocation.load(); }

} // namespace rookery::test

void *operator new(size_t n)
{
    rookery::test::noteAllocation(n);
    if (void *p = std::malloc(n ? n : 1))
        return p;
    throw std::bad_alloc();
}
void *operator new[](size_t n) { return operator new(n); }
void *operator new(size_t n, std::align_val_t a)
{
    rookery::test::noteAllocation(n);
    const size_t align = size_t(a);
    if (void *p = std::aligned_alloc(align, (n + align - 1) / align * align))
        return p;
    throw std::bad_alloc();
}
void *operator new[](size_t n, std::align_val_t a) { return operator new(n, a); }
void operator delete(void *p) noexcept { std::free(p); }
void operator delete[](void *p) noexcept { std::free(p); }
void operator delete(void *p, size_t) noexcept { std::free(p); }
void operator delete[](void *p, size_t) noexcept { std::free(p); }
void operator delete(void *p, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void *p, std::align_val_t) noexcept { std::free(p); }
void operator delete(void *p, size_t, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void *p, size_t, std::align_val_t) noexcept { std::free(p); }
