// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <map>
#include <string>
#include <vector>

#include "engine/host/engine_snapshot.h"

namespace rookery::control {

/// The control API's JSON bodies (docs/user-guide.md, "The control API"). Keys are the
/// fields' names; a reader takes the default for a key that is missing, so an older
/// client reads a newer node's documents and the other way round.
///
/// Thread safety: plain functions.
std::string toJson(const host::EngineSnapshot &snapshot);
/// Throws rookery::Error when `json` is not a snapshot document.
host::EngineSnapshot snapshotFromJson(const std::string &json);

/// {"next": N, "events": [...]}: the events after a sequence number, and the number to
/// ask after next time.
struct EventPage
{
    int64_t next = 0;
    std::vector<host::EngineEvent> events;
};
std::string toJson(const EventPage &page);
EventPage eventPageFromJson(const std::string &json);

/// A flat JSON object of strings: the governor's settings as keys and values.
std::string toJson(const std::map<std::string, std::string> &values);
/// Throws rookery::Error unless `json` is an object whose values are strings, numbers or
/// booleans (numbers and booleans are taken as their text).
std::map<std::string, std::string> keyValuesFromJson(const std::string &json);

} // namespace rookery::control
