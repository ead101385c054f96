// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/common/log.h"

#include <atomic>
#include <cstdio>
#include <mutex>

namespace rookery::log {
namespace {

std::mutex g_mutex;
Sink g_sink;
std::atomic<Level> g_minimum{Level::Info};

void writeStderr(Level level, std::string_view area, std::string_view message)
{
    std::fprintf(stderr, "%.*s %.*s: %.*s\n", int(levelName(level).size()), levelName(level).data(), int(area.size()),
                 area.data(), int(message.size()), message.data());
}

} // namespace

void setSink(Sink sink)
{
    std::lock_guard lock(g_mutex);
    g_sink = std::move(sink);
}

void setMinimumLevel(Level level) { g_minimum = level; }

Level minimumLevel() { return g_minimum; }

void write(Level level, std::string_view area, std::string_view message)
{
    if (level < g_minimum.load())
        return;
    std::lock_guard lock(g_mutex);
    if (g_sink)
        g_sink(level, area, message);
    else
        writeStderr(level, area, message);
}

std::string_view levelName(Level level)
{
    switch (level) {
    case Level::Debug:
        return "debug";
    case Level::Info:
        return "info";
    case Level::Warning:
        return "warning";
    case Level::Error:
        return "error";
    }
    return "?";
}

} // namespace rookery::log
